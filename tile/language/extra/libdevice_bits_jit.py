"""The libdevice functions of libdevice_bits that are no single instruction, in tile language.

Each is a @jit function that the frontend inlines into the calling kernel, built from tile's
ops (math.clz, math.trunc, the approximate units, rounded f64 arithmetic) and bitcasts. The
public functions in libdevice_bits check the argument dtypes first and pass the constants
of the float format (bit masks, exponent bias) as constexprs, so one body serves f32 and
f64:

    @jit
    def ffs(x, BITS: tl.constexpr):       # 1-based index of the lowest set bit, 0 for 0
        return BITS - _clz(x & -x)
"""
from __future__ import annotations

from typing import Any

import tile.language as tl
from tile.frontend.core import builtin, current, tensor, unwrap
from tile.frontend.jit import jit
from tile.ir.types import i32, with_element

INF = tl.constexpr(float("inf"))
TWO_POW_1023 = tl.constexpr(2.0 ** 1023)
TWO_POW_MINUS_969 = tl.constexpr(2.0 ** -969)  # 2^-1022 * 2^53: scaling down stays clear of subnormals
LOG2_E = tl.constexpr(1.4426950408889634)
LOG2_10 = tl.constexpr(3.321928094887362)
LN_2 = tl.constexpr(0.6931471805599453)
LOG10_2 = tl.constexpr(0.3010299956639812)


# ------------------------------------------------------------------- ops on checked operands


@builtin
def _clz(x: Any) -> tensor:
    """math.clz: leading zero bits of a 32/64-bit integer, as int32."""
    x = unwrap(x)
    return current().op("math.clz", [x], with_element(x.ir_type, i32))


@builtin
def _trunc(x: Any) -> tensor:
    """math.trunc: rounded toward zero to an integral value."""
    x = unwrap(x)
    return current().op("math.trunc", [x], x.ir_type)


@builtin
def _approx(fn: Any, *xs: Any) -> tensor:
    """math.approx {fn}: one of the GPU's approximate units (see tile.ir.ops)."""
    operands = [unwrap(x) for x in xs]
    return current().op("math.approx", operands, operands[0].ir_type, fn=unwrap(fn))


# --------------------------------------------------------------------------- integers


@jit
def ffs(x, BITS: tl.constexpr):
    """x & -x keeps the lowest set bit alone; its index counts from the top by clz."""
    return BITS - _clz(x & -x)


@jit
def hadd(x, y):
    """(x + y) >> 1 without overflow: the common bits plus half the differing ones."""
    return (x & y) + ((x ^ y) >> 1)


@jit
def rhadd(x, y):
    """(x + y + 1) >> 1 without overflow."""
    return (x | y) - ((x ^ y) >> 1)


# ---------------------------------------------------------------------------- rounding


@jit
def round_half_away(x):
    """trunc(x), moved one away from zero where the dropped fraction is at least one half
    (x - trunc(x) is exact)."""
    t = _trunc(x)
    return tl.where(tl.abs(x - t) >= 0.5, t + tl.where(x < 0, -1.0, 1.0), t)


@jit
def saturate(x):
    """x clamped to [+0, 1]; NaN and -0.0 give +0."""
    return tl.where(x > 0.0, tl.minimum(x, 1.0), 0.0)


@jit
def rsqrt_rn(x):
    """1/sqrt(x) rounded to nearest f32: computed in f64 (within an f64 ulp), rounded to f32,
    and moved to the neighbour when the exact value lies beyond their midpoint. The midpoint
    m has 25 bits, so m*m is exact and fma(m*m, x, -1) has the sign of x*m^2 - 1."""
    wide = x.to(tl.float64)
    guess = tl.div_rn(1.0, tl.sqrt_rn(wide))
    r = guess.to(tl.float32)
    r64 = r.to(tl.float64)
    step = tl.where(guess > r64, 1, -1)
    other = (r.to(tl.int32, bitcast=True) + step).to(tl.float32, bitcast=True)
    mid = (r64 + other.to(tl.float64)) * 0.5
    side = tl.fma(mid * mid, wide, -1.0)
    beyond = tl.where(step > 0, side < 0.0, side > 0.0)
    checked = (x > 0.0) & (x < INF) & (guess != r64)
    return tl.where(checked & beyond, other, r)


# -------------------------------------------------------------------- float bit surgery


@jit
def copysign(x, y, UINT: tl.constexpr, MAG: tl.constexpr, SIGN: tl.constexpr):
    """The magnitude bits of x with the sign bit of y."""
    bits = (x.to(UINT, bitcast=True) & MAG) | (y.to(UINT, bitcast=True) & SIGN)
    return bits.to(x.dtype, bitcast=True)


@jit
def nextafter(x, y, UINT: tl.constexpr, SIGN: tl.constexpr):
    """The float next to x in the direction of y: one step of the bits (magnitude up when
    moving away from zero), the smallest subnormal from zero, y when x == y, NaN for NaN."""
    bits = x.to(UINT, bitcast=True)
    away = (x > 0.0) == (y > x)
    stepped = tl.where(away, bits + 1, bits - 1)
    smallest = (y.to(UINT, bitcast=True) & SIGN) | 1
    r = tl.where(x == 0.0, smallest, stepped).to(x.dtype, bitcast=True)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


@jit
def ldexp_f32(x, n):
    """x * 2^n in f64 (exact: n is clamped to +-300, beyond which f32 results are 0 or inf),
    then one rounding to f32."""
    k = tl.minimum(tl.maximum(n, -300), 300)
    scale = ((k + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
    return (x.to(tl.float64) * scale).to(tl.float32)


@jit
def _pow2_f64(k):
    """2^k for k in [-1022, 1023], from its exponent bits."""
    return ((k + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)


@jit
def ldexp_f64(x, n):
    """x * 2^n with one rounding: up to two exact scalings by 2^1023 (or by 2^-969, which keeps
    the value clear of the subnormal range), then a last multiplication that rounds."""
    up = n > 1023
    x = tl.where(up, x * TWO_POW_1023, x)
    n = tl.where(up, n - 1023, n)
    up = n > 1023
    x = tl.where(up, x * TWO_POW_1023, x)
    n = tl.where(up, n - 1023, n)
    down = n < -1022
    x = tl.where(down, x * TWO_POW_MINUS_969, x)
    n = tl.where(down, n + 969, n)
    down = n < -1022
    x = tl.where(down, x * TWO_POW_MINUS_969, x)
    n = tl.where(down, n + 969, n)
    return x * _pow2_f64(tl.minimum(tl.maximum(n, -1022), 1023))


@jit
def ilogb(x, UINT: tl.constexpr, MANT: tl.constexpr, EMASK: tl.constexpr, BIAS: tl.constexpr,
          BITS: tl.constexpr):
    """The unbiased exponent of x: from the exponent field, or for subnormals from the position
    of the leading mantissa bit. 0 and NaN give INT_MIN, infinities INT_MAX (as CUDA)."""
    bits = x.to(UINT, bitcast=True)
    field = ((bits >> MANT) & EMASK).to(tl.int32)
    mantissa = bits & ((1 << MANT) - 1)
    subnormal = (BITS - 1 - _clz(mantissa)) - (BIAS - 1 + MANT)
    r = tl.where(field == 0, subnormal, field - BIAS)
    r = tl.where(tl.abs(x) == INF, 2147483647, r)
    return tl.where((x == 0.0) | (x != x), -2147483648, r)


@jit
def logb(x, UINT: tl.constexpr, MANT: tl.constexpr, EMASK: tl.constexpr, BIAS: tl.constexpr,
         BITS: tl.constexpr):
    """ilogb(x) as a float; -inf for zeros, +inf for infinities, NaN for NaN."""
    r = ilogb(x, UINT, MANT, EMASK, BIAS, BITS).to(x.dtype)
    r = tl.where(x == 0.0, -INF, r)
    r = tl.where(tl.abs(x) == INF, INF, r)
    return tl.where(x != x, x, r)


@jit
def fdim(x, y):
    """x - y where x > y, else +0; NaN if either is NaN."""
    r = tl.where(x > y, x - y, 0.0)
    return tl.where((x != x) | (y != y), x + y, r)


@jit
def remainder(x, y, TINY: tl.constexpr, UINT: tl.constexpr, SIGN: tl.constexpr):
    """IEEE remainder x - n*y, n = x/y rounded to nearest even: |x| reduced modulo 2|y| (fmod,
    exact, which keeps the parity of n), then at most two exact subtractions of |y| (fdlibm's
    scheme; below TINY, |y| / 2 would round, so a + a is compared instead). The sign of x."""
    ay = tl.abs(y)
    twice = ay + ay
    a = tl.abs(tl.where(twice == INF, x, x % twice))  # |y| > max/2: |x| < 2|y| already
    half = ay * 0.5
    tiny = ay < TINY
    past_half = tl.where(tiny, a + a > ay, a > half)  # n odd or beyond n + 1/2: one |y| off
    a = tl.where(past_half, a - ay, a)
    a = tl.where(past_half & tl.where(tiny, a + a >= ay, a >= half), a - ay, a)  # still at or past half: another
    r = tl.where((x.to(UINT, bitcast=True) & SIGN) != 0, -a, a)
    invalid = (tl.abs(x) == INF) | (y == 0.0) | (x != x) | (y != y)
    return tl.where(invalid, float("nan"), r)


# -------------------------------------------------------------------- approximate units


@jit
def fast_tanf(x):
    """sin.approx / cos.approx by div.approx."""
    return _approx("div", _approx("sin", x), _approx("cos", x))


@jit
def fast_expf(x):
    """ex2.approx(x * log2 e)."""
    return _approx("ex2", x * LOG2_E)


@jit
def fast_exp10f(x):
    """ex2.approx(x * log2 10)."""
    return _approx("ex2", x * LOG2_10)


@jit
def fast_logf(x):
    """lg2.approx(x) * ln 2."""
    return _approx("lg2", x) * LN_2


@jit
def fast_log10f(x):
    """lg2.approx(x) * log10 2."""
    return _approx("lg2", x) * LOG10_2


@jit
def fast_powf(x, y):
    """ex2.approx(y * lg2.approx(x))."""
    return _approx("ex2", y * _approx("lg2", x))


__all__ = ["ffs", "hadd", "rhadd", "round_half_away", "saturate", "rsqrt_rn", "copysign", "nextafter", "ldexp_f32",
           "ldexp_f64", "ilogb", "logb", "fdim", "remainder", "fast_tanf", "fast_expf", "fast_exp10f", "fast_logf",
           "fast_log10f", "fast_powf"]
