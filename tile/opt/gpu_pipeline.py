"""The ordered gpu-level passes: tile IR in, gpu IR ready for lowering out.

convert-to-gpu gives every tensor a layout; coalesce picks the layouts of memory accesses;
remove-layout-conversions spreads them and deletes the conversions that become useless;
vectorize sets each access's width; convert-through-shared turns the remaining
thread-crossing conversions into shared-memory round trips; alloc-shared places buffers and
reduce scratch; insert-barriers synchronizes shared-memory hazards.
"""
from __future__ import annotations

from .alloc_shared import AllocShared
from .coalesce import Coalesce
from .convert_through_shared import ConvertThroughShared
from .insert_barriers import InsertBarriers
from .pass_manager import Pass
from .remove_layout_conversions import RemoveLayoutConversions
from .to_gpu import ConvertToGpu
from .vectorize import Vectorize


def gpu_passes(num_warps: int, target: str, threads_per_warp: int = 32) -> list[Pass]:
    """convert-to-gpu, coalesce, remove-layout-conversions, vectorize, convert-through-shared,
    alloc-shared, insert-barriers."""
    return [ConvertToGpu(num_warps, target, threads_per_warp), Coalesce(), RemoveLayoutConversions(), Vectorize(),
            ConvertThroughShared(), AllocShared(), InsertBarriers()]


__all__ = ["gpu_passes"]
