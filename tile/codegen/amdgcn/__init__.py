"""The AMDGCN backend: simt IR -> gfx942, gfx90a or gfx1100 assembly text -> code object.

    simt.func ──isel──▶ MIR (virtual SGPRs/VGPRs) ──dpp──▶ ──regalloc──▶ physical registers
              ──waitcnt, nops──▶ ──kernel_object──▶ .s text (descriptor, metadata) ──llvm-mc, ld.lld──▶ .hsaco

isa (the instruction table), mir (machine IR and printer), isel (selection and uniformity), dpp
(a DPP move fused into the op that combines it), regalloc (liveness, linear scan), waitcnt
(s_waitcnt and GFX9's wait states), rdna3 (the hazards of RDNA3), kernel_object (text,
assembler). `emit_amdgcn` is the entry the compiler calls; `compile_amdgcn` also keeps the
final instructions and register assignment. The text runs on the emulator's wave machine
(tile.emulate(kernel, target="gfx942"), tile.emulator.amdgcn_machine).

The simt IR comes from the shared lowering with warps of the target's wave size (its
TargetFacts.warp_size): a CTA of num_warps waves, 64 lanes each on CDNA (gfx942, gfx90a) and
32 on RDNA3 (gfx1100), is one workgroup of num_warps * wave size work-items.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.core import Operation
from ..target import TargetResourceError
from .isa import LDS_BYTES, TARGETS
from .dpp import fuse_dpp_moves
from .isel import Selection, UnsupportedOnTarget, select
from .kernel_object import ToolNotFound, assemble, kernel_text
from .mir import MInst, Reg
from .rdna3 import insert_rdna3_waits
from .regalloc import allocate_spilling
from .waitcnt import insert_nops, insert_waits

__all__ = ["TARGETS", "UnsupportedOnTarget", "ToolNotFound", "assemble", "check_target", "compile_amdgcn",
           "emit_amdgcn"]


@dataclass
class AmdgcnKernel:
    """A compiled kernel: the selection (arguments, workgroup), the final instructions on
    physical registers (`assignment`), and the assembly text."""

    selection: Selection
    insts: list[MInst]
    assignment: dict[Reg, int]
    text: str


def check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"unknown AMD target {target!r}; supported: {', '.join(TARGETS)}")


def compile_amdgcn(simt: Operation, target: str) -> AmdgcnKernel:
    check_target(target)
    sel = select(simt, target)
    if sel.lds_bytes > LDS_BYTES[target]:
        raise TargetResourceError(sel.lds_bytes, LDS_BYTES[target], "shared memory", kernel=sel.name, target=target)
    spilled, assignment = allocate_spilling(fuse_dpp_moves(sel.insts), sel.new, target, sel.name)
    insts = insert_rdna3_waits(insert_nops(insert_waits(spilled, assignment, target), assignment, target),
                               assignment, target)
    return AmdgcnKernel(sel, insts, assignment, kernel_text(sel, insts, assignment, target))


def emit_amdgcn(simt: Operation, target: str) -> str:
    """The gfx assembly text of simt.func `simt` (kernel, descriptor and metadata)."""
    return compile_amdgcn(simt, target).text
