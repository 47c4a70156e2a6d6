"""The compiler fuzzer's random kernels (tests/fuzz) for gfx942 and gfx90a (drawn with each
kernel): each either compiles and computes its NumPy model's memory on the wave model
(tile.emulator, that target), or is refused
with UnsupportedOnTarget (atomics, scf.if... not selected yet) or OutOfResources (more than
256 VGPRs: tile does not spill). Anything else is a bug."""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile
from amdgcn_util import unwaited_reads
from fuzz import harness
from fuzz.programs import programs
from tile.codegen.amdgcn import TARGETS, UnsupportedOnTarget, compile_amdgcn
from tile.compiler import compile_kernel
from tile.codegen.target import TargetResourceError
from tile.runtime.errors import OutOfResources
from tile.emulator.amdgcn_machine import run_amdgcn

SCALE = int(os.environ.get("TILE_FUZZ_EXAMPLES", "0"))
COMPILED: list[str] = []


def run_on_wave_model(program, target: str) -> list[np.ndarray]:
    kernel = harness.load_module(program.source).kernel
    args = harness.arguments(program)
    spec, _ = kernel.specialize(args, {})
    options = {"num_warps": program.num_warps, "num_stages": program.num_stages, "maxnreg": None}
    simt = compile_kernel(kernel, spec, options, target, until="amdgcn").func
    compiled = compile_amdgcn(simt, target)
    assert unwaited_reads(compiled.text) == []
    host = [a.host_view() if isinstance(a, tile.DeviceArray) else a for a in args]
    by_name = dict(zip(kernel.arg_names, host))
    run_amdgcn(compiled.text, program.grid, by_name)
    return [harness.contents(h, b) for h, b in zip(host, program.buffers)]


@settings(max_examples=SCALE or 40, deadline=None, derandomize=not SCALE, database=None,
          suppress_health_check=list(HealthCheck))
@given(program=programs(max_ops=6), target=st.sampled_from(TARGETS))
def test_fuzzed_kernels_compute_their_model_or_are_refused(program, target):
    try:
        results = run_on_wave_model(program, target)
    except (UnsupportedOnTarget, TargetResourceError, OutOfResources):  # refused by name, or too big
        return
    COMPILED.append(program.source)
    problems = harness.mismatches(program, results)
    assert not problems, (f"{target} code on the wave model differs from the model:\n" + "\n".join(problems)
                          + f"\n{program}")


def test_some_fuzzed_kernels_were_compiled():
    """The run above is not vacuous: a share of the kernels is inside the selected subset."""
    assert COMPILED or SCALE, "no fuzzed kernel compiled for an AMD target"
