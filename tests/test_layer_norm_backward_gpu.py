"""Tutorial 09 on a GPU: layer norm forward and backward (the spin-lock kernel with real
contention) against float64 NumPy at full and at small shapes. Skipped without a CUDA device."""
from __future__ import annotations

import pytest
from test_layer_norm_backward import lnb

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def on_gpu(monkeypatch):
    monkeypatch.delenv("TILE_INTERPRET", raising=False)


@pytest.mark.parametrize("rows, cols, groups", [(1151, 8192, 0), (4096, 1000, 0), (4096, 4096, 0), (37, 100, 4),
                                                (2048, 64, 1)])
def test_layer_norm_forward_and_backward(rows, cols, groups):
    lnb.check(rows, cols, group_size_m=groups)
