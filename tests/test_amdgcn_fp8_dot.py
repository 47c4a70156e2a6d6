"""tl.dot on gfx942's fnuz fp8 formats (tl.float8e4b8 / tl.float8e5b16) runs on the fp8 MFMA
(v_mfma_f32_32x32x16_* / 16x16x32_*, fp8 or bf8 for each of A and B) with the operands kept
8-bit: the #mfma_op layouts of k_width 8 (property-tested against the CDNA3 ISA's operand
layout), accelerate-dot's choice of instruction, four values packed per dword, and dots of
several shapes and formats on the emulator against float64 NumPy on the decoded values
(test_amdgcn_fp8.fnuz, independent of tile.ir.float8)."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import UnsupportedOnTarget, assemble, emit_amdgcn
from tile.codegen.amdgcn.isa import MFMA_SHAPES, mfma_shape
from tile.ir import TensorType, VerificationError, parse_op, verify
from tile.ir.types import f8e4b8, parse_type
from tile.ir.mfma_layouts import MfmaLayout, MfmaOperandLayout, mfma_k_width, mfma_operand_layout
from tile.opt.accelerate_dot import MFMA_INSTRS

from amdgcn_util import needs_llvm
from test_amdgcn_fp8 import FNUZ, FORMATS, fnuz, moderate_codes

FP8_SHAPES = [s for s in MFMA_SHAPES.values() if s.values_per_lane == 8]


# the CDNA3 ISA's 8-bit operand layout, per element (7.1: lane l holds row l % M of A, eight
# consecutive k from 8 * (l // M), the lowest in the low byte of its first VGPR)
def isa_a8(m, lane, j):
    return lane % m, 8 * (lane // m) + j


def isa_b8(n, lane, j):
    return 8 * (lane // n) + j, lane % n


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FP8_SHAPES), st.integers(0, 63), st.integers(0, 7))
def test_8_bit_operand_layouts_match_the_isa(shape, lane, value):
    a = mfma_operand_layout(0, shape.m, shape.k, k_width=8)
    b = mfma_operand_layout(1, shape.n, shape.k, k_width=8)
    assert a.apply(value, lane, 0) == isa_a8(shape.m, lane, value)
    assert b.apply(value, lane, 0) == isa_b8(shape.n, lane, value)
    assert a.num_registers == 8 == 4 * shape.operand_dwords


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([32, 16]), st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2)]),
       st.integers(0, 1), st.integers(0, 1), st.integers(0, 2))
def test_workgroup_8_bit_operands_hold_each_wave_s_k_steps(instr, waves, rep_m, rep_n, rep_k):
    """A's register 8 * (s + steps * i) + v is value v of k-step s (K = 16 for 32x32, 32 for
    16x16) of tile row i in the ISA's layout, warp w being wave w, its 64 lanes the ISA's (B alike)."""
    (wm, wn), k_instr = waves, {32: 16, 16: 32}[instr]
    reps_m, reps_n, steps = 1 << rep_m, 1 << rep_n, 1 << rep_k
    m, n, k = instr * wm * reps_m, instr * wn * reps_n, k_instr * steps
    result = MfmaLayout(instr, waves)
    a_op, b_op = MfmaOperandLayout(0, result, 8), MfmaOperandLayout(1, result, 8)
    assert a_op.instr_k == k_instr
    a, b = a_op.to_linear((m, k)), b_op.to_linear((k, n))
    for wave in range(wm * wn):
        wave_m, wave_n = wave % wm, wave // wm
        for lane in range(0, 64, 5):
            for s in range(steps):
                for v in range(8):
                    for i in range(reps_m):
                        row, kk = isa_a8(instr, lane, v)
                        assert a.apply(8 * (s + steps * i) + v, lane, wave) == \
                            (instr * (wave_m + wm * i) + row, k_instr * s + kk)
                    for j in range(reps_n):
                        kk, col = isa_b8(instr, lane, v)
                        assert b.apply(8 * (s + steps * j) + v, lane, wave) == \
                            (k_instr * s + kk, instr * (wave_n + wn * j) + col)


def test_8_bit_operand_layouts_print_parse_and_refuse_other_widths():
    result = MfmaLayout(16, (2, 1))
    layout = MfmaOperandLayout(0, result, 8)
    assert str(layout) == "#mfma_op<op_idx = 0, parent = #mfma<instr = 16, wpc = [2, 1]>, k_width = 8>"
    t = TensorType((32, 64), f8e4b8, layout)
    assert parse_type(str(t)) == t
    assert mfma_k_width(8) == 8 and mfma_k_width(16) == 4
    with pytest.raises(ValueError, match="unsupported mfma operand layout"):
        MfmaOperandLayout(0, result, 2)
    with pytest.raises(ValueError, match="no MFMA takes 32-bit operands"):
        mfma_k_width(32)
    with pytest.raises(ValueError, match="does not tile a \\[32, 48\\] tensor"):
        layout.to_linear((32, 48))


def test_accelerate_dot_s_table_is_the_isa_s():
    """Every (target, A type, result size) accelerate-dot may pick has an MFMA in the ISA table,
    with B of the other fp8 format too, and no MFMA of the table is left out."""
    picked = {(target, t, m) for target, types in MFMA_INSTRS.items() for t, sizes in types.items() for m in sizes}
    in_isa = {(s.target, s.operand_type, s.m) for s in MFMA_SHAPES.values()}
    assert picked == in_isa
    for a, b in (("f8e4b8", "f8e5b16"), ("f8e5b16", "f8e4b8")):
        for m in (16, 32):
            assert mfma_shape("gfx942", m, a, b).mnemonic.endswith(f"_{FNUZ_NAMES[a]}_{FNUZ_NAMES[b]}")


FNUZ_NAMES = {"f8e4b8": "fp8", "f8e5b16": "bf8"}


@tile.jit
def fp8_dot_acc(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BLOCK_K: tl.constexpr,
                A_TYPE: tl.constexpr, B_TYPE: tl.constexpr):
    """C += A @ B over K in BLOCK_K steps, A and B fp8 codes read as bytes and bitcast."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :]).to(A_TYPE, bitcast=True)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :]).to(B_TYPE, bitcast=True)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def close_to_float64(got: np.ndarray, x: np.ndarray, y: np.ndarray, c: np.ndarray) -> None:
    """f32 sums of exact products: within the recursive-summation bound, (K + 1) units of f32
    rounding times the sum of magnitudes."""
    bound = (x.shape[1] + 1) * 2.0 ** -24 * (np.abs(x) @ np.abs(y) + np.abs(c))
    assert not np.isnan(got).any()
    assert (np.abs(got - (x @ y + c)) <= bound).all()


@pytest.mark.parametrize("m, n, k, block_k, num_warps, a_type, b_type, instr", [   # num_warps: waves of 64
    (32, 32, 32, 32, 1, "f8e4b8", "f8e4b8", "32x32x16"),
    (64, 64, 64, 32, 2, "f8e5b16", "f8e5b16", "32x32x16"),
    (32, 32, 64, 32, 2, "f8e4b8", "f8e5b16", "16x16x32"),
    (16, 64, 64, 64, 1, "f8e5b16", "f8e4b8", "16x16x32"),
    (64, 32, 32, 16, 2, "f8e4b8", "f8e5b16", "32x32x16"),
])
def test_fp8_dot_runs_on_the_fp8_mfma(m, n, k, block_k, num_warps, a_type, b_type, instr):
    rng = np.random.default_rng(m + 3 * n + 7 * k + len(a_type + b_type))
    a, b = moderate_codes(rng, (m, k), a_type), moderate_codes(rng, (k, n), b_type)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    compiled = tile.emulate(fp8_dot_acc, target="gfx942")[(1,)](
        a, b, c, M=m, N=n, K=k, BLOCK_K=block_k, A_TYPE=FNUZ[a_type], B_TYPE=FNUZ[b_type], num_warps=num_warps)
    mnemonic = f"v_mfma_f32_{instr}_{FNUZ_NAMES[a_type]}_{FNUZ_NAMES[b_type]}"
    mfmas = {line.split()[0] for line in compiled.asm["amdgcn"].splitlines() if line.strip().startswith("v_mfma")}
    assert mfmas == {mnemonic}
    close_to_float64(c, fnuz(a, a_type), fnuz(b, b_type), c0.astype(np.float64))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([16, 32, 64]), st.sampled_from([16, 32, 64]), st.sampled_from([32, 64]),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from(sorted(FNUZ)), st.sampled_from(sorted(FNUZ)),
       st.integers(0, 2 ** 32 - 1))
def test_fp8_dots_of_any_shape_compute_on_gfx942(m, n, k, num_warps, a_type, b_type, seed):
    """Whatever the shape and warps, the dot computes (MFMA where the waves tile it, else FMA),
    and a dot that uses MFMA uses the fp8 one of its operand formats, never an f16 MFMA."""
    rng = np.random.default_rng(seed)
    a, b = moderate_codes(rng, (m, k), a_type), moderate_codes(rng, (k, n), b_type)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    compiled = tile.emulate(fp8_dot_acc, target="gfx942")[(1,)](
        a, b, c, M=m, N=n, K=k, BLOCK_K=32, A_TYPE=FNUZ[a_type], B_TYPE=FNUZ[b_type], num_warps=num_warps)
    mfmas = {line.split()[0] for line in compiled.asm["amdgcn"].splitlines() if line.strip().startswith("v_mfma")}
    assert all(name.endswith(f"_{FNUZ_NAMES[a_type]}_{FNUZ_NAMES[b_type]}") for name in mfmas)
    close_to_float64(c, fnuz(a, a_type), fnuz(b, b_type), c0.astype(np.float64))


def test_fp8_dot_operands_stay_8_bit_in_the_ir():
    """No conversion to f16 on gfx942: the dot's operands are fp8 in #mfma_op of k_width 8,
    while an sm_90 dot on the same fnuz formats still goes through f16."""
    codes = np.zeros((32, 64), np.uint8)
    args = (codes, codes.T.copy(), np.zeros((32, 32), np.float32))
    kw = dict(M=32, N=32, K=64, BLOCK_K=64, A_TYPE=tl.float8e4b8, B_TYPE=tl.float8e5b16, num_warps=4)
    gpu = str(tile.dump(fp8_dot_acc, *args, **kw, stage="gpu", target="gfx942"))
    dots = [line for line in gpu.splitlines() if "tt.dot" in line]
    assert len(dots) == 1 and "tensor<32x32xf32, #mfma<instr = 16" in dots[0]
    assert "xf8e4b8, #mfma_op<op_idx = 0" in gpu and "xf8e5b16, #mfma_op<op_idx = 1" in gpu and "k_width = 8>" in gpu
    assert "xf16" not in gpu
    ptx_ir = str(tile.dump(fp8_dot_acc, *args, **kw, stage="tile", target="sm_90a"))
    assert "xf16" in ptx_ir


def test_fp8_dot_of_a_shape_mfma_cannot_tile_takes_the_fma_path():
    """K = 8 is below any fp8 MFMA's K: the dot decodes the fp8 values and uses v_fma_f32."""
    rng = np.random.default_rng(11)
    m, n, k = 32, 32, 8
    a, b = moderate_codes(rng, (m, k), "f8e4b8"), moderate_codes(rng, (k, n), "f8e5b16")
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    compiled = tile.emulate(fp8_dot_acc, target="gfx942")[(1,)](
        a, b, c, M=m, N=n, K=k, BLOCK_K=k, A_TYPE=tl.float8e4b8, B_TYPE=tl.float8e5b16, num_warps=2)
    assert "v_mfma" not in compiled.asm["amdgcn"] and "v_fma_f32" in compiled.asm["amdgcn"]
    close_to_float64(c, fnuz(a, "f8e4b8"), fnuz(b, "f8e5b16"), c0.astype(np.float64))


def small_codes(rng, shape, operand_type) -> np.ndarray:
    """Random fnuz codes of magnitude 2^-3..2^2 (so that sums of 80 products stay within f16)."""
    exp_bits, man_bits, bias = FORMATS[operand_type]
    exponent = rng.integers(bias - 3, bias + 2, shape)
    codes = (rng.integers(0, 2, shape) << 7) | (exponent << man_bits) | rng.integers(0, 1 << man_bits, shape)
    return codes.astype(np.uint8)


def _tutorial_04():
    path = pathlib.Path(__file__).parent.parent / "tutorials" / "04_matrix_multiplication.py"
    spec = importlib.util.spec_from_file_location("tutorial_04_fp8", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul_kernel.fn


@needs_llvm
@pytest.mark.parametrize("a_type, b_type, num_warps, num_stages", [("f8e4b8", "f8e4b8", 4, 2),
                                                                  ("f8e5b16", "f8e4b8", 4, 1)])
def test_tutorial_04_matmul_on_fnuz_fp8(a_type, b_type, num_warps, num_stages):
    """Tutorial 04's kernel (grouped order, masked K tail, leaky ReLU, f16 output) on fp8 inputs
    passed as tile.reinterpret'ed bytes, at a shape the tiles do not divide; it assembles and
    links with llvm-mc / ld.lld."""
    kernel = _tutorial_04()
    m, n, k = 40, 72, 80
    rng = np.random.default_rng(len(a_type) + num_stages)
    a, b = small_codes(rng, (m, k), a_type), small_codes(rng, (k, n), b_type)
    c = np.full((m, n), np.nan, np.float16)
    block_m, block_n, group_m = 32, 64, 2
    grid = (-(-m // block_m) * -(-n // block_n),)
    compiled = tile.emulate(kernel, target="gfx942")[grid](
        tile.reinterpret(a, FNUZ[a_type]), tile.reinterpret(b, FNUZ[b_type]), c, m, n, k, k, 1, n, 1, n, 1,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=32, GROUP_M=group_m, ACTIVATION="leaky_relu",
        num_warps=num_warps, num_stages=num_stages)
    assert f"_{FNUZ_NAMES[a_type]}_{FNUZ_NAMES[b_type]}" in compiled.asm["amdgcn"]
    assert b"ELF" in assemble(compiled.asm["amdgcn"], "gfx942")[:4]
    exact = fnuz(a, a_type) @ fnuz(b, b_type)
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)


def _mfma_func(atype: str, btype: str) -> str:
    zeros = ", ".join(["%z"] * 4)
    return (f'simt.func {{arg_names = ["p"], num_warps = 2, shared_bytes = 0, sym_name = "k"}} {{\n'
            f"^bb(%p: ptr<f32>):\n  %t = simt.tid : i32\n  %z = arith.constant {{value = 0.0}} : f32\n"
            f"  %d0, %d1, %d2, %d3 = simt.mfma %t, %t, %t, %t, {zeros} "
            f'{{atype = "{atype}", btype = "{btype}", instr = 16}} : f32, f32, f32, f32\n  simt.return\n}}')


def test_simt_mfma_takes_a_second_operand_type_only_between_the_fp8_formats():
    assert "v_mfma_f32_16x16x32_bf8_fp8" in emit_amdgcn(parse_op(_mfma_func("f8e5b16", "f8e4b8")), "gfx942")
    with pytest.raises(VerificationError, match="btype differs from atype only between"):
        verify(parse_op(_mfma_func("f16", "bf16")))
    with pytest.raises(UnsupportedOnTarget, match=r"simt\.mfma of 16x16 on f8e4b8 x f8e5b16"):
        emit_amdgcn(parse_op(_mfma_func("f8e4b8", "f8e5b16")), "gfx90a")
