"""The CUDA runtime: errors, launcher packing and limits (CPU, fake driver) and real launches (GPU)."""

from __future__ import annotations

import contextlib

import ctypes
import statistics
import struct
import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tile.runtime import arrays, cuda_driver
from tile.runtime.cuda_driver import CudaDevice, CudaKernel, cuda_available, current_stream_of
from tile.runtime.errors import CompilerBugError, DriverError, LaunchError

rng = np.random.default_rng(2024)

# -- errors ------------------------------------------------------------------------------------


def test_driver_error_message() -> None:
    err = DriverError(
        "cuLaunchKernel", "CUDA_ERROR_LAUNCH_FAILED", kernel="add", description="unspecified launch failure"
    )
    assert isinstance(err, RuntimeError)
    assert (err.kernel, err.call, err.code, err.log) == ("add", "cuLaunchKernel", "CUDA_ERROR_LAUNCH_FAILED", "")
    assert str(err) == "kernel 'add': cuLaunchKernel failed with CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)"
    with_log = DriverError("cuModuleLoadDataEx", "CUDA_ERROR_OUT_OF_MEMORY", log="info: 3 registers\n")
    assert str(with_log).endswith("driver log:\ninfo: 3 registers")


def test_compiler_bug_error_names_the_ptx_line() -> None:
    ptx = ".version 8.0\n.target sm_80\n  add.f32 %f3, %f1, %f9;\n"
    log = "ptxas application ptx input, line 3; error   : Unknown symbol '%f9'\nptxas fatal   : aborted"
    err = CompilerBugError("softmax", log, ptx=ptx, description="a PTX JIT compilation failed")
    assert isinstance(err, DriverError)
    assert (err.code, err.call, err.ptx_line, err.ptx_line_text) == (
        "CUDA_ERROR_INVALID_PTX",
        "cuModuleLoadDataEx",
        3,
        "add.f32 %f3, %f1, %f9;",
    )
    message = str(err)
    assert "this is a bug in tile's code generator" in message
    assert "kernel 'softmax'" in message and "Unknown symbol '%f9'" in message
    assert "first offending PTX line: 3: add.f32 %f3, %f1, %f9;" in message
    assert CompilerBugError("k", "ptxas fatal: something").ptx_line is None


def test_launch_error_message() -> None:
    err = LaunchError("matmul", "threads per block", 2048, 1024, "device limit 1024")
    assert (err.kernel, err.limit, err.requested, err.allowed) == ("matmul", "threads per block", 2048, 1024)
    assert str(err) == (
        "cannot launch kernel 'matmul': threads per block is 2048, the allowed maximum is 1024 (device limit 1024)"
    )


# -- availability and PTX targets ------------------------------------------------------------------


@pytest.fixture
def fresh_availability():
    cuda_available.cache_clear()
    yield
    cuda_available.cache_clear()


def test_cuda_available_is_a_bool() -> None:
    assert cuda_available() in (True, False)  # False on machines without a driver, never raises


def test_cuda_available_false_when_the_driver_is_missing(monkeypatch: pytest.MonkeyPatch, fresh_availability) -> None:
    def no_driver() -> None:
        raise OSError('"cuda" is an NVIDIA driver library and can only be found via system search')

    monkeypatch.setattr(cuda_driver, "_drv", no_driver)
    assert cuda_available() is False


def _device(cc: tuple[int, int], driver_version: int) -> CudaDevice:
    # Only the two fields the PTX methods read; building a real one needs a GPU.
    device = CudaDevice.__new__(CudaDevice)
    device.compute_capability, device.driver_version = cc, driver_version
    return device


@pytest.mark.parametrize(
    "cc, driver, target, version",
    [
        ((9, 0), 13000, "sm_90a", "8.7"),
        ((9, 0), 12080, "sm_90a", "8.7"),
        ((9, 0), 12060, "sm_90a", "8.5"),
        ((8, 0), 12040, "sm_80", "8.4"),
        ((8, 6), 11080, "sm_86", "7.8"),
        ((8, 9), 12000, "sm_89", "8.0"),
    ],
)
def test_ptx_target_and_version(cc: tuple[int, int], driver: int, target: str, version: str) -> None:
    device = _device(cc, driver)
    assert (device.ptx_target(), device.ptx_version()) == (target, version)


def test_ptx_version_driver_too_old() -> None:
    with pytest.raises(DriverError, match="sm_90a, which needs PTX ISA 8.0"):
        _device((9, 0), 11080).ptx_version()


# -- launcher, against a fake driver -------------------------------------------------------------

OK = object()  # the fake driver's CUDA_SUCCESS
INVALID_VALUE = SimpleNamespace(name="CUDA_ERROR_INVALID_VALUE")


class FakeDriver:
    """Just enough of cuda.bindings.driver for CudaKernel and Launcher; records launches and
    reads the argument slots through the kernelParams pointer, as the real driver does."""

    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_NUM_REGS="NUM_REGS",
        CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES="LOCAL_SIZE_BYTES",
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES="SHARED_SIZE_BYTES",
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK="MAX_THREADS_PER_BLOCK",
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES",
    )

    def __init__(self, max_threads: int) -> None:
        self.attributes = {
            "NUM_REGS": 40,
            "LOCAL_SIZE_BYTES": 0,
            "SHARED_SIZE_BYTES": 1024,
            "MAX_THREADS_PER_BLOCK": max_threads,
            "MAX_DYNAMIC_SHARED_SIZE_BYTES": 48 * 1024 - 1024,
        }
        self.launches: list[dict[str, Any]] = []
        self.launch_result: Any = OK
        self.param_count = 0

    def cuFuncGetAttribute(self, attribute: str, function: Any) -> tuple[Any, int]:
        return (OK, self.attributes[attribute])

    def cuFuncSetAttribute(self, function: Any, attribute: str, value: int) -> tuple[Any]:
        self.attributes[attribute] = value
        return (OK,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) -> tuple[Any]:
        # As cuda-python and the driver: unsigned ints only; an empty or too large grid launches nothing.
        if any(type(v) is not int for v in (gx, gy, gz, bx, by, bz, shared)):
            raise TypeError("an integer is required")
        if min(gx, gy, gz, bx, by, bz, shared) < 0:
            raise OverflowError("can't convert negative value to unsigned int")
        if not (0 < gx <= FAKE_DEVICE.max_grid_dims[0] and 0 < gy <= 65535 and 0 < gz <= 65535):
            return (INVALID_VALUE,)
        pointers = (ctypes.c_void_p * self.param_count).from_address(params) if self.param_count else []
        self.launches.append(
            dict(grid=(gx, gy, gz), block=(bx, by, bz), shared=shared, stream=stream, extra=extra,
                 slots=[ctypes.string_at(p, 8) for p in pointers])
        )  # fmt: skip
        return (self.launch_result,)

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:
        return (OK, b"unspecified launch failure")


FAKE_DEVICE = SimpleNamespace(
    max_threads_per_block=1024, max_shared_memory_per_block_optin=227 * 1024, max_grid_dims=(2**31 - 1, 65535, 65535),
    is_current=lambda: True, activated=contextlib.nullcontext,  # contexts are tested in test_multi_gpu.py
)


def fake_kernel(monkeypatch: pytest.MonkeyPatch, max_threads: int = 1024) -> tuple[CudaKernel, FakeDriver]:
    driver = FakeDriver(max_threads)
    monkeypatch.setattr(cuda_driver, "_driver", driver)
    monkeypatch.setattr(cuda_driver, "_SUCCESS", OK)
    return CudaKernel("k", None, "function", FAKE_DEVICE, ""), driver  # type: ignore[arg-type]


def test_launcher_packs_every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    kinds = ("ptr", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64")
    values = (0x7F12345678A0, True, -7, -300, -123456, -(2**40), 200, 60000, 2**31 + 5, 2**63 + 9,
              1.5, 1.5, 3.25, -2.0**-30)  # fmt: skip
    driver.param_count = len(kinds)
    kernel.launcher(kinds)((3, 2, 1), 128, 512, 77, *values)
    [launch] = driver.launches
    assert (launch["grid"], launch["block"], launch["shared"], launch["stream"], launch["extra"]) == (
        (3, 2, 1), (128, 1, 1), 512, 77, 0,
    )  # fmt: skip
    formats = ["<Q", "<?", "<b", "<h", "<i", "<q", "<B", "<H", "<I", "<Q", "<e", "<H", "<f", "<d"]
    decoded = [struct.unpack_from(fmt, slot)[0] for fmt, slot in zip(formats, launch["slots"])]
    assert decoded[:11] + decoded[12:] == list(values[:11] + values[12:])
    assert decoded[11] == 0x3FC0  # bfloat16 bits of 1.5


def test_bf16_rounding() -> None:
    assert cuda_driver._bf16_bits(1.0) == 0x3F80
    assert cuda_driver._bf16_bits(-2.0) == 0xC000
    assert cuda_driver._bf16_bits(1.0 + 2.0**-8) == 0x3F80  # tie rounds to even
    assert cuda_driver._bf16_bits(1.0 + 3 * 2.0**-8) == 0x3F82  # tie rounds to even (up)
    assert cuda_driver._bf16_bits(float("inf")) == 0x7F80
    assert cuda_driver._bf16_bits(float("nan")) & 0x7FC0 == 0x7FC0


def test_launcher_is_built_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    launcher = kernel.launcher(("ptr", "i32"))
    assert kernel.launcher(("ptr", "i32")) is launcher
    assert kernel.launcher(("ptr", "i64")) is not launcher
    driver.param_count = 2
    launcher((1, 1, 1), 32, 0, 0, 0x1000, 5)
    launcher((1, 1, 1), 32, 0, 0, 0x2000, 6)
    assert [struct.unpack("<Qi4x", b"".join(l["slots"])) for l in driver.launches] == [(0x1000, 5), (0x2000, 6)]


def test_launcher_without_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    kernel.launcher(())((4, 1, 1), 64, 0, 0)
    assert driver.launches[0]["grid"] == (4, 1, 1)


def test_empty_grid_launches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    kernel.launcher(("ptr",))((0, 1, 1), 128, 0, 0, 0x1000)
    assert driver.launches == []


def test_launch_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    launch = kernel.launcher(("ptr",))
    with pytest.raises(LaunchError, match="'k': threads per block is 2048, the allowed maximum is 1024") as info:
        launch((1, 1, 1), 2048, 0, 0, 0x1000)
    assert (info.value.limit, info.value.requested, info.value.allowed) == ("threads per block", 2048, 1024)
    with pytest.raises(LaunchError, match="grid dimension y \\(blocks\\) is 70000, the allowed maximum is 65535"):
        launch((1, 70000, 1), 128, 0, 0, 0x1000)
    with pytest.raises(LaunchError, match="dynamic shared memory \\(bytes\\) is 300000, the allowed maximum is 231424"):
        launch((1, 1, 1), 128, 300_000, 0, 0x1000)
    with pytest.raises(ValueError, match="negative launch configuration"):
        launch((-1, 1, 1), 128, 0, 0, 0x1000)
    assert driver.launches == []


def test_large_shared_memory_is_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    driver.param_count = 1
    launch = kernel.launcher(("ptr",))
    launch((1, 1, 1), 128, 100 * 1024, 0, 0x1000)
    assert driver.attributes["MAX_DYNAMIC_SHARED_SIZE_BYTES"] == 100 * 1024 == kernel.max_dynamic_shared_bytes
    assert driver.launches[0]["shared"] == 100 * 1024


def test_register_limited_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = fake_kernel(monkeypatch, max_threads=512)
    with pytest.raises(LaunchError, match="maximum is 512 \\(this kernel uses 40 registers per thread"):
        kernel.launcher(("ptr",))((1, 1, 1), 1024, 0, 0, 0x1000)


def test_argument_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = fake_kernel(monkeypatch)
    launch = kernel.launcher(("ptr", "i32"))
    with pytest.raises(TypeError, match="'k' takes 2 arguments, got 1"):
        launch((1, 1, 1), 32, 0, 0, 0x1000)
    with pytest.raises(TypeError, match="argument 1 \\(i32\\) cannot hold 1099511627776"):
        launch((1, 1, 1), 32, 0, 0, 0x1000, 2**40)
    with pytest.raises(TypeError, match="argument 0 \\(ptr\\) cannot hold 'x'"):
        launch((1, 1, 1), 32, 0, 0, "x", 1)
    with pytest.raises(ValueError, match="unknown argument kinds \\['f128'\\]"):
        kernel.launcher(("f128",))


def test_failed_launch_raises_driver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    driver.launch_result = SimpleNamespace(name="CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    with pytest.raises(DriverError) as info:
        kernel.launcher(())((1, 1, 1), 32, 0, 0)
    assert (info.value.kernel, info.value.call, info.value.code) == ("k", "cuLaunchKernel",
                                                                     "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    assert "unspecified launch failure" in str(info.value)


def test_current_stream_without_cuda_tensors() -> None:
    class Tensor:  # a torch.Tensor stand-in on the CPU: no stream to find
        __module__ = "torch"
        is_cuda = False

    assert current_stream_of([np.ones(3), 5, Tensor()]) == 0
    assert cuda_driver.is_torch_tensor(Tensor()) and not cuda_driver.is_torch_tensor(np.ones(3))


def test_current_stream_of_a_cuda_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tensor:  # a CUDA torch.Tensor stand-in on device 3
        __module__ = "torch"
        is_cuda = True

        def get_device(self) -> int:
            return 3

    fake_torch = SimpleNamespace(_C=SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0xABC0 + index))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(cuda_driver, "_torch_stream", None)  # forget a getter bound to the real torch
    assert current_stream_of([5, np.ones(2), Tensor()]) == 0xABC3


def test_torch_seeing_cuda_is_asked_until_it_says_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    """driver.active reaches torch.cuda.is_available several times a launch of a Triton program
    (tutorial 06 asks is_cuda() four times a call): a yes is kept, a no asked again."""
    import importlib

    driver_module = importlib.import_module("tile.runtime.driver")  # the module, not its `driver` object
    answers = [False, True]
    asked = []

    def is_available() -> bool:
        asked.append(1)
        return answers[min(len(asked), len(answers)) - 1]

    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=SimpleNamespace(is_available=is_available)))
    monkeypatch.setattr(driver_module, "_torch_saw_cuda", False)
    assert [driver_module._torch_cuda_ready() for _ in range(4)] == [False, True, True, True]
    assert len(asked) == 2


# -- on a GPU ------------------------------------------------------------------------------------

needs_gpu = pytest.mark.skipif(not cuda_available(), reason="no CUDA driver or GPU")

VADD_PTX = """\
.version 8.0
.target sm_80
.address_size 64

.visible .entry vadd(
    .param .u64 vadd_a,
    .param .u64 vadd_b,
    .param .u64 vadd_out,
    .param .u32 vadd_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [vadd_a];
    ld.param.u64 %rd2, [vadd_b];
    ld.param.u64 %rd3, [vadd_out];
    ld.param.u32 %r1, [vadd_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.rn.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}
"""
VADD_KINDS = ("ptr", "ptr", "ptr", "i32")
BLOCK = 128


def _vadd_inputs(n: int, padding: int = 0) -> tuple[np.ndarray, np.ndarray, arrays.DeviceArray]:
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = arrays.to_device(np.full(n + padding, np.nan, np.float32))  # poisoned
    return a, b, out


@pytest.mark.gpu
@needs_gpu
def test_device_properties() -> None:
    device = CudaDevice.get()
    assert device is CudaDevice.get(0)
    print(
        f"\n{device!r}: cc={device.compute_capability} sms={device.num_sms} "
        f"max_threads={device.max_threads_per_block} smem_optin={device.max_shared_memory_per_block_optin} "
        f"grid={device.max_grid_dims} warp={device.warp_size} driver={device.driver_version} "
        f"ptx={device.ptx_version()}"
    )
    assert device.warp_size == 32 and device.num_sms > 0
    assert device.ptx_target().startswith("sm_")
    assert device.ptx_version() in {"7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.7"}


@pytest.mark.gpu
@needs_gpu
def test_vadd_on_device_arrays() -> None:
    kernel = CudaDevice.get().load_module(VADD_PTX, "vadd")
    assert kernel.num_regs > 0 and kernel.local_size_bytes == 0 and kernel.shared_size_bytes == 0
    assert kernel.max_threads_per_block == 1024
    n, padding = 10_000, 64  # n is no multiple of BLOCK: the last block is partial
    a, b, out = _vadd_inputs(n, padding)
    da, db = arrays.to_device(a), arrays.to_device(b)
    assert da.is_device and da.__cuda_array_interface__["data"][0] == da.data_ptr()
    launch = kernel.launcher(VADD_KINDS)
    launch(((n + BLOCK - 1) // BLOCK, 1, 1), BLOCK, 0, 0, da.data_ptr(), db.data_ptr(), out.data_ptr(), n)
    result = out.numpy()
    np.testing.assert_array_equal(result[:n], a + b)
    assert np.isnan(result[n:]).all()  # the bounds check held
    # Above 48 KB of dynamic shared memory the launcher opts the kernel in on its own.
    out.copy_from(np.full(n + padding, np.nan, np.float32))
    launch(((n + BLOCK - 1) // BLOCK, 1, 1), BLOCK, 100 * 1024, 0, da.data_ptr(), db.data_ptr(), out.data_ptr(), n)
    np.testing.assert_array_equal(out.numpy()[:n], a + b)
    assert kernel.max_dynamic_shared_bytes == 100 * 1024


@pytest.mark.gpu
@needs_gpu
def test_broken_ptx_is_a_compiler_bug() -> None:
    broken = VADD_PTX.replace("add.rn.f32 %f3, %f1, %f2;", "add.rn.f32 %f3, %f1, %f9;")
    line = broken.splitlines().index("    add.rn.f32 %f3, %f1, %f9;") + 1
    with pytest.raises(CompilerBugError) as info:
        CudaDevice.get().load_module(broken, "vadd")
    print(f"\n{info.value}")
    assert info.value.log and "%f9" in info.value.log
    assert info.value.ptx_line == line
    assert "bug in tile's code generator" in str(info.value)


@pytest.mark.gpu
@needs_gpu
def test_launch_limits_on_device() -> None:
    kernel = CudaDevice.get().load_module(VADD_PTX, "vadd")
    device = CudaDevice.get()
    launch = kernel.launcher(VADD_KINDS)
    with pytest.raises(LaunchError, match="threads per block is 2048, the allowed maximum is 1024"):
        launch((1, 1, 1), 2048, 0, 0, 0, 0, 0, 0)
    with pytest.raises(LaunchError, match="dynamic shared memory"):
        launch((1, 1, 1), BLOCK, device.max_shared_memory_per_block_optin + 1, 0, 0, 0, 0, 0)


@pytest.mark.gpu
@needs_gpu
def test_torch_tensors_and_streams() -> None:
    torch = pytest.importorskip("torch")
    kernel = CudaDevice.get().load_module(VADD_PTX, "vadd")
    n = 5000
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    assert cuda_driver.is_torch_tensor(a)
    infos = [arrays.describe_argument(t) for t in (a, b, out)]
    assert infos[0] == (a.data_ptr(), "f32", True)
    assert arrays.describe_argument(torch.ones(3, dtype=torch.bfloat16, device="cuda")).dtype == "bf16"
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert current_stream_of([a, b, out, n]) == stream.cuda_stream != 0
        kernel.launcher(VADD_KINDS)(((n + BLOCK - 1) // BLOCK, 1, 1), BLOCK, 0, current_stream_of([a]),
                                    *(info.address for info in infos), n)  # fmt: skip
    stream.synchronize()
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)

    class DLPackOnly:  # reaches the generic DLPack path, not the torch fast path
        def __dlpack__(self, **kwargs):
            return a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    assert arrays.describe_argument(DLPackOnly()) == (a.data_ptr(), "f32", True)
    # tile's DeviceArray is visible to torch through __cuda_array_interface__.
    host = rng.standard_normal(77).astype(np.float32)
    assert torch.equal(torch.as_tensor(arrays.to_device(host), device="cuda").cpu(), torch.from_numpy(host))


def _median_us(call, count: int = 10_000) -> float:
    clock = time.perf_counter_ns
    for _ in range(1000):  # warm-up
        call()
    times = []
    for _ in range(count):
        start = clock()
        call()
        times.append(clock() - start)
    cuda_driver.synchronize()
    return statistics.median(times) / 1000


@pytest.mark.gpu
@needs_gpu
def test_launch_overhead() -> None:
    kernel = CudaDevice.get().load_module(VADD_PTX, "vadd")
    n = BLOCK
    a, b, out = _vadd_inputs(n)
    da, db = arrays.to_device(a), arrays.to_device(b)
    launch = kernel.launcher(VADD_KINDS)
    grid = (1, 1, 1)
    values = (da.data_ptr(), db.data_ptr(), out.data_ptr(), n)
    describe = arrays.describe_argument
    raw_launch, function = cuda_driver._drv().cuLaunchKernel, kernel.function
    params = launch._params_address
    results = {
        "cuLaunchKernel through cuda-python alone": lambda: raw_launch(
            function, 1, 1, 1, BLOCK, 1, 1, 0, 0, params, 0
        ),
        "Launcher call": lambda: launch(grid, BLOCK, 0, 0, *values),
        "describe_argument x3 + current_stream_of + Launcher (DeviceArray)": lambda: launch(
            grid, BLOCK, 0, current_stream_of((da, db, out, n)),
            describe(da).address, describe(db).address, describe(out).address, n,
        ),  # fmt: skip
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        ta, tb, tout = (torch.from_numpy(x).cuda() for x in (a, b, out.numpy()))
        results["describe_argument x3 + current_stream_of + Launcher (torch)"] = lambda: launch(
            grid, BLOCK, 0, current_stream_of((ta, tb, tout, n)),
            describe(ta).address, describe(tb).address, describe(tout).address, n,
        )  # fmt: skip
    print()
    for label, call in results.items():
        print(f"launch overhead, median of 10000, no sync: {label}: {_median_us(call):.2f} us")
    np.testing.assert_array_equal(out.numpy(), a + b)


def test_launch_entry_packs_and_falls_back_to_precise_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    driver.param_count = 2
    entry = kernel.launcher(("ptr", "i32")).make_entry(128, 0, (0, 1), 2)
    entry((3,), (0x1000, 7), (object(), 7), 5)  # a 1-tuple grid, an explicit stream
    [launch] = driver.launches
    assert (launch["grid"], launch["block"], launch["stream"]) == ((3, 1, 1), (128, 1, 1), 5)
    assert struct.unpack_from("<i", launch["slots"][1])[0] == 7
    with pytest.raises(TypeError, match="argument 1 \\(i32\\) cannot hold 1099511627776"):
        entry((1, 1, 1), (0x1000, 2**40), (object(), 2**40), 0)
    with pytest.raises(LaunchError, match="grid dimension y"):
        entry((1, 1 << 20, 1), (0x1000, 1), (object(), 1), 0)
    folded = kernel.launcher(("ptr",)).make_entry(128, 0, (0,), 2)  # a runtime int equal to 1 was folded
    driver.param_count = 1
    folded((1, 1, 1), (0x2000, 1), (object(), 1), 0)
    assert struct.unpack_from("<Q", driver.launches[-1]["slots"][0])[0] == 0x2000


def test_fast_entry_launches_directly_and_checks_only_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch)
    driver.param_count = 2
    fast = kernel.launcher(("ptr", "f32")).make_entry(256, 0, (0, 1), 2).fast
    fast((5, 2), 9, 0x3000, 0.5)  # a 2-tuple grid, stream 9
    assert (driver.launches[-1]["grid"], driver.launches[-1]["stream"]) == ((5, 2, 1), 9)
    assert struct.unpack_from("<f", driver.launches[-1]["slots"][1])[0] == 0.5
    fast([np.int64(4)], 0, 0x3000, 0.5)  # not a tuple, not Python ints: converted by the checked path
    assert driver.launches[-1]["grid"] == (4, 1, 1)
    count = len(driver.launches)
    fast((0,), 0, 0x3000, 0.5)  # an empty grid launches nothing, as in Triton
    assert len(driver.launches) == count
    with pytest.raises(ValueError, match="negative launch configuration"):
        fast((-1,), 0, 0x3000, 0.5)
    with pytest.raises(LaunchError, match="grid dimension z"):
        fast((1, 1, 70000), 0, 0x3000, 0.5)
    with pytest.raises(TypeError, match="argument 1 \\(f32\\) cannot hold 'x'"):
        fast((1,), 0, 0x3000, "x")
    driver.launch_result = SimpleNamespace(name="CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    with pytest.raises(DriverError, match="kernel 'k': cuLaunchKernel failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        fast((1,), 0, 0x3000, 0.5)
    assert len(driver.launches) == count + 2  # the failed launch, then its check (which launches again)


def test_fast_entry_of_an_oversized_block_always_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, driver = fake_kernel(monkeypatch, max_threads=256)
    fast = kernel.launcher(("ptr",)).make_entry(512, 0, (0,), 1).fast
    with pytest.raises(LaunchError, match="threads per block"):
        fast((1,), 0, 0x3000)
    assert not driver.launches
