"""Find ptxas and assemble PTX text with it; parse `ptxas -v` (registers, spills, shared bytes)."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

import pytest

from tile.runtime.ptxas import find_ptxas


PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not found (PATH or the nvidia-cuda-nvcc wheel)")


@dataclass
class PtxasInfo:
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0


def parse_info(log: str) -> PtxasInfo:
    info = PtxasInfo()
    if m := re.search(r"Used (\d+) registers", log):
        info.registers = int(m.group(1))
    if m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log):
        info.spill_stores, info.spill_loads = int(m.group(1)), int(m.group(2))
    if m := re.search(r"(\d+) bytes smem", log):
        info.shared_bytes = int(m.group(1))
    if m := re.search(r"(\d+) bytes stack frame", log):
        info.stack_bytes = int(m.group(1))
    return info


def assemble(ptx: str, arch: str) -> tuple[bool, str]:
    """Run `ptxas -v -arch=<arch>` on `ptx`; return (success, log)."""
    if PTXAS is None:
        pytest.skip("ptxas not found (PATH or the nvidia-cuda-nvcc wheel)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([PTXAS, "-v", f"-arch={arch}", src, "-o", os.path.join(tmp, "kernel.cubin")],
                              capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr


def assemble_ok(ptx: str, arch: str) -> PtxasInfo:
    """Assemble or fail the test with ptxas' log and the numbered PTX."""
    ok, log = assemble(ptx, arch)
    if not ok:
        numbered = "\n".join(f"{i + 1:4d} {line}" for i, line in enumerate(ptx.splitlines()))
        pytest.fail(f"ptxas failed for {arch}:\n{log}\n{numbered}")
    return parse_info(log)
