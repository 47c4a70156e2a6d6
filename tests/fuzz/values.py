"""Values and buffers of generated programs, and the index expressions they use."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

@dataclass
class Val:
    """A tensor of the kernel: its variable, dtype, block shape and model (programs first)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    model: np.ndarray
    err: float = 0.0  # absolute error bound of a float value; 0 means bit exact

    @property
    def exact(self) -> bool:
        return self.err == 0.0


@dataclass
class Buffer:
    """A pointer argument: initial memory, and the memory the model expects after the launch."""

    name: str
    dtype: str
    init: np.ndarray  # storage dtype (bf16 as bits), flat
    expected: Optional[np.ndarray] = None  # model values (float64 for floats), flat; None: not checked
    err: float = 0.0


def offsets(shape: tuple[int, ...]) -> str:
    """Row-major element offsets of a block of `shape`, as a kernel expression."""
    if not shape:
        return "0"
    terms = []
    for axis, size in enumerate(shape):
        index = ", ".join(":" if i == axis else "None" for i in range(len(shape)))
        stride = int(np.prod(shape[axis + 1:], dtype=np.int64))
        ar = f"tl.arange(0, {size})" + (f"[{index}]" if len(shape) > 1 else "")
        terms.append(ar if stride == 1 else f"{ar} * {stride}")
    return " + ".join(terms)


def aligned(v: Val, rank: int) -> np.ndarray:
    """v's model with unit axes inserted after the program axis up to `rank` block axes."""
    return v.model.reshape((v.model.shape[0],) + (1,) * (rank - len(v.shape)) + v.shape)


def broadcastable(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == big
    except ValueError:
        return False


def factor(numel: int, rank: int, seed: int) -> tuple[int, ...]:
    """A shape of `rank` power-of-two dims with product `numel`."""
    bits = int(numel).bit_length() - 1
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.integers(0, bits + 1, rank - 1).tolist())
    edges = [0] + cuts + [bits]
    return tuple(1 << (edges[i + 1] - edges[i]) for i in range(rank))
