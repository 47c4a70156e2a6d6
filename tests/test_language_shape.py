"""tile.language shape ops, sorting, gather, histogram and tuple reductions against NumPy: join, split,
interleave, cat, flip, permute/reshape of rank 3, sort, topk, bitonic_merge, gather, histogram,
reduce_or and bitwise reductions, reductions and scans over tuples. Kernels run through
`kernel[grid](...)` on the `arrays` fixture (the interpreter here, the GPU on the lead's machine),
and bad input gives a CompilationError at the user's line."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_language import arrays, bf16_bits, bf16_values, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl
from tile.runtime.interpreter import InterpreterError

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
SOURCE = open(__file__).read().splitlines()
pow2 = lambda lo, hi: st.integers(lo, hi).map(lambda e: 1 << e)  # noqa: E731


def random_block(rng: np.random.Generator, shape, dtype: str, duplicates: bool = False) -> np.ndarray:
    """Random values of `dtype`; with duplicates, drawn from a few values only."""
    if duplicates:
        return rng.integers(-3, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


# --------------------------------------------------------------------- join, split, interleave, cat


@tile.jit
def join_split_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * N + rn)
    b = tl.load(b_ptr + rm * N + rn)
    ab = tl.join(a, b)                                            # [M, N, 2]
    tl.store(out_ptr + (rm * N + rn)[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], ab)
    lo, hi = tl.split(ab)
    tl.store(out_ptr + 2 * M * N + rm * N + rn, hi)
    tl.store(out_ptr + 3 * M * N + rm * N + rn, lo)
    lo2, hi2 = ab.split()
    tl.store(out_ptr + 4 * M * N + rm * (2 * N) + tl.arange(0, 2 * N)[None, :], tl.interleave(hi2, lo2))
    tl.store(out_ptr + 6 * M * N + tl.arange(0, 2 * M)[:, None] * N + rn, tl.cat(a, b, can_reorder=True))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int64", "bool"])
@given(m=pow2(0, 3), n=pow2(0, 5), seed=st.integers(0, 2**16))
@SETTINGS
def test_join_split_interleave_cat(arrays, dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    a = random_block(rng, (m, n), "int8").astype(dtype)
    b = random_block(rng, (m, n), "int8").astype(dtype)
    out = arrays.put(poison(8 * m * n, dtype))
    join_split_kernel[(1,)](arrays.put(a), arrays.put(b), out, M=m, N=n)
    got = arrays.get(out).reshape(8, -1)
    np.testing.assert_array_equal(got[:2].reshape(m, n, 2), np.stack([a, b], -1))
    np.testing.assert_array_equal(got[2].reshape(m, n), b)
    np.testing.assert_array_equal(got[3].reshape(m, n), a)
    np.testing.assert_array_equal(got[4:6].reshape(m, 2 * n), np.stack([b, a], -1).reshape(m, 2 * n))
    np.testing.assert_array_equal(got[6:8].reshape(2 * m, n), np.concatenate([a, b]))


@tile.jit
def join_scalars_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr)
    pair = tl.join(x, x + 1)                                      # two scalars: [2]
    tl.store(out_ptr + tl.arange(0, 2), pair)
    lo, hi = tl.split(pair)                                       # [2]: two scalars
    tl.store(out_ptr + 2, hi * 10 + lo)
    col = tl.load(x_ptr + tl.arange(0, N))[:, None]               # [N, 1] with [1, 4]: broadcast first
    grid = tl.join(col, tl.arange(0, 4)[None, :])
    tl.store(out_ptr + 3 + (tl.arange(0, N)[:, None, None] * 4 + tl.arange(0, 4)[None, :, None]) * 2 +
             tl.arange(0, 2)[None, None, :], grid)


def test_join_of_scalars_and_broadcast_operands(arrays):
    x = np.array([7, 3, 5, 9], np.int32)
    out = arrays.put(poison(3 + 32, np.int32))
    join_scalars_kernel[(1,)](arrays.put(x), out, N=4)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:3], [7, 8, 87])
    want = np.stack(np.broadcast_arrays(x[:, None], np.arange(4)[None, :]), -1)
    np.testing.assert_array_equal(got[3:].reshape(4, 4, 2), want)


# ------------------------------------------------------------------- flip, permute, reshape


@tile.jit
def flip_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C + \
        tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + offs)
    if DIM is None:
        y = tl.flip(x)
    else:
        y = x.flip(DIM)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3, None])
@pytest.mark.parametrize("dtype", ["float32", "int16", "float16"])
def test_flip_every_dim_of_a_3d_block(arrays, dim, dtype):
    x = random_block(np.random.default_rng(7), (2, 8, 16), dtype)
    out = arrays.put(poison(x.shape, dtype))
    flip_kernel[(1,)](arrays.put(x), out, A=2, B=8, C=16, DIM=dim)
    np.testing.assert_array_equal(arrays.get(out), np.flip(x, -1 if dim is None else dim))


@tile.jit
def rank3_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)
    rb = tl.arange(0, B)
    rc = tl.arange(0, C)
    x = tl.load(x_ptr + ra[:, None, None] * (B * C) + rb[None, :, None] * C + rc[None, None, :])
    n = A * B * C
    p = x.permute(2, 0, 1)                                        # [C, A, B]
    tl.store(out_ptr + rc[:, None, None] * (A * B) + ra[None, :, None] * B + rb[None, None, :], p)
    t = tl.trans(x, (1, 2, 0))                                    # [B, C, A]
    tl.store(out_ptr + n + rb[:, None, None] * (C * A) + rc[None, :, None] * A + ra[None, None, :], t)
    r = x.reshape(B, A * C // 2, 2)
    tl.store(out_ptr + 2 * n + tl.arange(0, n), tl.ravel(r))
    v = tl.reshape(x, (A * B, C), can_reorder=True)               # any order: only the sum is checked
    tl.store(out_ptr + 3 * n, tl.sum(tl.sum(v, 1), 0))
    grid = rb[:, None] * C + rc[None, :]                          # [B, C]
    spread = grid[:, None, :] + ra[None, :, None] * 1000          # [B, 1, C] with [1, A, 1]
    tl.store(out_ptr + 3 * n + 1 + rb[:, None, None] * (A * C) + ra[None, :, None] * C + rc[None, None, :], spread)


def test_permute_trans_reshape_and_indexing_of_rank_3(arrays):
    a, b, c = 2, 4, 8
    x = np.arange(a * b * c, dtype=np.int32).reshape(a, b, c) * 3 - 7
    n = x.size
    out = arrays.put(poison(4 * n + 1, np.int32))
    rank3_kernel[(1,)](arrays.put(x), out, A=a, B=b, C=c)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:n], x.transpose(2, 0, 1).ravel())
    np.testing.assert_array_equal(got[n:2 * n], x.transpose(1, 2, 0).ravel())
    np.testing.assert_array_equal(got[2 * n:3 * n], x.ravel())
    assert got[3 * n] == x.sum()
    grid = np.arange(b)[:, None] * c + np.arange(c)[None, :]
    want = grid[:, None, :] + np.arange(a)[None, :, None] * 1000
    np.testing.assert_array_equal(got[3 * n + 1:], want.ravel())


# ------------------------------------------------------------------------ sort, topk, bitonic merge


@tile.jit
def sort_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x, dim=DIM, descending=DESCENDING))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "bfloat16"])
@given(m=pow2(0, 3), n=pow2(0, 7), descending=st.booleans(), duplicates=st.booleans(), seed=st.integers(0, 2**16))
@SETTINGS
def test_sort_rows(arrays, dtype, m, n, descending, duplicates, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bfloat16":
        values = bf16_values(bf16_bits(random_block(rng, (m, n), "float32", duplicates)))
        x, put = bf16_bits(values), arrays.put(bf16_bits(values), "bf16")
    else:
        values = x = random_block(rng, (m, n), dtype, duplicates and dtype != "uint8")
        put = arrays.put(x)
    out = arrays.put(poison(x.shape, x.dtype), "bf16" if dtype == "bfloat16" else None)
    sort_kernel[(1,)](put, out, M=m, N=n, DESCENDING=descending, DIM=None if seed % 2 else -1)
    got = arrays.get(out)
    if dtype == "bfloat16":
        got = bf16_values(got)
    want = np.sort(values.astype(np.float64), axis=1)
    np.testing.assert_array_equal(got.astype(np.float64), want[:, ::-1] if descending else want)


def bitonic_network(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's sort of the last dimension step by step (standard.py: compare-and-swap on the
    hypercube [2] * log2(numel)), in NumPy: what any order of NaNs must come out as."""
    n_dims, log_n = int(np.log2(x.size)), int(np.log2(x.shape[-1]))
    h = x.reshape((2,) * n_dims)

    def indicator(j):
        return np.arange(2).reshape((1,) * (n_dims - j - 1) + (2,) + (1,) * j)

    for stage in range(1, log_n + 1):
        flip = indicator(stage) if stage < log_n else int(descending)
        for i in reversed(range(stage)):
            y = np.flip(h, n_dims - 1 - i)
            with np.errstate(invalid="ignore"):
                h = np.where((h > y) != (flip ^ indicator(i)).astype(bool), y, h)
    return h.reshape(x.shape)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_with_nans_follows_tritons_network(arrays, descending):
    x = np.random.default_rng(5).standard_normal((4, 64)).astype(np.float32)
    x[np.random.default_rng(6).random(x.shape) < 0.2] = np.nan
    out = arrays.put(poison(x.shape, np.float32))
    sort_kernel[(1,)](arrays.put(x), out, M=4, N=64, DESCENDING=descending, DIM=1)
    got, want = arrays.get(out), bitonic_network(x, descending)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


@tile.jit
def topk_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("dtype,out_dtype", [("float32", "float32"), ("int32", "int32"), ("float16", "float32"),
                                             ("int8", "int32")])
@given(m=pow2(0, 2), n=pow2(0, 7), k_log=st.integers(0, 7), seed=st.integers(0, 2**16))
@SETTINGS
def test_topk(arrays, dtype, out_dtype, m, n, k_log, seed):
    k = min(1 << k_log, n)
    x = random_block(np.random.default_rng(seed), (m, n), dtype, duplicates=seed % 3 == 0)
    out = arrays.put(poison((m, k), out_dtype if k < n else dtype))  # below n, Triton's max widens narrow types
    topk_kernel[(1,)](arrays.put(x), out, M=m, N=n, K=k)
    np.testing.assert_array_equal(arrays.get(out), -np.sort(-x.astype(np.float64), axis=1)[:, :k])


@tile.jit
def bitonic_merge_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
@given(m=pow2(0, 2), n=pow2(1, 7), seed=st.integers(0, 2**16))
@SETTINGS
def test_bitonic_merge_of_an_ascending_then_descending_row(arrays, descending, m, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n)).astype(np.float32)
    bitonic = np.concatenate([np.sort(x[:, :n // 2], 1), -np.sort(-x[:, n // 2:], 1)], 1)
    out = arrays.put(poison(x.shape, np.float32))
    bitonic_merge_kernel[(1,)](arrays.put(bitonic), out, M=m, N=n, DESCENDING=descending)
    want = np.sort(x, 1)
    np.testing.assert_array_equal(arrays.get(out), want[:, ::-1] if descending else want)


# ------------------------------------------------------------------------------------ gather


@tile.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                  IA: tl.constexpr, IB: tl.constexpr, IC: tl.constexpr, AXIS: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C +
                  tl.arange(0, C)[None, None, :])
    offs = tl.arange(0, IA)[:, None, None] * (IB * IC) + tl.arange(0, IB)[None, :, None] * IC + \
        tl.arange(0, IC)[None, None, :]
    index = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(src, index, AXIS) if AXIS != 2 else src.gather(index, -1))


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("index_dtype", ["int32", "int64", "uint8", "int16"])
@given(shape=st.tuples(pow2(0, 2), pow2(0, 3), pow2(0, 4)), size_log=st.integers(0, 4), seed=st.integers(0, 2**16))
@SETTINGS
def test_gather_along_each_axis(arrays, axis, index_dtype, shape, size_log, seed):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal(shape).astype(np.float32)
    ishape = tuple(1 << size_log if d == axis else s for d, s in enumerate(shape))
    index = rng.integers(0, shape[axis], ishape).astype(index_dtype)
    out = arrays.put(poison(ishape, np.float32))
    gather_kernel[(1,)](arrays.put(src), arrays.put(index), out, *shape, *ishape, axis)
    np.testing.assert_array_equal(arrays.get(out), np.take_along_axis(src, index.astype(np.int64), axis))


@tile.jit
def gather_rows_kernel(src_ptr, idx_ptr, out_ptr, N: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, N))
    index = tl.load(idx_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), tl.gather(src, index, 0))  # GATHER


def test_gather_index_out_of_range_is_an_error_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    src = np.arange(8, dtype=np.float32)
    index = np.array([0, 1, 2, 8, 3, 4, 5, 6], np.int32)
    with pytest.raises(InterpreterError) as info:
        gather_rows_kernel[(1,)](src, index, np.empty(8, np.float32), N=8)
    line = next(i + 1 for i, t in enumerate(SOURCE) if t.rstrip().endswith("# GATHER"))
    text = str(info.value)
    assert "gather_rows_kernel" in text and f"{__file__}:{line}" in text, text
    assert "gather index 8 is out of range [0, 8)" in text and "index (3,)" in text, text


# --------------------------------------------------------------------------------- histogram


@tile.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if MASKED:
        h = tl.histogram(x, BINS, mask=offs < n)
    else:
        h = x.histogram(BINS)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16"])
@pytest.mark.parametrize("masked", [False, True])
@given(n_log=st.integers(0, 10), bins_log=st.integers(0, 9), seed=st.integers(0, 2**16))
@SETTINGS
def test_histogram(arrays, dtype, masked, n_log, bins_log, seed):
    size, bins = 1 << n_log, 1 << bins_log
    rng = np.random.default_rng(seed)
    lo = 0 if np.dtype(dtype).kind == "u" else -4
    x = rng.integers(lo, min(bins + 4, np.iinfo(dtype).max), size).astype(dtype)  # some outside [0, bins)
    n = int(rng.integers(0, size + 1))
    out = arrays.put(poison(bins, np.int32))
    histogram_kernel[(1,)](arrays.put(x), out, n, N=size, BINS=bins, MASKED=masked)
    counted = x[:n] if masked else x
    counted = counted[(counted >= 0) & (counted < bins)].astype(np.int64)
    np.testing.assert_array_equal(arrays.get(out), np.bincount(counted, minlength=bins))


@tile.jit
def members_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    out = out_ptr + offs
    out.store(x.cast(tl.float32).ravel(can_reorder=True) + x.cdiv(3).to(tl.float32))
    (out_ptr + N).atomic_add(x.sum(0).to(tl.float32))
    (out_ptr + N + 1).atomic_max(x.max(0).to(tl.float32))


def test_tensor_methods_as_in_triton(arrays):
    x = np.arange(1, 17, dtype=np.int32)
    out = arrays.put(np.array([np.nan] * 16 + [0.5, -1.0], np.float32))
    members_kernel[(1,)](arrays.put(x), out, N=16)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:16], x + (x + 2) // 3)
    assert got[16] == 0.5 + x.sum() and got[17] == x.max()


# ------------------------------------------------------------- bitwise and tuple reductions, scans


@tile.jit
def _and_combine(a, b):
    return a & b


@tile.jit
def bitwise_reduce_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, N), tl.reduce_or(x, 0))
    tl.store(out_ptr + N + tl.arange(0, M), x.reduce_or(1))
    tl.store(out_ptr + N + M + tl.arange(0, M), tl.xor_sum(x, 1))
    tl.store(out_ptr + N + 2 * M + tl.arange(0, N), tl.reduce(x, 0, _and_combine))
    tl.store(out_ptr + 2 * N + 2 * M, tl.reduce_or(x, None))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "uint16"])
def test_reduce_or_xor_sum_and_a_bitwise_combine(arrays, dtype):
    m, n = 8, 16
    x = np.random.default_rng(11).integers(0, np.iinfo(dtype).max, (m, n), endpoint=True).astype(dtype)
    out = arrays.put(poison(2 * n + 2 * m + 1, dtype))
    bitwise_reduce_kernel[(1,)](arrays.put(x), out, M=m, N=n)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:n], np.bitwise_or.reduce(x, 0))
    np.testing.assert_array_equal(got[n:n + m], np.bitwise_or.reduce(x, 1))
    np.testing.assert_array_equal(got[n + m:n + 2 * m], np.bitwise_xor.reduce(x, 1))
    np.testing.assert_array_equal(got[n + 2 * m:2 * n + 2 * m], np.bitwise_and.reduce(x, 0))
    assert got[-1] == np.bitwise_or.reduce(x.ravel())


@tile.jit
def _argmax_pair(v1, i1, v2, i2):
    pick = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(pick, v1, v2), tl.where(pick, i1, i2)


@tile.jit
def _linear_recurrence(a1, b1, a2, b2):
    """(a1, b1) then (a2, b2): h -> a2 * (a1 * h + b1) + b2."""
    return a1 * a2, b1 * a2 + b2


@tile.jit
def tuple_kernel(x_ptr, a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    index = tl.broadcast_to(tl.arange(0, N)[None, :], M, N)
    value, where = tl.reduce((x, index), 1, _argmax_pair)
    tl.store(out_ptr + tl.arange(0, M), value)
    tl.store(out_ptr + M + tl.arange(0, M), where.to(tl.float32))
    tl.store(out_ptr + 2 * M + tl.arange(0, M), tl.argmax(x, 1).to(tl.float32))
    tl.store(out_ptr + 3 * M + tl.arange(0, M), tl.argmin(x, 1).to(tl.float32))
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1, _linear_recurrence, reverse=REVERSE)
    tl.store(out_ptr + 4 * M + offs, h)


def _recurrence(a: np.ndarray, b: np.ndarray, reverse: bool) -> np.ndarray:
    """h_t = a_t * h_(t-1) + b_t from h = 0 (from the end when reverse), in float64."""
    h = np.zeros(a.shape[0])
    out = np.empty(a.shape)
    for t in (reversed(range(a.shape[1])) if reverse else range(a.shape[1])):
        h = a[:, t] * h + b[:, t]
        out[:, t] = h
    return out


@pytest.mark.parametrize("reverse", [False, True])
@given(m=pow2(0, 3), n=pow2(0, 6), seed=st.integers(0, 2**16))
@SETTINGS
def test_argmax_pairs_and_linear_recurrence_scan(arrays, reverse, m, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, (m, n)).astype(np.float32)  # many ties: the first index wins
    a = rng.uniform(0.5, 1.0, (m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    out = arrays.put(poison(4 * m + m * n, np.float32))
    tuple_kernel[(1,)](arrays.put(x), arrays.put(a), arrays.put(b), out, M=m, N=n, REVERSE=reverse)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:m], x.max(1))
    np.testing.assert_array_equal(got[m:2 * m], np.argmax(x, 1))
    np.testing.assert_array_equal(got[2 * m:3 * m], np.argmax(x, 1))
    np.testing.assert_array_equal(got[3 * m:4 * m], np.argmin(x, 1))
    np.testing.assert_allclose(got[4 * m:].reshape(m, n), _recurrence(a.astype(np.float64), b.astype(np.float64),
                                                                      reverse), rtol=1e-5, atol=1e-5)


@tile.jit
def bf16_argmax_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    value, index = tl.max(x, 0, return_indices=True)
    tl.static_assert(value.dtype == tl.float32, "bf16 is compared in fp32, as in Triton")
    tl.store(out_ptr, value)
    tl.store(out_ptr + 1, index.to(tl.float32))
    tl.store(out_ptr + 2, tl.argmin(x, 0).to(tl.float32))


def test_argmax_of_bf16_compares_in_fp32_and_the_first_index_wins(arrays):
    bits = bf16_bits(np.array([1.0, 3.0, -2.0, 3.0, 0.5, -2.0, 3.0, 1.0], np.float32))
    out = arrays.put(poison(3, np.float32))
    bf16_argmax_kernel[(1,)](arrays.put(bits, "bf16"), out, N=8)
    np.testing.assert_array_equal(arrays.get(out), [3.0, 1.0, 2.0])


# ------------------------------------------------------------------------------------- errors


X = np.zeros(64, np.float32)


def compile_error(kernel, *args, **constexprs) -> tile.CompilationError:
    spec, _ = kernel.specialize(args, constexprs)
    with pytest.raises(tile.CompilationError) as info:
        kernel.build_ir(spec)
    return info.value


def check(err: tile.CompilationError, marker: str, message: str) -> None:
    """`err` points at the line tagged `# <marker>` of this file and says `message`."""
    line = next(i + 1 for i, text in enumerate(SOURCE) if re.search(rf"# {marker}$", text))
    assert (err.file, err.line) == (__file__, line), str(err)
    assert message in err.message, str(err)


def test_join_of_shapes_that_do_not_broadcast():
    @tile.jit
    def k(x_ptr):
        tl.join(tl.zeros((4,), tl.float32), tl.zeros((8,), tl.float32))  # E_JOIN

    check(compile_error(k, X), "E_JOIN", "tl.join: shapes [4] and [8] do not broadcast")


def test_join_of_two_dtypes():
    @tile.jit
    def k(x_ptr):
        tl.join(tl.zeros((4,), tl.float32), tl.zeros((4,), tl.int32))  # E_JOIN_DTYPE

    check(compile_error(k, X), "E_JOIN_DTYPE", "tl.join: both operands must have one dtype")


def test_split_of_a_last_dimension_other_than_2():
    @tile.jit
    def k(x_ptr):
        tl.split(tl.zeros((2, 4), tl.float32))  # E_SPLIT

    check(compile_error(k, X), "E_SPLIT", "tl.split: the last dimension must have size 2, got a block [2, 4]")


def test_cat_of_mismatched_shapes():
    @tile.jit
    def k(x_ptr):
        tl.cat(tl.zeros((4,), tl.float32), tl.zeros((8,), tl.float32))  # E_CAT

    check(compile_error(k, X), "E_CAT", "tl.cat: both operands must be blocks of one shape and dtype")


def test_sort_along_a_dimension_other_than_the_last():
    @tile.jit
    def k(x_ptr):
        tl.sort(tl.zeros((4, 8), tl.float32), dim=0)  # E_SORT

    check(compile_error(k, X), "E_SORT", "tl.sort: only the last (minor) dimension can be sorted, got dim=0")


def test_topk_along_a_dimension_other_than_the_last():
    @tile.jit
    def k(x_ptr):
        tl.topk(tl.zeros((4, 8), tl.float32), 2, dim=0)  # E_TOPK_DIM

    check(compile_error(k, X), "E_TOPK_DIM", "tl.topk: only the last (minor) dimension can be sorted")


@pytest.mark.parametrize("k_value,message", [(3, "tl.topk: k must be a compile-time power of 2, got 3"),
                                             (16, "tl.topk: k=16 is larger than the dimension it selects from (8)")])
def test_topk_with_a_bad_k(k_value, message):
    @tile.jit
    def k(x_ptr, K: tl.constexpr):
        tl.topk(tl.zeros((4, 8), tl.float32), K)  # E_TOPK

    check(compile_error(k, X, K=k_value), "E_TOPK", message)


@pytest.mark.parametrize("src,index,axis,message", [
    ((4, 8), (8,), 0, "tl.gather: source and index must have one rank, got [4, 8] and [8]"),
    ((4, 8), (2, 8), 1, "must match the source shape [4, 8] in every dimension but the axis (1); dimension 0"),
    ((4, 8), (4, 8), 2, "tl.gather: axis 2 is out of range for a tensor of rank 2"),
])
def test_gather_with_mismatched_ranks_or_shapes(src, index, axis, message):
    @tile.jit
    def k(x_ptr, S: tl.constexpr, I: tl.constexpr, AXIS: tl.constexpr):
        tl.gather(tl.zeros(S, tl.float32), tl.zeros(I, tl.int32), AXIS)  # E_GATHER

    check(compile_error(k, X, S=src, I=index, AXIS=axis), "E_GATHER", message)


def test_gather_with_a_float_index():
    @tile.jit
    def k(x_ptr):
        tl.zeros((8,), tl.float32).gather(tl.zeros((8,), tl.float32), 0)  # E_GATHER_FLOAT

    check(compile_error(k, X), "E_GATHER_FLOAT", "tl.gather: the index must be a block of integers")


@pytest.mark.parametrize("shape,dtype", [((8,), "float32"), ((4, 8), "int32")])
def test_histogram_of_a_float_or_2d_input(shape, dtype):
    @tile.jit
    def k(x_ptr, S: tl.constexpr, D: tl.constexpr):
        tl.histogram(tl.zeros(S, D), 4)  # E_HIST

    check(compile_error(k, X, S=shape, D=getattr(tl, dtype)), "E_HIST",
          "tl.histogram: the input must be a 1-D block of integers")


def test_histogram_with_bins_not_a_power_of_two():
    @tile.jit
    def k(x_ptr):
        tl.histogram(tl.zeros((8,), tl.int32), 6)  # E_BINS

    check(compile_error(k, X), "E_BINS", "tl.histogram: num_bins must be a compile-time power of 2, got 6")
