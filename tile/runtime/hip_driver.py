"""AMD GPUs through hip-python: loading a gfx code object (.hsaco) and launching its kernel.

hip-python (`pip install hip-python`, the `hip` package) is imported on first use, so
`import tile` works without it. Its calls return a tuple whose first item is a `hipError_t`;
`_check` turns a failing one into a `DriverError` naming the call, the kernel and HIP's
description of the error.

    kernel = HipKernel.load(hsaco, "add_kernel", kernargs, kernarg_size, workgroup_size=128)
    kernel.launch((blocks, 1, 1), [x_ptr, y_ptr, out_ptr, n])

The kernarg segment is laid out as the code object's metadata says (tile's own
`amdgcn.isel.KernArg` list, the same one kernel_object writes into the metadata): pointers
(`global_buffer`) as 64-bit addresses, scalars (`by_value`) in their size (a Python float as
f32 or f64, an int in two's complement), and the hidden arguments tile's kernels read
(`hidden_block_count_x/y/z`: the grid) filled from the launch's grid. The whole segment goes
to hipModuleLaunchKernel as one buffer through `extra` (HIP_LAUNCH_PARAM_BUFFER_POINTER /
_SIZE / _END), so no per-argument pointer array is needed.

Not here yet (issue 15): choosing this driver automatically when the device is AMD (tile's
launch path, cache and autotuner call the CUDA driver), device memory (hipMalloc and copies
of NumPy arrays; torch tensors of ROCm builds already carry device addresses), streams other
than the default one, and a test on an AMD GPU (none is lent: tests/test_hip_driver.py runs
it against a fake `hip` module).
"""
from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional, Sequence

from tile.runtime.errors import DriverError

# the markers of hipModuleLaunchKernel's `extra` array (hip/hip_runtime_api.h)
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03
MAX_WORKGROUP_SIZE = 1024

_hip: Optional[ModuleType] = None


def hip_module() -> ModuleType:
    """hip-python's `hip.hip`, imported on first use (a clear error where it is missing)."""
    global _hip
    if _hip is None:
        try:
            from hip import hip
        except ImportError as e:
            raise RuntimeError("running gfx kernels needs hip-python (pip install hip-python) and a ROCm "
                               "installation") from e
        _hip = hip
    return _hip


def _check(result: Any, call: str, kernel: str) -> tuple:
    """The values after the hipError_t of `result`, or a DriverError for a failing call."""
    hip = hip_module()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != hip.hipError_t.hipSuccess:
        text = hip.hipGetErrorString(err)
        description = text.decode(errors="replace") if isinstance(text, bytes) else str(text or "")
        raise DriverError(call, getattr(err, "name", str(err)), kernel=kernel, description=description)
    return tuple(values)


def _address(value: Any) -> int:
    """The device address of a pointer argument: an int, or a tensor's data_ptr()."""
    if hasattr(value, "data_ptr"):
        return int(value.data_ptr())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"a pointer argument needs an address or a tensor, got {type(value).__name__}")


def pack_kernargs(kernargs: Sequence[Any], size: int, values: Sequence[Any], grid: Sequence[int],
                  kernel: str = "") -> bytes:
    """The kernarg segment of `size` bytes: `values` are the user arguments in the order of
    the non-hidden `kernargs`; hidden block counts come from `grid`."""
    user = [a for a in kernargs if not a.value_kind.startswith("hidden_")]
    if len(values) != len(user):
        raise TypeError(f"kernel '{kernel}' takes {len(user)} arguments ({', '.join(a.name for a in user)}), "
                        f"got {len(values)}")
    segment = bytearray(size)
    given = iter(values)
    for arg in kernargs:
        if arg.value_kind.startswith("hidden_block_count_"):
            raw = struct.pack("<I", grid["xyz".index(arg.value_kind[-1])])
        elif arg.value_kind == "global_buffer":
            raw = struct.pack("<Q", _address(next(given)))
        elif arg.value_kind == "by_value":
            value = next(given)
            if isinstance(value, float):
                raw = struct.pack({4: "<f", 8: "<d"}[arg.size], value)
            elif hasattr(value, "dtype") and value.dtype.itemsize == arg.size:   # a NumPy scalar
                raw = value.tobytes()
            else:
                raw = int(value).to_bytes(arg.size, "little", signed=int(value) < 0)
        else:
            raise ValueError(f"kernel '{kernel}': tile does not fill kernel arguments of kind {arg.value_kind}")
        segment[arg.offset:arg.offset + arg.size] = raw
    return bytes(segment)


@dataclass
class HipKernel:
    """One kernel of a loaded code object, ready to launch."""

    name: str
    module: Any
    function: Any
    kernargs: Sequence[Any]
    kernarg_size: int
    workgroup_size: int

    @staticmethod
    def load(hsaco: bytes, name: str, kernargs: Sequence[Any], kernarg_size: int, workgroup_size: int) -> "HipKernel":
        """Load code object `hsaco` (hipModuleLoadData) and find kernel `name` in it."""
        if not 1 <= workgroup_size <= MAX_WORKGROUP_SIZE:
            raise ValueError(f"kernel '{name}': a workgroup of {workgroup_size} work-items "
                             f"(1 to {MAX_WORKGROUP_SIZE})")
        hip = hip_module()
        module, = _check(hip.hipModuleLoadData(hsaco), "hipModuleLoadData", name)
        function, = _check(hip.hipModuleGetFunction(module, name.encode()), "hipModuleGetFunction", name)
        return HipKernel(name, module, function, kernargs, kernarg_size, workgroup_size)

    def launch(self, grid: Sequence[int], args: Sequence[Any], stream: Any = None) -> None:
        """Run the kernel over `grid` workgroups (up to three numbers) with `args`."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        if any(g < 1 for g in grid):
            raise ValueError(f"kernel '{self.name}': grid {grid} has an empty dimension")
        segment = ctypes.create_string_buffer(pack_kernargs(self.kernargs, self.kernarg_size, args, grid, self.name),
                                              max(self.kernarg_size, 1))
        size = ctypes.c_size_t(self.kernarg_size)
        extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(segment),
                                      HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), HIP_LAUNCH_PARAM_END)
        hip = hip_module()
        _check(hip.hipModuleLaunchKernel(self.function, *grid, self.workgroup_size, 1, 1, 0, stream, None, extra),
               "hipModuleLaunchKernel", self.name)

    def unload(self) -> None:
        _check(hip_module().hipModuleUnload(self.module), "hipModuleUnload", self.name)
