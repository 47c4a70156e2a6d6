"""tt.reduce and tt.scan lowered to simt IR: in-thread, warp shuffles and scratch shared memory,
over several layouts, dtypes and combine regions (argmax, custom), on tile.emulator;
and the PTX of each kind assembles."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen_util import blocked, check_ptx, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.ir import print_op

RNG = np.random.default_rng(1)
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u32": np.uint32,
      "i8": np.int8, "i16": np.int16}


def _combine(dt: str, op: str) -> str:
    return f"""{{
  ^bb(%a: {dt}, %b: {dt}):
    %c = arith.{op} %a, %b : {dt}
    tt.reduce.return %c
  }}"""


def reduce_1d(n: int, spt: int, warps: int, dt: str, op: str) -> str:
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %xs = tt.splat %x : {T(f"ptr<{dt}>")}
  %xp = tt.addptr %xs, %r : {T(f"ptr<{dt}>")}
  %v = tt.load %xp : {T(dt)}
  %s = tt.reduce %v {{axis = 0, scratch_offset = 16}} : {dt} {_combine(dt, op)}
  tt.store %out, %s"""
    return func("reduce", [("x", f"ptr<{dt}>"), ("out", f"ptr<{dt}>")], body, num_warps=warps,
                shared_bytes=16 + warps * 8)


def _np_reduce(x: np.ndarray, op: str):
    if op == "add":
        return x.sum(dtype=x.dtype) if x.dtype.kind in "iu" else x.astype(np.float64).sum()
    return {"max": np.max, "min": np.min, "mul": np.prod, "xor": np.bitwise_xor.reduce, "or": np.bitwise_or.reduce,
            "and": np.bitwise_and.reduce}[op](x)


@pytest.mark.parametrize("n,spt,warps", [(32, 1, 1), (1024, 4, 4), (64, 1, 4), (16, 1, 2), (4096, 2, 8),
                                         (128, 1, 16), (8, 4, 1)])
@pytest.mark.parametrize("dt,op", [("f32", "add"), ("i32", "max"), ("f16", "min"), ("i64", "add"), ("u32", "xor"),
                                   ("f64", "max"), ("i8", "add"), ("i16", "or")])
def test_reduce_1d(n: int, spt: int, warps: int, dt: str, op: str) -> None:
    simt = lower(reduce_1d(n, spt, warps, dt, op))
    if dt.startswith(("i", "u")):
        x = RNG.integers(-30 if dt[0] == "i" else 0, 30, n).astype(NP[dt])
    else:
        x = RNG.standard_normal(n).astype(NP[dt])
    out = np.zeros(1, NP[dt])
    m, d = run(simt, (1,), [x, out])
    got = result(m, d[1], out)[0]
    want = _np_reduce(x, op)
    if dt == "f16" or dt == "f32":
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5, atol=1e-5)
    else:
        assert got == NP[dt](want)


ARGMAX_BODY = """
  %gt = arith.cmp %a, %b {{predicate = "{cmp}"}} : i1
  %eq = arith.cmp %a, %b {{predicate = "eq"}} : i1
  %lt = arith.cmp %ai, %bi {{predicate = "lt"}} : i1
  %tie = arith.and %eq, %lt : i1
  %pick = arith.or %gt, %tie : i1
  %v2 = arith.select %pick, %a, %b : {dt}
  %i2 = arith.select %pick, %ai, %bi : i32
  tt.reduce.return %v2, %i2"""


def argmax_2d(rows: int, cols: int, axis: int, dt: str, cmp: str, spt, tpw, wpc) -> str:
    L = blocked(spt, tpw, wpc)
    S = lambda d: f"#slice<dim = {d}, parent = {L}>"  # noqa: E731
    T = lambda t: f"tensor<{rows}x{cols}x{t}, {L}>"  # noqa: E731
    keep = 1 - axis
    size = (rows, cols)[keep]
    R = lambda t: f"tensor<{size}x{t}, {S(axis)}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32, {S(1)}>
  %c = tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32, {S(0)}>
  %r2 = tt.expand_dims %r {{axis = 1}} : tensor<{rows}x1xi32, {L}>
  %c2 = tt.expand_dims %c {{axis = 0}} : tensor<1x{cols}xi32, {L}>
  %cs = arith.constant {{value = {cols}}} : tensor<{rows}x1xi32, {L}>
  %ro = arith.mul %r2, %cs : tensor<{rows}x1xi32, {L}>
  %rob = tt.broadcast %ro : {T("i32")}
  %cob = tt.broadcast %c2 : {T("i32")}
  %offs = arith.add %rob, %cob : {T("i32")}
  %idx = tt.broadcast %{"c2" if axis == 1 else "r2"} : {T("i32")}
  %xs = tt.splat %x : {T(f"ptr<{dt}>")}
  %xp = tt.addptr %xs, %offs : {T(f"ptr<{dt}>")}
  %v = tt.load %xp : {T(dt)}
  %mv, %mi = tt.reduce %v, %idx {{axis = {axis}, scratch_offset = 0}} : {R(dt)}, {R("i32")} {{
  ^bb(%a: {dt}, %ai: i32, %b: {dt}, %bi: i32):{ARGMAX_BODY.format(cmp=cmp, dt=dt)}
  }}
  %k = tt.arange {{end = {size}, start = 0}} : {R("i32")}
  %vs = tt.splat %vals : {R(f"ptr<{dt}>")}
  %vp = tt.addptr %vs, %k : {R(f"ptr<{dt}>")}
  tt.store %vp, %mv
  %is = tt.splat %inds : {R("ptr<i32>")}
  %ip = tt.addptr %is, %k : {R("ptr<i32>")}
  tt.store %ip, %mi"""
    warps = int(np.prod(wpc))
    return func("argmax", [("x", f"ptr<{dt}>"), ("vals", f"ptr<{dt}>"), ("inds", "ptr<i32>")], body,
                num_warps=warps, shared_bytes=warps * max(rows, cols) * 8)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("spt,tpw,wpc", [([1, 1], [4, 8], [2, 2]), ([1, 4], [8, 4], [4, 1]), ([2, 1], [2, 16], [1, 4])])
@pytest.mark.parametrize("dt,cmp", [("f32", "gt"), ("i32", "lt"), ("f16", "gt")])
def test_argmax_argmin_2d(axis: int, spt, tpw, wpc, dt: str, cmp: str) -> None:
    rows, cols = 16, 32
    simt = lower(argmax_2d(rows, cols, axis, dt, cmp, spt, tpw, wpc))
    x = RNG.integers(-5, 5, (rows, cols)).astype(NP[dt])  # many ties: the lowest index must win
    size = (rows, cols)[1 - axis]
    vals, inds = np.zeros(size, NP[dt]), np.full(size, -1, np.int32)
    m, d = run(simt, (1,), [x, vals, inds])
    want = np.argmax(x, axis) if cmp == "gt" else np.argmin(x, axis)
    np.testing.assert_array_equal(result(m, d[2], inds), want)
    np.testing.assert_array_equal(result(m, d[1], vals), np.take_along_axis(x, np.expand_dims(want, axis), axis)
                                  .squeeze(axis))


def custom_reduce(n: int, warps: int) -> str:
    """Sum of squares and a running (max |x|, count of positives) as one three-operand combine."""
    L = blocked([2], [32], [warps])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %xs = tt.splat %x : {T("ptr<f32>")}
  %xp = tt.addptr %xs, %r : {T("ptr<f32>")}
  %v = tt.load %xp : {T("f32")}
  %sq = arith.mul %v, %v : {T("f32")}
  %av = math.abs %v : {T("f32")}
  %z = arith.constant {{value = 0.0}} : {T("f32")}
  %pos = arith.cmp %v, %z {{predicate = "gt"}} : {T("i1")}
  %s, %m, %p = tt.reduce %sq, %av, %pos {{axis = 0, scratch_offset = 0}} : f32, f32, i1 {{
  ^bb(%a0: f32, %a1: f32, %a2: i1, %b0: f32, %b1: f32, %b2: i1):
    %c0 = arith.add %a0, %b0 : f32
    %c1 = arith.max %a1, %b1 : f32
    %c2 = arith.or %a2, %b2 : i1
    tt.reduce.return %c0, %c1, %c2
  }}
  tt.store %out, %s
  %o1 = tt.addptr %out, %one : ptr<f32>
  tt.store %o1, %m
  tt.store %flag, %p"""
    params = [("x", "ptr<f32>"), ("out", "ptr<f32>"), ("flag", "ptr<i1>"), ("one", "i32")]
    return func("custom", params, body, num_warps=warps, shared_bytes=warps * 12)


@pytest.mark.parametrize("negate", [False, True])
def test_custom_combine_with_three_operands(negate: bool) -> None:
    simt = lower(custom_reduce(512, 4))
    x = RNG.standard_normal(512).astype(np.float32)
    if negate:
        x = -np.abs(x)
    out, flag = np.zeros(2, np.float32), np.full(1, 7, np.uint8)
    m, d = run(simt, (1,), [x, out, flag, 1])
    got = result(m, d[1], out)
    np.testing.assert_allclose(got[0], (x.astype(np.float64) ** 2).sum(), rtol=1e-5)
    assert got[1] == np.abs(x).max()
    assert result(m, d[2], flag)[0] == (0 if negate else 1)


def test_reduce_simt_ir_uses_butterflies_and_one_scratch_round() -> None:
    text = print_op(lower(reduce_1d(1024, 4, 4, "f32", "add")))
    assert text.count('simt.shfl') == 5 and text.count('mode = "bfly"') == 5
    assert text.count("simt.barrier") == 1  # nothing touched shared memory before: no leading barrier
    assert text.count("simt.st_shared") == 1 and text.count("simt.ld_shared") == 4


# ------------------------------------------------------------------------------ scans


def scan_1d(n: int, spt: int, warps: int, reverse: bool, dt: str, op: str) -> str:
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %xs = tt.splat %x : {T(f"ptr<{dt}>")}
  %xp = tt.addptr %xs, %r : {T(f"ptr<{dt}>")}
  %v = tt.load %xp : {T(dt)}
  %s = tt.scan %v {{axis = 0, reverse = {str(reverse).lower()}, scratch_offset = 0}} : {T(dt)} {_combine(dt, op)}
  %os = tt.splat %out : {T(f"ptr<{dt}>")}
  %op = tt.addptr %os, %r : {T(f"ptr<{dt}>")}
  tt.store %op, %s"""
    return func("scan", [("x", f"ptr<{dt}>"), ("out", f"ptr<{dt}>")], body, num_warps=warps, shared_bytes=warps * 8)


def _np_scan(x: np.ndarray, op: str, reverse: bool) -> np.ndarray:
    f = {"add": np.add, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor}[op]
    y = x[::-1] if reverse else x
    out = f.accumulate(y.astype(np.int64) if x.dtype.kind in "iu" else y.astype(np.float64))
    return (out[::-1] if reverse else out).astype(x.dtype)


@settings(max_examples=25, deadline=None)
@given(layout=st.sampled_from([(32, 1, 1), (128, 4, 1), (512, 4, 4), (2048, 4, 4), (64, 1, 4), (4096, 2, 8),
                               (16, 1, 1), (256, 8, 1), (8, 1, 2)]),
       reverse=st.booleans(), kind=st.sampled_from([("i32", "add"), ("f32", "max"), ("i64", "xor"), ("i32", "min")]),
       seed=st.integers(0, 2 ** 16))
def test_scan_1d(layout, reverse: bool, kind, seed: int) -> None:
    n, spt, warps = layout
    dt, op = kind
    simt = lower(scan_1d(n, spt, warps, reverse, dt, op))
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, n).astype(NP[dt]) if dt[0] == "i" else rng.standard_normal(n).astype(NP[dt])
    out = np.zeros(n, NP[dt])
    m, d = run(simt, (1,), [x, out])
    np.testing.assert_array_equal(result(m, d[1], out), _np_scan(x, op, reverse))


def linear_recurrence_scan(n: int, warps: int, reverse: bool) -> str:
    """h_t = a_t * h_{t-1} + b_t as a scan over pairs: associative, not commutative."""
    L = blocked([2], [32], [warps])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %as = tt.splat %a : {T("ptr<f64>")}
  %ap = tt.addptr %as, %r : {T("ptr<f64>")}
  %av = tt.load %ap : {T("f64")}
  %bs = tt.splat %b : {T("ptr<f64>")}
  %bp = tt.addptr %bs, %r : {T("ptr<f64>")}
  %bv = tt.load %bp : {T("f64")}
  %sa, %sb = tt.scan %av, %bv {{axis = 0, reverse = {str(reverse).lower()}, scratch_offset = 0}}
      : {T("f64")}, {T("f64")} {{
  ^bb(%a1: f64, %b1: f64, %a2: f64, %b2: f64):
    %a3 = arith.mul %a1, %a2 : f64
    %t = arith.mul %a2, %b1 : f64
    %b3 = arith.add %t, %b2 : f64
    tt.reduce.return %a3, %b3
  }}
  %os = tt.splat %out : {T("ptr<f64>")}
  %op = tt.addptr %os, %r : {T("ptr<f64>")}
  tt.store %op, %sb"""
    return func("recurrence", [("a", "ptr<f64>"), ("b", "ptr<f64>"), ("out", "ptr<f64>")], body, num_warps=warps,
                shared_bytes=warps * 16)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_keeps_the_order_of_a_non_commutative_combine(reverse: bool) -> None:
    n = 512
    simt = lower(linear_recurrence_scan(n, 4, reverse))
    a = RNG.uniform(0.5, 1.0, n)
    b = RNG.standard_normal(n)
    out = np.zeros(n)
    m, d = run(simt, (1,), [a, b, out])
    h, want = 0.0, np.zeros(n)
    order = range(n - 1, -1, -1) if reverse else range(n)
    for t in order:
        h = a[t] * h + b[t]
        want[t] = h
    np.testing.assert_allclose(result(m, d[2], out), want, rtol=1e-12, atol=1e-12)


def scan_2d(rows: int, cols: int, axis: int, spt, tpw, wpc) -> str:
    L = blocked(spt, tpw, wpc)
    S1, S0 = f"#slice<dim = 1, parent = {L}>", f"#slice<dim = 0, parent = {L}>"
    T = lambda t: f"tensor<{rows}x{cols}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32, {S1}>
  %c = tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32, {S0}>
  %r2 = tt.expand_dims %r {{axis = 1}} : tensor<{rows}x1xi32, {L}>
  %c2 = tt.expand_dims %c {{axis = 0}} : tensor<1x{cols}xi32, {L}>
  %cs = arith.constant {{value = {cols}}} : tensor<{rows}x1xi32, {L}>
  %ro = arith.mul %r2, %cs : tensor<{rows}x1xi32, {L}>
  %rob = tt.broadcast %ro : {T("i32")}
  %cob = tt.broadcast %c2 : {T("i32")}
  %offs = arith.add %rob, %cob : {T("i32")}
  %xs = tt.splat %x : {T("ptr<i32>")}
  %xp = tt.addptr %xs, %offs : {T("ptr<i32>")}
  %v = tt.load %xp : {T("i32")}
  %s = tt.scan %v {{axis = {axis}, reverse = false, scratch_offset = 0}} : {T("i32")} {_combine("i32", "add")}
  %os = tt.splat %out : {T("ptr<i32>")}
  %op = tt.addptr %os, %offs : {T("ptr<i32>")}
  tt.store %op, %s"""
    warps = int(np.prod(wpc))
    return func("scan2d", [("x", "ptr<i32>"), ("out", "ptr<i32>")], body, num_warps=warps,
                shared_bytes=warps * max(rows, cols) * 4)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("spt,tpw,wpc", [([1, 1], [4, 8], [2, 2]), ([1, 4], [8, 4], [4, 1]), ([2, 2], [2, 16], [2, 2])])
def test_scan_2d(axis: int, spt, tpw, wpc) -> None:
    simt = lower(scan_2d(16, 64, axis, spt, tpw, wpc))
    x = RNG.integers(-50, 50, (16, 64)).astype(np.int32)
    out = np.zeros_like(x)
    m, d = run(simt, (1,), [x, out])
    np.testing.assert_array_equal(result(m, d[1], out), np.cumsum(x, axis=axis).astype(np.int32))


@needs_ptxas
def test_reductions_and_scans_assemble() -> None:
    for text in (reduce_1d(1024, 4, 4, "f16", "max"), reduce_1d(256, 1, 8, "i64", "add"),
                 argmax_2d(16, 32, 1, "f32", "gt", [1, 1], [4, 8], [2, 2]), custom_reduce(512, 4),
                 scan_1d(2048, 4, 4, True, "f32", "add"), linear_recurrence_scan(512, 4, False),
                 scan_2d(16, 64, 0, [1, 1], [4, 8], [2, 2])):
        check_ptx(lower(text))
