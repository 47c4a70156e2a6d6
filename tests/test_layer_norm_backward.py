"""Tutorial 09 (layer norm forward and backward, dW/dB under a spin lock) on the interpreter
against float64 NumPy, the lock kernel's partial sums and first-writer logic on poisoned
buffers, its running time on the interpreter, its PTX, and the host wrappers' checks."""
from __future__ import annotations

import importlib.util
import os
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile

_PATH = os.path.join(os.path.dirname(__file__), "..", "tutorials", "09_layer_norm_backward.py")
_spec = importlib.util.spec_from_file_location("tutorial_09_layer_norm_backward", _PATH)
lnb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lnb)


@pytest.fixture(autouse=True)
def on_interpreter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")


@given(rows=st.integers(1, 70), cols=st.integers(1, 300), groups=st.integers(0, 9))
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
def test_forward_and_backward_match_float64_numpy(rows, cols, groups):
    lnb.check(rows, cols, group_size_m=groups)


def test_lock_kernel_finishes_in_seconds_at_the_tutorials_shapes():
    lnb.check(130, 64, group_size_m=8)  # compile once
    start = time.perf_counter()
    lnb.check(48, 300)
    lnb.check(130, 64, group_size_m=8)
    assert time.perf_counter() - start < 5


def _inputs(rows: int, cols: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = (-2.3 + 0.5 * rng.standard_normal((rows, cols))).astype(np.float16)
    dy = (0.1 * rng.standard_normal((rows, cols))).astype(np.float16)
    w = rng.random(cols).astype(np.float16)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    rstd = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    return x, dy, w, mean.astype(np.float32), rstd.astype(np.float32)


@pytest.mark.parametrize("rows, groups", [(37, 5), (8, 8), (3, 16)])
def test_partial_sums_start_from_poisoned_buffers(rows, groups):
    """Each buffer's first writer stores, the others add under the lock: NaN-poisoned buffers
    of used groups end holding their rows' sums; unused groups keep the poison."""
    cols = 100
    x, dy, w, mean, rstd = _inputs(rows, cols)
    dx = np.full((rows, cols), np.nan, np.float16)
    partial_dw = np.full((groups, cols), np.nan, np.float32)
    partial_db = np.full((groups, cols), np.nan, np.float32)
    locks = np.zeros(2 * groups, np.int32)
    lnb.layer_norm_bwd_dx_fused_kernel[(rows,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, cols, cols,
                                                GROUP_SIZE_M=groups, BLOCK_SIZE_N=128)
    xhat = (x.astype(np.float64) - mean[:, None].astype(np.float64)) * rstd[:, None].astype(np.float64)
    for g in range(groups):
        members = np.arange(g, rows, groups)
        if members.size == 0:
            assert np.isnan(partial_dw[g]).all() and np.isnan(partial_db[g]).all()
            continue
        np.testing.assert_allclose(partial_db[g], dy[members].astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(partial_dw[g], (dy[members] * xhat[members]).sum(axis=0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(locks[:groups], 0)  # every lock released
    np.testing.assert_array_equal(locks[groups:], [1 if g < rows else 0 for g in range(groups)])
    assert np.isfinite(dx).all()


@pytest.mark.parametrize("call, message", [
    (lambda: lnb.launch_config(40000, 2), "do not fit in one block of 65536 bytes: this layer norm supports at "
                                          "most 32768 features"),
    (lambda: lnb.layer_norm_forward(np.ones(4, np.float16), np.ones(4, np.float16), np.ones(4, np.float16)),
     r"x must be 2-D \(rows, features\), got shape \(4,\)"),
    (lambda: lnb.layer_norm_forward(np.ones((2, 4), np.float16), np.ones(5, np.float16), np.ones(5, np.float16)),
     r"w must have shape \(4,\) for x of shape \(2, 4\), got \(5,\)"),
    (lambda: lnb.layer_norm_backward(np.ones((2, 3), np.float16), np.ones((2, 4), np.float16), np.ones(4, np.float16),
                                     np.ones(2, np.float32), np.ones(2, np.float32)),
     r"dy must have shape \(2, 4\), got \(2, 3\)"),
    (lambda: lnb.layer_norm_backward(np.ones((2, 4), np.float16), np.ones((2, 4), np.float16), np.ones(4, np.float16),
                                     np.ones(2, np.float32), np.ones(2, np.float32), group_size_m=-1),
     "group_size_m must be positive"),
])
def test_bad_input_gets_a_clear_error_from_the_host_wrappers(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_ptx_of_the_lock_loop_and_vector_accesses():
    """sm_90a PTX at M=4096, N=4096: the spin loop is one thread's atom.cas broadcast through
    shared memory to the program, the row accesses are 16-byte vectors."""
    rows, cols = 4096, 4096
    h, f = (lambda *s: np.zeros(s, np.float16)), (lambda *s: np.zeros(s, np.float32))
    block, warps = lnb.launch_config(cols, 2)
    groups = lnb.group_size(cols, rows)
    ptx = str(tile.dump(lnb.layer_norm_bwd_dx_fused_kernel, h(rows, cols), h(rows, cols), f(groups, cols),
                        f(groups, cols), h(rows, cols), h(cols), f(rows), f(rows), np.zeros(2 * groups, np.int32),
                        cols, cols, GROUP_SIZE_M=groups, BLOCK_SIZE_N=block, num_warps=warps, stage="ptx",
                        target="sm_90a"))
    loops = [body for body in re.findall(r"(\$L__\w+):\n(.*?)bra\.uni \1;", ptx, re.DOTALL) if "cas" in body[1]]
    assert len(loops) == 1
    loop = loops[0][1]
    assert len(re.findall(r"@%p\d+ atom\.global\.acq_rel\.gpu\.cas\.b32", loop)) == 1
    assert loop.count("bar.sync") == 2 and "st.shared.b32" in loop and "ld.shared.b32" in loop
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx  # partial sums, 4 floats per access
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx  # fp16 rows, 8 halves per access
