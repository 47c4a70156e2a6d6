"""The NumPy interpreter of tile IR, kernel by kernel, against NumPy/Python references.

Kernels are IR text. References are computed independently of the interpreter: in float64
or Python integers, then rounded with a table of every value of the narrow float formats.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile.runtime.interpreter as interp
from tile.ir import parse_op, verify
from tile.runtime.interpreter import InterpreterError, run_kernel

SETTINGS = settings(max_examples=12, deadline=None)
seeds = st.integers(0, 2**32 - 1)

STORAGE = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": np.uint16,
           "f8e4nv": np.uint8, "f8e5": np.uint8, "f32": np.float32, "f64": np.float64}  # fmt: skip
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
NARROW = ["f16", "bf16", "f8e4nv", "f8e5"]


# ------------------------------------------------------------------------- IR builders


def kernel(params: list[tuple[str, str]], body: str, name: str = "k"):
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    names = ", ".join(f'"{n}"' for n, _ in params)
    text = (f'tt.func {{arg_names = [{names}], sym_name = "{name}"}} {{\n^entry({args}):\n{body}\n'
            f"  tt.return\n}}")
    func = parse_op(text)
    verify(func)
    return func


def offsets(n: int) -> str:
    """%offs = program_id(0) * n + arange(n)."""
    return f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %blk = arith.constant {{value = {n}}} : i32
  %start = arith.mul %pid, %blk : i32
  %ar = tt.arange {{end = {n}, start = 0}} : tensor<{n}xi32>
  %sp = tt.splat %start : tensor<{n}xi32>
  %offs = arith.add %sp, %ar : tensor<{n}xi32>"""


def ptrs(name: str, t: str, shape: str, offs: str = "%offs") -> str:
    return f"""
  %{name}_s = tt.splat %{name}_ptr : tensor<{shape}xptr<{t}>>
  %{name}_a = tt.addptr %{name}_s, {offs} : tensor<{shape}xptr<{t}>>"""


def load(name: str, t: str, shape: str, extra: str = "", offs: str = "%offs") -> str:
    return ptrs(name, t, shape, offs) + f"\n  %{name} = tt.load %{name}_a{extra} : tensor<{shape}x{t}>"


def store(name: str, value: str, t: str, shape: str, extra: str = "", offs: str = "%offs") -> str:
    return ptrs(name, t, shape, offs) + f"\n  tt.store %{name}_a, {value}{extra}"


@functools.cache
def elementwise(op: str, ins: tuple[str, ...], out: str, n: int = 64):
    """out[i] = op(a0[i], a1[i], ...) over programs of n elements; `op` names its inputs %a0, %a1..."""
    body = offsets(n)
    for i, t in enumerate(ins):
        body += load(f"a{i}", t, f"{n}")
    body += f"\n  %res = {op} : tensor<{n}x{out}>" + store("out", "%res", out, f"{n}")
    params = [(f"a{i}_ptr", f"ptr<{t}>") for i, t in enumerate(ins)] + [("out_ptr", f"ptr<{out}>")]
    return kernel(params, body)


def run(func, grid, *args):
    run_kernel(func, grid, list(args), func.attrs["sym_name"])


def poisoned(shape, t: str) -> np.ndarray:
    a = np.empty(shape, STORAGE[t])
    a.view(np.uint8)[...] = 0xAB
    return a


# ---------------------------------------------------------- reference number formats


def _fp8_value(code: int, e_bits: int, m_bits: int, ieee: bool) -> float:
    sign = -1.0 if code >> 7 else 1.0
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    if e == (1 << e_bits) - 1 and (ieee or m == (1 << m_bits) - 1):
        return sign * math.inf if ieee and m == 0 else math.nan
    return sign * math.ldexp(m if e == 0 else m + (1 << m_bits), max(e, 1) - bias - m_bits)


FP8 = {"f8e4nv": np.array([_fp8_value(c, 4, 3, False) for c in range(256)]),
       "f8e5": np.array([_fp8_value(c, 5, 2, True) for c in range(256)])}  # fmt: skip


def ref_decode(bits: np.ndarray, t: str) -> np.ndarray:
    """float64 values of memory contents."""
    if t == "f16":
        return bits.view(np.float16).astype(np.float64)
    if t == "bf16":
        with np.errstate(invalid="ignore"):
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t in FP8:
        return FP8[t][bits]
    return bits.astype(np.float64)


@functools.cache
def _format_table(t: str):
    """Positive finite values of format t in increasing order, with their codes."""
    n = 256 if t in FP8 else 65536
    codes = np.arange(n // 2, dtype=STORAGE[t] if t != "f16" else np.uint16)
    vals = ref_decode(codes, t)
    keep = np.isfinite(vals)
    order = np.argsort(vals[keep], kind="stable")
    return vals[keep][order], codes[keep][order].astype(np.int64)


def ref_round(v: np.ndarray, t: str, rtz: bool = False) -> np.ndarray:
    """Memory bits of float64 values rounded to format t (nearest-even or toward zero).

    fp8 saturates (the GPU's cvt.rn.satfinite); f16/bf16 overflow to infinity (RNE).
    """
    V, C = _format_table(t)
    a = np.abs(v)
    i = np.searchsorted(V, a, side="right")
    lo, hi = np.clip(i - 1, 0, len(V) - 1), np.clip(i, 0, len(V) - 1)
    if rtz:
        pick = lo
    else:
        dlo, dhi = a - V[lo], V[hi] - a
        pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(C[lo] % 2 == 0, lo, hi)))
    code = C[pick]
    top = V[-1] + (V[-1] - V[-2]) / 2
    inf_code = {"f16": 0x7C00, "bf16": 0x7F80, "f8e5": 0x7C}.get(t)
    if t in FP8:
        code = np.where(a > V[-1], C[-1], code)
    elif rtz:
        code = np.where(np.isinf(a), inf_code, np.where(a > V[-1], C[-1], code))
    else:
        code = np.where(a >= top, inf_code, code)
    sign = (1 << (8 * np.dtype(STORAGE[t]).itemsize - 1)) if t != "f16" else 0x8000
    code = np.where(np.signbit(v), code | sign, code)
    nan_code = {"f16": 0x7E00, "bf16": 0x7FC0, "f8e4nv": 0x7F, "f8e5": 0x7E}[t]
    return np.where(np.isnan(v), nan_code, code).astype(np.uint16 if t in ("f16", "bf16") else np.uint8)


def same_bits(got: np.ndarray, want: np.ndarray, t: str) -> None:
    """Equal memory bits, any NaN equal to any NaN."""
    g, w = ref_decode(got.view(np.uint16) if t == "f16" else got, t), ref_decode(want, t)
    both_nan = np.isnan(g) & np.isnan(w)
    bad = ~both_nan & (got.view(want.dtype) != want)
    assert not bad.any(), f"{t}: got {g[bad][:5]} want {w[bad][:5]}"


def random_bits(rng, t: str, n: int) -> np.ndarray:
    """Random finite, non-zero values of narrow float t, as memory bits."""
    V, C = _format_table(t)
    codes = C[rng.integers(1, len(C), n)]
    sign = 0x80 if t in FP8 else 0x8000
    codes = np.where(rng.random(n) < 0.5, codes | sign, codes)
    return codes.astype(np.uint16 if t in ("f16", "bf16") else np.uint8)


def random_floats(rng, t: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(memory array, float64 values) of random non-zero floats of t over many magnitudes."""
    if t in NARROW:
        bits = random_bits(rng, t, n)
        return (bits.view(np.float16) if t == "f16" else bits), ref_decode(bits, t)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(STORAGE[t])
    x[x == 0] = 1.5
    return x, x.astype(np.float64)


def random_ints(rng, t: str, n: int) -> np.ndarray:
    info = np.iinfo(STORAGE[t])
    x = rng.integers(info.min, info.max, n, dtype=STORAGE[t], endpoint=True)
    x[x == 0] = 3
    return x


def wrap(v: int, t: str) -> int:
    bits = np.iinfo(STORAGE[t]).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if t.startswith("i") and v >= 1 << (bits - 1) else v


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

    def ref(v: float) -> int:
        return 0 if math.isnan(v) else int(max(info.min, min(info.max, math.trunc(v) if math.isfinite(v) else v)))

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


# ------------------------------------------------------------------------------- memory


def _oob_kernel(shift: int = 0):
    body = offsets(64) + f"""
  %sh = arith.constant {{value = {shift}}} : tensor<64xi32>
  %o2 = arith.add %offs, %sh : tensor<64xi32>""" + ptrs("x", "f32", "64", "%o2") + """
  %x = tt.load %x_a : tensor<64xf32> loc("kern.py":7:5)""" + store("out", "%x", "f32", "64")
    return kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body, name="oob")


def test_out_of_bounds_load_names_kernel_line_offset_and_argument():
    x, out = np.ones(100, np.float32), poisoned(128, "f32")
    with pytest.raises(InterpreterError) as e:
        run(_oob_kernel(), (2,), x, out)
    msg = str(e.value)
    assert isinstance(e.value, RuntimeError)
    for part in ("kernel 'oob'", "kern.py:7", "element offset 100", "'x_ptr'", "100 elements of f32",
                 "program (1, 0, 0)", "index (36,)"):
        assert part in msg, msg
    with pytest.raises(InterpreterError, match="element offset -1 of argument 'x_ptr'"):
        run(_oob_kernel(-1), (1,), x, out)


def test_misaligned_and_null_pointers_fault():
    body = """
  %i = tt.ptr_to_int %x_ptr : i64
  %two = arith.constant {value = 2} : i64
  %j = arith.add %i, %two : i64
  %p = tt.int_to_ptr %j : ptr<f32>
  %x = tt.load %p : f32
  tt.store %out_ptr, %x"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    with pytest.raises(InterpreterError, match="misaligned access"):
        run(func, (1,), np.ones(4, np.float32), poisoned(1, "f32"))
    with pytest.raises(InterpreterError, match="does not point into any argument"):
        run(func, (1,), None, poisoned(1, "f32"))


def test_inactive_programs_do_not_fault():
    body = offsets(16) + """
  %c = arith.cmp %pid, %npass {predicate = "lt"} : i1
  scf.if %c {""" + load("x", "f32", "16") + store("out", "%x", "f32", "16") + """
    scf.yield
  } {
    scf.yield
  }"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>"), ("npass", "i32")], body)
    x, out = np.arange(1, 33, dtype=np.float32), poisoned(32, "f32")
    run(func, (5,), x, out, 2)  # programs 2..4 would read past both arrays
    np.testing.assert_array_equal(out, x)


def test_arguments_in_place_read_only_non_contiguous_and_host_view():
    func = elementwise("arith.mul %a0, %a0", ("f32",), "f32", 16)
    x = np.arange(1, 33, dtype=np.float32)
    strided = np.zeros((32, 2), np.float32)[:, 0]
    run(func, (2,), x, strided)
    np.testing.assert_array_equal(strided, x * x)

    class Host:
        def __init__(self, a):
            self.a = a

        def host_view(self):
            return self.a

    out = poisoned(32, "f32")
    run(func, (2,), Host(x), Host(out))
    np.testing.assert_array_equal(out, x * x)
    frozen = np.zeros(32, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only"):
        run(func, (2,), x, frozen)


def test_one_access_may_touch_several_arguments():
    body = """
  %ar = tt.arange {end = 64, start = 0} : tensor<64xi32>""" + ptrs("a", "f32", "64", "%ar") \
        + ptrs("b", "f32", "64", "%ar") + ptrs("out", "f32", "64", "%ar") + """
  %one = arith.constant {value = 1} : tensor<64xi32>
  %bit = arith.and %ar, %one : tensor<64xi32>
  %odd = arith.cmp %bit, %one {predicate = "eq"} : tensor<64xi1>
  %p = arith.select %odd, %b_a, %a_a : tensor<64xptr<f32>>
  %v = tt.load %p : tensor<64xf32>
  tt.store %p, %v
  %w = arith.add %v, %v : tensor<64xf32>
  tt.store %out_a, %w"""
    func = kernel([("a_ptr", "ptr<f32>"), ("b_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    a, b = np.arange(64, dtype=np.float32) + 1, -np.arange(64, dtype=np.float32) - 1
    out = poisoned(64, "f32")
    run(func, (1,), a, b, out)
    np.testing.assert_array_equal(out, 2 * np.where(np.arange(64) % 2 == 1, b, a))


def test_scalar_arguments_of_every_kind():
    body = """
  tt.store %o_i1, %s_i1
  tt.store %o_u64, %s_u64
  tt.store %o_bf16, %s_bf16
  tt.store %o_f16, %s_f16
  tt.store %o_f64, %s_f64"""
    types = {"i1": "i1", "u64": "u64", "bf16": "bf16", "f16": "f16", "f64": "f64"}
    params = [(f"o_{k}", f"ptr<{t}>") for k, t in types.items()] + [(f"s_{k}", t) for k, t in types.items()]
    func = kernel(params, body)
    outs = [poisoned(1, t) for t in types.values()]
    run(func, (1,), *outs, True, 2**64 - 3, 1.00390625 + 2**-9, 0.1, -0.1)
    assert outs[0][0] and outs[1][0] == 2**64 - 3 and outs[4][0] == -0.1
    assert outs[2][0] == ref_round(np.array([1.00390625 + 2**-9]), "bf16")[0]
    assert outs[3][0] == np.float16(0.1)


# -------------------------------------------------------------------------- shapes


def grid2d(name: str, m: int, n: int) -> str:
    """%name: tensor<m x n x i32> of row * n + col."""
    return f"""
  %{name}_r = tt.arange {{end = {m}, start = 0}} : tensor<{m}xi32>
  %{name}_c = tt.arange {{end = {n}, start = 0}} : tensor<{n}xi32>
  %{name}_r2 = tt.expand_dims %{name}_r {{axis = 1}} : tensor<{m}x1xi32>
  %{name}_c2 = tt.expand_dims %{name}_c {{axis = 0}} : tensor<1x{n}xi32>
  %{name}_n = arith.constant {{value = {n}}} : tensor<{m}x1xi32>
  %{name}_rs = arith.mul %{name}_r2, %{name}_n : tensor<{m}x1xi32>
  %{name}_rb = tt.broadcast %{name}_rs : tensor<{m}x{n}xi32>
  %{name}_cb = tt.broadcast %{name}_c2 : tensor<{m}x{n}xi32>
  %{name} = arith.add %{name}_rb, %{name}_cb : tensor<{m}x{n}xi32>"""


def load2d(name: str, t: str, m: int, n: int) -> str:
    return grid2d(f"{name}_o", m, n) + ptrs(name, t, f"{m}x{n}", f"%{name}_o") \
        + f"\n  %{name} = tt.load %{name}_a : tensor<{m}x{n}x{t}>"


def store2d(name: str, value: str, t: str, m: int, n: int) -> str:
    return grid2d(f"{name}_o", m, n) + ptrs(name, t, f"{m}x{n}", f"%{name}_o") + f"\n  tt.store %{name}_a, {value}"


def test_transpose_reshape_expand_broadcast():
    body = load2d("x", "f32", 4, 8) + """
  %t = tt.trans %x {order = [1, 0]} : tensor<8x4xf32>
  %a = tt.arange {end = 32, start = 0} : tensor<32xi32>
  %o = tt.reshape %a {can_reorder = false} : tensor<8x4xi32>""" + ptrs("out", "f32", "8x4", "%o") + """
  tt.store %out_a, %t"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    x = np.arange(1, 33, dtype=np.float32)
    out = poisoned(32, "f32")
    run(func, (1,), x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 8).T.reshape(-1))


# ------------------------------------------------------------------ reduce and scan


def combine(op: str, t: str) -> str:
    return f"""^bb(%a: {t}, %b: {t}):
    %m = {op} %a, %b : {t}
    tt.reduce.return %m"""


MAX_BY_SELECT = """^bb(%a: {t}, %b: {t}):
    %gt = arith.cmp %a, %b {{predicate = "gt"}} : i1
    %m = arith.select %gt, %a, %b : {t}
    tt.reduce.return %m"""


def _reduce_kernel(region: str, t: str, axis: int, m: int = 8, n: int = 16, scan: str = ""):
    rshape = f"{n}" if axis == 0 else f"{m}"
    if scan:
        reverse = "true" if scan == "reverse" else "false"
        op = f"%s = tt.scan %x {{axis = {axis}, reverse = {reverse}}} : tensor<{m}x{n}x{t}>"
        tail = store2d("out", "%s", t, m, n)
    else:
        op = f"%s = tt.reduce %x {{axis = {axis}}} : tensor<{rshape}x{t}>"
        tail = f"\n  %ro = tt.arange {{end = {rshape}, start = 0}} : tensor<{rshape}xi32>" \
               + ptrs("out", t, rshape, "%ro") + "\n  tt.store %out_a, %s"
    body = load2d("x", t, m, n) + f"\n  {op} {{\n  {region}\n  }}" + tail
    return kernel([("x_ptr", f"ptr<{t}>"), ("out_ptr", f"ptr<{t}>")], body)


@pytest.mark.parametrize("axis", [0, 1])
@given(seed=seeds)
@SETTINGS
def test_reductions(axis, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    x[rng.random((8, 16)) < 0.1] = np.nan
    for region, fn in ((combine("arith.add", "f32"), np.sum), (combine("arith.max", "f32"), np.fmax.reduce),
                       (MAX_BY_SELECT.format(t="f32"), None)):
        data = np.nan_to_num(x, nan=0.5) if fn is not np.fmax.reduce else x
        out = poisoned(16 if axis == 0 else 8, "f32")
        run(_reduce_kernel(region, "f32", axis), (1,), data.reshape(-1), out)
        want = np.max(data, axis) if fn is None else fn(data.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-5)  # float32 sums of 8-16 values
    xi = random_ints(rng, "i32", 128)
    out = poisoned(8, "i32")
    run(_reduce_kernel(combine("arith.add", "i32"), "i32", 1), (1,), xi, out)
    want = [wrap(sum(int(v) for v in row), "i32") for row in xi.reshape(8, 16)]
    np.testing.assert_array_equal(out, want)


def test_bf16_reduction_rounds_each_step():
    rng = np.random.default_rng(2)
    bits = ref_round(rng.uniform(0.5, 2.0, 128), "bf16")
    out = poisoned(8, "bf16")
    run(_reduce_kernel(combine("arith.add", "bf16"), "bf16", 1), (1,), bits, out)
    want = ref_decode(bits, "bf16").reshape(8, 16).sum(1)
    np.testing.assert_allclose(ref_decode(out, "bf16"), want, rtol=3e-2)


def test_argmax_reduce_with_two_operands_keeps_first_index():
    region = """^bb(%av: i32, %ai: i32, %bv: i32, %bi: i32):
    %gt = arith.cmp %av, %bv {predicate = "gt"} : i1
    %eq = arith.cmp %av, %bv {predicate = "eq"} : i1
    %lt = arith.cmp %ai, %bi {predicate = "lt"} : i1
    %tie = arith.and %eq, %lt : i1
    %pa = arith.or %gt, %tie : i1
    %v = arith.select %pa, %av, %bv : i32
    %i = arith.select %pa, %ai, %bi : i32
    tt.reduce.return %v, %i"""
    body = load2d("x", "i32", 8, 12) + """
  %ci = tt.arange {end = 12, start = 0} : tensor<12xi32>
  %ci2 = tt.expand_dims %ci {axis = 0} : tensor<1x12xi32>
  %idx = tt.broadcast %ci2 : tensor<8x12xi32>
  %mv, %mi = tt.reduce %x, %idx {axis = 1} : tensor<8xi32>, tensor<8xi32> {
  """ + region + """
  }
  %ro = tt.arange {end = 8, start = 0} : tensor<8xi32>""" + ptrs("out", "i32", "8", "%ro") + """
  tt.store %out_a, %mi"""
    func = kernel([("x_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    x = np.random.default_rng(4).integers(1, 5, 96).astype(np.int32)  # many ties
    out = poisoned(8, "i32")
    run(func, (1,), x, out)
    np.testing.assert_array_equal(out, np.argmax(x.reshape(8, 12), axis=1))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_scans(mode):
    rng = np.random.default_rng(8)
    x = rng.integers(-50, 50, 128).astype(np.int32)
    flip = (lambda a: a[:, ::-1]) if mode == "reverse" else (lambda a: a)
    general = """^bb(%a: i32, %b: i32):
    %t = arith.add %a, %b : i32
    %m = arith.max %t, %t : i32
    tt.reduce.return %m"""
    for region, ref in ((combine("arith.add", "i32"), np.cumsum), (general, np.cumsum),
                        (MAX_BY_SELECT.format(t="i32"), np.maximum.accumulate)):
        out = poisoned(128, "i32")
        run(_reduce_kernel(region, "i32", 1, scan=mode), (1,), x, out)
        want = flip(ref(flip(x.reshape(8, 16)), axis=1))
        np.testing.assert_array_equal(out.reshape(8, 16), want)


# -------------------------------------------------------------------------------- dot


def _tf32(x: np.ndarray) -> np.ndarray:
    m, e = np.frexp(x.astype(np.float64))
    return np.ldexp(np.rint(np.ldexp(m, 11)), e - 11)  # 11 significant bits, nearest even


@pytest.mark.parametrize("t,acc,precision", [("f32", "f32", "ieee"), ("f32", "f32", "tf32"), ("f16", "f32", "ieee"),
                                             ("bf16", "f32", "ieee"), ("f8e4nv", "f32", "ieee"),
                                             ("f8e5", "f32", "ieee"), ("f16", "f16", "ieee"), ("i8", "i32", "ieee")])
def test_dot(t, acc, precision):
    m, k, n = 16, 8, 32
    rng = np.random.default_rng(9)
    body = load2d("a", t, m, k) + load2d("b", t, k, n) + load2d("c", acc, m, n) + f"""
  %d = tt.dot %a, %b, %c {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : tensor<{m}x{n}x{acc}>""" \
        + store2d("out", "%d", acc, m, n)
    params = [("a_ptr", f"ptr<{t}>"), ("b_ptr", f"ptr<{t}>"), ("c_ptr", f"ptr<{acc}>"), ("out_ptr", f"ptr<{acc}>")]
    func = kernel(params, body)

    def make(t, shape):
        if t == "i8":
            v = rng.integers(-128, 128, shape).astype(np.int8)
            return v, v.astype(np.float64)
        if t == "i32":
            v = rng.integers(-(2**31), 2**31, shape).astype(np.int32)
            return v, v.astype(np.float64)
        mem, vals = random_floats(rng, t, int(np.prod(shape)))
        if t in NARROW:
            vals = np.clip(vals, -8, 8)
            mem = ref_round(vals, t)
            mem = mem.view(np.float16) if t == "f16" else mem
        return mem, vals.reshape(shape)

    (a, av), (b, bv), (c, cv) = make(t, (m, k)), make(t, (k, n)), make(acc, (m, n))
    out = poisoned(m * n, acc)
    run(func, (1,), a, b, c, out)
    if precision == "tf32":
        av, bv = _tf32(av), _tf32(bv)
    if t == "i8":
        want = np.array([wrap(int(v), "i32") for v in (av.astype(np.int64) @ bv.astype(np.int64)
                                                       + cv.astype(np.int64)).reshape(-1)], np.int32)
        np.testing.assert_array_equal(out, want)
    elif acc == "f16":
        same_bits(out.view(np.uint16), ref_round((av @ bv + cv).reshape(-1), "f16"), "f16")
    else:
        np.testing.assert_allclose(out, (av @ bv + cv).reshape(-1).astype(np.float32), rtol=1e-6)


# ------------------------------------------------------------------------------ atomics


def _atomic_kernel(kind: str, t: str, n: int, masked: bool):
    """old[i] = atomic kind(mem[idx[i]], val[i]) under mask m[i] (if `masked`)."""
    mask = ", %m" if masked else ""
    body = offsets(n) + load("idx", "i32", f"{n}") + load("val", t, f"{n}") + load("m", "i1", f"{n}") \
        + ptrs("mem", t, f"{n}", "%idx") + f"""
  %old = tt.atomic_rmw %mem_a, %val{mask} {{kind = "{kind}", scope = "gpu", sem = "acq_rel"}} : tensor<{n}x{t}>""" \
        + store("out", "%old", t, f"{n}")
    params = [("idx_ptr", "ptr<i32>"), ("val_ptr", f"ptr<{t}>"), ("m_ptr", "ptr<i1>"), ("mem_ptr", f"ptr<{t}>"),
              ("out_ptr", f"ptr<{t}>")]
    return kernel(params, body)


ATOMIC = {"add": lambda a, b: a + b, "max": max, "min": min, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
          "xor": lambda a, b: a ^ b, "xchg": lambda a, b: b}  # fmt: skip


@pytest.mark.parametrize("t", ["i32", "u32", "i64"])
@pytest.mark.parametrize("kind", list(ATOMIC))
@given(seed=seeds)
@settings(max_examples=4, deadline=None)
def test_atomics_are_sequential_in_program_order(kind, t, seed):
    rng = np.random.default_rng(seed)
    n, programs, cells = 32, 3, 5  # heavy contention: 96 lanes on 5 cells
    idx = rng.integers(0, cells, n * programs).astype(np.int32)
    val, mem = random_ints(rng, t, n * programs), random_ints(rng, t, cells)
    on = rng.random(n * programs) < 0.8
    masked = bool(seed % 2)
    out = poisoned(n * programs, t)
    want_mem = [int(v) for v in mem]
    want_old = {}
    for lane in range(n * programs):  # programs in order, then elements in order
        if masked and not on[lane]:
            continue
        cell = idx[lane]
        want_old[lane] = want_mem[cell]
        want_mem[cell] = wrap(ATOMIC[kind](want_mem[cell], int(val[lane])), t)
    run(_atomic_kernel(kind, t, n, masked), (programs,), idx, val, on, mem, out)
    np.testing.assert_array_equal(mem, np.array(want_mem, dtype=object).astype(STORAGE[t]))
    lanes = list(want_old)
    np.testing.assert_array_equal(out[lanes], np.array(list(want_old.values()), dtype=object).astype(STORAGE[t]))


def test_histogram_and_float_atomic_add_with_contention():
    rng = np.random.default_rng(11)
    n, programs = 64, 8
    idx = rng.integers(0, 16, n * programs).astype(np.int32)
    ones = np.ones(n * programs, np.int32)
    hist = rng.integers(1, 10, 16).astype(np.int32)
    start = hist.copy()
    run(_atomic_kernel("add", "i32", n, False), (programs,), idx, ones, np.ones(n * programs, bool), hist,
        poisoned(n * programs, "i32"))
    np.testing.assert_array_equal(hist, start + np.bincount(idx, minlength=16))
    vals = rng.standard_normal(n * programs).astype(np.float32)
    acc = np.full(16, 0.25, np.float32)
    run(_atomic_kernel("add", "f32", n, False), (programs,), idx, vals, np.ones(n * programs, bool), acc,
        poisoned(n * programs, "f32"))
    want = 0.25 + np.bincount(idx, weights=vals.astype(np.float64), minlength=16)
    np.testing.assert_allclose(acc, want, rtol=1e-5, atol=1e-5)


def test_atomic_ticket_counter_follows_program_order():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %t = tt.atomic_rmw %cnt_ptr, %one {kind = "add", scope = "gpu", sem = "acq_rel"} : i32
  %p = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %p, %t"""
    func = kernel([("cnt_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    cnt, out = np.array([7], np.int32), poisoned(50, "i32")
    run(func, (50,), cnt, out)
    assert cnt[0] == 57
    np.testing.assert_array_equal(out, 7 + np.arange(50))


def test_lock_free_counter_with_compare_and_swap():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %c0 = tt.load %cnt_ptr : i32
  %ticket = scf.while %c0 : i32 {
  ^bb(%exp: i32):
    %want = arith.add %exp, %one : i32
    %got = tt.atomic_cas %cnt_ptr, %exp, %want {scope = "gpu", sem = "acq_rel"} : i32
    %fail = arith.cmp %got, %exp {predicate = "ne"} : i1
    %res = arith.select %fail, %got, %exp : i32
    scf.condition %fail, %res
  } {
  ^bb(%next: i32):
    scf.yield %next
  }
  %p = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %p, %ticket"""
    func = kernel([("cnt_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    cnt, out = np.array([100], np.int32), poisoned(40, "i32")
    run(func, (40,), cnt, out)
    assert cnt[0] == 140
    np.testing.assert_array_equal(out, 100 + np.arange(40))


def test_float_compare_and_swap_compares_bits():
    body = """
  %ar = tt.arange {end = 4, start = 0} : tensor<4xi32>""" + ptrs("mem", "f32", "4", "%ar") \
        + load("cmp", "f32", "4", offs="%ar") + load("new", "f32", "4", offs="%ar") + """
  %old = tt.atomic_cas %mem_a, %cmp, %new {scope = "gpu", sem = "acq_rel"} : tensor<4xf32>""" \
        + store("out", "%old", "f32", "4", offs="%ar")
    params = [("mem_ptr", "ptr<f32>"), ("cmp_ptr", "ptr<f32>"), ("new_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")]
    func = kernel(params, body)
    mem = np.array([np.nan, 1.0, 0.0, 2.0], np.float32)
    cmp = np.array([np.nan, 1.0, -0.0, 3.0], np.float32)
    out = poisoned(4, "f32")
    run(func, (1,), mem, cmp, np.array([5, 6, 7, 8], np.float32), out)
    np.testing.assert_array_equal(mem, [5, 6, 0, 2])  # NaN bits equal; -0.0 has other bits than 0.0
    np.testing.assert_array_equal(out, [np.nan, 1, 0, 2])


# ------------------------------------------------------------------------- control flow


def test_loop_with_program_dependent_trip_count_and_stores_inside():
    """Program p runs p + 1 iterations; it reads x[p - i], out of bounds past its own trip count."""
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %zero = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %eight = arith.constant {value = 8} : i32
  %ten = arith.constant {value = 10} : i32
  %ub = arith.add %pid, %one : i32
  %base = arith.mul %pid, %eight : i32
  %acc = scf.for %zero, %ub, %one, %zero : i32 {
  ^bb(%i: i32, %a: i32):
    %back = arith.sub %pid, %i : i32
    %xp = tt.addptr %x_ptr, %back : ptr<i32>
    %x = tt.load %xp : i32
    %na = arith.add %a, %x : i32
    %v0 = arith.mul %i, %ten : i32
    %v = arith.add %v0, %pid : i32
    %off = arith.add %base, %i : i32
    %p = tt.addptr %out_ptr, %off : ptr<i32>
    tt.store %p, %v
    scf.yield %na
  }
  %sp = tt.addptr %sums_ptr, %pid : ptr<i32>
  tt.store %sp, %acc"""
    func = kernel([("x_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>"), ("sums_ptr", "ptr<i32>")], body)
    x = np.array([3, 1, 4, 1, 5, 9], np.int32)
    out, sums = poisoned((6, 8), "i32"), poisoned(6, "i32")
    want = out.copy()
    run(func, (6,), x, out, sums)
    for p in range(6):
        want[p, : p + 1] = np.arange(p + 1) * 10 + p
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(sums, np.cumsum(x))


def test_uniform_loop_with_step_and_zero_trips():
    body = """
  %zero = arith.constant {value = 0} : i64
  %three = arith.constant {value = 3} : i64
  %init = arith.constant {value = 1.0} : f32
  %r = scf.for %zero, %n, %three, %init : f32 {
  ^bb(%i: i64, %a: f32):
    %fi = arith.cast %i : f32
    %na = arith.add %a, %fi : f32
    scf.yield %na
  }
  tt.store %out_ptr, %r"""
    func = kernel([("out_ptr", "ptr<f32>"), ("n", "i64")], body)
    for n in (0, 1, 10):
        out = poisoned(1, "f32")
        run(func, (3,), out, n)
        assert out[0] == 1 + sum(range(0, n, 3))


def test_zero_step_is_an_error():
    body = """
  %zero = arith.constant {value = 0} : i32
  %r = scf.for %zero, %n, %zero, %zero : i32 {
  ^bb(%i: i32, %a: i32):
    scf.yield %a
  }
  tt.store %out_ptr, %r"""
    func = kernel([("out_ptr", "ptr<i32>"), ("n", "i32")], body)
    with pytest.raises(InterpreterError, match="step 0"):
        run(func, (2,), poisoned(1, "i32"), 4)


def test_if_with_program_dependent_condition_stores_in_both_branches():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %two = arith.constant {value = 2} : i32
  %r = arith.rem %pid, %two : i32
  %zero = arith.constant {value = 0} : i32
  %even = arith.cmp %r, %zero {predicate = "eq"} : i1
  %p = tt.addptr %a_ptr, %pid : ptr<i32>
  %q = tt.addptr %b_ptr, %pid : ptr<i32>
  %v = scf.if %even : i32 {
    %x = arith.mul %pid, %two : i32
    tt.store %p, %x
    scf.yield %x
  } {
    %y = arith.sub %zero, %pid : i32
    tt.store %q, %y
    scf.yield %y
  }
  %o = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %o, %v"""
    func = kernel([("a_ptr", "ptr<i32>"), ("b_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    a, b, out = poisoned(7, "i32"), poisoned(7, "i32"), poisoned(7, "i32")
    wa, wb = a.copy(), b.copy()
    run(func, (7,), a, b, out)
    p = np.arange(7)
    wa[p % 2 == 0] = 2 * p[p % 2 == 0]
    wb[p % 2 == 1] = -p[p % 2 == 1]
    np.testing.assert_array_equal(a, wa)
    np.testing.assert_array_equal(b, wb)
    np.testing.assert_array_equal(out, np.where(p % 2 == 0, 2 * p, -p))


def test_while_loop_runs_until_every_program_is_done():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %two = arith.constant {value = 2} : i32
  %three = arith.constant {value = 3} : i32
  %zero = arith.constant {value = 0} : i32
  %n0 = arith.add %pid, %one : i32
  %steps, %last = scf.while %zero, %n0 : i32, i32 {
  ^bb(%s: i32, %n: i32):
    %go = arith.cmp %n, %one {predicate = "ne"} : i1
    scf.condition %go, %s, %n
  } {
  ^bb(%s2: i32, %n2: i32):
    %r = arith.rem %n2, %two : i32
    %odd = arith.cmp %r, %one {predicate = "eq"} : i1
    %nn = scf.if %odd : i32 {
      %t = arith.mul %n2, %three : i32
      %u = arith.add %t, %one : i32
      scf.yield %u
    } {
      %h = arith.div %n2, %two : i32
      scf.yield %h
    }
    %s3 = arith.add %s2, %one : i32
    scf.yield %s3, %nn
  }
  %o = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %o, %steps"""
    func = kernel([("out_ptr", "ptr<i32>")], body)

    def collatz(n: int) -> int:
        steps = 0
        while n != 1:
            n, steps = (3 * n + 1 if n % 2 else n // 2), steps + 1
        return steps

    out = poisoned(30, "i32")
    run(func, (30,), out)
    np.testing.assert_array_equal(out, [collatz(p + 1) for p in range(30)])


def test_nested_non_uniform_loop_and_if():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %zero = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %two = arith.constant {value = 2} : i32
  %four = arith.constant {value = 4} : i32
  %base = arith.mul %pid, %four : i32
  scf.for %zero, %pid, %one {
  ^bb(%i: i32):
    %r = arith.rem %i, %two : i32
    %odd = arith.cmp %r, %one {predicate = "eq"} : i1
    scf.if %odd {
      %off = arith.add %base, %i : i32
      %p = tt.addptr %out_ptr, %off : ptr<i32>
      tt.store %p, %pid
      scf.yield
    } {
      scf.yield
    }
    scf.yield
  }"""
    func = kernel([("out_ptr", "ptr<i32>")], body)
    out = poisoned((5, 4), "i32")
    want = out.copy()
    run(func, (5,), out)
    for p in range(5):
        for i in range(1, p, 2):
            want[p, i] = p
    np.testing.assert_array_equal(out, want)


# -------------------------------------------------------------------------------- debug


def test_print_format(capsys):
    body = """
  %pid = tt.program_id {axis = 0} : i32
  tt.print %pid {hex = false, prefix = "pid: "}
  %ar = tt.arange {end = 2, start = 0} : tensor<2xi32>
  %f = arith.cast %ar : tensor<2xf32>
  %one = arith.constant {value = 1} : i32
  %c = arith.cmp %pid, %one {predicate = "eq"} : i1
  scf.if %c {
    tt.print %ar, %f {hex = false, prefix = "v"}
    tt.print %ar {hex = true, prefix = " h: "}
    scf.yield
  } {
    scf.yield
  }"""
    run(kernel([], body), (2,))
    assert capsys.readouterr().out.splitlines() == [
        "pid (0, 0, 0) idx () pid: 0",
        "pid (1, 0, 0) idx () pid: 1",
        "pid (1, 0, 0) idx (0) v (operand 0) 0",
        "pid (1, 0, 0) idx (1) v (operand 0) 1",
        "pid (1, 0, 0) idx (0) v (operand 1) 0.000000",
        "pid (1, 0, 0) idx (1) v (operand 1) 1.000000",
        "pid (1, 0, 0) idx (0) h: 0x00000000",
        "pid (1, 0, 0) idx (1) h: 0x00000001",
    ]


def test_assert_failure_names_message_and_program():
    body = offsets(64) + load("x", "i32", "64") + """
  %five = arith.constant {value = 5} : tensor<64xi32>
  %ok = arith.cmp %x, %five {predicate = "lt"} : tensor<64xi1>
  tt.assert %ok {file = "k.py", line = 9, message = "x must be small"} loc("k.py":9:4)"""
    func = kernel([("x_ptr", "ptr<i32>")], body, name="checked")
    x = np.ones(128, np.int32)
    run(func, (2,), x)
    x[70] = 7
    with pytest.raises(InterpreterError) as e:
        run(func, (2,), x)
    msg = str(e.value)
    for part in ("kernel 'checked'", "k.py:9", "x must be small", "program (1, 0, 0)", "index (6,)"):
        assert part in msg, msg


def test_integer_division_by_zero_does_not_crash():
    a = np.array([7, -7, 0, -(2**31)], np.int32)
    b = np.array([0, 0, 0, -1], np.int32)
    out = poisoned(4, "i32")
    run(elementwise("arith.div %a0, %a1", ("i32", "i32"), "i32", 4), (1,), a, b, out)
    np.testing.assert_array_equal(out, [-1, -1, -1, -(2**31)])


# ------------------------------------------------------------------------ launch shape


def test_three_dimensional_grid_in_small_chunks(monkeypatch):
    body = """
  %x = tt.program_id {axis = 0} : i32
  %y = tt.program_id {axis = 1} : i32
  %z = tt.program_id {axis = 2} : i32
  %nx = tt.num_programs {axis = 0} : i32
  %ny = tt.num_programs {axis = 1} : i32
  %yz = arith.mul %z, %ny : i32
  %row = arith.add %yz, %y : i32
  %lin0 = arith.mul %row, %nx : i32
  %lin = arith.add %lin0, %x : i32
  %c100 = arith.constant {value = 100} : i32
  %c10000 = arith.constant {value = 10000} : i32
  %vy = arith.mul %y, %c100 : i32
  %vz = arith.mul %z, %c10000 : i32
  %v0 = arith.add %x, %vy : i32
  %v = arith.add %v0, %vz : i32
  %p = tt.addptr %out_ptr, %lin : ptr<i32>
  tt.store %p, %v
  %one = arith.constant {value = 1} : i32
  %t = tt.atomic_rmw %cnt_ptr, %one {kind = "add", scope = "gpu", sem = "acq_rel"} : i32
  %q = tt.addptr %tickets_ptr, %lin : ptr<i32>
  tt.store %q, %t"""
    func = kernel([("out_ptr", "ptr<i32>"), ("cnt_ptr", "ptr<i32>"), ("tickets_ptr", "ptr<i32>")], body)
    monkeypatch.setattr(interp, "CHUNK_ELEMENTS", 7)
    out, cnt, tickets = poisoned((4, 3, 5), "i32"), np.zeros(1, np.int32), poisoned(60, "i32")
    run(func, (5, 3, 4), out, cnt, tickets)
    z, y, x = np.meshgrid(np.arange(4), np.arange(3), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(out, x + 100 * y + 10000 * z)
    np.testing.assert_array_equal(tickets, np.arange(60))


def test_compiled_once_per_func():
    func = elementwise("arith.add %a0, %a0", ("f32",), "f32", 8)
    assert interp.compile_kernel(func, "k") is interp.compile_kernel(func, "k")
    with pytest.raises(InterpreterError, match="expects 2 arguments"):
        run(func, (1,), np.ones(8, np.float32))


def test_combine_region_with_control_flow():
    region = """^bb(%a: f32, %b: f32):
    %gt = arith.cmp %a, %b {predicate = "gt"} : i1
    %m = scf.if %gt : f32 {
      scf.yield %a
    } {
      scf.yield %b
    }
    tt.reduce.return %m"""
    x = np.random.default_rng(12).standard_normal(128).astype(np.float32)
    out = poisoned(8, "f32")
    run(_reduce_kernel(region, "f32", 1), (1,), x, out)
    np.testing.assert_array_equal(out, x.reshape(8, 16).max(axis=1))
