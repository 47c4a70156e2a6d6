"""tt.print / tt.assert lowered to vprintf and __assertfail, source-line comments in the PTX,
and the lowering's errors (dot layouts, unknown ops, missing allocation)."""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import blocked, check_ptx, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.codegen.lower import lower_to_simt
from tile.codegen.lower_core import LoweringError
from tile.codegen.ptx import emit_ptx
from tile.emulator import EmulatorError
from tile.ir import Location, Operation, i32, parse_op

L = blocked([2], [32], [2])
T = lambda t, n=8: f"tensor<{n}x{t}, {L}>"  # noqa: E731


def print_kernel(hex_: bool = False) -> str:
    body = f"""
  %r = tt.arange {{end = 8, start = 0}} : {T("i32")}
  %xs = tt.splat %x : {T("ptr<f32>")}
  %xp = tt.addptr %xs, %r : {T("ptr<f32>")}
  %v = tt.load %xp : {T("f32")}
  tt.print %v {{hex = {str(hex_).lower()}, prefix = "x: "}}
  %pid = tt.program_id {{axis = 0}} : i32
  tt.print %pid, %n {{hex = false, prefix = "pid and n 100%: "}}
  %b = arith.cmp %r, %r {{predicate = "eq"}} : {T("i1")}
  %h = arith.cast %v : {T("f16")}
  tt.print %b, %h {{hex = false, prefix = ""}}"""
    return func("printer", [("x", "ptr<f32>"), ("n", "i64")], body, num_warps=2)


def test_print_each_element_once() -> None:
    simt = lower(print_kernel())
    x = np.arange(8, dtype=np.float32) * 0.5
    m, _ = run(simt, (2,), [x, 12345678912])
    lines = m.printed
    for pid in range(2):
        for i in range(8):
            assert f"pid ({pid}, 0, 0) idx ({i}) x: {i * 0.5:f}\n" in lines
            assert f"pid ({pid}, 0, 0) idx ({i}) 1\n" in lines
    assert lines.count("pid (1, 0, 0) pid and n 100%: 1\n") == 1
    assert lines.count("pid (0, 0, 0) pid and n 100%: 12345678912\n") == 1
    assert len(lines) == 2 * (8 + 2 + 8 + 8)  # the elements held by several threads print once


def test_print_hex() -> None:
    m, _ = run(lower(print_kernel(hex_=True)), (1,), [np.ones(8, np.float32), 1])
    assert "pid (0, 0, 0) idx (3) x: 0x3f800000\n" in m.printed


def assert_kernel() -> str:
    body = f"""
  %r = tt.arange {{end = 8, start = 0}} : {T("i32")}
  %xs = tt.splat %x : {T("ptr<f32>")}
  %xp = tt.addptr %xs, %r : {T("ptr<f32>")}
  %v = tt.load %xp : {T("f32")}
  %z = arith.constant {{value = 0.0}} : {T("f32")}
  %ok = arith.cmp %v, %z {{predicate = "ge"}} : {T("i1")}
  tt.assert %ok {{file = "kernel.py", line = 7, message = "x >= 0"}}"""
    return func("checker", [("x", "ptr<f32>")], body, num_warps=2)


def test_assert() -> None:
    simt = lower(assert_kernel())
    run(simt, (1,), [np.arange(8, dtype=np.float32)])
    x = np.arange(8, dtype=np.float32)
    x[5] = -1
    with pytest.raises(EmulatorError, match=r"device-side assertion failed: kernel.py:7: checker: x >= 0"):
        run(simt, (1,), [x])


@needs_ptxas
def test_debug_ops_assemble() -> None:
    for text in (print_kernel(), print_kernel(hex_=True), assert_kernel()):
        check_ptx(lower(text))
    ptx = emit_ptx(lower(assert_kernel()))
    assert "kernel.py" in bytes(int(c) for c in ptx.split("__str1[")[1].split("{")[1].split("}")[0].split(","))\
        .decode()
    assert "__assertfail" in ptx and "vprintf" not in ptx


def test_dot_without_mma_or_fma_layouts_names_them() -> None:
    A = blocked([1, 1], [4, 8], [2, 1])
    body = f"""
  %a = arith.constant {{value = 1.0}} : tensor<16x16xf16, {A}>
  %c = arith.constant {{value = 0.0}} : tensor<16x16xf32, {A}>
  %d = tt.dot %a, %a, %c : tensor<16x16xf32, {A}>
  %ps = tt.splat %p : tensor<16x16xptr<f32>, {A}>
  tt.store %ps, %d"""
    with pytest.raises(LoweringError, match="no mma fragments and no FMA layouts.*#blocked"):
        lower(func("dot", [("p", "ptr<f32>")], body, num_warps=2))


def test_errors_name_the_source_line() -> None:
    f = parse_op(func("bad", [("x", "i32")], ""))
    block = f.regions[0].block
    block.insert(0, Operation("tt.mystery", [block.args[0]], [i32], loc=Location("kern.py", 42, 3)))
    with pytest.raises(LoweringError, match=r"tt\.mystery.*kern\.py:42"):
        lower_to_simt(f)


def test_unallocated_buffers_are_refused() -> None:
    shared = "#shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>"
    body = f"""
  %buf = gpu.local_alloc {{bytes = 32, offset = -1}} : tensor<8xf32, {shared}>
  %r = tt.arange {{end = 8, start = 0}} : {T("i32")}
  %f = arith.cast %r : {T("f32")}
  gpu.local_store %buf, %f"""
    with pytest.raises(LoweringError, match="allocator"):
        lower(func("alloc", [("x", "i32")], body, num_warps=2))


def test_reduce_without_scratch_offset_is_refused() -> None:
    body = f"""
  %r = tt.arange {{end = 128, start = 0}} : {T("i32", 128)}
  %s = tt.reduce %r {{axis = 0}} : i32 {{
  ^bb(%a: i32, %b: i32):
    %c = arith.add %a, %b : i32
    tt.reduce.return %c
  }}
  tt.store %out, %s"""
    with pytest.raises(LoweringError, match="scratch_offset"):
        lower(func("red", [("out", "ptr<i32>")], body, num_warps=2))


def test_source_lines_reach_the_ptx(tmp_path) -> None:
    src = tmp_path / "add.py"
    src.write_text("def add(x, out):\n    offs = tl.arange(0, 64)\n    tl.store(out + offs, tl.load(x + offs) * 2)\n")
    loc = lambda line: f' loc("{src}":{line}:4)'  # noqa: E731
    body = f"""
  %r = tt.arange {{end = 64, start = 0}} : {T("i32", 64)}{loc(2)}
  %xs = tt.splat %x : {T("ptr<f32>", 64)}{loc(3)}
  %xp = tt.addptr %xs, %r : {T("ptr<f32>", 64)}{loc(3)}
  %v = tt.load %xp : {T("f32", 64)}{loc(3)}
  %two = arith.constant {{value = 2.0}} : {T("f32", 64)}{loc(3)}
  %y = arith.mul %v, %two : {T("f32", 64)}{loc(3)}
  %os = tt.splat %out : {T("ptr<f32>", 64)}{loc(3)}
  %op = tt.addptr %os, %r : {T("ptr<f32>", 64)}{loc(3)}
  tt.store %op, %y{loc(3)}"""
    simt = lower(func("add", [("x", "ptr<f32>"), ("out", "ptr<f32>")], body, num_warps=2))
    ptx = emit_ptx(simt)
    assert "// add.py:2  offs = tl.arange(0, 64)" in ptx
    assert "// add.py:3  tl.store(out + offs, tl.load(x + offs) * 2)" in ptx
    assert ptx.index("// add.py:3") < ptx.index("ld.global") < ptx.index("st.global")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    m, d = run(simt, (1,), [x, out])
    np.testing.assert_array_equal(result(m, d[1], out), 2 * x)
