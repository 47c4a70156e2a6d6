"""IR text. One generic form for every op at every level, so the parser needs no per-op rules:

    %results = op.name %operands {attr = value, ...} : result types loc("file":line:col) {
    ^label(%arg: type, ...):
      ...nested ops...
    }

For example:

    tt.func {arg_names = ["x_ptr", "n"], sym_name = "scale"} {
    ^entry(%x_ptr: ptr<f32>, %n: i32):
      %pid = tt.program_id {axis = 0} : i32
      %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
      ...
      tt.return
    }

Values print under their source names where the frontend recorded one (made unique with
a suffix), otherwise as numbers. Locations print only when asked for (`locs=True`).
"""
from __future__ import annotations

import json
import math
from typing import Any

from .core import Block, Operation, Value


def format_attr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    return "!" + str(value)  # a type


class Namer:
    """Gives every value a unique, stable name for one printout."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def name(self, v: Value) -> str:
        key = id(v)
        if key not in self.names:
            hint = v.name_hint
            if hint:
                candidate, k = hint, 1
                while candidate in self.taken or candidate.isdigit():
                    candidate, k = f"{hint}_{k}", k + 1
            else:
                while str(self.counter) in self.taken:
                    self.counter += 1
                candidate = str(self.counter)
            self.taken.add(candidate)
            self.names[key] = candidate
        return "%" + self.names[key]


class Printer:
    def __init__(self, locs: bool = False):
        self.namer = Namer()
        self.locs = locs
        self.lines: list[str] = []

    def op(self, op: Operation, indent: int = 0) -> None:
        pad = "  " * indent
        text = ""
        if op.results:
            text += ", ".join(self.namer.name(r) for r in op.results) + " = "
        text += op.name
        if op.num_operands:
            text += " " + ", ".join(self.namer.name(v) for v in op.operands)
        if op.attrs:
            text += " {" + ", ".join(f"{k} = {format_attr(v)}" for k, v in sorted(op.attrs.items())) + "}"
        if op.results:
            text += " : " + ", ".join(str(r.type) for r in op.results)
        if self.locs and op.loc is not None:
            text += f" loc({json.dumps(op.loc.file)}:{op.loc.line}:{op.loc.col})"
        if not op.regions:
            self.lines.append(pad + text)
            return
        for i, region in enumerate(op.regions):
            self.lines.append(pad + (text if i == 0 else "}") + " {")
            for block in region.blocks:
                self.block(block, indent)
        self.lines.append(pad + "}")

    def block(self, block: Block, indent: int) -> None:
        if block.args:
            args = ", ".join(f"{self.namer.name(a)}: {a.type}" for a in block.args)
            self.lines.append("  " * indent + f"^bb({args}):")
        for op in block.ops:
            self.op(op, indent + 1)


def print_op(op: Operation, locs: bool = False) -> str:
    p = Printer(locs)
    p.op(op)
    return "\n".join(p.lines)


Operation.text_form = print_op
