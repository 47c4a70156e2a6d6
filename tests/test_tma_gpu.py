"""TMA on a Hopper GPU (sm_90a): descriptor loads and stores through cp.async.bulk.tensor, with
ragged edges (out-of-bounds elements read as zero or NaN, stores clipped), a TMA matmul and a
persistent-style kernel. Skipped without a GPU; the kernels' PTX is checked on CPU by test_tma.py."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.tools.tensor_descriptor import TensorDescriptor
from test_tma import persistent_matmul_kernel, tma_matmul_kernel

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(11)


@tile.jit
def ragged_copy_kernel(src, dst):
    BM: tl.constexpr = src.block_shape[0]
    BN: tl.constexpr = src.block_shape[1]
    offs = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(offs, src.load(offs))


@tile.jit
def shifted_load_kernel(src, out_ptr, row, col, BM: tl.constexpr, BN: tl.constexpr):
    block = src.load([row, col])
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * BN + cols, block)


BIT_DTYPES = {"bfloat16": "bf16", "float8e4nv": "f8e4nv", "float8e5": "f8e5"}


def _device(values: np.ndarray, dtype: str):
    """`values` on the GPU; for bf16 and fp8, `values` holds their bits."""
    return tile.to_device(values, BIT_DTYPES.get(dtype))


def _values(shape, dtype: str) -> np.ndarray:
    """Random values to upload: small integers for f16, normal f32, and random bits for bf16 and
    fp8 (a copy moves bits; the test compares bytes)."""
    if dtype == "float16":
        return RNG.integers(-1000, 1000, size=shape).astype(np.float16)
    if dtype == "float32":
        return RNG.standard_normal(shape).astype(np.float32)
    bits = np.uint16 if dtype == "bfloat16" else np.uint8
    return RNG.integers(0, np.iinfo(bits).max, size=shape, endpoint=True).astype(bits)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8e4nv", "float8e5"])
@pytest.mark.parametrize("shape,block", [((100, 80), (32, 64)), ((65, 144), (64, 128)), ((33, 48), (16, 32))])
def test_ragged_round_trip(dtype: str, shape, block) -> None:
    x = _values(shape, dtype)
    src = _device(x, dtype)
    out = np.full(shape, 0x7FC1 if x.itemsize == 2 else 0xA5, x.dtype) if x.dtype.kind in "ui" else \
        np.full(shape, np.nan, x.dtype)
    dst = _device(out, dtype)
    grid = (tile.cdiv(shape[0], block[0]), tile.cdiv(shape[1], block[1]))
    ragged_copy_kernel[grid](TensorDescriptor.from_tensor(src, list(block)),
                             TensorDescriptor.from_tensor(dst, list(block)))
    got = dst.numpy()
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("arrays", ["tile", "torch"])
def test_descriptor_launches_after_the_first_take_the_fast_binder(arrays: str) -> None:
    """Host descriptors over tile's DeviceArrays or CUDA torch tensors: launches after the first
    go through the fast binder (DescriptorLeaves), new data and new shapes alike, and copy right."""
    kernel = tile.jit(ragged_copy_kernel.fn)
    if arrays == "torch":
        torch = pytest.importorskip("torch")
        to_gpu = lambda x: torch.as_tensor(x, device="cuda")  # noqa: E731
        to_host = lambda x: x.cpu().numpy()  # noqa: E731
    else:
        to_gpu, to_host = tile.to_device, lambda x: x.numpy()
    for shape in ((100, 80), (100, 80), (64, 96), (100, 80)):
        x = RNG.standard_normal(shape).astype(np.float32)
        src, dst = to_gpu(x), to_gpu(np.full(shape, np.nan, np.float32))
        grid = (tile.cdiv(shape[0], 32), tile.cdiv(shape[1], 64))
        kernel[grid](TensorDescriptor.from_tensor(src, [32, 64]), TensorDescriptor.from_tensor(dst, [32, 64]))
        np.testing.assert_array_equal(to_host(dst), x)
        assert kernel._launch is not kernel._general
    assert len(kernel._fast_entries) == 2 and len(kernel.cache) == 2


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_out_of_bounds_reads(padding: str) -> None:
    x = RNG.standard_normal((50, 40)).astype(np.float32)
    out = tile.to_device(np.full((32, 32), 7.0, np.float32))
    desc = TensorDescriptor.from_tensor(tile.to_device(x), [32, 32], padding=padding)
    shifted_load_kernel[(1,)](desc, out, 30, 20, BM=32, BN=32)
    want = np.full((32, 32), 0.0 if padding == "zero" else np.nan)
    want[:20, :20] = x[30:50, 20:40]
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("m,n,k,stages,warps", [(4096, 4096, 4096, 3, 4), (1000, 1032, 520, 3, 4),
                                                 (1000, 1032, 520, 2, 8), (1000, 1032, 520, 4, 4),
                                                 (256, 256, 40, 3, 4), (256, 256, 136, 4, 8)])
def test_tma_matmul(m: int, n: int, k: int, stages: int, warps: int) -> None:
    """The K loop's loads on the TMA ring (tests/test_tma_pipeline.py): ragged K (the last box's
    columns past K read as zero), fewer iterations than stages, both warp-group counts."""
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = tile.to_device(np.full((m, n), np.nan, np.float16))
    descs = (TensorDescriptor.from_tensor(tile.to_device(a), [128, 64]),
             TensorDescriptor.from_tensor(tile.to_device(b), [64, 128]), TensorDescriptor.from_tensor(c, [128, 128]))
    tma_matmul_kernel[(tile.cdiv(m, 128), tile.cdiv(n, 128))](*descs, k, num_warps=warps, num_stages=stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))


@pytest.mark.parametrize("k,stages", [(640, 3), (600, 4), (104, 2)])
def test_persistent_matmul(k: int, stages: int) -> None:
    """Each tile's K loop runs the TMA ring again (the mbarriers initialized per tile)."""
    from tile.runtime.cuda_driver import CudaDevice

    m, n = 1500, 1304
    sms = CudaDevice.get(0).num_sms
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = tile.to_device(np.full((m, n), np.nan, np.float16))
    descs = (TensorDescriptor.from_tensor(tile.to_device(a), [128, 64]),
             TensorDescriptor.from_tensor(tile.to_device(b), [64, 128]), TensorDescriptor.from_tensor(c, [128, 128]))
    persistent_matmul_kernel[(sms,)](*descs, m, n, k, NUM_SMS=sms, num_stages=stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))
