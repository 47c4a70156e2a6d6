"""CSE: a pure op equal to one that dominates it is replaced by that earlier op's results.

Before:
    %a = arith.add %x, %y : i32
    %r = scf.for %lb, %ub, %st, %a : i32 {
    ^bb(%i: i32, %acc: i32):
      %b = arith.add %y, %x : i32          // arith.add commutes: same as %a
      %c = arith.mul %b, %acc : i32
      scf.yield %c
    }
    %d = arith.mul %r, %r : i32
    %e = arith.mul %r, %r : i32
After:
    %a = arith.add %x, %y : i32
    %r = scf.for %lb, %ub, %st, %a : i32 {
    ^bb(%i: i32, %acc: i32):
      %c = arith.mul %a, %acc : i32
      scf.yield %c
    }
    %d = arith.mul %r, %r : i32

Two ops are equal when they have the same name, operands (in any order for commutative ops),
attributes (compared by repr, so NaN equals NaN and 0 differs from False) and result types.
Scopes follow dominance: an op seen before a region is reused inside it; an op inside a region
is forgotten when the region ends. Ops with regions, and impure ops (loads, atomics), are
never merged.
"""
from __future__ import annotations

from typing import Hashable, Optional

from ..ir import Block, Operation, is_pure, op_def
from .pass_manager import Pass


def _key(op: Operation) -> Hashable:
    operands = [id(v) for v in op.operands]
    if op_def(op.name).commutative:
        operands.sort()
    attrs = repr(sorted(op.attrs.items()))
    return op.name, tuple(operands), attrs, tuple(str(r.type) for r in op.results)


def _mergeable(op: Operation) -> bool:
    return is_pure(op) and bool(op.results) and not op.regions and not op_def(op.name).terminator


def _lookup(scopes: list[dict[Hashable, Operation]], key: Hashable) -> Optional[Operation]:
    for table in reversed(scopes):
        found = table.get(key)
        if found is not None:
            return found
    return None


def _cse_block(block: Block, scopes: list[dict[Hashable, Operation]]) -> None:
    scopes.append({})
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                _cse_block(inner, scopes)
        if not _mergeable(op):
            continue
        key = _key(op)
        earlier = _lookup(scopes, key)
        if earlier is None:
            scopes[-1][key] = op
            continue
        for old, new in zip(op.results, earlier.results):
            old.replace_all_uses_with(new)
        op.erase()
    scopes.pop()


class CSE(Pass):
    """Common subexpression elimination over pure ops, scoped by region nesting."""

    name = "cse"

    def run(self, func: Operation) -> None:
        for region in func.regions:
            for block in region.blocks:
                _cse_block(block, [])


__all__ = ["CSE"]
