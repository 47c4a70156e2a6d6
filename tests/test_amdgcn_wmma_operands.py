"""WMMA operands built where they are loaded (gfx1100): A's and B's eight words are loaded or
packed straight into the tuples v_wmma reads, B's 16-bit values read half a VGPR at a time
(ds_load_u16_d16 / _d16_hi, no repacking), C is written once into the tuple D overwrites, a
word unpacked only to be stored again is stored whole, and 16-bit values that loads
zero-extended are packed without clearing their high bits first. Counted in a small dot's
assembly, and the results still match NumPy on the emulator; the D16 reads' merging and their
waits on hand-written code."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble
from amdgcn_util import instructions, needs_llvm
from test_amdgcn_wmma_dot import one_dot_kernel

RNG = np.random.default_rng(1509)




@tile.jit
def strided_copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Every other element of x: loaded one at a time, stored two to a word."""
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * 2))


def operands(m: int, n: int, k: int, dtype):
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    return a, b, np.full((m, n), np.nan, np.float32)


def counts(kernel, args, num_warps: int, target: str = "gfx1100", **constexprs) -> collections.Counter:
    text = str(tile.dump(kernel, *args, stage="amdgcn", target=target, num_warps=num_warps, **constexprs))
    return collections.Counter(line.split()[0] for line in instructions(text))


def test_a_small_dot_gathers_no_operands():
    """One 16 x 16 x 16 WMMA in one wave: before, 205 instructions, 40 v_mov_b32 (A's and B's
    words copied into fresh tuples, C's zeros written and copied twice), 21 v_bfe_u32 and 12
    v_lshl_or_b32 (B read 16 bits at a time into 16 VGPRs, then packed); now the eight zeros of
    C, no bit-field extracts but the work-item id's, and B read into its tuple by halves."""
    ops = counts(one_dot_kernel, operands(16, 16, 16, np.float16), 1, M=16, N=16, K=16)
    assert ops["v_wmma_f32_16x16x16_f16"] == 1
    assert ops["v_mov_b32"] == 8
    assert ops["v_bfe_u32"] == 1
    assert ops["v_lshl_or_b32"] == 0 and ops["ds_load_u16"] == 0
    assert ops["ds_load_u16_d16"] == ops["ds_load_u16_d16_hi"] == 8
    assert sum(ops.values()) <= 126


@pytest.mark.parametrize("m, n, k, num_warps, dtype", [(16, 16, 16, 1, np.float16), (32, 32, 32, 2, np.float16),
                                                       (16, 32, 16, 1, np.float16), (64, 32, 32, 4, np.float16)])
def test_dots_still_match_numpy(m, n, k, num_warps, dtype):
    a, b, out = operands(m, n, k, dtype)
    tile.emulate(one_dot_kernel, target="gfx1100")[(1,)](a, b, out, M=m, N=n, K=k, num_warps=num_warps)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
    ops = counts(one_dot_kernel, (a, b, out), num_warps, M=m, N=n, K=k)
    wmmas = sum(v for op, v in ops.items() if op.startswith("v_wmma"))
    assert ops["v_mov_b32"] <= 8 * wmmas   # at most C's zeros, once per WMMA


@pytest.mark.parametrize("target", ["gfx1100", "gfx942"])
def test_sign_extended_halves_are_still_cleared_before_packing(target):
    """i16 loads sign-extend (global_load_sshort): their high bits are cleared before the next
    value is or-ed above them; f16 loads zero-extend and are packed as they are."""
    x = RNG.integers(-30000, 30000, 256).astype(np.int16)
    out = np.full(128, 0x5555, np.int16)
    tile.emulate(strided_copy_kernel, target=target)[(1,)](x, out, BLOCK=128, num_warps=1)
    np.testing.assert_array_equal(out, x[::2])
    signed = counts(strided_copy_kernel, (x, out), 1, target, BLOCK=128)
    xf = RNG.standard_normal(256).astype(np.float16)
    outf = np.full(128, np.nan, np.float16)
    tile.emulate(strided_copy_kernel, target=target)[(1,)](xf, outf, BLOCK=128, num_warps=1)
    np.testing.assert_array_equal(outf, xf[::2])
    unsigned = counts(strided_copy_kernel, (xf, outf), 1, target, BLOCK=128)
    assert signed["v_lshl_or_b32"] == unsigned["v_lshl_or_b32"] > 0
    assert signed["v_bfe_u32"] == unsigned["v_bfe_u32"] + signed["v_lshl_or_b32"]


# ------------------------------------------------------------------- D16 reads, by hand

D16_PAIR = """
s_load_b64 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 1, v0
v_mov_b32 v2, 0x{low:x}
v_mov_b32 v3, 0x{high:x}
ds_store_b16 v1, v2
ds_store_b16 v1, v3 offset:64
s_waitcnt lgkmcnt(0)
v_mov_b32 v4, 0x77777777
{first}
{second}
{wait}
v_lshlrev_b32 v5, 2, v0
v_mov_b32 v6, s4
v_mov_b32 v7, s5
v_add_co_u32 v6, vcc_lo, v6, v5
v_add_co_ci_u32 v7, vcc_lo, v7, 0, vcc_lo
global_store_b32 v[6:7], v4, off
s_endpgm
"""


def run_d16_pair(first: str, second: str, wait: str = "s_waitcnt lgkmcnt(0)") -> np.ndarray:
    from test_emulator_amdgcn import text_of
    from tile.emulator.amdgcn_machine import run_amdgcn
    body = D16_PAIR.format(low=0x1234, high=0xABCD, first=first, second=second, wait=wait)
    text = text_of(body, [("out", 8, "global_buffer")], lds=128, threads=32, wave=32)
    text = text.replace("gfx942", "gfx1100")
    out = np.zeros(32, np.uint32)
    run_amdgcn(text, 1, [out])
    return out


@pytest.mark.parametrize("order", [0, 1])
def test_d16_reads_fill_one_half_each_and_merge_as_they_land(order):
    reads = ["ds_load_u16_d16 v4, v1", "ds_load_u16_d16_hi v4, v1 offset:64"]
    out = run_d16_pair(*(reads if order == 0 else reads[::-1]))
    np.testing.assert_array_equal(out, 0xABCD1234)


def test_one_d16_read_keeps_the_other_half():
    out = run_d16_pair("ds_load_u16_d16_hi v4, v1 offset:64", "s_nop 0")
    np.testing.assert_array_equal(out, 0xABCD7777)


def test_reading_a_d16_result_before_it_lands_is_an_error():
    from tile.emulator import EmulatorError
    with pytest.raises(EmulatorError, match="v4 is touched before its load was waited for"):
        run_d16_pair("ds_load_u16_d16 v4, v1", "ds_load_u16_d16_hi v4, v1 offset:64", wait="v_mov_b32 v8, v4")


def test_the_waits_let_d16_reads_of_one_register_overlap():
    from tile.codegen.amdgcn.mir import MInst, Reg
    from tile.codegen.amdgcn.waitcnt import insert_waits
    word, address, other = Reg("v", 1, 0), Reg("v", 1, 1), Reg("v", 1, 2)
    insts = [MInst("ds_read_u16_d16", [word.all()], [address.all()]),
             MInst("ds_read_u16_d16_hi", [word.all()], [address.all()], {"offset": 2}),
             MInst("v_mov_b32", [other.all()], [word.all()])]
    waited = insert_waits(insts, target="gfx1100")
    assert [i.opcode for i in waited] == ["ds_read_u16_d16", "ds_read_u16_d16_hi", "s_waitcnt", "v_mov_b32"]
    assert waited[2].mods == {"lgkmcnt": 0}


@needs_llvm
def test_the_small_dot_assembles():
    a, b, out = operands(16, 16, 16, np.float16)
    text = str(tile.dump(one_dot_kernel, a, b, out, stage="amdgcn", target="gfx1100", num_warps=1, M=16, N=16, K=16))
    assert assemble(text, "gfx1100")[:4] == b"\x7fELF"
