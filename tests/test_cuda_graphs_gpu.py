"""CUDA graphs on a GPU: tile launches captured by torch.cuda.graph replay with the inputs of
each replay and match eager launches; a kernel first launched during a capture raises the
"warm up first" error and leaves the capture valid. Needs torch and a CUDA device."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime.cuda_driver import CaptureError

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@tile.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.fixture(autouse=True)
def on_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))


N = 10_000
GRID = (tile.cdiv(N, 1024),)


def two_launches(x, y, out, out2):
    axpy_kernel[GRID](x, y, out, N, 2.0, BLOCK=1024)
    axpy_kernel[GRID](out, y, out2, N, -0.5, BLOCK=1024)


def expected(x, y):
    x64, y64 = x.double().cpu().numpy(), y.double().cpu().numpy()
    first = 2.0 * x64 + y64
    return first, -0.5 * first + y64


def test_captured_launches_replay_like_eager_ones():
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out, out2 = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    side = torch.cuda.Stream()  # warm up on a side stream, as torch.cuda.graph's documentation does
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        two_launches(x, y, out, out2)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    eager = out2.clone()
    out.fill_(float("nan"))
    out2.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        two_launches(x, y, out, out2)
    torch.cuda.synchronize()
    assert torch.isnan(out).all() and torch.isnan(out2).all()  # a capture records, it runs nothing
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out2, eager, rtol=0, atol=0)
    for seed in range(3):  # new inputs in the captured buffers: each replay computes with them
        generator = torch.Generator(device="cuda").manual_seed(seed)
        x.copy_(torch.randn(N, device="cuda", generator=generator))
        y.copy_(torch.randn(N, device="cuda", generator=generator))
        out2.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        first, second = expected(x, y)
        np.testing.assert_allclose(out.cpu().numpy(), first, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(out2.cpu().numpy(), second, rtol=1e-6, atol=1e-6)


def test_a_first_launch_during_a_capture_asks_for_a_warm_up():
    kernel = tile.jit(axpy_kernel.fn)  # nothing compiled yet
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(CaptureError, match="Warm up first: launch it once with the same arguments before "
                                           r"torch.cuda.graph\(...\), then capture"):
        with torch.cuda.graph(graph):
            kernel[GRID](x, y, out, N, 2.0, BLOCK=1024)
    kernel[GRID](x, y, out, N, 2.0, BLOCK=1024)  # the warm-up the error asks for...
    out.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # ...after which the capture works
        kernel[GRID](x, y, out, N, 2.0, BLOCK=1024)
    graph.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), expected(x, y)[0], rtol=1e-6, atol=1e-6)
