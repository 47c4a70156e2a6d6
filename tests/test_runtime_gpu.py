"""The runtime on a GPU: launches with torch tensors and DeviceArrays, streams, the disk cache,
launch limits, do_bench and autotune end to end. Skipped without a CUDA device."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime.errors import LaunchError

pytestmark = pytest.mark.gpu


@tile.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@pytest.fixture(autouse=True)
def on_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))


def _reference(x, y, alpha):
    return alpha * x.astype(np.float64) + y.astype(np.float64)


def test_device_arrays_and_metadata():
    rng = np.random.default_rng(0)
    n = 10_000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = tile.to_device(np.full(n, np.nan, np.float32))
    axpy_kernel[(tile.cdiv(n, 1024),)](tile.to_device(x), tile.to_device(y), out, n, 0.5, BLOCK=1024)
    np.testing.assert_allclose(out.numpy(), _reference(x, y, 0.5), rtol=1e-6, atol=1e-6)
    compiled = next(c for c in axpy_kernel.cache.values() if c.target != "interpreter")
    assert compiled.registers > 0 and compiled.spill_bytes == 0
    assert "ld.global" in compiled.stage("ptx")


def test_torch_tensors_follow_the_current_stream():
    torch = pytest.importorskip("torch")
    from tile.runtime.cuda_driver import current_stream_of

    n = 1 << 16
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        assert current_stream_of((x,)) == stream.cuda_stream
        axpy_kernel[(n // 1024,)](x, y, out, n, 2.0, BLOCK=1024)
    stream.synchronize()
    torch.testing.assert_close(out, 2.0 * x + y)
    out2 = torch.full_like(x, float("nan"))  # filled on the default stream...
    stream.wait_stream(torch.cuda.current_stream())  # ...so the side stream waits for it before the kernel writes
    axpy_kernel[(n // 1024,)](x, y, out2, n, 2.0, BLOCK=1024, stream=stream.cuda_stream)  # explicit stream=
    stream.synchronize()
    torch.testing.assert_close(out2, 2.0 * x + y)
    with torch.cuda.stream(stream):  # stream order, no synchronization: fill, kernel, read, all on the side stream
        for _ in range(3):
            out3 = torch.full_like(x, float("nan"))
            axpy_kernel[(n // 1024,)](x, y, out3, n, 2.0, BLOCK=1024)
            doubled = out3 * 2
    stream.synchronize()
    torch.testing.assert_close(doubled, 2 * (2.0 * x + y))


def test_fast_binder_on_the_gpu():
    """After the first launch, launches take the fast binder: new tensors, misaligned views,
    another dtype, n == 1, a side stream, CPU tensors (refused) and an empty grid."""
    torch = pytest.importorskip("torch")

    @tile.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, (alpha * x + tl.load(y_ptr + offs, mask=mask)).to(out_ptr.dtype.element_ty), mask=mask)

    gen = torch.Generator(device="cuda").manual_seed(0)

    def check(dtype=torch.float32, n=5000, offset=0, alpha=0.5, stream=None):
        x, y = (torch.randn(n + offset, device="cuda", dtype=dtype, generator=gen)[offset:] for _ in range(2))
        out = torch.full((n + offset,), float("nan"), device="cuda", dtype=dtype)[offset:]
        axpy[(tile.cdiv(n, 256),)](x, y, out, n, alpha, BLOCK=256)
        if stream is not None:
            stream.synchronize()
        expect = alpha * x.double().cpu().numpy() + y.double().cpu().numpy()
        tol = 1e-6 if dtype == torch.float32 else 2e-3
        np.testing.assert_allclose(out.double().cpu().numpy(), expect, rtol=tol, atol=tol)

    check()
    assert axpy._launch is not axpy._general  # the first launch made the fast binder
    check()
    check(n=4096)  # divisible by 16: another kernel
    check(offset=1)  # 4-byte aligned pointers: another kernel
    check(dtype=torch.float16)
    check(n=1)  # n == 1 is folded into the kernel
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        check(stream=side)
    assert len(axpy._fast_entries) >= 5
    x = torch.ones(16)
    with pytest.raises(TypeError, match="host memory"):
        axpy[(1,)](x, x, x, 16, 1.0, BLOCK=16)
    y = torch.ones(16, device="cuda")
    axpy[(0,)](y, y, y, 16, 1.0, BLOCK=16)  # an empty grid runs nothing
    torch.cuda.synchronize()
    assert torch.equal(y, torch.ones(16, device="cuda"))
    # Beyond 32 bits: refused with the limit named, never truncated into a launch.
    with pytest.raises(LaunchError, match="grid dimension x"):
        axpy[(2**32 + 1,)](y, y, y, 16, 1.0, BLOCK=16)
    with pytest.raises(LaunchError, match="grid dimension y"):
        axpy[(1, 2**32 + 1)](y, y, y, 16, 1.0, BLOCK=16)
    with pytest.raises(ValueError, match="negative launch configuration"):
        axpy[(-1,)](y, y, y, 16, 1.0, BLOCK=16)
    from cuda.bindings import driver

    for stream in (side.cuda_stream, driver.CUstream(side.cuda_stream)):  # explicit streams: an int, a CUstream
        out = torch.zeros(16, device="cuda")
        side.wait_stream(torch.cuda.current_stream())  # the zeros land before the kernel on the side stream
        axpy[(1,)](y, y, out, 16, 2.0, BLOCK=16, stream=stream)
        side.synchronize()
        assert torch.equal(out, torch.full((16,), 3.0, device="cuda"))
    torch.cuda.synchronize()
    assert torch.equal(y, torch.ones(16, device="cuda"))


def test_host_arrays_on_a_gpu_launch_are_refused():
    x = np.ones(16, np.float32)
    with pytest.raises(TypeError, match="host memory"):
        axpy_kernel[(1,)](x, x, x, 16, 1.0, BLOCK=16)


def test_launch_limits_name_the_kernel_and_limit():
    x = tile.to_device(np.ones(64, np.float32))
    with pytest.raises(LaunchError, match="grid dimension y"):
        axpy_kernel[(1, 1 << 20)](x, x, x, 64, 1.0, BLOCK=64)


def test_disk_cache_warm_start_and_corruption(tmp_path):
    from tile.compiler import compile_kernel, current_target

    x = tile.to_device(np.ones(256, np.float32))
    spec, _ = axpy_kernel.specialize((x, x, x, 256, 1.0), {"BLOCK": 256})
    options = {"num_warps": 4, "num_stages": 3}
    first = compile_kernel(axpy_kernel, spec, options, current_target())
    assert not first.from_disk_cache
    second = compile_kernel(axpy_kernel, spec, options, current_target())
    assert second.from_disk_cache and second.stage("ptx") == first.stage("ptx")
    for entry in (tmp_path / "cache").rglob("*.entry"):
        data = entry.read_bytes()
        entry.write_bytes(data[: len(data) // 2])  # a truncated entry is detected and recompiled
    third = compile_kernel(axpy_kernel, spec, options, current_target())
    assert not third.from_disk_cache and third.stage("ptx") == first.stage("ptx")


def test_do_bench_times_a_kernel():
    from tile.testing import do_bench

    n = 1 << 22
    x = tile.to_device(np.random.default_rng(2).standard_normal(n).astype(np.float32))
    out = tile.empty((n,), np.float32)
    ms = do_bench(lambda: axpy_kernel[(n // 1024,)](x, x, out, n, 1.0, BLOCK=1024), warmup=5, rep=20,
                  return_mode="median")
    assert 0.001 < ms < 50
    lo, mid, hi = do_bench(lambda: axpy_kernel[(n // 1024,)](x, x, out, n, 1.0, BLOCK=1024), warmup=5, rep=20,
                           quantiles=[0.2, 0.5, 0.8])
    assert lo <= mid <= hi


def test_autotune_end_to_end():
    @tile.autotune(configs=[tile.Config({"BLOCK": 256}, num_warps=2), tile.Config({"BLOCK": 1024}, num_warps=4),
                            tile.Config({"BLOCK": 2048}, num_warps=8)], key=["n"])
    @tile.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)

    n = 100_003
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = tile.to_device(np.full(n, np.nan, np.float32))
    scale[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](tile.to_device(x), out, n)
    assert scale.best_config is not None
    np.testing.assert_allclose(out.numpy(), x.astype(np.float64) * 3.0, rtol=1e-6)


def test_do_bench_cudagraph_captures_tile_launches():
    torch = pytest.importorskip("torch")
    from tile.testing import do_bench_cudagraph

    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    ms = do_bench_cudagraph(lambda: axpy_kernel[(n // 1024,)](x, x, out, n, 0.5, BLOCK=1024), rep=5)
    assert 0.0005 < ms < 50
    torch.testing.assert_close(out, 1.5 * x)  # the replayed graph ran the kernel
