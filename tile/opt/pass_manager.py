"""Runs passes over a `tt.func`, verifying, recording and timing each one.

A pass is an object with a `name` and a `run(func)` that rewrites the function in place. The
same base class serves every level (tile, gpu, simt): a pass only sees `Operation`s.

    pm = PassManager(tile_passes(), record=True)
    pm.run(func)
    for name, text in pm.records:      # the IR after each pass, as tile.dump shows it
        print(f"// after {name}\\n{text}")
    print(pm.timings)                   # {"canonicalize": 0.0012, "cse": 0.0003, ...}

With `verify_each` (the default), the verifier runs on the input and after every pass; the
first failure raises `PassVerificationError` naming the pass that broke the IR.
"""
from __future__ import annotations

import time
from typing import Sequence

from ..ir import Operation, VerificationError, print_op, verify


class Pass:
    """Base of every pass. Subclasses set `name` and implement `run`."""

    name: str = ""

    def run(self, func: Operation) -> None:
        """Rewrite `func` (a `tt.func`) in place."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run()")

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class PassVerificationError(Exception):
    """The IR failed to verify after a pass (or on input, when `pass_name` is "input")."""

    def __init__(self, pass_name: str, error: VerificationError, ir_text: str):
        where = "the input IR is invalid" if pass_name == "input" else f"pass '{pass_name}' produced invalid IR"
        super().__init__(f"{where}: {error}\n{ir_text}")
        self.pass_name = pass_name
        self.error = error
        self.ir_text = ir_text


class PassManager:
    """Applies `passes` in order. `timings` sums seconds per pass name (a pass may run twice)."""

    def __init__(self, passes: Sequence[Pass], verify_each: bool = True, record: bool = False):
        self.passes = list(passes)
        self.verify_each = verify_each
        self.record = record
        self.records: list[tuple[str, str]] = []
        self.timings: dict[str, float] = {}
        self.verify_time = 0.0  # seconds spent in the verifier, kept apart from the passes' own time

    def run(self, func: Operation) -> None:
        self._verify(func, "input")
        for p in self.passes:
            start = time.perf_counter()
            p.run(func)
            self.timings[p.name] = self.timings.get(p.name, 0.0) + time.perf_counter() - start
            self._verify(func, p.name)
            if self.record:
                self.records.append((p.name, print_op(func)))

    def _verify(self, func: Operation, pass_name: str) -> None:
        if not self.verify_each:
            return
        start = time.perf_counter()
        try:
            verify(func)
        except VerificationError as e:
            raise PassVerificationError(pass_name, e, print_op(func)) from e
        finally:
            self.verify_time += time.perf_counter() - start
