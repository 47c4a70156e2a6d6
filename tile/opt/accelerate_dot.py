"""Accelerate dot: put each tt.dot on the tensor cores (mma.sync; wgmma on sm_90a; MFMA on CDNA,
WMMA on RDNA3) where they can take it, else on the FMA path, by choosing its result layout and
the layouts of its operands.

Before (num_warps = 4, sm_80; #b = a blocked layout from convert-to-gpu):
    %acc2 = tt.dot %a, %b, %acc {input_precision = "tf32"} : tensor<128x128xf32, #b>
          (%a: tensor<128x32xf16, #b>, %b: tensor<32x128xf16, #b>, %acc: tensor<128x128xf32, #b>)
After (#mma = #mma<version = 2, wpc = [2, 2], instr = [16, 8]>):
    %0 = gpu.convert_layout %a : tensor<128x32xf16, #dot_op<op_idx = 0, parent = #mma, k_width = 2>>
    %1 = gpu.convert_layout %b : tensor<32x128xf16, #dot_op<op_idx = 1, parent = #mma, k_width = 2>>
    %2 = gpu.convert_layout %acc : tensor<128x128xf32, #mma>
    %acc2 = tt.dot %0, %1, %2 {input_precision = "tf32"} : tensor<128x128xf32, #mma>
    %3 = gpu.convert_layout %acc2 : tensor<128x128xf32, #b>
A conversion of an operand the loop does not change (one loaded before the loop, like attention's
Q) moves in front of the loop, so its fragments are built once and stay in registers, when they
fit: at most HOISTED_REGISTERS registers per thread for all such operands of a loop (else they
are read from shared memory in every iteration, which costs ldmatrix bandwidth but no spills).
remove-layout-conversions
then treats the dot's result as an anchor: its #mma layout flows into
the loop-carried accumulator (block argument, yield and loop result: no conversion inside the
loop) and into the epilogue, where one conversion to the store's coalesced layout is left.

mma.sync (Ampere's m16n8kK, also run by Hopper) takes, with N >= 8, M >= 16 and K >= one
instruction's K, on sm_80 and later with 32-thread warps:
    f16 / bf16 operands, f32 (or f16) accumulator       m16n8k16, k_width 2
    f32 operands, input_precision "tf32" ("tf32x3")     m16n8k8 on tf32-rounded inputs (three
                                                        of them on split operands), k_width 1
    i8 / u8 operands, i32 accumulator                   m16n8k32, k_width 4
e4m3 / e5m2 operands on targets whose tensor cores take no fp8 (sm_80, sm_86) are converted to f16
first (exact), as Triton does on Ampere, and take the f16 row above:
    %a16 = arith.cast %a : tensor<64x32xf16, #b>      (from f8e5, right after %a is defined)
Everything else (input_precision "ieee", f64, fp8 on sm_89 and sm_90, smaller shapes, other
targets) takes the FMA path: the result gets a blocked layout where each thread
holds a near-square block (rows_per_thread x cols_per_thread of the result), and the operands
take fma_operand_layout (tile.ir.dot_layouts): A's rows and B's columns as the result has them, all of
K in each thread's registers; the lowering does one fma per result element and k.

Warps: (wm, wn) as Triton's warpsPerTileV2: starting from 1 x 1, double wm while M / 16 / wm is at
least N / 16 / wn (and wm < M / 16), else double wn, until wm * wn = num_warps. So a 128x128 tile
gets 2 x 2 warps with 4 warps (64x64 per warp) and 4 x 2 with 8 warps (32x64 per warp); 128x256
with 8 warps gets 2 x 4 (64x64 per warp).

On sm_90a, dots that Hopper's warp-group wgmma takes go there instead (tile.ir.simt_ops.WGMMA_SHAPES:
the operand types, K of one instruction and which operands may be MN-major): f16/bf16 (k16, f32
or f16 accumulator), f32 with input_precision "tf32" (k8), fp8 e4m3/e5m2 (k32) and i8/u8 (k32,
i32 accumulator), with num_warps a multiple of 4 (warp groups), M a multiple of 64 per warp group
and N of 8 per warp group, K a multiple of the instruction's K. Warp groups stack along M first
(as many as M / 64 takes), the rest split N; one instruction is 64 x min(N per warp group, 256).
The result gets #mma version 3, and A and B go to #shared buffers in a canonical wgmma layout
(tile.ir.dot_layouts.wgmma_shared), which the dot reads in place (no #dot_op, no ldmatrix). The
buffer is K-major here; convert-through-shared makes it MN-major where the stored values come in
that order and the type allows it. A buffer of an operand defined outside the dot's loops is
filled once, before them, and the dots of later loops of the same block read that buffer too.
An f16/bf16 A computed from another dot's result (attention's P @ V)
stays in registers instead, as #dot_op<op_idx = 0> of the result's layout, which over a warp
group's rows is the accumulator layout of the first dot: no shared memory between the two
dots. Before / after (128x128x64 f16, num_warps = 8, sm_90a):
    %acc2 = tt.dot %a, %b, %acc : tensor<128x128xf32, #b>
becomes (#w = #mma<version = 3, wpc = [8, 1], instr = [16, 128]>)
    %0 = gpu.local_alloc {bytes = 16384, offset = -1} :
           tensor<128x64xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>>
    gpu.local_store %0, %a
    %1 = gpu.local_alloc {bytes = 16384, offset = -1} :
           tensor<64x128xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]>>
    gpu.local_store %1, %b
    %2 = gpu.convert_layout %acc : tensor<128x128xf32, #w>
    %acc2 = tt.dot %0, %1, %2 : tensor<128x128xf32, #w>
    %3 = gpu.convert_layout %acc2 : tensor<128x128xf32, #b>

On gfx942 and gfx90a (AMD CDNA3 and CDNA2), f16 and bf16 dots with an f32 accumulator go to MFMA
(MFMA_INSTRS), and on gfx942 so do dots on the fnuz fp8 formats f8e4b8 / f8e5b16 (A of one and
B of the other too: v_mfma_f32_*_fp8_bf8 and _bf8_fp8): the result gets #mfma
(tile.ir.mfma_layouts) and A and B #mfma_op (k_width 8 for fp8: eight values in each lane),
converted from their blocked layouts like mma's operands. A warp there is a wave of 64 (as in
Triton on CDNA: num_warps counts waves); the waves form a wm x wn grid (warps_per_tile over
instruction tiles), and the instruction is 32x32 (K 8, or 16 for fp8) where each wave gets at
least 32 x 32, else 16x16 (K 16, or 32 for fp8; the one bf16 MFMA tile selects). M and N must
be multiples of the waves' instruction tiles and K of the instruction's K, else the dot takes
the FMA path. Before / after (64x64x64 f8e4b8 x f8e5b16, num_warps = 2: two waves, gfx942):
    %d = tt.dot %a, %b, %c : tensor<64x64xf32, #b>
becomes (#m = #mfma<instr = 32, wpc = [2, 1]>)
    %0 = gpu.convert_layout %a : tensor<64x64xf8e4b8, #mfma_op<op_idx = 0, parent = #m, k_width = 8>>
    %1 = gpu.convert_layout %b : tensor<64x64xf8e5b16, #mfma_op<op_idx = 1, parent = #m, k_width = 8>>
    %2 = gpu.convert_layout %c : tensor<64x64xf32, #m>
    %d = tt.dot %0, %1, %2 : tensor<64x64xf32, #m>
    %3 = gpu.convert_layout %d : tensor<64x64xf32, #b>

On gfx1100 (AMD RDNA3, waves of 32: one wave is one of the lowering's warps), f16 and bf16 dots
with an f32 accumulator go to WMMA (WMMA_TARGETS; v_wmma_f32_16x16x16_f16 / _bf16): the waves
form a wm x wn grid (warps_per_tile) over 16 x 16 instruction tiles, so M, N and K must be
multiples of 16; where the grid is larger than the tiles (4 waves on a 32 x 16 result, such as
attention's q @ k.T) the waves past them repeat the work of the first ones; the result gets
#wmma and A and B #wmma_op (tile.ir.wmma_layouts: each lane holds a whole row of A or column of
B, repeated in the other half of the wave), converted from their blocked layouts. Anything else
(i8, f32, f64, other shapes) takes the FMA path; fp8 is refused before (tile.codegen.target).
A loop-invariant operand's conversion moves in front of its loop as for mma (HOISTED_REGISTERS),
and #wmma, like #mma, takes any shape, so row reductions of the result stay in its layout.
Before / after (64x64x32 f16, num_warps = 4, gfx1100; #b blocked layouts from convert-to-gpu):
    %d = tt.dot %a, %b, %c : tensor<64x64xf32, #b>
becomes (#w = #wmma<wpc = [2, 2]>)
    %0 = gpu.convert_layout %a : tensor<64x32xf16, #wmma_op<op_idx = 0, parent = #w>>
    %1 = gpu.convert_layout %b : tensor<32x64xf16, #wmma_op<op_idx = 1, parent = #w>>
    %2 = gpu.convert_layout %c : tensor<64x64xf32, #w>
    %d = tt.dot %0, %1, %2 : tensor<64x64xf32, #w>
    %3 = gpu.convert_layout %d : tensor<64x64xf32, #b>
"""
from __future__ import annotations

import math
import re
from typing import Optional, Sequence

from ..ir import BlockArgument, DType, Operation, TensorType, Value, bf16, f16, f32, i8, i32, u8
from ..ir.dot_layouts import MAX_WGMMA_N, DotOperandLayout, MmaLayout, wgmma_shared
from ..ir.float8 import is_float8_variant
from ..ir.gpu_ops import element_bytes, is_elementwise, layout_of, legalize, mma_k_width, with_layout
from ..ir.layouts import BlockedLayout, blocked_layout
from ..ir.mfma_layouts import MFMA_INSTR_K, MFMA_WAVE_SIZE, MfmaLayout, mfma_k_width
from ..ir.simt_ops import WGMMA_SHAPES, wgmma_atype
from ..ir.types import with_element
from ..ir.wmma_layouts import WMMA_K, WMMA_M, WMMA_N, WmmaLayout, WmmaOperandLayout
from .coalesce import MEMORY_OPS
from .dce import DCE
from .pass_manager import Pass

MIN_MMA_ARCH = 80
FP8_MMA_ARCH = 89  # the first architecture whose tensor cores take e4m3 / e5m2
HOISTED_REGISTERS = 64  # per thread, for the fragments of loop-invariant operands kept in registers


def mma_capable(target: str, threads_per_warp: int) -> bool:
    """Whether `target` runs mma.sync.m16n8k16 (sm_80 and later, 32-thread warps)."""
    m = re.fullmatch(r"sm_(\d+)a?", target)
    return m is not None and int(m.group(1)) >= MIN_MMA_ARCH and threads_per_warp == 32


def warps_per_tile(shape: Sequence[int], num_warps: int) -> tuple[int, int]:
    """(wm, wn) for an M x N mma result (see the module docstring)."""
    m, n = shape
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // 16 // wm >= n // 16 // wn and wm < m // 16:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def uses_mma(op: Operation, target: str, num_warps: int, threads_per_warp: int) -> bool:
    """Whether tt.dot `op` goes to mma.sync (see the module docstring)."""
    a, c = op.operand(0).type, op.result.type
    el, acc = a.element, c.element
    kinds = el in (f16, bf16) and acc in (f16, f32) or el == f32 and acc == f32 and \
        op.attrs.get("input_precision", "tf32") in ("tf32", "tf32x3") or el in (i8, u8) and acc == i32
    if not kinds or not mma_capable(target, threads_per_warp):
        return False
    (m, k), n = a.shape, c.shape[1]
    return m >= 16 and n >= 8 and k >= 8 * mma_k_width(el)


def upcasts_fp8_operands(op: Operation, target: str, threads_per_warp: int) -> bool:
    """Whether tt.dot `op` has e4m3 / e5m2 operands that go to f16 for mma.sync (see the module
    docstring; Triton's other fp8 formats are converted to f16 by the frontend)."""
    el = op.operand(0).type.element
    m = re.fullmatch(r"sm_(\d+)a?", target)
    return el.is_fp8 and not is_float8_variant(el) and mma_capable(target, threads_per_warp) and \
        int(m.group(1)) < FP8_MMA_ARCH


def upcast_operands_to_f16(op: Operation) -> None:
    """Replace the fp8 operands of tt.dot `op` by their f16 values, each converted right after
    it is defined (so a loop-invariant operand is converted once, outside the loop)."""
    for i in (0, 1):
        v = _source(op.operand(i))
        cast = Operation("arith.cast", [v], [with_element(v.type, f16)], loc=op.loc)
        if isinstance(v, BlockArgument):
            v.block.insert(0, cast)
        else:
            v.owner_op.parent.insert_after(v.owner_op, cast)
        op.set_operand(i, cast.result)


WGMMA_TARGETS = ("sm_90a",)
WARP_GROUP = 4  # warps
WGMMA_M = 64    # rows of one wgmma instruction (one warp group)


def wgmma_warp_groups(shape: Sequence[int], num_warps: int) -> tuple[int, int]:
    """(warp groups along M, along N) of an M x N wgmma result: M first, as far as M / 64 goes."""
    groups, gm = num_warps // WARP_GROUP, 1
    while gm < groups and shape[0] % (2 * gm * WGMMA_M) == 0:
        gm *= 2
    return gm, max(1, groups // gm)


def uses_wgmma(op: Operation, target: str, num_warps: int, threads_per_warp: int) -> bool:
    """Whether tt.dot `op` goes to wgmma (see the module docstring)."""
    a, c = op.operand(0).type, op.result.type
    atype = wgmma_atype(a.element, op.attrs.get("input_precision", "tf32"))
    if target not in WGMMA_TARGETS or threads_per_warp != 32 or num_warps % WARP_GROUP or atype is None:
        return False
    shape = WGMMA_SHAPES[atype]
    accumulators = (i32,) if shape.ctype == "s32" else (f32, f16) if atype == "f16" else (f32,)
    (m, k), n = a.shape, c.shape[1]
    gm, gn = wgmma_warp_groups((m, n), num_warps)
    return c.element in accumulators and m % (WGMMA_M * gm) == 0 and n % (8 * gn) == 0 and k % shape.k == 0


def wgmma_result_layout(shape: Sequence[int], num_warps: int) -> MmaLayout:
    gm, gn = wgmma_warp_groups(shape, num_warps)
    return MmaLayout(3, (WARP_GROUP * gm, gn), (16, min(shape[1] // gn, MAX_WGMMA_N)))


# The result sizes (instr) of each target's MFMA on each operand type, preferred first (the
# rows of tile.codegen.amdgcn.isa.MFMA_SHAPES; gfx942's fp8 / bf8 MFMA also take one of each).
MFMA_INSTRS = {
    "gfx942": {"f16": (32, 16), "bf16": (16,), "f8e4b8": (32, 16), "f8e5b16": (32, 16)},
    "gfx90a": {"f16": (32, 16), "bf16": (16,)},
}
MFMA_TARGETS = tuple(MFMA_INSTRS)
MIXED_MFMA_TYPES = ("f8e4b8", "f8e5b16")   # A of one and B of the other: one MFMA still


def mfma_instrs(target: str, a: DType, b: DType) -> tuple[int, ...]:
    """The MFMA result sizes `target` has for A of type `a` and B of type `b` (none: no MFMA)."""
    if a != b and not (a.name in MIXED_MFMA_TYPES and b.name in MIXED_MFMA_TYPES):
        return ()
    return MFMA_INSTRS.get(target, {}).get(a.name, ())


def mfma_result_layout_for(op: Operation, target: str, num_warps: int,
                           threads_per_warp: int = MFMA_WAVE_SIZE) -> Optional[MfmaLayout]:
    """The #mfma layout of tt.dot `op` on an AMD target whose warps are waves of
    `threads_per_warp`, or None (see the module docstring)."""
    a, b, c = op.operand(0).type, op.operand(1).type, op.result.type
    instrs = mfma_instrs(target, a.element, b.element)
    if not instrs or c.element != f32 or threads_per_warp != MFMA_WAVE_SIZE:
        return None
    (m, k), n = a.shape, c.shape[1]
    k_scale = mfma_k_width(a.element.bits) // mfma_k_width(16)   # 8-bit MFMA: twice the K
    for instr in instrs:
        wm, wn = warps_per_tile((m * 16 // instr, n * 16 // instr), num_warps)
        if m % (instr * wm) == 0 and n % (instr * wn) == 0 and k % (MFMA_INSTR_K[instr] * k_scale) == 0:
            return MfmaLayout(instr, (wm, wn))
    return None


WMMA_TARGETS = ("gfx1100",)


def wmma_result_layout_for(op: Operation, target: str, num_warps: int) -> Optional[WmmaLayout]:
    """The #wmma layout of tt.dot `op` on RDNA3, or None (see the module docstring)."""
    a, c = op.operand(0).type, op.result.type
    if target not in WMMA_TARGETS or a.element not in (f16, bf16) or c.element != f32:
        return None
    (m, k), n = a.shape, c.shape[1]
    if m % WMMA_M or n % WMMA_N or k % WMMA_K:
        return None
    return WmmaLayout(warps_per_tile((m, n), num_warps))


def fma_result_layout(shape: Sequence[int], num_warps: int, threads_per_warp: int = 32) -> BlockedLayout:
    """The FMA path's result layout: near-square blocks per thread, lanes then warps row-major."""
    per_thread = max(1, math.prod(shape) // (num_warps * threads_per_warp))
    cols = min(shape[1], 1 << (per_thread.bit_length() // 2))
    rows = min(shape[0], max(1, per_thread // cols))
    return blocked_layout(shape, [rows, cols], [1, 0], num_warps, threads_per_warp)


def dot_result_layout(op: Operation, target: str, num_warps: int,
                      threads_per_warp: int) -> MmaLayout | MfmaLayout | WmmaLayout | BlockedLayout:
    shape = op.result.type.shape
    amd = mfma_result_layout_for(op, target, num_warps, threads_per_warp) or \
        wmma_result_layout_for(op, target, num_warps)
    if amd is not None:
        return amd
    if uses_wgmma(op, target, num_warps, threads_per_warp):
        return wgmma_result_layout(shape, num_warps)
    if uses_mma(op, target, num_warps, threads_per_warp):
        return MmaLayout(2, warps_per_tile(shape, num_warps))
    return fma_result_layout(shape, num_warps, threads_per_warp)


def hoist_invariant_fragments(func: Operation) -> None:
    """Move the conversions of loop-invariant dot operands to #dot_op (or #wmma_op) in front of
    their loop (innermost loops first), as long as the fragments so kept live take at most
    HOISTED_REGISTERS 32-bit registers per thread in that loop."""
    for loop in reversed([op for op in func.walk() if op.name in ("scf.for", "scf.while")]):
        budget = HOISTED_REGISTERS
        for op in list(loop.regions[-1].block.ops):
            if op.name != "gpu.convert_layout" or \
                    not isinstance(layout_of(op.result), (DotOperandLayout, WmmaOperandLayout)):
                continue
            v = op.operand(0)
            owner = v.block.parent_op if isinstance(v, BlockArgument) else v.owner_op
            t = op.result.type
            registers = t.layout.to_linear(t.shape).num_registers * element_bytes(t) // 4
            if not loop.is_ancestor_of(owner) and registers <= budget:
                op.move_before(loop)
                budget -= registers


def _source(v):
    """`v` without the layout conversions in front of it."""
    while v.owner_op is not None and v.owner_op.name == "gpu.convert_layout":
        v = v.owner_op.operand(0)
    return v


def _defined_outside(v: Value, loop: Operation) -> bool:
    owner = v.block.parent_op if isinstance(v, BlockArgument) else v.owner_op
    return owner is None or not loop.is_ancestor_of(owner)


_THROUGH = ("gpu.convert_layout", "tt.broadcast", "tt.expand_dims", "tt.splat")


def from_a_dot(v: Value, seen: Optional[set] = None) -> bool:
    """Whether `v` is computed in registers from another dot's result (through elementwise ops,
    broadcasts and conversions, no memory; a loop-carried value and a loop's result through what
    the loop yields for it; an if's result through what either branch yields): attention's P in
    P @ V, also where a branch masks the scores."""
    seen = set() if seen is None else seen
    if isinstance(v, BlockArgument) and v.index > 0 and v.block.parent_op is not None and \
            v.block.parent_op.name == "scf.for" and v not in seen:
        seen.add(v)
        return from_a_dot(v.block.terminator.operand(v.index - 1), seen)
    op = v.owner_op
    if op is None or op in seen:
        return False
    seen.add(op)
    if op.name == "tt.dot":
        return True
    if op.name == "scf.for":
        return from_a_dot(op.regions[0].block.terminator.operand(op.results.index(v)), seen)
    if op.name == "scf.if":
        index = op.results.index(v)
        return any(from_a_dot(region.block.terminator.operand(index), seen) for region in op.regions)
    if op.name in _THROUGH or is_elementwise(op) and op.name not in MEMORY_OPS:
        return any(from_a_dot(x, seen) for x in op.operands if isinstance(x.type, TensorType))
    return False


def stage_wgmma_operands(op: Operation) -> None:
    """B, and A unless it comes from another dot (f16/bf16: it stays in registers), of a wgmma dot
    into #shared buffers (K-major; see the module docstring), stored in front of the dot, or in
    front of the outermost enclosing loops that do not define them. A value already staged so
    in front of an earlier loop of the same block (the K of a causal backward's masked and
    unmasked loops) is read from that buffer: staging it again would keep its registers live
    through the earlier loops."""
    a = op.operand(0)
    in_registers = element_bytes(a.type) == 2 and from_a_dot(a)
    for i, k_dim in ((0, 1), (1, 0))[1 if in_registers else 0:]:
        v = op.operand(i)
        t = v.type
        anchor = op
        while anchor.parent_op is not None and anchor.parent_op.name in ("scf.for", "scf.while") and \
                _defined_outside(v, anchor.parent_op):
            anchor = anchor.parent_op
        buffer_type = TensorType(t.shape, t.element, wgmma_shared(t.shape, element_bytes(t), (k_dim, 1 - k_dim)))
        staged = _staged_before(v, buffer_type, anchor) if anchor is not op else None
        if staged is None:
            alloc = Operation("gpu.local_alloc", [], [buffer_type],
                              {"offset": -1, "bytes": t.numel * element_bytes(t)}, loc=op.loc)
            anchor.parent.insert_before(anchor, alloc)
            anchor.parent.insert_before(anchor, Operation("gpu.local_store", [alloc.result, v], loc=op.loc))
            staged = alloc.result
        op.set_operand(i, staged)


def _staged_before(v: Value, buffer_type: TensorType, anchor: Operation) -> Optional[Value]:
    """A buffer of `buffer_type` that a gpu.local_store in `anchor`'s block, before it, fills with
    `v`, and that nothing else writes (stage_wgmma_operands' own buffers); None if there is none."""
    block = anchor.parent
    for user, index in v.uses:
        if user.name != "gpu.local_store" or index != 1 or user.parent is not block or \
                block.ops.index(user) > block.ops.index(anchor):
            continue
        buf = user.operand(0)
        alloc = buf.owner_op
        if alloc is not None and alloc.name == "gpu.local_alloc" and buf.type == buffer_type and \
                all(u is user or u.name == "tt.dot" for u, _ in buf.uses):
            return buf
    return None


class AccelerateDot(Pass):
    """Chooses the mma or FMA layouts of every tt.dot (see the module docstring)."""

    name = "accelerate-dot"

    def run(self, func: Operation) -> None:
        target, num_warps, tpw = func.attrs["target"], func.attrs["num_warps"], func.attrs["threads_per_warp"]
        changed = False
        for op in list(func.walk()):
            if op.name != "tt.dot":
                continue
            if upcasts_fp8_operands(op, target, tpw):
                upcast_operands_to_f16(op)
                changed = True
            layout = dot_result_layout(op, target, num_warps, tpw)
            if layout_of(op.result) == layout:
                continue
            for i in (0, 1):
                op.set_operand(i, _source(op.operand(i)))
            if isinstance(layout, MmaLayout) and layout.version == 3:
                stage_wgmma_operands(op)
            old = op.result.type
            uses = list(op.result.uses)
            op.result.type = with_layout(old, layout)
            back = Operation("gpu.convert_layout", [op.result], [old], loc=op.loc)
            op.parent.insert_after(op, back)
            for user, index in uses:
                user.set_operand(index, back.result)
            changed = True
        if changed:
            legalize(func)
            DCE().run(func)
            hoist_invariant_fragments(func)


__all__ = ["AccelerateDot", "dot_result_layout", "fma_result_layout", "hoist_invariant_fragments",
           "mfma_instrs", "mfma_result_layout_for", "mma_capable", "upcasts_fp8_operands", "uses_mma", "uses_wgmma",
           "warps_per_tile", "wgmma_warp_groups", "wmma_result_layout_for", "HOISTED_REGISTERS"]
