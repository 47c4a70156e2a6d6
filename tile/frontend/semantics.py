"""The meaning of tile.language operations: type promotion, broadcasting, and the IR they build.

Operands are `tensor`s (IR values, scalar or block) or Python numbers (compile-time
constants). Promotion follows Triton (`computation_type_impl`): kinds bool < int < float;
within floats fp64 > fp32 > fp16 > bf16 (fp16 with bf16 gives fp16, as Triton documents); `/`
and `%` on 16-bit floats compute in fp32; integers follow C's usual arithmetic conversions.
A Python number meeting a tensor of the same or a higher kind adopts the tensor's dtype
(`x_f16 * 2.0` stays fp16, `x_i8 + 1` stays int8) and must fit in it.

Every builder method returns a `tensor`; errors are TypeError/ValueError with a message
naming the types or shapes involved (the code generator adds the source location).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Sequence

from tile.ir.builder import Builder
from tile.ir.types import (DTYPES, DType, PointerType, TensorType, Type, bf16, element_type, f16, f32, f64, i1, i32,
                           i64, u32, u64, with_element)

from .core import TRITON_MAX_TENSOR_NUMEL, PropagateNan, int_range, tensor, to_dtype
from .core import slice as tl_slice
from .semantics_blocks import BlockOps
from .semantics_dot_scaled import ScaledDotOps
from .semantics_extra import ExtraOps


def is_number(x: Any) -> bool:
    """A Python (or NumPy) number: a compile-time constant operand."""
    return isinstance(x, numbers.Number) and not isinstance(x, complex)


def kind(t: DType) -> int:
    """Triton's kinds: 0 bool, 1 integer, 2 float."""
    if t.is_floating:
        return 2
    return 0 if t.bits == 1 else 1


def is_ptr(t: Any) -> bool:
    return isinstance(t, PointerType)


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def describe(x: Any) -> str:
    """How an operand reads in an error message."""
    if isinstance(x, tensor):
        d = to_dtype(x.element)
        return f"a block {fmt_shape(x.shape)} of {d!r}" if x.is_block() else f"a scalar of {d!r}"
    return f"the constant {x!r}"


def python_type(x: Any) -> DType:
    """The dtype a Python number gets on its own (Triton's `to_tensor`)."""
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return i1
    if isinstance(x, numbers.Integral):
        x = int(x)
        if -2**31 <= x < 2**31:
            return i32
        if 2**31 <= x < 2**32:
            return u32
        if -2**63 <= x < 2**63:
            return i64
        if 2**63 <= x < 2**64:
            return u64
        raise ValueError(f"integer constant {x} does not fit in 64 bits")
    if isinstance(x, numbers.Real):
        a = abs(float(x))
        if a == float("inf") or a == 0.0 or a != a or 2.0**-126 <= a <= (2 - 2.0**-23) * 2.0**127:
            return f32
        return f64
    raise TypeError(f"cannot use {x!r} as a number")


def integer_promote(a: DType, b: DType) -> DType:
    """C's usual arithmetic conversions for two integer dtypes (i1 counts as signed)."""
    a_signed, b_signed = a.kind == "int", b.kind == "int"
    if a_signed == b_signed:
        return a if a.bits > b.bits else b
    if not a_signed:
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def computation_type(a: DType, a_scalar: bool, b: DType, b_scalar: bool, div_or_mod: bool) -> DType:
    """The dtype both operands of an arithmetic operator are converted to (Triton's rules)."""
    if a_scalar != b_scalar:
        scalar_t, tensor_t = (a, b) if a_scalar else (b, a)
        if kind(scalar_t) <= kind(tensor_t):
            if div_or_mod and tensor_t in (f16, bf16):
                return f32
            return tensor_t
    if f64 in (a, b):
        return f64
    if f32 in (a, b):
        return f32
    if f16 in (a, b):
        return f32 if div_or_mod else f16
    if a == bf16 and b == bf16:
        return f32 if div_or_mod else bf16
    if bf16 in (a, b):
        return f32
    if a.is_fp8 and b.is_fp8:
        return a if a == b else f16
    if a.is_floating or b.is_floating:
        raise TypeError(f"cannot combine {to_dtype(a)!r} and {to_dtype(b)!r}: convert the fp8 operand first")
    if div_or_mod and (a.kind == "uint") != (b.kind == "uint"):
        raise TypeError(f"cannot use `/`, `//` or `%` with {to_dtype(a)!r} and {to_dtype(b)!r}: they differ in "
                        f"signedness; cast one of them first")
    return integer_promote(a, b)


def check_numel(t: Type) -> None:
    """Triton's limit on the elements of one block (TRITON_MAX_TENSOR_NUMEL)."""
    if isinstance(t, TensorType) and t.numel > TRITON_MAX_TENSOR_NUMEL:
        raise ValueError(f"a block of shape {fmt_shape(t.shape)} has {t.numel} elements, more than "
                         f"TRITON_MAX_TENSOR_NUMEL ({TRITON_MAX_TENSOR_NUMEL})")


def wrap_axis(axis: Any, rank: int, what: str) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{what}: axis must be a compile-time integer, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


class Semantic(BlockOps, ExtraOps, ScaledDotOps):
    """Builds the IR of tile.language operations at `builder`'s insertion point."""

    def __init__(self, builder: Builder, generator: Any = None, target: Optional[str] = None,
                 options: Optional[dict[str, Any]] = None, debug: bool = False):
        self.builder = builder
        self.generator = generator  # the code generator: inlines @jit calls (reduce combine functions)
        self.dry_run = 0  # > 0 while a loop body is walked only to find its loop-carried variables
        self.target = target  # what the kernel is compiled for ("interpreter", "sm_90a"...); None: unknown
        self.options = {"num_warps": 4, **(options or {})}
        self.debug = debug  # @tile.jit(debug=True): integer overflow checks (sanitize_overflow)

    # ---------------------------------------------------------------------- building
    def op(self, name: str, operands: Sequence[tensor], result_type: Type, **attrs: Any) -> tensor:
        check_numel(result_type)
        return tensor(self.builder.value(name, [t.handle for t in operands], result_type, **attrs))

    def call(self, fn: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Call a @jit function (inlined) or builtin from inside the language."""
        return self.generator.call_function(fn, list(args), dict(kwargs))

    def constant(self, value: Any, t: Type) -> tensor:
        check_numel(t)
        el = element_type(t)
        if isinstance(el, PointerType):
            raise TypeError(f"cannot make a pointer from the constant {value!r}")
        if el.is_integer:
            if not isinstance(value, numbers.Integral):
                f = float(value)
                if not math.isfinite(f) or f != int(f):
                    raise TypeError(f"the constant {value!r} is not a value of {to_dtype(el)!r}")
                value = int(f)
            lo, hi = int_range(el)
            if not lo <= int(value) <= hi:
                raise ValueError(f"the constant {value!r} is out of range for {to_dtype(el)!r}")
        return tensor(self.builder.constant(value, t))

    def to_tensor(self, x: Any) -> tensor:
        if isinstance(x, tensor):
            return x
        if is_number(x):
            return self.constant(x, python_type(x))
        raise TypeError(f"expected a value (a tensor or a number), got {x!r}")

    def to_i1(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        return x if x.element == i1 else self.cast(x, i1)

    # ------------------------------------------------------------------------- casts
    def cast(self, x: Any, dst: "DType | PointerType", rounding: Optional[str] = None) -> tensor:
        x = self.to_tensor(x)
        src = x.element
        if rounding not in (None, "rtne", "rtz"):
            raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
        if src == dst:
            return x
        new_type = with_element(x.ir_type, dst)
        if is_ptr(src) or is_ptr(dst):
            if rounding is not None:
                raise ValueError("fp_downcast_rounding applies only to narrowing float conversions")
            return self._cast_pointer(x, src, dst)
        narrowing = src.is_floating and dst.is_floating and dst.bits < src.bits
        if rounding is not None and not narrowing:
            raise ValueError(f"fp_downcast_rounding applies only to narrowing float conversions, not "
                             f"{to_dtype(src)!r} to {to_dtype(dst)!r}")
        if rounding == "rtz" and dst.is_fp8:  # as in Triton: no fp8 conversion rounds toward zero
            raise ValueError(f"conversions to {to_dtype(dst)!r} follow its own rounding rule; "
                             f"fp_downcast_rounding='rtz' is not supported for it")
        attrs = {"rounding": "rtz"} if rounding == "rtz" else {}
        return self.op("arith.cast", [x], new_type, **attrs)

    def _cast_pointer(self, x: tensor, src: Any, dst: Any) -> tensor:
        if is_ptr(src) and is_ptr(dst):
            return self.op("arith.bitcast", [x], with_element(x.ir_type, dst))
        if is_ptr(src) and dst.is_integer:
            as_int = self.op("tt.ptr_to_int", [x], with_element(x.ir_type, i64))
            return self.cast(as_int, dst)
        if is_ptr(dst) and src.is_integer:
            return self.op("tt.int_to_ptr", [self.cast(x, i64)], with_element(x.ir_type, dst))
        raise TypeError(f"cannot cast {to_dtype(src)!r} to {to_dtype(dst)!r}")

    def bitcast(self, x: Any, dst: "DType | PointerType") -> tensor:
        x = self.to_tensor(x)
        src = x.element
        if src == dst:
            return x
        if is_ptr(src) or is_ptr(dst):
            return self.cast(x, dst)
        if src.bits != dst.bits:
            raise ValueError(f"cannot bitcast {to_dtype(src)!r} ({src.bits} bits) to {to_dtype(dst)!r} "
                             f"({dst.bits} bits)")
        return self.op("arith.bitcast", [x], with_element(x.ir_type, dst))

    # ------------------------------------------------------------------------ shapes
    def splat(self, x: tensor, shape: Sequence[int]) -> tensor:
        if not shape:
            return x
        return self.op("tt.splat", [x], TensorType(tuple(shape), x.element))

    def broadcast_to(self, x: Any, shape: Sequence[int]) -> tensor:
        x = self.to_tensor(x)
        shape = tuple(shape)
        if not x.is_block():
            return self.splat(x, shape)
        src = x.shape
        if src == shape:
            return x
        if len(src) != len(shape) or any(s != d and s != 1 for s, d in zip(src, shape)):
            raise ValueError(f"cannot broadcast a block of shape {fmt_shape(src)} to shape {fmt_shape(shape)}")
        return self.op("tt.broadcast", [x], TensorType(shape, x.element))

    def broadcast_values(self, a: tensor, b: tensor) -> tuple[tensor, tensor]:
        """Give two values one shape (NumPy's rules: scalars splat, size-1 dims stretch)."""
        if not a.is_block() and not b.is_block():
            return a, b
        if not a.is_block():
            return self.splat(a, b.shape), b
        if not b.is_block():
            return a, self.splat(b, a.shape)
        sa, sb = a.shape, b.shape
        if sa == sb:
            return a, b
        while len(a.shape) < len(b.shape):
            a = self.expand_dims(a, 0)
        while len(b.shape) < len(a.shape):
            b = self.expand_dims(b, 0)
        shape = []
        for i, (x, y) in enumerate(zip(a.shape, b.shape)):
            if x != y and x != 1 and y != 1:
                raise ValueError(f"shape mismatch: {fmt_shape(sa)} and {fmt_shape(sb)} cannot be broadcast "
                                 f"together (dimension {i}: {x} vs {y})")
            shape.append(y if x == 1 else x)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    def broadcast_all(self, *values: tensor) -> list[tensor]:
        out = list(values)
        for _ in range(2):  # a second sweep spreads the final shape to the first operands
            for i in range(1, len(out)):
                out[0], out[i] = self.broadcast_values(out[0], out[i])
        return out

    def expand_dims(self, x: Any, axis: Any) -> tensor:
        x = self.to_tensor(x)
        axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
        ndim = len(x.shape) + len(axes)
        axes = sorted(wrap_axis(a, ndim, "expand_dims") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"expand_dims: repeated axis in {axis!r}")
        for a in axes:
            if not x.is_block():
                x = self.splat(x, (1,))
                continue
            shape = list(x.shape)
            shape.insert(a, 1)
            x = self.op("tt.expand_dims", [x], TensorType(tuple(shape), x.element), axis=a)
        return x

    def reshape(self, x: Any, shape: Sequence[int], can_reorder: bool = False) -> tensor:
        x = self.to_tensor(x)
        shape = tuple(shape)
        if not shape or any(not isinstance(d, int) or d < 1 for d in shape):
            raise ValueError(f"reshape: the shape must be positive compile-time integers, got {shape!r}")
        n = 1
        for d in shape:
            n *= d
        if n != x.numel:
            raise ValueError(f"cannot reshape a block of shape {fmt_shape(x.shape)} ({x.numel} elements) to "
                             f"{fmt_shape(shape)} ({n} elements)")
        if not x.is_block():
            return self.splat(x, shape)
        if shape == x.shape:
            return x
        attrs = {"can_reorder": True} if can_reorder else {}
        return self.op("tt.reshape", [x], TensorType(shape, x.element), **attrs)

    def trans(self, x: Any, dims: Optional[Sequence[int]]) -> tensor:
        x = self.to_tensor(x)
        rank = len(x.shape)
        if dims is None:
            if rank < 2:
                return x
            if rank != 2:
                raise ValueError(f"trans of a rank-{rank} block needs the permutation, e.g. trans(x, 2, 0, 1)")
            dims = (1, 0)
        dims = tuple(dims)
        if sorted(dims) != list(range(rank)):
            raise ValueError(f"permute: {dims!r} is not a permutation of the {rank} dimensions of "
                             f"{fmt_shape(x.shape)}")
        if dims == tuple(range(rank)):
            return x
        shape = tuple(x.shape[d] for d in dims)
        return self.op("tt.trans", [x], TensorType(shape, x.element), order=list(dims))

    def subscript(self, x: tensor, index: Any) -> tensor:
        """`x[:, None]`: `None` inserts a size-1 dimension, `:` keeps one."""
        items = index if isinstance(index, tuple) else (index,)
        items = tuple(s.as_builtin() if isinstance(s, tl_slice) else s for s in items)
        kept = sum(1 for s in items if isinstance(s, slice))
        if kept > len(x.shape):
            raise IndexError(f"too many `:` for a block of shape {fmt_shape(x.shape)}")
        dim = 0
        for s in items:
            if s is None:
                x = self.expand_dims(x, dim)
                dim += 1
            elif isinstance(s, slice) and s.start is None and s.stop is None and s.step is None:
                dim += 1
            else:
                raise ValueError(f"unsupported tensor index {s!r}: only `None` and `:` are supported")
        return x

    # ------------------------------------------------------------------ arithmetic
    def binary_operands(self, a: Any, b: Any, allow_lhs_ptr: bool = False, allow_rhs_ptr: bool = False,
                        arithmetic_check: bool = True, div_or_mod: bool = False) -> tuple[tensor, tensor]:
        """Promote and broadcast two operands to one type and shape (Triton's
        `binary_op_type_checking_impl`)."""
        a_py, b_py = is_number(a), is_number(b)
        for v, py in ((a, a_py), (b, b_py)):
            if not py and not isinstance(v, tensor):
                raise TypeError(f"unsupported operand {v!r}")
        ta = python_type(a) if a_py else a.element
        tb = python_type(b) if b_py else b.element
        self._check_ptr(ta, tb, allow_lhs_ptr)
        self._check_ptr(tb, ta, allow_rhs_ptr)
        if arithmetic_check and not is_ptr(ta) and not is_ptr(tb):
            ret = computation_type(ta, a_py, tb, b_py, div_or_mod)
            for v, py in ((a, a_py), (b, b_py)):
                if py and ret.is_integer:
                    if v < 0 and ret.kind == "uint":
                        raise ValueError(f"cannot combine a {to_dtype(ret)!r} value with the negative constant {v}; "
                                         f"cast one of them explicitly")
                    lo, hi = int_range(ret)
                    if not lo <= v <= hi:
                        raise ValueError(f"the constant {v} is out of range for {to_dtype(ret)!r}")
            # a constant meeting a block is built at the block's shape (no splat)
            a = self.constant(a, with_element(b.ir_type, ret) if not b_py else ret) if a_py else self.cast(a, ret)
            b = self.constant(b, with_element(a.ir_type, ret)) if b_py else self.cast(b, ret)
        else:
            a, b = self.to_tensor(a), self.to_tensor(b)
        return self.broadcast_values(a, b)

    @staticmethod
    def _check_ptr(t: Any, other: Any, allow: bool) -> None:
        if not is_ptr(t):
            return
        if not allow or (is_ptr(other) and t != other) or (not is_ptr(other) and other.is_floating):
            raise TypeError(f"invalid operands of type {to_dtype(t)!r} and {to_dtype(other)!r}")

    def _same_type(self, name: str, a: tensor, b: tensor, **attrs: Any) -> tensor:
        return self.op(name, [a, b], a.ir_type, **attrs)

    def check_overflow(self, name: str, a: tensor, b: tensor, sanitize_overflow: bool) -> None:
        """In debug kernels (@tile.jit(debug=True)), assert that integer `a name b` (add, sub, mul)
        fits its type: computed in int64 and compared with the type's range (Triton's
        sanitize_overflow; 64-bit integers are not checked)."""
        el = a.element
        if not (self.debug and sanitize_overflow) or is_ptr(el) or not el.is_integer or not 8 <= el.bits < 64:
            return
        wide = self.op(f"arith.{name}", [self.cast(a, i64), self.cast(b, i64)], with_element(a.ir_type, i64))
        lo, hi = int_range(el)
        ok = self.logical_and(self.compare("le", wide, hi), self.compare("ge", wide, lo))
        self.device_assert(ok, f"int{el.bits} overflow detected for operation {name}")

    def add(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_operands(a, b, True, True)
        if is_ptr(a.element) and is_ptr(b.element):
            raise TypeError("cannot add two pointers")
        if is_ptr(b.element):
            a, b = b, a
        if is_ptr(a.element):
            return self.addptr(a, b)
        self.check_overflow("add", a, b, sanitize_overflow)
        return self._same_type("arith.add", a, b)

    def addptr(self, p: tensor, offset: tensor) -> tensor:
        el = offset.element
        if is_ptr(el) or not el.is_integer:
            raise TypeError(f"a pointer offset must be an integer, got {describe(offset)}")
        if el.kind == "uint" and el.bits < 64:
            # addptr reads offsets as signed: zero-extend unsigned ones first
            offset = self.cast(offset, i64)
        p, offset = self.broadcast_values(p, offset)
        return self.op("tt.addptr", [p, offset], p.ir_type)

    def sub(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_operands(a, b, True, False)
        if is_ptr(a.element):
            if b.element.kind == "uint" and b.element.bits < 64:
                b = self.cast(b, i64)
            return self.addptr(a, self.neg(b))
        self.check_overflow("sub", a, b, sanitize_overflow)
        return self._same_type("arith.sub", a, b)

    def mul(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_operands(a, b)
        self.check_overflow("mul", a, b, sanitize_overflow)
        return self._same_type("arith.mul", a, b)

    def truediv(self, a: Any, b: Any, ieee_rounding: bool = False) -> tensor:
        """`/`: like Triton, f32 division may be approximate (within 2 ulp; div.full.f32 on
        NVIDIA GPUs) unless `ieee_rounding` (tl.div_rn); other float types round correctly."""
        a, b = self.binary_operands(a, b, div_or_mod=True)
        if a.element.is_integer:
            a, b = self.cast(a, f32), self.cast(b, f32)
        if a.element == f32 and not ieee_rounding:
            return self._same_type("arith.div", a, b, approx=True)
        return self._same_type("arith.div", a, b)

    def floordiv(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_operands(a, b, div_or_mod=True)
        if not a.element.is_integer:
            raise TypeError(f"`//` is only defined for integers, got {to_dtype(a.element)!r}; "
                            f"use `/` (and tl.floor) for floats")
        return self._same_type("arith.div", a, b)

    def mod(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_operands(a, b, div_or_mod=True)
        return self._same_type("arith.rem", a, b)

    def _bitwise(self, name: str, symbol: str, a: Any, b: Any) -> tensor:
        a, b = self.binary_operands(a, b)
        if not a.element.is_integer:
            raise TypeError(f"bitwise `{symbol}` needs integer operands, got {to_dtype(a.element)!r}")
        return self._same_type(name, a, b)

    def and_(self, a: Any, b: Any) -> tensor:
        return self._bitwise("arith.and", "&", a, b)

    def or_(self, a: Any, b: Any) -> tensor:
        return self._bitwise("arith.or", "|", a, b)

    def xor_(self, a: Any, b: Any) -> tensor:
        return self._bitwise("arith.xor", "^", a, b)

    def shl(self, a: Any, b: Any) -> tensor:
        return self._bitwise("arith.shl", "<<", a, b)

    def shr(self, a: Any, b: Any) -> tensor:
        return self._bitwise("arith.shr", ">>", a, b)

    def compare(self, predicate: str, a: Any, b: Any) -> tensor:
        pa = isinstance(a, tensor) and is_ptr(a.element)
        pb = isinstance(b, tensor) and is_ptr(b.element)
        if pa or pb:
            if not (pa and pb) or a.element != b.element:
                raise TypeError(f"cannot compare {describe(a)} with {describe(b)}")
            a, b = self.broadcast_values(a, b)
        else:
            a, b = self.binary_operands(a, b)
        return self.op("arith.cmp", [a, b], with_element(a.ir_type, i1), predicate=predicate)

    def neg(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        if is_ptr(x.element):
            raise TypeError(f"cannot negate {describe(x)}")
        return self.op("arith.neg", [x], x.ir_type)

    def invert(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        if is_ptr(x.element) or not x.element.is_integer:
            raise TypeError(f"bitwise `~` needs an integer operand, got {describe(x)}")
        return self.op("arith.not", [x], x.ir_type)

    def not_(self, x: Any) -> tensor:
        return self.op("arith.not", [self.to_i1(x)], with_element(self.to_tensor(x).ir_type, i1))

    def logical_and(self, a: Any, b: Any) -> tensor:
        a, b = self.broadcast_values(self.to_i1(a), self.to_i1(b))
        return self._same_type("arith.and", a, b)

    def logical_or(self, a: Any, b: Any) -> tensor:
        a, b = self.broadcast_values(self.to_i1(a), self.to_i1(b))
        return self._same_type("arith.or", a, b)

    def where(self, cond: Any, x: Any, y: Any) -> tensor:
        cond = self.to_i1(cond)
        x, y = self.binary_operands(x, y, True, True)
        if cond.is_block() or x.is_block():
            cond, x, y = self.broadcast_all(cond, x, y)
        return self.op("arith.select", [cond, x, y], x.ir_type)

    def minimum(self, a: Any, b: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        return self._min_max("arith.min", a, b, propagate_nan)

    def maximum(self, a: Any, b: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        return self._min_max("arith.max", a, b, propagate_nan)

    def _min_max(self, name: str, a: Any, b: Any, propagate_nan: Any) -> tensor:
        a, b = self.binary_operands(a, b)
        attrs = {"propagate_nan": True} if a.element.is_floating and propagate_nan == PropagateNan.ALL else {}
        return self._same_type(name, a, b, **attrs)

    def clamp(self, x: Any, lo: Any, hi: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        x = self.to_tensor(x)
        if not x.element.is_floating:
            raise TypeError(f"clamp is for floats, got {describe(x)}; use minimum/maximum for integers")
        return self.minimum(self.maximum(x, lo, propagate_nan), hi, propagate_nan)

    # ------------------------------------------------------------------------ math
    FLOAT_32_64 = ("f32", "f64")

    def unary_math(self, name: str, x: Any, allowed: Optional[Sequence[str]] = FLOAT_32_64,
                   ieee_rounding: bool = False) -> tensor:
        """math.<name> on x. Like Triton, f32 sqrt may be approximate (sqrt.approx) unless
        `ieee_rounding` (tl.sqrt_rn)."""
        if is_number(x):
            x = self.constant(x, python_type(float(x)))
        x = self.to_tensor(x)
        if allowed is not None and (is_ptr(x.element) or x.element.name not in allowed):
            names = [to_dtype(DTYPES[n]).name for n in allowed]
            raise ValueError(f"tl.{name} expects one of {names}, got {to_dtype(x.element).name}; "
                             f"convert with .to(tl.float32) first")
        if name == "sqrt" and x.element == f32 and not ieee_rounding:
            return self.op("math.sqrt", [x], x.ir_type, approx=True)
        return self.op(f"math.{name}", [x], x.ir_type)

    def abs(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        if is_ptr(x.element):
            raise TypeError(f"abs of {describe(x)}")
        if x.element.kind == "uint" or x.element == i1:
            return x
        return self.op("math.abs", [x], x.ir_type)

    def fma(self, x: Any, y: Any, z: Any) -> tensor:
        x, y = self.binary_operands(x, y)
        z, x = self.binary_operands(z, x)
        z, y = self.binary_operands(z, y)
        if x.element.name not in self.FLOAT_32_64:
            raise ValueError(f"tl.fma expects fp32 or fp64 operands, got {to_dtype(x.element).name}")
        return self.op("math.fma", [x, y, z], x.ir_type)

    def umulhi(self, x: Any, y: Any) -> tensor:
        x, y = self.binary_operands(x, y)
        if x.element.name not in ("i32", "u32", "i64", "u64"):
            raise ValueError(f"tl.umulhi expects 32- or 64-bit integers, got {to_dtype(x.element).name}")
        return self._same_type("math.umulhi", x, y)

