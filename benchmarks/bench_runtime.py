"""The runtime as users feel it: launch overhead, cold compile and warm start, tile vs Triton.

    python benchmarks/bench_runtime.py [--json out.json]

- Launch overhead: host microseconds per launch of a 4-argument kernel (x, y, out, n + BLOCK)
  called with PyTorch tensors: the median over batches of 100 launches, synchronized between
  batches so the GPU keeps up (PyTorch's torch.add for scale).
- Cold compile: a new process with empty cache directories; from the first call to the
  finished kernel (synchronized), for vector add and softmax. tile's split by stage is printed.
- Warm start: a new process whose disk cache holds the kernel; first call to finished kernel.
Each compile measurement runs in its own subprocess (`--child`), so nothing is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(compiler: str, kernel: str) -> None:
    """Time the first call of `kernel` in this fresh process and print a JSON line."""
    import torch

    sys.path.insert(0, HERE)
    sys.path.insert(0, ROOT)
    from load_kernels import load_kernels  # noqa: E402

    if compiler == "tile":
        import tile
        import tile.language as tl

        k = load_kernels("kernels_tile_child", tile.jit, tl)
    else:
        import triton
        import triton.language as tl

        k = load_kernels("kernels_triton_child", triton.jit, tl)
    torch.cuda.init()
    x = torch.randn(4096, 1024, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    if kernel == "add":
        n = x.numel()
        k.add_kernel[(n // 1024,)](x, x, out, n, BLOCK=1024)
    else:
        k.softmax_kernel[(4096,)](out, x, 1024, 1024, 1024, BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    split = {}
    if compiler == "tile":
        fn = k.add_kernel if kernel == "add" else k.softmax_kernel
        compiled = next(iter(fn.cache.values()))
        split = {**compiled.timings, "from_disk_cache": compiled.from_disk_cache}
    print(json.dumps({"seconds": seconds, "split": split}))


def run_child(compiler: str, kernel: str, cache_dir: str) -> dict:
    env = dict(os.environ, TILE_CACHE_DIR=cache_dir, TRITON_CACHE_DIR=cache_dir, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, __file__, "--child", compiler, kernel], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def launch_overhead_us(launches: dict, rounds: int = 5, batches: int = 40, per_batch: int = 100) -> dict:
    """Median host time of one launch, for each of `launches`. Batches stay short and are
    synchronized between, so the driver's launch queue never fills (a full queue would make
    this time the GPU instead); the contenders take turns, round after round, so that a
    drifting machine (clock, neighbours) moves them all alike."""
    import statistics

    import torch

    samples: dict = {name: [] for name in launches}
    for name, launch in launches.items():
        for _ in range(300):
            launch()
    for _ in range(rounds):
        for name, launch in launches.items():
            torch.cuda.synchronize()
            for _ in range(batches):
                start = time.perf_counter()
                for _ in range(per_batch):
                    launch()
                samples[name].append((time.perf_counter() - start) / per_batch * 1e6)
                torch.cuda.synchronize()
    return {name: statistics.median(s) for name, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    import torch
    import triton

    sys.path.insert(0, HERE)
    from bench_bandwidth import TILE, TRITON

    x, y = torch.rand(4096, device="cuda"), torch.rand(4096, device="cuda")
    out = torch.empty_like(x)
    results: dict = {"device": torch.cuda.get_device_name(), "launch_us": {}, "cold_s": {}, "warm_s": {}}
    grid = (triton.cdiv(4096, 1024),)
    results["launch_us"] = launch_overhead_us({
        "tile": lambda: TILE.add_kernel[grid](x, y, out, 4096, BLOCK=1024),
        "triton": lambda: TRITON.add_kernel[grid](x, y, out, 4096, BLOCK=1024),
        "torch": lambda: torch.add(x, y, out=out),
    })
    torch.testing.assert_close(out, x + y)

    splits = {}
    for kernel in ("add", "softmax"):
        for compiler in ("tile", "triton"):
            with tempfile.TemporaryDirectory() as cache:
                cold = run_child(compiler, kernel, cache)
                warm = run_child(compiler, kernel, cache)
            results["cold_s"][f"{compiler} {kernel}"] = cold["seconds"]
            results["warm_s"][f"{compiler} {kernel}"] = warm["seconds"]
            if compiler == "tile":
                splits[kernel] = cold["split"]
                splits[kernel + " (warm)"] = warm["split"]
    results["tile_cold_split_s"] = splits
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"launch overhead (host us per launch, 4-arg kernel, torch tensors) on {results['device']}")
    for name, us in results["launch_us"].items():
        print(f"  {name:<8}{us:8.2f}")
    print("cold compile (s, empty cache, first call to finished kernel) | warm start (s, disk cache hit)")
    for key in results["cold_s"]:
        print(f"  {key:<16}{results['cold_s'][key]:8.3f} | {results['warm_s'][key]:8.4f}")
    for kernel, split in splits.items():
        parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in split.items() if isinstance(v, float))
        print(f"  tile {kernel} split: {parts}")


if __name__ == "__main__":
    main()
