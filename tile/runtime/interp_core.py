"""The interpreter's machinery: compiling tile IR into Python closures, and the state they run on.

All programs of a launch (or of a chunk of it) run together: every SSA value is a NumPy array
whose leading axis is the program. A value that is the same in every program keeps a leading
axis of size 1 (constants, scalar arguments, `arange`, values computed only from those), so
NumPy broadcasting shares it for free and control flow can tell when a decision is uniform.

    scalar i32 value in P programs:   shape (P,)   or (1,) when uniform
    tensor<4x8xf32>:                  shape (P, 4, 8)   or (1, 4, 8)

Each op compiles once into a closure `run(frame, state)` that reads its operands from the
frame (a list indexed by value slot) and writes its results there. `state.active` is None
when every program runs the current code, or a bool mask over the programs (inside
non-uniform control flow); side effects and loads honour it.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from tile.ir.core import Block, Operation, Region, Value
from tile.ir.ops import op_def

from .errors import TritonError

Frame = list
Closure = Callable[[Frame, "ExecState"], None]
OpCompiler = Callable[[Operation, "Compiler"], Closure]

OP_IMPLS: dict[str, OpCompiler] = {}


def implements(*names: str):
    """Register the decorated function as the compiler of the ops `names`."""

    def wrap(fn: OpCompiler) -> OpCompiler:
        for name in names:
            OP_IMPLS[name] = fn
        return fn

    return wrap


class InterpreterError(TritonError, RuntimeError):
    """A kernel failed on the interpreter: out-of-bounds access, failed assert, bad launch..."""

    def __init__(self, kernel: str, op: Optional[Operation], message: str):
        self.kernel = kernel
        self.op_name = op.name if op is not None else None
        self.loc = op.loc if op is not None else None
        where = ""
        if op is not None:
            place = f"{self.loc.file}:{self.loc.line}" if self.loc is not None else "unknown location"
            where = f" at {place} ({op.name})"
        self.detail = message
        super().__init__(f"kernel '{kernel}'{where}: {message}")


class ExecState:
    """What the closures of one chunk of programs share."""

    __slots__ = ("P", "active", "pids", "grid", "start", "mem", "scheduler")

    def __init__(self, P: int, pids: tuple, grid: tuple[int, int, int], start: int, mem, scheduler=None):
        self.P = P  # programs in this chunk
        self.active: Optional[np.ndarray] = None
        self.pids = pids  # program_id per axis: (P,) int32, or (1,) where the grid has size 1
        self.grid = grid
        self.start = start  # linear id of the chunk's first program
        self.mem = mem
        self.scheduler = scheduler  # interp_schedule.Scheduler when programs run one at a time, else None

    def program(self, local: int) -> tuple[int, int, int]:
        """Grid coordinates of the chunk's program number `local`."""
        gx, gy, _ = self.grid
        linear = self.start + local
        return linear % gx, (linear // gx) % gy, linear // (gx * gy)


def lane_text(st: ExecState, shape: tuple[int, ...], flat: int) -> str:
    """'program (x, y, z), index (i, j)' of element `flat` of an array of `shape` (program axis first)."""
    pos = np.unravel_index(flat, shape)
    local = int(pos[0]) if shape[0] == st.P else first_active(st)
    index = tuple(int(i) for i in pos[1:])
    text = f"program {st.program(local)}"
    return text + (f", index {index}" if index else "")


def first_active(st: ExecState) -> int:
    return 0 if st.active is None else int(np.argmax(st.active))


def uniform(x: np.ndarray, active: Optional[np.ndarray]):
    """The one value of per-program scalar `x` over the active programs, or None if they differ."""
    if x.shape[0] == 1:
        return x[0]
    xs = x if active is None else x[active]
    first = xs[0]
    if (xs == first).all():
        return first
    return None


def program_mask(mask: np.ndarray, ndim: int) -> np.ndarray:
    """A per-program bool vector reshaped to broadcast against arrays of `ndim` dimensions."""
    return mask.reshape(mask.shape + (1,) * (ndim - mask.ndim))


def merge(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a` where `cond` (per program, or per element), else `b`."""
    return np.where(program_mask(cond, max(a.ndim, b.ndim)), a, b)


class Compiler:
    """Turns the ops of one tt.func into closures over a frame of value slots."""

    def __init__(self, func: Operation, kernel: str):
        self.func = func
        self.kernel = kernel
        self.arg_names: list[str] = list(func.attrs.get("arg_names") or [])
        self._slots: dict[int, int] = {}

    @property
    def num_slots(self) -> int:
        return len(self._slots)

    def slot(self, v: Value) -> int:
        return self._slots.setdefault(id(v), len(self._slots))

    def error(self, op: Optional[Operation], message: str) -> InterpreterError:
        return InterpreterError(self.kernel, op, message)

    def arg_name(self, index: int) -> str:
        return self.arg_names[index] if index < len(self.arg_names) else f"#{index}"

    def compile_op(self, op: Operation) -> Closure:
        impl = OP_IMPLS.get(op.name)
        if impl is None:
            raise self.error(op, f"the interpreter does not support '{op.name}'")
        return impl(op, self)

    def block(self, block: Block) -> tuple[list[Closure], list[int]]:
        """Closures of a block's ops, and the slots its terminator passes on (yield, condition...).

        Values die after their last use in the block (slots set to None), so large
        intermediates do not pile up while a long kernel runs.
        """
        ops = block.ops
        term = ops[-1] if ops and (d := op_def(ops[-1].name)) is not None and d.terminator else None
        body = ops[:-1] if term is not None else ops
        local = {self.slot(a) for a in block.args}
        last_use: dict[int, int] = {}
        for i, op in enumerate(body):
            for inner in op.walk():
                for v in inner.operands:
                    s = self.slot(v)
                    if s in local:
                        last_use[s] = i
            local.update(self.slot(r) for r in op.results)
        kept = {self.slot(v) for v in term.operands} if term is not None else set()
        kills: dict[int, list[int]] = {}
        for i, op in enumerate(body):
            for r in op.results:
                s = self.slot(r)
                if s not in last_use and s not in kept:
                    kills.setdefault(i, []).append(s)
        for s, i in last_use.items():
            if s not in kept:
                kills.setdefault(i, []).append(s)
        fns: list[Closure] = []
        for i, op in enumerate(body):
            fns.append(self.compile_op(op))
            if i in kills:
                fns.append(_killer(tuple(kills[i])))
        outs = [self.slot(v) for v in term.operands] if term is not None else []
        return fns, outs

    def region_fn(self, region: Region) -> Callable[[Frame, ExecState, list], list]:
        """A callable running `region` on argument arrays and returning its terminator's operands."""
        block = region.block
        fns, outs = self.block(block)
        ins = [self.slot(a) for a in block.args]

        def run(f: Frame, st: ExecState, args: list) -> list:
            for s, a in zip(ins, args):
                f[s] = a
            for fn in fns:
                fn(f, st)
            return [f[s] for s in outs]

        return run


def _killer(slots: tuple[int, ...]) -> Closure:
    if len(slots) == 1:
        (only,) = slots

        def kill_one(f: Frame, st: ExecState) -> None:
            f[only] = None

        return kill_one

    def kill(f: Frame, st: ExecState) -> None:
        for s in slots:
            f[s] = None

    return kill
