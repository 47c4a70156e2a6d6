"""The standard library of tile.language, written in tile language itself (as Triton's
standard.py): @jit functions that the frontend inlines into the kernels calling them.
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import PropagateNan, constexpr, float32, int32, uint32
from tile.frontend.jit import jit
from tile.language import math


def _pick_sum_dtype(in_dtype, dtype):
    """The accumulation dtype of sum/cumsum: as asked, else 32-bit for narrow ints and fp32 for bf16."""
    if dtype is not None:
        return dtype
    if in_dtype.is_int_signed() and in_dtype.int_bitwidth < 32:
        return int32
    if in_dtype.is_int_unsigned() and in_dtype.int_bitwidth < 32:
        return uint32
    if in_dtype.is_bf16():
        return float32
    return None


def _widen_for_max(in_dtype):
    """max/min reduce narrow types in 32 bits (as Triton does)."""
    if in_dtype.primitive_bitwidth < 32:
        return float32 if in_dtype.is_floating() else int32
    return None


@jit
def cdiv(x, div):
    """Ceiling division: (x + div - 1) // div."""
    return (x + div - 1) // div


@jit
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1 / (1 + math.exp(-x))


@jit
def softmax(x, ieee_rounding: constexpr = False):
    """exp(x - max(x)) / sum(exp(x - max(x))) along axis 0."""
    z = x - max(x, 0)
    num = math.exp(z)
    den = sum(num, 0)
    return math.fdiv(num, den, ieee_rounding)


@jit
def zeros_like(input):
    """A block of zeros with the shape and dtype of `input`."""
    return core.zeros(input.shape, input.dtype)


@jit
def minimum(x, y, propagate_nan: constexpr = PropagateNan.NONE):
    """Elementwise minimum (see tl.math.min for NaN handling)."""
    return math.min(x, y, propagate_nan)


@jit
def maximum(x, y, propagate_nan: constexpr = PropagateNan.NONE):
    """Elementwise maximum (see tl.math.max for NaN handling)."""
    return math.max(x, y, propagate_nan)


@jit
def clamp(x, min, max, propagate_nan: constexpr = PropagateNan.NONE):
    """Elementwise min(max(x, min), max) for floats."""
    return math.clamp(x, min, max, propagate_nan)


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Re-index a row-major (size_i, size_j) grid so that groups of size_g rows run column-major."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = math.min(size_i - off_i, size_g)
    new_i = off_i + (ij % size_g)
    new_j = (ij % size_gj) // size_g
    return new_i, new_j


# ------------------------------------------------------------------------ reductions


@jit
def _sum_combine(a, b):
    return a + b


@jit
def _prod_combine(a, b):
    return a * b


@jit
def _xor_combine(a, b):
    return a ^ b


@jit
def _max_combine(a, b):
    return math.max(a, b)


@jit
def _min_combine(a, b):
    return math.min(a, b)


@jit
def _argmax_combine(value1, index1, value2, index2, tie_break_left: constexpr):
    if tie_break_left:
        tie = value1 == value2 and index1 < index2
    else:
        tie = False
    gt = value1 > value2 or tie
    return core.where(gt, value1, value2), core.where(gt, index1, index2)


@jit
def _argmax_combine_tie_break_left(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, True)


@jit
def _argmax_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, False)


@jit
def _argmin_combine(value1, index1, value2, index2, tie_break_left: constexpr):
    if tie_break_left:
        tie = value1 == value2 and index1 < index2
    else:
        tie = False
    lt = value1 < value2 or tie
    return core.where(lt, value1, value2), core.where(lt, index1, index2)


@jit
def _argmin_combine_tie_break_left(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, True)


@jit
def _argmin_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, False)


@jit
def _reduce_with_indices(input, axis: constexpr, combine_fn: constexpr, keep_dims: constexpr):
    """Reduce (value, index) pairs: the value and the position it came from along `axis`."""
    if axis is None:
        flat = core.reshape(input, input.numel)
        value, index = core.reduce((flat, core.arange(0, input.numel)), 0, combine_fn)
        if keep_dims:
            value = core.expand_dims(value, tuple(range(len(input.shape))))
            index = core.expand_dims(index, tuple(range(len(input.shape))))
    else:
        index = core.arange(0, input.shape[axis])
        for d in core.static_range(len(input.shape)):
            if d != axis % len(input.shape):
                index = core.expand_dims(index, d)
        index = core.broadcast_to(index, input.shape)
        value, index = core.reduce((input, index), axis, combine_fn, keep_dims=keep_dims)
    return value, index


@jit
def sum(input, axis=None, keep_dims=False, dtype: constexpr = None):
    """Sum along `axis` (None: all elements); narrow integers accumulate in 32 bits, bf16 in fp32."""
    out_dtype: constexpr = _pick_sum_dtype(input.dtype, dtype)
    if out_dtype is not None:
        input = input.to(out_dtype)
    return core.reduce(input, axis, _sum_combine, keep_dims=keep_dims)


@jit
def xor_sum(input, axis=None, keep_dims=False):
    """XOR of the elements along `axis` (integers)."""
    core.static_assert(input.dtype.is_int(), "xor_sum is only defined for integers")
    return core.reduce(input, axis, _xor_combine, keep_dims=keep_dims)


@jit
def _max_or_min(input, axis, return_indices, tie_break_left, keep_dims, combine_fn: constexpr,
                index_combine_left: constexpr, index_combine_fast: constexpr):
    """max or min: `combine_fn` on the values, or on (value, index) pairs `index_combine_left`
    (the first index on ties) or `index_combine_fast`."""
    if return_indices:
        if tie_break_left:
            return _reduce_with_indices(input, axis, index_combine_left, keep_dims)
        else:
            return _reduce_with_indices(input, axis, index_combine_fast, keep_dims)
    else:
        wide: constexpr = _widen_for_max(input.dtype)
        if wide is not None:
            input = input.to(wide)
        return core.reduce(input, axis, combine_fn, keep_dims=keep_dims)


@jit
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along `axis`; with return_indices=True also where it is (the first, on ties)."""
    return _max_or_min(input, axis, return_indices, return_indices_tie_break_left, keep_dims, _max_combine,
                       _argmax_combine_tie_break_left, _argmax_combine_tie_break_fast)


@jit
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along `axis`; with return_indices=True also where it is (the first, on ties)."""
    return _max_or_min(input, axis, return_indices, return_indices_tie_break_left, keep_dims, _min_combine,
                       _argmin_combine_tie_break_left, _argmin_combine_tie_break_fast)


@jit
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the maximum along `axis`."""
    _, index = max(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                   keep_dims=keep_dims)
    return index


@jit
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the minimum along `axis`."""
    _, index = min(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                   keep_dims=keep_dims)
    return index


# ----------------------------------------------------------------------------- scans


@jit
def cumsum(input, axis=0, reverse=False, dtype: constexpr = None):
    """Inclusive prefix sum along `axis` (from the end with reverse=True)."""
    out_dtype: constexpr = _pick_sum_dtype(input.dtype, dtype)
    if out_dtype is not None:
        input = input.to(out_dtype)
    return core.associative_scan(input, axis, _sum_combine, reverse)


@jit
def cumprod(input, axis=0, reverse=False):
    """Inclusive prefix product along `axis` (from the end with reverse=True)."""
    if input.dtype.is_bf16():
        input = input.to(float32)
    return core.associative_scan(input, axis, _prod_combine, reverse)
