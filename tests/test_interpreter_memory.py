"""The interpreter on memory and blocks: bounds checks, shapes, reductions, scans, dot and atomics."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings

from tile.runtime.interpreter import InterpreterError
from interp_util import (
    NARROW, SETTINGS, STORAGE, elementwise, kernel, load, offsets, poisoned, ptrs, random_floats, random_ints,
    ref_decode, ref_round, run, same_bits, seeds, store, wrap,
)


# ------------------------------------------------------------------------------- memory


def _oob_kernel(shift: int = 0):
    body = offsets(64) + f"""
  %sh = arith.constant {{value = {shift}}} : tensor<64xi32>
  %o2 = arith.add %offs, %sh : tensor<64xi32>""" + ptrs("x", "f32", "64", "%o2") + """
  %x = tt.load %x_a : tensor<64xf32> loc("kern.py":7:5)""" + store("out", "%x", "f32", "64")
    return kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body, name="oob")


def test_out_of_bounds_load_names_kernel_line_offset_and_argument():
    x, out = np.ones(100, np.float32), poisoned(128, "f32")
    with pytest.raises(InterpreterError) as e:
        run(_oob_kernel(), (2,), x, out)
    msg = str(e.value)
    assert isinstance(e.value, RuntimeError)
    for part in ("kernel 'oob'", "kern.py:7", "element offset 100", "'x_ptr'", "100 elements of f32",
                 "program (1, 0, 0)", "index (36,)"):
        assert part in msg, msg
    with pytest.raises(InterpreterError, match="element offset -1 of argument 'x_ptr'"):
        run(_oob_kernel(-1), (1,), x, out)


def test_misaligned_and_null_pointers_fault():
    body = """
  %i = tt.ptr_to_int %x_ptr : i64
  %two = arith.constant {value = 2} : i64
  %j = arith.add %i, %two : i64
  %p = tt.int_to_ptr %j : ptr<f32>
  %x = tt.load %p : f32
  tt.store %out_ptr, %x"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    with pytest.raises(InterpreterError, match="misaligned access"):
        run(func, (1,), np.ones(4, np.float32), poisoned(1, "f32"))
    with pytest.raises(InterpreterError, match="does not point into any argument"):
        run(func, (1,), None, poisoned(1, "f32"))


def test_inactive_programs_do_not_fault():
    body = offsets(16) + """
  %c = arith.cmp %pid, %npass {predicate = "lt"} : i1
  scf.if %c {""" + load("x", "f32", "16") + store("out", "%x", "f32", "16") + """
    scf.yield
  } {
    scf.yield
  }"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>"), ("npass", "i32")], body)
    x, out = np.arange(1, 33, dtype=np.float32), poisoned(32, "f32")
    run(func, (5,), x, out, 2)  # programs 2..4 would read past both arrays
    np.testing.assert_array_equal(out, x)


def test_arguments_in_place_read_only_non_contiguous_and_host_view():
    func = elementwise("arith.mul %a0, %a0", ("f32",), "f32", 16)
    x = np.arange(1, 33, dtype=np.float32)
    strided = np.zeros((32, 2), np.float32)[:, 0]
    run(func, (2,), x, strided)
    np.testing.assert_array_equal(strided, x * x)

    class Host:
        def __init__(self, a):
            self.a = a

        def host_view(self):
            return self.a

    out = poisoned(32, "f32")
    run(func, (2,), Host(x), Host(out))
    np.testing.assert_array_equal(out, x * x)
    frozen = np.zeros(32, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only"):
        run(func, (2,), x, frozen)


def test_one_access_may_touch_several_arguments():
    body = """
  %ar = tt.arange {end = 64, start = 0} : tensor<64xi32>""" + ptrs("a", "f32", "64", "%ar") \
        + ptrs("b", "f32", "64", "%ar") + ptrs("out", "f32", "64", "%ar") + """
  %one = arith.constant {value = 1} : tensor<64xi32>
  %bit = arith.and %ar, %one : tensor<64xi32>
  %odd = arith.cmp %bit, %one {predicate = "eq"} : tensor<64xi1>
  %p = arith.select %odd, %b_a, %a_a : tensor<64xptr<f32>>
  %v = tt.load %p : tensor<64xf32>
  tt.store %p, %v
  %w = arith.add %v, %v : tensor<64xf32>
  tt.store %out_a, %w"""
    func = kernel([("a_ptr", "ptr<f32>"), ("b_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    a, b = np.arange(64, dtype=np.float32) + 1, -np.arange(64, dtype=np.float32) - 1
    out = poisoned(64, "f32")
    run(func, (1,), a, b, out)
    np.testing.assert_array_equal(out, 2 * np.where(np.arange(64) % 2 == 1, b, a))


def test_scalar_arguments_of_every_kind():
    body = """
  tt.store %o_i1, %s_i1
  tt.store %o_u64, %s_u64
  tt.store %o_bf16, %s_bf16
  tt.store %o_f16, %s_f16
  tt.store %o_f64, %s_f64"""
    types = {"i1": "i1", "u64": "u64", "bf16": "bf16", "f16": "f16", "f64": "f64"}
    params = [(f"o_{k}", f"ptr<{t}>") for k, t in types.items()] + [(f"s_{k}", t) for k, t in types.items()]
    func = kernel(params, body)
    outs = [poisoned(1, t) for t in types.values()]
    run(func, (1,), *outs, True, 2**64 - 3, 1.00390625 + 2**-9, 0.1, -0.1)
    assert outs[0][0] and outs[1][0] == 2**64 - 3 and outs[4][0] == -0.1
    assert outs[2][0] == ref_round(np.array([1.00390625 + 2**-9]), "bf16")[0]
    assert outs[3][0] == np.float16(0.1)


# -------------------------------------------------------------------------- shapes


def grid2d(name: str, m: int, n: int) -> str:
    """%name: tensor<m x n x i32> of row * n + col."""
    return f"""
  %{name}_r = tt.arange {{end = {m}, start = 0}} : tensor<{m}xi32>
  %{name}_c = tt.arange {{end = {n}, start = 0}} : tensor<{n}xi32>
  %{name}_r2 = tt.expand_dims %{name}_r {{axis = 1}} : tensor<{m}x1xi32>
  %{name}_c2 = tt.expand_dims %{name}_c {{axis = 0}} : tensor<1x{n}xi32>
  %{name}_n = arith.constant {{value = {n}}} : tensor<{m}x1xi32>
  %{name}_rs = arith.mul %{name}_r2, %{name}_n : tensor<{m}x1xi32>
  %{name}_rb = tt.broadcast %{name}_rs : tensor<{m}x{n}xi32>
  %{name}_cb = tt.broadcast %{name}_c2 : tensor<{m}x{n}xi32>
  %{name} = arith.add %{name}_rb, %{name}_cb : tensor<{m}x{n}xi32>"""


def load2d(name: str, t: str, m: int, n: int) -> str:
    return grid2d(f"{name}_o", m, n) + ptrs(name, t, f"{m}x{n}", f"%{name}_o") \
        + f"\n  %{name} = tt.load %{name}_a : tensor<{m}x{n}x{t}>"


def store2d(name: str, value: str, t: str, m: int, n: int) -> str:
    return grid2d(f"{name}_o", m, n) + ptrs(name, t, f"{m}x{n}", f"%{name}_o") + f"\n  tt.store %{name}_a, {value}"


def test_transpose_reshape_expand_broadcast():
    body = load2d("x", "f32", 4, 8) + """
  %t = tt.trans %x {order = [1, 0]} : tensor<8x4xf32>
  %a = tt.arange {end = 32, start = 0} : tensor<32xi32>
  %o = tt.reshape %a {can_reorder = false} : tensor<8x4xi32>""" + ptrs("out", "f32", "8x4", "%o") + """
  tt.store %out_a, %t"""
    func = kernel([("x_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")], body)
    x = np.arange(1, 33, dtype=np.float32)
    out = poisoned(32, "f32")
    run(func, (1,), x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 8).T.reshape(-1))


# ------------------------------------------------------------------ reduce and scan


def combine(op: str, t: str) -> str:
    return f"""^bb(%a: {t}, %b: {t}):
    %m = {op} %a, %b : {t}
    tt.reduce.return %m"""


MAX_BY_SELECT = """^bb(%a: {t}, %b: {t}):
    %gt = arith.cmp %a, %b {{predicate = "gt"}} : i1
    %m = arith.select %gt, %a, %b : {t}
    tt.reduce.return %m"""


def _reduce_kernel(region: str, t: str, axis: int, m: int = 8, n: int = 16, scan: str = ""):
    rshape = f"{n}" if axis == 0 else f"{m}"
    if scan:
        reverse = "true" if scan == "reverse" else "false"
        op = f"%s = tt.scan %x {{axis = {axis}, reverse = {reverse}}} : tensor<{m}x{n}x{t}>"
        tail = store2d("out", "%s", t, m, n)
    else:
        op = f"%s = tt.reduce %x {{axis = {axis}}} : tensor<{rshape}x{t}>"
        tail = f"\n  %ro = tt.arange {{end = {rshape}, start = 0}} : tensor<{rshape}xi32>" \
               + ptrs("out", t, rshape, "%ro") + "\n  tt.store %out_a, %s"
    body = load2d("x", t, m, n) + f"\n  {op} {{\n  {region}\n  }}" + tail
    return kernel([("x_ptr", f"ptr<{t}>"), ("out_ptr", f"ptr<{t}>")], body)


@pytest.mark.parametrize("axis", [0, 1])
@given(seed=seeds)
@SETTINGS
def test_reductions(axis, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    x[rng.random((8, 16)) < 0.1] = np.nan
    for region, fn in ((combine("arith.add", "f32"), np.sum), (combine("arith.max", "f32"), np.fmax.reduce),
                       (MAX_BY_SELECT.format(t="f32"), None)):
        data = np.nan_to_num(x, nan=0.5) if fn is not np.fmax.reduce else x
        out = poisoned(16 if axis == 0 else 8, "f32")
        run(_reduce_kernel(region, "f32", axis), (1,), data.reshape(-1), out)
        want = np.max(data, axis) if fn is None else fn(data.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-5)  # float32 sums of 8-16 values
    xi = random_ints(rng, "i32", 128)
    out = poisoned(8, "i32")
    run(_reduce_kernel(combine("arith.add", "i32"), "i32", 1), (1,), xi, out)
    want = [wrap(sum(int(v) for v in row), "i32") for row in xi.reshape(8, 16)]
    np.testing.assert_array_equal(out, want)


def test_bf16_reduction_rounds_each_step():
    rng = np.random.default_rng(2)
    bits = ref_round(rng.uniform(0.5, 2.0, 128), "bf16")
    out = poisoned(8, "bf16")
    run(_reduce_kernel(combine("arith.add", "bf16"), "bf16", 1), (1,), bits, out)
    want = ref_decode(bits, "bf16").reshape(8, 16).sum(1)
    np.testing.assert_allclose(ref_decode(out, "bf16"), want, rtol=3e-2)


def test_argmax_reduce_with_two_operands_keeps_first_index():
    region = """^bb(%av: i32, %ai: i32, %bv: i32, %bi: i32):
    %gt = arith.cmp %av, %bv {predicate = "gt"} : i1
    %eq = arith.cmp %av, %bv {predicate = "eq"} : i1
    %lt = arith.cmp %ai, %bi {predicate = "lt"} : i1
    %tie = arith.and %eq, %lt : i1
    %pa = arith.or %gt, %tie : i1
    %v = arith.select %pa, %av, %bv : i32
    %i = arith.select %pa, %ai, %bi : i32
    tt.reduce.return %v, %i"""
    body = load2d("x", "i32", 8, 12) + """
  %ci = tt.arange {end = 12, start = 0} : tensor<12xi32>
  %ci2 = tt.expand_dims %ci {axis = 0} : tensor<1x12xi32>
  %idx = tt.broadcast %ci2 : tensor<8x12xi32>
  %mv, %mi = tt.reduce %x, %idx {axis = 1} : tensor<8xi32>, tensor<8xi32> {
  """ + region + """
  }
  %ro = tt.arange {end = 8, start = 0} : tensor<8xi32>""" + ptrs("out", "i32", "8", "%ro") + """
  tt.store %out_a, %mi"""
    func = kernel([("x_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    x = np.random.default_rng(4).integers(1, 5, 96).astype(np.int32)  # many ties
    out = poisoned(8, "i32")
    run(func, (1,), x, out)
    np.testing.assert_array_equal(out, np.argmax(x.reshape(8, 12), axis=1))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_scans(mode):
    rng = np.random.default_rng(8)
    x = rng.integers(-50, 50, 128).astype(np.int32)
    flip = (lambda a: a[:, ::-1]) if mode == "reverse" else (lambda a: a)
    general = """^bb(%a: i32, %b: i32):
    %t = arith.add %a, %b : i32
    %m = arith.max %t, %t : i32
    tt.reduce.return %m"""
    for region, ref in ((combine("arith.add", "i32"), np.cumsum), (general, np.cumsum),
                        (MAX_BY_SELECT.format(t="i32"), np.maximum.accumulate)):
        out = poisoned(128, "i32")
        run(_reduce_kernel(region, "i32", 1, scan=mode), (1,), x, out)
        want = flip(ref(flip(x.reshape(8, 16)), axis=1))
        np.testing.assert_array_equal(out.reshape(8, 16), want)


# -------------------------------------------------------------------------------- dot


def _tf32(x: np.ndarray) -> np.ndarray:
    m, e = np.frexp(x.astype(np.float64))
    return np.ldexp(np.rint(np.ldexp(m, 11)), e - 11)  # 11 significant bits, nearest even


@pytest.mark.parametrize("t,acc,precision", [("f32", "f32", "ieee"), ("f32", "f32", "tf32"), ("f16", "f32", "ieee"),
                                             ("bf16", "f32", "ieee"), ("f8e4nv", "f32", "ieee"),
                                             ("f8e5", "f32", "ieee"), ("f16", "f16", "ieee"), ("i8", "i32", "ieee")])
def test_dot(t, acc, precision):
    m, k, n = 16, 8, 32
    rng = np.random.default_rng(9)
    body = load2d("a", t, m, k) + load2d("b", t, k, n) + load2d("c", acc, m, n) + f"""
  %d = tt.dot %a, %b, %c {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : tensor<{m}x{n}x{acc}>""" \
        + store2d("out", "%d", acc, m, n)
    params = [("a_ptr", f"ptr<{t}>"), ("b_ptr", f"ptr<{t}>"), ("c_ptr", f"ptr<{acc}>"), ("out_ptr", f"ptr<{acc}>")]
    func = kernel(params, body)

    def make(t, shape):
        if t == "i8":
            v = rng.integers(-128, 128, shape).astype(np.int8)
            return v, v.astype(np.float64)
        if t == "i32":
            v = rng.integers(-(2**31), 2**31, shape).astype(np.int32)
            return v, v.astype(np.float64)
        mem, vals = random_floats(rng, t, int(np.prod(shape)))
        if t in NARROW:
            vals = np.clip(vals, -8, 8)
            mem = ref_round(vals, t)
            mem = mem.view(np.float16) if t == "f16" else mem
        return mem, vals.reshape(shape)

    (a, av), (b, bv), (c, cv) = make(t, (m, k)), make(t, (k, n)), make(acc, (m, n))
    out = poisoned(m * n, acc)
    run(func, (1,), a, b, c, out)
    if precision == "tf32":
        av, bv = _tf32(av), _tf32(bv)
    if t == "i8":
        want = np.array([wrap(int(v), "i32") for v in (av.astype(np.int64) @ bv.astype(np.int64)
                                                       + cv.astype(np.int64)).reshape(-1)], np.int32)
        np.testing.assert_array_equal(out, want)
    elif acc == "f16":
        same_bits(out.view(np.uint16), ref_round((av @ bv + cv).reshape(-1), "f16"), "f16")
    else:
        np.testing.assert_allclose(out, (av @ bv + cv).reshape(-1).astype(np.float32), rtol=1e-6)


# ------------------------------------------------------------------------------ atomics


def _atomic_kernel(kind: str, t: str, n: int, masked: bool):
    """old[i] = atomic kind(mem[idx[i]], val[i]) under mask m[i] (if `masked`)."""
    mask = ", %m" if masked else ""
    body = offsets(n) + load("idx", "i32", f"{n}") + load("val", t, f"{n}") + load("m", "i1", f"{n}") \
        + ptrs("mem", t, f"{n}", "%idx") + f"""
  %old = tt.atomic_rmw %mem_a, %val{mask} {{kind = "{kind}", scope = "gpu", sem = "acq_rel"}} : tensor<{n}x{t}>""" \
        + store("out", "%old", t, f"{n}")
    params = [("idx_ptr", "ptr<i32>"), ("val_ptr", f"ptr<{t}>"), ("m_ptr", "ptr<i1>"), ("mem_ptr", f"ptr<{t}>"),
              ("out_ptr", f"ptr<{t}>")]
    return kernel(params, body)


ATOMIC = {"add": lambda a, b: a + b, "max": max, "min": min, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
          "xor": lambda a, b: a ^ b, "xchg": lambda a, b: b}  # fmt: skip


@pytest.mark.parametrize("t", ["i32", "u32", "i64"])
@pytest.mark.parametrize("kind", list(ATOMIC))
@given(seed=seeds)
@settings(max_examples=4, deadline=None)
def test_atomics_are_sequential_in_program_order(kind, t, seed):
    rng = np.random.default_rng(seed)
    n, programs, cells = 32, 3, 5  # heavy contention: 96 lanes on 5 cells
    idx = rng.integers(0, cells, n * programs).astype(np.int32)
    val, mem = random_ints(rng, t, n * programs), random_ints(rng, t, cells)
    on = rng.random(n * programs) < 0.8
    masked = bool(seed % 2)
    out = poisoned(n * programs, t)
    want_mem = [int(v) for v in mem]
    want_old = {}
    for lane in range(n * programs):  # programs in order, then elements in order
        if masked and not on[lane]:
            continue
        cell = idx[lane]
        want_old[lane] = want_mem[cell]
        want_mem[cell] = wrap(ATOMIC[kind](want_mem[cell], int(val[lane])), t)
    run(_atomic_kernel(kind, t, n, masked), (programs,), idx, val, on, mem, out)
    np.testing.assert_array_equal(mem, np.array(want_mem, dtype=object).astype(STORAGE[t]))
    lanes = list(want_old)
    np.testing.assert_array_equal(out[lanes], np.array(list(want_old.values()), dtype=object).astype(STORAGE[t]))


def test_histogram_and_float_atomic_add_with_contention():
    rng = np.random.default_rng(11)
    n, programs = 64, 8
    idx = rng.integers(0, 16, n * programs).astype(np.int32)
    ones = np.ones(n * programs, np.int32)
    hist = rng.integers(1, 10, 16).astype(np.int32)
    start = hist.copy()
    run(_atomic_kernel("add", "i32", n, False), (programs,), idx, ones, np.ones(n * programs, bool), hist,
        poisoned(n * programs, "i32"))
    np.testing.assert_array_equal(hist, start + np.bincount(idx, minlength=16))
    vals = rng.standard_normal(n * programs).astype(np.float32)
    acc = np.full(16, 0.25, np.float32)
    run(_atomic_kernel("add", "f32", n, False), (programs,), idx, vals, np.ones(n * programs, bool), acc,
        poisoned(n * programs, "f32"))
    want = 0.25 + np.bincount(idx, weights=vals.astype(np.float64), minlength=16)
    np.testing.assert_allclose(acc, want, rtol=1e-5, atol=1e-5)


def test_atomic_ticket_counter_follows_program_order():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %t = tt.atomic_rmw %cnt_ptr, %one {kind = "add", scope = "gpu", sem = "acq_rel"} : i32
  %p = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %p, %t"""
    func = kernel([("cnt_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    cnt, out = np.array([7], np.int32), poisoned(50, "i32")
    run(func, (50,), cnt, out)
    assert cnt[0] == 57
    np.testing.assert_array_equal(out, 7 + np.arange(50))


def test_lock_free_counter_with_compare_and_swap():
    body = """
  %pid = tt.program_id {axis = 0} : i32
  %one = arith.constant {value = 1} : i32
  %c0 = tt.load %cnt_ptr : i32
  %ticket = scf.while %c0 : i32 {
  ^bb(%exp: i32):
    %want = arith.add %exp, %one : i32
    %got = tt.atomic_cas %cnt_ptr, %exp, %want {scope = "gpu", sem = "acq_rel"} : i32
    %fail = arith.cmp %got, %exp {predicate = "ne"} : i1
    %res = arith.select %fail, %got, %exp : i32
    scf.condition %fail, %res
  } {
  ^bb(%next: i32):
    scf.yield %next
  }
  %p = tt.addptr %out_ptr, %pid : ptr<i32>
  tt.store %p, %ticket"""
    func = kernel([("cnt_ptr", "ptr<i32>"), ("out_ptr", "ptr<i32>")], body)
    cnt, out = np.array([100], np.int32), poisoned(40, "i32")
    run(func, (40,), cnt, out)
    assert cnt[0] == 140
    np.testing.assert_array_equal(out, 100 + np.arange(40))


def test_float_compare_and_swap_compares_bits():
    body = """
  %ar = tt.arange {end = 4, start = 0} : tensor<4xi32>""" + ptrs("mem", "f32", "4", "%ar") \
        + load("cmp", "f32", "4", offs="%ar") + load("new", "f32", "4", offs="%ar") + """
  %old = tt.atomic_cas %mem_a, %cmp, %new {scope = "gpu", sem = "acq_rel"} : tensor<4xf32>""" \
        + store("out", "%old", "f32", "4", offs="%ar")
    params = [("mem_ptr", "ptr<f32>"), ("cmp_ptr", "ptr<f32>"), ("new_ptr", "ptr<f32>"), ("out_ptr", "ptr<f32>")]
    func = kernel(params, body)
    mem = np.array([np.nan, 1.0, 0.0, 2.0], np.float32)
    cmp = np.array([np.nan, 1.0, -0.0, 3.0], np.float32)
    out = poisoned(4, "f32")
    run(func, (1,), mem, cmp, np.array([5, 6, 7, 8], np.float32), out)
    np.testing.assert_array_equal(mem, [5, 6, 0, 2])  # NaN bits equal; -0.0 has other bits than 0.0
    np.testing.assert_array_equal(out, [np.nan, 1, 0, 2])


def test_combine_region_with_control_flow():
    region = """^bb(%a: f32, %b: f32):
    %gt = arith.cmp %a, %b {predicate = "gt"} : i1
    %m = scf.if %gt : f32 {
      scf.yield %a
    } {
      scf.yield %b
    }
    tt.reduce.return %m"""
    x = np.random.default_rng(12).standard_normal(128).astype(np.float32)
    out = poisoned(8, "f32")
    run(_reduce_kernel(region, "f32", 1), (1,), x, out)
    np.testing.assert_array_equal(out, x.reshape(8, 16).max(axis=1))
