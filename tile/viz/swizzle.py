"""Shared-memory banks and bank conflicts of a 2-D buffer, counted from its layout's address math.

Shared memory has 32 banks of 4 bytes; a warp's access is served in phases (8 lanes at a time for
16-byte accesses), and a phase takes one wavefront per distinct word the busiest bank must
deliver (`tile.ir.dot_layouts.shared_wavefronts`). Two accesses are counted, the ones the
compiler's operand staging makes:

  ldmatrix reads   each 8x8 matrix of 16-byte rows (8 rows along order[1], one 16-byte chunk
                   along order[0]) is one phase: 8 lanes give the 8 row addresses;
  vector stores    the coalesced blocked layout with 16 bytes per thread along order[0]
                   (what a 16-byte global load leaves in registers) stores its vectors, 8 lanes
                   per phase.

Unswizzled f16 rows of 128 bytes put all 8 rows of an ldmatrix matrix in the same 4 banks:

    >>> show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (32, 64), 2).conflicts["ldmatrix"]
    224                         32 phases x 7 extra wavefronts (8-way conflicts)
    >>> show_swizzle(shared_for_dot((32, 64), 2, 0, (1, 0)), (32, 64), 2).conflicts["ldmatrix"]
    0                           vec = 8, max_phase = 8: row r's chunk c lands in chunk c ^ (r % 8)
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from ..ir.dot_layouts import BANKS, shared_wavefronts
from ..ir.layouts import SharedLayout, blocked_layout
from .picture import Figure, Picture, palette, text_grid, text_width

CELL = 18
MARGIN = 30
ACCESS_BYTES = 16  # ldmatrix rows and the vector stores move 16 bytes per lane
ACCESSES = ("ldmatrix", "store")
OUTLINES = {"ldmatrix": "#000000", "store": "#d00000"}


@dataclass(frozen=True)
class AccessPhase:
    """One phase of a warp's access: the element each taking part lane starts at, and the
    wavefronts the phase takes (1 = conflict-free)."""

    access: str
    starts: tuple[tuple[int, int], ...]
    wavefronts: int

    @property
    def conflicts(self) -> int:
        """Wavefronts beyond the first: what the bank conflicts cost."""
        return self.wavefronts - 1


class SwizzleFigure(Figure):
    """Banks of every 4-byte word of a `shape` buffer in `layout`, and the phases of its ldmatrix
    reads and 16-byte vector stores with their wavefronts. conflicts[access] sums the extra
    wavefronts over all phases; 0 means conflict-free."""

    def __init__(self, layout: SharedLayout, shape: tuple[int, int], element_bytes: int, num_warps: int = 4):
        self.layout, self.shape, self.element_bytes = layout, shape, element_bytes
        self.inner, self.row = layout.order[0], layout.order[1]
        self.chunk = ACCESS_BYTES // element_bytes
        if shape[self.inner] % self.chunk or shape[self.row] % 8:
            raise ValueError(f"show_swizzle needs rows of whole 16-byte chunks and a multiple of 8 rows; "
                             f"shape {shape} has {shape[self.inner] * element_bytes} bytes per row")
        self.phases = {"ldmatrix": self._ldmatrix_phases(), "store": self._store_phases(num_warps)}
        self.conflicts = {a: sum(p.conflicts for p in ps) for a, ps in self.phases.items()}
        self.picture = self._draw()

    def _coords(self, r: int, c: int) -> tuple[int, int]:
        coords = [0, 0]
        coords[self.row], coords[self.inner] = r, c
        return coords[0], coords[1]

    def byte_address(self, element: tuple[int, int]) -> int:
        return self.layout.offset_of(element, self.shape) * self.element_bytes

    def _phase(self, access: str, starts: list[tuple[int, int]]) -> AccessPhase:
        for s in starts:  # a 16-byte access needs its elements contiguous in the buffer
            first = self.byte_address(s)
            r, c = (s[self.row], s[self.inner])
            if any(self.byte_address(self._coords(r, c + j)) != first + j * self.element_bytes
                   for j in range(self.chunk)):
                raise ValueError(f"{self.layout}: the 16 bytes from element {s} are not contiguous "
                                 f"(vec {self.layout.vec} is under {self.chunk} elements)")
        addresses = [self.byte_address(s) for s in starts]
        return AccessPhase(access, tuple(starts), shared_wavefronts(addresses, ACCESS_BYTES))

    def _ldmatrix_phases(self) -> list[AccessPhase]:
        rows, cols = self.shape[self.row], self.shape[self.inner]
        return [self._phase("ldmatrix", [self._coords(r0 + i, c0) for i in range(8)])
                for r0 in range(0, rows, 8) for c0 in range(0, cols, self.chunk)]

    def _store_phases(self, num_warps: int) -> list[AccessPhase]:
        spt = [1, 1]
        spt[self.inner] = self.chunk
        linear = blocked_layout(self.shape, spt, self.layout.order, num_warps).to_linear(self.shape)
        phases = []
        for warp in range(linear.num_warps):
            for reg in range(0, linear.num_registers, self.chunk):
                starts = [linear.apply(reg, lane, warp) for lane in range(linear.num_lanes)]
                phases += [self._phase("store", starts[p:p + 8]) for p in range(0, len(starts), 8)]
        return phases

    def summary(self, access: str) -> str:
        counts = Counter(p.wavefronts for p in self.phases[access])
        parts = ", ".join(f"{n} phase{'s' if n != 1 else ''} of {w} wavefront{'s' if w != 1 else ''}"
                          for w, n in sorted(counts.items()))
        return f"{access}: {parts}; {self.conflicts[access]} extra wavefronts (bank conflicts)"

    def _word_banks(self) -> list[list[int]]:
        per_word = max(1, 4 // self.element_bytes)
        rows, cols = self.shape[self.row], self.shape[self.inner]
        return [[self.byte_address(self._coords(r, c)) // 4 % BANKS for c in range(0, cols, per_word)]
                for r in range(rows)]

    def _draw(self) -> Picture:
        banks = self._word_banks()
        per_word = max(1, 4 // self.element_bytes)
        rows, words = len(banks), len(banks[0])
        text = "\n".join([f"{self.layout} on {'x'.join(map(str, self.shape))} ({self.element_bytes}-byte elements)",
                          *(self.summary(a) for a in ACCESSES),
                          "bank of each 4-byte word (rows along order[1], words along order[0]):",
                          text_grid([[str(b) for b in row] for row in banks], [str(r) for r in range(rows)],
                                    [str(w) for w in range(words)])])
        footers = [self.summary(a) + f" (first phase outlined in {'black' if a == 'ldmatrix' else 'red'})"
                   for a in ACCESSES]
        width = max([MARGIN + words * CELL + 10, text_width(str(self.layout)) + 8]
                    + [text_width(f) + 8 for f in footers])
        height = MARGIN + rows * CELL + 56
        pic = Picture(width, height, text)
        pic.label(4, 10, str(self.layout), size=9, anchor="start")
        colours = palette(BANKS)
        for r in range(rows):
            for w in range(words):
                pic.box(MARGIN + w * CELL, MARGIN + r * CELL, CELL, CELL, colours[banks[r][w]])
                pic.label(MARGIN + w * CELL + CELL / 2, MARGIN + r * CELL + CELL / 2, str(banks[r][w]), size=7)
        for access in ACCESSES:  # outline the words of each access's first phase
            for s in self.phases[access][0].starts:
                r, c = s[self.row], s[self.inner]
                pic.box(MARGIN + c // per_word * CELL + 2, MARGIN + r * CELL + 2, self.chunk // per_word * CELL - 4,
                        CELL - 4, "none", OUTLINES[access], 1.5)
        for i, footer in enumerate(footers):
            pic.label(4, MARGIN + rows * CELL + 14 + 16 * i, footer, size=9, anchor="start")
        return pic


def show_swizzle(layout: SharedLayout, shape: Sequence[int], element_bytes: int = 2,
                 num_warps: int = 4) -> SwizzleFigure:
    """Banks and bank conflicts of a 2-D `shape` buffer of `element_bytes`-byte elements in `layout`."""
    if not isinstance(layout, SharedLayout):
        raise TypeError(f"show_swizzle expects a shared layout (tile.ir.layouts.SharedLayout), "
                        f"not {type(layout).__name__} {layout!r}")
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2 or element_bytes not in (1, 2, 4):
        raise ValueError(f"show_swizzle draws 2-D buffers of 1, 2 or 4-byte elements, not shape {shape} "
                         f"of {element_bytes}-byte elements")
    return SwizzleFigure(layout, shape, element_bytes, num_warps)
