"""The emulator's LDS bank-conflict counter (tile.emulator.amdgcn_lds_banks): hand-made access
patterns with known clock counts per target, and the counter's records of a hand-written kernel."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from test_emulator_amdgcn import text_of
from tile.emulator.amdgcn_lds_banks import LDS_BANK_RULES, active_counter, count_lds_bank_conflicts, lds_clocks
from tile.emulator.amdgcn_machine import run_amdgcn

CDNA3, RDNA3 = LDS_BANK_RULES["gfx942"], LDS_BANK_RULES["gfx1100"]
WAVE64, WAVE32 = np.arange(64), np.arange(32)


@pytest.mark.parametrize("stride, size, clocks", [
    (4, 4, 2),          # consecutive DWORDs: 2 phases of 32 lanes, one clock each
    (8, 4, 4),          # every other DWORD: the even banks twice per phase, 2-way
    (128, 4, 64),       # one bank for the whole phase: 32-way
    (0, 4, 2),          # one DWORD for all: a broadcast
    (2, 2, 2),          # u16 neighbours share DWORDs
    (16, 16, 8),        # ds_read_b128 of consecutive 16 bytes: 8 phases of 8 lanes
    (64, 16, 32),       # b128 rows of 64 bytes: lanes 0, 2, 4, 6 of a phase on banks 0-3, 4-way
    (8, 8, 4),          # ds_read_b64 consecutive: 4 phases of 16 lanes
    (16, 8, 8),         # b64 every other 8 bytes: 2-way
])
def test_cdna3_clocks_of_wave64_patterns(stride, size, clocks):
    assert lds_clocks(WAVE64, WAVE64 * stride, size, CDNA3)[0] == clocks


def test_ideal_clocks_count_the_phases():
    assert lds_clocks(WAVE64, WAVE64 * 128, 4, CDNA3) == (64, 2)
    assert lds_clocks(WAVE64, WAVE64 * 64, 16, CDNA3) == (32, 8)
    assert lds_clocks(np.arange(8), np.arange(8) * 4, 4, CDNA3) == (1, 1)   # a partial wave, one phase


@pytest.mark.parametrize("stride, size, clocks", [
    (4, 4, 1),          # a wave32 b32 is one phase of 32 banks
    (128, 4, 32),       # one bank
    (8, 4, 2),          # every other DWORD, 2-way
    (8, 8, 2),          # b64 consecutive: 2 phases of 16 lanes
    (16, 16, 4),        # b128: 4 phases of 8 lanes
])
def test_rdna3_clocks_of_wave32_patterns(stride, size, clocks):
    assert lds_clocks(WAVE32, WAVE32 * stride, size, RDNA3)[0] == clocks


def test_a_wave_meets_32_banks_on_every_target():
    """A wave64 b32 access on CDNA is two phases; a wave32 one on RDNA3 one."""
    assert {rule.banks for rule in LDS_BANK_RULES.values()} == {32}
    assert lds_clocks(WAVE64, WAVE64 * 4, 4, CDNA3) == (2, 2)
    assert lds_clocks(WAVE32, WAVE32 * 4, 4, RDNA3) == (1, 1)


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(64)), st.sampled_from([4, 8, 16]))
def test_a_permutation_of_consecutive_chunks_within_each_phase_has_no_conflict(order, size):
    """Lanes of a phase touching one full row of banks in any order: one clock per phase."""
    per_phase = 128 // size
    order = np.array(order)
    chunk = (order % per_phase) + per_phase * (np.arange(64) // per_phase)   # stay within the lane's phase
    clocks, ideal = lds_clocks(WAVE64, chunk * size, size, CDNA3)
    assert clocks == ideal == 64 // per_phase


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1023), min_size=64, max_size=64), st.sampled_from([1, 2, 4, 8, 16]))
@example([0] * 63 + [32], 1)
def test_clocks_are_between_the_phases_and_the_distinct_dwords(dwords, size):
    """At least a clock per phase; at most one per distinct dword of each phase (a phase's lanes
    that share a dword share its read; hypothesis once found 63 lanes on dword 0 and one on dword
    32: 1 + 2 clocks, above the 2 distinct dwords of the whole wave)."""
    addresses = np.array(dwords) * 4 // size * size
    clocks, ideal = lds_clocks(WAVE64, addresses, size, CDNA3)
    per_phase = max(1, CDNA3.bytes_per_clock // max(size, 4))
    distinct = sum(len({d for a in addresses[p:p + per_phase] for d in range(a // 4, (a + size - 1) // 4 + 1)})
                   for p in range(0, 64, per_phase))
    assert ideal <= clocks <= distinct


def _strided_kernel(stride_shift: int) -> str:
    """Each lane writes its id at LDS byte lane << stride_shift, then reads it back and stores it."""
    return text_of(f"""
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, {stride_shift}, v0
ds_write_b32 v1, v0
s_waitcnt lgkmcnt(0)
ds_read_b32 v2, v1
v_lshlrev_b32 v3, 2, v0
s_waitcnt lgkmcnt(0)
v_mov_b32 v4, s4
v_mov_b32 v5, s5
v_add_co_u32 v4, vcc, v4, v3
v_addc_co_u32 v5, vcc, v5, 0, vcc
global_store_dword v[4:5], v2, off
s_endpgm
""", [("out", 8, "global_buffer")], lds=64 << stride_shift)


@pytest.mark.parametrize("stride_shift, ways", [(2, 1), (3, 2), (7, 32)])
def test_the_counter_records_each_ds_instruction_of_a_run(stride_shift, ways):
    out = np.full(64, 0xFFFFFFFF, np.uint32)
    with count_lds_bank_conflicts() as lds:
        run_amdgcn(_strided_kernel(stride_shift), 2, [out])
    np.testing.assert_array_equal(out, np.arange(64))
    write, read = lds.by_instruction()
    assert (write.opcode, read.opcode) == ("ds_write_b32", "ds_read_b32")
    assert write.line < read.line
    for record in (write, read):
        assert record.executions == 2                 # one wave in each of 2 workgroups
        assert record.ideal_clocks == 2 * 2           # 2 phases a run
        assert record.ways == ways
    assert lds.conflict_clocks == 2 * 2 * 2 * (ways - 1)
    assert lds.totals("ds_write")[1] == lds.totals("ds_read")[1] == lds.conflict_clocks // 2


def test_nothing_is_counted_outside_the_block():
    assert active_counter() is None
    with count_lds_bank_conflicts() as lds:
        pass
    run_amdgcn(_strided_kernel(7), 1, [np.zeros(64, np.uint32)])
    assert lds.records == {} and active_counter() is None
