"""Building blocks of tile's libdevice math (the libm_*.py modules): argument checks, the bits of
a float, exact scaling by powers of two, double-word arithmetic, and polynomial evaluation.

Everything here is tile language (or a compile-time Python helper), inlined into the kernel
that calls a libdevice function. A function body picks its fp32 or fp64 variant at compile
time from the dtype of its argument:

    fmt = float_format(x.dtype)          # bit widths, bias, integer types of the float
    if x.dtype == tl.float64: ...        # a compile-time branch: only one side becomes IR

The math is built only from operations that round exactly as IEEE 754 says on every target
(+, -, *, fma, division and square root rounded to nearest, integer and bit operations), so a
function gives the same bits on the interpreter and on a GPU, up to ptxas fusing a multiply
and an add into an fma (which only removes a rounding). Two rules follow from that:

  * f32 division and square root go through `div_rn`/`sqrt_rn`: tile's `/` and `tl.sqrt` may be
    approximate on f32 (div.full, sqrt.approx), like Triton's.
  * An exact product `a * b = p + e` uses fma on f32 (exact on every tile target) and Dekker's
    splitting on f64: the NumPy interpreter evaluates an f64 fma as a multiply and an add.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tile.frontend import builtins as core
from tile.frontend.core import (builtin, current, dtype, float32, float64, int32, int64, tensor, uint32, uint64,
                                unwrap)
from tile.frontend.jit import jit
from tile.frontend.semantics import is_number, python_type
from tile.language import math


# ------------------------------------------------------------------------ float formats


@dataclass(frozen=True)
class FloatFormat:
    """The layout of an IEEE binary float: what bit tricks need to know about fp32 or fp64."""

    bits: int            # total width
    mant: int            # explicit mantissa bits (23, 52)
    bias: int            # exponent bias (127, 1023)
    int_type: dtype      # signed integer of the same width (for bitcasts and exponents)
    uint_type: dtype     # unsigned integer of the same width (for masks and shifts)
    min_normal: float    # 2**(1 - bias)
    round_magic: float   # 1.5 * 2**mant: (x + m) - m rounds |x| < 2**(mant - 1) to an integer
    split_mask: int      # clears the low half of the mantissa (Dekker's split of a product)

    @property
    def sign_mask(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def abs_mask(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def mant_mask(self) -> int:
        return (1 << self.mant) - 1


F32 = FloatFormat(32, 23, 127, int32, uint32, 2.0**-126, 12582912.0, 0xFFFFF000)
F64 = FloatFormat(64, 52, 1023, int64, uint64, 2.0**-1022, 6755399441055744.0, 0xFFFFFFFFF8000000)


def float_format(t: Any) -> FloatFormat:
    """The format of fp32 or fp64 (a compile-time helper: kernels call it with `x.dtype`)."""
    return F64 if unwrap(t) == float64 else F32


# ---------------------------------------------------------------------- argument checks


@builtin
def float_args(name: str, *args: Any) -> tuple:
    """The arguments of libdevice.<name> as tensors of one float type and one shape.

    Like Triton's libdevice tables, every argument must be fp32 or fp64, all of the same type
    (fp16/bf16 values need an explicit `.to(tl.float32)`); a Python number takes the type of
    the tensor arguments (fp32 when all arguments are numbers)."""
    sem = current()
    name, args = unwrap(name), [unwrap(a) for a in args]
    tensors = [a for a in args if isinstance(a, tensor)]
    for a in args:
        if not isinstance(a, tensor) and not is_number(a):
            raise TypeError(f"libdevice.{name} expects numbers or tensors, got {a!r}")
    for t in tensors:
        if t.dtype not in (float32, float64):
            raise TypeError(f"libdevice.{name} expects fp32 or fp64 arguments (as Triton's libdevice), got "
                            f"{t.dtype.name}; convert it with .to(tl.float32) first")
    kinds = {t.dtype for t in tensors}
    if len(kinds) > 1:
        raise TypeError(f"libdevice.{name} expects all arguments of one type, got fp32 and fp64; convert one "
                        f"of them with .to()")
    target = tensors[0].element if tensors else python_type(float(args[0]))
    out = [a if isinstance(a, tensor) else sem.constant(float(a), target) for a in args]
    if len(out) > 1:
        out = sem.broadcast_all(*out)
    return tuple(out)


@builtin
def int_arg(name: str, n: Any) -> tensor:
    """The integer order or exponent argument of libdevice.<name> (jn, yn, pow) as int32."""
    sem = current()
    name, n = unwrap(name), unwrap(n)
    if isinstance(n, tensor):
        if n.dtype != int32:
            raise TypeError(f"libdevice.{name} expects an int32 integer argument, got {n.dtype.name}")
        return n
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"libdevice.{name} expects an int32 integer argument, got {n!r}")
    return sem.constant(n, int32.ir)


@builtin
def as_tensor_like(v: Any, like: Any) -> tensor:
    """v as a tensor: a Python number becomes a constant of like's dtype."""
    v, like = unwrap(v), unwrap(like)
    return v if isinstance(v, tensor) else current().constant(float(v), like.element)


# ------------------------------------------------------------------------ bits of floats


@jit
def full_like(x, value):
    """A constant of x's dtype and shape (Python numbers alone would become fp32)."""
    return core.full(x.shape, value, x.dtype)


@jit
def to_bits(x):
    """The bits of a float as an unsigned integer of the same width."""
    return x.to(float_format(x.dtype).uint_type, bitcast=True)


@jit
def from_bits(b, like):
    """The float of `like`'s dtype whose bits are the integer `b` (of the same width)."""
    return b.to(like.dtype, bitcast=True)


@jit
def is_nan(x):
    return x != x


@jit
def is_finite(x):
    return math.abs(x) < float("inf")


@jit
def copysign(magnitude, sign):
    """|magnitude| with the sign bit of `sign` (also for zeros and NaNs)."""
    fmt: core.constexpr = float_format(magnitude.dtype)
    bits = (to_bits(magnitude) & fmt.abs_mask) | (to_bits(sign) & fmt.sign_mask)
    return from_bits(bits, magnitude)


@jit
def sign_bit(x):
    """True where the sign bit of x is set (-0.0 and negative NaNs included)."""
    fmt: core.constexpr = float_format(x.dtype)
    return (to_bits(x) & fmt.sign_mask) != 0


@jit
def round_to_int(x):
    """x rounded to the nearest integer (ties to even), for |x| < 2**22 (fp32) or 2**51 (fp64):
    adding 1.5 * 2**mant leaves no fraction bits, subtracting it again is exact."""
    magic: core.constexpr = float_format(x.dtype).round_magic
    return (x + magic) - magic


@jit
def pow2(k, like):
    """2**k as a float of like's dtype, for an integer-valued float k in the normal exponent range."""
    fmt: core.constexpr = float_format(like.dtype)
    e = (k.to(fmt.int_type) + fmt.bias).to(fmt.uint_type, bitcast=True)
    return from_bits(e << fmt.mant, like)


@jit
def scale2(x, k):
    """x * 2**k for an integer-valued float k, with one rounding: k is split in two halves whose
    powers of two are normal numbers, so only the last multiply can round (into the subnormal
    range) or overflow. k is clamped to where the result is already 0 or inf."""
    fmt: core.constexpr = float_format(x.dtype)
    k = math.min(math.max(k, -2.0 * (fmt.bias - 1)), 2.0 * fmt.bias)
    half = math.floor(k * 0.5)
    return x * pow2(half, x) * pow2(k - half, x)


@jit
def exponent_of(x):
    """floor(log2(x)) of a positive finite normal x, as a float."""
    fmt: core.constexpr = float_format(x.dtype)
    return ((to_bits(x) >> fmt.mant).to(fmt.int_type) - fmt.bias).to(x.dtype)


@jit
def with_exponent_zero(x):
    """x / 2**floor(log2 x), in [1, 2), for a positive finite normal x."""
    fmt: core.constexpr = float_format(x.dtype)
    return from_bits((to_bits(x) & fmt.mant_mask) | (fmt.bias << fmt.mant), x)


# --------------------------------------------------------------------------- polynomials


@jit
def poly(x, coeffs: core.constexpr):
    """coeffs[0] + coeffs[1] x + ... + coeffs[n-1] x**(n-1), by Horner's rule with fma (n >= 2)."""
    n: core.constexpr = len(coeffs)
    acc = math.fma(x, coeffs[n - 1], coeffs[n - 2])
    for i in core.static_range(n - 3, -1, -1):
        acc = math.fma(acc, x, coeffs[i])
    return acc


@jit
def poly_pieces(x, piece, tables: core.constexpr):
    """(hi, lo) = P_piece(x) for an integer-valued `piece` per element and tables in the form
    (c0 hi, c0 lo, c1, c2, ...), all of one length: each coefficient is picked from the pieces'
    tables elementwise, then one Horner evaluation; hi = c0 hi, lo = the rest (unrounded)."""
    n: core.constexpr = len(tables[0])
    coeffs = ()
    for j in core.static_range(n):
        c = full_like(x, tables[0][j])
        for i in core.static_range(1, len(tables)):
            c = core.where(piece == i, tables[i][j], c)
        coeffs = coeffs + (c,)
    acc = math.fma(x, coeffs[n - 1], coeffs[n - 2])
    for j in core.static_range(n - 3, 1, -1):
        acc = math.fma(acc, x, coeffs[j])
    return coeffs[0], math.fma(acc, x, coeffs[1])


# ------------------------------------------------------------------ double-word arithmetic
#
# A double-word number is an unevaluated sum hi + lo with |lo| <= ulp(hi) / 2: about twice the
# precision of one float. The error-free transformations below return the rounded result and
# its exact rounding error.


@jit
def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth; no condition on |a|, |b|)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@jit
def fast_two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, when |a| >= |b| (Dekker)."""
    s = a + b
    return s, b - (s - a)


@jit
def split(a):
    """(hi, lo) with hi + lo = a, hi holding the upper half of the mantissa: products of two
    halves are exact (Veltkamp's split, done with a mask so no rounding can spoil it)."""
    hi = from_bits(to_bits(a) & float_format(a.dtype).split_mask, a)
    return hi, a - hi


@jit
def two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b (exactly on fp32; on fp64 up to 2**-105 |ab|)."""
    p = a * b
    if a.dtype == float64:
        b = as_tensor_like(b, a)
        ah, al = split(a)
        bh, bl = split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    else:
        e = math.fma(a, b, -p)
    return p, e


@jit
def dw_add(ah, al, bh, bl):
    """(ah + al) + (bh + bl) as a double-word number."""
    s, e = two_sum(ah, bh)
    e = e + (al + bl)
    return fast_two_sum(s, e)


@jit
def dw_mul(ah, al, bh, bl):
    """(ah + al) * (bh + bl) as a double-word number (the al * bl term is below its precision)."""
    p, e = two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return fast_two_sum(p, e)


@jit
def dw_mul_f(ah, al, b):
    """(ah + al) * b for a float b, as a double-word number."""
    p, e = two_prod(ah, b)
    return fast_two_sum(p, math.fma(al, b, e))


@jit
def sqrt_dw(h, l):
    """sqrt(h + l) as a double-word number, for h >= 0: the rounded root s corrected by
    (h + l - s^2) / 2s, with s^2 exact."""
    s = math.sqrt_rn(h)
    p, pe = two_prod(s, s)
    c = math.div_rn(((h - p) - pe) + l, 2.0 * s)
    return fast_two_sum(s, core.where(s == 0.0, full_like(h, 0.0), c))


@jit
def mul_dw_const(x, hi, lo):
    """x * (hi + lo) as a double-word number, for a double-word constant hi + lo."""
    p, e = two_prod(x, hi)
    return fast_two_sum(p, math.fma(x, lo, e))


@jit
def dw_div(ah, al, bh, bl):
    """(ah + al) / (bh + bl) as a double-word number (one correction of the rounded quotient)."""
    q = math.div_rn(ah, bh)
    p, pe = two_prod(q, bh)
    r = (((ah - p) - pe) + al) - q * bl
    return fast_two_sum(q, math.div_rn(r, bh))


# ------------------------------------------------------------------------ rare slow paths


@jit
def block_max(v):
    """The largest element of an int32 block, as a scalar (v itself for a scalar): a bound for a
    runtime loop that every element of the block shares."""
    if v.is_block():
        return core.reduce(v, None, _max_i32)
    return v


@jit
def _max_i32(a, b):
    return math.max(a, b)


@jit
def any_true(cond):
    """Whether any element of `cond` is true, as one scalar (a block-wide reduction).

    Kernels branch on it to skip a costly path that only rare arguments need (trig reduction of
    huge arguments): tile language has no per-element branches, so without it every element
    would pay for the slow path."""
    return block_max(cond.to(int32)) > 0
