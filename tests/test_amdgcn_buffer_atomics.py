"""Buffer atomics on the AMD targets: a masked tl.atomic_* whose mask bounds its own index
(`idx < n`, as a buffer load's) is selected as buffer_atomic_* through a raw buffer resource of
num_records = the bound: the lanes past it neither read nor write memory, with no EXEC narrowing.
A result that is read becomes the returning form (the target's return bit; the old value
written over a copy of the data), else the non-returning one; the memory model's fences stay
around it. Checked on gfx942, gfx90a and gfx1100 against NumPy on the emulator with poisoned
outputs (colliding addresses applied in lane order, masked tails, returned values, a ticket
counter, compare-and-swap, a spin lock), and assembled by llvm-mc."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import TARGETS, assemble, emit_amdgcn
from tile.codegen.amdgcn.isa import spelling
from tile.emulator import EmulatorError
from tile.emulator.amdgcn_decode import AmdgcnSyntaxError
from tile.emulator.amdgcn_machine import run_amdgcn
from tile.ir import parse_op
from amdgcn_util import instructions, needs_llvm, unwaited_reads, warps_for
from test_emulator_amdgcn import text_of

RNG = np.random.default_rng(1315)
SHARE = 4        # lanes per bin: every bin is hit by SHARE lanes of one wave
BLOCK = 64       # one element per work-item of a workgroup of BLOCK: lane order is element order


@tile.jit
def bins_kernel(x_ptr, out_ptr, old_ptr, n_bins, OP: tl.constexpr, BLOCK: tl.constexpr, SHARE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    b = tl.program_id(0) * (BLOCK // SHARE) + tl.arange(0, BLOCK) // SHARE
    m = b < n_bins
    if OP == "add":
        old = tl.atomic_add(out_ptr + b, x, mask=m)
    elif OP == "max":
        old = tl.atomic_max(out_ptr + b, x, mask=m)
    elif OP == "min":
        old = tl.atomic_min(out_ptr + b, x, mask=m)
    elif OP == "and":
        old = tl.atomic_and(out_ptr + b, x, mask=m)
    elif OP == "or":
        old = tl.atomic_or(out_ptr + b, x, mask=m)
    elif OP == "xor":
        old = tl.atomic_xor(out_ptr + b, x, mask=m)
    else:
        old = tl.atomic_xchg(out_ptr + b, x, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


@tile.jit
def unmasked_old_kernel(x_ptr, out_ptr, old_ptr, n_bins, programs, BLOCK: tl.constexpr, SHARE: tl.constexpr):
    """The old value stored without the mask; the mask also holds a uniform factor (the program
    below `programs`), which the resource folds in and the zeroing computes."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    b = tl.program_id(0) * (BLOCK // SHARE) + tl.arange(0, BLOCK) // SHARE
    m = (tl.program_id(0) < programs) & (b < n_bins)
    tl.store(old_ptr + offs, tl.atomic_add(out_ptr + b, tl.load(x_ptr + offs), mask=m))


@tile.jit
def histogram_kernel(x_ptr, out_ptr, n_bins, BLOCK: tl.constexpr, SHARE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    b = tl.program_id(0) * (BLOCK // SHARE) + tl.arange(0, BLOCK) // SHARE
    tl.atomic_add(out_ptr + b, tl.load(x_ptr + offs), mask=b < n_bins, sem="relaxed")


@tile.jit
def ticket_kernel(counter_ptr, order_ptr, n_counters, STRIDE: tl.constexpr, BLOCK: tl.constexpr,
                  SHARE: tl.constexpr):
    """Each lane takes a ticket from its group's counter and writes its id at that ticket's slot
    (in its group's STRIDE slots)."""
    lane = tl.arange(0, BLOCK)
    group = lane // SHARE
    m = group < n_counters
    ticket = tl.atomic_add(counter_ptr + group, 1, mask=m, sem="relaxed")
    me = tl.program_id(0) * BLOCK + lane
    tl.store(order_ptr + group * STRIDE + ticket, me, mask=m)


@tile.jit
def locked_sum_kernel(lock_ptr, sum_ptr, x_ptr, N, BLOCK: tl.constexpr):
    """Tutorial 09's pattern: under a compare-and-swap spin lock, each program swaps its partial
    sums into the buffer (returning what was there) and adds that back: buffer atomics on a
    column-bounded mask, the lock itself a scalar global atomic."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    partial = tl.load(x_ptr + pid * N + cols, mask=mask)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    before = tl.atomic_xchg(sum_ptr + cols, partial, mask=mask, sem="relaxed")
    tl.atomic_add(sum_ptr + cols, before, mask=mask, sem="relaxed")
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


REDUCE = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}
CASES = [("add", np.int32), ("add", np.uint32), ("add", np.float32), ("max", np.int32), ("min", np.int32),
         ("max", np.uint32), ("min", np.uint32), ("and", np.int32), ("or", np.uint32), ("xor", np.int32),
         ("xchg", np.int32), ("xchg", np.float32), ("add", np.int64), ("add", np.float64), ("max", np.int64),
         ("min", np.uint64), ("and", np.int64), ("or", np.int64), ("xor", np.uint64), ("xchg", np.int64)]


def values(n: int, dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "f":   # integer-valued: sums are exact in any order
        return RNG.integers(-50, 50, n).astype(dtype)
    if np.dtype(dtype).itemsize == 8:   # both dwords and the sign in play
        return RNG.integers(-2**62, 2**62, n, dtype=np.int64).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -2**31), min(info.max, 2**31 - 1), n, dtype=np.int64).astype(dtype)


def poison(dtype):
    return np.nan if np.dtype(dtype).kind == "f" else 0x55


def amdgcn(kernel, args, target, **constexprs) -> str:
    return str(tile.dump(kernel, *args, stage="amdgcn", target=target, num_warps=warps_for(target, BLOCK), **constexprs))


def emulate(kernel, grid, args, target, **constexprs) -> None:
    tile.emulate(kernel, target=target)[(grid,)](*args, num_warps=warps_for(target, BLOCK), **constexprs)


def atomic_lines(text: str) -> list[str]:
    return [line for line in instructions(text) if "_atomic_" in line]


@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{op}-{np.dtype(t).name}" for op, t in CASES])
@pytest.mark.parametrize("target", TARGETS)
def test_bounded_atomics_are_buffer_atomics_applied_in_lane_order(op, dtype, target):
    """Two programs of 64 lanes over 32 bins, SHARE lanes per bin, the bound at 27: the lanes of
    bins 27..31 are past it and touch nothing (those bins stay poisoned, their old values are
    not stored); the others apply in lane order, each lane seeing its predecessor's result."""
    programs, n_bins = 2, 27
    bins = programs * BLOCK // SHARE
    x = values(programs * BLOCK, dtype)
    start = values(bins, dtype)
    start[n_bins:] = poison(dtype)
    out, old = start.copy(), np.full(programs * BLOCK, poison(dtype), dtype)
    if (op, dtype, target) == ("add", np.float64, "gfx1100"):   # RDNA3 has no f64 atomic add at all
        with pytest.raises(tile.CompilationError, match="gfx1100: .* does not support simt.atom add of f64"):
            amdgcn(bins_kernel, (x, out, old, n_bins), target, OP=op, BLOCK=BLOCK, SHARE=SHARE)
        return
    emulate(bins_kernel, programs, (x, out, old, n_bins), target, OP=op, BLOCK=BLOCK, SHARE=SHARE)
    for b in range(bins):
        lanes = x[b * SHARE:(b + 1) * SHARE]
        if b >= n_bins:   # past the bound: memory untouched, the old values not stored
            np.testing.assert_array_equal(out[b:b + 1], start[b:b + 1])
            np.testing.assert_array_equal(old[b * SHARE:(b + 1) * SHARE], np.full(SHARE, poison(dtype), dtype))
            continue
        chain = np.concatenate([[start[b]], lanes]).astype(dtype)
        if op != "xchg":
            chain = REDUCE[op].accumulate(chain, dtype=dtype)
        np.testing.assert_array_equal(old[b * SHARE:(b + 1) * SHARE], chain[:-1])
        np.testing.assert_array_equal(out[b:b + 1], chain[-1:])
    text = amdgcn(bins_kernel, (x, out, old, n_bins), target, OP=op, BLOCK=BLOCK, SHARE=SHARE)
    atomics = atomic_lines(text)
    assert atomics and all(line.startswith("buffer_atomic_") for line in atomics)
    assert all(line.endswith(" offen sc0" if target == "gfx942" else " offen glc") for line in atomics)
    assert unwaited_reads(text) == []
    assert assemble(text, target)[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", TARGETS)
def test_old_values_read_past_the_bound_are_zero(target):
    """The old value stored without the mask: the lanes past the bound (bins from 13 in program
    0, every lane of program 1, whose uniform factor is false) read 0, simt.atom's contract,
    which the selector sets under the mask since the ISA leaves those lanes open."""
    n_bins, grid = 13, 2
    x, out = values(grid * BLOCK, np.int32), values(grid * BLOCK // SHARE, np.int32)
    start = out.copy()
    old = np.full(grid * BLOCK, 0x55, np.int32)
    emulate(unmasked_old_kernel, grid, (x, out, old, n_bins, 1), target, BLOCK=BLOCK, SHARE=SHARE)
    assert not old[n_bins * SHARE:].any()
    for b in range(n_bins):
        chain = np.add.accumulate(np.concatenate([[start[b]], x[b * SHARE:(b + 1) * SHARE]]), dtype=np.int32)
        np.testing.assert_array_equal(old[b * SHARE:(b + 1) * SHARE], chain[:-1])
    np.testing.assert_array_equal(out[n_bins:], start[n_bins:])
    text = amdgcn(unmasked_old_kernel, (x, out, old, n_bins, 1), target, BLOCK=BLOCK, SHARE=SHARE)
    lines = instructions(text)
    k = next(i for i, line in enumerate(lines) if line.startswith("buffer_atomic_add"))
    assert any(line.startswith("v_cndmask_b32") for line in lines[k:])
    assert assemble(text, target)[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", TARGETS)
def test_an_unread_result_is_the_non_returning_form(target):
    """tl.atomic_add whose result nobody reads, relaxed: buffer_atomic_add without the return
    bit, counted as a store (vscnt on gfx1100) and never waited for; histogram-style bins."""
    programs, n_bins = 3, 40
    x = RNG.integers(-1000, 1000, programs * BLOCK).astype(np.int32)
    out = np.full(programs * BLOCK // SHARE, 0x55, np.int32)
    emulate(histogram_kernel, programs, (x, out, n_bins), target, BLOCK=BLOCK, SHARE=SHARE)
    expected = np.full_like(out, 0x55)
    expected[:n_bins] += x.reshape(-1, SHARE).sum(axis=1)[:n_bins]
    np.testing.assert_array_equal(out, expected)
    text = amdgcn(histogram_kernel, (x, out, n_bins), target, BLOCK=BLOCK, SHARE=SHARE)
    (atomic,) = atomic_lines(text)
    name = "buffer_atomic_add_u32" if target == "gfx1100" else "buffer_atomic_add"
    assert atomic.startswith(name + " ") and atomic.endswith(" offen")
    lines = instructions(text)
    assert lines[lines.index(atomic) + 1] == "s_endpgm"


@pytest.mark.parametrize("target", TARGETS)
def test_a_ticket_counter_hands_out_each_ticket_once(target):
    """atomic_add's result as a ticket: each group of SHARE lanes (of each of 3 programs) shares
    a counter, the last group is past the bound and takes none; every lane writes its id at its
    ticket's slot, so each counter's slots hold a permutation of its lanes."""
    programs, n_counters = 3, BLOCK // SHARE - 1
    starts = RNG.integers(0, 5, BLOCK // SHARE).astype(np.int32)
    counters = starts.copy()
    slots = SHARE * programs
    stride = slots + 8
    order = np.full(BLOCK // SHARE * stride, -1, np.int32)
    emulate(ticket_kernel, programs, (counters, order, n_counters), target, STRIDE=stride, BLOCK=BLOCK, SHARE=SHARE)
    np.testing.assert_array_equal(counters[:n_counters], starts[:n_counters] + slots)
    assert counters[n_counters] == starts[n_counters]
    for g in range(n_counters):
        row = order[g * stride:(g + 1) * stride]
        mine = [p * BLOCK + g * SHARE + k for p in range(programs) for k in range(SHARE)]
        assert sorted(row[starts[g]:starts[g] + slots]) == mine
        assert (row[:starts[g]] == -1).all() and (row[starts[g] + slots:] == -1).all()
    assert (order[n_counters * stride:] == -1).all()
    text = amdgcn(ticket_kernel, (counters, order, n_counters), target, STRIDE=stride, BLOCK=BLOCK, SHARE=SHARE)
    assert atomic_lines(text)[0].startswith("buffer_atomic_add")
    assert assemble(text, target)[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", TARGETS)
def test_a_spin_lock_serialises_swaps_and_adds_of_buffer_atomics(target):
    programs, n = 5, 50
    x = RNG.integers(-1000, 1000, (programs, n)).astype(np.int32)
    total = np.zeros(64, np.int32)
    total[n:] = 0x55
    lock = np.zeros(1, np.int32)
    emulate(locked_sum_kernel, programs, (lock, total, x, n), target, BLOCK=64)
    np.testing.assert_array_equal(total[:n], x.sum(axis=0))
    assert (total[n:] == 0x55).all() and lock[0] == 0
    text = amdgcn(locked_sum_kernel, (lock, total, x, n), target, BLOCK=64)
    assert [line.split()[0].split("_")[0] for line in atomic_lines(text)] == ["global", "buffer", "buffer", "global"]
    assert assemble(text, target)[:4] == b"\x7fELF"


@tile.jit
def accumulate_kernel(out_ptr, x_ptr, n, K, BLOCK: tl.constexpr):
    """K rounds of out += x[k] in a loop, each round's old values written over x[k]."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    for k in range(K):
        x = tl.load(x_ptr + k * n + offs, mask=offs < n)
        old = tl.atomic_add(out_ptr + offs, x, mask=offs < n, sem="relaxed")
        tl.store(x_ptr + k * n + offs, old, mask=offs < n)


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_atomics_in_a_loop(target):
    n, rounds, programs = 150, 3, 3
    x = RNG.integers(-9, 9, (rounds, n)).astype(np.int32)
    start = np.full(programs * BLOCK, 0x55, np.int32)
    start[:n] = RNG.integers(-99, 99, n)
    out, olds = start.copy(), x.copy()
    emulate(accumulate_kernel, programs, (out, olds, n, rounds), target, BLOCK=BLOCK)
    np.testing.assert_array_equal(out[:n], start[:n] + x.sum(axis=0))
    assert (out[n:] == 0x55).all()   # the third program's lanes past n touch nothing
    np.testing.assert_array_equal(olds, start[:n] + np.cumsum(x, axis=0) - x)
    text = amdgcn(accumulate_kernel, (out, olds, n, rounds), target, BLOCK=BLOCK)
    assert [line.split()[0].split("_")[0] for line in atomic_lines(text)] == ["buffer"]
    assert assemble(text, target)[:4] == b"\x7fELF"


def _cas_func(t: str, returning: bool) -> str:
    """simt IR: lane l compares-and-swaps slot l // 2 of p, where l // 2 < n, from c to v; the
    old value stored to q under the same mask."""
    store = "  simt.st_global %qa, %m, %old {offset = 0}\n" if returning else ""
    result = f"%old = simt.atom_cas %pa, %m, %c, %v {{offset = 0, scope = \"gpu\", sem = \"acq_rel\"}} : {t}\n"
    return ('simt.func {arg_names = ["p", "q", "n"], num_warps = 2, shared_bytes = 0, sym_name = "cas"} {\n'
            f"^bb(%p: ptr<{t}>, %q: ptr<{t}>, %n: i32):\n"
            "  %t = simt.tid : i32\n  %one = arith.constant {value = 1} : i32\n"
            "  %slot = arith.shr %t, %one : i32\n"
            "  %m = arith.cmp %slot, %n {predicate = \"lt\"} : i1\n"
            f"  %pa = simt.addptr %p, %slot {{scale = {int(t[1:]) // 8}}} : ptr<{t}>\n"
            f"  %qa = simt.addptr %q, %t {{scale = {int(t[1:]) // 8}}} : ptr<{t}>\n"
            f"  %tw = simt.cvt %t : {t}\n  %three = arith.constant {{value = 3}} : {t}\n"
            f"  %c = arith.and %tw, %three : {t}\n  %v = arith.add %tw, %three : {t}\n"
            f"  {result}{store}  simt.return\n}}")


@pytest.mark.parametrize("t", ["u32", "u64"])
@pytest.mark.parametrize("target", TARGETS)
def test_compare_and_swap_on_a_bounded_slot(target, t):
    """buffer_atomic_cmpswap(_x2): data = new value then compare value; the old value returns in
    the first half. Lanes 2s and 2s + 1 share slot s: lane 2s swaps in 2s + 3 where the slot
    holds 2s & 3, then lane 2s + 1 sees that and swaps only if it equals (2s + 1) & 3."""
    dtype = np.dtype(t.replace("u", "uint"))
    n = 21
    text = emit_amdgcn(parse_op(_cas_func(t, True)), target)
    opcode = "buffer_atomic_cmpswap" + ("_x2" if t == "u64" else "")
    lines = atomic_lines(text)
    assert [line.split()[0] for line in lines] == [spelling(opcode, target)]
    slots = (np.arange(32) * 2 & 3).astype(dtype)
    slots[5::7] = 99
    start = slots.copy()
    old = np.full(64, 0x55, dtype)
    run_amdgcn(text, 1, [slots, old, n])
    for s in range(32):
        lanes = [2 * s, 2 * s + 1]
        if s >= n:
            assert slots[s] == start[s] and (old[lanes] == 0x55).all()
            continue
        value = start[s]
        for lane in lanes:
            assert old[lane] == value
            if value == lane & 3:
                value = lane + 3
        assert slots[s] == value


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
def test_buffer_atomics_assemble(target):
    x, out, old = np.zeros(BLOCK, np.int32), np.zeros(BLOCK // SHARE, np.int32), np.zeros(BLOCK, np.int32)
    texts = [amdgcn(bins_kernel, (x, out, old, 7), target, OP="add", BLOCK=BLOCK, SHARE=SHARE),
             amdgcn(histogram_kernel, (x, out, 7), target, BLOCK=BLOCK, SHARE=SHARE),
             emit_amdgcn(parse_op(_cas_func("u64", True)), target),
             emit_amdgcn(parse_op(_cas_func("u32", False)), target)]
    for text in texts:
        assert assemble(text, target)[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", TARGETS)
def test_system_scope_and_other_masks_keep_the_global_atomic(target):
    """A system-scope atomic stays global (as Triton's AMD backend keeps it), and so does one
    whose mask is not its own index's bound."""
    @tile.jit
    def other_masks(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.atomic_add(out_ptr + offs, x, mask=offs < n, scope="sys")
        tl.atomic_add(out_ptr + offs % 4, x, mask=offs < n)

    x = np.arange(BLOCK, dtype=np.int32)
    text = amdgcn(other_masks, (x, x, 5), target, BLOCK=BLOCK)
    assert [line.split()[0].split("_")[0] for line in atomic_lines(text)] == ["global", "global"]


@tile.jit
def ordered_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs, 1.0, mask=offs < n)


@pytest.mark.parametrize("target, before, after", [
    ("gfx942", ["buffer_wbl2 sc1", "s_waitcnt vmcnt(0) lgkmcnt(0)"], ["s_waitcnt vmcnt(0)", "buffer_inv sc1"]),
    ("gfx90a", ["s_waitcnt vmcnt(0) lgkmcnt(0)"], ["s_waitcnt vmcnt(0)", "buffer_wbinvl1_vol"]),
    ("gfx1100", ["s_waitcnt vmcnt(0) lgkmcnt(0)", "s_waitcnt_vscnt null, 0x0"],
     ["s_waitcnt vmcnt(0)", "buffer_gl1_inv", "buffer_gl0_inv"]),
])
def test_buffer_atomics_keep_the_memory_model_s_fences(target, before, after):
    """tl.atomic_add's default acq_rel at agent scope: the release sequence and drain before the
    buffer atomic and the wait and invalidation after it, as for a global atomic (isa.MEMORY_ORDER;
    tests/test_amdgcn_atomics.py has the table's derivation)."""
    out = np.zeros(BLOCK, np.float32)
    lines = instructions(amdgcn(ordered_kernel, (out, 50), target, BLOCK=BLOCK))
    k = next(i for i, line in enumerate(lines) if line.startswith("buffer_atomic_add_f32"))
    assert lines[k - len(before):k] == before and lines[k + 1:k + 1 + len(after)] == after


# ------------------------------------------------------------ the emulator's buffer atomics

BUFFER_ATOMIC = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_load_dwordx2 s[6:7], s[0:1], 8
s_load_dword s8, s[0:1], 16
v_lshlrev_b32 v1, 2, v0
v_add_u32 v4, 1, v0
s_waitcnt lgkmcnt(0)
s_mov_b32 s12, s4
s_and_b32 s13, s5, 0xffff
s_mov_b32 s14, s8
s_mov_b32 s15, 0x27000
{atomic}
v_mad_u64_u32 v[2:3], vcc, v1, 1, s[6:7]
s_waitcnt vmcnt(0)
global_store_dword v[2:3], v4, off
s_endpgm
"""
ATOMIC_ARGS = [("x", 8, "global_buffer"), ("out", 8, "global_buffer"), ("num_records", 4, "by_value")]


def run_buffer_atomic(atomic: str, num_records: int) -> tuple[np.ndarray, np.ndarray]:
    """Lane l adds l + 1 to x[l] (byte offset 4 l) through a resource of `num_records` bytes, then
    stores its v4 (the data, or the old value where the atomic returned it) to out[l]."""
    x = np.arange(1000, 1064, dtype=np.uint32)
    out = np.full(64, 0xDEADBEEF, np.uint32)
    run_amdgcn(text_of(BUFFER_ATOMIC.format(atomic=atomic), ATOMIC_ARGS), 1, [x, out, num_records])
    return x, out


def test_a_returning_buffer_atomic_past_num_records_touches_nothing():
    """In range (the first 10 lanes, and lane 10's 4 bytes end at 44 > 42: out): old value back
    and the sum in memory; past it memory is untouched and the register keeps its data (the
    ISA leaves that lane's result open; tile never reads it unmasked)."""
    lanes = np.arange(64, dtype=np.uint32)
    x, out = run_buffer_atomic("buffer_atomic_add v4, v1, s[12:15], 0 offen sc0", num_records=42)
    np.testing.assert_array_equal(x, np.where(lanes < 10, 1000 + 2 * lanes + 1, 1000 + lanes))
    np.testing.assert_array_equal(out, np.where(lanes < 10, 1000 + lanes, lanes + 1))
    x, out = run_buffer_atomic("buffer_atomic_add v4, v1, s[12:15], 0 offen", num_records=42)
    np.testing.assert_array_equal(x, np.where(lanes < 10, 1000 + 2 * lanes + 1, 1000 + lanes))
    np.testing.assert_array_equal(out, lanes + 1)   # not returning: the data stays


def test_a_misaligned_buffer_atomic_in_range_is_an_error():
    with pytest.raises(EmulatorError, match="buffer_atomic_add_rtn: address .* is not aligned to 4 bytes"):
        run_buffer_atomic("buffer_atomic_add v4, v1, s[12:15], 0 offen offset:2 sc0", num_records=1024)


def test_a_returning_row_name_is_not_a_mnemonic():
    with pytest.raises(AmdgcnSyntaxError, match="unknown instruction `buffer_atomic_add_rtn`"):
        run_buffer_atomic("buffer_atomic_add_rtn v4, v1, s[12:15], 0 offen sc0", num_records=1024)
