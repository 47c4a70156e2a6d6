"""fp8 conversions in integer and f32 arithmetic: Triton's other formats (f8e4b15, f8e4b8,
f8e5b16) on every target, and OCP's e4m3 ("f8e4nv") and e5m2 ("f8e5") on targets without
sm_89's fp8 cvt instructions (sm_80, sm_86).

PTX has no instruction for the first three formats, and sm_80 none for any fp8 format, so a
value is decoded and encoded with integer and f32 ops: the other formats follow tile.ir.float8
bit for bit; e4m3/e5m2 follow what sm_89+'s cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and
cvt.rn.f16x2.{e4m3,e5m2}x2 give (OCP_FORMATS). Values of these types only ever move, load,
store and select in simt IR; lower_cast routes every conversion through the functions here.

Decoding (exact): the magnitude bits move to the top of an f32 mantissa, which makes the f32
(1.m * 2**e or a subnormal 0.m * 2**-126) the code's value times 2**(bias - 127); one exact
multiplication by 2**(127 - bias) fixes the scale:

    %w = simt.cvt %code : u32                           (the code, zero-extended)
    %m = arith.and %w, 0x7f ; %m = arith.shl %m, 23 - mantissa_bits
    %x = arith.mul (bitcast %m : f32), 2**(127 - bias) : f32
    sign bit or-ed in; fnuz formats: code 0x80 -> NaN; e4m3: magnitude 0x7f -> NaN

e5m2 has f16's exponent field and bias, so its code is the top byte of the f16 it decodes to
(infinities included); a NaN becomes the canonical f16 NaN 0x7fff, as cvt.rn.f16x2.e5m2x2 gives:

    %h = arith.shl %w, 8 ; %h = arith.select (%m > 0x7c), 0x7fff, %h ; bitcast to f16

Encoding f32 (round to nearest even, saturating): normal results round the f32 bits (add half an
ulp minus one plus the kept lowest bit, shift out the dropped mantissa bits, rebias the
exponent); subnormal results are cvt.rni(|x| * 2**(bias - 1 + mantissa_bits)), the code itself;
magnitudes beyond the largest finite value give its code. Then the sign and the specials:
f8e4b8 / f8e5b16: inf/NaN -> 0x80, no -0; e4m3 / e5m2: -0 kept, inf -> +-largest (satfinite),
NaN -> 0x7f whatever its sign.

Encoding fp16 -> f8e4b15 (Triton's rule): code = sign | ((min(|h| bits, 0x3F00) << 1) + 0x80) >> 8.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

from ..ir.core import Value
from ..ir.float8 import E4B15_CLAMP_F16_BITS, FORMATS
from ..ir.types import DType, f8e4nv, f8e5, f16, f32, i1, u8, u16, u32
from .lower_core import Lowering

_SIGN_F32 = 1 << 31
_INF_F32_BITS = 0x7F800000
_F16_CANONICAL_NAN = 0x7FFF   # what cvt.rn.f16x2.{e4m3,e5m2}x2 makes of every NaN code
_OCP_NAN_CODE = 0x7F          # what cvt.rn.satfinite.{e4m3,e5m2}x2.f32 makes of every NaN
_F16_BIAS = 15


@dataclass(frozen=True)
class OcpFormat:
    """OCP's e4m3 / e5m2 as sm_89's cvt instructions treat them."""

    dtype: DType
    bias: int
    largest_code: int              # magnitude code of the largest finite value, where overflow saturates
    infinity_code: Optional[int]   # magnitude code of infinity (None: no infinities); larger ones are NaN

    @property
    def mantissa_bits(self) -> int:
        return self.dtype.mantissa_bits

    @property
    def largest(self) -> float:
        e, m = self.largest_code >> self.mantissa_bits, self.largest_code & ((1 << self.mantissa_bits) - 1)
        return (1 + m / (1 << self.mantissa_bits)) * 2.0 ** (e - self.bias)

    @property
    def decodes_through_f16(self) -> bool:
        """Whether the code is the top byte of its value's f16 (f16's exponent field and bias)."""
        return self.dtype.exponent_bits == f16.exponent_bits and self.bias == _F16_BIAS


OCP_FORMATS: dict[str, OcpFormat] = {
    "f8e4nv": OcpFormat(f8e4nv, 7, 0x7E, None),   # 448; 0x7f / 0xff are NaN
    "f8e5": OcpFormat(f8e5, 15, 0x7B, 0x7C),      # 57344; 0x7c is infinity, 0x7d-0x7f NaN
}


def _u32(ctx: Lowering, x: int) -> Value:
    return ctx.const(x, u32)


def _op(ctx: Lowering, name: str, a: Value, b: Value) -> Value:
    return ctx.op(name, [a, b], a.type)


def _cmp(ctx: Lowering, predicate: str, a: Value, b: Value) -> Value:
    return ctx.op("arith.cmp", [a, b], i1, predicate=predicate)


def _select(ctx: Lowering, cond: Value, a: Value, b: Value) -> Value:
    return ctx.op("arith.select", [cond, a, b], a.type)


def _f32_bits(x: float) -> int:
    (bits,) = struct.unpack(">I", struct.pack(">f", x))
    return bits


def _code_as_u32(ctx: Lowering, v: Value) -> Value:
    """The 8 code bits of a value of an fp8 type, zero-extended to u32."""
    bits = ctx.op("arith.bitcast", [v], u8)
    return ctx.op("simt.cvt", [bits], u32)


def _code_from_u32(ctx: Lowering, code: Value, t: DType) -> Value:
    return ctx.op("arith.bitcast", [ctx.op("simt.cvt", [code], u8)], t)


def _scaled_magnitude(ctx: Lowering, w: Value, mantissa_bits: int, bias: int) -> Value:
    """The f32 bits of the magnitude of code `w` (u32) of a format with that many mantissa bits and
    that bias, sign bit or-ed in (exact)."""
    magnitude = _op(ctx, "arith.shl", _op(ctx, "arith.and", w, _u32(ctx, 0x7F)), _u32(ctx, 23 - mantissa_bits))
    scaled = ctx.op("arith.mul", [ctx.op("arith.bitcast", [magnitude], f32), ctx.const(2.0 ** (127 - bias), f32)],
                    f32)
    sign = _op(ctx, "arith.shl", _op(ctx, "arith.and", w, _u32(ctx, 0x80)), _u32(ctx, 24))
    return _op(ctx, "arith.or", ctx.op("arith.bitcast", [scaled], u32), sign)


def decode_to_f32(ctx: Lowering, v: Value) -> Value:
    """The f32 value of `v` (of an fp8 format of tile.ir.float8); exact."""
    fmt = FORMATS[v.type.name]
    w = _code_as_u32(ctx, v)
    x = ctx.op("arith.bitcast", [_scaled_magnitude(ctx, w, fmt.mantissa_bits, fmt.bias)], f32)
    if fmt.nan_code is None:
        return x
    return _select(ctx, _cmp(ctx, "eq", w, _u32(ctx, fmt.nan_code)), ctx.const(float("nan"), f32), x)


def decode_ocp(ctx: Lowering, v: Value) -> Value:
    """The value of `v` (e4m3 or e5m2) as f16 (e5m2) or f32 (e4m3), exactly; an f16 NaN is the
    canonical 0x7fff that cvt.rn.f16x2.{e4m3,e5m2}x2 gives."""
    fmt = OCP_FORMATS[v.type.name]
    w = _code_as_u32(ctx, v)
    is_nan = _cmp(ctx, "gt", _op(ctx, "arith.and", w, _u32(ctx, 0x7F)),
                  _u32(ctx, fmt.largest_code if fmt.infinity_code is None else fmt.infinity_code))
    if fmt.decodes_through_f16:
        bits = _select(ctx, is_nan, _u32(ctx, _F16_CANONICAL_NAN), _op(ctx, "arith.shl", w, _u32(ctx, 8)))
        return ctx.op("arith.bitcast", [ctx.op("simt.cvt", [bits], u16)], f16)
    x = ctx.op("arith.bitcast", [_scaled_magnitude(ctx, w, fmt.mantissa_bits, fmt.bias)], f32)
    return _select(ctx, is_nan, ctx.const(float("nan"), f32), x)


def _rounded_magnitude(ctx: Lowering, a: Value, mantissa_bits: int, bias: int, largest: float,
                       largest_code: int) -> Value:
    """The code (u32, no sign) of the f32 magnitude whose bits are `a`, rounded to nearest even,
    saturated at `largest` (whose code is `largest_code`); NaN and inf give `largest_code` too."""
    m, drop = mantissa_bits, 23 - mantissa_bits
    lowest_kept = _op(ctx, "arith.and", _op(ctx, "arith.shr", a, _u32(ctx, drop)), _u32(ctx, 1))
    rounded = ctx.add(ctx.add(a, _u32(ctx, (1 << (drop - 1)) - 1)), lowest_kept)
    normal = ctx.sub(_op(ctx, "arith.shr", rounded, _u32(ctx, drop)), _u32(ctx, (127 - bias) << m))
    scaled = ctx.op("arith.mul", [ctx.op("arith.bitcast", [a], f32), ctx.const(2.0 ** (bias - 1 + m), f32)], f32)
    subnormal = ctx.op("simt.cvt", [scaled], u32, rnd="rni")
    code = _select(ctx, _cmp(ctx, "lt", a, _u32(ctx, (127 + 1 - bias) << 23)), subnormal, normal)
    return _select(ctx, _cmp(ctx, "gt", a, _u32(ctx, _f32_bits(largest))), _u32(ctx, largest_code), code)


def encode_fnuz(ctx: Lowering, x: Value, t: DType) -> Value:
    """f32 `x` converted to f8e4b8 / f8e5b16: nearest even, saturating, inf/NaN -> 0x80, no -0."""
    fmt = FORMATS[t.name]
    bits = ctx.op("arith.bitcast", [x], u32)
    a = _op(ctx, "arith.and", bits, _u32(ctx, _SIGN_F32 - 1))
    code = _rounded_magnitude(ctx, a, fmt.mantissa_bits, fmt.bias, fmt.largest, 0x7F)
    negative = _cmp(ctx, "ne", _op(ctx, "arith.and", bits, _u32(ctx, _SIGN_F32)), _u32(ctx, 0))
    nonzero = _cmp(ctx, "ne", code, _u32(ctx, 0))
    signed = _select(ctx, ctx.op("arith.and", [negative, nonzero], i1), _op(ctx, "arith.or", code, _u32(ctx, 0x80)),
                     code)
    not_finite = _cmp(ctx, "ge", a, _u32(ctx, _INF_F32_BITS))
    return _code_from_u32(ctx, _select(ctx, not_finite, _u32(ctx, fmt.nan_code), signed), t)


def encode_ocp(ctx: Lowering, x: Value, t: DType) -> Value:
    """f32 `x` converted to e4m3 / e5m2 as cvt.rn.satfinite.{e4m3,e5m2}x2.f32: nearest even,
    -0 kept, beyond the largest finite value (infinities too) +-largest, NaN -> 0x7f."""
    fmt = OCP_FORMATS[t.name]
    bits = ctx.op("arith.bitcast", [x], u32)
    a = _op(ctx, "arith.and", bits, _u32(ctx, _SIGN_F32 - 1))
    code = _rounded_magnitude(ctx, a, fmt.mantissa_bits, fmt.bias, fmt.largest, fmt.largest_code)
    sign = _op(ctx, "arith.and", _op(ctx, "arith.shr", bits, _u32(ctx, 24)), _u32(ctx, 0x80))
    signed = _op(ctx, "arith.or", code, sign)
    is_nan = _cmp(ctx, "gt", a, _u32(ctx, _INF_F32_BITS))
    return _code_from_u32(ctx, _select(ctx, is_nan, _u32(ctx, _OCP_NAN_CODE), signed), t)


def encode_e4b15(ctx: Lowering, h: Value) -> Value:
    """f16 `h` converted to f8e4b15 by Triton's rule (clamp to 1.75, round half away from zero)."""
    w = ctx.op("simt.cvt", [ctx.op("arith.bitcast", [h], u16)], u32)
    magnitude = _op(ctx, "arith.min", _op(ctx, "arith.and", w, _u32(ctx, 0x7FFF)), _u32(ctx, E4B15_CLAMP_F16_BITS))
    rounded = _op(ctx, "arith.shr", ctx.add(_op(ctx, "arith.shl", magnitude, _u32(ctx, 1)), _u32(ctx, 0x80)),
                  _u32(ctx, 8))
    sign = _op(ctx, "arith.and", _op(ctx, "arith.shr", w, _u32(ctx, 8)), _u32(ctx, 0x80))
    return _code_from_u32(ctx, _op(ctx, "arith.or", rounded, sign), FORMATS["f8e4b15"].dtype)


__all__ = ["OcpFormat", "OCP_FORMATS", "decode_to_f32", "decode_ocp", "encode_fnuz", "encode_ocp", "encode_e4b15"]
