"""tile: a GPU kernel compiler written entirely in Python.

The public names load lazily, so `import tile` is cheap and `tile.ir` can be used alone.
Triton's environment variables (TRITON_INTERPRET, TRITON_CACHE_DIR, ...) are honoured as
aliases of tile's (tile.knobs.ENV_ALIASES); `tile.install_as_triton()` makes `import triton`
resolve to tile (tile.triton).
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .knobs import apply_env_aliases as _apply_env_aliases  # noqa: E402

_apply_env_aliases()

_EXPORTS = {
    "jit": "tile.frontend.jit",
    "JITFunction": "tile.frontend.jit",
    "CompilationError": "tile.frontend.errors",
    "constexpr": "tile.language",
    "dump": "tile.compiler",
    "autotune": "tile.runtime.autotuner",
    "Config": "tile.runtime.autotuner",
    "heuristics": "tile.runtime.autotuner",
    "cdiv": "tile.utils",
    "next_power_of_2": "tile.utils",
    "to_device": "tile.runtime.arrays",
    "empty": "tile.runtime.arrays",
    "empty_like": "tile.runtime.arrays",
    "DeviceArray": "tile.runtime.arrays",
    "compile": "tile.runtime.aot",
    "OutOfResources": "tile.runtime.errors",
    "install_as_triton": "tile.triton",
    "set_allocator": "tile.runtime.allocation",
    "AsyncCompileMode": "tile.runtime.async_compile",
    "FutureKernel": "tile.runtime.async_compile",
    "constexpr_function": "tile.frontend.constexpr_function",
    "must_use_result": "tile.frontend.core",
    "KernelInterface": "tile.frontend.kernel_interface",
    "TritonError": "tile.runtime.errors",
    "InterpreterError": "tile.runtime.interp_core",
    "TensorWrapper": "tile.runtime.wrappers",
    "reinterpret": "tile.runtime.wrappers",
    "MockTensor": "tile.runtime.wrappers",
    "emulate": "tile.emulator",
    "register_pass": "tile.opt.user_passes",
    "unregister_pass": "tile.opt.user_passes",
    "Pass": "tile.opt.pass_manager",
    "show_layout": "tile.viz",
}
_SUBMODULES = ("ir", "language", "frontend", "opt", "codegen", "runtime", "testing", "compiler", "knobs", "triton",
               "tools", "emulator")


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"tile.{name}")
    raise AttributeError(f"module 'tile' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(_EXPORTS) + list(_SUBMODULES) + ["__version__"])
