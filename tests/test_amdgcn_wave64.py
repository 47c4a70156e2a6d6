"""Waves of 64 on CDNA (gfx942, gfx90a): a warp of the lowering is one wave, as in Triton on AMD
(num_warps counts waves; a CTA of num_warps * 64 work-items). The layouts' index maps for 32 and
64 threads per warp (hypothesis), and kernels whose work crosses lanes (reductions and scans over
each axis of 2-D blocks, argmin / argmax, histogram, gather, a matmul through MFMA, softmax and
layer norm) at num_warps 1, 4 and 8 on the emulator against NumPy in float64, outputs poisoned,
every kernel assembled by llvm-mc; ds_swizzle_b32, the butterflies within 32 lanes that no DPP
move reaches, against the ISA's words in NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble
from tile.codegen.target import target_facts
from tile.emulator import EmulatorError
from tile.ir.layouts import SliceLayout, blocked_layout
from tile.ir.mfma_layouts import MfmaLayout, MfmaOperandLayout

from amdgcn_util import instructions, needs_llvm
from test_emulator_amdgcn import run_binary

RNG = np.random.default_rng(64)
WAVE64 = ("gfx942", "gfx90a")
WARPS = (1, 4, 8)


def test_cdna_warps_are_waves_of_64_and_rdna3_s_of_32():
    assert [target_facts(t).warp_size for t in ("gfx942", "gfx90a", "gfx1100", "sm_90a")] == [64, 64, 32, 32]


# ------------------------------------------------------------------------- layout index maps

def owners(ll) -> np.ndarray:
    """How many (register, lane, warp) hold each element of `ll`'s shape, row-major."""
    coords = ll.element_coords().reshape(-1, len(ll.shape))
    return np.bincount(np.ravel_multi_index(tuple(coords.T), ll.shape), minlength=math.prod(ll.shape))


@st.composite
def blocked_cases(draw):
    warp_size = draw(st.sampled_from([32, 64]))
    num_warps = draw(st.sampled_from([1, 2, 4, 8]))
    threads_log = int(math.log2(warp_size * num_warps))
    total_log = draw(st.integers(threads_log, threads_log + 3))
    rows_log = draw(st.integers(0, total_log))
    shape = [1 << rows_log, 1 << (total_log - rows_log)]
    spt = [1, min(draw(st.sampled_from([1, 2, 4, 8])), shape[1])]
    order = draw(st.sampled_from([[1, 0], [0, 1]]))
    return warp_size, num_warps, shape, blocked_layout(shape, spt, order, num_warps, warp_size)


@settings(max_examples=60, deadline=None)
@given(blocked_cases())
def test_blocked_layouts_own_each_element_once_and_slices_follow(case):
    """A blocked layout over a tensor at least as big as its CTA tile holds each element exactly
    once (a smaller one the same number of times each), through log2(warp size) lane bases;
    each slice (a reduction's result) keeps the parent's lane and warp bases with the sliced
    dimension dropped, so the threads that reduce a row hold its result, and holds every
    element of its shape."""
    warp_size, num_warps, shape, layout = case
    ll = layout.to_linear(shape)
    assert (ll.num_lanes, ll.num_warps) == (warp_size, num_warps) == (layout.warp_size, layout.num_warps)
    assert layout.to_linear(shape, threads_per_warp=warp_size, num_warps=num_warps) == ll
    with pytest.raises(ValueError, match="threads per warp"):
        layout.to_linear(shape, threads_per_warp=96 - warp_size)
    if math.prod(shape) >= warp_size * num_warps * math.prod(layout.size_per_thread):
        assert (owners(ll) == 1).all()
    else:   # a tensor smaller than the CTA tile: every element held, replicated evenly
        assert (owners(ll) == owners(ll)[0]).all() and owners(ll)[0] >= 1
    for dim in (0, 1):
        sliced = SliceLayout(dim, layout)
        kept = [shape[1 - dim]]
        s = sliced.to_linear(kept)
        assert (s.num_lanes, s.num_warps) == (warp_size, num_warps)
        assert (owners(s) >= 1).all()
        kept_of = lambda bases: tuple((b[1 - dim],) for b in bases)  # noqa: E731
        assert s.lane_bases == kept_of(ll.lane_bases) and s.warp_bases == kept_of(ll.warp_bases)
        assert set(s.register_bases) == {b for b in kept_of(ll.register_bases) if b[0]}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([32, 16]), st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (2, 4)]),
       st.integers(0, 2), st.integers(0, 2), st.integers(0, 1), st.sampled_from([4, 8]))
def test_mfma_layouts_are_one_wave_per_warp_and_own_each_element_once(instr, waves, rep_m, rep_n, rep_k, k_width):
    """#mfma over num_warps = wm * wn warps of 64 lanes holds each result element once; A is held
    once per wave column and B once per wave row (the replicas of the grid), never twice by a wave."""
    wm, wn = waves
    k_instr = {32: 8, 16: 16}[instr] * k_width // 4
    m, n, k = instr * wm << rep_m, instr * wn << rep_n, k_instr << rep_k
    result = MfmaLayout(instr, waves)
    assert (result.warp_size, result.num_warps) == (64, wm * wn)
    c = result.to_linear((m, n))
    assert (c.num_lanes, c.num_warps) == (64, wm * wn) and (owners(c) == 1).all()
    for op_idx, shape, replicas in ((0, (m, k), wn), (1, (k, n), wm)):
        layout = MfmaOperandLayout(op_idx, result, k_width)
        ll = layout.to_linear(shape)
        assert (layout.warp_size, ll.num_lanes, ll.num_warps) == (64, 64, wm * wn)
        assert (owners(ll) == replicas).all()


# ------------------------------------------------------------------------- ds_swizzle_b32

SWIZZLE = """
v_mov_b32 v6, -1
v_and_b32 v7, 1, v5
v_cmp_ne_u32 s[12:13], 0, v7
s_and_saveexec_b64 s[10:11], s[12:13]
ds_swizzle_b32 v6, v4 offset:{offset}
s_waitcnt lgkmcnt(0)
s_mov_b64 exec, s[10:11]
"""


def swizzled(data: np.ndarray, live: np.ndarray, source: np.ndarray) -> np.ndarray:
    """The CDNA3 ISA's DS_SWIZZLE_B32 in NumPy: each live lane reads its source lane's data, 0
    where that lane is outside EXEC; lanes outside EXEC keep their register (-1 here)."""
    read = np.where(live[source], data[source], 0).astype(np.uint32)
    return np.where(live, read, np.uint32(0xFFFFFFFF))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 31), st.integers(0, 31), st.integers(0, 31), st.integers(0, 2 ** 64 - 1))
def test_ds_swizzle_bit_mode_reads_within_groups_of_32(and_mask, or_mask, xor_mask, exec_bits):
    data = RNG.integers(0, 2 ** 32, 64, dtype=np.uint32)
    live = (exec_bits >> np.arange(64, dtype=np.uint64) & np.uint64(1)).astype(bool)
    offset = and_mask | or_mask << 5 | xor_mask << 10
    got = run_binary(SWIZZLE.format(offset=offset), data, live.astype(np.uint32))
    lane = np.arange(64)
    source = (lane & ~31) | (((lane & and_mask) | or_mask) ^ xor_mask)
    np.testing.assert_array_equal(got, swizzled(data, live, source))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 255), st.integers(0, 2 ** 64 - 1))
def test_ds_swizzle_quad_mode_reads_within_quads(pattern, exec_bits):
    data = RNG.integers(0, 2 ** 32, 64, dtype=np.uint32)
    live = (exec_bits >> np.arange(64, dtype=np.uint64) & np.uint64(1)).astype(bool)
    got = run_binary(SWIZZLE.format(offset=0x8000 | pattern), data, live.astype(np.uint32))
    lane = np.arange(64)
    source = (lane & ~3) | (pattern >> (2 * (lane & 3)) & 3)
    np.testing.assert_array_equal(got, swizzled(data, live, source))


def test_ds_swizzle_modes_from_0xe000_are_refused():
    data = np.zeros(64, np.uint32)
    with pytest.raises(EmulatorError, match="ds_swizzle_b32 offset 0xe000: the modes from 0xe000 up are not"):
        run_binary(SWIZZLE.format(offset=0xE000), data, data + 1)


@tile.jit
def row_sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, N)), axis=0))


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_a_reduction_swizzles_below_32_lanes_and_permutes_across_them(target):
    """tl.sum over one warp: butterflies by 1 to 8 are DPP moves (test_amdgcn_dpp), by 16
    ds_swizzle_b32 (xor_mask 16, and_mask 31), and on a wave of 64 the last, by 32, a
    ds_bpermute_b32 (it crosses the groups of 32)."""
    x = np.zeros(64, np.float32)
    text = str(tile.dump(row_sum_kernel, x, x[:1], N=64, stage="amdgcn", target=target, num_warps=1))
    swizzles = [line for line in instructions(text) if line.startswith("ds_swizzle_b32")]
    assert [int(line.rsplit("offset:", 1)[1]) for line in swizzles] == [31 | 16 << 10]
    assert sum(line.startswith("ds_bpermute_b32") for line in instructions(text)) == (target == "gfx942")


# ------------------------------------------------------------------------- kernels on the emulator

@tile.jit
def reduce_kernel(x_ptr, sum_ptr, max_ptr, argmin_ptr, argmax_ptr, R: tl.constexpr, C: tl.constexpr,
                  AXIS: tl.constexpr, OUT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    o = tl.arange(0, OUT)
    tl.store(sum_ptr + o, tl.sum(x, axis=AXIS))
    tl.store(max_ptr + o, tl.max(x, axis=AXIS))
    tl.store(argmin_ptr + o, tl.argmin(x, axis=AXIS))
    tl.store(argmax_ptr + o, tl.argmax(x, axis=AXIS))


@tile.jit
def scan_kernel(x_ptr, sum_ptr, prod_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr + offs, tl.cumsum(x, axis=AXIS))
    tl.store(prod_ptr + offs, tl.cumprod(x, axis=AXIS))


def emulate(kernel, target, grid, *args, **constexprs):
    """Run on the emulator, assemble the text with llvm-mc, return the compiled kernel."""
    compiled = tile.emulate(kernel, target=target)[grid](*args, **constexprs)
    assert assemble(compiled.asm["amdgcn"], target)[:4] == b"\x7fELF"
    return compiled


def poisoned(shape, dtype):
    kind = np.dtype(dtype).kind
    return np.full(shape, np.nan if kind == "f" else -7 if kind == "i" else np.iinfo(dtype).max, dtype)


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_over_each_axis(target, num_warps, axis):
    rows, cols = 16, 128
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    count = cols if axis == 0 else rows
    outs = [poisoned(count, np.float32), poisoned(count, np.float32), poisoned(count, np.int32),
            poisoned(count, np.int32)]
    compiled = emulate(reduce_kernel, target, (1,), x, *outs, R=rows, C=cols, AXIS=axis, OUT=count,
                       num_warps=num_warps)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(outs[0], x64.sum(axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], x.max(axis=axis))
    np.testing.assert_array_equal(outs[2], x.argmin(axis=axis))
    np.testing.assert_array_equal(outs[3], x.argmax(axis=axis))
    assert compiled.launch_info["workgroup_size"] == 64 * num_warps


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
def test_scans_over_each_axis(target, num_warps, axis):
    rows, cols = 32, 64
    x = RNG.uniform(0.9, 1.1, (rows, cols)).astype(np.float32)   # products stay near 1
    sums, prods = poisoned((rows, cols), np.float32), poisoned((rows, cols), np.float32)
    emulate(scan_kernel, target, (1,), x, sums, prods, R=rows, C=cols, AXIS=axis, num_warps=num_warps)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(sums, np.cumsum(x64, axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(prods, np.cumprod(x64, axis=axis), rtol=1e-5)


@tile.jit
def shuffle_kernel(x_ptr, idx_ptr, gathered_ptr, hist_ptr, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    tl.store(gathered_ptr + offs, tl.gather(x, idx, 0))
    tl.store(hist_ptr + tl.arange(0, BINS), tl.histogram(idx, BINS))


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("num_warps, n", [(1, 64), (1, 256), (4, 256), (8, 1024)])
def test_gather_and_histogram_across_the_wave(target, num_warps, n):
    """n = 64 on one warp: the gather is a ds_bpermute_b32 over all 64 lanes of the wave."""
    x = RNG.standard_normal(n).astype(np.float32)
    idx = RNG.integers(0, n, n).astype(np.int32)
    gathered, hist = poisoned(n, np.float32), poisoned(n, np.int32)
    compiled = emulate(shuffle_kernel, target, (1,), x, idx, gathered, hist, N=n, BINS=n, num_warps=num_warps)
    np.testing.assert_array_equal(gathered, x[idx])
    np.testing.assert_array_equal(hist, np.bincount(idx, minlength=n))
    if n == 64:
        assert any(line.startswith("ds_bpermute_b32") for line in instructions(compiled.asm["amdgcn"]))


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BLOCK_K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("num_warps", WARPS)
def test_matmul_through_mfma(target, num_warps):
    """64 x 64 x 64 f16 in two k-steps: one wave takes all four 32 x 32 tiles, four waves one
    each, eight waves 16 x 16 ones (32 x 32 tiles would leave waves idle)."""
    m = n = k = 64
    a, b = (RNG.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    c = poisoned((m, n), np.float32)
    compiled = emulate(matmul_kernel, target, (1,), a, b, c, M=m, N=n, K=k, BLOCK_K=32, num_warps=num_warps)
    mfmas = {line.split()[0] for line in instructions(compiled.asm["amdgcn"]) if line.startswith("v_mfma")}
    assert len(mfmas) == 1 and ("16x16" in mfmas.pop()) == (num_warps == 8)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@tile.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@tile.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    w, b = tl.load(w_ptr + cols, mask=mask), tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, centered * rstd * w + b, mask=mask)


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("num_warps", WARPS)
def test_softmax_and_layer_norm_rows(target, num_warps):
    rows, cols = 3, 700
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w, b = RNG.standard_normal(cols).astype(np.float32), RNG.standard_normal(cols).astype(np.float32)
    soft, norm = poisoned((rows, cols), np.float32), poisoned((rows, cols), np.float32)
    emulate(softmax_kernel, target, (rows,), x, soft, cols, BLOCK=1024, num_warps=num_warps)
    emulate(layer_norm_kernel, target, (rows,), x, w, b, norm, cols, 1e-5, BLOCK=1024, num_warps=num_warps)
    assert_softmax_and_layer_norm(x, w, b, soft, norm)


def assert_softmax_and_layer_norm(x, w, b, soft, norm) -> None:
    """softmax_kernel's rows `soft` and layer_norm_kernel's `norm` (eps 1e-5) of x, against float64."""
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(soft, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    centered = x64 - x64.mean(axis=1, keepdims=True)
    expected = centered / np.sqrt((centered ** 2).mean(axis=1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(norm, expected, rtol=1e-4, atol=1e-4)


@tile.jit
def increment_kernel(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)


def test_a_workgroup_past_1024_work_items_is_out_of_resources():
    """16 waves of 64 fill a workgroup's 1024 work-items on gfx942; 32 (2048) are refused, naming
    the threads, where gfx1100's 32 waves of 32 still fit."""
    x = np.zeros(4096, np.float32)
    text = str(tile.dump(increment_kernel, x, N=4096, stage="amdgcn", target="gfx942", num_warps=16))
    assert ".max_flat_workgroup_size: 1024" in text
    with pytest.raises(tile.OutOfResources, match=r"threads, Required: 2048, Hardware limit: 1024"):
        tile.dump(increment_kernel, x, N=4096, stage="amdgcn", target="gfx942", num_warps=32)
    text = str(tile.dump(increment_kernel, x, N=4096, stage="amdgcn", target="gfx1100", num_warps=32))
    assert ".max_flat_workgroup_size: 1024" in text


@needs_llvm
@pytest.mark.parametrize("target", WAVE64)
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int16, np.uint8])
def test_reductions_of_wide_and_narrow_elements(target, dtype):
    """64-bit values cross lanes as two words, 8- and 16-bit ones widened to one (swizzled the
    same way): sums, maxima and argmins over both axes of a 16 x 64 block on 4 waves."""
    rows, cols = 16, 64
    x = (RNG.standard_normal((rows, cols)) * 1e3 if np.dtype(dtype).kind == "f"
         else RNG.integers(0, 50, (rows, cols))).astype(dtype)
    for axis in (0, 1):
        count = cols if axis == 0 else rows
        sums = poisoned(count, np.float64 if np.dtype(dtype).kind == "f" else np.int64)
        outs = [sums, poisoned(count, dtype), poisoned(count, np.int32), poisoned(count, np.int32)]
        emulate(reduce_kernel, target, (1,), x, *outs, R=rows, C=cols, AXIS=axis, OUT=count, num_warps=4)
        np.testing.assert_allclose(outs[0], x.astype(np.float64).sum(axis=axis), rtol=1e-12)
        np.testing.assert_array_equal(outs[1], x.max(axis=axis))
        np.testing.assert_array_equal(outs[2], x.argmin(axis=axis))
        np.testing.assert_array_equal(outs[3], x.argmax(axis=axis))
