"""A picture: a few coloured boxes, lines and labels, kept as plain data so that one drawing
renders three ways: SVG text (Jupyter shows it through `_repr_svg_`; `save("x.svg")`), a PNG
through matplotlib when it is installed (`save("x.png")`), and the plain text a terminal prints
(`str(picture)`). Nothing here knows about layouts or pipelines; tile.viz.layout, .swizzle and
.timeline compute what to draw from tile's own objects and hand it to a Picture.
"""
from __future__ import annotations

import colorsys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union
from xml.sax.saxutils import escape

FONT = "monospace"


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    fill: str
    stroke: str = "#ffffff"
    stroke_width: float = 0.5


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    size: float = 10.0
    anchor: str = "middle"  # SVG text-anchor: start, middle or end
    color: str = "#000000"


def text_width(text: str, size: float = 9.0) -> float:
    """The width of `text` in the monospace font at `size` (a character is about 0.6 em)."""
    return 0.6 * size * len(text)


def hsl(hue: float, saturation: float = 0.55, lightness: float = 0.72) -> str:
    """An SVG colour from hue, saturation and lightness, each in [0, 1]."""
    r, g, b = colorsys.hls_to_rgb(hue % 1.0, lightness, saturation)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def palette(count: int, lightness: float = 0.72) -> list[str]:
    """`count` colours of evenly spread hues."""
    return [hsl(i / max(count, 1), lightness=lightness) for i in range(count)]


@dataclass
class Picture:
    """A drawing of `width` x `height` user units and its plain-text form."""

    width: float
    height: float
    text: str
    boxes: list[Box] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)

    def box(self, x: float, y: float, width: float, height: float, fill: str, stroke: str = "#ffffff",
            stroke_width: float = 0.5) -> None:
        self.boxes.append(Box(x, y, width, height, fill, stroke, stroke_width))

    def label(self, x: float, y: float, text: str, size: float = 10.0, anchor: str = "middle",
              color: str = "#000000") -> None:
        self.labels.append(Label(x, y, text, size, anchor, color))

    def svg(self) -> str:
        """The picture as a standalone SVG document."""
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:g}" height="{self.height:g}" '
               f'viewBox="0 0 {self.width:g} {self.height:g}" font-family="{FONT}" '
               f'style="max-width: 100%; height: auto">',
               f'<rect x="0" y="0" width="{self.width:g}" height="{self.height:g}" fill="#ffffff"/>']
        for b in self.boxes:
            out.append(f'<rect x="{b.x:g}" y="{b.y:g}" width="{b.width:g}" height="{b.height:g}" '
                       f'fill="{b.fill}" stroke="{b.stroke}" stroke-width="{b.stroke_width:g}"/>')
        for t in self.labels:
            out.append(f'<text x="{t.x:g}" y="{t.y:g}" font-size="{t.size:g}" text-anchor="{t.anchor}" '
                       f'dominant-baseline="central" fill="{t.color}">{escape(t.text)}</text>')
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self) -> str:
        return self.svg()

    def __str__(self) -> str:
        return self.text

    def save(self, path: Union[str, Path]) -> Path:
        """Write the picture to `path`: .svg (always), .txt (the text form) or .png (needs matplotlib)."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".svg":
            path.write_text(self.svg())
        elif suffix == ".txt":
            path.write_text(self.text + "\n")
        elif suffix == ".png":
            self._save_png(path)
        else:
            raise ValueError(f"cannot save a picture as {path.name!r}: use .svg, .png (with matplotlib) or .txt")
        return path

    def _save_png(self, path: Path) -> None:
        try:
            from matplotlib.figure import Figure as MatplotlibFigure
            from matplotlib.patches import Rectangle
        except ImportError as e:
            raise ImportError("saving a picture as PNG needs matplotlib (pip install matplotlib); "
                              "save it as .svg instead") from e
        dpi = 100
        fig = MatplotlibFigure(figsize=(self.width / dpi, self.height / dpi), dpi=dpi)  # no pyplot: no backend
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, self.width)
        ax.set_ylim(self.height, 0)
        ax.axis("off")
        for b in self.boxes:
            ax.add_patch(Rectangle((b.x, b.y), b.width, b.height, facecolor=b.fill, edgecolor=b.stroke,
                                   linewidth=b.stroke_width))
        align = {"start": "left", "middle": "center", "end": "right"}
        for t in self.labels:
            ax.text(t.x, t.y, t.text, fontsize=t.size * 72 / dpi, ha=align[t.anchor], va="center",
                    color=t.color, family=FONT)
        fig.savefig(path, dpi=dpi)


def text_grid(cells: list[list[str]], row_names: list[str], col_names: list[str]) -> str:
    """A table of `cells` with row and column headers, columns padded to one width."""
    width = max([len(c) for row in cells for c in row] + [len(c) for c in col_names] + [1])
    head = max([len(r) for r in row_names] + [1])
    lines = [" " * head + " " + " ".join(c.rjust(width) for c in col_names)]
    for name, row in zip(row_names, cells):
        lines.append(name.rjust(head) + " " + " ".join(c.rjust(width) for c in row))
    return "\n".join(lines)


class Figure:
    """Base of the figures tile.viz computes: the facts drawn (attributes of the subclass) and
    their `picture`, shown by Jupyter as SVG, printed as text, saved with `save`."""

    picture: Picture

    def svg(self) -> str:
        return self.picture.svg()

    def _repr_svg_(self) -> str:
        return self.picture.svg()

    def __str__(self) -> str:
        return self.picture.text

    def __repr__(self) -> str:
        return self.picture.text

    def save(self, path: Union[str, Path]) -> Path:
        return self.picture.save(path)
