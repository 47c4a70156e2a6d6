"""tl.dot_scaled against a NumPy reference of the OCP microscaling (MX) formats.

The reference decodes fp4 (e2m1, two per byte, low nibble first), fp8 (e4m3, e5m2), bf16 and
fp16 operands and e8m0 scales (2**(s - 127), 255 = NaN) from their definitions, converts
each operand as Triton does on Hopper (to bf16, or fp16 when either format is fp16; the
scale in that type; one rounding of value * scale), and multiplies in float64. tile
accumulates in fp32, hence the tolerance. Kernels run on the interpreter, as PTX on
tile.emulator through the GPU lowering, and (marked gpu) on a GPU.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import result, run
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)
from tile.codegen.lower import lower_to_simt
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes

RNG = np.random.default_rng(31)
GROUP = 32


# ----------------------------------------------------------------------------- references


def fp4_value(code: int) -> float:
    sign = -1.0 if code & 8 else 1.0
    e, m = (code >> 1) & 3, code & 1
    return sign * (m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1))


def fp8_value(code: int, fmt: str) -> float:
    e_bits, m_bits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if fmt == "e4m3" and e == top and m == (1 << m_bits) - 1:
        return math.nan
    if fmt == "e5m2" and e == top:
        return sign * math.inf if m == 0 else math.nan
    return sign * (m * 2.0 ** (1 - bias - m_bits) if e == 0 else (1 + m / (1 << m_bits)) * 2.0 ** (e - bias))


FP4 = np.array([fp4_value(c) for c in range(16)])
FP8 = {fmt: np.array([fp8_value(c, fmt) for c in range(256)]) for fmt in ("e4m3", "e5m2")}


def round_to(v: np.ndarray, compute: str) -> np.ndarray:
    """float64 values rounded to nearest even in bf16 or fp16."""
    with np.errstate(over="ignore", invalid="ignore"):
        if compute == "fp16":
            return v.astype(np.float16).astype(np.float64)
        bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
        return np.where(np.isnan(v), np.nan, r.astype(np.float64))


def decode(x: np.ndarray, fmt: str, axis: int) -> np.ndarray:
    """Operand values (float64); fp4 bytes unpacked along `axis`."""
    if fmt == "e2m1":
        x = np.moveaxis(x, axis, -1)
        out = np.empty(x.shape[:-1] + (2 * x.shape[-1],))
        out[..., 0::2], out[..., 1::2] = FP4[x & 15], FP4[x >> 4]
        return np.moveaxis(out, -1, axis)
    if fmt in FP8:
        return FP8[fmt][x]
    if fmt == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.view(np.float16).astype(np.float64)


def scale_factors(s: np.ndarray, compute: str) -> np.ndarray:
    f = np.ldexp(1.0, s.astype(np.int64) - 127)
    return round_to(f, compute)


def reference(a, a_fmt, sa, b, b_fmt, sb, a_k_pack=True, b_k_pack=True,
              fast_math=False) -> tuple[np.ndarray, np.ndarray]:
    """(a @ b, |a| @ |b|) of the decoded, scaled operands (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 under a NaN scale
        return _reference(a, a_fmt, sa, b, b_fmt, sb, a_k_pack, b_k_pack, fast_math)


def _reference(a, a_fmt, sa, b, b_fmt, sb, a_k_pack, b_k_pack, fast_math) -> tuple[np.ndarray, np.ndarray]:
    compute = "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"
    av = round_to(decode(a, a_fmt, 1 if a_k_pack else 0), compute)
    bv = round_to(decode(b, b_fmt, 0 if b_k_pack else 1), compute)
    if sa is not None:
        fa = np.repeat(scale_factors(sa, compute), GROUP, axis=1)
        av = np.where((not fast_math) & (np.repeat(sa, GROUP, axis=1) == 255), np.nan, round_to(av * fa, compute))
    if sb is not None:
        fb = np.repeat(scale_factors(sb, compute), GROUP, axis=1).T
        bv = np.where((not fast_math) & (np.repeat(sb, GROUP, axis=1).T == 255), np.nan, round_to(bv * fb, compute))
    return av @ bv, np.abs(av) @ np.abs(bv)


def assert_close(got: np.ndarray, want: tuple[np.ndarray, np.ndarray], k: int) -> None:
    value, magnitude = want
    nan = np.isnan(value)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bound = 2.0 * k * 2.0 ** -24 * magnitude[~nan] + 1e-30
    assert (np.abs(got[~nan] - value[~nan]) <= bound).all(), np.abs(got[~nan] - value[~nan]).max()


STORAGE = {"e2m1": np.uint8, "e4m3": np.uint8, "e5m2": np.uint8, "bf16": np.uint16, "fp16": np.uint16}


def operand(fmt: str, rows: int, cols: int) -> np.ndarray:
    """Random codes of `fmt`: NaN-free fp8, finite bf16/fp16 of moderate size."""
    if fmt in ("e2m1", "e4m3", "e5m2"):
        x = RNG.integers(0, 256, (rows, cols)).astype(np.uint8)
        if fmt == "e4m3":
            x[(x & 0x7F) == 0x7F] = 0x3A
        if fmt == "e5m2":
            x[(x & 0x7C) == 0x7C] = 0x3A
        return x
    v = RNG.standard_normal((rows, cols)) * 4
    if fmt == "fp16":
        return v.astype(np.float16).view(np.uint16)
    return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


# ------------------------------------------------------------------------------ kernels


@tile.jit
def mx_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, acc_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              A_FMT: tl.constexpr, B_FMT: tl.constexpr, A_ROWS: tl.constexpr, A_COLS: tl.constexpr,
              B_ROWS: tl.constexpr, B_COLS: tl.constexpr, A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr,
              SCALED: tl.constexpr, ACC: tl.constexpr, FAST: tl.constexpr):
    ra, ca = tl.arange(0, A_ROWS), tl.arange(0, A_COLS)
    rb, cb = tl.arange(0, B_ROWS), tl.arange(0, B_COLS)
    a = tl.load(a_ptr + ra[:, None] * A_COLS + ca[None, :])
    b = tl.load(b_ptr + rb[:, None] * B_COLS + cb[None, :])
    rm, rn, ks = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 32)
    a_scale = tl.load(as_ptr + rm[:, None] * (K // 32) + ks[None, :]) if SCALED else None
    b_scale = tl.load(bs_ptr + rn[:, None] * (K // 32) + ks[None, :]) if SCALED else None
    acc = tl.load(acc_ptr + rm[:, None] * N + rn[None, :]) if ACC else None
    c = tl.dot_scaled(a, a_scale, A_FMT, b, b_scale, B_FMT, acc=acc, fast_math=FAST, lhs_k_pack=A_K_PACK,
                      rhs_k_pack=B_K_PACK)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def case(a_fmt: str, b_fmt: str, M: int = 32, N: int = 32, K: int = 64, a_k_pack: bool = True, b_k_pack: bool = True,
         scaled: bool = True, acc: bool = False, fast: bool = False, nan_scale: bool = False) -> tuple:
    a_shape = (M, K // 2) if a_fmt == "e2m1" and a_k_pack else (M // 2, K) if a_fmt == "e2m1" else (M, K)
    b_shape = (K // 2, N) if b_fmt == "e2m1" and b_k_pack else (K, N // 2) if b_fmt == "e2m1" else (K, N)
    a, b = operand(a_fmt, *a_shape), operand(b_fmt, *b_shape)
    sa = RNG.integers(118, 136, (M, K // GROUP)).astype(np.uint8)
    sb = RNG.integers(118, 136, (N, K // GROUP)).astype(np.uint8)
    sa[0, 0], sb[1, 0] = 0, 254 if a_fmt != "fp16" and b_fmt != "fp16" else 140  # 2**-127, and a large scale
    if nan_scale:
        sa[2, 1] = 255
    c0 = RNG.standard_normal((M, N)).astype(np.float32)
    meta = dict(M=M, N=N, K=K, A_FMT=a_fmt, B_FMT=b_fmt, A_ROWS=a_shape[0], A_COLS=a_shape[1], B_ROWS=b_shape[0],
                B_COLS=b_shape[1], A_K_PACK=a_k_pack, B_K_PACK=b_k_pack, SCALED=scaled, ACC=acc, FAST=fast)
    value, magnitude = reference(a, a_fmt, sa if scaled else None, b, b_fmt, sb if scaled else None, a_k_pack,
                                 b_k_pack, fast)
    if acc:
        value, magnitude = value + c0, magnitude + np.abs(c0)
    return (a, sa, b, sb, c0), meta, (value, magnitude)


CASES = [
    dict(a_fmt="e2m1", b_fmt="e2m1"),
    dict(a_fmt="e2m1", b_fmt="e4m3", acc=True),
    dict(a_fmt="e4m3", b_fmt="e5m2"),
    dict(a_fmt="e5m2", b_fmt="bf16", scaled=False),
    dict(a_fmt="bf16", b_fmt="bf16"),
    dict(a_fmt="fp16", b_fmt="e2m1"),
    dict(a_fmt="e2m1", b_fmt="e2m1", a_k_pack=False, b_k_pack=False),
    dict(a_fmt="e4m3", b_fmt="e2m1", nan_scale=True),
    dict(a_fmt="e4m3", b_fmt="e2m1", nan_scale=True, fast=True),
]


def _id(c: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in c.items())


@pytest.mark.parametrize("params", CASES, ids=_id)
def test_dot_scaled(arrays, params):
    (a, sa, b, sb, c0), meta, want = case(**params)
    out = arrays.put(poison((meta["M"], meta["N"]), np.float32))
    mx_kernel[(1,)](arrays.put(a), arrays.put(sa), arrays.put(b), arrays.put(sb), out, arrays.put(c0), **meta)
    got = arrays.get(out)
    if params.get("fast"):  # 255 reads as 2**128: inf or NaN products; only the other rows are defined
        got, want = got[3:], (want[0][3:], want[1][3:])
    assert_close(got, want, meta["K"])


@pytest.mark.parametrize("params", [CASES[1], CASES[5], CASES[6]], ids=_id)
def test_dot_scaled_lowering(params):
    """The same dots lowered to simt IR (tensor-core mma) and run on tile.emulator."""
    (a, sa, b, sb, c0), meta, want = case(**params)
    out = np.full((meta["M"], meta["N"]), np.nan, np.float32)
    args = [a, sa, b, sb, out, c0]
    spec, runtime = mx_kernel.specialize(args, meta)
    func = mx_kernel.build_ir(spec, "sm_90a", {"num_warps": 4})
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(4, "sm_90a")).run(func)
    m, dev = run(lower_to_simt(func), (1,), runtime)
    got = result(m, dev[next(k for k, x in enumerate(runtime) if x is out)], out)
    assert_close(got, want, meta["K"])


def test_reference_formats():
    assert list(FP4[:8]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6] and FP4[9] == -0.5
    assert np.nanmax(FP8["e4m3"]) == 448 and np.nanmax(FP8["e5m2"][np.isfinite(FP8["e5m2"])]) == 57344
    assert scale_factors(np.array([0, 127, 254]), "bf16").tolist() == [2.0 ** -127, 1.0, 2.0 ** 127]


# -------------------------------------------------------------------------------- errors


@tile.jit
def bad_kernel(a_ptr, s_ptr, CASE: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])
    s = tl.load(s_ptr + tl.arange(0, 32)[:, None] + tl.arange(0, 2)[None, :])
    if CASE == 0:
        c = tl.dot_scaled(a, None, "e3m4", a, None, "e4m3")
    elif CASE == 1:
        c = tl.dot_scaled(a, s, "e4m3", a, None, "e4m3")
    elif CASE == 2:
        c = tl.dot_scaled(a.to(tl.int32), None, "e2m1", a, None, "e4m3")
    elif CASE == 3:
        c = tl.dot_scaled(a, None, "e4m3", a, None, "e4m3", lhs_k_pack=False)
    elif CASE == 4:
        c = tl.dot_scaled(a, None, "e4m3", a, None, "e4m3", out_dtype=tl.float16)
    else:
        c = tl.dot_scaled(a, None, "e2m1", a, None, "e4m3")
    tl.store(a_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c.to(tl.uint8))


@pytest.mark.parametrize("kind,message", [
    (0, "unknown lhs_format 'e3m4'; the formats are e2m1, e4m3, e5m2, bf16, fp16"),
    (1, "lhs_scale must be a block of shape [32, 1] (one e8m0 scale per 32 elements of K = 32), got [32, 2]"),
    (2, "lhs in format e2m1 must hold tl.uint8, got tl.int32"),
    (3, "lhs_k_pack=False is for e2m1"),
    (4, "out_dtype must be tl.float32"),
    (5, "lhs holds 64 elements along K and rhs 32"),
])
def test_errors(kind, message):
    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        tile.dump(bad_kernel, np.zeros(1024, np.uint8), np.zeros(64, np.uint8), CASE=kind, stage="tile")
    assert e.value.line == bad_kernel.fn.__code__.co_firstlineno + 5 + 2 * kind
