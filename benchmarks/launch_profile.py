"""Where a launch's host time goes, piece by piece, on a GPU machine (microseconds per call).

    python benchmarks/launch_profile.py

Also times, in fresh processes, what a warm start pays before tile compiles anything:
importing cuda-python's driver bindings and opening the device.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tile  # noqa: E402
import tile.language as tl  # noqa: E402
from tile.frontend.specialize import launch_arg  # noqa: E402
from tile.runtime import cuda_driver  # noqa: E402


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def per_call_us(fn, batches: int = 100, per_batch: int = 100) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - start) / per_batch * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def fresh(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    x, y = torch.rand(4096, device="cuda"), torch.rand(4096, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    key = next(iter(add_kernel._launchers))
    entry = add_kernel._launchers[key]
    backend = next(iter(add_kernel.cache.values())).backend
    launcher = backend.launcher
    addresses = (x.data_ptr(), y.data_ptr(), out.data_ptr(), 4096)
    params = launcher._params_address
    drv = cuda_driver._drv()
    cufunction = next(iter(add_kernel.cache.values())).backend.kernel.function
    rows = {
        "raw cuda-python cuLaunchKernel": lambda: drv.cuLaunchKernel(cufunction, 4, 1, 1, 128, 1, 1, 0, 0, params, 0),
        "full launch kernel[grid](...)": lambda: add_kernel[(4,)](x, y, out, 4096, BLOCK=1024),
        "entry(grid, values, args, None)": lambda: entry((4,), addresses, (x, y, out, 4096), None),
        "Launcher call (pack + cuLaunchKernel)": lambda: launcher((4, 1, 1), 128, 0, 0, *addresses),
        "current_stream_of(args)": lambda: cuda_driver.current_stream_of((x, y, out, 4096)),
        "launch_arg(tensor)": lambda: launch_arg(x),
        "torch.add(x, y, out=out)": lambda: torch.add(x, y, out=out),
    }
    for name, fn in rows.items():
        print(f"{name:<40}{per_call_us(fn):8.2f} us")
    imp = fresh("import time; t = time.perf_counter(); import cuda.bindings.driver; print(time.perf_counter() - t)")
    dev = fresh("import time, torch; torch.cuda.init(); import cuda.bindings.driver; "
                "from tile.runtime.cuda_driver import CudaDevice, cuda_available; t = time.perf_counter(); "
                "cuda_available(); CudaDevice.get(0).ptx_target(); print(time.perf_counter() - t)")
    print(f"import cuda.bindings.driver (fresh process) {imp * 1e3:8.2f} ms")
    print(f"cuInit + open device 0 (fresh process)      {dev * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
