"""Lowering of tt.dot: mma.sync on the tensor cores, or one fma per element and k (a dot with a
#mma version 3 result goes to lower_wgmma: Hopper's wgmma; one with an #mfma result to AMD's
MFMA, `_lower_mfma`; one with a #wmma result to RDNA3's WMMA, `_lower_wmma`).

Tensor cores. Before (a 64x64 f16 tile, 4 warps; #A/#B dot-operand layouts, #C an mma layout):

    %d = tt.dot %a, %b, %acc : tensor<64x64xf32, #C>     (%a: tensor<64x32xf16, #A>, %b: tensor<32x64xf16, #B>)

After (per thread, for each 16x8 tile of the warp and each k-step of 16):

    %a0 = simt.pack %h0, %h1 : i32                        // A's registers, two per 32-bit word
    ...
    %d0, %d1, %d2, %d3 = simt.mma %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3 {atype = "f16"} : f32, f32, f32, f32
  printed as
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f9, ...}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, ...};

The registers of each instruction come from the layouts alone (`mma_plan`): in thread 0 every
register of C, A and B sits at one slot of one fragment (the PTX ISA's tables, written out in
tile/emulator/ptx_isa_tc.py), which gives its tile; the plan is checked against every lane of
every warp (each warp may hold other tiles, but the A, B and C tiles of one instruction must agree in
each warp and cover K once). f16/bf16 -> m16n8k16, f32 -> m16n8k8 .tf32 (operands rounded
with cvt.rna; "tf32x3" splits each operand into a big and a small tf32 part and issues three
mma), i8/u8 -> m16n8k32 .s32. An f16 accumulator goes through f32 around the mma. Operand
registers that came from ldmatrix are its words again (simt.unpack then simt.pack folds), and
operands loaded from shared memory on demand (lower_ldmatrix.SharedOperand) are loaded one
k-step ahead of the mma that use them.

FMA. When the layouts are not mma fragments (f32 with input_precision "ieee", f64, fp8,
shapes below one instruction, blocked layouts), each thread computes its result registers
as acc = fma(a[m, k], b[k, n], acc) for k = 0..K-1, f16/bf16/fp8 widened to f32 (f64 stays
f64), integers as i32 multiply-adds. This needs what Triton's FMA dot layouts give: A's
threads hold the result's rows, B's its columns, and both all of K in registers
(for every thread bit: A basis = (result row basis, 0), B basis = (0, result column basis)).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ..ir.core import Operation, Value
from ..ir.mfma_layouts import MfmaLayout, MfmaOperandLayout, mfma_k_width
from ..ir.simt_ops import MMA_SHAPES, WMMA_WORDS
from ..ir.types import DType, element_type, f16, f32, f64, i32
from ..ir.wmma_layouts import OPERAND_VALUES, RESULT_REGISTERS, WMMA_K, WmmaLayout, WmmaOperandLayout
from .lower_cast import convert
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_fragments import Regs, mma_fragments, operand_source
from .lower_wgmma import is_wgmma_dot, lower_wgmma_dot

@dataclass(frozen=True)
class MmaInstr:
    """One mma.sync: A's 4 and B's 2 words (each the registers packed into it), C's 4 registers."""

    a: tuple[Regs, ...]
    b: tuple[Regs, ...]
    c: Regs
    step: int  # the k-step (thread 0's k origin / instruction K)


def mma_type(el: DType, precision: str) -> Optional[str]:
    """The mma atype of operands of type `el`, or None (FMA only)."""
    if el.name in ("f16", "bf16"):
        return el.name
    if el.name in ("i8", "u8"):
        return "s8" if el.name == "i8" else "u8"
    if el == f32 and precision in ("tf32", "tf32x3"):
        return "tf32"
    return None


def mma_plan(a: LayoutInfo, b: LayoutInfo, c: LayoutInfo, kw: int, threads: int) -> Optional[list[MmaInstr]]:
    """The mma.sync instructions of a dot with these operand and accumulator layouts, or None."""
    fa = mma_fragments(a.coords(threads), "a", kw)
    fb = mma_fragments(b.coords(threads), "b", kw)
    fc = mma_fragments(c.coords(threads), "c", kw)
    if fa is None or fb is None or fc is None:
        return None
    (a_regs, a_org), (b_regs, b_org), (c_regs, c_org) = fa, fb, fc
    k_instr, k_total = 8 * kw, a.shape[1]
    steps = set(range(0, k_total, k_instr))
    out = []
    for ci, c_frag in enumerate(c_regs):
        m0, n0 = c_org[ci, 0]
        rows = [i for i in range(len(a_regs)) if a_org[i, 0, 0] == m0]
        if sorted(int(a_org[i, 0, 1]) for i in rows) != sorted(steps):
            return None
        for ai in rows:
            k0 = a_org[ai, 0, 1]
            match = [i for i in range(len(b_regs)) if tuple(b_org[i, 0]) == (k0, n0)]
            if len(match) != 1:
                return None
            bi = match[0]
            agree = (a_org[ai, :, 0] == c_org[ci, :, 0]) & (b_org[bi, :, 1] == c_org[ci, :, 1]) & \
                (a_org[ai, :, 1] == b_org[bi, :, 0])
            if not agree.all():
                return None
            out.append(MmaInstr(_words(a_regs[ai], kw), _words(b_regs[bi], kw), c_frag, int(k0) // k_instr))
        ks = np.array([a_org[i, :, 1] for i in rows])  # every warp must see each k once
        if (np.sort(ks, axis=0) != np.array(sorted(steps))[:, None]).any():
            return None
    return out


def _words(regs: Regs, kw: int) -> tuple[Regs, ...]:
    return tuple(regs[i:i + kw] for i in range(0, len(regs), kw))


# ------------------------------------------------------------------------------ mma


def _word(ctx: Lowering, vals: list[Value], atype: str) -> Value:
    """The 32-bit operand register of `vals` (the elements of one word, lowest first)."""
    if atype == "tf32":
        return ctx.op("simt.tf32", vals, i32)
    return ctx.pack(vals, i32)


def _tf32_split(ctx: Lowering, x: Value) -> tuple[Value, Value]:
    """x as big + small, both tf32 (3xTF32: the small part keeps 11 more bits of x)."""
    big = ctx.op("simt.tf32", [x], i32)
    rest = ctx.op("arith.sub", [x, ctx.op("arith.bitcast", [big], f32)], f32)
    return big, ctx.op("simt.tf32", [rest], i32)


def _lower_mma(ctx: Lowering, op: Operation, atype: str, plan: list[MmaInstr]) -> None:
    a, b, c = op.operands
    acc_t = element_type(c.type)
    acc = [convert(ctx, x, f32) if acc_t == f16 else x for x in ctx.get(c)]
    get_a, get_b = operand_source(ctx, a), operand_source(ctx, b)
    by_step: dict[int, list[MmaInstr]] = defaultdict(list)
    for ins in plan:
        by_step[ins.step].append(ins)
    steps = sorted(by_step)
    split = op.attrs.get("input_precision") == "tf32x3"

    def words(get, ws: tuple[Regs, ...]) -> list[list[Value]]:
        return [get(w) for w in ws]

    def load(step: int) -> None:
        for ins in by_step[step]:
            words(get_a, ins.a)
            words(get_b, ins.b)

    load(steps[0])
    for i, step in enumerate(steps):
        if i + 1 < len(steps):
            load(steps[i + 1])  # the next step's operands load while this step's mma run
        for ins in by_step[step]:
            xa, xb = words(get_a, ins.a), words(get_b, ins.b)
            cs = [acc[r] for r in ins.c]
            if split:
                pa = [_tf32_split(ctx, w[0]) for w in xa]
                pb = [_tf32_split(ctx, w[0]) for w in xb]
                passes = [([s for _, s in pa], [g for g, _ in pb]), ([g for g, _ in pa], [s for _, s in pb]),
                          ([g for g, _ in pa], [g for g, _ in pb])]
            else:
                passes = [([_word(ctx, w, atype) for w in xa], [_word(ctx, w, atype) for w in xb])]
            for wa, wb in passes:
                cs = ctx.ops("simt.mma", wa + wb + cs, [cs[0].type] * 4, atype=atype)
            for r, v in zip(ins.c, cs):
                acc[r] = v
    ctx.set(op.result, [convert(ctx, x, f16) if acc_t == f16 else x for x in acc])


# ------------------------------------------------------------------------------ mfma


def _check_operand_layouts(op: Operation, dot: str, wanted: Callable[[int], Any]) -> None:
    """A LoweringError unless operand i (0: A, 1: B) of `op` has layout wanted(i)."""
    for i, v in enumerate(op.operands[:2]):
        if v.type.layout != wanted(i):
            raise LoweringError(op, f"operand {'AB'[i]} of {dot} dot must have layout {wanted(i)}, not {v.type.layout}")


def _lower_mfma(ctx: Lowering, op: Operation) -> None:
    """One simt.mfma per instruction tile and k-step, registers found by the #mfma / #mfma_op
    register order (tile.ir.mfma_layouts), k-steps outermost; each lane's k_width values of A
    (and of B) packed into two words, four 8-bit values or two 16-bit ones in each:

        %a0 = simt.pack %x0, %x1 : i32          (A's four f16 values of this tile and k-step, two words)
        %d0, ..., %d15 = simt.mfma %a0, %a1, %b0, %b1, %c0, ..., %c15 {atype = "f16", instr = 32}
        %a0 = simt.pack %x0, %x1, %x2, %x3 : i32   (eight fp8 values; B of bf8: btype = "f8e5b16")
        %d0, ..., %d15 = simt.mfma %a0, %a1, %b0, %b1, %c0, ... {atype = "f8e4b8", btype = "f8e5b16", instr = 32}
    """
    a, b, c = op.operands
    layout = c.type.layout
    width = mfma_k_width(element_type(a.type).bits)
    _check_operand_layouts(op, "an MFMA", lambda i: MfmaOperandLayout(i, layout, width))
    atype, btype = element_type(a.type).name, element_type(b.type).name
    types = {"atype": atype} if btype == atype else {"atype": atype, "btype": btype}
    steps = a.type.shape[1] // MfmaOperandLayout(0, layout, width).instr_k
    reps_m, reps_n = layout.tile_reps(c.type.shape)
    per_tile = layout.instr * layout.instr // 64
    get_a, get_b = operand_source(ctx, a), operand_source(ctx, b)

    def words(get, first: int) -> list[Value]:
        values = get(list(range(first, first + width)))
        return [ctx.pack(values[:width // 2], i32), ctx.pack(values[width // 2:], i32)]

    acc = list(ctx.get(c))
    for step in range(steps):
        a_words = [words(get_a, width * (step + steps * i)) for i in range(reps_m)]
        for j in range(reps_n):
            b_words = words(get_b, width * (step + steps * j))
            for i in range(reps_m):
                regs = range(per_tile * (i + reps_m * j), per_tile * (i + reps_m * j + 1))
                out = ctx.ops("simt.mfma", a_words[i] + b_words + [acc[r] for r in regs], [f32] * per_tile,
                              instr=layout.instr, **types)
                for r, v in zip(regs, out):
                    acc[r] = v
    ctx.set(op.result, acc)


# ------------------------------------------------------------------------------ wmma


def _lower_wmma(ctx: Lowering, op: Operation) -> None:
    """One simt.wmma per 16 x 16 instruction tile and k-step of 16, registers found by the #wmma /
    #wmma_op register order (tile.ir.wmma_layouts), k-steps outermost (each A row and B column
    of a step packed once, every tile's accumulator chained through the steps):

        %a0 = simt.pack %x0, %x1 : i32          (A's 16 values of this tile row and k-step, 8 words)
        ...
        %d0, ..., %d7 = simt.wmma %a0, ..., %a7, %b0, ..., %b7, %c0, ..., %c7 {atype = "f16"}
    """
    a, b, c = op.operands
    layout = c.type.layout
    _check_operand_layouts(op, "a WMMA", lambda i: WmmaOperandLayout(i, layout))
    atype = element_type(a.type).name
    steps = a.type.shape[1] // WMMA_K
    reps_m, reps_n = layout.tile_reps(c.type.shape)
    get_a, get_b = operand_source(ctx, a), operand_source(ctx, b)

    def words(get, tile_index: int, step: int) -> list[Value]:
        first = OPERAND_VALUES * (step + steps * tile_index)
        values = get(list(range(first, first + OPERAND_VALUES)))
        return [ctx.pack(values[w:w + 2], i32) for w in range(0, OPERAND_VALUES, 2)]

    acc = list(ctx.get(c))
    for step in range(steps):
        a_words = [words(get_a, i, step) for i in range(reps_m)]
        for j in range(reps_n):
            b_words = words(get_b, j, step)
            for i in range(reps_m):
                regs = range(RESULT_REGISTERS * (i + reps_m * j), RESULT_REGISTERS * (i + reps_m * j + 1))
                out = ctx.ops("simt.wmma", a_words[i] + b_words + [acc[r] for r in regs], [f32] * WMMA_WORDS,
                              atype=atype)
                for r, v in zip(regs, out):
                    acc[r] = v
    ctx.set(op.result, acc)


# ------------------------------------------------------------------------------ fma


def _lower_fma(ctx: Lowering, op: Operation) -> None:
    a, b, c = op.operands
    ai, bi, ci = (ctx.info(v.type) for v in (a, b, c))
    for bit, (ba, bb, bc) in enumerate(zip(ai.tid_bases, bi.tid_bases, ci.tid_bases)):
        if tuple(ba) != (bc[0], 0) or tuple(bb) != (0, bc[1]):
            raise LoweringError(op, f"no mma fragments and no FMA layouts: thread bit {bit} of {a.type.layout} (A), "
                                    f"{b.type.layout} (B), {c.type.layout} (C) does not keep A's rows / B's "
                                    "columns with the result's and all of K in each thread's registers")
    a_index = {x: r for r, x in reversed(list(enumerate(ai.reg_coords)))}
    b_index = {x: r for r, x in reversed(list(enumerate(bi.reg_coords)))}
    k_total = a.type.shape[1]
    canon = ci.canonical_regs()
    mine = [r for r in range(ci.num_regs) if canon[r] == r]
    need_a = {(r, k): a_index.get((ci.reg_coords[r][0], k)) for r in mine for k in range(k_total)}
    need_b = {(r, k): b_index.get((k, ci.reg_coords[r][1])) for r in mine for k in range(k_total)}
    if None in need_a.values() or None in need_b.values():
        raise LoweringError(op, f"the FMA dot needs all of K in each thread: {a.type.layout} (A) / {b.type.layout} "
                                "(B) do not hold it")
    acc_t = element_type(c.type)
    calc = i32 if acc_t.is_integer else (f64 if acc_t == f64 else f32)
    get_a, get_b = operand_source(ctx, a), operand_source(ctx, b)
    acc_in = ctx.get(c)
    acc = {r: convert(ctx, acc_in[r], calc) for r in mine}
    for k in range(k_total):
        for r in mine:
            x = convert(ctx, get_a([need_a[r, k]])[0], calc)
            y = convert(ctx, get_b([need_b[r, k]])[0], calc)
            if calc == i32:
                acc[r] = ctx.op("arith.add", [ctx.op("arith.mul", [x, y], i32), acc[r]], i32)
            else:
                acc[r] = ctx.op("math.fma", [x, y, acc[r]], calc)
                if acc_t.bits < calc.bits:  # a narrow accumulator rounds at every step
                    acc[r] = convert(ctx, convert(ctx, acc[r], acc_t), calc)
    ctx.set(op.result, [convert(ctx, acc[canon[r]], acc_t) for r in range(ci.num_regs)])


@lowers("tt.dot")
def _lower_dot(ctx: Lowering, op: Operation) -> None:
    if isinstance(op.result.type.layout, MfmaLayout):
        _lower_mfma(ctx, op)
        return
    if isinstance(op.result.type.layout, WmmaLayout):
        _lower_wmma(ctx, op)
        return
    if is_wgmma_dot(op):
        lower_wgmma_dot(ctx, op)
        return
    a, b, c = op.operands
    atype = mma_type(element_type(a.type), op.attrs.get("input_precision", "tf32"))
    acc_t = element_type(c.type)
    plan = None
    if atype is not None and acc_t in (f32, f16, i32):
        kw = MMA_SHAPES[atype].k_width
        plan = mma_plan(ctx.info(a.type), ctx.info(b.type), ctx.info(c.type), kw, ctx.threads)
    if plan:
        _lower_mma(ctx, op, atype, plan)
        return
    if hasattr(c.type.layout, "instr_shape"):
        raise LoweringError(op, f"{a.type} @ {b.type} -> {c.type}: the layouts are not mma.sync fragments of "
                                f"this element type")
    _lower_fma(ctx, op)
