"""How tt.elementwise_inline_asm maps elements to the registers of its assembly.

One instance of the asm processes `pack` elements of every operand and result. Elements
narrower than 32 bits share a register (Triton's rule): a value of `bits` bits packs
min(32 // bits, pack) elements per register, first element in the lowest bits; other values
take one register each (pointers count as 64 bits). The constraint string names the registers
in order, outputs first ("=r,=r,r,l": two 32-bit outputs, then a 32-bit and a 64-bit input),
and the asm refers to them as $0, $1, ... in that order:

    constraint letter   register          holds up to
    h                   .b16  (%rs)       16 bits
    r                   .b32  (%r)        32 bits
    l                   .b64  (%rd)       64 bits
    f                   .f32  (%f)        32 bits
    d                   .f64  (%fd)       64 bits

A "~{...}" entry (a clobber) names no register. `=&r` (early clobber) is an output like `=r`.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Sequence

from .types import DType, PointerType

LETTER_BITS = {"h": 16, "r": 32, "l": 64, "f": 32, "d": 64}
OPERAND_REF = re.compile(r"\$(\d+)|\$\{(\d+)\}|\$\$")


class Constraints(NamedTuple):
    outputs: list[str]  # register letters of the outputs, in order
    inputs: list[str]


def parse_constraints(text: str) -> Constraints:
    """The output and input register letters of an LLVM-style constraint string; ValueError
    naming the entry for anything else."""
    outputs: list[str] = []
    inputs: list[str] = []
    for entry in (e.strip() for e in text.split(",")):
        if entry.startswith("~{") and entry.endswith("}"):
            continue
        is_output = entry.startswith("=")
        letter = entry.lstrip("=&")
        if letter not in LETTER_BITS:
            raise ValueError(f"unsupported inline asm constraint {entry!r} in {text!r}: use =h, =r, =l, =f, =d for "
                             f"outputs and h, r, l, f, d for inputs (16-, 32- and 64-bit integer registers, f32 and "
                             f"f64 registers)")
        if is_output and inputs:
            raise ValueError(f"inline asm constraints {text!r}: outputs ('=...') must come before inputs")
        (outputs if is_output else inputs).append(letter)
    return Constraints(outputs, inputs)


def element_bits(t: DType | PointerType) -> int:
    return 64 if isinstance(t, PointerType) else t.bits


def elements_per_register(t: DType | PointerType, pack: int) -> int:
    bits = element_bits(t)
    return min(32 // bits, pack) if bits < 32 else 1


def register_bits(elements: Sequence[DType | PointerType], pack: int) -> list[int]:
    """The bits each register holds, in constraint order, for values of these element types."""
    out = []
    for t in elements:
        per = elements_per_register(t, pack)
        out += [per * element_bits(t)] * (pack // per)
    return out


def operand_refs(asm: str) -> list[int]:
    """The operand numbers the asm refers to ($N, ${N}; $$ is a literal $)."""
    return [int(m.group(1) or m.group(2)) for m in OPERAND_REF.finditer(asm) if m.group(0) != "$$"]


def substitute(asm: str, registers: Sequence[str]) -> str:
    """The asm with each $N replaced by registers[N] and $$ by $."""
    return OPERAND_REF.sub(lambda m: "$" if m.group(0) == "$$" else registers[int(m.group(1) or m.group(2))], asm)


def check(asm: str, constraints: str, args: Sequence[DType | PointerType], results: Sequence[DType | PointerType],
          pack: int) -> Constraints:
    """ValueError unless the constraints name one register per packed group of elements of each
    result and argument, wide enough, and the asm refers only to those registers."""
    parsed = parse_constraints(constraints)
    for what, letters, types in (("output", parsed.outputs, results), ("input", parsed.inputs, args)):
        widths = register_bits(types, pack)
        if len(letters) != len(widths):
            per = ", ".join(f"{t}: {pack // elements_per_register(t, pack)}" for t in types) or "none"
            raise ValueError(f"inline asm: the constraints {constraints!r} name {len(letters)} {what} register(s), "
                             f"but {len(widths)} are needed ({pack} element(s) per asm instance, registers per "
                             f"{what} value {per})")
        for k, (letter, bits) in enumerate(zip(letters, widths)):
            if LETTER_BITS[letter] < bits:
                raise ValueError(f"inline asm: {what} register {k} ('{letter}', {LETTER_BITS[letter]} bits) cannot "
                                 f"hold {bits} bits")
    total = len(parsed.outputs) + len(parsed.inputs)
    bad = [n for n in operand_refs(asm) if n >= total]
    if bad:
        raise ValueError(f"inline asm refers to ${bad[0]}, but the constraints name only {total} register(s) "
                         f"($0..${total - 1})")
    return parsed


__all__ = ["LETTER_BITS", "Constraints", "parse_constraints", "element_bits", "elements_per_register",
           "register_bits", "operand_refs", "substitute", "check"]
