"""The libdevice math functions under test: their inputs, mpmath references and stated bounds.

Each `Case` draws its inputs (random points over the whole domain, denser where the function is
delicate, plus the finite edge values: +-0, the smallest subnormal, the largest float, domain
edges, overflow and underflow thresholds) and computes the exact result with mpmath. `ulp_error`
measures a result in ulps of the exact value (the ulp of a subnormal result is the smallest
subnormal); `abs_error` in absolute terms (Bessel functions far from the origin).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import mpmath as mp
import numpy as np

Sampler = Callable[[np.random.Generator, int, np.dtype], np.ndarray]
PREC = {np.dtype(np.float32): 80, np.dtype(np.float64): 120}  # mpmath working precision (bits)


# ------------------------------------------------------------------------------ samplers


def uniform(lo: float, hi: float) -> Sampler:
    return lambda rng, n, dt: rng.uniform(lo, hi, n)


def magnitudes(lo: float, hi: float, signed: bool = True) -> Sampler:
    """|x| log-uniform in [lo, hi], with a random sign when `signed`."""
    def draw(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
        x = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
        return x * rng.choice([-1.0, 1.0], n) if signed else x
    return draw


def near(points: Sequence[float], width: float) -> Sampler:
    """Within `width` of one of `points` (zeros, poles, branch points)."""
    return lambda rng, n, dt: rng.choice(np.asarray(points, np.float64), n) + rng.uniform(-width, width, n)


def per_dtype(f32: Sampler, f64: Sampler) -> Sampler:
    return lambda rng, n, dt: (f64 if dt == np.float64 else f32)(rng, n, dt)


def full_range(signed: bool = True) -> Sampler:
    """|x| log-uniform from the smallest subnormal to the largest float of the dtype."""
    def draw(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
        info = np.finfo(dt)
        return magnitudes(float(info.smallest_subnormal), float(info.max), signed)(rng, n, dt)
    return draw


def integers(lo: int, hi: int) -> Sampler:
    return lambda rng, n, dt: rng.integers(lo, hi + 1, n).astype(np.float64)


# ------------------------------------------------------------------------------- references


def _erfcinv(y: mp.mpf) -> mp.mpf:
    """erfc(r) = y by Newton's method on log erfc, from the normal quantile (Python's statistics)."""
    if y <= 0 or y >= 2:
        return mp.inf if y == 0 else -mp.inf if y == 2 else mp.nan
    if y > 1:
        return -_erfcinv(2 - y)
    half = float(y / 2)
    if half > 1e-300:
        r = -statistics.NormalDist().inv_cdf(half) / math.sqrt(2)
    else:
        r = float(mp.sqrt(-mp.log(y)))
    r = mp.mpf(r)
    if r == 0:
        return r
    for _ in range(60):
        step = (mp.log(mp.erfc(r)) - mp.log(y)) / (-2 / mp.sqrt(mp.pi) * mp.exp(-r * r) / mp.erfc(r))
        r -= step
        if abs(step) <= abs(r) * mp.mpf(2) ** (-mp.mp.prec + 4):
            break
    return r


def _erfinv(x: mp.mpf) -> mp.mpf:
    if abs(x) >= 1:
        return mp.sign(x) * mp.inf if abs(x) == 1 else mp.nan
    if abs(x) < 0.5:
        return mp.erfinv(x)
    return mp.sign(x) * _erfcinv(1 - abs(x))


def _erfc(x: mp.mpf) -> mp.mpf:
    if abs(x) > 10**5:  # beyond every float (mpmath's series would not start)
        return mp.mpf(0 if x > 0 else 2)
    return mp.erfc(x)


def _erfcx(x: mp.mpf) -> mp.mpf:
    if x > 10**5:  # the asymptotic series, exact to far below an ulp there
        return (1 - 1 / (2 * x**2) + 3 / (4 * x**4)) / (x * mp.sqrt(mp.pi))
    if x < -30:
        return mp.inf
    return mp.erfc(x) * mp.exp(x * x)


def _normcdf(x: mp.mpf) -> mp.mpf:
    if abs(x) > 10**5:
        return mp.mpf(1 if x > 0 else 0)
    return mp.ncdf(x)


def _pow(x: mp.mpf, y: mp.mpf) -> mp.mpf:
    if x < 0 and y != mp.floor(y):
        return mp.nan
    return mp.power(x, y)


def _signed_cbrt(x: mp.mpf) -> mp.mpf:
    return mp.sign(x) * mp.cbrt(abs(x))


def _rcbrt(x) -> mp.mpf:
    if x == 0:  # a Python float: +-inf with the sign of the zero
        return mp.mpf(math.copysign(math.inf, x))
    return 1 / _signed_cbrt(x)


def _atan2(y, x) -> mp.mpf:
    """mpmath's atan2 with C99's signed zeros (zeros arrive as Python floats, sign included)."""
    if y == 0:
        negative_x = x < 0 or (x == 0 and math.copysign(1.0, x) < 0)
        return mp.mpf(math.copysign(math.pi if negative_x else 0.0, y)) if not negative_x else \
            math.copysign(1.0, y) * mp.pi
    return mp.atan2(y, x)


def _norm(*v: mp.mpf) -> mp.mpf:
    return mp.sqrt(mp.fsum(a * a for a in v))


# ------------------------------------------------------------------------------------ cases


def beyond(limit: float) -> Callable[[list], np.ndarray]:
    """The arguments with |x| >= limit (x the last argument)."""
    return lambda args: np.abs(args[-1].astype(np.float64)) >= limit


@dataclass(frozen=True)
class Case:
    """A libdevice function, how to draw its arguments, its exact value, and the stated bounds."""

    name: str
    group: str
    reference: Callable[..., mp.mpf]
    samplers: tuple  # one Sampler per argument (jn/yn: the order first)
    ulps: tuple[float, float]  # the bound in ulps of the exact result (fp32, fp64)
    edges: tuple = ()  # finite edge values of the first argument (other arguments get random ones)
    n: int = 1024  # random points
    abs_region: Optional[Callable[[list], np.ndarray]] = None  # arguments measured by an absolute bound
    abs_bound: tuple[float, float] = (0.0, 0.0)
    int_order: bool = False  # the first argument is an int32 order (jn, yn)
    notes: str = field(default="", compare=False)

    @property
    def arity(self) -> int:
        return len(self.samplers)


EDGE = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0)


def _tiny(dt: np.dtype) -> list[float]:
    info = np.finfo(dt)
    return [float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.tiny), float(info.max),
            -float(info.max)]


CASES = [
    # ------------------------------------------------------------------ trigonometric
    Case("sin", "trig", mp.sin, (lambda r, n, d: np.concatenate([uniform(-10, 10)(r, n // 2, d),
                                                                 full_range()(r, n - n // 2, d)]),),
         (1, 1), EDGE + (3.141592653589793, 1e22, 1e300)),
    Case("cos", "trig", mp.cos, (lambda r, n, d: np.concatenate([uniform(-10, 10)(r, n // 2, d),
                                                                 full_range()(r, n - n // 2, d)]),),
         (1, 1), EDGE + (1.5707963267948966, 1e22, 1e300)),
    Case("tan", "trig", mp.tan, (lambda r, n, d: np.concatenate([uniform(-10, 10)(r, n // 2, d),
                                                                 full_range()(r, n - n // 2, d)]),),
         (1, 1), EDGE + (1.5707963267948966, 1e22)),
    Case("sinpi", "trig", mp.sinpi, (lambda r, n, d: np.concatenate([uniform(-4, 4)(r, n // 2, d),
                                                                     full_range()(r, n - n // 2, d)]),),
         (1, 1), EDGE + (0.25, 1.5, 1e7, 3.5e15, 1e300)),
    Case("cospi", "trig", mp.cospi, (lambda r, n, d: np.concatenate([uniform(-4, 4)(r, n // 2, d),
                                                                     full_range()(r, n - n // 2, d)]),),
         (1, 1), EDGE + (0.25, 1.5, 1e7, 3.5e15, 1e300)),
    Case("asin", "trig", mp.asin, (uniform(-1, 1),), (1, 1), EDGE + (1e-30, 0.4999, 0.5001, 0.99999)),
    Case("acos", "trig", mp.acos, (uniform(-1, 1),), (1, 1), EDGE + (1e-30, 0.4999, 0.5001, -0.99999)),
    Case("atan", "trig", mp.atan, (full_range(),), (1, 1), EDGE + (0.4142, 2.4142, 1e30)),
    Case("atan2", "trig", _atan2, (magnitudes(1e-20, 1e20), magnitudes(1e-20, 1e20)), (1, 1), EDGE),
    # --------------------------------------------------------------------- hyperbolic
    Case("sinh", "hyperbolic", mp.sinh, (per_dtype(uniform(-90, 90), uniform(-711, 711)),), (1, 1),
         EDGE + (1e-30, 1e-6, 0.999, 1.001)),
    Case("cosh", "hyperbolic", mp.cosh, (per_dtype(uniform(-90, 90), uniform(-711, 711)),), (1, 1),
         EDGE + (1e-30, 1e-6, 0.999, 1.001)),
    Case("tanh", "hyperbolic", mp.tanh, (magnitudes(1e-12, 30),), (1, 1), EDGE + (1e-30, 0.55, 9.0, 19.0)),
    Case("asinh", "hyperbolic", mp.asinh, (full_range(),), (1, 1), EDGE + (1e-30, 3e18)),
    Case("acosh", "hyperbolic", mp.acosh, (lambda r, n, d: 1 + magnitudes(1e-12, 1e30, False)(r, n, d),), (1, 1),
         (1.0, 1.0000001, 2.0, 3e18, 1e300)),
    Case("atanh", "hyperbolic", mp.atanh, (uniform(-1, 1),), (1, 1), (0.0, -0.0, 1e-30, 0.5, -0.5, 0.999999)),
    # -------------------------------------------------------------------- exponential
    Case("exp", "exp_log", mp.exp, (per_dtype(uniform(-104, 89), uniform(-746, 710)),), (1, 1),
         EDGE + (88.72, -87.33, -103.9, 709.78, -708.39, -745.1)),
    Case("exp2", "exp_log", lambda x: mp.power(2, x), (per_dtype(uniform(-150, 128), uniform(-1075, 1024)),),
         (1, 1), EDGE + (127.99, -126.0, -149.0, 1023.99, -1022.0, -1074.0)),
    Case("exp10", "exp_log", lambda x: mp.power(10, x), (per_dtype(uniform(-45, 38.5), uniform(-324, 308.3)),),
         (1, 1), EDGE + (38.5, -37.9, -44.8, 308.25, -307.9)),
    Case("expm1", "exp_log", mp.expm1, (lambda r, n, d: np.concatenate([magnitudes(1e-30, 2)(r, n // 2, d),
                                                                        per_dtype(uniform(-30, 89), uniform(
                                                                            -60, 710))(r, n - n // 2, d)]),),
         (1, 1), EDGE + (1e-30, 0.3465, 88.72, 709.78, -40.0)),
    Case("log", "exp_log", mp.log, (full_range(False),), (1, 1), (1.0, 0.5, 2.0, 1.0000001, 0.9999999)),
    Case("log2", "exp_log", lambda x: mp.log(x, 2), (full_range(False),), (1, 1), (1.0, 0.5, 2.0, 1024.0, 3.0)),
    Case("log10", "exp_log", mp.log10, (full_range(False),), (1, 1), (1.0, 0.1, 10.0, 1000.0, 3.0)),
    Case("log1p", "exp_log", mp.log1p, (lambda r, n, d: np.concatenate([magnitudes(1e-30, 0.999)(r, n // 2, d),
                                                                        full_range(False)(r, n - n // 2, d)]),),
         (1, 1), (0.0, -0.0, 1e-30, -0.5, -0.99999, 1.0, 1e30)),
    # ------------------------------------------------------------------ powers, roots
    Case("pow", "power", _pow, (lambda r, n, d: np.concatenate([magnitudes(1e-3, 1e3, False)(r, n // 2, d),
                                                                uniform(-4, 4)(r, n - n // 2, d)]),
                                lambda r, n, d: np.concatenate([uniform(-30, 30)(r, n // 2, d),
                                                                integers(-40, 40)(r, n - n // 2, d)])), (1, 1),
         (0.5, 2.0, 1.0001, 0.9999, -2.0, 10.0)),
    Case("cbrt", "power", _signed_cbrt, (full_range(),), (1, 1), EDGE + (27.0, -8.0, 1e-300)),
    Case("rcbrt", "power", _rcbrt, (full_range(),), (1, 1), (1.0, -1.0, 27.0, 1e-300)),
    Case("hypot", "power", _norm, (full_range(), full_range()), (1, 1), EDGE),
    Case("rhypot", "power", lambda a, b: 1 / _norm(a, b), (magnitudes(1e-30, 1e30), magnitudes(1e-30, 1e30)),
         (1, 1), (1.0, 3.0)),
    Case("norm3d", "power", _norm, (magnitudes(1e-30, 1e30),) * 3, (1, 1), (1.0, 1e30)),
    Case("rnorm3d", "power", lambda *v: 1 / _norm(*v), (magnitudes(1e-30, 1e30),) * 3, (1, 1), (1.0, 1e30)),
    Case("norm4d", "power", _norm, (magnitudes(1e-30, 1e30),) * 4, (1, 1), (1.0, 1e30)),
    Case("rnorm4d", "power", lambda *v: 1 / _norm(*v), (magnitudes(1e-30, 1e30),) * 4, (1, 1), (1.0, 1e30)),
    # ---------------------------------------------------------------- error functions
    Case("erf", "erf", mp.erf, (lambda r, n, d: np.concatenate([uniform(-6, 6)(r, n // 2, d),
                                                                magnitudes(1e-30, 1)(r, n - n // 2, d)]),),
         (1, 1.5), EDGE + (1e-30, 0.99999, 1.00001, 5.9)),
    Case("erfc", "erf", _erfc, (per_dtype(uniform(-6, 10.1), uniform(-7, 27.3)),), (1, 2),
         EDGE + (0.4999, 0.5001, 10.0, 26.5)),
    Case("erfcx", "erf", _erfcx,
         (lambda r, n, d: np.concatenate([per_dtype(uniform(-9.3, 40), uniform(-26.6, 40))(r, n // 2, d),
                                          magnitudes(1, 1e30, False)(r, n - n // 2, d)]),), (1, 1.5),
         EDGE + (1e20, 1e30)),
    Case("normcdf", "erf", _normcdf, (per_dtype(uniform(-14, 6), uniform(-38, 9)),), (1.5, 2.5),
         EDGE + (-10.0, -37.5, 5.0)),
    Case("erfinv", "erf", _erfinv, (lambda r, n, d: np.concatenate([uniform(-1, 1)(r, n // 2, d),
                                                                    1 - magnitudes(1e-16, 0.5, False)(
                                                                        r, n - n // 2, d)]),), (1.5, 2.5),
         (0.0, -0.0, 1e-30, 0.5, -0.9999, 0.99999994), n=512),
    Case("erfcinv", "erf", _erfcinv, (lambda r, n, d: np.concatenate([uniform(0, 2)(r, n // 2, d),
                                                                      full_range(False)(r, n - n // 2, d) % 2]),),
         (2, 2.5), (1.0, 0.5, 1.5, 1e-30, 1e-300, 1.9999999), n=512),
    Case("normcdfinv", "erf", lambda p: -mp.sqrt(2) * _erfcinv(2 * p),
         (lambda r, n, d: np.concatenate([uniform(0, 1)(r, n // 2, d),
                                          full_range(False)(r, n - n // 2, d) % 0.5]),), (2.5, 2.5),
         (0.5, 0.25, 1e-30, 0.999999, 1e-300), n=512),
    # -------------------------------------------------------------------------- gamma
    Case("lgamma", "gamma", lambda x: mp.re(mp.loggamma(x)),
         (lambda r, n, d: np.concatenate([uniform(-2.2, 10)(r, n // 2, d), near((1.0, 2.0), 0.1)(r, n // 4, d),
                                          magnitudes(10, 1e30, False)(r, n - n // 2 - n // 4, d)]),), (1, 2),
         (1.0, 2.0, 0.5, 1e-30, 3.5, 1e30, -0.5, -1.5)),
    Case("tgamma", "gamma", mp.gamma, (per_dtype(uniform(-40, 35), uniform(-185, 171.6)),), (1, 1.5),
         (1.0, 0.5, 1e-30, -0.5, 2.5, 34.9, -185.5)),
    # ------------------------------------------------------------------------- Bessel
    Case("j0", "bessel", mp.j0, (lambda r, n, d: np.concatenate([uniform(-8, 8)(r, n // 2, d),
                                                                 magnitudes(8, 1e6)(r, n - n // 2, d)]),),
         (1, 3.5), EDGE + (2.404825557695773, 5.520078110286311), abs_region=beyond(8.0), abs_bound=(2e-8, 1e-16)),
    Case("j1", "bessel", mp.j1, (lambda r, n, d: np.concatenate([uniform(-8, 8)(r, n // 2, d),
                                                                 magnitudes(8, 1e6)(r, n - n // 2, d)]),),
         (1, 2), EDGE + (3.8317059702075125, 1e-30), abs_region=beyond(8.0), abs_bound=(2e-8, 1e-16)),
    Case("y0", "bessel", lambda x: mp.bessely(0, x), (lambda r, n, d: np.concatenate([
        uniform(0, 8)(r, n // 2, d), magnitudes(8, 1e6, False)(r, n - n // 2, d)]),), (1, 3.5),
         (1.0, 0.8935769662791675, 3.957678419314858, 1e-30), n=256, abs_region=beyond(8.0), abs_bound=(2e-8, 1e-16)),
    Case("y1", "bessel", lambda x: mp.bessely(1, x), (lambda r, n, d: np.concatenate([
        uniform(0, 8)(r, n // 2, d), magnitudes(8, 1e6, False)(r, n - n // 2, d)]),), (1, 2),
         (1.0, 2.197141326031017, 1e-30), n=256, abs_region=beyond(8.0), abs_bound=(2e-8, 1e-16)),
    Case("jn", "bessel", lambda k, x: mp.besselj(int(k), x), (integers(-30, 30), uniform(-40, 40)), (1, 1),
         n=512, abs_region=lambda args: np.ones(len(args[0]), bool), abs_bound=(2e-8, 5e-16), int_order=True),
    Case("yn", "bessel", lambda k, x: mp.bessely(int(k), x), (integers(-20, 20), uniform(0.5, 40)), (1, 6),
         n=256, abs_region=lambda args: np.abs(args[1]) > np.abs(args[0]), abs_bound=(2e-8, 5e-16),
         int_order=True),
    Case("cyl_bessel_i0", "bessel", lambda x: mp.besseli(0, x), (per_dtype(uniform(-91, 91), uniform(-713, 713)),),
         (1, 3.5), EDGE + (8.0, 7.999)),
    Case("cyl_bessel_i1", "bessel", lambda x: mp.besseli(1, x), (per_dtype(uniform(-91, 91), uniform(-713, 713)),),
         (1, 4.5), EDGE + (8.0, 7.999)),
]
CASE = {c.name: c for c in CASES}
GROUPS = sorted({c.group for c in CASES})


def draw_inputs(case: Case, dt: np.dtype, seed: int = 0) -> list[np.ndarray]:
    """The arguments of `case` in `dt` (int32 for an order): random points, then the edge values."""
    rng = np.random.default_rng([seed, sum(map(ord, case.name))])
    args = [np.asarray(s(rng, case.n, dt), np.float64) for s in case.samplers]
    tiny = tuple(_tiny(dt)) if case.group not in ("gamma", "bessel") else ()
    with np.errstate(over="ignore"):  # edges beyond the dtype's range are left out
        edges = [e for e in case.edges + tiny if math.isfinite(float(np.asarray(e, dt)))]
    if edges:
        args[0] = np.concatenate([args[0], np.asarray(edges, np.float64)])
        for i in range(1, len(args)):
            args[i] = np.concatenate([args[i], case.samplers[i](rng, len(edges), dt)])
    out = [a.astype(dt) for a in args]
    if case.int_order:
        out[0] = args[0].astype(np.int32)
    return out


def exact(case: Case, args: Sequence[np.ndarray], dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The exact results as (hi, lo) float64 pairs (hi + lo to about 2^-106)."""
    n = len(args[0])
    hi, lo = np.empty(n), np.empty(n)
    with mp.workprec(PREC[np.dtype(dt)]):
        for i in range(n):
            # zeros stay Python floats, so a reference can see their sign
            values = [mp.mpf(int(a[i])) if a.dtype.kind == "i" else float(a[i]) if a[i] == 0 else mp.mpf(float(a[i]))
                      for a in args]
            try:
                y = case.reference(*values)
            except (ValueError, ZeroDivisionError):
                y = mp.nan
            if isinstance(y, mp.mpc):
                y = y.real if y.imag == 0 else mp.nan
            try:
                h = float(y)
            except OverflowError:
                h = math.copysign(math.inf, float(mp.sign(y)))
            hi[i] = h
            lo[i] = float(y - h) if math.isfinite(h) else 0.0
    return hi, lo


def ulp_error(result: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """|result - exact| in ulps of the exact value (0 where both are the same inf, NaN or 0; inf
    where a result is NaN or infinite and the exact value is not)."""
    info = np.finfo(result.dtype)
    r = result.astype(np.float64)
    with np.errstate(all="ignore"):
        rounded = hi.astype(result.dtype).astype(np.float64)  # overflow to inf where the exact value does
        e = np.maximum(np.floor(np.log2(np.abs(hi))), math.log2(float(info.tiny)))
        err = np.abs((r - hi) - lo) / np.exp2(e - info.nmant)
    same = (np.isnan(r) & np.isnan(hi)) | (np.isinf(r) & (r == rounded)) | ((r == 0) & (hi == 0))
    err = np.where(same, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def abs_error(result: np.ndarray, hi: np.ndarray) -> np.ndarray:
    r = result.astype(np.float64)
    with np.errstate(all="ignore"):
        err = np.abs(r - hi)
    same = (np.isnan(r) & np.isnan(hi)) | (r == hi)
    return np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))


# ------------------------------------------------------------------------------ special values

INF, NAN = math.inf, math.nan
PI = math.pi
# (function, arguments, result): C99 Annex F and CUDA's documented special cases; a result given
# as a float is compared after rounding to the dtype, signed zeros and NaN included
SPECIALS = {
    "sin": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), NAN), ((-INF,), NAN), ((NAN,), NAN)],
    "cos": [((0.0,), 1.0), ((-0.0,), 1.0), ((INF,), NAN), ((NAN,), NAN)],
    "tan": [((0.0,), 0.0), ((-0.0,), -0.0), ((-INF,), NAN), ((NAN,), NAN)],
    "sinpi": [((0.0,), 0.0), ((-0.0,), -0.0), ((1.0,), 0.0), ((-1.0,), -0.0), ((2.0,), 0.0), ((-3.0,), -0.0),
              ((0.5,), 1.0), ((-0.5,), -1.0), ((1.5,), -1.0), ((1e30,), 0.0), ((INF,), NAN), ((NAN,), NAN)],
    "cospi": [((0.0,), 1.0), ((-0.0,), 1.0), ((1.0,), -1.0), ((0.5,), 0.0), ((-0.5,), 0.0), ((1.5,), 0.0),
              ((-2.5,), 0.0), ((1e30,), 1.0), ((INF,), NAN), ((NAN,), NAN)],
    "asin": [((0.0,), 0.0), ((-0.0,), -0.0), ((1.0,), PI / 2), ((-1.0,), -PI / 2), ((1.5,), NAN), ((NAN,), NAN)],
    "acos": [((1.0,), 0.0), ((-1.0,), PI), ((0.0,), PI / 2), ((-1.5,), NAN), ((NAN,), NAN)],
    "atan": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), PI / 2), ((-INF,), -PI / 2), ((NAN,), NAN)],
    "atan2": [((0.0, 0.0), 0.0), ((-0.0, 0.0), -0.0), ((0.0, -0.0), PI), ((-0.0, -0.0), -PI), ((0.0, -1.0), PI),
              ((-0.0, -1.0), -PI), ((0.0, 1.0), 0.0), ((1.0, 0.0), PI / 2), ((-1.0, -0.0), -PI / 2),
              ((INF, INF), PI / 4), ((-INF, INF), -PI / 4), ((INF, -INF), 3 * PI / 4), ((-INF, -INF), -3 * PI / 4),
              ((1.0, INF), 0.0), ((-1.0, INF), -0.0), ((1.0, -INF), PI), ((-1.0, -INF), -PI),
              ((INF, 1.0), PI / 2), ((NAN, 1.0), NAN), ((1.0, NAN), NAN)],
    "sinh": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), INF), ((-INF,), -INF), ((1000.0,), INF), ((NAN,), NAN)],
    "cosh": [((0.0,), 1.0), ((-0.0,), 1.0), ((INF,), INF), ((-INF,), INF), ((-1000.0,), INF), ((NAN,), NAN)],
    "tanh": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), 1.0), ((-INF,), -1.0), ((1000.0,), 1.0), ((NAN,), NAN)],
    "asinh": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), INF), ((-INF,), -INF), ((NAN,), NAN)],
    "acosh": [((1.0,), 0.0), ((INF,), INF), ((0.5,), NAN), ((-INF,), NAN), ((NAN,), NAN)],
    "atanh": [((0.0,), 0.0), ((-0.0,), -0.0), ((1.0,), INF), ((-1.0,), -INF), ((2.0,), NAN), ((NAN,), NAN)],
    "exp": [((0.0,), 1.0), ((-0.0,), 1.0), ((INF,), INF), ((-INF,), 0.0), ((1000.0,), INF), ((-1000.0,), 0.0),
            ((NAN,), NAN)],
    "exp2": [((0.0,), 1.0), ((10.0,), 1024.0), ((-1.0,), 0.5), ((INF,), INF), ((-INF,), 0.0), ((2000.0,), INF),
             ((NAN,), NAN)],
    "exp10": [((0.0,), 1.0), ((2.0,), 100.0), ((INF,), INF), ((-INF,), 0.0), ((400.0,), INF), ((NAN,), NAN)],
    "expm1": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), INF), ((-INF,), -1.0), ((1000.0,), INF), ((NAN,), NAN)],
    "log": [((1.0,), 0.0), ((0.0,), -INF), ((-0.0,), -INF), ((-1.0,), NAN), ((INF,), INF), ((-INF,), NAN),
            ((NAN,), NAN)],
    "log2": [((1.0,), 0.0), ((1024.0,), 10.0), ((0.5,), -1.0), ((0.0,), -INF), ((-2.0,), NAN), ((INF,), INF),
             ((NAN,), NAN)],
    "log10": [((1.0,), 0.0), ((100.0,), 2.0), ((0.0,), -INF), ((-2.0,), NAN), ((INF,), INF), ((NAN,), NAN)],
    "log1p": [((0.0,), 0.0), ((-0.0,), -0.0), ((-1.0,), -INF), ((-2.0,), NAN), ((INF,), INF), ((NAN,), NAN)],
    "pow": [((2.0, 0.0), 1.0), ((NAN, -0.0), 1.0), ((1.0, NAN), 1.0), ((1.0, INF), 1.0), ((-1.0, INF), 1.0),
            ((-1.0, -INF), 1.0), ((0.0, -3.0), INF), ((-0.0, -3.0), -INF), ((-0.0, -2.0), INF), ((0.0, 3.0), 0.0),
            ((-0.0, 3.0), -0.0), ((-0.0, 2.0), 0.0), ((0.0, -INF), INF), ((0.5, -INF), INF), ((2.0, -INF), 0.0),
            ((0.5, INF), 0.0), ((2.0, INF), INF), ((-INF, -3.0), -0.0), ((-INF, -2.0), 0.0), ((-INF, 3.0), -INF),
            ((-INF, 2.0), INF), ((-INF, 0.5), INF), ((INF, -1.0), 0.0), ((INF, 1.0), INF), ((-2.0, 0.5), NAN),
            ((-2.0, 3.0), -8.0), ((2.0, 10.0), 1024.0), ((NAN, 1.0), NAN), ((2.0, NAN), NAN)],
    "cbrt": [((0.0,), 0.0), ((-0.0,), -0.0), ((-8.0,), -2.0), ((27.0,), 3.0), ((INF,), INF), ((-INF,), -INF),
             ((NAN,), NAN)],
    "rcbrt": [((0.0,), INF), ((-0.0,), -INF), ((8.0,), 0.5), ((INF,), 0.0), ((-INF,), -0.0), ((NAN,), NAN)],
    "hypot": [((3.0, -4.0), 5.0), ((0.0, -0.0), 0.0), ((INF, NAN), INF), ((NAN, -INF), INF), ((NAN, 1.0), NAN)],
    "rhypot": [((3.0, 4.0), 0.2), ((0.0, 0.0), INF), ((-INF, NAN), 0.0), ((NAN, 1.0), NAN)],
    "norm3d": [((2.0, 3.0, 6.0), 7.0), ((0.0, 0.0, 0.0), 0.0), ((NAN, INF, 1.0), INF), ((NAN, 1.0, 1.0), NAN)],
    "rnorm3d": [((2.0, 3.0, 6.0), 1 / 7), ((0.0, 0.0, 0.0), INF), ((NAN, -INF, 1.0), 0.0)],
    "norm4d": [((1.0, 1.0, 1.0, 1.0), 2.0), ((0.0, 0.0, 0.0, 0.0), 0.0), ((1.0, NAN, 1.0, INF), INF)],
    "rnorm4d": [((1.0, 1.0, 1.0, 1.0), 0.5), ((0.0, 0.0, 0.0, 0.0), INF), ((1.0, NAN, 1.0, INF), 0.0)],
    "erf": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), 1.0), ((-INF,), -1.0), ((10.0,), 1.0), ((NAN,), NAN)],
    "erfc": [((0.0,), 1.0), ((INF,), 0.0), ((-INF,), 2.0), ((30.0,), 0.0), ((NAN,), NAN)],
    "erfcx": [((0.0,), 1.0), ((INF,), 0.0), ((-INF,), INF), ((-30.0,), INF), ((NAN,), NAN)],
    "normcdf": [((0.0,), 0.5), ((INF,), 1.0), ((-INF,), 0.0), ((NAN,), NAN)],
    "erfinv": [((0.0,), 0.0), ((-0.0,), -0.0), ((1.0,), INF), ((-1.0,), -INF), ((1.5,), NAN), ((NAN,), NAN)],
    "erfcinv": [((1.0,), 0.0), ((0.0,), INF), ((2.0,), -INF), ((-1.0,), NAN), ((2.5,), NAN), ((NAN,), NAN)],
    "normcdfinv": [((0.5,), 0.0), ((0.0,), -INF), ((1.0,), INF), ((2.0,), NAN), ((NAN,), NAN)],
    "lgamma": [((1.0,), 0.0), ((2.0,), 0.0), ((0.0,), INF), ((-1.0,), INF), ((-2.0,), INF), ((INF,), INF),
               ((-INF,), INF), ((NAN,), NAN)],
    "tgamma": [((0.0,), INF), ((-0.0,), -INF), ((1.0,), 1.0), ((5.0,), 24.0), ((-1.0,), NAN), ((INF,), INF),
               ((-INF,), NAN), ((NAN,), NAN)],
    "j0": [((0.0,), 1.0), ((INF,), 0.0), ((-INF,), 0.0), ((NAN,), NAN)],
    "j1": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), 0.0), ((NAN,), NAN)],
    "y0": [((0.0,), -INF), ((-1.0,), NAN), ((INF,), 0.0), ((NAN,), NAN)],
    "y1": [((0.0,), -INF), ((-1.0,), NAN), ((INF,), 0.0), ((NAN,), NAN)],
    "jn": [((0, 0.0), 1.0), ((3, 0.0), 0.0), ((2, INF), 0.0), ((5, NAN), NAN)],
    "yn": [((2, 0.0), -INF), ((2, -1.0), NAN), ((3, INF), 0.0), ((5, NAN), NAN)],
    "cyl_bessel_i0": [((0.0,), 1.0), ((INF,), INF), ((-INF,), INF), ((NAN,), NAN)],
    "cyl_bessel_i1": [((0.0,), 0.0), ((-0.0,), -0.0), ((INF,), INF), ((-INF,), -INF), ((NAN,), NAN)],
}
# f(-x) = -f(x) or f(-x) = f(x), bit for bit
ODD = ("sin", "tan", "sinpi", "asin", "atan", "sinh", "tanh", "asinh", "atanh", "erf", "erfinv", "cbrt", "rcbrt",
       "j1", "cyl_bessel_i1")
EVEN = ("cos", "cospi", "cosh", "j0", "cyl_bessel_i0")
