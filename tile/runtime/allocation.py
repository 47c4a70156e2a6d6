"""The global-scratch allocator hook (Triton's `triton.set_allocator`).

    def alloc(size: int, alignment: int, stream: Optional[int]):
        return torch.empty(size, dtype=torch.int8, device="cuda")

    tile.set_allocator(alloc)

A kernel that needs global scratch memory at run time gets it by calling the allocator at
launch: `allocator(size_in_bytes, alignment, stream)` returns a buffer (anything with
`data_ptr()`) that lives until the launch has been enqueued. No kernel tile compiles needs
global scratch yet (tensor descriptors are expanded into pointer accesses, not TMA
descriptors written to scratch), so tile stores the allocator without calling it; code
written for Triton that sets one runs unchanged.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Optional

Allocator = Callable[[int, int, Optional[int]], Any]


def _no_allocator(size: int, alignment: int, stream: Optional[int]) -> Any:
    raise RuntimeError("this kernel needs global scratch memory at run time, but no allocator was set; use "
                       "tile.set_allocator to give one")


_allocator: ContextVar[Allocator] = ContextVar("tile_allocator", default=_no_allocator)


def set_allocator(allocator: Allocator) -> None:
    """Set the function that gives kernels global scratch memory: `allocator(size, alignment,
    stream)` returns a buffer with `data_ptr()`. It is per context (contextvars), like
    Triton's."""
    if not callable(allocator):
        raise TypeError(f"set_allocator expects a callable(size, alignment, stream), got {allocator!r}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator set by set_allocator (one that raises RuntimeError when none was set)."""
    return _allocator.get()


__all__ = ["set_allocator", "get_allocator", "Allocator"]
