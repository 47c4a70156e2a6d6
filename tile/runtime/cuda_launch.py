"""The CUDA backend of a compiled kernel: loads its PTX once and launches it with packed arguments."""
from __future__ import annotations

from typing import Any, Optional

from ..ir import Operation, PointerType
from .arrays import describe_argument
from .cuda_driver import CudaDevice, current_stream_of

_STATIC_SHARED_LIMIT = 48 * 1024


def _arg_kind(t: Any) -> str:
    return "ptr" if isinstance(t, PointerType) else t.name


class CudaBackend:
    def __init__(self, ptx: str, func: Operation, options: dict[str, Any]):
        self.name = func.attrs["sym_name"]
        self.kernel = CudaDevice.get(0).load_module(ptx, self.name)
        self.block_x = options["num_warps"] * func.attrs.get("threads_per_warp", 32)
        self.shared_bytes = func.attrs.get("shared_bytes", 0)
        if self.shared_bytes > _STATIC_SHARED_LIMIT:
            self.kernel.set_dynamic_shared_memory(self.shared_bytes)
        self.kinds = tuple(_arg_kind(a.type) for a in func.regions[0].block.args)
        self.pointer_slots = tuple(i for i, k in enumerate(self.kinds) if k == "ptr")
        self.launcher = self.kernel.launcher(self.kinds)

    @property
    def metadata(self) -> dict[str, Any]:
        k = self.kernel
        return {"registers": k.num_regs, "spill_bytes": k.local_size_bytes, "shared_bytes": self.shared_bytes,
                "threads": self.block_x}

    def launch(self, grid: tuple[int, int, int], args: list, stream: Optional[int]) -> None:
        values = list(args)
        for i in self.pointer_slots:
            info = describe_argument(values[i])
            if not info.is_device:
                raise TypeError(f"{self.name}: argument {i} ({type(values[i]).__name__}) is in host memory; "
                                "pass a GPU array (tile.to_device, a CUDA torch tensor) or set TILE_INTERPRET=1")
            values[i] = info.address
        if stream is None:
            stream = current_stream_of(args)
        self.launcher(grid, self.block_x, self.shared_bytes, stream, *values)
