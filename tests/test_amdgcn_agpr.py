"""The unified register file of gfx942 and gfx90a: when the 256 VGPRs run out, the register
allocator moves VGPR values to the 256 AGPRs (MFMA accumulating in place on AGPRs, copies as
v_accvgpr_write_b32 / v_accvgpr_read_b32, other uses through short-lived VGPRs). Property-tested
on random straight-line programs run by a small evaluator of the physical registers; Triton's
MI300 matmul blocks (128x128 and 256x128, 4 waves of 64) compile, assemble and compute on the wave
model; the descriptor places the AGPRs (accum_offset) and the emulator checks every register
lies inside what it allocates; past 512 registers a kernel is OutOfResources."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble, compile_amdgcn
from tile.codegen.amdgcn.isa import AGPR_LIMIT, VGPR_LIMIT
from tile.codegen.amdgcn.mir import Imm, MInst
from tile.codegen.amdgcn.regalloc import allocate, allocate_spilling
from tile.codegen.target import TargetResourceError
from tile.compiler import compile_kernel
from tile.emulator.amdgcn_decode import AmdgcnSyntaxError, decode_amdgcn
from tile.emulator.amdgcn_machine import run_amdgcn
from tile.runtime.errors import OutOfResources

from amdgcn_util import Registers, assert_placement, instructions, needs_llvm, registers
from tutorial_util import load_tutorial

M32 = (1 << 32) - 1


def program(registers: Registers, values: int, picks: list[tuple[int, int]]) -> list[MInst]:
    """`values` VGPR values (some of them pairs) set to constants, sums of pairs of them picked
    by `picks` copied into fresh values (v_mov_b32 of a value: an AGPR move once moved), then
    every value folded into one total."""
    defined, insts = [], []
    for k in range(values):
        reg = registers("v", 2 if k % 5 == 2 else 1)
        for d in range(reg.size):
            insts.append(MInst("v_mov_b32", [reg.dword(d)], [Imm.int(1000 + 17 * k + d)]))
        defined.append(reg)
    for a, b in picks:
        x, y = defined[a % values], defined[b % values]
        pair, copy = registers("v"), registers("v")
        insts.append(MInst("v_add_u32", [pair.all()], [x.dword(x.size - 1), y.dword(0)]))
        insts.append(MInst("v_mov_b32", [copy.all()], [pair.all()]))
        defined.append(copy)
    total = registers("v")
    insts.append(MInst("v_mov_b32", [total.all()], [Imm.int(0)]))
    for reg in defined:
        after = registers("v")
        insts.append(MInst("v_add_u32", [after.all()], [total.all(), reg.dword(0)]))
        total = after
    return insts


MOVES = ("v_mov_b32", "v_accvgpr_read_b32", "v_accvgpr_write_b32")


def evaluate(insts: list[MInst], place) -> int:
    """Runs the moves and v_add_u32 on register cells named by `place(sub, k)`; the value of
    the last instruction's result."""
    cells: dict = {}
    read = lambda o: o.value & M32 if isinstance(o, Imm) else cells[place(o, 0)]  # noqa: E731
    result = None
    for inst in insts:
        if inst.opcode in MOVES:
            result = read(inst.uses[0])
        elif inst.opcode == "v_add_u32":
            result = (read(inst.uses[0]) + read(inst.uses[1])) & M32
        else:
            raise AssertionError(inst.opcode)
        cells[place(inst.defs[0], 0)] = result
    return result


@settings(max_examples=12, deadline=None)
@given(st.integers(180, 360), st.lists(st.tuples(st.integers(0, 500), st.integers(0, 500)), max_size=40))
def test_moved_programs_compute_what_the_virtual_ones_do(values, picks):
    registers = Registers()
    insts = program(registers, values, picks)
    expected = evaluate(insts, lambda o, k: ("virtual", o.reg.id, o.start + k))
    moved, assignment = allocate_spilling(insts, registers, "gfx942")
    assert_placement(moved, assignment, {"v": VGPR_LIMIT["gfx942"], "a": AGPR_LIMIT["gfx942"]})
    assert evaluate(moved, lambda o, k: (o.bank, assignment[o.reg] + o.start + k)) == expected
    try:
        allocate(insts, "gfx942")
        fits = True
    except TargetResourceError:
        fits = False
    assert (moved == insts) == fits   # AGPRs only where the VGPRs ran out
    assert any(reg.bank == "a" for reg in assignment) == (not fits)


def test_copies_become_agpr_moves_and_other_uses_go_through_a_vgpr():
    registers = Registers()
    insts = program(registers, 300, [])
    moved, assignment = allocate_spilling(insts, registers, "gfx942")
    writes = [i for i in moved if i.opcode == "v_accvgpr_write_b32"]
    assert writes and all(i.uses[0].bank == "v" for i in writes)   # literals (1000 + ...) go through a VGPR
    assert all(before.opcode == "v_mov_b32" and before.defs[0] == inst.uses[0] for before, inst in zip(moved, moved[1:])
               if inst.opcode == "v_accvgpr_write_b32")
    for before, inst in zip(moved, moved[1:]):
        if inst.opcode == "v_add_u32":   # a VALU op reads VGPRs only: a moved value is read back just before
            assert all(o.bank == "v" for o in inst.uses if not isinstance(o, Imm))
        if before.opcode == "v_accvgpr_read_b32":
            assert before.defs[0] in inst.uses


# --------------------------------------------------------------------------- kernels

def tutorial_matmul_args(m: int, n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    names = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
             "stride_cn"]
    return a, b, c, dict(zip(names, [a, b, c, m, n, k, k, 1, n, 1, n, 1]))


def compile_tutorial_matmul(args: dict, target: str, num_warps: int = 4, **blocks):
    kernel = load_tutorial("04_matrix_multiplication", "agpr").matmul_kernel.fn
    constexprs = dict(GROUP_M=2, ACTIVATION="leaky_relu", **blocks)
    spec, _ = kernel.specialize(list(args.values()), constexprs)
    options = {"num_warps": num_warps, "num_stages": 2, "maxnreg": None}
    return compile_amdgcn(compile_kernel(kernel, spec, options, target, until="amdgcn").func, target)


def descriptor(text: str, key: str) -> int:
    return int(re.search(rf"\.amdhsa_{key} (\d+)", text).group(1))


def metadata(text: str, key: str) -> int:
    return int(re.search(rf"\.{key}: (\d+)", text).group(1))


@needs_llvm
@pytest.mark.parametrize("block_m, block_n, m, n, k, target", [
    (128, 128, 136, 200, 80, "gfx942"),   # a masked K tail; rows and columns past M and N
    (256, 128, 256, 128, 64, "gfx942"),
    (256, 128, 256, 128, 64, "gfx90a"),
])
def test_triton_mi300_matmul_blocks_compile_and_compute(block_m, block_n, m, n, k, target):
    """Where the block needs more than the 256 VGPRs (256x128 always), MFMA accumulators are
    among the values moved to AGPRs and accumulate there in place."""
    a, b, c, args = tutorial_matmul_args(m, n, k, block_m + n)
    compiled = compile_tutorial_matmul(args, target, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=64)
    text = compiled.text
    agprs, vgprs = metadata(text, "agpr_count"), descriptor(text, "accum_offset")
    assert agprs > 0 or block_m < 256
    if agprs:
        mfmas = [line.split(";")[0].strip() for line in text.splitlines() if line.strip().startswith("v_mfma")]
        assert any(re.search(r"\ba\[\d+:\d+\],.*\ba\[\d+:\d+\]$", line) for line in mfmas)
        assert vgprs % 4 == 0 and descriptor(text, "next_free_vgpr") == vgprs + agprs
    assert metadata(text, "vgpr_count") == descriptor(text, "next_free_vgpr")
    assert b"ELF" in assemble(text, target)[:4]
    run_amdgcn(text, tile.cdiv(m, block_m) * tile.cdiv(n, block_n), args)
    exact = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)


def test_loop_carried_accumulators_are_the_mfma_tuples():
    """The accumulators a K loop carries (tl.zeros before the loop) are the MFMAs' own C/D
    tuples: inside the loop nothing but the MFMAs writes them (no copies at the top or at the
    yield), so a block needs its accumulator once, not twice."""
    a, b, c, args = tutorial_matmul_args(64, 64, 96, 3)
    text = compile_tutorial_matmul(args, "gfx942", num_warps=4, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32).text
    lines = instructions(text)
    body = lines[lines.index(".Lloop1:") + 1:lines.index("s_cbranch_scc1 .Lloop1")]
    accumulators = set().union(*(registers(line.split(",")[0]) for line in body if line.startswith("v_mfma")))
    assert accumulators
    for line in body:
        if not line.startswith("v_mfma"):
            assert not registers(line.partition(" ")[2].split(",")[0]) & accumulators, line
    run_amdgcn(text, 1, args)
    exact = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("target", ["gfx942", "gfx90a"])
def test_a_tight_vgpr_file_moves_a_small_dot_to_agprs(monkeypatch, target):
    """With the VGPRs limited to 40, a 32x32 dot on 16x16x16 MFMA (two waves) still computes:
    its accumulators live in AGPRs."""
    monkeypatch.setitem(VGPR_LIMIT, target, 40)
    a, b, c, args = tutorial_matmul_args(40, 40, 48, 7)
    compiled = compile_tutorial_matmul(args, target, num_warps=2, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
    assert descriptor(compiled.text, "accum_offset") <= 40 and metadata(compiled.text, "agpr_count") > 0
    assert re.search(r"v_mfma\S* a\[", compiled.text)
    run_amdgcn(compiled.text, 4, args)
    exact = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)


@tile.jit
def many_values(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(x_ptr + BLOCK - 1 - offs))


def test_beyond_the_unified_register_file_is_out_of_resources():
    x = np.ones(16384, np.float32)   # one wave of 64 lanes: 2 x 256 values per lane, and their addresses
    with pytest.raises(OutOfResources, match="AGPRs") as e:
        tile.dump(many_values, x, x, BLOCK=16384, stage="amdgcn", target="gfx942", num_warps=1)
    assert "512 registers per lane" in str(e.value)


def test_values_live_across_lanes_stay_in_vgprs():
    registers = Registers()
    lane_data = registers("v")
    insts = [MInst("v_mov_b32", [lane_data.all()], [Imm.int(5)])]
    insts += program(registers, 300, [])
    spare = registers("s")
    insts.append(MInst("v_readlane_b32", [spare.all()], [lane_data.all(), Imm.int(3)]))
    moved, assignment = allocate_spilling(insts, registers, "gfx942")
    assert any(reg.bank == "a" for reg in assignment)
    assert lane_data in assignment and [i.uses[0].reg for i in moved if i.opcode == "v_readlane_b32"] == [lane_data]


# --------------------------------------------------------------------------- the emulator's check

def test_registers_outside_the_descriptor_are_refused():
    a, b, c, args = tutorial_matmul_args(40, 40, 48, 8)
    with pytest.MonkeyPatch().context() as patch:
        patch.setitem(VGPR_LIMIT, "gfx942", 40)
        text = compile_tutorial_matmul(args, "gfx942", num_warps=2, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16).text
    decode_amdgcn(text)
    total = descriptor(text, "next_free_vgpr")
    short = text.replace(f".amdhsa_next_free_vgpr {total}", f".amdhsa_next_free_vgpr {total - 1}")
    with pytest.raises(AmdgcnSyntaxError, match=r"a\d+ lies outside the \d+ AGPRs the kernel descriptor allocates"):
        decode_amdgcn(short)
    offset = descriptor(text, "accum_offset")
    low = text.replace(f".amdhsa_accum_offset {offset}", f".amdhsa_accum_offset {offset - 4}")
    with pytest.raises(AmdgcnSyntaxError, match=r"v\d+ lies outside the \d+ VGPRs"):
        decode_amdgcn(low)

