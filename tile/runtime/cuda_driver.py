"""CUDA through cuda-python's driver bindings: devices, PTX module loading, fast launches, memory.

cuda-python is imported on first use, so `import tile` works on machines without it.
Each CUDA call here returns a `(CUresult, *values)` tuple; `_check` turns a failing result
into a `DriverError` that names the call.

Every GPU is used through its primary context (the one PyTorch uses). tile never takes the
calling thread's current context for itself: PyTorch's current device is the device of that
context, so work for a given device (loading, allocating, copying, a launch off the fast
path) runs inside `CudaDevice.activated()`, which pushes the device's context when another one
is current and pops it afterwards. The fast path launches in the current context, which is
the kernel's when its device is PyTorch's current one; when the launch fails for want of it
(a thread without a context), the checked path makes the kernel's context current and
launches again.

The hot path is `Launcher.__call__`: one `struct.pack_into` writes every argument into
storage allocated once per (kernel, argument kinds), then one `cuLaunchKernel` call receives
the address of a pre-built `void*[]` array that points at that storage.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import sys
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from types import ModuleType
from typing import Any, Callable, ContextManager

from tile.runtime.errors import CompilerBugError, DriverError, GpuFault, LaunchError

_driver: ModuleType | None = None
_SUCCESS: Any = None  # CUresult.CUDA_SUCCESS; enum members are singletons, so `is` compares


def _drv() -> ModuleType:
    """The `cuda.bindings.driver` module, imported on first use."""
    global _driver, _SUCCESS
    if _driver is None:
        from cuda.bindings import driver

        _SUCCESS = driver.CUresult.CUDA_SUCCESS
        _driver = driver
    return _driver


def _error(err: Any, call: str, kernel: str | None = None, log: str = "",
           launching: tuple[CudaKernel, Any] | None = None) -> DriverError:
    """A DriverError for the failing CUresult `err`, with the driver's description of it; a
    GpuFault for the sticky errors of a faulted kernel. `launching` is the (kernel, grid) of
    the launch that got `err`, if a launch did."""
    status, text = _drv().cuGetErrorString(err)
    description = text.decode(errors="replace") if status is _SUCCESS and text else ""
    if err.name in STICKY_ERRORS:
        return _fault(err.name, call, description, launching)
    return DriverError(call, err.name, kernel=kernel, description=description, log=log)


# The errors a faulting kernel leaves behind: CUDA reports them at the next synchronization,
# copy or launch, and from then on to every call (the context is unusable).
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_TENSOR_MEMORY_LEAK", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
})
# (CudaKernel, grid) of the last launch the driver accepted: the suspect when a fault surfaces
# later. One list store per launch.
recent_launch: list[Any] = [None]
_first_fault: list[GpuFault | None] = [None]  # the context has been unusable since this fault


def _fault(code: str, call: str, description: str, launching: tuple[CudaKernel, Any] | None) -> GpuFault:
    """The GpuFault for sticky error `code` seen by `call`: the first names the kernel (the one
    launching under CUDA_LAUNCH_BLOCKING=1, else the last one launched); later ones say the
    context was lost to it."""
    earlier = _first_fault[0]
    if earlier is not None:
        return GpuFault(call, code, description=description, earlier=earlier)
    blocking = launching is not None and os.environ.get("CUDA_LAUNCH_BLOCKING", "0") == "1"
    suspect = launching if blocking else recent_launch[0]
    kernel, grid = suspect if suspect is not None else (None, None)
    fault = GpuFault(call, code, kernel=kernel.name if kernel is not None else None, grid=grid,
                     description=description, asserts=kernel.assert_sites if kernel is not None else (),
                     hint=kernel.fault_hint if kernel is not None else "", blocking=blocking)
    _first_fault[0] = fault
    return fault


def _check(result: tuple, call: str, kernel: str | None = None) -> Any:
    """The value of a `(CUresult, value)` result, or None for `(CUresult,)`; raises if it failed."""
    if result[0] is not _SUCCESS:
        raise _error(result[0], call, kernel)
    return result[1] if len(result) > 1 else None


@cache
def cuda_available() -> bool:
    """True when cuda-python imports, the driver initializes and at least one device exists."""
    try:
        drv = _drv()
        if drv.cuInit(0)[0] is not _SUCCESS:
            return False
        err, count = drv.cuDeviceGetCount()
        return err is _SUCCESS and count > 0
    except Exception:  # no cuda-python, or no driver library (cuda.pathfinder raises then)
        return False


# Highest PTX ISA version each driver release accepts, newest first, capped at the highest
# version tile emits. Driver versions read as 1000 * major + 10 * minor.
_DRIVER_PTX: tuple[tuple[int, tuple[int, int]], ...] = (
    (12080, (8, 7)),
    (12060, (8, 5)),
    (12050, (8, 5)),
    (12040, (8, 4)),
    (12030, (8, 3)),
    (12020, (8, 2)),
    (12010, (8, 1)),
    (12000, (8, 0)),
    (11080, (7, 8)),
    (11070, (7, 7)),
    (11060, (7, 6)),
    (11050, (7, 5)),
    (11040, (7, 4)),
    (11030, (7, 3)),
    (11020, (7, 2)),
    (11010, (7, 1)),
    (11000, (7, 0)),
)

# Lowest PTX ISA version that knows each target (PTX ISA manual, "Target ISA notes").
_TARGET_MIN_PTX: dict[str, tuple[int, int]] = {
    "sm_80": (7, 0),
    "sm_86": (7, 1),
    "sm_87": (7, 4),
    "sm_89": (7, 8),
    "sm_90": (7, 8),
    "sm_90a": (8, 0),
    "sm_100": (8, 6),
    "sm_120": (8, 7),
}


_devices: dict[int, CudaDevice] = {}
_devices_lock = threading.Lock()
_NOTHING_TO_DO = contextlib.nullcontext()
# .has_context: this thread has had a current context checked or set; .loading: see loading_on;
# .device: the current device of a program without PyTorch (set_current_device)
_thread = threading.local()

_LOG_BYTES = 64 * 1024
# Load failures that mean the PTX itself is wrong (or targets what the driver cannot run),
# which is tile's fault, not the user's.
_PTX_REJECTED = {
    "CUDA_ERROR_INVALID_PTX",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    "CUDA_ERROR_INVALID_IMAGE",
    "CUDA_ERROR_NO_BINARY_FOR_GPU",
}


def _log_text(buffer: bytearray) -> str:
    return buffer.split(b"\0", 1)[0].decode(errors="replace").strip()


class CudaDevice:
    """One GPU: its primary context and the properties the compiler and the launcher need.

    Get one with `CudaDevice.get(ordinal)`; it is created once per ordinal.
    """

    @classmethod
    def get(cls, ordinal: int = 0) -> CudaDevice:
        """The device `ordinal`, created on first use; a context is current in this thread
        afterwards (this device's, when the thread had none: see `make_current`)."""
        device = cls.of(ordinal)
        device.make_current()
        return device

    @classmethod
    def of(cls, ordinal: int) -> CudaDevice:
        """The device `ordinal`, created on first use, leaving the thread's current context as
        it is. ValueError for an index this process has no device for."""
        device = _devices.get(ordinal)
        if device is None:
            if not cuda_available():
                raise DriverError("cuInit", "CUDA_ERROR_NO_DEVICE", description="no CUDA driver or GPU found")
            check_device_index(ordinal)
            with _devices_lock:
                device = _devices.get(ordinal)
                if device is None:
                    device = _devices[ordinal] = cls(ordinal)
        return device

    def __init__(self, ordinal: int) -> None:
        drv = _drv()
        self.ordinal = ordinal
        self.handle = _check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
        # The primary context is the one the CUDA runtime uses, so memory and streams from
        # PyTorch or CuPy on this device are valid in tile's launches and vice versa.
        self.context = _check(drv.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self._context_address = int(self.context)
        self.name: str = _check(drv.cuDeviceGetName(256, self.handle), "cuDeviceGetName").split(b"\0")[0].decode()
        a = drv.CUdevice_attribute
        self.compute_capability: tuple[int, int] = (
            self._attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self._attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )
        self.num_sms: int = self._attribute(a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_threads_per_block: int = self._attribute(a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        self.max_shared_memory_per_block_optin: int = self._attribute(
            a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        )
        self.max_grid_dims: tuple[int, int, int] = (
            self._attribute(a.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            self._attribute(a.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            self._attribute(a.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
        )
        self.warp_size: int = self._attribute(a.CU_DEVICE_ATTRIBUTE_WARP_SIZE)
        self.driver_version: int = _check(drv.cuDriverGetVersion(), "cuDriverGetVersion")

    def _attribute(self, attribute: Any) -> int:
        return _check(_drv().cuDeviceGetAttribute(attribute, self.handle), "cuDeviceGetAttribute")

    def make_current(self) -> None:
        """Make this device's primary context current in the calling thread if the thread has
        none (checked once per thread). A context someone else made current stays: PyTorch's
        current device is the device of the current context, and `torch.cuda.set_device(1)`
        must survive tile's first use of device 0. Work on a given device goes through
        `activated()`."""
        if not getattr(_thread, "has_context", False):
            if not _current_context():
                _check(_drv().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
            _thread.has_context = True

    def is_current(self) -> bool:
        """Whether this device's primary context is the calling thread's current context."""
        return _current_context() == self._context_address

    def activated(self) -> ContextManager[None]:
        """This device's primary context current in the calling thread while the block runs
        (pushed when another one, or none, is current, and popped after), so that loads,
        allocations, copies and launches for this device work whatever device PyTorch or the
        caller has made current, and leave it current afterwards. When it already is current
        (almost always), a context manager that does nothing: every allocation and free asks."""
        return _NOTHING_TO_DO if self.is_current() else self._pushed()

    @contextlib.contextmanager
    def _pushed(self) -> Iterator[None]:
        _check(_drv().cuCtxPushCurrent(self.context), "cuCtxPushCurrent")
        try:
            yield
        finally:
            _check(_drv().cuCtxPopCurrent(), "cuCtxPopCurrent")

    def load_module(self, ptx: str, kernel_name: str) -> CudaKernel:
        """JIT-compile `ptx` with the driver and return its kernel `kernel_name`.

        Raises CompilerBugError (with the JIT log) when the driver rejects the PTX.
        """
        with self.activated():
            return self._load_module(ptx, kernel_name)

    def _load_module(self, ptx: str, kernel_name: str) -> CudaKernel:
        drv = _drv()
        opt = drv.CUjit_option
        info, error = bytearray(_LOG_BYTES), bytearray(_LOG_BYTES)
        options = [
            opt.CU_JIT_INFO_LOG_BUFFER,
            opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            opt.CU_JIT_ERROR_LOG_BUFFER,
            opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            opt.CU_JIT_LOG_VERBOSE,
        ]
        values = [info, _LOG_BYTES, error, _LOG_BYTES, 1]
        err, module = drv.cuModuleLoadDataEx(ptx.encode() + b"\0", len(options), options, values)
        if err is not _SUCCESS:
            log = _log_text(error) or _log_text(info)
            if err.name in _PTX_REJECTED:
                description = _error(err, "cuModuleLoadDataEx").description
                raise CompilerBugError(kernel_name, log, ptx=ptx, code=err.name, description=description)
            raise _error(err, "cuModuleLoadDataEx", kernel_name, log)
        function = _check(drv.cuModuleGetFunction(module, kernel_name.encode()), "cuModuleGetFunction", kernel_name)
        return CudaKernel(kernel_name, module, function, self, _log_text(info))

    def ptx_target(self) -> str:
        """The `.target` for this device: sm_90a on Hopper (for wgmma and TMA), else sm_XY."""
        major, minor = self.compute_capability
        return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"

    def ptx_version(self) -> str:
        """The `.version` to emit: the highest PTX ISA the driver accepts, at most 8.7."""
        accepted = next((ptx for driver, ptx in _DRIVER_PTX if self.driver_version >= driver), None)
        target = self.ptx_target()
        needed = _TARGET_MIN_PTX.get(target, (7, 0))
        if accepted is None or accepted < needed:
            major, minor = self.driver_version // 1000, self.driver_version % 1000 // 10
            raise DriverError(
                "ptx_version",
                "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                description=f"driver {major}.{minor} is too old for {target}, which needs "
                f"PTX ISA {needed[0]}.{needed[1]}; update the NVIDIA driver",
            )
        return f"{accepted[0]}.{accepted[1]}"

    def __repr__(self) -> str:
        return f"CudaDevice({self.ordinal}, {self.name!r}, {self.ptx_target()})"


def get_device(ordinal: int = 0) -> CudaDevice:
    """`CudaDevice.get(ordinal)`: the device, with a context current in this thread."""
    return CudaDevice.get(ordinal)


def _current_context() -> int:
    """The address of the calling thread's current context (0: none)."""
    context = _check(_drv().cuCtxGetCurrent(), "cuCtxGetCurrent")
    return int(context) if context is not None else 0


@cache
def device_count() -> int:
    """How many CUDA devices this process sees (0 without a driver or GPU)."""
    if not cuda_available():
        return 0
    return int(_check(_drv().cuDeviceGetCount(), "cuDeviceGetCount"))


def check_device_index(index: Any, count: int | None = None) -> int:
    """`index` as a device ordinal: TypeError when it is not an int, ValueError naming the
    devices there are when this process has no device of that index. `count` defaults to
    `device_count()`."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"a CUDA device index is an int, got {index!r}")
    count = device_count() if count is None else count
    if not 0 <= index < count:
        seen = "no CUDA device" if count == 0 else f"{count} CUDA device{'s' if count > 1 else ''} " \
                                                   f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})"
        raise ValueError(f"there is no CUDA device {index}: this process sees {seen}; CUDA_VISIBLE_DEVICES "
                         f"chooses which GPUs a process sees")
    return index


def device_target(device: int) -> str:
    """The PTX target of GPU `device` (e.g. "sm_90a"), what kernels launched there compile for."""
    return CudaDevice.of(device).ptx_target()


def loading_on(device: int | None) -> contextlib.AbstractContextManager[None]:
    """Kernels compiled in the block are loaded on GPU `device` (`loading_device()`); None
    keeps the current device."""
    if device is None:
        return contextlib.nullcontext()
    return _loading_on(device)


@contextlib.contextmanager
def _loading_on(device: int) -> Iterator[None]:
    previous = getattr(_thread, "loading", None)
    _thread.loading = device
    try:
        yield
    finally:
        _thread.loading = previous


def loading_device() -> int:
    """The GPU a kernel compiled now is loaded on: the launch's device inside `loading_on`,
    else the current device."""
    device = getattr(_thread, "loading", None)
    return current_device() if device is None else device


def capturing() -> bool:
    """Whether PyTorch is capturing a CUDA graph on its current stream (torch.cuda.graph)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()


class CaptureError(RuntimeError):
    """A kernel had to be compiled, loaded or tuned while a CUDA graph was being captured."""

    def __init__(self, kernel: str, work: str = "compiled and loaded") -> None:
        super().__init__(
            f"kernel '{kernel}' is launched for the first time (with these argument types and options) while a CUDA "
            f"graph is being captured: it would have to be {work}, which a capture cannot record. "
            f"Warm up first: launch it once with the same arguments before torch.cuda.graph(...), then capture")


def current_device() -> int:
    """The device a launch without device-bound arguments runs on, and where new DeviceArrays
    go: PyTorch's current CUDA device when PyTorch has initialized CUDA, else this thread's
    choice (`set_current_device`, default 0)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    return getattr(_thread, "device", 0)


def set_current_device(index: int) -> None:
    """Choose this thread's current device, for programs without PyTorch (with PyTorch, use
    torch.cuda.set_device: tile follows it). As cudaSetDevice, it makes the device's context
    current, so fast-path launches on it run in their own context."""
    device = CudaDevice.of(check_device_index(index))
    _check(_drv().cuCtxSetCurrent(device.context), "cuCtxSetCurrent")
    _thread.device, _thread.has_context = index, True


class CudaKernel:
    """A loaded kernel: its resource use (read once from the driver) and its launchers."""

    def __init__(self, name: str, module: Any, function: Any, device: CudaDevice, info_log: str) -> None:
        self.name = name
        self.module = module  # kept so the module outlives every use of `function`
        self.function = function
        self.device = device
        self.info_log = info_log
        a = _drv().CUfunction_attribute
        self.num_regs: int = self._attribute(a.CU_FUNC_ATTRIBUTE_NUM_REGS)
        self.local_size_bytes: int = self._attribute(a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        self.shared_size_bytes: int = self._attribute(a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        self.max_threads_per_block: int = self._attribute(a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        # Dynamic shared memory a launch may use now: 48 KB minus static until raised.
        self.max_dynamic_shared_bytes: int = self._attribute(a.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        self.assert_sites: tuple[str, ...] = ()  # "file:line: message" of its device_asserts, for GpuFault
        self.fault_hint = ""  # what may explain an address fault of this kernel, for GpuFault
        self._launchers: dict[tuple[tuple[str, ...], tuple[str, ...]], Launcher] = {}

    def _attribute(self, attribute: Any) -> int:
        return _check(_drv().cuFuncGetAttribute(attribute, self.function), "cuFuncGetAttribute", self.name)

    @property
    def max_dynamic_shared_bytes_optin(self) -> int:
        """The most dynamic shared memory this kernel can be allowed: the device's opt-in
        limit minus the kernel's static shared memory."""
        return self.device.max_shared_memory_per_block_optin - self.shared_size_bytes

    def set_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with up to `nbytes` of dynamic shared memory (needed above 48 KB)."""
        allowed = self.max_dynamic_shared_bytes_optin
        if nbytes > allowed:
            raise LaunchError(
                self.name,
                "dynamic shared memory (bytes)",
                nbytes,
                allowed,
                f"device opt-in limit {self.device.max_shared_memory_per_block_optin} "
                f"minus {self.shared_size_bytes} of static shared memory",
            )
        attribute = _drv().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        with self.device.activated():
            _check(_drv().cuFuncSetAttribute(self.function, attribute, nbytes), "cuFuncSetAttribute", self.name)
        self.max_dynamic_shared_bytes = nbytes

    def launcher(self, arg_kinds: tuple[str, ...], attributes: tuple[str, ...] = ()) -> Launcher:
        """The launcher for arguments of these kinds and these launch attributes (see
        LAUNCH_ATTRIBUTES), built on first use."""
        launcher = self._launchers.get((arg_kinds, attributes))
        if launcher is None:
            launcher = self._launchers[(arg_kinds, attributes)] = Launcher(self, arg_kinds, attributes)
        return launcher

    def __repr__(self) -> str:
        return (
            f"CudaKernel({self.name!r}, regs={self.num_regs}, spill_bytes={self.local_size_bytes}, "
            f"shared_bytes={self.shared_size_bytes})"
        )


# How each argument kind is written into its 8-byte slot by `struct` ("=": no implicit
# padding, so every slot starts at a multiple of 8). bf16 travels as its 16 bits; a TMA
# tensor map (sm_90a) as its 128 bytes, in a slot of 128 bytes.
_SLOT_FORMAT: dict[str, str] = {
    "tensormap": "128s",
    "ptr": "Q",
    "i1": "?7x",
    "i8": "b7x",
    "i16": "h6x",
    "i32": "i4x",
    "i64": "q",
    "u8": "B7x",
    "u16": "H6x",
    "u32": "I4x",
    "u64": "Q",
    "f16": "e6x",
    "bf16": "H6x",
    "f32": "f4x",
    "f64": "d",
}
_SLOT_BYTES = 8
_WIDE_SLOTS = {"tensormap": 128}


def _bf16_bits(value: float) -> int:
    """The bfloat16 bits of `value`, rounded to nearest even (NaN stays a quiet NaN)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


# Launch attributes a launcher can set (through cuLaunchKernelEx): Triton's
# launch_cooperative_grid and launch_pdl.
LAUNCH_ATTRIBUTES = ("cooperative", "pdl")


def _attribute_launch(kernel: CudaKernel, attributes: tuple[str, ...]) -> Callable[..., tuple]:
    """A function with cuLaunchKernel's arguments that launches through cuLaunchKernelEx with
    `attributes`: "cooperative" (all programs resident at once, so they may wait on each
    other) and "pdl" (programmatic dependent launch: the next kernel on the stream may start
    before this one ends). Raises ValueError where the device cannot do it."""
    drv = _drv()
    unknown = [a for a in attributes if a not in LAUNCH_ATTRIBUTES]
    if unknown:
        raise ValueError(f"kernel '{kernel.name}': unknown launch attributes {unknown}; known: {LAUNCH_ATTRIBUTES}")
    device = kernel.device
    if "pdl" in attributes and device.compute_capability < (9, 0):
        raise ValueError(f"kernel '{kernel.name}': launch_pdl (programmatic dependent launch) needs sm_90 or newer; "
                         f"this GPU is sm_{device.compute_capability[0]}{device.compute_capability[1]}")
    if "cooperative" in attributes and not device._attribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH):
        raise ValueError(f"kernel '{kernel.name}': launch_cooperative_grid: {device.name} does not support "
                         f"cooperative launches")
    launch_attributes = []
    for name in attributes:
        attribute = drv.CUlaunchAttribute()
        if name == "cooperative":
            attribute.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            attribute.value.cooperative = 1
        else:
            attribute.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attribute.value.programmaticStreamSerializationAllowed = 1
        launch_attributes.append(attribute)

    def launch(function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any,
               params: int, extra: int) -> tuple:
        config = drv.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
        config.blockDimX, config.blockDimY, config.blockDimZ = bx, by, bz
        config.sharedMemBytes = shared
        config.hStream = stream
        config.attrs = launch_attributes
        config.numAttrs = len(launch_attributes)
        return drv.cuLaunchKernelEx(config, function, params, extra)

    return launch


class Launcher:
    """Launches one kernel with one argument signature; built once, called per launch.

    `launcher(grid, block_x, shared_bytes, stream, *values)`: `grid` is a 3-tuple, pointer
    values are device addresses (ints), `stream` is a CUstream handle as an int (0: default).
    With `attributes` (LAUNCH_ATTRIBUTES) it launches through cuLaunchKernelEx.
    """

    __slots__ = (
        "kernel", "arg_kinds", "_function", "_launch", "_pack", "_slots", "_params", "_params_address",
        "_bf16_positions", "_max_threads", "_max_shared", "_max_gx", "_max_gy", "_max_gz", "_lock",
    )  # fmt: skip

    def __init__(self, kernel: CudaKernel, arg_kinds: tuple[str, ...], attributes: tuple[str, ...] = ()) -> None:
        unknown = [kind for kind in arg_kinds if kind not in _SLOT_FORMAT]
        if unknown:
            raise ValueError(f"kernel '{kernel.name}': unknown argument kinds {unknown}; known: {list(_SLOT_FORMAT)}")
        self.kernel = kernel
        self.arg_kinds = arg_kinds
        self._function = kernel.function
        self._launch = _attribute_launch(kernel, attributes) if attributes else _drv().cuLaunchKernel
        count = len(arg_kinds)
        self._pack = struct.Struct("=" + "".join(_SLOT_FORMAT[kind] for kind in arg_kinds)).pack_into
        # The storage and the pointer array live as long as the launcher: the driver reads
        # them during cuLaunchKernel only, so the next launch may reuse them, but not a launch
        # from another thread at the same time (cuda-python releases the GIL in the call): the
        # lock holds from packing to the driver's return.
        sizes = [_WIDE_SLOTS.get(kind, _SLOT_BYTES) for kind in arg_kinds]
        self._slots = (ctypes.c_uint64 * max(sum(sizes) // _SLOT_BYTES, 1))()
        base = ctypes.addressof(self._slots)
        starts = [sum(sizes[:i]) for i in range(count)]
        self._params = (ctypes.c_void_p * max(count, 1))(*(base + start for start in starts))
        self._params_address = ctypes.addressof(self._params) if count else 0
        self._bf16_positions = tuple(i for i, kind in enumerate(arg_kinds) if kind == "bf16")
        self._max_threads = kernel.max_threads_per_block
        self._max_shared = kernel.max_dynamic_shared_bytes
        self._max_gx, self._max_gy, self._max_gz = kernel.device.max_grid_dims
        self._lock = threading.Lock()

    def __call__(self, grid: tuple[int, int, int], block_x: int, shared_bytes: int, stream: int, *values: Any) -> None:
        gx, gy, gz = grid
        if not (
            0 < gx <= self._max_gx
            and 0 < gy <= self._max_gy
            and 0 < gz <= self._max_gz
            and 0 < block_x <= self._max_threads
            and 0 <= shared_bytes <= self._max_shared
        ) and not self._check_launch(gx, gy, gz, block_x, shared_bytes):
            return
        # The fast path launches in whatever context is current; here the kernel's own is made
        # current for the launch (a thread without a context, a device not the current one).
        with self.kernel.device.activated(), self._lock:
            try:
                self._pack(self._slots, 0, *(self._convert_bf16(values) if self._bf16_positions else values))
            except (struct.error, OverflowError, TypeError) as exc:
                raise self._argument_error(values, exc) from exc
            err = self._launch(
                self._function, gx, gy, gz, block_x, 1, 1, shared_bytes, stream, self._params_address, 0
            )[0]
        if err is not _SUCCESS:
            raise _error(err, "cuLaunchKernel", self.kernel.name, launching=(self.kernel, grid))
        recent_launch[0] = (self.kernel, grid)

    def make_entry(self, block_x: int, shared_bytes: int, positions: tuple[int, ...], value_count: int,
                   compiled: Any = None) -> Callable[[Any, tuple, tuple, Any], Any]:
        """The whole launch of one compiled kernel, for tile's launch binders.

        `entry(grid, values, args, stream)`: `values` are the launch values of the binder's
        `value_count` runtime arguments (`positions` picks this kernel's parameters among
        them: arguments folded into the kernel drop out) and `args` the arguments themselves
        (their current PyTorch stream is the default). `entry.fast(grid, stream, *values)` is
        the same launch with the stream given: a function generated for this kernel that packs
        the values and calls cuLaunchKernel, and only when that fails (an empty or too large
        grid, a value that does not pack, a driver error) goes through __call__, which checks
        everything and raises the precise error. The block size and shared memory are checked
        here, once. Both return `compiled` (the CompiledKernel, for `kernel[grid](...)`)."""
        from tile.utils import grid3

        names = [f"v{i}" for i in range(value_count)]
        chosen = "".join(f"{names[i]}, " for i in positions)
        namespace = {"pack": self._pack, "slots": self._slots, "launch": self._launch, "function": self._function,
                     "lock": self._lock,
                     "params": self._params_address, "SUCCESS": _SUCCESS, "grid3": grid3, "struct": struct,
                     "compiled": compiled, "recent": recent_launch, "kernel": self.kernel,
                     "checked": lambda grid, stream, values: self(grid3(grid, self.kernel.name), block_x, shared_bytes, stream,
                                                                   *values)}
        direct = (not self._bf16_positions
                  and 0 < block_x <= self._max_threads and 0 <= shared_bytes <= self._max_shared)
        config = f"{block_x}, 1, 1, {shared_bytes}, stream, params, 0"
        signature = f"def fast(grid, stream, {''.join(n + ', ' for n in names)}):"
        if direct:
            source = "\n".join([
                signature,
                "    try:",
                "        with lock:",
                f"            pack(slots, 0, {chosen})",
                "            if len(grid) == 1:",
                "                gx = grid[0]",
                # cuda-python truncates floats silently: anything but ints takes the checked path
                f"                result = launch(function, gx, 1, 1, {config}) if type(gx) is int else None",
                "            else:",
                "                gx, gy, gz = grid if len(grid) == 3 else grid3(grid)",
                f"                result = launch(function, gx, gy, gz, {config}) "
                "if type(gx) is int and type(gy) is int and type(gz) is int else None",
                "    except (struct.error, OverflowError, TypeError, ValueError):",
                "        result = None",
                "    if result is None or result[0] is not SUCCESS:",
                f"        checked(grid, stream, ({chosen}))",  # which records the launch it makes
                "    else:",
                "        recent[0] = (kernel, grid)",
                "    return compiled",
            ])
        else:
            source = f"{signature}\n    checked(grid, stream, ({chosen}))\n    return compiled"
        exec(compile(source, f"<tile launch of {self.kernel.name}>", "exec"), namespace)  # noqa: S102
        fast = namespace["fast"]

        device = self.kernel.device

        def entry(grid: Any, values: tuple, args: tuple, stream: Any) -> Any:
            # The general path: the kernel's device may not be the current one (a DeviceArray
            # on cuda:1 while cuda:0 is current), so its context is made current for the launch.
            if stream is None:
                stream = current_stream_of(args)
            if device.is_current():
                return fast(grid, stream, *values)
            with device.activated():
                return fast(grid, stream, *values)

        entry.fast = fast  # type: ignore[attr-defined]
        return entry

    def _check_launch(self, gx: int, gy: int, gz: int, block_x: int, shared_bytes: int) -> bool:
        """The slow path when a cheap bound check fails: False for an empty grid (nothing to
        run), LaunchError for a broken limit, True after raising the dynamic shared limit."""
        name = self.kernel.name
        if min(gx, gy, gz, block_x, shared_bytes) < 0:
            raise ValueError(
                f"kernel '{name}': negative launch configuration grid={(gx, gy, gz)} "
                f"block={block_x} shared={shared_bytes}"
            )
        for axis, size, limit in (("x", gx, self._max_gx), ("y", gy, self._max_gy), ("z", gz, self._max_gz)):
            if size > limit:
                raise LaunchError(name, f"grid dimension {axis} (blocks)", size, limit)
        if block_x == 0:
            raise ValueError(f"kernel '{name}': a block needs at least one thread")
        if block_x > self._max_threads:
            device_limit = self.kernel.device.max_threads_per_block
            hint = (
                f"device limit {device_limit}"
                if self._max_threads == device_limit
                else f"this kernel uses {self.kernel.num_regs} registers per thread; device limit {device_limit}"
            )
            raise LaunchError(name, "threads per block", block_x, self._max_threads, hint)
        if shared_bytes > self._max_shared:
            # set_dynamic_shared_memory raises LaunchError beyond the device's opt-in limit.
            if shared_bytes > self.kernel.max_dynamic_shared_bytes:
                self.kernel.set_dynamic_shared_memory(shared_bytes)
            self._max_shared = self.kernel.max_dynamic_shared_bytes
        return gx > 0 and gy > 0 and gz > 0

    def _convert_bf16(self, values: tuple[Any, ...]) -> list[Any]:
        converted = list(values)
        for i in self._bf16_positions:
            if i < len(converted):
                converted[i] = _bf16_bits(converted[i])
        return converted

    def _argument_error(self, values: Iterable[Any], exc: Exception) -> Exception:
        """A TypeError that names the argument the driver could not be given."""
        values = list(values)
        name = self.kernel.name
        if len(values) != len(self.arg_kinds):
            return TypeError(f"kernel '{name}' takes {len(self.arg_kinds)} arguments, got {len(values)}")
        for i, (kind, value) in enumerate(zip(self.arg_kinds, values)):
            try:
                struct.pack("=" + _SLOT_FORMAT[kind], _bf16_bits(value) if kind == "bf16" else value)
            except (struct.error, OverflowError, TypeError) as err:
                return TypeError(f"kernel '{name}': argument {i} ({kind}) cannot hold {value!r}: {err}")
        return TypeError(f"kernel '{name}': cannot pack arguments: {exc}")


_torch_tensor_types: dict[type, bool] = {}
_torch_stream: Callable[[int], int] | None = None


def is_torch_tensor(obj: object) -> bool:
    """Whether `obj` is a torch.Tensor (or subclass), decided without importing torch."""
    cls = type(obj)
    known = _torch_tensor_types.get(cls)
    if known is None:
        known = _torch_tensor_types[cls] = any(
            base.__module__.partition(".")[0] == "torch" and base.__name__ in ("Tensor", "TensorBase", "_TensorBase")
            for base in cls.__mro__
        )
    return known


def torch_stream_getter() -> Callable[[int], int]:
    """The handle of PyTorch's current stream on a device (by index). Call only when a torch
    tensor exists: torch is then imported, so this is a lookup."""
    import torch

    # The private raw-stream getter (what Triton uses) costs ~0.1 us; the public path ~2 us.
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def current_stream_of(args: Iterable[object]) -> int:
    """The current PyTorch stream of the first CUDA tensor among `args`, else 0 (default stream)."""
    global _torch_stream
    for arg in args:
        if is_torch_tensor(arg) and arg.is_cuda:  # type: ignore[attr-defined]
            if _torch_stream is None:
                _torch_stream = torch_stream_getter()
            return _torch_stream(arg.get_device())  # type: ignore[attr-defined]
    return 0


def mem_alloc(nbytes: int, device: int = 0) -> int:
    """Allocate `nbytes` of memory on GPU `device`; returns its address (0 for 0 bytes).

    Memory comes from the device's stream-ordered pool (cuMemAllocAsync on the legacy default
    stream, which every blocking stream waits for), kept by the pool when freed: cuMemFree
    synchronizes the whole device, so a function that allocates its outputs each call (as
    `tile.empty` in a benchmark loop) would otherwise wait for the GPU at every free."""
    if nbytes == 0:
        return 0
    gpu = CudaDevice.of(device)
    with gpu.activated():
        if _pooled(gpu):
            return int(_check(_drv().cuMemAllocAsync(nbytes, 0), "cuMemAllocAsync"))
        return int(_check(_drv().cuMemAlloc(nbytes), "cuMemAlloc"))


def mem_free(address: int, device: int = 0) -> None:
    """Free memory that `mem_alloc` gave on `device` (ordered after the work queued before it)."""
    if address:
        gpu = CudaDevice.of(device)
        with gpu.activated():
            if _pooled(gpu):
                _check(_drv().cuMemFreeAsync(address, 0), "cuMemFreeAsync")
            else:
                _check(_drv().cuMemFree(address), "cuMemFree")


_pool_ready: dict[int, bool] = {}


def _pooled(device: "CudaDevice") -> bool:
    """Whether `device` allocates from its memory pool; on first use, the pool is told to keep
    freed memory (its release threshold raised from 0 to unlimited) so blocks are reused."""
    ready = _pool_ready.get(device.ordinal)
    if ready is None:
        drv = _drv()
        supported = device._attribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
        if supported:
            pool = _check(drv.cuDeviceGetDefaultMemPool(device.handle), "cuDeviceGetDefaultMemPool")
            keep_all = drv.cuuint64_t(2**64 - 1)
            _check(drv.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                             keep_all), "cuMemPoolSetAttribute")
        ready = _pool_ready[device.ordinal] = bool(supported)
    return ready


def memcpy_htod(dst: int, src: int, nbytes: int, device: int = 0) -> None:
    """Copy `nbytes` from host address `src` to address `dst` on GPU `device`."""
    if nbytes:
        with CudaDevice.of(device).activated():
            _check(_drv().cuMemcpyHtoD(dst, src, nbytes), "cuMemcpyHtoD")


def memcpy_dtoh(dst: int, src: int, nbytes: int, device: int = 0) -> None:
    """Copy `nbytes` from address `src` on GPU `device` to host address `dst`."""
    if nbytes:
        with CudaDevice.of(device).activated():
            _check(_drv().cuMemcpyDtoH(dst, src, nbytes), "cuMemcpyDtoH")


def synchronize(device: int = 0) -> None:
    """Wait for all work on GPU `device`, on every stream."""
    with CudaDevice.of(device).activated():
        _check(_drv().cuCtxSynchronize(), "cuCtxSynchronize")
