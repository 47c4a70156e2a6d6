"""tile.language against NumPy: memory with masks, elementwise arithmetic over dtypes, scalars,
math functions and casts. Kernels run through `kernel[grid](...)` on the arrays the `arrays`
fixture makes: NumPy arrays on the block interpreter; NumPy arrays on tile.emulator, which runs
the kernel's compiled sm_80 PTX on the CPU (marked `emulator`: `-m "not emulator"` leaves them
out); GPU arrays on the PTX backend (marked `gpu`). Every test checks each against NumPy.

Helpers used by the other test_language_*.py files live here too (`arrays`, `bf16_bits`...).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl


class HostArrays:
    """Kernel arguments as NumPy arrays (written in place by the interpreter)."""

    name = "numpy"

    def put(self, a: np.ndarray, dtype: str | None = None):
        """`a` as a kernel argument; `dtype` names a tile dtype whose bits `a` holds (bf16, fp8)."""
        return tile.to_device(a, dtype) if dtype is not None else np.array(a, copy=True)

    def get(self, x) -> np.ndarray:
        """The array's contents; bf16 and fp8 as their bits, whether or not ml_dtypes is installed."""
        a = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
        bits = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}.get(a.dtype.name)
        return a.view(bits) if bits is not None else a


class GpuArrays(HostArrays):
    """Kernel arguments in GPU memory: the same tests then run the PTX backend."""

    name = "gpu"

    def put(self, a: np.ndarray, dtype: str | None = None):
        return tile.to_device(np.ascontiguousarray(a), dtype)


class EmulatedArrays(HostArrays):
    """Kernel arguments as NumPy arrays, run as the kernel's compiled PTX on tile.emulator."""

    name = "emulator"


@pytest.fixture(params=["numpy", pytest.param("emulator", marks=pytest.mark.emulator),
                        pytest.param("gpu", marks=pytest.mark.gpu)])
def arrays(request, monkeypatch, emulator_target):
    if request.param == "numpy":
        monkeypatch.setenv("TILE_INTERPRET", "1")  # NumPy arrays run on the interpreter, also on GPU machines
        return HostArrays()
    if request.param == "emulator":
        from tile import compiler

        monkeypatch.delenv("TILE_INTERPRET", raising=False)
        monkeypatch.setenv("TILE_EMULATE", "1")
        monkeypatch.setenv("TILE_EMULATE_TARGET", emulator_target)
        monkeypatch.setattr(compiler, "_device_target", lambda: compiler.INTERPRETER)  # emulate on GPU machines too
        return EmulatedArrays()
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    return GpuArrays()


SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}


def poison(shape, dtype) -> np.ndarray:
    """An output array full of a value no kernel should produce (NaN, or 0xAB bytes)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, np.bool_)
    return np.full(int(np.prod(shape)) * dtype.itemsize, 0xAB, np.uint8).view(dtype).reshape(shape)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def random_values(rng: np.random.Generator, dtype: str, n: int, nonzero: bool = False) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d)
        x = rng.integers(info.min, info.max, size=n, dtype=d, endpoint=True)
    else:
        x = (rng.standard_normal(n) * 10).astype(d)
    if nonzero:
        x[x == 0] = 1
    return x


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str) -> None:
    if np.dtype(expected.dtype).kind in "iub":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=RTOL[dtype],
                                   atol=RTOL[dtype], equal_nan=True)


# --------------------------------------------------------------------------- memory


@tile.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64"])
@given(n=st.integers(1, 300))
@SETTINGS
def test_masked_copy(arrays, dtype, n):
    rng = np.random.default_rng(n)
    x = random_values(rng, "int8", n).astype(dtype) if dtype == "bool" else random_values(rng, dtype, n)
    out = arrays.put(poison(n + 7, dtype))
    copy_kernel[(tile.cdiv(n, 64),)](arrays.put(x), out, n, BLOCK=64)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:n], x)
    np.testing.assert_array_equal(got[n:], poison(7, dtype))  # masked-off lanes are not written


@tile.jit
def load_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1.5)
    tl.store(out_ptr + offs, x)


def test_load_other_fills_masked_lanes(arrays):
    x = np.arange(1, 11, dtype=np.float32)
    out = arrays.put(poison(16, np.float32))
    load_other_kernel[(1,)](arrays.put(x), out, 10, BLOCK=16)
    np.testing.assert_array_equal(arrays.get(out), np.concatenate([x, np.full(6, -1.5, np.float32)]))


@tile.jit
def bf16_kernel(x_ptr, y_ptr, out_ptr, out32_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y + x, mask=mask)
    tl.store(out32_ptr + offs, x.to(tl.float32) / y, mask=mask)


def test_bfloat16_arithmetic(arrays):
    rng = np.random.default_rng(0)
    n = 50
    xb, yb = bf16_bits(rng.standard_normal(n) + 3), bf16_bits(rng.standard_normal(n) + 3)
    x, y = bf16_values(xb).astype(np.float64), bf16_values(yb).astype(np.float64)
    out, out32 = arrays.put(np.zeros(n, np.uint16), "bf16"), arrays.put(poison(n, np.float32))
    bf16_kernel[(1,)](arrays.put(xb, "bf16"), arrays.put(yb, "bf16"), out, out32, n, BLOCK=64)
    np.testing.assert_allclose(bf16_values(arrays.get(out)), x * y + x, rtol=1.6e-2, atol=1e-2)
    np.testing.assert_allclose(arrays.get(out32), x / y, rtol=1e-6)


# ------------------------------------------------------------------- binary operators


@tile.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    elif OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "<":
        z = x < y
    elif OP == "<=":
        z = x <= y
    elif OP == ">":
        z = x > y
    elif OP == ">=":
        z = x >= y
    elif OP == "==":
        z = x == y
    elif OP == "!=":
        z = x != y
    elif OP == "min":
        z = tl.minimum(x, y)
    elif OP == "max":
        z = tl.maximum(x, y)
    else:
        z = tl.umulhi(x, y)
    tl.store(out_ptr + offs, z, mask=mask)


def c_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C), in the operands' dtype."""
    q = x // y
    fix = (x % y != 0) & ((x < 0) != (y < 0))
    return (q + fix).astype(x.dtype)


def reference(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
                    "!=": np.not_equal}[op](x, y)
        if op == "/":
            wide = np.float64 if x.dtype == np.float64 else np.float32
            return (x.astype(wide) / y.astype(wide)).astype(wide)
        if op == "%":
            if x.dtype.kind == "f":
                return np.fmod(x.astype(np.float32 if x.dtype == np.float16 else x.dtype), y)
            return (x - c_div(x, y) * y).astype(x.dtype)
        if op == "//":
            return c_div(x, y)
        if op == "min":
            return np.fmin(x, y)
        if op == "max":
            return np.fmax(x, y)
        if op == "umulhi":
            bits = x.dtype.itemsize * 8
            ux, uy = (v.astype(f"u{x.dtype.itemsize}").astype(object) for v in (x, y))
            return np.array([(a * b) >> bits for a, b in zip(ux, uy)], dtype=f"u{x.dtype.itemsize}").astype(x.dtype)
        fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and, "|": np.bitwise_or,
              "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift}[op]
        return fn(x, y).astype(x.dtype)


INT_OPS = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "<", ">=", "==", "!=", "min", "max"]
FLOAT_OPS = ["+", "-", "*", "/", "%", "<", "<=", ">", "==", "!=", "min", "max"]


def _inputs(rng: np.random.Generator, op: str, dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = random_values(rng, dtype, n)
    y = random_values(rng, dtype, n, nonzero=op in ("/", "//", "%"))
    if op in ("<<", ">>"):
        y = rng.integers(0, np.dtype(dtype).itemsize * 8, size=n).astype(dtype)
    if op in ("//", "%") and np.dtype(dtype).kind == "i":
        y[(y == -1) & (x == np.iinfo(dtype).min)] = 3  # INT_MIN / -1 overflows
    if op in ("==", "!=", "min", "max"):
        y[::3] = x[::3]  # some equal pairs
    if np.dtype(dtype).kind == "f" and op in ("min", "max"):
        x[::5] = np.nan
    return x, y


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("op", INT_OPS)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**16))
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
def test_integer_binary_ops(arrays, op, dtype, n, seed):
    rng = np.random.default_rng(seed)
    x, y = _inputs(rng, op, dtype, n)
    expected = reference(op, x, y)
    out = arrays.put(poison(n, expected.dtype))
    binary_kernel[(tile.cdiv(n, 64),)](arrays.put(x), arrays.put(y), out, n, OP=op, BLOCK=64)
    assert_close(arrays.get(out), expected, "float32")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", FLOAT_OPS)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**16))
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
def test_float_binary_ops(arrays, op, dtype, n, seed):
    rng = np.random.default_rng(seed)
    x, y = _inputs(rng, op, dtype, n)
    expected = reference(op, x.astype(np.float64), y.astype(np.float64))
    out_dtype = expected.dtype if expected.dtype == np.bool_ else \
        np.float32 if dtype == "float16" and op in ("/", "%") else np.dtype(dtype)
    out = arrays.put(poison(n, out_dtype))
    binary_kernel[(tile.cdiv(n, 64),)](arrays.put(x), arrays.put(y), out, n, OP=op, BLOCK=64)
    assert_close(arrays.get(out), expected.astype(out_dtype), dtype)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_umulhi(arrays, dtype):
    rng = np.random.default_rng(1)
    x, y = random_values(rng, dtype, 100), random_values(rng, dtype, 100)
    out = arrays.put(poison(100, dtype))
    binary_kernel[(2,)](arrays.put(x), arrays.put(y), out, 100, OP="umulhi", BLOCK=64)
    np.testing.assert_array_equal(arrays.get(out), reference("umulhi", x, y))


@tile.jit
def nan_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + BLOCK + offs, tl.minimum(x, y, tl.PropagateNan.ALL))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.clamp(x, -1.0, 1.0))


def test_propagate_nan_and_clamp(arrays):
    x = np.array([np.nan, 1.0, -3.0, 0.5, 2.0, np.nan, -0.25, 7.0], np.float32)
    y = np.array([0.0, np.nan, -4.0, 0.25, 2.5, np.nan, 1.0, -7.0], np.float32)
    out = arrays.put(poison(24, np.float32))
    nan_kernel[(1,)](arrays.put(x), arrays.put(y), out, BLOCK=8)
    got = arrays.get(out)
    np.testing.assert_array_equal(got[:8], np.maximum(x, y))
    np.testing.assert_array_equal(got[8:16], np.minimum(x, y))
    np.testing.assert_array_equal(got[16:], np.fmin(np.fmax(x, -1.0), 1.0))


# ------------------------------------------------------------------- scalar operands


@tile.jit
def scalar_kernel(x_ptr, out_ptr, s, n, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (x * C + s) - C, mask=mask)


@pytest.mark.parametrize("dtype,c,s", [("int8", 3, 5), ("uint8", 2, 7), ("int32", -7, 100000),
                                       ("float16", 1.5, 2.0), ("float32", 0.25, -3.5), ("int64", 3, 2**40)])
def test_scalars_adopt_block_dtype(arrays, dtype, c, s):
    rng = np.random.default_rng(2)
    x = random_values(rng, dtype, 40)
    if np.dtype(dtype).kind in "iu":
        x = (x % 16).astype(dtype)
    result = {("int8", int): "int32", ("uint8", int): "int32", ("float16", float): "float32"}.get(
        (dtype, type(s)), dtype)  # a runtime scalar (not a literal) takes part in promotion
    out = arrays.put(poison(40, result))
    scalar_kernel[(1,)](arrays.put(x), out, s, 40, C=c, BLOCK=64)
    xs = x.astype(dtype)
    with np.errstate(all="ignore"):
        expected = ((xs * np.array(c, dtype=dtype)).astype(result) + np.array(s, dtype=result)).astype(result) - \
            np.array(c, dtype=result)
    assert_close(arrays.get(out), expected.astype(result), result if result in RTOL else "float32")


# ------------------------------------------------------------------------ unary ops


@tile.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    if OP == "neg":
        y = -x
    elif OP == "invert":
        y = ~x
    elif OP == "not":
        y = not x
    elif OP == "abs":
        y = tl.abs(x)
    elif OP == "exp":
        y = tl.exp(x)
    elif OP == "exp2":
        y = tl.exp2(x)
    elif OP == "log":
        y = tl.log(tl.abs(x) + 1)
    elif OP == "log2":
        y = tl.log2(tl.abs(x) + 1)
    elif OP == "sqrt":
        y = tl.sqrt(tl.abs(x))
    elif OP == "rsqrt":
        y = tl.rsqrt(tl.abs(x) + 1)
    elif OP == "sin":
        y = tl.sin(x)
    elif OP == "cos":
        y = x.cos()
    elif OP == "erf":
        y = tl.erf(x)
    elif OP == "floor":
        y = tl.floor(x)
    elif OP == "ceil":
        y = tl.ceil(x)
    elif OP == "sigmoid":
        y = tl.sigmoid(x)
    else:
        y = tl.fma(x, x, x)
    tl.store(out_ptr + offs, y, mask=mask)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.array([math.erf(v) for v in x.astype(np.float64)])


UNARY_FLOAT = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": lambda x: np.log(np.abs(x) + 1),
    "log2": lambda x: np.log2(np.abs(x) + 1), "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 1), "sin": np.sin, "cos": np.cos, "erf": _erf, "floor": np.floor,
    "ceil": np.ceil, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "fma": lambda x: x * x + x,
}  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_float_unary_ops(arrays, op, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(100) * 3).astype(dtype)
    out = arrays.put(poison(100, dtype))
    unary_kernel[(2,)](arrays.put(x), out, 100, OP=op, BLOCK=64)
    expected = UNARY_FLOAT[op](x.astype(np.float64))
    np.testing.assert_allclose(arrays.get(out), expected, rtol=4e-6 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64"])
@pytest.mark.parametrize("op", ["neg", "invert", "not", "abs"])
def test_integer_unary_ops(arrays, op, dtype):
    rng = np.random.default_rng(4)
    x = random_values(rng, dtype, 100)
    x[::7] = 0
    with np.errstate(all="ignore"):
        expected = {"neg": lambda v: (-v).astype(dtype), "invert": np.invert, "not": lambda v: v == 0,
                    "abs": lambda v: v if v.dtype.kind == "u" else np.abs(v).astype(dtype)}[op](x)
    out = arrays.put(poison(100, expected.dtype))
    unary_kernel[(2,)](arrays.put(x), out, 100, OP=op, BLOCK=64)
    np.testing.assert_array_equal(arrays.get(out), expected)


# ---------------------------------------------------------------------------- casts


@tile.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BITCAST: tl.constexpr, ROUNDING: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if BITCAST:
        y = x.to(DST, bitcast=True)
    elif ROUNDING is not None:
        y = x.to(DST, fp_downcast_rounding=ROUNDING)
    else:
        y = tl.cast(x, DST)
    tl.store(out_ptr + offs, y, mask=mask)


TL = {"int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64, "uint8": tl.uint8,
      "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64, "float16": tl.float16,
      "float32": tl.float32, "float64": tl.float64, "bool": tl.int1}


@pytest.mark.parametrize("src", ["int8", "uint8", "int32", "uint32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("dst", ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "float64"])
def test_value_casts(arrays, src, dst):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(60) * 40).astype(src) if np.dtype(src).kind == "f" else \
        rng.integers(0 if np.dtype(src).kind == "u" else -100, 100, 60).astype(src)
    if np.dtype(dst).kind == "u" and np.dtype(src).kind == "f":
        x = np.abs(x)  # float -> unsigned of a negative value is undefined
    x[::9] = 0
    with np.errstate(all="ignore"):
        expected = (x != 0) if dst == "bool" else x.astype(np.float64).astype(dst) if np.dtype(src).kind == "f" \
            else x.astype(dst)
    out = arrays.put(poison(60, dst))
    cast_kernel[(1,)](arrays.put(x), out, 60, DST=TL[dst], BITCAST=False, ROUNDING=None, BLOCK=64)
    assert_close(arrays.get(out), expected, dst if dst in RTOL else "float32")


def test_bitcast_and_rounding(arrays):
    x = np.array([1.0, -2.5, 3.0e-3, 65504.0, 1 / 3, -1 / 3, 100.7, 1e-6], np.float32)
    out = arrays.put(poison(8, np.int32))
    cast_kernel[(1,)](arrays.put(x), out, 8, DST=tl.int32, BITCAST=True, ROUNDING=None, BLOCK=8)
    np.testing.assert_array_equal(arrays.get(out), x.view(np.int32))
    rtz, rtne = arrays.put(poison(8, np.float16)), arrays.put(poison(8, np.float16))
    cast_kernel[(1,)](arrays.put(x), rtz, 8, DST=tl.float16, BITCAST=False, ROUNDING="rtz", BLOCK=8)
    cast_kernel[(1,)](arrays.put(x), rtne, 8, DST=tl.float16, BITCAST=False, ROUNDING="rtne", BLOCK=8)
    nearest = x.astype(np.float16)
    toward_zero = np.where(np.abs(nearest.astype(np.float32)) > np.abs(x), np.nextafter(nearest, np.float16(0)),
                           nearest)
    np.testing.assert_array_equal(arrays.get(rtne), nearest)
    np.testing.assert_array_equal(arrays.get(rtz), toward_zero)
