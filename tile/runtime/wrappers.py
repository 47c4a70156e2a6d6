"""Host-side stand-ins for kernel array arguments (Triton's names).

`tile.reinterpret(x, tl.float8e4b15)` views the memory of an array as another element type
for a launch (a TensorWrapper: same address, new dtype); `tile.MockTensor(torch.float16)`
stands for an array whose only use is its dtype, to compile (`kernel.warmup`, `tile.dump`)
without allocating anything.

    codes = tile.to_device(np.frombuffer(data, np.uint8))        # fp8e4b15 codes as bytes
    upcast[(1,)](tile.reinterpret(codes, tl.float8e4b15), out, n, BLOCK=1024)
"""
from __future__ import annotations

from typing import Any


def _is_torch_dtype(obj: Any) -> bool:
    return type(obj).__module__ == "torch" and type(obj).__name__ == "dtype"


def dtype_name(dtype: Any) -> str:
    """The tile IR name of a dtype given as tl.dtype, tile IR or Triton name, torch dtype or NumPy dtype."""
    from tile.frontend.core import dtype as tl_dtype

    from .arrays import numpy_dtype_to_tile, torch_dtype_name

    if isinstance(dtype, tl_dtype) and not dtype.is_ptr():
        return dtype.ir.name
    if isinstance(dtype, str):
        return tl_dtype(dtype).ir.name
    if _is_torch_dtype(dtype):
        return torch_dtype_name(dtype)
    return numpy_dtype_to_tile(dtype)


class TensorWrapper:
    """`base` (any array tile accepts) whose memory a kernel reads and writes as `dtype` elements."""

    def __init__(self, base: Any, dtype: Any):
        self.base = base
        self.dtype = dtype
        self.tile_dtype = dtype_name(dtype)
        self.shape = getattr(base, "shape", None)
        self.device = getattr(base, "device", None)

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    __repr__ = __str__


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """`tensor`'s memory seen as `dtype` elements by the kernels it is passed to (no copy).

    Reinterpreting a TensorWrapper as its base's own dtype gives the base back.
    """
    if isinstance(tensor, TensorWrapper):
        if dtype_name(dtype) == _base_dtype_name(tensor.base):
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    from .arrays import describe_argument

    try:
        describe_argument(tensor)
    except TypeError:
        raise TypeError(f"cannot reinterpret a {type(tensor).__name__}: pass an array a kernel accepts") from None
    return TensorWrapper(tensor, dtype)


def _base_dtype_name(base: Any) -> str:
    from .arrays import describe_argument

    return describe_argument(base).dtype


class MockTensor:
    """An array argument known only by its dtype (address 0, in device memory), for compiling
    without data: `kernel.warmup(MockTensor(torch.float32), ..., grid=(1,))`."""

    @staticmethod
    def wrap_dtype(arg: Any) -> Any:
        """A MockTensor for a torch dtype, anything else unchanged (Triton's warmup convenience)."""
        return MockTensor(arg) if _is_torch_dtype(arg) else arg

    def __init__(self, dtype: Any, shape: Any = None):
        self.dtype = dtype
        self.tile_dtype = dtype_name(dtype)
        self.shape = [1] if shape is None else list(shape)

    def stride(self) -> tuple[int, ...]:
        strides = [1]
        for size in self.shape[:0:-1]:
            strides.append(strides[-1] * size)
        return tuple(reversed(strides))

    @staticmethod
    def data_ptr() -> int:
        return 0

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype}, shape={self.shape})"


__all__ = ["TensorWrapper", "reinterpret", "MockTensor", "dtype_name"]
