"""tile.language (`tl`): what kernels are written with, under Triton's names and meanings.

    import tile
    import tile.language as tl

    @tile.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
"""
from tile.frontend.builtins import (arange, associative_scan, atomic_add, atomic_and, atomic_cas, atomic_max,
                                    atomic_min, atomic_or, atomic_xchg, atomic_xor, broadcast, broadcast_to, cast,
                                    debug_barrier, device_assert, device_print, dot, expand_dims, full, load,
                                    max_constancy, max_contiguous, multiple_of, num_programs, permute, program_id,
                                    range, ravel, reduce, reshape, static_assert, static_print, static_range, store,
                                    to_tensor, trans, view, where, zeros)
from tile.frontend.core import (PropagateNan, bfloat16, block_type, constexpr, dtype, float8e4nv, float8e5, float16,
                                float32, float64, int1, int8, int16, int32, int64, pointer_type, tensor, uint8,
                                uint16, uint32, uint64)

from . import math
from .math import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2, rsqrt, sin, sqrt, sqrt_rn,
                   umulhi)
from .standard import (argmax, argmin, cdiv, clamp, cumprod, cumsum, max, maximum, min, minimum, sigmoid, softmax, sum,
                       swizzle2d, xor_sum, zeros_like)
from . import random, standard
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x, randn, randn4x,
                     uint_to_uniform_float)
from . import extra

# Triton's aliases
float8e4m3fn = float8e4nv
float8e5m2 = float8e5
pi32_t = pointer_type(int32)

__all__ = [
    "PropagateNan", "abs", "arange", "argmax", "argmin", "associative_scan", "atomic_add", "atomic_and",
    "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bfloat16", "block_type",
    "broadcast", "broadcast_to", "cast", "cdiv", "ceil", "clamp", "constexpr", "cos", "cumprod", "cumsum",
    "debug_barrier", "device_assert", "device_print", "dot", "dtype", "erf", "exp", "exp2", "expand_dims", "fdiv",
    "float16", "float32", "float64", "float8e4m3fn", "float8e4nv", "float8e5", "float8e5m2", "floor", "fma", "full",
    "int1", "int16", "int32", "int64", "int8", "load", "log", "log2", "math", "max", "max_constancy",
    "max_contiguous", "maximum", "min", "minimum", "multiple_of", "num_programs", "pair_uniform_to_normal",
    "permute", "philox", "philox_impl", "pi32_t", "pointer_type", "program_id", "rand", "rand4x", "randint",
    "randint4x", "randn", "randn4x", "random", "range", "ravel", "reduce", "reshape", "rsqrt", "sigmoid", "sin",
    "softmax", "sqrt", "sqrt_rn", "div_rn", "standard", "static_assert", "static_print", "static_range", "store", "sum", "swizzle2d",
    "tensor", "to_tensor", "trans", "uint16", "uint32", "uint64", "uint8", "uint_to_uniform_float", "umulhi",
    "view", "where", "xor_sum", "zeros", "zeros_like", "extra",
]
