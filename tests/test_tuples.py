"""Tuples in kernels: tuple arguments (nested, NamedTuple, with constexpr, None, number and
array members) and their specialization, tuple returns, indexing, len, iteration, tuples
through runtime control flow, tl.tuple, comprehensions over tuples, and the errors. Kernels
run on the interpreter (and on a GPU through the `arrays` fixture)."""
from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
RNG = np.random.default_rng(3)


def expect_error(kernel, args: tuple, constexprs: dict, file: str, marker: str, at: str, message: str) -> None:
    """Compiling `kernel` fails at the line of `file` tagged `# <marker>`, at the column of `at`,
    saying `message`."""
    spec, _ = kernel.specialize(args, constexprs)
    with pytest.raises(tile.CompilationError) as info:
        kernel.build_ir(spec)
    err = info.value
    source = open(file).read().splitlines()
    line = next(i + 1 for i, text in enumerate(source) if re.search(rf"# {marker}(\s|$)", text))
    col = source[line - 1].index(at) + 1
    assert (err.file, err.line, err.col) == (file, line, col), str(err)
    assert message in err.message, str(err)


def interpret(kernel, grid, *args, **constexprs) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        kernel[grid](*args, **constexprs)


# ------------------------------------------------------------------- arguments


@tile.jit
def increment(vals):
    return tl.tuple([v + 1 for v in vals])


@tile.jit
def store_all(ptrs, vals):
    for i in tl.static_range(len(vals)):
        tl.store(ptrs[i], vals[i])


@tile.jit
def index_kernel(_0, ptrs, _1: tl.constexpr, vals, _2, _3: tl.constexpr, _4):
    vals = increment(vals)
    store_all(ptrs, vals)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4])
def test_index(arrays, size: int) -> None:
    vals = tuple(range(1, size + 1))
    outs = [poison(1, "float32") for _ in vals]
    devs = tuple(arrays.put(o) for o in outs)
    index_kernel[(1,)](0, devs, 0, vals, 0, 0, 0)
    assert [arrays.get(d)[0] - 1 for d in devs] == list(vals)


@tile.jit
def members_kernel(ptr, cst2: tl.constexpr, tuple1):
    tl.static_assert(tuple1[1] is None)
    tl.store(ptr + 5, cst2)
    tl.store(ptr + 6, tuple1[0])
    tl.store(ptr + 7, tl.load(tuple1[2][0]))
    tl.store(ptr + 8, tuple1[2][1][0])
    tl.store(ptr + 9, tl.load(tuple1[2][1][2]))


@tile.jit
def nested_kernel(ptr, n1, tuple1, cst1: tl.constexpr, val1, tuple2):
    tl.static_assert(n1 is None)
    tl.static_assert(tuple1[1][1] is None)
    tl.static_assert(tuple1[1][3] == 4)
    tl.store(ptr + 0, tl.load(tuple1[0]))
    tl.store(ptr + 1, tuple1[1][0])
    tl.store(ptr + 2, tl.load(tuple1[1][2]))
    tl.store(ptr + 3, cst1 + val1)
    tl.store(ptr + 4, tl.load(tuple2[0]))
    members_kernel(ptr, 15, (-1, None, tuple1))


def test_nested_arguments(arrays) -> None:
    x0, x1, y0 = (arrays.put(np.array([v], np.int32)) for v in (8, 12, 10))
    z = poison(10, "int32")
    zd = arrays.put(z)
    nested_kernel[(1,)](zd, None, (x0, (1, None, x1, tl.constexpr(4))), 20, 1, (y0,))
    np.testing.assert_array_equal(arrays.get(zd), [8, 1, 12, 21, 10, 15, -1, 8, 1, 12])


class Function(NamedTuple):
    fn: Any
    captured: tuple


class Matrix(NamedTuple):
    ptr: Any
    shape: tuple
    stride: tuple


@tile.jit
def make_matrix(shape, ptr, stride):
    return Matrix(shape=shape, ptr=ptr, stride=stride)


@tile.jit
def matrix_mask(m, BM: tl.constexpr, BN: tl.constexpr):
    return (tl.arange(0, BM)[:, None] < m.shape[0]) & (tl.arange(0, BN)[None, :] < m.shape[1])


@tile.jit
def namedtuple_kernel(closure, x_in, y, BM: tl.constexpr, BN: tl.constexpr):
    x = make_matrix(x_in.shape, x_in.ptr, x_in.stride)
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    xs = x.ptr + rm[:, None] * x.stride[0] + rn[None, :] * x.stride[1]
    ys = y.ptr + rm[:, None] * y.stride[0] + rn[None, :] * y.stride[1]
    v = tl.load(xs, mask=matrix_mask(x, BM, BN), other=0.0)
    tl.store(ys, closure.fn(v, *closure.captured), mask=matrix_mask(y, BM, BN))


@tile.jit
def scale_by(x, a_ptr):
    return x * tl.load(a_ptr)


def test_namedtuple_arguments(arrays) -> None:
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    y = poison((16, 16), "float32")
    a = np.array([5.25], np.float32)
    yd = arrays.put(y)
    namedtuple_kernel[(1,)](Function(scale_by, (arrays.put(a),)), Matrix(arrays.put(x), x.shape, (32, 1)),
                            Matrix(yd, y.shape, (16, 1)), 64, 64)
    np.testing.assert_array_equal(arrays.get(yd), x[:16, :16] * a[0])


@tile.jit
def shape_kernel(x, shape: tl.constexpr, strides, m_n):
    xs = x + tl.arange(0, shape[0])[:, None] * strides[0] + tl.arange(0, shape[1])[None, :] * strides[1]
    data = tl.load(xs)
    for _ in tl.range(0, m_n[1]):
        data = m_n[0] * data
    tl.store(xs, data)


def test_shape_and_strides_as_tuples(arrays) -> None:
    x = np.arange(64, dtype=np.int64).reshape(8, 8)
    xd = arrays.put(x)
    shape_kernel[(1,)](xd, x.shape, (8, 1), (2, 3))
    np.testing.assert_array_equal(arrays.get(xd), 8 * x)


# ------------------------------------------------------------- specialization


@tile.jit
def sum_kernel(out_ptr, vals):
    acc = 0.0
    for v in vals:
        if v is not None:
            acc += v
    tl.store(out_ptr, acc)


def test_members_specialize_like_scalars() -> None:
    out = np.zeros(1, np.float32)
    spec, runtime = sum_kernel.specialize((out, (1, 32, 7, 2.5, None)))
    params = {p.name: p for p in spec.params}
    assert not params["vals.0"].runtime and params["vals.0"].value == 1  # 1 is compiled in
    assert params["vals.1"].runtime and params["vals.1"].divisibility == 16
    assert params["vals.2"].divisibility == 1 and str(params["vals.3"].type) == "f32"
    assert not params["vals.4"].runtime
    assert runtime[1:] == [32, 7, 2.5]
    func = sum_kernel.build_ir(spec)
    assert func.attrs["arg_names"] == ["out_ptr", "vals.1", "vals.2", "vals.3"]
    assert func.attrs["arg_divisibility"] == [16, 16, 1, 1]


def test_do_not_specialize_reaches_into_tuples() -> None:
    kernel = tile.jit(sum_kernel.fn, do_not_specialize=["vals"])
    spec, runtime = kernel.specialize((np.zeros(1, np.float32), (1, 32)))
    assert [(p.name, p.runtime, p.divisibility) for p in spec.params[1:]] == [("vals.0", True, 1), ("vals.1", True, 1)]
    assert runtime[1:] == [1, 32]


@tile.jit
def load_all_kernel(out_ptr, ptrs):
    acc = 0.0
    for p in ptrs:
        acc += tl.load(p)
    tl.store(out_ptr, acc)


def test_array_members_key_dtype_and_alignment() -> None:
    out = np.zeros(1, np.float32)
    base = np.zeros(8, np.float32)
    keys = {load_all_kernel.specialize((out, (base, base)))[0].key,
            load_all_kernel.specialize((out, (base, base[1:])))[0].key,  # 4-byte aligned
            load_all_kernel.specialize((out, (base, base.astype(np.float16))))[0].key,
            load_all_kernel.specialize((out, (base,)))[0].key}
    assert len(keys) == 4


@tile.jit
def cached_kernel(out_ptr, ptrs):
    acc = 0.0
    for p in ptrs:
        acc += tl.load(p)
    tl.store(out_ptr, acc)


def test_tuple_launches_are_cached() -> None:
    out = np.zeros(1, np.float32)
    x, y = np.array([1.5], np.float32), np.array([2.0], np.float32)
    for _ in range(3):
        interpret(cached_kernel, (1,), out, (x, y))
    assert out[0] == 3.5 and len(cached_kernel.cache) == 1
    interpret(cached_kernel, (1,), out, (x, y, x))
    assert out[0] == 5.0 and len(cached_kernel.cache) == 2


@tile.jit
def int_sum_kernel(out_ptr, vals):
    acc = tl.zeros((1,), tl.int64)
    for v in vals:
        acc += v
    tl.store(out_ptr + tl.arange(0, 1), acc)


@SETTINGS
@given(vals=st.lists(st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([0, 1, 16, 48, -32])),
                     min_size=0, max_size=5))
def test_sum_of_int_members(vals: list[int]) -> None:
    out = np.zeros(1, np.int64)
    interpret(int_sum_kernel, (1,), out, tuple(vals))
    assert out[0] == sum(vals)


# ------------------------------------------------------------ values in kernels


@tile.jit
def three_ways(a, b):
    return a + b, \
        a - b, \
        a * b


@tile.jit
def returns_kernel(x_ptr, y_ptr, a_ptr, b_ptr, c_ptr):
    x = tl.load(x_ptr)
    y = tl.load(y_ptr)
    a, b, c = three_ways(x, y)
    tl.store(a_ptr, a)
    tl.store(b_ptr, b)
    tl.store(c_ptr, c)


def test_tuple_returns(arrays) -> None:
    x, y = np.array([1.25], np.float32), np.array([1.5], np.float32)
    outs = [arrays.put(poison(1, "float32")) for _ in range(3)]
    returns_kernel[(1,)](arrays.put(x), arrays.put(y), *outs)
    assert [arrays.get(o)[0] for o in outs] == [2.75, -0.25, 1.875]


@tile.jit
def tuple_ops_kernel(out_ptr):
    t = tl.tuple((4, 5)) + (6, 7)
    u = (0, 1) + t
    tl.static_assert(len(u) == 6 and u[-1] == 7 and u[1:3] == (1, 4))
    tl.static_assert(tl.tuple((1, 2)) == (1, 2) and tl.tuple((1, 2)) == [1, 2] and tl.tuple((1, 2)) != (1, 3))
    tl.static_assert(tl.tuple((1,)) * 3 == (1, 1, 1) and isinstance(t[0:1], tl.tuple))
    for i, v in enumerate(u):
        tl.store(out_ptr + i, v)
    squares = [v * v for v in u if v % 2 == 0]
    tl.static_assert(squares == (0, 16, 36))
    tl.store(out_ptr + 6, squares[2])


def test_tl_tuple_and_comprehensions() -> None:
    out = poison(7, "int32")
    interpret(tuple_ops_kernel, (1,), out)
    np.testing.assert_array_equal(out, [0, 1, 4, 5, 6, 7, 36])


@tile.jit
def carried_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = (tl.zeros((BLOCK,), tl.float32), tl.zeros((BLOCK,), tl.float32), 0)
    for i in range(0, n, BLOCK):
        x = tl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
        acc = (acc[0] + x, acc[1] + x * x, acc[2] + 1)
    lo, hi = 0, n
    while lo + 1 < hi:  # bisection for floor(sqrt(n)), carried as a tuple
        bounds = (lo, hi)
        mid = (bounds[0] + bounds[1]) // 2
        if mid * mid <= n:
            bounds = (mid, bounds[1])
        else:
            bounds = (bounds[0], mid)
        lo, hi = bounds
    tl.store(out_ptr + offs, acc[0] + acc[1])
    tl.store(out_ptr + BLOCK, acc[2] * 1000 + lo)


def test_tuples_through_runtime_control_flow(arrays) -> None:
    n, block = 100, 32
    x = RNG.standard_normal(n).astype(np.float32)
    out = poison(block + 1, "float32")
    od = arrays.put(out)
    carried_kernel[(1,)](arrays.put(x), od, n, BLOCK=block)
    got = arrays.get(od)
    padded = np.zeros(128)
    padded[:n] = x
    chunks = padded.reshape(-1, block)
    np.testing.assert_allclose(got[:block], chunks.sum(0) + (chunks ** 2).sum(0), rtol=1e-5, atol=1e-5)
    assert got[block] == 4 * 1000 + 10


@tile.jit
def constexpr_tuple_kernel(out_ptr, SHAPE: tl.constexpr):
    n: tl.constexpr = len(SHAPE)
    idx = tl.full(SHAPE, 0, tl.int32)
    stride = 1
    for k in tl.static_range(n - 1, -1, -1):
        r = tl.arange(0, SHAPE[k])
        for _ in tl.static_range(k):
            r = tl.expand_dims(r, 0)
        for _ in tl.static_range(k + 1, n):
            r = tl.expand_dims(r, -1)
        idx += r * stride
        stride *= SHAPE[k]
    tl.store(out_ptr + idx, idx)


@pytest.mark.parametrize("shape", [(4,), (2, 8), (2, 2, 4)])
def test_tuple_of_constexprs(shape) -> None:
    out = poison(int(np.prod(shape)), "int32")
    interpret(constexpr_tuple_kernel, (1,), out, tuple(tl.constexpr(s) for s in shape))
    np.testing.assert_array_equal(out, np.arange(out.size))


# -------------------------------------------------------------------------- errors


@tile.jit
def index_range_kernel(x_ptr):
    t = (1, 2)
    tl.store(x_ptr, t[2])  # E-range


@tile.jit
def runtime_index_kernel(x_ptr):
    t = (1, 2)
    i = tl.program_id(0)
    tl.store(x_ptr, t[i])  # E-runtime-index


@tile.jit
def arity_kernel(x_ptr):
    a, b = (1, 2, 3)  # E-arity


@tile.jit
def item_assignment_kernel(x_ptr):
    t = tl.tuple([5, 6, 7])
    t[0] = 0  # E-item


@tile.jit
def comprehension_kernel(x_ptr):
    t = [i for i in range(3)]  # E-comprehension


@tile.jit
def runtime_condition_kernel(x_ptr):
    t = [v for v in (1, 2) if tl.program_id(0) > v]  # E-comprehension-if


@tile.jit
def structure_kernel(x_ptr, n):
    t = (1, 2)
    if n > 0:
        t = (1, 2, 3)
    tl.store(x_ptr, t[0])  # E-structure


ERRORS = [
    (index_range_kernel, "E-range", "t[2]", "tuple index 2 is out of range for a tuple of length 2"),
    (runtime_index_kernel, "E-runtime-index", "t[i]", "can only be indexed by compile-time values"),
    (arity_kernel, "E-arity", "a, b", "cannot unpack 3 values into 2 names"),
    (item_assignment_kernel, "E-item", "t[0]", "item assignment (`x[i] = ...`) is not supported"),
    (comprehension_kernel, "E-comprehension", "[i for", "list comprehensions are not supported in kernels, except "
                                                         "over a tuple"),
    (runtime_condition_kernel, "E-comprehension-if", "tl.program_id(0) > v",
     "the conditions of a list comprehension must be compile-time values"),
]


@pytest.mark.parametrize("kernel,marker,at,message", ERRORS, ids=[e[1] for e in ERRORS])
def test_errors(kernel, marker: str, at: str, message: str) -> None:
    expect_error(kernel, (np.zeros(4, np.int32),), {}, __file__, marker, at, message)


def test_structure_change_error() -> None:
    spec, _ = structure_kernel.specialize((np.zeros(4, np.int32), 5))
    with pytest.raises(tile.CompilationError, match="holds tuples, block pointers or descriptors of different "
                                                    "structure on different paths"):
        structure_kernel.build_ir(spec)


def test_list_member_error() -> None:
    with pytest.raises(TypeError, match="a tuple argument cannot hold a list"):
        sum_kernel.specialize((np.zeros(1, np.float32), (1, [2, 3])))
