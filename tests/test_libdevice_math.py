"""The accuracy of tile.language.extra.libdevice: every function on about a thousand arguments per
dtype (random over its whole domain, denser where it is delicate, plus edge values: signed zeros,
subnormals, the largest floats, domain edges, thresholds of overflow and underflow), against
mpmath, in ulps of the exact result (absolute errors for Bessel functions away from the origin).

The bounds in libm_cases.CASES are the measured maxima rounded up to a half ulp; the module
docstrings of tile/language/extra quote them. One kernel per group of functions applies all its
functions (one compilation, assembled by the conftest fixture for every target); the same test
runs on a GPU (marked gpu), where a fused multiply-add may change a result by a rounding.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tile
import tile.language as tl
from libm_cases import CASES, GROUPS, abs_error, draw_inputs, exact, ulp_error
from test_language import arrays  # noqa: F401  (a fixture)
from tile.language.extra import libdevice

BLOCK = 128
MAX_ARITY = 4


@tile.jit
def group_kernel(x_ptr, out_ptr, n, FNS: tl.constexpr, ARITY: tl.constexpr, INT_ORDER: tl.constexpr,
                 BLOCK: tl.constexpr):
    """out[i, :] = FNS[i](x[i, 0, :], ..., x[i, ARITY[i] - 1, :]) (an int32 order first for jn, yn)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    for i in tl.static_range(len(FNS)):
        row = x_ptr + i * 4 * n + offs
        a = tl.load(row, mask=mask, other=1.0)
        if INT_ORDER[i]:
            y = FNS[i](a.to(tl.int32), tl.load(row + n, mask=mask, other=1.0))
        elif ARITY[i] == 1:
            y = FNS[i](a)
        elif ARITY[i] == 2:
            y = FNS[i](a, tl.load(row + n, mask=mask, other=1.0))
        elif ARITY[i] == 3:
            y = FNS[i](a, tl.load(row + n, mask=mask, other=1.0), tl.load(row + 2 * n, mask=mask, other=1.0))
        else:
            y = FNS[i](a, tl.load(row + n, mask=mask, other=1.0), tl.load(row + 2 * n, mask=mask, other=1.0),
                       tl.load(row + 3 * n, mask=mask, other=1.0))
        tl.store(out_ptr + i * n + offs, y, mask=mask)


@functools.lru_cache(maxsize=None)
def prepared(group: str, dtype: str):
    """The group's cases, their stacked arguments [case, argument, point], and exact results."""
    dt = np.dtype(dtype)
    cases = [c for c in CASES if c.group == group]
    inputs = [draw_inputs(c, dt) for c in cases]
    n = max(len(args[0]) for args in inputs)
    stacked = np.ones((len(cases), MAX_ARITY, n), dt)
    for i, args in enumerate(inputs):
        for j, a in enumerate(args):
            stacked[i, j, :len(a)] = a
            stacked[i, j, len(a):] = a[0]
    refs = [exact(c, args, dt) for c, args in zip(cases, inputs)]
    return cases, inputs, stacked, refs


def errors(case, args, result, hi, lo, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(ulp errors, absolute errors): each element is measured one way, the other is 0."""
    use_abs = case.abs_region(args) if case.abs_region is not None else np.zeros(len(result), bool)
    ulps = np.where(use_abs, 0.0, ulp_error(result, hi, lo))
    absolute = np.where(use_abs, abs_error(result, hi), 0.0)
    return ulps, absolute


def run_group(arrays, group: str, dtype: str):
    cases, inputs, stacked, refs = prepared(group, dtype)
    n = stacked.shape[2]
    out = arrays.put(np.full((len(cases), n), np.nan, stacked.dtype))
    fns = tuple(getattr(libdevice, c.name) for c in cases)
    group_kernel[(tile.cdiv(n, BLOCK),)](arrays.put(stacked), out, n, FNS=fns, ARITY=tuple(c.arity for c in cases),
                                         INT_ORDER=tuple(c.int_order for c in cases), BLOCK=BLOCK)
    return cases, inputs, arrays.get(out), refs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("group", GROUPS)
def test_accuracy_within_the_stated_bounds(group, dtype, arrays):
    cases, inputs, out, refs = run_group(arrays, group, dtype)
    wide = dtype == "float64"
    failures = []
    for i, (case, args, (hi, lo)) in enumerate(zip(cases, inputs, refs)):
        result = out[i, :len(args[0])]
        ulps, absolute = errors(case, args, result, hi, lo, dtype)
        k = int(np.argmax(ulps))
        if ulps[k] > case.ulps[wide]:
            failures.append(f"{case.name}({', '.join(repr(a[k].item()) for a in args)}) = {result[k]!r}, exact "
                            f"{hi[k]!r}: {ulps[k]:.2f} ulp > {case.ulps[wide]}")
        k = int(np.argmax(absolute))
        if absolute[k] > case.abs_bound[wide]:
            failures.append(f"{case.name}({', '.join(repr(a[k].item()) for a in args)}) = {result[k]!r}, exact "
                            f"{hi[k]!r}: absolute error {absolute[k]:.3g} > {case.abs_bound[wide]}")
    assert not failures, "\n".join(failures)
