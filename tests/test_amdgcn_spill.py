"""SGPR spilling of the gfx942 register allocator: more live SGPR values than s0..s101 go to
VGPR lanes (v_writelane_b32 after each definition, v_readlane_b32 into a short-lived SGPR before
each use). Property-tested on random straight-line programs run by a small evaluator of the
physical registers against the same program on unlimited virtual ones; more than the VGPRs and
AGPRs together is still OutOfResources (tests/test_amdgcn_agpr.py: VGPR values moved to AGPRs)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.codegen.amdgcn.isa import SGPR_LIMIT
from tile.codegen.amdgcn.mir import Imm, MInst, Reg
from tile.codegen.amdgcn.regalloc import allocate, allocate_spilling
from tile.codegen.target import TargetResourceError

from amdgcn_util import Registers, assert_placement

M32 = (1 << 32) - 1


def program(registers: Registers, values: int, picks: list[tuple[int, int]]) -> tuple[list[MInst], Reg]:
    """`values` SGPRs (a few of them pairs) set to constants, then sums of pairs of them picked
    by `picks` (each keeps both alive to the end), folded into an accumulator that ends in a VGPR."""
    defined = []
    insts = []
    for k in range(values):
        reg = registers("s", 2 if k % 7 == 3 else 1)
        for d in range(reg.size):
            insts.append(MInst("s_mov_b32", [reg.dword(d)], [Imm.int(1000 + 17 * k + d)]))
        defined.append(reg)
    total = registers("s")
    insts.append(MInst("s_mov_b32", [total.all()], [Imm.int(0)]))
    for a, b in picks + [(k, k) for k in range(values)]:   # every value is read at the end
        x, y = defined[a % values], defined[b % values]
        pair = registers("s")
        insts.append(MInst("s_add_u32", [pair.all()], [x.dword(x.size - 1), y.dword(0)]))
        after = registers("s")
        insts.append(MInst("s_add_u32", [after.all()], [total.all(), pair.all()]))
        total = after
    out = registers("v")
    insts.append(MInst("v_mov_b32", [out.all()], [total.all()]))
    return insts, out


def evaluate(insts: list[MInst], place) -> int:
    """Runs s_mov_b32, s_add_u32, v_mov_b32 and the lane moves on register cells named by
    `place(sub, k)`; the last v_mov_b32's value."""
    cells: dict = {}
    read = lambda o, k=0: o.value & M32 if isinstance(o, Imm) else cells[place(o, k)]  # noqa: E731
    result = None
    for inst in insts:
        if inst.opcode in ("s_mov_b32", "v_mov_b32"):
            cells[place(inst.defs[0], 0)] = result = read(inst.uses[0])
        elif inst.opcode == "s_add_u32":
            cells[place(inst.defs[0], 0)] = (read(inst.uses[0]) + read(inst.uses[1])) & M32
        elif inst.opcode == "v_writelane_b32":
            cells[place(inst.defs[0], 0) + (inst.uses[1].value,)] = read(inst.uses[0])
        elif inst.opcode == "v_readlane_b32":
            cells[place(inst.defs[0], 0)] = cells[place(inst.uses[0], 0) + (inst.uses[1].value,)]
        else:
            raise AssertionError(inst.opcode)
    return result


@settings(max_examples=25, deadline=None)
@given(st.integers(80, 200), st.lists(st.tuples(st.integers(0, 500), st.integers(0, 500)), max_size=30))
def test_spilled_programs_compute_what_the_virtual_ones_do(values, picks):
    registers = Registers()
    insts, _ = program(registers, values, picks)
    expected = evaluate(insts, lambda o, k: ("virtual", o.reg.id, o.start + k))
    spilled, assignment = allocate_spilling(insts, registers, "gfx942")
    assert_placement(spilled, assignment, {"s": SGPR_LIMIT["gfx942"]})
    assert evaluate(spilled, lambda o, k: (o.bank, assignment[o.reg] + o.start + k)) == expected
    try:
        allocate(insts, "gfx942")
        fits = True
    except TargetResourceError:
        fits = False
    assert (spilled == insts) == fits   # spilling only where the SGPRs ran out


@pytest.mark.parametrize("target, lanes", [("gfx942", 64), ("gfx1100", 32)])
def test_many_spilled_dwords_take_several_spill_vgprs(target, lanes):
    """A spill VGPR holds one dword per lane of the target's wave."""
    registers = Registers()
    insts, _ = program(registers, 300, [])
    spilled, assignment = allocate_spilling(insts, registers, target)
    spill_vgprs = {i.defs[0].reg for i in spilled if i.opcode == "v_writelane_b32"}
    used_lanes = {i.uses[1].value for i in spilled if i.opcode == "v_writelane_b32"}
    assert len(spill_vgprs) >= 3 and max(used_lanes) == lanes - 1
    assert evaluate(spilled, lambda o, k: (o.bank, assignment[o.reg] + o.start + k)) == \
        evaluate(insts, lambda o, k: ("virtual", o.reg.id, o.start + k))


def test_running_out_of_vgprs_and_agprs_fails():
    """More live 32-bit values than the 512 registers of the unified file (VGPRs, then AGPRs)."""
    registers = Registers()
    values = [registers("v") for _ in range(600)]
    insts = [MInst("v_mov_b32", [v.all()], [Imm.int(k)]) for k, v in enumerate(values)]
    total = registers("v")
    insts += [MInst("v_add_u32", [total.all()], [v.all(), Imm.int(1)]) for v in values]
    with pytest.raises(TargetResourceError) as e:
        allocate_spilling(insts, registers, "gfx942", "big")
    assert e.value.name == "AGPRs" and e.value.limit == 256 and e.value.required > 256 and "big" in str(e.value)
    assert "VGPRs are full" in str(e.value)
