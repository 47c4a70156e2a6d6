"""AMDGCN assembly text -> the emulator's decoded kernel (the second instruction set beside PTX).

It reads the text tile emits for gfx942, gfx90a and gfx1100 (tile.codegen.amdgcn.kernel_object):
the target of its `.amdgcn_target` line, the instructions
between the kernel's label and `.Lfunc_end_<name>`, the `.amdhsa_*` descriptor (LDS bytes,
which workgroup ids the hardware writes into SGPRs, and from which SGPR) and the code-object
metadata (the kernarg segment: each argument's offset, size and kind; the wave size and
workgroup size). A target's own spelling of an instruction (global_load_b32 in gfx1100 code,
isa.SPELLING) decodes to the table's name (global_load_dword), and exec_lo / vcc_lo (a wave32
target's lane masks) to exec / vcc. A buffer atomic with the target's return bit decodes to its
returning row (buffer_atomic_add ... sc0 -> buffer_atomic_add_rtn), whose data operand, written
once, is also its result (isa.InstrInfo.ties).

    global_load_dword v4, v[2:3], off offset:4      ; kernel.py:21
        -> AmdInstr("global_load_dword", defs=(Reg("v", 4, 1),),
                    uses=(Reg("v", 2, 2), Special("off")), mods={"offset": 4}, line=31,
                    text="global_load_dword v4, v[2:3], off offset:4", origin="kernel.py:21")

How many operands are results and how many are sources comes from the instruction table of
the code generator (tile.codegen.amdgcn.isa.INSTRUCTIONS), the one description of the AMDGCN
instructions tile knows: a mnemonic outside it or not on the text's target (a gfx942 MFMA name in
gfx90a code), a GFX9 name that the target spells otherwise (global_load_dword in gfx1100 code),
a cache-policy bit of another target (glc in gfx942 code), or a line whose operand count
disagrees with the table, is an AmdgcnSyntaxError naming the line. A DPP instruction's control
(quad_perm:[1,0,3,2], row_xmask:4: isa.DPP_CONTROLS) becomes its DPP_CTRL code in mods, with
row_mask and bank_mask (0xf where not written), bound_ctrl and fi; a control the target does not
have, bound_ctrl:0 (which llvm-mc reads differently on GFX9 and GFX11) or fi on a GFX9 target is
an AmdgcnSyntaxError. Decoded kernels are
cached by the text's hash.
"""
from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass, field
from typing import Union

from ..codegen.amdgcn.isa import (ATOMIC_RETURN_BIT, CACHE_POLICY_BITS, DPP_CODES, DPP_FETCH_INACTIVE_TARGETS,
                                  DPP_FULL_MASK, INSTRUCTIONS, LANE_MASK_REGISTERS, RETURNING_SUFFIX, SPELLING,
                                  TARGET_TRIPLE, TARGETS, USER_SGPRS)
from .errors import EmulatorError


class AmdgcnSyntaxError(EmulatorError):
    """AMDGCN text the decoder cannot read (malformed, or an instruction it does not know)."""


@dataclass(frozen=True)
class Reg:
    """`count` consecutive registers of `bank` ("s", "v" or "a") from `first`: v4, s[0:1], a[0:15]."""

    bank: str
    first: int
    count: int

    def dword(self, k: int) -> "Reg":
        return Reg(self.bank, self.first + k, 1)


@dataclass(frozen=True)
class Imm:
    """An immediate: `value` its bits as written (an inline integer keeps its sign, so a 64-bit
    operand sign-extends it; a float is its f32 bits)."""

    value: int


@dataclass(frozen=True)
class Special:
    """exec, vcc, off or null."""

    name: str


@dataclass(frozen=True)
class Label:
    name: str


AmdOperand = Union[Reg, Imm, Special, Label]


@dataclass
class AmdInstr:
    opcode: str
    defs: tuple[AmdOperand, ...]
    uses: tuple[AmdOperand, ...]
    mods: dict[str, int]
    line: int             # 1-based line of the assembly text
    text: str             # the instruction as written, without its comment
    origin: str = ""      # the tile source line of its comment ("kernel.py:21"), if any
    target: int = -1      # branch target: an instruction index

    def where(self) -> str:
        text = f"AMDGCN line {self.line} `{self.text}`"
        return text + (f", from {self.origin}" if self.origin else "")

    describe = where

    @property
    def source(self) -> "AmdInstr":
        """Where the instruction comes from, as the machine-independent checks ask (describe())."""
        return self


@dataclass(frozen=True)
class KernArg:
    name: str
    offset: int
    size: int
    value_kind: str


@dataclass
class AmdKernel:
    name: str
    instrs: list[AmdInstr]
    kernargs: list[KernArg]
    kernarg_size: int
    lds_bytes: int
    workgroup_size: int
    wave_size: int
    workgroup_id_axes: tuple[int, ...]   # the axes whose workgroup id the hardware puts in s2, s3...
    target: str                          # "gfx942", from the .amdgcn_target line
    user_sgprs: int = USER_SGPRS         # the first workgroup id's SGPR (.amdhsa_user_sgpr_count)
    user_args: list[KernArg] = field(init=False)

    def __post_init__(self) -> None:
        self.user_args = [a for a in self.kernargs if not a.value_kind.startswith("hidden_")]


_REG = re.compile(r"^([sva])(\d+)$|^([sva])\[(\d+):(\d+)\]$")
_POLICY_BITS = sorted({bit for bits in CACHE_POLICY_BITS.values() for bit in bits})
_MOD = re.compile(rf"^(offset):(-?\d+)$|^({'|'.join(_POLICY_BITS)})$|^(offen)$")
_TARGET = re.compile(rf'^\s*\.amdgcn_target\s+"{TARGET_TRIPLE}--(\w+)"')
_COUNTER = re.compile(r"(vmcnt|lgkmcnt|expcnt)\((\d+)\)")
_ORIGIN = re.compile(r"([\w.\-/]+\.py:\d+)")
# per target: its spelling of an instruction -> the table's name; its names of exec and vcc -> theirs
_TABLE_NAMES = {target: {spelled: name for name, spelled in names.items()} for target, names in SPELLING.items()}
_SPECIALS = {target: {"exec": "exec", "vcc": "vcc", "off": "off", "null": "null",
                      **{spelled: name for name, spelled in names.items()}}
             for target, names in LANE_MASK_REGISTERS.items()}


def _operand(token: str, line: int, text: str, kernel: str, target: str) -> AmdOperand:
    m = _REG.match(token)
    if m:
        if m.group(1):
            return Reg(m.group(1), int(m.group(2)), 1)
        first, last = int(m.group(4)), int(m.group(5))
        return Reg(m.group(3), first, last - first + 1)
    if token in _SPECIALS[target]:
        return Special(_SPECIALS[target][token])
    if token.startswith(".L") or token.startswith("L"):
        return Label(token)
    try:
        return Imm(int(token, 0))
    except ValueError:
        pass
    try:
        return Imm(struct.unpack("<I", struct.pack("<f", float(token)))[0])
    except ValueError:
        where = f"AMDGCN line {line} `{text}`"
        raise AmdgcnSyntaxError(kernel, f"cannot read operand `{token}`", where=where) from None


_DPP_KEYWORDS = {text.partition(":")[0] for codes in DPP_CODES.values() for text in codes}
_DPP_MASK = re.compile(r"^(row_mask|bank_mask):(0x[0-9a-fA-F]+|\d+)$")


def _dpp_modifiers(tokens: list[str], kernel: str, target: str, where: str) -> dict[str, int]:
    """The DPP modifiers at the end of `tokens` (removed from it) as mods: dpp_ctrl, row_mask,
    bank_mask, bound_ctrl, fi."""
    mods = {"row_mask": DPP_FULL_MASK, "bank_mask": DPP_FULL_MASK}
    while tokens:
        token = tokens[-1]
        if m := _DPP_MASK.match(token):
            value = int(m.group(2), 0)
            if value > DPP_FULL_MASK:
                raise AmdgcnSyntaxError(kernel, f"{m.group(1)} {value:#x} is wider than 4 bits", where=where)
            mods[m.group(1)] = value
        elif token in ("bound_ctrl:1", "fi:1"):
            if token == "fi:1" and target not in DPP_FETCH_INACTIVE_TARGETS:
                raise AmdgcnSyntaxError(kernel, f"fi:1 is not a modifier of {target}", where=where)
            mods[token.split(":")[0]] = 1
        elif token == "bound_ctrl:0":
            raise AmdgcnSyntaxError(kernel, "bound_ctrl:0 sets the bit on GFX9 and clears it on GFX11: write "
                                            "bound_ctrl:1, or nothing", where=where)
        elif token in DPP_CODES[target] and "dpp_ctrl" not in mods:
            mods["dpp_ctrl"] = DPP_CODES[target][token]
        else:
            break
        tokens.pop()
    if "dpp_ctrl" not in mods:
        found = tokens[-1] if tokens and tokens[-1].partition(":")[0] in _DPP_KEYWORDS else "none"
        controls = ", ".join(sorted({t.partition(":")[0] for t in DPP_CODES[target]}))
        raise AmdgcnSyntaxError(kernel, f"a DPP instruction needs one DPP control of {target} ({controls}); "
                                        f"found {found}", where=where)
    return mods


def _instruction(body: str, line: int, origin: str, kernel: str, target: str) -> AmdInstr:
    spelled, _, rest = body.partition(" ")
    where = f"AMDGCN line {line} `{body}`"
    if spelled in SPELLING[target]:
        raise AmdgcnSyntaxError(kernel, f"{spelled} is spelled {SPELLING[target][spelled]} on {target}", where=where)
    opcode = _TABLE_NAMES[target].get(spelled, spelled)
    row = INSTRUCTIONS.get(opcode)
    if row is None or opcode == "label" or opcode != row.assembler_name:   # a returning row's name is no mnemonic
        raise AmdgcnSyntaxError(kernel, f"unknown instruction `{opcode}`", where=where)
    if target not in row.targets:
        raise AmdgcnSyntaxError(kernel, f"{opcode} does not exist on {target} (only on {', '.join(row.targets)})",
                                where=where)
    if opcode == "s_waitcnt":
        counts = {name: int(n) for name, n in _COUNTER.findall(rest)}
        return AmdInstr(opcode, (), (), counts, line, body, origin)
    tokens = rest.split()
    mods: dict[str, int] = _dpp_modifiers(tokens, kernel, target, where) if row.is_dpp else {}
    while tokens and (m := _MOD.match(tokens[-1])):   # modifiers follow the operands: offen offset:4 sc0
        if m.group(1):
            mods["offset"] = int(m.group(2))
        elif m.group(4):
            mods["offen"] = 1
        else:
            if m.group(3) not in CACHE_POLICY_BITS[target]:
                raise AmdgcnSyntaxError(kernel, f"{m.group(3)} is not a cache-policy bit of {target} (it has "
                                                f"{', '.join(CACHE_POLICY_BITS[target])})", where=where)
            mods[m.group(3)] = 1
        tokens.pop()
    if mods.get(ATOMIC_RETURN_BIT[target]) and opcode + RETURNING_SUFFIX in INSTRUCTIONS:
        opcode = opcode + RETURNING_SUFFIX   # the returning form: its data operand is also its result
        row = INSTRUCTIONS[opcode]
    rest = " ".join(tokens)
    pieces = [p.strip() for p in rest.split(",")] if rest else []
    if any(" " in p or not p for p in pieces):
        raise AmdgcnSyntaxError(kernel, f"cannot read the operands of {opcode}", where=where)
    operands = [_operand(p, line, body, kernel, target) for p in pieces]
    tied = dict(row.ties)   # result index -> the source it is written once as
    printed = len(row.defs) - len(tied) + len(row.uses)
    if len(operands) != printed:
        raise AmdgcnSyntaxError(kernel, f"{opcode} takes {printed} operands, got {len(operands)}", where=where)
    split = len(row.defs) - len(tied)
    results, sources = iter(operands[:split]), operands[split:]
    defs = tuple(sources[tied[k]] if k in tied else next(results) for k in range(len(row.defs)))
    return AmdInstr(opcode, defs, tuple(sources), mods, line, body, origin)


def _metadata(lines: list[str]) -> tuple[list[KernArg], dict[str, int]]:
    """The kernel's arguments and its numeric fields (.kernarg_segment_size...) from the
    code-object metadata between .amdgpu_metadata and .end_amdgpu_metadata."""
    args: list[dict[str, str]] = []
    fields: dict[str, int] = {}
    in_args = False
    for raw in lines:
        text = raw.strip()
        if text.startswith(".args:"):
            in_args = True
            continue
        if not text.startswith(("- .", ".")) or ":" not in text:
            continue
        starts_arg = in_args and text.startswith("- ")
        if starts_arg:
            args.append({})
            text = text[2:]
        key, _, value = text.partition(":")
        value = value.strip().removeprefix("!str ").strip()
        if starts_arg or (in_args and raw.startswith("        ")):
            args[-1][key] = value
        elif value.lstrip("-").isdigit():
            fields[key] = int(value)
    kernargs = [KernArg(a.get(".name", ""), int(a[".offset"]), int(a[".size"]), a[".value_kind"]) for a in args]
    return kernargs, fields


def _check_register_file(name: str, instrs: list[AmdInstr], descriptor: dict[str, int]) -> None:
    """Every VGPR and AGPR the code names lies in the part of the unified register file the
    descriptor allocates: VGPRs below .amdhsa_accum_offset (where the AGPRs start) and below
    .amdhsa_next_free_vgpr, AGPRs from accum_offset up to next_free_vgpr (AMDGPUUsage,
    "Kernel Descriptor", GFX90A/GFX942). A descriptor without the counts checks nothing."""
    total = descriptor.get(".amdhsa_next_free_vgpr")
    if total is None:
        return
    accum_offset = descriptor.get(".amdhsa_accum_offset", total)
    ends = {"v": min(total, accum_offset), "a": max(0, total - accum_offset)}
    for ins in instrs:
        for o in ins.defs + ins.uses:
            if isinstance(o, Reg) and o.bank in ends and o.first + o.count > ends[o.bank]:
                raise AmdgcnSyntaxError(name, f"{o.bank}{o.first + o.count - 1} lies outside the {ends[o.bank]} "
                                              f"{'VGPRs' if o.bank == 'v' else 'AGPRs'} the kernel descriptor allocates "
                                              f"(.amdhsa_next_free_vgpr {total}, .amdhsa_accum_offset {accum_offset})",
                                        where=ins.where())


@functools.lru_cache(maxsize=64)
def decode_amdgcn(text: str) -> AmdKernel:
    """The one kernel of AMDGCN text `text` (as tile emits it)."""
    lines = text.splitlines()
    name_line = next((k for k, line in enumerate(lines) if line.strip().startswith(".globl ")), None)
    if name_line is None:
        raise AmdgcnSyntaxError("?", "no `.globl` kernel in the AMDGCN text")
    name = lines[name_line].split()[1]
    target = next((m.group(1) for line in lines if (m := _TARGET.match(line))), None)
    if target not in TARGETS:
        raise AmdgcnSyntaxError(name, f"the `.amdgcn_target` line names {target or 'no target'}; the emulator runs "
                                      f"{', '.join(TARGETS)}")
    try:
        start = lines.index(f"{name}:") + 1
        end = lines.index(f".Lfunc_end_{name}:")
    except ValueError:
        raise AmdgcnSyntaxError(name, f"the kernel's body (`{name}:` ... `.Lfunc_end_{name}:`) is missing") from None
    instrs: list[AmdInstr] = []
    labels: dict[str, int] = {}
    for k in range(start, end):
        body, _, comment = lines[k].partition(";")
        body = " ".join(body.split())
        if not body:
            continue
        if body.endswith(":") and " " not in body:
            labels[body[:-1]] = len(instrs)
            continue
        origin = _ORIGIN.search(comment)
        instrs.append(_instruction(body, k + 1, origin.group(1) if origin else "", name, target))
    for ins in instrs:
        for o in ins.uses:
            if isinstance(o, Label):
                if o.name not in labels:
                    raise AmdgcnSyntaxError(name, f"branch to an unknown label {o.name}", where=ins.where())
                ins.target = labels[o.name]
    descriptor = {}
    for line in lines[end:]:
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith(".amdhsa_") and parts[1].isdigit():
            descriptor[parts[0]] = int(parts[1])
    _check_register_file(name, instrs, descriptor)
    try:
        meta_start = next(k for k, line in enumerate(lines) if line.strip() == ".amdgpu_metadata")
    except StopIteration:
        raise AmdgcnSyntaxError(name, "no .amdgpu_metadata (the kernarg layout) in the AMDGCN text") from None
    kernargs, fields = _metadata(lines[meta_start:])
    axes = tuple(a for a, axis in enumerate("xyz") if descriptor.get(f".amdhsa_system_sgpr_workgroup_id_{axis}"))
    return AmdKernel(name, instrs, kernargs, fields.get(".kernarg_segment_size", 0),
                     descriptor.get(".amdhsa_group_segment_fixed_size", 0),
                     fields.get(".max_flat_workgroup_size", 64), fields.get(".wavefront_size", 64), axes, target,
                     descriptor.get(".amdhsa_user_sgpr_count", USER_SGPRS))


__all__ = ["decode_amdgcn", "AmdKernel", "AmdInstr", "KernArg", "Reg", "Imm", "Special", "Label",
           "AmdgcnSyntaxError"]
