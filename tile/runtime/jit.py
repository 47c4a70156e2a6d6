"""`triton.runtime.jit`'s names for Triton programs: `JITFunction` and `jit` are tile's
(tile.frontend.jit); the rest of Triton's module raises AttributeError naming what to use."""
from __future__ import annotations

from typing import Any

from tile.frontend.jit import JITFunction, KernelParam, jit

_MISSING = {
    "TensorWrapper": "view the tensor with the dtype you need on the host (torch: tensor.view(dtype))",
    "reinterpret": "view the tensor with the dtype you need on the host (torch: tensor.view(dtype))",
    "MockTensor": "pass arrays of the right dtype to kernel.warmup",
    "KernelInterface": "tile's launchable kernels are tile.JITFunction, tile.runtime.Autotuner and "
                       "tile.runtime.Heuristics",
}


def __getattr__(name: str) -> Any:
    hint = _MISSING.get(name)
    if hint is not None:
        raise AttributeError(f"tile does not provide triton.runtime.jit.{name}: {hint}")
    raise AttributeError(f"module 'tile.runtime.jit' has no attribute {name!r}")


__all__ = ["JITFunction", "KernelParam", "jit"]
