"""Host tensor descriptors: an array with a block shape, passed to a kernel as one argument.

    from tile.tools.tensor_descriptor import TensorDescriptor

    @tile.jit
    def scale(x_desc, factor):
        off = tl.program_id(0) * x_desc.block_shape[0], 0
        x_desc.store(off, x_desc.load(off) * factor)

    desc = TensorDescriptor.from_tensor(x, block_shape=[32, 64])    # x: a 2-D array
    scale[(tile.cdiv(x.shape[0], 32),)](desc, 2.0)

In the kernel it is a `tl.tensor_descriptor`. The launch passes its base pointer and its shape
and strides as scalars, specialized like scalar arguments (a stride of 1 is compiled in, a
multiple of 16 is known to be one); the block shape and padding are part of the
specialization key, so kernels compile once per block shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tile.ir.types import DTYPES
from tile.runtime.arrays import describe_argument

MAX_RANK = 5


def _element_bytes(array: Any) -> int:
    return DTYPES[describe_argument(array).dtype].bytes


@dataclass
class TensorDescriptor:
    """A tensor in memory (`base`: any array a kernel accepts), its `shape` and `strides` in
    elements, the `block_shape` its loads and stores move, and the `padding` ("zero" or "nan")
    that elements outside the tensor read as. The rules are Triton's (those of the GPU's tensor
    memory accelerator): 1 to 5 dimensions, a 16-byte aligned base, a last stride of 1, the
    other strides multiples of 16 bytes, positive sizes, block dimensions powers of two;
    violations raise ValueError."""

    base: Any
    shape: Sequence[int]
    strides: Sequence[int]
    block_shape: Sequence[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = list(self.block_shape)
        rank = len(self.shape)
        if not 1 <= rank <= MAX_RANK:
            raise ValueError(f"TensorDescriptor: the rank must be 1 to {MAX_RANK}, got {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: rank mismatch: shape {self.shape}, strides {self.strides}, "
                             f"block_shape {self.block_shape}")
        info = describe_argument(self.base)
        if info.address % 16:
            raise ValueError(f"TensorDescriptor: the base must be 16-byte aligned, its address is {info.address:#x}")
        for i, d in enumerate(self.block_shape):
            if isinstance(d, bool) or not isinstance(d, int):
                raise TypeError(f"TensorDescriptor: block_shape element {i} must be an int, got {d!r}")
            if d <= 0 or d & (d - 1):
                raise ValueError(f"TensorDescriptor: block_shape element {i} must be a power of 2, got {d}")
        elem_bytes = DTYPES[info.dtype].bytes
        for i, s in enumerate(self.shape):
            if not 0 < s < 2**31:
                raise ValueError(f"TensorDescriptor: shape element {i} must be positive and fit in int32, got {s}")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous (stride 1), got strides "
                             f"{self.strides}")
        for i, s in enumerate(self.strides[:-1]):
            if s * elem_bytes % 16:
                raise ValueError(f"TensorDescriptor: strides must be 16-byte aligned: stride {i} is {s} elements "
                                 f"of {elem_bytes} bytes ({s * elem_bytes} bytes)")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {self.padding!r}")
        if self.padding == "nan" and not DTYPES[info.dtype].is_floating:
            raise ValueError(f"TensorDescriptor: padding 'nan' is only supported for floating-point tensors, got "
                             f"{info.dtype}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Sequence[int], padding: str = "zero") -> "TensorDescriptor":
        """A descriptor of the whole of `tensor` (its shape and strides; NumPy's byte strides
        and DeviceArray's are converted to elements)."""
        stride = getattr(tensor, "stride", None)
        if callable(stride):
            strides = list(stride())
        else:
            elem_bytes = _element_bytes(tensor)
            strides = [s // elem_bytes for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding)


__all__ = ["TensorDescriptor"]
