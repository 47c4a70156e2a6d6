"""64-bit integer arithmetic on gfx942, run on the emulator: multiplication (from 32-bit products:
no 64 x 64 instruction), per lane in VGPRs and for uniform values in SGPRs, against NumPy's
wrapping products; division and remainder (a 64-step loop) against exact Python integers."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl

from amdgcn_util import needs_llvm
from test_amdgcn_sim import run
from tile.codegen.amdgcn import TARGETS, assemble

RNG = np.random.default_rng(64)


@tile.jit
def multiply_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * y, mask=mask)


@tile.jit
def uniform_multiply_kernel(a, b, out_ptr, BLOCK: tl.constexpr):
    """A product of two scalar arguments (uniform: SALU), stored per lane."""
    product = a * b
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, product + offsets)


def operands(dtype, n: int) -> np.ndarray:
    """Both halves of every dword random, and small and negative values among them."""
    info = np.iinfo(dtype)
    wide = RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    small = RNG.integers(-5 if info.min else 0, 5, n).astype(dtype)
    return np.where(RNG.random(n) < 0.8, wide, small)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_multiply_per_lane(dtype):
    n = 1000
    x, y = operands(dtype, n), operands(dtype, n)
    out = np.full(n, 7, dtype)
    run(multiply_kernel, (x, y, out, n), 4, BLOCK=256)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x * y)


@pytest.mark.parametrize("a, b", [(3 * 2 ** 40 + 12345, -(2 ** 33) - 7), (-(2 ** 62) + 99, 2 ** 35 + 3),
                                  (2 ** 63 - 1, 2 ** 63 - 1)])
def test_multiply_uniform(a, b):
    out = np.full(64, 7, np.int64)
    compiled = run(uniform_multiply_kernel, (np.int64(a), np.int64(b), out), 1, num_warps=1, BLOCK=64)
    assert "s_mul_hi_u32" in compiled.text
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, np.int64(a) * np.int64(b) + np.arange(64))


@tile.jit
def divide_kernel(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(q_ptr + offsets, x // y, mask=mask)
    tl.store(r_ptr + offsets, x % y, mask=mask)


def truncated(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's quotient and remainder (towards zero), by Python integers (exact for all of int64)."""
    q = [abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1) for a, b in zip(x.tolist(), y.tolist())]
    r = [a - b * c for a, b, c in zip(x.tolist(), y.tolist(), q)]
    wrap = lambda v: np.array([(t + 2 ** 63) % 2 ** 64 - 2 ** 63 for t in v], np.int64)  # noqa: E731
    return wrap(q).astype(x.dtype), wrap(r).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_divide_and_remainder(dtype):
    n = 600
    x = operands(dtype, n)
    y = np.where(RNG.random(n) < 0.5, operands(dtype, n), RNG.integers(1, 2 ** 20, n).astype(dtype))
    y = np.where(y == 0, dtype(3), y)
    if dtype == np.int64:
        x[:2], y[:2] = np.iinfo(np.int64).min, [-1, 1]   # the one quotient that wraps, and its neighbour
    q, r = np.full(n, 7, dtype), np.full(n, 7, dtype)
    run(divide_kernel, (x, y, q, r, n), 3, BLOCK=256)
    if dtype == np.int64:
        expected_q, expected_r = truncated(x, y)
    else:
        expected_q, expected_r = x // y, x % y
    np.testing.assert_array_equal(q, expected_q)
    np.testing.assert_array_equal(r, expected_r)


@needs_llvm
def test_division_loop_assembles():
    x = np.ones(64, np.int64)
    text = tile.dump(divide_kernel, x, x, x, x, 64, BLOCK=64, stage="amdgcn", target="gfx942")
    assert assemble(str(text), "gfx942")[:4] == b"\x7fELF"


@tile.jit
def cumsum_rows_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


@pytest.mark.parametrize("target", TARGETS)
def test_a_scan_of_the_second_i64_of_a_vector_load(target):
    """Each thread loads two i64 (one global_load_dwordx4) and scans both through 32-bit
    shuffles: the second's halves are dwords 2 and 3 of the tuple (a fuzzer find: they were
    read from dwords 0 and 1)."""
    x = np.random.default_rng(8).integers(-2**40, 2**40, (8, 16))
    out = np.full((8, 16), -1, np.int64)
    tile.emulate(cumsum_rows_kernel, target=target)[(1,)](x, out, R=8, C=16, num_warps=1)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=0))


@tile.jit
def divide_by_constant_kernel(x_ptr, q_ptr, r_ptr, D: tl.constexpr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(q_ptr + offs, x // D)
    tl.store(r_ptr + offs, x % D)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype, divisor", [(np.int64, 2), (np.int64, -3), (np.uint64, 3), (np.int64, 100)])
def test_64_bit_division_by_an_inline_constant(target, dtype, divisor):
    """A divisor that inlines (-16..64) is a 64-bit operand, both halves of it (a fuzzer find:
    `x // 2` of i64 divided by a one-dword copy and stored zeros). Truncating, as in Triton."""
    rng = np.random.default_rng(9)
    x = rng.integers(-2**62 if dtype == np.int64 else 0, 2**62, 64).astype(dtype)
    q, r = np.full(64, 7, dtype), np.full(64, 7, dtype)
    tile.emulate(divide_by_constant_kernel, target=target)[(1,)](x, q, r, D=divisor)
    exact_q = [int(a) // divisor if (int(a) >= 0) == (divisor > 0) else -(abs(int(a)) // abs(divisor)) for a in x]
    np.testing.assert_array_equal(q, np.array(exact_q).astype(dtype))
    np.testing.assert_array_equal(r, np.array([int(a) - qq * divisor for a, qq in zip(x, exact_q)]).astype(dtype))
