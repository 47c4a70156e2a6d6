"""Lowering of scf.for / scf.if / scf.while: the same structured ops on flattened registers.

A loop-carried tensor becomes one loop-carried value per register:

    %acc = scf.for %lb, %ub, %st, %zero : tensor<256xf32, #L> { ^bb(%i: i32, %a: tensor<256xf32, #L>): ... }
  becomes (2 registers per thread)
    %acc0, %acc1 = scf.for %lb, %ub, %st, %z, %z : f32, f32 { ^bb(%i: i32, %a0: f32, %a1: f32): ... }

A loop-carried tensor of pointers or integers that the loop advances by one amount for all
elements (`%p1 = tt.addptr %p, %splat` or `arith.add` of a splat, as `a_ptrs += BLOCK_K *
stride` gives) is carried as its bases only: registers that start as base + constant keep
their constants, and the loop carries and advances one base per group, not every register:

    %ptrs = scf.for ..., %init : tensor<64x32xptr<f16>, #L>    (16 registers: base + 0, 16, ..., 3840)
  becomes
    %b = scf.for ..., %base : ptr<f16> { ^bb(%k: i32, %x: ptr<f16>): ... scf.yield %x_next }

Conditions and bounds are scalars, hence the same in every thread: control flow stays
uniform, so shuffles and barriers inside these regions are safe. The PTX emitter turns the
ops into labels and branches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from ..ir.core import Block, Operation, Region, Value
from ..ir.types import DType, PointerType, TensorType, i32
from .lower_core import Lowering, LoweringError, lowers

_ATOMIC_OPS = ("tt.atomic_rmw", "tt.atomic_cas")
_SMEM_OPS = ("gpu.local_alloc", "gpu.local_store", "gpu.local_load", "tt.reduce", "tt.scan") + _ATOMIC_OPS


def _flat(ctx: Lowering, values: Sequence[Value]) -> list[Value]:
    return [r for v in values for r in ctx.get(v)]


def _distribute(ctx: Lowering, gpu_values: Sequence[Value], simt_values: Sequence[Value]) -> None:
    i = 0
    for v in gpu_values:
        n = ctx.info(v.type).num_regs
        ctx.set(v, list(simt_values[i:i + n]))
        i += n


def _inner_ops(op: Operation) -> Iterator[Operation]:
    return (inner for region in op.regions for b in region.blocks for o in b.ops for inner in o.walk())


def _touches_smem(op: Operation) -> bool:
    return any(inner.name in _SMEM_OPS for inner in _inner_ops(op))


def _uses_scratch(op: Operation) -> bool:
    """Whether a lowering inside `op` exchanges data through its own shared scratch (a reduce or
    scan across warps, a gather, a tensor map, an atomic's result): only then may a back edge
    carry a scratch use that a shared-memory write must wait for (Lowering.barrier_after_scratch)."""
    return any("scratch_offset" in inner.attrs or inner.name in _ATOMIC_OPS for inner in _inner_ops(op))


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


def _uniform(v: Value) -> bool:
    """Whether every element of `v` is one value (a scalar, a splat, a scalar constant, or their
    broadcasts)."""
    if not isinstance(v.type, TensorType):
        return True
    op = v.owner_op
    if op is None:
        return False
    if op.name == "tt.splat" or op.name == "arith.constant":
        return True
    return op.name in ("tt.broadcast", "tt.expand_dims") and _uniform(op.operand(0))


def _advanced_uniformly(arg: Value, yielded: Value) -> bool:
    """Whether the loop yields `arg` advanced by the same amount in every element."""
    t, op = arg.type, yielded.owner_op
    if not isinstance(t, TensorType) or op is None or op.name not in ("tt.addptr", "arith.add"):
        return False
    el = t.element
    if not (isinstance(el, PointerType) or (isinstance(el, DType) and el.is_integer and el.bits >= 32)):
        return False
    x, y = (_before_hints(v) for v in op.operands)
    return (x is arg and _uniform(y)) or (op.name == "arith.add" and y is arg and _uniform(x))


def _before_hints(v: Value) -> Value:
    """The value under a chain of tt.hint ops (`tl.multiple_of(ptrs, 16)` on a carried pointer)."""
    while v.owner_op is not None and v.owner_op.name == "tt.hint":
        v = v.owner_op.operand(0)
    return v


@dataclass
class _Carry:
    """How one loop-carried gpu value travels in simt: `groups` of its registers as base +
    constant (one carried base per group), or every register (groups None)."""

    regs: int
    groups: Optional[list[tuple[list[int], list[int]]]] = None   # (registers, their constants)

    def carried(self, ctx: Lowering, regs: Sequence[Value]) -> list[Value]:
        """The values the loop carries for registers `regs` (bases taken out of their constants)."""
        if self.groups is None:
            return list(regs)
        out = []
        for members, consts in self.groups:
            base, off = ctx.split(regs[members[0]])
            if any(ctx.split(regs[r]) != (base, off - consts[0] + c) for r, c in zip(members, consts)):
                raise LoweringError(ctx.func, "a uniformly advanced loop-carried tensor lost its base + constant form")
            out.append(ctx.offset(base, off - consts[0]))
        return out

    def registers(self, ctx: Lowering, carried: Sequence[Value]) -> list[Value]:
        if self.groups is None:
            return list(carried)
        out: list[Optional[Value]] = [None] * self.regs
        for (members, consts), base in zip(self.groups, carried):
            for r, c in zip(members, consts):
                out[r] = ctx.offset(base, c)
        return out


def _plan_carry(ctx: Lowering, arg: Value, init: Value, yielded: Value) -> _Carry:
    regs = ctx.get(init)
    if len(regs) < 2 or not _advanced_uniformly(arg, yielded):
        return _Carry(len(regs))
    by_base: dict[Optional[Value], tuple[list[int], list[int]]] = {}
    for r, v in enumerate(regs):
        base, off = ctx.split(v)
        members, consts = by_base.setdefault(base, ([], []))
        members.append(r)
        consts.append(off)
    if None in by_base or len(by_base) == len(regs):
        return _Carry(len(regs))
    return _Carry(len(regs), list(by_base.values()))


_MEMORY_READS = ("tt.load", "tt.atomic_rmw", "tt.atomic_cas")


def _read_from_memory(v: Value, seen: set[Value]) -> bool:
    """Whether scalar `v` is computed (through pure ops of its block nest) from a load or an atomic."""
    if v in seen or isinstance(v.type, TensorType):
        return False
    seen.add(v)
    op = v.owner_op
    if op is None or op.regions:
        return False
    return op.name in _MEMORY_READS or any(_read_from_memory(x, seen) for x in op.operands)


def loaded_loop_bounds(func: Operation) -> set[Value]:
    """The i32 bounds and steps of func's scf.for loops that are computed from memory.

    tile's scalars are the same in every thread, but ptxas cannot know it of a loaded one: a loop
    whose trip count comes from memory then keeps its counter, ring-buffer stage and wgmma
    descriptors in ordinary registers, moved to uniform ones (R2UR) before each TMA copy and
    wgmma. Such a bound is replaced, where it is computed, by lane 0's copy (shfl.sync.idx), which
    ptxas knows is warp-uniform (the grouped GEMM's K loop, whose bound is cdiv of a loaded K:
    75 R2UR in its SASS -> 17).
    """
    out: set[Value] = set()
    for op in func.walk():
        if op.name == "scf.for":
            out.update(v for v in op.operands[:3] if v.type == i32 and _read_from_memory(v, set()))
    return out


@lowers("scf.for")
def _lower_for(ctx: Lowering, op: Operation) -> None:
    lb, ub, step = (ctx.get(v)[0] for v in op.operands[:3])
    src = op.regions[0].block
    term = src.ops[-1]
    plans = [_plan_carry(ctx, a, i, y) for a, i, y in zip(src.args[1:], op.operands[3:], term.operands)]
    inits = [x for p, v in zip(plans, op.operands[3:]) for x in p.carried(ctx, ctx.get(v))]
    types = [v.type for v in inits]
    body = Block([lb.type] + types)
    smem, scratch = _touches_smem(op), _uses_scratch(op)
    new = _structured(ctx, "scf.for", [lb, ub, step] + inits, types, [body])
    ctx.smem_pending |= smem
    ctx.scratch_pending |= scratch
    with ctx.at_block(body):
        ctx.set(src.args[0], [body.args[0]])
        i = 1
        for a, p in zip(src.args[1:], plans):
            n = len(p.groups) if p.groups is not None else p.regs
            ctx.set(a, p.registers(ctx, body.args[i:i + n]))
            i += n
        ctx.lower_ops(src.ops[:-1])
        ctx.loc = term.loc or ctx.loc
        ctx.effect("scf.yield", [x for p, v in zip(plans, term.operands) for x in p.carried(ctx, ctx.get(v))])
    i = 0
    for r, p in zip(op.results, plans):
        n = len(p.groups) if p.groups is not None else p.regs
        ctx.set(r, p.registers(ctx, new.results[i:i + n]))
        i += n
    ctx.smem_pending |= smem
    ctx.scratch_pending |= scratch


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
    smem, scratch = _touches_smem(op), _uses_scratch(op)
    new = _structured(ctx, "scf.while", inits, after_types, [before, after])
    ctx.smem_pending |= smem
    ctx.scratch_pending |= scratch
    _lower_region(ctx, before_src, before, before.args, "scf.condition")
    _lower_region(ctx, after_src, after, after.args, "scf.yield")
    _distribute(ctx, op.results, new.results)
    ctx.smem_pending |= smem
    ctx.scratch_pending |= scratch


@lowers("tt.return")
def _lower_return(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.return")
