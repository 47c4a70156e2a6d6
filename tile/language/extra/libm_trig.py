"""Trigonometric functions of tile's libdevice: sin cos tan sinpi cospi, asin acos atan atan2.

Accuracy (maximum error measured in tests/test_libdevice_math.py, ulps of the exact result):

    function   fp32   fp64   (CUDA's documented bound, fp32/fp64)
    sin, cos   1      1      (2 / 2)     over the whole float range
    tan        1      1      (4 / 2)
    sinpi      1      1      (1 / 2)
    cospi      1      1      (1 / 2)
    asin, acos 1      1      (2 / 2)
    atan       1      1      (2 / 2)
    atan2      1      1      (3 / 2)

sin, cos and tan reduce x = k pi/2 + r, |r| <= pi/4 (r in double-word), then evaluate minimax
polynomials for sin(r), cos(r) (tools/libm_fit.py sin_*, cos_*) and pick by the quadrant k
mod 4. The reduction has two paths:

  * Cody-Waite: pi/2 split in parts whose products with k are exact (3 parts on fp32 with fma,
    4 parts of 33, 33, 33 and 53 bits on fp64), for |x| < 2^17 (fp32) or 2^20 (fp64).
  * Payne-Hanek, for larger |x| up to the largest float: with x = m 2^E (m an integer),
    x 2/pi mod 4 only depends on the bits of 2/pi from 2^-(E-2) on. The integer m times a
    window of those bits (64-bit words picked by E from TWO_OVER_PI_WORDS) gives the quadrant
    and 62 (fp32) or 126 (fp64) fraction bits exactly, in 64-bit limbs.
The slow path runs only in blocks that hold a huge argument (`any_true`).
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float64, int32, int64, uint64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (any_true, dw_add, dw_div, dw_mul, fast_two_sum, float_format, full_like, is_finite, poly,
                        round_to_int, sign_bit, sqrt_dw, to_bits, two_prod, two_sum)

# tools/libm_fit.py sin_* / cos_*: sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4
SIN_P = (
    (-0.16666655242443085, 0.008332155644893646, -0.0001951463200384751),
    (-0.16666666666666666, 0.008333333333333323, -0.0001984126984125465, 2.7557319213985085e-06,
     -2.5052104860762063e-08, 1.6058360438810928e-10, -7.578403237312867e-13),
)
COS_P = (
    (0.04166664555668831, -0.0013887309469282627, 2.443241282890085e-05),
    (0.041666666666666664, -0.0013888888888888872, 2.480158730157038e-05, -2.7557319214926866e-07,
     2.087675427068091e-09, -1.1470282982670573e-11, 4.737666796295316e-14),
)
# tools/libm_fit.py asin_*: asin(x) = x + x^3 P(x^2) on [0, 1/2]
ASIN_P = (
    (0.16666659712791443, 0.07500509917736053, 0.04451571777462959, 0.031818702816963196, 0.014394739642739296,
     0.037581104785203934),
    (0.16666666666666669, 0.07499999999999782, 0.04464285714316852, 0.030381944421938832, 0.022372160058000874,
     0.017352737423733302, 0.013965360552345714, 0.011544789426634606, 0.009830324061363027, 0.007900281464105667,
     0.00984548045365144, -0.0028715012793784182, 0.02919677311563529, -0.032068907202402554,
     0.035098388094507015),
)
# tools/libm_fit.py atan_*: atan(u) = u + u^3 P(u^2) on [0, tan(pi/8)]
ATAN_P = (
    (-0.3333333134651184, 0.19999903440475464, -0.14281980693340302, 0.11044348776340485, -0.08474265784025192,
     0.04739728942513466),
    (-0.33333333333333326, 0.19999999999997603, -0.14285714285379994, 0.1111111108769686, -0.09090908127772275,
     0.0769228239183114, -0.06666221499746317, 0.05876971713610069, -0.05218090087078037, 0.045023010913717076,
     -0.03344601865047032, 0.015166845162916736),
)

TWO_OVER_PI = 0.6366197723675814
# pi/2 in Cody-Waite parts: fp32 three 24-bit floats (used with fma), fp64 33 + 33 + 33 + 53 bits
PIO2_PARTS = (
    (1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15),
    (1.5707963267341256, 6.077100506303966e-11, 2.0222662487111665e-21, 8.4784276603689e-32),
)
FAST_LIMIT = (131072.0, 1048576.0)  # 2^17, 2^20: the Cody-Waite reduction is exact below
# double-word constants (nearest float, then the float nearest the rest)
PIO2_DW = ((1.5707963705062866, -4.371138828673793e-08), (1.5707963267948966, 6.123233995736766e-17))
PI_DW = ((3.1415927410125732, -8.742277657347586e-08), (3.141592653589793, 1.2246467991473532e-16))
PIO4_DW = ((0.7853981852531433, -2.1855694143368964e-08), (0.7853981633974483, 3.061616997868383e-17))
THREE_PIO4_DW = ((2.356194496154785, -5.962440319251527e-08), (2.356194490192345, 9.184850993605148e-17))
TAN_PIO8 = 0.41421356237309503
TAN_3PIO8 = 2.414213562373095

# 2/pi = sum(W[j] 2^(-64 (j + 1))): the first 20 64-bit words of its binary expansion
TWO_OVER_PI_WORDS = (
    0xA2F9836E4E441529, 0xFC2757D1F534DDC0, 0xDB6295993C439041, 0xFE5163ABDEBBC561,
    0xB7246E3A424DD2E0, 0x06492EEA09D1921C, 0xFE1DEB1CB129A73E, 0xE88235F52EBB4484,
    0xE99C7026B45F7E41, 0x3991D639835339F4, 0x9C845F8BBDF9283B, 0x1FF897FFDE05980F,
    0xEF2F118B5A0A6D1F, 0x6D367ECF27CB09B7, 0x4F463F669E5FEA2D, 0x7527BAC7EBE5F17B,
    0x3D0739F78A5292EA, 0x6BFB5FB11F8D5D08, 0x56033046FC7B6BAB, 0xF0CFBC209AF4361D,
)
# Payne-Hanek shapes: 64-bit words of 2/pi in the window (the product's lowest limb is skipped),
# 64-bit words of the fraction out (2 quadrant bits, then 62 or 126 fraction bits), and the range
# of the exponent E of x = m 2^E the slow path sees (x >= FAST_LIMIT)
PH_WORDS = (3, 4)
PH_OUT_WORDS = (1, 2)
PH_FIRST_E = (-6, -32)
PH_LAST_E = (104, 971)


# --------------------------------------------------------------------- argument reduction


@jit
def reduce_fast(a):
    """(q, rh, rl) with a = q pi/2 + (rh + rl), |rh| <= pi/4, for 0 <= a < FAST_LIMIT: Cody-Waite."""
    D: core.constexpr = a.dtype == float64
    P: core.constexpr = PIO2_PARTS[D]
    k = round_to_int(a * TWO_OVER_PI)
    r = math.fma(k, -P[0], a)  # exact: both are close, and k P[0] has few bits
    if D:
        rh, rl = two_sum(r, -k * P[1])  # k P[i] exact: 20 + 33 bits
        rh, e = two_sum(rh, -k * P[2])
        rl = rl + (e - k * P[3])
    else:
        t, te = two_prod(k, P[1])
        rh, rl = two_sum(r, -t)
        rl = rl - math.fma(k, P[2], te)
    rh, rl = fast_two_sum(rh, rl)
    return k.to(int32), rh, rl


@jit
def _window_word(j0, i: core.constexpr, D: core.constexpr):
    """Word j0 + i of 2/pi (0 before the binary point), for the j0 the exponent range allows."""
    w = full_like(j0, 0).to(uint64)
    for j in core.static_range((PH_FIRST_E[D] - 2) // 64, (PH_LAST_E[D] - 2) // 64 + 1):
        if j + i >= 0:
            w = core.where(j0 == j, TWO_OVER_PI_WORDS[j + i], w)
    return w


@jit
def _add_carry(a, b, carry):
    """(a + b + carry) mod 2^64 and its carry out (0 or 1), for u64 a, b and a carry of 0 or 1."""
    s = a + b
    t = s + carry
    return t, (s < a).to(uint64) + (t < s).to(uint64)


@jit
def reduce_huge(a):
    """(q, rh, rl) with a = q pi/2 + (rh + rl) mod 2 pi, |rh| <= pi/4, for finite a >= 2^-6
    (Payne-Hanek in 64-bit integer arithmetic)."""
    D: core.constexpr = a.dtype == float64
    fmt: core.constexpr = float_format(a.dtype)
    NW: core.constexpr = PH_WORDS[D]
    bits = to_bits(a).to(uint64)
    E = (bits >> fmt.mant).to(int32) - (fmt.bias + fmt.mant)
    m = (bits & fmt.mant_mask) | (1 << fmt.mant)
    # a 2/pi = m V 2^(E - 64 (j0 + NW)), V = the NW words from j0 on: the words before j0 only add
    # multiples of 4, so s = E - 64 j0 in [2, 65] puts the binary point 64 NW - s bits up in m V
    j0 = (E + (64 * 32 - 2)) // 64 - 32
    s = E - 64 * j0
    # m V in 64-bit limbs (little-endian): word i of V adds m V_i = hi 2^64 + lo at limb NW - 1 - i
    lows = ()
    highs = ()
    for i in core.static_range(NW):
        w = _window_word(j0, NW - 1 - i, D)  # the limb order: the last word first
        lows = lows + (m * w,)
        highs = highs + (math.umulhi(m, w),)
    zero = full_like(m, 0)
    limbs = (lows[0],)
    carry = zero
    for k in core.static_range(1, NW):
        limb, carry = _add_carry(lows[k], highs[k - 1], carry)
        limbs = limbs + (limb,)
    limbs = limbs + (highs[NW - 1] + carry,)
    # the window starts t bits into limb 1: t = 64 NW - F - s - 64 in [1, 64], F fraction bits
    F: core.constexpr = 64 * PH_OUT_WORDS[D] - 2
    t = ((64 * NW - F - 64) - s).to(uint64)
    out = ()
    for i in core.static_range(PH_OUT_WORDS[D]):
        low_part = (limbs[1 + i] >> (t - 1)) >> 1  # two shifts: t may be 64
        out = out + (low_part | (limbs[2 + i] << (64 - t)),)
    top = out[PH_OUT_WORDS[D] - 1]  # 2 quadrant bits, 62 fraction bits
    q = ((top + (1 << 61)) >> 62).to(int32)  # the nearest quadrant
    frac = (top - (q.to(uint64) << 62)).to(int64, bitcast=True)  # in [-2^61, 2^61): units of 2^-62
    h = frac.to(a.dtype)
    rem = (frac - h.to(int64)).to(a.dtype)
    if D:
        rem = rem + (out[0] >> 11).to(a.dtype) * 2.0**-53  # 64 more fraction bits
    hh, hl = fast_two_sum(h * 2.0**-62, rem * 2.0**-62)
    rh, rl = dw_mul(hh, hl, PIO2_DW[D][0], PIO2_DW[D][1])
    return q & 3, rh, rl


@jit
def reduce_pio2(a):
    """(q mod 4, rh, rl) with a = q pi/2 + (rh + rl), |rh| <= pi/4, for finite a >= 0."""
    D: core.constexpr = a.dtype == float64
    huge = a >= FAST_LIMIT[D]
    q, rh, rl = reduce_fast(math.min(a, FAST_LIMIT[D]))
    if any_true(huge & is_finite(a)):
        q2, rh2, rl2 = reduce_huge(core.where(huge & is_finite(a), a, full_like(a, FAST_LIMIT[D])))
        q = core.where(huge, q2, q)
        rh = core.where(huge, rh2, rh)
        rl = core.where(huge, rl2, rl)
    return q & 3, rh, rl


# ----------------------------------------------------------------------- kernels on |r| <= pi/4


@jit
def sin_kernel(rh, rl):
    """sin(rh + rl) as a double-word number: r + r^3 S(r^2) + rl (1 - r^2/2)."""
    D: core.constexpr = rh.dtype == float64
    z = rh * rh
    t = math.fma(z * rh, poly(z, SIN_P[D]), rl * (1.0 - 0.5 * z))
    return fast_two_sum(rh, t)


@jit
def cos_kernel(rh, rl):
    """cos(rh + rl) as a double-word number: 1 - r^2/2 + r^4 C(r^2) - r rl."""
    D: core.constexpr = rh.dtype == float64
    z, ze = two_prod(rh, rh)
    hz = 0.5 * z
    w = 1.0 - hz
    tail = ((1.0 - w) - hz) + (z * z * poly(z, COS_P[D]) - math.fma(rh, rl, 0.5 * ze))
    return fast_two_sum(w, tail)


@jit
def _odd_sign(value, negative):
    return core.where(negative, -value, value)


@jit
def sincos(x):
    """(sin x, cos x) from one reduction |x| = q pi/2 + r: sin = (s, c, -s, -c)[q] with the sign of
    x, cos = (c, -s, -c, s)[q], where s, c = sin r, cos r. NaN for infinite x."""
    a = math.abs(x)
    q, rh, rl = reduce_pio2(a)
    sh, sl = sin_kernel(rh, rl)
    ch, cl = cos_kernel(rh, rl)
    odd = (q & 1) == 1
    s = _odd_sign(core.where(odd, ch, sh), q >= 2)
    s = _odd_sign(s, sign_bit(x))
    c = _odd_sign(core.where(odd, sh, ch), (q == 1) | (q == 2))
    nan = full_like(x, float("nan"))
    return core.where(is_finite(x), s, nan), core.where(is_finite(x), c, nan)


@jit
def sin(x):
    """Sine (see sincos)."""
    s, c = sincos(x)
    return s


@jit
def cos(x):
    """Cosine (see sincos)."""
    s, c = sincos(x)
    return c


@jit
def tan(x):
    """tan(x) = s/c for even q, -c/s for odd q (a double-word quotient), with the sign of x."""
    a = math.abs(x)
    q, rh, rl = reduce_pio2(a)
    sh, sl = sin_kernel(rh, rl)
    ch, cl = cos_kernel(rh, rl)
    odd = (q & 1) == 1
    nh, nl = core.where(odd, -ch, sh), core.where(odd, -cl, sl)
    dh, dl = core.where(odd, sh, ch), core.where(odd, sl, cl)
    vh, vl = dw_div(nh, nl, dh, dl)
    v = _odd_sign(vh, sign_bit(x))
    return core.where(is_finite(x), v, full_like(x, float("nan")))


@jit
def reduce_half_turns(x):
    """(q mod 4, rh, rl) with x = q/2 + r and pi r = rh + rl, |r| <= 1/4: n = floor(2x + 1/2)
    and r = x - n/2 are exact."""
    fmt: core.constexpr = float_format(x.dtype)
    D: core.constexpr = x.dtype == float64
    halves = math.abs(x) >= 2.0 ** (fmt.mant - 1)  # x is a multiple of 1/2 there: n = 2x
    even = math.abs(x) >= 2.0 ** (fmt.mant + 1)  # and an even integer there: r = 0, q = 0
    n = core.where(halves, 2.0 * x, math.floor(2.0 * x + 0.5))  # 2x + 0.5 is exact below 2^(mant-1)
    n = core.where(even | (x != x), full_like(x, 0.0), n)
    r = core.where(even, full_like(x, 0.0), x - 0.5 * n)
    q = (n - 4.0 * math.floor(n * 0.25)).to(int32)
    rh, rl = dw_mul(r, full_like(x, 0.0), PI_DW[D][0], PI_DW[D][1])
    return q, rh, rl


@jit
def sinpi(x):
    """sin(pi x): x = q/2 + r exactly, then the sin/cos kernels on pi r. sinpi(+-n) = +-0."""
    q, rh, rl = reduce_half_turns(x)
    sh, sl = sin_kernel(rh, rl)
    ch, cl = cos_kernel(rh, rl)
    v = core.where((q & 1) == 1, ch, sh)
    v = _odd_sign(v, q >= 2)
    v = core.where(v == 0.0, x * 0.0, v)  # the sign of zero follows x
    return core.where(is_finite(x), v, full_like(x, float("nan")))


@jit
def cospi(x):
    """cos(pi x): x = q/2 + r exactly, then the sin/cos kernels on pi r. cospi(n + 1/2) = +0."""
    q, rh, rl = reduce_half_turns(x)
    sh, sl = sin_kernel(rh, rl)
    ch, cl = cos_kernel(rh, rl)
    v = core.where((q & 1) == 1, sh, ch)
    v = _odd_sign(v, (q == 1) | (q == 2))
    v = core.where(v == 0.0, full_like(x, 0.0), v)
    return core.where(is_finite(x), v, full_like(x, float("nan")))


# ------------------------------------------------------------------------- inverse functions


@jit
def asin_poly(z):
    """P(z) with asin(x) = x + x^3 P(x^2), for z = x^2 <= 1/4."""
    return poly(z, ASIN_P[z.dtype == float64])


@jit
def asin(x):
    """asin(x): x + x^3 P(x^2) for |x| <= 1/2; else pi/2 - 2 asin(s), s = sqrt((1 - |x|)/2)."""
    D: core.constexpr = x.dtype == float64
    a = math.abs(x)
    small = a + a * a * a * asin_poly(a * a)
    z = 0.5 * (1.0 - math.min(a, full_like(x, 1.0)))  # exact
    sh, sl = sqrt_dw(z, full_like(z, 0.0))
    t = 2.0 * (sl + sh * z * asin_poly(z))
    h, l = two_sum(PIO2_DW[D][0], -2.0 * sh)
    big = h + ((l + PIO2_DW[D][1]) - t)
    v = core.where(a <= 0.5, small, big)
    v = _odd_sign(v, sign_bit(x))
    return core.where(a <= 1.0, v, full_like(x, float("nan")))


@jit
def acos(x):
    """acos(x): pi/2 - asin(x) for |x| <= 1/2; 2 asin(s) (x > 0) or pi - 2 asin(s) (x < 0) with
    s = sqrt((1 - |x|)/2) in double-word."""
    D: core.constexpr = x.dtype == float64
    a = math.abs(x)
    h, l = two_sum(PIO2_DW[D][0], -x)
    mid = h + ((l + PIO2_DW[D][1]) - x * x * x * asin_poly(x * x))
    z = 0.5 * (1.0 - math.min(a, full_like(x, 1.0)))
    sh, sl = sqrt_dw(z, full_like(z, 0.0))
    t = 2.0 * (sl + sh * z * asin_poly(z))
    pos = 2.0 * sh + t
    h2, l2 = two_sum(PI_DW[D][0], -2.0 * sh)
    neg = h2 + ((l2 + PI_DW[D][1]) - t)
    v = core.where(a <= 0.5, mid, core.where(x > 0.0, pos, neg))
    return core.where(a <= 1.0, v, full_like(x, float("nan")))


@jit
def atan_finish(kh, kl, uh, ul):
    """kh + kl + atan(uh + ul) rounded once, for |uh| <= tan(pi/8) and a constant k = kh + kl:
    atan(uh + ul) = uh + uh^3 P(uh^2) + ul / (1 + uh^2)."""
    D: core.constexpr = uh.dtype == float64
    z = uh * uh
    h, l = two_sum(kh, uh)
    return h + (l + (kl + math.fma(-ul, z, ul) + uh * z * poly(z, ATAN_P[D])))


@jit
def atan(x):
    """atan(|x|) = k + atan(u): u = |x| (k = 0), (|x| - 1)/(|x| + 1) (k = pi/4) or -1/|x| (k = pi/2),
    so |u| <= tan(pi/8), u in double-word; then the sign of x."""
    D: core.constexpr = x.dtype == float64
    a = math.abs(x)
    zero = full_like(x, 0.0)
    mid = a > TAN_PIO8
    large = a > TAN_3PIO8
    nh, nl = two_sum(a, -1.0)
    dh, dl = two_sum(a, 1.0)
    nh = core.where(large, -1.0, core.where(mid, nh, a))
    nl = core.where(mid & ~large, nl, zero)
    dh = core.where(large, a, core.where(mid, dh, 1.0))
    dl = core.where(mid & ~large, dl, zero)
    uh, ul = dw_div(nh, nl, dh, dl)
    uh = core.where(a == float("inf"), zero, uh)
    ul = core.where(a == float("inf"), zero, ul)
    kh = core.where(large, PIO2_DW[D][0], core.where(mid, full_like(x, PIO4_DW[D][0]), 0.0))
    kl = core.where(large, PIO2_DW[D][1], core.where(mid, full_like(x, PIO4_DW[D][1]), 0.0))
    v = _odd_sign(atan_finish(kh, kl, uh, ul), sign_bit(x))
    return core.where(x != x, x, v)


@jit
def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi]: with n = min(|x|, |y|) and d = max, the
    angle is K + s atan(u), u = n/d or (n - d)/(n + d) as in atan; K and s from the octant."""
    D: core.constexpr = x.dtype == float64
    ax = math.abs(x)
    ay = math.abs(y)
    swap = ay > ax
    n = math.min(ax, ay)
    d = math.max(ax, ay)
    scale = core.where(d > 2.0 ** (float_format(x.dtype).bias - 2), 0.25, 1.0)  # keeps n + d finite
    n = n * scale
    d = d * scale
    mid = n > TAN_PIO8 * d
    nh, nl = two_sum(n, -d)
    sh, sl = two_sum(n, d)
    uh, ul = dw_div(core.where(mid, nh, n), core.where(mid, nl, 0.0), core.where(mid, sh, d),
                    core.where(mid, sl, 0.0))
    zero = full_like(x, 0.0)
    finite = d < float("inf")
    uh = core.where(finite & (d > 0.0), uh, zero)
    ul = core.where(finite & (d > 0.0), ul, zero)
    # angle = K + s (k + atan(u)), k = pi/4 when mid; K, s: (0, +) (pi/2, -) (pi, -) (pi/2, +)
    neg_x = sign_bit(x)
    flip = swap != neg_x
    base_h = core.where(swap, PIO2_DW[D][0], core.where(neg_x, PI_DW[D][0], zero))
    base_l = core.where(swap, PIO2_DW[D][1], core.where(neg_x, PI_DW[D][1], zero))
    off_h = core.where(mid, core.where(flip, -PIO4_DW[D][0], full_like(x, PIO4_DW[D][0])), zero)
    off_l = core.where(mid, core.where(flip, -PIO4_DW[D][1], full_like(x, PIO4_DW[D][1])), zero)
    kh, kl = dw_add(base_h, base_l, off_h, off_l)
    v = atan_finish(kh, kl, core.where(flip, -uh, uh), core.where(flip, -ul, ul))
    both_inf = (ax == float("inf")) & (ay == float("inf"))  # the angle of a diagonal
    v = core.where(both_inf, core.where(neg_x, THREE_PIO4_DW[D][0], full_like(x, PIO4_DW[D][0])), v)
    v = core.where(ay == 0.0, core.where(neg_x, PI_DW[D][0], zero), v)
    v = _odd_sign(math.abs(v), sign_bit(y))
    return core.where((x != x) | (y != y), x + y, v)
