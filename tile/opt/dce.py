"""DCE: remove computations whose results nobody uses and that have no side effects.

Before:
    %unused = arith.mul %x, %x : i32
    %r, %dead = scf.for %lb, %ub, %st, %a, %z : i32, i32 {
    ^bb(%i: i32, %acc: i32, %cnt: i32):
      %acc1 = arith.add %acc, %i : i32
      %cnt1 = arith.add %cnt, %one : i32    // only feeds its own loop-carried value
      scf.yield %acc1, %cnt1
    }
    tt.store %p, %r
After:
    %r = scf.for %lb, %ub, %st, %a : i32 {
    ^bb(%i: i32, %acc: i32):
      %acc1 = arith.add %acc, %i : i32
      scf.yield %acc1
    }
    tt.store %p, %r

Removed: pure ops with unused results; scf.for / scf.if / scf.while with unused results and
no side effects inside; loop-carried values of scf.for whose result is unused and whose
block argument only feeds its own next value; unused results of scf.if.
"""
from __future__ import annotations

from typing import Sequence

from ..ir import Block, Operation, Region, Value, is_pure, op_def
from .pass_manager import Pass


def has_side_effects(op: Operation, ignore_loads: bool = False) -> bool:
    """Whether running `op` can be observed other than through its results.

    Ops with regions and terminators are judged by what they contain; any other op has side
    effects unless the registry marks it pure. With `ignore_loads`, non-volatile loads count as
    free of effects (they only read memory: right for moving a load past them, not for deleting).
    """
    if ignore_loads and op.name == "tt.load" and not op.attrs.get("volatile", False):
        return False
    d = op_def(op.name)
    if op.regions or (d is not None and d.terminator):
        return any(has_side_effects(inner, ignore_loads) for region in op.regions for block in region.blocks
                   for inner in block.ops)
    return not is_pure(op)


def _removable(op: Operation) -> bool:
    d = op_def(op.name)
    if d is None or d.terminator or op.name == "tt.func":
        return False
    return not any(r.has_uses for r in op.results) and not has_side_effects(op)


def replace_op(op: Operation, value: Value) -> None:
    """Point every use of `op`'s one result at `value`, which takes over its name, and erase `op`."""
    value.name_hint = op.result.name_hint
    op.result.replace_all_uses_with(value)
    op.erase()


def rebuild_without_results(op: Operation, keep: Sequence[int], operands: Sequence[Value]) -> Operation:
    """A copy of `op` with only the results at indices `keep` and the given operands.

    The regions are moved (not copied) into the new op, which takes `op`'s place; `op` is erased.
    """
    new = Operation(op.name, operands, [op.results[i].type for i in keep], dict(op.attrs), loc=op.loc)
    for i, r in zip(keep, new.results):
        r.name_hint = op.results[i].name_hint
        op.results[i].replace_all_uses_with(r)
    regions: list[Region] = op.regions
    op.regions = []
    for region in regions:
        new.add_region(region)
    op.parent.insert_before(op, new)
    op.erase()
    return new


def _drop_yield_operand(block: Block, index: int) -> None:
    term = block.terminator
    term.set_operands([v for i, v in enumerate(term.operands) if i != index])


def _top_level_ancestor(op: Operation, block: Block) -> Operation:
    """The op of `block` that is `op` or contains it (`op` must be nested in `block`)."""
    while op.parent is not block:
        op = op.parent_op
    return op


def _iter_arg_slice(loop: Operation, index: int) -> list[Operation] | None:
    """The body ops computed from loop-carried value `index`, if they feed nothing but its next value.

    Returns None when the value is needed: when something computed from its block argument has
    side effects, or reaches another yielded value or any other use.
    """
    body = loop.regions[0].block
    term = body.terminator
    slice_ops: dict[int, Operation] = {}
    stack: list[Value] = [body.args[index + 1]]
    while stack:
        for user, position in stack.pop().uses:
            if user is term:
                if position != index:
                    return None
                continue
            op = _top_level_ancestor(user, body)
            if id(op) in slice_ops:
                continue
            if has_side_effects(op):
                return None
            slice_ops[id(op)] = op
            stack.extend(op.results)
    return sorted(slice_ops.values(), key=body.ops.index)


def _remove_iter_arg(loop: Operation, index: int, slice_ops: list[Operation]) -> Operation:
    body = loop.regions[0].block
    _drop_yield_operand(body, index)
    for op in reversed(slice_ops):
        op.erase()
    body.args.pop(index + 1)
    for i, a in enumerate(body.args):
        a.index = i
    keep = [i for i in range(len(loop.results)) if i != index]
    operands = [v for i, v in enumerate(loop.operands) if i != index + 3]
    return rebuild_without_results(loop, keep, operands)


def _simplify_for(loop: Operation) -> bool:
    changed = False
    index = len(loop.results) - 1
    while index >= 0:
        if not loop.results[index].has_uses:
            slice_ops = _iter_arg_slice(loop, index)
            if slice_ops is not None:
                loop = _remove_iter_arg(loop, index, slice_ops)
                changed = True
        index -= 1
    return changed


def _simplify_if(op: Operation) -> bool:
    unused = [i for i, r in enumerate(op.results) if not r.has_uses]
    if not unused:
        return False
    for region in op.regions:
        term = region.block.terminator
        term.set_operands([v for i, v in enumerate(term.operands) if i not in unused])
    rebuild_without_results(op, [i for i in range(len(op.results)) if i not in unused], op.operands)
    return True


def _dce_block(block: Block) -> bool:
    changed = False
    for op in reversed(list(block.ops)):
        if _removable(op):
            op.erase()
            changed = True
            continue
        for region in op.regions:
            for inner in region.blocks:
                changed |= _dce_block(inner)
        if op.name == "scf.for":
            changed |= _simplify_for(op)
        elif op.name == "scf.if":
            changed |= _simplify_if(op)
    return changed


class DCE(Pass):
    """Dead code elimination, repeated until nothing more is removed."""

    name = "dce"

    def run(self, func: Operation) -> None:
        changed = True
        while changed:
            changed = False
            for region in func.regions:
                for block in region.blocks:
                    changed |= _dce_block(block)


__all__ = ["DCE", "has_side_effects", "rebuild_without_results", "replace_op"]
