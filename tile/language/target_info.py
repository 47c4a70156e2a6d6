"""`tl.target_info`: the target a kernel is compiled for, as compile-time values.

Inside a @tile.jit function these answer for the compilation in progress, not for the
machine: `tile.dump(kernel, ..., target="sm_80")` sees sm_80 on an H100, and a kernel run
on the NumPy interpreter sees the interpreter. Outside kernels they answer for where a launch
would run now (the GPU, or the interpreter).

    @tile.jit
    def kernel(x_ptr, N: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, N))
        if tl.target_info.cuda_capability_geq(9, 0):
            x = fast_path_for_hopper(x)
        ...
"""
from __future__ import annotations

from typing import NamedTuple, Union

from tile.frontend.constexpr_function import constexpr_function


class GPUTarget(NamedTuple):
    """A compilation target: backend ("cuda", "hip", or "interpreter" for the NumPy interpreter),
    the architecture (a compute capability as an int, 90 for sm_90 and sm_90a; the gfx name for
    AMD) and the warp size."""

    backend: str
    arch: Union[int, str]
    warp_size: int


def target_of(name: str) -> GPUTarget:
    """The GPUTarget of a target name ("sm_80", "sm_90a", "gfx942", "interpreter")."""
    if name.startswith("sm_"):
        return GPUTarget("cuda", int("".join(ch for ch in name[3:] if ch.isdigit())), 32)
    if name.startswith("gfx"):  # AMD: the arch is the name; waves of 64 lanes on CDNA, 32 on RDNA3
        from tile.codegen.target import TARGETS

        facts = TARGETS.get(name)
        return GPUTarget("hip", name, facts.warp_size if facts is not None else 64)
    return GPUTarget(name, 0, 1)


def current_target() -> GPUTarget:
    """The target of the kernel being compiled, or outside kernels where a launch runs now."""
    from tile.frontend import core

    name = core.current().target if core.compiling() else None
    if name is None:
        from tile.compiler import current_target as launch_target

        name = launch_target()
    return target_of(name)


current_target.__tile_builtin__ = True  # type: ignore[attr-defined]


@constexpr_function
def is_cuda() -> bool:
    """Whether the kernel is compiled for an NVIDIA GPU."""
    return current_target().backend == "cuda"


@constexpr_function
def cuda_capability_geq(major: int, minor: int = 0) -> bool:
    """Whether the kernel is compiled for an NVIDIA GPU of compute capability >= (major, minor):
    a compile-time guard for code (inline asm, say) that needs newer hardware."""
    target = current_target()
    return target.backend == "cuda" and target.arch >= major * 10 + minor


@constexpr_function
def is_hip() -> bool:
    """Whether the kernel is compiled for an AMD GPU (a gfx target)."""
    return current_target().backend == "hip"


@constexpr_function
def is_hip_cdna3() -> bool:
    """Whether the kernel is compiled for AMD CDNA3 (gfx942)."""
    return current_target().arch == "gfx942"


@constexpr_function
def is_hip_cdna4() -> bool:
    """Whether the kernel is compiled for AMD CDNA4 (gfx950)."""
    return current_target().arch == "gfx950"


__all__ = ["GPUTarget", "target_of", "current_target", "is_cuda", "cuda_capability_geq", "is_hip", "is_hip_cdna3",
           "is_hip_cdna4"]
