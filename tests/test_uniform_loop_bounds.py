"""Loop bounds read from memory reach ptxas as lane 0's copy (lower_control.loaded_loop_bounds).

tile's scalars are the same in every thread, but ptxas cannot know it of a loaded one, and a loop
whose trip count it thinks may differ between lanes keeps its state in ordinary registers. The
lowering replaces such a bound, where it is computed, by `shfl.sync.idx` from lane 0; bounds from
parameters and constants are left alone, as are AMD targets (whose selector has its own
uniformity analysis). The emulator runs the kernels against NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest
from ptxas_util import assemble_ok

import tile
import tile.language as tl
from tile.emulator import emulate

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
