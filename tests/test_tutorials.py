"""Every tutorial runs to completion (on the interpreter here; on the GPU where there is one)."""
from __future__ import annotations

import os
import runpy

import pytest
from ptxas_util import assemble_ok, needs_ptxas

TUTORIALS = os.path.join(os.path.dirname(__file__), "..", "tutorials")
SCRIPTS = sorted(f for f in os.listdir(TUTORIALS) if f[:2].isdigit() and f.endswith(".py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_tutorial_runs(script, capsys):
    runpy.run_path(os.path.join(TUTORIALS, script), run_name="__main__")
    out = capsys.readouterr().out
    assert "max abs error" in out or "tt.func" in out
    assert "tt.func" in out  # each tutorial prints the IR of its kernel


@needs_ptxas
def test_hopper_tutorial_ptx_assembles():
    """Tutorial 06's kernel (wgmma, TMA, mbarrier ring, persistent loop) assembles for sm_90a."""
    tutorial = runpy.run_path(os.path.join(TUTORIALS, "06_hopper_matmul.py"))
    ptx = tutorial["sm90a_ptx"]()
    for instruction in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"):
        assert instruction in ptx
    info = assemble_ok(ptx, "sm_90a")
    assert info.spill_stores == 0 and info.spill_loads == 0
