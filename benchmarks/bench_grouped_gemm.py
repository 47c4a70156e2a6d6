"""Grouped GEMM (Triton's 08 tutorial, both kernels of kernels_grouped.py): tile vs Triton vs torch.

    python benchmarks/bench_grouped_gemm.py [--sizes 128 256 512 1024] [--group 4]

As the tutorial's benchmark: `--group` fp16 problems of N x N x N for each N, one launch of NUM_SM
programs computing all of them; torch runs one torch.matmul per problem. The same kernel source
is built by tile and by Triton, each timed at its best of the same configurations after its
results are checked against torch. The pointer variant takes B as [K, N]; the descriptor variant
(in-kernel tensor descriptors: TMA on sm_90a) takes B as [N, K] and multiplies by b.T, as in the
tutorial. Rows: milliseconds, and tile / Triton as Triton's time over tile's (above 1: tile faster).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import torch
import triton
import triton.language as ttl
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tile  # noqa: E402
import tile.language as tile_tl  # noqa: E402
from load_kernels import load_kernels  # noqa: E402

KERNELS = "kernels_grouped.py"
# (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_SM or 0 for the SM count, num_warps, num_stages)
POINTER_CONFIGS = [(128, 128, 32, 84, 4, 3), (128, 128, 32, 128, 4, 3), (64, 64, 32, 84, 4, 3),
                   (64, 64, 32, 128, 4, 3), (128, 128, 64, 0, 8, 3), (64, 128, 64, 0, 4, 3)]
TMA_CONFIGS = [(128, 128, 64, 0, 4, 3), (128, 128, 64, 0, 8, 4), (128, 256, 64, 0, 8, 3), (64, 128, 64, 0, 4, 4),
               (128, 128, 128, 0, 8, 3)]


def problems(n: int, group: int, transposed_b: bool) -> dict[str, Any]:
    """The tutorial's benchmark group: `group` problems of n x n x n with their device tables."""
    a = [torch.rand((n, n), device="cuda", dtype=torch.float16) for _ in range(group)]
    b = [torch.rand((n, n), device="cuda", dtype=torch.float16) for _ in range(group)]
    c = [torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16) for _ in range(group)]
    table = lambda xs: torch.tensor([x.data_ptr() for x in xs], device="cuda")  # noqa: E731
    return {"a": a, "b": b, "c": c, "transposed_b": transposed_b,
            "args": (table(a), table(b), table(c), torch.tensor([n] * 3 * group, dtype=torch.int32, device="cuda"),
                     torch.tensor([n] * 3 * group, dtype=torch.int32, device="cuda"), group)}


def best(kernel: Any, p: dict[str, Any], configs: list[tuple], sms: int) -> tuple[float, tuple]:
    """The fastest of `configs` that runs and is right: (milliseconds, configuration)."""
    refs = [a @ (b.T if p["transposed_b"] else b) for a, b in zip(p["a"], p["b"])]
    out = []
    for cfg in configs:
        bm, bn, bk, num_sm, warps, stages = cfg
        num_sm = num_sm or sms
        fn = lambda: kernel[(num_sm,)](*p["args"], NUM_SM=num_sm, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,  # noqa: E731
                                       BLOCK_SIZE_K=bk, num_warps=warps, num_stages=stages)
        for c in p["c"]:
            c.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as err:  # a configuration that does not fit (shared memory, registers)
            print(f"  {kernel.__name__} {cfg}: {type(err).__name__}: {err}"[:200])
            continue
        for c, ref in zip(p["c"], refs):
            torch.testing.assert_close(c, ref, atol=1e-2 * ref.shape[1] ** 0.5, rtol=1e-2)
        out.append((do_bench(fn), cfg))
    if not out:
        raise RuntimeError(f"{kernel.__name__}: no configuration ran")
    return min(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[128, 256, 512, 1024])
    parser.add_argument("--group", type=int, default=4)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    scratch = lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda")  # noqa: E731
    tile.set_allocator(scratch)
    triton.set_allocator(scratch)
    tile_k = load_kernels("grouped_tile", tile.jit, tile_tl, KERNELS)
    triton_k = load_kernels("grouped_triton", triton.jit, ttl, KERNELS)
    print(f"{'variant':>10} {'N':>5} {'tile ms':>9} {'Triton ms':>10} {'torch ms':>9} {'tile/Triton':>12}  configs")
    for variant, name, configs, transposed in (("pointers", "grouped_matmul_kernel", POINTER_CONFIGS, False),
                                               ("tma", "grouped_matmul_tma_kernel", TMA_CONFIGS, True)):
        for n in args.sizes:
            torch.manual_seed(0)
            p = problems(n, args.group, transposed)
            t_tile, cfg_tile = best(getattr(tile_k, name), p, configs, sms)
            t_triton, cfg_triton = best(getattr(triton_k, name), p, configs, sms)
            t_torch = do_bench(lambda: [a @ (b.T if transposed else b) for a, b in zip(p["a"], p["b"])])
            print(f"{variant:>10} {n:>5} {t_tile:>9.4f} {t_triton:>10.4f} {t_torch:>9.4f} {t_triton / t_tile:>12.2f}  "
                  f"tile {cfg_tile}, Triton {cfg_triton}", flush=True)


if __name__ == "__main__":
    main()
