"""Which GPU a launch runs on, with Triton's semantics, decided before anything launches.

    x = torch.randn(n, device="cuda:1"); y = torch.empty_like(x)
    with torch.cuda.device(1):
        add[grid](x, y, n)                  # runs on cuda:1, PyTorch's current device
    add[grid](x, y, n)                      # ValueError: argument 'x' is on cuda:1, but this
                                            # launch runs on cuda:0, PyTorch's current device

The launch device is
  * PyTorch's current device (torch.cuda.current_device()) when an argument is a CUDA torch
    tensor, as in Triton;
  * otherwise the device of the first array argument whose device is known (tile's
    DeviceArray, DLPack producers);
  * otherwise the current device (`cuda_driver.current_device()`).
Every array argument whose device is known must be on the launch device; the error names the
argument, its device and the launch device with the reason it was chosen. Arrays in host
memory are refused when the kernel is compiled for a GPU (jit's `_check_device_arrays`).
Array arguments inside tuples, TensorDescriptors and TensorWrappers count as well.

The launch device is the last item of the launch key, so each device has its own compiled
kernel, module and launcher (`JITFunction.cache` keeps one entry per device); the disk cache
is shared by the devices of one architecture, whose PTX is the same. A device of another
architecture than device 0 gets a kernel compiled for its own (cuda_driver.device_target).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional


from .arrays import DeviceArray
from .cuda_driver import is_torch_tensor
from .wrappers import TensorWrapper

_DLPACK_CUDA = 2  # DLPack's kDLCUDA device type

_TORCH = "torch"
_ARRAY = "array"


def _devices_in(value: Any) -> Iterator[tuple[str, int]]:
    """(kind, device index) of each GPU array in `value`: kind "torch" for CUDA torch tensors,
    "array" for other arrays whose device is known. Host arrays and scalars give nothing."""
    if isinstance(value, (int, float)) or value is None:
        return
    if is_torch_tensor(value):
        index = value.get_device()
        if index >= 0:
            yield _TORCH, index
    elif isinstance(value, DeviceArray):
        if value.is_device:
            yield _ARRAY, value.device
    elif isinstance(value, tuple):
        for member in value:
            yield from _devices_in(member)
    elif isinstance(value, TensorWrapper):
        yield from _devices_in(value.base)
    elif hasattr(value, "__dlpack_device__"):
        device_type, index = value.__dlpack_device__()
        if device_type == _DLPACK_CUDA:
            yield _ARRAY, int(index)
    elif hasattr(value, "block_shape") and isinstance(value, _tensor_descriptor_type()):
        yield from _devices_in(value.base)


def _tensor_descriptor_type() -> type:
    # imported on first use: tile.tools imports the runtime when it loads
    from tile.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor


def launch_device(kernel: str, names: tuple[str, ...], args: tuple, torch_device: Callable[[], int],
                  current_device: Callable[[], int]) -> int:
    """The device a launch of `kernel` with runtime arguments `args` (named `names`) runs on;
    ValueError naming the first argument on another device. `torch_device()` is PyTorch's
    current device, read only when a CUDA tensor is among the arguments; `current_device()`
    the device of a launch without device-bound arguments."""
    found = [(name, kind, index) for name, arg in zip(names, args) for kind, index in _devices_in(arg)]
    if any(kind == _TORCH for _, kind, _ in found):
        device = torch_device()
        reason = "PyTorch's current device (torch.cuda.current_device())"
        hint = f"run it under `with torch.cuda.device({{index}}):` or move the tensors to cuda:{device}"
    elif found:
        first, _, device = found[0]
        reason = f"the device of argument '{first}'"
        hint = f"put every array on one device (tile.to_device(x, device={device}))"
    else:
        return current_device()
    for name, _, index in found:
        if index != device:
            raise ValueError(f"{kernel}: argument '{name}' is on cuda:{index}, but this launch runs on cuda:{device}, "
                             f"{reason}; {hint.format(index=index)}")
    return device


def resolver(kernel: str, names: tuple[str, ...]) -> Callable[[str, tuple], Optional[int]]:
    """`device(target, args)` for the launch binder of `kernel`: the launch device of `args`
    for a GPU target, None for the interpreter and the emulator (which run on the host)."""
    from . import cuda_driver

    def device(target: str, args: tuple) -> Optional[int]:
        if not target.startswith("sm_"):  # "interpreter", "emulator:sm_80"
            return None
        return launch_device(kernel, names, args, _torch_current_device, cuda_driver.current_device)

    return device


def _torch_current_device() -> int:
    import torch

    return int(torch.cuda.current_device())


def torch_device_getter() -> Callable[[], int]:
    """PyTorch's current device, as fast as it can be read (the fast binder reads it at every
    launch with CUDA tensors): torch's private getter (~0.05 us) where it exists."""
    import torch

    return getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
