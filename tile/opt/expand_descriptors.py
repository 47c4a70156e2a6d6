"""Expand descriptors: tensor-descriptor accesses become masked pointer loads and stores.

`tt.descriptor_load` / `tt.descriptor_store` name a block of a strided tensor by its base,
shape, strides and offsets. Before the gpu passes, which know only pointer accesses, each
becomes: the block's origin `base + sum(offset * stride)` (int64), one `arange * stride` term
per dimension added to it, and a mask that keeps `0 <= offset + arange < shape` in every
dimension; loads read the padding (0 or NaN) where the mask is off, stores skip those
elements. The base and the outer strides are promised multiples of 16 bytes (tt.hint), as the
descriptor contract says (Triton's, which TMA needs): pointers loaded from memory, as in grouped
GEMM, then still give 16-byte vector accesses. A stride of constant 1 (the last one, always) is folded by canonicalize, so the
minor dimension stays contiguous for coalescing and vectorization. The pass runs first in the
tile pipeline, so canonicalize, CSE and LICM clean up and hoist what it builds.

Before:
    %blk = tt.descriptor_load %x, %M, %N, %sm, %c1, %om, %on {block_shape = [16, 32], padding = "zero"}
           : tensor<16x32xf16>
After (abridged: `splat` and `cast` spelled as calls; %xa, %sma: tt.hint {multiple_of = [16]} of %x
and {multiple_of = [8]} of %sm, 16 bytes of f16):
    %blk.origin = tt.addptr (tt.addptr %xa, cast(%om) * %sma), cast(%on) * %c1 : ptr<f16>
    %r = tt.arange {end = 16, start = 0} : tensor<16xi32>
    %c = tt.arange {end = 32, start = 0} : tensor<32xi32>
    %blk.ptrs = splat(%blk.origin) + (cast(%r) * splat(%sma))[:, None] + (cast(%c) * splat(%c1))[None, :]
    %blk.mask = (splat(%om) + %r >= 0 & splat(%om) + %r < splat(%M))[:, None]
              & (splat(%on) + %c >= 0 & splat(%on) + %c < splat(%N))[None, :]
    %zero = arith.constant {value = 0.0} : tensor<16x32xf16>
    %blk = tt.load %blk.ptrs, %blk.mask, %zero : tensor<16x32xf16>
(a compile-time offset of 0 or more drops its `>= 0` test.)
"""
from __future__ import annotations

from typing import Optional

from ..ir import Operation, PointerType, TensorType, Value
from ..ir.builder import Builder
from ..ir.types import DType, i1, i32, i64
from .canonicalize import constant_value
from .dce import replace_op
from .pass_manager import Pass
from .tma import uses_tma

DESCRIPTOR_OPS = ("tt.descriptor_load", "tt.descriptor_store")
TMA_ALIGNMENT = 16  # bytes: a descriptor's base and outer strides are multiples of it


def _along(b: Builder, x: Value, dim: int, block: tuple[int, ...]) -> Value:
    """A [n] tensor as dimension `dim` of `block`, broadcast to the block's shape."""
    shape = [x.type.shape[0]]
    for axis in range(len(block)):
        if axis == dim:
            continue
        shape.insert(axis, 1)
        x = b.value("tt.expand_dims", [x], TensorType(tuple(shape), x.type.element), axis=axis)
    if tuple(shape) != block:
        x = b.value("tt.broadcast", [x], TensorType(block, x.type.element))
    return x


def _splat(b: Builder, x: Value, n: int) -> Value:
    return b.value("tt.splat", [x], TensorType((n,), x.type))


def _hint(v: Value, name: Optional[str], part: str) -> Value:
    v.name_hint = f"{name}.{part}" if name else part
    return v


def _aligned(b: Builder, v: Value, multiple: int) -> Value:
    """`v` with the promise that it is a multiple of `multiple` (bytes for pointers): what a
    descriptor's contract (Triton's, for TMA) says of its base and outer strides."""
    if multiple <= 1 or constant_value(v) is not None:
        return v
    return b.value("tt.hint", [v], v.type, multiple_of=[multiple], max_contiguous=[], max_constancy=[])


def expand(op: Operation) -> None:
    """Replace one tt.descriptor_load / tt.descriptor_store by its pointer form."""
    block = tuple(op.attrs["block_shape"])
    rank = len(block)
    base = op.operand(0)
    shapes, strides = op.operands[1:1 + rank], op.operands[1 + rank:1 + 2 * rank]
    offsets = op.operands[1 + 2 * rank:1 + 3 * rank]
    ptr_type: PointerType = base.type
    loading = op.name == "tt.descriptor_load"
    name = op.result.name_hint if loading else None
    b = Builder(loc=op.loc)
    b.set_insertion_point_before(op)

    base = _aligned(b, base, TMA_ALIGNMENT)
    element_size = ptr_type.pointee.bytes if isinstance(ptr_type.pointee, DType) else 8
    strides = [_aligned(b, s, TMA_ALIGNMENT // element_size) for s in strides[:-1]] + [strides[-1]]
    origin = base
    for off, stride in zip(offsets, strides):
        step = b.value("arith.mul", [b.value("arith.cast", [off], i64), stride], i64)
        origin = b.value("tt.addptr", [origin, step], ptr_type)
    pointers = b.value("tt.splat", [_hint(origin, name, "origin")], TensorType(block, ptr_type))
    mask: Optional[Value] = None
    for d, n in enumerate(block):
        index = b.value("tt.arange", [], TensorType((n,), i32), start=0, end=n)
        wide = b.value("arith.cast", [index], TensorType((n,), i64))
        term = b.value("arith.mul", [wide, _splat(b, strides[d], n)], wide.type)
        pointers = b.value("tt.addptr", [pointers, _along(b, term, d, block)], pointers.type)
        pos = b.value("arith.add", [_splat(b, offsets[d], n), index], index.type)
        bool_n = TensorType((n,), i1)
        inside = b.value("arith.cmp", [pos, _splat(b, shapes[d], n)], bool_n, predicate="lt")
        known = constant_value(offsets[d])
        if known is None or known < 0:
            zero = b.constant(0, index.type)
            inside = b.value("arith.and", [b.value("arith.cmp", [pos, zero], bool_n, predicate="ge"), inside], bool_n)
        inside = _along(b, inside, d, block)
        mask = inside if mask is None else b.value("arith.and", [mask, inside], inside.type)
    _hint(pointers, name, "ptrs")
    _hint(mask, name, "mask")
    if loading:
        fill = b.constant(float("nan") if op.attrs["padding"] == "nan" else 0, op.result.type)
        replace_op(op, b.value("tt.load", [pointers, mask, fill], op.result.type))
    else:
        b.create("tt.store", [pointers, op.operand(1 + 3 * rank), mask])
        op.erase()


class ExpandDescriptors(Pass):
    """tt.descriptor_load / tt.descriptor_store -> masked tt.load / tt.store (except the TMA
    accesses of tile/opt/tma.py: those of a host descriptor's tensor map, on sm_90a)."""

    name = "expand-descriptors"

    def run(self, func: Operation) -> None:
        for op in [o for o in func.walk() if o.name in DESCRIPTOR_OPS]:
            if not uses_tma(op):  # sm_90a's host descriptors: tile/opt/tma.py lowers those
                expand(op)


__all__ = ["ExpandDescriptors", "expand", "DESCRIPTOR_OPS"]
