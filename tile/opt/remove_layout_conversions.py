"""Remove layout conversions: let whole chains of ops share the layouts coalescing chose.

Three rewrites, repeated until nothing changes (Triton's RemoveLayoutConversions, simplified),
then two more on what is left:

1. Forward propagation. The results of loads, atomics and dots are anchors (a dot's #mma or FMA
   layout, chosen by accelerate-dot, so reaches the loop-carried accumulator and the epilogue):
   their layout flows to
   every op that can take it (elementwise ops, arith.cast among them, conversions, broadcast,
   expand_dims of a slice, reduce (as a #slice), scan, trans, reshape, join (with the new
   register bit), split (where the split dimension is a register bit), gather (from its index))
   and through scf.for /
   scf.if / scf.while into block arguments and results. So are conversions of a loop-carried
   value for a memory op (a pointer advanced each iteration): the loop then carries the value
   in that layout. A value reached by several layouts keeps its own if among them, else takes
   the first that reached it. Ops whose operands then disagree get conversions
   (tile.ir.gpu_ops.legalize).
2. Backward rematerialization. A conversion of a value computed by cheap ops (splat, arange,
   constant, elementwise arithmetic, casts and compares, addptr, broadcast, expand_dims, trans,
   reshape) from values that already have the needed layouts (or scalars) is replaced by a copy
   of that computation in the target layout: a chain only the conversion uses moves whole (up
   to MAX_WALK ops, tl.rand's Philox rounds among them); at most MAX_SLICE copied ops may stay
   alive beside their originals. A value the chain starts from that has at most half the
   converted value's elements is loaded again in the wanted layout where it is a load (its
   lanes repeat addresses, which L1 serves), else converted itself: for a broadcast row,
   m[None, :] - qk with m loaded and qk a dot's result, BLOCK elements are loaded in the dot's
   row layout instead of BLOCK x BLOCK going through shared memory and two barriers.
3. Folding. convert(x) to x's own layout is x; convert(convert(x)) is convert(x); copies that
   came out equal are merged (CSE) and what is left unused is deleted (DCE).
4. Stores follow their values. A tt.store whose value comes through a conversion between
   threads stores in the value's layout instead (its registers reordered, a free renaming) when
   that is as coalesced, with vectors no longer than coalescing chose (tile.ir.layouts.
   store_layout_like), and its pointers and mask can be recomputed in it: a tl.cat of two blocks
   loaded 2 elements per thread, whose result each thread holds as two runs of 2 where coalescing
   chose runs of 4, goes out in vector stores of 2 rather than through shared memory.
5. Narrowing. A conversion that stays moves to the narrow side of an arith.cast, so fewer bytes
   go through shared memory: convert(widening cast(x)) becomes cast(convert(x)), and a
   narrowing cast(convert(y)), the conversion's only use, becomes convert(cast(y)).

Before (vector add after coalescing; #b1 default, #b4 coalesced):
    %0 = gpu.convert_layout %xp : tensor<1024xptr<f32>, #b4>
    %1 = tt.load %0 : tensor<1024xf32, #b4>
    %x = gpu.convert_layout %1 : tensor<1024xf32, #b1>
    ...same for %y...
    %sum = arith.add %x, %y : tensor<1024xf32, #b1>
    %2 = gpu.convert_layout %op : tensor<1024xptr<f32>, #b4>
    %3 = gpu.convert_layout %sum : tensor<1024xf32, #b4>
    tt.store %2, %3
After (%offs and the splats recomputed in #b4, no conversion left):
    %x = tt.load %xp : tensor<1024xf32, #b4>
    %sum = arith.add %x, %y : tensor<1024xf32, #b4>
    tt.store %op, %sum

Narrowing (an f16 load kept in #b8 feeds an f32 store that wants #b4):
    %f = arith.cast %h : tensor<1024xf32, #b8>
    %0 = gpu.convert_layout %f : tensor<1024xf32, #b4>
becomes
    %0 = gpu.convert_layout %h : tensor<1024xf16, #b4>
    %f = arith.cast %0 : tensor<1024xf32, #b4>
"""
from __future__ import annotations

from typing import Optional

from ..ir import BlockArgument, Operation, TensorType, Value, print_op
from ..ir.gpu_ops import element_bytes, forward_result_layouts, insert_convert, is_elementwise, layout_of, legalize, \
    required_operand_types, with_layout
from ..ir.layouts import BlockedLayout, Layout, conversion_kind, store_layout_like
from .coalesce import MEMORY_OPS
from .cse import CSE
from .dce import DCE, replace_op
from .pass_manager import Pass

MAX_ROUNDS = 4
MAX_SLICE = 64  # ops one rematerialization may copy while the originals stay alive
MAX_WALK = 1024  # ops one rematerialization may recompute in all
_CHEAP = {"tt.splat", "tt.arange", "arith.constant", "tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape",
          "tt.addptr", "tt.hint", "gpu.convert_layout"}
_ANCHORS = ("tt.load", "tt.atomic_rmw", "tt.atomic_cas", "tt.dot")


def _is_convert(op: Optional[Operation]) -> bool:
    return op is not None and op.name == "gpu.convert_layout"


# ------------------------------------------------------------------------ folding


def fold_conversions(func: Operation) -> bool:
    """Fold conversions to the operand's own layout and chains of conversions."""
    changed = False
    for op in list(func.walk()):
        if not _is_convert(op) or op.parent is None:
            continue
        src = op.operand(0)
        while _is_convert(src.owner_op):
            src = src.owner_op.operand(0)
            op.set_operand(0, src)
            changed = True
        if src.type == op.result.type:
            op.result.replace_all_uses_with(src)
            op.erase()
            changed = True
    return changed


# ------------------------------------------------------------------------ forward propagation


def _tied(user: Operation, index: int) -> Optional[list[Value]]:
    """Values that must share the type of operand `index` of control-flow op `user` (None: not one)."""
    name = user.name
    if name == "scf.yield":
        parent = user.parent_op
        if parent.name == "scf.for":
            return [parent.regions[0].block.args[index + 1], parent.results[index]]
        if parent.name == "scf.while":
            return [parent.regions[0].block.args[index]]
        return [parent.results[index]]
    if name == "scf.for" and index >= 3:
        return [user.regions[0].block.args[index - 2], user.results[index - 3]]
    if name == "scf.while":
        return [user.regions[0].block.args[index]]
    if name == "scf.condition" and index >= 1:
        loop = user.parent_op
        return [loop.regions[1].block.args[index - 1], loop.results[index - 1]]
    return None


def _loop_carried(v: Value) -> bool:
    if not isinstance(v, BlockArgument):
        return False
    owner = v.block.parent_op
    return owner is not None and (owner.name == "scf.while" or owner.name == "scf.for" and v.index >= 1)


def _before_hints(v: Value) -> Value:
    """The value a chain of tt.hint ops annotates (`tl.multiple_of(ptrs, 16)` on a loop-carried
    pointer puts a hint between the block argument and its loads)."""
    while v.owner_op is not None and v.owner_op.name == "tt.hint":
        v = v.owner_op.operand(0)
    return v


def propagate_forward(func: Operation) -> bool:
    """Spread anchor layouts forward (see the module docstring); returns whether a type changed."""
    seeds: list[tuple[Value, Layout]] = []
    fixed: set[Value] = set()
    for op in func.walk():
        if op.name in _ANCHORS and isinstance(op.results[0].type, TensorType):
            seeds.append((op.result, layout_of(op.result)))
            fixed.add(op.result)
        elif _is_convert(op) and _loop_carried(_before_hints(op.operand(0))) and \
                any(u.name in MEMORY_OPS for u in op.result.users()):
            seeds.append((_before_hints(op.operand(0)), op.result.type.layout))
    candidates: dict[Value, list[Layout]] = {}
    work: list[tuple[Value, Layout]] = []

    def add(values: list[Value], layout: Layout) -> None:
        for v in values:
            if v in fixed and v.type.layout != layout:
                continue
            seen = candidates.setdefault(v, [])
            if layout not in seen:
                seen.append(layout)
                work.append((v, layout))

    for v, layout in seeds:
        members = [v]
        if isinstance(v, BlockArgument):
            owner = v.block.parent_op
            if owner.name == "scf.for":
                members.append(owner.results[v.index - 1])
        add(members, layout)
    while work:
        v, layout = work.pop(0)
        for user, index in list(v.uses):
            tied = _tied(user, index)
            if tied is not None:
                add(tied, layout)
                continue
            results = forward_result_layouts(user, index, layout)
            for r, lay in zip(user.results, results or []):
                if lay is not None:
                    add([r], lay)
    changed = False
    for v, seen in candidates.items():
        current = v.type.layout
        chosen = current if current in seen else seen[0]
        if chosen != current:
            v.type = with_layout(v.type, chosen)
            changed = True
    return changed


# ------------------------------------------------------------------------ backward rematerialization


class _Rematerializer:
    """Recomputes cheap values in other layouts; `memo` reuses copies already made."""

    def __init__(self, leaf_elements: int = 0) -> None:
        self.memo: dict[tuple[Value, Layout], Value] = {}
        self.leaf_elements = leaf_elements  # values this small that cannot be recomputed are converted

    def _converted_leaf(self, v: Value) -> bool:
        return isinstance(v.type, TensorType) and v.type.numel <= self.leaf_elements

    def _cheap(self, op: Operation) -> bool:
        return not op.regions and len(op.results) == 1 and (op.name in _CHEAP or (
            is_elementwise(op) and op.name not in _ANCHORS) or self._small_load(op))

    def _small_load(self, op: Operation) -> bool:
        """A load of few elements (at most leaf_elements: a row of maxima), cheaper loaded again in
        the layout its user wants (its lanes repeating addresses L1 serves) than converted."""
        return op.name == "tt.load" and not op.attrs.get("volatile") and self._converted_leaf(op.result)

    def _leaf(self, v: Value, layout: Layout) -> bool:
        """Whether `v` cannot be recomputed in `layout` (the walk ends there: see _converted_leaf)."""
        op = v.owner_op
        return op is None or not self._cheap(op) or op.name == "tt.broadcast" and not layout.shape_generic

    def can(self, v: Value, layout: Layout, budget: list[int], visited: Optional[list[Operation]] = None,
            checked: Optional[set[tuple[Value, Layout]]] = None) -> bool:
        """Whether `v` can be recomputed in `layout` from cheap ops, at most budget[0] of them,
        each counted once however many paths reach it (appended to `visited`, conversions passed
        through included)."""
        if not isinstance(v.type, TensorType) or v.type.layout == layout or (v, layout) in self.memo:
            return True
        checked = set() if checked is None else checked
        if (v, layout) in checked:
            return True
        checked.add((v, layout))
        if self._leaf(v, layout):
            return self._converted_leaf(v)
        op = v.owner_op
        if visited is not None:
            visited.append(op)
        if _is_convert(op):
            return self.can(op.operand(0), layout, budget, visited, checked)
        budget[0] -= 1
        if budget[0] < 0:
            return False
        wanted = required_operand_types(op, [with_layout(v.type, layout)])
        return all(t is None or not isinstance(t, TensorType) or self.can(o, t.layout, budget, visited, checked)
                   for o, t in zip(op.operands, wanted))

    def build(self, v: Value, layout: Layout) -> Value:
        if not isinstance(v.type, TensorType) or v.type.layout == layout:
            return v
        key = (v, layout)
        if key in self.memo:
            return self.memo[key]
        op = v.owner_op
        if _is_convert(op):
            return self.build(op.operand(0), layout)
        if self._leaf(v, layout):
            first_use = v.block.ops[0] if op is None else op.parent.ops[op.parent.ops.index(op) + 1]
            self.memo[key] = insert_convert(v, layout, first_use)
            return self.memo[key]
        new_type = with_layout(v.type, layout)
        wanted = required_operand_types(op, [new_type])
        operands = [o if t is None or not isinstance(t, TensorType) else self.build(o, t.layout)
                    for o, t in zip(op.operands, wanted)]
        copy = Operation(op.name, operands, [new_type], dict(op.attrs), loc=op.loc)
        copy.result.name_hint = v.name_hint
        op.parent.insert_after(op, copy)
        self.memo[key] = copy.result
        return copy.result


def _copies_kept(visited: list[Operation], convert: Operation) -> int:
    """How many of the ops a rematerialization recomputes stay alive beside their copies: those
    used outside the slice (other than by `convert`, which goes), and what they are made from.
    The rest die once the conversion is replaced: their recomputation costs nothing."""
    inside = set(visited) | {convert}
    kept: set[Operation] = set()
    stack = [op for op in visited if any(user not in inside for user in op.result.users())]
    while stack:
        op = stack.pop()
        if op in kept:
            continue
        kept.add(op)
        stack.extend(o.owner_op for o in op.operands if o.owner_op in inside and o.owner_op is not convert)
    return sum(1 for op in kept if not _is_convert(op))


def rematerialize_backward(func: Operation) -> bool:
    """Replace conversions of cheaply recomputed values by recomputation in the target layout: a
    slice of at most MAX_WALK ops, of which at most MAX_SLICE stay alive beside their copies (a
    long chain only the conversion uses, Philox's rounds under tl.rand, moves whole). Values of at
    most half the converted value's elements (a row of maxima under its broadcast) are loaded
    again in the wanted layout where they are loads, else converted themselves."""
    changed = False
    for op in list(func.walk()):
        if not _is_convert(op) or op.parent is None:
            continue
        layout = op.result.type.layout
        visited: list[Operation] = []
        remat = _Rematerializer(leaf_elements=op.result.type.numel // 2)
        if remat.can(op.operand(0), layout, [MAX_WALK], visited) and _copies_kept(visited, op) <= MAX_SLICE:
            op.result.replace_all_uses_with(remat.build(op.operand(0), layout))
            op.erase()
            changed = True
    return changed


# ------------------------------------------------------------------------ narrowing


def _width_change(cast: Operation) -> int:
    """> 0 when arith.cast `cast` makes elements wider, < 0 narrower, 0 otherwise (or not a cast)."""
    if cast.name != "arith.cast" or not isinstance(cast.operand(0).type, TensorType):
        return 0
    return element_bytes(cast.result.type) - element_bytes(cast.operand(0).type)


def _hoist_above_cast(op: Operation, cast: Operation) -> Operation:
    """convert(cast(x)) -> cast(convert(x)); returns the new cast."""
    x = cast.operand(0)
    moved = Operation("gpu.convert_layout", [x], [with_layout(x.type, op.result.type.layout)], loc=op.loc)
    op.parent.insert_before(op, moved)
    copy = Operation("arith.cast", [moved.result], [op.result.type], dict(cast.attrs), loc=cast.loc)
    op.parent.insert_before(op, copy)
    copy.result.name_hint = cast.result.name_hint
    op.result.replace_all_uses_with(copy.result)
    op.erase()
    return copy


def _sink_below_cast(op: Operation, cast: Operation) -> Operation:
    """cast(convert(y)) -> convert(cast(y)), the cast placed at the conversion; returns the new conversion."""
    y = op.operand(0)
    copy = Operation("arith.cast", [y], [with_layout(cast.result.type, layout_of(y))], dict(cast.attrs), loc=cast.loc)
    op.parent.insert_before(op, copy)
    moved = Operation("gpu.convert_layout", [copy.result], [cast.result.type], loc=op.loc)
    op.parent.insert_before(op, moved)
    replace_op(cast, moved.result)
    op.erase()
    return moved


def narrow_conversions(func: Operation) -> bool:
    """Move conversions across arith.cast to the side with the narrower elements (repeatedly, so
    through chains of casts)."""
    work = [op for op in func.walk() if _is_convert(op)]
    changed = False
    while work:
        op = work.pop()
        if op.parent is None:
            continue
        src, users = op.operand(0).owner_op, op.result.users()
        if src is not None and _width_change(src) > 0:
            copy = _hoist_above_cast(op, src)
            work.append(copy.operand(0).owner_op)
        elif len(op.result.uses) == 1 and _width_change(users[0]) < 0:
            work.append(_sink_below_cast(op, users[0]))
        else:
            continue
        changed = True
    return changed


# ------------------------------------------------------------------------ stores


def stores_follow_values(func: Operation) -> bool:
    """Store values in their own layouts where that saves a conversion through shared memory (rewrite 4)."""
    remat = _Rematerializer()
    changed = False
    for op in list(func.walk()):
        if op.name != "tt.store" or not _is_convert(op.operand(1).owner_op):
            continue
        src, t = op.operand(1).owner_op.operand(0), op.operand(1).type
        if not isinstance(t.layout, BlockedLayout) or conversion_kind(src.type.layout, t.layout, t.shape) != "shared":
            continue
        target = store_layout_like(src.type.layout, t.shape, t.layout)
        others = [i for i in (0, 2) if i < op.num_operands]
        if target is None or not all(remat.can(op.operand(i), target, [MAX_SLICE]) for i in others):
            continue
        for i in others:
            op.set_operand(i, remat.build(op.operand(i), target))
        op.set_operand(1, src if src.type.layout == target else insert_convert(src, target, op))
        changed = True
    return changed


class RemoveLayoutConversions(Pass):
    """Propagates, rematerializes and folds until the IR stops changing (at most MAX_ROUNDS rounds),
    then lets stores follow their values and narrows the conversions that are left."""

    name = "remove-layout-conversions"

    def run(self, func: Operation) -> None:
        for _ in range(MAX_ROUNDS):
            before = print_op(func)
            fold_conversions(func)
            if propagate_forward(func):
                legalize(func)
            self._clean_up(func)
            if print_op(func) == before:
                break
        if stores_follow_values(func):
            self._clean_up(func)
        if narrow_conversions(func):
            self._clean_up(func)

    @staticmethod
    def _clean_up(func: Operation) -> None:
        fold_conversions(func)
        rematerialize_backward(func)
        fold_conversions(func)
        CSE().run(func)
        DCE().run(func)


__all__ = ["RemoveLayoutConversions", "fold_conversions", "narrow_conversions", "propagate_forward",
           "rematerialize_backward", "stores_follow_values"]
