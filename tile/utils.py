"""Small host-side helpers that kernels and launch grids use."""
from __future__ import annotations

import operator


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of size `b` that cover `a`."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


# CUDA's largest grid: 2^31 - 1 programs along x, 65535 along y and z.
MAX_GRID = (2**31 - 1, 65535, 65535)


def grid3(grid, kernel: str | None = None) -> tuple[int, int, int]:
    """A launch grid as three ints: from an int or a tuple of 1 to 3 integers (Python or
    NumPy ints, or constexprs). A float, even a whole one, is a TypeError naming the
    dimension, as in Triton: a grid computed with `/` would silently lose programs."""
    if type(grid) is tuple and len(grid) == 3 and type(grid[0]) is int and type(grid[1]) is int \
            and type(grid[2]) is int:
        return grid
    where = f"kernel '{kernel}': " if kernel else ""
    if isinstance(grid, int) or hasattr(type(grid), "__index__"):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        raise TypeError(f"{where}a grid is a tuple of 1 to 3 ints or a callable(meta) returning one, got {grid!r}")
    if not 1 <= len(grid) <= 3:
        raise ValueError(f"{where}a grid has 1 to 3 dimensions, got {grid!r}")
    g = tuple(_grid_dim(getattr(x, "value", x), axis, where) for axis, x in enumerate(grid))
    return g + (1,) * (3 - len(g))  # type: ignore[return-value]


def _grid_dim(size, axis: int, where: str) -> int:
    if isinstance(size, bool) or not hasattr(type(size), "__index__"):
        raise TypeError(f"{where}grid dimension {'xyz'[axis]} is {size!r} (a {type(size).__name__}); grid "
                        f"dimensions must be integers (use tile.cdiv(n, BLOCK) or //, not /)")
    return operator.index(size)


def check_grid_limits(grid: tuple[int, int, int], kernel: str) -> None:
    """Raise for a grid no GPU can launch: a negative dimension (ValueError), or one above
    CUDA's limits MAX_GRID (tile.runtime.errors.LaunchError). The interpreter checks this too,
    so that a script that runs there launches on a GPU."""
    from .runtime.errors import LaunchError

    if min(grid) < 0:
        raise ValueError(f"kernel '{kernel}': negative launch configuration grid={grid}")
    for axis, size, limit in zip("xyz", grid, MAX_GRID):
        if size > limit:
            raise LaunchError(kernel, f"grid dimension {axis} (blocks)", size, limit)
