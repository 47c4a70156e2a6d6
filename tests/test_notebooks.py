"""Executes every notebook in notebooks/ (jupytext percent-format .py files) top to bottom in a
fresh Jupyter kernel with no GPU (TILE_INTERPRET=1; GPU stages are read from target="sm_90a"
dumps). A cell that raises fails the test with the cell and its traceback; the notebooks check
their own key facts with `assert` cells. Also: a kernel defined in a notebook cell compiles from
the cell's source, and its errors name the cell and the line."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))


@pytest.fixture
def notebook_env(tmp_path, monkeypatch):
    """The kernel process's environment: this tree's tile first, the interpreter, a fresh cache."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TILE_INTERPRET", "1")
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def _execute(notebook, cwd: Path):
    client = nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(cwd)}})
    return client.execute()


def _stdout(cell) -> str:
    """What a cell printed (the kernel may send it in several chunks)."""
    return "".join(o["text"] for o in cell.outputs if o.get("name") == "stdout")


def test_there_are_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS if p.name[:2] in ("01", "02", "07", "08")] == ["01", "02", "07", "08"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, notebook_env):
    notebook = jupytext.read(path)
    assert sum(1 for c in notebook.cells if c.cell_type == "markdown") >= 3, "a notebook explains what it runs"
    assert any(c.cell_type == "code" and re.search(r"^assert ", c.source, re.M) for c in notebook.cells), \
        "a notebook checks its key facts with assert cells"
    _execute(notebook, NOTEBOOK_DIR)


@pytest.mark.gpu
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_a_gpu(path, notebook_env, monkeypatch):
    """The same notebooks with their launches on the GPU (the dumps are the same)."""
    monkeypatch.delenv("TILE_INTERPRET")
    _execute(jupytext.read(path), NOTEBOOK_DIR)


def test_every_notebook_is_listed_in_the_readmes():
    listing = (NOTEBOOK_DIR / "README.md").read_text()
    top = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert path.name in listing, f"notebooks/README.md does not list {path.name}"
        assert path.name in top, f"README.md does not link {path.name}"


CELL_KERNEL = '''\
@tile.jit
def bad_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_name + 1.0)
'''
CELL_DUMP = '''\
try:
    tile.dump(bad_kernel, np.ones(16, np.float32), BLOCK=16)
except tile.CompilationError as e:
    print(e)
'''
CELL_GOOD = '''\
@tile.jit
def good_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 3.0)

x = np.arange(16, dtype=np.float32)
good_kernel[(1,)](x, BLOCK=16)
print(x.tolist())
print(tile.dump(good_kernel, x, BLOCK=16, stage="ptx", target="sm_80"))
'''


def test_a_kernel_defined_in_a_cell_compiles_renders_and_its_errors_name_the_cell(notebook_env, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import numpy as np\nimport tile\nimport tile.language as tl"),
                      nbformat.v4.new_code_cell(CELL_KERNEL), nbformat.v4.new_code_cell(CELL_DUMP),
                      nbformat.v4.new_code_cell(CELL_GOOD),
                      nbformat.v4.new_code_cell('tile.dump(good_kernel, x, BLOCK=16, stage="tile")')]
    _execute(notebook, tmp_path)
    error = _stdout(notebook.cells[2])
    assert error.startswith("Cell In[2]:4:28: undefined name 'undefined_name'\n"), error
    assert "    tl.store(x_ptr + offs, undefined_name + 1.0)\n" + " " * 31 + "^" in error
    printed = _stdout(notebook.cells[3])
    assert printed.startswith(str([3.0 * i for i in range(16)]))
    assert re.search(r"// \S+\.py:4  tl\.store\(x_ptr \+ offs, tl\.load\(x_ptr \+ offs\) \* 3\.0\)", printed)
    page = notebook.cells[4].outputs[0]["data"]["text/html"]  # the rich display, links to the cell's lines
    assert re.search(r'<a href="#tile-dump-\d+-L4" title="tl.store\(x_ptr \+ offs, tl.load\(x_ptr \+ offs\) \* 3.0\)"',
                     page)
