"""Lowering of tt.gather: with warp shuffles when the gathered axis lies in the lanes of a warp,
otherwise through scratch shared memory.

Warp shuffles (tile.ir.layouts.gather_in_warp: the source holds the axis in lanes only, and the
result's other coordinates come from the same register and warp of the source, in lanes that
differ only in the axis's lane bits). Each result register is one shfl.sync.idx from the lane
whose axis bits spell the index:

    %y = tt.gather %x, %i {axis = 0} : tensor<32xf32, #blocked<spt = [1], tpw = [32], wpc = [1], order = [0]>>
  becomes, per thread,
    %k = arith.and %i, %c31 : i32                  index wrapped into the axis (memory-safe)
    %y = simt.shfl %x, %k {mode = "idx"} : f32     lane %k holds element %k

Scratch shared memory otherwise (attr scratch_offset, set by the allocator): every thread
stores its source registers row-major (vectorized like gpu.local_store; replicas do not write),
a barrier, then each result register loads its element at
row_major(result coordinate with the axis coordinate replaced by the index):

    simt.barrier (if shared memory is in use) ; st.shared [src] ; simt.barrier
    %a = (T ^ R_r) + (index & (n - 1)) * stride(axis)      T from %tid, R_r per register
    %y_r = simt.ld_shared [scratch + 4 * %a] : f32

An index outside [0, n) is wrapped into the axis (undefined result, as in Triton, but never an
access outside the buffer). Later shared-memory users put a barrier before theirs (Lowering
tracks it), as for tt.reduce.
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import gather_in_warp
from ..ir.types import element_type, i1, i32, u8
from .lower_cast import convert
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_elementwise import select
from .lower_reduce import shuffle
from .lower_shape import shared_address, shared_vector

Coord = tuple[int, ...]


def _row_major_strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return list(reversed(strides))


def _flat(coord: Coord, strides: list[int]) -> int:
    """Row-major index of `coord`; XOR-linear in the coordinate bits (power-of-two shapes)."""
    return sum(c * s for c, s in zip(coord, strides))


def _wrapped_index(ctx: Lowering, index: Value, size: int) -> Value:
    """`index` as an i32 in [0, size) (its low bits)."""
    as_i32 = index if index.type == i32 else convert(ctx, index, i32)
    return ctx.op("arith.and", [as_i32, ctx.const(size - 1, i32)], i32)


def _by_shuffles(ctx: Lowering, op: Operation) -> None:
    src, index = op.operands
    axis = op.attrs["axis"]
    sinfo, rinfo = ctx.info(src.type), ctx.info(op.result.type)
    off = lambda c: tuple(x for d, x in enumerate(c) if d != axis)  # noqa: E731
    source_reg: dict[Coord, int] = {}
    for r, c in enumerate(sinfo.reg_coords):
        source_reg.setdefault(off(c), r)
    lane_of_bit = {b[axis].bit_length() - 1: lane for lane, b in enumerate(sinfo.tid_bases[:ctx.lane_bits]) if b[axis]}
    axis_lanes = sum(1 << lane for lane in lane_of_bit.values())
    keep = ctx.op("arith.and", [ctx.lane(), ctx.const(~axis_lanes & (ctx.warp_size - 1), i32)], i32)
    size = src.type.shape[axis]
    vals, idxs = ctx.get(src), ctx.get(index)
    canon = rinfo.canonical_regs()
    out: list[Value] = []
    for r, c in enumerate(rinfo.reg_coords):
        if canon[r] != r:
            out.append(out[canon[r]])
            continue
        k = _wrapped_index(ctx, idxs[r], size)
        lane = keep
        for bit, target in lane_of_bit.items():  # index bit `bit` -> lane bit `target`
            moved = ctx.op("arith.and", [k, ctx.const(1 << bit, i32)], i32)
            shift = target - bit
            if shift:
                moved = ctx.op("arith.shl" if shift > 0 else "arith.shr", [moved, ctx.const(abs(shift), i32)], i32)
            lane = ctx.op("arith.or", [lane, moved], i32)
        out.append(shuffle(ctx, vals[source_reg[off(c)]], "idx", lane))
    ctx.set(op.result, out)


def _store_source(ctx: Lowering, info: LayoutInfo, vals: list[Value], base: Value, strides: list[int],
                  elem_bytes: int) -> None:
    """Every source element once into the scratch, row-major."""
    reg_offsets = [_flat(c, strides) for c in info.reg_coords]
    tid_offsets = [_flat(b, strides) for b in info.tid_bases]
    span = 0
    for o in tid_offsets:
        span |= o
    thread_bytes = ctx.mul(ctx.from_tid(tid_offsets), ctx.const(elem_bytes, i32))
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    vec = shared_vector(reg_offsets, span, elem_bytes)
    for r in range(0, info.num_regs, vec):
        if canon[r] != r:
            continue
        addr = shared_address(ctx, base, thread_bytes, span * elem_bytes, reg_offsets[r] * elem_bytes)
        b, offset = ctx.split(addr)
        ctx.effect("simt.st_shared", [b, owner] + vals[r:r + vec], vector=vec, offset=offset)


def _through_scratch(ctx: Lowering, op: Operation) -> None:
    src, index = op.operands
    axis = op.attrs["axis"]
    scratch = op.attrs.get("scratch_offset")
    if not isinstance(scratch, int) or scratch < 0:
        raise LoweringError(op, "needs scratch_offset (run the shared-memory allocator first)")
    el = element_type(src.type)
    elem_bytes = element_bytes(src.type)
    strides = _row_major_strides(src.type.shape)
    base = ctx.op("simt.smem_addr", [], i32, offset=scratch)
    vals = ctx.get(src)
    if el == i1:
        vals = [select(ctx, v, ctx.const(1, u8), ctx.const(0, u8)) for v in vals]
    if ctx.smem_pending:
        ctx.barrier()
    _store_source(ctx, ctx.info(src.type), vals, base, strides, elem_bytes)
    ctx.barrier()
    rinfo = ctx.info(op.result.type)
    on_axis = lambda c: tuple(0 if d == axis else x for d, x in enumerate(c))  # noqa: E731
    images = [_flat(on_axis(b), strides) for b in rinfo.tid_bases]
    span = 0
    for x in images:
        span |= x
    thread = ctx.from_tid(images)
    size, stride = src.type.shape[axis], strides[axis]
    idxs = ctx.get(index)
    canon = rinfo.canonical_regs()
    out: list[Value] = []
    for r, c in enumerate(rinfo.reg_coords):
        if canon[r] != r:
            out.append(out[canon[r]])
            continue
        row = ctx.coord_plus(thread, span, _flat(on_axis(c), strides))
        element = ctx.add(row, ctx.mul(_wrapped_index(ctx, idxs[r], size), ctx.const(stride, i32)))
        b, offset = ctx.split(ctx.add(base, ctx.mul(element, ctx.const(elem_bytes, i32))))
        v = ctx.effect("simt.ld_shared", [b, ctx.const(True, i1)], [u8 if el == i1 else el], vector=1,
                       offset=offset).result
        out.append(ctx.op("arith.cmp", [v, ctx.const(0, u8)], i1, predicate="ne") if el == i1 else v)
    ctx.set(op.result, out)
    ctx.smem_pending = ctx.scratch_pending = True


@lowers("tt.gather")
def _lower_gather(ctx: Lowering, op: Operation) -> None:
    src, index = op.operands
    if gather_in_warp(src.type.layout, src.type.shape, op.result.type.layout, op.result.type.shape,
                      op.attrs["axis"]):
        _by_shuffles(ctx, op)
    else:
        _through_scratch(ctx, op)
