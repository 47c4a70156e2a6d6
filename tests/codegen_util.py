"""Helpers of the codegen tests: gpu-IR text snippets, lowering, PTX assembly, and running a
simt function: its PTX is emitted for the function's target and run on tile.emulator."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import tile.ir.gpu_ops  # noqa: F401  (registers the gpu ops and layouts)
from ptxas_util import assemble_ok
from tile.codegen.floats import float_bits
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.emulator import run_ptx
from tile.ir import DType, Operation, parse_op, verify
from tile.runtime.cuda_launch import launch_metadata
from tile.runtime.interp_dtypes import bits_dtype, from_bits

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


@dataclass
class Emulated:
    """What a run left besides its arrays: the PTX that ran and the lines the kernel printed."""

    ptx: str
    printed: list[str]


def run(simt: Operation, grid: Sequence[int], args: Sequence[Any], target: str | None = None
        ) -> tuple[Emulated, list]:
    """Emit the PTX of `simt` for `target` (default: the function's own) and run it on
    tile.emulator over copies of the array arguments. Returns (the run, the arguments as the
    kernel saw them: the copies, written in place, and the scalars)."""
    ptx = emit_ptx(simt, target=target or simt.attrs.get("target", "sm_90a"))
    metadata = launch_metadata(simt, {"num_warps": simt.attrs["num_warps"]})
    dev = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_ptx(ptx, tuple(grid), dev, metadata["name"], metadata["threads"], metadata["shared_bytes"],
                metadata["arg_kinds"])
    return Emulated(ptx, printed.getvalue().splitlines(keepends=True)), dev


def result(emulated: Emulated, array: np.ndarray, like: np.ndarray) -> np.ndarray:
    """The kernel's copy of the argument `like` (an element of run()'s arguments)."""
    return np.asarray(array).view(like.dtype).reshape(like.shape)


def encode(values: np.ndarray, t: DType) -> np.ndarray:
    """The bits of `values` in the float format `t` (f16, bf16, fp8), rounded to nearest even."""
    storage = np.uint16 if t.bits == 16 else np.uint8
    return np.array([float_bits(float(v), t) for v in np.asarray(values, np.float64).ravel()],
                    storage).reshape(np.shape(values))


def decode(bits: np.ndarray, t: DType) -> np.ndarray:
    """The values of bit patterns (any integer array) of the float format `t`."""
    return from_bits(np.asarray(bits).astype(bits_dtype(t)), t)
