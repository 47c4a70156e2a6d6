"""`import triton` resolved to tile: `python -m tile.triton` on a Triton-style script (in a
subprocess, on the interpreter), the module mapping, missing APIs and modules, and the
tutorial runner's parsing of benchmark tables."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tile.triton import ALIASES, tile_module_name

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "triton_style_script.py"
sys.path.insert(0, str(REPO / "benchmarks"))

import run_triton_tutorials as runner  # noqa: E402


def run_python(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILE_", "TRITON_"))}
    env.update(TRITON_INTERPRET="1", TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)


def test_triton_style_script_runs_unchanged(tmp_path):
    proc = run_python("-m", "tile.triton", str(SCRIPT), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("triton-style script OK")
    notice = proc.stderr.splitlines()[0]
    assert notice.startswith("[tile ") and "runs tile" in notice and "not Triton itself" in notice


def test_missing_triton_api_names_what_to_use(tmp_path):
    proc = run_python("-m", "tile.triton", str(SCRIPT), "--missing-api", tmp_path=tmp_path)
    assert proc.returncode == 1
    assert "AttributeError: tile does not provide triton.testing.get_dram_gbps" in proc.stderr


def test_missing_triton_module_names_what_tile_offers(tmp_path):
    proc = run_python("-m", "tile.triton", str(SCRIPT), "--missing-module", tmp_path=tmp_path)
    assert proc.returncode == 1
    assert "ModuleNotFoundError: tile has no counterpart of Triton's module 'triton.experimental'" in proc.stderr
    assert "triton.language" in proc.stderr.splitlines()[-1]


def test_modules_resolve_to_tiles(tmp_path):
    code = """
import tile
tile.install_as_triton(notice=False)
import triton, triton.language as tl, triton.testing, triton.runtime.driver, triton.knobs
from triton.runtime import driver
from triton.runtime.jit import JITFunction, jit
from triton.runtime.autotuner import Autotuner, Config, Heuristics
from triton.runtime.errors import OutOfResources
from triton.compiler import CompiledKernel, ASTSource, compile
from triton.compiler.compiler import CompiledKernel as K2
from triton.compiler.errors import CompilationError
from triton.backends.compiler import GPUTarget
from triton.language.core import constexpr
import tile.language, tile.testing, tile.compiler
assert tl is tile.language and triton.testing is tile.testing and triton.knobs is tile.knobs
assert triton.jit is tile.jit and triton.cdiv is tile.cdiv and triton.Config is Config is tile.Config
assert triton.autotune is tile.autotune and triton.heuristics is tile.heuristics
assert triton.compile is compile is tile.compile and K2 is CompiledKernel is tile.compiler.CompiledKernel
assert triton.runtime.driver is driver and driver.active.get_current_target().backend == "cuda"
assert JITFunction is tile.JITFunction and CompilationError is tile.CompilationError and constexpr is tl.constexpr
assert OutOfResources is tile.OutOfResources and triton.OutOfResources is OutOfResources
assert GPUTarget("cuda", 90, 32).arch == 90 and triton.__version__ == "3.6.0"
triton.set_allocator(lambda size, alignment, stream: None)
try:
    triton.testing.get_dram_gbps
except AttributeError as e:
    assert "tile does not provide triton.testing.get_dram_gbps" in str(e)
else:
    raise AssertionError("get_dram_gbps")
from triton.runtime.jit import TensorWrapper, reinterpret, MockTensor
assert triton.constexpr_function is tile.constexpr_function and TensorWrapper is tile.TensorWrapper
assert reinterpret is triton.reinterpret is tile.reinterpret and MockTensor is tile.MockTensor
print("aliases OK")
"""
    proc = run_python("-c", code, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "aliases OK" and proc.stderr == ""


def test_install_refuses_after_triton_itself(tmp_path):
    code = ("import sys, types; sys.modules['triton'] = types.ModuleType('triton'); import tile\n"
            "tile.install_as_triton()")
    proc = run_python("-c", code, tmp_path=tmp_path)
    assert proc.returncode == 1 and "Triton itself is imported already" in proc.stderr


def test_module_runner_and_usage(tmp_path):
    (tmp_path / "probe_mod.py").write_text("import sys, triton\nprint('module', sys.argv[1:], triton.__name__)\n")
    proc = run_python("-m", "tile.triton", "-m", "probe_mod", "a", "b", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "module ['a', 'b'] tile.triton"
    usage = run_python("-m", "tile.triton", tmp_path=tmp_path)
    assert usage.returncode == 2 and "usage: python -m tile.triton script.py" in usage.stderr
    missing = run_python("-m", "tile.triton", "no_such_script.py", tmp_path=tmp_path)
    assert missing.returncode == 2 and "cannot open 'no_such_script.py'" in missing.stderr


def test_module_name_mapping():
    assert tile_module_name("triton.language") == "tile.language"
    assert tile_module_name("triton.runtime.autotuner") == "tile.runtime.autotuner"
    assert tile_module_name("triton.compiler.compiler") == "tile.compiler"
    assert tile_module_name("triton.backends") is None and ALIASES["triton.backends.compiler"] == "tile.runtime.driver"
    with pytest.raises(ModuleNotFoundError, match="'triton.experimental.gluon' \\(looked for 'tile.experimental.gluon'\\)"):
        tile_module_name("triton.experimental.gluon")


# ----------------------------------------------------------------------------- the tutorial runner

TILE_OUTPUT = """checking...
vector-add-performance:
       size  Triton (GB/s)  Torch (GB/s)
     4096.0    1.25       2.5
     8192.0    2.0        4.0
matmul-time:
          M       N   Triton (ms)   cuBLAS (runtime(ms))
      256.0   128.0      2.0      4.0
done
"""
PANDAS_OUTPUT = """vector-add-performance:
       size  Triton (GB/s)  Torch (GB/s)
0    4096.0   2.500000   2.500000
1    8192.0   4.000000   4.000000
matmul-time:
          M       N   Triton (ms)   cuBLAS (runtime(ms))
0     256.0   128.0      1.0      1.0
"""


def test_parse_tables_of_tile_and_pandas():
    ours, _ = runner.parse_tables(TILE_OUTPUT)
    theirs, _ = runner.parse_tables(PANDAS_OUTPUT)
    assert ours.name == theirs.name == "vector-add-performance"
    assert ours.columns == theirs.columns == ["size", "Triton (GB/s)", "Torch (GB/s)"]
    assert ours.rows == [[4096.0, 1.25, 2.5], [8192.0, 2.0, 4.0]] and theirs.rows[1] == [8192.0, 4.0, 4.0]
    assert runner.parse_tables("name:\nno table here\n") == []
    attention = runner.parse_tables("fused-attention-d64-fwd-causal=True-warp_specialize=False:\n"
                                    "N_CTX  Triton [FP16] (TFLOPS)\n 1024   217.4\n")
    assert attention[0].name == "fused-attention-d64-fwd-causal=True-warp_specialize=False"  # tutorial 06's titles


def test_markdown_summary_side_by_side():
    ours = runner.Run("pass", 3.0, tables=runner.parse_tables(TILE_OUTPUT))
    theirs = runner.Run("pass", 2.0, tables=runner.parse_tables(PANDAS_OUTPUT))
    failed = runner.Run("fail", 1.0, error="TypeError: bad | thing")
    text = runner.markdown({"01-vector-add": (ours, theirs), "09-x": (failed, runner.Run("not run"))}, 60)
    assert "| 01-vector-add | pass | 3.0 | pass | 2.0 |  |" in text
    assert "| 09-x | fail | 1.0 | not run | 0.0 | TypeError: bad \\| thing |" in text
    assert "| size | Triton (GB/s) (tile) | Triton (GB/s) (Triton) | Triton (GB/s) (tile/Triton speed) |" in text
    assert "| 4096 | 1.25 | 2.5 | 0.5 | 2.5 | 2.5 | 1 |" in text
    # N is a further x value, shown once; a time in ms is inverted so the ratio stays a speed
    assert "| M | N | Triton (ms) (tile) | Triton (ms) (Triton) | Triton (ms) (tile/Triton speed) |" in text
    assert "| 256 | 128 | 2 | 1 | 0.5 | 4 | 1 | 0.25 |" in text


def test_last_error_line():
    trace = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom\n"
    assert runner.last_error(trace) == "ValueError: boom"


def test_runner_end_to_end_on_tile_only(tmp_path):
    tutorials = tmp_path / "tutorials"
    tutorials.mkdir()
    (tutorials / "01-style.py").write_text(SCRIPT.read_text())
    (tutorials / "02-broken.py").write_text("import triton\nraise RuntimeError('tutorial failed here')\n")
    out = tmp_path / "summary.md"
    proc = run_python(str(REPO / "benchmarks" / "run_triton_tutorials.py"), str(tutorials), "--out", str(out),
                      "--no-triton", "--timeout", "300", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "| 01-style | pass |" in text and "| not run |" in text
    assert "| 02-broken | fail |" in text and "RuntimeError: tutorial failed here" in text


def test_runner_passes_env_settings_to_the_tutorials(tmp_path):
    tutorials = tmp_path / "tutorials"
    tutorials.mkdir()
    (tutorials / "03-env.py").write_text("import os\nimport triton\nassert os.environ['PYTEST_VERSION'] == '1'\n")
    out = tmp_path / "summary.md"
    proc = run_python(str(REPO / "benchmarks" / "run_triton_tutorials.py"), str(tutorials), "--out", str(out),
                      "--no-triton", "--env", "PYTEST_VERSION=1", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| 03-env | pass |" in out.read_text() and "Both with PYTEST_VERSION=1." in out.read_text()
    bad = run_python(str(REPO / "benchmarks" / "run_triton_tutorials.py"), str(tutorials), "--env", "PYTEST_VERSION",
                     tmp_path=tmp_path)
    assert bad.returncode == 2 and "NAME=VALUE" in bad.stderr
