"""More than one GPU, on GPUs: launches on cuda:1 with cuda:1 tensors and DeviceArrays, mixed
devices and CPU tensors refused before anything runs, device indices checked, PyTorch's current
device left alone, launches from new threads, a CUDA graph on cuda:1, and the torchrun example
with two ranks. Tests marked multigpu need two CUDA devices; the others one."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import tile

torch = pytest.importorskip("torch")
from test_cuda_graphs_gpu import axpy_kernel, on_gpu  # noqa: E402, F401  (on_gpu: an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent


N = 5000
GRID = (tile.cdiv(N, 1024),)


def inputs(device: str, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x, y = torch.randn(N, generator=generator), torch.randn(N, generator=generator)
    return x.to(device), y.to(device), torch.full((N,), float("nan"), device=device)


def reference(x, y, alpha):
    return alpha * x.double().cpu().numpy() + y.double().cpu().numpy()


@pytest.mark.multigpu
def test_launches_run_on_the_current_device():
    kernel = tile.jit(axpy_kernel.fn)
    for device in (1, 0, 1):
        with torch.cuda.device(device):
            x, y, out = inputs(f"cuda:{device}", seed=device)
            kernel[GRID](x, y, out, N, 0.5, BLOCK=1024)
            torch.cuda.synchronize()
            np.testing.assert_allclose(out.cpu().numpy(), reference(x, y, 0.5), rtol=1e-6, atol=1e-6)
    assert sorted(key[-1] for key in kernel.cache) == [0, 1]
    modules = {key[-1]: compiled.backend.device for key, compiled in kernel.cache.items()}
    assert modules == {0: 0, 1: 1}  # each device loaded its own module


@pytest.mark.multigpu
def test_tensors_on_another_device_are_refused_before_launching():
    x1, y1, out1 = inputs("cuda:1")
    with pytest.raises(ValueError, match=r"axpy_kernel: argument 'x_ptr' is on cuda:1, but this launch runs on "
                                         r"cuda:0, PyTorch's current device \(torch.cuda.current_device\(\)\)"):
        axpy_kernel[GRID](x1, y1, out1, N, 0.5, BLOCK=1024)
    with torch.cuda.device(1):
        x0 = x1.to("cuda:0")
        with pytest.raises(ValueError, match="argument 'x_ptr' is on cuda:0, but this launch runs on cuda:1"):
            axpy_kernel[GRID](x0, y1, out1, N, 0.5, BLOCK=1024)
    torch.cuda.synchronize(1)
    assert torch.isnan(out1).all()


@pytest.mark.multigpu
def test_device_arrays_run_on_their_device():
    x, y = np.random.default_rng(1).standard_normal((2, N)).astype(np.float32)
    dx, dy = tile.to_device(x, device=1), tile.to_device(y, device=1)
    out = tile.empty(N, np.float32, device=1)
    out.copy_from(np.full(N, np.nan, np.float32))
    assert (dx.device, out.device, repr(out)) == (1, 1, "DeviceArray(shape=(5000,), dtype=f32, on=cuda:1)")
    axpy_kernel[GRID](dx, dy, out, N, 2.0, BLOCK=1024)  # the current device is 0: the arrays choose cuda:1
    np.testing.assert_allclose(out.numpy(), 2.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert torch.cuda.current_device() == 0
    with pytest.raises(ValueError, match="argument 'y_ptr' is on cuda:0, but this launch runs on cuda:1, the device "
                                         "of argument 'x_ptr'"):
        axpy_kernel[GRID](dx, tile.to_device(y, device=0), out, N, 2.0, BLOCK=1024)


@pytest.mark.multigpu
def test_a_graph_captured_on_cuda1_replays_there():
    with torch.cuda.device(1):
        x, y, out = inputs("cuda:1")
        axpy_kernel[GRID](x, y, out, N, 3.0, BLOCK=1024)  # warm up
        torch.cuda.synchronize()
        out.fill_(float("nan"))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            axpy_kernel[GRID](x, y, out, N, 3.0, BLOCK=1024)
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), reference(x, y, 3.0), rtol=1e-6, atol=1e-6)


@pytest.mark.multigpu
def test_tile_leaves_pytorchs_current_device_alone(tmp_path):
    script = tmp_path / "keeps_device.py"  # a file: tile reads the kernel's source back
    script.write_text(textwrap.dedent("""
        import torch, numpy as np, tile, tile.language as tl
        torch.cuda.set_device(1)

        @tile.jit
        def fill(out_ptr, value, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, value, mask=offs < n)

        out = torch.zeros(100, device="cuda")
        fill[(1,)](out, 2.5, 100, BLOCK=128)           # compiles and loads: tile's first use of CUDA
        host = tile.to_device(np.ones(4, np.float32), device=0)
        assert torch.cuda.current_device() == 1, torch.cuda.current_device()
        assert out.device.index == 1 and bool((out == 2.5).all())
        print("current device kept")
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert "current device kept" in result.stdout


@pytest.mark.gpu
def test_cpu_tensors_are_refused_for_a_gpu_launch():
    x, y, out = inputs("cuda:0")
    with pytest.raises(TypeError, match="axpy_kernel: argument 'x_ptr' .* is in host memory"):
        axpy_kernel[GRID](x.cpu(), y, out, N, 0.5, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.isnan(out).all()


@pytest.mark.gpu
def test_a_device_that_does_not_exist_is_refused():
    count = torch.cuda.device_count()
    with pytest.raises(ValueError, match=f"there is no CUDA device {count}: this process sees {count} CUDA device"):
        tile.empty(16, np.float32, device=count)
    with pytest.raises(ValueError, match=f"there is no CUDA device {count}"):
        tile.to_device(np.zeros(4, np.float32), device=count)


@pytest.mark.gpu
def test_launches_from_new_threads():
    x, y, out = inputs("cuda:0")
    axpy_kernel[GRID](x, y, out, N, 1.5, BLOCK=1024)
    outs = [torch.full_like(out, float("nan")) for _ in range(4)]
    errors: list[BaseException] = []

    def launch(target):
        try:
            axpy_kernel[GRID](x, y, target, N, 1.5, BLOCK=1024)
            arr = tile.to_device(np.ones(8, np.float32))  # memory work in a thread without a context
            assert arr.numpy().sum() == 8
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=launch, args=(o,)) for o in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    torch.cuda.synchronize()
    for o in outs:
        np.testing.assert_allclose(o.cpu().numpy(), reference(x, y, 1.5), rtol=1e-6, atol=1e-6)


@pytest.mark.multigpu
def test_torchrun_example_with_two_ranks(tmp_path):
    """examples/distributed_softmax.py under torchrun: two ranks, tile kernels on each GPU, NCCL
    all-reduces, rank 0's autotuning broadcast; every rank checks the whole softmax."""
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
         str(ROOT / "examples" / "distributed_softmax.py")],
        capture_output=True, text=True, timeout=500, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TILE_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "distributed softmax OK" in result.stdout
    for rank in (0, 1):
        assert f"rank {rank}/2 on cuda:{rank}" in result.stdout
