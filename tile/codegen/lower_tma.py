"""Lowering of TMA copies (gpu.tma_load, gpu.tma_store) on sm_90a, as Triton's unpipelined
descriptor accesses: thread 0 issues the copies, one per box of tile.ir.tma_layouts.tma_layout.

Before (a 64x128 f16 block: two 64x64 boxes of the 128-byte swizzle, 8 KiB apart):

    gpu.tma_load %buf, %desc.tensormap, %row, %col

After (per thread; %bar: 8 bytes of shared memory of the lowering's own, %t0 = (%tid == 0), %e =
thread 0 again, as warp 0's lane that simt.elect picks: (%tid of lane 0 == 0) & simt.elect):

    simt.mbarrier_init %bar, %t0 {count = 1}
    simt.barrier                                    // the barrier is initialized; every warp is
                                                    // done with the bytes the copy overwrites
    simt.mbarrier_expect_tx %bar, %e {bytes = 16384}
    simt.tma_load %buf, %bar, %tmap, %e, %col, %row
    simt.tma_load %buf+8192, %bar, %tmap, %e, %col+64, %row
    simt.mbarrier_wait %bar, %c0                    // phase 0 completes when 16384 bytes landed
    simt.barrier                                    // nobody waits any more:
    simt.mbarrier_inval %bar, %t0                   // the next execution may initialize it again

    gpu.tma_store %buf, %desc.tensormap, %row, %col
->
    simt.fence_proxy_async                          // this thread's st.shared, to the async proxy
    simt.barrier                                    // ... every thread's
    simt.tma_store %buf, %tmap, %e, %col, %row
    simt.tma_store %buf+8192, %tmap, %e, %col+64, %row
    simt.bulk_commit
    simt.bulk_wait {pending = 0, read = true}       // the copies have read %buf (with read = false:
                                                    // and written memory, where a TMA load reads it back)
    simt.barrier                                    // ... before any thread writes it again

With {deferred_wait} (tile/opt/tma.py) the store ends at its simt.bulk_commit: insert-barriers
put a gpu.tma_store_wait (simt.bulk_wait {pending = 0, read = true}) and a barrier where its
buffer is next written, and one before the return.

The TMA ring's ops (tile/opt/pipeline.py; %bar_s: mbarrier %s of %bars, %bars + 8 * %s):

    gpu.mbarrier_init %bars {count = 1}   ->  simt.mbarrier_init of each mbarrier, %t0; simt.fence_proxy_async
    gpu.mbarrier_expect %bars, %s, %p     ->  simt.mbarrier_expect_tx %bar_s, (%e & %p)
    gpu.tma_load_async %v, %tmap, %bars, %s, %p, %row, %col
                                          ->  simt.tma_load of each box, %bar_s, (%e & %p); no wait
    gpu.mbarrier_wait %bars, %s, %phase   ->  simt.mbarrier_wait %bar_s, %phase
    gpu.mbarrier_wait %bars, %s, %phase {issuer}  ->  simt.mbarrier_wait %bar_s, %phase, %w0
    gpu.mbarrier_arrive %bars, %s         ->  simt.mbarrier_arrive %bar_s
    gpu.mbarrier_inval %bars              ->  simt.mbarrier_inval of each mbarrier, %t0

An in-kernel descriptor's tensor map (tile/opt/tma.py gave it slot %k of the `global_scratch`
parameter, TENSOR_MAP_BYTES per slot, `global_scratch_bytes` per program):

    %map = tt.make_tensormap %x, %M, %N, %sm, %c1, %scratch {block_shape = [64, 64], padding = "zero", slot = 1}
->
    %pid = %ctaid.x + %nctaid.x * (%ctaid.y + %nctaid.y * %ctaid.z)
    %at = simt.addptr %scratch, %pid * 2 + 1 {scale = 128}          // 2 slots per program
    %staging = simt.smem_addr {offset = 1024}                        // the op's scratch_offset
    %map = simt.tensormap_create %at, %t0, %w0, %staging, %x, %N, %M, %sm_bytes {box = [64, 64], elemtype = 6, ...}

Thread 0 builds the map in the op's 128 bytes of scratch shared memory (tensormap.replace on
shared memory is a local read-modify-write; on global memory each of the 13 fields would be a
round trip to L2); warp 0 (%w0) copies it to its global slot with tensormap.cp_fenceproxy,
whose release is scoped to the tensor map (a fence.proxy.tensormap release after ordinary
stores is a MEMBAR.ALL.GPU in SASS), and acquires it. Thread 0 issues every TMA copy, so that
acquire is all the ordering the copies need.
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.gpu_ops import element_bytes
from ..ir.tma_layouts import TENSOR_MAP_BYTES, tma_layout
from ..ir.types import i1, i32, i64, tensormap
from .lower_core import Lowering, LoweringError, lowers


def _boxes(ctx: Lowering, buf: Value, coord_values: list[Value],
           transposed: bool = False) -> tuple[list[tuple[Value, list[Value]]], int]:
    """(shared address, coordinates innermost first) of each box of the block that `buf` holds at
    `coord_values` (transposed: `buf` holds the block [b, a] as [a, b], the same bytes), and the
    bytes of one box."""
    t = buf.type
    layout = tma_layout(tuple(reversed(t.shape)) if transposed else t.shape, element_bytes(t))
    box_bytes = element_bytes(t)
    for d in layout.box:
        box_bytes *= d
    base = ctx.get(buf)[0]
    coords = [ctx.get(v)[0] for v in coord_values]
    boxes = []
    for j in range(layout.copies):
        inner = coords[-1] if j == 0 else ctx.add(coords[-1], ctx.const(j * layout.box[-1], i32))
        addr = base if j == 0 else ctx.add(base, ctx.const(j * box_bytes, i32))
        boxes.append((addr, [inner] + coords[-2::-1]))
    return boxes, box_bytes


def _first_thread(ctx: Lowering) -> Value:
    return ctx.op("arith.cmp", [ctx.tid(), ctx.const(0, i32)], i1, predicate="eq")


def _issuing_warp(ctx: Lowering) -> Value:
    """Warp 0 (from the warp-uniform lane-0 %tid), whose elected lane issues the copies."""
    return ctx.op("arith.cmp", [ctx.warp_tid(), ctx.const(0, i32)], i1, predicate="eq")


def _issuing_thread(ctx: Lowering) -> Value:
    """Thread 0 as the copies' predicate: warp 0 and its lane that elect.sync picks, here and
    now. ptxas then issues the copy from that one lane with its operands moved to uniform
    registers once; under `%tid == 0` it loops over the lanes' possibly different operands
    (ELECT, R2UR, BRA.U.ANY around every UTMALDG)."""
    return ctx.and_pred(_issuing_warp(ctx), ctx.effect("simt.elect", [], [i1]).result)


@lowers("gpu.tma_load")
def _lower_tma_load(ctx: Lowering, op: Operation) -> None:
    boxes, box_bytes = _boxes(ctx, op.operand(0), op.operands[2:], bool(op.attrs.get("transposed")))
    tensormap = ctx.get(op.operand(1))[0]
    first = _first_thread(ctx)
    bar = ctx.op("simt.smem_addr", [], i32, offset=ctx.alloc_shared(8))
    ctx.effect("simt.mbarrier_init", [bar, first], count=1)
    ctx.barrier()
    issuing = _issuing_thread(ctx)
    ctx.effect("simt.mbarrier_expect_tx", [bar, issuing], bytes=box_bytes * len(boxes))
    for addr, coords in boxes:
        ctx.effect("simt.tma_load", [addr, bar, tensormap, issuing, *coords])
    ctx.effect("simt.mbarrier_wait", [bar, ctx.const(0, i32)])
    ctx.barrier()
    ctx.effect("simt.mbarrier_inval", [bar, first])


@lowers("gpu.tma_store")
def _lower_tma_store(ctx: Lowering, op: Operation) -> None:
    boxes, _ = _boxes(ctx, op.operand(0), op.operands[2:])
    tensormap = ctx.get(op.operand(1))[0]
    ctx.effect("simt.fence_proxy_async")
    ctx.barrier()
    issuing = _issuing_thread(ctx)
    for addr, coords in boxes:
        ctx.effect("simt.tma_store", [addr, tensormap, issuing, *coords])
    ctx.effect("simt.bulk_commit")
    if op.attrs.get("deferred_wait"):  # insert-barriers placed a gpu.tma_store_wait where it is due
        return
    # Until the copies have read %buf; until they have written memory when a TMA load may read it back.
    ctx.effect("simt.bulk_wait", pending=0, read=not op.attrs.get("read_back", True))
    ctx.barrier()


@lowers("gpu.tma_store_wait")
def _lower_tma_store_wait(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.bulk_wait", pending=0, read=True)


def _barrier(ctx: Lowering, bars: Value, stage: Value) -> Value:
    """The shared address of mbarrier `stage` of `bars` (8 bytes each)."""
    return ctx.add(ctx.get(bars)[0], ctx.mul(ctx.get(stage)[0], ctx.const(8, i32)))


@lowers("gpu.mbarrier_init")
def _lower_mbarrier_init(ctx: Lowering, op: Operation) -> None:
    bars = op.operand(0)
    base, first = ctx.get(bars)[0], _first_thread(ctx)
    for stage in range(bars.type.shape[0]):
        addr = base if stage == 0 else ctx.add(base, ctx.const(8 * stage, i32))
        ctx.effect("simt.mbarrier_init", [addr, first], count=op.attrs["count"])
    ctx.effect("simt.fence_proxy_async")


@lowers("gpu.mbarrier_inval")
def _lower_mbarrier_inval(ctx: Lowering, op: Operation) -> None:
    bars = op.operand(0)
    base, first = ctx.get(bars)[0], _first_thread(ctx)
    for stage in range(bars.type.shape[0]):
        addr = base if stage == 0 else ctx.add(base, ctx.const(8 * stage, i32))
        ctx.effect("simt.mbarrier_inval", [addr, first])


@lowers("gpu.mbarrier_expect")
def _lower_mbarrier_expect(ctx: Lowering, op: Operation) -> None:
    bars, stage, pred = op.operands
    issuing = ctx.and_pred(_issuing_thread(ctx), ctx.get(pred)[0])
    ctx.effect("simt.mbarrier_expect_tx", [_barrier(ctx, bars, stage), issuing], bytes=op.attrs["bytes"])


@lowers("gpu.tma_load_async")
def _lower_tma_load_async(ctx: Lowering, op: Operation) -> None:
    view, tensormap, bars, stage, pred = op.operands[:5]
    boxes, _ = _boxes(ctx, view, op.operands[5:], bool(op.attrs.get("transposed")))
    ctx.barrier_after_scratch()
    issuing = ctx.and_pred(_issuing_thread(ctx), ctx.get(pred)[0])
    bar = _barrier(ctx, bars, stage)
    for addr, coords in boxes:
        ctx.effect("simt.tma_load", [addr, bar, ctx.get(tensormap)[0], issuing, *coords])


@lowers("gpu.mbarrier_wait")
def _lower_mbarrier_wait(ctx: Lowering, op: Operation) -> None:
    bars, stage, phase = op.operands
    waiters = [_issuing_warp(ctx)] if op.attrs.get("issuer") else []
    ctx.effect("simt.mbarrier_wait", [_barrier(ctx, bars, stage), ctx.get(phase)[0], *waiters])


@lowers("gpu.mbarrier_arrive")
def _lower_mbarrier_arrive(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.mbarrier_arrive", [_barrier(ctx, *op.operands)])


# tensormap.replace's elemtype field (PTX ISA, "Tensor-map"), by tile element type: 8-bit floats move as bytes
TENSORMAP_ELEMTYPES = {"i8": 0, "u8": 0, "f8e4nv": 0, "f8e5": 0, "f8e4b15": 0, "f8e4b8": 0, "f8e5b16": 0,
                       "i16": 1, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7, "f64": 9,
                       "bf16": 10}
TENSORMAP_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle bytes -> swizzle_mode
TENSORMAP_FILLS = {"zero": 0, "nan": 1}  # padding -> fill_mode


def _program_index(ctx: Lowering) -> Value:
    """The linear index of this program in the grid, x fastest."""
    def special(name: str, axis: int) -> Value:
        return ctx.op(name, [], i32, axis=axis)

    yz = ctx.add(special("simt.ctaid", 1), ctx.mul(special("simt.nctaid", 1), special("simt.ctaid", 2)))
    return ctx.add(special("simt.ctaid", 0), ctx.mul(special("simt.nctaid", 0), yz))


@lowers("tt.make_tensormap")
def _lower_make_tensormap(ctx: Lowering, op: Operation) -> None:
    rank = len(op.attrs["block_shape"])
    base, scratch = op.operand(0), op.operands[-1]
    element = base.type.pointee
    layout = tma_layout(op.attrs["block_shape"], element.bytes)
    slots = ctx.func.attrs["global_scratch_bytes"] // TENSOR_MAP_BYTES
    index = ctx.add(ctx.mul(_program_index(ctx), ctx.const(slots, i32)), ctx.const(op.attrs["slot"], i32))
    slot = ctx.addptr(ctx.get(scratch)[0], index, TENSOR_MAP_BYTES)
    dims = [ctx.get(v)[0] for v in reversed(op.operands[1:1 + rank])]
    strides = [ctx.mul(ctx.get(v)[0], ctx.const(element.bytes, i64)) for v in reversed(op.operands[1 + rank:rank * 2])]
    staging_offset = op.attrs.get("scratch_offset")
    if not isinstance(staging_offset, int) or staging_offset < 0:
        raise LoweringError(op, "needs scratch_offset (run the shared-memory allocator first)")
    staging = ctx.op("simt.smem_addr", [], i32, offset=staging_offset)
    if ctx.smem_pending:  # slower threads may still use these bytes
        ctx.barrier()
    first_warp = ctx.op("arith.cmp", [ctx.tid(), ctx.const(ctx.warp_size, i32)], i1, predicate="lt")
    result = ctx.effect("simt.tensormap_create",
                        [slot, _first_thread(ctx), first_warp, staging, ctx.get(base)[0], *dims, *strides],
                        [tensormap], box=list(reversed(layout.box)), elemtype=TENSORMAP_ELEMTYPES[element.name],
                        swizzle=TENSORMAP_SWIZZLES[layout.swizzle], fill=TENSORMAP_FILLS[op.attrs["padding"]]).result
    ctx.smem_pending = ctx.scratch_pending = True
    ctx.set(op.result, [result])
