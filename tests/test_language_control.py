"""Runtime control flow against Python: if/elif/else, for (runtime bounds, negative steps,
nested, loop-carried tuples), while, ternaries, logical operators and inlined helpers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


@tile.jit
def branches_kernel(out_ptr, a, b, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if a > b:
        x = offs * 2
        y = a
    elif a == b:
        x = offs + 100
        y = 0
    else:
        if b > 10:
            x = offs - 1
        else:
            x = offs * 0
        y = b
    z = y if a > 0 else -y
    tl.store(out_ptr + offs, x + z)


def branches_reference(a: int, b: int, n: int) -> np.ndarray:
    offs = np.arange(n)
    if a > b:
        x, y = offs * 2, a
    elif a == b:
        x, y = offs + 100, 0
    else:
        x, y = (offs - 1 if b > 10 else offs * 0), b
    return (x + (y if a > 0 else -y)).astype(np.int32)


@given(a=st.integers(-20, 20), b=st.integers(-20, 20))
@SETTINGS
def test_runtime_if_elif_else(arrays, a, b):
    out = arrays.put(poison(8, np.int32))
    branches_kernel[(1,)](out, a, b, BLOCK=8)
    np.testing.assert_array_equal(arrays.get(out), branches_reference(a, b, 8))


@tile.jit
def loops_kernel(x_ptr, out_ptr, n, start, stop, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    a, b = 0, 1
    for _ in tl.range(start, stop):
        a, b = b, a + b  # a loop-carried tuple
    total = 0
    for i in range(stop, start, -2):
        for j in range(0, i):
            total += j
    t = (1, 2.0)
    for i in range(n):
        t = (t[0] * 2, t[1] + 0.5)
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK + offs, tl.zeros((BLOCK,), tl.float32) + a + b * 1000.0)
    tl.store(out_ptr + 2 * BLOCK + offs, tl.zeros((BLOCK,), tl.float32) + total)
    tl.store(out_ptr + 3 * BLOCK + offs, tl.zeros((BLOCK,), tl.float32) + t[0] + t[1] * 1000)


def loops_reference(x: np.ndarray, n: int, start: int, stop: int, block: int) -> np.ndarray:
    acc = x[:n].sum(axis=0) if n > 0 else np.zeros(block)
    a, b = 0, 1
    for _ in range(start, stop):
        a, b = b, a + b
    total = sum(j for i in range(stop, start, -2) for j in range(i))
    t = (1, 2.0)
    for _ in range(n):
        t = (t[0] * 2, t[1] + 0.5)
    return np.stack([acc, np.full(block, a + b * 1000.0), np.full(block, total), np.full(block, t[0] + t[1] * 1000)])


@given(n=st.integers(0, 5), start=st.integers(-3, 6), stop=st.integers(-3, 9))
@SETTINGS
def test_runtime_for_loops(arrays, n, start, stop):
    rng = np.random.default_rng(n)
    x = rng.integers(-5, 5, (5, 16)).astype(np.float32)
    out = arrays.put(poison(4 * 16, np.float32))
    loops_kernel[(1,)](arrays.put(x), out, n, start, stop, BLOCK=16)
    np.testing.assert_allclose(arrays.get(out).reshape(4, 16), loops_reference(x, n, start, stop, 16), rtol=1e-6)


@tile.jit
def while_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v != 1:  # Collatz
        v = tl.where(v % 2 == 0, v // 2, 3 * v + 1)
        steps += 1
    tl.store(out_ptr + pid, steps)


def test_runtime_while(arrays):
    x = np.array([1, 2, 3, 6, 7, 27, 97], np.int32)
    out = arrays.put(poison(7, np.int32))
    while_kernel[(7,)](arrays.put(x), out)

    def collatz(v: int) -> int:
        steps = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        return steps

    np.testing.assert_array_equal(arrays.get(out), [collatz(int(v)) for v in x])


@tile.jit
def logic_kernel(out_ptr, n, lo, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    in_range = lo < offs < n
    either = (offs < 2) or (offs >= n)
    neither = not either
    flag = (n > 3) and (lo < 0)  # a Python bool when n == 1 (folded into the kernel) or lo == 1
    tl.store(out_ptr + offs, in_range.to(tl.int32) + 2 * either.to(tl.int32) + 4 * neither.to(tl.int32) +
             8 * tl.to_tensor(flag).to(tl.int32))


@given(n=st.integers(0, 12), lo=st.integers(-2, 6))
@SETTINGS
def test_logical_operators(arrays, n, lo):
    out = arrays.put(poison(16, np.int32))
    logic_kernel[(1,)](out, n, lo, BLOCK=16)
    offs = np.arange(16)
    either = (offs < 2) | (offs >= n)
    expected = ((lo < offs) & (offs < n)) + 2 * either + 4 * ~either + 8 * int(n > 3 and lo < 0)
    np.testing.assert_array_equal(arrays.get(out), expected)


@tile.jit
def _select(x, MODE: tl.constexpr):
    if MODE == 0:
        return x + 1  # an early return under a compile-time condition is fine
    if MODE == 1:
        return x * 2
    return -x


@tile.jit
def helpers_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _select(offs, 0) + _select(offs, 1) * 10 + _select(offs, 2) * 100)


def test_inlined_helpers_with_constexpr_returns(arrays):
    out = arrays.put(poison(8, np.int32))
    helpers_kernel[(1,)](out, BLOCK=8)
    offs = np.arange(8)
    np.testing.assert_array_equal(arrays.get(out), (offs + 1) + offs * 2 * 10 - offs * 100)


@tile.jit
def nested_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    best = tl.full((BLOCK,), -1.0, tl.float32)
    for i in range(m):
        row = tl.load(x_ptr + i * BLOCK + offs)
        if i % 2 == 0:
            j = 0
            while j < n:
                row = row + 1.0
                j += 1
        best = tl.maximum(best, row)
    tl.store(out_ptr + offs, best)


@pytest.mark.parametrize("m,n", [(0, 0), (1, 3), (4, 2), (5, 0)])
def test_nested_control_flow(arrays, m, n):
    x = np.random.default_rng(m).standard_normal((5, 8)).astype(np.float32)
    out = arrays.put(poison(8, np.float32))
    nested_kernel[(1,)](arrays.put(x), out, m, n, BLOCK=8)
    rows = [x[i] + (n if i % 2 == 0 else 0) for i in range(m)]
    np.testing.assert_allclose(arrays.get(out), np.max([np.full(8, -1.0)] + rows, axis=0), rtol=1e-6)
