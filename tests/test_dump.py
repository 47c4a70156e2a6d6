"""tile.dump: every stage without a GPU, what earlier launches compiled, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.compiler import STAGES


@tile.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


X = np.ones(1000, np.float32)


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_dumps_without_a_gpu(stage):
    target = "gfx942" if stage == "amdgcn" else "sm_90a"
    text = str(tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage=stage, target=target))
    expected = {"tile": "tt.load", "tile-opt": "tt.load", "passes": "after canonicalize", "gpu": "#blocked",
                "simt": "simt.", "ptx": ".target sm_90a", "amdgcn": ".amdhsa_kernel double_kernel"}[stage]
    assert expected in text


def test_ptx_targets_and_source_lines():
    for target in ("sm_80", "sm_90", "sm_90a"):
        ptx = str(tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage="ptx", target=target))
        assert f".target {target}" in ptx
    assert "test_dump.py:16" in ptx  # instructions are tied back to the kernel's source lines


def test_dump_shows_earlier_launches(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")

    @tile.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

    with pytest.raises(ValueError, match="has not been launched yet"):
        tile.dump(k)
    x = np.zeros(16, np.float32)
    k[(1,)](x, BLOCK=16)
    shown = tile.dump(k)
    assert "tt.store" in str(shown) and "interpreter" in str(shown)
    assert "```" in shown._repr_markdown_()  # renders as code in Jupyter


def test_bad_stage_and_target_are_clear_errors():
    with pytest.raises(ValueError, match="unknown stage 'llvm'"):
        tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage="llvm")
    with pytest.raises(ValueError, match="needs a GPU target"):
        tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage="ptx", target="interpreter")


def test_dump_options_change_the_gpu_code():
    four = str(tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage="ptx", target="sm_90a", num_warps=4))
    two = str(tile.dump(double_kernel, X, X, 1000, BLOCK=256, stage="ptx", target="sm_90a", num_warps=2))
    assert ".maxntid 128" in four and ".maxntid 64" in two


def test_dump_unwraps_autotuned_kernels(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    tuned = tile.autotune(configs=[tile.Config({"BLOCK": 64}), tile.Config({"BLOCK": 128})], key=["n"])(
        double_kernel)
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    out = np.full(300, np.nan, np.float32)
    tuned[lambda meta: (tile.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    np.testing.assert_allclose(out, 2.0 * x.astype(np.float64), rtol=1e-6)
    assert "tt.func" in str(tile.dump(tuned))
    assert ".target sm_80" in str(tile.dump(tuned, x, out, 300, BLOCK=64, stage="ptx", target="sm_80"))
