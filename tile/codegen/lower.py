"""Lowering driver: a verified, allocated gpu-IR tt.func -> a simt.func (per-thread SSA).

Before (gpu IR, 4 warps):

    tt.func {num_warps = 4, shared_bytes = 0, sym_name = "add", ...} {
    ^bb(%x: ptr<f32>, %out: ptr<f32>):
      %offs = tt.arange {end = 512, start = 0} : tensor<512xi32, #L>     (#L = #blocked<spt = [4], tpw = [32], ...>)
      %p = tt.splat %x : tensor<512xptr<f32>, #L>
      %px = tt.addptr %p, %offs : tensor<512xptr<f32>, #L>
      %v = tt.load %px {vector = 4} : tensor<512xf32, #L>
      ...

After (simt IR: what one thread runs):

    simt.func {num_warps = 4, shared_bytes = 0, sym_name = "add", ...} {
    ^bb(%x: ptr<f32>, %out: ptr<f32>):
      %tid = simt.tid : i32
      %t = arith.shl %tid, %c2 : i32
      %px = simt.addptr %x, %t {scale = 4} : ptr<f32>
      %true = arith.constant {value = true} : i1
      %v0, %v1, %v2, %v3 = simt.ld_global %px, %true {offset = 0, vector = 4} : f32, f32, f32, f32
      ...

Each op family lives in its own module (lower_elementwise, lower_cast, lower_memory,
lower_control, lower_shape, lower_reduce, lower_scan, lower_gather, lower_histogram, lower_atomics,
lower_debug, lower_dot, lower_wgmma, lower_ldmatrix, lower_async, lower_tma, lower_inline_asm, lower_map_elementwise);
they
register their lowerings in `lower_core.LOWERINGS`.
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region
from ..ir.types import TensorType
from ..ir.verifier import verify
from . import (lower_async, lower_atomics, lower_cast, lower_control, lower_debug, lower_dot,  # noqa: F401
               lower_elementwise, lower_inline_asm, lower_ldmatrix, lower_map_elementwise, lower_memory, lower_reduce,
               lower_scan, lower_shape, lower_tma, lower_wgmma)
from . import lower_gather, lower_histogram  # noqa: F401
from .lower_core import Lowering, LoweringError, dce, issue_loads_early, sink_predicates, sink_shared_addresses


def lower_to_simt(func: Operation) -> Operation:
    """The simt.func of a gpu-IR tt.func (layouts assigned, shared memory allocated)."""
    if func.name != "tt.func":
        raise LoweringError(func, "lower_to_simt expects a tt.func")
    src = func.regions[0].block
    for a in src.args:
        if isinstance(a.type, TensorType):
            raise LoweringError(func, f"kernel parameters are scalars, got {a.type}")
    entry = Block([a.type for a in src.args])
    for a, b in zip(src.args, entry.args):
        b.name_hint = a.name_hint
    attrs = {k: func.attrs[k] for k in ("sym_name", "arg_names", "num_warps", "target", "global_scratch_bytes")
             if k in func.attrs}
    simt = Operation("simt.func", [], [], attrs, [Region([entry])], loc=func.loc)
    ctx = Lowering(func, entry)
    if ctx.facts.isa == "ptx":
        ctx.lane_zero_copies = lower_control.loaded_loop_bounds(func)
    for a, b in zip(src.args, entry.args):
        ctx.set(a, [b])
    ctx.lower_ops(src.ops)
    simt.attrs["shared_bytes"] = ctx.shared_bytes
    dce(simt)
    sink_predicates(simt)
    if ctx.facts.isa == "ptx":
        sink_shared_addresses(simt)
    issue_loads_early(entry)
    verify(simt)
    return simt
