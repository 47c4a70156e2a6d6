"""Lowering of arith.cast and arith.bitcast: one scalar conversion per register, correctly rounded.

    %h = arith.cast %x : tensor<128xf16, #L>        (from f32)
  becomes, per register,
    %h0 = simt.cvt %x0 {rnd = "rn"} : f16            // cvt.rn.f16.f32

Rules (every result is the correctly rounded value, as `arith.cast` specifies):
  * widening float and int->float conversions that are exact are one cvt;
  * narrowing to f16/f32/f64 and int->f16/f32/f64 are one cvt with .rn or .rz;
  * to bf16: cvt.rn.bf16.f32 (sm_80); from f64 and 32/64-bit ints on sm_80, and to fp8 from
    f64 or wide ints, the value is first rounded to f32 *to odd* (rz, then the last bit set if
    inexact) so that the second rounding is exact: rounding to odd at 24 bits then to nearest
    at p <= 11 bits equals one rounding to nearest;
  * fp8 (e4m3 "nv" and e5m2) on sm_89+: cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (saturates to the
    largest finite value, as Triton does) and cvt.rn.f16x2.{e4m3,e5m2}x2; on older PTX targets
    (sm_80, sm_86) the same results in integer and f32 arithmetic (lower_float8: decoded to f16
    or f32, encoded from f32);
  * Triton's other fp8 formats (f8e4b15, f8e4b8, f8e5b16) convert in integer arithmetic on
    every target (lower_float8): decoded exactly to f32; encoded from f32 (f8e4b8, f8e5b16:
    exact or rounded to odd first) or from f16 rounded toward zero (f8e4b15, Triton's rule);
  * f16/bf16/fp8 sources convert through f32, which holds them exactly;
  * float->int truncates toward zero (cvt.rzi; out-of-range values saturate);
  * a `rounding` mode picks the cvt modifier: rn rz rd ru become .rn .rz .rm .rp for float
    results and .rni .rzi .rmi .rpi for integer results;
  * i1: x != 0 to i1 (NaN counts as true), selp 1/0 from i1.
"""
from __future__ import annotations

from typing import Optional

from ..ir.core import Operation, Value
from ..ir.float8 import is_float8_variant
from ..ir.ops import TRITON_ROUNDINGS, cast_rounding
from ..ir.types import DType, element_type, f16, f32, f64, i1, i32, u8
from . import lower_float8
from .lower_core import Lowering, LoweringError, lowers

FP8_CVT_ARCH = 89  # the first PTX architecture with cvt instructions for e4m3 / e5m2

INT_RESULT_ROUNDING = {"rn": "rni", "rz": "rzi", "rd": "rmi", "ru": "rpi"}  # cvt modifiers into integers
FLOAT_RESULT_ROUNDING = {"rn": "rn", "rz": "rz", "rd": "rm", "ru": "rp"}


def _cvt(ctx: Lowering, v: Value, dst: DType, rnd: str = "") -> Value:
    return ctx.op("simt.cvt", [v], dst, rnd=rnd)


def to_f32_exact(ctx: Lowering, v: Value) -> Value:
    """A value of at most 24 significant bits (f16, bf16, fp8, f32) as f32."""
    t = v.type
    return v if t == f32 else _cvt(ctx, v, f32)


def f32_round_to_odd(ctx: Lowering, v: Value) -> Value:
    """`v` (f64 or an integer) rounded to f32 toward zero, last bit set when inexact."""
    t = v.type
    r = _cvt(ctx, v, f32, "rz")
    back = _cvt(ctx, r, t, "" if t == f64 else "rzi")
    inexact = ctx.op("arith.cmp", [back, v], i1, predicate="ne")
    bits = ctx.op("arith.bitcast", [r], i32)
    odd = ctx.op("arith.or", [bits, ctx.const(1, i32)], i32)
    return ctx.op("arith.bitcast", [ctx.op("arith.select", [inexact, odd, bits], i32)], f32)


def ocp_fp8_in_software(ctx: Lowering, t: DType) -> bool:
    """Whether `t` is e4m3 / e5m2 on a PTX target without fp8 cvt instructions (lower_float8 converts)."""
    return t.name in lower_float8.OCP_FORMATS and ctx.facts.isa == "ptx" and ctx.sm < FP8_CVT_ARCH


def _to_float8_in_software(ctx: Lowering, v: Value, dst: DType) -> Value:
    src = v.type
    e4b15 = dst.name == "f8e4b15"
    narrow_float = src.is_floating and src.bits < 32 and not (e4b15 and src == f16)
    if src == i1 or src.is_integer and src.bits <= 16 or narrow_float:
        v, src = convert(ctx, v, f32), f32  # exact
    if e4b15:  # Triton's rule starts from f16 rounded toward zero
        if src != f16:
            v = _cvt(ctx, v if src == f32 else _cvt(ctx, v, f32, "rz"), f16, "rz")
        return lower_float8.encode_e4b15(ctx, v)
    if src != f32:
        v = f32_round_to_odd(ctx, v)  # f64 and wide integers: the second rounding is then exact
    if is_float8_variant(dst):
        return lower_float8.encode_fnuz(ctx, v, dst)
    return lower_float8.encode_ocp(ctx, v, dst)


def convert(ctx: Lowering, v: Value, dst: DType, rounding: Optional[str] = None) -> Value:
    """The value `v` converted to `dst` (arith.cast semantics), rounding in `rounding` (rn rz rd
    ru, or rtne/rtz; None: toward zero into integers, to nearest otherwise)."""
    src = v.type
    if src == dst:
        return v
    if dst.is_fp8 and TRITON_ROUNDINGS.get(rounding, rounding) not in (None, "rn"):
        raise LoweringError(ctx.func, f"conversion to {dst} rounds to nearest only")  # the frontend refuses rtz
    if is_float8_variant(src):
        v, src = lower_float8.decode_to_f32(ctx, v), f32
    elif ocp_fp8_in_software(ctx, src):
        v = lower_float8.decode_ocp(ctx, v)
        src = v.type
    if src == dst:
        return v
    if is_float8_variant(dst) or ocp_fp8_in_software(ctx, dst):
        return _to_float8_in_software(ctx, v, dst)
    if src.is_floating and src.bits <= 16:
        v, src = to_f32_exact(ctx, v), f32  # f16, bf16 and fp8 are exact in f32
        if src == dst:
            return v
    if dst == i1:
        return ctx.op("arith.cmp", [v, ctx.const(0, src)], i1, predicate="ne")
    if src == i1:
        return ctx.op("arith.select", [v, ctx.const(1, dst), ctx.const(0, dst)], dst)
    mode = TRITON_ROUNDINGS.get(rounding, rounding) or ("rz" if src.is_floating and dst.is_integer else "rn")
    if dst.is_integer:
        return _cvt(ctx, v, dst, INT_RESULT_ROUNDING[mode] if src.is_floating else "")
    rnd = FLOAT_RESULT_ROUNDING[mode]
    if src == f32 and dst == f64:
        return _cvt(ctx, v, dst)
    if dst in (f32, f64) or dst.name == "f16":
        return _cvt(ctx, v, dst, rnd)
    # bf16 and fp8 destinations (from f32, f64 or an integer)
    if src == f32 or src.bits <= 16:
        x = v if src == f32 else _cvt(ctx, v, f32, "rn")  # integers of <= 16 bits are exact in f32
    elif dst.name == "bf16" and ctx.sm >= 90 and rnd == "rn":
        return _cvt(ctx, v, dst, "rn")
    elif rnd == "rz":
        x = _cvt(ctx, v, f32, "rz")
    else:
        x = f32_round_to_odd(ctx, v)
    return _cvt(ctx, x, dst, rnd if dst.name == "bf16" else "rn")


def bitcast(ctx: Lowering, v: Value, dst) -> Value:
    """Same bits, another type; 8-bit values keep their register convention (i8 sign-extended)."""
    src = v.type
    if src == dst:
        return v
    if isinstance(src, DType) and isinstance(dst, DType) and src.bits == 8:
        if src.is_signed:
            return bitcast(ctx, _cvt(ctx, v, u8), dst)
        if dst.is_signed:
            return _cvt(ctx, bitcast(ctx, v, u8), dst)
    return ctx.op("arith.bitcast", [v], dst)


@lowers("arith.cast")
def _lower_cast(ctx: Lowering, op: Operation) -> None:
    dst = element_type(op.result.type)
    rounding = cast_rounding(op)
    try:
        ctx.set(op.result, [convert(ctx, v, dst, rounding) for v in ctx.get(op.operand(0))])
    except LoweringError as e:
        raise LoweringError(op, str(e).split(": ", 1)[-1]) from None


@lowers("arith.bitcast", "tt.ptr_to_int", "tt.int_to_ptr")
def _lower_bitcast(ctx: Lowering, op: Operation) -> None:
    dst = element_type(op.result.type)
    ctx.set(op.result, [bitcast(ctx, v, dst) for v in ctx.get(op.operand(0))])
