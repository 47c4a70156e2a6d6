"""Runs a kernel on the NumPy interpreter whatever memory its array arguments live in.

NumPy arrays (and DeviceArrays kept in host memory) are used in place. Arrays in GPU memory
(a DeviceArray on a GPU, a CUDA torch tensor) are copied to the host, the kernel runs, and
they are copied back: that is what `TILE_INTERPRET=1` on a GPU machine means.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import Operation
from .cuda_driver import is_torch_tensor
from .wrappers import TensorWrapper


def _torch_to_host(t: Any) -> tuple[np.ndarray, Callable[[np.ndarray], None]]:
    import torch

    bits = {torch.bfloat16: torch.int16, torch.float16: torch.int16}.get(t.dtype)
    view = t.detach().view(bits) if bits is not None else t.detach()
    host = view.cpu().numpy()
    if bits is not None:
        host = host.view(np.uint16)
    if t.device.type == "cpu":
        return host, lambda _: None  # shares memory with the tensor

    def write_back(h: np.ndarray) -> None:
        src = torch.from_numpy(h.view(np.int16) if bits is not None else h)
        view.copy_(src.to(view.device))

    return host, write_back


def to_host(arg: Any) -> tuple[Any, Callable[[np.ndarray], None] | None]:
    """A NumPy view of `arg` for the interpreter, and how to write results back (None: nothing to do)."""
    if isinstance(arg, np.ndarray) or isinstance(arg, (int, float, bool, np.generic)):
        return arg, None
    if isinstance(arg, TensorWrapper):  # the interpreter addresses bytes: the base's memory will do
        return to_host(arg.base)
    if is_torch_tensor(arg):
        return _torch_to_host(arg)
    if hasattr(arg, "host_view") and not getattr(arg, "is_device", False):
        return arg.host_view(), None
    if hasattr(arg, "numpy") and hasattr(arg, "copy_from"):  # a DeviceArray in GPU memory
        return arg.numpy(), arg.copy_from
    raise TypeError(f"the interpreter cannot use an argument of type {type(arg).__name__}")


def run_on_host(func: Operation, grid: tuple[int, int, int], args: list, name: str) -> None:
    from .interpreter import run_kernel

    host_args, write_backs = [], []
    for a in args:
        h, back = to_host(a)
        host_args.append(h)
        if back is not None:
            write_backs.append((back, h))
    run_kernel(func, grid, host_args, name)
    for back, h in write_backs:
        back(h)
