"""More builtins of tile.language (Triton's names and signatures): inline assembly,
map_elementwise, assume, dot_scaled, add/sub/mul with sanitize_overflow, and the `while`
condition wrapper. Thin wrappers like those of builtins.py: unwrap compile-time arguments and
ask the current `Semantic` to build the IR.
"""
from __future__ import annotations

from typing import Any, Sequence

from tile.ir.types import f32

from .core import builtin, current, ir_type_of, tensor, unwrap


@builtin
def inline_asm_elementwise(asm: Any, constraints: Any, args: Sequence[Any], dtype: Any, is_pure: Any,
                           pack: Any) -> Any:
    """Run inline assembly over blocks, elementwise: a `map` whose function is PTX.

    The `args` (blocks or scalars) are broadcast to one shape. Each instance of `asm` processes
    `pack` elements of every argument and result; elements narrower than 32 bits share 32-bit
    registers (4 int8 or 2 float16 in one `.b32`, first element in the lowest bits). Which
    elements one instance receives is unspecified. `constraints` lists the registers in order,
    outputs first, as LLVM does ("=r,=r,r,l": two 32-bit outputs, a 32-bit and a 64-bit input;
    letters h, r, l for 16/32/64-bit integer registers, f and d for f32/f64), and the asm names
    them $0, $1, ... in that order. `dtype` is the element type of the result, or a tuple of
    them for several results (a tuple of blocks comes back). `is_pure=False` keeps the asm even
    when its result is unused and stops the compiler from merging or moving it. Only on a GPU:
    on the interpreter it is a compile error.

    :param asm: the assembly (PTX), with $N for the registers
    :param constraints: the register constraints, outputs ("=r") then inputs ("r")
    :param args: the values passed in, broadcast together
    :param dtype: the result element type, or a tuple of them
    :param is_pure: whether the asm has no side effects
    :param pack: elements processed by one instance of the asm (a power of two)

        # y = (x & 0x1F) << 3 for four int8 at a time, in one 32-bit register
        y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x],
                                      dtype=tl.int8, is_pure=True, pack=4)
    """
    return current().inline_asm_elementwise(unwrap(asm), unwrap(constraints), [unwrap(a) for a in unwrap(args)],
                                            unwrap(dtype), bool(unwrap(is_pure)), unwrap(pack))


@builtin
def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1) -> Any:
    """Apply the @tile.jit function `scalar_fn` to every element of the `args` (broadcast together).

    The function sees scalars, so it may branch and loop per element: with `if` only the branch
    taken runs, where tl.where computes both sides. It returns one value per result (a tuple
    for several results, which then come back as a tuple of blocks). With `pack` > 1 one call
    receives `pack` elements of each argument (all of the first argument's, then the second's)
    and returns `pack` values per result in the same order; which elements are grouped is
    unspecified.

    :param scalar_fn: a @tile.jit function of scalars
    :param args: the blocks (or scalars) mapped over
    :param pack: the number of elements one call processes

        @tile.jit
        def selu_scalar(x, alpha):
            if x > 0:
                return x
            else:
                return alpha * (tl.exp(x) - 1)

        y = tl.map_elementwise(selu_scalar, x, 1.67)
    """
    return current().map_elementwise(unwrap(scalar_fn), [unwrap(a) for a in args], unwrap(pack))


@builtin
def assume(cond: Any) -> None:
    """Promise the compiler that the runtime condition `cond` (a comparison) holds.

    The promise never changes results; analyses may use it. tile's axis analysis reads
    divisibility from `tl.assume(x % 16 == 0)` (also `x & 15 == 0`, and `&` of several), which
    can widen memory accesses through offsets computed from x. The interpreter checks the
    condition and fails where it does not hold.

        tl.assume(stride % 16 == 0)
        tl.assume(n > 0)
    """
    current().assume(unwrap(cond))


@builtin
def add(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """x + y with Triton's type promotion and broadcasting (the `+` operator).

    In a kernel compiled with `@tile.jit(debug=True)`, an integer sum of 8 to 32 bits is checked
    for overflow (computed in int64, compared with the type's range) unless
    `sanitize_overflow=False`; the check fails like tl.device_assert.

        z = tl.add(x, y, sanitize_overflow=False)   # wrap-around intended (hashes, Philox)
    """
    return current().add(unwrap(x), unwrap(y), bool(unwrap(sanitize_overflow)))


@builtin
def sub(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """x - y (the `-` operator); overflow checks as for tl.add."""
    return current().sub(unwrap(x), unwrap(y), bool(unwrap(sanitize_overflow)))


@builtin
def mul(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """x * y (the `*` operator); overflow checks as for tl.add."""
    return current().mul(unwrap(x), unwrap(y), bool(unwrap(sanitize_overflow)))


@builtin
class condition:
    """The condition of a `while` loop with options: `while tl.condition(c, disable_licm=True):`.

    `disable_licm` keeps loop-invariant code inside the loop (shorter live ranges)."""

    def __init__(self, arg1: Any, disable_licm: Any = False):
        self.condition = arg1
        self.disable_licm = bool(unwrap(disable_licm))


@builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any, acc: Any = None,
               fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True, out_dtype: Any = None) -> tensor:
    """The matrix product of two blocks in microscaling (OCP MX) formats: lhs [M, K] @ rhs [K, N] (+ acc).

    Formats: "e2m1" (fp4, two per uint8, the first element in the low 4 bits), "e4m3" and "e5m2"
    (fp8, as uint8 or the fp8 dtype), "bf16" and "fp16". A scale is an e8m0 exponent per 32
    elements along K, as uint8 (2**(s - 127); 255 is NaN unless `fast_math`), shaped [M, K // 32]
    for lhs and [N, K // 32] for rhs (not transposed), or None for no scaling. As Triton does on
    Hopper, both sides are converted to bf16 (fp16 when either format is "fp16"; exactly for
    fp4 and fp8), multiplied by their scales (one rounding), and multiplied with tl.dot
    accumulating in fp32. `lhs_k_pack=False` means the fp4 pairs of lhs are packed along M
    instead of K (`rhs_k_pack=False`: along N).

    :param out_dtype: the result type; only tl.float32

        c = tl.dot_scaled(a_fp4, a_scale, "e2m1", b_fp8, b_scale, "e4m3")   # [M, N] float32
    """
    out = ir_type_of(unwrap(out_dtype)) if unwrap(out_dtype) is not None else f32
    return current().dot_scaled(unwrap(lhs), unwrap(lhs_scale), unwrap(lhs_format), unwrap(rhs), unwrap(rhs_scale),
                                unwrap(rhs_format), unwrap(acc), bool(unwrap(fast_math)), bool(unwrap(lhs_k_pack)),
                                bool(unwrap(rhs_k_pack)), out)


__all__ = ["inline_asm_elementwise", "map_elementwise", "assume", "add", "sub", "mul", "condition", "dot_scaled"]
