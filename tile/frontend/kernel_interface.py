"""`tile.KernelInterface`: Triton's base of launchable kernels.

A subclass implements `run(*args, grid, warmup, **kwargs)` and gets Triton's launch syntax:
`kernel[grid](*args)` calls run(..., grid=grid, warmup=False), and `kernel.warmup(*args,
grid=...)` calls it with warmup=True (torch dtypes among the arguments become MockTensors).

    class Twice(tile.KernelInterface):
        def __init__(self, fn):
            self.fn = fn

        def run(self, *args, grid, warmup, **kwargs):
            for _ in range(2):
                self.fn[grid](*args, **kwargs)

tile's own kernels (@tile.jit functions, tile.autotune and tile.heuristics wrappers) count as
KernelInterfaces for isinstance checks; they keep their own launch paths.
"""
from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any, Callable, Generic, TypeVar

from ..runtime.autotuner import Autotuner, Heuristics
from ..runtime.wrappers import MockTensor
from .jit import JITFunction

T = TypeVar("T")


class KernelInterface(Generic[T], metaclass=ABCMeta):
    """A launchable kernel: implement `run`; `kernel[grid](...)` and `kernel.warmup(...)` follow."""

    @abstractmethod
    def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        """Launch (warmup=False) or only compile (warmup=True) for `args` on `grid`."""

    def warmup(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        return self.run(*map(MockTensor.wrap_dtype, args), grid=grid, warmup=True, **kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


for _kernel_class in (JITFunction, Autotuner, Heuristics):
    KernelInterface.register(_kernel_class)

__all__ = ["KernelInterface"]
