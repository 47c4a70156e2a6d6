"""The standard library of tile.language, written in tile language itself (as Triton's
standard.py): @jit functions that the frontend inlines into the kernels calling them.
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import (PropagateNan, builtin, constexpr, current, float32, int1, int8, int16, int32, int64, tensor,
                                uint32, unwrap)
from tile.frontend.jit import jit
from tile.language import math


def _pick_sum_dtype(in_dtype, dtype):
    """The accumulation dtype of sum/cumsum: as asked, else 32-bit for narrow ints; floats keep
    their dtype (bf16 too, as in Triton 3.6: `tl.sum(x_bf16)` is bf16)."""
    if dtype is not None:
        return dtype
    if in_dtype.is_int_signed() and in_dtype.int_bitwidth < 32:
        return int32
    if in_dtype.is_int_unsigned() and in_dtype.int_bitwidth < 32:
        return uint32
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
        core.static_assert(-len(input.shape) <= axis < len(input.shape),
                           f"axis {axis} is out of range for a tensor of rank {len(input.shape)}")
        index = core.arange(0, input.shape[axis])
        for d in core.static_range(len(input.shape)):
            if d != axis % len(input.shape):
                index = core.expand_dims(index, d)
        index = core.broadcast_to(index, input.shape)
        value, index = core.reduce((input, index), axis, combine_fn, keep_dims=keep_dims)
    return value, index


@jit
def sum(input, axis=None, keep_dims=False, dtype: constexpr = None):
    """Sum along `axis` (None: all elements); narrow integers accumulate in 32 bits, floats in
    their own dtype (pass dtype=tl.float32 to accumulate bf16 or fp16 in fp32)."""
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
    (the first index on ties) or `index_combine_fast`. As in Triton, bf16 is compared in fp32
    (so its values come back as fp32 with the indices too)."""
    if input.dtype.is_bf16():
        input = input.to(float32)
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
    """Inclusive prefix sum along `axis` (from the end with reverse=True); bf16 scans in fp32,
    as in Triton 3.6 (whose tl.sum keeps bf16)."""
    if input.dtype.is_bf16():
        input = input.to(float32)
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


@jit
def _or_combine(a, b):
    return a | b


@jit
def reduce_or(input, axis, keep_dims=False):
    """Bitwise OR of the elements along `axis` (None: all elements), for integers.

        any_flag = tl.reduce_or(flags, axis=0)
    """
    core.static_assert(input.dtype.is_int(), "reduce_or is only defined for integers")
    return core.reduce(input, axis, _or_combine, keep_dims=keep_dims)


# --------------------------------------------------------------- flip, sort, top-k
#
# As in Triton: a dimension of n = 2**k elements is reshaped to a hypercube [2] * k, so that
# "the element whose index differs in bit j" is "the other element along hypercube axis j".
# xor_sum over that size-2 axis with keep_dims gives a ^ b in both places; XORing it in swaps
# the pair. On the GPU the axis is a register, lane or warp bit of the layout: the reduction is
# free in registers, one shuffle across lanes, or a trip through shared memory across warps.


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _int_of_width(dtype):
    """The signed integer dtype as wide as `dtype` (for bitcasts)."""
    return {1: int1, 8: int8, 16: int16, 32: int32, 64: int64}[dtype.primitive_bitwidth]


def _hypercube(shape, dim):
    """`shape` with dimension `dim` split into [2, 2, ...] (nothing for a size-1 dimension)."""
    return tuple(shape[:dim]) + (2,) * _log2(shape[dim]) + tuple(shape[dim + 1:])


def _with_last(shape, n):
    """`shape` with its last dimension replaced by n."""
    return tuple(shape[:-1]) + (n,)


def _indicator_shape(n_dims, j):
    """[1, ..., 2, ..., 1]: the hypercube axis of bit j (counted from the last axis) of n_dims axes."""
    return (1,) * (n_dims - j - 1) + (2,) + (1,) * j


def _check_minor_dim(what, x, dim):
    """`x` is a block and `dim` its last dimension (None stands for it): Triton sorts no other."""
    if not isinstance(x, tensor) or not x.shape:
        raise TypeError(f"tl.{what} needs a block, got {x!r}")
    rank = len(x.shape)
    if dim is not None:
        if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
            raise ValueError(f"tl.{what}: dim must be a compile-time integer in [{-rank}, {rank}), got {dim!r}")
        if dim % rank != rank - 1:
            raise ValueError(f"tl.{what}: only the last (minor) dimension can be sorted, got dim={dim} for a "
                             f"block of shape {list(x.shape)}")


@jit
def _indicator(n_dims: constexpr, j: constexpr):
    """0 in the first half, 1 in the second half of hypercube axis j (a broadcastable block)."""
    return core.reshape(core.arange(0, 2), _indicator_shape(n_dims, j))


@jit
def _compare_and_swap(x, flip, i: constexpr):
    """One bitonic step along hypercube axis i (from the last): each pair is ordered ascending,
    or descending where `flip` is 1."""
    n_dims: constexpr = _log2(x.numel)
    ix = x.to(_int_of_width(x.dtype), bitcast=True)
    iy = ix ^ xor_sum(ix, n_dims - 1 - i, True)
    y = iy.to(x.dtype, bitcast=True)
    is_right = _indicator(n_dims, i)
    return core.where((x > y) != (flip ^ is_right), y, x)


@jit
def _bitonic_merge_hypercube(x, stage: constexpr, order: constexpr):
    """`stage` compare-and-swap rounds; order 0 ascending, 1 descending, 2 alternating in blocks of
    2**stage (what the next stage merges)."""
    if order == 2:
        flip = _indicator(_log2(x.numel), stage)
    else:
        flip = order
    for i in core.static_range(stage):
        x = _compare_and_swap(x, flip, stage - 1 - i)
    return x


@jit
def _sort_impl(x, k: constexpr, descending: constexpr):
    """Bitonic sort of the last dimension; with k < n, the bitonic top-k
    (https://www.doc.ic.ac.uk/~hlgr/pdfs/MassivelyParallelTopK.pdf): sort blocks of k, then halve
    the candidates with an elementwise max (min) of block pairs and merge again."""
    log_n: constexpr = _log2(x.shape[len(x.shape) - 1])
    log_k: constexpr = _log2(k)
    n_dims: constexpr = _log2(x.numel)
    h = core.reshape(x, (2,) * n_dims if n_dims else (1,))
    for i in core.static_range(1, log_k + 1):
        h = _bitonic_merge_hypercube(h, i, 2 if i < log_n else descending)
    for i in core.static_range(log_k + 1, log_n + 1):
        if descending:
            h = max(h, _log2(h.numel) - 1 - log_k)
        else:
            h = min(h, _log2(h.numel) - 1 - log_k)
        h = _bitonic_merge_hypercube(h, log_k, 2 if i < log_n else descending)
    return core.reshape(h, _with_last(x.shape, k))


@jit
def _bitonic_merge_impl(x, descending: constexpr):
    n_dims: constexpr = _log2(x.shape[len(x.shape) - 1])
    h = core.reshape(x, (2,) * _log2(x.numel) if x.numel > 1 else (1,))
    h = _bitonic_merge_hypercube(h, n_dims, descending)
    return core.reshape(h, x.shape)


@jit
def _flip_impl(x, dim: constexpr):
    steps: constexpr = _log2(x.shape[dim])
    y = core.reshape(x.to(_int_of_width(x.dtype), bitcast=True), _hypercube(x.shape, dim))
    for i in core.static_range(steps):
        y = y ^ xor_sum(y, dim + i, True)
    return core.reshape(y, x.shape).to(x.dtype, bitcast=True)


@builtin
def sort(x, dim=None, descending=False):
    """Sort a block along its last dimension (the only one supported, as in Triton), ascending or,
    with descending=True, descending. The dimension's size is a power of two; NaNs leave the
    order of floats unspecified.

        rows = tl.sort(x)                       # x: [M, N], each row sorted
        top_first = tl.sort(x, descending=True)
    """
    x, dim, descending = unwrap(x), unwrap(dim), unwrap(descending)
    _check_minor_dim("sort", x, dim)
    return current().call(_sort_impl, [x], {"k": x.shape[-1], "descending": bool(descending)})


@builtin
def topk(x, k, dim=None):
    """The k largest elements of each row (the last dimension), in descending order: a block of
    shape x.shape[:-1] + [k]. k is a power of two at most the dimension's size. As in Triton, when
    k < n the candidates pass through tl.max, so narrow dtypes come back widened (fp16 and bf16
    to fp32, 8- and 16-bit integers to int32).

        best = tl.topk(scores, 4)               # scores: [M, 64] -> best: [M, 4]
    """
    x, k, dim = unwrap(x), unwrap(k), unwrap(dim)
    _check_minor_dim("topk", x, dim)
    n = x.shape[-1]
    if isinstance(k, tensor) or not isinstance(k, int) or isinstance(k, bool) or k < 1 or k & (k - 1):
        raise ValueError(f"tl.topk: k must be a compile-time power of 2, got {k!r}")
    if k > n:
        raise ValueError(f"tl.topk: k={k} is larger than the dimension it selects from ({n})")
    return current().call(_sort_impl, [x], {"k": k, "descending": True})


@builtin
def bitonic_merge(x, dim=None, descending=False):
    """Merge the bitonic sequences of the last dimension (the only one supported) into sorted
    order: each row must first ascend then descend (or the reverse), e.g. two sorted halves with
    the second reversed. log2(n) compare-and-swap rounds, no full sort.

        merged = tl.bitonic_merge(tl.join(a, tl.flip(b)).reshape(...))
    """
    x, dim, descending = unwrap(x), unwrap(dim), unwrap(descending)
    _check_minor_dim("bitonic_merge", x, dim)
    return current().call(_bitonic_merge_impl, [x], {"descending": bool(descending)})


@builtin
def flip(x, dim=None):
    """Reverse a block along `dim` (default: the last dimension).

        r = tl.flip(x)                          # r[..., i] = x[..., n - 1 - i]
        c = x.flip(0)
    """
    x, dim = unwrap(x), unwrap(dim)
    if not isinstance(x, tensor) or not x.shape:
        raise TypeError(f"tl.flip needs a block, got {x!r}")
    rank = len(x.shape)
    if dim is None:
        dim = rank - 1
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise ValueError(f"tl.flip: dim must be a compile-time integer in [{-rank}, {rank}), got {dim!r}")
    if x.shape[dim] == 1:  # nothing to reverse; the hypercube of a (1,) block would have no axes
        return x
    return current().call(_flip_impl, [x], {"dim": dim % rank})
