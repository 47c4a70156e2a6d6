"""Triton's grouped GEMM tutorial (benchmarks/kernels_grouped.py) compiled for the GPU without
one: what each variant becomes on sm_90a (and that both assemble). The pointer variant reads its
operands with 16-byte cp.async copies on the pipeline (its rows promised aligned by tl.multiple_of)
and multiplies with wgmma; the descriptor variant makes three tensor maps per problem and feeds
wgmma from the TMA ring, B (a [N, K] block read as b.T) included. The interpreter cannot run
these kernels (their matrices are reached through pointers stored in memory, which the
interpreter's argument-based memory does not follow); tests/test_grouped_gemm_gpu.py runs them."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from ptxas_util import assemble_ok

import tile
import tile.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from load_kernels import load_kernels  # noqa: E402

GROUPED = load_kernels("grouped_tile", tile.jit, tl, "kernels_grouped.py")


def _dump(kernel, stage: str, target: str = "sm_90a", bm: int = 128, bn: int = 128, bk: int = 64, warps: int = 4):
    ptrs, sizes = np.zeros(4, np.int64), np.zeros(12, np.int32)
    return str(tile.dump(kernel, ptrs, ptrs, ptrs, sizes, sizes, 4, NUM_SM=132, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                         BLOCK_SIZE_K=bk, num_warps=warps, stage=stage, target=target))


def test_pointer_variant_pipelines_vector_copies_into_wgmma() -> None:
    gpu = _dump(GROUPED.grouped_matmul_kernel, "gpu")
    copies = [line for line in gpu.splitlines() if "gpu.async_copy" in line]
    assert copies and all("{vector = 8}" in line for line in copies)
    assert "#mma<version = 3" in gpu and "is_async = true" in gpu
    assemble_ok(_dump(GROUPED.grouped_matmul_kernel, "ptx"), "sm_90a")


@pytest.mark.parametrize("bk,warps", [(64, 4), (32, 8), (128, 4)])
def test_descriptor_variant_feeds_wgmma_from_the_tma_ring(bk: int, warps: int) -> None:
    gpu = _dump(GROUPED.grouped_matmul_tma_kernel, "gpu", bk=bk, warps=warps)
    assert gpu.count("tt.make_tensormap") == 3 and "global_scratch_bytes = 384" in gpu
    ring = [line for line in gpu.splitlines() if "gpu.tma_load_async" in line]
    assert len(ring) == 6 and sum("{transposed = true}" in line for line in ring) == 3  # B's, read as b.T
    assert "tt.load %b" not in gpu and "gpu.tma_store" in gpu
    ptx = _dump(GROUPED.grouped_matmul_tma_kernel, "ptx", bk=bk, warps=warps)
    assert "wgmma.mma_async" in ptx and "tensormap.replace" in ptx
    assert "cp.async.bulk.wait_group.read 0;" in ptx  # C is read by nobody: the store need not be waited out
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_both_variants_assemble_without_tma(target: str) -> None:
    for kernel in (GROUPED.grouped_matmul_kernel, GROUPED.grouped_matmul_tma_kernel):
        ptx = _dump(kernel, "ptx", target=target)
        assert "tensormap" not in ptx and "global_scratch" not in ptx
        assemble_ok(ptx, target)
