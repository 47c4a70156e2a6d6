"""Lowering of tt.atomic_rmw and tt.atomic_cas: one predicated atomic per element.

    %old = tt.atomic_rmw %p, %v, %m {kind = "add", sem = "acq_rel", scope = "gpu"} : tensor<128xf32, #L>
  becomes, per register,
    %o0 = simt.atom %p0, %m0, %v0 {kind = "add", sem = "acq_rel", scope = "gpu"} : f32
          ->  @%p3 atom.global.acq_rel.gpu.add.f32 %f5, [%rd4], %f2;

A masked-off element does not execute, and each element executes once: threads whose
replicated %tid bits are set and registers that repeat an earlier one are predicated off.
When the old values are used and other threads hold replicas of the element, the executing
thread passes the old value on through shared memory the lowering reserves after the
allocator's (the simt.func's `shared_bytes` grows). Scalar atomics run in thread 0.

Without a hardware instruction for a (kind, type) pair:
  * f32/f64 max/min: the sign trick on the bits: for a value with the sign bit clear,
    atom.max.s32 (signed order = float order for non-negative floats, and any negative float
    loses); with the sign bit set, atom.min.u32 (unsigned order = reversed float order for
    negative floats, and any non-negative float wins). min is the mirror image.
  * f16/bf16 max/min, bf16 add before sm_90, 16-bit integers: a compare-and-swap loop on the
    16-bit word (atom.cas.b16).
  * an unused result with sem relaxed/release becomes red (no return value).
"""
from __future__ import annotations

from typing import Optional

from ..ir.core import Block, Operation, Region, Value
from ..ir.types import DType, PointerType, element_type, f32, f64, i1, i32, i64, u32, u64
from .lower_cast import bitcast
from .lower_core import Lowering, LoweringError, lowers
from .lower_elementwise import scalar_op, select
from .lower_reduce import row_major, slot_bytes

_KIND = {"add": "add", "max": "max", "min": "min", "and": "and", "or": "or", "xor": "xor", "xchg": "exch"}
_TILE_OP = {"add": "arith.add", "max": "arith.max", "min": "arith.min", "and": "arith.and", "or": "arith.or",
            "xor": "arith.xor"}


def _atom(ctx: Lowering, kind: str, addr: Value, pred: Value, v: Value, attrs: dict, used: bool) -> Optional[Value]:
    base, off = ctx.split(addr)
    if used or kind == "exch" or attrs["sem"] in ("acquire", "acq_rel"):
        return ctx.effect("simt.atom", [base, pred, v], [v.type], kind=kind, offset=off, **attrs).result
    ctx.effect("simt.red", [base, pred, v], kind=kind, offset=off, **attrs)
    return None


def _float_minmax(ctx: Lowering, kind: str, addr: Value, pred: Value, v: Value, attrs: dict, used: bool) -> Value:
    signed, unsigned = (i32, u32) if v.type == f32 else (i64, u64)
    bits = bitcast(ctx, v, signed)
    neg = ctx.op("arith.cmp", [bits, ctx.const(0, signed)], i1, predicate="lt")
    pos = ctx.op("arith.not", [neg], i1)
    flip = "min" if kind == "max" else "max"
    o_pos = _atom(ctx, kind, addr, ctx.and_pred(pred, pos), bits, attrs, used)
    o_neg = _atom(ctx, flip, addr, ctx.and_pred(pred, neg), bitcast(ctx, bits, unsigned), attrs, used)
    if not used:
        return ctx.const(0.0, v.type)
    return select(ctx, neg, bitcast(ctx, o_neg, v.type), bitcast(ctx, o_pos, v.type))


def _cas_loop(ctx: Lowering, kind: str, addr: Value, pred: Value, v: Value, attrs: dict) -> Value:
    """Old value of a read-modify-write done with compare-and-swap (retried until no other
    thread changed the word in between)."""
    el = v.type
    word = DType(f"u{el.bits}", "uint", el.bits)
    base, off = ctx.split(addr)
    first = ctx.effect("simt.ld_global", [base, pred, ctx.const(0, el)], [el], vector=1, offset=off,
                       volatile=True).result
    before, after = Block([word]), Block([word])
    loop = ctx.effect("scf.while", [bitcast(ctx, first, word)], [word])
    loop.add_region(Region([before]))
    loop.add_region(Region([after]))
    with ctx.at_block(before):
        cur = before.args[0]
        new = v if kind == "xchg" else scalar_op(ctx, _TILE_OP[kind], [bitcast(ctx, cur, el), v], el, {})
        got = ctx.effect("simt.atom_cas", [base, pred, cur, bitcast(ctx, new, word)], [word], offset=off,
                         **attrs).result
        again = ctx.and_pred(pred, ctx.op("arith.cmp", [got, cur], i1, predicate="ne"))
        ctx.effect("scf.condition", [again, got])
    with ctx.at_block(after):
        ctx.effect("scf.yield", [after.args[0]])
    return bitcast(ctx, loop.result, el)


def atomic_rmw(ctx: Lowering, op: Operation, kind: str, addr: Value, v: Value, pred: Value, used: bool) -> Value:
    el = v.type
    attrs = {"sem": op.attrs.get("sem") or "acq_rel", "scope": op.attrs.get("scope") or "gpu"}
    if el == i1 or el.bits == 8 or isinstance(el, PointerType):
        raise LoweringError(op, f"atomic {kind} on {el} is not supported (no 8-bit or pointer atomics)")
    if el.is_floating and kind in ("and", "or", "xor"):
        raise LoweringError(op, f"atomic {kind} is for integers, not {el}")
    native_float = el in (f32, f64) or (el.name == "f16" or (el.name == "bf16" and ctx.sm >= 90))
    if kind == "xchg" and el.bits >= 32:
        return bitcast(ctx, _atom(ctx, "exch", addr, pred, bitcast(ctx, v, DType(f"u{el.bits}", "uint", el.bits)),
                                  attrs, True), el)
    if el.bits >= 32 and (el.is_integer or (kind == "add")):
        old = _atom(ctx, _KIND[kind], addr, pred, v, attrs, used)
        return old if old is not None else ctx.const(0, el)
    if el in (f32, f64):
        return _float_minmax(ctx, kind, addr, pred, v, attrs, used)
    if kind == "add" and native_float:
        old = _atom(ctx, "add", addr, pred, v, attrs, used)
        return old if old is not None else ctx.const(0.0, el)
    return _cas_loop(ctx, kind, addr, pred, v, attrs)


def broadcast_from_owners(ctx: Lowering, t, old: list[Value]) -> list[Value]:
    """Give every replica of an element the value its executing thread got (via shared memory)."""
    info = ctx.info(t)
    el = element_type(t)
    shape = info.shape
    slot = slot_bytes(el)
    base = ctx.op("simt.smem_addr", [], i32, offset=ctx.alloc_shared(max(1, info.ll.numel) * slot))
    images = [row_major(b, shape) for b in info.tid_bases]
    span = 0
    for x in images:
        span |= x
    flat = ctx.from_tid(images)
    canon = info.canonical_regs()
    addrs = [ctx.add(base, ctx.mul(ctx.coord_plus(flat, span, row_major(c, shape)), ctx.const(slot, i32)))
             for c in info.reg_coords]
    if ctx.smem_pending:
        ctx.barrier()
    owner = ctx.owner_pred(info)
    for r, a in enumerate(addrs):
        if canon[r] == r:
            b, off = ctx.split(a)
            ctx.effect("simt.st_shared", [b, owner, old[r]], vector=1, offset=off)
    ctx.barrier()
    out = []
    for a in addrs:
        b, off = ctx.split(a)
        out.append(ctx.effect("simt.ld_shared", [b, ctx.const(True, i1)], [el], vector=1, offset=off).result)
    ctx.smem_pending = ctx.scratch_pending = True
    return out


def _finish(ctx: Lowering, op: Operation, old: list[Value]) -> None:
    t = op.result.type
    info = ctx.info(t)
    if op.result.has_uses and info.replicated_tid_mask:
        old = broadcast_from_owners(ctx, t, old)
    ctx.set(op.result, old)


@lowers("tt.atomic_rmw")
def _lower_atomic_rmw(ctx: Lowering, op: Operation) -> None:
    kind = op.attrs["kind"]
    t = op.result.type
    info = ctx.info(t)
    ptrs, vals = ctx.get(op.operand(0)), ctx.get(op.operand(1))
    masks = ctx.get(op.operand(2)) if op.num_operands > 2 else None
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    used = op.result.has_uses
    old: list[Value] = []
    for r in range(info.num_regs):
        if canon[r] != r:
            old.append(old[canon[r]])
            continue
        pred = owner if masks is None else ctx.and_pred(masks[r], owner)
        old.append(atomic_rmw(ctx, op, kind, ptrs[r], vals[r], pred, used))
    _finish(ctx, op, old)


@lowers("tt.atomic_cas")
def _lower_atomic_cas(ctx: Lowering, op: Operation) -> None:
    t = op.result.type
    el = element_type(t)
    if el == i1 or el.bits == 8:
        raise LoweringError(op, f"atomic_cas on {el} is not supported")
    info = ctx.info(t)
    ptrs, cmps, vals = (ctx.get(v) for v in op.operands)
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    word = DType(f"u{el.bits}", "uint", el.bits)
    attrs = {"sem": op.attrs.get("sem") or "acq_rel", "scope": op.attrs.get("scope") or "gpu"}
    old: list[Value] = []
    for r in range(info.num_regs):
        if canon[r] != r:
            old.append(old[canon[r]])
            continue
        base, off = ctx.split(ptrs[r])
        got = ctx.effect("simt.atom_cas", [base, owner, bitcast(ctx, cmps[r], word), bitcast(ctx, vals[r], word)],
                         [word], offset=off, **attrs).result
        old.append(bitcast(ctx, got, el))
    _finish(ctx, op, old)
