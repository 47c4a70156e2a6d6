"""Arrays for kernels: dtype names, tile's `DeviceArray`, and reading pointer arguments.

Tile names its element types with short strings: "i1" (bool), "i8".."i64", "u8".."u64",
"f16", "bf16", "f32", "f64", "f8e4nv" (float8 e4m3fn), "f8e5" (float8 e5m2).

NumPy has no bfloat16 or float8. When `ml_dtypes` is installed its types are used; without
it bf16 elements are stored as their raw bits in uint16 and fp8 elements in uint8, so a
`DeviceArray` keeps its tile dtype next to its NumPy storage dtype.

`DeviceArray` holds GPU memory when a GPU is usable and `TILE_INTERPRET` is not "1";
otherwise it wraps a host NumPy array that the interpreter reads in place (`host_view()`),
so scripts that use `to_device` run unchanged with and without a GPU.
"""

from __future__ import annotations

import ctypes
import math
import os
import weakref
from functools import cache, partial
from types import ModuleType
from typing import Any, Callable, NamedTuple

import numpy as np

from tile.runtime import cuda_driver
from tile.runtime.wrappers import MockTensor, TensorWrapper

TILE_DTYPES: tuple[str, ...] = (
    "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "f8e4nv", "f8e5",
)  # fmt: skip

_NUMPY_TO_TILE: dict[np.dtype, str] = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}
_TILE_TO_NUMPY: dict[str, np.dtype] = {name: dtype for dtype, name in _NUMPY_TO_TILE.items()}

# tile dtypes NumPy lacks: ml_dtypes' type name, and the raw-bits type used without ml_dtypes.
_EXTENDED: dict[str, tuple[str, type]] = {
    "bf16": ("bfloat16", np.uint16),
    "f8e4nv": ("float8_e4m3fn", np.uint8),
    "f8e5": ("float8_e5m2", np.uint8),
}
_ML_DTYPES_TO_TILE: dict[str, str] = {ml_name: name for name, (ml_name, _) in _EXTENDED.items()}


@cache
def _ml_dtypes() -> ModuleType | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def numpy_dtype_to_tile(dtype: Any) -> str:
    """The tile dtype name of a NumPy dtype (bool is "i1"; ml_dtypes' bfloat16/float8 by name)."""
    name = _NUMPY_TO_TILE.get(dtype)
    if name is None:
        dtype = np.dtype(dtype)
        name = _NUMPY_TO_TILE.get(dtype)
        if name is None:
            # ml_dtypes' types are custom NumPy dtypes, recognizable only by name.
            name = _ML_DTYPES_TO_TILE.get(dtype.name)
            if name is None:
                raise TypeError(
                    f"NumPy dtype {dtype} has no tile equivalent; supported: bool, int8-64, uint8-64, "
                    f"float16/32/64, and ml_dtypes' bfloat16, float8_e4m3fn, float8_e5m2"
                )
    return name


@cache
def tile_to_numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype that stores tile dtype `name`.

    bf16 is ml_dtypes.bfloat16 when ml_dtypes is installed, else uint16 holding the bits;
    f8e4nv/f8e5 are ml_dtypes' float8 types, else uint8 holding the bits.
    """
    if name in _TILE_TO_NUMPY:
        return _TILE_TO_NUMPY[name]
    if name not in _EXTENDED:
        raise ValueError(f"unknown tile dtype {name!r}; known: {', '.join(TILE_DTYPES)}")
    ml_name, bits = _EXTENDED[name]
    ml_dtypes = _ml_dtypes()
    return np.dtype(getattr(ml_dtypes, ml_name) if ml_dtypes is not None else bits)


def _resolve_dtype(dtype: Any) -> tuple[np.dtype, str]:
    """(NumPy storage dtype, tile dtype name) for a tile name or anything np.dtype accepts."""
    if isinstance(dtype, str) and dtype in TILE_DTYPES:
        return tile_to_numpy_dtype(dtype), dtype
    dtype = np.dtype(dtype)
    return dtype, numpy_dtype_to_tile(dtype)


def _use_gpu() -> bool:
    return os.environ.get("TILE_INTERPRET") != "1" and cuda_driver.cuda_available()


def _release(address: int, device: int) -> None:
    """Free GPU memory of a collected DeviceArray."""
    try:
        cuda_driver.mem_free(address, device)
    except Exception:  # runs inside the garbage collector: nobody could handle the error
        pass


def _device_index(device: Any, on_gpu: bool) -> int:
    """The GPU a new DeviceArray lives on: `device` checked against the devices there are, or
    the current device for None. Without a GPU the only device is 0."""
    if device is None:
        return cuda_driver.current_device() if on_gpu else 0
    return cuda_driver.check_device_index(device, cuda_driver.device_count() if on_gpu else 1)


class DeviceArray:
    """A C-contiguous array in GPU memory, or in host memory when no GPU is used.

    `DeviceArray(shape, dtype, device=None)` allocates it uninitialized; `dtype` is a tile
    dtype name or a NumPy dtype; `device` is the index of the GPU that holds it (default: the
    current device, PyTorch's when PyTorch uses CUDA, else 0), and 0 without a GPU (the
    interpreter has one device). `strides` are in bytes, as in NumPy. Kernels given
    DeviceArrays of GPU n run on GPU n.
    """

    def __init__(self, shape: int | tuple[int, ...], dtype: Any, device: int | None = None) -> None:
        self.shape: tuple[int, ...] = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype, self.tile_dtype = _resolve_dtype(dtype)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        step, strides = self.dtype.itemsize, []
        for dim in reversed(self.shape):
            strides.append(step)
            step *= dim
        self.strides: tuple[int, ...] = tuple(reversed(strides))
        self.is_device = _use_gpu()
        self.device: int = _device_index(device, self.is_device)
        self._host: np.ndarray | None = None
        if self.is_device:
            self._address = cuda_driver.mem_alloc(self.nbytes, self.device)
            # Not at exit: the driver may already be torn down, and the process frees it all.
            weakref.finalize(self, _release, self._address, self.device).atexit = False
        else:
            self._host = np.empty(self.shape, self.dtype)
            self._address = self._host.ctypes.data

    def data_ptr(self) -> int:
        """The address of the first element (a device address when `is_device`)."""
        return self._address

    def host_view(self) -> np.ndarray:
        """The host array itself, without a copy (host arrays only: the interpreter's view)."""
        if self._host is None:
            raise RuntimeError("this DeviceArray lives on the GPU; use .numpy() for a host copy")
        return self._host

    def numpy(self) -> np.ndarray:
        """A host copy of the contents."""
        if self._host is not None:
            return self._host.copy()
        out = np.empty(self.shape, self.dtype)
        # Kernels run asynchronously, possibly on other streams: wait for all of them.
        cuda_driver.synchronize(self.device)
        cuda_driver.memcpy_dtoh(out.ctypes.data, self._address, self.nbytes, self.device)
        return out

    def copy_from(self, array: Any) -> None:
        """Overwrite the contents with `array` (same shape; same-kind casts allowed)."""
        source = np.asarray(array)
        if source.shape != self.shape:
            raise ValueError(f"shape mismatch: DeviceArray has {self.shape}, source has {source.shape}")
        if not np.can_cast(source.dtype, self.dtype, "same_kind"):
            raise TypeError(f"cannot copy {source.dtype} data into a DeviceArray of {self.dtype}")
        if self._host is not None:
            self._host[...] = source
            return
        source = np.ascontiguousarray(source, dtype=self.dtype)
        # Kernels still running may read this memory: let them finish before overwriting it.
        cuda_driver.synchronize(self.device)
        cuda_driver.memcpy_htod(self._address, source.ctypes.data, self.nbytes, self.device)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3, so CuPy, Numba and PyTorch can use the memory directly."""
        if not self.is_device:
            # An AttributeError makes hasattr() false, which is how consumers probe for it.
            raise AttributeError("a host DeviceArray has no __cuda_array_interface__")
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self._address, False),
            "strides": None,  # C-contiguous
            # tile launches on the default stream unless told otherwise; 1 names the legacy
            # default stream, so consumers on other streams order themselves after it.
            "stream": 1,
            "version": 3,
        }

    def __repr__(self) -> str:
        where = f"cuda:{self.device}" if self.is_device else "host"
        return f"DeviceArray(shape={self.shape}, dtype={self.tile_dtype}, on={where})"


def empty(shape: int | tuple[int, ...], dtype: Any, device: int | None = None) -> DeviceArray:
    """An uninitialized DeviceArray on GPU `device` (default: the current device); `dtype` is a
    tile dtype name or a NumPy dtype."""
    return DeviceArray(shape, dtype, device)


def empty_like(array: Any, device: int | None = None) -> DeviceArray:
    """An uninitialized DeviceArray with the shape and dtype of `array` (DeviceArray or NumPy),
    on `device`, by default the device of `array` when it is a DeviceArray."""
    if device is None and isinstance(array, DeviceArray) and array.is_device:
        device = array.device
    return DeviceArray(array.shape, getattr(array, "tile_dtype", array.dtype), device)


def to_device(array: Any, dtype: str | None = None, device: int | None = None) -> DeviceArray:
    """A DeviceArray on GPU `device` (default: the current device) holding a copy of `array`.

    `dtype` names a tile dtype whose bits `array` already holds, e.g. `to_device(bits, "bf16")`
    for a uint16 array of bfloat16 bits; its item size must match.
    """
    source = np.ascontiguousarray(array)
    if dtype is not None:
        storage = tile_to_numpy_dtype(dtype)
        if storage.itemsize != source.dtype.itemsize:
            raise TypeError(f"cannot reinterpret {source.dtype} data as {dtype}: item sizes differ")
        source = source.view(storage)
    out = DeviceArray(source.shape, dtype if dtype is not None else source.dtype, device)
    out.copy_from(source)
    return out


class ArgInfo(NamedTuple):
    """What the launcher and the specializer need from a pointer argument."""

    address: int
    dtype: str  # tile dtype name
    is_device: bool


# tuple.__new__ skips NamedTuple's Python-level __new__: half the cost, on every launch.
_arginfo: Callable[[tuple[int, str, bool]], ArgInfo] = partial(tuple.__new__, ArgInfo)

_SUPPORTED = (
    "tile.DeviceArray, torch.Tensor, objects with __cuda_array_interface__ (CuPy, Numba), "
    "objects with __dlpack__ and __dlpack_device__, and numpy.ndarray (interpreter only)"
)


def _unsupported(obj: Any) -> TypeError:
    cls = type(obj)
    return TypeError(f"cannot pass a {cls.__module__}.{cls.__qualname__} as an array argument; supported: {_SUPPORTED}")


def _describe_device_array(array: DeviceArray) -> ArgInfo:
    return _arginfo((array._address, array.tile_dtype, array.is_device))


_TORCH_TO_TILE: dict[str, str] = {
    "torch.bool": "i1",
    "torch.int8": "i8",
    "torch.int16": "i16",
    "torch.int32": "i32",
    "torch.int64": "i64",
    "torch.uint8": "u8",
    "torch.uint16": "u16",
    "torch.uint32": "u32",
    "torch.uint64": "u64",
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float32": "f32",
    "torch.float64": "f64",
    "torch.float8_e4m3fn": "f8e4nv",
    "torch.float8_e5m2": "f8e5",
}
TORCH_DTYPE_NAMES: dict[Any, str] = {}  # torch.dtype object -> tile name, filled as dtypes appear


def _torch_dtype(dtype: Any) -> str:
    name = _TORCH_TO_TILE.get(str(dtype))
    if name is None:
        raise TypeError(f"tensors of {dtype} cannot be passed to a tile kernel; supported: {sorted(_TORCH_TO_TILE)}")
    TORCH_DTYPE_NAMES[dtype] = name
    return name


def torch_dtype_name(dtype: Any) -> str:
    """The tile dtype name of a torch dtype (a dict lookup after the first time)."""
    return TORCH_DTYPE_NAMES.get(dtype) or _torch_dtype(dtype)


def _describe_torch(tensor: Any) -> ArgInfo:
    return _arginfo((tensor.data_ptr(), torch_dtype_name(tensor.dtype), tensor.is_cuda))


def _describe_numpy(array: np.ndarray) -> ArgInfo:
    # __array_interface__ is several times cheaper than .ctypes.data on the launch path.
    return _arginfo((array.__array_interface__["data"][0], numpy_dtype_to_tile(array.dtype), False))


@cache
def _typestr_to_tile(typestr: str) -> str:
    return numpy_dtype_to_tile(np.dtype(typestr))


def _describe_cuda_array_interface(obj: Any) -> ArgInfo:
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is None:
        raise _unsupported(obj)
    if interface.get("mask") is not None:
        raise TypeError(f"{type(obj).__qualname__}: masked arrays (__cuda_array_interface__ 'mask') are not supported")
    return _arginfo((interface["data"][0], _typestr_to_tile(interface["typestr"]), True))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """DLPack's DLTensor, the first member of the DLManagedTensor a "dltensor" capsule holds."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# DLPack device types a CUDA kernel can address: CUDA, CUDA pinned host, CUDA managed.
_DL_GPU_DEVICES = {2, 3, 13}
_DL_CPU = 1
_DL_CUDA = 2
# (DLDataTypeCode, bits) -> tile dtype; codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_DL_TO_TILE: dict[tuple[int, int], str] = {
    (0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64",
    (1, 8): "u8", (1, 16): "u16", (1, 32): "u32", (1, 64): "u64",
    (2, 16): "f16", (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16", (6, 8): "i1",
}  # fmt: skip


def _describe_dlpack(obj: Any) -> ArgInfo:
    device_type = obj.__dlpack_device__()[0]
    if device_type not in _DL_GPU_DEVICES and device_type != _DL_CPU:
        raise TypeError(
            f"{type(obj).__qualname__} lives on DLPack device type {device_type}; "
            f"tile's CUDA runtime takes CUDA (2), CUDA host (3), CUDA managed (13) or CPU (1) memory"
        )
    # The capsule is read, not consumed: its destructor releases the producer's export, and
    # `obj` keeps the memory alive for the launch.
    capsule = obj.__dlpack__()
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    dtype = _DL_TO_TILE.get((tensor.dtype.code, tensor.dtype.bits)) if tensor.dtype.lanes == 1 else None
    if dtype is None:
        raise TypeError(
            f"{type(obj).__qualname__}: DLPack dtype (code {tensor.dtype.code}, {tensor.dtype.bits} bits, "
            f"{tensor.dtype.lanes} lanes) has no tile equivalent"
        )
    return _arginfo(((tensor.data or 0) + tensor.byte_offset, dtype, device_type in _DL_GPU_DEVICES))


def _describe_wrapper(obj: TensorWrapper) -> ArgInfo:
    base = describe_argument(obj.base)
    return _arginfo((base.address, obj.tile_dtype, base.is_device))


def _describe_mock(obj: MockTensor) -> ArgInfo:
    return _arginfo((0, obj.tile_dtype, True))


# Handler per argument type, found once per type so a launch pays one dict lookup.
_handlers: dict[type, Callable[[Any], ArgInfo]] = {}


def _handler_for(obj: Any) -> Callable[[Any], ArgInfo]:
    if isinstance(obj, DeviceArray):
        handler: Callable[[Any], ArgInfo] = _describe_device_array
    elif cuda_driver.is_torch_tensor(obj):
        handler = _describe_torch
    elif isinstance(obj, np.ndarray):
        handler = _describe_numpy
    elif hasattr(obj, "__cuda_array_interface__"):
        handler = _describe_cuda_array_interface
    elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        handler = _describe_dlpack
    elif isinstance(obj, TensorWrapper):
        handler = _describe_wrapper
    elif isinstance(obj, MockTensor):
        handler = _describe_mock
    else:
        raise _unsupported(obj)
    _handlers[type(obj)] = handler
    return handler


def describe_argument(obj: Any) -> ArgInfo:
    """Address, tile dtype and device residence of an array argument.

    Supports DeviceArray, torch.Tensor, `__cuda_array_interface__`, DLPack and NumPy arrays,
    and tile.TensorWrapper / tile.MockTensor around them; anything else raises TypeError.
    """
    handler = _handlers.get(type(obj))
    if handler is None:
        handler = _handler_for(obj)
    return handler(obj)
