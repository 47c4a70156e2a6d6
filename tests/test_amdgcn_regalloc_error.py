"""The register allocator's OutOfResources says what is true when alignment and register tuples
make allocation fail below the limit: its required count is the registers the allocation needs
(more than the limit, never "needs -1 more"), and the message gives the live count beside it.
(amd7 saw "Required: 255, Hardware limit: 256, needs -1 more" for tutorial 04 at 128 x 128 x 64,
4 warps, on gfx1100; it now reads "Required: 258 ... needs 2 more VGPRs (254 registers are live
there, but the 4-register value ...".)"""
from __future__ import annotations

import pytest

from tile.codegen.amdgcn.mir import OFF, Imm
from tile.codegen.amdgcn.regalloc import allocate, bank_limits
from tile.codegen.target import TargetResourceError
from tile.runtime.errors import OutOfResources

from test_amdgcn_mir import Program, live_vgprs


def scattered_pair_program(limit: int) -> Program:
    """The address pair (v0:1), a running total (v2), then singles in v3 .. v[limit - 1]; those at
    odd registers are read and dead before a 64-bit value (an even pair) is loaded while the
    others are live: about half the bank live, yet no free even pair below the limit."""
    p = Program()
    addr = p.reg("v", 2, fixed=0)
    total = p.reg("v")
    p("v_mov_b32", [total], [Imm.int(0)])
    singles = [p.reg("v") for _ in range(limit - 3)]
    for v in singles:
        p("global_load_dword", [v], [addr, OFF])
    for v in singles[0::2]:
        p("v_add_u32", [total], [v, total])
    pair = p.reg("v", 2)
    p("global_load_dwordx2", [pair], [addr, OFF])
    for v in singles[1::2]:
        p("v_add_u32", [total], [v, pair.dword(0)])
    return p


def test_fragmented_vgprs_report_the_registers_the_allocation_needs():
    limits = dict(bank_limits("gfx1100"), v=16)
    p = scattered_pair_program(16)
    with pytest.raises(TargetResourceError) as e:
        allocate(p.insts, "gfx1100", "scattered", limits=limits)
    err = e.value
    # v3, v5, .. v15 are free, the even ones taken: the pair first fits at v16 of a bank without limit
    assert (err.name, err.limit, err.required) == ("VGPRs", 16, 18)
    assert "registers are live there, but the 2-register value that needs room finds no aligned run of 2" in str(err)
    assert "as allocated, the values need 18" in str(err)
    as_raised = OutOfResources(err.required, err.limit, err.name, kernel=err.kernel, target=err.target, hint=err.hint)
    assert "Kernel 'scattered' needs 2 more VGPRs than one program can have on gfx1100" in str(as_raised)


def test_without_fragmentation_the_required_count_is_what_is_live():
    """300 single values live at once on gfx942's 256 VGPRs (after the AGPRs, allocate alone
    has none to move to): required 302, the peak (the 300 and the address pair at the last load),
    not the 257th value that failed first (which the message said before: a block shrunk by one
    register's worth still failed), no fragmentation note."""
    p = live_vgprs(300)
    with pytest.raises(TargetResourceError) as e:
        allocate(p.insts, "gfx942", "big")
    assert e.value.required == 302 and "registers are live there" not in str(e.value)

