"""Triton's precision contract: on f32, `/` and tl.sqrt may be approximate (div.full.f32,
sqrt.approx); tl.div_rn and tl.sqrt_rn round correctly; other dtypes always round correctly."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl


@tile.jit
def precision_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if PRECISE:
        tl.store(out_ptr + offs, tl.div_rn(x, y) + tl.sqrt_rn(x))
    else:
        tl.store(out_ptr + offs, x / y + tl.sqrt(x))


@pytest.mark.parametrize("dtype, precise, approx", [(np.float32, False, True), (np.float32, True, False),
                                                     (np.float64, False, False)])
def test_approx_marks_only_f32_division_and_sqrt(dtype, precise, approx):
    x = np.ones(64, dtype)
    text = str(tile.dump(precision_kernel, x, x, x, BLOCK=64, PRECISE=precise, stage="tile"))
    assert ("arith.div" in text) and ("math.sqrt" in text)
    assert ("approx = true" in text) == approx
    ptx = str(tile.dump(precision_kernel, x, x, x, BLOCK=64, PRECISE=precise, stage="ptx", target="sm_90a"))
    assert ("div.full.f32" in ptx and "sqrt.approx.ftz.f32" in ptx) == approx


def test_results_within_the_stated_bounds(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    rng = np.random.default_rng(0)
    x = rng.random(64).astype(np.float32) + 0.5
    y = rng.random(64).astype(np.float32) + 0.5
    for precise in (False, True):
        out = np.full(64, np.nan, np.float32)
        precision_kernel[(1,)](x, y, out, BLOCK=64, PRECISE=precise)
        expected = x.astype(np.float64) / y + np.sqrt(x.astype(np.float64))
        np.testing.assert_allclose(out, expected, rtol=3 * 2.0**-23)
