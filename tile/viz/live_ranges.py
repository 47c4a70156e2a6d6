"""Registers a kernel keeps through each loop without using them there, read from its PTX.

A value computed before a loop and used only after it holds its register for the whole loop:
registers the loop's own work then lacks, so ptxas spills, or gives the kernel more registers and
the SM fewer programs. Two such cases showed in Triton's tutorial-06 backward (tile's PTX kept
112-193 registers through its first loops, Triton's 46-59): an operand staged again in front of a
second loop, and 64-bit addresses of later loads and stores formed at the top of the function.
This lists, for each loop of a PTX kernel (tile's or Triton's), those registers (a 64-bit one
counts two, predicates apart), by the source line that defined them: tile's `// file:line`
comments, or `.loc` directives with their `.file` table.

    tile.viz.show_live_through(tile.dump(kernel, *args, stage="ptx", **constexprs))
    tile.viz.show_live_through(triton_kernel.asm["ptx"])

A loop is the code from a label to the last branch back to it. A register counts for it when
its first definition comes before the loop, a use comes after it, and no use is inside it. The
PTX is read as text, one instruction a line: the destination is an instruction's first operand
(or the braces that open a vector destination); stores, branches, barriers and the like only read.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .picture import Figure, Picture, hsl, text_width

_REGISTER = re.compile(r"%(?:rd|fd|rs|r|f|p|h|hh)\d+\b")
_LABEL = re.compile(r"^(\$?[A-Za-z_]\w*):")
_TILE_LOC = re.compile(r"^//\s+(\S+?\.py):(\d+)\b")
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', re.M)
# instructions whose operands are all read (no register destination)
_READ_ONLY = ("st.", "bra", "bar.", "barrier", "mbarrier", "cp.async", "fence", "red.", "membar", "ret", "exit",
              "wgmma.fence", "wgmma.commit", "wgmma.wait", "griddepcontrol", "trap", "prefetch", "cp.reduce")


@dataclass
class LoopLiveness:
    """One loop: its label and source line, the registers and predicates live through it
    unused, and those registers by the source line ("file:line") that defined them."""

    label: str
    where: str
    registers: int = 0
    predicates: int = 0
    by_source: Counter = field(default_factory=Counter)


def _weight(register: str) -> tuple[int, int]:
    """(32-bit registers, predicates) of a PTX register name."""
    if register.startswith("%p"):
        return 0, 1
    return (2 if register.startswith(("%rd", "%fd")) else 1), 0


def live_through(ptx: str) -> list[LoopLiveness]:
    """Each loop of the PTX text `ptx`, with the registers live through it unused."""
    files = {number: path.rsplit("/", 1)[-1] for number, path in _FILE.findall(ptx)}  # Triton's come last
    where = "?"
    first_def: dict[str, tuple[int, str]] = {}
    uses: dict[str, list[int]] = {}
    labels: dict[str, tuple[int, str]] = {}
    branches: list[tuple[str, int]] = []
    for number, raw in enumerate(ptx.splitlines()):
        line = raw.strip()
        if m := _TILE_LOC.match(line):
            where = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}"
            continue
        if m := _LOC.match(line):
            where = f"{files.get(m.group(1), '?')}:{m.group(2)}"
            continue
        if m := _LABEL.match(line):
            labels[m.group(1)] = (number, where)
            continue
        code = line.split("//")[0].strip().rstrip(";")
        if not code or code.startswith((".", "{", "}")):
            continue
        if code.startswith("@"):
            guard, _, code = code.partition(" ")
            uses.setdefault(guard.lstrip("@!"), []).append(number)
            code = code.strip()
        opcode, _, operands = code.partition(" ")
        if opcode.startswith("bra"):
            branches.append((operands.strip(), number))
        registers = _REGISTER.findall(operands)
        vector = re.match(r"\s*\{([^}]*)\}", operands)
        if not registers or opcode.startswith(_READ_ONLY):
            defined, read = [], registers
        elif vector:  # {d0, d1, ...}: written (wgmma's accumulators are read too)
            defined = _REGISTER.findall(vector.group(1))
            read = registers if opcode.startswith("wgmma") else registers[len(defined):]
        else:
            defined, read = registers[:1], registers[1:]
        for register in defined:
            first_def.setdefault(register, (number, where))
        for register in read:
            uses.setdefault(register, []).append(number)
    out = []
    for label, (start, loop_where) in labels.items():
        ends = [number for target, number in branches if target == label and number > start]
        if not ends:
            continue
        end = max(ends)
        report = LoopLiveness(label, loop_where)
        for register, (defined_at, source) in first_def.items():
            at = uses.get(register, [])
            if defined_at < start and any(u > end for u in at) and not any(start <= u <= end for u in at):
                registers, predicates = _weight(register)
                report.registers += registers
                report.predicates += predicates
                if registers:
                    report.by_source[source] += registers
        out.append(report)
    return out


class LiveThroughFigure(Figure):
    """A bar per loop: registers live through it unused (of 255 a thread); under each, the source
    lines they come from. `loops` holds the LoopLiveness records."""

    BAR = 300
    LEFT = 150

    def __init__(self, ptx: str, name: str = "kernel", top: int = 4):
        self.loops = live_through(ptx)
        self.name = name
        self.top = top
        self.picture = self._draw()

    def _draw(self) -> Picture:
        title = f"{self.name}: registers live through each loop without a use there (of 255 a thread)"
        lines = [title]
        for report in self.loops:
            lines.append(f"loop at {report.where}: {report.registers} registers, {report.predicates} predicates")
            lines += [f"    {count:4d}  {where}" for where, count in report.by_source.most_common(self.top)]
        width = max([self.LEFT + self.BAR + 60] + [text_width(line, 9) + 20 for line in lines])
        row = 18 + 13 * self.top
        pic = Picture(width, 30 + row * max(len(self.loops), 1), "\n".join(lines))
        pic.label(8, 14, title, size=10, anchor="start")
        for i, report in enumerate(self.loops):
            y = 28 + i * row
            pic.label(self.LEFT - 6, y + 7, f"loop at {report.where}", size=9, anchor="end")
            pic.box(self.LEFT, y, self.BAR, 14, "#eeeeee", stroke="#999999")
            pic.box(self.LEFT, y, self.BAR * min(report.registers, 255) / 255, 14, hsl(0.02, lightness=0.6))
            pic.label(self.LEFT + self.BAR + 6, y + 7, str(report.registers), size=9, anchor="start")
            for j, (where, count) in enumerate(report.by_source.most_common(self.top)):
                pic.label(self.LEFT, y + 24 + 13 * j, f"{count:4d}  {where}", size=8, anchor="start")
        return pic


def show_live_through(ptx: Any, top: int = 4) -> LiveThroughFigure:
    """Draw the registers live through each loop of a PTX kernel without a use there, with the
    `top` source lines of each loop's share: `ptx` is its text (tile's, or Triton's
    `kernel.asm["ptx"]`) or what `tile.dump(..., stage="ptx")` returns."""
    text = getattr(ptx, "text", ptx)
    if not isinstance(text, str):
        raise TypeError(f"show_live_through expects PTX (its text or a tile.dump of stage 'ptx'), "
                        f"not {type(ptx).__name__}")
    entry = re.search(r"\.entry\s+(\w+)", text)
    if entry is None:
        raise ValueError("show_live_through reads PTX (tile.dump(..., stage='ptx')); this text has no .entry")
    return LiveThroughFigure(text, entry.group(1), top)
