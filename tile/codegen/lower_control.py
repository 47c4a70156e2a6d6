"""Lowering of scf.for / scf.if / scf.while: the same structured ops on flattened registers.

A loop-carried tensor becomes one loop-carried value per register:

    %acc = scf.for %lb, %ub, %st, %zero : tensor<256xf32, #L> { ^bb(%i: i32, %a: tensor<256xf32, #L>): ... }
  becomes (2 registers per thread)
    %acc0, %acc1 = scf.for %lb, %ub, %st, %z, %z : f32, f32 { ^bb(%i: i32, %a0: f32, %a1: f32): ... }

Conditions and bounds are scalars, hence the same in every thread: control flow stays
uniform, so shuffles and barriers inside these regions are safe. The PTX emitter turns the
ops into labels and branches.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.core import Block, Operation, Region, Value
from .lower_core import Lowering, lowers

_SMEM_OPS = ("gpu.local_alloc", "gpu.local_store", "gpu.local_load", "tt.reduce", "tt.scan", "tt.atomic_rmw",
             "tt.atomic_cas")


def _flat(ctx: Lowering, values: Sequence[Value]) -> list[Value]:
    return [r for v in values for r in ctx.get(v)]


def _distribute(ctx: Lowering, gpu_values: Sequence[Value], simt_values: Sequence[Value]) -> None:
    i = 0
    for v in gpu_values:
        n = ctx.info(v.type).num_regs
        ctx.set(v, list(simt_values[i:i + n]))
        i += n


def _touches_smem(op: Operation) -> bool:
    return any(inner.name in _SMEM_OPS for region in op.regions for b in region.blocks for o in b.ops
               for inner in o.walk())


def _lower_region(ctx: Lowering, src: Block, dst: Block, args: Sequence[Value], terminator: str) -> None:
    """Lower the body `src` into `dst` (whose args are `args`), ending in `terminator`."""
    _distribute(ctx, src.args, args)
    with ctx.at_block(dst):
        ctx.lower_ops(src.ops[:-1])
        term = src.ops[-1]
        ctx.loc = term.loc or ctx.loc
        ctx.effect(terminator, _flat(ctx, term.operands))


def _structured(ctx: Lowering, name: str, operands: list[Value], result_types: list, blocks: list[Block]) -> Operation:
    op = ctx.effect(name, operands, result_types)
    for b in blocks:
        op.add_region(Region([b]))
    return op


@lowers("scf.for")
def _lower_for(ctx: Lowering, op: Operation) -> None:
    lb, ub, step = (ctx.get(v)[0] for v in op.operands[:3])
    inits = _flat(ctx, op.operands[3:])
    types = [v.type for v in inits]
    body = Block([lb.type] + types)
    smem = _touches_smem(op)
    new = _structured(ctx, "scf.for", [lb, ub, step] + inits, types, [body])
    ctx.smem_pending |= smem
    ctx.scratch_pending |= smem
    _lower_region(ctx, op.regions[0].block, body, body.args, "scf.yield")
    _distribute(ctx, op.results, new.results)
    ctx.smem_pending |= smem
    ctx.scratch_pending |= smem


@lowers("scf.if")
def _lower_if(ctx: Lowering, op: Operation) -> None:
    cond = ctx.get(op.operand(0))[0]
    types = [t for v in op.results for t in ctx.reg_types(v.type)]
    then_block, else_block = Block(), Block()
    new = _structured(ctx, "scf.if", [cond], types, [then_block, else_block])
    before = (ctx.smem_pending, ctx.scratch_pending)
    _lower_region(ctx, op.regions[0].block, then_block, [], "scf.yield")
    after_then = (ctx.smem_pending, ctx.scratch_pending)
    ctx.smem_pending, ctx.scratch_pending = before
    _lower_region(ctx, op.regions[1].block, else_block, [], "scf.yield")
    ctx.smem_pending |= after_then[0]
    ctx.scratch_pending |= after_then[1]
    _distribute(ctx, op.results, new.results)


@lowers("scf.while")
def _lower_while(ctx: Lowering, op: Operation) -> None:
    inits = _flat(ctx, op.operands)
    before_src, after_src = op.regions[0].block, op.regions[1].block
    after_types = [t for a in after_src.args for t in ctx.reg_types(a.type)]
    before, after = Block([v.type for v in inits]), Block(after_types)
    smem = _touches_smem(op)
    new = _structured(ctx, "scf.while", inits, after_types, [before, after])
    ctx.smem_pending |= smem
    ctx.scratch_pending |= smem
    _lower_region(ctx, before_src, before, before.args, "scf.condition")
    _lower_region(ctx, after_src, after, after.args, "scf.yield")
    _distribute(ctx, op.results, new.results)
    ctx.smem_pending |= smem
    ctx.scratch_pending |= smem


@lowers("tt.return")
def _lower_return(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.return")
