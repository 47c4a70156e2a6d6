"""fp8 e4m3 (tl.float8e4nv) and e5m2 (tl.float8e5) on sm_80 / sm_86, where PTX has no fp8 cvt:
conversions in integer and f32 arithmetic (tile.codegen.lower_float8) that give what sm_89's
cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and cvt.rn.f16x2.{e4m3,e5m2}x2 give, and dots whose fp8
operands go to f16 for mma.sync.

Kernels compiled for sm_80 run on tile.emulator and are compared bit for bit with the same
kernels on the interpreter (tile.runtime.interp_dtypes: round to nearest even, overflow and
infinities to +-largest finite, subnormals). NaN is the one place they differ: the interpreter
keeps a NaN's sign (and e5m2's payload bits), while the GPU's cvt gives the canonical NaN 0x7f
(and 0x7fff for a NaN code widened to f16), which the sm_80 code reproduces; the GPU test at the
end compares sm_80's code with the native instructions on a real GPU, NaN included.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from ptxas_util import assemble_ok, needs_ptxas
from test_language import poison

FP8 = {"f8e4nv": tl.float8e4nv, "f8e5": tl.float8e5}
NAMES = list(FP8)
CODES = np.arange(256, dtype=np.uint8)
NAN_CODE = 0x7F
F16_NAN = 0x7FFF
RNG = np.random.default_rng(80)
BLOCK = 1024
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@tile.jit
def convert_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE), mask=mask)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """Plain launches run on the interpreter (also on GPU machines); the emulator is explicit."""
    monkeypatch.setenv("TILE_INTERPRET", "1")


def as_arg(bits: np.ndarray, dtype):
    """An array of bits as a kernel argument of `dtype` (fp8 and bf16 are reinterpreted)."""
    return tile.reinterpret(bits, dtype) if dtype in (*FP8.values(), tl.bfloat16) else bits


STORAGE = {tl.float16: np.float16, tl.bfloat16: np.uint16, tl.float32: np.float32, tl.float64: np.float64,
           tl.int32: np.int32, tl.int64: np.int64, tl.uint8: np.uint8, tl.int8: np.int8}


def converted(x: np.ndarray, src, dst, target: str | None) -> np.ndarray:
    """`x` (bits or values, as the kernel reads them) converted from `src` to `dst`, on the
    interpreter (target None) or on the emulator running `target`'s PTX; the result's bits."""
    out = poison(x.size, np.uint8 if dst in FP8.values() else STORAGE[dst])
    launch = convert_kernel if target is None else tile.emulate(convert_kernel, target=target)
    launch[(tile.cdiv(x.size, BLOCK),)](as_arg(x, src), as_arg(out, dst), x.size, DTYPE=dst, BLOCK=BLOCK)
    return out.view(np.uint16) if out.dtype == np.float16 else out


def f32_values(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, np.float32)


def check_encoding(x: np.ndarray, src, name: str, nan: np.ndarray, target: str = "sm_80") -> None:
    """sm_80's codes equal the interpreter's, and NaN inputs (`nan`) give 0x7f."""
    got, want = converted(x, src, FP8[name], target), converted(x, src, FP8[name], None)
    np.testing.assert_array_equal(got[~nan], want[~nan], err_msg=f"{src} -> {name}")
    np.testing.assert_array_equal(got[nan], NAN_CODE)


def fp8_values(name: str) -> np.ndarray:
    """float64 value of each code, from the interpreter's decoding."""
    return converted(CODES, FP8[name], tl.float64, None)


def probe_f32(name: str) -> np.ndarray:
    """Every value of the format; the midpoints between neighbours (ties) and one f32 ulp either
    side; around the largest value and half an ulp beyond it; the smallest subnormal's half;
    f32 subnormals; infinities, NaNs with payloads and signed zeros: both signs."""
    values = fp8_values(name)
    pos = np.unique(values[:128][np.isfinite(values[:128])]).astype(np.float32)
    mids = ((pos[:-1].astype(np.float64) + pos[1:]) / 2).astype(np.float32)
    top = pos[-1]
    beyond = np.array([top + (top - pos[-2]) / 2], np.float32)
    extra = np.array([top * 1.01, pos[1] / 2, pos[1] * 0.51, pos[1] / 3, 1e-40, 1.4e-45, 3e38, np.inf,
                      0.0], np.float32)
    mags = np.concatenate([pos, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), beyond,
                           np.nextafter(beyond, 0), np.nextafter(beyond, np.inf), extra])
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000], np.uint32).view(np.float32)
    return np.concatenate([mags, -mags, nans, -nans])


# ------------------------------------------------------------------------------ encoding


@pytest.mark.parametrize("name", NAMES)
def test_every_f16_pattern_encodes_like_the_interpreter(name):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    check_encoding(x, tl.float16, name, np.isnan(x))


@pytest.mark.parametrize("name", NAMES)
def test_every_bf16_pattern_encodes_like_the_interpreter(name):
    bits = np.arange(1 << 16, dtype=np.uint16)
    check_encoding(bits, tl.bfloat16, name, (bits & 0x7FFF) > 0x7F80)


@pytest.mark.parametrize("name", NAMES)
def test_f32_edges_encode_like_the_interpreter(name):
    x = probe_f32(name)
    check_encoding(x, tl.float32, name, np.isnan(x))


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(bits=st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=300), scale=st.integers(-30, 30))
def test_random_f32_encode_like_the_interpreter(name, bits, scale):
    """Any f32 bit pattern, and the same patterns' mantissas moved near the format's range
    (exponent 127 + scale) where the rounding happens."""
    raw = np.array(bits, np.uint32)
    near = (raw & np.uint32(0x807FFFFF)) | np.uint32((127 + scale) << 23)
    x = np.concatenate([raw, near]).view(np.float32)
    check_encoding(x, tl.float32, name, np.isnan(x))


@pytest.mark.parametrize("name", NAMES)
def test_f64_rounds_once(name):
    """Values off the f32 grid right next to ties of the format: a rounding to f32 on the way
    would turn some into ties."""
    values = fp8_values(name)
    pos = np.unique(values[:128][np.isfinite(values[:128])])
    mids = (pos[:-1] + pos[1:]) / 2
    nudge = RNG.choice([-1.0, 0.0, 1.0], mids.size) * mids * 2.0 ** -40
    x = np.concatenate([mids + nudge, -(mids - nudge), RNG.standard_normal(256) * 2.0 ** RNG.integers(-20, 17, 256)])
    check_encoding(x, tl.float64, name, np.zeros(x.size, bool))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("src", [tl.int8, tl.int32, tl.int64])
def test_integers_encode_like_the_interpreter(name, src):
    info = np.iinfo(STORAGE[src])
    values = fp8_values(name)
    top = int(np.max(values[np.isfinite(values)]))
    x = np.concatenate([np.arange(-300, 300), [top - 1, top, top + 1, top + top // 30, -top - 17],
                        RNG.integers(info.min, info.max, 256, endpoint=True)])
    x = np.clip(x, info.min, info.max).astype(STORAGE[src])
    check_encoding(x, src, name, np.zeros(x.size, bool))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("other", ["f8e4nv", "f8e5", "f8e4b15", "f8e4b8", "f8e5b16"])
def test_every_code_of_each_fp8_format_converts(name, other):
    src = FP8.get(other) or getattr(tl, {"f8e4b15": "float8e4b15", "f8e4b8": "float8e4b8",
                                         "f8e5b16": "float8e5b16"}[other])
    nan = np.isnan(converted(CODES, src, tl.float32, None))
    got = converted(CODES, src, FP8[name], "sm_80")
    if other == name:  # a conversion to its own type moves bits
        np.testing.assert_array_equal(got, CODES)
        return
    want = converted(CODES, src, FP8[name], None)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(got[nan], NAN_CODE)


# ------------------------------------------------------------------------------ decoding


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dst", [tl.float16, tl.bfloat16, tl.float32, tl.float64])
def test_every_code_decodes_like_the_interpreter(name, dst):
    got, want = converted(CODES, FP8[name], dst, "sm_80"), converted(CODES, FP8[name], dst, None)
    nan = np.isnan(fp8_values(name))
    np.testing.assert_array_equal(got[~nan], want[~nan])
    if dst == tl.float16:
        np.testing.assert_array_equal(got[nan], F16_NAN)  # what cvt.rn.f16x2.{e4m3,e5m2}x2 gives
    elif dst == tl.bfloat16:
        assert np.all((got[nan] & 0x7F80 == 0x7F80) & (got[nan] & 0x7F != 0))
    else:
        assert np.isnan(got[nan]).all()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dst", [tl.int32, tl.int8, tl.uint8])
def test_finite_codes_truncate_to_integers(name, dst):
    values = fp8_values(name)
    in_range = np.isfinite(values) & (np.trunc(values) >= np.iinfo(STORAGE[dst]).min) & \
        (np.trunc(values) <= np.iinfo(STORAGE[dst]).max)
    codes = CODES[in_range]
    np.testing.assert_array_equal(converted(codes, FP8[name], dst, "sm_80"), converted(codes, FP8[name], dst, None))
    np.testing.assert_array_equal(converted(codes, FP8[name], dst, "sm_80"), np.trunc(values[in_range]))


# ----------------------------------------------------------------------------------- dot


@tile.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr,
               OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.zeros([M, N], OUT)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@tile.jit
def invariant_a_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                           STEPS: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    acc = tl.zeros([M, N], tl.float32)
    for s in range(STEPS):
        b = tl.load(b_ptr + s * K * N + rk[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def finite_codes(name: str, shape, rng=RNG) -> np.ndarray:
    values = fp8_values(name)
    return rng.choice(CODES[np.isfinite(values)], shape).astype(np.uint8)


MMA_F16 = re.compile(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.\w+\.f16\.f16\.")


@pytest.mark.parametrize("target", ["sm_80", "sm_86"])
@pytest.mark.parametrize("a_name, b_name, out", [("f8e5", "f8e5", tl.float32), ("f8e4nv", "f8e4nv", tl.float32),
                                                 ("f8e4nv", "f8e5", tl.float32), ("f8e5", "f8e5", tl.float16)])
def test_dot_goes_to_f16_mma(target, a_name, b_name, out):
    """fp8 operands become f16 (exactly) and the dot runs on mma.sync's f16 form; the result is
    the float64 product of the decoded values, to the accumulator's rounding."""
    M, N, K, BK = 64, 32, 96, 32
    a, b = finite_codes(a_name, (M, K)), finite_codes(b_name, (K, N))
    if out == tl.float16:  # keep the f16 sums finite
        a, b = a & 0xBF, b & 0xBF
    c = poison((M, N), STORAGE[out])
    kernel = tile.emulate(dot_kernel, target=target)[(1,)](tile.reinterpret(a, FP8[a_name]),
                                                          tile.reinterpret(b, FP8[b_name]), c, M=M, N=N, K=K,
                                                          BK=BK, OUT=out)
    ptx = kernel.asm["ptx"]
    assert MMA_F16.search(ptx) and "e5m2" not in ptx and "e4m3" not in ptx
    want = fp8_values(a_name)[a] @ fp8_values(b_name)[b]
    tol = 1e-6 if out == tl.float32 else 4e-3
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol * np.abs(want).max())


def test_e4m3_times_e5m2_runs_through_f16_everywhere():
    """Mixed fp8 operands (which tile IR's dot does not take) go to f16 in the frontend: the
    interpreter runs the dot and sm_90a compiles it."""
    M, N, K = 64, 32, 64
    a, b = finite_codes("f8e4nv", (M, K)), finite_codes("f8e5", (K, N))
    c = poison((M, N), np.float32)
    args = (tile.reinterpret(a, tl.float8e4nv), tile.reinterpret(b, tl.float8e5), c)
    dot_kernel[(1,)](*args, M=M, N=N, K=K, BK=K, OUT=tl.float32)
    want = fp8_values("f8e4nv")[a] @ fp8_values("f8e5")[b]
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    ptx = str(tile.dump(dot_kernel, *args, M=M, N=N, K=K, BK=K, OUT=tl.float32, stage="ptx", target="sm_90a"))
    assert "wgmma.mma_async" in ptx and ".f16.f16" in ptx


def test_a_loop_invariant_operand_is_converted_once():
    """A loaded before the loop is converted to f16 before it too (B, loaded in it, in it)."""
    M, N, K, STEPS = 32, 32, 32, 3
    a, b = finite_codes("f8e5", (M, K)), finite_codes("f8e5", (STEPS, K, N))
    c = poison((M, N), np.float32)
    args = (tile.reinterpret(a, tl.float8e5), tile.reinterpret(b, tl.float8e5), c)
    gpu = str(tile.dump(invariant_a_dot_kernel, *args, M=M, N=N, K=K, STEPS=STEPS, stage="gpu", target="sm_80"))
    casts = [m.start() for m in re.finditer(r"arith\.cast %\w+ : tensor<32x32xf16, #dot_op<op_idx = (\d)", gpu)]
    assert len(casts) == 2 and casts[0] < gpu.index("scf.for") < casts[1]
    assert "op_idx = 0" in gpu[casts[0]:casts[0] + 60] and re.search(r"tt\.dot .*: tensor<32x32xf32, #mma", gpu)
    tile.emulate(invariant_a_dot_kernel, target="sm_80")[(1,)](*args, M=M, N=N, K=K, STEPS=STEPS)
    values = fp8_values("f8e5")
    want = sum(values[a] @ values[b[s]] for s in range(STEPS))
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


@tile.jit
def reduce_and_small_dot_kernel(x_ptr, a_ptr, b_ptr, max_ptr, sum_ptr, c_ptr, N: tl.constexpr):
    """fp8 through a reduction's combine, an f32 sum, and a dot too small for mma.sync (FMA path)."""
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(max_ptr + tl.arange(0, 1), tl.max(x, axis=0) + tl.zeros([1], x.dtype))
    tl.store(sum_ptr + tl.arange(0, 1), tl.sum(x.to(tl.float32), axis=0) + tl.zeros([1], tl.float32))
    r8, r16 = tl.arange(0, 8), tl.arange(0, 16)
    a = tl.load(a_ptr + r8[:, None] * 16 + r16[None, :])
    b = tl.load(b_ptr + r16[:, None] * 16 + r16[None, :])
    tl.store(c_ptr + r8[:, None] * 16 + r16[None, :], tl.dot(a, b))


@pytest.mark.parametrize("name", NAMES)
def test_reductions_and_fma_dots_run_like_the_interpreter(name):
    x, a, b = finite_codes(name, 256), finite_codes(name, (8, 16)), finite_codes(name, (16, 16))
    results = []
    for launch in (reduce_and_small_dot_kernel, tile.emulate(reduce_and_small_dot_kernel, target="sm_80")):
        outs = [poison(1, np.uint8), poison(1, np.float32), poison((8, 16), np.float32)]
        launch[(1,)](*(tile.reinterpret(v, FP8[name]) for v in (x, a, b)), tile.reinterpret(outs[0], FP8[name]),
                     *outs[1:], N=256)
        results.append(outs)
    (max_i, sum_i, dot_i), (max_e, sum_e, dot_e) = results
    values = fp8_values(name)
    np.testing.assert_array_equal(max_e, max_i)
    assert values[max_e[0]] == values[x].max()
    np.testing.assert_allclose(sum_e, values[x].sum(), rtol=1e-6)
    want = values[a] @ values[b]
    np.testing.assert_allclose(dot_e, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    np.testing.assert_allclose(dot_i, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


@needs_ptxas
def test_fp8_dot_assembles_for_sm80():
    a, b = np.zeros((64, 64), np.uint8), np.zeros((64, 64), np.uint8)
    ptx = str(tile.dump(dot_kernel, tile.reinterpret(a, tl.float8e4nv), tile.reinterpret(b, tl.float8e5),
                        np.zeros((64, 64), np.float32), M=64, N=64, K=64, BK=32, OUT=tl.float32, stage="ptx",
                        target="sm_80"))
    assert MMA_F16.search(ptx)
    assemble_ok(ptx, "sm_80")


# -------------------------------------------------------------------------- PTX, errors


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_86"])
def test_sm80_ptx_has_no_fp8_instruction_and_assembles(target):
    for name in NAMES:
        for src, dst in ((tl.float32, FP8[name]), (FP8[name], tl.float32), (FP8[name], tl.float16),
                         (tl.float64, FP8[name]), (tl.float8e4nv, tl.float8e5), (FP8[name], tl.int32)):
            x = np.zeros(64, np.uint8 if src in FP8.values() else STORAGE[src])
            out = np.zeros(64, np.uint8 if dst in FP8.values() else STORAGE[dst])
            ptx = str(tile.dump(convert_kernel, as_arg(x, src), as_arg(out, dst), 64, DTYPE=dst, BLOCK=64,
                                stage="ptx", target=target))
            assert "e4m3" not in ptx and "e5m2" not in ptx
            assemble_ok(ptx, target)


@tile.jit
def cast_rtz_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr).to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz"))


@pytest.mark.parametrize("name", NAMES)
def test_round_toward_zero_to_fp8_is_refused(name):
    """As in Triton, no fp8 conversion rounds toward zero: the user's line is named, on every target."""
    for target in ("sm_80", "sm_90a", "interpreter"):
        with pytest.raises(tile.CompilationError, match="rtz") as e:
            tile.dump(cast_rtz_kernel, np.zeros(4, np.float32), tile.reinterpret(np.zeros(4, np.uint8), FP8[name]),
                      stage="ptx" if target != "interpreter" else "tile", target=target)
        assert e.value.line == cast_rtz_kernel.fn.__code__.co_firstlineno + 2


# ---------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_sm80_code_matches_the_native_cvt_on_the_gpu(name, monkeypatch):
    """The same conversions compiled for sm_80 (integer arithmetic) and for the GPU's own target
    (cvt.rn.satfinite / cvt.rn.f16x2 on sm_89+) give the same bits, NaNs included."""
    from tile import compiler

    probes = probe_f32(name)  # on the interpreter, before launches go to the GPU
    monkeypatch.delenv("TILE_INTERPRET")
    native = compiler._device_target()
    if int(re.match(r"sm_(\d+)", native).group(1)) < 89:
        pytest.skip(f"{native} has no fp8 cvt to compare with")
    f16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    cases = [(f16, tl.float16, FP8[name]), (probes, tl.float32, FP8[name]),
             (CODES, FP8[name], tl.float16), (CODES, FP8[name], tl.float32)]
    results = {}
    for target in (native, "sm_80"):
        monkeypatch.setattr(compiler, "_device_target", lambda target=target: target)
        kernel = tile.jit(convert_kernel.fn)  # a kernel of its own per target: no launch cache shared
        results[target] = []
        for x, src, dst in cases:
            out = tile.to_device(poison(x.size, np.uint8 if dst in FP8.values() else STORAGE[dst]))
            compiled = kernel[(tile.cdiv(x.size, BLOCK),)](as_arg(tile.to_device(x), src), as_arg(out, dst), x.size,
                                                          DTYPE=dst, BLOCK=BLOCK)
            assert compiled.target == target
            # f32 NaNs compare as NaN (their payload is cvt.f32.f16's), the narrower results bit for bit
            results[target].append(out.numpy().view(np.uint8 if dst in FP8.values() else np.uint16
                                                      if dst == tl.float16 else np.float32))
    for (x, src, dst), a, b in zip(cases, results[native], results["sm_80"]):
        np.testing.assert_array_equal(b, a, err_msg=f"{src} -> {dst}: sm_80 vs {native}")


@pytest.mark.gpu
@pytest.mark.parametrize("a_name, b_name", [("f8e5", "f8e5"), ("f8e4nv", "f8e4nv"), ("f8e4nv", "f8e5")])
def test_sm80_fp8_dot_on_the_gpu(a_name, b_name, monkeypatch):
    """The f16 mma.sync path of an fp8 dot, as PTX for sm_80, on the GPU."""
    from tile import compiler

    values_a, values_b = fp8_values(a_name), fp8_values(b_name)  # on the interpreter
    M, N, K, BK = 128, 64, 256, 32
    a, b = finite_codes(a_name, (M, K)), finite_codes(b_name, (K, N))
    monkeypatch.delenv("TILE_INTERPRET")
    monkeypatch.setattr(compiler, "_device_target", lambda: "sm_80")
    c = tile.to_device(poison((M, N), np.float32))
    compiled = tile.jit(dot_kernel.fn)[(1,)](tile.reinterpret(tile.to_device(a), FP8[a_name]),
                                             tile.reinterpret(tile.to_device(b), FP8[b_name]), c, M=M, N=N, K=K,
                                             BK=BK, OUT=tl.float32)
    assert compiled.target == "sm_80" and MMA_F16.search(compiled.asm["ptx"])
    want = values_a[a] @ values_b[b]
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
