"""tile.language block operations against NumPy: shapes, reductions, scans, dot, atomics and
program ids (on the `arrays` fixture of test_language.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_language import arrays, bf16_bits, bf16_values, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))


# --------------------------------------------------------------------------- shapes


@tile.jit
def shapes_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])  # [M, N]
    t = tl.trans(x)  # [N, M]
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], t)
    r = tl.reshape(x, (N, M))
    tl.store(out_ptr + M * N + tl.arange(0, M * N), tl.ravel(r))
    e = tl.expand_dims(rn, 0) + tl.zeros((M, 1), tl.int32)  # broadcast [1, N] with [M, 1]
    tl.store(out_ptr + 2 * M * N + rm[:, None] * N + rn[None, :], e.to(tl.float32) + x.T.T)
    b = tl.broadcast_to(tl.full((M, 1), 2.0, tl.float32), M, N)
    tl.store(out_ptr + 3 * M * N + rm[:, None] * N + rn[None, :], tl.where(x > 0, b, tl.zeros_like(x)))
    p = tl.permute(tl.reshape(x, (2, M // 2, N)), (2, 0, 1))  # [N, 2, M // 2]
    idx = tl.arange(0, N)[:, None, None] * M + tl.arange(0, 2)[None, :, None] * (M // 2) + \
        tl.arange(0, M // 2)[None, None, :]
    tl.store(out_ptr + 4 * M * N + idx, p)


def test_shape_ops(arrays):
    m, n = 8, 16
    x = np.random.default_rng(0).standard_normal((m, n)).astype(np.float32)
    out = arrays.put(poison(5 * m * n, np.float32))
    shapes_kernel[(1,)](arrays.put(x), out, M=m, N=n)
    got = arrays.get(out).reshape(5, -1)
    np.testing.assert_array_equal(got[0], x.T.ravel())
    np.testing.assert_array_equal(got[1], x.ravel())
    np.testing.assert_array_equal(got[2], (np.arange(n, dtype=np.float32)[None, :] + x).ravel())
    np.testing.assert_array_equal(got[3], np.where(x > 0, 2.0, 0.0).ravel())
    np.testing.assert_array_equal(got[4], x.reshape(2, m // 2, n).transpose(2, 0, 1).ravel())


@tile.jit
def grid_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    i = (z * tl.num_programs(1) + y) * tl.num_programs(0) + x
    lane = tl.arange(0, 4)
    value = tl.where(lane == 0, x, tl.where(lane == 1, y, tl.where(lane == 2, z, tl.num_programs(2))))
    tl.store(out_ptr + i * 4 + lane, value)


def test_program_ids_on_3d_grid(arrays):
    out = arrays.put(poison(3 * 2 * 4 * 4, np.int32))
    grid_kernel[(3, 2, 4)](out)
    got = arrays.get(out).reshape(4, 2, 3, 4)
    z, y, x = np.meshgrid(np.arange(4), np.arange(2), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(got[..., 0], x)
    np.testing.assert_array_equal(got[..., 1], y)
    np.testing.assert_array_equal(got[..., 2], z)
    assert (got[..., 3] == 4).all()


# ----------------------------------------------------------------------- reductions


@tile.jit
def reduce_kernel(x_ptr, out_ptr, m, n, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr, AXIS: tl.constexpr,
                  KEEP: tl.constexpr, OTHER: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=OTHER)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = x.min(AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        r = tl.argmax(x, AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.xor_sum(x, AXIS, keep_dims=KEEP)
    if AXIS is None:
        if KEEP:
            tl.store(out_ptr + tl.zeros((1, 1), tl.int32), r)
        else:
            tl.store(out_ptr, r)
    elif AXIS == 0:
        tl.store(out_ptr + (rn[None, :] if KEEP else rn), r, mask=(rn[None, :] if KEEP else rn) < n)
    else:
        tl.store(out_ptr + (rm[:, None] if KEEP else rm), r, mask=(rm[:, None] if KEEP else rm) < m)


REDUCE_NP = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin,
             "xor": np.bitwise_xor.reduce}
IDENTITY = {"sum": 0, "max": float("-inf"), "min": float("inf"), "argmax": float("-inf"), "argmin": float("inf"),
            "xor": 0}


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("int32", "sum"), ("int8", "sum"), ("float32", "max"),
                                      ("int16", "max"), ("uint32", "min"), ("float32", "min"),
                                      ("float32", "argmax"), ("int32", "argmin"), ("int32", "xor"),
                                      ("float64", "sum")])
@pytest.mark.parametrize("axis", [0, 1, None])
@given(m=st.integers(1, 8), n=st.integers(1, 16), keep=st.booleans(), seed=st.integers(0, 1000))
@SETTINGS
def test_reductions(arrays, dtype, op, axis, m, n, keep, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal((m, n)).astype(dtype)
    else:
        x = rng.integers(0 if np.dtype(dtype).kind == "u" else -20, 20, (m, n)).astype(dtype)
    if op in ("argmax", "argmin"):
        x[:, ::2] = x[:, :1]  # ties: the first index wins
    other = IDENTITY[op]
    if np.dtype(dtype).kind in "iu" and op != "sum" and op != "xor":
        info = np.iinfo(dtype)
        other = info.min if op in ("max", "argmax") else info.max
    with np.errstate(all="ignore"):
        expected = REDUCE_NP[op](x.astype(np.int32 if dtype == "int8" else dtype), axis=axis)
    if op in ("argmax", "argmin") and axis is None:
        expected = np.int32(np.unravel_index(expected, x.shape)[0] * 8 + np.unravel_index(expected, x.shape)[1])
    out_dtype = np.int32 if op in ("argmax", "argmin") or dtype == "int8" else \
        np.int32 if op in ("max",) and dtype == "int16" else dtype
    size = 1 if axis is None else (n if axis == 0 else m)
    out = arrays.put(poison(size, out_dtype))
    reduce_kernel[(1,)](arrays.put(x), out, m, n, M=8, N=16, OP=op, AXIS=axis, KEEP=keep, OTHER=other)
    got = arrays.get(out)
    if op in ("argmax", "argmin") and axis is None:
        flat = int(got[0])  # index into the padded [8, 16] block
        assert (flat // 16, flat % 16) == tuple(np.unravel_index(REDUCE_NP[op](x), x.shape))
        return
    np.testing.assert_allclose(got, np.atleast_1d(expected).astype(out_dtype), rtol=1e-5, atol=1e-5)


@tile.jit
def _combine_pairs(a, b, c, d):
    return a + c, tl.maximum(b, d)


@tile.jit
def tuple_reduce_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    s, m = tl.reduce((tl.load(x_ptr + offs), tl.load(y_ptr + offs)), 0, _combine_pairs)
    tl.store(out_ptr, s)
    tl.store(out_ptr + 1, m.to(tl.float32))


def test_reduce_with_tuple_operands(arrays):
    x = np.random.default_rng(1).standard_normal(32).astype(np.float32)
    y = np.random.default_rng(2).integers(-50, 50, 32).astype(np.int32)
    out = arrays.put(poison(2, np.float32))
    tuple_reduce_kernel[(1,)](arrays.put(x), arrays.put(y), out, N=32)
    got = arrays.get(out)
    np.testing.assert_allclose(got[0], x.sum(), rtol=1e-5)
    assert got[1] == y.max()


# ---------------------------------------------------------------------------- scans


@tile.jit
def _mul_combine(a, b):
    return a * b


@tile.jit
def scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        y = tl.cumprod(x, AXIS, REVERSE)
    else:
        y = tl.associative_scan(x, AXIS, _mul_combine, reverse=REVERSE)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y)


@pytest.mark.parametrize("op,dtype", [("cumsum", "float32"), ("cumsum", "int32"), ("cumprod", "float32"),
                                      ("scan", "int64")])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans(arrays, op, dtype, axis, reverse):
    rng = np.random.default_rng(3)
    x = (rng.random((4, 8)) + 0.5).astype(dtype) if dtype == "float32" else rng.integers(-3, 4, (4, 8)).astype(dtype)
    fn = np.cumsum if op == "cumsum" else np.cumprod
    src = np.flip(x, axis) if reverse else x
    expected = fn(src, axis=axis)
    expected = np.flip(expected, axis) if reverse else expected
    out = arrays.put(poison((4, 8), dtype))
    scan_kernel[(1,)](arrays.put(x), out, M=4, N=8, OP=op, AXIS=axis, REVERSE=reverse)
    np.testing.assert_allclose(arrays.get(out), expected, rtol=1e-5)


# ------------------------------------------------------------------------------ dot


@tile.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, ACC: tl.constexpr,
               PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        acc = tl.full((M, N), 1.0, tl.float32)
        for _ in range(2):
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        c = acc
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("acc", [False, True])
def test_dot(arrays, dtype, acc):
    m, n, k = 16, 32, 64
    rng = np.random.default_rng(4)
    a32, b32 = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    if dtype == "bfloat16":
        ab, bb = bf16_bits(a32), bf16_bits(b32)
        a64, b64 = bf16_values(ab).astype(np.float64), bf16_values(bb).astype(np.float64)
        a_arg, b_arg = arrays.put(ab, "bf16"), arrays.put(bb, "bf16")
    else:
        a_arg, b_arg = arrays.put(a32.astype(dtype)), arrays.put(b32.astype(dtype))
        a64, b64 = a32.astype(dtype).astype(np.float64), b32.astype(dtype).astype(np.float64)
    out = arrays.put(poison((m, n), np.float32))
    dot_kernel[(1,)](a_arg, b_arg, out, M=m, N=n, K=k, ACC=acc, PRECISION="ieee")
    expected = a64 @ b64 * (2 if acc else 1) + (1 if acc else 0)
    np.testing.assert_allclose(arrays.get(out), expected, rtol=1e-4, atol=1e-3)


# -------------------------------------------------------------------------- atomics


@tile.jit
def atomic_kernel(out_ptr, old_ptr, x_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs, mask=mask)
    if OP == "add":
        old = tl.atomic_add(out_ptr + offs, x, mask=mask)
    elif OP == "max":
        old = tl.atomic_max(out_ptr + offs, x, mask=mask)
    elif OP == "min":
        old = tl.atomic_min(out_ptr + offs, x, mask=mask, sem="relaxed")
    elif OP == "and":
        old = tl.atomic_and(out_ptr + offs, x, mask=mask)
    elif OP == "or":
        old = tl.atomic_or(out_ptr + offs, x, mask=mask, scope="cta")
    elif OP == "xor":
        old = tl.atomic_xor(out_ptr + offs, x, mask=mask)
    else:
        old = tl.atomic_xchg(out_ptr + offs, x, mask=mask)
    tl.store(old_ptr + tl.program_id(0) * BLOCK + offs, old, mask=mask)


@pytest.mark.parametrize("op,dtype", [("add", "int32"), ("add", "float32"), ("max", "int32"), ("max", "float32"),
                                      ("min", "uint32"), ("min", "float32"), ("and", "int64"), ("or", "uint32"),
                                      ("xor", "int32"), ("xchg", "float32")])
def test_atomics(arrays, op, dtype):
    programs, block, n = 4, 16, 13
    rng = np.random.default_rng(5)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-50, 50, (programs, block)).astype(dtype)  # exact float sums in any order
    else:
        x = rng.integers(0 if np.dtype(dtype).kind == "u" else -50, 50, (programs, block)).astype(dtype)
    start = rng.integers(0, 40, block).astype(dtype)
    out, old = arrays.put(start.copy()), arrays.put(poison((programs, block), dtype))
    atomic_kernel[(programs,)](out, old, arrays.put(x), n, OP=op, BLOCK=block)
    reduce = {"add": np.sum, "max": np.max, "min": np.min, "and": np.bitwise_and.reduce,
              "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce}
    got = arrays.get(out)
    if op == "xchg":
        assert all(got[i] in x[:, i] for i in range(n))  # some program's value won
    else:
        both = np.concatenate([start[None, :n], x[:, :n]])
        np.testing.assert_array_equal(got[:n], reduce[op](both, axis=0).astype(dtype))
    np.testing.assert_array_equal(got[n:], start[n:])  # masked lanes untouched
    olds = arrays.get(old)[:, :n]
    if op == "add" and dtype == "int32":  # each program saw the start plus the values of those before it
        partial = np.sort(olds, axis=0)
        assert (partial[0] == np.minimum.reduce(partial)).all() and (olds != poison(1, dtype)).all()
        assert set(olds[:, 0].tolist()) <= {int(start[0] + x[list(s), 0].sum()) for s in _subsets(programs)}


def _subsets(n: int) -> list[tuple[int, ...]]:
    from itertools import combinations

    return [c for r in range(n) for c in combinations(range(n), r)]


@tile.jit
def cas_kernel(ptr, out_ptr):
    i = tl.program_id(0)
    old = tl.atomic_cas(ptr + tl.arange(0, 2), i, i + 100)  # only where the value equals i
    tl.store(out_ptr + i * 2 + tl.arange(0, 2), old)


def test_atomic_cas(arrays):
    out, data = arrays.put(poison(6, np.int32)), arrays.put(np.array([1, 5], np.int32))
    cas_kernel[(3,)](data, out)
    np.testing.assert_array_equal(arrays.get(data), [101, 5])
    np.testing.assert_array_equal(arrays.get(out).reshape(3, 2)[:, 1], [5, 5, 5])


# ------------------------------------------------------------------- library functions


@tile.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    tl.store(out_ptr + offs, tl.softmax(x), mask=offs < n)
    tl.store(out_ptr + BLOCK + offs, tl.cdiv(offs, 3).to(tl.float32))
    i, j = tl.swizzle2d(offs // 4, offs % 4, 4, 4, 2)
    tl.store(out_ptr + 2 * BLOCK + offs, (i * 4 + j).to(tl.float32))


def test_standard_library(arrays):
    x = np.random.default_rng(6).standard_normal(20).astype(np.float32)
    out = arrays.put(poison(96, np.float32))
    softmax_kernel[(1,)](arrays.put(x), out, 20, BLOCK=32)
    got = arrays.get(out).reshape(3, 32)
    e = np.exp(x.astype(np.float64) - x.max())
    np.testing.assert_allclose(got[0, :20], e / e.sum(), rtol=1e-5)
    np.testing.assert_array_equal(got[1], -(-np.arange(32) // 3))
    flat = np.arange(16)  # (i, j) = (flat // 4, flat % 4) of a 4x4 grid, groups of 2 rows
    size_g = np.minimum(4 - (flat // 8) * 2, 2)
    new_i = (flat // 8) * 2 + flat % size_g
    new_j = (flat % 8) // size_g
    np.testing.assert_array_equal(got[2, :16], new_i * 4 + new_j)


@pytest.mark.parametrize("shape", [(16,), (4, 8)])
def test_zeros_full_like(arrays, shape):
    @tile.jit
    def k(out_ptr, A: tl.constexpr, B: tl.constexpr):
        if B == 0:
            z = tl.zeros((A,), tl.int16)
            tl.store(out_ptr + tl.arange(0, A), tl.zeros_like(z) + tl.full((A,), 7, tl.int16))
        else:
            offs = tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :]
            tl.store(out_ptr + offs, tl.full((A, B), -3, tl.int16) + tl.zeros_like(offs).to(tl.int16))

    out = arrays.put(poison(int(np.prod(shape)), np.int16))
    k[(1,)](out, A=shape[0], B=shape[1] if len(shape) > 1 else 0)
    assert (arrays.get(out) == (7 if len(shape) == 1 else -3)).all()
