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

Running out is a compile-time TargetResourceError (OutOfResources from the compiler) naming the
bank: tile does not spill.
"""
from __future__ import annotations

from typing import Optional

from ..target import TargetResourceError
from .isa import SGPR_LIMIT, VGPR_LIMIT
from .mir import MInst, Reg, Sub

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


def allocate(insts: list[MInst], target: str, kernel: str = "",
             limits: Optional[dict[str, int]] = None) -> dict[Reg, int]:
    """A physical first register for every virtual register of `insts`."""
    limits = limits or {"s": SGPR_LIMIT[target], "v": VGPR_LIMIT[target]}
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
                raise TargetResourceError(pressure(intervals, reg.bank, start), limits[reg.bank], BANK_NAMES[reg.bank],
                                     kernel=kernel, target=target,
                                     hint="tile does not spill registers yet: use a smaller BLOCK or fewer values per thread")
        for k in range(reg.size):
            taken[place + k] = reg
        assignment[reg] = place
    return assignment


def pressure(intervals: dict[Reg, tuple[int, int]], bank: str, at: int) -> int:
    """Registers of `bank` live at position `at` (the demand when allocation failed there)."""
    return sum(r.size for r, (s, e) in intervals.items() if r.bank == bank and s <= at <= e)


def registers_used(assignment: dict[Reg, int], bank: str) -> int:
    """One past the highest register of `bank` in use (the descriptor's next_free_*gpr)."""
    return max((place + reg.size for reg, place in assignment.items() if reg.bank == bank), default=0)
