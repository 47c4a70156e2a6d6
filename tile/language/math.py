"""Math builtins of tile.language (Triton's `tl.math`): elementwise functions on runtime values.

Transcendentals take fp32 or fp64, as in Triton (convert fp16/bf16 with `.to(tl.float32)`);
a Python number argument is used as fp32.
"""
from __future__ import annotations

from typing import Any

from tile.frontend.core import PropagateNan, builtin, current, tensor, unwrap
from tile.ir.types import DType


def _unary(name: str, doc: str):
    def fn(x: Any) -> Any:
        return current().unary_math(name, unwrap(x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


exp = _unary("exp", "e ** x, elementwise.")
exp2 = _unary("exp2", "2 ** x, elementwise.")
log = _unary("log", "Natural logarithm, elementwise.")
log2 = _unary("log2", "Base-2 logarithm, elementwise.")
sqrt = _unary("sqrt", "Square root, elementwise (approximate on f32, like Triton's; tl.sqrt_rn rounds correctly).")
rsqrt = _unary("rsqrt", "1 / sqrt(x), elementwise.")
sin = _unary("sin", "Sine, elementwise.")
cos = _unary("cos", "Cosine, elementwise.")
erf = _unary("erf", "The error function, elementwise.")
floor = _unary("floor", "The largest integer <= x, elementwise.")
ceil = _unary("ceil", "The smallest integer >= x, elementwise.")


@builtin
def abs(x: Any) -> Any:  # noqa: A001 - Triton's name
    """|x|, elementwise (integers and floats)."""
    return current().abs(unwrap(x))


@builtin
def fma(x: Any, y: Any, z: Any) -> Any:
    """x * y + z with one rounding, elementwise."""
    return current().fma(unwrap(x), unwrap(y), unwrap(z))


@builtin
def umulhi(x: Any, y: Any) -> Any:
    """The high 32 (or 64) bits of the unsigned product x * y, elementwise."""
    return current().umulhi(unwrap(x), unwrap(y))


@builtin
def max(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:  # noqa: A001 - Triton's name
    """Elementwise maximum; with floats, NaN wins only with propagate_nan=PropagateNan.ALL."""
    return current().maximum(unwrap(x), unwrap(y), unwrap(propagate_nan))


@builtin
def min(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:  # noqa: A001 - Triton's name
    """Elementwise minimum; with floats, NaN wins only with propagate_nan=PropagateNan.ALL."""
    return current().minimum(unwrap(x), unwrap(y), unwrap(propagate_nan))


@builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:  # noqa: A002
    """min(max(x, min), max) for floats."""
    return current().clamp(unwrap(x), unwrap(min), unwrap(max), unwrap(propagate_nan))


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: Any = False) -> Any:
    """x / y for floats."""
    x, y = unwrap(x), unwrap(y)
    for v in (x, y):
        el = v.element if isinstance(v, tensor) else None
        if not isinstance(v, float) and not (isinstance(el, DType) and el.is_floating):
            raise TypeError(f"fdiv needs float operands, got {v!r}")
    return current().truediv(x, y, bool(unwrap(ieee_rounding)))


@builtin
def div_rn(x: Any, y: Any) -> Any:
    """x / y rounded correctly (IEEE round to nearest even), where `/` on f32 may be approximate."""
    return current().truediv(unwrap(x), unwrap(y), True)


@builtin
def sqrt_rn(x: Any) -> Any:
    """Square root rounded correctly, where tl.sqrt on f32 may be approximate."""
    return current().unary_math("sqrt", unwrap(x), ieee_rounding=True)
