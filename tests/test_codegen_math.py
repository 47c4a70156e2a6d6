"""math_lib: the accuracy stated in its docstring, measured on a NumPy evaluation of the same
steps; and the lowered math ops (f16, f32, f64), run as PTX on tile.emulator, agree with it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from codegen_util import blocked, check_ptx, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.codegen import math_lib
from tile.ir.types import f32, f64
from tile.runtime.interp_rounding import rounded_fma

RNG = np.random.default_rng(4)


class NumpyMath:
    """math_lib's operations evaluated with NumPy in f32 or f64 (the .approx units exact)."""

    def __init__(self, bits: int):
        self.bits = bits
        self.t = np.float32 if bits == 32 else np.float64

    def c(self, x): return self.t(x)  # noqa: E704
    def add(self, a, b): return self.t(a) + self.t(b)  # noqa: E704
    def sub(self, a, b): return self.t(a) - self.t(b)  # noqa: E704
    def mul(self, a, b): return self.t(a) * self.t(b)  # noqa: E704
    def div(self, a, b): return self.t(a) / self.t(b)  # noqa: E704
    def neg(self, a): return -a  # noqa: E704
    def abs(self, a): return np.abs(a)  # noqa: E704
    def sqrt(self, a): return np.sqrt(a)  # noqa: E704
    def floor(self, a): return np.floor(a)  # noqa: E704
    def rint(self, a): return np.rint(a)  # noqa: E704
    def trunc(self, a): return np.trunc(a)  # noqa: E704
    def fmax(self, a, b): return np.fmax(a, b)  # noqa: E704
    def fmin(self, a, b): return np.fmin(a, b)  # noqa: E704
    def select(self, p, a, b): return np.where(p, a, b).astype(self.t)  # noqa: E704
    def lt(self, a, b): return a < b  # noqa: E704
    def le(self, a, b): return a <= b  # noqa: E704
    def gt(self, a, b): return a > b  # noqa: E704
    def ge(self, a, b): return a >= b  # noqa: E704
    def eq(self, a, b): return a == b  # noqa: E704
    def ne(self, a, b): return a != b  # noqa: E704
    def isnan(self, a): return np.isnan(a)  # noqa: E704
    def and_(self, p, q): return p & q  # noqa: E704
    def or_(self, p, q): return p | q  # noqa: E704
    def copysign(self, a, b): return np.copysign(a, b)  # noqa: E704

    def fma(self, a, b, c):
        t = f32 if self.bits == 32 else f64
        return rounded_fma(np.asarray(a), np.asarray(b), np.asarray(c), t, "rn").astype(self.t)

    def approx(self, fn, x):
        x64 = np.asarray(x, np.float64)
        f = {"ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "rsqrt": lambda v: 1 / np.sqrt(v)}[fn]
        r = f(x64).astype(np.float32)
        return np.where(np.abs(r) < 2.0 ** -126, np.float32(0), r) if fn == "ex2" else r

    def pow2(self, k):
        return np.ldexp(self.t(1), np.asarray(k).astype(np.int64)).astype(self.t)

    def frexp(self, x):
        m, e = np.frexp(x)
        return (2 * m).astype(self.t), (e - 1).astype(self.t)


def _eval(fn, bits: int, *args):
    m = NumpyMath(bits)
    with np.errstate(all="ignore"):
        return fn(m, *[np.asarray(a, m.t) for a in args])


def _ulps(got, ref, t) -> np.ndarray:
    ref = np.asarray(ref, np.float64)
    return np.abs(np.asarray(got, np.float64) - ref) / np.spacing(np.abs(ref).astype(t)).astype(np.float64)


REF = {name: np.vectorize(getattr(math, name)) for name in ("exp", "log", "sin", "cos", "erf", "log2")}
REF["exp2"] = np.vectorize(lambda v: 2.0 ** v)


def test_f32_exp_and_exp2() -> None:
    x = RNG.uniform(-85, 85, 20000)
    x32 = x.astype(np.float32)
    got = _eval(math_lib.exp, 32, x32)
    rel = np.abs(got - REF["exp"](x32.astype(np.float64))) / REF["exp"](x32.astype(np.float64))
    assert (rel <= 2.0 ** -21 * (1 + np.abs(x32))).all()
    got2 = _eval(math_lib.exp2, 32, x32)
    assert (_ulps(got2, REF["exp2"](x32.astype(np.float64)), np.float32) <= 0.5).all()
    assert _eval(math_lib.exp, 32, np.float32(-100.0)) == 0.0  # below 2^-126: flushed


def test_f32_log() -> None:
    x = np.exp(RNG.uniform(-80, 80, 20000)).astype(np.float32)
    ref = REF["log"](x.astype(np.float64))
    err = np.abs(_eval(math_lib.log, 32, x) - ref)
    near_one = (x >= 0.5) & (x <= 2)
    assert (err[near_one] <= 2.0 ** -21).all() and (err[~near_one] / np.abs(ref[~near_one]) <= 2.0 ** -21).all()


@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_f32_sin_cos_reduction(fn: str) -> None:
    x = np.concatenate([RNG.uniform(-10, 10, 5000), RNG.uniform(-65536, 65536, 5000)]).astype(np.float32)
    err = np.abs(_eval(getattr(math_lib, fn), 32, x) - REF[fn](x.astype(np.float64)))
    assert err.max() <= 2.0 ** -22  # reduction error; the sin/cos.approx unit adds its 2^-20.5


def test_f32_erf() -> None:
    x = np.concatenate([RNG.uniform(-5, 5, 20000), np.linspace(-1.01, 1.01, 2001)]).astype(np.float32)
    err = np.abs(_eval(math_lib.erf, 32, x) - REF["erf"](x.astype(np.float64)))
    assert err.max() <= 2.5e-7
    assert np.isnan(_eval(math_lib.erf, 32, np.float32(np.nan)))


@pytest.mark.parametrize("fn,lo,hi,bound", [("exp", -745, 709, 2), ("exp2", -1074, 1023, 2), ("log", -700, 700, 2),
                                             ("log2", -700, 700, 3)])
def test_f64_exp_log(fn: str, lo: float, hi: float, bound: float) -> None:
    if fn.startswith("log"):
        x = np.exp(RNG.uniform(lo, hi, 4000))
        x = np.concatenate([x, [5e-324, 2.5e-310, 1.0, 0.9999999999999999, 1.0000000000000002]])
    else:
        x = np.concatenate([RNG.uniform(lo, hi, 4000), RNG.uniform(-1, 1, 1000)])
    got = _eval(getattr(math_lib, fn), 64, x)
    assert _ulps(got, REF[fn](x), np.float64).max() <= bound


def test_f64_specials() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 800.0, -800.0, -1.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_eval(math_lib.exp, 64, x), np.exp(x))
        np.testing.assert_array_equal(_eval(math_lib.log, 64, x), np.log(x))
        np.testing.assert_array_equal(_eval(math_lib.erf, 64, x[:5]), [1, -1, np.nan, 0, -0.0])


@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_f64_sin_cos(fn: str) -> None:
    x = np.concatenate([RNG.uniform(-10, 10, 2000), RNG.uniform(-1e5, 1e5, 2000), [0.0, 1e-300, np.pi / 2]])
    err = np.abs(_eval(getattr(math_lib, fn), 64, x) - REF[fn](x))
    assert err.max() <= 2.0 ** -52


def test_f64_erf() -> None:
    x = np.concatenate([RNG.uniform(-7, 7, 2000), np.linspace(-6.1, 6.1, 1001), [1e-300, 1e-10]])
    assert _ulps(_eval(math_lib.erf, 64, x), REF["erf"](x), np.float64).max() <= 4


@pytest.mark.parametrize("bits", [32, 64])
def test_fmod_is_exact(bits: int) -> None:
    t = np.float32 if bits == 32 else np.float64
    span = 120 if bits == 32 else 1000
    x = (RNG.standard_normal(1000) * 2.0 ** RNG.integers(-span, span, 1000)).astype(t)
    y = (RNG.standard_normal(1000) * 2.0 ** RNG.integers(-span, span, 1000)).astype(t)
    x[:6] = [1.0, -5.5, 0.0, np.inf, 3.0, -0.0]
    y[:6] = [0.0, 2.0, 3.0, 1.0, np.inf, 1.0]
    work = 64  # f32 runs in f64, as the lowering does
    got = _eval(lambda m, a, b: math_lib.fmod(m, a, b, math_lib.FMOD_STEPS[bits]), work, x.astype(np.float64),
                y.astype(np.float64)).astype(t)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.fmod(x, y))
        assert (np.signbit(got) == np.signbit(np.fmod(x, y)))[~np.isnan(got)].all()


# ------------------------------------------------------------------------------ lowered math ops

FUNCS = ["exp", "exp2", "log", "log2", "sin", "cos", "erf", "sqrt", "rsqrt", "floor", "ceil", "abs"]


def math_kernel(dt: str, n: int = 128) -> str:
    L = blocked([4], [32], [1])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    lines = [f"  %r = tt.arange {{end = {n}, start = 0}} : {T('i32')}",
             f"  %xs = tt.splat %x : {T(f'ptr<{dt}>')}", f"  %xp = tt.addptr %xs, %r : {T(f'ptr<{dt}>')}",
             f"  %v = tt.load %xp : {T(dt)}", f"  %ys = tt.splat %y : {T(f'ptr<{dt}>')}",
             f"  %yp = tt.addptr %ys, %r : {T(f'ptr<{dt}>')}", f"  %w = tt.load %yp : {T(dt)}",
             f"  %rem = arith.rem %v, %w : {T(dt)}", f"  %fm = math.fma %v, %w, %v : {T(dt)}"]
    params = [("x", f"ptr<{dt}>"), ("y", f"ptr<{dt}>")]
    outs = [f"math.{f}" for f in FUNCS] + ["rem", "fma"]
    for k, name in enumerate(outs):
        val = f"%m{k}"
        if name.startswith("math."):
            lines.append(f"  {val} = {name} %v : {T(dt)}")
        else:
            val = "%rem" if name == "rem" else "%fm"
        params.append((f"o{k}", f"ptr<{dt}>"))
        p = f"ptr<{dt}>"
        lines += [f"  %os{k} = tt.splat %o{k} : {T(p)}", f"  %op{k} = tt.addptr %os{k}, %r : {T(p)}",
                  f"  tt.store %op{k}, {val}"]
    return func("mathops", params, "\n".join(lines), num_warps=1)


def _emulated(name: str, bits: int, x, y):
    lib = {"exp": math_lib.exp, "exp2": math_lib.exp2, "log": math_lib.log, "log2": math_lib.log2,
           "sin": math_lib.sin, "cos": math_lib.cos, "erf": math_lib.erf, "rsqrt": math_lib.rsqrt}
    t = np.float32 if bits == 32 else np.float64
    if name in lib:
        return _eval(lib[name], bits, x)
    if name == "rem":
        steps = math_lib.FMOD_STEPS[bits]
        return _eval(lambda m, a, b: math_lib.fmod(m, a, b, steps), 64, x.astype(np.float64),
                     y.astype(np.float64)).astype(t)
    if name == "fma":
        return NumpyMath(bits).fma(x, y, x)
    with np.errstate(invalid="ignore"):
        return {"sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "abs": np.abs}[name](x).astype(t)


@pytest.mark.parametrize("dt", ["f32", "f64", "f16"])
def test_lowered_math_matches_the_library(dt: str) -> None:
    np_t = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dt]
    n = 128
    x = np.abs(RNG.standard_normal(n) * 4).astype(np_t) + np_t(0.25)
    x[::3] *= -1
    y = (RNG.standard_normal(n) * 3).astype(np_t)
    simt = lower(math_kernel(dt, n))
    outs = [np.full(n, np.nan, np_t) for _ in range(len(FUNCS) + 2)]
    m, d = run(simt, (1,), [x, y] + outs)
    bits = 64 if dt == "f64" else 32
    wide = np.float64 if dt == "f64" else np.float32
    for k, name in enumerate(FUNCS + ["rem", "fma"]):
        got = result(m, d[k + 2], outs[k])
        with np.errstate(over="ignore"):
            want = _emulated(name, bits, x.astype(wide), y.astype(wide)).astype(np_t)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} on {dt}")


@needs_ptxas
@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
def test_math_assembles(dt: str) -> None:
    info = check_ptx(lower(math_kernel(dt)))
    assert all(i.spill_stores == 0 for i in info.values())
