"""Liveness and linear-scan register allocation of SGPRs, VGPRs and AGPRs.

The selected code is straight-line but for loops (a label and one backward branch), so a
virtual register's live range is one interval: from its first write to its last read, in
instruction positions, stretched to the loop's end when the value is live into a loop. Intervals are
visited by start; each takes the lowest free physical range of its bank, aligned as the ISA
requires (64-bit VGPR tuples on even registers on gfx90a and later, SGPR pairs on even ones,
SGPR quads on multiples of four). A range is free again only after its last reader, so an
instruction never writes a register it still reads (loads may then not clobber their own
address). Registers the hardware fills at entry (`Reg.fixed`: kernarg pointer, workgroup and
work-item ids) are live from the start at their fixed place.

    %v5 [3, 9]   %v6 [4, 6]   %v7 [7, 9]     ->   %v5: v1   %v6: v2   %v7: v2

Running out of SGPRs spills (`allocate_spilling`): the SGPR value live at the failing position
with the longest range goes to lanes of a VGPR (one dword per lane of the wave), written after
each of its definitions with v_writelane_b32 and read back into a fresh, short-lived SGPR before
each use with v_readlane_b32 (both ignore EXEC), and allocation starts over:

    s_add_u32 %s7.0, %s2.0, 4        ->   s_add_u32 %s9.0, %s2.0, 4
                                           v_writelane_b32 %v8.0, %s9.0, 0
    ... (%s7 live across many)             ...
    v_add_u32 %v3.0, %s7.0, %v1.0    ->   v_readlane_b32 %s10.0, %v8.0, 0
                                           v_add_u32 %v3.0, %s10.0, %v1.0

Running out of VGPRs moves VGPR values to AGPRs, the other half of the unified register file
(gfx90a, gfx942): the values live where allocation failed that cost fewest extra instructions
per position of their range. An MFMA accumulating in place takes an AGPR C and D as they are,
a copy into or out of the value becomes v_accvgpr_write_b32 / v_accvgpr_read_b32, and any other
reader or writer goes through a fresh, short-lived VGPR (read before, written back after):

    v_mov_b32 %v9.0, %v4.0           ->   v_accvgpr_write_b32 %a30.0, %v4.0
    v_mfma_f32_32x32x8_f16 %v9.0:15, %v1.0:1, %v2.0:1, %v9.0:15
                                     ->   v_mfma_f32_32x32x8_f16 %a30.0:15, %v1.0:1, %v2.0:1, %a30.0:15
    v_cvt_f16_f32 %v12.0, %v9.3      ->   v_accvgpr_read_b32 %v31.0, %a30.3
                                           v_cvt_f16_f32 %v12.0, %v31.0

An operand an instruction reads and writes (a returning buffer atomic's data and old value:
isa.InstrInfo.ties) is one virtual register in both places: its range runs from the data's
write through the old value's last read, one physical register throughout. Moved to an AGPR, it
goes through one fresh VGPR, read before and written back after. The selector hands such an
instruction a copy of its data (the value may be read again); where nothing reads or writes the
copied register after the instruction, the copy is dropped and the instruction works on that
register itself (coalesce_tied_copies):

    v_mov_b32 %v9.0, %v4.0                               buffer_atomic_add %v4.0, %v2.0, ... sc0
    buffer_atomic_add %v9.0, %v2.0, ... sc0      ->      v_add_u32 %v11.0, %v4.0, 1
    v_add_u32 %v11.0, %v9.0, 1                           (%v4 not read after the atomic)

Only when the AGPRs are full too is the kernel a compile-time TargetResourceError
(OutOfResources from the compiler) naming the registers: tile does not spill to scratch memory.
Its required count is what the allocation needs: the most registers of the bank live at any
one position of the kernel (300 values live at once need 300, not the 257th that failed first),
or, where more, one past the last register the failing value would take, placed where it first
fits in an unlimited bank: alignment and tuples can leave the free registers scattered (255 live
of 256 VGPRs, no free aligned pair: 258 needed, and the message says both).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..target import TargetResourceError
from .isa import AGPR_LIMIT, MFMA_SHAPES, SGPR_LIMIT, VGPR_LIMIT, WAVE_SIZE, info
from .mir import Imm, MInst, Reg, Sub

BANK_NAMES = {"s": "SGPRs", "v": "VGPRs", "a": "AGPRs"}


def loops(insts: list[MInst]) -> list[tuple[int, int]]:
    """(label position, backward branch position) of each loop."""
    labels = {i.uses[0]: k for k, i in enumerate(insts) if i.opcode == "label"}
    return [(labels[i.uses[0]], k) for k, i in enumerate(insts)
            if i.opcode.startswith(("s_branch", "s_cbranch")) and labels.get(i.uses[0], k) < k]


def live_intervals(insts: list[MInst]) -> dict[Reg, tuple[int, int]]:
    """The [first write, last read] positions of every register the instructions touch;
    registers filled by the hardware start at -1 (before the first instruction). A register
    live into a loop (written before its label, read inside) stays live to its backward branch:
    the next iteration reads it again."""
    intervals: dict[Reg, tuple[int, int]] = {}
    for i, inst in enumerate(insts):
        for o in inst.defs + inst.uses:
            if isinstance(o, Sub):
                start, end = intervals.get(o.reg, (-1 if o.reg.fixed is not None else i, i))
                intervals[o.reg] = (min(start, i), max(end, i))
    changed = True
    while changed:  # nested loops: extending to an inner loop's end may reach into an outer one
        changed = False
        for top, back in loops(insts):
            for reg, (start, end) in intervals.items():
                if start < top <= end < back:
                    intervals[reg] = (start, back)
                    changed = True
    return intervals


def alignment(reg: Reg) -> int:
    if reg.bank in ("v", "a"):
        return 2 if reg.size >= 2 else 1
    return 4 if reg.size >= 4 else reg.size


class _OutOf(Exception):
    """Allocation failed: no room in `bank` for `reg`, whose range starts at `at`; `needed` is one
    past the register it would end at in a bank without limit (its first aligned free run)."""

    def __init__(self, bank: str, at: int, reg: Reg, needed: int):
        super().__init__(bank, at)
        self.bank, self.at, self.reg, self.needed = bank, at, reg, needed


def _first_fit(taken: dict[int, Reg], reg: Reg, end: Optional[int]) -> Optional[int]:
    """The lowest place below `end` (None: no limit) for `reg`: aligned, every dword of it free."""
    step, place = alignment(reg), 0
    while end is None or place + reg.size <= end:
        if all(place + k not in taken for k in range(reg.size)):
            return place
        place += step
    return None


def _assign(insts: list[MInst], limits: dict[str, int]) -> dict[Reg, int]:
    intervals = live_intervals(insts)
    order = sorted(intervals, key=lambda r: (intervals[r][0], r.fixed is None, -r.size, r.id))
    busy: dict[str, dict[int, Reg]] = {bank: {} for bank in BANK_NAMES}   # physical index -> occupant
    assignment: dict[Reg, int] = {}
    for reg in order:
        start, _ = intervals[reg]
        for bank in busy.values():
            for index, occupant in list(bank.items()):
                if intervals[occupant][1] < start:
                    del bank[index]
        taken = busy[reg.bank]
        if reg.fixed is not None:
            place = reg.fixed
        else:
            place = _first_fit(taken, reg, limits[reg.bank])
            if place is None:
                raise _OutOf(reg.bank, start, reg, _first_fit(taken, reg, None) + reg.size)
        for k in range(reg.size):
            taken[place + k] = reg
        assignment[reg] = place
    return assignment


def bank_limits(target: str) -> dict[str, int]:
    """Registers of each bank one lane may use on `target` (no AGPRs where it has none)."""
    return {"s": SGPR_LIMIT[target], "v": VGPR_LIMIT[target], "a": AGPR_LIMIT.get(target, 0)}


def _out_of_resources(insts: list[MInst], failure: _OutOf, limits: dict[str, int], target: str,
                      kernel: str) -> TargetResourceError:
    bank = failure.bank
    if bank == "s":
        hint = "even with every SGPR value spilled to VGPR lanes"
    elif bank == "a":
        hint = (f"its VGPRs are full and the values moved out of them fill the AGPRs too ({limits['v'] + limits['a']} "
                "registers per lane in all); tile does not spill to scratch memory: use a smaller BLOCK or fewer "
                "values per thread")
    elif limits["a"]:
        hint = ("none of the values live there can move to AGPRs (each is short-lived or read across lanes); tile "
                "does not spill to scratch memory: use a smaller BLOCK or fewer values per thread")
    else:
        hint = "tile does not spill VGPRs: use a smaller BLOCK or fewer values per thread"
    intervals = live_intervals(insts)
    live = pressure(intervals, bank, failure.at)
    if live <= limits[bank]:
        # what is live fits, but not where it sits: no aligned run of free registers is left
        # for the failing tuple between the values placed before it
        hint = (f"{live} registers are live there, but the {failure.reg.size}-register value that needs room finds "
                f"no aligned run of {failure.reg.size} free registers among them: as allocated, the values need "
                f"{failure.needed}; " + hint)
    return TargetResourceError(max(failure.needed, peak_pressure(intervals, bank)), limits[bank], BANK_NAMES[bank],
                               kernel=kernel, target=target, hint=hint)


def allocate(insts: list[MInst], target: str, kernel: str = "",
             limits: Optional[dict[str, int]] = None) -> dict[Reg, int]:
    """A physical first register for every virtual register of `insts` (no spilling)."""
    limits = limits or bank_limits(target)
    try:
        return _assign(insts, limits)
    except _OutOf as failure:
        raise _out_of_resources(insts, failure, limits, target, kernel) from None


def coalesce_tied_copies(insts: list[MInst]) -> list[MInst]:
    """`insts` where each read-and-written operand (InstrInfo.ties) that is a whole register
    written only by v_mov_b32 copies of another whole VGPR register's dwords (in order, in one
    straight run of code: no label or branch between) takes that register's place, the copies
    dropped, when nothing reads or writes the copied register after the instruction, nor writes
    it between the copies and the instruction (live_intervals: a register live across a loop's
    back edge stays)."""
    while True:
        merge = next((found for position, inst in enumerate(insts) for result, source in info(inst.opcode).ties
                      if (found := _copied_from(insts, position, inst.uses[source])) is not None), None)
        if merge is None:
            return insts
        copies, data, origin = merge
        swap = lambda o: Sub(origin, o.start, o.count) if isinstance(o, Sub) and o.reg is data else o  # noqa: E731
        insts = [MInst(i.opcode, [swap(o) for o in i.defs], [swap(o) for o in i.uses], dict(i.mods), i.comment)
                 for k, i in enumerate(insts) if k not in copies]


def _copied_from(insts: list[MInst], position: int, data) -> Optional[tuple[set[int], Reg, Reg]]:
    """(positions of the copies, the copy's register, the copied register) where the tied operand
    `data` of the instruction at `position` may be merged into the register it was copied from."""
    reg = data.reg
    if data != reg.all() or reg.bank != "v" or reg.fixed is not None:
        return None
    touches: dict[Reg, list[tuple[int, bool]]] = {}   # register -> (position, written) of each operand
    for k, inst in enumerate(insts):
        for written, operands in ((True, inst.defs), (False, inst.uses)):
            for o in operands:
                if isinstance(o, Sub):
                    touches.setdefault(o.reg, []).append((k, written))
    before = [(k, written) for k, written in touches[reg] if k < position]
    copies = {k for k, _ in before}
    sources = [insts[k].uses[0] for k in sorted(copies)]
    if (not copies or not all(written and insts[k].opcode == "v_mov_b32" for k, written in before)
            or not all(isinstance(o, Sub) and o.count == 1 for o in sources)):
        return None
    origin = sources[0].reg
    if ([insts[k].defs[0].start for k in sorted(copies)] != list(range(reg.size))
            or [(o.reg, o.start) for o in sources] != [(origin, k) for k in range(reg.size)]
            or origin is reg or origin.bank != "v" or origin.size != reg.size or origin.fixed is not None):
        return None
    first = min(copies)
    if any(i.opcode == "label" or i.opcode.startswith(("s_branch", "s_cbranch")) for i in insts[first:position]):
        return None
    if any(written and k > first for k, written in touches[origin]):
        return None   # written after the first copy: the copy holds another value
    if live_intervals(insts)[origin][1] >= position:   # touched by the instruction, after it, or around a loop
        return None
    return copies, reg, origin


def allocate_spilling(insts: list[MInst], new_reg: Callable[[str, int], Reg], target: str, kernel: str = "",
                      limits: Optional[dict[str, int]] = None) -> tuple[list[MInst], dict[Reg, int]]:
    """`insts` with tied copies coalesced (coalesce_tied_copies), SGPR values spilled to VGPR
    lanes and VGPR values moved to AGPRs until they fit, and their assignment. `new_reg(bank,
    size)` makes the virtual registers spilling needs (the spill VGPRs, the AGPRs, and the
    registers values are read back into)."""
    limits = limits or bank_limits(target)
    insts = coalesce_tied_copies(insts)
    reloads: set[Reg] = set()   # the short-lived registers of earlier spills: spilling them gains nothing
    slots: list[tuple[Reg, int]] = []   # (spill VGPR, next free lane)
    while True:
        try:
            return insts, _assign(insts, limits)
        except _OutOf as failure:
            if failure.bank == "v" and limits["a"]:
                victims = _agpr_candidates(insts, failure, limits["v"], reloads)
                if not victims:
                    raise _out_of_resources(insts, failure, limits, target, kernel) from None
                insts = _move_to_agprs(insts, {victim: new_reg("a", victim.size) for victim in victims}, new_reg,
                                       reloads)
                continue
            victim = _spill_candidate(insts, failure, reloads) if failure.bank == "s" else None
            if victim is None:
                raise _out_of_resources(insts, failure, limits, target, kernel) from None
            if not slots or slots[-1][1] + victim.size > WAVE_SIZE[target]:
                slots.append((new_reg("v", 1), 0))
            spill_vgpr, first_lane = slots[-1]
            slots[-1] = (spill_vgpr, first_lane + victim.size)
            insts = _spill(insts, victim, spill_vgpr, first_lane, new_reg, reloads)


def _spill_candidate(insts: list[MInst], failure: _OutOf, reloads: set[Reg]) -> Optional[Reg]:
    """The SGPR value live where allocation failed whose range reaches furthest on both sides
    (the longest), not one the hardware fills nor an earlier spill's reload."""
    intervals = live_intervals(insts)
    live = [r for r, (start, end) in intervals.items() if r.bank == "s" and r.fixed is None and r not in reloads
            and start <= failure.at <= end and end - start > 1]
    return max(live, key=lambda r: (intervals[r][1] - intervals[r][0], -r.id), default=None)


def _spill(insts: list[MInst], victim: Reg, spill_vgpr: Reg, first_lane: int,
           new_reg: Callable[[str, int], Reg], reloads: set[Reg]) -> list[MInst]:
    """`insts` with `victim` kept in lanes first_lane.. of `spill_vgpr`: each instruction that
    reads it reads a fresh SGPR loaded just before, each one that writes it writes a fresh SGPR
    stored just after."""
    out: list[MInst] = []
    lanes = lambda sub: range(sub.start, sub.start + sub.count)   # noqa: E731
    for inst in insts:
        read = [o for o in inst.uses if isinstance(o, Sub) and o.reg is victim]
        written = [o for o in inst.defs if isinstance(o, Sub) and o.reg is victim]
        if not read and not written:
            out.append(inst)
            continue
        source, target = new_reg("s", victim.size), new_reg("s", victim.size)
        reloads.update((source, target))
        for k in sorted({k for o in read for k in lanes(o)}):
            out.append(MInst("v_readlane_b32", [source.dword(k)], [spill_vgpr.all(), Imm.int(first_lane + k)],
                             comment=inst.comment))
        swap = lambda o, reg: Sub(reg, o.start, o.count) if isinstance(o, Sub) and o.reg is victim else o  # noqa: E731
        out.append(MInst(inst.opcode, [swap(o, target) for o in inst.defs], [swap(o, source) for o in inst.uses],
                         dict(inst.mods), inst.comment))
        for k in sorted({k for o in written for k in lanes(o)}):
            out.append(MInst("v_writelane_b32", [spill_vgpr.all()], [target.dword(k), Imm.int(first_lane + k)],
                             comment=inst.comment))
    return out


LOOP_WEIGHT = 8   # an extra instruction inside a loop counts as this many (iterations it runs, roughly)
# instructions that read or write lanes other than their own, or whatever EXEC says: a value
# they touch stays in a VGPR (a copy to or from an AGPR moves the EXEC lanes only)
LANE_CROSSING = ("v_readlane_b32", "v_writelane_b32", "ds_bpermute_b32")


def _accumulates_in_place(inst: MInst, reg: Reg) -> bool:
    """An MFMA whose C and D are the same dwords of `reg` (and whose A and B are not in it)."""
    if inst.opcode not in MFMA_SHAPES:
        return False
    d, c = inst.defs[0], inst.uses[2]
    return d == c and d.reg is reg and all(o.reg is not reg for o in inst.uses[:2])


def _moves_whole(inst: MInst, reg: Reg) -> bool:
    """A copy into or out of `reg` that an AGPR move instruction can do in its place (not a
    literal: v_accvgpr_write_b32 takes VGPRs, SGPRs and inline constants)."""
    if inst.opcode != "v_mov_b32":
        return False
    (dst,), (src,) = inst.defs, inst.uses
    if isinstance(src, Imm):
        return dst.reg is reg and src.inline
    return isinstance(src, Sub) and (dst.reg is reg) != (src.reg is reg)


def _agpr_candidates(insts: list[MInst], failure: _OutOf, limit: int, reloads: set[Reg]) -> list[Reg]:
    """The VGPR values to move to AGPRs, in one batch: wherever more than `limit` VGPRs are
    live (and where allocation failed, room for the failing register), values live there,
    fewest extra instructions (weighted by loop: LOOP_WEIGHT) per dword and position of their
    range first. Not movable: values the hardware fills, an earlier move's short-lived VGPRs,
    values touched across lanes. MFMA accumulators cost nothing in their loop."""
    intervals = live_intervals(insts)
    in_loop = [False] * len(insts)
    for top, back in loops(insts):
        in_loop[top:back + 1] = [True] * (back + 1 - top)
    extra: dict[Reg, int] = {}
    crossing: set[Reg] = set()
    for position, inst in enumerate(insts):
        for reg in {o.reg for o in inst.defs + inst.uses if isinstance(o, Sub) and o.bank == "v"}:
            if inst.opcode in LANE_CROSSING:
                crossing.add(reg)
            elif not (_accumulates_in_place(inst, reg) or _moves_whole(inst, reg)):
                extra[reg] = extra.get(reg, 0) + (LOOP_WEIGHT if in_loop[position] else 1)
    movable = sorted((r for r, (start, end) in intervals.items() if r.bank == "v" and r.fixed is None
                      and r not in reloads and r not in crossing and end - start > 1),
                     key=lambda r: ((1 + extra.get(r, 0)) / (r.size * (intervals[r][1] - intervals[r][0])), r.id))
    starts = np.zeros(len(insts) + 2, np.int64)   # at position + 1 (the hardware's registers start at -1)
    for reg, (start, end) in intervals.items():
        if reg.bank == "v":
            starts[start + 1] += reg.size
            starts[end + 2] -= reg.size
    live_vgprs = np.cumsum(starts)
    chosen: list[Reg] = []
    for at in sorted({int(p) - 1 for p in np.flatnonzero(live_vgprs > limit)} | {failure.at}):
        excess = int(live_vgprs[at + 1]) - limit
        if at == failure.at:
            excess = max(excess, failure.reg.size)
        for reg in movable:
            if excess <= 0:
                break
            start, end = intervals[reg]
            if start <= at <= end and reg not in chosen:
                chosen.append(reg)
                excess -= reg.size
                live_vgprs[start + 1:end + 2] -= reg.size
    return chosen


def _move_to_agprs(insts: list[MInst], agprs: dict[Reg, Reg], new_reg: Callable[[str, int], Reg],
                   reloads: set[Reg]) -> list[MInst]:
    """`insts` with each VGPR value of `agprs` kept in its AGPR instead: in-place MFMA
    accumulation on the AGPR, copies as AGPR moves, other instructions through fresh VGPRs."""
    def moved(o) -> bool:
        return isinstance(o, Sub) and o.reg in agprs

    def swap(o):
        return Sub(agprs[o.reg], o.start, o.count) if moved(o) else o

    out: list[MInst] = []
    for inst in insts:
        touched = [o for o in inst.defs + inst.uses if moved(o)]
        if not touched:
            out.append(inst)
        elif _accumulates_in_place(inst, touched[0].reg) and not any(moved(o) for o in inst.uses[:2]):
            out.append(MInst(inst.opcode, [swap(o) for o in inst.defs], [swap(o) for o in inst.uses],
                             dict(inst.mods), inst.comment))
        elif _moves_whole(inst, touched[0].reg) and len(touched) == 1:
            (dst,), (src,) = inst.defs, inst.uses
            opcode = "v_accvgpr_write_b32" if moved(dst) else "v_accvgpr_read_b32"
            out.append(MInst(opcode, [swap(dst)], [swap(src)], comment=inst.comment))
        else:
            staged: dict[Sub, Sub] = {}   # a view of a moved value -> the fresh VGPRs standing for it
            for o in inst.uses:
                if moved(o) and o not in staged:
                    staged[o] = new_reg("v", o.count).all()
                    reloads.add(staged[o].reg)
                    for k in range(o.count):
                        out.append(MInst("v_accvgpr_read_b32", [staged[o].dword(k)], [swap(o.dword(k))],
                                         comment=inst.comment))
            results: dict[Sub, Sub] = {}
            tied = {result for result, _ in info(inst.opcode).ties}
            for k, o in enumerate(inst.defs):
                if moved(o) and o not in results:
                    # a read-and-written operand stays one register: the fresh VGPR it was read into
                    results[o] = staged[o] if k in tied else new_reg("v", o.count).all()
                    reloads.add(results[o].reg)
            out.append(MInst(inst.opcode, [results.get(o, o) for o in inst.defs], [staged.get(o, o) for o in inst.uses],
                             dict(inst.mods), inst.comment))
            for o, fresh in results.items():
                for k in range(o.count):
                    out.append(MInst("v_accvgpr_write_b32", [swap(o.dword(k))], [fresh.dword(k)],
                                     comment=inst.comment))
    return out


def pressure(intervals: dict[Reg, tuple[int, int]], bank: str, at: int) -> int:
    """Registers of `bank` live at position `at` (the demand when allocation failed there)."""
    return sum(r.size for r, (s, e) in intervals.items() if r.bank == bank and s <= at <= e)


def peak_pressure(intervals: dict[Reg, tuple[int, int]], bank: str) -> int:
    """The most registers of `bank` live at any one position: what the kernel needs at least, however
    they are placed (a sweep over the intervals' starts and ends)."""
    events = sorted((position, size) for r, (s, e) in intervals.items() if r.bank == bank
                    for position, size in ((s, r.size), (e + 1, -r.size)))
    peak = live = 0
    for _, size in events:   # at one position, the ends (negative) come before the starts
        live += size
        peak = max(peak, live)
    return peak


def registers_used(assignment: dict[Reg, int], bank: str) -> int:
    """One past the highest register of `bank` in use (the descriptor's next_free_*gpr)."""
    return max((place + reg.size for reg, place in assignment.items() if reg.bank == bank), default=0)
