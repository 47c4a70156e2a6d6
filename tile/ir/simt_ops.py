"""The simt op set: per-thread SSA that the PTX emitter prints almost one op per instruction.

simt IR is what one thread runs. Values are scalars in virtual registers; there are no
tensors. Per-thread arithmetic reuses the tile ops on scalar types (`arith.*`, `math.fma`,
`math.sqrt`, `math.floor`, `math.ceil`, `math.trunc`, `math.rint`, `math.abs`, `math.umulhi`,
`math.mulhi`, `math.mul24`, `math.sad`, `math.clz`, `math.popc`, `math.brev`, `math.byte_perm`,
with their `rounding` attributes), structured control flow
reuses `scf.for/if/while` (the emitter turns them into labels and branches). scf.for bounds
are the same in every thread (its branches print as bra.uni); scf.if / scf.while conditions
may differ between threads, but `simt.shfl` and `simt.barrier` only appear where control
flow is uniform. Conventions:

  * i1 values live in predicate registers; 8- and 16-bit values live in 16-bit registers
    (i8 sign-extended, u8 and fp8 zero-extended); f16/bf16/fp8 appear only in moves,
    memory ops, selects and `simt.cvt` (arithmetic on them is done in f32 by the lowering).
  * Global addresses are `ptr<T>` values; shared addresses are i32 offsets in the shared
    window. Memory ops take an immediate byte `offset` added to the address register.
  * `%pred` (i1) guards a memory op or atomic: a thread whose predicate is false does not
    access memory. The emitter omits the guard when `%pred` is the constant true.

The ops:

  simt.func {sym_name, arg_names, num_warps, shared_bytes, target}  ^(%params): ... simt.return
  simt.tid : i32                          thread index in the CTA (%tid.x; CTAs are 1-D)
  simt.ctaid {axis} : i32                 %ctaid.{x,y,z}      simt.nctaid {axis} : i32
  simt.addptr %p, %i {scale} : ptr<T>     %p + ext(%i) * scale bytes (%i sign-extended if
                                          signed)
  simt.smem_addr {offset} : i32           shared-window address of dynamic shared memory + offset
  simt.ld_global %a, %pred [, %other...] {vector, offset, cache, eviction, volatile} : T...
                                          `vector` results read from consecutive addresses;
                                          where %pred is false a result is its %other (or
                                          undefined without others)
  simt.st_global %a, %pred, %v... {vector, offset, cache, eviction}
  simt.ld_shared %a, %pred {vector, offset} : T...     simt.st_shared %a, %pred, %v... {vector, offset}
  simt.cvt %x {rnd} : T                   numeric conversion with an explicit PTX rounding
                                          modifier ("", rn rz rm rp; rni rzi rmi rpi), fp8 included
  simt.pack %a, %b... : T                 2x16->32, 4x8->32 or 2x32->64 bits (first = lowest)
  simt.unpack %w : T, T...                the inverse
  simt.approx %x [, %y] {fn} : f32        ex2 lg2 sin cos rsqrt rcp tanh, div (x / y), rcp64h (f64):
                                          the .approx units (ex2 and rcp64h flush subnormals)
  simt.shfl %x, %b {mode} : T             shfl.sync.{bfly,up,down,idx}.b32, all lanes of the warp
                                          (T: i32/f32; AMD: the wave, 64 lanes on CDNA)
  simt.barrier                            bar.sync 0

Tensor cores and asynchronous copies (sm_80+; warp-wide ops run with all 32 lanes converged):

  simt.mfma %a0, %a1, %b0, %b1, %c... {instr, atype[, btype]} : f32 x (instr^2 / 64)
                                          AMD's MFMA (gfx942, gfx90a), a wave-wide op of one
                                          warp, a 64-lane wave: D = A @ B + C for one instr x instr
                                          tile; A and B four 16-bit or eight 8-bit values (atype;
                                          B btype where given) packed in two i32 each, in the
                                          lanes as tile.ir.mfma_layouts says
  simt.wmma %a x8, %b x8, %c x8 {atype} : f32 x8   RDNA3's WMMA (gfx1100), a wave-wide op of one
                                          32-lane wave: D = A @ B + C for one 16x16x16 tile; A
                                          and B sixteen 16-bit values (atype) packed in eight i32
                                          each, in the lanes as tile.ir.wmma_layouts says
  simt.mma %a..., %b..., %c... {atype} : T x4     mma.sync.aligned.<shape>.row.col: D = A @ B + C
                                          for one 16x8 tile; `atype` (MMA_SHAPES) fixes the
                                          shape: f16/bf16 m16n8k16, tf32 m16n8k8, s8/u8 m16n8k32.
                                          4 A and 2 B operands: i32 registers of packed elements
                                          (first element lowest; tf32: the bits of simt.tf32);
                                          4 accumulators: f32 (i32 for s8/u8), the fragments of
                                          the PTX ISA's "Matrix Fragments for mma.m16n8kK"
  simt.tf32 %x : i32                      cvt.rna.tf32.f32: f32 rounded to tf32 (to nearest,
                                          ties away from zero), as bits with the low 13 zero
  simt.stmatrix %addr, %w... {num, offset}   stmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16 (sm_90):
                                          lane 8i + r gives row r of matrix i; word i of lane l is
                                          its two elements at row l / 4, columns 2 (l % 4) + {0, 1}
  simt.ldmatrix %addr {num, trans, offset} : i32 x num   ldmatrix.sync.aligned.m8n8.x{1,2,4}
                                          {.trans}.shared.b16; lane 8*i + r gives the address of
                                          row r of matrix i (16 bytes, 16-byte aligned)
  simt.cp_async %dst, %src, %size, %pred {bytes, offset, src_offset}   cp.async (.cg for 16
                                          bytes, .ca for 4 and 8): copies `bytes` from global
                                          %src (+src_offset) to shared %dst (+offset), reading
                                          only the first %size (i32) bytes and zero-filling the
                                          rest; nothing where %pred (i1) is false
  simt.cp_async_commit                    cp.async.commit_group: closes the thread's open group
  simt.cp_async_wait {pending}            cp.async.wait_group N: waits until at most N of the
                                          thread's groups are in flight

Hopper's warp-group tensor cores (sm_90a; the 4 warps of a warp group run each op together):

  simt.wgmma %da, %db, %scale_d, %c... {atype, n, trans_a, trans_b} : T x n/2
                                          wgmma.mma_async.sync.aligned.m64n{n}k{K}: D = A @ B
                                          (+ C where %scale_d, an i1, is true) for one 64 x n
                                          tile, K from WGMMA_SHAPES[atype]; A (64 x K) and B
                                          (K x n) are read from shared memory through the 64-bit
                                          matrix descriptors %da, %db (u64: start address >> 4, leading
                                          and stride byte offsets >> 4, swizzle mode), K-major, or
                                          MN-major where trans_a / trans_b (f16/bf16 only); with
                                          %a0..%a3 (i32, 16-bit types) in place of %da, A comes
                                          from registers: mma.sync's m16n8k16 A fragment in each
                                          warp (16 rows each), packed in pairs; C and
                                          D: the n/2 f32 (s32: i32) registers of the PTX ISA's
                                          wgmma D fragment. Asynchronous: D may be read only
                                          after a simt.wgmma_wait retires its group, except by
                                          the next simt.wgmma of the same accumulator
  simt.wgmma_fence                        wgmma.fence: orders earlier register writes (the
                                          accumulators) before the wgmma that follow
  simt.wgmma_commit                       wgmma.commit_group: closes the group of wgmma issued
                                          since the last commit
  simt.wgmma_wait %x... {pending} : T...  wgmma.wait_group N: waits until at most N groups are
                                          in flight; %x (accumulators of retired groups) come
                                          back as the results, ready to read
  simt.fence_proxy_async                  fence.proxy.async.shared::cta: this thread's earlier
                                          writes to shared memory (st.shared, landed cp.async)
                                          become visible to wgmma (the async proxy) after a
                                          barrier

Hopper's tensor memory accelerator (sm_90a; %bar: the i32 shared address of an 8-byte mbarrier,
%tmap: a tensormap parameter (PTX: its generic address, cvta.param), %c...: i32 coordinates, innermost
first; nothing happens where the i1 %pred is false):

  simt.elect : i1                         elect.sync _|%p, -1: true in the lowest lane of the
                                          warp alone (all 32 lanes converged); the predicate
                                          of the copies below, so that ptxas issues them from
                                          one lane without a loop over distinct operands
  simt.mbarrier_init %bar, %pred {count}  mbarrier.init.shared::cta.b64: `count` arrivals per phase
  simt.mbarrier_expect_tx %bar, %pred {bytes}   mbarrier.arrive.expect_tx: arrives, and the
                                          phase also waits for `bytes` of copies to land
  simt.mbarrier_wait %bar, %phase[, %pred]   mbarrier.try_wait.parity in a loop until the phase
                                          of parity %phase (i32) has completed; with %pred, only
                                          the threads where it holds wait
  simt.mbarrier_arrive %bar               mbarrier.arrive.shared::cta.b64: every thread arrives once
  simt.mbarrier_inval %bar, %pred         mbarrier.inval.shared::cta.b64
  simt.tma_load %dst, %bar, %tmap, %pred, %c...   cp.async.bulk.tensor.Nd.shared::cluster.global
                                          .mbarrier::complete_tx::bytes: the box at %c into
                                          shared %dst (i32), completing bytes on %bar
  simt.tma_store %src, %tmap, %pred, %c...   cp.async.bulk.tensor.Nd.global.shared::cta
                                          .bulk_group: shared %src to the box at %c (clipped)
  simt.tensormap_create %slot, %pred, %warp, %staging, %base, %dim..., %stride... {box, elemtype, swizzle, fill} : tensormap
                                          thread %pred builds a tensor map in the 128 shared
                                          bytes at i32 %staging (zeros, then tensormap.replace of
                                          each field: %dim i32 and %stride i64 bytes innermost
                                          first, the innermost stride left out); the whole warp
                                          %warp copies it to the 128 bytes at global %slot with
                                          the tensormap proxy's release and acquires it; the
                                          result is %slot, for TMA copies
  simt.bulk_commit                        cp.async.bulk.commit_group
  simt.bulk_wait {pending, read}          cp.async.bulk.wait_group[.read] N: at most N groups
                                          still reading their shared memory (read), or still
                                          pending at all (their global writes done, so a later
                                          load of the same bytes sees them)
  simt.atom %a, %pred, %v {kind, sem, scope, offset} : T     old value (0 where %pred false);
                                          kind: add max min and or xor exch
  simt.red %a, %pred, %v {kind, sem, scope, offset}          atom without a result; %a may also
                                          be an i32 shared address (red.shared: tl.histogram's bins)
  simt.atom_cas %a, %pred, %cmp, %v {sem, scope, offset} : T
  simt.inline_asm %in... {asm, constraints, pure} : T...   the asm text with $N replaced by the
                                          registers (results first, then operands); each value's
                                          type is its constraint letter's (tile.ir.inline_asm):
                                          h u16, r u32, l u64, f f32, d f64
  simt.vprintf %args... {format}          device printf; args are 32/64-bit numbers or pointers
  simt.assertfail {message, file, line, function}            prints and stops the kernel
  simt.trap
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .core import Operation
from .ops import expect, expect_counts, register_op
from .types import DType, PointerType, f32, f64, i1, i32, i64, tensormap, u64

APPROX_FNS = ("ex2", "lg2", "sin", "cos", "rsqrt", "rcp", "tanh", "div", "rcp64h")
SHFL_MODES = ("bfly", "up", "down", "idx")
ATOM_KINDS = ("add", "max", "min", "and", "or", "xor", "exch")
SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("cta", "gpu", "sys")
ROUNDINGS = ("", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")


def _scalar(op: Operation, t, what: str) -> None:
    expect(op, isinstance(t, (DType, PointerType)), f"{what} must be a scalar, got {t}")


@register_op("simt.func", num_regions=1, pure=False)
def _verify_func(op: Operation) -> None:
    expect(op, isinstance(op.attrs.get("sym_name"), str), "missing sym_name")
    expect(op, isinstance(op.attrs.get("num_warps"), int), "missing num_warps")
    term = op.regions[0].block.terminator
    expect(op, term is not None and term.name == "simt.return", "function must end in simt.return")
    for a in op.regions[0].block.args:
        if a.type != tensormap:  # a TMA tensor map: passed by value, read by address
            _scalar(op, a.type, "parameter")


register_op("simt.return", terminator=True, pure=False)(None)


@register_op("simt.tid")
def _verify_tid(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, op.result.type == i32, "result must be i32")


@register_op("simt.ctaid")
@register_op("simt.nctaid")
def _verify_ctaid(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, op.attrs.get("axis") in (0, 1, 2) and op.result.type == i32, "needs axis 0..2 and an i32 result")


@register_op("simt.addptr")
def _verify_addptr(op: Operation) -> None:
    expect_counts(op, 2, 1)
    p, i = op.operand(0).type, op.operand(1).type
    expect(op, isinstance(p, PointerType) and op.result.type == p, "operand and result are the same pointer type")
    expect(op, isinstance(i, DType) and i.is_integer and i.bits in (32, 64), f"bad index {i}")
    expect(op, isinstance(op.attrs.get("scale"), int), "missing scale")


@register_op("simt.smem_addr")
def _verify_smem_addr(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, isinstance(op.attrs.get("offset"), int) and op.result.type == i32, "needs offset and an i32 result")


def _verify_access(op: Operation, shared: bool, load: bool) -> None:
    vec = op.attrs.get("vector", 1)
    expect(op, vec in (1, 2, 4), f"vector must be 1, 2 or 4, got {vec}")
    a = op.operand(0).type
    expect(op, a == i32 if shared else isinstance(a, PointerType), "bad address type")
    expect(op, op.num_operands >= 2 and op.operand(1).type == i1, "second operand is the i1 predicate")
    vals = list(op.results) if load else list(op.operands[2:])
    expect(op, len(vals) == vec, f"expects {vec} values, got {len(vals)}")
    types = {v.type for v in vals}
    expect(op, len(types) == 1, "values must share one type")
    t = types.pop()
    expect(op, isinstance(t, (DType, PointerType)) and t != i1, f"cannot access {t} in memory")
    expect(op, vec * _bits(t) <= 128, "at most 16 bytes per access")
    if load:
        others = op.operands[2:]
        expect(op, len(others) in (0, vec) and all(o.type == t for o in others), "others must match the results")


@register_op("simt.ld_global", pure=False)
def _verify_ld_global(op: Operation) -> None:
    _verify_access(op, shared=False, load=True)


@register_op("simt.st_global", pure=False)
def _verify_st_global(op: Operation) -> None:
    _verify_access(op, shared=False, load=False)


@register_op("simt.ld_shared", pure=False)
def _verify_ld_shared(op: Operation) -> None:
    _verify_access(op, shared=True, load=True)


@register_op("simt.st_shared", pure=False)
def _verify_st_shared(op: Operation) -> None:
    _verify_access(op, shared=True, load=False)


@register_op("simt.cvt")
def _verify_cvt(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, isinstance(src, DType) and isinstance(dst, DType) and src != i1 and dst != i1,
           "cvt converts numbers (i1 goes through setp/selp)")
    expect(op, op.attrs.get("rnd", "") in ROUNDINGS, f"bad rounding {op.attrs.get('rnd')!r}")


def _bits(t) -> int:
    return 64 if isinstance(t, PointerType) else t.bits


@register_op("simt.pack")
def _verify_pack(op: Operation) -> None:
    expect(op, len(op.results) == 1 and op.num_operands in (2, 4), "pack takes 2 or 4 values")
    parts = [_bits(v.type) for v in op.operands]
    expect(op, len(set(parts)) == 1 and parts[0] * len(parts) == _bits(op.result.type) and parts[0] >= 8,
           "parts must fill the result exactly")


@register_op("simt.unpack")
def _verify_unpack(op: Operation) -> None:
    expect(op, op.num_operands == 1 and len(op.results) in (2, 4), "unpack gives 2 or 4 values")
    parts = [_bits(r.type) for r in op.results]
    expect(op, len(set(parts)) == 1 and parts[0] * len(parts) == _bits(op.operand(0).type) and parts[0] >= 8,
           "parts must fill the operand exactly")


@register_op("simt.approx")
def _verify_approx(op: Operation) -> None:
    fn = op.attrs.get("fn")
    expect(op, fn in APPROX_FNS, f"fn must be one of {APPROX_FNS}")
    expect_counts(op, 2 if fn == "div" else 1, 1)
    t = f64 if fn == "rcp64h" else f32
    expect(op, all(v.type == t for v in op.operands) and op.result.type == t, f"approx {fn} is on {t}")


@register_op("simt.shfl", pure=False)
def _verify_shfl(op: Operation) -> None:
    expect_counts(op, 2, 1)
    expect(op, op.attrs.get("mode") in SHFL_MODES, f"mode must be one of {SHFL_MODES}")
    t = op.operand(0).type
    expect(op, t in (i32, f32) and op.result.type == t and op.operand(1).type == i32, "shfl moves 32-bit values")


register_op("simt.barrier", pure=False)(None)


@dataclass(frozen=True)
class MmaShape:
    """One mma.sync form: its shape, the element type of A/B and of C/D, elements per 32-bit operand."""

    shape: str
    k: int
    ctype: str
    k_width: int


MMA_SHAPES = {"f16": MmaShape("m16n8k16", 16, "f32", 2), "bf16": MmaShape("m16n8k16", 16, "f32", 2),
              "tf32": MmaShape("m16n8k8", 8, "f32", 1), "s8": MmaShape("m16n8k32", 32, "s32", 4),
              "u8": MmaShape("m16n8k32", 32, "s32", 4)}
MMA_OPERANDS = (4, 2, 4)  # 32-bit registers of A, B and C per thread, the same for every shape


@register_op("simt.mma")
def _verify_mma(op: Operation) -> None:
    shape = MMA_SHAPES.get(op.attrs.get("atype"))
    expect(op, shape is not None, f"atype must be one of {sorted(MMA_SHAPES)}")
    na, nb, nc = MMA_OPERANDS
    expect_counts(op, na + nb + nc, nc)
    acc = f32 if shape.ctype == "f32" else i32
    expect(op, all(v.type == i32 for v in op.operands[:na + nb]), "A and B operands are packed i32 registers")
    expect(op, all(v.type == acc for v in op.operands[na + nb:]) and all(r.type == acc for r in op.results),
           f"accumulators and results are {acc}")


MFMA_RESULT_SIZES = (32, 16)   # instr: 32x32 or 16x16 (K: tile.ir.mfma_layouts)
MFMA_TYPES = ("f16", "bf16", "f8e4b8", "f8e5b16")
MFMA_FP8_TYPES = ("f8e4b8", "f8e5b16")   # B may be the other of these (btype; the mixed fp8 / bf8 MFMA)


@register_op("simt.mfma")
def _verify_mfma(op: Operation) -> None:
    instr, atype = op.attrs.get("instr"), op.attrs.get("atype")
    expect(op, instr in MFMA_RESULT_SIZES and atype in MFMA_TYPES,
           f"instr must be one of {MFMA_RESULT_SIZES} and atype one of {MFMA_TYPES}")
    btype = op.attrs.get("btype", atype)
    expect(op, btype == atype or atype in MFMA_FP8_TYPES and btype in MFMA_FP8_TYPES,
           f"btype differs from atype only between {MFMA_FP8_TYPES}")
    acc = instr * instr // 64
    expect_counts(op, 4 + acc, acc)
    expect(op, all(v.type == i32 for v in op.operands[:4]), "A and B are two packed i32 registers each")
    expect(op, all(v.type == f32 for v in op.operands[4:]) and all(r.type == f32 for r in op.results),
           "accumulators and results are f32")


WMMA_TYPES = ("f16", "bf16")
WMMA_WORDS = 8   # i32 words of A and of B, and f32 values of C and D, in each lane (tile.ir.wmma_layouts)


@register_op("simt.wmma")
def _verify_wmma(op: Operation) -> None:
    expect(op, op.attrs.get("atype") in WMMA_TYPES, f"atype must be one of {WMMA_TYPES}")
    expect_counts(op, 3 * WMMA_WORDS, WMMA_WORDS)
    expect(op, all(v.type == i32 for v in op.operands[:2 * WMMA_WORDS]),
           f"A and B are {WMMA_WORDS} packed i32 registers each")
    expect(op, all(v.type == f32 for v in op.operands[2 * WMMA_WORDS:]) and all(r.type == f32 for r in op.results),
           "accumulators and results are f32")


@register_op("simt.tf32")
def _verify_tf32(op: Operation) -> None:
    expect_counts(op, 1, 1)
    expect(op, op.operand(0).type == f32 and op.result.type == i32, "rounds an f32 to tf32 bits in an i32")


@register_op("simt.ldmatrix", pure=False)
def _verify_ldmatrix(op: Operation) -> None:
    num = op.attrs.get("num")
    expect(op, num in (1, 2, 4) and op.num_operands == 1 and len(op.results) == num, "num must be 1, 2 or 4")
    expect(op, op.operand(0).type == i32 and all(r.type == i32 for r in op.results),
           "a shared address in, i32 registers out")
    expect(op, isinstance(op.attrs.get("trans", False), bool), "trans is a bool")


@register_op("simt.stmatrix", pure=False)
def _verify_stmatrix(op: Operation) -> None:
    num = op.attrs.get("num")
    expect(op, num in (1, 2, 4) and op.num_operands == 1 + num and not op.results, "num must be 1, 2 or 4")
    expect(op, all(v.type == i32 for v in op.operands), "a shared address and i32 words in, nothing out")


@register_op("simt.cp_async", pure=False)
def _verify_cp_async(op: Operation) -> None:
    expect_counts(op, 4, 0)
    dst, src, size, pred = (v.type for v in op.operands)
    expect(op, dst == i32 and isinstance(src, PointerType) and size == i32 and pred == i1,
           "operands: shared address (i32), global pointer, source size (i32), predicate (i1)")
    expect(op, op.attrs.get("bytes") in (4, 8, 16), "bytes must be 4, 8 or 16")


register_op("simt.cp_async_commit", pure=False)(None)


@register_op("simt.cp_async_wait", pure=False)
def _verify_cp_async_wait(op: Operation) -> None:
    expect_counts(op, 0, 0)
    pending = op.attrs.get("pending")
    expect(op, isinstance(pending, int) and pending >= 0, "pending must be an int >= 0")


@dataclass(frozen=True)
class WgmmaShape:
    """One wgmma.mma_async form (m64nNkK for every N in 8..256 step 8): the K of one instruction,
    the accumulator's PTX type, and whether the operands may be MN-major in shared memory (the
    transposed layouts exist for .f16/.bf16 only: every other type reads A and B K-major)."""

    k: int
    ctype: str
    mn_major: bool


WGMMA_SHAPES = {"f16": WgmmaShape(16, "f32", True), "bf16": WgmmaShape(16, "f32", True),
                "tf32": WgmmaShape(8, "f32", False), "e4m3": WgmmaShape(32, "f32", False),
                "e5m2": WgmmaShape(32, "f32", False), "s8": WgmmaShape(32, "s32", False),
                "u8": WgmmaShape(32, "s32", False)}


def wgmma_atype(element: DType, input_precision: str) -> Optional[str]:
    """The WGMMA_SHAPES key of a tt.dot on operands of type `element`, or None (no wgmma)."""
    if element.name == "f32":
        return "tf32" if input_precision == "tf32" else None
    return {"f16": "f16", "bf16": "bf16", "f8e4nv": "e4m3", "f8e5": "e5m2", "i8": "s8", "u8": "u8"}.get(element.name)


@register_op("simt.wgmma", pure=False)
def _verify_wgmma(op: Operation) -> None:
    shape = WGMMA_SHAPES.get(op.attrs.get("atype"))
    expect(op, shape is not None, f"atype must be one of {sorted(WGMMA_SHAPES)}")
    n = op.attrs.get("n")
    expect(op, isinstance(n, int) and 8 <= n <= 256 and n % 8 == 0, "n must be a multiple of 8 in 8..256")
    registers = op.num_operands == 6 + n // 2  # A in four i32 registers, not a descriptor
    expect_counts(op, 6 + n // 2 if registers else 3 + n // 2, n // 2)
    a_types = [i32] * 4 if registers else [u64]
    expect(op, [v.type for v in op.operands[:len(a_types) + 2]] == a_types + [u64, i1],
           "operands start with A's u64 matrix descriptor (or four i32 registers), B's and the i1 scale-d")
    expect(op, not registers or (shape.mn_major and not op.attrs.get("trans_a", False)),
           "A from registers is f16/bf16 and has no transpose")
    acc = f32 if shape.ctype == "f32" else i32
    expect(op, all(v.type == acc for v in op.operands[-(n // 2):]) and all(r.type == acc for r in op.results),
           f"accumulators and results are {acc}")
    for key in ("trans_a", "trans_b"):
        flag = op.attrs.get(key, False)
        expect(op, isinstance(flag, bool) and (shape.mn_major or not flag),
               f"{key} is a bool, true only for f16/bf16 (MN-major operands)")


register_op("simt.wgmma_fence", pure=False)(None)
register_op("simt.wgmma_commit", pure=False)(None)
register_op("simt.fence_proxy_async", pure=False)(None)


@register_op("simt.wgmma_wait", pure=False)
def _verify_wgmma_wait(op: Operation) -> None:
    pending = op.attrs.get("pending")
    expect(op, isinstance(pending, int) and pending >= 0, "pending must be an int >= 0")
    expect(op, [v.type for v in op.operands] == [r.type for r in op.results], "results are the operands")


register_op("simt.trap", pure=False)(None)


def _verify_sem_scope(op: Operation) -> None:
    expect(op, op.attrs.get("sem", "relaxed") in SEMS, f"sem must be one of {SEMS}")
    expect(op, op.attrs.get("scope", "gpu") in SCOPES, f"scope must be one of {SCOPES}")
    expect(op, isinstance(op.operand(0).type, PointerType) and op.operand(1).type == i1,
           "operands start with a global address and an i1 predicate")


@register_op("simt.atom", pure=False)
def _verify_atom(op: Operation) -> None:
    expect_counts(op, 3, 1)
    _verify_sem_scope(op)
    expect(op, op.attrs.get("kind") in ATOM_KINDS, f"kind must be one of {ATOM_KINDS}")
    expect(op, op.result.type == op.operand(2).type, "result has the value's type")


@register_op("simt.red", pure=False)
def _verify_red(op: Operation) -> None:
    expect_counts(op, 3, 0)
    if op.operand(0).type == i32:  # a shared address
        expect(op, op.operand(1).type == i1 and op.attrs.get("sem", "relaxed") in SEMS and op.attrs.get("scope") == "cta",
               "red.shared needs an i1 predicate and scope cta")
    else:
        _verify_sem_scope(op)
    expect(op, op.attrs.get("kind") in ATOM_KINDS and op.attrs.get("kind") != "exch", "bad kind for red")


@register_op("simt.atom_cas", pure=False)
def _verify_atom_cas(op: Operation) -> None:
    expect_counts(op, 4, 1)
    _verify_sem_scope(op)
    t = op.result.type
    expect(op, op.operand(2).type == t and op.operand(3).type == t, "cmp, value and result share one type")
    expect(op, _bits(t) in (16, 32, 64), "cas works on 16, 32 or 64 bits")


@register_op("simt.inline_asm", traits=("pure_attr",))
def _verify_inline_asm(op: Operation) -> None:
    from .inline_asm import parse_constraints
    from .types import f64, u16, u32, u64

    letter_type = {"h": u16, "r": u32, "l": u64, "f": f32, "d": f64}
    try:
        parsed = parse_constraints(op.attrs.get("constraints", ""))
    except ValueError as e:
        expect(op, False, str(e))
    expect(op, isinstance(op.attrs.get("asm"), str) and isinstance(op.attrs.get("pure"), bool),
           "needs a string attr asm and a bool attr pure")
    expect(op, [r.type for r in op.results] == [letter_type[x] for x in parsed.outputs],
           "results must have the types of the output constraints")
    expect(op, [v.type for v in op.operands] == [letter_type[x] for x in parsed.inputs],
           "operands must have the types of the input constraints")


@register_op("simt.vprintf", pure=False)
def _verify_vprintf(op: Operation) -> None:
    expect(op, isinstance(op.attrs.get("format"), str) and not op.results, "needs a format and no results")
    for v in op.operands:
        t = v.type
        expect(op, isinstance(t, PointerType) or (isinstance(t, DType) and t.bits in (32, 64)),
               f"printf arguments are 32/64-bit, got {t}")


@register_op("simt.assertfail", pure=False)
def _verify_assertfail(op: Operation) -> None:
    expect_counts(op, 0, 0)
    for key in ("message", "file", "function"):
        expect(op, isinstance(op.attrs.get(key), str), f"missing {key}")
    expect(op, isinstance(op.attrs.get("line"), int), "missing line")


# ------------------------------------------------------------------ tensor memory accelerator


def _verify_mbarrier_pred(op: Operation) -> None:
    expect_counts(op, 2, 0)
    expect(op, [v.type for v in op.operands] == [i32, i1], "operands: mbarrier address (i32), predicate (i1)")


@register_op("simt.elect", pure=False)
def _verify_elect(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, op.result.type == i1, "result must be i1")


@register_op("simt.mbarrier_init", pure=False)
def _verify_mbarrier_init(op: Operation) -> None:
    _verify_mbarrier_pred(op)
    expect(op, isinstance(op.attrs.get("count"), int) and op.attrs["count"] > 0, "count must be an int > 0")


@register_op("simt.mbarrier_expect_tx", pure=False)
def _verify_mbarrier_expect_tx(op: Operation) -> None:
    _verify_mbarrier_pred(op)
    expect(op, isinstance(op.attrs.get("bytes"), int) and op.attrs["bytes"] > 0, "bytes must be an int > 0")


register_op("simt.mbarrier_inval", pure=False)(_verify_mbarrier_pred)


@register_op("simt.mbarrier_wait", pure=False)
def _verify_mbarrier_wait(op: Operation) -> None:
    expect(op, [v.type for v in op.operands] in ([i32, i32], [i32, i32, i1]) and not op.results,
           "operands: mbarrier address (i32), phase parity (i32), optional predicate (i1)")


@register_op("simt.mbarrier_arrive", pure=False)
def _verify_mbarrier_arrive(op: Operation) -> None:
    expect_counts(op, 1, 0)
    expect(op, op.operand(0).type == i32, "operand: mbarrier address (i32)")


def _verify_tma_copy(op: Operation, head: list) -> None:
    expect(op, not op.results and len(head) + 1 <= op.num_operands <= len(head) + 5,
           f"expects {len(head)} operands and 1 to 5 coordinates, no results")
    expect(op, [v.type for v in op.operands[:len(head)]] == head, f"operands start with {head}")
    expect(op, all(v.type == i32 for v in op.operands[len(head):]), "coordinates are i32")


register_op("simt.tma_load", pure=False)(lambda op: _verify_tma_copy(op, [i32, i32, tensormap, i1]))
register_op("simt.tma_store", pure=False)(lambda op: _verify_tma_copy(op, [i32, tensormap, i1]))
register_op("simt.bulk_commit", pure=False)(None)


@register_op("simt.tensormap_create", pure=False)
def _verify_tensormap_create(op: Operation) -> None:
    box = op.attrs.get("box")
    expect(op, isinstance(box, list) and 1 <= len(box) <= 5, f"box must be a list of 1 to 5 ints, got {box!r}")
    rank = len(box)
    expect_counts(op, 5 + 2 * rank - 1, 1)
    expect(op, isinstance(op.operand(0).type, PointerType) and op.operand(1).type == i1 and op.operand(2).type == i1
           and op.operand(3).type == i32 and isinstance(op.operand(4).type, PointerType),
           "operands start with the slot, the thread and warp predicates, the shared staging address, the base")
    expect(op, all(v.type == i32 for v in op.operands[5:5 + rank]), "dimensions are i32")
    expect(op, all(v.type == i64 for v in op.operands[5 + rank:]), "strides are i64 bytes")
    expect(op, op.result.type == tensormap, "the result is a tensormap")


@register_op("simt.bulk_wait", pure=False)
def _verify_bulk_wait(op: Operation) -> None:
    expect_counts(op, 0, 0)
    pending = op.attrs.get("pending")
    expect(op, isinstance(pending, int) and pending >= 0, "pending must be an int >= 0")
    expect(op, isinstance(op.attrs.get("read"), bool), "read must be a bool")
