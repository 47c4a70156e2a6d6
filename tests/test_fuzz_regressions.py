"""Shrunk programs the compiler fuzzer (tests/test_fuzz.py) found bugs with, kept as regressions.

Each runs on the interpreter against NumPy; tests/conftest.py also compiles it to PTX for
sm_80, sm_90 and sm_90a and assembles it with ptxas, and where the bug was in lowering the
simt IR's PTX runs on tile.emulator too.
"""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from test_codegen_e2e import launch, out_of


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")


@tile.jit
def cumsum_of_dot_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(tl.dot(x, x), axis=0))


def test_cumsum_of_a_dot_result(interpret):
    """A scan of a dot's result took the #mma layout, whose axis bits mix lanes and registers
    in an order the scan lowering cannot scan ("unsupported scan layout"): the scan now keeps
    only layouts it can scan (tile.ir.gpu_ops.scan_layout_ok) and converts the others."""
    x = (np.random.default_rng(0).integers(-8, 9, (32, 32)) / 4).astype(np.float32)
    want = np.cumsum(x.astype(np.float64) @ x, axis=0)
    out = np.full((32, 32), np.nan, np.float32)
    cumsum_of_dot_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, want)
    m, dev, _, runtime = launch(cumsum_of_dot_kernel, (1, 1, 1), [x, np.full_like(out, np.nan)], {"BLOCK": 32},
                                target="sm_80")
    np.testing.assert_array_equal(out_of(m, dev, runtime, runtime[1]), want)


@tile.jit
def flip_of_one_element_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    top = tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0, keep_dims=True)
    tl.store(out_ptr + tl.arange(0, 1), tl.flip(top, 0))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_flip_of_a_length_one_dimension(interpret, monkeypatch, target):
    """tl.flip of a (1,) block reshaped it to the hypercube of its dimension, () here, which
    reshape refuses ("the shape must be positive compile-time integers, got ()"): reversing
    one element now gives the block back. Found by tests/test_fuzz_emulator.py."""
    x = np.random.default_rng(1).integers(-100, 100, 8).astype(np.int32)
    out = np.full(1, -1, np.int32)
    flip_of_one_element_kernel[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [x.max()])
    monkeypatch.delenv("TILE_INTERPRET")
    out = np.full(1, -1, np.int32)
    tile.emulate(flip_of_one_element_kernel, target=target)[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [x.max()])


@tile.jit
def reduce_then_pipelined_dot_kernel(x_ptr, a_ptr, b_ptr, out_ptr, iters):
    top = tl.max(tl.load(x_ptr + tl.arange(0, 64)), axis=0, keep_dims=True)
    acc = tl.zeros((16, 64), tl.float32)
    for k in range(0, iters):
        a = tl.load(a_ptr + k * 1024 + tl.arange(0, 16)[:, None] * 64 + tl.arange(0, 64)[None, :])
        b = tl.load(b_ptr + k * 4096 + tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(out_ptr + tl.arange(0, 16)[:, None] * 64 + tl.arange(0, 64)[None, :], acc + top)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_a_pipelined_copy_waits_for_the_readers_of_a_reduce_scratch(target):
    """The cross-warp max put its result in scratch shared memory that the pipelined loop's
    buffers reuse; the loop's first cp.async was issued right after the reads of that scratch,
    with no barrier, so a fast warp could overwrite the max before a slow one read it (the
    emulator's race check: "writes shared address 0, read by several threads ... with no barrier
    between"). cp.async and TMA copies now follow a barrier after scratch use, as local stores do."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64).astype(np.float32)
    a = (rng.integers(-4, 5, 2048) / 4).astype(np.float32)
    b = (rng.integers(-4, 5, 8192) / 4).astype(np.float32)
    out = np.full(1024, np.nan, np.float32)
    tile.emulate(reduce_then_pipelined_dot_kernel, target=target)[(1,)](x, a, b, out, 2, num_warps=8, num_stages=2)
    want = sum(a[k * 1024:(k + 1) * 1024].reshape(16, 64).astype(np.float64) @ b[k * 4096:(k + 1) * 4096].reshape(64, 64)
               for k in range(2)) + x.max()
    np.testing.assert_allclose(out.reshape(16, 64), want, rtol=1e-6, atol=1e-6)


@tile.jit
def widen_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def fast_binder_key(array, kind: str = "runtime") -> tuple:
    from tile.frontend.specialize import fast_arg

    return eval(fast_arg(array, kind).key.format(a="array", v="0").rstrip(", ") + ",")


@pytest.mark.parametrize("kind", ["runtime", "nospec"])
def test_the_fast_binder_keys_a_device_array_by_its_tile_dtype(kind):
    """The fast binder (GPU DeviceArrays) keyed an array by its NumPy dtype, which is uint16
    for u16 and bf16 alike (uint8 for u8 and the fp8 types): a kernel launched with u16 and then
    with bf16 arrays ran its u16 code on the bf16 bits. The fuzz harness hits this on the GPU,
    since programs with the same source share one kernel whatever their buffers' dtypes."""
    keys = set()
    for dtype in ("u16", "bf16", "f16", "u8", "f8e4nv", "f8e5"):
        array = tile.DeviceArray(16, dtype)
        array.is_device = True  # the fast binder's case, without allocating on a GPU
        keys.add(fast_binder_key(array, kind))
    assert len(keys) == 6


@pytest.mark.gpu
def test_a_kernel_launched_with_u16_then_bf16_arrays_compiles_for_each():
    values = np.random.default_rng(3).integers(1, 200, 16)
    as_u16 = tile.to_device(values.astype(np.uint16))
    as_bf16 = tile.to_device((values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16), "bf16")
    for source in (as_u16, as_bf16):
        out = tile.to_device(np.full(16, np.nan, np.float32))
        widen_kernel[(1,)](source, out)
        np.testing.assert_array_equal(out.numpy(), values.astype(np.float32))


@tile.jit
def fp8_round_trip_kernel(x_ptr, out_ptr, FP8: tl.constexpr):
    offs = tl.arange(0, 256)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(FP8).to(tl.float32))


@pytest.mark.parametrize("fp8, name", [(tl.float8e4nv, "f8e4nv"), (tl.float8e5, "f8e5")])
def test_fp8_pairs_widen_on_the_emulator(fp8, name):
    """sm_90a widens fp8 two at a time (cvt.rn.f16x2.e4m3x2 %r, %h: one source, a pair), which
    the emulator refused ("a conversion into a pair takes two sources") and would have run as
    the two-source f32 -> pair form. Compared with the interpreter's rounding (its fp8 kernels
    cannot run here: the suite also compiles them for sm_80, which has no fp8). Found by probing
    every cast on the interpreter and the emulator."""
    from tile.ir.types import DTYPES
    from tile.runtime.interp_dtypes import round_float

    x = np.random.default_rng(4).standard_normal(256).astype(np.float32) * 8
    out = np.full(256, np.nan, np.float32)
    tile.emulate(fp8_round_trip_kernel, target="sm_90a")[(1,)](x, out, FP8=fp8)
    np.testing.assert_array_equal(out.view(np.uint32), round_float(x, DTYPES[name]).view(np.uint32))


@tile.jit
def bf16_sum_bits_kernel(x_ptr, sum_ptr, bits_ptr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    total = tl.sum(x, axis=0)
    tl.store(sum_ptr + tl.arange(0, C), total)
    tl.store(bits_ptr + tl.arange(0, C), total.to(tl.int16, bitcast=True))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_a_bf16_sum_stays_bf16(interpret, monkeypatch, target):
    """tl.sum of bf16 returned fp32 (an older Triton's promotion), so the GPU fuzz's program that
    bitcast the sum to int16 failed to compile ("cannot bitcast tl.float32 (32 bits) to tl.int16"):
    as in Triton 3.6, a float sum keeps its dtype. Sums of small multiples of 1/4 stay exact."""
    x64 = np.random.default_rng(5).integers(-8, 9, (32, 16)) / 4
    want = (x64.sum(axis=0).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    for run in (bf16_sum_bits_kernel[(1,)], None):
        if run is None:
            monkeypatch.delenv("TILE_INTERPRET")
            run = tile.emulate(bf16_sum_bits_kernel, target=target)[(1,)]
        x = tile.to_device((x64.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16), "bf16")
        total, bits = tile.to_device(np.full(16, 0x7FC0, np.uint16), "bf16"), np.full(16, -1, np.int16)
        run(x, total, bits, R=32, C=16)
        np.testing.assert_array_equal(np.asarray(total.numpy()).view(np.uint16), want)
        np.testing.assert_array_equal(bits.view(np.uint16), want)
