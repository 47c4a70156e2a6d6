"""tile.emulate(..., trace=...): chosen threads step by step — the instructions they were at,
whether they executed them, the registers written and the memory touched."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.emulator import emulate

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from load_kernels import load_kernels  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_kernels("emulator_trace_kernels", tile.jit, tl)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_trace_of_a_coalesced_vectorised_load(bench):
    """n = 512 (a multiple of 16) on 128 threads: each thread loads 4 consecutive floats with one
    ld.global.v4, thread t at x + 16 t; the store writes their sums."""
    n = 512
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    emulated = emulate(bench.add_kernel, trace=[0, 1, 5])
    emulated[(1,)](x, y, out, n, BLOCK=512)
    np.testing.assert_array_equal(out, x + y)
    trace = emulated.last_trace
    for t in (0, 1, 5):
        steps = trace.of_thread(t)
        assert steps and all(s.executed for s in steps)
        loads = [s for s in steps if s.memory and s.memory[0].kind == "ld" and s.memory[0].space == "global"]
        assert all("ld.global.v4.f32" in s.source.ptx_text for s in loads) and len(loads) == 2
        assert [(a.memory[0].address, a.memory[0].nbytes) for a in loads] == [(_address(x) + 16 * t, 16),
                                                                              (_address(y) + 16 * t, 16)]
        assert loads[0].source.file == "kernels.py" and "tl.load(x_ptr" in loads[0].source.text
        assert list(loads[0].registers.values()) == [float(v) for v in x[4 * t:4 * t + 4]]
        store = next(s for s in steps if s.memory and s.memory[0].kind == "st")
        assert store.memory[0].address == _address(out) + 16 * t
        assert store.memory[0].data == (x + y)[4 * t:4 * t + 4].tobytes()
    tid_step = next(s for s in trace.of_thread(5) if "%tid.x" in s.source.ptx_text)
    assert list(tid_step.registers.values()) == [5]
    text = trace.format()
    assert "thread 5 of CTA (0, 0, 0)" in text and "ld global 0x" in text


def test_trace_shows_masked_instructions_as_not_executed(bench):
    n = 300  # thread 127 of a 512 block holds elements 508..511, all masked off
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    emulated = emulate(bench.add_kernel, trace=True, trace_cta=(0,))
    emulated[(1,)](x, y, out, n, BLOCK=512)
    assert {s.thread for s in emulated.last_trace.steps} == {0}
    emulated = emulate(bench.add_kernel, trace=[127])
    emulated[(1,)](x, y, out, n, BLOCK=512)
    memory_steps = [s for s in emulated.last_trace.steps if "global" in s.source.ptx_text]
    assert memory_steps and not any(s.executed for s in memory_steps)
    assert all(not s.memory and not s.registers for s in memory_steps)
    assert "(not executed)" in emulated.last_trace.format()


def test_trace_of_another_cta_and_registers_over_time(bench):
    n = 2048
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    emulated = emulate(bench.add_kernel, trace=[3], trace_cta=(1, 0, 0))
    emulated[(2,)](x, y, out, n, BLOCK=1024)
    trace = emulated.last_trace
    assert {(s.cta, s.thread) for s in trace.steps} == {((1, 0, 0), 3)}
    ctaid = next(s for s in trace.steps if "%ctaid.x" in s.source.ptx_text)
    assert list(ctaid.registers.values()) == [1]
    name = next(iter(ctaid.registers))
    assert name not in trace.registers(3, (1, 0, 0), upto=ctaid.step - 1)
    assert trace.registers(3, (1, 0, 0), upto=ctaid.step)[name] == 1


def test_trace_argument_is_checked(bench):
    with pytest.raises(TypeError, match="trace= takes True or thread indices"):
        emulate(bench.add_kernel, trace="all")
    with pytest.raises(TypeError, match="trace= takes True or thread indices"):
        emulate(bench.add_kernel, trace=[-1])


def test_trace_of_a_warp_through_ldmatrix_and_mma(bench):
    """sm_80 matmul: the traced lanes' cp.async (global -> shared), ldmatrix (the row address a
    lane gives) and mma.sync steps, with the registers they wrote."""
    m = n = k = 64
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    emulated = emulate(bench.matmul_kernel, "sm_80", trace=[0, 9])
    compiled = emulated[(1,)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    smem_size = compiled.launch_info["shared_bytes"]
    for t in (0, 9):
        steps = emulated.last_trace.of_thread(t)
        copies = [s for s in steps if s.source.ptx_text.lstrip("@%p0123456789! ").startswith("cp.async.")
                  and s.memory]
        # a copy reads global memory unless its src-size is 0 (a masked copy: it writes zeros)
        assert copies and all([a.space for a in s.memory] in (["global", "shared"], ["shared"]) for s in copies)
        assert any(len(s.memory) == 2 for s in copies)
        assert all(s.memory[-1].nbytes == 16 and s.memory[-1].address < smem_size for s in copies)
        loads = [s for s in steps if "ldmatrix" in s.source.ptx_text]
        for s in loads:  # .xN: lanes 0 .. 8N-1 give the row addresses
            rows = 8 * int(s.source.ptx_text.split(".x")[1][0])
            assert [a.nbytes for a in s.memory] == ([16] if t < rows else [])
        assert loads
        assert all(len(s.registers) == len(s.source.ptx_text.split("{")[1].split("}")[0].split(",")) for s in loads)
        mmas = [s for s in steps if "mma.sync" in s.source.ptx_text]
        assert mmas and all(len(s.registers) == 4 and all(isinstance(v, float) for v in s.registers.values())
                            for s in mmas)
