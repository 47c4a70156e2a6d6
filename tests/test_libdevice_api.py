"""tile.language.extra.libdevice as a module: Triton's names and paths, the argument rules (fp32
or fp64, one type, int32 orders and exponents) with errors that name the caller's line, and the
shapes of use: scalars, Python numbers, broadcasting, 2-D blocks, runtime loops and branches."""
from __future__ import annotations

import inspect
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)
from tile.language.extra import libdevice
from tile.language.extra.cuda import libdevice as cuda_libdevice

NAMES = ["sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "cbrt", "rcbrt",
         "hypot", "rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d", "erf", "erfc", "erfcx", "erfinv", "erfcinv",
         "normcdf", "normcdfinv", "lgamma", "tgamma", "j0", "j1", "y0", "y1", "jn", "yn", "cyl_bessel_i0",
         "cyl_bessel_i1"]


def test_triton_names_signatures_and_both_paths():
    assert set(NAMES) <= set(libdevice.__all__)  # with the functions of libdevice_bits
    assert tl.extra.libdevice is libdevice and tl.extra.cuda.libdevice is cuda_libdevice
    for name in NAMES:
        fn = getattr(libdevice, name)
        assert getattr(cuda_libdevice, name) is fn
        assert f"libdevice.{name}(" in fn.__doc__  # every docstring shows a call
    assert list(inspect.signature(libdevice.atan2).parameters) == ["arg0", "arg1"]
    assert list(inspect.signature(libdevice.rnorm4d).parameters) == ["arg0", "arg1", "arg2", "arg3"]


# ------------------------------------------------------------------------------- errors


@tile.jit
def misuse_kernel(x_ptr, out_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr)
    if CASE == "narrow":
        y = libdevice.sin(x)
    elif CASE == "integer":
        y = libdevice.exp(x.to(tl.int32))
    elif CASE == "mixed":
        y = libdevice.atan2(x, x.to(tl.float64))
    elif CASE == "not_a_number":
        y = libdevice.hypot(x, "3")
    elif CASE == "float_order":
        y = libdevice.jn(x, x)
    elif CASE == "python_float_order":
        y = libdevice.yn(1.5, x)
    elif CASE == "wide_exponent":
        y = libdevice.pow(x, x.to(tl.int64))
    else:
        y = x
    tl.store(out_ptr, y)


MISUSE = [
    ("narrow", np.float16, "libdevice.sin expects fp32 or fp64 arguments (as Triton's libdevice), got fp16; "
                           "convert it with .to(tl.float32) first"),
    ("integer", np.float32, "libdevice.exp expects fp32 or fp64 arguments (as Triton's libdevice), got int32"),
    ("mixed", np.float32, "libdevice.atan2 expects all arguments of one type, got fp32 and fp64"),
    ("not_a_number", np.float32, "libdevice.hypot expects numbers or tensors, got '3'"),
    ("float_order", np.float32, "libdevice.jn expects an int32 integer argument, got fp32"),
    ("python_float_order", np.float32, "libdevice.yn expects an int32 integer argument, got 1.5"),
    ("wide_exponent", np.float32, "libdevice.pow expects an int32 integer argument, got int64"),
]


@pytest.fixture
def monkeypatch_env(monkeypatch):
    """Kernels on NumPy arrays run on the interpreter, also on GPU machines."""
    monkeypatch.setenv("TILE_INTERPRET", "1")


@pytest.mark.parametrize("case, dtype, message", MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_is_a_compilation_error_at_the_callers_line(case, dtype, message, monkeypatch_env):
    x = np.ones(4, dtype)
    with pytest.raises(tile.CompilationError) as info:
        misuse_kernel[(1,)](x, np.zeros(4, np.float32), CASE=case)
    lines, first = inspect.getsourcelines(misuse_kernel.fn)
    call = next(i for i, text in enumerate(lines) if f'CASE == "{case}"' in text) + 1
    assert message in str(info.value)
    assert info.value.file == __file__ and info.value.line == first + call


# ------------------------------------------------------------------------ ways of calling


@tile.jit
def shapes_kernel(x_ptr, n_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Scalars, Python numbers, int32 exponents, a constant order, broadcasting and a 2-D block
    (block orders are in test_libdevice_math's jn and yn)."""
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + rows * COLS + cols)  # [ROWS, COLS]
    first = tl.load(x_ptr)  # a scalar
    n = tl.load(n_ptr + rows * COLS + cols)  # int32
    out = out_ptr + rows * COLS + cols
    tl.store(out, libdevice.sin(x))
    tl.store(out + ROWS * COLS, libdevice.exp(first) + x * 0.0)
    tl.store(out + 2 * ROWS * COLS, libdevice.atan2(x, 1.5))
    tl.store(out + 3 * ROWS * COLS, libdevice.pow(x, 3))
    tl.store(out + 4 * ROWS * COLS, libdevice.pow(x, n))
    tl.store(out + 5 * ROWS * COLS, libdevice.pow(x, 2.5))
    tl.store(out + 6 * ROWS * COLS, libdevice.hypot(x, first))
    tl.store(out + 7 * ROWS * COLS, libdevice.norm3d(x, tl.load(x_ptr + cols), 2.0))
    tl.store(out + 8 * ROWS * COLS, libdevice.jn(2, x))
    tl.store(out + 9 * ROWS * COLS, libdevice.erf(0.5) + x * 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalars_numbers_orders_and_broadcasting(arrays, dtype):
    rows, cols = 4, 8
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 3.0, (rows, cols)).astype(dtype)
    n = rng.integers(-4, 5, (rows, cols)).astype(np.int32)
    out = arrays.put(poison((10, rows, cols), dtype))
    shapes_kernel[(1,)](arrays.put(x), arrays.put(n), out, ROWS=rows, COLS=cols)
    got = arrays.get(out).astype(np.float64)
    xd, first = x.astype(np.float64), float(x[0, 0])
    want = [np.sin(xd), np.full_like(xd, math.exp(first)), np.arctan2(xd, 1.5), xd**3, xd**n, xd**2.5,
            np.hypot(xd, first), np.sqrt(xd**2 + xd[0][None, :] ** 2 + 4.0),
            np.vectorize(lambda v: float(mp.besselj(2, v)))(xd),
            np.full_like(xd, float(np.float32(math.erf(0.5))))]  # a Python number is fp32
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[k], w, rtol=4 * np.finfo(dtype).eps, err_msg=f"output {k}")


@tile.jit
def loop_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    """sin inside a runtime loop: its huge-argument branch is taken in some iterations only."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros([BLOCK], dtype=x.dtype)
    for i in range(n_iter):
        acc += libdevice.sin(x * tl.where(i > 0, 1e25, 1.0))
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK, libdevice.cos(tl.load(x_ptr) * 1e30))  # a scalar with a huge argument


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inside_runtime_loops_and_with_scalar_huge_arguments(arrays, dtype):
    block = 64
    x = np.linspace(0.5, 2.0, block).astype(dtype)
    out = arrays.put(poison(block + 1, dtype))
    loop_kernel[(1,)](arrays.put(x), out, 3, BLOCK=block)
    got = arrays.get(out)
    scales = [np.float32(1.0), np.float32(1e25), np.float32(1e25)]  # the kernel's fp32 constants
    want = sum(np.sin((x * dtype(s)).astype(np.float64)) for s in scales)
    np.testing.assert_allclose(got[:block], want, rtol=0, atol=4 * np.finfo(dtype).eps)
    assert math.isclose(got[block], math.cos(float(x[0] * dtype(1e30))), abs_tol=2 * float(np.finfo(dtype).eps))


# ---------------------------------------------------------------------------- provenance


def test_the_fitting_tool_reproduces_the_tables():
    """tools/libm_fit.py prints the coefficient tables of the library: three quick fits of it
    give exactly the tables in the modules."""
    import importlib.util
    import pathlib
    import sys

    from tile.language.extra import libm_exp_log, libm_power, libm_trig

    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "libm_fit.py"
    spec = importlib.util.spec_from_file_location("libm_fit", path)
    fit_tool = importlib.util.module_from_spec(spec)
    sys.modules["libm_fit"] = fit_tool
    spec.loader.exec_module(fit_tool)
    tables = {"rcbrt_seed": libm_power.RCBRT_SEED, "exp_f32": libm_exp_log.EXP_P[0], "sin_f32": libm_trig.SIN_P[0]}
    for name, table in tables.items():
        fit = next(f for f in fit_tool.FITS if f.name == name)
        coeffs, _ = fit_tool.remez(fit)
        assert tuple(fit_tool.rounded(coeffs, fit.float_bits)) == tuple(table), name


# ---------------------------------------------------------------------------- properties


@tile.jit
def identities_kernel(x_ptr, n_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    n = tl.load(n_ptr + offs)
    tl.store(out_ptr + offs, libdevice.sinpi(x))
    tl.store(out_ptr + BLOCK + offs, libdevice.sinpi(x + 2.0))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.cospi(x + 0.5))
    tl.store(out_ptr + 3 * BLOCK + offs, -libdevice.sinpi(x))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.pow(x, n))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.pow(x, n.to(x.dtype)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), wide=st.booleans())
def test_exact_identities(seed, wide, monkeypatch_env):
    """sinpi(x + 2) = sinpi(x) and cospi(x + 1/2) = -sinpi(x) bit for bit (the reduction by half
    turns is exact; x is drawn so that x + 2 and x + 1/2 are exact too), and pow with an int32
    exponent equals pow with the same exponent as a float."""
    dtype = np.float64 if wide else np.float32
    rng = np.random.default_rng(seed)
    block = 64
    x = (np.round(rng.uniform(-1e4, 1e4, block) * 256) / 256).astype(dtype)  # multiples of 2^-8
    n = rng.integers(-40, 41, block).astype(np.int32)
    out = poison(6 * block, dtype)
    identities_kernel[(1,)](x, n, out, BLOCK=block)
    out = out.reshape(6, block)
    assert np.array_equal(out[0], out[1]) and np.array_equal(np.signbit(out[0]), np.signbit(out[1]))
    np.testing.assert_array_equal(out[2], out[3] + 0.0)  # cospi(n + 1/2) is +0, -sinpi(n) may be -0
    np.testing.assert_array_equal(out[4], out[5])
