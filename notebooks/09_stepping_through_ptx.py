# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Stepping through the PTX
#
# Notebook 07 ended at PTX text. A GPU runs it; so does tile's **emulator** (`tile/emulator/`):
# it parses the PTX tile emitted and executes each CTA on NumPy, every register an array over
# the threads. `tile.emulate(kernel, target=..., trace=[threads])` runs the real compiled
# kernel for that target and records, for the chosen threads, every instruction they were at:
# whether they executed it, the registers it wrote, the memory it touched. Here: a coalesced,
# vectorised load, then one warp's way through `cp.async`, `ldmatrix` and `mma.sync`.

# %%
import numpy as np

import tile
import tile.language as tl

# %%
@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


n = 512
rng = np.random.default_rng(0)
x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
emulated = tile.emulate(add_kernel, target="sm_80", trace=[0, 1, 2])
emulated[(1,)](x, y, out, n, BLOCK=512)
assert np.array_equal(out, x + y)

# %% [markdown]
# ## A coalesced load, thread by thread
#
# 512 floats on 128 threads: each thread holds 4 consecutive elements, so each load is one
# `ld.global.v4.f32` of 16 bytes, and neighbouring threads read neighbouring 16-byte pieces:
# a warp reads 512 contiguous bytes per instruction.

# %%
trace = emulated.last_trace
base = x.__array_interface__["data"][0]
for t in (0, 1, 2):
    load = next(s for s in trace.of_thread(t) if s.memory and s.memory[0].kind == "ld")
    print(load.describe(), "\n")
    assert "ld.global.v4.f32" in load.source.ptx_text
    assert (load.memory[0].address - base, load.memory[0].nbytes) == (16 * t, 16)
    assert list(load.registers.values()) == [float(v) for v in x[4 * t:4 * t + 4]]

# %% [markdown]
# Each step names its PTX line and the line of the kernel it came from (the `.loc` directives
# of notebook 07). A masked-off thread is still at those instructions, but does not execute them.

# %%
@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    offs_m, offs_n, offs_k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((M, N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


m = n = k = 64
a = rng.standard_normal((m, k)).astype(np.float16)
b = rng.standard_normal((k, n)).astype(np.float16)
c = np.full((m, n), np.nan, np.float32)
emulated = tile.emulate(matmul_kernel, target="sm_80", trace=[0, 9])
emulated[(1,)](a, b, c, M=m, N=n, K=k, BLOCK_K=32)
assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)

# %% [markdown]
# ## One lane through the tensor-core path
#
# On sm_80 the K loop copies blocks of A and B into shared memory with `cp.async` (16 bytes per
# copy, global to shared without passing through registers), `ldmatrix` reads them back in
# the fragment layout of `mma.sync` (lanes 0-31 each give the address of one 16-byte row of an
# 8x8 matrix), and `mma.sync` multiplies the fragments. The trace of lane 9:

# %%
steps = emulated.last_trace.of_thread(9)
copy = next(s for s in steps if "cp.async.cg" in s.source.ptx_text and len(s.memory) == 2)
ldmatrix = next(s for s in steps if "ldmatrix" in s.source.ptx_text)
mma = next(s for s in steps if "mma.sync" in s.source.ptx_text)
for s in (copy, ldmatrix, mma):
    print(s.describe(), "\n")
assert [acc.space for acc in copy.memory] == ["global", "shared"] and copy.memory[1].nbytes == 16
assert [acc.nbytes for acc in ldmatrix.memory] == [16]  # lane 9 gives one row address
assert len(mma.registers) == 4  # four f32 accumulators of the 16x8 tile per lane

# %% [markdown]
# `emulated.last_trace.registers(9)` gives lane 9's registers after every step, and
# `format()` the whole trace as text. The same emulator also checks what a GPU does not:
# out-of-bounds accesses, shared-memory races between barriers, copies used before their wait
# (tests/test_emulator_checks.py breaks tile's own kernels on purpose to show each one).
