"""Axis info: facts on IR text, and soundness of every fact on random programs evaluated with NumPy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tile.ir import Block, Builder, Operation, PointerType, Region, TensorType, f32, i1, i32, parse_op, verify
from tile.opt.axis_info import MAX_DIVISIBILITY, AxisInfo, AxisInfoAnalysis, format_axis_info


def facts(text: str) -> dict[str, str]:
    func = parse_op(text)
    verify(func)
    out = {}
    for line in format_axis_info(func).splitlines():
        name, rest = line.split(": ", 1)
        out[name[1:]] = rest
    return out


def test_vector_add_facts():
    f = facts("""
tt.func {arg_divisibility = [16, 16, 1], sym_name = "k"} {
^bb(%x: ptr<f32>, %n: i32, %m: i32):
  %pid = tt.program_id {axis = 0} : i32
  %c128 = arith.constant {value = 128} : i32
  %base = arith.mul %pid, %c128 : i32
  %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
  %sb = tt.splat %base : tensor<128xi32>
  %idx = arith.add %sb, %offs : tensor<128xi32>
  %sx = tt.splat %x : tensor<128xptr<f32>>
  %ptrs = tt.addptr %sx, %idx : tensor<128xptr<f32>>
  %sn = tt.splat %n : tensor<128xi32>
  %mask = arith.cmp %idx, %sn {predicate = "lt"} : tensor<128xi1>
  %sm = tt.splat %m : tensor<128xi32>
  %mask2 = arith.cmp %idx, %sm {predicate = "lt"} : tensor<128xi1>
  %le = arith.cmp %idx, %sn {predicate = "le"} : tensor<128xi1>
  tt.return
}""")
    assert f["x"] == "contiguity = [1], divisibility = [16], constancy = [1]"
    assert f["base"] == "contiguity = [1], divisibility = [128], constancy = [1]"
    assert f["offs"] == f"contiguity = [128], divisibility = [{MAX_DIVISIBILITY}], constancy = [1]"
    assert f["sb"] == "contiguity = [1], divisibility = [128], constancy = [128]"
    assert f["idx"] == "contiguity = [128], divisibility = [128], constancy = [1]"
    assert f["ptrs"] == "contiguity = [128], divisibility = [16], constancy = [1]"
    assert f["mask"] == "contiguity = [1], divisibility = [1], constancy = [16]"
    assert f["mask2"] == "contiguity = [1], divisibility = [1], constancy = [1]"
    assert f["le"] == "contiguity = [1], divisibility = [1], constancy = [1]"


def test_2d_offsets_and_hints():
    f = facts("""
tt.func {arg_divisibility = [16, 16], sym_name = "k"} {
^bb(%x: ptr<f16>, %stride: i32):
  %r = tt.arange {end = 32, start = 0} : tensor<32xi32>
  %c = tt.arange {end = 64, start = 0} : tensor<64xi32>
  %r2 = tt.expand_dims %r {axis = 1} : tensor<32x1xi32>
  %c2 = tt.expand_dims %c {axis = 0} : tensor<1x64xi32>
  %ss = tt.splat %stride : tensor<32x1xi32>
  %rows = arith.mul %r2, %ss : tensor<32x1xi32>
  %rb = tt.broadcast %rows : tensor<32x64xi32>
  %cb = tt.broadcast %c2 : tensor<32x64xi32>
  %offs = arith.add %rb, %cb : tensor<32x64xi32>
  %sx = tt.splat %x : tensor<32x64xptr<f16>>
  %p = tt.addptr %sx, %offs : tensor<32x64xptr<f16>>
  %t = tt.trans %p {order = [1, 0]} : tensor<64x32xptr<f16>>
  %h = tt.hint %offs {max_contiguous = [1, 8], multiple_of = [1, 8]} : tensor<32x64xi32>
  %c16 = arith.constant {value = 16} : tensor<32x64xi32>
  %q = arith.div %offs, %c16 : tensor<32x64xi32>
  %m = arith.rem %offs, %c16 : tensor<32x64xi32>
  %k = arith.and %offs, %c16 : tensor<32x64xi32>
  tt.return
}""")
    assert f["r2"] == f"contiguity = [32, 1], divisibility = [{MAX_DIVISIBILITY}, 1], constancy = [1, 1]"
    assert f["rows"] == "contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 1]"
    assert f["offs"] == "contiguity = [1, 64], divisibility = [1, 16], constancy = [1, 1]"
    assert f["p"] == "contiguity = [1, 64], divisibility = [2, 16], constancy = [1, 1]"
    assert f["t"] == "contiguity = [64, 1], divisibility = [16, 2], constancy = [1, 1]"
    assert f["h"] == "contiguity = [1, 8], divisibility = [1, 8], constancy = [1, 1]"
    assert f["q"] == "contiguity = [1, 1], divisibility = [1, 1], constancy = [1, 16]"
    assert f["m"] == "contiguity = [1, 16], divisibility = [1, 16], constancy = [1, 1]"
    assert f["k"] == "contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 1]"


def test_loop_facts_meet_at_a_fixpoint():
    f = facts("""
tt.func {arg_divisibility = [16, 16], sym_name = "k"} {
^bb(%x: ptr<f32>, %n: i32):
  %c0 = arith.constant {value = 0} : i32
  %c64 = arith.constant {value = 64} : i32
  %c3 = arith.constant {value = 3} : i32
  %offs = tt.arange {end = 64, start = 0} : tensor<64xi32>
  %sx = tt.splat %x : tensor<64xptr<f32>>
  %p0 = tt.addptr %sx, %offs : tensor<64xptr<f32>>
  %k0 = arith.constant {value = 5} : i32
  %pr, %kr = scf.for %c0, %n, %c64, %p0, %k0 : tensor<64xptr<f32>>, i32 {
  ^bb(%i: i32, %p: tensor<64xptr<f32>>, %k: i32):
    %si = tt.splat %c64 : tensor<64xi32>
    %pn = tt.addptr %p, %si : tensor<64xptr<f32>>
    %kn = arith.add %k, %c3 : i32
    scf.yield %pn, %kn
  }
  %j = scf.for %c3, %n, %c64, %c0 : i32 {
  ^bb(%iv: i32, %acc: i32):
    scf.yield %iv
  }
  tt.return
}""")
    assert f["i"] == "contiguity = [1], divisibility = [64], constancy = [1]"
    assert f["p"] == "contiguity = [64], divisibility = [16], constancy = [1]"
    assert f["pr"] == "contiguity = [64], divisibility = [16], constancy = [1]"
    assert f["k"] == "contiguity = [1], divisibility = [1], constancy = [1]"
    assert f["iv"] == "contiguity = [1], divisibility = [1], constancy = [1]"
    assert f["j"] == "contiguity = [1], divisibility = [1], constancy = [1]"


def test_if_and_select_facts():
    f = facts("""
tt.func {arg_divisibility = [16, 16], sym_name = "k"} {
^bb(%a: i32, %b: i32):
  %c = arith.cmp %a, %b {predicate = "lt"} : i1
  %c32 = arith.constant {value = 32} : i32
  %c8 = arith.constant {value = 8} : i32
  %r = scf.if %c : i32 {
    scf.yield %c32
  } {
    scf.yield %c8
  }
  %offs = tt.arange {end = 16, start = 0} : tensor<16xi32>
  %s = tt.splat %a : tensor<16xi32>
  %x = arith.add %s, %offs : tensor<16xi32>
  %y = arith.add %s, %s : tensor<16xi32>
  %sc = tt.splat %c : tensor<16xi1>
  %sel = arith.select %sc, %x, %offs : tensor<16xi32>
  %sel2 = arith.select %c, %x, %y : tensor<16xi32>
  tt.return
}""")
    assert f["r"] == "contiguity = [1], divisibility = [8], constancy = [1]"
    assert f["sel"] == "contiguity = [16], divisibility = [16], constancy = [1]"
    assert f["sel2"] == "contiguity = [1], divisibility = [1], constancy = [1]"


# ------------------------------------------------------------------ soundness on random programs

N = 16
ROWS = 4


def holds(info: AxisInfo, value: np.ndarray, unit: int) -> bool:
    """Whether `info` is true of the concrete `value` (a scalar counts as shape (1,))."""
    v = np.asarray(value, dtype=object)
    v = v.reshape(1) if v.ndim == 0 else v
    for d in range(v.ndim):
        moved = np.moveaxis(v, d, -1)
        n = moved.shape[-1]
        c, div, k = info.contiguity[d], info.divisibility[d], info.constancy[d]
        if n % c or n % k:
            return False
        chunks = moved.reshape(moved.shape[:-1] + (n // c, c))
        if not np.all(chunks == chunks[..., :1] + np.arange(c, dtype=object) * unit):
            return False
        if not np.all(chunks[..., 0] % div == 0):
            return False
        same = moved.reshape(moved.shape[:-1] + (n // k, k))
        if not np.all(same == same[..., :1]):
            return False
    if info.constant is not None and not np.all(v == info.constant):
        return False
    return True


class _Program:
    """Builds a tt.func op by op while evaluating it on NumPy object arrays (exact integers)."""

    def __init__(self, data, args: list[tuple[str, int]]):
        self.data = data
        self.func = Operation("tt.func", attrs={"sym_name": "k", "arg_divisibility": [d for _, d in args]},
                              regions=[Region([Block()])])
        block = self.func.regions[0].block
        self.b = Builder(block)
        self.values: list[tuple[object, np.ndarray, bool]] = []  # (ir value, numpy value, non-negative)
        self.env: dict[object, np.ndarray] = {}
        self.pointers: list[object] = []
        self.masks: list[object] = []
        for kind, div in args:
            t = PointerType(f32) if kind == "ptr" else i32
            arg = block.add_argument(t)
            concrete = div * data.draw(st.integers(0, 40)) + (0 if div > 1 else data.draw(st.integers(0, 15)))
            self._keep(arg, np.array(concrete, dtype=object), True, ptr=kind == "ptr")

    def _keep(self, v, arr, nonneg: bool, ptr: bool = False) -> None:
        self.env[v] = arr
        if not ptr:
            self.values.append((v, arr, nonneg))

    def pick(self, shape=None, nonneg=False):
        options = [(v, a, n) for v, a, n in self.values if (shape is None or a.shape == shape) and (n or not nonneg)]
        return self.data.draw(st.sampled_from(options)) if options else None


def _tensor_type(shape):
    return TensorType(shape, i32) if shape else i32


def _grow(p: _Program) -> None:
    """Add one random op to the program."""
    d, b = p.data, p.b
    choice = d.draw(st.sampled_from(["arange", "const", "splat", "binary", "binary", "binary", "cmp_select",
                                     "expand", "pid", "hint", "index", "index"]))
    if choice == "index":
        # the usual offsets: splat(scalar) + arange
        src = p.pick((), nonneg=True)
        start = d.draw(st.sampled_from([0, 16, 5]))
        r = b.value("tt.arange", [], TensorType((N,), i32), start=start, end=start + N)
        sp = b.value("tt.splat", [src[0]], TensorType((N,), i32))
        v = b.value("arith.add", [sp, r], TensorType((N,), i32))
        p._keep(v, np.asarray(src[1].item() + np.arange(start, start + N), dtype=object), True)
    elif choice == "arange":
        start = d.draw(st.sampled_from([0, 16, 32, 3]))
        v = b.value("tt.arange", [], TensorType((N,), i32), start=start, end=start + N)
        p._keep(v, np.arange(start, start + N).astype(object), True)
    elif choice == "const":
        value = d.draw(st.sampled_from([0, 1, 2, 3, 4, 8, 16, 24, 64]))
        shape = d.draw(st.sampled_from([(), (N,), (ROWS, N)]))
        v = b.value("arith.constant", [], _tensor_type(shape), value=value)
        p._keep(v, np.full(shape, value, dtype=object), True)
    elif choice == "pid":
        v = b.value("tt.program_id", [], i32, axis=0)
        p._keep(v, np.array(d.draw(st.integers(0, 9)), dtype=object), True)
    elif choice == "splat":
        src = p.pick(())
        shape = d.draw(st.sampled_from([(N,), (ROWS, N)]))
        v = b.value("tt.splat", [src[0]], TensorType(shape, i32))
        p._keep(v, np.full(shape, src[1].item(), dtype=object), src[2])
    elif choice == "expand":
        src = p.pick((N,))
        if src is None:
            return
        axis = d.draw(st.integers(0, 1))
        shape = (1, N) if axis == 0 else (N, 1)
        e = b.value("tt.expand_dims", [src[0]], TensorType(shape, i32), axis=axis)
        full = (ROWS, N) if axis == 0 else (N, N)
        v = b.value("tt.broadcast", [e], TensorType(full, i32))
        p._keep(e, src[1].reshape(shape), src[2])
        p._keep(v, np.broadcast_to(src[1].reshape(shape), full).copy(), src[2])
    elif choice == "hint":
        # a promise that holds for every input: 8 * s + arange(0, N) runs in aligned blocks of 8
        src = p.pick((), nonneg=True)
        eight = b.value("arith.constant", [], i32, value=8)
        base = b.value("tt.splat", [b.value("arith.mul", [src[0], eight], i32)], TensorType((N,), i32))
        r = b.value("tt.arange", [], TensorType((N,), i32), start=0, end=N)
        x = b.value("arith.rem", [b.value("arith.add", [base, r], TensorType((N,), i32)),
                                  b.value("arith.constant", [], TensorType((N,), i32), value=N)], TensorType((N,), i32))
        v = b.value("tt.hint", [x], x.type, multiple_of=[8], max_contiguous=[8], max_constancy=[])
        p._keep(v, np.asarray((8 * src[1].item() + np.arange(N)) % N, dtype=object), True)
    elif choice == "binary":
        name = d.draw(st.sampled_from(["arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.and",
                                       "arith.or", "arith.xor", "arith.shl", "arith.shr", "tt.addptr"]))
        needs_nonneg = name in ("arith.div", "arith.rem", "arith.shr", "arith.and", "arith.or", "arith.xor")
        a = p.pick(nonneg=needs_nonneg)
        if a is None:
            return
        if d.draw(st.booleans()):
            value = d.draw(st.sampled_from([0, 1, 2, 3, 4, 8, 15, 16, 24, 64]))
            shape = a[1].shape
            cv = b.value("arith.constant", [], _tensor_type(shape), value=value)
            p._keep(cv, np.asarray(np.full(shape, value, dtype=object), dtype=object), True)
            bb = (cv, p.env[cv], True)
        else:
            bb = p.pick(a[1].shape, nonneg=needs_nonneg)
        if bb is None:
            return
        x, y = a[1], bb[1]
        if name in ("arith.div", "arith.rem") and np.any(y == 0):
            return
        if name in ("arith.shl", "arith.shr") and (np.any(y < 0) or np.any(y > 8)):
            return
        if name == "tt.addptr":
            base = p.data.draw(st.sampled_from(["aligned", "odd"]))
            ptr_arg = next(v for v in p.env if isinstance(v.type, PointerType)
                           and (p.func.attrs["arg_divisibility"][v.index] == 16) == (base == "aligned"))
            ps = ptr_arg if not x.shape else b.value("tt.splat", [ptr_arg], TensorType(x.shape, PointerType(f32)))
            p.env[ps] = np.full(x.shape, p.env[ptr_arg].item(), dtype=object) if x.shape else p.env[ptr_arg]
            v = b.value("tt.addptr", [ps, a[0]], ps.type)
            p.env[v] = np.asarray(p.env[ps] + x * 4, dtype=object)
            p.pointers.append(v)
            return
        ops = {"arith.add": lambda: x + y, "arith.sub": lambda: x - y, "arith.mul": lambda: x * y,
               "arith.div": lambda: x // y, "arith.rem": lambda: x % y, "arith.and": lambda: x & y,
               "arith.or": lambda: x | y, "arith.xor": lambda: x ^ y, "arith.shl": lambda: x << y,
               "arith.shr": lambda: x >> y}
        v = b.value(name, [a[0], bb[0]], a[0].type)
        p._keep(v, np.asarray(ops[name](), dtype=object), a[2] and bb[2] and name != "arith.sub")
    elif choice == "cmp_select":
        a = p.pick()
        if a is None:
            return
        bb = p.pick(a[1].shape)
        scalars = [v for v in p.values if v[1].shape == () and isinstance(v[0].type, type(i32))]
        if a[1].shape and d.draw(st.booleans()):
            n = d.draw(st.sampled_from(scalars))
            sp = b.value("tt.splat", [n[0]], a[0].type)
            p._keep(sp, np.asarray(np.full(a[1].shape, n[1].item(), dtype=object), dtype=object), n[2])
            bb = (sp, p.env[sp], n[2])
        pred = d.draw(st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]))
        c = b.value("arith.cmp", [a[0], bb[0]], TensorType(a[1].shape, i1) if a[1].shape else i1, predicate=pred)
        fn = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
              "ne": np.not_equal}[pred]
        cond = np.asarray(fn(a[1], bb[1]), dtype=bool)
        p.env[c] = cond.astype(int).astype(object)
        p.masks.append(c)
        s = b.value("arith.select", [c, a[0], bb[0]], a[0].type)
        p._keep(s, np.asarray(np.where(cond, a[1], bb[1]), dtype=object), a[2] and bb[2])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_axis_info_is_sound_on_random_programs(data):
    p = _Program(data, [("int", 16), ("int", 1), ("ptr", 16), ("ptr", 1)])
    for _ in range(data.draw(st.integers(3, 14))):
        _grow(p)
    p.b.create("tt.return")
    verify(p.func)
    analysis = AxisInfoAnalysis(p.func)
    for v, arr, _ in p.values:
        assert holds(analysis[v], arr, 1), (str(p.func), v.type, analysis[v], arr)
    for v in p.pointers:
        assert holds(analysis[v], p.env[v], 4), (str(p.func), analysis[v], p.env[v])
    for v in p.masks:
        info = analysis[v]
        assert holds(AxisInfo((1,) * info.rank, (1,) * info.rank, info.constancy), p.env[v], 1), \
            (str(p.func), info, p.env[v])
