"""Triton's grouped GEMM tutorial (benchmarks/kernels_grouped.py) on a GPU, both variants, against
float64 NumPy: the tutorial's group (1024, 512, 256, 128 cubed) and, for the descriptor variant
(whose loads and stores clip at the edges), a ragged group. Skipped without a GPU."""
from __future__ import annotations

import contextvars
import os
import sys

import numpy as np
import pytest

import tile
import tile.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from load_kernels import load_kernels  # noqa: E402

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(8)
GROUPED = load_kernels("grouped_tile_gpu", tile.jit, tl, "kernels_grouped.py")
TUTORIAL_GROUP = [(1024, 1024, 1024), (512, 512, 512), (256, 256, 256), (128, 128, 128)]


def _run(kernel, shapes, b_transposed: bool, block, warps: int = 4, num_sm: int = 132):
    """C of each (M, N, K) problem computed by `kernel`, and the float64 references."""
    a_host = [RNG.random((m, k)).astype(np.float16) for m, n, k in shapes]
    b_host = [RNG.random((n, k) if b_transposed else (k, n)).astype(np.float16) for m, n, k in shapes]
    a_dev, b_dev = [tile.to_device(a) for a in a_host], [tile.to_device(b) for b in b_host]
    c_dev = [tile.to_device(np.full((m, n), np.nan, np.float16)) for m, n, k in shapes]
    pointers = [tile.to_device(np.array([x.data_ptr() for x in xs], np.int64)) for xs in (a_dev, b_dev, c_dev)]
    sizes = tile.to_device(np.array([d for s in shapes for d in s], np.int32))
    lds = tile.to_device(np.array([ld for a, b, c in zip(a_host, b_host, c_dev)
                                   for ld in (a.shape[1], b.shape[1], c.shape[1])], np.int32))
    bm, bn, bk = block
    scratch = []

    def launch():
        tile.set_allocator(lambda size, alignment, stream: scratch.append(tile.empty((size,), "i8")) or scratch[-1])
        kernel[(num_sm,)](*pointers, sizes, lds, len(shapes), NUM_SM=num_sm, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                          BLOCK_SIZE_K=bk, num_warps=warps)

    contextvars.Context().run(launch)
    refs = [a.astype(np.float64) @ (b.T if b_transposed else b).astype(np.float64) for a, b in zip(a_host, b_host)]
    return [c.numpy() for c in c_dev], refs


@pytest.mark.parametrize("block,warps", [((128, 128, 32), 4), ((64, 64, 32), 4), ((128, 128, 64), 8)])
def test_pointer_variant(block, warps: int) -> None:
    outs, refs = _run(GROUPED.grouped_matmul_kernel, TUTORIAL_GROUP, False, block, warps)
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)


@pytest.mark.parametrize("block,warps", [((128, 128, 64), 4), ((128, 128, 32), 8), ((64, 128, 64), 4),
                                         ((128, 128, 128), 8)])
@pytest.mark.parametrize("shapes", [TUTORIAL_GROUP, [(200, 136, 72), (64, 512, 1000), (8, 16, 24)]])
def test_descriptor_variant(block, warps: int, shapes) -> None:
    outs, refs = _run(GROUPED.grouped_matmul_tma_kernel, shapes, True, block, warps)
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)
