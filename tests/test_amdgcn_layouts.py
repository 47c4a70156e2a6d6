"""Layouts for 32- and 64-thread warps (waves): tile/ir/layouts.py takes the warp size as a
parameter; the constructors spread 32 or 64 lanes the same way, and every element of a tensor
big enough for the CTA has exactly one owner."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.ir.layouts import blocked_layout, default_blocked


@st.composite
def cases(draw):
    warp_size = draw(st.sampled_from([32, 64]))
    num_warps = draw(st.sampled_from([1, 2, 4, 8]))
    rank = draw(st.integers(1, 2))
    threads_log = int(math.log2(warp_size * num_warps))
    total_log = draw(st.integers(threads_log, threads_log + 4))
    first = draw(st.integers(0, total_log)) if rank == 2 else total_log
    shape = [1 << first] + ([1 << (total_log - first)] if rank == 2 else [])
    return warp_size, num_warps, shape


@settings(max_examples=80, deadline=None)
@given(cases(), st.sampled_from([1, 2, 4]))
def test_each_element_has_one_owner_for_both_warp_sizes(case, vector):
    warp_size, num_warps, shape = case
    spt = [1] * (len(shape) - 1) + [min(vector, shape[-1])]
    order = list(reversed(range(len(shape))))
    for layout in (default_blocked(shape, num_warps, warp_size), blocked_layout(shape, spt, order, num_warps, warp_size)):
        assert layout.warp_size == warp_size and layout.num_warps == num_warps
        ll = layout.to_linear(shape)
        assert ll.num_lanes == warp_size and ll.num_warps == num_warps
        coords = ll.element_coords().reshape(-1, len(shape))
        flat = np.ravel_multi_index(tuple(coords.T), shape)
        if math.prod(shape) >= warp_size * num_warps * math.prod(layout.size_per_thread):
            assert np.array_equal(np.sort(flat), np.arange(math.prod(shape)))  # a permutation: no replication


def test_wave64_lanes_take_twice_the_columns():
    narrow = blocked_layout([64, 64], [1, 4], [1, 0], 4, threads_per_warp=32)
    wide = blocked_layout([64, 64], [1, 4], [1, 0], 4, threads_per_warp=64)
    assert narrow.threads_per_warp == (2, 16) and wide.threads_per_warp == (4, 16)
    assert narrow.warps_per_cta == wide.warps_per_cta == (4, 1)
