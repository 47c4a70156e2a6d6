"""The CUDA backend of a compiled kernel: loads its PTX once and launches it with packed arguments."""
from __future__ import annotations

from typing import Any, Callable

from ..ir import Operation, PointerType
from .cuda_driver import CudaDevice


def launch_metadata(func: Operation, options: dict[str, Any]) -> dict[str, Any]:
    """What launching needs of a simt function: kept in the disk cache beside the PTX."""
    kinds = ["ptr" if isinstance(a.type, PointerType) else a.type.name for a in func.regions[0].block.args]
    return {"name": func.attrs["sym_name"], "arg_kinds": kinds,
            "threads": options["num_warps"] * func.attrs.get("threads_per_warp", 32),
            "shared_bytes": func.attrs.get("shared_bytes", 0)}


class CudaBackend:
    def __init__(self, ptx: str, metadata: dict[str, Any]):
        self.name = metadata["name"]
        self.kernel = CudaDevice.get(0).load_module(ptx, self.name)
        self.block_x = metadata["threads"]
        self.shared_bytes = metadata["shared_bytes"]
        if self.shared_bytes > 48 * 1024:
            self.kernel.set_dynamic_shared_memory(self.shared_bytes)
        self.kinds = tuple(metadata["arg_kinds"])
        self.launcher = self.kernel.launcher(self.kinds)

    @property
    def metadata(self) -> dict[str, Any]:
        k = self.kernel
        return {"registers": k.num_regs, "spill_bytes": k.local_size_bytes, "shared_bytes": self.shared_bytes,
                "threads": self.block_x}

    def make_entry(self, positions: tuple[int, ...], value_count: int) -> Callable[..., None]:
        """The launch function for the binders (see Launcher.make_entry)."""
        return self.launcher.make_entry(self.block_x, self.shared_bytes, positions, value_count)
