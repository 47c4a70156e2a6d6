"""The ordered gpu-level passes: tile IR in, gpu IR ready for lowering out.

convert-to-gpu gives every tensor a layout; accelerate-dot puts each tt.dot on the tensor cores
(#mma result, #dot_op operands; on sm_90a wgmma: #mma version 3, operands in #shared buffers) or
the FMA path; coalesce picks the layouts of memory accesses; remove-layout-conversions spreads
them (and the dots' layouts) and deletes the conversions that become useless; vectorize sets each
access's width; convert-through-shared turns the remaining thread-crossing conversions into
shared-memory round trips, which stages the dot operands in swizzled buffers (and orients
wgmma's); tma turns the accesses of host descriptors on sm_90a into TMA copies; pipeline turns the staging of the loads feeding a dot in a loop into num_stages-buffered
cp.async copies (wgmma dots run asynchronously across them); alloc-shared places buffers and
reduce scratch; insert-barriers synchronizes shared-memory hazards (and fences the writes wgmma
reads).
"""
from __future__ import annotations

from typing import Optional

from .accelerate_dot import AccelerateDot
from .alloc_shared import AllocShared
from .coalesce import Coalesce
from .convert_through_shared import ConvertThroughShared
from .insert_barriers import InsertBarriers
from .pass_manager import Pass
from .pipeline import Pipeline
from .remove_layout_conversions import RemoveLayoutConversions
from .share_transposed_buffers import ShareTransposedBuffers
from .tma import LowerToTma
from .to_gpu import ConvertToGpu
from .vectorize import Vectorize


def gpu_passes(num_warps: int, target: str, threads_per_warp: int = 32, num_stages: int = 3,
               shared_limit: Optional[int] = None) -> list[Pass]:
    """convert-to-gpu, accelerate-dot, coalesce, remove-layout-conversions, vectorize,
    convert-through-shared, share-transposed-buffers, tma, pipeline, alloc-shared, insert-barriers. `shared_limit`: the
    target's shared bytes per program, which alloc-shared keeps to where it has the choice."""
    return [ConvertToGpu(num_warps, target, threads_per_warp, num_stages), AccelerateDot(), Coalesce(),
            RemoveLayoutConversions(), Vectorize(), ConvertThroughShared(target), ShareTransposedBuffers(), LowerToTma(),
            Pipeline(shared_limit),
            AllocShared(shared_limit), InsertBarriers()]


__all__ = ["gpu_passes"]
