"""The text of a gfx942, gfx90a or gfx1100 code object, and its assembly into an .hsaco with llvm-mc and ld.lld.

The assembly holds three parts (AMDGPU usage guide, "Code Object V5" and "Kernel
Descriptor"):

    .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
    .text ... add_kernel:  <instructions>  s_endpgm
    .amdhsa_kernel add_kernel                     the kernel descriptor: register counts (VGPRs and
      .amdhsa_next_free_vgpr 9 ...                AGPRs of the unified file), which SGPRs/VGPRs the
                                                  hardware fills at entry
    .end_amdhsa_kernel
    .amdgpu_metadata                              YAML the runtime reads: arguments (offset,
    amdhsa.kernels: - .name: ... .args: ...       size, kind), kernarg size, wave size
    .end_amdgpu_metadata

The instructions print in the target's spelling (isa.SPELLING: global_load_b32 on gfx1100),
and the descriptor holds the target's own fields (isa.DESCRIPTOR_FIELDS: accum_offset on
CDNA, wavefront_size32 on RDNA3) and its user SGPR count (isa.user_sgpr_count).

`assemble` runs `llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj` then
`ld.lld -shared`, found on PATH (versioned names such as llvm-mc-19 first: a plain llvm-mc may be
an LLVM older than gfx942).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from .isa import AGPR_GRANULE, DESCRIPTOR_FIELDS, TARGET_TRIPLE, WAVE_SIZE, user_sgpr_count
from .isel import Selection
from .mir import VCC, MInst, Reg, print_mir
from .regalloc import registers_used

TOOL_VERSIONS = ("-20", "-19", "-18", "-17", "")  # gfx942 needs LLVM 17+: the newest first


class ToolNotFound(RuntimeError):
    """llvm-mc or ld.lld is not installed."""


def _yaml_name(name: str) -> str:
    # !str: LLVM's YAML reader takes bare words such as n or y for booleans
    return f"!str {name}" if name.replace("_", "").isalnum() else f"!str '{name}'"


def kernel_text(sel: Selection, insts: list[MInst], assignment: dict[Reg, int], target: str) -> str:
    """The assembly of one kernel: instructions, descriptor and metadata."""
    name = sel.name
    vgprs = max(1, registers_used(assignment, "v"))
    agprs = registers_used(assignment, "a")
    sgprs = max(1, registers_used(assignment, "s"))
    uses_vcc = any(o == VCC for i in insts for o in i.defs + i.uses)
    spilled_sgprs = len({(i.defs[0].reg, i.uses[1].value) for i in insts if i.opcode == "v_writelane_b32"})
    body = print_mir(insts, assignment, target)
    # the unified register file (AMDGPUUsage, "Kernel Descriptor", GFX90A/GFX942): the AGPRs
    # start at accum_offset, the VGPRs rounded up to its granule, and next_free_vgpr counts both
    accum_offset = max(AGPR_GRANULE, -(-vgprs // AGPR_GRANULE) * AGPR_GRANULE)
    unified = accum_offset + agprs if agprs else vgprs
    computed = {"accum_offset": accum_offset}
    axes = sel.workgroup_id_axes
    descriptor = [
        f".amdhsa_group_segment_fixed_size {sel.lds_bytes}",
        f".amdhsa_private_segment_fixed_size 0",
        f".amdhsa_kernarg_size {sel.kernarg_size}",
        f".amdhsa_user_sgpr_count {user_sgpr_count(target, len(axes))}",
        ".amdhsa_user_sgpr_kernarg_segment_ptr 1",
        *(f".amdhsa_system_sgpr_workgroup_id_{'xyz'[a]} 1" for a in axes),
        ".amdhsa_system_vgpr_workitem_id 0",
        f".amdhsa_next_free_vgpr {unified}",
        f".amdhsa_next_free_sgpr {sgprs}",
        *(f".amdhsa_{field} {computed[field] if value is None else value}"
          for field, value in DESCRIPTOR_FIELDS[target].items()),
        f".amdhsa_reserve_vcc {int(uses_vcc)}",
        ".amdhsa_float_denorm_mode_32 3",
        ".amdhsa_float_denorm_mode_16_64 3",
    ]
    args = []
    for a in sel.kernargs:
        fields = ([f".name: {_yaml_name(a.name)}"] if a.name else []) + [
            f".offset: {a.offset}", f".size: {a.size}", f".value_kind: {a.value_kind}"]
        if a.address_space:
            fields.append(f".address_space: {a.address_space}")
        args.append("      - " + "\n        ".join(fields))
    metadata = [
        "---",
        "amdhsa.version: [1, 2]",
        f"amdhsa.target: {TARGET_TRIPLE}--{target}",
        "amdhsa.kernels:",
        f"  - .name: {_yaml_name(name)}",
        f"    .symbol: {name}.kd",
        f"    .kernarg_segment_size: {sel.kernarg_size}",
        "    .kernarg_segment_align: 8",
        f"    .group_segment_fixed_size: {sel.lds_bytes}",
        "    .private_segment_fixed_size: 0",
        f"    .wavefront_size: {WAVE_SIZE[target]}",
        f"    .sgpr_count: {sgprs + 2 * uses_vcc}",
        f"    .vgpr_count: {unified}",   # VGPRs and AGPRs: what occupancy depends on
        f"    .agpr_count: {agprs}",
        f"    .sgpr_spill_count: {spilled_sgprs}",   # dwords kept in VGPR lanes (regalloc)
        "    .vgpr_spill_count: 0",
        f"    .max_flat_workgroup_size: {sel.workgroup_size}",
        "    .args:" if args else "    .args: []",
        *args,
        "...",
    ]
    return "\n".join([
        f'  .amdgcn_target "{TARGET_TRIPLE}--{target}"',
        "  .amdhsa_code_object_version 5",
        "  .text",
        f"  .globl {name}",
        "  .p2align 8",
        f"  .type {name},@function",
        f"{name}:",
        body,
        f".Lfunc_end_{name}:",
        f"  .size {name}, .Lfunc_end_{name}-{name}",
        "",
        "  .rodata",
        "  .p2align 6",
        f"  .amdhsa_kernel {name}",
        *("    " + d for d in descriptor),
        "  .end_amdhsa_kernel",
        "",
        "  .amdgpu_metadata",
        *metadata,
        "  .end_amdgpu_metadata",
        "",
    ])


def find_tool(name: str) -> str:
    """The path of `name` (llvm-mc, ld.lld) on PATH, plain or with an LLVM version suffix."""
    for suffix in TOOL_VERSIONS:
        path = shutil.which(name + suffix)
        if path:
            return path
    raise ToolNotFound(f"{name} is not installed (looked for {', '.join(name + s for s in TOOL_VERSIONS)} on PATH); "
                       f"on Debian/Ubuntu: apt-get install llvm-19 lld-19")


def assemble(text: str, target: str) -> bytes:
    """The .hsaco (an ELF shared object) of assembly `text` for `target`."""
    mc, lld = find_tool("llvm-mc"), find_tool("ld.lld")
    with tempfile.TemporaryDirectory(prefix="tile-amdgcn-") as tmp:
        source, obj, hsaco = (os.path.join(tmp, f) for f in ("kernel.s", "kernel.o", "kernel.hsaco"))
        with open(source, "w") as f:
            f.write(text)
        for command in ([mc, f"-triple={TARGET_TRIPLE}", f"-mcpu={target}", "-filetype=obj", source, "-o", obj],
                        [lld, "-shared", obj, "-o", hsaco]):
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode:
                raise RuntimeError(f"{os.path.basename(command[0])} failed for {target}:\n{run.stderr}")
        with open(hsaco, "rb") as f:
            return f.read()
