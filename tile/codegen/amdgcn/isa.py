"""The AMD targets tile compiles for, and the instructions it selects, as data.

Three targets: two CDNA (waves of 64, one VGPR file shared with the matrix cores), gfx942
(MI300, CDNA3) and gfx90a (MI200, CDNA2), and one RDNA, gfx1100 (Radeon RX 7900, RDNA3, waves
of 32). What differs between them is written as rows of the per-target tables below, never as
branches in the selector:

    cache-policy bits     gfx942: sc0 sc1 nt           gfx90a: glc slc scc      gfx1100: glc slc dlc
    returning atomic      gfx942: sc0                  gfx90a: glc              gfx1100: glc
    memory-model fences   gfx942: buffer_wbl2 sc1 /    gfx90a: buffer_wbl2 (system only) /
                          buffer_inv sc1 (agent)       buffer_wbinvl1_vol, + buffer_invl2 (system)
                          gfx1100: buffer_gl1_inv, buffer_gl0_inv (acquire at agent and system scope)
    MFMA mnemonics        gfx942: v_mfma_f32_32x32x8_f16 ...   gfx90a: v_mfma_f32_32x32x8f16 ...
    MFMA operand types    gfx942: f16, bf16, fp8 / bf8 (fnuz)       gfx90a: f16, bf16
                          (RDNA3 has no MFMA: its matrix instructions are WMMA)
    lane masks            gfx942, gfx90a: an SGPR pair (exec, vcc, s_and_saveexec_b64)
                          gfx1100: one SGPR (exec_lo, vcc_lo, s_and_saveexec_b32): LANE_MASK_OPCODES
    store counter         gfx942, gfx90a: vmcnt        gfx1100: vscnt (s_waitcnt_vscnt null, 0x0)
    mnemonics             gfx1100 spells many instructions its own way (global_load_b32 for
                          global_load_dword, v_add_nc_u32 for v_add_u32 ...): SPELLING
    accumulation VGPRs    gfx942, gfx90a: 256 AGPRs after the 256 VGPRs     gfx1100: none
    buffer resource       dword 3 of a raw buffer's V#: gfx942, gfx90a 0x27000, gfx1100 also its
                          reserved bit 24 and OOB_SELECT 3 (BUFFER_RESOURCE_CONFIG); buffer loads
                          count in vmcnt, buffer stores in the store counter
    buffer atomics        gfx942, gfx90a: integer, add_f32, add_f64     gfx1100: no add_f64, GFX11
                          names (BUFFER_ATOMICS); returning ones count in vmcnt, others as stores
    D16 LDS reads         gfx1100: ds_load_u16_d16 / _d16_hi fill half a VGPR (D16_MERGE_KEEPS)

An instruction row names the targets it exists on (`targets`, default every target). Rows
carry the GFX9 name; the selector, the register allocator and the waits work on those names,
and only the printed text (and the emulator's decoder, reading it back) uses SPELLING.

One row per mnemonic: its encoding family, the kinds of its operands (results first, then
sources, as the assembler reads them), a latency class, and the counter it increments (the
one an `s_waitcnt` waits on before its results may be read). Sources: the AMD Instinct MI300
ISA reference ("CDNA3 ISA", chapters 4 SALU, 5 SMEM, 6 VALU, 9 buffer (MUBUF) and FLAT/global,
and 4.4 s_waitcnt).

Operand kinds:

    sdst  ssrc      one SGPR (a source may also be an inline constant or a 32-bit literal)
    sdst2 ssrc2     an aligned SGPR pair, exec or vcc (a source may be an inline constant)
    vdst  vsrc      one VGPR                        vdstN  N consecutive VGPRs (loads, MFMA results)
    vdst2 vsrc2     an aligned VGPR pair            vsrcN  N consecutive VGPRs (stores, MFMA sources)
    adst  asrc      one AGPR
    avdstN avsrcN   N consecutive VGPRs or N consecutive AGPRs (MFMA's D and C: both in one file)
    src   src2      a VALU source: a VGPR, an SGPR or an inline constant (a pair for src2)
    lmask           a lane mask: an SGPR pair on wave64 targets, one SGPR on wave32 (or exec, vcc)
    null            the null register (the SGPR operand s_waitcnt_vscnt does not read)
    vaddr           a global address in an aligned VGPR pair
    saddr           "off" (the address is in vaddr alone)
    sbase           the SGPR pair an s_load reads from
    ssrc4           four aligned SGPRs: a buffer resource (BUFFER_RESOURCE_CONFIG)
    vdata vdataN    one (N consecutive) VGPRs the instruction reads and then writes: a returning
                    MUBUF atomic's data, replaced by the old value from memory (the encoding has
                    one VDATA field for both). The kind stands among the results and among the
                    sources, the k-th such result tied to the k-th such source (InstrInfo.ties):
                    one register view in both places, printed once, as a source
    imm             an immediate number (a byte offset)
    label           a branch target
    vcc             the vcc pair (carry out and in of the 64-bit add chains)

Latency classes (CDNA3 ISA 4.5 and the MI300 tuning guides): salu and valu issue every cycle
(valu: 4 cycles per wave64 instruction), trans (the transcendental unit) at a quarter of that,
smem, vmem and ds (LDS) wait for memory and are tracked by their counter; xdl is the matrix
core (MFMA), whose results the hardware does not interlock (the wait states of waitcnt.HAZARDS);
RDNA3's WMMA is in that class too (its one hazard is rdna3's).

MFMA (CDNA3 ISA 7, "Matrix Arithmetic Instructions"): D = A x B + C for one wave of 64 lanes.
gfx942 and gfx90a have one unified file of 512 registers per lane: 256 architectural VGPRs
(v0..v255) and 256 accumulation VGPRs (AGPRs, a0..a255) placed after them (the descriptor's
accum_offset). A VALU op reads and writes VGPRs only; v_accvgpr_read_b32 / v_accvgpr_write_b32
move between the files, and an MFMA takes C and D both from one file (its ACC_CD bit, CDNA3 ISA
7.1): the register allocator puts long-lived values in AGPRs when the VGPRs run out (regalloc).
MFMA_SHAPES says per instruction the
M x N x K it multiplies, the operand type, the dwords per lane of each operand, and its passes
(4 cycles each); where A, B and D sit in the lanes is tile.ir.mfma_layouts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ...ir.types import DType
from ..target import target_facts

TARGET_TRIPLE = "amdgcn-amd-amdhsa"
TARGETS = ("gfx942", "gfx90a", "gfx1100")
WAVE_SIZE = {t: target_facts(t).warp_size for t in TARGETS}   # lanes of a wave: the lowering's warp size
WAVE64_TARGETS = tuple(t for t in TARGETS if WAVE_SIZE[t] == 64)
WAVE32_TARGETS = tuple(t for t in TARGETS if WAVE_SIZE[t] == 32)
# s0..s101 are addressable on GFX9 (vcc and xnack_mask live above); s0..s105 on GFX11 (vcc has
# its own encoding there; llvm-mc -mcpu=gfx1100 takes s105 and refuses s106)
SGPR_LIMIT = {"gfx942": 102, "gfx90a": 102, "gfx1100": 106}
VGPR_LIMIT = {"gfx942": 256, "gfx90a": 256, "gfx1100": 256}   # architectural VGPRs v0..v255
# accumulation VGPRs a0..a255, after the VGPRs in the unified file of CDNA2/3; RDNA3 has none
AGPR_LIMIT = {"gfx942": 256, "gfx90a": 256, "gfx1100": 0}
AGPR_TARGETS = tuple(t for t, n in AGPR_LIMIT.items() if n)
AGPR_GRANULE = 4   # the descriptor's accum_offset (the first AGPR's place in the unified file) is a multiple of 4
# The largest count each s_waitcnt field holds: GFX9 (CDNA3 ISA 4.4) has a 4-bit lgkmcnt, GFX11
# a 6-bit one (LLVM's AMDGPU docs, gfx11 waitcnt: VM_CNT 0..63, LGKM_CNT 0..63), and its stores
# wait in vscnt (s_waitcnt_vscnt, the RDNA3 ISA's S_WAITCNT_VSCNT)
WAIT_COUNT_LIMITS = {"gfx942": {"vmcnt": 63, "lgkmcnt": 15, "expcnt": 7},
                     "gfx90a": {"vmcnt": 63, "lgkmcnt": 15, "expcnt": 7},
                     "gfx1100": {"vmcnt": 63, "lgkmcnt": 63, "expcnt": 7, "vscnt": 63}}
MAX_VMCNT = WAIT_COUNT_LIMITS["gfx942"]["vmcnt"]
MAX_LGKMCNT = WAIT_COUNT_LIMITS["gfx942"]["lgkmcnt"]
# The counter global stores (and stores only) count in: GFX10+ gave them their own (vscnt)
STORE_COUNTER = {"gfx942": "vmcnt", "gfx90a": "vmcnt", "gfx1100": "vscnt"}
# DS_SWIZZLE_B32's bit mode (offset bit 15 clear; CDNA3 ISA and RDNA3 ISA, DS_SWIZZLE_B32):
# lane i of each group of SWIZZLE_LANES reads lane ((i & and_mask) | or_mask) ^ xor_mask of its
# group, the masks in offset bits 0-4, 5-9 and 10-14; a source lane outside EXEC gives 0
SWIZZLE_LANES = 32


def swizzle_offset(and_mask: int, or_mask: int, xor_mask: int) -> int:
    """The ds_swizzle_b32 offset of the bit mode with these masks (each below SWIZZLE_LANES)."""
    if not all(0 <= m < SWIZZLE_LANES for m in (and_mask, or_mask, xor_mask)):
        raise ValueError(f"swizzle masks must lie below {SWIZZLE_LANES}: {and_mask}, {or_mask}, {xor_mask}")
    return and_mask | or_mask << 5 | xor_mask << 10


# DPP, data-parallel primitives (CDNA3 ISA, chapter 6 "Vector ALU Operations", DPP and the VOP_DPP
# encoding; RDNA3 ISA, the same chapter's DPP16, and LLVM's AMDGPUModifierSyntax, dpp_ctrl): a
# VALU instruction whose first source is read from another lane, chosen by the 9-bit DPP_CTRL
# field, with no trip through the LDS crossbar and no wait counter (ds_swizzle_b32 and
# ds_bpermute_b32 take both). Lanes form rows of 16 (4 rows on wave64, 2 on wave32), each row 4
# banks of 4 lanes. Lane i (row r = i // 16, j = i mod 16) reads:
#
#     quad_perm:[a,b,c,d]   lane 4 (i // 4) + (a, b, c, d)[i mod 4]         DPP_CTRL 0x000-0x0ff
#     row_shl:n             lane i + n, if j + n < 16                       0x101-0x10f
#     row_shr:n             lane i - n, if j >= n                           0x111-0x11f
#     row_ror:n             lane 16 r + (j - n) mod 16                      0x121-0x12f
#     wave_shl:1            lane i + 1, if below the wave size              0x130 (CDNA only)
#     wave_rol:1            lane (i + 1) mod 64                             0x134 (CDNA only)
#     wave_shr:1            lane i - 1, if i >= 1                           0x138 (CDNA only)
#     wave_ror:1            lane (i - 1) mod 64                             0x13c (CDNA only)
#     row_mirror            lane 16 r + 15 - j                              0x140
#     row_half_mirror       lane 8 (i // 8) + 7 - i mod 8                   0x141
#     row_bcast:15          lane 16 r - 1, for rows 1-3                     0x142 (CDNA only)
#     row_bcast:31          lane 31, for rows 2 and 3                       0x143 (CDNA only)
#     row_newbcast:n        lane 16 r + n (gfx90a, gfx942)                  0x150-0x15f (CDNA only)
#     row_share:n           lane 16 r + n (GFX10+)                          0x150-0x15f (gfx1100)
#     row_xmask:n           lane 16 r + (j xor n) (GFX10+)                  0x160-0x16f (gfx1100)
#
# A source lane that the control leaves undefined (row_shl past its row, row_bcast into row 0),
# or that is off in EXEC (unless gfx1100's fi:1, fetch inactive, is set), is invalid: with
# bound_ctrl:1 the lane reads 0, else it keeps its old value. row_mask (bit r: row r) and
# bank_mask (bit b: lanes 4b..4b+3 of each row) switch off the writes of whole rows and banks
# (default 0xf: all). Which controls llvm-mc 19 takes for each -mcpu is DPP_CONTROLS' targets
# (tests/test_amdgcn_dpp.py assembles every one). llvm-mc reads `bound_ctrl:0` as the set bit
# on GFX9 and as the clear one on GFX11, so tile writes only bound_ctrl:1 (the bit set) and
# leaves the modifier out for the clear bit.
DPP_FULL_MASK = 0xF
_CDNA = ("gfx942", "gfx90a")
_RDNA3 = ("gfx1100",)


@dataclass(frozen=True)
class DppControl:
    """One DPP control: its keyword, the DPP_CTRL code of each argument it takes (None: it takes
    none), and the targets whose assembler accepts it."""

    keyword: str
    codes: dict
    targets: tuple[str, ...] = TARGETS

    def text(self, argument: Optional[int]) -> str:
        if argument is None:
            return self.keyword
        if self.keyword == "quad_perm":
            return f"quad_perm:[{','.join(str(argument >> (2 * k) & 3) for k in range(4))}]"
        return f"{self.keyword}:{argument}"


DPP_CONTROLS = (
    DppControl("quad_perm", {p: p for p in range(256)}),
    DppControl("row_shl", {n: 0x100 + n for n in range(1, 16)}),
    DppControl("row_shr", {n: 0x110 + n for n in range(1, 16)}),
    DppControl("row_ror", {n: 0x120 + n for n in range(1, 16)}),
    DppControl("wave_shl", {1: 0x130}, _CDNA),
    DppControl("wave_rol", {1: 0x134}, _CDNA),
    DppControl("wave_shr", {1: 0x138}, _CDNA),
    DppControl("wave_ror", {1: 0x13C}, _CDNA),
    DppControl("row_mirror", {None: 0x140}),
    DppControl("row_half_mirror", {None: 0x141}),
    DppControl("row_bcast", {15: 0x142, 31: 0x143}, _CDNA),
    DppControl("row_newbcast", {n: 0x150 + n for n in range(16)}, _CDNA),
    DppControl("row_share", {n: 0x150 + n for n in range(16)}, _RDNA3),
    DppControl("row_xmask", {n: 0x160 + n for n in range(16)}, _RDNA3),
)
# per target: each control's text -> its DPP_CTRL code, and back
DPP_CODES = {t: {c.text(a): code for c in DPP_CONTROLS if t in c.targets for a, code in c.codes.items()}
             for t in TARGETS}
DPP_TEXT = {t: {code: text for text, code in codes.items()} for t, codes in DPP_CODES.items()}
# The VOP2 operations whose DPP form (first source read from another lane) tile fuses a DPP move
# into when the moved value is only their operand beside the value it was moved from (a
# reduction's step: tile.codegen.amdgcn.dpp): commutative, and spelled alike on every target
DPP_COMBINES = ("v_add_f32", "v_mul_f32", "v_min_f32", "v_max_f32", "v_min_i32", "v_max_i32", "v_min_u32",
                "v_max_u32", "v_and_b32", "v_or_b32", "v_xor_b32")
# gfx1100's fi:1 (fetch inactive: a source lane off in EXEC is read, not invalid)
DPP_FETCH_INACTIVE_TARGETS = _RDNA3


def dpp_code(keyword: str, argument: Optional[int], target: str) -> int:
    """The DPP_CTRL code of control `keyword` with `argument` on `target`; ValueError if it has none."""
    control = next((c for c in DPP_CONTROLS if c.keyword == keyword), None)
    if control is None or target not in control.targets or argument not in control.codes:
        raise ValueError(f"{keyword}:{argument} is not a DPP control of {target}")
    return control.codes[argument]


def quad_perm(lanes: tuple[int, int, int, int]) -> int:
    """The quad_perm argument that makes lane k of each quad read lane lanes[k] of it."""
    return sum(lane << (2 * k) for k, lane in enumerate(lanes))


@dataclass(frozen=True)
class DppMove:
    """One DPP move of a shuffle: its DPP_CTRL code and the banks it writes (bank_mask)."""

    code: int
    bank_mask: int = DPP_FULL_MASK


def dpp_butterfly(distance: int, target: str) -> tuple[DppMove, ...]:
    """The DPP moves after which lane i holds lane i xor `distance`'s value (every lane written
    by exactly one of them), or () where `target` has none: quad_perm for 1 and 2 on every
    target; row_xmask for 4 and 8 on gfx1100; on CDNA row_ror:8 for 8 (a rotation by half a row
    swaps its halves) and for 4 two moves, row_shl:4 into the banks whose lanes have bit 2 clear
    (0 and 2: bank_mask 0x5) and row_shr:4 into the others (0xa), the second keeping the lanes
    the first wrote (v_mov_b32_dpp_merge)."""
    if distance in (1, 2):
        return (DppMove(dpp_code("quad_perm", quad_perm(tuple(k ^ distance for k in range(4))), target)),)
    if distance in (4, 8) and target in _RDNA3:
        return (DppMove(dpp_code("row_xmask", distance, target)),)
    if distance == 8:
        return (DppMove(dpp_code("row_ror", 8, target)),)
    if distance == 4:
        return (DppMove(dpp_code("row_shl", 4, target), 0b0101), DppMove(dpp_code("row_shr", 4, target), 0b1010))
    return ()


GLOBAL_OFFSET_RANGE = (-4096, 4095)  # the signed 13-bit immediate offset of global_* (CDNA3 ISA 9.1; GFX11 alike)
DS_OFFSET_RANGE = (0, 65535)         # the unsigned 16-bit offset of ds_read/ds_write
BUFFER_OFFSET_RANGE = (0, 4095)      # the unsigned 12-bit immediate offset of MUBUF (CDNA3 ISA 9.1; RDNA3 alike)

# A buffer resource (V#, four SGPRs; the "Buffer Resource" tables of the CDNA3 ISA, chapter 9
# Vector Memory Operations, and of the RDNA3 ISA, chapter Vector Memory Buffer Instructions):
# dword 0 the base address's low 32 bits, dword 1 its high 16 bits (BUFFER_BASE_HIGH_BITS; the
# stride above them 0: a raw buffer, addressed by byte offset), dword 2 num_records (the size in
# bytes: a raw buffer's range check), dword 3 the configuration below, per target. DST_SEL (bits
# 0-11) is unused by untyped loads; the data format must not be 0 ("invalid", which would make
# every access out of range): 32-bit float, NUM_FORMAT 7 (bits 12-14) and DATA_FORMAT 4 (bits
# 15-18), as Triton's AMD backend writes it (third_party/amd BufferOpsEmitter). RDNA3 also needs
# its reserved bit 24 set and OOB_SELECT (bits 28-29) = 3: raw range checking against
# num_records (the mode a stride-0 buffer is checked in on CDNA). A component (a dword of a
# multi-dword load, or the whole sub-dword value) ending past num_records reads 0 and faults
# nothing (the chapters' "Range Checking"; LLVM AMDGPUUsage, "Relaxed Buffer OOB Mode": each
# 32-bit word checked on its own).
BUFFER_RESOURCE_CONFIG = {"gfx942": (7 << 12) | (4 << 15), "gfx90a": (7 << 12) | (4 << 15),
                          "gfx1100": (7 << 12) | (4 << 15) | (1 << 24) | (3 << 28)}
BUFFER_BASE_HIGH_BITS = 0xFFFF
# The bits of its destination each D16 LDS read keeps (it writes the other 16). LDS reads return
# in issue order, so a D16 read may be issued while an earlier one into the same VGPR is in
# flight: the waits (waitcnt) and the emulator let it, and the halves merge as they land.
D16_MERGE_KEEPS = {"ds_read_u16_d16": 0xFFFF0000, "ds_read_u16_d16_hi": 0x0000FFFF}
LDS_BYTES = {"gfx942": 65536, "gfx90a": 65536, "gfx1100": 65536}   # per workgroup
# User SGPRs tile enables (the kernarg segment pointer, s[0:1]) and how many user plus system
# SGPRs the hardware must be asked to initialize at least: gfx1100 initializes them wrongly
# when fewer than 16 are enabled (LLVM's FeatureUserSGPRInit16Bug), so its user SGPRs are
# padded and the workgroup ids land in s[16 - ids:16]
USER_SGPRS = 2
MIN_INITIALIZED_SGPRS = {"gfx942": 0, "gfx90a": 0, "gfx1100": 16}


def user_sgpr_count(target: str, workgroup_ids: int) -> int:
    """The descriptor's .amdhsa_user_sgpr_count: where the first workgroup id sits."""
    return max(USER_SGPRS, MIN_INITIALIZED_SGPRS[target] - workgroup_ids)


# The kernel descriptor's target-specific directives (LLVM AMDGPUUsage, "Kernel Descriptor"):
# accum_offset splits the unified VGPR file of gfx90a/gfx942 (computed, None here); gfx1100 runs
# waves of 32 and, in CU mode, a workgroup's waves share one L0 cache (the memory model's
# workgroup scope then needs no cache maintenance)
DESCRIPTOR_FIELDS = {"gfx942": {"accum_offset": None}, "gfx90a": {"accum_offset": None},
                     "gfx1100": {"wavefront_size32": 1, "workgroup_processor_mode": 0}}

# The lane-mask form of each mask instruction on a wave32 target: the selector writes the wave64
# name and looks it up here (LANE_MASK_OPCODES[target].get(name, name))
_WAVE32_MASK_OPCODES = {"s_and_saveexec_b64": "s_and_saveexec_b32", "s_and_b64": "s_and_b32", "s_or_b64": "s_or_b32",
                        "s_xor_b64": "s_xor_b32", "s_andn2_b64": "s_andn2_b32", "s_mov_b64": "s_mov_b32",
                        "s_not_b64": "s_not_b32", "s_cselect_b64": "s_cselect_b32", "s_cmp_lg_u64": "s_cmp_lg_u32"}
LANE_MASK_OPCODES = {"gfx942": {}, "gfx90a": {}, "gfx1100": _WAVE32_MASK_OPCODES}
# exec and vcc as a wave32 target's text names them (their low halves: the whole mask)
LANE_MASK_REGISTERS = {"gfx942": {}, "gfx90a": {}, "gfx1100": {"exec": "exec_lo", "vcc": "vcc_lo"}}

# gfx1100's names of the instructions whose GFX9 name it does not take (LLVM's GFX11 assembler
# syntax, AMDGPUAsmGFX11, and the RDNA3 ISA's opcode tables): memory access widths in bits, atomics with
# their type, LDS reads and writes as loads and stores, no-carry adds, carry chains as _co_ci
SPELLING = {"gfx942": {}, "gfx90a": {}, "gfx1100": {
    **{f"global_load_{old}": f"global_load_{new}" for old, new in (
        ("ubyte", "u8"), ("sbyte", "i8"), ("ushort", "u16"), ("sshort", "i16"), ("dword", "b32"),
        ("dwordx2", "b64"), ("dwordx3", "b96"), ("dwordx4", "b128"))},
    **{f"buffer_load_{old}": f"buffer_load_{new}" for old, new in (
        ("ubyte", "u8"), ("sbyte", "i8"), ("ushort", "u16"), ("sshort", "i16"), ("dword", "b32"),
        ("dwordx2", "b64"), ("dwordx3", "b96"), ("dwordx4", "b128"))},
    **{f"{kind}_store_{old}": f"{kind}_store_{new}" for kind in ("global", "buffer") for old, new in (
        ("byte", "b8"), ("short", "b16"), ("dword", "b32"), ("dwordx2", "b64"), ("dwordx3", "b96"),
        ("dwordx4", "b128"))},
    **{f"{kind}_atomic_{old}": f"{kind}_atomic_{new}" for kind in ("global", "buffer") for old, new in (
        ("add", "add_u32"), ("smax", "max_i32"), ("umax", "max_u32"), ("smin", "min_i32"), ("umin", "min_u32"),
        ("and", "and_b32"), ("or", "or_b32"), ("xor", "xor_b32"), ("swap", "swap_b32"), ("cmpswap", "cmpswap_b32"),
        ("add_x2", "add_u64"), ("smax_x2", "max_i64"), ("umax_x2", "max_u64"), ("smin_x2", "min_i64"),
        ("umin_x2", "min_u64"), ("and_x2", "and_b64"), ("or_x2", "or_b64"), ("xor_x2", "xor_b64"),
        ("swap_x2", "swap_b64"), ("cmpswap_x2", "cmpswap_b64"))},
    **{f"ds_read_{kind}": f"ds_load_{kind}" for kind in ("u8", "i8", "u16", "i16", "b32", "b64", "b128", "u16_d16",
                                                         "u16_d16_hi")},
    **{f"ds_write_{kind}": f"ds_store_{kind}" for kind in ("b8", "b16", "b32", "b64", "b128")},
    "s_load_dword": "s_load_b32", "s_load_dwordx2": "s_load_b64", "s_load_dwordx4": "s_load_b128",
    "s_andn2_b32": "s_and_not1_b32", "s_andn2_b64": "s_and_not1_b64",
    "v_add_u32": "v_add_nc_u32", "v_sub_u32": "v_sub_nc_u32",
    "v_addc_co_u32": "v_add_co_ci_u32", "v_subb_co_u32": "v_sub_co_ci_u32",
}}


# the operand kind of a read-and-written operand (vdata, vdataN: InstrInfo.ties), and the suffix
# of the table row of an instruction's returning form (buffer_atomic_add_rtn: its data operand
# tied, the target's ATOMIC_RETURN_BIT set) beside the non-returning row of the same mnemonic
TIED_KIND = "vdata"
RETURNING_SUFFIX = "_rtn"
# the suffix of the row of a DPP move that writes some lanes of a register whose other lanes it
# keeps (its result tied to a source, as a returning atomic's data; the same text as the plain move)
DPP_MERGE_SUFFIX = "_merge"


def spelling(mnemonic: str, target: str) -> str:
    """How `target`'s assembler spells the instruction of table row `mnemonic` (a returning
    form's row, buffer_atomic_add_rtn, under its plain name: InstrInfo.assembler_name)."""
    name = mnemonic.removesuffix(RETURNING_SUFFIX).removesuffix(DPP_MERGE_SUFFIX)
    return SPELLING[target].get(name, name)

# The cache-policy modifiers of memory instructions as the assembler spells them (CDNA3 ISA,
# chapter 9: sc0 and sc1 the scope, nt non-temporal; CDNA2 ISA, chapter 9: glc, slc, scc),
# and the one that makes a global atomic return the value it replaced (the same bit, renamed).
CACHE_POLICY_BITS = {"gfx942": ("sc0", "sc1", "nt"), "gfx90a": ("glc", "slc", "scc"), "gfx1100": ("glc", "slc", "dlc")}
ATOMIC_RETURN_BIT = {"gfx942": "sc0", "gfx90a": "glc", "gfx1100": "glc"}

# target -> scope -> (release sequence, acquire sequence, the atomic's own scope bits), each
# sequence a tuple of (instruction, its cache-policy bits); the selector adds the s_waitcnt
# between them. LLVM AMDGPUUsage, "Memory Model GFX942" and "Memory Model GFX90A" (without
# tgsplit): the work-group shares one L1 and needs nothing; on gfx942 the agent and system
# scopes write back / invalidate the L2 with the scope in sc0/sc1; on gfx90a the agent's L2 is
# coherent, so agent scope only invalidates the L1 (buffer_wbinvl1_vol), and system scope also
# writes back the L2 before a release and invalidates it (buffer_invl2) after an acquire.
# "Memory Model GFX10-GFX11": in CU mode the work-group shares the L0 and needs nothing; at
# agent and system scope a release only drains (the L2 is coherent; the selector's waits drain
# vscnt too) and an acquire invalidates the L1 and L0 (buffer_gl1_inv, buffer_gl0_inv).
MEMORY_ORDER = {
    "gfx942": {
        "cta": ((), (), {}),
        "gpu": ((("buffer_wbl2", {"sc1": 1}),), (("buffer_inv", {"sc1": 1}),), {}),
        "sys": ((("buffer_wbl2", {"sc0": 1, "sc1": 1}),), (("buffer_inv", {"sc0": 1, "sc1": 1}),), {"sc1": 1}),
    },
    "gfx90a": {
        "cta": ((), (), {}),
        "gpu": ((), (("buffer_wbinvl1_vol", {}),), {}),
        "sys": ((("buffer_wbl2", {}),), (("buffer_invl2", {}), ("buffer_wbinvl1_vol", {})), {}),
    },
    "gfx1100": {
        "cta": ((), (), {}),
        "gpu": ((), (("buffer_gl1_inv", {}), ("buffer_gl0_inv", {})), {}),
        "sys": ((), (("buffer_gl1_inv", {}), ("buffer_gl0_inv", {})), {}),
    },
}


# The operand types of MFMA: bits per value, and the name the mnemonics give them. gfx942's
# 8-bit floats are the "fnuz" formats (CDNA3 ISA 7.1: fp8 is E4M3 with exponent bias 8, bf8
# E5M2 with bias 16; both have one NaN, 0x80, no infinities and no negative zero): tile's
# f8e4b8 and f8e5b16 (tl.float8e4b8, tl.float8e5b16), not the OCP float8e4nv / float8e5.
MFMA_OPERAND_BITS = {"f16": 16, "bf16": 16, "f8e4b8": 8, "f8e5b16": 8}
MFMA_FP8_NAMES = {"f8e4b8": "fp8", "f8e5b16": "bf8"}


@dataclass(frozen=True)
class MfmaShape:
    """One MFMA instruction: D (m x n, f32) = A (m x k) x B (k x n) + C."""

    mnemonic: str
    m: int
    n: int
    k: int
    operand_type: str        # A's type: "f16", "bf16", "f8e4b8" or "f8e5b16"
    passes: int              # 4-cycle passes; its result is ready passes + 3 wait states later
    target: str              # the target whose assembler spells it so
    b_type: str = ""         # B's type where it differs from A's (the mixed fp8 / bf8 forms)

    @property
    def b_operand_type(self) -> str:
        return self.b_type or self.operand_type

    @property
    def values_per_lane(self) -> int:
        """Values of A (and of B) in each lane: m * k over 64 lanes (4 of 16 bits, 8 of 8 bits)."""
        return self.m * self.k // 64

    @property
    def operand_dwords(self) -> int:
        """Dwords of A (and of B) in each lane."""
        return self.values_per_lane * MFMA_OPERAND_BITS[self.operand_type] // 32

    @property
    def result_dwords(self) -> int:
        return self.m * self.n // 64


def _fp8_shapes() -> list[MfmaShape]:
    """gfx942's MFMA on 8-bit floats: 16x16x32 and 32x32x16, each pairing of fp8 and bf8 for A and B
    (v_mfma_f32_16x16x32_fp8_bf8: A fp8, B bf8), eight 8-bit values per lane, as many passes as
    the 16-bit shapes of the same result size."""
    return [MfmaShape(f"v_mfma_f32_{m}x{m}x{k}_{MFMA_FP8_NAMES[a]}_{MFMA_FP8_NAMES[b]}", m, m, k, a, passes,
                      "gfx942", b if b != a else "")
            for m, k, passes in ((16, 32, 8), (32, 16, 16)) for a in MFMA_FP8_NAMES for b in MFMA_FP8_NAMES]


# Pass counts: LLVM's GCNHazardRecognizer and SISchedule give CDNA2's 16 (32x32x8) and 8
# (16x16x16); CDNA3 doubles the rate of both, so these are upper bounds and the wait states
# derived from them (passes + 3 before another instruction touches D) are safe on gfx942.
# CDNA3 renamed the instructions (an underscore before the type; bf16_1k became bf16).
MFMA_SHAPES = {shape.mnemonic: shape for shape in (
    MfmaShape("v_mfma_f32_32x32x8_f16", 32, 32, 8, "f16", 16, "gfx942"),
    MfmaShape("v_mfma_f32_16x16x16_f16", 16, 16, 16, "f16", 8, "gfx942"),
    MfmaShape("v_mfma_f32_16x16x16_bf16", 16, 16, 16, "bf16", 8, "gfx942"),
    MfmaShape("v_mfma_f32_32x32x8f16", 32, 32, 8, "f16", 16, "gfx90a"),
    MfmaShape("v_mfma_f32_16x16x16f16", 16, 16, 16, "f16", 8, "gfx90a"),
    MfmaShape("v_mfma_f32_16x16x16bf16_1k", 16, 16, 16, "bf16", 8, "gfx90a"),
    *_fp8_shapes(),
)}


@dataclass(frozen=True)
class WmmaShape:
    """One WMMA instruction of RDNA3 (RDNA3 ISA 7.9, WMMA): D (16 x 16, f32) = A (16 x 16) x B
    (16 x 16) + C for one wave of 32, each lane holding a whole row of A / column of B
    (OPERAND_DWORDS VGPRs) and RESULT_DWORDS f32 of D; tile.ir.wmma_layouts places them."""

    mnemonic: str
    operand_type: str        # "f16" or "bf16"
    target: str

    m = n = k = 16
    OPERAND_DWORDS = 8       # 16 16-bit values
    RESULT_DWORDS = 8        # 16 x 16 f32 over 32 lanes


WMMA_SHAPES = {shape.mnemonic: shape for shape in (
    WmmaShape("v_wmma_f32_16x16x16_f16", "f16", "gfx1100"),
    WmmaShape("v_wmma_f32_16x16x16_bf16", "bf16", "gfx1100"),
)}


def wmma_shape(target: str, operand_type: str) -> Optional[WmmaShape]:
    """The WMMA of `target` on `operand_type` operands, or None."""
    return next((s for s in WMMA_SHAPES.values() if s.target == target and s.operand_type == operand_type), None)


def mfma_shape(target: str, m: int, operand_type: str, b_type: str = "") -> Optional[MfmaShape]:
    """The MFMA of `target` with an m x m result on A of `operand_type` and B of `b_type` (the
    same where not given), or None."""
    return next((s for s in MFMA_SHAPES.values() if s.target == target and s.m == m
                 and s.operand_type == operand_type and s.b_operand_type == (b_type or operand_type)), None)


def mfma_operand_types(target: str) -> tuple[str, ...]:
    """The operand types tile's MFMA table has for `target`."""
    return tuple(dict.fromkeys(s.operand_type for s in MFMA_SHAPES.values() if s.target == target))


# the read-modify-write atomics on 32 bits: (kind, signed or float) -> mnemonic
GLOBAL_ATOMICS = {"global_atomic_add": ("add", "int"), "global_atomic_add_f32": ("add", "float"),
                  "global_atomic_smax": ("max", "signed"), "global_atomic_umax": ("max", "unsigned"),
                  "global_atomic_smin": ("min", "signed"), "global_atomic_umin": ("min", "unsigned"),
                  "global_atomic_and": ("and", "int"), "global_atomic_or": ("or", "int"),
                  "global_atomic_xor": ("xor", "int"), "global_atomic_swap": ("exch", "any")}
# the same on 64-bit values (VGPR pairs; CDNA2/CDNA3 ISA "FLAT, Scratch and Global Instructions"):
# the integer forms end in _x2, f64 has its own add
GLOBAL_ATOMICS_64 = {"global_atomic_add_x2": ("add", "int"), "global_atomic_add_f64": ("add", "float"),
                     "global_atomic_smax_x2": ("max", "signed"), "global_atomic_umax_x2": ("max", "unsigned"),
                     "global_atomic_smin_x2": ("min", "signed"), "global_atomic_umin_x2": ("min", "unsigned"),
                     "global_atomic_and_x2": ("and", "int"), "global_atomic_or_x2": ("or", "int"),
                     "global_atomic_xor_x2": ("xor", "int"), "global_atomic_swap_x2": ("exch", "any")}


# Buffer atomics (MUBUF, offen, through a raw buffer resource): the same operations as the global
# ones, on the lanes whose access lies inside num_records; the others neither read nor write
# memory (CDNA3 ISA, chapter 9 "Vector Memory Operations": buffer range checking, and the MUBUF
# atomics BUFFER_ATOMIC_* of its opcode tables; the RDNA3 ISA's "Vector Memory Buffer
# Instructions" alike). Each exists non-returning (the data only read) and returning (the
# target's ATOMIC_RETURN_BIT: the old value written over the data, InstrInfo.ties). Per target,
# as llvm-mc -mcpu=gfx942 / gfx90a / gfx1100 reads them: the integer operations on 32 and 64 bits
# (_x2), cmpswap, swap and add_f32 everywhere; add_f64 (and min_f64 / max_f64, pk_add_f16) on
# gfx942 and gfx90a only; gfx1100 instead has min_f32 / max_f32 and no 64-bit float atomic.
# tile's lowering turns float min / max into integer atomics (tile.codegen.lower_atomics) and has
# no packed f16 atomic, so those rows are not in the table.
BUFFER_ATOMICS = {name.replace("global_", "buffer_", 1): operation for name, operation in GLOBAL_ATOMICS.items()}
BUFFER_ATOMICS_64 = {name.replace("global_", "buffer_", 1): operation for name, operation in GLOBAL_ATOMICS_64.items()}


@dataclass(frozen=True)
class InstrInfo:
    """What tile knows of one instruction."""

    mnemonic: str
    family: str
    defs: tuple[str, ...]
    uses: tuple[str, ...]
    latency: str
    counter: Optional[str] = None   # "vmcnt", "lgkmcnt" or "expcnt"; a store's: STORE_COUNTER
    targets: tuple[str, ...] = TARGETS   # where the instruction exists under this name

    @property
    def is_valu(self) -> bool:
        return self.family.startswith("VOP")

    @property
    def is_dpp(self) -> bool:
        """A VALU op whose first source comes from another lane (DPP_CONTROLS; its MInst's mods
        hold dpp_ctrl, row_mask, bank_mask, bound_ctrl and, on gfx1100, fi)."""
        return self.family.endswith("_DPP")

    @property
    def ties(self) -> tuple[tuple[int, int], ...]:
        """(result index, source index) of each read-and-written operand (kind vdata, vdataN):
        the k-th tied result is the k-th tied source."""
        results = [k for k, kind in enumerate(self.defs) if kind.startswith(TIED_KIND)]
        sources = [k for k, kind in enumerate(self.uses) if kind.startswith(TIED_KIND)]
        return tuple(zip(results, sources))

    @property
    def assembler_name(self) -> str:
        """The mnemonic the assembler reads (a returning form's row carries RETURNING_SUFFIX;
        its text is the plain mnemonic with the target's ATOMIC_RETURN_BIT; a merging DPP move's
        DPP_MERGE_SUFFIX, its text the plain move's)."""
        return self.mnemonic.removesuffix(RETURNING_SUFFIX).removesuffix(DPP_MERGE_SUFFIX)


def _rows() -> list[InstrInfo]:
    rows: list[InstrInfo] = []

    def add(mnemonic: str, family: str, operands: str, latency: str, counter: Optional[str] = None,
            targets: tuple[str, ...] = TARGETS) -> None:
        defs, _, uses = operands.partition("|")
        rows.append(InstrInfo(mnemonic, family, tuple(defs.split()), tuple(uses.split()), latency, counter, targets))

    # scalar ALU: one result per wave
    add("s_mov_b32", "SOP1", "sdst | ssrc", "salu")
    add("s_mov_b64", "SOP1", "sdst2 | ssrc2", "salu")
    add("s_not_b64", "SOP1", "sdst2 | ssrc2", "salu")
    add("s_not_b32", "SOP1", "sdst | ssrc", "salu")
    add("s_and_saveexec_b64", "SOP1", "sdst2 | ssrc2", "salu", targets=WAVE64_TARGETS)
    add("s_and_saveexec_b32", "SOP1", "sdst | ssrc", "salu", targets=WAVE32_TARGETS)
    for name in ("s_add_u32", "s_addc_u32", "s_sub_u32", "s_subb_u32", "s_mul_i32", "s_mul_hi_u32", "s_mul_hi_i32",
                 "s_and_b32", "s_or_b32", "s_xor_b32", "s_lshl_b32", "s_lshr_b32", "s_ashr_i32",
                 "s_min_i32", "s_min_u32", "s_max_i32", "s_max_u32", "s_cselect_b32", "s_andn2_b32"):
        add(name, "SOP2", "sdst | ssrc ssrc", "salu")
    for name in ("s_and_b64", "s_or_b64", "s_xor_b64", "s_andn2_b64", "s_cselect_b64"):
        add(name, "SOP2", "sdst2 | ssrc2 ssrc2", "salu")
    for name in ("s_lshl_b64", "s_lshr_b64", "s_ashr_i64"):
        add(name, "SOP2", "sdst2 | ssrc2 ssrc", "salu")
    for pred in ("eq", "lg", "lt", "le", "gt", "ge"):
        for ty in ("i32", "u32"):
            add(f"s_cmp_{pred}_{ty}", "SOPC", "| ssrc ssrc", "salu")
    for pred in ("eq", "lg"):
        add(f"s_cmp_{pred}_u64", "SOPC", "| ssrc2 ssrc2", "salu")
    add("s_waitcnt", "SOPP", "|", "salu")
    # GFX10+: the wait on stores alone, and the wait on the ALU dependency counters that the
    # RDNA3 hazards need (tile.codegen.amdgcn.rdna3)
    add("s_waitcnt_vscnt", "SOPK", "| null imm", "salu", targets=WAVE32_TARGETS)
    add("s_waitcnt_depctr", "SOPP", "| imm", "salu", targets=WAVE32_TARGETS)
    add("s_nop", "SOPP", "| imm", "salu")
    add("s_barrier", "SOPP", "|", "salu")
    add("s_branch", "SOPP", "| label", "salu")
    add("s_cbranch_scc0", "SOPP", "| label", "salu")
    add("s_cbranch_scc1", "SOPP", "| label", "salu")
    add("s_cbranch_execz", "SOPP", "| label", "salu")
    add("label", "PSEUDO", "| label", "salu")   # a branch target: prints as `name:`
    add("s_endpgm", "SOPP", "|", "salu")

    # scalar memory: kernel arguments
    add("s_load_dword", "SMEM", "sdst | sbase imm", "smem", "lgkmcnt")
    add("s_load_dwordx2", "SMEM", "sdst2 | sbase imm", "smem", "lgkmcnt")
    add("s_load_dwordx4", "SMEM", "sdst4 | sbase imm", "smem", "lgkmcnt")

    # vector ALU: one result per lane
    add("v_mov_b32", "VOP1", "vdst | src", "valu")
    for name in ("v_cvt_f32_f16", "v_cvt_f16_f32", "v_cvt_f32_i32", "v_cvt_f32_u32", "v_cvt_i32_f32",
                 "v_cvt_u32_f32"):
        add(name, "VOP1", "vdst | src", "valu")
    for name in ("v_floor_f32", "v_ceil_f32", "v_trunc_f32", "v_rndne_f32"):
        add(name, "VOP1", "vdst | src", "valu")
    add("v_cvt_f64_f32", "VOP1", "vdst2 | src", "valu")
    add("v_cvt_f32_f64", "VOP1", "vdst | src2", "valu")
    for name in ("v_add_f64", "v_mul_f64", "v_min_f64", "v_max_f64"):   # double rate on CDNA3
        add(name, "VOP3", "vdst2 | src2 src2", "valu")
    add("v_fma_f64", "VOP3", "vdst2 | src2 src2 src2", "valu")
    # f64 division (CDNA3 ISA 6): the reciprocal estimate (good to 2^29 ulp) and the f64 forms
    # of the f32 division steps below (v_div_scale_f64 writes VCC, v_div_fmas_f64 reads it)
    add("v_rcp_f64", "VOP1", "vdst2 | src2", "trans")
    add("v_div_scale_f64", "VOP3", "vdst2 vcc | src2 src2 src2", "valu")
    add("v_div_fmas_f64", "VOP3", "vdst2 | vsrc2 vsrc2 vsrc2", "valu")
    add("v_div_fixup_f64", "VOP3", "vdst2 | src2 src2 src2", "valu")
    for name in ("v_rcp_f32", "v_exp_f32", "v_log_f32", "v_rsq_f32", "v_sqrt_f32", "v_sin_f32", "v_cos_f32"):
        add(name, "VOP1", "vdst | src", "trans")
    for name in ("v_add_u32", "v_sub_u32", "v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32",
                 "v_and_b32", "v_or_b32", "v_xor_b32", "v_lshlrev_b32", "v_lshrrev_b32", "v_ashrrev_i32",
                 "v_min_i32", "v_min_u32", "v_max_i32", "v_max_u32",
                 "v_add_f32", "v_sub_f32", "v_mul_f32", "v_min_f32", "v_max_f32"):
        add(name, "VOP2" if not name.startswith("v_mul_") or name == "v_mul_f32" else "VOP3", "vdst | src src", "valu")
    add("v_fma_f32", "VOP3", "vdst | src src src", "valu")
    # the steps of IEEE f32 division (CDNA3 ISA 6, VOP3): scale (VCC: only one operand was
    # scaled), fma with that scale undone (reads VCC without naming it: VCC takes the constant
    # bus, so its sources are VGPRs), and the special cases' fix-up
    add("v_div_scale_f32", "VOP3", "vdst vcc | src src src", "valu")
    add("v_div_fmas_f32", "VOP3", "vdst | vsrc vsrc vsrc", "valu")
    add("v_div_fixup_f32", "VOP3", "vdst | src src src", "valu")
    add("v_bfe_i32", "VOP3", "vdst | src src src", "valu")
    add("v_bfe_u32", "VOP3", "vdst | src src src", "valu")
    add("v_readfirstlane_b32", "VOP1", "sdst | vsrc", "valu")
    # one lane of a VGPR <-> an SGPR, whatever EXEC says (the lane an inline constant): where
    # the register allocator keeps SGPRs it spills (CDNA3 ISA 6, VOP3)
    add("v_readlane_b32", "VOP3", "sdst | vsrc ssrc", "valu")
    add("v_writelane_b32", "VOP3", "vdst | ssrc ssrc", "valu")
    # between the two halves of the unified register file (CDNA3 ISA 6, VOP3P): where the
    # register allocator keeps VGPR values when the VGPRs run out
    add("v_accvgpr_read_b32", "VOP3P", "vdst | asrc", "valu", targets=AGPR_TARGETS)
    add("v_accvgpr_write_b32", "VOP3P", "adst | src", "valu", targets=AGPR_TARGETS)
    add("v_lshl_or_b32", "VOP3", "vdst | src src src", "valu")
    add("v_add3_u32", "VOP3", "vdst | src src src", "valu")
    add("v_cndmask_b32", "VOP3", "vdst | src src lmask", "valu")
    add("v_add_co_u32", "VOP2", "vdst vcc | src src", "valu")
    add("v_addc_co_u32", "VOP2", "vdst vcc | src src vcc", "valu")
    add("v_sub_co_u32", "VOP2", "vdst vcc | src src", "valu")
    add("v_subb_co_u32", "VOP2", "vdst vcc | src src vcc", "valu")
    for name in ("v_mad_i64_i32", "v_mad_u64_u32"):   # 32 x 32 + 64 -> 64 bits (quarter rate)
        add(name, "VOP3", "vdst2 vcc | src src src2", "valu")
    for name in ("v_lshlrev_b64", "v_lshrrev_b64", "v_ashrrev_i64"):
        add(name, "VOP3", "vdst2 | src src2", "valu")
    # compares write one bit per lane into a lane mask (the VOP3 form, CDNA3 ISA 6.7)
    for pred in ("eq", "ne", "lt", "le", "gt", "ge"):
        for ty in ("i32", "u32", "i64", "u64"):
            kind = "src2" if ty.endswith("64") else "src"
            add(f"v_cmp_{pred}_{ty}", "VOPC", f"lmask | {kind} {kind}", "valu")
    for pred in ("eq", "neq", "lt", "le", "gt", "ge", "u"):   # u: unordered (either is NaN)
        add(f"v_cmp_{pred}_f32", "VOPC", "lmask | src src", "valu")
        add(f"v_cmp_{pred}_f64", "VOPC", "lmask | src2 src2", "valu")

    # matrix cores: D, A, B, C (C may be D itself: accumulation in place; C and D in VGPRs or in AGPRs)
    for shape in MFMA_SHAPES.values():
        d, ab = shape.result_dwords, shape.operand_dwords
        add(shape.mnemonic, "VOP3P", f"avdst{d} | vsrc{ab} vsrc{ab} avsrc{d}", "xdl", targets=(shape.target,))

    # RDNA3's matrix instructions: D, A, B, C (C may be D itself), and the VALU no-op that
    # separates a WMMA from the next one reading its D as A or B (tile.codegen.amdgcn.rdna3)
    for shape in WMMA_SHAPES.values():
        add(shape.mnemonic, "VOP3P", "vdst8 | vsrc8 vsrc8 vsrc8", "xdl", targets=(shape.target,))
    add("v_nop", "VOP1", "|", "valu", targets=WAVE32_TARGETS)

    # global memory (the FLAT encoding's global segment): loads and stores both count in vmcnt
    for name, width in (("ubyte", 1), ("sbyte", 1), ("ushort", 1), ("sshort", 1), ("dword", 1),
                        ("dwordx2", 2), ("dwordx3", 3), ("dwordx4", 4)):
        dst = "vdst" if width == 1 else f"vdst{width}"
        add(f"global_load_{name}", "FLAT", f"{dst} | vaddr saddr", "vmem", "vmcnt")
    # buffer loads (MUBUF, offen: the byte offset in a VGPR, the soffset an SGPR or 0, the
    # immediate offset BUFFER_OFFSET_RANGE) through a raw buffer resource: lanes out of its range
    # read 0 (BUFFER_RESOURCE_CONFIG); they count in vmcnt with the global loads, in issue order
    for name, width in (("ubyte", 1), ("sbyte", 1), ("ushort", 1), ("sshort", 1), ("dword", 1),
                        ("dwordx2", 2), ("dwordx3", 3), ("dwordx4", 4)):
        dst = "vdst" if width == 1 else f"vdst{width}"
        add(f"buffer_load_{name}", "MUBUF", f"{dst} | vsrc ssrc4 ssrc", "vmem", "vmcnt")
    for name, width in (("byte", 1), ("short", 1), ("dword", 1), ("dwordx2", 2), ("dwordx3", 3), ("dwordx4", 4)):
        data = "vsrc" if width == 1 else f"vsrc{width}"
        add(f"global_store_{name}", "FLAT", f"| vaddr {data} saddr", "vmem", "store")
    # buffer stores (MUBUF, offen; written data first as the assembler reads it: vdata, vaddr,
    # srsrc, soffset): a component ending past num_records writes nothing (the "Range Checking"
    # sections of the CDNA3 and RDNA3 ISAs' buffer chapters); they count in the store counter
    for name, width in (("byte", 1), ("short", 1), ("dword", 1), ("dwordx2", 2), ("dwordx3", 3), ("dwordx4", 4)):
        data = "vsrc" if width == 1 else f"vsrc{width}"
        add(f"buffer_store_{name}", "MUBUF", f"| {data} vsrc ssrc4 ssrc", "vmem", "store")

    # global atomics, always in their returning form (ATOMIC_RETURN_BIT; their scope bits come
    # from MEMORY_ORDER): they bypass the L1 cache and count in vmcnt like loads (CDNA3 ISA 9.1;
    # LLVM AMDGPUUsage, "Memory Model GFX942" and "GFX90A")
    for name in GLOBAL_ATOMICS:
        add(name, "FLAT", "vdst | vaddr vsrc saddr", "vmem", "vmcnt")
    add("global_atomic_cmpswap", "FLAT", "vdst | vaddr vsrc2 saddr", "vmem", "vmcnt")   # data: new, compare
    for name in GLOBAL_ATOMICS_64:   # RDNA3 has no f64 atomic add
        add(name, "FLAT", "vdst2 | vaddr vsrc2 saddr", "vmem", "vmcnt",
            targets=WAVE64_TARGETS if name.endswith("f64") else TARGETS)
    add("global_atomic_cmpswap_x2", "FLAT", "vdst2 | vaddr vsrc4 saddr", "vmem", "vmcnt")   # new, compare
    # buffer atomics (BUFFER_ATOMICS), data first as the assembler reads them (vdata, vaddr,
    # srsrc, soffset); cmpswap's data is the new value then the compare value, and its returning
    # form writes the old value into the first half of them (the encoding's one VDATA field: the
    # whole tuple is tied). The returning form counts in vmcnt, where its result lands; the
    # non-returning one counts as a store (STORE_COUNTER: vscnt on gfx1100)
    for name in list(BUFFER_ATOMICS) + list(BUFFER_ATOMICS_64):
        width = 2 if name in BUFFER_ATOMICS_64 else 1
        data = "vdata" if width == 1 else f"vdata{width}"
        where = WAVE64_TARGETS if name.endswith("_f64") else TARGETS
        add(name, "MUBUF", f"| vsrc{width if width > 1 else ''} vsrc ssrc4 ssrc", "vmem", "store", targets=where)
        add(name + RETURNING_SUFFIX, "MUBUF", f"{data} | {data} vsrc ssrc4 ssrc", "vmem", "vmcnt", targets=where)
    for name, width in (("buffer_atomic_cmpswap", 2), ("buffer_atomic_cmpswap_x2", 4)):
        add(name, "MUBUF", f"| vsrc{width} vsrc ssrc4 ssrc", "vmem", "store")
        add(name + RETURNING_SUFFIX, "MUBUF", f"vdata{width} | vdata{width} vsrc ssrc4 ssrc", "vmem", "vmcnt")
    # cache maintenance of the memory model (MEMORY_ORDER): write back dirty L2 lines
    # (release), invalidate the L1 and, at system scope, the L2 (acquire); all count in vmcnt
    add("buffer_wbl2", "MUBUF", "|", "vmem", "vmcnt", targets=WAVE64_TARGETS)
    add("buffer_inv", "MUBUF", "|", "vmem", "vmcnt", targets=("gfx942",))
    add("buffer_wbinvl1_vol", "MUBUF", "|", "vmem", "vmcnt", targets=("gfx90a",))
    add("buffer_invl2", "MUBUF", "|", "vmem", "vmcnt", targets=("gfx90a",))
    # RDNA3: invalidate the L1 (per shader array) and the L0 (per CU) caches (RDNA3 ISA, BUFFER_GL1_INV
    # and BUFFER_GL0_INV; LLVM AMDGPUUsage, "Memory Model GFX10-GFX11")
    add("buffer_gl1_inv", "MUBUF", "|", "vmem", "vmcnt", targets=("gfx1100",))
    add("buffer_gl0_inv", "MUBUF", "|", "vmem", "vmcnt", targets=("gfx1100",))

    # LDS (the DS encoding): counted in lgkmcnt, in order among themselves (CDNA3 ISA 10)
    for name, width in (("u8", 1), ("i8", 1), ("u16", 1), ("i16", 1), ("b32", 1), ("b64", 2), ("b128", 4)):
        add(f"ds_read_{name}", "DS", f"{'vdst' if width == 1 else f'vdst{width}'} | vsrc", "ds", "lgkmcnt")
    for name, width in (("b8", 1), ("b16", 1), ("b32", 1), ("b64", 2), ("b128", 4)):
        add(f"ds_write_{name}", "DS", f"| vsrc {'vsrc' if width == 1 else f'vsrc{width}'}", "ds", "lgkmcnt")
    # 16-bit reads into one half of a VGPR, the other half kept (D16_MERGE_KEEPS): two of them
    # fill a word of packed 16-bit values with no ALU op (RDNA3 ISA, LDS instructions:
    # DS_LOAD_U16_D16 and DS_LOAD_U16_D16_HI)
    for name in D16_MERGE_KEEPS:
        add(name, "DS", "vdst | vsrc", "ds", "lgkmcnt", targets=WAVE32_TARGETS)
    add("ds_add_u32", "DS", "| vsrc vsrc", "ds", "lgkmcnt")   # LDS atomic add, no return (tl.histogram's bins)
    # lane permutation through the LDS crossbar (no LDS memory): dst = data of lane addr / 4
    add("ds_bpermute_b32", "DS", "vdst | vsrc vsrc", "ds", "lgkmcnt")
    # lanes exchanged within each group of SWIZZLE_LANES by the offset alone (no address VGPR,
    # no LDS memory; CDNA3 and RDNA3 ISA, DS_SWIZZLE_B32): see swizzle_offset
    add("ds_swizzle_b32", "DS", "vdst | vsrc", "ds", "lgkmcnt")
    # DPP moves (DPP_CONTROLS): the first source read from another lane, on the VALU. Its first
    # source must be a VGPR; a lane that is not written keeps its old value, so the selector's
    # moves write every lane between them (bound_ctrl:1; one move with full masks, or a first
    # into some banks and a merging one into the others) or the result would also be a source
    add("v_mov_b32_dpp", "VOP1_DPP", "vdst | vsrc", "valu")
    # the same, into lanes a first move left unwritten (bank_mask): the result register is also
    # read, its other lanes kept (isa.dpp_butterfly's two-move butterflies)
    add("v_mov_b32_dpp" + DPP_MERGE_SUFFIX, "VOP1_DPP", "vdata | vdata vsrc", "valu")
    for name in DPP_COMBINES:   # dst = op(src0 from another lane, src1): both sources VGPRs
        add(f"{name}_dpp", "VOP2_DPP", "vdst | vsrc vsrc", "valu")
    return rows


INSTRUCTIONS: dict[str, InstrInfo] = {row.mnemonic: row for row in _rows()}


def counter(mnemonic: str, target: str) -> Optional[str]:
    """The counter instruction `mnemonic` increments on `target` (a store's: STORE_COUNTER)."""
    name = info(mnemonic).counter
    return STORE_COUNTER[target] if name == "store" else name


def info(mnemonic: str) -> InstrInfo:
    """The table row of `mnemonic`; KeyError names it when tile does not know the instruction."""
    try:
        return INSTRUCTIONS[mnemonic]
    except KeyError:
        raise KeyError(f"{mnemonic} is not in tile's AMDGCN instruction table") from None


INLINE_FLOATS = {0.5: 0x3F000000, -0.5: 0xBF000000, 1.0: 0x3F800000, -1.0: 0xBF800000,
                 2.0: 0x40000000, -2.0: 0xC0000000, 4.0: 0x40800000, -4.0: 0xC0800000}
INLINE_INTS = range(-16, 65)   # CDNA3 ISA 3.6.2: integers -16..64 need no literal


def fp8_dot_refusal(name: str, operand_types: Sequence[DType] = ()) -> Optional[str]:
    """Why tl.dot cannot take fp8 operands of `operand_types` on target `name`, or None where it
    can. An AMD target takes the fp8 formats of its MFMA table (MFMA_SHAPES): gfx942's
    fnuz f8e4b8 / f8e5b16 (on its fp8 MFMA: fp8_dot_is_native), no other (OCP f8e4nv / f8e5 are
    other formats: as in Triton, no MFMA for them on gfx942); gfx90a none; gfx1100 has no MFMA,
    and its WMMA take f16 and bf16. PTX targets take fp8 everywhere (through f16 where mma has none)."""
    if name not in TARGETS:
        return None
    types = mfma_operand_types(name)
    if not types:
        wmma_types = ", ".join(s.operand_type for s in WMMA_SHAPES.values() if s.target == name)
        return f"{name} has no fp8 matrix instruction in tile (it has no MFMA; its WMMA take {wmma_types})"
    native = [t for t in types if t.startswith("f8")]
    if not native:
        return f"{name} has no fp8 MFMA instruction in tile (its MFMA take {', '.join(types)})"
    foreign = sorted({t.name for t in operand_types if t.is_fp8 and t.name not in native})
    if foreign:
        return (f"{name}'s fp8 MFMA take the fnuz formats {' and '.join(native)} (exponent bias 8 and 16, one NaN "
                f"code, no infinities), not {' and '.join(foreign)}: convert the operands first (to "
                f"tl.float8e4b8 / tl.float8e5b16, or tl.float16)")
    return None


def fp8_dot_is_native(name: str, operand_types: Sequence[DType]) -> bool:
    """Whether target `name`'s matrix instructions take tl.dot's fp8 operands of `operand_types`
    as they are (gfx942's MFMA on fnuz fp8 / bf8, mixed too), so the frontend keeps them fp8
    rather than converting them to f16."""
    if name not in TARGETS:
        return False
    native = [t for t in mfma_operand_types(name) if t.startswith("f8")]
    return all(t.name in native for t in operand_types)
