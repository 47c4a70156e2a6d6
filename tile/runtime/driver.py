"""`tile.runtime.driver`: Triton's `triton.runtime.driver`, describing where tile's kernels run.

    from tile.runtime import driver
    DEVICE = driver.active.get_active_torch_device()       # cuda:0, or cpu on the interpreter
    props = driver.active.utils.get_device_properties(DEVICE.index)
    props["multiprocessor_count"], props["max_shared_mem"], props["max_num_regs"], props["warpSize"]
    driver.active.get_current_target()                     # GPUTarget(backend='cuda', arch=90, warp_size=32)

`driver.active` is the CUDA driver when kernels run on a GPU, and the interpreter driver when
they run on the NumPy interpreter (no GPU, or TILE_INTERPRET=1). The interpreter describes the
device it stands in for: an H100 (sm_90a), the target whose GPU stages `kernel.warmup` and
`tile.dump` compile when there is no GPU; its torch device is the CPU. `driver.set_active(d)`
overrides the choice until `driver.reset_active()`.
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple, Optional

# What the interpreter describes: the limits of an H100 SXM (sm_90a), except its own name.
INTERPRETER_TARGET = "sm_90a"
INTERPRETER_PROPERTIES: dict[str, Any] = {
    "name": "tile interpreter (NumPy), modelling an NVIDIA H100 (sm_90a)",
    "multiprocessor_count": 132,
    "max_num_regs": 65536,
    "max_shared_mem": 232448,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
    "max_threads_per_sm": 2048,
    "max_threads_per_block": 1024,
}

# The most shared memory one block may use (the opt-in limit), per PTX target: used to reject a
# kernel compiled for a target without its GPU at hand (CUDA C Programming Guide, table 21).
MAX_SHARED_BY_TARGET: dict[str, int] = {
    "sm_80": 166912, "sm_86": 101376, "sm_87": 166912, "sm_89": 101376,
    "sm_90": 232448, "sm_90a": 232448, "sm_100": 232448, "sm_120": 101376,
}


class GPUTarget(NamedTuple):
    """Triton's `GPUTarget`: the backend ("cuda"), the architecture as an int (90 for sm_90) and
    the warp size."""

    backend: str
    arch: int
    warp_size: int

    @classmethod
    def from_ptx_target(cls, target: str) -> GPUTarget:
        """"sm_90a" -> GPUTarget("cuda", 90, 32)."""
        digits = target.removeprefix("sm_").rstrip("a")
        if not target.startswith("sm_") or not digits.isdigit():
            raise ValueError(f"unknown target {target!r}: expected a PTX target such as 'sm_90a' or 'sm_80'")
        return cls("cuda", int(digits), 32)

    def ptx_target(self) -> str:
        """GPUTarget("cuda", 90, 32) -> "sm_90a" (tile emits sm_90a on Hopper, for wgmma and TMA)."""
        if self.backend != "cuda":
            raise ValueError(f"tile compiles for CUDA targets only, not {self.backend!r}")
        return "sm_90a" if self.arch == 90 else f"sm_{self.arch}"


def _torch() -> Any:
    import torch

    return torch


_torch_saw_cuda = False


def _torch_cuda_ready() -> bool:
    """Whether torch is already imported and sees a GPU (importing it here would cost seconds).
    A yes is kept: Triton programs ask through driver.active several times a launch."""
    global _torch_saw_cuda
    if not _torch_saw_cuda:
        torch = sys.modules.get("torch")
        _torch_saw_cuda = torch is not None and torch.cuda.is_available()
    return _torch_saw_cuda


class _CudaUtils:
    """`driver.active.utils` of the CUDA driver."""

    def get_device_properties(self, device: Any = None) -> dict[str, Any]:
        """Triton's device properties of GPU `device` (an index, a torch.device or None for
        the current one): multiprocessor_count, max_num_regs (registers per block),
        max_shared_mem (opt-in shared memory per block, bytes), warpSize, sm_clock_rate and
        mem_clock_rate (kHz), mem_bus_width (bits), max_threads_per_sm, max_threads_per_block."""
        from .cuda_driver import _check, _drv, get_device

        ordinal = _device_index(device)
        gpu = get_device(ordinal)
        attr = _drv().CUdevice_attribute

        def read(name: str) -> int:
            return _check(_drv().cuDeviceGetAttribute(getattr(attr, name), gpu.handle), "cuDeviceGetAttribute")

        return {
            "name": gpu.name,
            "multiprocessor_count": gpu.num_sms,
            "max_num_regs": read("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK"),
            "max_shared_mem": gpu.max_shared_memory_per_block_optin,
            "warpSize": gpu.warp_size,
            "sm_clock_rate": read("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
            "mem_clock_rate": read("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
            "mem_bus_width": read("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH"),
            "max_threads_per_sm": read("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
            "max_threads_per_block": gpu.max_threads_per_block,
        }


class _InterpreterUtils:
    """`driver.active.utils` of the interpreter driver."""

    def get_device_properties(self, device: Any = None) -> dict[str, Any]:
        """The properties of the device the interpreter stands in for (INTERPRETER_PROPERTIES),
        with the keys of the CUDA driver's."""
        return dict(INTERPRETER_PROPERTIES)


def _device_index(device: Any) -> int:
    """A device ordinal from an int, a torch.device ("cuda:1") or None (the current device)."""
    if device is None:
        return CudaDriver.get_current_device()
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is not None:
        return int(index)
    if isinstance(device, str) and ":" in device:
        return int(device.rsplit(":", 1)[1])
    return CudaDriver.get_current_device()


class _DriverBase:
    """What both drivers share: benchmarking and the L2-flushing buffer of do_bench."""

    backend = "cuda"

    def get_benchmarker(self) -> Any:
        """The function the autotuner times configs with: tile.testing.do_bench."""
        from tile.testing import do_bench

        return do_bench

    def clear_cache(self, cache: Any) -> None:
        """Overwrite the buffer of `get_empty_cache_for_benchmark` (evicts the L2 cache)."""
        cache.zero_()

    def __repr__(self) -> str:
        return f"<tile {type(self).__name__}>"


class CudaDriver(_DriverBase):
    """The driver of a CUDA GPU, through cuda-python (and PyTorch for torch devices and streams)."""

    def __init__(self) -> None:
        self.utils = _CudaUtils()

    @staticmethod
    def is_active() -> bool:
        """Whether kernels launch on a GPU now (one is present and TILE_INTERPRET is not set)."""
        from tile.compiler import INTERPRETER, current_target

        return current_target() != INTERPRETER

    @staticmethod
    def get_current_device() -> int:
        """The ordinal of the current device: PyTorch's current CUDA device when torch is in
        use, else the one `set_current_device` chose (default 0)."""
        if _torch_cuda_ready():
            return int(_torch().cuda.current_device())
        from .cuda_driver import current_device

        return current_device()

    def set_current_device(self, device: int) -> None:
        """Make `device` current: PyTorch's current device when torch is in use, else tile's
        (cuda_driver.set_current_device). Launches without device-bound arguments and new
        DeviceArrays go there."""
        if _torch_cuda_ready():
            _torch().cuda.set_device(device)
            return
        from .cuda_driver import set_current_device

        set_current_device(device)

    def get_current_stream(self, device: Optional[int] = None) -> int:
        """The handle of the current stream of `device`: PyTorch's current stream when torch
        is in use, else 0 (the default stream)."""
        if _torch_cuda_ready():
            from .cuda_driver import torch_stream_getter

            return int(torch_stream_getter()(self.get_current_device() if device is None else device))
        return 0

    def get_device_capability(self, device: Optional[int] = None) -> tuple[int, int]:
        from .cuda_driver import CudaDevice

        # CudaDevice.of: the capability needs no context made current (get_device would call the driver)
        return CudaDevice.of(self.get_current_device() if device is None else device).compute_capability

    def get_current_target(self) -> GPUTarget:
        major, minor = self.get_device_capability()
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self) -> Any:
        """torch.device("cuda", current device)."""
        return _torch().device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        """torch.cuda."""
        return _torch().cuda

    def get_empty_cache_for_benchmark(self) -> Any:
        """A 256 MB buffer on the GPU; `clear_cache` overwrites it to evict the L2 cache."""
        return _torch().empty(256 * 1024 * 1024 // 4, dtype=_torch().int32, device="cuda")


class InterpreterDriver(_DriverBase):
    """The driver of the NumPy interpreter: the CPU as torch device, a nominal H100 as target."""

    def __init__(self) -> None:
        self.utils = _InterpreterUtils()

    @staticmethod
    def is_active() -> bool:
        """Whether kernels run on the interpreter now."""
        return not CudaDriver.is_active()

    @staticmethod
    def get_current_device() -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        if device != 0:
            raise ValueError(f"the interpreter has one device, 0; got {device}")

    def get_current_stream(self, device: Optional[int] = None) -> int:
        return 0

    def get_device_capability(self, device: Optional[int] = None) -> tuple[int, int]:
        return (9, 0)

    def get_current_target(self) -> GPUTarget:
        return GPUTarget.from_ptx_target(INTERPRETER_TARGET)

    def get_active_torch_device(self) -> Any:
        """torch.device("cpu"): the interpreter reads and writes host memory."""
        return _torch().device("cpu")

    def get_device_interface(self) -> Any:
        """torch.cpu (its Stream, synchronize and current_device mirror torch.cuda's)."""
        return _torch().cpu

    def get_empty_cache_for_benchmark(self) -> Any:
        """A small host buffer: do_bench does not flush caches on the interpreter."""
        torch = sys.modules.get("torch")
        if torch is not None:
            return torch.empty(1024, dtype=torch.int32)
        import numpy as np

        return _HostBuffer(np.empty(1024, np.int32))


class _HostBuffer:
    """A NumPy buffer with torch's `zero_`, for `clear_cache` without torch."""

    def __init__(self, array: Any) -> None:
        self.array = array

    def zero_(self) -> None:
        self.array[...] = 0


class DriverConfig:
    """Triton's `driver`: `.active` is the driver kernels use now, `.default` the one tile
    would choose; `set_active(d)` overrides the choice until `reset_active()`."""

    def __init__(self) -> None:
        self._active: Optional[_DriverBase] = None
        self._drivers: dict[type, _DriverBase] = {}

    @property
    def default(self) -> _DriverBase:
        """The CUDA driver when kernels launch on a GPU, else the interpreter driver (read on
        every access: TILE_INTERPRET may change)."""
        kind = CudaDriver if CudaDriver.is_active() else InterpreterDriver
        found = self._drivers.get(kind)
        if found is None:
            found = self._drivers[kind] = kind()
        return found

    @property
    def active(self) -> _DriverBase:
        return self._active if self._active is not None else self.default

    def set_active(self, driver: _DriverBase) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()


__all__ = ["driver", "DriverConfig", "CudaDriver", "InterpreterDriver", "GPUTarget", "INTERPRETER_TARGET",
           "INTERPRETER_PROPERTIES", "MAX_SHARED_BY_TARGET"]
