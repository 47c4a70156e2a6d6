"""Lowering of tt.histogram: bins in scratch shared memory, counted with shared-memory atomics.

    %h = tt.histogram %x, %m : tensor<64xi32, #B>      (%x: tensor<1024xi32, #L>)
  becomes, per thread,
    simt.barrier (if shared memory is in use)
    simt.st_shared [bins + 4 * tid], 0                 threads zero the bins (tid < 64)
    simt.barrier
    %in = (x_r as unsigned) < 64  and  m_r  and  (this thread is not a replica)
    @%in red.shared.add.s32 [bins + 4 * x_r], 1        one per register of %x
    simt.barrier
    %h_r = simt.ld_shared [bins + 4 * (T ^ R_r)]       each result register reads its bin

Values outside [0, num_bins) (negative ones included) and masked-off elements are not counted,
as in Triton; threads that replicate another thread's elements do not count them twice. The
bins are the op's scratch (attr scratch_offset, 4 bytes per bin); later shared-memory users put
a barrier before theirs (Lowering tracks it).
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.types import DType, element_type, i1, i32
from .lower_cast import bitcast, convert
from .lower_core import Lowering, LoweringError, lowers


def _in_range(ctx: Lowering, v: Value, bins: int) -> Value:
    """0 <= v < bins, as one unsigned compare of (at least) 32 bits."""
    if v.type.bits < 32:
        v = convert(ctx, v, i32)  # extended by the value's signedness
    bits = v.type.bits
    unsigned = DType(f"u{bits}", "uint", bits)
    as_unsigned = v if v.type.kind == "uint" else bitcast(ctx, v, unsigned)
    return ctx.op("arith.cmp", [as_unsigned, ctx.const(bins, unsigned)], i1, predicate="lt")


@lowers("tt.histogram")
def _lower_histogram(ctx: Lowering, op: Operation) -> None:
    scratch = op.attrs.get("scratch_offset")
    if not isinstance(scratch, int) or scratch < 0:
        raise LoweringError(op, "needs scratch_offset (run the shared-memory allocator first)")
    x = op.operand(0)
    bins = op.result.type.shape[0]
    base = ctx.op("simt.smem_addr", [], i32, offset=scratch)
    four = ctx.const(4, i32)
    if ctx.smem_pending:
        ctx.barrier()
    threads = ctx.threads
    zero = ctx.const(0, i32)
    for start in range(0, bins, threads):
        slot = ctx.add(ctx.tid(), ctx.const(start, i32))
        inside = ctx.const(True, i1) if start + threads <= bins else \
            ctx.op("arith.cmp", [slot, ctx.const(bins, i32)], i1, predicate="lt")
        b, offset = ctx.split(ctx.add(base, ctx.mul(slot, four)))
        ctx.effect("simt.st_shared", [b, inside, zero], vector=1, offset=offset)
    ctx.barrier()
    info = ctx.info(x.type)
    values = ctx.get(x)
    masks = ctx.get(op.operand(1)) if op.num_operands > 1 else None
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    one = ctx.const(1, i32)
    for r, v in enumerate(values):
        if canon[r] != r:
            continue
        pred = ctx.and_pred(owner, _in_range(ctx, v, bins))
        if masks is not None:
            pred = ctx.and_pred(pred, masks[r])
        slot = v if v.type == i32 else convert(ctx, v, i32)
        b, offset = ctx.split(ctx.add(base, ctx.mul(slot, four)))
        ctx.effect("simt.red", [b, pred, one], kind="add", sem="relaxed", scope="cta", offset=offset)
    ctx.barrier()
    rinfo = ctx.info(op.result.type)
    thread = ctx.mul(ctx.from_tid([b[0] for b in rinfo.tid_bases]), four)
    span = 0
    for b in rinfo.tid_bases:
        span |= b[0] * 4
    canon = rinfo.canonical_regs()
    out: list[Value] = []
    for r, (c,) in enumerate(rinfo.reg_coords):
        if canon[r] != r:
            out.append(out[canon[r]])
            continue
        b, offset = ctx.split(ctx.add(base, ctx.coord_plus(thread, span, 4 * c)))
        out.append(ctx.effect("simt.ld_shared", [b, ctx.const(True, i1)], [element_type(op.result.type)], vector=1,
                              offset=offset).result)
    ctx.set(op.result, out)
    ctx.smem_pending = ctx.scratch_pending = True
