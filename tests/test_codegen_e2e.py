"""End to end: Python kernels -> tile IR -> tile passes -> gpu passes -> simt IR -> PTX.

Each kernel runs as PTX on tile.emulator against NumPy and its PTX assembles with ptxas for
sm_80, sm_90 and sm_90a. Covers every op family: memory, elementwise and math, casts, 2-D
tiles, reductions (argmax, custom combine), scans, atomics, control flow, Philox, print and
assert. `ptxas_report` prints the registers and spills of vector add, softmax and layer norm.
"""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import ARCHS, check_ptx, result, run
from ptxas_util import needs_ptxas
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.emulator import EmulatorError
from tile.ir import Operation
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes

RNG = np.random.default_rng(5)


def compile_simt(kernel, args, meta=None, num_warps: int = 4, target: str = "sm_90a") -> tuple[Operation, list]:
    """(simt.func, runtime arguments in parameter order) of `kernel` specialized for `args`."""
    spec, runtime = kernel.specialize(args, meta or {})
    func = kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(num_warps, target)).run(func)
    return lower_to_simt(func), runtime


def launch(kernel, grid, args, meta=None, num_warps: int = 4, target: str = "sm_90a"):
    """Compile and run the PTX on tile.emulator; returns (the run, its arguments, simt.func, runtime arguments)."""
    simt, runtime = compile_simt(kernel, args, meta, num_warps, target)
    m, dev = run(simt, grid, runtime)
    return m, dev, simt, runtime


def out_of(m, dev, runtime, array: np.ndarray) -> np.ndarray:
    """The device copy of `array` (found by identity among the runtime arguments)."""
    i = next(k for k, a in enumerate(runtime) if a is array)
    return result(m, dev[i], array)


# ------------------------------------------------------------------------------ kernels


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tile.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@tile.jit
def layer_norm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y.to(tl.float16), mask=mask)


@tile.jit
def tile2d_kernel(x_ptr, t_ptr, rows_ptr, cols_ptr, arg_ptr, m, n, stride, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :], mask=mask, other=0.0)
    tl.store(t_ptr + rn[:, None] * BM + rm[None, :], tl.trans(x))
    tl.store(rows_ptr + rm, tl.sum(x, axis=1))
    tl.store(cols_ptr + rn, tl.max(x, axis=0))
    tl.store(arg_ptr + rm, tl.argmax(x, axis=1))


@tile.jit
def _combine_minmax(a_lo, a_hi, b_lo, b_hi):
    return tl.minimum(a_lo, b_lo), tl.maximum(a_hi, b_hi)


@tile.jit
def _add_pairs(a, b):
    return a + b


@tile.jit
def reduce_scan_kernel(x_ptr, out_ptr, cs_ptr, rcs_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    lo, hi = tl.reduce((x, x), 0, _combine_minmax)
    tl.store(out_ptr, lo)
    tl.store(out_ptr + 1, hi)
    tl.store(out_ptr + 2, tl.sum(x, axis=0))
    tl.store(out_ptr + 3, tl.argmin(x, axis=0).to(tl.float32))
    tl.store(cs_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(rcs_ptr + offs, tl.associative_scan(x, 0, _add_pairs, reverse=True))


@tile.jit
def atomics_kernel(vals_ptr, hist_ptr, max_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(vals_ptr + offs, mask=mask, other=0.0)
    bucket = (v * 4).to(tl.int32) & 7
    tl.atomic_add(hist_ptr + bucket, 1, mask=mask)
    tl.atomic_max(max_ptr, tl.max(tl.where(mask, v, -1.0), axis=0))
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.atomic_add(lock_ptr + 1, 1)
    tl.atomic_xchg(lock_ptr, 0)


@tile.jit
def control_kernel(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, tl.cdiv(n, BLOCK)):
        idx = i * BLOCK + offs
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0)
    s = tl.sum(acc, axis=0)
    if s > 0:
        s = s * 2
    else:
        s = -s
    k = 1
    while k < limit:
        k = k * 3
    tl.store(out_ptr, s + k)


@tile.jit
def math_cast_kernel(x_ptr, f16_ptr, i8_ptr, math_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(f16_ptr + offs, x.to(tl.float16))
    tl.store(i8_ptr + offs, (x * 10).to(tl.int8))
    y = tl.exp(x) + tl.log(tl.abs(x) + 1) + tl.sin(x) * tl.cos(x) + tl.sqrt(tl.abs(x)) + tl.erf(x)
    y = y + tl.exp2(x) + tl.log2(tl.abs(x) + 2) + tl.floor(x) + tl.ceil(x) + tl.rsqrt(tl.abs(x) + 1)
    y = tl.fma(y, x, tl.sigmoid(x))
    tl.store(math_ptr + offs, y)


@tile.jit
def rand_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs))


@tile.jit
def debug_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x: ", x)
    tl.device_assert(x >= 0, "x must be non-negative")


# ------------------------------------------------------------------------------ runs


def test_vector_add() -> None:
    n = 3000
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    m, dev, simt, rt = launch(add_kernel, (3,), (x, y, out, n), {"BLOCK": 1024})
    np.testing.assert_array_equal(out_of(m, dev, rt, out), x + y)


@pytest.mark.parametrize("block,warps", [(1024, 4), (2048, 8)])
def test_softmax(block: int, warps: int) -> None:
    rows, cols = 3, block - 16
    x = (RNG.standard_normal((rows, block)) * 3).astype(np.float32)
    out = np.full((rows, block), np.nan, np.float32)
    m, dev, _, rt = launch(softmax_kernel, (rows,), (out, x, block, block, cols), {"BLOCK": block}, warps)
    got = out_of(m, dev, rt, out)[:, :cols]
    e = np.exp(x[:, :cols] - x[:, :cols].max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=2e-5, atol=1e-7)


def test_layer_norm_fp16() -> None:
    rows, n, block = 2, 1000, 256
    x = (RNG.standard_normal((rows, n)) + 1).astype(np.float16)
    w, b = RNG.standard_normal(n).astype(np.float16), RNG.standard_normal(n).astype(np.float16)
    y = np.full((rows, n), np.nan, np.float16)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    m, dev, _, rt = launch(layer_norm_kernel, (rows,), (x, y, w, b, mean, rstd, n, n, 1e-5), {"BLOCK": block})
    xx = x.astype(np.float64)
    mu = xx.mean(1, keepdims=True)
    sd = np.sqrt(((xx - mu) ** 2).mean(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out_of(m, dev, rt, y).astype(np.float64), (xx - mu) / sd * w + b, atol=1e-2, rtol=1e-2)
    np.testing.assert_allclose(out_of(m, dev, rt, mean), mu[:, 0], rtol=1e-4)


def test_tiles_trans_and_reductions() -> None:
    bm, bn, m_, n_ = 32, 64, 30, 60
    x = RNG.standard_normal((bm, bn)).astype(np.float32)
    t, rows, cols = np.zeros((bn, bm), np.float32), np.zeros(bm, np.float32), np.zeros(bn, np.float32)
    arg = np.zeros(bm, np.int32)
    m, dev, _, rt = launch(tile2d_kernel, (1,), (x, t, rows, cols, arg, m_, n_, bn), {"BM": bm, "BN": bn})
    xm = np.where((np.arange(bm)[:, None] < m_) & (np.arange(bn)[None, :] < n_), x, 0)
    np.testing.assert_array_equal(out_of(m, dev, rt, t), xm.T)
    np.testing.assert_allclose(out_of(m, dev, rt, rows), xm.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out_of(m, dev, rt, cols), xm.max(0))
    np.testing.assert_array_equal(out_of(m, dev, rt, arg), xm.argmax(1))


def test_reductions_and_scans() -> None:
    block = 512
    x = RNG.integers(-9, 9, block).astype(np.float32)
    out, cs, rcs = np.zeros(4, np.float32), np.zeros(block, np.float32), np.zeros(block, np.float32)
    m, dev, _, rt = launch(reduce_scan_kernel, (1,), (x, out, cs, rcs), {"BLOCK": block})
    np.testing.assert_array_equal(out_of(m, dev, rt, out), [x.min(), x.max(), x.sum(), x.argmin()])
    np.testing.assert_array_equal(out_of(m, dev, rt, cs), np.cumsum(x))
    np.testing.assert_array_equal(out_of(m, dev, rt, rcs), np.cumsum(x[::-1])[::-1])


def test_atomics() -> None:
    n, block = 1000, 256
    vals = RNG.uniform(0, 2, n).astype(np.float32)
    hist, mx, lock = np.zeros(8, np.int32), np.full(1, -5.0, np.float32), np.zeros(2, np.int32)
    m, dev, _, rt = launch(atomics_kernel, (4,), (vals, hist, mx, lock, n), {"BLOCK": block})
    np.testing.assert_array_equal(out_of(m, dev, rt, hist), np.bincount((vals * 4).astype(np.int32) & 7, minlength=8))
    assert out_of(m, dev, rt, mx)[0] == vals.max()
    np.testing.assert_array_equal(out_of(m, dev, rt, lock), [0, 4])


@pytest.mark.parametrize("n,limit", [(1000, 100), (5, 1)])
def test_control_flow(n: int, limit: int) -> None:
    x = RNG.standard_normal(1024).astype(np.float32)
    out = np.zeros(1, np.float32)
    m, dev, _, rt = launch(control_kernel, (1,), (x, out, n, limit), {"BLOCK": 128})
    s = x[:n].astype(np.float64).sum()
    k = 1
    while k < limit:
        k *= 3
    np.testing.assert_allclose(out_of(m, dev, rt, out)[0], (2 * s if s > 0 else -s) + k, rtol=1e-5)


def test_math_and_casts() -> None:
    block = 256
    x = RNG.uniform(-3, 3, block).astype(np.float32)
    f16, i8, y = np.zeros(block, np.float16), np.zeros(block, np.int8), np.zeros(block, np.float32)
    m, dev, _, rt = launch(math_cast_kernel, (1,), (x, f16, i8, y), {"BLOCK": block})
    np.testing.assert_array_equal(out_of(m, dev, rt, f16), x.astype(np.float16))
    np.testing.assert_array_equal(out_of(m, dev, rt, i8), np.trunc(x * np.float32(10)).astype(np.int8))
    from math import erf

    xd = x.astype(np.float64)
    want = (np.exp(xd) + np.log(np.abs(xd) + 1) + np.sin(xd) * np.cos(xd) + np.sqrt(np.abs(xd)) +
            np.vectorize(erf)(xd) + np.exp2(xd) + np.log2(np.abs(xd) + 2) + np.floor(xd) + np.ceil(xd) +
            1 / np.sqrt(np.abs(xd) + 1))
    want = want * xd + 1 / (1 + np.exp(-xd))
    np.testing.assert_allclose(out_of(m, dev, rt, y), want, rtol=1e-4, atol=1e-4)


def test_philox_rand() -> None:
    block = 256
    out = np.zeros(block, np.float32)
    m, dev, _, rt = launch(rand_kernel, (1,), (out, 1234), {"BLOCK": block})
    got = out_of(m, dev, rt, out)
    assert ((got >= 0) & (got < 1)).all() and abs(got.mean() - 0.5) < 0.1 and len(np.unique(got)) == block


def test_print_and_assert() -> None:
    block = 32
    x = np.arange(block, dtype=np.float32)
    m, _, _, _ = launch(debug_kernel, (1,), (x,), {"BLOCK": block}, num_warps=1)
    assert len(m.printed) == block and any("x: " in line and "31" in line for line in m.printed)
    x[7] = -1
    with pytest.raises(EmulatorError, match="device-side assertion failed: .*: debug_kernel: x must be non-negative"):
        launch(debug_kernel, (1,), (x,), {"BLOCK": block}, num_warps=1)


# ------------------------------------------------------------------------------ ptxas

KERNELS = {
    "add": (add_kernel, (np.zeros(4096, np.float32),) * 3 + (4096,), {"BLOCK": 1024}, 4),
    "softmax": (softmax_kernel, (np.zeros(4096, np.float32),) * 2 + (1024, 1024, 1024), {"BLOCK": 1024}, 4),
    "layer_norm": (layer_norm_kernel, (np.zeros(4096, np.float16),) * 4 + (np.zeros(8, np.float32),) * 2 +
                   (1024, 1024, 1e-5), {"BLOCK": 1024}, 4),
    "tile2d": (tile2d_kernel, (np.zeros(4096, np.float32),) * 4 + (np.zeros(64, np.int32), 30, 60, 64),
               {"BM": 32, "BN": 64}, 4),
    "reduce_scan": (reduce_scan_kernel, (np.zeros(512, np.float32),) * 4, {"BLOCK": 512}, 4),
    "atomics": (atomics_kernel, (np.zeros(1024, np.float32), np.zeros(8, np.int32), np.zeros(1, np.float32),
                                 np.zeros(2, np.int32), 1000), {"BLOCK": 256}, 4),
    "control": (control_kernel, (np.zeros(1024, np.float32),) * 2 + (1000, 100), {"BLOCK": 128}, 4),
    "math_cast": (math_cast_kernel, (np.zeros(256, np.float32), np.zeros(256, np.float16), np.zeros(256, np.int8),
                                     np.zeros(256, np.float32)), {"BLOCK": 256}, 4),
    "rand": (rand_kernel, (np.zeros(256, np.float32), 1234), {"BLOCK": 256}, 4),
    "debug": (debug_kernel, (np.zeros(32, np.float32),), {"BLOCK": 32}, 1),
}


@needs_ptxas
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernels_assemble(name: str) -> None:
    kernel, args, meta, warps = KERNELS[name]
    for arch in ARCHS:
        simt, _ = compile_simt(kernel, args, meta, warps, arch)
        info = check_ptx(simt, [arch])[arch]
        assert info.spill_stores == 0, (name, arch)


def ptxas_report() -> list[tuple[str, int, int, str, int, int]]:
    """(kernel, block, num_warps, arch, registers, spill bytes) of vector add, softmax and layer norm."""
    rows = []
    cases = [("add", add_kernel, (np.zeros(8192, np.float32),) * 3 + (8192,), {"BLOCK": 1024}, 4)]
    for block in (1024, 4096, 16384):
        for warps in (4, 8, 16):
            cases.append(("softmax", softmax_kernel, (np.zeros(block, np.float32),) * 2 + (block,) * 3,
                          {"BLOCK": block}, warps))
    cases.append(("layer_norm", layer_norm_kernel, (np.zeros(4096, np.float16),) * 4 +
                  (np.zeros(8, np.float32),) * 2 + (4096, 4096, 1e-5), {"BLOCK": 1024}, 4))
    for name, kernel, args, meta, warps in cases:
        for arch in ("sm_90a",):
            simt, _ = compile_simt(kernel, args, meta, warps, arch)
            info = check_ptx(simt, [arch])[arch]
            rows.append((name, next(iter(meta.values())), warps, arch, info.registers,
                         info.spill_stores + info.spill_loads))
    return rows


@needs_ptxas
def test_ptxas_report() -> None:
    rows = ptxas_report()
    for row in rows:
        print("ptxas -v: %-10s block %5d  warps %2d  %s  %3d registers  %d spill bytes" % row)
    assert all(r[4] <= 255 for r in rows)
    small = [r for r in rows if r[0] != "softmax" or r[1] // (32 * r[2]) <= 64]
    assert all(r[5] == 0 for r in small)


def test_ptx_of_vector_add_is_readable() -> None:
    simt, _ = compile_simt(*KERNELS["add"][:3], num_warps=4)
    ptx = emit_ptx(simt, target="sm_90a")
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx
    assert "// test_codegen_e2e.py:" in ptx and "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)" in ptx
