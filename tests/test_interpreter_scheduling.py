"""The interpreter runs kernels whose programs wait on each other through memory (spin locks,
flags set by other programs) cooperatively, one program at a time, and reports deadlocks;
every other kernel still runs as one vectorised batch."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interp_util import kernel
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)

import tile
import tile.language as tl
import tile.runtime.interp_schedule as schedule
import tile.runtime.interpreter as interpreter
from tile.runtime.interp_schedule import needs_cooperative

# ------------------------------------------------------------------------- which loops wait

_SPIN_ON_CAS = """
  %lock = tt.addptr %p, %zero : ptr<i32>
  scf.while {
    %old = tt.atomic_cas %lock, %zero, %one {scope = "gpu", sem = "acq_rel"} : i32
    %busy = arith.cmp %old, %one {predicate = "eq"} : i1
    scf.condition %busy
  } {
    scf.yield
  }"""

_SPIN_CARRIED = """
  %first = tt.atomic_cas %p, %zero, %one {scope = "gpu", sem = "acq_rel"} : i32
  %last = scf.while %first : i32 {
  ^bb(%old: i32):
    %busy = arith.cmp %old, %one {predicate = "eq"} : i1
    scf.condition %busy, %old
  } {
  ^bb(%o: i32):
    %again = tt.atomic_cas %p, %zero, %one {scope = "gpu", sem = "acq_rel"} : i32
    scf.yield %again
  }"""

_SPIN_ON_VOLATILE_LOAD = """
  scf.while {
    %flag = tt.load %p {volatile = true} : i32
    %unset = arith.cmp %flag, %zero {predicate = "eq"} : i1
    scf.condition %unset
  } {
    scf.yield
  }"""

_COUNTING_LOOP = """
  %ten = arith.constant {value = 10} : i32
  %got = tt.atomic_rmw %p, %one {kind = "add", scope = "gpu", sem = "acq_rel"} : i32
  %n = scf.while %zero : i32 {
  ^bb(%i: i32):
    %more = arith.cmp %i, %got {predicate = "lt"} : i1
    scf.condition %more, %i
  } {
  ^bb(%j: i32):
    %x = tt.load %p : i32
    %k = arith.add %j, %one : i32
    scf.yield %k
  }"""


@pytest.mark.parametrize("body, waits", [(_SPIN_ON_CAS, True), (_SPIN_CARRIED, True), (_SPIN_ON_VOLATILE_LOAD, True),
                                         (_COUNTING_LOOP, False)],
                         ids=["cas-in-condition", "cas-carried-around-the-back-edge", "volatile-load",
                              "atomic-before-the-loop-and-plain-load-inside"])
def test_loops_that_wait_on_other_programs_are_recognised(body, waits):
    consts = """
  %zero = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32"""
    func = kernel([("p", "ptr<i32>")], consts + body)
    assert needs_cooperative(func) is waits


# ------------------------------------------------------------------------------ spin locks


@tile.jit
def locked_accumulate(lock_ptr, count_ptr, total_ptr, order_ptr, x_ptr, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program adds its row of x into one of GROUPS totals under that group's lock, with a
    plain (non-atomic) read-modify-write, and records the order in which it got the lock; the
    first writer of a group stores instead of adding (the layer-norm backward pattern)."""
    row = tl.program_id(0)
    group = row % GROUPS
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols)
    lock = lock_ptr + group
    count = count_ptr + group
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    seen = tl.load(count)
    if seen == 0:
        tl.store(total_ptr + group * BLOCK + cols, x)
    else:
        tl.store(total_ptr + group * BLOCK + cols, tl.load(total_ptr + group * BLOCK + cols) + x)
    tl.store(order_ptr + row, seen)
    tl.atomic_xchg(count, seen + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@given(rows=st.integers(1, 40), groups=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_spin_lock_serialises_each_groups_updates(arrays, rows, groups, seed):
    x = np.random.default_rng(seed).integers(-1000, 1000, (rows, 16)).astype(np.int32)
    lock, count = arrays.put(np.zeros(groups, np.int32)), arrays.put(np.zeros(groups, np.int32))
    total, order = arrays.put(poison((groups, 16), np.int32)), arrays.put(poison(rows, np.int32))
    locked_accumulate[(rows,)](lock, count, total, order, arrays.put(x), GROUPS=groups, BLOCK=16)
    used = min(rows, groups)
    want = np.stack([x[g::groups].sum(axis=0) for g in range(used)])
    np.testing.assert_array_equal(arrays.get(total)[:used], want)
    np.testing.assert_array_equal(arrays.get(lock), np.zeros(groups, np.int32))
    np.testing.assert_array_equal(arrays.get(count), [len(range(g, rows, groups)) for g in range(groups)])
    got_order = arrays.get(order)
    for g in range(used):  # each group's programs took its lock once each: ranks 0..k-1
        assert sorted(got_order[g::groups].tolist()) == list(range(len(range(g, rows, groups))))


@tile.jit
def wait_for_next_program(flags_ptr, out_ptr):
    """Program p waits until program p + 1 has finished: the last program must run first."""
    pid = tl.program_id(0)
    if pid + 1 < tl.num_programs(0):
        while tl.atomic_add(flags_ptr + pid + 1, 0) == 0:
            pass
        after = tl.load(out_ptr + pid + 1)
    else:
        after = 0
    tl.store(out_ptr + pid, after + pid)
    tl.atomic_xchg(flags_ptr + pid, 1)


def test_program_waiting_for_a_later_program_finishes(arrays):
    n = 12
    flags, out = arrays.put(np.zeros(n, np.int32)), arrays.put(poison(n, np.int32))
    wait_for_next_program[(n,)](flags, out)
    np.testing.assert_array_equal(arrays.get(out), np.cumsum(np.arange(n)[::-1])[::-1])
    np.testing.assert_array_equal(arrays.get(flags), np.ones(n, np.int32))


@tile.jit
def wait_on_volatile_flag(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        while tl.load(flag_ptr, volatile=True) == 0:
            pass
        tl.store(out_ptr, tl.load(out_ptr + 1) * 2)
    else:
        tl.store(out_ptr + 1, 21)
        tl.atomic_xchg(flag_ptr, 1)


def test_volatile_load_spin_waits_for_the_writer(arrays):
    flag, out = arrays.put(np.zeros(1, np.int32)), arrays.put(poison(2, np.int32))
    wait_on_volatile_flag[(2,)](flag, out)
    np.testing.assert_array_equal(arrays.get(out), [42, 21])


@tile.jit
def bounded_retry(lock_ptr, tries_ptr, LIMIT: tl.constexpr):
    """Spins on a lock nobody releases, but gives up after LIMIT tries (a retry counter)."""
    tries = 0
    while (tl.atomic_cas(lock_ptr, 0, 1) == 1) & (tries < LIMIT):
        tries += 1
    tl.store(tries_ptr + tl.program_id(0), tries)


def test_spin_with_a_retry_limit_ends_on_its_own(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    tries = poison(3, np.int32)
    bounded_retry[(3,)](np.zeros(1, np.int32), tries, LIMIT=20)
    np.testing.assert_array_equal(tries, [0, 20, 20])


# ------------------------------------------------------------------------------- deadlocks


@tile.jit
def never_released(lock_ptr, out_ptr):
    tl.store(out_ptr + tl.program_id(0), 1)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:  # nobody releases the lock
        pass


def test_deadlock_ends_with_an_error_naming_the_loop(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    line = never_released.fn.__code__.co_firstlineno + 3
    before = threading.active_count()
    start = time.perf_counter()
    with pytest.raises(interpreter.InterpreterError) as info:
        never_released[(4,)](np.zeros(1, np.int32), np.zeros(4, np.int32))
    assert time.perf_counter() - start < 10
    message = str(info.value)
    assert f"test_interpreter_scheduling.py:{line}" in message
    assert "deadlock: 3 program(s) (linear ids 1, 2, 3) still wait in this loop" in message
    assert f"after {schedule.IDLE_ROUND_LIMIT} rounds" in message
    assert threading.active_count() == before  # the waiting programs' threads are gone


@tile.jit
def waits_then_fails(flag_ptr, x_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        while tl.atomic_add(flag_ptr, 0) == 0:
            pass
    else:
        tl.atomic_xchg(flag_ptr, 1)
        tl.store(x_ptr + 1000000, 1)  # out of bounds


def test_error_in_one_program_ends_the_launch_while_others_wait(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    before = threading.active_count()
    with pytest.raises(interpreter.InterpreterError, match=r"out-of-bounds access .* in program \(1, 0, 0\)"):
        waits_then_fails[(2,)](np.zeros(1, np.int32), np.zeros(4, np.int32))
    assert threading.active_count() == before


# -------------------------------------------------------------------- batched stays batched


@tile.jit
def ordinary_atomics(counter_ptr, out_ptr, n):
    """An atomic feeds a while loop's bound, computed before the loop: nothing waits."""
    pid = tl.program_id(0)
    ticket = tl.atomic_add(counter_ptr, 1)
    i = 0
    while i < n:
        i += 1
    tl.store(out_ptr + pid, ticket + i)


def test_kernels_without_waiting_loops_run_as_one_batch(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")

    def refuse(*args, **kwargs):
        raise AssertionError("ran cooperatively")

    monkeypatch.setattr(interpreter, "Scheduler", refuse)
    counter, out = np.zeros(1, np.int32), poison(64, np.int32)
    ordinary_atomics[(64,)](counter, out, 5)
    np.testing.assert_array_equal(np.sort(out), np.arange(64) + 5)
    assert counter[0] == 64
