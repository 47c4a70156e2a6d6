"""The global-scratch allocator hook (Triton's `triton.set_allocator`).

    def alloc(size: int, alignment: int, stream: Optional[int]):
        return torch.empty(size, dtype=torch.int8, device="cuda")

    tile.set_allocator(alloc)

A kernel that needs global scratch memory at run time gets it by calling the allocator at
launch: `allocator(size_in_bytes, alignment, stream)` returns a buffer (anything with
`data_ptr()`) that lives until the launch has been enqueued. On sm_90a the kernels that make
tensor descriptors (`tl.make_tensor_descriptor`) whose accesses become TMA copies need it: each
program writes its 128-byte tensor maps there (`global_scratch_bytes` per program, the
`global_scratch` parameter that tile/opt/tma.py appends), so a launch asks for that many bytes
times the number of programs, 128-byte aligned.
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


SCRATCH_ALIGNMENT = 128


def allocate_scratch(kernel: str, nbytes: int, stream: Any) -> Any:
    """A buffer of `nbytes` of global scratch for a launch of `kernel`, from the allocator;
    RuntimeError naming the kernel when none was set, or when it gives no 128-byte aligned
    buffer with data_ptr()."""
    allocator = _allocator.get()
    if allocator is _no_allocator:
        raise RuntimeError(f"kernel '{kernel}' needs {nbytes} bytes of global scratch memory (its in-kernel tensor "
                           f"descriptors are TMA tensor maps written at run time), but no allocator was set; give "
                           f"one with tile.set_allocator(lambda size, alignment, stream: torch.empty(size, "
                           f"dtype=torch.int8, device='cuda'))")
    buffer = allocator(nbytes, SCRATCH_ALIGNMENT, stream)
    address = buffer.data_ptr() if hasattr(buffer, "data_ptr") else None
    if not isinstance(address, int) or address % SCRATCH_ALIGNMENT:
        raise RuntimeError(f"kernel '{kernel}': the allocator set by tile.set_allocator must return a buffer with "
                           f"data_ptr() aligned to {SCRATCH_ALIGNMENT} bytes, got {buffer!r}")
    return buffer


__all__ = ["set_allocator", "get_allocator", "allocate_scratch", "Allocator", "SCRATCH_ALIGNMENT"]
