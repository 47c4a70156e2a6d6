"""Save the PTX and SASS that tile and Triton produce for the same kernel launch, to compare.

    python benchmarks/compare_asm.py OUTDIR     (on a GPU machine; cuobjdump on PATH)

Writes {tile,triton}_layer_norm.{ptx,sass} for layer norm 8192x4096 fp16 (BLOCK 4096, 8 warps).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bandwidth import TILE, TRITON  # noqa: E402


def sass_of_ptx(ptx: str, arch: str) -> str:
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        open(src, "w").write(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", src, "-o", cubin], check=True)
        return subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True, check=True).stdout


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows, cols = 8192, 4096
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    w, b = torch.rand(cols, device="cuda"), torch.rand(cols, device="cuda")
    y, mean, rstd = torch.empty_like(x), torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
    args = (x, y, w, b, mean, rstd, cols, cols, 1e-5)
    compiled = TRITON.layer_norm_kernel[(rows,)](*args, BLOCK=4096, num_warps=8)
    ptx = compiled.asm["ptx"]
    open(os.path.join(out, "triton_layer_norm.ptx"), "w").write(ptx)
    open(os.path.join(out, "triton_layer_norm.sass"), "w").write(sass_of_ptx(ptx, "sm_90a"))
    TILE.layer_norm_kernel[(rows,)](*args, BLOCK=4096, num_warps=8)
    mine = next(iter(TILE.layer_norm_kernel.cache.values()))
    open(os.path.join(out, "tile_layer_norm.ptx"), "w").write(mine.stage("ptx"))
    open(os.path.join(out, "tile_layer_norm.sass"), "w").write(sass_of_ptx(mine.stage("ptx"), "sm_90a"))
    print("triton regs", compiled.n_regs, "tile regs", mine.registers)


if __name__ == "__main__":
    main()
