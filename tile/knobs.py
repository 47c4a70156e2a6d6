"""`tile.knobs`: `triton.knobs` where it maps onto tile's settings, read and written through
tile's environment variables (so a change applies to the next compile or launch):

    tile.knobs.runtime.interpret = True           # TILE_INTERPRET=1: kernels run on the NumPy interpreter
    tile.knobs.cache.dir = "/tmp/kernels"         # TILE_CACHE_DIR
    tile.knobs.autotuning.print = True            # TILE_PRINT_AUTOTUNING=1
    tile.knobs.compilation.always_compile = True  # TILE_ALWAYS_COMPILE=1: skip disk-cache lookups
    tile.knobs.compilation.dump_stages = True     # TILE_DUMP=1: print every stage to stderr (MLIR_ENABLE_DUMP)

Triton's environment variables are aliases of tile's: `import tile` copies each one that is
set (and whose tile twin is not) into its TILE_* twin (ENV_ALIASES). A knob Triton has and
tile does not raises AttributeError naming it.
"""
from __future__ import annotations

import os
from typing import Any

# Triton's variable -> tile's.
ENV_ALIASES: dict[str, str] = {
    "TRITON_INTERPRET": "TILE_INTERPRET",
    "TRITON_CACHE_DIR": "TILE_CACHE_DIR",
    "TRITON_PRINT_AUTOTUNING": "TILE_PRINT_AUTOTUNING",
    "TRITON_ALWAYS_COMPILE": "TILE_ALWAYS_COMPILE",
    "MLIR_ENABLE_DUMP": "TILE_DUMP",
}


def apply_env_aliases(environ: Any = None) -> None:
    """Copy every Triton variable that is set into its tile twin, unless the twin is set."""
    environ = os.environ if environ is None else environ
    for triton_name, tile_name in ENV_ALIASES.items():
        if triton_name in environ and tile_name not in environ:
            environ[tile_name] = environ[triton_name]


class _Flag:
    """A boolean knob stored in an environment variable ("1" or "0")."""

    def __init__(self, variable: str) -> None:
        self.variable = variable

    def __get__(self, owner: Any, cls: Any = None) -> bool:
        return os.environ.get(self.variable, "0") not in ("", "0", "false", "False")

    def __set__(self, owner: Any, value: bool) -> None:
        os.environ[self.variable] = "1" if value else "0"


class _Knobs:
    """A group of knobs; reading one tile lacks raises AttributeError naming it."""

    _triton_group = ""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"tile has no knob triton.knobs.{self._triton_group}.{name}; tile's knobs are "
                             f"runtime.interpret, cache.dir, autotuning.print, compilation.always_compile and "
                             f"compilation.dump_stages")


class runtime_knobs(_Knobs):
    _triton_group = "runtime"
    interpret = _Flag("TILE_INTERPRET")


class cache_knobs(_Knobs):
    _triton_group = "cache"

    @property
    def dir(self) -> str:
        """Where compiled kernels are kept (TILE_CACHE_DIR, default ~/.cache/tile)."""
        from tile.runtime.cache import default_cache_dir

        return str(default_cache_dir())

    @dir.setter
    def dir(self, value: str) -> None:
        os.environ["TILE_CACHE_DIR"] = str(value)


class autotuning_knobs(_Knobs):
    _triton_group = "autotuning"
    print = _Flag("TILE_PRINT_AUTOTUNING")


class compilation_knobs(_Knobs):
    _triton_group = "compilation"
    always_compile = _Flag("TILE_ALWAYS_COMPILE")
    dump_stages = _Flag("TILE_DUMP")


runtime = runtime_knobs()
cache = cache_knobs()
autotuning = autotuning_knobs()
compilation = compilation_knobs()


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tile has no knob group triton.knobs.{name}; tile's are runtime, cache, autotuning "
                         f"and compilation")
