"""Argument specialization: what a kernel is compiled for, derived from the launch arguments.

Like Triton, per runtime argument:
    array (anything `describe_argument` accepts)  -> ptr<dtype>, divisibility 16 if the address is 16-byte aligned
    int == 1                                      -> folded into the kernel as the constant 1 (not a parameter)
    other int                                     -> i32 if it fits, else i64 (u64 above), divisibility 16 if % 16 == 0
    float -> f32, bool -> i1, None -> the constant None
and constexpr parameters are folded. The key is a tuple of small tuples, one per parameter,
computed on every launch, so it is built with a few type checks and no allocation beyond
the tuples themselves:

    ("ptr", "f32", 16)   ("i32", 16)   ("c", int, 1024)
"""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple, Optional

import numpy as np

from tile.ir.types import DTYPES, PointerType, Type
from tile.runtime.arrays import TORCH_DTYPE_NAMES, DeviceArray, describe_argument, torch_dtype_name
from tile.runtime.cuda_driver import is_torch_tensor

from .core import constexpr

_I32 = (-2**31, 2**31)


def _int_key(v: int, specialize: bool) -> tuple:
    if specialize and v == 1:
        return ("c", int, 1)
    div = 16 if specialize and v % 16 == 0 else 1
    if _I32[0] <= v < _I32[1]:
        return ("i32", div)
    if -2**63 <= v < 2**63:
        return ("i64", div)
    if 0 <= v < 2**64:
        return ("u64", div)
    raise ValueError(f"integer argument {v} does not fit in 64 bits")


def arg_key(v: Any, specialize: bool = True) -> tuple:
    """The specialization of one runtime argument (see the module docstring)."""
    return launch_arg(v)[0] if specialize else launch_arg_nospec(v)[0]


def _generic_arg(v: Any, specialize: bool) -> tuple[tuple, Any]:
    t = type(v)
    if t is int:
        return _int_key(v, specialize), v
    if t is float:
        return ("f32", 1), v
    if t is bool:
        return ("i1", 1), v
    if v is None:
        return ("c", None, None), None
    if isinstance(v, (numbers.Number, np.bool_)):
        return _number_key(v, specialize), python_value(v)
    info = describe_argument(v)
    aligned = 16 if specialize and info.address % 16 == 0 else 1
    return ("ptr", info.dtype, aligned, info.is_device), info.address


def _int_arg(v: int) -> tuple[tuple, int]:
    return _int_key(v, True), v


def _torch_arg(t: Any) -> tuple[tuple, int]:
    address = t.data_ptr()
    name = TORCH_DTYPE_NAMES.get(t.dtype) or torch_dtype_name(t.dtype)
    return ("ptr", name, 16 if address & 15 == 0 else 1, t.is_cuda), address


FAST_ARGS: dict[type, Any] = {int: _int_arg, float: lambda v: (("f32", 1), v), bool: lambda v: (("i1", 1), v)}


def launch_arg(v: Any) -> tuple[tuple, Any]:
    """One runtime argument's part of the specialization key, and the value a GPU launch
    passes for it (a device address for arrays). Runs on every launch: one dict lookup by
    type for the common kinds (Python numbers, torch tensors)."""
    fast = FAST_ARGS.get(type(v))
    if fast is not None:
        return fast(v)
    if is_torch_tensor(v):
        FAST_ARGS[type(v)] = _torch_arg
        return _torch_arg(v)
    return _generic_arg(v, True)


def launch_arg_nospec(v: Any) -> tuple[tuple, Any]:
    """As launch_arg, for a `do_not_specialize` parameter: no divisibility or value facts."""
    return _generic_arg(v, False)


class FastArg(NamedTuple):
    """How the fast binder (binder.make_fast_binder) handles one parameter, as code with `{a}`
    for the argument and `{v}` for its launch value: the argument's exact type, a further
    check, the launch value, the key items (finer than the specialization key: a dtype object
    for its name, the address's low bits for its alignment) and the stream it implies."""

    type: type
    check: str = ""
    value: str = "{a}"
    key: str = ""
    stream: str = ""


_TORCH_ARRAY = FastArg(object, "{a}.is_cuda", "{a}.data_ptr()", "{a}.dtype, {v} & 15, ",
                       "torch_stream({a}.get_device())")
_I32_ARG = FastArg(int, "-2147483648 <= {a} <= 2147483647", key="{v} == 1, not {v} & 15, ")


def fast_arg(v: Any, kind: str) -> Optional[FastArg]:
    """How the fast binder handles `v` and arguments of its type for a parameter of `kind`
    ("runtime", "nospec" or "constexpr"); None where only the general path can (other
    arrays, host memory, integers beyond 32 bits, unhashable constexprs)."""
    t = type(v)
    if kind == "constexpr":
        if t is constexpr:
            return None
        try:
            hash(v)
        except TypeError:
            return None
        return FastArg(t, value="", key="{a}, ")
    nospec = kind == "nospec"
    if t is int:
        if not _I32[0] <= v < _I32[1]:
            return None
        return _I32_ARG._replace(key="") if nospec else _I32_ARG
    if t in (float, bool) or v is None:
        return FastArg(t)
    if is_torch_tensor(v) and v.is_cuda:
        fast = _TORCH_ARRAY._replace(type=t)
    elif t is DeviceArray and v.is_device:
        fast = FastArg(t, "{a}.is_device", "{a}.data_ptr()", "{a}.dtype, {v} & 15, ")
    else:
        return None
    return fast._replace(key="{a}.dtype, ") if nospec else fast


def _number_key(v: Any, specialize: bool) -> tuple:
    """NumPy and other scalar numbers: as the Python number they hold."""
    if isinstance(v, np.bool_):
        return ("i1", 1)
    if isinstance(v, numbers.Integral):
        return _int_key(int(v), specialize)
    if isinstance(v, numbers.Real):
        return ("f32", 1)
    raise TypeError(f"cannot pass {v!r} to a kernel")


def python_value(v: Any) -> Any:
    """A scalar argument as the Python number the launcher receives."""
    if isinstance(v, np.bool_):
        return bool(v)
    if type(v) in (int, float, bool) or not isinstance(v, numbers.Number):
        return v
    return int(v) if isinstance(v, numbers.Integral) else float(v)


class Param(NamedTuple):
    """One kernel parameter under a specialization."""

    name: str
    runtime: bool  # a parameter of the IR function (else folded in as `value`)
    type: Optional[Type] = None
    divisibility: int = 1
    value: Any = None


def _param(name: str, key: tuple) -> Param:
    if key[0] == "c":
        return Param(name, False, value=key[2])
    if key[0] == "ptr":  # ("ptr", dtype, alignment, in device memory)
        return Param(name, True, PointerType(DTYPES[key[1]]), key[2])
    return Param(name, True, DTYPES[key[0]], key[1])


class Specialization:
    """What one compilation of a kernel is for: the key, and the parameters it implies."""

    __slots__ = ("key", "params", "runtime_indices")

    def __init__(self, arg_names: tuple[str, ...], key: tuple):
        self.key = key
        self.params = tuple(_param(n, k) for n, k in zip(arg_names, key))
        self.runtime_indices = tuple(i for i, p in enumerate(self.params) if p.runtime)

    def __repr__(self) -> str:
        parts = []
        for p in self.params:
            if p.runtime:
                parts.append(f"{p.name}: {p.type}" + (f" (div {p.divisibility})" if p.divisibility > 1 else ""))
            else:
                parts.append(f"{p.name}={p.value!r}")
        return f"Specialization({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Specialization) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)
