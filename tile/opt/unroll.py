"""Loop unrolling: `tl.range(..., loop_unroll_factor=k)` repeats the loop body k times.

An scf.for with the attr loop_unroll_factor = k >= 2 and a positive constant step s becomes a
main loop stepping k * s whose body is k copies of the original (copy j sees the induction
variable plus j * s and the values the copy before it yielded), followed by the original loop,
now starting where the main loop stopped, for the remaining iterations (fewer than k). The
main loop ends at lb + floor(max(ub - lb, 0) / (k * s)) * (k * s), so both loops together run
exactly the original iterations in order. Loops with a runtime step, or a factor below 2, are
left as they are (Triton does the same with a runtime step: it cannot know the remainder).

Before (k = 2):
    %r = scf.for %lb, %ub, %c4, %acc0 : f32 {loop_unroll_factor = 2} {
    ^bb(%i: i32, %acc: f32):
      %x = tt.load ... %i ...
      %a = arith.add %acc, %x : f32
      scf.yield %a
    }
After:
    %span = arith.max (arith.sub %ub, %lb), %c0 ; %main_ub = %lb + (%span / %c8) * %c8
    %m = scf.for %lb, %main_ub, %c8, %acc0 : f32 {
    ^bb(%i: i32, %acc: f32):
      %x = tt.load ... %i ... ;  %a = arith.add %acc, %x
      %i1 = arith.add %i, %c4
      %x1 = tt.load ... %i1 ... ;  %a1 = arith.add %a, %x1
      scf.yield %a1
    }
    %r = scf.for %main_ub, %ub, %c4, %m : f32 { ...the original body... }
"""
from __future__ import annotations

from ..ir import Operation, Region, Value
from ..ir.core import Block
from .pass_manager import Pass

FACTOR = "loop_unroll_factor"


def _constant(v: Value):
    op = v.owner_op
    return op.attrs.get("value") if op is not None and op.name == "arith.constant" else None


def unroll_loop(loop: Operation, factor: int) -> bool:
    """Unroll scf.for `loop` `factor` times (see the module docstring); False if it cannot."""
    step = _constant(loop.operand(2))
    if factor < 2 or not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        return False
    lb, ub = loop.operand(0), loop.operand(1)
    t = lb.type

    def emit(name: str, operands: list[Value], **attrs) -> Value:
        op = Operation(name, operands, [t], attrs, loc=loop.loc)
        loop.parent.insert_before(loop, op)
        return op.result

    chunk = emit("arith.constant", [], value=step * factor)
    span = emit("arith.max", [emit("arith.sub", [ub, lb]), emit("arith.constant", [], value=0)])
    main_ub = emit("arith.add", [lb, emit("arith.mul", [emit("arith.div", [span, chunk]), chunk])])

    body = loop.regions[0].block
    attrs = {k: v for k, v in loop.attrs.items() if k != FACTOR}
    inits = list(loop.operands[3:])
    new_body = Block([a.type for a in body.args])
    main = Operation("scf.for", [lb, main_ub, chunk] + inits, [r.type for r in loop.results], attrs,
                     [Region([new_body])], loc=loop.loc)
    loop.parent.insert_before(loop, main)
    iv, carried = new_body.args[0], list(new_body.args[1:])
    for old, new in zip(body.args, new_body.args):
        new.name_hint = old.name_hint
    for j in range(factor):
        if j:
            offset = Operation("arith.constant", [], [t], {"value": j * step}, loc=loop.loc)
            shifted = Operation("arith.add", [iv, offset.result], [t], {}, loc=loop.loc)
            new_body.append(offset)
            new_body.append(shifted)
            copy_iv = shifted.result
        else:
            copy_iv = iv
        mapping: dict[Value, Value] = {body.args[0]: copy_iv, **dict(zip(body.args[1:], carried))}
        for op in body.ops:
            if op is body.terminator:
                carried = [mapping.get(v, v) for v in op.operands]
            else:
                new_body.append(op.clone(mapping))
    new_body.append(Operation("scf.yield", carried, [], {}, loc=body.terminator.loc))
    loop.set_operand(0, main_ub)
    for i, result in enumerate(main.results):
        loop.set_operand(3 + i, result)
    loop.attrs = attrs
    return True


class UnrollLoops(Pass):
    """Unrolls the scf.for loops marked with loop_unroll_factor (see the module docstring)."""

    name = "unroll-loops"

    def run(self, func: Operation) -> None:
        # innermost first: an outer loop's copies then hold the inner loops already unrolled
        for loop in reversed([op for op in func.walk() if op.name == "scf.for" and FACTOR in op.attrs]):
            factor = loop.attrs[FACTOR]
            if not unroll_loop(loop, factor):
                loop.attrs = {k: v for k, v in loop.attrs.items() if k != FACTOR}


__all__ = ["UnrollLoops", "unroll_loop"]
