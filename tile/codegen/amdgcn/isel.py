"""Instruction selection: a simt.func -> MIR on virtual registers for gfx942 and gfx90a (wave64)
and gfx1100 (wave32).

Execution model. The simt IR is what one thread runs; `simt.tid` is the thread's index in
its CTA, `num_warps * wave size` threads: the lowering's warp is one wave of the target, 64
lanes on CDNA (gfx942, gfx90a), 32 on RDNA3 (gfx1100), so lane = tid % wave size and wave =
tid / wave size. On every target the CTA is a workgroup of that many work-items. Values
the same in every lane (kernel arguments, program ids, constants, integer arithmetic on them:
`uniform_values`) live in SGPRs and are computed once per wave by the scalar unit; the rest live
in VGPRs. An i1 is a lane mask in an SGPR pair on wave64, in one SGPR on wave32 (bit i: lane
i; the mask forms of the instructions are isa.LANE_MASK_OPCODES), written by v_cmp (or
s_cselect_b64 for a uniform compare); a predicated memory access runs with EXEC narrowed to
its mask (gfx942 shown; gfx1100 prints its own names, isa.SPELLING):

Before (simt, tutorial 01):

    %0 = simt.ctaid {axis = 0} : i32
    %2 = arith.mul %0, %1 : i32                    (%1 = 1024)
    %3 = simt.tid : i32
    %12 = arith.add %2, %5 : i32                   (%5 = %3 << 2)
    %20 = arith.cmp %12, %n_elements {predicate = "lt"} : i1
    %28 = simt.addptr %x_ptr, %12 {scale = 4} : ptr<f32>
    %29 = simt.ld_global %28, %20 {offset = 0, vector = 1} : f32

After (MIR; %s2 is the workgroup id the hardware puts in s2, %s3 the loaded n_elements):

    s_mul_i32 %s5.0, %s2.0, %s4.0                  ; uniform: the scalar unit
    v_bfe_u32 %v1.0, %v0.0, 0, 10                  ; the work-item id
    v_lshlrev_b32 %v6.0, 2, %v1.0
    v_add_u32 %v7.0, %s5.0, %v6.0
    v_cmp_lt_i32 %s8.0:1, %v7.0, %s3.0             ; one bit per lane
    ...
    s_and_saveexec_b64 %s11.0:1, %s8.0:1           ; lanes where %20 is false sit out
    global_load_dword %v12.0, %v10.0:1, off
    s_mov_b64 exec, %s11.0:1

A masked load whose mask is its own index's bound check (`offs < n`, other 0 or absent) is a
buffer load instead, and a store with such a mask a buffer store: no EXEC narrowing, the
hardware reads 0 (writes nothing) past the bound (buffer_access). A global atomic with such a
mask is a buffer atomic (buffer_atomic), returning where its old value is read.

Beyond elementwise code: MFMA (simt.mfma: tt.dot on f16/bf16), WMMA on gfx1100 (simt.wmma,
its operand tuples built where they are loaded: place_wmma_operands), LDS accesses
(ds_read/ds_write; simt.smem_addr is the LDS byte address itself), simt.barrier (drain,
s_barrier), simt.shfl within the wave (the lowering's warp) as ds_swizzle_b32 or
ds_bpermute_b32, scf.for with uniform bounds (an SGPR induction variable and a backward branch),
scf.if as EXEC masking without branches, and scf.while as a loop that narrows EXEC to the lanes
still running.

Live ranges are shaped here, where the simt IR's structure is still visible: an MFMA's loop-
carried accumulators are its own C/D tuple (carried_registers), a carried pointer advances in
its own register (pointer_updates), and pure ops used only after a loop are selected after it
(sunk_past_loops).

f32 division and square root round correctly unless marked approximate (divide_f32, sqrt_f32),
f64 division always (divide_f64);
64-bit integers multiply from 32-bit products and divide in a 64-step loop (divide_int64).
Subnormal f32 and f16 values are kept (the kernel descriptor's denorm modes), f32 -> f16 rounds
to nearest even (the MODE register's default). Shifts use the low 5 (6) bits of the amount,
as the hardware does. Global atomics on 32 and 64 bits (the _x2 forms, f64's add) follow the
target's memory model (isa.MEMORY_ORDER). An op outside the selected subset (LDS atomics other
than an integer add, i1 values carried by scf.while...) raises `UnsupportedOnTarget`, naming it
and the target, which tile.compiler reports as a tile.CompilationError at the user's line.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ...ir.core import Location, Operation, Value
from ...ir.types import DType, PointerType, i1
from ..floats import float_bits
from ..math_lib import INV_TWO_PI
from .isa import (ATOMIC_RETURN_BIT, BUFFER_ATOMICS, BUFFER_ATOMICS_64, BUFFER_BASE_HIGH_BITS, BUFFER_OFFSET_RANGE,
                  BUFFER_RESOURCE_CONFIG, DPP_MERGE_SUFFIX, DS_OFFSET_RANGE, GLOBAL_ATOMICS, GLOBAL_ATOMICS_64,
                  GLOBAL_OFFSET_RANGE, INLINE_FLOATS, LANE_MASK_OPCODES, MEMORY_ORDER, RETURNING_SUFFIX, STORE_COUNTER,
                  SWIZZLE_LANES, WAVE_SIZE, dpp_butterfly, info, mfma_shape, swizzle_offset, user_sgpr_count,
                  wmma_shape)
from .mir import EXEC, NULL, OFF, VCC, Imm, Label, MInst, Operand, Reg, Special, Sub

KERNARG_POINTER_SGPR = 0   # .amdhsa_user_sgpr_kernarg_segment_ptr: the first user SGPRs
WORKITEM_ID_BITS = 10      # gfx90a and later pack the x, y, z ids in v0, 10 bits each
REMAT_WINDOW = 48          # instructions a lane mask or constant SGPR is reused for before it is recomputed


# which GLOBAL_ATOMICS rows take a value of each kind of number
_ATOMIC_OPERANDS = {"float": ("float", "any"), "signed": ("signed", "int", "any"),
                    "unsigned": ("unsigned", "int", "any")}
_ATOMIC_TABLES = {"global": (GLOBAL_ATOMICS, GLOBAL_ATOMICS_64), "buffer": (BUFFER_ATOMICS, BUFFER_ATOMICS_64)}


def atomic_opcode(op: Operation, segment: str, target: str) -> Optional[str]:
    """The row of simt.atom / simt.red / simt.atom_cas `op` on a 32- or 64-bit global value, as a
    `segment` ("global" or "buffer") instruction of `target` (a buffer atomic's non-returning
    row), or None where the target has none."""
    t = op.operand(op.num_operands - 1).type
    if isinstance(t, PointerType) or t.bits not in (32, 64):
        return None
    wide = t.bits == 64
    if op.name == "simt.atom_cas":
        opcode: Optional[str] = f"{segment}_atomic_cmpswap" + ("_x2" if wide else "")
    else:
        number = "float" if t.is_floating else "signed" if _signed(t) else "unsigned"
        opcode = next((name for name, (k, n) in _ATOMIC_TABLES[segment][wide].items()
                       if k == op.attrs["kind"] and n in _ATOMIC_OPERANDS[number]), None)
    return opcode if opcode is not None and target in info(opcode).targets else None


class UnsupportedOnTarget(NotImplementedError):
    """A simt op (or type) the AMDGCN backend does not select yet, naming the op and the target,
    at the op's source location `loc` (the user's line that produced it). tile.compiler reports
    it as a tile.CompilationError at that line (codegen does not import the frontend)."""

    def __init__(self, message: str, loc: Optional[Location] = None):
        where = f"{loc.file}:{loc.line}:{loc.col}: " if loc is not None else ""
        super().__init__(where + message)
        self.message, self.loc = message, loc


@dataclass
class KernArg:
    """One argument of the kernel's kernarg segment, as the code-object metadata lists it."""

    name: str
    offset: int
    size: int
    value_kind: str          # "global_buffer", "by_value" or a hidden_* kind
    address_space: Optional[str] = None


@dataclass
class Selection:
    """The MIR of one kernel and what its descriptor must say."""

    name: str
    insts: list[MInst]
    kernargs: list[KernArg]
    kernarg_size: int
    workgroup_id_axes: tuple[int, ...]
    workgroup_size: int
    lds_bytes: int
    regs: list[Reg] = field(default_factory=list)

    def new(self, bank: str, size: int = 1) -> Reg:
        """One more virtual register (the register allocator's spill VGPRs and reloads)."""
        reg = Reg(bank, size, len(self.regs))
        self.regs.append(reg)
        return reg


# Ops whose result is the same in every lane when their operands are; everything else that
# produces a value (simt.tid, loads, atomics, shuffles) differs between lanes.
_UNIFORM_SOURCES = ("arith.constant", "simt.ctaid", "simt.nctaid")
_LANEWISE = ("simt.cvt", "simt.addptr", "simt.approx", "simt.pack", "simt.unpack")


def walk(ops) -> Any:
    """Every op of `ops` and of their regions, in program order."""
    for op in ops:
        yield op
        for region in op.regions:
            for block in region.blocks:
                yield from walk(block.ops)


def wave_uniform_values(func: Operation) -> set[Value]:
    """The values the same in every lane of a wave at run time: uniform_values widened by
    loop-carried values (an scf.for's or scf.while's whose first value and every yielded one
    are, an scf.if's whose condition and branches' values are) and by global loads of one
    address under a uniform mask (one instruction reads it for all lanes). A greatest fixpoint:
    every such value starts uniform and is dropped once one of its sources is not. A grouped
    GEMM's loop over tiles, `while tile_idx >= end and tile_idx < end + num_tiles`, has such a
    condition: no lane leaves before the others, so its MFMAs run on a whole wave.

        %t = scf.while %ctaid { ^(%i): %c = arith.cmp %i, %n {lt}; scf.condition %c, %i }
                              { ^(%j): %k = arith.add %j, %3; scf.yield %k }
        uniform: %ctaid %n %3, then %i %c %j %k %t (none of their sources is per-lane)"""
    block = func.regions[0].block
    sources: dict[Value, list[Value]] = {v: [] for v in uniform_values(func)}
    for op in walk(block.ops):
        pure = op.name.startswith(("arith.", "math.")) or op.name in _LANEWISE or op.name == "simt.ld_global"
        if pure and not op.regions:
            for r in op.results:
                sources.setdefault(r, list(op.operands))
        elif op.name == "scf.for":
            body = op.regions[0].block
            bounds, inits, yielded = list(op.operands[:3]), op.operands[3:], body.ops[-1].operands
            for arg, result, init, y in zip(body.args[1:], op.results, inits, yielded):
                sources[arg] = sources[result] = [init, y, *bounds]
        elif op.name == "scf.while":
            before, after = op.regions[0].block, op.regions[1].block
            condition = before.ops[-1]
            for arg, init, y in zip(before.args, op.operands, after.ops[-1].operands):
                sources[arg] = [init, y]
            for arg, result, forwarded in zip(after.args, op.results, condition.operands[1:]):
                sources[arg] = sources[result] = [forwarded, condition.operand(0)]
        elif op.name == "scf.if":
            branches = [region.block.ops[-1].operands for region in op.regions]
            for k, result in enumerate(op.results):
                sources[result] = [op.operand(0), *(yielded[k] for yielded in branches)]
    uniform = set(sources)
    changed = True
    while changed:
        changed = False
        for value, needed in sources.items():
            if value in uniform and any(v not in uniform for v in needed):
                uniform.discard(value)
                changed = True
    return uniform


def uniform_values(func: Operation) -> set[Value]:
    """The values of `func` that are the same in every thread of a CTA: its parameters, program
    ids, constants, pure per-thread ops (arith, math, cvt, addptr...) of uniform values, and the
    induction variable of an scf.for (its bounds are uniform); loop-carried values are not."""
    block = func.regions[0].block
    uniform: set[Value] = set(block.args)
    for op in walk(block.ops):
        pure = op.name.startswith(("arith.", "math.")) or op.name in _LANEWISE
        if op.name in _UNIFORM_SOURCES or (pure and not op.regions and all(v in uniform for v in op.operands)):
            uniform.update(op.results)
        if op.name == "scf.for":
            uniform.add(op.regions[0].block.args[0])
    return uniform


def _sinkable(op: Operation) -> bool:
    """A pure op whose place only sets its operands' and results' live ranges (no memory, no
    regions, no lane masks: compares are selected where they are used)."""
    pure = op.name.startswith(("arith.", "math.")) or op.name in _LANEWISE
    return pure and not op.regions and op.name != "arith.cmp" and bool(op.results)


def sunk_past_loops(ops: list[Operation]) -> list[Operation]:
    """`ops` (one block) with each pure op that is used only after a later loop moved to just
    after that loop (chains of them together, in their order), so that its results are not
    live across the loop. The lowering computes a kernel's store offsets and masks before its
    K loop (a matmul's epilogue): sunk, they free their registers for the loop.

        %o = arith.mul %m, %s           scf.for ... { ... }
        scf.for ... { ... }        ->   %o = arith.mul %m, %s
        simt.st_global %p, %o           simt.st_global %p, %o
    """
    order = list(ops)
    for loop in [op for op in ops if op.name in ("scf.for", "scf.while")]:
        position = {op: k for k, op in enumerate(order)}

        def top_level(op: Operation) -> Operation:
            while op not in position:
                op = op.parent_op
            return op

        moved: set[Operation] = set()
        for op in reversed(order[:position[loop]]):
            if _sinkable(op) and all(position[top_level(user)] > position[loop] or top_level(user) in moved
                                     for result in op.results for user, _ in result.uses):
                moved.add(op)
        if moved:
            kept = [op for op in order if op not in moved]
            after = kept.index(loop) + 1
            order = kept[:after] + [op for op in order if op in moved] + kept[after:]
    return order


def _bus_key(o: Operand) -> Any:
    return o.name if isinstance(o, Special) else (o.reg.id, o.start, o.count)


def _bits(t: Any) -> int:
    return 64 if isinstance(t, PointerType) else t.bits


def dwords(t: Any) -> int:
    """32-bit registers of a value of simt type `t` (an i1 is a 64-lane mask: two SGPRs)."""
    if isinstance(t, PointerType):
        return 2
    return 2 if t.bits in (1, 64) else 1


def _is_int(t: Any) -> bool:
    return isinstance(t, PointerType) or (isinstance(t, DType) and t.is_integer and t.bits > 1)


def _signed(t: Any) -> bool:
    return isinstance(t, DType) and t.is_signed


def constant_bits(value: Any, t: DType) -> int:
    """The register bits of constant `value` of type `t` (i1 true: every lane's bit). An 8- or
    16-bit integer sits extended to 32 bits in its own signedness, as its loads leave it (an
    i8 -1 is 0xffffffff, a u8 255 is 0xff)."""
    if t.bits == 1:
        return -1 if value else 0
    if t.is_floating:
        if t.name == "f32":
            return struct.unpack("<I", struct.pack("<f", value))[0]
        if t.name == "f16":
            return int(np.array(value, np.float16).view(np.uint16))
        if t.name == "bf16":
            return struct.unpack("<I", struct.pack("<f", value))[0] >> 16
        if t.name == "f64":
            return struct.unpack("<Q", struct.pack("<d", value))[0]
        if t.bits == 8:   # an fp8 code in the low byte, as its byte loads leave it
            return float_bits(value, t)
        raise UnsupportedOnTarget(f"constants of type {t}")
    if t.bits < 32:
        narrow = int(value) & ((1 << t.bits) - 1)
        if _signed(t) and narrow >> (t.bits - 1):
            narrow -= 1 << t.bits
        return narrow & 0xFFFFFFFF
    return int(value) & ((1 << t.bits) - 1) if t.bits < 64 or value >= 0 else int(value)


# int32 binary ops: (scalar, vector, vector takes the operands swapped); keyed by (name,
# signedness) where signedness matters, else (name, None)
_INT32_BINARY = {
    ("arith.add", None): ("s_add_u32", "v_add_u32", False),
    ("arith.sub", None): ("s_sub_u32", "v_sub_u32", False),
    ("arith.mul", None): ("s_mul_i32", "v_mul_lo_u32", False),
    ("arith.and", None): ("s_and_b32", "v_and_b32", False),
    ("arith.or", None): ("s_or_b32", "v_or_b32", False),
    ("arith.xor", None): ("s_xor_b32", "v_xor_b32", False),
    ("arith.shl", None): ("s_lshl_b32", "v_lshlrev_b32", True),
    ("arith.shr", True): ("s_ashr_i32", "v_ashrrev_i32", True),
    ("arith.shr", False): ("s_lshr_b32", "v_lshrrev_b32", True),
    ("arith.max", True): ("s_max_i32", "v_max_i32", False),
    ("arith.max", False): ("s_max_u32", "v_max_u32", False),
    ("arith.min", True): ("s_min_i32", "v_min_i32", False),
    ("arith.min", False): ("s_min_u32", "v_min_u32", False),
    ("math.umulhi", None): ("s_mul_hi_u32", "v_mul_hi_u32", False),
    ("math.mulhi", True): ("s_mul_hi_i32", "v_mul_hi_i32", False),
    ("math.mulhi", False): ("s_mul_hi_u32", "v_mul_hi_u32", False),
}
_F32_BINARY = {"arith.add": "v_add_f32", "arith.sub": "v_sub_f32", "arith.mul": "v_mul_f32",
               "arith.max": "v_max_f32", "arith.min": "v_min_f32"}
_F64_BINARY = {"arith.add": "v_add_f64", "arith.mul": "v_mul_f64", "arith.max": "v_max_f64", "arith.min": "v_min_f64"}
_ROUND_F32 = {"math.floor": "v_floor_f32", "math.ceil": "v_ceil_f32", "math.trunc": "v_trunc_f32",
              "math.rint": "v_rndne_f32"}
_MASK_BINARY = {"arith.and": "s_and_b64", "arith.or": "s_or_b64", "arith.xor": "s_xor_b64"}
_INT64_BITWISE = {"arith.and": ("s_and_b64", "v_and_b32"), "arith.or": ("s_or_b64", "v_or_b32"),
                  "arith.xor": ("s_xor_b64", "v_xor_b32")}
_INT64_SHIFT = {("arith.shl", None): ("s_lshl_b64", "v_lshlrev_b64"),
                ("arith.shr", True): ("s_ashr_i64", "v_ashrrev_i64"),
                ("arith.shr", False): ("s_lshr_b64", "v_lshrrev_b64")}
_SCALAR_CMP = {"eq": "eq", "ne": "lg", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_FLOAT_CMP = {"eq": "eq", "ne": "neq", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}  # ne: true on NaN, as PTX's neu
_APPROX = {"rcp": "v_rcp_f32", "ex2": "v_exp_f32", "lg2": "v_log_f32", "rsqrt": "v_rsq_f32"}
BF16_QUIET_NAN = 0x7FC0
# simt.cvt between these (source, result, rounding) is one instruction
_CVT = {("f16", "f32", ""): "v_cvt_f32_f16", ("f32", "f16", "rn"): "v_cvt_f16_f32",
        ("f32", "f64", ""): "v_cvt_f64_f32", ("f64", "f32", "rn"): "v_cvt_f32_f64",
        ("f32", "f32", "rni"): "v_rndne_f32", ("f32", "f32", "rzi"): "v_trunc_f32",
        ("f32", "f32", "rmi"): "v_floor_f32", ("f32", "f32", "rpi"): "v_ceil_f32",
        ("i32", "f32", "rn"): "v_cvt_f32_i32", ("u32", "f32", "rn"): "v_cvt_f32_u32",
        ("f32", "i32", "rzi"): "v_cvt_i32_f32", ("f32", "u32", "rzi"): "v_cvt_u32_f32"}
# global_load_* of one element of `bits` (sub-dword loads extend into the register, as the
# simt convention wants: i8/i16 sign-extended, the rest zero-extended)
_NARROW_LOAD = {(8, True): "global_load_sbyte", (8, False): "global_load_ubyte",
                (16, True): "global_load_sshort", (16, False): "global_load_ushort"}
_DWORD_LOAD = {1: "global_load_dword", 2: "global_load_dwordx2", 3: "global_load_dwordx3", 4: "global_load_dwordx4"}
_DWORD_STORE = {1: "global_store_dword", 2: "global_store_dwordx2", 3: "global_store_dwordx3",
                4: "global_store_dwordx4"}
_NARROW_STORE = {8: "global_store_byte", 16: "global_store_short"}
# the same for LDS (simt.ld_shared / st_shared)
_DS_NARROW_LOAD = {(8, True): "ds_read_i8", (8, False): "ds_read_u8", (16, True): "ds_read_i16",
                   (16, False): "ds_read_u16"}
_DS_LOAD = {1: "ds_read_b32", 2: "ds_read_b64", 4: "ds_read_b128"}
_DS_STORE = {1: "ds_write_b32", 2: "ds_write_b64", 4: "ds_write_b128"}
_DS_NARROW_STORE = {8: "ds_write_b8", 16: "ds_write_b16"}
# ops whose selection writes their result into its home (Selector.homes) when it has one
_BUILT_IN_PLACE = ("simt.ld_shared", "simt.ld_global", "simt.pack")


# Buffer loads and stores -------------------------------------------------------------------
# A masked global load whose mask is the bound check of its own element index (`offs < n`, the
# common form) is selected as a raw buffer load (buffer_load_*, offen) instead of a global load
# under a narrowed EXEC: the resource's num_records is the bound in bytes, so the hardware reads
# 0 in the lanes past it (isa.BUFFER_RESOURCE_CONFIG), and the mask is never computed. A store
# with such a mask is a buffer store (buffer_store_*): the lanes past the bound write nothing
# (the "Range Checking" of the CDNA3 / RDNA3 ISAs' buffer chapters). The
# element index splits into a uniform part (folded into the resource's base, in 64 bits), a
# per-lane part whose range is known (the VGPR byte offset: below 2^31, so its 32 bits cannot
# wrap) and a constant (the instruction's offset), as Triton's AMD backend splits its buffer
# offsets (third_party/amd: the pointer canonicalization and BufferOpsEmitter):
#
#     %6  = arith.add %2, %5 : i32              (%2 = ctaid * 256: uniform; %5 = tid << 1: 0..255)
#     %7  = arith.add %6, %4 : i32              (%4 = 1)
#     %9  = arith.cmp %7, %n {predicate = "lt"} : i1
#     %10 = simt.addptr %x_ptr, %6 {scale = 4}
#     %12 = simt.ld_global %10, %9 {offset = 4, vector = 1} : f32
#
#  -> s_mul_i32 / s_add_u32 / s_addc_u32   base = x_ptr + sext(%2) * 4, its high 16 bits in dword 1
#     s_sub_u32, s_cmp_lt_i32, s_cselect_b32, s_min_u32, s_lshl_b32
#                                          num_records = clamp(n - %2, 0, 2^30 - 1) * 4
#     v_lshlrev_b32 %voff, 2, %5
#     buffer_load_dword %v, %voff, %s[0:3], 0 offen offset:4
#
# A lane reads memory exactly when %2 + %5 + 1 < n (clamping n - %2 changes nothing: the
# per-lane offset stays far below it). Two more forms reduce to one bound:
#   - an unsigned index (u32, reaching the addptr zero-extended to i64: _widened_unsigned_index)
#     with no uniform part, compared unsigned: num_records is n itself, never negative. With a
#     uniform part the u32 sum may wrap at 2^32, which the resource's base + offset does not.
#   - a mask `c & (offs < n)` (any nesting and order) whose other factors c are uniform, as
#     `(row < M) & (cols < N)` with the row a program's: num_records is 0 in a wave where some c
#     is false (_mask_factors, record_bytes). Two per-lane bounds (a 2-D tile's rows and
#     columns) keep a rectangle of lanes, no one byte range: they keep EXEC.
# Where `other` is not 0, the mask has another form, or the per-lane part's range is unknown,
# the global access under EXEC stays. Atomics (simt.atom, simt.red, simt.atom_cas on global
# memory) take the same forms, where the target has the buffer instruction and the scope is not
# the system's (Selector.buffer_atomic_fits); their lanes past the bound neither read nor write.
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
BUFFER_OFFSET_LIMIT = 1 << 31   # the per-lane byte offsets of a buffer load stay below this


def lane_range(v: Value, threads: int, memo: dict) -> Optional[tuple[int, int]]:
    """The smallest and largest value per-lane i32 `v` can take in a CTA of `threads` threads,
    from its definition (thread index, constants, + - * << >> & | / % min max); None if unknown."""
    if v in memo:
        return memo[v]
    memo[v] = None   # a cycle (loop-carried values) is unknown
    op = v.owner_op
    if op is None or not (_is_int(v.type) and dwords(v.type) == 1):
        return None
    if op.name == "arith.constant":
        value = int(op.attrs["value"])
        found: Optional[tuple[int, int]] = (value, value)
    elif op.name == "simt.tid":
        found = (0, threads - 1)
    elif op.name == "simt.cvt" and _is_int(op.operand(0).type) and dwords(op.operand(0).type) == 1:
        source = lane_range(op.operand(0), threads, memo)   # i32 <-> u32: a value below 2^31 is kept
        found = source if source is not None and source[0] >= 0 else None
    elif op.name in _RANGE_RULES and len(op.operands) == 2:
        a, b = (lane_range(x, threads, memo) for x in op.operands)
        found = _RANGE_RULES[op.name](a, b) if a is not None and b is not None else None
    else:
        found = None
    if found is not None and not (_INT_RANGE[0] <= found[0] <= found[1] <= _INT_RANGE[1]):
        found = None   # it could wrap
    memo[v] = found
    return found


def _constant_of(r: tuple[int, int]) -> Optional[int]:
    return r[0] if r[0] == r[1] else None


def _shift_range(a, b, shift):
    k = _constant_of(b)
    if k is None or not 0 <= k < 32 or a[0] < 0:
        return None
    return shift(a[0], k), shift(a[1], k)


def _quotient_range(a, b, rem: bool):
    k = _constant_of(b)
    if k is None or k <= 0 or a[0] < 0:
        return None
    return (0, min(a[1], k - 1)) if rem else (a[0] // k, a[1] // k)


_RANGE_RULES = {
    "arith.add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "arith.sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "arith.mul": lambda a, b: (a[0] * b[0], a[1] * b[1]) if a[0] >= 0 and b[0] >= 0 else None,
    "arith.shl": lambda a, b: _shift_range(a, b, lambda x, k: x << k),
    "arith.shr": lambda a, b: _shift_range(a, b, lambda x, k: x >> k),
    "arith.and": lambda a, b: (0, min(r[1] for r in (a, b) if r[0] >= 0)) if a[0] >= 0 or b[0] >= 0 else None,
    "arith.or": lambda a, b: (0, (1 << max(a[1], b[1]).bit_length()) - 1) if a[0] >= 0 and b[0] >= 0 else None,
    "arith.div": lambda a, b: _quotient_range(a, b, rem=False),
    "arith.rem": lambda a, b: _quotient_range(a, b, rem=True),
    "arith.max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "arith.min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
}


@dataclass(frozen=True)
class BufferAccess:
    """A global load selectable as a buffer load: element index uniform + lanewise + the
    instruction's offset / scale, read where that index is below `bound`."""

    pointer: Value             # the uniform base pointer
    uniform: Optional[Value]   # the index's uniform part (None: 0)
    lanewise: Value            # its per-lane part, never negative
    bound: Value               # the uniform n of `index < n`
    scale: int                 # bytes per element
    signed: bool = True        # the compare's (the index type's) signedness
    conditions: tuple[Value, ...] = ()   # uniform i1 factors of the mask: all must hold


def _zero_extended(v: Value) -> bool:
    """Whether narrow value `v` of an unsigned or float type sits in its register with zeros
    above it: loaded alone with no `other` (global_load_ushort, ds_read_u8... zero-extend), or
    unpacked from a wider word (v_bfe_u32: Selector.split)."""
    op = v.owner_op
    if op is None or _bits(v.type) >= 32 or _signed(v.type):
        return False
    if op.name in ("simt.ld_global", "simt.ld_shared"):
        return len(op.operands) == 2 and op.attrs.get("vector", 1) == 1
    return op.name == "simt.unpack" and len(op.results) > 1


def _unpacked_word(parts: list[Value]) -> Optional[Value]:
    """The one-dword value whose simt.unpack gave exactly `parts`, in order, or None."""
    op = parts[0].owner_op if parts else None
    if op is None or op.name != "simt.unpack" or list(op.results) != list(parts) or dwords(op.operand(0).type) != 1:
        return None
    return op.operand(0)


def _repacks(user: Operation, unpack: Operation) -> bool:
    """Whether `user` (a pack, or a store's data) reads the results of `unpack` only as the
    whole word they came from: each of its dwords holds all of them in order, or none."""
    if user.name == "simt.pack":
        values = list(user.operands)
    elif user.name in ("simt.st_global", "simt.st_shared") and not set(user.operands[:2]) & set(unpack.results):
        values = list(user.operands[2:])
    else:
        return False
    parts = list(unpack.results)
    if _bits(parts[0].type) >= 32:
        return False
    per_dword = 32 // _bits(parts[0].type)
    groups = [values[w:w + per_dword] for w in range(0, len(values), per_dword)]
    return all(group == parts or not set(group) & set(parts) for group in groups)


def _wmma_operand_groups(op: Operation) -> tuple[list[Value], list[Value]]:
    """The words of simt.wmma `op`'s A and of its B."""
    words = (len(op.operands) - len(op.results)) // 2
    return list(op.operands[:words]), list(op.operands[words:2 * words])


def _is_true_constant(v: Value) -> bool:
    op = v.owner_op
    return op is not None and op.name == "arith.constant" and bool(op.attrs["value"])


def _is_zero_constant(v: Value) -> bool:
    op = v.owner_op
    return op is not None and op.name == "arith.constant" and constant_bits(op.attrs["value"], v.type) == 0


_ATOMIC_OPS = ("simt.atom", "simt.red", "simt.atom_cas")


def _accessed_bytes(access: Operation) -> int:
    """The bytes simt.ld_global / st_global `access` reads or writes per thread (an atomic: its value's)."""
    if access.name == "simt.ld_global":
        return _bits(access.results[0].type) * access.attrs.get("vector", 1) // 8
    if access.name in _ATOMIC_OPS:
        return _bits(access.operand(access.num_operands - 1).type) // 8
    values = access.operands[2:]
    return (64 if isinstance(values[0].type, PointerType) else _bits(values[0].type)) * len(values) // 8


def buffer_access(access: Operation, uniform: set[Value], threads: int, memo: dict) -> Optional[BufferAccess]:
    """How masked simt.ld_global (st_global, or a global atomic) `access` reads (writes) as a raw
    buffer access, or None (see above). A store has no `other`: the lanes past the bound write
    nothing; an atomic past the bound neither reads nor writes (Selector.buffer_atomic)."""
    if access.name not in ("simt.ld_global", "simt.st_global") + _ATOMIC_OPS or len(access.operands) < 2:
        return None
    if access.name in _ATOMIC_OPS and not isinstance(access.operand(0).type, PointerType):
        return None   # an LDS address
    if access.name == "simt.ld_global" and not all(_is_zero_constant(other) for other in access.operands[2:]):
        return None
    factors = _mask_factors(access.operand(1), uniform)
    if factors is None:
        return None
    compare, conditions = factors
    address = access.operand(0).owner_op
    if address is None or address.name != "simt.addptr" or compare.name != "arith.cmp":
        return None
    pointer, index = address.operands
    scale = address.attrs["scale"]
    if dwords(index.type) == 2:
        index, scale = _widened_unsigned_index(index, scale)
    checked, bound = compare.operands
    if (pointer not in uniform or index in uniform or bound not in uniform or compare.attrs["predicate"] != "lt"
            or not (_is_int(index.type) and dwords(index.type) == 1)
            or checked.type != index.type or scale <= 0 or scale & (scale - 1)):
        return None
    offset = access.attrs.get("offset", 0)
    step = 0   # the checked index is `index + step`, and the access is `step` elements on
    if checked is not index:
        add = checked.owner_op
        if add is None or add.name != "arith.add" or index not in add.operands:
            return None
        other = add.operand(1) if add.operand(0) is index else add.operand(0)
        constant = other.owner_op
        if constant is None or constant.name != "arith.constant":
            return None
        step = int(constant.attrs["value"])
    if offset != step * scale or not BUFFER_OFFSET_RANGE[0] <= offset <= BUFFER_OFFSET_RANGE[1]:
        return None
    parts = index.owner_op
    uniform_part, lanewise = None, index
    if parts is not None and parts.name == "arith.add":
        first, second = parts.operands
        if (first in uniform) != (second in uniform):
            uniform_part, lanewise = (first, second) if first in uniform else (second, first)
    if not _signed(index.type) and uniform_part is not None:
        return None   # an unsigned index wraps at 2^32 as the resource's base + offset does not
    span = lane_range(lanewise, threads, memo)
    if span is None or span[0] < 0 or (span[1] + step) * scale + _accessed_bytes(access) >= BUFFER_OFFSET_LIMIT:
        return None
    return BufferAccess(pointer, uniform_part, lanewise, bound, scale, _signed(index.type), conditions)


def _read_only_under(v: Value, pred: Value) -> bool:
    """Whether every reader of `v` reads it only in the lanes where `pred` holds: a store of it
    (as its data) under that very mask, or a bitcast read only so."""
    for user in v.users():
        if user.name == "arith.bitcast":
            if not _read_only_under(user.result, pred):
                return False
        elif not (user.name in ("simt.st_global", "simt.st_shared") and user.operand(1) is pred
                  and v not in user.operands[:2]):
            return False
    return True


def _widened_unsigned_index(index: Value, scale: int) -> tuple[Value, int]:
    """An unsigned 32-bit index reaches simt.addptr zero-extended to 64 bits and often shifted by
    the element size (`addptr p, (zext u) << k {scale}`): (u, scale << k) when `index` has that
    form, else (index, scale) unchanged (buffer_access then refuses the 64-bit index)."""
    op = index.owner_op
    if op is not None and op.name == "arith.shl":
        amount = op.operand(1).owner_op
        if amount is None or amount.name != "arith.constant" or not 0 <= int(amount.attrs["value"]) < 8:
            return index, scale
        widened, shifted_scale = op.operand(0), scale << int(amount.attrs["value"])
    else:
        widened, shifted_scale = index, scale
    cvt = widened.owner_op
    if cvt is None or cvt.name != "simt.cvt":
        return index, scale
    source = cvt.operand(0)
    if not (_is_int(source.type) and not _signed(source.type) and dwords(source.type) == 1):
        return index, scale
    return source, shifted_scale


def _mask_factors(mask: Value, uniform: set[Value]) -> Optional[tuple[Operation, tuple[Value, ...]]]:
    """A mask `c1 & c2 & ... & check` (arith.and of i1 values, in any order and nesting) whose
    factors but one are uniform: (the one, which is the bound check, and the uniform ones).
    The reduction to one bound: in a wave where every uniform factor holds, the mask is the check;
    elsewhere it is false in every lane, which a resource of num_records 0 gives (record_bytes).
    A constant true factor drops out; None if no factor or more than one is per-lane."""
    factors, pending = [], [mask]
    while pending:
        v = pending.pop()
        op = v.owner_op
        if op is not None and op.name == "arith.and" and v.type == i1:
            pending.extend(op.operands)
        elif not _is_true_constant(v):
            factors.append(v)
    lanewise = [v for v in factors if v not in uniform]
    if len(lanewise) != 1 or lanewise[0].owner_op is None:
        return None
    return lanewise[0].owner_op, tuple(v for v in factors if v in uniform)


class Selector:
    """Walks a simt.func once, appending MIR; each simt value maps to its operand."""

    def __init__(self, func: Operation, target: str):
        self.func = func
        self.target = target
        self.insts: list[MInst] = []
        self.regs: list[Reg] = []
        self.uniform = uniform_values(func)
        self.wave_uniform: Optional[set[Value]] = None   # wave_uniform_values, once a matrix op needs it
        self.values: dict[Value, Operand] = {}
        self.constants: dict[Value, tuple[Any, DType]] = {}
        self.materialized: dict[tuple[int, int], tuple[Sub, int]] = {}
        self.vector_copies: dict[tuple[Reg, int, int], Sub] = {}
        self.scalar_copies: dict[tuple[Reg, int, int], Sub] = {}
        self.deferred_others: dict[Value, tuple[Value, Value]] = {}   # load result -> (other, predicate)
        self.compares: dict[Value, Operation] = {}
        self.homes: dict[Value, Sub] = {}
        self.updated_in_place: dict[Value, Sub] = {}   # a loop's advanced pointer -> its carried register
        self.thread_id: Optional[Sub] = None
        self.loops = 0
        self.recent_masks: dict[Value, tuple[Sub, int]] = {}
        self.comment = ""
        self.wave_size = WAVE_SIZE[target]   # the lowering's warp: simt.tid / wave_size is the wave
        self.mask_dwords = self.wave_size // 32   # a lane mask: one SGPR per 32 lanes
        self.threads = func.attrs["num_warps"] * self.wave_size
        threads, memo = self.threads, {}
        self.buffer_accesses: dict[Operation, BufferAccess] = {
            op: access for op in walk(func.regions[0].block.ops)
            if (access := buffer_access(op, self.uniform, threads, memo)) is not None
            and (op.name not in _ATOMIC_OPS or self.buffer_atomic_fits(op))}
        # buffer atomics whose old value is read where their mask may be false: it is 0 there
        # (simt.atom's contract), which takes the mask (the ISA leaves those lanes' result open)
        self.zeroed_outside_mask = {op for op in self.buffer_accesses
                                    if op.name in ("simt.atom", "simt.atom_cas")
                                    and not _read_only_under(op.result, op.operand(1))}
        self.buffer_resources: dict[tuple, tuple[Sub, int]] = {}   # V#s and their parts, when made (recent)
        self.buffer_offsets: dict[tuple[Value, int], Sub] = {}      # (per-lane part, shift) -> byte offsets
        self.d16_reads: dict[Operation, tuple[Sub, str]] = {}   # 16-bit LDS read -> (its word's home, D16 read)
        self.packed_by_halves: set[Operation] = set()            # packs of two such reads: nothing to do

    # registers and instructions --------------------------------------------------------
    def new(self, bank: str, size: int = 1, fixed: Optional[int] = None) -> Reg:
        reg = Reg(bank, size, len(self.regs), fixed)
        self.regs.append(reg)
        return reg

    def new_mask(self) -> Sub:
        """A virtual SGPR (pair, on wave64) for a lane mask."""
        return self.new("s", self.mask_dwords).all()

    def lane(self, opcode: str) -> str:
        """The target's form of wave64 mask instruction `opcode` (s_and_saveexec_b32 on wave32)."""
        return LANE_MASK_OPCODES[self.target].get(opcode, opcode)

    def drain_memory(self) -> None:
        """Wait until every memory access of this wave is done (loads, LDS, and stores where
        they have their own counter: GFX10+'s vscnt)."""
        self.emit("s_waitcnt", [], [], vmcnt=0, lgkmcnt=0)
        if STORE_COUNTER[self.target] == "vscnt":
            self.emit("s_waitcnt_vscnt", [], [NULL, Imm(0, "0x0", True)])

    def emit(self, opcode: str, defs: list[Operand], uses: list[Operand], **mods: int) -> None:
        self.insts.append(MInst(opcode, defs, uses, mods, self.comment))

    def salu(self, opcode: str, defs: list[Operand], uses: list[Operand]) -> None:
        """A scalar instruction: one 32-bit literal at most, none in a 64-bit operand."""
        kinds = info(opcode).uses
        fixed: list[Operand] = []
        literal = False
        for kind, u in zip(kinds, uses):
            if isinstance(u, Imm) and not u.inline and (literal or kind.endswith("2")):
                u = self.materialize(u.value, 2 if kind.endswith("2") else 1)
            literal |= isinstance(u, Imm) and not u.inline
            fixed.append(u)
        self.emit(opcode, defs, fixed)

    def valu(self, opcode: str, defs: list[Operand], uses: list[Operand], **mods: int) -> None:
        """A vector instruction, legalized for GFX9: no literal in VOP3 (literals go to SGPRs),
        and one SGPR source at most (the constant bus; vcc counts; extra SGPRs are copied)."""
        width = [int(k[-1]) if k[-1].isdigit() else 1 for k in info(opcode).uses]
        uses = [self.materialize(u.value, w) if isinstance(u, Imm) and not u.inline else u
                for u, w in zip(uses, width)]
        kinds = info(opcode).uses
        # operands that must be SGPRs (a mask, vcc) take the bus first
        on_bus = {_bus_key(u) for u, k in zip(uses, kinds)
                  if isinstance(u, Special) or k.startswith("ssrc") or k == "lmask"}
        legal: list[Operand] = []
        for u in uses:
            if isinstance(u, Sub) and u.bank == "s" and _bus_key(u) not in on_bus:
                if on_bus:
                    u = self.to_vgpr(u)
                else:
                    on_bus.add(_bus_key(u))
            legal.append(u)
        self.emit(opcode, defs, legal, **mods)

    def materialize(self, bits: int, size: int) -> Sub:
        """An SGPR (pair) holding the constant `bits`: the last one made if it is at most
        REMAT_WINDOW instructions old (short live ranges: SGPRs are few)."""
        key = (bits, size)
        recent = self.materialized.get(key)
        if recent is not None and len(self.insts) - recent[1] <= REMAT_WINDOW:
            return recent[0]
        reg = self.new("s", size)
        for i in range(size):
            self.emit("s_mov_b32", [reg.dword(i)], [Imm.int((bits >> (32 * i)) & 0xFFFFFFFF)])
        self.materialized[key] = (reg.all(), len(self.insts))
        return reg.all()

    def to_vgpr(self, o: Operand, count: int = 1) -> Operand:
        """`o` in VGPRs (SGPRs copied with v_mov_b32, once each); an immediate of a `count`-dword
        value (2: a 64-bit integer that inlines) fills that many."""
        if isinstance(o, Imm):
            reg = self.new("v", count)
            for i in range(count):
                self.valu("v_mov_b32", [reg.dword(i)], [self.half(o, i) if count == 2 else o])
            return reg.all()
        if not isinstance(o, Sub) or o.bank == "v":
            return o
        key = (o.reg, o.start, o.count)
        if key not in self.vector_copies:
            reg = self.new("v", o.count)
            for i in range(o.count):
                self.emit("v_mov_b32", [reg.dword(i)], [o.dword(i)])
            self.vector_copies[key] = reg.all()
        return self.vector_copies[key]

    def vgpr(self, v: Value) -> Operand:
        """Simt value `v` in VGPRs, every dword of it (a 64-bit constant that inlines, too)."""
        return self.to_vgpr(self.operand(v), dwords(v.type))

    def to_sgpr(self, o: Operand) -> Operand:
        """`o` of a uniform value in SGPRs (from a VGPR: v_readfirstlane_b32 per dword)."""
        if not isinstance(o, Sub) or o.bank == "s":
            return o
        key = (o.reg, o.start, o.count)
        if key not in self.scalar_copies:
            reg = self.new("s", o.count)
            for i in range(o.count):
                self.emit("v_readfirstlane_b32", [reg.dword(i)], [o.dword(i)])
            self.scalar_copies[key] = reg.all()
        return self.scalar_copies[key]

    # operands of simt values -----------------------------------------------------------
    def operand(self, v: Value) -> Operand:
        """The operand of `v`: a register view, or an immediate for a constant (inline floats
        as their f32 text, others as their bits; 64-bit ones inline only, else an SGPR pair)."""
        if v in self.constants:
            value, t = self.constants[v]
            bits = constant_bits(value, t)
            if t.name == "f32" and float(value) in INLINE_FLOATS:
                return Imm(bits, repr(float(value)), True)
            if dwords(t) == 2 and not Imm.int(bits).inline:
                return self.materialize(bits & ((1 << 64) - 1), 2)
            return Imm.int(bits if bits < (1 << 31) or dwords(t) == 2 else bits - (1 << 32))
        if v in self.compares:
            return self.compare(v)
        if v in self.deferred_others:
            self.choose_other(v)
        return self.values[v]

    def scalar(self, v: Value) -> Operand:
        return self.to_sgpr(self.operand(v))

    def half(self, o: Operand, i: int) -> Operand:
        """Dword `i` of a 64-bit operand."""
        if isinstance(o, Imm):
            return Imm.int(-1 if o.value < 0 and i else (0 if i else o.value))
        return o.dword(i)

    def result(self, v: Value, bank: str) -> Sub:
        if bank == "v" and v in self.homes:
            self.values[v] = self.homes[v]
            return self.homes[v]
        reg = self.new(bank, self.mask_dwords if v.type == i1 else dwords(v.type))
        self.values[v] = reg.all()
        return reg.all()

    def unsupported(self, op: Operation, what: str = "") -> UnsupportedOnTarget:
        detail = f" {what}" if what else ""
        return UnsupportedOnTarget(f"{self.target}: the AMDGCN backend does not support {op.name}{detail} yet", op.loc)

    # the function ----------------------------------------------------------------------
    def select(self) -> Selection:
        block = self.func.regions[0].block
        axes = sorted({0} | {op.attrs["axis"] for op in walk(block.ops) if op.name == "simt.ctaid"})
        self.kernarg_pointer = self.new("s", 2, fixed=KERNARG_POINTER_SGPR).all()
        first_id = user_sgpr_count(self.target, len(axes))
        self.workgroup_ids = {axis: self.new("s", 1, fixed=first_id + i).all() for i, axis in enumerate(axes)}
        self.workitem_id = self.new("v", 1, fixed=0).all()
        kernargs = self.load_arguments(block)
        self.place_store_data(block)
        self.place_wmma_operands(block)
        if any(op.name == "simt.tid" or (op.name == "simt.shfl" and self.swizzle_distance(op) is None)
               for op in walk(block.ops)):
            self.thread_index()  # at the top: code in a loop body may not run
        self.select_ops(block.ops)
        size = max((a.offset + a.size for a in kernargs), default=0)
        return Selection(self.func.attrs["sym_name"], self.insts, kernargs, size, tuple(axes), self.threads,
                         self.func.attrs.get("shared_bytes", 0), self.regs)

    def select_ops(self, ops) -> None:
        for op in sunk_past_loops(list(ops)):
            self.comment = f"{op.loc.file.rsplit('/', 1)[-1]}:{op.loc.line}" if op.loc else ""
            handler = _HANDLERS.get(op.name)
            if handler is None or (op.regions and op.name not in ("scf.for", "scf.if", "scf.while")):
                raise self.unsupported(op)
            handler(self, op)

    def forget_recent(self) -> None:
        """Drop the values kept for reuse (constants, masks, copies): at a loop's entry and exit,
        where a value made on one side may not exist on the other (a loop may run zero times)."""
        self.materialized.clear()
        self.recent_masks.clear()
        self.vector_copies.clear()
        self.scalar_copies.clear()
        self.buffer_resources.clear()
        self.buffer_offsets.clear()

    def sel_for(self, op: Operation) -> None:
        """scf.for with uniform bounds: an SGPR induction variable, loop-carried values in
        registers copied at entry and at each yield, one backward branch:

                s_cmp_ge_i32 iv, ub; s_cbranch_scc1 .Lend       (no iteration)
            .Lbody:  ...body...;  carried = yielded
                s_add_u32 iv, iv, step; s_cmp_lt_i32 iv, ub; s_cbranch_scc1 .Lbody
            .Lend:
        """
        lb, ub, step, *inits = op.operands
        body = op.regions[0].block
        if lb.type.name not in ("i32", "u32"):
            raise self.unsupported(op, f"with a {lb.type} induction variable")
        for r in list(self.deferred_others):  # a use inside the loop must not be its first
            self.choose_other(r)
        self.forget_recent()
        kind = "i32" if _signed(lb.type) else "u32"
        iv = self.new("s").all()
        self.salu("s_mov_b32", [iv], [self.scalar(lb)])
        carried = self.carried_registers(body, inits)
        self.updated_in_place.update(self.pointer_updates(body, carried))
        for reg, v in zip(carried, inits):
            self.copy(reg, self.operand(v))
        self.loops += 1
        top, end = Label(f".Lloop{self.loops}"), Label(f".Lloop{self.loops}_end")
        upper = self.scalar(ub)
        self.salu(f"s_cmp_ge_{kind}", [], [iv, upper])
        self.emit("s_cbranch_scc1", [], [end])
        self.emit("label", [], [top])
        self.values[body.args[0]] = iv
        for arg, reg in zip(body.args[1:], carried):
            self.values[arg] = reg
        self.select_ops(body.ops[:-1])
        moves = [(reg, y) for reg, y in zip(carried, self.yielded_operands(body)) if y != reg]
        if any(isinstance(y, Sub) and y.reg is reg.reg for _, y in moves for reg, _ in moves):
            moves = [(reg, self.staged(y, reg)) for reg, y in moves]   # a parallel copy
        for reg, y in moves:
            self.copy(reg, y)
        self.salu("s_add_u32", [iv], [iv, self.scalar(step)])
        self.salu(f"s_cmp_lt_{kind}", [], [iv, self.scalar(ub)])
        self.emit("s_cbranch_scc1", [], [top])
        self.emit("label", [], [end])
        self.forget_recent()
        for result, reg in zip(op.results, carried):
            self.values[result] = reg

    def carried_registers(self, body, inits: list[Value]) -> list[Sub]:
        """The registers of a loop's carried values. The accumulators of an MFMA in the body
        (C read by nothing else) share one tuple in its C order: the MFMA then accumulates in
        place from one iteration to the next, and the yield of the chain's last D moves nothing."""
        carried: dict[Value, Sub] = {}
        args = set(body.args[1:])
        for op in body.ops:
            accumulators = op.operands[4:] if op.name == "simt.mfma" else []
            if accumulators and len(set(accumulators)) == len(accumulators) and all(
                    v in args and v not in carried and len(v.uses) == 1 for v in accumulators):
                tuple_reg = self.new("v", len(accumulators))
                carried.update((v, tuple_reg.dword(k)) for k, v in enumerate(accumulators))
        return [carried.get(arg) or (self.new_mask() if arg.type == i1 else self.new("v", dwords(arg.type)).all())
                for arg in body.args[1:]]

    def pointer_updates(self, body, carried: list[Sub]) -> dict[Value, Sub]:
        """The carried pointers a loop advances in place: yielded p' = addptr(p, i) where p (the
        block argument) is read nowhere after that addptr in the body. p' is then computed into
        p's own register (sel_addptr), so the old and new pointers are not live together and
        the yield moves nothing (a matmul's A and B pointer tiles)."""
        position = {op: k for k, op in enumerate(body.ops)}

        def top_level(op: Operation) -> Operation:
            while op not in position:
                op = op.parent_op
            return op

        yielded = list(body.ops[-1].operands)
        updates: dict[Value, Sub] = {}
        for arg, reg, new in zip(body.args[1:], carried, yielded):
            advance = new.owner_op
            if (advance not in position or advance.name != "simt.addptr" or advance.operand(0) is not arg
                    or yielded.count(new) != 1 or reg.bank != "v" or new in self.uniform):
                continue
            if all(position[top_level(user)] < position[advance] or user is advance for user, _ in arg.uses):
                updates[new] = reg
        return updates

    def yielded_operands(self, body) -> list[Operand]:
        return [self.operand(v) for v in body.ops[-1].operands]

    def staged(self, value: Operand, like: Sub) -> Sub:
        """`value` copied into a fresh register of `like`'s bank and size."""
        reg = self.new(like.bank, like.count).all()
        self.copy(reg, value)
        return reg

    def sel_while(self, op: Operation) -> None:
        """scf.while as a loop under EXEC: each lane leaves when its condition fails, and the
        loop ends when no lane is left (the condition need not be uniform):

                s_mov_b64 saved, exec               (loop-carried values into their registers)
            top:
                before...  results <- forwarded values        (in the lanes still running)
                s_and_b64 exec, exec, cond
                s_cbranch_execz end
                after...   carried <- yielded values
                s_branch top
            end:
                s_mov_b64 exec, saved

        A lane that left keeps its results: every VGPR write in the loop runs under the
        narrowed EXEC."""
        before, after = op.regions[0].block, op.regions[1].block
        if any(v.type == i1 for v in list(op.operands) + list(op.results)):
            raise self.unsupported(op, "with i1 loop-carried values")
        for r in list(self.deferred_others):
            self.choose_other(r)
        self.forget_recent()
        carried = [self.new("v", dwords(v.type)).all() for v in op.operands]
        for reg, v in zip(carried, op.operands):
            self.copy(reg, self.operand(v))
        results = [self.new("v", dwords(r.type)).all() for r in op.results]
        saved = self.new_mask()
        self.salu(self.lane("s_mov_b64"), [saved], [EXEC])
        self.loops += 1
        top, end = Label(f".Lwhile{self.loops}"), Label(f".Lwhile{self.loops}_end")
        self.emit("label", [], [top])
        for arg, reg in zip(before.args, carried):
            self.values[arg] = reg
        self.select_ops(before.ops[:-1])
        condition = before.ops[-1]
        for reg, v in zip(results, condition.operands[1:]):
            self.copy(reg, self.operand(v))
        self.salu(self.lane("s_and_b64"), [EXEC], [EXEC, self.scalar(condition.operand(0))])
        self.emit("s_cbranch_execz", [], [end])
        for arg, reg in zip(after.args, results):
            self.values[arg] = reg
        self.select_ops(after.ops[:-1])
        staged = [self.new(c.bank, c.count).all() for c in carried]   # a parallel copy
        for reg, v in zip(staged, after.ops[-1].operands):
            self.copy(reg, self.operand(v))
        for reg, y in zip(carried, staged):
            self.copy(reg, y)
        for r in list(self.deferred_others):
            self.choose_other(r)
        self.emit("s_branch", [], [top])
        self.emit("label", [], [end])
        self.salu(self.lane("s_mov_b64"), [EXEC], [saved])
        self.forget_recent()
        for r, reg in zip(op.results, results):
            self.values[r] = reg

    def sel_if(self, op: Operation) -> None:
        """scf.if as EXEC masking (no branches): the then-region runs in the lanes where the
        condition holds, the else-region in the others, each writing the results' registers in
        its own lanes:

            s_and_saveexec_b64 saved, cond      then...   s_andn2_b64 exec, saved, cond
            else...                             s_mov_b64 exec, saved
        """
        if any(r.type == i1 for r in op.results):
            raise self.unsupported(op, "with i1 results")
        for r in list(self.deferred_others):   # values made under a narrowed EXEC are partial:
            self.choose_other(r)               # nothing made inside may be reused outside
        self.forget_recent()
        cond = self.scalar(op.operand(0))
        results = [self.new("v", dwords(r.type)).all() for r in op.results]
        saved = self.new_mask()
        self.salu(self.lane("s_and_saveexec_b64"), [saved], [cond])
        for k, region in enumerate(op.regions):
            if k == 1:
                self.forget_recent()
                self.salu(self.lane("s_andn2_b64"), [EXEC], [saved, cond])
            block = region.block
            self.select_ops(block.ops[:-1])
            for reg, v in zip(results, block.ops[-1].operands):
                self.copy(reg, self.operand(v))
            for r in list(self.deferred_others):
                self.choose_other(r)
        self.salu(self.lane("s_mov_b64"), [EXEC], [saved])
        self.forget_recent()
        for r, reg in zip(op.results, results):
            self.values[r] = reg

    def copy(self, dst: Sub, src: Operand) -> None:
        if dst.bank == "s":   # a 64-bit value or a wave64 lane mask in a pair
            self.salu("s_mov_b64" if dst.count == 2 else "s_mov_b32", [dst], [src])
            return
        for i in range(dst.count):
            self.valu("v_mov_b32", [dst.dword(i)], [self.half(src, i) if dst.count == 2 else src])

    def place_store_data(self, block) -> None:
        """Values that only a vector store reads are computed straight into its register tuple
        (no copies to gather them): their home is a slice of the tuple."""
        for op in walk(block.ops):
            values = op.operands[2:]
            if op.name != "simt.st_global" or len(values) < 2 or dwords(values[0].type) * 32 != _bits(values[0].type):
                continue
            if len(set(values)) == len(values) and all(
                    v.owner_op is not None and len(v.uses) == 1 and v not in self.homes for v in values):
                width = dwords(values[0].type)
                tuple_reg = self.new("v", width * len(values))
                for k, v in enumerate(values):
                    self.homes[v] = Sub(tuple_reg, k * width, width)

    def place_wmma_operands(self, block) -> None:
        """A WMMA reads A and B each from eight consecutive VGPRs: where the eight words of an
        operand are loads or packs that only WMMAs read, each as these same eight (one A tile
        times several B tiles), they are loaded (packed) straight into that tuple, so that no
        v_mov_b32 gathers them."""
        for op in walk(block.ops):
            if op.name != "simt.wmma":
                continue
            for values in _wmma_operand_groups(op):
                if len(set(values)) == len(values) and all(
                        v.owner_op is not None and v.owner_op.name in _BUILT_IN_PLACE
                        and len(v.owner_op.results) == 1 and dwords(v.type) == 1 and _bits(v.type) == 32
                        and v not in self.homes
                        and all(user.name == "simt.wmma" and values in _wmma_operand_groups(user)
                                for user in v.users()) for v in values):
                    tuple_reg = self.new("v", len(values))
                    for k, v in enumerate(values):
                        self.homes[v] = tuple_reg.dword(k)
                        self.place_halves(v.owner_op)

    def place_halves(self, pack: Operation) -> None:
        """A word packed from two 16-bit LDS reads (B of a WMMA: a column, 16 bits a row) is
        read half by half into its home with the D16 reads, which keep the other half: no
        v_lshl_or_b32 packs it (isa.D16_MERGE_KEEPS)."""
        if pack.name != "simt.pack" or len(pack.operands) != 2 or self.target not in info("ds_read_u16_d16").targets:
            return
        loads = [v.owner_op for v in pack.operands]
        if pack.operand(0) is pack.operand(1) or not all(
                load is not None and load.name == "simt.ld_shared" and len(load.operands) == 2
                and load.attrs.get("vector", 1) == 1 and _bits(load.result.type) == 16 and len(load.result.uses) == 1
                and _is_true_constant(load.operand(1)) for load in loads):
            return
        for half, load in enumerate(loads):
            self.d16_reads[load] = (self.homes[pack.result], "ds_read_u16_d16_hi" if half else "ds_read_u16_d16")
        self.packed_by_halves.add(pack)

    def load_arguments(self, block) -> list[KernArg]:
        """Lay out the kernarg segment (each argument at its natural alignment, hidden block
        counts after them when simt.nctaid is used) and s_load the arguments the kernel reads."""
        names = self.func.attrs.get("arg_names") or [f"arg{i}" for i in range(len(block.args))]
        kernargs, offset = [], 0
        for arg, name in zip(block.args, names):
            t = arg.type
            if not (isinstance(t, PointerType) or (isinstance(t, DType) and t.bits in (32, 64))):
                raise UnsupportedOnTarget(f"{self.target}: the AMDGCN backend does not support kernel "
                                          f"parameter {name!r} of type {t} yet")
            size = 4 * dwords(t)
            offset = -(-offset // size) * size
            pointer = isinstance(t, PointerType)
            kernargs.append(KernArg(name, offset, size, "global_buffer" if pointer else "by_value",
                                    "global" if pointer else None))
            if arg.uses:
                reg = self.result(arg, "s")
                self.emit("s_load_dwordx2" if size == 8 else "s_load_dword", [reg], [self.kernarg_pointer, Imm.int(offset)])
            offset += size
        counts = sorted({op.attrs["axis"] for op in walk(block.ops) if op.name == "simt.nctaid"})
        if counts:
            base = -(-offset // 8) * 8
            for axis in range(3):
                kernargs.append(KernArg("", base + 4 * axis, 4, f"hidden_block_count_{'xyz'[axis]}"))
            self.block_counts = {}
            for axis in counts:
                reg = self.new("s")
                self.emit("s_load_dword", [reg.all()], [self.kernarg_pointer, Imm.int(base + 4 * axis)])
                self.block_counts[axis] = reg.all()
        return kernargs

    # handlers --------------------------------------------------------------------------
    def sel_constant(self, op: Operation) -> None:
        self.constants[op.result] = (op.attrs["value"], op.result.type)

    def sel_tid(self, op: Operation) -> None:
        self.values[op.result] = self.thread_index()

    def sel_ctaid(self, op: Operation) -> None:
        self.values[op.result] = self.workgroup_ids[op.attrs["axis"]]

    def sel_nctaid(self, op: Operation) -> None:
        self.values[op.result] = self.block_counts[op.attrs["axis"]]

    def sel_return(self, op: Operation) -> None:
        self.emit("s_endpgm", [], [])

    def sel_binary(self, op: Operation) -> None:
        t = op.result.type
        a, b = op.operands
        uniform = op.result in self.uniform
        if t == i1:
            if op.name not in _MASK_BINARY:
                raise self.unsupported(op, "on i1")
            if self.only_bounds_buffer_accesses(op.result):
                return   # their resources hold the mask (_mask_factors): it is never computed
            self.salu(self.lane(_MASK_BINARY[op.name]), [self.result(op.result, "s")], [self.scalar(a), self.scalar(b)])
        elif _is_int(t) and dwords(t) == 1 and op.name in ("arith.div", "arith.rem"):
            self.divide_int32(op)
        elif _is_int(t) and dwords(t) == 1:
            row = _INT32_BINARY.get((op.name, _signed(t))) or _INT32_BINARY.get((op.name, None))
            if row is None:
                raise self.unsupported(op, f"on {t}")
            scalar_op, vector_op, swapped = row
            if uniform:
                self.salu(scalar_op, [self.result(op.result, "s")], [self.scalar(a), self.scalar(b)])
            else:
                x, y = (self.operand(b), self.operand(a)) if swapped else (self.operand(a), self.operand(b))
                self.valu(vector_op, [self.result(op.result, "v")], [x, y])
        elif _is_int(t):
            self.sel_int64(op, uniform)
        elif t.name == "f32" and op.name in _F32_BINARY and op.attrs.get("rounding") in (None, "rn"):
            self.valu(_F32_BINARY[op.name], [self.result(op.result, "v")], [self.operand(a), self.operand(b)])
        elif t.name == "f64" and op.name in ("arith.add", "arith.sub", "arith.mul", "arith.max", "arith.min") \
                and op.attrs.get("rounding") in (None, "rn"):
            self.sel_f64(op)
        elif t.name == "f32" and op.name == "arith.div" and op.attrs.get("approx"):
            self.divide_approx(op.result, a, b)
        elif t.name == "f32" and op.name == "arith.div" and op.attrs.get("rounding") in (None, "rn"):
            self.divide_f32(op.result, a, b)
        elif t.name == "f64" and op.name == "arith.div" and op.attrs.get("rounding") in (None, "rn"):
            self.divide_f64(op.result, a, b)
        else:
            raise self.unsupported(op, f"on {t}")

    def sel_f64(self, op: Operation) -> None:
        """f64 arithmetic; a - b is a + (-b), the sign bit of b's high dword flipped."""
        a, b = (self.operand(v) for v in op.operands)
        if op.name == "arith.sub":
            negated = self.new("v", 2).all()
            self.valu("v_mov_b32", [negated.dword(0)], [self.half(b, 0)])
            self.valu("v_xor_b32", [negated.dword(1)], [Imm(0x80000000, "0x80000000", False), self.half(b, 1)])
            b = negated
        opcode = _F64_BINARY["arith.add" if op.name == "arith.sub" else op.name]
        self.valu(opcode, [self.result(op.result, "v")], [a, b])

    def sel_int64(self, op: Operation, uniform: bool) -> None:
        a, b = op.operands
        signed = _signed(op.result.type)
        if op.name in ("arith.add", "arith.sub"):
            lo_op, hi_op = (("s_add_u32", "s_addc_u32") if op.name == "arith.add" else ("s_sub_u32", "s_subb_u32"))
            if uniform:
                d, x, y = self.result(op.result, "s"), self.scalar(a), self.scalar(b)
                self.salu(lo_op, [d.dword(0)], [self.half(x, 0), self.half(y, 0)])
                self.salu(hi_op, [d.dword(1)], [self.half(x, 1), self.half(y, 1)])
            else:
                self.add64(self.result(op.result, "v"), self.operand(a), self.operand(b), op.name == "arith.sub")
        elif op.name in _INT64_BITWISE:
            scalar_op, vector_op = _INT64_BITWISE[op.name]
            if uniform:
                self.salu(scalar_op, [self.result(op.result, "s")], [self.scalar(a), self.scalar(b)])
            else:
                d, x, y = self.result(op.result, "v"), self.operand(a), self.operand(b)
                for i in range(2):
                    self.valu(vector_op, [d.dword(i)], [self.half(x, i), self.half(y, i)])
        elif (op.name, signed if op.name == "arith.shr" else None) in _INT64_SHIFT:
            scalar_op, vector_op = _INT64_SHIFT[op.name, signed if op.name == "arith.shr" else None]
            if uniform:
                self.salu(scalar_op, [self.result(op.result, "s")], [self.scalar(a), self.half(self.scalar(b), 0)])
            else:
                self.valu(vector_op, [self.result(op.result, "v")], [self.half(self.operand(b), 0), self.operand(a)])
        elif op.name == "arith.mul":
            self.multiply64(op.result, a, b, uniform)
        elif op.name in ("arith.div", "arith.rem"):
            self.divide_int64(op)
        elif op.name in ("arith.max", "arith.min"):  # no 64-bit min/max instruction: compare and select
            kind = ("i" if signed else "u") + "64"
            mask = self.new_mask()
            self.valu(f"v_cmp_{'gt' if op.name == 'arith.max' else 'lt'}_{kind}", [mask], [self.operand(a), self.operand(b)])
            d, x, y = self.result(op.result, "v"), self.operand(a), self.operand(b)
            for i in range(2):
                self.valu("v_cndmask_b32", [d.dword(i)], [self.half(y, i), self.half(x, i), mask])
        else:
            raise self.unsupported(op, f"on {op.result.type}")

    def multiply64(self, result: Value, a: Value, b: Value, uniform: bool) -> None:
        """The low 64 bits of a * b (signed or not alike) from 32-bit products:
        lo(a0 b0) and hi(a0 b0) + lo(a0 b1) + lo(a1 b0) (a1 b1 lies above bit 63)."""
        if uniform:
            d, x, y = self.result(result, "s"), self.scalar(a), self.scalar(b)
            cross0, cross1, high, partial = (self.new("s").all() for _ in range(4))
            self.salu("s_mul_i32", [d.dword(0)], [self.half(x, 0), self.half(y, 0)])
            self.salu("s_mul_hi_u32", [high], [self.half(x, 0), self.half(y, 0)])
            self.salu("s_mul_i32", [cross0], [self.half(x, 0), self.half(y, 1)])
            self.salu("s_mul_i32", [cross1], [self.half(x, 1), self.half(y, 0)])
            self.salu("s_add_u32", [partial], [high, cross0])
            self.salu("s_add_u32", [d.dword(1)], [partial, cross1])
            return
        d, x, y = self.result(result, "v"), self.operand(a), self.operand(b)
        high, cross0, cross1 = (self.new("v").all() for _ in range(3))
        self.valu("v_mul_lo_u32", [d.dword(0)], [self.half(x, 0), self.half(y, 0)])
        self.valu("v_mul_hi_u32", [high], [self.half(x, 0), self.half(y, 0)])
        self.valu("v_mul_lo_u32", [cross0], [self.half(x, 0), self.half(y, 1)])
        self.valu("v_mul_lo_u32", [cross1], [self.half(x, 1), self.half(y, 0)])
        self.valu("v_add3_u32", [d.dword(1)], [high, cross0, cross1])

    def divide_int64(self, op: Operation) -> None:
        """64-bit integer division or remainder (truncating; the remainder has the dividend's
        sign), by restoring division: a loop of 64 steps, each shifting the next bit of the
        dividend into the remainder and subtracting the divisor where it fits, setting that
        quotient bit. Signed: on magnitudes, signs restored after. A zero divisor gives a
        quotient of all ones and the dividend as remainder (as the 32-bit division does)."""
        x, y = (self.vgpr(v) for v in op.operands)
        signed = _signed(op.result.type)
        v2, v1 = (lambda: self.new("v", 2).all()), (lambda: self.new("v").all())  # noqa: E731
        if signed:
            signs, magnitudes = [], []
            for value in (x, y):
                sign, magnitude = v1(), v2()
                self.valu("v_ashrrev_i32", [sign], [Imm.int(31), self.half(value, 1)])
                self.negate_where_signed(magnitude, value, sign)
                signs.append(sign)
                magnitudes.append(magnitude)
            x, y = magnitudes
        dividend, remainder, quotient = v2(), v2(), v2()
        for d in range(2):
            self.valu("v_mov_b32", [dividend.dword(d)], [self.half(x, d)])
            self.valu("v_mov_b32", [remainder.dword(d)], [Imm.int(0)])
            self.valu("v_mov_b32", [quotient.dword(d)], [Imm.int(0)])
        self.forget_recent()
        steps = self.new("s").all()
        self.salu("s_mov_b32", [steps], [Imm.int(64)])
        self.loops += 1
        top = Label(f".Ldivide{self.loops}")
        self.emit("label", [], [top])
        next_bit, difference, quotient_bit = v1(), v2(), v1()
        fits = self.new_mask()
        self.valu("v_lshrrev_b32", [next_bit], [Imm.int(31), dividend.dword(1)])
        self.valu("v_lshlrev_b64", [remainder], [Imm.int(1), remainder])
        self.valu("v_or_b32", [remainder.dword(0)], [remainder.dword(0), next_bit])
        self.valu("v_lshlrev_b64", [dividend], [Imm.int(1), dividend])
        self.valu("v_lshlrev_b64", [quotient], [Imm.int(1), quotient])
        self.valu("v_cmp_ge_u64", [fits], [remainder, y])
        self.add64(difference, remainder, y, subtract=True)
        for d in range(2):
            self.valu("v_cndmask_b32", [remainder.dword(d)], [remainder.dword(d), difference.dword(d), fits])
        self.valu("v_or_b32", [quotient_bit], [Imm.int(1), quotient.dword(0)])
        self.valu("v_cndmask_b32", [quotient.dword(0)], [quotient.dword(0), quotient_bit, fits])
        self.salu("s_sub_u32", [steps], [steps, Imm.int(1)])
        self.salu("s_cmp_lg_u32", [], [steps, Imm.int(0)])
        self.emit("s_cbranch_scc1", [], [top])
        self.forget_recent()
        result = quotient if op.name == "arith.div" else remainder
        if not signed:
            self.values[op.result] = result
            return
        sign = signs[0]
        if op.name == "arith.div":
            sign = v1()
            self.valu("v_xor_b32", [sign], [signs[0], signs[1]])
        self.negate_where_signed(self.result(op.result, "v"), result, sign)

    def negate_where_signed(self, d: Sub, value: Operand, sign: Sub) -> None:
        """d = (value ^ s) - s on 64 bits, s a sign dword (0 or -1) standing for both halves:
        -value where s is -1, value where 0."""
        flipped = self.new("v", 2).all()
        for k in range(2):
            self.valu("v_xor_b32", [flipped.dword(k)], [self.half(value, k), sign])
        self.valu("v_sub_co_u32", [d.dword(0), VCC], [flipped.dword(0), sign])
        self.valu("v_subb_co_u32", [d.dword(1), VCC], [flipped.dword(1), sign, VCC])

    def add64(self, d: Sub, x: Operand, y: Operand, subtract: bool = False) -> None:
        """d = x +/- y on 64-bit values in VGPRs (a carry through vcc)."""
        lo_op, hi_op = ("v_sub_co_u32", "v_subb_co_u32") if subtract else ("v_add_co_u32", "v_addc_co_u32")
        self.valu(lo_op, [d.dword(0), VCC], [self.half(x, 0), self.half(y, 0)])
        self.valu(hi_op, [d.dword(1), VCC], [self.half(x, 1), self.half(y, 1), VCC])

    def divide_int32(self, op: Operation) -> None:
        """32-bit integer division or remainder (truncating; the remainder has the dividend's
        sign), with no divide instruction: an f32 reciprocal estimate of 2^32 / y, one Newton
        step in integers, then q = mulhi(x, z) corrected twice (the scheme LLVM's AMDGPU backend
        uses). Signed: on magnitudes, signs restored after. A zero divisor gives -1 / x."""
        x, y = (self.to_vgpr(self.operand(v)) for v in op.operands)
        signed = _signed(op.result.type)
        v = lambda: self.new("v").all()  # noqa: E731
        if signed:
            sign_x, sign_y, ax, ay = v(), v(), v(), v()
            self.valu("v_ashrrev_i32", [sign_x], [Imm.int(31), x])
            self.valu("v_ashrrev_i32", [sign_y], [Imm.int(31), y])
            for magnitude, value, sign in ((ax, x, sign_x), (ay, y, sign_y)):   # |v| = (v + s) ^ s
                summed = v()
                self.valu("v_add_u32", [summed], [value, sign])
                self.valu("v_xor_b32", [magnitude], [summed, sign])
            x, y = ax, ay
        fy, rcp, scaled, z, neg_y, t, hi, z1, q, qy, r = (v() for _ in range(11))
        self.valu("v_cvt_f32_u32", [fy], [y])
        self.valu("v_rcp_f32", [rcp], [fy])
        self.valu("v_mul_f32", [scaled], [Imm(0x4F7FFFFE, "0x4f7ffffe", False), rcp])   # 2^32 - 512, just below
        self.valu("v_cvt_u32_f32", [z], [scaled])
        self.valu("v_sub_u32", [neg_y], [Imm.int(0), y])
        self.valu("v_mul_lo_u32", [t], [neg_y, z])
        self.valu("v_mul_hi_u32", [hi], [z, t])
        self.valu("v_add_u32", [z1], [z, hi])
        self.valu("v_mul_hi_u32", [q], [x, z1])
        self.valu("v_mul_lo_u32", [qy], [q, y])
        self.valu("v_sub_u32", [r], [x, qy])
        for _ in range(2):   # the estimate is at most 2 short
            big = self.new_mask()
            q_up, r_down, q_next, r_next = v(), v(), v(), v()
            self.valu("v_cmp_ge_u32", [big], [r, y])
            self.valu("v_add_u32", [q_up], [q, Imm.int(1)])
            self.valu("v_sub_u32", [r_down], [r, y])
            self.valu("v_cndmask_b32", [q_next], [q, q_up, big])
            self.valu("v_cndmask_b32", [r_next], [r, r_down, big])
            q, r = q_next, r_next
        result, sign = (q, None) if op.name == "arith.div" else (r, None)
        if signed:
            sign = v()
            if op.name == "arith.div":
                self.valu("v_xor_b32", [sign], [sign_x, sign_y])
            else:
                sign = sign_x
            flipped = v()
            self.valu("v_xor_b32", [flipped], [result, sign])
            self.valu("v_sub_u32", [self.result(op.result, "v")], [flipped, sign])   # (v ^ s) - s
        else:
            self.values[op.result] = result

    def divide_f32(self, result: Value, a: Value, b: Value) -> None:
        """a / b correctly rounded. v_div_scale_f32 keeps the operands where a reciprocal and its
        residuals are normal (VCC: only one was scaled); a Newton step refines r ~ 1/d, and since
        v_rcp_f32 may err by a whole ulp (CDNA3 ISA 6.2), which a Newton step can leave on the
        wrong side of a tie, r and its neighbour towards 1/d are compared by their residuals
        1 - d * r (exact in an fma) so that r = RN(1/d); then q = n * r corrected twice by its
        residual n - d * q is the correctly rounded quotient (Markstein's theorem), the last
        correction rounded once with the scale undone by v_div_fmas_f32; v_div_fixup_f32 answers
        zeros, infinities and NaNs. The sequence follows LLVM's AMDGPU backend plus the
        neighbour test. The VALU instructions between the VCC write and v_div_fmas_f32 cover
        its 4 wait states."""
        num, den = self.to_vgpr(self.operand(a)), self.to_vgpr(self.operand(b))
        v = lambda: self.new("v").all()  # noqa: E731
        den_scaled, num_scaled, rcp, neg_den, e, r0, e0, step, r_other, e_other = (v() for _ in range(10))
        size0, size_other, r, q0, t0, q1, t1, q = (v() for _ in range(8))
        towards, nearer = self.new_mask(), self.new_mask()
        one, magnitude = Imm(0x3F800000, "1.0", True), Imm(0x7FFFFFFF, "0x7fffffff", False)
        self.valu("v_div_scale_f32", [den_scaled, VCC], [den, den, num])
        self.valu("v_div_scale_f32", [num_scaled, VCC], [num, den, num])
        self.valu("v_rcp_f32", [rcp], [den_scaled])
        self.valu("v_xor_b32", [neg_den], [Imm(0x80000000, "0x80000000", False), den_scaled])
        self.valu("v_fma_f32", [e], [neg_den, rcp, one])
        self.valu("v_fma_f32", [r0], [e, rcp, rcp])
        self.valu("v_fma_f32", [e0], [neg_den, r0, one])
        self.valu("v_cmp_lt_f32", [towards], [Imm.int(0), e0])    # |r0| < |1/d|: the next f32 up in magnitude
        self.valu("v_cndmask_b32", [step], [Imm.int(-1), Imm.int(1), towards])
        self.valu("v_add_u32", [r_other], [r0, step])
        self.valu("v_fma_f32", [e_other], [neg_den, r_other, one])
        self.valu("v_and_b32", [size0], [magnitude, e0])
        self.valu("v_and_b32", [size_other], [magnitude, e_other])
        self.valu("v_cmp_lt_f32", [nearer], [size_other, size0])
        self.valu("v_cndmask_b32", [r], [r0, r_other, nearer])
        self.valu("v_mul_f32", [q0], [num_scaled, r])
        self.valu("v_fma_f32", [t0], [neg_den, q0, num_scaled])
        self.valu("v_fma_f32", [q1], [t0, r, q0])
        self.valu("v_fma_f32", [t1], [neg_den, q1, num_scaled])
        self.valu("v_div_fmas_f32", [q], [t1, r, q1])
        self.valu("v_div_fixup_f32", [self.result(result, "v")], [q, den, num])

    def divide_f64(self, result: Value, a: Value, b: Value) -> None:
        """a / b on f64, correctly rounded, as divide_f32 does it: v_div_scale_f64 keeps the
        reciprocal and residuals normal; v_rcp_f64 is good to only 2^29 ulp (CDNA3 ISA 6.2), so
        two Newton steps bring r within an ulp of 1/d, and r or its neighbour towards 1/d
        (chosen by their exact fma residuals 1 - d * r) is RN(1/d); q = n * r corrected twice by
        its residual n - d * q is then the correctly rounded quotient (Markstein), the last
        correction rounded once with the scale undone by v_div_fmas_f64 and the special cases
        answered by v_div_fixup_f64. The numerator's v_div_scale_f64 comes after the neighbour
        step, whose 64-bit add writes VCC; the four VALU ops after it cover v_div_fmas_f64's
        wait states. The steps follow LLVM's AMDGPU lowering of fdiv f64 plus the neighbour test."""
        num, den = self.vgpr(a), self.vgpr(b)
        v2 = lambda: self.new("v", 2).all()  # noqa: E731
        den_scaled, rcp, neg_den, e, r0, e0, r1, e1, r_other, e_other = (v2() for _ in range(10))
        size1, size_other, r, num_scaled, q0, t0, q1, t1, q = (v2() for _ in range(9))
        towards, nearer = self.new("s", 2).all(), self.new("s", 2).all()
        step_low, step_high = self.new("v").all(), self.new("v").all()
        one = self.materialize(0x3FF0000000000000, 2)
        sign, magnitude = Imm(0x80000000, "0x80000000", False), Imm(0x7FFFFFFF, "0x7fffffff", False)
        self.valu("v_div_scale_f64", [den_scaled, VCC], [den, den, num])
        self.valu("v_rcp_f64", [rcp], [den_scaled])
        self.valu("v_mov_b32", [neg_den.dword(0)], [den_scaled.dword(0)])
        self.valu("v_xor_b32", [neg_den.dword(1)], [sign, den_scaled.dword(1)])
        for residual, refined, estimate in ((e, r0, rcp), (e0, r1, r0)):
            self.valu("v_fma_f64", [residual], [neg_den, estimate, one])
            self.valu("v_fma_f64", [refined], [residual, estimate, estimate])
        self.valu("v_fma_f64", [e1], [neg_den, r1, one])
        self.valu("v_cmp_lt_f64", [towards], [Imm.int(0), e1])    # |r1| < |1/d|: the next f64 up in magnitude
        self.valu("v_cndmask_b32", [step_low], [Imm.int(-1), Imm.int(1), towards])
        self.valu("v_cndmask_b32", [step_high], [Imm.int(-1), Imm.int(0), towards])
        self.valu("v_add_co_u32", [r_other.dword(0), VCC], [r1.dword(0), step_low])
        self.valu("v_addc_co_u32", [r_other.dword(1), VCC], [r1.dword(1), step_high, VCC])
        self.valu("v_fma_f64", [e_other], [neg_den, r_other, one])
        for size, residual in ((size1, e1), (size_other, e_other)):
            self.valu("v_mov_b32", [size.dword(0)], [residual.dword(0)])
            self.valu("v_and_b32", [size.dword(1)], [magnitude, residual.dword(1)])
        self.valu("v_cmp_lt_f64", [nearer], [size_other, size1])
        for k in range(2):
            self.valu("v_cndmask_b32", [r.dword(k)], [r1.dword(k), r_other.dword(k), nearer])
        self.valu("v_div_scale_f64", [num_scaled, VCC], [num, den, num])
        self.valu("v_mul_f64", [q0], [num_scaled, r])
        self.valu("v_fma_f64", [t0], [neg_den, q0, num_scaled])
        self.valu("v_fma_f64", [q1], [t0, r, q0])
        self.valu("v_fma_f64", [t1], [neg_den, q1, num_scaled])
        self.valu("v_div_fmas_f64", [q], [t1, r, q1])
        self.valu("v_div_fixup_f64", [self.result(result, "v")], [q, den, num])

    def divide_approx(self, result: Value, a: Value, b: Value) -> None:
        """a / b as a * rcp(b): v_rcp_f32 is within 1 ulp (CDNA3 ISA 6.2), the product within 2."""
        inverse = self.new("v").all()
        self.valu("v_rcp_f32", [inverse], [self.operand(b)])
        self.valu("v_mul_f32", [self.result(result, "v")], [self.operand(a), inverse])

    def sel_unary(self, op: Operation) -> None:
        t, (a,) = op.result.type, op.operands
        if t.name == "f32" and op.name in ("arith.neg", "math.abs"):
            opcode, bits = ("v_xor_b32", 0x80000000) if op.name == "arith.neg" else ("v_and_b32", 0x7FFFFFFF)
            self.valu(opcode, [self.result(op.result, "v")], [Imm(bits, hex(bits), False), self.operand(a)])
        elif t.name == "f64" and op.name in ("arith.neg", "math.abs"):   # the sign is bit 31 of the high dword
            opcode, bits = ("v_xor_b32", 0x80000000) if op.name == "arith.neg" else ("v_and_b32", 0x7FFFFFFF)
            d, x = self.result(op.result, "v"), self.operand(a)
            self.valu("v_mov_b32", [d.dword(0)], [self.half(x, 0)])
            self.valu(opcode, [d.dword(1)], [Imm(bits, hex(bits), False), self.half(x, 1)])
        elif _is_int(t) and op.name == "math.abs" and _signed(t) and dwords(t) == 1:   # max(x, -x)
            negated = self.new("v").all()
            self.valu("v_sub_u32", [negated], [Imm.int(0), self.operand(a)])
            self.valu("v_max_i32", [self.result(op.result, "v")], [self.operand(a), negated])
        elif _is_int(t) and op.name == "math.abs" and _signed(t):   # 64 bits: x < 0 ? -x : x
            x, negated, negative = self.operand(a), self.new("v", 2).all(), self.new_mask()
            self.add64(negated, Imm.int(0), x, subtract=True)
            self.valu("v_cmp_lt_i64", [negative], [x, Imm.int(0)])
            d = self.result(op.result, "v")
            for i in range(2):
                self.valu("v_cndmask_b32", [d.dword(i)], [self.half(x, i), negated.dword(i), negative])
        elif _is_int(t) and dwords(t) == 2 and op.name in ("arith.neg", "arith.not"):
            d, x = self.result(op.result, "v"), self.operand(a)
            if op.name == "arith.neg":
                self.add64(d, Imm.int(0), x, subtract=True)
            else:
                for i in range(2):
                    self.valu("v_xor_b32", [d.dword(i)], [Imm.int(-1), self.half(x, i)])
        elif t.bits == 1 and op.name == "arith.not":
            self.salu(self.lane("s_not_b64"), [self.result(op.result, "s")], [self.scalar(a)])
        elif _is_int(t) and dwords(t) == 1 and op.name in ("arith.neg", "arith.not"):
            if op.result in self.uniform:
                scalar_op, first = ("s_sub_u32", Imm.int(0)) if op.name == "arith.neg" else ("s_xor_b32", Imm.int(-1))
                self.salu(scalar_op, [self.result(op.result, "s")], [first, self.scalar(a)])
            else:
                vector_op, first = ("v_sub_u32", Imm.int(0)) if op.name == "arith.neg" else ("v_xor_b32", Imm.int(-1))
                self.valu(vector_op, [self.result(op.result, "v")], [first, self.operand(a)])
        else:
            raise self.unsupported(op, f"on {t}")

    def sel_fma(self, op: Operation) -> None:
        name = op.result.type.name
        if name not in ("f32", "f64") or op.attrs.get("rounding") not in (None, "rn"):
            raise self.unsupported(op, f"on {op.result.type}")
        self.valu(f"v_fma_{name}", [self.result(op.result, "v")], [self.operand(v) for v in op.operands])

    def sel_round(self, op: Operation) -> None:
        if op.result.type.name != "f32":
            raise self.unsupported(op, f"on {op.result.type}")
        self.valu(_ROUND_F32[op.name], [self.result(op.result, "v")], [self.operand(op.operand(0))])

    def sel_sqrt(self, op: Operation) -> None:
        if op.result.type.name != "f32" or op.attrs.get("rounding") not in (None, "rn"):
            raise self.unsupported(op, f"on {op.result.type} (only the f32 square root)")
        if op.attrs.get("approx"):
            self.valu("v_sqrt_f32", [self.result(op.result, "v")], [self.operand(op.operand(0))])
        else:
            self.sqrt_f32(op.result, op.operand(0))

    def sqrt_f32(self, result: Value, a: Value) -> None:
        """sqrt(x) correctly rounded (the scheme of LLVM's AMDGPU backend): x below 2^-96 is scaled
        by 2^32 so that its root is normal; v_sqrt_f32 (within 1 ulp) gives s, and the residuals
        x - s_down * s and x - s_up * s of its two neighbours (fma: exact) say whether the root lies
        nearer a neighbour; the root is scaled back by 2^-16. Zeros, infinities and NaNs pass
        through: their neighbours' residuals are NaN or zero, which neither test takes."""
        x = self.to_vgpr(self.operand(a))
        v = lambda: self.new("v").all()  # noqa: E731
        mask = lambda: self.new_mask()  # noqa: E731
        tiny, scaled, sx, s, s_down, s_up, neg_down, neg_up, r_down, r_up, s1, s2, unscaled = (v() for _ in range(13))
        small, take_down, take_up = mask(), mask(), mask()
        sign = Imm(0x80000000, "0x80000000", False)
        self.valu("v_cmp_gt_f32", [small], [Imm(0x0F800000, "0xf800000", False), x])    # 2^-96 > x
        self.valu("v_mul_f32", [scaled], [Imm(0x4F800000, "0x4f800000", False), x])     # 2^32 x
        self.valu("v_cndmask_b32", [sx], [x, scaled, small])
        self.valu("v_sqrt_f32", [s], [sx])
        self.valu("v_add_u32", [s_down], [Imm.int(-1), s])
        self.valu("v_add_u32", [s_up], [Imm.int(1), s])
        self.valu("v_xor_b32", [neg_down], [sign, s_down])
        self.valu("v_xor_b32", [neg_up], [sign, s_up])
        self.valu("v_fma_f32", [r_down], [neg_down, s, sx])
        self.valu("v_fma_f32", [r_up], [neg_up, s, sx])
        self.valu("v_cmp_ge_f32", [take_down], [Imm.int(0), r_down])
        self.valu("v_cndmask_b32", [s1], [s, s_down, take_down])
        self.valu("v_cmp_lt_f32", [take_up], [Imm.int(0), r_up])
        self.valu("v_cndmask_b32", [s2], [s1, s_up, take_up])
        self.valu("v_mul_f32", [unscaled], [Imm(0x37800000, "0x37800000", False), s2])   # 2^-16
        self.valu("v_cndmask_b32", [self.result(result, "v")], [s2, unscaled, small])

    def f32_to_bf16(self, result: Value, a: Value) -> None:
        """Round to nearest even by integer arithmetic on the bits (gfx942 and gfx90a have no bf16
        conversion): (x + 0x7fff + bit 16 of x) >> 16, and a quiet NaN for NaN."""
        x = self.operand(a)
        lsb, biased, rounded = (self.new("v").all() for _ in range(3))
        nan = self.new_mask()
        self.valu("v_bfe_u32", [lsb], [x, Imm.int(16), Imm.int(1)])
        self.valu("v_add3_u32", [biased], [x, Imm.int(0x7FFF), lsb])
        self.valu("v_lshrrev_b32", [rounded], [Imm.int(16), biased])
        self.valu("v_cmp_u_f32", [nan], [x, x])
        self.valu("v_cndmask_b32", [self.result(result, "v")], [rounded, Imm.int(BF16_QUIET_NAN), nan])

    def sel_approx(self, op: Operation) -> None:
        fn = op.attrs["fn"]
        if fn == "div":
            self.divide_approx(op.result, *op.operands)
        elif fn in _APPROX:
            self.valu(_APPROX[fn], [self.result(op.result, "v")], [self.operand(op.operand(0))])
        elif fn in ("sin", "cos"):   # v_sin_f32 / v_cos_f32 take revolutions: x / (2 pi), x in [-pi, pi] here
            revolutions = self.new("v").all()
            inverse = struct.unpack("<I", struct.pack("<f", INV_TWO_PI))[0]
            self.valu("v_mul_f32", [revolutions], [Imm(inverse, hex(inverse), False), self.operand(op.operand(0))])
            self.valu(f"v_{fn}_f32", [self.result(op.result, "v")], [revolutions])
        else:
            raise self.unsupported(op, f"fn = {fn}")

    def sel_cmp(self, op: Operation) -> None:
        """Compares are emitted where their masks are used (see `compare`)."""
        t = op.operand(0).type
        if not (_is_int(t) or t.name in ("f32", "f64")):
            raise self.unsupported(op, f"on {t}")
        self.compares[op.result] = op

    def compare(self, v: Value) -> Sub:
        """The lane mask of compare `v`: the one computed last if it is at most REMAT_WINDOW
        instructions old, else computed again from its operands (SGPRs are few, a mask takes
        two, and a kernel with many predicated accesses would run out holding them all)."""
        recent = self.recent_masks.get(v)
        if recent is not None and len(self.insts) - recent[1] <= REMAT_WINDOW:
            return recent[0]
        op = self.compares[v]
        a, b = op.operands
        t, pred = a.type, op.attrs["predicate"]
        mask = self.new_mask()
        if _is_int(t) and op.result in self.uniform and (dwords(t) == 1 or pred in ("eq", "ne")):
            kind = "u64" if dwords(t) == 2 else ("i32" if _signed(t) else "u32")
            self.salu(f"s_cmp_{_SCALAR_CMP[pred]}_{kind}", [], [self.scalar(a), self.scalar(b)])
            self.salu(self.lane("s_cselect_b64"), [mask], [Imm.int(-1), Imm.int(0)])
        elif _is_int(t):
            kind = ("i" if _signed(t) else "u") + ("64" if dwords(t) == 2 else "32")
            self.valu(f"v_cmp_{pred}_{kind}", [mask], [self.operand(a), self.operand(b)])
        else:
            self.valu(f"v_cmp_{_FLOAT_CMP[pred]}_{t.name}", [mask], [self.operand(a), self.operand(b)])
        self.recent_masks[v] = (mask, len(self.insts))
        return mask

    def sel_select(self, op: Operation) -> None:
        c, a, b = op.operands
        t = op.result.type
        if not isinstance(c.type, DType) or c.type.bits != 1:
            raise self.unsupported(op, "with a non-i1 condition")
        cond = self.scalar(c)
        if t == i1:  # masks: (c & a) | (b & ~c)
            d = self.result(op.result, "s")
            chosen, other = self.new_mask(), self.new_mask()
            self.salu(self.lane("s_and_b64"), [chosen], [cond, self.scalar(a)])
            self.salu(self.lane("s_andn2_b64"), [other], [self.scalar(b), cond])
            self.salu(self.lane("s_or_b64"), [d], [chosen, other])
        elif op.result in self.uniform and _is_int(t):
            d = self.result(op.result, "s")
            x, y = self.scalar(a), self.scalar(b)
            self.salu(self.lane("s_cmp_lg_u64"), [], [cond, Imm.int(0)])
            for i in range(dwords(t)):
                self.salu("s_cselect_b32", [d.dword(i)], [self.half(x, i) if dwords(t) == 2 else x,
                                                          self.half(y, i) if dwords(t) == 2 else y])
        else:
            d = self.result(op.result, "v")
            x, y = self.operand(a), self.operand(b)
            for i in range(dwords(t)):
                xi, yi = (self.half(x, i), self.half(y, i)) if dwords(t) == 2 else (x, y)
                self.valu("v_cndmask_b32", [d.dword(i)], [yi, xi, cond])

    def sel_bitcast(self, op: Operation) -> None:
        """The same bits under another type. A narrow integer result (8 or 16 bits) is extended
        again in its own signedness when the source's upper bits may differ (u16 -> i16 turns
        0x0000d721 into 0xffffd721), as every narrow integer sits in its register."""
        a, t = op.operand(0), op.result.type
        if dwords(a.type) != dwords(t) or t == i1:
            raise self.unsupported(op, f"from {a.type} to {t}")
        narrow = isinstance(t, DType) and t.is_integer and t.bits < 32   # a pointer is 64 bits wide
        reextend = narrow and not (a.type.is_integer and _signed(a.type) == _signed(t))
        if a in self.constants:
            value, source_type = self.constants[a]
            if reextend:
                raw = constant_bits(value, source_type) & ((1 << t.bits) - 1)
                self.constants[op.result] = (raw - (1 << t.bits) if _signed(t) and raw >> (t.bits - 1) else raw, t)
            else:
                self.constants[op.result] = value, source_type
        elif reextend:
            self.valu("v_bfe_i32" if _signed(t) else "v_bfe_u32", [self.result(op.result, "v")],
                      [self.operand(a), Imm.int(0), Imm.int(t.bits)])
        else:
            self.values[op.result] = self.operand(a)  # applies a masked load's `other` first

    def sel_cvt(self, op: Operation) -> None:
        a = op.operand(0)
        src, dst, rnd = a.type, op.result.type, op.attrs.get("rnd", "")
        if a in self.constants and src.is_floating and dst.is_floating and rnd in ("", "rn"):
            # numpy's float conversions round to nearest even, as cvt.rn does
            value = np.array(self.constants[a][0], dtype=np.float32 if src.bits == 32 else np.float16)
            self.constants[op.result] = (float(value.astype(np.float16 if dst.name == "f16" else np.float32)), dst)
            return
        opcode = _CVT.get((src.name, dst.name, rnd))
        if opcode is not None:
            self.valu(opcode, [self.result(op.result, "v")], [self.operand(a)])
        elif (src.name, dst.name, rnd) == ("f32", "bf16", "rn"):
            self.f32_to_bf16(op.result, a)
        elif src.name == "bf16" and dst.name == "f32":
            self.valu("v_lshlrev_b32", [self.result(op.result, "v")], [Imm.int(16), self.operand(a)])
        elif src.is_integer and src.bits in (8, 16) and dst.name == "f32" and rnd == "rn":
            # the register holds the value extended to 32 bits: the 32-bit conversion is exact
            opcode = "v_cvt_f32_i32" if _signed(src) else "v_cvt_f32_u32"
            self.valu(opcode, [self.result(op.result, "v")], [self.operand(a)])
        elif src.name == "f32" and dst.is_integer and dst.bits in (8, 16) and rnd == "rzi":
            self.f32_to_narrow_int(op.result, a, dst)
        elif src.is_integer and dst.is_integer and src.bits > 1 and dst.bits > 1:
            self.int_resize(op, a, src, dst)
        else:
            raise self.unsupported(op, f"from {src} to {dst} (rnd = {rnd!r})")

    def f32_to_narrow_int(self, result: Value, a: Value, dst: DType) -> None:
        """Truncate to a 32-bit integer (saturating, NaN -> 0), then clamp to the narrow range,
        as cvt.rzi.{s,u}{8,16}.f32 saturates."""
        wide = self.new("v").all()
        self.valu("v_cvt_i32_f32" if _signed(dst) else "v_cvt_u32_f32", [wide], [self.operand(a)])
        low, high = (-(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1) if _signed(dst) else (0, (1 << dst.bits) - 1)
        kind = "i32" if _signed(dst) else "u32"
        clamped = self.new("v").all()
        self.valu(f"v_max_{kind}", [clamped], [Imm.int(low), wide])
        self.valu(f"v_min_{kind}", [self.result(result, "v")], [Imm.int(high), clamped])

    def int_resize(self, op: Operation, a: Value, src: DType, dst: DType) -> None:
        """Integer widening and narrowing; 8/16-bit values sit in 32-bit registers extended by
        their own signedness, so widening to 32 bits changes no bit."""
        if a in self.constants:
            value = int(self.constants[a][0]) & ((1 << dst.bits) - 1)
            if _signed(dst) and value >> (dst.bits - 1):
                value -= 1 << dst.bits
            self.constants[op.result] = (value, dst)
            return
        x = self.operand(a)
        low = self.half(x, 0) if src.bits == 64 else x
        if dst.bits == 64 and src.bits == 64 or dst.bits == 32:
            self.values[op.result] = x if dst.bits == 64 else low
        elif dst.bits == 64:
            self.values[op.result] = self.widen(low, _signed(src), op.result in self.uniform)
        else:
            self.valu("v_bfe_i32" if _signed(dst) else "v_bfe_u32", [self.result(op.result, "v")],
                      [low, Imm.int(0), Imm.int(dst.bits)])

    def widen(self, low: Operand, signed: bool, scalar: bool) -> Sub:
        """A register pair holding the 32-bit `low` sign- or zero-extended to 64 bits."""
        if scalar:
            pair, low = self.new("s", 2).all(), self.to_sgpr(low)
            self.salu("s_mov_b32", [pair.dword(0)], [low])
            if signed:
                self.salu("s_ashr_i32", [pair.dword(1)], [low, Imm.int(31)])
            else:
                self.salu("s_mov_b32", [pair.dword(1)], [Imm.int(0)])
            return pair
        pair = self.new("v", 2).all()
        self.valu("v_mov_b32", [pair.dword(0)], [low])
        if signed:
            self.valu("v_ashrrev_i32", [pair.dword(1)], [Imm.int(31), pair.dword(0)])
        else:
            self.valu("v_mov_b32", [pair.dword(1)], [Imm.int(0)])
        return pair

    def sel_addptr(self, op: Operation) -> None:
        """p + ext(i) * scale. Per lane with a 32-bit index: one v_mad_{i64_i32,u64_u32}
        (i * scale + p in 64 bits); uniform, or with a 64-bit index: widen, shift, add."""
        p, i = op.operands
        scale = op.attrs["scale"]
        if scale <= 0 or scale & (scale - 1):
            raise self.unsupported(op, f"with scale {scale} (not a power of two)")
        shift = scale.bit_length() - 1
        scalar = op.result in self.uniform
        users = op.result.users()
        if users and all(self.buffer_accesses.get(user) for user in users):
            return   # only buffer accesses read it: they address from the resource instead
        if op.result in self.updated_in_place:   # p += offset in p's own register (pointer_updates)
            offset = self.scalar(i) if i in self.uniform else self.to_vgpr(self.operand(i))
            if dwords(i.type) == 1:
                offset = self.widen(offset, _signed(i.type), i in self.uniform)
            elif not isinstance(offset, Sub):   # a 64-bit constant that inlines
                offset = self.to_vgpr(offset, 2)
            if shift:
                shifted = self.new(offset.bank, 2).all()
                if offset.bank == "s":
                    self.salu("s_lshl_b64", [shifted], [offset, Imm.int(shift)])
                else:
                    self.valu("v_lshlrev_b64", [shifted], [Imm.int(shift), offset])
                offset = shifted
            home = self.updated_in_place[op.result]
            self.add64(home, home, offset)
            self.values[op.result] = home
            return
        if not scalar and dwords(i.type) == 1:
            mad = "v_mad_i64_i32" if _signed(i.type) else "v_mad_u64_u32"
            self.valu(mad, [self.result(op.result, "v"), VCC], [self.operand(i), Imm.int(scale), self.operand(p)])
            return
        index = self.scalar(i) if scalar else self.operand(i)
        if dwords(i.type) == 1:
            index = self.widen(index, _signed(i.type), scalar)
        if scalar:
            if shift:
                shifted = self.new("s", 2).all()
                self.salu("s_lshl_b64", [shifted], [index, Imm.int(shift)])
                index = shifted
            d, base = self.result(op.result, "s"), self.scalar(p)
            self.salu("s_add_u32", [d.dword(0)], [self.half(base, 0), self.half(index, 0)])
            self.salu("s_addc_u32", [d.dword(1)], [self.half(base, 1), self.half(index, 1)])
            return
        if shift:
            shifted = self.new("v", 2).all()
            self.valu("v_lshlrev_b64", [shifted], [Imm.int(shift), self.to_vgpr(index)])
            index = shifted
        self.add64(self.result(op.result, "v"), self.operand(p), index)

    def address(self, op: Operation, shared: bool) -> tuple[Operand, int]:
        """The address register and immediate offset of an access: a VGPR pair and the signed
        13-bit offset for global memory, a VGPR and the unsigned 16-bit offset for LDS (offsets
        outside the field are added to the address first)."""
        addr, offset = self.to_vgpr(self.operand(op.operand(0))), op.attrs.get("offset", 0)
        low, high = DS_OFFSET_RANGE if shared else GLOBAL_OFFSET_RANGE
        if low <= offset <= high:
            return addr, offset
        if shared:
            moved = self.new("v").all()
            self.valu("v_add_u32", [moved], [Imm.int(offset), addr])
            return moved, 0
        moved = self.new("v", 2).all()
        self.add64(moved, addr, self.materialize(offset & ((1 << 64) - 1), 2))
        return moved, 0

    def masked(self, pred: Value, access) -> Optional[Operand]:
        """Run `access()` in the lanes where `pred` holds: EXEC narrowed around it, restored after.
        Returns the mask (None when `pred` is the constant true)."""
        if pred in self.constants and self.constants[pred][0]:
            access()
            return None
        mask = self.scalar(pred)
        saved = self.new_mask()
        self.salu(self.lane("s_and_saveexec_b64"), [saved], [mask])
        access()
        self.salu(self.lane("s_mov_b64"), [EXEC], [saved])
        return mask

    def sel_load(self, op: Operation) -> None:
        t, vector = op.results[0].type, op.attrs.get("vector", 1)
        if not (isinstance(t, PointerType) or t.bits in (8, 16, 32, 64)):
            raise self.unsupported(op, f"of {t}")
        if op in self.buffer_accesses:
            self.buffer_load(op, self.buffer_accesses[op])
            return
        if op in self.d16_reads:   # half of a packed word, read into its place (place_halves)
            home, opcode = self.d16_reads[op]
            addr, offset = self.address(op, True)
            self.emit(opcode, [home], [addr], offset=offset)
            return
        shared = op.name == "simt.ld_shared"
        addr, offset = self.address(op, shared)
        bits = _bits(t)
        total = bits * vector
        if total < 32:
            opcode, size = (_DS_NARROW_LOAD if shared else _NARROW_LOAD)[total, _signed(t) and vector == 1], 1
        else:
            opcode, size = (_DS_LOAD if shared else _DWORD_LOAD)[total // 32], total // 32
        loaded = self.homes.get(op.results[0]) if len(op.results) == 1 and size == 1 else None
        loaded = loaded or self.new("v", size).all()
        sources = [addr] if shared else [addr, OFF]
        mask = self.masked(op.operand(1), lambda: self.emit(opcode, [loaded], sources, offset=offset))
        parts = self.split(loaded, t, bits, vector)
        others = op.operands[2:]
        for k, r in enumerate(op.results):
            self.values[r] = parts[k]
            if mask is not None and others:
                self.deferred_others[r] = (others[k], op.operand(1))

    def only_bounds_buffer_accesses(self, mask: Value) -> bool:
        """Whether i1 `mask` is read only as (a factor of) the mask of buffer accesses (not ones
        that zero their result where it is false)."""
        users = mask.users()
        return bool(users) and all(
            (user in self.buffer_accesses and user not in self.zeroed_outside_mask)
            or (user.name == "arith.and" and user.result.type == i1 and self.only_bounds_buffer_accesses(user.result))
            for user in users)

    def buffer_load(self, op: Operation, access: BufferAccess) -> None:
        """`op` as buffer_load_* (offen) through the resource of `access`: no EXEC narrowing, and
        the lanes past the bound read 0, which is the load's `other` (see BufferAccess)."""
        t, vector = op.results[0].type, op.attrs.get("vector", 1)
        bits = _bits(t)
        total = bits * vector
        if total < 32:
            opcode, size = _NARROW_LOAD[total, _signed(t) and vector == 1], 1
        else:
            opcode, size = _DWORD_LOAD[total // 32], total // 32
        opcode = opcode.replace("global_", "buffer_", 1)
        loaded = self.homes.get(op.results[0]) if len(op.results) == 1 and size == 1 else None
        loaded = loaded or self.new("v", size).all()
        self.emit(opcode, [loaded], [self.byte_offsets(access), self.buffer_resource(access), Imm.int(0)],
                  offen=1, offset=op.attrs.get("offset", 0))
        for r, part in zip(op.results, self.split(loaded, t, bits, vector)):
            self.values[r] = part

    def buffer_store(self, op: Operation, access: BufferAccess, bits: int) -> None:
        """`op` as buffer_store_* (offen) through the resource of `access`: no EXEC narrowing, and
        the lanes past the bound write nothing, which is what the store's mask asks (BufferAccess)."""
        values = op.operands[2:]
        total = bits * len(values)
        opcode = (_NARROW_STORE[total] if total < 32 else _DWORD_STORE[total // 32]).replace("global_", "buffer_", 1)
        data = self.gather(values, bits)
        self.emit(opcode, [], [data, self.byte_offsets(access), self.buffer_resource(access), Imm.int(0)],
                  offen=1, offset=op.attrs.get("offset", 0))

    def byte_offsets(self, access: BufferAccess) -> Sub:
        """The per-lane part of `access`'s index in bytes (a VGPR), shared by the accesses at
        that index and scale."""
        shift = access.scale.bit_length() - 1
        key = (access.lanewise, shift)
        if key not in self.buffer_offsets:
            offsets = self.new("v").all()
            self.valu("v_lshlrev_b32", [offsets], [Imm.int(shift), self.operand(access.lanewise)])
            self.buffer_offsets[key] = offsets
        return self.buffer_offsets[key]

    def buffer_resource(self, access: BufferAccess) -> Sub:
        """The V# of `access` (isa.BUFFER_RESOURCE_CONFIG): base = pointer + uniform part *
        scale (64 bits), num_records from record_bytes; the last one made if recent."""
        key = ("resource", access.pointer, access.uniform, access.bound, access.scale, access.conditions)
        return self.recent(key, lambda: self.make_resource(access))

    def make_resource(self, access: BufferAccess) -> Sub:
        shift = access.scale.bit_length() - 1
        resource = self.new("s", 4).all()
        pointer = self.scalar(access.pointer)
        high = self.half(pointer, 1)
        if access.uniform is None:
            self.salu("s_mov_b32", [resource.dword(0)], [self.half(pointer, 0)])
        else:
            scaled = self.recent(("scaled", access.uniform, shift), lambda: self.scaled_index(access.uniform, shift))
            high = self.new("s").all()
            self.salu("s_add_u32", [resource.dword(0)], [self.half(pointer, 0), scaled.dword(0)])
            self.salu("s_addc_u32", [high], [self.half(pointer, 1), scaled.dword(1)])
        self.salu("s_and_b32", [resource.dword(1)], [high, Imm.int(BUFFER_BASE_HIGH_BITS)])
        size = self.recent(("records", access.uniform, access.bound, shift, access.conditions),
                           lambda: self.record_bytes(access, shift))
        self.salu("s_mov_b32", [resource.dword(2)], [size])
        self.salu("s_mov_b32", [resource.dword(3)], [Imm.int(BUFFER_RESOURCE_CONFIG[self.target])])
        return resource

    def recent(self, key: tuple, make) -> Sub:
        """The SGPRs `make()` computes, shared by the resources made within REMAT_WINDOW
        instructions (several pointers checked against one bound: x, y and out of a vector add)."""
        made = self.buffer_resources.get(key)
        if made is None or len(self.insts) - made[1] > REMAT_WINDOW:
            made = (make(), len(self.insts))
            self.buffer_resources[key] = made
        return made[0]

    def scaled_index(self, index: Value, shift: int) -> Sub:
        """Uniform i32 `index` sign-extended to 64 bits and shifted left by `shift` (an SGPR pair)."""
        scaled = self.new("s", 2).all()
        self.salu("s_lshl_b64", [scaled], [self.widen(self.scalar(index), True, True), Imm.int(shift)])
        return scaled

    def record_bytes(self, access: BufferAccess, shift: int) -> Sub:
        """num_records: (bound - uniform part) << shift, 0 where that is negative or where a
        uniform factor of the mask is false (_mask_factors), the count clamped to what fits 32
        bits (the per-lane offsets stay far below it: buffer_access). An unsigned bound has no
        uniform part to subtract (buffer_access) and is never negative."""
        bound, count = self.scalar(access.bound), self.new("s").all()
        if access.uniform is None:
            if access.signed:
                self.salu("s_max_i32", [count], [bound, Imm.int(0)])
            else:
                self.salu("s_mov_b32", [count], [bound])
        else:
            start = self.scalar(access.uniform)
            self.salu("s_sub_u32", [count], [bound, start])   # exact where start < bound
            self.salu("s_cmp_lt_i32", [], [start, bound])
            self.salu("s_cselect_b32", [count], [count, Imm.int(0)])
        for condition in access.conditions:
            self.salu(self.lane("s_cmp_lg_u64"), [], [self.scalar(condition), Imm.int(0)])
            self.salu("s_cselect_b32", [count], [count, Imm.int(0)])
        self.salu("s_min_u32", [count], [count, Imm.int(0xFFFFFFFF >> shift)])
        self.salu("s_lshl_b32", [count], [count, Imm.int(shift)])
        return count

    def choose_other(self, r: Value) -> None:
        """Where the load's predicate was false, the result is its `other`: selected at the
        first use, not at the load (so that loads stay in flight together; the predicate's mask
        is recomputed if it is old, rather than held)."""
        other_value, predicate = self.deferred_others.pop(r)
        loaded, other, mask = self.values[r], self.operand(other_value), self.scalar(predicate)
        d = self.result(r, "v")
        for i in range(dwords(r.type)):
            o = self.half(other, i) if dwords(r.type) == 2 else other
            self.valu("v_cndmask_b32", [d.dword(i)], [o, loaded.dword(i), mask])

    def split(self, loaded: Sub, t: Any, bits: int, vector: int) -> list[Sub]:
        """The elements of a register tuple `loaded`, a view that may start inside its register
        (the second i64 of a vector load unpacked into dwords), sub-dword ones extracted and extended."""
        if bits >= 32 or vector == 1:
            n = bits // 32 if bits >= 32 else 1
            return [Sub(loaded.reg, loaded.start + k * n, n) for k in range(vector)]
        parts = []
        per_dword = 32 // bits
        for k in range(vector):
            part = self.new("v").all()
            self.valu("v_bfe_i32" if _signed(t) else "v_bfe_u32", [part],
                      [loaded.dword(k // per_dword), Imm.int(bits * (k % per_dword)), Imm.int(bits)])
            parts.append(part)
        return parts

    def sel_smem_addr(self, op: Operation) -> None:
        """LDS addresses start at 0 for each workgroup: the address is the offset."""
        self.constants[op.result] = (op.attrs["offset"], op.result.type)

    def sel_barrier(self, op: Operation) -> None:
        """bar.sync orders the CTA's memory accesses too: drain this wave's, then meet the others."""
        self.drain_memory()
        self.emit("s_barrier", [], [])

    def thread_index(self) -> Sub:
        """The work-item id in the workgroup (simt.tid; its low 6 bits: the lane in the wave), made once."""
        if self.thread_id is None:
            self.thread_id = self.new("v").all()
            self.valu("v_bfe_u32", [self.thread_id], [self.workitem_id, Imm.int(0), Imm.int(WORKITEM_ID_BITS)])
        return self.thread_id

    @staticmethod
    def swizzle_distance(op: Operation) -> Optional[int]:
        """The distance of simt.shfl `op` where it is a butterfly by a constant below
        SWIZZLE_LANES (one ds_swizzle_b32: the partner lane is in the same group of 32), else None."""
        source = op.operand(1).owner_op
        if op.attrs["mode"] != "bfly" or source is None or source.name != "arith.constant":
            return None
        distance = source.attrs["value"]
        return distance if isinstance(distance, int) and 0 <= distance < SWIZZLE_LANES else None

    def sel_shfl(self, op: Operation) -> None:
        """shfl.sync within the warp, which is the whole wave (64 lanes on CDNA, 32 on RDNA3;
        PTX semantics: a source lane outside the wave, or below 0 for up, gives the lane its own
        value). A butterfly by a constant d below 32 (every step of a reduction but a wave64's
        last) is one ds_swizzle_b32 in bit mode (and_mask 31, xor_mask d: lane i reads lane
        i ^ d of its group of 32), which needs no address; anything else is ds_bpermute_b32,
        which reads lane (address / 4) mod wave size of the wave (the CDNA3 ISA's
        DS_BPERMUTE_B32), its address computed from the lane. Both go through the LDS crossbar
        and wait in lgkmcnt. Faster still, the butterflies DPP reaches within a row of 16
        (isa.dpp_butterfly: d = 1, 2, 4, 8) are one or two v_mov_b32_dpp on the VALU, no wait;
        with bound_ctrl:1 the moves write every lane between them (0 from a source lane off in
        EXEC, as ds_swizzle_b32 gives):

            simt.shfl bfly %x, 1   ->  v_mov_b32_dpp v5, v4 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
                                       bound_ctrl:1
            simt.shfl bfly %x, 4   ->  v_mov_b32_dpp v5, v4 row_shl:4 row_mask:0xf bank_mask:0x5 bound_ctrl:1
                                       v_mov_b32_dpp v5, v4 row_shr:4 row_mask:0xf bank_mask:0xa bound_ctrl:1
                                       (CDNA; gfx1100: one move, row_xmask:4)
            simt.shfl bfly %x, 16  ->  ds_swizzle_b32 v5, v4 offset:16415"""
        x, b = op.operands
        mode = op.attrs["mode"]
        data = self.to_vgpr(self.operand(x))
        distance = self.swizzle_distance(op)
        moves = dpp_butterfly(distance, self.target) if distance is not None else ()
        if moves:
            result = self.result(op.result, "v")
            for k, move in enumerate(moves):
                opcode, sources = ("v_mov_b32_dpp", [data]) if k == 0 else ("v_mov_b32_dpp" + DPP_MERGE_SUFFIX,
                                                                             [result, data])
                self.emit(opcode, [result], sources, dpp_ctrl=move.code, bank_mask=move.bank_mask, bound_ctrl=1)
            return
        if distance is not None:
            offset = swizzle_offset(SWIZZLE_LANES - 1, 0, distance)
            self.emit("ds_swizzle_b32", [self.result(op.result, "v")], [data], offset=offset)
            return
        tid = self.thread_index()
        shift = self.operand(b)
        last = self.wave_size - 1
        if mode == "bfly" and isinstance(shift, Imm) and 0 <= shift.value <= last:
            source = self.new("v").all()
            self.valu("v_xor_b32", [source], [shift, tid])
        else:
            lane, moved, source = (self.new("v").all() for _ in range(3))
            self.valu("v_and_b32", [lane], [Imm.int(last), tid])
            opcode = {"bfly": "v_xor_b32", "down": "v_add_u32", "up": "v_sub_u32", "idx": "v_and_b32"}[mode]
            sources = {"up": [lane, shift], "idx": [Imm.int(last), shift]}.get(mode, [shift, lane])
            self.valu(opcode, [moved], sources)
            in_range = self.new_mask()
            self.valu("v_cmp_le_u32", [in_range], [moved, Imm.int(last)])
            self.valu("v_cndmask_b32", [source], [lane, moved, in_range])
        address = self.new("v").all()
        self.valu("v_lshlrev_b32", [address], [Imm.int(2), source])
        self.emit("ds_bpermute_b32", [self.result(op.result, "v")], [address, data])

    def sel_pack(self, op: Operation) -> None:
        """Narrow values side by side in one wider register, the first lowest (as a store's data)."""
        if op in self.packed_by_halves:   # its halves were read into its home (place_halves)
            self.values[op.result] = self.homes[op.result]
            return
        self.values[op.result] = self.gather(list(op.operands), _bits(op.operand(0).type), self.homes.get(op.result))

    def sel_unpack(self, op: Operation) -> None:
        t = op.results[0].type
        if all(_repacks(user, op) for r in op.results for user in r.users()):
            return   # every reader packs the parts back into the word (gather): nothing to extract
        whole = self.vgpr(op.operand(0))
        for r, part in zip(op.results, self.split(whole, t, _bits(t), len(op.results))):
            self.values[r] = part

    def sel_store(self, op: Operation) -> None:
        values = op.operands[2:]
        t, vector = values[0].type, len(values)
        bits = 64 if isinstance(t, PointerType) else t.bits
        if bits not in (8, 16, 32, 64):
            raise self.unsupported(op, f"of {t}")
        if op in self.buffer_accesses:
            self.buffer_store(op, self.buffer_accesses[op], bits)
            return
        shared = op.name == "simt.st_shared"
        addr, offset = self.address(op, shared)
        total = bits * vector
        if total < 32:
            opcode = (_DS_NARROW_STORE if shared else _NARROW_STORE)[total]
        else:
            opcode = (_DS_STORE if shared else _DWORD_STORE)[total // 32]
        data = self.gather(values, bits)
        sources = [addr, data] if shared else [addr, data, OFF]
        self.masked(op.operand(1), lambda: self.emit(opcode, [], sources, offset=offset))

    def sel_atomic(self, op: Operation) -> None:
        """simt.atom, simt.red and simt.atom_cas on 32- and 64-bit global values (and simt.red's integer
        add on an LDS address, as ds_add_u32): for global memory a buffer atomic where the mask
        is the address's bound (buffer_atomic), else the returning form of the global
        instruction under the op's mask (masked-off lanes read 0); either wrapped in the cache
        maintenance and waits the target's memory model asks for its sem and scope
        (isa.MEMORY_ORDER: before a release, write back and drain earlier memory ops; after an
        acquire, wait for the atomic and invalidate)."""
        t = op.operand(op.num_operands - 1).type
        if isinstance(op.operand(0).type, DType):   # an LDS address: simt.red's add of tl.histogram
            if op.name != "simt.red" or op.attrs["kind"] != "add" or t.bits != 32 or t.is_floating:
                raise self.unsupported(op, f"{op.attrs.get('kind', 'cas')} of {t} on shared memory")
            addr, offset = self.address(op, True)
            data = self.to_vgpr(self.operand(op.operand(2)))
            self.masked(op.operand(1), lambda: self.emit("ds_add_u32", [], [addr, data], offset=offset))
            return
        if isinstance(t, PointerType) or t.bits not in (32, 64):
            raise self.unsupported(op, f"of {t}")
        if op in self.buffer_accesses:
            self.buffer_atomic(op, self.buffer_accesses[op])
            return
        dwords = t.bits // 32
        opcode = atomic_opcode(op, "global", self.target)
        if opcode is None:
            raise self.unsupported(op, f"{op.attrs.get('kind', 'cas')} of {t}")
        addr, offset = self.address(op, False)
        data = self.atomic_data(op, t.bits)
        old = self.new("v", dwords).all()
        for k in range(dwords):
            self.valu("v_mov_b32", [old.dword(k)], [Imm.int(0)])
        self.ordered(op, lambda bits: self.masked(op.operand(1), lambda: self.emit(
            opcode, [old], [addr, data, OFF], offset=offset, **{ATOMIC_RETURN_BIT[self.target]: 1}, **bits)))
        if op.results:
            self.values[op.result] = old

    def atomic_data(self, op: Operation, bits: int) -> Sub:
        """The data of an atomic in VGPRs: its value, or cmpswap's new value then compare value."""
        if op.name == "simt.atom_cas":
            return self.gather([op.operand(3), op.operand(2)], bits)
        return self.to_vgpr(self.operand(op.operand(2)), bits // 32)

    def ordered(self, op: Operation, atomic) -> None:
        """`atomic(scope_bits)` between the release and acquire sequences of `op`'s sem and scope
        (isa.MEMORY_ORDER)."""
        sem, scope = op.attrs.get("sem", "relaxed"), op.attrs.get("scope", "gpu")
        release, acquire, bits = MEMORY_ORDER[self.target][scope]
        if sem in ("release", "acq_rel"):
            for opc, flags in release:
                self.emit(opc, [], [], **flags)
            self.drain_memory()
        atomic(bits)
        if sem in ("acquire", "acq_rel"):
            self.emit("s_waitcnt", [], [], vmcnt=0)
            for opc, flags in acquire:
                self.emit(opc, [], [], **flags)

    def buffer_atomic_fits(self, op: Operation) -> bool:
        """Whether atomic `op`, whose mask bounds its address (buffer_access), is a buffer atomic
        on this target: one exists for its operation and type (isa.BUFFER_ATOMICS), and its
        scope is the agent's or the workgroup's. A system-scope atomic keeps the global
        instruction, as Triton's AMD backend keeps it (third_party/amd, ConvertToBufferOps:
        ConvertTritonAtomicRMWOpToBufferAtomicRMW converts GPU and CTA scopes only)."""
        return op.attrs.get("scope", "gpu") != "sys" and atomic_opcode(op, "buffer", self.target) is not None

    def buffer_atomic(self, op: Operation, access: BufferAccess) -> None:
        """`op` as buffer_atomic_* (offen) through the resource of `access`: no EXEC narrowing,
        the lanes past the bound neither read nor write memory (BufferAccess). Without a result
        the non-returning form; with one the returning form (_rtn, the target's return bit),
        which writes the old value over its data, so the data is a copy of its own (the value
        stays readable). In the lanes past the bound the ISA leaves that register open: where the
        old value is read there (not only stored under the same mask) it is set to 0 under the
        mask, as simt.atom promises (zeroed_outside_mask).

            buffer_atomic_add %v9.0, %v4.0, %s12.0:3, 0 offen sc0     ; %v9 = a copy of the value
        """
        t = op.operand(op.num_operands - 1).type
        dwords = t.bits // 32
        opcode = atomic_opcode(op, "buffer", self.target)
        sources = self.atomic_data(op, t.bits)
        offsets, resource = self.byte_offsets(access), self.buffer_resource(access)
        modifiers = {"offen": 1, "offset": op.attrs.get("offset", 0)}
        if not op.results:
            self.ordered(op, lambda bits: self.emit(opcode, [], [sources, offsets, resource, Imm.int(0)], **modifiers,
                                                    **bits))
            return
        data = self.new("v", sources.count).all()
        for k in range(sources.count):
            self.valu("v_mov_b32", [data.dword(k)], [sources.dword(k)])
        returning = {ATOMIC_RETURN_BIT[self.target]: 1}
        operands = [data, offsets, resource, Imm.int(0)]
        self.ordered(op, lambda bits: self.emit(opcode + RETURNING_SUFFIX, [data], operands, **modifiers, **returning,
                                                **bits))
        old = Sub(data.reg, 0, dwords)   # cmpswap returns in the first half of its data
        if op in self.zeroed_outside_mask:
            mask, zeroed = self.scalar(op.operand(1)), self.new("v", dwords).all()
            for k in range(dwords):
                self.valu("v_cndmask_b32", [zeroed.dword(k)], [Imm.int(0), old.dword(k), mask])
            old = zeroed
        self.values[op.result] = old

    def check_whole_wave(self, op: Operation, unit: str) -> None:
        """`op` runs on `unit`, which needs every lane of the wave: each scf.if or scf.while
        around it must branch the same way in all lanes (wave_uniform_values), so that EXEC,
        which they narrow to the lanes taking the branch, stays whole."""
        parent = op.parent_op
        while parent is not None and parent is not self.func:
            if parent.name in ("scf.if", "scf.while"):
                condition = (parent.operand(0) if parent.name == "scf.if"
                             else parent.regions[0].block.ops[-1].operand(0))
                if self.wave_uniform is None:
                    self.wave_uniform = wave_uniform_values(self.func)
                if condition not in self.wave_uniform:
                    raise self.unsupported(op, f"under {parent.name} ({unit} needs every lane of the wave)")
            parent = parent.parent_op

    def sel_mfma(self, op: Operation) -> None:
        """simt.mfma: A and B words in VGPR pairs, C in the consecutive VGPRs that D overwrites
        (the accumulator of the previous MFMA in place when nothing else reads it: a chain the
        hardware runs back to back; else a fresh copy). The matrix core needs every lane of the
        wave (a warp of the lowering is a whole wave), so the op must be outside scf.if and
        scf.while."""
        instr, atype, btype = op.attrs["instr"], op.attrs["atype"], op.attrs.get("btype", op.attrs["atype"])
        shape = mfma_shape(self.target, instr, atype, btype)
        if shape is None:
            raise self.unsupported(op, f"of {instr}x{instr} on {atype}" + (f" x {btype}" if btype != atype else ""))
        self.check_whole_wave(op, "the matrix core")
        a, b = self.gather(list(op.operands[0:2]), 32), self.gather(list(op.operands[2:4]), 32)
        accumulators = list(op.operands[4:])
        acc = self.gather(accumulators, 32)
        if any(len(v.uses) > 1 for v in accumulators) or acc.count != shape.result_dwords:
            fresh = self.new("v", shape.result_dwords)
            for k in range(shape.result_dwords):
                self.valu("v_mov_b32", [fresh.dword(k)], [acc.dword(k)])
            acc = fresh.all()
        self.emit(shape.mnemonic, [acc], [a, b, acc])
        for k, r in enumerate(op.results):
            self.values[r] = acc.dword(k)

    def sel_wmma(self, op: Operation) -> None:
        """simt.wmma as RDNA3's v_wmma_f32_16x16x16_{f16,bf16}: A's and B's eight words each in
        consecutive VGPRs, C in the eight VGPRs D overwrites (in place when nothing else reads C:
        the accumulation chain, which needs no wait between WMMAs). Like MFMA it needs every lane
        of the wave, so not under scf.if or scf.while."""
        atype = op.attrs["atype"]
        shape = wmma_shape(self.target, atype)
        if shape is None:
            raise self.unsupported(op, f"on {atype} (no WMMA instruction on this target)")
        self.check_whole_wave(op, "WMMA")
        words = shape.OPERAND_DWORDS
        a, b = self.gather(list(op.operands[:words]), 32), self.gather(list(op.operands[words:2 * words]), 32)
        accumulators = list(op.operands[2 * words:])
        parts = [self.operand(v) for v in accumulators]
        first = parts[0]
        in_place = all(isinstance(p, Sub) and p.bank == "v" and p.reg is first.reg and p.start == first.start + k
                       for k, p in enumerate(parts)) and all(len(v.uses) == 1 for v in accumulators)
        if in_place:
            acc = Sub(first.reg, first.start, len(parts))
        else:   # C written once into the tuple D overwrites (constants, SGPRs and VGPRs alike)
            acc = self.new("v", shape.RESULT_DWORDS).all()
            for k, part in enumerate(parts):
                self.valu("v_mov_b32", [acc.dword(k)], [part])
        self.emit(shape.mnemonic, [acc], [a, b, acc])
        for k, r in enumerate(op.results):
            self.values[r] = acc.dword(k)

    def gather(self, values: list[Value], bits: int, into: Optional[Sub] = None) -> Sub:
        """The values of a store in consecutive VGPRs (sub-dword ones packed, lowest first; one
        packed word into `into` where given). The low bits are cleared above the values below
        them, unless those are loads that zero-extended them."""
        operands = [None if bits < 32 and _unpacked_word(values[w - w % (32 // bits):][:32 // bits]) is not None
                    else self.to_vgpr(self.operand(v), max(1, bits // 32)) for w, v in enumerate(values)]
        if bits < 32:
            per_dword = 32 // bits
            words = []
            for w in range(0, len(operands), per_dword):
                unpacked = _unpacked_word(values[w:w + per_dword])
                if unpacked is not None:   # the parts of one word, in order: that word
                    word = self.vgpr(unpacked)
                    if into is not None and len(operands) == per_dword:
                        self.valu("v_mov_b32", [into], [word])
                        word = into
                    words.append(word)
                    continue
                word = operands[w]
                clean = _zero_extended(values[w])
                for k, part in enumerate(operands[w + 1:w + per_dword], start=1):
                    low = word
                    if not clean:
                        low = self.new("v").all()
                        self.valu("v_bfe_u32", [low], [word, Imm.int(0), Imm.int(bits * k)])
                    last = w + k == len(operands) - 1
                    packed = into if into is not None and last and len(operands) == per_dword else self.new("v").all()
                    self.valu("v_lshl_or_b32", [packed], [part, Imm.int(bits * k), low])
                    word, clean = packed, False
                words.append(word)
            operands = words
        parts = [o.dword(i) for o in operands for i in range(o.count)]
        first = parts[0]
        if all(p.reg is first.reg and p.start == first.start + k for k, p in enumerate(parts)):
            return Sub(first.reg, first.start, len(parts))
        tuple_reg = self.new("v", len(parts))
        for k, part in enumerate(parts):
            self.valu("v_mov_b32", [tuple_reg.dword(k)], [part])
        return tuple_reg.all()


_HANDLERS = {
    "arith.constant": Selector.sel_constant,
    "simt.tid": Selector.sel_tid,
    "simt.ctaid": Selector.sel_ctaid,
    "simt.nctaid": Selector.sel_nctaid,
    "simt.return": Selector.sel_return,
    "arith.cmp": Selector.sel_cmp,
    "arith.select": Selector.sel_select,
    "arith.bitcast": Selector.sel_bitcast,
    "arith.neg": Selector.sel_unary,
    "arith.not": Selector.sel_unary,
    "math.abs": Selector.sel_unary,
    "math.fma": Selector.sel_fma,
    "math.sqrt": Selector.sel_sqrt,
    **{name: Selector.sel_round for name in _ROUND_F32},
    "simt.approx": Selector.sel_approx,
    "simt.cvt": Selector.sel_cvt,
    "simt.addptr": Selector.sel_addptr,
    "simt.ld_global": Selector.sel_load,
    "simt.st_global": Selector.sel_store,
    "simt.pack": Selector.sel_pack,
    "simt.ld_shared": Selector.sel_load,
    "simt.st_shared": Selector.sel_store,
    "simt.smem_addr": Selector.sel_smem_addr,
    "simt.barrier": Selector.sel_barrier,
    "simt.shfl": Selector.sel_shfl,
    "simt.mfma": Selector.sel_mfma,
    "simt.wmma": Selector.sel_wmma,
    "simt.atom": Selector.sel_atomic,
    "simt.red": Selector.sel_atomic,
    "simt.atom_cas": Selector.sel_atomic,
    "scf.for": Selector.sel_for,
    "scf.if": Selector.sel_if,
    "scf.while": Selector.sel_while,
    "simt.unpack": Selector.sel_unpack,
    **{name: Selector.sel_binary for name in ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem",
                                               "arith.and", "arith.or", "arith.xor", "arith.shl", "arith.shr",
                                               "arith.max", "arith.min", "math.umulhi", "math.mulhi")},
}


def select(func: Operation, target: str) -> Selection:
    """The MIR of simt.func `func` for `target` (virtual registers, no waits yet)."""
    return Selector(func, target).select()
