"""Coalescing: give each global load, store and atomic the layout where consecutive threads touch
consecutive addresses, and each thread holds as many consecutive elements as one access can take.

For a tensor pointer, the dimensions are ordered by the pointer's contiguity (axis info; ties
keep row-major order), and each thread gets
    size_per_thread[fastest] = min(contiguity, alignment in elements, 16 bytes / element bytes,
                                   elements / threads)
along the fastest dimension; lanes then warps fill the dimensions in that order (Triton's
blocked layout constructor). Operands move to that layout and the result back, through
gpu.convert_layout; remove-layout-conversions then propagates the new layout through the
surrounding computation and removes the conversions.

Before (num_warps = 4; #b1 = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>):
    %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #b1>     (contiguity 1024, 16-byte aligned)
    %x = tt.load %p, %mask : tensor<1024xf32, #b1>
After (#b4 = #blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>):
    %0 = gpu.convert_layout %p : tensor<1024xptr<f32>, #b4>
    %1 = gpu.convert_layout %mask : tensor<1024xi1, #b4>
    %2 = tt.load %0, %1 : tensor<1024xf32, #b4>
    %x = gpu.convert_layout %2 : tensor<1024xf32, #b1>
"""
from __future__ import annotations

from ..ir import Operation, PointerType, TensorType
from ..ir.gpu_ops import element_bytes, insert_convert, layout_of, with_layout
from ..ir.layouts import BlockedLayout, blocked_layout
from .axis_info import AxisInfo, AxisInfoAnalysis
from .pass_manager import Pass

MEMORY_OPS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas")


def contiguity_order(info: AxisInfo) -> list[int]:
    """Dimensions from the most contiguous to the least (ties: the later dimension first)."""
    rank = info.rank
    return sorted(reversed(range(rank)), key=lambda d: -info.contiguity[d])


def coalesced_layout(ptr_type: TensorType, info: AxisInfo, num_warps: int, threads_per_warp: int = 32) -> BlockedLayout:
    """The blocked layout giving coalesced, widest-possible accesses through pointers `ptr_type`."""
    shape = ptr_type.shape
    order = contiguity_order(info)
    fast = order[0]
    ebytes = element_bytes(TensorType(shape, ptr_type.element.pointee))
    per_thread = max(ptr_type.numel // (num_warps * threads_per_warp), 1)
    aligned = min(max(info.divisibility[fast] // ebytes, 1), info.contiguity[fast])
    spt = [1] * len(shape)
    spt[fast] = min(aligned, max(16 // ebytes, 1), per_thread)
    return blocked_layout(shape, spt, order, num_warps, threads_per_warp)


class Coalesce(Pass):
    """Re-lays out global memory accesses for coalescing (see the module docstring)."""

    name = "coalesce"

    def run(self, func: Operation) -> None:
        num_warps, tpw = func.attrs["num_warps"], func.attrs["threads_per_warp"]
        analysis = AxisInfoAnalysis(func)
        for op in list(func.walk()):
            ptr = op.operand(0) if op.name in MEMORY_OPS else None
            if ptr is None or not isinstance(ptr.type, TensorType) or not isinstance(ptr.type.element, PointerType):
                continue
            layout = coalesced_layout(ptr.type, analysis[ptr], num_warps, tpw)
            if all(layout_of(v) == layout for v in op.operands + tuple(op.results)):
                continue
            for i, v in enumerate(op.operands):
                if layout_of(v) != layout:
                    op.set_operand(i, insert_convert(v, layout, op))
            for r in op.results:
                old = r.type
                uses = list(r.uses)
                r.type = with_layout(old, layout)
                back = Operation("gpu.convert_layout", [r], [old], loc=op.loc)
                op.parent.insert_after(op, back)
                for user, index in uses:
                    user.set_operand(index, back.result)


__all__ = ["Coalesce", "coalesced_layout", "contiguity_order", "MEMORY_OPS"]
