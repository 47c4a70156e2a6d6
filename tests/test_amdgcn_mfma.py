"""MFMA on gfx942: the lane layouts of tile.ir.mfma_layouts against the ISA's tables
(property-tested), the instructions in the table and their wait states, and a hand-built
kernel per instruction that assembles, links and computes D = A x B + C on the wave model."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.codegen.amdgcn import AmdgcnKernel, assemble
from tile.codegen.amdgcn.isa import MFMA_SHAPES
from tile.codegen.amdgcn.isel import KernArg, Selection
from tile.codegen.amdgcn.kernel_object import kernel_text
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, Label, MInst, Reg, Sub
from tile.codegen.amdgcn.regalloc import allocate
from tile.codegen.amdgcn.waitcnt import insert_nops, insert_waits
from tile.ir.mfma_layouts import mfma_operand_layout, mfma_result_layout

from amdgcn_sim import Simulator

SHAPES = list(MFMA_SHAPES.values())


# the ISA's description, written out per element (CDNA3 ISA 7.1 layouts)
def isa_a(m, k, lane, j):
    return lane % m, 4 * (lane // m) + j


def isa_b(n, k, lane, j):
    return 4 * (lane // n) + j, lane % n


def isa_d(m, n, lane, r):
    return 4 * (64 // n) * (r // 4) + 4 * (lane // n) + r % 4, lane % n


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SHAPES), st.integers(0, 63), st.integers(0, 15))
def test_layouts_match_the_isa_tables(shape, lane, register):
    a = mfma_operand_layout(0, shape.m, shape.k)
    b = mfma_operand_layout(1, shape.n, shape.k)
    d = mfma_result_layout(shape.m, shape.n)
    j, r = register % 4, register % shape.result_dwords
    assert a.apply(j, lane, 0) == isa_a(shape.m, shape.k, lane, j)
    assert b.apply(j, lane, 0) == isa_b(shape.n, shape.k, lane, j)
    assert d.apply(r, lane, 0) == isa_d(shape.m, shape.n, lane, r)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
def test_each_element_has_one_owner(shape):
    for layout in (mfma_operand_layout(0, shape.m, shape.k), mfma_operand_layout(1, shape.n, shape.k),
                   mfma_result_layout(shape.m, shape.n)):
        assert layout.num_lanes == 64 and layout.num_warps == 1
        assert sorted(layout.flat_coords().reshape(-1)) == list(range(layout.numel))
    assert mfma_result_layout(shape.m, shape.n).num_registers == shape.result_dwords
    assert mfma_operand_layout(0, shape.m, shape.k).num_registers == 2 * shape.operand_dwords


def test_layouts_refuse_other_waves_and_shapes():
    with pytest.raises(ValueError, match="waves of 64 lanes, not 32"):
        mfma_result_layout(32, 32, wave_size=32)
    with pytest.raises(ValueError, match="waves of 64 lanes, not 32"):
        mfma_operand_layout(0, 16, 16, wave_size=32)
    with pytest.raises(ValueError, match="no 16-bit MFMA operand is 32 x 16"):
        mfma_operand_layout(0, 32, 16)
    with pytest.raises(ValueError, match="no MFMA result is 4 x 16"):
        mfma_result_layout(4, 16)


def test_mfma_operands_are_checked():
    d, a, c = Reg("v", 16, 1), Reg("v", 2, 2), Reg("v", 4, 3)
    MInst("v_mfma_f32_32x32x8_f16", [d.all()], [a.all(), a.all(), d.all()])
    with pytest.raises(ValueError, match="is not a vsrc16 operand"):
        MInst("v_mfma_f32_32x32x8_f16", [d.all()], [a.all(), a.all(), c.all()])
    with pytest.raises(ValueError, match="is not a vdst4 operand"):
        MInst("v_mfma_f32_16x16x16_bf16", [d.all()], [a.all(), a.all(), c.all()])


def _nops_before(insts, k):
    """Wait states of the s_nops right before instruction `k` of `insts`."""
    total = 0
    while k > 0 and insts[k - 1].opcode == "s_nop":
        k -= 1
        total += insts[k].uses[0].value + 1
    return total


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
def test_mfma_results_wait_passes_plus_three(shape):
    d, a, b, v = (Reg("v", n, i) for i, n in enumerate((shape.result_dwords, 2, 2, 1)))
    mfma = MInst(shape.mnemonic, [d.all()], [a.all(), b.all(), d.all()])
    chain = insert_nops([mfma, MInst(shape.mnemonic, [d.all()], [a.all(), b.all(), d.all()])])
    assert [i.opcode for i in chain] == [shape.mnemonic] * 2   # accumulation back to back: no wait
    read = MInst("v_add_f32", [v.all()], [d.dword(1), d.dword(1)])
    unrelated = MInst("v_add_f32", [v.all()], [a.dword(0), a.dword(0)])
    out = insert_nops([mfma, unrelated, read])
    assert _nops_before(out, len(out) - 1) == shape.passes + 2 and _nops_before(out, 2) == 0
    assert all(i.uses[0].value <= 7 for i in out if i.opcode == "s_nop")
    other = Reg("v", shape.result_dwords, 9)
    as_a = insert_nops([mfma, MInst(shape.mnemonic, [other.all()], [Sub(d, 2, 2), b.all(), other.all()])])
    assert _nops_before(as_a, len(as_a) - 1) == shape.passes + 3
    at_label = insert_nops([mfma, MInst("label", [], [Label("loop")])])
    assert _nops_before(at_label, len(at_label) - 1) == shape.passes + 3


def mfma_kernel(shape) -> AmdgcnKernel:
    """A kernel of one wave: lane l loads its A and B values and C (lane-major buffers a, b,
    cd), runs the MFMA once, and stores D over C."""
    insts: list[MInst] = []
    count = iter(range(100, 1000))

    def reg(bank, size=1, fixed=None):
        return Reg(bank, size, next(count), fixed)

    def emit(opcode, defs, uses, **mods):
        insts.append(MInst(opcode, defs, uses, mods))

    kernarg, lane = reg("s", 2, 0), reg("v", 1, 0)
    a, b, c = reg("v", shape.operand_dwords), reg("v", shape.operand_dwords), reg("v", shape.result_dwords)
    addresses = []
    for index, dwords in enumerate((shape.operand_dwords, shape.operand_dwords, shape.result_dwords)):
        base, offset, address = reg("s", 2), reg("v"), reg("v", 2)
        emit("s_load_dwordx2", [base.all()], [kernarg.all(), Imm.int(8 * index)])
        emit("v_lshlrev_b32", [offset.all()], [Imm.int((4 * dwords).bit_length() - 1), lane.all()])
        emit("v_add_co_u32", [address.dword(0), VCC], [base.dword(0), offset.all()])
        emit("v_mov_b32", [address.dword(1)], [base.dword(1)])   # one SGPR source with vcc: the constant bus
        emit("v_addc_co_u32", [address.dword(1), VCC], [Imm.int(0), address.dword(1), VCC])
        addresses.append(address)
    for value, address in ((a, addresses[0]), (b, addresses[1])):
        emit(f"global_load_dwordx{shape.operand_dwords}", [value.all()], [address.all(), OFF])
    for first in range(0, shape.result_dwords, 4):
        emit("global_load_dwordx4", [Sub(c, first, 4)], [addresses[2].all(), OFF], offset=4 * first)
    emit(shape.mnemonic, [c.all()], [a.all(), b.all(), c.all()])
    for first in range(0, shape.result_dwords, 4):
        emit("global_store_dwordx4", [], [addresses[2].all(), Sub(c, first, 4), OFF], offset=4 * first)
    emit("s_endpgm", [], [])
    kernargs = [KernArg(name, 8 * i, 8, "global_buffer", "global") for i, name in enumerate("a b cd".split())]
    sel = Selection("mfma_" + shape.mnemonic[7:], insts, kernargs, 24, (0,), 64, 0)
    assignment = allocate(insts, "gfx942", sel.name)
    final = insert_nops(insert_waits(insts, assignment), assignment)
    return AmdgcnKernel(sel, final, assignment, kernel_text(sel, final, assignment, "gfx942"))


def _fragments(layout, matrix, dtype):
    """Lane-major registers of `layout` holding `matrix`: [64 lanes, registers]."""
    coords = layout.element_coords()[0]                  # [lanes, registers, 2]
    return np.ascontiguousarray(matrix[coords[..., 0], coords[..., 1]].astype(dtype))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
def test_mfma_kernel_assembles_and_computes_on_the_wave_model(shape):
    kernel = mfma_kernel(shape)
    assert shape.mnemonic in kernel.text and b"ELF" in assemble(kernel.text, "gfx942")[:4]
    rng = np.random.default_rng(shape.m + shape.k)
    a = rng.standard_normal((shape.m, shape.k)).astype(np.float32)
    b = rng.standard_normal((shape.k, shape.n)).astype(np.float32)
    c = rng.standard_normal((shape.m, shape.n)).astype(np.float32)
    if shape.operand_type == "bf16":   # inputs that bf16 holds exactly, passed as their upper halves
        a, b = [(x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for x in (a, b)]
        a_frag, b_frag = (_fragments(layout, x.view(np.uint32) >> np.uint32(16), np.uint16) for layout, x in
                          ((mfma_operand_layout(0, shape.m, shape.k), a), (mfma_operand_layout(1, shape.n, shape.k), b)))
    else:
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
        a_frag = _fragments(mfma_operand_layout(0, shape.m, shape.k), a, np.float16)
        b_frag = _fragments(mfma_operand_layout(1, shape.n, shape.k), b, np.float16)
    result_layout = mfma_result_layout(shape.m, shape.n)
    cd = _fragments(result_layout, c, np.float32)
    Simulator(kernel, [a_frag.view(np.uint32), b_frag.view(np.uint32), cd]).run()
    got = np.full((shape.m, shape.n), np.nan)
    coords = result_layout.element_coords()[0]
    got[coords[..., 0], coords[..., 1]] = cd
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
