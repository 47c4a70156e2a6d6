"""Convert tile IR to gpu IR: give every tensor a layout for `num_warps` warps, and record the
compile options the gpu passes read as func attrs (num_warps, threads_per_warp, target and
num_stages, the buffers software pipelining may use).

Before (tile IR):
    tt.func {sym_name = "rowmax"} {
    ^bb(%x: ptr<f32>):
      %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
      %xs = tt.splat %x : tensor<128xptr<f32>>
      %ptrs = tt.addptr %xs, %offs : tensor<128xptr<f32>>
      %v = tt.load %ptrs : tensor<128xf32>
      ...
After (num_warps = 4; #b = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>):
    tt.func {num_stages = 3, num_warps = 4, sym_name = "rowmax", target = "sm_90a", threads_per_warp = 32} {
    ^bb(%x: ptr<f32>):
      %offs = tt.arange {end = 128, start = 0} : tensor<128xi32, #b>
      %xs = tt.splat %x : tensor<128xptr<f32>, #b>
      ...

Rules: results of ops that create tensors (arange, splat, constant, ...) get the default blocked
layout of their shape; elementwise ops keep the layout their operands share (if they differ,
the first operand not made by a splat/constant/arange decides); a reduce's tensor result gets
#slice<dim = axis, parent = operand layout>; expand_dims of a value sliced along its axis gets
the parent (any other operand: the default layout, the operand converted to its slice);
broadcast and scan keep the operand's layout; trans and reshape keep every element in its
register (tile.ir.layouts.trans_layout / reshape_layout), so do join (the new dimension becomes a
register bit: join_layout) and split (when the operand holds its last dimension in one register
bit: split_layout; otherwise the results get the default layout and the operand a conversion);
gather takes its index's layout; loads take the pointer's layout; dot the accumulator's.
Loop-carried values take their initial value's layout, scf.if results the then-branch's. Finally a gpu.convert_layout goes before every operand that breaks its op's
layout rule (tile.ir.gpu_ops.legalize). Combine regions of reduce and scan stay scalar.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Block, Operation, TensorType, Value
from ..ir.gpu_ops import is_elementwise, layout_of, legalize, scan_layout_ok, with_layout
from ..ir.layouts import (DistributedLayout, SliceLayout, default_blocked, join_layout, reshape_layout, split_layout,
                          trans_layout)
from .pass_manager import Pass

_MADE_HERE = ("tt.splat", "arith.constant", "tt.arange")


class ConvertToGpu(Pass):
    """tile IR -> gpu IR for `num_warps` warps of `threads_per_warp` threads on `target`."""

    name = "convert-to-gpu"

    def __init__(self, num_warps: int, target: str, threads_per_warp: int = 32, num_stages: int = 3):
        self.num_warps = num_warps
        self.target = target
        self.threads_per_warp = threads_per_warp
        self.num_stages = num_stages

    def run(self, func: Operation) -> None:
        func.attrs.update(num_warps=self.num_warps, threads_per_warp=self.threads_per_warp, target=self.target,
                          num_stages=self.num_stages)
        block = func.regions[0].block
        for a in block.args:
            self._set(a, self._default(a))
        self._block(block)
        legalize(func)

    def _default(self, v: Value) -> Optional[DistributedLayout]:
        t = v.type
        return default_blocked(t.shape, self.num_warps, self.threads_per_warp) if isinstance(t, TensorType) else None

    @staticmethod
    def _set(v: Value, layout: Optional[DistributedLayout]) -> None:
        if isinstance(v.type, TensorType):
            v.type = with_layout(v.type, layout)

    def _block(self, block: Block) -> None:
        for op in list(block.ops):
            self._op(op)

    def _op(self, op: Operation) -> None:
        name = op.name
        if name == "scf.for":
            body = op.regions[0].block
            for arg, init, r in zip(body.args[1:], op.operands[3:], op.results):
                arg.type = r.type = init.type
            self._block(body)
        elif name == "scf.while":
            before, after = op.regions[0].block, op.regions[1].block
            for arg, init in zip(before.args, op.operands):
                arg.type = init.type
            self._block(before)
            for arg, v, r in zip(after.args, before.terminator.operands[1:], op.results):
                arg.type = r.type = v.type
            self._block(after)
        elif name == "scf.if":
            for region in op.regions:
                self._block(region.block)
            for r, v in zip(op.results, op.regions[0].block.terminator.operands):
                r.type = v.type
        elif name in ("tt.reduce", "tt.scan"):
            layout = layout_of(op.operand(0))
            if not layout.shape_generic:  # a #slice needs its parent at another shape
                layout = self._default(op.operand(0))
            elif name == "tt.scan" and not scan_layout_ok(layout, op.operand(0).type.shape, op.attrs["axis"]):
                layout = self._default(op.operand(0))
            for r in op.results:
                self._set(r, SliceLayout(op.attrs["axis"], layout) if name == "tt.reduce" else layout)
        else:
            for r in op.results:
                self._set(r, self._result_layout(op, r))

    def _result_layout(self, op: Operation, r: Value) -> Optional[DistributedLayout]:
        if not isinstance(r.type, TensorType):
            return None
        name = op.name
        src = layout_of(op.operand(0)) if op.num_operands else None
        if name == "tt.broadcast":
            return src if src.shape_generic else self._default(r)
        if name == "tt.expand_dims":
            if isinstance(src, SliceLayout) and src.dim == op.attrs["axis"]:
                return src.parent
            return self._default(r)
        if name == "tt.trans":
            return trans_layout(src, op.operand(0).type.shape, op.attrs["order"])
        if name == "tt.reshape":
            return reshape_layout(src, op.operand(0).type.shape, r.type.shape)
        if name == "tt.join":
            return join_layout(src, op.operand(0).type.shape)
        if name == "tt.split":
            return split_layout(src, op.operand(0).type.shape) or self._default(r)
        if name == "tt.gather":
            return layout_of(op.operand(1))
        if name in ("tt.load", "tt.atomic_rmw", "tt.atomic_cas"):
            return src
        if name == "tt.dot":
            return layout_of(op.operand(2))
        same_shape = [v for v in op.operands if isinstance(v.type, TensorType) and v.type.shape == r.type.shape]
        if same_shape and (is_elementwise(op) or len(same_shape) == op.num_operands):
            layouts = [layout_of(v) for v in same_shape]
            if all(lay == layouts[0] for lay in layouts):
                return layouts[0]
            for v in same_shape:
                if v.owner_op is None or v.owner_op.name not in _MADE_HERE:
                    return layout_of(v)
            return layouts[0]
        return self._default(r)


__all__ = ["ConvertToGpu"]
