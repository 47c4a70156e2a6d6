"""Every tutorial runs to completion (on the interpreter here; on the GPU where there is one)."""
from __future__ import annotations

import os
import runpy

import pytest

TUTORIALS = os.path.join(os.path.dirname(__file__), "..", "tutorials")
SCRIPTS = sorted(f for f in os.listdir(TUTORIALS) if f[:2].isdigit() and f.endswith(".py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_tutorial_runs(script, capsys):
    runpy.run_path(os.path.join(TUTORIALS, script), run_name="__main__")
    out = capsys.readouterr().out
    assert "max abs error" in out or "tt.func" in out
    assert "tt.func" in out  # each tutorial prints the IR of its kernel
