"""Matmul (fp32 accumulation, fp16 output): tile vs Triton vs cuBLAS (through PyTorch), one run, one GPU.

    python benchmarks/bench_matmul.py [--dtype fp16 bf16 fp8] [--skinny | --skinny-only] [--quick] [--json out.json]

tile and Triton build the same kernel (kernels.py `matmul_kernel`) with the same candidate
configurations; the best configuration of each is reported, with tile's `ptxas -v` registers,
spills (spilled registers, Triton's `n_spills`) and shared memory. On Hopper (sm_90a) both run
tl.dot on wgmma; on sm_80/sm_89 tile uses mma.sync.

Rows: square M = N = K = 4096 and 8192 for each `--dtype`; `--skinny` adds decode-style rows
(M = 16, 64, 128 with N = K = 8192), `--skinny-only` has only those. Inputs are random; every configuration's result is checked
against a float64 product of the same inputs before it is timed. The kernel stores fp16 for
every input type (as Triton's matmul tutorial does for fp8).

dtypes: fp16, bf16 (cuBLAS: torch.matmul, bf16 output) and fp8 = float8 e4m3 (torch.float8_e4m3fn,
B stored K-major as fp8 wgmma and cuBLAS want it; cuBLAS through torch._scaled_mm with unit
scales and fp16 output, omitted with the reason when this torch lacks it or it fails). fp8
configurations take twice the BLOCK_K of the fp16 ones (the same bytes per stage), and start at
BLOCK_M = 64: tile's fp8 dot runs on wgmma only, whose M is 64 (narrower blocks fall back to FMA).

"tensor-core peak" is tile's own fp16 throughput on a loop of dots whose operands are loaded
once (`mma_peak_kernel`): the ceiling of tile's dot path. The table logic imports without a GPU,
torch or Triton (tests/test_bench_matmul.py); running it needs all three.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Callable, NamedTuple, Optional, Sequence

try:  # the GPU side; everything down to `main` works without it
    import torch
    import triton
    from triton.testing import do_bench
except ImportError:
    torch = triton = do_bench = None

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp8": "float8_e4m3fn"}  # --dtype -> torch attribute
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "fp8": 1}
SQUARE_SIZES = (4096, 8192)
SKINNY_M = (16, 64, 128)
SKINNY_NK = 8192
MIN_BLOCK_M = {"fp16": 16, "bf16": 16, "fp8": 64}  # fp8: wgmma's M (see the module docstring)
H100_SHARED_BYTES = 232448  # opt-in shared memory per block on the H100 (227 KiB)

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages), BLOCK_K for 2-byte elements
CONFIGS = [
    (128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (128, 128, 32, 8, 4, 4), (256, 128, 64, 8, 8, 3),
    (128, 256, 32, 8, 8, 4), (64, 128, 64, 8, 4, 4),
]
# Decode-style shapes read all of B once for a few rows of A: the time is B's bytes over the
# memory bandwidth, reached by many programs along N (N / BLOCK_N of them) streaming deep K
# slices; BLOCK_M stops at the smallest block that covers M.
SKINNY_CONFIGS = [
    (16, 32, 256, 1, 4, 5), (16, 64, 256, 1, 4, 4), (16, 64, 128, 1, 4, 6), (32, 64, 128, 1, 4, 5),
    (64, 32, 256, 1, 4, 4), (64, 64, 128, 1, 4, 5), (64, 128, 128, 1, 4, 4), (128, 64, 128, 1, 4, 4),
    (128, 128, 64, 1, 8, 4),
]
SKINNY_MAX_M = max(SKINNY_M)


class Problem(NamedTuple):
    dtype: str
    m: int
    n: int
    k: int


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=list(DTYPES), default=["fp16"])
    parser.add_argument("--skinny", action="store_true", help="add M = 16, 64, 128 rows with N = K = 8192")
    parser.add_argument("--skinny-only", action="store_true", help="only the M = 16, 64, 128 rows")
    parser.add_argument("--quick", action="store_true", help="two candidate configurations per row")
    parser.add_argument("--json")
    return parser.parse_args(argv)


def problems(dtypes: Sequence[str], skinny: bool, square: bool = True) -> list[Problem]:
    """The rows of the table, in order: per dtype the square sizes (unless not `square`), then the
    skinny shapes."""
    rows = []
    for dtype in dtypes:
        if square:
            rows += [Problem(dtype, s, s, s) for s in SQUARE_SIZES]
        if skinny:
            rows += [Problem(dtype, m, SKINNY_NK, SKINNY_NK) for m in SKINNY_M]
    return rows


def configs_for(problem: Problem, quick: bool) -> list[tuple[int, ...]]:
    """The candidate configurations of a row (the same for tile and Triton): the skinny list for
    M <= 128, without blocks taller than needed (BLOCK_M <= max(M, MIN_BLOCK_M)); the square list
    otherwise; BLOCK_K doubled for 1-byte elements; the first two with `quick`."""
    if problem.m <= SKINNY_MAX_M:
        tallest = max(problem.m, MIN_BLOCK_M[problem.dtype])
        cands = [c for c in SKINNY_CONFIGS if MIN_BLOCK_M[problem.dtype] <= c[0] <= tallest]
    else:
        cands = [c for c in CONFIGS if c[0] >= MIN_BLOCK_M[problem.dtype]]
    scale = 2 // ELEMENT_BYTES[problem.dtype]
    cands = [(bm, bn, bk * scale, gm, warps, stages) for bm, bn, bk, gm, warps, stages in cands]
    return cands[:2] if quick else cands


def stage_bytes(cfg: Sequence[int], dtype: str) -> int:
    """Shared memory of the K loop's buffers: num_stages tiles of A and of B."""
    bm, bn, bk, _, _, stages = cfg
    return stages * (bm * bk + bk * bn) * ELEMENT_BYTES[dtype]


def grid_size(problem: Problem, cfg: Sequence[int]) -> int:
    return math.ceil(problem.m / cfg[0]) * math.ceil(problem.n / cfg[1])


def tflops(problem: Problem, ms: float) -> float:
    return 2 * problem.m * problem.n * problem.k / ms / 1e9


def format_row(row: dict[str, Any]) -> str:
    """One line of the table (row: as main's rows; missing or NaN times print as n/a)."""
    def num(key: str) -> str:
        value = row.get(key)
        return f"{value:>8.0f}" if value is not None and math.isfinite(value) else f"{'n/a':>8}"

    tile_t, triton_t = row.get("tile_TFLOPs"), row.get("triton_TFLOPs")
    ratio = f"{tile_t / triton_t:>11.2f}x" if tile_t and triton_t and math.isfinite(tile_t / triton_t) \
        else f"{'n/a':>12}"
    line = (f"{row['dtype']:>5}{row['M']:>6}{row['N']:>6}{row['K']:>6}{num('tile_TFLOPs')}{num('triton_TFLOPs')}"
            f"{num('cublas_TFLOPs')}{ratio}  {row.get('tile_config')} / {row.get('tile_registers')} / "
            f"{row.get('tile_spills')} / {row.get('tile_shared_bytes')}")
    return line + (f"  (cuBLAS omitted: {row['cublas_note']})" if row.get("cublas_note") else "")


HEADER = (f"{'dtype':>5}{'M':>6}{'N':>6}{'K':>6}{'tile':>8}{'Triton':>8}{'cuBLAS':>8}{'tile/Triton':>12}"
          "  (TFLOP/s)  tile config / regs / spills / smem")


# ------------------------------------------------------------------------------ on the GPU


def relative_error(c, ref) -> float:
    return ((c.double() - ref).norm() / ref.norm()).item()


def make_inputs(problem: Problem):
    """Random A (M x K, row-major) and B (K x N; K-major for fp8) of the row's dtype."""
    dtype = getattr(torch, DTYPES[problem.dtype])
    a = torch.randn(problem.m, problem.k, device="cuda").to(dtype)
    if problem.dtype == "fp8":
        b = torch.randn(problem.n, problem.k, device="cuda").to(dtype).T
    else:
        b = torch.randn(problem.k, problem.n, device="cuda").to(dtype)
    return a, b


def launch(k, a, b, c, cfg) -> Callable[[], Any]:
    M, K = a.shape
    N = b.shape[1]
    bm, bn, bk, gm, warps, stages = cfg
    grid = (grid_size(Problem("", M, N, K), cfg),)
    return lambda: k.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                                         num_warps=warps, num_stages=stages)


def best(k, a, b, cfgs, ref) -> tuple[float, Optional[tuple], float, Any]:
    """(median ms, config, relative error, what the launch returned) of the fastest correct config."""
    results = []
    for cfg in cfgs:
        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.float16)
        run = launch(k, a, b, c, cfg)
        try:
            compiled = run()
        except Exception as e:  # a config the compiler rejects (resources) is skipped, and said so
            print(f"  skipped {cfg}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        rel = relative_error(c, ref)
        if not rel < 1e-2:
            print(f"  WRONG {cfg}: relative error {rel:.3g}")
            continue
        results.append((do_bench(run, warmup=25, rep=100, return_mode="median"), cfg, rel, compiled))
    return min(results, key=lambda r: r[0]) if results else (float("nan"), None, float("nan"), None)


def cublas(problem: Problem, a, b, ref) -> tuple[Optional[float], str]:
    """(median ms, "") of cuBLAS on the row, or (None, why it is omitted)."""
    if problem.dtype != "fp8":
        run = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        scaled_mm = getattr(torch, "_scaled_mm", None)
        if scaled_mm is None:
            return None, f"torch {torch.__version__} has no torch._scaled_mm"
        one = torch.ones((), device="cuda", dtype=torch.float32)
        run = lambda: scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16)  # noqa: E731
    try:
        out = run()
    except Exception as e:  # e.g. a torch whose _scaled_mm has another signature, or no fp8 on this GPU
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
    out = out[0] if isinstance(out, tuple) else out  # torch < 2.4's _scaled_mm returns (out, amax)
    rel = relative_error(out, ref)
    if not rel < 1e-2:
        return None, f"wrong result (relative error {rel:.3g})"
    return do_bench(run, warmup=25, rep=100, return_mode="median"), ""


def measure(problem: Problem, quick: bool, tile_k, triton_k) -> dict[str, Any]:
    print(f"{problem.dtype} {problem.m}x{problem.n}x{problem.k}")
    a, b = make_inputs(problem)
    ref = a.double() @ b.double()
    cfgs = configs_for(problem, quick)
    t_tile, cfg_tile, err_tile, compiled = best(tile_k, a, b, cfgs, ref)
    t_triton, cfg_triton, _, _ = best(triton_k, a, b, cfgs, ref)
    t_cublas, note = cublas(problem, a, b, ref)
    row = {"dtype": problem.dtype, "M": problem.m, "N": problem.n, "K": problem.k,
           "tile_TFLOPs": tflops(problem, t_tile), "triton_TFLOPs": tflops(problem, t_triton),
           "cublas_TFLOPs": tflops(problem, t_cublas) if t_cublas is not None else None, "cublas_note": note,
           "tile_config": cfg_tile, "triton_config": cfg_triton, "tile_relerr": err_tile}
    if compiled is not None:  # tile's launch returns its CompiledKernel: ptxas -v figures of that config
        row.update(tile_registers=compiled.n_regs, tile_spills=compiled.n_spills,
                   tile_shared_bytes=compiled.metadata.shared)
    return row


def mma_peak_tflops(tile_k) -> float:
    bm, bn, bk, iters = 128, 128, 64, 512
    programs = torch.cuda.get_device_properties(0).multi_processor_count * 8
    a = torch.randn(bm, bk, device="cuda", dtype=torch.float16)
    b = torch.randn(bk, bn, device="cuda", dtype=torch.float16)
    c = torch.empty(programs * bm, bn, device="cuda", dtype=torch.float16)
    run = lambda: tile_k.mma_peak_kernel[(programs,)](a, b, c, ITERS=iters, BLOCK_M=bm, BLOCK_N=bn,  # noqa: E731
                                                      BLOCK_K=bk, num_warps=4)
    run()
    ms = do_bench(run, warmup=10, rep=50, return_mode="median")
    return 2 * bm * bn * bk * iters * programs / ms / 1e9


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if torch is None or not torch.cuda.is_available():
        sys.exit("bench_matmul.py needs torch, Triton and a CUDA GPU")
    sys.path.insert(0, HERE)
    from bench_bandwidth import TILE, TRITON

    rows = []
    for problem in problems(args.dtype, args.skinny or args.skinny_only, square=not args.skinny_only):
        rows.append(measure(problem, args.quick, TILE, TRITON))
        torch.cuda.empty_cache()
    peak = mma_peak_tflops(TILE)
    print(HEADER)
    for row in rows:
        print(format_row(row))
    print(f"tile fp16 tensor-core peak (operands loaded once): {peak:.0f} TFLOP/s")
    for row in rows:
        if row["dtype"] == "fp16" and row["M"] == row["N"] == row["K"]:
            print(f"fp16 {row['M']}^3 reaches {row['tile_TFLOPs'] / peak:.0%} of it")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "tensor_core_peak_TFLOPs": peak}, f,
                      indent=1, default=str)


if __name__ == "__main__":
    main()
