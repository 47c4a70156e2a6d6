"""Small host-side helpers that kernels and launch grids use."""
from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of size `b` that cover `a`."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
