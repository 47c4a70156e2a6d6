"""Hopper wgmma layouts against the PTX ISA, written out here directly: the #mma version 3
accumulator against the wgmma D fragment table, the wgmma operand buffers (#shared, with
`block`) against the canonical shared-memory layouts and their swizzles, text round trips, and
the instruction table."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.ir import parse_type
from tile.ir.dot_layouts import MmaLayout, shared_for_dot, wgmma_shared, wgmma_swizzle
from tile.ir.gpu_ops import multi_buffer_layout, stage_layout
from tile.ir.layouts import SharedLayout, conversion_kind
from tile.ir.simt_ops import WGMMA_SHAPES, wgmma_atype
from tile.ir.types import DTYPES

SETTINGS = settings(max_examples=60, deadline=None)


# --------------------------------------------------------------------------- PTX ISA tables
# "Matrix Fragments for wgmma.mma_async.m64nNk*", accumulator D (f32/s32): in warp w (0..3) of
# the warp group, lane l, groupID g = l >> 2, threadID_in_group t = l % 4, register i of N/2:


def ptx_d(i: int, w: int, lane: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    row = 16 * w + g + (8 if i % 4 >= 2 else 0)
    col = 8 * (i // 4) + 2 * t + (i % 2)
    return row, col


# "Asynchronous Warpgroup Level Matrix Shared Memory Layout": the canonical layouts of an
# operand tile (mn x k elements of `nbytes`) with an S-byte swizzle, as byte addresses, and the
# swizzle of an address: its 16-byte chunk (bits 4..) XOR bits 7.. (log2(S / 16) bits).


def swizzled(addr: np.ndarray, s: int) -> np.ndarray:
    return addr ^ (((addr >> 7) & (s // 16 - 1)) << 4)


def canonical(start: int, mn: int, k: int, nbytes: int, s: int, k_major: bool, lbo: int, sbo: int) -> np.ndarray:
    """[mn, k] addresses of an operand tile whose descriptor has `start`, LBO and SBO."""
    i, j = np.arange(mn)[:, None], np.arange(k)[None, :]
    if k_major:
        addr = start + (i // 8) * sbo + (i % 8) * s + j * nbytes
    else:
        w = s // nbytes
        addr = start + (i // w) * lbo + (i % w) * nbytes + (j // 8) * sbo + (j % 8) * s
    return swizzled(addr, s)


# --------------------------------------------------------------------------- the accumulator


@SETTINGS
@given(gm=st.sampled_from([1, 2, 4]), gn=st.sampled_from([1, 2]), n=st.sampled_from([8, 16, 32, 64, 128, 256]),
       reps_m=st.sampled_from([1, 2]), reps_n=st.sampled_from([1, 2]))
def test_accumulator_is_the_wgmma_d_fragment(gm, gn, n, reps_m, reps_n):
    layout = MmaLayout(3, (4 * gm, gn), (16, n))
    shape = (64 * gm * reps_m, n * gn * reps_n)
    coords = layout.to_linear(shape).element_coords()
    half = n // 2
    for w in range(4 * gm * gn):
        group, wl = divmod(w, 4)
        wg_m, wg_n = group % gm, group // gm   # warp groups stack along M first
        for lane in range(32):
            for r in range(coords.shape[2]):
                tile = r // half
                rep_m, rep_n = tile % reps_m, tile // reps_m  # instruction tiles repeat M first
                row, col = ptx_d(r % half, wl, lane)
                want = (row + 64 * wg_m + 64 * gm * rep_m, col + n * wg_n + n * gn * rep_n)
                assert tuple(coords[w, lane, r]) == want, (w, lane, r)


def test_accumulator_text_round_trip_and_errors():
    layout = MmaLayout(3, (8, 1), (16, 256))
    text = f"tensor<128x256xf32, {layout}>"
    assert str(layout) == "#mma<version = 3, wpc = [8, 1], instr = [16, 256]>"
    assert parse_type(text).layout == layout
    for bad in ((3, (2, 2), (16, 64)), (3, (4, 1), (16, 512)), (3, (4, 1), (16, 4)), (3, (4, 1), (16, 48)),
                (2, (4, 1), (16, 64))):
        with pytest.raises(ValueError):
            MmaLayout(*bad)


def test_one_warp_group_holds_what_mma_sync_on_four_warps_along_m_holds():
    """Over 64x64, warp w holds rows 16w.. with the mma.sync C fragment repeated along N in both."""
    v3, v2 = MmaLayout(3, (4, 1), (16, 64)), MmaLayout(2, (4, 1))
    assert conversion_kind(v3, v2, (64, 64)) == "noop"
    assert conversion_kind(v3, MmaLayout(2, (2, 2)), (64, 64)) == "shared"


# --------------------------------------------------------------------------- operand buffers


@SETTINGS
@given(nbytes=st.sampled_from([1, 2, 4]), k_major=st.booleans(), rows=st.sampled_from([8, 16, 64, 128]),
       inner=st.sampled_from([8, 16, 32, 64, 128, 256]))
def test_operand_buffers_are_the_canonical_layouts(nbytes, k_major, rows, inner):
    """An operand buffer of `rows` x `inner` (inner: the contiguous dimension, K for K-major, M or
    N for MN-major) holds every instruction tile where the canonical layout with its swizzle puts
    it: rows of S bytes, 8-row atoms 8 S apart; wider rows cut into S-byte blocks of all rows."""
    s = next((x for x in (128, 64, 32) if inner * nbytes >= x), None)
    order = (1, 0)
    layout = wgmma_shared((rows, inner), nbytes, order)
    if s is None:
        assert layout is None  # less than 32 bytes per row: wgmma's unswizzled layout is not used
        return
    assert wgmma_swizzle(layout, (rows, inner), nbytes) == s
    offsets = layout.offsets((rows, inner)) * nbytes   # [rows, inner] byte offsets
    width = s // nbytes
    r, c = np.arange(rows)[:, None], np.arange(inner)[None, :]
    block_bytes = rows * s
    assert (offsets == swizzled((c // width) * block_bytes + r * s + (c % width) * nbytes, s)).all()
    if k_major:  # rows are M or N; one instruction reads 32 bytes of K from every row
        k = 32 // nbytes
        if inner < k:
            return
        for k0 in range(0, inner, k):
            tile = canonical(int(offsets[0, k0]), rows, k, nbytes, s, True, 16, 8 * s)
            assert (tile == offsets[:, k0:k0 + k]).all()
    else:  # rows are K (16 per f16 instruction), the contiguous dimension M or N
        if rows < 16 or nbytes != 2:
            return
        for k0 in range(0, rows, 16):
            tile = canonical(int(offsets[k0, 0]), inner, 16, nbytes, s, False, block_bytes, 8 * s)
            assert (tile == offsets[k0:k0 + 16, :].T).all()


def test_operand_buffer_text_round_trip_and_stages():
    layout = wgmma_shared((64, 256), 2, (1, 0))
    assert str(layout) == "#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0], block = 64>"
    assert parse_type(f"tensor<64x256xf16, {layout}>").layout == layout
    assert stage_layout(multi_buffer_layout(layout)) == layout
    assert str(wgmma_shared((32, 64), 2, (0, 1))) == "#shared<vec = 8, per_phase = 2, max_phase = 4, order = [0, 1]>"
    with pytest.raises(ValueError):
        SharedLayout(8, 1, 8, (1, 0), 4)  # a block narrower than a vector


def test_multi_buffered_operand_stages_hold_the_2d_layout():
    layout = wgmma_shared((32, 128), 2, (1, 0))
    multi = multi_buffer_layout(layout)
    for stage in range(3):
        for r, c in ((0, 0), (5, 70), (31, 127)):
            want = stage * 32 * 128 + layout.offset_of((r, c), (32, 128))
            assert multi.offset_of((stage, r, c), (3, 32, 128)) == want


def test_ldmatrix_buffers_are_not_wgmma_layouts_unless_they_coincide():
    assert wgmma_swizzle(shared_for_dot((64, 64), 2, 0, [1, 0]), (64, 64), 2) == 128  # the same swizzle
    assert wgmma_swizzle(shared_for_dot((64, 64), 1, 1, [1, 0]), (64, 64), 1) is None
    assert wgmma_swizzle(SharedLayout(1, 1, 1, (1, 0)), (64, 64), 2) is None


# --------------------------------------------------------------------------- instruction table


def test_instruction_table():
    for atype, shape in WGMMA_SHAPES.items():
        nbytes = {"f16": 2, "bf16": 2, "tf32": 4}.get(atype, 1)
        assert shape.k * nbytes == 32  # one k-step reads 32 bytes of every row
        assert shape.mn_major == (atype in ("f16", "bf16"))
        assert shape.ctype == ("s32" if atype in ("s8", "u8") else "f32")
    assert wgmma_atype(DTYPES["f32"], "tf32") == "tf32" and wgmma_atype(DTYPES["f32"], "ieee") is None
    assert wgmma_atype(DTYPES["f32"], "tf32x3") is None and wgmma_atype(DTYPES["f64"], "tf32") is None
    assert wgmma_atype(DTYPES["f8e4nv"], "tf32") == "e4m3" and wgmma_atype(DTYPES["u8"], "tf32") == "u8"
