"""LICM: move loop-invariant pure ops out of scf.for and scf.while bodies.

Before:
    %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
    ^bb(%i: i32, %acc: tensor<64xf32>):
      %s = tt.splat %scale : tensor<64xf32>       // invariant
      %m = arith.mul %s, %s : tensor<64xf32>      // invariant, once %s is hoisted
      %v = tt.load %ptrs : tensor<64xf32>         // not pure: stays
      %w = arith.mul %v, %m : tensor<64xf32>
      %a = arith.add %acc, %w : tensor<64xf32>
      scf.yield %a
    }
After:
    %s = tt.splat %scale : tensor<64xf32>
    %m = arith.mul %s, %s : tensor<64xf32>
    %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
    ^bb(%i: i32, %acc: tensor<64xf32>):
      %v = tt.load %ptrs : tensor<64xf32>
      %w = arith.mul %v, %m : tensor<64xf32>
      %a = arith.add %acc, %w : tensor<64xf32>
      scf.yield %a
    }

An op is invariant when it is pure and every value it (or anything nested in it) uses is
defined outside the loop or by an op already hoisted. Pure ops have no side effects and
cannot trap, so running one before a loop that does not iterate is harmless. Inner loops
are handled first, so an op can climb out of a whole loop nest. A loop with the attribute
disable_licm (`while tl.condition(c, disable_licm=True)`) keeps its code.
"""
from __future__ import annotations

from ..ir import Operation, Value, is_pure, op_def
from ..ir.verifier import values_defined_in
from .pass_manager import Pass

LOOPS = ("scf.for", "scf.while")


def _invariant(op: Operation, inside: set[Value]) -> bool:
    if not is_pure(op) or op_def(op.name).terminator:
        return False
    own = values_defined_in(op) if op.regions else set()
    return all(v not in inside or v in own for inner in op.walk() for v in inner.operands)


def hoist_invariants(loop: Operation) -> int:
    """Move the invariant ops of `loop`'s regions in front of it; return how many moved."""
    inside = values_defined_in(loop)
    moved = 0
    for region in loop.regions:
        for block in region.blocks:
            for op in list(block.ops):
                if _invariant(op, inside):
                    op.move_before(loop)
                    inside.difference_update(op.results)
                    moved += 1
    return moved


class LICM(Pass):
    """Loop-invariant code motion for scf.for and scf.while."""

    name = "licm"

    def run(self, func: Operation) -> None:
        loops = [op for op in func.walk() if op.name in LOOPS and not op.attrs.get("disable_licm")]
        for loop in reversed(loops):  # innermost first: what leaves an inner loop may leave the outer
            hoist_invariants(loop)


__all__ = ["LICM", "hoist_invariants"]
