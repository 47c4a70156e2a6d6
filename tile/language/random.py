"""Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11), written in tile language.

Everything is 32-bit unsigned integer arithmetic (wrapping multiply, `umulhi`, xor, add), so
the numbers are bit-identical on the interpreter and on every GPU backend, and identical to
Triton's `tl.rand*` for the same seed and offsets. The counter is (offset, 0, 0, 0) and the
key is the seed's low and high 32 bits.

    seed = 42; offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.rand(seed, offs)       # U[0, 1) float32
    z = tl.randn(seed, offs)      # N(0, 1) float32
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import constexpr, int32, uint32, uint64
from tile.frontend.jit import jit
from tile.language import math

PHILOX_KEY_A = 0x9E3779B9  # the golden ratio: the Weyl sequence that bumps the key
PHILOX_KEY_B = 0xBB67AE85  # sqrt(3) - 1
PHILOX_ROUND_A = 0xD2511F53  # the round multipliers of Philox4x32
PHILOX_ROUND_B = 0xCD9E8D57
N_ROUNDS_DEFAULT = 10


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on counter (c0, c1, c2, c3) with key (k0, k1), all uint32."""
    for _ in core.static_range(n_rounds):
        _c0, _c2 = c0, c2
        c0 = math.umulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0
        c2 = math.umulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1
        c1 = PHILOX_ROUND_B * _c2
        c3 = PHILOX_ROUND_A * _c0
        k0 = k0 + PHILOX_KEY_A
        k1 = k1 + PHILOX_KEY_B
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Philox of the 32-bit counter words (c0..c3) keyed by the 64-bit `seed`."""
    seed = core.to_tensor(seed)
    core.static_assert(seed.dtype.is_int(), "the seed of a random function must be an integer")
    seed = seed.to(uint64)
    seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(uint32)
    seed_lo = (seed & 0xFFFFFFFF).to(uint32)
    c0 = core.to_tensor(c0)
    core.static_assert(c0.dtype.primitive_bitwidth == 32, "random offsets must be 32-bit integers")
    c0 = c0.to(uint32, bitcast=True)
    c1 = core.to_tensor(c1).to(uint32, bitcast=True)
    c2 = core.to_tensor(c2).to(uint32, bitcast=True)
    c3 = core.to_tensor(c3).to(uint32, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for a scalar `seed` and a block of `offset`s."""
    _0 = offset * 0
    return philox(seed, offset, _0, _0, _0, n_rounds)


@jit
def randint(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """One block of random uint32 (the first word of randint4x)."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@jit
def uint_to_uniform_float(x):
    """A random uint32 to a float32 uniformly in [0, 1)."""
    x = x.to(int32, bitcast=True)
    scale = 4.6566127342e-10  # the largest s with (2**31 - 1) * s < 1 in float32
    x = core.where(x < 0, -x - 1, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 uniformly in [0, 1)."""
    offset = offset.to(uint32, bitcast=True)
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@jit
def rand4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 uniformly in [0, 1)."""
    offset = offset.to(uint32, bitcast=True)
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    return uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3), uint_to_uniform_float(i4)


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two U(0, 1) blocks to two N(0, 1) blocks."""
    u1 = math.max(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = math.sqrt(-2.0 * math.log(u1))
    return r * math.cos(th), r * math.sin(th)


@jit
def randn(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 normally distributed, N(0, 1)."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@jit
def randn4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32, N(0, 1)."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
