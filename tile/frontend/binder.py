"""The launch binder: a Python function generated once per kernel, so that a warm launch is
Python's own argument binding, one small call per argument, one dict lookup and the backend.

For `def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr)` the generated function reads:

    def add(grid, x_ptr=_missing, ..., BLOCK=_missing, *extra, num_warps=4, num_stages=3, num_ctas=1, stream=None):
        if extra: too_many_arguments(5 + len(extra))
        if x_ptr is _missing: missing_argument('x_ptr')           (the same for each required parameter)
        h = fast_args.get(type(x_ptr))
        k0, v0 = h(x_ptr) if h is not None else arg(x_ptr)
        ...                                      (the same for y_ptr, out_ptr, n)
        key = (k0, k1, k2, k3, ("c", type(BLOCK), BLOCK), num_warps, num_stages, target())   (tl.constexpr
                                                                     values are unwrapped first)
        entry = entries.get(key)
        if entry is None:
            entry = compile(key, (x_ptr, y_ptr, out_ptr, n, BLOCK), num_warps, num_stages, num_ctas)
        if callable(grid):
            grid = grid({"x_ptr": x_ptr, ..., "BLOCK": BLOCK, "num_warps": num_warps, "num_stages": num_stages})
        entry(grid, (v0, v1, v2, v3), (x_ptr, y_ptr, out_ptr, n), stream)

`arg` returns an argument's part of the specialization key and the value the GPU launcher
takes (a device address for arrays); `fast_args` holds the same per type for the common
types (Python numbers, torch tensors). The entry, made by the compiled kernel, launches.
"""
from __future__ import annotations

from typing import Any, Callable

from .core import constexpr


def constexpr_key(v: Any) -> tuple:
    # The type is part of the key: 1, 1.0 and True are equal in Python but compile differently.
    if type(v) is constexpr:
        v = v.value
    return ("c", type(v), v)


def _items(names: list[str] | tuple[str, ...]) -> str:
    """Tuple items with trailing commas: valid for zero, one or many."""
    return "".join(f"{n}, " for n in names)


def make_binder(name: str, arg_names: tuple[str, ...], kinds: tuple[str, ...], defaults: tuple[Any, ...],
                missing: Any, namespace: dict[str, Any]) -> Callable[..., None]:
    """Generate the launch function. `kinds[i]` is "runtime", "nospec" or "constexpr";
    `namespace` supplies arg, fast_args, arg_nospec, constexpr, constexpr_key, entries, compile,
    target, missing_argument and too_many_arguments (raise the TypeErrors of a bad call). The grid
    comes first, so that `kernel[grid]` is a positional partial."""
    params, key_parts, values, runtime_args, checks = [], [], [], [], []
    namespace["_missing"] = missing
    for i, (arg, kind) in enumerate(zip(arg_names, kinds)):
        default = defaults[i]
        # Required parameters default to a sentinel, so a missing one gets tile's own message.
        params.append(f"{arg}=_missing" if default is missing else f"{arg}=_default{i}")
        if default is missing:
            checks.append(f"    if {arg} is _missing:\n        missing_argument({arg!r})")
        else:
            namespace[f"_default{i}"] = default
        if kind == "constexpr":  # constexpr_key, inlined
            key_parts.append(f"('c', type({arg}), {arg}) if type({arg}) is not constexpr else constexpr_key({arg})")
            continue
        key_parts.append(f"k{i}")
        values.append(f"v{i}")
        runtime_args.append(arg)
    lines = [f"def {name}(grid, {_items(params)}*extra, num_warps=4, num_stages=3, num_ctas=1, stream=None):"]
    lines.append("    if extra:")
    lines.append(f"        too_many_arguments({len(arg_names)} + len(extra))")
    lines += checks
    for i, (arg, kind) in enumerate(zip(arg_names, kinds)):
        if kind == "runtime":  # the common types dispatch here, without a call to `arg`
            lines.append(f"    h = fast_args.get(type({arg}))")
            lines.append(f"    k{i}, v{i} = h({arg}) if h is not None else arg({arg})")
        elif kind == "nospec":
            lines.append(f"    k{i}, v{i} = arg_nospec({arg})")
    lines.append(f"    key = ({_items(key_parts)}num_warps, num_stages, target())")
    lines.append("    entry = entries.get(key)")
    lines.append("    if entry is None:")
    lines.append(f"        entry = compile(key, ({_items(arg_names)}), num_warps, num_stages, num_ctas)")
    lines.append("    if callable(grid):")
    meta = ", ".join(f"{a!r}: {a}" for a in arg_names)
    lines.append(f"        grid = grid({{{meta}, 'num_warps': num_warps, 'num_stages': num_stages}})")
    lines.append(f"    entry(grid, ({_items(values)}), ({_items(runtime_args)}), stream)")
    exec(compile("\n".join(lines), f"<tile launcher of {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]
