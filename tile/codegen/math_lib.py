"""Math functions for the PTX backend, written once over an abstract set of float operations.

Each function takes `m`, an object with the operations below on values of one float type
(`m.bits` is 32 or 64), and builds the result from them. The lowering passes an `m` that
emits simt ops; the tests pass one that evaluates the same steps in NumPy, so the accuracy
stated here is measured on exactly the algorithm the GPU runs (the hardware `.approx` units
are emulated by correctly rounded values, their own error is quoted from the PTX ISA).

    m.c(x)                    a constant          m.add sub mul div fma neg abs sqrt
    m.select(p, a, b)         p ? a : b           m.lt le gt ge eq ne, m.isnan -> predicates
    m.and_(p, q), m.or_(p, q) predicates          m.rint trunc floor (to integral values)
    m.fmax, m.fmin            non-NaN operand     m.copysign(a, b)
    m.approx(fn, x)           f32 unit: ex2 lg2 sin cos rsqrt (PTX .approx instructions)
    m.pow2(k)                 2**k, k integral in the normal exponent range (built from bits)
    m.frexp(x)                (mant in [1, 2), exponent) of a positive finite x

Accuracy (ulp: of the exact result; abs: absolute; the f16/bf16 versions compute in f32 and
round once, which adds half an ulp of the narrow type):

  f32  exp      ex2.approx.ftz(x * log2 e): rel. error <= 2^-21 * (1 + |x|); results below
                2^-126 flush to zero. Like Triton's and CUDA's fast path.
       exp2     ex2.approx.ftz: rel. error <= 2^-22 (PTX ISA); flushes below 2^-126
       log      lg2.approx(x) * ln 2: abs. error <= 2^-21 for x in [0.5, 2], rel. <= 2^-21 elsewhere
       log2     lg2.approx: abs. error <= 2^-22 in [0.5, 2], rel. <= 2^-22 elsewhere
       sin/cos  x reduced by 2*pi (two-constant Cody-Waite, fma), then sin/cos.approx:
                abs. error <= 2^-20 for |x| <= 2^16 (hardware 2^-20.5 on [-pi, pi])
       sqrt     sqrt.rn: correctly rounded.     rsqrt: rsqrt.approx, rel. error <= 2^-22
       erf      |x| < 1: x * P(x^2) (degree 6); 1 <= |x| < 4: 1 - ex2.approx(Q(|x|)), Q of degree 9
                fitted to log2 erfc; |x| >= 4: +-1. abs. error <= 3e-7 (measured in the tests)
       fmod     exact (computed in f64: six exact reduction steps cover every f32 quotient)
  f64  exp      k = rint(x / ln 2), r = x - k ln 2 (two constants), Taylor of degree 13,
                times 2^k (two exact scalings): <= 2 ulp; overflow to inf, gradual underflow
       exp2     same with r = (x - k) ln 2: <= 2 ulp
       log      x = m 2^e, m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1), log m = 2 atanh(s)
                (series to s^23), plus e ln 2 (two constants): <= 2 ulp
       log2     e + log(m) * log2 e: <= 3 ulp
       sin/cos  x reduced by pi/2 (three-constant Cody-Waite, fma), Taylor polynomials of
                degree 17/16 on [-pi/4, pi/4]: abs. error <= 2^-52 for |x| <= 10^5
       sqrt     sqrt.rn: correctly rounded.     rsqrt: 1 / sqrt.rn(x): <= 1 ulp
       erf      |x| < 1: x * P(x^2) (degree 11); 1 <= |x| < 6: 1 - exp(-x^2) g(|x|), g fitted on
                four intervals (degree 14-16); |x| >= 6: +-1. <= 4 ulp (measured in the tests)
       fmod     exact (exact reduction steps of 50 bits, in a loop that runs while |x| >= |y|)
  floor, ceil, abs, fma, min, max: exact (one instruction).
"""
from __future__ import annotations

from typing import Any

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
LN2_HI, LN2_LO = 0.6931471803691238, 1.9082149292705877e-10      # LN2_HI: 32 significant bits
PIO2_1, PIO2_2, PIO2_3 = 1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21  # 33+33+53 bits
TWO_OVER_PI = 0.6366197723675814
TWO_PI_HI, TWO_PI_LO = 6.2831854820251465, -1.7484555314695172e-07  # f32 values
INV_TWO_PI = 0.15915494309189535

# erf f32: |x| < 1: erf(x) = x * P(u), u = x^2;  1 <= |x| < 4: erf(x) = 1 - 2^Q(|x| - 2.5)
ERF32_P = (1.1283791065216064, -0.3761262595653534, 0.11283594369888306, -0.02685421146452427,
           0.005189087241888046, -0.000801686430349946, 7.875874871388078e-05)
ERF32_Q = (-11.262853622436523, -7.722285747528076, -1.3617507219314575, -0.015664946287870407,
           0.0031236798968166113, -0.0006070740055292845, 0.0001116467101383023, -1.864783735072706e-05,
           2.3307909486902645e-06, -1.0939497485651373e-07)
# erf f64: |x| < 1: x * P(x^2);  [a, b): erfc(x) = exp(-x^2) * G(x - center)
ERF64_P = (1.1283791670955126, -0.37612638903183543, 0.11283791670945006, -0.02686617064323777,
           0.0052239776071164225, -0.0008548325975389692, 0.00012055294904839707, -1.492473690741966e-05,
           1.6447424703317362e-06, -1.6208483801871705e-07, 1.3720064546777686e-08, -7.795898827002142e-10)
ERF64_G = (
    (1.0, 2.0, 1.5, (0.3215854164543175, -0.16362291773256005, 0.0761510398554774, -0.03293090529956527,
                     0.013377340953067394, -0.0051459575478377826, 0.0018861348769919975, -0.0006619300701084315,
                     0.0002233099453004411, -7.265887301589559e-05, 2.2864299608127746e-05, -6.97536222785843e-06,
                     2.0670657912156654e-06, -5.944961119917664e-07, 1.6714292901928126e-07,
                     -4.9545807838901603e-08, 1.3242541506849586e-08)),
    (2.0, 3.25, 2.625, (0.201887554546017, -0.06846950572892327, 0.022155102007593415, -0.006874908639327552,
                        0.0020542334146800797, -0.0005930183702984874, 0.00016585339752880017,
                        -4.5043772235952616e-05, 1.190337411035641e-05, -3.0660897263704845e-06,
                        7.7097584486266e-07, -1.895174193712071e-07, 4.559009270661933e-08,
                        -1.0711194077217846e-08, 2.476245854006096e-09, -6.111687221327277e-10,
                        1.358382455592157e-10)),
    (3.25, 4.5, 3.875, (0.1411674197630518, -0.034331663931861184, 0.008132222027089709, -0.0018795357179257359,
                        0.0004245105600631875, -9.382291907139615e-05, 2.0315582898534163e-05,
                        -4.314295825906674e-06, 8.994215289537897e-07, -1.8423041477352266e-07,
                        3.710635920543011e-08, -7.35387402066854e-09, 1.4331245645658717e-09,
                        -2.755371354918042e-10, 5.518427046791821e-11, -1.0299637308123206e-11)),
    (4.5, 6.0, 5.25, (0.1056127354688918, -0.019445444672148652, 0.0035241509401113973, -0.0006291014910422669,
                      0.00011068405606898015, -1.9204078677372368e-05, 3.287547681028022e-06,
                      -5.555580554482231e-07, 9.271690660768289e-08, -1.5287817503200323e-08,
                      2.4914079692311725e-09, -4.009840467565885e-10, 6.390613890363394e-11,
                      -1.0615284561152645e-11, 1.6547540532707908e-12)),
)


def _factorial(n: int) -> int:
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out


EXP_TAYLOR = tuple(1.0 / _factorial(k) for k in range(14))                      # e^r, degree 13
SIN_TAYLOR = tuple((-1) ** k / _factorial(2 * k + 1) for k in range(1, 9))     # (sin r - r) / r^3 in r^2
COS_TAYLOR = tuple((-1) ** k / _factorial(2 * k) for k in range(2, 9))         # (cos r - 1 + r^2/2) / r^4
ATANH_SERIES = tuple(1.0 / (2 * k + 1) for k in range(1, 12))                  # (atanh s - s) / s^3 in s^2

V = Any  # a value of the builder `m`


def horner(m, coeffs, t: V) -> V:
    """sum(coeffs[i] * t**i) by fma."""
    acc = m.c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = m.fma(acc, t, m.c(c))
    return acc


def _nan_passthrough(m, x: V, r: V) -> V:
    return m.select(m.isnan(x), x, r)


# ---------------------------------------------------------------------------- exp, log


def exp(m, x: V) -> V:
    if m.bits == 32:
        return m.approx("ex2", m.mul(x, m.c(LOG2E)))
    k = m.rint(m.mul(x, m.c(LOG2E)))
    r = m.fma(m.neg(k), m.c(LN2_HI), x)
    r = m.fma(m.neg(k), m.c(LN2_LO), r)
    return _scale_exp(m, x, k, horner(m, EXP_TAYLOR, r), 709.79, -745.2)


def exp2(m, x: V) -> V:
    if m.bits == 32:
        return m.approx("ex2", x)
    k = m.rint(x)
    f = m.sub(x, k)
    r = m.fma(f, m.c(LN2_HI), m.mul(f, m.c(LN2_LO)))
    return _scale_exp(m, x, k, horner(m, EXP_TAYLOR, r), 1024.0, -1075.0)


def _scale_exp(m, x: V, k: V, p: V, hi: float, lo: float) -> V:
    """p * 2^k in two exact steps (k may leave the normal range), with overflow and underflow."""
    k = m.fmin(m.fmax(k, m.c(-1100.0)), m.c(1100.0))
    k1 = m.floor(m.mul(k, m.c(0.5)))
    y = m.mul(m.mul(p, m.pow2(k1)), m.pow2(m.sub(k, k1)))
    y = m.select(m.gt(x, m.c(hi)), m.c(float("inf")), y)
    y = m.select(m.lt(x, m.c(lo)), m.c(0.0), y)
    return _nan_passthrough(m, x, y)


def _log_parts(m, x: V) -> tuple[V, V]:
    """(e, log m) with x = m 2^e, m in [sqrt(1/2), sqrt(2)), for positive finite x."""
    mant, e = m.frexp(x)
    big = m.gt(mant, m.c(1.4142135623730951))
    mant = m.select(big, m.mul(mant, m.c(0.5)), mant)
    e = m.select(big, m.add(e, m.c(1.0)), e)
    f = m.sub(mant, m.c(1.0))
    s = m.div(f, m.add(f, m.c(2.0)))
    s2 = m.mul(s, s)
    t = m.mul(m.mul(s, s2), horner(m, ATANH_SERIES, s2))
    return e, m.mul(m.c(2.0), m.add(s, t))


def _log_specials(m, x: V, r: V) -> V:
    r = m.select(m.eq(x, m.c(0.0)), m.c(float("-inf")), r)
    r = m.select(m.lt(x, m.c(0.0)), m.c(float("nan")), r)
    r = m.select(m.eq(x, m.c(float("inf"))), x, r)
    return _nan_passthrough(m, x, r)


def log(m, x: V) -> V:
    if m.bits == 32:
        return m.mul(m.approx("lg2", x), m.c(LN2))
    e, lm = _log_parts(m, x)
    r = m.fma(e, m.c(LN2_HI), m.fma(e, m.c(LN2_LO), lm))
    return _log_specials(m, x, r)


def log2(m, x: V) -> V:
    if m.bits == 32:
        return m.approx("lg2", x)
    e, lm = _log_parts(m, x)
    return _log_specials(m, x, m.fma(lm, m.c(LOG2E), e))


# ---------------------------------------------------------------------------- sin, cos


def sin(m, x: V) -> V:
    return _sincos(m, x, cos=False)


def cos(m, x: V) -> V:
    return _sincos(m, x, cos=True)


def _sincos(m, x: V, cos: bool) -> V:
    if m.bits == 32:
        k = m.rint(m.mul(x, m.c(INV_TWO_PI)))
        r = m.fma(m.neg(k), m.c(TWO_PI_HI), x)
        r = m.fma(m.neg(k), m.c(TWO_PI_LO), r)
        return m.approx("cos" if cos else "sin", r)
    k = m.rint(m.mul(x, m.c(TWO_OVER_PI)))
    r = m.fma(m.neg(k), m.c(PIO2_1), x)
    r = m.fma(m.neg(k), m.c(PIO2_2), r)
    r = m.fma(m.neg(k), m.c(PIO2_3), r)
    r2 = m.mul(r, r)
    s = m.fma(m.mul(r, r2), horner(m, SIN_TAYLOR, r2), r)
    c = m.fma(m.mul(r2, r2), horner(m, COS_TAYLOR, r2), m.fma(m.c(-0.5), r2, m.c(1.0)))
    # quadrant q = k mod 4: sin x = (s, c, -s, -c)[q], cos x = (c, -s, -c, s)[q]
    q = m.sub(k, m.mul(m.floor(m.mul(k, m.c(0.25))), m.c(4.0)))
    if cos:
        q = m.add(q, m.c(1.0))
        q = m.select(m.eq(q, m.c(4.0)), m.c(0.0), q)
    odd = m.or_(m.eq(q, m.c(1.0)), m.eq(q, m.c(3.0)))
    val = m.select(odd, c, s)
    return m.select(m.ge(q, m.c(2.0)), m.neg(val), val)


# ---------------------------------------------------------------------------- erf, rsqrt, fmod


def erf(m, x: V) -> V:
    a = m.abs(x)
    if m.bits == 32:
        small = m.mul(a, horner(m, ERF32_P, m.mul(a, a)))
        mid = m.sub(m.c(1.0), m.approx("ex2", horner(m, ERF32_Q, m.sub(a, m.c(2.5)))))
        r = m.select(m.lt(a, m.c(1.0)), small, m.select(m.lt(a, m.c(4.0)), mid, m.c(1.0)))
        return _nan_passthrough(m, x, m.copysign(r, x))
    small = m.mul(a, horner(m, ERF64_P, m.mul(a, a)))
    hi = m.mul(a, a)
    lo = m.fma(a, a, m.neg(hi))
    e = m.mul(exp(m, m.neg(hi)), m.sub(m.c(1.0), lo))    # exp(-a^2), with the rounding of a^2 corrected
    g = m.c(0.0)
    for start, _end, center, coeffs in ERF64_G:  # the last interval whose start is <= a wins
        g = m.select(m.ge(a, m.c(start)), horner(m, coeffs, m.sub(a, m.c(center))), g)
    r = m.select(m.lt(a, m.c(1.0)), small, m.select(m.lt(a, m.c(6.0)), m.sub(m.c(1.0), m.mul(e, g)), m.c(1.0)))
    return _nan_passthrough(m, x, m.copysign(r, x))


def rsqrt(m, x: V) -> V:
    if m.bits == 32:
        return m.approx("rsqrt", x)
    return m.div(m.c(1.0), m.sqrt(x))


def fmod_prepare(m, x: V, y: V) -> tuple[V, V, V, V]:
    """(a, b, exponent of b, finite) for fmod: a = |x| and b = |y| where the result is finite."""
    a, b = m.abs(x), m.abs(y)
    finite = m.and_(m.lt(a, m.c(float("inf"))), m.gt(b, m.c(0.0)))
    b1 = m.select(finite, b, m.c(1.0))
    return m.select(finite, a, m.c(0.0)), b1, m.frexp(b1)[1], finite


def fmod_step(m, a: V, b: V, eb: V) -> V:
    """One exact reduction of a modulo b * 2^s, s = max(0, exponent(a) - exponent(b) - 50): the
    quotient is below 2^52, so q = trunc(a / (b 2^s)) is exact up to one, fma(-q, b 2^s, a) is
    exact, and a negative remainder (q one too large) is fixed by adding b 2^s back. A no-op
    once a < b."""
    _, ea = m.frexp(m.select(m.gt(a, m.c(0.0)), a, b))
    s = m.fmax(m.sub(m.sub(ea, eb), m.c(50.0)), m.c(0.0))
    s1 = m.floor(m.mul(s, m.c(1.0 / 3.0)))   # 2^s in three factors: each stays a normal number
    s2 = m.floor(m.mul(m.sub(s, s1), m.c(0.5)))
    bs = m.mul(m.mul(m.mul(b, m.pow2(s1)), m.pow2(s2)), m.pow2(m.sub(m.sub(s, s1), s2)))
    q = m.trunc(m.div(a, bs))
    r = m.fma(m.neg(q), bs, a)
    return m.select(m.lt(r, m.c(0.0)), m.add(r, bs), r)


def fmod_finish(m, x: V, y: V, a: V, finite: V) -> V:
    """The sign of x, and the special cases: NaN for x infinite or y zero, x for y infinite."""
    r = m.select(finite, m.copysign(a, x), m.c(float("nan")))
    r = m.select(m.eq(m.abs(y), m.c(float("inf"))), m.select(m.lt(m.abs(x), m.c(float("inf"))), x, r), r)
    return m.select(m.or_(m.isnan(x), m.isnan(y)), m.add(x, y), r)


def fmod(m, x: V, y: V, steps: int) -> V:
    """x - trunc(x / y) * y exactly (f64 arithmetic), by `steps` calls of fmod_step."""
    a, b, eb, finite = fmod_prepare(m, x, y)
    for _ in range(steps):
        a = fmod_step(m, a, b, eb)
    return fmod_finish(m, x, y, a, finite)


FMOD_STEPS = {32: 6, 64: 43}
