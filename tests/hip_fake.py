"""A fake hip-python (`hip.hip`) for CPU tests of the HIP launch path: one gfx device whose
memory is host memory and whose launches run the code object's kernel on tile's AMDGCN
emulator (tile.emulator.amdgcn_machine.run_segment) with the kernarg segment exactly as
hipModuleLaunchKernel received it.

The emulator executes AMDGCN text, not machine code: the fake finds the text of a code object
in `code_objects`, which `install` fills by wrapping tile's assembler (every code object the
launch path loads was assembled from text there, by llvm-mc and ld.lld for real). Loading an
image the assembler did not produce fails as an invalid image would.
"""
from __future__ import annotations

import ctypes
import enum
import sys
import types

import numpy as np

from tile.emulator.amdgcn_decode import decode_amdgcn
from tile.emulator.amdgcn_machine import run_segment
from tile.emulator.memory import GlobalMemory


class HipError(enum.Enum):
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorInvalidImage = 200
    hipErrorNotFound = 500
    hipErrorLaunchFailure = 719


class HipMemcpyKind(enum.Enum):
    hipMemcpyHostToDevice = 1
    hipMemcpyDeviceToHost = 2


class DevicePointer:
    """What hipMalloc returns: an address (int() of it, as hip-python's pointer types)."""

    def __init__(self, address: int):
        self.address = address

    def __int__(self) -> int:
        return self.address


class FakeHip:
    """hip.hip of hip-python as far as tile uses it, for one device of `arch`."""

    hipError_t = HipError
    hipMemcpyKind = HipMemcpyKind

    def __init__(self, arch: str = "gfx942:sramecc+:xnack-"):
        self.arch = arch
        self.code_objects: dict[bytes, str] = {}
        self.memory: dict[int, np.ndarray] = {}    # device allocations by address
        self.calls: list[str] = []
        self.launches: list[dict] = []

    class hipDeviceProp_t:                        # noqa: N801 (hip-python's name)
        gcnArchName = b""

    def hipGetErrorString(self, err):
        return f"fake description of {err.name}".encode()

    def hipGetDeviceCount(self):
        self.calls.append("hipGetDeviceCount")
        return HipError.hipSuccess, 1

    def hipGetDeviceProperties(self, props, ordinal):
        self.calls.append("hipGetDeviceProperties")
        if ordinal != 0:
            return (HipError.hipErrorInvalidValue,)
        props.gcnArchName = self.arch.encode()
        return (HipError.hipSuccess,)

    def hipMalloc(self, size):
        self.calls.append("hipMalloc")
        buffer = np.zeros(size, np.uint8)
        address = buffer.__array_interface__["data"][0]
        self.memory[address] = buffer
        return HipError.hipSuccess, DevicePointer(address)

    def hipFree(self, pointer):
        self.calls.append("hipFree")
        if self.memory.pop(int(pointer), None) is None:
            return (HipError.hipErrorInvalidValue,)
        return (HipError.hipSuccess,)

    def hipMemcpy(self, dst, src, size, kind):
        self.calls.append("hipMemcpy")
        if kind is HipMemcpyKind.hipMemcpyHostToDevice:
            self.memory[int(dst)][:size] = src.reshape(-1).view(np.uint8)[:size]
        else:
            dst.reshape(-1).view(np.uint8)[:size] = self.memory[int(src)][:size]
        return (HipError.hipSuccess,)

    def hipDeviceSynchronize(self):
        self.calls.append("hipDeviceSynchronize")
        return (HipError.hipSuccess,)

    def hipModuleLoadData(self, image):
        self.calls.append("hipModuleLoadData")
        if image not in self.code_objects:
            return HipError.hipErrorInvalidImage, None
        return HipError.hipSuccess, ("module", image)

    def hipModuleGetFunction(self, module, name):
        self.calls.append("hipModuleGetFunction")
        kernel = decode_amdgcn(self.code_objects[module[1]])
        if kernel.name.encode() != name:
            return HipError.hipErrorNotFound, None
        return HipError.hipSuccess, kernel

    def hipModuleUnload(self, module):
        return (HipError.hipSuccess,)

    def hipModuleLaunchKernel(self, kernel, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        """Run `kernel` on the emulator: the segment is read from `extra` as the GPU would, and
        every device allocation is memory the kernel may address."""
        self.calls.append("hipModuleLaunchKernel")
        markers = list(extra)
        assert markers[0] == 1 and markers[2] == 2 and markers[4] == 3 and params is None
        segment = ctypes.string_at(markers[1], ctypes.c_size_t.from_address(markers[3]).value)
        if (bx, by, bz) != (kernel.workgroup_size, 1, 1):
            return (HipError.hipErrorLaunchFailure,)
        self.launches.append({"kernel": kernel.name, "grid": (gx, gy, gz), "block": (bx, by, bz),
                              "segment": segment})
        gmem = GlobalMemory()
        for k, buffer in enumerate(self.memory.values()):
            gmem.add(f"hipMalloc allocation {k}", buffer, True)
        run_segment(kernel, (gx, gy, gz), gmem, segment)
        return (HipError.hipSuccess,)


def install(monkeypatch, arch: str = "gfx942:sramecc+:xnack-") -> FakeHip:
    """Make `hip.hip` the fake, record the text of every code object tile assembles, and let
    tile find the device afresh (its device target and HIP presence are cached)."""
    from tile import compiler
    from tile.codegen import amdgcn
    from tile.runtime import cuda_driver, hip_driver

    fake = FakeHip(arch)
    package = types.ModuleType("hip")
    package.hip = fake
    monkeypatch.setitem(sys.modules, "hip", package)
    monkeypatch.setattr(hip_driver, "_hip", None)
    monkeypatch.setattr(cuda_driver, "cuda_available", lambda: False)
    real_assemble = amdgcn.assemble

    def assemble_and_record(text: str, target: str) -> bytes:
        image = real_assemble(text, target)
        fake.code_objects[image] = text
        return image

    monkeypatch.setattr(amdgcn, "assemble", assemble_and_record)
    forget_device()
    return fake


def forget_device() -> None:
    """Make tile look for a GPU again at its next launch (it caches what it found)."""
    from tile import compiler
    from tile.runtime import hip_driver

    hip_driver.hip_available.cache_clear()
    compiler._device_target.cache_clear()


def tools_present() -> bool:
    """Whether llvm-mc and ld.lld (which build the code objects) are installed."""
    from tile.codegen.amdgcn import ToolNotFound
    from tile.codegen.amdgcn.kernel_object import find_tool

    try:
        find_tool("llvm-mc"), find_tool("ld.lld")
    except ToolNotFound:
        return False
    return True
