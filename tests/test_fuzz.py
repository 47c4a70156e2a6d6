"""Compiler fuzzing (tests/fuzz): random well-typed kernels against their NumPy model, and
near-miss kernels that must fail with a CompilationError naming their line.

Each generated program runs on the interpreter against its model; every kernel the
interpreter compiles is also compiled to PTX for sm_80, sm_90 and sm_90a and assembled with
ptxas (tests/conftest.py's every_kernel_assembles), and a slice is lowered to simt IR whose PTX runs
on tile.emulator. Anything but a matching result is a failure: an internal error in any
stage is a compiler bug.

The default run is a fixed-seed slice sized for CI. TILE_FUZZ_EXAMPLES=N runs N programs per
test (a nightly-sized run), and the `gpu` test runs the same programs on the GPU against the
interpreter; TILE_FUZZ_SHARDS=K splits that run into K tests (random programs each) that
pytest-xdist spreads over the cores, compiling being the slow part.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tile
from fuzz import harness
from fuzz import model as M
from fuzz.near_miss import near_misses
from fuzz.programs import programs

SCALE = int(os.environ.get("TILE_FUZZ_EXAMPLES", "0"))
SHARDS = int(os.environ.get("TILE_FUZZ_SHARDS", "1"))
GPU_SLACK_ULPS = 64


def fuzz_settings(default: int) -> settings:
    return settings(max_examples=SCALE or default, deadline=None, derandomize=not SCALE, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")


@fuzz_settings(60)
@given(program=programs())
def test_programs_match_their_model_on_the_interpreter(interpret, program):
    harness.check_interpreter(program)


@settings(max_examples=5, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(program=programs(max_ops=4))
def test_the_model_notices_a_wrong_element(interpret, program):
    """The comparison is not vacuous: one element changed in any checked buffer is reported."""
    results = harness.run_interpreter(program, harness.load_module(program.source).kernel)
    for i, buf in enumerate(program.buffers):
        if buf.expected is None:
            continue
        wrong = [r.copy() for r in results]
        wrong[i][-1] = (not wrong[i][-1]) if buf.dtype == "i1" else wrong[i][-1] + 1 + 4 * buf.err
        assert harness.mismatches(program, wrong), f"{buf.name} changed unnoticed\n{program}"


@fuzz_settings(8)
@given(program=programs(max_ops=8))
def test_lowered_programs_match_their_model_on_the_emulator(interpret, program):
    problems = harness.mismatches(program, harness.run_simt(program))
    assert not problems, "emulator differs from the model:\n" + "\n".join(problems) + f"\n{program}"


@fuzz_settings(60)
@given(case=near_misses())
def test_near_miss_programs_name_their_line(interpret, case):
    module = harness.load_module(case.source, "near_miss")
    block = case.block
    args = [np.ones(block * block, np.float32), np.ones(block * block, np.float32), np.ones(block, np.int32),
            np.ones(block, np.uint32), np.ones(block * block, np.float32), 5]
    with pytest.raises(tile.CompilationError) as info:
        tile.dump(module.kernel, *args, BLOCK=block, stage="tile-opt", target="interpreter")
    text = str(info.value)
    assert any(f"{module.__file__}:{line}:" in text for line in case.lines), f"{text}\n---\n{case}"


@pytest.mark.gpu
@pytest.mark.parametrize("shard", range(SHARDS))
@fuzz_settings(60)
@given(program=programs())
def test_programs_on_the_gpu_match_the_interpreter(monkeypatch, shard, program):
    """The same programs on the GPU: integers and booleans bit for bit with the interpreter;
    floats within the model's error bound, plus a few ulps for the fma contractions ptxas makes."""
    kernel = harness.load_module(program.source).kernel
    monkeypatch.setenv("TILE_INTERPRET", "1")
    on_host = harness.run_interpreter(program, kernel)
    monkeypatch.delenv("TILE_INTERPRET")
    on_gpu = harness.run_interpreter(program, kernel)
    for buf, host, gpu in zip(program.buffers, on_host, on_gpu):
        if not M.is_float(buf.dtype):
            assert np.array_equal(gpu, host), f"{buf.name}: GPU {gpu[:8]} interpreter {host[:8]}\n{program}"
    problems = harness.mismatches(program, on_gpu, slack_ulps=GPU_SLACK_ULPS)
    assert not problems, "GPU differs from the model:\n" + "\n".join(problems) + f"\n{program}"
