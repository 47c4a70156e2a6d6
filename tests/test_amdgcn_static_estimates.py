"""benchmarks/amd_static.py: the matrix instructions it counts are the target's (MFMA on gfx942,
WMMA on gfx1100), the workgroup size comes from the code object's metadata, and its occupancy
agrees with LLVM's for gfx1100 (wave32: 1536 VGPRs per SIMD lane in granules of 24, 16 waves)
and gfx942 (512 in granules of 8, 8 waves); its second table counts the cross-lane instructions
(DPP, ds_swizzle_b32, ds_bpermute_b32) and their waits."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tile
import tile.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import amd_static  # noqa: E402
from amdgcn_util import instructions, warps_for  # noqa: E402


@tile.jit
def small_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


@pytest.mark.parametrize("target, instructions", [("gfx942", 4), ("gfx1100", 2)])
def test_matrix_instructions_and_threads_are_the_target_s(target, instructions):
    """A 32 x 32 x 32 f16 dot on 128 threads: on gfx942 two waves of 64 (num_warps 2), each two
    16x16x16 tiles in two k-steps; on gfx1100 four waves of 32 (num_warps 4), each one 16 x 16
    tile in two k-steps of 16 (the text is one wave's program)."""
    a = np.zeros((32, 32), np.float16)
    card = amd_static.CARDS[target]
    asm = str(tile.dump(small_dot, a, a, np.zeros((32, 32), np.float32), N=32, num_warps=warps_for(target, 128),
                        stage="amdgcn", target=target))
    u = amd_static.usage(asm, card)
    assert u.threads == 128
    assert u.matrix == asm.count(card.matrix_prefix) == instructions
    other = "v_wmma_" if target == "gfx942" else "v_mfma_"
    assert other not in asm


def usage_of(vgprs: int, threads: int = 256, lds: int = 0) -> amd_static.Usage:
    return amd_static.Usage(vgprs, 0, 16, lds, threads, 0, 0, 0)


@pytest.mark.parametrize("vgprs, waves", [(24, 16), (96, 16), (100, 12), (128, 10), (168, 9), (200, 7), (256, 5)])
def test_gfx1100_occupancy_by_vgprs_is_llvm_s(vgprs, waves):
    assert amd_static.waves_per_simd(usage_of(vgprs), amd_static.CARDS["gfx1100"]) == waves


@pytest.mark.parametrize("vgprs, waves", [(24, 8), (64, 8), (65, 7), (128, 4), (256, 2), (512, 1)])
def test_gfx942_occupancy_by_vgprs(vgprs, waves):
    assert amd_static.waves_per_simd(usage_of(vgprs), amd_static.CARDS["gfx942"]) == waves


def test_lds_limits_occupancy_by_workgroups():
    """64 KiB of LDS per workgroup: one workgroup per gfx942 CU (4 waves of 64 over 4 SIMDs: 1
    each), two per gfx1100 WGP (8 waves of 32 each over 4 SIMDs: 4 each)."""
    assert amd_static.waves_per_simd(usage_of(32, 256, 65536), amd_static.CARDS["gfx942"]) == 1
    assert amd_static.waves_per_simd(usage_of(32, 256, 65536), amd_static.CARDS["gfx1100"]) == 4


def test_the_floor_takes_the_peak_of_the_operand_type():
    """A 4096^3 matmul is flop-bound on the MI300X: 2 * 4096^3 flops at 1307 fp16 TFLOP/s, half
    that time at 2615 fp8 TFLOP/s; gfx1100 has no fp8 peak (its WMMA take f16 and bf16)."""
    card, s = amd_static.CARDS["gfx942"], 4096
    fp16 = amd_static.Row("matmul fp16", "", usage_of(128), 6 * s * s, 2.0 * s ** 3)
    fp8 = amd_static.Row("matmul fp8", "", usage_of(128), 4 * s * s, 2.0 * s ** 3, "fp8")
    assert amd_static.floor_us(fp16, card) == pytest.approx(1e6 * 2 * s ** 3 / 1307e12)
    assert amd_static.floor_us(fp8, card) == pytest.approx(1e6 * 2 * s ** 3 / 2615e12)
    assert "fp8" not in amd_static.CARDS["gfx1100"].dense_flops


@tile.jit
def wave_sum(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, N)), axis=0))


@pytest.mark.parametrize("target, counts", [("gfx942", (5, 1, 1)), ("gfx1100", (4, 1, 0))])
def test_the_cross_lane_table_counts_dpp_swizzles_and_permutes(target, counts):
    """A sum over one wave: on gfx942 three fused DPP adds and the two moves of xor 4, a
    ds_swizzle_b32 (xor 16) and a ds_bpermute_b32 (xor 32); on gfx1100 four fused adds and the
    swizzle. Every instruction of the text is counted once, labels and directives not."""
    x = np.zeros(64, np.float32)
    asm = str(tile.dump(wave_sum, x, x[:1], N=64, stage="amdgcn", target=target, num_warps=1))
    total, dpp, swizzles, permutes, nops, waits = amd_static.cross_lane(asm)
    assert (dpp, swizzles, permutes) == counts
    assert total == len(instructions(asm))
    assert nops == sum(line.startswith("s_nop") for line in instructions(asm))
    assert waits == sum(line.startswith("s_waitcnt") and "lgkmcnt" in line for line in instructions(asm))
