"""Bandwidth-bound kernels: tile vs Triton vs PyTorch, side by side in one run on one GPU.

    python benchmarks/bench_bandwidth.py [--quick] [--json out.json]

Shapes are those of ../shared/anchors-h100.json. Bandwidth counts bytes read + written once.
Every result is checked against PyTorch (float64 references) before it is timed, on random data.
Times are medians of triton.testing.do_bench (CUDA events, L2 flushed between runs).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton
import triton.language as ttl
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tile  # noqa: E402
import tile.language as tile_tl  # noqa: E402
from load_kernels import load_kernels  # noqa: E402

TILE = load_kernels("kernels_tile", tile.jit, tile_tl)
TRITON = load_kernels("kernels_triton", triton.jit, ttl)


def median_ms(fn) -> float:
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def bench_add(k, n):
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    grid = (triton.cdiv(n, 1024),)
    run = lambda: k.add_kernel[grid](x, y, out, n, BLOCK=1024)  # noqa: E731
    run()
    torch.testing.assert_close(out, x + y)
    return 3 * n * 4, run


def softmax_launch(k, x, out):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    return lambda: k.softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=warps)


def bench_softmax(k, rows, cols):
    x = torch.randn(rows, cols, device="cuda")
    out = torch.full_like(x, float("nan"))
    run = softmax_launch(k, x, out)
    run()
    torch.testing.assert_close(out, torch.softmax(x.double(), dim=1).float(), rtol=1e-5, atol=1e-6)
    return 2 * rows * cols * 4, run


def bench_layer_norm(k, rows, cols):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    w, b = torch.rand(cols, device="cuda"), torch.rand(cols, device="cuda")
    y = torch.full_like(x, float("nan"))
    mean, rstd = torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
    block = min(triton.next_power_of_2(cols), 65536 // 2)
    warps = min(max(block // 256, 1), 8)
    run = lambda: k.layer_norm_kernel[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5, BLOCK=block,  # noqa: E731
                                               num_warps=warps)
    run()
    ref = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double(), 1e-5)
    torch.testing.assert_close(y.double(), ref, rtol=1e-2, atol=1e-2)
    return rows * cols * 2 * 2 + 2 * cols * 4, run


def torch_reference(name, shape):
    if name == "add":
        x, y = torch.rand(shape, device="cuda"), torch.rand(shape, device="cuda")
        return lambda: torch.add(x, y)
    if name == "softmax":
        x = torch.randn(*shape, device="cuda")
        return lambda: torch.softmax(x, dim=1)
    x = torch.randn(*shape, device="cuda", dtype=torch.float16)
    w, b = torch.rand(shape[1], device="cuda", dtype=torch.float16), torch.rand(shape[1], device="cuda", dtype=torch.float16)
    return lambda: torch.nn.functional.layer_norm(x, (shape[1],), w, b, 1e-5)


CASES = [("add", (1 << 27,)), ("softmax", (8192, 1024)), ("softmax", (8192, 4096)), ("softmax", (4096, 16384)),
         ("layer_norm", (8192, 1024)), ("layer_norm", (8192, 4096)), ("layer_norm", (8192, 8192))]
BENCH = {"add": lambda k, s: bench_add(k, s[0]), "softmax": lambda k, s: bench_softmax(k, *s),
         "layer_norm": lambda k, s: bench_layer_norm(k, *s)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="first shape of each kernel only")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    cases = CASES if not args.quick else [c for i, c in enumerate(CASES) if i in (0, 1, 4)]
    rows = []
    for name, shape in cases:
        nbytes, tile_run = BENCH[name](TILE, shape)
        _, triton_run = BENCH[name](TRITON, shape)
        gbps = lambda ms: nbytes / ms / 1e6  # noqa: E731
        t_tile, t_triton, t_torch = median_ms(tile_run), median_ms(triton_run), median_ms(torch_reference(name, shape))
        rows.append({"kernel": name, "shape": "x".join(map(str, shape)), "tile_GBps": gbps(t_tile),
                     "triton_GBps": gbps(t_triton), "torch_GBps": gbps(t_torch), "ratio": t_triton / t_tile})
    print(f"{'kernel':<11}{'shape':>12}{'tile GB/s':>11}{'Triton':>9}{'torch':>9}{'tile/Triton':>13}")
    for r in rows:
        print(f"{r['kernel']:<11}{r['shape']:>12}{r['tile_GBps']:>11.0f}{r['triton_GBps']:>9.0f}"
              f"{r['torch_GBps']:>9.0f}{r['ratio']:>12.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
