"""How a TMA copy lays a descriptor's block out in shared memory: the one choice that the
compiler (tile/opt/tma.py, tile/codegen/lower_tma.py) and the host (tile/runtime/tensor_map.py,
which encodes the tensor map) must agree on.

A block of a rank-2 descriptor whose rows hold at least 32 bytes is stored in wgmma's canonical
swizzled layout (tile.ir.dot_layouts.wgmma_shared with the last dimension contiguous), so a
block feeding tl.dot is read by wgmma straight from where TMA put it: the tensor map's swizzle is
the layout's (128, 64 or 32 bytes) and its box is one swizzle span wide; a block wider than that
is copied box by box, each box landing in the next `block` of the layout:

    block [64, 128] f16  ->  #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0], block = 64>,
                             swizzle 128, box [64, 64], copies at columns 0 and 64 (8 KiB apart)

Any other block (rank 1 or 3 to 5, or rows under 32 bytes) is stored row-major without swizzle in
one copy of the whole block.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .dot_layouts import wgmma_shared
from .layouts import SharedLayout

TMA_MAX_BOX = 256  # elements per box dimension
TENSOR_MAP_BYTES = 128  # a CUtensorMap, in kernel parameters or in global memory
TMA_MIN_INNER_BYTES = 16  # bytes of a box's contiguous dimension


@dataclass(frozen=True)
class TmaLayout:
    """The shared layout of a block, the tensor map's swizzle (bytes, 0: none), the box (in the
    block's dimension order, last contiguous) and the number of boxes along the last dimension."""

    shared: SharedLayout
    swizzle: int
    box: tuple[int, ...]
    copies: int


def tma_layout(block_shape: Sequence[int], element_bytes: int) -> TmaLayout:
    """The layout TMA copies of a `block_shape` block of `element_bytes` elements use."""
    block = tuple(block_shape)
    rank = len(block)
    order = tuple(reversed(range(rank)))
    swizzled = wgmma_shared(block, element_bytes, order) if rank == 2 else None
    if swizzled is None:
        return TmaLayout(SharedLayout(1, 1, 1, order), 0, block, 1)
    swizzle = swizzled.max_phase * 16
    width = swizzle // element_bytes
    return TmaLayout(swizzled, swizzle, (block[0], min(width, block[1])), max(1, block[1] // width))


__all__ = ["TmaLayout", "tma_layout", "TMA_MAX_BOX", "TMA_MIN_INNER_BYTES", "TENSOR_MAP_BYTES"]
