"""Constant folding against NumPy: random values of every dtype, bit-exact results."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from tile.ir import DTYPES, Operation, parse_op, verify
from tile.ir.printer import format_attr
from tile.opt.canonicalize import Canonicalize

INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NP_INT = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
NP_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
INT_OPS = ["add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max", "min"]
FLOAT_OPS = ["add", "sub", "mul", "div", "rem", "max", "min"]
PREDICATES = ["eq", "ne", "lt", "le", "gt", "ge"]
NOT_FOLDED = object()


def fold(ops: str, constants: list[tuple[object, str]]) -> object:
    """Canonicalize `ops` (defining %r from constants %a[, %b] = `constants` as (value, type)) and
    return the value %r folds to, or NOT_FOLDED."""
    lines = [f"%{n} = arith.constant {{value = {v}}} : {t}" for n, (v, t) in zip("ab", constants)]
    body = "\n  ".join(lines + [ops, "tt.print %r", "tt.return"])
    op = parse_op(f'tt.func {{sym_name = "k"}} {{\n  {body}\n}}')
    verify(op)
    Canonicalize().run(op)
    verify(op)
    producer: Optional[Operation] = op.regions[0].block.ops[-2].operand(0).owner_op
    if producer is not None and producer.name == "arith.constant":
        return producer.attrs["value"]
    return NOT_FOLDED


def ints(dtype: str):
    info = np.iinfo(NP_INT[dtype])
    return st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2]))


def int_reference(name: str, a: int, b: int, dtype: str) -> Optional[int]:
    t = NP_INT[dtype]
    bits = np.iinfo(t).bits
    x, y = np.array(a, t), np.array(b, t)
    with np.errstate(all="ignore"):
        if name in ("div", "rem"):
            if b == 0 or (np.iinfo(t).min < 0 and a == int(np.iinfo(t).min) and b == -1):
                return None
            r = np.fmod(x, y)  # C remainder
            return int(r) if name == "rem" else int((x - r) // y)
        if name in ("shl", "shr"):
            if not 0 <= b < bits:
                return None
            return int(np.left_shift(x, y) if name == "shl" else np.right_shift(x, y))
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor, "max": np.maximum, "min": np.minimum}[name]
        return int(fn(x, y).astype(t))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(INT_TYPES), st.sampled_from(INT_OPS), st.data())
def test_integer_binary(dtype: str, name: str, data) -> None:
    a = data.draw(ints(dtype))
    b = data.draw(st.one_of(ints(dtype), st.integers(0, 70).filter(lambda v: v <= np.iinfo(NP_INT[dtype]).max)))
    got = fold(f"%r = arith.{name} %a, %b : {dtype}", [(a, dtype), (b, dtype)])
    want = int_reference(name, a, b, dtype)
    assert got == (NOT_FOLDED if want is None else want)
    assert got is NOT_FOLDED or type(got) is int


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INT_TYPES), st.sampled_from(PREDICATES), st.data())
def test_integer_compare(dtype: str, predicate: str, data) -> None:
    a, b = data.draw(ints(dtype)), data.draw(ints(dtype))
    got = fold(f'%r = arith.cmp %a, %b {{predicate = "{predicate}"}} : i1', [(a, dtype), (b, dtype)])
    t = NP_INT[dtype]
    want = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}[predicate](t(a), t(b))
    assert got is bool(want)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INT_TYPES), st.sampled_from(["neg", "not", "abs", "umulhi"]), st.data())
def test_integer_unary_and_umulhi(dtype: str, name: str, data) -> None:
    a, b = data.draw(ints(dtype)), data.draw(ints(dtype))
    t = NP_INT[dtype]
    bits = np.iinfo(t).bits
    mask = (1 << bits) - 1
    with np.errstate(all="ignore"):
        if name == "umulhi":
            got = fold(f"%r = math.umulhi %a, %b : {dtype}", [(a, dtype), (b, dtype)])
            want = int(np.array(((a & mask) * (b & mask)) >> bits, np.uint64).astype(t))
        else:
            op = "math.abs" if name == "abs" else f"arith.{name}"
            got = fold(f"%r = {op} %a : {dtype}", [(a, dtype)])
            fn = {"neg": np.negative, "not": np.invert, "abs": np.abs}[name]
            want = int(fn(np.array(a, t)).astype(t))
    assert got == want


def test_i1_arithmetic() -> None:
    for a in (False, True):
        for b in (False, True):
            pair = [(format_attr(a), "i1"), (format_attr(b), "i1")]
            assert fold("%r = arith.add %a, %b : i1", pair) is (a != b)
            assert fold("%r = arith.mul %a, %b : i1", pair) is (a and b)
            assert fold("%r = arith.div %a, %b : i1", pair) is (a if b else NOT_FOLDED)  # x / 1 is x
            assert fold('%r = arith.cmp %a, %b {predicate = "lt"} : i1', pair) is NOT_FOLDED  # no agreed order
            assert fold('%r = arith.cmp %a, %b {predicate = "ne"} : i1', pair) is (a != b)
        assert fold("%r = arith.not %a : i1", [(format_attr(a), "i1")]) is (not a)


# ------------------------------------------------------------------------------- floats


def floats(dtype: str):
    if dtype == "bf16":  # every bf16 value is the top half of an f32
        return st.integers(0, 0xFFFF).map(lambda bits: float(np.array(bits << 16, np.uint32).view(np.float32)))
    return st.floats(width={"f16": 16, "f32": 32, "f64": 64}[dtype], allow_nan=True, allow_infinity=True)


def to_bf16(x: float) -> float:
    """f32 -> bf16 rounding to nearest even, by bit manipulation (an independent reference)."""
    bits = int(np.array(x, np.float32).view(np.uint32))
    if math.isnan(x):
        return math.nan
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array(bits, np.uint32).view(np.float32))


def float_reference(name: str, a: float, b: float, dtype: str, propagate: bool) -> Optional[float]:
    if name == "div" and b == 0:
        return None
    if name == "rem" and (b == 0 or not (math.isfinite(a) and math.isfinite(b))):
        return None
    if name in ("max", "min") and a == b == 0 and math.copysign(1, a) != math.copysign(1, b):
        return None
    if name in ("max", "min"):
        fn = {("max", False): np.fmax, ("min", False): np.fmin, ("max", True): np.maximum,
              ("min", True): np.minimum}[name, propagate]
    else:
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod}[name]
    t = np.float32 if dtype == "bf16" else NP_FLOAT[dtype]
    with np.errstate(all="ignore"):
        r = float(fn(t(a), t(b)))
    return to_bf16(r) if dtype == "bf16" else r


def same_float(x: object, y: float) -> bool:
    return isinstance(x, float) and (math.isnan(x) and math.isnan(y) or
                                     (x == y and math.copysign(1, x) == math.copysign(1, y)))


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["f16", "bf16", "f32", "f64"]), st.sampled_from(FLOAT_OPS), st.booleans(), st.data())
def test_float_binary(dtype: str, name: str, propagate: bool, data) -> None:
    a, b = data.draw(floats(dtype)), data.draw(floats(dtype))
    attrs = " {propagate_nan = true}" if propagate and name in ("max", "min") else ""
    got = fold(f"%r = arith.{name} %a, %b{attrs} : {dtype}", [(format_attr(a), dtype), (format_attr(b), dtype)])
    want = float_reference(name, a, b, dtype, propagate)
    if want is None:
        assert got is NOT_FOLDED
    else:
        assert same_float(got, want), (a, b, got, want)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["f16", "bf16", "f32", "f64"]), st.sampled_from(PREDICATES), st.data())
def test_float_compare(dtype: str, predicate: str, data) -> None:
    a, b = data.draw(floats(dtype)), data.draw(floats(dtype))
    got = fold(f'%r = arith.cmp %a, %b {{predicate = "{predicate}"}} : i1',
               [(format_attr(a), dtype), (format_attr(b), dtype)])
    want = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}[predicate](np.float64(a), np.float64(b))
    assert got is bool(want)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["f16", "f32", "f64"]), st.sampled_from(["neg", "abs", "floor", "ceil"]), st.data())
def test_float_unary(dtype: str, name: str, data) -> None:
    a = data.draw(floats(dtype))
    op = "arith.neg" if name == "neg" else f"math.{name}"
    got = fold(f"%r = {op} %a : {dtype}", [(format_attr(a), dtype)])
    fn = {"neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil}[name]
    assert same_float(got, float(fn(NP_FLOAT[dtype](a))))


@pytest.mark.parametrize("value", ["0.1", "1e-30", "70000.0", "-65520.0", "65519.99", "1e-8", "3.0e38", "nan",
                                   "1e300", "-1.7976931348623157e308"])
def test_constants_are_rounded_to_their_type(value: str) -> None:
    """A constant's value means the nearest value of its type, as NumPy converts it."""
    for dtype in ("f16", "f32"):
        got = fold(f"%r = arith.add %a, %b : {dtype}", [(value, dtype), ("-0.0", dtype)])
        with np.errstate(over="ignore"):
            assert same_float(got, float(NP_FLOAT[dtype](float(value))))


# --------------------------------------------------------------------------------- casts

CAST_TYPES = INT_TYPES + ["f16", "f32", "f64"]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(CAST_TYPES), st.sampled_from(CAST_TYPES + ["i1", "bf16"]), st.data())
def test_casts(src: str, dst: str, data) -> None:
    assume(src != dst)
    a = data.draw(ints(src) if src in NP_INT else floats(src))
    got = fold(f"%r = arith.cast %a : {dst}", [(format_attr(a), src)])
    s = np.array((NP_INT | NP_FLOAT)[src](a))
    if dst == "i1":
        if src in NP_FLOAT and math.isnan(a):
            assert got is NOT_FOLDED
        else:
            assert got is bool(a != 0)
    elif dst in NP_INT:
        if src in NP_FLOAT:
            info = np.iinfo(NP_INT[dst])
            if not math.isfinite(a) or not info.min <= math.trunc(a) <= info.max:
                assert got is NOT_FOLDED  # out of range: saturation is target-specific
                return
        assert got == int(s.astype(NP_INT[dst])) and type(got) is int
    elif dst == "bf16":
        with np.errstate(all="ignore"):
            a32 = float(np.float32(a))
        if not (a32 == a or math.isnan(a32)):
            return  # the reference goes through f32 and would round twice
        assert same_float(got, to_bf16(a32))
    else:
        with np.errstate(all="ignore"):
            assert same_float(got, float(s.astype(NP_FLOAT[dst])))


def test_int_to_float_rounds_once() -> None:
    """2**53 + 1 lies between two f64 values; u64 and f32 rounding must not go through f64 first."""
    assert fold("%r = arith.cast %a : f64", [(str(2**53 + 1), "i64")]) == 2.0**53
    assert fold("%r = arith.cast %a : f32", [(str(2**24 + 1), "i32")]) == 2.0**24
    n = 2**60 + 2**36 + 1  # just above a tie between two f32 values: f64 first would land on the tie
    assert fold("%r = arith.cast %a : f32", [(str(n), "u64")]) == float(2**60 + 2**37)
    assert fold("%r = arith.cast %a : f16", [("65520", "i32")]) == math.inf
    assert fold("%r = arith.cast %a : f16", [("65519", "i32")]) == 65504.0


def test_huge_values_overflow_to_infinity() -> None:
    assert fold("%r = arith.cast %a : bf16", [("1.7976931348623157e308", "f64")]) == math.inf
    largest = (2 - 2**-7) * 2.0**127
    assert fold("%r = arith.cast %a : bf16", [("-3.39e38", "f32")]) == -largest
    halfway = (largest + 2.0**128) / 2  # ties go to the even neighbour: infinity
    assert fold("%r = arith.cast %a : bf16", [(repr(halfway), "f32")]) == math.inf


def test_every_foldable_dtype_is_covered() -> None:
    covered = set(INT_TYPES) | {"i1", "f16", "bf16", "f32", "f64"}
    assert covered | {"f8e4nv", "f8e5", "f8e4b15", "f8e4b8", "f8e5b16"} == set(DTYPES)  # fp8 values never fold
