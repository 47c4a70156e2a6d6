"""Where AMD's MFMA instructions keep their operands and results in the lanes of a wave.

An MFMA (gfx90a/gfx942, 64-lane waves) computes D = A x B + C for one wave: A is M x K, B is
K x N, C and D are M x N in f32. Each lane holds a few registers of each; which element sits in
register r of lane l is fixed by the ISA (CDNA3 ISA 7.1, "Dependent Arithmetic Instructions"
and the matrix layout figures; AMD's matrix instruction calculator prints the same tables).
With 16-bit A and B (f16, bf16; four values per lane in two VGPRs) the layouts are:

    A (M x K)   lane l, value j (0..3):  row l % M,        k = 4 * (l // M) + j
    B (K x N)   lane l, value j (0..3):  k = 4 * (l // N) + j,  column l % N
    D (M x N)   lane l, register r:      column l % N,
                                         row = 4 * (64 / N) * (r // 4) + 4 * (l // N) + r % 4

So 32x32x8: the 32 lanes of each half of the wave hold the 32 rows of A (the halves split K
in two fours), and D's register r of lane l is row 8 * (r // 4) + 4 * (l // 32) + r % 4 of
column l % 32. 16x16x16: four groups of 16 lanes split K (A, B) and D's rows in fours.

Each layout is a LinearLayout (register, lane, warp) -> element over one wave (no warp bits):
the bits of the register and lane indices each move one power-of-two step along a dimension.
Registers count 16-bit values for A and B (two per VGPR, the low half first) and f32 values
for D.
"""
from __future__ import annotations

from .layouts import LinearLayout, log2

MFMA_WAVE_SIZE = 64
VALUES_PER_LANE = 4   # consecutive K of a 16-bit operand in each lane


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


def mfma_operand_layout(op_idx: int, mn: int, k: int, wave_size: int = MFMA_WAVE_SIZE) -> LinearLayout:
    """The layout of A (op_idx 0: mn x k) or B (op_idx 1: k x mn) of a 16-bit MFMA."""
    _check_wave(wave_size)
    if mn * k != wave_size * VALUES_PER_LANE:
        raise ValueError(f"no 16-bit MFMA operand is {mn} x {k} ({VALUES_PER_LANE} values in each of {wave_size} lanes)")

    def place(along_mn: int, along_k: int) -> tuple[int, int]:
        return (along_mn, along_k) if op_idx == 0 else (along_k, along_mn)

    shape = place(mn, k)
    registers = tuple(place(0, p) for p in _powers(VALUES_PER_LANE))
    lanes = tuple(place(p, 0) for p in _powers(mn)) + tuple(place(0, VALUES_PER_LANE * p)
                                                             for p in _powers(k // VALUES_PER_LANE))
    return LinearLayout(shape, registers, lanes, ())
