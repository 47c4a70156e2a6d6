"""The interpreter on control flow, debug ops and launch shapes."""
from __future__ import annotations


import numpy as np
import pytest

import tile.runtime.interpreter as interp
from tile.runtime.interpreter import InterpreterError
from interp_util import (
    elementwise, kernel, load, offsets, poisoned, run,
)


# ------------------------------------------------------------------------- control flow


def test_loop_with_program_dependent_trip_count_and_stores_inside():
    """Program p runs p + 1 iterations; it reads x[p - i], out of bounds past its own trip count."""
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %zero = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %eight = arith.constant {value = 8} : i32
  %ten = arith.constant {value = 10} : i32
  %ub = arith.add %pid, %one : i32
  %base = arith.mul %pid, %eight : i32
  %acc = scf.for %zero, %ub, %one, %zero : i32 {
  ^bb(%i: i32, %a: i32):
    %back = arith.sub %pid, %i : i32
    %xp = tt.addptr %x_ptr, %back : ptr<i32>
    %x = tt.load %xp : i32
    %na = arith.add %a, %x : i32
    %v0 = arith.mul %i, %ten : i32
    %v = arith.add %v0, %pid : i32
    %off = arith.add %base, %i : i32
    %p = tt.addptr %out_ptr, %off : ptr<i32>
    tt.store %p, %v
    scf.yield %na
  }
  %sp = tt.addptr %sums_ptr, %pid : ptr<i32>
  tt.store %sp, %acc"""
    func = kernel([("x_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>"), ("sums_ptr", "ptr<i32>")], body)
    x = np.array([3, 1, 4, 1, 5, 9], np.int32)
    out, sums = poisoned((6, 8), "i32"), poisoned(6, "i32")
    want = out.copy()
    run(func, (6,), x, out, sums)
    for p in range(6):
        want[p, : p + 1] = np.arange(p + 1) * 10 + p
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(sums, np.cumsum(x))


def test_uniform_loop_with_step_and_zero_trips():
    body = """
  %zero = arith.constant {value = 0} : i64
  %three = arith.constant {value = 3} : i64
  %init = arith.constant {value = 1.0} : f32
  %r = scf.for %zero, %n, %three, %init : f32 {
  ^bb(%i: i64, %a: f32):
    %fi = arith.cast %i : f32
    %na = arith.add %a, %fi : f32
    scf.yield %na
  }
  tt.store %out_ptr, %r"""
    func = kernel([("out_ptr", "ptr<f32>"), ("n", "i64")], body)
    for n in (0, 1, 10):
        out = poisoned(1, "f32")
        run(func, (3,), out, n)
        assert out[0] == 1 + sum(range(0, n, 3))


def test_zero_step_is_an_error():
    body = """
  %zero = arith.constant {value = 0} : i32
  %r = scf.for %zero, %n, %zero, %zero : i32 {
  ^bb(%i: i32, %a: i32):
    scf.yield %a
  }
  tt.store %out_ptr, %r"""
    func = kernel([("out_ptr", "ptr<i32>"), ("n", "i32")], body)
    with pytest.raises(InterpreterError, match="step 0"):
        run(func, (2,), poisoned(1, "i32"), 4)


def test_if_with_program_dependent_condition_stores_in_both_branches():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %two = arith.constant {value = 2} : i32
  %r = arith.rem %pid, %two : i32
  %zero = arith.constant {value = 0} : i32
  %even = arith.cmp %r, %zero {predicate = "eq"} : i1
  %p = tt.addptr %a_ptr, %pid : ptr<i32>
  %q = tt.addptr %b_ptr, %pid : ptr<i32>
  %v = scf.if %even : i32 {
    %x = arith.mul %pid, %two : i32
    tt.store %p, %x
    scf.yield %x
  } {
    %y = arith.sub %zero, %pid : i32
    tt.store %q, %y
    scf.yield %y
  }
  %o = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %o, %v"""
    func = kernel([("a_ptr", "ptr<i32>"), ("b_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    a, b, out = poisoned(7, "i32"), poisoned(7, "i32"), poisoned(7, "i32")
    wa, wb = a.copy(), b.copy()
    run(func, (7,), a, b, out)
    p = np.arange(7)
    wa[p % 2 == 0] = 2 * p[p % 2 == 0]
    wb[p % 2 == 1] = -p[p % 2 == 1]
    np.testing.assert_array_equal(a, wa)
    np.testing.assert_array_equal(b, wb)
    np.testing.assert_array_equal(out, np.where(p % 2 == 0, 2 * p, -p))


def test_while_loop_runs_until_every_program_is_done():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %two = arith.constant {value = 2} : i32
  %three = arith.constant {value = 3} : i32
  %zero = arith.constant {value = 0} : i32
  %n0 = arith.add %pid, %one : i32
  %steps, %last = scf.while %zero, %n0 : i32, i32 {
  ^bb(%s: i32, %n: i32):
    %go = arith.cmp %n, %one {predicate = "ne"} : i1
    scf.condition %go, %s, %n
  } {
  ^bb(%s2: i32, %n2: i32):
    %r = arith.rem %n2, %two : i32
    %odd = arith.cmp %r, %one {predicate = "eq"} : i1
    %nn = scf.if %odd : i32 {
      %t = arith.mul %n2, %three : i32
      %u = arith.add %t, %one : i32
      scf.yield %u
    } {
      %h = arith.div %n2, %two : i32
      scf.yield %h
    }
    %s3 = arith.add %s2, %one : i32
    scf.yield %s3, %nn
  }
  %o = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %o, %steps"""
    func = kernel([("out_ptr", "ptr<i32>")], body)

    def collatz(n: int) -> int:
        steps = 0
        while n != 1:
            n, steps = (3 * n + 1 if n % 2 else n // 2), steps + 1
        return steps

    out = poisoned(30, "i32")
    run(func, (30,), out)
    np.testing.assert_array_equal(out, [collatz(p + 1) for p in range(30)])


def test_nested_non_uniform_loop_and_if():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %zero = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %two = arith.constant {value = 2} : i32
  %four = arith.constant {value = 4} : i32
  %base = arith.mul %pid, %four : i32
  scf.for %zero, %pid, %one {
  ^bb(%i: i32):
    %r = arith.rem %i, %two : i32
    %odd = arith.cmp %r, %one {predicate = "eq"} : i1
    scf.if %odd {
      %off = arith.add %base, %i : i32
      %p = tt.addptr %out_ptr, %off : ptr<i32>
      tt.store %p, %pid
      scf.yield
    } {
      scf.yield
    }
    scf.yield
  }"""
    func = kernel([("out_ptr", "ptr<i32>")], body)
    out = poisoned((5, 4), "i32")
    want = out.copy()
    run(func, (5,), out)
    for p in range(5):
        for i in range(1, p, 2):
            want[p, i] = p
    np.testing.assert_array_equal(out, want)


# -------------------------------------------------------------------------------- debug


def test_print_format(capsys):
    body = """
  %pid = tt.program_id {axis = 0} : i32
  tt.print %pid {hex = false, prefix = "pid: "}
  %ar = tt.arange {end = 2, start = 0} : tensor<2xi32>
  %f = arith.cast %ar : tensor<2xf32>
  %one = arith.constant {value = 1} : i32
  %c = arith.cmp %pid, %one {predicate = "eq"} : i1
  scf.if %c {
    tt.print %ar, %f {hex = false, prefix = "v"}
    tt.print %ar {hex = true, prefix = " h: "}
    scf.yield
  } {
    scf.yield
  }"""
    run(kernel([], body), (2,))
    assert capsys.readouterr().out.splitlines() == [
        "pid (0, 0, 0) idx () pid: 0",
        "pid (1, 0, 0) idx () pid: 1",
        "pid (1, 0, 0) idx (0) v (operand 0) 0",
        "pid (1, 0, 0) idx (1) v (operand 0) 1",
        "pid (1, 0, 0) idx (0) v (operand 1) 0.000000",
        "pid (1, 0, 0) idx (1) v (operand 1) 1.000000",
        "pid (1, 0, 0) idx (0) h: 0x00000000",
        "pid (1, 0, 0) idx (1) h: 0x00000001",
    ]


def test_assert_failure_names_message_and_program():
    body = offsets(64) + load("x", "i32", "64") + """
  %five = arith.constant {value = 5} : tensor<64xi32>
  %ok = arith.cmp %x, %five {predicate = "lt"} : tensor<64xi1>
  tt.assert %ok {file = "k.py", line = 9, message = "x must be small"} loc("k.py":9:4)"""
    func = kernel([("x_ptr", "ptr<i32>")], body, name="checked")
    x = np.ones(128, np.int32)
    run(func, (2,), x)
    x[70] = 7
    with pytest.raises(InterpreterError) as e:
        run(func, (2,), x)
    msg = str(e.value)
    for part in ("kernel 'checked'", "k.py:9", "x must be small", "program (1, 0, 0)", "index (6,)"):
        assert part in msg, msg


def test_integer_division_by_zero_does_not_crash():
    a = np.array([7, -7, 0, -(2**31)], np.int32)
    b = np.array([0, 0, 0, -1], np.int32)
    out = poisoned(4, "i32")
    run(elementwise("arith.div %a0, %a1", ("i32", "i32"), "i32", 4), (1,), a, b, out)
    np.testing.assert_array_equal(out, [-1, -1, -1, -(2**31)])


# ------------------------------------------------------------------------ launch shape


def test_three_dimensional_grid_in_small_chunks(monkeypatch):
    body = """
  %x = tt.program_id {axis = 0} : i32
  %y = tt.program_id {axis = 1} : i32
  %z = tt.program_id {axis = 2} : i32
  %nx = tt.num_programs {axis = 0} : i32
  %ny = tt.num_programs {axis = 1} : i32
  %yz = arith.mul %z, %ny : i32
  %row = arith.add %yz, %y : i32
  %lin0 = arith.mul %row, %nx : i32
  %lin = arith.add %lin0, %x : i32
  %c100 = arith.constant {value = 100} : i32
  %c10000 = arith.constant {value = 10000} : i32
  %vy = arith.mul %y, %c100 : i32
  %vz = arith.mul %z, %c10000 : i32
  %v0 = arith.add %x, %vy : i32
  %v = arith.add %v0, %vz : i32
  %p = tt.addptr %out_ptr, %lin : ptr<i32>
  tt.store %p, %v
  %one = arith.constant {value = 1} : i32
  %t = tt.atomic_rmw %cnt_ptr, %one {kind = "add", scope = "gpu", sem = "acq_rel"} : i32
  %q = tt.addptr %tickets_ptr, %lin : ptr<i32>
  tt.store %q, %t"""
    func = kernel([("out_ptr", "ptr<i32>"), ("cnt_ptr", "ptr<i32>"), ("tickets_ptr", "ptr<i32>")], body)
    monkeypatch.setattr(interp, "CHUNK_ELEMENTS", 7)
    out, cnt, tickets = poisoned((4, 3, 5), "i32"), np.zeros(1, np.int32), poisoned(60, "i32")
    run(func, (5, 3, 4), out, cnt, tickets)
    z, y, x = np.meshgrid(np.arange(4), np.arange(3), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(out, x + 100 * y + 10000 * z)
    np.testing.assert_array_equal(tickets, np.arange(60))


def test_compiled_once_per_func():
    func = elementwise("arith.add %a0, %a0", ("f32",), "f32", 8)
    assert interp.compile_kernel(func, "k") is interp.compile_kernel(func, "k")
    with pytest.raises(InterpreterError, match="expects 2 arguments"):
        run(func, (1,), np.ones(8, np.float32))
