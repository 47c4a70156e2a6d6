"""`triton.runtime.jit`'s names for Triton programs: `JITFunction`, `KernelParam` and `jit`
(tile.frontend.jit), `KernelInterface` (tile.frontend.kernel_interface), and `TensorWrapper`,
`reinterpret` and `MockTensor` (tile.runtime.wrappers)."""
from __future__ import annotations

from tile.frontend.jit import JITFunction, KernelParam, jit
from tile.frontend.kernel_interface import KernelInterface
from tile.runtime.wrappers import MockTensor, TensorWrapper, reinterpret

__all__ = ["JITFunction", "KernelInterface", "KernelParam", "MockTensor", "TensorWrapper", "jit", "reinterpret"]
