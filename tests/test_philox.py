"""tl.rand* (Philox4x32-10 written in tile language) against the independent NumPy reference:
bit-exact integers, float32-exact uniforms, and the distributions of rand/randn."""
from __future__ import annotations

import numpy as np
import philox_reference as ref
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl


def test_reference_known_answers():
    """Random123's known-answer vectors for philox4x32_10 (kat_vectors)."""
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, want in cases:
        assert tuple(int(v) for v in ref.philox4x32(counter, key)) == want


@tile.jit
def randint4x_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out_ptr + offs, a, mask=mask)
    tl.store(out_ptr + n + offs, b, mask=mask)
    tl.store(out_ptr + 2 * n + offs, c, mask=mask)
    tl.store(out_ptr + 3 * n + offs, d, mask=mask)


@given(seed=st.one_of(st.integers(0, 2**31 - 1), st.integers(-2**31, -1), st.integers(2**31, 2**63 - 1)),
       n=st.integers(1, 300))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_randint4x_is_bit_exact(arrays, seed, n):
    out = arrays.put(poison(4 * n, np.uint32))
    randint4x_kernel[(tile.cdiv(n, 128),)](out, seed, n, BLOCK=128)
    want = np.stack(ref.randint4x(seed, np.arange(n)))
    np.testing.assert_array_equal(arrays.get(out).reshape(4, n), want)


@tile.jit
def random_kernel(out_ptr, seed, offset, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if KIND == "randint":
        x = tl.randint(seed, offs + offset)
    elif KIND == "rand":
        x = tl.rand(seed, offs + offset)
    else:
        x = tl.randn(seed, offs + offset)
    tl.store(out_ptr + offs, x, mask=mask)


def run_random(arrays, kind: str, seed: int, n: int, offset: int = 0) -> np.ndarray:
    out = arrays.put(poison(n, np.uint32 if kind == "randint" else np.float32))
    random_kernel[(tile.cdiv(n, 256),)](out, seed, offset, n, KIND=kind, BLOCK=256)
    return arrays.get(out)


def test_randint_and_rand_match_the_reference(arrays):
    offs = np.arange(1000) + 12345
    np.testing.assert_array_equal(run_random(arrays, "randint", 7, 1000, 12345), ref.randint4x(7, offs)[0])
    np.testing.assert_array_equal(run_random(arrays, "rand", 7, 1000, 12345), ref.rand(7, offs))
    np.testing.assert_allclose(run_random(arrays, "randn", 7, 1000, 12345), ref.randn(7, offs), rtol=1e-5,
                               atol=1e-5)


def test_seed_one_is_specialized_but_identical(arrays):
    # an int argument equal to 1 is folded into the kernel: the numbers must not change
    np.testing.assert_array_equal(run_random(arrays, "randint", 1, 64), ref.randint4x(1, np.arange(64))[0])


@pytest.mark.parametrize("seed", [0, 123456789])
def test_distributions(arrays, seed):
    n = 1 << 16
    u = run_random(arrays, "rand", seed, n).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    hist, _ = np.histogram(u, bins=16, range=(0, 1))
    chi2 = ((hist - n / 16) ** 2 / (n / 16)).sum()
    assert chi2 < 45  # 15 degrees of freedom: p ~ 1e-4
    z = run_random(arrays, "randn", seed, n).astype(np.float64)
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.01
    # different seeds and offsets give different streams
    assert not np.array_equal(run_random(arrays, "randint", seed, 64), run_random(arrays, "randint", seed + 1, 64))
    assert not np.array_equal(run_random(arrays, "randint", seed, 64), run_random(arrays, "randint", seed, 64, 64))
