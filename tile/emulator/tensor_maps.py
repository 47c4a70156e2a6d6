"""The emulator's TMA tensor maps: the 128 bytes a kernel compiled for sm_90a receives for each
host `TensorDescriptor` (its `.param .align 64 .b8 x_desc_tensormap[128]`).

On a GPU the driver's cuTensorMapEncodeTiled packs them in an undocumented format. The
emulator packs the same arguments (tile.runtime.tensor_map.encode_arguments: address, sizes
and byte strides innermost first, box, swizzle, out-of-bounds fill) in its own, and its
cp.async.bulk.tensor reads them back from the parameter's bytes:

    offset  0  b"TMAP"   4  rank (u8)   5  element bytes (u8)   6  swizzle span in bytes (u16)
    offset  8  global address (u64)     16  sizes (5 x u64)     56  byte strides (5 x u64; [0] = element bytes)
    offset 96  box (5 x u32)            116  padding            120  bits of an out-of-bounds element (u64)

    emulator_tensor_map(TensorDescriptor.from_tensor(a, [64, 64]))     # -> 128 bytes
    decode_tensor_map(raw)                                              # -> TensorMap
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..runtime.tensor_map import TENSOR_MAP_BYTES, TensorMapCache

MAGIC = b"TMAP"
MAX_RANK = 5
_FORMAT = "<4sBBHQ5Q5Q5I4xQ"
ELEMENT_BYTES = {"UINT8": 1, "UINT16": 2, "FLOAT16": 2, "BFLOAT16": 2, "INT32": 4, "UINT32": 4, "FLOAT32": 4,
                 "INT64": 8, "UINT64": 8, "FLOAT64": 8}
NAN_BITS = {"FLOAT16": 0x7E00, "BFLOAT16": 0x7FC0, "FLOAT32": 0x7FC00000, "FLOAT64": 0x7FF8000000000000}
SWIZZLE_SPAN = {"NONE": 0, "32B": 32, "64B": 64, "128B": 128}


@dataclass(frozen=True)
class TensorMap:
    """A decoded tensor map; every list innermost dimension first."""

    address: int
    element_bytes: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]  # bytes; strides[0] is the element size
    box: tuple[int, ...]
    swizzle: int  # span in bytes, 0: none
    fill_bits: int  # an element outside the tensor reads as these bits

    @property
    def box_bytes(self) -> int:
        n = self.element_bytes
        for b in self.box:
            n *= b
        return n


def encode_for_emulator(arguments: dict[str, Any]) -> bytes:
    """The 128 bytes of the tensor map for cuTensorMapEncodeTiled's `arguments`."""
    rank = arguments["tensorRank"]
    data_type = arguments["tensorDataType"][len("CU_TENSOR_MAP_DATA_TYPE_"):]
    eb = ELEMENT_BYTES[data_type]
    pad = [0] * (MAX_RANK - rank)
    fill = NAN_BITS.get(data_type, 0) if "NAN" in arguments["oobFill"] else 0
    swizzle = SWIZZLE_SPAN[arguments["swizzle"][len("CU_TENSOR_MAP_SWIZZLE_"):]]
    raw = struct.pack(_FORMAT, MAGIC, rank, eb, swizzle, arguments["globalAddress"],
                      *(list(arguments["globalDim"]) + pad), *([eb] + list(arguments["globalStrides"]) + pad),
                      *(list(arguments["boxDim"]) + pad), fill)
    return raw + bytes(TENSOR_MAP_BYTES - len(raw))


def decode_tensor_map(raw: bytes) -> TensorMap:
    """A tensor map from its 128 bytes; ValueError for bytes the emulator did not make."""
    fields = struct.unpack_from(_FORMAT, raw)
    if fields[0] != MAGIC:
        raise ValueError("the 128 bytes are not a tensor map made for the emulator (tile.emulator.tensor_maps)")
    rank, eb, swizzle, address = fields[1:5]
    sizes, strides, box = fields[5:10], fields[10:15], fields[15:20]
    return TensorMap(address, eb, tuple(sizes[:rank]), tuple(strides[:rank]), tuple(box[:rank]), swizzle, fields[20])


emulator_tensor_map = TensorMapCache(encode=encode_for_emulator)

__all__ = ["TensorMap", "encode_for_emulator", "decode_tensor_map", "emulator_tensor_map"]
