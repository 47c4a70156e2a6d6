"""The CUDA backend of a compiled kernel: loads its PTX once per device and launches it with
packed arguments. Inside a CUDA graph capture nothing is loaded: the first launch of a kernel
must come before the capture (cuda_driver.CaptureError says so)."""
from __future__ import annotations

from typing import Any, Callable

from ..ir import Operation, PointerType
from ..utils import grid3
from .allocation import allocate_scratch
from .cuda_driver import CaptureError, CudaDevice, capturing, current_stream_of, loading_device
from .errors import OutOfResources


def launch_metadata(func: Operation, options: dict[str, Any]) -> dict[str, Any]:
    """What launching needs of a simt function: kept in the disk cache beside the PTX."""
    kinds = ["ptr" if isinstance(a.type, PointerType) else a.type.name for a in func.regions[0].block.args]
    return {"name": func.attrs["sym_name"], "arg_kinds": kinds,
            "threads": options["num_warps"] * func.attrs.get("threads_per_warp", 32),
            "shared_bytes": func.attrs.get("shared_bytes", 0),
            "global_scratch_bytes": func.attrs.get("global_scratch_bytes", 0),
            "asserts": [f"{op.attrs['file']}:{op.attrs['line']}: {op.attrs['message']}" for op in func.walk()
                        if op.name == "simt.assertfail"],
            "cooperative": bool(options.get("launch_cooperative_grid", False)),
            "pdl": bool(options.get("launch_pdl", False))}


TENSOR_MAP_HINT = ("this kernel builds TMA tensor maps (tl.make_tensor_descriptor, or block pointers) whose base "
                   "must be 16-byte aligned and whose strides but the last must be multiples of 16 bytes; a map "
                   "that breaks the rule points at address 0, and its first copy faults")


class CudaBackend:
    """A kernel loaded on one GPU: `device` (an index), by default `loading_device()`, the
    launch's device while jit compiles for it."""

    def __init__(self, ptx: str, metadata: dict[str, Any], device_index: int | None = None):
        self.name = metadata["name"]
        if capturing():  # loading a module is no stream work: a graph could not replay it
            raise CaptureError(self.name)
        device = CudaDevice.of(loading_device() if device_index is None else device_index)
        self.device = device.ordinal
        self.shared_bytes = metadata["shared_bytes"]
        self.scratch_bytes = metadata.get("global_scratch_bytes", 0)  # per program
        if self.shared_bytes > device.max_shared_memory_per_block_optin:
            raise OutOfResources(self.shared_bytes, device.max_shared_memory_per_block_optin, "shared memory",
                                 kernel=self.name, target=device.ptx_target())
        self.kernel = device.load_module(ptx, self.name)
        self.kernel.assert_sites = tuple(metadata.get("asserts", ()))
        if self.scratch_bytes:
            self.kernel.fault_hint = TENSOR_MAP_HINT
        self.block_x = metadata["threads"]
        if self.block_x > self.kernel.max_threads_per_block:  # too many registers for this block size
            raise OutOfResources(self.block_x, self.kernel.max_threads_per_block, "threads", kernel=self.name,
                                 target=device.ptx_target(),
                                 hint=f"it uses {self.kernel.num_regs} registers per thread; use fewer num_warps")
        if self.shared_bytes > 48 * 1024:
            self.kernel.set_dynamic_shared_memory(self.shared_bytes)
        self.kinds = tuple(metadata["arg_kinds"])
        attributes = tuple(a for a in ("cooperative", "pdl") if metadata.get(a, False))
        self.launcher = self.kernel.launcher(self.kinds, attributes)

    @property
    def metadata(self) -> dict[str, Any]:
        k = self.kernel
        return {"registers": k.num_regs, "spill_bytes": k.local_size_bytes, "shared_bytes": self.shared_bytes,
                "threads": self.block_x}

    def make_entry(self, positions: tuple[int, ...], value_count: int, compiled: Any = None) -> Callable[..., Any]:
        """The launch function for the binders (see Launcher.make_entry); it returns `compiled`.
        A kernel with global scratch (its last parameter) gets a buffer from the allocator at
        each launch, `global_scratch_bytes` per program."""
        if not self.scratch_bytes:
            return self.launcher.make_entry(self.block_x, self.shared_bytes, positions, value_count, compiled)
        launch = self.launcher.make_entry(self.block_x, self.shared_bytes, (*positions, value_count), value_count + 1,
                                          compiled).fast
        name, per_program, device = self.name, self.scratch_bytes, self.device

        def fast(grid: Any, stream: Any, *values: Any) -> Any:
            gx, gy, gz = grid3(grid, name)
            programs = gx * gy * gz
            buffer = allocate_scratch(name, per_program * programs, stream, device) if programs > 0 else None
            return launch(grid, stream, *values, 0 if buffer is None else buffer.data_ptr())

        def entry(grid: Any, values: tuple, args: tuple, stream: Any) -> Any:
            return fast(grid, current_stream_of(args) if stream is None else stream, *values)

        entry.fast = fast  # type: ignore[attr-defined]
        return entry
