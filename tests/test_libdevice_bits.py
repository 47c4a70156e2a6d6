"""libdevice's bit, integer, rounding-mode, conversion and classification functions
(tile.language.extra.libdevice_bits), and the exact rounding the interpreter does for them.

References are independent of the code under test: rounded results come from exact rational
arithmetic (fractions.Fraction) and stepping along the float grid; integer functions from
Python integers. The kernels run through the `arrays` fixture: on the interpreter, as sm_80 PTX
on tile.emulator (marker `emulator`), and (marker `gpu`) on a GPU, where every correctly rounded
function must agree bit for bit.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)
from tile.ir.types import f32, f64
from tile.language.extra import libdevice_bits as libdevice
from tile.runtime import interp_rounding as R

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on infinities and NaN in references

MODES = ("rn", "rz", "rd", "ru")
FT = {"fp32": np.float32, "fp64": np.float64}
UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
RNG = np.random.default_rng(11)


# ------------------------------------------------------------------------------ references


def _f(x) -> Fraction:
    return Fraction(float(x))


def round_down(q: Fraction, ft) -> np.floating:
    """The largest float of type ft that is <= q (-inf below the finite range)."""
    try:
        start = float(q)
    except OverflowError:
        start = math.inf if q > 0 else -math.inf
    with np.errstate(over="ignore"):
        c = ft(start)
    inf = ft(np.inf)
    if c == inf:
        c = ft(np.finfo(ft).max)
    while np.isfinite(c) and _f(c) > q:
        c = np.nextafter(c, -inf)
    while True:
        n = np.nextafter(c, inf)
        if not (np.isfinite(n) and _f(n) <= q):
            return c
        c = n


def exact_round(q: Fraction, ft, mode: str, zero: float = 0.0) -> np.floating:
    """q rounded to the float type ft in `mode`; an exactly zero q gives `zero` (signed)."""
    if q == 0:
        return ft(zero)
    lo = round_down(q, ft)
    if np.isfinite(lo) and _f(lo) == q:
        return lo
    hi = np.nextafter(lo, ft(np.inf))
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if q > 0 else hi
    big = Fraction(float(np.finfo(ft).max))
    beyond = 2 * big - _f(np.nextafter(ft(np.finfo(ft).max), ft(0)))  # the value past max, 2^(emax+1)
    a = -beyond if np.isinf(lo) else _f(lo)
    b = beyond if np.isinf(hi) else _f(hi)
    mid = (a + b) / 2
    if q != mid:
        return lo if q < mid else hi
    even = lo if np.isfinite(lo) and int(np.array(lo).view(UINT[np.dtype(ft)])) % 2 == 0 else hi
    return even


def exact_sqrt(a: float, ft, mode: str) -> np.floating:
    """sqrt(a) rounded in `mode`: the float grid stepped with exact squares."""
    q = Fraction(a)
    c = ft(math.sqrt(a))
    inf = ft(np.inf)
    while _f(c) ** 2 > q:
        c = np.nextafter(c, -inf)
    while _f(np.nextafter(c, inf)) ** 2 <= q:
        c = np.nextafter(c, inf)
    if _f(c) ** 2 == q or mode in ("rd", "rz"):
        return c
    hi = np.nextafter(c, inf)
    if mode == "ru":
        return hi
    mid = (_f(c) + _f(hi)) / 2
    return c if q < mid * mid else hi  # never a tie: the midpoint's square has too many bits


def zero_sum_sign(x: float, y: float, mode: str) -> float:
    """IEEE 754's sign of an exactly zero sum x + y."""
    if x == 0 and y == 0 and math.copysign(1, x) == math.copysign(1, y):
        return x
    return -0.0 if mode == "rd" else 0.0


def exact_op(name: str, args: Sequence[float], ft, mode: str) -> np.floating:
    """The reference of add/sub/mul/div/fma/sqrt in `mode` (IEEE special values included)."""
    if name == "sqrt":
        a = float(args[0])
        if math.isnan(a) or a < 0:
            return ft(np.nan)
        return ft(a) if a == 0 or math.isinf(a) else exact_sqrt(a, ft, mode)
    xs = [float(v) for v in args]
    if name == "sub":
        name, xs = "add", [xs[0], -xs[1]]
    if not all(math.isfinite(v) for v in xs) or (name == "div" and xs[1] == 0):
        if name == "fma" and math.isinf(xs[2]) and math.isfinite(xs[0]) and math.isfinite(xs[1]):
            return ft(xs[2])  # a finite product meeting an infinite addend
        x = np.float64(xs[0])
        with np.errstate(all="ignore"):
            ieee = {"add": lambda: x + xs[1], "mul": lambda: x * xs[1], "div": lambda: x / xs[1],
                    "fma": lambda: x * xs[1] + xs[2]}[name]()
        return ft(ieee)
    f = [Fraction(v) for v in xs]
    q = {"add": lambda: f[0] + f[1], "mul": lambda: f[0] * f[1], "div": lambda: f[0] / f[1],
         "fma": lambda: f[0] * f[1] + f[2]}[name]()
    if q != 0:
        return exact_round(q, ft, mode)
    product_sign = math.copysign(1, xs[0]) * math.copysign(1, xs[1])
    if name in ("mul", "div"):
        return ft(math.copysign(0.0, product_sign))
    if name == "add":
        return ft(zero_sum_sign(xs[0], xs[1], mode))
    if xs[0] == 0 or xs[1] == 0:  # fma with a zero product: a signed zero plus c
        return ft(zero_sum_sign(math.copysign(0.0, product_sign), xs[2], mode))
    return ft(zero_sum_sign(1.0, -1.0, mode))  # a product cancelled by c


def same_bits(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Bit-identical, except that any NaN equals any NaN."""
    got, want = np.asarray(got), np.asarray(want, got.dtype)
    bits = np.dtype(f"u{got.dtype.itemsize}")
    bad = got.view(bits) != want.view(bits)
    if got.dtype.kind == "f":
        bad &= ~(np.isnan(got) & np.isnan(want))
    assert not bad.any(), f"{what}: {bad.sum()} differ, e.g. got {got[bad][:4]} want {want[bad][:4]} at " \
                          f"{np.flatnonzero(bad)[:4]}"


# ----------------------------------------------------------------------------- test values


def float_edges(ft) -> np.ndarray:
    """Zeros, subnormals, the normal boundary, max, infinities, NaN, ties of small integers."""
    fi = np.finfo(ft)
    tiny, sub = fi.tiny, fi.smallest_subnormal
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 0.1, -7.25, 1e-3, 1e3, float(fi.eps),
         float(sub), -float(sub), float(sub) * 3, float(tiny), float(tiny) * (1 - float(fi.epsneg)), -float(tiny),
         float(fi.max), -float(fi.max), float(fi.max) / 2, np.inf, -np.inf, np.nan]
    return np.array(v, ft)


def random_floats(ft, n: int) -> np.ndarray:
    """Random bit patterns (every exponent) and random values of moderate magnitude."""
    bits = UINT[np.dtype(ft)]
    info = np.iinfo(bits)
    raw = RNG.integers(0, info.max, n // 2, dtype=bits, endpoint=True).view(ft)
    mid = (RNG.standard_normal(n - n // 2) * np.exp2(RNG.integers(-30, 30, n - n // 2))).astype(ft)
    return np.concatenate([raw, mid])


def float_pairs(ft, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, random pairs, near-cancelling pairs and rounding ties."""
    e = float_edges(ft)
    a, b = (x.ravel() for x in np.meshgrid(e, e, indexing="ij"))
    ra, rb = random_floats(ft, n), random_floats(ft, n)
    near = ra[: n // 4] * (1 + ft(np.finfo(ft).eps) * RNG.integers(-4, 5, n // 4))
    one = np.ones(n // 8, ft)
    ties = np.ldexp(one, -np.finfo(ft).nmant - 1) * RNG.choice([1, 3, -1, -3], n // 8)  # 1 + half-ulp multiples
    with np.errstate(over="ignore"):
        return (np.concatenate([a, ra, ra[: n // 4], one]).astype(ft),
                np.concatenate([b, rb, -near.astype(ft), ties.astype(ft)]).astype(ft))


# ------------------------------------------------------- the interpreter's exact rounding


def _check_engine(name: str, args: list[np.ndarray], t, mode: str) -> None:
    ft = np.float32 if t == f32 else np.float64
    if name == "sqrt":
        got = R.rounded_sqrt(args[0], t, mode)
    elif name == "fma":
        got = R.rounded_fma(*args, t, mode)
    else:
        got = R.rounded_binary(f"arith.{name}", args[0], args[1], t, mode)
    want = np.array([exact_op(name, [a[i] for a in args], ft, mode) for i in range(len(args[0]))], ft)
    same_bits(np.asarray(got, ft), want, f"{name}.{mode} {t}")


FLOATS32 = st.floats(width=32, allow_subnormal=True)
FLOATS64 = st.floats(allow_subnormal=True)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "fma", "sqrt"])
@pytest.mark.parametrize("t", [f32, f64])
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_rounding_engine_matches_exact_rationals(name, t, data) -> None:
    """Every mode of +, -, *, /, fma and sqrt on hypothesis' floats (subnormals, infinities,
    NaN, signed zeros) against exact rational results rounded along the float grid."""
    ft = np.float32 if t == f32 else np.float64
    arity = {"sqrt": 1, "fma": 3}.get(name, 2)
    xs = [np.array(data.draw(st.lists(FLOATS32 if t == f32 else FLOATS64, min_size=8, max_size=8)), ft)
          for _ in range(arity)]
    for mode in MODES:
        _check_engine(name, xs, t, mode)


@pytest.mark.parametrize("name", ["add", "mul", "div", "fma", "sqrt"])
@pytest.mark.parametrize("t", [f32, f64])
def test_rounding_engine_on_edges_and_ties(name, t) -> None:
    ft = np.float32 if t == f32 else np.float64
    a, b = float_pairs(ft, 400)
    c = np.roll(a, 7)
    if name == "fma":  # products cancelling c, up to the last bit
        c[:100] = -(a[:100].astype(np.float64) * b[:100]).astype(ft)
    args = {"sqrt": [np.abs(a)], "fma": [a, b, c]}.get(name, [a, b])
    for mode in MODES:
        _check_engine(name, args, t, mode)


def test_f32_fma_double_rounding_through_f64() -> None:
    """1 + 2^-23 + 2^-24 - 2^-70 lies just below an f32 tie: its f64 value is the tie itself,
    and rounding that to even would go up. The residual breaks the tie downward."""
    a, b, c = np.float32(1 + 2**-23), np.float32(2.0**-24 * (1 - 2**-23)), np.float32(1 + 2**-23)
    for mode, want in (("rn", 1 + 2**-23), ("rd", 1 + 2**-23), ("rz", 1 + 2**-23), ("ru", 1 + 2**-22)):
        assert R.rounded_fma(np.array([a]), np.array([b]), np.array([c]), f32, mode)[0] == np.float32(want), mode


def test_overflow_in_each_mode() -> None:
    big = np.array([np.finfo(np.float64).max, -np.finfo(np.float64).max])
    got = {m: R.rounded_binary("arith.add", big, big, f64, m) for m in MODES}
    assert np.isinf(got["rn"]).all() and list(got["rz"]) == list(big)
    assert list(got["ru"]) == [np.inf, big[1]] and list(got["rd"]) == [big[0], -np.inf]


def test_exact_zero_sums_are_negative_only_rounding_down() -> None:
    x = np.array([1.5, 0.0, -0.0, 0.0], np.float64)
    y = np.array([-1.5, -0.0, -0.0, 0.0], np.float64)
    for mode in MODES:
        r = R.rounded_binary("arith.add", x, y, f64, mode)
        assert list(np.signbit(r)) == ([True, True, True, False] if mode == "rd" else [False, False, True, False])


@given(st.integers(-2**63, 2**64 - 1))
@settings(max_examples=200, deadline=None)
def test_int64_to_float_in_each_mode(v: int) -> None:
    dt = np.int64 if v < 2**63 else np.uint64
    x = np.array([v], dt)
    for t, ft in ((f32, np.float32), (f64, np.float64)):
        for mode in MODES:
            same_bits(R.int_to_float(x, t, mode), np.array([exact_round(Fraction(v), ft, mode)], ft), f"{v} {mode}")


@given(st.floats(allow_subnormal=True))
@settings(max_examples=200, deadline=None)
def test_f64_to_f32_in_each_mode(v: float) -> None:
    for mode in MODES:
        want = np.float32(v) if not math.isfinite(v) or v == 0 else exact_round(Fraction(v), np.float32, mode)
        same_bits(R.round_pair(np.array([v]), np.zeros(1, np.int8), f32, mode), np.array([want], np.float32), mode)


def test_round_fraction_is_exact() -> None:
    for q in (Fraction(1, 3), Fraction(-2, 3), Fraction(10**400), Fraction(1, 10**400), Fraction(-5, 2**1076)):
        for t, ft in ((f32, np.float32), (f64, np.float64)):
            for mode in MODES:
                assert ft(R.round_fraction(q, t, mode)) == exact_round(q, ft, mode), (q, mode)


# ------------------------------------------------------------------------------- kernels


@tile.jit
def apply_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, NAMES: tl.constexpr, NARGS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    for i in tl.static_range(len(NAMES)):
        fn = getattr(libdevice, NAMES[i])
        if NARGS == 1:
            r = fn(a)
        elif NARGS == 2:
            r = fn(a, b)
        else:
            r = fn(a, b, c)
        tl.store(out_ptr + i * n + offs, r, mask=mask)


def apply(arrays, names: Sequence[str], args: Sequence[np.ndarray], out_dtype) -> np.ndarray:
    """out[i] = libdevice.<names[i]>(*args) elementwise, run through one kernel."""
    n = len(args[0])
    operands = list(args) + [args[0]] * (3 - len(args))
    out = arrays.put(poison((len(names), n), out_dtype))
    apply_kernel[(tile.cdiv(n, 256),)](*(arrays.put(x) for x in operands), out, n, NAMES=tuple(names),
                                       NARGS=len(args), BLOCK=256)
    return arrays.get(out)


def references(fn: Callable, args: Sequence[np.ndarray], dtype) -> np.ndarray:
    return np.array([fn(*(a[i] for a in args)) for i in range(len(args[0]))], dtype)


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_rounded_arithmetic(arrays, dtype: str) -> None:
    ft = FT[dtype]
    a, b = float_pairs(ft, 200)
    names = [f"{op}_{m}" for op in ("add", "sub", "mul", "div") for m in MODES]
    got = apply(arrays, names, [a, b], ft)
    for row, name in zip(got, names):
        op, mode = name.split("_")
        same_bits(row, references(lambda x, y: exact_op(op, [x, y], ft, mode), [a, b], ft), name)


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_rounded_fma_rcp_sqrt(arrays, dtype: str) -> None:
    ft = FT[dtype]
    a, b = float_pairs(ft, 100)
    c = np.roll(a, 3)
    c[:60] = -(a[:60].astype(np.float64) * b[:60]).astype(ft)
    got = apply(arrays, [f"fma_{m}" for m in MODES], [a, b, c], ft)
    for row, mode in zip(got, MODES):
        same_bits(row, references(lambda x, y, z: exact_op("fma", [x, y, z], ft, mode), [a, b, c], ft), f"fma_{mode}")
    names = [f"{op}_{m}" for op in ("rcp", "sqrt") for m in MODES] + ["sqrt", "fma"]
    got = apply(arrays, names[:-1], [a], ft)
    for row, name in zip(got, names):
        op, mode = (name.split("_") + ["rn"])[:2]
        ref = (lambda x: exact_op("div", [ft(1.0), x], ft, mode)) if op == "rcp" else \
            (lambda x: exact_op("sqrt", [x], ft, mode))
        same_bits(row, references(ref, [a], ft), name)
    same_bits(apply(arrays, ["fma"], [a, b, c], ft)[0],
              references(lambda x, y, z: exact_op("fma", [x, y, z], ft, "rn"), [a, b, c], ft), "fma")


def _to_int_ref(x: float, mode: str, bits: int, signed: bool, nan: int) -> int:
    if math.isnan(x):
        return nan
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isinf(x):
        return hi if x > 0 else lo
    v = {"rn": lambda: round(Fraction(x)), "rz": lambda: math.trunc(x), "rd": lambda: math.floor(x),
         "ru": lambda: math.ceil(x)}[mode]()  # Python's round() of a Fraction: ties to even
    return max(lo, min(hi, int(v)))


def int_values(kind: str, n: int) -> np.ndarray:
    dt = np.dtype(kind)
    info = np.iinfo(dt)
    edges = [0, 1, 2, 3, info.max, info.max - 1, info.min, info.min + 1, 2**24 + 1, 2**24 + 3, 2**53 + 1]
    edges = [v for v in edges if info.min <= v <= info.max] + ([-1, -2, -(2**24) - 1] if info.min < 0 else [])
    return np.concatenate([np.array(edges, dt), RNG.integers(info.min, info.max, n, dtype=dt, endpoint=True),
                           RNG.integers(-(2**30), 2**30, n // 4).astype(dt)])


@pytest.mark.parametrize("src", ["fp32", "fp64"])
@pytest.mark.parametrize("width", [32, 64])
def test_float_to_int(arrays, src: str, width: int) -> None:
    ft = FT[src]
    x = np.concatenate([float_edges(ft), random_floats(ft, 200), np.array([2.0**31, -2.0**31, 2.0**32, 2.0**63,
                                                                            2.0**64, 0.5, 1.5, -0.5, -1.5], ft)])
    stem = {"fp32": "float", "fp64": "double"}[src]
    kinds = [("int", True), ("uint", False)] if width == 32 else [("ll", True), ("ull", False)]
    names = [f"{stem}2{k}_{m}" for k, _ in kinds for m in MODES]
    got = apply(arrays, names, [x], np.int32 if width == 32 else np.int64)
    for row, name in zip(got, names):
        kind, mode = name.split("2")[1].split("_")
        signed = dict(kinds)[kind]
        nan = 0 if src == "fp32" and width == 32 else 1 << (width - 1)
        want = [_to_int_ref(float(v), mode, width, signed, nan) for v in x]
        unsigned = f"u{width // 8}"
        np.testing.assert_array_equal(row.view(unsigned), np.array([w % 2**width for w in want], unsigned), err_msg=name)


@pytest.mark.parametrize("stem,src,dst", [("int2float", "int32", "fp32"), ("uint2float", "uint32", "fp32"),
                                          ("ll2float", "int64", "fp32"), ("ull2float", "uint64", "fp32"),
                                          ("ll2double", "int64", "fp64"), ("ull2double", "uint64", "fp64")])
def test_int_to_float(arrays, stem: str, src: str, dst: str) -> None:
    x = int_values(src, 200)
    got = apply(arrays, [f"{stem}_{m}" for m in MODES], [x], FT[dst])
    for row, mode in zip(got, MODES):
        same_bits(row, [exact_round(Fraction(int(v)), FT[dst], mode) for v in x], f"{stem}_{mode}")
    if src in ("int32", "uint32"):
        name = "int2double_rn" if src == "int32" else "uint2double_rn"
        same_bits(apply(arrays, [name], [x], np.float64)[0], x.astype(np.float64), name)


def test_double_to_float(arrays) -> None:
    x = np.concatenate([float_edges(np.float64), random_floats(np.float64, 200),
                        (RNG.standard_normal(100) * np.exp2(RNG.integers(-160, 140, 100)))])
    got = apply(arrays, [f"double2float_{m}" for m in MODES], [x], np.float32)
    for row, mode in zip(got, MODES):
        want = [np.float32(v) if not math.isfinite(v) or v == 0 else exact_round(Fraction(float(v)), np.float32, mode)
                for v in x]
        same_bits(row, want, f"double2float_{mode}")


# ----------------------------------------------------------------- integer and bit functions


def wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _clz(v: int, bits: int) -> int:
    return bits - (v & ((1 << bits) - 1)).bit_length()


def _brev(v: int, bits: int) -> int:
    return wrap(int(format(v & ((1 << bits) - 1), f"0{bits}b")[::-1], 2), bits, True)


def _byte_perm(x: int, y: int, s: int) -> int:
    pool = ((y & 0xFFFFFFFF) << 32) | (x & 0xFFFFFFFF)
    return wrap(sum(((pool >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n) for n in range(4)), 32, True)


def _mul24(x: int, y: int, signed: bool) -> int:
    low = (lambda v: ((v & 0xFFFFFF) ^ 0x800000) - 0x800000) if signed else (lambda v: v & 0xFFFFFF)
    return wrap(low(x) * low(y), 32, signed)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_bit_counting_and_reversal(arrays, dtype: str) -> None:
    x = int_values(dtype, 300)
    bits = np.dtype(dtype).itemsize * 8
    got = apply(arrays, ["clz", "popc", "ffs"], [x], np.int32)
    np.testing.assert_array_equal(got[0], [_clz(int(v), bits) for v in x], "clz")
    np.testing.assert_array_equal(got[1], [bin(int(v) & ((1 << bits) - 1)).count("1") for v in x], "popc")
    np.testing.assert_array_equal(got[2], [(int(v) & -int(v)).bit_length() for v in x], "ffs")
    got = apply(arrays, ["brev", "abs"], [x], dtype)
    np.testing.assert_array_equal(got[0], np.array([_brev(int(v), bits) for v in x], dtype), "brev")
    np.testing.assert_array_equal(got[1], np.array([wrap(abs(int(v)), bits, True) for v in x], dtype), "abs")


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_halving_adds_mulhi_mul24(arrays, dtype: str) -> None:
    x, y = int_values(dtype, 300), np.roll(int_values(dtype, 300), 5)
    signed = dtype == "int32"
    got = apply(arrays, ["hadd", "rhadd", "mulhi", "mul24"], [x, y], dtype)
    pairs = [(int(a), int(b)) for a, b in zip(x, y)]
    refs = {"hadd": [(a + b) >> 1 for a, b in pairs], "rhadd": [(a + b + 1) >> 1 for a, b in pairs],
            "mulhi": [wrap((a * b) >> 32, 32, signed) for a, b in pairs],
            "mul24": [_mul24(a, b, signed) for a, b in pairs]}
    for row, (name, want) in zip(got, refs.items()):
        np.testing.assert_array_equal(row, np.array(want, dtype), name)


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_mulhi_64(arrays, dtype: str) -> None:
    x, y = int_values(dtype, 300), np.roll(int_values(dtype, 300), 3)
    got = apply(arrays, ["mulhi"], [x, y], dtype)[0]
    np.testing.assert_array_equal(got, np.array([wrap((int(a) * int(b)) >> 64, 64, dtype == "int64")
                                                 for a, b in zip(x, y)], dtype))


def test_byte_perm_and_sad(arrays) -> None:
    x, y = int_values("int32", 200), np.roll(int_values("int32", 200), 1)
    sel = np.concatenate([np.array([0x3210, 0x7654, 0x0123, 0x4444, 0x8888, 0xBA98, 0xFFFF, 0x7531], np.int32),
                          RNG.integers(-(2**31), 2**31, len(x) - 8).astype(np.int32)])
    got = apply(arrays, ["byte_perm"], [x, y, sel], np.int32)[0]
    np.testing.assert_array_equal(got, [_byte_perm(int(a), int(b), int(c)) for a, b, c in zip(x, y, sel)])
    z = np.resize(int_values("uint32", 200), len(x))
    got = apply(arrays, ["sad"], [x, y, z], np.int32)[0]
    np.testing.assert_array_equal(got, [wrap(abs(int(a) - int(b)) + int(c), 32, True) for a, b, c in zip(x, y, z)])
    ux, uy = x.view(np.uint32), y.view(np.uint32)
    got = apply(arrays, ["sad"], [ux, uy, z], np.uint32)[0]
    np.testing.assert_array_equal(got, [wrap(abs(int(a) - int(b)) + int(c), 32, False) for a, b, c in zip(ux, uy, z)])


# ---------------------------------------------------------------- float functions


def _round_half_away(x: float) -> float:
    if not math.isfinite(x):
        return x
    t = math.trunc(x)
    r = t + (1 if x > 0 else -1) if abs(Fraction(x) - t) >= Fraction(1, 2) else t
    return math.copysign(float(r), x)


def _rsqrt_rn(x: float) -> np.float32:
    if math.isnan(x) or x < 0:
        return np.float32(np.nan)
    if x == 0:
        return np.float32(math.copysign(np.inf, x))
    if math.isinf(x):
        return np.float32(0.0)
    q, inf = Fraction(x), np.float32(np.inf)
    c = np.float32(1 / math.sqrt(x))
    while _f(c) ** 2 * q > 1:
        c = np.nextafter(c, -inf)
    while _f(np.nextafter(c, inf)) ** 2 * q <= 1:
        c = np.nextafter(c, inf)
    hi = np.nextafter(c, inf)
    mid = (_f(c) + _f(hi)) / 2
    return c if mid * mid * q > 1 else hi  # the true value is below the midpoint iff mid^2 * x > 1


def _ilogb(x: float) -> int:
    if math.isnan(x) or x == 0:
        return -(2**31)
    return 2**31 - 1 if math.isinf(x) else math.frexp(x)[1] - 1


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_rounding_to_integers(arrays, dtype: str) -> None:
    ft = FT[dtype]
    x = np.concatenate([float_edges(ft), random_floats(ft, 200), np.arange(-6, 6.5, 0.25).astype(ft),
                        np.array([0.49999997, -0.49999997, 2.0**52 + 1, 2.0**23 + 1, 2**23 - 0.5], ft)])
    names = ["floor", "ceil", "trunc", "rint", "nearbyint", "round", "abs"]
    got = apply(arrays, names, [x], ft)
    refs = [np.floor(x), np.ceil(x), np.trunc(x), np.rint(x), np.rint(x), [_round_half_away(float(v)) for v in x],
            np.abs(x)]
    for row, name, want in zip(got, names, refs):
        same_bits(row, np.array(want, ft), name)
    got = apply(arrays, ["llrint", "llround"], [x], np.int64)
    nan = -(2**63)
    np.testing.assert_array_equal(got[0], [_to_int_ref(float(v), "rn", 64, True, nan) for v in x], "llrint")
    np.testing.assert_array_equal(got[1], [_to_int_ref(_round_half_away(float(v)), "rz", 64, True, nan) for v in x],
                                  "llround")


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_classification_and_exponents(arrays, dtype: str) -> None:
    ft = FT[dtype]
    x = np.concatenate([float_edges(ft), random_floats(ft, 200)])
    finite = "finitef" if dtype == "fp32" else "isfinited"
    got = apply(arrays, ["isnan", "isinf", "signbit", finite, "ilogb"], [x], np.int32)
    np.testing.assert_array_equal(got[0], np.isnan(x), "isnan")
    np.testing.assert_array_equal(got[1], np.isinf(x), "isinf")
    np.testing.assert_array_equal(got[2], np.signbit(x), "signbit")
    np.testing.assert_array_equal(got[3], np.isfinite(x), finite)
    np.testing.assert_array_equal(got[4], [_ilogb(float(v)) for v in x], "ilogb")
    logb = [np.nan if math.isnan(v) else -np.inf if v == 0 else np.inf if math.isinf(v) else _ilogb(v)
            for v in map(float, x)]
    same_bits(apply(arrays, ["logb"], [x], ft)[0], np.array(logb, ft), "logb")


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_two_argument_float_functions(arrays, dtype: str) -> None:
    ft = FT[dtype]
    a, b = float_pairs(ft, 150)
    names = ["copysign", "nextafter", "fdim", "fmod", "remainder"]
    got = apply(arrays, names, [a, b], ft)

    def fdim(x, y):
        return x + y if math.isnan(x) or math.isnan(y) else (np.array(x, ft) - np.array(y, ft)) if x > y else 0.0

    def remainder(x, y):
        return np.nan if math.isinf(x) or y == 0 or math.isnan(x) or math.isnan(y) else math.remainder(x, y)

    refs = {"copysign": np.copysign(a, b), "nextafter": np.nextafter(a, b),
            "fdim": references(lambda x, y: fdim(float(x), float(y)), [a, b], ft), "fmod": np.fmod(a, b),
            "remainder": references(lambda x, y: remainder(float(x), float(y)), [a, b], ft)}
    for row, name in zip(got, names):
        same_bits(row, refs[name], name)


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_ldexp_scalbn(arrays, dtype: str) -> None:
    ft = FT[dtype]
    x = np.concatenate([float_edges(ft), random_floats(ft, 100)])
    x = np.repeat(x, 4)
    emax = 128 if dtype == "fp32" else 1024
    n = np.concatenate([np.array([0, 1, -1, emax, -emax, 2 * emax, -2 * emax - 60, 2**31 - 1, -(2**31), 3000,
                                  -3000, 149, -149, 1074, -1075], np.int32),
                        RNG.integers(-3 * emax, 3 * emax, len(x) - 15).astype(np.int32)])

    def ref(v, k):
        v = float(v)
        if not math.isfinite(v) or v == 0:
            return v
        return exact_round(Fraction(v) * Fraction(2) ** int(np.clip(k, -5000, 5000)), ft, "rn")

    got = apply(arrays, ["ldexp", "scalbn"], [x, n], ft)
    want = references(ref, [x, n], ft)
    same_bits(got[0], want, "ldexp")
    same_bits(got[1], want, "scalbn")


def test_fp32_only_functions(arrays) -> None:
    x = np.concatenate([float_edges(np.float32), random_floats(np.float32, 300),
                        np.abs(random_floats(np.float32, 300)), np.linspace(0, 2, 41, dtype=np.float32)])
    got = apply(arrays, ["saturatef", "rsqrt_rn"], [x], np.float32)
    sat = [0.0 if math.isnan(v) or v <= 0 else min(v, 1.0) for v in map(float, x)]
    same_bits(got[0], np.array(sat, np.float32), "saturatef")
    same_bits(got[1], np.array([_rsqrt_rn(float(v)) for v in x], np.float32), "rsqrt_rn")


def test_bit_reinterpretation(arrays) -> None:
    i32 = int_values("int32", 100)
    same_bits(apply(arrays, ["int_as_float"], [i32], np.float32)[0], i32.view(np.float32), "int_as_float")
    same_bits(apply(arrays, ["uint_as_float"], [i32.view(np.uint32)], np.float32)[0], i32.view(np.float32),
              "uint_as_float")
    f = random_floats(np.float32, 100)
    got = apply(arrays, ["float_as_int", "float_as_uint"], [f], np.int32)
    np.testing.assert_array_equal(got[0], f.view(np.int32))
    np.testing.assert_array_equal(got[1], f.view(np.int32))
    d = random_floats(np.float64, 100)
    np.testing.assert_array_equal(apply(arrays, ["double_as_longlong"], [d], np.int64)[0], d.view(np.int64))
    got = apply(arrays, ["double2loint", "double2hiint"], [d], np.int32)
    np.testing.assert_array_equal(got[0], d.view(np.int32)[0::2])
    np.testing.assert_array_equal(got[1], d.view(np.int32)[1::2])
    same_bits(apply(arrays, ["longlong_as_double"], [d.view(np.int64)], np.float64)[0], d, "longlong_as_double")
    same_bits(apply(arrays, ["hiloint2double"], [d.view(np.int32)[1::2].copy(), d.view(np.int32)[0::2].copy()],
                    np.float64)[0], d, "hiloint2double")


# ---------------------------------------------------------------- approximate units


def test_fast_functions_within_their_bounds(arrays) -> None:
    x = np.concatenate([np.linspace(-np.pi, np.pi, 301), RNG.uniform(-3, 3, 200)]).astype(np.float32)
    pos = np.concatenate([np.exp2(RNG.uniform(-100, 100, 300)), RNG.uniform(0.5, 2, 200)]).astype(np.float32)
    x64, p64 = x.astype(np.float64), pos.astype(np.float64)
    got = apply(arrays, ["fast_sinf", "fast_cosf", "fast_tanhf", "fast_expf", "fast_exp10f"], [x], np.float32)
    assert np.abs(got[0] - np.sin(x64)).max() <= 2.0**-20.5
    assert np.abs(got[1] - np.cos(x64)).max() <= 2.0**-20.5
    assert (np.abs(got[2] - np.tanh(x64)) <= 2.0**-10.98 * np.abs(np.tanh(x64)) + 2.0**-126).all()
    for row, base, scale in ((got[3], np.e, 2.0**-24), (got[4], 10.0, 2.0**-22)):
        ref = base ** x64
        assert (np.abs(row - ref) <= (2.0**-22 + np.abs(x64) * scale) * ref * 1.5).all()
    small = np.abs(x64) <= np.pi / 4
    tan = apply(arrays, ["fast_tanf"], [x], np.float32)[0]
    assert (np.abs(tan - np.tan(x64))[small] <= 2.0**-19 * np.abs(np.tan(x64))[small] + 2.0**-21).all()
    got = apply(arrays, ["fast_log2f", "fast_logf", "fast_log10f"], [pos], np.float32)
    near = (p64 >= 0.5) & (p64 <= 2)
    for row, fn, k in zip(got, (np.log2, np.log, np.log10), (1.0, math.log(2), math.log10(2))):
        err = np.abs(row - fn(p64))
        assert (err[near] <= 2.0**-22 * k * 2).all() and (err[~near] <= 2.0**-22 * np.abs(fn(p64))[~near] * 2).all()
    y = RNG.uniform(-4, 4, len(pos)).astype(np.float32)
    powf = apply(arrays, ["fast_powf"], [pos, y], np.float32)[0]
    ref = p64 ** y.astype(np.float64)
    t = np.abs(y * np.log2(p64))
    ok = (ref > 1e-30) & (ref < 1e30)
    assert (np.abs(powf - ref)[ok] <= (2.0**-21 * (1 + t) * ref)[ok]).all()


@pytest.mark.parametrize("dtype,rtol", [("fp32", 2.0**-21), ("fp64", 2.0**-51)])
def test_exp2_and_rsqrt_are_tl_exp2_and_tl_rsqrt(arrays, dtype: str, rtol: float) -> None:
    ft = FT[dtype]
    x = RNG.uniform(-100, 100, 256).astype(ft)
    pos = np.exp2(RNG.uniform(-100, 100, 256)).astype(ft)
    got = apply(arrays, ["exp2"], [x], ft)[0]
    np.testing.assert_allclose(got, np.exp2(x.astype(np.float64)), rtol=rtol)
    got = apply(arrays, ["rsqrt"], [pos], ft)[0]
    np.testing.assert_allclose(got, 1 / np.sqrt(pos.astype(np.float64)), rtol=rtol)


def test_fast_dividef_and_rcp64h(arrays) -> None:
    x = np.concatenate([RNG.uniform(-10, 10, 200), [1.0, np.inf, -1.0, 0.0]]).astype(np.float32)
    y = np.concatenate([np.exp2(RNG.uniform(-120, 120, 200)) * RNG.choice([-1, 1], 200),
                        [2.0**127, 2.0**127, 3e38, 2.0**127]]).astype(np.float32)
    got = apply(arrays, ["fast_dividef"], [x, y], np.float32)[0]
    ref = x.astype(np.float64) / y
    normal = np.abs(y) <= 2.0**126
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert (np.abs(got - ref)[normal] <= 2 * ulp[normal]).all()
    huge = ~normal
    assert np.isnan(got[huge & np.isinf(x)]).all() and (got[huge & np.isfinite(x)] == 0).all()
    d = np.concatenate([random_floats(np.float64, 200), [1.0, -3.0, 2.0**-1030, 0.0, np.inf]])
    r = apply(arrays, ["rcp64h"], [d], np.float64)[0]
    assert ((r.view(np.uint64) & np.uint64(0xFFFFFFFF)) == 0).all()  # only the high word is computed
    ok = np.isfinite(d) & (np.abs(d) > 2.0**-1020) & (np.abs(d) < 2.0**1020)
    assert (np.abs(r * d - 1)[ok] <= 2.0**-19).all()
    assert np.isinf(r[-3]) and np.isinf(r[-2]) and r[-1] == 0  # subnormal input flushed: 1/0


# ------------------------------------------------------------------ arguments and errors


@tile.jit
def mixed_kernel(x_ptr, u_ptr, out_ptr, uout_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    u = tl.load(u_ptr + offs)
    tl.store(out_ptr + offs, libdevice.add_ru(x, 1.0) + libdevice.ldexp(x, 3) + libdevice.copysign(2, x))
    tl.store(uout_ptr + offs, libdevice.mulhi(u, 3000000000) + libdevice.clz(7))


def test_python_numbers_take_the_signature_dtype(arrays) -> None:
    x = np.array([1.0, -2.0, 2.0**-30, 3.0], np.float32)
    u = np.array([1, 2**31, 2**32 - 1, 5], np.uint32)
    out, uout = arrays.put(poison(4, np.float32)), arrays.put(poison(4, np.uint32))
    mixed_kernel[(1,)](arrays.put(x), arrays.put(u), out, uout, BLOCK=4)
    up = [exact_round(Fraction(float(v)) + 1, np.float32, "ru") for v in x]
    same_bits(arrays.get(out), np.array(up, np.float32) + x * 8 + np.copysign(2, x), "mixed")
    np.testing.assert_array_equal(arrays.get(uout), [(int(v) * 3000000000 >> 32) + 29 for v in u])


@tile.jit
def wrong_dtype_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), libdevice.clz(x))  # bad clz


@tile.jit
def fp32_only_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), libdevice.rsqrt_rn(x))  # bad rsqrt_rn


@tile.jit
def not_a_value_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), libdevice.add_rz(x, "one"))  # bad add_rz


@pytest.mark.parametrize("kernel,x,marker,message", [
    (wrong_dtype_kernel, np.zeros(4, np.float32), "bad clz",
     "libdevice.clz takes (tl.int32) or (tl.int64); got (a block [4] of tl.float32)"),
    (fp32_only_kernel, np.zeros(4, np.float64), "bad rsqrt_rn",
     "libdevice.rsqrt_rn takes (tl.float32); got (a block [4] of tl.float64)"),
    (not_a_value_kernel, np.zeros(4, np.float32), "bad add_rz", "libdevice.add_rz: arguments are tensors or numbers"),
])
def test_wrong_arguments_name_the_line_and_the_signatures(kernel, x, marker, message) -> None:
    spec, _ = kernel.specialize((x,), {"BLOCK": 4})
    with pytest.raises(tile.CompilationError) as info:
        kernel.build_ir(spec)
    err = info.value
    source = open(__file__).read().splitlines()
    assert err.file == __file__ and source[err.line - 1].rstrip().endswith(f"# {marker}"), str(err)
    assert message in err.message, str(err)
