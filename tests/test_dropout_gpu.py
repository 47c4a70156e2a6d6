"""Tutorial 08's dropout on a GPU at full size: bit-exact against the NumPy Philox reference and
identical to the interpreter. Skipped without a CUDA device."""
from __future__ import annotations

import numpy as np
import pytest
from test_dropout import dropout, expected_dropout

import tile

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def on_gpu(monkeypatch):
    monkeypatch.delenv("TILE_INTERPRET", raising=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_full_size_dropout_is_bit_exact(dtype):
    n = (1 << 24) + 3
    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    out = dropout.seeded_dropout(tile.to_device(x), 0.2, 31337).numpy()
    np.testing.assert_array_equal(out, expected_dropout(x, 0.2, 31337))


def test_gpu_and_interpreter_agree():
    dropout.check_interpreter_matches_gpu(100_003)
