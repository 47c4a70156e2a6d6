"""Buffer loads and stores on the AMD targets: a masked tl.load bounded by `offs < n` (other 0
or absent) is selected as buffer_load_* through a raw buffer resource whose num_records is the
bound, so the lanes past it read 0 with no EXEC narrowing; a tl.store with such a mask is
buffer_store_*, the lanes past the bound writing nothing; other masks keep the global access
under EXEC. Checked on gfx942, gfx90a and gfx1100 against NumPy on the emulator (outputs
poisoned: a lane past the bound that wrote would show), assembled with llvm-mc, and the
emulator's range checking itself on hand-written code."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import TARGETS, assemble
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_machine import run_amdgcn
from amdgcn_util import instructions, needs_llvm, unwaited_reads, warps_for
from test_emulator_amdgcn import text_of

RNG = np.random.default_rng(915)


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2.0 + y, mask=mask)


@tile.jit
def scaled_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, x * 3, mask=offs < n)


@tile.jit
def single_block_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0)


@tile.jit
def other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-1.0), mask=offs < n)


@tile.jit
def sparse_mask_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = ((offs % 3) == 0) & (offs < n)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=keep), mask=offs < n)


@tile.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    where = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.load(x_ptr + where, mask=where < n))


@tile.jit
def sparse_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=(offs % 3 == 0) & (offs < n))


@tile.jit
def unsigned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.uint32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@tile.jit
def unsigned_blocks_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.uint32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@tile.jit
def rows_kernel(x_ptr, out_ptr, seen_ptr, M, N, stride, seen_stride, BLOCK: tl.constexpr):
    """Row pid(0) of an M x N matrix (row stride `stride`), BLOCK columns from pid(1) * BLOCK;
    `seen` gets what every lane's load read (0 where masked off), `out` x + 1 where the mask holds."""
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (row < M) & (cols < N)
    x = tl.load(x_ptr + row * stride + cols, mask=mask)
    tl.store(seen_ptr + row * seen_stride + cols, x)
    tl.store(out_ptr + row * stride + cols, x + 1.0, mask=mask)


@tile.jit
def tile_2d_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def amdgcn(kernel, args, target, **constexprs) -> str:
    return str(tile.dump(kernel, *args, stage="amdgcn", target=target, **constexprs))


def opcodes(text: str) -> list[str]:
    return [line.split()[0] for line in instructions(text)]


def poisoned(n: int, dtype) -> np.ndarray:
    return np.full(n, 0x55 if np.dtype(dtype).kind in "iu" else np.nan, dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [1000, 1024, 77])
def test_masked_loads_are_buffer_loads_and_match_numpy(target, n):
    x, y = (RNG.standard_normal(n).astype(np.float32) for _ in range(2))
    out = poisoned(n, np.float32)
    tile.emulate(add_kernel, target=target)[(-(-n // 256),)](x, y, out, n, BLOCK=256)
    np.testing.assert_allclose(out, x.astype(np.float64) * 2 + y, rtol=1e-6)
    text = amdgcn(add_kernel, (x, y, out, n), target, BLOCK=256)
    ops = opcodes(text)
    loads = [op for op in ops if op.startswith(("buffer_load", "global_load"))]
    assert loads and all(op.startswith("buffer_load") for op in loads)
    stores = [op for op in ops if op.startswith(("buffer_store", "global_store"))]
    assert stores and all(op.startswith("buffer_store") for op in stores)
    # neither the loads nor the stores narrow EXEC, and the mask is never computed
    assert not any(op.startswith(("s_and_saveexec", "v_cmp")) for op in ops)
    assert unwaited_reads(text) == []


def test_resources_of_one_bound_share_its_scalar_work():
    """x's, y's and out's resources differ in their base only: the block's start scaled (s_lshl_b64)
    and the bound's byte count (s_cselect_b32 ... s_lshl_b32) are computed once. 128 work-items
    (two waves of 64): two elements each, so two loads of x and two of y."""
    x = RNG.standard_normal(1000).astype(np.float32)
    ops = opcodes(amdgcn(add_kernel, (x, x, x, 1000), "gfx942", BLOCK=256, num_warps=2))
    assert sum(op.startswith("buffer_load") for op in ops) == 4
    assert ops.count("s_lshl_b64") == ops.count("s_cselect_b32") == ops.count("s_min_u32") == 1
    assert ops.count("s_addc_u32") == 3   # one base per pointer: x, y and out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype, vector_n", [(np.int8, 4096), (np.int8, 1000), (np.float16, 4096),
                                              (np.float16, 999), (np.int64, 512), (np.float64, 333),
                                              (np.int32, 4096)])
def test_element_types_and_vector_widths(target, dtype, vector_n):
    n = vector_n
    x = (RNG.integers(-100, 100, n) if np.dtype(dtype).kind == "i" else RNG.standard_normal(n)).astype(dtype)
    out = poisoned(n, dtype)
    tile.emulate(scaled_copy_kernel, target=target)[(-(-n // 512),)](x, out, n, BLOCK=512)
    np.testing.assert_array_equal(out, (x * 3).astype(dtype))
    ops = opcodes(amdgcn(scaled_copy_kernel, (x, out, n), target, BLOCK=512))
    assert any(op.startswith("buffer_load") for op in ops) and not any(op.startswith("global_load") for op in ops)
    assert any(op.startswith("buffer_store") for op in ops) and not any(op.startswith("global_store") for op in ops)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype, n", [(np.int8, 1001), (np.float16, 517), (np.float32, 999), (np.float64, 333)])
def test_buffer_stores_past_the_bound_write_nothing(target, dtype, n):
    """The output is longer than n and poisoned: a lane past the bound that stored would show."""
    x = (RNG.integers(-100, 100, n) if np.dtype(dtype).kind == "i" else RNG.standard_normal(n)).astype(dtype)
    out = poisoned(n + 700, dtype)
    tile.emulate(scaled_copy_kernel, target=target)[(-(-(n + 700) // 512),)](x, out, n, BLOCK=512)
    np.testing.assert_array_equal(out[:n], (x * 3).astype(dtype))
    np.testing.assert_array_equal(out[n:], poisoned(700, dtype))


def test_aligned_bounds_vectorize_into_wide_buffer_accesses():
    n = 4096   # divisible by 16: the mask is constant over a thread's elements
    x, out = RNG.standard_normal(n).astype(np.float32), poisoned(n, np.float32)
    ops = opcodes(amdgcn(scaled_copy_kernel, (x, out, n), "gfx942", BLOCK=1024))
    assert "buffer_load_dwordx4" in ops and "buffer_store_dwordx4" in ops
    tile.emulate(scaled_copy_kernel, target="gfx942")[(4,)](x, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out, x * 3)


@pytest.mark.parametrize("target", TARGETS)
def test_stores_under_other_masks_keep_the_global_store(target):
    n = 300
    x, out = RNG.standard_normal(n).astype(np.float32), poisoned(n, np.float32)
    ops = opcodes(amdgcn(sparse_store_kernel, (x, out, n), target, BLOCK=128))
    assert any(op.startswith("global_store") for op in ops) and not any(op.startswith("buffer_store") for op in ops)
    tile.emulate(sparse_store_kernel, target=target)[(3,)](x, out, n, BLOCK=128)
    keep = np.arange(n) % 3 == 0
    np.testing.assert_array_equal(out[keep], x[keep])
    assert np.isnan(out[~keep]).all()


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_stores_count_in_the_store_counter(target):
    from tile.codegen.amdgcn.isa import STORE_COUNTER, counter
    assert counter("buffer_store_dwordx4", target) == STORE_COUNTER[target] == counter("global_store_dword", target)
    assert counter("buffer_store_dwordx4", "gfx1100") == "vscnt"


def test_a_wide_buffer_store_s_data_is_not_overwritten_too_soon():
    """GFX9's hazard of a VMEM store of over 8 bytes holds for buffer stores (data first)."""
    from tile.codegen.amdgcn.mir import Imm, MInst, Reg
    from tile.codegen.amdgcn.waitcnt import insert_nops
    data, offsets, resource = Reg("v", 4, 1), Reg("v", 1, 2), Reg("s", 4, 3)
    store = MInst("buffer_store_dwordx4", [], [data.all(), offsets.all(), resource.all(), Imm.int(0)], {"offen": 1})
    overwrite = MInst("v_mov_b32", [data.all().dword(3)], [Imm.int(0)], {})
    assert [i.opcode for i in insert_nops([store, overwrite])] == ["buffer_store_dwordx4", "s_nop", "v_mov_b32"]
    narrow = MInst("buffer_store_dwordx2", [], [Reg("v", 2, 4).all(), offsets.all(), resource.all(), Imm.int(0)],
                   {"offen": 1})
    assert [i.opcode for i in insert_nops([narrow, overwrite])] == ["buffer_store_dwordx2", "v_mov_b32"]


@pytest.mark.parametrize("target", TARGETS)
def test_blocks_wholly_past_the_bound_and_negative_bounds_read_nothing(target):
    """num_records is 0 where the block starts at or past n (n - start is negative): no lane
    reads, no lane stores; a bound far above 2^30 elements is clamped and reads everything."""
    x, y = (RNG.standard_normal(256).astype(np.float32) for _ in range(2))
    for n, grid, valid in ((100, 4, 100), (-5, 2, 0), (0, 1, 0)):
        out = poisoned(256, np.float32)
        tile.emulate(add_kernel, target=target)[(grid,)](x, y, out, n, BLOCK=64)
        np.testing.assert_allclose(out[:valid], x[:valid].astype(np.float64) * 2 + y[:valid], rtol=1e-6)
        assert np.isnan(out[valid:]).all()
    out = poisoned(128, np.float32)
    tile.emulate(single_block_kernel, target=target)[(1,)](x[:128], out, 2**31 - 1, BLOCK=128)
    np.testing.assert_allclose(out, x[:128].astype(np.float64) + 1, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_an_index_without_a_uniform_part_reads_from_the_pointer_itself(target):
    x, out = RNG.standard_normal(128).astype(np.float32), poisoned(128, np.float32)
    tile.emulate(single_block_kernel, target=target)[(1,)](x, out, 90, BLOCK=128)
    expected = np.where(np.arange(128) < 90, x.astype(np.float64), 0.0) + 1
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert any(op.startswith("buffer_load") for op in opcodes(amdgcn(single_block_kernel, (x, out, 90), target,
                                                                      BLOCK=128)))


@pytest.mark.parametrize("kernel", [other_kernel, sparse_mask_kernel])
def test_other_values_and_other_masks_keep_the_global_load(kernel):
    n = 300
    x, out = RNG.standard_normal(n).astype(np.float32), poisoned(n, np.float32)
    ops = opcodes(amdgcn(kernel, (x, out, n), "gfx942", BLOCK=128))
    assert "global_load_dword" in ops and not any(op.startswith("buffer_load") for op in ops)
    tile.emulate(kernel, target="gfx942")[(3,)](x, out, n, BLOCK=128)
    if kernel is other_kernel:
        np.testing.assert_array_equal(out, x)
    else:
        keep = np.arange(n) % 3 == 0
        np.testing.assert_array_equal(out[keep], x[keep])   # the rest: no `other`, undefined


def test_an_index_of_unknown_range_keeps_the_global_load():
    """A gathered index may be negative or huge: its byte offset would not fit the VGPR."""
    n = 256
    x = RNG.standard_normal(n).astype(np.float32)
    idx = RNG.integers(0, n, n).astype(np.int32)
    out = poisoned(n, np.float32)
    ops = opcodes(amdgcn(gather_kernel, (x, idx, out, n), "gfx942", BLOCK=128))
    assert not any(op.startswith("buffer_load") for op in ops)
    tile.emulate(gather_kernel, target="gfx942")[(2,)](x, idx, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, x[idx])


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_buffer_loads_and_stores_assemble(target):
    for dtype, n in ((np.int8, 4096), (np.int8, 4097), (np.float16, 4096), (np.float32, 4096), (np.float64, 4096)):
        x, out = np.ones(n, dtype), np.ones(n, dtype)
        text = amdgcn(scaled_copy_kernel, (x, out, n), target, BLOCK=1024)
        assert "buffer_store" in text
        assert assemble(text, target)[:4] == b"\x7fELF"


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 700), block=st.sampled_from([64, 128, 256]), target=st.sampled_from(TARGETS),
       extra_blocks=st.integers(0, 2))
def test_any_bound_matches_numpy(n, block, target, extra_blocks):
    x, y = (RNG.standard_normal(n).astype(np.float32) for _ in range(2))
    out = poisoned(n, np.float32)
    tile.emulate(add_kernel, target=target)[(-(-n // block) + extra_blocks,)](x, y, out, n, BLOCK=block)
    np.testing.assert_allclose(out, x.astype(np.float64) * 2 + y, rtol=1e-6)


# ------------------------------------------------------------ unsigned bounds, 2-D masks

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n, block", [(90, 128), (128, 128), (0, 128), (-5, 128), (333, 512), (512, 512)])
def test_unsigned_bounds_compare_unsigned(target, n, block):
    """n = -5 is 2^32 - 5 as the u32 the mask compares: every lane is in (signed, none would be).
    128 work-items, so that no two hold one element (a replicated store is masked by its owner):
    BLOCK 512 puts four elements in each (one dwordx4 where n is a multiple of 16)."""
    x, out = RNG.uniform(1, 2, block).astype(np.float32), poisoned(block, np.float32)
    ops = opcodes(amdgcn(unsigned_kernel, (x, out, n), target, BLOCK=block, num_warps=warps_for(target, 128)))
    assert any(op.startswith("buffer_load") for op in ops) and any(op.startswith("buffer_store") for op in ops)
    assert not any(op.startswith(("global_", "s_and_saveexec")) for op in ops)
    tile.emulate(unsigned_kernel, target=target)[(1,)](x, out, n, BLOCK=block)
    kept = np.arange(block) < (n % 2**32)
    np.testing.assert_array_equal(out, np.where(kept, x + np.float32(1), np.nan))


def test_an_unsigned_index_with_a_uniform_part_keeps_the_global_accesses():
    """pid * BLOCK + lane may wrap at 2^32 in u32, where the resource's base + offset would not."""
    n = 300
    x, out = RNG.uniform(1, 2, n).astype(np.float32), poisoned(n, np.float32)
    ops = opcodes(amdgcn(unsigned_blocks_kernel, (x, out, n), "gfx942", BLOCK=128))
    assert not any(op.startswith("buffer_") for op in ops)
    tile.emulate(unsigned_blocks_kernel, target="gfx942")[(3,)](x, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, x + np.float32(1))


def run_rows(target, M, N, stride, grid_rows, grid_cols, block=128):
    """rows_kernel over an M x N matrix (N < stride) on a grid_rows x grid_cols grid, against
    NumPy: `seen` holds x where the mask keeps a lane and 0 elsewhere, `out` x + 1 where it
    keeps one and its poison elsewhere."""
    x = RNG.uniform(1, 2, max(M, 1) * stride).astype(np.float32)   # never 0: a lane that read shows
    out = poisoned(max(M, 1) * stride, np.float32)
    seen = poisoned(grid_rows * grid_cols * block, np.float32)
    tile.emulate(rows_kernel, target=target)[(grid_rows, grid_cols)](x, out, seen, M, N, stride, grid_cols * block,
                                                                      BLOCK=block)
    rows, cols = np.arange(grid_rows)[:, None], np.arange(grid_cols * block)[None, :]
    kept_rows, kept_cols = np.nonzero((rows < M) & (cols < N))
    matrix = x.reshape(-1, stride)
    read = np.zeros((grid_rows, grid_cols * block), np.float32)
    read[kept_rows, kept_cols] = matrix[kept_rows, kept_cols]
    np.testing.assert_array_equal(seen.reshape(grid_rows, -1), read)
    written = poisoned(out.size, np.float32).reshape(-1, stride)
    written[kept_rows, kept_cols] = matrix[kept_rows, kept_cols] + np.float32(1)
    np.testing.assert_array_equal(out.reshape(-1, stride), written)


@pytest.mark.parametrize("target", TARGETS)
def test_a_uniform_row_bound_folds_into_the_resource(target):
    """(row < M) & (cols < N) with the row uniform per program: num_records is the column bound's
    where row < M holds, 0 where not; the loads and the masked store are buffer accesses (128
    work-items for the 128 columns: no replicated element whose store its owner masks)."""
    x = np.ones(3 * 300, np.float32)
    ops = opcodes(amdgcn(rows_kernel, (x, x, x, 3, 200, 300, 512), target, BLOCK=128,
                         num_warps=warps_for(target, 128)))
    assert sum(op.startswith("buffer_load") for op in ops) == 1
    assert sum(op.startswith("buffer_store") for op in ops) == 1
    assert sum(op.startswith("s_cmp_lg_u") for op in ops) >= 1   # the row factor selects num_records
    assert not any(op.startswith(("v_cmp", "s_and_saveexec", "s_and_b64")) for op in ops)   # no mask computed
    run_rows(target, M=3, N=200, stride=300, grid_rows=5, grid_cols=4)


@settings(max_examples=10, deadline=None)
@given(M=st.integers(0, 4), N=st.integers(0, 400), extra=st.integers(0, 50), grid_rows=st.integers(1, 5),
       grid_cols=st.integers(1, 4), target=st.sampled_from(TARGETS))
def test_the_lanes_the_hardware_keeps_are_the_mask_s(M, N, extra, grid_rows, grid_cols, target):
    """Every lane the range check keeps is one the mask (row < M) & (cols < N) keeps, and back:
    the loads (`seen`: 0 where not read) and the stores (`out` poisoned) of any bounds and grid."""
    run_rows(target, M=M, N=N, stride=N + extra + 1, grid_rows=grid_rows, grid_cols=grid_cols)


@pytest.mark.parametrize("target", TARGETS)
def test_two_per_lane_bounds_keep_the_exec_path(target):
    """rows and cols both per lane: the kept lanes form a rectangle, not one byte range."""
    M, N = 37, 45
    x, out = RNG.standard_normal(M * N).astype(np.float32), poisoned(M * N, np.float32)
    ops = opcodes(amdgcn(tile_2d_kernel, (x, out, M, N), target, BM=16, BN=16))
    assert not any(op.startswith("buffer_") for op in ops)
    tile.emulate(tile_2d_kernel, target=target)[(3, 3)](x, out, M, N, BM=16, BN=16)
    np.testing.assert_array_equal(out, x * 2)


# ------------------------------------------------------------ the emulator's range checking

BUFFER_COPY = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dwordx2 s[6:7], s[0:1], 8
s_load_dword s8, s[0:1], 16
v_lshlrev_b32 v1, {shift}, v0
s_waitcnt lgkmcnt(0)
s_mov_b32 s12, s4
s_and_b32 s13, s5, 0xffff
s_or_b32 s13, s13, {stride}
s_mov_b32 s14, s8
s_mov_b32 s15, 0x27000
{load} {dst}, v1, s[12:15], 0 offen offset:{offset}
v_lshlrev_b32 v2, 3, v0
v_mad_u64_u32 v[2:3], vcc, v2, 1, s[6:7]
s_waitcnt vmcnt(0)
global_store_dwordx2 v[2:3], v[4:5], off
s_endpgm
"""
COPY_ARGS = [("x", 8, "global_buffer"), ("out", 8, "global_buffer"), ("num_records", 4, "by_value")]


def run_buffer_copy(x: np.ndarray, num_records: int, load: str = "buffer_load_dwordx2", shift: int = 3,
                    offset: int = 0, stride: int = 0) -> np.ndarray:
    """Each of 64 lanes loads at byte offset lane << shift (+ offset) through a resource of
    `num_records` bytes (and `stride`), and stores v[4:5] (v5 set to 0x77 first for one-dword loads)."""
    dst = "v[4:5]" if load.endswith("x2") else "v4"
    body = BUFFER_COPY.format(shift=shift, load=load, dst=dst, offset=offset, stride=stride << 16)
    if dst == "v4":
        body = body.replace("v_lshlrev_b32 v2, 3", "v_mov_b32 v5, 0x77\nv_lshlrev_b32 v2, 3")
    out = np.full(128, 0xDEADBEEF, np.uint32)
    run_amdgcn(text_of(body, COPY_ARGS), 1, [x, out, num_records])
    return out.reshape(64, 2)


def test_each_dword_is_range_checked_and_out_of_range_lanes_touch_no_memory():
    x = RNG.integers(1, 2**32, 22, dtype=np.uint64).astype(np.uint32)   # 11 lanes' worth of 8 bytes
    out = run_buffer_copy(x, num_records=8 * 10 + 4)
    np.testing.assert_array_equal(out[:10], x[:20].reshape(10, 2))
    np.testing.assert_array_equal(out[10], [x[20], 0])     # its second dword ends past num_records
    assert not out[11:].any()


def test_the_immediate_offset_counts_in_the_range_check():
    x = RNG.integers(1, 2**32, 130, dtype=np.uint64).astype(np.uint32)
    out = run_buffer_copy(x, num_records=64, load="buffer_load_dword", offset=8)
    lanes_in = (np.arange(64) * 8 + 8 + 4 <= 64)
    np.testing.assert_array_equal(out[:, 0], np.where(lanes_in, x[np.arange(64) * 2 + 2], 0))
    np.testing.assert_array_equal(out[:, 1], 0x77)


def test_sub_dword_buffer_loads_extend_as_their_name_says():
    x = np.arange(-32, 32, dtype=np.int8).view(np.uint8)
    signed = run_buffer_copy(x, num_records=60, load="buffer_load_sbyte", shift=0)
    unsigned = run_buffer_copy(x, num_records=60, load="buffer_load_ubyte", shift=0)
    expected = np.where(np.arange(64) < 60, np.arange(-32, 32), 0)
    np.testing.assert_array_equal(signed[:, 0].view(np.int32), expected)
    np.testing.assert_array_equal(unsigned[:, 0], np.where(np.arange(64) < 60, x, 0))


def test_a_misaligned_buffer_load_in_range_is_an_error():
    with pytest.raises(EmulatorError, match="is not aligned to 4 bytes"):
        run_buffer_copy(np.zeros(256, np.uint32), num_records=1024, load="buffer_load_dword", offset=2)


def test_a_structured_resource_is_refused():
    with pytest.raises(EmulatorError, match=r"not a raw buffer of gfx942 \(stride 16"):
        run_buffer_copy(np.zeros(256, np.uint32), num_records=1024, stride=16)


BUFFER_STORE = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dword s8, s[0:1], 8
v_lshlrev_b32 v1, {shift}, v0
v_add_u32 v4, 1, v0
v_add_u32 v5, 0x100, v0
s_waitcnt lgkmcnt(0)
s_mov_b32 s12, s4
s_and_b32 s13, s5, 0xffff
s_mov_b32 s14, s8
s_mov_b32 s15, 0x27000
{store} {data}, v1, s[12:15], 0 offen offset:{offset}
s_endpgm
"""
STORE_ARGS = [("out", 8, "global_buffer"), ("num_records", 4, "by_value")]


def run_buffer_store(out: np.ndarray, num_records: int, store: str = "buffer_store_dwordx2", shift: int = 3,
                     offset: int = 0) -> np.ndarray:
    """Each of 64 lanes stores v4 = lane + 1 (and v5 = lane + 0x100 for dwordx2) at byte offset
    lane << shift (+ offset) through a resource of `num_records` bytes over `out`."""
    data = "v[4:5]" if store.endswith("x2") else "v4"
    run_amdgcn(text_of(BUFFER_STORE.format(shift=shift, store=store, data=data, offset=offset), STORE_ARGS), 1,
               [out, num_records])
    return out


def test_each_stored_dword_is_range_checked_and_lanes_past_it_write_nothing():
    out = run_buffer_store(np.full(128, 0xDEADBEEF, np.uint32), num_records=8 * 10 + 4).reshape(64, 2)
    lanes = np.arange(64)
    np.testing.assert_array_equal(out[:10], np.stack([lanes[:10] + 1, lanes[:10] + 0x100], axis=1))
    np.testing.assert_array_equal(out[10], [11, 0xDEADBEEF])   # its second dword ends past num_records
    assert (out[11:] == 0xDEADBEEF).all()


def test_sub_dword_buffer_stores_write_their_low_bits_and_offsets_count_in_the_range_check():
    out = run_buffer_store(np.full(80, 0xAA, np.uint8), num_records=60, store="buffer_store_byte", shift=0, offset=3)
    expected = np.full(80, 0xAA, np.uint8)
    expected[3:60] = np.arange(1, 58)   # lane L writes byte L + 3 while L + 3 + 1 <= 60
    np.testing.assert_array_equal(out, expected)


def test_a_misaligned_buffer_store_in_range_is_an_error():
    with pytest.raises(EmulatorError, match="is not aligned to 4 bytes"):
        run_buffer_store(np.zeros(256, np.uint32), num_records=1024, store="buffer_store_dword", offset=2)


@tile.jit
def chunked_sum_kernel(x_ptr, out_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program sums CHUNKS consecutive blocks: the bound check's uniform part is the loop's."""
    acc = tl.zeros((BLOCK,), tl.float32)
    for c in range(CHUNKS):
        offs = (tl.program_id(0) * CHUNKS + c) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_loads_in_a_loop_take_the_induction_variable_into_the_resource(target):
    n, block, chunks, programs = 1000, 64, 4, 4
    x = RNG.standard_normal(n).astype(np.float32)
    out = poisoned(programs * block, np.float32)
    tile.emulate(chunked_sum_kernel, target=target)[(programs,)](x, out, n, CHUNKS=chunks, BLOCK=block)
    padded = np.zeros(programs * chunks * block)
    padded[:n] = x
    expected = padded.reshape(programs, chunks, block).sum(axis=1).ravel()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    ops = opcodes(amdgcn(chunked_sum_kernel, (x, out, n), target, CHUNKS=chunks, BLOCK=block))
    assert any(op.startswith("buffer_load") for op in ops) and not any(op.startswith("global_load") for op in ops)


# ------------------------------------------------------------ the per-lane ranges it relies on

def _wrap(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def _truncating(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


_SEMANTICS = {"arith.add": lambda a, b: a + b, "arith.sub": lambda a, b: a - b, "arith.mul": lambda a, b: a * b,
              "arith.shl": lambda a, b: a << b, "arith.shr": lambda a, b: a >> b, "arith.and": lambda a, b: a & b,
              "arith.or": lambda a, b: a | b, "arith.div": lambda a, b: _truncating(a, b)[0],
              "arith.rem": lambda a, b: _truncating(a, b)[1], "arith.max": max, "arith.min": min}


@st.composite
def lane_expressions(draw, depth=3):
    """(a builder of the simt ops, the value per thread index) for a random i32 expression."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            return ("tid",), lambda t: t
        c = draw(st.integers(-20, 300))
        return ("constant", c), lambda t: c
    name = draw(st.sampled_from(sorted(_SEMANTICS)))
    left, evaluate_left = draw(lane_expressions(depth=depth - 1))
    if name in ("arith.shl", "arith.shr", "arith.div", "arith.rem"):
        k = draw(st.integers(0, 12) if name in ("arith.shl", "arith.shr") else st.integers(1, 40))
        right, evaluate_right = ("constant", k), (lambda t: k)
    else:
        right, evaluate_right = draw(lane_expressions(depth=depth - 1))
    return (name, left, right), lambda t: _wrap(_SEMANTICS[name](evaluate_left(t), evaluate_right(t)))


def _build(tree, tid):
    from tile.ir.core import Operation
    from tile.ir.types import i32
    if tree[0] == "tid":
        return tid
    if tree[0] == "constant":
        return Operation("arith.constant", (), (i32,), {"value": tree[1]}).result
    return Operation(tree[0], (_build(tree[1], tid), _build(tree[2], tid)), (i32,)).result


@settings(max_examples=200, deadline=None)
@given(expression=lane_expressions(), threads=st.sampled_from([32, 64, 256]))
def test_lane_ranges_contain_every_value(expression, threads):
    from tile.codegen.amdgcn.isel import lane_range
    from tile.ir.core import Operation
    from tile.ir.types import i32
    tree, evaluate = expression
    tid = Operation("simt.tid", (), (i32,)).result
    found = lane_range(_build(tree, tid), threads, {})
    if found is not None:
        values = [evaluate(t) for t in range(threads)]
        assert found[0] <= min(values) and max(values) <= found[1]
