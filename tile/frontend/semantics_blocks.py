"""Semantics of the block-level operations: program ids, block constructors, memory, atomics,
dot, reductions and scans, debug ops and hints. Mixed into `Semantic` (semantics.py), whose
casting, broadcasting and arithmetic these methods use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from tile.ir.core import Block, Operation, Region
from tile.ir.float8 import is_float8_variant
from tile.ir.types import DType, PointerType, TensorType, Type, bf16, f16, f32, f64, i1, i8, i32, u8, with_element

from .core import TRITON_MAX_TENSOR_NUMEL, tensor, to_dtype

if TYPE_CHECKING:
    from .semantics import Semantic

LOAD_CACHE = ("", ".ca", ".cg", ".cv")
STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
EVICTION = ("", "evict_normal", "evict_first", "evict_last")
SEMANTICS = ("acq_rel", "acquire", "release", "relaxed")
SCOPES = ("gpu", "cta", "sys")
INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _choice(what: str, value: Any, allowed: Sequence[str]) -> str:
    value = "" if value is None else value
    if value not in allowed:
        raise ValueError(f"{what} must be one of {[a for a in allowed if a]}, got {value!r}")
    return value


def _is_amd(target: str) -> bool:
    """Whether `target` is an AMD one. PTX targets take every fp8 dot (through f16 where mma has
    none), so the AMD package, ~0.2 s to import, is imported for AMD targets only."""
    from tile.codegen.target import TARGETS

    facts = TARGETS.get(target)
    return facts is not None and facts.isa == "amdgcn"


class BlockOps:
    """Block constructors, memory, dot, reductions, debug: methods of `Semantic`."""

    # ------------------------------------------------------------------ program
    def program_id(self: "Semantic", axis: Any) -> tensor:
        if axis not in (0, 1, 2):
            raise ValueError(f"program_id axis must be 0, 1 or 2, got {axis!r}")
        return self.op("tt.program_id", [], i32, axis=axis)

    def num_programs(self: "Semantic", axis: Any) -> tensor:
        if axis not in (0, 1, 2):
            raise ValueError(f"num_programs axis must be 0, 1 or 2, got {axis!r}")
        return self.op("tt.num_programs", [], i32, axis=axis)

    # ------------------------------------------------------------- constructors
    def arange(self: "Semantic", start: Any, end: Any) -> tensor:
        if isinstance(start, tensor) or isinstance(end, tensor):
            raise TypeError("arange's bounds must be compile-time constants (tl.constexpr), not runtime values")
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
            raise TypeError(f"arange's bounds must be integers, got {start!r} and {end!r}")
        if start >> 31 or end >> 31 or start < 0:
            raise ValueError(f"arange's bounds must fit in int32 and be non-negative, got {start} and {end}")
        if end <= start:
            raise ValueError(f"arange needs end > start, got arange({start}, {end})")
        if not _is_pow2(end - start):
            raise ValueError(f"arange's length must be a power of 2, got {end - start} (arange({start}, {end}))")
        if end - start > TRITON_MAX_TENSOR_NUMEL:
            raise ValueError(f"arange({start}, {end}): end - start must be less than or equal to "
                             f"TRITON_MAX_TENSOR_NUMEL = {TRITON_MAX_TENSOR_NUMEL}")
        return self.op("tt.arange", [], TensorType((end - start,), i32), start=start, end=end)

    def block_shape(self: "Semantic", shape: Any) -> tuple[int, ...]:
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        for i, d in enumerate(shape):
            if isinstance(d, tensor):
                raise TypeError("block shapes must be compile-time constants, not runtime values")
            if not isinstance(d, int) or isinstance(d, bool) or not _is_pow2(d):
                raise ValueError(f"shape {list(shape)}: dimension {i} must be a power of 2, got {d!r}")
        return shape

    def full(self: "Semantic", shape: Any, value: Any, dtype: "DType | PointerType") -> tensor:
        shape = self.block_shape(shape)
        t = TensorType(shape, dtype) if shape else dtype
        if not isinstance(value, tensor):
            return self.constant(value, t)
        if value.is_block():
            raise ValueError(f"full: the value must be a scalar, got a block of shape {list(value.shape)}")
        return self.splat(self.cast(value, dtype), shape)

    # ------------------------------------------------------------------- memory
    def _pointer(self: "Semantic", ptr: Any, what: str, writes: bool = False) -> tensor:
        if not isinstance(ptr, tensor) or not isinstance(ptr.element, PointerType):
            from .semantics import describe

            raise TypeError(f"{what} expects a pointer (or a block of pointers), got {describe(ptr)}")
        if writes and ptr.element.const:
            raise ValueError(f"{what}: cannot write through a pointer to constant data (a tl.const parameter, or a "
                             f"pointer computed from one)")
        return ptr

    def _mask(self: "Semantic", mask: Any, shape: tuple[int, ...], what: str) -> tensor:
        mask = self.to_tensor(mask)
        if mask.element != i1:
            raise TypeError(f"{what}: the mask must be a boolean (int1) value, got {to_dtype(mask.element)!r}")
        if mask.is_block() and not shape:
            raise ValueError(f"{what}: a block mask needs a block of pointers")
        return self.broadcast_to(mask, shape)

    def _value_for(self: "Semantic", value: Any, elt: Any, shape: tuple[int, ...], what: str) -> tensor:
        """`value` converted to the pointee type `elt` and broadcast to the pointer's shape."""
        if not isinstance(value, tensor):
            value = self.constant(value, TensorType(shape, elt) if shape else elt)
        if isinstance(value.element, PointerType) != isinstance(elt, PointerType):
            verb = "store a value" if what == "tl.store" else "use a value"
            raise TypeError(f"{what}: cannot {verb} of type {to_dtype(value.element)!r} with a pointer to "
                            f"{to_dtype(elt)!r}")
        if value.is_block() and not shape:
            raise ValueError(f"{what}: a block value (shape {list(value.shape)}) needs a block of pointers")
        return self.cast(self.broadcast_to(value, shape), elt)

    def load(self: "Semantic", ptr: Any, mask: Any = None, other: Any = None, cache_modifier: Any = "",
             eviction_policy: Any = "", volatile: bool = False) -> tensor:
        ptr = self._pointer(ptr, "tl.load")
        cache = _choice("cache_modifier", cache_modifier, LOAD_CACHE)
        eviction = _choice("eviction_policy", eviction_policy, EVICTION)
        if mask is None and other is not None:
            raise ValueError("tl.load: `other` needs a `mask`")
        operands = [ptr]
        if mask is not None:
            m = self.to_tensor(mask)
            if m.is_block() and ptr.is_block():
                ptr, m = self.broadcast_values(ptr, m)
            operands = [ptr, self._mask(m, ptr.shape, "tl.load")]
        elt = ptr.element.pointee
        if other is not None:
            if isinstance(other, tensor) and other.is_block() and ptr.is_block() and other.shape != ptr.shape:
                ptr, _ = self.broadcast_values(ptr, other)
                operands = [ptr, self._mask(operands[1], ptr.shape, "tl.load")]
            operands.append(self._value_for(other, elt, ptr.shape, "tl.load `other`"))
        attrs: dict[str, Any] = {}
        if cache:
            attrs["cache"] = cache
        if eviction:
            attrs["eviction"] = eviction
        if volatile:
            attrs["volatile"] = True
        return self.op("tt.load", operands, with_element(ptr.ir_type, elt), **attrs)

    def store(self: "Semantic", ptr: Any, value: Any, mask: Any = None, cache_modifier: Any = "",
              eviction_policy: Any = "") -> None:
        ptr = self._pointer(ptr, "tl.store", writes=True)
        cache = _choice("cache_modifier", cache_modifier, STORE_CACHE)
        eviction = _choice("eviction_policy", eviction_policy, EVICTION)
        operands = [ptr, self._value_for(value, ptr.element.pointee, ptr.shape, "tl.store")]
        if mask is not None:
            operands.append(self._mask(mask, ptr.shape, "tl.store"))
        attrs: dict[str, Any] = {}
        if cache:
            attrs["cache"] = cache
        if eviction:
            attrs["eviction"] = eviction
        self.builder.create("tt.store", [t.handle for t in operands], [], attrs)

    def atomic_rmw(self: "Semantic", kind: str, ptr: Any, value: Any, mask: Any, sem: Any, scope: Any) -> tensor:
        what = f"tl.atomic_{kind}"
        ptr = self._pointer(ptr, what, writes=True)
        elt = ptr.element.pointee
        if isinstance(elt, PointerType) or elt.bits < 16 or elt.name in ("i16", "u16"):
            raise TypeError(f"{what} does not support {to_dtype(elt)!r}")
        if elt in (f16, bf16) and kind != "add":
            raise TypeError(f"{what} does not support {to_dtype(elt)!r} (only atomic_add does)")
        if kind in ("and", "or", "xor") and not elt.is_integer:
            raise TypeError(f"{what} needs an integer pointee, got {to_dtype(elt)!r}")
        sem = _choice("sem", sem or "acq_rel", SEMANTICS)
        scope = _choice("scope", scope or "gpu", SCOPES)
        operands = [ptr, self._value_for(value, elt, ptr.shape, what)]
        if mask is not None:
            operands.append(self._mask(mask, ptr.shape, what))
        return self.op("tt.atomic_rmw", operands, with_element(ptr.ir_type, elt), kind=kind, sem=sem, scope=scope)

    def atomic_cas(self: "Semantic", ptr: Any, cmp: Any, value: Any, sem: Any, scope: Any) -> tensor:
        ptr = self._pointer(ptr, "tl.atomic_cas", writes=True)
        elt = ptr.element.pointee
        if isinstance(elt, PointerType) or elt.bits not in (16, 32, 64):
            raise TypeError(f"tl.atomic_cas supports 16-, 32- and 64-bit elements, got {to_dtype(elt)!r}")
        sem = _choice("sem", sem or "acq_rel", SEMANTICS)
        scope = _choice("scope", scope or "gpu", SCOPES)
        for name, operand in (("cmp", cmp), ("val", value)):
            # Triton refuses a tensor of another type here rather than converting it: a compare
            # after an implicit cast can never match (1.5 cast to int), so say so instead.
            if isinstance(operand, tensor) and operand.element != elt:
                raise TypeError(f"tl.atomic_cas: {name} is {to_dtype(operand.element)!r} but the pointer points "
                                f"to {to_dtype(elt)!r}; convert it first with .to({to_dtype(elt)!r})")
        operands = [ptr, self._value_for(cmp, elt, ptr.shape, "tl.atomic_cas"),
                    self._value_for(value, elt, ptr.shape, "tl.atomic_cas")]
        return self.op("tt.atomic_cas", operands, with_element(ptr.ir_type, elt), sem=sem, scope=scope)

    # ---------------------------------------------------------------------- dot
    def dot(self: "Semantic", a: Any, b: Any, acc: Any, input_precision: Optional[str],
            max_num_imprecise_acc: Optional[int], out_dtype: "DType") -> tensor:
        for name, x in (("first", a), ("second", b)):
            if not isinstance(x, tensor) or len(x.shape) != 2:
                from .semantics import describe

                raise ValueError(f"tl.dot: the {name} operand must be a 2-D block, got {describe(x)}")
        native_fp8 = False
        if (a.element.is_fp8 or b.element.is_fp8) and _is_amd(self.target):
            from tile.codegen.amdgcn.isa import fp8_dot_is_native, fp8_dot_refusal

            refusal = fp8_dot_refusal(self.target, (a.element, b.element))
            if refusal is not None:
                raise TypeError(f"tl.dot of {to_dtype(a.element)!r} and {to_dtype(b.element)!r} operands: {refusal}")
            native_fp8 = fp8_dot_is_native(self.target, (a.element, b.element))
        mixed_fp8 = a.element.is_fp8 and b.element.is_fp8 and a.element != b.element
        if (is_float8_variant(a.element) or is_float8_variant(b.element) or mixed_fp8) and not native_fp8:
            # like Triton: the tensor cores know no such fp8 format, so both operands go to fp16
            # (exact); e4m3 times e5m2 goes there too, since tile's dots take one operand type.
            # gfx942's MFMA take its fnuz formats (mixed too) as they are.
            a, b = self.cast(a, f16), self.cast(b, f16)
        ea, eb = a.element, b.element
        if ea != eb and not (ea.is_fp8 and eb.is_fp8):
            raise TypeError(f"tl.dot: both operands must have the same dtype, got {to_dtype(ea)!r} and "
                            f"{to_dtype(eb)!r}")
        if ea.name not in ("f16", "bf16", "f32", "f64", "i8", "u8") and not ea.is_fp8:
            raise TypeError(f"tl.dot does not support {to_dtype(ea)!r} operands")
        (m, k), (k2, n) = a.shape, b.shape
        if k != k2:
            raise ValueError(f"tl.dot: shapes {list(a.shape)} and {list(b.shape)} do not match: the first's "
                             f"columns ({k}) must equal the second's rows ({k2})")
        if ea in (i8, u8):
            result = i32
        elif ea == f64:
            result = f64
        elif ea.name in ("f32", "bf16"):
            result = f32
        else:
            if out_dtype not in (f16, f32):
                raise ValueError(f"tl.dot: out_dtype must be float32 or float16, got {to_dtype(out_dtype)!r}")
            result = out_dtype
        rt = TensorType((m, n), result)
        if acc is None:
            acc = self.constant(0, rt)
        else:
            acc = self.to_tensor(acc)
            if acc.ir_type != rt:
                raise ValueError(f"tl.dot: the accumulator must be a [{m}, {n}] block of {to_dtype(result)!r}, "
                                 f"got {list(acc.shape)} of {to_dtype(acc.element)!r}")
        precision = (input_precision or "tf32").lower()
        if precision not in INPUT_PRECISIONS:
            raise ValueError(f"tl.dot: input_precision must be one of {list(INPUT_PRECISIONS)}, got {input_precision!r}")
        return self.op("tt.dot", [a, b, acc], rt, input_precision=precision,
                       max_num_imprecise_acc=int(max_num_imprecise_acc or 0))

    # -------------------------------------------------------- reductions, scans
    def _combine(self: "Semantic", name: str, inputs: list[tensor], result_types: list[Type],
                 combine_fn: Callable[..., Any], attrs: dict[str, Any]) -> list[tensor]:
        """Build `name` (tt.reduce / tt.scan) whose region is `combine_fn` inlined on element arguments."""
        elems = [t.element for t in inputs]
        block = Block(elems + elems)
        with self.builder.at_end_of(block):
            out = self.call(combine_fn, [tensor(a) for a in block.args], {})
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outs) != len(elems):
                raise ValueError(f"the combine function must return {len(elems)} value(s), got {len(outs)}")
            handles = []
            for o, el in zip(outs, elems):
                o = o if isinstance(o, tensor) else self.constant(o, el)
                if o.ir_type != el:
                    raise TypeError(f"the combine function returned {o.ir_type} where a scalar of "
                                    f"{to_dtype(el)!r} was expected")
                handles.append(o.handle)
            self.builder.create("tt.reduce.return", handles)
        op = self.builder.create(name, [t.handle for t in inputs], result_types, attrs, [Region([block])])
        return [tensor(r) for r in op.results]

    def _operands(self: "Semantic", inputs: Any, what: str) -> tuple[list[tensor], bool]:
        single = not isinstance(inputs, (tuple, list))
        ins = [inputs] if single else list(inputs)
        for t in ins:
            if not isinstance(t, tensor) or not t.is_block():
                from .semantics import describe

                raise TypeError(f"{what} needs blocks, got {describe(t)}")
        if any(t.shape != ins[0].shape for t in ins):
            raise ValueError(f"{what}: all inputs must have one shape, got {[list(t.shape) for t in ins]}")
        return ins, single

    def reduce(self: "Semantic", inputs: Any, axis: Any, combine_fn: Callable[..., Any],
               keep_dims: bool = False) -> Any:
        from .semantics import wrap_axis

        ins, single = self._operands(inputs, "reduce")
        rank = len(ins[0].shape)
        if axis is None:
            ins = [self.reshape(t, (t.numel,), True) for t in ins]
            axis = 0
            flat = True
        else:
            axis = wrap_axis(axis, rank, "reduce")
            flat = False
        shape = ins[0].shape[:axis] + ins[0].shape[axis + 1:]
        types: list[Type] = [TensorType(shape, t.element) if shape else t.element for t in ins]
        outs = self._combine("tt.reduce", ins, types, combine_fn, {"axis": axis})
        if keep_dims:
            outs = [self.expand_dims(o, list(range(rank)) if flat else axis) for o in outs]
        return outs[0] if single else tuple(outs)

    def scan(self: "Semantic", inputs: Any, axis: Any, combine_fn: Callable[..., Any], reverse: bool = False) -> Any:
        from .semantics import wrap_axis

        ins, single = self._operands(inputs, "associative_scan")
        axis = wrap_axis(axis, len(ins[0].shape), "associative_scan")
        outs = self._combine("tt.scan", ins, [t.ir_type for t in ins], combine_fn,
                             {"axis": axis, "reverse": bool(reverse)})
        return outs[0] if single else tuple(outs)

    # ------------------------------------------------- join, split, cat, gather
    def join(self: "Semantic", a: Any, b: Any) -> tensor:
        from .semantics import describe, fmt_shape

        a, b = self.to_tensor(a), self.to_tensor(b)
        if a.element != b.element:
            raise TypeError(f"tl.join: both operands must have one dtype, got {describe(a)} and {describe(b)}")
        if a.is_block() and b.is_block():
            sa, sb = a.shape, b.shape
            rank = max(len(sa), len(sb))
            pa, pb = (1,) * (rank - len(sa)) + sa, (1,) * (rank - len(sb)) + sb
            if any(x != y and 1 not in (x, y) for x, y in zip(pa, pb)):
                raise ValueError(f"tl.join: shapes {fmt_shape(sa)} and {fmt_shape(sb)} do not broadcast to one shape")
        a, b = self.broadcast_values(a, b)
        if not a.is_block():  # two scalars give a [2] block
            pair = self.join(self.splat(a, (1,)), self.splat(b, (1,)))
            return self.reshape(pair, (2,))
        return self.op("tt.join", [a, b], TensorType(a.shape + (2,), a.element))

    def split(self: "Semantic", a: Any) -> tuple[tensor, tensor]:
        from .semantics import describe

        a = self.to_tensor(a)
        if not a.is_block() or a.shape[-1] != 2:
            raise ValueError(f"tl.split: the last dimension must have size 2, got {describe(a)}")
        if len(a.shape) == 1:  # a [2] block gives two scalars
            lo, hi = self.split(self.expand_dims(a, 0))
            return self.unsplat(lo), self.unsplat(hi)
        shape = a.shape[:-1]
        op = self.builder.create("tt.split", [a.handle], [TensorType(shape, a.element)] * 2)
        return tensor(op.results[0]), tensor(op.results[1])

    def unsplat(self: "Semantic", x: tensor) -> tensor:
        """The one element of a [1] block, as a scalar (a reduction that never combines)."""
        block = Block([x.element, x.element])
        with self.builder.at_end_of(block):
            self.builder.create("tt.reduce.return", [block.args[0]])
        op = self.builder.create("tt.reduce", [x.handle], [x.element], {"axis": 0}, [Region([block])])
        return tensor(op.result)

    def cat(self: "Semantic", a: Any, b: Any) -> tensor:
        """`a` then `b` along dimension 0: join(a, b) permuted to [2, ...] and merged into dimension 0."""
        from .semantics import describe

        a, b = self.to_tensor(a), self.to_tensor(b)
        if not a.is_block() or not b.is_block() or a.shape != b.shape or a.element != b.element:
            raise ValueError(f"tl.cat: both operands must be blocks of one shape and dtype, got {describe(a)} and "
                             f"{describe(b)}")
        rank = len(a.shape)
        pair = self.trans(self.join(a, b), (rank,) + tuple(range(rank)))
        return self.reshape(pair, (2 * a.shape[0],) + a.shape[1:])

    def gather(self: "Semantic", src: Any, index: Any, axis: Any) -> tensor:
        from .semantics import describe, fmt_shape, wrap_axis

        for what, x in (("source", src), ("index", index)):
            if not isinstance(x, tensor) or not x.is_block():
                raise TypeError(f"tl.gather: the {what} must be a block, got {describe(x)}")
        el = index.element
        if isinstance(el, PointerType) or not el.is_integer or el == i1:
            raise TypeError(f"tl.gather: the index must be a block of integers, got {describe(index)}")
        rank = len(src.shape)
        if len(index.shape) != rank:
            raise ValueError(f"tl.gather: source and index must have one rank, got {fmt_shape(src.shape)} and "
                             f"{fmt_shape(index.shape)}")
        axis = wrap_axis(axis, rank, "tl.gather")
        for d in range(rank):
            if d != axis and src.shape[d] != index.shape[d]:
                raise ValueError(f"tl.gather: the index shape {fmt_shape(index.shape)} must match the source shape "
                                 f"{fmt_shape(src.shape)} in every dimension but the axis ({axis}); dimension {d} "
                                 f"differs")
        return self.op("tt.gather", [src, index], TensorType(index.shape, src.element), axis=axis)

    def histogram(self: "Semantic", x: Any, num_bins: Any, mask: Any) -> tensor:
        from .semantics import describe

        if not isinstance(x, tensor) or len(x.shape) != 1 or isinstance(x.element, PointerType) or \
                not x.element.is_integer or x.element == i1:
            raise TypeError(f"tl.histogram: the input must be a 1-D block of integers, got {describe(x)}")
        if isinstance(num_bins, tensor) or not isinstance(num_bins, int) or isinstance(num_bins, bool) or \
                not _is_pow2(num_bins):
            raise ValueError(f"tl.histogram: num_bins must be a compile-time power of 2, got {num_bins!r}")
        operands = [x]
        if mask is not None:
            operands.append(self._mask(mask, x.shape, "tl.histogram"))
        return self.op("tt.histogram", operands, TensorType((num_bins,), i32))

    # -------------------------------------------------------------------- debug
    def device_print(self: "Semantic", prefix: str, args: Sequence[Any], hex: bool = False) -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"device_print's prefix must be a string, got {prefix!r}")
        values = [self.to_tensor(a) for a in args]
        self.builder.create("tt.print", [v.handle for v in values], [], {"prefix": prefix, "hex": bool(hex)})

    def device_assert(self: "Semantic", cond: Any, message: str = "", mask: Any = None) -> None:
        c = self.to_i1(cond)
        if mask is not None:
            c = self.logical_or(c, self.not_(mask))
        loc = self.builder.loc
        attrs = {"message": str(message), "file": loc.file if loc else "", "line": loc.line if loc else 0}
        self.builder.create("tt.assert", [c.handle], [], attrs)

    def debug_barrier(self: "Semantic") -> None:
        self.builder.create("tt.debug_barrier")

    def hint(self: "Semantic", x: Any, kind: str, values: Any) -> tensor:
        x = self.to_tensor(x)
        vals = [values] if isinstance(values, int) else list(values)
        want = max(1, len(x.shape)) if kind == "multiple_of" else len(x.shape)
        if len(vals) != want or not all(isinstance(v, int) and v > 0 for v in vals):
            raise ValueError(f"tl.{kind} needs {want} positive integer(s) for {describe_shape(x)}, got {values!r}")
        attrs: dict[str, Any] = {"multiple_of": [], "max_contiguous": [], "max_constancy": []}
        attrs[kind] = vals
        return self._attach_hint(x, attrs)

    def _attach_hint(self: "Semantic", x: tensor, attrs: dict[str, Any]) -> tensor:
        """Attach the facts to the value itself, as Triton does (it sets an attribute on the
        defining op): the tt.hint goes right after x's definition, every use of x reads the hint,
        and the caller's `x` now names it. So `tl.multiple_of(ptrs, 16)` as a statement, its result
        discarded (Triton's grouped GEMM tutorial does this in its loop), still informs the loads."""
        value = x.handle
        hint = Operation("tt.hint", [value], [value.type], attrs, loc=self.builder.loc)
        definer = value.owner_op
        block = definer.parent if definer is not None else value.block
        position = block.ops.index(definer) + 1 if definer is not None else 0
        block.insert(position, hint)
        builder = self.builder
        if builder.block is block and builder.index is not None and builder.index >= position:
            builder.index += 1
        for user in value.users():
            if user is not hint:
                for i, operand in enumerate(user.operands):
                    if operand is value:
                        user.set_operand(i, hint.result)
        x.handle = hint.result
        return x


def describe_shape(x: tensor) -> str:
    return f"a block of shape {list(x.shape)}" if x.is_block() else "a scalar"

