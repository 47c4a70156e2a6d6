"""The decoded form of a PTX module: what the machine executes.

A kernel's body becomes a list of `Instr` records, decoded once: the opcode, its type
suffixes and modifiers, operands as small tagged tuples, the predicate guard, branch targets
resolved to instruction indices, and the tile source line (from the `// file.py:12  text`
comments tile's emitter writes before each group of instructions). Registers are numbered:
the machine keeps one NumPy array per register number.

Operands (first field is the tag):

    ("reg", index)              a register                     %r5
    ("imm", int)                an immediate (floats as bits)  42, 0f3F800000
    ("sreg", name)              a special register             %tid.x
    ("sym", name, offset)       a symbol's address             __smem+1024, a label, a param name
    ("addr", base, offset)      a memory operand; base is a    [%rd4+2048], [x_ptr]
                                reg or sym operand
    ("vec", (operand, ...))     a vector of operands           {%f1, %f2, %f3, %f4}
    ("tensor", base, vec)       a tensor map and coordinates   [%rd1, {%r4, %r5}] (cp.async.bulk.tensor)
    ("pair", operand, operand)  a destination pair             %r1|%p1 (elect.sync)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

Operand = tuple

# register class of a declaration type: its width in bits (0: predicate)
REG_BITS = {"pred": 0, "b8": 16, "u8": 16, "s8": 16, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
            "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
            "b64": 64, "u64": 64, "s64": 64, "f64": 64}


@dataclass(frozen=True)
class Source:
    """Where an instruction comes from: the PTX line, and the tile source line if known."""

    ptx_line: int
    ptx_text: str
    file: str = ""
    line: int = 0
    text: str = ""

    def describe(self) -> str:
        where = f"PTX line {self.ptx_line} `{self.ptx_text}`"
        if self.file:
            where += f", from {self.file}:{self.line}" + (f" `{self.text}`" if self.text else "")
        return where


@dataclass
class Instr:
    """One decoded instruction. `types` are the type suffixes in order (ld.global.v4.f32: ("f32",)),
    `mods` the other suffixes (("global", "v4")); `spec` is what the instruction set's decoder
    derived from them (per opcode, see ptx_isa)."""

    opcode: str
    mods: tuple[str, ...]
    types: tuple[str, ...]
    operands: tuple[Operand, ...]
    guard: Optional[tuple[int, bool]]  # (predicate register, negated)
    source: Source
    spec: object = None
    target: int = -1  # branch target (instruction index)


@dataclass
class Param:
    name: str
    type: str  # u64, s32, f32, b16, u8...
    offset: int
    size: int
    array: bool = False  # a byte array (.param .align 64 .b8 name[128]: a TMA tensor map)


@dataclass
class Kernel:
    """A decoded `.entry`: its parameters, registers, shared and local arrays, and instructions."""

    name: str
    params: list[Param]
    instrs: list[Instr]
    reg_names: list[str]
    reg_bits: list[int]  # per register: 0 (pred), 16, 32 or 64
    max_threads: int  # .maxntid, or 0 when not given
    shared_symbols: dict[str, int] = field(default_factory=dict)  # static .shared arrays: name -> offset
    static_shared_bytes: int = 0
    local_symbols: dict[str, int] = field(default_factory=dict)  # .local arrays: name -> offset
    local_bytes: int = 0
    # registers some predicated instruction writes: a thread whose predicate was false reads an
    # undefined value there (zeros here), which a GPU kernel may compute with and then discard
    guarded_writes: frozenset = frozenset()
    ptx_version: tuple[int, int] = (0, 0)  # the module's .version


@dataclass
class GlobalData:
    """A module-level `.global` array (the strings of printf and assert)."""

    name: str
    data: bytes


@dataclass
class Module:
    target: str
    kernels: dict[str, Kernel]
    globals: dict[str, GlobalData]
    dynamic_shared: Optional[str]  # the name of the `.extern .shared` array, if any
    dynamic_shared_align: int = 16
    ptx_version: tuple[int, int] = (0, 0)
