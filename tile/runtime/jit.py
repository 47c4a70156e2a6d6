"""`triton.runtime.jit`'s names for Triton programs: `JITFunction`, `KernelParam` and `jit`
(tile.frontend.jit), `KernelInterface` (tile.frontend.kernel_interface), and `TensorWrapper`,
`reinterpret` and `MockTensor` (tile.runtime.wrappers).

They load on first use, as tile's own top-level names do: the frontend builds on the runtime,
so the runtime imports nothing of it when it loads."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "JITFunction": "tile.frontend.jit", "KernelParam": "tile.frontend.jit", "jit": "tile.frontend.jit",
    "KernelInterface": "tile.frontend.kernel_interface",
    "MockTensor": "tile.runtime.wrappers", "TensorWrapper": "tile.runtime.wrappers",
    "reinterpret": "tile.runtime.wrappers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
