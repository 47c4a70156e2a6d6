"""Checks that an op tree is well formed: known ops, per-op type rules, dominance, terminators.

Dominance in structured SSA is lexical: a value may be used after its definition in the same
block, or anywhere inside regions nested below that point. Passes run the verifier after
each pass in tests (see tile.opt.PassManager).
"""
from __future__ import annotations

from .core import Block, Operation, Value
from .ops import OP_DEFS, VerificationError


def verify(op: Operation) -> None:
    """Raise VerificationError at the first problem found in `op` and everything it contains."""
    _verify_op(op, [set()])


def _verify_op(op: Operation, visible: list[set[int]]) -> None:
    d = OP_DEFS.get(op.name)
    if d is None:
        raise VerificationError(op, "unknown operation")
    for i, v in enumerate(op.operands):
        if not any(id(v) in scope for scope in visible):
            raise VerificationError(op, f"operand {i} ({v.type}) does not dominate this use")
        if (op, i) not in v.uses:
            raise VerificationError(op, f"operand {i} is missing from its value's use list")
    if d.num_regions and len(op.regions) != d.num_regions:
        raise VerificationError(op, f"expects {d.num_regions} regions, got {len(op.regions)}")
    for region in op.regions:
        if region.parent is not op:
            raise VerificationError(op, "region's parent link is wrong")
        for block in region.blocks:
            _verify_block(block, visible)
    if d.verify is not None:
        d.verify(op)


def _verify_block(block: Block, visible: list[set[int]]) -> None:
    scope: set[int] = {id(a) for a in block.args}
    visible.append(scope)
    for index, op in enumerate(block.ops):
        if op.parent is not block:
            raise VerificationError(op, "op's parent link is wrong")
        d = OP_DEFS.get(op.name)
        if d is not None and d.terminator and index != len(block.ops) - 1:
            raise VerificationError(op, "terminator in the middle of a block")
        _verify_op(op, visible)
        scope.update(id(r) for r in op.results)
    visible.pop()


def values_defined_in(op: Operation) -> set[Value]:
    """Every value defined inside `op`'s regions (block arguments and results)."""
    out: set[Value] = set()
    for inner in op.walk():
        for region in inner.regions:
            for block in region.blocks:
                out.update(block.args)
        if inner is not op:
            out.update(inner.results)
    return out
