"""Helpers of the codegen tests: gpu-IR text snippets, lowering, PTX assembly and interpretation."""
from __future__ import annotations

from typing import Sequence

import numpy as np

import tile.ir.gpu_ops  # noqa: F401  (registers the gpu ops and layouts)
from ptxas_util import assemble_ok
from simt_interp import Machine, run_kernel
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.ir import Operation, parse_op, verify

ARCHS = ("sm_80", "sm_90", "sm_90a")


def blocked(spt: Sequence[int], tpw: Sequence[int], wpc: Sequence[int], order: Sequence[int] | None = None) -> str:
    order = list(order) if order is not None else list(reversed(range(len(spt))))
    fmt = lambda xs: "[" + ", ".join(map(str, xs)) + "]"  # noqa: E731
    return f"#blocked<spt = {fmt(spt)}, tpw = {fmt(tpw)}, wpc = {fmt(wpc)}, order = {fmt(order)}>"


def func(name: str, params: Sequence[tuple[str, str]], body: str, num_warps: int = 4, shared_bytes: int = 0,
         target: str = "sm_90a") -> str:
    """A gpu-IR tt.func around `body` (lines of ops, ending without tt.return)."""
    names = ", ".join(f'"{n}"' for n, _ in params)
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    return (f'tt.func {{arg_names = [{names}], num_warps = {num_warps}, shared_bytes = {shared_bytes}, '
            f'sym_name = "{name}", target = "{target}", threads_per_warp = 32}} {{\n^bb({args}):\n'
            f"{body.strip(chr(10))}\n  tt.return\n}}")


def lower(text: str) -> Operation:
    f = parse_op(text)
    verify(f)
    return lower_to_simt(f)


def check_ptx(simt: Operation, archs: Sequence[str] = ARCHS) -> dict:
    """Emit and assemble for each arch; returns {arch: PtxasInfo}."""
    return {arch: assemble_ok(emit_ptx(simt, target=arch), arch) for arch in archs}


def run(simt: Operation, grid: Sequence[int], args: Sequence) -> tuple[Machine, list]:
    """Run on the interpreter; numpy arrays become buffers. Returns (machine, device arguments)."""
    m = Machine()
    dev = [m.alloc(a) if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(simt, tuple(grid), dev, m)
    return m, dev


def result(m: Machine, addr: int, like: np.ndarray) -> np.ndarray:
    return m.read_back(addr, like)
