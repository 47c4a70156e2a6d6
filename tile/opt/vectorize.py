"""Vectorization: how many consecutive elements one ld/st.global of each memory op moves.

Sets attr `vector` on every tt.load / tt.store / tt.atomic_rmw / tt.atomic_cas:

    vector = min(registers of a thread holding consecutive elements along the layout's fastest
                 dimension (LinearLayout.contiguous_registers),
                 pointer contiguity along it, pointer alignment (bytes) / element bytes,
                 mask constancy along it (when masked), 16 bytes / element bytes)

All are powers of two, so a group of `vector` registers is one aligned access of at most 16
bytes that is entirely masked in or out. Scalar pointers and atomics get 1.

Before (#b4 = #blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>; the pointer 16-byte
aligned and contiguous, the mask `offs < n` with n divisible by 16):
    %x = tt.load %p, %mask : tensor<1024xf32, #b4>
After:
    %x = tt.load %p, %mask {vector = 4} : tensor<1024xf32, #b4>
"""
from __future__ import annotations

from ..ir import Operation, PointerType, TensorType, element_type
from ..ir.gpu_ops import element_bytes
from .axis_info import AxisInfoAnalysis
from .coalesce import MEMORY_OPS
from .pass_manager import Pass


def vector_width(op: Operation, analysis: AxisInfoAnalysis) -> int:
    """The `vector` attr of memory op `op` (see the module docstring)."""
    ptr = op.operand(0)
    t = ptr.type
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas") or not isinstance(t, TensorType):
        return 1
    ebytes = element_bytes(TensorType(t.shape, t.element.pointee))
    linear = t.layout.to_linear(t.shape)
    info = analysis[ptr]
    dim = max(range(t.rank), key=lambda d: (linear.contiguous_registers(d), info.contiguity[d]))
    vec = min(linear.contiguous_registers(dim), info.contiguity[dim], max(info.divisibility[dim] // ebytes, 1),
              max(16 // ebytes, 1))
    mask_index = 2 if op.name == "tt.store" else 1
    if op.name in ("tt.load", "tt.store") and op.num_operands > mask_index:
        vec = min(vec, analysis[op.operand(mask_index)].constancy[dim])
    return vec


class Vectorize(Pass):
    """Sets the `vector` attr of global memory ops."""

    name = "vectorize"

    def run(self, func: Operation) -> None:
        analysis = AxisInfoAnalysis(func)
        for op in func.walk():
            if op.name in MEMORY_OPS and isinstance(element_type(op.operand(0).type), PointerType):
                op.attrs["vector"] = vector_width(op, analysis)


__all__ = ["Vectorize", "vector_width"]
