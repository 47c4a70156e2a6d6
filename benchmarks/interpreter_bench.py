"""Speed of tile's NumPy interpreter on one CPU core, against Triton 3.9's interpreter.

    python benchmarks/interpreter_bench.py            # kernels written with @tile.jit
    python benchmarks/interpreter_bench.py --ir       # the same kernels as tile IR text

Two kernels: vector add of 2**20 float32 (BLOCK=1024, 1024 programs) and fused softmax of a
1024x1024 float32 matrix (one row per program, BLOCK=1024). Each is run once cold (the first
launch: compiling included) and then `--repeat` times warm; the table shows the cold time,
the median warm time, and Triton's interpreter time divided by ours (higher is better).
The process is pinned to one core and NumPy's thread pools to one thread.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # run from a checkout
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


def frontend_kernels() -> dict[str, Callable[[list], None]]:
    import tile
    import tile.language as tl

    @tile.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @tile.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=mask)

    return {
        "vector add 2^20 f32": lambda a: add_kernel[(N_ADD // BLOCK,)](*a, BLOCK=BLOCK),
        "softmax 1024x1024 f32": lambda a: softmax_kernel[(ROWS,)](*a, BLOCK=BLOCK),
    }


ADD_IR = """
tt.func {arg_names = ["x_ptr", "y_ptr", "out_ptr", "n"], sym_name = "add_kernel"} {
^entry(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32):
  %pid = tt.program_id {axis = 0} : i32
  %block = arith.constant {value = 1024} : i32
  %start = arith.mul %pid, %block : i32
  %range = tt.arange {end = 1024, start = 0} : tensor<1024xi32>
  %starts = tt.splat %start : tensor<1024xi32>
  %offs = arith.add %starts, %range : tensor<1024xi32>
  %ns = tt.splat %n : tensor<1024xi32>
  %mask = arith.cmp %offs, %ns {predicate = "lt"} : tensor<1024xi1>
  %xs = tt.splat %x_ptr : tensor<1024xptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<1024xptr<f32>>
  %x = tt.load %xp, %mask : tensor<1024xf32>
  %ys = tt.splat %y_ptr : tensor<1024xptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<1024xptr<f32>>
  %y = tt.load %yp, %mask : tensor<1024xf32>
  %sum = arith.add %x, %y : tensor<1024xf32>
  %os = tt.splat %out_ptr : tensor<1024xptr<f32>>
  %op = tt.addptr %os, %offs : tensor<1024xptr<f32>>
  tt.store %op, %sum, %mask
  tt.return
}
"""

SOFTMAX_IR = """
tt.func {arg_names = ["out_ptr", "in_ptr", "in_stride", "out_stride", "n_cols"], sym_name = "softmax_kernel"} {
^entry(%out_ptr: ptr<f32>, %in_ptr: ptr<f32>, %in_stride: i32, %out_stride: i32, %n_cols: i32):
  %row = tt.program_id {axis = 0} : i32
  %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32>
  %ns = tt.splat %n_cols : tensor<1024xi32>
  %mask = arith.cmp %offs, %ns {predicate = "lt"} : tensor<1024xi1>
  %in_start = arith.mul %row, %in_stride : i32
  %in_row = tt.addptr %in_ptr, %in_start : ptr<f32>
  %in_rows = tt.splat %in_row : tensor<1024xptr<f32>>
  %in_ptrs = tt.addptr %in_rows, %offs : tensor<1024xptr<f32>>
  %ninf = arith.constant {value = -inf} : tensor<1024xf32>
  %x = tt.load %in_ptrs, %mask, %ninf : tensor<1024xf32>
  %m = tt.reduce %x {axis = 0} : f32 {
  ^bb(%a: f32, %b: f32):
    %mx = arith.max %a, %b : f32
    tt.reduce.return %mx
  }
  %ms = tt.splat %m : tensor<1024xf32>
  %z = arith.sub %x, %ms : tensor<1024xf32>
  %num = math.exp %z : tensor<1024xf32>
  %den = tt.reduce %num {axis = 0} : f32 {
  ^bb(%c: f32, %d: f32):
    %s = arith.add %c, %d : f32
    tt.reduce.return %s
  }
  %dens = tt.splat %den : tensor<1024xf32>
  %y = arith.div %num, %dens : tensor<1024xf32>
  %out_start = arith.mul %row, %out_stride : i32
  %out_row = tt.addptr %out_ptr, %out_start : ptr<f32>
  %out_rows = tt.splat %out_row : tensor<1024xptr<f32>>
  %out_ptrs = tt.addptr %out_rows, %offs : tensor<1024xptr<f32>>
  tt.store %out_ptrs, %y, %mask
  tt.return
}
"""


def ir_kernels() -> dict[str, Callable[[list], None]]:
    from tile.ir import parse_op
    from tile.runtime.interpreter import run_kernel

    def launcher(text: str, grid: tuple[int, int, int]) -> Callable[[list], None]:
        funcs = []

        def launch(args: list) -> None:
            if not funcs:  # parsed by the first (cold) launch, like @tile.jit compiles then
                funcs.append(parse_op(text))
            run_kernel(funcs[0], grid, args, funcs[0].attrs["sym_name"])

        return launch

    return {"vector add 2^20 f32": launcher(ADD_IR, (N_ADD // BLOCK, 1, 1)),
            "softmax 1024x1024 f32": launcher(SOFTMAX_IR, (ROWS, 1, 1))}  # fmt: skip


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


def frontend_available() -> bool:
    try:
        import tile.language  # noqa: F401
        from tile import jit  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ir", action="store_true", help="run IR text instead of @tile.jit kernels")
    parser.add_argument("--repeat", type=int, default=9, help="warm runs per kernel (median reported)")
    opts = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    use_ir = opts.ir or not frontend_available()
    kernels = ir_kernels() if use_ir else frontend_kernels()
    source = "tile IR text" if use_ir else "@tile.jit"
    print(f"tile interpreter, kernels from {source}, one core, median of {opts.repeat} warm runs")
    print(f"{'kernel':<24}{'cold (s)':>10}{'warm (s)':>10}{'Triton (s)':>12}{'Triton / tile':>15}")
    for name, (args, check) in problems(np.random.default_rng(0)).items():
        launch = kernels[name]
        cold = timed(lambda: launch(args))
        check()
        warm = statistics.median(timed(lambda: launch(args)) for _ in range(opts.repeat))
        triton = TRITON_SECONDS[name]
        print(f"{name:<24}{cold:>10.4f}{warm:>10.4f}{triton:>12.2f}{triton / warm:>14.1f}x")


if __name__ == "__main__":
    main()
