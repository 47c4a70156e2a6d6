"""The interpreter on values: float and integer arithmetic, math, and casts, bit-exact against references."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings

from interp_util import (
    FLOATS, FP8, INTS, NARROW, SETTINGS, STORAGE, _format_table, elementwise, kernel, load, offsets, poisoned,
    random_floats, random_ints, ref_decode, ref_round, run, same_bits, seeds, store, wrap,
)


# --------------------------------------------------------------------------- basics


def test_vector_add_several_programs_and_mask():
    n, block = 1000, 128
    body = offsets(block) + """
  %nn = tt.splat %n : tensor<128xi32>
  %mask = arith.cmp %offs, %nn {predicate = "lt"} : tensor<128xi1>""" + load("x", "f32", "128", ", %mask") \
        + load("y", "f32", "128", ", %mask") + "\n  %sum = arith.add %x, %y : tensor<128xf32>" \
        + store("out", "%sum", "f32", "128", ", %mask")
    func = kernel([("x_ptr", "ptr<f32>"), ("y_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>"), ("n", "i32")], body)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, "f32")
    run(func, (8, 1, 1), x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


@given(seeds)
@SETTINGS
def test_masked_load_reads_other(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 255))
    body = offsets(64) + """
  %nn = tt.splat %n : tensor<64xi32>
  %mask = arith.cmp %offs, %nn {predicate = "lt"} : tensor<64xi1>
  %other = arith.constant {value = -2.5} : tensor<64xf32>""" + load("x", "f32", "64", ", %mask, %other") \
        + store("out", "%x", "f32", "64")
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>"), ("n", "i32")], body)
    x = rng.standard_normal(n).astype(np.float32) + 10
    out = poisoned(256, "f32")
    run(func, (4,), x, out, n)
    want = np.full(256, -2.5, np.float32)
    want[:n] = x
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------ float arithmetic

FLOAT_BINARY = {"arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply, "arith.div": np.divide,
                "arith.rem": np.fmod, "arith.max": np.fmax, "arith.min": np.fmin}  # fmt: skip


@pytest.mark.parametrize("t", FLOATS + ["f8e4nv", "f8e5"])
@pytest.mark.parametrize("op", list(FLOAT_BINARY))
@given(seed=seeds)
@settings(max_examples=4, deadline=None)
def test_float_binary_is_correctly_rounded(t, op, seed):
    rng = np.random.default_rng(seed)
    (a, av), (b, bv) = random_floats(rng, t, 128), random_floats(rng, t, 128)
    out = poisoned(128, t)
    run(elementwise(f"{op} %a0, %a1", (t, t), t), (2,), a, b, out)
    with np.errstate(all="ignore"):
        exact = FLOAT_BINARY[op](av, bv)  # float64: exact, or rounded innocuously before the narrow type
    if t in NARROW:
        same_bits(out.view(np.uint16) if t == "f16" else out, ref_round(exact, t), t)
    else:
        np.testing.assert_array_equal(out, exact.astype(STORAGE[t]))


def test_float_min_max_nan_handling():
    a = np.array([1.0, np.nan, np.nan, -0.5], np.float32)
    b = np.array([np.nan, 2.0, np.nan, -1.0], np.float32)
    for attrs, fmax in (("", np.fmax), (" {propagate_nan = true}", np.maximum)):
        out = poisoned(4, "f32")
        run(elementwise(f"arith.max %a0, %a1{attrs}", ("f32", "f32"), "f32", 4), (1,), a, b, out)
        np.testing.assert_array_equal(out, fmax(a, b))


def test_float_compare_is_ordered_except_ne():
    a = np.array([1.0, np.nan, 2.0, np.nan], np.float32)
    b = np.array([1.0, 1.0, 3.0, np.nan], np.float32)
    for pred, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("ge", np.greater_equal)):
        out = poisoned(4, "i1")
        run(elementwise(f'arith.cmp %a0, %a1 {{predicate = "{pred}"}}', ("f32", "f32"), "i1", 4), (1,), a, b, out)
        np.testing.assert_array_equal(out, fn(a, b))


MATH = {"math.exp": (np.exp, (-20, 20)), "math.exp2": (np.exp2, (-30, 30)), "math.log": (np.log, (1e-3, 1e4)),
        "math.log2": (np.log2, (1e-3, 1e4)), "math.sqrt": (np.sqrt, (0, 1e4)),
        "math.rsqrt": (lambda x: 1 / np.sqrt(x), (1e-3, 1e4)), "math.sin": (np.sin, (-10, 10)),
        "math.cos": (np.cos, (-10, 10)), "math.erf": (np.vectorize(math.erf), (-4, 4)),
        "math.floor": (np.floor, (-100, 100)), "math.ceil": (np.ceil, (-100, 100)),
        "math.abs": (np.abs, (-100, 100)), "arith.neg": (np.negative, (-100, 100))}  # fmt: skip
TOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-6, "f64": 1e-13}


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("op", list(MATH))
def test_math_functions(t, op):
    fn, (lo, hi) = MATH[op]
    rng = np.random.default_rng(len(op))
    x64 = rng.uniform(lo, hi, 64)
    bits = ref_round(x64, t) if t in NARROW else x64.astype(STORAGE[t])
    a = bits.view(np.float16) if t == "f16" else bits
    out = poisoned(64, t)
    run(elementwise(f"{op} %a0", (t,), t), (1,), a, out)
    got = ref_decode(out.view(np.uint16), t) if t in NARROW else out.astype(np.float64)
    want = fn(ref_decode(bits, t) if t in NARROW else x64.astype(STORAGE[t]).astype(np.float64))
    if t in NARROW:  # the exact result rounded to the type, within an ulp or two
        want = ref_decode(ref_round(want, t), t)
    tiny = _format_table(t)[0][1] * 2 if t in NARROW else 0.0
    np.testing.assert_allclose(got, want, rtol=TOL[t], atol=tiny)


@given(seeds)
@SETTINGS
def test_fma(seed):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    out = poisoned(64, "f32")
    run(elementwise("math.fma %a0, %a1, %a2", ("f32",) * 3, "f32"), (1,), a, b, c, out)
    want = (a.astype(np.float64) * b + c).astype(np.float32)
    np.testing.assert_array_equal(out, want)


# ---------------------------------------------------------------- integer arithmetic


def _c_div(a: int, b: int, t: str) -> int:
    if b == 0:
        return -1 if t.startswith("i") else np.iinfo(STORAGE[t]).max
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, t)


def _c_rem(a: int, b: int, t: str) -> int:
    return a if b == 0 else wrap(a - _c_div(a, b, t) * b, t)


def _shift_amount(b: int, t: str) -> int:
    return b & ((1 << np.iinfo(STORAGE[t]).bits) - 1)  # the amount is read unsigned


def _shl(a, b, t):
    bits, s = np.iinfo(STORAGE[t]).bits, _shift_amount(b, t)
    return 0 if s >= bits else wrap(a << s, t)


def _shr(a, b, t):
    bits, s = np.iinfo(STORAGE[t]).bits, _shift_amount(b, t)
    return a >> min(s, bits - 1) if t.startswith("i") else (0 if s >= bits else a >> s)


def _umulhi(a, b, t):
    bits = np.iinfo(STORAGE[t]).bits
    m = (1 << bits) - 1
    return wrap(((a & m) * (b & m)) >> bits, t)


INT_BINARY = {"arith.add": lambda a, b, t: wrap(a + b, t), "arith.sub": lambda a, b, t: wrap(a - b, t),
              "arith.mul": lambda a, b, t: wrap(a * b, t), "arith.div": _c_div, "arith.rem": _c_rem,
              "arith.and": lambda a, b, t: a & b, "arith.or": lambda a, b, t: a | b,
              "arith.xor": lambda a, b, t: a ^ b, "arith.max": lambda a, b, t: max(a, b),
              "arith.min": lambda a, b, t: min(a, b), "arith.shl": _shl, "arith.shr": _shr,
              "math.umulhi": _umulhi}  # fmt: skip


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("op", list(INT_BINARY))
@given(seed=seeds)
@settings(max_examples=3, deadline=None)
def test_integer_binary_wraps_like_the_gpu(t, op, seed):
    rng = np.random.default_rng(seed)
    a, b = random_ints(rng, t, 64), random_ints(rng, t, 64)
    info = np.iinfo(STORAGE[t])
    if op in ("arith.shl", "arith.shr"):
        b = rng.integers(0, info.bits + 3, 64).astype(STORAGE[t])
        b[:3] = np.array([info.bits, info.bits - 1, info.max], dtype=object).astype(STORAGE[t])
    if op in ("arith.div", "arith.rem"):
        b[:4] = [0, 1, 2, info.max]
        a[:2] = info.min
        if t.startswith("i"):
            b[4] = -1
            a[4] = info.min
    out = poisoned(64, t)
    run(elementwise(f"{op} %a0, %a1", (t, t), t), (1,), a, b, out)
    want = np.array([INT_BINARY[op](int(x), int(y), t) for x, y in zip(a, b)], dtype=object).astype(STORAGE[t])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("t", ["i8", "i32", "u16", "u64"])
def test_integer_unary_and_compare(t):
    rng = np.random.default_rng(1)
    a, b = random_ints(rng, t, 64), random_ints(rng, t, 64)
    b[:8] = a[:8]
    info = np.iinfo(STORAGE[t])
    a[8] = info.min
    for op, fn in (("arith.neg", lambda x: wrap(-x, t)), ("arith.not", lambda x: wrap(~x, t)),
                   ("math.abs", lambda x: wrap(abs(x), t))):
        out = poisoned(64, t)
        run(elementwise(f"{op} %a0", (t,), t), (1,), a, out)
        np.testing.assert_array_equal(out, np.array([fn(int(x)) for x in a], dtype=object).astype(STORAGE[t]))
    for pred, fn in (("lt", np.less), ("le", np.less_equal), ("eq", np.equal), ("ne", np.not_equal)):
        out = poisoned(64, "i1")
        run(elementwise(f'arith.cmp %a0, %a1 {{predicate = "{pred}"}}', (t, t), "i1"), (1,), a, b, out)
        np.testing.assert_array_equal(out, fn(a, b))


def test_bool_arithmetic_is_one_bit():
    a = np.array([0, 0, 1, 1], bool)
    b = np.array([0, 1, 0, 1], bool)
    cases = {"arith.add": a ^ b, "arith.mul": a & b, "arith.xor": a ^ b, "arith.or": a | b, "arith.max": a | b,
             "arith.div": np.where(b, a, True), "arith.rem": np.where(b, False, a)}  # fmt: skip
    for op, want in cases.items():
        out = poisoned(4, "i1")
        run(elementwise(f"{op} %a0, %a1", ("i1", "i1"), "i1", 4), (1,), a, b, out)
        np.testing.assert_array_equal(out, want, err_msg=op)
    out = poisoned(4, "i1")
    run(elementwise("arith.not %a0", ("i1",), "i1", 4), (1,), a, out)
    np.testing.assert_array_equal(out, ~a)


# -------------------------------------------------------------------------------- casts


@pytest.mark.parametrize("dst", NARROW)
@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@given(seed=seeds)
@settings(max_examples=5, deadline=None)
def test_float_narrowing_rounds_bit_exactly(src, dst, rounding, seed):
    rng = np.random.default_rng(seed)
    V, _ = _format_table(dst)
    # values around every magnitude of the target, exact ties, and beyond its range
    base = V[rng.integers(0, len(V) - 1, 96)]
    nxt = V[np.minimum(np.searchsorted(V, base) + 1, len(V) - 1)]
    x = base + (nxt - base) * rng.choice([0.5, 0.25, 0.75, 0.5001, 0.4999, 1e-9], 96)
    x = np.concatenate([x, [V[-1] * 1.5, V[-1] * 1e6, np.inf, np.nan, V[0] * 0.4, 1e-300]])
    with np.errstate(over="ignore"):
        x = np.where(rng.random(x.size) < 0.5, -x, x).astype(STORAGE[src])
    out = poisoned(x.size, dst)
    attrs = f' {{rounding = "{rounding}"}}' if rounding == "rtz" else ""
    run(elementwise(f"arith.cast %a0{attrs}", (src,), dst, x.size), (1,), x, out)
    same_bits(out.view(np.uint16) if dst == "f16" else out, ref_round(x.astype(np.float64), dst, rounding == "rtz"),
              dst)


def test_fp8_encodings():
    e4m3, e5m2 = FP8["f8e4nv"], FP8["f8e5"]
    assert e4m3[0x7E] == 448 and np.isnan(e4m3[0x7F]) and np.isnan(e4m3[0xFF]) and e4m3[0x01] == 2.0**-9
    assert e5m2[0x7B] == 57344 and e5m2[0x7C] == np.inf and e5m2[0x01] == 2.0**-16
    codes = np.arange(256, dtype=np.uint8)
    for t in ("f8e4nv", "f8e5"):
        out = poisoned(256, "f32")
        run(elementwise("arith.cast %a0", (t,), "f32", 256), (1,), codes, out)
        np.testing.assert_array_equal(out, FP8[t].astype(np.float32))
    # e5m2 is the upper byte of an f16
    np.testing.assert_array_equal(FP8["f8e5"], (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float64))


def test_f32_round_toward_zero_from_f64():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64) * np.exp2(rng.integers(-100, 100, 64))
    out = poisoned(64, "f32")
    run(elementwise('arith.cast %a0 {rounding = "rtz"}', ("f64",), "f32"), (1,), x, out)
    truncated = ((x.view(np.uint64) >> np.uint64(29)) << np.uint64(29)).view(np.float64)  # drop 29 mantissa bits
    np.testing.assert_array_equal(out, truncated.astype(np.float32))


@pytest.mark.parametrize("dst", INTS)
@pytest.mark.parametrize("src", ["f16", "f32", "f64"])
def test_float_to_int_truncates_and_saturates(src, dst):
    info = np.iinfo(STORAGE[dst])
    x = np.array([0.5, -0.5, 1.99, -1.99, 100.7, -100.7, 3e4, -3e4, 1e19, -1e19, 2e30, np.inf, -np.inf, np.nan,
                  float(info.max), float(info.min)])  # fmt: skip
    with np.errstate(over="ignore"):
        a = x.astype(STORAGE[src])
    out = poisoned(a.size, dst)
    run(elementwise("arith.cast %a0", (src,), dst, a.size), (1,), a, out)

    # NaN: 0 from floats of <= 32 bits into <= 32 bits, else the sign bit alone (as the GPU's cvt)
    nan = 0 if src != "f64" and info.bits <= 32 else (info.min or 1 << (info.bits - 1))

    def ref(v: float) -> int:
        return nan if math.isnan(v) else int(max(info.min, min(info.max, math.trunc(v) if math.isfinite(v) else v)))

    np.testing.assert_array_equal(out, np.array([ref(float(v)) for v in a], dtype=object).astype(STORAGE[dst]))


@pytest.mark.parametrize("src", INTS + ["i1"])
@pytest.mark.parametrize("dst", INTS + ["i1"])
def test_int_to_int_extends_by_source_signedness(src, dst):
    rng = np.random.default_rng(5)
    a = random_ints(rng, src, 64) if src != "i1" else rng.random(64) < 0.5
    out = poisoned(64, dst)
    run(elementwise("arith.cast %a0", (src,), dst), (1,), a, out)
    want = [int(v) != 0 if dst == "i1" else wrap(int(v), dst) for v in a]
    np.testing.assert_array_equal(out, np.array(want, dtype=object).astype(STORAGE[dst]))


@pytest.mark.parametrize("src", ["i8", "i32", "u32", "i64"])
@pytest.mark.parametrize("dst", FLOATS + ["f8e4nv", "f8e5"])
def test_int_to_float_rounds_to_nearest_even(src, dst):
    rng = np.random.default_rng(7)
    info = np.iinfo(STORAGE[src])
    a = rng.integers(max(info.min, -(2**52)), min(info.max, 2**52), 64, endpoint=True).astype(STORAGE[src])
    out = poisoned(64, dst)
    run(elementwise("arith.cast %a0", (src,), dst), (1,), a, out)
    exact = a.astype(np.float64)
    if dst in NARROW:
        same_bits(out.view(np.uint16) if dst == "f16" else out, ref_round(exact, dst), dst)
    else:
        np.testing.assert_array_equal(out, exact.astype(STORAGE[dst]))


def test_bitcast_and_cast_to_bool():
    x = np.array([1.0, -2.5, np.inf, 0.0], np.float32)
    out = poisoned(4, "i32")
    run(elementwise("arith.bitcast %a0", ("f32",), "i32", 4), (1,), x, out)
    np.testing.assert_array_equal(out, x.view(np.int32))
    h = np.array([1.0, -2.0, 0.5, 65504], np.float16)
    out = poisoned(4, "bf16")
    run(elementwise("arith.bitcast %a0", ("f16",), "bf16", 4), (1,), h, out)
    np.testing.assert_array_equal(out, h.view(np.uint16))
    x[3], x[1] = np.nan, 0.0
    out = poisoned(4, "i1")
    run(elementwise("arith.cast %a0", ("f32",), "i1", 4), (1,), x, out)
    np.testing.assert_array_equal(out, [True, False, True, True])
