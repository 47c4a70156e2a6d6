"""Structured values of kernels: tuples, and the `Aggregate` protocol of block pointers and
tensor descriptors, so that the code generator carries all of them through runtime
`if`/`for`/`while` and rebuilds them from kernel arguments.

A value tree's leaves are what may be runtime values (`tensor`s) or constants; the structure
around them is static. `flatten` gives the leaves and the structure, `unflatten` rebuilds a
value of that structure from new leaves:

    flatten((x, (1, p)))   ->  [x, 1, p],  (tuple, [None, (tuple, [None, None])])
    flatten(block_ptr)     ->  [base, M, K, stride_m, 1, off_m, off_k],  (<rebuild block_pointer>, [...])

Two values can be one variable at a control-flow merge when their structures are equal; the
merge then carries only the leaves that differ (control_flow.py).

Kernel arguments that are tuples (NamedTuples too) or host tensor descriptors arrive as one
IR parameter per leaf (specialize.py expands their keys); `argument_value` rebuilds the value
the kernel sees from those leaves.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable, Iterable, Iterator, Sequence

from .core import builtin, tensor, unwrap

# ------------------------------------------------------------------------- aggregates


class Aggregate:
    """A compile-time structure holding runtime values: block pointers, tensor descriptors.

    Subclasses say which of their parts may be runtime values (`fields`, a tuple whose items
    may be nested tuples), what is static (`static_key`: values with equal keys have the same
    structure), and how to make a copy with other fields (`with_fields`)."""

    __slots__ = ()
    field_names: tuple[str, ...] = ()

    def fields(self) -> tuple:
        raise NotImplementedError

    def static_key(self) -> tuple:
        raise NotImplementedError

    def with_fields(self, fields: Sequence[Any]) -> "Aggregate":
        raise NotImplementedError


class _Rebuild:
    """The builder of an aggregate in a value tree: equal for aggregates of one structure."""

    __slots__ = ("proto", "key")

    def __init__(self, proto: Aggregate):
        self.proto = proto
        self.key = (type(proto), proto.static_key())

    def __call__(self, fields: list[Any]) -> Aggregate:
        return self.proto.with_fields(fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rebuild) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"<rebuild {self.proto!r}>"


def is_namedtuple(cls: type) -> bool:
    return issubclass(cls, builtins.tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _builder(v: Any) -> Callable[[list[Any]], Any]:
    if isinstance(v, Aggregate):
        return _Rebuild(v)
    cls = type(v)
    if is_namedtuple(cls):
        return cls._make
    if cls in (builtins.tuple, list, tuple):
        return cls
    return builtins.tuple  # other tuple subclasses (torch.Size) are plain tuples in kernels


# ------------------------------------------------------------------------ value trees


def flatten(v: Any) -> tuple[list[Any], Any]:
    """Leaves of nested tuples, lists and aggregates, and the structure to rebuild them."""
    if isinstance(v, Aggregate):
        leaves, (_, subs) = flatten(builtins.tuple(v.fields()))
        return leaves, (_builder(v), subs)
    if isinstance(v, (builtins.tuple, list)):
        leaves: list[Any] = []
        subs = []
        for x in v:
            ls, t = flatten(x)
            leaves.extend(ls)
            subs.append(t)
        return leaves, (_builder(v), builtins.tuple(subs))
    return [v], None


def unflatten(leaves: Iterator[Any], tree: Any) -> Any:
    if tree is None:
        return next(leaves)
    build, subs = tree
    return build([unflatten(leaves, t) for t in subs])


def leaf_names(v: Any, name: str) -> list[str]:
    """IR name hints for the leaves of `v` (in `flatten` order): `t.0`, `p.offsets.1`, ..."""
    if isinstance(v, Aggregate):
        return [n for field, part in zip(v.field_names, v.fields()) for n in leaf_names(part, f"{name}.{field}")]
    if isinstance(v, (builtins.tuple, list)):
        return [n for i, x in enumerate(v) for n in leaf_names(x, f"{name}.{i}")]
    return [name]


def name_leaves(v: Any, name: str) -> None:
    """Give the unnamed runtime leaves of a structured value `v` names derived from `name`."""
    for leaf, hint in zip(flatten(v)[0], leaf_names(v, name)):
        if isinstance(leaf, tensor) and leaf.handle.name_hint is None:
            leaf.handle.name_hint = hint


# --------------------------------------------------------------------------- tl.tuple


@builtin
class tuple(builtins.tuple):  # noqa: A001 - Triton's name
    """A tuple of kernel values: tensors, constants, block pointers, descriptors, nested tuples.

    Tuples in kernels are ordinary Python tuples (a literal `(a, b)`, a tuple argument, what
    a @jit function returns); `tl.tuple(values)` builds one from any sequence, as Triton's
    `tl.tuple` does. Tuples are compile-time structures: index them with compile-time
    integers (`t[0]`, `t[-1]`, slices), take `len(t)`, unroll `for x in t:` or
    `for i in tl.static_range(len(t))`, unpack them (`a, b = t`), concatenate (`t + (x,)`)
    and compare them (`t == (1, 2)` is a compile-time bool). Their runtime members may change
    inside `if`/`for`/`while`; the structure must stay the same.

        @tile.jit
        def increment(vals):
            return tl.tuple([v + 1 for v in vals])

        @tile.jit
        def kernel(ptrs, vals):          # launched with kernel[(1,)]((x, y), (1.5, 2))
            vals = increment(vals)
            for i in tl.static_range(len(vals)):
                tl.store(ptrs[i], vals[i])
    """

    def __new__(cls, args: Iterable[Any] = (), type: Any = None) -> "tuple":  # noqa: A002 - Triton's signature
        return super().__new__(cls, (unwrap(a) for a in args))

    def __getitem__(self, index: Any) -> Any:
        index = unwrap(index)
        if isinstance(index, slice):
            return tuple(builtins.tuple.__getitem__(self, index))
        return builtins.tuple.__getitem__(self, index)

    def __add__(self, other: Any) -> "tuple":
        return tuple(builtins.tuple(self) + builtins.tuple(unwrap(other)))

    def __radd__(self, other: Any) -> "tuple":
        return tuple(builtins.tuple(unwrap(other)) + builtins.tuple(self))

    def __mul__(self, times: Any) -> "tuple":
        return tuple(builtins.tuple(self) * unwrap(times))

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        other = unwrap(other)
        if isinstance(other, (builtins.tuple, list)):
            return builtins.tuple(self) == builtins.tuple(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    __hash__ = builtins.tuple.__hash__

    def __repr__(self) -> str:
        return builtins.tuple.__repr__(self)


# ---------------------------------------------------------------- kernel arguments


def argument_value(key: Any, leaves: Iterator[Any], make_descriptor: Callable[..., Any],
                   tensor_maps: bool = False) -> Any:
    """The value a kernel sees for an argument specialized as `key`, built from its leaves
    (`tensor`s for IR parameters, constants for folded ones) in specialize.leaf_keys order.
    `make_descriptor(base, shape, strides, block_shape, padding, tensormap)` builds a tensor
    descriptor; with `tensor_maps` (sm_90a) each descriptor's last leaf is its TMA tensor map."""
    tag = key[0]
    if tag == "tuple":
        items = [argument_value(k, leaves, make_descriptor, tensor_maps) for k in key[2]]
        return key[1]._make(items) if is_namedtuple(key[1]) else builtins.tuple(items)
    if tag == "desc":
        base = next(leaves)
        shape = [next(leaves) for _ in key[2]]
        strides = [next(leaves) for _ in key[3]]
        tensormap = next(leaves) if tensor_maps else None
        return make_descriptor(base, shape, strides, key[4], key[5], tensormap)
    return next(leaves)


__all__ = ["Aggregate", "flatten", "unflatten", "leaf_names", "name_leaves", "tuple", "argument_value",
           "is_namedtuple"]
