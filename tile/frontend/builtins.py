"""The builtin functions of tile.language (Triton's names and signatures).

Each is a thin wrapper marked `@builtin`: it unwraps compile-time arguments, converts dtypes,
and asks the current `Semantic` to build the IR. Functions written in tile language itself
(sum, max, softmax, Philox, ...) live in tile/language/standard.py and random.py.
"""
from __future__ import annotations

from typing import Any, Optional

from tile.ir.types import f32

from . import block_pointers
from .block_pointers import block_pointer
from .core import builtin, current, ir_type_of, tensor, unwrap


def _shape(args: tuple) -> tuple:
    if len(args) == 1 and isinstance(unwrap(args[0]), (tuple, list)):
        args = tuple(unwrap(args[0]))
    return tuple(unwrap(a) for a in args)


# ----------------------------------------------------------------------- program


@builtin
def program_id(axis: Any) -> tensor:
    """The index of this program along grid axis 0, 1 or 2 (int32)."""
    return current().program_id(unwrap(axis))


@builtin
def num_programs(axis: Any) -> tensor:
    """The number of programs along grid axis 0, 1 or 2 (int32)."""
    return current().num_programs(unwrap(axis))


# ------------------------------------------------------------------ constructors


@builtin
def arange(start: Any, end: Any) -> tensor:
    """start, start+1, ..., end-1 as int32; the length must be a power of 2."""
    return current().arange(unwrap(start), unwrap(end))


@builtin
def full(shape: Any, value: Any, dtype: Any) -> tensor:
    """A block of `shape` filled with `value`, of `dtype`."""
    return current().full(_shape((shape,)), unwrap(value), ir_type_of(unwrap(dtype)))


@builtin
def zeros(shape: Any, dtype: Any) -> tensor:
    """A block of `shape` filled with zeros of `dtype`."""
    return current().full(_shape((shape,)), 0, ir_type_of(unwrap(dtype)))


@builtin
def to_tensor(x: Any) -> tensor:
    return current().to_tensor(unwrap(x))


# -------------------------------------------------------------------- memory


@builtin
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (), padding_option: Any = "",
         cache_modifier: Any = "", eviction_policy: Any = "", volatile: Any = False) -> tensor:
    """Read the values `pointer` points to: a scalar pointer gives a scalar, a block of
    pointers a block; lanes where `mask` is false read `other` (undefined without it). With a
    block pointer (tl.make_block_ptr) it reads the block: `boundary_check` names the
    dimensions whose out-of-bounds elements read `padding_option` ("zero", "nan" or "" for
    undefined) instead of memory, and `mask`/`other` are not allowed."""
    pointer = unwrap(pointer)
    if isinstance(pointer, block_pointer):
        return block_pointers.load(current(), pointer, unwrap(mask), unwrap(other), boundary_check,
                                   unwrap(padding_option), unwrap(cache_modifier), unwrap(eviction_policy),
                                   bool(unwrap(volatile)))
    if unwrap(boundary_check) or unwrap(padding_option):
        raise ValueError("tl.load: boundary_check and padding_option are for block pointers (tl.make_block_ptr): "
                         "the compiler does not know the bounds of a tensor of pointers; use a mask")
    return current().load(pointer, unwrap(mask), unwrap(other), unwrap(cache_modifier), unwrap(eviction_policy),
                          bool(unwrap(volatile)))


@builtin
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (), cache_modifier: Any = "",
          eviction_policy: Any = "") -> None:
    """Write `value` (converted to the pointee type) where `pointer` points, where `mask` is
    true. With a block pointer (tl.make_block_ptr) it writes a block of the pointer's shape
    and element type, skipping out-of-bounds elements of the `boundary_check` dimensions."""
    pointer = unwrap(pointer)
    if isinstance(pointer, block_pointer):
        block_pointers.store(current(), pointer, unwrap(value), unwrap(mask), boundary_check,
                             unwrap(cache_modifier), unwrap(eviction_policy))
        return
    if unwrap(boundary_check):
        raise ValueError("tl.store: boundary_check is for block pointers (tl.make_block_ptr): the compiler does not "
                         "know the bounds of a tensor of pointers; use a mask")
    current().store(pointer, unwrap(value), unwrap(mask), unwrap(cache_modifier), unwrap(eviction_policy))


def _atomic(kind: str):
    def fn(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return current().atomic_rmw(kind, pointer, unwrap(val), unwrap(mask), unwrap(sem), unwrap(scope))

    fn.__name__ = fn.__qualname__ = f"atomic_{kind}"
    fn.__doc__ = f"Atomically apply `{kind}` with `val` where `pointer` points; returns the old values."
    return builtin(fn)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically store `val` where the old value equals `cmp`; returns the old values."""
    return current().atomic_cas(pointer, unwrap(cmp), unwrap(val), unwrap(sem), unwrap(scope))


# -------------------------------------------------------------------- shapes


@builtin
def broadcast(input: Any, other: Any) -> tuple[tensor, tensor]:
    """Both values broadcast to their common shape."""
    sem = current()
    return sem.broadcast_values(sem.to_tensor(unwrap(input)), sem.to_tensor(unwrap(other)))


@builtin
def broadcast_to(input: Any, *shape: Any) -> tensor:
    return current().broadcast_to(unwrap(input), _shape(shape))


@builtin
def expand_dims(input: Any, axis: Any) -> tensor:
    axis = unwrap(axis)
    return current().expand_dims(unwrap(input), [unwrap(a) for a in axis] if isinstance(axis, (tuple, list)) else axis)


@builtin
def reshape(input: Any, *shape: Any, can_reorder: Any = False) -> tensor:
    return current().reshape(unwrap(input), _shape(shape), bool(unwrap(can_reorder)))


@builtin
def view(input: Any, *shape: Any) -> tensor:
    """Reshape that may reorder elements (Triton's deprecated `view`)."""
    return current().reshape(unwrap(input), _shape(shape), True)


@builtin
def ravel(input: Any, can_reorder: Any = False) -> tensor:
    """The elements of `input` as a 1-D block, in row-major order (tile keeps it also with can_reorder=True)."""
    x = current().to_tensor(unwrap(input))
    return current().reshape(x, (x.numel,), bool(unwrap(can_reorder)))


@builtin
def trans(input: Any, *dims: Any) -> tensor:
    """Permute dimensions; without `dims`, transpose a 2-D block."""
    return current().trans(unwrap(input), _shape(dims) if dims else None)


@builtin
def permute(input: Any, *dims: Any) -> tensor:
    return current().trans(unwrap(input), _shape(dims))


@builtin
def join(a: Any, b: Any) -> tensor:
    """Join two blocks along a new minor dimension of size 2: ``out[..., 0] = a``, ``out[..., 1] = b``.

    The operands are broadcast to one shape first (they must have one dtype); two scalars give a
    block of shape [2]. join is the inverse of split; join more than two values with several calls
    (shapes stay powers of two).

        ab = tl.join(a, b)              # a, b: [4, 8] -> ab: [4, 8, 2]
    """
    return current().join(unwrap(a), unwrap(b))


@builtin
def split(a: Any) -> tuple[tensor, tensor]:
    """Split a block in two along its last dimension, which must have size 2: ``a[..., 0], a[..., 1]``.

    A block of shape [2] gives two scalars. split is the inverse of join; also a method:

        lo, hi = tl.split(ab)           # ab: [4, 8, 2] -> lo, hi: [4, 8]
        lo, hi = ab.split()
    """
    return current().split(unwrap(a))


@builtin
def interleave(a: Any, b: Any) -> tensor:
    """Interleave two blocks along their last dimension: ``a[..., 0], b[..., 0], a[..., 1], ...``.

    The same as ``tl.join(a, b).reshape(a.shape[:-1] + [2 * a.shape[-1]])``; two scalars give [a, b].

        ab = tl.interleave(a, b)        # a, b: [4, 8] -> ab: [4, 16]
    """
    sem = current()
    pairs = sem.join(unwrap(a), unwrap(b))
    if len(pairs.shape) == 1:
        return pairs
    return sem.reshape(pairs, pairs.shape[:-2] + (2 * pairs.shape[-2],))


@builtin
def cat(input: Any, other: Any, can_reorder: Any = False) -> tensor:
    """Concatenate two blocks of one shape and dtype along dimension 0.

    Triton only promises the elements in some order (``can_reorder=True`` is required there); tile
    always keeps them in order, `input`'s first, which satisfies both settings.

        ab = tl.cat(a, b)               # a, b: [64] -> ab: [128]
    """
    return current().cat(unwrap(input), unwrap(other))


@builtin
def gather(src: Any, index: Any, axis: Any) -> tensor:
    """Gather from `src` along `axis`: ``out[i] = src[i with i[axis] replaced by index[i]]``.

    `src` and `index` have one rank and the same size in every dimension but `axis`; the result has
    `index`'s shape and `src`'s dtype. An index outside ``[0, src.shape[axis])`` is an error on the
    interpreter and undefined on the GPU. Also a method:

        y = tl.gather(x, idx, 1)        # x: [16, 32], idx: [16, 8] -> y[i, j] = x[i, idx[i, j]]
        y = x.gather(idx, 1)
    """
    return current().gather(unwrap(src), unwrap(index), unwrap(axis))


@builtin
def histogram(input: Any, num_bins: Any, mask: Any = None) -> tensor:
    """Count the values of a 1-D integer block in `num_bins` bins of width 1 starting at 0.

    Returns an int32 block of shape [num_bins]: ``out[b]`` is the number of ``i`` with
    ``input[i] == b`` and ``mask[i]`` true. Values outside ``[0, num_bins)`` and masked-off elements
    are not counted. `num_bins` is a compile-time power of 2. Also a method:

        counts = tl.histogram(x, 64, mask=offs < n)
    """
    return current().histogram(unwrap(input), unwrap(num_bins), unwrap(mask))


@builtin
def where(condition: Any, x: Any, y: Any) -> tensor:
    """Elementwise `x if condition else y`, broadcasting all three."""
    return current().where(unwrap(condition), unwrap(x), unwrap(y))


@builtin
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False) -> tensor:
    sem = current()
    target = ir_type_of(unwrap(dtype))
    if unwrap(bitcast):
        return sem.bitcast(unwrap(input), target)
    return sem.cast(unwrap(input), target, unwrap(fp_downcast_rounding))


# ------------------------------------------------------------------------ dot


@builtin
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None, allow_tf32: Any = None,
        max_num_imprecise_acc: Any = None, out_dtype: Any = None) -> tensor:
    """input @ other (+ acc): fp16, bf16 and fp32 inputs accumulate in fp32."""
    precision = unwrap(input_precision)
    if unwrap(allow_tf32) is not None:
        if precision is not None:
            raise ValueError("tl.dot: give input_precision or allow_tf32, not both")
        precision = "tf32" if unwrap(allow_tf32) else "ieee"
    out = ir_type_of(unwrap(out_dtype)) if unwrap(out_dtype) is not None else f32
    return current().dot(unwrap(input), unwrap(other), unwrap(acc), precision, unwrap(max_num_imprecise_acc), out)


# ---------------------------------------------------------- reductions, scans


@builtin
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: Any = False) -> Any:
    """Reduce `input` (a block or a tuple of blocks) along `axis` (None: all) with the @jit `combine_fn`."""
    return current().reduce(unwrap(input), unwrap(axis), unwrap(combine_fn), bool(unwrap(keep_dims)))


@builtin
def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: Any = False) -> Any:
    """Inclusive scan of `input` along `axis` with the @jit `combine_fn`."""
    return current().scan(unwrap(input), unwrap(axis), unwrap(combine_fn), bool(unwrap(reverse)))


# ---------------------------------------------------------------------- debug


@builtin
def static_assert(cond: Any, msg: Any = "") -> None:
    """Fail compilation unless the compile-time `cond` holds."""
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        raise TypeError("static_assert needs a compile-time condition; use tl.device_assert for runtime values")
    if not cond:
        raise AssertionError(f"static_assert failed: {unwrap(msg)}" if unwrap(msg) else "static_assert failed")


@builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n") -> None:
    """Print at compile time."""
    if current().dry_run:
        return
    print(*[unwrap(v) for v in values], sep=sep, end=end)


@builtin
def device_print(prefix: Any, *args: Any, hex: Any = False) -> None:
    """Print `prefix` and the values of `args` from every program at run time."""
    current().device_print(unwrap(prefix), [unwrap(a) for a in args], bool(unwrap(hex)))


@builtin
def device_assert(cond: Any, msg: Any = "", mask: Any = None) -> None:
    """Stop the kernel with `msg` where the runtime `cond` is false."""
    current().device_assert(unwrap(cond), unwrap(msg), unwrap(mask))


@builtin
def debug_barrier() -> None:
    """Synchronize the threads of a program."""
    current().debug_barrier()


@builtin
def multiple_of(input: Any, values: Any) -> tensor:
    """Promise that the values of `input` are multiples of `values` (per dimension)."""
    return current().hint(unwrap(input), "multiple_of", unwrap(values))


@builtin
def max_contiguous(input: Any, values: Any) -> tensor:
    """Promise runs of `values` consecutive integers (per dimension)."""
    return current().hint(unwrap(input), "max_contiguous", unwrap(values))


@builtin
def max_constancy(input: Any, values: Any) -> tensor:
    """Promise runs of `values` equal values (per dimension)."""
    return current().hint(unwrap(input), "max_constancy", unwrap(values))


# ------------------------------------------------------------------ iterators


@builtin
class static_range:
    """`for i in tl.static_range(...)`: a loop unrolled at compile time (bounds must be constexpr)."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None):
        self.args = (arg1, arg2, step)


@builtin
class range:  # noqa: A001 - Triton's name
    """`for i in tl.range(start, end, step, ...)`: a runtime loop (scf.for), with Triton's options.

    - num_stages: the software pipeline's depth for this loop's loads feeding tl.dot (cp.async or
      TMA copies issued num_stages - 1 iterations ahead), instead of the kernel's num_stages;
      1 keeps the loop's loads synchronous.
    - loop_unroll_factor: the body is repeated that many times per iteration of a main loop,
      the remaining iterations run in a second loop (a constant positive step is needed;
      otherwise the loop is left as it is).
    - warp_specialize, flatten, disallow_acc_multi_buffer: accepted and recorded on the loop;
      tile compiles such loops as its ordinary software pipeline (no producer/consumer warp
      groups, nested loops are not flattened), so programs written for them run unchanged.

        for k in tl.range(0, K, BLOCK_K, num_stages=4):
            acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
    """

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None, num_stages: Optional[int] = None,
                 loop_unroll_factor: Optional[int] = None, disallow_acc_multi_buffer: bool = False,
                 flatten: bool = False, warp_specialize: bool = False):
        self.args = (arg1, arg2, step)
        self.options = {"num_stages": unwrap(num_stages), "loop_unroll_factor": unwrap(loop_unroll_factor),
                        "disallow_acc_multi_buffer": unwrap(disallow_acc_multi_buffer) or None,
                        "flatten": unwrap(flatten) or None, "warp_specialize": unwrap(warp_specialize) or None}
