"""Start loading the CUDA driver bindings in the background when the first kernel is defined.

Importing cuda-python's `cuda.bindings.driver` and initializing the driver cost ~15 ms
(measured on an H200 host; most of a warm start). A script defines its kernels, then builds
its inputs, and only then launches: doing that work on a thread from the first `@tile.jit`
overlaps it with the script's own, so the first launch does not wait for it. The thread is
not a daemon, so interpreter shutdown never interrupts an import half done.
"""
from __future__ import annotations

import os
import threading

_started = False
_lock = threading.Lock()


def start_driver_import() -> None:
    """Begin importing and initializing the driver bindings, once per process (no-op when
    TILE_INTERPRET is set). Errors are left for the launch path to report."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        _started = True
    if os.environ.get("TILE_INTERPRET", "0") not in ("", "0"):
        return
    threading.Thread(target=_load_driver, name="tile-driver-import").start()


def _load_driver() -> None:
    from .cuda_driver import cuda_available

    cuda_available()
