"""The op registry, and the op set of tile IR.

Every op name used at any level is registered here (or by the module of its level) with an
`OpDef`: its traits and a verifier. Operations themselves are generic `Operation` objects;
the registry is what gives a name its meaning. The tile IR ops and their semantics:

Values and shapes (all tensors have static, power-of-two-free shapes; `T` is any type):
  arith.constant {value}            : T         scalar, or a tensor splat of `value`
  tt.program_id {axis}              : i32       this program's index along grid axis 0..2
  tt.num_programs {axis}            : i32
  tt.arange {start, end}            : tensor<Nxi32>   start, start+1, ..., end-1
  tt.splat %s                       : tensor    every element = scalar %s
  tt.broadcast %t                   : tensor    same rank, size-1 dims stretched
  tt.expand_dims %t {axis}          : tensor    inserts a size-1 dim at `axis`
  tt.reshape %t {can_reorder}       : tensor    same element count, row-major order kept
  tt.trans %t {order}               : tensor    result dim i = operand dim order[i]
  tt.join %a, %b                    : tensor<S x 2>   a new minor dimension: [..., 0] = %a, [..., 1] = %b
                                    (operands of one type, tensor<S>)
  tt.split %t                       : T, T      the inverse: %t[..., 0] and %t[..., 1] (last dim 2)
  tt.hint %x {multiple_of, max_contiguous, max_constancy} : same type; value unchanged,
                                    per-dimension facts for axis analysis (lists, may be empty)

Memory (pointer arithmetic is in elements; masks are i1 of the pointer's shape):
  tt.addptr %p, %off                : type(%p)  %p + %off * sizeof(pointee)
  tt.load %p [, %mask [, %other]] {cache, eviction, volatile} : elements of %p
                                    masked-off lanes read `other` (undefined if absent)
  tt.store %p, %v [, %mask] {cache, eviction}
  tt.atomic_rmw %p, %v [, %mask] {kind, sem, scope} : old values
                                    kind: add, max, min, and, or, xor, xchg
  tt.atomic_cas %p, %cmp, %v {sem, scope}   : old values
  tt.ptr_to_int %p : i64-typed      tt.int_to_ptr %i : ptr-typed

Tensor descriptors (one shape, stride and offset operand per dimension d < rank = len(block_shape);
expanded into masked tt.load / tt.store by tile/opt/expand_descriptors.py before the gpu passes):
  tt.descriptor_load %base, %shape..., %strides..., %offsets... {block_shape, padding}
                                    : tensor<block_shape x T>; %base: ptr<T>, shapes i32, strides i64
                                    (elements), offsets i32. Element i of the result is the tensor's
                                    element at %offsets + i; one outside [0, shape) in any dimension
                                    reads 0 (padding "zero") or NaN (padding "nan", floats only)
  tt.descriptor_store %base, %shape..., %strides..., %offsets..., %value {block_shape}
                                    writes the elements of %value that fall inside the tensor
  On sm_90a, the accesses of a descriptor end with one more operand, its %tensormap
  (tensormap); tile/opt/tma.py lowers those to TMA copies instead of expanding them.
  tt.make_tensormap %base, %shape..., %strides... {block_shape, padding} : tensormap
                                    the tensor map of an in-kernel descriptor (sm_90a), built at run
                                    time in this program's slot of the global scratch; tile/opt/tma.py
                                    appends the scratch pointer (ptr<i8>) as the last operand and
                                    numbers the slot (attr `slot`)

Elementwise (operands have identical types, scalar or tensor; the frontend inserts
splats, broadcasts and casts. Integer signedness comes from the dtype: i32 vs u32):
  arith.add sub mul {rounding}      wrap-around for integers
  arith.div {approx, rounding}      floats: IEEE division; with approx (f32 only: Triton's `/`) within
                                    2 ulp (div.full.f32); integers: truncates toward zero
                                    `rounding` (f32 and f64 only, on add sub mul div, math.fma and
                                    math.sqrt): the IEEE rounding of the one result, "rn" (to nearest
                                    even), "rz" (toward zero), "rd" (toward -inf), "ru" (toward +inf);
                                    present, the op is also never contracted or reassociated (add.rn
                                    stays an add). Absent: to nearest, and mul + add may fuse
  arith.rem                         floats: fmod (sign of the dividend); integers: C remainder
  arith.and or xor                  integers and i1
  arith.shl shr                     shr: arithmetic for signed, logical for unsigned
  arith.max min {propagate_nan}     floats: the non-NaN operand unless propagate_nan
  arith.cmp {predicate}             -> i1 of the operand shape; eq ne lt le gt ge;
                                    floats: ordered, except ne which is unordered
  arith.neg, arith.not              not: bitwise complement (logical not for i1)
  arith.select %c, %a, %b           %c is i1 of the same shape
  arith.cast %x {rounding}          : T  value conversion: int<->int (extension by the
                                    source's signedness, truncation), float<->float, int->float
                                    (rounded to nearest even unless `rounding` says otherwise),
                                    float->int (toward zero unless `rounding` says otherwise; out of
                                    range saturates; NaN gives 0 from f16/bf16/f32 into <= 32 bits,
                                    the sign-bit pattern (INT_MIN, 2^31, 2^63) from f64 or into 64
                                    bits, as the GPU's cvt does), anything -> i1 is x != 0.
                                    rounding: "rn" "rz" "rd" "ru" (rd/ru only between f32, f64 and
                                    32/64-bit integers), or Triton's spellings "rtne" (= rn) and
                                    "rtz" (= rz) for float results
  arith.bitcast %x                  : T  same bit width, bits unchanged
  math.abs exp exp2 log log2 sqrt rsqrt sin cos erf floor ceil trunc rint   (unary, floats; abs:
                                    ints too; sqrt {approx}: f32 within 1 ulp, Triton's tl.sqrt;
                                    sqrt {rounding}: correctly rounded in that mode; trunc: toward
                                    zero, rint: to the nearest integral value, ties to even)
  math.fma %a, %b, %c {rounding}    a * b + c with one rounding
  math.umulhi %a, %b                high 32/64 bits of the unsigned product
  math.mulhi %a, %b                 high 32/64 bits of the product, signed or unsigned by the dtype
  math.mul24 %a, %b                 32-bit: low 32 bits of the product of the low 24 bits of a and b
                                    (sign-extended from bit 23 for i32, zero-extended for u32)
  math.sad %a, %b, %c               |a - b| + c (32/64-bit ints; the difference taken exactly, the
                                    sum wraps)
  math.clz %x, math.popc %x : i32   leading zero bits, set bits of a 32/64-bit integer
  math.brev %x                      the bits of a 32/64-bit integer in reverse order
  math.byte_perm %a, %b, %s         32-bit prmt: byte n of the result is byte (s >> 4n) & 7 of the
                                    8 bytes {b:a} (a is bytes 0-3), replaced by the sign fill of that
                                    byte (0x00 or 0xff) when bit 3 of the selector nibble is set
  math.approx %x [, %y] {fn} : f32  the GPU's approximate units (see APPROX_FNS; results within the
                                    PTX ISA's bounds, not bit-exact across implementations):
                                    ex2 (2^x, flushes results below 2^-126), lg2, sin, cos, tanh,
                                    div (x / y; 0 for 2^126 < |y| < 2^128), rcp64h (f64: 1/x from the
                                    high 32 bits of x, low 32 result bits zero, subnormals flushed)

Blocks of values:
  tt.dot %a, %b, %acc {input_precision, max_num_imprecise_acc} : type(%acc)
                                    a: MxK, b: KxN, acc: MxN; acc + a @ b
  tt.reduce %x... {axis} : T...     region ^(%a..., %b...): tt.reduce.return %r...
  tt.scan %x... {axis, reverse} : T...     region like reduce; inclusive scan
  tt.gather %src, %index {axis}     : tensor<shape(%index) x element(%src)>
                                    out[i] = src[i with i[axis] replaced by index[i]]; same rank,
                                    index.shape[d] = src.shape[d] for d != axis; an index outside
                                    [0, src.shape[axis]) is an error (undefined on the GPU)
  tt.histogram %x [, %mask]         : tensor<N x i32>   out[b] = #{i : x[i] == b and mask[i]} for a
                                    1-D integer %x; values outside [0, N) are not counted

Elementwise escapes (every operand and result has one shape; no operands: scalar results):
  tt.elementwise_inline_asm %x... {asm, constraints, pure, packed_element} : T...
                                    runs the asm on `packed_element` elements of every operand
                                    at a time (tile.ir.inline_asm: registers, constraints, $N);
                                    pure = false keeps it from CSE, DCE and hoisting
  tt.map_elementwise %x... {pack} : T...   region ^(pack scalars per operand, operand-major):
                                    the scalar function; tt.map_elementwise.return %r... (pack
                                    scalars per result, result-major); may branch and loop

Debug and hints:
  tt.print %x... {prefix, hex}      tt.assert %cond {message, file, line}     tt.debug_barrier
  tt.assume %cond                   the program promises that %cond (i1, scalar or block) holds:
                                    analyses may use it (axis info: `x % 16 == 0` makes x
                                    divisible by 16); the interpreter checks it

Control flow (scf) and functions:
  scf.for %lb, %ub, %step, %init... : T...  region ^(%iv, %carried...): scf.yield %next...
  scf.if %cond : T...                       then-region, else-region, each ending in scf.yield
  scf.while %init... : T...                 before-region ^(%args...): scf.condition %c, %fwd...
                                            after-region  ^(%fwd...): scf.yield %next...
  tt.func {sym_name, arg_names}             region ^(%params...): ... tt.return
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from .core import Operation
from .types import DType, PointerType, TensorMapType, TensorType, Type, element_type, i1, i32, i64, shape_of, with_element


class VerificationError(Exception):
    def __init__(self, op: Operation, message: str):
        where = f" (from {op.loc.describe()})" if op.loc is not None else ""
        super().__init__(f"'{op.name}': {message}{where}")
        self.op = op


@dataclass
class OpDef:
    name: str
    verify: Optional[Callable[[Operation], None]] = None
    pure: bool = True  # no side effects: may be removed when unused, merged by CSE, hoisted
    terminator: bool = False
    commutative: bool = False
    num_regions: int = 0
    doc: str = ""
    traits: set[str] = field(default_factory=set)


OP_DEFS: dict[str, OpDef] = {}


def register_op(name: str, *, pure: bool = True, terminator: bool = False, commutative: bool = False,
                num_regions: int = 0, traits: tuple[str, ...] = (), doc: str = ""):
    """Decorator registering `name` with the decorated function as its verifier."""

    def wrap(verify: Optional[Callable[[Operation], None]]):
        OP_DEFS[name] = OpDef(name, verify, pure, terminator, commutative, num_regions, doc, set(traits))
        return verify

    return wrap


def op_def(name: str) -> Optional[OpDef]:
    return OP_DEFS.get(name)


def is_pure(op: Operation) -> bool:
    d = OP_DEFS.get(op.name)
    if d is not None and "pure_attr" in d.traits:  # purity stated per op (inline asm)
        return bool(op.attrs.get("pure", False))
    return d is not None and d.pure


# ------------------------------------------------------------------------------ helpers


def expect(op: Operation, cond: bool, message: str) -> None:
    if not cond:
        raise VerificationError(op, message)


def expect_counts(op: Operation, operands: tuple[int, int] | int, results: int) -> None:
    lo, hi = (operands, operands) if isinstance(operands, int) else operands
    expect(op, lo <= op.num_operands <= hi, f"expects {lo}..{hi} operands, got {op.num_operands}")
    expect(op, len(op.results) == results, f"expects {results} results, got {len(op.results)}")


def same_shape(a: Type, b: Type) -> bool:
    return shape_of(a) == shape_of(b) and isinstance(a, TensorType) == isinstance(b, TensorType)


def _elementwise(kinds: str, result_bool: bool = False, arity: int = 2):
    """Verifier for elementwise ops over dtypes of the given kinds ('i' int, 'f' float, 'p' pointer)."""

    def verify(op: Operation) -> None:
        expect_counts(op, arity, 1)
        t0 = op.operand(0).type
        for v in op.operands[1:]:
            expect(op, v.type == t0, f"operand types differ: {t0} vs {v.type}")
        el = element_type(t0)
        ok = (("i" in kinds and isinstance(el, DType) and el.is_integer)
              or ("f" in kinds and isinstance(el, DType) and el.is_floating)
              or ("p" in kinds and isinstance(el, PointerType)))
        expect(op, ok, f"unsupported element type {el}")
        want = with_element(t0, i1) if result_bool else t0
        expect(op, op.result.type == want, f"result type {op.result.type} should be {want}")

    return verify


ROUNDING_MODES = ("rn", "rz", "rd", "ru")  # to nearest even, toward zero, toward -inf, toward +inf
TRITON_ROUNDINGS = {"rtne": "rn", "rtz": "rz"}  # Triton's fp_downcast_rounding names, kept on arith.cast
ROUNDED_OPS = ("arith.add", "arith.sub", "arith.mul", "arith.div", "math.fma", "math.sqrt")


def rounding_mode(op: Operation) -> Optional[str]:
    """The IEEE rounding an op asks for ("rn", "rz", "rd", "ru"), or None when it names none."""
    mode = op.attrs.get("rounding")
    return TRITON_ROUNDINGS.get(mode, mode) if mode is not None else None


def cast_rounding(op: Operation) -> str:
    """How an arith.cast rounds: its `rounding`, else toward zero into integers, to nearest otherwise."""
    mode = rounding_mode(op)
    if mode is not None:
        return mode
    src, dst = element_type(op.operand(0).type), element_type(op.result.type)
    return "rz" if src.is_floating and dst.is_integer else "rn"


def _verify_rounding(op: Operation) -> None:
    mode = op.attrs.get("rounding")
    if mode is None:
        return
    expect(op, mode in ROUNDING_MODES, f"rounding must be one of {ROUNDING_MODES}, got {mode!r}")
    el = element_type(op.operand(0).type)
    expect(op, el.name in ("f32", "f64"), f"rounding applies to f32 and f64 only, not {el}")
    expect(op, not op.attrs.get("approx"), "an op is either approx or rounded in a given mode")


def _rounded(verify: Callable[[Operation], None]) -> Callable[[Operation], None]:
    def check(op: Operation) -> None:
        verify(op)
        _verify_rounding(op)

    return check


for _name in ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.max", "arith.min"):
    verify = _rounded(_elementwise("if")) if _name in ROUNDED_OPS else _elementwise("if")
    register_op(_name, commutative=_name in ("arith.add", "arith.mul", "arith.max", "arith.min"))(verify)
for _name in ("arith.and", "arith.or", "arith.xor"):
    register_op(_name, commutative=True)(_elementwise("i"))
for _name in ("arith.shl", "arith.shr", "math.umulhi"):
    register_op(_name)(_elementwise("i"))
register_op("arith.neg")(_elementwise("if", arity=1))
register_op("arith.not")(_elementwise("i", arity=1))
for _name in ("math.exp", "math.exp2", "math.log", "math.log2", "math.rsqrt", "math.sin", "math.cos",
              "math.erf", "math.floor", "math.ceil", "math.trunc", "math.rint"):
    register_op(_name)(_elementwise("f", arity=1))
register_op("math.sqrt")(_rounded(_elementwise("f", arity=1)))
register_op("math.abs")(_elementwise("if", arity=1))
register_op("math.fma")(_rounded(_elementwise("f", arity=3)))


def _int_bits(op: Operation, widths: tuple[int, ...]) -> DType:
    el = element_type(op.operand(0).type)
    expect(op, isinstance(el, DType) and el.is_integer and el.bits in widths,
           f"expects {'/'.join(map(str, widths))}-bit integers, got {el}")
    return el


def _int_elementwise(arity: int, widths: tuple[int, ...] = (32, 64)) -> Callable[[Operation], None]:
    def verify(op: Operation) -> None:
        _elementwise("i", arity=arity)(op)
        _int_bits(op, widths)

    return verify


register_op("math.mulhi")(_int_elementwise(2))
register_op("math.mul24")(_int_elementwise(2, (32,)))
register_op("math.sad")(_int_elementwise(3))
register_op("math.brev")(_int_elementwise(1))
register_op("math.byte_perm")(_int_elementwise(3, (32,)))


@register_op("math.clz")
@register_op("math.popc")
def _verify_bit_count(op: Operation) -> None:
    expect_counts(op, 1, 1)
    _int_bits(op, (32, 64))
    want = with_element(op.operand(0).type, i32)
    expect(op, op.result.type == want, f"result type {op.result.type} should be {want}")


APPROX_FNS = {"ex2": 1, "lg2": 1, "sin": 1, "cos": 1, "tanh": 1, "div": 2, "rcp64h": 1}  # fn -> operands


@register_op("math.approx")
def _verify_approx(op: Operation) -> None:
    fn = op.attrs.get("fn")
    expect(op, fn in APPROX_FNS, f"fn must be one of {tuple(APPROX_FNS)}, got {fn!r}")
    _elementwise("f", arity=APPROX_FNS[fn])(op)
    want = "f64" if fn == "rcp64h" else "f32"
    expect(op, element_type(op.result.type).name == want, f"approx {fn} is on {want}")

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@register_op("arith.cmp")
def _verify_cmp(op: Operation) -> None:
    _elementwise("ifp", result_bool=True)(op)
    expect(op, op.attrs.get("predicate") in CMP_PREDICATES, f"bad predicate {op.attrs.get('predicate')!r}")


@register_op("arith.select")
def _verify_select(op: Operation) -> None:
    expect_counts(op, 3, 1)
    c, a, b = (v.type for v in op.operands)
    expect(op, a == b, f"select branches differ: {a} vs {b}")
    expect(op, element_type(c) == i1 and same_shape(c, a) or c == i1,
           f"condition {c} must be i1 of the value's shape")
    expect(op, op.result.type == a, "result type must match the operands")


@register_op("arith.constant")
def _verify_constant(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, "value" in op.attrs, "missing 'value'")
    expect(op, isinstance(op.attrs["value"], (int, float, bool)), "value must be a number")


@register_op("arith.cast")
def _verify_cast(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, same_shape(src, dst), f"cast changes shape: {src} -> {dst}")
    expect(op, isinstance(element_type(src), DType) and isinstance(element_type(dst), DType),
           "cast is for numbers; use tt.ptr_to_int / tt.int_to_ptr for pointers")
    mode = op.attrs.get("rounding")
    if mode is None:
        return
    es, ed = element_type(src), element_type(dst)
    if mode in TRITON_ROUNDINGS:
        expect(op, ed.is_floating, f"rounding {mode!r} is for float results; use {ROUNDING_MODES}")
        return
    expect(op, mode in ROUNDING_MODES, f"rounding must be one of {ROUNDING_MODES} (or 'rtne', 'rtz'), got {mode!r}")
    expect(op, es.is_floating or ed.is_floating, f"a conversion from {es} to {ed} does not round")
    if mode in ("rd", "ru"):
        wide = ("f32", "f64", "i32", "u32", "i64", "u64")
        expect(op, es.name in wide and ed.name in wide,
               f"rounding {mode!r} converts between f32, f64 and 32/64-bit integers only, not {es} to {ed}")


@register_op("arith.bitcast")
def _verify_bitcast(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, same_shape(src, dst), f"bitcast changes shape: {src} -> {dst}")
    es, ed = element_type(src), element_type(dst)
    bits = lambda e: 64 if isinstance(e, PointerType) else e.bits  # noqa: E731
    expect(op, bits(es) == bits(ed), f"bitcast between widths {bits(es)} and {bits(ed)}")


@register_op("tt.ptr_to_int")
def _verify_ptr_to_int(op: Operation) -> None:
    expect_counts(op, 1, 1)
    expect(op, isinstance(element_type(op.operand(0).type), PointerType), "operand must be a pointer")
    expect(op, op.result.type == with_element(op.operand(0).type, i64), "result must be i64")


@register_op("tt.int_to_ptr")
def _verify_int_to_ptr(op: Operation) -> None:
    expect_counts(op, 1, 1)
    expect(op, element_type(op.operand(0).type) == i64, "operand must be i64")
    expect(op, isinstance(element_type(op.result.type), PointerType), "result must be a pointer")


# ------------------------------------------------------------------------- tensors


@register_op("tt.program_id")
@register_op("tt.num_programs")
def _verify_program_id(op: Operation) -> None:
    expect_counts(op, 0, 1)
    expect(op, op.attrs.get("axis") in (0, 1, 2), "axis must be 0, 1 or 2")
    expect(op, op.result.type == i32, "result must be i32")


@register_op("tt.arange")
def _verify_arange(op: Operation) -> None:
    expect_counts(op, 0, 1)
    start, end = op.attrs.get("start"), op.attrs.get("end")
    expect(op, isinstance(start, int) and isinstance(end, int) and end > start, "needs int start < end")
    expect(op, op.result.type == TensorType((end - start,), i32, getattr(op.result.type, "layout", None)),
           f"result must be tensor<{end - start}xi32>")


@register_op("tt.splat")
def _verify_splat(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, not isinstance(src, TensorType), "operand must be a scalar")
    expect(op, isinstance(dst, TensorType) and dst.element == src, f"result must be a tensor of {src}")


@register_op("tt.broadcast")
def _verify_broadcast(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, isinstance(src, TensorType) and isinstance(dst, TensorType), "operand and result are tensors")
    expect(op, src.element == dst.element and src.rank == dst.rank, f"cannot broadcast {src} to {dst}")
    for s, d in zip(src.shape, dst.shape):
        expect(op, s == d or s == 1, f"cannot broadcast {src} to {dst}")


@register_op("tt.expand_dims")
def _verify_expand_dims(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    axis = op.attrs.get("axis")
    expect(op, isinstance(src, TensorType) and isinstance(axis, int) and 0 <= axis <= src.rank, "bad axis")
    shape = list(src.shape)
    shape.insert(axis, 1)
    expect(op, isinstance(dst, TensorType) and dst.shape == tuple(shape) and dst.element == src.element,
           f"result must have shape {tuple(shape)}")


@register_op("tt.reshape")
def _verify_reshape(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, isinstance(src, TensorType) and isinstance(dst, TensorType), "operand and result are tensors")
    expect(op, src.numel == dst.numel and src.element == dst.element, f"cannot reshape {src} to {dst}")


@register_op("tt.trans")
def _verify_trans(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    order = op.attrs.get("order")
    expect(op, isinstance(src, TensorType) and sorted(order or []) == list(range(src.rank)), "bad order")
    expect(op, dst.shape == tuple(src.shape[i] for i in order) and dst.element == src.element,
           "result shape must be the permuted operand shape")


@register_op("tt.join")
def _verify_join(op: Operation) -> None:
    expect_counts(op, 2, 1)
    a, b, dst = op.operand(0).type, op.operand(1).type, op.result.type
    expect(op, isinstance(a, TensorType) and a == b, f"operands must be tensors of one type, got {a} and {b}")
    expect(op, isinstance(dst, TensorType) and dst.shape == a.shape + (2,) and dst.element == a.element,
           f"result must have shape {a.shape + (2,)}")


@register_op("tt.split")
def _verify_split(op: Operation) -> None:
    expect_counts(op, 1, 2)
    src = op.operand(0).type
    expect(op, isinstance(src, TensorType) and src.rank >= 2 and src.shape[-1] == 2,
           f"operand must be a tensor of rank >= 2 whose last dimension is 2, got {src}")
    for r in op.results:
        expect(op, isinstance(r.type, TensorType) and r.type.shape == src.shape[:-1] and r.type.element == src.element,
               f"results must have shape {src.shape[:-1]}")
    expect(op, op.results[0].type == op.results[1].type, "results must have one type")


@register_op("tt.hint")
def _verify_hint(op: Operation) -> None:
    expect_counts(op, 1, 1)
    expect(op, op.result.type == op.operand(0).type, "result type must match the operand")


# -------------------------------------------------------------------------- memory


def _verify_pointer_operand(op: Operation, ptr_type: Type) -> PointerType:
    el = element_type(ptr_type)
    expect(op, isinstance(el, PointerType), f"expects a pointer, got {ptr_type}")
    return el


def _verify_mask(op: Operation, mask_type: Type, ptr_type: Type) -> None:
    expect(op, element_type(mask_type) == i1 and shape_of(mask_type) == shape_of(ptr_type),
           f"mask {mask_type} must be i1 shaped like the pointer {ptr_type}")


@register_op("tt.addptr")
def _verify_addptr(op: Operation) -> None:
    expect_counts(op, 2, 1)
    p, off = op.operand(0).type, op.operand(1).type
    _verify_pointer_operand(op, p)
    eo = element_type(off)
    expect(op, isinstance(eo, DType) and eo.is_integer and same_shape(p, off), f"bad offset type {off}")
    expect(op, op.result.type == p, "result type must match the pointer")


@register_op("tt.load", pure=False)
def _verify_load(op: Operation) -> None:
    expect_counts(op, (1, 3), 1)
    p = op.operand(0).type
    pt = _verify_pointer_operand(op, p)
    expect(op, op.result.type == with_element(p, pt.pointee), f"result must be {with_element(p, pt.pointee)}")
    if op.num_operands > 1:
        _verify_mask(op, op.operand(1).type, p)
    if op.num_operands > 2:
        expect(op, op.operand(2).type == op.result.type, "other must have the result's type")


@register_op("tt.store", pure=False)
def _verify_store(op: Operation) -> None:
    expect_counts(op, (2, 3), 0)
    p = op.operand(0).type
    pt = _verify_pointer_operand(op, p)
    expect(op, op.operand(1).type == with_element(p, pt.pointee),
           f"stored value {op.operand(1).type} must be {with_element(p, pt.pointee)}")
    if op.num_operands > 2:
        _verify_mask(op, op.operand(2).type, p)


def _verify_descriptor_operands(op: Operation, extra: int) -> tuple[int, PointerType]:
    """Checks base, shapes, strides and offsets of a tt.descriptor_* op; returns (rank, pointer type)."""
    block = op.attrs.get("block_shape")
    expect(op, isinstance(block, list) and 1 <= len(block) <= 5 and all(isinstance(d, int) and d > 0 for d in block),
           f"block_shape must be a list of 1 to 5 positive ints, got {block!r}")
    rank = len(block)
    if op.num_operands == 2 + 3 * rank + extra:  # a host descriptor's tensor map comes last (sm_90a)
        expect(op, isinstance(op.operands[-1].type, TensorMapType), "the last operand must be a tensormap")
    else:
        expect(op, op.num_operands == 1 + 3 * rank + extra,
               f"expects {1 + 3 * rank + extra} operands for a rank-{rank} block, got {op.num_operands}")
    base = op.operand(0).type
    expect(op, isinstance(base, PointerType), f"base must be a scalar pointer, got {base}")
    groups = (("shape", i32, op.operands[1:1 + rank]), ("stride", i64, op.operands[1 + rank:1 + 2 * rank]),
              ("offset", i32, op.operands[1 + 2 * rank:1 + 3 * rank]))
    for what, want, values in groups:
        for v in values:
            expect(op, v.type == want, f"{what} operands must be {want}, got {v.type}")
    return rank, base


@register_op("tt.make_tensormap")
def _verify_make_tensormap(op: Operation) -> None:
    block = op.attrs.get("block_shape")
    expect(op, isinstance(block, list) and 1 <= len(block) <= 5 and all(isinstance(d, int) and d > 0 for d in block),
           f"block_shape must be a list of 1 to 5 positive ints, got {block!r}")
    rank = len(block)
    expect(op, op.num_operands in (1 + 2 * rank, 2 + 2 * rank),
           f"expects a base, {rank} shapes and {rank} strides (and the scratch pointer), got {op.num_operands} operands")
    expect(op, isinstance(op.operand(0).type, PointerType), f"base must be a scalar pointer, got {op.operand(0).type}")
    for i, v in enumerate(op.operands[1:1 + 2 * rank]):
        want = i32 if i < rank else i64
        expect(op, v.type == want, f"{'shape' if i < rank else 'stride'} operands must be {want}, got {v.type}")
    if op.num_operands == 2 + 2 * rank:
        expect(op, isinstance(op.operands[-1].type, PointerType) and "slot" in op.attrs,
               "the scratch operand must be a pointer, with a `slot` attribute")
    expect(op, op.attrs.get("padding") in ("zero", "nan"), "padding must be \"zero\" or \"nan\"")
    expect(op, len(op.results) == 1 and isinstance(op.result.type, TensorMapType), "the result must be a tensormap")


@register_op("tt.descriptor_load", pure=False)
def _verify_descriptor_load(op: Operation) -> None:
    _, base = _verify_descriptor_operands(op, 0)
    expect(op, len(op.results) == 1, "expects one result")
    want = TensorType(tuple(op.attrs["block_shape"]), base.pointee)
    expect(op, op.result.type == want, f"result must be {want}")
    padding = op.attrs.get("padding")
    expect(op, padding in ("zero", "nan"), f"padding must be \"zero\" or \"nan\", got {padding!r}")
    expect(op, padding == "zero" or (isinstance(base.pointee, DType) and base.pointee.is_floating),
           "padding \"nan\" needs a floating-point element type")


@register_op("tt.descriptor_store", pure=False)
def _verify_descriptor_store(op: Operation) -> None:
    rank, base = _verify_descriptor_operands(op, 1)
    expect(op, not op.results, "descriptor_store has no results")
    want = TensorType(tuple(op.attrs["block_shape"]), base.pointee)
    expect(op, op.operand(1 + 3 * rank).type == want, f"the stored value must be {want}")


ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")


@register_op("tt.atomic_rmw", pure=False)
def _verify_atomic_rmw(op: Operation) -> None:
    expect_counts(op, (2, 3), 1)
    p = op.operand(0).type
    pt = _verify_pointer_operand(op, p)
    expect(op, op.attrs.get("kind") in ATOMIC_KINDS, f"bad atomic kind {op.attrs.get('kind')!r}")
    expect(op, op.operand(1).type == with_element(p, pt.pointee), "value must match the pointee type")
    expect(op, op.result.type == op.operand(1).type, "result must match the value type")
    if op.num_operands > 2:
        _verify_mask(op, op.operand(2).type, p)


@register_op("tt.atomic_cas", pure=False)
def _verify_atomic_cas(op: Operation) -> None:
    expect_counts(op, 3, 1)
    p = op.operand(0).type
    pt = _verify_pointer_operand(op, p)
    want = with_element(p, pt.pointee)
    expect(op, op.operand(1).type == want and op.operand(2).type == want, f"cmp and value must be {want}")
    expect(op, op.result.type == want, f"result must be {want}")


# ---------------------------------------------------------------- blocks of values


@register_op("tt.dot")
def _verify_dot(op: Operation) -> None:
    expect_counts(op, 3, 1)
    a, b, c = (v.type for v in op.operands)
    expect(op, all(isinstance(t, TensorType) and t.rank == 2 for t in (a, b, c)), "operands are 2-D tensors")
    expect(op, a.shape[1] == b.shape[0], f"inner dimensions differ: {a.shape} @ {b.shape}")
    expect(op, c.shape == (a.shape[0], b.shape[1]), f"accumulator {c.shape} must be {(a.shape[0], b.shape[1])}")
    # two fp8 formats may meet (gfx942's MFMA multiply fp8 by bf8)
    expect(op, a.element == b.element or a.element.is_fp8 and b.element.is_fp8,
           f"operand dtypes differ: {a.element} vs {b.element}")
    expect(op, op.result.type == c, "result must have the accumulator's type")


def _verify_combine_region(op: Operation, what: str) -> None:
    expect(op, len(op.regions) == 1, f"{what} needs one combine region")
    n = op.num_operands
    expect(op, n >= 1 and len(op.results) == n, f"{what} needs as many results as operands")
    block = op.regions[0].block
    elems = [element_type(v.type) for v in op.operands]
    expect(op, [a.type for a in block.args] == elems + elems, "combine region arguments must be the elements twice")
    term = block.terminator
    expect(op, term is not None and term.name == "tt.reduce.return", "combine region must end in tt.reduce.return")
    expect(op, [v.type for v in term.operands] == elems, "combine region must return one element per operand")


@register_op("tt.reduce", num_regions=1)
def _verify_reduce(op: Operation) -> None:
    _verify_combine_region(op, "reduce")
    axis = op.attrs.get("axis")
    for v, r in zip(op.operands, op.results):
        t = v.type
        expect(op, isinstance(t, TensorType) and isinstance(axis, int) and 0 <= axis < t.rank, "bad axis")
        shape = t.shape[:axis] + t.shape[axis + 1:]
        want = TensorType(shape, t.element) if shape else t.element
        expect(op, shape_of(r.type) == shape_of(want) and element_type(r.type) == t.element,
               f"result must be {want}")


@register_op("tt.scan", num_regions=1)
def _verify_scan(op: Operation) -> None:
    _verify_combine_region(op, "scan")
    axis = op.attrs.get("axis")
    for v, r in zip(op.operands, op.results):
        expect(op, isinstance(v.type, TensorType) and 0 <= axis < v.type.rank, "bad axis")
        expect(op, r.type == v.type, "scan results have the operand types")


register_op("tt.reduce.return", terminator=True)(None)


@register_op("tt.gather")
def _verify_gather(op: Operation) -> None:
    expect_counts(op, 2, 1)
    src, index, dst = op.operand(0).type, op.operand(1).type, op.result.type
    axis = op.attrs.get("axis")
    expect(op, isinstance(src, TensorType) and isinstance(index, TensorType) and src.rank == index.rank,
           "source and index must be tensors of one rank")
    expect(op, isinstance(axis, int) and 0 <= axis < src.rank, "bad axis")
    expect(op, isinstance(index.element, DType) and index.element.is_integer and index.element != i1,
           f"index must be integers, got {index.element}")
    expect(op, all(s == i for d, (s, i) in enumerate(zip(src.shape, index.shape)) if d != axis),
           f"index shape {index.shape} must match source shape {src.shape} except along axis {axis}")
    expect(op, isinstance(dst, TensorType) and dst.shape == index.shape and dst.element == src.element,
           f"result must be the source's elements in the index's shape {index.shape}")


@register_op("tt.histogram")
def _verify_histogram(op: Operation) -> None:
    expect_counts(op, (1, 2), 1)
    x, dst = op.operand(0).type, op.result.type
    expect(op, isinstance(x, TensorType) and x.rank == 1 and isinstance(x.element, DType) and x.element.is_integer
           and x.element != i1, f"input must be a 1-D integer tensor, got {x}")
    if op.num_operands > 1:
        m = op.operand(1).type
        expect(op, isinstance(m, TensorType) and m.element == i1 and m.shape == x.shape, "mask must be i1 like the input")
    expect(op, isinstance(dst, TensorType) and dst.rank == 1 and dst.element == i32, "result must be a 1-D i32 tensor")


# --------------------------------------------------------------------------- debug


@register_op("tt.print", pure=False)
def _verify_print(op: Operation) -> None:
    expect(op, not op.results, "print has no results")


@register_op("tt.assert", pure=False)
def _verify_assert(op: Operation) -> None:
    expect_counts(op, 1, 0)
    expect(op, element_type(op.operand(0).type) == i1, "condition must be i1")


register_op("tt.debug_barrier", pure=False)(None)


@register_op("tt.assume", pure=False)
def _verify_assume(op: Operation) -> None:
    expect_counts(op, 1, 0)
    expect(op, element_type(op.operand(0).type) == i1, "the assumed condition must be i1")


# ------------------------------------------------------------------- elementwise escapes


def _verify_same_shapes(op: Operation) -> None:
    shapes = {shape_of(v.type) for v in list(op.operands) + list(op.results)}
    expect(op, len(shapes) == 1, f"operands and results must share one shape, got {sorted(shapes)}")
    expect(op, bool(op.results), "needs at least one result")


@register_op("tt.elementwise_inline_asm", traits=("pure_attr",))
def _verify_inline_asm(op: Operation) -> None:
    from .inline_asm import check

    _verify_same_shapes(op)
    asm, constraints, pack = op.attrs.get("asm"), op.attrs.get("constraints"), op.attrs.get("packed_element")
    expect(op, isinstance(asm, str) and isinstance(constraints, str), "needs string attrs asm and constraints")
    expect(op, isinstance(op.attrs.get("pure"), bool), "needs a bool attr pure")
    expect(op, isinstance(pack, int) and pack >= 1 and pack & (pack - 1) == 0,
           "packed_element must be a power of two")
    try:
        check(asm, constraints, [element_type(v.type) for v in op.operands], [element_type(r.type) for r in op.results],
              pack)
    except ValueError as e:
        raise VerificationError(op, str(e)) from None


@register_op("tt.map_elementwise", num_regions=1, pure=False)
def _verify_map_elementwise(op: Operation) -> None:
    _verify_same_shapes(op)
    pack = op.attrs.get("pack")
    expect(op, isinstance(pack, int) and pack >= 1, "pack must be a positive integer")
    block = op.regions[0].block
    want_args = [element_type(v.type) for v in op.operands for _ in range(pack)]
    expect(op, [a.type for a in block.args] == want_args, f"region arguments must be {want_args}")
    term = block.terminator
    want = [element_type(r.type) for r in op.results for _ in range(pack)]
    expect(op, term is not None and term.name == "tt.map_elementwise.return", "region must end in "
           "tt.map_elementwise.return")
    expect(op, [v.type for v in term.operands] == want, f"the region must return {want}")


register_op("tt.map_elementwise.return", terminator=True)(None)


# ---------------------------------------------------------------- control flow


def _yield_types(block) -> list[Type]:
    term = block.terminator
    return [v.type for v in term.operands] if term is not None else []


@register_op("scf.for", num_regions=1, pure=False)
def _verify_for(op: Operation) -> None:
    expect(op, op.num_operands >= 3, "scf.for needs lb, ub, step")
    lb, ub, step = (v.type for v in op.operands[:3])
    expect(op, lb == ub == step and isinstance(lb, DType) and lb.is_integer, "bounds must be integers of one type")
    inits = [v.type for v in op.operands[3:]]
    expect(op, [r.type for r in op.results] == inits, "results must match the initial values")
    body = op.regions[0].block
    expect(op, [a.type for a in body.args] == [lb] + inits, "body arguments must be (iv, carried...)")
    term = body.terminator
    expect(op, term is not None and term.name == "scf.yield", "body must end in scf.yield")
    expect(op, _yield_types(body) == inits, f"scf.yield types {_yield_types(body)} must be {inits}")


@register_op("scf.if", num_regions=2, pure=False)
def _verify_if(op: Operation) -> None:
    expect_counts(op, 1, len(op.results))
    expect(op, op.operand(0).type == i1, "condition must be a scalar i1")
    want = [r.type for r in op.results]
    for region in op.regions:
        block = region.block
        term = block.terminator
        expect(op, term is not None and term.name == "scf.yield", "each branch must end in scf.yield")
        expect(op, _yield_types(block) == want, f"branch yields {_yield_types(block)}, expected {want}")


@register_op("scf.while", num_regions=2, pure=False)
def _verify_while(op: Operation) -> None:
    before, after = op.regions[0].block, op.regions[1].block
    inits = [v.type for v in op.operands]
    expect(op, [a.type for a in before.args] == inits, "before-region arguments must match the initial values")
    cond = before.terminator
    expect(op, cond is not None and cond.name == "scf.condition", "before-region must end in scf.condition")
    expect(op, cond.num_operands >= 1 and cond.operand(0).type == i1, "scf.condition needs an i1 first")
    forwarded = [v.type for v in cond.operands[1:]]
    expect(op, [r.type for r in op.results] == forwarded, "results must match the forwarded values")
    expect(op, [a.type for a in after.args] == forwarded, "after-region arguments must match forwarded values")
    expect(op, after.terminator is not None and after.terminator.name == "scf.yield", "after-region ends in scf.yield")
    expect(op, _yield_types(after) == inits, "after-region must yield the loop's value types")


register_op("scf.yield", terminator=True, pure=False)(None)
register_op("scf.condition", terminator=True, pure=False)(None)


@register_op("tt.func", num_regions=1, pure=False)
def _verify_func(op: Operation) -> None:
    expect(op, isinstance(op.attrs.get("sym_name"), str), "missing sym_name")
    term = op.regions[0].block.terminator
    expect(op, term is not None and term.name == "tt.return", "function must end in tt.return")


register_op("tt.return", terminator=True, pure=False)(None)

__all__ = ["OP_DEFS", "OpDef", "VerificationError", "register_op", "op_def", "is_pure", "expect",
           "expect_counts", "CMP_PREDICATES", "ATOMIC_KINDS", "ROUNDING_MODES", "TRITON_ROUNDINGS", "ROUNDED_OPS",
           "APPROX_FNS", "rounding_mode", "cast_rounding", "i32"]
