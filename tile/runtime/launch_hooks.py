"""Launch hooks: code that runs around every launch of a `@tile.jit` kernel while registered
(tile.profiler registers one while a session is active).

The launch binders (tile/frontend/binder.py) test `HOOKS` before each launch; while it is
empty, as it almost always is, that test is the whole cost. A hook is an object with

    enter(kernel, grid, args) -> token     before the launch: the JITFunction, the grid tuple
                                           and every argument by parameter name
    exit(token, compiled)                  after it: the CompiledKernel that ran
"""
from __future__ import annotations

from typing import Any, Callable, Protocol


class LaunchHook(Protocol):
    def enter(self, kernel: Any, grid: tuple, args: dict[str, Any]) -> Any: ...

    def exit(self, token: Any, compiled: Any) -> None: ...


HOOKS: list[LaunchHook] = []


def add(hook: LaunchHook) -> None:
    if hook not in HOOKS:
        HOOKS.append(hook)


def remove(hook: LaunchHook) -> None:
    if hook in HOOKS:
        HOOKS.remove(hook)


def launch_hooked(kernel: Any, grid: tuple, args: dict[str, Any], launch: Callable[[], Any]) -> Any:
    """Run `launch()` between the registered hooks' enter and exit; return what it returns."""
    hooks = list(HOOKS)
    tokens = [hook.enter(kernel, grid, args) for hook in hooks]
    compiled = launch()
    for hook, token in zip(hooks, tokens):
        hook.exit(token, compiled)
    return compiled
