"""Load a kernel file of benchmarks/ (kernels.py, kernels_tma.py) with the `jit` and `tl` of
one compiler (tile's or Triton's), so every benchmark runs the same kernel source through each
compiler."""
from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def load_kernels(name: str, jit: Any, tl: Any, file: str = "kernels.py") -> types.ModuleType:
    """benchmarks/`file` as module `name`, its `from _backend import jit, tl` bound to the given ones."""
    backend = types.ModuleType("_backend")
    backend.jit, backend.tl = jit, tl
    sys.modules["_backend"] = backend
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
