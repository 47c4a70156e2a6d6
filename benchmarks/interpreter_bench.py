"""Speed of tile's NumPy interpreter on one CPU core, against Triton 3.9's interpreter.

    python benchmarks/interpreter_bench.py

Two kernels of benchmarks/kernels.py: vector add of 2**20 float32 (BLOCK=1024, 1024 programs) and fused softmax of a
1024x1024 float32 matrix (one row per program, BLOCK=1024). Each is run once cold (the first
launch: compiling included) and then `--repeat` times warm; the table shows the cold time,
the median warm time, and Triton's interpreter time divided by ours (higher is better).
The process is pinned to one core and NumPy's thread pools to one thread.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # run from a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("TILE_INTERPRET", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

# Triton 3.9's interpreter (TRITON_INTERPRET=1) on the same kernels, one core, seconds.
TRITON_SECONDS = {"vector add 2^20 f32": 0.94, "softmax 1024x1024 f32": 2.08}

N_ADD, ROWS, COLS, BLOCK = 1 << 20, 1024, 1024, 1024


# ------------------------------------------------------------------------ the kernels


def kernels() -> dict[str, Callable[[list], None]]:
    """The kernels of benchmarks/kernels.py (the GPU benchmarks run the same source)."""
    import tile
    import tile.language as tl
    from load_kernels import load_kernels

    k = load_kernels("kernels_tile", tile.jit, tl)
    return {
        "vector add 2^20 f32": lambda a: k.add_kernel[(N_ADD // BLOCK,)](*a, BLOCK=BLOCK),
        "softmax 1024x1024 f32": lambda a: k.softmax_kernel[(ROWS,)](*a, BLOCK=BLOCK),
    }


# ---------------------------------------------------------------------- measurement


def problems(rng: np.random.Generator) -> dict[str, tuple[list, Callable[[], None]]]:
    """Arguments of each kernel, and a check of its output against NumPy in float64."""
    x, y = rng.standard_normal(N_ADD).astype(np.float32), rng.standard_normal(N_ADD).astype(np.float32)
    added = np.full(N_ADD, np.nan, np.float32)
    m = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    soft = np.full((ROWS, COLS), np.nan, np.float32)

    def check_add() -> None:
        np.testing.assert_allclose(added, x.astype(np.float64) + y, rtol=1e-6)

    def check_softmax() -> None:
        e = np.exp(m.astype(np.float64) - m.max(axis=1, keepdims=True))
        np.testing.assert_allclose(soft, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)

    return {"vector add 2^20 f32": ([x, y, added, N_ADD], check_add),
            "softmax 1024x1024 f32": ([soft, m, COLS, COLS, COLS], check_softmax)}  # fmt: skip


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="warm runs per kernel (median reported)")
    opts = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    launches = kernels()
    print(f"tile interpreter, kernels of benchmarks/kernels.py, one core, median of {opts.repeat} warm runs")
    print(f"{'kernel':<24}{'cold (s)':>10}{'warm (s)':>10}{'Triton (s)':>12}{'Triton / tile':>15}")
    for name, (args, check) in problems(np.random.default_rng(0)).items():
        launch = launches[name]
        cold = timed(lambda: launch(args))
        check()
        warm = statistics.median(timed(lambda: launch(args)) for _ in range(opts.repeat))
        triton = TRITON_SECONDS[name]
        print(f"{name:<24}{cold:>10.4f}{warm:>10.4f}{triton:>12.2f}{triton / warm:>14.1f}x")


if __name__ == "__main__":
    main()
