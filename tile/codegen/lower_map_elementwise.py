"""Lowering of tt.map_elementwise: the scalar region lowered once per group of `pack` registers.

The region is tile IR on scalars (it may hold scf.if / scf.for / scf.while), which is what a
thread runs on one register of each operand, so each group binds the region's arguments to
the registers and lowers its ops in place; the values returned become the result registers.
Registers are taken `pack` at a time in register order (a short last group repeats the
thread's last register; its extra results are dropped).

    %z = tt.map_elementwise %x, %y {pack = 1} : tensor<256xi32, #L> {      (2 registers per thread)
    ^bb(%a: i32, %b: i32):
      %c = arith.cmp %a, %b {predicate = "lt"} : i1
      %r = scf.if %c : i32 { scf.yield %m1 } { scf.yield %p1 }
      tt.map_elementwise.return %r
    }
  becomes, per thread, the region twice: once on %x0, %y0 (giving %z0), once on %x1, %y1.
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from .lower_core import Lowering, lowers


@lowers("tt.map_elementwise")
def _lower_map_elementwise(ctx: Lowering, op: Operation) -> None:
    pack = op.attrs["pack"]
    block = op.regions[0].block
    n = ctx.info(op.results[0].type).num_regs
    operands = [ctx.get(v) * (n if len(ctx.get(v)) == 1 else 1) for v in op.operands]
    results: list[list[Value]] = [[] for _ in op.results]
    for first in range(0, n, pack):
        lanes = [min(first + j, n - 1) for j in range(pack)]
        for k, arg in enumerate(block.args):
            ctx.set(arg, [operands[k // pack][lanes[k % pack]]])
        ctx.lower_ops(block.ops[:-1])
        returned = [ctx.get(v)[0] for v in block.terminator.operands]
        for r, values in enumerate(results):
            values.extend(returned[r * pack:(r + 1) * pack][:n - first])
    for r, values in zip(op.results, results):
        ctx.set(r, values)


__all__: list[str] = []
