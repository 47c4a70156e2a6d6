"""What `tile.dump` returns: a stage's text that prints as plain text and renders in Jupyter.

`str(dump)` is the stage's text exactly (what tests and terminals read). In a notebook,
`_repr_html_` shows the same text with:
- syntax colouring per stage: IR (tile, tile-opt, gpu, simt) colours op names, SSA values,
  types, layouts and attributes; PTX colours directives, instructions, registers and
  predicates;
- for stage="passes", one collapsible section per pass with the diff against the IR before it
  (added lines green, removed lines red; passes that changed nothing say so and stay closed);
- source links: each IR op's location (printed with `locs=True`) and each PTX `// file:line`
  comment links to that line of the kernel's source, listed below the code (hovering a link
  shows the line).

    text:  %2 = arith.mul %0, %1 : i32
    html:  <span op>arith.mul</span> ... <a href="#...-L4" title="offs = ...">kernel.py:4</a>
"""
from __future__ import annotations

import difflib
import html
import itertools
import json
import os
import re
from dataclasses import dataclass
from typing import Optional

_ids = itertools.count()

# Colours of the token classes (a light theme that stays readable on a dark one).
COLOURS = {
    "comment": "#6a737d", "op": "#005cc5", "value": "#b35900", "type": "#22863a", "layout": "#6f42c1",
    "attr": "#d73a49", "number": "#098658", "string": "#032f62", "directive": "#6f42c1",
    "instruction": "#005cc5", "register": "#b35900", "predicate": "#d73a49", "label": "#e36209",
}

# One tokenizer per stage family: (class, pattern) in priority order; text matching none stays plain.
_IR_TOKENS = [
    ("comment", r"//.*"),
    ("string", r'"(?:[^"\\]|\\.)*"'),
    ("layout", r"#\w+(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?"),
    ("label", r"\^bb\w*"),
    ("value", r"%[\w#.]+"),
    ("op", r"\b[a-z_]+\.[a-z_0-9.]+\b"),
    ("attr", r"\b\w+(?= = )"),
    ("type", r"\b(?:tensor|ptr|tuple|memdesc)(?=<)|(?:\b|(?<=\dx))(?:i1|i8|i16|i32|i64|u8|u16|u32|u64|f16|bf16|f32|f64|"
             r"f8e4nv|f8e5|f8e4b15|f8e4b8|f8e5b16)\b"),
    ("number", r"-?\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b"),
]
_PTX_TOKENS = [
    ("comment", r"//.*"),
    ("string", r'"(?:[^"\\]|\\.)*"'),
    ("predicate", r"@!?%\w+"),
    ("label", r"\$?\b\w+\$\w+:|^\s*\$\w+:"),
    ("directive", r"(?<![\w%])\.[a-z_]\w*"),
    ("register", r"%\w+(?:\.[xyz])?"),
    ("instruction", r"(?<=[\s;{])[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?=[\s;])"),
    ("number", r"\b0[fFdD][0-9A-Fa-f]+\b|-?\b\d+\b"),
]
_TOKENIZERS = {family: re.compile("|".join(f"(?P<{cls}>{pattern})" for cls, pattern in tokens), re.MULTILINE)
               for family, tokens in (("ir", _IR_TOKENS), ("ptx", _PTX_TOKENS))}
_IR_LOC = re.compile(r' loc\((".*?"):(\d+):\d+\)')
_PTX_LOC = re.compile(r"^(\s*// )(\S+):(\d+)(  .*)$")


def highlight(line: str, family: str) -> str:
    """`line` as HTML with its tokens coloured ("ir" or "ptx" rules)."""
    out, pos = [], 0
    for m in _TOKENIZERS[family].finditer(line):
        out.append(html.escape(line[pos:m.start()]))
        out.append(f'<span style="color:{COLOURS[m.lastgroup]}">{html.escape(m.group())}</span>')
        pos = m.end()
    out.append(html.escape(line[pos:]))
    return "".join(out)


@dataclass
class KernelSource:
    """The kernel's source lines and where they are, for links from locations."""

    file: str
    first_line: int  # the file's line number of lines[0]
    lines: list[str]

    def text(self, line: int) -> Optional[str]:
        index = line - self.first_line
        return self.lines[index].rstrip("\n") if 0 <= index < len(self.lines) else None


class Dump:
    """The text of a compiler stage; prints as text and renders as coloured HTML in Jupyter.

    stage: one of tile.compiler.STAGES (chooses the colouring); located: the same IR printed with
    locations (line for line), for source links; passes: for stage "passes", the IR before the
    first pass and (pass name, IR after it) pairs; source: the kernel's source for the links."""

    def __init__(self, title: str, text: str, stage: str = "tile-opt", located: Optional[str] = None,
                 passes: Optional[tuple[str, list[tuple[str, str]]]] = None, source: Optional[KernelSource] = None):
        self.title = title
        self.text = text
        self.stage = stage
        self.located = located
        self.passes = passes
        self.source = source
        self._anchor = f"tile-dump-{next(_ids)}"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"// {self.title}\n{self.text}"

    def _repr_markdown_(self) -> str:
        return f"**{self.title}**\n\n```\n{self.text}\n```"

    # ------------------------------------------------------------------ HTML
    def _repr_html_(self) -> str:
        family = "ptx" if self.stage == "ptx" else "ir"
        if self.passes is not None:
            body = self._passes_html()
        else:
            lines = (self.located or self.text).splitlines()
            body = _pre("\n".join(self._line_html(line, family) for line in lines))
        return (f'<div class="tile-dump"><div style="font-weight:bold">{html.escape(self.title)}</div>'
                f"{body}{self._source_html()}</div>")

    def _line_html(self, line: str, family: str) -> str:
        if family == "ptx":
            m = _PTX_LOC.match(line)
            if m:
                link = self._link(m.group(2), int(m.group(3)))
                return f'<span style="color:{COLOURS["comment"]}">{html.escape(m.group(1))}{link}' \
                       f"{html.escape(m.group(4))}</span>"
            return highlight(line, family)
        m = _IR_LOC.search(line)
        if m is None:
            return highlight(line, family)
        code = line[:m.start()] + line[m.end():]
        return f"{highlight(code, family)}  {self._link(json.loads(m.group(1)), int(m.group(2)))}"

    def _link(self, file: str, line: int) -> str:
        """`file:line` linked to the source listing when it is a line of the kernel."""
        shown = f"{os.path.basename(file)}:{line}"
        source = self.source
        same_file = source is not None and (file == source.file or  # PTX comments name the file without its path
                                            (file == os.path.basename(file) == os.path.basename(source.file)))
        if not same_file or source.text(line) is None:
            return f'<span style="color:{COLOURS["comment"]}">{html.escape(shown)}</span>'
        title = html.escape(source.text(line).strip(), quote=True)
        return f'<a href="#{self._anchor}-L{line}" title="{title}" style="color:{COLOURS["comment"]}">' \
               f"{html.escape(shown)}</a>"

    def _passes_html(self) -> str:
        before, records = self.passes
        parts = []
        for name, after in records:
            diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))[2:]
            added = sum(1 for d in diff if d.startswith("+"))
            removed = sum(1 for d in diff if d.startswith("-"))
            summary = f"after {html.escape(name)}: " + (f"+{added} −{removed} lines" if diff else "no change")
            content = _pre("\n".join(_diff_line_html(d) for d in diff)) if diff else ""
            parts.append(f"<details><summary>{summary}</summary>{content}</details>")
            before = after
        final = _pre("\n".join(highlight(line, "ir") for line in before.splitlines()))
        parts.append(f"<details><summary>IR after the last pass</summary>{final}</details>")
        return "".join(parts)

    def _source_html(self) -> str:
        if self.source is None:
            return ""
        rows = []
        for i, line in enumerate(self.source.lines):
            number = self.source.first_line + i
            rows.append(f'<span id="{self._anchor}-L{number}"><span style="color:{COLOURS["comment"]}">'
                        f"{number:4d} </span>{html.escape(line.rstrip())}</span>")
        name = html.escape(os.path.basename(self.source.file))
        listing = _pre("\n".join(rows))
        return f'<details open="open"><summary>source: {name}</summary>{listing}</details>'  # links land in it


def _pre(inner: str) -> str:
    return f'<pre style="line-height:1.3;font-size:12px">{inner}</pre>'


def _diff_line_html(line: str) -> str:
    if line.startswith("@@"):
        return f'<span style="color:{COLOURS["comment"]}">{html.escape(line)}</span>'
    background = {"+": "#e6ffec", "-": "#ffebe9"}.get(line[:1])
    code = highlight(line[1:], "ir")
    if background is None:
        return " " + code
    return f'<span style="background:{background}">{html.escape(line[0])}{code}</span>'


__all__ = ["Dump", "KernelSource", "highlight", "COLOURS"]
