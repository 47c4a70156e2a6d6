"""Dtype names, host-fallback DeviceArrays and argument description; no GPU needed."""

from __future__ import annotations

import numpy as np
import pytest

from tile.runtime import arrays
from tile.runtime.arrays import (
    TILE_DTYPES,
    ArgInfo,
    describe_argument,
    empty,
    empty_like,
    numpy_dtype_to_tile,
    tile_to_numpy_dtype,
    to_device,
)

rng = np.random.default_rng(1234)
HAVE_ML_DTYPES = arrays._ml_dtypes() is not None


@pytest.fixture
def host_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force DeviceArrays onto the host, as on a machine without a GPU."""
    monkeypatch.setenv("TILE_INTERPRET", "1")


# -- dtype names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "numpy_dtype, name",
    [
        (np.bool_, "i1"),
        (np.int8, "i8"),
        (np.int16, "i16"),
        (np.int32, "i32"),
        (np.int64, "i64"),
        (np.uint8, "u8"),
        (np.uint16, "u16"),
        (np.uint32, "u32"),
        (np.uint64, "u64"),
        (np.float16, "f16"),
        (np.float32, "f32"),
        (np.float64, "f64"),
    ],
)
def test_dtype_maps_both_ways(numpy_dtype: type, name: str) -> None:
    assert numpy_dtype_to_tile(np.dtype(numpy_dtype)) == name
    assert numpy_dtype_to_tile(numpy_dtype) == name  # scalar types work too
    assert tile_to_numpy_dtype(name) == np.dtype(numpy_dtype)


def test_every_tile_dtype_has_storage() -> None:
    for name in TILE_DTYPES:
        assert isinstance(tile_to_numpy_dtype(name), np.dtype)


@pytest.mark.skipif(HAVE_ML_DTYPES, reason="ml_dtypes installed: real bfloat16/float8 types are used")
def test_extended_dtypes_are_bits_without_ml_dtypes() -> None:
    assert tile_to_numpy_dtype("bf16") == np.dtype(np.uint16)
    assert tile_to_numpy_dtype("f8e4nv") == np.dtype(np.uint8)
    assert tile_to_numpy_dtype("f8e5") == np.dtype(np.uint8)


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="needs ml_dtypes")
def test_extended_dtypes_with_ml_dtypes() -> None:
    for name in ("bf16", "f8e4nv", "f8e5"):
        assert numpy_dtype_to_tile(tile_to_numpy_dtype(name)) == name


def test_unsupported_dtypes() -> None:
    with pytest.raises(TypeError, match="complex64 has no tile equivalent"):
        numpy_dtype_to_tile(np.dtype(np.complex64))
    with pytest.raises(ValueError, match="unknown tile dtype 'f128'"):
        tile_to_numpy_dtype("f128")


# -- DeviceArray on the host --------------------------------------------------------------


def test_to_device_round_trip(host_arrays: None) -> None:
    data = rng.standard_normal((37, 5)).astype(np.float32)
    array = to_device(data)
    assert not array.is_device
    assert (array.shape, array.dtype, array.tile_dtype) == ((37, 5), np.dtype(np.float32), "f32")
    assert (array.size, array.nbytes, array.ndim, array.strides) == (185, 740, 2, data.strides)
    np.testing.assert_array_equal(array.numpy(), data)
    data[0, 0] += 1.0  # to_device copies: the source may change afterwards
    assert array.numpy()[0, 0] != data[0, 0]


def test_host_view_is_shared_and_numpy_is_a_copy(host_arrays: None) -> None:
    array = to_device(rng.integers(-1000, 1000, size=64, dtype=np.int32))
    view = array.host_view()
    assert array.data_ptr() == view.ctypes.data
    copy = array.numpy()
    copy[3] = 12345
    assert view[3] != 12345
    view[4] = 777
    assert array.numpy()[4] == 777


def test_empty_and_copy_from(host_arrays: None) -> None:
    array = empty((3, 4), "i16")
    assert (array.dtype, array.tile_dtype, array.strides) == (np.dtype(np.int16), "i16", (8, 2))
    data = rng.integers(-(2**15), 2**15, size=(3, 4), dtype=np.int16)
    array.copy_from(data)
    np.testing.assert_array_equal(array.numpy(), data)
    assert empty(7, np.float64).tile_dtype == "f64"
    assert empty(7, "float16").tile_dtype == "f16"  # NumPy names are accepted too
    with pytest.raises(ValueError, match="shape mismatch"):
        array.copy_from(np.ones((4, 3), np.int16))
    with pytest.raises(TypeError, match="cannot copy float64"):
        array.copy_from(rng.standard_normal((3, 4)))


def test_empty_like(host_arrays: None) -> None:
    source = to_device(rng.standard_normal(10).astype(np.float16))
    like = empty_like(source)
    assert (like.shape, like.tile_dtype) == ((10,), "f16")
    assert empty_like(np.empty((2, 2), np.uint8)).tile_dtype == "u8"


def test_to_device_reinterprets_bits(host_arrays: None) -> None:
    bits = rng.integers(0, 2**16, size=9, dtype=np.uint16)
    array = to_device(bits, "bf16")
    assert array.tile_dtype == "bf16"
    np.testing.assert_array_equal(array.numpy().view(np.uint16), bits)
    with pytest.raises(TypeError, match="item sizes differ"):
        to_device(rng.standard_normal(3).astype(np.float32), "bf16")


def test_host_array_has_no_cuda_interface(host_arrays: None) -> None:
    array = to_device(rng.standard_normal(4))
    assert not hasattr(array, "__cuda_array_interface__")
    assert repr(array) == "DeviceArray(shape=(4,), dtype=f64, on=host)"


def test_bool_arrays(host_arrays: None) -> None:
    data = rng.integers(0, 2, size=20).astype(bool)
    array = to_device(data)
    assert array.tile_dtype == "i1"
    np.testing.assert_array_equal(array.numpy(), data)


# -- describe_argument ---------------------------------------------------------------------


def test_describe_numpy() -> None:
    data = rng.standard_normal(16).astype(np.float32)
    info = describe_argument(data)
    assert isinstance(info, ArgInfo)
    assert info == (data.ctypes.data, "f32", False)
    assert describe_argument(data[3:]).address == data.ctypes.data + 12


def test_describe_host_device_array(host_arrays: None) -> None:
    array = to_device(rng.integers(0, 100, size=8, dtype=np.uint32))
    assert describe_argument(array) == ArgInfo(array.data_ptr(), "u32", False)


class FakeCudaArray:
    """Quacks like a CuPy/Numba array through __cuda_array_interface__."""

    def __init__(self, address: int, typestr: str, mask: object = None) -> None:
        self.__cuda_array_interface__ = {
            "shape": (10,),
            "typestr": typestr,
            "data": (address, False),
            "version": 3,
            "strides": None,
            "mask": mask,
        }


def test_describe_cuda_array_interface() -> None:
    assert describe_argument(FakeCudaArray(0x7F0000001000, "<f4")) == (0x7F0000001000, "f32", True)
    assert describe_argument(FakeCudaArray(0x7F0000002000, "|b1")) == (0x7F0000002000, "i1", True)
    assert describe_argument(FakeCudaArray(0x7F0000003000, "<i8")).dtype == "i64"
    with pytest.raises(TypeError, match="masked arrays"):
        describe_argument(FakeCudaArray(0x1000, "<f4", mask=object()))


class Tensor:
    """A stand-in for torch.Tensor: same class name and module, never imports torch."""

    __module__ = "torch"

    class dtype_float32:
        def __str__(self) -> str:
            return "torch.float32"

    dtype = dtype_float32()
    is_cuda = True

    def data_ptr(self) -> int:
        return 0x7F00DEAD0000


def test_describe_torch_like_tensor() -> None:
    assert describe_argument(Tensor()) == (0x7F00DEAD0000, "f32", True)
    assert arrays._handlers[Tensor] is arrays._describe_torch


class FakeDLPack:
    """Exports a NumPy array through DLPack, claiming whatever device it is told."""

    def __init__(self, array: np.ndarray, device_type: int) -> None:
        self.array, self.device_type = array, device_type

    def __dlpack__(self, **kwargs: object) -> object:
        return self.array.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, 0)


def test_describe_dlpack() -> None:
    data = rng.standard_normal(32).astype(np.float16)
    assert describe_argument(FakeDLPack(data, 1)) == (data.ctypes.data, "f16", False)
    assert describe_argument(FakeDLPack(data[5:], 2)) == (data.ctypes.data + 10, "f16", True)
    flags = rng.integers(0, 2, size=4).astype(bool)
    assert describe_argument(FakeDLPack(flags, 2)).dtype == "i1"
    with pytest.raises(TypeError, match="DLPack device type 10"):
        describe_argument(FakeDLPack(data, 10))


@pytest.mark.parametrize("obj", [[1.0, 2.0], 3, "text", object()])
def test_describe_unsupported(obj: object) -> None:
    with pytest.raises(TypeError) as info:
        describe_argument(obj)
    message = str(info.value)
    assert type(obj).__qualname__ in message
    for kind in ("DeviceArray", "torch.Tensor", "__cuda_array_interface__", "__dlpack__", "numpy.ndarray"):
        assert kind in message

