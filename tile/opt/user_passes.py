"""Your own passes over tile IR, plugged into the compiler.

A user pass is a function `fn(func)` or an object with `run(func)` (a `tile.opt.Pass`
subclass, its class, or any class with a `run` method) that rewrites a `tt.func` of tile IR in
place. Add it to one kernel, or to every kernel compiled from now on:

    @tile.jit(extra_passes=[strength_reduce])      # after the tile passes, for this kernel
    def kernel(...): ...

    tile.register_pass(strength_reduce, after="cse")   # every kernel, right after the last cse
    tile.unregister_pass(strength_reduce)

What the compiler guarantees around a user pass:
- the IR verifier runs right after it; IR it broke raises `PassVerificationError` naming the
  pass and the offending op (its name and source line);
- its effect shows in `tile.dump(kernel, ..., stage="passes")` under its name;
- cache keys include every user pass (its name and code): a kernel compiled with a pass never
  reuses a disk-cache entry compiled without it, nor the other way round.

Registering or unregistering a pass makes every kernel compile again at its next launch
(the disk cache still serves kernels compiled earlier with the same passes).

Example, a pass that doubles every float constant:

    def double_constants(func):
        for op in func.walk():
            if op.name == "arith.constant" and isinstance(op.attrs["value"], float):
                op.attrs["value"] *= 2

    before:  %11 = arith.constant {value = 4.0} : tensor<256xf32>
    after:   %11 = arith.constant {value = 8.0} : tensor<256xf32>
"""
from __future__ import annotations

import hashlib
import inspect
import types
from typing import Any, Callable, Iterable, Optional, Union

from ..ir import Operation, VerificationError, print_op, verify
from .pass_manager import Pass, PassVerificationError
from .tile_pipeline import tile_passes

PassLike = Union[Pass, Callable[[Operation], None], type]


class UserPass(Pass):
    """A user's pass (function or object with `run`), followed by the IR verifier."""

    def __init__(self, target: Any, name: str):
        self.target = target
        self.name = name

    def run(self, func: Operation) -> None:
        if isinstance(self.target, types.FunctionType):
            self.target(func)
        else:
            self.target.run(func)
        try:
            verify(func)
        except VerificationError as e:
            raise PassVerificationError(self.name, e, print_op(func)) from e

    def fingerprint(self) -> str:
        """The pass's name and code (with the Python functions it calls, its closure and defaults,
        and a pass object's attributes): what cache keys hold."""
        digest = hashlib.sha256(self.name.encode())
        if isinstance(self.target, types.FunctionType):
            _hash_function(digest, self.target, set())
        else:
            _hash_function(digest, type(self.target).run, set())
            settings = getattr(self.target, "__dict__", {})
            digest.update(repr(sorted((k, repr(v)) for k, v in settings.items())).encode())
        return digest.hexdigest()


def hash_code(digest: Any, code: types.CodeType) -> None:
    """Feed a code object to `digest`: bytecode, line table, names and constants (nested code
    objects recursively; their repr would hold a memory address)."""
    digest.update(code.co_code)
    digest.update(code.co_linetable)
    digest.update(repr((code.co_filename, code.co_firstlineno, code.co_names, code.co_varnames)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            hash_code(digest, const)
        else:
            digest.update(repr(const).encode())


def _hash_function(digest: Any, fn: types.FunctionType, seen: set[int]) -> None:
    """Feed `fn`'s code, defaults and closure to `digest`, then those of the module-level Python
    functions its code names (helpers it calls), once each."""
    if id(fn) in seen:
        return
    seen.add(id(fn))
    hash_code(digest, fn.__code__)
    cells = _closure_values(fn)
    digest.update(repr((fn.__qualname__, fn.__defaults__, [v for v in cells if not callable(v)])).encode())
    called = [fn.__globals__.get(name) for name in fn.__code__.co_names] + [v for v in cells if callable(v)]
    for helper in called:
        if isinstance(helper, types.FunctionType):
            _hash_function(digest, helper, seen)


def _closure_values(fn: types.FunctionType) -> list[Any]:
    values = []
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a cell whose variable is not assigned yet
            continue
    return values


def as_pass(p: PassLike) -> UserPass:
    """`p` as a verified UserPass; TypeError for anything that is not a pass."""
    if isinstance(p, UserPass):
        return p
    if isinstance(p, type):
        try:
            p = p()
        except TypeError as e:
            raise TypeError(f"pass class {p.__qualname__} must be constructible without arguments: {e}") from e
    if isinstance(p, types.FunctionType):
        return UserPass(p, p.__name__.replace("_", "-"))
    run = getattr(p, "run", None)
    if not callable(run) or not inspect.isfunction(getattr(type(p), "run", None)):
        raise TypeError(f"a pass is a function of a tt.func or an object with a run(func) method, not "
                        f"{type(p).__qualname__}")
    name = getattr(p, "name", "") or type(p).__name__
    return UserPass(p, name)


_REGISTERED: list[tuple[UserPass, str]] = []  # (pass, the tile pass it runs after), in registration order
_ON_CHANGE: list[Callable[[], None]] = []  # called when the registry changes (tile.frontend.jit forgets binaries)


def on_registry_change(callback: Callable[[], None]) -> None:
    """Call `callback` whenever a pass is registered or unregistered (the frontend uses it to make
    launched kernels compile again; opt does not import the frontend)."""
    _ON_CHANGE.append(callback)


def _registry_changed() -> None:
    for callback in _ON_CHANGE:
        callback()


def _tile_pass_names() -> list[str]:
    return [p.name for p in tile_passes()]


def register_pass(p: Optional[PassLike] = None, *, after: str = "dce") -> Any:
    """Run pass `p` in every kernel from now on (launched kernels compile again), right after
    the last run of tile pass `after` (default "dce", the last). Returns `p`, so it also works as a decorator:
    `@tile.register_pass` or `@tile.register_pass(after="cse")`."""
    names = _tile_pass_names()
    if after not in names:
        choices = ", ".join(dict.fromkeys(names))
        raise ValueError(f"register_pass: no tile pass named {after!r}; choose one of {choices}")
    if p is None:
        return lambda q: register_pass(q, after=after)
    wrapped = as_pass(p)
    if any(r.target is wrapped.target for r, _ in _REGISTERED):
        raise ValueError(f"register_pass: pass {wrapped.name!r} is already registered")
    _REGISTERED.append((wrapped, after))
    _registry_changed()
    return p


def unregister_pass(p: PassLike) -> None:
    """Stop running a pass given to `register_pass`."""
    for i, (r, _) in enumerate(_REGISTERED):
        if r.target is p or r is p:
            del _REGISTERED[i]
            _registry_changed()
            return
    raise ValueError(f"unregister_pass: {p!r} is not registered")


def registered_passes() -> list[tuple[UserPass, str]]:
    """The registered passes with the tile pass each runs after."""
    return list(_REGISTERED)


def tile_pipeline(extra_passes: Iterable[UserPass] = ()) -> list[Pass]:
    """The tile passes with the registered passes placed after their anchors, then `extra_passes`."""
    passes: list[Pass] = tile_passes()
    for user, after in _REGISTERED:
        place = max(i for i, q in enumerate(passes) if q.name == after) + 1
        while place < len(passes) and isinstance(passes[place], UserPass):  # earlier registrations first
            place += 1
        passes.insert(place, user)
    return passes + list(extra_passes)


def registry_fingerprint() -> str:
    """The registered passes and their places, for the disk-cache key ("" when none)."""
    return ";".join(f"{p.fingerprint()}@{after}" for p, after in _REGISTERED)


__all__ = ["UserPass", "as_pass", "register_pass", "unregister_pass", "registered_passes", "tile_pipeline",
           "registry_fingerprint"]
