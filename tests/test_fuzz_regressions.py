"""Shrunk programs the compiler fuzzer (tests/test_fuzz.py) found bugs with, kept as regressions.

Each runs on the interpreter against NumPy; tests/conftest.py also compiles it to PTX for
sm_80, sm_90 and sm_90a and assembles it with ptxas, and where the bug was in lowering the
simt IR runs on tests/simt_interp.py too.
"""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from test_codegen_e2e import launch, out_of


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")


@tile.jit
def cumsum_of_dot_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(tl.dot(x, x), axis=0))


def test_cumsum_of_a_dot_result(interpret):
    """A scan of a dot's result took the #mma layout, whose axis bits mix lanes and registers
    in an order the scan lowering cannot scan ("unsupported scan layout"): the scan now keeps
    only layouts it can scan (tile.ir.gpu_ops.scan_layout_ok) and converts the others."""
    x = (np.random.default_rng(0).integers(-8, 9, (32, 32)) / 4).astype(np.float32)
    want = np.cumsum(x.astype(np.float64) @ x, axis=0)
    out = np.full((32, 32), np.nan, np.float32)
    cumsum_of_dot_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, want)
    m, dev, _, runtime = launch(cumsum_of_dot_kernel, (1, 1, 1), [x, np.full_like(out, np.nan)], {"BLOCK": 32},
                                target="sm_80")
    np.testing.assert_array_equal(out_of(m, dev, runtime, runtime[1]), want)


@tile.jit
def flip_of_one_element_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    top = tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0, keep_dims=True)
    tl.store(out_ptr + tl.arange(0, 1), tl.flip(top, 0))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_flip_of_a_length_one_dimension(interpret, monkeypatch, target):
    """tl.flip of a (1,) block reshaped it to the hypercube of its dimension, () here, which
    reshape refuses ("the shape must be positive compile-time integers, got ()"): reversing
    one element now gives the block back. Found by tests/test_fuzz_emulator.py."""
    x = np.random.default_rng(1).integers(-100, 100, 8).astype(np.int32)
    out = np.full(1, -1, np.int32)
    flip_of_one_element_kernel[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [x.max()])
    monkeypatch.delenv("TILE_INTERPRET")
    out = np.full(1, -1, np.int32)
    tile.emulate(flip_of_one_element_kernel, target=target)[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [x.max()])
