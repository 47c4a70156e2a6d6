"""Conversions of Triton's other fp8 formats (f8e4b15, f8e4b8, f8e5b16) in integer arithmetic.

PTX has no instruction for these formats, so a value is decoded and encoded with integer and
f32 ops that follow tile.ir.float8 bit for bit, on every target (sm_80 included). Values of
these types only ever move, load, store and select in simt IR; lower_cast routes every
conversion through the functions here.

Decoding (exact): the magnitude bits move to the top of an f32 mantissa, which makes the f32
(1.m * 2**e or a subnormal 0.m * 2**-126) the code's value times 2**(bias - 127); one exact
multiplication by 2**(127 - bias) fixes the scale:

    %w = simt.cvt %code : u32                           (the code, zero-extended)
    %m = arith.and %w, 0x7f ; %m = arith.shl %m, 23 - mantissa_bits
    %x = arith.mul (bitcast %m : f32), 2**(127 - bias) : f32
    sign bit or-ed in; fnuz formats: code 0x80 -> NaN

Encoding f32 -> f8e4b8 / f8e5b16 (round to nearest even, saturate, inf/NaN -> 0x80, no -0):
normal results round the f32 bits (add half an ulp minus one plus the kept lowest bit, shift
out the dropped mantissa bits, rebias the exponent); subnormal results are
cvt.rni(|x| * 2**(bias - 1 + mantissa_bits)), the code itself.

Encoding fp16 -> f8e4b15 (Triton's rule): code = sign | ((min(|h| bits, 0x3F00) << 1) + 0x80) >> 8.
"""
from __future__ import annotations

import struct

from ..ir.core import Value
from ..ir.float8 import E4B15_CLAMP_F16_BITS, FORMATS
from ..ir.types import DType, f32, i1, u8, u16, u32
from .lower_core import Lowering

_SIGN_F32 = 1 << 31
_INF_F32_BITS = 0x7F800000


def _u32(ctx: Lowering, x: int) -> Value:
    return ctx.const(x, u32)


def _op(ctx: Lowering, name: str, a: Value, b: Value) -> Value:
    return ctx.op(name, [a, b], a.type)


def _code_as_u32(ctx: Lowering, v: Value) -> Value:
    """The 8 code bits of a value of an fp8 type, zero-extended to u32."""
    bits = ctx.op("arith.bitcast", [v], u8)
    return ctx.op("simt.cvt", [bits], u32)


def _code_from_u32(ctx: Lowering, code: Value, t: DType) -> Value:
    return ctx.op("arith.bitcast", [ctx.op("simt.cvt", [code], u8)], t)


def decode_to_f32(ctx: Lowering, v: Value) -> Value:
    """The f32 value of `v` (of an fp8 format of tile.ir.float8); exact."""
    fmt = FORMATS[v.type.name]
    w = _code_as_u32(ctx, v)
    magnitude = _op(ctx, "arith.shl", _op(ctx, "arith.and", w, _u32(ctx, 0x7F)), _u32(ctx, 23 - fmt.mantissa_bits))
    scaled = ctx.op("arith.mul", [ctx.op("arith.bitcast", [magnitude], f32), ctx.const(2.0 ** (127 - fmt.bias), f32)],
                    f32)
    sign = _op(ctx, "arith.shl", _op(ctx, "arith.and", w, _u32(ctx, 0x80)), _u32(ctx, 24))
    x = ctx.op("arith.bitcast", [_op(ctx, "arith.or", ctx.op("arith.bitcast", [scaled], u32), sign)], f32)
    if fmt.nan_code is None:
        return x
    is_nan = ctx.op("arith.cmp", [w, _u32(ctx, fmt.nan_code)], i1, predicate="eq")
    return ctx.op("arith.select", [is_nan, ctx.const(float("nan"), f32), x], f32)


def encode_fnuz(ctx: Lowering, x: Value, t: DType) -> Value:
    """f32 `x` converted to f8e4b8 / f8e5b16: nearest even, saturating, inf/NaN -> 0x80, no -0."""
    fmt = FORMATS[t.name]
    m = fmt.mantissa_bits
    drop = 23 - m
    bits = ctx.op("arith.bitcast", [x], u32)
    a = _op(ctx, "arith.and", bits, _u32(ctx, _SIGN_F32 - 1))
    lowest_kept = _op(ctx, "arith.and", _op(ctx, "arith.shr", a, _u32(ctx, drop)), _u32(ctx, 1))
    rounded = ctx.add(ctx.add(a, _u32(ctx, (1 << (drop - 1)) - 1)), lowest_kept)
    normal = ctx.sub(_op(ctx, "arith.shr", rounded, _u32(ctx, drop)), _u32(ctx, (127 - fmt.bias) << m))
    scaled = ctx.op("arith.mul", [ctx.op("arith.bitcast", [a], f32), ctx.const(2.0 ** (fmt.bias - 1 + m), f32)], f32)
    subnormal = ctx.op("simt.cvt", [scaled], u32, rnd="rni")
    min_normal_bits = (127 + 1 - fmt.bias) << 23
    code = ctx.op("arith.select", [ctx.op("arith.cmp", [a, _u32(ctx, min_normal_bits)], i1, predicate="lt"),
                                   subnormal, normal], u32)
    (largest_bits,) = struct.unpack(">I", struct.pack(">f", fmt.largest))
    code = ctx.op("arith.select", [ctx.op("arith.cmp", [a, _u32(ctx, largest_bits)], i1, predicate="gt"),
                                   _u32(ctx, 0x7F), code], u32)
    negative = ctx.op("arith.cmp", [_op(ctx, "arith.and", bits, _u32(ctx, _SIGN_F32)), _u32(ctx, 0)], i1,
                      predicate="ne")
    nonzero = ctx.op("arith.cmp", [code, _u32(ctx, 0)], i1, predicate="ne")
    signed = ctx.op("arith.select", [ctx.op("arith.and", [negative, nonzero], i1),
                                     _op(ctx, "arith.or", code, _u32(ctx, 0x80)), code], u32)
    not_finite = ctx.op("arith.cmp", [a, _u32(ctx, _INF_F32_BITS)], i1, predicate="ge")
    return _code_from_u32(ctx, ctx.op("arith.select", [not_finite, _u32(ctx, fmt.nan_code), signed], u32), t)


def encode_e4b15(ctx: Lowering, h: Value) -> Value:
    """f16 `h` converted to f8e4b15 by Triton's rule (clamp to 1.75, round half away from zero)."""
    w = ctx.op("simt.cvt", [ctx.op("arith.bitcast", [h], u16)], u32)
    magnitude = _op(ctx, "arith.min", _op(ctx, "arith.and", w, _u32(ctx, 0x7FFF)), _u32(ctx, E4B15_CLAMP_F16_BITS))
    rounded = _op(ctx, "arith.shr", ctx.add(_op(ctx, "arith.shl", magnitude, _u32(ctx, 1)), _u32(ctx, 0x80)),
                  _u32(ctx, 8))
    sign = _op(ctx, "arith.and", _op(ctx, "arith.shr", w, _u32(ctx, 8)), _u32(ctx, 0x80))
    return _code_from_u32(ctx, _op(ctx, "arith.or", rounded, sign), FORMATS["f8e4b15"].dtype)


__all__ = ["decode_to_f32", "encode_fnuz", "encode_e4b15"]
