"""Lowering of tt.reduce: in each thread, across a warp with butterfly shuffles, across warps
through scratch shared memory. The combine region is inlined at every combine step.

    %m = tt.reduce %x {axis = 0} ({ ^bb(%a: f32, %b: f32): %c = arith.max %a, %b : f32; tt.reduce.return %c })
          : tensor<1024xf32, #blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>> -> f32
  becomes
    %a0 = arith.max %x0, %x1 ...                          registers of the thread (8 -> 1)
    %s = simt.shfl %a0, %c16 {mode = "bfly"} ...           lanes 16, 8, 4, 2, 1 (5 steps)
    simt.barrier (if shared memory is in use) ; st.shared [warp]  ; simt.barrier
    ld.shared [w] for each of the 4 warps, combined in warp order    every thread gets the result

Shuffle and combine steps only involve %tid bits whose layout basis points along the axis;
lanes and warps whose basis is zero (replicas) are left out, so nothing is counted twice.
The scratch buffer (attr scratch_offset, set by the allocator) is laid out as
[operand][warp][result element, row-major], each slot max(4, bytes) wide. Barriers: one
before the writes when shared memory was touched since the last barrier, one between the
writes and the reads; later shared-memory users put one before theirs (Lowering tracks it).
"""
from __future__ import annotations

from math import prod
from typing import Callable, Sequence

from ..ir.core import Operation, Value
from ..ir.types import DType, PointerType, TensorType, element_type, f32, i1, i32, i64, u32
from .lower_cast import bitcast, convert
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_elementwise import select

Coord = tuple[int, ...]
Combine = Callable[[list[Value], list[Value]], list[Value]]


def combine_fn(ctx: Lowering, op: Operation) -> Combine:
    """Inline `op`'s combine region on scalar simt values: (a..., b...) -> results."""
    block = op.regions[0].block
    term = block.ops[-1]

    def combine(a: list[Value], b: list[Value]) -> list[Value]:
        for arg, v in zip(block.args, list(a) + list(b)):
            ctx.set(arg, [v])
        ctx.lower_ops(block.ops[:-1])
        return [ctx.get(v)[0] for v in term.operands]

    return combine


def shuffle(ctx: Lowering, v: Value, mode: str, lane: Value) -> Value:
    """shfl.sync of a value of any scalar type (split or widened to 32-bit words)."""
    t = v.type

    def shfl32(x: Value) -> Value:
        return ctx.effect("simt.shfl", [x, lane], [x.type], mode=mode).result

    if t in (i32, f32):
        return shfl32(v)
    if t == i1:
        word = shfl32(select(ctx, v, ctx.const(1, i32), ctx.const(0, i32)))
        return ctx.op("arith.cmp", [word, ctx.const(0, i32)], i1, predicate="ne")
    bits = 64 if isinstance(t, PointerType) else t.bits
    if bits == 64:
        lo, hi = ctx.ops("simt.unpack", [bitcast(ctx, v, i64)], [i32, i32])
        return bitcast(ctx, ctx.op("simt.pack", [shfl32(lo), shfl32(hi)], i64), t)
    int_t = t if t.is_integer else DType(f"u{bits}", "uint", bits)
    as_int = bitcast(ctx, v, int_t) if t.is_floating else v
    word = shfl32(convert(ctx, bitcast(ctx, as_int, u32) if bits == 32 else as_int, i32))
    back = convert(ctx, word, int_t) if bits < 32 else bitcast(ctx, word, t)
    return bitcast(ctx, back, t) if bits < 32 and t.is_floating else back


def axis_bits(bases: Sequence[Coord], axis: int, op: Operation, what: str) -> list[int]:
    """Indices of the `bases` (of `what`: "thread" or "register" bits) that move along `axis`; each
    must move along `axis` only."""
    bits = []
    for b, basis in enumerate(bases):
        if basis[axis]:
            if any(c for d, c in enumerate(basis) if d != axis):
                raise LoweringError(op, f"{what} bit {b} mixes the axis with other dimensions")
            bits.append(b)
    return bits


def drop(c: Sequence[int], axis: int) -> Coord:
    return tuple(c[:axis]) + tuple(c[axis + 1:])


def row_major(coord: Sequence[int], shape: Sequence[int]) -> int:
    index = 0
    for c, n in zip(coord, shape):
        index = index * n + c
    return index


def slot_bytes(t) -> int:
    return 8 if isinstance(t, PointerType) or t.bits == 64 else 4


class Scratch:
    """The [operand][warp][element] scratch buffer of one reduce or scan."""

    def __init__(self, ctx: Lowering, op: Operation, elems: list, numel: int):
        offset = op.attrs.get("scratch_offset")
        if not isinstance(offset, int) or offset < 0:
            raise LoweringError(op, "needs scratch_offset (run the shared-memory allocator first)")
        self.ctx, self.elems, self.numel = ctx, elems, numel
        self.slots = [slot_bytes(el) for el in elems]
        self.bases, at = [], offset
        for s in self.slots:
            self.bases.append(at)
            at += ctx.num_warps * numel * s

    def address(self, operand: int, warp: Value, element: Value) -> Value:
        ctx, slot = self.ctx, self.slots[operand]
        index = ctx.add(ctx.mul(warp, ctx.const(self.numel, i32)), element)
        return ctx.add(ctx.op("simt.smem_addr", [], i32, offset=self.bases[operand]),
                       ctx.mul(index, ctx.const(slot, i32)))

    def store(self, operand: int, warp: Value, element: Value, value: Value, pred: Value) -> None:
        ctx = self.ctx
        if value.type == i1:
            value = select(ctx, value, ctx.const(1, u32), ctx.const(0, u32))
        base, off = ctx.split(self.address(operand, warp, element))
        ctx.effect("simt.st_shared", [base, pred, value], vector=1, offset=off)

    def load(self, operand: int, warp: Value, element: Value) -> Value:
        ctx = self.ctx
        el = self.elems[operand]
        base, off = ctx.split(self.address(operand, warp, element))
        v = ctx.effect("simt.ld_shared", [base, ctx.const(True, i1)], [u32 if el == i1 else el],
                       vector=1, offset=off).result
        return ctx.op("arith.cmp", [v, ctx.const(0, u32)], i1, predicate="ne") if el == i1 else v


def warp_index(warp_bits: list[int], combo: int) -> int:
    """The warp index whose axis bits spell `combo` (bit i of combo -> warp bit warp_bits[i])."""
    return sum(1 << w for i, w in enumerate(warp_bits) if combo >> i & 1)


def _across_warps(ctx: Lowering, op: Operation, info: LayoutInfo, partial: dict[Coord, list[Value]], axis: int,
                  lane_bits: list[int], warp_bits: list[int], combine: Combine) -> dict[Coord, list[Value]]:
    res_shape = drop(info.shape, axis)
    numel = prod(res_shape)
    elems = [element_type(v.type) for v in op.operands]
    scratch = Scratch(ctx, op, elems, numel)
    images = [row_major(drop(b, axis), res_shape) for b in info.tid_bases]
    flat_thread = ctx.from_tid(images)
    span = 0
    for x in images:
        span |= x
    warp = ctx.warp()
    axis_mask = sum(1 << w for w in warp_bits)
    warp_base = ctx.op("arith.and", [warp, ctx.const(~axis_mask, i32)], i32)
    lane_mask = sum(1 << b for b in lane_bits) | (info.replicated_tid_mask & (ctx.warp_size - 1))
    writer = ctx.tid_bits_zero(lane_mask)
    if ctx.smem_pending:
        ctx.barrier()
    flats = {key: ctx.coord_plus(flat_thread, span, row_major(key, res_shape)) for key in partial}
    for key, vals in partial.items():
        for i, v in enumerate(vals):
            scratch.store(i, warp, flats[key], v, writer)
    ctx.barrier()
    out = {}
    for key in partial:
        acc = None
        for combo in range(1 << len(warp_bits)):
            w = ctx.add(warp_base, ctx.const(warp_index(warp_bits, combo), i32))
            vals = [scratch.load(i, w, flats[key]) for i in range(len(elems))]
            acc = vals if acc is None else combine(acc, vals)
        out[key] = acc
    ctx.smem_pending = ctx.scratch_pending = True
    return out


@lowers("tt.reduce")
def _lower_reduce(ctx: Lowering, op: Operation) -> None:
    axis = op.attrs["axis"]
    k = op.num_operands
    info = ctx.info(op.operand(0).type)
    regs = [ctx.get(v) for v in op.operands]
    combine = combine_fn(ctx, op)
    canon = info.canonical_regs()
    groups: dict[Coord, list[int]] = {}
    for r, c in enumerate(info.reg_coords):
        if canon[r] == r:
            groups.setdefault(drop(c, axis), []).append(r)
    partial: dict[Coord, list[Value]] = {}
    for key, rs in groups.items():
        rs.sort(key=lambda r: info.reg_coords[r][axis])
        acc = [regs[i][rs[0]] for i in range(k)]
        for r in rs[1:]:
            acc = combine(acc, [regs[i][r] for i in range(k)])
        partial[key] = acc
    bits = axis_bits(info.tid_bases, axis, op, "thread")
    lanes = ctx.lane_bits   # thread bits below it pick the lane, the rest the warp
    lane_bits, warp_bits = [b for b in bits if b < lanes], [b - lanes for b in bits if b >= lanes]
    for b in lane_bits:
        for key, vals in partial.items():
            other = [shuffle(ctx, v, "bfly", ctx.const(1 << b, i32)) for v in vals]
            partial[key] = combine(vals, other)
    if warp_bits:
        partial = _across_warps(ctx, op, info, partial, axis, lane_bits, warp_bits, combine)
    if not isinstance(op.results[0].type, TensorType):
        for i, r in enumerate(op.results):
            ctx.set(r, [partial[()][i]])
        return
    res = ctx.info(op.results[0].type)
    for b, (bs, br) in enumerate(zip(info.tid_bases, res.tid_bases)):
        if drop(bs, axis) != tuple(br):
            raise LoweringError(op, f"thread bit {b} of the result layout is not the operand's minus the axis")
    for i, r in enumerate(op.results):
        try:
            ctx.set(r, [partial[tuple(c)][i] for c in res.reg_coords])
        except KeyError:
            raise LoweringError(op, "the result layout holds elements the thread did not reduce") from None
