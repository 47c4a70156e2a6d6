"""gfx942 code run on the emulator's wave machine (tile.emulator, target gfx942) against NumPy in float64:
selection, allocation and waits together compute the kernel, lanes outside the mask touch
nothing, and no register is read before its load was waited for."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl

from amdgcn_util import instructions, named, needs_llvm
from test_amdgcn_codegen import (add_kernel, axpy_unmasked, bf16_grid_kernel, convert_kernel, int_kernel, math_kernel,
                                 sum_kernel, where_kernel)
from tile.codegen.amdgcn import assemble, compile_amdgcn
from tile.compiler import compile_kernel
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_machine import run_amdgcn
from tutorial_util import load_tutorial

RNG = np.random.default_rng(2026)


def run(kernel, args, grid, num_warps=4, **constexprs):
    spec, _ = kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": 3, "maxnreg": None}
    simt = compile_kernel(kernel, spec, options, "gfx942", until="amdgcn").func
    compiled = compile_amdgcn(simt, "gfx942")
    run_amdgcn(compiled.text, grid, named(kernel, args))
    return compiled


@pytest.mark.parametrize("n, block, num_warps", [(1000, 256, 4), (1024, 512, 4), (77, 64, 1), (300, 128, 2),
                                                  (5000, 4096, 4)])  # offsets past the 13-bit immediate
def test_vector_add(n, block, num_warps):
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n + 8, np.nan, np.float32)
    run(add_kernel, (x, y, out, n), -(-n // block), num_warps=num_warps, BLOCK=block)
    np.testing.assert_allclose(out[:n], x.astype(np.float64) + y, rtol=1e-6)
    assert np.isnan(out[n:]).all()  # past the mask: untouched


def test_f16_where_with_other():
    n = 1000
    x, y = (RNG.standard_normal(n).astype(np.float16) for _ in range(2))
    out = np.full(n, np.nan, np.float16)
    run(where_kernel, (x, y, out, n), 4, BLOCK=256)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    doubled = (x64 * 2).astype(np.float16).astype(np.float64)
    expected = np.where(x64 > y64, doubled - y64, y64)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=1e-3, atol=1e-3)


def test_axpy_with_a_float_argument():
    x = RNG.standard_normal(512).astype(np.float32)
    out = np.full(512, np.nan, np.float32)
    run(axpy_unmasked, (x, out, 2.5), 2, BLOCK=256)
    np.testing.assert_allclose(out, 2.5 * x.astype(np.float64) + 1.0, rtol=1e-6, atol=1e-6)  # two f32 roundings


def test_integer_ops():
    n, shift = 1000, 3
    x = RNG.integers(-2**20, 2**20, n).astype(np.int32)
    out = np.full(n, -7, np.int32)
    run(int_kernel, (x, out, n, shift), 8, BLOCK=128)
    x64 = x.astype(np.int64)
    y = np.maximum((x64 << shift) ^ (x64 >> 3), -x64) + n * 3 - np.arange(n)
    np.testing.assert_array_equal(out, ((y + 2**31) % 2**32 - 2**31).astype(np.int32))


def test_conversions_and_64_bit_offsets():
    n = 1000
    x = RNG.integers(-10**6, 10**6, n).astype(np.int32)
    out = np.full(n, -7, np.int32)
    run(convert_kernel, (x, out, n), 4, BLOCK=256)
    np.testing.assert_array_equal(out, np.trunc(x.astype(np.float32) * np.float32(0.25)).astype(np.int32))


def test_transcendentals_and_approximate_division():
    n = 700
    x = RNG.standard_normal(n).astype(np.float32) * 4
    out = np.full(n, np.nan, np.float32)
    run(math_kernel, (x, out, n), 3, BLOCK=256)
    x64 = x.astype(np.float64)
    expected = 1 / (1 + np.exp(-x64)) + np.sqrt(np.abs(x64)) + x64 / (x64 + 3)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)  # approximate units, a few ulp each


def _bf16_round(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return np.where(np.isnan(x), np.float32(np.nan), (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32))


def test_two_dimensional_grid_num_programs_and_bf16_rounding():
    n = 2000
    x = RNG.standard_normal(n).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 3.3895314e38]  # the last rounds up to inf
    out = np.full(n, -1.0, np.float32)
    grid = (3, 4)  # program_id(1) picks the block; num_programs(0) = 3 shifts it
    run(bf16_grid_kernel, (x, out, n), grid, BLOCK=256)
    covered = np.zeros(n, bool)
    for pid in range(grid[1]):
        covered[pid * 256 + 3:(pid + 1) * 256 + 3] = True
    covered &= np.arange(n) < n
    np.testing.assert_array_equal(out[covered], _bf16_round(x)[covered])
    assert (out[~covered] == -1.0).all()


@tile.jit
def rounding_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.floor(x) * 1000.0 + tl.ceil(x) * 100.0 + (x.to(tl.float64) * 3.0).to(tl.float32)
    tl.store(out_ptr + offs, y, mask=m)


def test_rounding_functions_and_f64_conversions():
    n = 500
    x = (RNG.standard_normal(n) * 10).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    run(rounding_kernel, (x, out, n), 2, BLOCK=256)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out, np.floor(x64) * 1000 + np.ceil(x64) * 100 + x64 * 3, rtol=1e-6, atol=1e-3)


@pytest.mark.parametrize("block, num_warps", [(256, 4), (64, 1), (512, 8), (128, 2)])
def test_sum_shuffles_lds_and_barrier(block, num_warps):
    x = RNG.standard_normal(block * 3).astype(np.float32)
    out = np.full(3, np.nan, np.float32)
    compiled = run(sum_kernel, (x, out), 3, num_warps=num_warps, BLOCK=block)
    np.testing.assert_allclose(out, x.reshape(3, block).astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    opcodes = {i.opcode for i in compiled.insts}
    assert {"ds_bpermute_b32", "s_barrier"} <= opcodes or num_warps == 1


@tile.jit
def masked_min_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n, other=3)
    tl.store(out_ptr + tl.program_id(0), tl.min(v, axis=0))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_shuffled_64_bit_values_see_the_loads_other(n):
    """A fuzzer find: the halves of a masked load's result went to the shuffles without `other`."""
    x = np.array([5, 1], np.uint64)
    out = np.zeros(1, np.uint64)
    run(masked_min_kernel, (x, out, n), 1, num_warps=1, BLOCK=2)
    assert out[0] == min([3] + list(x[:n]))


def test_the_model_catches_a_missing_wait():
    n = 256
    x = RNG.standard_normal(n).astype(np.float32)
    compiled = run(add_kernel, (x, x, np.zeros(n, np.float32), n), 1, BLOCK=256)
    unwaited = "\n".join(line for line in compiled.text.splitlines() if "s_waitcnt" not in line)
    with pytest.raises(EmulatorError, match="before its load was waited for"):
        run_amdgcn(unwaited, 1, [x, x, np.zeros(n, np.float32), n])


# ------------------------------------------------------------------ every binary op, every type

@tile.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << (y & 15)
    elif OP == "shr":
        r = x >> (y & 15)
    elif OP == "div":
        r = x // tl.where(y == 0, 1, y)
    elif OP == "rem":
        r = x % tl.where(y == 0, 1, y)
    elif OP == "lt":
        r = tl.where(x < y, x, y + y)
    else:
        r = tl.where(x == y, y, x - y)
    tl.store(out_ptr + offs, r, mask=m)


def _int_divide(op, x, y):
    """C's truncating division and remainder, as arith.div / arith.rem define them."""
    q = np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))
    return q if op == "div" else x - q * y


def _reference(op, x, y):
    """What the kernel computes, in NumPy (integers wrap; f16 arithmetic rounds an f32 result)."""
    if x.dtype == np.float16:
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
        return _reference(op, x32, y32).astype(np.float16)
    if x.dtype.kind in "iu":
        wide = np.int64 if x.dtype.itemsize < 8 else x.dtype
        x, y = x.astype(wide), y.astype(wide)
    table = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "max": lambda: np.maximum(x, y),
             "min": lambda: np.minimum(x, y), "and": lambda: x & y, "or": lambda: x | y, "xor": lambda: x ^ y,
             "shl": lambda: x << (y & 15), "shr": lambda: x >> (y & 15), "lt": lambda: np.where(x < y, x, y + y),
             "eq": lambda: np.where(x == y, y, x - y),
             "div": lambda: _int_divide("div", x, np.where(y == 0, 1, y)),
             "rem": lambda: _int_divide("rem", x, np.where(y == 0, 1, y))}
    with np.errstate(over="ignore"):
        return table[op]()


INT_OPS = ("add", "sub", "mul", "max", "min", "and", "or", "xor", "shl", "shr", "lt", "eq")
FLOAT_OPS = ("add", "sub", "mul", "max", "min", "lt", "eq")
CASES = [(op, t) for t in ("int32", "uint32", "int64") for op in INT_OPS if not (t == "int64" and op == "mul")]
CASES += [(op, t) for t in ("int32", "uint32") for op in ("div", "rem")]
CASES += [(op, t) for t in ("float32", "float16", "float64") for op in FLOAT_OPS]


@settings(max_examples=120, deadline=None)
@given(case=st.sampled_from(CASES), n=st.integers(1, 200), seed=st.integers(0, 2**32 - 1))
def test_binary_ops_match_numpy(case, n, seed):
    op, name = case
    rng = np.random.default_rng(seed)
    dtype = np.dtype(name)
    if dtype.kind == "f":
        x, y = (rng.standard_normal(n).astype(dtype) for _ in range(2))
        y[::7] = x[::7]  # some equal pairs for eq
    else:
        info = np.iinfo(dtype)
        x, y = (rng.integers(max(info.min, -2**40), min(info.max, 2**40), n, endpoint=True).astype(dtype)
                for _ in range(2))
        y[::7] = x[::7]
    out = np.zeros(n, dtype) + (np.array(np.nan, dtype) if dtype.kind == "f" else dtype.type(77))
    run(binary_kernel, (x, y, out, n), -(-n // 64), num_warps=2, OP=op, BLOCK=64)
    expected = _reference(op, x, y)
    if dtype.kind == "f":
        np.testing.assert_array_equal(out, expected.astype(dtype))  # one f32 (f16) rounding, as NumPy's
    else:
        np.testing.assert_array_equal(out, expected.astype(dtype))


@needs_llvm
@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_binary_ops_assemble(case):
    op, name = case
    x = np.ones(100, name)
    text = str(tile.dump(binary_kernel, x, x, x, 100, OP=op, BLOCK=64, stage="amdgcn", target="gfx942", num_warps=2))
    assert assemble(text, "gfx942")[:4] == b"\x7fELF"


def _tutorial(name: str):
    return load_tutorial(name, "tutorial")


@pytest.mark.parametrize("n_cols, block, num_warps", [(781, 1024, 4), (100, 128, 1), (33, 64, 2)])
def test_tutorial_softmax(n_cols, block, num_warps):
    kernel = _tutorial("02_fused_softmax").softmax_kernel
    rows = 3
    x = RNG.standard_normal((rows, n_cols)).astype(np.float32)
    out = np.full((rows, n_cols), np.nan, np.float32)
    run(kernel, (out, x, n_cols, n_cols, n_cols), rows, num_warps=num_warps, BLOCK=block)
    x64 = x.astype(np.float64)
    expected = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, expected / expected.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n_cols, block, num_warps", [(300, 128, 4), (64, 64, 1), (1000, 256, 2)])
def test_tutorial_layer_norm_loops(n_cols, block, num_warps):
    kernel = _tutorial("03_layer_norm").layer_norm_kernel
    rows, eps = 3, 1e-5
    x = RNG.standard_normal((rows, n_cols)).astype(np.float32)
    w, b = RNG.standard_normal(n_cols).astype(np.float32), RNG.standard_normal(n_cols).astype(np.float32)
    y = np.full((rows, n_cols), np.nan, np.float16)
    mean, rstd = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    compiled = run(kernel, (x, y, w, b, mean, rstd, n_cols, n_cols, eps), rows, num_warps=num_warps, BLOCK=block)
    assert sum(i.opcode == "label" for i in compiled.insts) == 6  # three loops
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var + eps), rtol=1e-4)
    expected = (x64 - mu[:, None]) / np.sqrt(var[:, None] + eps) * w + b
    np.testing.assert_allclose(y.astype(np.float64), expected, rtol=2e-3, atol=2e-3)


@tile.jit
def loop_kernel(x_ptr, out_ptr, n, trips, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    flag = offs < 0
    for i in range(trips):
        acc = acc * 0.5 + tl.load(x_ptr + offs + i * n, mask=m, other=1.0)
        flag = flag ^ (offs < i)
    tl.store(out_ptr + offs, tl.where(flag, -acc, acc), mask=m)


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_loop_carried_values_and_zero_trips(trips):
    n = 100
    x = RNG.standard_normal(n * max(trips, 1)).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    run(loop_kernel, (x, out, n, trips), 1, num_warps=4, BLOCK=128)
    acc, flag = np.zeros(n), np.zeros(n, bool)
    for i in range(trips):
        acc = acc * 0.5 + x[i * n:(i + 1) * n]
        flag ^= np.arange(n) < i
    np.testing.assert_allclose(out, np.where(flag, -acc, acc), rtol=1e-6, atol=1e-6)


@needs_llvm
def test_loops_assemble():
    x = np.ones(300, np.float32)
    text = str(tile.dump(loop_kernel, x, x, 100, 3, BLOCK=128, stage="amdgcn", target="gfx942"))
    assert "s_cbranch_scc1 .Lloop1" in instructions(text) and "\n.Lloop1:\n" in text
    assert assemble(text, "gfx942")[:4] == b"\x7fELF"
    kernel = _tutorial("03_layer_norm").layer_norm_kernel
    y = np.ones(300, np.float16)
    text = str(tile.dump(kernel, x, y, x, x, x, x, 300, 300, 1e-5, BLOCK=128, stage="amdgcn", target="gfx942"))
    assert assemble(text, "gfx942")[:4] == b"\x7fELF"


@tile.jit
def branch_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    if (pid & 1) == 0:
        y = x * 2.0
        tl.store(out_ptr + offs, y, mask=m)
    else:
        y = x - 1.0
        tl.store(out_ptr + offs, y + 0.5, mask=m)
    tl.store(out_ptr + n + offs, y, mask=m)


def test_if_else_by_exec_masking():
    n = 300
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(2 * n, np.nan, np.float32)
    compiled = run(branch_kernel, (x, out, n), 3, BLOCK=128)
    assert "s_andn2_b64" in {i.opcode for i in compiled.insts}
    pid = np.arange(n) // 128
    y = np.where(pid % 2 == 0, x * 2.0, x - 1.0)
    np.testing.assert_allclose(out[:n], np.where(pid % 2 == 0, y, y + 0.5), rtol=1e-6)
    np.testing.assert_allclose(out[n:], y, rtol=1e-6)


@pytest.mark.parametrize("name", ["int32", "uint32"])
def test_integer_division_over_the_whole_range(name):
    info = np.iinfo(name)
    rng = np.random.default_rng(11)
    n = 256
    x = rng.integers(info.min, info.max, n, endpoint=True).astype(name)
    y = np.concatenate([rng.integers(info.min, info.max, n // 2, endpoint=True),
                        rng.integers(-300 if name == "int32" else 1, 300, n // 2)]).astype(name)
    x[:4], y[:4] = [info.max, info.min, info.max, 0], [1, 1, info.max, 3]
    y[y == 0] = 1
    if name == "int32":
        y[(x == info.min) & (y == -1)] = 1  # the one overflowing quotient
    for op in ("div", "rem"):
        out = np.zeros(n, name)
        run(binary_kernel, (x, y, out, n), 4, num_warps=2, OP=op, BLOCK=64)
        np.testing.assert_array_equal(out, _reference(op, x, y).astype(name))


@tile.jit
def unary_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, -x, mask=m)
    tl.store(out_ptr + n + offs, tl.abs(x), mask=m)


@pytest.mark.parametrize("name", ["int32", "int64", "float64"])
def test_negation_and_absolute_value(name):
    n = 100
    x = (RNG.standard_normal(n) * 1e6).astype(name)
    x[:2] = [0, -1]
    out = np.zeros(2 * n, name)
    run(unary_kernel, (x, out, n), 1, num_warps=2, BLOCK=128)
    np.testing.assert_array_equal(out, np.concatenate([-x, np.abs(x)]))


@needs_llvm
@pytest.mark.parametrize("name", ["int32", "int64", "float64"])
def test_negation_and_absolute_value_assemble(name):
    x = np.ones(100, name)
    text = str(tile.dump(unary_kernel, x, x, 100, BLOCK=128, stage="amdgcn", target="gfx942", num_warps=2))
    assert assemble(text, "gfx942")[:4] == b"\x7fELF"


def test_the_model_refuses_positional_arguments_that_do_not_fit():
    """n_elements = 1 is specialized away: four positional values for three kernel arguments
    would shift, so the model asks for them by name."""
    x = np.ones(1, np.float32)
    compiled = run(add_kernel, (x, x, np.zeros(1, np.float32), 1), 1, BLOCK=64)
    with pytest.raises(EmulatorError, match=r"add_kernel: takes 3 arguments \(x_ptr, y_ptr, out_ptr\), got 4"):
        run_amdgcn(compiled.text, 1, [x, x, x, 1])
