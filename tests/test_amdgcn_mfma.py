"""MFMA on gfx942: the lane layouts of tile.ir.mfma_layouts against the ISA's tables
(property-tested), the instructions in the table and their wait states, and a hand-built
kernel per instruction that assembles, links and computes D = A x B + C on the wave model."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import AmdgcnKernel, UnsupportedOnTarget, assemble, compile_amdgcn, emit_amdgcn
from tile.compiler import compile_kernel
from tile.codegen.amdgcn.isa import MFMA_SHAPES
from tile.codegen.amdgcn.isel import KernArg, Selection
from tile.codegen.amdgcn.kernel_object import kernel_text
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, Label, MInst, Reg, Sub
from tile.codegen.amdgcn.regalloc import allocate
from tile.codegen.amdgcn.waitcnt import insert_nops, insert_waits
from tile.ir import TensorType, f16, parse_op
from tile.ir.mfma_layouts import MfmaLayout, MfmaOperandLayout, mfma_operand_layout, mfma_result_layout
from tile.ir.types import parse_type
from tile.emulator.amdgcn_machine import run_amdgcn

from amdgcn_util import named

SHAPES = [s for s in MFMA_SHAPES.values() if s.values_per_lane == 4]   # 16-bit A and B (fp8: test_amdgcn_fp8)


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
    with pytest.raises(ValueError, match="is not a avsrc16 operand"):
        MInst("v_mfma_f32_32x32x8_f16", [d.all()], [a.all(), a.all(), c.all()])
    with pytest.raises(ValueError, match="is not a avdst4 operand"):
        MInst("v_mfma_f32_16x16x16_bf16", [d.all()], [a.all(), a.all(), c.all()])
    acc, a_in_agprs = Reg("a", 16, 4), Reg("a", 2, 5)
    MInst("v_mfma_f32_32x32x8_f16", [acc.all()], [a.all(), a.all(), acc.all()])   # C and D in AGPRs
    with pytest.raises(ValueError, match="must all be in one file"):   # one ACC_CD bit for both
        MInst("v_mfma_f32_32x32x8_f16", [d.all()], [a.all(), a.all(), acc.all()])
    with pytest.raises(ValueError, match="is not a vsrc2 operand"):   # A and B: VGPRs
        MInst("v_mfma_f32_32x32x8_f16", [acc.all()], [a_in_agprs.all(), a.all(), acc.all()])


def test_valu_results_wait_two_states_before_an_mfma_reads_them():
    shape = MFMA_SHAPES["v_mfma_f32_16x16x16_f16"]
    d, a, b, other = Reg("v", 4, 1), Reg("v", 2, 2), Reg("v", 2, 3), Reg("v", 1, 4)
    write_a = MInst("v_mov_b32", [a.dword(1)], [Imm.int(1)])
    write_other = MInst("v_mov_b32", [other.all()], [Imm.int(1)])
    mfma = MInst(shape.mnemonic, [d.all()], [a.all(), b.all(), d.all()])
    assert _nops_before(insert_nops([write_a, mfma]), 2) == 2
    assert _nops_before(insert_nops([write_a, write_other, mfma]), 3) == 1
    assert [i.opcode for i in insert_nops([write_other, mfma])] == ["v_mov_b32", shape.mnemonic]


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
    assignment = allocate(insts, shape.target, sel.name)
    final = insert_nops(insert_waits(insts, assignment), assignment)
    return AmdgcnKernel(sel, final, assignment, kernel_text(sel, final, assignment, shape.target))


def _fragments(layout, matrix, dtype):
    """Lane-major registers of `layout` holding `matrix`: [64 lanes, registers]."""
    coords = layout.element_coords()[0]                  # [lanes, registers, 2]
    return np.ascontiguousarray(matrix[coords[..., 0], coords[..., 1]].astype(dtype))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.mnemonic)
def test_mfma_kernel_assembles_and_computes_on_the_wave_model(shape):
    kernel = mfma_kernel(shape)
    assert shape.mnemonic in kernel.text and b"ELF" in assemble(kernel.text, shape.target)[:4]
    rng = np.random.default_rng(shape.m + shape.k)
    a = rng.standard_normal((shape.m, shape.k)).astype(np.float32)
    b = rng.standard_normal((shape.k, shape.n)).astype(np.float32)
    c = rng.standard_normal((shape.m, shape.n)).astype(np.float32)
    if shape.operand_type == "bf16":   # inputs that bf16 holds exactly, passed as their upper halves
        a, b = [(x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for x in (a, b)]
        layouts = (mfma_operand_layout(0, shape.m, shape.k), mfma_operand_layout(1, shape.n, shape.k))
        a_frag, b_frag = (_fragments(layout, x.view(np.uint32) >> np.uint32(16), np.uint16)
                          for layout, x in zip(layouts, (a, b)))
    else:
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
        a_frag = _fragments(mfma_operand_layout(0, shape.m, shape.k), a, np.float16)
        b_frag = _fragments(mfma_operand_layout(1, shape.n, shape.k), b, np.float16)
    result_layout = mfma_result_layout(shape.m, shape.n)
    cd = _fragments(result_layout, c, np.float32)
    run_amdgcn(kernel.text, 1, [a_frag.view(np.uint32), b_frag.view(np.uint32), cd])
    got = np.full((shape.m, shape.n), np.nan)
    coords = result_layout.element_coords()[0]
    got[coords[..., 0], coords[..., 1]] = cd
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- tl.dot on gfx942

@tile.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BLOCK_K: tl.constexpr,
               DTYPE: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :]).to(DTYPE)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :]).to(DTYPE)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def compile_dot(args, num_warps, target="gfx942", **constexprs):
    spec, _ = dot_kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": 1, "maxnreg": None}
    simt = compile_kernel(dot_kernel, spec, options, target, until="amdgcn").func
    return compile_amdgcn(simt, target)


@pytest.mark.parametrize("m, n, k, block_k, num_warps, dtype, mnemonic", [   # num_warps: waves of 64
    (32, 32, 16, 16, 2, "f16", "v_mfma_f32_16x16x16_f16"),
    (32, 32, 32, 16, 1, "f16", "v_mfma_f32_32x32x8_f16"),
    (64, 64, 32, 16, 2, "f16", "v_mfma_f32_32x32x8_f16"),
    (32, 64, 64, 32, 2, "bf16", "v_mfma_f32_16x16x16_bf16"),
    (32, 32, 16, 16, 2, "f16", "v_mfma_f32_16x16x16f16"),        # gfx90a's names for the same shapes
    (64, 64, 32, 16, 2, "f16", "v_mfma_f32_32x32x8f16"),
    (32, 64, 64, 32, 2, "bf16", "v_mfma_f32_16x16x16bf16_1k"),
])
def test_dot_selects_mfma_and_computes_on_the_wave_model(m, n, k, block_k, num_warps, dtype, mnemonic):
    """Inputs exact in the operand type (f16 arrays; bf16 from f32 arrays that bf16 holds)."""
    rng = np.random.default_rng(m * n + k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    if dtype == "bf16":
        a, b = [(x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for x in (a, b)]
        a_in, b_in = a, b
    else:
        a_in, b_in = a.astype(np.float16), b.astype(np.float16)
        a, b = a_in.astype(np.float32), b_in.astype(np.float32)
    out = c.copy()
    shape = MFMA_SHAPES[mnemonic]
    compiled = compile_dot([a_in, b_in, out], num_warps, shape.target, M=m, N=n, K=k, BLOCK_K=block_k,
                           DTYPE=tl.bfloat16 if dtype == "bf16" else tl.float16)
    mfmas = [line.split()[0] for line in compiled.text.splitlines() if line.strip().startswith("v_mfma")]
    # the program of one wave (a warp), its loop body once
    assert mfmas == [mnemonic] * (m * n // (shape.m * shape.n * num_warps) * block_k // shape.k)
    assert b"ELF" in assemble(compiled.text, shape.target)[:4]
    run_amdgcn(compiled.text, 1, named(dot_kernel, [a_in, b_in, out]))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-4)


def test_mfma_layouts_print_and_parse():
    result = MfmaLayout(32, (2, 1))
    for layout in (result, MfmaOperandLayout(0, result), MfmaOperandLayout(1, result)):
        t = TensorType((64, 64), f16, layout)
        assert parse_type(str(t)) == t
    assert str(MfmaOperandLayout(1, result)) == "#mfma_op<op_idx = 1, parent = #mfma<instr = 32, wpc = [2, 1]>>"
    with pytest.raises(ValueError, match="does not tile a \\[32, 64\\] tensor"):
        result.to_linear((32, 64))
    with pytest.raises(ValueError, match="unsupported mfma layout"):
        MfmaLayout(8, (1, 1))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([32, 16]), st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)]),
       st.integers(0, 2), st.integers(0, 2), st.integers(0, 2))
def test_workgroup_layouts_hold_each_wave_s_instruction_tiles(instr, waves, rep_m, rep_n, rep_k):
    """Over the lowering's warps, each a wave of 64 lanes: warp w is wave w; in each wave, register
    R * (i + reps_m * j) + r of the result is the ISA's register r of the tile at (i, j), and
    A's register 4 * (s + steps * i) + v is value v of k-step s of tile row i (B alike)."""
    (wm, wn), k_instr = waves, {32: 8, 16: 16}[instr]
    reps_m, reps_n, steps = 1 << rep_m, 1 << rep_n, 1 << rep_k
    m, n, k = instr * wm * reps_m, instr * wn * reps_n, k_instr * steps
    result = MfmaLayout(instr, waves)
    c, a, b = (result.to_linear((m, n)), MfmaOperandLayout(0, result).to_linear((m, k)),
               MfmaOperandLayout(1, result).to_linear((k, n)))
    per_tile = instr * instr // 64
    for wave in range(wm * wn):
        wave_m, wave_n = wave % wm, wave // wm
        for lane in range(0, 64, 7):
            for i in range(reps_m):
                for j in range(reps_n):
                    row0, col0 = instr * (wave_m + wm * i), instr * (wave_n + wn * j)
                    for r in range(per_tile):
                        row, col = isa_d(instr, instr, lane, r)
                        assert c.apply(per_tile * (i + reps_m * j) + r, lane, wave) == (row0 + row, col0 + col)
                    for s in range(steps):
                        for v in range(4):
                            row, kk = isa_a(instr, k_instr, lane, v)
                            assert a.apply(4 * (s + steps * i) + v, lane, wave) == (row0 + row, k_instr * s + kk)
                            kk, col = isa_b(instr, k_instr, lane, v)
                            assert b.apply(4 * (s + steps * j) + v, lane, wave) == (k_instr * s + kk, col0 + col)


def test_dots_mfma_cannot_take_use_fma():
    """One warp is a whole wave, so a single warp's f16 dot runs on MFMA; MFMA here takes
    f16/bf16 (and gfx942's fp8) only, so f32 operands take the FMA path. Both compute."""
    rng = np.random.default_rng(5)
    a16, b16 = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    for args, dtype, on_mfma in (([a16, b16], tl.float16, True),
                                 ([a16.astype(np.float32), b16.astype(np.float32)], tl.float32, False)):
        out = c.copy()
        compiled = compile_dot(args + [out], 1, M=16, N=16, K=16, BLOCK_K=16, DTYPE=dtype)
        assert ("v_mfma" in compiled.text) == on_mfma and ("v_fma_f32" in compiled.text) != on_mfma
        run_amdgcn(compiled.text, 1, named(dot_kernel, args + [out]))
        np.testing.assert_allclose(out, a16.astype(np.float64) @ b16 + c, rtol=1e-5, atol=1e-4)


def _mfma_func(num_warps: int, instr: int, atype: str) -> str:
    acc = instr * instr // 64
    zeros = ", ".join(["%z"] * acc)
    results = ", ".join(f"%d{i}" for i in range(acc))
    return (f'simt.func {{arg_names = ["p"], num_warps = {num_warps}, shared_bytes = 0, sym_name = "k"}} {{\n'
            f"^bb(%p: ptr<f32>):\n  %t = simt.tid : i32\n  %z = arith.constant {{value = 0.0}} : f32\n"
            f"  {results} = simt.mfma %t, %t, %t, %t, {zeros} {{atype = \"{atype}\", instr = {instr}}} : "
            f"{', '.join(['f32'] * acc)}\n  simt.return\n}}")


def test_mfma_without_an_instruction_is_refused():
    """One warp (a wave of 64) runs an MFMA; a shape and type no instruction has is refused."""
    with pytest.raises(UnsupportedOnTarget, match="simt.mfma of 32x32 on bf16"):
        emit_amdgcn(parse_op(_mfma_func(1, 32, "bf16")), "gfx942")
    assert "v_mfma_f32_16x16x16_f16" in emit_amdgcn(parse_op(_mfma_func(1, 16, "f16")), "gfx942")


def test_mfma_under_scf_if_is_refused_by_name():
    """tile's dots reach simt.mfma outside scf.if (if-conversion masks the stores instead);
    simt IR that puts one under a lane-dependent branch is refused, not run on a narrowed EXEC."""
    mfma = _mfma_func(2, 16, "f16").splitlines()
    body = "\n".join(["  %c = arith.cmp %t, %t {predicate = \"eq\"} : i1", "  scf.if %c {",
                      "  " + mfma[4], "    scf.yield", "  } {", "    scf.yield", "  }"])
    func = "\n".join(mfma[:4] + [body] + mfma[5:])
    with pytest.raises(UnsupportedOnTarget, match=r"simt\.mfma under scf\.if \(the matrix core needs every lane"):
        emit_amdgcn(parse_op(func), "gfx942")


@pytest.mark.parametrize("num_warps, num_stages", [(4, 1), (4, 3), (8, 2)])
def test_tutorial_matmul_with_masks_and_activation(num_warps, num_stages):
    """Tutorial 04's kernel (grouped tile order, masked K tail, leaky ReLU, f16 output) at a
    shape the tiles do not divide, on MFMA."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "tutorials" / "04_matrix_multiplication.py"
    spec = importlib.util.spec_from_file_location("tutorial_04", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.matmul_kernel.fn
    m, n, k = 40, 72, 40
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    names = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
             "stride_cn"]
    args = dict(zip(names, [a, b, c, m, n, k, k, 1, n, 1, n, 1]))
    constexprs = dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=16, GROUP_M=2, ACTIVATION="leaky_relu")
    spec_, _ = kernel.specialize(list(args.values()), constexprs)
    options = {"num_warps": num_warps, "num_stages": num_stages, "maxnreg": None}
    compiled = compile_amdgcn(compile_kernel(kernel, spec_, options, "gfx942", until="amdgcn").func, "gfx942")
    assert "v_mfma_f32" in compiled.text and b"ELF" in assemble(compiled.text, "gfx942")[:4]
    run_amdgcn(compiled.text, 2 * 2, args)
    exact = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)

