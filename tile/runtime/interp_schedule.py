"""Cooperative execution for kernels whose programs wait on each other through memory.

The interpreter normally runs all programs of a grid as one vectorised batch. That cannot
run a spin lock: in

    while tl.atomic_cas(lock, 0, 1) == 1:      # scf.while whose condition reads an atomic
        pass
    ... critical section ...
    tl.atomic_xchg(lock, 0)

the batch's `scf.while` keeps iterating until no program is left in the loop, while the one
program that took the lock can only release it after the loop. Such kernels are recognised
when they are compiled: `waits_on_other_programs(loop)` holds for an `scf.while` whose
condition depends on an atomic or a volatile load executed inside the loop (memory another
program may change while this one waits). A kernel with such a loop runs in cooperative
mode instead:

- every program runs alone (a batch of one) in a thread of its own, and exactly one thread
  runs at a time: the others wait for the baton, so memory sees one program at a time;
- a program keeps the baton until it finishes or takes a waiting loop's back edge
  (`Scheduler.spin`), where it hands the baton to the next live program, round-robin;
- programs start lazily, in launch order, when the round-robin wraps around: a kernel whose
  programs never wait (the lock is always free when asked) runs its programs one after the
  other, with one thread alive at a time.

A round is one pass of the baton over the live programs. A round in which no program
finished, started or left a waiting loop, and after which memory is byte for byte what it
was, is idle; after IDLE_ROUND_LIMIT idle rounds in a row the launch ends with an
InterpreterError naming the waiting loop's source line (a kernel that truly deadlocks never
hangs silently). A waiting loop that only changes its own registers (a retry counter) for
that many rounds is taken for a deadlock too.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

import numpy as np

from tile.ir.core import OpResult, Operation, Value

from .interp_core import InterpreterError

IDLE_ROUND_LIMIT = 256
_MEMORY_OPS = ("tt.atomic_rmw", "tt.atomic_cas")


def _reads_shared_memory(op: Operation) -> bool:
    return op.name in _MEMORY_OPS or (op.name == "tt.load" and bool(op.attrs.get("volatile", False)))


def waits_on_other_programs(loop: Operation) -> bool:
    """Whether `loop` (an scf.while) may wait for another program: its condition depends on
    an atomic or a volatile load inside the loop, directly or through loop-carried values."""
    if loop.name != "scf.while":
        return False
    before, after = loop.regions[0].block, loop.regions[1].block
    inside = {id(op) for op in loop.walk()}
    condition = before.ops[-1]  # scf.condition %cond, %forwarded...
    after_yield = after.ops[-1]
    before_args = {id(a): i for i, a in enumerate(before.args)}
    after_args = {id(a): i for i, a in enumerate(after.args)}
    seen: set[int] = set()
    pending: list[Value] = [condition.operand(0)]
    while pending:
        v = pending.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in before_args:  # carried around the back edge from the after region
            pending.append(after_yield.operand(before_args[id(v)]))
        elif id(v) in after_args:  # forwarded by scf.condition
            pending.append(condition.operand(after_args[id(v)] + 1))
        else:
            owner = v.op if isinstance(v, OpResult) else None
            if owner is None or id(owner) not in inside:
                continue  # defined before the loop, or a block argument of a nested region
            if any(_reads_shared_memory(inner) for inner in owner.walk()):
                return True
            pending.extend(owner.operands)
    return False


def needs_cooperative(func: Operation) -> bool:
    """Whether any loop of `func` waits on other programs (see the module docstring)."""
    return any(waits_on_other_programs(op) for op in func.walk() if op.name == "scf.while")


class _Aborted(BaseException):
    """Unwinds a waiting program's thread once the launch has failed."""


class Scheduler:
    """Runs the programs of one launch cooperatively, one at a time (see the module docstring)."""

    def __init__(self, kernel: str, memory_bytes: list[Optional[np.ndarray]]):
        self.kernel = kernel
        self._memory = [b for b in memory_bytes if b is not None]
        self._cv = threading.Condition()
        self._live: list[int] = []  # started, unfinished programs, in start order
        self._running: Optional[int] = None  # the program holding the baton
        self._next_start = 0
        self._total = 0
        self._finished = 0
        self._error: Optional[BaseException] = None
        self._threads: list[threading.Thread] = []
        self._waiting_at: dict[int, Operation] = {}  # program -> the loop it last spun in
        self._progress = False
        self._idle_rounds = 0
        self._snapshot: Optional[list[np.ndarray]] = None
        self._run_program: Callable[[int], None] = lambda linear: None

    def run(self, total: int, run_program: Callable[[int], None]) -> None:
        """Run programs 0..total-1 (`run_program(linear_id)` each) until all finish; re-raise
        the first error of any of them."""
        if total == 0:
            return
        self._total, self._run_program = total, run_program
        with self._cv:
            self._start_next()
            try:
                while self._finished < self._total and self._error is None:
                    self._cv.wait(0.1)  # a timeout keeps the main thread interruptible
            except BaseException as e:
                self._error = self._error or e
                raise
            finally:
                self._running = None
                self._cv.notify_all()
        for thread in self._threads:
            thread.join()
        if self._error is not None:
            raise self._error

    # ------------------------------------------------------------------ called by programs

    def spin(self, loop: Operation, program: int) -> None:
        """`program` takes the back edge of waiting loop `loop`: let the others run first."""
        with self._cv:
            self._waiting_at[program] = loop
            position = self._live.index(program)
            if position + 1 < len(self._live):
                self._hand_to(self._live[position + 1])
            else:
                self._end_round()
            self._wait_for_baton(program)

    def left_loop(self) -> None:
        """A program left a waiting loop: the launch made progress."""
        self._progress = True

    # ------------------------------------------------------------------------- internals

    def _program_thread(self, program: int) -> None:
        try:
            with self._cv:
                self._wait_for_baton(program)
            with np.errstate(all="ignore"):  # NumPy's error state is per thread
                self._run_program(program)
        except _Aborted:
            return
        except BaseException as e:
            with self._cv:
                self._error = self._error or e
                self._cv.notify_all()
            return
        with self._cv:
            position = self._live.index(program)
            self._live.remove(program)
            self._waiting_at.pop(program, None)
            self._finished += 1
            self._progress = True
            if position < len(self._live):
                self._hand_to(self._live[position])
            elif self._finished < self._total:
                self._end_round()
            else:
                self._running = None
                self._cv.notify_all()

    def _wait_for_baton(self, program: int) -> None:
        while self._running != program:
            if self._error is not None:
                raise _Aborted()
            self._cv.wait()
        if self._error is not None:
            raise _Aborted()

    def _hand_to(self, program: int) -> None:
        self._running = program
        self._cv.notify_all()

    def _start_next(self) -> None:
        program = self._next_start
        self._next_start += 1
        self._live.append(program)
        self._progress = True
        thread = threading.Thread(target=self._program_thread, args=(program,), daemon=True,
                                  name=f"tile-interpreter-program-{program}")
        self._threads.append(thread)
        self._hand_to(program)
        thread.start()

    def _end_round(self) -> None:
        """The baton wrapped around the live programs: start a new program, or count an idle round."""
        if self._next_start < self._total:
            self._start_next()
            return
        if self._progress or self._snapshot is None or not self._memory_unchanged():
            self._progress = False
            self._idle_rounds = 0
            self._snapshot = [b.copy() for b in self._memory]
        else:
            self._idle_rounds += 1
            if self._idle_rounds >= IDLE_ROUND_LIMIT:
                self._error = self._deadlock()
                self._running = None
                self._cv.notify_all()
                return
        self._hand_to(self._live[0])

    def _memory_unchanged(self) -> bool:
        return all(np.array_equal(a, b) for a, b in zip(self._memory, self._snapshot))

    def _deadlock(self) -> InterpreterError:
        loop = self._waiting_at[self._live[0]]
        waiting = ", ".join(str(p) for p in self._live[:8]) + (", ..." if len(self._live) > 8 else "")
        return InterpreterError(
            self.kernel, loop,
            f"deadlock: {len(self._live)} program(s) (linear ids {waiting}) still wait in this loop, whose "
            f"condition reads memory through an atomic or a volatile load, after {IDLE_ROUND_LIMIT} rounds in "
            f"which each of them ran once and none changed memory or left the loop")
