"""Profiling sessions: start / activate / deactivate / finalize, and the tree they record.

A session collects records while active: (path of scope names, timer start, timer end,
metrics). Timers are read at deactivate and finalize (one synchronization), and the records
fold into a tree of nodes keyed by name; finalize writes it as proton's hatchet JSON.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from tile.runtime import launch_hooks

DEFAULT_PROFILE_NAME = "proton"
HOOKS = (None, "triton", "launch")
LAUNCH_METRICS = ("flops8", "flops16", "flops32", "flops64", "flops", "bytes")


@dataclass
class Node:
    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    children: dict[str, "Node"] = field(default_factory=dict)

    def child(self, name: str) -> "Node":
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Node(name)
        return node

    def add(self, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.metrics[key] = self.metrics.get(key, 0) + value

    def inclusive(self) -> dict[str, float]:
        """Metrics summed over the subtree, except that a node with a time of its own (a scope
        or a kernel) keeps it: its children ran inside that interval."""
        total = dict(self.metrics)
        for child in self.children.values():
            for key, value in child.inclusive().items():
                if key in ("time (ns)", "count") and key in self.metrics:
                    continue
                total[key] = total.get(key, 0) + value
        return total

    def to_json(self) -> dict[str, Any]:
        return {"frame": {"name": self.name, "type": "function"}, "metrics": self.inclusive(),
                "children": [c.to_json() for c in self.children.values()]}


class _Record:
    __slots__ = ("path", "clock", "start", "end", "metrics")

    def __init__(self, path: tuple[str, ...], clock: Any, metrics: Optional[dict[str, float]]):
        self.path, self.clock, self.metrics = path, clock, dict(metrics or {})
        self.start, self.end = clock.event(), clock.event()
        clock.record(self.start)

    def stop(self) -> None:
        self.clock.record(self.end)


class Session:
    def __init__(self, name: str, hook: Optional[str]):
        self.name, self.hook = name, hook
        self.active = True
        self.root = Node("ROOT")
        self.pending: list[_Record] = []

    def record(self, path: tuple[str, ...], metrics: Optional[dict[str, float]]) -> _Record:
        from tile.testing import _clock

        rec = _Record(path, _clock(), metrics)
        self.pending.append(rec)
        return rec

    def fold(self) -> None:
        """Read the timers of finished records into the tree (synchronizes once)."""
        if not self.pending:
            return
        self.pending[-1].clock.synchronize()
        for rec in self.pending:
            node = self.root
            for name in rec.path:
                node = node.child(name)
            elapsed_ns = rec.clock.elapsed_ms(rec.start, rec.end) * 1e6
            node.add({"time (ns)": elapsed_ns, "count": 1, **rec.metrics})
        self.pending.clear()

    def write(self) -> str:
        path = self.name if self.name.endswith(".hatchet") else f"{self.name}.hatchet"
        path = os.path.expanduser(path)
        with open(path, "w") as f:
            json.dump([self.root.to_json(), {"profiler": "tile.profiler", "time": "CUDA events or host clock"}], f)
        return path


_sessions: dict[int, Session] = {}
_scopes = threading.local()


def scope_path() -> tuple[str, ...]:
    """The names of the scopes entered in this thread, outermost first."""
    return tuple(getattr(_scopes, "names", ()))


def push_scope(name: str) -> None:
    _scopes.names = scope_path() + (name,)


def pop_scope() -> str:
    names = scope_path()
    _scopes.names = names[:-1]
    return names[-1]


def active_sessions() -> list[Session]:
    return [s for s in _sessions.values() if s.active]


class _LaunchRecorder:
    """The launch hook: each `@tile.jit` launch becomes a node named by the kernel (or by its
    launch_metadata's "name" in sessions started with hook="triton"), under the open scopes."""

    def enter(self, kernel: Any, grid: tuple, args: dict[str, Any]) -> Any:
        records = []
        for session in active_sessions():
            name, metrics = kernel.__name__, None
            if session.hook is not None and kernel.launch_metadata is not None:
                info = kernel.launch_metadata(grid, _KernelName(kernel.__name__), args)
                name = info.get("name", name)
                metrics = {k: info[k] for k in LAUNCH_METRICS if k in info}
            records.append(session.record(scope_path() + (name,), metrics))
        return records

    def exit(self, records: list[_Record], compiled: Any) -> None:
        for rec in records:
            rec.stop()


@dataclass(frozen=True)
class _KernelName:
    """What launch_metadata receives as `kernel` (Triton passes the compiled kernel's metadata)."""
    name: str


_recorder = _LaunchRecorder()


def _update_hook() -> None:
    if active_sessions():
        launch_hooks.add(_recorder)
    else:
        launch_hooks.remove(_recorder)


def start(name: Optional[str] = None, *, context: str = "shadow", data: str = "tree", backend: Optional[str] = None,
          mode: Any = None, hook: Optional[str] = None) -> int:
    """Start an active profiling session writing `name`.hatchet at finalize; returns its id.

    hook="triton" (or "launch") adds each kernel's `launch_metadata` (see tile.jit): the
    launch's name and its flops/bytes metrics. context, data, backend and mode are proton's
    and must keep their default meanings here ("shadow", "tree", CUDA events)."""
    if hook not in HOOKS:
        raise ValueError(f"tile.profiler.start: hook must be one of {HOOKS}, got {hook!r}")
    if data != "tree":
        raise ValueError(f"tile.profiler.start: data={data!r}: tile records trees only (data='tree')")
    if backend not in (None, "cupti") or mode is not None:
        raise ValueError("tile.profiler.start: tile times kernels with CUDA events; backend and mode (proton's "
                         "CUPTI/instrumentation choices) must be left unset")
    session_id = max(_sessions, default=-1) + 1
    _sessions[session_id] = Session(name or DEFAULT_PROFILE_NAME, hook)
    _update_hook()
    return session_id


def _chosen(session: Optional[int]) -> list[Session]:
    if session is None:
        return list(_sessions.values())
    if session not in _sessions:
        raise ValueError(f"tile.profiler: no session {session} (started: {sorted(_sessions)})")
    return [_sessions[session]]


def activate(session: Optional[int] = None) -> None:
    """Record again in `session` (all sessions when None)."""
    for s in _chosen(session):
        s.active = True
    _update_hook()


def deactivate(session: Optional[int] = None) -> None:
    """Stop recording in `session` (all when None); what it recorded is kept for finalize."""
    for s in _chosen(session):
        s.fold()
        s.active = False
    _update_hook()


def finalize(session: Optional[int] = None, output_format: str = "") -> None:
    """End `session` (all when None) and write its profile, `name`.hatchet (proton's JSON tree)."""
    if output_format not in ("", "hatchet"):
        raise ValueError(f"tile.profiler.finalize: output_format={output_format!r}: tile writes 'hatchet' only")
    chosen = _chosen(session) if session is not None or _sessions else []
    for s in chosen:
        s.fold()
        s.write()
    for key in [k for k, s in _sessions.items() if s in chosen]:
        del _sessions[key]
    _update_hook()


def profile(func: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None, context: str = "shadow",
            data: str = "tree", backend: Optional[str] = None, mode: Any = None, hook: Optional[str] = None) -> Any:
    """Decorator: each call of the function runs in a session of its own, started before and
    deactivated after (finalize writes it)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            session = start(name, context=context, data=data, backend=backend, mode=mode, hook=hook)
            try:
                return f(*args, **kwargs)
            finally:
                deactivate(session)

        return wrapper

    return decorate(func) if func is not None else decorate
