"""Canonicalize: fold constants, apply algebraic identities, simplify control flow.

Before:
    %c2 = arith.constant {value = 2} : i32
    %c3 = arith.constant {value = 3} : i32
    %six = arith.mul %c2, %c3 : i32
    %zero = arith.constant {value = 0} : i32
    %a = arith.add %x, %zero : i32
    %b = arith.add %a, %six : i32
    %s = tt.splat %six : tensor<4xi32>
    %e = tt.expand_dims %s {axis = 0} : tensor<1x4xi32>
After:
    %six = arith.constant {value = 6} : i32
    %b = arith.add %x, %six : i32
    %e = arith.constant {value = 6} : tensor<1x4xi32>

Folding is exact: integers wrap at their type's width and follow its signedness, division
truncates toward zero, and a float result is rounded once to its type (round to nearest
even, or in the op's `rounding` mode, from the exact rational result):

    %s = arith.add %one, %tiny {rounding = "ru"} : f32   (1.0 + 2^-30)
  ->
    %s = arith.constant {value = 1.0000001192092896} : f32

Anything whose result could differ from what the GPU computes is left alone:
division by zero, signed `MIN / -1`, shifts by the width or more, fp8 values, and the math
functions the targets approximate (exp, log, sin, sqrt, ...). Floats never use identities
that NaN, infinities or the sign of zero break (`x * 0`, `x - x`, `x + 0.0`).

The driver is a worklist: every op is visited, a rewrite queues the ops it may have made
foldable or dead, and the pass stops at a fixed point. Pure ops whose results are unused
are erased on the way.
"""
from __future__ import annotations

import math
from collections import deque
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ..ir import DType, Operation, PointerType, Type, Value, element_type, is_pure, op_def
from ..ir.ops import cast_rounding, rounding_mode
from .pass_manager import Pass

Number = Union[int, float]

# ------------------------------------------------------------------ exact number semantics


def _foldable_dtype(t: Type) -> Optional[DType]:
    """The element dtype of `t` if constants of it can be folded exactly (fp8: no)."""
    el = element_type(t)
    if not isinstance(el, DType) or el.is_fp8:
        return None
    return el


def wrap(v: int, dt: DType) -> int:
    """`v` reduced to `dt`'s width: two's complement for signed types, 0/1 for i1."""
    v &= (1 << dt.bits) - 1
    if dt.is_signed and v >> (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def _float_format(dt: DType) -> tuple[int, int, float]:
    """(precision in bits, minimum normal exponent, largest finite value) of an IEEE format."""
    p = dt.mantissa_bits + 1
    emax = (1 << (dt.exponent_bits - 1)) - 1
    return p, 1 - emax, math.ldexp((1 << p) - 1, emax - p + 1)


def round_float(x: float, dt: DType) -> float:
    """`x` rounded to the nearest value of the float type `dt` (ties to even), as a Python float."""
    if dt.bits == 64 or x == 0 or not math.isfinite(x):
        return x
    p, emin, largest = _float_format(dt)
    exponent = math.frexp(x)[1] - 1
    if exponent > 1 - emin:  # beyond the largest binade: overflow
        return math.copysign(math.inf, x)
    quantum = max(exponent, emin) - (p - 1)  # weight of the last kept bit; fixed in the subnormal range
    r = math.copysign(math.ldexp(round(math.ldexp(x, -quantum)), quantum), x)
    return math.copysign(math.inf, x) if abs(r) > largest else r


def int_to_float(n: int, dt: DType) -> float:
    """The integer `n` converted to the float type `dt` with one rounding (ties to even)."""
    p, _, largest = _float_format(dt)
    a = abs(n)
    shift = a.bit_length() - p
    if shift > 0:
        q, rest = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and q & 1):
            q += 1
        a = q << shift
    x = math.inf if a > largest else float(a)
    return -x if n < 0 else x


def round_rational(q: Fraction, dt: DType, mode: str) -> float:
    """The exact rational `q` rounded to the float type `dt` in `mode` ("rn": to nearest even,
    "rz": toward zero, "rd": toward -inf, "ru": toward +inf), as a Python float."""
    if q == 0:
        return 0.0
    p, emin, largest = _float_format(dt)
    negative = q < 0
    n, d = abs(q.numerator), q.denominator
    exponent = n.bit_length() - d.bit_length()  # then 2^exponent <= |q| < 2^(exponent + 1)
    if (n << max(0, -exponent)) < (d << max(0, exponent)):
        exponent -= 1
    quantum = max(exponent, emin) - (p - 1)  # weight of the last kept bit
    scaled = abs(q) / Fraction(2) ** quantum
    m, rest = divmod(scaled.numerator, scaled.denominator)
    away = mode == ("rd" if negative else "ru")
    if rest and (away or mode == "rn" and (2 * rest > scaled.denominator or 2 * rest == scaled.denominator and m & 1)):
        m += 1
    value = Fraction(m) * Fraction(2) ** quantum
    if value > largest:  # overflow: infinity, or the largest finite value when rounding toward it
        r = math.inf if mode == "rn" or away else largest
    else:
        r = float(value)
    return -r if negative else r


def normalize(value: Any, dt: DType) -> Optional[Number]:
    """A constant's `value` attribute as a number of type `dt`, or None if it is not one."""
    if dt.is_integer:
        if not isinstance(value, int):
            return None
        v = int(value)
        return v if wrap(v, dt) == v else None  # an out-of-range constant means nothing certain
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int_to_float(value, dt) if isinstance(value, int) else round_float(value, dt)


def constant_value(v: Value) -> Optional[Number]:
    """The number held by `v` if it is an `arith.constant` (scalar or splat) of a foldable type."""
    op = v.owner_op
    if op is None or op.name != "arith.constant":
        return None
    dt = _foldable_dtype(v.type)
    return None if dt is None else normalize(op.attrs.get("value"), dt)


def attr_value(v: Number, dt: DType) -> Union[bool, int, float]:
    """How a folded number is stored in a constant's `value` attribute."""
    if dt.is_bool:
        return bool(v)
    return int(v) if dt.is_integer else float(v)


_I1_BINARY = ("arith.add", "arith.sub", "arith.mul", "arith.and", "arith.or", "arith.xor")


def fold_int_binary(name: str, a: int, b: int, dt: DType) -> Optional[int]:
    if dt.is_bool and name not in _I1_BINARY:
        return None  # i1 has no agreed order or division
    if name == "arith.add":
        return wrap(a + b, dt)
    if name == "arith.sub":
        return wrap(a - b, dt)
    if name == "arith.mul":
        return wrap(a * b, dt)
    if name in ("arith.div", "arith.rem"):
        if b == 0 or (dt.is_signed and b == -1 and a == -(1 << (dt.bits - 1))):
            return None  # machine-specific results
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C: truncate toward zero
        return wrap(q if name == "arith.div" else a - b * q, dt)
    if name == "arith.and":
        return wrap(a & b, dt)
    if name == "arith.or":
        return wrap(a | b, dt)
    if name == "arith.xor":
        return wrap(a ^ b, dt)
    if name in ("arith.shl", "arith.shr"):
        if not 0 <= b < dt.bits:
            return None
        return wrap(a << b, dt) if name == "arith.shl" else a >> b  # shr: arithmetic for signed values
    if name == "arith.max":
        return max(a, b)
    if name == "arith.min":
        return min(a, b)
    if name == "math.umulhi":
        mask = (1 << dt.bits) - 1
        return wrap(((a & mask) * (b & mask)) >> dt.bits, dt)
    return None


def _fold_rounded(name: str, a: float, b: float, dt: DType, mode: str) -> Optional[float]:
    """add/sub/mul/div rounded in `mode`, from the exact rational result; left alone where
    special values or an exactly zero result (whose sign depends on the mode) are involved."""
    if not (math.isfinite(a) and math.isfinite(b)) or (name == "arith.div" and b == 0):
        return None
    x, y = Fraction(a), Fraction(b)
    exact = {"arith.add": lambda: x + y, "arith.sub": lambda: x - y, "arith.mul": lambda: x * y,
             "arith.div": lambda: x / y}[name]()
    return None if exact == 0 else round_rational(exact, dt, mode)


def fold_float_binary(name: str, a: float, b: float, dt: DType, attrs: dict[str, Any]) -> Optional[float]:
    mode = attrs.get("rounding")
    if mode is not None:
        return _fold_rounded(name, a, b, dt, mode)
    # One f64 operation then one rounding to `dt` equals the exactly rounded result for +, -, *, /
    # (f64 carries more than twice the precision of f32, f16 and bf16, plus two bits).
    x, y = np.float64(a), np.float64(b)
    with np.errstate(all="ignore"):
        if name == "arith.add":
            r = x + y
        elif name == "arith.sub":
            r = x - y
        elif name == "arith.mul":
            r = x * y
        elif name == "arith.div":
            if b == 0:
                return None
            r = x / y
        elif name == "arith.rem":
            if b == 0 or not (math.isfinite(a) and math.isfinite(b)):
                return None
            r = np.fmod(x, y)  # exact: fmod never rounds
        elif name in ("arith.max", "arith.min"):
            if math.isnan(a) or math.isnan(b):
                propagate = attrs.get("propagate_nan", False)
                if propagate in (True, "all"):
                    return math.nan
                if propagate not in (False, None, "none"):
                    return None
                return b if math.isnan(a) else a
            if a == b == 0 and math.copysign(1, a) != math.copysign(1, b):
                return None  # max(+0, -0) is not pinned down across targets
            r = max(a, b) if name == "arith.max" else min(a, b)
        else:
            return None
    return round_float(float(r), dt)


def fold_unary(name: str, a: Number, dt: DType) -> Optional[Number]:
    if dt.is_integer:
        if name == "arith.neg":
            return wrap(-a, dt)
        if name == "arith.not":
            return wrap(~a, dt)
        if name == "math.abs" and not dt.is_bool:
            return wrap(abs(a), dt) if dt.is_signed else a
        return None
    if name == "arith.neg":
        return -a
    if name == "math.abs":
        return abs(a)
    if name == "math.floor":
        return float(np.floor(np.float64(a)))  # keeps -0.0 and infinities
    if name == "math.ceil":
        return float(np.ceil(np.float64(a)))
    if name == "math.trunc":
        return float(np.trunc(np.float64(a)))
    if name == "math.rint":
        return float(np.rint(np.float64(a)))  # ties to even
    return None


def fold_cmp(predicate: str, a: Number, b: Number, dt: Union[DType, PointerType]) -> Optional[bool]:
    if isinstance(dt, DType) and dt.is_bool and predicate not in ("eq", "ne"):
        return None
    # Python's float comparisons are IEEE's: ordered, except != which is true for NaN.
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}.get(predicate)


_TO_INTEGRAL = {"rn": lambda x: float(np.rint(x)), "rz": math.trunc, "rd": math.floor, "ru": math.ceil}


def fold_cast(x: Number, src: DType, dst: DType, rounding: str) -> Optional[Number]:
    """The cast of a constant, rounding in `rounding` (rn rz rd ru; see ops.cast_rounding)."""
    if dst.is_bool:
        if src.is_floating and math.isnan(x):
            return None
        return int(x != 0)
    if src.is_integer and dst.is_integer:
        return wrap(x, dst)  # `x` is already sign- or zero-extended by its source type
    if dst.is_integer:
        if not math.isfinite(x):
            return None
        t = int(_TO_INTEGRAL[rounding](x))
        return t if wrap(t, dst) == t else None  # out of range: target-specific saturation
    if src.is_floating and (not math.isfinite(x) or x == 0):
        return x  # infinities, NaN and signed zeros convert unchanged
    return round_rational(Fraction(x), dst, rounding)


def _cast_is_exact(src: Type, mid: Type) -> bool:
    """Whether casting src -> mid -> src always gives back the original value."""
    s, m = element_type(src), element_type(mid)
    if not (isinstance(s, DType) and isinstance(m, DType)) or s.is_fp8 or m.is_fp8:
        return False
    if s.is_integer and m.is_integer:
        return not m.is_bool and m.bits >= s.bits  # extension then truncation restores the bits
    if s.is_floating and m.is_floating:
        return m.exponent_bits >= s.exponent_bits and m.mantissa_bits >= s.mantissa_bits
    if s.is_integer and m.is_floating:
        return s.bits <= m.mantissa_bits + 1  # every integer of `s` is a float of `m`
    return False


# ---------------------------------------------------------------------------- rewriter


class Rewriter:
    """Worklist of ops to visit, with edits that queue whatever they may affect."""

    def __init__(self, root: Operation):
        self.root = root
        self.worklist: deque[Operation] = deque()
        self.queued: set[int] = set()

    def push(self, op: Optional[Operation]) -> None:
        if op is not None and op is not self.root and id(op) not in self.queued:
            self.queued.add(id(op))
            self.worklist.append(op)

    def alive(self, op: Operation) -> bool:
        """Whether `op` is still nested in the root (erased ops and their contents are not)."""
        while op is not self.root:
            block = op.parent
            if block is None or block.parent is None or block.parent.parent is None:
                return False
            op = block.parent.parent
        return True

    def create(self, before: Operation, name: str, operands: Sequence[Value], type: Type,
               attrs: Optional[dict[str, Any]] = None, hint: Optional[str] = None) -> Value:
        new = Operation(name, operands, [type], attrs, loc=before.loc)
        before.parent.insert_before(before, new)
        new.result.name_hint = hint
        self.push(new)
        return new.result

    def constant(self, before: Operation, value: Number, type: Type, hint: Optional[str] = None) -> Value:
        dt = element_type(type)
        return self.create(before, "arith.constant", [], type, {"value": attr_value(value, dt)}, hint)

    def replace(self, op: Operation, values: Sequence[Value]) -> None:
        """Replace the results of `op` by `values` and erase it."""
        for r, v in zip(op.results, values):
            for user in r.users():
                self.push(user)
            r.replace_all_uses_with(v)
        self.erase(op)

    def erase(self, op: Operation) -> None:
        for inner in op.walk():
            for v in inner.operands:
                self.push(v.owner_op)  # may now be dead
        op.erase()

    def run(self) -> None:
        for op in self.root.walk():
            self.push(op)
        while self.worklist:
            op = self.worklist.popleft()
            self.queued.discard(id(op))
            if not self.alive(op):
                continue
            if _trivially_dead(op):
                self.erase(op)
                continue
            for pattern in PATTERNS.get(op.name, ()):
                if pattern(op, self):
                    break


def _trivially_dead(op: Operation) -> bool:
    d = op_def(op.name)
    return is_pure(op) and not d.terminator and not any(r.has_uses for r in op.results)


# ---------------------------------------------------------------------------- patterns

Pattern = Callable[[Operation, Rewriter], bool]
PATTERNS: dict[str, list[Pattern]] = {}


def pattern(*names: str) -> Callable[[Pattern], Pattern]:
    def register(fn: Pattern) -> Pattern:
        for name in names:
            PATTERNS.setdefault(name, []).append(fn)
        return fn

    return register


def _replace_with_constant(op: Operation, rw: Rewriter, value: Optional[Number]) -> bool:
    if value is None:
        return False
    rw.replace(op, [rw.constant(op, value, op.result.type, op.result.name_hint)])
    return True


_BINARY = ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.and", "arith.or", "arith.xor",
           "arith.shl", "arith.shr", "arith.max", "arith.min", "math.umulhi")


@pattern(*_BINARY)
def fold_binary_constants(op: Operation, rw: Rewriter) -> bool:
    dt = _foldable_dtype(op.result.type)
    a, b = constant_value(op.operand(0)), constant_value(op.operand(1))
    if dt is None or a is None or b is None:
        return False
    if dt.is_integer:
        return _replace_with_constant(op, rw, fold_int_binary(op.name, a, b, dt))
    return _replace_with_constant(op, rw, fold_float_binary(op.name, a, b, dt, op.attrs))


@pattern(*_BINARY)
def binary_identities(op: Operation, rw: Rewriter) -> bool:
    """x+0, x*1, x*0 (ints), x-x (ints), x&x, x|0, x^x, x<<0, max(x, x), ..."""
    x, y = op.operands
    dt = element_type(op.result.type)
    if not isinstance(dt, DType):
        return False
    cx, cy = constant_value(x), constant_value(y)
    if op_def(op.name).commutative and cx is not None and cy is None:
        x, y, cx, cy = y, x, cy, cx  # the constant goes right
    name, same = op.name, x is y
    if dt.is_floating:
        # x*1 and x/1 are exact for every x; x + -0.0 and x - 0.0 are x, even for x = -0.0, in
        # every rounding mode but rd (toward -inf: +0.0 + -0.0 is -0.0).
        signed_zero_ok = rounding_mode(op) != "rd"
        keep = ((name in ("arith.mul", "arith.div") and cy == 1)
                or (name == "arith.add" and cy == 0 and math.copysign(1, cy) < 0 and signed_zero_ok)
                or (name == "arith.sub" and cy == 0 and math.copysign(1, cy) > 0 and signed_zero_ok)
                or (name in ("arith.max", "arith.min") and same))
        if keep:
            rw.replace(op, [x])
        return keep
    ones = wrap(-1, dt)
    if ((name in ("arith.add", "arith.sub", "arith.or", "arith.xor", "arith.shl", "arith.shr") and cy == 0)
            or (name in ("arith.mul", "arith.div") and cy == 1)
            or (name in ("arith.and", "arith.or", "arith.max", "arith.min") and same)
            or (name == "arith.and" and cy == ones)):
        rw.replace(op, [x])
        return True
    if name == "arith.or" and cy == ones:
        rw.replace(op, [y])
        return True
    if ((name in ("arith.mul", "arith.and") and cy == 0) or (name == "arith.rem" and cy == 1)
            or (name in ("arith.sub", "arith.xor") and same)):
        return _replace_with_constant(op, rw, 0)
    return False


@pattern("arith.neg", "arith.not", "math.abs", "math.floor", "math.ceil", "math.trunc", "math.rint")
def fold_unary_op(op: Operation, rw: Rewriter) -> bool:
    dt = _foldable_dtype(op.result.type)
    a = constant_value(op.operand(0))
    if dt is not None and a is not None:
        return _replace_with_constant(op, rw, fold_unary(op.name, a, dt))
    inner = op.operand(0).owner_op
    if op.name in ("arith.neg", "arith.not") and inner is not None and inner.name == op.name:
        rw.replace(op, [inner.operand(0)])  # neg(neg(x)) and not(not(x)) are x, floats included
        return True
    return False


@pattern("arith.cmp")
def fold_compare(op: Operation, rw: Rewriter) -> bool:
    x, y = op.operands
    predicate = op.attrs.get("predicate")
    el = element_type(x.type)
    if x is y and (isinstance(el, PointerType) or el.is_integer):
        return _replace_with_constant(op, rw, fold_cmp(predicate, 0, 0, el))
    a, b = constant_value(x), constant_value(y)
    if a is None or b is None:
        return False
    return _replace_with_constant(op, rw, fold_cmp(predicate, a, b, el))


@pattern("arith.select")
def fold_select(op: Operation, rw: Rewriter) -> bool:
    c, a, b = op.operands
    if a is b:
        rw.replace(op, [a])
        return True
    cond = constant_value(c)
    if cond is None:
        return False
    rw.replace(op, [a if cond else b])
    return True


@pattern("arith.cast")
def fold_cast_op(op: Operation, rw: Rewriter) -> bool:
    x = op.operand(0)
    if x.type == op.result.type:
        rw.replace(op, [x])
        return True
    inner = x.owner_op
    if (inner is not None and inner.name == "arith.cast" and inner.operand(0).type == op.result.type
            and _cast_is_exact(op.result.type, x.type)):
        rw.replace(op, [inner.operand(0)])
        return True
    src, dst = _foldable_dtype(x.type), _foldable_dtype(op.result.type)
    value = constant_value(x)
    if src is None or dst is None or value is None:
        return False
    return _replace_with_constant(op, rw, fold_cast(value, src, dst, cast_rounding(op)))


@pattern("arith.bitcast")
def fold_bitcast_op(op: Operation, rw: Rewriter) -> bool:
    if op.operand(0).type != op.result.type:
        return False
    rw.replace(op, [op.operand(0)])
    return True


@pattern("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans")
def reshape_constants(op: Operation, rw: Rewriter) -> bool:
    """A shape op on a constant is a constant; on a splat it is a splat of the scalar."""
    x = op.operand(0)
    inner = x.owner_op
    if inner is not None and inner.name == "arith.constant":
        rw.replace(op, [rw.create(op, "arith.constant", [], op.result.type, dict(inner.attrs), op.result.name_hint)])
        return True
    if op.name != "tt.splat" and inner is not None and inner.name == "tt.splat":
        rw.replace(op, [rw.create(op, "tt.splat", [inner.operand(0)], op.result.type, hint=op.result.name_hint)])
        return True
    return False


@pattern("tt.broadcast", "tt.reshape")
def same_shape_is_identity(op: Operation, rw: Rewriter) -> bool:
    if op.operand(0).type != op.result.type:
        return False
    rw.replace(op, [op.operand(0)])
    return True


@pattern("tt.trans")
def identity_transpose(op: Operation, rw: Rewriter) -> bool:
    order = op.attrs.get("order")
    if list(order) != sorted(order):
        return False
    rw.replace(op, [op.operand(0)])
    return True


@pattern("tt.hint")
def hint_on_constant(op: Operation, rw: Rewriter) -> bool:
    x = op.operand(0)
    if x.owner_op is None or x.owner_op.name != "arith.constant":
        return False
    rw.replace(op, [x])
    return True


@pattern("tt.addptr")
def addptr_zero(op: Operation, rw: Rewriter) -> bool:
    if constant_value(op.operand(1)) != 0:
        return False
    rw.replace(op, [op.operand(0)])
    return True


def _offsets_combinable(a: Value, b: Value) -> bool:
    """Whether p + a + b equals p + (a + b): always for 64-bit offsets, else when a + b cannot wrap."""
    if a.type != b.type:
        return False
    dt = element_type(a.type)
    if dt.bits == 64:
        return True
    ca, cb = constant_value(a), constant_value(b)
    return ca is not None and cb is not None and wrap(ca + cb, dt) == ca + cb


@pattern("tt.addptr")
def addptr_chain(op: Operation, rw: Rewriter) -> bool:
    """addptr(addptr(p, a), b) -> addptr(p, a + b)."""
    inner = op.operand(0).owner_op
    if inner is None or inner.name != "tt.addptr" or not _offsets_combinable(inner.operand(1), op.operand(1)):
        return False
    total = rw.create(op, "arith.add", [inner.operand(1), op.operand(1)], op.operand(1).type)
    rw.replace(op, [rw.create(op, "tt.addptr", [inner.operand(0), total], op.result.type,
                              dict(op.attrs), op.result.name_hint)])
    return True


@pattern("scf.if")
def if_with_constant_condition(op: Operation, rw: Rewriter) -> bool:
    cond = constant_value(op.operand(0))
    if cond is None:
        return False
    block = op.regions[0 if cond else 1].block
    term = block.terminator
    for inner in list(block.ops[:-1]):
        inner.move_before(op)
        rw.push(inner)
    rw.replace(op, list(term.operands))
    return True


@pattern("scf.for")
def for_without_iterations(op: Operation, rw: Rewriter) -> bool:
    lb, ub = constant_value(op.operand(0)), constant_value(op.operand(1))
    if lb is None or ub is None or lb < ub:
        return False
    rw.replace(op, list(op.operands[3:]))
    return True


class Canonicalize(Pass):
    """Constant folding and local simplifications, iterated to a fixed point."""

    name = "canonicalize"

    def run(self, func: Operation) -> None:
        Rewriter(func).run()


__all__ = ["Canonicalize", "Rewriter", "constant_value", "wrap", "round_float", "int_to_float", "round_rational",
           "normalize",
           "fold_int_binary", "fold_float_binary", "fold_unary", "fold_cmp", "fold_cast", "PATTERNS", "pattern"]
