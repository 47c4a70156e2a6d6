"""Machine IR for the AMD targets: instructions of the ISA table on virtual SGPRs, VGPRs and AGPRs.

A function is a straight list of `MInst`; each names an instruction of `isa.INSTRUCTIONS`,
its results (`defs`) and its sources (`uses`), in the order the assembler reads them, plus
modifiers (`offset`, the `s_waitcnt` counts). Operands are `Sub` views of a virtual `Reg`
(a 64-bit value is a Reg of two dwords; a vector load's result a Reg of four), `Imm`
numbers, or the `Special` registers exec, vcc, off and null. Before register allocation a
function prints with virtual names; afterwards with the physical ones, and for a target in its
own spelling (isa.SPELLING, isa.LANE_MASK_REGISTERS):

    v_add_co_u32 %v7, vcc, %s3.0, %v6.0          (virtual: %s3.0 is dword 0 of SGPR pair %s3)
    v_add_co_u32 v2, vcc, s4, v2                 (allocated)
    v_add_co_ci_u32 v3, vcc_lo, s5, v3, vcc_lo   (gfx1100: v_addc_co_u32, wave32's vcc)

An operand the instruction reads and then writes (isa's vdata kind: a returning buffer
atomic's data, replaced by the old value) is one register view in `defs` and in `uses`
(isa.InstrInfo.ties), so liveness, waits and hazards see the read and the write; it prints
once, among the sources, under the row's assembler name:

    MInst("buffer_atomic_add_rtn", [%v9.0], [%v9.0, %v4.0, %s8.0:3, 0], {"offen": 1, "sc0": 1})
    buffer_atomic_add v5, v1, s[8:11], 0 offen sc0

A DPP instruction (isa.DPP_CONTROLS) carries its control's DPP_CTRL code and masks in `mods`
and prints them in llvm-mc's syntax:

    MInst("v_mov_b32_dpp", [%v4.0], [%v3.0], {"dpp_ctrl": 0xb1, "bound_ctrl": 1})
    v_mov_b32_dpp v5, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from .isa import CACHE_POLICY_BITS as TARGET_CACHE_POLICY_BITS
from .isa import DPP_FULL_MASK, DPP_TEXT, INLINE_INTS, LANE_MASK_REGISTERS, info, spelling


@dataclass(eq=False)
class Reg:
    """A virtual register of `size` dwords in bank "s" (SGPRs), "v" (VGPRs) or "a" (AGPRs, the
    accumulation half of the unified vector register file). `fixed` is the
    physical index where the hardware places the value at entry (kernarg pointer, ids)."""

    bank: str
    size: int
    id: int
    fixed: Optional[int] = None

    def __repr__(self) -> str:
        return f"%{self.bank}{self.id}"

    def all(self) -> "Sub":
        return Sub(self, 0, self.size)

    def dword(self, i: int) -> "Sub":
        return Sub(self, i, 1)


@dataclass(frozen=True)
class Sub:
    """Dwords [start, start + count) of a register."""

    reg: Reg
    start: int
    count: int

    @property
    def bank(self) -> str:
        return self.reg.bank

    def dword(self, i: int) -> "Sub":
        return Sub(self.reg, self.start + i, 1)


@dataclass(frozen=True)
class Imm:
    """An immediate source: `value` is its bits (as an int), `text` how it prints (1.0, 0x3c00),
    `inline` whether the ISA encodes it in the operand field (else it takes a 32-bit literal)."""

    value: int
    text: str
    inline: bool

    @staticmethod
    def int(value: int) -> "Imm":
        if value in INLINE_INTS:
            return Imm(value, str(value), True)
        return Imm(value & 0xFFFFFFFF, hex(value & 0xFFFFFFFF), False)


@dataclass(frozen=True)
class Special:
    """exec, vcc (lane masks with a meaning), off (no SGPR address base) or null (no SGPR)."""

    name: str


@dataclass(frozen=True)
class Label:
    """A branch target."""

    name: str


EXEC, VCC, OFF, NULL = Special("exec"), Special("vcc"), Special("off"), Special("null")
# modifiers of memory instructions, printed after the offset (each target has its own: isa.CACHE_POLICY_BITS)
CACHE_POLICY_BITS = tuple(dict.fromkeys(bit for bits in TARGET_CACHE_POLICY_BITS.values() for bit in bits))
Operand = Union[Sub, Imm, Special, Label]


@dataclass(eq=False)
class MInst:
    opcode: str
    defs: list[Operand]
    uses: list[Operand]
    mods: dict[str, int] = field(default_factory=dict)
    comment: str = ""

    def __post_init__(self) -> None:
        row = info(self.opcode)
        if len(self.defs) != len(row.defs) or len(self.uses) != len(row.uses):
            raise ValueError(f"{self.opcode} takes {len(row.defs)} results and {len(row.uses)} sources, "
                             f"got {len(self.defs)} and {len(self.uses)}")
        pairs = list(zip(row.defs, self.defs)) + list(zip(row.uses, self.uses))
        for kind, operand in pairs:
            if not _fits(kind, operand):
                raise ValueError(f"{self.opcode}: {operand} is not a {kind} operand")
        if len({o.bank for kind, o in pairs if kind.startswith("av")}) > 1:   # MFMA: one ACC_CD bit for C and D
            raise ValueError(f"{self.opcode}: its VGPR-or-AGPR operands must all be in one file")
        if row.is_dpp and "dpp_ctrl" not in self.mods:
            raise ValueError(f"{self.opcode} needs its DPP control (mods['dpp_ctrl'])")
        for result, source in row.ties:
            if self.defs[result] != self.uses[source]:
                raise ValueError(f"{self.opcode} reads and writes one operand: result {self.defs[result]} must be "
                                 f"source {self.uses[source]}")

    def regs(self, operands: list[Operand]) -> list[Sub]:
        return [o for o in operands if isinstance(o, Sub)]


def _fits(kind: str, o: Operand) -> bool:
    """Whether operand `o` may stand where the table says `kind`."""
    base = kind.rstrip("0123456789")
    width = int(kind[len(base):] or 1)
    if kind == "vcc":
        return o == VCC
    if kind == "saddr":
        return o == OFF
    if kind == "null":
        return o == NULL
    if kind == "lmask":   # one SGPR (wave32) or a pair (wave64)
        return o in (EXEC, VCC) or (isinstance(o, Sub) and o.bank == "s" and o.count in (1, 2))
    if kind == "imm":
        return isinstance(o, Imm)
    if kind == "label":
        return isinstance(o, Label)
    if kind == "vaddr":
        return isinstance(o, Sub) and o.bank == "v" and o.count == 2
    if kind == "sbase":
        return isinstance(o, Sub) and o.bank == "s" and o.count == 2
    if isinstance(o, Special):
        return o in (EXEC, VCC) and width <= 2 and base in ("sdst", "ssrc", "src")
    if isinstance(o, Imm):
        return base in ("ssrc", "src")
    if o.count != width:
        return False
    if base in ("sdst", "ssrc"):
        return o.bank == "s"
    if base in ("vdst", "vsrc", "vdata"):
        return o.bank == "v"
    if base in ("adst", "asrc"):
        return o.bank == "a"
    if base in ("avdst", "avsrc"):
        return o.bank in ("v", "a")
    return base == "src" and o.bank != "a"


def print_operand(o: Operand, assignment: Optional[dict[Reg, int]] = None, target: Optional[str] = None) -> str:
    """`o` in assembler syntax: physical where `assignment` places its register, else virtual;
    exec and vcc as `target` names them (exec_lo on a wave32 target)."""
    if isinstance(o, Imm):
        return o.text
    if isinstance(o, Special):
        return LANE_MASK_REGISTERS[target].get(o.name, o.name) if target else o.name
    if isinstance(o, Label):
        return o.name
    if assignment is None:
        return f"{o.reg!r}.{o.start}" if o.count == 1 else f"{o.reg!r}.{o.start}:{o.start + o.count - 1}"
    first = assignment[o.reg] + o.start
    return f"{o.bank}{first}" if o.count == 1 else f"{o.bank}[{first}:{first + o.count - 1}]"


def print_inst(inst: MInst, assignment: Optional[dict[Reg, int]] = None, target: Optional[str] = None) -> str:
    """One instruction as text: in `target`'s spelling where given, else under its table name."""
    if inst.opcode == "label":
        return f"{inst.uses[0].name}:"
    if inst.opcode == "s_waitcnt":
        text = "s_waitcnt " + " ".join(f"{k}({v})" for k, v in inst.mods.items())
    else:
        tied = {result for result, _ in info(inst.opcode).ties}   # printed once, as the source
        printed = [o for k, o in enumerate(inst.defs) if k not in tied] + inst.uses
        operands = ", ".join(print_operand(o, assignment, target) for o in printed)
        name = spelling(inst.opcode, target) if target else info(inst.opcode).assembler_name
        text = f"{name} {operands}".rstrip()
        if inst.mods.get("offen"):   # a buffer access's VGPR holds its byte offset
            text += " offen"
        if inst.mods.get("offset"):
            text += f" offset:{inst.mods['offset']}"
        text += "".join(f" {bit}" for bit in CACHE_POLICY_BITS if inst.mods.get(bit))
        if info(inst.opcode).is_dpp:
            text += " " + dpp_modifiers(inst.mods, target)
    return f"{text:<48}; {inst.comment}" if inst.comment else text


def dpp_modifiers(mods: dict[str, int], target: Optional[str] = None) -> str:
    """A DPP instruction's control, masks and bound_ctrl / fi bits as llvm-mc writes them (the
    control as `target` spells it; without a target, as the first target with that code does)."""
    code = mods["dpp_ctrl"]
    texts = [DPP_TEXT[target]] if target else list(DPP_TEXT.values())
    control = next((t[code] for t in texts if code in t), None)
    if control is None:
        raise ValueError(f"DPP_CTRL {code:#x} is no DPP control of {target or 'any target'}")
    text = (f"{control} row_mask:{mods.get('row_mask', DPP_FULL_MASK):#x} "
            f"bank_mask:{mods.get('bank_mask', DPP_FULL_MASK):#x}")
    return text + "".join(f" {bit}:1" for bit in ("bound_ctrl", "fi") if mods.get(bit))


def print_mir(insts: list[MInst], assignment: Optional[dict[Reg, int]] = None, target: Optional[str] = None) -> str:
    return "\n".join(("" if i.opcode == "label" else "  ") + print_inst(i, assignment, target) for i in insts)
