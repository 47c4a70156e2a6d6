"""Reads the printer's text back into operations (see printer.py for the grammar).

Every value must be defined before it is used, textually, which structured SSA guarantees.
Names of values are kept as name hints, so a parse-print round trip reproduces the text.
Text from `//` to the end of a line is a comment.
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional

from .core import Location, Operation, Region, Value
from .types import Type, parse_type_at


class ParseError(ValueError):
    def __init__(self, text: str, pos: int, message: str):
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        src = text.splitlines()[line - 1] if text.splitlines() else ""
        super().__init__(f"line {line}:{col}: {message}\n  {src}\n  {' ' * (col - 1)}^")


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_VALUE = re.compile(r"%([A-Za-z0-9_.]+)")
_NUMBER = re.compile(r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)")
_SPACE = re.compile(r"(?:\s|//[^\n]*)*")


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.scopes: list[dict[str, Value]] = [{}]

    # lexing -----------------------------------------------------------------------------
    def error(self, message: str) -> ParseError:
        return ParseError(self.text, self.pos, message)

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def peek_on_line(self, s: str) -> bool:
        """Like peek, but without crossing a newline: an op's operands are on its own line."""
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise self.error(f"expected {s!r}")

    def match(self, pattern: re.Pattern) -> Optional[re.Match]:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def type(self) -> Type:
        self.skip()
        try:
            t, self.pos = parse_type_at(self.text, self.pos)
        except ValueError as e:
            raise self.error(str(e)) from None
        return t

    # values -----------------------------------------------------------------------------
    def lookup(self, name: str) -> Value:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.error(f"use of undefined value %{name}")

    def define(self, name: str, v: Value) -> None:
        if name in self.scopes[-1]:
            raise self.error(f"value %{name} defined twice")
        self.scopes[-1][name] = v
        if not name.isdigit():
            v.name_hint = name

    # attributes -------------------------------------------------------------------------
    def attr_value(self) -> Any:
        self.skip()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                items.append(self.attr_value())
                while self.accept(","):
                    items.append(self.attr_value())
                self.expect("]")
            return items
        if self.peek('"'):
            decoder = json.JSONDecoder()
            value, end = decoder.raw_decode(self.text, self.pos)
            self.pos = end
            return value
        for word, value in (("true", True), ("false", False), ("nan", float("nan")), ("inf", float("inf")),
                            ("-inf", float("-inf"))):
            if self.text.startswith(word, self.pos) and not self.text[self.pos + len(word):][:1].isalnum():
                self.pos += len(word)
                return value
        if self.accept("!"):
            return self.type()
        m = self.match(_NUMBER)
        if m is None:
            raise self.error("expected an attribute value")
        s = m.group(0)
        return float(s) if any(c in s for c in ".eE") else int(s)

    def attrs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not self.accept("{"):
            return out
        if self.accept("}"):
            return out
        while True:
            key = self.match(_IDENT)
            if key is None:
                raise self.error("expected an attribute name")
            self.expect("=")
            out[key.group(0)] = self.attr_value()
            if self.accept("}"):
                return out
            self.expect(",")

    # operations -------------------------------------------------------------------------
    def operation(self) -> Operation:
        start = self.pos
        result_names: list[str] = []
        if self.peek("%"):
            while True:
                m = self.match(_VALUE)
                if m is None:
                    raise self.error("expected a result name")
                result_names.append(m.group(1))
                if not self.accept(","):
                    break
            self.expect("=")
        name = self.match(_IDENT)
        if name is None:
            raise self.error("expected an operation name")
        operands: list[Value] = []
        if self.peek_on_line("%"):
            while True:
                m = self.match(_VALUE)
                operands.append(self.lookup(m.group(1)))
                if not self.accept(","):
                    break
        attrs = self.attrs() if self.peek("{") and not self._region_follows() else {}
        result_types: list[Type] = []
        if self.accept(":"):
            result_types.append(self.type())
            while self.accept(","):
                result_types.append(self.type())
        if len(result_types) != len(result_names):
            self.pos = start
            raise self.error(f"{len(result_names)} results named but {len(result_types)} types given")
        loc = self.location()
        op = Operation(name.group(0), operands, result_types, attrs, loc=loc)
        while self.peek("{"):
            op.add_region(self.region())
            if not self.accept("}"):
                raise self.error("expected '}' closing a region")
        for n, r in zip(result_names, op.results):
            self.define(n, r)
        return op

    def _region_follows(self) -> bool:
        """A '{' that opens a region is followed by a newline (attribute dicts stay on one line)."""
        m = re.compile(r"\{[ \t]*(\n|$)").match(self.text, self.pos)
        return m is not None

    def location(self) -> Optional[Location]:
        if not self.accept("loc("):
            return None
        decoder = json.JSONDecoder()
        self.skip()
        file, self.pos = decoder.raw_decode(self.text, self.pos)
        m = re.compile(r":(\d+):(\d+)\)").match(self.text, self.pos)
        if m is None:
            raise self.error("bad location")
        self.pos = m.end()
        return Location(file, int(m.group(1)), int(m.group(2)))

    def region(self) -> Region:
        self.expect("{")
        region = Region()
        block = region.add_block()
        self.scopes.append({})
        if self.accept("^"):
            if self.match(_IDENT) is None:
                raise self.error("expected a block label")
            self.expect("(")
            if not self.accept(")"):
                while True:
                    m = self.match(_VALUE)
                    if m is None:
                        raise self.error("expected a block argument")
                    self.expect(":")
                    self.define(m.group(1), block.add_argument(self.type()))
                    if self.accept(")"):
                        break
                    self.expect(",")
            self.expect(":")
        while not self.peek("}"):
            if self.pos >= len(self.text):
                raise self.error("unexpected end of text inside a region")
            block.append(self.operation())
        self.scopes.pop()
        return region


def parse_op(text: str) -> Operation:
    """Parse one top-level operation (usually a tt.func)."""
    p = Parser(text)
    op = p.operation()
    p.skip()
    if p.pos != len(text):
        raise p.error("trailing text after the operation")
    return op
