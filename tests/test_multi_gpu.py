"""More than one GPU, host side: which device a launch runs on and the errors for arguments on
another one (runtime/devices.py), one compiled kernel per device in the launch caches, device
indices checked, and contexts made current around loads, allocations and launches without
changing the caller's (cuda_driver.CudaDevice.activated). A fake torch, a fake GPU compiler and
a fake driver stand in for the GPUs; tests/test_multi_gpu_gpu.py runs the same on two GPUs."""
from __future__ import annotations

import re
import sys
import types
from types import SimpleNamespace

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime import cuda_driver
from tile.runtime.arrays import DeviceArray
from tile.runtime.cuda_driver import CudaDevice, CudaKernel
from tile.runtime.devices import launch_device
from tile.runtime.wrappers import TensorWrapper
from tile.tools.tensor_descriptor import TensorDescriptor


@tile.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class _Dtype:
    def __str__(self) -> str:
        return "torch.float32"


class Tensor:
    """A torch.Tensor stand-in (is_torch_tensor goes by the module and class name); device -1 is the CPU."""

    __module__ = "torch"
    dtype = _Dtype()

    def __init__(self, device: int, address: int = 0x10000) -> None:
        self.device, self.address = device, address

    @property
    def is_cuda(self) -> bool:
        return self.device >= 0

    def get_device(self) -> int:
        return self.device

    def data_ptr(self) -> int:
        return self.address


def gpu_array(device: int) -> DeviceArray:
    """A DeviceArray that claims to live on GPU `device` (its memory is a host array)."""
    array = DeviceArray(4, np.float32)
    array.is_device, array.device = True, device
    return array


class DLPackArray:
    def __init__(self, device_type: int, device: int) -> None:
        self.where = (device_type, device)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.where


# ------------------------------------------------------------------------------ the launch device


def resolve(names, args, torch_current=0, current=0):
    return launch_device("k", tuple(names), tuple(args), lambda: torch_current, lambda: current)


def test_torch_tensors_run_on_the_current_device():
    assert resolve(["x", "y", "n"], [Tensor(1), Tensor(1), 5], torch_current=1) == 1
    assert resolve(["x", "y"], [Tensor(0), Tensor(-1)], torch_current=0) == 0  # CPU tensors are checked at compile


def test_device_arrays_run_on_their_device():
    assert resolve(["x", "y"], [gpu_array(1), gpu_array(1)], torch_current=0, current=0) == 1
    assert resolve(["x"], [DLPackArray(2, 3)]) == 3
    assert resolve(["x"], [DLPackArray(1, 0)], current=2) == 2  # a CPU DLPack array binds no device


def test_without_gpu_arrays_the_current_device():
    assert resolve(["n", "alpha"], [5, 1.5], torch_current=3, current=2) == 2
    host = DeviceArray(4, np.float32)
    assert resolve(["x"], [host], current=1) == 1


def test_a_tensor_off_the_current_device_is_named_with_both_devices():
    expected = ("k: argument 'y' is on cuda:1, but this launch runs on cuda:0, PyTorch's current device "
                "(torch.cuda.current_device()); run it under `with torch.cuda.device(1):` or move the tensors to "
                "cuda:0")
    with pytest.raises(ValueError, match=re.escape(expected)):
        resolve(["x", "y"], [Tensor(0), Tensor(1)], torch_current=0)
    with pytest.raises(ValueError, match=re.escape("argument 'x' is on cuda:1, but this launch runs on cuda:0")):
        resolve(["x", "y"], [Tensor(1), Tensor(1)], torch_current=0)


def test_a_device_array_beside_torch_tensors_follows_the_current_device():
    with pytest.raises(ValueError, match=re.escape("argument 'out' is on cuda:1, but this launch runs on cuda:0, "
                                                   "PyTorch's current device")):
        resolve(["x", "out"], [Tensor(0), gpu_array(1)], torch_current=0)


def test_device_arrays_on_two_devices_are_refused():
    expected = ("k: argument 'y' is on cuda:0, but this launch runs on cuda:1, the device of argument 'x'; "
                "put every array on one device (tile.to_device(x, device=1))")
    with pytest.raises(ValueError, match=re.escape(expected)):
        resolve(["x", "y"], [gpu_array(1), gpu_array(0)])


def test_arrays_inside_tuples_wrappers_and_descriptors_count():
    with pytest.raises(ValueError, match="argument 'pair' is on cuda:1"):
        resolve(["x", "pair"], [gpu_array(0), (gpu_array(0), gpu_array(1))])
    with pytest.raises(ValueError, match="argument 'w' is on cuda:2"):
        resolve(["x", "w"], [gpu_array(0), TensorWrapper(gpu_array(2), "f32")])
    descriptor = TensorDescriptor(gpu_array(3), [4], [1], [4])
    with pytest.raises(ValueError, match="argument 'd' is on cuda:3"):
        resolve(["x", "d"], [gpu_array(0), descriptor])


# ------------------------------------------------------------------------------ device indices


def test_device_indices_are_checked():
    assert cuda_driver.check_device_index(1, count=2) == 1
    with pytest.raises(ValueError, match=re.escape("there is no CUDA device 2: this process sees 2 CUDA devices "
                                                   "(cuda:0 to cuda:1); CUDA_VISIBLE_DEVICES chooses which")):
        cuda_driver.check_device_index(2, count=2)
    with pytest.raises(ValueError, match=re.escape("there is no CUDA device -1: this process sees 1 CUDA device "
                                                   "(cuda:0)")):
        cuda_driver.check_device_index(-1, count=1)
    with pytest.raises(ValueError, match="there is no CUDA device 0: this process sees no CUDA device"):
        cuda_driver.check_device_index(0, count=0)
    for bad in ("cuda:1", 1.0, True, None):
        with pytest.raises(TypeError, match="a CUDA device index is an int"):
            cuda_driver.check_device_index(bad, count=2)


def test_host_arrays_have_the_one_device_of_the_interpreter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.arange(6, dtype=np.float32)
    assert tile.to_device(x, device=0).device == 0 and tile.empty(3, "f32", device=0).device == 0
    np.testing.assert_array_equal(tile.to_device(x, device=0).numpy(), x)
    with pytest.raises(ValueError, match="there is no CUDA device 1: this process sees 1 CUDA device"):
        tile.empty(3, "f32", device=1)
    with pytest.raises(ValueError, match="there is no CUDA device 1"):
        tile.to_device(x, device=1)


# ------------------------------------------------------------------------------ caches per device


class FakeGpuCompiled:
    """A compiled kernel for the fake GPU: remembers the device it was loaded on."""

    def __init__(self, log: list, target: str) -> None:
        self.log, self.target = log, target
        self.device = cuda_driver.loading_device()

    def make_entry(self, positions, value_count):
        def fast(grid, stream, *values):
            self.log.append(("fast", self.device, stream))

        def entry(grid, values, args, stream):
            self.log.append(("general", self.device, stream))

        entry.fast = fast
        return entry


@pytest.fixture
def two_gpus(monkeypatch):
    """A fake GPU compiler and a fake torch whose current device `state.device` a test sets."""
    from tile import compiler

    state = SimpleNamespace(device=0, log=[], compiled=[], targets={0: "sm_90a", 1: "sm_90a"})

    def compile_kernel(fn, spec, options, target):
        compiled = FakeGpuCompiled(state.log, target)
        state.compiled.append(compiled.device)
        return compiled

    monkeypatch.setattr(compiler, "compile_kernel", compile_kernel)
    monkeypatch.setattr(cuda_driver, "device_target", lambda device: state.targets[device])
    monkeypatch.setattr(compiler, "current_target", lambda: "sm_90a")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.delenv("TILE_EMULATE", raising=False)
    torch = types.ModuleType("torch")
    torch._C = SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x5000 + index,
                               _cuda_getDevice=lambda: state.device)
    torch.cuda = SimpleNamespace(current_device=lambda: state.device, is_initialized=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return state


def test_each_device_gets_its_own_kernel_and_stream(two_gpus):
    k = tile.jit(scale_kernel.fn)
    k[(1,)](Tensor(0), Tensor(0), 64, BLOCK=32)  # compiles for cuda:0, installs the fast binder
    k[(1,)](Tensor(0), Tensor(0, 0x20000), 64, BLOCK=32)
    two_gpus.device = 1
    k[(1,)](Tensor(1), Tensor(1), 64, BLOCK=32)  # the fast binder misses: compiles for cuda:1
    k[(1,)](Tensor(1), Tensor(1), 64, BLOCK=32)
    assert two_gpus.compiled == [0, 1]
    assert two_gpus.log == [("general", 0, None), ("fast", 0, 0x5000), ("fast", 1, 0x5001), ("fast", 1, 0x5001)]
    assert sorted(key[-1] for key in k.cache) == [0, 1]
    from tile.runtime.driver import driver

    driver.set_active(SimpleNamespace(get_current_target=lambda: "sm_90a", get_current_device=lambda: 1))
    try:
        caches = k.device_caches  # Triton's view: per device, its compiled kernels and entries
    finally:
        driver.reset_active()
    assert sorted(caches) == [0, 1]
    assert [[key[-1] for key in caches[d][0]] for d in (0, 1)] == [[0], [1]]
    assert [[key[-1] for key in caches[d][1]] for d in (0, 1)] == [[0], [1]]


def test_a_device_of_another_architecture_gets_its_own_code(two_gpus):
    two_gpus.targets[1] = "sm_80"
    k = tile.jit(scale_kernel.fn)
    k[(1,)](Tensor(0), Tensor(0), 64, BLOCK=32)
    two_gpus.device = 1
    k[(1,)](Tensor(1), Tensor(1), 64, BLOCK=32)
    assert {key[-1]: compiled.target for key, compiled in k.cache.items()} == {0: "sm_90a", 1: "sm_80"}


def test_the_fast_binder_refuses_tensors_off_the_current_device(two_gpus):
    k = tile.jit(scale_kernel.fn)
    k[(1,)](Tensor(0), Tensor(0), 64, BLOCK=32)
    with pytest.raises(ValueError, match="scale_kernel: argument 'x_ptr' is on cuda:1, but this launch runs on cuda:0"):
        k[(1,)](Tensor(1), Tensor(1), 64, BLOCK=32)
    with pytest.raises(ValueError, match="argument 'out_ptr' is on cuda:1, but this launch runs on cuda:0"):
        k[(1,)](Tensor(0), Tensor(1), 64, BLOCK=32)
    assert two_gpus.compiled == [0] and len(two_gpus.log) == 1


def test_device_arrays_launch_on_their_device_through_the_general_path(two_gpus):
    k = tile.jit(scale_kernel.fn)
    x1, out1 = gpu_array(1), gpu_array(1)
    k[(1,)](x1, out1, 4, BLOCK=32)  # the current device is 0: the arrays choose cuda:1
    k[(1,)](x1, out1, 4, BLOCK=32)
    assert two_gpus.compiled == [1]
    assert [(how, device) for how, device, _ in two_gpus.log] == [("general", 1), ("general", 1)]
    with pytest.raises(ValueError, match="argument 'out_ptr' is on cuda:0, but this launch runs on cuda:1, the "
                                         "device of argument 'x_ptr'"):
        k[(1,)](x1, gpu_array(0), 4, BLOCK=32)


def test_warmup_compiles_for_the_current_device(two_gpus):
    k = tile.jit(scale_kernel.fn)
    two_gpus.device = 1
    k.warmup(Tensor(1), Tensor(1), 64, BLOCK=32, grid=(1,))
    assert two_gpus.compiled == [1] and [key[-1] for key in k.cache] == [1]


def test_interpreter_launches_have_no_device(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    k = tile.jit(scale_kernel.fn)
    x = np.random.default_rng(0).standard_normal(40).astype(np.float32)
    out = np.full(40, np.nan, np.float32)
    k[(2,)](x, out, 40, BLOCK=32)
    np.testing.assert_allclose(out, 2.0 * x.astype(np.float64), rtol=1e-6)
    assert [key[-1] for key in k.cache] == [None]


# ------------------------------------------------------------------------------ contexts


OK = object()
INVALID_CONTEXT = SimpleNamespace(name="CUDA_ERROR_INVALID_CONTEXT")


class ContextDriver:
    """Just enough of cuda.bindings.driver for contexts, allocations and launches: a stack of
    current contexts (ints), and a record of the context each call ran in. A launch in
    another context than its function's fails, as with CUDA 12's driver."""

    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_NUM_REGS="NUM_REGS", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES="LOCAL",
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES="SHARED", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK="THREADS",
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="DYNAMIC",
    )

    def __init__(self, current: int = 0) -> None:
        self.stack = [current]
        self.calls: list[tuple] = []
        self.function_context: dict[str, int] = {}

    def cuCtxGetCurrent(self):
        return (OK, self.stack[-1])

    def cuCtxSetCurrent(self, context):
        self.calls.append(("set", context))
        self.stack[-1] = context
        return (OK,)

    def cuCtxPushCurrent(self, context):
        self.calls.append(("push", context))
        self.stack.append(context)
        return (OK,)

    def cuCtxPopCurrent(self):
        self.calls.append(("pop", self.stack[-1]))
        return (OK, self.stack.pop())

    def cuMemAllocAsync(self, nbytes, stream):
        self.calls.append(("alloc", self.stack[-1], nbytes))
        return (OK, 0xABC000)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        self.calls.append(("dtoh", self.stack[-1], nbytes))
        return (OK,)

    def cuCtxSynchronize(self):
        self.calls.append(("sync", self.stack[-1]))
        return (OK,)

    def cuFuncGetAttribute(self, attribute, function):
        return (OK, {"NUM_REGS": 32, "LOCAL": 0, "SHARED": 0, "THREADS": 1024, "DYNAMIC": 48 * 1024}[attribute])

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.function_context[function] != self.stack[-1]:
            return (INVALID_CONTEXT,)
        self.calls.append(("launch", self.stack[-1], function, stream))
        return (OK,)

    def cuGetErrorString(self, err):
        return (OK, b"invalid device context")


def fake_device(ordinal: int) -> CudaDevice:
    device = CudaDevice.__new__(CudaDevice)
    device.ordinal, device.name = ordinal, f"fake GPU {ordinal}"
    device.context = device._context_address = 0x100 + ordinal
    device.max_grid_dims, device.max_threads_per_block = (2**31 - 1, 65535, 65535), 1024
    device.max_shared_memory_per_block_optin = 227 * 1024
    return device


@pytest.fixture
def contexts(monkeypatch):
    """The fake driver with two devices whose contexts are 0x100 and 0x101, none current."""
    driver = ContextDriver()
    monkeypatch.setattr(cuda_driver, "_driver", driver)
    monkeypatch.setattr(cuda_driver, "_SUCCESS", OK)
    monkeypatch.setattr(cuda_driver, "_thread", type(cuda_driver._thread)())
    for ordinal in (0, 1):
        monkeypatch.setitem(cuda_driver._devices, ordinal, fake_device(ordinal))
        monkeypatch.setitem(cuda_driver._pool_ready, ordinal, True)
    return driver


def test_activation_pushes_only_another_context_and_restores_the_callers(contexts):
    contexts.stack = [0x100]
    with CudaDevice.of(0).activated():
        assert contexts.stack == [0x100]
    assert contexts.calls == []
    with CudaDevice.of(1).activated():
        assert contexts.stack[-1] == 0x101
    assert contexts.stack == [0x100] and contexts.calls == [("push", 0x101), ("pop", 0x101)]


def test_a_context_made_current_by_someone_else_stays(contexts):
    contexts.stack = [0x101]  # torch.cuda.set_device(1)
    CudaDevice.get(0)
    assert contexts.stack == [0x101] and contexts.calls == []


def test_a_thread_without_a_context_gets_one(contexts):
    contexts.stack = [0]
    CudaDevice.get(0)
    assert contexts.stack == [0x100] and contexts.calls == [("set", 0x100)]


def test_memory_work_runs_in_its_devices_context(contexts):
    contexts.stack = [0x100]
    assert cuda_driver.mem_alloc(256, device=1) == 0xABC000
    cuda_driver.synchronize(1)
    cuda_driver.memcpy_dtoh(0x1000, 0xABC000, 256, device=1)
    assert [call for call in contexts.calls if call[0] not in ("push", "pop")] == [
        ("alloc", 0x101, 256), ("sync", 0x101), ("dtoh", 0x101, 256)]
    assert contexts.stack == [0x100]


def test_a_launch_in_another_context_is_retried_in_the_kernels(contexts):
    contexts.function_context = {"f1": 0x101}
    kernel = CudaKernel("k", None, "f1", CudaDevice.of(1), "")
    fast = kernel.launcher(("i32",)).make_entry(128, 0, (0,), 1).fast
    contexts.stack = [0x100]  # PyTorch's current device is 0
    fast((2,), 0, 7)
    assert [call for call in contexts.calls if call[0] == "launch"] == [("launch", 0x101, "f1", 0)]
    assert contexts.stack == [0x100]
    contexts.calls.clear()
    contexts.stack = [0x101]  # the usual case: the kernel's context is current, nothing is switched
    fast((2,), 0, 7)
    assert contexts.calls == [("launch", 0x101, "f1", 0)]


def test_the_general_entry_launches_in_the_kernels_context(contexts):
    contexts.function_context = {"f1": 0x101}
    kernel = CudaKernel("k", None, "f1", CudaDevice.of(1), "")
    entry = kernel.launcher(("i32",)).make_entry(128, 0, (0,), 1)
    contexts.stack = [0]
    entry((1,), (7,), (7,), None)
    assert contexts.calls == [("push", 0x101), ("launch", 0x101, "f1", 0), ("pop", 0x101)]


def test_without_torch_the_thread_chooses_its_device(monkeypatch, contexts):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(cuda_driver, "device_count", lambda: 2)
    assert cuda_driver.current_device() == 0
    contexts.stack = [0x100]
    cuda_driver.set_current_device(1)
    assert cuda_driver.current_device() == 1
    assert contexts.stack == [0x101]  # as cudaSetDevice: the fast path launches in device 1's context
    from tile.runtime.driver import CudaDriver

    assert CudaDriver.get_current_device() == 1
    with pytest.raises(ValueError, match="there is no CUDA device 2: this process sees 2 CUDA devices"):
        cuda_driver.set_current_device(2)
    seen = []
    thread = __import__("threading").Thread(target=lambda: seen.append(cuda_driver.current_device()))
    thread.start()
    thread.join()
    assert seen == [0]  # a choice per thread, as CUDA's current device


# ------------------------------------------------------------------------------ one disk cache, many ranks


@tile.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


RANK_KERNELS = {"scale": scale_kernel, "shift": shift_kernel}
RANK_SIGNATURE = ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256})


def _compile_as_rank(directory: str, name: str, start, results) -> None:
    import os

    os.environ["TILE_CACHE_DIR"] = directory
    start.wait()  # every rank misses the empty cache at the same moment
    kernel = tile.compile(tile.compiler.ASTSource(RANK_KERNELS[name], *RANK_SIGNATURE), target="sm_90a")
    results.put((name, kernel.asm["ptx"], kernel.from_disk_cache))


def test_eight_ranks_compiling_at_once_share_one_cache_directory(tmp_path, monkeypatch):
    """Eight processes start together on an empty TILE_CACHE_DIR, six compiling one kernel and
    two another (ranks of a job compile the same kernels): each kernel is compiled once, the
    other ranks read its entry, every PTX is the one compiled alone, and no partial file stays."""
    import multiprocessing

    monkeypatch.setenv("TILE_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "reference"))
    reference = {name: tile.compile(tile.compiler.ASTSource(kernel, *RANK_SIGNATURE), target="sm_90a").asm["ptx"]
                 for name, kernel in RANK_KERNELS.items()}
    monkeypatch.delenv("TILE_ALWAYS_COMPILE")
    directory = tmp_path / "shared"
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    start, results = context.Barrier(8), context.Queue()
    names = ["scale"] * 6 + ["shift"] * 2
    processes = [context.Process(target=_compile_as_rank, args=(str(directory), name, start, results))
                 for name in names]
    for process in processes:
        process.start()
    outputs = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert all(ptx == reference[name] for name, ptx, _ in outputs)
    compiled = sorted(name for name, _, from_disk in outputs if not from_disk)
    assert compiled == ["scale", "shift"]
    files = sorted(p.suffix for p in directory.rglob("*") if p.is_file())
    assert files == [".entry", ".entry", ".lock", ".lock"]
