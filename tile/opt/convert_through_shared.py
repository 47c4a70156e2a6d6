"""Lower layout conversions that move elements between threads to a trip through shared memory.

Every gpu.convert_layout whose conversion_kind is "shared" becomes a buffer, a store of the
source into it and a load in the destination layout. Conversions of kind "noop" and
"registers" stay: the lowering does them in registers. Barriers are not added here (that is
insert-barriers' job), nor offsets (alloc-shared's).

The buffer is row-major with the source's fastest dimension (most consecutive registers)
contiguous, so each thread writes its runs as vectors. Where the destination's fastest
dimension differs (a transpose-like read), the rows are XOR-swizzled to spread a column read
over the banks: vec = the source's run (at most 16 bytes), per_phase = rows that share one
128-byte line, max_phase = the 16-byte-ish groups in a line (Triton's recipe for swizzled
operands); same fastest dimension (or rank 1): no swizzle, reads and writes are already
consecutive.

Before (#T = #blocked<spt = [4, 1], tpw = [16, 2], wpc = [1, 4], order = [0, 1]>, column-major, and
#C = #blocked<spt = [1, 4], tpw = [2, 16], wpc = [4, 1], order = [1, 0]>, row-major):
    %y = gpu.convert_layout %x : tensor<64x64xf32, #C>          (%x: tensor<64x64xf32, #T>)
After:
    %0 = gpu.local_alloc {bytes = 16384, offset = -1} :
           tensor<64x64xf32, #shared<vec = 4, per_phase = 1, max_phase = 8, order = [0, 1]>>
    gpu.local_store %0, %x
    %y = gpu.local_load %0 : tensor<64x64xf32, #C>
"""
from __future__ import annotations

from typing import Sequence

from ..ir import Operation, TensorType
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import DistributedLayout, SharedLayout, conversion_kind
from .pass_manager import Pass


def _fastest_dim(layout: DistributedLayout, shape: Sequence[int]) -> int:
    linear = layout.to_linear(shape)
    rank = len(shape)
    return max(reversed(range(rank)), key=lambda d: linear.contiguous_registers(d))


def shared_layout_for(src: DistributedLayout, dst: DistributedLayout, shape: Sequence[int],
                      ebytes: int) -> SharedLayout:
    """The buffer layout for converting `src` to `dst` (see the module docstring)."""
    rank = len(shape)
    inner = _fastest_dim(src, shape)
    order = (inner,) + tuple(d for d in reversed(range(rank)) if d != inner)
    if rank < 2 or _fastest_dim(dst, shape) == inner:
        return SharedLayout(1, 1, 1, order)
    ncols = shape[inner]
    vec = min(src.to_linear(shape).contiguous_registers(inner), max(16 // ebytes, 1), ncols)
    per_phase = max(1, 128 // (ncols * ebytes))
    max_phase = max(1, min(ncols // vec, max(1, 128 // (vec * ebytes)) // per_phase))
    return SharedLayout(vec, per_phase, max_phase, order)


class ConvertThroughShared(Pass):
    """gpu.convert_layout of kind "shared" -> gpu.local_alloc + gpu.local_store + gpu.local_load."""

    name = "convert-through-shared"

    def run(self, func: Operation) -> None:
        for op in list(func.walk()):
            if op.name != "gpu.convert_layout":
                continue
            src, t = op.operand(0), op.result.type
            if conversion_kind(src.type.layout, t.layout, t.shape) != "shared":
                continue
            ebytes = element_bytes(t)
            shared = shared_layout_for(src.type.layout, t.layout, t.shape, ebytes)
            alloc = Operation("gpu.local_alloc", [], [TensorType(t.shape, t.element, shared)],
                              {"offset": -1, "bytes": t.numel * ebytes}, loc=op.loc)
            store = Operation("gpu.local_store", [alloc.result, src], loc=op.loc)
            load = Operation("gpu.local_load", [alloc.result], [t], loc=op.loc)
            load.result.name_hint = op.result.name_hint
            for new in (alloc, store, load):
                op.parent.insert_before(op, new)
            op.result.replace_all_uses_with(load.result)
            op.erase()


__all__ = ["ConvertThroughShared", "shared_layout_for"]
