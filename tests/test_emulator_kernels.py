"""The kernels of the GPU-only tests (tests/*_gpu.py) on tile.emulator, at reduced sizes: the PTX a
GPU launch would run, compiled for sm_80 and, where the kernel uses Hopper's wgmma, TMA and
mbarriers, for sm_90a, checked against float64 NumPy at the GPU tests' tolerances.

Shapes are small but still ragged where the kernel masks, with more than one CTA and more than
one trip around each software-pipelined loop (num_stages), and the launch options of the GPU
runs (8 warps for attention, the tutorials' GPU block sizes)."""
from __future__ import annotations

import math
import os
import sys
import types

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.emulator import emulate
from tile.tools.tensor_descriptor import TensorDescriptor

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from load_kernels import load_kernels  # noqa: E402
from tutorial_util import load_tutorial  # noqa: E402

pytestmark = pytest.mark.emulator
RNG = np.random.default_rng(14)


def _tutorial(name: str) -> types.ModuleType:
    return load_tutorial(name, "emulator_kernels")


@pytest.fixture(scope="module")
def attention() -> types.ModuleType:
    return _tutorial("07_fused_attention")


@pytest.fixture(scope="module")
def dropout() -> types.ModuleType:
    return _tutorial("08_low_memory_dropout")


@pytest.fixture(scope="module")
def lnb() -> types.ModuleType:
    return _tutorial("09_layer_norm_backward")


@pytest.fixture(scope="module")
def grouped() -> types.ModuleType:
    return load_kernels("emulator_kernels_grouped", tile.jit, tl, "kernels_grouped.py")


@pytest.fixture(scope="module")
def bench() -> types.ModuleType:
    return load_kernels("emulator_kernels_bench", tile.jit, tl)


@pytest.fixture(autouse=True)
def host_memory(monkeypatch):
    """DeviceArrays made here (bf16 and fp8, which NumPy cannot name) live in host memory, also
    on a GPU machine: the emulator addresses host memory, and a host descriptor of GPU memory
    would hand it device addresses. tile.emulate compiles for its target whatever this says."""
    monkeypatch.setenv("TILE_INTERPRET", "1")


def poison(shape, dtype) -> np.ndarray:
    a = np.empty(shape, dtype)
    a.view(np.uint8)[...] = 0xAB
    return a


# ------------------------------------------------------------------ tutorial 07: fused attention


def _attention_inputs(attention, shape, dtype: str):
    """q, k, v, do as DeviceArrays of `dtype` ("f16" or "bf16") and their exact float64 values."""
    arrays = []
    for _ in range(4):
        x = (RNG.standard_normal(shape) * 0.5).astype(np.float32)
        arrays.append(tile.to_device(attention.to_bf16_bits(x), "bf16") if dtype == "bf16" else
                      tile.to_device(x.astype(np.float16)))
    return arrays, [attention.from_device(a) for a in arrays]


def _poisoned(shape, dtype: str):
    """A DeviceArray of `dtype` full of NaN (f16/f32) or of 0xABAB bits (bf16)."""
    if dtype == "bf16":
        return tile.to_device(np.full(shape, 0xFFAB, np.uint16), "bf16")
    return tile.to_device(np.full(shape, np.nan, np.float16 if dtype == "f16" else np.float32))


@pytest.mark.parametrize("target, dtype, causal, head_dim", [("sm_80", "f16", True, 64), ("sm_80", "bf16", False, 32),
                                                             ("sm_80", "f16", False, 128),
                                                             ("sm_90a", "f16", False, 64),
                                                             ("sm_90a", "bf16", True, 32),
                                                             ("sm_90a", "f16", True, 128)])
def test_attention_forward_and_backward(attention, target, dtype, causal, head_dim):
    """The forward and the three backward kernels at the GPU's launch options (8 warps, 3 stages,
    128-row query blocks, the backward's 32/128 and 128/32 blocks) with S = 256: two blocks of
    queries and keys, several pipelined key steps."""
    def check(kind: str, compiled) -> None:
        if kind == "fwd":
            assert ("wgmma.mma_async" if target == "sm_90a" else "mma.sync.aligned") in compiled.asm["ptx"]

    run_attention(attention, target, dtype, causal, head_dim, s=256, blocks=(128, 64), bwd_blocks=(32, 128),
                  num_warps=8, num_stages=3, check=check)


def run_attention(attention, target: str, dtype: str, causal: bool, head_dim: int, s: int, blocks, bwd_blocks,
                  num_warps: int, num_stages: int, check=lambda kind, compiled: None) -> None:
    """Tutorial 07's forward and three backward kernels on `target`'s emulator for one batch of two
    heads of `s` tokens, against float64 NumPy: forward `blocks` (BLOCK_M, BLOCK_N), the dK/dV
    kernel's `bwd_blocks` and the dQ kernel's the other way round. `check` sees the CompiledKernel
    of the forward ("fwd"), dK/dV ("dkdv") and dQ ("dq") launches."""
    z, h, d = 1, 2, head_dim
    block_m, block_n = blocks
    sm_scale = 0.5
    (q, k, v, do), (q64, k64, v64, do64) = _attention_inputs(attention, (z, h, s, d), dtype)
    o, lse = _poisoned((z, h, s, d), dtype), _poisoned((z, h, s), "f32")
    grid = (s // block_m, z * h)
    check("fwd", emulate(attention.attn_fwd, target)[grid](q, k, v, o, lse, sm_scale, s, HEAD_DIM=d,
                                                         STAGE=3 if causal else 1, BLOCK_M=block_m, BLOCK_N=block_n,
                                                         num_warps=num_warps, num_stages=num_stages))
    delta = _poisoned((z, h, s), "f32")
    emulate(attention.attn_bwd_preprocess, target)[grid](o, do, delta, s, BLOCK_M=block_m, HEAD_DIM=d)
    dq, dk, dv = (_poisoned((z, h, s, d), dtype) for _ in range(3))
    launch = dict(BLK_SLICE_FACTOR=2, HEAD_DIM=d, CAUSAL=causal, num_warps=num_warps, num_stages=num_stages)
    small, large = bwd_blocks
    check("dkdv", emulate(attention.attn_bwd_dkdv, target)[grid](q, k, v, sm_scale, do, dk, dv, lse, delta, s,
                                                               BLOCK_M=small, BLOCK_N=large, **launch))
    check("dq", emulate(attention.attn_bwd_dq, target)[grid](q, k, v, sm_scale, do, dq, lse, delta, s,
                                                           BLOCK_M=large, BLOCK_N=small, **launch))
    want = attention.reference(q64, k64, v64, do64, causal, sm_scale)
    scores = q64 @ np.swapaxes(k64, -1, -2) * sm_scale
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    peak = scores.max(-1)
    lse_want = (peak + np.log(np.exp(scores - peak[..., None]).sum(-1))) / math.log(2)
    np.testing.assert_allclose(lse.numpy(), lse_want, rtol=1e-5, atol=1e-5)
    tol = 1e-2 if dtype == "f16" else 4e-2
    for name, got, exact in zip(("o", "dq", "dk", "dv"), (o, dq, dk, dv), want):
        np.testing.assert_allclose(attention.from_device(got), exact, atol=tol, rtol=tol, err_msg=name)


@pytest.mark.parametrize("dtype, causal, head_dim, seq, block_n, stages, paired",
                         [("f16", True, 64, 256, 64, 3, False), ("bf16", False, 128, 256, 64, 3, False),
                          ("f16", True, 128, 384, 64, 2, True)])
def test_attention_forward_over_descriptors_on_sm90a(attention, dtype, causal, head_dim, seq, block_n, stages, paired):
    """attn_fwd_desc (attention_forward(..., descriptors=True)): Q, K and V by TMA copies onto the
    mbarrier ring, O stored by TMA, at the GPU's 128-row blocks and 8 warps; the last case is
    fwd_config's at S <= 2048 causal: two stages, and each program also runs block n - 1 - i
    (PAIRED), over 3 blocks, so that the middle one runs once."""
    z, h, s = 1, 2, seq
    (q, k, v, _), (q64, k64, v64, do64) = _attention_inputs(attention, (z, h, s, head_dim), dtype)
    o, lse = _poisoned((z, h, s, head_dim), dtype), _poisoned((z, h, s), "f32")
    descs = [TensorDescriptor(x, [z * h * s, head_dim], [head_dim, 1], [rows, head_dim])
             for x, rows in ((q, 128), (k, block_n), (v, block_n), (o, 128))]
    blocks = s // 128
    compiled = emulate(attention.attn_fwd_desc, "sm_90a")[((blocks + 1) // 2 if paired else blocks, z * h)](
        *descs, lse, 0.5, s, HEAD_DIM=head_dim, STAGE=3 if causal else 1, BLOCK_M=128, BLOCK_N=block_n,
        num_warps=8, num_stages=stages, PAIRED=paired)
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"]
    want = attention.reference(q64, k64, v64, do64, causal, 0.5)[0]
    tol = 1e-2 if dtype == "f16" else 4e-2
    np.testing.assert_allclose(attention.from_device(o), want, atol=tol, rtol=tol)


# ------------------------------------------------------------------ tutorial 08: low-memory dropout


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_dropout_is_bit_exact(dropout, target, dtype):
    """The GPU's block of 1024 over three blocks and a ragged tail, against the NumPy Philox."""
    run_dropout(dropout, target, dtype)


def run_dropout(dropout, target: str, dtype, check=lambda compiled: None) -> None:
    """Tutorial 08's kernel on `target`'s emulator, bit for bit against the NumPy Philox; `check`
    sees the launch's CompiledKernel."""
    from test_dropout import expected_dropout

    n = 3 * dropout.BLOCK + 5
    x = RNG.standard_normal(n).astype(dtype)
    out = poison(n, dtype)
    check(emulate(dropout.seeded_dropout_kernel, target)[(tile.cdiv(n, dropout.BLOCK),)](x, out, n, 0.2, 31337,
                                                                                        BLOCK=dropout.BLOCK))
    np.testing.assert_array_equal(out.view(np.uint8), expected_dropout(x, 0.2, 31337).view(np.uint8))


# ------------------------------------------------------------------ tutorial 09: layer norm with a spin lock


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("rows, cols, groups", [(37, 100, 4), (130, 64, 1), (24, 1000, 0)])
def test_layer_norm_forward_and_backward(lnb, target, rows, cols, groups):
    """Forward, the fused dx kernel (CTAs take a buffer's spin lock in turns: 130 rows on one lock
    is real contention) and the dw/db reduction, at the tutorial's GPU launch options."""
    run_layer_norm(lnb, target, rows, cols, groups)


def run_layer_norm(lnb, target: str, rows: int, cols: int, groups: int, check=lambda compiled: None) -> None:
    """Tutorial 09's three kernels on `target`'s emulator against its NumPy reference (`groups` 0:
    the tutorial's group count); `check` sees each launch's CompiledKernel."""
    rng = np.random.default_rng(rows * cols)
    x = (-2.3 + 0.5 * rng.standard_normal((rows, cols))).astype(np.float16)
    w, b = rng.random(cols).astype(np.float16), rng.random(cols).astype(np.float16)
    dy = (0.1 * rng.standard_normal((rows, cols))).astype(np.float16)
    block, warps = lnb.launch_config(cols, 2)
    y, mean, rstd = poison((rows, cols), np.float16), poison(rows, np.float32), poison(rows, np.float32)
    check(emulate(lnb.layer_norm_fwd_kernel, target)[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5,
                                                              BLOCK_SIZE_N=block, num_warps=warps))
    groups = groups or lnb.group_size(cols, rows)
    locks = np.zeros(2 * groups, np.int32)
    partial_dw, partial_db = poison((groups, cols), np.float32), poison((groups, cols), np.float32)
    dx, dw, db = poison((rows, cols), np.float16), poison(cols, np.float16), poison(cols, np.float16)
    check(emulate(lnb.layer_norm_bwd_dx_fused_kernel, target)[(rows,)](
        dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, cols, cols, GROUP_SIZE_M=groups, BLOCK_SIZE_N=block,
        num_warps=warps))
    np.testing.assert_array_equal(locks[:groups], 0)  # every lock released
    check(emulate(lnb.layer_norm_bwd_dwdb_kernel, target)[(tile.cdiv(cols, 128),)](
        partial_dw, partial_db, dw, db, groups, cols, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128))
    y_ref, dx_ref, dw_ref, db_ref = lnb.reference(x, w, b, dy)
    fp16 = 2.0 ** -11
    np.testing.assert_allclose(y, y_ref, rtol=2 * fp16, atol=1e-3)
    np.testing.assert_allclose(dx, dx_ref, rtol=2 * fp16, atol=1e-4)
    np.testing.assert_allclose(dw, dw_ref, rtol=2 * fp16, atol=1e-6 * rows)
    np.testing.assert_allclose(db, db_ref, rtol=2 * fp16, atol=1e-6 * rows)


# ------------------------------------------------------------------ grouped GEMM (benchmarks/kernels_grouped.py)


def run_grouped(kernel, target: str, shapes, b_transposed: bool, block, warps: int, programs: int,
                check=lambda compiled: None):
    """Each problem's C computed by `kernel` on the emulator (its matrices reached through the
    pointer table, so passed as `reachable`), and the float64 references; `check` sees the
    launch's CompiledKernel."""
    a = [RNG.random((m, k)).astype(np.float16) for m, n, k in shapes]
    b = [RNG.random((n, k) if b_transposed else (k, n)).astype(np.float16) for m, n, k in shapes]
    c = [np.full((m, n), np.nan, np.float16) for m, n, k in shapes]
    pointers = [np.array([x.ctypes.data for x in xs], np.int64) for xs in (a, b, c)]
    sizes = np.array([d for s in shapes for d in s], np.int32)
    lds = np.array([ld for x, y, z in zip(a, b, c) for ld in (x.shape[1], y.shape[1], z.shape[1])], np.int32)
    bm, bn, bk = block
    check(emulate(kernel, target, reachable=a + b + c)[(programs,)](*pointers, sizes, lds, len(shapes),
                                                                    NUM_SM=programs, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                                                                    BLOCK_SIZE_K=bk, num_warps=warps))
    refs = [x.astype(np.float64) @ (y.T if b_transposed else y).astype(np.float64) for x, y in zip(a, b)]
    return c, refs


@pytest.mark.parametrize("target, block, warps", [("sm_80", (64, 64, 32), 4), ("sm_90a", (64, 64, 32), 4),
                                                  ("sm_90a", (128, 64, 32), 8)])
def test_grouped_gemm_pointer_variant(grouped, target, block, warps):
    """Four problems over three programs (each walks tiles of several problems, the programs' K
    loops apart); K of one to four steps runs the cp.async pipeline round. The kernel does not
    mask: M, N and K are multiples of the blocks, as in the tutorial."""
    shapes = [(128, 128, 128), (128, 64, 96), (256, 64, 64), (128, 128, 32)]
    outs, refs = run_grouped(grouped.grouped_matmul_kernel, target, shapes, False, block, warps, 3)
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)


@pytest.mark.parametrize("target, block, warps", [("sm_80", (64, 64, 32), 4), ("sm_90a", (64, 64, 32), 4),
                                                  ("sm_90a", (64, 128, 64), 8)])
def test_grouped_gemm_descriptor_variant(grouped, target, block, warps):
    """Ragged problems (TMA loads fill zeros past the edges, stores clip): on sm_90a each program
    writes three tensor maps into its global scratch per problem."""
    shapes = [(100, 72, 72), (64, 136, 200), (8, 16, 24)]
    outs, refs = run_grouped(grouped.grouped_matmul_tma_kernel, target, shapes, True, block, warps, 3)
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)


def test_reachable_arrays_are_checked(grouped):
    """Without `reachable` the matrices behind the pointer table are outside every allocation;
    `reachable` takes NumPy arrays only (on every target: tests/test_amdgcn_gpu_kernels.py runs the
    AMD ones)."""
    from tile.emulator import EmulatorError

    a, b, c = (np.ones((64, 64), np.float16) for _ in range(3))
    table = [np.array([x.ctypes.data], np.int64) for x in (a, b, c)]
    sizes, lds = np.array([64, 64, 64], np.int32), np.array([64, 64, 64], np.int32)
    blocks = dict(NUM_SM=1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32)
    with pytest.raises(EmulatorError, match=r"(?s)address 0x[0-9a-f]+ is .*kernels_grouped.py"):
        emulate(grouped.grouped_matmul_kernel)[(1,)](*table, sizes, lds, 1, **blocks)
    with pytest.raises(EmulatorError, match=r"reachable\[1\] is a list: pass the NumPy array"):
        emulate(grouped.grouped_matmul_kernel, reachable=[a, [b], c])[(1,)](*table, sizes, lds, 1, **blocks)


# ------------------------------------------------------------------ TMA matmuls (tests/test_tma_gpu.py)


def _tma_operands(m: int, n: int, k: int, block):
    bm, bn, bk = block
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    return a, b, c, descs


@pytest.mark.parametrize("m, n, k, stages, warps", [(136, 200, 104, 3, 4), (100, 72, 40, 4, 8), (64, 64, 200, 2, 4)])
def test_tma_matmul(m, n, k, stages, warps):
    """Ragged K (the last box's columns past K read as zero), fewer steps than stages, both
    warp-group counts: the K loop's TMA loads on the mbarrier ring."""
    from test_tma import tma_matmul_kernel

    a, b, c, descs = _tma_operands(m, n, k, (64, 64, 32))
    compiled = emulate(tma_matmul_kernel, "sm_90a")[(tile.cdiv(m, 64), tile.cdiv(n, 64))](
        *descs, k, num_warps=warps, num_stages=stages)
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))


@pytest.mark.parametrize("k, stages", [(160, 3), (104, 2)])
def test_persistent_tma_matmul(k, stages):
    """Three programs loop over the 15 output tiles, the ring's mbarriers initialized per tile."""
    from test_tma import persistent_matmul_kernel

    m, n = 150, 264
    a, b, c, descs = _tma_operands(m, n, k, (64, 64, 32))
    emulate(persistent_matmul_kernel, "sm_90a")[(3,)](*descs, m, n, k, NUM_SMS=3, num_stages=stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8e4nv", "float8e5"])
@pytest.mark.parametrize("shape, block", [((100, 80), (32, 64)), ((33, 48), (16, 32))])
def test_tma_ragged_round_trip(dtype, shape, block):
    """tests/test_tma_gpu.py's copy through host descriptors: the loads past the edges read the
    fill, the stores clip; the bytes come back unchanged (bf16 and fp8 as random bits)."""
    run_ragged_round_trip("sm_90a", dtype, shape, block)


def run_ragged_round_trip(target: str, dtype: str, shape, block, check=lambda compiled: None) -> None:
    """test_tma_ragged_round_trip's copy on `target`'s emulator; `check` sees the CompiledKernel."""
    from test_tma_gpu import BIT_DTYPES, ragged_copy_kernel

    if dtype in BIT_DTYPES:
        bits = np.uint16 if dtype == "bfloat16" else np.uint8
        x = RNG.integers(0, np.iinfo(bits).max, size=shape, endpoint=True).astype(bits)
        src, dst = tile.to_device(x, BIT_DTYPES[dtype]), tile.to_device(np.full(shape, 0xA5, bits), BIT_DTYPES[dtype])
    else:
        x = RNG.standard_normal(shape).astype(dtype)
        src, dst = x, np.full(shape, np.nan, dtype)
    grid = (tile.cdiv(shape[0], block[0]), tile.cdiv(shape[1], block[1]))
    check(emulate(ragged_copy_kernel, target)[grid](TensorDescriptor.from_tensor(src, list(block)),
                                                    TensorDescriptor.from_tensor(dst, list(block))))
    got = dst.numpy() if hasattr(dst, "numpy") else dst
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_tma_out_of_bounds_reads(padding):
    """A host descriptor's block hanging over the corner reads the padding (tests/test_tma_gpu.py)."""
    run_out_of_bounds_reads("sm_90a", padding)


def run_out_of_bounds_reads(target: str, padding: str, check=lambda compiled: None) -> None:
    """test_tma_out_of_bounds_reads on `target`'s emulator; `check` sees the CompiledKernel."""
    from test_tma_gpu import shifted_load_kernel

    x = RNG.standard_normal((50, 40)).astype(np.float32)
    out = np.full((32, 32), 7.0, np.float32)
    check(emulate(shifted_load_kernel, target)[(1,)](TensorDescriptor.from_tensor(x, [32, 32], padding=padding), out,
                                                     30, 20, BM=32, BN=32))
    want = np.full((32, 32), 0.0 if padding == "zero" else np.nan)
    want[:20, :20] = x[30:50, 20:40]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_in_kernel_descriptors(target):
    """tests/test_tma_desc_gpu.py's kernels: a ragged copy and a matmul through descriptors made
    in the kernel (on sm_90a, tensor maps each program writes into its global scratch), the
    padding of a block over the corner, and descriptors made in a loop over groups whose
    matrices are reached through pointer tables."""
    run_in_kernel_descriptors(target)


def run_in_kernel_descriptors(target: str, check=lambda compiled: None) -> None:
    """The kernels of test_in_kernel_descriptors on `target`'s emulator against NumPy; `check`
    sees each launch's CompiledKernel (tests/test_amdgcn_gpu_kernels.py assembles the AMD ones)."""
    from test_tma_desc import desc_copy_kernel, desc_matmul_kernel
    from test_tma_desc_gpu import padded_load_kernel, per_group_scale_kernel

    m, n = 65, 144
    x = RNG.standard_normal((m, n)).astype(np.float16)
    y = np.full_like(x, np.nan)
    check(emulate(desc_copy_kernel, target)[(tile.cdiv(m, 64), tile.cdiv(n, 128))](x, y, m, n, BM=64, BN=128))
    np.testing.assert_array_equal(y, (x.astype(np.float64) * 2 + 1).astype(np.float16))

    m, n, k = 200, 136, 72
    a, b = RNG.standard_normal((m, k)).astype(np.float16), RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    check(emulate(desc_matmul_kernel, target)[(tile.cdiv(m, 64), tile.cdiv(n, 64))](a, b, c, m, n, k, BM=64, BN=64,
                                                                                   BK=32))
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=1e-1)

    x = RNG.standard_normal((40, 48)).astype(np.float32)
    for padding in ("zero", "nan"):
        out = np.full((32, 32), 7.0, np.float32)
        check(emulate(padded_load_kernel, target)[(1,)](x, out, 40, 48, 24, 32, BM=32, BN=32, PADDING=padding))
        want = np.full((32, 32), 0.0 if padding == "zero" else np.nan, np.float32)
        want[:16, :16] = x[24:, 32:]
        np.testing.assert_array_equal(out, want)

    sizes = [70, 256, 9]
    xs = [RNG.standard_normal((s, 32)).astype(np.float32) for s in sizes]
    ys = [np.full_like(v, np.nan) for v in xs]
    tables = [np.array([v.ctypes.data for v in vs], np.int64) for vs in (xs, ys)]
    check(emulate(per_group_scale_kernel, target, reachable=xs + ys)[(3,)](tables[0], np.array(sizes, np.int32),
                                                                           tables[1], GROUPS=3, N=32, BM=32))
    for g, (v, w) in enumerate(zip(xs, ys)):
        np.testing.assert_array_equal(w, v * (g + 1))


# ------------------------------------------------------------------ benchmarks/kernels.py


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_mma_peak_kernel(bench, target):
    """The tensor-core peak kernel: operands in registers, ITERS dots into one accumulator."""
    run_mma_peak(bench, target)


def run_mma_peak(bench, target: str, check=lambda compiled: None) -> None:
    """benchmarks/kernels.py's peak kernel on `target`'s emulator; `check` sees its CompiledKernel."""
    bm, bn, bk, iters, programs = 64, 64, 32, 3, 2
    a = RNG.standard_normal((bm, bk)).astype(np.float16)
    b = RNG.standard_normal((bk, bn)).astype(np.float16)
    c = poison((programs, bm, bn), np.float16)
    check(emulate(bench.mma_peak_kernel, target)[(programs,)](a, b, c, ITERS=iters, BLOCK_M=bm, BLOCK_N=bn,
                                                              BLOCK_K=bk))
    want = iters * (a.astype(np.float64) @ b.astype(np.float64))
    for program in range(programs):
        np.testing.assert_allclose(c[program].astype(np.float64), want, rtol=1e-2, atol=2e-2 * iters)


@pytest.mark.parametrize("target, block, warps, stages", [("sm_80", (128, 128, 32), 8, 4),
                                                          ("sm_90a", (128, 64, 64), 4, 3),
                                                          ("sm_90a", (64, 128, 32), 4, 4)])
def test_matmul_at_benchmark_configs(bench, target, block, warps, stages):
    """benchmarks/kernels.py's matmul at bench_matmul's larger blocks, ragged M and N, K of five steps."""
    run_matmul(bench, target, (200, 136, 5 * block[2]), block, warps, stages)


def run_matmul(bench, target: str, shape, block, warps: int, stages: int, check=lambda compiled: None) -> None:
    """benchmarks/kernels.py's matmul of `shape` (M, N, K) on `target`'s emulator against float64
    NumPy; `check` sees its CompiledKernel."""
    m, n, k = shape
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = poison((m, n), np.float16)
    bm, bn, bk = block
    grid = (tile.cdiv(m, bm) * tile.cdiv(n, bn),)
    check(emulate(bench.matmul_kernel, target)[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn,
                                                     BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages))
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
