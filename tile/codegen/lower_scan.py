"""Lowering of tt.scan (inclusive, optionally reverse): in each thread, across lanes with
shfl.up (Hillis-Steele), across warps through scratch shared memory, then across the
register chunks that repeat the CTA tile along the axis.

The axis coordinate of an element is a mixed-radix number whose digits come, from least to
most significant, from register bits (a thread's own chunk), lane bits, warp bits and
register bits again (repeats of the CTA tile); blocked layouts always look like that.

    %c = tt.scan %x {axis = 0, reverse = false} (add) : tensor<1024xf32, #blocked<spt = [4], tpw = [32], wpc = [4]>>
  becomes
    x1 += x0; x2 += x1; x3 += x2                       per thread, in coordinate order
    t = x3; t = (pos >= d) ? shfl.up(t, d) + t : t     d = 1, 2, 4, 8, 16 (lane totals, inclusive)
    e = shfl.up(t, 1); x_i = (pos > 0) ? e + x_i : x_i
    warp totals -> scratch; barrier; every thread combines the totals of the warps before it
    chunk k (registers 4..7 here) adds the total of chunks 0..k-1

Every combine keeps the scan's order (earlier elements on the left), so any associative
combine region works. A reverse scan runs the same steps with positions counted from the end
(shfl.down). Scratch: [operand][warp][element of the shape without the axis], with barriers
around each use as in tt.reduce.
"""
from __future__ import annotations

from math import prod

from ..ir.core import Operation, Value
from ..ir.types import element_type, i1, i32
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_elementwise import select
from .lower_reduce import Scratch, axis_bits, combine_fn, drop, row_major, shuffle, warp_index


def _combine_if(ctx: Lowering, cond: Value, combine, prefix: list[Value], vals: list[Value]) -> list[Value]:
    """cond ? combine(prefix, vals) : vals."""
    merged = combine(prefix, vals)
    return [select(ctx, cond, m, v) for m, v in zip(merged, vals)]


class _Plan:
    """Where the digits of the axis coordinate live in one layout."""

    def __init__(self, info: LayoutInfo, axis: int, op: Operation, lane_bits: int):
        ll = info.ll
        reg_axis = axis_bits(ll.register_bases, axis, op, "register")
        tid_axis = axis_bits(info.tid_bases, axis, op, "thread")
        digits = sorted([(ll.register_bases[i][axis], "reg", i) for i in reg_axis] +
                        [(info.tid_bases[b][axis], "lane" if b < lane_bits else "warp", b) for b in tid_axis])
        if [v for v, _, _ in digits] != [1 << j for j in range(len(digits))]:
            raise LoweringError(op, "the scan axis is not spread over distinct power-of-two steps")
        kinds = "".join({"reg": "r", "lane": "l", "warp": "w"}[k] for _, k, _ in digits)
        stripped = kinds.lstrip("r").lstrip("l").lstrip("w").lstrip("r")
        if stripped:
            raise LoweringError(op, f"unsupported scan layout (axis digits {kinds}: registers, lanes, warps, "
                                    "registers expected)")
        n_lo = len(kinds) - len(kinds.lstrip("r"))
        self.lo = [i for _, k, i in digits[:n_lo]]
        self.lanes = [b for _, k, b in digits if k == "lane"]
        self.warps = [b - lane_bits for _, k, b in digits if k == "warp"]
        self.hi = [i for _, k, i in digits[n_lo:] if k == "reg"]
        if self.lanes and self.lanes != list(range(self.lanes[0], self.lanes[0] + len(self.lanes))):
            raise LoweringError(op, "the scan axis must use consecutive lane bits")
        self.lo_mask = sum(1 << i for i in self.lo)
        self.hi_mask = sum(1 << i for i in self.hi)


@lowers("tt.scan")
def _lower_scan(ctx: Lowering, op: Operation) -> None:
    axis, reverse = op.attrs["axis"], bool(op.attrs.get("reverse", False))
    k = op.num_operands
    info = ctx.info(op.operand(0).type)
    plan = _Plan(info, axis, op, ctx.lane_bits)
    combine = combine_fn(ctx, op)
    vals = [list(ctx.get(v)) for v in op.operands]
    coord = [c[axis] for c in info.reg_coords]

    def get(r: int) -> list[Value]:
        return [vals[i][r] for i in range(k)]

    def put(r: int, new: list[Value]) -> None:
        for i in range(k):
            vals[i][r] = new[i]

    # groups: registers that differ only in the thread's own (lo) axis digits, in scan order
    groups: dict[int, list[int]] = {}
    for r in range(info.num_regs):
        groups.setdefault(r & ~plan.lo_mask, []).append(r)
    for g in groups.values():
        g.sort(key=lambda r: coord[r], reverse=reverse)
        for a, b in zip(g, g[1:]):
            put(b, combine(get(a), get(b)))
    totals = {key: get(g[-1]) for key, g in groups.items()}

    if plan.lanes:
        b0, nl = plan.lanes[0], len(plan.lanes)
        pos = ctx.from_tid([1 << (b - b0) if b0 <= b < b0 + nl else 0 for b in range(ctx.lane_bits)])
        if reverse:
            pos = ctx.op("arith.sub", [ctx.const((1 << nl) - 1, i32), pos], i32)
        mode = "down" if reverse else "up"
        lane_mask = ((1 << nl) - 1) << b0
        group_base = ctx.op("arith.and", [ctx.lane(), ctx.const(~lane_mask & (ctx.warp_size - 1), i32)], i32)
        last = ctx.op("arith.or", [group_base, ctx.const(0 if reverse else lane_mask, i32)], i32)
        first = ctx.op("arith.cmp", [pos, ctx.const(0, i32)], i1, predicate="gt")
        for key, g in groups.items():
            t = totals[key]
            for j in range(nl):
                d = 1 << j
                y = [shuffle(ctx, v, mode, ctx.const(d << b0, i32)) for v in t]
                t = _combine_if(ctx, ctx.op("arith.cmp", [pos, ctx.const(d, i32)], i1, predicate="ge"), combine, y, t)
            excl = [shuffle(ctx, v, mode, ctx.const(1 << b0, i32)) for v in t]
            for r in g:
                put(r, _combine_if(ctx, first, combine, excl, get(r)))
            if plan.warps or plan.hi:  # the lane group's total, from its last lane, for the next levels
                totals[key] = [shuffle(ctx, v, "idx", last) for v in t]

    if plan.warps:
        _scan_warps(ctx, op, info, plan, groups, totals, get, put, combine, reverse)

    if plan.hi:  # chunks of the CTA tile repeated in registers: carry the totals of earlier chunks
        chunks: dict[int, list[int]] = {}
        for key in groups:
            chunks.setdefault(key & plan.hi_mask, []).append(key)
        order = sorted(chunks, key=lambda h: coord[h], reverse=reverse)
        carry: dict[int, list[Value]] = {}
        for h in order:
            for key in chunks[h]:
                row = key & ~plan.hi_mask
                if row in carry:
                    for r in groups[key]:
                        put(r, combine(carry[row], get(r)))
                    carry[row] = combine(carry[row], totals[key])
                else:
                    carry[row] = totals[key]
    for i, res in enumerate(op.results):
        ctx.set(res, vals[i])


def _scan_warps(ctx: Lowering, op: Operation, info: LayoutInfo, plan: _Plan, groups: dict[int, list[int]],
                totals: dict[int, list[Value]], get, put, combine, reverse: bool) -> None:
    axis = op.attrs["axis"]
    res_shape = drop(info.shape, axis)
    scratch = Scratch(ctx, op, [element_type(v.type) for v in op.operands], prod(res_shape))
    images = [row_major(drop(b, axis), res_shape) for b in info.tid_bases]
    flat_thread = ctx.from_tid(images)
    span = 0
    for x in images:
        span |= x
    warps = sorted(plan.warps, key=lambda w: info.tid_bases[ctx.lane_bits + w][axis])
    nw = len(warps)
    warp = ctx.warp()
    warp_base = ctx.op("arith.and", [warp, ctx.const(~sum(1 << w for w in warps), i32)], i32)
    pos = ctx.from_tid([0] * ctx.lane_bits + [1 << warps.index(w) if w in warps else 0 for w in range(ctx.warp_bits)])
    if reverse:
        pos = ctx.op("arith.sub", [ctx.const((1 << nw) - 1, i32), pos], i32)
    writer = ctx.tid_bits_zero(sum(1 << b for b in plan.lanes) | (info.replicated_tid_mask & (ctx.warp_size - 1)))
    first = ctx.op("arith.cmp", [pos, ctx.const(0, i32)], i1, predicate="gt")
    chunk_keys: dict[int, list[int]] = {}
    for key in groups:
        chunk_keys.setdefault(key & plan.hi_mask, []).append(key)
    for keys in chunk_keys.values():  # one chunk at a time: the scratch holds one total per warp and row
        flats = {key: ctx.coord_plus(flat_thread, span, row_major(drop(info.reg_coords[key], axis), res_shape))
                 for key in keys}
        if ctx.smem_pending:
            ctx.barrier()
        for key in keys:
            for i, v in enumerate(totals[key]):
                scratch.store(i, warp, flats[key], v, writer)
        ctx.barrier()
        for key in keys:
            running: list[Value] = []
            for q in range(1 << nw):
                combo = (1 << nw) - 1 - q if reverse else q
                w = ctx.add(warp_base, ctx.const(warp_index(warps, combo), i32))
                loaded = [scratch.load(i, w, flats[key]) for i in range(len(scratch.elems))]
                running.append(loaded if not running else combine(running[-1], loaded))
            prefix = running[0]
            for q in range(1, (1 << nw) - 1):
                gt = ctx.op("arith.cmp", [pos, ctx.const(q, i32)], i1, predicate="gt")
                prefix = [select(ctx, gt, s, p) for s, p in zip(running[q], prefix)]
            for r in groups[key]:
                put(r, _combine_if(ctx, first, combine, prefix, get(r)))
            totals[key] = running[-1]
        ctx.smem_pending = ctx.scratch_pending = True
