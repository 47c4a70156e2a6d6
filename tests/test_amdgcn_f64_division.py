"""f64 division on gfx942 and gfx90a (isel.divide_f64: v_div_scale_f64, v_rcp_f64, Newton steps
in v_fma_f64, the neighbour test, v_div_fmas_f64, v_div_fixup_f64), run on the wave model whose
v_rcp_f64 is as coarse as the ISA allows (2^28 ulp off) and whose v_fma_f64 rounds once: every
quotient equals NumPy's correctly rounded one bit for bit, zeros' signs and NaN included, for
random operands (hypothesis) and the edge values (zeros, infinities, NaN, subnormals, the
largest and smallest normals, quotients that overflow or underflow)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble
from tile.emulator.amdgcn_isa import coarse_reciprocal_f64, fma_f64

from amdgcn_util import needs_llvm

BLOCK = 128


@tile.jit
def divide(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) / tl.load(y_ptr + offs, mask=mask), mask=mask)


@tile.jit
def divide_by_scalar(x_ptr, out_ptr, y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) / y)


def same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where `got` is `want` exactly (the sign of a zero too); any NaN matches any NaN."""
    return (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))


def run_division(x: np.ndarray, y: np.ndarray, target: str = "gfx942") -> np.ndarray:
    out = np.full(len(x), 7.0)   # poisoned
    tile.emulate(divide, target=target)[(tile.cdiv(len(x), BLOCK),)](x, y, out, len(x), BLOCK=BLOCK, num_warps=2)
    return out


def check(x: np.ndarray, y: np.ndarray, target: str = "gfx942") -> None:
    got = run_division(x, y, target)
    with np.errstate(all="ignore"):
        want = x / y
    bad = np.flatnonzero(~same_bits(got, want))
    assert not bad.size, [(x[i], y[i], got[i], want[i]) for i in bad[:5]]


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                  2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0, 3.0, 0.1,
                  1e-300, 1e300, 2.0 ** -1000, 2.0 ** 1000, 1.9999999999999998, 1.0000000000000002, 7.0 / 3.0])


@needs_llvm
@pytest.mark.parametrize("target", ["gfx942", "gfx90a"])
def test_edge_values_divide_as_ieee_says(target):
    x, y = (a.ravel() for a in np.meshgrid(EDGES, EDGES))
    check(x, y, target)
    text = str(tile.dump(divide, x, y, x, len(x), BLOCK=BLOCK, num_warps=2, stage="amdgcn", target=target))
    assert "v_div_fixup_f64" in text and assemble(text, target)[:4] == b"\x7fELF"


f64 = st.floats(allow_nan=True, allow_infinity=True, width=64)
magnitudes = st.builds(lambda m, e: m * 2.0 ** e, st.floats(1.0, 2.0, exclude_max=True), st.integers(-1074, 1023))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(f64, f64), min_size=1, max_size=BLOCK),
       st.lists(st.tuples(magnitudes, magnitudes, st.booleans()), min_size=1, max_size=BLOCK))
def test_quotients_are_correctly_rounded(pairs, scaled):
    """Any f64 pairs, and pairs spread over the whole exponent range (subnormal and
    overflowing quotients among them)."""
    x = np.array([a for a, _ in pairs] + [a * (-1 if s else 1) for a, _, s in scaled])
    y = np.array([b for _, b in pairs] + [b for _, b, _ in scaled])
    check(x, y)


def test_quotients_near_ties():
    """Quotients whose exact value lies within an ulp's fraction of the midpoint between two
    f64 (where a reciprocal one ulp off, or a single correction, rounds the wrong way):
    x = RN((q + ulp(q) / 2) * y)."""
    rng = np.random.default_rng(3)
    y = 1.0 + rng.integers(1, 1 << 52, 256) * 2.0 ** -52
    q = 1.0 + rng.integers(1, 1 << 52, 256) * 2.0 ** -52
    x = np.array([float((Fraction(a) + Fraction(np.spacing(a)) / 2) * Fraction(b)) for a, b in zip(q, y)])
    check(x, y)
    check(np.nextafter(x, np.inf), y)
    check(-x, y)


def test_dividing_by_a_kernel_argument():
    x = np.random.default_rng(5).standard_normal(64)
    out = np.full(64, 7.0)
    tile.emulate(divide_by_scalar, target="gfx942")[(1,)](x, out, 3.0, BLOCK=64, num_warps=2)
    assert same_bits(out, x / 3.0).all()


def test_the_model_instructions_are_as_coarse_and_exact_as_the_isa_allows():
    a = np.array([3.0, 0.1, 2.0, -4.0, 0.0, np.inf])
    r = coarse_reciprocal_f64(a)
    with np.errstate(divide="ignore"):
        assert (r[2:] == 1 / a[2:]).all()
    assert (np.abs(r[:2] - 1 / a[:2]) == (1 << 28) * np.spacing(1 / a[:2])).all()
    near_one = np.array([1 + 2.0 ** -30]), np.array([1 - 2.0 ** -30])   # product 1 - 2^-60: not an f64
    assert fma_f64(*near_one, np.array([-1.0]))[0] == -2.0 ** -60   # one rounding (two would give 0)
