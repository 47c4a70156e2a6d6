"""Host tensor descriptors as TMA tensor maps (sm_90a): the 128-byte CUtensorMap a kernel
compiled with tensor maps receives for each `TensorDescriptor` argument, beside its base,
shape and strides (tile/frontend/specialize.py adds the `desc.tensormap` parameter).

The map is made by the driver's `cuTensorMapEncodeTiled` (through cuda-python) from the
descriptor, with CUDA's dimension order (innermost first):

    data type     the element type's (f16 -> FLOAT16, fp8 and 8-bit ints -> UINT8, ...)
    globalDim     shape reversed                      [N, M] for an M x N tensor
    globalStrides the outer strides in bytes, reversed [stride_m * element bytes]
    boxDim        the box of tile.ir.tma_layouts.tma_layout, reversed: one swizzle span wide
    elementStrides all 1; interleave none; L2 promotion 128B (as Triton)
    swizzle       tma_layout's (none, 32B, 64B, 128B): the layout the compiled kernel reads
    oobFill       NaN for padding "nan", else zeros (out-of-bounds elements of a load)

and is cached per (address, shape, strides, block shape, dtype, padding): a launch with the
same descriptor again costs a dictionary lookup. `encode` is injectable, so the packing is
testable without a GPU.

    tensor_map_bytes(TensorDescriptor.from_tensor(a, [64, 64]))   # -> 128 bytes
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from tile.ir.tma_layouts import TENSOR_MAP_BYTES, TMA_MAX_BOX, TMA_MIN_INNER_BYTES, tma_layout
from tile.ir.types import DTYPES

from .arrays import describe_argument

if TYPE_CHECKING:  # tile.tools builds on the runtime; the runtime names its descriptors only in annotations
    from tile.tools.tensor_descriptor import TensorDescriptor

TMA_TARGETS = ("sm_90a",)

# tile dtype -> CUtensorMapDataType name (8-bit floats move as bytes)
_DATA_TYPES = {
    "i1": "UINT8", "i8": "UINT8", "u8": "UINT8", "f8e4nv": "UINT8", "f8e5": "UINT8", "f8e4b15": "UINT8",
    "f8e4b8": "UINT8", "f8e5b16": "UINT8", "i16": "UINT16", "u16": "UINT16", "f16": "FLOAT16", "bf16": "BFLOAT16",
    "i32": "INT32", "u32": "UINT32", "f32": "FLOAT32", "i64": "INT64", "u64": "UINT64", "f64": "FLOAT64",
}
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


def uses_tensor_maps(target: str) -> bool:
    """Whether kernels for `target` take host descriptors as TMA tensor maps."""
    return target in TMA_TARGETS


def check_tma_rules(shape: Sequence[int], strides: Sequence[int], block_shape: Sequence[int], element_bytes: int,
                    address: int, what: str = "TensorDescriptor") -> None:
    """Raise a ValueError naming the TMA rule a descriptor breaks: a 16-byte aligned base,
    strides multiples of 16 bytes, box dimensions of at most 256 elements, a box's contiguous
    dimension of at least 16 bytes."""
    if address % 16:
        raise ValueError(f"{what}: TMA needs the base 16-byte aligned, its address is {address:#x}")
    for i, s in enumerate(strides[:-1]):
        if s * element_bytes % 16:
            raise ValueError(f"{what}: TMA needs strides that are multiples of 16 bytes: stride {i} is {s} elements "
                             f"of {element_bytes} bytes ({s * element_bytes} bytes)")
    for i, d in enumerate(block_shape):
        if d > TMA_MAX_BOX:
            raise ValueError(f"{what}: TMA boxes have at most {TMA_MAX_BOX} elements per dimension: block_shape "
                             f"element {i} is {d}")
    if block_shape[-1] * element_bytes < TMA_MIN_INNER_BYTES:
        raise ValueError(f"{what}: TMA needs the block's last dimension to hold at least {TMA_MIN_INNER_BYTES} "
                         f"bytes: block_shape[-1] is {block_shape[-1]} elements of {element_bytes} bytes")


def encode_arguments(address: int, dtype: str, shape: Sequence[int], strides: Sequence[int],
                     block_shape: Sequence[int], padding: str) -> dict[str, Any]:
    """The arguments of cuTensorMapEncodeTiled for a descriptor, by parameter name, enums as
    their names (see the module docstring)."""
    element_bytes = DTYPES[dtype].bytes
    layout = tma_layout(block_shape, element_bytes)
    rank = len(shape)
    return {
        "tensorDataType": f"CU_TENSOR_MAP_DATA_TYPE_{_DATA_TYPES[dtype]}",
        "tensorRank": rank,
        "globalAddress": address,
        "globalDim": [int(s) for s in reversed(shape)],
        "globalStrides": [int(s) * element_bytes for s in reversed(strides[:-1])],
        "boxDim": list(reversed(layout.box)),
        "elementStrides": [1] * rank,
        "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
        "swizzle": f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[layout.swizzle]}",
        "l2Promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
        "oobFill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if padding == "nan"
        else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
    }


def cuda_encode(arguments: dict[str, Any]) -> bytes:
    """cuTensorMapEncodeTiled through cuda-python: the 128 bytes of the tensor map."""
    from cuda.bindings import driver as drv

    enum = {"tensorDataType": drv.CUtensorMapDataType, "interleave": drv.CUtensorMapInterleave,
            "swizzle": drv.CUtensorMapSwizzle, "l2Promotion": drv.CUtensorMapL2promotion,
            "oobFill": drv.CUtensorMapFloatOOBfill}
    args = {k: getattr(enum[k], v) if k in enum else v for k, v in arguments.items()}
    u32, u64 = drv.cuuint32_t, drv.cuuint64_t  # cuda-python takes its own integer wrappers here
    err, tensor_map = drv.cuTensorMapEncodeTiled(
        args["tensorDataType"], u32(args["tensorRank"]), args["globalAddress"], [u64(d) for d in args["globalDim"]],
        [u64(s) for s in args["globalStrides"]], [u32(b) for b in args["boxDim"]],
        [u32(e) for e in args["elementStrides"]], args["interleave"], args["swizzle"], args["l2Promotion"],
        args["oobFill"])
    if err != drv.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled failed ({err.name}) for {arguments}")
    return pack_opaque([int(word) for word in tensor_map.opaque])


def pack_opaque(words: Sequence[int]) -> bytes:
    """The CUtensorMap's 16 opaque 64-bit words as the 128 bytes of the kernel parameter."""
    if len(words) != TENSOR_MAP_BYTES // 8:
        raise ValueError(f"a CUtensorMap has {TENSOR_MAP_BYTES // 8} words, got {len(words)}")
    return struct.pack(f"<{len(words)}Q", *words)


class TensorMapCache:
    """Tensor maps by (address, dtype, shape, strides, block shape, padding), made by `encode`
    (cuda_encode unless injected)."""

    def __init__(self, encode: Optional[Callable[[dict[str, Any]], bytes]] = None):
        self.encode = encode or cuda_encode
        self.maps: dict[tuple, bytes] = {}

    def __call__(self, desc: TensorDescriptor) -> bytes:
        info = describe_argument(desc.base)
        return self.at(desc, info.address, info.dtype)

    def at(self, desc: TensorDescriptor, address: int, dtype: str) -> bytes:
        """The map of `desc` whose base is at `address` and holds tile dtype `dtype` (the fast
        binder knows both already)."""
        key = (address, dtype, tuple(desc.shape), tuple(desc.strides), tuple(desc.block_shape), desc.padding)
        found = self.maps.get(key)
        if found is None:
            check_tma_rules(desc.shape, desc.strides, desc.block_shape, DTYPES[dtype].bytes, address)
            found = self.encode(encode_arguments(address, dtype, desc.shape, desc.strides,
                                                 desc.block_shape, desc.padding))
            if len(found) != TENSOR_MAP_BYTES:
                raise ValueError(f"a tensor map has {TENSOR_MAP_BYTES} bytes, the encoder gave {len(found)}")
            self.maps[key] = found
        return found


tensor_map_bytes = TensorMapCache()

__all__ = ["uses_tensor_maps", "check_tma_rules", "encode_arguments", "cuda_encode", "pack_opaque",
           "TensorMapCache", "tensor_map_bytes", "TMA_TARGETS", "TENSOR_MAP_BYTES"]
