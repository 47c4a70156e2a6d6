"""Whole kernels in gpu IR, lowered to simt IR: run on tile.emulator against NumPy, and
assembled by ptxas for sm_80, sm_90 and sm_90a (vector add, softmax, layer norm, 2-D tiles,
loops and branches)."""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import blocked, check_ptx, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.codegen.ptx import emit_ptx
from tile.ir import print_op

RNG = np.random.default_rng(0)


def vector_add(n_block: int, spt: int, warps: int, dtype: str = "f32", vector: int = 4) -> str:
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n_block}x{t}, {L}>"  # noqa: E731
    body = f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %cb = arith.constant {{value = {n_block}}} : i32
  %base = arith.mul %pid, %cb : i32
  %r = tt.arange {{end = {n_block}, start = 0}} : {T("i32")}
  %bs = tt.splat %base : {T("i32")}
  %offs = arith.add %bs, %r : {T("i32")}
  %ns = tt.splat %n : {T("i32")}
  %mask = arith.cmp %offs, %ns {{predicate = "lt"}} : {T("i1")}
  %xs = tt.splat %x : {T(f"ptr<{dtype}>")}
  %xp = tt.addptr %xs, %offs : {T(f"ptr<{dtype}>")}
  %a = tt.load %xp, %mask {{vector = {vector}}} : {T(dtype)}
  %ys = tt.splat %y : {T(f"ptr<{dtype}>")}
  %yp = tt.addptr %ys, %offs : {T(f"ptr<{dtype}>")}
  %b = tt.load %yp, %mask {{vector = {vector}}} : {T(dtype)}
  %s = arith.add %a, %b : {T(dtype)}
  %os = tt.splat %out : {T(f"ptr<{dtype}>")}
  %op = tt.addptr %os, %offs : {T(f"ptr<{dtype}>")}
  tt.store %op, %s, %mask {{vector = {vector}}}"""
    params = [("x", f"ptr<{dtype}>"), ("y", f"ptr<{dtype}>"), ("out", f"ptr<{dtype}>"), ("n", "i32")]
    return func("add", params, body, num_warps=warps)


def _reduce(name: str, value: str, op: str, scalar: str = "f32") -> str:
    return f"""  %{name} = tt.reduce %{value} {{axis = 0, scratch_offset = 0}} : {scalar} {{
  ^bb(%a: {scalar}, %b: {scalar}):
    %c = arith.{op} %a, %b : {scalar}
    tt.reduce.return %c
  }}"""


def softmax(n_block: int, warps: int) -> str:
    spt = max(1, min(4, n_block // (32 * warps)))
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n_block}x{t}, {L}>"  # noqa: E731
    body = f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %rowoff = arith.mul %pid, %stride : i32
  %xrow = tt.addptr %x, %rowoff : ptr<f32>
  %r = tt.arange {{end = {n_block}, start = 0}} : {T("i32")}
  %ns = tt.splat %n : {T("i32")}
  %mask = arith.cmp %r, %ns {{predicate = "lt"}} : {T("i1")}
  %xs = tt.splat %xrow : {T("ptr<f32>")}
  %xp = tt.addptr %xs, %r : {T("ptr<f32>")}
  %ninf = arith.constant {{value = -inf}} : {T("f32")}
  %v = tt.load %xp, %mask, %ninf {{vector = 4}} : {T("f32")}
{_reduce("m", "v", "max")}
  %ms = tt.splat %m : {T("f32")}
  %d = arith.sub %v, %ms : {T("f32")}
  %e = math.exp %d : {T("f32")}
{_reduce("s", "e", "add")}
  %ss = tt.splat %s : {T("f32")}
  %y = arith.div %e, %ss : {T("f32")}
  %orow = tt.addptr %out, %rowoff : ptr<f32>
  %os = tt.splat %orow : {T("ptr<f32>")}
  %op = tt.addptr %os, %r : {T("ptr<f32>")}
  tt.store %op, %y, %mask {{vector = 4}}"""
    params = [("x", "ptr<f32>"), ("out", "ptr<f32>"), ("stride", "i32"), ("n", "i32")]
    return func("softmax", params, body, num_warps=warps, shared_bytes=4 * warps)


def layer_norm(n_block: int, warps: int) -> str:
    spt = max(1, min(8, n_block // (32 * warps)))
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n_block}x{t}, {L}>"  # noqa: E731
    body = f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %row = arith.mul %pid, %stride : i32
  %r = tt.arange {{end = {n_block}, start = 0}} : {T("i32")}
  %ns = tt.splat %n : {T("i32")}
  %mask = arith.cmp %r, %ns {{predicate = "lt"}} : {T("i1")}
  %xrow = tt.addptr %x, %row : ptr<f16>
  %xs = tt.splat %xrow : {T("ptr<f16>")}
  %xp = tt.addptr %xs, %r : {T("ptr<f16>")}
  %zh = arith.constant {{value = 0.0}} : {T("f16")}
  %xh = tt.load %xp, %mask, %zh {{vector = 8}} : {T("f16")}
  %xf = arith.cast %xh : {T("f32")}
{_reduce("sum", "xf", "add")}
  %nf = arith.cast %n : f32
  %mean = arith.div %sum, %nf : f32
  %means = tt.splat %mean : {T("f32")}
  %xc0 = arith.sub %xf, %means : {T("f32")}
  %zf = arith.constant {{value = 0.0}} : {T("f32")}
  %xc = arith.select %mask, %xc0, %zf : {T("f32")}
  %sq = arith.mul %xc, %xc : {T("f32")}
{_reduce("ssq", "sq", "add")}
  %var = arith.div %ssq, %nf : f32
  %eps = arith.constant {{value = 1e-05}} : f32
  %ve = arith.add %var, %eps : f32
  %rstd = math.rsqrt %ve : f32
  %rs = tt.splat %rstd : {T("f32")}
  %ws = tt.splat %w : {T("ptr<f16>")}
  %wp = tt.addptr %ws, %r : {T("ptr<f16>")}
  %wh = tt.load %wp, %mask {{vector = 8}} : {T("f16")}
  %bs = tt.splat %b : {T("ptr<f16>")}
  %bp = tt.addptr %bs, %r : {T("ptr<f16>")}
  %bh = tt.load %bp, %mask {{vector = 8}} : {T("f16")}
  %wf = arith.cast %wh : {T("f32")}
  %bf = arith.cast %bh : {T("f32")}
  %y0 = arith.mul %xc, %rs : {T("f32")}
  %y1 = math.fma %y0, %wf, %bf : {T("f32")}
  %yh = arith.cast %y1 : {T("f16")}
  %yrow = tt.addptr %y, %row : ptr<f16>
  %ys = tt.splat %yrow : {T("ptr<f16>")}
  %yp = tt.addptr %ys, %r : {T("ptr<f16>")}
  tt.store %yp, %yh, %mask {{vector = 8}}
  %mp = tt.addptr %mean_ptr, %pid : ptr<f32>
  tt.store %mp, %mean
  %rp = tt.addptr %rstd_ptr, %pid : ptr<f32>
  tt.store %rp, %rstd"""
    params = [("x", "ptr<f16>"), ("y", "ptr<f16>"), ("w", "ptr<f16>"), ("b", "ptr<f16>"), ("mean_ptr", "ptr<f32>"),
              ("rstd_ptr", "ptr<f32>"), ("stride", "i32"), ("n", "i32")]
    return func("layer_norm", params, body, num_warps=warps, shared_bytes=4 * warps)


# ------------------------------------------------------------------------------ IR text in, IR text out

ROWSUM_L = blocked([4], [32], [1])
ROWSUM = func("rowsum", [("x", "ptr<f32>"), ("out", "ptr<f32>"), ("n", "i32")], f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %c = arith.constant {{value = 256}} : i32
  %base = arith.mul %pid, %c : i32
  %r = tt.arange {{end = 256, start = 0}} : tensor<256xi32, {ROWSUM_L}>
  %bs = tt.splat %base : tensor<256xi32, {ROWSUM_L}>
  %offs = arith.add %bs, %r : tensor<256xi32, {ROWSUM_L}>
  %ns = tt.splat %n : tensor<256xi32, {ROWSUM_L}>
  %mask = arith.cmp %offs, %ns {{predicate = "lt"}} : tensor<256xi1, {ROWSUM_L}>
  %xs = tt.splat %x : tensor<256xptr<f32>, {ROWSUM_L}>
  %xp = tt.addptr %xs, %offs : tensor<256xptr<f32>, {ROWSUM_L}>
  %v = tt.load %xp, %mask {{vector = 4}} : tensor<256xf32, {ROWSUM_L}>
  %s = tt.reduce %v {{axis = 0}} : f32 {{
  ^bb(%a: f32, %b: f32):
    %t = arith.add %a, %b : f32
    tt.reduce.return %t
  }}
  tt.store %out, %s""", num_warps=1)

ROWSUM_SIMT = """\
simt.func {arg_names = ["x", "out", "n"], num_warps = 1, shared_bytes = 0, sym_name = "rowsum", target = "sm_90a"} {
^bb(%x: ptr<f32>, %out: ptr<f32>, %n: i32):
  %0 = simt.ctaid {axis = 0} : i32
  %1 = arith.constant {value = 256} : i32
  %2 = arith.mul %0, %1 : i32
  %3 = simt.tid : i32
  %4 = arith.constant {value = 2} : i32
  %5 = arith.shl %3, %4 : i32
  %6 = arith.add %2, %5 : i32
  %7 = arith.cmp %6, %n {predicate = "lt"} : i1
  %8 = simt.addptr %x, %6 {scale = 4} : ptr<f32>
  %9, %10, %11, %12 = simt.ld_global %8, %7 {offset = 0, vector = 4} : f32, f32, f32, f32
  %13 = arith.constant {value = 128} : i32
  %14 = arith.add %6, %13 : i32
  %15 = arith.cmp %14, %n {predicate = "lt"} : i1
  %16, %17, %18, %19 = simt.ld_global %8, %15 {offset = 512, vector = 4} : f32, f32, f32, f32
  %20 = arith.constant {value = 0} : i32
  %21 = arith.constant {value = 1} : i32
  %22 = arith.constant {value = 4} : i32
  %23 = arith.constant {value = 8} : i32
  %24 = arith.constant {value = 16} : i32
  %25 = arith.constant {value = 31} : i32
  %26 = arith.and %3, %25 : i32
  %27 = arith.cmp %26, %20 {predicate = "eq"} : i1
  %28 = arith.add %9, %10 : f32
  %29 = arith.add %28, %11 : f32
  %30 = arith.add %29, %12 : f32
  %31 = arith.add %30, %16 : f32
  %32 = arith.add %31, %17 : f32
  %33 = arith.add %32, %18 : f32
  %34 = arith.add %33, %19 : f32
  %35 = simt.shfl %34, %21 {mode = "bfly"} : f32
  %36 = arith.add %34, %35 : f32
  %37 = simt.shfl %36, %4 {mode = "bfly"} : f32
  %38 = arith.add %36, %37 : f32
  %39 = simt.shfl %38, %22 {mode = "bfly"} : f32
  %40 = arith.add %38, %39 : f32
  %41 = simt.shfl %40, %23 {mode = "bfly"} : f32
  %42 = arith.add %40, %41 : f32
  %43 = simt.shfl %42, %24 {mode = "bfly"} : f32
  %44 = arith.add %42, %43 : f32
  simt.st_global %out, %27, %44 {offset = 0, vector = 1}
  simt.return
}"""


def test_lowering_ir_text() -> None:
    """One warp: 2 vectors of 4 per thread at base + 0 / + 512 bytes, 5 butterfly steps, the
    scalar result stored by lane 0 only; thread-invariant values sit at the top, the loads as
    early as their addresses allow (issue_loads_early)."""
    assert print_op(lower(ROWSUM)) == ROWSUM_SIMT


# ------------------------------------------------------------------------------ vector add


def test_vector_add_simt_ir() -> None:
    text = print_op(lower(vector_add(1024, 4, 4)))
    # one address per input and per thread, the second vector of 4 at an immediate offset
    assert text.count("simt.addptr") == 3
    assert text.count("{offset = 0, vector = 4}") == 3 and text.count("{offset = 2048, vector = 4}") == 3
    assert text.count("simt.ld_global") == 4 and text.count("simt.st_global") == 2
    assert "arith.cmp" in text and text.count("arith.cmp") == 2  # masks of the first element of each vector


@pytest.mark.parametrize("n_block,spt,warps,dtype,vector", [
    (1024, 4, 4, "f32", 4), (256, 1, 8, "f32", 1), (2048, 8, 4, "f16", 8), (512, 2, 4, "f64", 2),
    (4096, 16, 4, "i8", 16), (64, 1, 4, "i32", 1), (512, 4, 4, "bf16", 4), (1024, 8, 4, "u8", 4)])
def test_vector_add_runs(n_block: int, spt: int, warps: int, dtype: str, vector: int) -> None:
    simt = lower(vector_add(n_block, spt, warps, dtype, vector))
    n = 3 * n_block - 2 * max(vector, 1) * 8
    np_t = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "i32": np.int32,
            "u8": np.uint8, "bf16": np.uint16}[dtype]
    if dtype == "bf16":  # bf16 bit patterns of small integers, so that sums are exact
        x, y = ((RNG.integers(-64, 64, n + 64).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
                for _ in range(2))
    elif dtype in ("i8", "u8", "i32"):
        x, y = (RNG.integers(0 if dtype == "u8" else -60, 60, n + 64).astype(np_t) for _ in range(2))
    else:
        x, y = (RNG.standard_normal(n + 64).astype(np_t) for _ in range(2))
    out = np.full(n + 64, 0x5A if dtype in ("i8", "u8") else 7, dtype=np_t)
    m, d = run(simt, (3,), [x, y, out, n])
    got = result(m, d[2], out)
    if dtype == "bf16":
        f = lambda a: (a.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
        np.testing.assert_array_equal(f(got[:n]), f(x[:n]) + f(y[:n]))
    else:
        np.testing.assert_array_equal(got[:n], (x[:n] + y[:n]).astype(np_t))
    assert (got[n:] == out[n:]).all()  # masked elements untouched


@needs_ptxas
def test_vector_add_assembles_without_spills() -> None:
    info = check_ptx(lower(vector_add(1024, 4, 4)))
    assert all(i.spill_stores == 0 and i.registers <= 40 for i in info.values())
    ptx = emit_ptx(lower(vector_add(1024, 4, 4)))
    assert ptx.count("ld.global.v4.f32") == 4 and ptx.count("st.global.v4.f32") == 2
    assert "[%rd4+2048]" in ptx.replace("%rd6+2048", "%rd4+2048")


# ------------------------------------------------------------------------------ softmax, layer norm


@pytest.mark.parametrize("n_block,warps", [(1024, 4), (4096, 8), (512, 16), (128, 4)])
def test_softmax_runs(n_block: int, warps: int) -> None:
    simt = lower(softmax(n_block, warps))
    rows, n = 3, n_block - 8
    x = (RNG.standard_normal((rows, n_block)) * 3).astype(np.float32)
    out = np.full((rows, n_block), np.nan, np.float32)
    m, d = run(simt, (rows,), [x, out, n_block, n])
    got = result(m, d[1], out)
    xx = x[:, :n].astype(np.float64)
    e = np.exp(xx - xx.max(1, keepdims=True))
    np.testing.assert_allclose(got[:, :n], e / e.sum(1, keepdims=True), rtol=2e-5, atol=1e-7)
    assert np.isnan(got[:, n:]).all()


@needs_ptxas
@pytest.mark.parametrize("n_block,warps", [(1024, 4), (4096, 8), (16384, 16)])
def test_softmax_assembles(n_block: int, warps: int) -> None:
    info = check_ptx(lower(softmax(n_block, warps)))
    assert all(i.spill_stores == 0 for i in info.values())
    ptx = emit_ptx(lower(softmax(n_block, warps)))
    assert "ex2.approx.ftz.f32" in ptx and "shfl.sync.bfly.b32" in ptx and "ld.global.v4.f32" in ptx


@pytest.mark.parametrize("n_block,warps", [(1024, 4), (256, 1), (2048, 8)])
def test_layer_norm_f16_runs(n_block: int, warps: int) -> None:
    simt = lower(layer_norm(n_block, warps))
    rows, n = 2, n_block - 16
    x = (RNG.standard_normal((rows, n_block)) * 2 + 1).astype(np.float16)
    w = RNG.standard_normal(n_block).astype(np.float16)
    b = RNG.standard_normal(n_block).astype(np.float16)
    y = np.full((rows, n_block), np.nan, np.float16)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    m, d = run(simt, (rows,), [x, y, w, b, mean, rstd, n_block, n])
    xx = x[:, :n].astype(np.float64)
    mu = xx.mean(1, keepdims=True)
    var = ((xx - mu) ** 2).mean(1, keepdims=True)
    ref = (xx - mu) / np.sqrt(var + 1e-5) * w[:n] + b[:n]
    got = result(m, d[1], y).astype(np.float64)
    np.testing.assert_allclose(got[:, :n], ref, rtol=2e-3, atol=4e-3)
    assert np.isnan(got[:, n:]).all()
    np.testing.assert_allclose(result(m, d[4], mean), mu[:, 0], rtol=1e-5)
    np.testing.assert_allclose(result(m, d[5], rstd), 1 / np.sqrt(var[:, 0] + 1e-5), rtol=1e-5)


@needs_ptxas
def test_layer_norm_assembles_with_16_byte_accesses() -> None:
    info = check_ptx(lower(layer_norm(1024, 4)))
    assert all(i.spill_stores == 0 for i in info.values())
    ptx = emit_ptx(lower(layer_norm(1024, 4)))
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx and "cvt.rn.f16.f32" in ptx


# ------------------------------------------------------------------------------ 2-D tiles


def tile_2d(rows: int, cols: int, spt, tpw, wpc, order=(1, 0)) -> str:
    L = blocked(spt, tpw, wpc, order)
    S1, S0 = f"#slice<dim = 1, parent = {L}>", f"#slice<dim = 0, parent = {L}>"
    T = lambda t, s=f"{rows}x{cols}": f"tensor<{s}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32, {S1}>
  %c = tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32, {S0}>
  %r2 = tt.expand_dims %r {{axis = 1}} : {T("i32", f"{rows}x1")}
  %c2 = tt.expand_dims %c {{axis = 0}} : {T("i32", f"1x{cols}")}
  %st = tt.splat %stride : {T("i32", f"{rows}x1")}
  %ro = arith.mul %r2, %st : {T("i32", f"{rows}x1")}
  %rob = tt.broadcast %ro : {T("i32")}
  %cob = tt.broadcast %c2 : {T("i32")}
  %offs = arith.add %rob, %cob : {T("i32")}
  %xs = tt.splat %x : {T("ptr<f32>")}
  %xp = tt.addptr %xs, %offs : {T("ptr<f32>")}
  %v = tt.load %xp {{vector = {spt[1] if order[0] == 1 else 1}}} : {T("f32")}
  %s1 = tt.reduce %v {{axis = 1, scratch_offset = 0}} : tensor<{rows}xf32, {S1}> {{
  ^bb(%a: f32, %b: f32):
    %cc = arith.add %a, %b : f32
    tt.reduce.return %cc
  }}
  %os1 = tt.splat %out1 : tensor<{rows}xptr<f32>, {S1}>
  %op1 = tt.addptr %os1, %r : tensor<{rows}xptr<f32>, {S1}>
  tt.store %op1, %s1
  %s0 = tt.reduce %v {{axis = 0, scratch_offset = 0}} : tensor<{cols}xf32, {S0}> {{
  ^bb(%a: f32, %b: f32):
    %cc = arith.max %a, %b : f32
    tt.reduce.return %cc
  }}
  %os0 = tt.splat %out0 : tensor<{cols}xptr<f32>, {S0}>
  %op0 = tt.addptr %os0, %c : tensor<{cols}xptr<f32>, {S0}>
  tt.store %op0, %s0
  %two = arith.constant {{value = 2.0}} : {T("f32")}
  %v2 = arith.mul %v, %two : {T("f32")}
  %ys = tt.splat %y : {T("ptr<f32>")}
  %yp = tt.addptr %ys, %offs : {T("ptr<f32>")}
  tt.store %yp, %v2 {{vector = {spt[1] if order[0] == 1 else 1}}}"""
    params = [("x", "ptr<f32>"), ("y", "ptr<f32>"), ("out1", "ptr<f32>"), ("out0", "ptr<f32>"), ("stride", "i32")]
    warps = int(np.prod(wpc))
    return func("tile2d", params, body, num_warps=warps, shared_bytes=warps * max(rows, cols) * 4)


TILES = [(32, 64, [1, 4], [4, 8], [4, 1], (1, 0)), (64, 32, [4, 1], [8, 4], [1, 4], (0, 1)),
         (16, 16, [1, 1], [4, 8], [2, 2], (1, 0)), (8, 128, [1, 4], [1, 32], [2, 2], (1, 0)),
         (4, 8, [1, 1], [2, 16], [4, 1], (1, 0))]


@pytest.mark.parametrize("rows,cols,spt,tpw,wpc,order", TILES)
def test_2d_tile_runs(rows, cols, spt, tpw, wpc, order) -> None:
    simt = lower(tile_2d(rows, cols, spt, tpw, wpc, order))
    stride = cols + 8
    x = RNG.standard_normal((rows, stride)).astype(np.float32)
    y = np.full((rows, stride), np.nan, np.float32)
    o1, o0 = np.full(rows, np.nan, np.float32), np.full(cols, np.nan, np.float32)
    m, d = run(simt, (1,), [x, y, o1, o0, stride])
    np.testing.assert_allclose(result(m, d[2], o1), x[:, :cols].sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(result(m, d[3], o0), x[:, :cols].max(0))
    got = result(m, d[1], y)
    np.testing.assert_array_equal(got[:, :cols], 2 * x[:, :cols])
    assert np.isnan(got[:, cols:]).all()


@needs_ptxas
def test_2d_tile_assembles() -> None:
    check_ptx(lower(tile_2d(*TILES[0])))


# ------------------------------------------------------------------------------ loops and branches


def control_flow(n_block: int, warps: int) -> str:
    L = blocked([2], [32], [warps])
    T = lambda t: f"tensor<{n_block}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n_block}, start = 0}} : {T("i32")}
  %zero = arith.constant {{value = 0.0}} : {T("f32")}
  %c0 = arith.constant {{value = 0}} : i32
  %c1 = arith.constant {{value = 1}} : i32
  %cn = arith.constant {{value = {n_block}}} : i32
  %ns = tt.splat %n : {T("i32")}
  %xs = tt.splat %x : {T("ptr<f32>")}
  %acc, %cnt = scf.for %c0, %nb, %c1, %zero, %c0 : {T("f32")}, i32 {{
  ^bb(%i: i32, %a: {T("f32")}, %k: i32):
    %base = arith.mul %i, %cn : i32
    %bs = tt.splat %base : {T("i32")}
    %offs = arith.add %bs, %r : {T("i32")}
    %mask = arith.cmp %offs, %ns {{predicate = "lt"}} : {T("i1")}
    %xp = tt.addptr %xs, %offs : {T("ptr<f32>")}
    %v = tt.load %xp, %mask, %zero : {T("f32")}
    %a2 = arith.add %a, %v : {T("f32")}
    %k2 = arith.add %k, %c1 : i32
    scf.yield %a2, %k2
  }}
{_reduce("s", "acc", "add")}
  %zf = arith.constant {{value = 0.0}} : f32
  %pos = arith.cmp %s, %zf {{predicate = "gt"}} : i1
  %res = scf.if %pos : f32 {{
    %t = arith.mul %s, %s : f32
    scf.yield %t
  }} {{
    %t2 = arith.neg %s : f32
    scf.yield %t2
  }}
  tt.store %out, %res
  %steps, %val = scf.while %c0, %c1 : i32, i32 {{
  ^bb(%k0: i32, %v0: i32):
    %go = arith.cmp %v0, %limit {{predicate = "lt"}} : i1
    scf.condition %go, %k0, %v0
  }} {{
  ^bb(%k1: i32, %v1: i32):
    %k3 = arith.add %k1, %c1 : i32
    %v3 = arith.add %v1, %v1 : i32
    scf.yield %k3, %v3
  }}
  %total = arith.add %steps, %cnt : i32
  tt.store %count, %total"""
    params = [("x", "ptr<f32>"), ("out", "ptr<f32>"), ("count", "ptr<i32>"), ("n", "i32"), ("nb", "i32"),
              ("limit", "i32")]
    return func("control", params, body, num_warps=warps, shared_bytes=4 * warps)


@pytest.mark.parametrize("n,nb,limit", [(1000, 4, 100), (10, 1, 1), (0, 0, 2)])
def test_loops_and_branches_run(n: int, nb: int, limit: int) -> None:
    simt = lower(control_flow(256, 2))
    x = RNG.standard_normal(1024).astype(np.float32)
    out, count = np.zeros(1, np.float32), np.zeros(1, np.int32)
    m, d = run(simt, (1,), [x, out, count, n, nb, limit])
    s = x[:min(n, nb * 256)].astype(np.float64).sum()
    np.testing.assert_allclose(result(m, d[1], out)[0], s * s if s > 0 else -s, rtol=1e-5, atol=1e-6)
    steps = 0
    v = 1
    while v < limit:
        steps, v = steps + 1, 2 * v
    assert result(m, d[2], count)[0] == steps + nb


@needs_ptxas
def test_loops_and_branches_assemble() -> None:
    check_ptx(lower(control_flow(256, 2)))
