"""tile's IR: types, operations, blocks and regions shared by every level, plus the tile op set."""
from .builder import Builder
from .core import Block, BlockArgument, Location, Operation, OpResult, Region, Value
from .ops import OP_DEFS, OpDef, VerificationError, is_pure, op_def, register_op
from .parser import ParseError, parse_op
from .printer import print_op
from .types import (DTYPES, DType, PointerType, TensorType, Type, bf16, element_type, f8e4nv, f8e5, f16, f32,
                    f64, i1, i8, i16, i32, i64, is_pointer, is_tensor, parse_type, register_layout, shape_of, u8,
                    u16, u32, u64, with_element)
from .verifier import verify
from . import gpu_ops, mfma_layouts, simt_ops, wmma_layouts  # noqa: E402,F401  (register the gpu and simt ops and the layout syntax)

__all__ = [
    "Builder", "Block", "BlockArgument", "Location", "Operation", "OpResult", "Region", "Value", "OP_DEFS",
    "OpDef", "VerificationError", "is_pure", "op_def", "register_op", "ParseError", "parse_op", "print_op",
    "DTYPES", "DType", "PointerType", "TensorType", "Type", "bf16", "element_type", "f8e4nv", "f8e5", "f16",
    "f32", "f64", "i1", "i8", "i16", "i32", "i64", "is_pointer", "is_tensor", "parse_type", "register_layout",
    "shape_of", "u8", "u16", "u32", "u64", "with_element", "verify",
]
