"""The lowering context shared by every op family: registers of tensors, thread coordinates,
constant folding of address arithmetic, and the simt builder.

A gpu-IR tensor becomes, in each thread, one simt value per register of its LinearLayout
(register-index order); a scalar becomes one value. The element held in register r of thread
tid is R[r] ^ T(tid), with R tabulated here at compile time and T computed once per function
from %tid.x (lane = tid % warp size, warp = tid / warp size; the target's warp size: 32, or 64
on AMD CDNA, whose warp is a wave):

    tt.arange {start = 0, end = 512} : tensor<512xi32, #blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>>
  becomes, per thread,
    %tid = simt.tid : i32
    %t = arith.shl %tid, %c2 : i32                // T: 4 * tid
    %r1 = arith.add %t, %c1 : i32                 // registers 1..3 are T + 1, T + 2, T + 3
    ...

Integer values that are a base plus a constant are remembered as such (`split`), so that
`x_ptr + offs` for the registers of one thread shares one base address and the loads use
immediate offsets: `ld.global.v4.f32 {...}, [%rd5+16]`. Pure ops are created through a
scoped memo (CSE), and ops that depend only on parameters, constants and %tid are placed at
the top of the function (thread-invariant code is computed once). Two exceptions keep
registers free in long loops: a thread-invariant pointer (a parameter, or one computed from
parameters and program ids, as `K += head_offset`) plus a 32-bit index is recomputed in each
region that uses it (the index stays live, not 64 bits of pointer per register; Triton's
tutorial-06 backward at D = 64 kept ~100 such pointers of its later loads and stores live
through its first loops, and spilled 736 bytes instead of 40), and after lowering,
predicates used in another block or after a loop are recomputed next to their users
(`sink_predicates`: there are only 7 predicate registers, ptxas spills the rest); the loads of
the function's top block then move up past that placed code (`issue_loads_early`).

Two more help ptxas see what is the same in every lane of a warp, so that a pipelined loop's
state stays in uniform registers (PTX targets): a loop bound computed from memory is replaced,
where it is computed, by lane 0's copy (`lane_zero_copies`, filled by
lower_control.loaded_loop_bounds), and in kernels that copy with TMA each block that uses a
shared-memory address gets its own copy of it (`sink_shared_addresses`).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from ..ir import simt_ops  # noqa: F401  (registers the simt ops)
from ..ir.core import Block, Operation, Value
from ..ir.layouts import DistributedLayout, LinearLayout
from ..ir.types import DType, PointerType, TensorType, Type, element_type, i1, i32, i64
from .target import target_facts


class LoweringError(Exception):
    """A gpu-IR op the lowering cannot handle; the message names the op and its source line."""

    def __init__(self, op: Operation, message: str):
        where = f" (from {op.loc.file}:{op.loc.line})" if op.loc is not None else ""
        super().__init__(f"lowering {op.name}: {message}{where}")
        self.op = op


# ------------------------------------------------------------------------------ layouts


@dataclass(frozen=True)
class LayoutInfo:
    """Compile-time tables of one tensor type's LinearLayout."""

    ll: LinearLayout
    reg_coords: tuple[tuple[int, ...], ...]   # element of register r in thread 0
    tid_bases: tuple[tuple[int, ...], ...]    # basis of each %tid bit: lane bits, then warp bits

    @property
    def num_regs(self) -> int:
        return len(self.reg_coords)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ll.shape

    @property
    def replicated_tid_mask(self) -> int:
        """%tid bits whose basis is zero: threads differing only there hold the same elements."""
        return sum(1 << b for b, basis in enumerate(self.tid_bases) if not any(basis))

    def canonical_regs(self) -> list[int]:
        """For each register, the first register holding the same element."""
        first: dict[tuple[int, ...], int] = {}
        return [first.setdefault(c, r) for r, c in enumerate(self.reg_coords)]

    def thread_span(self, dim: int) -> int:
        """OR of the thread bases along `dim`: the bits T(tid) may set there."""
        return reduce(lambda acc, b: acc | b[dim], self.tid_bases, 0)

    def coords(self, num_threads: int) -> np.ndarray:
        """Element coordinate of every (thread, register): int64 [num_threads, registers, rank]."""
        rank = self.ll.rank
        regs = np.array(self.reg_coords, dtype=np.int64).reshape(self.num_regs, rank)
        tid = np.zeros((num_threads, rank), dtype=np.int64)
        for b, basis in enumerate(self.tid_bases[:num_threads.bit_length() - 1]):
            on = (np.arange(num_threads) >> b & 1).astype(bool)
            tid[on] ^= np.array(basis, dtype=np.int64)
        return tid[:, None, :] ^ regs[None, :, :]


def xor_all(coords: Sequence[Sequence[int]], rank: int) -> tuple[int, ...]:
    out = [0] * rank
    for c in coords:
        out = [a ^ b for a, b in zip(out, c)]
    return tuple(out)


def linear_info(ll: LinearLayout, lane_bits: int) -> LayoutInfo:
    """The register and %tid tables of `ll` for warps of 2**lane_bits threads."""
    rank = ll.rank
    regs = []
    for r in range(ll.num_registers):
        regs.append(xor_all([b for i, b in enumerate(ll.register_bases) if r >> i & 1], rank))
    lanes = list(ll.lane_bases) + [(0,) * rank] * (lane_bits - len(ll.lane_bases))
    return LayoutInfo(ll, tuple(regs), tuple(lanes) + tuple(ll.warp_bases))


# ------------------------------------------------------------------------------ lowering context

LowerFn = Callable[["Lowering", Operation], None]
LOWERINGS: dict[str, LowerFn] = {}


def lowers(*names: str) -> Callable[[LowerFn], LowerFn]:
    """Register the decorated function as the lowering of the gpu ops `names`."""

    def wrap(fn: LowerFn) -> LowerFn:
        for n in names:
            LOWERINGS[n] = fn
        return fn

    return wrap


_INT_FOLDS: dict[str, Callable[..., int]] = {
    "arith.add": lambda a, b, n: a + b, "arith.sub": lambda a, b, n: a - b, "arith.mul": lambda a, b, n: a * b,
    "arith.and": lambda a, b, n: a & b, "arith.or": lambda a, b, n: a | b, "arith.xor": lambda a, b, n: a ^ b,
    "arith.shl": lambda a, b, n: a << b if 0 <= b < n else 0, "arith.max": lambda a, b, n: max(a, b),
    "arith.min": lambda a, b, n: min(a, b), "arith.not": lambda a, n: ~a, "arith.neg": lambda a, n: -a,
}
_HOISTABLE_ROOTS = ("arith.constant", "simt.tid", "simt.ctaid", "simt.nctaid", "simt.smem_addr")


def _attr_key(value: Any) -> Any:
    """A hashable key of an attribute value; floats by repr, so that -0.0 and 0.0 stay apart."""
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    return ("float", repr(value)) if isinstance(value, float) else (type(value).__name__, value)


class Lowering:
    """State of one gpu func's lowering: the simt function being built and each gpu value's registers."""

    def __init__(self, func: Operation, entry: Block):
        self.func = func
        self.num_warps: int = func.attrs["num_warps"]
        self.target: str = func.attrs.get("target", "sm_90a")
        self.facts = target_facts(self.target)
        self.warp_size = self.facts.warp_size
        if func.attrs.get("threads_per_warp", self.warp_size) != self.warp_size:
            raise LoweringError(func, f"{self.target} needs {self.warp_size} threads per warp")
        self.sm = self.facts.arch
        self.shared_bytes: int = func.attrs.get("shared_bytes", 0)
        self.entry = entry
        self.block = entry
        self.prologue_end = 0
        self.env: dict[Value, list[Value]] = {}
        self.memo: list[dict[tuple, Value]] = [{}]
        self.hoisted: set[Value] = set(entry.args)
        self.affine: dict[Value, tuple[Optional[Value], int]] = {}
        self.infos: dict[tuple[Any, tuple[int, ...]], LayoutInfo] = {}
        self.loc = None
        self.smem_pending = False     # shared memory accessed since the last barrier
        self.scratch_pending = False  # ... by this lowering's own scratch buffers
        self.smem_align: dict[Value, int] = {}  # known alignment (bytes, <= 16) of shared addresses
        self.deferred: dict[Value, Any] = {}     # dot operands whose shared loads wait for their tt.dot
        self.lane_zero_copies: set[Value] = set()  # gpu scalars given lane 0's register (see lower_ops)

    # gpu values ------------------------------------------------------------------------
    def get(self, v: Value) -> list[Value]:
        try:
            return self.env[v]
        except KeyError:
            raise LoweringError(v.owner_op or self.func, "operand was not lowered") from None

    def set(self, v: Value, regs: list[Value]) -> None:
        self.env[v] = regs

    def info(self, t: Type) -> LayoutInfo:
        """Register tables of a tensor type (a scalar is one register held by every thread)."""
        if not isinstance(t, TensorType):
            return LayoutInfo(LinearLayout((), (), (), ()), ((),), ((),) * (self.lane_bits + self.warp_bits))
        layout = t.layout
        if not isinstance(layout, DistributedLayout):
            raise LoweringError(self.func, f"tensor {t} has no distributed layout")
        key = (layout, t.shape)
        if key not in self.infos:
            self.infos[key] = linear_info(layout.to_linear(t.shape), self.lane_bits)
        return self.infos[key]

    def reg_types(self, t: Type) -> list[Type]:
        """The simt type of each register of a value of type `t`."""
        return [element_type(t)] * self.info(t).num_regs

    @property
    def warp_bits(self) -> int:
        return self.num_warps.bit_length() - 1

    @property
    def lane_bits(self) -> int:
        return self.warp_size.bit_length() - 1

    @property
    def threads(self) -> int:
        return self.warp_size * self.num_warps

    # creating simt ops -------------------------------------------------------------------
    def _insert(self, op: Operation, hoist: bool) -> None:
        op.loc = self.loc
        if hoist:
            self.entry.insert(self.prologue_end, op)
            self.prologue_end += 1
            self.hoisted.update(op.results)
        elif self.block is self.entry:
            self.entry.append(op)
        else:
            self.block.append(op)

    def const(self, value: Any, t: Type) -> Value:
        if isinstance(t, DType):
            if t.is_bool:
                value = bool(value)
            elif t.is_integer:
                value = wrap(int(value), t)
            else:
                value = float(value)
        key = ("arith.constant", str(t), _attr_key(value))
        if key not in self.memo[0]:
            op = Operation("arith.constant", [], [t], {"value": value})
            self._insert(op, hoist=True)
            self.memo[0][key] = op.result
        return self.memo[0][key]

    def ops(self, name: str, operands: Sequence[Value], types: Sequence[Type], **attrs: Any) -> list[Value]:
        """A pure op (memoized: the same op on the same operands is created once; integer ops on
        constants are folded)."""
        if len(types) == 1:
            folded = self._fold(name, operands, types[0])
            if folded is not None:
                return [folded]
        key = (name, tuple(id(v) for v in operands), tuple(map(str, types)),
               tuple(sorted((k, _attr_key(v)) for k, v in attrs.items())))
        # a thread-invariant pointer plus a 32-bit index is recomputed in each region that uses it
        # (one IMAD.WIDE) rather than kept live as 64 bits across loops
        remat = name == "simt.addptr" and operands[0] in self.hoisted and operands[1].type.bits == 32 and \
            self.const_value(operands[1]) is None
        for scope in [self.memo[-1]] if remat else reversed(self.memo):
            if key in scope:
                return scope[key].owner_op.results
        hoist = not remat and (name in _HOISTABLE_ROOTS or (operands and all(v in self.hoisted for v in operands)))
        op = Operation(name, operands, types, attrs)
        self._insert(op, hoist)
        (self.memo[0] if hoist else self.memo[-1])[key] = op.results[0]
        return op.results

    def _fold(self, name: str, operands: Sequence[Value], t: Type) -> Optional[Value]:
        if not (isinstance(t, DType) and t.is_integer and not t.is_bool) or name not in _INT_FOLDS:
            return None
        consts = [self.const_value(v) for v in operands]
        if all(isinstance(c, int) for c in consts):
            return self.const(_INT_FOLDS[name](*[c & ((1 << t.bits) - 1) if t.is_unsigned else c for c in consts],
                                               t.bits), t)
        if len(operands) == 2 and isinstance(consts[1], int):
            c = wrap(consts[1], t)
            if (name in ("arith.or", "arith.xor", "arith.shl", "arith.shr", "arith.add", "arith.sub") and c == 0) or \
                    (name == "arith.and" and c == wrap(-1, t)) or (name == "arith.mul" and c == 1):
                return operands[0]
            if (name == "arith.and" or name == "arith.mul") and c == 0:
                return self.const(0, t)
        return None

    def op(self, name: str, operands: Sequence[Value], t: Type, **attrs: Any) -> Value:
        return self.ops(name, operands, [t], **attrs)[0]

    def pack(self, parts: Sequence[Value], t: Type) -> Value:
        """simt.pack of `parts` (lowest first); the word itself when they are its simt.unpack, in order."""
        src = parts[0].owner_op
        if src is not None and src.name == "simt.unpack" and list(src.results) == list(parts) and \
                src.operand(0).type == t:
            return src.operand(0)
        return self.op("simt.pack", parts, t)

    def effect(self, name: str, operands: Sequence[Value] = (), types: Sequence[Type] = (), **attrs: Any) -> Operation:
        """An op with side effects, at the current insertion point."""
        op = Operation(name, operands, types, attrs)
        self._insert(op, hoist=False)
        return op

    @contextmanager
    def at_block(self, block: Block) -> Iterator[None]:
        """Insert into `block` (a region of a structured op) with a fresh memo scope."""
        saved = self.block
        self.block = block
        self.memo.append({})
        try:
            yield
        finally:
            self.memo.pop()
            self.block = saved

    # constant folding of integer and address arithmetic ---------------------------------------
    def const_value(self, v: Value) -> Optional[Any]:
        op = v.owner_op
        return op.attrs["value"] if op is not None and op.name == "arith.constant" else None

    def split(self, v: Value) -> tuple[Optional[Value], int]:
        """`v` as base + constant (base None: a constant)."""
        if v in self.affine:
            return self.affine[v]
        c = self.const_value(v)
        if isinstance(c, int) and not isinstance(c, bool) and isinstance(v.type, DType):
            return None, c
        return v, 0

    def _rebuild(self, base: Optional[Value], off: int, t: Type) -> Value:
        if base is None:
            return self.const(off, t)
        if off == 0:
            return base
        if isinstance(t, PointerType):
            v = self.op("simt.addptr", [base, self.const(off, i64)], t, scale=1)
        else:
            off = wrap(off, t)
            v = self.op("arith.add", [base, self.const(off, t)], t)
        self.affine[v] = (base, off)
        return v

    def offset(self, base: Value, off: int) -> Value:
        """base + off (an integer of >= 32 bits, or a pointer plus bytes), remembered as such."""
        return self._rebuild(base, wrap(off, base.type), base.type)

    def add(self, a: Value, b: Value) -> Value:
        t = a.type
        if not (isinstance(t, DType) and t.is_integer and t.bits >= 32):
            return self.op("arith.add", [a, b], t)
        (ba, ca), (bb, cb) = self.split(a), self.split(b)
        base = ba if bb is None else bb if ba is None else self.op("arith.add", [ba, bb], t)
        return self._rebuild(base, wrap(ca + cb, t), t)

    def sub(self, a: Value, b: Value) -> Value:
        t = a.type
        (ba, ca), (bb, cb) = self.split(a), self.split(b)
        if not (isinstance(t, DType) and t.is_integer and t.bits >= 32) or (bb is not None and ba is None):
            return self.op("arith.sub", [a, b], t)
        base = ba if bb is None else self.op("arith.sub", [ba, bb], t)
        return self._rebuild(base, wrap(ca - cb, t), t)

    def mul(self, a: Value, b: Value) -> Value:
        t = a.type
        (ba, ca), (bb, cb) = self.split(a), self.split(b)
        if isinstance(t, DType) and t.is_integer and t.bits >= 32 and (ba is None or bb is None):
            if ba is None and bb is None:
                return self.const(ca * cb, t)
            base, off, k = (bb, cb, ca) if ba is None else (ba, ca, cb)
            if k == 0:
                return self.const(0, t)
            scaled = base if k == 1 else self.op("arith.mul", [base, self.const(k, t)], t)
            return self._rebuild(scaled, wrap(off * k, t), t)
        return self.op("arith.mul", [a, b], t)

    def addptr(self, p: Value, index: Value, scale: int) -> Value:
        """p + index * scale bytes, sharing one base per distinct runtime index. A 64-bit index
        is scaled once, by a shift shared by every pointer it moves: ptxas then adds on the
        integer pipe (IADD3), where a multiply-add (mad.lo.s64, or a mul.lo it fuses with the
        add) becomes IMAD.WIDE on the FMA pipe, which stalls beside wgmma (a 4096^3 fp16
        matmul under ncu on an H200: 263 us with IMAD.WIDE address updates, 233 with IADD3)."""
        bp, cp = self.split(p)
        bi, ci = self.split(index)
        if bi is not None and bi.type.bits == 64 and scale != 1 and scale & (scale - 1) == 0:
            scaled = self.op("arith.shl", [bi, self.const(scale.bit_length() - 1, bi.type)], bi.type)
            base = self.op("simt.addptr", [bp, scaled], p.type, scale=1)
        else:
            base = bp if bi is None else self.op("simt.addptr", [bp, bi], p.type, scale=scale)
        return self._rebuild(base, cp + ci * scale, p.type)

    # threads -------------------------------------------------------------------------------
    def tid(self) -> Value:
        return self.op("simt.tid", [], i32)

    def warp_tid(self) -> Value:
        """%tid of lane 0 of this thread's warp (shfl.sync.idx, once, in the prologue): the same
        in every lane, so ptxas keeps what is computed from it in uniform registers."""
        key = ("simt.shfl", "warp_tid")
        if key not in self.memo[0]:
            op = Operation("simt.shfl", [self.tid(), self.const(0, i32)], [i32], {"mode": "idx"})
            self._insert(op, hoist=True)
            self.memo[0][key] = op.result
        return self.memo[0][key]

    def from_tid(self, images: Sequence[int], warp_uniform: bool = False) -> Value:
        """XOR over the set bits b of %tid of images[b], as an i32 (bits above the CTA are zero).
        `warp_uniform`: the images of the lane bits are zero, and the value is computed from
        warp_tid, so that ptxas sees it is the same in every lane."""
        images = [int(x) for x in images[:self.lane_bits + self.warp_bits]]
        nonzero = [(b, x) for b, x in enumerate(images) if x]
        if not nonzero:
            return self.const(0, i32)
        if warp_uniform:
            assert all(b >= self.lane_bits for b, _ in nonzero), "a warp-uniform value depends on lane bits"
        tid = self.warp_tid() if warp_uniform else self.tid()
        single = all(x & (x - 1) == 0 for _, x in nonzero)
        disjoint = single and len({x for _, x in nonzero}) == len(nonzero)
        terms: list[Value] = []
        if disjoint:  # runs of tid bits that land on consecutive result bits: (tid >> b & mask) << k
            i = 0
            while i < len(nonzero):
                b0, x0 = nonzero[i]
                n = 1
                while i + n < len(nonzero) and nonzero[i + n] == (b0 + n, x0 << n):
                    n += 1
                k = x0.bit_length() - 1
                v = tid if b0 == 0 else self.op("arith.shr", [tid, self.const(b0, i32)], i32)
                if b0 + n < self.lane_bits + self.warp_bits:
                    v = self.op("arith.and", [v, self.const((1 << n) - 1, i32)], i32)
                if k:
                    v = self.op("arith.shl", [v, self.const(k, i32)], i32)
                terms.append(v)
                i += n
            return reduce(lambda a, b: self.op("arith.or", [a, b], i32), terms)
        for b, x in nonzero:  # general: -(tid >> b & 1) & x, XORed together
            bit = self.op("arith.and", [self.op("arith.shr", [tid, self.const(b, i32)], i32), self.const(1, i32)], i32)
            mask = self.op("arith.sub", [self.const(0, i32), bit], i32)
            terms.append(self.op("arith.and", [mask, self.const(x, i32)], i32))
        return reduce(lambda a, b: self.op("arith.xor", [a, b], i32), terms)

    def lane(self) -> Value:
        return self.op("arith.and", [self.tid(), self.const(self.warp_size - 1, i32)], i32)

    def warp(self) -> Value:
        return self.op("arith.shr", [self.tid(), self.const(self.lane_bits, i32)], i32)

    def and_pred(self, a: Value, b: Value) -> Value:
        """a & b for i1 values, folding constants."""
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None:
            return b if ca else a
        if cb is not None:
            return a if cb else b
        return self.op("arith.and", [a, b], i1)

    def owner_pred(self, info: LayoutInfo) -> Value:
        """True in the one thread of each group of replicas (replicated %tid bits all zero)."""
        return self.tid_bits_zero(info.replicated_tid_mask)

    def tid_bits_zero(self, mask: int) -> Value:
        """(%tid & mask) == 0."""
        mask &= (1 << (self.lane_bits + self.warp_bits)) - 1
        if not mask:
            return self.const(True, i1)
        bits = self.op("arith.and", [self.tid(), self.const(mask, i32)], i32)
        return self.op("arith.cmp", [bits, self.const(0, i32)], i1, predicate="eq")

    def coord_plus(self, t_value: Value, span: int, reg_const: int) -> Value:
        """T ^ R as T + R when their bits are disjoint, else a runtime xor."""
        if reg_const & span == 0:
            return self.add(t_value, self.const(reg_const, i32))
        return self.op("arith.xor", [t_value, self.const(reg_const, i32)], i32)

    def alloc_shared(self, nbytes: int) -> int:
        """Shared memory of the lowering's own, after the allocator's (grows the kernel's total)."""
        offset = (self.shared_bytes + 15) // 16 * 16
        self.shared_bytes = offset + nbytes
        return offset

    # lowering ops -----------------------------------------------------------------------------
    def lower_ops(self, ops: Sequence[Operation]) -> None:
        for op in ops:
            fn = LOWERINGS.get(op.name)
            if fn is None:
                raise LoweringError(op, "the PTX backend has no lowering for this op")
            saved, self.loc = self.loc, op.loc if op.loc is not None else self.loc
            fn(self, op)
            for r in op.results:
                if r in self.lane_zero_copies:
                    self.set(r, [self.effect("simt.shfl", [self.get(r)[0], self.const(0, i32)], [i32],
                                             mode="idx").result])
            self.loc = saved

    # barriers around shared memory ----------------------------------------------------------
    def barrier(self) -> None:
        self.effect("simt.barrier")
        self.smem_pending = self.scratch_pending = False

    def barrier_after_scratch(self) -> None:
        """A barrier if a reduce's or scan's scratch was used since the last one: a write into
        shared memory may share its bytes, and its readers must finish first."""
        if self.scratch_pending:
            self.barrier()


def wrap(value: int, t: Type) -> int:
    """`value` wrapped to the integer type `t` (pointers: 64 bits)."""
    bits = 64 if isinstance(t, PointerType) else t.bits
    if bits == 1:
        return value & 1
    value &= (1 << bits) - 1
    if isinstance(t, DType) and t.is_signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def dce(func: Operation) -> None:
    """Remove pure simt ops whose results are unused (repeatedly, innermost and last first)."""
    from ..ir.ops import is_pure

    changed = True
    while changed:
        changed = False
        for op in reversed(list(func.walk())):
            if op is not func and not op.regions and is_pure(op) and op.results and \
                    not any(r.has_uses for r in op.results):
                op.erase()
                changed = True


def sink_shared_addresses(func: Operation) -> None:
    """Give each block that uses a shared-memory address of the prologue its own copy.

    simt.smem_addr is a symbol plus a constant (`mov.u32 %r14, __smem+65536;`), free to repeat.
    Kept in one register from the top of the function, ptxas holds it in an ordinary register
    across the loops, and a pipelined loop's ring addresses, mbarriers and wgmma descriptors built
    from it are then moved to uniform registers (R2UR) before each TMA copy and wgmma; a copy in
    the loop's own block lets them live in uniform registers (the grouped GEMM's K loop: 17 R2UR
    in its SASS -> 3, Triton's count; its kernel time 0.86-0.92x on an H200). Only kernels that
    copy with TMA change: elsewhere no address moved to uniform registers, and attention's
    forward ran 0.6% slower.
    """
    if not any(op.name == "simt.tma_load" for op in func.walk()):
        return
    for op in list(func.walk()):
        if op.name != "simt.smem_addr" or op.parent is None:
            continue
        by_block: dict[int, list[tuple[Operation, int]]] = {}
        for user, index in op.result.uses:
            if user.parent is not op.parent:
                by_block.setdefault(id(user.parent), []).append((user, index))
        for uses in by_block.values():
            block = uses[0][0].parent
            first = min((u for u, _ in uses), key=block.ops.index)
            clone = Operation(op.name, [], [op.result.type], dict(op.attrs), loc=op.loc)
            block.insert_before(first, clone)
            for user, index in uses:
                user.set_operand(index, clone.result)
        if not op.result.has_uses:
            op.erase()


def issue_loads_early(block: Block) -> None:
    """Move each global load of `block` up past the pure ops before it, with the pure ops it
    needs that stand there (its address): up to the last op with an effect (or a region). The
    thread-invariant code placed at the top of the function (tl.rand's Philox rounds) would
    otherwise stand between the kernel's start and its loads, and ptxas keeps that order, so
    the loads' latency would not overlap the work (tutorial 08: its load issued after 200
    instructions of Philox).

        %c = ... Philox (pure) ...               %a = simt.addptr %x, %i
        %a = simt.addptr %x, %i          ->      %v = simt.ld_global %a, %p
        %v = simt.ld_global %a, %p               %c = ... Philox (pure) ...
    """
    from ..ir.ops import is_pure

    for load in [op for op in block.ops if op.name == "simt.ld_global"]:
        ops = block.ops
        at = ops.index(load)
        group, needed = [load], set(load.operands)
        while at > 0 and is_pure(ops[at - 1]) and not ops[at - 1].regions:
            at -= 1
            if any(r in needed for r in ops[at].results):
                group.append(ops[at])
                needed.update(ops[at].operands)
        members = set(group)
        anchor = next((op for op in ops[at:] if op not in members), None)
        if anchor is None or ops.index(anchor) > ops.index(load):
            continue
        for op in reversed(group):
            if ops.index(op) > ops.index(anchor):
                op.move_before(anchor)


_PREDICATE_OPS = ("arith.cmp", "arith.and", "arith.or", "arith.xor", "arith.not")
# ops whose predicates stay where the hoisting put them: ptxas if-converts tensormap_create's
# thread-0 field writes (a load, a bit merge and a store each) only under a predicate computed
# outside the loops; one recomputed inside puts each write behind its own branch (the grouped
# GEMM's three in-loop descriptors: 74 branches in its SASS instead of 15)
_UNSUNK_USERS = ("simt.tensormap_create",)


def _crosses_loop(op: Operation, user: Operation) -> bool:
    """Whether a structured op lies between `op` and `user` in their common block."""
    ops = op.parent.ops
    return any(x.regions for x in ops[ops.index(op) + 1:ops.index(user)])


def sink_predicates(func: Operation) -> None:
    """Recompute predicates next to their users rather than keep them live across loops.

    The hoisting of thread-invariant code computes masks (row < M ...) at the top of the
    function; a predicate live across a loop holds one of the 7 predicate registers for all of
    it, and ptxas spills the rest to local memory. An i1 compare or logic op whose users sit in
    another block, or after a loop in its own block, is cloned right before them (its non-i1
    operands stay live instead, in ordinary registers); repeated until no such use is left.
    Predicates that only tensormap_create uses stay put (_UNSUNK_USERS says why).
    """
    changed = True
    while changed:
        changed = False
        for op in list(func.walk()):
            if op.name not in _PREDICATE_OPS or len(op.results) != 1 or op.result.type != i1 or op.parent is None:
                continue
            by_block: dict[int, list[tuple[Operation, int]]] = {}
            for user, index in op.result.uses:
                if user.name in _UNSUNK_USERS:
                    continue
                by_block.setdefault(id(user.parent), []).append((user, index))
            for uses in by_block.values():
                block = uses[0][0].parent
                if block is op.parent:
                    uses = [(u, i) for u, i in uses if _crosses_loop(op, u)]
                    if not uses:
                        continue
                first = min((u for u, _ in uses), key=block.ops.index)
                clone = Operation(op.name, op.operands, [i1], dict(op.attrs), loc=op.loc)
                block.insert_before(first, clone)
                for user, index in uses:
                    user.set_operand(index, clone.result)
                changed = True
            if not op.result.has_uses:
                op.erase()
