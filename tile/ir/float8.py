"""Triton's fp8 formats beyond OCP's e4m3/e5m2: what each bit pattern means and how wider
floats convert to it. The interpreter, the constant printer of the code generator and the
GPU lowering (tile/codegen/lower_float8.py) all follow these definitions.

    format (tl name)        IR name   exp/man  bias  inf  NaN          largest  zero
    fp8e4b15 (float8e4b15)  f8e4b15   4 / 3    15    no   none         1.875    +0 and -0
    fp8e4b8  (float8e4b8)   f8e4b8    4 / 3    8     no   0x80 alone   240      +0 only
    fp8e5b16 (float8e5b16)  f8e5b16   5 / 2    16    no   0x80 alone   57344    +0 only

Every code is sign | exponent | mantissa; exponent 0 is subnormal (mantissa * 2**(1 - bias -
mantissa bits)), every other exponent is normal, the all-ones exponent included (no infinities).

Conversions to these formats (what Triton generates):

  * fp8e4b8 and fp8e5b16 (MLIR's Float8E4M3FNUZ / Float8E5M2FNUZ, AMD's "nanoo" fp8): round to
    nearest even; finite values beyond the largest saturate to it; infinities and NaN become
    the NaN code 0x80; a result of zero is +0 (the format has no -0).
  * fp8e4b15 (Triton's NVIDIA conversion, tl.extra.cuda.convert_custom_float8_sm80): the value
    is first rounded toward zero to fp16 (cvt.rz.f16.f32, which turns every NaN into the
    positive 0x7FFF; an fp16 source is taken as it is), whose exponent has the same bias; then
    its magnitude bits are clamped to those of 1.75 (0x3F00: infinities and NaN become 1.75
    too) and rounded to 3 mantissa bits with ties away from zero; the sign is kept. 1.875
    (0x7F) is never produced. Checked against Triton 3.6 on an H100 for every fp16 pattern.

    >>> encode(np.array([0.3, -1e9, np.nan]), F8E4B8)   # doctest: +SKIP
    array([0x32, 0xff, 0x80], dtype=uint8)      # 0.3125, -240, NaN
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .types import DType, f8e4b8, f8e4b15, f8e5b16


@dataclass(frozen=True)
class Float8Format:
    dtype: DType
    bias: int
    nan_code: int | None  # the one NaN code, or None (no NaN)

    @property
    def mantissa_bits(self) -> int:
        return self.dtype.mantissa_bits

    @property
    def exponent_bits(self) -> int:
        return self.dtype.exponent_bits

    @property
    def largest(self) -> float:
        top = (1 << self.exponent_bits) - 1
        return (2 - 2.0 ** -self.mantissa_bits) * 2.0 ** (top - self.bias)

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)


FORMATS: dict[str, Float8Format] = {
    "f8e4b15": Float8Format(f8e4b15, 15, None),
    "f8e4b8": Float8Format(f8e4b8, 8, 0x80),
    "f8e5b16": Float8Format(f8e5b16, 16, 0x80),
}

E4B15_CLAMP_F16_BITS = 0x3F00  # 1.75 in fp16: the largest magnitude fp8e4b15 conversions produce


def is_float8_variant(t: object) -> bool:
    """Whether `t` is one of the formats of this module."""
    return isinstance(t, DType) and t.name in FORMATS


def decode_table(t: DType) -> np.ndarray:
    """The float64 value of each of the 256 codes of format `t`."""
    fmt = FORMATS[t.name]
    m = fmt.mantissa_bits
    codes = np.arange(256)
    exponent = (codes >> m) & ((1 << fmt.exponent_bits) - 1)
    mantissa = codes & ((1 << m) - 1)
    significand = np.where(exponent == 0, mantissa, mantissa + (1 << m)).astype(np.float64)
    values = np.ldexp(significand, np.maximum(exponent, 1) - fmt.bias - m)
    values = np.where(codes & 0x80, -values, values)
    if fmt.nan_code is not None:
        values[fmt.nan_code] = np.nan
    return values


_TABLES = {name: decode_table(fmt.dtype) for name, fmt in FORMATS.items()}


def decode(codes: np.ndarray, t: DType) -> np.ndarray:
    """float64 values of fp8 codes (uint8) of format `t`."""
    return _TABLES[t.name][np.asarray(codes, np.uint8)]


def _round_nearest_even_saturating(x: np.ndarray, fmt: Float8Format) -> np.ndarray:
    """Codes of float64 values: round to nearest even, saturate finite values, inf/NaN -> NaN,
    -0 -> +0 (the fnuz formats)."""
    m = fmt.mantissa_bits
    a = np.where(np.isfinite(x), np.abs(x), 0.0)
    _, e = np.frexp(a)  # a = f * 2**e with f in [0.5, 1)
    ulp_exp = np.maximum(e - 1, 1 - fmt.bias) - m
    r = np.minimum(np.ldexp(np.rint(np.ldexp(a, -ulp_exp)), ulp_exp), fmt.largest)
    f, e = np.frexp(r)
    normal = r >= fmt.min_normal
    normal_code = ((e - 1 + fmt.bias) << m) + np.ldexp(2 * f - 1, m).astype(np.int64)
    code = np.where(normal, normal_code, np.ldexp(r, fmt.bias - 1 + m).astype(np.int64))
    code = np.where(np.signbit(x) & (code != 0), code | 0x80, code)
    return np.where(np.isfinite(x), code, fmt.nan_code).astype(np.uint8)


def f16_bits_toward_zero(x: np.ndarray) -> np.ndarray:
    """fp16 bits of float64 values rounded toward zero, as cvt.rz.f16.f32 (NaN -> 0x7FFF)."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.astype(np.float16)
        too_far = np.abs(h.astype(np.float64)) > np.abs(x)  # rounded away from zero (inf past 65504 too)
        h = np.where(too_far, np.nextafter(h, np.float16(0)), h).astype(np.float16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), h.view(np.uint16))


def e4b15_from_f16_bits(bits: np.ndarray) -> np.ndarray:
    """fp8e4b15 codes of fp16 bit patterns: Triton's clamp to 1.75 and round-half-away."""
    b = np.asarray(bits, np.uint32)
    magnitude = np.minimum(b & 0x7FFF, E4B15_CLAMP_F16_BITS)
    return (((b >> 8) & 0x80) | (((magnitude << 1) + 0x80) >> 8)).astype(np.uint8)


def encode(x: np.ndarray, t: DType, f16_source: bool = False) -> np.ndarray:
    """Codes of float values converted to format `t` (rules above); `f16_source`: the values are
    fp16 values (NaNs with their sign), which fp8e4b15 takes without a first rounding."""
    if t.name == "f8e4b15":
        bits = np.asarray(x).astype(np.float16).view(np.uint16) if f16_source else \
            f16_bits_toward_zero(np.asarray(x).astype(np.float64))
        return e4b15_from_f16_bits(bits)
    return _round_nearest_even_saturating(np.asarray(x).astype(np.float64), FORMATS[t.name])


def storage_codes(x: np.ndarray, t: DType) -> np.ndarray:
    """Codes of values stored to memory: loads and stores move bits, so a value that a code decodes
    to exactly keeps that code. Only fp8e4b15 needs this: its codes 0x7F and 0xFF (+-1.875) decode
    to values beyond what a conversion produces (Triton's rule clamps at 1.75)."""
    codes = encode(x, t)
    if t.name == "f8e4b15":
        x = np.asarray(x)
        for code in (0x7F, 0xFF):
            codes = np.where(x == _TABLES[t.name][code], np.uint8(code), codes)
    return codes


def round_to(x: np.ndarray, t: DType) -> np.ndarray:
    """float values converted to format `t` and back (float64)."""
    return decode(encode(x, t), t)


__all__ = ["Float8Format", "FORMATS", "E4B15_CLAMP_F16_BITS", "is_float8_variant", "decode_table", "decode",
           "encode", "storage_codes", "round_to", "f16_bits_toward_zero", "e4b15_from_f16_bits"]
