"""Compiler fuzzing through the emulator: the random programs of tests/fuzz compiled for sm_80
and sm_90a and run as PTX on tile.emulate, against the interpreter and the NumPy model.

This is the GPU fuzz test of tests/test_fuzz.py without a GPU: the emulator compiles each
kernel exactly as a launch would (the same argument specialization: an integer equal to 1 is
folded into the kernel, one divisible by 16 and a 16-byte aligned pointer carry that fact),
so a program the GPU path refuses or miscompiles fails here in CI. Integers and booleans must
equal the interpreter's bit for bit; floats must lie within the model's error bound plus the
GPU test's slack. Any exception, a CompilationError included, is a failure: the interpreter
accepted the same program.

The default run is a fixed-seed slice sized for CI; TILE_FUZZ_EXAMPLES=N runs N programs per
test with fresh random seeds (a nightly-sized run).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tile
from fuzz import harness
from fuzz import model as M
from fuzz.programs import Program, programs

SCALE = int(os.environ.get("TILE_FUZZ_EXAMPLES", "0"))
GPU_SLACK_ULPS = 64
TARGETS = ("sm_80", "sm_90a")


def fuzz_settings(default: int) -> settings:
    return settings(max_examples=SCALE or default, deadline=None, derandomize=not SCALE, database=None,
                    suppress_health_check=list(HealthCheck))


def unaligned_arguments(program: Program) -> list[Any]:
    """Launch arguments whose arrays start off a 16-byte boundary (views into a larger NumPy
    array), so no pointer carries the divisibility-16 fact; bf16 buffers, which NumPy cannot
    name, stay DeviceArrays."""
    args = harness.arguments(program)
    for i, buf in enumerate(program.buffers):
        if buf.dtype == "bf16":
            continue
        size = buf.init.dtype.itemsize
        base = np.empty(buf.init.size + 16 // size, buf.init.dtype)
        skip = next(k for k in range(16 // size) if (base.ctypes.data + k * size) % 16)
        view = base[skip:skip + buf.init.size]
        view[...] = buf.init
        args[i] = view
    return args


def run_emulated(program: Program, target: str, args: list[Any]) -> list[np.ndarray]:
    kernel = harness.load_module(program.source).kernel
    tile.emulate(kernel, target=target)[(program.grid,)](*args, num_warps=program.num_warps,
                                                         num_stages=program.num_stages)
    return [harness.contents(a, b) for a, b in zip(args, program.buffers)]


def compare_with_interpreter(monkeypatch: pytest.MonkeyPatch, program: Program, target: str,
                             aligned: bool = True) -> None:
    monkeypatch.setenv("TILE_INTERPRET", "1")
    on_host = harness.run_interpreter(program, harness.load_module(program.source).kernel)
    monkeypatch.delenv("TILE_INTERPRET")
    args = harness.arguments(program) if aligned else unaligned_arguments(program)
    emulated = run_emulated(program, target, args)
    for buf, host, emu in zip(program.buffers, on_host, emulated):
        if not M.is_float(buf.dtype):
            assert np.array_equal(emu, host), f"{buf.name} on {target}: emulator {emu[:8]} interpreter {host[:8]}\n{program}"
    problems = harness.mismatches(program, emulated, slack_ulps=GPU_SLACK_ULPS)
    assert not problems, f"{target} on the emulator differs from the model:\n" + "\n".join(problems) + f"\n{program}"


@pytest.mark.parametrize("target", TARGETS)
@fuzz_settings(40)
@given(program=programs())
def test_programs_on_the_emulator_match_the_interpreter(monkeypatch, target, program):
    compare_with_interpreter(monkeypatch, program, target)


@pytest.mark.parametrize("target", TARGETS)
@fuzz_settings(10)
@given(program=programs(max_ops=8))
def test_programs_with_unaligned_pointers_match_the_interpreter(monkeypatch, target, program):
    """Pointers without the 16-byte fact: the compiler must not vectorize their accesses."""
    compare_with_interpreter(monkeypatch, program, target, aligned=False)
