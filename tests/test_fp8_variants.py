"""Triton's other fp8 formats, tl.float8e4b15 / float8e4b8 / float8e5b16, as storage types:
every code decoded to fp16/bf16/fp32/fp64, conversions from wider floats and integers
(round to nearest even with saturation and the NaN code for the fnuz formats; Triton's
clamp-and-round-half-away rule for e4b15), arithmetic rounded once per result, constants,
and dot (operands upcast to fp16). Kernels run on the interpreter, on tile.emulator
through the GPU lowering (sm_80 and sm_90a, where PTX has no instruction for these formats)
and, marked gpu, on a real GPU. References are computed here from the format definitions.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import blocked, func, lower, result, run
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

# (exponent bits, mantissa bits, bias, NaN code or None), from Triton's dtype definitions
FORMATS = {"f8e4b15": (4, 3, 15, None), "f8e4b8": (4, 3, 8, 0x80), "f8e5b16": (5, 2, 16, 0x80)}
TL = {"f8e4b15": tl.float8e4b15, "f8e4b8": tl.float8e4b8, "f8e5b16": tl.float8e5b16}
NAMES = list(FORMATS)
CODES = np.arange(256, dtype=np.uint8)
RNG = np.random.default_rng(11)


# ----------------------------------------------------------------------------- references


def ref_value(code: int, name: str) -> float:
    e_bits, m_bits, bias, nan = FORMATS[name]
    if code == nan:
        return math.nan
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    mag = math.ldexp(m, 1 - bias - m_bits) if e == 0 else math.ldexp(1 + m / (1 << m_bits), e - bias)
    return -mag if code & 0x80 else mag


VALUES = {name: np.array([ref_value(c, name) for c in range(256)]) for name in NAMES}


def _nearest_even(a: float, name: str) -> int:
    """Code (positive) of the value of `name` nearest to a >= 0, ties to the even code."""
    pos = VALUES[name][:128]
    finite = np.flatnonzero(~np.isnan(pos))
    d = np.abs(pos[finite] - a)
    best = finite[d == d.min()]
    return int(best[0]) if len(best) == 1 else int(best[best % 2 == 0][0])


def ref_encode_fnuz(x: float, name: str) -> int:
    """Nearest even, saturating; inf/NaN -> 0x80; a zero result is +0."""
    if not math.isfinite(x):
        return 0x80
    largest = np.nanmax(VALUES[name])
    code = 0x7F if abs(x) > largest else _nearest_even(abs(x), name)
    return code | 0x80 if code and math.copysign(1.0, x) < 0 else code


_F16_POS = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)  # +0 .. 65504


def f16_toward_zero_bits(x: float) -> int:
    """fp16 bits of x rounded toward zero as cvt.rz.f16.f32 does on the GPU (infinity stays
    infinity, every NaN becomes 0x7FFF, seen on an H100)."""
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return 0x7FFF
    if math.isinf(x):
        return sign | 0x7C00
    return sign | int(np.searchsorted(_F16_POS, abs(x), side="right") - 1)


def ref_encode_e4b15_from_f16(h: int) -> int:
    """Triton's PTX for fp16 -> fp8e4b15, instruction by instruction on one half:
    and 0x7fff; min.f16 with 1.75 (NaN -> 1.75); mad.lo by 2 plus 0x80; or the sign; high byte."""
    mag = float(np.uint16(h & 0x7FFF).view(np.float16))
    clamped = 1.75 if math.isnan(mag) else min(mag, 1.75)
    a = int(np.float16(clamped).view(np.uint16)) * 2 + 0x80
    return ((h & 0x8000) | a) >> 8


def ref_encode(x: float, name: str) -> int:
    if name == "f8e4b15":  # Triton converts fp32 through fp16 rounded toward zero
        return ref_encode_e4b15_from_f16(f16_toward_zero_bits(x))
    return ref_encode_fnuz(x, name)


def ref_codes(xs: np.ndarray, name: str) -> np.ndarray:
    return np.array([ref_encode(float(x), name) for x in xs], dtype=np.uint8)


def bf16_bits_exact(v: np.ndarray) -> np.ndarray:
    """bfloat16 bits of values that bfloat16 holds exactly (NaN as 0x7FC0)."""
    bits = (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(v), np.uint16(0x7FC0), bits)


def probe_values(name: str) -> np.ndarray:
    """Every value of the format, the midpoints between neighbours (ties) and values just off
    them, beyond the largest, tiny ones, infinities, NaN and signed zeros, both signs."""
    pos = np.unique(VALUES[name][:128][~np.isnan(VALUES[name][:128])])
    mids = (pos[:-1] + pos[1:]) / 2
    ulp = np.spacing(mids.astype(np.float32)).astype(np.float64)
    top = pos[-1]
    extra = [top * 1.01, top * 1.07, top * 4, 1e30, pos[1] / 2, pos[1] / 3, pos[1] * 0.51, np.inf, np.nan, 0.0]
    mags = np.concatenate([pos, mids, mids - ulp, mids + ulp, extra])
    mags = mags.astype(np.float32).astype(np.float64)  # f32 sources: the kernel reads f32 values
    return np.concatenate([mags, -mags])


# ------------------------------------------------------------------------------- kernels


@tile.jit
def upcast_kernel(x_ptr, f16_ptr, bf16_ptr, f32_ptr, f64_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(f16_ptr + offs, x.to(tl.float16))
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16))
    tl.store(f32_ptr + offs, x.to(tl.float32))
    tl.store(f64_ptr + offs, x.to(tl.float64))


@tile.jit
def convert_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE), mask=mask)


@tile.jit
def arith_kernel(x_ptr, y_ptr, sum_ptr, prod_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(sum_ptr + offs, x + y)
    tl.store(prod_ptr + offs, x * y)


@tile.jit
def full_kernel(out_ptr, VALUE: tl.constexpr, DTYPE: tl.constexpr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), tl.full([N], VALUE, DTYPE))


@tile.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def fp8_arg(arrays, codes: np.ndarray, name: str):
    return tile.reinterpret(arrays.put(codes), TL[name])


def converted(arrays, x, n: int, dtype, out_dtype) -> np.ndarray:
    """The `n` elements of kernel argument `x` converted to `dtype`; the output's bits as `out_dtype`."""
    out = arrays.put(poison(n, out_dtype))
    arg = out if dtype not in TL.values() else tile.reinterpret(out, dtype)
    convert_kernel[(tile.cdiv(n, 128),)](x, arg, n, DTYPE=dtype, BLOCK=128)
    return arrays.get(out)


# --------------------------------------------------------------------------------- tests


def test_formats_match_triton():
    for name, t in TL.items():
        bias = FORMATS[name][2]
        assert t.exponent_bias == bias and t.is_fp8() and not t.is_standard_floating()
        assert t.fp_mantissa_width == FORMATS[name][1] and t.primitive_bitwidth == 8
    assert tl.float8e4b15.name == "fp8e4b15" and tl.float8e4b15.is_fp8e4b15()
    assert tl.float8e4b8.is_fp8e4b8() and tl.float8e5b16.is_fp8e5b16() and not tl.float8e4nv.is_fp8e4b8()
    assert np.nanmax(VALUES["f8e4b8"]) == 240 and np.nanmax(VALUES["f8e5b16"]) == 57344
    assert np.nanmax(VALUES["f8e4b15"]) == 1.875 and not np.isnan(VALUES["f8e4b15"]).any()


@pytest.mark.parametrize("name", NAMES)
def test_every_code_upcasts_exactly(arrays, name):
    outs = [arrays.put(poison(256, d)) for d in (np.float16, np.uint16, np.float32, np.float64)]
    args = list(outs)
    args[1] = tile.reinterpret(outs[1], tl.bfloat16)
    upcast_kernel[(1,)](fp8_arg(arrays, CODES, name), *args, N=256)
    h, b, f, d = (arrays.get(o) for o in outs)
    want = VALUES[name]
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(f, want.astype(np.float32))
    np.testing.assert_array_equal(h, want.astype(np.float16))
    nan = np.isnan(want)  # a NaN's payload is the converter's own (the GPU's cvt gives 0x7FFF)
    np.testing.assert_array_equal(b[~nan], bf16_bits_exact(want)[~nan])
    assert np.all((b[nan] & 0x7F80 == 0x7F80) & (b[nan] & 0x7F != 0))


@pytest.mark.parametrize("name", NAMES)
def test_f32_downcast_rounds_by_the_format_rule(arrays, name):
    x = probe_values(name).astype(np.float32)
    got = converted(arrays, arrays.put(x), x.size, TL[name], np.uint8)
    np.testing.assert_array_equal(got, ref_codes(x, name), err_msg=f"f32 -> {name}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("src", ["float16", "bfloat16", "float64"])
def test_other_floats_downcast(arrays, name, src):
    if src == "float64":
        x = np.concatenate([probe_values(name), RNG.standard_normal(256) * np.exp2(RNG.integers(-24, 20, 256))])
        x[::7] += np.spacing(x[::7]) * RNG.choice([-1, 1], x[::7].size)  # off the f32 grid: no rounding via f32
        arg, values = arrays.put(x), x
    elif src == "float16":
        bits = RNG.integers(0, 1 << 16, 2048).astype(np.uint16)
        arg, values = arrays.put(bits.view(np.float16)), bits.view(np.float16).astype(np.float64)
    else:
        bits = RNG.integers(0, 1 << 16, 2048).astype(np.uint16)
        with np.errstate(invalid="ignore"):
            values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        arg = tile.reinterpret(arrays.put(bits), tl.bfloat16)
    got = converted(arrays, arg, values.size, TL[name], np.uint8)
    if name == "f8e4b15" and src == "float16":  # Triton's rule applies to the fp16 bits themselves
        want = np.array([ref_encode_e4b15_from_f16(int(h)) for h in bits], np.uint8)
    else:
        want = ref_codes(values, name)
    np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {name}")


@pytest.mark.parametrize("name", NAMES)
def test_integers_convert_both_ways(arrays, name):
    ints = np.concatenate([np.arange(-300, 300), RNG.integers(-(1 << 20), 1 << 20, 200)]).astype(np.int32)
    got = converted(arrays, arrays.put(ints), ints.size, TL[name], np.uint8)
    np.testing.assert_array_equal(got, ref_codes(ints.astype(np.float64), name))
    finite = CODES[~np.isnan(VALUES[name])]
    back = converted(arrays, fp8_arg(arrays, finite, name), finite.size, tl.int32, np.int32)
    np.testing.assert_array_equal(back, np.trunc(VALUES[name][finite]).astype(np.int32))


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_between_formats(arrays, name):
    """Every code through fp32 and back, and into each other format (rounded by its rule)."""
    for other in NAMES:
        got = converted(arrays, fp8_arg(arrays, CODES, name), 256, TL[other], np.uint8)
        want = ref_codes(VALUES[name], other)
        if other == name:
            if name != "f8e4b15":
                np.testing.assert_array_equal(want, CODES)  # the fnuz formats round-trip every code
            want = CODES  # a conversion to its own type changes nothing (e4b15's +-1.875 included)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} -> {other}")


@pytest.mark.parametrize("name", NAMES)
def test_arithmetic_rounds_each_result(arrays, name):
    finite = CODES[~np.isnan(VALUES[name])]
    x, y = RNG.choice(finite, 512), RNG.choice(finite, 512)
    sums, prods = arrays.put(poison(512, np.uint8)), arrays.put(poison(512, np.uint8))
    arith_kernel[(1,)](fp8_arg(arrays, x, name), fp8_arg(arrays, y, name), tile.reinterpret(sums, TL[name]),
                       tile.reinterpret(prods, TL[name]), N=512)
    vx, vy = VALUES[name][x], VALUES[name][y]
    np.testing.assert_array_equal(arrays.get(sums), ref_codes(vx + vy, name))
    np.testing.assert_array_equal(arrays.get(prods), ref_codes(vx * vy, name))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", [1.3, -0.0, 1e6, -3.0e-5])
def test_constants(arrays, name, value):
    out = arrays.put(poison(64, np.uint8))
    full_kernel[(1,)](tile.reinterpret(out, TL[name]), VALUE=value, DTYPE=TL[name], N=64)
    np.testing.assert_array_equal(arrays.get(out), np.full(64, ref_encode(value, name), np.uint8))


@pytest.mark.parametrize("name", NAMES)
def test_dot_upcasts_to_fp16(arrays, name):
    M = N = K = 16
    finite = CODES[~np.isnan(VALUES[name])]
    a, b = RNG.choice(finite, (M, K)), RNG.choice(finite, (K, N))
    c = arrays.put(poison((M, N), np.float32))
    dot_kernel[(1,)](fp8_arg(arrays, a, name), fp8_arg(arrays, b, name), c, M=M, N=N, K=K)
    want = VALUES[name][a] @ VALUES[name][b]
    np.testing.assert_allclose(arrays.get(c), want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("name", NAMES)
def test_round_toward_zero_is_refused(name):
    with pytest.raises(tile.CompilationError, match="rtz") as e:
        tile.dump(cast_rtz_kernel, np.zeros(4, np.float32), tile.reinterpret(np.zeros(4, np.uint8), TL[name]),
                  stage="tile")
    assert e.value.line == cast_rtz_kernel.fn.__code__.co_firstlineno + 2


@tile.jit
def cast_rtz_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr).to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz"))


# ------------------------------------------------------ the GPU lowering on tile.emulator


def _cast_ir(src: str, dst: str, target: str) -> str:
    L = blocked([2], [32], [4])
    T = lambda t: f"tensor<256x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = 256, start = 0}} : {T('i32')}
  %xs = tt.splat %x : {T(f'ptr<{src}>')}
  %xp = tt.addptr %xs, %r : {T(f'ptr<{src}>')}
  %v = tt.load %xp : {T(src)}
  %c = arith.cast %v : {T(dst)}
  %os = tt.splat %o : {T(f'ptr<{dst}>')}
  %op = tt.addptr %os, %r : {T(f'ptr<{dst}>')}
  tt.store %op, %c"""
    return func("cast", [("x", f"ptr<{src}>"), ("o", f"ptr<{dst}>")], body, num_warps=4, target=target)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", NAMES)
def test_lowering_decodes_and_encodes(name, target):
    simt = lower(_cast_ir(name, "f32", target))
    out = np.full(256, np.nan, np.float32)
    m, d = run(simt, (1,), [CODES.copy(), out])
    np.testing.assert_array_equal(result(m, d[1], out), VALUES[name].astype(np.float32))
    x = RNG.choice(probe_values(name), 256).astype(np.float32)
    simt = lower(_cast_ir("f32", name, target))
    codes = np.zeros(256, np.uint8)
    m, d = run(simt, (1,), [x, codes])
    np.testing.assert_array_equal(result(m, d[1], codes), ref_codes(x, name))
