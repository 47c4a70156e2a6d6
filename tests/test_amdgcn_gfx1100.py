"""gfx1100 (RDNA3, wave32), the third AMD target: what differs from the CDNA targets, each
difference read from a table of tile.codegen.amdgcn.isa. Lane masks in one SGPR, the gfx11
spelling of instructions (printed, assembled by llvm-mc -mcpu=gfx1100, and decoded back by the
emulator, which refuses GFX9 names), stores counted in vscnt, the kernel descriptor, and the
RDNA3 hazards' s_waitcnt_depctr (tile.codegen.amdgcn.rdna3)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from amdgcn_util import instructions, needs_llvm
from tile.codegen.amdgcn import assemble
from tile.codegen.amdgcn.isa import SPELLING, WAVE64_TARGETS
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, Label, MInst, Reg
from tile.codegen.amdgcn.rdna3 import TRANS_USE_VALUS, insert_rdna3_waits
from tile.codegen.amdgcn.waitcnt import insert_waits
from tile.emulator.amdgcn_decode import AmdgcnSyntaxError, decode_amdgcn

RNG = np.random.default_rng(1100)


@tile.jit
def masked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.debug_barrier()
    tl.store(out_ptr + offs, tl.where(x > 0, tl.exp(x), x * 3.0), mask=offs < n)


@tile.jit
def row_sum_kernel(x_ptr, out_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * COLS + tl.arange(0, COLS))
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def text_of(kernel, *args, target="gfx1100", **constexprs) -> str:
    return str(tile.dump(kernel, *args, stage="amdgcn", target=target, **constexprs))


def test_lane_masks_are_one_sgpr_and_instructions_take_the_gfx11_names():
    x = np.zeros(100, np.float32)
    text = text_of(masked_kernel, x, x, 100, BLOCK=128)
    lines = instructions(text)
    opcodes = {line.split()[0] for line in lines}
    assert {"s_and_saveexec_b32", "global_load_b32", "buffer_store_b32", "s_load_b64", "v_cmp_lt_i32"} <= opcodes
    assert not opcodes & set(SPELLING["gfx1100"])   # no GFX9 name the target spells otherwise
    assert not any(op.endswith("_b64") and op.startswith(("s_and", "s_or", "s_mov")) for op in opcodes)
    assert any(line.startswith("s_mov_b32 exec_lo, s") for line in lines)
    compare = next(line for line in lines if line.startswith("v_cmp_lt_i32"))
    assert compare.split()[1].rstrip(",").startswith("s") and ":" not in compare.split()[1]   # one SGPR
    assert any(line.startswith("v_mad_i64_i32") and ", vcc_lo," in line for line in lines)   # wave32's vcc
    select = next(line for line in lines if line.startswith("v_cndmask_b32"))
    assert re.fullmatch(r"s\d+", select.split(", ")[-1])   # its mask: one SGPR


def test_the_descriptor_says_wave32_and_pads_the_user_sgprs():
    x = np.zeros(100, np.float32)
    text = text_of(masked_kernel, x, x, 100, BLOCK=128)
    assert ".amdhsa_wavefront_size32 1" in text and ".amdhsa_workgroup_processor_mode 0" in text
    assert ".amdhsa_accum_offset" not in text and ".wavefront_size: 32" in text
    assert ".amdhsa_user_sgpr_count 15" in text   # 15 user + 1 workgroup id: the 16 gfx1100 needs
    cdna = text_of(masked_kernel, x, x, 100, BLOCK=128, target="gfx942")
    assert ".amdhsa_user_sgpr_count 2" in cdna and ".amdhsa_accum_offset" in cdna and "wavefront_size32" not in cdna


def test_a_barrier_drains_the_store_counter_too():
    x = np.zeros(100, np.float32)
    lines = instructions(text_of(masked_kernel, x, x, 100, BLOCK=128))
    k = lines.index("s_barrier")
    assert lines[k - 2:k] == ["s_waitcnt vmcnt(0) lgkmcnt(0)", "s_waitcnt_vscnt null, 0x0"]
    assert "s_waitcnt_vscnt" not in text_of(masked_kernel, x, x, 100, BLOCK=128, target="gfx942")


@needs_llvm
@pytest.mark.parametrize("n, block, num_warps", [(1000, 256, 4), (37, 64, 1), (200, 64, 2)])
def test_masked_kernel_runs_on_waves_of_32(n, block, num_warps):
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    assert assemble(text_of(masked_kernel, x, out, n, BLOCK=block, num_warps=num_warps), "gfx1100")[:4] == b"\x7fELF"
    tile.emulate(masked_kernel, target="gfx1100")[(-(-n // block),)](x, out, n, BLOCK=block, num_warps=num_warps)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out, np.where(x64 > 0, np.exp(x64), 3 * x64), rtol=2e-6, atol=1e-7)


@needs_llvm
@pytest.mark.parametrize("cols, num_warps", [(32, 1), (256, 4), (128, 2)])
def test_reductions_shuffle_within_a_wave_of_32(cols, num_warps):
    """tl.sum across warps and lanes: DPP adds (xor 1-8) and ds_swizzle_b32 (xor 16) within the
    wave (its groups of 32 lanes are the whole wave), no half-wave arithmetic."""
    x = RNG.standard_normal((5, cols)).astype(np.float32)
    out = np.full(5, np.nan, np.float32)
    text = text_of(row_sum_kernel, x, out, COLS=cols, num_warps=num_warps)
    assert assemble(text, "gfx1100")[:4] == b"\x7fELF"
    assert "ds_swizzle_b32" in text and "v_add_f32_dpp" in text and "ds_bpermute_b32" not in text
    tile.emulate(row_sum_kernel, target="gfx1100")[(5,)](x, out, COLS=cols, num_warps=num_warps)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def _gfx1100_text(body: str) -> str:
    return f"""  .amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
  .globl k
k:
{body}
  s_endpgm
.Lfunc_end_k:
  .amdhsa_kernel k
    .amdhsa_user_sgpr_count 15
    .amdhsa_system_sgpr_workgroup_id_x 1
  .end_amdhsa_kernel
  .amdgpu_metadata
---
amdhsa.kernels:
  - .name: k
    .kernarg_segment_size: 0
    .wavefront_size: 32
    .max_flat_workgroup_size: 32
    .args: []
...
  .end_amdgpu_metadata
"""


def test_the_decoder_reads_gfx11_names_and_refuses_gfx9_ones():
    kernel = decode_amdgcn(_gfx1100_text("  global_load_b32 v1, v[2:3], off\n  s_and_saveexec_b32 s4, vcc_lo"))
    assert [i.opcode for i in kernel.instrs][:2] == ["global_load_dword", "s_and_saveexec_b32"]
    assert kernel.wave_size == 32 and kernel.user_sgprs == 15
    with pytest.raises(AmdgcnSyntaxError, match="global_load_dword is spelled global_load_b32 on gfx1100"):
        decode_amdgcn(_gfx1100_text("  global_load_dword v1, v[2:3], off"))
    with pytest.raises(AmdgcnSyntaxError, match="s_and_saveexec_b64 does not exist on gfx1100"):
        decode_amdgcn(_gfx1100_text("  s_and_saveexec_b64 s[4:5], vcc"))
    with pytest.raises(AmdgcnSyntaxError, match="v_mfma_f32_16x16x16_f16 does not exist on gfx1100"):
        decode_amdgcn(_gfx1100_text("  v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], v[0:3]"))
    gfx942 = _gfx1100_text("  global_load_b32 v1, v[2:3], off").replace("--gfx1100", "--gfx942")
    with pytest.raises(AmdgcnSyntaxError, match="unknown instruction `global_load_b32`"):
        decode_amdgcn(gfx942)


def _load_store_use():
    addr, a, b, c = Reg("v", 2, 1), Reg("v", 1, 2), Reg("v", 1, 3), Reg("v", 1, 4)
    return [MInst("global_load_dword", [a.all()], [addr.all(), OFF]),
            MInst("global_store_dword", [], [addr.all(), b.all(), OFF]),
            MInst("v_add_u32", [c.all()], [a.all(), Imm.int(1)])]


def test_stores_count_in_vmcnt_on_gfx9_and_in_vscnt_on_gfx11():
    """A load, then a store, then the load's use: on GFX9 the store is one of the vmcnt ops
    issued after the load (vmcnt(1) suffices); on gfx1100 it counts in vscnt, so only vmcnt(0)
    covers the load."""
    for target in WAVE64_TARGETS:
        assert [i.mods for i in insert_waits(_load_store_use(), target=target) if i.opcode == "s_waitcnt"] == \
            [{"vmcnt": 1}]
    assert [i.mods for i in insert_waits(_load_store_use(), target="gfx1100") if i.opcode == "s_waitcnt"] == \
        [{"vmcnt": 0}]


def _trans_then(between: int):
    x, e, y = Reg("v", 1, 1), Reg("v", 1, 2), Reg("v", 1, 3)
    fillers = [MInst("v_mov_b32", [Reg("v", 1, 10 + k).all()], [Imm.int(k)]) for k in range(between)]
    return [MInst("v_exp_f32", [e.all()], [x.all()]), *fillers, MInst("v_mul_f32", [y.all()], [e.all(), x.all()])]


def test_a_transcendentals_result_read_soon_waits_for_va_vdst():
    for between in range(TRANS_USE_VALUS + 2):
        out = insert_rdna3_waits(_trans_then(between))
        waits = [k for k, i in enumerate(out) if i.opcode == "s_waitcnt_depctr"]
        if between <= TRANS_USE_VALUS:
            assert waits == [len(out) - 2] and out[waits[0]].uses[0].value == 0x0FFF
        else:
            assert waits == []
    cdna = _trans_then(0)
    assert insert_rdna3_waits(cdna, target="gfx942") is cdna   # GFX9's hazards are waitcnt.HAZARDS


def test_a_loop_top_assumes_the_loops_transcendentals_in_flight():
    x, e, y, i = Reg("v", 1, 1), Reg("v", 1, 2), Reg("v", 1, 3), Reg("s", 1, 4)
    top = Label(".Ltop")
    insts = [MInst("label", [], [top]),
             MInst("v_mul_f32", [y.all()], [e.all(), x.all()]),   # reads last iteration's v_exp result
             *[MInst("v_mov_b32", [Reg("v", 1, 10 + k).all()], [Imm.int(k)]) for k in range(TRANS_USE_VALUS + 1)],
             MInst("v_exp_f32", [e.all()], [x.all()]),
             MInst("s_cmp_lt_u32", [], [i.all(), Imm.int(4)]),
             MInst("s_cbranch_scc1", [], [top])]
    out = insert_rdna3_waits(insts)
    assert [k.opcode for k in out[:3]] == ["label", "s_waitcnt_depctr", "v_mul_f32"]


def test_an_sgpr_read_as_a_mask_then_written_by_salu_waits_for_sa_sdst():
    mask, a, b, d, other = Reg("s", 1, 1), Reg("v", 1, 2), Reg("v", 1, 3), Reg("v", 1, 4), Reg("s", 1, 5)
    insts = [MInst("v_cndmask_b32", [d.all()], [a.all(), b.all(), mask.all()]),
             MInst("s_mov_b32", [other.all()], [Imm.int(3)]),          # another SGPR: no wait
             MInst("s_mov_b32", [mask.all()], [Imm.int(0)]),           # the mask's SGPR: wait after it
             MInst("v_cndmask_b32", [d.all()], [a.all(), b.all(), mask.all()])]
    out = insert_rdna3_waits(insts)
    assert [i.opcode for i in out] == ["v_cndmask_b32", "s_mov_b32", "s_mov_b32", "s_waitcnt_depctr", "v_cndmask_b32"]
    assert out[3].uses[0].value == 0xFFFE
    carry = [MInst("v_add_co_u32", [a.all(), VCC], [a.all(), b.all()]),
             MInst("v_addc_co_u32", [b.all(), VCC], [a.all(), b.all(), VCC]),   # vcc read as a carry
             MInst("s_mov_b32", [mask.all()], [Imm.int(0)])]                   # not vcc: no wait
    assert [i.opcode for i in insert_rdna3_waits(carry)] == ["v_add_co_u32", "v_addc_co_u32", "s_mov_b32"]


@tile.jit
def f64_add_kernel(out_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs % 4, tl.load(x_ptr + offs))


def test_f64_atomic_add_is_a_compilation_error_naming_gfx1100():
    """RDNA3 has no f64 atomic add (llvm-mc: "instruction not supported on this GPU")."""
    x = np.zeros(64, np.float64)
    with pytest.raises(tile.CompilationError, match="gfx1100: the AMDGCN backend does not support simt.atom add of f64"):
        text_of(f64_add_kernel, x, x, BLOCK=64)
    assert "global_atomic_add_f64" in text_of(f64_add_kernel, x, x, BLOCK=64, target="gfx942")


def _sample(kind: str, regs: dict, wave: int):
    """An operand of table kind `kind` on a fresh register (assigned in `regs`)."""
    from tile.codegen.amdgcn.mir import EXEC, NULL, OFF as OFF_
    base = kind.rstrip("0123456789")
    width = int(kind[len(base):] or 1)
    fixed = {"saddr": OFF_, "null": NULL, "vcc": VCC, "imm": Imm.int(4), "label": Label(".Lend")}
    if kind in fixed:
        return fixed[kind]
    bank, size = {"vaddr": ("v", 2), "sbase": ("s", 2), "lmask": ("s", wave // 32)}.get(kind, (base[0], width))
    if base == "src":
        bank = "v"
    reg = Reg(bank, size, len(regs))
    taken = sum(r.bank == bank for r in regs)
    regs[reg] = 8 + (32 if bank in ("v", "a") else 8) * taken   # aligned for any tuple, apart from the others
    return reg.all()


@needs_llvm
@pytest.mark.parametrize("target", ["gfx942", "gfx90a", "gfx1100"])
def test_every_instruction_of_the_target_assembles_as_printed(target):
    """Each row of the instruction table on `target`, printed by the MIR printer in the target's
    spelling (isa.SPELLING, exec_lo/vcc_lo on wave32) on sample registers, is accepted by
    llvm-mc -mcpu=target: the table's operand kinds and the spelling agree with the assembler."""
    from tile.codegen.amdgcn.isa import ATOMIC_RETURN_BIT, INSTRUCTIONS, RETURNING_SUFFIX, WAVE_SIZE
    from tile.codegen.amdgcn.mir import print_inst
    lines = []
    for name, row in INSTRUCTIONS.items():
        if target not in row.targets or name in ("label", "s_waitcnt"):
            continue
        regs: dict = {}
        uses = [_sample(k, regs, WAVE_SIZE[target]) for k in row.uses]
        tied = dict(row.ties)   # a read-and-written operand: the source's register
        defs = [uses[tied[k]] if k in tied else _sample(kind, regs, WAVE_SIZE[target]) for k, kind in enumerate(row.defs)]
        if row.is_valu and [k.startswith("ssrc") for k in row.uses].count(True) == 2:   # one SGPR: the
            uses[-1] = Imm.int(3)                                                       # constant bus
        returns = name.startswith("global_atomic") or name.endswith(RETURNING_SUFFIX)
        mods = {ATOMIC_RETURN_BIT[target]: 1} if returns else {}
        if name.startswith(("buffer_load", "buffer_store", "buffer_atomic")):
            mods["offen"] = 1   # tile's buffer accesses take their byte offset from the VGPR
        if row.is_dpp:
            mods["dpp_ctrl"] = 0x1B   # quad_perm:[3,2,1,0] (test_amdgcn_dpp assembles every control)
        lines.append("  " + print_inst(MInst(name, defs, uses, mods), regs, target))
    body = "\n".join(lines) + "\n.Lend:\n  s_endpgm\n"
    kernel = f"""  .amdgcn_target "amdgcn-amd-amdhsa--{target}"
  .amdhsa_code_object_version 5
  .text
  .globl k
  .p2align 8
  .type k,@function
k:
{body}
  .rodata
  .p2align 6
  .amdhsa_kernel k
    .amdhsa_next_free_vgpr 256
    .amdhsa_next_free_sgpr 96
    {".amdhsa_accum_offset 256" if WAVE_SIZE[target] == 64 else ".amdhsa_wavefront_size32 1"}
  .end_amdhsa_kernel
"""
    assert len(lines) > 150
    assert assemble(kernel, target)[:4] == b"\x7fELF"


def test_lgkmcnt_holds_up_to_63_on_gfx11_and_15_on_gfx9():
    """20 LDS reads in flight and the first one's result needed: 19 may stay outstanding, which
    gfx1100's 6-bit field says exactly; GFX9's 4-bit field caps the count at 15 (waiting longer)."""
    addr = Reg("v", 1, 1)
    values = [Reg("v", 1, 10 + k) for k in range(20)]
    insts = [MInst("ds_read_b32", [v.all()], [addr.all()], {"offset": 4 * k}) for k, v in enumerate(values)]
    insts.append(MInst("v_add_u32", [Reg("v", 1, 99).all()], [values[0].all(), Imm.int(1)]))
    for target, count in (("gfx942", 15), ("gfx1100", 19)):
        assert [i.mods for i in insert_waits(insts, target=target) if i.opcode == "s_waitcnt"] == [{"lgkmcnt": count}]
