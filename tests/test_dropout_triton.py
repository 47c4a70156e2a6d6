"""Triton's own low-memory-dropout tutorial kernels (04-low-memory-dropout.py: dropout with a
stored keep-mask, and seeded dropout with tl.rand), unchanged, on tile's interpreter through
`import triton` resolved to tile; skipped without the untracked copy of Triton's tutorials
(tutorial 08 covers the same features in CI)."""
from __future__ import annotations

from pathlib import Path

from test_layer_norm_backward_triton import run_with_tile_as_triton

DROPOUT_DRIVER = """
    import numpy as np
    import philox_reference as ref
    from kernels import _dropout, _seeded_dropout

    n, p = 3000, 0.4
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    keep = (np.random.default_rng(1).random(n) > p).astype(np.int32)
    out = np.full(n, np.nan, np.float32)
    _dropout[(3,)](x, keep, out, n, p, BLOCK_SIZE=1024)
    np.testing.assert_allclose(out, np.where(keep == 1, x.astype(np.float64) / (1 - p), 0), rtol=3e-7)
    for seed in (123, 512):
        out = np.full(n, np.nan, np.float32)
        _seeded_dropout[(3,)](x, out, n, p, seed, BLOCK_SIZE=1024)
        kept = ref.rand(seed, np.arange(n)) > np.float32(p)
        np.testing.assert_array_equal(out != 0, kept)
        np.testing.assert_allclose(out, np.where(kept, x.astype(np.float64) / (1 - p), 0), rtol=3e-7)
    print("04-low-memory-dropout kernels OK")
"""


def test_triton_dropout_tutorial_kernels_run_on_tile(tmp_path):
    (tmp_path / "philox_reference.py").write_text((Path(__file__).parent / "philox_reference.py").read_text())
    out = run_with_tile_as_triton(tmp_path, "04-low-memory-dropout.py", DROPOUT_DRIVER)
    assert out.strip().endswith("04-low-memory-dropout kernels OK")
