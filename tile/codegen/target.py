"""Targets of the code generator: one frozen record of facts per target name, and its emitter.

The lowering (tile/codegen/lower*.py) is written once for every target; what differs between
targets is read from here rather than written as literals: the warp size, the architecture
number that gates instructions, the address spaces and register classes of the assembly, the
barriers, shuffles and matrix instructions tile emits for it. The emitter of a target lives in
its own sibling package (tile/codegen/ptx/ today) and is imported only through `emitter`:

    facts = target_facts("sm_90a")
    facts.isa, facts.arch, facts.warp_size             # "ptx", 90, 32
    facts.has_matrix_instruction("wgmma")              # True (sm_90: False)
    ptx_text = emitter("sm_90a")(simt_func, "sm_90a", "8.7")

An unknown target name is a ValueError that lists the known ones.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Mapping

from ..ir.core import Operation
from ..ir.simt_ops import MMA_SHAPES, SHFL_MODES, WGMMA_SHAPES

# The shapes of each matrix-instruction family, by operand type (tile.ir.simt_ops holds the entries).
MATRIX_CATALOGUES: Mapping[str, Mapping[str, object]] = {"mma.sync": MMA_SHAPES, "wgmma": WGMMA_SHAPES}

# Where each instruction set's emitter lives: (package under tile.codegen, its entry function).
EMITTERS: Mapping[str, tuple[str, str]] = {"ptx": ("ptx", "emit_ptx"), "amdgcn": ("amdgcn", "emit_amdgcn")}


@dataclass(frozen=True)
class TargetFacts:
    """What the code generator needs to know of one target (as tile emits for it)."""

    name: str                               # the target name tile accepts: "sm_90a"
    isa: str                                # the instruction set, a key of EMITTERS
    arch: int                               # architecture number that gates instructions (sm_89 -> 89)
    warp_size: int                          # threads per warp (NVIDIA) or wave (AMD)
    address_spaces: tuple[str, ...]         # the state spaces the emitted code addresses
    register_classes: tuple[str, ...]       # register classes of the assembly (PTX: %p %rs %r %rd %f %fd)
    barriers: tuple[str, ...]               # the barriers tile emits: CTA-wide, and mbarriers with TMA
    shuffle_modes: tuple[str, ...]          # lane exchanges of simt.shfl
    matrix_instructions: tuple[str, ...]    # matrix-instruction families, keys of MATRIX_CATALOGUES

    def has_matrix_instruction(self, family: str) -> bool:
        return family in self.matrix_instructions

    def matrix_catalogue(self, family: str) -> Mapping[str, object]:
        """The shapes of matrix-instruction `family` on this target, by operand type."""
        if family not in self.matrix_instructions:
            raise ValueError(f"{self.name} has no {family} instructions; it has {', '.join(self.matrix_instructions)}")
        return MATRIX_CATALOGUES[family]


def _ptx(name: str, arch: int, matrix: tuple[str, ...], barriers: tuple[str, ...]) -> TargetFacts:
    return TargetFacts(name=name, isa="ptx", arch=arch, warp_size=32,
                       address_spaces=("global", "shared", "local", "param"),
                       register_classes=("p", "rs", "r", "rd", "f", "fd"),
                       barriers=barriers, shuffle_modes=SHFL_MODES, matrix_instructions=matrix)


def _amdgcn(name: str, arch: int, wave_size: int) -> TargetFacts:
    return TargetFacts(name=name, isa="amdgcn", arch=arch, warp_size=wave_size,
                       address_spaces=("global", "lds", "scratch", "kernarg"), register_classes=("s", "v"),
                       barriers=("s_barrier",), shuffle_modes=SHFL_MODES, matrix_instructions=())


TARGETS: Mapping[str, TargetFacts] = {t.name: t for t in (
    _ptx("sm_80", 80, ("mma.sync",), ("bar.sync",)),
    _ptx("sm_86", 86, ("mma.sync",), ("bar.sync",)),
    _ptx("sm_89", 89, ("mma.sync",), ("bar.sync",)),
    _ptx("sm_90", 90, ("mma.sync",), ("bar.sync",)),
    _ptx("sm_90a", 90, ("mma.sync", "wgmma"), ("bar.sync", "mbarrier")),
    # A warp is one wave of the target: 64 lanes on CDNA3 and CDNA2 (as in Triton on AMD,
    # num_warps counts waves of 64, the layouts spread 64 lanes, and reductions, scans and
    # MFMA tiles span the whole wave), 32 on RDNA3. arch reads the gfx name's digits in order,
    # the last one hexadecimal (gfx90a: 9, 0, 10 -> 910; gfx1100: 1, 1, 0, 0 -> 1100).
    _amdgcn("gfx942", 942, 64),
    _amdgcn("gfx90a", 910, 64),
    _amdgcn("gfx1100", 1100, 32),
)}


class TargetResourceError(Exception):
    """A kernel needs more of a target's resource (registers of a bank, shared memory) than it
    has. The compiler reports it as tile.runtime.errors.OutOfResources, with these fields (the
    code generator does not import the runtime)."""

    def __init__(self, required: int, limit: int, name: str, *, kernel: str, target: str, hint: str = "") -> None:
        self.required, self.limit, self.name = required, limit, name
        self.kernel, self.target, self.hint = kernel, target, hint
        super().__init__(f"{kernel} needs {required} {name} on {target}, which has {limit}" + (f" ({hint})" if hint else ""))


def target_facts(name: str) -> TargetFacts:
    """The facts of target `name`; a ValueError listing the known targets for any other name."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; tile compiles for {', '.join(TARGETS)}") from None


def targets_of(isa: str) -> tuple[str, ...]:
    """The names of the targets of instruction set `isa`, in table order."""
    return tuple(name for name, facts in TARGETS.items() if facts.isa == isa)


def emitter(name: str) -> Callable[[Operation, str, str], str]:
    """The function printing a simt.func as target `name`'s assembly: f(simt_func, target, isa_version)."""
    package, entry = EMITTERS[target_facts(name).isa]
    return getattr(importlib.import_module(f"{__package__}.{package}"), entry)
