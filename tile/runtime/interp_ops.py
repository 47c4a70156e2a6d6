"""Interpreter closures for tile IR's value ops: constants, shapes, arithmetic, math, casts.

Integer semantics follow the GPU: arithmetic wraps; `div`/`rem` truncate toward zero and a
division by zero gives all-ones bits (-1 signed, the maximum unsigned) with the dividend as
the remainder, as NVIDIA's division sequence does; INT_MIN / -1 wraps to INT_MIN. Shifts
take the amount as unsigned and clamp it like PTX: `shl`/logical `shr` by >= the width give
0, arithmetic `shr` gives the sign fill. i1 arithmetic is 1-bit unsigned arithmetic.
"""
from __future__ import annotations

import math

import numpy as np

from tile.ir.core import Operation
from tile.ir.ops import cast_rounding, rounding_mode
from tile.ir.types import DType, PointerType, element_type, f32, f64, shape_of

from .interp_core import Compiler, ExecState, Frame, implements, lane_text, program_mask
from .interp_dtypes import bitcast, cast, constant, rounder, value_dtype
from .interp_rounding import rounded_binary, rounded_fma, rounded_sqrt


def scalar_type(v) -> DType | PointerType:
    return element_type(v.type)


# ----------------------------------------------------------------------- values, shapes


@implements("arith.constant")
def _constant(op: Operation, cc: Compiler):
    r = cc.slot(op.result)
    value = constant(op.attrs["value"], scalar_type(op.result))
    shape = shape_of(op.result.type)
    value = np.broadcast_to(value.reshape((1,) * (len(shape) + 1)), (1,) + shape)

    def run(f: Frame, st: ExecState) -> None:
        f[r] = value

    return run


@implements("tt.program_id")
def _program_id(op: Operation, cc: Compiler):
    r, axis = cc.slot(op.result), op.attrs["axis"]

    def run(f: Frame, st: ExecState) -> None:
        f[r] = st.pids[axis]

    return run


@implements("tt.num_programs")
def _num_programs(op: Operation, cc: Compiler):
    r, axis = cc.slot(op.result), op.attrs["axis"]

    def run(f: Frame, st: ExecState) -> None:
        f[r] = np.array([st.grid[axis]], np.int32)

    return run


@implements("tt.arange")
def _arange(op: Operation, cc: Compiler):
    r = cc.slot(op.result)
    value = np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)[None]
    value.flags.writeable = False

    def run(f: Frame, st: ExecState) -> None:
        f[r] = value

    return run


def _unary_view(op: Operation, cc: Compiler, fn):
    a, r = cc.slot(op.operand(0)), cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        f[r] = fn(f[a])

    return run


@implements("tt.splat")
def _splat(op: Operation, cc: Compiler):
    shape = shape_of(op.result.type)
    ones = (1,) * len(shape)
    return _unary_view(op, cc, lambda x: np.broadcast_to(x.reshape(x.shape + ones), x.shape + shape))


@implements("tt.broadcast")
def _broadcast(op: Operation, cc: Compiler):
    shape = shape_of(op.result.type)
    return _unary_view(op, cc, lambda x: np.broadcast_to(x, x.shape[:1] + shape))


@implements("tt.expand_dims")
def _expand_dims(op: Operation, cc: Compiler):
    axis = op.attrs["axis"] + 1
    return _unary_view(op, cc, lambda x: np.expand_dims(x, axis))


@implements("tt.reshape")
def _reshape(op: Operation, cc: Compiler):
    shape = shape_of(op.result.type)
    return _unary_view(op, cc, lambda x: x.reshape(x.shape[:1] + shape))


@implements("tt.trans")
def _trans(op: Operation, cc: Compiler):
    order = (0,) + tuple(i + 1 for i in op.attrs["order"])
    return _unary_view(op, cc, lambda x: x.transpose(order))


@implements("tt.hint", "tt.ptr_to_int", "tt.int_to_ptr")
def _identity(op: Operation, cc: Compiler):
    return _unary_view(op, cc, lambda x: x)


# ------------------------------------------------------------------------- integers


def _c_divmod(a: np.ndarray, b: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Quotient truncated toward zero and C remainder; x / 0 = all ones, x % 0 = x."""
    zero = b == 0
    has_zero = bool(zero.any())
    bs = np.where(zero, b.dtype.type(1), b) if has_zero else b
    if signed:
        rem = np.fmod(a, bs)
        quo = (a - rem) // bs  # exact division; INT_MIN // -1 wraps to INT_MIN
    else:
        quo, rem = np.floor_divide(a, bs), np.remainder(a, bs)
    if has_zero:
        quo = np.where(zero, a.dtype.type(-1) if signed else np.iinfo(a.dtype).max, quo)
        rem = np.where(zero, a, rem)
    return quo, rem


def _shift(a: np.ndarray, b: np.ndarray, left: bool, t: DType) -> np.ndarray:
    bits = t.bits
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    amount = b.astype(a.dtype, copy=False).view(unsigned) if b.dtype.kind == "i" else b
    clamped = np.minimum(amount, unsigned.type(bits - 1)).astype(a.dtype)
    out = np.left_shift(a, clamped) if left else np.right_shift(a, clamped)
    if left or not t.is_signed:
        out = np.where(amount >= bits, a.dtype.type(0), out)
    return out


def _umulhi(a: np.ndarray, b: np.ndarray, t: DType) -> np.ndarray:
    ua = a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a
    ub = b.view(ua.dtype) if b.dtype.kind == "i" else b
    if t.bits <= 32:
        prod = ua.astype(np.uint64) * ub.astype(np.uint64)
        return (prod >> np.uint64(t.bits)).astype(ua.dtype).view(a.dtype)
    lo_mask, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
    al, ah, bl, bh = ua & lo_mask, ua >> s32, ub & lo_mask, ub >> s32
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    carry = ((ll >> s32) + (lh & lo_mask) + (hl & lo_mask)) >> s32
    return (hh + (lh >> s32) + (hl >> s32) + carry).view(a.dtype)


def _bool_binary(name: str):
    """i1 arithmetic as 1-bit unsigned integers."""
    return {
        "arith.add": np.logical_xor, "arith.sub": np.logical_xor, "arith.mul": np.logical_and,
        "arith.and": np.logical_and, "arith.or": np.logical_or, "arith.xor": np.logical_xor,
        "arith.max": np.logical_or, "arith.min": np.logical_and,
        "arith.div": lambda a, b: np.where(b, a, True),  # x / 0 is all ones
        "arith.rem": lambda a, b: np.where(b, False, a),
        "arith.shl": lambda a, b: np.where(b, False, a), "arith.shr": lambda a, b: np.where(b, False, a),
        "math.umulhi": lambda a, b: np.zeros(np.broadcast_shapes(a.shape, b.shape), bool),
    }[name]  # fmt: skip


def _int_binary(name: str, t: DType):
    if t.is_bool:
        return _bool_binary(name)
    signed = t.is_signed
    table = {
        "arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply,
        "arith.and": np.bitwise_and, "arith.or": np.bitwise_or, "arith.xor": np.bitwise_xor,
        "arith.max": np.maximum, "arith.min": np.minimum,
        "arith.div": lambda a, b: _c_divmod(a, b, signed)[0],
        "arith.rem": lambda a, b: _c_divmod(a, b, signed)[1],
        "arith.shl": lambda a, b: _shift(a, b, True, t), "arith.shr": lambda a, b: _shift(a, b, False, t),
        "math.umulhi": lambda a, b: _umulhi(a, b, t),
    }  # fmt: skip
    return table[name]


def _float_binary(name: str, op: Operation):
    mode = rounding_mode(op)
    if mode is not None:  # correctly rounded in that mode (f32, f64)
        t = scalar_type(op.result)
        return lambda a, b: rounded_binary(name, a, b, t, mode)
    nan = bool(op.attrs.get("propagate_nan", False))
    return {
        "arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply, "arith.div": np.divide,
        "arith.rem": np.fmod,
        "arith.max": np.maximum if nan else np.fmax, "arith.min": np.minimum if nan else np.fmin,
    }[name]  # fmt: skip


@implements("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.and", "arith.or",
            "arith.xor", "arith.shl", "arith.shr", "arith.max", "arith.min", "math.umulhi")
def _binary(op: Operation, cc: Compiler):
    t = scalar_type(op.result)
    fn = _int_binary(op.name, t) if t.is_integer else _float_binary(op.name, op)
    a, b, r = cc.slot(op.operand(0)), cc.slot(op.operand(1)), cc.slot(op.result)
    rnd = rounder(t)
    if rnd is None:

        def run(f: Frame, st: ExecState) -> None:
            f[r] = fn(f[a], f[b])

    else:

        def run(f: Frame, st: ExecState) -> None:
            f[r] = rnd(fn(f[a], f[b]))

    return run


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}  # fmt: skip


@implements("arith.cmp")
def _cmp(op: Operation, cc: Compiler):
    fn = _CMP[op.attrs["predicate"]]  # NumPy compares floats ordered, except != (unordered)
    a, b, r = cc.slot(op.operand(0)), cc.slot(op.operand(1)), cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        f[r] = fn(f[a], f[b])

    return run


@implements("arith.select")
def _select(op: Operation, cc: Compiler):
    c, a, b, r = (cc.slot(v) for v in (*op.operands, op.result))
    ndim = len(shape_of(op.result.type)) + 1

    def run(f: Frame, st: ExecState) -> None:
        cond = f[c]
        f[r] = np.where(cond.reshape(cond.shape + (1,) * (ndim - cond.ndim)), f[a], f[b])

    return run


# ---------------------------------------------------------------------------- unary


_ERF = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf: Python's, element by element (slow, exact)


def _erf(x: np.ndarray) -> np.ndarray:
    return _ERF(x.astype(np.float64)).astype(x.dtype)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1.0 / np.sqrt(x.astype(np.float64))).astype(x.dtype)  # one rounding, not two


_FLOAT_UNARY = {
    "arith.neg": np.negative, "math.abs": np.abs, "math.exp": np.exp, "math.exp2": np.exp2, "math.log": np.log,
    "math.log2": np.log2, "math.sqrt": np.sqrt, "math.rsqrt": _rsqrt, "math.sin": np.sin, "math.cos": np.cos,
    "math.floor": np.floor, "math.ceil": np.ceil, "math.erf": _erf, "math.trunc": np.trunc, "math.rint": np.rint,
}  # fmt: skip


def _int_unary(name: str, t: DType):
    if t.is_bool:
        return {"arith.neg": lambda x: x, "math.abs": lambda x: x, "arith.not": np.logical_not}[name]
    return {"arith.neg": np.negative, "math.abs": np.abs, "arith.not": np.invert}[name]


@implements("arith.neg", "arith.not", "math.abs", "math.exp", "math.exp2", "math.log", "math.log2",
            "math.sqrt", "math.rsqrt", "math.sin", "math.cos", "math.erf", "math.floor", "math.ceil", "math.trunc",
            "math.rint")
def _unary(op: Operation, cc: Compiler):
    t = scalar_type(op.result)
    fn = _int_unary(op.name, t) if t.is_integer else _FLOAT_UNARY[op.name]
    mode = rounding_mode(op)
    if mode is not None:  # math.sqrt in a given rounding mode (f32, f64)
        return _unary_view(op, cc, lambda x: rounded_sqrt(x, t, mode))
    rnd = rounder(t)
    if rnd is not None:
        inner = fn
        fn = lambda x: rnd(inner(x))  # noqa: E731
    return _unary_view(op, cc, fn)


@implements("math.fma")
def _fma(op: Operation, cc: Compiler):
    t = scalar_type(op.result)
    a, b, c, r = (cc.slot(v) for v in (*op.operands, op.result))
    mode = rounding_mode(op) or "rn"
    exact = t in (f32, f64)

    def run(f: Frame, st: ExecState) -> None:
        x, y, z = f[a], f[b], f[c]
        if exact:  # one rounding of the exact a * b + c
            f[r] = rounded_fma(x, y, z, t, mode)
        else:  # f16/bf16: the product is exact in float64, the sum rounds once there, then to t
            f[r] = cast(x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64), f64, t)

    return run


# ---------------------------------------------------------------------------- casts


@implements("arith.cast")
def _cast(op: Operation, cc: Compiler):
    src, dst = scalar_type(op.operand(0)), scalar_type(op.result)
    if src == dst:
        return _unary_view(op, cc, lambda x: x)
    rounding = cast_rounding(op)
    return _unary_view(op, cc, lambda x: cast(x, src, dst, rounding))


@implements("arith.bitcast")
def _bitcast(op: Operation, cc: Compiler):
    src, dst = scalar_type(op.operand(0)), scalar_type(op.result)
    if value_dtype(src) == value_dtype(dst) and src == dst:
        return _unary_view(op, cc, lambda x: x)
    return _unary_view(op, cc, lambda x: bitcast(x, src, dst))


# ------------------------------------------------------------- join, split, gather, histogram


@implements("tt.join")
def _join(op: Operation, cc: Compiler):
    a, b, r = cc.slot(op.operand(0)), cc.slot(op.operand(1)), cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        x, y = np.broadcast_arrays(f[a], f[b])
        f[r] = np.stack([x, y], axis=-1)

    return run


@implements("tt.split")
def _split(op: Operation, cc: Compiler):
    a = cc.slot(op.operand(0))
    lo, hi = (cc.slot(v) for v in op.results)

    def run(f: Frame, st: ExecState) -> None:
        x = f[a]
        f[lo], f[hi] = x[..., 0], x[..., 1]

    return run


@implements("tt.gather")
def _gather(op: Operation, cc: Compiler):
    s, i, r = cc.slot(op.operand(0)), cc.slot(op.operand(1)), cc.slot(op.result)
    axis = op.attrs["axis"] + 1
    size = shape_of(op.operand(0).type)[op.attrs["axis"]]

    def run(f: Frame, st: ExecState) -> None:
        src, index = f[s], f[i]
        lead = max(src.shape[0], index.shape[0])
        src = np.broadcast_to(src, (lead,) + src.shape[1:])
        index = np.broadcast_to(index, (lead,) + index.shape[1:])
        bad = index >= size if index.dtype.kind == "u" else (index < 0) | (index >= size)
        if st.active is not None and lead == st.P:
            bad &= program_mask(st.active, bad.ndim)
        if bad.any():
            flat = int(np.argmax(bad))
            raise cc.error(op, f"gather index {int(index.reshape(-1)[flat])} is out of range [0, {size}) along "
                               f"axis {axis - 1}, in {lane_text(st, bad.shape, flat)}")
        f[r] = np.take_along_axis(src, np.clip(index.astype(np.int64), 0, size - 1), axis=axis)

    return run


@implements("tt.histogram")
def _histogram(op: Operation, cc: Compiler):
    x_slot, r = cc.slot(op.operand(0)), cc.slot(op.result)
    m_slot = cc.slot(op.operand(1)) if op.num_operands > 1 else None
    bins = shape_of(op.result.type)[0]

    def run(f: Frame, st: ExecState) -> None:
        x = f[x_slot]
        mask = f[m_slot] if m_slot is not None else None
        lead = max(x.shape[0], mask.shape[0] if mask is not None else 1)
        x = np.broadcast_to(x, (lead,) + x.shape[1:])
        counted = x < bins if x.dtype.kind == "u" else (x >= 0) & (x < bins)
        if mask is not None:
            counted = counted & mask
        slots = np.arange(lead, dtype=np.int64)[:, None] * bins + np.where(counted, x, 0).astype(np.int64)
        f[r] = np.bincount(slots[counted], minlength=lead * bins).astype(np.int32).reshape(lead, bins)

    return run


from . import interp_bits  # noqa: E402,F401  (registers the bit-manipulation ops and the approximate units)
