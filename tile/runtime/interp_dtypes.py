"""How the interpreter holds tile's dtypes in NumPy: value arrays, memory bits, rounding and casts.

Values live in arrays of a *value dtype*; memory holds a *storage dtype* (the element's bits):

    tile dtype      value array            storage in memory
    i1              bool                   uint8 (0 or 1)
    i8..u64         that integer type      the same
    f16, bf16       float32, rounded       uint16 bits
    f8e4nv, f8e5    float32, rounded       uint8 bits
    f32, f64        float32, float64       the same
    ptr<T>          int64 addresses        int64

f16/bf16/fp8 values are float32 arrays that hold only values of their type: every op computes
in float32 and rounds to the type, which is what the GPU does (float32 has more than twice
the precision of these types, so that double rounding never changes a result of + - * / sqrt).

fp8 conversions follow the GPU's `cvt.rn.satfinite` (what Triton emits on sm_89+): round to
nearest even, values beyond the largest finite number (and infinities) saturate to it,
NaN stays NaN. e4m3 ("f8e4nv") has no infinities, its largest value is 448 and its NaN is
0x7f/0xff; e5m2 ("f8e5") is IEEE-like with a largest finite value of 57344. Triton's other
fp8 formats (f8e4b15, f8e4b8, f8e5b16) convert by the rules of tile.ir.float8.
Float -> integer casts round toward zero (or as their `rounding` says) and saturate, like
`cvt.rzi`; NaN gives what the GPU gives (see interp_rounding.float_to_int). Conversions
between f32, f64 and integers round in any of the four IEEE modes (interp_rounding).
"""
from __future__ import annotations

import math

import numpy as np

from tile.ir import float8
from tile.ir.ops import TRITON_ROUNDINGS
from tile.ir.types import DType, PointerType, bf16, f8e4b8, f8e4b15, f8e4nv, f8e5, f8e5b16, f16, f32, f64

from .interp_rounding import float_to_int, int_to_float, round_pair

NARROW_FLOATS = (f16, bf16, f8e4nv, f8e5, f8e4b15, f8e4b8, f8e5b16)

_INT_VALUE = {
    ("int", 8): np.int8, ("int", 16): np.int16, ("int", 32): np.int32, ("int", 64): np.int64,
    ("uint", 8): np.uint8, ("uint", 16): np.uint16, ("uint", 32): np.uint32, ("uint", 64): np.uint64,
}  # fmt: skip
_UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def value_dtype(t: DType | PointerType) -> np.dtype:
    """The NumPy dtype of value arrays of scalar type `t`."""
    if isinstance(t, PointerType):
        return np.dtype(np.int64)
    if t.is_bool:
        return np.dtype(np.bool_)
    if t.is_integer:
        return np.dtype(_INT_VALUE[(t.kind, t.bits)])
    return np.dtype(np.float64 if t.bits == 64 else np.float32)


def storage_dtype(t: DType | PointerType) -> np.dtype:
    """The NumPy dtype of elements of type `t` in memory."""
    if isinstance(t, PointerType):
        return np.dtype(np.int64)
    if t.is_bool:
        return np.dtype(np.uint8)
    if t.is_floating and t in NARROW_FLOATS:
        return np.dtype(_UINT_OF_BITS[t.bits])
    return value_dtype(t)


def element_size(t: DType | PointerType) -> int:
    return 8 if isinstance(t, PointerType) else t.bytes


def bits_dtype(t: DType | PointerType) -> np.dtype:
    """The unsigned integer type as wide as `t` (bitcasts, compare-and-swap)."""
    return np.dtype(_UINT_OF_BITS[max(8, element_size(t) * 8)])


# ------------------------------------------------------------------------------ fp8 tables


def _fp8_values(exp_bits: int, man_bits: int, ieee: bool) -> np.ndarray:
    """float32 value of each of the 256 codes of an fp8 format (NaN where the code is NaN)."""
    bias = (1 << (exp_bits - 1)) - 1
    out = np.empty(256, np.float32)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        top = (1 << exp_bits) - 1
        if ieee and e == top:
            v = math.inf if m == 0 else math.nan
        elif not ieee and e == top and m == (1 << man_bits) - 1:
            v = math.nan
        elif e == 0:
            v = m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        out[code] = sign * v
    return out


_E4M3_VALUES = _fp8_values(4, 3, ieee=False)
_E5M2_VALUES = _fp8_values(5, 2, ieee=True)


def _e4m3_encoder() -> np.ndarray:
    """f16 bits -> e4m3 code, for f16 values that are e4m3 values (all of them fit in f16)."""
    table = np.zeros(1 << 16, np.uint8)
    finite = ~np.isnan(_E4M3_VALUES)
    codes = np.arange(256, dtype=np.uint8)[finite]
    table[_E4M3_VALUES[finite].astype(np.float16).view(np.uint16)] = codes
    return table


_E4M3_FROM_F16 = _e4m3_encoder()

# (mantissa bits, smallest normal exponent, largest finite value) of each narrow float.
_FORMAT = {
    f16: (10, -14, 65504.0),
    bf16: (7, -126, float(np.float32(3.3895313892515355e38))),
    f8e4nv: (3, -6, 448.0),
    f8e5: (2, -14, 57344.0),
    f32: (23, -126, float(np.finfo(np.float32).max)),
}


# -------------------------------------------------------------------------------- rounding


def _round_generic(x: np.ndarray, t: DType, rtz: bool, saturate: bool) -> np.ndarray:
    """Round float64 values to the values of `t` (float64 result): RNE or toward zero."""
    mant, emin, largest = _FORMAT[t]
    a = np.abs(x)
    _, e = np.frexp(a)  # a = m * 2**e with m in [0.5, 1): the leading bit is 2**(e-1)
    ulp_exp = np.maximum(e - 1, emin) - mant
    q = np.ldexp(a, -ulp_exp)
    r = np.ldexp(np.trunc(q) if rtz else np.rint(q), ulp_exp)
    over = r > largest
    if saturate:
        r = np.where(over, largest, r)
    elif rtz:  # rounding toward zero never overflows a finite value
        r = np.where(over & np.isfinite(a), largest, r)
    else:
        r = np.where(over, np.inf, r)
    return np.copysign(r, x)


def _bf16_from_f32(x: np.ndarray, rtz: bool) -> np.ndarray:
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    if rtz:
        r = bits & np.uint32(0xFFFF0000)
    else:
        r = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) & np.uint32(0xFFFF0000)
    nan = np.isnan(x)
    if nan.any():  # keep NaN a (quiet) NaN: rounding its payload could turn it into inf
        r = np.where(nan, (bits & np.uint32(0xFFFF0000)) | np.uint32(0x00400000), r)
    return r.view(np.float32)


def round_float(x: np.ndarray, t: DType, rtz: bool = False) -> np.ndarray:
    """Round a float32 or float64 array to float type `t`; the value array of `t`."""
    if float8.is_float8_variant(t):
        return float8.round_to(x, t).astype(np.float32)  # round to nearest only (the frontend checks)
    if t == f64:
        return x.astype(np.float64, copy=False)
    if t == f32:
        if x.dtype == np.float32:
            return x
        r = x.astype(np.float32)
        if rtz:
            r = np.where(np.abs(r.astype(np.float64)) > np.abs(x), np.nextafter(r, np.float32(0)), r)
        return r
    if t == bf16 and x.dtype == np.float32:
        return _bf16_from_f32(x, rtz)
    if t == f16 and not rtz:
        return x.astype(np.float16).astype(np.float32)  # NumPy converts to half with RNE
    return _round_generic(x.astype(np.float64, copy=False), t, rtz, saturate=t.is_fp8).astype(np.float32)


def rounder(t: DType | PointerType):
    """The function that rounds float32 results to `t`, or None when results need no rounding."""
    if not isinstance(t, DType) or t not in NARROW_FLOATS:
        return None
    if t == bf16:
        return lambda x: _bf16_from_f32(x, False)
    if t == f16:
        return lambda x: x.astype(np.float16).astype(np.float32)
    if float8.is_float8_variant(t):
        return lambda x: float8.round_to(x, t).astype(np.float32)
    return lambda x: _round_generic(x.astype(np.float64), t, False, True).astype(np.float32)


# ---------------------------------------------------------------------------- memory bits


def _same(x: np.ndarray) -> np.ndarray:
    return x


def _encode_e4m3(x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float16)
    code = _E4M3_FROM_F16[h.view(np.uint16)]
    nan = np.isnan(h)
    if nan.any():
        code = np.where(nan, np.uint8(0x7F) | (np.signbit(h).astype(np.uint8) << np.uint8(7)), code)
    return code


def decoder(t: DType | PointerType):
    """The function from memory bits (storage dtype) to the value array of `t`."""
    if isinstance(t, PointerType):
        return _same
    if t.is_bool:
        return lambda bits: bits != 0
    if t == f16:
        return lambda bits: bits.view(np.float16).astype(np.float32)
    if t == bf16:
        return lambda bits: (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if t == f8e4nv:
        return lambda bits: _E4M3_VALUES[bits]
    if t == f8e5:
        return lambda bits: _E5M2_VALUES[bits]
    if float8.is_float8_variant(t):
        return lambda bits: float8.decode(bits, t).astype(np.float32)
    return _same


def encoder(t: DType | PointerType):
    """The function from the value array of `t` to memory bits (storage dtype)."""
    if isinstance(t, PointerType):
        return _same
    if t.is_bool:
        return lambda x: x.astype(np.uint8)
    if t == f16:
        return lambda x: x.astype(np.float16).view(np.uint16)
    if t == bf16:
        return lambda x: (np.ascontiguousarray(x, np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    if t == f8e5:
        return lambda x: (x.astype(np.float16).view(np.uint16) >> np.uint16(8)).astype(np.uint8)
    if t == f8e4nv:
        return _encode_e4m3
    if float8.is_float8_variant(t):
        return lambda x: float8.storage_codes(x, t)
    return _same


def decode(bits: np.ndarray, t: DType | PointerType) -> np.ndarray:
    return decoder(t)(bits)


def encode(x: np.ndarray, t: DType | PointerType) -> np.ndarray:
    return encoder(t)(x)


def to_bits(x: np.ndarray, t: DType | PointerType) -> np.ndarray:
    """The raw bits of a value array as unsigned integers of the type's width."""
    return np.ascontiguousarray(encode(x, t)).view(bits_dtype(t))


def from_bits(bits: np.ndarray, t: DType | PointerType) -> np.ndarray:
    return decode(np.ascontiguousarray(bits).view(storage_dtype(t)), t)


# ---------------------------------------------------------------------------------- casts


def cast(x: np.ndarray, src: DType, dst: DType, rounding: "str | None" = None) -> np.ndarray:
    """arith.cast of a value array from `src` to `dst` (see tile.ir.ops), rounding in `rounding`
    ("rn", "rz", "rd", "ru", or Triton's "rtne"/"rtz"; None: toward zero into integers, to
    nearest otherwise)."""
    if dst.is_bool:
        return x != 0
    vd = value_dtype(dst)
    if src.is_integer and dst.is_integer:
        return x.astype(vd)
    if dst.is_integer:
        return float_to_int(x, src, vd, TRITON_ROUNDINGS.get(rounding, rounding or "rz"))
    if src == f16 and float8.is_float8_variant(dst):  # fp8e4b15 takes fp16 bits as they are
        return float8.decode(float8.encode(x, dst, f16_source=True), dst).astype(np.float32)
    mode = TRITON_ROUNDINGS.get(rounding, rounding or "rn")
    wide = dst in (f32, f64)
    if src.is_integer:
        if wide:
            return x.astype(vd) if mode == "rn" else int_to_float(x, dst, mode)  # NumPy rounds to nearest even
        return round_float(x.astype(np.float64), dst, mode == "rz")
    if wide and src in (f32, f64) and mode != "rn":
        return round_pair(x.astype(np.float64), np.zeros(x.shape, np.int8), dst, mode)
    return round_float(x, dst, mode == "rz")


def bitcast(x: np.ndarray, src: DType | PointerType, dst: DType | PointerType) -> np.ndarray:
    return from_bits(to_bits(x, src), dst)


def constant(value: int | float | bool, t: DType | PointerType) -> np.ndarray:
    """A one-element value array of `t` holding `value` (integers wrap to the type's width)."""
    if isinstance(t, PointerType) or t.is_integer and not t.is_bool:
        bits = 64 if isinstance(t, PointerType) else t.bits
        v = int(value) & ((1 << bits) - 1)
        if (isinstance(t, PointerType) or t.is_signed) and v >= 1 << (bits - 1):
            v -= 1 << bits
        return np.array([v], value_dtype(t))
    if t.is_bool:
        return np.array([bool(value)])
    return round_float(np.array([float(value)], np.float64), t)
