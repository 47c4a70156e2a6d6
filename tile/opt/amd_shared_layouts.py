"""What AMD targets change in the choice of an LDS buffer's layout (convert-through-shared).

The NVIDIA choice (tile.opt.convert_through_shared.shared_layout_for) keeps a conversion buffer
in the order of the source's fastest dimension and searches its swizzle for the fewest
wavefronts of the store plus the load. Its bank model, 32 banks of 4 bytes served in phases of
32 lanes (16 for 8-byte and 8 for 16-byte accesses), is also CDNA3's LDS: tile's lowering splits
a wave64 into two 32-lane halves, and tile.emulator.amdgcn_lds_banks counts the same clocks on
the emulated kernel. What AMD changes is the order (a row per target says how far):

An MFMA / WMMA accumulator written back for the epilogue holds 4 (MFMA) or 8
(WMMA) consecutive rows of one column per lane, so the M-major buffer of the NVIDIA choice
makes the row-major load behind it a transpose of 2-byte reads; the N-major one costs a few
2-byte stores and one 16-byte read. An fp8 MFMA operand B loaded N-major was read back one
byte at a time; K-major, a word at a time. AMD rows search each dimension as the fastest and
keep the cheapest (ties keep the source's order, the NVIDIA choice). `reorder_operands` off
keeps the operand buffers in the source's order: on gfx1100 the WMMA operand B is built in the
registers v_wmma reads by ds_load_u16_d16(_hi), and the K-major buffer costs more VGPRs than
tutorial 06's persistent matmul has (258 of 256).

Before (gfx942, tutorial 04's f16 epilogue, a 32x32 tile on #mfma<instr = 16, wpc = [2, 1]>):
    %67 = gpu.local_alloc : tensor<32x32xf16, #shared<vec = 2, per_phase = 2, max_phase = 16, order = [0, 1]>>
After:
    %67 = gpu.local_alloc : tensor<32x32xf16, #shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>>

A target without a row (the NVIDIA ones) keeps the NVIDIA choice.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class AmdSharedRule:
    """reorder_operands: MFMA / WMMA operand buffers may take another order than their source's."""

    reorder_operands: bool


AMD_SHARED_RULES = {
    "gfx942": AmdSharedRule(reorder_operands=True),
    "gfx90a": AmdSharedRule(reorder_operands=True),
    "gfx1100": AmdSharedRule(reorder_operands=False),
}


def amd_shared_rule(target: Optional[str]) -> Optional[AmdSharedRule]:
    """The target's row, None for targets that keep the NVIDIA choice."""
    return AMD_SHARED_RULES.get(target or "")


__all__ = ["AMD_SHARED_RULES", "AmdSharedRule", "amd_shared_rule"]
