"""The accuracy of tile.language.extra.libdevice: every function on about a thousand arguments per
dtype (random over its whole domain, denser where it is delicate, plus edge values: signed zeros,
subnormals, the largest floats, domain edges, thresholds of overflow and underflow), against
mpmath, in ulps of the exact result (absolute errors for Bessel functions away from the origin).

The bounds in libm_cases.CASES are the measured maxima rounded up to a half ulp; the module
docstrings of tile/language/extra quote them. The same launches check C99's special values
(libm_cases.SPECIALS) and odd/even symmetry bit for bit. One kernel per group of functions applies
all its functions (one compilation, assembled by the conftest fixture for every target); the same
test runs on a GPU (marked gpu), where a fused multiply-add may change a result by a rounding.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tile
import tile.language as tl
from libm_cases import CASES, EVEN, GROUPS, ODD, SPECIALS, abs_error, draw_inputs, exact, ulp_error
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
    """The group's cases; per case the accuracy arguments and the special-value arguments and
    results; the stacked kernel input [case, argument, point] (accuracy points, then special ones);
    and the exact results of the accuracy points."""
    dt = np.dtype(dtype)
    cases = [c for c in CASES if c.group == group]
    inputs = [draw_inputs(c, dt) for c in cases]
    specials = [SPECIALS[c.name] for c in cases]
    n = max(len(args[0]) + len(sp) for args, sp in zip(inputs, specials))
    stacked = np.ones((len(cases), MAX_ARITY, n), dt)
    for i, (args, sp) in enumerate(zip(inputs, specials)):
        for j, a in enumerate(args):
            row = np.concatenate([a.astype(dt), np.array([s[0][j] for s in sp], dt)])
            stacked[i, j, :len(row)] = row
            stacked[i, j, len(row):] = row[0]
    refs = [exact(c, args, dt) for c, args in zip(cases, inputs)]
    return cases, inputs, specials, stacked, refs


def errors(case, args, result, hi, lo) -> tuple[np.ndarray, np.ndarray]:
    """(ulp errors, absolute errors): each element is measured one way, the other is 0."""
    use_abs = case.abs_region(args) if case.abs_region is not None else np.zeros(len(result), bool)
    ulps = np.where(use_abs, 0.0, ulp_error(result, hi, lo))
    absolute = np.where(use_abs, abs_error(result, hi), 0.0)
    return ulps, absolute


def launch(arrays, cases, stacked: np.ndarray) -> np.ndarray:
    n = stacked.shape[2]
    out = arrays.put(np.full((len(cases), n), np.nan, stacked.dtype))
    fns = tuple(getattr(libdevice, c.name) for c in cases)
    group_kernel[(tile.cdiv(n, BLOCK),)](arrays.put(stacked), out, n, FNS=fns, ARITY=tuple(c.arity for c in cases),
                                         INT_ORDER=tuple(c.int_order for c in cases), BLOCK=BLOCK)
    return arrays.get(out)


def same_floats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs (zeros), or both NaN."""
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


def accuracy_failures(cases, inputs, out, refs, wide: bool) -> list[str]:
    failures = []
    for i, (case, args, (hi, lo)) in enumerate(zip(cases, inputs, refs)):
        result = out[i, :len(args[0])]
        ulps, absolute = errors(case, args, result, hi, lo)
        for err, bound, what in ((ulps, case.ulps[wide], "ulp"), (absolute, case.abs_bound[wide], "absolute")):
            k = int(np.argmax(err))
            if err[k] > bound:
                failures.append(f"{case.name}({', '.join(repr(a[k].item()) for a in args)}) = {result[k]!r}, "
                                f"exact {hi[k]!r}: {what} error {err[k]:.3g} > {bound}")
    return failures


def special_failures(cases, inputs, specials, out, dt: np.dtype) -> list[str]:
    failures = []
    for i, (case, args, sp) in enumerate(zip(cases, inputs, specials)):
        start = len(args[0])
        for k, (values, expected) in enumerate(sp):
            got = out[i, start + k]
            want = np.array(expected, dt)
            if not same_floats(got, want):
                failures.append(f"{case.name}{values} = {got!r}, expected {want!r}")
    return failures


def symmetry_failures(cases, stacked: np.ndarray, out: np.ndarray, out_neg: np.ndarray) -> list[str]:
    failures = []
    for i, case in enumerate(cases):
        if case.name in ODD or case.name in EVEN:
            want = -out[i] if case.name in ODD else out[i]
            bad = ~same_floats(out_neg[i], want)
            if bad.any():
                k = int(np.argmax(bad))
                failures.append(f"{case.name}(-x) != {'-' if case.name in ODD else ''}{case.name}(x) at "
                                f"x = {stacked[i, 0, k]!r}: {out_neg[i, k]!r} vs {out[i, k]!r}")
    return failures


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("group", GROUPS)
def test_group_accuracy_special_values_and_symmetry(group, dtype, arrays):
    """The bounds of libm_cases.CASES, the special values of SPECIALS bit for bit, and odd or even
    symmetry bit for bit: three launches of one compiled kernel."""
    cases, inputs, specials, stacked, refs = prepared(group, dtype)
    out = launch(arrays, cases, stacked)
    out_neg = launch(arrays, cases, -stacked)
    failures = (accuracy_failures(cases, inputs, out, refs, dtype == "float64")
                + special_failures(cases, inputs, specials, out, np.dtype(dtype))
                + symmetry_failures(cases, stacked, out, out_neg))
    assert not failures, "\n".join(failures)
