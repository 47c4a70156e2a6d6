"""canonicalize: IR text in, IR text out."""
from __future__ import annotations

import textwrap

import pytest

from tile.ir import parse_op, print_op, verify
from tile.opt.canonicalize import Canonicalize


def func(body: str, args: str = "") -> str:
    names = ", ".join(f'"{a.split(":")[0].strip()[1:]}"' for a in args.split(", ")) if args else ""
    inner = "\n".join("  " + line for line in textwrap.dedent(body).strip("\n").splitlines())
    label = f"^bb({args}):\n" if args else ""
    return f'tt.func {{arg_names = [{names}], sym_name = "k"}} {{\n{label}{inner}\n}}'


def canonicalize(body: str, args: str = "") -> str:
    op = parse_op(func(body, args))
    verify(op)
    Canonicalize().run(op)
    verify(op)
    return print_op(op)


def check(before: str, after: str, args: str = "") -> None:
    assert canonicalize(before, args) == func(after, args)


def test_docstring_example() -> None:
    check("""
        %c2 = arith.constant {value = 2} : i32
        %c3 = arith.constant {value = 3} : i32
        %six = arith.mul %c2, %c3 : i32
        %zero = arith.constant {value = 0} : i32
        %a = arith.add %x, %zero : i32
        %b = arith.add %a, %six : i32
        %s = tt.splat %six : tensor<4xi32>
        %e = tt.expand_dims %s {axis = 0} : tensor<1x4xi32>
        tt.print %b, %e
        tt.return
        """, """
        %six = arith.constant {value = 6} : i32
        %b = arith.add %x, %six : i32
        %e = arith.constant {value = 6} : tensor<1x4xi32>
        tt.print %b, %e
        tt.return
        """, "%x: i32")


def test_integer_semantics() -> None:
    check("""
        %a = arith.constant {value = 200} : u8
        %b = arith.constant {value = 100} : u8
        %wrap = arith.add %a, %b : u8
        %m7 = arith.constant {value = -7} : i32
        %two = arith.constant {value = 2} : i32
        %q = arith.div %m7, %two : i32
        %r = arith.rem %m7, %two : i32
        %sh = arith.shr %m7, %two : i32
        %u = arith.cast %m7 : u32
        %u2 = arith.cast %two : u32
        %ush = arith.shr %u, %u2 : u32
        %lt = arith.cmp %m7, %two {predicate = "lt"} : i1
        %ult = arith.cmp %u, %u2 {predicate = "lt"} : i1
        %big = arith.constant {value = 9223372036854775807} : i64
        %one = arith.constant {value = 1} : i64
        %ovf = arith.add %big, %one : i64
        tt.print %wrap, %q, %r, %sh, %ush, %lt, %ult, %ovf
        tt.return
        """, """
        %wrap = arith.constant {value = 44} : u8
        %q = arith.constant {value = -3} : i32
        %r = arith.constant {value = -1} : i32
        %sh = arith.constant {value = -2} : i32
        %ush = arith.constant {value = 1073741822} : u32
        %lt = arith.constant {value = true} : i1
        %ult = arith.constant {value = false} : i1
        %ovf = arith.constant {value = -9223372036854775808} : i64
        tt.print %wrap, %q, %r, %sh, %ush, %lt, %ult, %ovf
        tt.return
        """)


def test_float_semantics() -> None:
    check("""
        %a = arith.constant {value = 0.1} : f32
        %b = arith.constant {value = 0.2} : f32
        %s = arith.add %a, %b : f32
        %h = arith.cast %s : f16
        %bf = arith.cast %s : bf16
        %nan = arith.constant {value = nan} : f32
        %ne = arith.cmp %nan, %nan {predicate = "ne"} : i1
        %eq = arith.cmp %nan, %nan {predicate = "eq"} : i1
        %mx = arith.max %nan, %a : f32
        %mxp = arith.max %nan, %a {propagate_nan = true} : f32
        %hmax = arith.constant {value = 65504.0} : f16
        %hinf = arith.add %hmax, %hmax : f16
        %n = math.floor %a : f32
        %nc = arith.neg %a : f32
        %c = math.ceil %nc : f32
        tt.print %s, %h, %bf, %ne, %eq, %mx, %mxp, %hinf, %n, %c
        tt.return
        """, """
        %s = arith.constant {value = 0.30000001192092896} : f32
        %h = arith.constant {value = 0.300048828125} : f16
        %bf = arith.constant {value = 0.30078125} : bf16
        %ne = arith.constant {value = true} : i1
        %eq = arith.constant {value = false} : i1
        %mx = arith.constant {value = 0.10000000149011612} : f32
        %mxp = arith.constant {value = nan} : f32
        %hinf = arith.constant {value = inf} : f16
        %n = arith.constant {value = 0.0} : f32
        %c = arith.constant {value = -0.0} : f32
        tt.print %s, %h, %bf, %ne, %eq, %mx, %mxp, %hinf, %n, %c
        tt.return
        """)


def test_must_not_fold() -> None:
    """Division by zero, MIN / -1, wide shifts, approximate math, fp8, out-of-range casts, max(+0, -0)."""
    body = """
        %seven = arith.constant {value = 7} : i32
        %zero = arith.constant {value = 0} : i32
        %d = arith.div %seven, %zero : i32
        %r = arith.rem %seven, %zero : i32
        %min = arith.constant {value = -2147483648} : i32
        %m1 = arith.constant {value = -1} : i32
        %o = arith.div %min, %m1 : i32
        %w = arith.constant {value = 32} : i32
        %sh = arith.shl %seven, %w : i32
        %f = arith.constant {value = 1.0} : f32
        %f0 = arith.constant {value = 0.0} : f32
        %fd = arith.div %f, %f0 : f32
        %e = math.exp %f : f32
        %sq = math.sqrt %f : f32
        %q = arith.constant {value = 1.0} : f8e4nv
        %qa = arith.add %q, %q : f8e4nv
        %big = arith.constant {value = 3000000000.0} : f32
        %bi = arith.cast %big : i32
        %nz = arith.constant {value = -0.0} : f32
        %mx = arith.max %f0, %nz : f32
        tt.print %d, %r, %o, %sh, %fd, %e, %sq, %qa, %bi, %mx
        tt.return
        """
    assert canonicalize(body) == func(body)


def test_out_of_range_constant_is_not_folded() -> None:
    body = """
        %a = arith.constant {value = 300} : i8
        %b = arith.add %a, %a : i8
        tt.print %b
        tt.return
        """
    assert canonicalize(body) == func(body)


def test_integer_identities() -> None:
    check("""
        %zero = arith.constant {value = 0} : i32
        %one = arith.constant {value = 1} : i32
        %ones = arith.constant {value = -1} : i32
        %a = arith.add %zero, %x : i32
        %b = arith.mul %a, %one : i32
        %c = arith.or %b, %zero : i32
        %d = arith.and %c, %ones : i32
        %e = arith.shl %d, %zero : i32
        %f = arith.div %e, %one : i32
        %g = arith.and %f, %f : i32
        %h = arith.max %g, %g : i32
        %i = arith.sub %h, %zero : i32
        %k = arith.xor %i, %zero : i32
        %z1 = arith.mul %x, %zero : i32
        %z2 = arith.sub %x, %x : i32
        %z3 = arith.xor %x, %x : i32
        %z4 = arith.rem %x, %one : i32
        %all = arith.or %x, %ones : i32
        %eq = arith.cmp %x, %x {predicate = "le"} : i1
        %ne = arith.cmp %x, %x {predicate = "gt"} : i1
        tt.print %k, %z1, %z2, %z3, %z4, %all, %eq, %ne
        tt.return
        """, """
        %ones = arith.constant {value = -1} : i32
        %z1 = arith.constant {value = 0} : i32
        %z2 = arith.constant {value = 0} : i32
        %z3 = arith.constant {value = 0} : i32
        %z4 = arith.constant {value = 0} : i32
        %eq = arith.constant {value = true} : i1
        %ne = arith.constant {value = false} : i1
        tt.print %x, %z1, %z2, %z3, %z4, %ones, %eq, %ne
        tt.return
        """, "%x: i32")


def test_float_identities() -> None:
    """x*1, x/1, x + -0.0, x - 0.0 fold; x*0, x + 0.0, x - x and x == x do not (NaN, -0.0, inf)."""
    check("""
        %one = arith.constant {value = 1.0} : f32
        %pz = arith.constant {value = 0.0} : f32
        %nz = arith.constant {value = -0.0} : f32
        %a = arith.mul %one, %x : f32
        %b = arith.div %a, %one : f32
        %c = arith.add %b, %nz : f32
        %d = arith.sub %c, %pz : f32
        %e = arith.min %d, %d : f32
        %keep1 = arith.mul %x, %pz : f32
        %keep2 = arith.add %x, %pz : f32
        %keep3 = arith.sub %x, %x : f32
        %keep4 = arith.sub %x, %nz : f32
        %keep5 = arith.cmp %x, %x {predicate = "eq"} : i1
        tt.print %e, %keep1, %keep2, %keep3, %keep4, %keep5
        tt.return
        """, """
        %pz = arith.constant {value = 0.0} : f32
        %nz = arith.constant {value = -0.0} : f32
        %keep1 = arith.mul %x, %pz : f32
        %keep2 = arith.add %x, %pz : f32
        %keep3 = arith.sub %x, %x : f32
        %keep4 = arith.sub %x, %nz : f32
        %keep5 = arith.cmp %x, %x {predicate = "eq"} : i1
        tt.print %x, %keep1, %keep2, %keep3, %keep4, %keep5
        tt.return
        """, "%x: f32")


def test_unary_and_select() -> None:
    check("""
        %n = arith.neg %x : f32
        %nn = arith.neg %n : f32
        %t = arith.constant {value = true} : i1
        %s1 = arith.select %t, %nn, %y : f32
        %s2 = arith.select %c, %y, %y : f32
        %f = arith.constant {value = false} : tensor<4xi1>
        %s3 = arith.select %f, %v, %w : tensor<4xi32>
        %m = arith.constant {value = -128} : i8
        %am = math.abs %m : i8
        %nt = arith.not %m : i8
        tt.print %s1, %s2, %s3, %am, %nt
        tt.return
        """, """
        %am = arith.constant {value = -128} : i8
        %nt = arith.constant {value = 127} : i8
        tt.print %x, %y, %w, %am, %nt
        tt.return
        """, "%x: f32, %y: f32, %c: i1, %v: tensor<4xi32>, %w: tensor<4xi32>")


def test_casts() -> None:
    check("""
        %same = arith.cast %x : i32
        %wide = arith.cast %same : i64
        %back = arith.cast %wide : i32
        %narrow = arith.cast %y : i32
        %keep = arith.cast %narrow : i64
        %h32 = arith.cast %h : f32
        %h16 = arith.cast %h32 : f16
        %f16 = arith.cast %f : f16
        %keepf = arith.cast %f16 : f32
        %i8f = arith.cast %b : f16
        %i8b = arith.cast %i8f : i8
        %c = arith.constant {value = -1} : i8
        %cu = arith.cast %c : u16
        %ci = arith.cast %cu : i64
        %cf = arith.cast %c : f32
        %cb = arith.cast %c : i1
        %ft = arith.constant {value = -2.75} : f32
        %fi = arith.cast %ft : i32
        %same_bits = arith.bitcast %f : f32
        tt.print %back, %keep, %h16, %keepf, %i8b, %ci, %cf, %cb, %fi, %same_bits
        tt.return
        """, """
        %narrow = arith.cast %y : i32
        %keep = arith.cast %narrow : i64
        %f16 = arith.cast %f : f16
        %keepf = arith.cast %f16 : f32
        %ci = arith.constant {value = 65535} : i64
        %cf = arith.constant {value = -1.0} : f32
        %cb = arith.constant {value = true} : i1
        %fi = arith.constant {value = -2} : i32
        tt.print %x, %keep, %h, %keepf, %b, %ci, %cf, %cb, %fi, %f
        tt.return
        """, "%x: i32, %y: i64, %h: f16, %f: f32, %b: i8")


def test_shape_ops_of_splats_and_constants() -> None:
    check("""
        %s = tt.splat %x : tensor<1x8xf32>
        %b = tt.broadcast %s : tensor<4x8xf32>
        %e = tt.expand_dims %b {axis = 0} : tensor<1x4x8xf32>
        %r = tt.reshape %e {can_reorder = false} : tensor<32xf32>
        %t = tt.trans %b {order = [1, 0]} : tensor<8x4xf32>
        %c = arith.constant {value = 2} : i32
        %cs = tt.splat %c : tensor<16xi32>
        %ce = tt.expand_dims %cs {axis = 1} : tensor<16x1xi32>
        %cb = tt.broadcast %ce : tensor<16x4xi32>
        %same = tt.broadcast %v : tensor<4x8xf32>
        %id = tt.trans %v {order = [0, 1]} : tensor<4x8xf32>
        tt.print %r, %t, %cb, %same, %id
        tt.return
        """, """
        %r = tt.splat %x : tensor<32xf32>
        %t = tt.splat %x : tensor<8x4xf32>
        %cb = arith.constant {value = 2} : tensor<16x4xi32>
        tt.print %r, %t, %cb, %v, %v
        tt.return
        """, "%x: f32, %v: tensor<4x8xf32>")


def test_addptr() -> None:
    check("""
        %zero = arith.constant {value = 0} : tensor<8xi32>
        %p0 = tt.addptr %p, %zero : tensor<8xptr<f32>>
        %a = tt.addptr %p0, %o64 : tensor<8xptr<f32>>
        %b = tt.addptr %a, %o64 : tensor<8xptr<f32>>
        %c = tt.addptr %p, %o32 : tensor<8xptr<f32>>
        %d = tt.addptr %c, %o32 : tensor<8xptr<f32>>
        %four = arith.constant {value = 4} : tensor<8xi32>
        %e = tt.addptr %p, %four : tensor<8xptr<f32>>
        %f = tt.addptr %e, %four : tensor<8xptr<f32>>
        %max = arith.constant {value = 2147483647} : tensor<8xi32>
        %g = tt.addptr %e, %max : tensor<8xptr<f32>>
        tt.print %b, %d, %f, %g
        tt.return
        """, """
        %0 = arith.add %o64, %o64 : tensor<8xi64>
        %b = tt.addptr %p, %0 : tensor<8xptr<f32>>
        %c = tt.addptr %p, %o32 : tensor<8xptr<f32>>
        %d = tt.addptr %c, %o32 : tensor<8xptr<f32>>
        %four = arith.constant {value = 4} : tensor<8xi32>
        %e = tt.addptr %p, %four : tensor<8xptr<f32>>
        %1 = arith.constant {value = 8} : tensor<8xi32>
        %f = tt.addptr %p, %1 : tensor<8xptr<f32>>
        %max = arith.constant {value = 2147483647} : tensor<8xi32>
        %g = tt.addptr %e, %max : tensor<8xptr<f32>>
        tt.print %b, %d, %f, %g
        tt.return
        """, "%p: tensor<8xptr<f32>>, %o64: tensor<8xi64>, %o32: tensor<8xi32>")


def test_hint_on_constant_is_dropped() -> None:
    check("""
        %c = arith.constant {value = 16} : tensor<8xi32>
        %h = tt.hint %c {max_constancy = [8], max_contiguous = [], multiple_of = [16]} : tensor<8xi32>
        %k = tt.hint %x {max_constancy = [], max_contiguous = [8], multiple_of = [8]} : tensor<8xi32>
        tt.print %h, %k
        tt.return
        """, """
        %c = arith.constant {value = 16} : tensor<8xi32>
        %k = tt.hint %x {max_constancy = [], max_contiguous = [8], multiple_of = [8]} : tensor<8xi32>
        tt.print %c, %k
        tt.return
        """, "%x: tensor<8xi32>")


def test_if_with_constant_condition_is_inlined() -> None:
    check("""
        %t = arith.constant {value = true} : i1
        %r = scf.if %t : f32 {
          %m = arith.mul %x, %x : f32
          tt.print %m
          scf.yield %m
        } {
          scf.yield %x
        }
        %f = arith.cmp %t, %t {predicate = "ne"} : i1
        scf.if %f {
          tt.print %x
          scf.yield
        } {
          scf.yield
        }
        tt.print %r
        tt.return
        """, """
        %m = arith.mul %x, %x : f32
        tt.print %m
        tt.print %m
        tt.return
        """, "%x: f32")


def test_for_without_iterations_is_removed() -> None:
    check("""
        %lb = arith.constant {value = 8} : i32
        %ub = arith.constant {value = 4} : i32
        %st = arith.constant {value = 1} : i32
        %r = scf.for %lb, %ub, %st, %x : f32 {
        ^bb(%i: i32, %a: f32):
          tt.print %a
          %b = arith.mul %a, %a : f32
          scf.yield %b
        }
        %k = scf.for %ub, %lb, %st, %x : f32 {
        ^bb(%j: i32, %c: f32):
          %d = arith.add %c, %c : f32
          scf.yield %d
        }
        tt.print %r, %k
        tt.return
        """, """
        %lb = arith.constant {value = 8} : i32
        %ub = arith.constant {value = 4} : i32
        %st = arith.constant {value = 1} : i32
        %k = scf.for %ub, %lb, %st, %x : f32 {
        ^bb(%j: i32, %c: f32):
          %d = arith.add %c, %c : f32
          scf.yield %d
        }
        tt.print %x, %k
        tt.return
        """, "%x: f32")


def test_fixed_point_and_dead_code() -> None:
    """Folds enable folds; pure dead ops go, loads and stores stay."""
    check("""
        %c3 = arith.constant {value = 3} : i32
        %c2 = arith.constant {value = 2} : i32
        %one = arith.sub %c3, %c2 : i32
        %x1 = arith.mul %x, %one : i32
        %s = tt.splat %x1 : tensor<4xi32>
        %dead = arith.add %s, %s : tensor<4xi32>
        %v = tt.load %p : f32
        %cmp = arith.cmp %c3, %c2 {predicate = "gt"} : i1
        %r = scf.if %cmp : i32 {
          scf.yield %x1
        } {
          scf.yield %c2
        }
        tt.print %r
        tt.return
        """, """
        %v = tt.load %p : f32
        tt.print %x
        tt.return
        """, "%x: i32, %p: ptr<f32>")


@pytest.mark.parametrize("dtype", ["i32", "tensor<4xi32>"])
def test_folding_inside_loops(dtype: str) -> None:
    check(f"""
        %r = scf.for %lb, %ub, %st, %x : {dtype} {{
        ^bb(%i: i32, %a: {dtype}):
          %zero = arith.constant {{value = 0}} : {dtype}
          %b = arith.add %a, %zero : {dtype}
          scf.yield %b
        }}
        tt.print %r
        tt.return
        """, f"""
        %r = scf.for %lb, %ub, %st, %x : {dtype} {{
        ^bb(%i: i32, %a: {dtype}):
          scf.yield %a
        }}
        tt.print %r
        tt.return
        """, f"%lb: i32, %ub: i32, %st: i32, %x: {dtype}")
