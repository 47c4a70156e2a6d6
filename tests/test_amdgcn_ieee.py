"""Correctly rounded f32 division and square root on gfx942 (the v_div_scale / v_div_fmas /
v_div_fixup sequence and the corrected v_sqrt_f32), run on the emulator, whose v_rcp_f32 and
v_sqrt_f32 err by as much as their 1-ulp bound allows: bit-exact against NumPy's float32 on
random operands and on zeros, denormals, infinities, NaNs and quotients that overflow or
underflow."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl

from amdgcn_util import needs_llvm
from test_amdgcn_sim import run
from tile.codegen.amdgcn import UnsupportedOnTarget, assemble
from tile.emulator.amdgcn_isa import fma_rounded_once

RNG = np.random.default_rng(1515)
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
                  3.4028235e38, -3.4028235e38, 2.0 ** -126, 2.0 ** 127, 2.0 ** -149, 7e-39, 1e30, 1e-30],
                 np.float32)


@tile.jit
def divide_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.div_rn(x, y), mask=mask)


@tile.jit
def sqrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.sqrt_rn(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


def random_floats(n: int) -> np.ndarray:
    """f32 of every binade, denormals included: random bits, NaNs and infinities left to EDGES."""
    raw = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(raw), raw, np.float32(1.5))


def assert_same_floats(out: np.ndarray, expected: np.ndarray) -> None:
    """Equal bits, any NaN for a NaN."""
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out[~nan].view(np.uint32), expected[~nan].view(np.uint32))


def check_division(x: np.ndarray, y: np.ndarray) -> None:
    n = len(x)
    out = np.full(n, 12345.0, np.float32)
    run(divide_kernel, (x, y, out, n), -(-n // 256), BLOCK=256)
    with np.errstate(all="ignore"):
        assert_same_floats(out, x / y)


def test_division_of_random_floats_of_every_binade():
    check_division(random_floats(4096), random_floats(4096))


def test_division_of_close_magnitudes():
    """Ordinary quotients, where a 1-ulp reciprocal would round wrongly without the corrections."""
    x = RNG.uniform(-4, 4, 4096).astype(np.float32)
    y = RNG.uniform(0.5, 2, 4096).astype(np.float32) * RNG.choice([-1, 1], 4096).astype(np.float32)
    check_division(x, y)


def test_division_edge_cases():
    x, y = (a.ravel() for a in np.meshgrid(EDGES, EDGES))
    check_division(x, y)


@pytest.mark.parametrize("exponents", [(100, -20), (-100, 30), (-120, 10), (10, 126), (-140, -20), (127, -10)])
def test_quotients_that_overflow_or_become_denormal(exponents):
    """Operands 2^a and 2^b apart: the quotient near or past the f32 range, where v_div_scale
    scales one operand and v_div_fmas scales the result back within its one rounding."""
    a, b = exponents
    x = (RNG.uniform(1, 2, 1024) * 2.0 ** a).astype(np.float32)
    y = (RNG.uniform(1, 2, 1024) * 2.0 ** b).astype(np.float32)
    check_division(x, y)


def test_square_root():
    x = np.concatenate([np.abs(random_floats(4096)), EDGES, -np.abs(random_floats(8)),
                        RNG.uniform(0, 4, 1024).astype(np.float32)])
    n = len(x)
    out = np.full(n, 12345.0, np.float32)
    run(sqrt_kernel, (x, out, n), -(-n // 256), BLOCK=256)
    with np.errstate(invalid="ignore"):
        assert_same_floats(out, np.sqrt(x))


def test_f64_remainder_is_refused_naming_the_operation_and_the_target():
    @tile.jit
    def remainder_f64(x_ptr, out_ptr):
        offsets = tl.arange(0, 64)
        x = tl.load(x_ptr + offsets)
        tl.store(out_ptr + offsets, x % (x + 1.0))

    x = np.ones(64)
    with pytest.raises(UnsupportedOnTarget, match="test_amdgcn_ieee.py:.*gfx942: .* simt.cvt from i64 to f64"):
        run(remainder_f64, (x, np.zeros(64)), 1)


@needs_llvm
def test_division_and_square_root_assemble():
    x = np.ones(64, np.float32)
    for text in (tile.dump(divide_kernel, x, x, x, 64, BLOCK=64, stage="amdgcn", target="gfx942"),
                 tile.dump(sqrt_kernel, x, x, 64, BLOCK=64, stage="amdgcn", target="gfx942")):
        assert assemble(str(text), "gfx942")[:4] == b"\x7fELF"


def round_to_f32(exact: Fraction) -> np.float32:
    """The f32 nearest `exact`, ties to the even one: of the float64 conversion's f32 and its
    two neighbours (double rounding misses by one at most), the nearest by exact distance."""
    guess = np.float32(float(exact))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    candidates = [f for f in candidates if np.isfinite(f)]  # beside the largest f32, its neighbour is inf
    return min(candidates, key=lambda f: (abs(Fraction(float(f)) - exact), int(f.view(np.uint32)) % 2))


finite_f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(finite_f32, finite_f32, finite_f32)
def test_emulated_fma_rounds_once(a, b, c):
    """The emulator's v_fma_f32 (which the division's residuals rely on) against exact rationals."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if abs(exact) >= Fraction(float(np.finfo(np.float32).max)):
        return
    got = fma_rounded_once(*(np.array([v], np.float32) for v in (a, b, c)))[0]
    # an exact zero takes its sign from IEEE's rules, which float64 follows (a * b is exact there)
    expected = round_to_f32(exact) if exact != 0 else np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert got.view(np.uint32) == expected.view(np.uint32)
