"""Where RDNA3's WMMA instructions keep their operands and results in the lanes of a wave of 32.

A WMMA (gfx1100, wave32) computes D = A x B + C for one wave: A is 16 x 16, B is 16 x 16, C and
D are 16 x 16 in f32 (v_wmma_f32_16x16x16_f16 / _bf16, RDNA3 ISA 7.9 "Wave Matrix Multiply
Accumulate"). Unlike MFMA, each lane holds a whole row of A or column of B, and the two halves
of the wave hold the same ones:

    A (M x K)   lane l, value v (0..15):  row l % 16,  k = v          (lanes l and l + 16 alike)
    B (K x N)   lane l, value v (0..15):  k = v,  column l % 16       (lanes l and l + 16 alike)
    D (M x N)   lane l, register r (0..7): row 2 * r + l // 16,  column l % 16

A and B take 8 VGPRs per lane (two 16-bit values each, the lower k in the low half); D takes 8,
one f32 each, lanes 0-15 holding the even rows and 16-31 the odd ones.

Each layout is a LinearLayout (register, lane, warp) -> element over one wave (no warp bits);
the replication of A and B over the halves is lane bit 4's zero basis. On gfx1100 a wave is
one of the lowering's warps (32 threads), so over a workgroup:

    #wmma<wpc = [wm, wn]>                          the result: waves tile (16 wm) x (16 wn)
    #wmma_op<op_idx = 0, parent = #wmma<...>>      A (op_idx 0) or B (1) of that result

Registers: those of one instruction first, then the instruction tile repeated along K (operands
only), then along M, then along N, as #mfma orders them (tile.ir.mfma_layouts): register
8 * (i + reps_m * j) + r of the result is register r of the instruction at tile (i, j);
register 16 * (s + steps * i) + v of A is value v of k-step s of tile row i. A is replicated
over the wave columns, B over the wave rows. Waves past the tiles (wm > M / 16 or wn > N / 16)
repeat the first ones (zero warp bases), each computing the same tiles. #wmma takes any shape
(bases past it are zero), so a row reduction of a dot's result is a #slice of it and the
row-wise work of attention's softmax stays in the accumulator's layout.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .layouts import DistributedLayout, LayoutBody, LinearLayout, clipped_linear, fmt_list, log2
from .types import register_layout

WMMA_WAVE_SIZE = 32
WMMA_M = WMMA_N = WMMA_K = 16       # the one 16-bit WMMA shape with an f32 result
OPERAND_VALUES = 16                 # 16-bit values of A (or B) in each lane: all of K
RESULT_REGISTERS = WMMA_M * WMMA_N // WMMA_WAVE_SIZE   # f32 values of D in each lane


def _powers(n: int) -> list[int]:
    return [1 << i for i in range(log2(n))]


def _check_wave(wave_size: int) -> None:
    if wave_size != WMMA_WAVE_SIZE:
        raise ValueError(f"WMMA on gfx1100 runs on waves of {WMMA_WAVE_SIZE} lanes, not {wave_size}")


def wmma_result_layout(wave_size: int = WMMA_WAVE_SIZE) -> LinearLayout:
    """The layout of C and D (16 x 16 f32) of one WMMA: register bits step the row by 2, 4, 8,
    lane bits 0-3 the column, lane bit 4 the row by 1."""
    _check_wave(wave_size)
    half = WMMA_WAVE_SIZE // 2
    return LinearLayout(
        (WMMA_M, WMMA_N),
        tuple((2 * p, 0) for p in _powers(RESULT_REGISTERS)),
        tuple((0, col) for col in _powers(half)) + ((1, 0),),
        (),
    )


def wmma_operand_layout(op_idx: int, wave_size: int = WMMA_WAVE_SIZE) -> LinearLayout:
    """The layout of A (op_idx 0: 16 x 16, M x K) or B (op_idx 1: K x N) of a 16-bit WMMA."""
    _check_wave(wave_size)
    if op_idx not in (0, 1):
        raise ValueError(f"a WMMA operand is A (0) or B (1), not {op_idx}")

    def place(along_mn: int, along_k: int) -> tuple[int, int]:
        return (along_mn, along_k) if op_idx == 0 else (along_k, along_mn)

    half = WMMA_WAVE_SIZE // 2
    return LinearLayout(
        (16, 16),
        tuple(place(0, p) for p in _powers(OPERAND_VALUES)),
        tuple(place(p, 0) for p in _powers(half)) + ((0, 0),),   # the upper half repeats the lower
        (),
    )


def _steps(base: tuple[int, int], count: int) -> list[tuple[int, int]]:
    return [(base[0] * p, base[1] * p) for p in _powers(count)]


def _tile_reps(extents, waves) -> tuple[int, ...] | None:
    """16-element instruction tiles of each wave along each dimension (at least one: waves beyond
    the tiles repeat them), or None where the extent is not whole tiles shared out evenly."""
    tiles = [extent // 16 for extent in extents]
    if any(extent % 16 or t % w and w % t for extent, t, w in zip(extents, tiles, waves)):
        return None
    return tuple(max(1, t // w) for t, w in zip(tiles, waves))


def _wave_steps(base: tuple[int, int], count: int, extent: int) -> list[tuple[int, int]]:
    """The bases of `count` waves placed `base` apart along one dimension of `extent` elements:
    waves past the extent repeat the ones before (zero bases), as when 4 waves hold 32 x 16."""
    return [step if max(step) < extent else (0, 0) for step in _steps(base, count)]


@dataclass(frozen=True)
class WmmaLayout(DistributedLayout):
    """The result of tt.dot on WMMA: 16 x 16 instruction tiles, waves (= warps) in a wm x wn grid."""

    waves_per_cta: tuple[int, int]

    name = "wmma"

    def __post_init__(self) -> None:
        if len(self.waves_per_cta) != 2:
            raise ValueError(f"unsupported wmma layout {self}")
        for w in self.waves_per_cta:
            log2(w)

    @property
    def num_warps(self) -> int:
        return math.prod(self.waves_per_cta)

    @property
    def warp_size(self) -> int:
        return WMMA_WAVE_SIZE

    def tile_reps(self, shape) -> tuple[int, int]:
        """Instruction tiles of each wave along M and N (at least one: waves beyond the tiles
        repeat them; a shape that is not whole tiles is an error)."""
        reps = _tile_reps(shape, self.waves_per_cta) if len(shape) == 2 else None
        if reps is None:
            raise ValueError(f"{self} does not tile a {list(shape)} tensor")
        return reps

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        """Any 2-D shape of powers of two: where it is smaller than the waves' tiles (a row
        reduction's 32 x 1, which a #slice of this layout needs), the bases that step outside it
        become zero, so those registers, lanes or waves repeat it."""
        if len(shape) != 2 or any(n < 1 or n & (n - 1) for n in shape):
            raise ValueError(f"{self} does not tile a {list(shape)} tensor")
        wm, wn = self.waves_per_cta
        reps_m, reps_n = (max(1, n // (16 * w)) for n, w in zip(shape, self.waves_per_cta))
        wave = wmma_result_layout()
        regs = wave.register_bases + tuple(_steps((WMMA_M * wm, 0), reps_m) + _steps((0, WMMA_N * wn), reps_n))
        warps = _steps((WMMA_M, 0), wm) + _steps((0, WMMA_N), wn)
        return clipped_linear(shape, regs, wave.lane_bases, warps)

    def __str__(self) -> str:
        return f"#wmma<wpc = {fmt_list(self.waves_per_cta)}>"

    __repr__ = __str__


@dataclass(frozen=True)
class WmmaOperandLayout(DistributedLayout):
    """A (op_idx 0, M x K) or B (op_idx 1, K x N) of a tt.dot whose result is `parent`."""

    op_idx: int
    parent: WmmaLayout

    name = "wmma_op"
    shape_generic = False

    def __post_init__(self) -> None:
        if self.op_idx not in (0, 1) or not isinstance(self.parent, WmmaLayout):
            raise ValueError(f"unsupported wmma operand layout {self}")

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def warp_size(self) -> int:
        return WMMA_WAVE_SIZE

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        wm, wn = self.parent.waves_per_cta
        mn_dim = 0 if self.op_idx == 0 else 1
        k_dim = 1 - mn_dim
        waves_mn = (wm, wn)[self.op_idx]
        reps_mn = _tile_reps((shape[mn_dim],), (waves_mn,)) if len(shape) == 2 else None
        if reps_mn is None or shape[k_dim] % WMMA_K:
            raise ValueError(f"{self} does not tile a {list(shape)} tensor")
        (reps_mn,) = reps_mn
        along = lambda dim, v: (v, 0) if dim == 0 else (0, v)  # noqa: E731
        wave = wmma_operand_layout(self.op_idx)
        regs = wave.register_bases + tuple(_steps(along(k_dim, WMMA_K), shape[k_dim] // WMMA_K) +
                                           _steps(along(mn_dim, 16 * waves_mn), reps_mn))
        own = _wave_steps(along(mn_dim, 16), waves_mn, shape[mn_dim])
        replicated = [(0, 0)] * log2((wn, wm)[self.op_idx])
        warps = tuple(own + replicated if self.op_idx == 0 else replicated + own)
        return LinearLayout(tuple(shape), regs, wave.lane_bases, warps)

    def __str__(self) -> str:
        return f"#wmma_op<op_idx = {self.op_idx}, parent = {self.parent}>"

    __repr__ = __str__


def _parse_wmma(body: str) -> WmmaLayout:
    f = LayoutBody(body).fields(["wpc"])
    return WmmaLayout(tuple(f["wpc"]))  # type: ignore[arg-type]


def _parse_wmma_op(body: str) -> WmmaOperandLayout:
    f = LayoutBody(body).fields(["op_idx", "parent"])
    return WmmaOperandLayout(f["op_idx"], f["parent"])  # type: ignore[arg-type]


register_layout("wmma", _parse_wmma)
register_layout("wmma_op", _parse_wmma_op)
