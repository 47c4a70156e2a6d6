"""Read and print profiles written by tile.profiler (proton's hatchet JSON), as proton's viewer:

    tree, metrics = parse(["time/ms", "tflop16/s"], "matmul.hatchet")
    print_tree(tree, metrics)

Metric names (each inclusive: a node's value covers what ran inside it):
    time/s, time/ms, time/us, time/ns        the node's time, summed over its calls
    avg_time/s, ... avg_time/ns              the same divided by its number of calls
    flop/s, gflop/s, tflop/s                 its "flops" metric per second of its time, and
    flop16/s, gflop16/s, tflop16/s, ...      its "flops16" (8, 32, 64 alike)
    byte/s, gbyte/s, tbyte/s                 its "bytes" per second
    count, bytes, flops16, ...               a recorded metric as it is
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

_TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_PREFIXES = {"": 1.0, "g": 1e9, "t": 1e12}


@dataclass
class Frame:
    """One node of a read profile: its name, its metrics (recorded and derived), its children."""
    name: str
    metrics: dict[str, float]
    children: list["Frame"] = field(default_factory=list)


def read(filename: str) -> Frame:
    with open(filename) as f:
        database = json.load(f)
    root = database[0] if isinstance(database, list) else database
    return _frame(root)


def _frame(node: dict[str, Any]) -> Frame:
    return Frame(node["frame"]["name"], dict(node.get("metrics", {})), [_frame(c) for c in node.get("children", [])])


def derive(metric: str, recorded: dict[str, float]) -> Optional[float]:
    """The value of metric name `metric` (see the module docstring) from a node's recorded
    metrics; None where the node lacks what it needs."""
    time_ns = recorded.get("time (ns)")
    count = recorded.get("count")
    timed = re.fullmatch(r"(avg_)?time/(s|ms|us|ns)", metric)
    if timed:
        if time_ns is None or (timed.group(1) and not count):
            return None
        value = time_ns / _TIME_UNITS[timed.group(2)]
        return value / count if timed.group(1) else value
    rate = re.fullmatch(r"([gt]?)(flop(\d*)|byte)/s", metric)
    if rate:
        source = "bytes" if rate.group(2) == "byte" else f"flops{rate.group(3)}"
        if source not in recorded or not time_ns:
            return None
        return recorded[source] / (time_ns * 1e-9) / _PREFIXES[rate.group(1)]
    if "/" in metric:
        raise ValueError(f"tile.profiler.viewer: unknown metric {metric!r} (see the module docstring for the names)")
    return recorded.get(metric)


def parse(metrics: list[str], filename: str, include: Optional[str] = None, exclude: Optional[str] = None,
          threshold: Optional[float] = None) -> tuple[Frame, list[str]]:
    """Read `filename` and derive `metrics` at every node; `include`/`exclude` are regular
    expressions on node names (a node is kept with its ancestors), `threshold` drops nodes
    whose first metric is below it. Returns (tree, metric names) for print_tree."""
    tree = read(filename)
    for name in metrics:
        derive(name, {})  # an unknown name fails before any output

    def annotate(frame: Frame) -> None:
        frame.metrics.update({name: derive(name, frame.metrics) for name in metrics})
        for child in frame.children:
            annotate(child)

    def keep(frame: Frame) -> bool:
        frame.children = [c for c in frame.children if keep(c)]
        if frame.name == "ROOT":
            return True
        value = frame.metrics.get(metrics[0]) if metrics else None
        if threshold is not None and (value is None or value < threshold):
            return False
        if exclude and re.search(exclude, frame.name):
            return False
        return bool(frame.children) or not include or re.search(include, frame.name) is not None

    annotate(tree)
    keep(tree)
    return tree, list(metrics)


def format_tree(tree: Frame, metrics: list[str], depth: int = 100) -> str:
    lines: list[str] = []

    def cell(value: Optional[float]) -> str:
        return "nan" if value is None else f"{value:.3f}"

    def walk(frame: Frame, prefix: str, branch: str, level: int) -> None:
        values = " ".join(cell(frame.metrics.get(m)) for m in metrics)
        lines.append(f"{prefix}{branch}{values} {frame.name}")
        if level >= depth:
            return
        inner = prefix + ("" if not branch else "│  " if branch == "├─ " else "   ")
        for i, child in enumerate(frame.children):
            walk(child, inner, "└─ " if i == len(frame.children) - 1 else "├─ ", level + 1)

    walk(tree, "", "", 0)
    return "\n".join(lines)


def print_tree(tree: Frame, metrics: list[str], depth: int = 100, format: Optional[str] = None,
               print_sorted: bool = False) -> None:
    """Print the tree, one node per line: its metrics, then its name (proton's layout)."""
    print(format_tree(tree, metrics, depth))
    if print_sorted and metrics:
        nodes: list[Frame] = []

        def collect(frame: Frame) -> None:
            nodes.extend(frame.children)
            for child in frame.children:
                collect(child)

        collect(tree)
        print("Sorted kernels by metric " + metrics[0])
        for frame in sorted(nodes, key=lambda f: -(f.metrics.get(metrics[0]) or 0.0)):
            print(f"{frame.name[:100]:105} {frame.metrics.get(metrics[0]) or 0.0:.4}")
