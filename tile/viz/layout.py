"""Pictures of layouts: which thread holds which element, or where an element sits in shared memory.

Everything drawn comes from the layout's own index math (`to_linear(shape).element_coords()`
for register layouts, `SharedLayout.offset_of` for shared ones), so the picture is whatever
the compiler uses:

    >>> print(show_layout(BlockedLayout((1, 2), (4, 8), (1, 1), (1, 0)), (4, 16)))
    #blocked<spt = [1, 2], tpw = [4, 8], wpc = [1, 1], order = [1, 0]> on 4x16: 32 threads ...
           0     1     2     3 ...
      0 T0:0  T0:1  T1:0  T1:1 ...         thread 0 holds (0, 0) and (0, 1) in registers 0 and 1

A cell reads `T<thread>:<register>` (thread = warp * warp size + lane); an element held by several
threads (replication) shows its first holder and `+n` for the others. Colours: one hue per
warp, lighter and darker by lane. A shared layout's cells show the element's offset and are
coloured by the 4-byte bank the offset falls in.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..ir.dot_layouts import BANKS
from ..ir.gpu_ops import element_bytes as gpu_element_bytes
from ..ir.layouts import DistributedLayout, SharedLayout
from ..ir.types import TensorType
from .picture import Figure, Picture, hsl, palette, text_grid, text_width

CELL = 34  # user units per drawn element
MARGIN = 28
MAX_LABELLED_CELLS = 4096  # larger pictures draw colours only


def _grid_shape(shape: Sequence[int]) -> tuple[int, int]:
    if len(shape) == 1:
        return 1, shape[0]
    return shape[0], shape[1]


def _check(layout: Any, shape: Sequence[int]) -> tuple[int, ...]:
    if not isinstance(layout, (DistributedLayout, SharedLayout)):
        raise TypeError(f"show_layout expects a tile layout (blocked, slice, linear, mma, dot_op or shared: "
                        f"tile.ir.layouts / tile.ir.dot_layouts), not {type(layout).__name__} {layout!r}")
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"show_layout draws tensors of rank 1 or 2, not shape {shape}")
    return shape


class LayoutFigure(Figure):
    """Thread/register ownership of a register layout on `shape`.

    owners[i][j]: the (warp, lane, register) triples holding element (i, j) (row 0 for rank 1);
    registers_per_thread: how many registers each thread uses.
    """

    def __init__(self, layout: DistributedLayout, shape: tuple[int, ...]):
        self.layout, self.shape = layout, shape
        linear = layout.to_linear(shape)
        self.warp_size, self.num_warps = linear.num_lanes, linear.num_warps
        self.registers_per_thread = linear.num_registers
        rows, cols = _grid_shape(shape)
        coords = linear.element_coords()
        self.owners: list[list[list[tuple[int, int, int]]]] = [[[] for _ in range(cols)] for _ in range(rows)]
        for (warp, lane, reg), _ in np.ndenumerate(coords[..., 0]):
            c = coords[warp, lane, reg]
            i, j = (0, int(c[0])) if len(shape) == 1 else (int(c[0]), int(c[1]))
            self.owners[i][j].append((warp, lane, reg))
        self.picture = self._draw(rows, cols)

    def thread(self, warp: int, lane: int) -> int:
        return warp * self.warp_size + lane

    def holders(self, i: int, j: int) -> int:
        """How many (thread, register) slots hold element (i, j)."""
        return len(self.owners[i][j])

    def _cell(self, i: int, j: int) -> str:
        warp, lane, reg = self.owners[i][j][0]
        extra = f"+{self.holders(i, j) - 1}" if self.holders(i, j) > 1 else ""
        return f"T{self.thread(warp, lane)}:{reg}{extra}"

    def _draw(self, rows: int, cols: int) -> Picture:
        threads = self.warp_size * self.num_warps
        header = (f"{self.layout} on {'x'.join(map(str, self.shape))}: {threads} threads "
                  f"({self.num_warps} warp{'s' if self.num_warps != 1 else ''} of {self.warp_size}), "
                  f"{self.registers_per_thread} registers each; cell = T<thread>:<register>")
        cells = [[self._cell(i, j) for j in range(cols)] for i in range(rows)]
        text = header + "\n" + text_grid(cells, [str(i) for i in range(rows)], [str(j) for j in range(cols)])
        footer = (f"colour: warp (hue), lane (lightness); {threads} threads, "
                  f"{self.registers_per_thread} registers each")
        width = max(MARGIN + cols * CELL + 8, text_width(str(self.layout)) + 8, text_width(footer) + 8)
        height = MARGIN + rows * CELL + 40
        pic = Picture(width, height, text)
        pic.label(4, 10, str(self.layout), size=9, anchor="start")
        labelled = rows * cols <= MAX_LABELLED_CELLS
        for i in range(rows):
            for j in range(cols):
                warp, lane, reg = self.owners[i][j][0]
                fill = hsl(warp / max(self.num_warps, 1) + 0.08, lightness=0.55 + 0.35 * lane / self.warp_size)
                x, y = MARGIN + j * CELL, MARGIN + i * CELL
                pic.box(x, y, CELL, CELL, fill)
                if labelled:
                    pic.label(x + CELL / 2, y + CELL / 3, f"T{self.thread(warp, lane)}", size=8)
                    pic.label(x + CELL / 2, y + 2 * CELL / 3, f"r{reg}" + (f" +{self.holders(i, j) - 1}"
                                                                            if self.holders(i, j) > 1 else ""), size=7)
        for j in range(cols):
            pic.label(MARGIN + j * CELL + CELL / 2, MARGIN - 6, str(j), size=7)
        for i in range(rows):
            pic.label(MARGIN - 4, MARGIN + i * CELL + CELL / 2, str(i), size=7, anchor="end")
        pic.label(4, height - 14, footer, size=9, anchor="start")
        return pic


class SharedLayoutFigure(Figure):
    """Offsets and banks of a shared layout on `shape`: offsets[i][j] in elements, banks[i][j] the
    4-byte bank of the element's first byte."""

    def __init__(self, layout: SharedLayout, shape: tuple[int, ...], element_bytes: int):
        self.layout, self.shape, self.element_bytes = layout, shape, element_bytes
        rows, cols = _grid_shape(shape)
        full = layout.offsets(shape).reshape(rows, cols)
        self.offsets = full
        self.banks = (full * element_bytes // 4) % BANKS
        cells = [[f"{full[i, j]}/b{self.banks[i, j]}" for j in range(cols)] for i in range(rows)]
        text = (f"{layout} on {'x'.join(map(str, shape))} ({element_bytes}-byte elements); cell = offset/bank\n"
                + text_grid(cells, [str(i) for i in range(rows)], [str(j) for j in range(cols)]))
        colours = palette(BANKS)
        footer = "cell: offset (elements) and bank; colour: bank"
        width = max(MARGIN + cols * CELL + 8, text_width(str(layout)) + 8, text_width(footer) + 8)
        height = MARGIN + rows * CELL + 40
        pic = Picture(width, height, text)
        pic.label(4, 10, str(layout), size=9, anchor="start")
        for i in range(rows):
            for j in range(cols):
                x, y = MARGIN + j * CELL, MARGIN + i * CELL
                pic.box(x, y, CELL, CELL, colours[self.banks[i, j]])
                if rows * cols <= MAX_LABELLED_CELLS:
                    pic.label(x + CELL / 2, y + CELL / 3, str(full[i, j]), size=8)
                    pic.label(x + CELL / 2, y + 2 * CELL / 3, f"b{self.banks[i, j]}", size=7)
        pic.label(4, height - 14, footer, size=9, anchor="start")
        self.picture = pic


def show_layout(layout: Any, shape: Optional[Sequence[int]] = None, element_bytes: Optional[int] = None) -> Figure:
    """Draw `layout` on a tensor of `shape` (rank 1 or 2): thread and register ownership for a
    register layout (blocked, slice, linear, mma, dot_op), offsets and banks for a shared layout
    (elements of `element_bytes` bytes, default 2). A gpu-level tensor type (`value.type` in gpu
    IR) stands for its layout, shape and element size."""
    if isinstance(layout, TensorType):
        if layout.layout is None or shape is not None:
            raise TypeError(f"show_layout of a tensor type needs a gpu-level type (with a layout) and no shape; "
                            f"got {layout}" + (f" and shape {tuple(shape)}" if shape is not None else ""))
        layout, shape, element_bytes = layout.layout, layout.shape, element_bytes or gpu_element_bytes(layout)
    if shape is None:
        raise TypeError(f"show_layout({layout!r}) needs the shape of the tensor to draw")
    shape = _check(layout, shape)
    if isinstance(layout, SharedLayout):
        return SharedLayoutFigure(layout, shape, element_bytes or 2)
    return LayoutFigure(layout, shape)
