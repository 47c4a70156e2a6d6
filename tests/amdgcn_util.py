"""Helpers of the AMDGCN tests: the assembler's presence, and independent checks of emitted text."""
from __future__ import annotations

import re
import shutil

import pytest

from tile.codegen.amdgcn.kernel_object import ToolNotFound, find_tool
from tile.codegen.amdgcn.mir import Reg
from tile.codegen.target import target_facts


def _tools_present() -> bool:
    try:
        find_tool("llvm-mc"), find_tool("ld.lld")
    except ToolNotFound:
        return False
    return True


needs_llvm = pytest.mark.skipif(not _tools_present(),
                                reason="llvm-mc and ld.lld (LLVM 17+) are not installed: apt-get install llvm-19 lld-19")
READELF = next((shutil.which(f"llvm-readelf{s}") for s in ("-20", "-19", "-18", "-17") if shutil.which(f"llvm-readelf{s}")),
               None)

_REG = re.compile(r"\b([sv])(?:(\d+)|\[(\d+):(\d+)\])")


def instructions(text: str) -> list[str]:
    """The instruction lines of a kernel's assembly (comments dropped), in order."""
    body = text.split(":\n", 1)[1].split(".Lfunc_end", 1)[0]
    return [line.split(";")[0].strip() for line in body.splitlines() if line.split(";")[0].strip()]


def registers(operands: str) -> set[tuple[str, int]]:
    cells = set()
    for bank, one, first, last in _REG.findall(operands):
        lo, hi = (int(one), int(one)) if one else (int(first), int(last))
        cells.update((bank, k) for k in range(lo, hi + 1))
    return cells


_RETURN_BITS = (" sc0", " glc")   # a buffer atomic returns its old value with its target's bit


def unwaited_reads(text: str) -> list[str]:
    """Instructions that touch a register a global or buffer load, a returning atomic or an s_load
    may still be writing: a model of the counters written apart from the pass (loads and stores
    count in vmcnt, in order; s_loads in lgkmcnt, which only lgkmcnt(0) is trusted to drain)."""
    vm: list[set] = []
    lgkm: list[set] = []
    bad = []
    for line in instructions(text):
        opcode, _, operands = line.partition(" ")
        if opcode == "s_waitcnt":
            if m := re.search(r"vmcnt\((\d+)\)", operands):
                del vm[:max(0, len(vm) - int(m.group(1)))]
            if "lgkmcnt(0)" in operands:
                lgkm.clear()
            continue
        touched = registers(operands)
        if any(w & touched for w in vm + lgkm):
            bad.append(line)
        if opcode.startswith(("global_", "buffer_load_", "buffer_atomic_")):
            returning = opcode.startswith("global_atomic_") or (opcode.startswith("buffer_atomic_")
                                                                and operands.endswith(_RETURN_BITS))
            vm.append(registers(operands.split(",")[0]) if "load" in opcode or returning else set())
        elif opcode.startswith("s_load"):
            lgkm.append(registers(operands.split(",")[0]))
    return bad


def unmasked_accesses(text: str) -> list[str]:
    """Global accesses outside an EXEC region (s_and_saveexec_b64 ... s_mov_b64 exec, ...)."""
    inside, bad = False, []
    for line in instructions(text):
        if line.startswith("s_and_saveexec_b64"):
            inside = True
        elif line.startswith("s_mov_b64 exec"):
            inside = False
        elif line.startswith("global_") and not inside:
            bad.append(line)
    return bad


def warps_for(target: str, threads: int) -> int:
    """num_warps of a workgroup of `threads` work-items on `target`: a warp is one wave, of 64
    lanes on gfx942 and gfx90a, 32 on gfx1100 (as num_warps counts waves in Triton on AMD)."""
    wave = target_facts(target).warp_size
    assert threads % wave == 0, f"{threads} work-items are not whole waves of {wave}"
    return threads // wave


def named(kernel, args) -> dict:
    """The arguments `args` of tile.jit `kernel` by parameter name, as run_amdgcn takes them
    (a parameter specialized away, such as an integer equal to 1, is then simply unused)."""
    return dict(zip(kernel.arg_names, args))


def assert_placement(insts, assignment, limits: dict[str, int]) -> None:
    """Every register of a bank in `limits` inside its limit; no two registers of one bank live at
    once share a cell (regalloc's contract, for the allocators' property tests)."""
    from tile.codegen.amdgcn.regalloc import live_intervals

    intervals = live_intervals(insts)
    regs = list(intervals)
    for i, a in enumerate(regs):
        if a.bank in limits:
            assert assignment[a] + a.size <= limits[a.bank]
        for b in regs[i + 1:]:
            if a.bank != b.bank:
                continue
            cells_a = set(range(assignment[a], assignment[a] + a.size))
            cells_b = set(range(assignment[b], assignment[b] + b.size))
            (sa, ea), (sb, eb) = intervals[a], intervals[b]
            assert not (cells_a & cells_b and sa <= eb and sb <= ea), (a, b)


class Registers:
    """Fresh virtual registers, numbered."""

    def __init__(self):
        self.made: list[Reg] = []

    def __call__(self, bank: str, size: int = 1) -> Reg:
        self.made.append(Reg(bank, size, len(self.made)))
        return self.made[-1]
