"""cse, dce, licm and combine: IR text in, IR text out."""
from __future__ import annotations

import textwrap

from tile.ir import parse_op, print_op, verify
from tile.opt.combine import Combine
from tile.opt.cse import CSE
from tile.opt.dce import DCE
from tile.opt.licm import LICM
from tile.opt.pass_manager import Pass


def func(body: str, args: str = "") -> str:
    names = ", ".join(f'"{a.split(":")[0].strip()[1:]}"' for a in args.split(", ")) if args else ""
    inner = "\n".join("  " + line for line in textwrap.dedent(body).strip("\n").splitlines())
    label = f"^bb({args}):\n" if args else ""
    return f'tt.func {{arg_names = [{names}], sym_name = "k"}} {{\n{label}{inner}\n}}'


def check(p: Pass, before: str, after: str, args: str = "") -> None:
    op = parse_op(func(before, args))
    verify(op)
    p.run(op)
    verify(op)
    assert print_op(op) == func(after, args)


def unchanged(p: Pass, body: str, args: str = "") -> None:
    check(p, body, body, args)


LOOP_ARGS = "%x: i32, %y: i32, %lb: i32, %ub: i32, %st: i32, %p: ptr<i32>"

# ----------------------------------------------------------------------------------- cse


def test_cse_docstring_example() -> None:
    check(CSE(), """
        %a = arith.add %x, %y : i32
        %r = scf.for %lb, %ub, %st, %a : i32 {
        ^bb(%i: i32, %acc: i32):
          %b = arith.add %y, %x : i32
          %c = arith.mul %b, %acc : i32
          scf.yield %c
        }
        %d = arith.mul %r, %r : i32
        %e = arith.mul %r, %r : i32
        tt.print %d, %e
        tt.return
        """, """
        %a = arith.add %x, %y : i32
        %r = scf.for %lb, %ub, %st, %a : i32 {
        ^bb(%i: i32, %acc: i32):
          %c = arith.mul %a, %acc : i32
          scf.yield %c
        }
        %d = arith.mul %r, %r : i32
        tt.print %d, %d
        tt.return
        """, LOOP_ARGS)


def test_cse_never_merges_loads_or_atomics() -> None:
    unchanged(CSE(), """
        %a = tt.load %p : i32
        %b = tt.load %p : i32
        %c = tt.atomic_rmw %p, %x {kind = "add", scope = "gpu", sem = "relaxed"} : i32
        %d = tt.atomic_rmw %p, %x {kind = "add", scope = "gpu", sem = "relaxed"} : i32
        tt.print %a, %b, %c, %d
        tt.return
        """, LOOP_ARGS)


def test_cse_inner_values_do_not_escape_their_region() -> None:
    unchanged(CSE(), """
        scf.if %c {
          %a = arith.mul %x, %y : i32
          tt.print %a
          scf.yield
        } {
          %b = arith.mul %x, %y : i32
          tt.print %b
          scf.yield
        }
        %d = arith.mul %x, %y : i32
        tt.print %d
        tt.return
        """, "%x: i32, %y: i32, %c: i1")


def test_cse_compares_attributes_and_types() -> None:
    check(CSE(), """
        %n1 = arith.constant {value = nan} : f32
        %n2 = arith.constant {value = nan} : f32
        %z1 = arith.constant {value = 0.0} : f32
        %z2 = arith.constant {value = -0.0} : f32
        %i1 = arith.constant {value = 1} : i32
        %i2 = arith.constant {value = 1} : i64
        %i3 = arith.constant {value = 1} : i32
        %lt = arith.cmp %x, %y {predicate = "lt"} : i1
        %gt = arith.cmp %x, %y {predicate = "gt"} : i1
        %gt2 = arith.cmp %x, %y {predicate = "gt"} : i1
        %s = arith.sub %x, %y : i32
        %s2 = arith.sub %y, %x : i32
        tt.print %n1, %n2, %z1, %z2, %i1, %i2, %i3, %lt, %gt, %gt2, %s, %s2
        tt.return
        """, """
        %n1 = arith.constant {value = nan} : f32
        %z1 = arith.constant {value = 0.0} : f32
        %z2 = arith.constant {value = -0.0} : f32
        %i1 = arith.constant {value = 1} : i32
        %i2 = arith.constant {value = 1} : i64
        %lt = arith.cmp %x, %y {predicate = "lt"} : i1
        %gt = arith.cmp %x, %y {predicate = "gt"} : i1
        %s = arith.sub %x, %y : i32
        %s2 = arith.sub %y, %x : i32
        tt.print %n1, %n1, %z1, %z2, %i1, %i2, %i1, %lt, %gt, %gt, %s, %s2
        tt.return
        """, "%x: i32, %y: i32")


def test_cse_chains_and_nested_loops() -> None:
    check(CSE(), """
        %a = tt.splat %x : tensor<4xi32>
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %acc: i32):
          %k = scf.for %lb, %ub, %st, %acc : i32 {
          ^bb(%j: i32, %b: i32):
            %s = tt.splat %x : tensor<4xi32>
            %t = tt.splat %i : tensor<4xi32>
            %u = tt.splat %i : tensor<4xi32>
            %v = arith.add %s, %t : tensor<4xi32>
            %w = arith.add %a, %u : tensor<4xi32>
            tt.print %v, %w
            scf.yield %b
          }
          scf.yield %k
        }
        tt.print %r
        tt.return
        """, """
        %a = tt.splat %x : tensor<4xi32>
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %acc: i32):
          %k = scf.for %lb, %ub, %st, %acc : i32 {
          ^bb(%j: i32, %b: i32):
            %t = tt.splat %i : tensor<4xi32>
            %v = arith.add %a, %t : tensor<4xi32>
            tt.print %v, %v
            scf.yield %b
          }
          scf.yield %k
        }
        tt.print %r
        tt.return
        """, LOOP_ARGS)


# ----------------------------------------------------------------------------------- dce


def test_dce_docstring_example() -> None:
    check(DCE(), """
        %one = arith.constant {value = 1} : i32
        %unused = arith.mul %x, %x : i32
        %r, %dead = scf.for %lb, %ub, %st, %x, %y : i32, i32 {
        ^bb(%i: i32, %acc: i32, %cnt: i32):
          %acc1 = arith.add %acc, %i : i32
          %cnt1 = arith.add %cnt, %one : i32
          scf.yield %acc1, %cnt1
        }
        tt.store %p, %r
        tt.return
        """, """
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %acc: i32):
          %acc1 = arith.add %acc, %i : i32
          scf.yield %acc1
        }
        tt.store %p, %r
        tt.return
        """, LOOP_ARGS)


def test_dce_keeps_side_effects() -> None:
    """Loops with stores, unused loads, and carried values that feed a store stay."""
    unchanged(DCE(), """
        %v = tt.load %p : i32
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %acc: i32):
          tt.store %p, %acc
          scf.yield %acc
        }
        %k, %q = scf.for %lb, %ub, %st, %x, %y : i32, i32 {
        ^bb(%j: i32, %a: i32, %b: i32):
          %b1 = arith.add %b, %a : i32
          scf.if %c {
            tt.print %b1
            scf.yield
          } {
            scf.yield
          }
          scf.yield %a, %b1
        }
        tt.print %k
        tt.return
        """, LOOP_ARGS + ", %c: i1")


def test_dce_removes_pure_control_flow() -> None:
    check(DCE(), """
        %one = arith.constant {value = 1} : i32
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %acc: i32):
          %k = scf.for %lb, %ub, %st, %acc : i32 {
          ^bb(%j: i32, %b: i32):
            %b1 = arith.mul %b, %j : i32
            scf.yield %b1
          }
          scf.yield %k
        }
        %q = scf.if %c : i32 {
          %t = arith.add %x, %one : i32
          scf.yield %t
        } {
          scf.yield %y
        }
        %w = scf.while %x : i32 {
        ^bb(%a: i32):
          %go = arith.cmp %a, %ub {predicate = "lt"} : i1
          scf.condition %go, %a
        } {
        ^bb(%a2: i32):
          %a3 = arith.add %a2, %one : i32
          scf.yield %a3
        }
        tt.return
        """, """
        tt.return
        """, LOOP_ARGS + ", %c: i1")


def test_dce_prunes_if_results() -> None:
    check(DCE(), """
        %q, %q2, %q3 = scf.if %c : i32, i32, f32 {
          %t = arith.mul %x, %x : i32
          scf.yield %t, %x, %f
        } {
          tt.print %y
          scf.yield %y, %y, %f
        }
        tt.print %q2
        tt.return
        """, """
        %q2 = scf.if %c : i32 {
          scf.yield %x
        } {
          tt.print %y
          scf.yield %y
        }
        tt.print %q2
        tt.return
        """, "%x: i32, %y: i32, %f: f32, %c: i1")


def test_dce_keeps_carried_values_used_by_others() -> None:
    """%b is unused after the loop but feeds %a, which is used: both stay. %d only feeds itself."""
    check(DCE(), """
        %ra, %rb, %rd = scf.for %lb, %ub, %st, %x, %y, %y : i32, i32, i32 {
        ^bb(%i: i32, %a: i32, %b: i32, %d: i32):
          %a1 = arith.add %a, %b : i32
          %b1 = arith.mul %b, %i : i32
          %cond = arith.cmp %d, %i {predicate = "lt"} : i1
          %d1 = scf.if %cond : i32 {
            %d2 = arith.add %d, %i : i32
            scf.yield %d2
          } {
            scf.yield %d
          }
          scf.yield %a1, %b1, %d1
        }
        tt.print %ra
        tt.return
        """, """
        %ra, %rb = scf.for %lb, %ub, %st, %x, %y : i32, i32 {
        ^bb(%i: i32, %a: i32, %b: i32):
          %a1 = arith.add %a, %b : i32
          %b1 = arith.mul %b, %i : i32
          scf.yield %a1, %b1
        }
        tt.print %ra
        tt.return
        """, LOOP_ARGS)


def test_dce_drops_a_carried_value_whose_next_value_is_shared() -> None:
    """Result 1 is unused and %b feeds nothing: it goes, though %n is also yielded as value 0."""
    check(DCE(), """
        %r, %s = scf.for %lb, %ub, %st, %x, %y : i32, i32 {
        ^bb(%i: i32, %a: i32, %b: i32):
          %n = arith.add %a, %i : i32
          scf.yield %n, %n
        }
        tt.print %r
        tt.return
        """, """
        %r = scf.for %lb, %ub, %st, %x : i32 {
        ^bb(%i: i32, %a: i32):
          %n = arith.add %a, %i : i32
          scf.yield %n
        }
        tt.print %r
        tt.return
        """, LOOP_ARGS)


# ---------------------------------------------------------------------------------- licm

LICM_ARGS = "%lb: i32, %ub: i32, %st: i32, %acc0: tensor<64xf32>, %scale: f32, %ptrs: tensor<64xptr<f32>>"


def test_licm_docstring_example() -> None:
    check(LICM(), """
        %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
        ^bb(%i: i32, %acc: tensor<64xf32>):
          %s = tt.splat %scale : tensor<64xf32>
          %m = arith.mul %s, %s : tensor<64xf32>
          %v = tt.load %ptrs : tensor<64xf32>
          %w = arith.mul %v, %m : tensor<64xf32>
          %a = arith.add %acc, %w : tensor<64xf32>
          scf.yield %a
        }
        tt.store %ptrs, %r
        tt.return
        """, """
        %s = tt.splat %scale : tensor<64xf32>
        %m = arith.mul %s, %s : tensor<64xf32>
        %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
        ^bb(%i: i32, %acc: tensor<64xf32>):
          %v = tt.load %ptrs : tensor<64xf32>
          %w = arith.mul %v, %m : tensor<64xf32>
          %a = arith.add %acc, %w : tensor<64xf32>
          scf.yield %a
        }
        tt.store %ptrs, %r
        tt.return
        """, LICM_ARGS)


def test_licm_does_not_hoist_loads_or_their_users() -> None:
    unchanged(LICM(), """
        %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
        ^bb(%i: i32, %acc: tensor<64xf32>):
          %v = tt.load %ptrs : tensor<64xf32>
          %w = arith.add %v, %v : tensor<64xf32>
          %iv = tt.splat %i : tensor<64xi32>
          %ivf = arith.cast %iv : tensor<64xf32>
          %a = arith.add %acc, %w : tensor<64xf32>
          %b = arith.add %a, %ivf : tensor<64xf32>
          scf.yield %b
        }
        tt.store %ptrs, %r
        tt.return
        """, LICM_ARGS)


def test_licm_nested_loops_and_while() -> None:
    check(LICM(), """
        %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
        ^bb(%i: i32, %acc: tensor<64xf32>):
          %k = scf.for %lb, %ub, %st, %acc : tensor<64xf32> {
          ^bb(%j: i32, %b: tensor<64xf32>):
            %c = arith.constant {value = 2.0} : f32
            %s = arith.mul %scale, %c : f32
            %ii = arith.add %i, %lb : i32
            %jj = arith.add %j, %ii : i32
            %t = tt.splat %s : tensor<64xf32>
            %b1 = arith.add %b, %t : tensor<64xf32>
            tt.print %jj
            scf.yield %b1
          }
          scf.yield %k
        }
        %w = scf.while %lb : i32 {
        ^bb(%x: i32):
          %lim = arith.mul %ub, %st : i32
          %go = arith.cmp %x, %lim {predicate = "lt"} : i1
          scf.condition %go, %x
        } {
        ^bb(%y: i32):
          %one = arith.constant {value = 1} : i32
          %y1 = arith.add %y, %one : i32
          scf.yield %y1
        }
        tt.print %r, %w
        tt.return
        """, """
        %c = arith.constant {value = 2.0} : f32
        %s = arith.mul %scale, %c : f32
        %t = tt.splat %s : tensor<64xf32>
        %r = scf.for %lb, %ub, %st, %acc0 : tensor<64xf32> {
        ^bb(%i: i32, %acc: tensor<64xf32>):
          %ii = arith.add %i, %lb : i32
          %k = scf.for %lb, %ub, %st, %acc : tensor<64xf32> {
          ^bb(%j: i32, %b: tensor<64xf32>):
            %jj = arith.add %j, %ii : i32
            %b1 = arith.add %b, %t : tensor<64xf32>
            tt.print %jj
            scf.yield %b1
          }
          scf.yield %k
        }
        %lim = arith.mul %ub, %st : i32
        %one = arith.constant {value = 1} : i32
        %w = scf.while %lb : i32 {
        ^bb(%x: i32):
          %go = arith.cmp %x, %lim {predicate = "lt"} : i1
          scf.condition %go, %x
        } {
        ^bb(%y: i32):
          %y1 = arith.add %y, %one : i32
          scf.yield %y1
        }
        tt.print %r, %w
        tt.return
        """, LICM_ARGS)


def test_licm_hoists_pure_reduce_but_not_structured_ops_with_effects() -> None:
    check(LICM(), """
        %r = scf.for %lb, %ub, %st, %scale : f32 {
        ^bb(%i: i32, %acc: f32):
          %sum = tt.reduce %acc0 {axis = 0} : f32 {
          ^bb(%l: f32, %m: f32):
            %lm = arith.add %l, %m : f32
            tt.reduce.return %lm
          }
          %q = scf.if %c : f32 {
            scf.yield %sum
          } {
            scf.yield %scale
          }
          %a = arith.add %acc, %q : f32
          scf.yield %a
        }
        tt.print %r
        tt.return
        """, """
        %sum = tt.reduce %acc0 {axis = 0} : f32 {
        ^bb(%l: f32, %m: f32):
          %lm = arith.add %l, %m : f32
          tt.reduce.return %lm
        }
        %r = scf.for %lb, %ub, %st, %scale : f32 {
        ^bb(%i: i32, %acc: f32):
          %q = scf.if %c : f32 {
            scf.yield %sum
          } {
            scf.yield %scale
          }
          %a = arith.add %acc, %q : f32
          scf.yield %a
        }
        tt.print %r
        tt.return
        """, LICM_ARGS + ", %c: i1")


# ------------------------------------------------------------------------------- combine

COMBINE_ARGS = ("%a: tensor<16x8xf16>, %b: tensor<8x16xf16>, %acc: tensor<16x16xf32>, %ptrs: tensor<16xptr<f32>>, "
                "%mask: tensor<16xi1>, %other: tensor<16xf32>, %row: tensor<1x1xf32>, %i: i32, %n: i32")


def test_combine_docstring_example() -> None:
    check(Combine(), """
        %zero = arith.constant {value = 0.0} : tensor<16x16xf32>
        %d = tt.dot %a, %b, %zero : tensor<16x16xf32>
        %acc1 = arith.add %acc, %d : tensor<16x16xf32>
        %x = tt.load %ptrs, %mask : tensor<16xf32>
        %y = arith.select %mask, %x, %other : tensor<16xf32>
        %e = tt.broadcast %row : tensor<4x1xf32>
        %f = tt.broadcast %e : tensor<4x8xf32>
        %q = arith.div %i, %n : i32
        %r = arith.rem %i, %n : i32
        tt.print %acc1, %y, %f, %q, %r
        tt.return
        """, """
        %zero = arith.constant {value = 0.0} : tensor<16x16xf32>
        %acc1 = tt.dot %a, %b, %acc : tensor<16x16xf32>
        %y = tt.load %ptrs, %mask, %other : tensor<16xf32>
        %f = tt.broadcast %row : tensor<4x8xf32>
        %q = arith.div %i, %n : i32
        %0 = arith.mul %q, %n : i32
        %r = arith.sub %i, %0 : i32
        tt.print %acc1, %y, %f, %q, %r
        tt.return
        """, COMBINE_ARGS)


def test_combine_rem_takes_a_later_division_and_leaves_constant_divisors() -> None:
    check(Combine(), """
        %c8 = arith.constant {value = 8} : i32
        %r = arith.rem %i, %n : i32
        %q = arith.div %i, %n : i32
        %s = arith.rem %i, %c8 : i32
        %t = arith.div %i, %c8 : i32
        %x = arith.rem %a1, %a2 : f32
        %y = arith.div %a1, %a2 : f32
        tt.print %r, %q, %s, %t, %x, %y
        tt.return
        """, """
        %c8 = arith.constant {value = 8} : i32
        %q = arith.div %i, %n : i32
        %0 = arith.mul %q, %n : i32
        %r = arith.sub %i, %0 : i32
        %s = arith.rem %i, %c8 : i32
        %t = arith.div %i, %c8 : i32
        %x = arith.rem %a1, %a2 : f32
        %y = arith.div %a1, %a2 : f32
        tt.print %r, %q, %s, %t, %x, %y
        tt.return
        """, "%i: i32, %n: i32, %a1: f32, %a2: f32")


def test_combine_dot_in_a_loop() -> None:
    check(Combine(), """
        %zero = arith.constant {value = 0} : tensor<16x16xi32>
        %r = scf.for %lb, %ub, %st, %zero : tensor<16x16xi32> {
        ^bb(%i: i32, %c: tensor<16x16xi32>):
          %d = tt.dot %a, %b, %zero {input_precision = "ieee"} : tensor<16x16xi32>
          %c1 = arith.add %d, %c : tensor<16x16xi32>
          scf.yield %c1
        }
        tt.print %r
        tt.return
        """, """
        %zero = arith.constant {value = 0} : tensor<16x16xi32>
        %r = scf.for %lb, %ub, %st, %zero : tensor<16x16xi32> {
        ^bb(%i: i32, %c: tensor<16x16xi32>):
          %c1 = tt.dot %a, %b, %c {input_precision = "ieee"} : tensor<16x16xi32>
          scf.yield %c1
        }
        tt.print %r
        tt.return
        """, "%a: tensor<16x8xi8>, %b: tensor<8x16xi8>, %lb: i32, %ub: i32, %st: i32")


def test_combine_leaves_dots_it_cannot_fuse() -> None:
    """A non-zero accumulator, a dot with two uses, a dot outside the loop of its add."""
    unchanged(Combine(), """
        %zero = arith.constant {value = 0.0} : tensor<16x16xf32>
        %d1 = tt.dot %a, %b, %acc : tensor<16x16xf32>
        %s1 = arith.add %d1, %acc : tensor<16x16xf32>
        %d2 = tt.dot %a, %b, %zero : tensor<16x16xf32>
        %s2 = arith.add %d2, %acc : tensor<16x16xf32>
        %d3 = tt.dot %a, %b, %zero : tensor<16x16xf32>
        %r = scf.for %lb, %ub, %st, %acc : tensor<16x16xf32> {
        ^bb(%i: i32, %c: tensor<16x16xf32>):
          %c1 = arith.add %c, %d3 : tensor<16x16xf32>
          scf.yield %c1
        }
        tt.print %s1, %s2, %d2, %r
        tt.return
        """, "%a: tensor<16x8xf16>, %b: tensor<8x16xf16>, %acc: tensor<16x16xf32>, %lb: i32, %ub: i32, %st: i32")


def test_combine_select_of_masked_load() -> None:
    """`other` defined after the load: a plain load moves down unless a store is in between.

    Left alone: a store in between, a different mask, no mask, a second use, a volatile load.
    """
    check(Combine(), """
        %x = tt.load %ptrs, %mask : tensor<16xf32>
        %o = arith.constant {value = 1.0} : tensor<16xf32>
        %y = arith.select %mask, %x, %o : tensor<16xf32>
        %x2 = tt.load %ptrs, %mask : tensor<16xf32>
        tt.store %ptrs, %other
        %o2 = arith.constant {value = 2.0} : tensor<16xf32>
        %y2 = arith.select %mask, %x2, %o2 : tensor<16xf32>
        %x3 = tt.load %ptrs, %mask2 : tensor<16xf32>
        %y3 = arith.select %mask, %x3, %other : tensor<16xf32>
        %x4 = tt.load %ptrs : tensor<16xf32>
        %y4 = arith.select %mask, %x4, %other : tensor<16xf32>
        %x5 = tt.load %ptrs, %mask : tensor<16xf32>
        %y5 = arith.select %mask, %x5, %other : tensor<16xf32>
        %x6 = tt.load %ptrs, %mask {volatile = true} : tensor<16xf32>
        %o6 = arith.constant {value = 6.0} : tensor<16xf32>
        %y6 = arith.select %mask, %x6, %o6 : tensor<16xf32>
        tt.print %y, %y2, %y3, %y4, %y5, %x5, %y6
        tt.return
        """, """
        %o = arith.constant {value = 1.0} : tensor<16xf32>
        %y = tt.load %ptrs, %mask, %o : tensor<16xf32>
        %x2 = tt.load %ptrs, %mask : tensor<16xf32>
        tt.store %ptrs, %other
        %o2 = arith.constant {value = 2.0} : tensor<16xf32>
        %y2 = arith.select %mask, %x2, %o2 : tensor<16xf32>
        %x3 = tt.load %ptrs, %mask2 : tensor<16xf32>
        %y3 = arith.select %mask, %x3, %other : tensor<16xf32>
        %x4 = tt.load %ptrs : tensor<16xf32>
        %y4 = arith.select %mask, %x4, %other : tensor<16xf32>
        %x5 = tt.load %ptrs, %mask : tensor<16xf32>
        %y5 = arith.select %mask, %x5, %other : tensor<16xf32>
        %x6 = tt.load %ptrs, %mask {volatile = true} : tensor<16xf32>
        %o6 = arith.constant {value = 6.0} : tensor<16xf32>
        %y6 = arith.select %mask, %x6, %o6 : tensor<16xf32>
        tt.print %y, %y2, %y3, %y4, %y5, %x5, %y6
        tt.return
        """, "%ptrs: tensor<16xptr<f32>>, %mask: tensor<16xi1>, %mask2: tensor<16xi1>, %other: tensor<16xf32>")


def test_combine_replaces_the_other_of_a_masked_load() -> None:
    check(Combine(), """
        %x = tt.load %ptrs, %mask, %other {cache = ".ca"} : tensor<16xf32>
        %y = arith.select %mask, %x, %zero : tensor<16xf32>
        tt.print %y
        tt.return
        """, """
        %y = tt.load %ptrs, %mask, %zero {cache = ".ca"} : tensor<16xf32>
        tt.print %y
        tt.return
        """, "%ptrs: tensor<16xptr<f32>>, %mask: tensor<16xi1>, %other: tensor<16xf32>, %zero: tensor<16xf32>")
