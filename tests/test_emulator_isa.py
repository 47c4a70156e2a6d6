"""tile.emulator's instruction families against a model of the PTX ISA text, over random
operands (hypothesis): integer arithmetic wraps, shifts clamp, division truncates, setp/selp
compare as typed, cvt rounds as the block interpreter's conversions do."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.emulator import run_ptx
from tile.ir.types import bf16, f8e4nv, f8e5, f16, f32, f64, i32
from tile.runtime.interp_dtypes import cast, from_bits, to_bits

THREADS = 64
SETTINGS = settings(max_examples=15, deadline=None)
EDGE = [0, 1, 2, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE]
words = st.lists(st.one_of(st.sampled_from(EDGE), st.integers(0, 2**32 - 1)), min_size=THREADS, max_size=THREADS)

TEMPLATE = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 out)
.maxntid 64, 1, 1
{{
.reg .b32 %r<8>;
.reg .b64 %rd<10>;
.reg .pred %p<4>;
.reg .f32 %f<4>;
.reg .b16 %rs<4>;
ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [b];
ld.param.u64 %rd3, [out];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd5, %rd1, %rd4;
add.s64 %rd6, %rd2, %rd4;
add.s64 %rd7, %rd3, %rd4;
ld.global.b32 %r2, [%rd5];
ld.global.b32 %r3, [%rd6];
{body}
st.global.b32 [%rd7], %r4;
ret;
}}
"""


def run(body: str, a, b) -> np.ndarray:
    out = np.full(THREADS, 0xDEADBEEF, np.uint32)
    run_ptx(TEMPLATE.format(body=body), (1,), [np.array(a, np.uint32), np.array(b, np.uint32), out])
    return out


def s32(x: int) -> int:
    return x - (1 << 32) if x >> 31 else x


def trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def shl(x: int, n: int) -> int:
    return 0 if n >= 32 else x << n


def shr_s(x: int, n: int) -> int:
    return s32(x) >> min(n, 31)


MODELS = {
    "add.s32 %r4, %r2, %r3;": lambda x, y: x + y,
    "sub.s32 %r4, %r2, %r3;": lambda x, y: x - y,
    "mul.lo.s32 %r4, %r2, %r3;": lambda x, y: x * y,
    "mul.hi.s32 %r4, %r2, %r3;": lambda x, y: (s32(x) * s32(y)) >> 32,
    "mul.hi.u32 %r4, %r2, %r3;": lambda x, y: (x * y) >> 32,
    "and.b32 %r4, %r2, %r3;": lambda x, y: x & y,
    "or.b32 %r4, %r2, %r3;": lambda x, y: x | y,
    "xor.b32 %r4, %r2, %r3;": lambda x, y: x ^ y,
    "not.b32 %r4, %r2;": lambda x, y: ~x,
    "and.b32 %r5, %r3, 63;\nshl.b32 %r4, %r2, %r5;": lambda x, y: shl(x, y & 63),
    "and.b32 %r5, %r3, 63;\nshr.u32 %r4, %r2, %r5;": lambda x, y: 0 if (y & 63) >= 32 else x >> (y & 63),
    "and.b32 %r5, %r3, 63;\nshr.s32 %r4, %r2, %r5;": lambda x, y: shr_s(x, y & 63),
    "or.b32 %r5, %r3, 1;\ndiv.s32 %r4, %r2, %r5;": lambda x, y: trunc_div(s32(x), s32(y | 1)),
    "or.b32 %r5, %r3, 1;\nrem.s32 %r4, %r2, %r5;": lambda x, y: s32(x) - trunc_div(s32(x), s32(y | 1)) * s32(y | 1),
    "or.b32 %r5, %r3, 1;\ndiv.u32 %r4, %r2, %r5;": lambda x, y: x // (y | 1),
    "min.s32 %r4, %r2, %r3;": lambda x, y: min(s32(x), s32(y)),
    "max.u32 %r4, %r2, %r3;": lambda x, y: max(x, y),
    "neg.s32 %r4, %r2;": lambda x, y: -x,
    "abs.s32 %r4, %r2;": lambda x, y: abs(s32(x)),
    "popc.b32 %r4, %r2;": lambda x, y: bin(x).count("1"),
    "clz.b32 %r4, %r2;": lambda x, y: 32 - x.bit_length(),
    "brev.b32 %r4, %r2;": lambda x, y: int(f"{x:032b}"[::-1], 2),
    "bfe.u32 %r4, %r2, 5, 9;": lambda x, y: (x >> 5) & 0x1FF,
    "bfe.s32 %r4, %r2, 20, 12;": lambda x, y: ((x >> 20) & 0xFFF) - (0x1000 if (x >> 31) & 1 else 0),
    "prmt.b32 %r4, %r2, %r3, 0x5410;": lambda x, y: (x & 0xFFFF) | ((y & 0xFFFF) << 16),
    "mad.lo.s32 %r4, %r2, %r3, %r2;": lambda x, y: x * y + x,
    "mul24.lo.u32 %r4, %r2, %r3;": lambda x, y: (x & 0xFFFFFF) * (y & 0xFFFFFF),
    "setp.lt.s32 %p1, %r2, %r3;\nselp.b32 %r4, %r2, %r3, %p1;": lambda x, y: x if s32(x) < s32(y) else y,
    "setp.hi.u32 %p1, %r2, %r3;\nselp.b32 %r4, 1, 0, %p1;": lambda x, y: int(x > y),
    "setp.ne.b32 %p1, %r2, %r3;\nselp.b32 %r4, 7, 9, %p1;": lambda x, y: 7 if x != y else 9,
    "mul.wide.s32 %rd8, %r2, %r3;\nmov.b64 {%r5, %r4}, %rd8;": lambda x, y: (s32(x) * s32(y)) >> 32,
}


@pytest.mark.parametrize("body", list(MODELS))
@SETTINGS
@given(a=words, b=words)
def test_integer_instructions(body, a, b):
    got = run(body, a, b)
    expected = [MODELS[body](x, y) & 0xFFFFFFFF for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.array(expected, np.uint32))


floats = st.lists(st.one_of(st.floats(width=32, allow_nan=False), st.floats(-70000, 70000, width=32),
                            st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 1e-8, -1e-8, 2.5, -3.5, 1.0000001])),
                  min_size=THREADS, max_size=THREADS)
ROUNDING = {"rn": "rn", "rz": "rz", "rm": "rd", "rp": "ru"}


@pytest.mark.parametrize("mode", list(ROUNDING))
@pytest.mark.parametrize("dst", ["f16", "bf16"])
@SETTINGS
@given(x=floats)
def test_cvt_narrowing_rounds_as_the_interpreter(mode, dst, x):
    xs = np.array(x, np.float32)
    body = f"mov.b32 %f1, %r2;\ncvt.{mode}.{dst}.f32 %rs1, %f1;\ncvt.u32.u16 %r4, %rs1;"
    got = run(body, xs.view(np.uint32), np.zeros(THREADS, np.uint32))
    t = f16 if dst == "f16" else bf16
    expected = to_bits(cast(xs, f32, t, ROUNDING[mode]), t)
    np.testing.assert_array_equal(got, expected.astype(np.uint32))
    if mode == "rn" and dst == "f16":
        np.testing.assert_array_equal(got, xs.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
@SETTINGS
@given(x=floats)
def test_cvt_float_to_int_saturates_and_rounds(mode, x):
    xs = np.array(x, np.float32)
    got = run(f"mov.b32 %f1, %r2;\ncvt.{mode}.s32.f32 %r4, %f1;", xs.view(np.uint32), np.zeros(THREADS, np.uint32))
    rounded = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](xs.astype(np.float64))
    expected = np.clip(rounded, -2**31, 2**31 - 1).astype(np.int64)
    np.testing.assert_array_equal(got.view(np.int32), expected)
    np.testing.assert_array_equal(got.view(np.int32), cast(xs, f32, i32, {"rni": "rn", "rzi": "rz", "rmi": "rd",
                                                                          "rpi": "ru"}[mode]))


def _round_toward_zero(exact: Fraction) -> np.float32:
    """The float32 nearest `exact` in the direction of zero (for |exact| below the largest float32)."""
    r = np.float32(float(exact))
    while abs(Fraction(float(r))) > abs(exact):
        r = np.nextafter(r, np.float32(0))
    away = np.nextafter(r, np.float32(np.inf if exact > 0 else -np.inf))
    while exact != 0 and abs(Fraction(float(away))) <= abs(exact):
        r, away = away, np.nextafter(away, np.float32(np.inf if exact > 0 else -np.inf))
    return r


finite = st.lists(st.floats(-2.0**100, 2.0**100, width=32).map(lambda v: float(np.float32(v))), min_size=THREADS, max_size=THREADS)


@SETTINGS
@given(x=finite, y=finite)
def test_float_add_rounds_toward_zero_once(x, y):
    xs, ys = np.array(x, np.float32), np.array(y, np.float32)
    got = run("mov.b32 %f1, %r2;\nmov.b32 %f2, %r3;\nadd.rz.f32 %f3, %f1, %f2;\nmov.b32 %r4, %f3;",
              xs.view(np.uint32), ys.view(np.uint32)).view(np.float32)
    toward_zero = np.array([_round_toward_zero(Fraction(float(a)) + Fraction(float(b))) for a, b in zip(xs, ys)],
                           np.float32)
    np.testing.assert_array_equal(got, toward_zero)


def test_shfl_bfly_and_vote():
    body = ("shfl.sync.bfly.b32 %r5, %r2, 1, 31, -1;\nsetp.gt.u32 %p1, %r2, %r5;\n"
            "vote.sync.ballot.b32 %r6, %p1, -1;\nxor.b32 %r4, %r5, %r6;")
    a = np.random.default_rng(0).integers(0, 2**32, THREADS, dtype=np.uint32)
    got = run(body, a, np.zeros(THREADS, np.uint32))
    partner = a[np.arange(THREADS) ^ 1]
    ballots = np.zeros(THREADS, np.uint64)
    for w in range(THREADS // 32):
        lanes = slice(32 * w, 32 * w + 32)
        ballots[lanes] = sum(int(v) << i for i, v in enumerate(a[lanes] > partner[lanes]))
    np.testing.assert_array_equal(got, partner ^ ballots.astype(np.uint32))


def test_cvt_to_half_gives_the_canonical_nan():
    """A NaN narrowed to f16 or bf16 becomes 0x7FFF whatever its sign and payload, as on the GPU
    (what fp8 encoders that build on the f16 bits rely on)."""
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF] * (THREADS // 4), np.uint32)
    for dst in ("f16", "bf16"):
        got = run(f"mov.b32 %f1, %r2;\ncvt.rn.{dst}.f32 %rs1, %f1;\ncvt.u32.u16 %r4, %rs1;", nans,
                  np.zeros(THREADS, np.uint32))
        np.testing.assert_array_equal(got, np.full(THREADS, 0x7FFF, np.uint32))


def test_div_approx_flushes_the_reciprocal_of_huge_divisors():
    """div.approx.f32 is x * (1/y): for 2**126 < |y| the reciprocal is 0, so the quotient is a
    signed 0, or NaN for an infinite x; div.full.f32 stays accurate there."""
    x = np.tile(np.array([3.0, -5.0, np.inf, 1.0], np.float32), THREADS // 4)
    y = np.tile(np.array([-2.0**127, -2.0**127, 3e38, 8.0], np.float32), THREADS // 4)
    body = "mov.b32 %f1, %r2;\nmov.b32 %f2, %r3;\ndiv.{}.f32 %f3, %f1, %f2;\nmov.b32 %r4, %f3;"
    approx = run(body.format("approx"), x.view(np.uint32), y.view(np.uint32)).view(np.float32)
    np.testing.assert_array_equal(approx[:4], np.array([-0.0, 0.0, np.nan, 0.125], np.float32))
    assert np.signbit(approx[0]) and not np.signbit(approx[1])  # the sign of x * (+-0)
    full = run(body.format("full"), x.view(np.uint32), y.view(np.uint32)).view(np.float32)
    np.testing.assert_allclose(full[:4], x[:4].astype(np.float64) / y[:4], rtol=3e-7)


RCP64 = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 out)
.maxntid 32, 1, 1
{
.reg .b32 %r<2>;
.reg .b64 %rd<6>;
.reg .f64 %fd<3>;
ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 8;
add.s64 %rd4, %rd1, %rd3;
add.s64 %rd5, %rd2, %rd3;
ld.global.f64 %fd1, [%rd4];
rcp.approx.ftz.f64 %fd2, %fd1;
st.global.f64 [%rd5], %fd2;
ret;
}
"""


def test_rcp_approx_f64_computes_the_high_word_only():
    """rcp.approx.ftz.f64 gives the high 32 bits of 1/x (the low word is zero) and flushes a
    subnormal x to zero (1/x is then infinite)."""
    x = np.concatenate([np.random.default_rng(1).standard_normal(28) * 1e5, [3.0, -7.0, 2.0**-1030, np.inf]])
    out = np.full(32, np.nan)
    run_ptx(RCP64, (1,), [x, out])
    assert ((out.view(np.uint64) & np.uint64(0xFFFFFFFF)) == 0).all()
    np.testing.assert_allclose(out[:30] * x[:30], 1.0, rtol=2.0**-19)
    assert np.isinf(out[30]) and out[31] == 0


@pytest.mark.parametrize("pair,fp8", [("e4m3x2", f8e4nv), ("e5m2x2", f8e5)])
def test_cvt_widens_an_fp8_pair_into_a_half_pair(pair, fp8):
    """cvt.rn.f16x2.e4m3x2 d, a: byte i of the 16-bit source becomes half i of d (exact)."""
    a = np.random.default_rng(2).integers(0, 1 << 16, THREADS).astype(np.uint32)
    got = run(f"cvt.u16.u32 %rs1, %r2;\ncvt.rn.f16x2.{pair} %r4, %rs1;", a, np.zeros(THREADS, np.uint32))
    for shift in (0, 8):
        half = (got >> (2 * shift) & 0xFFFF).astype(np.uint16).view(np.float16)
        want = from_bits((a >> shift & 0xFF).astype(np.uint8), fp8).astype(np.float16)
        np.testing.assert_array_equal(half, want)  # NaN where the code is a NaN


def test_atom_add_bf16_rounds_to_nearest_even():
    """atom.add.noftz.bf16 leaves the bf16 sum rounded to nearest even (the differential test on
    the H200 found the emulator truncating: -20.625 + 0.1807 stored as -20.375, the GPU -20.5)."""
    rng = np.random.default_rng(5)
    old = (rng.standard_normal(THREADS) * 8).astype(np.float32)
    add = (rng.standard_normal(THREADS) * 0.5).astype(np.float32)
    old_bits, add_bits = to_bits(cast(old, f32, bf16), bf16), to_bits(cast(add, f32, bf16), bf16)
    old_bits[0], add_bits[0] = 49573, 15929
    high = rng.integers(0, 1 << 16, THREADS, dtype=np.uint32)
    body = ("mov.b32 {%rs1, %rs2}, %r3;\natom.global.add.noftz.bf16 %rs3, [%rd5], %rs1;\n"
            "ld.global.b32 %r4, [%rd5];")
    out = np.full(THREADS, 0xDEADBEEF, np.uint32)
    a = old_bits.astype(np.uint32) | (high << 16)
    run_ptx(TEMPLATE.format(body=body).replace("sm_80", "sm_90"), (1,), [a, add_bits.astype(np.uint32), out])
    exact = from_bits(old_bits, bf16).astype(np.float64) + from_bits(add_bits, bf16).astype(np.float64)
    np.testing.assert_array_equal(out & 0xFFFF, to_bits(cast(exact, f64, bf16), bf16).astype(np.uint32))
    np.testing.assert_array_equal(out >> 16, high)
    assert out[0] & 0xFFFF == to_bits(np.array([-20.5], np.float32), bf16)[0]
