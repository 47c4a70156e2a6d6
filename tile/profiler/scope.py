"""Scopes: named regions of the program whose GPU time (and given metrics) are recorded in
every active session, as proton's `scope`, `enter_scope` / `exit_scope` and `cpu_timed_scope`."""
from __future__ import annotations

import functools
import time
from typing import Any, Callable, Optional

from .profile import _Record, active_sessions, pop_scope, push_scope, scope_path


class scope:  # noqa: N801 - proton's name
    """A context manager and decorator: `with proton.scope("name", {"flops16": f}): ...`.
    Kernels launched inside are recorded under it; its time is the GPU time from entry to exit."""

    def __init__(self, name: str, metrics: Optional[dict[str, float]] = None):
        self.name, self.metrics = name, metrics
        self.records: list[_Record] = []

    def __enter__(self) -> "scope":
        self._enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._exit()

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with scope(self.name, self.metrics):
                return func(*args, **kwargs)

        return wrapper

    def _enter(self) -> None:
        path = scope_path() + (self.name,)
        self.records = [s.record(path, self.metrics) for s in active_sessions()]
        push_scope(self.name)

    def _exit(self) -> None:
        pop_scope()
        for rec in self.records:
            rec.stop()


class cpu_timed_scope(scope):  # noqa: N801 - proton's name
    """A scope that also records the host's elapsed time, as the metric "cpu_time (ns)"."""

    def __init__(self, name: str, metrics: Optional[dict[str, float]] = None):
        if metrics and "cpu_time (ns)" in metrics:
            raise ValueError("the metric name 'cpu_time (ns)' is reserved")
        super().__init__(name, metrics)
        self.started = 0

    def _enter(self) -> None:
        self.started = time.perf_counter_ns()
        super()._enter()

    def _exit(self) -> None:
        super()._exit()
        for rec in self.records:
            rec.metrics["cpu_time (ns)"] = time.perf_counter_ns() - self.started


_open: list[scope] = []


def enter_scope(name: str, *, metrics: Optional[dict[str, float]] = None) -> None:
    """Open a scope that `exit_scope` closes (for code that cannot use `with`)."""
    opened = scope(name, metrics)
    opened._enter()
    _open.append(opened)


def exit_scope(name: Optional[str] = None, *, metrics: Optional[dict[str, float]] = None) -> None:
    """Close the innermost scope opened by enter_scope; `name`, if given, must be its name."""
    if not _open:
        raise ValueError("tile.profiler.exit_scope: no scope is open")
    if name is not None and name != _open[-1].name:
        raise ValueError(f"tile.profiler.exit_scope: the open scope is {_open[-1].name!r}, not {name!r}")
    opened = _open.pop()
    for rec in opened.records:
        rec.metrics.update(metrics or {})
    opened._exit()
