"""Tensor-core layouts: #mma and #dot_op against the PTX ISA's fragment tables (written out here
directly, one formula per table), the FMA path's operand layouts, text round trips, conversion
kinds, and the shared-memory swizzle of mma operands counted bank by bank."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.ir import parse_type
from tile.ir.dot_layouts import (DotOperandLayout, MmaLayout, fma_operand_layout, ldmatrix_conflict_free,
                                 shared_for_dot, shared_wavefronts)
from tile.ir.layouts import SharedLayout, blocked_layout, conversion_kind

SETTINGS = settings(max_examples=40, deadline=None)
WARPS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (2, 4), (4, 2), (1, 8)]


# --------------------------------------------------------------------------- PTX ISA tables
# "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32" (PTX ISA 9.7.14.5): for lane l,
# groupID g = l >> 2 and threadID_in_group t = l % 4, element i of the fragment sits at:


def ptx_c(i: int, g: int, t: int) -> tuple[int, int]:
    """C/D of m16n8k*: c0..c3."""
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def ptx_a(kind: str, i: int, g: int, t: int) -> tuple[int, int]:
    if kind == "f16":  # m16n8k16 .f16/.bf16: a0..a7, two per .f16x2 register
        return (g if i in (0, 1, 4, 5) else g + 8), t * 2 + (i & 1) + (8 if i >= 4 else 0)
    if kind == "tf32":  # m16n8k8 .tf32: a0..a3, one per register
        return (g if i in (0, 2) else g + 8), (t if i < 2 else t + 4)
    # m16n8k32 .s8/.u8: a0..a15, four per register
    return (g if i < 4 or 8 <= i < 12 else g + 8), t * 4 + (i & 3) + (16 if i >= 8 else 0)


def ptx_b(kind: str, i: int, g: int, t: int) -> tuple[int, int]:
    if kind == "f16":  # b0..b3
        return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
    if kind == "tf32":  # b0, b1
        return (t if i == 0 else t + 4), g
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g  # b0..b7


KINDS = {"f16": 2, "tf32": 1, "i8": 4}


def check_all(layout, shape, expected) -> None:
    """layout.to_linear(shape) gives expected(warp, lane, reg) for every thread and register."""
    coords = layout.to_linear(shape).element_coords()
    for w, lane, r in itertools.product(*map(range, coords.shape[:3])):
        assert tuple(coords[w, lane, r]) == expected(w, lane, r), (w, lane, r)


@pytest.mark.parametrize("wm, wn", WARPS)
@pytest.mark.parametrize("reps_m, reps_n", [(1, 1), (2, 1), (1, 4), (2, 2)])
def test_mma_accumulator_is_the_ptx_c_fragment(wm, wn, reps_m, reps_n):
    layout = MmaLayout(2, (wm, wn))
    shape = (16 * wm * reps_m, 8 * wn * reps_n)

    def expected(w, lane, r):
        row, col = ptx_c(r % 4, lane >> 2, lane % 4)
        rep_m, rep_n = (r // 4) % reps_m, (r // 4) // reps_m  # M repeats first
        return row + 16 * (w % wm) + 16 * wm * rep_m, col + 8 * (w // wm) + 8 * wn * rep_n

    check_all(layout, shape, expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("wm, wn", WARPS)
@pytest.mark.parametrize("reps_mn, reps_k", [(1, 1), (2, 1), (1, 2), (2, 4)])
def test_dot_operands_are_the_ptx_fragments(kind, wm, wn, reps_mn, reps_k):
    kw = KINDS[kind]
    parent = MmaLayout(2, (wm, wn))
    per_a, per_b = 4 * kw, 2 * kw  # elements of one instruction's fragment per thread

    def expected_a(w, lane, r):
        row, col = ptx_a(kind, r % per_a, lane >> 2, lane % 4)
        k_rep, m_rep = (r // per_a) % reps_k, (r // per_a) // reps_k  # K repeats first
        return row + 16 * (w % wm) + 16 * wm * m_rep, col + 8 * kw * k_rep

    def expected_b(w, lane, r):
        row, col = ptx_b(kind, r % per_b, lane >> 2, lane % 4)
        k_rep, n_rep = (r // per_b) % reps_k, (r // per_b) // reps_k
        return row + 8 * kw * k_rep, col + 8 * (w // wm) + 8 * wn * n_rep

    check_all(DotOperandLayout(0, parent, kw), (16 * wm * reps_mn, 8 * kw * reps_k), expected_a)
    check_all(DotOperandLayout(1, parent, kw), (8 * kw * reps_k, 8 * wn * reps_mn), expected_b)


def test_fragment_registers_pack_by_k_width():
    """Registers [kw j, kw (j+1)) are one 32-bit operand register: consecutive along K."""
    for kw in (1, 2, 4):
        a = DotOperandLayout(0, MmaLayout(2, (1, 1)), kw).to_linear((16, 8 * kw))
        assert a.contiguous_registers(1) == kw and a.num_registers == 4 * kw
        b = DotOperandLayout(1, MmaLayout(2, (1, 1)), kw).to_linear((8 * kw, 8))
        assert b.contiguous_registers(0) == kw and b.num_registers == 2 * kw


def test_small_shapes_replicate_and_operands_replicate_over_the_other_warps():
    mma = MmaLayout(2, (2, 2))
    c = mma.to_linear((16, 16))  # one warp row: the warp-row bit replicates
    assert c.replicated_warp_mask == 0b01 and c.is_surjective()
    a = DotOperandLayout(0, mma, 2).to_linear((32, 16))
    assert a.replicated_warp_mask == 0b10  # A is the same for both warp columns
    b = DotOperandLayout(1, mma, 2).to_linear((16, 16))
    assert b.replicated_warp_mask == 0b01
    assert all(x.is_injective_on_registers() for x in (a, b, c))


@pytest.mark.parametrize("layout", [
    MmaLayout(2, (2, 4)),
    DotOperandLayout(0, MmaLayout(2, (4, 2)), 2),
    DotOperandLayout(1, MmaLayout(2, (1, 1)), 4),
])
def test_text_round_trip(layout):
    t = parse_type(f"tensor<64x64xf16, {layout}>")
    assert t.layout == layout and str(t.layout) == str(layout)


def test_bad_mma_layouts():
    with pytest.raises(ValueError):
        MmaLayout(3, (2, 2))
    with pytest.raises(ValueError):
        MmaLayout(2, (3, 1))
    with pytest.raises(ValueError):
        DotOperandLayout(2, MmaLayout(2, (1, 1)), 2)
    with pytest.raises(ValueError):
        MmaLayout(2, (2, 2)).to_linear((16, 16, 16))


def test_conversion_kinds_between_mma_dot_operands_and_blocked():
    mma = MmaLayout(2, (4, 1))
    blocked = blocked_layout((64, 32), [1, 8], [1, 0], 4)
    assert conversion_kind(mma, blocked, (64, 32)) == "shared"
    assert conversion_kind(blocked, DotOperandLayout(0, mma, 2), (64, 32)) == "shared"
    assert conversion_kind(mma, mma, (64, 32)) == "noop"
    # an accumulator is already the 16-bit A operand of a next dot when one warp spans N (flash
    # attention's P @ V): the same elements in the same threads (in another register order once
    # M repeats)
    assert conversion_kind(mma, DotOperandLayout(0, mma, 2), (64, 32)) == "noop"
    assert conversion_kind(mma, DotOperandLayout(0, mma, 2), (128, 32)) == "registers"
    assert conversion_kind(MmaLayout(2, (2, 2)), DotOperandLayout(0, MmaLayout(2, (2, 2)), 2), (64, 32)) == "shared"


@st.composite
def fma_cases(draw):
    warps = draw(st.sampled_from([1, 2, 4, 8]))
    m, n = (1 << draw(st.integers(0, 7)) for _ in range(2))
    spt = [draw(st.sampled_from([1, 2, 4])) for _ in range(2)]
    order = draw(st.sampled_from([[1, 0], [0, 1]]))
    return blocked_layout((m, n), spt, order, warps), (m, n), 1 << draw(st.integers(0, 6))


@SETTINGS
@given(fma_cases())
def test_fma_operands_hold_the_rows_and_columns_of_each_result_element(case):
    result, (m, n), k = case
    c = result.to_linear((m, n)).element_coords()
    a = fma_operand_layout(result, 0, k).to_linear((m, k)).element_coords()
    b = fma_operand_layout(result, 1, k).to_linear((k, n)).element_coords()
    for w, lane in itertools.product(range(c.shape[0]), range(c.shape[1])):
        rows, cols = set(c[w, lane, :, 0]), set(c[w, lane, :, 1])
        assert {tuple(x) for x in a[w, lane]} >= {(r, kk) for r in rows for kk in range(k)}
        assert {tuple(x) for x in b[w, lane]} >= {(kk, col) for col in cols for kk in range(k)}


# --------------------------------------------------------------------------- shared memory banks


def wavefronts(addresses, nbytes: int) -> int:
    """Direct count: lanes in phases of 128 / nbytes (at most 32); per phase the most distinct
    4-byte words any of the 32 banks must deliver."""
    lanes = min(32, 128 // max(nbytes, 4))
    total = 0
    for p in range(0, len(addresses), lanes):
        banks: dict[int, set[int]] = {}
        for a in addresses[p:p + lanes]:
            for byte in range(a, a + nbytes):
                banks.setdefault(byte // 4 % 32, set()).add(byte // 4)
        total += max(len(v) for v in banks.values())
    return total


def test_shared_wavefronts():
    assert shared_wavefronts([4 * i for i in range(32)], 4) == 1
    assert shared_wavefronts([0] * 32, 4) == 1  # one word, broadcast
    assert shared_wavefronts([128 * i for i in range(32)], 4) == 32
    assert shared_wavefronts([16 * i for i in range(32)], 16) == 4  # 4 phases of 8 lanes
    assert shared_wavefronts([256 * (i % 2) + 16 * (i // 2) for i in range(8)], 16) == 2
    assert shared_wavefronts([2 * i for i in range(32)], 2) == 1  # halves of 16 words
    for addresses, nbytes in [([4 * i for i in range(32)], 4), ([136 * i for i in range(32)], 8)]:
        assert shared_wavefronts(addresses, nbytes) == wavefronts(addresses, nbytes)


def operand_shapes(eb: int):
    """(op_idx, order, shape) of A (M x K) and B (K x N) buffers, both contiguous dimensions, the
    contiguous one from one 16-byte chunk to 256 elements, the other 16 .. 256."""
    for op_idx, order, inner, outer in itertools.product((0, 1), ((1, 0), (0, 1)), (8, 16, 32, 64, 128, 256),
                                                         (16, 64, 256)):
        if inner * eb >= 16 and inner * outer <= 16384:
            shape = [0, 0]
            shape[order[0]], shape[order[1]] = inner, outer
            yield op_idx, order, tuple(shape)


def offsets(shared: SharedLayout, shape) -> np.ndarray:
    return shared.offsets(shape)


@pytest.mark.parametrize("eb", [2, 1, 4])
def test_ldmatrix_rows_are_conflict_free(eb):
    """ldmatrix.x4: each phase of 8 lanes gives the 8 16-byte rows of one 8x8 matrix (8 rows
    along the buffer's order[1], one 16-byte chunk of order[0]): all in distinct bank groups.
    16-bit operands use it (.trans when M / N is contiguous); 8- and 32-bit ones when K is."""
    for op_idx, order, shape in operand_shapes(eb):
        k_contiguous = order[0] == 1 - op_idx
        if eb != 2 and not k_contiguous:
            continue
        shared = shared_for_dot(shape, eb, op_idx, order)
        offs = offsets(shared, shape)
        chunk = 16 // eb
        rows = offs if order == (1, 0) else offs.T  # [order[1], order[0]]
        for r0, c0 in itertools.product(range(0, rows.shape[0], 8), range(0, rows.shape[1], chunk)):
            block = rows[r0:r0 + 8, c0:c0 + chunk]
            assert (block == block[:, :1] + np.arange(chunk)).all(), (shape, shared)  # 16 contiguous bytes
            assert wavefronts([int(x) * eb for x in block[:, 0]], 16) == 1, (op_idx, order, shape, shared)
        assert ldmatrix_conflict_free(shared, shape, eb)


@pytest.mark.parametrize("eb", [2, 1, 4])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_16_byte_stores_filling_the_buffer_are_conflict_free(eb, num_warps):
    """cp.async / st.shared.v4 from the coalesced global-load layout (16 contiguous bytes per
    thread along order[0]): every store instruction of every warp, 4 phases of 8 lanes."""
    for op_idx, order, shape in operand_shapes(eb):
        shared = shared_for_dot(shape, eb, op_idx, order)
        spt = [1, 1]
        spt[order[0]] = 16 // eb
        if math.prod(shape) < spt[order[0]] * 32 * num_warps:
            continue
        coords = blocked_layout(shape, spt, list(order), num_warps).to_linear(shape).element_coords()
        offs = offsets(shared, shape)
        for w, r in itertools.product(range(coords.shape[0]), range(0, coords.shape[2], spt[order[0]])):
            first = [offs[tuple(coords[w, lane, r])] for lane in range(32)]
            last = [offs[tuple(coords[w, lane, r + spt[order[0]] - 1])] for lane in range(32)]
            assert all(b == a + spt[order[0]] - 1 for a, b in zip(first, last))  # contiguous in the buffer
            assert wavefronts([int(a) * eb for a in first], 16) == 4, (op_idx, order, shape, shared)


@pytest.mark.parametrize("eb", [1, 4])
def test_per_element_fragment_loads(eb):
    """8- and 32-bit operands stored M / N contiguous have no ldmatrix: each fragment register is
    one ld.shared per lane. Conflict-free, except 8-bit rows of 32 bytes or less (2-way: only two
    16-byte chunks per row to swizzle the four rows a register spans)."""
    kw = 4 // eb
    for op_idx, order, shape in operand_shapes(eb):
        if order[0] == 1 - op_idx:
            continue
        shared = shared_for_dot(shape, eb, op_idx, order)
        offs = offsets(shared, shape)
        for parent in (MmaLayout(2, (2, 2)), MmaLayout(2, (4, 2))):
            coords = DotOperandLayout(op_idx, parent, kw).to_linear(shape).element_coords()
            worst = max(wavefronts([int(offs[tuple(coords[w, lane, r])]) * eb for lane in range(32)], eb)
                        for w, r in itertools.product(range(coords.shape[0]), range(coords.shape[2])))
            allowed = 2 if eb == 1 and shape[order[0]] <= 32 else 1
            assert worst <= allowed, (op_idx, order, shape, shared, worst)


def test_shared_for_dot_examples():
    # 128-byte rows of f16: Triton's 128B swizzle; 64-byte rows: two rows share a line
    assert shared_for_dot((128, 64), 2, 0, (1, 0)) == SharedLayout(8, 1, 8, (1, 0))
    assert shared_for_dot((128, 32), 2, 0, (1, 0)) == SharedLayout(8, 2, 4, (1, 0))
    assert shared_for_dot((32, 256), 2, 1, (1, 0)) == SharedLayout(8, 1, 8, (1, 0))
    assert shared_for_dot((64, 32), 4, 1, (1, 0)) == SharedLayout(8, 1, 4, (1, 0))  # tf32 B, N-major
    assert shared_for_dot((64, 64), 1, 1, (1, 0)) == SharedLayout(16, 4, 4, (1, 0))  # int8 B, N-major


def test_bank_model_agrees_with_the_direct_count():
    rng = np.random.default_rng(0)
    for nbytes in (1, 2, 4, 8, 16):
        for _ in range(20):
            addresses = [int(a) * nbytes for a in rng.integers(0, 512, 32)]
            assert shared_wavefronts(addresses, nbytes) == wavefronts(addresses, nbytes)


def test_mma_epilogue_buffer_is_conflict_free():
    """The accumulator's trip to the store's coalesced layout: the chosen swizzle makes the
    fragment stores (2 elements per lane) and the 16-byte coalesced loads conflict-free."""
    from tile.opt.convert_through_shared import access_cost, shared_layout_for

    for (m, n), warps, eb in [((128, 256), (2, 4), 2), ((128, 128), (2, 2), 4), ((64, 64), (2, 2), 2),
                              ((128, 128), (4, 2), 2), ((32, 32), (2, 2), 4)]:
        mma = MmaLayout(2, warps)
        spt = [1, 16 // eb]
        store = blocked_layout((m, n), spt, [1, 0], math.prod(warps))
        shared = shared_layout_for(mma, store, (m, n), eb)
        regs = mma.to_linear((m, n)).num_registers
        assert access_cost(shared, mma, (m, n), eb, True) == regs // 2 * (1 if eb == 2 else 2)
        loads = store.to_linear((m, n)).num_registers // spt[1]
        assert access_cost(shared, store, (m, n), eb, False) == loads * 4
