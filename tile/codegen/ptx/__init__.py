"""The PTX target: prints simt IR as a PTX module for NVIDIA GPUs (sm_80 ... sm_90a).

    emit.py    the emitter: register classes, the instruction table INSTR, memory ops,
               conversions, shuffles, atomics, control flow, tensor-core templates
    wgmma.py   sm_90a warp-group MMA (wgmma.mma_async and its fences), on emit.py's emitter
    tma.py     TMA bulk tensor copies and mbarriers, on emit.py's emitter

The rest of tile reaches this package only through its entry, `emit_ptx` (and the
target names it accepts); the lowering before it is target independent (tile/codegen/lower*.py).
"""
from .emit import TARGETS, PtxError, emit_ptx
from . import tma, wgmma  # noqa: F401  (they register their ops' emission on emit.py's emitter)

__all__ = ["TARGETS", "PtxError", "emit_ptx"]
