"""tl.sin and tl.cos on gfx942: the shared reduction to [-pi, pi] (tile.codegen.math_lib), then
v_sin_f32 / v_cos_f32 on the argument in revolutions; run on the emulator against NumPy in
float64, with the absolute error of the GPU's approximate sine (as sin.approx.f32 on PTX)."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl

from amdgcn_util import needs_llvm
from test_amdgcn_sim import run
from tile.codegen.amdgcn import assemble

RNG = np.random.default_rng(77)


@tile.jit
def trig_kernel(x_ptr, sin_ptr, cos_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(sin_ptr + offsets, tl.sin(x), mask=mask)
    tl.store(cos_ptr + offsets, tl.cos(x), mask=mask)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_sine_and_cosine(scale):
    n = 1000
    x = (RNG.uniform(-1, 1, n) * scale).astype(np.float32)
    sines, cosines = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    run(trig_kernel, (x, sines, cosines, n), 4, BLOCK=256)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(sines, np.sin(x64), atol=2e-6 * scale)
    np.testing.assert_allclose(cosines, np.cos(x64), atol=2e-6 * scale)


@needs_llvm
def test_trig_assembles():
    x = np.ones(64, np.float32)
    text = tile.dump(trig_kernel, x, x, x, 64, BLOCK=64, stage="amdgcn", target="gfx942")
    assert "v_sin_f32" in str(text) and assemble(str(text), "gfx942")[:4] == b"\x7fELF"
