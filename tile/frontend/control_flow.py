"""Runtime control flow for the code generator: `if`, `for`, `while` and `a if c else b` on
runtime conditions become scf.if / scf.for / scf.while with results for the variables they
assign. Compile-time conditions never get here (the code generator resolves them).

Variables are matched by name. After an `if`, a variable assigned in a branch gets an
scf.if result (both branches must give it one type; a Python number adopts the type of the
other branch's value). A loop finds its loop-carried variables by walking its body once
without keeping the IR (the "dry run"), then builds the loop with one block argument per
carried value; a variable whose type changes across an iteration is an error.

    for i in range(0, n):          %acc = scf.for %lb, %n, %step, %acc0 : f32 {
        acc += tl.load(p + i)      ^bb(%i: i32, %acc_1: f32):
                                     ...
                                     scf.yield %acc_2
                                   }
"""
from __future__ import annotations

import ast
import builtins as py
import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from tile.ir.core import Block, Region
from tile.ir.types import DType, PointerType, Type

from .aggregates import Aggregate, flatten, leaf_names, unflatten
from .builtins import range as tl_range
from .builtins import static_range
from .builtins_extra import condition as tl_condition
from .core import tensor, unwrap
from .semantics import computation_type, integer_promote, is_number, python_type

if TYPE_CHECKING:
    from .codegen import CodeGenerator

_MISSING = object()


class Undefined:
    """A name that exists in the Python scope but cannot be read at this point."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason

    def message(self) -> str:
        return f"variable '{self.name}' is {self.reason}"


# ------------------------------------------------------------------- value trees


def same(a: Any, b: Any) -> bool:
    """Whether two values are interchangeable without IR (one tensor, or equal constants)."""
    if a is b:
        return True
    if isinstance(a, tensor) or isinstance(b, tensor):
        return False
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, Aggregate) and isinstance(b, Aggregate):
        return type(a) is type(b) and a.static_key() == b.static_key() and same(a.fields(), b.fields())
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _show(v: Any) -> str:
    return str(v.ir_type) if isinstance(v, tensor) else f"the constant {v!r}"


class _Plan:
    """How one variable crosses a region boundary: per leaf, a constant kept as is or an IR type."""

    def __init__(self, name: str, tree: Any, leaves: list[tuple[bool, Any]]):
        self.name = name
        self.tree = tree
        self.leaves = leaves  # (runtime, type or constant)

    @property
    def types(self) -> list[Type]:
        return [x for runtime, x in self.leaves if runtime]

    def rebuild(self, values: Iterator[Any]) -> Any:
        return unflatten(iter([tensor(next(values)) if rt else x for rt, x in self.leaves]), self.tree)


def _normalize_range(args: tuple) -> tuple[Any, Any, Any]:
    a1, a2, step = (unwrap(a) for a in args)
    if a2 is None:
        return 0, a1, 1 if step is None else step
    return a1, a2, 1 if step is None else step


class ControlFlow:
    """The runtime `if` / `for` / `while` of `CodeGenerator`."""

    # -------------------------------------------------------------- type merging
    def unify(self: "CodeGenerator", name: str, a: Any, b: Any, where: str) -> Type:
        """The IR type a variable gets when it is `a` on one path and `b` on another."""
        if isinstance(a, tensor) and isinstance(b, tensor):
            if a.ir_type == b.ir_type:
                return a.ir_type
        elif isinstance(a, tensor) and is_number(b) and not isinstance(a.element, PointerType):
            return a.ir_type
        elif isinstance(b, tensor) and is_number(a) and not isinstance(b.element, PointerType):
            return b.ir_type
        elif is_number(a) and is_number(b):
            return computation_type(python_type(a), False, python_type(b), False, False)
        if where == "if":
            raise TypeError(f"variable '{name}' is {_show(a)} in one branch and {_show(b)} in the other; "
                            f"both branches must give it the same type")
        raise TypeError(f"variable '{name}' changes type inside the {where} loop: {_show(a)} before the loop, "
                        f"{_show(b)} after an iteration; a loop-carried variable must keep its type")

    def materialize(self: "CodeGenerator", name: str, v: Any, t: Type, where: str) -> Any:
        """The IR value for leaf `v` of type `t`, built at the current insertion point."""
        if isinstance(v, tensor):
            if v.ir_type == t:
                return v.handle
            if where == "if":
                raise TypeError(f"variable '{name}' is {t} in one branch and {v.ir_type} in the other; both "
                                f"branches must give it the same type")
            raise TypeError(f"variable '{name}' changes type inside the {where} loop: {t} before the loop, "
                            f"{v.ir_type} after an iteration; a loop-carried variable must keep its type")
        if not is_number(v):
            raise TypeError(f"variable '{name}' is {_show(v)} on one path and a runtime value on another")
        return self.sem.constant(v, t).handle

    def plan(self: "CodeGenerator", name: str, first: Any, second: Any, where: str) -> Optional[_Plan]:
        """How `name` crosses a boundary where it is `first` on one path and `second` on the other."""
        if same(first, second):
            return None
        la, ta = flatten(first)
        lb, tb = flatten(second)
        if ta != tb:
            raise TypeError(f"variable '{name}' holds tuples, block pointers or descriptors of different structure "
                            f"on different paths ({where}); keep its structure fixed")
        leaves = []
        for a, b in zip(la, lb):
            leaves.append((False, a) if same(a, b) else (True, self.unify(name, a, b, where)))
        return _Plan(name, ta, leaves)

    def leaves_of(self: "CodeGenerator", p: _Plan, value: Any, where: str) -> list[Any]:
        """The IR values of the runtime leaves of `value`, checked against plan `p`."""
        leaves, tree = flatten(value)
        if tree != p.tree:
            raise TypeError(f"variable '{p.name}' changes its tuple structure ({where})")
        out = []
        for leaf, (runtime, x) in zip(leaves, p.leaves):
            if runtime:
                out.append(self.materialize(p.name, leaf, x, where))
            elif not same(leaf, x):
                raise TypeError(f"variable '{p.name}' changes from {_show(x)} to {_show(leaf)} ({where}) in a way "
                                f"the frontend cannot carry; give it a runtime value before")
        return out

    def scalar_condition(self: "CodeGenerator", cond: tensor, what: str) -> tensor:
        if cond.is_block():
            raise TypeError(f"the condition of `{what}` must be a scalar, got a block of shape {list(cond.shape)}; "
                            f"use tl.where for elementwise choices")
        return self.sem.to_i1(cond)

    # --------------------------------------------------------------- sub-regions
    def in_region(self: "CodeGenerator", block: Block, scope: dict[str, Any], body: Callable[[], Any]
                  ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """Run `body` with `scope` as the variables and `block` as the insertion point; returns
        (body's result, names assigned, final scope). The caller's scope is restored."""
        saved = self.lscope, self.local_defs
        self.lscope, self.local_defs = dict(scope), {}
        self.scf_depth += 1
        try:
            with self.builder.at_end_of(block):
                out = body()
            return out, self.local_defs, self.lscope
        finally:
            self.lscope, self.local_defs = saved
            self.scf_depth -= 1

    @staticmethod
    def discard(block: Block) -> None:
        for op in block.ops:
            op.drop_all_references()

    def bind(self: "CodeGenerator", name: str, value: Any) -> None:
        self.lscope[name] = value
        self.local_defs[name] = value

    # ---------------------------------------------------------------------- if
    def runtime_if(self: "CodeGenerator", node: ast.If, cond: tensor) -> None:
        cond = self.scalar_condition(cond, "if")
        liveins = self.lscope
        then_block, else_block = Block(), Block()
        _, then_defs, then_scope = self.in_region(then_block, liveins, lambda: self.visit_compound(node.body))
        _, else_defs, else_scope = self.in_region(else_block, liveins, lambda: self.visit_compound(node.orelse))
        line = self.point(node).line
        plans: list[_Plan] = []
        kept: dict[str, Any] = {}
        for name in dict.fromkeys([*then_defs, *else_defs]):
            a, b = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if a is _MISSING or b is _MISSING or isinstance(a, Undefined) or isinstance(b, Undefined):
                kept[name] = Undefined(name, f"assigned in only one branch of the `if` at line {line} and "
                                             f"cannot be used after it")
                continue
            p = self.plan(name, a, b, "if")
            if p is None:
                kept[name] = a
            else:
                plans.append(p)
        for block, scope in ((then_block, then_scope), (else_block, else_scope)):
            with self.builder.at_end_of(block):
                values = [v for p in plans for v in self.leaves_of(p, scope[p.name], "if")]
                self.builder.create("scf.yield", values)
        op = self.builder.create("scf.if", [cond.handle], [t for p in plans for t in p.types], {},
                                 [Region([then_block]), Region([else_block])])
        results = iter(op.results)
        for p in plans:
            self.set_var(p.name, p.rebuild(results))
        for name, value in kept.items():
            self.bind(name, value)

    def runtime_ifexp(self: "CodeGenerator", node: ast.IfExp, cond: tensor) -> Any:
        cond = self.scalar_condition(cond, "a if c else b")
        then_block, else_block = Block(), Block()
        a, _, _ = self.in_region(then_block, self.lscope, lambda: self.visit(node.body))
        b, _, _ = self.in_region(else_block, self.lscope, lambda: self.visit(node.orelse))
        p = self.plan("<a if c else b>", a, b, "if")
        if p is None:
            self.discard(then_block)
            self.discard(else_block)
            return a
        for block, value in ((then_block, a), (else_block, b)):
            with self.builder.at_end_of(block):
                self.builder.create("scf.yield", self.leaves_of(p, value, "if"))
        op = self.builder.create("scf.if", [cond.handle], p.types, {}, [Region([then_block]), Region([else_block])])
        return p.rebuild(iter(op.results))

    # -------------------------------------------------------------------- loops
    def _carried(self: "CodeGenerator", liveins: dict[str, Any], sample: dict[str, Any], where: str) -> list[_Plan]:
        plans = []
        for name, value in sample.items():
            live = liveins.get(name, _MISSING)
            if live is _MISSING or isinstance(live, Undefined) or isinstance(value, Undefined):
                continue
            p = self.plan(name, live, value, where)
            if p is not None:
                plans.append(p)
        return plans

    def _loop(self: "CodeGenerator", node: ast.AST, where: str, iv_types: list[Type],
              bind_ivs: Callable[[list[Any]], None], build: Callable[[list[_Plan], list[Type]], Any]) -> None:
        """Shared driver of for/while: dry run, plan carried variables, build (retrying when the
        real body reveals another carried variable), then bind the results."""
        liveins = self.lscope
        dry = Block(iv_types)
        self.sem.dry_run += 1
        try:
            _, sample, _ = self.in_region(dry, liveins, lambda: (bind_ivs(list(dry.args)),
                                                                   self.visit_compound(node.body)))
        finally:
            self.sem.dry_run -= 1
            self.discard(dry)
        sample = dict(sample)
        for _ in py.range(8):
            plans = self._carried(liveins, sample, where)
            attempt = build(plans, [t for p in plans for t in p.types])
            if isinstance(attempt, dict):  # more carried variables found: plan again
                sample.update(attempt)
                continue
            op, body_defs = attempt
            break
        else:
            raise TypeError(f"cannot determine the loop-carried variables of this {where} loop")
        line = self.point(node).line
        results = iter(op.results)
        for p in plans:
            self.set_var(p.name, p.rebuild(results))
        carried = {p.name for p in plans}
        for name in body_defs:
            if name not in carried and name not in liveins:
                self.bind(name, Undefined(name, f"defined inside the {where} loop at line {line} and cannot be "
                                                f"used after it"))

    def _body(self: "CodeGenerator", block: Block, liveins: dict[str, Any], plans: list[_Plan], first_arg: int,
              prelude: Callable[[], None], stmts: list[ast.stmt], where: str) -> Any:
        """Visit a loop body in `block` whose arguments from `first_arg` are the carried values.
        Returns (names assigned, None), or (None, newly found carried variables)."""
        args = iter(block.args[first_arg:])
        scope = dict(liveins)
        for p in plans:
            value = p.rebuild(args)
            for leaf, hint in zip(flatten(value)[0], leaf_names(value, p.name)):
                if isinstance(leaf, tensor) and leaf.handle.name_hint is None:
                    leaf.handle.name_hint = hint
            scope[p.name] = value

        def run() -> Any:
            prelude()
            self.visit_compound(stmts)
            carried = {p.name for p in plans}
            extra = {n: v for n, v in self.local_defs.items()
                     if n in liveins and n not in carried and not isinstance(liveins[n], Undefined)
                     and not isinstance(v, Undefined) and not same(v, liveins[n])}
            if extra:
                return extra
            self.builder.create("scf.yield", [v for p in plans for v in self.leaves_of(p, self.lscope[p.name], where)])
            return None

        extra, defs, _ = self.in_region(block, scope, run)
        if extra:
            self.discard(block)
            return None, extra
        return defs, None

    def runtime_for(self: "CodeGenerator", node: ast.For, it: tl_range) -> None:
        lb, ub, step = _normalize_range(it.args)
        for what, v in (("start", lb), ("end", ub), ("step", step)):
            if isinstance(v, tensor):
                if v.is_block() or not isinstance(v.element, DType) or not v.element.is_integer:
                    raise TypeError(f"range {what} must be a scalar integer, got {v.ir_type}")
            elif not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"range {what} must be an integer, got {v!r}")
        if isinstance(step, int) and step == 0:
            raise ValueError("range step must not be zero")
        negative = isinstance(step, int) and step < 0
        if negative:  # iterate upward and map the induction variable back: i = lb + ub - i'
            lb, ub, step = ub, lb, -step
        iv_type = functools.reduce(
            integer_promote, [v.element if isinstance(v, tensor) else python_type(v) for v in (lb, ub, step)])
        bounds = [self.sem.cast(v, iv_type) if isinstance(v, tensor) else self.sem.constant(v, iv_type)
                  for v in (lb, ub, step)]
        attrs = {k: v for k, v in it.options.items() if v is not None} if isinstance(it, tl_range) else {}
        liveins = self.lscope

        def user_iv(iv: Any) -> tensor:
            value = tensor(iv)
            if negative:
                value = self.sem.add(self.sem.sub(bounds[1], value), bounds[0])
            return value

        def bind_ivs(args: list[Any]) -> None:
            self.assign(node.target, user_iv(args[0]))

        def build(plans: list[_Plan], types: list[Type]) -> Any:
            inits = [h for p in plans for h in self.leaves_of(p, liveins[p.name], "for")]
            body = Block([iv_type, *types])
            if isinstance(node.target, ast.Name) and not negative:
                body.args[0].name_hint = node.target.id
            defs, extra = self._body(body, liveins, plans, 1, lambda: bind_ivs(list(body.args)), node.body, "for")
            if extra:
                return extra
            op = self.builder.create("scf.for", [b.handle for b in bounds] + inits, types, attrs, [Region([body])])
            return op, {**defs, **{n: None for n in self._target_names(node.target)}}

        self._loop(node, "for", [iv_type], bind_ivs, build)

    @staticmethod
    def _target_names(target: ast.AST) -> list[str]:
        return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]

    def runtime_while(self: "CodeGenerator", node: ast.While) -> None:
        liveins = self.lscope

        def build(plans: list[_Plan], types: list[Type]) -> Any:
            inits = [h for p in plans for h in self.leaves_of(p, liveins[p.name], "while")]
            before, after = Block(types), Block(types)
            scope = dict(liveins)
            args = iter(before.args)
            for p in plans:
                scope[p.name] = p.rebuild(args)

            attrs: dict[str, Any] = {}

            def condition() -> None:
                cond = self.visit(node.test)
                if isinstance(cond, tl_condition):  # while tl.condition(c, disable_licm=True)
                    if cond.disable_licm:
                        attrs["disable_licm"] = True
                    cond = unwrap(cond.condition)
                cond = self.scalar_condition(self.sem.to_tensor(cond), "while")
                self.builder.create("scf.condition", [cond.handle, *before.args])

            self.in_region(before, scope, condition)
            defs, extra = self._body(after, liveins, plans, 0, lambda: None, node.body, "while")
            if extra:
                self.discard(before)
                return extra
            op = self.builder.create("scf.while", inits, types, attrs, [Region([before]), Region([after])])
            return op, defs

        self._loop(node, "while", [], lambda args: None, build)

    # ----------------------------------------------------------- static loops
    def static_for(self: "CodeGenerator", node: ast.For, values: Any) -> None:
        for v in values:
            self.assign(node.target, v)
            self.visit_compound(node.body)
            if self.returned:
                return

    def for_loop(self: "CodeGenerator", node: ast.For, it: Any) -> None:
        if isinstance(it, static_range):
            lb, ub, step = _normalize_range(it.args)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lb, ub, step)):
                raise TypeError(f"tl.static_range bounds must be compile-time integers, got "
                                f"({_show(lb)}, {_show(ub)}, {_show(step)})")
            self.static_for(node, py.range(lb, ub, step))
        elif isinstance(it, tl_range):
            self.runtime_for(node, it)
        elif isinstance(it, (tuple, list)) or (not isinstance(it, tensor) and hasattr(it, "__iter__")):
            self.static_for(node, list(it))  # compile-time values (tuples, zip, enumerate...): unrolled
        else:
            raise TypeError("for loops support range(), tl.range() and tl.static_range(), or a tuple of "
                            f"compile-time values; got {it!r}")
