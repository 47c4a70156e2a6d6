"""LDS bank conflicts of an emulated AMD kernel: an opt-in statistic, per DS instruction.

The LDS of a compute unit is split into banks of 4 bytes; a DWORD at byte address `a` lives in
bank (a / 4) mod banks. A wave's access is served in *phases*: each phase takes the lanes whose
bytes fill the banks once (banks x 4 bytes per clock), in lane order, so a ds_read_b32 of a
wave64 on CDNA3 takes 2 phases of 32 lanes, a ds_read_b64 4 phases of 16 and a ds_read_b128 8
phases of 8. Within a phase, lanes reading the same DWORD share it (a broadcast); lanes touching
*different* DWORDs of one bank are served one per clock. The clocks an access needs are the sum
over its phases of the most distinct DWORDs any one bank holds; an access without conflicts
needs one clock per phase.

The bank rules per target (rows, not branches):

- gfx942 / gfx90a: 32 banks of 4 bytes (CDNA3 ISA, "Data Share Operations", 11.1 LDS overview;
  CDNA2 ISA the same section), 128 bytes per clock.
- gfx1100: 32 banks of 4 bytes for a wave (RDNA3 ISA, "Local Data Share" overview: the WGP's
  128 KB are 64 DWORD-wide banks in two sets of 32, each set serving one pair of SIMD32s), 128
  bytes per clock: a wave32 ds_read_b32 is one phase, a ds_read_b128 four.

Phases group consecutive lanes; the hardware's exact lane-to-phase map of the 128-bit
accesses is not published in the ISA text, and consecutive groups are what AMD's
Composable Kernel documentation describes for ds_write_b128.

Opt in around launches:

    with count_lds_bank_conflicts() as lds:
        tile.emulate(kernel, target="gfx942")[grid](a, b, c, ...)
    lds.conflict_cycles          # clocks lost to conflicts, all DS instructions of all waves
    lds.by_instruction()         # one LdsRecord per instruction: its line, source line, counts

Nothing is recorded (and nothing costs) outside the `with` block.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np

BANK_BYTES = 4


@dataclass(frozen=True)
class LdsBankRule:
    """One target's LDS banks: `banks` DWORD banks served once per clock; `section` cites the ISA."""

    banks: int
    section: str

    @property
    def bytes_per_clock(self) -> int:
        return self.banks * BANK_BYTES


LDS_BANK_RULES = {
    "gfx942": LdsBankRule(32, "CDNA3 ISA 11.1 (LDS: 32 banks of DWORDs)"),
    "gfx90a": LdsBankRule(32, "CDNA2 ISA 11.1 (LDS: 32 banks of DWORDs)"),
    "gfx1100": LdsBankRule(32, "RDNA3 ISA, LDS overview (64 DWORD banks per WGP, 32 per SIMD pair)"),
}


def lds_clocks(lanes: np.ndarray, addresses: np.ndarray, size: int, rule: LdsBankRule) -> tuple[int, int]:
    """(clocks, clocks without conflicts) of one wave's LDS access: the active `lanes` (lane
    ids) touch `size` bytes from byte `addresses` each."""
    lanes_per_phase = max(1, rule.bytes_per_clock // max(size, BANK_BYTES))
    first = addresses.astype(np.int64) // BANK_BYTES
    last = (addresses.astype(np.int64) + size - 1) // BANK_BYTES
    clocks = phases = 0
    for phase in np.unique(lanes // lanes_per_phase):
        chosen = lanes // lanes_per_phase == phase
        dwords = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first[chosen], last[chosen])]))
        clocks += int(np.bincount(dwords % rule.banks, minlength=rule.banks).max())
        phases += 1
    return clocks, phases


@dataclass
class LdsRecord:
    """One DS instruction's totals over every wave that ran it."""

    opcode: str
    line: int          # its line in the AMDGCN text
    origin: str        # the tile source line it comes from, if known
    executions: int = 0
    clocks: int = 0
    ideal_clocks: int = 0

    @property
    def conflict_clocks(self) -> int:
        return self.clocks - self.ideal_clocks

    @property
    def ways(self) -> float:
        """Clocks per conflict-free clock: 1.0 without conflicts, 2.0 for a 2-way conflict..."""
        return self.clocks / self.ideal_clocks if self.ideal_clocks else 1.0


@dataclass
class LdsConflictCounter:
    """The LDS clocks of the DS instructions run while it was active, per instruction."""

    records: dict[int, LdsRecord] = field(default_factory=dict)

    def record(self, target: str, ins, lanes: np.ndarray, addresses: np.ndarray, size: int) -> None:
        if not lanes.size:
            return
        clocks, ideal = lds_clocks(lanes, addresses, size, LDS_BANK_RULES[target])
        entry = self.records.setdefault(ins.line, LdsRecord(ins.opcode, ins.line, ins.origin))
        entry.executions += 1
        entry.clocks += clocks
        entry.ideal_clocks += ideal

    def by_instruction(self) -> list[LdsRecord]:
        return [self.records[line] for line in sorted(self.records)]

    def totals(self, prefix: str = "ds_") -> tuple[int, int]:
        """(clocks, conflict clocks) of the instructions whose opcode starts with `prefix`."""
        chosen = [r for r in self.records.values() if r.opcode.startswith(prefix)]
        return sum(r.clocks for r in chosen), sum(r.conflict_clocks for r in chosen)

    @property
    def clocks(self) -> int:
        return self.totals()[0]

    @property
    def conflict_clocks(self) -> int:
        return self.totals()[1]


_active: list[LdsConflictCounter] = []


def active_counter() -> Optional[LdsConflictCounter]:
    """The innermost counter of a `count_lds_bank_conflicts` block, or None outside one."""
    return _active[-1] if _active else None


@contextlib.contextmanager
def count_lds_bank_conflicts() -> Iterator[LdsConflictCounter]:
    """Count the LDS clocks of every AMD kernel emulated inside the block (module docstring)."""
    counter = LdsConflictCounter()
    _active.append(counter)
    try:
        yield counter
    finally:
        _active.remove(counter)


__all__ = ["LDS_BANK_RULES", "LdsBankRule", "LdsRecord", "LdsConflictCounter", "lds_clocks", "count_lds_bank_conflicts",
           "active_counter"]
