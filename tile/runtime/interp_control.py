"""Interpreter closures for control flow (scf.for/if/while), reduce/scan, dot, and debug ops.

Control flow runs once for all programs when its decision is the same in every active
program (the common case); otherwise it narrows `state.active` to the programs that take a
path: a non-uniform `scf.for` runs to the largest trip count with a per-iteration mask, a
non-uniform `scf.if` runs both branches under masks and selects the results per program,
and `scf.while` runs until no program is left in the loop. A while loop that waits for other
programs (a spin lock) hands control to them at its back edge (see interp_schedule).
"""
from __future__ import annotations

import sys

import numpy as np

from tile.ir.core import Operation
from tile.ir.types import DType, PointerType, element_type, f32, shape_of

from .interp_core import (Compiler, ExecState, Frame, InterpreterError, first_active, implements, lane_text, merge,
                          uniform)
from .interp_dtypes import NARROW_FLOATS, round_float, to_bits, value_dtype
from .interp_schedule import waits_on_other_programs

# ------------------------------------------------------------------------------ scf


def _run(fns, f: Frame, st: ExecState) -> None:
    for fn in fns:
        fn(f, st)


@implements("scf.for")
def _for(op: Operation, cc: Compiler):
    lb, ub, step = (cc.slot(v) for v in op.operands[:3])
    inits = [cc.slot(v) for v in op.operands[3:]]
    body = op.regions[0].block
    fns, outs = cc.block(body)
    iv, carried = cc.slot(body.args[0]), [cc.slot(a) for a in body.args[1:]]
    results = [cc.slot(r) for r in op.results]
    ivdt = value_dtype(op.operand(0).type)

    def zero_step(st: ExecState):
        where = st.program(first_active(st))
        return InterpreterError(cc.kernel, op, f"scf.for with step 0 never ends, in program {where}")

    def masked(f: Frame, st: ExecState, vals: list) -> list:
        full = (st.P,)
        L, U, S = (np.broadcast_to(f[s], full).astype(np.int64) for s in (lb, ub, step))
        outer = st.active
        span = U - L
        size = np.abs(S)
        if bool(((S == 0) & (span != 0) & (outer if outer is not None else True)).any()):
            raise zero_step(st)
        trips = np.maximum(0, (np.where(S > 0, span, -span) + size - 1) // np.maximum(size, 1))
        if outer is not None:
            trips = np.where(outer, trips, 0)
        for k in range(int(trips.max())):
            on = trips > k
            st.active = None if on.all() else on
            f[iv] = (L + k * S).astype(ivdt)
            for s, x in zip(carried, vals):
                f[s] = x
            _run(fns, f, st)
            new = [f[s] for s in outs]
            vals = new if st.active is None else [merge(on, n, o) for n, o in zip(new, vals)]
        st.active = outer
        return vals

    def run(f: Frame, st: ExecState) -> None:
        vals = [f[s] for s in inits]
        lo, hi, by = (uniform(f[s], st.active) for s in (lb, ub, step))
        if lo is None or hi is None or by is None:
            vals = masked(f, st, vals)
        else:
            lo, hi, by = int(lo), int(hi), int(by)
            if by == 0 and lo != hi:
                raise zero_step(st)
            for i in range(lo, hi, by or 1):
                f[iv] = np.array([i], ivdt)
                for s, x in zip(carried, vals):
                    f[s] = x
                _run(fns, f, st)
                vals = [f[s] for s in outs]
        for s, x in zip(results, vals):
            f[s] = x

    return run


@implements("scf.if")
def _if(op: Operation, cc: Compiler):
    cond = cc.slot(op.operand(0))
    then_fns, then_outs = cc.block(op.regions[0].block)
    else_fns, else_outs = cc.block(op.regions[1].block)
    results = [cc.slot(r) for r in op.results]

    def run(f: Frame, st: ExecState) -> None:
        c = f[cond]
        u = uniform(c, st.active)
        if u is not None:
            fns, outs = (then_fns, then_outs) if u else (else_fns, else_outs)
            _run(fns, f, st)
            vals = [f[s] for s in outs]
        else:
            outer = st.active
            c = np.broadcast_to(c, (st.P,))
            st.active = c if outer is None else outer & c
            _run(then_fns, f, st)
            then_vals = [f[s] for s in then_outs]
            st.active = ~c if outer is None else outer & ~c
            _run(else_fns, f, st)
            vals = [merge(c, a, b) for a, b in zip(then_vals, [f[s] for s in else_outs])]
            st.active = outer
        for s, x in zip(results, vals):
            f[s] = x

    return run


@implements("scf.while")
def _while(op: Operation, cc: Compiler):
    inits = [cc.slot(v) for v in op.operands]
    before, after = op.regions[0].block, op.regions[1].block
    before_fns, before_outs = cc.block(before)
    after_fns, after_outs = cc.block(after)
    before_args, after_args = [cc.slot(a) for a in before.args], [cc.slot(a) for a in after.args]
    cond, forwarded = before_outs[0], before_outs[1:]
    results = [cc.slot(r) for r in op.results]
    waits = waits_on_other_programs(op)

    def run(f: Frame, st: ExecState) -> None:
        outer = st.active
        vals = [f[s] for s in inits]
        out = None
        scheduler = st.scheduler if waits else None
        while True:
            for s, x in zip(before_args, vals):
                f[s] = x
            _run(before_fns, f, st)
            c, fwd = f[cond], [f[s] for s in forwarded]
            u = uniform(c, st.active)
            if u is not None and not u:  # every program still in the loop leaves now
                out = fwd if out is None else [merge(st.active, a, b) for a, b in zip(fwd, out)]
                if scheduler is not None:
                    scheduler.left_loop()
                break
            if scheduler is not None:  # waiting for another program: let it run
                scheduler.spin(op, st.start)
            if u is None:
                c = np.broadcast_to(c, (st.P,))
                leaving = ~c if st.active is None else st.active & ~c
                out = fwd if out is None else [merge(leaving, a, b) for a, b in zip(fwd, out)]
                st.active = c if st.active is None else st.active & c
            for s, x in zip(after_args, fwd):
                f[s] = x
            _run(after_fns, f, st)
            vals = [f[s] for s in after_outs]
        st.active = outer
        for s, x in zip(results, out):
            f[s] = x

    return run


# ---------------------------------------------------------------------- reduce and scan

_SIMPLE = {"arith.add": np.add, "arith.mul": np.multiply, "arith.and": np.bitwise_and,
           "arith.or": np.bitwise_or, "arith.xor": np.bitwise_xor}  # fmt: skip


def _simple_combine(op: Operation):
    """The NumPy ufunc equivalent to a one-op combine region (a + b, max(a, b), ...), or None."""
    block = op.regions[0].block
    if op.num_operands != 1 or len(block.ops) != 2:
        return None
    inner, term = block.ops
    if set(map(id, inner.operands)) != set(map(id, block.args)) or term.operands != tuple(inner.results):
        return None
    t = element_type(op.operand(0).type)
    if inner.name in ("arith.add", "arith.mul") and (t.is_bool or t in NARROW_FLOATS):
        return None  # i1 and narrow floats round (or wrap) after every step
    if inner.name in _SIMPLE:
        return _SIMPLE[inner.name]
    if inner.name in ("arith.max", "arith.min"):
        if t.is_floating and not inner.attrs.get("propagate_nan", False):
            return np.fmax if inner.name == "arith.max" else np.fmin
        if t.is_bool:
            return np.logical_or if inner.name == "arith.max" else np.logical_and
        return np.maximum if inner.name == "arith.max" else np.minimum
    return None


def _combiner(op: Operation, cc: Compiler):
    """A function combining lists of arrays (lhs..., rhs...) elementwise with the op's region.

    The region runs as if every element were a program of its own (arrays flattened to one
    program axis, all on), so control flow inside it works like anywhere else.
    """
    region = cc.region_fn(op.regions[0])

    def combine(f: Frame, st: ExecState, args: list) -> list:
        shape = np.broadcast_shapes(*(a.shape for a in args))
        flat = [np.broadcast_to(a, shape).reshape(-1) for a in args]
        saved = st.active, st.P
        st.active, st.P = None, flat[0].size
        try:
            outs = region(f, st, flat)
        finally:
            st.active, st.P = saved
        return [np.broadcast_to(x, flat[0].shape).reshape(shape) for x in outs]

    return combine


def _take(x: np.ndarray, axis: int, s: slice) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[axis] = s
    return x[tuple(index)]


@implements("tt.reduce")
def _reduce(op: Operation, cc: Compiler):
    axis = op.attrs["axis"] + 1
    ins = [cc.slot(v) for v in op.operands]
    results = [cc.slot(r) for r in op.results]
    simple = _simple_combine(op)
    combine = _combiner(op, cc)

    def run(f: Frame, st: ExecState) -> None:
        xs = [f[s] for s in ins]
        if simple is not None:
            x = xs[0]
            f[results[0]] = simple.reduce(x, axis=axis, dtype=x.dtype)
            return
        n = xs[0].shape[axis]
        lead = max(x.shape[0] for x in xs)
        xs = [np.broadcast_to(x, (lead,) + x.shape[1:]) for x in xs]
        while n > 1:  # a tree of adjacent pairs: the left operand always holds the lower indices
            h = n // 2
            merged = combine(f, st, [_take(x, axis, slice(0, 2 * h, 2)) for x in xs]
                             + [_take(x, axis, slice(1, 2 * h, 2)) for x in xs])
            if n % 2:
                merged = [np.concatenate([m, _take(x, axis, slice(n - 1, n))], axis) for m, x in zip(merged, xs)]
            xs, n = merged, h + n % 2
        for s, x in zip(results, xs):
            f[s] = np.squeeze(x, axis)

    return run


@implements("tt.scan")
def _scan(op: Operation, cc: Compiler):
    axis = op.attrs["axis"] + 1
    reverse = bool(op.attrs.get("reverse", False))
    ins = [cc.slot(v) for v in op.operands]
    results = [cc.slot(r) for r in op.results]
    simple = _simple_combine(op)
    combine = _combiner(op, cc)

    def run(f: Frame, st: ExecState) -> None:
        xs = [np.flip(f[s], axis) if reverse else f[s] for s in ins]
        if simple is not None:
            xs = [simple.accumulate(xs[0], axis=axis, dtype=xs[0].dtype)]
        else:
            n = xs[0].shape[axis]
            lead = max(x.shape[0] for x in xs)
            xs = [np.broadcast_to(x, (lead,) + x.shape[1:]) for x in xs]
            d = 1
            while d < n:  # Hillis-Steele: log2(n) steps of combine(x[i - d], x[i])
                merged = combine(f, st, [_take(x, axis, slice(0, n - d)) for x in xs]
                                 + [_take(x, axis, slice(d, n)) for x in xs])
                xs = [np.concatenate([_take(x, axis, slice(0, d)), m], axis) for x, m in zip(xs, merged)]
                d *= 2
        for s, x in zip(results, xs):
            f[s] = np.flip(x, axis) if reverse else x

    return run


# ---------------------------------------------------------------------------------- dot


def _tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to tf32 (10 mantissa bits, nearest even); NaN stays NaN."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    r = (bits + (np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1)))) & np.uint32(0xFFFFE000)
    return np.where(np.isnan(x), x, r.view(np.float32))


@implements("tt.dot")
def _dot(op: Operation, cc: Compiler):
    a, b, c, r = (cc.slot(v) for v in (*op.operands, op.result))
    el = element_type(op.operand(0).type)
    acc_t = element_type(op.result.type)
    tf32 = el == f32 and op.attrs.get("input_precision", "ieee") == "tf32"

    def run(f: Frame, st: ExecState) -> None:
        x, y, acc = f[a], f[b], f[c]
        if el.is_integer and el.bits > 8:
            prod = np.matmul(x.astype(np.int64), y.astype(np.int64))
        elif el.is_integer:  # int8 products summed in float64 are exact
            prod = np.matmul(x.astype(np.float64), y.astype(np.float64)).astype(np.int64)
        else:
            if tf32:
                x, y = _tf32(x), _tf32(y)
            prod = np.matmul(x.astype(np.float64), y.astype(np.float64))
        if acc_t.is_integer:
            f[r] = (prod + acc.astype(np.int64)).astype(value_dtype(acc_t))
        else:
            f[r] = round_float(prod + acc.astype(np.float64), acc_t)

    return run


# -------------------------------------------------------------------------------- debug


def _format_value(v, t: DType | PointerType, hex_: bool) -> str:
    if isinstance(t, PointerType):
        return f"{int(v):#x}"
    if hex_:
        bits = int(to_bits(np.array([v], value_dtype(t)), t)[0])
        return f"0x{bits:0{max(1, t.bits // 4)}x}"
    if t.is_floating:
        return f"{float(v):f}"
    return str(int(v))


@implements("tt.print")
def _print(op: Operation, cc: Compiler):
    prefix = op.attrs.get("prefix", "")
    prefix = prefix if prefix.startswith(" ") else " " + prefix
    prefix = prefix if prefix.endswith(" ") else prefix + " "
    hex_ = bool(op.attrs.get("hex", False))
    ins = [cc.slot(v) for v in op.operands]
    types = [element_type(v.type) for v in op.operands]
    shapes = [shape_of(v.type) for v in op.operands]
    many = len(ins) > 1

    def run(f: Frame, st: ExecState) -> None:
        arrays = [np.broadcast_to(f[s], (st.P,) + sh) for s, sh in zip(ins, shapes)]
        programs = range(st.P) if st.active is None else np.flatnonzero(st.active).tolist()
        lines = []
        for p in programs:
            pid = "pid ({}, {}, {})".format(*st.program(p))
            if not ins:
                lines.append(pid + prefix.rstrip())
            for i, (x, t, sh) in enumerate(zip(arrays, types, shapes)):
                widths = [len(str(d - 1)) for d in sh]
                tag = f"(operand {i}) " if many else ""
                for idx in np.ndindex(*sh):
                    where = ", ".join(str(j).rjust(w) for j, w in zip(idx, widths))
                    lines.append(f"{pid} idx ({where}){prefix}{tag}{_format_value(x[p][idx], t, hex_)}")
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")

    return run


@implements("tt.assert")
def _assert(op: Operation, cc: Compiler):
    s = cc.slot(op.operand(0))
    shape = shape_of(op.operand(0).type)
    message = op.attrs.get("message", "")
    where = f" ({op.attrs['file']}:{op.attrs['line']})" if op.loc is None and "file" in op.attrs else ""

    def run(f: Frame, st: ExecState) -> None:
        cond = np.broadcast_to(f[s], (st.P,) + shape)
        bad = ~cond
        if st.active is not None:
            bad &= st.active.reshape((st.P,) + (1,) * len(shape))
        if bad.any():
            flat = int(np.argmax(bad))
            raise InterpreterError(cc.kernel, op, f"device assertion failed{where}: {message}, in "
                                                  f"{lane_text(st, bad.shape, flat)}")

    return run


@implements("tt.debug_barrier")
def _barrier(op: Operation, cc: Compiler):
    def run(f: Frame, st: ExecState) -> None:
        return None

    return run
