"""Bit patterns of float constants in every float format tile knows (f16, bf16, f32, f64, fp8)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import float8
from ..ir.types import DType

_IEEE = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32), 64: (np.float64, np.uint64)}


def float_bits(value: float, t: DType) -> int:
    """The bit pattern of `value` rounded (to nearest even) to the float type `t` (inf past its range;
    Triton's other fp8 formats convert by the rules of tile.ir.float8)."""
    if float8.is_float8_variant(t):
        return int(float8.encode(np.array([value]), t)[0])
    if t.name in ("f16", "f32", "f64"):
        ft, bt = _IEEE[t.bits]
        with np.errstate(over="ignore"):
            return int(np.array(value, np.float64).astype(ft).view(bt))
    return _minifloat_bits(value, t.exponent_bits, t.mantissa_bits, ieee_inf=t.name != "f8e4nv")


def _minifloat_bits(value: float, ebits: int, mbits: int, ieee_inf: bool) -> int:
    """Round to nearest even into a small float format (bf16, fp8); e4m3fn saturates at 448."""
    sign = 1 << (ebits + mbits) if math.copysign(1.0, value) < 0 else 0
    all_ones = (1 << ebits) - 1
    if math.isnan(value):
        return sign | (all_ones << mbits) | ((1 << (mbits - 1)) if ieee_inf else (1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    max_finite = (all_ones - 1) << mbits | ((1 << mbits) - 1) if ieee_inf else (all_ones << mbits) | ((1 << mbits) - 2)
    a = abs(value)
    if a == 0:
        return sign
    if math.isinf(a):
        return sign | (all_ones << mbits if ieee_inf else max_finite)
    e = max(math.frexp(a)[1] - 1, 1 - bias)
    n = round(a / 2.0 ** (e - mbits))  # round() is round-half-even, and the scaling is exact
    if n == 1 << (mbits + 1):
        e, n = e + 1, n >> 1
    bits = n if n < 1 << mbits else ((e + bias) << mbits) | (n - (1 << mbits))
    if bits > max_finite:
        bits = all_ones << mbits if ieee_inf else max_finite
    return sign | bits
