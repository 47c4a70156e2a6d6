"""CUDA libdevice's integer, bit, rounding-mode, conversion and classification functions.

Triton exposes CUDA's libdevice as `triton.language.extra.libdevice`; these are the same
names, signatures and dtype tables, built from tile's own ops instead of libdevice bitcode:

    from tile.language.extra import libdevice_bits as libdevice

    @tile.jit
    def kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
        tl.store(out_ptr + offs, libdevice.add_rz(x, y) + libdevice.popc(libdevice.float_as_int(x)))

Semantics are CUDA's (the CUDA Math API and the PTX ISA), with subnormals kept: every
correctly rounded function (add/sub/mul/div/fma/rcp/sqrt in the four IEEE rounding modes,
conversions, rint, round, ldexp, remainder, ...) gives the same bits on the GPU and on the
interpreter. (Triton's own build of libdevice flushes f32 subnormals to zero; tile does not.)

Rounding-mode suffixes: _rn to nearest (ties to even), _rz toward zero, _rd down (toward
-inf), _ru up (toward +inf). Float-to-integer conversions saturate out-of-range values; NaN
converts as the GPU's cvt does: 0 from fp32 into 32 bits, the sign-bit pattern (INT_MIN,
2^31, 2^63) from fp64 or into 64 bits.

Arguments are tensors of the listed dtypes or Python numbers (which take the dtype the
signature asks for); blocks broadcast together. Any other dtype is a compile error naming
the accepted signatures. As in Triton, the unsigned conversions float2uint, double2uint,
float_as_uint (int32) and float2ull, double2ull (int64) return signed dtypes holding the
unsigned bits: convert with `.to(tl.uint32, bitcast=True)` to read them as unsigned.

The fast_* functions are the GPU's approximate units (PTX .approx); their accuracy:
    fast_sinf, fast_cosf   sin/cos.approx.f32: abs. error <= 2^-20.5 on [-pi, pi], no range reduction
    fast_tanf              sin.approx / cos.approx (div.approx.f32)
    fast_expf, fast_exp10f ex2.approx.ftz.f32 of x * log2(e) (log2(10)): rel. error 2^-22 plus
                           |x| * 2^-24 from the rounded product; results below 2^-126 flush to 0
    fast_logf, fast_log2f, fast_log10f   lg2.approx.f32 (times ln 2, log10 2): abs. error
                           <= 2^-22 for x in [0.5, 2], rel. 2^-22 elsewhere
    fast_powf              ex2.approx(y * lg2.approx(x)): the two errors above, compounded
    fast_tanhf             tanh.approx.f32: rel. error <= 2^-10.987 (about 2^-11)
    fast_dividef           div.approx.f32: 2 ulp for 2^-126 <= |y| <= 2^126, 0 beyond 2^126
    rcp64h                 rcp.approx.ftz.f64: 1/x from the high 32 bits of x, low 32 result
                           bits zero: rel. error about 2^-20
exp2 and rsqrt are tl.exp2 and tl.rsqrt (ex2.approx.ftz / rsqrt.approx on fp32, within 2^-22).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from tile.frontend.core import builtin, current, int_range, tensor, to_dtype, unwrap
from tile.frontend.semantics import Semantic, describe, is_number, python_type
from tile.ir.types import DType, f32, f64, i1, i32, i64, u32, u64, with_element

from . import libdevice_bits_jit as impl

MODES = ("rn", "rz", "rd", "ru")
_MODE_TEXT = {"rn": "rounded to the nearest representable value (ties to even)",
              "rz": "rounded toward zero", "rd": "rounded down (toward -infinity)",
              "ru": "rounded up (toward +infinity)"}
_PTX_MODE = {"rn": "rn", "rz": "rz", "rd": "rm", "ru": "rp"}
_DTYPES = {"int32": i32, "uint32": u32, "int64": i64, "uint64": u64, "fp32": f32, "fp64": f64}

Impl = Callable[..., tensor]  # (semantic, *operands) -> result
Signature = tuple[str, ...]  # Triton's dtype names of the arguments


# --------------------------------------------------------------------------------- dispatch


class Overloads:
    """One libdevice function: its accepted argument dtypes (Triton's table) and what each builds.

    Calling it picks the first signature that the tensor arguments match exactly and whose
    dtypes can hold the Python-number arguments, converts the numbers, broadcasts, and builds.
    """

    def __init__(self, name: str, rows: dict[Signature, Impl]):
        self.name = name
        self.rows = rows

    def __call__(self, *args: Any) -> tensor:
        sem = current()
        values = [unwrap(a) for a in args]
        for v in values:
            if not isinstance(v, tensor) and not (is_number(v) and not isinstance(v, bool)):
                raise TypeError(f"libdevice.{self.name}: arguments are tensors or numbers, got {v!r}")
        for signature, build in self.rows.items():
            operands = self._match(sem, signature, values)
            if operands is not None:
                return build(sem, *(sem.broadcast_all(*operands) if len(operands) > 1 else operands))
        accepted = " or ".join("(" + ", ".join(repr(to_dtype(_DTYPES[n])) for n in sig) + ")" for sig in self.rows)
        got = ", ".join(describe(v) for v in values)
        raise TypeError(f"libdevice.{self.name} takes {accepted}; got ({got})")

    @staticmethod
    def _match(sem: Semantic, signature: Signature, values: Sequence[Any]) -> "list[tensor] | None":
        out = []
        for name, v in zip(signature, values):
            t = _DTYPES[name]
            if isinstance(v, tensor):
                if v.element != t:
                    return None
                out.append(v)
                continue
            if isinstance(v, float) and (t.is_integer or t == f32 and python_type(v) != f32):
                return None
            if isinstance(v, int) and t.is_integer and not int_range(t)[0] <= v <= int_range(t)[1]:
                return None
            out.append(sem.constant(v, t))
        return out


def _define(name: str, nargs: int, rows: dict[Signature, Impl], doc: str) -> Callable[..., tensor]:
    """A builtin `name(arg0, ...)` (Triton's parameter names) dispatching on `rows`."""
    overloads = Overloads(name, rows)
    if nargs == 1:
        def fn(arg0: Any) -> tensor:
            return overloads(arg0)
    elif nargs == 2:
        def fn(arg0: Any, arg1: Any) -> tensor:  # type: ignore[misc]
            return overloads(arg0, arg1)
    else:
        def fn(arg0: Any, arg1: Any, arg2: Any) -> tensor:  # type: ignore[misc]
            return overloads(arg0, arg1, arg2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


# ------------------------------------------------------------------------ building blocks


def _op(name: str, result: "DType | None" = None, **attrs: Any) -> Impl:
    """An op on the operands; the result has the first operand's type (or element `result`)."""
    def build(sem: Semantic, *xs: tensor) -> tensor:
        t = xs[0].ir_type if result is None else with_element(xs[0].ir_type, result)
        return sem.op(name, list(xs), t, **attrs)
    return build


def _convert(dst: DType, mode: "str | None" = None, as_dtype: "DType | None" = None) -> Impl:
    """arith.cast to `dst` rounding in `mode`; bits reinterpreted as `as_dtype` (Triton's signed
    results of the unsigned conversions)."""
    def build(sem: Semantic, x: tensor) -> tensor:
        attrs = {"rounding": mode} if mode is not None else {}
        r = sem.op("arith.cast", [x], with_element(x.ir_type, dst), **attrs)
        return sem.bitcast(r, as_dtype) if as_dtype is not None else r
    return build


def _bitcast(dst: DType) -> Impl:
    return lambda sem, x: sem.bitcast(x, dst)


def _jit(fn: Any, *constants: Any) -> Impl:
    """Inline the @jit function `fn` on the operands, followed by compile-time `constants`."""
    return lambda sem, *xs: sem.call(fn, [*xs, *constants], {})


def _floats(build: Callable[[DType], Impl]) -> dict[Signature, Impl]:
    return {("fp32",): build(f32), ("fp64",): build(f64)}


def _float_pairs(build: Callable[[DType], Impl]) -> dict[Signature, Impl]:
    return {("fp32", "fp32"): build(f32), ("fp64", "fp64"): build(f64)}


# the constants of each float format that the @jit bodies take: its bits as an unsigned dtype,
# the sign bit, the magnitude bits; mantissa bits, exponent mask, bias and width
_UINT = {f32: u32, f64: u64}
_SIGN = {f32: 1 << 31, f64: 1 << 63}
_FIELDS = {f32: (23, 0xFF, 127, 32), f64: (52, 0x7FF, 1023, 64)}


def _bits_dtype(t: DType) -> Any:
    """The unsigned language dtype as wide as the float type t (a constexpr for the @jit bodies)."""
    return to_dtype(_UINT[t])


def _compare_to_int(predicate: str, against: "Callable[[DType], float] | None",
                    absolute: bool = True) -> Callable[[DType], Impl]:
    """int32 (0 or 1) of `predicate(|x|, against)` (or of x itself)."""
    def for_type(t: DType) -> Impl:
        def build(sem: Semantic, x: tensor) -> tensor:
            v = sem.abs(x) if absolute else x
            other = x if against is None else sem.constant(against(t), with_element(x.ir_type, t))
            return sem.cast(sem.op("arith.cmp", [v, other], with_element(x.ir_type, i1), predicate=predicate), i32)
        return build
    return for_type


def _signbit(t: DType) -> Impl:
    def build(sem: Semantic, x: tensor) -> tensor:
        top = sem.shr(sem.bitcast(x, _UINT[t]), t.bits - 1)
        return sem.cast(top, i32)
    return build


# ------------------------------------------------------------------------- integer functions

clz = _define("clz", 1, {("int32",): _op("math.clz", i32), ("int64",): _op("math.clz", i32)}, """\
Counts the leading zero bits of a 32- or 64-bit integer (32 or 64 for 0), as int32 (clz.b32/b64).

    libdevice.clz(x)        # x: tl.int32 or tl.int64; clz(1) == 31, clz(0) == 32
""")

popc = _define("popc", 1, {("int32",): _op("math.popc", i32), ("int64",): _op("math.popc", i32)}, """\
Counts the set bits of a 32- or 64-bit integer, as int32 (popc.b32/b64).

    libdevice.popc(x)       # popc(0xFF) == 8, popc(-1) == 32
""")

brev = _define("brev", 1, {("int32",): _op("math.brev"), ("int64",): _op("math.brev")}, """\
Reverses the bits of a 32- or 64-bit integer: bit i of the result is bit (width - 1 - i) of x (brev).

    libdevice.brev(x)       # brev(1) == -2147483648 for tl.int32
""")


def _byte_perm(sem: Semantic, x: tensor, y: tensor, s: tensor) -> tensor:
    selector = sem.and_(s, 0x7777)  # CUDA reads 3 bits per selector nibble
    return sem.op("math.byte_perm", [x, y, selector], x.ir_type)


byte_perm = _define("byte_perm", 3, {("int32", "int32", "int32"): _byte_perm}, """\
Selects 4 bytes out of the 8 bytes of y:x (x holds bytes 0-3, y bytes 4-7): byte n of the
result is byte number (s >> 4n) & 7, for n = 0..3 (CUDA's __byte_perm, prmt.b32).

    libdevice.byte_perm(x, y, 0x3210)   # == x;  0x7654 gives y;  0x0123 reverses x's bytes
""")

mulhi = _define("mulhi", 2, {("int32", "int32"): _op("math.mulhi"), ("uint32", "uint32"): _op("math.mulhi"),
                             ("int64", "int64"): _op("math.mulhi"), ("uint64", "uint64"): _op("math.mulhi")}, """\
The high 32 (or 64) bits of the full 64- (128-) bit product x * y, signed for int32/int64 and
unsigned for uint32/uint64 (mul.hi).

    libdevice.mulhi(x, y)   # int32: mulhi(-1, 1) == -1; uint32: mulhi(0xFFFFFFFF, 2) == 1
""")

mul24 = _define("mul24", 2, {("int32", "int32"): _op("math.mul24"), ("uint32", "uint32"): _op("math.mul24")}, """\
The low 32 bits of the product of the low 24 bits of x and y; those 24 bits are read as a
signed number for int32 (bit 23 is the sign) and unsigned for uint32 (mul24.lo).

    libdevice.mul24(x, y)   # int32: mul24(0xFFFFFF, 2) == -2 (0xFFFFFF is -1 in 24 bits)
""")


def _sad_signed(sem: Semantic, x: tensor, y: tensor, z: tensor) -> tensor:
    return sem.op("math.sad", [x, y, sem.bitcast(z, i32)], x.ir_type)


sad = _define("sad", 3, {("int32", "int32", "uint32"): _sad_signed,
                         ("uint32", "uint32", "uint32"): _op("math.sad")}, """\
|x - y| + z: the absolute difference is exact (it may exceed INT_MAX), the sum wraps to 32 bits
(CUDA's __sad and __usad; sad.s32/u32). z is unsigned.

    libdevice.sad(x, y, z)  # sad(3, 10, 1) == 8
""")

ffs = _define("ffs", 1, {("int32",): _jit(impl.ffs, 32), ("int64",): _jit(impl.ffs, 64)}, """\
The 1-based position of the least significant set bit of x, 0 if x is 0 (int32 result).

    libdevice.ffs(x)        # ffs(1) == 1, ffs(8) == 4, ffs(0) == 0, ffs(INT_MIN) == 32
""")

hadd = _define("hadd", 2, {("int32", "int32"): _jit(impl.hadd), ("uint32", "uint32"): _jit(impl.hadd)}, """\
(x + y) >> 1 computed without overflow: the sum is taken in 33 bits, the shift rounds down.

    libdevice.hadd(x, y)    # hadd(INT_MAX, INT_MAX) == INT_MAX, hadd(-3, 0) == -2
""")

rhadd = _define("rhadd", 2, {("int32", "int32"): _jit(impl.rhadd), ("uint32", "uint32"): _jit(impl.rhadd)}, """\
(x + y + 1) >> 1 computed without overflow: the average rounded up.

    libdevice.rhadd(x, y)   # rhadd(1, 2) == 2, rhadd(-3, 0) == -1
""")

abs = _define("abs", 1, {("int32",): _op("math.abs"), ("int64",): _op("math.abs"),  # noqa: A001 - CUDA's name
                         ("fp32",): _op("math.abs"), ("fp64",): _op("math.abs")}, """\
|x| for int32, int64, fp32 and fp64; abs(INT_MIN) is INT_MIN (two's complement wraps), and
floats clear the sign bit (abs(-0.0) == +0.0, NaN stays NaN).

    libdevice.abs(x)
""")

# ------------------------------------------------------------------- rounding to integers

floor = _define("floor", 1, _floats(lambda t: _op("math.floor")), """\
The largest integral value <= x (cvt.rmi); infinities, NaN and signed zeros are kept.

    libdevice.floor(x)      # floor(-1.5) == -2.0
""")

ceil = _define("ceil", 1, _floats(lambda t: _op("math.ceil")), """\
The smallest integral value >= x (cvt.rpi); ceil(-0.5) == -0.0.

    libdevice.ceil(x)       # ceil(1.2) == 2.0
""")

trunc = _define("trunc", 1, _floats(lambda t: _op("math.trunc")), """\
x rounded toward zero to an integral value (cvt.rzi).

    libdevice.trunc(x)      # trunc(-2.7) == -2.0
""")

rint = _define("rint", 1, _floats(lambda t: _op("math.rint")), """\
x rounded to the nearest integral value, halfway cases to even (cvt.rni).

    libdevice.rint(x)       # rint(2.5) == 2.0, rint(3.5) == 4.0, rint(-0.5) == -0.0
""")

nearbyint = _define("nearbyint", 1, _floats(lambda t: _op("math.rint")), """\
x rounded to the nearest integral value, halfway cases to even (the same as rint: GPUs raise no
floating-point exceptions).

    libdevice.nearbyint(x)  # nearbyint(0.5) == 0.0
""")

round = _define(  # noqa: A001 - C's name
    "round", 1, _floats(lambda t: _jit(impl.round_half_away)), """\
x rounded to the nearest integral value, halfway cases away from zero (C's round).

    libdevice.round(x)      # round(2.5) == 3.0, round(-0.5) == -1.0, round(0.49999997) == 0.0
""")

llrint = _define("llrint", 1, _floats(lambda t: _convert(i64, "rn")), """\
x rounded to the nearest integer (ties to even) as int64; out-of-range values saturate and NaN
gives INT64_MIN (cvt.rni.s64).

    libdevice.llrint(x)     # llrint(2.5) == 2
""")


def _llround(sem: Semantic, x: tensor) -> tensor:
    return _convert(i64)(sem, sem.call(impl.round_half_away, [x], {}))


llround = _define("llround", 1, {("fp32",): _llround, ("fp64",): _llround}, """\
x rounded to the nearest integer, halfway cases away from zero, as int64; out-of-range values
saturate and NaN gives INT64_MIN.

    libdevice.llround(x)    # llround(2.5) == 3, llround(-2.5) == -3
""")

# ------------------------------------------------------------------------ float arithmetic


def _family(stem: str, nargs: int, rows: Callable[[str], dict[Signature, Impl]], doc: str) -> tuple:
    """`stem`_rn, _rz, _rd and _ru, their docstrings filled in with the mode."""
    return tuple(_define(f"{stem}_{m}", nargs, rows(m),
                         doc.format(mode=_MODE_TEXT[m], name=f"{stem}_{m}", ptx=_PTX_MODE[m])) for m in MODES)


def _arith(name: str) -> Callable[[str], dict[Signature, Impl]]:
    return lambda mode: _float_pairs(lambda t: _op(name, rounding=mode))


add_rn, add_rz, add_rd, add_ru = _family("add", 2, _arith("arith.add"), """\
x + y {mode} (add.{ptx}: one IEEE operation, never fused into an fma), for two fp32 or two
fp64 operands.

    libdevice.{name}(x, y)
""")
sub_rn, sub_rz, sub_rd, sub_ru = _family("sub", 2, _arith("arith.sub"), """\
x - y {mode} (sub.{ptx}; never fused into an fma), for fp32 or fp64.

    libdevice.{name}(x, y)
""")
mul_rn, mul_rz, mul_rd, mul_ru = _family("mul", 2, _arith("arith.mul"), """\
x * y {mode} (mul.{ptx}; never fused into an fma), for fp32 or fp64.

    libdevice.{name}(x, y)
""")
div_rn, div_rz, div_rd, div_ru = _family("div", 2, _arith("arith.div"), """\
x / y {mode} (div.{ptx}: IEEE division, subnormals kept), for fp32 or fp64.

    libdevice.{name}(x, y)
""")
fma_rn, fma_rz, fma_rd, fma_ru = _family("fma", 3, lambda mode: {
    ("fp32", "fp32", "fp32"): _op("math.fma", rounding=mode),
    ("fp64", "fp64", "fp64"): _op("math.fma", rounding=mode)}, """\
x * y + z computed exactly and {mode} once (fma.{ptx}), for fp32 or fp64.

    libdevice.{name}(x, y, z)
""")


def _reciprocal(mode: str) -> Callable[[DType], Impl]:
    def for_type(t: DType) -> Impl:
        return lambda sem, x: sem.op("arith.div", [sem.constant(1.0, x.ir_type), x], x.ir_type, rounding=mode)
    return for_type


rcp_rn, rcp_rz, rcp_rd, rcp_ru = _family("rcp", 1, lambda mode: _floats(_reciprocal(mode)), """\
1 / x {mode}, for fp32 or fp64 (the correctly rounded quotient of 1 by x).

    libdevice.{name}(x)
""")
sqrt_rn, sqrt_rz, sqrt_rd, sqrt_ru = _family("sqrt", 1, lambda mode: _floats(lambda t: _op("math.sqrt", rounding=mode)),
                                             """\
The square root of x {mode} (sqrt.{ptx}), for fp32 or fp64; sqrt(-0.0) == -0.0, NaN below 0.

    libdevice.{name}(x)
""")

sqrt = _define("sqrt", 1, _floats(lambda t: _op("math.sqrt")), """\
The square root of x, correctly rounded to nearest (sqrt.rn; CUDA's sqrtf with -prec-sqrt=true,
its default). tl.sqrt is the faster approximate one on fp32.

    libdevice.sqrt(x)
""")

rsqrt = _define("rsqrt", 1, _floats(lambda t: _op("math.rsqrt")), """\
1 / sqrt(x): tl.rsqrt (fp32: rsqrt.approx, within 2^-22 relative; fp64: 1 / sqrt.rn(x)).

    libdevice.rsqrt(x)
""")

rsqrt_rn = _define("rsqrt_rn", 1, {("fp32",): _jit(impl.rsqrt_rn)}, """\
1 / sqrt(x) correctly rounded to nearest fp32 (computed in fp64 and corrected at rounding
boundaries); rsqrt_rn(0.0) == inf, rsqrt_rn(-0.0) == -inf, NaN below 0.

    libdevice.rsqrt_rn(x)   # x: tl.float32
""")

rcp64h = _define("rcp64h", 1, {("fp64",): _op("math.approx", fn="rcp64h")}, """\
A fast approximate reciprocal of an fp64 computed from the high 32 bits of x
(rcp.approx.ftz.f64): the low 32 bits of the result are zero, the relative error is about 2^-20,
subnormal inputs and results flush to zero.

    libdevice.rcp64h(x)
""")

saturatef = _define("saturatef", 1, {("fp32",): _jit(impl.saturate)}, """\
x clamped to [+0.0, 1.0]; NaN gives +0.0.

    libdevice.saturatef(x)  # saturatef(1.5) == 1.0, saturatef(-2.0) == 0.0
""")

exp2 = _define("exp2", 1, _floats(lambda t: _op("math.exp2")), """\
2 ** x: tl.exp2 (fp32: ex2.approx.ftz, relative error 2^-22, results below 2^-126 flush to 0;
fp64: within 2 ulp).

    libdevice.exp2(x)
""")

fast_dividef = _define("fast_dividef", 2, {("fp32", "fp32"): _op("math.approx", fn="div")}, """\
x / y approximately (div.approx.f32): within 2 ulp for 2^-126 <= |y| <= 2^126; 0 (NaN for
infinite x) when 2^126 < |y| < 2^128.

    libdevice.fast_dividef(x, y)
""")

fma = _define("fma", 3, {("fp32", "fp32", "fp32"): _op("math.fma"), ("fp64", "fp64", "fp64"): _op("math.fma")}, """\
x * y + z with a single rounding to nearest (fma.rn).

    libdevice.fma(x, y, z)
""")

fmod = _define("fmod", 2, _float_pairs(lambda t: _op("arith.rem")), """\
x - trunc(x / y) * y, exactly (the sign of x); NaN when y is 0 or x infinite, x when y is infinite.

    libdevice.fmod(x, y)    # fmod(5.5, 2.0) == 1.5, fmod(-5.5, 2.0) == -1.5
""")

remainder = _define("remainder", 2, _float_pairs(lambda t: _jit(impl.remainder, 2.0 ** (-125 if t == f32 else -1021),
                                                                  _bits_dtype(t), _SIGN[t])), """\
The IEEE remainder x - n * y with n = x / y rounded to the nearest integer, ties to even; exact.
NaN when y is 0 or x infinite; a zero result has the sign of x.

    libdevice.remainder(x, y)   # remainder(5.0, 2.0) == 1.0, remainder(7.0, 2.0) == -1.0
""")

fdim = _define("fdim", 2, _float_pairs(lambda t: _jit(impl.fdim)), """\
The positive difference: x - y (rounded to nearest) if x > y, else +0.0; NaN if either is NaN.

    libdevice.fdim(x, y)    # fdim(3.0, 1.0) == 2.0, fdim(1.0, 3.0) == 0.0
""")

# --------------------------------------------------------------------------- conversions


def _conversions(stem: str, src: str, dst: DType, doc: str, as_dtype: "DType | None" = None) -> tuple:
    return _family(stem, 1, lambda mode: {(src,): _convert(dst, mode, as_dtype)}, doc)


double2float_rn, double2float_rz, double2float_rd, double2float_ru = _conversions("double2float", "fp64", f32, """\
The fp64 x converted to fp32, {mode}; overflow gives inf or the largest finite value as the
mode says.

    libdevice.{name}(x)
""")
_TO_INT_DOC = """\
The {src} x {mode} to an integer, as {dst}; out-of-range values saturate, NaN gives {nan}.{note}

    libdevice.{{name}}(x)
"""


def _to_int(stem: str, src: str, dst: DType, as_dtype: "DType | None" = None) -> tuple:
    wide = src == "fp64" or dst.bits == 64
    nan = {32: "INT_MIN" if dst.is_signed else "2^31", 64: "INT64_MIN" if dst.is_signed else "2^63"}[dst.bits]
    note = f" Returned as {to_dtype(as_dtype)!r} (Triton's dtype) holding the unsigned bits." if as_dtype else ""
    doc = _TO_INT_DOC.format(src=src, dst=repr(to_dtype(dst)), nan=nan if wide else "0", note=note, mode="{mode}")
    return _conversions(stem, src, dst, doc, as_dtype)


double2int_rn, double2int_rz, double2int_rd, double2int_ru = _to_int("double2int", "fp64", i32)
double2uint_rn, double2uint_rz, double2uint_rd, double2uint_ru = _to_int("double2uint", "fp64", u32, i32)
double2ll_rn, double2ll_rz, double2ll_rd, double2ll_ru = _to_int("double2ll", "fp64", i64)
double2ull_rn, double2ull_rz, double2ull_rd, double2ull_ru = _to_int("double2ull", "fp64", u64, i64)
float2int_rn, float2int_rz, float2int_rd, float2int_ru = _to_int("float2int", "fp32", i32)
float2uint_rn, float2uint_rz, float2uint_rd, float2uint_ru = _to_int("float2uint", "fp32", u32, i32)
float2ll_rn, float2ll_rz, float2ll_rd, float2ll_ru = _to_int("float2ll", "fp32", i64)
float2ull_rn, float2ull_rz, float2ull_rd, float2ull_ru = _to_int("float2ull", "fp32", u64, i64)

_FROM_INT_DOC = """\
The {src} x converted to {dst}, {{mode}}{exact}.

    libdevice.{{name}}(x)
"""


def _from_int(stem: str, src: str, dst: DType) -> tuple:
    exact = " (exact for |x| < 2^24)" if dst == f32 else " (exact for |x| < 2^53)"
    doc = _FROM_INT_DOC.format(src=src, dst=repr(to_dtype(dst)), exact=exact)
    return _conversions(stem, src, dst, doc)


int2float_rn, int2float_rz, int2float_rd, int2float_ru = _from_int("int2float", "int32", f32)
uint2float_rn, uint2float_rz, uint2float_rd, uint2float_ru = _from_int("uint2float", "uint32", f32)
ll2float_rn, ll2float_rz, ll2float_rd, ll2float_ru = _from_int("ll2float", "int64", f32)
ull2float_rn, ull2float_rz, ull2float_rd, ull2float_ru = _from_int("ull2float", "uint64", f32)
ll2double_rn, ll2double_rz, ll2double_rd, ll2double_ru = _from_int("ll2double", "int64", f64)
ull2double_rn, ull2double_rz, ull2double_rd, ull2double_ru = _from_int("ull2double", "uint64", f64)

int2double_rn = _define("int2double_rn", 1, {("int32",): _convert(f64, "rn")}, """\
The int32 x converted to fp64 (always exact).

    libdevice.int2double_rn(x)
""")
uint2double_rn = _define("uint2double_rn", 1, {("uint32",): _convert(f64, "rn")}, """\
The uint32 x converted to fp64 (always exact).

    libdevice.uint2double_rn(x)
""")


def _hilo(sem: Semantic, hi: tensor, lo: tensor) -> tensor:
    high = sem.shl(sem.cast(hi, i64), 32)
    low = sem.cast(sem.bitcast(lo, u32), i64)
    return sem.bitcast(sem.or_(high, low), f64)


hiloint2double = _define("hiloint2double", 2, {("int32", "int32"): _hilo}, """\
The fp64 whose high 32 bits are hi and low 32 bits are lo.

    libdevice.hiloint2double(hi, lo)    # hiloint2double(0x3FF00000, 0) == 1.0
""")
double2loint = _define("double2loint", 1, {("fp64",): lambda sem, x: sem.cast(sem.bitcast(x, i64), i32)}, """\
The low 32 bits of the fp64 x, as int32.

    libdevice.double2loint(x)
""")
double2hiint = _define("double2hiint", 1, {
    ("fp64",): lambda sem, x: sem.cast(sem.shr(sem.bitcast(x, i64), 32), i32)}, """\
The high 32 bits of the fp64 x (sign, exponent and top of the mantissa), as int32.

    libdevice.double2hiint(x)   # double2hiint(1.0) == 0x3FF00000
""")
int_as_float = _define("int_as_float", 1, {("int32",): _bitcast(f32)}, """\
The fp32 with the bits of the int32 x.

    libdevice.int_as_float(x)   # int_as_float(0x3F800000) == 1.0
""")
float_as_int = _define("float_as_int", 1, {("fp32",): _bitcast(i32)}, """\
The bits of the fp32 x, as int32.

    libdevice.float_as_int(x)   # float_as_int(1.0) == 0x3F800000
""")
uint_as_float = _define("uint_as_float", 1, {("uint32",): _bitcast(f32)}, """\
The fp32 with the bits of the uint32 x.

    libdevice.uint_as_float(x)
""")
float_as_uint = _define("float_as_uint", 1, {("fp32",): _bitcast(i32)}, """\
The bits of the fp32 x, as int32 (Triton's dtype; the bits are CUDA's unsigned result).

    libdevice.float_as_uint(x)
""")
longlong_as_double = _define("longlong_as_double", 1, {("int64",): _bitcast(f64)}, """\
The fp64 with the bits of the int64 x.

    libdevice.longlong_as_double(x)
""")
double_as_longlong = _define("double_as_longlong", 1, {("fp64",): _bitcast(i64)}, """\
The bits of the fp64 x, as int64.

    libdevice.double_as_longlong(x)
""")

# ------------------------------------------------------------------------ classification

isnan = _define("isnan", 1, _floats(_compare_to_int("ne", None, absolute=False)), """\
1 (int32) if x is NaN, else 0.

    libdevice.isnan(x)
""")
isinf = _define("isinf", 1, _floats(_compare_to_int("eq", lambda t: float("inf"))), """\
1 (int32) if x is +inf or -inf, else 0.

    libdevice.isinf(x)
""")
finitef = _define("finitef", 1, {("fp32",): _compare_to_int("lt", lambda t: float("inf"))(f32)}, """\
1 (int32) if the fp32 x is finite (not infinite, not NaN), else 0.

    libdevice.finitef(x)
""")
isfinited = _define("isfinited", 1, {("fp64",): _compare_to_int("lt", lambda t: float("inf"))(f64)}, """\
1 (int32) if the fp64 x is finite (not infinite, not NaN), else 0.

    libdevice.isfinited(x)
""")
signbit = _define("signbit", 1, _floats(_signbit), """\
1 (int32) if the sign bit of x is set (negative numbers, -0.0, negative NaNs), else 0.

    libdevice.signbit(x)    # signbit(-0.0) == 1
""")
copysign = _define("copysign", 2, _float_pairs(lambda t: _jit(impl.copysign, _bits_dtype(t), _SIGN[t] - 1,
                                                                _SIGN[t])), """\
The magnitude of x with the sign of y (bitwise: NaN and zero signs included).

    libdevice.copysign(x, y)    # copysign(2.0, -0.0) == -2.0
""")
nextafter = _define("nextafter", 2, _float_pairs(lambda t: _jit(impl.nextafter, _bits_dtype(t), _SIGN[t])), """\
The representable value next to x in the direction of y (subnormals included): y if x == y,
NaN if either is NaN; from the largest finite value toward inf it gives inf.

    libdevice.nextafter(x, y)   # nextafter(1.0, 2.0) == 1.0000001 (fp32), nextafter(0.0, -1.0) == -1e-45
""")
ldexp = _define("ldexp", 2, {("fp32", "int32"): _jit(impl.ldexp_f32), ("fp64", "int32"): _jit(impl.ldexp_f64)}, """\
x * 2^n, rounded once to nearest (gradual underflow and overflow to inf included).

    libdevice.ldexp(x, n)   # ldexp(1.5, 3) == 12.0
""")
scalbn = _define("scalbn", 2, {("fp32", "int32"): _jit(impl.ldexp_f32), ("fp64", "int32"): _jit(impl.ldexp_f64)}, """\
x * 2^n, rounded once to nearest (the same as ldexp: the radix is 2).

    libdevice.scalbn(x, n)
""")
ilogb = _define("ilogb", 1, _floats(lambda t: _jit(impl.ilogb, _bits_dtype(t), *_FIELDS[t])), """\
The unbiased exponent of x as int32 (subnormals: the exponent of their leading bit);
INT_MIN for 0 and NaN, INT_MAX for infinities (CUDA's FP_ILOGB0 and FP_ILOGBNAN).

    libdevice.ilogb(x)      # ilogb(10.0) == 3, ilogb(1e-45) == -149
""")
logb = _define("logb", 1, _floats(lambda t: _jit(impl.logb, _bits_dtype(t), *_FIELDS[t])), """\
The unbiased exponent of x as a float: -inf for zeros, +inf for infinities, NaN for NaN.

    libdevice.logb(x)       # logb(10.0) == 3.0
""")

# ------------------------------------------------------------------- approximate units

fast_sinf = _define("fast_sinf", 1, {("fp32",): _op("math.approx", fn="sin")}, """\
sin(x) approximately (sin.approx.f32, no range reduction: abs. error <= 2^-20.5 on [-pi, pi],
growing with |x| outside it).

    libdevice.fast_sinf(x)
""")
fast_cosf = _define("fast_cosf", 1, {("fp32",): _op("math.approx", fn="cos")}, """\
cos(x) approximately (cos.approx.f32: abs. error <= 2^-20.5 on [-pi, pi]).

    libdevice.fast_cosf(x)
""")
fast_tanf = _define("fast_tanf", 1, {("fp32",): _jit(impl.fast_tanf)}, """\
tan(x) approximately: fast_sinf(x) / fast_cosf(x) by div.approx (on [-pi/4, pi/4] within about
2^-20 relative; large near odd multiples of pi/2).

    libdevice.fast_tanf(x)
""")
fast_tanhf = _define("fast_tanhf", 1, {("fp32",): _op("math.approx", fn="tanh")}, """\
tanh(x) approximately (tanh.approx.f32: relative error about 2^-11).

    libdevice.fast_tanhf(x)
""")
fast_expf = _define("fast_expf", 1, {("fp32",): _jit(impl.fast_expf)}, """\
e ** x approximately: ex2.approx.ftz(x * log2(e)); relative error about 2^-22 + |x| * 2^-24;
results below 2^-126 flush to 0.

    libdevice.fast_expf(x)
""")
fast_exp10f = _define("fast_exp10f", 1, {("fp32",): _jit(impl.fast_exp10f)}, """\
10 ** x approximately: ex2.approx.ftz(x * log2(10)); relative error about 2^-22 + |x| * 2^-22.

    libdevice.fast_exp10f(x)
""")
fast_logf = _define("fast_logf", 1, {("fp32",): _jit(impl.fast_logf)}, """\
ln(x) approximately: lg2.approx(x) * ln(2); abs. error <= 2^-21.5 on [0.5, 2], relative 2^-21 elsewhere.

    libdevice.fast_logf(x)
""")
fast_log2f = _define("fast_log2f", 1, {("fp32",): _op("math.approx", fn="lg2")}, """\
log2(x) approximately (lg2.approx.f32: abs. error <= 2^-22 on [0.5, 2], relative 2^-22 elsewhere).

    libdevice.fast_log2f(x)
""")
fast_log10f = _define("fast_log10f", 1, {("fp32",): _jit(impl.fast_log10f)}, """\
log10(x) approximately: lg2.approx(x) * log10(2).

    libdevice.fast_log10f(x)
""")
fast_powf = _define("fast_powf", 2, {("fp32", "fp32"): _jit(impl.fast_powf)}, """\
x ** y approximately: ex2.approx(y * lg2.approx(x)) (for x > 0; relative error grows with
|y * log2(x)|).

    libdevice.fast_powf(x, y)
""")
