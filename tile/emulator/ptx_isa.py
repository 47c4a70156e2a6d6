"""The PTX instruction set, as a table: opcode -> `OpDef(execute, decode, kind)`.

`decode` runs once per instruction when a module is decoded: it checks the suffixes against
the facts of the opcode (which types and modifiers it takes, as data) and raises ValueError
for anything else, so an unsupported form is an error at its PTX line, not a wrong answer.
`execute(machine, instr)` runs it for the machine's active threads, reading and writing
through `Machine.read` / `Machine.write` (values as NumPy arrays over the threads).

This module has the arithmetic, comparison, conversion and bit instructions; ptx_isa_memory
adds memory, warp, barrier and control instructions, ptx_isa_tc tensor cores and cp.async.
Floating-point results are IEEE-exact where PTX rounds (the rounding helpers of
tile.runtime.interp_rounding); `.approx` functions are computed in float64 and rounded once,
well inside the error bounds the PTX ISA documents for them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import numpy as np

from ..ir.types import DType, bf16, f8e4nv, f8e5, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from ..runtime.interp_dtypes import cast, from_bits, to_bits
from ..runtime.interp_rounding import ROUND_TO_INTEGRAL, rounded_binary, rounded_fma, rounded_sqrt
from .machine import BARRIER, BRANCH, EXIT, NP_TYPE, OP, TYPE_BITS, UNSIGNED, Machine
from .program import Instr

Execute = Callable[[Machine, Instr], None]


@dataclass(frozen=True)
class OpDef:
    execute: Execute
    decode: Callable[[Instr], Any]
    kind: int = OP


ISA: dict[str, OpDef] = {}

INTS = ("s16", "u16", "s32", "u32", "s64", "u64")
BITS = ("b16", "b32", "b64")
FLOATS = ("f32", "f64")
ROUNDINGS = {"rn": "rn", "rz": "rz", "rm": "rd", "rp": "ru"}
INTEGRAL = {"rni": "rn", "rzi": "rz", "rmi": "rd", "rpi": "ru"}
DTYPE: dict[str, DType] = {"s8": i8, "u8": u8, "b8": u8, "s16": i16, "u16": u16, "b16": u16, "s32": i32, "u32": u32,
                           "b32": u32, "s64": i64, "u64": u64, "b64": u64, "f16": f16, "bf16": bf16, "f32": f32,
                           "f64": f64, "e4m3": f8e4nv, "e5m2": f8e5}
NAN32 = np.array(0x7FFFFFFF, np.uint32).view(np.float32)[()]


def facts(types: Iterable[str] = (), mods: Iterable[str] = (), count: int = 1, operands: Optional[int] = None,
          required: Iterable[Iterable[str]] = ()) -> Callable[[Instr], Any]:
    """A decoder that accepts `count` type suffixes from `types`, modifiers from `mods`, exactly one
    of each group in `required` (e.g. a comparison), and `operands` operands if given."""
    types, mods = frozenset(types), frozenset(mods)
    required = [frozenset(g) for g in required]

    def decode(ins: Instr) -> Any:
        if len(ins.types) != count or any(t not in types for t in ins.types):
            raise ValueError(f"takes {count} type suffix(es) among {', '.join(sorted(types))}")
        for m in ins.mods:
            if m not in mods and not any(m in g for g in required):
                raise ValueError(f"unsupported modifier .{m}")
        for g in required:
            if sum(m in g for m in ins.mods) != 1:
                raise ValueError(f"needs one of {', '.join('.' + x for x in sorted(g))}")
        if operands is not None and len(ins.operands) != operands:
            raise ValueError(f"takes {operands} operands, got {len(ins.operands)}")
        return None

    return decode


def define(names: str | tuple[str, ...], decode: Callable[[Instr], Any], kind: int = OP
           ) -> Callable[[Execute], Execute]:
    def wrap(fn: Execute) -> Execute:
        for n in (names,) if isinstance(names, str) else names:
            ISA[n] = OpDef(fn, decode, kind)
        return fn

    return wrap


def rounding(ins: Instr) -> Optional[str]:
    for m in ins.mods:
        if m in ROUNDINGS:
            return ROUNDINGS[m]
    return None


def flush(x: Any) -> Any:
    """Subnormal f32 values become zeros of their sign (.ftz)."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        return x
    return np.where(np.abs(x) < np.float32(1.1754944e-38), np.copysign(np.float32(0), x), x).astype(np.float32)


def operands(m: Machine, ins: Instr, t: str) -> list[Any]:
    return [m.read(o, t) for o in ins.operands[1:]]


def as_float(x: Any, t: str) -> Any:
    """Float operands as arithmetic values (bf16 bits -> float32)."""
    return from_bits(np.asarray(x), bf16) if t == "bf16" else x


def float_result(r: Any, t: str) -> Any:
    if t == "bf16":
        return to_bits(np.asarray(r, np.float32), bf16)
    return np.asarray(r).astype(NP_TYPE[t])


# ------------------------------------------------------------------ arithmetic

_ARITH_FLOAT = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _float_arith(name: str, ins: Instr, x: Any, y: Any, t: str) -> Any:
    mode = rounding(ins)
    if "ftz" in ins.mods:
        x, y = flush(x), flush(y)
    if t in ("f16", "bf16"):
        r = _ARITH_FLOAT[name](np.asarray(as_float(x, t), np.float64), np.asarray(as_float(y, t), np.float64))
        out = float_result(cast(np.asarray(r), f64, DTYPE[t], mode), t)
    elif mode in (None, "rn"):
        out = _ARITH_FLOAT[name](x, y)
    else:
        out = rounded_binary(f"arith.{name}", np.asarray(x), np.asarray(y), DTYPE[t], mode).astype(NP_TYPE[t])
    if "ftz" in ins.mods:
        out = flush(out)
    if "sat" in ins.mods:
        out = np.where(np.isnan(out), 0, np.clip(out, 0, 1)).astype(NP_TYPE[t])
    return out


_FLOAT_MODS = ("rn", "rz", "rm", "rp", "ftz", "sat")


@define(("add", "sub"), facts(INTS + FLOATS + ("f16", "bf16"), _FLOAT_MODS, operands=3))
def _add_sub(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    if t in INTS:
        r = x + y if ins.opcode == "add" else x - y
    else:
        r = _float_arith(ins.opcode, ins, x, y, t)
    m.write(ins.operands[0], r, t)


def _wider(t: str) -> str:
    return t[0] + str(2 * TYPE_BITS[t])


def mul_hi(x: Any, y: Any, t: str) -> Any:
    """The high half of the double-width product."""
    bits = TYPE_BITS[t]
    if bits < 64:
        wide = np.asarray(x).astype(NP_TYPE[_wider(t)]) * np.asarray(y).astype(NP_TYPE[_wider(t)])
        return (wide >> bits).astype(NP_TYPE[t])
    ux, uy = np.asarray(x).astype(np.uint64), np.asarray(y).astype(np.uint64)
    lo32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = ux & lo32, ux >> s32, uy & lo32, uy >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & lo32) + (p10 & lo32)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    if t == "s64":
        hi = hi - np.where(np.asarray(x) < 0, uy, np.uint64(0)) - np.where(np.asarray(y) < 0, ux, np.uint64(0))
    return np.asarray(hi).view(NP_TYPE[t])


@define("mul", facts(INTS + FLOATS + ("f16", "bf16"), _FLOAT_MODS + ("lo", "hi", "wide"), operands=3))
def _mul(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    if t in INTS:
        if "wide" in ins.mods:
            wt = _wider(t)
            m.write(ins.operands[0], np.asarray(x).astype(NP_TYPE[wt]) * np.asarray(y).astype(NP_TYPE[wt]), wt)
            return
        r = mul_hi(x, y, t) if "hi" in ins.mods else x * y
    else:
        r = _float_arith("mul", ins, x, y, t)
    m.write(ins.operands[0], r, t)


@define("mul24", facts(("s32", "u32"), ("lo", "hi"), operands=3))
def _mul24(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    ext = (lambda v: (np.asarray(v).astype(np.int64) << 40) >> 40) if t == "s32" else \
        (lambda v: np.asarray(v).astype(np.int64) & 0xFFFFFF)
    p = ext(x) * ext(y)
    r = p if "lo" in ins.mods else p >> 16
    m.write(ins.operands[0], (r & 0xFFFFFFFF).astype(np.uint32).view(NP_TYPE[t]), t)


@define(("mad", "fma"), facts(INTS + FLOATS, _FLOAT_MODS + ("lo", "hi", "wide"), operands=4))
def _mad(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y, z = operands(m, ins, t)
    if t in INTS:
        if "wide" in ins.mods:
            wt = _wider(t)
            p = np.asarray(x).astype(NP_TYPE[wt]) * np.asarray(y).astype(NP_TYPE[wt])
            m.write(ins.operands[0], p + m.read(ins.operands[3], wt), wt)
            return
        r = (mul_hi(x, y, t) if "hi" in ins.mods else x * y) + z
    else:
        if "ftz" in ins.mods:
            x, y, z = flush(x), flush(y), flush(z)
        mode = rounding(ins) or "rn"
        r = rounded_fma(np.asarray(x), np.asarray(y), np.asarray(z), DTYPE[t], mode).astype(NP_TYPE[t])
        if "ftz" in ins.mods:
            r = flush(r)
    m.write(ins.operands[0], r, t)


def int_div(x: Any, y: Any, t: str) -> tuple[Any, Any]:
    """Quotient rounded toward zero and remainder with the dividend's sign; by zero: all ones and x."""
    x, y = np.asarray(x), np.asarray(y)
    zero = y == 0
    ys = np.where(zero, 1, y).astype(y.dtype)
    q = x // ys
    r = x - q * ys
    if t[0] == "s":
        fix = (r != 0) & ((x < 0) != (ys < 0))
        q = np.where(fix, q + 1, q).astype(x.dtype)
        r = (x - q * ys).astype(x.dtype)
    ones = np.array(-1).astype(NP_TYPE[t]) if t[0] == "s" else np.array(np.iinfo(NP_TYPE[t]).max, NP_TYPE[t])
    return np.where(zero, ones, q).astype(NP_TYPE[t]), np.where(zero, x, r).astype(NP_TYPE[t])


@define("div", facts(INTS + FLOATS, ("rn", "rz", "rm", "rp", "ftz", "full", "approx"), operands=3))
def _div(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    if t in INTS:
        r = int_div(x, y, t)[0]
    elif "full" in ins.mods or "approx" in ins.mods:  # within 2 ulp: the exact quotient, rounded once
        if "ftz" in ins.mods:
            x, y = flush(x), flush(y)
        r = (np.asarray(x, np.float64) / np.asarray(y, np.float64)).astype(np.float32)
        if "ftz" in ins.mods:
            r = flush(r)
    else:
        mode = rounding(ins) or "rn"
        r = x / y if mode == "rn" else rounded_binary("arith.div", np.asarray(x), np.asarray(y), DTYPE[t], mode)
    m.write(ins.operands[0], np.asarray(r).astype(NP_TYPE[t]), t)


@define("rem", facts(INTS, operands=3))
def _rem(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    m.write(ins.operands[0], int_div(x, y, t)[1], t)


def float_min_max(x: Any, y: Any, is_max: bool, propagate_nan: bool) -> Any:
    x, y = np.asarray(x), np.asarray(y)
    if propagate_nan:
        r = np.maximum(x, y) if is_max else np.minimum(x, y)
    else:
        r = np.fmax(x, y) if is_max else np.fmin(x, y)
    both_zero = (x == 0) & (y == 0)
    if np.any(both_zero):  # -0 orders below +0
        pick_x = np.signbit(x) != is_max
        r = np.where(both_zero, np.where(pick_x, x, y), r)
    return np.where(np.isnan(r), NAN32 if x.dtype == np.float32 else np.float64("nan"), r).astype(x.dtype)


@define(("min", "max"), facts(INTS + FLOATS, ("ftz", "NaN"), operands=3))
def _min_max(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    if t in INTS:
        r = np.maximum(x, y) if ins.opcode == "max" else np.minimum(x, y)
    else:
        if "ftz" in ins.mods:
            x, y = flush(x), flush(y)
        r = float_min_max(x, y, ins.opcode == "max", "NaN" in ins.mods)
    m.write(ins.operands[0], r, t)


@define(("neg", "abs"), facts(INTS + FLOATS + ("f16", "bf16"), ("ftz",), operands=2))
def _neg_abs(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x = m.read(ins.operands[1], t)
    if t in ("f16", "bf16", "f32", "f64"):  # the sign bit alone (NaN too)
        bits = np.asarray(x).view(UNSIGNED[TYPE_BITS[t]])
        sign = np.array(1 << (TYPE_BITS[t] - 1), bits.dtype)
        r = (bits ^ sign if ins.opcode == "neg" else bits & ~sign).view(NP_TYPE[t])
        if "ftz" in ins.mods:
            r = flush(r)
    else:
        r = -np.asarray(x) if ins.opcode == "neg" else np.abs(np.asarray(x))
    m.write(ins.operands[0], r, t)


# ------------------------------------------------------------------ bits and logic

_LOGIC = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@define(("and", "or", "xor"), facts(BITS + ("pred",), operands=3))
def _logic(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = operands(m, ins, t)
    m.write(ins.operands[0], _LOGIC[ins.opcode](x, y), t)


@define(("not", "cnot"), facts(BITS + ("pred",), operands=2))
def _not(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x = np.asarray(m.read(ins.operands[1], t))
    if ins.opcode == "cnot":
        r = (x == 0).astype(x.dtype)
    else:
        r = ~x
    m.write(ins.operands[0], r, t)


@define(("shl", "shr"), facts(BITS + INTS, operands=3))
def _shift(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x = np.asarray(m.read(ins.operands[1], t))
    n = TYPE_BITS[t]
    amount = np.minimum(np.asarray(m.read(ins.operands[2], "u32")).astype(np.int64), n)
    if ins.opcode == "shl":
        r = np.where(amount >= n, 0, x << np.minimum(amount, n - 1).astype(x.dtype)).astype(x.dtype)
    else:  # shr: arithmetic for .s types, logical for .u and .b; amounts clamp to the width
        r = x >> np.minimum(amount, n - 1).astype(x.dtype)
        if t[0] != "s":
            r = np.where(amount >= n, 0, r).astype(x.dtype)
    m.write(ins.operands[0], r, t)


@define(("clz", "popc", "brev"), facts(("b32", "b64"), operands=2))
def _bit_count(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    n = TYPE_BITS[t]
    x = np.asarray(m.read(ins.operands[1], t)).astype(np.uint64)
    if ins.opcode == "brev":
        r = np.zeros_like(x)
        for i in range(n):
            r |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(n - 1 - i)
        m.write(ins.operands[0], r.astype(NP_TYPE[t]), t)
        return
    if ins.opcode == "popc":
        count = np.zeros(x.shape, np.uint32)
        for i in range(n):
            count += ((x >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
    else:
        count = np.full(x.shape, n, np.uint32)
        for i in range(n):  # the highest set bit decides
            count = np.where((x >> np.uint64(i)) & np.uint64(1), np.uint32(n - 1 - i), count)
    m.write(ins.operands[0], count, "u32")


@define("bfe", facts(("u32", "s32", "u64", "s64"), operands=4))
def _bfe(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    n = TYPE_BITS[t]
    x = np.asarray(m.read(ins.operands[1], t)).astype(np.int64 if t[0] == "s" else np.uint64)
    pos = np.asarray(m.read(ins.operands[2], "u32")).astype(np.int64) & 0xFF
    length = np.asarray(m.read(ins.operands[3], "u32")).astype(np.int64) & 0xFF
    u = np.asarray(x).view(np.uint64) if np.ndim(x) else np.uint64(x)
    shifted = np.where(pos >= 64, np.uint64(0), u >> np.minimum(pos, 63).astype(np.uint64))
    mask = np.where(length >= 64, ~np.uint64(0), (np.uint64(1) << np.minimum(length, 63).astype(np.uint64))
                    - np.uint64(1))
    field = shifted & mask
    if t[0] == "s":  # sign-extend from the field's top bit (or the value's when the field runs past it)
        top = np.minimum(pos + length, n) - 1
        sbit = np.where(length == 0, np.uint64(0),
                        (u >> np.maximum(top, 0).astype(np.uint64)) & np.uint64(1))
        width = np.clip(np.minimum(length, n - np.minimum(pos, n)), 0, 64)
        ext = np.where(width >= 64, np.uint64(0), ~np.uint64(0) << width.astype(np.uint64))
        field = np.where(sbit == 1, field | ext, field & ~ext)
    m.write(ins.operands[0], field.astype(np.uint64).astype(UNSIGNED[n]).view(NP_TYPE[t]), t)


@define("prmt", facts(("b32",), operands=4))
def _prmt(m: Machine, ins: Instr) -> None:
    a, b = (np.asarray(m.read(o, "b32")).astype(np.uint64) for o in ins.operands[1:3])
    sel = np.asarray(m.read(ins.operands[3], "b32")).astype(np.uint64)
    pool = (b << np.uint64(32)) | a
    r = np.zeros(np.broadcast(pool, sel).shape, np.uint64)
    for i in range(4):
        nibble = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
        byte = (pool >> ((nibble & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
        byte = np.where(nibble & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        r |= byte << np.uint64(8 * i)
    m.write(ins.operands[0], r.astype(np.uint32), "b32")


@define("sad", facts(INTS, operands=4))
def _sad(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y, z = (np.asarray(v) for v in operands(m, ins, t))
    d = np.where(x > y, x - y, y - x).astype(x.dtype)
    m.write(ins.operands[0], d + z, t)


# ------------------------------------------------------------------ comparisons and moves

_CMP_INT = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_CMP_FLOAT = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def compare(cmp: str, x: Any, y: Any, is_float: bool) -> Any:
    if not is_float:
        return _CMP_INT[cmp](x, y)
    unordered = np.isnan(x) | np.isnan(y)
    if cmp == "num":
        return ~unordered
    if cmp == "nan":
        return unordered
    base = _CMP_INT[cmp.rstrip("u") if cmp != "neu" else "ne"](x, y)
    if cmp.endswith("u"):
        return base | unordered
    return base & ~unordered if cmp == "ne" else base


@define("setp", facts(INTS + BITS + FLOATS + ("f16", "bf16"), ("ftz",), required=[list(_CMP_INT) + list(_CMP_FLOAT)],
                      operands=3))
def _setp(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    cmp = next(x for x in ins.mods if x != "ftz")
    x, y = (as_float(v, t) for v in operands(m, ins, t))
    if t in BITS and cmp not in ("eq", "ne"):
        raise m.error(f"setp.{cmp} needs a signed, unsigned or float type, not .{t}")
    m.write(ins.operands[0], np.asarray(compare(cmp, x, y, t in ("f16", "bf16", "f32", "f64"))), "pred")


@define("selp", facts(INTS + BITS + FLOATS, operands=4))
def _selp(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x, y = m.read(ins.operands[1], t), m.read(ins.operands[2], t)
    c = m.read(ins.operands[3], "pred")
    m.write(ins.operands[0], np.where(c, x, y).astype(NP_TYPE[t]), t)


@define("mov", facts(INTS + BITS + FLOATS + ("pred", "f16", "bf16"), operands=2))
def _mov(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    dst, src = ins.operands
    if dst[0] == "vec":  # unpack: lowest bits into the first register
        parts = len(dst[1])
        width = TYPE_BITS[t] // parts
        x = np.asarray(m.read(src, t)).view(UNSIGNED[TYPE_BITS[t]])
        for i, d in enumerate(dst[1]):
            m.write(d, (x >> np.array(width * i, x.dtype)).astype(UNSIGNED[width]), f"b{width}")
        return
    if src[0] == "vec":  # pack
        parts = len(src[1])
        width = TYPE_BITS[t] // parts
        wide = UNSIGNED[TYPE_BITS[t]]
        r = np.zeros((), wide)
        for i, s in enumerate(src[1]):
            r = r | (np.asarray(m.read(s, f"b{width}")).astype(wide) << np.array(width * i, wide))
        m.write(dst, r, f"b{TYPE_BITS[t]}")
        return
    m.write(dst, m.read(src, t), t)


# ------------------------------------------------------------------ conversions

_CVT_MODS = ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "ftz", "sat", "satfinite", "relu")
_CVT_TYPES = tuple(DTYPE) + ("f16x2", "bf16x2", "e4m3x2", "e5m2x2", "tf32")


def _decode_cvt(ins: Instr) -> Any:
    facts(_CVT_TYPES, _CVT_MODS, count=2)(ins)
    dst, src = ins.types
    if dst == "tf32" and (src != "f32" or "rna" not in ins.mods):
        raise ValueError("tf32 conversions supported: cvt.rna.tf32.f32")
    if dst.endswith("x2") and len(ins.operands) != (2 if src.endswith("x2") else 3):
        raise ValueError("a conversion into a pair takes two sources (one pair when it converts a pair)")
    if dst[0] == "f" and src[0] in "su" and not any(x in ins.mods for x in ROUNDINGS):
        raise ValueError("integer to float conversions need a rounding modifier (.rn, .rz, .rm, .rp)")
    if dst[0] in "su" and src[0] == "f" and not any(x in ins.mods for x in INTEGRAL):
        raise ValueError("float to integer conversions need an integer rounding modifier (.rni, .rzi, .rmi, .rpi)")
    return None


def convert(bits: Any, src: str, dst: str, ins: Instr) -> Any:
    """The bits of `dst` for the bits of `src` under the instruction's rounding modifiers."""
    s, d = DTYPE[src], DTYPE[dst]
    values = from_bits(np.atleast_1d(np.asarray(bits)).astype(UNSIGNED.get(TYPE_BITS[src], np.uint8)), s)
    if "ftz" in ins.mods:
        values = flush(values)
    integral = next((INTEGRAL[x] for x in ins.mods if x in INTEGRAL), None)
    mode = rounding(ins)
    if s.is_floating and d.is_floating and integral is not None:  # round to an integral value, same type
        out = ROUND_TO_INTEGRAL[integral](np.asarray(values, np.float64))
        out = cast(out, f64, d, None)
    elif d.is_integer:
        out = cast(values, s, d, integral or "rz")
    else:
        out = cast(values, s, d, mode)
    if "sat" in ins.mods and d.is_floating:
        out = np.where(np.isnan(out), 0, np.clip(out, 0, 1))
    if "relu" in ins.mods:
        out = np.where(np.isnan(out) | (out < 0), 0, out)
    result = to_bits(np.asarray(out), d)
    return result.view(NP_TYPE[dst]) if TYPE_BITS[dst] > 8 else result


@define("cvt", _decode_cvt)
def _cvt(m: Machine, ins: Instr) -> None:
    dst, src = ins.types
    if dst == "tf32":  # to nearest, ties away from zero, low 13 bits cleared
        bits = np.asarray(m.read(ins.operands[1], "b32"))
        finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
        r = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
        m.write(ins.operands[0], r.astype(np.uint32), "b32")
        return
    if dst.endswith("x2") and not src.endswith("x2"):  # two sources: the first into the upper half
        elem = dst[:-2]
        hi, lo = (convert(m.read(o, f"b{TYPE_BITS[src]}"), src, elem, ins) for o in ins.operands[1:3])
        w = TYPE_BITS[elem]
        wide = UNSIGNED[2 * w]
        r = (np.asarray(hi).view(UNSIGNED[w]).astype(wide) << np.array(w, wide)) | \
            np.asarray(lo).view(UNSIGNED[w]).astype(wide)
        m.write(ins.operands[0], r, f"b{2 * w}")
        return
    if src.endswith("x2"):  # a pair into a pair: element i of the source into half i
        elem_src, elem_dst = src[:-2], dst[:-2] if dst.endswith("x2") else dst
        x = np.asarray(m.read(ins.operands[1], f"b{TYPE_BITS[src]}")).astype(np.uint64)
        ws, wd = TYPE_BITS[elem_src], TYPE_BITS[elem_dst]
        r = np.zeros(x.shape, np.uint64)
        for i in range(2):
            part = ((x >> np.uint64(ws * i)) & np.uint64((1 << ws) - 1)).astype(UNSIGNED[ws])
            r |= np.asarray(convert(part, elem_src, elem_dst, ins)).view(UNSIGNED[wd]).astype(np.uint64) << \
                np.uint64(wd * i)
        m.write(ins.operands[0], r.astype(UNSIGNED[2 * wd]), f"b{2 * wd}")
        return
    x = m.read(ins.operands[1], src if TYPE_BITS[src] >= 16 else f"u{TYPE_BITS[src]}")
    bits = np.asarray(x).view(UNSIGNED[TYPE_BITS[src]]) if TYPE_BITS[src] >= 16 else np.asarray(x)
    r = convert(bits, src, dst, ins)
    if np.ndim(x) == 0:
        r = np.asarray(r).reshape(())
    m.write(ins.operands[0], r, dst if TYPE_BITS[dst] >= 16 else ("s" if dst[0] == "s" else "u") + dst[1:])


@define("cvta", facts(("u64", "u32"), ("global", "local", "shared", "param", "to"), operands=2))
def _cvta(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    src = ins.operands[1]
    if "local" in ins.mods and src[0] == "sym":
        m.write(ins.operands[0], np.uint64(m.local_generic(src[1], src[2])), t)
        return
    m.write(ins.operands[0], m.read(src, t), t)


# ------------------------------------------------------------------ special functions

_APPROX: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "rcp": lambda x: 1.0 / x, "sqrt": np.sqrt}


def _decode_special(ins: Instr) -> Any:
    facts(FLOATS, ("approx", "ftz", "rn", "rz", "rm", "rp", "full"), operands=2)(ins)
    if "approx" not in ins.mods and rounding(ins) is None:
        raise ValueError("needs .approx or a rounding modifier")
    if "approx" not in ins.mods and ins.opcode not in ("sqrt", "rcp"):
        raise ValueError("exists only as .approx")
    return None


@define(tuple(_APPROX), _decode_special)
def _special(m: Machine, ins: Instr) -> None:
    t = ins.types[0]
    x = m.read(ins.operands[1], t)
    if "ftz" in ins.mods:
        x = flush(x)
    mode = rounding(ins)
    if mode is not None and "approx" not in ins.mods:
        if ins.opcode == "sqrt":
            r = np.sqrt(x) if mode == "rn" else rounded_sqrt(np.asarray(x), DTYPE[t], mode)
        else:
            r = np.divide(NP_TYPE[t](1), x) if mode == "rn" else \
                rounded_binary("arith.div", np.ones_like(np.asarray(x)), np.asarray(x), DTYPE[t], mode)
    else:
        r = _APPROX[ins.opcode](np.asarray(x, np.float64))
    r = np.asarray(r).astype(NP_TYPE[t])
    if "ftz" in ins.mods:
        r = flush(r)
    m.write(ins.operands[0], r, t)


from . import ptx_isa_hopper, ptx_isa_memory, ptx_isa_tc  # noqa: E402,F401  (they add their instructions to ISA)

__all__ = ["ISA", "OpDef", "facts", "define", "BARRIER", "BRANCH", "EXIT", "OP"]
