"""Argument specialization: what a kernel is compiled for, derived from the launch arguments.

Like Triton, per runtime argument:
    array (anything `describe_argument` accepts)  -> ptr<dtype>, divisibility 16 if the address is 16-byte aligned
    int == 1                                      -> folded into the kernel as the constant 1 (not a parameter)
    other int                                     -> i32 if it fits, else i64 (u64 above), divisibility 16 if % 16 == 0
    float -> f32, bool -> i1, None -> the constant None
    tuple (NamedTuple too)                        -> one key per member, the same rules inside
                                                     (a tl.constexpr, None, str, dtype or function member is a constant)
    TensorDescriptor                              -> the base's key, its shape and strides as ints, block shape, padding
and constexpr parameters are folded. The key is a tuple of small tuples, one per parameter,
computed on every launch, so it is built with a few type checks and no allocation beyond
the tuples themselves:

    ("ptr", "f32", 16)   ("i32", 16)   ("c", int, 1024)
    ("tuple", tuple, (("ptr", "f32", 16, True), ("c", int, 1)))
    ("desc", ("ptr", "f16", 16, True), (("i32", 16), ("i32", 1)), (("i32", 16), ("c", int, 1)), (64, 32), "zero")

A tuple or descriptor argument becomes one IR parameter per runtime leaf (its members, or its
base, shape and strides), named `t.0`, `desc.shape.1`, ...; its launch value is the tuple of
its leaves' launch values, which `flattening_entry` spreads out before a compiled kernel's entry.
For a target with TMA (sm_90a, `Specialization(..., tensor_maps=True)`) a descriptor has one
more leaf, `desc.tensormap` (a `tensormap` parameter: its 128-byte CUtensorMap), whose launch
value `flattening_entry` makes from the descriptor (tile/runtime/tensor_map.py).
Tuple arguments take the general launch path (fast_arg gives None for them); so do descriptor
arguments, except those over a GPU array of a TMA target's launch, which the fast binder spreads
into their leaves itself (DescriptorLeaves).
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from tile.ir.types import DTYPES, PointerType, Type, tensormap
from tile.runtime.arrays import TORCH_DTYPE_NAMES, DeviceArray, describe_argument, torch_dtype_name
from tile.runtime.cuda_driver import is_torch_tensor
from tile.runtime.tensor_map import TensorMapCache
from tile.tools.tensor_descriptor import TensorDescriptor

from .aggregates import is_namedtuple
from .core import constexpr, dtype

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
    if isinstance(v, tuple):
        return _tuple_arg(v, specialize)
    if isinstance(v, TensorDescriptor):
        return _descriptor_arg(v, specialize)
    if isinstance(v, (numbers.Number, np.bool_)):
        return _number_key(v, specialize), python_value(v)
    info = describe_argument(v)
    aligned = 16 if specialize and info.address % 16 == 0 else 1
    return ("ptr", info.dtype, aligned, info.is_device), info.address


AGGREGATES = ("tuple", "desc")


def _member_arg(v: Any, specialize: bool) -> tuple[tuple, Any]:
    """A member of a tuple argument: constants (tl.constexpr, str, dtype, function) are folded,
    the rest specializes like an argument."""
    if type(v) is constexpr:
        return ("c", type(v.value), v.value), None
    if isinstance(v, (str, dtype)) or callable(v):
        return ("c", type(v), v), None
    if isinstance(v, list):
        raise TypeError("a tuple argument cannot hold a list; use a tuple")
    return launch_arg(v) if specialize else launch_arg_nospec(v)


def _tuple_arg(v: tuple, specialize: bool) -> tuple[tuple, tuple]:
    keys, values = [], []
    for member in v:
        key, value = _member_arg(member, specialize)
        keys.append(key)
        if key[0] in AGGREGATES:
            values.extend(value)
        else:
            values.append(value)
    return ("tuple", type(v) if is_namedtuple(type(v)) else tuple, tuple(keys)), tuple(values)


def _descriptor_arg(d: TensorDescriptor, specialize: bool) -> tuple[tuple, tuple]:
    base_key, base_value = _generic_arg(d.base, specialize)
    key = ("desc", base_key, tuple(_int_key(s, specialize) for s in d.shape),
           tuple(_int_key(s, specialize) for s in d.strides), tuple(d.block_shape), d.padding)
    return key, (base_value, *d.shape, *d.strides)


TENSORMAP_KEY = ("tensormap",)


def leaf_keys(key: tuple, tensor_maps: bool = False) -> list[tuple]:
    """The keys of an argument's leaves: itself, or a tuple's members, or a descriptor's
    base, shape and strides (and its tensor map, with `tensor_maps`)."""
    if key[0] == "tuple":
        return [k for member in key[2] for k in leaf_keys(member, tensor_maps)]
    if key[0] == "desc":
        return [key[1], *key[2], *key[3]] + ([TENSORMAP_KEY] if tensor_maps else [])
    return [key]


def leaf_values(value: Any, key: tuple, tensor_maps: bool = False) -> list[Any]:
    """The leaves of an argument specialized as `key` (in leaf_keys order; a descriptor stands
    for its own tensor map)."""
    if key[0] == "tuple":
        return [leaf for member, k in zip(value, key[2]) for leaf in leaf_values(member, k, tensor_maps)]
    if key[0] == "desc":
        return [value.base, *value.shape, *value.strides] + ([value] if tensor_maps else [])
    return [value]


def _leaf_names(name: str, key: tuple, tensor_maps: bool) -> list[str]:
    if key[0] == "tuple":
        return [n for i, member in enumerate(key[2]) for n in _leaf_names(f"{name}.{i}", member, tensor_maps)]
    if key[0] == "desc":
        return ([f"{name}.base"] + [f"{name}.shape.{i}" for i in range(len(key[2]))]
                + [f"{name}.strides.{i}" for i in range(len(key[3]))] + ([f"{name}.tensormap"] if tensor_maps else []))
    return [name]


def _with_tensor_maps(value: Any, key: tuple, arg: Any, tensor_map: Callable[[TensorDescriptor], bytes]) -> list[Any]:
    """The launch values of an aggregate argument's leaves, each descriptor's tensor map after
    its strides (the leaf order of leaf_keys with tensor_maps)."""
    if key[0] == "desc":
        return [*value, tensor_map(arg)]
    out: list[Any] = []
    values = iter(value)
    for member, k in zip(arg, key[2]):
        if k[0] in AGGREGATES:
            count = len(leaf_keys(k))
            out.extend(_with_tensor_maps(tuple(next(values) for _ in range(count)), k, member, tensor_map))
        else:
            out.append(next(values))
    return out


def flattening_entry(entry: Callable[..., Any], keys: tuple[tuple, ...],
                     tensor_map: Optional[Callable[[TensorDescriptor], bytes]] = None,
                     names: tuple[str, ...] = ()) -> Callable[..., Any]:
    """An entry for a kernel with tuple or descriptor arguments: spreads their launch values
    and arguments into leaves, then calls `entry` (made for the leaves) and returns what it
    returns (the CompiledKernel, as every launch does). `keys` are the keys of
    the runtime (non-constexpr) arguments, `names` their names. With `tensor_map` (a kernel
    compiled with tensor-map leaves), each descriptor also passes `tensor_map(descriptor)`, its
    128 bytes; a ValueError of it (a TMA rule broken) names the argument."""

    def flat_entry(grid: Any, values: tuple, args: tuple, stream: Any) -> Any:
        flat_values, flat_args = [], []
        for i, (key, value, arg) in enumerate(zip(keys, values, args)):
            if key[0] in AGGREGATES and tensor_map is not None:
                try:
                    leaves = _with_tensor_maps(value, key, arg, tensor_map)
                except ValueError as err:
                    name = names[i] if i < len(names) else str(i)
                    raise ValueError(f"argument '{name}': {err}") from None
                flat_values.extend(leaves)
                flat_args.extend(leaf_values(arg, key, True))
            elif key[0] in AGGREGATES:
                flat_values.extend(value)
                flat_args.extend(leaf_values(arg, key))
            else:
                flat_values.append(value)
                flat_args.append(arg)
        return entry(grid, tuple(flat_values), tuple(flat_args), stream)

    return flat_entry


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
    for its name, the address's low bits for its alignment) and the stream it implies. With a
    `helper` (a function, `{h}` in the code), the check binds `{v}` itself (value None) to a
    pair (key items, launch values), whose values the launch spreads."""

    type: type
    check: str = ""
    value: Optional[str] = "{a}"
    key: str = ""
    stream: str = ""
    helper: Optional[Callable[..., Any]] = None


class DescriptorLeaves:
    """The fast binder's reading of a TensorDescriptor over an array of type `base_type` for a
    TMA target: `(key items, leaves)`, the leaves being the base's address, the shape, the
    strides and the tensor map (flattening_entry's order), or None where the general path must
    decide (another base type, an array on another device, a tensor map that breaks TMA's
    rules, whose error the general path raises naming the argument)."""

    def __init__(self, base_type: type, tensor_map: TensorMapCache):
        self.base_type, self.tensor_map = base_type, tensor_map
        self.torch = base_type is not DeviceArray

    def __call__(self, desc: TensorDescriptor, launch_device: int) -> Optional[tuple[tuple, tuple]]:
        base = desc.base
        if type(base) is not self.base_type:
            return None
        if self.torch:
            if base.get_device() != launch_device:
                return None
            dtype_key = base.dtype
            dtype = TORCH_DTYPE_NAMES.get(dtype_key) or torch_dtype_name(dtype_key)
        else:
            if not base.is_device or base.device != launch_device:
                return None
            dtype_key = dtype = base.tile_dtype
        address = base.data_ptr()
        try:
            tensor_map = self.tensor_map.at(desc, address, dtype)
        except ValueError:
            return None
        shape, strides = tuple(desc.shape), tuple(desc.strides)
        return ((dtype_key, address & 15, shape, strides, tuple(desc.block_shape), desc.padding),
                (address, *shape, *strides, tensor_map))


# get_device() is -1 on the CPU: one call checks both "on a GPU" and "on the launch device"
# (`_launch_device`, the fast binder's reading of PyTorch's current device).
_TORCH_ARRAY = FastArg(object, "{a}.get_device() == _launch_device", "{a}.data_ptr()", "{a}.dtype, {v} & 15, ",
                       "torch_stream(_launch_device)")
_I32_ARG = FastArg(int, "-2147483648 <= {a} <= 2147483647", key="{v} == 1, not {v} & 15, ")


def fast_arg(v: Any, kind: str, tensor_map: Optional[TensorMapCache] = None) -> Optional[FastArg]:
    """How the fast binder handles `v` and arguments of its type for a parameter of `kind`
    ("runtime", "nospec" or "constexpr"); None where only the general path can (other
    arrays, host memory, integers beyond 32 bits, unhashable constexprs, descriptors but those
    over GPU arrays of a kernel taking tensor maps, made by `tensor_map`)."""
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
    if t is TensorDescriptor and tensor_map is not None:
        base = fast_arg(v.base, "runtime")
        if base is None or not (base.type is DeviceArray or is_torch_tensor(v.base)):
            return None
        return FastArg(t, "({v} := {h}({a}, _launch_device)) is not None", None, "{v}[0], ", base.stream,
                       DescriptorLeaves(base.type, tensor_map))
    if is_torch_tensor(v) and v.is_cuda:
        fast, dtype = _TORCH_ARRAY._replace(type=t), "{a}.dtype, "
    elif t is DeviceArray and v.is_device:
        # The tile dtype, not the NumPy one: bf16 and fp8 arrays are stored as uint16 and uint8.
        dtype = "{a}.tile_dtype, "
        fast = FastArg(t, "{a}.is_device and {a}.device == _launch_device", "{a}.data_ptr()", dtype + "{v} & 15, ")
    else:
        return None
    return fast._replace(key=dtype) if nospec else fast


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
    if key == TENSORMAP_KEY:
        return Param(name, True, tensormap)
    if key[0] == "ptr":  # ("ptr", dtype, alignment, in device memory)
        return Param(name, True, PointerType(DTYPES[key[1]]), key[2])
    return Param(name, True, DTYPES[key[0]], key[1])


class Specialization:
    """What one compilation of a kernel is for: the key, and the parameters it implies (one
    per argument, or per leaf of a tuple or descriptor argument; `leaf_args` gives the
    argument of each)."""

    __slots__ = ("key", "params", "runtime_indices", "leaf_args", "has_aggregates", "tensor_maps")

    def __init__(self, arg_names: tuple[str, ...], key: tuple, tensor_maps: bool = False):
        self.key = key
        self.tensor_maps = tensor_maps  # descriptors carry their TMA tensor maps (sm_90a)
        params, leaf_args = [], []
        for i, (name, k) in enumerate(zip(arg_names, key)):
            for leaf_name, leaf_key in zip(_leaf_names(name, k, tensor_maps), leaf_keys(k, tensor_maps)):
                params.append(_param(leaf_name, leaf_key))
                leaf_args.append(i)
        self.params = tuple(params)
        self.leaf_args = tuple(leaf_args)
        self.runtime_indices = tuple(i for i, p in enumerate(self.params) if p.runtime)
        self.has_aggregates = any(k[0] in AGGREGATES for k in key)

    def launch_positions(self, runtime_args: set[int]) -> tuple[tuple[int, ...], int]:
        """Where the IR parameters are among the leaves of the arguments in `runtime_args`
        (the non-constexpr ones, which the binders pass on), and how many leaves those have."""
        position: dict[int, int] = {}
        for leaf, arg in enumerate(self.leaf_args):
            if arg in runtime_args:
                position[leaf] = len(position)
        return tuple(position[i] for i in self.runtime_indices), len(position)

    def __repr__(self) -> str:
        parts = []
        for p in self.params:
            if p.runtime:
                parts.append(f"{p.name}: {p.type}" + (f" (div {p.divisibility})" if p.divisibility > 1 else ""))
            else:
                parts.append(f"{p.name}={p.value!r}")
        return f"Specialization({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Specialization) and other.key == self.key and other.tensor_maps == self.tensor_maps

    def __hash__(self) -> int:
        return hash((self.key, self.tensor_maps))
