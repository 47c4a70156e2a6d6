"""tile's import graph, read from the source (the AST of every `import` and `from ... import`):
no package imports another that imports it back when modules load, the compiler's levels
import one way (ir <- opt <- codegen), and the PTX emitter is reached only through the
target lookup (tile.codegen.target), so that another target is a sibling of tile/codegen/ptx/."""
from __future__ import annotations

import ast
import os
from typing import Iterator

import pytest

TILE = os.path.join(os.path.dirname(__file__), "..", "tile")


def module_files(root: str) -> dict[str, str]:
    """{dotted module name: path} of every .py file under package directory `root`."""
    top = os.path.basename(os.path.normpath(root))
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                parts = [top] + os.path.relpath(os.path.join(folder, name), root)[:-3].split(os.sep)
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(folder, name)
    return found


def _nested_statements(node: ast.stmt) -> Iterator[ast.stmt]:
    for _, value in ast.iter_fields(node):
        for item in value if isinstance(value, list) else ():
            if isinstance(item, ast.stmt):
                yield item
            elif isinstance(item, ast.excepthandler):
                yield from item.body


def _import_nodes(body: list[ast.stmt], module_level: bool) -> Iterator[ast.stmt]:
    """Import statements that run: with module_level, those that run when the module loads
    (in if/try/with/class bodies too); else every one, in functions too. Never those under
    `if TYPE_CHECKING:` (annotations only)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            yield from _import_nodes(node.orelse, module_level)
        elif not module_level or isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)):
            yield from _import_nodes(list(_nested_statements(node)), module_level)


def imports(modules: dict[str, str], module_level: bool) -> dict[str, set[str]]:
    """{module: the modules of `modules` it imports}; `from pkg import name` counts as pkg.name
    when that is a module, else as pkg."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        with open(path) as f:
            tree = ast.parse(f.read())
        targets: set[str] = set()
        for node in _import_nodes(tree.body, module_level):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                              for alias in node.names]
            for target in candidates:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def package_of(module: str) -> str:
    """tile.codegen.ptx.emit -> tile.codegen; top-level modules (tile.compiler) are their own."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges between packages. The root package `tile` is left out: Python loads it before any
    of its modules, so every module depends on it and it imports its modules only lazily."""
    out: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            a, b = package_of(source), package_of(target)
            if a != b and "tile" not in (a, b):
                out.setdefault(a, set()).add(b)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


MODULES = module_files(TILE)
AT_LOAD = imports(MODULES, module_level=True)
ANYWHERE = imports(MODULES, module_level=False)

# What each level of the compiler may import (its own package besides), counting imports
# inside functions: data flows one way, ir <- opt <- codegen.
LEVELS = {"tile.ir": set(), "tile.opt": {"tile.ir"}, "tile.codegen": {"tile.ir", "tile.opt"}}
# The only modules outside tile/codegen/ptx/ that may import it.
PTX_ENTRY = {"tile.codegen.target"}


def test_no_package_imports_one_that_imports_it_back_at_load() -> None:
    assert cycles(package_graph(AT_LOAD)) == []


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_the_compiler_levels_import_one_way(level: str) -> None:
    reach = {(m, t) for m, targets in ANYWHERE.items() if package_of(m) == level
             for t in targets if package_of(t) not in LEVELS[level] | {level}}
    assert reach == set()


def test_no_cycles_inside_the_compiler_levels() -> None:
    inside = {m: {t for t in ts if package_of(t) in LEVELS} for m, ts in ANYWHERE.items() if package_of(m) in LEVELS}
    assert cycles(inside) == []


def test_the_ptx_emitter_is_reached_only_through_the_target_lookup() -> None:
    in_ptx = lambda m: m == "tile.codegen.ptx" or m.startswith("tile.codegen.ptx.")  # noqa: E731
    importers = {m for m, targets in ANYWHERE.items() if not in_ptx(m) and any(in_ptx(t) for t in targets)}
    assert importers <= PTX_ENTRY  # tile.codegen.target loads it by name (EMITTERS), in no import statement


def test_the_checks_see_cycles_levels_and_entries(tmp_path) -> None:
    """The graph reader on a small tree: a load-time cycle between two packages, one hidden in
    a function, one under TYPE_CHECKING (not a cycle), and relative imports."""
    files = {
        "tile/__init__.py": "",
        "tile/ir/__init__.py": "from .core import Op\n",
        "tile/ir/core.py": "class Op: pass\n",
        "tile/opt/__init__.py": "",
        "tile/opt/fold.py": "from ..ir.core import Op\nfrom tile.codegen import lower\n",
        "tile/codegen/__init__.py": "",
        "tile/codegen/lower.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tile.runtime import x\n"
                                 "from ..opt import fold\n",
        "tile/runtime/__init__.py": "",
        "tile/runtime/x.py": "def f():\n    from tile.codegen.lower import y\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modules = module_files(str(tmp_path / "tile"))
    at_load, anywhere = imports(modules, True), imports(modules, False)
    assert at_load["tile.opt.fold"] == {"tile.ir.core", "tile.codegen.lower"}
    assert at_load["tile.codegen.lower"] == {"tile.opt.fold"}
    assert cycles(package_graph(at_load)) == [["tile.codegen", "tile.opt"]]
    assert anywhere["tile.runtime.x"] == {"tile.codegen.lower"} and at_load["tile.runtime.x"] == set()
    assert "tile.runtime" not in package_graph(anywhere)["tile.codegen"]
