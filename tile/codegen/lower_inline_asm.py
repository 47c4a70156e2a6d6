"""Lowering of tt.elementwise_inline_asm: one simt.inline_asm per group of `pack` registers.

Every operand and result shares one layout, so register r of each holds the same element;
registers are taken `pack` at a time in register order (the last group repeats the thread's
last register where it has fewer than `pack`, and the extra results are dropped). Within a
group, elements narrower than 32 bits share registers (tile.ir.inline_asm):

    %y = tt.elementwise_inline_asm %x {asm = "shl.b32 $0, $1, 3;", constraints = "=r,r",
         packed_element = 4, pure = true} : tensor<512xi8, #L>          (4 registers per thread)
  becomes, per thread,
    %w = simt.pack %x0, %x1, %x2, %x3 : u32
    %o = simt.inline_asm %w {asm = "shl.b32 $0, $1, 3;", constraints = "=r,r", pure = true} : u32
    %y0, %y1, %y2, %y3 = simt.unpack %o : u8, u8, u8, u8     (then bitcast to i8)

Each register value takes the type of its constraint letter (h u16, r u32, l u64, f f32,
d f64): elements are bitcast, zero-extended into wider registers and shifted into place;
results are taken apart the same way. An asm that is not pure is never merged or hoisted.
"""
from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.inline_asm import element_bits, elements_per_register, parse_constraints
from ..ir.types import DType, PointerType, element_type, f32, f64, u8, u16, u32, u64
from .lower_cast import bitcast
from .lower_core import Lowering, lowers

_LETTER_TYPE = {"h": u16, "r": u32, "l": u64, "f": f32, "d": f64}
_UINT = {8: u8, 16: u16, 32: u32, 64: u64}


def _uint_of(letter: str) -> DType:
    return _UINT[_LETTER_TYPE[letter].bits]


def _bits(ctx: Lowering, v: Value) -> Value:
    """The bits of `v` as an unsigned integer of its width."""
    return bitcast(ctx, v, _UINT[element_bits(v.type)])


def _resize(ctx: Lowering, v: Value, t: DType) -> Value:
    """Unsigned `v` zero-extended or truncated to the unsigned type `t`."""
    return v if v.type == t else ctx.op("simt.cvt", [v], t)


def _register(ctx: Lowering, elements: list[Value], letter: str) -> Value:
    """The register of `letter`'s type holding `elements` (first in the lowest bits)."""
    want = _LETTER_TYPE[letter]
    if len(elements) == 1 and elements[0].type == want:
        return elements[0]
    parts = [_bits(ctx, e) for e in elements]
    width = element_bits(elements[0].type)
    if width * len(parts) == 32 and width in (8, 16):
        word = ctx.pack(parts, u32)
    else:  # shifts and ors in 32 or 64 bits (PTX has no 16-bit ones)
        word_t = u64 if width * len(parts) > 32 else u32
        word = _resize(ctx, parts[0], word_t)
        for k, p in enumerate(parts[1:], start=1):
            shifted = ctx.op("arith.shl", [_resize(ctx, p, word_t), ctx.const(k * width, word_t)], word_t)
            word = ctx.op("arith.or", [word, shifted], word_t)
    word = _resize(ctx, word, _uint_of(letter))
    return word if word.type == want else ctx.op("arith.bitcast", [word], want)


def _elements(ctx: Lowering, register: Value, t: DType | PointerType, count: int) -> list[Value]:
    """The `count` elements of type `t` in an asm output register."""
    if count == 1 and register.type == t:
        return [register]
    width = element_bits(t)
    word = register if register.type in _UINT.values() else \
        ctx.op("arith.bitcast", [register], _UINT[register.type.bits])
    part_t = _UINT[max(width, 8)]
    if width * count == 32 and width in (8, 16) and word.type == u32:
        parts = list(ctx.ops("simt.unpack", [word], [part_t] * count))
    else:
        word = _resize(ctx, word, u32) if word.type.bits < 32 else word  # shifts in 32 or 64 bits
        parts = []
        for k in range(count):
            shifted = ctx.op("arith.shr", [word, ctx.const(k * width, word.type)], word.type) if k else word
            parts.append(_resize(ctx, shifted, part_t))
    return [bitcast(ctx, p, t) for p in parts]


@lowers("tt.elementwise_inline_asm")
def _lower_inline_asm(ctx: Lowering, op: Operation) -> None:
    pack = op.attrs["packed_element"]
    constraints = parse_constraints(op.attrs["constraints"])
    out_types = [_LETTER_TYPE[x] for x in constraints.outputs]
    attrs = {k: op.attrs[k] for k in ("asm", "constraints", "pure")}
    n = ctx.info(op.results[0].type).num_regs
    operands = [ctx.get(v) * (n if len(ctx.get(v)) == 1 else 1) for v in op.operands]
    results: list[list[Value]] = [[] for _ in op.results]
    for first in range(0, n, pack):
        lanes = [min(first + j, n - 1) for j in range(pack)]
        letters = iter(constraints.inputs)
        words = []
        for v, regs in zip(op.operands, operands):
            per = elements_per_register(element_type(v.type), pack)
            words += [_register(ctx, [regs[i] for i in lanes[k:k + per]], next(letters)) for k in range(0, pack, per)]
        if op.attrs["pure"]:
            outs = iter(ctx.ops("simt.inline_asm", words, out_types, **attrs))
        else:
            outs = iter(ctx.effect("simt.inline_asm", words, out_types, **attrs).results)
        for r, values in zip(op.results, results):
            t = element_type(r.type)
            per = elements_per_register(t, pack)
            group = [e for _ in range(pack // per) for e in _elements(ctx, next(outs), t, per)]
            values.extend(group[:n - first])
    for r, values in zip(op.results, results):
        ctx.set(r, values)


__all__: list[str] = []
