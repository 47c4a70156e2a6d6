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

A kernel that makes its own maps (tl.make_tensor_descriptor on sm_90a) zeroes 128 bytes of
global memory and fills them with tensormap.replace, one field at a time; `replace_field` writes
each field where this format keeps it (the element type's code in the padding at 116, for the
fill that follows it).
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


# tensormap.replace's elemtype codes (PTX ISA, "Tensor-map"), as cuTensorMapEncodeTiled's names
ELEMTYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT32_FTZ",
             "FLOAT64", "BFLOAT16")
SWIZZLE_MODES = (0, 32, 64, 128)  # tensormap.replace's swizzle_mode codes -> span in bytes
_ELEMTYPE_AT = 116


def replace_field(raw: bytearray, name: str, args: list[int], stride_unit: int) -> None:
    """tensormap.replace.tile.`name` on the 128 bytes `raw`: `args` are (dimension, value) for
    per-dimension fields, (value,) otherwise; global strides count `stride_unit` bytes (16 for
    PTX ISA 8.5 and older). ValueError for a field or value the emulator does not model."""
    value = args[-1]
    if name == "global_address":
        struct.pack_into("<4sQ", raw, 0, MAGIC, 0)
        struct.pack_into("<Q", raw, 8, value)
    elif name == "rank":
        raw[4] = value + 1
    elif name == "box_dim":
        struct.pack_into("<I", raw, 96 + 4 * args[0], value)
    elif name == "global_dim":
        struct.pack_into("<Q", raw, 16 + 8 * args[0], value)
    elif name == "global_stride":  # dimension i's stride is that of dimension i + 1
        struct.pack_into("<Q", raw, 64 + 8 * args[0], value * stride_unit)
    elif name == "elemtype":
        if value >= len(ELEMTYPES):
            raise ValueError(f"element type code {value} is not modelled")
        raw[5] = ELEMENT_BYTES.get(ELEMTYPES[value], 4)
        struct.pack_into("<Q", raw, 56, raw[5])
        raw[_ELEMTYPE_AT] = value
    elif name == "swizzle_mode":
        if value >= len(SWIZZLE_MODES):
            raise ValueError(f"swizzle mode {value} is not modelled")
        struct.pack_into("<H", raw, 6, SWIZZLE_MODES[value])
    elif name == "fill_mode":
        kind = ELEMTYPES[raw[_ELEMTYPE_AT]].replace("_FTZ", "")
        struct.pack_into("<Q", raw, 120, NAN_BITS.get(kind, 0) if value else 0)
    elif name in ("element_stride", "interleave_layout"):
        if value != (1 if name == "element_stride" else 0):
            raise ValueError(f"{name} {value} is not modelled (only {1 if name == 'element_stride' else 0})")
    else:
        raise ValueError(f"the field {name} is not modelled")


emulator_tensor_map = TensorMapCache(encode=encode_for_emulator)

__all__ = ["TensorMap", "encode_for_emulator", "decode_tensor_map", "emulator_tensor_map", "replace_field"]
