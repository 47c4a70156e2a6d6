"""WMMA on gfx1100: the lane layouts of tile.ir.wmma_layouts against the RDNA3 ISA's table
(property-tested), the workgroup layouts #wmma / #wmma_op, the instructions in the table with
their one hazard, and a hand-built kernel per instruction that assembles with llvm-mc and
computes a chain of two D = A x B + C on the wave model against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amdgcn_util import needs_llvm
from tile.codegen.amdgcn import AmdgcnKernel, UnsupportedOnTarget, assemble, compile_amdgcn
from tile.codegen.amdgcn.isa import INSTRUCTIONS, WMMA_SHAPES
from tile.codegen.amdgcn.isel import KernArg, Selection
from tile.codegen.amdgcn.kernel_object import kernel_text
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, MInst, Reg, Sub
from tile.codegen.amdgcn.rdna3 import insert_rdna3_waits
from tile.codegen.amdgcn.regalloc import allocate
from tile.codegen.amdgcn.waitcnt import insert_waits
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_machine import run_amdgcn
from tile.ir import parse_op
from tile.ir.types import parse_type
from tile.ir.wmma_layouts import WmmaLayout, WmmaOperandLayout, wmma_operand_layout, wmma_result_layout

SHAPES = list(WMMA_SHAPES.values())


# the RDNA3 ISA's description (7.9, WMMA), written out per element
def isa_a(lane, value):
    return lane % 16, value


def isa_b(lane, value):
    return value, lane % 16


def isa_d(lane, register):
    return 2 * register + lane // 16, lane % 16


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 31), st.integers(0, 15))
def test_layouts_match_the_isa_table(lane, value):
    assert wmma_operand_layout(0).apply(value, lane, 0) == isa_a(lane, value)
    assert wmma_operand_layout(1).apply(value, lane, 0) == isa_b(lane, value)
    register = value % 8
    assert wmma_result_layout().apply(register, lane, 0) == isa_d(lane, register)


def test_d_has_one_owner_per_element_and_the_halves_repeat_a_and_b():
    d = wmma_result_layout()
    assert d.num_lanes == 32 and d.num_registers == 8
    assert sorted(d.flat_coords().reshape(-1)) == list(range(256))
    for op_idx in (0, 1):
        operand = wmma_operand_layout(op_idx)
        coords = operand.flat_coords()[0]                      # [lanes, values]
        assert operand.num_registers == 16 and np.array_equal(coords[:16], coords[16:])
        assert sorted(coords[:16].reshape(-1)) == list(range(256))
        assert operand.replicated_lane_mask == 1 << 4


def test_layouts_refuse_other_waves():
    with pytest.raises(ValueError, match="waves of 32 lanes, not 64"):
        wmma_result_layout(wave_size=64)
    with pytest.raises(ValueError, match="A \\(0\\) or B \\(1\\), not 2"):
        wmma_operand_layout(2)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)]), st.integers(0, 2), st.integers(0, 2),
       st.integers(0, 2), st.data())
def test_workgroup_layouts_hold_each_wave_s_instruction_tiles(waves, rep_m, rep_n, rep_k, data):
    """Register 8 * (i + reps_m * j) + r of the result in warp w is register r of the instruction
    tile (i, j) of that wave; register 16 * (s + steps * i) + v of A is value v of k-step s of
    tile row i; A is the same in the waves of a row, B in the waves of a column."""
    wm, wn = waves
    reps_m, reps_n, steps = 1 << rep_m, 1 << rep_n, 1 << rep_k
    m, n, k = 16 * wm * reps_m, 16 * wn * reps_n, 16 * steps
    result = WmmaLayout(waves)
    d, a, b = (result.to_linear((m, n)), WmmaOperandLayout(0, result).to_linear((m, k)),
               WmmaOperandLayout(1, result).to_linear((k, n)))
    assert d.num_warps == a.num_warps == b.num_warps == wm * wn and d.num_lanes == 32
    assert sorted(d.flat_coords().reshape(-1)) == list(range(m * n))
    warp = data.draw(st.integers(0, wm * wn - 1))
    wave_m, wave_n = warp % wm, warp // wm
    lane = data.draw(st.integers(0, 31))
    i, j, s = data.draw(st.integers(0, reps_m - 1)), data.draw(st.integers(0, reps_n - 1)), \
        data.draw(st.integers(0, steps - 1))
    r, v = data.draw(st.integers(0, 7)), data.draw(st.integers(0, 15))
    row, col = isa_d(lane, r)
    assert d.apply(8 * (i + reps_m * j) + r, lane, warp) == (16 * (wave_m + wm * i) + row, 16 * (wave_n + wn * j) + col)
    a_row, a_k = isa_a(lane, v)
    assert a.apply(16 * (s + steps * i) + v, lane, warp) == (16 * (wave_m + wm * i) + a_row, 16 * s + a_k)
    b_k, b_col = isa_b(lane, v)
    assert b.apply(16 * (s + steps * j) + v, lane, warp) == (16 * s + b_k, 16 * (wave_n + wn * j) + b_col)


@pytest.mark.parametrize("waves, shape", [((2, 2), (32, 16)), ((1, 8), (16, 16)), ((4, 2), (32, 64)),
                                          ((2, 4), (64, 32))])
def test_waves_past_the_tiles_repeat_them(waves, shape):
    """A wave whose grid position lies past the result's tiles holds what the wave at that
    position modulo the tiles holds, in the result and in both operands; every element is held."""
    wm, wn = waves
    (m, n), k = shape, 32
    tiles_m, tiles_n = m // 16, n // 16
    result = WmmaLayout(waves)
    for layout, dims in ((result.to_linear((m, n)), (m, n)), (WmmaOperandLayout(0, result).to_linear((m, k)), (m, k)),
                         (WmmaOperandLayout(1, result).to_linear((k, n)), (k, n))):
        coords = layout.element_coords()    # [warps, lanes, registers, 2]
        held = {tuple(c) for c in coords.reshape(-1, 2)}
        assert len(held) == dims[0] * dims[1]
        for warp in range(wm * wn):
            wave_m, wave_n = warp % wm, warp // wm
            first = wave_m % tiles_m + wm * (wave_n % tiles_n)
            assert np.array_equal(coords[warp], coords[first])


def test_wmma_layouts_print_and_parse():
    for text in ("#wmma<wpc = [2, 1]>", "#wmma_op<op_idx = 1, parent = #wmma<wpc = [1, 4]>>"):
        t = parse_type(f"tensor<32x64xf32, {text}>")
        assert str(t.layout) == text
    with pytest.raises(ValueError, match="does not tile a \\[24, 16\\] tensor"):
        WmmaLayout((1, 1)).to_linear((24, 16))


def test_wmma_rows_and_their_hazard():
    for shape in SHAPES:
        row = INSTRUCTIONS[shape.mnemonic]
        assert row.targets == ("gfx1100",) and row.defs == ("vdst8",) and row.uses == ("vsrc8",) * 3
    d, a, b = Reg("v", 8, 1), Reg("v", 8, 2), Reg("v", 8, 3)
    first = MInst(SHAPES[0].mnemonic, [d.all()], [a.all(), b.all(), d.all()])
    chain = MInst(SHAPES[0].mnemonic, [d.all()], [a.all(), b.all(), d.all()])       # D as C: no hazard
    reads_d = MInst(SHAPES[0].mnemonic, [a.all()], [d.all(), b.all(), a.all()])     # D as A: one v_nop
    assert [i.opcode for i in insert_rdna3_waits([first, chain])] == [first.opcode] * 2
    assert [i.opcode for i in insert_rdna3_waits([first, reads_d])] == [first.opcode, "v_nop", first.opcode]
    between = MInst("v_mov_b32", [Reg("v", 1, 9).all()], [Imm.int(0)])             # a VALU op between: none
    assert [i.opcode for i in insert_rdna3_waits([first, between, reads_d])] == [first.opcode, "v_mov_b32",
                                                                                  first.opcode]


def wmma_kernel(shape) -> AmdgcnKernel:
    """A kernel of one wave of 32: lane l loads its A and B values and C (lane-major buffers a,
    b, cd), runs D = A x B + C and then D = A x B + D (the accumulation chain), and stores D
    over C."""
    insts: list[MInst] = []
    count = iter(range(100, 1000))

    def reg(bank, size=1, fixed=None):
        return Reg(bank, size, next(count), fixed)

    def emit(opcode, defs, uses, **mods):
        insts.append(MInst(opcode, defs, uses, mods))

    kernarg, lane = reg("s", 2, 0), reg("v", 1, 0)
    a, b, c = reg("v", 8), reg("v", 8), reg("v", 8)
    addresses = []
    for index in range(3):
        base, offset, address = reg("s", 2), reg("v"), reg("v", 2)
        emit("s_load_dwordx2", [base.all()], [kernarg.all(), Imm.int(8 * index)])
        emit("v_lshlrev_b32", [offset.all()], [Imm.int(5), lane.all()])   # 8 dwords per lane
        emit("v_add_co_u32", [address.dword(0), VCC], [base.dword(0), offset.all()])
        emit("v_mov_b32", [address.dword(1)], [base.dword(1)])
        emit("v_addc_co_u32", [address.dword(1), VCC], [Imm.int(0), address.dword(1), VCC])
        addresses.append(address)
    for value, address in ((a, addresses[0]), (b, addresses[1]), (c, addresses[2])):
        for first in (0, 4):
            emit("global_load_dwordx4", [Sub(value, first, 4)], [address.all(), OFF], offset=4 * first)
    emit(shape.mnemonic, [c.all()], [a.all(), b.all(), c.all()])
    emit(shape.mnemonic, [c.all()], [a.all(), b.all(), c.all()])
    for first in (0, 4):
        emit("global_store_dwordx4", [], [addresses[2].all(), Sub(c, first, 4), OFF], offset=4 * first)
    emit("s_endpgm", [], [])
    kernargs = [KernArg(name, 8 * i, 8, "global_buffer", "global") for i, name in enumerate("a b cd".split())]
    sel = Selection("wmma_" + shape.operand_type, insts, kernargs, 24, (0,), 32, 0)
    assignment = allocate(insts, shape.target, sel.name)
    final = insert_rdna3_waits(insert_waits(insts, assignment, shape.target), assignment, shape.target)
    return AmdgcnKernel(sel, final, assignment, kernel_text(sel, final, assignment, shape.target))


def _fragments(layout, matrix, dtype):
    """Lane-major registers of `layout` holding `matrix`: [32 lanes, registers]."""
    coords = layout.element_coords()[0]
    return np.ascontiguousarray(matrix[coords[..., 0], coords[..., 1]].astype(dtype))


def _operands(shape, rng):
    a, b, c = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(3))
    if shape.operand_type == "bf16":   # values bf16 holds exactly, passed as their upper halves
        a, b = [(x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for x in (a, b)]
        frags = [_fragments(wmma_operand_layout(i), x.view(np.uint32) >> np.uint32(16), np.uint16)
                 for i, x in enumerate((a, b))]
    else:
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
        frags = [_fragments(wmma_operand_layout(i), x, np.float16) for i, x in enumerate((a, b))]
    return a, b, c, frags


@needs_llvm
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
def test_wmma_kernel_assembles_and_computes_on_the_wave_model(shape):
    kernel = wmma_kernel(shape)
    assert shape.mnemonic in kernel.text and b"ELF" in assemble(kernel.text, shape.target)[:4]
    a, b, c, (a_frag, b_frag) = _operands(shape, np.random.default_rng(16))
    cd = _fragments(wmma_result_layout(), c, np.float32)
    run_amdgcn(kernel.text, 1, [a_frag.view(np.uint32), b_frag.view(np.uint32), cd])
    got = np.full((16, 16), np.nan)
    coords = wmma_result_layout().element_coords()[0]
    got[coords[..., 0], coords[..., 1]] = cd
    np.testing.assert_allclose(got, 2 * (a.astype(np.float64) @ b.astype(np.float64)) + c, rtol=1e-5, atol=1e-5)


@needs_llvm
def test_halves_of_the_wave_that_disagree_on_a_are_an_error():
    shape = SHAPES[0]
    kernel = wmma_kernel(shape)
    _, _, c, (a_frag, b_frag) = _operands(shape, np.random.default_rng(17))
    a_frag[20, 3] += 1   # lane 20 no longer repeats lane 4
    with pytest.raises(EmulatorError, match="lane 20 holds other A values than lane 4"):
        run_amdgcn(kernel.text, 1, [a_frag.view(np.uint32), b_frag.view(np.uint32), _fragments(wmma_result_layout(),
                                                                                               c, np.float32)])


def _simt_wmma(atype: str, chained: bool, under_if: bool = False) -> str:
    """A simt kernel of one wave: lane t loads its 8 A words, 8 B words and 8 C values (lane-major
    buffers, 32 bytes a lane), runs simt.wmma (twice, accumulating, if `chained`), stores D over C."""
    lines = ["  %t = simt.tid : i32", "  %true = arith.constant {value = true} : i1"]
    for name, ty in (("a", "i32"), ("b", "i32"), ("c", "f32")):
        lines.append(f"  %p{name} = simt.addptr %{name}, %t {{scale = 32}} : ptr<{ty}>")
        for half in (0, 1):
            values = ", ".join(f"%{name}{4 * half + k}" for k in range(4))
            lines.append(f"  {values} = simt.ld_global %p{name}, %true {{offset = {16 * half}, vector = 4}} : "
                         + ", ".join([ty] * 4))
    operands = lambda c: ", ".join([f"%a{k}" for k in range(8)] + [f"%b{k}" for k in range(8)] + c)  # noqa: E731
    first = [f"%d{k}" for k in range(8)]
    wmma = f"simt.wmma {operands([f'%c{k}' for k in range(8)])} {{atype = \"{atype}\"}} : " + ", ".join(["f32"] * 8)
    if under_if:
        lines.append('  %cond = arith.cmp %t, %t {predicate = "eq"} : i1')
        lines.append(f"  {', '.join(first)} = scf.if %cond : {', '.join(['f32'] * 8)} {{")
        lines.append(f"    {', '.join(first)} = {wmma}")
        lines.append(f"    scf.yield {', '.join(first)}")
        lines.append("  } {")
        lines.append(f"    scf.yield {', '.join(f'%c{k}' for k in range(8))}")
        lines.append("  }")
    else:
        lines.append(f"  {', '.join(first)} = {wmma}")
    result = first
    if chained:
        result = [f"%e{k}" for k in range(8)]
        lines.append(f"  {', '.join(result)} = simt.wmma {operands(first)} {{atype = \"{atype}\"}} : "
                     + ", ".join(["f32"] * 8))
    for half in (0, 1):
        lines.append(f"  simt.st_global %pc, %true, {', '.join(result[4 * half:4 * half + 4])} "
                     f"{{offset = {16 * half}, vector = 4}}")
    body = "\n".join(lines)
    return (f'simt.func {{arg_names = ["a", "b", "c"], num_warps = 1, shared_bytes = 0, sym_name = "wmma"}} {{\n'
            f"^bb(%a: ptr<i32>, %b: ptr<i32>, %c: ptr<f32>):\n{body}\n  simt.return\n}}")


@needs_llvm
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
@pytest.mark.parametrize("chained", [False, True])
def test_simt_wmma_is_selected_and_computes_on_the_wave_model(shape, chained):
    """The selector's simt.wmma: operand tuples gathered from the loads, C overwritten in place,
    the second WMMA of a chain reading the first's D as C (no v_nop)."""
    compiled = compile_amdgcn(parse_op(_simt_wmma(shape.operand_type, chained)), "gfx1100")
    text = compiled.text
    assert text.count(shape.mnemonic) == 1 + chained and "v_nop" not in text
    assert b"ELF" in assemble(text, "gfx1100")[:4]
    a, b, c, (a_frag, b_frag) = _operands(shape, np.random.default_rng(18 + chained))
    cd = _fragments(wmma_result_layout(), c, np.float32)
    run_amdgcn(text, 1, [a_frag.view(np.uint32), b_frag.view(np.uint32), cd])
    got = np.full((16, 16), np.nan)
    coords = wmma_result_layout().element_coords()[0]
    got[coords[..., 0], coords[..., 1]] = cd
    want = (1 + chained) * (a.astype(np.float64) @ b.astype(np.float64)) + c
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_simt_wmma_elsewhere_is_refused_by_name():
    with pytest.raises(UnsupportedOnTarget, match="gfx942: .* simt.wmma on f16 \\(no WMMA instruction on this target\\)"):
        compile_amdgcn(parse_op(_simt_wmma("f16", False)), "gfx942")
    with pytest.raises(UnsupportedOnTarget, match="simt.wmma under scf.if \\(WMMA needs every lane of the wave\\)"):
        compile_amdgcn(parse_op(_simt_wmma("f16", False, under_if=True)), "gfx1100")
