"""Loading a tutorial (tutorials/NAME.py) as a module in tests: each caller gets its own module
object under its own name, so tests that change a module's globals do not see each other's."""
from __future__ import annotations

import importlib.util
import types
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parent.parent / "tutorials"


def load_tutorial(name: str, prefix: str = "tutorial") -> types.ModuleType:
    """tutorials/`name`.py, executed as module `prefix`_`name`."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", TUTORIALS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
