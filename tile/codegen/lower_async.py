"""Lowering of the software pipeline's ops: gpu.local_view, gpu.async_copy, gpu.async_commit/wait.

Before (stage %s of a 3-stage buffer; #B a blocked layout of 8 contiguous f16 per thread):

    %view = gpu.local_view %buf, %s : tensor<64x64xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>>
    gpu.async_copy %view, %ptrs, %mask {vector = 8}
    gpu.async_commit
    ...
    gpu.async_wait {pending = 1}

After (per thread):

    %off = arith.mul %s, %c8192 : i32                   // the view: buffer + stage * stage bytes
    %v = arith.add %buf, %off : i32
    %x = arith.add %v, %t : i32                         // %t: the thread's swizzled offset (hoisted)
    %n = arith.select %m0, %c16, %c0 : i32              // masked off: read 0 bytes, zero-fill
                                                        // (the loop-invariant part of the mask is
                                                        // a select computed once, see _source_size)
    simt.cp_async %x, %p0, %n, %true {bytes = 16, offset = 4096, src_offset = 128}
    simt.cp_async_commit
    ...
    simt.cp_async_wait {pending = 1}
  printed as
    cp.async.cg.shared.global [%r21+4096], [%rd7+128], 16, %r22;
    cp.async.commit_group;
    cp.async.wait_group 1;

Each group of `vector` consecutive registers (lower_memory.vector_groups) that is also
contiguous and aligned in the swizzled buffer is one cp.async of 4, 8 or 16 bytes (.cg for
16, .ca below); the shared address is the view's base + T(tid) ^ C like every shared access
(lower_shape.shared_address), the global one the pointer's base + an immediate. Groups of
less than 4 bytes (f16 with vector 1, int8 with vector 2) are a predicated ld.global with
`other` 0 and an st.shared: synchronous, so the later wait has nothing to wait for; in a
function whose wgmma reads shared memory, a fence.proxy.async follows them (cp.async bytes go
unfenced, see opt/insert_barriers.py; generic st.shared bytes are invisible to wgmma without). Threads
holding replicated elements do not copy (their cp.async is predicated off). Like a
gpu.local_store, a copy follows a barrier when a reduce's or scan's scratch was used since the
last one: the scratch may share the buffer's bytes, and insert-barriers leaves it to lowering.
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import SharedLayout
from ..ir.types import element_type, i1, i32
from ..opt.insert_barriers import reads_async_proxy
from .lower_core import Lowering, LoweringError, lowers
from .lower_elementwise import select
from .lower_memory import emit_load, vector_groups
from .lower_shape import alignment, shared_address


@lowers("gpu.local_view")
def _lower_local_view(ctx: Lowering, op: Operation) -> None:
    buf, stage = op.operands
    view_bytes = op.result.type.numel * element_bytes(op.result.type)
    base = ctx.get(buf)[0]
    addr = ctx.add(base, ctx.mul(ctx.get(stage)[0], ctx.const(view_bytes, i32)))
    ctx.smem_align[addr] = min(ctx.smem_align.get(base, 1), alignment(view_bytes))
    ctx.set(op.result, [addr])


@lowers("gpu.local_trans")
def _lower_local_trans(ctx: Lowering, op: Operation) -> None:
    ctx.set(op.result, ctx.get(op.operand(0)))  # the same bytes: its readers take the layout from its type


def _shared_vector(offsets: list[int], groups: list[list[int]], span: int) -> int:
    """How many registers of each group are also consecutive (and aligned) in shared memory."""
    v = len(groups[0])
    while v > 1 and not (span % v == 0 and all(
            offsets[g[0]] % v == 0 and all(offsets[g[i]] == offsets[g[0]] + i for i in range(v)) for g in groups)):
        v //= 2
    return v


@lowers("gpu.async_copy")
def _lower_async_copy(ctx: Lowering, op: Operation) -> None:
    view, ptrs = op.operand(0), op.operand(1)
    layout, t = view.type.layout, ptrs.type
    if not isinstance(layout, SharedLayout):
        raise LoweringError(op, "copies into a buffer with a #shared layout")
    masks = ctx.get(op.operand(2)) if op.num_operands > 2 else None
    if op.num_operands > 3 and any(ctx.const_value(o) not in (0, 0.0) for o in ctx.get(op.operand(3))):
        raise LoweringError(op, "cp.async zero-fills masked elements: `other` must be 0")
    info = ctx.info(t)
    el, eb = element_type(view.type), element_bytes(view.type)
    offsets = [layout.offset_of(c, t.shape) for c in info.reg_coords]
    tid_offsets = [layout.offset_of(b, t.shape) for b in info.tid_bases[:ctx.lane_bits + ctx.warp_bits]]
    span = 0
    for o in tid_offsets:
        span |= o
    vector, groups = vector_groups(info, op.attrs.get("vector", 1))
    vector = _shared_vector(offsets, groups, span) if vector > 1 else 1
    while vector * eb > 16:
        vector //= 2
    groups = [list(range(r, r + vector)) for r in range(0, info.num_regs, vector)]
    nbytes = vector * eb
    base = ctx.get(view)[0]
    if nbytes >= 4 and ctx.smem_align.get(base, 1) < min(nbytes, 16):
        raise LoweringError(op, f"the view is not aligned for {nbytes}-byte copies")
    ctx.barrier_after_scratch()
    thread = ctx.from_tid([o * eb for o in tid_offsets])
    ptr_regs = ctx.get(ptrs)
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    copied_now = False
    for g in groups:
        if canon[g[0]] != g[0]:
            continue
        dst = shared_address(ctx, base, thread, span * eb, offsets[g[0]] * eb)
        mask = masks[g[0]] if masks is not None else ctx.const(True, i1)
        if nbytes < 4:
            _copy_now(ctx, dst, ptr_regs[g[0]], mask, owner, el, vector)
            copied_now = True
            continue
        size = _source_size(ctx, mask, nbytes)
        (db, doff), (sb, soff) = ctx.split(dst), ctx.split(ptr_regs[g[0]])
        ctx.effect("simt.cp_async", [db, sb, size, owner], bytes=nbytes, offset=doff, src_offset=soff)
    if copied_now and _wgmma_reads_shared(ctx.func):
        ctx.effect("simt.fence_proxy_async")
    ctx.smem_pending = True


def _wgmma_reads_shared(func: Operation) -> bool:
    return any(reads_async_proxy(op) for op in func.walk())


def _and_leaves(ctx: Lowering, p: Value) -> list[Value]:
    """The i1 values whose conjunction `p` is (through arith.and ops made in this lowering)."""
    op = p.owner_op
    if op is not None and op.name == "arith.and" and p.type == i1:
        return [leaf for x in op.operands for leaf in _and_leaves(ctx, x)]
    return [p]


def _source_size(ctx: Lowering, mask: Value, nbytes: int) -> Value:
    """mask ? nbytes : 0 as selp(in-loop part, selp(thread-invariant part, nbytes, 0), 0): the
    invariant part of the mask (rows or columns inside the matrix) becomes an i32 computed once,
    so that no predicate stays live across the loop (ptxas spills those: 7 predicate registers)."""
    leaves = _and_leaves(ctx, mask)
    fixed = [x for x in leaves if x in ctx.hoisted]
    varying = [x for x in leaves if x not in ctx.hoisted]
    size = ctx.const(nbytes, i32)
    zero = ctx.const(0, i32)
    for group in (fixed, varying):
        if group:
            cond = group[0]
            for x in group[1:]:
                cond = ctx.and_pred(cond, x)
            size = select(ctx, cond, size, zero)
    return size


def _copy_now(ctx: Lowering, dst: Value, src: Value, mask: Value, owner: Value, el, vector: int) -> None:
    """A copy too narrow for cp.async: ld.global (0 where masked off), then st.shared."""
    zeros = [ctx.const(0, el)] * vector
    vals = emit_load(ctx, src, mask, zeros, el, vector, {})
    db, doff = ctx.split(dst)
    ctx.effect("simt.st_shared", [db, owner] + vals, vector=vector, offset=doff)


@lowers("gpu.async_commit")
def _lower_async_commit(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.cp_async_commit")


@lowers("gpu.async_wait")
def _lower_async_wait(ctx: Lowering, op: Operation) -> None:
    ctx.effect("simt.cp_async_wait", pending=op.attrs.get("pending", 0))
