"""Semantics of the elementwise escapes and hints: inline assembly, map_elementwise and assume.
Mixed into `Semantic` (semantics.py), whose broadcasting and constants these methods use.

    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r", [x, y, s],
                                  dtype=tl.int32, is_pure=True, pack=1)
  builds
    %z = tt.elementwise_inline_asm %x, %y, %s {asm = "shf.l.wrap.b32 $0, $1, $2, $3;",
         constraints = "=r,r,r,r", packed_element = 1, pure = true} : tensor<128xi32>

    z = tl.map_elementwise(compare, x, y)
  builds tt.map_elementwise with `compare` inlined on scalars in its region.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from tile.ir import inline_asm
from tile.ir.core import Block, Region
from tile.ir.types import TensorType, i1

from .core import ir_type_of, tensor, to_dtype

if TYPE_CHECKING:
    from .semantics import Semantic

INTERPRETER_TARGET = "interpreter"  # tile.compiler's name of the NumPy interpreter


def _is_pow2(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 1 and n & (n - 1) == 0


class ExtraOps:
    """inline asm, map_elementwise and assume: methods of `Semantic`."""

    def elementwise_args(self: "Semantic", args: Sequence[Any]) -> list[tensor]:
        """The arguments as tensors of one shape (scalars splat to the blocks' shape)."""
        values = [self.to_tensor(a) for a in args]
        return self.broadcast_all(*values) if len(values) > 1 else values

    def inline_asm_elementwise(self: "Semantic", asm: Any, constraints: Any, args: Sequence[Any], dtype: Any,
                               is_pure: bool, pack: Any) -> Any:
        what = "tl.inline_asm_elementwise"
        if not isinstance(asm, str):
            raise TypeError(f"{what}: asm must be a string of assembly, got {asm!r}")
        if not isinstance(constraints, str):
            raise TypeError(f"{what}: constraints must be a string such as \"=r,r\", got {constraints!r}")
        if not _is_pow2(pack):
            raise ValueError(f"{what}: pack must be a power of two >= 1, got {pack!r}")
        several = isinstance(dtype, (tuple, list))
        dtypes = [ir_type_of(d) for d in (dtype if several else [dtype])]
        if not dtypes:
            raise ValueError(f"{what}: dtype names no result; the asm must produce at least one (a dummy will do)")
        values = self.elementwise_args(args)
        for t in [v.element for v in values] + dtypes:
            if t == i1:
                raise TypeError(f"{what}: int1 values cannot go through asm registers; convert them with "
                                f".to(tl.int32)")
        shape = values[0].shape if values else ()
        if not shape and pack > 1:
            raise ValueError(f"{what}: pack={pack} needs block arguments; scalars run one element per asm")
        inline_asm.check(asm, constraints, [v.element for v in values], dtypes, pack)
        if self.target == INTERPRETER_TARGET:
            raise NotImplementedError(f"{what} cannot run on the interpreter (TILE_INTERPRET=1, or no GPU): it is "
                                      f"GPU assembly; run the kernel on a GPU or use a tl.* function instead")
        types = [TensorType(shape, t) if shape else t for t in dtypes]
        attrs = {"asm": asm, "constraints": constraints, "pure": bool(is_pure), "packed_element": pack}
        op = self.builder.create("tt.elementwise_inline_asm", [v.handle for v in values], types, attrs)
        results = [tensor(r) for r in op.results]
        return tuple(results) if several else results[0]

    def map_elementwise(self: "Semantic", scalar_fn: Any, args: Sequence[Any], pack: Any) -> Any:
        from .jit import JITFunction

        what = "tl.map_elementwise"
        if not isinstance(scalar_fn, JITFunction):
            raise TypeError(f"{what}: the function must be a @tile.jit function, got {scalar_fn!r}")
        if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
            raise ValueError(f"{what}: pack must be a positive integer, got {pack!r}")
        if not args:
            raise ValueError(f"{what} needs at least one argument to map over")
        values = self.elementwise_args(args)
        shape = values[0].shape
        if not shape and pack > 1:
            raise ValueError(f"{what}: pack={pack} needs block arguments")
        block = Block([v.element for v in values for _ in range(pack)])
        with self.builder.at_end_of(block):
            out = self.call(scalar_fn, [tensor(a) for a in block.args], {})
            single = not isinstance(out, (tuple, list))
            outs = [self.to_tensor(o) for o in ([out] if single else out)]
            for o in outs:
                if o.is_block():
                    raise TypeError(f"{what}: {scalar_fn.__name__} must return scalars, got a block of shape "
                                    f"{list(o.shape)}")
            if not outs or len(outs) % pack:
                raise ValueError(f"{what}: with pack={pack}, {scalar_fn.__name__} must return a multiple of {pack} "
                                 f"values (pack values per result), got {len(outs)}")
            elements = [outs[r * pack].element for r in range(len(outs) // pack)]
            for k, o in enumerate(outs):
                if o.element != elements[k // pack]:
                    raise TypeError(f"{what}: the {pack} values of result {k // pack} of {scalar_fn.__name__} have "
                                    f"different types: {to_dtype(elements[k // pack])!r} and {to_dtype(o.element)!r}")
            self.builder.create("tt.map_elementwise.return", [o.handle for o in outs])
        types = [TensorType(shape, t) if shape else t for t in elements]
        op = self.builder.create("tt.map_elementwise", [v.handle for v in values], types, {"pack": pack},
                                 [Region([block])])
        results = [tensor(r) for r in op.results]
        return results[0] if single else tuple(results)

    def assume(self: "Semantic", cond: Any) -> None:
        cond = self.to_tensor(cond)
        if cond.element != i1:
            raise TypeError(f"tl.assume needs a boolean condition (a comparison), got {to_dtype(cond.element)!r}")
        self.builder.create("tt.assume", [cond.handle])


__all__ = ["ExtraOps", "INTERPRETER_TARGET"]
