"""Autotuning under the emulator keys its disk cache by the emulated target: the best config of
a gfx1100 run (where WMMA lets a 64 x 64 matmul tile fit) is not reused for gfx942 (where it
needs more VGPRs than there are)."""
from __future__ import annotations

import tile.compiler
from tile.runtime.autotuner import _device_name


def test_emulated_targets_tune_apart(monkeypatch):
    monkeypatch.setattr(tile.compiler, "_device_target", lambda: tile.compiler.INTERPRETER)   # no GPU here
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_EMULATE", "1")
    names = set()
    for target in ("gfx942", "gfx1100", "sm_80"):
        monkeypatch.setenv("TILE_EMULATE_TARGET", target)
        names.add(_device_name())
    assert names == {"emulator:gfx942", "emulator:gfx1100", "emulator:sm_80"}
    monkeypatch.setenv("TILE_EMULATE", "0")
    assert _device_name() == tile.compiler.INTERPRETER
