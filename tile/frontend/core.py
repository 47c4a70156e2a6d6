"""What kernel code holds in its variables: dtypes, constexprs, and `tensor` (a wrapped IR value).

Compile-time values (numbers, dtypes, tuples of them) stay plain Python values while the
frontend walks the kernel; a runtime value is a `tensor` around an IR `Value` (a scalar or a
block of static shape). Operators on tensors call the semantics of the kernel being built,
found through `current()`, which the code generator sets while it runs.
"""
from __future__ import annotations

import builtins
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from tile.ir.core import Value
from tile.ir.types import DTYPES, DType, PointerType, TensorType, Type, element_type, shape_of

if TYPE_CHECKING:
    from .semantics import Semantic

T = TypeVar("T")

TRITON_MAX_TENSOR_NUMEL = 1048576  # Triton's largest number of elements in one block (2**20)

# ----------------------------------------------------------------------------- context

_STACK: list["Semantic"] = []


def current() -> "Semantic":
    """The semantics of the kernel being compiled; only valid inside a @tile.jit function."""
    if not _STACK:
        raise RuntimeError("tile.language functions can only be called inside a @tile.jit function")
    return _STACK[-1]


def compiling() -> bool:
    """Whether a @tile.jit function is being compiled (so `current()` is valid)."""
    return bool(_STACK)


def push(sem: "Semantic") -> None:
    _STACK.append(sem)


def pop() -> None:
    _STACK.pop()


def builtin(fn: T) -> T:
    """Mark `fn` as a tile.language builtin: the frontend may call it with runtime values."""
    fn.__tile_builtin__ = True  # type: ignore[attr-defined]
    return fn


def is_builtin(fn: Any) -> bool:
    return getattr(fn, "__tile_builtin__", False) is True


def must_use_result(x: Any, s: Any = True) -> Any:
    """Decorate a @tile.jit function (or builtin) whose result must be used: a call whose value is
    dropped (a statement of its own) is a CompilationError. `@must_use_result("why")` adds the
    reason to the message.

        @tile.must_use_result("tl.advance returns the moved pointer; it does not move its argument")
        @tile.jit
        def advance(p, n):
            return p + n
    """
    if isinstance(x, str):
        return lambda fn: must_use_result(fn, x)
    x._must_use_result = s
    return x


# ------------------------------------------------------------------------------ dtypes

# tile IR name -> (Triton's name, tl attribute name)
_NAMES = {
    "i1": ("int1", "int1"), "i8": ("int8", "int8"), "i16": ("int16", "int16"), "i32": ("int32", "int32"),
    "i64": ("int64", "int64"), "u8": ("uint8", "uint8"), "u16": ("uint16", "uint16"),
    "u32": ("uint32", "uint32"), "u64": ("uint64", "uint64"), "f16": ("fp16", "float16"),
    "bf16": ("bf16", "bfloat16"), "f32": ("fp32", "float32"), "f64": ("fp64", "float64"),
    "f8e4nv": ("fp8e4nv", "float8e4nv"), "f8e5": ("fp8e5", "float8e5"), "f8e4b15": ("fp8e4b15", "float8e4b15"),
    "f8e4b8": ("fp8e4b8", "float8e4b8"), "f8e5b16": ("fp8e5b16", "float8e5b16"),
}  # fmt: skip
_BY_NAME: dict[str, str] = {}
for _ir, (_triton, _attr) in _NAMES.items():
    _BY_NAME[_ir] = _BY_NAME[_triton] = _BY_NAME[_attr] = _ir


class dtype:
    """A scalar element type as kernels see it (`tl.float32`), with Triton's query methods."""

    __slots__ = ("ir",)

    def __init__(self, name: "str | DType"):
        if isinstance(name, DType):
            self.ir = name
        elif name in _BY_NAME:
            self.ir = DTYPES[_BY_NAME[name]]
        else:
            raise ValueError(f"unknown dtype {name!r}")

    @property
    def name(self) -> str:
        return _NAMES[self.ir.name][0]

    def __repr__(self) -> str:
        return f"tl.{_NAMES[self.ir.name][1]}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dtype) and other.ir == self.ir

    def __hash__(self) -> int:
        return hash(self.ir)

    # Triton's queries --------------------------------------------------------------------
    def is_floating(self) -> bool:
        return self.ir.is_floating

    def is_standard_floating(self) -> bool:
        return self.ir.is_floating and not self.ir.is_fp8

    def is_int(self) -> bool:
        return self.ir.is_integer

    is_integer_type = is_int

    def is_int_signed(self) -> bool:
        return self.ir.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.ir.kind == "uint"

    def is_bool(self) -> bool:
        return self.ir.is_integer and self.ir.bits == 1

    is_int1 = is_bool

    def is_fp8(self) -> bool:
        return self.ir.is_fp8

    def is_fp8e4nv(self) -> bool:
        return self.ir.name == "f8e4nv"

    def is_fp8e5(self) -> bool:
        return self.ir.name == "f8e5"

    def is_fp8e4b15(self) -> bool:
        return self.ir.name == "f8e4b15"

    def is_fp8e4b8(self) -> bool:
        return self.ir.name == "f8e4b8"

    def is_fp8e5b16(self) -> bool:
        return self.ir.name == "f8e5b16"

    def is_fp16(self) -> bool:
        return self.ir.name == "f16"

    def is_bf16(self) -> bool:
        return self.ir.name == "bf16"

    def is_fp32(self) -> bool:
        return self.ir.name == "f32"

    def is_fp64(self) -> bool:
        return self.ir.name == "f64"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_void(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        return self.ir.bits

    @property
    def int_bitwidth(self) -> int:
        return self.ir.bits

    @property
    def fp_mantissa_width(self) -> int:
        return self.ir.mantissa_bits

    @property
    def exponent_bias(self) -> int:
        from tile.ir.float8 import FORMATS

        if not self.ir.is_floating:
            raise AttributeError(f"{self!r} is not a float type and has no exponent bias")
        fmt = FORMATS.get(self.ir.name)
        return fmt.bias if fmt is not None else (1 << (self.ir.exponent_bits - 1)) - 1

    @property
    def scalar(self) -> "dtype":
        return self

    def get_int_max_value(self) -> int:
        return int_range(self.ir)[1]

    def get_int_min_value(self) -> int:
        return int_range(self.ir)[0]


int1 = dtype("i1")
int8 = dtype("i8")
int16 = dtype("i16")
int32 = dtype("i32")
int64 = dtype("i64")
uint8 = dtype("u8")
uint16 = dtype("u16")
uint32 = dtype("u32")
uint64 = dtype("u64")
float8e4nv = dtype("f8e4nv")
float8e5 = dtype("f8e5")
float8e4b15 = dtype("f8e4b15")
float8e4b8 = dtype("f8e4b8")
float8e5b16 = dtype("f8e5b16")
float16 = dtype("f16")
bfloat16 = dtype("bf16")
float32 = dtype("f32")
float64 = dtype("f64")


class _VoidType(dtype):
    """Triton's `tl.void`: the type of no value (a function result that is not used)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.ir = _VOID_IR

    @property
    def name(self) -> str:
        return "void"

    def __repr__(self) -> str:
        return "tl.void"

    def is_void(self) -> bool:
        return True


_VOID_IR = DType("void", "void", 0)
void = _VoidType()


class pointer_type(dtype):
    """The type of an address of `element_ty` values (`tl.pointer_type(tl.float32)`); `const`
    marks read-only data (what a kernel parameter annotated `tl.const` gets)."""

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        self.element_ty = element_ty
        self.ir = PointerType(element_ty.ir, address_space, const)  # type: ignore[assignment]

    @property
    def name(self) -> str:
        return f"pointer<{self.element_ty.name}>"

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r}{', const=True' if self.ir.const else ''})"

    def is_ptr(self) -> bool:
        return True

    def is_const(self) -> bool:
        return self.ir.const

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    is_integer_type = is_int

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    is_int1 = is_bool

    def is_fp8(self) -> bool:
        return False

    def is_standard_floating(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        return 64


class block_type:
    """The type of a block of values: element type and static shape (`x.type`)."""

    __slots__ = ("element_ty", "shape")

    def __init__(self, element_ty: dtype, shape: tuple[int, ...]):
        self.element_ty = element_ty
        self.shape = tuple(shape)

    scalar = property(lambda self: self.element_ty)
    numel = property(lambda self: _product(self.shape))

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, block_type) and (other.element_ty, other.shape) == (self.element_ty, self.shape)

    def __hash__(self) -> int:
        return hash((self.element_ty, self.shape))

    def __repr__(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty!r}>"


def _product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def int_range(t: DType) -> tuple[int, int]:
    """The smallest and largest integer of an integer dtype (i1 holds 0 and 1)."""
    if t.bits == 1:
        return 0, 1
    if t.kind == "uint":
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def to_dtype(t: "DType | PointerType") -> dtype:
    """The language dtype of an IR scalar type."""
    if isinstance(t, PointerType):
        return pointer_type(to_dtype(t.pointee), t.address_space, t.const)
    return dtype(t)


def ir_type_of(t: Any) -> "DType | PointerType":
    """The IR scalar type of a language dtype (also accepts IR types, dtype names, and block
    types, which stand for their element type as in Triton's casts)."""
    if isinstance(t, _VoidType):
        raise TypeError("tl.void is the type of no value; it cannot type a value")
    if isinstance(t, block_type):
        t = t.element_ty
    if isinstance(t, dtype):
        return t.ir
    if isinstance(t, (DType, PointerType)):
        return t
    if isinstance(t, str):
        return dtype(t).ir
    raise TypeError(f"expected a dtype such as tl.float32, got {t!r}")


# ---------------------------------------------------------------------------- constexpr


class const:
    """An annotation for pointer parameters of kernels: `x_ptr: tl.const` points to read-only data.
    The pointer's type says so (`ptr<f32, const>`), and a tl.store or atomic through it, or
    through any pointer computed from it, is a compile error."""


class constexpr_type:
    """The type of a compile-time value (`tl.constexpr(4).type`): the value itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


class slice:  # noqa: A001 - Triton's name
    """A slice in a kernel's subscript, `x[:, None]` (Triton's tl.slice); only `:` applies to blocks."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start: Any, stop: Any, step: Any):
        self.start, self.stop, self.step = start, stop, step

    def as_builtin(self) -> "builtins.slice":
        return builtins.slice(unwrap(self.start), unwrap(self.stop), unwrap(self.step))

    def __repr__(self) -> str:
        return f"tl.slice({self.start!r}, {self.stop!r}, {self.step!r})"


class constexpr:
    """A compile-time value. As an annotation (`BLOCK: tl.constexpr`) it marks a parameter whose
    value is part of the compiled kernel; `X = tl.constexpr(4)` makes a global readable by kernels."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    @property
    def type(self) -> constexpr_type:
        return constexpr_type(self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == unwrap(other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)


def unwrap(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


class PropagateNan(IntEnum):
    """Whether `maximum`/`minimum` return NaN when an operand is NaN (ALL) or the other operand (NONE)."""

    NONE = 0
    ALL = 0xFFFF


# ------------------------------------------------------------------------------- tensor


def _sem() -> "Semantic":
    return current()


class tensor:
    """A runtime value of a kernel: an IR value (scalar or block) with Triton's operators."""

    __slots__ = ("handle",)

    def __init__(self, handle: Value):
        self.handle = handle

    # type queries ------------------------------------------------------------------------
    @property
    def ir_type(self) -> Type:
        return self.handle.type

    @property
    def element(self) -> "DType | PointerType":
        return element_type(self.handle.type)

    @property
    def dtype(self) -> dtype:
        return to_dtype(self.element)

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.handle.type)

    @property
    def numel(self) -> int:
        return _product(self.shape)

    @property
    def type(self) -> "dtype | block_type":
        if isinstance(self.handle.type, TensorType):
            return block_type(self.dtype, self.shape)
        return self.dtype

    def is_block(self) -> bool:
        return isinstance(self.handle.type, TensorType)

    def __repr__(self) -> str:
        return f"tensor<{self.handle.type}>"

    def __bool__(self) -> bool:
        raise TypeError("a runtime value cannot be used as a Python bool here; conditions of `if`, `while`, "
                        "`and`, `or`, `not` and ternaries are compiled, but Python code such as function "
                        "calls on constants cannot branch on runtime values")

    def __index__(self) -> int:
        raise TypeError("a runtime value cannot be used where a compile-time integer is required")

    def __iter__(self):
        raise TypeError("a tensor cannot be iterated or unpacked in a kernel")

    __hash__ = object.__hash__  # identity; __eq__ builds IR

    # arithmetic ----------------------------------------------------------------------------
    def __add__(self, o): return _sem().add(self, o)
    def __radd__(self, o): return _sem().add(o, self)
    def __sub__(self, o): return _sem().sub(self, o)
    def __rsub__(self, o): return _sem().sub(o, self)
    def __mul__(self, o): return _sem().mul(self, o)
    def __rmul__(self, o): return _sem().mul(o, self)
    def __truediv__(self, o): return _sem().truediv(self, o)
    def __rtruediv__(self, o): return _sem().truediv(o, self)
    def __floordiv__(self, o): return _sem().floordiv(self, o)
    def __rfloordiv__(self, o): return _sem().floordiv(o, self)
    def __mod__(self, o): return _sem().mod(self, o)
    def __rmod__(self, o): return _sem().mod(o, self)
    def __and__(self, o): return _sem().and_(self, o)
    def __rand__(self, o): return _sem().and_(o, self)
    def __or__(self, o): return _sem().or_(self, o)
    def __ror__(self, o): return _sem().or_(o, self)
    def __xor__(self, o): return _sem().xor_(self, o)
    def __rxor__(self, o): return _sem().xor_(o, self)
    def __lshift__(self, o): return _sem().shl(self, o)
    def __rlshift__(self, o): return _sem().shl(o, self)
    def __rshift__(self, o): return _sem().shr(self, o)
    def __rrshift__(self, o): return _sem().shr(o, self)
    def __neg__(self): return _sem().neg(self)
    def __pos__(self): return self
    def __invert__(self): return _sem().invert(self)
    def __lt__(self, o): return _sem().compare("lt", self, o)
    def __le__(self, o): return _sem().compare("le", self, o)
    def __gt__(self, o): return _sem().compare("gt", self, o)
    def __ge__(self, o): return _sem().compare("ge", self, o)
    def __eq__(self, o): return _sem().compare("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return _sem().compare("ne", self, o)  # type: ignore[override]

    def logical_and(self, o): return _sem().logical_and(self, o)
    def logical_or(self, o): return _sem().logical_or(self, o)

    # indexing and shapes -------------------------------------------------------------------
    def __getitem__(self, index: Any) -> "tensor":
        return _sem().subscript(self, index)

    def to(self, dtype: Any, fp_downcast_rounding: Optional[str] = None, bitcast: bool = False) -> "tensor":
        sem = _sem()
        target = ir_type_of(unwrap(dtype))
        if unwrap(bitcast):
            return sem.bitcast(self, target)
        return sem.cast(self, target, unwrap(fp_downcast_rounding))

    def reshape(self, *shape: Any, can_reorder: bool = False) -> "tensor":
        return _sem().reshape(self, _shape_args(shape), unwrap(can_reorder))

    def view(self, *shape: Any) -> "tensor":
        return _sem().reshape(self, _shape_args(shape), True)

    def trans(self, *dims: Any) -> "tensor":
        return _sem().trans(self, _shape_args(dims) if dims else None)

    permute = trans

    @property
    def T(self) -> "tensor":
        return _sem().trans(self, None)

    def broadcast_to(self, *shape: Any) -> "tensor":
        return _sem().broadcast_to(self, _shape_args(shape))

    def expand_dims(self, axis: Any) -> "tensor":
        return _sem().expand_dims(self, unwrap(axis))

    def ravel(self, can_reorder: bool = False) -> "tensor":
        return _sem().reshape(self, (self.numel,), bool(unwrap(can_reorder)))

    # functions of tile.language available as methods (Triton's tensor members)
    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = _member_functions().get(name)
        if fn is None:
            raise AttributeError(f"a tensor has no attribute {name!r}")
        return builtin(lambda *args, **kwargs: _sem().call(fn, (self, *args), kwargs))


def _shape_args(args: tuple) -> tuple[int, ...]:
    """Shapes may be passed as `f(2, 3)` or `f((2, 3))`."""
    if len(args) == 1 and isinstance(unwrap(args[0]), (tuple, list)):
        args = tuple(unwrap(args[0]))
    return tuple(unwrap(a) for a in args)


_MEMBERS: dict[str, Callable[..., Any]] = {}


def _member_functions() -> dict[str, Callable[..., Any]]:
    if not _MEMBERS:
        import tile.language as tl

        for name in ("sum", "max", "min", "argmax", "argmin", "xor_sum", "cumsum", "cumprod", "reduce",
                     "associative_scan", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf",
                     "floor", "ceil", "abs", "sigmoid", "softmax"):
            _MEMBERS[name] = getattr(tl, name)
        for name in ("split", "flip", "gather", "histogram", "reduce_or", "cdiv", "cast", "store", "sqrt_rn",
                     "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg",
                     "atomic_xor"):
            _MEMBERS[name] = getattr(tl, name)
    return _MEMBERS


__all__ = ["current", "compiling", "push", "pop", "builtin", "is_builtin", "must_use_result", "dtype", "pointer_type",
           "block_type", "void", "const", "constexpr_type", "slice", "TRITON_MAX_TENSOR_NUMEL",
           "constexpr", "unwrap", "tensor", "PropagateNan", "to_dtype", "ir_type_of", "int_range", "int1", "int8",
           "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float8e4nv", "float8e5", "float8e4b15",
           "float8e4b8", "float8e5b16", "float16", "bfloat16", "float32", "float64"]
