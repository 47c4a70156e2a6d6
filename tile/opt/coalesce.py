"""Coalescing: give each global load, store and atomic the layout where consecutive threads touch
consecutive addresses, and each thread holds as many consecutive elements as one access can take.

For a tensor pointer, the dimensions are ordered by the pointer's contiguity (axis info; ties
keep row-major order), and one access can take
    width = min(contiguity, alignment in elements, 16 bytes / element bytes)
consecutive elements along the fastest dimension. Accesses joined by data flow (one connected
piece of the def-use graph; the kernel's arguments join nothing) with the same shape and order
form a group, as in Triton's coalescing: its loads all take the group's widest width, so a chain
that mixes element sizes (an f16 x with f32 weights) runs in one layout and needs no conversion.
An f32 load in a group of f16 accesses then holds 8 consecutive floats per thread: two 16-byte
accesses, each still fully used by the warp. Stores and atomics keep their own width (a wider
one would leave gaps in every warp-wide write). Each thread gets
    size_per_thread[fastest] = min(width, elements / threads)
and lanes then warps fill the dimensions in that order (Triton's blocked layout constructor).
Operands move to that layout and the result back, through gpu.convert_layout;
remove-layout-conversions then propagates the new layouts through the surrounding computation
and removes the conversions.

Before (num_warps = 4; #b1 = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>; both
pointers 16-byte aligned and contiguous, built from the same %offs: one group):
    %hp = tt.addptr %hs, %offs : tensor<1024xptr<f16>, #b1>
    %wp = tt.addptr %ws, %offs : tensor<1024xptr<f32>, #b1>
    %x = tt.load %hp : tensor<1024xf16, #b1>
    %y = tt.load %wp : tensor<1024xf32, #b1>
After (#b8 = #blocked<spt = [8], tpw = [32], wpc = [4], order = [0]>: the f16 load's 16 bytes,
taken by the f32 load of its group too):
    %0 = gpu.convert_layout %hp : tensor<1024xptr<f16>, #b8>
    %x = tt.load %0 : tensor<1024xf16, #b8>
    %1 = gpu.convert_layout %x : tensor<1024xf16, #b1>
    %2 = gpu.convert_layout %wp : tensor<1024xptr<f32>, #b8>
    %y = tt.load %2 : tensor<1024xf32, #b8>
    %3 = gpu.convert_layout %y : tensor<1024xf32, #b1>
"""
from __future__ import annotations

from ..ir import BlockArgument, Operation, PointerType, TensorType
from ..ir.gpu_ops import element_bytes, insert_convert, layout_of, with_layout
from ..ir.layouts import BlockedLayout, blocked_layout
from .axis_info import AxisInfo, AxisInfoAnalysis
from .pass_manager import Pass

MEMORY_OPS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas")
_TERMINATORS = ("scf.yield", "scf.condition")


def contiguity_order(info: AxisInfo) -> list[int]:
    """Dimensions from the most contiguous to the least (ties: the later dimension first)."""
    rank = info.rank
    return sorted(reversed(range(rank)), key=lambda d: -info.contiguity[d])


def access_width(ptr_type: TensorType, info: AxisInfo) -> int:
    """Consecutive elements one access through `ptr_type` can take along its most contiguous dim."""
    fast = contiguity_order(info)[0]
    ebytes = element_bytes(TensorType(ptr_type.shape, ptr_type.element.pointee))
    aligned = min(max(info.divisibility[fast] // ebytes, 1), info.contiguity[fast])
    return min(aligned, max(16 // ebytes, 1))


def coalesced_layout(ptr_type: TensorType, info: AxisInfo, num_warps: int, threads_per_warp: int = 32,
                     width: int | None = None) -> BlockedLayout:
    """The blocked layout giving coalesced accesses of `width` (default: the widest one access
    takes) consecutive elements per thread through pointers `ptr_type`."""
    shape = ptr_type.shape
    order = contiguity_order(info)
    per_thread = max(ptr_type.numel // (num_warps * threads_per_warp), 1)
    spt = [1] * len(shape)
    spt[order[0]] = min(access_width(ptr_type, info) if width is None else width, per_thread)
    return blocked_layout(shape, spt, order, num_warps, threads_per_warp)


class _Components:
    """Union-find over the ops of a function: ops are joined when one uses a value the other
    defines (a block argument is defined by the op owning its block) and a terminator is joined
    to the op it ends. The function itself joins nothing."""

    def __init__(self, func: Operation) -> None:
        self.parent: dict[Operation, Operation] = {}
        for op in func.walk():
            if op is func:
                continue
            for v in op.operands:
                owner = v.block.parent_op if isinstance(v, BlockArgument) else v.owner_op
                if owner is not None and owner is not func:
                    self.union(op, owner)
            if op.name in _TERMINATORS:
                self.union(op, op.parent_op)

    def find(self, op: Operation) -> Operation:
        root = op
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while op is not root:
            self.parent[op], op = root, self.parent[op]
        return root

    def union(self, a: Operation, b: Operation) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


def coalesced_layouts(func: Operation, analysis: AxisInfoAnalysis) -> dict[Operation, BlockedLayout]:
    """The layout of every global memory access through a tensor of pointers (see the module docstring)."""
    num_warps, tpw = func.attrs["num_warps"], func.attrs["threads_per_warp"]
    accesses = [op for op in func.walk() if op.name in MEMORY_OPS and isinstance(op.operand(0).type, TensorType)
                and isinstance(op.operand(0).type.element, PointerType)]
    components = _Components(func)

    def group(op: Operation) -> tuple:
        ptr = op.operand(0)
        return components.find(op), ptr.type.shape, tuple(contiguity_order(analysis[ptr]))

    widest: dict[tuple, int] = {}
    for op in accesses:
        key = group(op)
        widest[key] = max(widest.get(key, 1), access_width(op.operand(0).type, analysis[op.operand(0)]))
    return {op: coalesced_layout(op.operand(0).type, analysis[op.operand(0)], num_warps, tpw,
                                 widest[group(op)] if op.name == "tt.load" else None) for op in accesses}


class Coalesce(Pass):
    """Re-lays out global memory accesses for coalescing (see the module docstring)."""

    name = "coalesce"

    def run(self, func: Operation) -> None:
        for op, layout in coalesced_layouts(func, AxisInfoAnalysis(func)).items():
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


__all__ = ["Coalesce", "access_width", "coalesced_layout", "coalesced_layouts", "contiguity_order", "MEMORY_OPS"]
