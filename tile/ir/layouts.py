"""Layouts: which thread holds which element of a tensor, and where a tensor sits in shared memory.

This module and `tile.ir.dot_layouts` (the tensor-core layouts) own all of the gpu level's index
math. Every distributed layout (blocked, slice, linear here; mma and dot-operand there) reduces, for
one tensor shape, to a `LinearLayout`: a map from a thread's hardware coordinates (register index,
lane, warp) to an element coordinate, linear over GF(2). Shapes are powers of two, so an element
coordinate is a bit vector and the element held by (reg, lane, warp) is the XOR of one basis per
set bit of reg, lane and warp:

    #blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]> on tensor<64x16xf32>
      register bases  (0, 1) (0, 2) (32, 0)      4 consecutive columns, then a second row block
      lane bases      (0, 4) (0, 8) (1, 0) (2, 0) (4, 0)
      warp bases      (8, 0) (16, 0)
      (reg=5, lane=9, warp=2) -> (0,1) ^ (32,0) ^ (0,4) ^ (2,0) ^ (16,0) = (50, 5)

A zero basis means replication: several registers, lanes or warps hold the same element.

Text forms (parsed back by `tile.ir.types.parse_type` once this module is imported):

    #blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>   size per thread, threads
                                        per warp, warps per CTA, order[0] the fastest dimension
    #slice<dim = 1, parent = #blocked<...>>         the parent with dimension `dim` removed
    #linear<shape = [4, 8], reg = [[0, 1]], lane = [[0, 2], ...], warp = [[1, 0], ...]>
                                        an explicit LinearLayout (results of trans/reshape)
    #shared<vec = 4, per_phase = 1, max_phase = 8, order = [1, 0]>   a tensor in shared memory,
                                        row-major by `order`, XOR-swizzled in groups of `vec`
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from .types import parse_layout_at, register_layout

Coord = tuple[int, ...]
Bases = tuple[Coord, ...]


def log2(n: int) -> int:
    """log2 of a power of two (raises otherwise)."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


def unit(rank: int, dim: int, value: int) -> Coord:
    """The coordinate `value` along `dim`, 0 elsewhere."""
    return tuple(value if d == dim else 0 for d in range(rank))


# ----------------------------------------------------------------------- GF(2) algebra


def _echelon(vectors: Sequence[int]) -> dict[int, int]:
    """A basis of the span of `vectors` (bit vectors), keyed by each basis vector's top bit."""
    basis: dict[int, int] = {}
    for v in vectors:
        while v:
            top = v.bit_length() - 1
            if top not in basis:
                basis[top] = v
                break
            v ^= basis[top]
    return basis


def _in_span(basis: dict[int, int], v: int) -> bool:
    while v:
        top = v.bit_length() - 1
        if top not in basis:
            return False
        v ^= basis[top]
    return True


# ----------------------------------------------------------------------- LinearLayout


@dataclass(frozen=True)
class LinearLayout:
    """(register, lane, warp) -> element coordinate of a tensor of `shape`, XOR-linear in the bits."""

    shape: tuple[int, ...]
    register_bases: Bases
    lane_bases: Bases
    warp_bases: Bases

    def __post_init__(self) -> None:
        for d in self.shape:
            log2(d)
        for basis in self.register_bases + self.lane_bases + self.warp_bases:
            if len(basis) != len(self.shape) or any(not 0 <= c < s for c, s in zip(basis, self.shape)):
                raise ValueError(f"basis {basis} does not fit shape {self.shape}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def num_registers(self) -> int:
        return 1 << len(self.register_bases)

    @property
    def num_lanes(self) -> int:
        return 1 << len(self.lane_bases)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp_bases)

    # flattening: a coordinate as one bit vector (row-major index); XOR-linear since every
    # coordinate is below its power-of-two dimension
    def flatten(self, coord: Sequence[int]) -> int:
        index = 0
        for c, s in zip(coord, self.shape):
            index = index * s + c
        return index

    def unflatten(self, index: int) -> Coord:
        out = []
        for s in reversed(self.shape):
            out.append(index % s)
            index //= s
        return tuple(reversed(out))

    def apply(self, reg: int, lane: int, warp: int) -> Coord:
        """The element held in register `reg` of lane `lane` of warp `warp`."""
        index = 0
        for bases, bits in ((self.register_bases, reg), (self.lane_bases, lane), (self.warp_bases, warp)):
            for i, basis in enumerate(bases):
                if bits >> i & 1:
                    index ^= self.flatten(basis)
        return self.unflatten(index)

    def _table(self, bases: Bases) -> np.ndarray:
        table = np.zeros(1 << len(bases), dtype=np.int64)
        for i, basis in enumerate(bases):
            half = 1 << i
            table[half:2 * half] = table[:half] ^ self.flatten(basis)
        return table

    def flat_coords(self) -> np.ndarray:
        """Row-major element index held by each (warp, lane, register): int64 [warps, lanes, registers]."""
        regs, lanes = self._table(self.register_bases), self._table(self.lane_bases)
        warps = self._table(self.warp_bases)
        return warps[:, None, None] ^ lanes[None, :, None] ^ regs[None, None, :]

    def element_coords(self) -> np.ndarray:
        """Element coordinate held by each (warp, lane, register): int64 [warps, lanes, registers, rank]."""
        flat = self.flat_coords()
        out = np.empty(flat.shape + (self.rank,), dtype=np.int64)
        for d in reversed(range(self.rank)):
            out[..., d] = flat % self.shape[d]
            flat = flat // self.shape[d]
        return out

    @staticmethod
    def _zero_mask(bases: Bases) -> int:
        return sum(1 << i for i, b in enumerate(bases) if not any(b))

    @property
    def replicated_register_mask(self) -> int:
        return self._zero_mask(self.register_bases)

    @property
    def replicated_lane_mask(self) -> int:
        """Lane bits whose basis is zero: lanes differing only there hold the same elements."""
        return self._zero_mask(self.lane_bases)

    @property
    def replicated_warp_mask(self) -> int:
        return self._zero_mask(self.warp_bases)

    def is_injective_on_registers(self) -> bool:
        """Whether a thread's registers all hold distinct elements."""
        return len(_echelon([self.flatten(b) for b in self.register_bases])) == len(self.register_bases)

    def is_surjective(self) -> bool:
        """Whether every element is held by some thread."""
        flat = [self.flatten(b) for b in self.register_bases + self.lane_bases + self.warp_bases]
        return len(_echelon(flat)) == log2(self.numel)

    def registers_cover(self, other: "LinearLayout") -> bool:
        """Whether `other` is this layout with its registers renamed (some perhaps dropped): the same
        lane and warp bases, and every register of `other` holds an element of some register of
        this layout. Then one compile-time table maps other's registers to this layout's, in every
        thread."""
        if self.shape != other.shape or self.lane_bases != other.lane_bases or self.warp_bases != other.warp_bases:
            return False
        mine = _echelon([self.flatten(b) for b in self.register_bases])
        return all(_in_span(mine, other.flatten(b)) for b in other.register_bases)

    def transpose(self, order: Sequence[int]) -> "LinearLayout":
        """The layout of tt.trans: result dimension i is this layout's dimension order[i]."""
        perm = lambda c: tuple(c[o] for o in order)  # noqa: E731
        return LinearLayout(perm(self.shape), tuple(map(perm, self.register_bases)),
                            tuple(map(perm, self.lane_bases)), tuple(map(perm, self.warp_bases)))

    def reshape(self, shape: Sequence[int]) -> "LinearLayout":
        """The same threads holding the same elements, renamed by row-major order into `shape`."""
        target = LinearLayout(tuple(shape), (), (), ())
        if target.numel != self.numel:
            raise ValueError(f"cannot reshape {self.shape} to {tuple(shape)}")
        move = lambda bases: tuple(target.unflatten(self.flatten(b)) for b in bases)  # noqa: E731
        return LinearLayout(tuple(shape), move(self.register_bases), move(self.lane_bases), move(self.warp_bases))

    def resize(self, shape: Sequence[int]) -> "LinearLayout":
        """This layout on another `shape` of the same rank, holding in each thread what a blocked
        layout would: where a dimension shrinks, coordinates wrap (lane and warp bases that step past
        it become zero: replicas; such register bases are dropped); where it grows, new register
        bases repeat the layout along it."""
        shape = tuple(shape)
        if len(shape) != self.rank:
            raise ValueError(f"cannot resize a rank-{self.rank} layout to {shape}")
        clip = lambda bases: tuple(tuple(c & (n - 1) for c, n in zip(b, shape)) for b in bases)  # noqa: E731
        repeats = tuple(unit(self.rank, d, 1 << bit) for d, (old, new) in enumerate(zip(self.shape, shape))
                        for bit in range(log2(old), log2(max(old, new))))
        regs = tuple(b for b in clip(self.register_bases) if any(b))
        return LinearLayout(shape, regs + repeats, clip(self.lane_bases), clip(self.warp_bases))

    def contiguous_registers(self, dim: int) -> int:
        """How many consecutive registers (aligned groups) hold consecutive elements along `dim`.

        k such that register bases 0..log2(k)-1 step 1, 2, 4, ... along `dim` only, and every
        other basis moves `dim` by a multiple of k: then registers [r, r+k) with r a multiple of
        k hold elements x, x+1, ..., x+k-1 along `dim`, x a multiple of k.
        """
        k = 0
        while k < len(self.register_bases) and self.register_bases[k] == unit(self.rank, dim, 1 << k):
            k += 1
        others = self.register_bases[k:] + self.lane_bases + self.warp_bases
        while k and any(b[dim] % (1 << k) for b in others):
            k -= 1
        return 1 << k

    def __str__(self) -> str:
        fmt = lambda bases: "[" + ", ".join("[" + ", ".join(map(str, b)) + "]" for b in bases) + "]"  # noqa: E731
        return (f"shape = [{', '.join(map(str, self.shape))}], reg = {fmt(self.register_bases)}, "
                f"lane = {fmt(self.lane_bases)}, warp = {fmt(self.warp_bases)}")


def clipped_linear(shape: Sequence[int], regs: Sequence[Coord], lanes: Sequence[Coord],
                   warps: Sequence[Coord]) -> LinearLayout:
    """The LinearLayout of a tile's bases on a tensor of `shape`: bases that step outside `shape`
    become zero (the tensor is smaller than the tile there, so those registers, lanes or warps
    replicate it)."""
    clip = lambda bases: tuple(tuple(c if c < n else 0 for c, n in zip(b, shape)) for b in bases)  # noqa: E731
    return LinearLayout(tuple(shape), clip(regs), clip(lanes), clip(warps))


# ----------------------------------------------------------------------- layouts


class Layout:
    """Base of every layout attribute (what `TensorType.layout` holds at the gpu level)."""

    name: str = ""


class DistributedLayout(Layout):
    """A layout spreading a tensor over the registers of the threads of a CTA."""

    @property
    def num_warps(self) -> int:
        raise NotImplementedError

    @property
    def warp_size(self) -> int:
        raise NotImplementedError

    shape_generic: bool = True  # whether to_linear accepts any shape of the layout's rank

    def to_linear(self, shape: Sequence[int], threads_per_warp: Optional[int] = None,
                  num_warps: Optional[int] = None) -> LinearLayout:
        """The LinearLayout of a tensor of `shape` (threads_per_warp and num_warps are implied)."""
        if threads_per_warp not in (None, self.warp_size) or num_warps not in (None, self.num_warps):
            raise ValueError(f"{self} has {self.warp_size} threads per warp and {self.num_warps} warps")
        return _to_linear_cached(self, tuple(shape))

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        raise NotImplementedError


@lru_cache(maxsize=4096)
def _to_linear_cached(layout: DistributedLayout, shape: tuple[int, ...]) -> LinearLayout:
    return layout._linear(shape)


def fmt_list(values: Sequence[int]) -> str:
    """`values` as layout text writes a list: [1, 0]."""
    return "[" + ", ".join(map(str, values)) + "]"


@dataclass(frozen=True)
class BlockedLayout(DistributedLayout):
    """Triton's #blocked: each thread holds a `size_per_thread` block, threads then warps tile the
    tensor dimension by dimension in `order` (order[0] fastest); the tile repeats in registers
    where the tensor is larger and is replicated where it is smaller."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    name = "blocked"

    def __post_init__(self) -> None:
        rank = len(self.order)
        if sorted(self.order) != list(range(rank)) or not \
                len(self.size_per_thread) == len(self.threads_per_warp) == len(self.warps_per_cta) == rank:
            raise ValueError(f"inconsistent blocked layout {self}")
        for v in self.size_per_thread + self.threads_per_warp + self.warps_per_cta:
            log2(v)

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    @property
    def warp_size(self) -> int:
        return math.prod(self.threads_per_warp)

    def tile(self) -> tuple[int, ...]:
        """Elements covered by one pass of all threads, per dimension."""
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        if len(shape) != self.rank:
            raise ValueError(f"{self} cannot hold a tensor of rank {len(shape)}")
        rank = self.rank

        def bases(start: Sequence[int], count: Sequence[int]) -> list[Coord]:
            return [unit(rank, d, start[d] << bit) for d in self.order for bit in range(log2(count[d]))]

        spt, tpw = self.size_per_thread, self.threads_per_warp
        regs = bases([1] * rank, spt)
        lanes = bases(spt, tpw)
        warps = bases([s * t for s, t in zip(spt, tpw)], self.warps_per_cta)
        tile = self.tile()
        regs += bases(tile, [max(1, n // t) for n, t in zip(shape, tile)])
        return clipped_linear(shape, regs, lanes, warps)

    def permute(self, order: Sequence[int]) -> "BlockedLayout":
        """The layout of tt.trans with `order` (result dimension i is dimension order[i])."""
        inverse = [order.index(d) for d in range(self.rank)]
        perm = lambda t: tuple(t[o] for o in order)  # noqa: E731
        return BlockedLayout(perm(self.size_per_thread), perm(self.threads_per_warp), perm(self.warps_per_cta),
                             tuple(inverse[d] for d in self.order))

    def __str__(self) -> str:
        return (f"#blocked<spt = {fmt_list(self.size_per_thread)}, tpw = {fmt_list(self.threads_per_warp)}, "
                f"wpc = {fmt_list(self.warps_per_cta)}, order = {fmt_list(self.order)}>")

    __repr__ = __str__


@dataclass(frozen=True)
class SliceLayout(DistributedLayout):
    """Triton's #slice: `parent` with dimension `dim` removed (a reduction's result along `dim`).

    Element (i0, ..., in) is held by the threads that hold parent element (..., 0 at dim, ...)
    when the parent covers a size-1 dimension there, so every thread along `dim` holds it.
    """

    dim: int
    parent: DistributedLayout

    name = "slice"

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def warp_size(self) -> int:
        return self.parent.warp_size

    @property
    def shape_generic(self) -> bool:  # type: ignore[override]
        return self.parent.shape_generic

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        parent_shape = shape[:self.dim] + (1,) + shape[self.dim:]
        p = self.parent.to_linear(parent_shape)
        drop = lambda bs: tuple(b[:self.dim] + b[self.dim + 1:] for b in bs)  # noqa: E731
        regs = tuple(b for b in drop(p.register_bases) if any(b))
        return LinearLayout(tuple(shape), regs, drop(p.lane_bases), drop(p.warp_bases))

    def __str__(self) -> str:
        return f"#slice<dim = {self.dim}, parent = {self.parent}>"

    __repr__ = __str__


@dataclass(frozen=True)
class LinearEncoding(DistributedLayout):
    """An explicit LinearLayout (what tt.trans, tt.reshape and tt.join produce when no named layout
    describes their result). On another shape of its rank it is `LinearLayout.resize`d, so, like a
    blocked layout, it survives a reduction with keep_dims (#slice of it, expand_dims back) and the
    broadcast that follows."""

    linear: LinearLayout

    name = "linear"

    @property
    def num_warps(self) -> int:
        return self.linear.num_warps

    @property
    def warp_size(self) -> int:
        return self.linear.num_lanes

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        if shape == self.linear.shape:
            return self.linear
        if len(shape) != self.linear.rank:
            raise ValueError(f"{self} cannot hold a tensor of rank {len(shape)}")
        return self.linear.resize(shape)

    def __str__(self) -> str:
        return f"#linear<{self.linear}>"

    __repr__ = __str__


@dataclass(frozen=True)
class SharedLayout(Layout):
    """A tensor in shared memory: row-major by `order` (order[0] contiguous), with the groups of
    `vec` elements of each row XOR-swizzled by the row's phase = (row // per_phase) % max_phase,
    row being the coordinate along order[1]. vec = per_phase = max_phase = 1: no swizzle.

    block > 0 cuts the contiguous dimension into blocks of `block` elements stored one after
    another, each holding all rows (the block index is a dimension right after order[1]); the
    swizzle works within a block. That is how wgmma's swizzle atoms tile a wide operand:

        tensor<64x128xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0], block = 64>>
        element (r, c) at (c // 64) * 64 * 64 + r * 64 + ((c % 64) ^ 8 * (r % 8))

    Both the row-major index and the swizzle are XOR-linear in the coordinate bits, so the
    offset of (reg, lane, warp) is the XOR of the offsets of the bases (see `offset_bases`).
    """

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]
    block: int = 0

    name = "shared"

    def __post_init__(self) -> None:
        for v in (self.vec, self.per_phase, self.max_phase):
            log2(v)
        if sorted(self.order) != list(range(len(self.order))):
            raise ValueError(f"bad order in {self}")
        if self.block and (self.block & (self.block - 1) or self.block < self.vec or len(self.order) < 2):
            raise ValueError(f"bad block in {self}: a power of two, at least vec, in a buffer of rank >= 2")

    def offset_of(self, coords: Sequence[int], shape: Sequence[int]) -> int:
        """Element offset of `coords` in the buffer, swizzle included."""
        coords, shape = list(coords), list(shape)
        blocks = 1
        if self.block and shape[self.order[0]] > self.block:
            blocks = shape[self.order[0]] // self.block
            shape[self.order[0]] = self.block
            index, coords[self.order[0]] = divmod(coords[self.order[0]], self.block)
        offset, stride = 0, 1
        for i, d in enumerate(self.order):
            offset += coords[d] * stride
            stride *= shape[d]
            if i == 1 and blocks > 1:
                offset += index * stride
                stride *= blocks
        if len(self.order) < 2:
            return offset
        inner, row = self.order[0], self.order[1]
        groups = shape[inner] // self.vec
        if groups < 2:
            return offset
        phase = (coords[row] // self.per_phase) % self.max_phase % groups
        return offset ^ (phase * self.vec)

    def offsets(self, shape: Sequence[int]) -> np.ndarray:
        """Offsets of every element: an int64 array of `shape` (a permutation of range(numel))."""
        out = np.empty(tuple(shape), dtype=np.int64)
        for idx in np.ndindex(*shape):
            out[idx] = self.offset_of(idx, shape)
        return out

    def offset_bases(self, linear: LinearLayout) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Offsets of the register, lane and warp bases of `linear`; XOR them for any thread."""
        of = lambda bases: tuple(self.offset_of(b, linear.shape) for b in bases)  # noqa: E731
        return of(linear.register_bases), of(linear.lane_bases), of(linear.warp_bases)

    def __str__(self) -> str:
        block = f", block = {self.block}" if self.block else ""
        return (f"#shared<vec = {self.vec}, per_phase = {self.per_phase}, max_phase = {self.max_phase}, "
                f"order = {fmt_list(self.order)}{block}>")

    __repr__ = __str__


# ----------------------------------------------------------------------- constructors


def blocked_layout(shape: Sequence[int], size_per_thread: Sequence[int], order: Sequence[int], num_warps: int,
                   threads_per_warp: int = 32) -> BlockedLayout:
    """Triton's BlockedEncodingAttr::get: lanes, then warps, fill `order` fastest dimension first,
    each dimension taking at most what it needs (shape / size_per_thread); the slowest dimension
    takes whatever is left."""
    rank = len(shape)
    tpw, wpc = [1] * rank, [1] * rank
    lanes, warps, threads = threads_per_warp, num_warps, num_warps * threads_per_warp
    for d in order[:-1]:
        want = min(max(threads, 1), max(1, shape[d] // size_per_thread[d]))
        tpw[d] = min(want, lanes)
        wpc[d] = max(1, min(want // tpw[d], warps))
        lanes //= tpw[d]
        warps //= wpc[d]
        threads //= want
    last = order[-1]
    tpw[last] = lanes
    wpc[last] = warps
    return BlockedLayout(tuple(size_per_thread), tuple(tpw), tuple(wpc), tuple(order))


def default_blocked(shape: Sequence[int], num_warps: int, threads_per_warp: int = 32) -> BlockedLayout:
    """Triton's default: one element per thread, row-major, lanes and warps along the last dim first."""
    rank = len(shape)
    return blocked_layout(shape, [1] * rank, list(reversed(range(rank))), num_warps, threads_per_warp)


def conversion_kind(src: DistributedLayout, dst: DistributedLayout, shape: Sequence[int]) -> str:
    """"noop" (same LinearLayout), "registers" (same lane and warp bases: each thread finds the
    elements it needs in its own registers, at indices that do not depend on the thread) or
    "shared" (elements move between threads: through shared memory)."""
    a, b = src.to_linear(shape), dst.to_linear(shape)
    if a == b:
        return "noop"
    return "registers" if a.registers_cover(b) else "shared"


MAX_BLOCKED_SEARCH_RANK = 4  # blocked_from_linear tries rank! orders: high ranks (sort's hypercubes) stay linear


def blocked_from_linear(linear: LinearLayout) -> Optional[BlockedLayout]:
    """A blocked layout whose LinearLayout is `linear`, if there is one (tried for every order, up
    to rank MAX_BLOCKED_SEARCH_RANK)."""
    rank = linear.rank
    if rank > MAX_BLOCKED_SEARCH_RANK:
        return None
    for order in itertools.permutations(range(rank)):

        def take(bases: Bases, start: list[int]) -> Optional[list[int]]:
            counts, i = [1] * rank, 0
            for d in order:
                while i < len(bases) and bases[i] == unit(rank, d, start[d] * counts[d]):
                    counts[d] *= 2
                    i += 1
            return counts if i == len(bases) else None

        spt = [1] * rank
        regs = list(linear.register_bases)
        for d in order:
            while regs and regs[0] == unit(rank, d, spt[d]):
                spt[d] *= 2
                regs.pop(0)
        tpw = take(linear.lane_bases, spt)
        wpc = take(linear.warp_bases, [s * t for s, t in zip(spt, tpw)]) if tpw is not None else None
        if wpc is None:
            continue
        candidate = BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), order)
        if candidate.to_linear(linear.shape) == linear:
            return candidate
    return None


def simplify(layout: DistributedLayout, shape: Sequence[int],
             hints: Sequence[DistributedLayout] = ()) -> DistributedLayout:
    """A named layout (among `hints`, else a blocked one) equal to `layout` on `shape`, else `layout`."""
    if not isinstance(layout, LinearEncoding):
        return layout
    for c in hints:
        if c.to_linear(shape) == layout.linear:
            return c
    return blocked_from_linear(layout.linear) or layout


def trans_layout(layout: DistributedLayout, shape: Sequence[int], order: Sequence[int]) -> DistributedLayout:
    """The layout of tt.trans's result (operand `shape`) that keeps every element in its register."""
    if isinstance(layout, BlockedLayout):
        return layout.permute(order)
    return LinearEncoding(layout.to_linear(shape).transpose(order))


def reshape_layout(layout: DistributedLayout, shape: Sequence[int], new_shape: Sequence[int]) -> DistributedLayout:
    """The layout of tt.reshape's result (row-major order kept) that keeps every element in its register."""
    linear = layout.to_linear(shape).reshape(new_shape)
    hints = []
    if isinstance(layout, BlockedLayout) and len(new_shape) == layout.rank:
        hints.append(layout)
    return simplify(LinearEncoding(linear), new_shape, hints)


def join_layout(layout: DistributedLayout, shape: Sequence[int]) -> DistributedLayout:
    """The layout of tt.join's result (operand `shape`, result shape + [2]): the operand's layout
    with the new minor dimension as its first register bit, so both operands stay in their registers."""
    rank = len(shape)
    if isinstance(layout, BlockedLayout):
        return BlockedLayout(layout.size_per_thread + (2,), layout.threads_per_warp + (1,),
                             layout.warps_per_cta + (1,), (rank,) + layout.order)
    linear = layout.to_linear(shape)
    grow = lambda bases: tuple(tuple(b) + (0,) for b in bases)  # noqa: E731
    return LinearEncoding(LinearLayout(tuple(shape) + (2,), (unit(rank + 1, rank, 1),) + grow(linear.register_bases),
                                       grow(linear.lane_bases), grow(linear.warp_bases)))


def split_layout(layout: DistributedLayout, shape: Sequence[int]) -> Optional[DistributedLayout]:
    """The layout of tt.split's results (operand `shape`, last dimension 2) when one register bit of
    the operand's layout, and nothing else, moves along the last dimension (then the split only
    renames registers); None otherwise."""
    linear = layout.to_linear(shape)
    rank = linear.rank
    last = unit(rank, rank - 1, 1)
    along = [i for i, b in enumerate(linear.register_bases) if b[-1]]
    if along != [i for i, b in enumerate(linear.register_bases) if b == last] or len(along) != 1 or \
            any(b[-1] for b in linear.lane_bases + linear.warp_bases):
        return None
    drop = lambda bases: tuple(tuple(b[:-1]) for b in bases)  # noqa: E731
    regs = linear.register_bases[:along[0]] + linear.register_bases[along[0] + 1:]
    result = LinearLayout(tuple(shape[:-1]), drop(regs), drop(linear.lane_bases), drop(linear.warp_bases))
    if isinstance(layout, BlockedLayout):
        order = tuple(d for d in layout.order if d != rank - 1)
        candidate = BlockedLayout(layout.size_per_thread[:-1], layout.threads_per_warp[:-1],
                                  layout.warps_per_cta[:-1], order)
        if candidate.to_linear(result.shape) == result:
            return candidate
    return simplify(LinearEncoding(result), result.shape)


def store_layout_like(value: DistributedLayout, shape: Sequence[int],
                      store: BlockedLayout) -> Optional[DistributedLayout]:
    """A layout for storing a tensor held in `value` without moving it between threads, as coalesced
    as `store` (the layout coalescing chose), with shorter vectors perhaps: `value` with the register
    bases that step 1, 2, 4, ... along store's fastest dimension moved first (each thread's run), if
    the run is no longer than store's (so one vector access still moves it: the pointers are that
    contiguous and aligned) and the lanes are those of the blocked layout with that run in store's
    order (each lane one run after the previous). None otherwise."""
    linear = value.to_linear(shape)
    rank, dim = linear.rank, store.order[0]
    regs, run = list(linear.register_bases), []
    while unit(rank, dim, 1 << len(run)) in regs and 1 << len(run) < shape[dim]:
        run.append(unit(rank, dim, 1 << len(run)))
        regs.remove(run[-1])
    if 1 << len(run) > store.size_per_thread[dim]:
        return None
    spt = [1 << len(run) if d == dim else 1 for d in range(rank)]
    reference = blocked_layout(shape, spt, store.order, store.num_warps, store.warp_size).to_linear(shape)
    if linear.lane_bases != reference.lane_bases:
        return None
    return simplify(LinearEncoding(LinearLayout(tuple(shape), tuple(run + regs), linear.lane_bases,
                                                linear.warp_bases)), shape, [value])


def gather_in_warp(src: DistributedLayout, src_shape: Sequence[int], result: DistributedLayout,
                   result_shape: Sequence[int], axis: int) -> bool:
    """Whether tt.gather can read its source with one warp shuffle per result register: the source's
    `axis` lies in lanes only (one lane bit per bit of the axis), and the result element held in
    register r of lane l of warp w has, off the axis, the coordinates of the source elements in
    some fixed register of warp w and of every lane that differs from l only in the axis's lane bits."""
    s, r = src.to_linear(src_shape), result.to_linear(result_shape)
    off = lambda b: tuple(c for d, c in enumerate(b) if d != axis)  # noqa: E731
    if any(b[axis] for b in s.register_bases + s.warp_bases):
        return False
    axis_lanes = sorted(b[axis] for b in s.lane_bases if b[axis])
    if axis_lanes != [1 << j for j in range(log2(src_shape[axis]))] or \
            any(b[axis] and any(off(b)) for b in s.lane_bases):
        return False
    if len(r.lane_bases) != len(s.lane_bases) or len(r.warp_bases) != len(s.warp_bases) or \
            any(off(a) != off(b) for a, b in zip(r.lane_bases + r.warp_bases, s.lane_bases + s.warp_bases)):
        return False
    held = {off(s.apply(reg, 0, 0)) for reg in range(s.num_registers)}
    return all(off(r.apply(reg, 0, 0)) in held for reg in range(r.num_registers))


def warps_split_dim(layout: DistributedLayout, shape: Sequence[int], dim: int) -> bool:
    """Whether different warps hold different coordinates along `dim` (a reduction must then
    exchange data across warps)."""
    return any(b[dim] for b in layout.to_linear(shape).warp_bases)


# ----------------------------------------------------------------------- parsing


class LayoutBody:
    """A reader of `key = value, ...` layout bodies (values: ints, nested int lists, layouts)."""

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def expect(self, s: str) -> None:
        self.skip()
        if not self.text.startswith(s, self.pos):
            raise ValueError(f"expected {s!r} at {self.text[self.pos:self.pos + 20]!r} in layout")
        self.pos += len(s)

    def value(self) -> object:
        self.skip()
        if self.text.startswith("#", self.pos):
            layout, self.pos = parse_layout_at(self.text, self.pos)
            return layout
        if self.text.startswith("[", self.pos):
            self.pos += 1
            items: list[object] = []
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            while True:
                items.append(self.value())
                self.skip()
                if self.text.startswith("]", self.pos):
                    self.pos += 1
                    return items
                self.expect(",")
        m = re.compile(r"-?\d+").match(self.text, self.pos)
        if m is None:
            raise ValueError(f"expected a value at {self.text[self.pos:self.pos + 20]!r} in layout")
        self.pos = m.end()
        return int(m.group(0))

    def fields(self, keys: Sequence[str]) -> dict[str, object]:
        out: dict[str, object] = {}
        for i, key in enumerate(keys):
            if i:
                self.expect(",")
            self.expect(key)
            self.expect("=")
            out[key] = self.value()
        self.skip()
        if self.pos != len(self.text):
            raise ValueError(f"trailing text {self.text[self.pos:]!r} in layout")
        return out


def _tuples(bases: object) -> Bases:
    return tuple(tuple(b) for b in bases)  # type: ignore[union-attr]


def _parse_blocked(body: str) -> BlockedLayout:
    f = LayoutBody(body).fields(["spt", "tpw", "wpc", "order"])
    return BlockedLayout(*(tuple(f[k]) for k in ("spt", "tpw", "wpc", "order")))  # type: ignore[arg-type]


def _parse_slice(body: str) -> SliceLayout:
    f = LayoutBody(body).fields(["dim", "parent"])
    return SliceLayout(f["dim"], f["parent"])  # type: ignore[arg-type]


def _parse_linear(body: str) -> LinearEncoding:
    f = LayoutBody(body).fields(["shape", "reg", "lane", "warp"])
    return LinearEncoding(LinearLayout(tuple(f["shape"]), _tuples(f["reg"]), _tuples(f["lane"]),  # type: ignore
                                       _tuples(f["warp"])))


def _parse_shared(body: str) -> SharedLayout:
    keys = ["vec", "per_phase", "max_phase", "order"] + (["block"] if re.search(r"\bblock\s*=", body) else [])
    f = LayoutBody(body).fields(keys)
    return SharedLayout(f["vec"], f["per_phase"], f["max_phase"], tuple(f["order"]),  # type: ignore[arg-type]
                        f.get("block", 0))  # type: ignore[arg-type]


register_layout("blocked", _parse_blocked)
register_layout("slice", _parse_slice)
register_layout("linear", _parse_linear)
register_layout("shared", _parse_shared)

__all__ = [
    "LinearLayout", "Layout", "DistributedLayout", "BlockedLayout", "SliceLayout", "LinearEncoding",
    "SharedLayout", "blocked_layout", "default_blocked", "conversion_kind", "simplify", "blocked_from_linear",
    "trans_layout", "reshape_layout", "join_layout", "split_layout", "store_layout_like", "gather_in_warp", "warps_split_dim", "log2",
]
