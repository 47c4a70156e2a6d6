"""Correctly rounded f32/f64 arithmetic and conversions in every IEEE rounding mode, in NumPy.

NumPy rounds +, -, *, / and sqrt to nearest in f64. A result in another mode is that value
`r` or one of its neighbours, chosen by the sign `e` of the rounding error (exact - r):

    add.ru(1.0, 2^-60):  r = 1.0, e = +1  ->  nextafter(1.0, +inf) = 1 + 2^-52

The sign comes from an error-free transformation, each exact in f64 arithmetic:
  * sums: Fast2Sum (the larger operand first) gives the rounding error itself;
  * products: Dekker's TwoProduct (Veltkamp splitting) of the operands' mantissas, the
    exponents set aside (frexp) so that nothing overflows or underflows on the way;
  * a / b and sqrt(a): the residual a - r*b (a - r*r) by TwoProduct, its sign is e's;
  * fma (f64): the exact sum p + q + c of TwoProduct and c, rounded by exact sign tests on
    the expansion (Shewchuk's Grow-Expansion); elements whose result leaves the normal
    range (or whose operands' exponents are too far apart to scale) are rounded from exact
    rational arithmetic instead.
An f32 result is computed in f64 (products of f32 are exact there, sums have an exact
error), and `round_pair` rounds the pair (r, e) to f32: directly when r is not an f32,
else one f32 step in e's direction; a round-to-nearest tie of r between two f32 values is
broken by e, so the double rounding through f64 never shows.

Special values follow IEEE 754: infinities and NaN are exact (e = 0); an overflowing result
is r = +-inf with e pointing back to the finite range (so rz, and rd or ru toward zero, give
the largest finite value); an underflow to zero keeps the sign of the exact result.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from tile.ir.types import DType, f32, f64

MODES = ("rn", "rz", "rd", "ru")
_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for 53-bit doubles
_STICKY = 2.0 ** -200  # stands in for an addend far below the other terms (its sign is all that counts)


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or +1 (0 for NaN) as int8."""
    return (x > 0).astype(np.int8) - (x < 0).astype(np.int8)


# ------------------------------------------------------------------------ error-free steps


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, err) with s = fl(a + b) and s + err = a + b exactly, where s is finite."""
    swap = np.abs(b) > np.abs(a)
    hi, lo = np.where(swap, b, a), np.where(swap, a, b)
    s = hi + lo
    return s, lo - (s - hi)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: exact for operands of magnitude below 2^1022 (no ordering needed)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct: p = fl(a * b), p + err = a * b exactly (for |a|, |b| near 1)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_sign(terms: Sequence[np.ndarray]) -> np.ndarray:
    """The sign of the exact sum of float arrays (of magnitude below 2^1000): Grow-Expansion
    turns them into a nonoverlapping expansion, whose largest nonzero component decides."""
    expansion = [terms[0]]
    for b in terms[1:]:
        grown = []
        q = b
        for component in expansion:
            q, h = two_sum(q, component)
            grown.append(h)
        expansion = grown + [q]
    sign = np.zeros(np.shape(terms[0]), np.int8)
    for component in expansion:  # increasing magnitude: the last nonzero one wins
        s = _sign(component)
        sign = np.where(s != 0, s, sign)
    return sign


# ------------------------------------------------------------------------------- rounding


def step(r: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    """The value rounded in `mode` from its round-to-nearest value r (a float array of the
    result type) and the sign e of exact - r."""
    if mode == "rn":
        return r
    inf = r.dtype.type(np.inf)
    if mode == "ru":
        return np.where(e > 0, np.nextafter(r, inf), r)
    if mode == "rd":
        return np.where(e < 0, np.nextafter(r, -inf), r)
    toward_zero = ((e > 0) & (r < 0)) | ((e < 0) & (r > 0))
    return np.where(toward_zero, np.nextafter(r, r.dtype.type(0)), r)


def round_pair(r: np.ndarray, e: np.ndarray, t: DType, mode: str) -> np.ndarray:
    """The exact value r + (a tiny amount of sign e) rounded to t (f32 or f64) in `mode`;
    r is an f64 array (the f64 result rounded to nearest), e its error sign."""
    with np.errstate(all="ignore"):
        if t == f64:
            return step(r, e, mode)
        c = r.astype(np.float32)
        c64 = c.astype(np.float64)
        on_grid = (c64 == r) | np.isnan(r)
        inf = np.float32(np.inf)
        if mode == "rn":  # a tie in f64 between two f32 values is broken by e
            other = np.nextafter(c, np.where(c64 < r, inf, -inf))
            beyond = np.where(np.isinf(c) & np.isfinite(r), np.copysign(2.0 ** 128, r), c64)  # overflow's tie
            tie = ~on_grid & (2 * r == beyond + other.astype(np.float64)) & (e != 0)
            return np.where(tie & (_sign(other.astype(np.float64) - beyond) == e), other, c)
        if mode == "ru":
            off = np.where(c64 < r, np.nextafter(c, inf), c)
        elif mode == "rd":
            off = np.where(c64 > r, np.nextafter(c, -inf), c)
        else:
            off = np.where(np.abs(c64) > np.abs(r), np.nextafter(c, np.float32(0)), c)
        return np.where(on_grid, step(c, e, mode), off)


def round_fraction(q: Fraction, t: DType, mode: str, negative_zero: bool = False) -> float:
    """The rational q rounded to t (f32 or f64) in `mode`, as a Python float (zero: signed
    by `negative_zero`)."""
    if q == 0:
        return -0.0 if negative_zero else 0.0
    precision, emin, emax = (53, -1022, 1023) if t == f64 else (24, -126, 127)
    negative = q < 0
    n, d = abs(q.numerator), q.denominator
    exp = n.bit_length() - d.bit_length()  # 2^exp <= n/d < 2^(exp+1) after the fix below
    if (n << max(0, -exp)) < (d << max(0, exp)):
        exp -= 1
    quantum = max(exp, emin) - (precision - 1)  # weight of the last kept bit
    m, rest = divmod(n << max(0, -quantum), d << max(0, quantum))
    if rest:
        if mode == "rn":
            twice = 2 * rest
            den = d << max(0, quantum)
            m += twice > den or (twice == den and m & 1)
        elif mode == ("rd" if negative else "ru"):
            m += 1
    largest = ((1 << precision) - 1) << (emax - precision + 1)
    magnitude = Fraction(m) * Fraction(2) ** quantum
    if magnitude > largest:  # overflow: infinity, or the largest finite value when rounding toward it
        to_inf = mode == "rn" or mode == ("rd" if negative else "ru")
        value = float("inf") if to_inf else float(largest)
    else:
        value = float(magnitude)
    return -value if negative else value


# ----------------------------------------------------------------------------- operations


def _specials(*xs: np.ndarray) -> np.ndarray:
    """Elements where some operand is NaN, infinite or zero (results exact by IEEE's rules)."""
    bad = np.zeros(np.broadcast_shapes(*(np.shape(x) for x in xs)), bool)
    for x in xs:
        bad |= ~np.isfinite(x) | (x == 0)
    return bad


def _product_sign(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """sign(a*b - r) for r = fl64(a*b): exact underflow, overflow and scaled TwoProduct."""
    special = _specials(a, b)
    safe = lambda x: np.where(special, 1.0, x)  # noqa: E731
    a1, b1 = safe(a), safe(b)
    ma, ea = np.frexp(a1)
    mb, eb = np.frexp(b1)
    r1 = np.where(special | ~np.isfinite(r) | (r == 0), ma * mb, r)
    rs = np.ldexp(r1, -(ea + eb))  # exact: r scaled next to ma*mb
    p, q = two_prod(ma, mb)
    e = _sign((p - rs) + q)  # p - rs is exact (Sterbenz)
    e = np.where(np.isinf(r), -_sign(r), e)
    e = np.where(r == 0, _sign(a1) * _sign(b1), e)
    return np.where(special, 0, e).astype(np.int8)


def _quotient_sign(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """sign(a/b - r) for r = fl64(a/b)."""
    special = _specials(a, b)
    a1, b1 = np.where(special, 1.0, a), np.where(special, 1.0, b)
    ma, ea = np.frexp(a1)
    mb, eb = np.frexp(b1)
    r1 = np.where(special | ~np.isfinite(r) | (r == 0), ma / mb, r)
    rs = np.ldexp(r1, eb - ea)  # exact: r scaled next to ma/mb
    p, q = two_prod(rs, mb)
    e = _sign((ma - p) - q) * _sign(mb)  # a/b - r has the sign of (ma - rs*mb) / mb
    e = np.where(np.isinf(r), -_sign(r), e)
    e = np.where(r == 0, _sign(a1) * _sign(b1), e)
    return np.where(special, 0, e).astype(np.int8)


def _sqrt_sign(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """sign(sqrt(a) - r) for r = fl64(sqrt(a))."""
    special = ~np.isfinite(a) | (a <= 0)
    a1 = np.where(special, 1.0, a)
    r1 = np.where(special, 1.0, r)
    m, ex = np.frexp(a1)
    half = ex // 2
    m2 = np.ldexp(m, ex - 2 * half)  # a = m2 * 4^half, m2 in [0.5, 2)
    rs = np.ldexp(r1, -half)
    p, q = two_prod(rs, rs)
    return np.where(special, 0, _sign((m2 - p) - q)).astype(np.int8)


def _sum_pair(a: np.ndarray, b: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(fl64(a + b), sign of the error); an exact zero sum of opposite-signed terms is -0 when
    rounding down (IEEE 754 6.3), +0 otherwise."""
    r = a + b
    s, err = fast_two_sum(np.where(np.isfinite(r), a, 0.0), np.where(np.isfinite(r), b, 0.0))
    finite_in = np.isfinite(a) & np.isfinite(b)
    e = np.where(np.isfinite(r), _sign(err), np.where(finite_in, -_sign(r), 0))
    if mode == "rd":
        r = np.where((r == 0) & ~((a == 0) & (b == 0) & (np.signbit(a) == np.signbit(b))), -0.0, r)
    return r, e.astype(np.int8)


def rounded_binary(name: str, a: np.ndarray, b: np.ndarray, t: DType, mode: str) -> np.ndarray:
    """arith.add/sub/mul/div of f32 or f64 value arrays, correctly rounded in `mode`."""
    with np.errstate(all="ignore"):
        x, y = a.astype(np.float64), b.astype(np.float64)
        if name == "arith.sub":
            name, y = "arith.add", -y
        if name == "arith.add":
            r, e = _sum_pair(x, y, mode)
        elif name == "arith.mul":
            r = x * y
            e = np.zeros(r.shape, np.int8) if t == f32 else _product_sign(x, y, r)  # f32 products are exact
        else:
            r = x / y
            e = _quotient_sign(x, y, r)
        return round_pair(r, e, t, mode)


def rounded_sqrt(a: np.ndarray, t: DType, mode: str) -> np.ndarray:
    """math.sqrt correctly rounded in `mode`."""
    with np.errstate(all="ignore"):
        x = a.astype(np.float64)
        r = np.sqrt(x)
        return round_pair(r, _sqrt_sign(x, r), t, mode)


def rounded_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, t: DType, mode: str) -> np.ndarray:
    """a * b + c with one rounding in `mode` (f32 or f64 value arrays)."""
    with np.errstate(all="ignore"):
        x, y, z = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))
        if t == f32:  # the product of two f32 is exact in f64, the sum has an exact error
            r, e = _sum_pair(x * y, z, mode)
            return round_pair(r, e, t, mode)
        return _fma64(x, y, z, mode)


def _zero_sum_sign(product_negative: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    """IEEE's sign of an exactly zero sum: that of the terms if they agree, else -0 in rd only."""
    c_negative = np.signbit(c)
    return np.where(product_negative == c_negative, c_negative, mode == "rd")


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    out = np.empty(a.shape, np.float64)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    zero_product = (a == 0) | (b == 0)
    # non-finite operands: IEEE's exact special values (a finite product meeting an infinite c is c)
    special = ~finite
    out[special] = np.where(np.isfinite(a) & np.isfinite(b), c, a * b + c)[special]
    # a zero product: the result is c, or a signed zero
    zp = finite & zero_product
    negative = np.signbit(a) ^ np.signbit(b)
    zero_sum = np.where(_zero_sum_sign(negative, c, mode), -0.0, 0.0)
    out[zp] = np.where(c == 0, zero_sum, c)[zp]
    # c zero: the rounded product
    cz = finite & ~zero_product & (c == 0)
    if cz.any():
        r = a[cz] * b[cz]
        out[cz] = step(r, _product_sign(a[cz], b[cz], r), mode)
    rest = finite & ~zero_product & (c != 0)
    if rest.any():
        out[rest] = _fma64_general(a[rest], b[rest], c[rest], mode)
    return out


def _fma64_general(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    """fma of finite nonzero f64 operands: exact expansion in a scaled range, else Fraction."""
    ma, ea = np.frexp(a)
    mb, eb = np.frexp(b)
    mc, ec = np.frexp(c)
    k = ea + eb
    gap = ec - k
    out = np.empty(a.shape, np.float64)
    # c above the product by 2^120 or more: the product only tips c by one step
    c_rules = gap > 120
    out[c_rules] = step(c[c_rules], (_sign(a) * _sign(b))[c_rules], mode)
    v = ~c_rules
    cs = np.where(gap < -120, np.copysign(_STICKY, c), np.ldexp(mc, np.clip(gap, -120, 120)))
    p, q = two_prod(ma, mb)
    s1, t1 = two_sum(p, cs)
    s2, t2 = two_sum(t1, q)
    guess, _ = two_sum(s1, s2)
    terms = [t2, s2, s1]
    below = lambda x: exact_sign(terms + [-x]) < 0  # noqa: E731 - exact sum below the float x
    inf = np.inf
    low = guess
    for _ in range(3):  # the largest float <= the exact sum (the guess is within two steps)
        low = np.where(below(low), np.nextafter(low, -inf), low)
    for _ in range(2):
        up = np.nextafter(low, inf)
        low = np.where(~below(up), up, low)
    up = np.nextafter(low, inf)
    exact = exact_sign(terms + [-low]) == 0
    if mode == "rn":
        half = (up - low) * 0.5
        side = exact_sign(terms + [-low, -half])
        even = (low.view(np.int64) & 1) == 0
        scaled = np.where(side > 0, up, np.where(side < 0, low, np.where(even, low, up)))
    elif mode == "rd":
        scaled = low
    elif mode == "ru":
        scaled = np.where(exact, low, up)
    else:
        scaled = np.where(exact | (low >= 0), low, up)
    scaled = np.where(exact, low, scaled)
    result = np.ldexp(scaled, k)
    overflow = np.isinf(result)  # beyond the largest finite value: infinity or that value, by the mode
    positive = scaled > 0
    to_inf = {"rn": True, "rz": False, "ru": positive, "rd": ~positive}[mode]
    result = np.where(overflow & np.logical_not(to_inf), np.copysign(np.finfo(np.float64).max, result), result)
    normal = np.abs(result) >= 2.0 ** -1022
    fallback = v & ~normal  # subnormal or zero results: rounded at a coarser bit than the scaled sum
    out[v & normal] = result[v & normal]
    for i in np.flatnonzero(fallback):
        exact_value = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        out[i] = round_fraction(exact_value, f64, mode, negative_zero=mode == "rd")
    return out


# ---------------------------------------------------------------------------- conversions


def int_to_float(x: np.ndarray, t: DType, mode: str) -> np.ndarray:
    """An integer value array converted to f32 or f64, rounded in `mode`."""
    with np.errstate(all="ignore"):
        r = x.astype(np.float64)  # exact for <= 32 bits; else rounded to nearest
        if x.dtype.itemsize < 8:
            return round_pair(r, np.zeros(r.shape, np.int8), t, mode)
        top = float(np.iinfo(x.dtype).max) + 1  # 2^63 or 2^64: above every value of the type
        below_top = r < top
        diff = (x - np.where(below_top, r, 0).astype(x.dtype)).astype(np.int64)  # small: |x - r| <= 2^11
        e = np.where(below_top, _sign(diff), -1).astype(np.int8)
        return round_pair(r, e, t, mode)


ROUND_TO_INTEGRAL: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil,
}


def float_to_int(x: np.ndarray, src: DType, dst: np.dtype, mode: str) -> np.ndarray:
    """cvt.r{n,z,m,p}i of a float value array into the integer dtype `dst`: rounded to an
    integral value in `mode`, then saturated. NaN gives 0 from floats of <= 32 bits into
    integers of <= 32 bits, and the sign bit alone (INT_MIN, 2^31, 2^63) from f64 or into 64
    bits, which is what the GPU's conversion gives."""
    info = np.iinfo(dst)
    with np.errstate(all="ignore"):
        v = ROUND_TO_INTEGRAL[mode](x.astype(np.float64, copy=False))
        hi = float(info.max)
        hi_clip = float(np.nextafter(hi, 0.0)) if info.bits == 64 else hi  # 2^63-1 and 2^64-1 are not doubles
        r = np.clip(np.where(np.isnan(v), 0.0, v), float(info.min), hi_clip).astype(dst)
        if info.bits == 64:
            r = np.where(v >= hi, dst.type(info.max), r)
        nan_bits = 0 if src.bits <= 32 and info.bits <= 32 else 1 << (info.bits - 1)
        return np.where(np.isnan(v), np.array(nan_bits, np.uint64).astype(dst), r)


__all__ = ["MODES", "fast_two_sum", "two_sum", "two_prod", "exact_sign", "step", "round_pair", "round_fraction",
           "rounded_binary", "rounded_sqrt", "rounded_fma", "int_to_float", "float_to_int", "ROUND_TO_INTEGRAL"]
