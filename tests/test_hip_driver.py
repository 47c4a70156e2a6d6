"""tile.runtime.hip_driver on CPU: a fake `hip` module (hip-python's shape: calls return a
hipError_t first) records the calls; the kernarg segment handed to hipModuleLaunchKernel
through `extra` is checked against the layout of the code object's metadata and against the
wave model's, for a real compiled and assembled gfx942 kernel."""
from __future__ import annotations

import ctypes
import enum
import struct
import sys
import types

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import assemble, compile_amdgcn
from tile.codegen.amdgcn.isel import KernArg
from tile.compiler import compile_kernel
from tile.emulator.amdgcn_decode import decode_amdgcn
from tile.emulator.amdgcn_machine import kernarg_segment, run_amdgcn
from tile.emulator.memory import GlobalMemory
from tile.runtime import hip_driver
from tile.runtime.errors import DriverError
from tile.runtime.hip_driver import HIP_LAUNCH_PARAM_END, HipKernel, pack_kernargs



class HipError(enum.Enum):
    hipSuccess = 0
    hipErrorInvalidImage = 200
    hipErrorNotFound = 500
    hipErrorLaunchFailure = 719


class FakeHip:
    """hip-python's hip.hip as far as the driver uses it; `fail` maps a call to its error."""

    hipError_t = HipError

    def __init__(self):
        self.calls: list[tuple] = []
        self.fail: dict[str, HipError] = {}
        self.segments: list[bytes] = []

    def _result(self, call, *values):
        self.calls.append((call,) + values)
        handle = () if call == "hipModuleLaunchKernel" else ("handle:" + call,)
        return (self.fail.get(call, HipError.hipSuccess),) + handle

    def hipGetErrorString(self, err):
        return f"fake description of {err.name}".encode()

    def hipModuleLoadData(self, image):
        return self._result("hipModuleLoadData", image)

    def hipModuleGetFunction(self, module, name):
        return self._result("hipModuleGetFunction", module, name)

    def hipModuleUnload(self, module):
        return self._result("hipModuleUnload", module)

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        markers = list(extra)
        assert markers[0] == 1 and markers[2] == 2 and markers[4] == HIP_LAUNCH_PARAM_END and params is None
        size = ctypes.c_size_t.from_address(markers[3]).value
        self.segments.append(ctypes.string_at(markers[1], size))
        return self._result("hipModuleLaunchKernel", f, (gx, gy, gz), (bx, by, bz), shared, stream)


@pytest.fixture
def fake_hip(monkeypatch):
    fake = FakeHip()
    package = types.ModuleType("hip")
    package.hip = fake
    monkeypatch.setitem(sys.modules, "hip", package)
    monkeypatch.setattr(hip_driver, "_hip", None)
    return fake


ARGS = [KernArg("x_ptr", 0, 8, "global_buffer", "global"), KernArg("alpha", 8, 4, "by_value"),
        KernArg("n", 12, 4, "by_value"), KernArg("big", 16, 8, "by_value"),
        KernArg("", 24, 4, "hidden_block_count_x"), KernArg("", 28, 4, "hidden_block_count_y")]


def test_pack_kernargs_follows_the_metadata():
    segment = pack_kernargs(ARGS, 40, [0x7F00_0000_1000, 2.5, -3, 1 << 40], (7, 2, 1))
    assert len(segment) == 40
    assert struct.unpack_from("<QfiqII", segment) == (0x7F00_0000_1000, 2.5, -3, 1 << 40, 7, 2)
    assert segment[32:] == bytes(8)
    f64 = pack_kernargs([KernArg("x", 0, 8, "by_value")], 8, [0.1], (1, 1, 1))
    assert struct.unpack("<d", f64) == (0.1,)
    assert pack_kernargs([KernArg("h", 0, 2, "by_value")], 2, [np.float16(1.5)], (1, 1, 1)) == np.float16(1.5).tobytes()


def test_pack_kernargs_errors_name_the_kernel():
    with pytest.raises(TypeError, match="kernel 'k' takes 4 arguments \\(x_ptr, alpha, n, big\\), got 2"):
        pack_kernargs(ARGS, 40, [1, 2.0], (1, 1, 1), "k")
    with pytest.raises(TypeError, match="a pointer argument needs an address or a tensor, got str"):
        pack_kernargs(ARGS, 40, ["x", 2.0, 3, 4], (1, 1, 1), "k")
    with pytest.raises(ValueError, match="kernel 'k': tile does not fill kernel arguments of kind hidden_queue_ptr"):
        pack_kernargs([KernArg("", 0, 8, "hidden_queue_ptr")], 8, [], (1, 1, 1), "k")


@tile.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.num_programs(0), mask=mask)


def test_load_and_launch_a_compiled_kernel(fake_hip):
    x, out = np.arange(300, dtype=np.float32), np.full(300, np.nan, np.float32)
    args = [x, out, 1.5, 300]
    spec, _ = scale_kernel.specialize(args, {"BLOCK": 128})
    simt = compile_kernel(scale_kernel, spec, {"num_warps": 2, "num_stages": 3, "maxnreg": None}, "gfx942",
                          until="amdgcn").func
    compiled = compile_amdgcn(simt, "gfx942")
    hsaco = assemble(compiled.text, "gfx942")
    sel = compiled.selection
    kernel = HipKernel.load(hsaco, sel.name, sel.kernargs, sel.kernarg_size, sel.workgroup_size)
    segment_of_model, _ = kernarg_segment(decode_amdgcn(compiled.text), (3, 1, 1), args, GlobalMemory())
    addresses = [0x7000_0000_0000, 0x7000_0010_0000]
    kernel.launch((3,), addresses + [1.5, 300])
    load, get, launch = fake_hip.calls
    assert load == ("hipModuleLoadData", hsaco) and get == ("hipModuleGetFunction", "handle:hipModuleLoadData",
                                                            sel.name.encode())
    assert launch[1:] == ("handle:hipModuleGetFunction", (3, 1, 1), (128, 1, 1), 0, None)   # 2 waves of 64
    segment = fake_hip.segments[0]
    expected = bytearray(segment_of_model[:sel.kernarg_size])   # the emulator's layout, its own buffer addresses
    for a, address in zip([a for a in sel.kernargs if a.value_kind == "global_buffer"], addresses):
        expected[a.offset:a.offset + 8] = address.to_bytes(8, "little")
    assert segment == bytes(expected)
    run_amdgcn(compiled.text, 3, args)
    np.testing.assert_allclose(out, 1.5 * x + 3)


@pytest.mark.parametrize("call", ["hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel",
                                  "hipModuleUnload"])
def test_hip_errors_name_the_kernel_and_the_error(fake_hip, call):
    fake_hip.fail[call] = HipError.hipErrorInvalidImage
    with pytest.raises(DriverError) as info:
        kernel = HipKernel.load(b"\x7fELF", "my_kernel", ARGS[:1], 8, 64)
        kernel.launch((1,), [0x1000])
        kernel.unload()
    assert str(info.value) == (f"kernel 'my_kernel': {call} failed with hipErrorInvalidImage "
                               "(fake description of hipErrorInvalidImage)")


def test_bad_launch_configurations(fake_hip):
    with pytest.raises(ValueError, match="kernel 'k': a workgroup of 2048 work-items"):
        HipKernel.load(b"", "k", [], 0, 2048)
    kernel = HipKernel.load(b"", "k", [], 0, 64)
    with pytest.raises(ValueError, match=r"kernel 'k': grid \(0, 1, 1\) has an empty dimension"):
        kernel.launch((0,), [])


def test_missing_hip_python_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    monkeypatch.setattr(hip_driver, "_hip", None)
    with pytest.raises(RuntimeError, match="needs hip-python"):
        HipKernel.load(b"", "k", [], 0, 64)
