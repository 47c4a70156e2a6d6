"""Hyperbolic functions of tile's libdevice: sinh cosh tanh, asinh acosh atanh.

Accuracy (maximum error measured in tests/test_libdevice_math.py, ulps of the exact result):

    function      fp32   fp64   (CUDA's documented bound, fp32/fp64)
    sinh, cosh    1      1      (3, 2 / 2, 1)
    tanh          1      1      (2 / 1)
    asinh, acosh  1      1      (3, 4 / 3, 3)
    atanh         1      1      (3 / 2)

No polynomials of their own: they are rearranged so that the double-word exp, expm1 and log1p
of libm_exp_log do the work without cancellation.

    |x| < 1:  q = e^|x| - 1,  sinh = (q + q/(1+q)) / 2,   cosh = 1 + q^2 / (2 (1+q))
    |x| >= 1: E = e^|x| = p 2^k, sinh, cosh = 2^(k-1) (p -+ 2^-2k / p)   (no overflow before the result)
    tanh(x)  = q / (q + 2),  q = e^(2|x|) - 1
    asinh(x) = log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))        (log(2|x|) once x^2 would overflow)
    acosh(x) = log1p(t + sqrt(t (t + 2))),  t = x - 1        (log(2x) for huge x)
    atanh(x) = log1p(2|x| / (1 - |x|)) / 2
Every intermediate is a double-word number, so each result is rounded once, at the end.
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (copysign, dw_add, dw_div, fast_two_sum, float_format, full_like, is_nan, pow2, scale2,
                        sqrt_dw, two_prod, two_sum)
from .libm_exp_log import LN2_DW, exp_dw, expm1_dw, log1p_of_dw, log_dw

# beyond these |x| the squares in asinh and acosh could overflow: log(2|x|) is exact enough there
SQUARE_LIMIT = (2.0**60, 2.0**500)
TANH_ONE = 40.0  # tanh(x) rounds to +-1 for |x| > 9.1 (fp32), 19.1 (fp64)


@jit
def _sinh_cosh(x, cosh: core.constexpr):
    """sinh(|x|) or cosh(x) (see the module docstring)."""
    fmt: core.constexpr = float_format(x.dtype)
    a = math.abs(x)
    small = a < 1.0
    # |x| < 1: from q = e^a - 1 (k = round(a / ln 2) <= 1, so expm1_dw needs no scaling)
    qh, ql, _ = expm1_dw(core.where(small, a, full_like(x, 0.5)))
    dh, dl = fast_two_sum(1.0, qh)
    dl = dl + ql
    if cosh:
        sh, sl = two_prod(qh, qh)
        sl = sl + 2.0 * qh * ql
        fh, fl = dw_div(sh, sl, 2.0 * dh, 2.0 * dl)
        near = 1.0 + fh + fl
    else:
        fh, fl = dw_div(qh, ql, dh, dl)
        th, tl = dw_add(qh, ql, fh, fl)
        near = 0.5 * (th + tl)
    # |x| >= 1: E = (ph + pl) 2^k, 1/E = 2^-k / (ph + pl)
    ph, pl, k = exp_dw(math.min(core.where(small, full_like(x, 1.0), a), fmt.bias * 1.0), full_like(x, 0.0))
    wh, wl = dw_div(pow2(-math.min(2.0 * k, fmt.bias - 1.0), x), full_like(x, 0.0), ph, pl)
    if cosh:
        fh, fl = dw_add(ph, pl, wh, wl)
    else:
        fh, fl = dw_add(ph, pl, -wh, -wl)
    far = scale2(fh, k - 1.0)
    r = core.where(small, near, far)
    r = core.where(a == float("inf"), a, r)
    return core.where(is_nan(x), x, r)


@jit
def sinh(x):
    """sinh(x) = (e^x - e^-x) / 2, odd."""
    return copysign(_sinh_cosh(x, False), x)


@jit
def cosh(x):
    """cosh(x) = (e^x + e^-x) / 2, even."""
    return _sinh_cosh(x, True)


@jit
def tanh(x):
    """tanh(x) = q / (q + 2) with q = e^(2|x|) - 1 in double-word, odd; +-1 beyond |x| = 40."""
    a = math.min(math.abs(x), TANH_ONE)
    qh, ql, e = expm1_dw(2.0 * a)
    two = pow2(1.0 - e, x)  # q = (qh + ql) 2^e: divide both by 2^e
    dh, dl = two_sum(qh, two)
    vh, vl = dw_div(qh, ql, dh, dl + ql)
    v = core.where(a == 0.0, a, vh)
    v = copysign(v, x)
    return core.where(is_nan(x), x, v)


@jit
def _log_twice(a):
    """log(2a) = log(a) + ln 2, for positive finite a (asinh and acosh of huge arguments)."""
    D: core.constexpr = a.dtype == float64
    lh, ll = log_dw(a)
    h, l = dw_add(lh, ll, LN2_DW[D][0], LN2_DW[D][1])
    return h


@jit
def asinh(x):
    """asinh(x) = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), odd."""
    D: core.constexpr = x.dtype == float64
    a = math.abs(x)
    huge = a >= SQUARE_LIMIT[D]
    b = core.where(huge | (a != a), full_like(x, 1.0), a)
    qh, ql = two_prod(b, b)
    wh, wl = two_sum(1.0, qh)
    sh, sl = sqrt_dw(wh, wl + ql)
    dh, dl = fast_two_sum(1.0, sh)
    dl = dl + sl
    fh, fl = dw_div(qh, ql, dh, dl)
    uh, ul = two_sum(b, fh)
    lh, ll = log1p_of_dw(uh, ul + fl)
    r = core.where(huge, _log_twice(core.where(huge & (a < float("inf")), a, full_like(x, 1.0))), lh)
    r = core.where(a == 0.0, a, r)
    r = core.where(a == float("inf"), a, r)
    v = copysign(r, x)
    return core.where(is_nan(x), x, v)


@jit
def acosh(x):
    """acosh(x) = log1p(t + sqrt(t (t + 2))), t = x - 1 in double-word; NaN below 1."""
    D: core.constexpr = x.dtype == float64
    huge = x >= SQUARE_LIMIT[D]
    b = core.where(huge | (x < 1.0) | (x != x), full_like(x, 1.0), x)
    th, tl = two_sum(b, -1.0)
    ph, pl = two_sum(th, 2.0)
    pl = pl + tl
    vh, vl = two_prod(th, ph)
    vl = vl + (th * pl + tl * ph)
    sh, sl = sqrt_dw(core.where(vh > 0.0, vh, full_like(x, 1.0)), vl)
    sh = core.where(vh > 0.0, sh, 0.0)
    sl = core.where(vh > 0.0, sl, 0.0)
    uh, ul = two_sum(th, sh)
    lh, ll = log1p_of_dw(uh, ul + (tl + sl))
    r = core.where(huge, _log_twice(core.where(huge & (x < float("inf")), x, full_like(x, 1.0))), lh)
    r = core.where(x == float("inf"), x, r)
    return core.where((x < 1.0) | (x != x), full_like(x, float("nan")), r)


@jit
def atanh(x):
    """atanh(x) = log1p(2|x| / (1 - |x|)) / 2, odd; +-inf at +-1, NaN beyond."""
    a = math.abs(x)
    b = core.where(a < 1.0, a, full_like(x, 0.0))
    dh, dl = two_sum(1.0, -b)
    uh, ul = dw_div(2.0 * b, full_like(x, 0.0), dh, dl)
    lh, ll = log1p_of_dw(uh, ul)
    r = 0.5 * lh
    r = core.where(a == 0.0, a, r)
    r = core.where(a == 1.0, full_like(x, float("inf")), r)
    r = copysign(r, x)
    return core.where((a > 1.0) | (x != x), full_like(x, float("nan")), r)
