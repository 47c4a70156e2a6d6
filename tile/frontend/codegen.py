"""The code generator: an `ast.NodeVisitor` that walks a @tile.jit function and builds tile IR.

Compile-time values (constexpr parameters, literals, globals such as dtypes) are evaluated
in Python as the walk goes, so `if BLOCK > 64:` picks a branch and `BLOCK * 2` is a number;
runtime values are `tensor`s and every operation on them appends IR through `Semantic`.
Calls of other @tile.jit functions are inlined: a child generator walks the callee's body
with its parameters bound to the caller's values. Runtime `if`/`for`/`while` live in
control_flow.py. Every op gets the location of the source node being walked, and errors
become `CompilationError`s naming the user's file, line and column.

    @tile.jit                                      tt.func {sym_name = "add", ...} {
    def add(x_ptr, n, BLOCK: tl.constexpr):        ^bb(%x_ptr: ptr<f32>, %n: i32):
        offs = tl.arange(0, BLOCK)                   %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
        mask = offs < n                              %n_1 = tt.splat %n : tensor<128xi32>
        ...                                          %mask = arith.cmp %offs, %n_1 {predicate = "lt"} ...
"""
from __future__ import annotations

import ast
import builtins as py
import inspect
import operator
from typing import TYPE_CHECKING, Any, Callable, Optional

from tile.ir.core import Block, Location, Operation, Region
from tile.ir.types import PointerType
from tile.ir.verifier import verify

from .aggregates import argument_value, is_namedtuple, name_leaves
from .aggregates import tuple as tl_tuple
from .block_pointers import block_pointer
from .builtins import range as tl_range
from .builtins import static_range
from .control_flow import ControlFlow, Undefined
from .core import builtin, constexpr, current, is_builtin, pop, push, tensor, unwrap
from .core import slice as tl_slice
from .errors import CompilationError, SourcePoint
from .returns import structured_returns
from .semantics import Semantic

if TYPE_CHECKING:
    from .jit import JITFunction
    from .specialize import Specialization

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}  # fmt: skip
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}  # fmt: skip

_UNSUPPORTED = {
    ast.SetComp: "set comprehensions are not supported in kernels",
    ast.DictComp: "dict comprehensions are not supported in kernels",
    ast.GeneratorExp: "generator expressions are not supported in kernels; use a tl.static_range loop",
    ast.Lambda: "lambda is not supported in kernels; define a @tile.jit function at module level instead",
    ast.Break: "`break` is not supported in kernels; fold the exit condition into a `while` condition",
    ast.Continue: "`continue` is not supported in kernels; guard the rest of the body with an `if`",
    ast.Try: "`try` is not supported in kernels",
    ast.With: "`with` is not supported in kernels",
    ast.AsyncWith: "`async with` is not supported in kernels",
    ast.AsyncFor: "`async for` is not supported in kernels",
    ast.AsyncFunctionDef: "async functions are not supported in kernels",
    ast.Await: "`await` is not supported in kernels",
    ast.Global: "`global` is not supported in kernels; kernels read globals but cannot rebind them",
    ast.Nonlocal: "`nonlocal` is not supported in kernels",
    ast.Yield: "`yield` is not supported in kernels",
    ast.YieldFrom: "`yield from` is not supported in kernels",
    ast.Raise: "`raise` is not supported in kernels; use tl.static_assert or tl.device_assert",
    ast.Delete: "`del` is not supported in kernels",
    ast.Import: "`import` is not supported inside kernels; import at module level",
    ast.ImportFrom: "`import` is not supported inside kernels; import at module level",
    ast.ClassDef: "class definitions are not supported in kernels",
    ast.FunctionDef: "nested functions (closures over runtime values) are not supported in kernels; define a "
                     "@tile.jit function at module level and pass values as arguments",
    ast.Dict: "dicts are not supported in kernels; use tuples",
    ast.Set: "sets are not supported in kernels; use tuples",
    ast.NamedExpr: "the walrus operator `:=` is not supported in kernels",
    ast.Match: "`match` is not supported in kernels",
}  # fmt: skip
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = "`try` is not supported in kernels"


def _message(e: Exception) -> str:
    if isinstance(e, (TypeError, ValueError, AssertionError, NameError, IndexError, ZeroDivisionError)):
        return str(e)
    return f"{type(e).__name__}: {e}"


def _has_runtime(values: Any) -> bool:
    for v in values:
        if isinstance(v, tensor):
            return True
        if isinstance(v, (tuple, list)) and _has_runtime(v):
            return True
    return False


def _fold_extreme(args: tuple, python_fn: Callable[..., Any], elementwise: Callable[..., Any]) -> Any:
    """min/max of `args` (or of the one sequence in it): Python's `python_fn` on constants, else
    `elementwise` (Semantic.minimum or Semantic.maximum) folded left to right."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if not _has_runtime(args):
        return python_fn(*args)
    out = args[0]
    for a in args[1:]:
        out = elementwise(current(), out, a)
    return out


# Python builtins with a meaning on runtime values (Triton maps them the same way).
@builtin
def _py_min(*args: Any) -> Any:
    return _fold_extreme(args, py.min, Semantic.minimum)


@builtin
def _py_max(*args: Any) -> Any:
    return _fold_extreme(args, py.max, Semantic.maximum)


@builtin
def _py_abs(x: Any) -> Any:
    return current().abs(x) if isinstance(x, tensor) else py.abs(x)


@builtin
def _py_print(*args: Any, **_: Any) -> None:
    """`print` in a kernel is tl.device_print (a leading string is the prefix)."""
    prefix, rest = (args[0], args[1:]) if args and isinstance(args[0], str) else ("", args)
    current().device_print(prefix, list(rest))


_PY_BUILTINS = {"min": _py_min, "max": _py_max, "abs": _py_abs, "print": _py_print}
# Python builtins that look only at the structure of their arguments (tuples of runtime values
# have a compile-time length and members), so they may take runtime values.
_STRUCTURAL = (len, isinstance, type, enumerate, zip, reversed, tuple, list, callable, hasattr, getattr)


class CodeGenerator(ControlFlow, ast.NodeVisitor):
    """Walks one function body; a call of another @jit function gets a child generator."""

    def __init__(self, fn: "JITFunction", sem: Semantic, scope: dict[str, Any], *, is_kernel: bool,
                 call_stack: tuple = ()):
        self.fn = fn
        self.sem = sem
        self.builder = sem.builder
        self.lscope: dict[str, Any] = scope
        self.local_defs: dict[str, Any] = {}
        self.is_kernel = is_kernel
        self.call_stack = call_stack + (fn,)
        self.ret: Any = None
        self.returned = False
        self.scf_depth = 0  # runtime if/for/while regions around the current statement
        self.node: Optional[ast.AST] = None  # innermost node with a position being walked

    # ---------------------------------------------------------------- positions
    def point(self, node: ast.AST) -> SourcePoint:
        line = node.lineno + self.fn.line_offset
        col = node.col_offset + self.fn.col_offset + 1
        return SourcePoint.at(self.fn.file, line, col, self.fn.source_line(node.lineno))

    def error(self, node: ast.AST, message: str) -> CompilationError:
        return CompilationError(message, self.point(node))

    def visit(self, node: ast.AST) -> Any:
        if not hasattr(node, "lineno"):
            return super().visit(node)
        saved_loc, saved_node = self.builder.loc, self.node
        self.builder.loc = Location(self.fn.file, node.lineno + self.fn.line_offset,
                                    node.col_offset + self.fn.col_offset + 1)
        self.node = node
        try:
            out = super().visit(node)
        except CompilationError:
            raise
        except Exception as e:
            raise self.error(node, _message(e)) from e
        finally:
            self.builder.loc, self.node = saved_loc, saved_node
        return out.value if isinstance(out, constexpr) else out

    def generic_visit(self, node: ast.AST) -> Any:
        message = _UNSUPPORTED.get(type(node), f"{type(node).__name__} is not supported in kernels")
        raise self.error(node, message)

    # -------------------------------------------------------------------- names
    def lookup(self, name: str) -> Any:
        if name in self.lscope:
            value = self.lscope[name]
            if isinstance(value, Undefined):
                raise NameError(value.message())
            return value
        found, value = self.fn.lookup_global(name)
        if found:
            return value
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        if hasattr(py, name):
            return getattr(py, name)
        raise NameError(f"undefined name '{name}'")

    def set_var(self, name: str, value: Any) -> None:
        if isinstance(value, tensor) and value.handle.name_hint is None and not self.sem.dry_run:
            value.handle.name_hint = name
        elif not isinstance(value, tensor) and not self.sem.dry_run:
            name_leaves(value, name)
        self.lscope[name] = value
        self.local_defs[name] = value

    def assign(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.set_var(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, tensor):
                raise self.error(target, "cannot unpack a tensor; only tuples of values can be unpacked")
            if not isinstance(value, (tuple, list)):
                raise self.error(target, f"cannot unpack {value!r}")
            if len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            raise self.error(target, "item assignment (`x[i] = ...`) is not supported: tensors are values; "
                                     "build a new one (tl.where) or write memory with tl.store")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__} in a kernel")

    # ---------------------------------------------------------------- statements
    def visit_compound(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)
            if self.returned:
                return

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "a variable declaration needs a value")
        value = self.visit(node.value)
        annotation = ast.unparse(node.annotation)
        if annotation.split(".")[-1] == "constexpr" and isinstance(value, tensor):
            raise self.error(node, f"'{ast.unparse(node.target)}' is annotated tl.constexpr but its value is a "
                                   f"runtime value")
        self.assign(node.target, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a plain variable name")
        value = self.binary(node.op, self.lookup(node.target.id), self.visit(node.value))
        self.set_var(node.target.id, value)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            node.value._is_unused = True  # type: ignore[attr-defined]  (read by visit_Call: must_use_result)
        value = self.visit(node.value)
        if (isinstance(value, block_pointer) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).split(".")[-1] == "advance"):
            raise self.error(node, "the result of tl.advance is not used: tl.advance has no side effects; assign "
                                   "its result to move the block pointer (p = tl.advance(p, offsets))")

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Return(self, node: ast.Return) -> None:
        if self.scf_depth:
            raise self.error(node, "`return` inside a loop is not supported (returns inside `if` are); assign the "
                                   "result to a variable and return it after the loop")
        value = self.visit(node.value) if node.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error(node, "a kernel cannot return a value; store results with tl.store")
        self.ret = value
        self.returned = True

    def visit_If(self, node: ast.If) -> None:
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            self.runtime_if(node, cond)
        else:
            self.visit_compound(node.body if cond else node.orelse)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported in kernels")
        it_node = node.iter
        if isinstance(it_node, ast.Call):
            fn = self.visit(it_node.func)
            args, kwargs = self.call_args(it_node)
            if fn is py.range:
                if kwargs:
                    raise self.error(it_node, "range() takes no keyword arguments")
                it = tl_range(*args)
            elif fn is tl_range or fn is static_range:
                it = fn(*args, **kwargs)
            else:
                it = self.call_function(fn, args, kwargs, it_node)
        else:
            it = self.visit(it_node)
        self.for_loop(node, it)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported in kernels")
        self.runtime_while(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        test = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ""
        if isinstance(test, tensor):
            self.sem.device_assert(test, str(msg) or f"assertion failed: {ast.unparse(node.test)}")
        elif not test:
            raise AssertionError(f"assertion failed: {msg}" if msg else f"assertion failed: {ast.unparse(node.test)}")

    # -------------------------------------------------------------- expressions
    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def _elements(self, elts: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                value = self.visit(e.value)
                if not isinstance(value, (tuple, list)):
                    raise self.error(e, f"only tuples can be unpacked with `*`, got {value!r}")
                out.extend(value)
            else:
                out.append(self.visit(e))
        return out

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> list:
        return self._elements(node.elts)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        return getattr(self.visit(node.value), node.attr)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        value = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(value, tensor):
            return value[index]
        if isinstance(index, tensor) or (isinstance(index, tuple) and _has_runtime(index)):
            raise TypeError("tuples and other compile-time objects can only be indexed by compile-time values")
        if isinstance(value, (tuple, list)) and isinstance(index, int) and not -len(value) <= index < len(value):
            raise IndexError(f"tuple index {index} is out of range for a tuple of length {len(value)}")
        return value[index.as_builtin() if isinstance(index, tl_slice) else index]

    def visit_ListComp(self, node: ast.ListComp) -> tl_tuple:
        """`[f(x) for x in t if c(x)]` over a tuple `t` (compile-time conditions): a tuple, unrolled."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self.error(node, "list comprehensions in kernels take one `for` clause")
        comp = node.generators[0]
        items = self.visit(comp.iter)
        if not isinstance(items, (tuple, list)):
            raise self.error(node, f"list comprehensions are not supported in kernels, except over a tuple "
                                   f"(`tl.tuple([f(x) for x in t])`); got {items!r}")
        saved = dict(self.lscope), dict(self.local_defs)  # the loop variable is the comprehension's own
        out = []
        try:
            for item in items:
                self.assign(comp.target, item)
                keep = True
                for cond in comp.ifs:
                    c = self.visit(cond)
                    if isinstance(c, tensor):
                        raise self.error(cond, "the conditions of a list comprehension must be compile-time values")
                    keep = keep and bool(c)
                if keep:
                    out.append(self.visit(node.elt))
        finally:
            self.lscope, self.local_defs = saved
        return tl_tuple(out)

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def binary(self, op: ast.operator, lhs: Any, rhs: Any) -> Any:
        fn = _BINARY.get(type(op))
        if fn is None:
            raise TypeError(f"operator {type(op).__name__} is not supported")
        return fn(lhs, rhs)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self.binary(node.op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return self.sem.not_(value) if isinstance(value, tensor) else not value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        return ~value

    def _logical(self, is_and: bool, a: Any, b: Any) -> Any:
        if isinstance(a, tensor) or isinstance(b, tensor):
            return self.sem.logical_and(a, b) if is_and else self.sem.logical_or(a, b)
        return (a and b) if is_and else (a or b)

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = None
        for op, comparator in zip(node.ops, node.comparators):
            if result is not None and not isinstance(result, tensor) and not result:
                return result  # Python's short circuit on compile-time values
            right = self.visit(comparator)
            if isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(left, tensor) or isinstance(right, tensor) or _has_runtime([right]):
                    raise TypeError("`in` works on compile-time values only")
                r = (left in right) if isinstance(op, ast.In) else (left not in right)
            else:
                r = _COMPARE[type(op)](left, right)
            result = r if result is None else self._logical(True, result, r)
            left = right
        return result

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for value in node.values[1:]:
            if not isinstance(result, tensor) and (not result if is_and else result):
                return result  # Python's short circuit on compile-time values
            result = self._logical(is_and, result, self.visit(value))
        return result

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            return self.runtime_ifexp(node, cond)
        return self.visit(node.body if cond else node.orelse)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                value = self.visit(v.value)
                if isinstance(value, tensor):
                    raise self.error(v, "f-strings can only format compile-time values")
                if v.conversion == ord("r"):
                    value = repr(value)
                elif v.conversion == ord("s"):
                    value = str(value)
                elif v.conversion == ord("a"):
                    value = ascii(value)
                spec = self.visit(v.format_spec) if v.format_spec is not None else ""
                parts.append(format(value, spec))
            else:
                parts.append(str(self.visit(v)))
        return "".join(parts)

    # --------------------------------------------------------------------- calls
    def call_args(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        args = self._elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            value = self.visit(kw.value)
            if kw.arg is None:
                if not isinstance(value, dict):
                    raise self.error(kw, "only dicts can be unpacked with `**`")
                kwargs.update(value)
            else:
                kwargs[kw.arg] = value
        return args, kwargs

    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)
        must_use = getattr(fn, "_must_use_result", False)
        if must_use and getattr(node, "_is_unused", False):
            reason = f" {must_use}" if isinstance(must_use, str) else ""
            raise self.error(node, f"the result of {ast.unparse(node.func)} is not used.{reason}")
        args, kwargs = self.call_args(node)
        return self.call_function(fn, args, kwargs, node)

    def call_function(self, fn: Any, args: list[Any], kwargs: dict[str, Any], node: Optional[ast.AST] = None) -> Any:
        """Call `fn` from kernel code: inline a @jit function, run a builtin, or evaluate a plain
        Python function on compile-time arguments."""
        from .jit import JITFunction

        if isinstance(fn, JITFunction):
            return self.inline(fn, args, kwargs, node or self.node)
        if is_builtin(fn) or (inspect.ismethod(fn) and isinstance(fn.__self__, tensor)):
            return fn(*args, **kwargs)
        if (isinstance(fn, type) and is_namedtuple(fn)) or any(fn is f for f in _STRUCTURAL):
            return fn(*args, **kwargs)
        if _has_runtime(args) or _has_runtime(kwargs.values()):
            name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
            raise TypeError(f"cannot call the plain Python function '{name}' on runtime values; decorate it with "
                            f"@tile.jit to inline it into the kernel, or pass only compile-time values")
        return fn(*args, **kwargs)

    def inline(self, fn: "JITFunction", args: list[Any], kwargs: dict[str, Any], node: Optional[ast.AST]) -> Any:
        if fn in self.call_stack:
            raise TypeError(f"recursive call of {fn.__name__}: @tile.jit functions are inlined and cannot recurse")
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{fn.__name__}(): {e}") from None
        bound.apply_defaults()
        scope: dict[str, Any] = {}
        # As in Triton, a callee's tl.constexpr annotations are not enforced: a tensor passed
        # there stays a tensor (Triton's fused-attention tutorial passes offs_m that way).
        for name, value in bound.arguments.items():
            scope[name] = unwrap(value)
        child = CodeGenerator(fn, self.sem, scope, is_kernel=False, call_stack=self.call_stack)
        saved = self.sem.generator
        self.sem.generator = child
        try:
            child.visit_compound(structured_returns(fn.parse()))
        except CompilationError as e:
            if node is not None and hasattr(node, "lineno"):
                e.add_call_site(self.point(node))
            raise
        finally:
            self.sem.generator = saved
        return child.ret


def _param_type(fn: "JITFunction", p: Any) -> Any:
    """The IR type of runtime parameter `p`; a pointer annotated tl.const points to constant data."""
    if p.name not in fn.const_names:
        return p.type
    if not isinstance(p.type, PointerType):
        fdef = fn.parse()
        where = SourcePoint.at(fn.file, fdef.lineno + fn.line_offset, fdef.col_offset + fn.col_offset + 1,
                               fn.source_line(fdef.lineno))
        raise CompilationError(f"parameter '{p.name}' is annotated tl.const but its argument is a {p.type}, not an "
                               f"array: tl.const marks pointers to read-only data", where)
    return PointerType(p.type.pointee, p.type.address_space, const=True)


def build_function(fn: "JITFunction", spec: "Specialization", target: Optional[str] = None,
                   options: Optional[dict[str, Any]] = None) -> Operation:
    """The tt.func of `fn` specialized by `spec` for `target` with launch `options`, verified."""
    runtime = [p for p in spec.params if p.runtime]
    block = Block([_param_type(fn, p) for p in runtime])
    for arg, p in zip(block.args, runtime):
        arg.name_hint = p.name
    attrs = {"sym_name": fn.__name__, "arg_names": [p.name for p in runtime],
             "arg_divisibility": [p.divisibility for p in runtime]}
    fdef = fn.parse()
    loc = Location(fn.file, fdef.lineno + fn.line_offset, fdef.col_offset + fn.col_offset + 1)
    func = Operation("tt.func", attrs=attrs, regions=[Region([block])], loc=loc)
    from tile.ir.builder import Builder

    from .descriptors import descriptor

    sem = Semantic(Builder(block, loc), target=target, options=options, debug=bool(fn.debug))
    gen = CodeGenerator(fn, sem, {}, is_kernel=True)
    sem.generator = gen
    push(sem)
    try:
        args = iter(block.args)
        leaves = iter([tensor(next(args)) if p.runtime else p.value for p in spec.params])
        make_descriptor = lambda *parts: descriptor(sem, *parts)  # noqa: E731
        for name, key in zip(fn.arg_names, spec.key):
            gen.lscope[name] = argument_value(key, leaves, make_descriptor, spec.tensor_maps)
            name_leaves(gen.lscope[name], name)
        gen.visit_compound(structured_returns(fdef))
    finally:
        pop()
    sem.builder.loc = loc
    sem.builder.create("tt.return")
    verify(func)
    return func
