"""Layouts: LinearLayout algebra, blocked/slice/shared index math against direct formulas, text round trips."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.ir import TensorType, f32, parse_type
from tile.ir.layouts import (BlockedLayout, LinearEncoding, LinearLayout, SharedLayout, SliceLayout,
                             blocked_from_linear, blocked_layout, conversion_kind, default_blocked, reshape_layout,
                             trans_layout, warps_split_dim)

SETTINGS = settings(max_examples=60, deadline=None)


# --------------------------------------------------------------------------- strategies


def _split_bits(draw, total_bits: int, rank: int) -> list[int]:
    """Powers of two, one per dimension, whose product is 2**total_bits."""
    parts = [0] * rank
    for _ in range(total_bits):
        parts[draw(st.integers(0, rank - 1))] += 1
    return [1 << p for p in parts]


@st.composite
def blocked_layouts(draw, rank=None, warp_size=32, num_warps=None):
    rank = rank or draw(st.integers(1, 3))
    num_warps = num_warps or draw(st.sampled_from([1, 2, 4, 8, 16]))
    spt = [draw(st.sampled_from([1, 1, 2, 4, 8])) for _ in range(rank)]
    tpw = _split_bits(draw, int(math.log2(warp_size)), rank)
    wpc = _split_bits(draw, int(math.log2(num_warps)), rank)
    order = draw(st.permutations(list(range(rank))))
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


@st.composite
def shapes(draw, rank, max_log=8, max_total_log=13):
    while True:
        shape = tuple(1 << draw(st.integers(0, max_log)) for _ in range(rank))
        if math.prod(shape) <= 1 << max_total_log:
            return shape


# --------------------------------------------------------------------------- LinearLayout


def test_linear_layout_apply_and_tables():
    ll = LinearLayout((4, 8), ((0, 1), (0, 2)), ((0, 4), (1, 0)), ((2, 0),))
    assert ll.apply(3, 2, 1) == (3, 3)
    assert ll.apply(1, 1, 0) == (0, 5)
    coords = ll.element_coords()
    assert coords.shape == (2, 4, 4, 2)
    for w, lane, r in itertools.product(range(2), range(4), range(4)):
        assert tuple(coords[w, lane, r]) == ll.apply(r, lane, w)
    assert ll.is_surjective() and ll.is_injective_on_registers()
    assert ll.num_registers == 4 and ll.num_lanes == 4 and ll.num_warps == 2


def test_linear_layout_replication_masks():
    ll = LinearLayout((4,), ((1,), (0,)), ((2,), (0,), (0,)), ((0,),))
    assert ll.replicated_register_mask == 0b10
    assert ll.replicated_lane_mask == 0b110
    assert ll.replicated_warp_mask == 0b1
    assert not ll.is_injective_on_registers()
    assert ll.is_surjective()


def test_linear_layout_rejects_bases_outside_the_shape():
    with pytest.raises(ValueError):
        LinearLayout((4,), ((4,),), (), ())
    with pytest.raises(ValueError):
        LinearLayout((6,), (), (), ())


# --------------------------------------------------------------------------- blocked


def blocked_direct(layout: BlockedLayout, shape, reg, lane, warp) -> np.ndarray:
    """Triton's blocked layout, written out: thread ids split by `order`, the CTA tile repeated in
    registers over larger shapes, coordinates wrapped (replicated) over smaller ones. reg, lane and
    warp are int arrays of one shape; returns coordinates stacked on a last axis."""
    rank = len(shape)
    spt, tpw, wpc, order = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order

    def split(value, radices):
        out = [None] * rank
        for d in order:
            out[d] = value % radices[d]
            value = value // radices[d]
        return out

    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, shape[d] // tile[d]) for d in range(rank)]
    inner = math.prod(spt)
    lane_idx, warp_idx = split(lane, tpw), split(warp, wpc)
    in_idx, rep_idx = split(reg % inner, spt), split(reg // inner, reps)
    return np.stack([(rep_idx[d] * tile[d] + (warp_idx[d] * tpw[d] + lane_idx[d]) * spt[d] + in_idx[d]) % shape[d]
                     for d in range(rank)], axis=-1)


def _hardware_grid(ll: LinearLayout):
    return np.meshgrid(np.arange(ll.num_warps), np.arange(ll.num_lanes), np.arange(ll.num_registers), indexing="ij")


@SETTINGS
@given(st.data())
def test_blocked_to_linear_matches_direct_formula(data):
    layout = data.draw(blocked_layouts())
    shape = data.draw(shapes(layout.rank))
    ll = layout.to_linear(shape)
    reps = [max(1, n // t) for n, t in zip(shape, layout.tile())]
    assert ll.num_registers == math.prod(layout.size_per_thread) * math.prod(reps)
    assert ll.num_lanes == 32 and ll.num_warps == layout.num_warps
    warp, lane, reg = _hardware_grid(ll)
    assert np.array_equal(ll.element_coords(), blocked_direct(layout, shape, reg, lane, warp))
    assert ll.is_surjective()


@SETTINGS
@given(st.data())
def test_blocked_to_linear_with_warp_size_64(data):
    layout = data.draw(blocked_layouts(warp_size=64))
    shape = data.draw(shapes(layout.rank))
    ll = layout.to_linear(shape, threads_per_warp=64)
    assert len(ll.lane_bases) == 6
    warp, lane, reg = _hardware_grid(ll)
    assert np.array_equal(ll.element_coords(), blocked_direct(layout, shape, reg, lane, warp))


def test_blocked_small_shape_replicates_and_large_shape_wraps():
    layout = BlockedLayout((4,), (32,), (4,), (0,))
    small = layout.to_linear((64,))
    assert small.register_bases == ((1,), (2,))
    assert small.replicated_lane_mask == 0b10000 and small.replicated_warp_mask == 0b11
    large = layout.to_linear((2048,))
    assert large.register_bases == ((1,), (2,), (512,), (1024,))
    assert large.replicated_lane_mask == 0 and large.replicated_warp_mask == 0


def test_blocked_to_linear_rejects_wrong_rank_and_warps():
    layout = BlockedLayout((1, 1), (1, 32), (2, 2), (1, 0))
    with pytest.raises(ValueError):
        layout.to_linear((64,))
    with pytest.raises(ValueError):
        layout.to_linear((64, 64), num_warps=8)


@pytest.mark.parametrize("shape, spt, order, warps, tpw, wpc", [
    ((64, 64), (1, 4), (1, 0), 4, (2, 16), (4, 1)),
    ((4, 64), (1, 1), (1, 0), 4, (1, 32), (2, 2)),
    ((1024,), (4,), (0,), 4, (32,), (4,)),
    ((16, 16), (1, 1), (1, 0), 8, (2, 16), (8, 1)),
    ((128, 32), (4, 1), (0, 1), 4, (32, 1), (1, 4)),
])
def test_blocked_layout_constructor_like_triton(shape, spt, order, warps, tpw, wpc):
    layout = blocked_layout(shape, spt, order, warps)
    assert layout == BlockedLayout(spt, tpw, wpc, order)


def test_default_blocked():
    assert default_blocked((1024,), 4) == BlockedLayout((1,), (32,), (4,), (0,))
    assert default_blocked((64, 1), 4) == BlockedLayout((1, 1), (32, 1), (4, 1), (1, 0))
    assert default_blocked((8, 8, 8), 2) == BlockedLayout((1, 1, 1), (1, 4, 8), (1, 2, 1), (2, 1, 0))


@SETTINGS
@given(st.data())
def test_contiguous_registers_hold_consecutive_aligned_elements(data):
    layout = data.draw(blocked_layouts())
    shape = data.draw(shapes(layout.rank))
    ll = layout.to_linear(shape)
    coords = ll.element_coords()
    for dim in range(layout.rank):
        k = ll.contiguous_registers(dim)
        if shape[dim] >= layout.size_per_thread[dim] and dim == layout.order[0]:
            # at least the thread's block; more when lanes and warps span one block and the
            # register repeats continue it (tpw = wpc = 1 along the dimension)
            assert k >= layout.size_per_thread[dim]
        for start in range(0, ll.num_registers, k):
            group = coords[:, :, start:start + k, :]
            assert np.all(group[..., dim] % k == np.arange(k))
            others = np.delete(group, dim, axis=-1)
            assert np.all(others == others[:, :, :1, :])


# --------------------------------------------------------------------------- slice


@SETTINGS
@given(st.data())
def test_slice_layout_is_its_parent_with_a_dimension_dropped(data):
    parent = data.draw(blocked_layouts(rank=data.draw(st.integers(2, 3))))
    dim = data.draw(st.integers(0, parent.rank - 1))
    full = data.draw(shapes(parent.rank))
    shape = full[:dim] + full[dim + 1:]
    sliced = SliceLayout(dim, parent).to_linear(shape)
    par = parent.to_linear(full)
    assert sliced.num_warps == par.num_warps and sliced.num_lanes == par.num_lanes
    assert sliced.is_injective_on_registers()
    assert np.array_equal(_ownership(SliceLayout(dim, parent), shape), _ownership(parent, full, drop=dim))


def test_nested_slice():
    parent = BlockedLayout((1, 1, 4), (2, 4, 4), (1, 2, 2), (2, 1, 0))
    inner = SliceLayout(2, parent)
    outer = SliceLayout(0, inner)
    ll = outer.to_linear((16,))
    assert ll.is_surjective()
    assert outer.num_warps == 4 and outer.warp_size == 32


# --------------------------------------------------------------------------- shared


def shared_direct(layout: SharedLayout, coords, shape) -> int:
    """Triton's swizzled shared layout for the two fastest dimensions, row-major by order."""
    coords = list(coords)
    if len(shape) >= 2:
        col_dim, row_dim = layout.order[0], layout.order[1]
        groups = shape[col_dim] // layout.vec
        if groups >= 2:
            phase = (coords[row_dim] // layout.per_phase) % layout.max_phase % groups
            col = coords[col_dim]
            coords[col_dim] = ((col // layout.vec) ^ phase) * layout.vec + col % layout.vec
    offset, stride = 0, 1
    for d in layout.order:
        offset += coords[d] * stride
        stride *= shape[d]
    return offset


@st.composite
def shared_layouts(draw, rank):
    return SharedLayout(draw(st.sampled_from([1, 2, 4, 8])), draw(st.sampled_from([1, 2, 4])),
                        draw(st.sampled_from([1, 2, 4, 8])), tuple(draw(st.permutations(list(range(rank))))))


@SETTINGS
@given(st.data())
def test_shared_swizzle_is_a_bijection_matching_the_formula(data):
    rank = data.draw(st.integers(1, 3))
    layout = data.draw(shared_layouts(rank))
    shape = data.draw(shapes(rank, max_log=6, max_total_log=10))
    table = layout.offsets(shape)
    assert sorted(table.ravel().tolist()) == list(range(math.prod(shape)))
    for idx in np.ndindex(*shape):
        assert table[idx] == shared_direct(layout, idx, shape)


@SETTINGS
@given(st.data())
def test_shared_offsets_are_xor_linear(data):
    rank = data.draw(st.integers(2, 3))
    layout = data.draw(shared_layouts(rank))
    dist = data.draw(blocked_layouts(rank=rank))
    shape = data.draw(shapes(rank, max_log=6, max_total_log=10))
    ll = dist.to_linear(shape)
    regs, lanes, warps = layout.offset_bases(ll)
    w, lane, r = (data.draw(st.integers(0, n - 1)) for n in (ll.num_warps, ll.num_lanes, ll.num_registers))
    xor = 0
    for bases, bits in ((regs, r), (lanes, lane), (warps, w)):
        for i, b in enumerate(bases):
            if bits >> i & 1:
                xor ^= b
    assert xor == layout.offset_of(ll.apply(r, lane, w), shape)


# --------------------------------------------------------------------------- conversions


def _ownership(layout, shape, drop=None) -> np.ndarray:
    """[warps * lanes, elements] booleans: which thread holds which element (dimension `drop` projected away)."""
    ll = layout.to_linear(shape)
    coords = ll.element_coords()
    if drop is not None:
        coords = np.delete(coords, drop, axis=-1)
        shape = shape[:drop] + shape[drop + 1:]
    flat = np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), shape) if shape else np.zeros(coords.shape[:-1], int)
    threads = ll.num_warps * ll.num_lanes
    out = np.zeros((threads, max(1, math.prod(shape))), dtype=bool)
    out[np.repeat(np.arange(threads), ll.num_registers), flat.reshape(-1)] = True
    return out


@SETTINGS
@given(st.data())
def test_conversion_kind_matches_brute_force(data):
    rank = data.draw(st.integers(1, 2))
    warps = data.draw(st.sampled_from([1, 2, 4]))
    a = data.draw(blocked_layouts(rank=rank, num_warps=warps))
    shape = data.draw(shapes(rank, max_log=7, max_total_log=10))
    ll = a.to_linear(shape)
    how = data.draw(st.sampled_from(["blocked", "permute registers", "drop a register", "move a lane"]))
    regs, lanes = list(ll.register_bases), list(ll.lane_bases)
    if how == "permute registers":
        regs = data.draw(st.permutations(regs))
    elif how == "drop a register" and regs:
        regs.pop(data.draw(st.integers(0, len(regs) - 1)))
    elif how == "move a lane" and regs:
        # same elements per thread, but lane 1 now starts at another register: not a fixed renaming
        lanes[0] = tuple(x ^ y for x, y in zip(lanes[0], regs[0]))
    b = data.draw(blocked_layouts(rank=rank, num_warps=warps)) if how == "blocked" else \
        LinearEncoding(LinearLayout(ll.shape, tuple(regs), tuple(lanes), ll.warp_bases))
    kind = conversion_kind(a, b, shape)
    src, dst = a.to_linear(shape).element_coords(), b.to_linear(shape).element_coords()
    # registers: every register of b is, in every thread at once, some one register of a
    by_register = all(any(np.array_equal(src[:, :, s], dst[:, :, r]) for s in range(src.shape[2]))
                      for r in range(dst.shape[2]))
    if a.to_linear(shape) == b.to_linear(shape):
        assert kind == "noop"
    elif by_register:
        assert kind == "registers"
    else:
        assert kind == "shared"


def test_conversion_kinds():
    a = BlockedLayout((4,), (32,), (4,), (0,))
    assert conversion_kind(a, a, (512,)) == "noop"
    # each thread keeps elements 4t..4t+3 and 4t+512..: only the register order differs
    regs = LinearEncoding(LinearLayout((1024,), ((512,), (1,), (2,)), ((4,), (8,), (16,), (32,), (64,)),
                                       ((128,), (256,))))
    assert conversion_kind(a, regs, (1024,)) == "registers"
    assert conversion_kind(a, BlockedLayout((1,), (32,), (4,), (0,)), (1024,)) == "shared"
    # on 64 elements both replicate the same way
    assert conversion_kind(a, BlockedLayout((4,), (32,), (4,), (0,)), (64,)) == "noop"


# --------------------------------------------------------------------------- trans, reshape


@SETTINGS
@given(st.data())
def test_trans_and_reshape_layouts_keep_elements_in_place(data):
    layout = data.draw(blocked_layouts(rank=data.draw(st.integers(2, 3))))
    shape = data.draw(shapes(layout.rank))
    order = data.draw(st.permutations(list(range(layout.rank))))
    ll = layout.to_linear(shape)
    t = trans_layout(layout, shape, order)
    tshape = tuple(shape[o] for o in order)
    assert t.to_linear(tshape) == ll.transpose(order)
    new_shape = (math.prod(shape),)
    r = reshape_layout(layout, shape, new_shape)
    assert r.to_linear(new_shape) == ll.reshape(new_shape)
    coords, flat = ll.element_coords(), r.to_linear(new_shape).element_coords()
    assert np.array_equal(np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), shape), flat[..., 0])


@SETTINGS
@given(st.data())
def test_blocked_from_linear_finds_blocked_layouts(data):
    layout = data.draw(blocked_layouts())
    shape = tuple(max(1 << data.draw(st.integers(0, 2)), 1) * t for t in layout.tile())
    if math.prod(shape) > 1 << 14:
        return
    found = blocked_from_linear(layout.to_linear(shape))
    assert found is not None and found.to_linear(shape) == layout.to_linear(shape)


def test_reshape_of_default_blocked_is_blocked():
    layout = default_blocked((32, 64), 4)
    assert reshape_layout(layout, (32, 64), (2048,)) == default_blocked((2048,), 4)


def test_warps_split_dim():
    layout = BlockedLayout((1, 4), (2, 16), (4, 1), (1, 0))
    assert warps_split_dim(layout, (64, 64), 0) and not warps_split_dim(layout, (64, 64), 1)
    assert not warps_split_dim(layout, (2, 64), 0)  # the 4 warps replicate along the 2 rows


# --------------------------------------------------------------------------- text


@pytest.mark.parametrize("layout", [
    BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)),
    SliceLayout(1, BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))),
    SliceLayout(0, SliceLayout(2, BlockedLayout((1, 1, 4), (2, 4, 4), (1, 2, 2), (2, 1, 0)))),
    LinearEncoding(LinearLayout((4, 8), ((0, 1),), ((0, 2), (0, 4), (1, 0), (2, 0), (0, 0)), ((0, 0),))),
    SharedLayout(4, 1, 8, (1, 0)),
    SharedLayout(1, 1, 1, (0,)),
])
def test_layout_text_round_trip(layout):
    t = TensorType((4, 8) if not isinstance(layout, SliceLayout) or layout.dim else (8,), f32, layout)
    text = str(t)
    back = parse_type(text)
    assert back == t and str(back) == text


def test_layout_parse_errors():
    with pytest.raises(ValueError):
        parse_type("tensor<4xf32, #blocked<spt = [1], tpw = [32], order = [0]>>")
    with pytest.raises(ValueError):
        parse_type("tensor<4xf32, #shared<vec = 3, per_phase = 1, max_phase = 1, order = [0]>>")
