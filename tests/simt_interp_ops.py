"""Op rules of the simt interpreter (see simt_interp.py): one function per op family."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np

from simt_interp import (CTA, SMALL_FLOATS, InterpError, _from_bytes, _to_bytes, bits_of, c_format, from_bits,
                         np_dtype, round_to)
from tile.ir.core import Operation
from tile.ir.types import DType, PointerType, f32, f64, i1
from tile.runtime.interp_bits import APPROX
from tile.runtime.interp_rounding import float_to_int, int_to_float, round_pair, rounded_binary, rounded_fma, \
    rounded_sqrt

Rule = Callable[[CTA, Operation, np.ndarray], object]
OPS: dict[str, Rule] = {}


def rule(*names: str):
    def wrap(fn: Rule) -> Rule:
        for n in names:
            OPS[n] = fn
        return fn

    return wrap


def _v(cta: CTA, op: Operation) -> list[np.ndarray]:
    return [cta.env[v] for v in op.operands]


def _wrap_int(x: np.ndarray, t: DType) -> np.ndarray:
    """Python-int-valued array (object or int64) wrapped to the integer type t."""
    obj = np.asarray(x, dtype=object)
    m = (1 << t.bits) - 1
    w = np.array([int(v) & m for v in obj.ravel()], dtype=object)
    if t.is_signed:
        w = np.array([v - (1 << t.bits) if v >> (t.bits - 1) else v for v in w], dtype=object)
    return w.astype(np_dtype(t)) if len(w) else np.zeros(0, np_dtype(t))


def _ints(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(object)


@rule("arith.constant")
def _constant(cta, op, mask):
    return cta.full(op.attrs["value"], op.result.type)


@rule("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.and", "arith.or", "arith.xor",
      "arith.max", "arith.min", "arith.shl", "arith.shr", "math.umulhi", "math.mulhi", "math.mul24")
def _binary(cta, op, mask):
    a, b = _v(cta, op)
    t = op.result.type
    name = op.name.split(".")[1]
    if t == i1:
        return {"and": a & b, "or": a | b, "xor": a ^ b}[name]
    if t.is_floating and op.attrs.get("rounding"):
        return rounded_binary(op.name, a, b, t, op.attrs["rounding"])
    if t.is_floating:
        if name in ("max", "min"):
            f = {"max": np.maximum, "min": np.minimum} if op.attrs.get("propagate_nan") else \
                {"max": np.fmax, "min": np.fmin}
            return f[name](a, b)
        if t.name in SMALL_FLOATS or t.bits == 16:
            raise InterpError(f"{op.name} on {t} should have been widened")
        if name == "div":
            return (a / b).astype(a.dtype)
        return {"add": a + b, "sub": a - b, "mul": a * b}[name].astype(a.dtype)
    ia, ib = _ints(a), _ints(b)
    if name in ("add", "sub", "mul"):
        return _wrap_int({"add": ia + ib, "sub": ia - ib, "mul": ia * ib}[name], t)
    if name in ("div", "rem"):
        q = np.array([0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(ia, ib)],
                     dtype=object)
        return _wrap_int(q if name == "div" else ia - q * ib, t)
    if name in ("and", "or", "xor"):
        return {"and": a & b, "or": a | b, "xor": a ^ b}[name]
    if name in ("max", "min"):
        return np.maximum(a, b) if name == "max" else np.minimum(a, b)
    if name == "umulhi":
        m = (1 << t.bits) - 1
        return _wrap_int(np.array([((x & m) * (y & m)) >> t.bits for x, y in zip(ia, ib)], dtype=object), t)
    if name == "mulhi":  # the operands' own signedness
        return _wrap_int(np.array([(x * y) >> t.bits for x, y in zip(ia, ib)], dtype=object), t)
    if name == "mul24":
        low = (lambda v: ((v & 0xFFFFFF) ^ 0x800000) - 0x800000) if t.is_signed else (lambda v: v & 0xFFFFFF)
        return _wrap_int(np.array([low(x) * low(y) for x, y in zip(ia, ib)], dtype=object), t)
    amt = np.array([int(y) & ((1 << 32) - 1) for y in ib], dtype=object)
    if name == "shl":
        return _wrap_int(np.array([0 if s >= t.bits else x << s for x, s in zip(ia, amt)], dtype=object), t)
    m = (1 << t.bits) - 1
    if t.is_signed:
        return _wrap_int(np.array([(x >> min(s, t.bits)) for x, s in zip(ia, amt)], dtype=object), t)
    return _wrap_int(np.array([0 if s >= t.bits else (x & m) >> s for x, s in zip(ia, amt)], dtype=object), t)


@rule("arith.cmp")
def _cmp(cta, op, mask):
    a, b = _v(cta, op)
    p = op.attrs["predicate"]
    if a.dtype == bool:
        a, b = a.astype(np.int8), b.astype(np.int8)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[p]


@rule("arith.select")
def _select(cta, op, mask):
    c, a, b = _v(cta, op)
    return np.where(c, a, b)


@rule("arith.neg", "arith.not", "math.abs", "math.sqrt", "math.floor", "math.ceil", "math.trunc", "math.rint")
def _unary(cta, op, mask):
    (a,) = _v(cta, op)
    t = op.result.type
    name = op.name
    if name == "arith.not":
        return ~a
    if name == "arith.neg":
        return -a if t.is_floating else _wrap_int(-_ints(a), t)
    if name == "math.abs":
        return np.abs(a) if t.is_floating else _wrap_int(np.abs(_ints(a)), t)
    if op.attrs.get("rounding"):
        return rounded_sqrt(a, t, op.attrs["rounding"])
    return {"math.sqrt": np.sqrt, "math.floor": np.floor, "math.ceil": np.ceil, "math.trunc": np.trunc,
            "math.rint": np.rint}[name](a).astype(a.dtype)


def _unsigned(x: int, bits: int) -> int:
    return int(x) & ((1 << bits) - 1)


@rule("math.clz", "math.popc", "math.brev")
def _bit_unary(cta, op, mask):
    (a,) = _v(cta, op)
    bits = op.operand(0).type.bits
    u = [_unsigned(x, bits) for x in a]
    if op.name == "math.clz":
        return np.array([bits - x.bit_length() for x in u], np.int32)
    if op.name == "math.popc":
        return np.array([bin(x).count("1") for x in u], np.int32)
    return _wrap_int(np.array([int(format(x, f"0{bits}b")[::-1], 2) for x in u], dtype=object), op.result.type)


@rule("math.sad", "math.byte_perm")
def _bit_ternary(cta, op, mask):
    a, b, c = (_ints(v) for v in _v(cta, op))
    t = op.result.type
    if op.name == "math.sad":
        return _wrap_int(np.array([abs(x - y) + z for x, y, z in zip(a, b, c)], dtype=object), t)
    out = []
    for x, y, sel in zip(a, b, c):
        pool = (_unsigned(y, 32) << 32) | _unsigned(x, 32)
        word = 0
        for n in range(4):
            nibble = (_unsigned(sel, 32) >> (4 * n)) & 0xF
            byte = (pool >> (8 * (nibble & 7))) & 0xFF
            if nibble & 8:
                byte = 0xFF if byte & 0x80 else 0
            word |= byte << (8 * n)
        out.append(word)
    return _wrap_int(np.array(out, dtype=object), t)


def _fma1(a: float, b: float, c: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    try:
        return float(exact) if exact != 0 else (a * b + c)
    except OverflowError:
        return math.copysign(math.inf, exact)


_fma_vec = np.frompyfunc(_fma1, 3, 1)


def fma64(a, b, c) -> np.ndarray:
    """a * b + c with one rounding (exact rational arithmetic, then round to nearest)."""
    return np.asarray(_fma_vec(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64)),
                      dtype=np.float64)


def fma32(a, b, c) -> np.ndarray:
    """f32 fma: the product is exact in long double (48 bits), the sum rounds there and then to f32
    (a double rounding only off when the long double lands exactly on an f32 tie)."""
    ld = np.longdouble
    return (np.asarray(a).astype(ld) * np.asarray(b).astype(ld) + np.asarray(c).astype(ld)).astype(np.float32)


@rule("math.fma")
def _fma(cta, op, mask):
    a, b, c = _v(cta, op)
    if op.attrs.get("rounding"):
        return rounded_fma(a, b, c, op.result.type, op.attrs["rounding"])
    return fma32(a, b, c) if op.result.type == f32 else fma64(a, b, c)


@rule("arith.bitcast")
def _bitcast(cta, op, mask):
    (a,) = _v(cta, op)
    return from_bits(bits_of(a, op.operand(0).type), op.result.type)


@rule("simt.cvt")
def _cvt(cta, op, mask):
    (a,) = _v(cta, op)
    src, dst = op.operand(0).type, op.result.type
    rnd = op.attrs.get("rnd", "")
    mode = {"rn": "rn", "rz": "rz", "rm": "rd", "rp": "ru", "rni": "rn", "rzi": "rz", "rmi": "rd", "rpi": "ru"}.get(rnd)
    if rnd in ("rni", "rzi", "rmi", "rpi"):
        if dst.is_integer:  # saturating; NaN as the GPU converts it (see interp_rounding.float_to_int)
            return float_to_int(a.astype(np.float64), src, np_dtype(dst), mode)
        f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd]
        return round_to(f(a.astype(np.float64)), dst)
    if src.is_integer and dst.is_integer:
        return _wrap_int(_ints(a), dst)
    if dst in (f32, f64) and mode in ("rd", "ru") or (dst == f32 and src.bits == 64 and mode):
        if src.is_integer:  # exact rounding of 64-bit integers (not through float64)
            return int_to_float(a, dst, mode)
        return round_pair(a.astype(np.float64), np.zeros(a.shape, np.int8), dst, mode)
    if dst.is_floating:
        exact = src.is_floating and (src.bits < dst.bits or src.is_fp8)
        if not rnd and not exact:
            raise InterpError(f"cvt {src} -> {dst} needs a rounding mode")
        x = a.astype(np.float64)
        r = round_to(x, dst, "rz" if rnd == "rz" else "rn")
        if dst.name == "f16":  # the GPU gives the canonical NaN 0x7FFF (seen on an H100)
            r = np.where(np.isnan(r), np.uint16(0x7FFF).view(np.float16), r)
        if dst.is_fp8:  # .satfinite
            big = np.float32(448.0 if dst.name == "f8e4nv" else 57344.0)
            r = np.where(np.isnan(x), r, np.clip(np.where(np.isinf(r), np.sign(x) * big, r), -big, big))
        return r
    raise InterpError(f"cvt {src} -> {dst} needs a rounding mode")


@rule("simt.pack")
def _pack(cta, op, mask):
    parts = _v(cta, op)
    width = 64 if isinstance(op.operand(0).type, PointerType) else op.operand(0).type.bits
    out = np.zeros(cta.n, dtype=object)
    for i, (p, v) in enumerate(zip(parts, op.operands)):
        out = out + (_ints(bits_of(p, v.type)) << (width * i))
    return from_bits(np.array(list(out), dtype=object).astype(np.uint64), op.result.type)


@rule("simt.unpack")
def _unpack(cta, op, mask):
    (w,) = _v(cta, op)
    bits = _ints(bits_of(w, op.operand(0).type))
    width = op.results[0].type.bits
    m = (1 << width) - 1
    return [from_bits(np.array([(int(x) >> (width * i)) & m for x in bits], dtype=np.uint64), r.type)
            for i, r in enumerate(op.results)]


@rule("simt.approx")
def _approx(cta, op, mask):
    fn = op.attrs["fn"]
    if fn in ("div", "rcp64h"):  # the units' special cases, as the tile interpreter models them
        return APPROX[fn](*_v(cta, op))
    (a,) = _v(cta, op)
    x = a.astype(np.float64)
    if fn == "ex2":
        r = np.exp2(x).astype(np.float32)
        return np.where(np.abs(r) < np.float32(2.0 ** -126), np.float32(0), r)
    f = {"lg2": np.log2, "sin": np.sin, "cos": np.cos, "rsqrt": lambda v: 1 / np.sqrt(v), "rcp": lambda v: 1 / v,
         "tanh": np.tanh}[fn]
    return f(x).astype(np.float32)


@rule("simt.tid")
def _tid(cta, op, mask):
    return cta.tid.copy()


@rule("simt.ctaid", "simt.nctaid")
def _ctaid(cta, op, mask):
    src = cta.ctaid if op.name == "simt.ctaid" else cta.grid
    return cta.full(src[op.attrs["axis"]], op.result.type)


@rule("simt.addptr")
def _addptr(cta, op, mask):
    p, i = _v(cta, op)
    return p + i.astype(np.int64) * op.attrs["scale"]


@rule("simt.smem_addr")
def _smem_addr(cta, op, mask):
    return cta.full(op.attrs["offset"], op.result.type)


def _elem_size(t) -> int:
    return 8 if isinstance(t, PointerType) else max(1, t.bits // 8)


def _poison(t, n: int) -> np.ndarray:
    if isinstance(t, DType) and t.is_floating:
        return np.full(n, np.nan, dtype=np_dtype(t))
    if t == i1:
        return np.zeros(n, dtype=bool)
    return np.full(n, 0x5A, dtype=np_dtype(t))


@rule("simt.ld_global", "simt.ld_shared")
def _load(cta, op, mask):
    addr, pred, *others = _v(cta, op)
    active = mask & pred
    t = op.results[0].type
    size = _elem_size(t)
    shared = op.name == "simt.ld_shared"
    out = []
    for j, r in enumerate(op.results):
        a = addr.astype(np.int64) + op.attrs.get("offset", 0) + j * size
        vals = others[j].copy() if others else _poison(t, cta.n)
        if active.any():
            if shared:
                cta.smem_access(a, size, active, write=False)
                raw = np.stack([cta.smem[x:x + size] for x in a[active]])
            else:
                cta.m.check(a[active], size)
                raw = np.stack([cta.m.heap[x:x + size] for x in a[active]])
            vals[active] = _from_bytes(raw, t)
        out.append(vals)
    return out


@rule("simt.st_global", "simt.st_shared")
def _store(cta, op, mask):
    addr, pred, *vals = _v(cta, op)
    active = mask & pred
    t = op.operand(2).type
    size = _elem_size(t)
    shared = op.name == "simt.st_shared"
    for j, v in enumerate(vals):
        a = addr.astype(np.int64) + op.attrs.get("offset", 0) + j * size
        if not active.any():
            continue
        raw = _to_bytes(v, t)
        if shared:
            cta.smem_access(a, size, active, write=True)
        else:
            cta.m.check(a[active], size)
        mem = cta.smem if shared else cta.m.heap
        for tid in np.nonzero(active)[0]:
            mem[a[tid]:a[tid] + size] = raw[tid]


def _atomic_apply(kind: str, old, v, t):
    if kind == "exch":
        return v
    if kind == "add":
        if t.is_floating:
            return (np.array([old], dtype=np_dtype(t)) + np.array([v], dtype=np_dtype(t)))[0]
        return _wrap_int(np.array([int(old) + int(v)], dtype=object), t)[0]
    if kind in ("max", "min"):
        f = max if kind == "max" else min
        return f(old, v) if not t.is_floating else (np.fmax if kind == "max" else np.fmin)(old, v)
    return {"and": old & v, "or": old | v, "xor": old ^ v}[kind]


@rule("simt.atom", "simt.red", "simt.atom_cas")
def _atomic(cta, op, mask):
    addr, pred, *vals = _v(cta, op)
    active = mask & pred
    t = op.operand(2).type
    size = _elem_size(t)
    a = addr.astype(np.int64) + op.attrs.get("offset", 0)
    out = np.zeros(cta.n, dtype=np_dtype(t))
    shared = not isinstance(op.operand(0).type, PointerType)
    mem = cta.smem if shared else cta.m.heap
    if active.any():
        if shared:
            cta.smem_access(a, size, active, write=True, atomic=True)
        else:
            cta.m.check(a[active], size)
    for tid in np.nonzero(active)[0]:
        cur = _from_bytes(mem[a[tid]:a[tid] + size][None, :], t)[0]
        out[tid] = cur
        if op.name == "simt.atom_cas":
            new = vals[1][tid] if bits_of(np.array([cur]), t)[0] == bits_of(vals[0][tid:tid + 1], t)[0] else cur
        else:
            new = _atomic_apply(op.attrs["kind"], cur, vals[0][tid], t)
        mem[a[tid]:a[tid] + size] = _to_bytes(np.array([new], dtype=np_dtype(t)), t)[0]
    return None if op.name == "simt.red" else out


@rule("simt.shfl")
def _shfl(cta, op, mask):
    x, b = _v(cta, op)
    if not mask.all():
        raise InterpError("shfl.sync with inactive threads")
    lane = cta.tid & 31
    base = cta.tid - lane
    mode = op.attrs["mode"]
    if mode == "bfly":
        src = lane ^ (b & 31)
    elif mode == "up":
        src = np.where(lane - b >= 0, lane - b, lane)
    elif mode == "down":
        src = np.where(lane + b <= 31, lane + b, lane)
    else:
        src = b & 31
    return x[base + src]


@rule("simt.barrier")
def _barrier(cta, op, mask):
    if not mask.all():
        raise InterpError("bar.sync with inactive threads")
    cta.epoch += 1


@rule("simt.vprintf")
def _vprintf(cta, op, mask):
    args = _v(cta, op)
    for tid in np.nonzero(mask)[0]:
        cta.m.printed.append(c_format(op.attrs["format"], [a[tid] for a in args]))


@rule("simt.assertfail")
def _assertfail(cta, op, mask):
    if mask.any():
        raise AssertionError(f"device assert: {op.attrs['message']} ({op.attrs['file']}:{op.attrs['line']})")


@rule("simt.trap")
def _trap(cta, op, mask):
    if mask.any():
        raise InterpError("trap")


@rule("scf.for")
def _for(cta, op, mask):
    lb, ub, step = (int(x[np.argmax(mask)]) for x in _v(cta, op)[:3])
    body = op.regions[0].block
    carried = [cta.env[v] for v in op.operands[3:]]
    for i in range(lb, ub, step):
        cta.set(body.args[0], cta.full(i, body.args[0].type), mask)
        for a, v in zip(body.args[1:], carried):
            cta.set(a, v, mask)
        term = cta.block(body, mask)
        carried = [cta.env[v] for v in term.operands]
    return carried


@rule("scf.if")
def _if(cta, op, mask):
    (c,) = _v(cta, op)
    outs = []
    for region, m in ((op.regions[0], mask & c), (op.regions[1], mask & ~c)):
        term = cta.block(region.block, m) if m.any() else None
        outs.append([cta.env[v] for v in term.operands] if term is not None else None)
    if not op.results:
        return None
    then_vals, else_vals = outs
    return [np.where(c, t if t is not None else e, e if e is not None else t) for t, e in
            zip(then_vals or else_vals, else_vals or then_vals)]


@rule("scf.while")
def _while(cta, op, mask):
    before, after = op.regions[0].block, op.regions[1].block
    args = _v(cta, op)
    results = [_poison(r.type, cta.n) for r in op.results]
    active = mask.copy()
    while active.any():
        for a, v in zip(before.args, args):
            cta.set(a, v, active)
        cond = cta.block(before, active)
        c = cta.env[cond.operand(0)]
        fwd = [cta.env[v] for v in cond.operands[1:]]
        leaving = active & ~c
        results = [np.where(leaving, f, r) for f, r in zip(fwd, results)]
        active = active & c
        if not active.any():
            break
        for a, v in zip(after.args, fwd):
            cta.set(a, v, active)
        term = cta.block(after, active)
        args = [cta.env[v] for v in term.operands]
    return results


import simt_interp_tc  # noqa: E402,F401  (registers the tensor-core and cp.async rules)

__all__ = ["OPS", "fma32", "fma64", "f64"]
