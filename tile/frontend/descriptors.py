"""Tensor descriptors: `tl.make_tensor_descriptor`, `desc.load` / `desc.store`, and host
`TensorDescriptor` arguments (tile/tools/tensor_descriptor.py).

A descriptor is a compile-time structure like a block pointer (aggregates.py): the base
pointer, the tensor's shape (int32) and strides (int64, the last one 1), and the static
block shape and padding. Unlike block pointers, its accesses stay ops in tile IR,

    %blk = tt.descriptor_load %base, %M, %N, %stride_m, %c1, %off_m, %off_n
               {block_shape = [64, 64], padding = "zero"} : tensor<64x64xf16>
    tt.descriptor_store %base, %M, %N, %stride_m, %c1, %off_m, %off_n, %value {block_shape = [64, 64]}

which the interpreter runs directly and tile/opt/expand_descriptors.py turns into masked
pointer accesses before the gpu passes. On sm_90a a descriptor also carries its TMA tensor map
as the accesses' last operand, and tile/opt/tma.py lowers them to TMA copies: a host descriptor's
is a `tensormap` kernel parameter (tile/runtime/tensor_map.py); an in-kernel one's is made by

    %map = tt.make_tensormap %base, %M, %N, %stride_m, %c1 {block_shape = [64, 64], padding = "zero"}

which the program writes into its slot of the global scratch that `tile.set_allocator`'s
allocator gives each launch (tile/codegen/lower_tma.py). Where no access becomes a TMA copy,
the op is dead and goes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from tile.ir.tma_layouts import TMA_MAX_BOX, TMA_MIN_INNER_BYTES
from tile.ir.types import DType, PointerType, TensorType, i1, i32, i64, tensormap
from tile.runtime.tensor_map import uses_tensor_maps

from .aggregates import Aggregate
from .aggregates import tuple as tl_tuple
from .block_pointers import index_value
from .core import block_type, builtin, current, tensor, to_dtype, unwrap

if TYPE_CHECKING:
    from .semantics import Semantic

MAX_RANK = 5
DESCRIPTOR_PADDINGS = ("zero", "nan")


class tensor_descriptor_type:
    """The type of a tensor descriptor: the block type its loads return."""

    __slots__ = ("block_type",)

    def __init__(self, block_type: block_type):
        self.block_type = block_type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tensor_descriptor_type) and other.block_type == self.block_type

    def __hash__(self) -> int:
        return hash(self.block_type)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.block_type!r}>"


class tensor_descriptor(Aggregate):
    """A tensor in global memory, read and written a `block_shape` block at a time.

    Made in a kernel by `tl.make_tensor_descriptor`, or passed from the host as a
    `tile.tools.tensor_descriptor.TensorDescriptor`. `desc.load(offsets)` returns the block
    whose first element is at `offsets` (elements outside the tensor read as 0, or NaN with
    padding "nan"); `desc.store(offsets, value)` writes a block, skipping elements outside the
    tensor. `desc.shape`, `desc.strides`, `desc.block_shape`, `desc.dtype` and
    `desc.block_type` describe it."""

    __slots__ = ("base", "_shape", "_strides", "_block_shape", "padding", "tensormap")
    field_names = ("base", "shape", "strides", "tensormap")

    def __init__(self, base: tensor, shape: Sequence[Any], strides: Sequence[Any], block_shape: Sequence[int],
                 padding: str, tensormap: Optional[tensor] = None):
        self.base = base
        self._shape = tuple(shape)
        self._strides = tuple(strides)
        self._block_shape = tuple(block_shape)
        self.padding = padding
        self.tensormap = tensormap  # a host descriptor's TMA tensor map (sm_90a), else None

    def fields(self) -> tuple:
        return (self.base, self._shape, self._strides, self.tensormap)

    def static_key(self) -> tuple:
        return (self._block_shape, self.padding)

    def with_fields(self, fields: Sequence[Any]) -> "tensor_descriptor":
        base, shape, strides, tensormap = fields
        return tensor_descriptor(base, shape, strides, self._block_shape, self.padding, tensormap)

    @property
    def element(self) -> "DType | PointerType":
        return self.base.element.pointee

    @property
    def shape(self) -> tl_tuple:
        return tl_tuple(self._shape)

    @property
    def strides(self) -> tl_tuple:
        return tl_tuple(self._strides)

    @property
    def block_shape(self) -> tl_tuple:
        return tl_tuple(self._block_shape)

    @property
    def dtype(self) -> Any:
        return to_dtype(self.element)

    @property
    def block_type(self) -> block_type:
        return block_type(self.dtype, self._block_shape)

    @property
    def type(self) -> tensor_descriptor_type:
        return tensor_descriptor_type(self.block_type)

    @builtin
    def load(self, offsets: Any) -> tensor:
        """The block at `offsets` (one int32 per dimension); elements outside the tensor read
        as 0 (or NaN with padding "nan")."""
        return descriptor_load(current(), self, offsets)

    @builtin
    def store(self, offsets: Any, value: Any) -> None:
        """Write `value` (a block of `block_shape`, converted to the descriptor's dtype) at
        `offsets`; elements outside the tensor are not written."""
        descriptor_store(current(), self, offsets, value)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{list(self._block_shape)} x {self.dtype!r}>"


# ------------------------------------------------------------------------ semantics


def _pointer(base: Any, what: str) -> tensor:
    base = unwrap(base)
    if not isinstance(base, tensor) or base.is_block() or not isinstance(base.element, PointerType):
        raise TypeError(f"{what}: `base` must be a scalar pointer (a pointer argument), got {base!r}")
    return base


def _list(x: Any, what: str) -> list[Any]:
    x = unwrap(x)
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"{what} must be a tuple or list, got {x!r}")
    return [unwrap(v) for v in x]


def descriptor(sem: "Semantic", base: tensor, shape: Sequence[Any], strides: Sequence[Any],
               block_shape: Sequence[int], padding: str, tensormap: Optional[tensor] = None) -> tensor_descriptor:
    """A descriptor from checked parts: shapes as int32, strides as int64 (ints stay ints)."""
    shape_values = [index_value(sem, s, "tensor descriptor shape", i32, narrowing=True) for s in shape]
    strides_values = [index_value(sem, s, "tensor descriptor strides", i64) for s in strides]
    return tensor_descriptor(base, shape_values, strides_values, block_shape, padding, tensormap)


def make_descriptor(sem: "Semantic", base: Any, shape: Any, strides: Any, block_shape: Any,
                    padding_option: Any = "zero") -> tensor_descriptor:
    what = "tl.make_tensor_descriptor"
    base = _pointer(base, what)
    shape, strides, dims = _list(shape, f"{what}: shape"), _list(strides, f"{what}: strides"), \
        _list(block_shape, f"{what}: block_shape")
    ndim = len(shape)
    if not 1 <= ndim <= MAX_RANK:
        raise ValueError(f"{what}: expected 1 <= ndim <= {MAX_RANK} but got {ndim} dimensions")
    if len(strides) != ndim:
        raise ValueError(f"{what}: expected {ndim} strides but got {len(strides)}")
    if len(dims) != ndim:
        raise ValueError(f"{what}: expected block_shape to have {ndim} dimensions but got {len(dims)}")
    for i, d in enumerate(dims):
        if isinstance(d, tensor) or isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"{what}: block_shape element {i} must be a compile-time integer, got {d!r}")
        if d <= 0 or d & (d - 1):
            raise ValueError(f"{what}: block_shape element {i} must be a power of 2, got {d}")
    elt = base.element.pointee
    elem_bytes = elt.bytes if isinstance(elt, DType) else 8
    if dims[-1] * elem_bytes < 16:
        raise ValueError(f"{what}: descriptor block shape must have at least 16 bytes in the last dimension, but "
                         f"got {dims[-1]} * {elem_bytes} = {dims[-1] * elem_bytes} bytes")
    last = strides[-1]
    if isinstance(last, tensor) or last != 1:
        got = "a runtime value" if isinstance(last, tensor) else repr(last)
        raise ValueError(f"{what}: the last dimension must be contiguous: its stride must be the constant 1, got "
                         f"{got}")
    padding = padding_option or "zero"
    if padding not in DESCRIPTOR_PADDINGS:
        raise ValueError(f"{what}: padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not (isinstance(elt, DType) and elt.is_floating):
        raise ValueError(f"{what}: padding option `nan` is not supported for integer blocks ({to_dtype(elt)!r})")
    desc = descriptor(sem, base, shape, strides, tuple(dims), padding)
    if uses_tensor_maps(sem.target) and tma_movable(elt, dims):
        map_base = _base_on_tmas_rule(sem, desc, elem_bytes)
        if map_base is not None:
            attach_tensormap(sem, desc, map_base)
    return desc


def _base_on_tmas_rule(sem: "Semantic", desc: tensor_descriptor, elem_bytes: int) -> Optional[tensor]:
    """The base for the descriptor's tensor map under TMA's rule (Triton's for descriptors): the
    base 16-byte aligned, every stride but the last a multiple of 16 bytes. None when a constant
    stride breaks it (masked accesses serve the descriptor). Runtime values are checked when the
    program runs: a map that breaks the rule gets the null base, so its first copy faults (and
    the fault names the rule, tile.runtime.errors.GpuFault) rather than a map that silently
    drops the low bits of every address."""
    if any(not isinstance(v, tensor) and v * elem_bytes % 16 for v in desc._strides[:-1]):
        return None
    address = sem.cast(desc.base, i64)
    low_bits = address  # a multiple of 16 has its low 4 bits clear (a 64-bit `%` would be a call in SASS)
    for stride in desc._strides[:-1]:
        if isinstance(stride, tensor):
            low_bits = sem.or_(low_bits, sem.mul(sem.cast(stride, i64), elem_bytes))
    ok = sem.compare("eq", sem.and_(low_bits, 15), 0)
    return sem.cast(sem.where(ok, address, 0), desc.base.element)


def tma_movable(element: "DType | PointerType", block_shape: Sequence[int]) -> bool:
    """Whether TMA copies blocks of this element type and shape: not pointers or 1-bit values,
    at most TMA_MAX_BOX elements per dimension, rows of at least TMA_MIN_INNER_BYTES."""
    return isinstance(element, DType) and element != i1 and all(d <= TMA_MAX_BOX for d in block_shape) \
        and block_shape[-1] * element.bytes >= TMA_MIN_INNER_BYTES


def attach_tensormap(sem: "Semantic", desc: tensor_descriptor, base: Optional[tensor] = None) -> None:
    """Give an in-kernel descriptor its TMA tensor map (sm_90a): a tt.make_tensormap of `base`
    (default: the descriptor's), written at run time into the program's global scratch where a
    TMA copy uses it (tile/opt/tma.py)."""
    operands = [desc.base if base is None else base]
    operands += [v if isinstance(v, tensor) else sem.constant(v, i32) for v in desc._shape]
    operands += [v if isinstance(v, tensor) else sem.constant(v, i64) for v in desc._strides]
    desc.tensormap = tensor(sem.builder.value("tt.make_tensormap", [v.handle for v in operands], tensormap,
                                              block_shape=list(desc._block_shape), padding=desc.padding))


def _operands(sem: "Semantic", desc: tensor_descriptor, offsets: Any, what: str) -> list[Any]:
    """The IR operands shared by descriptor loads and stores: base, shapes, strides, offsets."""
    offs = _list(offsets, f"{what}: offsets")
    ndim = len(desc._block_shape)
    if len(offs) != ndim:
        raise ValueError(f"{what}: expected {ndim} offsets, but got {len(offs)}")
    values = [desc.base]
    values += [s if isinstance(s, tensor) else sem.constant(s, i32) for s in desc._shape]
    values += [s if isinstance(s, tensor) else sem.constant(s, i64) for s in desc._strides]
    for o in offs:
        o = index_value(sem, o, f"{what}: offsets", i32)
        values.append(o if isinstance(o, tensor) else sem.constant(o, i32))
    return [v.handle for v in values]


def _tensormap(desc: tensor_descriptor) -> list[Any]:
    """The accesses' trailing tensormap operand: present for host descriptors on sm_90a."""
    return [] if desc.tensormap is None else [unwrap(desc.tensormap).handle]


def _descriptor(desc: Any, what: str) -> tensor_descriptor:
    desc = unwrap(desc)
    if not isinstance(desc, tensor_descriptor):
        raise TypeError(f"{what} expects a tensor descriptor, got {desc!r}")
    return desc


def descriptor_load(sem: "Semantic", desc: Any, offsets: Any) -> tensor:
    desc = _descriptor(desc, "tensor descriptor load")
    operands = _operands(sem, desc, offsets, "tensor descriptor load")
    result = TensorType(desc._block_shape, desc.element)
    operands += _tensormap(desc)
    return tensor(sem.builder.value("tt.descriptor_load", operands, result, block_shape=list(desc._block_shape),
                                    padding=desc.padding))


def descriptor_store(sem: "Semantic", desc: Any, offsets: Any, value: Any) -> None:
    what = "tensor descriptor store"
    desc = _descriptor(desc, what)
    value = unwrap(value)
    shape = desc._block_shape
    if not isinstance(value, tensor) or value.shape != shape:
        got = f"shape {list(value.shape)}" if isinstance(value, tensor) else repr(value)
        raise ValueError(f"{what}: the value must be a block of the descriptor's block shape {list(shape)}, got {got}")
    value = sem.cast(value, desc.element)
    operands = _operands(sem, desc, offsets, what) + [value.handle] + _tensormap(desc)
    sem.builder.create("tt.descriptor_store", operands, [], {"block_shape": list(shape)})


# ------------------------------------------------------------------------ builtins


@builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> tensor_descriptor:
    """A descriptor of a tensor in global memory, for block loads and stores (Triton's TMA
    descriptors: on sm_90a TMA copies through a tensor map that each program writes into the
    global scratch of `tile.set_allocator`'s allocator; elsewhere masked loads and stores).

    Args:
        base: the tensor's base pointer, which must be 16-byte aligned (as in Triton: TMA needs it,
            and the masked accesses assume it too).
        shape: the tensor's size per dimension, 1 to 5 dimensions (int32 values).
        strides: its strides in elements (int64); the last must be the constant 1, the others
            must be multiples of 16 bytes.
        block_shape: the static shape of the blocks loaded and stored: powers of two, the last
            dimension at least 16 bytes.
        padding_option: what elements outside the tensor read as: "zero" or "nan" (floats).

        desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[32, 64])
        block = desc.load([pid_m * 32, pid_n * 64])
        desc.store([pid_m * 32, pid_n * 64], tl.abs(block))
    """
    return make_descriptor(current(), base, shape, strides, block_shape, unwrap(padding_option))


@builtin
def load_tensor_descriptor(desc: Any, offsets: Any) -> tensor:
    """`desc.load(offsets)`: the block of `desc` whose first element is at `offsets`.

        block = tl.load_tensor_descriptor(desc, [off_m, off_n])
    """
    return descriptor_load(current(), desc, offsets)


@builtin
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> None:
    """`desc.store(offsets, value)`: write the block `value` of `desc` at `offsets`.

        tl.store_tensor_descriptor(desc, [off_m, off_n], block)
    """
    descriptor_store(current(), desc, offsets, value)


__all__ = ["tensor_descriptor", "tensor_descriptor_type", "make_tensor_descriptor", "load_tensor_descriptor",
           "store_tensor_descriptor", "descriptor", "descriptor_load", "descriptor_store", "tma_movable",
           "attach_tensormap"]
