"""Lowering of tt.dot on Hopper's warp-group tensor cores (wgmma, sm_90a) and of its sync ops.

Before (a 128x128 f16 tile on 8 warps, two warp groups stacked along M; A and B in wgmma's
canonical shared layouts, B N-major; #acc = #mma<version = 3, wpc = [8, 1], instr = [16, 128]>):

    %d = tt.dot %a, %b, %c : tensor<128x128xf32, #acc>
        (%a: tensor<128x64xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>>,
         %b: tensor<64x128xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0], block = 64>>)

After (per thread; one descriptor per buffer, then one add per k-step):

    %x = arith.add %a_base, %wg : i32            // + the warp group's rows of A: 64 * 128 bytes
    %da = arith.or (cvt (%x >> 4)), %fa : u64    // %fa = LBO >> 4 << 16 | SBO >> 4 << 32 | mode << 62
    simt.wgmma_fence
    %d0... = simt.wgmma %da, %db, %true, %c... {atype = "f16", n = 128, trans_a = false, trans_b = true}
    %da1 = arith.add %da, %c2 : u64              // k-step 1: A 32 bytes further along K,
    %db1 = arith.add %db, %c128 : u64            //           B 16 rows (2048 bytes) further
    %d1... = simt.wgmma %da1, %db1, %true, %d0... {...}
    ... (4 k-steps of 16)
    simt.wgmma_commit
    %r... = simt.wgmma_wait %d3... {pending = 0}       // unless the dot is asynchronous
  printed as
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1, ..., %f64}, %rd5, %rd6, %p1, 1, 1, 0, 1;

Everything comes from the layouts. The accumulator's register bases hold the wgmma D fragment
(registers 0 .. n/2 - 1: columns +1, rows +8, columns +8, +16, ...; lanes and the first two warp
bits as the PTX ISA's fragment; checked here) and then the origins of the 64 x n instruction
tiles; its other warp bits place the warp groups. A descriptor's start address is the buffer
plus the offset (SharedLayout.offset_of) of its tile's origin: the warp group's part is
per-warp (from lane 0's %tid through shfl.sync.idx, once: ptxas then builds the descriptors
in uniform registers instead of moving each one there with R2UR), the instruction tile's and
the k-step's a constant. K-major
operands: SBO = bytes between 8-row groups (LBO unused: 1). MN-major (f16/bf16 only): LBO =
bytes between swizzle atoms along M or N, SBO = bytes between 8-row groups along K. Swizzle
mode 1, 2, 3 for 128, 64, 32 bytes (tile.ir.dot_layouts.wgmma_swizzle).

A in registers (#dot_op<op_idx = 0> of the accumulator's layout, f16/bf16): each warp holds
mma.sync's m16n8k16 A fragments (lower_fragments.mma_fragments); the fragment whose origin is the
instruction tile's (m0, k-step) in every warp of a warp group gives the four packed registers
(wgmma.mma_async ... {d..}, {%r1, %r2, %r3, %r4}, %db, %p, 1, 1, 1;).

A constant zero accumulator is not read: the first k-step runs with scale-d false. An f16
accumulator goes through f32 around the wgmma (so its dot cannot be asynchronous). A dot
with {is_async} leaves its group in flight; a gpu.dot_wait retires it later.

    gpu.dot_wait %acc {pending = 1}   ->  simt.wgmma_wait (wgmma.wait_group.sync.aligned 1;)
    gpu.fence_async_shared            ->  simt.fence_proxy_async (fence.proxy.async.shared::cta;)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dot_layouts import MmaLayout, wgmma_swizzle
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import SharedLayout, unit
from ..ir.simt_ops import WGMMA_SHAPES, wgmma_atype
from ..ir.types import TensorType, element_type, f16, f32, i1, i32, u64
from .lower_cast import convert
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_fragments import mma_fragments, operand_source

DESCRIPTOR_MODE = {128: 1, 64: 2, 32: 3}  # the swizzle field (bits 62-63) of a matrix descriptor
UNUSED_OFFSET = 16  # a byte offset the layout does not use: the PTX ISA's "assumed to be 1" (>> 4)
FRAGMENT_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
FRAGMENT_WARPS = ((16, 0), (32, 0))  # the 4 warps of a warp group: 16 rows each


@dataclass
class _Operand:
    """One shared-memory operand of the wgmma: where its descriptors start and their fixed fields."""

    base: Value        # i32 shared address of the buffer
    thread: Value      # i32 per-thread byte offset of the warp group's tile
    span: int          # the bits `thread` may set
    layout: SharedLayout
    shape: tuple[int, ...]
    element_bytes: int
    k_major: bool
    fields: int        # LBO, SBO and swizzle mode, in place

    def descriptor(self, ctx: Lowering, origin: tuple[int, int]) -> Value:
        """The u64 descriptor of the instruction tile whose first element is `origin` (in warp group 0)."""
        const = self.layout.offset_of(origin, self.shape) * self.element_bytes
        inside, outside = const & self.span, const & ~self.span
        thread = ctx.op("arith.xor", [self.thread, ctx.const(inside, i32)], i32) if inside else self.thread
        start = ctx.add(self.base, thread)
        words = convert(ctx, ctx.op("arith.shr", [start, ctx.const(4, i32)], i32), u64)
        desc = ctx.op("arith.or", [words, ctx.const(self.fields, u64)], u64)
        return ctx.add(desc, ctx.const(outside >> 4, u64))


def _operand(ctx: Lowering, op: Operation, v: Value, k_dim: int, info: LayoutInfo) -> _Operand:
    """Operand A (k_dim 1) or B (k_dim 0) of the wgmma of `op`, whose accumulator has `info`."""
    t = v.type
    layout = t.layout
    eb = element_bytes(t)
    swizzle = wgmma_swizzle(layout, t.shape, eb) if isinstance(layout, SharedLayout) else None
    if swizzle is None:
        raise LoweringError(op, f"wgmma reads {t}: not a canonical wgmma shared layout (tile.ir.dot_layouts."
                                "wgmma_shared)")
    mn_dim = 1 - k_dim
    k_major = layout.order[0] == k_dim

    def bytes_to(dim: int, n: int) -> int:
        return layout.offset_of(unit(2, dim, n), t.shape) * eb if n < t.shape[dim] else UNUSED_OFFSET

    if k_major:
        lbo, sbo = UNUSED_OFFSET, bytes_to(mn_dim, 8)
    else:
        lbo, sbo = bytes_to(mn_dim, swizzle // eb), bytes_to(k_dim, 8)
    fields = (lbo >> 4) << 16 | (sbo >> 4) << 32 | DESCRIPTOR_MODE[swizzle] << 62
    # the warp group's tile: tid bits of warps 2.. (whole warp groups), along this operand's M or N
    images = [0] * (5 + 2) + [layout.offset_of(unit(2, mn_dim, b[mn_dim]), t.shape) * eb
                              for b in info.tid_bases[7:5 + ctx.warp_bits]]
    span = 0
    for x in images:
        span |= x
    base = ctx.get(v)[0]
    if ctx.smem_align.get(base, 1) < 16:
        raise LoweringError(op, f"wgmma reads {t} from a buffer not aligned to 16 bytes")
    return _Operand(base, ctx.from_tid(images, warp_uniform=True), span, layout, t.shape, eb, k_major, fields)


def instruction_tiles(info: LayoutInfo, n: int, op: Operation) -> list[tuple[tuple[int, int], list[int]]]:
    """(origin, registers) of each 64 x n wgmma tile of warp group 0 in an accumulator layout:
    registers t * n/2 .. (t + 1) * n/2 - 1 are the D fragment of tile t (see the module docstring)."""
    ll = info.ll
    frag = n // 2
    bits = frag.bit_length() - 1
    want = ((0, 1), (8, 0)) + tuple((0, 8 << i) for i in range(bits - 2))
    if ll.register_bases[:bits] != want or ll.lane_bases != FRAGMENT_LANES or \
            ll.warp_bases[:2] != FRAGMENT_WARPS:
        raise LoweringError(op, f"{op.result.type}: the registers are not wgmma m64n{n} D fragments")
    tiles = []
    for t in range(info.num_regs // frag):
        regs = list(range(t * frag, (t + 1) * frag))
        origin = info.reg_coords[t * frag]
        tiles.append(((origin[0], origin[1]), regs))
    return tiles


class _RegisterA:
    """Operand A held in registers: the four packed words of each (instruction tile, k-step)."""

    def __init__(self, ctx: Lowering, op: Operation, acc: LayoutInfo):
        a = op.operand(0)
        info = ctx.info(a.type)
        self.ctx, self.kw = ctx, 4 // element_bytes(a.type)
        threads = ctx.threads
        found = mma_fragments(info.coords(threads), "a", self.kw)
        if found is None:
            raise LoweringError(op, f"{a.type}: the registers are not wgmma A fragments")
        regs, origins = found   # origins [fragments, warps, 2]
        self.words = {tuple(int(x) for x in origins[i, 0]): regs[i] for i in range(len(regs))}
        self.origins = {tuple(int(x) for x in origins[i, 0]): origins[i] for i in range(len(regs))}
        self.acc_rows = acc.coords(threads)[::32, :, 0]  # row of each accumulator register in lane 0 of each warp
        self.get = operand_source(ctx, a)
        self.op = op

    def words_for(self, origin: tuple[int, int], tile_regs: list[int]) -> list[Value]:
        """The four i32 words of A for the tile whose accumulator registers are `tile_regs`, at `origin`."""
        if origin not in self.words or (self.origins[origin][:, 0] != self.acc_rows[:, tile_regs[0]]).any() or \
                (self.origins[origin][:, 1] != origin[1]).any():
            raise LoweringError(self.op, f"{self.op.operand(0).type}: no A fragment at {origin} in the rows of the "
                                         "accumulator's warps")
        regs = self.words[origin]
        return [self.ctx.pack(self.get(regs[i:i + self.kw]), i32) for i in range(0, len(regs), self.kw)]


def lower_wgmma_dot(ctx: Lowering, op: Operation) -> None:
    """tt.dot with a #mma version 3 result (see the module docstring)."""
    a, b, c = op.operands
    layout = c.type.layout
    assert isinstance(layout, MmaLayout) and layout.version == 3
    el = element_type(a.type)
    atype = wgmma_atype(el, op.attrs.get("input_precision", "tf32"))
    if atype is None:
        raise LoweringError(op, f"wgmma takes no {el} operands with input_precision "
                                f"{op.attrs.get('input_precision')!r}")
    shape = WGMMA_SHAPES[atype]
    acc_t = element_type(c.type)
    calc = f32 if shape.ctype == "f32" else i32
    if acc_t not in (calc, f16) or (acc_t == f16 and (calc != f32 or op.attrs.get("is_async"))):
        raise LoweringError(op, f"wgmma on {atype} accumulates in {calc}, not {acc_t}"
                                + (" asynchronously" if acc_t == f16 else ""))
    if not ctx.facts.has_matrix_instruction("wgmma"):
        raise LoweringError(op, f"wgmma needs target sm_90a, not {ctx.target}")
    info = ctx.info(c.type)
    n = layout.instr_shape[1]
    tiles = instruction_tiles(info, n, op)
    accs = list(ctx.get(c))
    zero = all(ctx.const_value(x) == 0 for x in accs)
    accs = [convert(ctx, x, calc) for x in accs]
    from_registers = not isinstance(a.type.layout, SharedLayout)
    if from_registers and (not shape.mn_major or op.attrs.get("is_async")):
        raise LoweringError(op, "wgmma reads A from registers for f16/bf16 only, and not asynchronously")
    reg_a = _RegisterA(ctx, op, info) if from_registers else None
    smem_a = None if from_registers else _operand(ctx, op, a, 1, info)
    smem_b = _operand(ctx, op, b, 0, info)
    true, false = ctx.const(True, i1), ctx.const(False, i1)
    steps = [(k0, (m0, n0), regs) for k0 in range(0, a.type.shape[1], shape.k) for (m0, n0), regs in tiles]
    # A's registers are all packed before the fence: a wgmma must not follow a write of its registers
    operands_a = [reg_a.words_for((m0, k0), regs) if reg_a else [smem_a.descriptor(ctx, (m0, k0))]
                  for k0, (m0, n0), regs in steps]
    ctx.effect("simt.wgmma_fence")
    for (k0, (m0, n0), regs), operand_a in zip(steps, operands_a):
        scale = false if zero and k0 == 0 else true
        mma = ctx.effect("simt.wgmma", operand_a + [smem_b.descriptor(ctx, (k0, n0)), scale] +
                         [accs[r] for r in regs], [calc] * len(regs), atype=atype, n=n,
                         trans_a=smem_a is not None and not smem_a.k_major, trans_b=not smem_b.k_major)
        for r, v in zip(regs, mma.results):
            accs[r] = v
    ctx.effect("simt.wgmma_commit")
    if not op.attrs.get("is_async"):
        accs = list(ctx.effect("simt.wgmma_wait", accs, [calc] * len(accs), pending=0).results)
    ctx.set(op.result, [convert(ctx, x, acc_t) for x in accs])
    ctx.smem_pending = True


def is_wgmma_dot(op: Operation) -> bool:
    """A tt.dot whose result has a #mma version 3 layout."""
    t = op.result.type
    return isinstance(t, TensorType) and isinstance(t.layout, MmaLayout) and t.layout.version == 3


@lowers("gpu.dot_wait")
def _lower_dot_wait(ctx: Lowering, op: Operation) -> None:
    regs = [r for v in op.operands for r in ctx.get(v)]
    out = ctx.effect("simt.wgmma_wait", regs, [r.type for r in regs], pending=op.attrs["pending"]).results
    i = 0
    for v, r in zip(op.operands, op.results):
        count = len(ctx.get(v))
        ctx.set(r, list(out[i:i + count]))
        i += count


@lowers("gpu.fence_async_shared")
def _lower_fence(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.fence_proxy_async")


__all__ = ["lower_wgmma_dot", "is_wgmma_dot", "instruction_tiles", "DESCRIPTOR_MODE"]
