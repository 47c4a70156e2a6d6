"""The emulator's AMDGCN instruction set: tile.emulate(kernel, target="gfx942") against NumPy,
hand-written gfx942 text for each instruction family against a NumPy model of the CDNA3 ISA
text (hypothesis), the checks a GPU does not make (LDS races between waves, bounds, alignment,
waits, the step budget), and the decoder's errors naming the line."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn.isa import INSTRUCTIONS
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_decode import AmdgcnSyntaxError, decode_amdgcn
from tile.emulator.amdgcn_execute import EXECUTE, MACHINE_OWNED
from tile.emulator.amdgcn_machine import run_amdgcn
from tutorial_util import load_tutorial

RNG = np.random.default_rng(15)
U32 = st.integers(0, 2**32 - 1)


def text_of(body: str, args: list[tuple[str, int, str]], name: str = "hand", lds: int = 0, threads: int = 64,
            wave: int = 64) -> str:
    """A kernel in the form tile emits (kernel_object.kernel_text): `body` (instructions, one a
    line), `args` (name, size, value kind) laid out one after another, 8-byte aligned."""
    offset, entries = 0, []
    for arg, size, kind in args:
        offset = -(-offset // size) * size
        entries.append(f"      - .name: {arg}\n        .offset: {offset}\n        .size: {size}\n"
                       f"        .value_kind: {kind}")
        offset += size
    lines = "\n".join("  " + line.strip() if not line.strip().endswith(":") else line.strip()
                      for line in body.strip().splitlines())
    return f"""  .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
  .text
  .globl {name}
{name}:
{lines}
.Lfunc_end_{name}:
  .rodata
  .amdhsa_kernel {name}
    .amdhsa_group_segment_fixed_size {lds}
    .amdhsa_system_sgpr_workgroup_id_x 1
  .end_amdhsa_kernel
  .amdgpu_metadata
---
amdhsa.kernels:
  - .name: {name}
    .kernarg_segment_size: {offset}
    .wavefront_size: {wave}
    .max_flat_workgroup_size: {threads}
    .args:
{chr(10).join(entries)}
...
  .end_amdgpu_metadata
"""


POINTERS = [("x", 8, "global_buffer"), ("y", 8, "global_buffer"), ("out", 8, "global_buffer")]

# out[lane] = OP(x[lane], y[lane]) for one wave
BINARY = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dwordx2 s[6:7], s[0:1], 8
s_load_dwordx2 s[8:9], s[0:1], 16
v_lshlrev_b32 v1, 2, v0
s_waitcnt lgkmcnt(0)
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[4:5]
global_load_dword v4, v[2:3], off
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[6:7]
global_load_dword v5, v[2:3], off
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[8:9]
s_waitcnt vmcnt(0)
{op}
global_store_dword v[2:3], v6, off
s_endpgm
"""


def run_binary(op_line: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.full(64, 0xDEADBEEF, np.uint32)
    run_amdgcn(text_of(BINARY.format(op=op_line), POINTERS), 1, [x, y, out])
    return out


def _i(x):
    return x.astype(np.uint32).view(np.int32).astype(np.int64)


# the CDNA3 ISA's words for each (chapter 6), as NumPy on uint32 / int64 / float64
VECTOR_INT_MODELS = {
    "v_add_u32": lambda a, b: a + b, "v_sub_u32": lambda a, b: a - b, "v_mul_lo_u32": lambda a, b: a * b,
    "v_mul_hi_u32": lambda a, b: (a * b) >> 32, "v_mul_hi_i32": lambda a, b: (_i(a) * _i(b)) >> 32,
    "v_and_b32": lambda a, b: a & b, "v_or_b32": lambda a, b: a | b, "v_xor_b32": lambda a, b: a ^ b,
    "v_lshlrev_b32": lambda a, b: b << (a & 31), "v_lshrrev_b32": lambda a, b: b >> (a & 31),
    "v_ashrrev_i32": lambda a, b: _i(b) >> (a & 31),
    "v_min_u32": np.minimum, "v_max_u32": np.maximum,
    "v_min_i32": lambda a, b: np.minimum(_i(a), _i(b)), "v_max_i32": lambda a, b: np.maximum(_i(a), _i(b)),
}
VECTOR_FLOAT_MODELS = {"v_add_f32": np.add, "v_sub_f32": np.subtract, "v_mul_f32": np.multiply,
                       "v_min_f32": np.minimum, "v_max_f32": np.maximum}


@pytest.mark.parametrize("op", sorted(VECTOR_INT_MODELS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_vector_integer_ops_follow_the_isa(op, data):
    x = np.array(data.draw(st.lists(U32, min_size=64, max_size=64)), np.uint32)
    y = np.array(data.draw(st.lists(U32, min_size=64, max_size=64)), np.uint32)
    want = VECTOR_INT_MODELS[op](x.astype(np.int64), y.astype(np.int64)) if op.endswith(("i32",)) else \
        VECTOR_INT_MODELS[op](x.astype(np.uint64), y.astype(np.uint64))
    got = run_binary(f"{op} v6, v4, v5", x, y)
    np.testing.assert_array_equal(got, (np.asarray(want).astype(np.int64) & 0xFFFFFFFF).astype(np.uint32))


FINITE = st.floats(-2.0 ** 100, 2.0 ** 100, width=32, allow_nan=False, allow_subnormal=False)


@pytest.mark.parametrize("op", sorted(VECTOR_FLOAT_MODELS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_vector_float_ops_follow_the_isa(op, data):
    x = np.array(data.draw(st.lists(FINITE, min_size=64, max_size=64)), np.float32)
    y = np.array(data.draw(st.lists(FINITE, min_size=64, max_size=64)), np.float32)
    with np.errstate(over="ignore"):
        want = VECTOR_FLOAT_MODELS[op](x.astype(np.float64), y.astype(np.float64)).astype(np.float32)  # one rounding
    got = run_binary(f"{op} v6, v4, v5", x.view(np.uint32), y.view(np.uint32)).view(np.float32)
    np.testing.assert_array_equal(got, want)


def test_fma_rounds_once():
    x = RNG.standard_normal(64).astype(np.float32)
    y = RNG.standard_normal(64).astype(np.float32)
    got = run_binary("v_fma_f32 v6, v4, v5, v4", x.view(np.uint32), y.view(np.uint32)).view(np.float32)
    np.testing.assert_array_equal(got, (x.astype(np.float64) * y + x).astype(np.float32))


def test_inline_float_and_literal_constants():
    x = RNG.standard_normal(64).astype(np.float32)
    got = run_binary("v_mul_f32 v6, 0.5, v4", x.view(np.uint32), x.view(np.uint32)).view(np.float32)
    np.testing.assert_array_equal(got, x * np.float32(0.5))
    got = run_binary("v_add_u32 v6, 0x12345, v4", x.view(np.uint32), x.view(np.uint32))
    np.testing.assert_array_equal(got, x.view(np.uint32) + np.uint32(0x12345))


@settings(max_examples=20, deadline=None)
@given(perm=st.lists(st.integers(0, 2**16 - 1), min_size=64, max_size=64))
def test_ds_bpermute_reads_the_lane_of_its_address(perm):
    """dst[lane] = data[(address[lane] / 4) mod 64] (CDNA3 ISA 10.2)."""
    sources = np.array(perm, np.uint32)
    data = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    got = run_binary("v_lshlrev_b32 v7, 2, v4\nds_bpermute_b32 v6, v7, v5\ns_waitcnt lgkmcnt(0)", sources, data)
    np.testing.assert_array_equal(got, data[sources % 64])


SCALAR = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dword s2, s[0:1], 8
s_load_dword s3, s[0:1], 12
v_lshlrev_b32 v1, 2, v0
s_waitcnt lgkmcnt(0)
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[4:5]
{op} s6, s2, s3
s_cselect_b32 s7, 1, 0
v_mov_b32 v4, s6
v_mov_b32 v5, s7
global_store_dword v[2:3], v4, off
global_store_dword v[2:3], v5, off offset:256
s_endpgm
"""

S = lambda v: v - 2**32 if v >= 2**31 else v  # noqa: E731
SCALAR_MODELS = {   # (result, SCC or None where the op keeps it)
    "s_add_u32": lambda a, b: (a + b, a + b >= 2**32), "s_sub_u32": lambda a, b: (a - b, b > a),
    "s_mul_i32": lambda a, b: (a * b, None), "s_mul_hi_u32": lambda a, b: ((a * b) >> 32, None),
    "s_mul_hi_i32": lambda a, b: ((S(a) * S(b)) >> 32, None),
    "s_and_b32": lambda a, b: (a & b, None), "s_or_b32": lambda a, b: (a | b, None),
    "s_xor_b32": lambda a, b: (a ^ b, None), "s_lshl_b32": lambda a, b: (a << (b & 31), None),
    "s_lshr_b32": lambda a, b: (a >> (b & 31), None), "s_ashr_i32": lambda a, b: (S(a) >> (b & 31), None),
    "s_min_i32": lambda a, b: (min(S(a), S(b)), None), "s_max_i32": lambda a, b: (max(S(a), S(b)), None),
    "s_min_u32": lambda a, b: (min(a, b), None), "s_max_u32": lambda a, b: (max(a, b), None),
}


@pytest.mark.parametrize("op", sorted(SCALAR_MODELS))
@settings(max_examples=10, deadline=None)
@given(a=U32, b=U32)
def test_scalar_ops_follow_the_isa(op, a, b):
    out = np.full(128, 0xDEADBEEF, np.uint32)
    text = text_of(SCALAR.format(op=op), [("out", 8, "global_buffer"), ("a", 4, "by_value"), ("b", 4, "by_value")])
    run_amdgcn(text, 1, [out, a, b])
    value, scc = SCALAR_MODELS[op](a, b)
    assert (out[:64] == value & 0xFFFFFFFF).all()
    if scc is not None:   # SCC starts clear in a wave
        assert (out[64:] == int(scc)).all()


# ------------------------------------------------------------------ tile kernels on tile.emulate

@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tile.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(1) * 2 + tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x * x, axis=0))


@tile.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("n, block, num_warps", [(1000, 256, 4), (77, 64, 1), (300, 128, 2)])
def test_emulate_runs_the_amdgcn_of_a_kernel(n, block, num_warps):
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n + 8, np.nan, np.float32)
    compiled = tile.emulate(add_kernel, target="gfx942")[(tile.cdiv(n, block),)](x, y, out, n, BLOCK=block,
                                                                                num_warps=num_warps)
    np.testing.assert_allclose(out[:n], x.astype(np.float64) + y, rtol=1e-6)
    assert np.isnan(out[n:]).all()
    assert "buffer_load_dword" in compiled.asm["amdgcn"]   # `offs < n` bounds the loads: buffer loads


def test_a_two_dimensional_grid_and_a_reduction_across_waves():
    rows, cols = 8, 200
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.full(rows, np.nan, np.float32)
    tile.emulate(row_sum_kernel, target="gfx942")[(2, rows // 2)](x, out, cols, BLOCK=256, num_warps=4)
    np.testing.assert_allclose(out, (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)


def test_dot_through_mfma():
    m = n = 32
    k = 16
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    compiled = tile.emulate(dot_kernel, target="gfx942")[(1,)](a, b, c, M=m, N=n, K=k, num_warps=4)
    assert "v_mfma_f32" in compiled.asm["amdgcn"]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_tile_emulate_target_routes_ordinary_launches(monkeypatch):
    monkeypatch.setenv("TILE_EMULATE", "1")
    monkeypatch.setenv("TILE_EMULATE_TARGET", "gfx942")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    if tile.compiler.current_target() != tile.compiler.INTERPRETER:
        pytest.skip("a GPU is present: launches run there")
    n = 300
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    compiled = add_kernel[(3,)](x, y, out, n, BLOCK=128)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    assert compiled.target == "gfx942" and "amdgcn" in compiled.asm


def test_unknown_amd_target_and_tracing_are_refused():
    with pytest.raises(ValueError, match="unknown AMD target 'gfx908'; expected one of gfx942, gfx90a"):
        tile.emulate(add_kernel, target="gfx908")
    with pytest.raises(ValueError, match="trace= steps through PTX only"):
        tile.emulate(add_kernel, target="gfx942", trace=True)


def test_every_instruction_of_the_table_has_an_executor():
    assert set(INSTRUCTIONS) - set(MACHINE_OWNED) == set(EXECUTE) - set(MACHINE_OWNED)
    assert set(MACHINE_OWNED) <= set(INSTRUCTIONS)


# ------------------------------------------------------------------ waves, LDS and barriers

def _lds_exchange(barrier: str) -> str:
    """Two waves: each work-item writes its id to LDS, then reads its mirror's (127 - id)."""
    return text_of(f"""
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 2, v0
ds_write_b32 v1, v0
{barrier}
v_sub_u32 v2, 0x7f, v0
v_lshlrev_b32 v2, 2, v2
ds_read_b32 v3, v2
s_waitcnt lgkmcnt(0)
v_mad_u64_u32 v[4:5], vcc, v1, 1, s[4:5]
global_store_dword v[4:5], v3, off
s_waitcnt vmcnt(0)
s_endpgm
""", [("out", 8, "global_buffer")], lds=512, threads=128)


def test_waves_exchange_through_lds_across_a_barrier():
    out = np.full(128, 0xFFFF, np.uint32)
    run_amdgcn(_lds_exchange("s_waitcnt lgkmcnt(0)\ns_barrier"), 1, [out])
    np.testing.assert_array_equal(out, 127 - np.arange(128))


def test_an_lds_race_between_waves_is_reported():
    """Wave 0 runs to the end first (nothing holds it): wave 1's write then lands on bytes wave 0 read."""
    with pytest.raises(EmulatorError, match=r"shared-memory race: thread 64 of CTA \(0, 0, 0\) writes shared address "
                                            r"256, read by thread 63 at AMDGCN line \d+ `ds_read_b32 v3, v2`"):
        run_amdgcn(_lds_exchange("s_waitcnt lgkmcnt(0)"), 1, [np.zeros(128, np.uint32)])


def test_a_workgroup_spins_on_a_flag_a_later_one_sets():
    """Resident workgroups take turns: workgroup 0 waits for workgroup 1's store."""
    text = text_of("""
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_mov_b32 v2, s4
v_mov_b32 v3, s5
s_cmp_eq_u32 s2, 0
s_cbranch_scc1 .Lwait
v_mov_b32 v1, 1
global_store_dword v[2:3], v1, off
s_endpgm
.Lwait:
global_load_dword v1, v[2:3], off
s_waitcnt vmcnt(0)
v_readfirstlane_b32 s6, v1
s_cmp_eq_u32 s6, 0
s_cbranch_scc1 .Lwait
v_mov_b32 v1, 2
global_store_dword v[2:3], v1, off offset:4
s_endpgm
""", [("flag", 8, "global_buffer")])
    flag = np.zeros(2, np.uint32)
    run_amdgcn(text, 2, [flag], max_steps=100_000)
    assert list(flag) == [1, 2]


@pytest.mark.parametrize("wait, lands", [("lgkmcnt(1)", False), ("lgkmcnt(0)", True)])
def test_scalar_loads_may_return_out_of_order(wait, lands):
    """Two s_loads in flight: lgkmcnt(1) says one landed, not which (CDNA3 ISA 4.4)."""
    text = text_of(f"""
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dword s6, s[0:1], 8
s_waitcnt {wait}
v_mov_b32 v2, s4
v_mov_b32 v3, s5
s_waitcnt lgkmcnt(0)
v_mov_b32 v1, s6
global_store_dword v[2:3], v1, off
s_endpgm
""", [("out", 8, "global_buffer"), ("n", 4, "by_value")])
    out = np.zeros(1, np.uint32)
    if lands:
        run_amdgcn(text, 1, [out, 9])
        assert out[0] == 9
    else:
        with pytest.raises(EmulatorError, match=r"s4 is touched before its load was waited for.*`v_mov_b32 v2, s4`"):
            run_amdgcn(text, 1, [out, 9])


@pytest.mark.parametrize("first, second, lands", [
    ("ds_read_b32 v1, v2", "ds_write_b32 v2, v0 offset:4", True),    # the read is the oldest: landed
    ("ds_write_b32 v2, v0 offset:4", "ds_read_b32 v1, v2", False),   # the read is still in flight
])
def test_lds_writes_count_in_lgkmcnt(first, second, lands):
    """LDS reads and writes count in lgkmcnt in issue order, writes too (CDNA3 ISA 4.4): with
    one access left in flight, only the older one is done (a fuzzer find: the emulator did not
    count writes, and took tile's correct lgkmcnt(1) after read, write for a missing wait)."""
    text = text_of(f"""
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_mov_b32 v2, 0
{first}
{second}
s_waitcnt lgkmcnt(1)
v_add_u32 v3, v1, 1
s_waitcnt lgkmcnt(0)
v_mov_b32 v4, s4
v_mov_b32 v5, s5
global_store_dword v[4:5], v3, off
s_endpgm
""", [("out", 8, "global_buffer")], lds=8)
    out = np.zeros(1, np.uint32)
    if lands:
        run_amdgcn(text, 1, [out])
    else:
        with pytest.raises(EmulatorError, match=r"v1 is touched before its load was waited for"):
            run_amdgcn(text, 1, [out])


def test_wave32_from_the_metadata():
    text = text_of("""
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 2, v0
s_waitcnt lgkmcnt(0)
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[4:5]
v_readfirstlane_b32 s6, v0
v_add_u32 v4, s6, 0
global_store_dword v[2:3], v4, off
s_endpgm
""", [("out", 8, "global_buffer")], threads=64, wave=32)
    out = np.full(64, 7, np.uint32)
    run_amdgcn(text, 1, [out])
    np.testing.assert_array_equal(out, np.repeat([0, 32], 32))   # each wave's first work-item


# ------------------------------------------------------------------ errors a GPU would not report

STORE_AT = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_mov_b32 v2, s4
v_mov_b32 v3, s5
global_store_dword v[2:3], v0, off offset:{offset}
s_endpgm
"""


def test_a_store_past_the_end_names_the_argument():
    with pytest.raises(EmulatorError, match=r"past the end of 'out' \(16 bytes\).*lane 0 \(work-item 0\).*"
                                            r"AMDGCN line \d+ `global_store_dword v\[2:3\], v0, off offset:16`"):
        run_amdgcn(text_of(STORE_AT.format(offset=16), [("out", 8, "global_buffer")]), 1, [np.zeros(4, np.uint32)])


def test_a_misaligned_store_is_an_error():
    with pytest.raises(EmulatorError, match="is not aligned to 4 bytes"):
        run_amdgcn(text_of(STORE_AT.format(offset=2), [("out", 8, "global_buffer")]), 1, [np.zeros(4, np.uint32)])


def test_an_lds_access_outside_the_workgroup_lds():
    text = text_of("v_lshlrev_b32 v1, 2, v0\nds_write_b32 v1, v0\ns_endpgm", [], lds=128)
    with pytest.raises(EmulatorError, match=r"LDS access of 4 bytes at 128 is outside its 128 bytes.*lane 32"):
        run_amdgcn(text, 1, [])


def test_a_loop_that_never_ends_runs_out_of_its_budget():
    text = text_of(".Lspin:\ns_branch .Lspin\ns_endpgm", [])
    with pytest.raises(EmulatorError, match=r"more than 1000 instructions.*AMDGCN line 6 `s_branch .Lspin`"):
        run_amdgcn(text, 1, [], max_steps=1000)


def test_arguments_by_name_and_a_missing_one():
    out = np.zeros(4, np.uint32)
    run_amdgcn(text_of(STORE_AT.format(offset=4), [("out", 8, "global_buffer")]), 1, {"out": out})
    assert out[1] < 64 and not out[[0, 2, 3]].any()   # every lane stored its id there
    with pytest.raises(EmulatorError, match="no value for argument"):
        run_amdgcn(text_of(STORE_AT.format(offset=4), [("out", 8, "global_buffer")]), 1, {"x": out})


@pytest.mark.parametrize("line, message", [
    ("v_frobnicate_b32 v1, v0", r"unknown instruction `v_frobnicate_b32` \(AMDGCN line 5 `v_frobnicate_b32 v1, v0`\)"),
    ("v_add_u32 v1, v0", r"v_add_u32 takes 3 operands, got 2 \(AMDGCN line 5"),
    ("v_add_u32 v1, v0, %r2", r"cannot read operand `%r2` \(AMDGCN line 5"),
    ("global_load_dword v1, v[2:3], off gds", r"cannot read the operands of global_load_dword \(AMDGCN line 5"),
    ("global_load_dword v1, v[2:3], off glc", r"glc is not a cache-policy bit of gfx942 \(it has sc0, sc1, nt\) "
                                              r"\(AMDGCN line 5"),
    ("buffer_invl2", r"buffer_invl2 does not exist on gfx942 \(only on gfx90a\) \(AMDGCN line 5"),
    ("s_branch .Lnowhere", r"branch to an unknown label .Lnowhere \(AMDGCN line 5"),
])
def test_decode_errors_name_the_line(line, message):
    with pytest.raises(AmdgcnSyntaxError, match=message):
        decode_amdgcn(text_of(f"{line}\ns_endpgm", []))


def test_text_without_a_kernel_or_metadata():
    with pytest.raises(AmdgcnSyntaxError, match="no `.globl` kernel"):
        decode_amdgcn("  .text\n")
    text = text_of("s_endpgm", [])
    with pytest.raises(AmdgcnSyntaxError, match="no .amdgpu_metadata"):
        decode_amdgcn(text[:text.index("  .amdgpu_metadata")])
    with pytest.raises(AmdgcnSyntaxError, match=r"the kernel's body \(`hand:` ... `.Lfunc_end_hand:`\) is missing"):
        decode_amdgcn(text.replace(".Lfunc_end_hand:", ""))
    with pytest.raises(AmdgcnSyntaxError, match="the `.amdgcn_target` line names gfx1030; the emulator runs gfx942, gfx90a"):
        decode_amdgcn(text.replace("gfx942", "gfx1030"))


def test_each_target_reads_its_own_spelling():
    """The same MFMA under gfx90a's name, the returning atomic under its glc bit."""
    text = text_of("v_mfma_f32_16x16x16f16 v[0:3], v[4:5], v[6:7], v[0:3]\n"
                   "global_atomic_add v1, v[2:3], v4, off glc\nbuffer_wbinvl1_vol\ns_endpgm", [])
    kernel = decode_amdgcn(text.replace("gfx942", "gfx90a"))
    assert kernel.target == "gfx90a" and kernel.instrs[1].mods == {"glc": 1}
    with pytest.raises(AmdgcnSyntaxError, match="v_mfma_f32_16x16x16f16 does not exist on gfx942"):
        decode_amdgcn(text)


# ------------------------------------------------------------------ tutorial kernels as gfx942 code

def _tutorial(name: str):
    return load_tutorial(name, "tutorial")


def test_tutorial_softmax():
    rows, cols = 5, 300
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel = _tutorial("02_fused_softmax").softmax_kernel
    tile.emulate(kernel, target="gfx942")[(rows,)](out, x, cols, cols, cols, BLOCK=512, num_warps=4)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_tutorial_layer_norm():
    rows, cols = 4, 300
    x, w, b = (RNG.standard_normal(shape).astype(np.float16) for shape in ((rows, cols), cols, cols))
    y = np.full_like(x, np.nan)
    mean, rstd = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    kernel = _tutorial("03_layer_norm").layer_norm_kernel
    tile.emulate(kernel, target="gfx942")[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5, BLOCK=128, num_warps=2)
    x64 = x.astype(np.float64)
    mu, sigma = x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, sigma, rtol=1e-5)
    want = (x64 - mu[:, None]) * sigma[:, None] * w + b
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("body, threads, message", [
    ("v_mov_b32 v1, v0", 64, "the program ran past its end without s_endpgm"),
    ("v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], v[0:3]\ns_endpgm", 32,
     r"v_mfma_f32_16x16x16_f16 under a partial EXEC \[workgroup \(0, 0, 0\), wave 0\]"),
    ("v_mov_b32 v2, 0\nv_mov_b32 v3, 0\nglobal_atomic_add v1, v[2:3], v0, off\ns_endpgm", 64,
     "global_atomic_add without sc0 does not return the old value"),
])
def test_wave_errors(body, threads, message):
    with pytest.raises(EmulatorError, match=message):
        run_amdgcn(text_of(body, [], threads=threads), 1, [])


def test_argument_errors():
    text = text_of("s_endpgm", [("out", 8, "global_buffer"), ("n", 4, "by_value")])
    with pytest.raises(EmulatorError, match="argument 'out' is a str: pass an array"):
        run_amdgcn(text, 1, ["no", 3])
    with pytest.raises(EmulatorError, match="argument 'n' got a str: pass a number"):
        run_amdgcn(text, 1, [np.zeros(1), "3"])
    hidden = text_of("s_endpgm", [("out", 8, "global_buffer"), ("", 8, "hidden_printf_buffer")])
    with pytest.raises(EmulatorError, match="kernel argument of kind hidden_printf_buffer is not known"):
        run_amdgcn(hidden, 1, [np.zeros(1)])
