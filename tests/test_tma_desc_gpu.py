"""In-kernel tensor descriptors on a GPU: on sm_90a each program writes its TMA tensor maps into the
global scratch that tile.set_allocator gives the launch (elsewhere they are masked accesses).
Ragged copies, a matmul whose K loop goes through the TMA ring, descriptors made inside a loop,
and the error without an allocator. Skipped without a GPU; tests/test_tma_desc.py checks the PTX."""
from __future__ import annotations

import contextvars
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime.cuda_driver import CudaDevice
from test_tma_desc import block_ptr_copy_kernel, block_ptr_matmul_kernel, desc_copy_kernel, desc_matmul_kernel

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(81)


def _with_allocator(fn):
    """Run `fn` with an allocator of tile DeviceArrays (kept until the test ends), in a fresh
    context so the allocator does not leak into other tests."""
    buffers = []

    def allocate(size: int, alignment: int, stream):
        buffers.append(tile.empty((size,), "i8"))
        return buffers[-1]

    def run():
        tile.set_allocator(allocate)
        return fn()

    result = contextvars.Context().run(run)
    assert buffers, "the kernel asked for no scratch"
    return result


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8])
@pytest.mark.parametrize("m,n,bm,bn", [(100, 80, 32, 64), (65, 144, 64, 128), (33, 48, 16, 32)])
def test_ragged_copy(dtype, m: int, n: int, bm: int, bn: int) -> None:
    if np.issubdtype(dtype, np.integer):
        x = RNG.integers(-50, 50, size=(m, n)).astype(dtype)
        poison = 99
    else:
        x = RNG.standard_normal((m, n)).astype(dtype)
        poison = np.nan
    xd, yd = tile.to_device(x), tile.to_device(np.full_like(x, poison))
    _with_allocator(lambda: desc_copy_kernel[(tile.cdiv(m, bm), tile.cdiv(n, bn))](xd, yd, m, n, BM=bm, BN=bn))
    want = (x.astype(np.float64) * 2 + 1).astype(dtype)
    np.testing.assert_array_equal(yd.numpy(), want)


@pytest.mark.parametrize("m,n,k", [(256, 256, 192), (200, 136, 72), (128, 512, 1024)])
@pytest.mark.parametrize("warps", [4, 8])
def test_matmul(m: int, n: int, k: int, warps: int) -> None:
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    ad, bd, cd = tile.to_device(a), tile.to_device(b), tile.to_device(np.full((m, n), np.nan, np.float16))
    grid = (tile.cdiv(m, 128), tile.cdiv(n, 128))
    _with_allocator(lambda: desc_matmul_kernel[grid](ad, bd, cd, m, n, k, BM=128, BN=128, BK=64, num_warps=warps))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(cd.numpy().astype(np.float64), want, rtol=1e-2, atol=1e-1)


@tile.jit
def per_group_scale_kernel(ptrs, rows, out_ptrs, GROUPS: tl.constexpr, N: tl.constexpr, BM: tl.constexpr):
    """Descriptors made inside a loop over groups (as grouped GEMM does): each group's rows scaled by its index."""
    for g in range(GROUPS):
        m = tl.load(rows + g)
        src = tl.make_tensor_descriptor(tl.load(ptrs + g).to(tl.pointer_type(tl.float32)), [m, N], [N, 1], [BM, N])
        dst = tl.make_tensor_descriptor(tl.load(out_ptrs + g).to(tl.pointer_type(tl.float32)), [m, N], [N, 1],
                                        [BM, N])
        for start in range(tl.program_id(0) * BM, m, tl.num_programs(0) * BM):
            dst.store([start, 0], src.load([start, 0]) * (g + 1))


def test_descriptors_made_in_a_loop() -> None:
    n, sizes = 32, [70, 256, 9]
    xs = [RNG.standard_normal((s, n)).astype(np.float32) for s in sizes]
    xd = [tile.to_device(x) for x in xs]
    yd = [tile.to_device(np.full_like(x, np.nan)) for x in xs]
    ptrs = tile.to_device(np.array([x.data_ptr() for x in xd], np.int64))
    outs = tile.to_device(np.array([y.data_ptr() for y in yd], np.int64))
    rows = tile.to_device(np.array(sizes, np.int32))
    _with_allocator(lambda: per_group_scale_kernel[(3,)](ptrs, rows, outs, GROUPS=len(sizes), N=n, BM=32))
    for g, (x, y) in enumerate(zip(xs, yd)):
        np.testing.assert_array_equal(y.numpy(), x * (g + 1))


def test_without_an_allocator_tile_gives_the_scratch() -> None:
    x = RNG.standard_normal((64, 64)).astype(np.float16)
    xd, yd = tile.to_device(x), tile.to_device(np.full_like(x, np.nan))

    def run():
        for _ in range(3):  # the same buffer again
            desc_copy_kernel[(2, 1)](xd, yd, 64, 64, BM=32, BN=64)
        np.testing.assert_array_equal(yd.numpy(), x * np.float16(2) + np.float16(1))

    contextvars.Context().run(run)


def test_a_stride_off_tmas_rule_is_reported(tmp_path) -> None:
    """A row of 70 floats (280 bytes) on TMA: the map gets the null base, and the fault names
    the rule (in a subprocess: a fault ends the CUDA context)."""
    if CudaDevice.get(0).ptx_target() != "sm_90a":
        pytest.skip("the rule is TMA's (sm_90a)")
    script = tmp_path / "misaligned.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, tile
        from test_tensor_descriptor import copy_kernel
        a = tile.to_device(np.ones((50, 70), np.float32))
        copy_kernel[(4, 3)](a, a, 50, 70, BM=16, BN=32)
        a.numpy()
    """))
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(tests), tests])}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode != 0
    assert "ILLEGAL_ADDRESS" in result.stderr and "TMA tensor maps" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("m,n,k", [(256, 256, 192), (200, 144, 80)])
def test_block_pointer_matmul(m: int, n: int, k: int) -> None:
    """Block pointers with boundary_check on TMA (strides K and N divisible by 16 elements, so
    16-byte multiples), ragged edges included."""
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    ad, bd, cd = tile.to_device(a), tile.to_device(b), tile.to_device(np.full((m, n), np.nan, np.float16))
    grid = (tile.cdiv(m, 128), tile.cdiv(n, 128))
    _with_allocator(lambda: block_ptr_matmul_kernel[grid](ad, bd, cd, m, n, k, k, n, n, BM=128, BN=128, BK=64))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(cd.numpy().astype(np.float64), want, rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("m,n,stride", [(100, 48, 64), (37, 24, 24)])
def test_block_pointer_copy(m: int, n: int, stride: int) -> None:
    """A strided block-pointer copy: on TMA where the stride allows (64), masked otherwise (24)."""
    x = RNG.standard_normal((m, stride)).astype(np.float32)
    xd, yd = tile.to_device(x), tile.to_device(np.full_like(x, np.nan))

    def launch():
        buffers = []
        tile.set_allocator(lambda size, alignment, stream: buffers.append(tile.empty((size,), "i8")) or buffers[-1])
        block_ptr_copy_kernel[(tile.cdiv(m, 16),)](xd, yd, m, n, stride, BM=16, BN=64)

    contextvars.Context().run(launch)
    y = yd.numpy()
    np.testing.assert_array_equal(y[:, :n], x[:, :n] + 1)
    assert np.isnan(y[:, n:]).all()  # columns past N are outside the tensor: never written


@tile.jit
def padded_load_kernel(x_ptr, out_ptr, M, N, row, col, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option=PADDING)
    block = src.load([row, col])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_out_of_bounds_reads(padding: str) -> None:
    """A block hanging over the bottom right corner reads the tensor's fill (the map's fill_mode)."""
    m, n, bm, bn, row, col = 40, 48, 32, 32, 24, 32
    x = RNG.standard_normal((m, n)).astype(np.float32)
    xd, out = tile.to_device(x), tile.to_device(np.full((bm, bn), 7.0, np.float32))
    _with_allocator(lambda: padded_load_kernel[(1,)](xd, out, m, n, row, col, BM=bm, BN=bn, PADDING=padding))
    want = np.full((bm, bn), 0.0 if padding == "zero" else np.nan, np.float32)
    want[:m - row, :n - col] = x[row:, col:]
    np.testing.assert_array_equal(out.numpy(), want)
