"""Running generated programs: as a module file, on the interpreter, to PTX through ptxas, on
tile.emulator, and on a GPU; and comparing memory with the program's NumPy model."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from typing import Any, Optional

import numpy as np

import tile
from fuzz import model as M
from fuzz.programs import Buffer, Program

MODULE_DIR = os.path.join(tempfile.gettempdir(), f"tile-fuzz-{os.getpid()}")


def load_module(source: str, prefix: str = "fuzz_kernel") -> Any:
    """Write `source` to a module file (named by its hash, so @tile.jit reads it back) and import it."""
    os.makedirs(MODULE_DIR, exist_ok=True)
    name = f"{prefix}_{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    path = os.path.join(MODULE_DIR, name + ".py")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            f.write(source)
        os.replace(path + ".tmp", path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def arguments(program: Program) -> list[Any]:
    """Fresh launch arguments: DeviceArrays holding each buffer's initial memory, then scalars."""
    arrays = [tile.to_device(b.init.copy(), "bf16" if b.dtype == "bf16" else None) for b in program.buffers]
    return arrays + [program.scalars["n"], program.scalars["iters"], program.scalars["alpha"]]


def contents(array: Any, buf: Buffer) -> np.ndarray:
    """Model values of a buffer's memory after a run."""
    raw = array.numpy() if hasattr(array, "numpy") else np.asarray(array)
    return M.from_storage(np.ascontiguousarray(raw).reshape(-1).view(M.STORAGE[buf.dtype]), buf.dtype)


def mismatches(program: Program, results: list[np.ndarray], slack_ulps: float = 0) -> list[str]:
    """What differs between the model and `results` (model values of each buffer). Floats may
    differ by twice their error bound, plus `slack_ulps` units of the dtype's epsilon times the
    buffer's largest magnitude (the GPU contracts a*b+c into one fma, which the model and the
    interpreter round twice)."""
    problems = []
    for buf, got in zip(program.buffers, results):
        if buf.expected is None:
            continue
        want = buf.expected
        if M.is_float(buf.dtype):
            tol = 2 * buf.err + slack_ulps * M.EPS[buf.dtype] * M.max_abs(want)
            bad = ~(np.abs(got - want) <= tol) | (np.isnan(got) != np.isnan(want))
        else:
            bad = got != want.astype(got.dtype)
        if np.any(bad):
            idx = np.flatnonzero(bad)[:6]
            problems.append(f"{buf.name} ({buf.dtype}, {int(bad.sum())} of {bad.size} differ, err bound {buf.err}): "
                            f"at {idx.tolist()} got {got[idx].tolist()} want {want[idx].tolist()}")
    return problems


def run_interpreter(program: Program, kernel: Any) -> list[np.ndarray]:
    args = arguments(program)
    kernel[(program.grid,)](*args, num_warps=program.num_warps, num_stages=program.num_stages)
    return [contents(a, b) for a, b in zip(args, program.buffers)]


def check_interpreter(program: Program) -> None:
    kernel = load_module(program.source).kernel
    problems = mismatches(program, run_interpreter(program, kernel))
    assert not problems, "interpreter differs from the model:\n" + "\n".join(problems) + f"\n{program}"


def assemble(program: Program, target: str) -> None:
    """Compile to PTX for `target` and assemble it with ptxas (what tests/conftest.py does for
    every kernel a test runs on the interpreter; for runs outside pytest)."""
    from ptxas_util import assemble_ok

    kernel = load_module(program.source).kernel
    ptx = str(tile.dump(kernel, *arguments(program), stage="ptx", target=target, num_warps=program.num_warps,
                         num_stages=program.num_stages))
    assemble_ok(ptx, target)


def run_simt(program: Program, target: str = "sm_90a") -> list[np.ndarray]:
    """Lower for `target` and run the PTX of the simt IR on tile.emulator."""
    from codegen_util import result, run
    from tile.codegen.lower import lower_to_simt
    from tile.opt.gpu_pipeline import gpu_passes
    from tile.opt.pass_manager import PassManager
    from tile.opt.tile_pipeline import tile_passes

    kernel = load_module(program.source).kernel
    args = arguments(program)
    spec, runtime = kernel.specialize(args, {})
    func = kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(program.num_warps, target, num_stages=program.num_stages)).run(func)
    simt = lower_to_simt(func)
    host = [a.host_view() if isinstance(a, tile.DeviceArray) else a for a in runtime]
    machine, dev = run(simt, (program.grid, 1, 1), host)
    out = []
    for buf, array in zip(program.buffers, args):
        i = next(k for k, a in enumerate(runtime) if a is array)
        out.append(contents(result(machine, dev[i], host[i]), buf))
    return out


def user_error_line(error: BaseException, path: Optional[str] = None) -> Optional[int]:
    """The line a CompilationError names in a generated module (None if it names none)."""
    if not isinstance(error, tile.CompilationError) or error.where is None:
        return None
    if path is not None and error.where.file != path:
        return None
    return error.where.line
