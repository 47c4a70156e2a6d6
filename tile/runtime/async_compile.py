"""Asynchronous compilation (Triton's `triton.AsyncCompileMode` and `triton.FutureKernel`).

Inside `with tile.AsyncCompileMode(executor):`, `kernel.warmup(...)` hands the compilation to
`executor` and returns a FutureKernel at once; leaving the block waits for every compilation
it started. Launches stay synchronous (they need the compiled kernel).

    from concurrent.futures import ThreadPoolExecutor

    with tile.AsyncCompileMode(ThreadPoolExecutor(8)):
        futures = [kernel.warmup(x, y, n, BLOCK=b, grid=(1,)) for b in (128, 256, 512, 1024)]
    compiled = [f.result() for f in futures]
"""
from __future__ import annotations

from concurrent.futures import Executor, Future, as_completed
from contextvars import ContextVar
from typing import Any, Callable, Optional

active_mode: ContextVar[Optional["AsyncCompileMode"]] = ContextVar("tile_async_compile_mode", default=None)


class FutureKernel:
    """A compilation under way: `result()` waits for it and returns the compiled kernel (None
    on a failure when `ignore_errors`)."""

    def __init__(self, future: Future) -> None:
        self.future = future
        self.kernel: Any = None

    def result(self, ignore_errors: bool = False) -> Any:
        if self.kernel is None:
            try:
                self.kernel = self.future.result()
            except Exception:
                if ignore_errors:
                    return None
                raise
        return self.kernel


class AsyncCompileMode:
    """A context in which warmups compile on `executor` (one compilation per key)."""

    def __init__(self, executor: Executor, *, ignore_errors: bool = False) -> None:
        self.executor = executor
        self.ignore_errors = ignore_errors
        self.futures: dict[Any, FutureKernel] = {}

    def submit(self, key: Any, compile_fn: Callable[[], Any]) -> FutureKernel:
        if key not in self.futures:
            self.futures[key] = FutureKernel(self.executor.submit(compile_fn))
        return self.futures[key]

    def __enter__(self) -> "AsyncCompileMode":
        if active_mode.get() is not None:
            raise RuntimeError("another tile.AsyncCompileMode is already active")
        active_mode.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            for done in as_completed([f.future for f in self.futures.values()]):
                if done.exception() is not None and not self.ignore_errors and exc[0] is None:
                    raise done.exception()
        finally:
            active_mode.set(None)


__all__ = ["AsyncCompileMode", "FutureKernel", "active_mode"]
