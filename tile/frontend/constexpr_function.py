"""`tile.constexpr_function`: a plain Python function that kernels call at compile time.

    @tile.constexpr_function
    def block_for(n):
        return min(1024, tile.next_power_of_2(n))

    @tile.jit
    def kernel(x_ptr, N: tl.constexpr):
        BLOCK: tl.constexpr = block_for(N)        # evaluated while compiling: a constexpr
        offs = tl.arange(0, BLOCK)

Arguments arrive unwrapped (a tl.constexpr becomes its value) and the result is a
compile-time value. Runtime values (tensors) are refused with an error naming the argument.
Outside kernels the function is called as it is. Its code is part of the cache key of every
kernel that names it.
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

from .core import tensor, unwrap


class ConstexprFunction:
    """A Python function callable from kernels on compile-time values (see the module docstring)."""

    __tile_builtin__ = True  # the code generator calls it directly, with the kernel's values

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(unwrap(a) for a in args)
        kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        for i, a in enumerate(args):
            _check_compile_time(self, f"argument {i + 1}", a)
        for k, v in kwargs.items():
            _check_compile_time(self, f"argument '{k}'", v)
        return self.fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"ConstexprFunction({self.fn.__module__}:{self.fn.__qualname__})"


def _check_compile_time(fn: ConstexprFunction, what: str, value: Any) -> None:
    if isinstance(value, tensor) or isinstance(value, (tuple, list)) and any(isinstance(v, tensor) for v in value):
        raise TypeError(f"constexpr_function '{fn.fn.__qualname__}': {what} is a runtime value; a constexpr_function "
                        f"runs while the kernel compiles and takes compile-time values only (tl.constexpr "
                        f"parameters, numbers, dtypes)")


def constexpr_function(fn: Callable[..., Any]) -> ConstexprFunction:
    """Make `fn` callable from @tile.jit functions at compile time on constexpr arguments; its
    result is a compile-time value (Triton's `triton.constexpr_function`)."""
    return ConstexprFunction(fn)


__all__ = ["ConstexprFunction", "constexpr_function"]
