"""Run Triton programs unchanged on tile: `import triton` resolves to tile.

    python -m tile.triton tutorial.py [args]     # a script, as `python tutorial.py` would run it
    python -m tile.triton -m pytest test_x.py    # a module, as `python -m` would run it

    import tile; tile.install_as_triton()         # in a notebook, before the first `import triton`
    import triton, triton.language as tl          # tile.triton and tile.language

After `install_as_triton()` a meta-path finder maps `triton` to this module (tile's host API
under Triton's names, `__version__` being the Triton version whose API tile follows) and
`triton.X.Y` to `tile.X.Y`, or to the module in ALIASES where the layouts differ
(`triton.compiler.compiler` -> `tile.compiler`, `triton.backends.compiler` ->
`tile.runtime.driver`, ...). A module tile lacks raises ModuleNotFoundError naming it and what
tile offers; a Triton name tile lacks raises AttributeError naming what to use instead.
A one-line notice on stderr says that tile, not Triton, compiles the program.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Optional, Sequence

TRITON_API_VERSION = "3.6.0"
__version__ = TRITON_API_VERSION

# Triton modules whose tile counterpart has another name. Every other `triton.X.Y` maps to
# `tile.X.Y`; a value of None marks a Triton package with no tile module of its own (a
# namespace for its aliased children).
ALIASES: dict[str, Optional[str]] = {
    "triton.compiler.compiler": "tile.compiler",
    "triton.compiler.errors": "tile.frontend.errors",
    "triton.backends": None,
    "triton.backends.compiler": "tile.runtime.driver",
    "triton.backends.driver": "tile.runtime.driver",
    "triton.language.extra.cuda": "tile.language.extra",
    "triton.language.extra.cuda.libdevice": "tile.language.extra.libdevice",
    "triton.runtime.interpreter": "tile.runtime.interpreter",
    "triton._C": None,
    "triton._C.libtriton": "tile.runtime.cublas",
}
# Triton packages whose tile counterpart is a plain module: they import as a forwarding
# package, so that their aliased children can import.
PACKAGES_OVER_MODULES = frozenset({"triton.compiler"})
# Fallbacks used only when `tile.X.Y` does not exist.
FALLBACKS: dict[str, str] = {
    "triton.language.core": "tile.language",
}
OFFERED = ("triton, triton.language (.math, .random, .standard, .extra.libdevice), triton.testing, triton.runtime "
           "(.driver, .jit, .autotuner, .errors), triton.compiler, triton.knobs, triton.tools.tensor_descriptor, "
           "triton.profiler (.viewer), triton._C.libtriton (nvidia.cublas only)")

def __getattr__(name: str) -> Any:
    """Triton's top-level names are tile's (jit, autotune, Config, heuristics, cdiv, compile,
    set_allocator, language, testing, runtime, knobs, ...); any other is an AttributeError."""
    if name.startswith("__"):
        raise AttributeError(name)
    import tile

    if name in ("tools",):
        return importlib.import_module("tile.tools")
    try:
        return getattr(tile, name)
    except AttributeError:
        raise AttributeError(f"tile does not provide triton.{name}; `import triton` is tile here (see "
                             f"tile.triton), whose top-level names are {', '.join(dir(tile))}") from None


def tile_module_name(fullname: str) -> Optional[str]:
    """The tile module standing for Triton module `fullname` (None: a namespace of aliases);
    ModuleNotFoundError naming it and what tile offers when there is none."""
    if fullname in ALIASES:
        return ALIASES[fullname]
    candidate = "tile" + fullname[len("triton"):]
    if _exists(candidate):
        return candidate
    if fullname in FALLBACKS:
        return FALLBACKS[fullname]
    raise ModuleNotFoundError(f"tile has no counterpart of Triton's module '{fullname}' (looked for "
                              f"'{candidate}'); with `import triton` resolved to tile, the modules are: {OFFERED}",
                              name=fullname)


def _is_package(module: str) -> bool:
    found = sys.modules.get(module)
    if found is not None:
        return hasattr(found, "__path__")
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


def _exists(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


class _AliasLoader(importlib.abc.Loader):
    """Loads a Triton module name as an existing tile module (the same object), or as a
    namespace package for Triton packages tile has no module for."""

    def __init__(self, target: Optional[str]) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if self.target is None:
            namespace = types.ModuleType(spec.name, f"Triton's {spec.name}: its children are aliases of tile modules")
            namespace.__path__ = []
            return namespace
        module = importlib.import_module(self.target)
        if spec.name in PACKAGES_OVER_MODULES:
            # Its aliased children import and land on the forwarding package, not on tile's module.
            return _ForwardingPackage(spec.name, module)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the tile module was imported by create_module."""


class _ForwardingPackage(types.ModuleType):
    """A package whose attributes are those of a tile module (plus its aliased children)."""

    def __init__(self, name: str, target: types.ModuleType) -> None:
        super().__init__(name, target.__doc__)
        self.__path__: list[str] = []
        self._target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._target)) | set(self.__dict__))


class TritonFinder(importlib.abc.MetaPathFinder):
    """The meta-path finder behind `install_as_triton`: `triton` and `triton.*` to tile."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname == "triton":
            return importlib.util.spec_from_loader(fullname, _AliasLoader(__name__))
        if not fullname.startswith("triton."):
            return None
        target = tile_module_name(fullname)
        # A tile package keeps its own __path__; a plain tile module must not be given one.
        package = target is None or fullname in PACKAGES_OVER_MODULES or _is_package(target)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target), is_package=package)


_installed = False


def install_as_triton(notice: bool = True) -> None:
    """Make `import triton` (and every `triton.*` module) resolve to tile in this process;
    prints a one-line notice on stderr unless `notice` is False. Call it before the first
    `import triton`: RuntimeError if Triton itself is imported already."""
    global _installed
    if _installed:
        return
    loaded = sys.modules.get("triton")
    if loaded is not None and loaded is not sys.modules[__name__]:
        raise RuntimeError("install_as_triton(): Triton itself is imported already in this process; call "
                           "tile.install_as_triton() before the first `import triton` (or run the program with "
                           "`python -m tile.triton script.py`)")
    sys.meta_path.insert(0, TritonFinder())
    # tile.runtime's `driver` attribute is the driver object (as in Triton), not the module
    # of that name: registering the module keeps an import of it from replacing the object.
    sys.modules["triton.runtime.driver"] = importlib.import_module("tile.runtime.driver")
    _installed = True
    if notice:
        import tile

        print(f"[tile {tile.__version__}] `import triton` runs tile, the pure-Python compiler, with Triton "
              f"{TRITON_API_VERSION}'s API (not Triton itself)", file=sys.stderr)


__all__ = ["install_as_triton", "TritonFinder", "tile_module_name", "ALIASES", "TRITON_API_VERSION"]
