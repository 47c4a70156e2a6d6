"""Liveness and linear-scan register allocation of SGPRs and VGPRs.

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

Running out of VGPRs is a compile-time TargetResourceError (OutOfResources from the compiler)
naming the bank. Running out of SGPRs spills (`allocate_spilling`): the SGPR value live at the
failing position with the longest range goes to lanes of a VGPR (one dword per lane of the wave), written after each of its
definitions with v_writelane_b32 and read back into a fresh, short-lived SGPR before each use
with v_readlane_b32 (both ignore EXEC), and allocation starts over:

    s_add_u32 %s7.0, %s2.0, 4        ->   s_add_u32 %s9.0, %s2.0, 4
                                           v_writelane_b32 %v8.0, %s9.0, 0
    ... (%s7 live across many)             ...
    v_add_u32 %v3.0, %s7.0, %v1.0    ->   v_readlane_b32 %s10.0, %v8.0, 0
                                           v_add_u32 %v3.0, %s10.0, %v1.0
"""
from __future__ import annotations

from typing import Callable, Optional

from ..target import TargetResourceError
from .isa import SGPR_LIMIT, VGPR_LIMIT, WAVE_SIZE
from .mir import Imm, MInst, Reg, Sub

BANK_NAMES = {"s": "SGPRs", "v": "VGPRs"}


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
    if reg.bank == "v":
        return 2 if reg.size >= 2 else 1
    return 4 if reg.size >= 4 else reg.size


class _OutOf(Exception):
    """Allocation failed: no room in `bank` for `reg`, whose range starts at `at`."""

    def __init__(self, bank: str, at: int, reg: Reg):
        super().__init__(bank, at)
        self.bank, self.at, self.reg = bank, at, reg


def _assign(insts: list[MInst], limits: dict[str, int]) -> dict[Reg, int]:
    intervals = live_intervals(insts)
    order = sorted(intervals, key=lambda r: (intervals[r][0], r.fixed is None, -r.size, r.id))
    busy: dict[str, dict[int, Reg]] = {"s": {}, "v": {}}   # physical index -> occupant
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
            step = alignment(reg)
            place = next((p for p in range(0, limits[reg.bank] - reg.size + 1, step)
                          if all(p + k not in taken for k in range(reg.size))), None)
            if place is None:
                raise _OutOf(reg.bank, start, reg)
        for k in range(reg.size):
            taken[place + k] = reg
        assignment[reg] = place
    return assignment


def _out_of_resources(insts: list[MInst], failure: _OutOf, limit: int, target: str, kernel: str) -> TargetResourceError:
    hint = ("tile does not spill VGPRs: use a smaller BLOCK or fewer values per thread" if failure.bank == "v"
            else "even with every SGPR value spilled to VGPR lanes")
    return TargetResourceError(pressure(live_intervals(insts), failure.bank, failure.at), limit,
                               BANK_NAMES[failure.bank], kernel=kernel, target=target, hint=hint)


def allocate(insts: list[MInst], target: str, kernel: str = "",
             limits: Optional[dict[str, int]] = None) -> dict[Reg, int]:
    """A physical first register for every virtual register of `insts` (no spilling)."""
    limits = limits or {"s": SGPR_LIMIT[target], "v": VGPR_LIMIT[target]}
    try:
        return _assign(insts, limits)
    except _OutOf as failure:
        raise _out_of_resources(insts, failure, limits[failure.bank], target, kernel) from None


def allocate_spilling(insts: list[MInst], new_reg: Callable[[str, int], Reg], target: str, kernel: str = "",
                      limits: Optional[dict[str, int]] = None) -> tuple[list[MInst], dict[Reg, int]]:
    """`insts` with SGPR values spilled to VGPR lanes until they fit, and their assignment.
    `new_reg(bank, size)` makes the virtual registers spilling needs (the spill VGPRs and the
    SGPRs values are read back into)."""
    limits = limits or {"s": SGPR_LIMIT[target], "v": VGPR_LIMIT[target]}
    reloads: set[Reg] = set()   # the short-lived SGPRs of earlier spills: spilling them gains nothing
    slots: list[tuple[Reg, int]] = []   # (spill VGPR, next free lane)
    while True:
        try:
            return insts, _assign(insts, limits)
        except _OutOf as failure:
            victim = _spill_candidate(insts, failure, reloads) if failure.bank == "s" else None
            if victim is None:
                raise _out_of_resources(insts, failure, limits[failure.bank], target, kernel) from None
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


def pressure(intervals: dict[Reg, tuple[int, int]], bank: str, at: int) -> int:
    """Registers of `bank` live at position `at` (the demand when allocation failed there)."""
    return sum(r.size for r, (s, e) in intervals.items() if r.bank == bank and s <= at <= e)


def registers_used(assignment: dict[Reg, int], bank: str) -> int:
    """One past the highest register of `bank` in use (the descriptor's next_free_*gpr)."""
    return max((place + reg.size for reg, place in assignment.items() if reg.bank == bank), default=0)
