"""The error a kernel's source gets when the frontend cannot compile it.

A `CompilationError` names the place in the user's file and shows the line with a caret:

    /home/me/kernels.py:14:12: shape mismatch: [128] and [64] cannot be broadcast together
        y = a + b
            ^
      in a function called from /home/me/kernels.py:20:9:
        out = helper(x, z)
              ^
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Optional

from ..runtime.errors import TritonError


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

    @property
    def file(self) -> Optional[str]:
        return self.where.file if self.where else None

    @property
    def line(self) -> Optional[int]:
        return self.where.line if self.where else None

    @property
    def col(self) -> Optional[int]:
        return self.where.col if self.where else None

    def add_call_site(self, site: SourcePoint) -> None:
        """Record that the failing code was reached through a call of an inlined function at `site`."""
        self.call_sites.append(site)

    def __str__(self) -> str:
        if self.where is None:
            return self.message
        parts = [f"{self.where.file}:{self.where.line}:{self.where.col}: {self.message}"]
        if self.where.text:
            parts.append(self.where.render())
        for site in self.call_sites:
            parts.append(f"  in a function called from {site.file}:{site.line}:{site.col}:")
            if site.text:
                parts.append(site.render("    "))
        return "\n".join(parts)
