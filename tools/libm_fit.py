"""Fit the polynomial coefficients of tile's libdevice math (tile/language/extra/libm_*.py).

Every table there was printed by this script: a minimax fit (Remez exchange, in mpmath at 60
digits) of a function `g` on an interval, in a basis of powers of the variable, with a weight
`w` that turns the error into the one the library cares about (relative to the final result,
or absolute). Coefficients are rounded to the table's float type once, at the end; the script
prints the weighted error before and after that rounding.

    python tools/libm_fit.py                 # every table
    python tools/libm_fit.py exp_f32 log_f64 # some of them

A fit reads like the formula it serves. `exp_f32` is the P of

    e^r = 1 + r + r^2 P(r),   |r| <= ln(2)/2

so it fits g(r) = (e^r - 1 - r) / r^2 with weight w(r) = r^2 / e^r: the error of r^2 P(r)
measured relative to e^r.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import mpmath as mp
import numpy as np

mp.mp.dps = 60
Fn = Callable[[mp.mpf], mp.mpf]


@dataclass
class Fit:
    """Coefficients c_0..c_{n-1} of sum(c_j * x**(start + j * step)) ~ g on [a, b] (weighted by w)."""

    name: str
    g: Fn
    a: float
    b: float
    n: int
    float_bits: int  # 32 or 64: the float type the coefficients are rounded to
    w: Fn = field(default=lambda x: mp.mpf(1))
    step: int = 1  # 2: a polynomial in x**2 (even functions, or odd ones with a factor x outside)
    start: int = 0
    grid: int = 3000
    note: str = ""
    split_first: bool = False  # print c_0 as two floats (hi, lo): its rounding alone would cost half an ulp


def _basis(fit: Fit, x: mp.mpf) -> list[mp.mpf]:
    return [x ** (fit.start + j * fit.step) for j in range(fit.n)]


def _grid(fit: Fit) -> list[mp.mpf]:
    """Chebyshev-spaced points (dense at the ends, where minimax errors peak); never exactly 0."""
    a, b = mp.mpf(fit.a), mp.mpf(fit.b)
    pts = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (fit.grid - 1)) for i in range(fit.grid)]
    return [p if p != 0 else mp.mpf(10) ** -30 for p in pts]


def remez(fit: Fit, iterations: int = 40) -> tuple[list[mp.mpf], mp.mpf]:
    """The minimax coefficients and the level of the weighted error they reach."""
    xs = _grid(fit)
    gs = [fit.g(x) for x in xs]
    ws = [fit.w(x) for x in xs]
    rows = [_basis(fit, x) for x in xs]
    free = fit.n
    m = free + 1
    # interior Chebyshev nodes: a weight may vanish at an end of the interval
    ref = sorted({int((fit.grid - 1) * (1 - mp.cos(mp.pi * (i + 0.5) / m)) / 2) for i in range(m)})
    coeffs: list[mp.mpf] = []
    level = mp.mpf(0)
    for _ in range(iterations):
        a = mp.matrix(m, m)
        rhs = mp.matrix(m, 1)
        for i, k in enumerate(ref):  # w(x) (g(x) - p(x)) = (-1)^i E at the reference points
            for j in range(free):
                a[i, j] = ws[k] * rows[k][j]
            a[i, free] = (-1) ** i
            rhs[i] = ws[k] * gs[k]
        sol = mp.lu_solve(a, rhs)
        coeffs = [sol[j] for j in range(free)]
        level = abs(sol[free])
        err = [ws[k] * (gs[k] - mp.fsum(c * r for c, r in zip(coeffs, rows[k]))) for k in range(fit.grid)]
        new_ref = _alternating_extrema(err, m)
        worst = max(abs(e) for e in err)
        if new_ref is None or new_ref == ref or worst <= level * (1 + mp.mpf(10) ** -6):
            break
        ref = new_ref
    return coeffs, level


def _alternating_extrema(err: list[mp.mpf], m: int) -> Optional[list[int]]:
    """m grid indices where the error alternates in sign, each the largest of its run (None when
    the error alternates fewer times: the fit is as good as the grid can tell)."""
    runs: list[int] = []
    for k, e in enumerate(err):
        if runs and (e >= 0) == (err[runs[-1]] >= 0):
            if abs(e) > abs(err[runs[-1]]):
                runs[-1] = k
        else:
            runs.append(k)
    while len(runs) > m:  # drop the smaller end, or merge the smallest interior extremum away
        if abs(err[runs[0]]) < abs(err[runs[-1]]):
            runs.pop(0)
        else:
            runs.pop()
    return runs if len(runs) == m else None


def rounded(coeffs: list[mp.mpf], bits: int) -> list[float]:
    as_type = np.float32 if bits == 32 else np.float64
    return [float(as_type(float(c))) for c in coeffs]


def max_error(fit: Fit, coeffs: list) -> mp.mpf:
    xs = _grid(fit)
    return max(abs(fit.w(x) * (fit.g(x) - mp.fsum(mp.mpf(c) * r for c, r in zip(coeffs, _basis(fit, x)))))
               for x in xs)


def table(fit: Fit) -> str:
    exact, level = remez(fit)
    coeffs = rounded(exact, fit.float_bits)
    if fit.split_first:  # c_0 = hi + lo; the error below counts hi + lo as exact
        lo = rounded([exact[0] - mp.mpf(coeffs[0])], fit.float_bits)[0]
        err = max_error(fit, [mp.mpf(coeffs[0]) + mp.mpf(lo)] + coeffs[1:])
        coeffs = [coeffs[0], lo] + coeffs[1:]
    else:
        err = max_error(fit, coeffs)
    body = ", ".join(repr(c) for c in coeffs)
    first = "c0 hi, c0 lo, c1, ..." if fit.split_first else "c0, c1, ..."
    return (f"# {fit.name}: {fit.note} on [{fit.a}, {fit.b}]; minimax error 2^{float(mp.log(level, 2)):.1f},"
            f" rounded 2^{float(mp.log(err, 2)):.1f}; {first}\n{fit.name.upper()} = ({body},)\n")


# ------------------------------------------------------------------------------ the fits

LN2 = mp.log(2)


def _exp_tail(x: mp.mpf) -> mp.mpf:
    return (mp.exp(x) - 1 - x) / x**2 if abs(x) > mp.mpf(10) ** -20 else mp.mpf(1) / 2 + x / 6


def _log1p_tail(f: mp.mpf) -> mp.mpf:
    return (mp.log1p(f) - f + f**2 / 2) / f**3 if abs(f) > mp.mpf(10) ** -20 else mp.mpf(1) / 3


def _atanh_tail(z: mp.mpf) -> mp.mpf:
    """R(z) with log((1+s)/(1-s)) = 2s + s^3 R(s^2), z = s^2."""
    s = mp.sqrt(z)
    return (mp.log((1 + s) / (1 - s)) - 2 * s) / s**3 if s > mp.mpf(10) ** -20 else mp.mpf(2) / 3


def _odd_tail(f: Callable[[mp.mpf], mp.mpf], c1: mp.mpf) -> Fn:
    """x -> (f(x) - c1 x) / x^3 for an odd f with f'(0) = c1."""
    return lambda x: (f(x) - c1 * x) / x**3


def _erfcx(x: mp.mpf) -> mp.mpf:
    if x > 10**6:  # the asymptotic series, where erfc(x) exp(x^2) would take long
        return (1 - 1 / (2 * x**2) + 3 / (4 * x**4) - 15 / (8 * x**6)) / (x * mp.sqrt(mp.pi))
    return mp.erfc(x) * mp.exp(x * x)


def _erfcx_of_t(k: float) -> Fn:
    """t -> (1 + 2x) erfcx(x) with x = k (1 + t) / (1 - t): t in [-1, 1] covers x in [0, inf]."""
    def g(t: mp.mpf) -> mp.mpf:
        if t >= 1:
            return 2 / mp.sqrt(mp.pi)
        x = k * (1 + t) / (1 - t)
        return (1 + 2 * x) * _erfcx(x)
    return g


def _erfcinv(y: mp.mpf) -> mp.mpf:
    if y > mp.mpf(1) / 4:
        return mp.erfinv(1 - y)
    return mp.findroot(lambda r: mp.log(mp.erfc(r)) - mp.log(y), mp.sqrt(-mp.log(y)))


def _erfinv_ratio(w: mp.mpf) -> mp.mpf:
    """erfinv(x) / x as a function of w = -log(1 - x^2) (through erfcinv: x may round to 1)."""
    e = mp.exp(-w)
    x = mp.sqrt(1 - e)
    return _erfcinv(e / (1 + x)) / x if x > 0 else mp.sqrt(mp.pi) / 2


def _erfinv_in_s(center: float, scale: float) -> Fn:
    """t -> erfinv(x) / x with sqrt(w) = center + scale t."""
    return lambda t: _erfinv_ratio((t * scale + center) ** 2)


def _stirling_tail(t: mp.mpf) -> mp.mpf:
    """t -> x (lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2)), x = 1/sqrt(t): Stirling's correction
    times x, a function of 1/x^2."""
    if t == 0:
        return mp.mpf(1) / 12
    x = 1 / mp.sqrt(t)
    return x * (mp.loggamma(x) - ((x - mp.mpf(1) / 2) * mp.log(x) - x + mp.log(2 * mp.pi) / 2))


def _hankel_pq(order: int, x: mp.mpf) -> tuple[mp.mpf, mp.mpf]:
    """(P, Q) with J(x) = sqrt(2 / (pi x)) (P cos c - Q sin c), Y(x) = sqrt(2 / (pi x)) (P sin c + Q cos c),
    c = x - (2 order + 1) pi / 4: from J and Y, or Hankel's asymptotic series for huge x."""
    if x > 10**4:
        mu = 4 * order**2
        terms, a = [], mp.mpf(1)
        for k in range(1, 16):
            a = a * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
            terms.append(a)
        p = 1 + mp.fsum((-1) ** (k // 2) * t for k, t in enumerate(terms, 1) if k % 2 == 0)
        q = mp.fsum((-1) ** (k // 2) * t for k, t in enumerate(terms, 1) if k % 2 == 1)
        return p, q
    c = x - (2 * order + 1) * mp.pi / 4
    j, y = mp.besselj(order, x), mp.bessely(order, x)
    scale = mp.sqrt(mp.pi * x / 2)
    return scale * (j * mp.cos(c) + y * mp.sin(c)), scale * (y * mp.cos(c) - j * mp.sin(c))


def _hankel_fit(order: int, which: int) -> Fn:
    """u -> P(x), or x Q(x) / 8, with u = 64 / x^2 in (0, 1] (x >= 8)."""
    def g(u: mp.mpf) -> mp.mpf:
        if u == 0 or u < mp.mpf(10) ** -25:
            return mp.mpf(1) if which == 0 else (4 * order**2 - 1) / mp.mpf(64)
        x = 8 / mp.sqrt(u)
        pq = _hankel_pq(order, x)
        return pq[0] if which == 0 else pq[1] * x / 8
    return g


def _scaled_bessel_i(order: int) -> Fn:
    """t -> sqrt(x) e^-x I_order(x), x = 8 / t (t in (0, 1]): Hankel's series for huge x."""
    def g(t: mp.mpf) -> mp.mpf:
        if t < mp.mpf(10) ** -3:
            x, mu, a, total = 8 / t if t > 0 else mp.inf, 4 * order**2, mp.mpf(1), mp.mpf(1)
            if x == mp.inf:
                return 1 / mp.sqrt(2 * mp.pi)
            for k in range(1, 12):
                a = -a * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
                total += a
            return total / mp.sqrt(2 * mp.pi)
        x = 8 / t
        return mp.sqrt(x) * mp.exp(-x) * mp.besseli(order, x)
    return g


def _bessel_near_zero(f: Fn, zero: mp.mpf) -> Fn:
    """t -> f(zero + t) / t: the part of a Bessel function that has no zero at `zero`."""
    return lambda t: f(zero + t) / t if abs(t) > mp.mpf(10) ** -25 else mp.diff(f, zero)


def _y0_regular(z: mp.mpf) -> mp.mpf:
    """z -> y0(x) - (2/pi) log(x) j0(x), x = sqrt(z): even and analytic."""
    x = mp.sqrt(z) if z > 0 else mp.mpf(10) ** -30
    return mp.bessely(0, x) - 2 / mp.pi * mp.log(x) * mp.besselj(0, x)


def _y1_regular(z: mp.mpf) -> mp.mpf:
    """z -> (y1(x) - (2/pi) (log(x) j1(x) - 1/x)) / x, x = sqrt(z): even and analytic."""
    x = mp.sqrt(z) if z > 0 else mp.mpf(10) ** -30
    return (mp.bessely(1, x) - 2 / mp.pi * (mp.log(x) * mp.besselj(1, x) - 1 / x)) / x


J0 = lambda x: mp.besselj(0, x)  # noqa: E731
J1 = lambda x: mp.besselj(1, x)  # noqa: E731
Y0 = lambda x: mp.bessely(0, x)  # noqa: E731
Y1 = lambda x: mp.bessely(1, x)  # noqa: E731
BESSEL_ZEROS = {"j0": (mp.besseljzero(0, 1), mp.besseljzero(0, 2)), "j1": (mp.besseljzero(1, 1), mp.besseljzero(1, 2)),
                "y0": (mp.besselyzero(0, 1), mp.besselyzero(0, 2), mp.besselyzero(0, 3)),
                "y1": (mp.besselyzero(1, 1), mp.besselyzero(1, 2))}


def _bessel_piece(name: str, f: Fn, zero: mp.mpf, a: float, b: float, n: int) -> Fit:
    g = _bessel_near_zero(f, zero)
    return Fit(name, g, a - float(zero), b - float(zero), n, 64, w=lambda t: t / f(zero + t) if t else 1 / g(t),
               grid=500, note=f"f(x) = t P(t), t = x - {float(zero)!r}")


HALF_LN2 = float(LN2 / 2) * 1.0005       # a little wider than the reduced range: rint may land either way
SQRT_HALF, SQRT_TWO = float(mp.sqrt(0.5)), float(mp.sqrt(2))
S_MAX = (SQRT_TWO - 1) / (SQRT_TWO + 1)
PIO4 = float(mp.pi / 4) * 1.001
TAN_PIO8 = float(mp.tan(mp.pi / 8)) * 1.001

FITS = [
    Fit("exp_f32", _exp_tail, -HALF_LN2, HALF_LN2, 6, 32, w=lambda r: r**2 / mp.expm1(r),
        note="e^r - 1 = r + r^2 P(r), relative to e^r - 1"),
    Fit("exp_f64", _exp_tail, -HALF_LN2, HALF_LN2, 11, 64, w=lambda r: r**2 / mp.expm1(r),
        note="e^r - 1 = r + r^2 P(r), relative to e^r - 1"),
    Fit("log_f32", _log1p_tail, SQRT_HALF - 1, SQRT_TWO - 1, 8, 32, w=lambda f: f**3 / mp.log1p(f),
        note="log(1+f) = f - f^2/2 + f^3 P(f)"),
    Fit("log_f64", lambda z: (_atanh_tail(z) - mp.mpf(2) / 3) / z, 0, S_MAX**2 * 1.001, 7, 64,
        w=lambda z: z * mp.sqrt(z)**3 / mp.log((1 + mp.sqrt(z)) / (1 - mp.sqrt(z))),
        note="log((1+s)/(1-s)) = 2s + s^3 (2/3 + z P(z)), z = s^2"),
    Fit("sin_f32", _odd_tail(mp.sin, 1), 0, PIO4, 3, 32, w=lambda r: r**3 / mp.sin(r), step=2,
        note="sin(r) = r + r^3 P(r^2)"),
    Fit("sin_f64", _odd_tail(mp.sin, 1), 0, PIO4, 7, 64, w=lambda r: r**3 / mp.sin(r), step=2,
        note="sin(r) = r + r^3 P(r^2)"),
    Fit("cos_f32", lambda r: (mp.cos(r) - 1 + r**2 / 2) / r**4, 0, PIO4, 3, 32, w=lambda r: r**4 / mp.cos(r),
        step=2, note="cos(r) = 1 - r^2/2 + r^4 P(r^2)"),
    Fit("cos_f64", lambda r: (mp.cos(r) - 1 + r**2 / 2) / r**4, 0, PIO4, 7, 64, w=lambda r: r**4 / mp.cos(r),
        step=2, note="cos(r) = 1 - r^2/2 + r^4 P(r^2)"),
    Fit("asin_f32", _odd_tail(mp.asin, 1), 0, 0.5005, 6, 32, w=lambda x: x**3 / mp.asin(x), step=2,
        note="asin(x) = x + x^3 P(x^2)"),
    Fit("asin_f64", _odd_tail(mp.asin, 1), 0, 0.5005, 15, 64, w=lambda x: x**3 / mp.asin(x), step=2,
        note="asin(x) = x + x^3 P(x^2)"),
    Fit("atan_f32", _odd_tail(mp.atan, 1), 0, TAN_PIO8, 6, 32, w=lambda x: x**3 / mp.atan(x), step=2,
        note="atan(u) = u + u^3 P(u^2)"),
    Fit("atan_f64", _odd_tail(mp.atan, 1), 0, TAN_PIO8, 12, 64, w=lambda x: x**3 / mp.atan(x), step=2,
        note="atan(u) = u + u^3 P(u^2)"),
    Fit("erf_f32", lambda x: mp.erf(x) / x, 0, 1.001, 7, 32, w=lambda x: x / mp.erf(x), step=2,
        split_first=True, note="erf(x) = x P(x^2)"),
    Fit("erf_f64", lambda x: mp.erf(x) / x, 0, 1.001, 14, 64, w=lambda x: x / mp.erf(x), step=2,
        note="erf(x) = x P(x^2)"),
    Fit("erfcx_f32", _erfcx_of_t(3.0), -1, 1, 13, 32, w=lambda t: 1 / _erfcx_of_t(3.0)(t), grid=800,
        split_first=True, note="erfcx(x) = P(t) / (1 + 2x), t = (x - 3) / (x + 3)"),
    Fit("erfcx_f64", _erfcx_of_t(4.0), -1, 1, 26, 64, w=lambda t: 1 / _erfcx_of_t(4.0)(t), grid=800,
        note="erfcx(x) = P(t) / (1 + 2x), t = (x - 4) / (x + 4)"),
    # erfinv(x) = x P(t): t = w = -log(1 - x^2) below 5 (fp32) or 2 (fp64), else t from s = sqrt(w)
    Fit("erfinv_a_f32", _erfinv_ratio, 0, 5.001, 10, 32, w=lambda t: 1 / _erfinv_ratio(t), grid=400,
        split_first=True, note="erfinv(x) / x, t = w"),
    Fit("erfinv_b_f32", _erfinv_in_s(3.25, 1), -1.02, 0.85, 11, 32, w=lambda t: 1 / _erfinv_in_s(3.25, 1)(t),
        grid=400, split_first=True, note="erfinv(x) / x, t = s - 3.25"),
    Fit("erfinv_c_f32", _erfinv_in_s(7, 4), -0.76, 0.81, 10, 32, w=lambda t: 1 / _erfinv_in_s(7, 4)(t),
        grid=400, split_first=True, note="erfinv(x) / x, t = (s - 7) / 4"),
    Fit("erfinv_a_f64", _erfinv_ratio, 0, 2.001, 16, 64, w=lambda t: 1 / _erfinv_ratio(t), grid=400,
        note="erfinv(x) / x, t = w"),
    Fit("erfinv_s0_f64", _erfinv_in_s(1.96, 1), -0.555, 0.555, 20, 64, w=lambda t: 1 / _erfinv_in_s(1.96, 1)(t),
        grid=400, note="erfinv(x) / x, t = s - 1.96"),
    Fit("erfinv_b_f64", _erfinv_in_s(3.25, 1), -0.76, 0.76, 20, 64, w=lambda t: 1 / _erfinv_in_s(3.25, 1)(t),
        grid=400, note="erfinv(x) / x, t = s - 3.25"),
    Fit("erfinv_c_f64", _erfinv_in_s(5.125, 1), -1.13, 1.13, 20, 64, w=lambda t: 1 / _erfinv_in_s(5.125, 1)(t),
        grid=400, note="erfinv(x) / x, t = s - 5.125"),
    Fit("erfinv_d_f64", _erfinv_in_s(9, 4), -0.69, 0.76, 20, 64, w=lambda t: 1 / _erfinv_in_s(9, 4)(t),
        grid=300, note="erfinv(x) / x, t = (s - 9) / 4"),
    Fit("erfinv_e_f64", _erfinv_in_s(20, 8), -1.0, 0.93, 20, 64, w=lambda t: 1 / _erfinv_in_s(20, 8)(t),
        grid=300, note="erfinv(x) / x, t = (s - 20) / 8"),
    Fit("lgamma2_f64", lambda t: mp.loggamma(2 + t) / t if t != 0 else 1 - mp.euler, -0.5005, 0.5005, 22, 64,
        w=lambda t: t / mp.loggamma(2 + t) if t != 0 else 1 / (1 - mp.euler), grid=1000, split_first=True,
        note="lgamma(2 + t) = t P(t)"),
    Fit("stirling_f64", _stirling_tail, 0, 1 / 63.9, 9, 64, w=lambda t: mp.sqrt(t), grid=800,
        note="lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + P(1/x^2) / x, x >= 8"),
    # Bessel functions on [0, 8]: pieces around their zeros (fp64; fp32 rounds the fp64 results)
    Fit("j0_a", lambda z: mp.besselj(0, mp.sqrt(z)), 0, 2.57, 12, 64, w=lambda z: 1 / mp.besselj(0, mp.sqrt(z)),
        grid=500, note="j0(x) = P(x^2), x < 1.6"),
    _bessel_piece("j0_b", J0, BESSEL_ZEROS["j0"][0], 1.59, 4.01, 22),
    _bessel_piece("j0_c", J0, BESSEL_ZEROS["j0"][1], 3.99, 7.01, 22),
    Fit("j0_d", lambda t: J0(7.5 + t), -0.51, 0.51, 14, 64, w=lambda t: 1 / J0(7.5 + t), grid=500,
        note="j0(x) = P(x - 7.5)"),
    Fit("j1_a", lambda z: J1(mp.sqrt(z)) / mp.sqrt(z) if z > 0 else mp.mpf(1) / 2, 0, 4.01, 14, 64,
        w=lambda z: mp.sqrt(z) / J1(mp.sqrt(z)) if z > 0 else mp.mpf(2), grid=500, note="j1(x) = x P(x^2), x < 2"),
    _bessel_piece("j1_b", J1, BESSEL_ZEROS["j1"][0], 1.99, 5.51, 24),
    _bessel_piece("j1_c", J1, BESSEL_ZEROS["j1"][1], 5.49, 8.01, 22),
    Fit("y0_a", _y0_regular, 0, 5.77, 18, 64, w=lambda z: mp.mpf(8), grid=500,
        note="y0(x) = (2/pi) log(x) j0(x) + P(x^2), x < 0.7 and 1.1 <= x < 2.4 (absolute error / 8)"),
    _bessel_piece("y0_b", Y0, BESSEL_ZEROS["y0"][0], 0.69, 1.11, 18),
    _bessel_piece("y0_c", Y0, BESSEL_ZEROS["y0"][1], 2.39, 5.51, 24),
    _bessel_piece("y0_d", Y0, BESSEL_ZEROS["y0"][2], 5.49, 8.01, 22),
    Fit("y1_a", _y1_regular, 0, 3.25, 14, 64, w=lambda z: 8 * mp.sqrt(z), grid=500,
        note="y1(x) = (2/pi) (log(x) j1(x) - 1/x) + x P(x^2), x < 1.8 (absolute error / 8)"),
    _bessel_piece("y1_b", Y1, BESSEL_ZEROS["y1"][0], 1.79, 2.61, 18),
    Fit("y1_c", lambda t: Y1(3.3 + t), -0.71, 0.71, 20, 64, w=lambda t: 1 / Y1(3.3 + t), grid=500,
        note="y1(x) = P(x - 3.3)"),
    _bessel_piece("y1_d", Y1, BESSEL_ZEROS["y1"][1], 3.99, 7.01, 22),
    Fit("y1_e", lambda t: Y1(7.5 + t), -0.51, 0.51, 14, 64, w=lambda t: 1 / Y1(7.5 + t), grid=500,
        note="y1(x) = P(x - 7.5)"),
    # x >= 8: Hankel's form, P and x Q / 8 as polynomials in u = 64 / x^2
    Fit("p0", _hankel_fit(0, 0), 0, 1, 14, 64, w=lambda u: mp.mpf(1), grid=400, note="P0(x) = P(u)"),
    Fit("q0", _hankel_fit(0, 1), 0, 1, 14, 64, w=mp.sqrt, grid=400, note="Q0(x) = (8/x) P(u)"),
    Fit("p1", _hankel_fit(1, 0), 0, 1, 14, 64, w=lambda u: mp.mpf(1), grid=400, note="P1(x) = P(u)"),
    Fit("q1", _hankel_fit(1, 1), 0, 1, 14, 64, w=mp.sqrt, grid=400, note="Q1(x) = (8/x) P(u)"),
    Fit("i0_a", lambda z: mp.besseli(0, 8 * mp.sqrt(z)), 0, 1.001, 16, 64,
        w=lambda z: 1 / mp.besseli(0, 8 * mp.sqrt(z)), grid=500, note="I0(x) = P(x^2 / 64), x <= 8"),
    Fit("i0_b", _scaled_bessel_i(0), 0, 1.001, 22, 64, w=lambda t: 1 / _scaled_bessel_i(0)(t), grid=500,
        note="I0(x) = e^x / sqrt(x) P(8 / x), x >= 8"),
    Fit("i1_a", lambda z: mp.besseli(1, 8 * mp.sqrt(z)) / (8 * mp.sqrt(z)) if z > 0 else mp.mpf(1) / 2, 0, 1.001,
        16, 64, w=lambda z: 8 * mp.sqrt(z) / mp.besseli(1, 8 * mp.sqrt(z)) if z > 0 else mp.mpf(2), grid=500,
        note="I1(x) = x P(x^2 / 64), x <= 8"),
    Fit("i1_b", _scaled_bessel_i(1), 0, 1.001, 22, 64, w=lambda t: 1 / _scaled_bessel_i(1)(t), grid=500,
        note="I1(x) = e^x / sqrt(x) P(8 / x), x >= 8"),
    Fit("rcbrt_seed", lambda m: mp.cbrt(m) ** -1, 1, 8, 4, 32, w=lambda m: mp.cbrt(m),
        note="m^(-1/3) ~ P(m), the start of Newton's iteration"),
]


def main(names: list[str]) -> None:
    chosen = [f for f in FITS if not names or f.name in names]
    for fit in chosen:
        print(table(fit))


if __name__ == "__main__":
    main(sys.argv[1:])
