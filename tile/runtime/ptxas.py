"""ptxas, where installed: assembles tile's PTX into a cubin and reports the resources it uses.

The CUDA driver JIT-compiles PTX itself, so tile needs ptxas only to describe a kernel without
its GPU: `kernel.asm["cubin"]`, and `n_regs` / `n_spills` of a kernel compiled for a target
(tile.compile, or warmup on the interpreter) where no GPU of that target is present.

    info = assemble(ptx, "sm_90a")     # PtxasResult(cubin=b"...", registers=14, spill_bytes=0, log="...")
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from typing import NamedTuple, Optional


@functools.cache
def find_ptxas() -> Optional[str]:
    """ptxas on PATH, else the one in the `nvidia-cuda-nvcc` wheel, else None."""
    path = shutil.which("ptxas")
    if path:
        return path
    try:
        import nvidia  # the CUDA wheels' namespace package
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cuda_nvcc"):
            candidate = os.path.join(root, sub, "bin", "ptxas")
            if os.access(candidate, os.X_OK):
                return candidate
    return None


class PtxasResult(NamedTuple):
    cubin: bytes
    registers: int
    spill_bytes: int  # bytes of spill stores
    log: str


def assemble(ptx: str, target: str) -> PtxasResult:
    """Assemble `ptx` for `target` (e.g. "sm_90a") with `ptxas -v`; RuntimeError with ptxas'
    log if it fails or cannot be found."""
    ptxas = find_ptxas()
    if ptxas is None:
        raise RuntimeError("ptxas was not found (on PATH or in the nvidia-cuda-nvcc wheel); it is needed to "
                           "assemble PTX without a GPU: pip install nvidia-cuda-nvcc")
    with tempfile.TemporaryDirectory(prefix="tile-ptxas-") as tmp:
        source, binary = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, "-v", f"-arch={target}", source, "-o", binary], capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise RuntimeError(f"ptxas failed for {target}:\n{log}")
        with open(binary, "rb") as f:
            cubin = f.read()
    registers = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores", log)
    return PtxasResult(cubin, int(registers.group(1)) if registers else 0, int(spills.group(1)) if spills else 0, log)
