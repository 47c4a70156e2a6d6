"""The IR core: text round trips for every tile op, the verifier's errors, types, attributes, mutation."""
from __future__ import annotations

import math
import re
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

from tile.ir import (DTYPES, OP_DEFS, Operation, ParseError, PointerType, TensorType, VerificationError, f32, i32,
                     parse_op, parse_type, print_op, verify)


def func(body: str, args: str = "", name: str = "k") -> str:
    """A tt.func around `body` (written at any indentation), in the printer's exact layout."""
    names = ", ".join(f'"{a.split(":")[0].strip()[1:]}"' for a in args.split(", ")) if args else ""
    lines = textwrap.dedent(body).strip("\n").splitlines()
    inner = "\n".join("  " + line for line in lines)
    label = f"^bb({args}):\n" if args else ""
    return f'tt.func {{arg_names = [{names}], sym_name = "{name}"}} {{\n{label}{inner}\n}}'


ROUND_TRIPS = {
    "integer arithmetic": func("""
        %a = arith.add %x, %y : i32
        %b = arith.sub %a, %y : i32
        %c = arith.mul %b, %x : i32
        %d = arith.div %c, %y : i32
        %e = arith.rem %d, %x : i32
        %f = arith.and %e, %y : i32
        %g = arith.or %f, %x : i32
        %h = arith.xor %g, %y : i32
        %s = arith.shl %h, %x : i32
        %t = arith.shr %s, %y : i32
        %mx = arith.max %t, %x : i32
        %mn = arith.min %mx, %y : i32
        %n = arith.neg %mn : i32
        %nt = arith.not %n : i32
        %ab = math.abs %nt : i32
        %hi = math.umulhi %ab, %x : i32
        tt.print %hi {hex = false, prefix = "hi: "}
        tt.return
        """, "%x: i32, %y: i32"),
    "float math": func("""
        %e = math.exp %x : tensor<8xf32>
        %e2 = math.exp2 %e : tensor<8xf32>
        %l = math.log %e2 : tensor<8xf32>
        %l2 = math.log2 %l : tensor<8xf32>
        %s = math.sqrt %l2 : tensor<8xf32>
        %r = math.rsqrt %s : tensor<8xf32>
        %sn = math.sin %r : tensor<8xf32>
        %cs = math.cos %sn : tensor<8xf32>
        %er = math.erf %cs : tensor<8xf32>
        %fl = math.floor %er : tensor<8xf32>
        %ce = math.ceil %fl : tensor<8xf32>
        %ab = math.abs %ce : tensor<8xf32>
        %fma = math.fma %ab, %x, %x : tensor<8xf32>
        %mx = arith.max %fma, %x {propagate_nan = true} : tensor<8xf32>
        %c = arith.constant {value = -0.0} : tensor<8xf32>
        %m = arith.min %mx, %c : tensor<8xf32>
        tt.print %m
        tt.return
        """, "%x: tensor<8xf32>"),
    "rounding modes, bit ops, approximate units": func("""
        %a = arith.add %x, %x {rounding = "rz"} : tensor<8xf32>
        %b = arith.sub %a, %x {rounding = "rd"} : tensor<8xf32>
        %c = arith.mul %b, %x {rounding = "ru"} : tensor<8xf32>
        %d = arith.div %c, %x {rounding = "rn"} : tensor<8xf32>
        %f = math.fma %d, %x, %x {rounding = "rz"} : tensor<8xf32>
        %s = math.sqrt %f {rounding = "ru"} : tensor<8xf32>
        %t = math.trunc %s : tensor<8xf32>
        %r = math.rint %t : tensor<8xf32>
        %e = math.approx %r {fn = "ex2"} : tensor<8xf32>
        %q = math.approx %e, %x {fn = "div"} : tensor<8xf32>
        %i = arith.cast %q {rounding = "rd"} : tensor<8xi64>
        %g = arith.cast %i {rounding = "ru"} : tensor<8xf32>
        %lz = math.clz %i : tensor<8xi32>
        %pc = math.popc %lz : tensor<8xi32>
        %br = math.brev %pc : tensor<8xi32>
        %bp = math.byte_perm %br, %lz, %pc : tensor<8xi32>
        %hi = math.mulhi %bp, %br : tensor<8xi32>
        %lo = math.mul24 %hi, %bp : tensor<8xi32>
        %sd = math.sad %lo, %hi, %bp : tensor<8xi32>
        tt.print %g, %sd
        tt.return
        """, "%x: tensor<8xf32>"),
    "compare, select, casts": func("""
        %lt = arith.cmp %x, %y {predicate = "lt"} : tensor<4xi1>
        %sel = arith.select %lt, %x, %y : tensor<4xf16>
        %wide = arith.cast %sel : tensor<4xf32>
        %back = arith.cast %wide {rounding = "rtz"} : tensor<4xbf16>
        %bits = arith.bitcast %back : tensor<4xi16>
        %u = arith.cast %bits : tensor<4xu64>
        %t = arith.constant {value = true} : i1
        %f8 = arith.cast %sel : tensor<4xf8e4nv>
        %f85 = arith.cast %f8 : tensor<4xf8e5>
        %d = arith.cast %f85 : tensor<4xf64>
        tt.print %u, %t, %d
        tt.return
        """, "%x: tensor<4xf16>, %y: tensor<4xf16>"),
    "tensor shapes": func("""
        %pid = tt.program_id {axis = 0} : i32
        %np = tt.num_programs {axis = 2} : i32
        %r = tt.arange {end = 32, start = 0} : tensor<32xi32>
        %s = tt.splat %pid : tensor<32xi32>
        %a = arith.add %s, %r : tensor<32xi32>
        %e = tt.expand_dims %a {axis = 1} : tensor<32x1xi32>
        %b = tt.broadcast %e : tensor<32x16xi32>
        %t = tt.trans %b {order = [1, 0]} : tensor<16x32xi32>
        %re = tt.reshape %t {can_reorder = false} : tensor<512xi32>
        %h = tt.hint %re {max_constancy = [], max_contiguous = [16], multiple_of = [16]} : tensor<512xi32>
        tt.print %h, %np
        tt.return
        """),
    "memory": func("""
        %offs = tt.arange {end = 64, start = 0} : tensor<64xi32>
        %ps = tt.splat %p : tensor<64xptr<f32>>
        %ptrs = tt.addptr %ps, %offs : tensor<64xptr<f32>>
        %ns = tt.splat %n : tensor<64xi32>
        %mask = arith.cmp %offs, %ns {predicate = "lt"} : tensor<64xi1>
        %other = arith.constant {value = 0.0} : tensor<64xf32>
        %v0 = tt.load %ptrs {cache = "", eviction = "evict_last", volatile = false} : tensor<64xf32>
        %v1 = tt.load %ptrs, %mask : tensor<64xf32>
        %v2 = tt.load %ptrs, %mask, %other : tensor<64xf32>
        tt.store %ptrs, %v0 {cache = ".cg", eviction = ""}
        tt.store %ptrs, %v1, %mask
        %old = tt.atomic_rmw %ptrs, %v2, %mask {kind = "add", scope = "gpu", sem = "acq_rel"} : tensor<64xf32>
        %cas = tt.atomic_cas %ptrs, %old, %v2 {scope = "cta", sem = "relaxed"} : tensor<64xf32>
        %addr = tt.ptr_to_int %p : i64
        %q = tt.int_to_ptr %addr : ptr<f32>
        %qq = tt.addptr %q, %n : ptr<f32>
        tt.store %qq, %v, %t
        tt.print %cas
        tt.return
        """, "%p: ptr<f32>, %n: i32, %v: f32, %t: i1"),
    "tensor descriptors": func("""
        %c1 = arith.constant {value = 1} : i64
        %b = tt.descriptor_load %p, %m, %n, %s, %c1, %i, %j {block_shape = [8, 32], padding = "nan"} : tensor<8x32xf32>
        tt.descriptor_store %p, %m, %n, %s, %c1, %i, %j, %b {block_shape = [8, 32]}
        %map = tt.make_tensormap %p, %m, %n, %s, %c1 {block_shape = [8, 32], padding = "zero"} : tensormap
        %slotted = tt.make_tensormap %p, %m, %n, %s, %c1, %g {block_shape = [8, 32], padding = "zero", slot = 0} : tensormap
        tt.return
        """, "%p: ptr<f32>, %m: i32, %n: i32, %s: i64, %i: i32, %j: i32, %g: ptr<i8>"),
    "dot, reduce, scan": func("""
        %acc = arith.constant {value = 0.0} : tensor<16x32xf32>
        %d = tt.dot %a, %b, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<16x32xf32>
        %s = tt.reduce %d {axis = 1} : tensor<16xf32> {
        ^bb(%l: f32, %r: f32):
          %sum = arith.add %l, %r : f32
          tt.reduce.return %sum
        }
        %mx, %ix = tt.reduce %s, %idx {axis = 0} : f32, i32 {
        ^bb(%lv: f32, %li: i32, %rv: f32, %ri: i32):
          %gt = arith.cmp %lv, %rv {predicate = "gt"} : i1
          %v = arith.select %gt, %lv, %rv : f32
          %i = arith.select %gt, %li, %ri : i32
          tt.reduce.return %v, %i
        }
        %cs = tt.scan %s {axis = 0, reverse = false} : tensor<16xf32> {
        ^bb(%x: f32, %y: f32):
          %p = arith.mul %x, %y : f32
          tt.reduce.return %p
        }
        tt.print %mx, %ix, %cs
        tt.return
        """, "%a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %idx: tensor<16xi32>"),
    "join, split, gather, histogram": func("""
        %j = tt.join %a, %a : tensor<4x8x2xf32>
        %lo, %hi = tt.split %j : tensor<4x8xf32>, tensor<4x8xf32>
        %g = tt.gather %hi, %idx {axis = 1} : tensor<4x2xf32>
        %m = arith.cmp %bins, %bins {predicate = "eq"} : tensor<16xi1>
        %h = tt.histogram %bins, %m : tensor<32xi32>
        %h2 = tt.histogram %bins : tensor<8xi32>
        tt.print %lo, %g, %h, %h2
        tt.return
        """, "%a: tensor<4x8xf32>, %idx: tensor<4x2xi64>, %bins: tensor<16xi16>"),
    "debug": func("""
        %c = arith.cmp %n, %n {predicate = "eq"} : i1
        tt.assert %c {file = "k.py", line = 3, message = "n != n"}
        tt.debug_barrier
        tt.print
        tt.return
        """, "%n: i32"),
    "control flow": func("""
        %lb = arith.constant {value = 0} : i32
        %one = arith.constant {value = 1} : i32
        %r, %s = scf.for %lb, %n, %one, %lb, %x : i32, f32 {
        ^bb(%i: i32, %acc: i32, %f: f32):
          %acc1 = arith.add %acc, %i : i32
          %pos = arith.cmp %i, %lb {predicate = "gt"} : i1
          %f1 = scf.if %pos : f32 {
            %g = arith.mul %f, %f : f32
            scf.yield %g
          } {
            scf.yield %f
          }
          scf.yield %acc1, %f1
        }
        scf.if %c {
          tt.print %r
          scf.yield
        } {
          scf.yield
        }
        %w = scf.while %r : i32 {
        ^bb(%b: i32):
          %go = arith.cmp %b, %n {predicate = "lt"} : i1
          scf.condition %go, %b
        } {
        ^bb(%a: i32):
          %a1 = arith.add %a, %one : i32
          scf.yield %a1
        }
        tt.print %w, %s
        tt.return
        """, "%n: i32, %x: f32, %c: i1"),
    "elementwise escapes and assume": func("""
        %y = tt.elementwise_inline_asm %x, %x {asm = "{\\n  shf.l.wrap.b32 $0, $1, $2, 3;\\n}", constraints = "=r,r,r", packed_element = 1, pure = false} : tensor<8xi32>
        %m = tt.map_elementwise %x {pack = 2} : tensor<8xi32> {
        ^bb(%a: i32, %b: i32):
          %p = arith.add %a, %b : i32
          %q = arith.sub %a, %b : i32
          tt.map_elementwise.return %p, %q
        }
        %c = arith.cmp %m, %y {predicate = "eq"} : tensor<8xi1>
        tt.assume %c
        tt.return
        """, "%x: tensor<8xi32>"),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_round_trip(name: str) -> None:
    text = ROUND_TRIPS[name]
    op = parse_op(text)
    verify(op)
    assert print_op(op) == text


def test_every_tile_op_has_a_round_trip() -> None:
    tile_ops = {n for n in OP_DEFS if n.split(".")[0] in ("arith", "math", "tt", "scf")}
    used = set()
    for text in ROUND_TRIPS.values():
        used.update(re.findall(r"(?:^|= )((?:arith|math|tt|scf)\.[a-z_.0-9]+)", text, re.M))
        used.update(re.findall(r"^\s*((?:arith|math|tt|scf)\.[a-z_.0-9]+)", text, re.M))
    assert not tile_ops - used, f"ops without a round-trip test: {sorted(tile_ops - used)}"


def test_locations_round_trip() -> None:
    op = parse_op(func('%a = arith.add %x, %x : i32 loc("k.py":3:7)\ntt.return', "%x: i32"))
    text = print_op(op, locs=True)
    assert 'loc("k.py":3:7)' in text
    assert print_op(parse_op(text), locs=True) == text


def test_comments_and_numbered_values() -> None:
    op = parse_op(func("// a comment\n%0 = arith.add %x, %x : i32\n%1 = arith.mul %0, %0 : i32\n"
                       "tt.print %1\ntt.return", "%x: i32"))
    assert "%0 = arith.add %x, %x : i32\n  %1 = arith.mul %0, %0 : i32" in print_op(op)


# ------------------------------------------------------------------------------ verifier


def _verify_error(text: str) -> str:
    with pytest.raises(VerificationError) as info:
        verify(parse_op(text))
    return str(info.value)


@pytest.mark.parametrize("body, args, message", [
    ("%a = arith.add %x, %x : i32", "%x: i32", "function must end in tt.return"),
    ("scf.for %x, %x, %x {\n^bb(%i: i32):\n  tt.print %i\n}\ntt.return", "%x: i32",
     "body must end in scf.yield"),
    ("%r = scf.if %c : i32 {\n  scf.yield %x\n} {\n  scf.yield %f\n}\ntt.return", "%c: i1, %x: i32, %f: f32",
     "branch yields [f32], expected [i32]"),
    ("%r = scf.for %x, %x, %x, %x : i32 {\n^bb(%i: i32, %a: i32):\n  scf.yield %f\n}\ntt.return",
     "%x: i32, %f: f32", "scf.yield types [f32] must be [i32]"),
    ("%b = tt.broadcast %t : tensor<4x8xf32>\ntt.return", "%t: tensor<4x2xf32>",
     "cannot broadcast tensor<4x2xf32> to tensor<4x8xf32>"),
    ("tt.store %p, %v\ntt.return", "%p: tensor<4xptr<f32>>, %v: tensor<4xf16>",
     "stored value tensor<4xf16> must be tensor<4xf32>"),
    ("%v = tt.load %p, %m : tensor<4xf32>\ntt.return", "%p: tensor<4xptr<f32>>, %m: tensor<8xi1>",
     "mask tensor<8xi1> must be i1 shaped like the pointer"),
    ("%v = tt.frobnicate %x : i32\ntt.return", "%x: i32", "'tt.frobnicate': unknown operation"),
    ("%d = tt.dot %a, %b, %c : tensor<16x16xf32>\ntt.return",
     "%a: tensor<16x8xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>", "inner dimensions differ"),
    ("tt.return\ntt.print %x\ntt.return", "%x: i32", "terminator in the middle of a block"),
    ("%a = arith.add %x, %y : i32\ntt.return", "%x: i32, %y: i64", "operand types differ: i32 vs i64"),
    ("%r = tt.arange {end = 8, start = 0} : tensor<16xi32>\ntt.return", "", "result must be tensor<8xi32>"),
    ("%c = arith.cmp %x, %x {predicate = \"lte\"} : i1\ntt.return", "%x: i32", "bad predicate 'lte'"),
])
def test_verifier_errors(body: str, args: str, message: str) -> None:
    assert message in _verify_error(func(body, args))


def test_non_dominating_operand() -> None:
    op = parse_op(func("""
        %r = scf.for %x, %x, %x, %x : i32 {
        ^bb(%i: i32, %a: i32):
          %inner = arith.add %a, %i : i32
          scf.yield %inner
        }
        %out = arith.add %r, %x : i32
        tt.return
        """, "%x: i32"))
    block = op.regions[0].block
    loop, out = block.ops[0], block.ops[1]
    inner = loop.regions[0].block.ops[0].result
    out.set_operand(0, inner)
    with pytest.raises(VerificationError, match=r"operand 0 \(i32\) does not dominate this use"):
        verify(op)


def test_use_before_definition() -> None:
    op = parse_op(func("%a = arith.add %x, %x : i32\n%b = arith.mul %a, %a : i32\ntt.return", "%x: i32"))
    a, b = op.regions[0].block.ops[:2]
    b.move_before(a)
    with pytest.raises(VerificationError, match="does not dominate"):
        verify(op)


def test_parse_errors() -> None:
    with pytest.raises(ParseError, match="use of undefined value %y"):
        parse_op(func("%a = arith.add %x, %y : i32\ntt.return", "%x: i32"))
    with pytest.raises(ParseError, match="defined twice"):
        parse_op(func("%a = arith.add %x, %x : i32\n%a = arith.add %x, %x : i32\ntt.return", "%x: i32"))
    with pytest.raises(ParseError, match="1 results named but 0 types given"):
        parse_op(func("%a = arith.add %x, %x\ntt.return", "%x: i32"))


def test_op_without_operands_before_a_definition() -> None:
    text = func("tt.debug_barrier\n%a = arith.add %x, %x : i32\ntt.print %a\ntt.return", "%x: i32")
    assert print_op(parse_op(text)) == text


# ---------------------------------------------------------------------------- types

SCALARS = sorted(DTYPES.values(), key=str)
scalar_types = st.sampled_from(SCALARS)
pointer_types = st.builds(PointerType, st.one_of(scalar_types, st.builds(PointerType, scalar_types)),
                          st.sampled_from([1, 3]))
element_types = st.one_of(scalar_types, pointer_types)
tensor_types = st.builds(TensorType, st.lists(st.integers(1, 4096), min_size=1, max_size=4).map(tuple),
                         element_types)


@settings(max_examples=200, deadline=None)
@given(st.one_of(element_types, tensor_types))
def test_types_round_trip(t) -> None:
    assert parse_type(str(t)) == t
    assert str(parse_type(str(t))) == str(t)


def test_type_spellings() -> None:
    assert str(TensorType((4, 8), f32)) == "tensor<4x8xf32>"
    assert str(TensorType((2,), PointerType(PointerType(i32), 3))) == "tensor<2xptr<ptr<i32>, 3>>"
    with pytest.raises(ValueError, match="unknown type"):
        parse_type("tensor<4xf128>")
    with pytest.raises(ValueError, match="trailing text"):
        parse_type("i32>")


# ------------------------------------------------------------------------ attributes

attr_scalars = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                         st.text(max_size=12))
attr_values = st.recursive(attr_scalars, lambda children: st.lists(children, max_size=3), max_leaves=8)


def _same_attr(a, b) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_attr(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and repr(a) == repr(b)  # repr: nan equals nan, -0.0 differs from 0.0


def _attr_round_trip(attrs: dict) -> dict:
    op = Operation("tt.print", [], [], attrs)
    text = print_op(op)
    back = parse_op(text)
    assert print_op(back) == text
    return back.attrs


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), attr_values, max_size=4))
def test_attributes_round_trip(attrs: dict) -> None:
    back = _attr_round_trip(attrs)
    assert sorted(back) == sorted(attrs)
    for key in attrs:
        assert _same_attr(attrs[key], back[key]), (attrs[key], back[key])


def test_attribute_edge_cases() -> None:
    attrs = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "nz": -0.0, "tiny": 1e-30, "big": 1e300,
             "sub": 5e-324, "quote": 'say "hi" // not a comment\n', "nested": [[1, [2.5, "x"]], [], [True, False]],
             "t": True, "f": False, "neg": -7, "path": "a\\b"}
    back = _attr_round_trip(attrs)
    for key, value in attrs.items():
        assert _same_attr(value, back[key]), key


def test_type_attribute() -> None:
    back = _attr_round_trip({"dtype": TensorType((4,), f32)})
    assert back["dtype"] == TensorType((4,), f32)


# -------------------------------------------------------------------------- mutation

LOOP = func("""
    %r = scf.for %x, %x, %x, %x : i32 {
    ^bb(%i: i32, %a: i32):
      %b = arith.add %a, %i : i32
      scf.yield %b
    }
    %out = arith.mul %r, %x : i32
    tt.print %out
    tt.return
    """, "%x: i32")


def test_clone_is_deep_and_independent() -> None:
    op = parse_op(LOOP)
    copy = op.clone()
    verify(copy)
    assert print_op(copy) == LOOP
    # The copy shares no values with the original.
    originals = {id(v) for o in op.walk() for v in o.results}
    assert not any(id(v) in originals for o in copy.walk() for v in o.operands)
    copy.regions[0].block.ops[1].attrs["marker"] = 1
    assert print_op(op) == LOOP


def test_clone_with_mapping_remaps_operands() -> None:
    op = parse_op(LOOP)
    block = op.regions[0].block
    x = block.args[0]
    replacement = Operation("arith.constant", [], [i32], {"value": 3})
    mul = block.ops[1]
    clone = mul.clone({x: replacement.result})
    assert clone.operand(1) is replacement.result
    assert (clone, 1) in replacement.result.uses and (mul, 1) in x.uses


def test_replace_all_uses_with() -> None:
    op = parse_op(LOOP)
    block = op.regions[0].block
    x = block.args[0]
    loop = block.ops[0]
    n_uses = len(x.uses)
    c = Operation("arith.constant", [], [i32], {"value": 7})
    block.insert(0, c)
    x.replace_all_uses_with(c.result)
    assert not x.has_uses and len(c.result.uses) == n_uses
    assert loop.operand(0) is c.result
    verify(op)
    assert "%r = scf.for %0, %0, %0, %0 : i32" in print_op(op)


def test_erase_with_uses_fails() -> None:
    op = parse_op(LOOP)
    loop = op.regions[0].block.ops[0]
    with pytest.raises(ValueError, match="cannot erase scf.for: its result is still used by arith.mul"):
        loop.erase()
    verify(op)  # nothing changed


def test_erase_drops_nested_uses() -> None:
    op = parse_op(LOOP)
    block = op.regions[0].block
    x = block.args[0]
    for o in reversed(block.ops[:-1]):
        o.erase()
    assert not x.has_uses
    verify(op)
