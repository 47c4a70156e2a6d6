"""Lowering of elementwise ops, constants, splat, arange, program ids and pointer arithmetic.

Each register of the result is computed from the same register of the operands:

    %z = arith.add %x, %y : tensor<512xf32, #L>     ->   %z0 = arith.add %x0, %y0 : f32
                                                         %z1 = arith.add %x1, %y1 : f32 ...

Types without their own PTX arithmetic are widened (the simt IR has integer arithmetic on
32/64 bits and float arithmetic on f32/f64 only):
  * f16, bf16 and fp8 arithmetic, comparisons and math functions run in f32 and round once
    to the narrow type (cvt.rn): for + - * / and sqrt this equals the correctly rounded
    narrow result (f32 has more than 2p+2 bits), the same values native f16 units give;
  * i8/i16/u8/u16 arithmetic runs in 32 bits (extended by signedness) and is truncated back;
  * i1 lives in predicates: and/or/xor/not are predicate ops, add/sub are xor, mul/min are
    and, max is or (i1 compares as unsigned 0 < 1).
Math functions come from math_lib (their accuracy is stated there). A `rounding` attribute
(f32/f64 add sub mul div fma sqrt) stays on the per-thread op and prints as the PTX rounding
modifier; the integer bit ops (clz popc brev byte_perm mulhi mul24 sad) are one instruction
each on 32/64-bit registers; math.approx becomes simt.approx (the .approx units).
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region, Value
from ..ir.types import DType, PointerType, element_type, f32, f64, i1, i32, i64, u32, u64
from . import math_lib
from .lower_cast import convert
from .lower_core import Lowering, LoweringError, lowers, wrap

_BINARY = ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.and", "arith.or", "arith.xor",
           "arith.shl", "arith.shr", "arith.max", "arith.min", "math.umulhi", "math.mulhi", "math.mul24")
_UNARY = ("arith.neg", "arith.not", "math.abs", "math.exp", "math.exp2", "math.log", "math.log2", "math.sqrt",
          "math.rsqrt", "math.sin", "math.cos", "math.erf", "math.floor", "math.ceil", "math.trunc", "math.rint",
          "math.clz", "math.popc", "math.brev")
_TERNARY = ("math.fma", "math.sad", "math.byte_perm")
_FLOAT_ONLY = ("math.exp", "math.exp2", "math.log", "math.log2", "math.sin", "math.cos", "math.erf", "math.sqrt",
               "math.rsqrt", "math.floor", "math.ceil", "math.trunc", "math.rint", "math.fma", "math.approx")
_INT_ONLY = ("arith.and", "arith.or", "arith.xor", "arith.shl", "arith.shr", "arith.not", "math.umulhi", "math.mulhi",
             "math.mul24", "math.sad", "math.clz", "math.popc", "math.brev", "math.byte_perm")
_MATH_LIB = {"math.exp": math_lib.exp, "math.exp2": math_lib.exp2, "math.log": math_lib.log,
             "math.log2": math_lib.log2, "math.sin": math_lib.sin, "math.cos": math_lib.cos,
             "math.erf": math_lib.erf, "math.rsqrt": math_lib.rsqrt}
_I1_AS = {"arith.add": "arith.xor", "arith.sub": "arith.xor", "arith.mul": "arith.and", "arith.min": "arith.and",
          "arith.max": "arith.or", "arith.and": "arith.and", "arith.or": "arith.or", "arith.xor": "arith.xor"}


class SimtMath:
    """math_lib's operations on f32 or f64 simt values."""

    def __init__(self, ctx: Lowering, t: DType):
        self.ctx, self.t, self.bits = ctx, t, t.bits
        self.int_t = i32 if t.bits == 32 else i64

    def c(self, x: float) -> Value:
        return self.ctx.const(x, self.t)

    def _bin(self, name: str, a: Value, b: Value) -> Value:
        return self.ctx.op(name, [a, b], self.t)

    def add(self, a, b): return self._bin("arith.add", a, b)  # noqa: E704
    def sub(self, a, b): return self._bin("arith.sub", a, b)  # noqa: E704
    def mul(self, a, b): return self._bin("arith.mul", a, b)  # noqa: E704
    def div(self, a, b): return self._bin("arith.div", a, b)  # noqa: E704
    def fmax(self, a, b): return self._bin("arith.max", a, b)  # noqa: E704
    def fmin(self, a, b): return self._bin("arith.min", a, b)  # noqa: E704

    def fma(self, a: Value, b: Value, c: Value) -> Value:
        return self.ctx.op("math.fma", [a, b, c], self.t)

    def neg(self, a: Value) -> Value:
        return self.ctx.op("arith.neg", [a], self.t)

    def abs(self, a: Value) -> Value:
        return self.ctx.op("math.abs", [a], self.t)

    def sqrt(self, a: Value) -> Value:
        return self.ctx.op("math.sqrt", [a], self.t)

    def floor(self, a: Value) -> Value:
        return self.ctx.op("math.floor", [a], self.t)

    def rint(self, a: Value) -> Value:
        return self.ctx.op("simt.cvt", [a], self.t, rnd="rni")

    def trunc(self, a: Value) -> Value:
        return self.ctx.op("simt.cvt", [a], self.t, rnd="rzi")

    def select(self, p: Value, a: Value, b: Value) -> Value:
        return self.ctx.op("arith.select", [p, a, b], a.type)

    def _cmp(self, pred: str, a: Value, b: Value) -> Value:
        return self.ctx.op("arith.cmp", [a, b], i1, predicate=pred)

    def lt(self, a, b): return self._cmp("lt", a, b)  # noqa: E704
    def le(self, a, b): return self._cmp("le", a, b)  # noqa: E704
    def gt(self, a, b): return self._cmp("gt", a, b)  # noqa: E704
    def ge(self, a, b): return self._cmp("ge", a, b)  # noqa: E704
    def eq(self, a, b): return self._cmp("eq", a, b)  # noqa: E704
    def ne(self, a, b): return self._cmp("ne", a, b)  # noqa: E704

    def isnan(self, a: Value) -> Value:
        return self._cmp("ne", a, a)

    def and_(self, p: Value, q: Value) -> Value:
        return self.ctx.op("arith.and", [p, q], i1)

    def or_(self, p: Value, q: Value) -> Value:
        return self.ctx.op("arith.or", [p, q], i1)

    def approx(self, fn: str, x: Value) -> Value:
        return self.ctx.op("simt.approx", [x], f32, fn=fn)

    def _bits(self, a: Value) -> Value:
        return self.ctx.op("arith.bitcast", [a], self.int_t)

    def _float(self, bits: Value) -> Value:
        return self.ctx.op("arith.bitcast", [bits], self.t)

    def _int(self, x: int) -> Value:
        return self.ctx.const(x, self.int_t)

    def copysign(self, a: Value, b: Value) -> Value:
        sign = 1 << (self.bits - 1)
        mag = self.ctx.op("arith.and", [self._bits(a), self._int(sign - 1)], self.int_t)
        sgn = self.ctx.op("arith.and", [self._bits(b), self._int(sign)], self.int_t)
        return self._float(self.ctx.op("arith.or", [mag, sgn], self.int_t))

    def pow2(self, k: Value) -> Value:
        mbits, bias = (23, 127) if self.bits == 32 else (52, 1023)
        e = self.ctx.op("simt.cvt", [k], self.int_t, rnd="rzi")
        biased = self.ctx.op("arith.add", [e, self._int(bias)], self.int_t)
        return self._float(self.ctx.op("arith.shl", [biased, self._int(mbits)], self.int_t))

    def frexp(self, x: Value) -> tuple[Value, Value]:
        mbits, bias, emask = (23, 127, 0xFF) if self.bits == 32 else (52, 1023, 0x7FF)
        ctx, it = self.ctx, self.int_t
        small = self.lt(x, self.c(2.0 ** (1 - bias)))
        x = self.select(small, self.mul(x, self.c(2.0 ** (mbits + 2))), x)
        bits = self._bits(x)
        field = ctx.op("arith.and", [ctx.op("arith.shr", [bits, self._int(mbits)], it), self._int(emask)], it)
        e = ctx.op("simt.cvt", [ctx.op("arith.sub", [field, self._int(bias)], it)], self.t, rnd="rn")
        e = self.select(small, self.sub(e, self.c(float(mbits + 2))), e)
        frac = ctx.op("arith.and", [bits, self._int((1 << mbits) - 1)], it)
        mant = self._float(ctx.op("arith.or", [frac, self._int(bias << mbits)], it))
        return mant, e


# ------------------------------------------------------------------------------ scalar ops

_PROMOTED_INT = {("int", 8): i32, ("int", 16): i32, ("uint", 8): u32, ("uint", 16): u32}


def scalar_op(ctx: Lowering, name: str, vals: list[Value], el: DType, attrs: dict) -> Value:
    """One elementwise op on per-thread values of element type `el` (arith.cmp gives i1)."""
    if el.is_floating and el.bits <= 16:
        wide = [convert(ctx, v, f32) for v in vals]
        r = scalar_op(ctx, name, wide, f32, attrs)
        return r if name == "arith.cmp" else convert(ctx, r, el)
    if isinstance(el, DType) and el.is_integer and 1 < el.bits < 32:
        wide_t = _PROMOTED_INT[el.kind, el.bits]
        wide = [convert(ctx, v, wide_t) for v in vals]
        if name == "math.umulhi":
            prod = ctx.op("arith.mul", wide, wide_t)
            r = ctx.op("arith.shr", [prod, ctx.const(el.bits, wide_t)], wide_t)
        else:
            r = scalar_op(ctx, name, wide, wide_t, attrs)
        return r if name == "arith.cmp" else convert(ctx, r, el)
    if el == i1:
        if name in ("arith.cmp", "arith.not"):
            return ctx.op(name, vals, i1, **attrs)
        if name in ("arith.neg", "math.abs"):
            return vals[0]
        if name not in _I1_AS:
            raise LoweringError(ctx.func, f"{name} is not defined on i1")
        return ctx.op(_I1_AS[name], vals, i1)
    if name == "arith.cmp":
        return _cmp(ctx, vals, attrs["predicate"])
    if el.is_integer:
        if name == "arith.add":
            return ctx.add(*vals)
        if name == "arith.sub":
            return ctx.sub(*vals)
        if name == "arith.mul":
            return ctx.mul(*vals)
        if name in _FLOAT_ONLY:
            raise LoweringError(ctx.func, f"{name} is defined on floats only, not {el}")
        return ctx.op(name, vals, i32 if name in ("math.clz", "math.popc") else el)
    m = SimtMath(ctx, el)
    if name in _MATH_LIB:
        return _MATH_LIB[name](m, vals[0])
    if name == "arith.rem":
        if el == f32:
            wide = [convert(ctx, v, f64) for v in vals]
            return convert(ctx, math_lib.fmod(SimtMath(ctx, f64), *wide, math_lib.FMOD_STEPS[32]), f32)
        return _fmod_loop(ctx, m, *vals)
    if name in ("arith.max", "arith.min") and attrs.get("propagate_nan"):
        return ctx.op(name, vals, el, propagate_nan=True)
    if name in ("arith.div", "math.sqrt") and attrs.get("approx") and el == f32:
        return ctx.op(name, vals, el, approx=True)
    if name in _INT_ONLY:
        raise LoweringError(ctx.func, f"{name} is defined on integers only, not {el}")
    if name == "math.approx":
        return ctx.op("simt.approx", vals, el, fn=attrs["fn"])
    if attrs.get("rounding"):
        return ctx.op(name, vals, el, rounding=attrs["rounding"])
    return ctx.op(name, vals, el)


def _fmod_loop(ctx: Lowering, m: SimtMath, x: Value, y: Value) -> Value:
    """f64 fmod: math_lib's reduction step in a loop (per thread) while |x| >= |y| remains."""
    a0, b, eb, finite = math_lib.fmod_prepare(m, x, y)
    before, after = Block([f64]), Block([f64])
    loop = ctx.effect("scf.while", [a0], [f64])
    loop.add_region(Region([before]))
    loop.add_region(Region([after]))
    with ctx.at_block(before):
        ctx.effect("scf.condition", [m.ge(before.args[0], b), before.args[0]])
    with ctx.at_block(after):
        ctx.effect("scf.yield", [math_lib.fmod_step(m, after.args[0], b, eb)])
    return math_lib.fmod_finish(m, x, y, loop.result, finite)


def _cmp(ctx: Lowering, vals: list[Value], pred: str) -> Value:
    (ba, ca), (bb, cb) = ctx.split(vals[0]), ctx.split(vals[1])
    if ba is None and bb is None:  # both integer constants
        t = vals[0].type
        a, b = wrap(ca, t), wrap(cb, t)
        result = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[pred]
        return ctx.const(result, i1)
    return ctx.op("arith.cmp", vals, i1, predicate=pred)


def select(ctx: Lowering, c: Value, a: Value, b: Value) -> Value:
    const = ctx.const_value(c)
    if const is not None:
        return a if const else b
    if a is b:
        return a
    return ctx.op("arith.select", [c, a, b], a.type)


# ------------------------------------------------------------------------------ op lowerings


def _regs(ctx: Lowering, v: Value, n: int) -> list[Value]:
    regs = ctx.get(v)
    return regs * n if len(regs) == 1 and n > 1 else regs


@lowers(*_BINARY, *_UNARY, *_TERNARY, "arith.cmp", "math.approx")
def _lower_elementwise(ctx: Lowering, op: Operation) -> None:
    el = element_type(op.operand(0).type)
    n = ctx.info(op.result.type).num_regs
    operands = [_regs(ctx, v, n) for v in op.operands]
    attrs = {k: v for k, v in op.attrs.items() if k in ("predicate", "propagate_nan", "approx", "rounding", "fn")}
    if isinstance(el, PointerType):
        if op.name != "arith.cmp":
            raise LoweringError(op, "pointers only compare; use tt.addptr for arithmetic")
        el = u64  # addresses compare unsigned
        operands = [[ctx.op("arith.bitcast", [r], u64) for r in regs] for regs in operands]
    try:
        ctx.set(op.result, [scalar_op(ctx, op.name, [r[i] for r in operands], el, attrs) for i in range(n)])
    except LoweringError as e:
        raise LoweringError(op, str(e).split(": ", 1)[-1]) from None


@lowers("arith.select")
def _lower_select(ctx: Lowering, op: Operation) -> None:
    n = ctx.info(op.result.type).num_regs
    c, a, b = (_regs(ctx, v, n) for v in op.operands)
    ctx.set(op.result, [select(ctx, c[i], a[i], b[i]) for i in range(n)])


@lowers("arith.constant")
def _lower_constant(ctx: Lowering, op: Operation) -> None:
    t = op.result.type
    n = ctx.info(t).num_regs
    ctx.set(op.result, [ctx.const(op.attrs["value"], element_type(t))] * n)


@lowers("tt.splat")
def _lower_splat(ctx: Lowering, op: Operation) -> None:
    ctx.set(op.result, ctx.get(op.operand(0)) * ctx.info(op.result.type).num_regs)


@lowers("tt.hint")
def _lower_hint(ctx: Lowering, op: Operation) -> None:
    ctx.set(op.result, ctx.get(op.operand(0)))


@lowers("tt.program_id", "tt.num_programs")
def _lower_program_id(ctx: Lowering, op: Operation) -> None:
    name = "simt.ctaid" if op.name == "tt.program_id" else "simt.nctaid"
    ctx.set(op.result, [ctx.op(name, [], i32, axis=op.attrs["axis"])])


@lowers("tt.arange")
def _lower_arange(ctx: Lowering, op: Operation) -> None:
    info = ctx.info(op.result.type)
    start = op.attrs["start"]
    thread = ctx.from_tid([b[0] for b in info.tid_bases])
    span = info.thread_span(0)
    regs = [ctx.coord_plus(thread, span, c[0]) for c in info.reg_coords]
    ctx.set(op.result, [ctx.add(r, ctx.const(start, i32)) if start else r for r in regs])


def pointee_bytes(t) -> int:
    p = element_type(t).pointee
    return 8 if isinstance(p, PointerType) else p.bytes


@lowers("tt.addptr")
def _lower_addptr(ctx: Lowering, op: Operation) -> None:
    n = ctx.info(op.result.type).num_regs
    ptrs, offs = _regs(ctx, op.operand(0), n), _regs(ctx, op.operand(1), n)
    size = pointee_bytes(op.result.type)
    out = []
    for p, o in zip(ptrs, offs):
        if o.type.bits < 32:
            o = convert(ctx, o, i32 if o.type.is_signed or o.type == i1 else u32)
        out.append(ctx.addptr(p, o, size))
    ctx.set(op.result, out)
