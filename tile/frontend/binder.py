"""The launch binders: Python functions generated per kernel, so that a warm launch is
Python's own argument binding, a few inline type checks, one dict lookup and the driver call.

Two binders exist per kernel. The general one accepts every argument tile accepts; for
`def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr)` it reads:

    def lookup(x_ptr, y_ptr, out_ptr, n, BLOCK, _opt_num_warps, _opt_num_stages, ...):
        h = fast_args.get(type(x_ptr))
        k0, v0 = h(x_ptr) if h is not None else arg(x_ptr)       (the same for y_ptr, out_ptr, n)
        launch_target = target()
        key = (k0, k1, k2, k3, ("c", type(BLOCK), BLOCK), _opt_num_warps, _opt_num_stages, _opt_num_ctas,
               _opt_maxnreg, _opt_launch_cooperative_grid, _opt_launch_pdl, launch_target,
               device(launch_target, (x_ptr, y_ptr, out_ptr, n)))
        entry = entries.get(key)
        if entry is None:
            entry = compile(key, (x_ptr, y_ptr, out_ptr, n, BLOCK))
        return entry, (v0, v1, v2, v3)

    def add(grid, x_ptr=_missing, ..., BLOCK=_missing, *extra, num_warps=4, num_stages=3, num_ctas=1,
            maxnreg=None, launch_cooperative_grid=False, launch_pdl=False, stream=None):
        (a TypeError for extra or missing arguments)
        entry, values = lookup(x_ptr, y_ptr, out_ptr, n, BLOCK, num_warps, num_stages, num_ctas, ...)
        if callable(grid):
            grid = grid({"x_ptr": x_ptr, ..., "BLOCK": BLOCK, "num_warps": num_warps, "num_stages": num_stages})
        if hooks:  (tile/runtime/launch_hooks.py: a profiler is listening)
            return hooked(kernel, grid, {"x_ptr": x_ptr, ...}, lambda: entry(grid, values, (...), stream))
        return entry(grid, values, (x_ptr, y_ptr, out_ptr, n), stream)

The launch options (LAUNCH_OPTIONS) are keyword-only; the option values are part of the key
and `compile` checks them. As in Triton, a keyword that names a kernel parameter binds to
the parameter even when it is also a launch option: for `def k(x, num_stages: tl.constexpr)`
the binder has no `num_stages` option, and the launch uses that option's default.
An entry returns the CompiledKernel it launched, so `kernel[grid](...)` returns it as in Triton.

`arg` returns an argument's part of the specialization key and the value the GPU launcher
takes (a device address for arrays); `fast_args` holds the same per type for the common types.

The fast binder is generated after the first compilation, for the kinds of arguments that
launch passed (specialize.fast_arg): when they are CUDA tensors and Python numbers, as in
almost every program, it reads

    def add(grid, x_ptr=_missing, ..., *extra, num_warps=4, ..., stream=None):
        _launch_device = current_device()
        if (type(x_ptr) is _type0 and ... and type(n) is int and type(BLOCK) is int and not extra
                and x_ptr.get_device() == _launch_device and ... and -2147483648 <= n <= 2147483647):
            v0 = x_ptr.data_ptr(); v1 = y_ptr.data_ptr(); v2 = out_ptr.data_ptr(); v3 = n
            key = (x_ptr.dtype, v0 & 15, ..., v3 == 1, not v3 & 15, BLOCK, num_warps, ..., launch_pdl,
                   environ.get(INTERPRET), _launch_device)
            entry = fast.get(key)
            if entry is None:
                entry = fast_miss(key, lookup(x_ptr, y_ptr, out_ptr, n, BLOCK, num_warps, ...)[0])
            if entry is not None:
                if type(grid) is not tuple: grid = grid({...}) if callable(grid) else grid
                return entry(grid, torch_stream(_launch_device) if stream is None else stream, v0, v1, v2, v3)
        return general(grid, x_ptr, y_ptr, out_ptr, n, BLOCK, *extra, num_warps=num_warps, ...)

Its key is finer than the specialization key (a dtype object for its name, the low address
bits for the 16-byte alignment) and maps to the same compiled kernel. Both keys end with the
launch device (tile/runtime/devices.py): arrays on another device than PyTorch's current one
fail the fast checks, and the general binder names the argument; `fast_miss` stores the
entry's fast form (`entry.fast(grid, stream, *values)`, which packs and launches), or None
for backends without one (the interpreter), which then take the general path.

A TensorDescriptor over a CUDA tensor or a DeviceArray, for a kernel that takes tensor maps
(sm_90a), is checked and spread by a helper (specialize.DescriptorLeaves) in the condition:
`(v0 := _helper0(desc, _launch_device)) is not None` binds (key items, leaves), the key takes
`v0[0]` and the launch `*v0[1]`: the base's address, the shape, the strides and the tensor map.
"""
from __future__ import annotations

from typing import Any, Callable

from .core import constexpr


# Triton's launch options, with their defaults, in the order their values enter the launch key
# (`stream`, tile's own, is not part of the key).
LAUNCH_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("num_warps", 4), ("num_stages", 3), ("num_ctas", 1), ("maxnreg", None),
    ("launch_cooperative_grid", False), ("launch_pdl", False), ("stream", None),
)
KEYED_OPTIONS = tuple(name for name, _ in LAUNCH_OPTIONS if name != "stream")


def constexpr_key(v: Any) -> tuple:
    # The type is part of the key: 1, 1.0 and True are equal in Python but compile differently.
    if type(v) is constexpr:
        v = v.value
    return ("c", type(v), v)


def _items(names: list[str] | tuple[str, ...]) -> str:
    """Tuple items with trailing commas: valid for zero, one or many."""
    return "".join(f"{n}, " for n in names)


def _signature(name: str, arg_names: tuple[str, ...], defaults: tuple[Any, ...], missing: Any,
               namespace: dict[str, Any]) -> str:
    """The binder's `def` line: the grid first (so that `kernel[grid]` is a positional
    partial); required parameters default to a sentinel, so a missing one gets tile's own
    message; then the launch options a parameter does not shadow, keyword-only."""
    params = []
    namespace["_missing"] = missing
    for i, arg in enumerate(arg_names):
        if defaults[i] is missing:
            params.append(f"{arg}=_missing")
        else:
            namespace[f"_default{i}"] = defaults[i]
            params.append(f"{arg}=_default{i}")
    options = [f"{option}={default!r}" for option, default in LAUNCH_OPTIONS if option not in arg_names]
    return f"def {name}(grid, {_items(params)}*extra, {', '.join(options)}):"


def option_values(arg_names: tuple[str, ...], names: tuple[str, ...] = KEYED_OPTIONS) -> str:
    """The binder's expressions for the values of launch options `names`: the option's
    variable, or its default where a kernel parameter of that name took the keyword."""
    defaults = dict(LAUNCH_OPTIONS)
    return "".join(f"{defaults[n]!r}, " if n in arg_names else f"{n}, " for n in names)


def _forward_options(arg_names: tuple[str, ...]) -> str:
    """The options the fast binder passes on to the general one, as keywords."""
    return ", ".join(f"{n}={n}" for n, _ in LAUNCH_OPTIONS if n not in arg_names)


def _grid_meta(arg_names: tuple[str, ...]) -> str:
    """The dict a callable grid receives: the arguments by name, and the launch options
    num_warps and num_stages (unless parameters of those names gave their values)."""
    options = "".join(f"{o!r}: {o}, " for o in ("num_warps", "num_stages") if o not in arg_names)
    return "{" + "".join(f"{a!r}: {a}, " for a in arg_names) + options + "}"


def _args_dict(arg_names: tuple[str, ...]) -> str:
    """The arguments by parameter name, as launch hooks receive them."""
    return "{" + "".join(f"{a!r}: {a}, " for a in arg_names) + "}"


def _define(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    exec(compile(source, f"<tile launcher of {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def make_binder(name: str, arg_names: tuple[str, ...], kinds: tuple[str, ...], defaults: tuple[Any, ...],
                missing: Any, namespace: dict[str, Any]) -> tuple[Callable[..., None], Callable[..., Any]]:
    """Generate the general binder and its `lookup` (see the module docstring); returns both.
    `kinds[i]` is "runtime", "nospec" or "constexpr"; `namespace` supplies arg, fast_args,
    arg_nospec, constexpr, constexpr_key, entries, compile, target, device(target, runtime
    arguments) (the launch device, runtime.devices.resolver), missing_argument,
    too_many_arguments (raise the TypeErrors of a bad call), argument_error(exc, args)
    (re-raises `exc`, an argument that cannot be passed, with the argument's name), and
    kernel, hooks and hooked (the JITFunction, and tile/runtime/launch_hooks.py's HOOKS and
    launch_hooked)."""
    option_params = _items([f"_opt_{n}" for n in KEYED_OPTIONS])
    key_parts, values, runtime_args = [], [], []
    lookup = [f"def lookup({_items(arg_names)}{option_params}):", "    try:"]
    for i, (arg, kind) in enumerate(zip(arg_names, kinds)):
        if kind == "constexpr":  # constexpr_key, inlined
            key_parts.append(f"('c', type({arg}), {arg}) if type({arg}) is not constexpr else constexpr_key({arg})")
            continue
        if kind == "runtime":  # the common types dispatch here, without a call to `arg`
            lookup.append(f"        h = fast_args.get(type({arg}))")
            lookup.append(f"        k{i}, v{i} = h({arg}) if h is not None else arg({arg})")
        else:
            lookup.append(f"        k{i}, v{i} = arg_nospec({arg})")
        key_parts.append(f"k{i}")
        values.append(f"v{i}")
        runtime_args.append(arg)
    lookup.append("        pass")
    # A try costs nothing until it catches (Python 3.11): only a bad argument pays for its name.
    lookup.append("    except (TypeError, ValueError) as exc:")
    lookup.append(f"        argument_error(exc, ({_items(arg_names)}))")
    lookup.append("    launch_target = target()")
    lookup.append(f"    key = ({_items(key_parts)}{option_params}launch_target, "
                  f"device(launch_target, ({_items(runtime_args)})))")
    lookup.append("    entry = entries.get(key)")
    lookup.append("    if entry is None:")
    lookup.append(f"        entry = compile(key, ({_items(arg_names)}))")
    lookup.append(f"    return entry, ({_items(values)})")

    lines = [_signature(name, arg_names, defaults, missing, namespace)]
    lines.append("    if extra:")
    lines.append(f"        too_many_arguments({len(arg_names)} + len(extra))")
    for i, arg in enumerate(arg_names):
        if defaults[i] is missing:
            lines.append(f"    if {arg} is _missing:\n        missing_argument({arg!r})")
    lines.append(f"    entry, values = lookup({_items(arg_names)}{option_values(arg_names)})")
    lines.append("    if callable(grid):")
    lines.append(f"        grid = grid({_grid_meta(arg_names)})")
    launch = f"entry(grid, values, ({_items(runtime_args)}), {option_values(arg_names, ('stream',))[:-2]})"
    lines.append("    if hooks:")
    lines.append(f"        return hooked(kernel, grid, {_args_dict(arg_names)}, lambda: {launch})")
    lines.append(f"    return {launch}")
    source = "\n".join(lookup) + "\n\n" + "\n".join(lines)
    return _define(source, name, namespace), namespace["lookup"]


def make_fast_binder(name: str, arg_names: tuple[str, ...], kinds: tuple[str, ...], defaults: tuple[Any, ...],
                     missing: Any, fast_args: list[Any], namespace: dict[str, Any]) -> Callable[..., None]:
    """Generate the fast binder (see the module docstring). `fast_args[i]` (a
    specialize.FastArg) says how parameter i is checked, passed and keyed, and where the
    stream comes from, with `{a}` for the argument and `{v}` for its launch value.
    `namespace` supplies what make_binder's does, plus lookup, general (the general binder),
    fast (the dict of fast entries), fast_miss, environ, interpret_key, current_device (the
    device the fast checks compare array devices with: PyTorch's current device) and
    torch_stream (the current stream of a device index)."""
    type_checks, value_checks, assigns, key_parts, values = ["not extra"], [], [], [], []
    stream = "0"
    for i, (arg, kind, spec) in enumerate(zip(arg_names, kinds, fast_args)):
        arg_type, check, value, key = spec.type, spec.check, spec.value, spec.key
        namespace[f"_type{i}"] = arg_type
        if spec.helper is not None:
            namespace[f"_helper{i}"] = spec.helper
        type_checks.insert(len(type_checks) - 1, f"type({arg}) is _type{i}")
        if check:
            value_checks.append(check.format(a=arg, v=f"v{i}", h=f"_helper{i}"))
        if kind != "constexpr":
            if value is None:  # bound by the check: (key items, launch values)
                values.append(f"*v{i}[1]")
            else:
                assigns.append(f"v{i} = {value.format(a=arg)}")
                values.append(f"v{i}")
        if stream == "0" and spec.stream:
            stream = spec.stream.format(a=arg)
        key_parts.append(key.format(a=arg, v=f"v{i}"))
    options = option_values(arg_names)
    stream_option = option_values(arg_names, ("stream",))[:-2]
    lines = [_signature(name, arg_names, defaults, missing, namespace)]
    lines.append("    _launch_device = current_device()")
    lines.append(f"    if {' and '.join(type_checks + value_checks)}:")
    lines += [f"        {a}" for a in assigns]
    lines.append(f"        key = ({''.join(key_parts)}{options}environ.get(interpret_key), _launch_device)")
    lines.append("        entry = fast.get(key)")
    lines.append("        if entry is None:")
    lines.append(f"            entry = fast_miss(key, lookup({_items(arg_names)}{options})[0])")
    lines.append("        if entry is not None:")
    lines.append("            if type(grid) is not tuple:")
    lines.append(f"                grid = grid({_grid_meta(arg_names)}) if callable(grid) else grid")
    launch = f"entry(grid, {stream} if {stream_option} is None else {stream_option}, {_items(values)})"
    lines.append("            if hooks:")
    lines.append(f"                return hooked(kernel, grid, {_args_dict(arg_names)}, lambda: {launch})")
    lines.append(f"            return {launch}")
    lines.append(f"    return general(grid, {_items(arg_names)}*extra, {_forward_options(arg_names)})")
    return _define("\n".join(lines), name, namespace)


def check_launch_options(kernel: str, options: dict[str, Any]) -> None:
    """Raise a TypeError or ValueError naming the bad launch option of `kernel`, if any."""
    num_warps, num_stages, num_ctas = options["num_warps"], options["num_stages"], options["num_ctas"]
    if type(num_warps) is not int or num_warps not in (1, 2, 4, 8, 16, 32):
        raise TypeError(f"{kernel}: num_warps must be an int among 1, 2, 4, 8, 16, 32; got {num_warps!r}")
    if type(num_stages) is not int or num_stages < 1:
        raise TypeError(f"{kernel}: num_stages must be an int >= 1, got {num_stages!r}")
    if num_ctas != 1:
        raise ValueError(f"{kernel}: num_ctas={num_ctas!r}, but tile launches one CTA per program (no thread-block "
                         f"clusters); use num_ctas=1")
    maxnreg = options["maxnreg"]
    if maxnreg is not None and (type(maxnreg) is not int or not 16 <= maxnreg <= 255):
        raise TypeError(f"{kernel}: maxnreg must be None or an int from 16 to 255 (registers per thread), "
                        f"got {maxnreg!r}")
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if type(options[flag]) is not bool:
            raise TypeError(f"{kernel}: {flag} must be True or False, got {options[flag]!r}")
