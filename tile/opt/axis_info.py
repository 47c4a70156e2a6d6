"""Axis info: per-dimension facts about integer and pointer values, for coalescing and vectorization.

An analysis, not a pass: `AxisInfoAnalysis(func)[value]` gives, for each dimension d of the
value (a scalar counts as one dimension of size 1), three powers of two, as Triton's AxisInfo:

  contiguity[d]   every aligned chunk of that many elements along d is x, x+1, x+2, ...
                  (pointers: consecutive elements of the pointee)
  divisibility[d] the first element of every such contiguous chunk is a multiple of it
                  (so with contiguity 1, every element is); integers in their own units,
                  pointers in BYTES, as Triton (16 = a 16-byte aligned address)
  constancy[d]    every aligned chunk of that many elements along d holds one value

Facts come from the func attr `arg_divisibility` (one entry per parameter: 16 means an
integer divisible by 16 or a 16-byte aligned pointer), program ids, arange, constants,
tt.hint (multiple_of, max_contiguous, max_constancy: per-dimension promises of the user,
taken as they are, so multiple_of counts bytes on pointers as in Triton) and tt.assume of a
divisibility (`tl.assume(x % 16 == 0)`, `x & 15 == 0`, and `&` of such conditions: every
element of x is a multiple of the largest power of two dividing 16; other conditions, such
as `n > 0`, tell this analysis nothing). Loop-carried values
meet their initial and yielded facts until a fixpoint; a loop's induction variable is a
multiple of what divides both the lower bound and the step.

    %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>       contiguity [128], divisibility [2^30]
    %base = arith.mul %pid, %c128 : i32                               divisibility [128]
    %idx  = arith.add %sb, %offs : tensor<128xi32>   (%sb = splat %base)   contiguity [128], divisibility [128]
    %ptrs = tt.addptr %sp, %idx : tensor<128xptr<f32>> (%sp = splat of a 16-aligned arg)
                                                     contiguity [128], divisibility [16] (bytes)
    %mask = arith.cmp %idx, %sn {predicate = "lt"}   (%sn = splat of an arg divisible by 16)
                                                     constancy [16]

Like Triton, integer division, remainder and shifts assume non-negative operands, and
wrap-around is ignored (offsets into tensors do not overflow).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..ir import Operation, PointerType, TensorType, Type, Value
from ..ir.types import DType, element_type

MAX_DIVISIBILITY = 1 << 30


def pow2_divisor(n: int) -> int:
    """The largest power of two dividing `n` (MAX_DIVISIBILITY for 0)."""
    n = int(n)
    return MAX_DIVISIBILITY if n == 0 else min(n & -n, MAX_DIVISIBILITY)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: Optional[int] = None  # the value of every element, when known

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def __str__(self) -> str:
        fmt = lambda t: "[" + ", ".join(map(str, t)) + "]"  # noqa: E731
        text = (f"contiguity = {fmt(self.contiguity)}, divisibility = {fmt(self.divisibility)}, "
                f"constancy = {fmt(self.constancy)}")
        return text + (f", constant = {self.constant}" if self.constant is not None else "")


def _shape(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, TensorType) else (1,)


def _unit(t: Type) -> int:
    """Bytes per element step of a pointer value; 1 for integers."""
    el = element_type(t)
    if isinstance(el, PointerType):
        return el.pointee.bytes if isinstance(el.pointee, DType) else 8
    return 1


def unknown(t: Type) -> AxisInfo:
    ones = (1,) * len(_shape(t))
    return AxisInfo(ones, ones, ones)


def constant_info(t: Type, value: Optional[int]) -> AxisInfo:
    shape = _shape(t)
    ones = (1,) * len(shape)
    div = pow2_divisor(value) if value is not None else 1
    return AxisInfo(ones, (div,) * len(shape), shape if isinstance(t, TensorType) else ones, value)


def restrict(div: int, contig: int, g: int, unit: int = 1) -> int:
    """Divisibility of the first element of every aligned g-chunk, for a value with `contig`
    and `div` along a dimension: inside a contiguous run the g-chunks start every g elements."""
    return div if contig <= g else min(div, g * unit)


def elem_div(info: AxisInfo, d: int, unit: int = 1) -> int:
    """What divides every element along d."""
    return restrict(info.divisibility[d], info.contiguity[d], 1, unit)


def every_elem_div(info: AxisInfo) -> int:
    """What divides every element of the value (any dimension with contiguity 1 tells)."""
    return max(elem_div(info, d) for d in range(info.rank))


def join(a: AxisInfo, b: AxisInfo, unit: int = 1) -> AxisInfo:
    """Facts that hold for a value that is either `a` or `b`."""
    contig, div = [], []
    for d in range(a.rank):
        g = min(a.contiguity[d], b.contiguity[d])
        contig.append(g)
        div.append(min(restrict(a.divisibility[d], a.contiguity[d], g, unit),
                       restrict(b.divisibility[d], b.contiguity[d], g, unit)))
    const = tuple(map(min, a.constancy, b.constancy))
    return AxisInfo(tuple(contig), tuple(div), const, a.constant if a.constant == b.constant else None)


def _is_power_of_two(n: Optional[int]) -> bool:
    return n is not None and n > 0 and n & (n - 1) == 0


def _fold(name: str, a: int, b: int, predicate: Optional[str] = None) -> Optional[int]:
    """Evaluate an integer op on constants (C semantics for division and remainder)."""
    if name in ("arith.div", "arith.rem") and b == 0:
        return None
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1) if b else 0
    ops: dict[str, Callable[[], int]] = {
        "arith.add": lambda: a + b, "arith.sub": lambda: a - b, "arith.mul": lambda: a * b,
        "arith.div": lambda: q, "arith.rem": lambda: a - q * b, "arith.and": lambda: a & b,
        "arith.or": lambda: a | b, "arith.xor": lambda: a ^ b,
        "arith.shl": lambda: a << b if 0 <= b < 64 else 0, "arith.shr": lambda: a >> b if 0 <= b < 64 else 0,
    }
    if name == "arith.cmp":
        return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[predicate])
    return ops[name]() if name in ops else None


def _constant_int(v: Value) -> Optional[int]:
    """The integer every element of `v` holds, if `v` is a constant (or a splat/broadcast of one)."""
    op = v.owner_op
    while op is not None and op.name in ("tt.splat", "tt.broadcast"):
        op = op.operand(0).owner_op
    if op is None or op.name != "arith.constant" or isinstance(op.attrs["value"], float):
        return None
    return int(op.attrs["value"])


def assumed_divisors(cond: Value, out: dict[Value, int]) -> None:
    """Record in `out` the divisibility facts a condition assumed true states (see the docstring)."""
    op = cond.owner_op
    if op is None:
        return
    if op.name == "arith.and":
        for v in op.operands:
            assumed_divisors(v, out)
        return
    if op.name != "arith.cmp" or op.attrs.get("predicate") != "eq":
        return
    a, b = op.operands
    residue = a if _constant_int(b) == 0 else b if _constant_int(a) == 0 else None
    inner = residue.owner_op if residue is not None else None
    if inner is None or inner.name not in ("arith.rem", "arith.and"):
        return
    x, m = inner.operands
    k = _constant_int(m)
    if k is None or k == 0:
        return
    if inner.name == "arith.rem":
        divisor = pow2_divisor(k)
    elif k > 0 and _is_power_of_two(k + 1):  # x & (2**n - 1) == 0
        divisor = k + 1
    else:
        return
    out[x] = max(out.get(x, 1), divisor)


class AxisInfoAnalysis:
    """Computes the AxisInfo of every value of a tt.func (`analysis[value]`)."""

    def __init__(self, func: Operation):
        self.infos: dict[Value, AxisInfo] = {}
        self.assumed: dict[Value, int] = {}
        for op in func.walk():
            if op.name == "tt.assume":
                assumed_divisors(op.operand(0), self.assumed)
        block = func.regions[0].block
        divs = list(func.attrs.get("arg_divisibility", []))
        for i, arg in enumerate(block.args):
            div = divs[i] if i < len(divs) else 1
            ones = (1,) * len(_shape(arg.type))
            self.infos[arg] = AxisInfo(ones, (max(1, div),) * len(ones), ones)
        self._block(block)

    def __getitem__(self, v: Value) -> AxisInfo:
        info = self.infos.get(v)
        info = info if info is not None else unknown(v.type)
        divisor = self.assumed.get(v)
        if divisor is None:
            return info
        return AxisInfo(info.contiguity, tuple(max(d, divisor) for d in info.divisibility), info.constancy,
                        info.constant)

    # ------------------------------------------------------------------------ walking
    def _block(self, block) -> None:
        for op in block.ops:
            if op.name == "scf.for":
                self._for(op)
            elif op.name == "scf.while":
                self._while(op)
            elif op.name == "scf.if":
                for region in op.regions:
                    self._block(region.block)
                yields = [region.block.terminator.operands for region in op.regions]
                for i, r in enumerate(op.results):
                    self.infos[r] = join(self[yields[0][i]], self[yields[1][i]], _unit(r.type))
            elif not op.regions:
                for r, info in zip(op.results, self._transfer(op)):
                    self.infos[r] = info

    def _fixpoint(self, args: Sequence[Value], inits: Sequence[AxisInfo], body: Callable[[], list[Value]]) -> None:
        """Iterate `body` until the facts of the loop-carried `args` are stable."""
        current = list(inits)
        while True:
            for a, info in zip(args, current):
                self.infos[a] = info
            yielded = body()
            merged = [join(c, self[y], _unit(a.type)) for a, c, y in zip(args, current, yielded)]
            if merged == current:
                return
            current = merged

    def _for(self, op: Operation) -> None:
        body = op.regions[0].block
        lb, _, step = (self[v] for v in op.operands[:3])
        iv_div = min(every_elem_div(lb), every_elem_div(step))
        self.infos[body.args[0]] = AxisInfo((1,), (iv_div,), (1,))

        def run() -> list[Value]:
            self._block(body)
            return list(body.terminator.operands)

        self._fixpoint(body.args[1:], [self[v] for v in op.operands[3:]], run)
        for r, a in zip(op.results, body.args[1:]):
            self.infos[r] = self[a]

    def _while(self, op: Operation) -> None:
        before, after = op.regions[0].block, op.regions[1].block

        def run() -> list[Value]:
            self._block(before)
            cond = before.terminator
            for a, v in zip(after.args, cond.operands[1:]):
                self.infos[a] = self[v]
            self._block(after)
            return list(after.terminator.operands)

        self._fixpoint(before.args, [self[v] for v in op.operands], run)
        for r, v in zip(op.results, before.terminator.operands[1:]):
            self.infos[r] = self[v]

    # ------------------------------------------------------------------------ transfer
    def _transfer(self, op: Operation) -> list[AxisInfo]:
        name = op.name
        if len(op.results) != 1:
            return [unknown(r.type) for r in op.results]
        t = op.result.type
        ins = [self[v] for v in op.operands]
        if name == "arith.constant":
            value = op.attrs["value"]
            return [constant_info(t, int(value) if isinstance(value, (int, bool)) else None)]
        if name == "tt.arange":
            return [AxisInfo((t.shape[0],), (pow2_divisor(op.attrs["start"]),), (1,))]
        if name == "tt.splat":
            s = ins[0]
            return [AxisInfo((1,) * t.rank, (every_elem_div(s),) * t.rank, t.shape, s.constant)]
        if name == "tt.broadcast":
            src = op.operand(0).type.shape
            a = ins[0]
            const = tuple(n if s == 1 else k for s, n, k in zip(src, t.shape, a.constancy))
            return [AxisInfo(a.contiguity, a.divisibility, const, a.constant)]
        if name == "tt.expand_dims":
            a, axis = ins[0], op.attrs["axis"]
            ins_ = lambda tup, v: tup[:axis] + (v,) + tup[axis:]  # noqa: E731
            return [AxisInfo(ins_(a.contiguity, 1), ins_(a.divisibility, every_elem_div(a)),
                             ins_(a.constancy, 1), a.constant)]
        if name == "tt.trans":
            a, order = ins[0], op.attrs["order"]
            perm = lambda tup: tuple(tup[o] for o in order)  # noqa: E731
            return [AxisInfo(perm(a.contiguity), perm(a.divisibility), perm(a.constancy), a.constant)]
        if name in ("tt.reshape", "gpu.convert_layout"):
            a = ins[0]
            if name == "gpu.convert_layout":
                return [a]
            return [constant_info(t, a.constant) if a.constant is not None else unknown(t)]
        if name == "tt.hint":
            return [self._hint(op, ins[0])]
        if name in ("arith.add", "arith.sub", "tt.addptr"):
            return [self._add_sub(op, ins[0], ins[1])]
        if name == "arith.mul":
            return [self._mul(ins[0], ins[1], t)]
        if name in ("arith.div", "arith.shr"):
            return [self._div(op, ins[0], ins[1], t)]
        if name in ("arith.rem", "arith.and"):
            return [self._rem(op, ins[0], ins[1], t)]
        if name in ("arith.or", "arith.xor", "arith.shl"):
            return [self._bits(op, ins[0], ins[1], t)]
        if name == "arith.cmp":
            return [self._cmp(op, ins[0], ins[1], t)]
        if name == "arith.select":
            return [self._select(op, ins, t)]
        if name == "arith.cast":
            return [self._cast(op, ins[0], t)]
        if name in ("tt.ptr_to_int", "tt.int_to_ptr"):
            a = ins[0]
            same_steps = _unit(op.operand(0).type) == _unit(t)  # one step is one byte on both sides
            contig = a.contiguity if same_steps else (1,) * a.rank
            div = a.divisibility if same_steps else tuple(
                restrict(dv, c, 1, _unit(op.operand(0).type)) for dv, c in zip(a.divisibility, a.contiguity))
            return [AxisInfo(contig, div, a.constancy, a.constant)]
        rank = len(_shape(t))
        if name.startswith(("arith.", "math.")) and all(i.rank == rank for i in ins):
            const = tuple(min([i.constancy[d] for i in ins], default=1) for d in range(rank))
            return [AxisInfo((1,) * rank, (1,) * rank, const)]
        return [unknown(t)]

    def _hint(self, op: Operation, a: AxisInfo) -> AxisInfo:
        def pick(key: str, current: tuple[int, ...]) -> tuple[int, ...]:
            values = op.attrs.get(key) or []
            return tuple(int(v) for v in values) if len(values) == len(current) else current
        return AxisInfo(pick("max_contiguous", a.contiguity), pick("multiple_of", a.divisibility),
                        pick("max_constancy", a.constancy), a.constant)

    def _add_sub(self, op: Operation, a: AxisInfo, b: AxisInfo) -> AxisInfo:
        sub = op.name == "arith.sub"
        unit = _unit(op.result.type)
        scale = unit if op.name == "tt.addptr" else 1  # offsets count elements, pointers bytes
        contig, div = [], []
        for d in range(a.rank):
            ca, cb, ka, kb = a.contiguity[d], b.contiguity[d], a.constancy[d], b.constancy[d]
            g = min(ca, kb) if sub else max(min(ca, kb), min(ka, cb))
            contig.append(g)
            div.append(min(restrict(a.divisibility[d], ca, g, unit), restrict(b.divisibility[d], cb, g) * scale))
        const = tuple(map(min, a.constancy, b.constancy))
        value = None
        if a.constant is not None and b.constant is not None:
            value = a.constant + b.constant * scale if op.name == "tt.addptr" else \
                _fold(op.name, a.constant, b.constant)
        if value is not None:
            div = [pow2_divisor(value)] * a.rank
        return AxisInfo(tuple(contig), tuple(min(x, MAX_DIVISIBILITY) for x in div), const, value)

    def _mul(self, a: AxisInfo, b: AxisInfo, t: Type) -> AxisInfo:
        if a.constant is not None and b.constant is not None:
            return constant_info(t, a.constant * b.constant)
        if 0 in (a.constant, b.constant):
            return constant_info(t, 0)
        contig, div = [], []
        for d in range(a.rank):
            g = a.contiguity[d] if b.constant == 1 else b.contiguity[d] if a.constant == 1 else 1
            contig.append(g)
            da = restrict(a.divisibility[d], a.contiguity[d], g)
            db = restrict(b.divisibility[d], b.contiguity[d], g)
            div.append(min(da * db, MAX_DIVISIBILITY))
        return AxisInfo(tuple(contig), tuple(div), tuple(map(min, a.constancy, b.constancy)))

    def _div(self, op: Operation, a: AxisInfo, b: AxisInfo, t: Type) -> AxisInfo:
        """a // b, and a >> b as a // 2**b."""
        shr = op.name == "arith.shr"
        if a.constant is not None and b.constant is not None:
            return constant_info(t, _fold(op.name, a.constant, b.constant))
        if b.constant == (0 if shr else 1):
            return a
        divisor = b.constant
        if shr:
            divisor = 1 << b.constant if b.constant is not None and 0 <= b.constant < 31 else None
        const, div = [], []
        for d in range(a.rank):
            k = min(a.constancy[d], b.constancy[d])
            # an aligned run m, m+1, .., m+g-1 (g | m) divided by a multiple of g is one value
            if divisor is not None:
                k = max(k, min(a.contiguity[d], a.divisibility[d], pow2_divisor(divisor)))
            elif not shr:
                k = max(k, min(a.contiguity[d], a.divisibility[d], elem_div(b, d), b.constancy[d]))
            const.append(k)
            ea = elem_div(a, d)
            div.append(ea // divisor if _is_power_of_two(divisor) and divisor <= ea else 1)
        return AxisInfo((1,) * a.rank, tuple(div), tuple(const))

    def _rem(self, op: Operation, a: AxisInfo, b: AxisInfo, t: Type) -> AxisInfo:
        """a % b, and a & b (a & (2**k - 1) is a % 2**k)."""
        if a.constant is not None and b.constant is not None:
            return constant_info(t, _fold(op.name, a.constant, b.constant))
        modulus: Optional[int] = None
        if op.name == "arith.rem":
            modulus = b.constant
        elif b.constant is not None and b.constant >= 0 and _is_power_of_two(b.constant + 1):
            modulus = b.constant + 1
        contig, div = [], []
        for d in range(a.rank):
            g = 1
            if modulus is not None and modulus > 0:
                g = min(a.contiguity[d], a.divisibility[d], pow2_divisor(modulus))
            elif op.name == "arith.rem" and b.constancy[d] > 1:
                g = min(a.contiguity[d], a.divisibility[d], elem_div(b, d), b.constancy[d])
            contig.append(g)
            ra = restrict(a.divisibility[d], a.contiguity[d], g)
            rb = pow2_divisor(modulus) if modulus is not None else elem_div(b, d)
            if op.name == "arith.and" and modulus is None:
                div.append(max(elem_div(a, d), elem_div(b, d)))
            else:
                div.append(min(ra, rb))
        return AxisInfo(tuple(contig), tuple(div), tuple(map(min, a.constancy, b.constancy)))

    def _bits(self, op: Operation, a: AxisInfo, b: AxisInfo, t: Type) -> AxisInfo:
        """a | b, a ^ b, a << b."""
        if a.constant is not None and b.constant is not None:
            return constant_info(t, _fold(op.name, a.constant, b.constant))
        if op.name == "arith.shl" and b.constant == 0:
            return a
        div = []
        for d in range(a.rank):
            if op.name == "arith.shl":
                shift = b.constant if b.constant is not None and 0 <= b.constant < 31 else 0
                div.append(min(elem_div(a, d) << shift, MAX_DIVISIBILITY))
            else:
                div.append(min(elem_div(a, d), elem_div(b, d)))
        return AxisInfo((1,) * a.rank, tuple(div), tuple(map(min, a.constancy, b.constancy)))

    def _cmp(self, op: Operation, a: AxisInfo, b: AxisInfo, t: Type) -> AxisInfo:
        pred = op.attrs["predicate"]
        if a.constant is not None and b.constant is not None:
            return constant_info(t, _fold("arith.cmp", a.constant, b.constant, pred))
        const = []
        for d in range(a.rank):
            k = min(a.constancy[d], b.constancy[d])
            # an aligned run m, m+1, .., m+g-1 (g | m) against one n (g | n) is all on one side of n
            if pred in ("lt", "ge"):
                k = max(k, min(a.contiguity[d], a.divisibility[d], elem_div(b, d), b.constancy[d]))
            elif pred in ("gt", "le"):
                k = max(k, min(b.contiguity[d], b.divisibility[d], elem_div(a, d), a.constancy[d]))
            const.append(k)
        ones = (1,) * a.rank
        return AxisInfo(ones, ones, tuple(const))

    def _select(self, op: Operation, ins: list[AxisInfo], t: Type) -> AxisInfo:
        c, a, b = ins
        if c.constant is not None:
            return a if c.constant else b
        unit = _unit(t)
        if not isinstance(op.operand(0).type, TensorType):
            return join(a, b, unit)
        contig, div = [], []
        for d in range(a.rank):
            g = min(a.contiguity[d], b.contiguity[d], c.constancy[d])
            contig.append(g)
            div.append(min(restrict(a.divisibility[d], a.contiguity[d], g, unit),
                           restrict(b.divisibility[d], b.contiguity[d], g, unit)))
        const = tuple(min(x, y, z) for x, y, z in zip(a.constancy, b.constancy, c.constancy))
        return AxisInfo(tuple(contig), tuple(div), const)

    def _cast(self, op: Operation, a: AxisInfo, t: Type) -> AxisInfo:
        src, dst = element_type(op.operand(0).type), element_type(t)
        if src.is_integer and dst.is_integer:
            cap = 1 << min(dst.bits, 30)
            value = a.constant if a.constant is None or dst.bits >= src.bits else None
            return AxisInfo(a.contiguity, tuple(min(x, cap) for x in a.divisibility), a.constancy, value)
        ones = (1,) * a.rank
        return AxisInfo(ones, ones, a.constancy)


def format_axis_info(func: Operation, analysis: Optional[AxisInfoAnalysis] = None) -> str:
    """One line per named integer or pointer value: `%name: contiguity = [...], ...` (for tests and dumps)."""
    analysis = analysis or AxisInfoAnalysis(func)
    lines = []
    for op in func.walk():
        values = list(op.results) + [a for region in op.regions for block in region.blocks for a in block.args]
        for v in values:
            el = element_type(v.type)
            if v.name_hint and (isinstance(el, PointerType) or (isinstance(el, DType) and el.is_integer)):
                lines.append(f"%{v.name_hint}: {analysis[v]}")
    return "\n".join(lines)


__all__ = ["AxisInfo", "AxisInfoAnalysis", "MAX_DIVISIBILITY", "pow2_divisor", "restrict", "join", "unknown",
           "format_axis_info", "assumed_divisors"]
