"""Where AMD's MFMA instructions keep their operands and results in the lanes of a wave.

An MFMA (gfx90a/gfx942, 64-lane waves) computes D = A x B + C for one wave: A is M x K, B is
K x N, C and D are M x N in f32. Each lane holds a few registers of each; which element sits in
register r of lane l is fixed by the ISA (CDNA3 ISA 7.1, "Dependent Arithmetic Instructions"
and the matrix layout figures; AMD's matrix instruction calculator prints the same tables).
A and B take two VGPRs in each lane: four 16-bit values (f16, bf16) or eight 8-bit ones
(gfx942's fnuz fp8 / bf8), `w` consecutive values of K (the operand's k_width, 4 or 8):

    A (M x K)   lane l, value j (0..w-1):  row l % M,        k = w * (l // M) + j
    B (K x N)   lane l, value j (0..w-1):  k = w * (l // N) + j,  column l % N
    D (M x N)   lane l, register r:      column l % N,
                                         row = 4 * (64 / N) * (r // 4) + 4 * (l // N) + r % 4

So 32x32x8: the 32 lanes of each half of the wave hold the 32 rows of A (the halves split K
in two fours), and D's register r of lane l is row 8 * (r // 4) + 4 * (l // 32) + r % 4 of
column l % 32. 16x16x16: four groups of 16 lanes split K (A, B) and D's rows in fours. The
8-bit instructions have the same result layouts and twice the K (32x32x16, 16x16x32): each
lane's eight values are eight consecutive k, lowest in the low byte of the first VGPR.

Each layout is a LinearLayout (register, lane, warp) -> element over one wave (no warp bits):
the bits of the register and lane indices each move one power-of-two step along a dimension.
Registers count the values of A and B (k_width per lane, two VGPRs' worth, the lowest
first) and f32 values for D.

Over a workgroup, tt.dot's layouts on gfx942 and gfx90a (a warp of the lowering is one wave of
64: the layout's 6 lane bases are the instruction's, its warp bases step the waves over the
grid of instruction tiles):

    #mfma<instr = 32, wpc = [wm, wn]>                     the result: waves tile (instr wm) x (instr wn)
    #mfma_op<op_idx = 0, parent = #mfma<...>>            A (op_idx 0) or B (1) of that result
    #mfma_op<op_idx = 0, parent = #mfma<...>, k_width = 8>   the same of an 8-bit MFMA (K twice)

Registers: those of one instruction first, then the instruction tile repeated along K (operands
only), then along M, then along N: register R * (i + reps_m * j) + r of the result is register
r of the instruction at tile (i, j) (R = instr * instr / 64); register w * (s + steps * i) + v
of A (k_width w) is value v of k-step s of tile row i. A is replicated over the wave columns,
B over the wave rows.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .layouts import DistributedLayout, LayoutBody, LinearLayout, fmt_list, log2
from .types import register_layout

MFMA_WAVE_SIZE = 64
VALUES_PER_LANE = 4   # consecutive K of a 16-bit operand in each lane; rows of D in each lane group
OPERAND_BITS_PER_LANE = 64   # A and B: two VGPRs in each lane, whatever the operand type


def _check_wave(wave_size: int) -> None:
    if wave_size != MFMA_WAVE_SIZE:
        raise ValueError(f"MFMA runs on waves of {MFMA_WAVE_SIZE} lanes, not {wave_size}")


def _powers(n: int) -> list[int]:
    return [1 << i for i in range(log2(n))]


def mfma_result_layout(m: int, n: int, wave_size: int = MFMA_WAVE_SIZE) -> LinearLayout:
    """The layout of C and D (m x n f32) of one MFMA."""
    _check_wave(wave_size)
    lane_groups = wave_size // n            # groups of n lanes: each holds its own 4 rows
    if lane_groups * VALUES_PER_LANE > m:
        raise ValueError(f"no MFMA result is {m} x {n}")
    rows_of_registers = _powers(VALUES_PER_LANE) + [VALUES_PER_LANE * lane_groups * p
                                                    for p in _powers(m // (VALUES_PER_LANE * lane_groups))]
    return LinearLayout(
        (m, n),
        tuple((row, 0) for row in rows_of_registers),
        tuple((0, col) for col in _powers(n)) + tuple((VALUES_PER_LANE * p, 0) for p in _powers(lane_groups)),
        (),
    )


def mfma_k_width(bits: int) -> int:
    """Values of K in each lane of an MFMA operand of `bits`-bit elements (4 of 16 bits, 8 of 8)."""
    if bits not in (8, 16):
        raise ValueError(f"no MFMA takes {bits}-bit operands")
    return OPERAND_BITS_PER_LANE // bits


def mfma_operand_layout(op_idx: int, mn: int, k: int, wave_size: int = MFMA_WAVE_SIZE,
                        k_width: int = VALUES_PER_LANE) -> LinearLayout:
    """The layout of A (op_idx 0: mn x k) or B (op_idx 1: k x mn) of an MFMA whose lanes hold
    k_width values each (4: 16-bit operands, 8: 8-bit ones)."""
    _check_wave(wave_size)
    if mn * k != wave_size * k_width:
        raise ValueError(f"no {OPERAND_BITS_PER_LANE // k_width}-bit MFMA operand is {mn} x {k} "
                         f"({k_width} values in each of {wave_size} lanes)")

    def place(along_mn: int, along_k: int) -> tuple[int, int]:
        return (along_mn, along_k) if op_idx == 0 else (along_k, along_mn)

    shape = place(mn, k)
    registers = tuple(place(0, p) for p in _powers(k_width))
    lanes = tuple(place(p, 0) for p in _powers(mn)) + tuple(place(0, k_width * p) for p in _powers(k // k_width))
    return LinearLayout(shape, registers, lanes, ())


MFMA_INSTR_K = {32: 8, 16: 16}   # K of the 16-bit MFMA of each result size (32x32x8, 16x16x16; twice for 8-bit)


def _steps(base: tuple[int, int], count: int) -> list[tuple[int, int]]:
    return [(base[0] * p, base[1] * p) for p in _powers(count)]


@dataclass(frozen=True)
class MfmaLayout(DistributedLayout):
    """The result of tt.dot on MFMA: instruction tiles of instr x instr, waves in a wm x wn grid."""

    instr: int
    waves_per_cta: tuple[int, int]

    name = "mfma"
    shape_generic = False

    def __post_init__(self) -> None:
        if self.instr not in MFMA_INSTR_K or len(self.waves_per_cta) != 2:
            raise ValueError(f"unsupported mfma layout {self}")
        for w in self.waves_per_cta:
            log2(w)

    @property
    def num_warps(self) -> int:
        return math.prod(self.waves_per_cta)

    @property
    def warp_size(self) -> int:
        return MFMA_WAVE_SIZE

    def tile_reps(self, shape) -> tuple[int, int]:
        """Instruction tiles of each wave along M and N (a shape the waves do not tile is an error)."""
        (m, n), (wm, wn) = shape, self.waves_per_cta
        if len(shape) != 2 or m % (self.instr * wm) or n % (self.instr * wn):
            raise ValueError(f"{self} does not tile a {list(shape)} tensor")
        return m // (self.instr * wm), n // (self.instr * wn)

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        reps_m, reps_n = self.tile_reps(shape)
        (wm, wn), t = self.waves_per_cta, self.instr
        wave = mfma_result_layout(t, t)
        regs = wave.register_bases + tuple(_steps((t * wm, 0), reps_m) + _steps((0, t * wn), reps_n))
        warps = tuple(_steps((t, 0), wm) + _steps((0, t), wn))
        return LinearLayout(tuple(shape), regs, wave.lane_bases, warps)

    def __str__(self) -> str:
        return f"#mfma<instr = {self.instr}, wpc = {fmt_list(self.waves_per_cta)}>"

    __repr__ = __str__


@dataclass(frozen=True)
class MfmaOperandLayout(DistributedLayout):
    """A (op_idx 0, M x K) or B (op_idx 1, K x N) of a tt.dot whose result is `parent`, k_width
    values of K in each lane (4 for 16-bit operands, 8 for 8-bit ones; see mfma_k_width)."""

    op_idx: int
    parent: MfmaLayout
    k_width: int = VALUES_PER_LANE

    name = "mfma_op"
    shape_generic = False

    def __post_init__(self) -> None:
        if self.op_idx not in (0, 1) or not isinstance(self.parent, MfmaLayout) or \
                self.k_width not in (mfma_k_width(16), mfma_k_width(8)):
            raise ValueError(f"unsupported mfma operand layout {self}")

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def warp_size(self) -> int:
        return MFMA_WAVE_SIZE

    @property
    def instr_k(self) -> int:
        """K of one instruction: that of the 16-bit MFMA, times two for 8-bit operands."""
        return MFMA_INSTR_K[self.parent.instr] * self.k_width // VALUES_PER_LANE

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        t, k_instr, (wm, wn) = self.parent.instr, self.instr_k, self.parent.waves_per_cta
        mn_dim = 0 if self.op_idx == 0 else 1
        k_dim = 1 - mn_dim
        waves_mn = (wm, wn)[self.op_idx]
        if len(shape) != 2 or shape[k_dim] % k_instr or shape[mn_dim] % (t * waves_mn):
            raise ValueError(f"{self} does not tile a {list(shape)} tensor")
        along = lambda dim, v: (v, 0) if dim == 0 else (0, v)  # noqa: E731
        wave = mfma_operand_layout(self.op_idx, t, k_instr, k_width=self.k_width)
        regs = wave.register_bases + tuple(_steps(along(k_dim, k_instr), shape[k_dim] // k_instr) +
                                           _steps(along(mn_dim, t * waves_mn), shape[mn_dim] // (t * waves_mn)))
        own = _steps(along(mn_dim, t), waves_mn)
        replicated = [(0, 0)] * log2((wn, wm)[self.op_idx])
        warps = tuple(own + replicated if self.op_idx == 0 else replicated + own)
        return LinearLayout(tuple(shape), regs, wave.lane_bases, warps)

    def __str__(self) -> str:
        width = f", k_width = {self.k_width}" if self.k_width != VALUES_PER_LANE else ""
        return f"#mfma_op<op_idx = {self.op_idx}, parent = {self.parent}{width}>"

    __repr__ = __str__


def _parse_mfma(body: str) -> MfmaLayout:
    f = LayoutBody(body).fields(["instr", "wpc"])
    return MfmaLayout(f["instr"], tuple(f["wpc"]))  # type: ignore[arg-type]


def _parse_mfma_op(body: str) -> MfmaOperandLayout:
    keys = ["op_idx", "parent"] + (["k_width"] if re.search(r"\bk_width\s*=", body) else [])
    f = LayoutBody(body).fields(keys)
    return MfmaOperandLayout(f["op_idx"], f["parent"], f.get("k_width", VALUES_PER_LANE))  # type: ignore[arg-type]


register_layout("mfma", _parse_mfma)
register_layout("mfma_op", _parse_mfma_op)
