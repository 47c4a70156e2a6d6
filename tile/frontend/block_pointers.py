"""Block pointers: `tl.make_block_ptr`, `tl.advance`, and `tl.load` / `tl.store` through them.

A block pointer is a compile-time structure, not an IR type: the base pointer, the parent
tensor's shape and strides (int64, in elements) and the block's offsets (int32), each a
runtime scalar or a compile-time int, plus the static block shape and order. It flattens
through control flow like a tuple (aggregates.py), so only the parts a loop changes (usually
an offset) become loop-carried values. A load or store through it becomes an ordinary
pointer access, as Triton's RewriteTensorPointer pass rewrites it: the block's origin is a
scalar pointer, each dimension adds `arange * stride`, and `boundary_check` dimensions add
`0 <= offset + arange < shape` to the mask. A stride known to be 1 (a literal, or an argument
specialized as 1) adds the bare arange, so the access stays contiguous for the coalescing and
vectorization passes.

    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, 1), (pid_m * 64, k), (64, 32), (1, 0))
    a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")

becomes (tile.dump, abridged)

    %a_ptr.origin = tt.addptr %a_ptr, (pid_m * 64 as i64) * stride_am + (k as i64)
    %a_ptr.ptrs = tt.addptr (splat %a_ptr.origin),
                            (arange(64) as i64 * stride_am)[:, None] + (arange(32) as i64)[None, :]
    %a_ptr.mask = (0 <= pid_m * 64 + arange(64) < M)[:, None] & (0 <= k + arange(32) < K)[None, :]
    %a = tt.load %a_ptr.ptrs, %a_ptr.mask, 0.0 : tensor<64x32xf16>

On sm_90a a 2-D block whose inner stride is 1 and whose base and outer stride are known to be
multiples of 16 bytes (see _as_descriptor) is accessed as a tensor descriptor with a TMA tensor
map instead (tile/frontend/descriptors.py): its loads and stores become TMA copies where
tile/opt/tma.py can place them, and masked accesses of the whole block otherwise.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from tile.ir.core import BlockArgument
from tile.ir.types import DType, PointerType, TensorType, i1, i8, i32, i64

from .aggregates import Aggregate
from .core import block_type, builtin, current, tensor, to_dtype, unwrap

if TYPE_CHECKING:
    from .semantics import Semantic

PADDING_OPTIONS = ("", "zero", "nan")
_I32 = (-(2**31), 2**31)


# ---------------------------------------------------------------------------- values


class block_pointer_type:
    """The type of a block pointer: a pointer to a block (Triton's `pointer_type<block_type>`).
    `p.type.element_ty` is the `tl.block_type` a load through `p` returns."""

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: block_type):
        self.element_ty = element_ty

    @property
    def name(self) -> str:
        return f"pointer<{self.element_ty!r}>"

    @property
    def scalar(self) -> "block_pointer_type":
        return self

    def is_ptr(self) -> bool:
        return True

    def is_block(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, block_pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(self.element_ty)

    def __repr__(self) -> str:
        return self.name


class block_pointer(Aggregate):
    """What `tl.make_block_ptr` returns: a pointer to a `block_shape` block of a strided tensor."""

    __slots__ = ("base", "shape", "strides", "offsets", "block_shape", "order")
    field_names = ("base", "shape", "strides", "offsets")

    def __init__(self, base: tensor, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple[int, ...],
                 order: tuple[int, ...]):
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offsets = tuple(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)

    def fields(self) -> tuple:
        return (self.base, self.shape, self.strides, self.offsets)

    def static_key(self) -> tuple:
        return (self.block_shape, self.order)

    def with_fields(self, fields: Sequence[Any]) -> "block_pointer":
        base, shape, strides, offsets = fields
        return block_pointer(base, shape, strides, offsets, self.block_shape, self.order)

    @property
    def element(self) -> "DType | PointerType":
        return self.base.element.pointee

    @property
    def type(self) -> block_pointer_type:
        return block_pointer_type(block_type(to_dtype(self.element), self.block_shape))

    dtype = type

    @builtin
    def advance(self, offsets: Any) -> "block_pointer":
        """`p.advance(offsets)` is `tl.advance(p, offsets)`."""
        return advance_block_ptr(current(), self, offsets)

    def __repr__(self) -> str:
        return f"block_ptr<{list(self.block_shape)} x {to_dtype(self.element)!r}, order {list(self.order)}>"


# ------------------------------------------------------------------------ semantics


def _sequence(x: Any) -> list[Any]:
    x = unwrap(x)
    return [unwrap(v) for v in x] if isinstance(x, (tuple, list)) else [x]


def index_value(sem: "Semantic", x: Any, what: str, target: DType, narrowing: bool = False) -> "int | tensor":
    """A shape, stride or offset of a block pointer or descriptor: a compile-time int (kept
    as an int while it fits in int32), or a runtime integer scalar converted to `target`
    (i32 or i64). Only with `narrowing` may a 64-bit value become int32."""
    x = unwrap(x)
    bits = target.bits
    if isinstance(x, tensor):
        el = x.element
        if x.is_block():
            raise ValueError(f"{what} must be scalars, got a block of shape {list(x.shape)}")
        if not isinstance(el, DType) or not el.is_integer or el.bits == 1:
            raise TypeError(f"{what} must be integers, got a scalar of {to_dtype(el)!r}")
        if el.bits > bits and not narrowing:
            raise TypeError(f"{what} must be {bits}-bit integers, got a scalar of {to_dtype(el)!r}; add a "
                            f"`.to(tl.int32)` or use pointer arithmetic for 64-bit offsets")
        return sem.cast(x, target)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what} must be integers, got {x!r}")
    if not -(1 << (bits - 1)) <= x < 1 << (bits - 1):
        raise ValueError(f"{what} must fit in {bits} bits, got {x}")
    if not _I32[0] <= x < _I32[1]:
        return sem.constant(x, target)
    return x


def _pointer(x: Any, what: str) -> tensor:
    if isinstance(x, block_pointer):
        raise TypeError(f"{what}: `base` must be a pointer, not a block pointer")
    if not isinstance(x, tensor) or x.is_block() or not isinstance(x.element, PointerType):
        from .semantics import describe

        got = describe(x) if isinstance(x, tensor) or not isinstance(x, Aggregate) else repr(x)
        raise TypeError(f"{what}: `base` must be a scalar pointer (a pointer argument), got {got}")
    return x


def build_block_ptr(sem: "Semantic", base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> block_pointer:
    what = "tl.make_block_ptr"
    base = _pointer(unwrap(base), what)
    if base.element.pointee == i1:
        base = sem.cast(base, PointerType(i8, base.element.address_space))  # Triton reads bool blocks as int8
    dims = _sequence(block_shape)
    if any(isinstance(d, tensor) for d in dims):
        raise TypeError(f"{what}: block_shape must be compile-time integers (tl.constexpr), not runtime values")
    dims = sem.block_shape(tuple(dims))
    order = _sequence(order)
    if any(isinstance(o, tensor) for o in order):
        raise TypeError(f"{what}: order must be compile-time integers")
    parts = {"shape": _sequence(shape), "strides": _sequence(strides), "offsets": _sequence(offsets), "order": order}
    rank = len(dims)
    if any(len(v) != rank for v in parts.values()):
        counts = ", ".join(f"{k} {len(v)}" for k, v in parts.items())
        raise ValueError(f"{what}: shape, strides, offsets, block_shape and order need one entry per dimension; "
                         f"block_shape has {rank}, {counts}")
    if sorted(order) != list(range(rank)):
        raise ValueError(f"{what}: order must be a permutation of {tuple(range(rank))}, got {tuple(order)}")
    return block_pointer(
        base,
        tuple(index_value(sem, v, f"{what}: shape", i64) for v in parts["shape"]),
        tuple(index_value(sem, v, f"{what}: strides", i64) for v in parts["strides"]),
        tuple(index_value(sem, v, f"{what}: offsets", i32) for v in parts["offsets"]),
        dims, tuple(order))


def _add_offset(sem: "Semantic", a: "int | tensor", b: "int | tensor") -> "int | tensor":
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and isinstance(b, int):
        if not _I32[0] <= a + b < _I32[1]:
            raise ValueError(f"tl.advance: the offset {a} + {b} does not fit in 32 bits")
        return a + b
    return sem.add(a, b)


def advance_block_ptr(sem: "Semantic", ptr: Any, offsets: Any) -> block_pointer:
    ptr = unwrap(ptr)
    if not isinstance(ptr, block_pointer):
        raise TypeError(f"tl.advance expects a block pointer (from tl.make_block_ptr), got {ptr!r}")
    deltas = _sequence(offsets)
    rank = len(ptr.block_shape)
    if len(deltas) != rank:
        raise ValueError(f"tl.advance: the block pointer has {rank} dimension(s), so it takes {rank} offset(s); "
                         f"got {len(deltas)}")
    moved = tuple(_add_offset(sem, o, index_value(sem, d, "tl.advance: offsets", i32))
                  for o, d in zip(ptr.offsets, deltas))
    return block_pointer(ptr.base, ptr.shape, ptr.strides, moved, ptr.block_shape, ptr.order)


def boundary_dims(check: Any, rank: int, what: str) -> list[int]:
    """`boundary_check` as sorted dimensions (an int or a sequence of ints, each in [0, rank))."""
    check = unwrap(check)
    if check is None:
        return []
    dims = _sequence(check)
    for d in dims:
        if isinstance(d, tensor):
            raise TypeError(f"{what}: boundary_check must be compile-time integers")
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < rank:
            raise ValueError(f"{what}: boundary_check names dimension {d!r}, but the block has {rank} "
                             f"dimension(s): 0 to {rank - 1}")
    if len(set(dims)) != len(dims):
        raise ValueError(f"{what}: duplicate dimension in boundary_check {tuple(dims)}")
    return sorted(dims)


def _hint(sem: "Semantic", x: tensor, name: str) -> tensor:
    if x.handle.name_hint is None and not sem.dry_run:
        x.handle.name_hint = name
    return x


def _times(sem: "Semantic", index: "int | tensor", stride: "int | tensor") -> "int | tensor":
    """index * stride in int64 (0 and 1 fold away; two ints stay an int)."""
    if isinstance(index, int) and isinstance(stride, int):
        return index * stride
    if (isinstance(index, int) and index == 0) or (isinstance(stride, int) and stride == 0):
        return 0
    wide = sem.cast(index, i64) if isinstance(index, tensor) else index
    if isinstance(stride, int) and stride == 1:
        return wide
    return sem.mul(wide, stride)


def _along(sem: "Semantic", x: tensor, dim: int, rank: int) -> tensor:
    """A [n] block as dimension `dim` of a rank-`rank` block ([1, .., n, .., 1])."""
    others = [a for a in range(rank) if a != dim]
    return sem.expand_dims(x, others) if others else x


def access(sem: "Semantic", ptr: block_pointer, checked: Sequence[int]) -> tuple[tensor, Optional[tensor]]:
    """The pointers of the block `ptr` points to, and the mask of its `checked` dimensions."""
    shape, rank = ptr.block_shape, len(ptr.block_shape)
    name = ptr.base.handle.name_hint or "block"
    origin = ptr.base
    for off, stride in zip(ptr.offsets, ptr.strides):
        step = _times(sem, off, stride)
        if not (isinstance(step, int) and step == 0):
            origin = sem.add(origin, step)
    if origin is not ptr.base:
        _hint(sem, origin, f"{name}.origin")
    indices = [sem.arange(0, n) for n in shape]
    offsets: Optional[tensor] = None
    for d in range(rank):
        term = _times(sem, indices[d], ptr.strides[d])
        if isinstance(term, int):
            continue
        term = _along(sem, term, d, rank)
        offsets = term if offsets is None else sem.add(offsets, term)
    if offsets is None:
        pointers = sem.splat(origin, shape)
    else:
        pointers = sem.add(origin, sem.broadcast_to(offsets, shape))
    mask: Optional[tensor] = None
    for d in checked:
        off = ptr.offsets[d]
        pos = indices[d] if isinstance(off, int) and off == 0 else sem.add(indices[d], off)
        inside = sem.compare("lt", pos, ptr.shape[d])
        if not (isinstance(off, int) and off >= 0):
            inside = sem.logical_and(sem.compare("ge", pos, 0), inside)
        inside = _along(sem, inside, d, rank)
        mask = inside if mask is None else sem.logical_and(mask, inside)
    if mask is not None:
        mask = _hint(sem, sem.broadcast_to(mask, shape), f"{name}.mask")
    return _hint(sem, pointers, f"{name}.ptrs"), mask


def load(sem: "Semantic", ptr: block_pointer, mask: Any, other: Any, boundary_check: Any, padding_option: Any,
         cache_modifier: Any, eviction_policy: Any, volatile: bool) -> tensor:
    if mask is not None or other is not None:
        raise ValueError("tl.load: `mask` and `other` cannot be given with a block pointer; use boundary_check "
                         "and padding_option")
    padding = "" if padding_option is None else padding_option
    if padding not in PADDING_OPTIONS:
        raise ValueError(f"tl.load: padding_option must be one of '', 'zero', 'nan', got {padding!r}")
    if padding == "nan" and not (isinstance(ptr.element, DType) and ptr.element.is_floating):
        raise ValueError(f"tl.load: padding option `nan` is not supported for integer block pointers "
                         f"({to_dtype(ptr.element)!r})")
    checked = boundary_dims(boundary_check, len(ptr.block_shape), "tl.load")
    desc = _as_descriptor(sem, ptr, padding or "zero")
    if desc is not None:
        from .descriptors import descriptor_load

        return descriptor_load(sem, desc, ptr.offsets)
    pointers, in_bounds = access(sem, ptr, checked)
    fill = None
    if in_bounds is not None and padding:
        fill = 0 if padding == "zero" else float("nan")
    return sem.load(pointers, in_bounds, fill, cache_modifier, eviction_policy, volatile)


def store(sem: "Semantic", ptr: block_pointer, value: Any, mask: Any, boundary_check: Any, cache_modifier: Any,
          eviction_policy: Any) -> None:
    if mask is not None:
        raise ValueError("tl.store: `mask` cannot be given with a block pointer; use boundary_check")
    shape, elt = ptr.block_shape, ptr.element
    if not isinstance(value, tensor):
        value = sem.constant(value, TensorType(shape, elt))
    elif not value.is_block():
        value = sem.broadcast_to(value, shape)
    if value.shape != shape:
        raise ValueError(f"tl.store: the value's shape {list(value.shape)} must be the block shape {list(shape)} "
                         f"of the block pointer")
    if value.element != elt:
        raise TypeError(f"tl.store: the value's dtype {to_dtype(value.element)!r} must be the block pointer's "
                        f"element type {to_dtype(elt)!r}; convert it with .to({to_dtype(elt)!r})")
    checked = boundary_dims(boundary_check, len(shape), "tl.store")
    desc = _as_descriptor(sem, ptr, "zero")
    if desc is not None:
        from .descriptors import descriptor_store

        descriptor_store(sem, desc, ptr.offsets, value)
        return
    pointers, in_bounds = access(sem, ptr, checked)
    sem.store(pointers, value, in_bounds, cache_modifier, eviction_policy)


def _as_descriptor(sem: "Semantic", ptr: block_pointer, padding: str) -> Optional[Any]:
    """On sm_90a, the tensor descriptor with a TMA tensor map through which an access of `ptr`
    goes, where TMA can make it: a 2-D block of an element type and size TMA moves, the inner
    stride the constant 1, and a base and outer stride known to be multiples of 16 bytes (a
    pointer argument specialized as 16-byte aligned, an argument specialized as divisible by 16
    or a constant). TMA clips every dimension (reading zeros, or NaN with padding "nan"), which
    is what boundary_check asks of its dimensions and allowed for the others (out of bounds
    there is undefined). None otherwise: the access stays a masked pointer access."""
    from tile.runtime.tensor_map import uses_tensor_maps

    from .descriptors import attach_tensormap, descriptor, tma_movable

    element = ptr.element
    if not uses_tensor_maps(sem.target) or len(ptr.block_shape) != 2 or not tma_movable(element, ptr.block_shape):
        return None
    inner, outer = ptr.strides[1], ptr.strides[0]
    if not (isinstance(inner, int) and inner == 1) or not _known_multiple(ptr.base, 16) \
            or not _known_multiple(outer, max(1, 16 // element.bytes)):
        return None
    desc = descriptor(sem, ptr.base, ptr.shape, ptr.strides, ptr.block_shape, padding)
    attach_tensormap(sem, desc)
    return desc


def _known_multiple(x: "int | tensor", multiple: int) -> bool:
    """Whether `x` (an int, or a scalar: in bytes for a pointer) is known at compile time to be a
    multiple of `multiple` (a divisor of 16): a constant, or a kernel parameter (through integer
    casts) specialized as divisible by 16."""
    if isinstance(x, int):
        return x % multiple == 0
    value = x.handle
    while value.owner_op is not None and value.owner_op.name == "arith.cast" \
            and isinstance(value.type, DType) and value.type.is_integer:
        value = value.owner_op.operand(0)
    func = value.block.parent_op if isinstance(value, BlockArgument) else None
    if func is None or func.name != "tt.func":
        return False
    divisibility = func.attrs.get("arg_divisibility", [])
    return value.index < len(divisibility) and divisibility[value.index] % multiple == 0


# ------------------------------------------------------------------------ builtins


@builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any) -> block_pointer:
    """A pointer to a `block_shape` block of a strided tensor, for `tl.load` / `tl.store`.

    Args:
        base: the tensor's base pointer (a pointer argument; a bool tensor is read as int8).
        shape: the tensor's size per dimension (ints or integer scalars; int64).
        strides: its stride per dimension, in elements (int64). A stride of 1 that the
            compiler can see (a literal, or an argument equal to 1) makes accesses contiguous.
        offsets: the block's first element per dimension (int32; may be negative).
        block_shape: the block's static shape (compile-time powers of two).
        order: the dimensions from the fastest-varying in memory to the slowest, a
            permutation of range(rank) (e.g. (1, 0) for a row-major matrix).

    `tl.load(p, boundary_check=dims, padding_option=...)` reads the block; elements outside
    `0 <= index < shape` in a checked dimension read as padding ("zero", "nan" for floats,
    or "" for undefined); elements outside an unchecked dimension must not be accessed.
    `tl.store(p, value, boundary_check=dims)` writes a value of the block's shape and
    element type, skipping elements outside the checked dimensions. `tl.advance(p, deltas)`
    (or `p.advance(deltas)`) returns the pointer moved by `deltas` elements.

        a_bp = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                 offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
            ...
            a_bp = tl.advance(a_bp, (0, BLOCK_K))
    """
    return build_block_ptr(current(), base, shape, strides, offsets, block_shape, order)


@builtin
def advance(base: Any, offsets: Any) -> block_pointer:
    """The block pointer `base` moved by `offsets` elements (one int32 per dimension; may be
    negative). It returns a new block pointer and changes nothing: assign the result.

        a_bp = tl.advance(a_bp, (0, BLOCK_K))
    """
    return advance_block_ptr(current(), base, offsets)


__all__ = ["block_pointer", "block_pointer_type", "make_block_ptr", "advance", "load", "store", "access",
           "index_value", "boundary_dims", "PADDING_OPTIONS"]
