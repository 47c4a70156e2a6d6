"""Interpreter closures for the integer bit ops and the GPU's approximate units (see tile.ir.ops).

The integer ops are exact, on the values' two's-complement bits:

    math.clz  0x00F0_0000 : i32  ->  8          math.popc 0xFF : i32   ->  8
    math.brev 0x1 : i32          ->  INT_MIN    math.byte_perm a, b, 0x3210 -> a (prmt)
    math.mulhi, math.mul24, math.sad            as PTX's mul.hi, mul24.lo and sad

`math.approx` stands for hardware units whose exact results are the GPU's own (ex2.approx,
sin.approx, ...): here they are the correctly rounded value of the function, with the
units' special cases (ex2 flushes results below 2^-126; div gives 0 for 2^126 < |y| < 2^128;
rcp64h keeps the high 32 bits of 1/x and flushes subnormals). The PTX ISA bounds how far
the GPU may be from these values.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tile.ir.core import Operation
from tile.ir.types import DType

from .interp_core import Compiler, ExecState, Frame, implements
from .interp_ops import _umulhi, _unary_view, scalar_type

_UNSIGNED = {4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def _bits(x: np.ndarray) -> np.ndarray:
    """The bits of a 32/64-bit integer array as unsigned integers."""
    return x.view(_UNSIGNED[x.dtype.itemsize])


def popc(x: np.ndarray) -> np.ndarray:
    """Set bits of each 32/64-bit integer (SWAR count), as int32."""
    v = _bits(x).astype(np.uint64)
    m1, m2, m4 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333), np.uint64(0x0F0F0F0F0F0F0F0F)
    v = v - ((v >> np.uint64(1)) & m1)
    v = (v & m2) + ((v >> np.uint64(2)) & m2)
    v = (v + (v >> np.uint64(4))) & m4
    return ((v * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int32)


def clz(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of each 32/64-bit integer (32 or 64 for zero), as int32."""
    v = _bits(x)
    width = 8 * x.dtype.itemsize
    if width == 64:
        hi, lo = (v >> np.uint64(32)).astype(np.uint32), (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return np.where(hi != 0, clz(hi), 32 + clz(lo)).astype(np.int32)
    # a 32-bit value is exact in float64, whose exponent is its bit length
    length = np.frexp(v.astype(np.float64))[1]
    return np.where(v == 0, 32, 32 - length).astype(np.int32)


_BYTE_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint8)


def brev(x: np.ndarray) -> np.ndarray:
    """The bits of each 32/64-bit integer in reverse order."""
    v = np.ascontiguousarray(_bits(x))
    as_bytes = v.view(np.uint8).reshape(v.shape + (v.dtype.itemsize,))
    reversed_bytes = np.ascontiguousarray(_BYTE_REVERSED[as_bytes[..., ::-1]])
    return reversed_bytes.view(v.dtype).reshape(v.shape).view(x.dtype)


def prmt(a: np.ndarray, b: np.ndarray, selector: np.ndarray) -> np.ndarray:
    """PTX prmt.b32 (default mode): byte n of the result is byte (s >> 4n) & 7 of {b:a}, or its
    sign fill when bit 3 of that nibble is set."""
    both = (_bits(b).astype(np.uint64) << np.uint64(32)) | _bits(a).astype(np.uint64)
    s = _bits(selector).astype(np.uint64)
    out = np.zeros(np.broadcast_shapes(a.shape, b.shape, s.shape), np.uint64)
    for n in range(4):
        nibble = (s >> np.uint64(4 * n)) & np.uint64(0xF)
        byte = (both >> (np.uint64(8) * (nibble & np.uint64(7)))) & np.uint64(0xFF)
        fill = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
        byte = np.where(nibble & np.uint64(8), fill, byte)
        out |= byte << np.uint64(8 * n)
    return out.astype(np.uint32).view(a.dtype)


def mulhi(a: np.ndarray, b: np.ndarray, t: DType) -> np.ndarray:
    """High half of the full product, signed or unsigned by the dtype."""
    if not t.is_signed:
        return _umulhi(a, b, t)
    if t.bits == 32:
        return ((a.astype(np.int64) * b.astype(np.int64)) >> np.int64(32)).astype(np.int32)
    # signed from unsigned: subtract b where a < 0 and a where b < 0 (mod 2^64)
    hi = _umulhi(a, b, t).view(np.uint64)
    hi = hi - np.where(a < 0, b.view(np.uint64), np.uint64(0)) - np.where(b < 0, a.view(np.uint64), np.uint64(0))
    return hi.view(np.int64)


def mul24(a: np.ndarray, b: np.ndarray, t: DType) -> np.ndarray:
    """Low 32 bits of the product of the low 24 bits (sign-extended for i32)."""
    low = lambda v: v.astype(np.int64) & 0xFFFFFF  # noqa: E731
    x, y = low(a), low(b)
    if t.is_signed:
        x, y = (x ^ 0x800000) - 0x800000, (y ^ 0x800000) - 0x800000
    return ((x * y) & 0xFFFFFFFF).astype(np.uint32).view(a.dtype)


def sad(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """|a - b| + c: the difference is exact (taken the larger minus the smaller), the sum wraps."""
    ua, ub, uc = _bits(a), _bits(b), _bits(c)
    diff = np.where(a >= b, ua - ub, ub - ua)
    return (diff + uc).view(a.dtype)


_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray, DType], np.ndarray]] = {
    "math.mulhi": mulhi, "math.mul24": mul24,
}


@implements("math.clz", "math.popc", "math.brev")
def _bit_unary(op: Operation, cc: Compiler):
    fn = {"math.clz": clz, "math.popc": popc, "math.brev": brev}[op.name]
    return _unary_view(op, cc, fn)


@implements("math.mulhi", "math.mul24", "math.sad", "math.byte_perm")
def _bit_nary(op: Operation, cc: Compiler):
    t = scalar_type(op.result)
    slots = [cc.slot(v) for v in op.operands]
    r = cc.slot(op.result)
    if op.name in _INT_BINARY:
        binary = _INT_BINARY[op.name]
        fn = lambda a, b: binary(a, b, t)  # noqa: E731
    else:
        fn = sad if op.name == "math.sad" else prmt

    def run(f: Frame, st: ExecState) -> None:
        with np.errstate(over="ignore"):
            f[r] = fn(*(f[s] for s in slots))

    return run


# ------------------------------------------------------------------------- approximate units


def _ex2(x: np.ndarray) -> np.ndarray:
    r = np.exp2(x.astype(np.float64)).astype(np.float32)
    return np.where(np.abs(r) < np.float32(2.0 ** -126), np.float32(0), r)  # .ftz


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = (x.astype(np.float64) / y.astype(np.float64)).astype(np.float32)
    huge = (np.abs(y) > np.float32(2.0 ** 126)) & np.isfinite(y)  # a * (1/b) with 1/b flushed to zero
    zero = np.where(np.signbit(x) ^ np.signbit(y), np.float32(-0.0), np.float32(0.0))
    return np.where(huge, np.where(np.isinf(x), np.float32(np.nan), zero), r)


def rcp64h(x: np.ndarray) -> np.ndarray:
    """1/x from the high 32 bits of x, with the low 32 bits of the result cleared (truncated)
    and subnormal inputs and results flushed to zero."""
    tiny = np.abs(x) < 2.0 ** -1022
    xs = np.where(tiny, np.copysign(0.0, x), x)
    high = (xs.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
    r = 1.0 / high
    r = np.where(np.abs(r) < 2.0 ** -1022, np.copysign(0.0, r), r)
    return (r.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)


def _f32(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: fn(x.astype(np.float64)).astype(np.float32)


APPROX: dict[str, Callable[..., np.ndarray]] = {
    "ex2": _ex2, "lg2": _f32(np.log2), "sin": _f32(np.sin), "cos": _f32(np.cos), "tanh": _f32(np.tanh),
    "div": _div, "rcp64h": rcp64h,
}


@implements("math.approx")
def _approx(op: Operation, cc: Compiler):
    fn = APPROX[op.attrs["fn"]]
    slots = [cc.slot(v) for v in op.operands]
    r = cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        with np.errstate(all="ignore"):
            f[r] = fn(*(f[s] for s in slots))

    return run


__all__ = ["popc", "clz", "brev", "prmt", "mulhi", "mul24", "sad", "rcp64h", "APPROX"]
