"""Acceptance run: Triton's own tutorials, unchanged, on tile and on Triton, side by side.

    python benchmarks/run_triton_tutorials.py TUTORIALS_DIR [--out summary.md] [--timeout 900]
        [--only 01 02] [--no-triton] [--env NAME=VALUE ...]

TUTORIALS_DIR holds Triton's python/tutorials/*.py (copied there on the GPU machine; they are
Triton's code and are not part of this repository). Each tutorial runs in its own subprocess
with a timeout, first as `python -m tile.triton tutorial.py` (`import triton` is tile), then as
`python tutorial.py` under Triton itself when it is installed. The run records pass, fail
(with the exception's last line) or timeout, the wall time, and every benchmark table the
tutorial prints (perf_report's "plot-name:" followed by its table, from tile or pandas); the
Markdown summary lists the tutorials, then each table with tile's and Triton's numbers and
their ratio. TRITON_INTERPRET=1 in the environment runs both on their interpreters. --env sets
variables for both compilers' runs, e.g. PYTEST_VERSION=1, which makes tutorial 06 autotune over
its single testing configuration instead of the 21 it keeps on Hopper (the full run compiles each
of them for every sequence length, head size, mode and dtype, beyond a 10-minute run on tile).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent
_TABLE_TITLE = re.compile(r"^([\w.=\-]+):\s*$")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^nan$|^inf$")


@dataclass
class Table:
    """A benchmark table as printed: column names, and rows of numbers (pandas' index dropped)."""

    name: str
    columns: list[str]
    rows: list[list[float]] = field(default_factory=list)


@dataclass
class Run:
    """One tutorial under one compiler."""

    status: str  # "pass", "fail", "timeout" or "not run"
    seconds: float = 0.0
    error: str = ""
    tables: list[Table] = field(default_factory=list)
    output: str = ""


def parse_tables(text: str) -> list[Table]:
    """The benchmark tables in a tutorial's output: a "name:" line, a header of column names
    (separated by two or more spaces), then rows of numbers until a line that is not one."""
    lines = text.splitlines()
    tables: list[Table] = []
    i = 0
    while i < len(lines) - 1:
        title = _TABLE_TITLE.match(lines[i].strip())
        header = re.split(r"\s{2,}", lines[i + 1].strip())
        if title is None or not header or not header[0]:
            i += 1
            continue
        table = Table(title.group(1), header)
        i += 2
        while i < len(lines):
            cells = lines[i].split()
            if not cells or not all(_NUMBER.match(c) for c in cells):
                break
            values = [float(c) for c in cells]
            if len(values) == len(header) + 1:  # pandas prints the row index first
                values = values[1:]
            if len(values) != len(header):
                break
            table.rows.append(values)
            i += 1
        if table.rows:
            tables.append(table)
    return tables


def last_error(text: str) -> str:
    """The exception line of a Python traceback in `text` (its last line that names an error)."""
    for line in reversed(text.strip().splitlines()):
        if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b|^[\w.]+: ", line.strip()):
            return line.strip()[:300]
    return text.strip().splitlines()[-1][:300] if text.strip() else ""


def run_one(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Run:
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        output = _text(exc.stdout) + _text(exc.stderr)
        return Run("timeout", time.perf_counter() - start, f"no result within {timeout:.0f} s",
                   parse_tables(_text(exc.stdout)), output)
    output = proc.stdout + proc.stderr
    status = "pass" if proc.returncode == 0 else "fail"
    error = "" if status == "pass" else last_error(proc.stderr) or f"exit status {proc.returncode}"
    return Run(status, time.perf_counter() - start, error, parse_tables(proc.stdout), output)


def _text(data: Optional[bytes | str]) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def triton_installed(env: dict[str, str]) -> bool:
    probe = subprocess.run([sys.executable, "-c", "import triton, sys; sys.exit(not hasattr(triton, 'jit'))"],
                           env=env, capture_output=True, text=True)
    return probe.returncode == 0


def tile_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def triton_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _cell(value: float) -> str:
    return f"{value:.4g}"


def markdown(results: dict[str, tuple[Run, Run]], timeout: float, extra: Optional[dict[str, str]] = None) -> str:
    settings = " ".join(f"{k}={v}" for k, v in (extra or {}).items())
    out = ["# Triton's tutorials on tile and on Triton", "",
           f"Each tutorial ran unchanged in a subprocess (timeout {timeout:.0f} s): `python -m tile.triton "
           f"tutorial.py` for tile, `python tutorial.py` for Triton. "
           f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '0')}." +
           (f" Both with {settings}." if settings else ""), "",
           "| tutorial | tile | time (s) | Triton | time (s) | tile's error |", "|---|---|---|---|---|---|"]
    for name, (tile_run, triton_run) in results.items():
        error = tile_run.error.replace("|", "\\|")
        out.append(f"| {name} | {tile_run.status} | {tile_run.seconds:.1f} | {triton_run.status} | "
                   f"{triton_run.seconds:.1f} | {error} |")
    failures = [(n, r) for n, (_, r) in results.items() if r.status in ("fail", "timeout")]
    if failures:
        out += ["", "Triton's own failures:", ""]
        out += [f"- {name}: {run.error}" for name, run in failures]
    for name, (tile_run, triton_run) in results.items():
        theirs = {t.name: t for t in triton_run.tables}
        for table in tile_run.tables:
            out += ["", f"## {name}: {table.name}", ""]
            out += _side_by_side(table, theirs.get(table.name))
    return "\n".join(out) + "\n"


def _side_by_side(ours: Table, theirs: Optional[Table]) -> list[str]:
    """Rows by x value: each measured column under tile, under Triton, and tile's speed over
    Triton's (values for throughputs, their inverse for times: a column in ms or s). Columns
    without a unit in their name are further x values (Triton's x_names), shown once."""
    by_x = {row[0]: row for row in theirs.rows} if theirs is not None and theirs.columns == ours.columns else {}
    measured = [j for j, c in enumerate(ours.columns) if j > 0 and "(" in c]
    shown = [j for j in range(1, len(ours.columns)) if j not in measured]
    header = [ours.columns[0]] + [ours.columns[j] for j in shown]
    header += [f"{ours.columns[j]} ({who})" for j in measured for who in ("tile", "Triton", "tile/Triton speed")]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in ours.rows:
        other = by_x.get(row[0])
        cells = [_cell(row[0])] + [_cell(row[j]) for j in shown]
        for j in measured:
            mine = row[j]
            if other is None or not other[j] or not mine:
                cells += [_cell(mine), _cell(other[j]) if other is not None else "", ""]
                continue
            is_time = re.search(r"\((ms|us|s)\)", ours.columns[j]) is not None  # "(ms)", "(runtime(ms))"
            cells += [_cell(mine), _cell(other[j]), _cell(other[j] / mine if is_time else mine / other[j])]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tutorials", type=Path, help="a directory holding Triton's python/tutorials/*.py")
    parser.add_argument("--out", type=Path, default=Path("triton_tutorials.md"), help="the Markdown summary")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per tutorial and compiler")
    parser.add_argument("--only", nargs="*", default=[], help="run the tutorials whose names contain one of these")
    parser.add_argument("--no-triton", action="store_true", help="run on tile only")
    parser.add_argument("--logs", type=Path, default=None, help="a directory for each run's full output")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE",
                        help="environment variables for both compilers' runs")
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.env):
        parser.error(f"--env takes NAME=VALUE items, not {[i for i in args.env if '=' not in i]}")
    extra = dict(item.split("=", 1) for item in args.env)

    scripts = sorted(p for p in args.tutorials.glob("*.py") if not args.only or any(o in p.name for o in args.only))
    if not scripts:
        print(f"no tutorials (*.py) found in {args.tutorials}", file=sys.stderr)
        return 2
    with_triton = not args.no_triton and triton_installed(triton_env(extra))
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
    results: dict[str, tuple[Run, Run]] = {}
    for script in scripts:
        cwd = script.resolve().parent
        tile_run = run_one([sys.executable, "-m", "tile.triton", str(script.resolve())], cwd, tile_env(extra),
                           args.timeout)
        triton_run = (run_one([sys.executable, str(script.resolve())], cwd, triton_env(extra), args.timeout)
                      if with_triton else Run("not run", error="Triton is not installed"))
        results[script.stem] = (tile_run, triton_run)
        print(f"{script.stem}: tile {tile_run.status} ({tile_run.seconds:.1f} s), Triton {triton_run.status} "
              f"({triton_run.seconds:.1f} s) {tile_run.error}", flush=True)
        if args.logs is not None:
            (args.logs / f"{script.stem}.tile.log").write_text(tile_run.output)
            (args.logs / f"{script.stem}.triton.log").write_text(triton_run.output)
    args.out.write_text(markdown(results, args.timeout, extra))
    print(f"summary: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
