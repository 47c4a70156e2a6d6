"""gfx942's MFMA on 8-bit floats (v_mfma_f32_16x16x32 / 32x32x16, fp8 and bf8 for A and B): the
"fnuz" formats (E4M3 bias 8, E5M2 bias 16, 0x80 the one NaN, no infinities), decoded here
independently of tile.ir.float8; a one-wave kernel per instruction assembles with llvm-mc and
computes D = A x B + C on the wave model bit for bit as NumPy does in float64 rounded once to
f32 (inputs whose sums float64 holds exactly). tl.dot on fp8 for gfx942: the fnuz types compute
on the fp8 MFMA (more in test_amdgcn_fp8_dot), OCP float8e4nv / float8e5 are a CompilationError
saying gfx942's formats differ."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble
from tile.codegen.amdgcn.isa import MFMA_SHAPES
from tile.emulator.amdgcn_machine import run_amdgcn

from amdgcn_util import needs_llvm
from test_amdgcn_mfma import mfma_kernel

FP8_SHAPES = [s for s in MFMA_SHAPES.values() if s.values_per_lane == 8]
FORMATS = {"f8e4b8": (4, 3, 8), "f8e5b16": (5, 2, 16)}   # exponent bits, mantissa bits, bias
NAN = 0x80


def fnuz(codes: np.ndarray, operand_type: str) -> np.ndarray:
    """The float64 values of fnuz codes: sign | exponent | mantissa, exponent 0 subnormal."""
    exp_bits, man_bits, bias = FORMATS[operand_type]
    codes = codes.astype(np.int64)
    exponent, mantissa = (codes >> man_bits) & ((1 << exp_bits) - 1), codes & ((1 << man_bits) - 1)
    magnitude = np.where(exponent == 0, mantissa * 2.0 ** (1 - bias - man_bits),
                         (1 + mantissa / 2.0 ** man_bits) * 2.0 ** (exponent - bias))
    return np.where(codes == NAN, np.nan, np.where(codes & 0x80, -magnitude, magnitude))


def lane_codes(shape, codes: np.ndarray, operand: int) -> np.ndarray:
    """[64 lanes, 2 dwords] of 8-bit codes of A (operand 0, m x k) or B (1, k x n): lane l holds
    A's row l % m (B's column l % n) at k = 8 * (l // m) + j in byte j (CDNA3 ISA 7.1)."""
    mn = shape.m if operand == 0 else shape.n
    lanes = np.arange(64)
    out = np.zeros((64, 8), np.uint8)
    for j in range(8):
        k = 8 * (lanes // mn) + j
        out[:, j] = codes[lanes % mn, k] if operand == 0 else codes[k, lanes % mn]
    return out.view(np.uint32)


def result_coords(shape) -> tuple[np.ndarray, np.ndarray]:
    """[64, registers] rows and columns of D in each lane's registers (the 16-bit MFMA's layout)."""
    lanes, regs = np.arange(64)[:, None], np.arange(shape.result_dwords)[None, :]
    rows = 4 * (64 // shape.n) * (regs // 4) + 4 * (lanes // shape.n) + regs % 4
    return rows, np.broadcast_to(lanes % shape.n, rows.shape)


def run_fp8_mfma(shape, a_codes: np.ndarray, b_codes: np.ndarray, c: np.ndarray) -> np.ndarray:
    kernel = mfma_kernel(shape)
    rows, cols = result_coords(shape)
    cd = np.ascontiguousarray(c[rows, cols].astype(np.float32))
    run_amdgcn(kernel.text, 1, [lane_codes(shape, a_codes, 0), lane_codes(shape, b_codes, 1), cd])
    got = np.full((shape.m, shape.n), np.nan, np.float32)
    got[rows, cols] = cd
    return got


def expected(shape, a_codes, b_codes, c) -> np.ndarray:
    a, b = fnuz(a_codes, shape.operand_type), fnuz(b_codes, shape.b_operand_type)
    return (a @ b + c.astype(np.float64)).astype(np.float32)


def moderate_codes(rng, shape_mn_k, operand_type) -> np.ndarray:
    """Random non-NaN codes whose exponent stays within 2^-8..2^8 (bf8's full range would make
    the float64 sums inexact, and then no rounding order is the reference)."""
    exp_bits, man_bits, bias = FORMATS[operand_type]
    exponent = rng.integers(max(1, bias - 8), bias + 8, shape_mn_k)
    mantissa = rng.integers(0, 1 << man_bits, shape_mn_k)
    sign = rng.integers(0, 2, shape_mn_k) << 7
    codes = (sign | (exponent << man_bits) | mantissa).astype(np.uint8)
    codes[codes == NAN] = 0
    return codes


@needs_llvm
@pytest.mark.parametrize("shape", FP8_SHAPES, ids=lambda s: s.mnemonic)
def test_fp8_mfma_assembles_and_computes_bit_exactly(shape):
    assert b"ELF" in assemble(mfma_kernel(shape).text, "gfx942")[:4]
    rng = np.random.default_rng(shape.m + len(shape.mnemonic))
    a = moderate_codes(rng, (shape.m, shape.k), shape.operand_type)
    b = moderate_codes(rng, (shape.k, shape.n), shape.b_operand_type)
    c = rng.standard_normal((shape.m, shape.n)).astype(np.float32)
    np.testing.assert_array_equal(run_fp8_mfma(shape, a, b, c), expected(shape, a, b, c))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([s for s in FP8_SHAPES if s.m == 16]), st.integers(0, 2 ** 32 - 1))
def test_every_fp8_code_decodes_as_the_fnuz_format(shape, seed):
    """All 255 non-NaN E4M3 codes (and bf8 codes near one) against B = one-hot columns: D's
    column j is then A's column picked by B, exactly; the NaN code poisons its row."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (shape.m, shape.k)).astype(np.uint8)
    if shape.operand_type == "f8e5b16":
        a = moderate_codes(rng, a.shape, "f8e5b16")
    nan_row = int(rng.integers(0, shape.m))
    a[a == NAN] = 0
    a[nan_row, int(rng.integers(0, shape.k))] = NAN
    one = {"f8e4b8": 0x40, "f8e5b16": 0x40}[shape.b_operand_type]   # exponent = bias, mantissa 0: 1.0
    assert fnuz(np.array([one]), shape.b_operand_type)[0] == 1.0
    picks = rng.integers(0, shape.k, shape.n)
    b = np.zeros((shape.k, shape.n), np.uint8)
    b[picks, np.arange(shape.n)] = one
    c = np.zeros((shape.m, shape.n), np.float32)
    got = run_fp8_mfma(shape, a, b, c)
    want = expected(shape, a, b, c)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[nan_row]).all() and not np.isnan(np.delete(got, nan_row, axis=0)).any()


# --------------------------------------------------------------------------- tl.dot on fp8

@tile.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, A_TYPE: tl.constexpr,
            B_TYPE: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :]).to(A_TYPE, bitcast=True)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :]).to(B_TYPE, bitcast=True)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


FNUZ = {"f8e4b8": tl.float8e4b8, "f8e5b16": tl.float8e5b16}


@pytest.mark.parametrize("a_type, b_type", [("f8e4b8", "f8e4b8"), ("f8e5b16", "f8e5b16"), ("f8e4b8", "f8e5b16")])
def test_dot_on_fnuz_fp8_computes_on_gfx942(a_type, b_type):
    rng = np.random.default_rng(len(a_type + b_type))
    m, n, k = 32, 32, 64
    a, b = moderate_codes(rng, (m, k), a_type), moderate_codes(rng, (k, n), b_type)
    c = np.full((m, n), np.nan, np.float32)
    compiled = tile.emulate(fp8_dot, target="gfx942")[(1,)](a, b, c, M=m, N=n, K=k, A_TYPE=FNUZ[a_type],
                                                           B_TYPE=FNUZ[b_type], num_warps=4)
    names = {"f8e4b8": "fp8", "f8e5b16": "bf8"}
    assert f"v_mfma_f32_16x16x32_{names[a_type]}_{names[b_type]}" in compiled.asm["amdgcn"]
    x, y = fnuz(a, a_type), fnuz(b, b_type)
    bound = 1e-6 * (np.abs(x) @ np.abs(y))   # f32 sums: the error scales with the sum of magnitudes
    assert (np.abs(c - x @ y) <= bound).all()


@pytest.mark.parametrize("ocp", [tl.float8e4nv, tl.float8e5])
def test_dot_on_ocp_fp8_says_gfx942_takes_the_fnuz_formats(ocp):
    codes = np.zeros((32, 32), np.uint8)
    with pytest.raises(tile.CompilationError, match=r"gfx942's fp8 MFMA take the fnuz formats f8e4b8 and f8e5b16 "
                                                    r"\(exponent bias 8 and 16.*not f8e") as info:
        tile.dump(fp8_dot, codes, codes, np.zeros((32, 32), np.float32), M=32, N=32, K=32, A_TYPE=ocp,
                  B_TYPE=ocp, stage="amdgcn", target="gfx942")
    source = open(__file__).read().splitlines()
    assert info.value.line == next(k + 1 for k, line in enumerate(source) if "tl.dot(a, b))" in line)
