"""Lowering of tt.print (vprintf) and tt.assert (__assertfail).

    tt.print %x {hex = false, prefix = "x: "} : tensor<64xf32, #L>
  becomes, in the thread that owns each element (replicas stay quiet):
    scf.if %owner {
      simt.vprintf %pid0, %pid1, %pid2, %i0, %x0_f64 {format = "pid (%d, %d, %d) idx (%d) x: %f\\n"}
      ...
    }
  A scalar prints once per program (thread 0). Floats print as %f (hex: their bits as %#x),
  integers as %d/%u/%lld/%llu (hex: %#x/%#llx), i1 as 0/1, pointers as %p.

    tt.assert %ok {message = "x > 0", file = "k.py", line = 7}
  becomes: if any of the thread's elements is false, call __assertfail(message, file, line,
  kernel name), which prints the message with the block and thread indices and stops the kernel.

    tt.assume %cond           becomes nothing: the promise served the passes before lowering.
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region, Value
from ..ir.types import DType, PointerType, f64, i1, i32, i64, u32, u64
from .lower_cast import bitcast, convert
from .lower_core import Lowering, lowers
from .lower_elementwise import select


def _printable(ctx: Lowering, v: Value, hex_: bool) -> tuple[Value, str]:
    t = v.type
    if isinstance(t, PointerType):
        return v, "%p"
    if t == i1:
        return select(ctx, v, ctx.const(1, i32), ctx.const(0, i32)), "%d"
    if t.is_floating and hex_:
        v = bitcast(ctx, v, DType(f"u{t.bits}", "uint", t.bits))
        t = v.type
    if t.is_floating:
        return convert(ctx, v, f64), "%f"
    wide = (i64 if t.is_signed else u64) if t.bits == 64 else (i32 if t.is_signed else u32)
    spec = ("%#llx" if hex_ else "%lld" if t.is_signed else "%llu") if t.bits == 64 else \
        ("%#x" if hex_ else "%d" if t.is_signed else "%u")
    return convert(ctx, v, wide), spec


def _if(ctx: Lowering, cond: Value) -> Block:
    then_block, else_block = Block(), Block()
    op = ctx.effect("scf.if", [cond])
    op.add_region(Region([then_block]))
    op.add_region(Region([else_block]))
    with ctx.at_block(else_block):
        ctx.effect("scf.yield")
    return then_block


@lowers("tt.print")
def _lower_print(ctx: Lowering, op: Operation) -> None:
    prefix = str(op.attrs.get("prefix", "")).replace("%", "%%")
    hex_ = bool(op.attrs.get("hex", False))
    pids = [ctx.op("simt.ctaid", [], i32, axis=a) for a in range(3)]
    if not op.operands:
        then = _if(ctx, ctx.tid_bits_zero(-1))
        with ctx.at_block(then):
            ctx.effect("simt.vprintf", pids, format=f"pid (%d, %d, %d) {prefix}\n")
            ctx.effect("scf.yield")
        return
    for v in op.operands:
        info = ctx.info(v.type)
        regs = ctx.get(v)
        rank = len(info.shape)
        threads = [ctx.from_tid([b[d] for b in info.tid_bases]) for d in range(rank)]
        spans = [info.thread_span(d) for d in range(rank)]
        canon = info.canonical_regs()
        then = _if(ctx, ctx.owner_pred(info))
        with ctx.at_block(then):
            for r, x in enumerate(regs):
                if canon[r] != r:
                    continue
                value, spec = _printable(ctx, x, hex_)
                idx = [ctx.coord_plus(threads[d], spans[d], info.reg_coords[r][d]) for d in range(rank)]
                where = f" idx ({', '.join(['%d'] * rank)})" if rank else ""
                ctx.effect("simt.vprintf", pids + idx + [value], format=f"pid (%d, %d, %d){where} {prefix}{spec}\n")
            ctx.effect("scf.yield")


@lowers("tt.assert")
def _lower_assert(ctx: Lowering, op: Operation) -> None:
    ok = None
    for c in ctx.get(op.operand(0)):
        ok = c if ok is None else ctx.op("arith.and", [ok, c], i1)
    failed = ctx.op("arith.not", [ok], i1)
    loc = op.loc
    then = _if(ctx, failed)
    with ctx.at_block(then):
        ctx.effect("simt.assertfail", message=str(op.attrs.get("message", "assertion failed")),
                   file=str(op.attrs.get("file") or (loc.file if loc else "<unknown>")),
                   line=int(op.attrs.get("line") or (loc.line if loc else 0)),
                   function=str(ctx.func.attrs.get("sym_name", "kernel")))
        ctx.effect("scf.yield")


@lowers("tt.assume")
def _lower_assume(ctx: Lowering, op: Operation) -> None:
    """A promise for the analyses before lowering; the GPU code has nothing to check."""
