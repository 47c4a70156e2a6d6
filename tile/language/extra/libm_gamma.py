"""The gamma function of tile's libdevice: lgamma, tgamma.

Both are computed in fp64 (fp32 arguments are widened and the result rounded once): the
algorithms combine several pieces and a few long products, which fp32 could not carry to
CUDA's accuracy; these functions are rare in kernels. Accuracy (maximum error measured in
tests/test_libdevice_math.py, ulps of the exact result):

    function   fp32   fp64   (CUDA's documented bound, fp32/fp64)
    lgamma     1      2      (6 / 4, outside [-10.001, -2.264] resp. [-23.0001, -2.2637])
    tgamma     1      1.5    (5 / 10)

Stirling's series for z >= 8, in double-word arithmetic:

    lgamma(z) = (z - 1/2) log z - z + log(2 pi)/2 + S(1/z^2) / z      (S: tools/libm_fit.py stirling_f64)

lgamma on (0, 8) is built so that its zeros at 1 and 2 keep their relative accuracy:

    [1.5, 2.5): t P(t), t = x - 2                          (P: lgamma2_f64, lgamma(2 + t) = t P(t))
    [0.5, 1.5): t P(t) - log1p(t), t = x - 1               (lgamma(x) = lgamma(x + 1) - log x)
    (0, 0.5):   x P(x) - log1p(x) - log(x)
    [2.5, 8):   lgamma(x - m) + log((x - 1)(x - 2)...(x - m)), x - m in [1.5, 2.5)
and x < 0 by reflection, lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x).

tgamma(x) = Gamma(x + n) / (x (x + 1) ... (x + n - 1)) with x + n >= 8 (the product in
double-word, exact factors) for -10 < x < 8, Stirling's exp(lgamma) beyond, and the reflection
Gamma(x) = pi / (sin(pi x) Gamma(1 - x)) below -10 (scaled by 2^-k so that Gamma(1 - x) may exceed
the float range while the result does not).
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float32, float64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (dw_add, dw_div, dw_mul, dw_mul_f, exponent_of, fast_two_sum, full_like, is_nan, poly, scale2,
                        two_prod, two_sum, with_exponent_zero)
from .libm_exp_log import exp_dw, log_dw
from .libm_trig import PI_DW, sinpi

# tools/libm_fit.py lgamma2_f64: lgamma(2 + t) = t P(t) on |t| <= 1/2, 2^-54.5 relative; (c0 hi, c0 lo, c1, ...)
LGAMMA2_P = (
    0.42278433509846713, 4.94213539941902e-18, 0.3224670334241132, -0.06735230105319809, 0.02058080842778454,
    -0.007385551028674108, 0.002890510330742209, -0.001192753911695573, 0.0005096695247145241,
    -0.00022315475869993123, 9.94575134403443e-05, -4.49262321452863e-05, 2.0507203505019604e-05,
    -9.439541489340971e-06, 4.374950245319103e-06, -2.0388214631077446e-06, 9.54652302352404e-07,
    -4.511113158180413e-07, 2.139171353112954e-07, -9.502560596929306e-08, 4.341666046516746e-08,
    -3.130622104868825e-08, 1.624452319930674e-08,
)
# tools/libm_fit.py stirling_f64: Stirling's correction x S(1/x^2) for x >= 8, 2^-60.6
STIRLING_P = (0.08333333333333333, -0.0027777777777777666, 0.000793650793638111, -0.0005952380886459324,
              0.0008417489785215731, -0.00191721545206614, 0.006378390126790897, -0.02756243269480389,
              0.10730049048973848)
HALF_LOG_2PI_DW = (0.9189385332046728, -3.8782941580672414e-17)
LOG_PI_DW = (1.1447298858494002, 1.0265951162707826e-17)
STIRLING_FROM = 8.0
SHIFT_STEPS = 18  # x + n >= 8 for x > -10
MAX_M = 6  # x - m in [1.5, 2.5) for x < 8


@jit
def stirling_rest(zh, zl, lh, ll):
    """lgamma(z) for z = zh + zl >= 8 from log z = lh + ll, as a double-word number:
    (z - 1/2) log z - z + log(2 pi)/2 + S(1/z^2) / z."""
    mh, ml = dw_mul(lh, ll, zh - 0.5, zl)
    h, l = dw_add(mh, ml, -zh, -zl)
    h, l = dw_add(h, l, HALF_LOG_2PI_DW[0], HALF_LOG_2PI_DW[1])
    u = math.div_rn(full_like(zh, 1.0), zh)
    return fast_two_sum(h, l + u * poly(u * u, STIRLING_P))


@jit
def log_of_dw(h, l):
    """log(h + l) as a double-word number, for h > 0 finite."""
    lh, ll = log_dw(h)
    return fast_two_sum(lh, ll + math.div_rn(l, h))


@jit
def lgamma_near_two(t):
    """lgamma(2 + t) = t P(t) as a double-word number, for |t| <= 1/2: t c0 exactly, plus the rest."""
    p, e = two_prod(t, LGAMMA2_P[0])
    return fast_two_sum(p, e + t * math.fma(t, poly(t, LGAMMA2_P[2:]), LGAMMA2_P[1]))


@jit
def lgamma_positive(zh, zl):
    """lgamma(z) as a double-word number, for z = zh + zl > 0 finite (fp64). Each range needs one
    logarithm, of a double-word argument, and (below 8) one P(t):
        z >= 8:       Stirling, log z
        [1.5, 8):     P(t) at t = z - m - 2, + log((z - 1) ... (z - m))
        [0.5, 1.5):   P(t) at t = z - 1, - log z                 (lgamma(z) = lgamma(z + 1) - log z)
        (0, 0.5):     P(t) at t = z, - log(z (1 + z))           (twice more)"""
    zero = full_like(zh, 0.0)
    one = full_like(zh, 1.0)
    big = zh >= STIRLING_FROM
    mid = zh >= 1.5
    m = math.min(math.max(math.floor(zh - 1.5), zero), MAX_M * 1.0)
    ph = one
    pl = zero
    for i in core.static_range(1, MAX_M + 1):
        ph, pl = dw_mul(ph, pl, core.where(m >= i, zh - i, one), zero)  # zh - i is exact
    ah, al = two_sum(zh, zh * zh)  # z (1 + z) for z < 1/2
    qh, ql = two_prod(zh, zh)
    ah, al = fast_two_sum(ah, al + ql)
    arg_h = core.where(big, zh, core.where(mid, ph, core.where(zh >= 0.5, zh, ah)))
    arg_l = core.where(big, zl, core.where(mid, pl, core.where(zh >= 0.5, zl, al)))
    lh, ll = log_of_dw(arg_h, arg_l)
    sh, sl = stirling_rest(core.where(big, zh, full_like(zh, STIRLING_FROM)), core.where(big, zl, zero), lh, ll)
    t = core.where(mid, (zh - m) - 2.0, core.where(zh >= 0.5, zh - 1.0, zh))
    th, tl = lgamma_near_two(t)
    sign = core.where(mid, 1.0, full_like(zh, -1.0))
    rh, rl = dw_add(th, tl, sign * lh, sign * ll)
    return core.where(big, sh, rh), core.where(big, sl, rl)


@jit
def lgamma64(x):
    """lgamma of an fp64 x (see the module docstring); +inf at the poles and at +-inf."""
    pos = x > 0.0
    neg = core.where((x < 0.0) & (x > float("-inf")), x, full_like(x, -0.5))
    zh, zl = two_sum(1.0, -neg)  # 1 - x for x < 0
    zh = core.where(pos & (x < float("inf")), x, zh)
    zl = core.where(pos, 0.0, zl)
    gh, gl = lgamma_positive(zh, zl)
    # lgamma(zh + zl) = lgamma(zh) + digamma(zh) zl: zl is below an ulp of zh, so a rough digamma
    # (log z - 1/2z, log z from the exponent and mantissa bits) is plenty
    rough_log = 0.6931471805599453 * (exponent_of(zh) + (with_exponent_zero(zh) - 1.0))
    gl = gl + zl * (rough_log - math.div_rn(full_like(x, 0.5), zh))
    # x < 0: log(pi) - log|sin(pi x)| - lgamma(1 - x)
    s = math.abs(sinpi(neg))
    sh, sl = log_dw(core.where(s > 0.0, s, full_like(x, 1.0)))
    rh, rl = dw_add(LOG_PI_DW[0] - sh, LOG_PI_DW[1] - sl, -gh, -gl)
    r = core.where(pos, gh, rh)
    r = core.where((s == 0.0) & ~pos, full_like(x, float("inf")), r)
    r = core.where((x == 0.0) | (math.abs(x) == float("inf")), full_like(x, float("inf")), r)
    return core.where(is_nan(x), x, r)


@jit
def tgamma64(x):
    """Gamma of an fp64 x (see the module docstring): one Stirling evaluation at z, where
        -10 < x < 8:  z = x + n in [8, 9), Gamma(x) = Gamma(z) / (x (x + 1) ... (x + n - 1))
        x >= 8:       z = x
        x <= -10:     z = 1 - x, Gamma(x) = pi / (sin(pi x) Gamma(z))  (Gamma(z) = p 2^k may exceed
                      the float range while the result does not)"""
    zero = full_like(x, 0.0)
    one = full_like(x, 1.0)
    big = x >= STIRLING_FROM
    low = x <= -10.0
    b = core.where(big | low | (x != x), full_like(x, 1.5), x)
    n = math.ceil(STIRLING_FROM - b)
    ph = one
    pl = zero
    for i in core.static_range(SHIFT_STEPS):
        fh, fl = two_sum(b, i * 1.0)
        use = n > i
        ph, pl = dw_mul(ph, pl, core.where(use, fh, one), core.where(use, fl, zero))
    mh, ml = two_sum(b, n)
    neg = core.where(low, x, full_like(x, -10.5))
    wh, wl = two_sum(1.0, -math.max(neg, -200.0))  # below -184 the result is +-0 anyway
    zh = core.where(big, math.min(x, 200.0), core.where(low, wh, mh))
    zl = core.where(big, zero, core.where(low, wl, ml))
    lh, ll = log_dw(zh)
    sh, sl = stirling_rest(zh, zl, lh, ll + math.div_rn(zl, zh))
    eh, el, k = exp_dw(sh, sl)
    qh, ql = dw_div(eh, el, ph, pl)
    s = sinpi(neg)
    dh, dl = dw_mul_f(eh, el, s)
    vh, vl = dw_div(full_like(x, PI_DW[1][0]), full_like(x, PI_DW[1][1]), dh, dl)
    r = core.where(big, scale2(eh, k), core.where(low, scale2(vh, -k), scale2(qh, k)))
    # poles and limits: +-inf at +-0, NaN at negative integers and -inf
    r = core.where(x == 0.0, 1.0 / x, r)
    r = core.where((x < 0.0) & (math.floor(x) == x), full_like(x, float("nan")), r)
    return core.where(is_nan(x), x, r)


@jit
def lgamma(x):
    """log |Gamma(x)|: fp32 arguments are computed in fp64 and rounded once."""
    if x.dtype == float32:
        return lgamma64(x.to(float64)).to(float32)
    return lgamma64(x)


@jit
def tgamma(x):
    """Gamma(x): fp32 arguments are computed in fp64 and rounded once."""
    if x.dtype == float32:
        return tgamma64(x.to(float64)).to(float32)
    return tgamma64(x)
