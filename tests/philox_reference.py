"""An independent NumPy Philox4x32-10, written from the definition in Salmon, Moraes, Dror and
Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC'11), to check tile.language.random.

One round maps counter (x0, x1, x2, x3) with round key (k0, k1) to

    (hi(M1 * x2) ^ x1 ^ k0,  lo(M1 * x2),  hi(M0 * x0) ^ x3 ^ k1,  lo(M0 * x0))

with M0 = 0xD2511F53, M1 = 0xCD9E8D57 and 32x32 -> 64-bit products. The key is bumped by
the Weyl constants (0x9E3779B9, 0xBB67AE85) before every round after the first. Counter
(offset, 0, 0, 0), key (seed low 32 bits, seed high 32 bits), as Triton uses them.
"""
from __future__ import annotations

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32(counter: tuple, key: tuple, rounds: int = 10) -> tuple[np.ndarray, ...]:
    """Philox4x32-`rounds` of a counter (four arrays of uint32) under key (two uint32 scalars or arrays)."""
    x = [np.asarray(c, dtype=np.uint64) & MASK32 for c in counter]
    k0, k1 = (np.asarray(k, dtype=np.uint64) & MASK32 for k in key)
    for r in range(rounds):
        if r:
            k0 = (k0 + W0) & MASK32
            k1 = (k1 + W1) & MASK32
        p0 = np.uint64(M0) * x[0]  # < 2**64: exact in uint64
        p1 = np.uint64(M1) * x[2]
        x = [((p1 >> np.uint64(32)) ^ x[1] ^ k0) & MASK32, p1 & MASK32,
             ((p0 >> np.uint64(32)) ^ x[3] ^ k1) & MASK32, p0 & MASK32]
    return tuple(v.astype(np.uint32) for v in x)


def seed_key(seed: int) -> tuple[int, int]:
    """The Philox key of a (signed or unsigned) 64-bit seed: its low and high 32-bit words."""
    s = seed & 0xFFFFFFFFFFFFFFFF
    return s & MASK32, s >> 32


def randint4x(seed: int, offsets: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, ...]:
    c0 = np.asarray(offsets).astype(np.int64) & MASK32
    z = np.zeros_like(c0)
    return philox4x32((c0, z, z, z), seed_key(seed), rounds)


def uniform(bits: np.ndarray) -> np.ndarray:
    """uint32 -> float32 in [0, 1): |int32(bits)| (with -x-1 for negatives) times 1/(2**31 - 1), in float32."""
    x = bits.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    return uniform(randint4x(seed, offsets)[0])


def randn(seed: int, offsets: np.ndarray) -> np.ndarray:
    """Box-Muller of the first two words (float64 math: compare with a float32 tolerance)."""
    a, b, _, _ = randint4x(seed, offsets)
    u1 = np.maximum(uniform(a).astype(np.float64), 1e-7)
    u2 = uniform(b).astype(np.float64)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)
