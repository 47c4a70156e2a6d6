"""PTX emission of Hopper's wgmma (the simt ops of tile.ir.simt_ops' "warp-group tensor cores").

A wgmma updates its accumulators in place and runs asynchronously: until a wgmma.wait_group
retires it, its registers may be touched only by the next wgmma of the same accumulators. So
the results take the registers of their operands (an accumulator chain stays in one set of
registers, which the loops' parallel copies then leave alone), and a copy, where an operand is
used elsewhere too, happens before a wgmma (which reads it) or after a wait:

    %d0... = simt.wgmma %da, %db, %p, %c0... {atype = "f16", n = 64, trans_a = false, trans_b = true}
  ->  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1, ..., %f32}, %rd4, %rd5, %p1, 1, 1, 0, 1;
    (A in registers:  ... {%f1, ..., %f32}, {%r1, %r2, %r3, %r4}, %rd5, %p1, 1, 1, 1;)
    %e0... = simt.wgmma_wait %d0... {pending = 1}   ->  wgmma.wait_group.sync.aligned 1;
"""
from __future__ import annotations

from ...ir import simt_ops
from ...ir.core import Operation
from .emit import _Emitter, _mov_type, handles, in_place_source

# wgmma: the immediates after scale-d, by operand type (scale-a, scale-b; transposes for 16-bit types:
# of A and B, or of B alone where A is in registers)
WGMMA_TAIL = {"f16": ", 1, 1{ta}, {tb}", "bf16": ", 1, 1{ta}, {tb}", "tf32": ", 1, 1", "e4m3": ", 1, 1",
              "e5m2": ", 1, 1", "s8": "", "u8": ""}


def _in_place(e: _Emitter, op: Operation, copy: bool) -> tuple[list[str], list[str]]:
    """Registers of the results of an op that updates its accumulator operands in place (wgmma,
    wgmma.wait_group: emit.IN_PLACE). A result takes its operand's register where
    emit.in_place_source allows; otherwise it gets a fresh register; returns the moves filling
    those from the operands (emitted before the op, or after it for a wait), or none when `copy`
    is false (the operands are not read)."""
    first = len(op.operands) - len(op.results)
    moves = []
    for r, v in zip(op.results, op.operands[first:]):
        if in_place_source(e, r) is not None:
            e.regs[r] = e.reg(v)
        else:
            d = e.reg(r)
            if copy:
                moves.append(f"mov.{_mov_type(v.type)} {d}, {e.src(v)};")
    return [e.reg(r) for r in op.results], moves


@handles("simt.wgmma")
def _wgmma(e: _Emitter, op: Operation) -> None:
    atype = op.attrs["atype"]
    shape = simt_ops.WGMMA_SHAPES[atype]
    scale = op.operands[len(op.operands) - len(op.results) - 1]
    reads_c = not (scale.owner_op is not None and scale.owner_op.name == "arith.constant" and
                   not scale.owner_op.attrs["value"])
    dests, moves = _in_place(e, op, copy=reads_c)
    for m in moves:
        e.emit(m)
    registers = len(op.operands) - len(op.results) == 6  # A in four i32 registers, not a u64 descriptor
    a = "{" + ", ".join(e.reg(v) for v in op.operands[:4]) + "}" if registers else e.reg(op.operand(0))
    b = op.operands[4 if registers else 1]
    ta = "" if registers else f", {int(op.attrs.get('trans_a', False))}"
    tail = WGMMA_TAIL[atype].format(ta=ta, tb=int(op.attrs.get("trans_b", False)))
    e.emit(f"wgmma.mma_async.sync.aligned.m64n{op.attrs['n']}k{shape.k}.{shape.ctype}.{atype}.{atype} "
           f"{{{', '.join(dests)}}}, {a}, {e.reg(b)}, {e.reg(scale)}{tail};")


@handles("simt.wgmma_wait")
def _wgmma_wait(e: _Emitter, op: Operation) -> None:
    _, moves = _in_place(e, op, copy=True)
    e.emit(f"wgmma.wait_group.sync.aligned {op.attrs['pending']};")
    for m in moves:
        e.emit(m)
