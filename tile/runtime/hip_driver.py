"""AMD GPUs through hip-python: loading a gfx code object (.hsaco) and launching its kernel.

hip-python (`pip install hip-python`, the `hip` package) is imported on first use, so
`import tile` works without it. Its calls return a tuple whose first item is a `hipError_t`;
`_check` turns a failing one into a `DriverError` naming the call, the kernel and HIP's
description of the error.

    kernel = HipKernel.load(hsaco, "add_kernel", kernargs, kernarg_size, workgroup_size=128)
    kernel.launch((blocks, 1, 1), [x_ptr, y_ptr, out_ptr, n])

The kernarg segment is laid out as the code object's metadata says (tile's own
`amdgcn.isel.KernArg` list, the one kernel_object writes into the metadata, kept in the launch
metadata as `KernargField`s): pointers
(`global_buffer`) as 64-bit addresses, scalars (`by_value`) in their size (a Python float as
f32 or f64, an int in two's complement), and the hidden arguments tile's kernels read
(`hidden_block_count_x/y/z`: the grid) filled from the launch's grid. The whole segment goes
to hipModuleLaunchKernel as one buffer through `extra` (HIP_LAUNCH_PARAM_BUFFER_POINTER /
_SIZE / _END), so no per-argument pointer array is needed. `extra` is a ctypes array, which
hip-python's pointer adapter passes through as the `void **` it is; a Python tuple there would
be hip-python's own convenience (it packs the tuple's values as the arguments itself).

The launch path picks this driver when the machine's GPU is AMD (`hip_available`: hip-python
sees a HIP device, or PyTorch is a ROCm build that does): tile.compiler compiles for
`device_target()` (the device's gcnArchName, "gfx942"), and tile.runtime.hip_launch loads the
code object and launches it. NumPy arrays given to such a launch are copied to device memory
(`staged_arguments`: hipMalloc and hipMemcpy) and back after the kernel ran; torch tensors of
ROCm builds carry device addresses and are used in place.

Not here yet (issue 15): streams other than the default one (a launch syncs the device before
copying NumPy results back), several AMD devices (launches run on device 0), and a test on an
AMD GPU: none is lent, so tests/test_hip_driver.py and tests/test_hip_launch.py run all of
this against a fake `hip` module whose launches run the code object's kernel on tile's AMDGCN
emulator.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import struct
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterator, NamedTuple, Optional, Sequence

import numpy as np

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


class KernargField(NamedTuple):
    """One entry of the code object's kernarg list (amdgcn.isel.KernArg, as JSON keeps it)."""

    name: str
    offset: int
    size: int
    value_kind: str
    address_space: Optional[str] = None


def _torch_rocm_device_count() -> int:
    """The HIP devices PyTorch sees when it is an already imported ROCm build, else 0."""
    torch = sys.modules.get("torch")
    if torch is None or not getattr(torch.version, "hip", None):
        return 0
    return torch.cuda.device_count()


@functools.cache
def hip_available() -> bool:
    """Whether kernels launch on an AMD GPU here: hip-python is installed and sees a device,
    or an imported ROCm build of PyTorch does."""
    try:
        count, = _check(hip_module().hipGetDeviceCount(), "hipGetDeviceCount", "")
    except RuntimeError:  # no hip-python (hip_module), or no driver or device (DriverError)
        count = 0
    return count > 0 or _torch_rocm_device_count() > 0


def device_target(ordinal: int = 0) -> str:
    """The gfx target of HIP device `ordinal`: its gcnArchName without the feature flags
    ("gfx942:sramecc+:xnack-" -> "gfx942")."""
    if _torch_rocm_device_count() > ordinal:
        import torch

        arch = torch.cuda.get_device_properties(ordinal).gcnArchName
    else:
        hip = hip_module()
        props = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(props, ordinal), "hipGetDeviceProperties", "")
        arch = props.gcnArchName
    text = arch.decode() if isinstance(arch, bytes) else str(arch)
    return text.split(":")[0]


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


@contextlib.contextmanager
def staged_arguments(args: Sequence[Any], kernel: str = "") -> Iterator[list[Any]]:
    """`args` with each NumPy array replaced by the address of a device copy (hipMalloc,
    hipMemcpy host to device); on leaving, the device is synchronized, every copy is written
    back into its array (which the kernel may have written) and freed. Other arguments (numbers,
    device addresses, torch tensors) pass unchanged."""
    hip = hip_module()
    staged: list[tuple[np.ndarray, Any]] = []
    out: list[Any] = []
    try:
        for arg in args:
            if not isinstance(arg, np.ndarray):
                out.append(arg)
                continue
            if not arg.flags.c_contiguous:
                raise ValueError(f"kernel '{kernel}': a NumPy argument copied to the GPU must be C-contiguous")
            device, = _check(hip.hipMalloc(max(arg.nbytes, 1)), "hipMalloc", kernel)
            staged.append((arg, device))
            _check(hip.hipMemcpy(device, arg, arg.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice), "hipMemcpy",
                   kernel)
            out.append(int(device))
        yield out
        if staged:
            _check(hip.hipDeviceSynchronize(), "hipDeviceSynchronize", kernel)
        for array, device in staged:
            if array.flags.writeable:
                _check(hip.hipMemcpy(array, device, array.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost),
                       "hipMemcpy", kernel)
    except BaseException:
        for _, device in staged:
            hip.hipFree(device)  # unchecked: the error in flight is the one to report
        raise
    for _, device in staged:
        _check(hip.hipFree(device), "hipFree", kernel)


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
