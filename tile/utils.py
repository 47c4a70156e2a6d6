"""Small host-side helpers that kernels and launch grids use."""
from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of size `b` that cover `a`."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def grid3(grid) -> tuple[int, int, int]:
    """A launch grid as three ints: from an int or a tuple of 1 to 3 ints (or constexprs)."""
    if type(grid) is tuple and len(grid) == 3:
        return grid
    if isinstance(grid, int):
        grid = (grid,)
    g = tuple(int(getattr(x, "value", x)) for x in grid)
    if not 1 <= len(g) <= 3:
        raise ValueError(f"a grid has 1 to 3 dimensions, got {grid!r}")
    return g + (1,) * (3 - len(g))  # type: ignore[return-value]
