"""Creates operations at an insertion point, stamping each with the current source location."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

from .core import Block, Location, Operation, Region, Value
from .types import DType, TensorType, Type


class Builder:
    def __init__(self, block: Optional[Block] = None, loc: Optional[Location] = None):
        self.block = block
        self.index: Optional[int] = None  # None: append at the end of `block`
        self.loc = loc

    # insertion point ------------------------------------------------------------------
    def set_insertion_point_to_end(self, block: Block) -> None:
        self.block, self.index = block, None

    def set_insertion_point_before(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.ops.index(op)

    def set_insertion_point_after(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.ops.index(op) + 1

    @contextmanager
    def at_end_of(self, block: Block) -> Iterator["Builder"]:
        saved = (self.block, self.index)
        self.set_insertion_point_to_end(block)
        try:
            yield self
        finally:
            self.block, self.index = saved

    @contextmanager
    def location(self, loc: Optional[Location]) -> Iterator["Builder"]:
        saved = self.loc
        self.loc = loc if loc is not None else saved
        try:
            yield self
        finally:
            self.loc = saved

    # creation ---------------------------------------------------------------------------
    def insert(self, op: Operation) -> Operation:
        if self.block is None:
            raise ValueError("builder has no insertion point")
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    def create(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
               attrs: Optional[dict[str, Any]] = None, regions: Sequence[Region] = ()) -> Operation:
        return self.insert(Operation(name, operands, result_types, attrs, regions, loc=self.loc))

    def value(self, name: str, operands: Sequence[Value], result_type: Type, **attrs: Any) -> Value:
        """Create a single-result op and return its result."""
        return self.create(name, operands, [result_type], attrs).result

    def constant(self, value: Any, type: Type) -> Value:
        if isinstance(type, TensorType):
            scalar = type.element
        else:
            scalar = type
        if isinstance(scalar, DType):
            value = bool(value) if scalar.is_bool else int(value) if scalar.is_integer else float(value)
        return self.value("arith.constant", [], type, value=value)
