"""Values the same in every thread, written so that ptxas sees it: then it keeps a pipelined loop's
counter, ring stage, mbarrier addresses and wgmma descriptors in uniform registers instead of
moving them there (R2UR) before each TMA copy and wgmma.

- Loop bounds read from memory reach ptxas as lane 0's copy (lower_control.loaded_loop_bounds):
  tile's scalars are the same in every thread, but ptxas cannot know it of a loaded one. Bounds
  from parameters and constants are left alone, as are AMD targets (whose selector has its own
  uniformity analysis).
- Shared-memory addresses (a symbol plus a constant) are repeated in each block that uses them
  (lower_core.sink_shared_addresses) rather than kept live from the top of the function.

The emulator runs the kernels against NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest
from ptxas_util import assemble_ok

import tile
import tile.language as tl
from tile.emulator import emulate
from test_tma_desc import desc_matmul_kernel

RNG = np.random.default_rng(31)


@tile.jit
def loaded_trip_count_kernel(x_ptr, counts_ptr, out_ptr, BLOCK: tl.constexpr):
    """Row sums of the first counts[pid] blocks of row pid (a loop bound loaded per program)."""
    pid = tl.program_id(0)
    blocks = tl.cdiv(tl.load(counts_ptr + pid), BLOCK)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(blocks):
        acc += tl.load(x_ptr + pid * 8 * BLOCK + i * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


@tile.jit
def param_trip_count_kernel(x_ptr, out_ptr, blocks, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(blocks):
        acc += tl.load(x_ptr + pid * 8 * BLOCK + i * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def _args(programs: int = 3, block: int = 64):
    x = RNG.standard_normal((programs, 8, block)).astype(np.float32)
    counts = RNG.integers(1, 8 * block + 1, size=programs).astype(np.int32)
    return x, counts, np.full((programs, block), np.nan, np.float32)


def _lane_zero_copies(ptx: str) -> list[str]:
    """The registers shuffled from lane 0 other than %tid (warp_tid's shuffle)."""
    tid = re.search(r"mov\.u32 (%r\d+), %tid\.x;", ptx).group(1)
    return [src for src in re.findall(r"shfl\.sync\.idx\.b32 %r\d+, (%r\d+), 0, 31, -1;", ptx) if src != tid]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_a_loaded_bound_is_taken_from_lane_zero(target: str) -> None:
    x, counts, out = _args()
    ptx = str(tile.dump(loaded_trip_count_kernel, x, counts, out, BLOCK=64, stage="ptx", target=target))
    copies = _lane_zero_copies(ptx)
    assert len(copies) == 1
    # the shuffled value is the trip count: the cdiv's quotient, computed from the loaded count
    assert re.search(rf"div\.s32 {re.escape(copies[0])}, ", ptx)
    assemble_ok(ptx, target)


def test_parameter_bounds_and_amd_targets_are_left_alone() -> None:
    x, _, out = _args()
    ptx = str(tile.dump(param_trip_count_kernel, x, out, 5, BLOCK=64, stage="ptx", target="sm_90a"))
    assert _lane_zero_copies(ptx) == []
    x, counts, out = _args()
    simt = str(tile.dump(loaded_trip_count_kernel, x, counts, out, BLOCK=64, stage="simt", target="gfx942"))
    assert "simt.shfl" not in simt


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_loaded_bounds_run_on_the_emulator(target: str) -> None:
    x, counts, out = _args()
    emulate(loaded_trip_count_kernel, target)[(3,)](x, counts, out, BLOCK=64)
    blocks = -(-counts // 64)
    expected = np.stack([x[p, :blocks[p]].astype(np.float64).sum(axis=0) for p in range(3)])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def _matmul_args(m: int = 128, n: int = 64, k: int = 96):
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    return a, b, np.full((m, n), np.nan, np.float16), m, n, k


def test_shared_addresses_are_repeated_in_the_blocks_that_use_them() -> None:
    """The TMA ring of a descriptor matmul: its loop takes the ring and mbarrier addresses from a
    copy of the shared-memory symbol in its own block."""
    ptx = str(tile.dump(desc_matmul_kernel, *_matmul_args(), BM=64, BN=64, BK=32, stage="ptx", target="sm_90a",
                        num_stages=3))
    loop = ptx[ptx.index("$L__"):]
    assert "mbarrier.try_wait" in loop and "wgmma.mma_async" in loop
    assert re.search(r"mov\.u32 %r\d+, __smem(?:\+\d+)?;", loop)
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_ring_loop_runs_on_the_emulator(target: str) -> None:
    a, b, c, m, n, k = _matmul_args()
    emulate(desc_matmul_kernel, target)[(m // 64, n // 64)](a, b, c, m, n, k, BM=64, BN=64, BK=32, num_stages=3)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-2, atol=2e-2)
