"""Powers and roots of tile's libdevice: pow (and its int32-exponent form), cbrt rcbrt, hypot
rhypot norm3d rnorm3d norm4d rnorm4d.

Accuracy (maximum error measured in tests/test_libdevice_math.py, ulps of the exact result):

    function            fp32   fp64   (CUDA's documented bound, fp32/fp64)
    pow                 1      1      (4 / 2)
    cbrt, rcbrt         1      1      (1 / 1)
    hypot, norm3d/4d    1      1      (3 / 2)
    rhypot, rnorm3d/4d  1      1      (2 / 1)

pow(x, y) = 2^(y log2 |x|) needs log|x| far beyond working precision: an error d in y log|x|
is an error d in the relative result, and y log|x| reaches 745. fp32 pow therefore runs in
fp64 (log and exp to 2^-53, rounded once to fp32); fp64 pow takes log|x| as a double-word
number good to 2^-66 (libm_exp_log.log_dw), multiplies by y in double-word, and exponentiates
the double-word product. C99's special cases (pow(x, 0) = 1, pow(1, y) = 1, signed zeros,
infinities, negative bases with integer exponents) are applied at the end.

cbrt and rcbrt scale |x| = m 2^(3j) with m in [1, 8), start from a cubic fit of m^(-1/3)
(tools/libm_fit.py rcbrt_seed, 2^-5.9), run Newton's iteration r += r (1 - m r^3) / 3, and
finish with one step whose residual is computed exactly in double-word arithmetic.

The norms scale every argument by 2^-e (e the exponent of the largest), sum the squares in
double-word arithmetic (no overflow, no underflow, no rounding that matters), and take a
corrected square root (or reciprocal square root) before scaling back.
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float32, float64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (copysign, dw_add, dw_mul_f, float_format, full_like, is_nan, poly, scale2, sign_bit, sqrt_dw,
                        to_bits, two_prod)
from .libm_exp_log import EXP_CLAMP, exp_dw, log_dw

# tools/libm_fit.py rcbrt_seed: m^(-1/3) on [1, 8], 2^-5.9 relative
RCBRT_SEED = (1.2370203733444214, -0.2972085177898407, 0.045894887298345566, -0.002548918593674898)
NEWTON_STEPS = (2, 3)  # 2^-5.9 -> 2^-10.7 -> 2^-20.5 (-> 2^-40) before the exact final step


# ----------------------------------------------------------------------------------- pow


@jit
def is_odd_integer(y):
    """y is an odd integer (floats from 2^(mant+1) on are all even)."""
    half = y * 0.5
    return (math.floor(y) == y) & (math.floor(half) != half)


@jit
def pow_magnitude(ax, y):
    """|x|^y for positive finite |x| and finite y (overflow to inf, underflow to 0)."""
    D: core.constexpr = ax.dtype == float64
    lh, ll = log_dw(ax)
    th, tl = dw_mul_f(lh, ll, y)
    big = math.abs(th) > EXP_CLAMP[D]
    th = math.min(math.max(th, -EXP_CLAMP[D]), EXP_CLAMP[D])
    ph, pl, k = exp_dw(th, core.where(big, 0.0, tl))
    return scale2(ph, k)


@jit
def pow_specials(x, y, r):
    """C99's pow: r where x and y are finite with x > 0; the special cases elsewhere."""
    ax = math.abs(x)
    ay = math.abs(y)
    one = full_like(r, 1.0)
    inf = full_like(r, float("inf"))
    zero = full_like(r, 0.0)
    y_int = math.floor(y) == y
    odd = is_odd_integer(y) & (ay < float("inf"))
    # x = +-0 and x = +-inf: 0 or inf by the sign of y, signed when x < 0 and y is odd
    edge = core.where((ax == 0.0) == (y < 0.0), inf, zero)
    edge = core.where(sign_bit(x) & odd, -edge, edge)
    r = core.where((ax == 0.0) | (ax == float("inf")), edge, r)
    # y = +-inf: 1 at |x| = 1, else 0 or inf by whether |x| < 1 and the sign of y
    r = core.where(ay == float("inf"), core.where(ax == 1.0, one, core.where((ax < 1.0) == (y < 0.0), inf, zero)),
                   r)
    nan = (x != x) | (y != y) | ((x < 0.0) & (ax < float("inf")) & ~y_int & (ay < float("inf")))
    r = core.where(nan, full_like(r, float("nan")), r)
    return core.where((y == 0.0) | (x == 1.0), one, r)


@jit
def pow_any(x, y):
    """x^y for x and y of one float type (fp32 computes in fp64)."""
    ax = math.abs(x)
    ok = (ax > 0.0) & (ax < float("inf")) & (math.abs(y) < float("inf"))
    safe_x = core.where(ok, ax, full_like(x, 1.0))
    safe_y = core.where(ok, y, full_like(y, 0.0))
    if x.dtype == float32:
        mag = pow_magnitude(safe_x.to(float64), safe_y.to(float64)).to(float32)
    else:
        mag = pow_magnitude(safe_x, safe_y)
    r = core.where(sign_bit(x) & is_odd_integer(y), -mag, mag)
    return pow_specials(x, y, r)


@jit
def powi(x, n):
    """x^n for an int32 n: pow with n converted exactly (fp32 computes in fp64 anyway)."""
    ax = math.abs(x)
    y64 = n.to(float64)
    ok = (ax > 0.0) & (ax < float("inf"))
    safe_x = core.where(ok, ax, full_like(x, 1.0))
    mag = pow_magnitude(safe_x.to(float64), y64)
    if x.dtype == float32:
        mag = mag.to(float32)
    odd = (n & 1) == 1
    r = core.where(sign_bit(x) & odd, -mag, mag)
    # pow_specials reads only the sign, zeroness and parity of y: a stand-in of n's sign and
    # parity (+-1 odd, +-2 even, 0) picks the right cases without rounding n to x's type
    sign = core.where(n < 0, -1.0, full_like(x, 1.0))
    y = core.where(n == 0, 0.0, core.where(odd, sign, 2.0 * sign))
    return pow_specials(x, y, r)


# ---------------------------------------------------------------------------------- roots


@jit
def cbrt_scaled(a):
    """(m, j, r) with a = m 2^(3j), m in [1, 8), and r ~ m^(-1/3) (after Newton's steps), for
    positive finite a (subnormals included)."""
    D: core.constexpr = a.dtype == float64
    fmt: core.constexpr = float_format(a.dtype)
    pre: core.constexpr = 3 * ((fmt.mant + 3) // 3)  # a power of 2^3 that makes subnormals normal
    tiny = a < fmt.min_normal
    a = core.where(tiny, a * 2.0**pre, a)
    e = ((to_bits(a) >> fmt.mant).to(fmt.int_type) - fmt.bias).to(a.dtype) - core.where(tiny, pre * 1.0, 0.0)
    j = math.floor(e * (1.0 / 3.0) + 1e-3)  # e / 3 rounded down (e is an integer, |e| < 1200)
    m = scale2(a, -core.where(tiny, pre * 1.0, 0.0) - 3.0 * j)
    r = poly(m, RCBRT_SEED)
    for _ in core.static_range(NEWTON_STEPS[D]):
        r = r + r * (1.0 - m * (r * r * r)) * (1.0 / 3.0)
    return m, j, r


@jit
def cbrt(x):
    """Cube root: c = m r^2 ~ m^(1/3), corrected once by c - (c^3 - m) / (3 c^2) with c^3 - m
    exact, times 2^j."""
    a = math.abs(x)
    m, j, r = cbrt_scaled(core.where((a > 0.0) & (a < float("inf")), a, full_like(x, 1.0)))
    c = m * r * r
    sh, sl = two_prod(c, c)
    th, tl = dw_mul_f(sh, sl, c)
    d = (th - m) + tl  # c^3 - m (th - m is exact: th is close to m)
    c = c - d * (r * r) * (1.0 / 3.0)
    v = copysign(scale2(c, j), x)
    return core.where((a > 0.0) & (a < float("inf")), v, x)


@jit
def rcbrt(x):
    """1 / cube root: r ~ m^(-1/3) corrected once by r + r (1 - m r^3) / 3 with 1 - m r^3 exact,
    times 2^-j. rcbrt(+-0) = +-inf, rcbrt(+-inf) = +-0."""
    a = math.abs(x)
    ok = (a > 0.0) & (a < float("inf"))
    m, j, r = cbrt_scaled(core.where(ok, a, full_like(x, 1.0)))
    sh, sl = two_prod(r, r)
    th, tl = dw_mul_f(sh, sl, r)
    uh, ul = dw_mul_f(th, tl, m)
    e = (1.0 - uh) - ul
    r = r + r * e * (1.0 / 3.0)
    v = copysign(scale2(r, -j), x)
    v = core.where(a == 0.0, copysign(full_like(x, float("inf")), x), v)
    v = core.where(a == float("inf"), copysign(full_like(x, 0.0), x), v)
    return core.where(is_nan(x), x, v)


# ---------------------------------------------------------------------------------- norms


@jit
def exponent_any(a):
    """floor(log2 a) as a float for positive finite a, subnormals included; 0 for a = 0."""
    fmt: core.constexpr = float_format(a.dtype)
    tiny = a < fmt.min_normal
    b = core.where(tiny, a * 2.0 ** (fmt.mant + 1), a)
    e = ((to_bits(b) >> fmt.mant).to(fmt.int_type) - fmt.bias).to(a.dtype)
    e = e - core.where(tiny, fmt.mant + 1.0, 0.0)
    return core.where(a == 0.0, full_like(a, 0.0), e)


@jit
def sum_of_squares(values, e):
    """sum(v^2) for the values scaled by 2^-e, as a double-word number."""
    sh = full_like(e, 0.0)
    sl = full_like(e, 0.0)
    for value in values:
        v = scale2(value, -e)
        ph, pl = two_prod(v, v)
        sh, sl = dw_add(sh, sl, ph, pl)
    return sh, sl


@jit
def norm_parts(values):
    """(sh, sl, e, inf, nan): sqrt(sum(v^2)) = (sh + sl) 2^e for finite values; whether one value
    is infinite, or one is NaN."""
    big = math.abs(values[0])
    inf = big == float("inf")
    nan = is_nan(values[0])
    for value in values:
        a = math.abs(value)
        big = math.max(big, a)
        inf = inf | (a == float("inf"))
        nan = nan | is_nan(value)
    e = exponent_any(core.where(big < float("inf"), big, full_like(big, 1.0)))
    sh, sl = sum_of_squares(values, e)
    return sh, sl, e, inf, nan


@jit
def norm(values):
    """sqrt(sum of squares): the rounded root corrected by (s - root^2) / (2 root). Infinite if
    any value is (even with a NaN), else NaN if any value is."""
    sh, sl, e, inf, nan = norm_parts(values)
    rh, rl = sqrt_dw(sh, sl)
    r = scale2(rh, e)
    r = core.where(nan, full_like(r, float("nan")), r)
    return core.where(inf, full_like(r, float("inf")), r)


@jit
def rnorm(values):
    """1 / sqrt(sum of squares): y = 1 / sqrt(s) corrected by y (1 - s y^2) / 2."""
    sh, sl, e, inf, nan = norm_parts(values)
    y = math.div_rn(full_like(sh, 1.0), math.sqrt_rn(sh))
    qh, ql = two_prod(y, y)
    uh, ul = dw_mul_f(qh, ql, sh)
    t = ((1.0 - uh) - ul) - y * y * sl
    y = y + y * t * 0.5
    r = scale2(y, -e)
    r = core.where(sh == 0.0, full_like(r, float("inf")), r)
    r = core.where(nan, full_like(r, float("nan")), r)
    return core.where(inf, full_like(r, 0.0), r)
