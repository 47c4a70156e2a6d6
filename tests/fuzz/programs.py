"""A hypothesis strategy of random well-typed tile kernels, each with a NumPy model of its result.

`programs()` draws a `Program`: the Python source of a module holding one `@tile.jit` kernel,
the arrays and scalars it is launched with, and the memory every output buffer must hold after
the launch. The model is built alongside the source, op by op, on the program's concrete
inputs, so an op is only emitted where it is defined on them (no division by zero, no float
to integer cast out of range, no float overflow) and every value knows how exact it is:
integer values and correctly rounded float ops are bit exact; float sums, scans and dots whose
order may change the rounding carry an error bound, and such inexact values never feed a
comparison, an integer cast or an argmax, which could turn a rounding difference into a wrong
answer.

Kernels use: masked loads at random offsets with `other`, every dtype (i1, int8..uint64, f16,
bf16, f32, f64), binary ops with Triton's promotion (literals included), unary ops and math,
casts and bitcasts, where, reductions and scans over random axes (sum, max, min, argmax,
argmin, xor_sum, reduce, cumsum, cumprod, associative_scan), reshape, trans, permute,
expand_dims, broadcast_to, join, split, for loops (runtime and constexpr bounds) and while
loops with carried values, ifs on scalar conditions, dot, atomics on distinct addresses, and
masked stores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
from hypothesis import strategies as st

from fuzz import model as M
from fuzz.control import ControlAndMemoryOps
from fuzz.values import Buffer, Val, aligned, broadcastable, factor, offsets

HEADER = '''import tile
import tile.language as tl


@tile.jit
def fz_add(a, b):
    return a + b


@tile.jit
def fz_max(a, b):
    return tl.maximum(a, b)


@tile.jit
'''


@dataclass
class Program:
    source: str
    grid: int
    buffers: list[Buffer]
    scalars: dict[str, Any]
    params: list[str]
    num_warps: int = 4
    num_stages: int = 3
    ops: list[str] = field(default_factory=list)  # op kinds used, for statistics

    def __str__(self) -> str:
        return f"# grid=({self.grid},) num_warps={self.num_warps} num_stages={self.num_stages} scalars={self.scalars}\n{self.source}"


class Generator(ControlAndMemoryOps):
    """Draws one program op by op, keeping source lines and model values in step."""

    def __init__(self, draw: Callable[[st.SearchStrategy], Any], grid: int, seed: int):
        self.draw = draw
        self.grid = grid
        self.rng = np.random.default_rng(seed)
        self.lines: list[str] = []
        self.pool: list[Val] = []
        self.buffers: list[Buffer] = []
        self.count = 0
        self.n = int(draw(st.sampled_from([1, 3, 16, 100, 1 << 20])))
        self.iters = int(draw(st.integers(0, 3)))
        self.alpha = float(draw(st.integers(-8, 8))) / 4
        self.ops: list[str] = []
        self.pool.append(Val("alpha", "f32", (), np.full((grid,), self.alpha)))

    # ----------------------------------------------------------------- helpers
    def fresh(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def add(self, expr: str, dtype: str, shape: tuple[int, ...], model: np.ndarray, err: float = 0.0) -> Val:
        v = Val(self.fresh(), dtype, tuple(shape), model, err)
        self.emit(f"{v.name} = {expr}")
        self.pool.append(v)
        return v

    def pick(self, pred: Callable[[Val], bool] = lambda v: True) -> Optional[Val]:
        choices = [v for v in self.pool if pred(v)]
        if not choices:
            return None
        return choices[self.draw(st.integers(0, len(choices) - 1))]

    def choose(self, options: tuple | list) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def random_data(self, dtype: str, count: int, small: bool = False) -> np.ndarray:
        """Storage contents: floats are multiples of 1/4 (exact in every float dtype) or, half
        the time unless `small`, random values with full mantissas; integers span their dtype's
        range or [-100, 100] (or [-4, 4] when `small`)."""
        if M.is_float(dtype):
            if not small and self.rng.random() < 0.5:  # full mantissas: every op rounds
                fine = self.rng.standard_normal(count) * np.exp2(self.rng.integers(-4, 5, count))
                return M.to_storage(M.round_float(fine, dtype), dtype)
            lim = 8 if small else 32
            return M.to_storage(self.rng.integers(-lim, lim + 1, count) / 4.0, dtype)
        if dtype == "i1":
            return self.rng.random(count) < 0.5
        if small:
            return self.rng.integers(-4 if M.is_signed(dtype) else 0, 5, count).astype(M.STORAGE[dtype])
        info = np.iinfo(M.STORAGE[dtype])
        if self.rng.random() < 0.5:
            return self.rng.integers(-100 if M.is_signed(dtype) else 0, 101, count).astype(M.STORAGE[dtype])
        return self.rng.integers(info.min, info.max, count, dtype=M.STORAGE[dtype], endpoint=True)

    def random_shape(self, max_numel: int = 512) -> tuple[int, ...]:
        rank = self.choose((1, 1, 2, 2, 3))
        shape = tuple(1 << self.draw(st.integers(0, 6 if rank == 1 else 4)) for _ in range(rank))
        while int(np.prod(shape)) > max_numel:
            shape = tuple(max(s // 2, 1) for s in shape)
        if int(np.prod(shape)) < 2:
            shape = shape[:-1] + (2,)
        return shape

    def new_buffer(self, dtype: str, count: int, init: Optional[np.ndarray] = None) -> Buffer:
        buf = Buffer(f"p{len(self.buffers)}", dtype, init if init is not None else self.random_data(dtype, count))
        self.buffers.append(buf)
        return buf

    def literal(self, dtype: str) -> Optional[int | float]:
        if M.is_float(dtype):
            return self.draw(st.integers(-8, 8)) / 4
        if M.is_int(dtype):
            return self.draw(st.integers(-3 if M.is_signed(dtype) else 0, 5))
        return None

    # ------------------------------------------------------------------- loads
    def load(self, dtype: Optional[str] = None, shape: Optional[tuple[int, ...]] = None, small: bool = False) -> Val:
        dtype = dtype or self.choose(M.ALL)
        if shape is None:
            like = self.pick(lambda v: len(v.shape) >= 1) if self.draw(st.booleans()) else None
            shape = like.shape if like is not None else self.random_shape()
        numel = int(np.prod(shape, dtype=np.int64))
        shift = self.draw(st.sampled_from([0, 0, 1, 7]))
        count = self.grid * numel + shift
        buf = self.new_buffer(dtype, count, self.random_data(dtype, count, small))
        data = M.from_storage(buf.init[shift:], dtype).reshape((self.grid,) + shape)
        ptr = f"{buf.name} + tl.program_id(0) * {numel}" + (f" + {shift}" if shift else "")
        offs = offsets(shape)
        masked = shape and self.draw(st.booleans())
        if not masked:
            return self.add(f"tl.load({ptr} + {offs})" if shape else f"tl.load({ptr})", dtype, shape, data)
        keep = np.arange(numel).reshape(shape) < self.n
        if dtype == "i1" or self.draw(st.booleans()):
            # Without `other` masked lanes are undefined: the kernel keeps only the loaded lanes.
            zero = "False" if dtype == "i1" else "0"
            model = np.where(keep, data, np.zeros((), data.dtype))
            return self.add(f"tl.where(({offs}) < n, tl.load({ptr} + ({offs}), mask=({offs}) < n), {zero})",
                            dtype, shape, model)
        other = self.literal(dtype)
        fill = M.convert(np.array(other), M.literal_type(other), dtype)
        if fill is None:
            return self.add(f"tl.load({ptr} + {offs})", dtype, shape, data)
        model = np.where(keep, data, fill.astype(data.dtype))
        return self.add(f"tl.load({ptr} + ({offs}), mask=({offs}) < n, other={other})", dtype, shape, model)

    # --------------------------------------------------------------- arithmetic
    def binary_model(self, op: str, a: Val, b: Val | int | float) -> Optional[tuple[np.ndarray, str, float]]:
        """(model, dtype, error bound) of `a op b`, or None where it is undefined or unmodelled."""
        literal = not isinstance(b, Val)
        if literal and a.dtype.startswith("u") and b < 0:
            return None  # tile refuses to combine an unsigned value with a negative constant
        bt = M.literal_type(b) if literal else b.dtype
        bshape = () if literal else b.shape
        try:
            shape = np.broadcast_shapes(a.shape, bshape)
        except ValueError:
            return None
        rank = len(shape)
        am = aligned(a, rank)
        bm = np.array(b) if literal else aligned(b, rank)
        berr = 0.0 if literal else b.err
        if op in ("&", "|", "^"):
            if a.dtype == "i1" and bt == "i1" and not literal:
                return {"&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}[op](am, bm), "i1", 0.0
            if not (M.is_int(a.dtype) and (M.is_int(bt))):
                return None
        if a.dtype == "i1" or (bt == "i1"):
            return None
        div = op in ("/", "//", "%")
        if div and not literal and M.is_int(a.dtype) and M.is_int(bt) and M.is_signed(a.dtype) != M.is_signed(bt):
            return None  # tile, like Triton, refuses to divide integers of different signedness
        if op in ("//", "%") and not (M.is_int(a.dtype) and M.is_int(bt) and M.is_signed(a.dtype) == M.is_signed(bt)
                                      or literal and M.is_int(a.dtype)):
            return None
        t = M.computation_type(a.dtype, bt, literal, div)
        if op == "/" and M.is_int(t):
            t = "f32"
        if op in ("<<", ">>"):
            if not (literal and M.is_int(a.dtype) and 0 <= b < M.BITS[a.dtype]):
                return None
            t = a.dtype
        x = M.convert(am, a.dtype, t)
        if literal:  # a Python number becomes a constant of the computation type
            y = M.wrap(np.asarray(b).astype(object), t) if M.is_int(t) else M.round_float(np.asarray(float(b)), t)
        else:
            y = M.convert(bm, bt, t)
        if x is None or y is None:
            return None
        cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
               "!=": np.not_equal}  # fmt: skip
        if op in cmp:
            if a.err or berr:
                return None
            return cmp[op](x, y), "i1", 0.0
        if M.is_int(t):
            xo, yo = M.as_objects(np.asarray(x)), M.as_objects(np.asarray(y))
            xo, yo = np.broadcast_arrays(xo, yo)
            if op in ("//", "%"):
                if np.any(yo == 0):
                    return None
                # C's division truncates toward zero; the remainder takes the dividend's sign
                q = np.vectorize(lambda p, d: abs(p) // abs(d) * (1 if (p < 0) == (d < 0) else -1),
                                 otypes=[object])(xo, yo)
                if M.is_signed(t) and np.any(q >= 2 ** (M.BITS[t] - 1)):
                    return None
                r = xo - q * yo
                return M.wrap(q if op == "//" else r, t), t, 0.0
            fn = {"+": lambda p, d: p + d, "-": lambda p, d: p - d, "*": lambda p, d: p * d,
                  "&": lambda p, d: p & d, "|": lambda p, d: p | d, "^": lambda p, d: p ^ d,
                  "<<": lambda p, d: p << d, ">>": lambda p, d: p >> d,
                  "max": lambda p, d: max(p, d), "min": lambda p, d: min(p, d)}.get(op)  # fmt: skip
            if fn is None:
                return None
            if op == ">>" and not M.is_signed(t):
                fn = lambda p, d: (p & ((1 << M.BITS[t]) - 1)) >> d  # noqa: E731
            out = np.vectorize(fn, otypes=[object])(xo, yo) if xo.size else xo
            return M.wrap(out, t), t, 0.0
        # floats: model in float64, one rounding to t
        xa, ya = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        if op == "+":
            exact, err = xa + ya, a.err + berr
        elif op == "-":
            exact, err = xa - ya, a.err + berr
        elif op == "*":
            exact, err = xa * ya, a.err * M.max_abs(ya) + berr * M.max_abs(xa) + a.err * berr
        elif op == "max":
            exact, err = np.maximum(xa, ya), max(a.err, berr)
        elif op == "min":
            exact, err = np.minimum(xa, ya), max(a.err, berr)
        elif op == "/":
            if a.err or berr or np.any(np.abs(ya) < 0.25):
                return None
            exact = xa / ya
            return self.checked_float(exact, t, 4 * M.EPS[t] * M.max_abs(exact) + 1e-300)
        else:
            return None
        out = M.round_float(exact, t)
        if err:
            err += M.EPS[t] * (M.max_abs(exact) + M.max_abs(xa) + M.max_abs(ya))
        return self.checked_float(out, t, err)

    def checked_float(self, out: np.ndarray, t: str, err: float) -> Optional[tuple[np.ndarray, str, float]]:
        if not np.all(np.isfinite(out)) or M.max_abs(out) > M.LIMIT[t] or err > 1e-2 * M.LIMIT[t]:
            return None
        return out, t, err

    def op_binary(self) -> bool:
        a = self.pick()
        op = self.choose(("+", "-", "*", "&", "|", "^", "//", "%", "/", "<<", ">>", "<", "<=", "==", "!=", ">",
                          "max", "min", "+", "*"))
        use_literal = self.draw(st.integers(0, 3)) == 0
        b: Val | int | float | None
        if use_literal or op in ("<<", ">>"):
            b = self.draw(st.integers(0, 7)) if op in ("<<", ">>") else self.literal(self.choose(("i32", "f32")))
        else:
            b = self.pick(lambda v: v.shape == a.shape and v is not a) if self.draw(st.booleans()) else None
            b = b or self.pick(lambda v: broadcastable(v.shape, a.shape))
        if b is None:
            return False
        result = self.binary_model(op, a, b)
        if result is None:
            return False
        bs = b.name if isinstance(b, Val) else repr(b)
        if op in ("max", "min"):
            expr = f"tl.{op}imum({a.name}, {bs})"
        else:
            expr = f"{a.name} {op} {bs}"
        shape = np.broadcast_shapes(a.shape, b.shape if isinstance(b, Val) else ())
        self.add(expr, result[1], shape, result[0], result[2])
        return True

    def op_unary(self) -> bool:
        a = self.pick()
        op = self.choose(("-", "~", "abs", "exp", "sqrt", "sin", "floor", "ceil"))
        t = a.dtype
        if op == "~":
            if t == "i1":
                return self._add_unary(f"~{a.name}", a, np.logical_not(a.model), t)
            if not M.is_int(t):
                return False
            return self._add_unary(f"~{a.name}", a, M.wrap(~M.as_objects(a.model), t), t)
        if t == "i1":
            return False
        if op == "-":
            if M.is_int(t):
                return self._add_unary(f"-{a.name}", a, M.wrap(-M.as_objects(a.model), t), t)
            return self._add_unary(f"-{a.name}", a, -a.model, t, a.err)
        if op == "abs":
            if M.is_int(t):
                return self._add_unary(f"tl.abs({a.name})", a, M.wrap(np.abs(M.as_objects(a.model)), t), t)
            return self._add_unary(f"tl.abs({a.name})", a, np.abs(a.model), t, a.err)
        if t not in ("f32", "f64") or a.err:  # Triton's math functions take fp32/fp64 only
            return False
        x = a.model
        if op in ("floor", "ceil"):
            return self._add_unary(f"tl.{op}({a.name})", a, getattr(np, op)(x), t)
        if op == "exp" and M.max_abs(x) > 6:
            return False
        if op == "sqrt" and np.any(x < 0):
            return False
        if op == "sin" and M.max_abs(x) > 16:
            return False
        exact = getattr(np, op)(x)
        # GPU math is approximate to a few ulp of f32 (f16/bf16 inputs are computed in f32)
        ulp = max(M.EPS[t], M.EPS["f32"] if t != "f64" else M.EPS["f64"])
        err = 8 * ulp * max(M.max_abs(exact), 1.0) + M.EPS[t] * M.max_abs(exact)
        return self._add_unary(f"tl.{op}({a.name})", a, M.round_float(exact, t), t, err)

    def _add_unary(self, expr: str, a: Val, out: np.ndarray, t: str, err: float = 0.0) -> bool:
        self.add(expr, t, a.shape, out, err)
        return True

    def op_cast(self) -> bool:
        a = self.pick()
        dst = self.choose(M.ALL)
        if self.draw(st.integers(0, 3)) == 0 and a.exact and a.dtype != "i1":
            same = [t for t in M.ALL if M.BITS[t] == M.BITS[a.dtype] and t != "i1" and t != a.dtype]
            if not same:
                return False
            dst = self.choose(same)
            model = M.bitcast(a.model, a.dtype, dst)
            if M.is_float(dst) and not np.all(np.isfinite(model)):
                return False
            self.add(f"{a.name}.to({M.TL_NAME[dst]}, bitcast=True)", dst, a.shape, model)
            return True
        if a.err and not (M.is_float(dst)):
            return False
        model = M.convert(a.model, a.dtype, dst)
        if model is None:
            return False
        err = a.err
        if err and M.is_float(dst):
            err += M.EPS[dst] * M.max_abs(model)
        if M.is_float(dst) and (not np.all(np.isfinite(model)) or M.max_abs(model) > M.LIMIT[dst]):
            return False
        form = self.draw(st.integers(0, 1))
        expr = f"{a.name}.to({M.TL_NAME[dst]})" if form else f"tl.cast({a.name}, {M.TL_NAME[dst]})"
        self.add(expr, dst, a.shape, model, err)
        return True

    def op_where(self) -> bool:
        a = self.pick()
        c = self.pick(lambda v: v.dtype == "i1" and broadcastable(v.shape, a.shape))
        if c is None:
            return False
        use_literal = self.draw(st.booleans())
        b: Val | int | float | None = self.literal(self.choose(("i32", "f32"))) if use_literal else \
            self.pick(lambda v: broadcastable(v.shape, a.shape) and v.dtype != "i1")
        if b is None or a.dtype == "i1":
            return False
        literal = not isinstance(b, Val)
        if literal and a.dtype.startswith("u") and b < 0:
            return False
        bt = M.literal_type(b) if literal else b.dtype
        t = M.computation_type(a.dtype, bt, literal)
        shape = np.broadcast_shapes(a.shape, c.shape, () if literal else b.shape)
        rank = len(shape)
        x = M.convert(aligned(a, rank), a.dtype, t)
        if literal:
            y = M.round_float(np.asarray(float(b)), t) if M.is_float(t) else M.wrap(np.asarray(b).astype(object), t)
        else:
            y = M.convert(aligned(b, rank), b.dtype, t)
        if x is None or y is None:
            return False
        if (a.err or (not literal and b.err)) and not M.is_float(t):
            return False
        out = np.where(aligned(c, rank), x, y)
        out = np.broadcast_to(out, (self.grid,) + shape).copy()
        err = max(a.err, 0.0 if literal else b.err)
        if err and M.is_float(t):
            err += M.EPS[t] * M.max_abs(out)
        bs = b.name if isinstance(b, Val) else repr(b)
        self.add(f"tl.where({c.name}, {a.name}, {bs})", t, shape, out, err)
        return True

    # --------------------------------------------------------- reductions, scans
    def op_reduce(self) -> bool:
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return False
        kind = self.choose(("sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce_add", "reduce_max"))
        axis = self.draw(st.integers(0, len(a.shape) - 1))
        keep = self.draw(st.booleans())
        t, x = a.dtype, a.model
        n = a.shape[axis]
        if kind in ("argmax", "argmin", "xor_sum") and a.err:
            return False
        if kind == "sum":
            out_t = {"i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32", "i1": "i32"}.get(t, t)
            if M.is_float(t):
                exact = np.sum(x, axis=axis + 1)
                err = n * a.err
                if err or not M.order_free_sum(x, axis + 1, t):
                    err += n * M.EPS[t] * M.max_abs(np.sum(np.abs(x), axis=axis + 1)) + M.EPS[t] * M.max_abs(exact)
                res = self.checked_float(M.round_float(exact, t), t, err)
                if res is None:
                    return False
                out, err = res[0], res[2]
            else:
                src = x.astype(np.int64) if t == "i1" else x
                out, err = M.wrap(np.sum(M.as_objects(src), axis=axis + 1), out_t), 0.0
            expr = f"tl.sum({a.name}, axis={axis}" + (", keep_dims=True)" if keep else ")")
        elif kind in ("max", "min", "reduce_max"):
            if kind == "reduce_max" and t == "i1":
                return False
            widen = kind != "reduce_max" and M.BITS[t] < 32
            out_t = ("f32" if M.is_float(t) else "i32") if widen else t
            fn = np.max if kind != "min" else np.min
            out = fn(x, axis=axis + 1)
            out = out.astype(np.int32) if out_t == "i32" else out
            err = a.err
            expr = (f"tl.reduce({a.name}, {axis}, fz_max" if kind == "reduce_max" else f"tl.{kind}({a.name}, axis={axis}") \
                + (", keep_dims=True)" if keep else ")")
        elif kind in ("argmax", "argmin"):
            out_t = "i32"
            fn = np.argmax if kind == "argmax" else np.argmin
            out = fn(x.astype(np.int64) if t == "i1" else x, axis=axis + 1).astype(np.int32)
            err = 0.0
            expr = f"tl.{kind}({a.name}, axis={axis}" + (", keep_dims=True)" if keep else ")")
        elif kind == "xor_sum":
            if not M.is_int(t):
                return False
            out_t = t
            out = M.wrap(np.bitwise_xor.reduce(M.as_objects(x), axis=axis + 1), t)
            err = 0.0
            expr = f"tl.xor_sum({a.name}, axis={axis}" + (", keep_dims=True)" if keep else ")")
        else:  # reduce_add: the combine region keeps the dtype (no widening)
            if t == "i1" or (M.is_float(t) and (a.err or not M.order_free_sum(x, axis + 1, t))):
                return False
            out_t = t
            if M.is_float(t):
                out, err = M.round_float(np.sum(x, axis=axis + 1), t), 0.0
            else:
                out, err = M.wrap(np.sum(M.as_objects(x), axis=axis + 1), t), 0.0
            expr = f"tl.reduce({a.name}, {axis}, fz_add" + (", keep_dims=True)" if keep else ")")
        shape = tuple(s for i, s in enumerate(a.shape) if i != axis)
        if keep:
            shape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
            out = np.expand_dims(out, axis + 1)
        self.add(expr, out_t, shape, np.asarray(out).reshape((self.grid,) + shape), err)
        return True

    def op_scan(self) -> bool:
        a = self.pick(lambda v: len(v.shape) >= 1 and v.dtype != "i1")
        if a is None:
            return False
        kind = self.choose(("cumsum", "cumprod", "scan_add", "scan_max"))
        axis = self.draw(st.integers(0, len(a.shape) - 1))
        reverse = self.draw(st.booleans())
        t, x = a.dtype, a.model
        ax = axis + 1
        flip = (lambda m: np.flip(m, ax)) if reverse else (lambda m: m)
        err = 0.0
        if kind == "cumsum":
            out_t = {"i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32", "bf16": "f32"}.get(t, t)
        elif kind == "cumprod":
            out_t = "f32" if t == "bf16" else t
        else:
            out_t = t
        if kind == "scan_max":
            out = flip(np.maximum.accumulate(flip(x), axis=ax))
            err = a.err
        elif M.is_int(t):
            acc = np.cumsum if kind in ("cumsum", "scan_add") else np.cumprod
            out = M.wrap(flip(acc(flip(M.as_objects(x)), axis=ax)), out_t)
        else:
            if a.err:
                return False
            if kind == "cumprod":
                mags = np.abs(x[x != 0])
                if mags.size and not np.all(np.exp2(np.round(np.log2(mags))) == mags):
                    return False  # only powers of two multiply exactly in every order
                out = flip(np.cumprod(flip(x), axis=ax))
                if np.any((out != 0) & (np.abs(out) < 2.0**-14)):
                    return False
            else:
                out = flip(np.cumsum(flip(x), axis=ax))
                if not M.order_free_sum(x, ax, out_t):
                    err = a.shape[axis] * M.EPS[out_t] * M.max_abs(np.sum(np.abs(x), axis=ax)) + \
                        M.EPS[out_t] * M.max_abs(out)
            res = self.checked_float(M.round_float(out, out_t), out_t, err)
            if res is None:
                return False
            out, err = res[0], res[2]
        rev = ", reverse=True" if reverse else ""
        if kind in ("cumsum", "cumprod"):
            expr = f"tl.{kind}({a.name}, axis={axis}{rev})"
        else:
            fn = "fz_add" if kind == "scan_add" else "fz_max"
            expr = f"tl.associative_scan({a.name}, {axis}, {fn}{rev})"
        self.add(expr, out_t, a.shape, np.asarray(out), err)
        return True

    # ------------------------------------------------------------------- shapes
    def op_shape(self) -> bool:
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return False
        kind = self.choose(("reshape", "trans", "permute", "expand_dims", "index_none", "broadcast_to", "join",
                            "split"))
        rank = len(a.shape)
        g = (self.grid,)
        if kind == "reshape":
            numel = int(np.prod(a.shape))
            new_rank = self.draw(st.integers(1, 3))
            shape = factor(numel, new_rank, self.draw(st.integers(0, 1 << 20)))
            dims = ", ".join(map(str, shape))
            form = self.draw(st.integers(0, 1))
            expr = f"tl.reshape({a.name}, ({dims},))" if form else f"{a.name}.reshape({dims})"
            self.add(expr, a.dtype, shape, a.model.reshape(g + shape), a.err)
        elif kind == "trans":
            if rank != 2:
                return False
            expr = self.choose((f"tl.trans({a.name})", f"{a.name}.T", f"tl.trans({a.name}, 1, 0)"))
            self.add(expr, a.dtype, a.shape[::-1], np.swapaxes(a.model, 1, 2).copy(), a.err)
        elif kind == "permute":
            if rank < 2:
                return False
            perm = tuple(self.draw(st.permutations(range(rank))))
            shape = tuple(a.shape[p] for p in perm)
            self.add(f"tl.permute({a.name}, {perm})", a.dtype, shape,
                     np.transpose(a.model, (0,) + tuple(p + 1 for p in perm)).copy(), a.err)
        elif kind == "expand_dims":
            if rank >= 3:
                return False
            axis = self.draw(st.integers(0, rank))
            shape = a.shape[:axis] + (1,) + a.shape[axis:]
            self.add(f"tl.expand_dims({a.name}, {axis})", a.dtype, shape, np.expand_dims(a.model, axis + 1), a.err)
        elif kind == "index_none":
            if rank != 1:
                return False
            if self.draw(st.booleans()):
                self.add(f"{a.name}[:, None]", a.dtype, a.shape + (1,), a.model[:, :, None], a.err)
            else:
                self.add(f"{a.name}[None, :]", a.dtype, (1,) + a.shape, a.model[:, None, :], a.err)
        elif kind == "broadcast_to":
            ones = [i for i, s in enumerate(a.shape) if s == 1]
            if not ones or int(np.prod(a.shape)) > 64:
                return False
            shape = tuple(self.choose((2, 4, 8)) if s == 1 else s for s in a.shape)
            dims = ", ".join(map(str, shape))
            self.add(f"tl.broadcast_to({a.name}, ({dims},))", a.dtype, shape,
                     np.broadcast_to(a.model, g + shape).copy(), a.err)
        elif kind == "join":
            b = self.pick(lambda v: v.shape == a.shape and v.dtype == a.dtype)
            if rank >= 3 or b is None:
                return False
            self.add(f"tl.join({a.name}, {b.name})", a.dtype, a.shape + (2,), np.stack([a.model, b.model], -1),
                     max(a.err, b.err))
        else:
            if a.shape[-1] != 2:
                return False
            lo, hi = self.fresh(), self.fresh()
            shape = a.shape[:-1]
            self.emit(f"{lo}, {hi} = tl.split({a.name})")
            self.pool.append(Val(lo, a.dtype, shape, a.model[..., 0].copy(), a.err))
            self.pool.append(Val(hi, a.dtype, shape, a.model[..., 1].copy(), a.err))
        return True

    # ------------------------------------------------------------- more tl ops
    def op_extra(self) -> bool:
        """fma, clamp, umulhi, flip, ravel, interleave, sort and topk."""
        kind = self.choose(("fma", "clamp", "umulhi", "flip", "ravel", "interleave", "sort", "topk"))
        a = self.pick(lambda v: v.exact and v.dtype != "i1" and len(v.shape) >= 1)
        if a is None:
            return False
        t = a.dtype
        same = self.pick(lambda v: v.dtype == t and v.shape == a.shape and v.exact)
        if kind == "fma":
            c = self.pick(lambda v: v.dtype == t and v.shape == a.shape and v.exact)
            if t not in ("f32", "f64") or same is None or c is None:
                return False
            res = self.checked_float(M.round_float(a.model * same.model + c.model, t), t, 0.0)
            if res is None:
                return False
            self.add(f"tl.fma({a.name}, {same.name}, {c.name})", t, a.shape, res[0])
        elif kind == "clamp":
            if not M.is_float(t):
                return False
            lo, hi = sorted((self.literal(t), self.literal(t)))
            model = np.minimum(np.maximum(a.model, M.round_float(np.float64(lo), t)), M.round_float(np.float64(hi), t))
            self.add(f"tl.clamp({a.name}, {lo}, {hi})", t, a.shape, model)
        elif kind == "umulhi":
            if t not in ("i32", "u32", "i64", "u64") or same is None:
                return False
            bits = M.BITS[t]
            unsigned = "u" + t[1:] if t.startswith("i") else t  # the high half of the unsigned product
            high = (M.as_objects(M.wrap(M.as_objects(a.model), unsigned)) *
                    M.as_objects(M.wrap(M.as_objects(same.model), unsigned))) >> bits
            self.add(f"tl.umulhi({a.name}, {same.name})", t, a.shape, M.wrap(high, t))
        elif kind == "flip":
            dim = self.draw(st.integers(0, len(a.shape) - 1))
            self.add(f"tl.flip({a.name}, {dim})", t, a.shape, np.flip(a.model, dim + 1).copy())
        elif kind == "ravel":
            numel = int(np.prod(a.shape))
            self.add(f"tl.ravel({a.name})", t, (numel,), a.model.reshape(self.grid, numel))
        elif kind == "interleave":
            if same is None:
                return False
            shape = a.shape[:-1] + (2 * a.shape[-1],)
            model = np.stack([a.model, same.model], -1).reshape((self.grid,) + shape)
            self.add(f"tl.interleave({a.name}, {same.name})", t, shape, model)
        else:
            descending = self.draw(st.booleans())
            ordered = np.sort(a.model, axis=-1)
            ordered = np.flip(ordered, -1).copy() if descending or kind == "topk" else ordered
            if kind == "sort":
                self.add(f"tl.sort({a.name}, descending={descending})", t, a.shape, ordered)
            else:
                k = 1 << self.draw(st.integers(0, int(a.shape[-1]).bit_length() - 1))
                shape = a.shape[:-1] + (k,)
                out_t = t
                if k < a.shape[-1] and M.BITS[t] < 32:  # its candidates pass through tl.max, which widens
                    out_t = "f32" if M.is_float(t) else "i32"
                self.add(f"tl.topk({a.name}, {k})", out_t, shape, M.convert(ordered[..., :k], t, out_t))
        return True

    # ------------------------------------------------------------------ stores
    def store(self, v: Val) -> None:
        numel = int(np.prod(v.shape, dtype=np.int64))
        poison = self.random_data(v.dtype, self.grid * numel)
        buf = self.new_buffer(v.dtype, self.grid * numel, poison)
        ptr = f"{buf.name} + tl.program_id(0) * {numel}"
        expected = v.model.reshape(self.grid, numel).copy()
        before = M.from_storage(poison, v.dtype).reshape(self.grid, numel)
        if v.shape and self.draw(st.booleans()):
            offs = offsets(v.shape)
            keep = np.arange(numel) < self.n
            expected = np.where(keep, expected, before)
            self.emit(f"tl.store({ptr} + ({offs}), {v.name}, mask=({offs}) < n)")
        elif v.shape:
            self.emit(f"tl.store({ptr} + ({offsets(v.shape)}), {v.name})")
        else:
            self.emit(f"tl.store({ptr}, {v.name})")
        buf.expected = expected.reshape(-1)
        buf.err = v.err


OPS = {"binary": Generator.op_binary, "unary": Generator.op_unary, "cast": Generator.op_cast,
       "where": Generator.op_where, "reduce": Generator.op_reduce, "scan": Generator.op_scan,
       "shape": Generator.op_shape, "loop": Generator.op_loop, "if": Generator.op_if, "dot": Generator.op_dot,
       "load_loop": Generator.op_load_loop, "extra": Generator.op_extra,
       "while_data": Generator.op_while_data,
       "atomic": Generator.op_atomic}  # fmt: skip


@st.composite
def programs(draw: Callable[[st.SearchStrategy], Any], max_ops: int = 14, kinds: tuple[str, ...] = tuple(OPS)) -> Program:
    """A random kernel, its launch arguments, and the memory its outputs must hold afterwards."""
    grid = draw(st.sampled_from([1, 2]))
    gen = Generator(draw, grid, draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 2))):
        gen.load()
    steps = draw(st.integers(1, max_ops))
    for _ in range(steps):
        kind = draw(st.sampled_from(list(kinds) + ["load"]))
        if kind == "load":
            gen.load()
            gen.ops.append("load")
        elif OPS[kind](gen):
            gen.ops.append(kind)
    made = [v for v in gen.pool if v.name != "alpha"]
    chosen = made[-2:] + [v for v in made[:-2] if draw(st.integers(0, 3)) == 0]
    for v in chosen:
        gen.store(v)
    params = [b.name for b in gen.buffers] + ["n", "iters", "alpha"]
    source = HEADER + f"def kernel({', '.join(params)}):\n" + "\n".join(gen.lines) + "\n"
    scalars = {"n": gen.n, "iters": gen.iters, "alpha": gen.alpha}
    return Program(source, grid, gen.buffers, scalars, params, draw(st.sampled_from([4, 1, 2, 8])),
                   draw(st.sampled_from([3, 1, 2, 4])), gen.ops)
