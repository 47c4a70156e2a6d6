"""Tutorial 08 (low-memory dropout): the kernel against an independent NumPy Philox, on the
interpreter and on the lowered per-thread code (the bits the GPU computes), and the host
wrapper's checks."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import philox_reference as ref
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codegen_e2e import launch, out_of
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

import tile

_PATH = os.path.join(os.path.dirname(__file__), "..", "tutorials", "08_low_memory_dropout.py")
_spec = importlib.util.spec_from_file_location("tutorial_08_low_memory_dropout", _PATH)
dropout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dropout)


def dropout_uniforms(seed: int, n: int) -> np.ndarray:
    """The tutorial's uniform of each of n elements: word i % 4 of Philox at counter i // 4."""
    words = ref.randint4x(seed, np.arange(-(-n // 4)))
    return ref.uniform(np.stack(words, axis=1).reshape(-1).astype(np.uint32))[:n]


def expected_dropout(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    """The kernel's result computed in NumPy: keep where the element's uniform > p, x * (1 / (1 - p)) in fp32."""
    keep = dropout_uniforms(seed, x.size) > np.float32(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = x.astype(np.float32) * (np.float32(1) / (np.float32(1) - np.float32(p)))
    return np.where(keep, scaled, np.float32(0)).astype(x.dtype)


SEEDS = st.one_of(st.integers(0, 2**31 - 1), st.integers(2**32, 2**63 - 1), st.integers(-2**31, -1))


@given(n=st.integers(1, 5000), p=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), seed=SEEDS,
       rng_seed=st.integers(0, 2**32 - 1))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_dropout_matches_the_philox_reference_bit_for_bit(arrays, n, p, seed, rng_seed):
    x = np.random.default_rng(rng_seed).standard_normal(n).astype(np.float32)
    out = arrays.put(poison(n, np.float32))
    dropout.launch_dropout(arrays.put(x), out, p, seed)
    np.testing.assert_array_equal(arrays.get(out).view(np.uint32), expected_dropout(x, p, seed).view(np.uint32))


def test_dropout_of_fp16_scales_in_fp32_and_rounds_once(arrays):
    x = np.random.default_rng(3).standard_normal(3000).astype(np.float16)
    out = arrays.put(poison(3000, np.float16))
    dropout.launch_dropout(arrays.put(x), out, 0.3, 77)
    np.testing.assert_array_equal(arrays.get(out), expected_dropout(x, 0.3, 77))


def test_the_mask_depends_on_seed_and_offset_only(arrays):
    """Same seed: the same mask whatever the block size; the backward pass regenerates it."""
    n = 2500
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    masks = []
    for block in (128, 1024):
        out = arrays.put(poison(n, np.float32))
        dropout.seeded_dropout_kernel[(tile.cdiv(n, block),)](arrays.put(x), out, n, 0.4, 99, BLOCK=block)
        masks.append(arrays.get(out) != 0)
    assert np.array_equal(masks[0], masks[1])
    assert 0.5 < masks[0].mean() < 0.7


@pytest.mark.parametrize("p, seed, message", [(-0.1, 1, r"p must be in \[0, 1\], got -0.1"),
                                              (1.5, 1, r"p must be in \[0, 1\], got 1.5"),
                                              (0.5, 2**64, "seed must fit in 64 bits")])
def test_bad_arguments_are_refused_by_the_host_wrapper(p, seed, message):
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match=message):
        dropout.launch_dropout(x, np.empty_like(x), p, seed)


@pytest.mark.parametrize("seed", [123, 2**40 + 5])
def test_lowered_kernel_computes_the_interpreters_bits(monkeypatch, seed):
    """tl.rand4x in the per-thread code the PTX is printed from (run on tile.emulator)
    gives exactly the tile interpreter's bits, and both the reference's."""
    n, block = 700, 256
    x = np.random.default_rng(seed % 1000).standard_normal(n).astype(np.float32)
    out = poison(n, np.float32)
    grid = (tile.cdiv(n, block),)
    m, dev, _, runtime = launch(dropout.seeded_dropout_kernel, grid, (x, out, n, 0.25, seed), {"BLOCK": block})
    lowered = out_of(m, dev, runtime, out)
    monkeypatch.setenv("TILE_INTERPRET", "1")
    interpreted = poison(n, np.float32)
    dropout.seeded_dropout_kernel[grid](x, interpreted, n, 0.25, seed, BLOCK=block)
    np.testing.assert_array_equal(lowered.view(np.uint32), interpreted.view(np.uint32))
    np.testing.assert_array_equal(interpreted.view(np.uint32), expected_dropout(x, 0.25, seed).view(np.uint32))
