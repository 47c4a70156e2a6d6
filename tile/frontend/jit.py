"""`@tile.jit` and the JITFunction it returns: source, parameters, specialization, launch.

    @tile.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)      # compile once per specialization, launch
    add.run(x, y, out, n, grid=(4,), BLOCK=1024, num_warps=4)
    compiled = add.warmup(x, y, out, n, BLOCK=1024, grid=(1,))  # Triton's CompiledKernel surface
    add.build_ir(add.specialize((x, y, out, n), {"BLOCK": 1024})[0])  # the tt.func, without compiling

A launch on a warm cache runs a function generated for the kernel (binder.py): after the
first compilation, one specialized on the kinds of arguments that launch passed, so a launch
is Python's argument binding, inline type checks, one dict lookup and the entry's driver call.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import os
import textwrap
import threading
import types
import weakref
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence

from .constexpr_function import ConstexprFunction
from .core import PropagateNan, constexpr, dtype, is_builtin, unwrap
from .core import const as tl_const
from .errors import CompilationError, SourcePoint
from ..runtime.preload import start_driver_import
from ..runtime.wrappers import MockTensor
from .binder import KEYED_OPTIONS, LAUNCH_OPTIONS, check_launch_options, constexpr_key, make_binder, make_fast_binder
from .specialize import (FAST_ARGS, Specialization, arg_key, fast_arg, flattening_entry, launch_arg, launch_arg_nospec,
                         leaf_keys, leaf_values, python_value)
from ..runtime import cuda_driver
from ..runtime.cuda_driver import current_device, loading_on, torch_stream_getter
from ..runtime.devices import resolver, torch_device_getter
from ..runtime.tensor_map import TensorMapCache
from ..opt.user_passes import hash_code, on_registry_change

_MISSING = object()
_RUNTIME, _NO_SPECIALIZE, _CONSTEXPR = 0, 1, 2


def _is_constexpr_annotation(a: Any) -> bool:
    if a is constexpr:
        return True
    return isinstance(a, str) and a.replace(" ", "").strip("'\"").split(".")[-1] == "constexpr"


def _is_const_annotation(a: Any) -> bool:
    if a is tl_const:
        return True
    return isinstance(a, str) and a.replace(" ", "").strip("'\"").split(".")[-1] == "const"


def _global_ok(value: Any) -> bool:
    """Whether kernels may read this global: compile-time values, functions, modules, types."""
    if value is None or isinstance(value, (bool, int, float, str, dtype, PropagateNan, types.ModuleType, type)):
        return True
    if isinstance(value, JITFunction) or is_builtin(value) or callable(value):
        return True
    if isinstance(value, tuple):
        return all(_global_ok(v) for v in value)
    return False


class KernelParam(NamedTuple):
    """One parameter of a kernel, as Triton's `JITFunction.params` lists it."""

    num: int
    name: str
    is_constexpr: bool
    do_not_specialize: bool
    annotation: Any
    default: Any


_ALL_KERNELS: "weakref.WeakSet[JITFunction]" = weakref.WeakSet()  # for forget_all_compiled


def forget_all_compiled() -> None:
    """Make every kernel compile again at its next launch (tile.register_pass changes what
    compiling produces)."""
    for kernel in list(_ALL_KERNELS):
        kernel.forget_compiled()


on_registry_change(forget_all_compiled)


class JITFunction:
    """A kernel (or a helper inlined into kernels) written in tile language."""

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Iterable[Any] = (), debug: Optional[bool] = None,
                 noinline: Optional[bool] = None, launch_metadata: Optional[Callable[..., dict]] = None,
                 extra_passes: Iterable[Any] = ()):
        self.fn = fn
        self.extra_passes: tuple[Any, ...] = ()  # UserPass objects, run after the tile passes
        if extra_passes:
            from ..opt.user_passes import as_pass

            self.extra_passes = tuple(as_pass(p) for p in extra_passes)
        self.launch_metadata = launch_metadata
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.debug = debug
        self.noinline = noinline
        self.signature = inspect.signature(fn)
        params = list(self.signature.parameters.values())
        self.arg_names: tuple[str, ...] = tuple(p.name for p in params)
        self.constexpr_names = frozenset(p.name for p in params if _is_constexpr_annotation(p.annotation))
        self.const_names = frozenset(p.name for p in params if _is_const_annotation(p.annotation))
        self.constexprs = tuple(i for i, p in enumerate(params) if p.name in self.constexpr_names)
        no_spec = {self.arg_names.index(d) if isinstance(d, str) else int(d) for d in do_not_specialize}
        self.do_not_specialize = tuple(sorted(no_spec))
        self._kinds = tuple(_CONSTEXPR if p.name in self.constexpr_names else _NO_SPECIALIZE if i in no_spec
                            else _RUNTIME for i, p in enumerate(params))
        self._key_fns = tuple(constexpr_key if k == _CONSTEXPR else _nospec_key if k == _NO_SPECIALIZE else arg_key
                              for k in self._kinds)
        self._defaults = tuple(unwrap(p.default) if p.default is not inspect.Parameter.empty else _MISSING
                               for p in params)
        self._index = {n: i for i, n in enumerate(self.arg_names)}
        self._device = resolver(self.__name__, tuple(n for n, k in zip(self.arg_names, self._kinds) if k != _CONSTEXPR))
        self.file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        self.cache: dict[tuple, Any] = {}  # (key, *KEYED_OPTIONS values, target, device) -> CompiledKernel
        self._launchers: dict[tuple, Callable[..., None]] = {}  # full launch key -> entry
        self._fast_entries: dict[tuple, Callable[..., None]] = {}  # fast binder key -> entry.fast
        self._launch: Optional[Callable[..., None]] = None  # the fast binder once made, else the general one
        self._general: Optional[Callable[..., None]] = None
        self._lookup: Optional[Callable[..., Any]] = None
        self._fast_tried = False
        self._grid_and_bound: tuple[Any, Any] = (_MISSING, None)  # the last kernel[grid], see __getitem__
        self._lock = threading.RLock()
        _ALL_KERNELS.add(self)
        start_driver_import()
        self._ast: Optional[ast.FunctionDef] = None
        self._cache_key: Optional[str] = None
        self._lines: list[str] = []
        self.line_offset = fn.__code__.co_firstlineno - 1
        self.col_offset = 0

    # ------------------------------------------------------------------- source
    def parse(self) -> ast.FunctionDef:
        """The function's AST (parsed once); line numbers are relative to `line_offset`."""
        if self._ast is None:
            lines = self._source_lines()
            tree = ast.parse(textwrap.dedent("".join(lines)))
            fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            if not isinstance(fdef, ast.FunctionDef):
                raise CompilationError(f"{self.__qualname__}: @tile.jit needs a plain `def` function")
            self._ast = fdef
        return self._ast

    def _source_lines(self) -> list[str]:
        """The function's source lines (read once)."""
        if not self._lines:
            try:
                lines, first = inspect.getsourcelines(self.fn)
            except (OSError, TypeError) as e:
                raise CompilationError(f"cannot read the source of {self.__qualname__}: {e}; @tile.jit functions "
                                       f"must be defined in a file or a notebook cell") from e
            self._lines = lines
            self.line_offset = max(first - 1, 0)
            self.col_offset = len(lines[0]) - len(lines[0].lstrip())
        return self._lines

    @property
    def src(self) -> str:
        self.parse()
        return textwrap.dedent("".join(self._lines))

    def source_line(self, relative_line: int) -> str:
        """A line of the function's source (1 = the first line of `src`)."""
        self.parse()
        if 1 <= relative_line <= len(self._lines):
            return self._lines[relative_line - 1].rstrip("\n")
        return ""

    def lookup_global(self, name: str) -> tuple[bool, Any]:
        """A free variable of the kernel (closure cell or module global), if kernels may read it."""
        code = self.fn.__code__
        found, value = False, None
        if name in code.co_freevars and self.fn.__closure__:
            try:
                value, found = self.fn.__closure__[code.co_freevars.index(name)].cell_contents, True
            except ValueError:
                pass
        if not found and name in self.fn.__globals__:
            value, found = self.fn.__globals__[name], True
        if not found:
            return False, None
        if isinstance(value, constexpr):
            return True, value.value
        if not _global_ok(value):
            cls = type(value)
            raise NameError(f"cannot read the global '{name}' (a {cls.__module__}.{cls.__qualname__}) in a kernel: "
                            f"kernels read only compile-time constants from globals (tl.constexpr values, numbers, "
                            f"dtypes, @tile.jit functions, modules); pass it as an argument instead")
        return True, value

    @property
    def cache_key(self) -> str:
        """A hash of this function's source, of the @jit functions it reaches, and of the
        compile-time globals it reads (a part of the disk-cache key)."""
        if self._cache_key is None:
            digest = hashlib.sha256()
            self._hash_into(digest, set())
            digest.update(f"debug={bool(self.debug)}".encode())  # debug adds overflow checks
            for p in self.extra_passes:
                digest.update(f"pass={p.fingerprint()};".encode())
            self._cache_key = digest.hexdigest()
        return self._cache_key

    def _hash_into(self, digest: Any, seen: set[int]) -> None:
        """Hash the code (what the source compiles to, line numbers included), then every @jit
        function and constant the code names: the names of
        its code object (no AST needed, so a warm start stays cheap), and the attributes with
        those names of the modules it reads (`tl.sum`); a superset is harmless in a key."""
        if id(self) in seen:
            return
        seen.add(id(self))
        hash_code(digest, self.fn.__code__)
        names = self.fn.__code__.co_names + self.fn.__code__.co_freevars
        values = [(name, self._free_value(name)) for name in names]
        modules = [v for _, v in values if isinstance(v, types.ModuleType)]
        values += [(name, getattr(m, name, None)) for m in modules for name in names]
        for name, value in values:
            if isinstance(value, JITFunction):
                value._hash_into(digest, seen)
            elif isinstance(value, ConstexprFunction):
                hash_code(digest, value.fn.__code__)
            elif isinstance(value, (bool, int, float, str, constexpr, dtype)):
                digest.update(f"{name}={unwrap(value)!r};".encode())

    def _free_value(self, name: str) -> Any:
        if name in self.arg_names:
            return None
        try:
            return self.lookup_global(name)[1]
        except NameError:
            return None

    # -------------------------------------------------------------- compilation
    def build_ir(self, spec: Specialization, target: Optional[str] = None,
                 options: Optional[dict[str, Any]] = None) -> Any:
        """The verified tt.func of this kernel under `spec`, compiled for `target` ("interpreter",
        "sm_90a", ...; None: not known) with launch `options` (num_warps...), which kernels can
        read (tl.target_info, tl.extra.cuda.num_warps)."""
        from .codegen import build_function

        return build_function(self, spec, target, options)

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Sequence[Any]:
        n = len(self.arg_names)
        if not kwargs and len(args) == n:
            return args
        if len(args) > n:
            raise TypeError(f"{self.__name__}() takes {n} arguments but {len(args)} were given")
        values = list(args) + [_MISSING] * (n - len(args))
        for k, v in kwargs.items():
            i = self._index.get(k)
            if i is None:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{k}'")
            if values[i] is not _MISSING:
                raise TypeError(f"{self.__name__}() got multiple values for argument '{k}'")
            values[i] = v
        for i, v in enumerate(values):
            if v is _MISSING:
                if self._defaults[i] is _MISSING:
                    what = "tl.constexpr argument" if self._kinds[i] == _CONSTEXPR else "argument"
                    raise TypeError(f"{self.__name__}() missing {what} '{self.arg_names[i]}'")
                values[i] = self._defaults[i]
        return values

    def _key(self, values: Sequence[Any]) -> tuple:
        return tuple([f(v) for f, v in zip(self._key_fns, values)])

    def specialize(self, args: Sequence[Any], constexprs: Optional[dict[str, Any]] = None
                   ) -> tuple[Specialization, list[Any]]:
        """The specialization for these arguments, and the runtime arguments in IR-parameter
        order (the members of tuple arguments, the base, shape and strides of descriptors)."""
        values = self._bind(tuple(args), dict(constexprs or {}))
        spec = Specialization(self.arg_names, self._key(values))
        leaves = [leaf for v, k in zip(values, spec.key) for leaf in leaf_values(v, k)]
        return spec, [python_value(leaves[i]) for i in spec.runtime_indices]

    # ------------------------------------------------------------------- launch
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        # Most programs launch with the same grid object each time (a tuple constant or a
        # variable): reuse its partial instead of making one per launch.
        grid_and_bound = self._grid_and_bound
        if grid_and_bound[0] is grid:
            return grid_and_bound[1]
        bound = functools.partial(self._launch if self._launch is not None else self._make_launch(), grid)
        self._grid_and_bound = (grid, bound)
        return bound

    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        """Launch on `grid` (a tuple of 1-3 ints, or callable(meta) -> tuple) and return the
        CompiledKernel; with warmup=True compile only (Triton's `run`). Options (binder.LAUNCH_OPTIONS):
        num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, launch_cooperative_grid=False,
        launch_pdl=False, stream=None (default: PyTorch's current stream)."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        launch = self._launch if self._launch is not None else self._make_launch()
        return launch(grid, *args, **kwargs)

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        """Compile for these arguments without launching; returns the CompiledKernel, with
        Triton's surface (asm, metadata, n_regs, kernel[grid](*all_args)). Keywords that name
        parameters bind to them, the others are launch options (as for a launch). A torch dtype
        stands for an array of that dtype (tile.MockTensor), as in Triton."""
        options = dict(LAUNCH_OPTIONS)
        for name, value in kwargs.items():
            if name not in self._index:
                if name not in options:
                    raise TypeError(f"{self.__name__}.warmup() got an unexpected keyword argument '{name}'")
                options[name] = value
        args = tuple(MockTensor.wrap_dtype(a) for a in args)
        values = self._bind(args, {k: v for k, v in kwargs.items() if k in self._index})
        target = _compiler().current_target()
        runtime_values = tuple(v for v, kind in zip(values, self._kinds) if kind != _CONSTEXPR)
        key = self._key(values) + tuple(options[n] for n in KEYED_OPTIONS) + (target,
                                                                               self._device(target, runtime_values))
        from ..runtime.async_compile import active_mode

        mode = active_mode.get()
        if mode is not None:  # tile.AsyncCompileMode: compile on its executor, return a FutureKernel
            def compile_it() -> Any:
                self._compile(key, values)
                return self.cache[key]

            return mode.submit((id(self), key), compile_it)
        self._compile(key, values)
        return self.cache[key]

    def forget_compiled(self) -> None:
        """Drop the compiled specializations: the next launch of each compiles again (the
        launch binders look their entries up in these dictionaries, so clearing them is enough)."""
        with self._lock:
            self.cache.clear()
            self._launchers.clear()
            self._fast_entries.clear()

    @property
    def params(self) -> list[KernelParam]:
        """Triton's `JITFunction.params`: one KernelParam per parameter."""
        return [KernelParam(i, p.name, p.name in self.constexpr_names, i in self.do_not_specialize, p.annotation,
                            p.default) for i, p in enumerate(self.signature.parameters.values())]

    @property
    def device_caches(self) -> dict[int, tuple]:
        """Triton's `JITFunction.device_caches`: per device, (compiled kernels by key, launch
        entries by key, target, backend (None), binder). tile keeps one cache whose keys end
        with the device (None on the interpreter, shown as device 0): with one device its
        caches are tile's own, with several each device's view holds its own entries."""
        from tile.runtime.driver import driver

        target = driver.active.get_current_target()
        devices = {key[-1] or 0 for key in self.cache} | {driver.active.get_current_device()}
        if len(devices) == 1:
            return {devices.pop(): (self.cache, self._launchers, target, None, self._launch)}
        return {device: ({k: v for k, v in self.cache.items() if (k[-1] or 0) == device},
                         {k: v for k, v in self._launchers.items() if (k[-1] or 0) == device},
                         target, None, self._launch) for device in devices}

    def _make_launch(self) -> Callable[..., None]:
        kinds = tuple(("runtime", "nospec", "constexpr")[k] for k in self._kinds)
        namespace = {"arg": launch_arg, "fast_args": FAST_ARGS, "arg_nospec": launch_arg_nospec, "constexpr": constexpr,
                     "constexpr_key": constexpr_key,
                     "entries": self._launchers, "compile": self._compile,
                     "target": _launch_target, "device": self._device, "missing_argument": self._missing_argument,
                     "too_many_arguments": self._too_many_arguments, "argument_error": self._argument_error,
                     **self._hook_names()}
        self._general, self._lookup = make_binder(self.__name__, self.arg_names, kinds, self._defaults, _MISSING,
                                                  namespace)
        self._launch = self._general
        return self._launch

    def _make_fast_launch(self, values: Sequence[Any], tensor_map: Optional[TensorMapCache]) -> None:
        """Replace the general binder with one specialized on the kinds of `values`, the
        arguments of the first compiled launch (binder.make_fast_binder), if they allow it.
        `tensor_map`: how that launch made its descriptors' tensor maps, if it did."""
        self._fast_tried = True
        kinds = tuple(("runtime", "nospec", "constexpr")[k] for k in self._kinds)
        fast_args = [fast_arg(v, kind, tensor_map) for v, kind in zip(values, kinds)]
        if any(f is None for f in fast_args) or self._general is None:
            return
        compiler = _compiler()
        namespace = {"lookup": self._lookup, "general": self._general, "fast": self._fast_entries,
                     "fast_miss": self._fast_miss, "environ": compiler.ENVIRON, "interpret_key": compiler.INTERPRET_KEY,
                     **self._hook_names()}
        if any(f.stream for f in fast_args):
            namespace["torch_stream"] = torch_stream_getter()
            namespace["current_device"] = torch_device_getter()
        else:
            namespace["current_device"] = current_device
        self._launch = make_fast_binder(self.__name__, self.arg_names, kinds, self._defaults, _MISSING, fast_args,
                                        namespace)
        self._grid_and_bound = (_MISSING, None)

    def _hook_names(self) -> dict[str, Any]:
        from ..runtime import launch_hooks

        return {"kernel": self, "hooks": launch_hooks.HOOKS, "hooked": launch_hooks.launch_hooked}

    def _fast_miss(self, key: tuple, entry: Any) -> Optional[Callable[..., None]]:
        """The fast binder's first launch under a new key: keep the entry's fast form, if it has one."""
        fast = getattr(entry, "fast", None)
        if fast is not None:
            self._fast_entries[key] = fast
        return fast

    def _too_many_arguments(self, given: int) -> None:
        raise TypeError(f"{self.__name__}() takes {len(self.arg_names)} arguments but {given} were given")

    def _argument_error(self, exc: Exception, values: tuple) -> None:
        """Re-raise `exc`, raised while converting the launch arguments `values`, naming the
        argument at fault (found by converting them again, one by one)."""
        for name, kind, value in zip(self.arg_names, self._kinds, values):
            if kind == _CONSTEXPR:
                continue
            try:
                (launch_arg if kind == _RUNTIME else launch_arg_nospec)(value)
            except (TypeError, ValueError) as err:
                cls = TypeError if isinstance(err, TypeError) else ValueError
                raise cls(f"{self.__name__}: argument '{name}' ({_describe_value(value)}): {err}") from exc
        raise exc

    def _missing_argument(self, name: str) -> None:
        what = "tl.constexpr argument" if name in self.constexpr_names else "argument"
        raise TypeError(f"{self.__name__}() missing {what} '{name}'")

    def _compile(self, key: tuple, values: tuple) -> Callable[..., None]:
        """Compile one specialization (once, even when several threads launch it at once).
        `key` ends with the values of binder.KEYED_OPTIONS, the target and the launch device
        (None on the host), which the kernel is loaded on."""
        with self._lock:
            entry = self._launchers.get(key)
            if entry is not None and key in self.cache:  # a user may have cleared the cache to recompile
                return entry
            trailing = len(KEYED_OPTIONS) + 2
            options = dict(zip(KEYED_OPTIONS, key[-trailing:-2]))
            check_launch_options(self.__name__, options)
            del options["num_ctas"]
            compiler = _compiler()
            target, device = key[-2], key[-1]
            if device:  # a GPU other than device 0 (whose target is current_target()): compile for its architecture
                target = cuda_driver.device_target(device)
            spec = Specialization(self.arg_names, key[:-trailing], tensor_maps=_uses_tensor_maps(target))
            if target.startswith(_EMULATOR_PREFIX):  # TILE_EMULATE=1: the target's PTX runs on tile.emulator
                from ..emulator.launch import compile_for_emulator

                compiled = compile_for_emulator(self, spec, options, target)
            else:
                if target != compiler.INTERPRETER and not target.startswith("gfx"):  # HIP stages NumPy arrays
                    self._check_device_arrays(spec, values)
                with loading_on(device):
                    compiled = compiler.compile_kernel(self, spec, options, target)
            self.cache[key] = compiled
            runtime_args = [i for i, k in enumerate(self._kinds) if k != _CONSTEXPR]
            entry = compiled.make_entry(*spec.launch_positions(set(runtime_args)))
            tensor_map = _tensor_map_bytes(target) if spec.tensor_maps else None
            if spec.has_aggregates:
                fast = getattr(entry, "fast", None)
                entry = flattening_entry(entry, tuple(spec.key[i] for i in runtime_args), tensor_map,
                                         tuple(self.arg_names[i] for i in runtime_args))
                if fast is not None and tensor_map is not None:  # the fast binder spreads descriptors itself
                    entry.fast = fast
            self._launchers[key] = entry
            if not self._fast_tried and getattr(entry, "fast", None) is not None:
                self._make_fast_launch(values, tensor_map)
            return entry

    def _check_device_arrays(self, spec: Specialization, values: tuple) -> None:
        for name, key, value in zip(self.arg_names, spec.key, values):
            for leaf_key, leaf in zip(leaf_keys(key), leaf_values(value, key)):
                if leaf_key[0] == "ptr" and not leaf_key[3]:
                    raise TypeError(f"{self.__name__}: argument '{name}' ({type(leaf).__name__}) is in host memory; "
                                    f"pass GPU arrays (tile.to_device, CUDA tensors) or set TILE_INTERPRET=1")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.__name__} is a @tile.jit function: launch it with {self.__name__}[grid](...) "
                           f"or call it from another @tile.jit function")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


@functools.cache
def _tensor_map_bytes(target: str) -> TensorMapCache:
    """The tensor maps of a target's launches: the driver's, or the emulator's own format."""
    if target.startswith(_EMULATOR_PREFIX):
        from tile.emulator.tensor_maps import emulator_tensor_map

        return emulator_tensor_map
    from tile.runtime.tensor_map import tensor_map_bytes

    return tensor_map_bytes


def _uses_tensor_maps(target: str) -> bool:
    """Whether host descriptors reach kernels for `target` (or the emulator's "emulator:sm_90a")
    with their TMA tensor maps (sm_90a)."""
    from tile.runtime.tensor_map import uses_tensor_maps

    return uses_tensor_maps(target.removeprefix(_EMULATOR_PREFIX))


def _compiler() -> types.ModuleType:
    import tile.compiler

    return tile.compiler


_EMULATOR_PREFIX = "emulator:"  # tile.emulator.EMULATOR_PREFIX, without importing the emulator


def _launch_target() -> str:
    """Where a launch runs: compiler.current_target(), except that with TILE_EMULATE=1 (and no
    TILE_INTERPRET=1) the launches that would run on the interpreter run the PTX of
    TILE_EMULATE_TARGET (default sm_80) on tile.emulator."""
    compiler = _compiler()
    target = compiler.current_target()
    if target == compiler.INTERPRETER and os.environ.get("TILE_EMULATE", "0") not in ("", "0") and \
            os.environ.get("TILE_INTERPRET", "0") in ("", "0"):
        return _EMULATOR_PREFIX + os.environ.get("TILE_EMULATE_TARGET", "sm_80")
    return target


def _describe_value(value: Any) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _nospec_key(v: Any) -> tuple:
    return arg_key(v, False)


def jit(fn: Optional[Callable[..., Any]] = None, *, do_not_specialize: Iterable[Any] = (),
        do_not_specialize_on_alignment: Iterable[Any] = (), debug: Optional[bool] = None,
        noinline: Optional[bool] = None, launch_metadata: Optional[Callable[..., dict]] = None,
        extra_passes: Iterable[Any] = ()) -> Any:
    """Decorate a function written in tile language: `@tile.jit` or `@tile.jit(do_not_specialize=["n"])`.

    do_not_specialize: parameters (names or indices) whose values are not part of the
    specialization (no `== 1` or divisibility facts; one compiled kernel for all values).
    do_not_specialize_on_alignment: accepted as in Triton; tile still specializes those
    pointers on their 16-byte alignment, which is always correct and at worst compiles one
    more variant. launch_metadata: `fn(grid, kernel, args) -> dict`, called at each launch
    while a profiler session with hook="triton" is active (tile.profiler); `kernel` has
    `.name`, `args` maps every parameter name to its argument; the dict's "name" names the
    launch and its "flops8/16/32/64", "flops" and "bytes" are recorded as metrics.
    extra_passes: your own passes over tile IR (functions of a tt.func, or objects with
    run(func)), run in order after the tile passes, each followed by the verifier
    (tile.opt.user_passes).
    """

    def wrap(f: Callable[..., Any]) -> JITFunction:
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline,
                           launch_metadata=launch_metadata, extra_passes=extra_passes)

    return wrap(fn) if fn is not None else wrap


__all__ = ["jit", "JITFunction", "CompilationError", "SourcePoint"]
