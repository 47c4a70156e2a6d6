"""tile.language.extra.libdevice: CUDA libdevice's math functions under Triton's names.

Triton calls NVIDIA's libdevice bitcode; tile has no LLVM, so these functions are written in
tile language itself (the libm_*.py modules next to this one) and inlined into the kernel that
calls them. They run unchanged on the interpreter and on every GPU target, with the same results
up to an fma that ptxas may fuse.

    from tile.language.extra import libdevice

    @tile.jit
    def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
        tl.store(y_ptr + offs, y, mask=offs < n)

Arguments: blocks or scalars of fp32 or fp64 (like Triton's libdevice tables; convert fp16 and
bf16 with `.to(tl.float32)` first), all of one type, broadcast together; a Python number takes
the type of the tensor arguments (fp32 when there are none). The result has the argument type.
jn and yn take an int32 order first; pow also accepts an int32 exponent.

Maximum errors, measured against mpmath by tests/test_libdevice_math.py (ulps of the exact
result unless marked abs.; CUDA's documented bound in brackets):

    function              fp32          fp64
    sin cos               1   [2]       1   [2]      over the whole float range
    tan                   1   [4]       1   [2]
    sinpi cospi           1   [1]       1   [2]
    asin acos atan        1   [2]       1   [2]
    atan2                 1   [3]       1   [2]
    sinh cosh tanh        1   [3 2 2]   1   [2 1 1]
    asinh acosh atanh     1   [3 4 3]   1   [3 3 2]
    exp exp2 exp10        1   [2]       1   [1]
    expm1                 1   [1]       1   [1]
    log log2 log10 log1p  1   [1 1 2 1] 1   [1]
    pow                   1   [4]       1   [2]
    cbrt rcbrt            1   [1]       1   [1]
    hypot norm3d norm4d   1   [3]       1   [2]
    rhypot rnorm3d/4d     1   [2]       1   [1]
    erf                   1   [2]       1.5 [2]
    erfc                  1   [4]       2   [5]
    erfcx                 1   [4]       1.5 [4]
    normcdf               1.5 [5]       2.5 [5]
    erfinv                1.5 [2]       2.5 [5]
    erfcinv               2   [4]       2.5 [6]
    normcdfinv            2.5 [5]       2.5 [8]
    lgamma                1   [6]       2   [4]      outside the negative interval of CUDA's note
    tgamma                1   [5]       1.5 [10]
    j0 y0                 1   [9]       3.5 [7]      |x| < 8; beyond, 2e-8 / 1e-16 abs. [2.2e-6 / 5e-12]
    j1 y1                 1   [9]       2   [7]      |x| < 8; beyond, as j0
    jn                    2e-8 abs.     5e-16 abs.   [2.2e-6 / 5e-12 abs. for n = 128]
    yn                    1             6            for x <= |n|; beyond, as jn
    cyl_bessel_i0 i1      1   [6]       3.5 4.5 [6]
(jn and yn measured for |n| <= 30, |x| <= 40). fp32 pow, lgamma, tgamma and the Bessel functions
compute in fp64 and round once; the rest has fp32 and fp64 algorithms of its own.

Subnormal arguments and results are kept (no flush to zero); the special values follow C99
(exp(-inf) = 0, log(0) = -inf, pow(x, 0) = 1, atan2(+-0, -0) = +-pi, ...).

The rest of libdevice (rounding-mode arithmetic, conversions, bit and integer functions,
classification, floor/ceil/trunc/round, fmod/remainder, ldexp/scalbn, fast_*) lives in
libdevice_bits.py and is re-exported here: direct PTX instructions where one exists (add.rz,
cvt.rmi, clz, prmt, ...), tile language on top of them otherwise.
"""
from __future__ import annotations

from typing import Any

from tile.frontend.core import builtin, current, tensor, unwrap

from . import libm_bessel, libm_erf, libm_exp_log, libm_gamma, libm_hyperbolic, libm_power, libm_trig
from .libm_core import float_args, int_arg


def _apply(name: str, impl: Any, *args: Any) -> tensor:
    """impl(*args) inlined into the kernel, after the argument checks of libdevice.<name>."""
    return current().call(impl, float_args(name, *args), {})


# ------------------------------------------------------------------------------ trigonometric


@builtin
def sin(arg0: Any) -> tensor:
    """Sine of arg0 (radians), elementwise (libdevice __nv_sinf / __nv_sin). Huge arguments are
    reduced exactly, so sin(1e30) is as accurate as sin(1).

        y = libdevice.sin(x)
    """
    return _apply("sin", libm_trig.sin, arg0)


@builtin
def cos(arg0: Any) -> tensor:
    """Cosine of arg0 (radians), elementwise (__nv_cosf / __nv_cos); exact reduction of huge arguments.

        y = libdevice.cos(x)
    """
    return _apply("cos", libm_trig.cos, arg0)


@builtin
def tan(arg0: Any) -> tensor:
    """Tangent of arg0 (radians), elementwise (__nv_tanf / __nv_tan).

        y = libdevice.tan(x)
    """
    return _apply("tan", libm_trig.tan, arg0)


@builtin
def sinpi(arg0: Any) -> tensor:
    """sin(pi * arg0), elementwise, without the rounding of pi * arg0 (__nv_sinpif / __nv_sinpi):
    exactly 0 at integers (with the sign of arg0), +-1 at half-integers.

        y = libdevice.sinpi(x)
    """
    return _apply("sinpi", libm_trig.sinpi, arg0)


@builtin
def cospi(arg0: Any) -> tensor:
    """cos(pi * arg0), elementwise, without the rounding of pi * arg0 (__nv_cospif / __nv_cospi):
    exactly +0 at half-integers, +-1 at integers.

        y = libdevice.cospi(x)
    """
    return _apply("cospi", libm_trig.cospi, arg0)


@builtin
def asin(arg0: Any) -> tensor:
    """Arc sine in [-pi/2, pi/2], elementwise (__nv_asinf / __nv_asin); NaN outside [-1, 1].

        angle = libdevice.asin(x)
    """
    return _apply("asin", libm_trig.asin, arg0)


@builtin
def acos(arg0: Any) -> tensor:
    """Arc cosine in [0, pi], elementwise (__nv_acosf / __nv_acos); NaN outside [-1, 1].

        angle = libdevice.acos(x)
    """
    return _apply("acos", libm_trig.acos, arg0)


@builtin
def atan(arg0: Any) -> tensor:
    """Arc tangent in [-pi/2, pi/2], elementwise (__nv_atanf / __nv_atan).

        angle = libdevice.atan(x)
    """
    return _apply("atan", libm_trig.atan, arg0)


@builtin
def atan2(arg0: Any, arg1: Any) -> tensor:
    """The angle of the point (x = arg1, y = arg0) in [-pi, pi], elementwise (__nv_atan2f /
    __nv_atan2), with C99's signed zeros and infinities (atan2(+-0, -0) = +-pi, atan2(y, +-inf) ...).

        phase = libdevice.atan2(im, re)
    """
    return _apply("atan2", libm_trig.atan2, arg0, arg1)


# --------------------------------------------------------------------------------- hyperbolic


@builtin
def sinh(arg0: Any) -> tensor:
    """Hyperbolic sine, elementwise (__nv_sinhf / __nv_sinh); finite up to where it overflows.

        y = libdevice.sinh(x)
    """
    return _apply("sinh", libm_hyperbolic.sinh, arg0)


@builtin
def cosh(arg0: Any) -> tensor:
    """Hyperbolic cosine, elementwise (__nv_coshf / __nv_cosh).

        y = libdevice.cosh(x)
    """
    return _apply("cosh", libm_hyperbolic.cosh, arg0)


@builtin
def tanh(arg0: Any) -> tensor:
    """Hyperbolic tangent, elementwise (__nv_tanhf / __nv_tanh); accurate for small |x| too.

        y = libdevice.tanh(x)
    """
    return _apply("tanh", libm_hyperbolic.tanh, arg0)


@builtin
def asinh(arg0: Any) -> tensor:
    """Inverse hyperbolic sine, elementwise (__nv_asinhf / __nv_asinh).

        y = libdevice.asinh(x)
    """
    return _apply("asinh", libm_hyperbolic.asinh, arg0)


@builtin
def acosh(arg0: Any) -> tensor:
    """Inverse hyperbolic cosine (>= 0), elementwise (__nv_acoshf / __nv_acosh); NaN below 1.

        y = libdevice.acosh(x)
    """
    return _apply("acosh", libm_hyperbolic.acosh, arg0)


@builtin
def atanh(arg0: Any) -> tensor:
    """Inverse hyperbolic tangent, elementwise (__nv_atanhf / __nv_atanh); +-inf at +-1, NaN beyond.

        y = libdevice.atanh(x)
    """
    return _apply("atanh", libm_hyperbolic.atanh, arg0)


# ------------------------------------------------------------------------ exponential, log


@builtin
def exp(arg0: Any) -> tensor:
    """e ** arg0, elementwise (__nv_expf / __nv_exp), with gradual underflow (tl.exp on fp32 is a
    fast approximation; this one is accurate to an ulp).

        y = libdevice.exp(x)
    """
    return _apply("exp", libm_exp_log.exp, arg0)


@builtin
def exp2(arg0: Any) -> tensor:
    """2 ** arg0, elementwise (__nv_exp2f / __nv_exp2).

        y = libdevice.exp2(x)
    """
    return _apply("exp2", libm_exp_log.exp2, arg0)


@builtin
def exp10(arg0: Any) -> tensor:
    """10 ** arg0, elementwise (__nv_exp10f / __nv_exp10).

        y = libdevice.exp10(x)
    """
    return _apply("exp10", libm_exp_log.exp10, arg0)


@builtin
def expm1(arg0: Any) -> tensor:
    """e ** arg0 - 1, elementwise, accurate for small |arg0| where exp(x) - 1 cancels
    (__nv_expm1f / __nv_expm1).

        y = libdevice.expm1(x)
    """
    return _apply("expm1", libm_exp_log.expm1, arg0)


@builtin
def log(arg0: Any) -> tensor:
    """Natural logarithm, elementwise (__nv_logf / __nv_log): -inf at +-0, NaN below 0.

        y = libdevice.log(x)
    """
    return _apply("log", libm_exp_log.log, arg0)


@builtin
def log2(arg0: Any) -> tensor:
    """Base-2 logarithm, elementwise (__nv_log2f / __nv_log2); exact at powers of two.

        y = libdevice.log2(x)
    """
    return _apply("log2", libm_exp_log.log2, arg0)


@builtin
def log10(arg0: Any) -> tensor:
    """Base-10 logarithm, elementwise (__nv_log10f / __nv_log10).

        y = libdevice.log10(x)
    """
    return _apply("log10", libm_exp_log.log10, arg0)


@builtin
def log1p(arg0: Any) -> tensor:
    """log(1 + arg0), elementwise, accurate for small |arg0| (__nv_log1pf / __nv_log1p); -inf at -1.

        y = libdevice.log1p(x)
    """
    return _apply("log1p", libm_exp_log.log1p, arg0)


# ------------------------------------------------------------------------- powers and roots


@builtin
def pow(arg0: Any, arg1: Any) -> tensor:  # noqa: A001 - Triton's name
    """arg0 ** arg1, elementwise, with C99's special cases (pow(x, 0) = 1, pow(1, y) = 1, a negative
    base with an integer exponent, signed zeros and infinities). arg1 may be a float of arg0's
    type (__nv_powf / __nv_pow) or an int32 (__nv_powif / __nv_powi).

        y = libdevice.pow(x, 2.5)
        z = libdevice.pow(x, n)      # n: int32
    """
    n = unwrap(arg1)
    if isinstance(n, int) and not isinstance(n, bool) or isinstance(n, tensor) and n.dtype.is_int():
        (x,) = float_args("pow", arg0)
        return current().call(libm_power.powi, (x, int_arg("pow", n)), {})
    return _apply("pow", libm_power.pow_any, arg0, arg1)


@builtin
def cbrt(arg0: Any) -> tensor:
    """Cube root (negative for negative arguments), elementwise (__nv_cbrtf / __nv_cbrt).

        y = libdevice.cbrt(x)
    """
    return _apply("cbrt", libm_power.cbrt, arg0)


@builtin
def rcbrt(arg0: Any) -> tensor:
    """1 / cbrt(arg0), elementwise (__nv_rcbrtf / __nv_rcbrt); +-inf at +-0.

        y = libdevice.rcbrt(x)
    """
    return _apply("rcbrt", libm_power.rcbrt, arg0)


@builtin
def hypot(arg0: Any, arg1: Any) -> tensor:
    """sqrt(arg0**2 + arg1**2) without overflow or underflow, elementwise (__nv_hypotf / __nv_hypot);
    inf if either argument is infinite, even with a NaN.

        r = libdevice.hypot(x, y)
    """
    a, b = float_args("hypot", arg0, arg1)
    return current().call(libm_power.norm, ((a, b),), {})


@builtin
def rhypot(arg0: Any, arg1: Any) -> tensor:
    """1 / hypot(arg0, arg1), elementwise (__nv_rhypotf / __nv_rhypot).

        inv_r = libdevice.rhypot(x, y)
    """
    a, b = float_args("rhypot", arg0, arg1)
    return current().call(libm_power.rnorm, ((a, b),), {})


@builtin
def norm3d(arg0: Any, arg1: Any, arg2: Any) -> tensor:
    """sqrt(a**2 + b**2 + c**2) without overflow or underflow, elementwise (__nv_norm3df / __nv_norm3d).

        length = libdevice.norm3d(x, y, z)
    """
    return current().call(libm_power.norm, (float_args("norm3d", arg0, arg1, arg2),), {})


@builtin
def rnorm3d(arg0: Any, arg1: Any, arg2: Any) -> tensor:
    """1 / norm3d(a, b, c), elementwise (__nv_rnorm3df / __nv_rnorm3d).

        inv_length = libdevice.rnorm3d(x, y, z)
    """
    return current().call(libm_power.rnorm, (float_args("rnorm3d", arg0, arg1, arg2),), {})


@builtin
def norm4d(arg0: Any, arg1: Any, arg2: Any, arg3: Any) -> tensor:
    """sqrt(a**2 + b**2 + c**2 + d**2) without overflow or underflow, elementwise (__nv_norm4df /
    __nv_norm4d).

        length = libdevice.norm4d(x, y, z, w)
    """
    return current().call(libm_power.norm, (float_args("norm4d", arg0, arg1, arg2, arg3),), {})


@builtin
def rnorm4d(arg0: Any, arg1: Any, arg2: Any, arg3: Any) -> tensor:
    """1 / norm4d(a, b, c, d), elementwise (__nv_rnorm4df / __nv_rnorm4d).

        inv_length = libdevice.rnorm4d(x, y, z, w)
    """
    return current().call(libm_power.rnorm, (float_args("rnorm4d", arg0, arg1, arg2, arg3),), {})


# ------------------------------------------------------------------------- error functions


@builtin
def erf(arg0: Any) -> tensor:
    """The error function 2/sqrt(pi) * integral(exp(-t^2), 0..x), elementwise (__nv_erff / __nv_erf).

        y = 0.5 * x * (1 + libdevice.erf(x * 0.7071067811865476))   # GELU
    """
    return _apply("erf", libm_erf.erf, arg0)


@builtin
def erfc(arg0: Any) -> tensor:
    """1 - erf(arg0), elementwise, accurate where it is tiny (large arg0) (__nv_erfcf / __nv_erfc).

        tail = libdevice.erfc(x)
    """
    return _apply("erfc", libm_erf.erfc, arg0)


@builtin
def erfcx(arg0: Any) -> tensor:
    """The scaled complementary error function exp(x^2) * erfc(x), elementwise (__nv_erfcxf /
    __nv_erfcx): about 1 / (x sqrt(pi)) for large x, where erfc alone underflows.

        y = libdevice.erfcx(x)
    """
    return _apply("erfcx", libm_erf.erfcx, arg0)


@builtin
def erfinv(arg0: Any) -> tensor:
    """The inverse error function on (-1, 1), elementwise (__nv_erfinvf / __nv_erfinv): +-inf at
    +-1, NaN beyond.

        z = libdevice.erfinv(2.0 * u - 1.0)
    """
    return _apply("erfinv", libm_erf.erfinv, arg0)


@builtin
def erfcinv(arg0: Any) -> tensor:
    """The inverse complementary error function on (0, 2), elementwise (__nv_erfcinvf /
    __nv_erfcinv), accurate down to the smallest arguments: +inf at 0, -inf at 2.

        z = libdevice.erfcinv(p)
    """
    return _apply("erfcinv", libm_erf.erfcinv, arg0)


@builtin
def normcdf(arg0: Any) -> tensor:
    """The standard normal distribution function P(Z <= arg0), elementwise (__nv_normcdff /
    __nv_normcdf), accurate in both tails.

        p = libdevice.normcdf(z)
    """
    return _apply("normcdf", libm_erf.normcdf, arg0)


@builtin
def normcdfinv(arg0: Any) -> tensor:
    """The inverse of normcdf on (0, 1) (the probit function), elementwise (__nv_normcdfinvf /
    __nv_normcdfinv): -inf at 0, +inf at 1.

        z = libdevice.normcdfinv(u)   # normal samples from uniform ones
    """
    return _apply("normcdfinv", libm_erf.normcdfinv, arg0)


# -------------------------------------------------------------------------- gamma, Bessel


@builtin
def lgamma(arg0: Any) -> tensor:
    """log |Gamma(arg0)|, elementwise (__nv_lgammaf / __nv_lgamma): +inf at 0, at negative integers
    and at +-inf.

        log_factorial = libdevice.lgamma(n + 1.0)
    """
    return _apply("lgamma", libm_gamma.lgamma, arg0)


@builtin
def tgamma(arg0: Any) -> tensor:
    """The gamma function, elementwise (__nv_tgammaf / __nv_tgamma): +-inf at +-0, NaN at negative
    integers, overflow to inf above 171.6 (35.04 for fp32).

        y = libdevice.tgamma(x)
    """
    return _apply("tgamma", libm_gamma.tgamma, arg0)


@builtin
def j0(arg0: Any) -> tensor:
    """The Bessel function of the first kind of order 0, elementwise (__nv_j0f / __nv_j0).

        y = libdevice.j0(x)
    """
    return _apply("j0", libm_bessel.j0, arg0)


@builtin
def j1(arg0: Any) -> tensor:
    """The Bessel function of the first kind of order 1, elementwise (__nv_j1f / __nv_j1).

        y = libdevice.j1(x)
    """
    return _apply("j1", libm_bessel.j1, arg0)


@builtin
def y0(arg0: Any) -> tensor:
    """The Bessel function of the second kind of order 0, elementwise (__nv_y0f / __nv_y0): -inf at 0,
    NaN for negative arguments.

        y = libdevice.y0(x)
    """
    return _apply("y0", libm_bessel.y0, arg0)


@builtin
def y1(arg0: Any) -> tensor:
    """The Bessel function of the second kind of order 1, elementwise (__nv_y1f / __nv_y1): -inf at 0,
    NaN for negative arguments.

        y = libdevice.y1(x)
    """
    return _apply("y1", libm_bessel.y1, arg0)


@builtin
def jn(arg0: Any, arg1: Any) -> tensor:
    """The Bessel function of the first kind of int32 order arg0 at arg1, elementwise (__nv_jnf /
    __nv_jn). The recurrence runs max(|order|) steps over the block (and about sqrt(160 n) more
    where |x| <= n).

        y = libdevice.jn(3, x)
    """
    n = int_arg("jn", arg0)
    (x,) = float_args("jn", arg1)
    return current().call(libm_bessel.jn, (n, x), {})


@builtin
def yn(arg0: Any, arg1: Any) -> tensor:
    """The Bessel function of the second kind of int32 order arg0 at arg1, elementwise (__nv_ynf /
    __nv_yn): -inf at 0, NaN for negative arguments. The recurrence runs max(|order|) steps.

        y = libdevice.yn(3, x)
    """
    n = int_arg("yn", arg0)
    (x,) = float_args("yn", arg1)
    return current().call(libm_bessel.yn, (n, x), {})


@builtin
def cyl_bessel_i0(arg0: Any) -> tensor:
    """The modified Bessel function of the first kind of order 0, elementwise (__nv_cyl_bessel_i0f /
    __nv_cyl_bessel_i0).

        y = libdevice.cyl_bessel_i0(x)
    """
    return _apply("cyl_bessel_i0", libm_bessel.cyl_bessel_i0, arg0)


@builtin
def cyl_bessel_i1(arg0: Any) -> tensor:
    """The modified Bessel function of the first kind of order 1, elementwise (__nv_cyl_bessel_i1f /
    __nv_cyl_bessel_i1).

        y = libdevice.cyl_bessel_i1(x)
    """
    return _apply("cyl_bessel_i1", libm_bessel.cyl_bessel_i1, arg0)


__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "cospi", "cyl_bessel_i0",
    "cyl_bessel_i1", "erf", "erfc", "erfcinv", "erfcx", "erfinv", "exp", "exp10", "exp2", "expm1", "hypot", "j0",
    "j1", "jn", "lgamma", "log", "log10", "log1p", "log2", "norm3d", "norm4d", "normcdf", "normcdfinv", "pow",
    "rcbrt", "rhypot", "rnorm3d", "rnorm4d", "sin", "sinh", "sinpi", "tan", "tanh", "tgamma", "y0", "y1", "yn",
]

# the rest of libdevice: rounding modes, conversions, bit functions, classification (libdevice_bits.py)
from .libdevice_bits import (abs, add_rd, add_rn, add_ru, add_rz, brev, byte_perm, ceil, clz, copysign, div_rd,
                              div_rn, div_ru, div_rz, double2float_rd, double2float_rn, double2float_ru,
                              double2float_rz, double2hiint, double2int_rd, double2int_rn, double2int_ru,
                              double2int_rz, double2ll_rd, double2ll_rn, double2ll_ru, double2ll_rz, double2loint,
                              double2uint_rd, double2uint_rn, double2uint_ru, double2uint_rz, double2ull_rd,
                              double2ull_rn, double2ull_ru, double2ull_rz, double_as_longlong, fast_cosf,
                              fast_dividef, fast_exp10f, fast_expf, fast_log10f, fast_log2f, fast_logf, fast_powf,
                              fast_sinf, fast_tanf, fast_tanhf, fdim, ffs, finitef, float2int_rd, float2int_rn,
                              float2int_ru, float2int_rz, float2ll_rd, float2ll_rn, float2ll_ru, float2ll_rz,
                              float2uint_rd, float2uint_rn, float2uint_ru, float2uint_rz, float2ull_rd, float2ull_rn,
                              float2ull_ru, float2ull_rz, float_as_int, float_as_uint, floor, fma, fma_rd, fma_rn,
                              fma_ru, fma_rz, fmod, hadd, hiloint2double, ilogb, int2double_rn, int2float_rd,
                              int2float_rn, int2float_ru, int2float_rz, int_as_float, isfinited, isinf, isnan, ldexp,
                              ll2double_rd, ll2double_rn, ll2double_ru, ll2double_rz, ll2float_rd, ll2float_rn,
                              ll2float_ru, ll2float_rz, llrint, llround, logb, longlong_as_double, mul24, mul_rd,
                              mul_rn, mul_ru, mul_rz, mulhi, nearbyint, nextafter, popc, rcp64h, rcp_rd, rcp_rn,
                              rcp_ru, rcp_rz, remainder, rhadd, rint, round, rsqrt, rsqrt_rn, sad, saturatef, scalbn,
                              signbit, sqrt, sqrt_rd, sqrt_rn, sqrt_ru, sqrt_rz, sub_rd, sub_rn, sub_ru, sub_rz,
                              trunc, uint2double_rn, uint2float_rd, uint2float_rn, uint2float_ru, uint2float_rz,
                              uint_as_float, ull2double_rd, ull2double_rn, ull2double_ru, ull2double_rz, ull2float_rd,
                              ull2float_rn, ull2float_ru, ull2float_rz)  # noqa: E402

__all__ += ["abs", "add_rd", "add_rn", "add_ru", "add_rz", "brev", "byte_perm", "ceil", "clz", "copysign", "div_rd",
            "div_rn", "div_ru", "div_rz", "double2float_rd", "double2float_rn", "double2float_ru",
            "double2float_rz", "double2hiint", "double2int_rd", "double2int_rn", "double2int_ru",
            "double2int_rz", "double2ll_rd", "double2ll_rn", "double2ll_ru", "double2ll_rz", "double2loint",
            "double2uint_rd", "double2uint_rn", "double2uint_ru", "double2uint_rz", "double2ull_rd",
            "double2ull_rn", "double2ull_ru", "double2ull_rz", "double_as_longlong", "fast_cosf",
            "fast_dividef", "fast_exp10f", "fast_expf", "fast_log10f", "fast_log2f", "fast_logf", "fast_powf",
            "fast_sinf", "fast_tanf", "fast_tanhf", "fdim", "ffs", "finitef", "float2int_rd", "float2int_rn",
            "float2int_ru", "float2int_rz", "float2ll_rd", "float2ll_rn", "float2ll_ru", "float2ll_rz",
            "float2uint_rd", "float2uint_rn", "float2uint_ru", "float2uint_rz", "float2ull_rd",
            "float2ull_rn", "float2ull_ru", "float2ull_rz", "float_as_int", "float_as_uint", "floor", "fma",
            "fma_rd", "fma_rn", "fma_ru", "fma_rz", "fmod", "hadd", "hiloint2double", "ilogb",
            "int2double_rn", "int2float_rd", "int2float_rn", "int2float_ru", "int2float_rz", "int_as_float",
            "isfinited", "isinf", "isnan", "ldexp", "ll2double_rd", "ll2double_rn", "ll2double_ru",
            "ll2double_rz", "ll2float_rd", "ll2float_rn", "ll2float_ru", "ll2float_rz", "llrint", "llround",
            "logb", "longlong_as_double", "mul24", "mul_rd", "mul_rn", "mul_ru", "mul_rz", "mulhi",
            "nearbyint", "nextafter", "popc", "rcp64h", "rcp_rd", "rcp_rn", "rcp_ru", "rcp_rz", "remainder",
            "rhadd", "rint", "round", "rsqrt", "rsqrt_rn", "sad", "saturatef", "scalbn", "signbit", "sqrt",
            "sqrt_rd", "sqrt_rn", "sqrt_ru", "sqrt_rz", "sub_rd", "sub_rn", "sub_ru", "sub_rz", "trunc",
            "uint2double_rn", "uint2float_rd", "uint2float_rn", "uint2float_ru", "uint2float_rz",
            "uint_as_float", "ull2double_rd", "ull2double_rn", "ull2double_ru", "ull2double_rz",
            "ull2float_rd", "ull2float_rn", "ull2float_ru", "ull2float_rz"]
