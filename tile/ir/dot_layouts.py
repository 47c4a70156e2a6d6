"""Tensor-core layouts: the mma.sync accumulator and operands, and the shared buffers they load from.

The register layouts reduce, like every distributed layout, to a `tile.ir.layouts.LinearLayout`:

    #mma<version = 2, wpc = [2, 4], instr = [16, 8]>    the accumulator of mma.sync on 2 x 4 warps
    #dot_op<op_idx = 0, parent = #mma<...>, k_width = 2>  its A (op_idx 0) or B (1) operand
    #mma<version = 3, wpc = [8, 1], instr = [16, 256]>  the accumulator of Hopper's wgmma.m64n256k16 on
                                                        two warp groups (4 warps each) stacked along M

    #mma<version = 2, wpc = [1, 1], instr = [16, 8]> on tensor<16x8xf32>
      register bases  (0, 1) (8, 0)                   lane l holds row l // 4 (+8), columns 2 (l % 4) + {0, 1}
      lane bases      (0, 2) (0, 4) (1, 0) (2, 0) (4, 0)

The FMA path's operands stay blocked (`fma_operand_layout`). Operands staged through shared memory
get a swizzled #shared buffer (`shared_for_dot`) that ldmatrix, per-element reads and the 16-byte
stores filling it use without bank conflicts; `shared_wavefronts` counts the bank wavefronts of one
warp-wide access. wgmma reads its operands straight from shared memory through matrix descriptors,
in the canonical layouts of the PTX ISA ("Asynchronous Warpgroup Level Matrix Shared Memory
Layout"): `wgmma_shared` builds them as #shared layouts and `wgmma_swizzle` recognizes them. Both
text forms parse once this module is imported (`import tile.ir` does).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .layouts import (BlockedLayout, Coord, DistributedLayout, LayoutBody, LinearLayout, SharedLayout,
                      clipped_linear, fmt_list, log2, unit)
from .types import register_layout

MAX_WGMMA_N = 256  # the widest wgmma instruction: m64n256k*


# ----------------------------------------------------------------------- register layouts


def _bits(base: Coord, count: int) -> list[Coord]:
    """`base`, 2*base, 4*base, ... (log2(count) bases; none when count <= 1)."""
    return [tuple(c << i for c in base) for i in range(log2(max(count, 1)))]


@dataclass(frozen=True)
class MmaLayout(DistributedLayout):
    """The accumulator (C/D) of a tensor-core instruction, tiled over warps and registers.

    version 2, mma.sync.m16n8kK (Ampere), instr = [16, 8]: one instruction covers a 16x8 tile:
    lane l holds (l // 4, 2 * (l % 4) + {0, 1}) in registers 0, 1 and the same columns of row
    l // 4 + 8 in registers 2, 3. Warp w covers warp-row w % wm and warp-column w // wm of a
    (16 wm) x (8 wn) CTA tile. Larger tensors repeat the CTA tile in registers, M repeats first:
    register 4 * (i + reps_m * j) + c is fragment register c of the tile repeated i times along M
    and j times along N (a 16x8 instruction tile, reps_m = M / (16 wm)).

    version 3, wgmma.m64nNk* (Hopper, sm_90a), instr = [16, N]: a warp group (4 consecutive warps,
    wm a multiple of 4) runs one 64 x N instruction; warp w % 4 of the group holds its rows
    16 (w % 4) .. 16 (w % 4) + 15 as mma.sync's C fragment repeated along N: register
    4 j + c holds fragment register c of columns 8 j .. 8 j + 7. Warp groups tile a
    (16 wm) x (N wn) CTA tile (M first), which repeats in registers like version 2's.
    """

    version: int
    warps_per_cta: tuple[int, int]
    instr_shape: tuple[int, int] = (16, 8)

    name = "mma"

    def __post_init__(self) -> None:
        wm = self.warps_per_cta[0] if len(self.warps_per_cta) == 2 else 0
        n = self.instr_shape[1] if len(self.instr_shape) == 2 else 0
        v2 = self.version == 2 and self.instr_shape == (16, 8)
        v3 = self.version == 3 and self.instr_shape[0] == 16 and wm % 4 == 0 and 8 <= n <= MAX_WGMMA_N
        if not (v2 or v3) or len(self.warps_per_cta) != 2:
            raise ValueError(f"unsupported mma layout {self}")
        for w in self.warps_per_cta + (n,):
            log2(w)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    @property
    def warp_size(self) -> int:
        return 32

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        if len(shape) != 2:
            raise ValueError(f"{self} holds 2-D tensors, not {shape}")
        wm, wn = self.warps_per_cta
        n_instr = self.instr_shape[1]
        m, n = shape
        regs = [(0, 1), (8, 0)] + _bits((0, 8), n_instr // 8) + _bits((16 * wm, 0), m // (16 * wm)) + \
            _bits((0, n_instr * wn), n // (n_instr * wn))
        lanes = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
        warps = _bits((16, 0), wm) + _bits((0, n_instr), wn)
        return clipped_linear(shape, regs, lanes, warps)

    def __str__(self) -> str:
        return (f"#mma<version = {self.version}, wpc = {fmt_list(self.warps_per_cta)}, "
                f"instr = {fmt_list(self.instr_shape)}>")

    __repr__ = __str__


@dataclass(frozen=True)
class DotOperandLayout(DistributedLayout):
    """Operand A (op_idx 0, M x K) or B (op_idx 1, K x N) of the mma.sync of `parent`, as the
    instruction's fragment registers hold it; `k_width` elements along K share one 32-bit register
    (2 for 16-bit types: m16n8k16; 4 for 8-bit: m16n8k32; 1 for tf32: m16n8k8). With a version 3
    parent, operand A of a wgmma that reads A from registers (B always comes from shared memory):
    its fragment (m64nNk16, per warp of the warp group: 16 rows) is mma.sync's m16n8k16 A fragment,
    so the same formula holds on the parent's warps.

    With g = lane // 4, t = lane % 4, kw = k_width and one instruction's K = 8 kw:
        A: register kw*j + e holds (g + 8 (j & 1), t kw + e + 4 kw (j >> 1)), j = 0..3 (a0..a3)
        B: register kw*j + e holds (t kw + e + 4 kw j, g),                     j = 0..1 (b0, b1)
    then the instruction tile repeats in registers along K, then along M (A) or N (B). A is
    replicated over the warp columns of the parent, B over its warp rows.
    """

    op_idx: int
    parent: MmaLayout
    k_width: int

    name = "dot_op"

    def __post_init__(self) -> None:
        if self.op_idx not in (0, 1) or self.k_width not in (1, 2, 4) or not isinstance(self.parent, MmaLayout):
            raise ValueError(f"unsupported dot operand layout {self}")
        if self.parent.version == 3 and self.op_idx != 0:
            raise ValueError(f"unsupported dot operand layout {self}: wgmma reads B from shared memory")

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def warp_size(self) -> int:
        return 32

    @property
    def instr_k(self) -> int:
        """K of one mma instruction."""
        return 8 * self.k_width

    def _linear(self, shape: tuple[int, ...]) -> LinearLayout:
        if len(shape) != 2:
            raise ValueError(f"{self} holds 2-D tensors, not {shape}")
        kw, (wm, wn) = self.k_width, self.parent.warps_per_cta
        k_dim = 1 - self.op_idx
        k = lambda v: unit(2, k_dim, v)  # noqa: E731  a step along K
        if self.op_idx == 0:
            frag, outer = [(8, 0), k(4 * kw)], _bits((16 * wm, 0), shape[0] // (16 * wm))
            mn_lanes = [(1, 0), (2, 0), (4, 0)]
            warps = _bits((16, 0), wm) + [(0, 0)] * log2(wn)
        else:
            frag, outer = [k(4 * kw)], _bits((0, 8 * wn), shape[1] // (8 * wn))
            mn_lanes = [(0, 1), (0, 2), (0, 4)]
            warps = [(0, 0)] * log2(wm) + _bits((0, 8), wn)
        regs = _bits(k(1), kw) + frag + _bits(k(8 * kw), shape[k_dim] // (8 * kw)) + outer
        lanes = [k(kw), k(2 * kw)] + mn_lanes
        return clipped_linear(shape, regs, lanes, warps)

    def __str__(self) -> str:
        return f"#dot_op<op_idx = {self.op_idx}, parent = {self.parent}, k_width = {self.k_width}>"

    __repr__ = __str__


def fma_operand_layout(result: BlockedLayout, op_idx: int, k: int) -> BlockedLayout:
    """The layout of operand A (op_idx 0, M x k) or B (op_idx 1, k x N) of an FMA-path tt.dot whose
    result has the blocked layout `result`: A is distributed along M exactly as the result is and
    holds all of K in each thread's registers (lanes and warps that split N replicate it); B the
    same with N. So every thread finds A[m, :] and B[:, n] in its own registers for each result
    element (m, n) it holds: Triton's FMA dot, one fma per element and k."""
    spt = list(result.size_per_thread)
    spt[1 - op_idx] = k
    return BlockedLayout(tuple(spt), result.threads_per_warp, result.warps_per_cta, result.order)


# ----------------------------------------------------------------------- shared-memory banks

BANKS = 32  # 4-byte banks; one wavefront serves one word from each
LINE = BANKS * 4


def shared_wavefronts(addresses: Sequence[Optional[int]], access_bytes: int) -> int:
    """Wavefronts one warp-wide shared-memory access takes: each lane moves `access_bytes` (1..16)
    at its byte address (in lane order; None: the lane does not take part).

    16-byte accesses are served in phases of 8 lanes, 8-byte ones in phases of 16, narrower ones
    all 32 lanes at once. In a phase a bank delivers one distinct 4-byte word per wavefront (lanes
    touching the same word share it), so the phase takes as many wavefronts as the most distinct
    words one bank holds; 1 per phase means conflict-free.
    """
    lanes = 8 if access_bytes == 16 else 16 if access_bytes == 8 else 32
    total = 0
    for start in range(0, len(addresses), lanes):
        words: dict[int, set[int]] = {}
        for a in addresses[start:start + lanes]:
            if a is not None:
                for w in range(a // 4, (a + access_bytes - 1) // 4 + 1):
                    words.setdefault(w % BANKS, set()).add(w)
        total += max((len(s) for s in words.values()), default=0)
    return total


def shared_for_dot(shape: Sequence[int], element_bytes: int, op_idx: int, order: Sequence[int]) -> SharedLayout:
    """The swizzled buffer of mma operand A (op_idx 0, M x K) or B (op_idx 1, K x N) filled from
    a global load whose fastest dimension is order[0] (the buffer keeps that order).

    vec: one 16-byte chunk (a row of an ldmatrix 8x8 matrix, one cp.async) when K is contiguous;
    when M or N is contiguous, 8 elements (the 8 rows or columns one register of a fragment spans
    over a quad of lanes) and at least 16 bytes. per_phase: rows that share one 128-byte line.
    max_phase: enough phases that 8 consecutive rows (one ldmatrix phase) or the rows one fragment
    register spans fall in distinct 16-byte (or vec-sized) slots of the banks, at most the chunks in
    a row. 8-bit operands with M or N contiguous have no ldmatrix (.trans is 16-bit only) and are
    read per element, a register's lanes 4 rows apart: their phase changes every 4 rows. So
    ldmatrix(.trans) reads, per-element reads and the 16-byte stores that fill the buffer are
    conflict-free (tests/test_dot_layouts.py counts the banks; the one exception, 2-way, is an
    8-bit operand with M or N contiguous and rows of 32 bytes or less).
    """
    inner = shape[order[0]]
    k_contiguous = order[0] == 1 - op_idx
    vec = min(inner, 16 // element_bytes if k_contiguous else max(8, 16 // element_bytes))
    rows_per_line = max(1, LINE // (inner * element_bytes))
    per_phase = rows_per_line
    if not k_contiguous and element_bytes == 1:
        per_phase = max(per_phase, 4)  # read per element: one register's lanes read rows 4 apart
    slots = max(1, LINE // (vec * element_bytes))
    max_phase = max(1, min(inner // vec, slots // rows_per_line))
    return SharedLayout(vec, per_phase, max_phase, tuple(order))


def ldmatrix_conflict_free(layout: SharedLayout, shape: Sequence[int], element_bytes: int) -> bool:
    """Whether ldmatrix can read the 2-D buffer `shape` in `layout` without bank conflicts: every
    8x8 matrix of 16-byte rows (8 consecutive rows along order[1], one aligned 16-byte chunk
    along order[0]) is 8 contiguous 16-byte rows in 8 distinct 16-byte bank groups."""
    inner, row = layout.order[0], layout.order[1]
    chunk = 16 // element_bytes
    if shape[inner] % chunk or shape[row] % 8:
        return False

    def offset(r: int, c: int) -> int:
        coords = [0, 0]
        coords[row], coords[inner] = r, c
        return layout.offset_of(coords, shape)

    for r0 in range(0, shape[row], 8):
        for c0 in range(0, shape[inner], chunk):
            starts = [offset(r0 + i, c0) for i in range(8)]
            if any(offset(r0 + i, c0 + j) != starts[i] + j for i in range(8) for j in range(chunk)):
                return False
            if shared_wavefronts([s * element_bytes for s in starts], 16) != 1:
                return False
    return True


WGMMA_SWIZZLES = (128, 64, 32)  # bytes: the swizzle modes of wgmma's shared-memory operands, widest first


def wgmma_shared(shape: Sequence[int], element_bytes: int, order: Sequence[int]) -> Optional[SharedLayout]:
    """The canonical wgmma layout of a 2-D operand buffer whose contiguous dimension is order[0]
    (K for a "K-major" operand, M or N for an "MN-major" one), or None when a row holds less than
    32 bytes (wgmma's unswizzled layout is not used).

    The PTX ISA's swizzle atom is 8 rows of S bytes (S = 128, 64 or 32: the widest a row fills),
    16-byte chunk c of row r stored at chunk c ^ (r // (128 / S)) % (S / 16): in #shared terms
    vec = 16 bytes, per_phase = 128 / S, max_phase = S / 16. Rows wider than S are cut into
    blocks of S bytes (`block`), atoms stacked along the rows within a block. The swizzle is that
    of the address bits (bits 4.. XOR bits 7..), so a buffer starts at a multiple of 8 S bytes.
    """
    inner_bytes = shape[order[0]] * element_bytes
    swizzle = next((s for s in WGMMA_SWIZZLES if inner_bytes >= s), None)
    if swizzle is None:
        return None
    width = swizzle // element_bytes
    return SharedLayout(16 // element_bytes, 128 // swizzle, swizzle // 16, tuple(order),
                        width if shape[order[0]] > width else 0)


def wgmma_swizzle(layout: SharedLayout, shape: Sequence[int], element_bytes: int) -> Optional[int]:
    """The swizzle (bytes) of a 2-D buffer in a canonical wgmma layout, else None."""
    if len(shape) != 2 or layout != wgmma_shared(shape, element_bytes, layout.order):
        return None
    return layout.max_phase * 16


# ----------------------------------------------------------------------- parsing


def _parse_mma(body: str) -> MmaLayout:
    f = LayoutBody(body).fields(["version", "wpc", "instr"])
    return MmaLayout(f["version"], tuple(f["wpc"]), tuple(f["instr"]))  # type: ignore[arg-type]


def _parse_dot_op(body: str) -> DotOperandLayout:
    f = LayoutBody(body).fields(["op_idx", "parent", "k_width"])
    return DotOperandLayout(f["op_idx"], f["parent"], f["k_width"])  # type: ignore[arg-type]


register_layout("mma", _parse_mma)
register_layout("dot_op", _parse_dot_op)

__all__ = [
    "MmaLayout", "DotOperandLayout", "fma_operand_layout", "shared_for_dot", "shared_wavefronts",
    "ldmatrix_conflict_free", "wgmma_shared", "wgmma_swizzle", "BANKS", "LINE", "MAX_WGMMA_N", "WGMMA_SWIZZLES",
]
