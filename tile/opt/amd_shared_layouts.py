"""What AMD targets change in the choice of an LDS buffer's layout (convert-through-shared).

The NVIDIA choice (tile.opt.convert_through_shared.shared_layout_for) keeps a conversion buffer
in the order of the source's fastest dimension and searches its swizzle for the fewest
wavefronts of the store plus the load. Its bank model, 32 banks of 4 bytes served in phases of
32 consecutive lanes (16 for 8-byte and 8 for 16-byte accesses), is also the LDS a wave meets on
gfx942, gfx90a and gfx1100: a warp there is one wave, and a wave64's access (CDNA) is two phases
of 32 lanes (four of 16, eight of 8), which the model counts phase by phase over the warp's 64
lanes; tile.emulator.amdgcn_lds_banks counts the same clocks on the emulated kernel.

What AMD changes is the order of the buffers that are not matrix operands. An MFMA / WMMA
accumulator written back for the epilogue holds 4 (MFMA) or 8 (WMMA) consecutive rows of one
column per lane, so the M-major buffer of the NVIDIA choice makes the row-major load behind it
a transpose of 2-byte reads, and its 4-byte stores 2-way conflicts on gfx942; the N-major one
costs 2-byte stores and one 16-byte read, all conflict-free. The targets below search each
dimension as the fastest and keep the cheapest (ties keep the source's order, the NVIDIA
choice).

MFMA / WMMA operand buffers keep the source's order: reordering them (operand B of fp8 K-major,
read by words instead of bytes) saves LDS clocks in small tiles but costs VGPRs in large ones
(tile's benchmark matmul on gfx942 at 128x64x64, 8 warps: 171 VGPRs instead of 134, one wave
per SIMD less), and on gfx1100 puts tutorial 06's persistent matmul at 258 VGPRs of 256.

Before (gfx942, tutorial 04's f16 epilogue, a 32x32 tile on #mfma<instr = 16, wpc = [2, 1]>):
    %67 = gpu.local_alloc : tensor<32x32xf16, #shared<vec = 2, per_phase = 2, max_phase = 16, order = [0, 1]>>
After:
    %67 = gpu.local_alloc : tensor<32x32xf16, #shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>>

A target not listed (the NVIDIA ones) keeps the NVIDIA choice.
"""
from __future__ import annotations

# the targets whose conversion buffers (not MFMA / WMMA operands) try every order
ORDER_SEARCH_TARGETS = frozenset({"gfx942", "gfx90a", "gfx1100"})

__all__ = ["ORDER_SEARCH_TARGETS"]
