"""The error a kernel's source gets when the frontend cannot compile it.

A `CompilationError` names the place in the user's file and shows the line with a caret:

    /home/me/kernels.py:14:12: shape mismatch: [128] and [64] cannot be broadcast together
        y = a + b
            ^
      in a function called from /home/me/kernels.py:20:9:
        out = helper(x, z)
              ^

When the failing code is inside tile's own library (tl.argmax is written in tile/language/
standard.py), the user's call is named first and the library lines follow it, so the first line
points at the user's code:

    /home/me/kernels.py:5:17: static_assert failed: axis 3 is out of range for a tensor of rank 1
        tl.store(y, tl.argmax(a, axis=3))
                    ^
      raised inside tile's library at .../tile/language/standard.py:169:9, called from ...

A kernel defined in a Jupyter cell is named as IPython names the cell in its tracebacks:

    Cell In[3]:4:28: undefined name 'undefined_name'
"""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass
from typing import Optional

from ..ir.core import source_name
from ..runtime.errors import TritonError

_TILE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _in_tile(point: SourcePoint) -> bool:
    return os.path.abspath(point.file).startswith(_TILE_PACKAGE)


def _place(point: SourcePoint) -> str:
    """`file:line:col`, with a notebook cell's file named as IPython names it ("Cell In[3]")."""
    return f"{source_name(point.file)}:{point.line}:{point.col}"


@dataclass(frozen=True)
class SourcePoint:
    """A position in a source file (line and column are 1-based) and the text of its line."""

    file: str
    line: int
    col: int
    text: str = ""

    @staticmethod
    def at(file: str, line: int, col: int, fallback: str = "") -> "SourcePoint":
        text = linecache.getline(file, line).rstrip("\n") or fallback
        return SourcePoint(file, line, col, text)

    def render(self, indent: str = "    ") -> str:
        if not self.text:
            return ""
        caret = " " * max(self.col - 1, 0) + "^"
        return f"{indent}{self.text.rstrip()}\n{indent}{caret}"


class CompilationError(TritonError):
    """A kernel's source cannot be compiled: what is wrong, where, and through which calls."""

    def __init__(self, message: str, where: Optional[SourcePoint] = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.call_sites: list[SourcePoint] = []

    def _user_point(self) -> Optional[SourcePoint]:
        """Where the user's code is involved: `where`, or the innermost call site outside tile's
        library when the failure is inside it."""
        if self.where is None or not _in_tile(self.where):
            return self.where
        return next((site for site in self.call_sites if not _in_tile(site)), self.where)

    @property
    def file(self) -> Optional[str]:
        point = self._user_point()
        return point.file if point else None

    @property
    def line(self) -> Optional[int]:
        point = self._user_point()
        return point.line if point else None

    @property
    def col(self) -> Optional[int]:
        point = self._user_point()
        return point.col if point else None

    def add_call_site(self, site: SourcePoint) -> None:
        """Record that the failing code was reached through a call of an inlined function at `site`."""
        self.call_sites.append(site)

    def __str__(self) -> str:
        if self.where is None:
            return self.message
        user = self._user_point()
        parts = [f"{_place(user)}: {self.message}"]
        if user.text:
            parts.append(user.render())
        if user is not self.where:
            library = [self.where] + self.call_sites[:self.call_sites.index(user)]
            parts.append("  raised inside tile's library at " +
                         ", called from ".join(_place(p) for p in library))
            outer = self.call_sites[self.call_sites.index(user) + 1:]
        else:
            outer = self.call_sites
        for site in outer:
            parts.append(f"  in a function called from {_place(site)}:")
            if site.text:
                parts.append(site.render("    "))
        return "\n".join(parts)
