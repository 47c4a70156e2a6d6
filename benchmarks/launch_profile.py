"""Where a launch's host time goes, piece by piece, on a GPU machine (microseconds per call).

    python benchmarks/launch_profile.py

Rows, all in one run and taking turns (bench_runtime.launch_overhead_us): the driver call
alone through cuda-python (with the stream as an int and as a CUstream) and through ctypes
(CDLL with declared argument types; PyDLL, which keeps the GIL, without),
tile's fast entry (pack + driver call), tile's whole `kernel[grid](...)`, the general binder,
PyTorch's torch.add, Triton's launch, and the single PyTorch attribute reads the binder makes.
Also times, in fresh processes, what a warm start pays before tile compiles anything:
importing cuda-python's driver bindings and opening the device.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_bandwidth import TILE, TRITON  # noqa: E402
from bench_runtime import launch_overhead_us  # noqa: E402
from tile.runtime import cuda_driver  # noqa: E402


def fresh(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    x, y = torch.rand(4096, device="cuda"), torch.rand(4096, device="cuda")
    out = torch.empty_like(x)
    kernel = TILE.add_kernel
    for _ in range(2):  # the first launch compiles and makes the fast binder, the second fills it
        kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    fast = next(iter(kernel._fast_entries.values()))
    compiled = next(iter(kernel.cache.values()))
    params = compiled.backend.launcher._params_address
    drv = cuda_driver._drv()
    function = compiled.backend.kernel.function
    stream = torch._C._cuda_getCurrentRawStream(0)
    stream_object = drv.CUstream(stream)
    ctypes_launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    ctypes_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    function_address = int(function)
    pydll_launch = ctypes.PyDLL("libcuda.so.1").cuLaunchKernel  # keeps the GIL; no argument types declared
    function_pointer, params_pointer = ctypes.c_void_p(function_address), ctypes.c_void_p(params)
    stream_pointer = ctypes.c_void_p(stream)
    addresses = (x.data_ptr(), y.data_ptr(), out.data_ptr(), 4096)
    rows = launch_overhead_us({
        "cuda-python cuLaunchKernel, stream int": lambda: drv.cuLaunchKernel(
            function, 4, 1, 1, 128, 1, 1, 0, stream, params, 0),
        "cuda-python cuLaunchKernel, CUstream": lambda: drv.cuLaunchKernel(
            function, 4, 1, 1, 128, 1, 1, 0, stream_object, params, 0),
        "ctypes.CDLL cuLaunchKernel, argtypes": lambda: ctypes_launch(
            function_address, 4, 1, 1, 128, 1, 1, 0, stream, params, None),
        "ctypes.PyDLL cuLaunchKernel, no argtypes": lambda: pydll_launch(
            function_pointer, 4, 1, 1, 128, 1, 1, 0, stream_pointer, params_pointer, None),
        "tile fast entry (pack + driver call)": lambda: fast((4,), stream, *addresses),
        "tile kernel[grid](...)": lambda: kernel[(4,)](x, y, out, 4096, BLOCK=1024),
        "tile general binder": lambda: kernel._general((4,), x, y, out, 4096, BLOCK=1024),
        "triton kernel[grid](...)": lambda: TRITON.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024),
        "torch.add(x, y, out=out)": lambda: torch.add(x, y, out=out),
        "x.data_ptr(), x.dtype, x.is_cuda": lambda: (x.data_ptr(), x.dtype, x.is_cuda),
    }, rounds=3, batches=30)
    torch.testing.assert_close(out, x + y)
    for name, us in rows.items():
        print(f"{name:<42}{us:8.2f} us")
    imp = fresh("import time; t = time.perf_counter(); import cuda.bindings.driver; print(time.perf_counter() - t)")
    dev = fresh("import time, torch; torch.cuda.init(); import cuda.bindings.driver; "
                "from tile.runtime.cuda_driver import CudaDevice, cuda_available; t = time.perf_counter(); "
                "cuda_available(); CudaDevice.get(0).ptx_target(); print(time.perf_counter() - t)")
    print(f"import cuda.bindings.driver (fresh process) {imp * 1e3:8.2f} ms")
    print(f"cuInit + open device 0 (fresh process)      {dev * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
