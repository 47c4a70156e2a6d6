"""The generator's ops on control flow and memory: loops and ifs with carried values, dots,
loops over memory (what software pipelining rewrites), and atomics. Mixed into
fuzz.programs.Generator, whose helpers (pick, choose, add, load, binary_model...) they use."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from hypothesis import strategies as st

from fuzz import model as M
from fuzz.values import Val, offsets

DOT_TYPES = ("f16", "bf16", "f32", "i8")
ATOMIC_TYPES = {"add": ("i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"),
                "max": ("i32", "u32", "i64", "u64", "f32", "f64"), "min": ("i32", "u32", "i64", "u64", "f32", "f64"),
                "xchg": ("i32", "u32", "i64", "u64", "f32", "f64"),
                "cas": ("i16", "u16", "i32", "u32", "i64", "u64")}  # fmt: skip


class ControlAndMemoryOps:
    """Ops of fuzz.programs.Generator (a mixin: `self` is the Generator)."""

    draw: Any
    grid: int
    iters: int
    n: int
    pool: list[Val]

    # ------------------------------------------------------------- control flow
    def carried_step(self, acc: Val) -> Optional[tuple[str, Val | int | float]]:
        """An op and operand that keep acc's dtype and shape: acc = acc op operand."""
        op = self.choose(("+", "-", "*", "^", "max", "min"))
        if self.draw(st.booleans()):
            b: Val | int | float | None = self.pick(lambda v: v.dtype == acc.dtype and v.shape == acc.shape)
        else:
            b = self.literal(acc.dtype)
        if b is None:
            return None
        return op, b

    def op_loop(self) -> bool:
        init = self.pick(lambda v: v.dtype != "i1" and v.name != "alpha")
        if init is None:
            return False
        step = self.carried_step(init)
        if step is None:
            return False
        op, b = step
        kind = self.choose(("range", "static_range", "while", "range_literal", "nested"))
        inner = self.draw(st.integers(1, 2))
        trips = {"range": self.iters, "while": self.iters, "nested": self.iters * inner}.get(kind) \
            if kind in ("range", "while", "nested") else self.draw(st.integers(0, 3))
        acc = Val(init.name, init.dtype, init.shape, init.model, init.err)
        for _ in range(trips):
            res = self.binary_model(op, acc, b)
            if res is None or res[1] != init.dtype:
                return False
            acc = Val(init.name, init.dtype, init.shape, np.broadcast_to(res[0], init.model.shape).copy(), res[2])
        if trips == 0 and self.binary_model(op, acc, b) is None:
            return False
        name = self.fresh("acc")
        bs = b.name if isinstance(b, Val) else repr(b)
        body = f"tl.{op}imum({name}, {bs})" if op in ("max", "min") else f"{name} {op} {bs}"
        self.emit(f"{name} = {init.name}")
        if kind == "while":
            k = self.fresh("k")
            self.emit(f"{k} = 0")
            self.emit(f"while {k} < iters:")
            self.emit(f"    {name} = {body}")
            self.emit(f"    {k} += 1")
        elif kind == "nested":
            self.emit("for _ in range(0, iters):")
            self.emit(f"    for _ in tl.static_range({inner}):")
            self.emit("        if iters > 0:")
            self.emit(f"            {name} = {body}")
        else:
            head = {"range": "range(0, iters)", "static_range": f"tl.static_range({trips})",
                    "range_literal": f"range({trips})"}[kind]
            self.emit(f"for _ in {head}:")
            self.emit(f"    {name} = {body}")
        self.pool.append(Val(name, init.dtype, init.shape, acc.model, acc.err))
        return True

    def op_if(self) -> bool:
        init = self.pick(lambda v: v.dtype != "i1" and v.name != "alpha")
        if init is None:
            return False
        step = self.carried_step(init)
        if step is None:
            return False
        op, b = step
        res = self.binary_model(op, init, b)
        if res is None or res[1] != init.dtype:
            return False
        kind = self.draw(st.integers(0, 2))
        pids = np.arange(self.grid)
        if kind == 0:
            cond, taken = "tl.program_id(0) == 0", pids == 0
        elif kind == 1:
            cond, taken = "tl.program_id(0) % 2 == 1", pids % 2 == 1
        else:
            limit = self.choose((0, 5, 50))
            cond, taken = f"n > {limit}", np.full(self.grid, self.n > limit)
        name = self.fresh("c")
        bs = b.name if isinstance(b, Val) else repr(b)
        body = f"tl.{op}imum({name}, {bs})" if op in ("max", "min") else f"{name} {op} {bs}"
        other = self.carried_step(init) if self.draw(st.booleans()) else None
        otherwise = self.binary_model(other[0], init, other[1]) if other is not None else None
        if otherwise is not None and otherwise[1] != init.dtype:
            otherwise = None
        self.emit(f"{name} = {init.name}")
        self.emit(f"if {cond}:")
        self.emit(f"    {name} = {body}")
        not_taken, err = init.model, max(res[2], init.err)
        if otherwise is not None:
            op2, b2 = other
            bs2 = b2.name if isinstance(b2, Val) else repr(b2)
            self.emit("else:")
            self.emit(f"    {name} = " + (f"tl.{op2}imum({name}, {bs2})" if op2 in ("max", "min") else
                                         f"{name} {op2} {bs2}"))
            not_taken, err = np.broadcast_to(otherwise[0], init.model.shape), max(err, otherwise[2])
        stepped = np.broadcast_to(res[0], init.model.shape)
        model = np.where(taken.reshape((self.grid,) + (1,) * len(init.shape)), stepped, not_taken)
        self.pool.append(Val(name, init.dtype, init.shape, model, err))
        return True

    def op_while_data(self) -> bool:
        """A while loop whose trip count depends on the data (and so differs between programs):
        w = s; while w > limit: w = w - step, for a scalar integer s."""
        s = self.pick(lambda v: v.shape == () and M.is_int(v.dtype))
        if s is None:
            return False
        limit, step = self.draw(st.integers(0, 20)), self.draw(st.integers(1, 7))
        trips, finals = [], []
        for value in s.model.tolist():
            count = 0
            while value > limit and count <= 8:  # w - step wraps in w's type (an unsigned w below step too)
                value, count = int(M.wrap(np.array(value - step, dtype=object), s.dtype)), count + 1
            trips.append(count)
            finals.append(value)
        if max(trips) > 8:
            return False
        name = self.fresh("w")
        wrapped = M.wrap(np.array(finals, dtype=object), s.dtype)
        self.emit(f"{name} = {s.name}")
        self.emit(f"while {name} > {limit}:")
        self.emit(f"    {name} = {name} - {step}")
        self.pool.append(Val(name, s.dtype, (), wrapped))
        return True

    # -------------------------------------------------------------------- dot
    def op_dot(self) -> bool:
        t = self.choose(DOT_TYPES)
        m, n, k = (self.choose((16, 32)) for _ in range(3))
        a = self.pick(lambda v: v.dtype == t and len(v.shape) == 2 and v.shape[0] >= 16 and v.shape[1] >= 16
                      and v.exact and M.max_abs(v.model) <= 8) or self.load(t, (m, k), small=True)
        k = a.shape[1]
        b = self.pick(lambda v: v.dtype == t and len(v.shape) == 2 and v.shape[0] == k and v.shape[1] >= 16
                      and v.exact and M.max_abs(v.model) <= 8) or self.load(t, (k, n), small=True)
        out_t = "i32" if t == "i8" else "f32"
        precision = ""
        if t == "f32":
            tf32 = M.fraction_bits(np.concatenate([a.model.ravel(), b.model.ravel()]))
            precision = ', input_precision="ieee"' if tf32 is None or tf32 > 4 or self.draw(st.booleans()) else ""
        if t == "i8":
            prod = np.matmul(a.model.astype(np.int64), b.model.astype(np.int64))
            out = M.wrap(prod.astype(object), "i32")
            err = 0.0
        else:
            terms = a.model[:, :, :, None] * b.model[:, None, :, :]
            exact = np.matmul(a.model, b.model)
            err = 0.0 if M.order_free_sum(terms, 2, "f32") else \
                k * M.EPS["f32"] * M.max_abs(np.abs(a.model) @ np.abs(b.model))
            out = M.round_float(exact, "f32")
        acc = self.pick(lambda v: v.dtype == out_t and v.shape == (a.shape[0], b.shape[1]) and v.exact) \
            if self.draw(st.booleans()) else None
        args = f"{a.name}, {b.name}"
        if acc is not None:
            if t == "i8":
                out = M.wrap(M.as_objects(out) + M.as_objects(acc.model), "i32")
            else:
                exact = exact + acc.model
                if err or not M.order_free_sum(np.concatenate([terms, acc.model[:, :, None, :]], axis=2), 2, "f32"):
                    err = (k + 1) * M.EPS["f32"] * (M.max_abs(np.abs(a.model) @ np.abs(b.model)) + M.max_abs(acc.model))
                out = M.round_float(exact, "f32")
            args += f", {acc.name}"
        self.add(f"tl.dot({args}{precision})", out_t, (a.shape[0], b.shape[1]), out, err)
        return True

    def op_load_loop(self) -> bool:
        """A loop over `iters` blocks of memory (what software pipelining rewrites): an
        elementwise accumulation of loads, or a dot of loaded tiles into an accumulator."""
        dot = self.draw(st.booleans())
        trips = max(self.iters, 1)
        acc_name, k = self.fresh("acc"), self.fresh("k")
        if dot:
            t = self.choose(DOT_TYPES)
            m, n, kk = (self.choose((16, 32, 64)) for _ in range(3))
            out_t = "i32" if t == "i8" else "f32"
            a = self.new_buffer(t, 0, self.random_data(t, self.grid * trips * m * kk, small=True))
            b = self.new_buffer(t, 0, self.random_data(t, self.grid * trips * kk * n, small=True))
            am = M.from_storage(a.init, t).reshape(self.grid, trips, m, kk)[:, :self.iters]
            bm = M.from_storage(b.init, t).reshape(self.grid, trips, kk, n)[:, :self.iters]
            prod = np.einsum("gimk,gikn->gmn", am.astype(np.float64), bm.astype(np.float64))
            model = M.wrap(prod.astype(np.int64).astype(object), "i32") if t == "i8" else M.round_float(prod, "f32")
            precision = ', input_precision="ieee"' if t == "f32" else ""
            self.emit(f"{acc_name} = tl.zeros(({m}, {n}), {M.TL_NAME[out_t]})")
            self.emit(f"for {k} in range(0, iters):")
            pa = f"{a.name} + (tl.program_id(0) * {trips} + {k}) * {m * kk} + ({offsets((m, kk))})"
            pb = f"{b.name} + (tl.program_id(0) * {trips} + {k}) * {kk * n} + ({offsets((kk, n))})"
            self.emit(f"    {acc_name} = tl.dot(tl.load({pa}), tl.load({pb}), {acc_name}{precision})")
            self.pool.append(Val(acc_name, out_t, (m, n), model))
            return True
        init = self.pick(lambda v: v.dtype != "i1" and v.name != "alpha" and len(v.shape) >= 1 and v.exact)
        if init is None:
            return False
        t, shape = init.dtype, init.shape
        numel = int(np.prod(shape))
        buf = self.new_buffer(t, 0, self.random_data(t, self.grid * trips * numel, small=True))
        data = M.from_storage(buf.init, t).reshape((self.grid, trips) + shape)[:, :self.iters]
        keep = np.arange(numel).reshape(shape) < self.n
        data = np.where(keep, data, np.zeros((), data.dtype))
        if M.is_float(t):
            model = init.model.copy()
            for i in range(self.iters):
                model = M.round_float(model + data[:, i], t)
            if not np.all(np.isfinite(model)) or M.max_abs(model) > M.LIMIT[t]:
                return False
        else:
            model = M.wrap(M.as_objects(init.model) + np.sum(M.as_objects(data), axis=1), t)
        offs = offsets(shape)
        ptr = f"{buf.name} + (tl.program_id(0) * {trips} + {k}) * {numel} + ({offs})"
        self.emit(f"{acc_name} = {init.name}")
        if self.draw(st.booleans()):
            self.emit(f"for {k} in range(0, iters):")
            self.emit(f"    {acc_name} += tl.load({ptr}, mask=({offs}) < n, other=0)")
        else:  # the pointer itself is carried and advanced
            cursor = self.fresh("ptr")
            self.emit(f"{cursor} = {buf.name} + tl.program_id(0) * {trips * numel} + ({offs})")
            self.emit(f"for {k} in range(0, iters):")
            self.emit(f"    {acc_name} += tl.load({cursor}, mask=({offs}) < n, other=0)")
            self.emit(f"    {cursor} += {numel}")
        self.pool.append(Val(acc_name, t, shape, model))
        return True

    # ----------------------------------------------------------------- atomics
    def op_atomic(self) -> bool:
        kind = self.choose(tuple(ATOMIC_TYPES))
        t = self.choose(ATOMIC_TYPES[kind])
        v = self.pick(lambda x: x.dtype == t and len(x.shape) in (1, 2) and x.exact) or self.load(t, (self.choose(
            (4, 32, 128)),))
        shape, numel = v.shape, int(np.prod(v.shape))
        offs = offsets(shape)
        init = self.random_data(t, self.grid * numel)
        old = M.from_storage(init, t).reshape((self.grid,) + shape)
        cmp = None
        if kind == "cas":
            cmp = self.pick(lambda x: x.dtype == t and x.shape == shape and x.exact)
            if cmp is None:
                return False
            hit = self.rng.random(old.shape) < 0.5
            old = np.where(hit, cmp.model, old)
            init = M.to_storage(old.reshape(-1), t)
        buf = self.new_buffer(t, init.size, init)
        masked = kind != "cas" and self.draw(st.booleans())
        keep = np.broadcast_to(np.arange(numel).reshape(shape) < self.n, old.shape) if masked else \
            np.ones(old.shape, bool)
        if kind == "add":
            if M.is_float(t):
                new = M.round_float(old + v.model, t)
            else:
                new = M.wrap(M.as_objects(old) + M.as_objects(v.model), t)
        elif kind == "max":
            new = np.maximum(old, v.model)
        elif kind == "min":
            new = np.minimum(old, v.model)
        elif kind == "xchg":
            new = v.model.copy()
        else:
            new = np.where(old == cmp.model, v.model, old)
        final = np.where(keep, new, old)
        buf.expected = final.reshape(-1)
        ptr = f"{buf.name} + tl.program_id(0) * {numel} + ({offs})"
        mask = f", mask=({offs}) < n" if masked else ""
        if kind == "cas":
            expr = f"tl.atomic_cas({ptr}, {cmp.name}, {v.name})"
        else:
            expr = f"tl.atomic_{kind}({ptr}, {v.name}{mask})"
        returned = self.add(expr, t, shape, old.copy())
        if masked:
            # Masked-off lanes return no defined value: keep only the lanes that ran.
            zero = "0.0" if M.is_float(t) else "0"
            returned.model = np.where(keep, old, np.zeros((), old.dtype))
            self.add(f"tl.where(({offs}) < n, {returned.name}, {zero})", t, shape, returned.model)
            self.pool.remove(returned)
        return True
