"""CUDA graph capture, host side: a launch that would compile, load or tune while PyTorch
captures a graph raises tile's "warm up first" error before any driver work. A fake torch
stands in; tests/test_cuda_graphs_gpu.py captures and replays real graphs."""
from __future__ import annotations

import re
import sys
import types
from types import SimpleNamespace

import pytest

from tile.runtime import cuda_driver
from tile.runtime.cuda_driver import CaptureError
from tile.runtime.cuda_launch import CudaBackend

from test_autotune import make


@pytest.fixture
def capture(monkeypatch):
    """A fake torch whose current stream is capturing while `state.capturing` is True; no driver."""
    state = SimpleNamespace(capturing=True)
    torch = types.ModuleType("torch")
    torch.cuda = SimpleNamespace(is_initialized=lambda: True, is_current_stream_capturing=lambda: state.capturing)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(cuda_driver, "_drv", lambda: pytest.fail("the driver was called during the capture"))
    return state


METADATA = {"name": "softmax_kernel", "shared_bytes": 0, "threads": 128, "arg_kinds": ["ptr"]}


def test_loading_a_kernel_during_a_capture_asks_for_a_warm_up(capture):
    expected = ("kernel 'softmax_kernel' is launched for the first time (with these argument types and options) "
                "while a CUDA graph is being captured: it would have to be compiled and loaded, which a capture "
                "cannot record. Warm up first: launch it once with the same arguments before torch.cuda.graph(...), "
                "then capture")
    with pytest.raises(CaptureError, match=re.escape(expected)):
        CudaBackend(".version 8.0", METADATA, 0)


def test_tuning_during_a_capture_asks_for_a_warm_up(capture):
    tuned, kernel, timer = make(cache_results=False)
    with pytest.raises(CaptureError, match=r"kernel 'scale' .* would have to be tuned \(timing its configs "
                                           r"synchronizes the GPU\).* Warm up first"):
        tuned[(1,)](None, None, 8)
    assert timer.timed == [] and kernel.launches == []
    capture.capturing = False
    tuned[(1,)](None, None, 8)  # warmed up: the capture finds the choice in memory
    capture.capturing = True
    tuned[(1,)](None, None, 8)
    assert len(timer.timed) == 3 and len(kernel.launches) == 3 * 2 + 2


def test_no_capture_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert cuda_driver.capturing() is False
