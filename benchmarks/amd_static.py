"""Static estimates for the benchmark kernels on an MI300X (gfx942) or an RX 7900 XTX (gfx1100),
from tile's own AMDGCN.

    python benchmarks/amd_static.py [--target gfx942|gfx1100]

No AMD GPU is lent, so until one is, each benchmark kernel (benchmarks/kernels.py) is compiled for
the target and read: VGPRs (on gfx942 the unified file: architectural VGPRs and AGPRs together),
of them AGPRs, and SGPRs from the code object's metadata, LDS bytes, occupancy (waves per SIMD:
the VGPRs each lane of a SIMD has, allocated in the target's granules, at most its wave slots;
the workgroups whose LDS fits in a CU (gfx942: 64 KiB) or a WGP (gfx1100: 128 KiB, four SIMDs)),
global bytes each thread moves and matrix instructions (MFMA on gfx942, WMMA on gfx1100) counted
in the assembly. The estimate is the kernel's floor on the card: its bytes over the memory's
bandwidth or its matrix flops over the dense peak of its operand type, whichever is larger
(MI300X: 5.3 TB/s HBM3, 1307 fp16 / 2615 fp8 TFLOP/s; RX 7900 XTX: 960 GB/s GDDR6, 123 fp16
TFLOP/s with WMMA). On gfx942 the matmul also runs on fnuz fp8 (tl.float8e4b8) inputs. A first hardware run
has these to beat; they say nothing about latency hiding, which occupancy only hints at.

A second table counts, for the kernels that move values between lanes (softmax, layer norm: their
row reductions), the instructions of the text and the cross-lane ones among them: DPP moves and
the VALU ops a move is fused into (v_add_f32_dpp: VALU, no wait), ds_swizzle_b32 and
ds_bpermute_b32 (through the LDS crossbar, each waited for with an s_waitcnt lgkmcnt), and the
s_nops (on gfx942 a DPP read of a VGPR written just before needs 2 wait states).
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


class Card(NamedTuple):
    """The facts of one AMD card the estimates need."""

    name: str
    memory_bytes_per_s: float
    dense_flops: dict           # matrix operand type -> dense peak (flop/s)
    wave: int                   # lanes per wave
    vgprs_per_simd_lane: int    # the register file of one SIMD, per lane (occupancy's budget)
    vgpr_granule: int           # VGPRs are allocated to a wave in multiples of this
    max_waves_per_simd: int
    lds_bytes: int              # LDS shared by the workgroups of one CU (gfx942) or WGP (gfx1100)
    simds_sharing_lds: int
    matrix_prefix: str          # the matrix instructions' mnemonics start so


# gfx942: CDNA3 ISA and the MI300X data sheet (512 unified VGPRs per lane, granule 8, 8 waves).
# gfx1100: RDNA3 in wave32 has 1536 VGPRs per SIMD lane in granules of 24 and 16 wave slots per
# SIMD (LLVM's occupancy tests for gfx1100 agree: 96 VGPRs -> 16 waves, 128 -> 10, 256 -> 5); a
# WGP's four SIMDs share 128 KiB of LDS.
CARDS = {
    "gfx942": Card("MI300X", 5.3e12, {"fp16": 1307e12, "fp8": 2615e12}, 64, 512, 8, 8, 64 * 1024, 4, "v_mfma_"),
    "gfx1100": Card("RX 7900 XTX", 960e9, {"fp16": 123e12}, 32, 1536, 24, 16, 128 * 1024, 4, "v_wmma_"),
}
MEMORY_BYTES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "short": 2, "ushort": 2, "sshort": 2,
                "byte": 1, "ubyte": 1, "sbyte": 1, "b16": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16}


class Usage(NamedTuple):
    vgprs: int         # VGPRs (on gfx942 with the AGPRs: the unified register file's allocation)
    agprs: int
    sgprs: int
    lds: int
    threads: int       # of one workgroup (the metadata's max_flat_workgroup_size)
    load_bytes: int    # per thread, global and buffer loads counted once per instruction in the text
                       # (loops not unrolled)
    store_bytes: int
    matrix: int        # matrix instructions (MFMA or WMMA) in the text
    cross_lane: tuple = ()   # instructions in the text, then of them CROSS_LANE's, in its order


# the cross-lane instructions (and their waits) the second table counts: column -> line pattern
CROSS_LANE = {"DPP (moves and fused ops)": r"v_\w+_dpp\b", "ds_swizzle_b32": r"ds_swizzle_b32\b",
              "ds_bpermute_b32": r"ds_bpermute_b32\b", "s_nop": r"s_nop\b",
              "s_waitcnt lgkmcnt": r"s_waitcnt\b.*lgkmcnt"}


def cross_lane(asm: str) -> tuple:
    """The instructions of the kernel's text, then how many of them match each CROSS_LANE pattern."""
    body = asm.split(".Lfunc_end", 1)[0]
    lines = [line.split(";")[0].strip() for line in body.splitlines()]
    lines = [line for line in lines if line and not line.startswith(".") and not line.endswith(":")]
    return (len(lines),) + tuple(sum(bool(re.match(p, line)) for line in lines) for p in CROSS_LANE.values())


def usage(asm: str, card: Card) -> Usage:
    """What the assembly text of one kernel uses, read from its metadata and instructions."""
    def meta(key: str) -> int:
        return int(re.search(rf"\.{key}:\s*(\d+)", asm).group(1))

    def moved(prefix: str) -> int:
        total = 0
        for m in re.finditer(rf"^\s*{prefix}_(\w+)\b", asm, re.M):
            total += MEMORY_BYTES.get(m.group(1), 0)
        return total

    return Usage(meta("vgpr_count"), meta("agpr_count"), meta("sgpr_count"), meta("group_segment_fixed_size"),
                 meta("max_flat_workgroup_size"), moved("global_load") + moved("buffer_load"),
                 moved("global_store") + moved("buffer_store"),
                 len(re.findall(rf"^\s*{card.matrix_prefix}", asm, re.M)), cross_lane(asm))


def waves_per_simd(u: Usage, card: Card) -> int:
    """Waves of this kernel one SIMD holds: VGPRs (allocated in the card's granules) and LDS decide."""
    granules = math.ceil(max(u.vgprs, 1) / card.vgpr_granule) * card.vgpr_granule
    by_vgprs = min(card.max_waves_per_simd, card.vgprs_per_simd_lane // granules)
    waves_per_group = max(1, u.threads // card.wave)
    groups_by_lds = card.lds_bytes // u.lds if u.lds else 10 ** 9
    by_lds = groups_by_lds * waves_per_group // card.simds_sharing_lds
    return max(0, min(by_vgprs, by_lds))


class Row(NamedTuple):
    name: str
    launch: str
    usage: Usage
    bytes_moved: float   # the problem's bytes through memory (each input read once, outputs written once)
    flops: float
    operands: str = "fp16"   # the matrix instructions' operand type (which peak bounds the flops)


# Triton's tutorial 03 HIP configurations with 8 warps (on AMD: 8 waves of 64), largest first
MATMUL_CONFIGS = [(256, 256, 64, 8), (256, 128, 64, 8), (128, 128, 64, 8), (128, 64, 64, 8), (64, 64, 64, 8)]
refused: list[str] = []


def rows(target: str) -> list[Row]:
    card = CARDS[target]
    k = load_kernels("amd_static_kernels", tile.jit, tl)

    def measured(kernel, *args, warps=4, **meta) -> Usage:
        return usage(str(tile.dump(kernel, *args, stage="amdgcn", target=target, num_warps=warps, **meta)), card)

    out = []
    n = 1 << 24
    x = np.zeros(n, np.float32)
    out.append(Row("vector add fp32", "2^24, BLOCK 1024, 4 warps", measured(k.add_kernel, x, x, x, n, BLOCK=1024),
                   3 * 4 * n, 0))
    rows_, cols = 4096, 4096
    a = np.zeros((rows_, cols), np.float32)
    out.append(Row("softmax fp32", f"{rows_}x{cols}, BLOCK 4096, 8 warps",
                   measured(k.softmax_kernel, a, a, cols, cols, cols, BLOCK=4096, warps=8), 2 * 4 * rows_ * cols, 0))
    h = np.zeros((rows_, cols), np.float16)
    w = np.zeros(cols, np.float32)
    mean = np.zeros(rows_, np.float32)
    out.append(Row("layer norm fp16", f"{rows_}x{cols}, BLOCK 4096, 8 warps",
                   measured(k.layer_norm_kernel, h, h, w, w, mean, mean, cols, cols, 1e-5, BLOCK=4096, warps=8),
                   2 * 2 * rows_ * cols, 0))
    s = 4096
    m16 = np.zeros((s, s), np.float16)
    # fp8 where the card's matrix instructions take it (gfx942's fnuz e4m3: bytes seen as
    # tl.float8e4b8), the output f16 as in the fp16 rows
    m8 = tile.reinterpret(np.zeros((s, s), np.uint8), tl.float8e4b8)
    inputs = [("fp16", m16, 2)] + ([("fp8", m8, 1)] if "fp8" in card.dense_flops else [])
    for operands, x, size in inputs:
        for bm, bn, bk, warps in MATMUL_CONFIGS:
            launch = f"{s}^3, {bm}x{bn}x{bk}, {warps} warps"
            try:
                u = measured(k.matmul_kernel, x, x, m16, s, s, s, s, 1, s, 1, s, 1, BLOCK_M=bm, BLOCK_N=bn,
                             BLOCK_K=bk, GROUP_M=4, warps=warps)
            except tile.OutOfResources as e:
                refused.append(f"matmul {operands} {launch}: {str(e).splitlines()[0]}")
                continue
            out.append(Row(f"matmul {operands}", launch, u, (2 * size + 2) * s * s, 2.0 * s ** 3, operands))
    return out


def floor_us(row: Row, card: Card) -> float:
    return 1e6 * max(row.bytes_moved / card.memory_bytes_per_s, row.flops / card.dense_flops[row.operands])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="gfx942", choices=sorted(CARDS))
    args = parser.parse_args()
    card = CARDS[args.target]
    matrix = card.matrix_prefix.strip("_").split("_")[1].upper()
    print(f"| kernel | launch | VGPRs (of them AGPRs) | SGPRs | LDS bytes | waves/SIMD "
          f"| global bytes per thread (ld / st, text) | {matrix} in text | floor on {card.name} (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    table = rows(args.target)
    for row in table:
        u = row.usage
        print(f"| {row.name} | {row.launch} | {u.vgprs} ({u.agprs}) | {u.sgprs} | {u.lds} | {waves_per_simd(u, card)} "
              f"| {u.load_bytes} / {u.store_bytes} | {u.matrix} | {floor_us(row, card):.1f} |")
    print()
    print(f"| kernel | launch | instructions in text | {' | '.join(CROSS_LANE)} |")
    print("|---|---|---|" + "---|" * len(CROSS_LANE))
    for row in table:
        if any(row.usage.cross_lane[1:4]):
            print(f"| {row.name} | {row.launch} | {' | '.join(str(n) for n in row.usage.cross_lane)} |")
    for line in refused:
        print(f"not compiled: {line}")


if __name__ == "__main__":
    main()
