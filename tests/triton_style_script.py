"""A small Triton program (tile's own), run by tests/test_triton_alias.py as
`python -m tile.triton tests/triton_style_script.py [--missing-api | --missing-module]`.

It touches what Triton programs touch: the driver, warmup and the compiled kernel's fields,
a launch with every argument by position, a constexpr parameter named num_stages, autotune
over heuristics, triton.testing, and the knobs. NumPy arrays keep it free of torch (it runs
on the interpreter: TRITON_INTERPRET=1).
"""
import sys

import numpy as np

import triton
import triton.language as tl
from triton.runtime import driver
from triton.runtime.autotuner import Autotuner, Config
from triton.runtime.errors import OutOfResources
from triton.runtime.jit import JITFunction

target = driver.active.get_current_target()
properties = driver.active.utils.get_device_properties(0)
assert target.backend == "cuda" and target.warp_size == properties["warpSize"] == 32, (target, properties)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / tl.sum(numerator, axis=0),
                 mask=mask)


rng = np.random.default_rng(0)
x = rng.standard_normal((93, 181)).astype(np.float32)
y = np.full_like(x, np.nan)
n_rows, n_cols = x.shape
BLOCK_SIZE = triton.next_power_of_2(n_cols)
kernel = softmax_kernel.warmup(y, x, n_cols, n_cols, n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE, num_stages=2, num_warps=8,
                               grid=(1,))
kernel._init_handles()
assert kernel.metadata.num_warps == 8 and kernel.metadata.shared > 0 and "ptx" in kernel.asm
occupancy = min(properties["max_num_regs"] // (kernel.n_regs * 32 * 8), properties["max_shared_mem"] //
                kernel.metadata.shared)
num_programs = min(properties["multiprocessor_count"] * occupancy, n_rows)
kernel[(num_programs, 1, 1)](y, x, n_cols, n_cols, n_rows, n_cols, BLOCK_SIZE, 2)
expected = np.exp(x - x.max(axis=1, keepdims=True).astype(np.float64))
expected /= expected.sum(axis=1, keepdims=True)
triton.testing.assert_close(y, expected, rtol=1e-5, atol=1e-6)


@triton.autotune(configs=[Config({"BLOCK": 64}), Config({"BLOCK": 256}, num_warps=8)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3.0)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


v = rng.standard_normal(1000).astype(np.float32)
out = np.full_like(v, np.nan)
scale_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](v, out, 1000)
triton.testing.assert_close(out, 3.0 * v.astype(np.float64), rtol=1e-6, atol=0)
assert isinstance(scale_kernel, Autotuner) and isinstance(softmax_kernel, JITFunction)
assert issubclass(OutOfResources, Exception) and triton.knobs.runtime.interpret

if "--missing-api" in sys.argv:
    triton.testing.get_dram_gbps()
if "--missing-module" in sys.argv:
    import triton.experimental.gluon  # noqa: F401
print("triton-style script OK")
