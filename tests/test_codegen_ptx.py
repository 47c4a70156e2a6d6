"""The PTX emitter on hand-written simt IR: every table entry assembles, the handlers print
what ptxas accepts, control flow, constants, source comments and errors."""
from __future__ import annotations

import re

import pytest

from ptxas_util import assemble_ok, needs_ptxas
from tile.codegen.floats import float_bits
from tile.codegen.ptx.emit import INSTR, PtxError, emit_ptx
from tile.ir import Location, Operation, parse_op, print_op, verify
from tile.ir.core import Block, Region
from tile.ir.ops import ROUNDING_MODES
from tile.ir.types import DTYPES, bf16, f8e4nv, f8e5, f16, f32, i1, i32, u64

ARCHS = ("sm_80", "sm_90a")
_KEY_TYPE = {"s32": "i32", "u32": "u32", "s64": "i64", "u64": "u64", "f32": "f32", "f64": "f64", "pred": "i1",
             "s16": "i16", "u16": "u16", "s8": "i8", "u8": "u8", "f16": "f16", "bf16": "bf16", "e4m3": "f8e4nv",
             "e5m2": "f8e5"}


def _simt_func(name: str, params: list[tuple[str, str]], body: str, num_warps: int = 1) -> Operation:
    names = ", ".join(f'"{n}"' for n, _ in params)
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    text = (f'simt.func {{arg_names = [{names}], num_warps = {num_warps}, shared_bytes = 256, sym_name = "{name}", '
            f'target = "sm_90a"}} {{\n^bb({args}):\n{body}\n  simt.return\n}}')
    f = parse_op(text)
    verify(f)
    return f


def _table_kernel() -> Operation:
    """One kernel using every INSTR entry once, on parameters of the entry's type; results are stored."""
    params, lines = [("out", "ptr<i32>")], []
    for n, (key, ty) in enumerate(sorted(INSTR)):
        t = _KEY_TYPE[ty]
        name, attrs = key, ""
        if key.startswith("arith.cmp."):
            name, attrs = "arith.cmp", f' {{predicate = "{key.rsplit(".", 1)[1]}"}}'
        elif key.endswith(".nan"):
            name, attrs = key[:-4], " {propagate_nan = true}"
        elif key.endswith(".approx"):
            name, attrs = key[:-7], " {approx = true}"
        elif key.rsplit(".", 1)[1] in ROUNDING_MODES:
            name, mode = key.rsplit(".", 1)
            attrs = f' {{rounding = "{mode}"}}'
        template = INSTR[key, ty] if isinstance(INSTR[key, ty], str) else INSTR[key, ty][0]
        arity = 3 if "{c}" in template else 2 if "{b}" in template else 1
        types = [t] * arity
        if name == "arith.select":
            types[0] = "i1"
        operands = []
        for i, ot in enumerate(types):
            params.append((f"a{n}_{i}", ot))
            operands.append(f"%a{n}_{i}")
        result = "i1" if name == "arith.cmp" else "i32" if name in ("math.clz", "math.popc") else t
        lines.append(f"  %r{n} = {name} {', '.join(operands)}{attrs} : {result}")
        value = f"%r{n}"
        if result == "i1":
            lines.append(f"  %w{n} = arith.select %r{n}, %one, %zero : i32")
            value = f"%w{n}"
        lines.append(f"  simt.st_global %out, %true, {value} {{offset = {8 * n}, vector = 1}}")
    body = ("  %one = arith.constant {value = 1} : i32\n  %zero = arith.constant {value = 0} : i32\n"
            "  %true = arith.constant {value = true} : i1\n" + "\n".join(lines))
    return _simt_func("table", params, body)


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_every_table_entry_assembles(arch: str) -> None:
    assemble_ok(emit_ptx(_table_kernel(), target=arch), arch)


def test_table_covers_arithmetic_on_every_register_type() -> None:
    for ty in ("s32", "u32", "s64", "u64", "f32", "f64"):
        for op in ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.max", "arith.min", "arith.select",
                   "arith.cmp.lt", "arith.cmp.ne"):
            assert (op, ty) in INSTR, (op, ty)


HANDLERS = """
  %t = simt.tid : i32
  %cx = simt.ctaid {axis = 0} : i32
  %cy = simt.nctaid {axis = 2} : i32
  %true = arith.constant {value = true} : i1
  %p = arith.cmp %t, %n {predicate = "lt"} : i1
  %a = simt.addptr %x, %t {scale = 4} : ptr<f32>
  %b = simt.addptr %a, %big {scale = 8} : ptr<f32>
  %f0, %f1, %f2, %f3 = simt.ld_global %a, %p, %z, %z, %z, %z {eviction = "evict_first", offset = 16, vector = 4}
      : f32, f32, f32, f32
  %g0 = simt.ld_global %b, %true {cache = "cg", offset = 0, vector = 1} : f32
  %g1 = simt.ld_global %b, %true {offset = 0, vector = 1, volatile = true} : f32
  %s = simt.smem_addr {offset = 64} : i32
  simt.st_shared %s, %p, %f0, %f1 {offset = 8, vector = 2}
  simt.barrier
  %l0, %l1, %l2, %l3 = simt.ld_shared %s, %true {offset = 0, vector = 4} : f32, f32, f32, f32
  %h = simt.cvt %l0 {rnd = "rn"} : f16
  %h2 = simt.cvt %l1 {rnd = "rz"} : bf16
  %w = simt.pack %h, %h2 : i32
  %u0, %u1 = simt.unpack %w : f16, f16
  %q = simt.cvt %u0 : f32
  %e = simt.approx %q {fn = "ex2"} : f32
  %lg = simt.approx %e {fn = "lg2"} : f32
  %si = simt.approx %lg {fn = "sin"} : f32
  %rs = simt.approx %si {fn = "rsqrt"} : f32
  %sh = simt.shfl %rs, %c1 {mode = "bfly"} : f32
  %su = simt.shfl %t, %c1 {mode = "up"} : i32
  %sd = simt.shfl %su, %c1 {mode = "down"} : i32
  %sx = simt.shfl %sd, %t {mode = "idx"} : i32
  %o = simt.atom %a, %p, %sh {kind = "add", scope = "gpu", sem = "acq_rel"} : f32
  simt.red %a, %p, %o {kind = "add", scope = "cta", sem = "relaxed"}
  %ia = simt.addptr %ip, %t {scale = 4} : ptr<i32>
  %om = simt.atom %ia, %true, %sx {kind = "max", scope = "sys", sem = "relaxed"} : i32
  %oc = simt.atom_cas %ia, %p, %om, %cy {scope = "gpu", sem = "acquire"} : i32
  %ox = simt.atom %ia, %p, %oc {kind = "exch", scope = "gpu", sem = "release"} : i32
  %b8a = simt.cvt %ox : i8
  %b8b = simt.cvt %cx : u8
  %pk = simt.pack %b8a, %b8b, %b8a, %b8b : i32
  %k0, %k1, %k2, %k3 = simt.unpack %pk : i8, i8, i8, i8
  %k = simt.cvt %k3 : i32
  %d = simt.cvt %g0 : f64
  %dd = arith.add %d, %d : f64
  simt.vprintf %t, %dd, %x {format = "tid %d value %f at %p\\n"}
  simt.st_global %ia, %p, %k {offset = 0, vector = 1, cache = "cs"}
  simt.st_global %a, %p, %f2, %f3, %g1, %e {offset = 0, vector = 4}
  %fail = arith.cmp %k, %n {predicate = "gt"} : i1
  scf.if %fail {
    simt.assertfail {file = "k.py", function = "kernel", line = 3, message = "k <= n"}
    scf.yield
  } {
    scf.yield
  }
"""


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_handlers_assemble(arch: str) -> None:
    f = _simt_func("handlers", [("x", "ptr<f32>"), ("ip", "ptr<i32>"), ("n", "i32"), ("big", "i64"), ("z", "f32"),
                                ("c1", "i32")], HANDLERS, num_warps=2)
    ptx = emit_ptx(f, target=arch)
    assemble_ok(ptx, arch)
    assert "@%p1 ld.global.L1::evict_first.v4.f32" in ptx
    assert "ld.global.cg.f32" in ptx and "ld.volatile.global.f32" in ptx
    assert "atom.global.acq_rel.gpu.add.f32" in ptx and "red.global.relaxed.cta.add.f32" in ptx
    assert "shfl.sync.up.b32" in ptx and re.search(r"shfl\.sync\.up\.b32 %r\d+, %r\d+, %r\d+, 0, -1;", ptx)
    assert "call.uni (retval0), vprintf" in ptx and "call.uni __assertfail" in ptx
    assert ".extern .shared .align 16 .b8 __smem[];" in ptx
    assert ".maxntid 64, 1, 1" in ptx


CONTROL = """
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %f0 = arith.constant {value = 0.0} : f32
  %r, %q = scf.for %c0, %n, %c1, %f0, %c0 : f32, i32 {
  ^bb(%i: i32, %a: f32, %b: i32):
    %fi = simt.cvt %i {rnd = "rn"} : f32
    %a2 = arith.add %a, %fi : f32
    scf.yield %a2, %i
  }
  %swap1, %swap2 = scf.for %c0, %n, %c1, %c0, %c1 : i32, i32 {
  ^bb(%j: i32, %u: i32, %v: i32):
    scf.yield %v, %u
  }
  %pos = arith.cmp %r, %f0 {predicate = "gt"} : i1
  %y = scf.if %pos : f32 {
    %m = arith.mul %r, %r : f32
    scf.yield %m
  } {
    scf.yield %f0
  }
  %k, %v = scf.while %c0, %c1 : i32, i32 {
  ^bb(%k0: i32, %v0: i32):
    %go = arith.cmp %v0, %n {predicate = "lt"} : i1
    scf.condition %go, %k0, %v0
  } {
  ^bb(%k1: i32, %v1: i32):
    %k2 = arith.add %k1, %c1 : i32
    %v2 = arith.add %v1, %v1 : i32
    scf.yield %k2, %v2
  }
  %true = arith.constant {value = true} : i1
  simt.st_global %out, %true, %y {offset = 0, vector = 1}
  %oi = arith.bitcast %out : i64
  %s = arith.add %k, %swap1 : i32
  %fs = simt.cvt %s {rnd = "rn"} : f32
  simt.st_global %out, %true, %fs {offset = 4, vector = 1}
"""


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_control_flow_becomes_labels_and_branches(arch: str) -> None:
    f = _simt_func("control", [("out", "ptr<f32>"), ("n", "i32")], CONTROL)
    ptx = emit_ptx(f, target=arch)
    assemble_ok(ptx, arch)
    labels = re.findall(r"^(\$L__control_\d+):", ptx, re.M)
    assert len(labels) == len(set(labels)) >= 8
    assert "bra.uni" in ptx and "@!%p" in ptx


def test_swapping_loop_values_goes_through_temporaries() -> None:
    f = _simt_func("control", [("out", "ptr<f32>"), ("n", "i32")], CONTROL)
    ptx = emit_ptx(f)
    loop = ptx[ptx.index("%r4, %r5") - 200:] if "%r4, %r5" in ptx else ptx
    assert "mov.b32" in loop


def test_constants_print_as_immediates_or_registers() -> None:
    body = """
  %true = arith.constant {value = true} : i1
  %h = arith.constant {value = 1.5} : f16
  %hb = arith.constant {value = -2.0} : bf16
  %f = arith.constant {value = 0.1} : f32
  %d = arith.constant {value = 3.0} : f64
  %i = arith.constant {value = -7} : i64
  %x = arith.add %f, %f : f32
  %y = arith.mul %d, %d : f64
  %z = arith.add %i, %i : i64
  simt.st_global %o16, %true, %h, %h {offset = 0, vector = 2}
  simt.st_global %ob, %true, %hb {offset = 0, vector = 1}
  simt.st_global %o32, %true, %x {offset = 0, vector = 1}
  simt.st_global %o64, %true, %y {offset = 0, vector = 1}
  simt.st_global %oi, %true, %z {offset = 0, vector = 1}"""
    params = [("o16", "ptr<f16>"), ("ob", "ptr<bf16>"), ("o32", "ptr<f32>"), ("o64", "ptr<f64>"), ("oi", "ptr<i64>")]
    f = _simt_func("consts", params, body)
    ptx = emit_ptx(f)
    assert "add.f32 %f1, 0f3DCCCCCD, 0f3DCCCCCD;" in ptx
    assert "mul.f64 %fd1, 0d4008000000000000, 0d4008000000000000;" in ptx
    assert "add.s64 %rd6, -7, -7;" in ptx
    assert "mov.b16 %rs1, 0x3E00;" in ptx and "mov.b16 %rs2, 0xC000;" in ptx
    assert "@" not in ptx.split("{", 1)[1].split("st.global", 1)[1].split("\n")[0]  # always-true guard omitted
    assert "mov.pred" not in ptx


@pytest.mark.parametrize("value,t,bits", [(1.0, f16, 0x3C00), (-2.5, bf16, 0xC020), (448.0, f8e4nv, 0x7E),
                                          (1e9, f8e4nv, 0x7E), (1.0, f8e5, 0x3C), (0.001, f8e4nv, 0x01),
                                          (65504.0, f16, 0x7BFF), (float("inf"), bf16, 0x7F80),
                                          (3.0, f32, 0x40400000)])
def test_float_bits(value: float, t, bits: int) -> None:
    assert float_bits(value, t) == bits


def test_source_lines_become_comments(tmp_path) -> None:
    src = tmp_path / "kern.py"
    src.write_text("def k(x):\n    y = x + 1\n    return y\n")
    f = _simt_func("loc", [("out", "ptr<i32>"), ("n", "i32")], """
  %true = arith.constant {value = true} : i1
  %c = arith.constant {value = 1} : i32
  %y = arith.add %n, %c : i32
  simt.st_global %out, %true, %y {offset = 0, vector = 1}""")
    ops = f.regions[0].block.ops
    ops[2].loc = Location(str(src), 2, 4)
    ops[3].loc = Location(str(src), 3, 4)
    ptx = emit_ptx(f)
    assert "// kern.py:2  y = x + 1" in ptx and "// kern.py:3  return y" in ptx
    assert ptx.index("// kern.py:2") < ptx.index("add.s32") < ptx.index("// kern.py:3") < ptx.index("st.global")


def test_unknown_op_names_the_op_and_line() -> None:
    f = _simt_func("bad", [("n", "i32")], "  %y = arith.add %n, %n : i32")
    bad = Operation("tt.splat", [f.regions[0].block.args[0]], [i32], loc=Location("k.py", 12))
    f.regions[0].block.insert(0, bad)
    with pytest.raises(PtxError, match=r"tt\.splat.*k\.py:12"):
        emit_ptx(f)


def test_bad_target_is_rejected() -> None:
    f = _simt_func("t", [("n", "i32")], "")
    with pytest.raises(ValueError, match="sm_75"):
        emit_ptx(f, target="sm_75")


@needs_ptxas
def test_params_and_versions() -> None:
    params = [("flag", "i1"), ("h", "f16"), ("d", "f64"), ("p", "ptr<u8>"), ("__smem", "i64"), ("u", "u32"),
              ("c", "i8"), ("w", "u16"), ("b", "bf16")]
    f = _simt_func("params", params, """
  %true = arith.constant {value = true} : i1
  %x = simt.cvt %c : i32
  %y = simt.cvt %w : i32
  %z = arith.select %flag, %x, %y : i32
  %q = simt.addptr %p, %z {scale = 1} : ptr<u8>
  %v = simt.cvt %h : f32
  simt.st_global %q, %true, %v {offset = 0, vector = 1}""")
    ptx = emit_ptx(f, target="sm_89", ptx_version="8.4")
    assert ".version 8.4" in ptx and ".target sm_89" in ptx and ".address_size 64" in ptx
    for decl in (".param .u8 flag", ".param .b16 h", ".param .f64 d", ".param .u64 p", ".param .s64 p___smem",
                 ".param .u32 u", ".param .s8 c", ".param .u16 w", ".param .b16 b"):
        assert decl in ptx
    assemble_ok(ptx, "sm_89")


def test_simt_ir_prints_and_parses_back() -> None:
    f = _simt_func("handlers", [("x", "ptr<f32>"), ("ip", "ptr<i32>"), ("n", "i32"), ("big", "i64"), ("z", "f32"),
                                ("c1", "i32")], HANDLERS, num_warps=2)
    text = print_op(f)
    again = parse_op(text)
    verify(again)
    assert print_op(again) == text


def test_all_dtypes_have_registers() -> None:
    from tile.codegen.ptx.emit import reg_class

    classes = {name: reg_class(t) for name, t in DTYPES.items()}
    assert classes["i1"] == "p" and classes["f16"] == classes["i8"] == classes["f8e5"] == "rs"
    assert classes["i32"] == "r" and classes["f32"] == "f" and classes["u64"] == "rd" and classes["f64"] == "fd"
    assert reg_class(u64) == "rd" and reg_class(i1) == "p" and reg_class(f32) == "f"


def test_empty_func_has_no_registers() -> None:
    block = Block([])
    block.append(Operation("simt.return"))
    f = Operation("simt.func", [], [], {"sym_name": "empty", "num_warps": 1}, [Region([block])])
    ptx = emit_ptx(f)
    assert ".reg" not in ptx and "ret;" in ptx


@needs_ptxas
def test_constants_in_register_positions_and_clashing_names() -> None:
    f = _simt_func("dup", [("x", "ptr<f32>"), ("a_b", "ptr<i32>"), ("dup", "i32")], """
  %true = arith.constant {value = true} : i1
  %one = arith.constant {value = 1.0} : f32
  %seven = arith.constant {value = 7} : i32
  %bits = arith.bitcast %one : i32
  %s = arith.add %bits, %dup : i32
  simt.st_global %a_b, %true, %s {offset = 0, vector = 1}
  simt.vprintf %seven, %s {format = "%d %d\\n"}""")
    f.attrs["arg_names"] = ["a-b", "a_b", "dup"]
    ptx = emit_ptx(f, target="sm_80")
    assert ".param .u64 a_b," in ptx and ".param .u64 a_b_1," in ptx and ".param .s32 dup_2" in ptx
    assert "mov.f32 %f1, 0f3F800000;" in ptx and "mov.b32 %r4, 7;" in ptx and "[a_b_1]" in ptx
    assemble_ok(ptx, "sm_80")


@needs_ptxas
def test_loop_bounds_follow_the_sign_of_the_step() -> None:
    f = _simt_func("steps", [("out", "ptr<i32>"), ("n", "i32"), ("step", "i32")], """
  %c0 = arith.constant {value = 0} : i32
  %cm2 = arith.constant {value = -2} : i32
  %true = arith.constant {value = true} : i1
  %a = scf.for %n, %c0, %cm2, %c0 : i32 {
  ^bb(%i: i32, %x: i32):
    %y = arith.add %x, %i : i32
    scf.yield %y
  }
  %b = scf.for %c0, %n, %step, %a : i32 {
  ^bb(%j: i32, %z: i32):
    %w = arith.add %z, %j : i32
    scf.yield %w
  }
  simt.st_global %out, %true, %b {offset = 0, vector = 1}""")
    ptx = emit_ptx(f)
    assemble_ok(ptx, "sm_90a")
    first, second = ptx.split("$L__steps_2:")[0], ptx.split("$L__steps_2:")[1]
    assert "setp.le.s32" in first and "setp.gt.s32" in first  # counting down: stop at iv <= ub
    assert "setp.gt.s32 %p" in second and "@!%p" in second     # runtime step: test its sign
