"""Exponentials and logarithms of tile's libdevice: exp exp2 exp10 expm1, log log2 log10 log1p.

Each function has an fp32 and an fp64 variant: the same algorithm, with coefficient tables and
splitting constants indexed by `D` (0: fp32, 1: fp64). Accuracy is the maximum error measured
in tests/test_libdevice_math.py against mpmath, in ulps of the exact result:

    function   fp32   fp64   (CUDA's documented bound, fp32/fp64)
    exp        1      1      (2 / 1)
    exp2       1      1      (2 / 1)
    exp10      1      1      (2 / 1)
    expm1      1      1      (1 / 1)
    log        1      1      (1 / 1)
    log2       1      1      (1 / 1)
    log10      1      1      (2 / 1)
    log1p      1      1      (1 / 1)

The exponentials reduce x = k ln2 + r, |r| <= ln(2)/2, and evaluate e^r - 1 = r + r^2 P(r)
(P: the minimax fit `exp_f32`/`exp_f64` of tools/libm_fit.py) as a double-word number, so
that 1 + (e^r - 1) and expm1's 2^k (e^r - 1) + (2^k - 1) round once. The logarithms split
x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)) and return log(1 + f) as a double-word
number: on fp32 f - f^2/2 + f^3 P(f); on fp64 2 atanh(s) = 2s + s^3 (2/3 + s^2 P(s^2)) with
s = f / (2 + f), every term that matters carried in double-word arithmetic (pow needs that).
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (dw_add, dw_mul, fast_two_sum, float_format, from_bits, full_like, is_nan, poly, pow2,
                        round_to_int, scale2, to_bits, two_prod, two_sum)

# Tables are (fp32, fp64) pairs, indexed by D = (x.dtype == tl.float64).
# Cody-Waite splits c = HI + LO: HI has 16 (fp32) or 32 (fp64) significant bits, so k * HI is
# exact for every k the reductions produce.
LN2_HI = (0.693145751953125, 0.6931471806019545)
LN2_LO = (1.428606765330187e-06, -4.2009150726810846e-11)
LOG10_2_HI = (0.30103302001953125, 0.3010299956658855)
LOG10_2_LO = (-3.024355464731343e-06, -1.9043128467164274e-12)
# double-word constants: HI = the float nearest c, LO = the float nearest c - HI
LN2_DW = ((0.6931471824645996, -1.9046542121259336e-09), (0.6931471805599453, 2.3190468138462996e-17))
LN10_DW = ((2.3025851249694824, -3.1975435632602967e-08), (2.302585092994046, -2.1707562233822494e-16))
LOG2E_DW = ((1.4426950216293335, 1.925963033500011e-08), (1.4426950408889634, 2.0355273740931033e-17))
LOG10E_DW = ((0.4342944920063019, -1.0103049952192578e-08), (0.4342944819032518, 1.098319650216765e-17))
TWO_THIRDS_DW = (0.6666666666666666, 3.700743415417188e-17)
LOG2E = 1.4426950408889634
LOG2_10 = 3.321928094887362
# bits of sqrt(1/2): subtracting them from the bits of x puts the mantissa in [sqrt(1/2), sqrt(2))
SQRT_HALF_BITS = (0x3F3504F3, 0x3FE6A09E667F3BCD)

# tools/libm_fit.py exp_f32 / exp_f64: e^r - 1 = r + r^2 P(r) on |r| <= ln(2)/2, relative to e^r - 1:
# 2^-28.4 (fp32) and 2^-56.2 (fp64)
EXP_P = (
    (0.5, 0.1666666716337204, 0.04166632518172264, 0.008333220146596432, 0.0013943254016339779,
     0.0001996227219933644),
    (0.5000000000000001, 0.1666666666666667, 0.041666666666652245, 0.00833333333332613, 0.0013888888895613257,
     0.0001984126987484562, 2.480157451764665e-05, 2.755725535967099e-06, 2.756793566836295e-07,
     2.5105236730684864e-08, 1.7687745680630468e-09),
)
# tools/libm_fit.py log_f32: log(1+f) = f - f^2/2 + f^3 P(f) on [sqrt(1/2) - 1, sqrt(2) - 1], 2^-27.2 relative
LOG_P_F32 = (0.3333333134651184, -0.2500081956386566, 0.20001226663589478, -0.16623356938362122,
             0.14201757311820984, -0.13160181045532227, 0.1276157796382904, -0.07634500414133072)
# tools/libm_fit.py log_f64: log((1+s)/(1-s)) = 2s + s^3 (2/3 + z P(z)), z = s^2 <= 0.0295, 2^-65.3 relative
LOG_P_F64 = (0.40000000000002267, 0.2857142857009502, 0.22222222520817966, 0.1818178428217226,
             0.1538676152860597, 0.13256713834056377, 0.13197346771784496)

# clamps that keep k = round(x / ln 2) small while the result is already 0, -1 or inf
EXP_CLAMP = (200.0, 1600.0)


# ----------------------------------------------------------------------------- exp family


@jit
def expm1_reduced(rh, rl):
    """e^(rh + rl) - 1 as a double-word number, for |rh| <= ln(2)/2 (and |rl| <= ulp(rh))."""
    D: core.constexpr = rh.dtype == float64
    s = rh * rh * poly(rh, EXP_P[D])
    qh, ql = fast_two_sum(rh, s)  # |s| <= |rh| / 5
    return fast_two_sum(qh, ql + math.fma(rl, qh, rl))  # e^(r + rl) - 1 = q + rl (1 + q)


@jit
def exp_reduced(rh, rl):
    """e^(rh + rl) as a double-word number in [0.7, 1.42], for |rh| <= ln(2)/2."""
    qh, ql = expm1_reduced(rh, rl)
    h, l = fast_two_sum(1.0, qh)
    return fast_two_sum(h, l + ql)


@jit
def exp_dw(xh, xl):
    """(p, k): e^(xh + xl) = p * 2^k, p a double-word number in [0.7, 1.42] and k an integer-
    valued float, for |xh| <= the clamp (NaN gives NaN)."""
    D: core.constexpr = xh.dtype == float64
    k = round_to_int(xh * LOG2E)
    rh = math.fma(k, -LN2_HI[D], xh)  # exact: k * LN2_HI has few bits, and x is close to it
    rh, rl = two_sum(rh, math.fma(k, -LN2_LO[D], xl))
    ph, pl = exp_reduced(rh, rl)
    return ph, pl, k


@jit
def exp_finish(p, k, x):
    """p * 2^k with overflow to inf and gradual underflow; NaN stays NaN (x is the argument)."""
    return core.where(is_nan(x), x, scale2(p, k))


@jit
def exp(x):
    """e^x: x = k ln2 + r (Cody-Waite), e^r by a polynomial, times 2^k."""
    D: core.constexpr = x.dtype == float64
    xc = math.min(math.max(x, -EXP_CLAMP[D]), EXP_CLAMP[D])
    ph, pl, k = exp_dw(xc, full_like(x, 0.0))
    return exp_finish(ph, k, x)


@jit
def exp2(x):
    """2^x: x = k + f with |f| <= 1/2 (exact), 2^f = e^(f ln2) with f ln2 in double-word."""
    D: core.constexpr = x.dtype == float64
    xc = math.min(math.max(x, -EXP_CLAMP[D]), EXP_CLAMP[D])
    k = round_to_int(xc)
    f = xc - k
    rh, rl = dw_mul(f, full_like(x, 0.0), LN2_DW[D][0], LN2_DW[D][1])
    ph, pl = exp_reduced(rh, rl)
    return exp_finish(ph, k, x)


@jit
def exp10(x):
    """10^x: x = k log10(2) + t (Cody-Waite), 10^t = e^(t ln10) with t ln10 in double-word."""
    D: core.constexpr = x.dtype == float64
    xc = math.min(math.max(x, -EXP_CLAMP[D] * 0.5), EXP_CLAMP[D] * 0.5)
    k = round_to_int(xc * LOG2_10)
    th = math.fma(k, -LOG10_2_HI[D], xc)
    th, tl = two_sum(th, -k * LOG10_2_LO[D])
    rh, rl = dw_mul(th, tl, LN10_DW[D][0], LN10_DW[D][1])
    ph, pl = exp_reduced(rh, rl)
    return exp_finish(ph, k, x)


@jit
def expm1_dw(x):
    """(hi, lo, e): e^x - 1 = (hi + lo) 2^e, for -(mant + 8) <= x <= the clamp. With x = k ln2 + r
    and q = e^r - 1 (double-word): q itself when k = 0 (small x keep their relative accuracy);
    2^k q + (2^k - 1) while 2^k - 1 is exact (e = 0); beyond, ((1 + q) - 2^-k) with e = k."""
    D: core.constexpr = x.dtype == float64
    fmt: core.constexpr = float_format(x.dtype)
    k = round_to_int(x * LOG2E)
    rh = math.fma(k, -LN2_HI[D], x)
    rh, rl = two_sum(rh, -k * LN2_LO[D])
    qh, ql = expm1_reduced(rh, rl)
    t = pow2(math.min(k, fmt.mant + 1.0), x)
    mh, ml = two_sum(t * qh, t - 1.0)
    ml = ml + t * ql
    h, l = fast_two_sum(1.0, qh)
    l = l + (ql - pow2(-math.min(k, 100.0), x))
    large = k > fmt.mant + 1.0
    hi = core.where(k == 0, qh, core.where(large, h, mh))
    lo = core.where(k == 0, ql, core.where(large, l, ml))
    return hi, lo, core.where(large, k, full_like(x, 0.0))


@jit
def expm1(x):
    """e^x - 1, accurate for small |x| (see expm1_dw)."""
    D: core.constexpr = x.dtype == float64
    fmt: core.constexpr = float_format(x.dtype)
    xc = math.min(math.max(x, -(fmt.mant + 8.0)), EXP_CLAMP[D])  # below: e^x < ulp(1)/4, the result is -1
    hi, lo, e = expm1_dw(xc)
    r = scale2(hi + lo, e)
    r = core.where(x == 0.0, x, r)  # keeps -0.0
    return core.where(is_nan(x), x, r)


# ----------------------------------------------------------------------------- log family


@jit
def log1p_reduced_f32(f):
    """log(1 + f) as a double-word number, f in [sqrt(1/2) - 1, sqrt(2) - 1]: f - f^2/2 + f^3 P(f)."""
    sq, sq_err = two_prod(f, f)
    tail = f * sq * poly(f, LOG_P_F32)
    h, l = two_sum(f, -0.5 * sq)
    return fast_two_sum(h, l + (tail - 0.5 * sq_err))


@jit
def log1p_reduced_f64(f):
    """log(1 + f) as a double-word number, f in [sqrt(1/2) - 1, sqrt(2) - 1]:
    2 atanh(s) = 2s + s^3 (2/3 + z P(z)), s = f / (2 + f), z = s^2, with s, s^3 and the product
    carried in double-word arithmetic (about 2^-66 relative, what pow needs)."""
    uh, ul = fast_two_sum(2.0, f)
    sh = math.div_rn(f, uh)
    p, pe = two_prod(sh, uh)
    sl = math.div_rn(((f - p) - pe) - sh * ul, uh)  # s = sh + sl = f / (uh + ul)
    zh, zl = two_prod(sh, sh)
    zl = zl + 2.0 * sh * sl
    ch, cl = fast_two_sum(TWO_THIRDS_DW[0], zh * poly(zh, LOG_P_F64) + TWO_THIRDS_DW[1])
    s3h, s3l = dw_mul(sh, sl, zh, zl)
    th, tl = dw_mul(s3h, s3l, ch, cl)
    return dw_add(2.0 * sh, 2.0 * sl, th, tl)


@jit
def log_parts(x):
    """(e, hi, lo): log(x) = e ln2 + (hi + lo), for positive finite x (subnormals included).
    e is an integer-valued float, hi + lo = log(1 + f) with x = 2^e (1 + f), 1 + f in
    [sqrt(1/2), sqrt(2))."""
    D: core.constexpr = x.dtype == float64
    fmt: core.constexpr = float_format(x.dtype)
    tiny = x < fmt.min_normal
    x = core.where(tiny, x * 2.0 ** (fmt.mant + 1), x)
    ix = (to_bits(x) - SQRT_HALF_BITS[D]).to(fmt.int_type, bitcast=True)
    e = (ix >> fmt.mant).to(x.dtype) - core.where(tiny, fmt.mant + 1.0, 0.0)
    m = from_bits((ix & fmt.mant_mask).to(fmt.uint_type, bitcast=True) + SQRT_HALF_BITS[D], x)
    f = m - 1.0
    if D:
        hi, lo = log1p_reduced_f64(f)
    else:
        hi, lo = log1p_reduced_f32(f)
    return e, hi, lo


@jit
def log_specials(x, r):
    """The log of x <= 0, inf and NaN (r elsewhere): NaN below 0, -inf at +-0, inf at inf."""
    r = core.where(x == float("inf"), x, r)
    r = core.where(x == 0.0, full_like(x, float("-inf")), r)
    return core.where((x < 0.0) | is_nan(x), full_like(x, float("nan")), r)


@jit
def log_dw(x):
    """log(x) as a double-word number, for positive finite x."""
    D: core.constexpr = x.dtype == float64
    e, lh, ll = log_parts(x)
    return dw_add(e * LN2_HI[D], e * LN2_LO[D], lh, ll)


@jit
def log(x):
    """Natural logarithm: e ln2 + log(1 + f), summed in double-word arithmetic."""
    hi, lo = log_dw(x)
    return log_specials(x, hi)


@jit
def log2(x):
    """Base-2 logarithm: e + log(1 + f) log2(e) (exact at powers of two)."""
    D: core.constexpr = x.dtype == float64
    e, lh, ll = log_parts(x)
    mh, ml = dw_mul(lh, ll, LOG2E_DW[D][0], LOG2E_DW[D][1])
    hi, lo = dw_add(e, full_like(x, 0.0), mh, ml)
    return log_specials(x, hi)


@jit
def log10(x):
    """Base-10 logarithm: e log10(2) + log(1 + f) log10(e)."""
    D: core.constexpr = x.dtype == float64
    e, lh, ll = log_parts(x)
    mh, ml = dw_mul(lh, ll, LOG10E_DW[D][0], LOG10E_DW[D][1])
    hi, lo = dw_add(e * LOG10_2_HI[D], e * LOG10_2_LO[D], mh, ml)
    return log_specials(x, hi)


@jit
def log1p_dw(x):
    """log(1 + x) as a double-word number, for x > -1 finite: u = fl(1 + x) loses the low bits of x,
    log(1 + x) = log(u) + c / u with the exact correction c = x - (u - 1)."""
    u = 1.0 + x
    c = x - (u - 1.0)
    hi, lo = log_dw(u)
    return fast_two_sum(hi, lo + math.div_rn(c, u))


@jit
def log1p_of_dw(xh, xl):
    """log(1 + xh + xl) as a double-word number, for xh > -1: log1p(xh) + xl / (1 + xh)."""
    hi, lo = log1p_dw(xh)
    return fast_two_sum(hi, lo + math.div_rn(xl, 1.0 + xh))


@jit
def log1p(x):
    """log(1 + x), accurate for small |x|."""
    finite = math.abs(x) < float("inf")
    hi, lo = log1p_dw(core.where(finite & (x > -1.0), x, full_like(x, 1.0)))
    r = core.where(x == 0.0, x, hi)  # keeps -0.0
    r = core.where(x == -1.0, full_like(x, float("-inf")), r)
    r = core.where(x == float("inf"), x, r)
    return core.where((x < -1.0) | is_nan(x), full_like(x, float("nan")), r)
