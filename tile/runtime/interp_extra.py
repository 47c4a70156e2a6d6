"""Interpreter closures for the elementwise escapes and hints: tt.map_elementwise runs its
scalar region with every group of `pack` elements as a program of its own (so the region's
control flow works as anywhere else: under masks where elements disagree); tt.assume checks
its promise; tt.elementwise_inline_asm (GPU assembly) cannot run here.
"""
from __future__ import annotations

import numpy as np

from tile.ir.core import Operation
from tile.ir.types import shape_of
from tile.ir.verifier import values_defined_in

from .interp_core import Compiler, ExecState, Frame, InterpreterError, implements, lane_text


class ElementState(ExecState):
    """The state of a region run per element: program p of the region is element group p
    (`per_program` groups per program of the enclosing state)."""

    __slots__ = ("outer", "per_program")

    def __init__(self, outer: ExecState, per_program: int):
        pids = tuple(np.repeat(p, per_program) if p.shape[0] == outer.P else p for p in outer.pids)
        super().__init__(outer.P * per_program, pids, outer.grid, outer.start, outer.mem)
        self.outer, self.per_program = outer, per_program
        if outer.active is not None:
            self.active = np.repeat(outer.active, per_program)

    def program(self, local: int) -> tuple[int, int, int]:
        return self.outer.program(local // self.per_program)


@implements("tt.map_elementwise")
def _map_elementwise(op: Operation, cc: Compiler):
    pack = op.attrs["pack"]
    region = cc.region_fn(op.regions[0])
    ins = [cc.slot(v) for v in op.operands]
    outs = [cc.slot(r) for r in op.results]
    shape = shape_of(op.results[0].type)
    groups = max(1, int(np.prod(shape))) // pack
    inside = values_defined_in(op)
    # values of the enclosing code the region reads (CSE may share a scalar with it)
    outer = sorted({cc.slot(v) for inner in op.walk() if inner is not op for v in inner.operands if v not in inside})

    def run(f: Frame, st: ExecState) -> None:
        sub = ElementState(st, groups)
        g = list(f)
        for s in outer:
            if g[s].shape[0] == st.P > 1:
                g[s] = np.repeat(g[s], groups, axis=0)
        lanes = [np.broadcast_to(f[s], (st.P,) + shape).reshape(sub.P, pack) for s in ins]
        values = region(g, sub, [x[:, j] for x in lanes for j in range(pack)])
        for r, s in enumerate(outs):
            lanes_r = [np.broadcast_to(v, (sub.P,)) for v in values[r * pack:(r + 1) * pack]]
            f[s] = np.stack(lanes_r, axis=1).reshape((st.P,) + shape)

    return run


@implements("tt.assume")
def _assume(op: Operation, cc: Compiler):
    s = cc.slot(op.operand(0))
    shape = shape_of(op.operand(0).type)

    def run(f: Frame, st: ExecState) -> None:
        bad = ~np.broadcast_to(f[s], (st.P,) + shape)
        if st.active is not None:
            bad = bad & st.active.reshape((st.P,) + (1,) * len(shape))
        if bad.any():
            where = lane_text(st, bad.shape, int(np.argmax(bad)))
            raise InterpreterError(cc.kernel, op, f"the condition of tl.assume is false, in {where}")

    return run


@implements("tt.elementwise_inline_asm")
def _inline_asm(op: Operation, cc: Compiler):
    raise cc.error(op, "tl.inline_asm_elementwise is GPU assembly and cannot run on the interpreter")


__all__ = ["ElementState"]
