"""tile's runtime: drivers, launchers, caches, the autotuner, device arrays, the interpreter.

Also the names Triton programs import from `triton.runtime`: `driver` (the driver object, as
in Triton, so `tile.runtime.driver.active` works), `JITFunction`, `Autotuner`, `Heuristics`,
`Config`, `autotune`, `heuristics`, `OutOfResources`. The others load on first use, so that
importing one runtime module stays cheap and free of import cycles.
"""
from __future__ import annotations

import importlib
from typing import Any

from .driver import driver

_LAZY = {
    "JITFunction": "tile.frontend.jit",
    "jit": "tile.frontend.jit",
    "Autotuner": "tile.runtime.autotuner",
    "Heuristics": "tile.runtime.autotuner",
    "Config": "tile.runtime.autotuner",
    "autotune": "tile.runtime.autotuner",
    "heuristics": "tile.runtime.autotuner",
    "OutOfResources": "tile.runtime.errors",
    "InterpreterError": "tile.runtime.interp_core",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tile.runtime' has no attribute {name!r}")


__all__ = ["driver", *_LAZY]
