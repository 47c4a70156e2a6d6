"""DPP (data-parallel primitives) on gfx942, gfx90a and gfx1100: the controls of isa.DPP_CONTROLS
assembled by llvm-mc with the DPP_CTRL codes tile gives them (and refused on the targets that
lack them), printed and decoded back, the emulator's lane reads against a per-lane model of the
ISA text (hypothesis, one case per control, and per fused VOP2 op), the butterflies' moves, the
fusing of a move into the op that combines it, the wait states between a VGPR write and a DPP
read (the s_nop the compiler inserts, the error the emulator reports without it), and butterfly
shuffles selected as DPP in reductions, scans, softmax and layer norm on the emulator against
NumPy in float64 with poisoned outputs (the kernels of test_amdgcn_wave64), each assembled."""
from __future__ import annotations

import re
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble
from tile.codegen.amdgcn.dpp import fuse_dpp_moves
from tile.codegen.amdgcn.isa import (DPP_CODES, DPP_COMBINES, DPP_CONTROLS, TARGETS, WAVE_SIZE, dpp_butterfly,
                                     dpp_code)
from tile.codegen.amdgcn.kernel_object import find_tool
from tile.codegen.amdgcn.mir import Imm, Label, MInst, Reg, print_inst
from tile.codegen.amdgcn.waitcnt import insert_nops
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_decode import AmdgcnSyntaxError, AmdInstr, decode_amdgcn
from tile.emulator.amdgcn_decode import Reg as DecodedReg
from tile.emulator.amdgcn_execute import EXECUTE
from tile.emulator.amdgcn_machine import run_amdgcn

from amdgcn_util import instructions, needs_llvm
from test_amdgcn_wave64 import (assert_softmax_and_layer_norm, layer_norm_kernel, poisoned, reduce_kernel,
                                row_sum_kernel, scan_kernel, softmax_kernel)

RNG = np.random.default_rng(1615)
CDNA = ("gfx942", "gfx90a")


def dpp_line(text: str, extra: str = "") -> str:
    """A v_mov_b32_dpp line with control `text`, full masks and `extra` modifiers."""
    return f"v_mov_b32_dpp v1, v0 {text} row_mask:0xf bank_mask:0xf{extra}"


def llvm_mc(lines: list[str], target: str) -> subprocess.CompletedProcess:
    return subprocess.run([find_tool("llvm-mc"), "-triple", "amdgcn-amd-amdhsa", f"-mcpu={target}", "-show-encoding"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True)


# ------------------------------------------------------------------------- the table and llvm-mc

@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_every_control_assembles_with_the_code_tile_gives_it(target):
    """Each control text of `target` assembles, and the DPP word's DPP_CTRL (bits 8-16), BOUND_CTRL
    (bit 19), FI (bit 18, gfx1100) and the masks are what tile's table and printer say."""
    texts = sorted(DPP_CODES[target])
    extra = " bound_ctrl:1" + (" fi:1" if target == "gfx1100" else "")
    result = llvm_mc([dpp_line(t) for t in texts] + [dpp_line("row_mirror", extra).replace(
        "row_mask:0xf bank_mask:0xf", "row_mask:0x5 bank_mask:0xa")], target)
    assert result.returncode == 0, result.stderr
    words = [[int(b, 16) for b in m.split(",")] for m in re.findall(r"encoding: \[([^\]]*)\]", result.stdout)]
    assert len(words) == len(texts) + 1
    for text, word in zip(texts, words):
        assert word[5] | (word[6] & 1) << 8 == DPP_CODES[target][text], text
        assert word[7] == 0xFF and not word[6] & 0b1100   # full masks, bound_ctrl and fi clear
    last = words[-1]
    assert (last[6] >> 3 & 1, last[6] >> 2 & 1, last[7] >> 4, last[7] & 0xF) == (1, target == "gfx1100", 5, 0xA)


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_controls_of_other_targets_are_refused_by_the_assembler(target):
    """The controls DPP_CONTROLS leaves off a target (row_bcast, wave_* and row_newbcast on gfx1100,
    row_share and row_xmask on CDNA) are ones llvm-mc refuses there."""
    missing = [c for c in DPP_CONTROLS if target not in c.targets]
    assert missing
    for control in missing:
        argument = next(iter(control.codes))
        result = llvm_mc([dpp_line(control.text(argument))], target)
        assert result.returncode != 0 and "not a valid operand" in result.stderr, control.keyword


def test_butterflies_dpp_reaches():
    codes = lambda d, t: [(m.code, m.bank_mask) for m in dpp_butterfly(d, t)]  # noqa: E731
    for target in CDNA:
        assert [codes(d, target) for d in (1, 2, 4, 8, 16)] == [
            [(0xB1, 0xF)], [(0x4E, 0xF)], [(0x104, 0x5), (0x114, 0xA)], [(0x128, 0xF)], []]
    assert [codes(d, "gfx1100") for d in (1, 2, 4, 8, 16)] == [[(0xB1, 0xF)], [(0x4E, 0xF)], [(0x164, 0xF)],
                                                             [(0x168, 0xF)], []]
    with pytest.raises(ValueError, match="row_xmask:4 is not a DPP control of gfx90a"):
        dpp_code("row_xmask", 4, "gfx90a")


# ------------------------------------------------------------------------- printer and decoder

def decode_body(body: str, target: str):
    wave = WAVE_SIZE[target]
    text = f"""  .amdgcn_target "amdgcn-amd-amdhsa--{target}"
  .globl k
k:
{body}
  s_endpgm
.Lfunc_end_k:
  .amdgpu_metadata
---
amdhsa.kernels:
  - .name: k
    .kernarg_segment_size: 0
    .wavefront_size: {wave}
    .max_flat_workgroup_size: {wave}
    .args: []
...
  .end_amdgpu_metadata
"""
    return decode_amdgcn(text).instrs


@pytest.mark.parametrize("target", TARGETS)
def test_printed_dpp_decodes_to_its_modifiers(target):
    a, b = Reg("v", 1, 0), Reg("v", 1, 1)
    assignment = {a: 7, b: 3}
    mods = [{"dpp_ctrl": code, "row_mask": int(RNG.integers(16)), "bank_mask": int(RNG.integers(16)),
             "bound_ctrl": int(RNG.integers(2)), "fi": int(RNG.integers(2)) * (target == "gfx1100")}
            for code in DPP_CODES[target].values()]
    lines = [print_inst(MInst("v_mov_b32_dpp", [a.all()], [b.all()], m), assignment, target) for m in mods]
    for line, m, ins in zip(lines, mods, decode_body("\n".join(lines), target)):
        assert (ins.opcode, ins.defs, ins.uses) == ("v_mov_b32_dpp", (DecodedReg("v", 7, 1),), (DecodedReg("v", 3, 1),))
        assert {k: v for k, v in ins.mods.items() if v} == {k: v for k, v in m.items() if v}, line


@pytest.mark.parametrize("line, target, message", [
    ("v_mov_b32_dpp v1, v0 row_xmask:4", "gfx942", r"needs one DPP control of gfx942 \(quad_perm, row_bcast.*found "
                                                  r"row_xmask:4"),
    ("v_mov_b32_dpp v1, v0 row_bcast:15", "gfx1100", "found row_bcast:15"),
    ("v_mov_b32_dpp v1, v0 row_mask:0xf", "gfx942", "found none"),
    ("v_mov_b32_dpp v1, v0 quad_perm:[1,0,3,2] bound_ctrl:0", "gfx942", "bound_ctrl:0 sets the bit on GFX9"),
    ("v_mov_b32_dpp v1, v0 quad_perm:[1,0,3,2] fi:1", "gfx90a", "fi:1 is not a modifier of gfx90a"),
    ("v_mov_b32_dpp v1, v0 row_shl:1 bank_mask:0x1f", "gfx1100", "bank_mask 0x1f is wider than 4 bits"),
])
def test_the_decoder_refuses_bad_dpp(line, target, message):
    with pytest.raises(AmdgcnSyntaxError, match=message):
        decode_body(line, target)


def test_a_dpp_instruction_needs_its_control_in_the_mir():
    with pytest.raises(ValueError, match="v_mov_b32_dpp needs its DPP control"):
        MInst("v_mov_b32_dpp", [Reg("v", 1, 0).all()], [Reg("v", 1, 1).all()])
    with pytest.raises(ValueError, match="DPP_CTRL 0x164 is no DPP control of gfx942"):
        print_inst(MInst("v_mov_b32_dpp", [Reg("v", 1, 0).all()], [Reg("v", 1, 1).all()], {"dpp_ctrl": 0x164}),
                   None, "gfx942")


# ------------------------------------------------------------------------- the emulator against the ISA text

def isa_source_lane(keyword: str, argument, lane: int, lanes: int):
    """The lane that `lane` reads under a control, in the words of the CDNA3 / RDNA3 ISA's DPP
    tables (rows of 16 lanes), or None where the control gives it no source lane."""
    row, j = divmod(lane, 16)
    if keyword == "quad_perm":
        return lane - lane % 4 + (argument >> (2 * (lane % 4)) & 3)
    if keyword == "row_shl":   # "row shift left by n threads": lane j takes lane j + n of its row
        return lane + argument if j + argument < 16 else None
    if keyword == "row_shr":
        return lane - argument if j - argument >= 0 else None
    if keyword == "row_ror":   # "row rotate right": lane j takes lane j - n, wrapping within the row
        return row * 16 + (j - argument) % 16
    if keyword in ("wave_shl", "wave_shr"):
        source = lane + (1 if keyword == "wave_shl" else -1)
        return source if 0 <= source < lanes else None
    if keyword in ("wave_rol", "wave_ror"):
        return (lane + (1 if keyword == "wave_rol" else -1)) % lanes
    if keyword == "row_mirror":   # "mirror threads within a row"
        return row * 16 + 15 - j
    if keyword == "row_half_mirror":   # "mirror threads within a half row (8 threads)"
        return lane - lane % 8 + 7 - lane % 8
    if keyword == "row_bcast":   # 15: "broadcast the 15th thread of each row to the next row";
        if argument == 15:       # 31: "broadcast thread 31 to rows 2 and 3"
            return row * 16 - 1 if row >= 1 else None
        return 31 if row >= 2 else None
    if keyword in ("row_newbcast", "row_share"):   # every lane of a row reads lane n of it
        return row * 16 + argument
    assert keyword == "row_xmask"                  # lane j reads lane j xor n of its row
    return row * 16 + (j ^ argument)


def isa_dpp(keyword, argument, lanes, data, old, live, row_mask, bank_mask, bound_ctrl, fi):
    """v_mov_b32_dpp lane by lane: a lane off in EXEC, row_mask or bank_mask keeps its old
    value; an invalid source (none, or off in EXEC without fi) reads 0 with bound_ctrl, else
    the lane keeps its old value."""
    out = old.copy()
    for lane in range(lanes):
        if not (live[lane] and row_mask >> (lane // 16) & 1 and bank_mask >> (lane % 16 // 4) & 1):
            continue
        source = isa_source_lane(keyword, argument, lane, lanes)
        if source is not None and (live[source] or fi):
            out[lane] = data[source]
        elif bound_ctrl:
            out[lane] = 0
    return out


class OneRegisterWave:
    """What the DPP executor reads of a wave: v0 (the data) and v1 (the result), EXEC, the target."""

    def __init__(self, target: str, data: np.ndarray, old: np.ndarray, live: np.ndarray):
        self.lanes = len(data)
        self.exec = live
        self.v = [data.astype(np.uint64), old.astype(np.uint64)]
        self.group = SimpleNamespace(kernel=SimpleNamespace(target=target))

    def read(self, o, width=1):
        return self.v[o.first].copy()

    def write(self, o, values, width=1, lanes=None):
        self.v[o.first][lanes] = values[lanes]


CONTROL_CASES = [(t, c) for t in TARGETS for c in DPP_CONTROLS if t in c.targets]


@pytest.mark.parametrize("target, control", CONTROL_CASES, ids=[f"{t}-{c.keyword}" for t, c in CONTROL_CASES])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_dpp_reads_the_lane_the_isa_names(target, control, data):
    lanes = WAVE_SIZE[target]
    argument = data.draw(st.sampled_from(sorted(control.codes, key=lambda a: -1 if a is None else a)))
    live = np.array(data.draw(st.lists(st.booleans(), min_size=lanes, max_size=lanes)))
    row_mask, bank_mask = data.draw(st.integers(0, 15)), data.draw(st.integers(0, 15))
    bound_ctrl = data.draw(st.booleans())
    fi = data.draw(st.booleans()) and target == "gfx1100"
    values = RNG.integers(1, 2 ** 32, lanes, dtype=np.uint64)
    old = RNG.integers(1, 2 ** 32, lanes, dtype=np.uint64)
    mods = {"dpp_ctrl": control.codes[argument], "row_mask": row_mask, "bank_mask": bank_mask,
            "bound_ctrl": int(bound_ctrl), "fi": int(fi)}
    ins = AmdInstr("v_mov_b32_dpp", (DecodedReg("v", 1, 1),), (DecodedReg("v", 0, 1),), mods, 1, "")
    wave = OneRegisterWave(target, values, old, live)
    EXECUTE["v_mov_b32_dpp"](wave, ins)
    want = isa_dpp(control.keyword, argument, lanes, values, old, live, row_mask, bank_mask, bound_ctrl, fi)
    np.testing.assert_array_equal(wave.v[1], want)


BUTTERFLY_CASES = [(t, d) for t in TARGETS for d in (1, 2, 4, 8)]


@pytest.mark.parametrize("target, distance", BUTTERFLY_CASES)
@settings(max_examples=20, deadline=None)
@given(live_bits=st.integers(0, 2 ** 64 - 1))
def test_the_butterfly_moves_give_each_live_lane_its_partner_s_value(target, distance, live_bits):
    """The moves of dpp_butterfly, run in order as the selector emits them (the first into the
    result, the others merging into it), leave each lane in EXEC its partner lane i xor d's
    value, or 0 where the partner is off in EXEC: what ds_swizzle_b32 gives."""
    lanes = WAVE_SIZE[target]
    live = (live_bits >> np.arange(lanes, dtype=np.uint64) & np.uint64(1)).astype(bool)
    values = RNG.integers(1, 2 ** 32, lanes, dtype=np.uint64)
    old = RNG.integers(1, 2 ** 32, lanes, dtype=np.uint64)
    wave = OneRegisterWave(target, values, old, live)
    for move in dpp_butterfly(distance, target):
        mods = {"dpp_ctrl": move.code, "row_mask": 0xF, "bank_mask": move.bank_mask, "bound_ctrl": 1}
        EXECUTE["v_mov_b32_dpp"](wave, AmdInstr("v_mov_b32_dpp", (DecodedReg("v", 1, 1),),
                                                (DecodedReg("v", 0, 1),), mods, 1, ""))
    partner = np.arange(lanes) ^ distance
    want = np.where(live, np.where(live[partner], values[partner], 0), old)
    np.testing.assert_array_equal(wave.v[1], want)


def _f32(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


def _s32(bits: int) -> int:
    return bits - (1 << 32) if bits >> 31 else bits


# the VOP2 ops of DPP_COMBINES in the ISA's words, on 32-bit patterns
COMBINE_MODELS = {
    "v_add_f32": lambda a, b: _f32(a) + _f32(b), "v_mul_f32": lambda a, b: _f32(a) * _f32(b),
    "v_min_f32": lambda a, b: min(_f32(a), _f32(b)), "v_max_f32": lambda a, b: max(_f32(a), _f32(b)),
    "v_min_i32": lambda a, b: min(_s32(a), _s32(b)), "v_max_i32": lambda a, b: max(_s32(a), _s32(b)),
    "v_min_u32": min, "v_max_u32": max,
    "v_and_b32": lambda a, b: a & b, "v_or_b32": lambda a, b: a | b, "v_xor_b32": lambda a, b: a ^ b,
}


def _bits(value) -> int:
    if isinstance(value, np.floating):
        return int(np.array([value], np.float32).view(np.uint32)[0])
    return value & 0xFFFFFFFF


@pytest.mark.parametrize("op", DPP_COMBINES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_a_fused_dpp_op_combines_the_moved_value_with_its_second_source(op, data):
    target = data.draw(st.sampled_from(TARGETS))
    lanes = WAVE_SIZE[target]
    text = data.draw(st.sampled_from(sorted(DPP_CODES[target])))
    live = np.array(data.draw(st.lists(st.booleans(), min_size=lanes, max_size=lanes)))
    bound_ctrl = data.draw(st.booleans())
    floats = op.endswith("f32")
    draw = (lambda: RNG.standard_normal(lanes).astype(np.float32).view(np.uint32).astype(np.uint64)) if floats \
        else (lambda: RNG.integers(0, 2 ** 32, lanes, dtype=np.uint64))
    x, y, old = draw(), draw(), draw()
    mods = {"dpp_ctrl": DPP_CODES[target][text], "row_mask": 0xF, "bank_mask": 0xF, "bound_ctrl": int(bound_ctrl)}
    ins = AmdInstr(f"{op}_dpp", (DecodedReg("v", 2, 1),), (DecodedReg("v", 0, 1), DecodedReg("v", 1, 1)), mods, 1, "")
    wave = OneRegisterWave(target, x, y, live)
    wave.v.append(old.copy())
    EXECUTE[f"{op}_dpp"](wave, ins)
    control = next(c for c in DPP_CONTROLS if text in {c.text(a) for a in c.codes})
    argument = next(a for a in control.codes if control.text(a) == text)
    moved = isa_dpp(control.keyword, argument, lanes, x, np.full(lanes, -1, np.int64), live, 0xF, 0xF, True, False)
    want = old.copy()
    for lane in range(lanes):
        source = isa_source_lane(control.keyword, argument, lane, lanes)
        if live[lane] and (bound_ctrl or (source is not None and live[source])):
            want[lane] = _bits(COMBINE_MODELS[op](int(moved[lane]), int(y[lane])))
    np.testing.assert_array_equal(wave.v[2], want)


def test_a_move_read_only_by_its_combine_is_fused_into_it():
    x, t, r, u = (Reg("v", 1, k).all() for k in range(4))
    move = MInst("v_mov_b32_dpp", [t], [x], {"dpp_ctrl": 0xB1, "bound_ctrl": 1})
    fused = fuse_dpp_moves([move, MInst("v_max_f32", [r], [t, x], comment="k.py:3")])
    assert [(i.opcode, i.defs, i.uses, i.mods, i.comment) for i in fused] == [
        ("v_max_f32_dpp", [r], [x, x], {"dpp_ctrl": 0xB1, "bound_ctrl": 1}, "k.py:3")]
    kept = [
        [move, MInst("v_sub_f32", [r], [x, t])],                           # not commutative
        [move, MInst("v_add_f32", [r], [u, t])],                           # the other operand is not x
        [move, MInst("v_add_f32", [r], [x, t]), MInst("v_add_f32", [u], [t, t])],   # t read again
        [MInst("v_mov_b32_dpp", [t], [x], {"dpp_ctrl": 0x104, "bank_mask": 0x5, "bound_ctrl": 1}),
         MInst("v_add_f32", [r], [x, t])],                                 # a partial write
        [MInst("v_mov_b32_dpp", [t], [x], {"dpp_ctrl": 0xB1}), MInst("v_add_f32", [r], [x, t])],   # keeps lanes
    ]
    for insts in kept:
        assert fuse_dpp_moves(insts) == insts


# ------------------------------------------------------------------------- wait states

def test_a_dpp_read_of_a_fresh_vgpr_waits_two_states_on_cdna_only():
    x, y, z = (Reg("v", 1, k).all() for k in range(3))
    write = MInst("v_add_f32", [x], [y, z])
    other = MInst("v_mul_f32", [z], [y, y])
    dpp = MInst("v_mov_b32_dpp", [z], [x], {"dpp_ctrl": 0xB1, "bound_ctrl": 1})
    for target in CDNA:
        nops = [i for i in insert_nops([write, dpp], None, target) if i.opcode == "s_nop"]
        assert [(n.uses[0], n.comment) for n in nops] == [(Imm.int(1), "a VGPR written is read by DPP")]
        nops = [i for i in insert_nops([write, other, dpp], None, target) if i.opcode == "s_nop"]
        assert [n.uses[0] for n in nops] == [Imm.int(0)]
    assert insert_nops([write, dpp], None, "gfx1100") == [write, dpp]
    merge = MInst("v_mov_b32_dpp_merge", [z], [z, y], {"dpp_ctrl": 0x114, "bank_mask": 0xA, "bound_ctrl": 1})
    first = MInst("v_mov_b32_dpp", [z], [y], {"dpp_ctrl": 0x104, "bank_mask": 0x5, "bound_ctrl": 1})
    assert insert_nops([first, merge], None, "gfx942") == [first, merge]   # the kept lanes are not read
    head = MInst("label", [], [Label(".Lloop")])   # a loop's head: its back edge may have just written x
    nops = [i for i in insert_nops([head, other, dpp], None, "gfx942") if i.opcode == "s_nop"]
    assert [n.uses[0] for n in nops] == [Imm.int(0)]


@needs_llvm
def test_the_emulator_reports_a_dpp_read_inside_the_wait_states():
    """A reduction on gfx942 runs with its s_nop; with the s_nop before a DPP move removed, the
    emulator names the register and the wait states missing."""
    x = RNG.standard_normal(64).astype(np.float32)
    out = poisoned(1, np.float32)
    compiled = tile.emulate(row_sum_kernel, target="gfx942")[(1,)](x, out, N=64, num_warps=1)
    text = compiled.asm["amdgcn"]
    np.testing.assert_allclose(out, x.astype(np.float64).sum(), rtol=1e-5)
    lines = text.splitlines()
    nops = [k for k, line in enumerate(lines) if line.strip().startswith("s_nop 1")
            and "_dpp " in lines[k + 1]]
    assert nops
    broken = "\n".join(line for k, line in enumerate(lines) if k not in nops)
    with pytest.raises(EmulatorError, match=r"v\d+ is read by a DPP instruction 0 wait states after a VALU wrote it "
                                            r"\(gfx942 needs 2: s_nop 1\)"):
        run_amdgcn(broken, 1, [x, poisoned(1, np.float32)])


# ------------------------------------------------------------------------- kernels

def dpp_moves(text: str) -> list[str]:
    """The controls of the text's DPP instructions (moves and fused ops), in order."""
    return [line.split(" row_mask")[0].rsplit(" ", 1)[1] for line in instructions(text)
            if line.split(" ")[0].endswith("_dpp")]


def emulate(kernel, target, grid, *args, **constexprs):
    compiled = tile.emulate(kernel, target=target)[grid](*args, **constexprs)
    assert assemble(compiled.asm["amdgcn"], target)[:4] == b"\x7fELF"
    return compiled.asm["amdgcn"]


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_a_wave_reduction_moves_by_dpp_where_one_move_reaches(target):
    """tl.sum over one wave: xor 1 and 2 are quad_perm moves everywhere, 4 and 8 row_xmask on
    gfx1100 and on CDNA row_shl:4 and row_shr:4 into alternate banks and row_ror:8; 16 is a
    ds_swizzle_b32, 32 (wave64) a ds_bpermute_b32. The one-move steps are fused into their adds
    (v_add_f32_dpp), the two-move one is not."""
    x = RNG.standard_normal(64).astype(np.float32)
    out = poisoned(1, np.float32)
    text = emulate(row_sum_kernel, target, (1,), x, out, N=64, num_warps=1)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(), rtol=1e-5)
    swizzles = [int(line.rsplit("offset:", 1)[1]) >> 10 for line in instructions(text) if line.startswith("ds_swizzle")]
    moves = ["quad_perm:[1,0,3,2]", "quad_perm:[2,3,0,1]"]
    if target == "gfx1100":
        assert dpp_moves(text) == moves + ["row_xmask:4", "row_xmask:8"]
    else:
        assert dpp_moves(text) == moves + ["row_shl:4", "row_shr:4", "row_ror:8"]
    assert swizzles == [16]
    fused = [line.split(" ")[0] for line in instructions(text) if line.startswith("v_add_f32_dpp")]
    assert len(fused) == (4 if target == "gfx1100" else 3)
    assert sum(line.startswith("ds_bpermute_b32") for line in instructions(text)) == (target != "gfx1100")


@tile.jit
def min_and_int_kernel(x_ptr, i_ptr, min_ptr, imax_ptr, isum_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    o = tl.arange(0, R)
    tl.store(min_ptr + o, tl.min(tl.load(x_ptr + offs), axis=1))
    i = tl.load(i_ptr + offs)
    tl.store(imax_ptr + o, tl.max(i, axis=1))
    tl.store(isum_ptr + o, tl.sum(i, axis=1))


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_min_and_integer_reductions_fuse_their_dpp_moves(target):
    """Row minima of floats and maxima of int32 are fused DPP ops (v_min_f32_dpp, v_max_i32_dpp);
    the integer sum's add (v_add_u32, spelled v_add_nc_u32 on gfx1100) is not in DPP_COMBINES, so
    it keeps its moves."""
    rows, cols = 8, 64
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    i = RNG.integers(-2 ** 20, 2 ** 20, (rows, cols)).astype(np.int32)
    mins, imax, isum = poisoned(rows, np.float32), poisoned(rows, np.int32), poisoned(rows, np.int32)
    text = emulate(min_and_int_kernel, target, (1,), x, i, mins, imax, isum, R=rows, C=cols, num_warps=1)
    np.testing.assert_array_equal(mins, x.min(axis=1))
    np.testing.assert_array_equal(imax, i.max(axis=1))
    np.testing.assert_array_equal(isum, i.astype(np.int64).sum(axis=1))
    opcodes = {line.split(" ")[0] for line in instructions(text)}
    assert {"v_min_f32_dpp", "v_max_i32_dpp", "v_mov_b32_dpp"} <= opcodes


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_and_scans_through_dpp(target, axis):
    """Sums, maxima, argmin and argmax over each axis (DPP across the lanes of a row), and the
    scans, whose up-shuffles stay on ds_bpermute_b32 (no DPP control shifts across rows of 16)."""
    rows, cols = 16, 64
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    count = cols if axis == 0 else rows
    outs = [poisoned(count, np.float32), poisoned(count, np.float32), poisoned(count, np.int32),
            poisoned(count, np.int32)]
    text = emulate(reduce_kernel, target, (1,), x, *outs, R=rows, C=cols, AXIS=axis, OUT=count, num_warps=2)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(outs[0], x64.sum(axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], x.max(axis=axis))
    np.testing.assert_array_equal(outs[2], x.argmin(axis=axis))
    np.testing.assert_array_equal(outs[3], x.argmax(axis=axis))
    if axis == 1:   # each row's 64 elements lie across lanes
        assert dpp_moves(text)
    y = RNG.uniform(0.9, 1.1, (rows, cols)).astype(np.float32)
    sums, prods = poisoned((rows, cols), np.float32), poisoned((rows, cols), np.float32)
    text = emulate(scan_kernel, target, (1,), y, sums, prods, R=rows, C=cols, AXIS=axis, num_warps=2)
    np.testing.assert_allclose(sums, np.cumsum(y.astype(np.float64), axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(prods, np.cumprod(y.astype(np.float64), axis=axis), rtol=1e-5)


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_softmax_and_layer_norm_through_dpp(target):
    rows, cols = 3, 300
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w, b = RNG.standard_normal(cols).astype(np.float32), RNG.standard_normal(cols).astype(np.float32)
    soft, norm = poisoned((rows, cols), np.float32), poisoned((rows, cols), np.float32)
    texts = [emulate(softmax_kernel, target, (rows,), x, soft, cols, BLOCK=512, num_warps=2),
             emulate(layer_norm_kernel, target, (rows,), x, w, b, norm, cols, 1e-5, BLOCK=512, num_warps=2)]
    assert all(dpp_moves(text) for text in texts)
    assert_softmax_and_layer_norm(x, w, b, soft, norm)
