"""Helpers for testing and benchmarking kernels."""
from __future__ import annotations

from typing import Any

import numpy as np


def _host(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__ == "torch":
        t = x.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-8, err_msg: str = "") -> None:
    """Assert |actual - expected| <= atol + rtol * |expected| elementwise, for any array type tile accepts.

    NaNs must match NaNs; the message reports the worst element and how many elements differ.
    """
    a = _host(actual).astype(np.float64) if _host(actual).dtype != np.bool_ else _host(actual)
    e = _host(expected).astype(np.float64) if _host(expected).dtype != np.bool_ else _host(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{err_msg} shapes differ: {a.shape} vs {e.shape}".strip())
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        bad = a != e
    else:
        both_nan = np.isnan(a) & np.isnan(e)
        bad = ~both_nan & ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    if bad.any():
        idx = np.unravel_index(np.argmax(bad), bad.shape)
        raise AssertionError(
            f"{err_msg} {int(bad.sum())} of {bad.size} elements differ (rtol={rtol}, atol={atol}); "
            f"first at {tuple(int(i) for i in idx)}: {a[idx]!r} vs expected {e[idx]!r}".strip())
