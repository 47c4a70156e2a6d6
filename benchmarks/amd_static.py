"""Static estimates for the benchmark kernels on an MI300X (gfx942), from tile's own AMDGCN.

    python benchmarks/amd_static.py [--target gfx942]

No AMD GPU is lent, so until one is, each benchmark kernel (benchmarks/kernels.py) is compiled for
the target and read: VGPRs (the unified file: architectural VGPRs and AGPRs together), of them
AGPRs, and SGPRs from the code object's metadata, LDS bytes, occupancy (waves per SIMD: 512
registers per lane per SIMD, at most 8 waves; a workgroup's waves share one CU's 64 KiB of LDS), global bytes each thread moves and MFMA instructions per K step, counted in the
assembly. The estimate is the kernel's floor on the MI300X: its bytes over 5.3 TB/s (HBM3) or its
MFMA flops over 1307 dense fp16 TFLOP/s, whichever is larger. A first hardware run has these to
beat; they say nothing about latency hiding, which occupancy only hints at.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import NamedTuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import tile  # noqa: E402
import tile.language as tl  # noqa: E402
from load_kernels import load_kernels  # noqa: E402

HBM_BYTES_PER_S = 5.3e12
FP16_DENSE_FLOPS = 1307e12
VGPRS_PER_SIMD_LANE = 512
MAX_WAVES_PER_SIMD = 8
LDS_BYTES_PER_CU = 64 * 1024
SIMDS_PER_CU = 4
WAVE = 64
MEMORY_BYTES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "short": 2, "ushort": 2, "sshort": 2,
                "byte": 1, "ubyte": 1, "sbyte": 1, "b16": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16}


class Usage(NamedTuple):
    vgprs: int         # VGPRs and AGPRs: the unified register file's allocation
    agprs: int
    sgprs: int
    lds: int
    load_bytes: int    # per thread, counted once per instruction in the text (loops not unrolled)
    store_bytes: int
    mfma: int          # MFMA instructions in the text


def usage(asm: str) -> Usage:
    """What the assembly text of one kernel uses, read from its metadata and instructions."""
    def meta(key: str) -> int:
        return int(re.search(rf"\.{key}:\s*(\d+)", asm).group(1))

    def moved(prefix: str) -> int:
        total = 0
        for m in re.finditer(rf"^\s*{prefix}_(\w+)\b", asm, re.M):
            total += MEMORY_BYTES.get(m.group(1), 0)
        return total

    return Usage(meta("vgpr_count"), meta("agpr_count"), meta("sgpr_count"), meta("group_segment_fixed_size"),
                 moved("global_load"),
                 moved("global_store"), len(re.findall(r"^\s*v_mfma_", asm, re.M)))


def waves_per_simd(u: Usage, threads: int) -> int:
    """Waves of this kernel one SIMD holds: VGPRs (allocated in granules of 8) and LDS decide."""
    by_vgprs = min(MAX_WAVES_PER_SIMD, VGPRS_PER_SIMD_LANE // (math.ceil(u.vgprs / 8) * 8))
    waves_per_group = max(1, threads // WAVE)
    groups_by_lds = LDS_BYTES_PER_CU // u.lds if u.lds else 10 ** 9
    by_lds = groups_by_lds * waves_per_group // SIMDS_PER_CU
    return max(0, min(by_vgprs, by_lds))


class Row(NamedTuple):
    name: str
    launch: str
    usage: Usage
    threads: int
    bytes_moved: float   # the problem's bytes through HBM (each input read once, outputs written once)
    flops: float


# Triton's tutorial 03 HIP configurations with 8 warps (of 64 lanes), largest first
MATMUL_CONFIGS = [(256, 256, 64, 8), (256, 128, 64, 8), (128, 128, 64, 8), (128, 64, 64, 8), (64, 64, 64, 8)]
refused: list[str] = []


def rows(target: str) -> list[Row]:
    k = load_kernels("amd_static_kernels", tile.jit, tl)
    dump = lambda kernel, *args, warps=4, **meta: str(tile.dump(kernel, *args, stage="amdgcn", target=target,  # noqa: E731
                                                                num_warps=warps, **meta))
    out = []
    n = 1 << 24
    x = np.zeros(n, np.float32)
    out.append(Row("vector add fp32", f"2^24, BLOCK 1024, 4 warps", usage(dump(k.add_kernel, x, x, x, n, BLOCK=1024)),
                   256, 3 * 4 * n, 0))
    rows_, cols = 4096, 4096
    a = np.zeros((rows_, cols), np.float32)
    out.append(Row("softmax fp32", f"{rows_}x{cols}, BLOCK 4096, 8 warps",
                   usage(dump(k.softmax_kernel, a, a, cols, cols, cols, BLOCK=4096, warps=8)), 512,
                   2 * 4 * rows_ * cols, 0))
    h = np.zeros((rows_, cols), np.float16)
    w = np.zeros(cols, np.float32)
    mean = np.zeros(rows_, np.float32)
    out.append(Row("layer norm fp16", f"{rows_}x{cols}, BLOCK 4096, 8 warps",
                   usage(dump(k.layer_norm_kernel, h, h, w, w, mean, mean, cols, cols, 1e-5, BLOCK=4096, warps=8)),
                   512, 2 * 2 * rows_ * cols, 0))
    s = 4096
    m16 = np.zeros((s, s), np.float16)
    for bm, bn, bk, warps in MATMUL_CONFIGS:
        launch = f"{s}^3, {bm}x{bn}x{bk}, {warps} warps"
        try:
            u = usage(dump(k.matmul_kernel, m16, m16, m16, s, s, s, s, 1, s, 1, s, 1, BLOCK_M=bm, BLOCK_N=bn,
                           BLOCK_K=bk, GROUP_M=4, warps=warps))
        except tile.OutOfResources as e:
            refused.append(f"matmul fp16 {launch}: {str(e).splitlines()[0]}")
            continue
        out.append(Row("matmul fp16", launch, u, 64 * warps, 3 * 2 * s * s, 2.0 * s ** 3))
    return out


def floor_us(row: Row) -> float:
    return 1e6 * max(row.bytes_moved / HBM_BYTES_PER_S, row.flops / FP16_DENSE_FLOPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="gfx942")
    args = parser.parse_args()
    print(f"| kernel | launch | VGPRs (of them AGPRs) | SGPRs | LDS bytes | waves/SIMD "
          f"| global bytes per thread (ld / st, text) | MFMA in text | floor on MI300X (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows(args.target):
        u = row.usage
        print(f"| {row.name} | {row.launch} | {u.vgprs} ({u.agprs}) | {u.sgprs} | {u.lds} | {waves_per_simd(u, row.threads)} "
              f"| {u.load_bytes} / {u.store_bytes} | {u.mfma} | {floor_us(row):.1f} |")
    for line in refused:
        print(f"not compiled: {line}")


if __name__ == "__main__":
    main()
