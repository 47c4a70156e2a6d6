"""Lowering of tt.load and tt.store: predicated, vectorized global memory accesses.

With `vector = V` the registers of a thread form groups of V consecutive elements (register
bases 0..log2(V)-1 step 1, 2, 4 along the fastest dimension); each group is one access of
V * bytes(T) <= 16 bytes at the group's first address, guarded by the first element's mask
(the vectorize pass only picks V where the mask is constant over each group, as Triton does):

    %v = tt.load %p, %m, %o {vector = 4} : tensor<512xf32, #blocked<spt = [4], ...>>
  becomes, per group,
    %v0, %v1, %v2, %v3 = simt.ld_global %base, %m0, %o0, %o1, %o2, %o3 {offset = 2048, vector = 4} : f32 x4
  and prints as
    mov.f32 %f1, %f9; ... @%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd5+2048];

Elements of 8 or 16 bits go four or two to a 32-bit word when a group is wider than four
elements (ld.global.v4.b32, then simt.unpack). i1 is stored as one byte (0 or 1). Stores are
predicated so that each element is written once: threads whose replicated %tid bits are set
and registers that repeat an earlier register do not store. Scalar loads run in every
thread; scalar stores in thread 0.
"""
from __future__ import annotations

from typing import Optional

from ..ir.core import Operation, Value
from ..ir.types import PointerType, TensorType, element_type, i1, i32, u8
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_elementwise import select


def vector_groups(info: LayoutInfo, vector: int) -> tuple[int, list[list[int]]]:
    """(V, groups): the registers in groups of V consecutive elements along the fastest dim.

    V is `vector`, lowered to what the layout's register order allows (still a valid access:
    a smaller group of a contiguous, aligned group is contiguous and aligned).
    """
    ll = info.ll
    if vector > 1 and ll.register_bases:
        first = ll.register_bases[0]
        dims = [d for d, c in enumerate(first) if c]
        if len(dims) == 1 and first[dims[0]] == 1:
            vector = min(vector, ll.contiguous_registers(dims[0]))
        else:
            vector = 1
    else:
        vector = 1
    n = info.num_regs
    return vector, [list(range(r, r + vector)) for r in range(0, n, vector)]


def split_access(el, vector: int) -> tuple[object, int, int]:
    """(type moved, count moved, elements per moved value) for a group of `vector` elements: more
    than four go as 32-bit words (PTX vectors have at most four values)."""
    bits = 64 if isinstance(el, PointerType) else el.bits
    if vector <= 4:
        return el, vector, 1
    per_word = 32 // bits
    return i32, vector // per_word, per_word


def pack_words(ctx: Lowering, vals: list[Value], word_t, per: int) -> list[Value]:
    """`vals` in words of `per` elements (Lowering.pack: a word that simt.unpack split is taken
    back whole, so a global load's words stored to shared memory are not repacked)."""
    return [ctx.pack(vals[i:i + per], word_t) for i in range(0, len(vals), per)]


def unpack_words(ctx: Lowering, words: list[Value], el, per: int) -> list[Value]:
    """The elements of `words`, `per` of type `el` in each, lowest first."""
    return [x for w in words for x in ctx.ops("simt.unpack", [w], [el] * per)]


def emit_load(ctx: Lowering, addr: Value, pred: Value, others: Optional[list[Value]], el, vector: int,
              attrs: dict) -> list[Value]:
    """One global load of `vector` consecutive elements of type `el` at `addr` (+ its constant part)."""
    mem_el = u8 if el == i1 else el
    if others is not None and el == i1:
        others = [select(ctx, o, ctx.const(1, u8), ctx.const(0, u8)) for o in others]
    moved_t, count, per = split_access(mem_el, vector)
    if others is not None and per > 1:
        others = pack_words(ctx, others, moved_t, per)
    base, off = ctx.split(addr)
    operands = [base, pred] + (others or [])
    op = ctx.effect("simt.ld_global", operands, [moved_t] * count, vector=count, offset=off, **attrs)
    vals = list(op.results)
    if per > 1:
        vals = unpack_words(ctx, vals, mem_el, per)
    if el == i1:
        vals = [ctx.op("arith.cmp", [v, ctx.const(0, u8)], i1, predicate="ne") for v in vals]
    return vals


def emit_store(ctx: Lowering, addr: Value, pred: Value, vals: list[Value], el, attrs: dict) -> None:
    mem_el = u8 if el == i1 else el
    if el == i1:
        vals = [select(ctx, v, ctx.const(1, u8), ctx.const(0, u8)) for v in vals]
    moved_t, count, per = split_access(mem_el, len(vals))
    if per > 1:
        vals = pack_words(ctx, vals, moved_t, per)
    base, off = ctx.split(addr)
    ctx.effect("simt.st_global", [base, pred] + vals, vector=count, offset=off, **attrs)


def _mem_attrs(op: Operation, keys: tuple[str, ...]) -> dict:
    return {k: op.attrs[k] for k in keys if op.attrs.get(k) not in (None, "", False)}


@lowers("tt.load")
def _lower_load(ctx: Lowering, op: Operation) -> None:
    t = op.result.type
    el = element_type(t)
    info = ctx.info(t)
    ptrs = ctx.get(op.operand(0))
    masks = ctx.get(op.operand(1)) if op.num_operands > 1 else None
    others = ctx.get(op.operand(2)) if op.num_operands > 2 else None
    attrs = _mem_attrs(op, ("cache", "eviction", "volatile"))
    vector, groups = vector_groups(info, op.attrs.get("vector", 1) if isinstance(t, TensorType) else 1)
    bits = 64 if isinstance(el, PointerType) else el.bits
    if vector * max(bits, 8) > 128:
        raise LoweringError(op, f"vector = {vector} of {el} is wider than 16 bytes")
    canon = info.canonical_regs()
    out: list[Optional[Value]] = [None] * info.num_regs
    for g in groups:
        if canon[g[0]] != g[0]:
            for r in g:
                out[r] = out[canon[r]]
            continue
        pred = masks[g[0]] if masks is not None else ctx.const(True, i1)
        group_others = [others[r] for r in g] if others is not None else None
        try:
            vals = emit_load(ctx, ptrs[g[0]], pred, group_others, el, vector, attrs)
        except LoweringError as e:
            raise LoweringError(op, str(e).split(": ", 1)[-1]) from None
        for r, v in zip(g, vals):
            out[r] = v
    ctx.set(op.result, out)


@lowers("tt.store")
def _lower_store(ctx: Lowering, op: Operation) -> None:
    t = op.operand(1).type
    el = element_type(t)
    info = ctx.info(op.operand(0).type)
    ptrs, vals = ctx.get(op.operand(0)), ctx.get(op.operand(1))
    masks = ctx.get(op.operand(2)) if op.num_operands > 2 else None
    attrs = _mem_attrs(op, ("cache", "eviction"))
    vector, groups = vector_groups(info, op.attrs.get("vector", 1) if isinstance(t, TensorType) else 1)
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    for g in groups:
        if canon[g[0]] != g[0]:
            continue
        pred = owner if masks is None else ctx.and_pred(masks[g[0]], owner)
        emit_store(ctx, ptrs[g[0]], pred, [vals[r] for r in g], el, attrs)
