"""Errors of the emulator: each names the kernel, the PTX line and, where known, the tile source line."""
from __future__ import annotations

from typing import Optional

from .program import Source


class EmulatorError(RuntimeError):
    """A PTX module the emulator cannot decode, or a kernel that misbehaves when run (an access
    outside every allocation, a misaligned address, a deadlock, a step budget run out...)."""

    def __init__(self, kernel: str, message: str, source: Optional[Source] = None, where: str = ""):
        text = f"emulator: kernel {kernel}: {message}"
        if where:
            text += f" ({where})"
        if source is not None:
            text += f"\n  at {source.describe()}"
        super().__init__(text)
        self.kernel, self.message, self.source, self.where = kernel, message, source, where


class StepBudgetError(EmulatorError):
    """A batch of CTAs ran its `max_steps` without finishing: a loop that never ends, or CTAs
    that wait on each other."""


class PtxSyntaxError(EmulatorError):
    """PTX text the decoder cannot read (malformed, or an instruction it does not know)."""
