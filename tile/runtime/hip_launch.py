"""The HIP backend of a compiled kernel: assembles its AMDGCN text into a code object, loads it
once (hip_driver.HipKernel) and launches it with the kernarg segment its metadata describes.

    backend = HipBackend(amdgcn_text, launch_info, "gfx942")   # launch_info: amdgcn_launch_metadata
    entry = backend.make_entry(positions, value_count, compiled)
    entry(grid, values, args, stream)                          # NumPy arrays are staged in and out

The launch binders call `entry` as they call the CUDA backend's; it has no `fast` form, so every
launch takes the general binder (whose key and in-memory cache are the CUDA path's).
"""
from __future__ import annotations

from typing import Any, Callable

from ..utils import check_grid_limits, grid3
from .hip_driver import HipKernel, KernargField, staged_arguments


def amdgcn_launch_metadata(selection: Any) -> dict[str, Any]:
    """What launching needs of a compiled AMDGCN kernel (amdgcn.isel.Selection), as JSON for
    the disk cache beside the assembly text."""
    return {"name": selection.name, "kernarg_size": selection.kernarg_size,
            "workgroup_size": selection.workgroup_size, "shared_bytes": selection.lds_bytes,
            "kernargs": [[a.name, a.offset, a.size, a.value_kind, a.address_space] for a in selection.kernargs]}


class HipBackend:
    """A kernel loaded on the HIP device: its code object assembled from `text` for `target`."""

    def __init__(self, text: str, metadata: dict[str, Any], target: str):
        from ..codegen.amdgcn import assemble

        self.name = metadata["name"]
        self.shared_bytes = metadata["shared_bytes"]
        self.workgroup_size = metadata["workgroup_size"]
        self.hsaco = assemble(text, target)
        kernargs = [KernargField(*a) for a in metadata["kernargs"]]
        self.kernel = HipKernel.load(self.hsaco, self.name, kernargs, metadata["kernarg_size"], self.workgroup_size)

    @property
    def metadata(self) -> dict[str, Any]:
        return {"shared_bytes": self.shared_bytes, "threads": self.workgroup_size}

    def make_entry(self, positions: tuple[int, ...], value_count: int, compiled: Any = None) -> Callable[..., Any]:
        """entry(grid, values, args, stream): launch with the arguments at `positions` of `args`."""
        kernel, name = self.kernel, self.name

        def entry(grid: Any, values: tuple, args: tuple, stream: Any) -> Any:
            grid = grid3(grid, name)
            check_grid_limits(grid, name)
            if min(grid) == 0:  # nothing to run, as a CUDA launch of an empty grid
                return compiled
            with staged_arguments([args[i] for i in positions], name) as device_args:
                kernel.launch(grid, device_args, stream)
            return compiled

        return entry
