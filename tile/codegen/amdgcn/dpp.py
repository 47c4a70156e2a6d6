"""Fusing a DPP move into the VALU op that combines the moved value with the one it came from.

A reduction's butterfly step is a shuffle and a combine: the selector makes the shuffle a DPP
move (isel.sel_shfl) and the combine its VOP2 op. When the moved value is read by nothing but
the next instruction, a commutative op (isa.DPP_COMBINES) whose other operand is the value the
move read, the op's own DPP form does both: its first source is read from the other lane
(LLVM's GCNDPPCombine does the same for the moves it finds):

    v_mov_b32_dpp %v7.0, %v5.0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1
    v_add_f32 %v8.0, %v5.0, %v7.0
        ->
    v_add_f32_dpp %v8.0, %v5.0, %v5.0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1

Only a move that writes every lane in EXEC (full masks, bound_ctrl:1: an invalid source reads
0) is fused, so the fused op writes every lane the op did, with the moved value where the op
read it; the swap of the op's sources is what commutativity allows.
"""
from __future__ import annotations

from collections import Counter

from .isa import DPP_COMBINES, DPP_FULL_MASK
from .mir import MInst, Sub


def _fusable_move(move: MInst) -> bool:
    return (move.opcode == "v_mov_b32_dpp" and move.mods.get("bound_ctrl") == 1
            and move.mods.get("row_mask", DPP_FULL_MASK) == move.mods.get("bank_mask", DPP_FULL_MASK) == DPP_FULL_MASK)


def fuse_dpp_moves(insts: list[MInst]) -> list[MInst]:
    """`insts` (virtual registers) with each DPP move whose result only the next instruction
    reads, a DPP_COMBINES op of that result and the move's source, fused into the op."""
    reads = Counter(o.reg for inst in insts for o in inst.uses if isinstance(o, Sub))
    out: list[MInst] = []
    k = 0
    while k < len(insts):
        move = insts[k]
        combine = insts[k + 1] if k + 1 < len(insts) else None
        if (combine is not None and _fusable_move(move) and combine.opcode in DPP_COMBINES and not combine.mods
                and reads[move.defs[0].reg] == 1 and move.defs[0] == move.defs[0].reg.all()
                and move.defs[0] != move.uses[0] and set(combine.uses) == {move.defs[0], move.uses[0]}):
            out.append(MInst(f"{combine.opcode}_dpp", combine.defs, [move.uses[0], move.uses[0]], dict(move.mods),
                             combine.comment))
            k += 2
            continue
        out.append(move)
        k += 1
    return out
