"""Combine: fuse op pairs into one op that the backends implement better.

Before:
    %zero = arith.constant {value = 0.0} : tensor<16x16xf32>
    %d = tt.dot %a, %b, %zero : tensor<16x16xf32>
    %acc1 = arith.add %acc, %d : tensor<16x16xf32>
    %x = tt.load %ptrs, %mask : tensor<16xf32>
    %y = arith.select %mask, %x, %other : tensor<16xf32>
    %e = tt.broadcast %row : tensor<4x1xf32>
    %f = tt.broadcast %e : tensor<4x8xf32>
    %q = arith.div %i, %n : i32
    %r = arith.rem %i, %n : i32
After:
    %zero = arith.constant {value = 0.0} : tensor<16x16xf32>
    %acc1 = tt.dot %a, %b, %acc : tensor<16x16xf32>
    %y = tt.load %ptrs, %mask, %other : tensor<16xf32>
    %f = tt.broadcast %row : tensor<4x8xf32>
    %q = arith.div %i, %n : i32
    %0 = arith.mul %q, %n : i32
    %r = arith.sub %i, %0 : i32

1. `add(dot(a, b, 0), c)` (either operand order, the dot used only there) -> `dot(a, b, c)`:
   the accumulator starts at c instead of being added afterwards.
2. `select(m, load(p, m), other)` (the load used only there) -> `load(p, m, other)`: the
   masked-off lanes read `other` directly.
3. `broadcast(broadcast(x))` -> `broadcast(x)`.
4. `rem(a, b)` of integers beside `div(a, b)` in the same block, b not a constant ->
   `sub(a, mul(div(a, b), b))`: one division instead of two (a GPU divides an integer by a
   runtime value in some twenty instructions; by a constant, in a multiply).
(`addptr(addptr(p, a), b)` is canonicalize's job.)
"""
from __future__ import annotations

from typing import Callable, Optional

from ..ir import Operation, Value
from ..ir.types import element_type
from .canonicalize import constant_value
from .dce import has_side_effects, replace_op
from .pass_manager import Pass


def _single_use_def(v: Value, name: str) -> Optional[Operation]:
    """The op named `name` defining `v`, if `v` has exactly one use."""
    op = v.owner_op
    if op is None or op.name != name or len(v.uses) != 1:
        return None
    return op


def dot_add(add: Operation) -> bool:
    for dot_value, other in ((add.operand(0), add.operand(1)), (add.operand(1), add.operand(0))):
        dot = _single_use_def(dot_value, "tt.dot")
        if (dot is None or dot.parent is not add.parent  # moving a dot into a loop would repeat it
                or constant_value(dot.operand(2)) != 0 or other.type != dot.result.type):
            continue
        new = Operation("tt.dot", [dot.operand(0), dot.operand(1), other], [add.result.type], dict(dot.attrs),
                        loc=dot.loc)
        add.parent.insert_before(add, new)  # `other` may be defined after the dot
        replace_op(add, new.result)
        dot.erase()
        return True
    return False


def _dominates_op(v: Value, op: Operation) -> bool:
    """Whether `v` is visible at `op`: defined earlier in an enclosing block, or a block argument."""
    if v.owner_op is None:
        block = v.block
    else:
        block = v.owner_op.parent
    anchor: Optional[Operation] = op
    while anchor is not None and anchor.parent is not block:
        anchor = anchor.parent_op
    if anchor is None:
        return False
    return v.owner_op is None or block.ops.index(v.owner_op) < block.ops.index(anchor)


def _ops_between(first: Operation, last: Operation) -> list[Operation]:
    ops = first.parent.ops
    return ops[ops.index(first) + 1:ops.index(last)]


def select_load(select: Operation) -> bool:
    mask, loaded, other = select.operands
    load = _single_use_def(loaded, "tt.load")
    if load is None or load.num_operands < 2 or load.operand(1) is not mask:
        return False
    if _dominates_op(other, load):
        anchor = load  # the load keeps its place among the other memory ops
    elif (select.parent is load.parent and not load.attrs.get("volatile", False)
          and not any(has_side_effects(op, ignore_loads=True) for op in _ops_between(load, select))):
        anchor = select  # nothing in between writes memory, so the load may move down
    else:
        return False
    new = Operation("tt.load", [load.operand(0), mask, other], [load.result.type], dict(load.attrs), loc=load.loc)
    anchor.parent.insert_before(anchor, new)
    replace_op(select, new.result)
    load.erase()
    return True


def broadcast_broadcast(op: Operation) -> bool:
    inner = op.operand(0).owner_op
    if inner is None or inner.name != "tt.broadcast":
        return False
    op.set_operand(0, inner.operand(0))
    if not inner.result.has_uses:
        inner.erase()
    return True


def rem_of_div(rem: Operation) -> bool:
    a, b = rem.operands
    if not element_type(rem.result.type).is_integer or constant_value(b) is not None:
        return False
    ops = rem.parent.ops
    div = next((op for op in ops if op.name == "arith.div" and op.operand(0) is a and op.operand(1) is b
                and op.result.type == rem.result.type), None)
    if div is None:
        return False
    if ops.index(div) > ops.index(rem):  # its operands are visible at the rem, which uses them
        div.move_before(rem)
    product = Operation("arith.mul", [div.result, b], [rem.result.type], loc=rem.loc)
    rem.parent.insert_before(rem, product)
    difference = Operation("arith.sub", [a, product.result], [rem.result.type], loc=rem.loc)
    rem.parent.insert_before(rem, difference)
    replace_op(rem, difference.result)
    return True


COMBINES: dict[str, Callable[[Operation], bool]] = {
    "arith.add": dot_add,
    "arith.select": select_load,
    "tt.broadcast": broadcast_broadcast,
    "arith.rem": rem_of_div,
}


class Combine(Pass):
    """Applies the fusions above until none matches."""

    name = "combine"

    def run(self, func: Operation) -> None:
        changed = True
        while changed:
            changed = False
            for op in list(func.walk()):
                rewrite = COMBINES.get(op.name)
                if rewrite is not None and op.parent is not None and rewrite(op):
                    changed = True


__all__ = ["Combine", "COMBINES", "dot_add", "select_load", "broadcast_broadcast", "rem_of_div"]
