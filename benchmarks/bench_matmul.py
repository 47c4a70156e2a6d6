"""fp16 matmul (fp32 accumulation): tile vs Triton vs cuBLAS (through PyTorch), one run, one GPU.

    python benchmarks/bench_matmul.py [--json out.json] [--quick]

tile and Triton build the same kernel (kernels.py `matmul_kernel`) with the same configurations;
the best configuration of each is reported. On Hopper (sm_90a) both run tl.dot on wgmma; on
sm_80/sm_89 tile uses mma.sync. "tensor-core peak" is tile's own throughput on a loop of dots
whose operands are loaded once (`mma_peak_kernel`): the ceiling of tile's dot path.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bandwidth import TILE, TRITON  # noqa: E402

CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
    (128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (128, 128, 32, 8, 4, 4), (256, 128, 64, 8, 8, 3),
    (128, 256, 32, 8, 8, 4), (64, 128, 64, 8, 4, 4),
]


def launch(k, a, b, c, cfg):
    M, K = a.shape
    N = b.shape[1]
    bm, bn, bk, gm, warps, stages = cfg
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    return lambda: k.matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                         GROUP_M=gm, num_warps=warps, num_stages=stages)


def best(k, a, b, cfgs, ref):
    results = []
    for cfg in cfgs:
        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.float16)
        run = launch(k, a, b, c, cfg)
        try:
            run()
        except Exception as e:  # a config the compiler rejects (resources) is skipped, and said so
            print(f"  skipped {cfg}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        if not rel < 1e-2:
            print(f"  WRONG {cfg}: relative error {rel:.3g}")
            continue
        results.append((do_bench(run, warmup=25, rep=100, return_mode="median"), cfg, rel))
    return min(results) if results else (float("nan"), None, float("nan"))


def mma_peak_tflops() -> float:
    bm, bn, bk, iters, programs = 128, 128, 64, 512, 132 * 8
    a = torch.randn(bm, bk, device="cuda", dtype=torch.float16)
    b = torch.randn(bk, bn, device="cuda", dtype=torch.float16)
    c = torch.empty(programs * bm, bn, device="cuda", dtype=torch.float16)
    run = lambda: TILE.mma_peak_kernel[(programs,)](a, b, c, ITERS=iters, BLOCK_M=bm, BLOCK_N=bn,  # noqa: E731
                                                    BLOCK_K=bk, num_warps=4)
    run()
    ms = do_bench(run, warmup=10, rep=50, return_mode="median")
    return 2 * bm * bn * bk * iters * programs / ms / 1e9


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = []
    for size in (4096, 8192):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = a.double() @ b.double()
        flops = 2 * size**3
        cfgs = CONFIGS[:2] if args.quick else CONFIGS
        t_tile, cfg_tile, err_tile = best(TILE, a, b, cfgs, ref)
        t_triton, cfg_triton, _ = best(TRITON, a, b, cfgs, ref)
        t_cublas = do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100, return_mode="median")
        meta = {}
        if cfg_tile is not None:
            compiled = [c for c in TILE.matmul_kernel.cache.values() if c.options["num_warps"] == cfg_tile[4]
                        and c.options["num_stages"] == cfg_tile[5]]
            if compiled:
                c = compiled[-1]
                meta = {"registers": c.n_regs, "spill_bytes": c.n_spills, "shared_bytes": c.metadata.shared}
        rows.append({"size": size, "tile_TFLOPs": flops / t_tile / 1e9, "triton_TFLOPs": flops / t_triton / 1e9,
                     "cublas_TFLOPs": flops / t_cublas / 1e9, "tile_config": cfg_tile, "triton_config": cfg_triton,
                     "tile_relerr": err_tile, **{f"tile_{k}": v for k, v in meta.items()}})
        del ref
    peak = mma_peak_tflops()
    print(f"{'size':>6}{'tile':>9}{'Triton':>9}{'cuBLAS':>9}{'tile/Triton':>13}  tile config / regs / spills / smem")
    for r in rows:
        print(f"{r['size']:>6}{r['tile_TFLOPs']:>9.0f}{r['triton_TFLOPs']:>9.0f}{r['cublas_TFLOPs']:>9.0f}"
              f"{r['tile_TFLOPs'] / r['triton_TFLOPs']:>12.2f}x  {r['tile_config']} / {r.get('tile_registers')} / "
              f"{r.get('tile_spill_bytes')} / {r.get('tile_shared_bytes')}")
    print(f"tile tensor-core peak (operands loaded once): {peak:.0f} TFLOP/s; "
          f"4096^3 reaches {rows[0]['tile_TFLOPs'] / peak:.0%} of it")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "tensor_core_peak_TFLOPs": peak}, f,
                      indent=1, default=str)


if __name__ == "__main__":
    main()
