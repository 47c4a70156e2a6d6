"""The interpreter's memory: pointer arguments at synthetic addresses, loads, stores, atomics,
and the block accesses of tensor descriptors (tt.descriptor_load / tt.descriptor_store).

Each pointer argument k gets the base address (k + 1) << 40 (256-byte aligned, a terabyte
apart), so a pointer value is a plain int64 address and `tt.addptr`, `tt.ptr_to_int` and
`tt.int_to_ptr` are integer arithmetic. An access maps each address back to an argument
(the nearest base: (addr + 2**39) >> 40) and a byte offset in it, checks bounds and
alignment on the lanes that are on (mask and active programs), and gathers or scatters on
a view of the argument's bytes in the accessed type, so arguments are read and written in
place whatever NumPy dtype they were passed with.

Atomics are sequential in program order (programs linearized x fastest, then each program's
elements in index order) and return the old values. Integer and bitwise atomics are exact.
A float atomic_add in contention computes each running sum exactly (float64) and rounds it
to the element type, instead of rounding after each addition.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from tile.ir.core import Operation, Value
from tile.ir.types import DType, PointerType, element_type, shape_of

from .interp_core import Compiler, ExecState, Frame, InterpreterError, implements, lane_text, program_mask
from .interp_dtypes import (decode, decoder, element_size, encode, encoder, round_float, storage_dtype, to_bits,
                           value_dtype)

BASE_SHIFT = 40
_HALF = 1 << (BASE_SHIFT - 1)


class Memory:
    """The pointer arguments of one launch, addressed by synthetic base addresses."""

    def __init__(self, arrays: list[Optional[np.ndarray]], names: list[str], writable: list[bool]):
        self.bytes = [a.reshape(-1).view(np.uint8) if a is not None else None for a in arrays]
        self.names = names
        self.writable = writable
        self._views: dict[tuple[int, np.dtype], np.ndarray] = {}

    @staticmethod
    def base(k: int) -> int:
        return (k + 1) << BASE_SHIFT

    def view(self, k: int, dt: np.dtype) -> np.ndarray:
        key = (k, dt)
        v = self._views.get(key)
        if v is None:
            raw = self.bytes[k]
            v = raw[: raw.size - raw.size % dt.itemsize].view(dt)
            self._views[key] = v
        return v

    def arg_of(self, addr: int) -> Optional[int]:
        k = ((addr + _HALF) >> BASE_SHIFT) - 1
        return k if 0 <= k < len(self.bytes) and self.bytes[k] is not None else None

    def locate(self, addr: np.ndarray, valid: Optional[np.ndarray], t: DType | PointerType, fail,
               aligned: bool = False) -> list:
        """Map addresses to [(argument, lanes or None for all, element index array)].

        Lanes that are off get index 0. `fail(flat_lane, text)` raises the error for a bad lane.
        `aligned`: the addresses are known to be multiples of the element size.
        """
        size = element_size(t)
        if valid is None:
            first = 0
        else:
            first = int(np.argmax(valid))
            if not valid.flat[first]:
                return []
        k = self.arg_of(int(addr.flat[first]))
        if k is not None:
            groups = self._one_arg(addr, valid, size, k, aligned)
            if groups is not None:
                return groups
        return self._many_args(addr, valid, size, str(t), fail)

    def _one_arg(self, addr, valid, size, k, aligned):
        """Fast path: every lane that is on falls inside argument k (else None)."""
        limit = self.bytes[k].size - size
        if limit < 0:
            return None
        base = self.base(k)
        shift = size.bit_length() - 1
        if valid is None:
            if int(addr.min()) < base or int(addr.max()) > base + limit:
                return None
            if not aligned and ((addr & (size - 1)) != 0).any():
                return None
            idx = addr - base
            if shift:
                np.right_shift(idx, shift, out=idx)
            return [(k, None, idx)]
        off = addr - base
        bad = off.view(np.uint64) > np.uint64(limit)
        if not aligned and size > 1:
            bad |= (off & (size - 1)) != 0
        bad &= valid
        if bad.any():
            return None
        if shift:
            np.right_shift(off, shift, out=off)
        return [(k, valid, np.where(valid, off, 0))]

    def _many_args(self, addr, valid, size, tname, fail):
        """Slow path: lanes in several arguments, or a bad lane to report."""
        karr = ((addr + _HALF) >> BASE_SHIFT) - 1
        on = np.ones(addr.shape, bool) if valid is None else valid
        groups = []
        for k in np.unique(karr[on]).tolist():
            lanes = on & (karr == k)
            if not 0 <= k < len(self.bytes) or self.bytes[k] is None:
                flat = int(np.argmax(lanes))
                fail(flat, f"address {int(addr.flat[flat]):#x} does not point into any argument")
            off = addr - self.base(k)
            bad = lanes & ((off < 0) | (off > self.bytes[k].size - size) | ((off & (size - 1)) != 0))
            if bad.any():
                flat = int(np.argmax(bad))
                o = int(off.flat[flat])
                what = "misaligned" if o % size and 0 <= o < self.bytes[k].size else "out-of-bounds"
                n = self.bytes[k].size // size
                fail(flat, f"{what} access at element offset {o // size}"
                           f"{f' (byte offset {o})' if o % size else ''} of argument '{self.names[k]}' "
                           f"({n} elements of {tname})")
            groups.append((k, lanes, np.where(lanes, off >> (size.bit_length() - 1), 0)))
        return groups


# ------------------------------------------------------------------------------- helpers

_KEEPS_ALIGNMENT = ("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.hint", "tt.addptr")


def aligned_by_construction(v: Value, assumed: Optional[set[int]] = None) -> bool:
    """True if pointer value `v` can only hold multiples of its element size.

    Pointer parameters are aligned and `tt.addptr` steps in whole elements, so only
    `tt.int_to_ptr`, bitcasts and pointers loaded from memory can be misaligned; those
    accesses are checked at run time. Loop-carried pointers are aligned if their initial and
    next values are (assuming the loop argument is, which is sound for this induction).
    """
    assumed = set() if assumed is None else assumed
    if id(v) in assumed:
        return True
    assumed.add(id(v))
    op = v.owner_op
    if op is None:
        block = v.block
        parent = block.parent_op
        if parent is None or parent.name == "tt.func":
            return True
        if parent.name == "scf.for" and v.index > 0:
            sources = [parent.operand(2 + v.index), block.terminator.operand(v.index - 1)]
        elif parent.name == "scf.while" and block is parent.regions[0].block:
            sources = [parent.operand(v.index), parent.regions[1].block.terminator.operand(v.index)]
        elif parent.name == "scf.while":
            sources = [parent.regions[0].block.terminator.operand(v.index + 1)]
        else:
            return False
    elif op.name in _KEEPS_ALIGNMENT:
        sources = [op.operand(0)]
    elif op.name == "arith.select":
        sources = [op.operand(1), op.operand(2)]
    elif op.name == "scf.for":
        sources = [op.operand(3 + v.index), op.regions[0].block.terminator.operand(v.index)]
    elif op.name == "scf.if":
        sources = [region.block.terminator.operand(v.index) for region in op.regions]
    elif op.name == "scf.while":
        sources = [op.regions[0].block.terminator.operand(v.index + 1)]
    else:
        return False
    return all(aligned_by_construction(s, assumed) for s in sources)


def _pointee(ptr_value) -> DType | PointerType:
    return element_type(ptr_value.type).pointee


def _lanes(st: ExecState, arrays: list, shape: tuple[int, ...], per_program: bool):
    """Broadcast operand arrays to one lane shape; the active mask as a lane mask (or None).

    Plain loads and stores of values that are the same in every program run once (leading
    axis 1); atomics, prints and asserts run once per program (`per_program`).
    """
    lead = max(a.shape[0] for a in arrays if a is not None)
    if per_program:
        lead = st.P
    full = (lead,) + shape
    out = [a if a is None or a.shape == full else np.broadcast_to(a, full) for a in arrays]
    active = None
    if st.active is not None and lead == st.P:
        active = np.broadcast_to(program_mask(st.active, len(full)), full)
    return out, active


def _and(mask, active):
    """The lanes that are on: None when all are (cheaper paths, no select of `other`)."""
    valid = active if mask is None else mask if active is None else mask & active
    return None if valid is None or valid.all() else valid


def _failer(cc: Compiler, op: Operation, st: ExecState, shape: tuple[int, ...], verb: str):
    def fail(flat: int, text: str):
        raise InterpreterError(cc.kernel, op, f"{verb}: {text}, in {lane_text(st, shape, flat)}")

    return fail


def _check_writable(cc: Compiler, op: Operation, st: ExecState, groups: list) -> None:
    for k, _, _ in groups:
        if not st.mem.writable[k]:
            raise cc.error(op, f"argument '{st.mem.names[k]}' is read-only and cannot be written")


# ------------------------------------------------------------------------------- pointers


@implements("tt.addptr")
def _addptr(op: Operation, cc: Compiler):
    size = element_size(_pointee(op.result))
    p, o, r = cc.slot(op.operand(0)), cc.slot(op.operand(1)), cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        ptr, off = f[p], f[o]
        out = np.multiply(off, np.int64(size))  # int64, whatever the offset's type
        if out.shape == np.broadcast_shapes(out.shape, ptr.shape):
            np.add(out, ptr, out=out)
        else:
            out = out + ptr
        f[r] = out

    return run


@implements("tt.load")
def _load(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    sdt, dec = storage_dtype(t), decoder(t)
    shape = shape_of(op.result.type)
    slots = [cc.slot(v) for v in op.operands] + [None] * (3 - op.num_operands)
    p, m, o = slots
    aligned = aligned_by_construction(op.operand(0))
    r = cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        (addr, mask), active = _lanes(st, [f[p], f[m] if m is not None else None], shape, False)
        valid = _and(mask, active)
        groups = st.mem.locate(addr, valid, t, _failer(cc, op, st, addr.shape, "invalid load"), aligned)
        if len(groups) == 1 and groups[0][1] is valid:
            k, _, idx = groups[0]
            bits = st.mem.view(k, sdt)[idx]
        else:
            bits = np.zeros(addr.shape, sdt)
            for k, lanes, idx in groups:
                bits[lanes] = st.mem.view(k, sdt)[idx[lanes]]
        value = dec(bits)
        if valid is not None:
            other = f[o] if o is not None else value.dtype.type(0)
            value = np.where(valid, value, other)
        f[r] = value

    return run


@implements("tt.store")
def _store(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    sdt, enc = storage_dtype(t), encoder(t)
    shape = shape_of(op.operand(1).type)
    p, v = cc.slot(op.operand(0)), cc.slot(op.operand(1))
    m = cc.slot(op.operand(2)) if op.num_operands > 2 else None
    aligned = aligned_by_construction(op.operand(0))

    def run(f: Frame, st: ExecState) -> None:
        (addr, value, mask), active = _lanes(st, [f[p], f[v], f[m] if m is not None else None], shape, False)
        valid = _and(mask, active)
        groups = st.mem.locate(addr, valid, t, _failer(cc, op, st, addr.shape, "invalid store"), aligned)
        _check_writable(cc, op, st, groups)
        bits = enc(value)
        for k, lanes, idx in groups:
            view = st.mem.view(k, sdt)
            if lanes is None:
                view[idx.reshape(-1)] = bits.reshape(-1)
            else:
                view[idx[lanes]] = bits[lanes]

    return run


# -------------------------------------------------------------------------------- atomics


def _segmented_scan(x: np.ndarray, seg: np.ndarray, longest: int, fn) -> np.ndarray:
    """Inclusive scan of `x` within runs of equal `seg` (log-step, for an associative `fn`)."""
    d = 1
    while d < longest:
        same = seg[d:] == seg[:-d]
        nxt = x.copy()
        nxt[d:] = np.where(same, fn(x[:-d], x[d:]), x[d:])
        x = nxt
        d *= 2
    return x


def _rmw_fn(kind: str, t: DType):
    if kind in ("and", "or", "xor"):
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    floating = t.is_floating
    return {"add": np.add, "max": np.fmax if floating else np.maximum,
            "min": np.fmin if floating else np.minimum}[kind]  # fmt: skip


def _atomic_rmw_lanes(view: np.ndarray, index: np.ndarray, vals: np.ndarray, kind: str, t: DType) -> np.ndarray:
    """Apply one atomic per lane, in lane order, to `view`; return the old values (value dtype)."""
    order = np.argsort(index, kind="stable")
    idx, v = index[order], vals[order]
    n = idx.size
    start = np.empty(n, bool)
    start[0] = True
    np.not_equal(idx[1:], idx[:-1], out=start[1:])
    floating = t.is_floating
    mem0 = decode(view[idx], t)
    if floating:  # exact running sums, rounded once
        mem0, v = mem0.astype(np.float64), v.astype(np.float64)
    if kind == "xchg":
        after = v
    else:
        fn = _rmw_fn(kind, t)
        if start.all():
            after = fn(mem0, v)
        else:
            seg = np.cumsum(start)
            starts = np.flatnonzero(start)
            longest = int(np.diff(np.append(starts, n)).max())
            after = fn(mem0, _segmented_scan(v, seg, longest, fn))
    old = mem0.copy()
    old[1:] = np.where(start[1:], mem0[1:], after[:-1])
    last = np.append(start[1:], True)
    if floating:
        after, old = round_float(after, t), round_float(old, t)
    view[idx[last]] = encode(after[last], t)
    out = np.empty_like(old)
    out[order] = old
    return out


def _atomic_cas_lanes(view_bits: np.ndarray, index: np.ndarray, cmp_bits: np.ndarray, val_bits: np.ndarray):
    """Compare-and-swap per lane, in lane order, on the raw bits; return the old bits."""
    order = np.argsort(index, kind="stable")
    idx = index[order]
    n = idx.size
    start = np.empty(n, bool)
    start[0] = True
    np.not_equal(idx[1:], idx[:-1], out=start[1:])
    starts = np.flatnonzero(start)
    rank = np.arange(n) - starts[np.cumsum(start) - 1]
    by_rank = np.argsort(rank, kind="stable")
    counts = np.bincount(rank)
    old = np.empty(n, view_bits.dtype)
    pos = 0
    # Lanes of equal rank hit distinct addresses: one vectorized round per rank.
    for c in counts.tolist():
        lanes = by_rank[pos:pos + c]
        pos += c
        where = idx[lanes]
        cur = view_bits[where]
        old[lanes] = cur
        src = order[lanes]
        hit = cur == cmp_bits[src]
        view_bits[where[hit]] = val_bits[src][hit]
    out = np.empty_like(old)
    out[order] = old
    return out


@implements("tt.atomic_rmw")
def _atomic_rmw(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    kind = op.attrs["kind"]
    sdt = storage_dtype(t)
    shape = shape_of(op.result.type)
    p, v = cc.slot(op.operand(0)), cc.slot(op.operand(1))
    m = cc.slot(op.operand(2)) if op.num_operands > 2 else None
    r = cc.slot(op.result)
    vdt = value_dtype(t)

    def run(f: Frame, st: ExecState) -> None:
        (addr, value, mask), active = _lanes(st, [f[p], f[v], f[m] if m is not None else None], shape, True)
        valid = _and(mask, active)
        groups = st.mem.locate(addr, valid, t, _failer(cc, op, st, addr.shape, "invalid atomic"))
        _check_writable(cc, op, st, groups)
        out = np.zeros(addr.size, vdt)
        flat_vals = value.reshape(-1)
        for k, lanes, idx in groups:
            sel = np.arange(addr.size) if lanes is None else np.flatnonzero(lanes)
            out[sel] = _atomic_rmw_lanes(st.mem.view(k, sdt), idx.reshape(-1)[sel], flat_vals[sel], kind, t)
        f[r] = out.reshape(addr.shape)

    return run


@implements("tt.atomic_cas")
def _atomic_cas(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    shape = shape_of(op.result.type)
    p, c, v, r = (cc.slot(x) for x in (*op.operands, op.result))

    def run(f: Frame, st: ExecState) -> None:
        (addr, cmp, value), active = _lanes(st, [f[p], f[c], f[v]], shape, True)
        groups = st.mem.locate(addr, active, t, _failer(cc, op, st, addr.shape, "invalid atomic"))
        _check_writable(cc, op, st, groups)
        cmp_bits, val_bits = to_bits(cmp, t).reshape(-1), to_bits(value, t).reshape(-1)
        out = np.zeros(addr.size, cmp_bits.dtype)
        for k, lanes, idx in groups:
            sel = np.arange(addr.size) if lanes is None else np.flatnonzero(lanes)
            out[sel] = _atomic_cas_lanes(st.mem.view(k, cmp_bits.dtype), idx.reshape(-1)[sel],
                                         cmp_bits[sel], val_bits[sel])
        f[r] = decode(out.view(storage_dtype(t)), t).reshape(addr.shape)

    return run


# ----------------------------------------------------------------------- tensor descriptors


def _descriptor_lanes(f: Frame, slots: list[int], block: tuple[int, ...], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Byte addresses of the elements of a descriptor's block, and which lie inside the tensor:
    element i is at base + sum((offset + i) * stride) * size, inside when 0 <= offset + i < shape
    in every dimension. Both have a leading program axis."""
    rank = len(block)
    per_program = lambda a: a.astype(np.int64).reshape((-1,) + (1,) * rank)  # noqa: E731
    base, shapes = f[slots[0]], [f[s] for s in slots[1:1 + rank]]
    strides, offsets = [f[s] for s in slots[1 + rank:1 + 2 * rank]], [f[s] for s in slots[1 + 2 * rank:1 + 3 * rank]]
    addr, inside = per_program(base), None
    for d in range(rank):
        along = [1] * (rank + 1)
        along[d + 1] = block[d]
        index = per_program(offsets[d]) + np.arange(block[d], dtype=np.int64).reshape(along)
        ok = (index >= 0) & (index < per_program(shapes[d]))
        addr = addr + index * (per_program(strides[d]) * size)
        inside = ok if inside is None else inside & ok
    return addr, inside


@implements("tt.descriptor_load")
def _descriptor_load(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    sdt, dec = storage_dtype(t), decoder(t)
    block = tuple(op.attrs["block_shape"])
    slots = [cc.slot(v) for v in op.operands]
    nan = op.attrs["padding"] == "nan"
    aligned = aligned_by_construction(op.operand(0))
    r = cc.slot(op.result)

    def run(f: Frame, st: ExecState) -> None:
        addr, inside = _descriptor_lanes(f, slots, block, element_size(t))
        (addr, inside), active = _lanes(st, [addr, inside], block, False)
        valid = _and(inside, active)
        groups = st.mem.locate(addr, valid, t, _failer(cc, op, st, addr.shape, "invalid descriptor load"), aligned)
        bits = np.zeros(addr.shape, sdt)
        for k, lanes, idx in groups:
            if lanes is None:
                bits = st.mem.view(k, sdt)[idx]
            else:
                bits[lanes] = st.mem.view(k, sdt)[idx[lanes]]
        value = dec(bits)
        if valid is not None:
            value = np.where(valid, value, value.dtype.type(np.nan if nan else 0))
        f[r] = value

    return run


@implements("tt.descriptor_store")
def _descriptor_store(op: Operation, cc: Compiler):
    t = _pointee(op.operand(0))
    sdt, enc = storage_dtype(t), encoder(t)
    block = tuple(op.attrs["block_shape"])
    slots = [cc.slot(v) for v in op.operands[:-1]]
    v = cc.slot(op.operands[-1])
    aligned = aligned_by_construction(op.operand(0))

    def run(f: Frame, st: ExecState) -> None:
        addr, inside = _descriptor_lanes(f, slots, block, element_size(t))
        (addr, inside, value), active = _lanes(st, [addr, inside, f[v]], block, False)
        valid = _and(inside, active)
        groups = st.mem.locate(addr, valid, t, _failer(cc, op, st, addr.shape, "invalid descriptor store"), aligned)
        _check_writable(cc, op, st, groups)
        bits = enc(value)
        for k, lanes, idx in groups:
            view = st.mem.view(k, sdt)
            if lanes is None:
                view[idx.reshape(-1)] = bits.reshape(-1)
            else:
                view[idx[lanes]] = bits[lanes]

    return run
