"""The hazards of RDNA3 (gfx1100) that the hardware does not resolve, and their waits.

RDNA3 interlocks the VALU dependencies GFX9 left to software (waitcnt.HAZARDS: none of them
applies), but it has hazards of its own, which LLVM's GCNHazardRecognizer fixes with
`s_waitcnt_depctr` (a wait on the wave's dependency counters, RDNA3 ISA, S_WAITCNT_DEPCTR;
the fields of its immediate in LLVM's AMDGPU docs, gfx11 waitcnt_depctr; llvm-mc reads
va_vdst(0) as 0xfff and sa_sdst(0) as 0xfffe):

    trans use     a transcendental (v_exp_f32, v_rcp_f32 ...) writes a VGPR that a VALU reads
                  with at most TRANS_USE_VALUS VALU ops between (LLVM's
                  FeatureVALUTransUseHazard, set for gfx1100-gfx1102): wait for va_vdst = 0
                  before the reader. (LLVM also ends the window at a memory instruction or a
                  second transcendental; tile keeps it open: a wait too many at worst.)
    mask write    a VALU reads an SGPR (or vcc) as a lane mask or carry (v_cndmask_b32's
                  mask, v_add_co_ci_u32's carry, v_div_fmas_f32's vcc) and an SALU op then
                  writes it (LLVM's VALUMaskWriteHazard of GFX11, which LLVM checks in wave64
                  code; tile waits on wave32 as well): wait for sa_sdst = 0 right after the
                  SALU write, before anything reads the new value.
    WMMA operand  a WMMA writes D and the very next VALU op is a WMMA reading any of it as A or
                  B (C may be that D: the accumulation chain) (LLVM's fixWMMAHazards for GFX11):
                  one v_nop between them.

    v_exp_f32 v3, v2                       v_exp_f32 v3, v2
    v_mul_f32 v4, v3, v1          ->       s_waitcnt_depctr 0xfff          ; va_vdst(0)
                                           v_mul_f32 v4, v3, v1

Control flow: the scan is linear, and a label may be reached from a later instruction (a
loop's back edge), so at a label everything the rest of the code might bring is assumed in
flight (the waits are cheap; a missed one is silent corruption).
"""
from __future__ import annotations

from typing import Optional

from .isa import WMMA_SHAPES, info
from .mir import VCC, Imm, MInst, Reg, Sub
from .waitcnt import units

# the targets with each hazard (LLVM's GCNSubtarget: the trans-use hazard is gfx1100-gfx1102's)
TRANS_USE_TARGETS = ("gfx1100",)
MASK_WRITE_TARGETS = ("gfx1100",)
WMMA_TARGETS = tuple(dict.fromkeys(shape.target for shape in WMMA_SHAPES.values()))
TRANS_USE_VALUS = 5              # VALU ops after a transcendental that may still see its result late
WAIT_VA_VDST = Imm(0x0FFF, "0xfff", False)    # s_waitcnt_depctr va_vdst(0): every VALU result written
WAIT_SA_SDST = Imm(0xFFFE, "0xfffe", False)   # s_waitcnt_depctr sa_sdst(0): every SALU result written

Unit = tuple


def _is_valu(inst: MInst) -> bool:
    return inst.opcode != "label" and info(inst.opcode).is_valu


def _is_trans(inst: MInst) -> bool:
    return inst.opcode != "label" and info(inst.opcode).latency == "trans"


def _vgprs(operands, assignment) -> set[Unit]:
    return {u for o in operands if isinstance(o, Sub) and o.bank == "v" for u in units(o, assignment)}


def _mask_reads(inst: MInst, assignment) -> set[Unit]:
    """The SGPR cells (and vcc) VALU `inst` reads as a lane mask or carry."""
    if not _is_valu(inst):
        return set()
    row = info(inst.opcode)
    cells: set[Unit] = set()
    for kind, o in zip(row.uses, inst.uses):
        if o == VCC:
            cells.add(("vcc", 0))
        elif kind == "lmask" and isinstance(o, Sub):
            cells.update(units(o, assignment))
    if inst.opcode == "v_div_fmas_f32":   # reads vcc without naming it
        cells.add(("vcc", 0))
    return cells


def _salu_writes(inst: MInst, assignment) -> set[Unit]:
    if inst.opcode == "label" or info(inst.opcode).latency != "salu":
        return set()
    cells = {u for o in inst.defs if isinstance(o, Sub) for u in units(o, assignment)}
    return cells | ({("vcc", 0)} if VCC in inst.defs else set())


def _is_depctr(inst: MInst, wait: Imm) -> bool:
    return inst.opcode == "s_waitcnt_depctr" and inst.uses[0].value == wait.value


def _trans_use(out: list[MInst], later: list[MInst], inst: MInst, assignment) -> bool:
    """Whether VALU `inst`, after the instructions `out`, reads a transcendental's result too
    soon; `later` (the code after it) stands for what a back edge to a label may bring."""
    reads = _vgprs(inst.uses, assignment)
    valus = 0
    for earlier in reversed(out):
        if _is_depctr(earlier, WAIT_VA_VDST) or valus > TRANS_USE_VALUS:
            return False
        if earlier.opcode == "label":
            return any(_is_trans(i) and _vgprs(i.defs, assignment) & reads for i in later)
        if _is_trans(earlier) and _vgprs(earlier.defs, assignment) & reads:
            return True
        valus += _is_valu(earlier)
    return False


def _wmma_operand(out: list[MInst], inst: MInst, assignment) -> bool:
    """Whether WMMA `inst` reads as A or B the D of a WMMA with no VALU op between them."""
    if inst.opcode not in WMMA_SHAPES:
        return False
    earlier = next((i for i in reversed(out) if _is_valu(i) or i.opcode == "label"), None)
    if earlier is None or earlier.opcode not in WMMA_SHAPES:
        return False
    return bool(_vgprs(earlier.defs, assignment) & _vgprs(inst.uses[:2], assignment))


def insert_rdna3_waits(insts: list[MInst], assignment: Optional[dict[Reg, int]] = None,
                       target: str = "gfx1100") -> list[MInst]:
    """`insts` with the s_waitcnt_depctr the RDNA3 hazards above need on `target` (the code of
    a target without them is returned as is)."""
    trans_use, mask_write = target in TRANS_USE_TARGETS, target in MASK_WRITE_TARGETS
    wmma = target in WMMA_TARGETS
    if not (trans_use or mask_write or wmma):
        return insts
    out: list[MInst] = []
    read_as_mask: set[Unit] = set()   # SGPR cells VALU ops read as masks, not yet covered by a wait
    for k, inst in enumerate(insts):
        if inst.opcode == "label":
            read_as_mask |= {u for later in insts[k:] for u in _mask_reads(later, assignment)}
        if trans_use and _is_valu(inst) and _trans_use(out, insts[k:], inst, assignment):
            out.append(MInst("s_waitcnt_depctr", [], [WAIT_VA_VDST], comment="a transcendental's result is read"))
        if wmma and _wmma_operand(out, inst, assignment):
            out.append(MInst("v_nop", [], [], comment="a WMMA's result is the next one's A or B"))
        out.append(inst)
        if not mask_write:
            continue
        read_as_mask |= _mask_reads(inst, assignment)
        if _salu_writes(inst, assignment) & read_as_mask:
            out.append(MInst("s_waitcnt_depctr", [], [WAIT_SA_SDST], comment="an SGPR a VALU read as a mask is written"))
            read_as_mask.clear()
    return out
