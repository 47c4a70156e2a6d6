"""Shared-memory allocation: byte offsets for buffers whose lifetimes overlap must not overlap.

Buffers: every gpu.local_alloc (`bytes` attr; a multi-buffered one holds all its stages) and
the scratch of every tt.reduce / tt.scan whose operand layout splits the reduced axis across
warps, of every tt.gather that does not stay within warps (its source, row-major) and of every
tt.histogram (its bins, 4 bytes each) and of every tt.make_tensormap (the 128 bytes, aligned to 128,
in which the map is built before it goes to global memory) (`scratch_bytes`). A buffer lives from its definition to its last use in program order,
uses of its gpu.local_view stages included (a reduce's scratch: during the op); a use inside a
loop that does not contain the definition keeps the buffer alive for the whole loop, since the
next iteration comes back to it; a buffer that a TMA store with {deferred_wait} reads lives
for the whole function (the copy engine reads it until a wait that may come in a later
iteration), unless the kernel would then exceed `shared_limit`: those stores then wait at once
(deferred_wait = false) and their buffers live as any other. Buffers are placed largest first at the lowest offset free of
every placed buffer whose lifetime intersects its own, aligned to 16 bytes, or to 128 bytes for
a swizzled buffer (its bank pattern is computed from a line start), or to 8 rows of its swizzle
(1024 bytes for 128-byte rows) for a buffer wgmma reads (the hardware swizzles by address bits,
so each swizzle atom must start at such a boundary; a TMA copy's buffer likewise, and at least
to 128 bytes). The copies a pipelined loop
leaves in flight land at the gpu.async_wait {pending = 0} right after the loop, before any
later buffer that reuses their bytes is touched.
Sets `offset` on local_alloc, `scratch_offset` on the others, and func attr `shared_bytes`.

Before:
    %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x32xf32, #shared<...>>
    gpu.local_store %a, %x
    %y = gpu.local_load %a : ...
    %b = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x32xf32, #shared<...>>
    gpu.local_store %b, %y                            (%a is dead here: %b may reuse its bytes)
    %z = gpu.local_load %b : ...
    %s = tt.reduce %z {axis = 1} ...                  (4 warps along axis 1: 4*32*4 = 512 bytes)
After:
    tt.func {shared_bytes = 4096, ...}
    %a = gpu.local_alloc {bytes = 4096, offset = 0} ...
    %b = gpu.local_alloc {bytes = 4096, offset = 0} ...
    %s = tt.reduce %z {axis = 1, scratch_offset = 0} ...
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..ir import Operation, TensorType
from ..ir.dot_layouts import wgmma_swizzle
from ..ir.gpu_ops import element_bytes, stage_layout
from ..ir.layouts import gather_in_warp, warps_split_dim
from ..ir.tma_layouts import TENSOR_MAP_BYTES, tma_layout
from .pass_manager import Pass

ALIGN = 16
SWIZZLE_ALIGN = 128  # a swizzled buffer's XOR pattern assumes it starts a 128-byte bank line
_LOOPS = ("scf.for", "scf.while")


def _func_of(op: Operation) -> Operation:
    while op.name != "tt.func":
        op = op.parent_op
    return op


def needs_scratch(op: Operation) -> bool:
    """Whether an op's lowering exchanges data through scratch shared memory: a tt.reduce / tt.scan
    whose operand's warps split the axis, a tt.gather not done by warp shuffles, any tt.histogram,
    any tt.make_tensormap."""
    if op.name in ("tt.histogram", "tt.make_tensormap"):
        return True
    if op.name == "tt.gather":
        src, index = op.operand(0).type, op.operand(1).type
        return not gather_in_warp(src.layout, src.shape, index.layout, index.shape, op.attrs["axis"])
    if op.name not in ("tt.reduce", "tt.scan"):
        return False
    t = op.operand(0).type
    return isinstance(t, TensorType) and warps_split_dim(t.layout, t.shape, op.attrs["axis"])


def scratch_bytes(op: Operation) -> int:
    """tt.gather: the source, row-major; tt.histogram: 4 bytes per bin; tt.make_tensormap: a tensor
    map (TENSOR_MAP_BYTES); tt.reduce / tt.scan:
    num_warps * numel(shape without the axis, at least 1) * sum over operands of max(4, element bytes),
    laid out as [operand][warp][result element, row-major]."""
    if op.name == "tt.gather":
        return op.operand(0).type.numel * element_bytes(op.operand(0).type)
    if op.name == "tt.histogram":
        return 4 * op.result.type.numel
    if op.name == "tt.make_tensormap":
        return TENSOR_MAP_BYTES
    t = op.operand(0).type
    axis = op.attrs["axis"]
    rest = max(1, math.prod(t.shape[:axis] + t.shape[axis + 1:]))
    per = sum(max(4, element_bytes(v.type)) for v in op.operands)
    return _func_of(op).attrs["num_warps"] * rest * per


@dataclass
class _Buffer:
    op: Operation
    bytes: int
    start: int
    end: int
    align: int = ALIGN
    offset: int = -1


def _align(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


def _buffers(func: Operation) -> list[_Buffer]:
    pos: dict[Operation, int] = {}
    end: dict[Operation, int] = {}
    ops = list(func.walk())
    for i, op in enumerate(ops):
        pos[op] = i
    for op in reversed(ops):
        end[op] = max([pos[op]] + [end[inner] for region in op.regions for b in region.blocks for inner in b.ops])
    out = []
    for op in ops:
        if op.name == "gpu.local_alloc":
            stop = pos[op]
            for user in _users_through_views(op):
                stop = max(stop, pos[user])
                loop = user.parent_op
                while loop is not None and not loop.is_ancestor_of(op):
                    if loop.name in _LOOPS:
                        stop = max(stop, end[loop])
                    loop = loop.parent_op
            start = pos[op]
            if any(u.name == "gpu.tma_store" and u.attrs.get("deferred_wait") for u in op.result.users()):
                start, stop = 0, len(ops)  # read by the copy engine until a wait, maybe in a later iteration
            layout = op.result.type.layout
            align = SWIZZLE_ALIGN if layout.max_phase > 1 else ALIGN
            out.append(_Buffer(op, op.attrs["bytes"], start, stop, max(align, _wgmma_alignment(op))))
        elif needs_scratch(op):
            align = TENSOR_MAP_BYTES if op.name == "tt.make_tensormap" else ALIGN  # tensormap.replace's .b1024
            out.append(_Buffer(op, scratch_bytes(op), pos[op], end[op], align))
    return out


def _wgmma_alignment(alloc: Operation) -> int:
    """8 rows of the swizzle of a buffer some wgmma dot reads (see the module docstring), else 1;
    a TMA copy's buffer: that, and at least 128 bytes (cp.async.bulk.tensor's rule)."""
    t = alloc.result.type
    users = _users_through_views(alloc)
    copies = [u for u in users if u.name in ("gpu.tma_load", "gpu.tma_store", "gpu.tma_load_async")]
    if copies:
        box = copies[0].operand(0).type  # one stage of a ring
        return max(128, 8 * tma_layout(box.shape, element_bytes(box)).swizzle)
    if not any(u.name == "tt.dot" for u in users):
        return 1
    layout, shape = t.layout, t.shape
    if t.rank == 3:
        layout, shape = stage_layout(layout), shape[1:]
    swizzle = wgmma_swizzle(layout, shape, element_bytes(t))
    return 8 * swizzle if swizzle is not None else 1


def _users_through_views(alloc: Operation) -> list[Operation]:
    """The users of a buffer and of its views (gpu.local_view of its stages, gpu.local_trans),
    those of a transposed stage included."""
    out, values = [], [alloc.result]
    while values:
        for user in values.pop().users():
            out.append(user)
            if user.name in ("gpu.local_view", "gpu.local_trans"):
                values.append(user.result)
    return out


def allocate(buffers: list[_Buffer]) -> int:
    """Place `buffers` (first fit, largest first); returns the bytes used."""
    placed: list[_Buffer] = []
    for buf in sorted(buffers, key=lambda b: (-b.bytes, b.start)):
        live = sorted((p for p in placed if p.start <= buf.end and buf.start <= p.end), key=lambda p: p.offset)
        offset = 0
        for p in live:
            if offset < p.offset + p.bytes and p.offset < offset + buf.bytes:
                offset = _align(p.offset + p.bytes, buf.align)
        buf.offset = offset
        placed.append(buf)
    return max((b.offset + b.bytes for b in placed), default=0)


class AllocShared(Pass):
    """Assigns shared-memory offsets (see the module docstring)."""

    name = "alloc-shared"

    def __init__(self, shared_limit: Optional[int] = None):
        self.shared_limit = shared_limit

    def run(self, func: Operation) -> None:
        buffers = _buffers(func)
        total = allocate(buffers)
        deferred = [op for op in func.walk() if op.name == "gpu.tma_store" and op.attrs.get("deferred_wait")]
        if self.shared_limit is not None and total > self.shared_limit and deferred:
            for op in deferred:  # the stores wait at once and their buffers share bytes again
                op.attrs["deferred_wait"] = False
            buffers = _buffers(func)
            total = allocate(buffers)
        for b in buffers:
            b.op.attrs["offset" if b.op.name == "gpu.local_alloc" else "scratch_offset"] = b.offset
        func.attrs["shared_bytes"] = _align(total)


__all__ = ["AllocShared", "scratch_bytes", "needs_scratch", "allocate", "ALIGN", "SWIZZLE_ALIGN"]
