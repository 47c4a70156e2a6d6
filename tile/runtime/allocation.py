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

Without an allocator tile uses its own (StreamScratch): one buffer per device and stream, grown
to the largest launch and reused, since launches on one stream run one after another. Triton
asks its users for an allocator; tile needs one only for CUDA graphs, where memory cannot be
allocated during the capture.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Optional

Allocator = Callable[[int, int, Optional[int]], Any]


def _no_allocator(size: int, alignment: int, stream: Optional[int]) -> Any:
    raise RuntimeError("no allocator was set with tile.set_allocator")


_allocator: ContextVar[Allocator] = ContextVar("tile_allocator", default=_no_allocator)


class StreamScratch:
    """Scratch buffers owned by tile, one per (device, stream), each as large as the largest
    launch so far. `new_buffer(nbytes, device)` makes one (a DeviceArray of bytes)."""

    def __init__(self, new_buffer: Callable[[int, int], Any]):
        self.new_buffer = new_buffer
        self.buffers: dict[tuple[int, int], Any] = {}

    def get(self, kernel: str, nbytes: int, stream: Any, device: int) -> Any:
        key = (device, int(stream or 0))
        buffer = self.buffers.get(key)
        if buffer is None or buffer.nbytes < nbytes:
            from .cuda_driver import CaptureError, capturing

            if capturing():
                raise CaptureError(kernel, "given global scratch memory (or use tile.set_allocator with an allocator "
                                           "that works in graphs, such as torch.empty)")
            # the old buffer is freed here; cuMemFree waits for the kernels that may still use it
            buffer = self.buffers[key] = self.new_buffer(max(nbytes, 2 * (buffer.nbytes if buffer else 0)), device)
        return buffer


def _device_bytes(nbytes: int, device: int) -> Any:
    from .arrays import DeviceArray

    return DeviceArray((nbytes,), "i8", device)


TILE_SCRATCH = StreamScratch(_device_bytes)


def set_allocator(allocator: Allocator) -> None:
    """Set the function that gives kernels global scratch memory: `allocator(size, alignment,
    stream)` returns a buffer with `data_ptr()`. It is per context (contextvars), like
    Triton's."""
    if not callable(allocator):
        raise TypeError(f"set_allocator expects a callable(size, alignment, stream), got {allocator!r}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator set by set_allocator (one that raises RuntimeError when none was set: tile
    then uses its own scratch)."""
    return _allocator.get()


SCRATCH_ALIGNMENT = 128


def allocate_scratch(kernel: str, nbytes: int, stream: Any, device: int) -> Any:
    """A buffer of `nbytes` of global scratch for a launch of `kernel` on `device`, from the
    allocator, or tile's own (TILE_SCRATCH) when none was set; RuntimeError naming the kernel
    when the allocator gives no 128-byte aligned buffer with data_ptr()."""
    allocator = _allocator.get()
    if allocator is _no_allocator:
        return TILE_SCRATCH.get(kernel, nbytes, stream, device)
    buffer = allocator(nbytes, SCRATCH_ALIGNMENT, stream)
    address = buffer.data_ptr() if hasattr(buffer, "data_ptr") else None
    if not isinstance(address, int) or address % SCRATCH_ALIGNMENT:
        raise RuntimeError(f"kernel '{kernel}': the allocator set by tile.set_allocator must return a buffer with "
                           f"data_ptr() aligned to {SCRATCH_ALIGNMENT} bytes, got {buffer!r}")
    return buffer


__all__ = ["set_allocator", "get_allocator", "allocate_scratch", "Allocator", "SCRATCH_ALIGNMENT", "StreamScratch",
           "TILE_SCRATCH"]
