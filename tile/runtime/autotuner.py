"""Autotuning and heuristics for kernels, with Triton's semantics.

    @tile.autotune(configs=[tile.Config({"BLOCK": 128}, num_warps=4),
                            tile.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
    @tile.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](x, y, out, n)

On the first call for a new key (the values of the arguments named in `key`, plus the dtype
of every array argument) each config is benchmarked and the fastest is kept, in memory and
on disk (`DiskCache`), so the next process skips the tuning. `TILE_PRINT_AUTOTUNING=1`
prints what was chosen. A config that fails to compile or does not fit the device (a
tile.OutOfResources from the compiler, runtime.resources) is skipped (a failure to compile with
a warning, a config too big for the device silently, as Triton does), and listed with its
reason under TILE_PRINT_AUTOTUNING.

Triton's options all work: `reset_to_zero`, `restore_value`, `pre_hook(kwargs, reset_only)` and
`post_hook(kwargs, exception)` around every timed run (replacing the reset/restore defaults,
as in Triton), `prune_configs_by`, `warmup`/`rep`, `use_cuda_graph`, `do_bench`,
`cache_results`; `Config(..., num_ctas, maxnreg, pre_hook)`; `kernel.warmup(...)` compiles
every (pruned) config.
"""
from __future__ import annotations

import inspect
import json
import os
import time
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .cache import DiskCache, cache_key, compiler_fingerprint
from .errors import CompilerBugError, DriverError, LaunchError, OutOfResources

# Driver failures that mean "this config asks for more than the device has".
_RESOURCE_CODES = {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE"}


class Config:
    """One point of the tuning space: constexpr values plus launch options.

    `pre_hook(nargs)` runs before every launch with this config; `nargs` maps argument names
    (and constexprs) to values. `num_ctas` must be 1 on tile; `maxnreg` caps the registers
    per thread (PTX `.maxnreg`). Triton's `ir_override` is not supported.
    """

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Optional[int] = None, pre_hook: Optional[Callable[[dict[str, Any]], None]] = None,
                 ir_override: Optional[str] = None) -> None:
        if ir_override is not None:
            raise NotImplementedError("Config(ir_override=...): tile compiles every kernel from its Python source "
                                      "and cannot load user IR; leave ir_override out")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The keyword arguments a launch with this config receives (num_ctas and maxnreg
        only where they differ from the launch defaults)."""
        options = {"num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            options["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return {**self.kwargs, **options}

    def _identity(self) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in self.all_kwargs().items())), self.pre_hook

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"{k}: {v}" for k, v in self.all_kwargs().items() if k not in self.kwargs]
        return ", ".join(parts)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.all_kwargs().items()
                        if k not in self.kwargs and k not in ("num_warps", "num_stages"))
        hook = f", pre_hook={self.pre_hook!r}" if self.pre_hook is not None else ""
        return f"Config({self.kwargs!r}, num_warps={self.num_warps}, num_stages={self.num_stages}{extra}{hook})"


class AutotuneError(RuntimeError):
    """Every config of an autotuned kernel failed; the message lists each config's reason."""


def _base_function(fn: Any) -> Callable:
    """The Python function under any stack of JITFunction / Autotuner / Heuristics wrappers."""
    base = fn
    while not inspect.isfunction(base):
        inner = getattr(base, "fn", None)
        if inner is None:
            raise TypeError(f"{fn!r} is not a @tile.jit function (or a wrapper of one)")
        base = inner
    return base


def _arg_names(fn: Any) -> list[str]:
    names = getattr(fn, "arg_names", None)
    if names is not None:
        return list(names)
    return list(inspect.signature(_base_function(fn)).parameters)


class _KernelWrapper:
    """What Autotuner and Heuristics share: `kernel[grid](...)` and the wrapped kernel's names."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.base_fn = _base_function(fn)
        self.arg_names = _arg_names(fn)
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)  # run: the subclass's

    def __getattr__(self, name: str) -> Any:
        # Everything else (specialize, build_ir, ...) is the wrapped kernel's, so tile.dump
        # and compile_kernel accept a wrapped kernel. Lookups during construction or
        # unpickling, before `fn` exists, must not recurse.
        if name == "fn" or "fn" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.fn, name)


def _is_array(value: Any) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, np.generic)


class ArrayKey:
    """An array named in an autotune `key`. Triton keys on the tensor object itself, so a new
    tensor is tuned anew even with the same dtype and shape (Triton's grouped-GEMM tutorial keys on
    its tables of matrix pointers, one per problem size); equal to another only for the same array
    (no reference is held: the id, dtype and shape together). A choice keyed on one is kept in
    memory only, since an object's identity means nothing on disk; across ranks its dtype and
    shape stand for it."""

    __slots__ = ("ident", "dtype", "shape")

    def __init__(self, array: Any) -> None:
        self.ident, self.dtype, self.shape = id(array), str(array.dtype), tuple(int(d) for d in array.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayKey) and (self.ident, self.dtype, self.shape) == \
            (other.ident, other.dtype, other.shape)

    def __hash__(self) -> int:
        return hash((self.ident, self.dtype, self.shape))

    def __repr__(self) -> str:
        return f"<array {self.dtype}{list(self.shape)}>"


def _zero(array: Any) -> None:
    if hasattr(array, "zero_"):
        array.zero_()
    elif isinstance(array, np.ndarray):
        array[...] = 0
    elif hasattr(array, "copy_from"):
        array.copy_from(np.zeros(array.shape, array.dtype))
    else:
        raise TypeError(f"reset_to_zero: cannot zero a {type(array).__qualname__}")


def _snapshot(array: Any) -> Any:
    if hasattr(array, "clone"):
        return array.clone()
    if isinstance(array, np.ndarray):
        return array.copy()
    if hasattr(array, "numpy") and hasattr(array, "copy_from"):
        return array.numpy()
    raise TypeError(f"restore_value: cannot copy a {type(array).__qualname__}")


def _restore(array: Any, saved: Any) -> None:
    if hasattr(array, "copy_"):
        array.copy_(saved)
    elif isinstance(array, np.ndarray):
        array[...] = saved
    else:
        array.copy_from(saved)


def is_tuning_error(exc: BaseException) -> bool:
    """Whether `exc` means "this config cannot run here" (skip it) rather than a bug to raise.

    That is: a CompilationError, a launch beyond a device limit (OutOfResources), PTX the driver rejects (for
    instance too much shared memory), or the driver running out of launch resources.
    """
    if isinstance(exc, (LaunchError, CompilerBugError, OutOfResources)):
        return True
    if isinstance(exc, DriverError):
        return exc.code in _RESOURCE_CODES
    try:
        from tile.frontend.errors import CompilationError
    except ImportError:
        return False
    return isinstance(exc, CompilationError)


def _device_name() -> str:
    """Where timings were taken: autotuning results are only valid on the same kind of device
    (under TILE_EMULATE, the emulated target: a config that fits gfx1100 may not fit gfx942)."""
    from tile.compiler import INTERPRETER
    from tile.frontend.jit import _EMULATOR_PREFIX, _launch_target

    target = _launch_target()
    if target == INTERPRETER or target.startswith(_EMULATOR_PREFIX):
        return target
    from .cuda_driver import CudaDevice, current_device

    return f"{target}:{CudaDevice.of(current_device()).name}"


class Autotuner(_KernelWrapper):
    """A kernel that picks, per tuning key, the fastest of several configs (see `autotune`)."""

    def __init__(self, fn: Any, configs: Sequence[Config], key: Sequence[str],
                 prune_configs_by: Optional[dict[str, Any]] = None,
                 reset_to_zero: Optional[Sequence[str]] = None, restore_value: Optional[Sequence[str]] = None,
                 warmup: float = 25, rep: float = 100, do_bench: Optional[Callable[..., Any]] = None,
                 cache_results: bool = True, pre_hook: Optional[Callable[..., Any]] = None,
                 post_hook: Optional[Callable[..., Any]] = None, use_cuda_graph: bool = False,
                 tune_on_rank_zero: bool = False) -> None:
        super().__init__(fn)
        self.tune_on_rank_zero = tune_on_rank_zero
        self.configs = list(configs) if configs else [Config({})]
        self.keys = list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for name in self.keys:
            if name not in self.arg_names:  # Triton ignores such a key (its tutorial 08 has a typo in one)
                warnings.warn(f"autotune of {self.__name__}: key {name!r} is not an argument and is ignored "
                              f"(arguments: {', '.join(self.arg_names)})", stacklevel=3)
        for name in self.reset_to_zero + self.restore_value:
            if name not in self.arg_names:
                raise ValueError(f"autotune of {self.__name__}: {name!r} is not an argument "
                                 f"(arguments: {', '.join(self.arg_names)})")
        prune = dict(prune_configs_by or {})
        unknown = set(prune) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise ValueError(f"prune_configs_by: unknown keys {sorted(unknown)}; "
                             f"known: perf_model, top_k, early_config_prune")
        self.perf_model: Optional[Callable[..., float]] = prune.get("perf_model")
        self.configs_top_k: float | int = prune.get("top_k", 1.0)
        self.early_config_prune: Optional[Callable[..., list[Config]]] = prune.get("early_config_prune")
        self.num_warmups, self.num_reps = warmup, rep
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        if do_bench is not None:
            self.do_bench: Callable[..., Any] = do_bench
        elif use_cuda_graph:
            from tile.testing import do_bench_cudagraph

            self.do_bench = lambda f, quantiles: do_bench_cudagraph(f, rep=self.num_reps, quantiles=quantiles)
        else:
            from tile.testing import do_bench as default_bench

            self.do_bench = lambda f, quantiles: default_bench(f, warmup=self.num_warmups, rep=self.num_reps,
                                                               quantiles=quantiles)
        self.cache_results = cache_results
        self.cache: dict[tuple, Config] = {}
        self.best_config: Optional[Config] = None
        self.configs_timings: dict[Config, Any] = {}
        self.bench_time = 0.0
        self._disk = DiskCache()

    # -------------------------------------------------------------------- tuning key

    def tuning_key(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        """Triton's key: the named arguments' values (an array: itself, see ArrayKey), then every
        array's dtype."""
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        named = {k: v for k, v in named.items() if k in self.arg_names}
        key: list[Any] = [ArrayKey(named[k]) if _is_array(named[k]) else named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if _is_array(v)]
        return tuple(key)

    # -------------------------------------------------------------------- running

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        nargs = dict(zip(self.arg_names, args))
        from_cache = "memory"
        key: tuple = ()
        if len(self.configs) > 1:
            key = self.tuning_key(args, kwargs)
            config = self.cache.get(key)
            if config is None:
                from .cuda_driver import CaptureError, capturing

                if capturing():
                    raise CaptureError(self.__name__, "tuned (timing its configs synchronizes the GPU)")
                group = _distributed() if self.tune_on_rank_zero else None
                if group is None:
                    config, from_cache = self._tune(key, args, nargs, grid, kwargs)
                else:
                    config, from_cache = self._tune_on_rank_zero(group, key, args, nargs, grid, kwargs)
                self.cache[key] = config
        else:
            config = self.configs[0]
        self.best_config = config
        if from_cache != "memory" and os.environ.get("TILE_PRINT_AUTOTUNING", "0") == "1":
            how = {"disk": "loaded from the disk cache", "rank 0": "received from rank 0"}.get(
                from_cache, f"tuned in {self.bench_time:.2f}s")
            print(f"tile autotuning for {self.__name__} with key {key}: {how}; best config: {config}")
        full = {**nargs, **kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full)
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def _tune(self, key: tuple, args: Sequence[Any], nargs: dict[str, Any], grid: Any,
              kwargs: dict[str, Any]) -> tuple[Config, str]:
        disk_key = self._disk_key(key)
        cached = self._load(disk_key) if disk_key is not None else None
        if cached is not None:
            return cached, "disk"
        pruned = self.prune_configs(nargs, kwargs)
        start = time.perf_counter()
        timings: dict[Config, Any] = {}
        failures: list[str] = []
        for config in pruned:
            try:
                timings[config] = self._bench(config, args, nargs, grid, kwargs)
            except Exception as exc:
                if not is_tuning_error(exc):
                    raise
                reason = f"{type(exc).__name__}: {exc}"
                failures.append(f"  [{config}] {reason}")
                if os.environ.get("TILE_PRINT_AUTOTUNING", "0") == "1":
                    print(f"tile autotuning {self.__name__}: skipped config {config}: {reason}")
                if not isinstance(exc, OutOfResources):  # a config too big for the device is routine, as in Triton
                    warnings.warn(f"autotune of {self.__name__}: skipping config [{config}]: {reason}",
                                  RuntimeWarning, stacklevel=4)
        self.bench_time = time.perf_counter() - start
        self.configs_timings = timings
        if not timings:
            raise AutotuneError(f"autotune of {self.__name__}: every config failed for key {key}:\n"
                                + "\n".join(failures))
        best = min(timings, key=lambda c: _sort_key(timings[c]))
        # The benchmark runs left reset_to_zero arrays dirty: the real launch sees zeros.
        self._pre_hook({**nargs, **kwargs, **best.all_kwargs()}, reset_only=True)
        if disk_key is not None:
            self._store(disk_key, best, timings)
        return best, "tuned"

    def _tune_on_rank_zero(self, dist: Any, key: tuple, args: Sequence[Any], nargs: dict[str, Any], grid: Any,
                           kwargs: dict[str, Any]) -> tuple[Config, str]:
        """`tune_on_rank_zero` under torch.distributed: rank 0 tunes (or reads its disk cache)
        and broadcasts the winner with its key; the other ranks wait for it instead of timing.
        Every rank must tune the same keys in the same order (each tuning is one collective);
        a rank whose key differs from rank 0's raises instead of using a config tuned for
        other arguments."""
        rank = dist.get_rank()
        payload: list[Any] = [None]
        if rank == 0:
            config, from_cache = self._tune(key, args, nargs, grid, kwargs)
            payload = [(_jsonable_key(key), _config_record(config))]
        dist.broadcast_object_list(payload, src=0)
        tuned_key, record = payload[0]
        if rank == 0:
            return config, from_cache
        if tuned_key != _jsonable_key(key):
            raise RuntimeError(f"autotune of {self.__name__} (tune_on_rank_zero): rank {rank} tunes key {key} but "
                               f"rank 0 tuned {tuple(tuned_key)}; with tune_on_rank_zero every rank must launch "
                               f"with the same tuning keys in the same order")
        return self._config_from_record(record), "rank 0"

    def _bench(self, config: Config, args: Sequence[Any], nargs: dict[str, Any], grid: Any,
               kwargs: dict[str, Any]) -> Any:
        if os.environ.get("TILE_PRINT_AUTOTUNING", "0") == "1":
            print(f"tile autotuning {self.__name__} with config {config}")
        conflicts = kwargs.keys() & config.kwargs.keys()
        if conflicts:
            raise ValueError(f"autotune of {self.__name__}: {', '.join(sorted(conflicts))} given both as "
                             f"arguments and by the configs; do not pass tuned meta-parameters")
        launch_kwargs = {**kwargs, **config.all_kwargs()}
        full = {**nargs, **launch_kwargs}

        def kernel_call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            saved = self._pre_hook(full)
            try:
                self.fn.run(*args, grid=grid, **launch_kwargs)
            except Exception as exc:
                self._post_hook(full, exc, saved)
                raise
            self._post_hook(full, None, saved)

        return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))

    def _pre_hook(self, full: dict[str, Any], reset_only: bool = False) -> dict[str, Any]:
        """Before a timed run: the user's pre_hook(kwargs, reset_only), or else zero the
        reset_to_zero arrays and (unless reset_only) snapshot the restore_value ones."""
        if self.user_pre_hook is not None:
            self.user_pre_hook(full, reset_only=reset_only)
            return {}
        for name in self.reset_to_zero:
            _zero(full[name])
        return {} if reset_only else {name: _snapshot(full[name]) for name in self.restore_value}

    def _post_hook(self, full: dict[str, Any], exception: Optional[BaseException], saved: dict[str, Any]) -> None:
        """After a timed run: the user's post_hook(kwargs, exception), or else restore the
        restore_value arrays."""
        if self.user_post_hook is not None:
            self.user_post_hook(full, exception=exception)
            return
        for name, value in saved.items():
            _restore(full[name], value)

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> list[Any]:
        """Compile every config (after pruning) without launching; their CompiledKernels."""
        nargs = dict(zip(self.arg_names, args))
        return [self.fn.warmup(*args, grid=grid, **kwargs, **config.all_kwargs())
                for config in self.prune_configs(nargs, kwargs)]

    def prune_configs(self, nargs: dict[str, Any], kwargs: dict[str, Any]) -> list[Config]:
        """The configs worth timing: after `early_config_prune`, the `top_k` best by `perf_model`."""
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(self.configs, nargs, **kwargs))
            if not configs:
                raise AutotuneError(f"autotune of {self.__name__}: early_config_prune left no config")
        if self.perf_model is not None:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError("prune_configs_by['top_k'] must be an int or a float <= 1.0")
            if len(configs) > top_k:
                estimate = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in configs}
                configs = sorted(configs, key=lambda c: estimate[c])[:top_k]
        return list(configs)

    # -------------------------------------------------------------------- disk cache

    def _disk_key(self, key: tuple) -> Optional[str]:
        if not self.cache_results or any(isinstance(v, ArrayKey) for v in key):
            return None
        try:
            source = inspect.getsource(self.base_fn)
        except (OSError, TypeError):
            return None  # no source (e.g. defined in a REPL): nothing stable to key on
        try:
            values = _jsonable_key(key)
            return cache_key("autotune", source, [repr(c) for c in self.configs], values,
                             _device_name(), compiler_fingerprint())
        except TypeError:
            return None  # a key value cache_key cannot encode: keep the result in memory only

    def _load(self, disk_key: str) -> Optional[Config]:
        entry = self._disk.get(disk_key)
        if entry is None:
            return None
        try:
            return self._config_from_record(json.loads(entry["best.json"]))
        except (KeyError, TypeError, ValueError):
            return None

    def _config_from_record(self, stored: dict[str, Any]) -> Config:
        """The config a `_config_record` describes: one of this kernel's configs when one
        matches (so its pre_hook runs), else a new Config."""
        chosen = Config(stored["kwargs"], num_warps=stored["num_warps"], num_stages=stored["num_stages"],
                        num_ctas=stored.get("num_ctas", 1), maxnreg=stored.get("maxnreg"))
        for config in self.configs:
            if config.all_kwargs() == chosen.all_kwargs():
                return config
        return chosen

    def _store(self, disk_key: str, best: Config, timings: dict[Config, Any]) -> None:
        record = {**_config_record(best), "timings": [[str(c), _jsonable(t)] for c, t in timings.items()]}
        try:
            text = json.dumps(record)
        except (TypeError, ValueError):
            return  # constexpr values JSON cannot hold: keep the result in memory only
        self._disk.put(disk_key, {"best.json": text})


def _config_record(config: Config) -> dict[str, Any]:
    """What identifies a config's launch, as plain data (for the disk cache and broadcasts)."""
    return {"kwargs": config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages,
            "num_ctas": config.num_ctas, "maxnreg": config.maxnreg}


def _jsonable_key(key: tuple) -> list[Any]:
    """A tuning key as plain values, equal on every rank for equal keys (an array: its dtype and shape)."""
    return [v.item() if isinstance(v, np.generic) else [v.dtype, list(v.shape)] if isinstance(v, ArrayKey) else v
            for v in key]


def _distributed() -> Any:
    """torch.distributed when this process is one of several ranks of an initialized process
    group, else None (torch is not imported for this: a job that uses it has imported it)."""
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist if dist.get_world_size() > 1 else None


def _sort_key(timing: Any) -> tuple:
    if isinstance(timing, (list, tuple)):
        return tuple(float(t) for t in timing)
    return (float(timing),)


def _jsonable(timing: Any) -> Any:
    return list(_sort_key(timing))


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: Optional[dict[str, Any]] = None,
             reset_to_zero: Optional[Sequence[str]] = None, restore_value: Optional[Sequence[str]] = None,
             pre_hook: Optional[Callable[..., Any]] = None, post_hook: Optional[Callable[..., Any]] = None,
             warmup: float = 25, rep: float = 100, use_cuda_graph: bool = False,
             do_bench: Optional[Callable[..., Any]] = None, cache_results: bool = True,
             tune_on_rank_zero: bool = False) -> Callable[[Any], Autotuner]:
    """Decorate a @tile.jit kernel so each new `key` benchmarks `configs` and keeps the fastest.

    `key`: argument names whose values (for arrays: dtypes) select a tuning; every array's
    dtype is part of the key too. `prune_configs_by`: {"perf_model": f(**args, **config) ->
    estimated time, "top_k": how many to time (a float <= 1: a fraction), "early_config_prune":
    f(configs, named_args, **kwargs) -> configs}. `reset_to_zero`: arrays zeroed before each
    timed run and before the real run; `restore_value`: arrays restored after each timed run.
    `pre_hook(kwargs, reset_only)` and `post_hook(kwargs, exception)` run around each timed
    run instead of that resetting and restoring (`kwargs`: every argument and config value).
    `do_bench(fn, quantiles)` times one config (default: tile.testing.do_bench with
    `warmup`/`rep` ms, or do_bench_cudagraph with `use_cuda_graph`); it returns a time or a
    list of times, smallest wins. `cache_results`: keep results on disk, keyed by the kernel
    source, the configs, the key and the device.

    Under torch.distributed every rank tunes on its own GPU by default. `tune_on_rank_zero=True`
    has rank 0 tune and broadcast its choice (torch.distributed.broadcast_object_list on the
    default group), so all ranks run one config and only one GPU spends time benchmarking;
    every rank must then tune the same keys in the same order.

        @tile.autotune(configs=[tile.Config({"BLOCK": 128}, num_warps=4),
                                tile.Config({"BLOCK": 1024}, num_warps=8)],
                       key=["n"], reset_to_zero=["out_ptr"])
        @tile.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr): ...
    """

    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, warmup=warmup, rep=rep, do_bench=do_bench,
                         cache_results=cache_results, pre_hook=pre_hook, post_hook=post_hook,
                         use_cuda_graph=use_cuda_graph, tune_on_rank_zero=tune_on_rank_zero)

    return decorator


class Heuristics(_KernelWrapper):
    """A kernel whose some constexprs are computed from its other arguments (see `heuristics`)."""

    def __init__(self, fn: Any, values: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
        super().__init__(fn)
        self.values = dict(values)

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic({**dict(zip(self.arg_names, args)), **kwargs})
        return self.fn.run(*args, grid=grid, **kwargs)

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        """Compile without launching, with the heuristics' values: the wrapped kernel's warmup."""
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic({**dict(zip(self.arg_names, args)), **kwargs})
        return self.fn.warmup(*args, grid=grid, **kwargs)


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Decorate a kernel so each launch sets constexpr `name` to `values[name](args)`.

    `args` maps every argument name (and the keyword arguments of the launch, including
    values computed by earlier heuristics) to its value; heuristics run in order.
    """

    def decorator(fn: Any) -> Heuristics:
        return Heuristics(fn, values)

    return decorator

