"""Speed of tile's PTX emulator (tile.emulate) against the block interpreter, on one CPU core.

    python benchmarks/emulator_bench.py [--repeat 3]

Kernels of benchmarks/kernels.py (and kernels_tma.py): vector add of 2**20 float32, fused
softmax of a 1024x1024 float32 matrix, and a 256x256x256 fp16 matmul (128x128x32 tiles, 4 warps)
compiled for sm_80 (mma.sync, ldmatrix, cp.async) and for sm_90a (wgmma), plus the persistent
matmul over host tensor descriptors on sm_90a (TMA loads and stores, mbarriers, wgmma). Each
runs once cold (compiling included, output checked against NumPy in float64), then `--repeat`
times warm; the table gives the median warm time, the emulator's instruction steps (one step is
one instruction for the threads of a batch of CTAs), the thread-instructions it executed per
second, and the block interpreter's warm time on the same kernel.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # run from a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable, Iterator  # noqa: E402

import numpy as np  # noqa: E402

import tile  # noqa: E402
import tile.language as tl  # noqa: E402
from load_kernels import load_kernels  # noqa: E402
from tile.emulator import machine as emulator_machine  # noqa: E402
from tile.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

N_ADD, ROWS, COLS, BLOCK, SIZE = 1 << 20, 1024, 1024, 1024, 256
MATMUL = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3)


class Case:
    """One kernel launch, on the emulator or on the block interpreter, and a check of its output."""

    def __init__(self, name: str, target: str, kernel: Any, grid: tuple, args: list, kwargs: dict,
                 check: Callable[[], None]):
        self.name, self.target, self.kernel, self.grid = name, target, kernel, grid
        self.args, self.kwargs, self.check = args, kwargs, check
        self.emulated = tile.emulate(kernel, target=target)  # compiles on its first launch, then reuses it

    def on_emulator(self) -> None:
        self.emulated[self.grid](*self.args, **self.kwargs)

    def on_interpreter(self) -> None:
        self.kernel[self.grid](*self.args, **self.kwargs)


def cases(rng: np.random.Generator) -> list[Case]:
    k = load_kernels("kernels_tile", tile.jit, tl)
    t = load_kernels("kernels_tma_tile", tile.jit, tl, "kernels_tma.py")
    x, y = rng.standard_normal(N_ADD).astype(np.float32), rng.standard_normal(N_ADD).astype(np.float32)
    added = np.full(N_ADD, np.nan, np.float32)
    m = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    soft = np.full((ROWS, COLS), np.nan, np.float32)
    a = rng.standard_normal((SIZE, SIZE)).astype(np.float16)
    b = rng.standard_normal((SIZE, SIZE)).astype(np.float16)
    c = np.full((SIZE, SIZE), np.nan, np.float16)
    product = a.astype(np.float64) @ b.astype(np.float64)

    def check_add() -> None:
        np.testing.assert_allclose(added, x.astype(np.float64) + y, rtol=1e-6)

    def check_softmax() -> None:
        e = np.exp(m.astype(np.float64) - m.max(axis=1, keepdims=True))
        np.testing.assert_allclose(soft, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)

    def check_matmul() -> None:
        np.testing.assert_allclose(c.astype(np.float64), product, rtol=1e-2, atol=5e-2)
        c[:] = np.nan

    tiles = (SIZE // MATMUL["BLOCK_M"]) * (SIZE // MATMUL["BLOCK_N"])
    matmul_args = [a, b, c, SIZE, SIZE, SIZE, SIZE, 1, SIZE, 1, SIZE, 1]
    descriptors = [TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
                   TensorDescriptor.from_tensor(c, [128, 128])]
    return [
        Case("vector add, 2^20 f32", "sm_80", k.add_kernel, (N_ADD // BLOCK,), [x, y, added, N_ADD],
             dict(BLOCK=BLOCK), check_add),
        Case("softmax, 1024x1024 f32", "sm_80", k.softmax_kernel, (ROWS,), [soft, m, COLS, COLS, COLS],
             dict(BLOCK=BLOCK), check_softmax),
        Case("matmul 256^3 fp16, sm_80 (mma.sync, ldmatrix, cp.async)", "sm_80", k.matmul_kernel, (tiles,),
             matmul_args, MATMUL, check_matmul),
        Case("matmul 256^3 fp16, sm_90a (wgmma, cp.async)", "sm_90a", k.matmul_kernel, (tiles,), matmul_args,
             MATMUL, check_matmul),
        Case("persistent matmul 256^3 fp16 over tensor descriptors, sm_90a (TMA, mbarrier, wgmma)", "sm_90a",
             t.persistent_matmul_descriptors, (2,), descriptors + [SIZE, SIZE, SIZE], dict(NUM_SMS=2, num_warps=4),
             check_matmul),
    ]


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def counted(fn: Callable[[], None]) -> tuple[int, int]:
    """(steps, thread-instructions) of the emulator machines `fn` runs: each instruction's
    handler counts the threads it runs for (predicated-off threads included)."""
    totals = [0, 0]
    run = emulator_machine.Machine.run

    def counting(self: Any, kinds: list[int], handlers: list[Any]) -> Iterator[None]:  # Machine.run yields turns
        def counted_handler(handler: Any) -> Any:
            def execute(m: Any, ins: Any) -> Any:
                totals[1] += m.count
                return handler(m, ins)
            return execute

        yield from run(self, kinds, [counted_handler(h) for h in handlers])
        totals[0] += self.steps

    emulator_machine.Machine.run = counting
    try:
        fn()
    finally:
        emulator_machine.Machine.run = run
    return totals[0], totals[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per kernel (median reported)")
    opts = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"tile.emulate against the block interpreter, one core, median of {opts.repeat} warm runs")
    print("| kernel | emulator | steps | thread-instructions/s | interpreter |")
    print("|---|---|---|---|---|")
    for case in cases(np.random.default_rng(0)):
        steps, executed = counted(case.on_emulator)
        case.check()
        warm = statistics.median(timed(case.on_emulator) for _ in range(opts.repeat))
        case.check()
        os.environ["TILE_INTERPRET"] = "1"
        case.on_interpreter()
        case.check()
        interpreted = statistics.median(timed(case.on_interpreter) for _ in range(opts.repeat))
        del os.environ["TILE_INTERPRET"]
        print(f"| {case.name} | {warm:.2f} s | {steps} | ~{executed / warm / 1e6:.1f}M | {interpreted:.3f} s |",
              flush=True)


if __name__ == "__main__":
    main()
