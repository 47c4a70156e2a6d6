"""Memory ops lowered to simt IR: atomics of every kind, shared-memory buffers and register-level
layout changes (convert_layout, trans, reshape), bool and scalar loads and stores, cache hints."""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import blocked, check_ptx, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.codegen.ptx import emit_ptx
from tile.emulator import EmulatorError
from tile.ir.layouts import BlockedLayout, LinearLayout, trans_layout, reshape_layout

RNG = np.random.default_rng(2)
NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
      "f16": np.float16, "i16": np.int16}


def atomic_kernel(n: int, warps: int, spt: int, dt: str, kind: str, used: bool, sem: str = "acq_rel",
                  target: str = "sm_90a") -> str:
    L = blocked([spt], [32], [warps])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    P = f"ptr<{dt}>"
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %ns = tt.splat %n : {T("i32")}
  %mask = arith.cmp %r, %ns {{predicate = "lt"}} : {T("i1")}
  %vs = tt.splat %v : {T(P)}
  %vp = tt.addptr %vs, %r : {T(P)}
  %val = tt.load %vp : {T(dt)}
  %c4 = arith.constant {{value = 4}} : {T("i32")}
  %slot = arith.rem %r, %c4 : {T("i32")}
  %as = tt.splat %acc : {T(P)}
  %ap = tt.addptr %as, %slot : {T(P)}
  %old = tt.atomic_rmw %ap, %val, %mask {{kind = "{kind}", scope = "gpu", sem = "{sem}"}} : {T(dt)}"""
    if used:
        body += f"""
  %os = tt.splat %out : {T(P)}
  %op = tt.addptr %os, %r : {T(P)}
  tt.store %op, %old, %mask"""
    return func("atomic", [("v", P), ("acc", P), ("out", P), ("n", "i32")], body, num_warps=warps, target=target)


def _apply(kind: str, a, b):
    return {"add": lambda: a + b, "max": lambda: max(a, b), "min": lambda: min(a, b), "and": lambda: a & b,
            "or": lambda: a | b, "xor": lambda: a ^ b, "xchg": lambda: b}[kind]()


def _check_atomics(kind: str, dt: str, v: np.ndarray, acc0: np.ndarray, acc: np.ndarray, old, n: int) -> None:
    """Final values, and old values that form a valid serialization of each slot's updates."""
    for slot in range(4):
        idx = [i for i in range(n) if i % 4 == slot]
        if old is None:
            cur = acc0[slot].item()
            for i in idx:
                cur = _apply(kind, cur, v[i].item())
            if dt in ("f32", "f64", "f16"):
                np.testing.assert_allclose(float(acc[slot]), cur, rtol=2e-2 if dt == "f16" else 1e-5, atol=1e-3)
            else:
                assert acc[slot] == NP[dt](cur)
            continue
        # replay in the order the old values imply: each update saw the value the previous left
        seen = {i: old[i].item() for i in idx}
        cur, pending = acc0[slot].item(), set(idx)
        while pending:
            nxt = [i for i in pending if seen[i] == NP[dt](cur)]
            assert nxt, f"old values of slot {slot} are not a serialization"
            keep = [i for i in nxt if NP[dt](_apply(kind, cur, v[i].item())) == NP[dt](cur)]
            i = min(keep or nxt)  # updates that leave the value alone go first
            cur = NP[dt](_apply(kind, cur, v[i].item())).item()
            pending.remove(i)
        assert acc[slot] == NP[dt](cur)


KINDS = {"f32": ("add", "max", "min", "xchg"), "f64": ("add", "max", "min"), "i32": ("add", "max", "min", "and",
         "or", "xor", "xchg"), "u32": ("max", "min", "add"), "i64": ("add", "max", "xor", "xchg"),
         "u64": ("min", "or"), "f16": ("add", "max", "min", "xchg"), "i16": ("add", "max", "or")}


@pytest.mark.parametrize("dt,kind", [(dt, k) for dt, ks in KINDS.items() for k in ks])
@pytest.mark.parametrize("used", [True, False])
def test_atomics(dt: str, kind: str, used: bool) -> None:
    n_block, n = 128, 125
    simt = lower(atomic_kernel(n_block, 4, 1, dt, kind, used))
    if dt[0] == "f":  # integral values keep float sums exact whatever the order
        v = RNG.integers(-40, 40, n_block).astype(NP[dt])
        acc0 = np.array([3, -7, 11, 0.5]).astype(NP[dt])
    else:
        lo = 0 if dt[0] == "u" else -40
        v = RNG.integers(lo, 40, n_block).astype(NP[dt])
        acc0 = np.array([3, 7, 11, 0]).astype(NP[dt])
    out = np.zeros(n_block, NP[dt])
    m, d = run(simt, (1,), [v, acc0.copy(), out, n])
    _check_atomics(kind, dt, v, acc0, result(m, d[1], acc0), result(m, d[2], out) if used else None, n)


def test_float_max_handles_signs_and_zeros() -> None:
    simt = lower(atomic_kernel(128, 4, 1, "f32", "max", True))
    v = np.array([-0.0, -1.0, -5.0, 2.0] * 32, np.float32)
    acc0 = np.array([-3.0, -0.5, -7.0, 1.0], np.float32)
    out = np.zeros(128, np.float32)
    m, d = run(simt, (1,), [v, acc0.copy(), out, 128])
    np.testing.assert_array_equal(result(m, d[1], acc0), [0.0, -0.5, -5.0, 2.0])
    assert np.signbit(result(m, d[1], acc0)[0])  # max(-3, -0.0) = -0.0


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_bf16_atomic_add_and_max(target: str) -> None:
    for kind in ("add", "max"):
        simt = lower(atomic_kernel(128, 4, 1, "bf16", kind, True, target=target))
        f = lambda a: (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
        g = lambda b: (b.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
        vals = RNG.integers(-20, 20, 128).astype(np.float32)
        acc0 = f([1.0, 2.0, -3.0, 4.0])
        m, d = run(simt, (1,), [f(vals), acc0.copy(), np.zeros(128, np.uint16), 128])
        want = [(vals[s::4].sum() if kind == "add" else max(vals[s::4].max(), g(acc0)[s])) +
                (g(acc0)[s] if kind == "add" else 0) for s in range(4)]
        np.testing.assert_array_equal(g(result(m, d[1], acc0)), want)
        ptx = emit_ptx(simt, target=target)
        assert ("atom.global.acq_rel.gpu.cas.b16" in ptx) == (kind == "max" or target == "sm_80")


def replicated_atomic_kernel(warps: int) -> str:
    """A scalar atomic and a tensor atomic whose elements are held by several threads."""
    L = blocked([1], [32], [warps])
    T = lambda t: f"tensor<16x{t}, {L}>"  # noqa: E731
    body = f"""
  %one = arith.constant {{value = 1}} : i32
  %ticket = tt.atomic_rmw %counter, %one {{kind = "add", scope = "gpu", sem = "acq_rel"}} : i32
  %pid = tt.program_id {{axis = 0}} : i32
  %tp = tt.addptr %tickets, %pid : ptr<i32>
  tt.store %tp, %ticket
  %r = tt.arange {{end = 16, start = 0}} : {T("i32")}
  %ones = arith.constant {{value = 1}} : {T("i32")}
  %hs = tt.splat %hist : {T("ptr<i32>")}
  %hp = tt.addptr %hs, %r : {T("ptr<i32>")}
  %old = tt.atomic_rmw %hp, %ones {{kind = "add", scope = "gpu", sem = "relaxed"}} : {T("i32")}
  %c16 = arith.constant {{value = 16}} : i32
  %base = arith.mul %pid, %c16 : i32
  %bs = tt.splat %base : {T("i32")}
  %offs = arith.add %bs, %r : {T("i32")}
  %os = tt.splat %olds : {T("ptr<i32>")}
  %op = tt.addptr %os, %offs : {T("ptr<i32>")}
  tt.store %op, %old"""
    params = [("counter", "ptr<i32>"), ("tickets", "ptr<i32>"), ("hist", "ptr<i32>"), ("olds", "ptr<i32>")]
    return func("replicated", params, body, num_warps=warps)


def test_atomics_execute_once_per_element_and_share_the_old_value() -> None:
    simt = lower(replicated_atomic_kernel(4))
    assert simt.attrs["shared_bytes"] > 0  # room to pass old values to the replicas
    grid = 5
    counter, tickets = np.zeros(1, np.int32), np.full(grid, -1, np.int32)
    hist, olds = np.zeros(16, np.int32), np.full(grid * 16, -1, np.int32)
    m, d = run(simt, (grid,), [counter, tickets, hist, olds])
    assert result(m, d[0], counter)[0] == grid
    assert sorted(result(m, d[1], tickets)) == list(range(grid))
    np.testing.assert_array_equal(result(m, d[2], hist), grid)
    np.testing.assert_array_equal(result(m, d[3], olds).reshape(grid, 16), np.arange(grid)[:, None].repeat(16, 1))


def cas_kernel(n: int) -> str:
    L = blocked([1], [32], [2])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %ps = tt.splat %p : {T("ptr<f32>")}
  %pp = tt.addptr %ps, %r : {T("ptr<f32>")}
  %cmp = arith.constant {{value = 0.0}} : {T("f32")}
  %new = arith.constant {{value = 5.0}} : {T("f32")}
  %old = tt.atomic_cas %pp, %cmp, %new {{scope = "gpu", sem = "acq_rel"}} : {T("f32")}
  %os = tt.splat %out : {T("ptr<f32>")}
  %op = tt.addptr %os, %r : {T("ptr<f32>")}
  tt.store %op, %old"""
    return func("cas", [("p", "ptr<f32>"), ("out", "ptr<f32>")], body, num_warps=2)


def test_atomic_cas() -> None:
    simt = lower(cas_kernel(64))
    p = np.where(np.arange(64) % 3 == 0, 0.0, np.arange(64)).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    m, d = run(simt, (1,), [p, out])
    np.testing.assert_array_equal(result(m, d[1], out), p)
    np.testing.assert_array_equal(result(m, d[0], p), np.where(p == 0, 5.0, p))


@needs_ptxas
def test_atomics_assemble() -> None:
    for dt, kinds in KINDS.items():
        for kind in kinds:
            check_ptx(lower(atomic_kernel(128, 4, 1, dt, kind, True)), ("sm_80", "sm_90a"))
    check_ptx(lower(atomic_kernel(256, 4, 2, "f32", "add", False, sem="relaxed")))
    check_ptx(lower(replicated_atomic_kernel(4)))
    check_ptx(lower(cas_kernel(64)))
    assert "red.global.relaxed.gpu.add.f32" in emit_ptx(lower(atomic_kernel(128, 4, 1, "f32", "add", False,
                                                                             sem="relaxed")))


# ------------------------------------------------------------------------------ shared memory, layouts


def through_shared(rows: int, cols: int, src: str, dst: str, shared: str, dt: str = "f32") -> str:
    """Load with layout `src`, store to a #shared buffer, load back with layout `dst`, store."""
    def index(L: str, tag: str) -> str:
        S1, S0 = f"#slice<dim = 1, parent = {L}>", f"#slice<dim = 0, parent = {L}>"
        return f"""
  %r{tag} = tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32, {S1}>
  %c{tag} = tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32, {S0}>
  %r2{tag} = tt.expand_dims %r{tag} {{axis = 1}} : tensor<{rows}x1xi32, {L}>
  %c2{tag} = tt.expand_dims %c{tag} {{axis = 0}} : tensor<1x{cols}xi32, {L}>
  %k{tag} = arith.constant {{value = {cols}}} : tensor<{rows}x1xi32, {L}>
  %ro{tag} = arith.mul %r2{tag}, %k{tag} : tensor<{rows}x1xi32, {L}>
  %rb{tag} = tt.broadcast %ro{tag} : tensor<{rows}x{cols}xi32, {L}>
  %cb{tag} = tt.broadcast %c2{tag} : tensor<{rows}x{cols}xi32, {L}>
  %o{tag} = arith.add %rb{tag}, %cb{tag} : tensor<{rows}x{cols}xi32, {L}>"""
    T = lambda t, L: f"tensor<{rows}x{cols}x{t}, {L}>"  # noqa: E731
    nbytes = rows * cols * np.dtype(NP[dt] if dt in NP else np.uint8).itemsize
    body = index(src, "a") + index(dst, "b") + f"""
  %xs = tt.splat %x : {T(f"ptr<{dt}>", src)}
  %xp = tt.addptr %xs, %oa : {T(f"ptr<{dt}>", src)}
  %v = tt.load %xp : {T(dt, src)}
  %buf = gpu.local_alloc {{bytes = {nbytes}, offset = 0}} : {T(dt, shared)}
  gpu.local_store %buf, %v
  gpu.barrier
  %w = gpu.local_load %buf : {T(dt, dst)}
  %ys = tt.splat %y : {T(f"ptr<{dt}>", dst)}
  %yp = tt.addptr %ys, %ob : {T(f"ptr<{dt}>", dst)}
  tt.store %yp, %w"""
    return func("smem", [("x", f"ptr<{dt}>"), ("y", f"ptr<{dt}>")], body, num_warps=4, shared_bytes=nbytes)


A = blocked([1, 4], [8, 4], [4, 1])
B = blocked([4, 1], [4, 8], [1, 4], [0, 1])
C = blocked([1, 1], [1, 32], [4, 1])
SHARED = ["#shared<vec = 1, per_phase = 1, max_phase = 1, order = [1, 0]>",
          "#shared<vec = 4, per_phase = 1, max_phase = 8, order = [1, 0]>",
          "#shared<vec = 2, per_phase = 2, max_phase = 4, order = [0, 1]>"]


@pytest.mark.parametrize("src,dst", [(A, B), (B, A), (A, C), (C, C)])
@pytest.mark.parametrize("shared", SHARED)
def test_layout_conversion_through_shared_memory(src: str, dst: str, shared: str) -> None:
    simt = lower(through_shared(32, 32, src, dst, shared))
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    y = np.full_like(x, np.nan)
    m, d = run(simt, (1,), [x, y])
    np.testing.assert_array_equal(result(m, d[1], y), x)


def test_missing_barrier_is_a_race() -> None:
    text = through_shared(32, 32, A, B, SHARED[1]).replace("  gpu.barrier\n", "")
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    with pytest.raises(EmulatorError, match="shared-memory race"):
        run(lower(text), (1,), [x, np.zeros_like(x)])


def test_bool_tensor_through_shared_memory() -> None:
    text = through_shared(16, 16, A, B, SHARED[0], dt="i1")
    simt = lower(text)
    x = (RNG.random((16, 16)) > 0.5).astype(np.uint8)
    y = np.full_like(x, 7)
    m, d = run(simt, (1,), [x, y])
    np.testing.assert_array_equal(result(m, d[1], y), x)


@needs_ptxas
def test_shared_memory_assembles_vectorized() -> None:
    simt = lower(through_shared(32, 32, A, B, SHARED[1]))
    check_ptx(simt)
    ptx = emit_ptx(simt)
    assert "st.shared.v4.f32" in ptx and "bar.sync 0;" in ptx


def shape_ops(layout: BlockedLayout) -> str:
    """trans and reshape in registers (layouts chosen by the gpu-level rules), then a register convert."""
    shape = (16, 32)
    L = str(layout)
    LT = str(trans_layout(layout, shape, [1, 0]))
    LR = str(reshape_layout(layout, shape, (512,)))
    S1, S0 = f"#slice<dim = 1, parent = {L}>", f"#slice<dim = 0, parent = {L}>"
    S1T, S0T = f"#slice<dim = 1, parent = {LT}>", f"#slice<dim = 0, parent = {LT}>"
    ll = layout.to_linear(shape)
    permuted = LinearLayout(shape, tuple(reversed(ll.register_bases)), ll.lane_bases, ll.warp_bases)
    LP = f"#linear<{permuted}>"
    body = f"""
  %r = tt.arange {{end = 16, start = 0}} : tensor<16xi32, {S1}>
  %c = tt.arange {{end = 32, start = 0}} : tensor<32xi32, {S0}>
  %r2 = tt.expand_dims %r {{axis = 1}} : tensor<16x1xi32, {L}>
  %c2 = tt.expand_dims %c {{axis = 0}} : tensor<1x32xi32, {L}>
  %k = arith.constant {{value = 32}} : tensor<16x1xi32, {L}>
  %ro = arith.mul %r2, %k : tensor<16x1xi32, {L}>
  %rb = tt.broadcast %ro : tensor<16x32xi32, {L}>
  %cb = tt.broadcast %c2 : tensor<16x32xi32, {L}>
  %o = arith.add %rb, %cb : tensor<16x32xi32, {L}>
  %xs = tt.splat %x : tensor<16x32xptr<f32>, {L}>
  %xp = tt.addptr %xs, %o : tensor<16x32xptr<f32>, {L}>
  %v = tt.load %xp : tensor<16x32xf32, {L}>
  %t = tt.trans %v {{order = [1, 0]}} : tensor<32x16xf32, {LT}>
  %tr = tt.arange {{end = 32, start = 0}} : tensor<32xi32, {S1T}>
  %tc = tt.arange {{end = 16, start = 0}} : tensor<16xi32, {S0T}>
  %tr2 = tt.expand_dims %tr {{axis = 1}} : tensor<32x1xi32, {LT}>
  %tc2 = tt.expand_dims %tc {{axis = 0}} : tensor<1x16xi32, {LT}>
  %k16 = arith.constant {{value = 16}} : tensor<32x1xi32, {LT}>
  %tro = arith.mul %tr2, %k16 : tensor<32x1xi32, {LT}>
  %trb = tt.broadcast %tro : tensor<32x16xi32, {LT}>
  %tcb = tt.broadcast %tc2 : tensor<32x16xi32, {LT}>
  %to = arith.add %trb, %tcb : tensor<32x16xi32, {LT}>
  %ts = tt.splat %yt : tensor<32x16xptr<f32>, {LT}>
  %tp = tt.addptr %ts, %to : tensor<32x16xptr<f32>, {LT}>
  tt.store %tp, %t
  %flat = tt.reshape %v : tensor<512xf32, {LR}>
  %fo = tt.reshape %o : tensor<512xi32, {LR}>
  %fs = tt.splat %yr : tensor<512xptr<f32>, {LR}>
  %fp = tt.addptr %fs, %fo : tensor<512xptr<f32>, {LR}>
  tt.store %fp, %flat
  %pv = gpu.convert_layout %v : tensor<16x32xf32, {LP}>
  %po = gpu.convert_layout %o : tensor<16x32xi32, {LP}>
  %ps = tt.splat %yp : tensor<16x32xptr<f32>, {LP}>
  %pp = tt.addptr %ps, %po : tensor<16x32xptr<f32>, {LP}>
  tt.store %pp, %pv"""
    params = [("x", "ptr<f32>"), ("yt", "ptr<f32>"), ("yr", "ptr<f32>"), ("yp", "ptr<f32>")]
    return func("shapes", params, body, num_warps=layout.num_warps)


@pytest.mark.parametrize("layout", [BlockedLayout((1, 4), (8, 4), (2, 2), (1, 0)),
                                    BlockedLayout((2, 2), (4, 8), (1, 4), (0, 1)),
                                    BlockedLayout((1, 1), (2, 16), (4, 1), (1, 0))])
def test_trans_reshape_and_register_conversion(layout: BlockedLayout) -> None:
    simt = lower(shape_ops(layout))
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    outs = [np.full((32, 16), np.nan, np.float32), np.full(512, np.nan, np.float32), np.full((16, 32), np.nan,
                                                                                          np.float32)]
    m, d = run(simt, (1,), [x] + outs)
    np.testing.assert_array_equal(result(m, d[1], outs[0]), x.T)
    np.testing.assert_array_equal(result(m, d[2], outs[1]), x.ravel())
    np.testing.assert_array_equal(result(m, d[3], outs[2]), x)
    assert "simt.ld_shared" not in str(simt)  # all in registers


def test_conversion_between_threads_is_refused() -> None:
    from tile.codegen.lower_core import LoweringError

    text = shape_ops(BlockedLayout((1, 4), (8, 4), (2, 2), (1, 0)))
    other = blocked([4, 1], [4, 8], [2, 2], [0, 1])
    text = text.replace("%pv = gpu.convert_layout %v : tensor<16x32xf32, #linear",
                        f"%pv0 = gpu.convert_layout %v : tensor<16x32xf32, {other}>\n"
                        "  %pv = gpu.convert_layout %v : tensor<16x32xf32, #linear", 1)
    with pytest.raises(LoweringError, match="through shared memory"):
        lower(text)


def bool_and_scalar(n: int) -> str:
    L = blocked([4], [32], [2])
    T = lambda t: f"tensor<{n}x{t}, {L}>"  # noqa: E731
    body = f"""
  %r = tt.arange {{end = {n}, start = 0}} : {T("i32")}
  %fs = tt.splat %flags : {T("ptr<i1>")}
  %fp = tt.addptr %fs, %r : {T("ptr<i1>")}
  %f = tt.load %fp {{vector = 4, cache = ".cg"}} : {T("i1")}
  %nf = arith.not %f : {T("i1")}
  %os = tt.splat %out : {T("ptr<i1>")}
  %op = tt.addptr %os, %r : {T("ptr<i1>")}
  tt.store %op, %nf {{vector = 4, eviction = "evict_last"}}
  %s = tt.load %scale {{volatile = true}} : f32
  %s2 = arith.add %s, %s : f32
  tt.store %scale, %s2 {{cache = ".cs"}}"""
    return func("bools", [("flags", "ptr<i1>"), ("out", "ptr<i1>"), ("scale", "ptr<f32>")], body, num_warps=2)


def test_bools_and_scalars() -> None:
    simt = lower(bool_and_scalar(256))
    flags = (RNG.random(256) > 0.3).astype(np.uint8)
    out, scale = np.full(256, 9, np.uint8), np.array([1.5], np.float32)
    m, d = run(simt, (1,), [flags, out, scale])
    np.testing.assert_array_equal(result(m, d[1], out), 1 - flags)
    assert result(m, d[2], scale)[0] == 3.0  # stored once, by thread 0


@needs_ptxas
def test_cache_hints_reach_ptx() -> None:
    simt = lower(bool_and_scalar(256))
    check_ptx(simt)
    ptx = emit_ptx(simt)
    assert "ld.global.cg.v4.u8" in ptx and "st.global.L1::evict_last.v4.u8" in ptx
    assert "ld.volatile.global.f32" in ptx and "st.global.cs.f32" in ptx


def test_pointers_from_a_computed_base_are_formed_where_they_are_used() -> None:
    """`Y += adj` makes a thread-invariant base that is no parameter; `Y + offs` is still formed
    where the store uses it, after the loop, not at the top of the function, where its 64-bit
    addresses would stay live through the loop (tile/codegen/lower_core.py)."""
    import tile
    import tile.language as tl

    @tile.jit
    def row_sums(X, Y, n_iter, stride, BLOCK: tl.constexpr):
        adj = (tl.program_id(0) * stride).to(tl.int64)
        X += adj
        Y += adj
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(n_iter):
            acc += tl.load(X + i * BLOCK + offs)
        tl.store(Y + offs, acc)

    x = tile.empty((4096,), np.float32)
    lines = str(tile.dump(row_sums, x, x, 4, 1024, BLOCK=256, stage="simt", target="sm_90a")).splitlines()
    loop_end = next(i for i, line in enumerate(lines) if line == "  }")
    store = next(line for line in lines if "simt.st_global" in line)
    address = store.split("simt.st_global ")[1].split(",")[0]
    definition = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{address} = simt.addptr"))
    assert definition > loop_end
