"""Helpers for testing and benchmarking kernels."""
from __future__ import annotations

import csv
import importlib.util
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np


def _host(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__ == "torch":
        t = x.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-8, err_msg: str = "") -> None:
    """Assert |actual - expected| <= atol + rtol * |expected| elementwise, for any array type tile accepts.

    NaNs must match NaNs; the message reports the worst element and how many elements differ.
    """
    a = _host(actual).astype(np.float64) if _host(actual).dtype != np.bool_ else _host(actual)
    e = _host(expected).astype(np.float64) if _host(expected).dtype != np.bool_ else _host(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{err_msg} shapes differ: {a.shape} vs {e.shape}".strip())
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        bad = a != e
    else:
        both_nan = np.isnan(a) & np.isnan(e)
        bad = ~both_nan & ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    if bad.any():
        idx = np.unravel_index(np.argmax(bad), bad.shape)
        raise AssertionError(
            f"{err_msg} {int(bad.sum())} of {bad.size} elements differ (rtol={rtol}, atol={atol}); "
            f"first at {tuple(int(i) for i in idx)}: {a[idx]!r} vs expected {e[idx]!r}".strip())


# ------------------------------------------------------------------------------ timing

_L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any GPU's L2, so writing it evicts everything
_RETURN_MODES = ("min", "max", "mean", "median", "all")


class _HostClock:
    """Wall-clock timestamps (time.perf_counter): for the interpreter and machines without a GPU."""

    def event(self) -> list[float]:
        return [0.0]

    def record(self, event: list[float]) -> None:
        event[0] = time.perf_counter()

    def elapsed_ms(self, start: list[float], end: list[float]) -> float:
        return (end[0] - start[0]) * 1e3

    def synchronize(self) -> None:
        pass

    def flush_l2(self) -> None:
        pass  # a host cache flush would cost more than the kernels timed on the interpreter


class _TorchClock:
    """CUDA events of PyTorch, recorded on its current stream (where tile launches with torch tensors)."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.buffer = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, event: Any) -> None:
        event.record()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def flush_l2(self) -> None:
        self.buffer.zero_()


class _DriverEvent:
    """A CUDA event from cuda-python, destroyed with the object."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.handle = _cu(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")

    def __del__(self) -> None:
        try:
            self.driver.cuEventDestroy(self.handle)
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass


class _DriverClock:
    """CUDA events through cuda-python, recorded on the default stream (where tile launches by default)."""

    def __init__(self) -> None:
        from cuda.bindings import driver

        from tile.runtime import cuda_driver

        self.driver = driver
        self.cuda_driver = cuda_driver
        cuda_driver.get_device(0)
        self.buffer = cuda_driver.mem_alloc(_L2_FLUSH_BYTES)

    def event(self) -> _DriverEvent:
        self.cuda_driver.get_device(0)  # the context must be current in this thread
        return _DriverEvent(self.driver)

    def record(self, event: _DriverEvent) -> None:
        _cu(self.driver.cuEventRecord(event.handle, 0), "cuEventRecord")

    def elapsed_ms(self, start: _DriverEvent, end: _DriverEvent) -> float:
        return float(_cu(self.driver.cuEventElapsedTime(start.handle, end.handle), "cuEventElapsedTime"))

    def synchronize(self) -> None:
        self.cuda_driver.synchronize()

    def flush_l2(self) -> None:
        _cu(self.driver.cuMemsetD32Async(self.buffer, 0, _L2_FLUSH_BYTES // 4, 0), "cuMemsetD32Async")


def _cu(result: tuple, call: str) -> Any:
    """The value of a cuda-python `(CUresult, value...)` result; a DriverError if the call failed."""
    from tile.runtime.errors import DriverError

    if int(result[0]) != 0:
        raise DriverError(call, getattr(result[0], "name", str(result[0])))
    return result[1] if len(result) > 1 else None


_gpu_clocks: dict[str, Any] = {}


def _clock() -> Any:
    """How to time now: PyTorch's events if torch is in use with CUDA, else cuda-python's, else the host's."""
    if os.environ.get("TILE_INTERPRET", "0") not in ("", "0"):
        return _HostClock()
    torch = sys.modules.get("torch")  # imported by the user already; importing it here would cost seconds
    if torch is not None and torch.cuda.is_available():
        kind = "torch"
    else:
        from tile.runtime.cuda_driver import cuda_available

        if not cuda_available():
            return _HostClock()
        kind = "driver"
    clock = _gpu_clocks.get(kind)
    if clock is None:
        clock = _gpu_clocks[kind] = _TorchClock() if kind == "torch" else _DriverClock()
    return clock


def _summarize(times: list[float], quantiles: Optional[Sequence[float]], return_mode: str) -> Any:
    if quantiles is not None:
        values = [float(v) for v in np.quantile(np.asarray(times, dtype=np.float64), list(quantiles))]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    summary = {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode]
    return float(summary(times))


def _check_summary(return_mode: str, quantiles: Optional[Sequence[float]]) -> None:
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    if quantiles is not None and any(not 0 <= q <= 1 for q in quantiles):
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)}")


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, grad_to_none: Optional[Sequence[Any]] = None,
             quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean") -> Any:
    """The time of one call of `fn` in milliseconds, as triton.testing.do_bench measures it.

    `fn` runs once, then five times to estimate its duration; from that estimate, enough
    warm-up calls to fill `warmup` ms and enough timed calls to fill `rep` ms. Each timed
    call is bracketed by CUDA events (PyTorch's when torch is imported and has CUDA, else
    cuda-python's on the default stream) and preceded by writing a 256 MB buffer, which
    flushes the L2 cache. `grad_to_none`: tensors whose `.grad` is reset before each call.
    Returns the `quantiles` of the times if given (a float for one quantile), else their
    min, max, mean or median, or the list of them all ("all").

    Without a GPU (or with TILE_INTERPRET=1) the calls are timed with time.perf_counter on
    the host and the L2 flush is skipped, so tutorials and tests run anywhere; those are
    wall-clock times of the interpreter, not GPU times.
    """
    _check_summary(return_mode, quantiles)
    clock = _clock()
    fn()
    clock.synchronize()
    start, end = clock.event(), clock.event()
    clock.record(start)
    for _ in range(5):
        clock.flush_l2()
        fn()
    clock.record(end)
    clock.synchronize()
    estimate_ms = max(clock.elapsed_ms(start, end) / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [clock.event() for _ in range(n_repeat)]
    ends = [clock.event() for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for tensor in grad_to_none:
                tensor.grad = None
        clock.flush_l2()
        clock.record(starts[i])
        fn()
        clock.record(ends[i])
    clock.synchronize()
    times = [clock.elapsed_ms(s, e) for s, e in zip(starts, ends)]
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Optional[Sequence[Any]] = None,
                       quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean") -> Any:
    """Like `do_bench`, but replays `fn` from a CUDA graph so launch overhead is left out.

    Needs PyTorch with a CUDA GPU; `fn` is captured on a side stream, so its kernels must
    launch on PyTorch's current stream (tile does when given torch tensors). The graph
    unrolls enough calls to fill about `rep` ms and is replayed ten times; the result is
    per call, summarized as in `do_bench`. No L2 flush.
    """
    _check_summary(return_mode, quantiles)
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            torch = None
    if torch is None or not torch.cuda.is_available():
        raise RuntimeError("do_bench_cudagraph needs PyTorch with a CUDA GPU; use do_bench instead")
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        if grad_to_none is not None:
            for tensor in grad_to_none:
                tensor.detach_()
                tensor.requires_grad_(True)
                tensor.grad = None
        # Estimate without a graph: capturing one costs hundreds of ms.
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate_ms = start.elapsed_time(end) / 5
        n_repeat = 1000 if estimate_ms == 0 else max(1, int(rep / estimate_ms))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                if grad_to_none is not None:
                    for tensor in grad_to_none:
                        tensor.grad = None
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summarize(times, quantiles, return_mode)


# ------------------------------------------------------------------------------ reports


@dataclass
class Benchmark:
    """One performance report: `line_arg` takes each of `line_vals` (one curve each, named by
    `line_names`) for every point of `x_vals` (values of the `x_names` arguments); `args` are
    passed unchanged. `styles`: (color, line style) per curve for the plot."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any]
    xlabel: str = ""
    ylabel: str = ""
    styles: Optional[list[tuple[str, str]]] = None
    x_log: bool = False
    y_log: bool = False


@dataclass
class BenchmarkTable:
    """The measurements of one Benchmark: a row per x value, a column per x name and per line."""

    name: str
    columns: list[str]
    rows: list[list[Any]]
    lows: list[list[Optional[float]]] = field(default_factory=list)  # per row, per line: min (or None)
    highs: list[list[Optional[float]]] = field(default_factory=list)  # per row, per line: max (or None)

    def to_string(self) -> str:
        cells = [self.columns] + [[_cell(v) for v in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)

    def to_csv(self, path: str) -> None:
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(self.columns)
            writer.writerows(self.rows)


def _cell(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


class Mark:
    """A benchmark function with its reports; `.run()` measures and prints them."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench: Benchmark, **kwargs: Any) -> BenchmarkTable:
        unit = f" ({bench.ylabel})" if bench.ylabel else ""  # Triton's column names: "Triton (GB/s)"
        table = BenchmarkTable(bench.plot_name, list(bench.x_names) + [f"{n}{unit}" for n in bench.line_names], [])
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"{bench.plot_name}: expected {len(bench.x_names)} x values, got {x!r}")
            means, lows, highs = [], [], []
            for line in bench.line_vals:
                result = self.fn(**dict(zip(bench.x_names, xs)), **{bench.line_arg: line}, **bench.args, **kwargs)
                if isinstance(result, (list, tuple)) and len(result) == 3:
                    mean, low, high = result
                else:
                    mean, low, high = result, None, None
                means.append(mean)
                lows.append(low)
                highs.append(high)
            table.rows.append(xs + means)
            table.lows.append(lows)
            table.highs.append(highs)
        return table

    def run(self, show_plots: bool = False, print_data: bool = True, save_path: Optional[str] = None,
            **kwargs: Any) -> BenchmarkTable | list[BenchmarkTable]:
        """Measure every report; print its table, save `<plot_name>.csv` (and `.png` when
        matplotlib is installed) under `save_path`, and show the plots if asked.

        Returns the table, or a list of tables when the report was given a list of Benchmarks.
        """
        single = isinstance(self.benchmarks, Benchmark)
        benches = [self.benchmarks] if single else list(self.benchmarks)
        tables = []
        for bench in benches:
            table = self._measure(bench, **kwargs)
            tables.append(table)
            if print_data:
                print(f"{bench.plot_name}:")
                print(table.to_string())
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"))
            if save_path or show_plots:
                _plot(bench, table, save_path, show_plots)
        return tables[0] if single else tables


def _plot(bench: Benchmark, table: BenchmarkTable, save_path: Optional[str], show: bool) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        return
    if show:
        import matplotlib.pyplot as plt

        figure = plt.figure()
    else:
        from matplotlib.figure import Figure  # without pyplot, saving needs no GUI backend

        figure = Figure()
    ax = figure.add_subplot()
    n_x = len(bench.x_names)
    xs = [row[0] for row in table.rows]
    for i, name in enumerate(bench.line_names):
        color, style = bench.styles[i] if bench.styles else (None, None)
        ax.plot(xs, [row[n_x + i] for row in table.rows], label=name, color=color, ls=style)
        lows = [r[i] for r in table.lows]
        highs = [r[i] for r in table.highs]
        if all(v is not None for v in lows + highs):
            ax.fill_between(xs, lows, highs, alpha=0.15, color=color)
    ax.legend()
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    ax.set_xscale("log" if bench.x_log else "linear")
    ax.set_yscale("log" if bench.y_log else "linear")
    if save_path:
        figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorate a function `fn(**x_args, line_arg=value, **args)` returning a time (or a
    (mean, min, max) triple) into a report whose `.run()` measures and prints a table."""
    return lambda fn: Mark(fn, benchmarks)


# Triton's testing helpers that tile lacks, and what to use instead.
def triton_twin(kernel: Any) -> Any:
    """The same kernel source compiled by Triton (for benchmarks side by side): the function
    of a `@tile.jit` kernel with `tl` bound to triton.language, under `triton.jit`. Triton
    finds constexpr parameters by their annotations, so the twin's are Triton's constexpr.
    The kernel's own module must use only names both compilers share."""
    import types

    import triton
    import triton.language

    fn = kernel.fn
    scope = dict(fn.__globals__, tl=triton.language)
    twin = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__annotations__ = {name: triton.language.constexpr for name in kernel.constexpr_names}
    return triton.jit(twin)


_TRITON_ONLY = {
    "get_dram_gbps": "compute bandwidth from your own timings (tile.testing.do_bench) and the bytes moved",
    "get_max_tensorcore_tflops": "use the device's datasheet figure",
    "get_max_simd_tflops": "use the device's datasheet figure",
    "set_gpu_clock": "lock clocks with nvidia-smi --lock-gpu-clocks outside the program",
    "nvsmi": "run nvidia-smi --query-gpu=... yourself",
    "cuda_memcheck": "run the program under compute-sanitizer",
}


def __getattr__(name: str) -> Any:
    hint = _TRITON_ONLY.get(name)
    if hint is not None:
        raise AttributeError(f"tile does not provide triton.testing.{name}: {hint}")
    raise AttributeError(f"module 'tile.testing' has no attribute {name!r}")
