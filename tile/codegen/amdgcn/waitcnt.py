"""s_waitcnt insertion, and the wait states the hardware does not interlock.

Memory instructions return their results later: a global or buffer load increments vmcnt
(stores do too on GFX9; on GFX11 they count in vscnt alone, isa.STORE_COUNTER), an s_load increments
lgkmcnt, and each counter falls as results land. Before an
instruction reads or writes a register that an in-flight load will write, it must wait:
`s_waitcnt vmcnt(N)` until at most N vector memory ops are outstanding. Vector memory ops
return in order, so N is the number issued after the needed load; LDS ops likewise in
lgkmcnt, but scalar loads may return out of order, so while one is in flight a wait on
lgkmcnt is lgkmcnt(0) (CDNA3 ISA 4.4).

    global_load_dword v1, v[2:3], off         global_load_dword v1, v[2:3], off
    global_load_dword v4, v[2:3], off   ->    global_load_dword v4, v[2:3], off
    v_add_f32 v5, v1, v1                      s_waitcnt vmcnt(1)
                                              v_add_f32 v5, v1, v1

Across a loop's branches and labels nothing stays in flight (a wait for all before each). The
counts are capped at the width of the target's fields (isa.WAIT_COUNT_LIMITS); stores in
vscnt have no results to wait for, and only the selector's drains (barriers, releases:
`s_waitcnt_vscnt null, 0x0`) wait on them. A D16 LDS read (isa.D16_MERGE_KEEPS) writes half of
a VGPR that an earlier LDS read may still be writing: LDS reads land in order, so it needs no wait.
The pass works on virtual or allocated registers (after allocation it also catches a register
reused while a dead load result is still in flight). `insert_nops` adds the wait states of the
hazards the hardware does not interlock (HAZARDS).
"""
from __future__ import annotations

from typing import Optional

from .isa import D16_MERGE_KEEPS, MFMA_SHAPES, WAIT_COUNT_LIMITS, WAVE64_TARGETS, counter, info
from .mir import Imm, MInst, Reg, Sub

Unit = tuple


def units(o, assignment: Optional[dict[Reg, int]]) -> list[Unit]:
    """The 32-bit register cells operand `o` covers (physical where allocated)."""
    if not isinstance(o, Sub):
        return []
    if assignment is None:
        return [(o.reg.id, o.start + k) for k in range(o.count)]
    first = assignment[o.reg] + o.start
    return [(o.bank, first + k) for k in range(o.count)]


def insert_waits(insts: list[MInst], assignment: Optional[dict[Reg, int]] = None,
                 target: str = "gfx942") -> list[MInst]:
    """`insts` with the s_waitcnt each first touch of a pending load's result needs on `target`."""
    limits = WAIT_COUNT_LIMITS[target]
    out: list[MInst] = []
    vm: list[set[Unit]] = []      # registers each outstanding vector memory op writes, oldest first
    lgkm: list[set[Unit]] = []    # the same for LDS ops and scalar loads
    scalar_loads = 0              # of those, s_loads (out of order: with one in flight, wait for all)
    for inst in insts:
        if inst.opcode == "s_waitcnt":  # one the selection placed (a barrier's): its counts hold
            if "vmcnt" in inst.mods:
                del vm[:max(0, len(vm) - inst.mods["vmcnt"])]
            if inst.mods.get("lgkmcnt") == 0:
                lgkm.clear()
                scalar_loads = 0
            out.append(inst)
            continue
        if inst.opcode == "label" or inst.opcode.startswith(("s_branch", "s_cbranch")):
            # control flow joins here: drain, so that every path reaches the label with nothing pending
            drain = {name: 0 for name, queue in (("vmcnt", vm), ("lgkmcnt", lgkm)) if queue}
            if drain:
                out.append(MInst("s_waitcnt", [], [], drain, "nothing in flight across a branch"))
            vm.clear()
            lgkm.clear()
            scalar_loads = 0
            out.append(inst)
            continue
        touched = {u for o in inst.defs + inst.uses for u in units(o, assignment)}
        counts: dict[str, int] = {}
        needed = [k for k, written in enumerate(vm) if written & touched]
        if needed:
            counts["vmcnt"] = min(len(vm) - 1 - needed[-1], limits["vmcnt"])
            del vm[:needed[-1] + 1]
        if inst.opcode in D16_MERGE_KEEPS:   # its VGPR may await earlier LDS reads: they land first
            touched = {u for o in inst.uses for u in units(o, assignment)}
        needed = [k for k, written in enumerate(lgkm) if written & touched]
        if needed and scalar_loads:  # out of order: only lgkmcnt(0) surely covers the needed one
            counts["lgkmcnt"] = 0
            lgkm.clear()
            scalar_loads = 0
        elif needed:
            counts["lgkmcnt"] = min(len(lgkm) - 1 - needed[-1], limits["lgkmcnt"])
            del lgkm[:needed[-1] + 1]
        if counts:
            out.append(MInst("s_waitcnt", [], [], counts, "results of earlier loads"))
        out.append(inst)
        counted_in = counter(inst.opcode, target)
        written = {u for o in inst.defs for u in units(o, assignment)}
        if counted_in == "vmcnt":
            vm.append(written)
        elif counted_in == "lgkmcnt":
            lgkm.append(written)
            scalar_loads += info(inst.opcode).family == "SMEM"
    return out


def _written(inst: MInst, assignment) -> set[Unit]:
    return {u for o in inst.defs for u in units(o, assignment)}


def _read(inst: MInst, assignment) -> set[Unit]:
    return {u for o in inst.uses for u in units(o, assignment)}


def _trans_use(first: MInst, then: MInst, assignment) -> bool:
    return (info(first.opcode).latency == "trans" and info(then.opcode).is_valu
            and bool(_written(first, assignment) & _read(then, assignment)))


def _wide_store_data(first: MInst, then: MInst, assignment) -> bool:
    """A global or buffer store of over 64 bits, then a VALU write of its data (the hazard holds
    for every VMEM store: CDNA3 ISA 4.5, "VMEM store with more than 8 bytes of data"; an atomic
    stores too: cmpswap_x2's 16 bytes of new and compare value)."""
    if (not first.opcode.startswith(("global_store", "buffer_store", "global_atomic", "buffer_atomic"))
            or not info(then.opcode).is_valu):
        return False
    data = first.uses[0 if first.opcode.startswith("buffer_") else 1]
    return data.count > 2 and bool(set(units(data, assignment)) & _written(then, assignment))


def _valu_sgpr_read(first: MInst, then: MInst, assignment) -> bool:
    """A VALU op (v_cmp, v_readfirstlane) writes an SGPR that a VALU op reads as a source (vcc
    as a carry is exempt: Special operands are not register cells here)."""
    sgprs = {u for o in first.defs if isinstance(o, Sub) and o.bank == "s" for u in units(o, assignment)}
    return info(first.opcode).is_valu and info(then.opcode).is_valu and bool(sgprs & _read(then, assignment))


def _valu_then_readfirstlane(first: MInst, then: MInst, assignment) -> bool:
    return (then.opcode in ("v_readfirstlane_b32", "v_readlane_b32") and info(first.opcode).is_valu
            and bool(_written(first, assignment) & _read(then, assignment)))


def _valu_then_mfma(first: MInst, then: MInst, assignment) -> bool:
    """A VALU op (not itself an MFMA: those are _mfma_result_touched) writes a VGPR that an MFMA
    reads (rocRoller's VALUWrite observer: 2 wait states on gfx908, gfx90a and gfx94x)."""
    return (then.opcode in MFMA_SHAPES and first.opcode not in MFMA_SHAPES and info(first.opcode).is_valu
            and bool(_written(first, assignment) & _read(then, assignment)))


def _vgpr_write_then_dpp(first: MInst, then: MInst, assignment) -> bool:
    """A DPP instruction reads a VGPR that `first` wrote (CDNA3 ISA 4.5: "VALU writes VGPR, then
    VALU DPP reads that VGPR", 2 wait states, which the hardware does not check). Any writer
    counts, as in LLVM's GCNHazardRecognizer::checkDPPHazards, not only a VALU: a load's result
    lands behind its s_waitcnt, which is one wait state. A merging move's kept register is not
    read (the lanes it does not write are left alone), so the second of two moves into one
    register does not wait for the first. A label counts as a write: the code that jumps to it
    is not the code before it."""
    if not info(then.opcode).is_dpp:
        return False
    if first.opcode == "label":   # a join: the other way in (a loop's back edge) may have just written it
        return True
    kept = {source for _, source in info(then.opcode).ties}   # the lanes a merging move keeps: not read
    read = {u for k, o in enumerate(then.uses) if k not in kept for u in units(o, assignment)}
    return bool(_written(first, assignment) & read)


def _mfma_result_touched(passes: int):
    """An MFMA of `passes` passes wrote D, and `then` reads or writes any of it, or control flow
    joins or leaves (a label or branch: the next instruction is not known here). The one
    exception is the accumulation chain: the next MFMA reading exactly that D as its C and
    writing it again (CDNA3 ISA 7.6, "back-to-back dependent MFMAs")."""
    def applies(first: MInst, then: MInst, assignment) -> bool:
        shape = MFMA_SHAPES.get(first.opcode)
        if shape is None or shape.passes != passes:
            return False
        if then.opcode == "label" or then.opcode.startswith(("s_branch", "s_cbranch", "s_endpgm")):
            return True
        result = units(first.defs[0], assignment)
        if then.opcode in MFMA_SHAPES and units(then.uses[2], assignment) == result == units(then.defs[0], assignment):
            return bool(set(result) & (set(units(then.uses[0], assignment)) | set(units(then.uses[1], assignment))))
        return bool(set(result) & (_read(then, assignment) | _written(then, assignment)))
    return applies


# (what, wait states, whether `then` after `first` needs them): the hazards of gfx940 that the
# hardware does not check (CDNA3 ISA 4.5 "Manually Inserted Wait States"; LLVM's
# GCNHazardRecognizer and rocRoller's wait-state observers list the same). They are GFX9's:
# RDNA3 interlocks these, and its own hazards are tile.codegen.amdgcn.rdna3's.
HAZARDS = (
    ("a transcendental's result is read next", 1, _trans_use),
    ("a store's data (over 64 bits) is overwritten", 2, _wide_store_data),
    ("a VALU-written SGPR is read by a VALU", 2, _valu_sgpr_read),
    ("a VALU result is read by v_readfirstlane or v_readlane", 1, _valu_then_readfirstlane),
    ("a VALU result is read by an MFMA", 2, _valu_then_mfma),
    ("a VGPR written is read by DPP", 2, _vgpr_write_then_dpp),
) + tuple((f"the result of a {passes}-pass MFMA is touched", passes + 3, _mfma_result_touched(passes))
          for passes in sorted({shape.passes for shape in MFMA_SHAPES.values()}))
LONGEST_WAIT = max(wait_states for _, wait_states, _ in HAZARDS)


def insert_nops(insts: list[MInst], assignment: Optional[dict[Reg, int]] = None,
                target: str = "gfx942") -> list[MInst]:
    """`insts` with the s_nop each hazard of HAZARDS needs on a GFX9 `target` (the wait states
    between two instructions count the instructions between them, s_nop N as N + 1; s_nop
    waits at most 8, so a longer need takes several). Other targets' code is returned as is."""
    if target not in WAVE64_TARGETS:
        return insts
    out: list[MInst] = []
    for inst in insts:
        need, why, waited = 0, "", 0
        for earlier in reversed(out):
            if waited >= LONGEST_WAIT:
                break
            for what, wait_states, applies in HAZARDS:
                if wait_states - waited > need and applies(earlier, inst, assignment):
                    need, why = wait_states - waited, what
            waited += earlier.uses[0].value + 1 if earlier.opcode == "s_nop" else earlier.opcode != "label"
        while need > 0:
            out.append(MInst("s_nop", [], [Imm.int(min(need, 8) - 1)], comment=why))
            need -= 8
        out.append(inst)
    return out
