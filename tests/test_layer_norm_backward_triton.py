"""Triton's own layer-norm tutorial kernels (05-layer-norm.py: forward, backward with the spin
lock and fp16 partial sums, and the dW/dB reduction), unchanged, on tile's interpreter through
`import triton` resolved to tile. Triton's tutorials are not part of this repository: the test
reads the untracked copy in .triton_tutorials/ (or $TRITON_TUTORIALS_DIR) and skips without it;
tutorial 09 covers the same features in CI."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TUTORIALS = Path(os.environ.get("TRITON_TUTORIALS_DIR", REPO / ".triton_tutorials"))


def jit_kernels_source(tutorial: str) -> str:
    """The @triton.jit functions of one of Triton's tutorials, as a module of their own."""
    path = TUTORIALS / tutorial
    if not path.exists():
        pytest.skip(f"Triton's tutorial {path} is not here (an untracked copy, absent in CI)")
    text = path.read_text()
    lines = text.splitlines()
    kernels = ["\n".join(lines[node.decorator_list[0].lineno - 1:node.end_lineno]) for node in ast.parse(text).body
               if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)]
    assert kernels, f"no @triton.jit kernels in {path}"
    return "import triton\nimport triton.language as tl\n\n\n" + "\n\n\n".join(kernels) + "\n"


def run_with_tile_as_triton(tmp_path: Path, tutorial: str, driver: str) -> str:
    """Write the tutorial's kernels to kernels.py, run `driver` with `python -m tile.triton` on
    the interpreter; its stdout."""
    (tmp_path / "kernels.py").write_text(jit_kernels_source(tutorial))
    (tmp_path / "driver.py").write_text(textwrap.dedent(driver))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILE_", "TRITON_"))}
    env.update(TILE_INTERPRET="1", TILE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}")
    proc = subprocess.run([sys.executable, "-m", "tile.triton", str(tmp_path / "driver.py")], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


LAYER_NORM_DRIVER = """
    import numpy as np
    import triton
    from kernels import _layer_norm_bwd_dwdb, _layer_norm_bwd_dx_fused, _layer_norm_fwd_fused

    rng = np.random.default_rng(0)
    M, N, GROUP_SIZE_M, BLOCK = 150, 200, 16, 256
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float16)
    w, b = rng.random(N).astype(np.float16), rng.random(N).astype(np.float16)
    dy = (0.1 * rng.standard_normal((M, N))).astype(np.float16)
    y = np.full((M, N), np.nan, np.float16)
    mean, rstd = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, N, N, 1e-5, BLOCK_SIZE=BLOCK)
    locks = np.zeros(2 * GROUP_SIZE_M, np.int32)
    partial_dw, partial_db = np.zeros((GROUP_SIZE_M, N), np.float16), np.zeros((GROUP_SIZE_M, N), np.float16)
    dx = np.full((M, N), np.nan, np.float16)
    _layer_norm_bwd_dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, N, N,
                                   GROUP_SIZE_M=GROUP_SIZE_M, BLOCK_SIZE_N=BLOCK)
    dw, db = np.full(N, np.nan, np.float16), np.full(N, np.nan, np.float16)
    _layer_norm_bwd_dwdb[(triton.cdiv(N, 128),)](partial_dw, partial_db, dw, db, GROUP_SIZE_M, N,
                                                 BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)

    x64, w64, b64, dy64 = (a.astype(np.float64) for a in (x, w, b, dy))
    mu = x64.mean(axis=1, keepdims=True)
    rs = 1 / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
    xhat = (x64 - mu) * rs
    c1 = (xhat * w64 * dy64).mean(axis=1, keepdims=True)
    c2 = (w64 * dy64).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(y, xhat * w64 + b64, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(dx, (w64 * dy64 - (xhat * c1 + c2)) * rs, rtol=2e-3, atol=1e-4)
    # Triton keeps the partial sums in fp16: about 10 rows per buffer, each sum rounded to fp16
    np.testing.assert_allclose(dw, (dy64 * xhat).sum(axis=0), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(db, dy64.sum(axis=0), rtol=1e-2, atol=1e-2)
    assert (locks[:GROUP_SIZE_M] == 0).all() and (locks[GROUP_SIZE_M:] == 1).all()
    print("05-layer-norm kernels OK")
"""


def test_triton_layer_norm_tutorial_kernels_run_on_tile(tmp_path):
    out = run_with_tile_as_triton(tmp_path, "05-layer-norm.py", LAYER_NORM_DRIVER)
    assert out.strip().endswith("05-layer-norm kernels OK")
