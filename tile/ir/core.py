"""The IR's building blocks, shared by every level (tile, gpu, simt).

An `Operation` has a name ("arith.add"), operands (`Value`s), results, attributes (plain
Python values) and regions. A `Region` holds `Block`s; a `Block` has typed arguments and a
list of operations. Control flow is structured (scf.for / scf.if / scf.while own regions),
so every level is SSA with regions and a value is visible in the block that defines it and
in every region nested below that point.

Values keep their uses, so passes can `replace_all_uses_with` and ask `has_uses` cheaply.
"""
from __future__ import annotations

import sys

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

from .types import Type


@dataclass(frozen=True)
class Location:
    """Where an operation came from in the user's source."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def describe(self) -> str:
        """`file:line:col` for a reader: a notebook cell's file named as IPython names it."""
        return f"{source_name(self.file)}:{self.line}:{self.col}"


def source_name(file: str) -> str:
    """`file` as its reader knows it: "Cell In[3]" for a notebook cell's file (IPython's name,
    when a notebook kernel runs), else the path."""
    ipython = sys.modules.get("IPython")  # only when already imported
    shell = ipython.get_ipython() if ipython is not None else None
    cell = shell.compile.format_code_name(file) if shell is not None and hasattr(shell, "compile") else None
    return file if cell is None else f"{cell[0]} {cell[1]}"


class Value:
    """An SSA value: the result of an operation or the argument of a block."""

    __slots__ = ("type", "uses", "name_hint")

    def __init__(self, type: Type, name_hint: Optional[str] = None):
        self.type = type
        self.uses: list[tuple[Operation, int]] = []
        self.name_hint = name_hint

    @property
    def has_uses(self) -> bool:
        return bool(self.uses)

    @property
    def owner_op(self) -> Optional["Operation"]:
        """The operation that defines this value (None for block arguments)."""
        return None

    def users(self) -> list["Operation"]:
        seen: dict[int, Operation] = {}
        for op, _ in self.uses:
            seen.setdefault(id(op), op)
        return list(seen.values())

    def replace_all_uses_with(self, new: "Value") -> None:
        if new is self:
            return
        for op, index in list(self.uses):
            op.set_operand(index, new)


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: "Operation", index: int):
        super().__init__(type)
        self.op = op
        self.index = index

    @property
    def owner_op(self) -> "Operation":
        return self.op

    def __repr__(self) -> str:
        return f"<result {self.index} of {self.op.name}: {self.type}>"


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: "Block", index: int, name_hint: Optional[str] = None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    def __repr__(self) -> str:
        return f"<block arg {self.index}: {self.type}>"


class Operation:
    """One IR operation. Its meaning and checks live in the op registry (tile.ir.ops)."""

    __slots__ = ("name", "_operands", "results", "attrs", "regions", "parent", "loc")

    def __init__(
        self,
        name: str,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attrs: Optional[dict[str, Any]] = None,
        regions: Sequence["Region"] = (),
        loc: Optional[Location] = None,
    ):
        self.name = name
        self._operands: list[Value] = []
        for v in operands:
            self._add_operand(v)
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.regions: list[Region] = []
        for r in regions:
            self.add_region(r)
        self.parent: Optional[Block] = None
        self.loc = loc

    # operands ------------------------------------------------------------------------
    def _add_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"{self.name}: operand {v!r} is not an IR value")
        v.uses.append((self, len(self._operands)))
        self._operands.append(v)

    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def operand(self, index: int) -> Value:
        return self._operands[index]

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def set_operand(self, index: int, v: Value) -> None:
        old = self._operands[index]
        old.uses.remove((self, index))
        v.uses.append((self, index))
        self._operands[index] = v

    def set_operands(self, values: Sequence[Value]) -> None:
        self.drop_operands()
        for v in values:
            self._add_operand(v)

    def drop_operands(self) -> None:
        for i, v in enumerate(self._operands):
            v.uses.remove((self, i))
        self._operands = []

    # results, regions --------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    def add_region(self, region: Optional["Region"] = None) -> "Region":
        region = region if region is not None else Region()
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def parent_op(self) -> Optional["Operation"]:
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    def walk(self) -> Iterator["Operation"]:
        """This op and every op nested in its regions, in program (pre-)order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk()

    def is_ancestor_of(self, other: "Operation") -> bool:
        op: Optional[Operation] = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    # mutation ------------------------------------------------------------------------
    def detach(self) -> None:
        """Take the op out of its block (keeping its operands and uses)."""
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None

    def erase(self) -> None:
        """Remove the op for good. Its results must be unused."""
        for r in self.results:
            if r.uses:
                raise ValueError(f"cannot erase {self.name}: its result is still used by {r.uses[0][0].name}")
        for region in self.regions:
            for block in region.blocks:
                for op in reversed(list(block.ops)):
                    op.drop_all_references()
        self.drop_operands()
        self.detach()

    def drop_all_references(self) -> None:
        for region in self.regions:
            for block in region.blocks:
                for op in block.ops:
                    op.drop_all_references()
        self.drop_operands()

    def move_before(self, other: "Operation") -> None:
        self.detach()
        other.parent.insert_before(other, self)

    def clone(self, mapping: Optional[dict[Value, Value]] = None) -> "Operation":
        """Deep copy; operands found in `mapping` are remapped, and the mapping is extended."""
        mapping = {} if mapping is None else mapping
        new = Operation(
            self.name,
            [mapping.get(v, v) for v in self._operands],
            [r.type for r in self.results],
            dict(self.attrs),
            loc=self.loc,
        )
        for old_r, new_r in zip(self.results, new.results):
            new_r.name_hint = old_r.name_hint
            mapping[old_r] = new_r
        for region in self.regions:
            new_region = new.add_region()
            for block in region.blocks:
                new_block = new_region.add_block()
                for arg in block.args:
                    mapping[arg] = new_block.add_argument(arg.type, arg.name_hint)
                for op in block.ops:
                    new_block.append(op.clone(mapping))
        return new

    # The text of an op: tile.ir.printer, which is built on this module, sets this to its print_op
    # when it loads (the tile.ir package loads it), so that this module imports nothing of it.
    text_form: Callable[["Operation"], str]

    def __str__(self) -> str:
        return Operation.text_form(self)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


class Block:
    """A list of operations with typed arguments."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: Sequence[Type] = ()):
        self.args: list[BlockArgument] = []
        self.ops: list[Operation] = []
        self.parent: Optional[Region] = None
        for t in arg_types:
            self.add_argument(t)

    def add_argument(self, type: Type, name_hint: Optional[str] = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args), name_hint)
        self.args.append(arg)
        return arg

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor), op)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor) + 1, op)

    @property
    def terminator(self) -> Optional[Operation]:
        return self.ops[-1] if self.ops else None

    @property
    def parent_op(self) -> Optional[Operation]:
        return self.parent.parent if self.parent is not None else None


class Region:
    """The body of a structured op: a list of blocks (one, at every level of tile)."""

    __slots__ = ("blocks", "parent")

    def __init__(self, blocks: Sequence[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Optional[Operation] = None
        for b in blocks:
            self.append(b)

    def append(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    def add_block(self, arg_types: Sequence[Type] = ()) -> Block:
        return self.append(Block(arg_types))

    @property
    def block(self) -> Block:
        """The region's only block."""
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, not one")
        return self.blocks[0]
