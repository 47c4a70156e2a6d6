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
# # 03 · Layouts and coalescing
#
# A tile kernel computes on whole blocks (`tl.arange(0, 64)`), but a GPU runs threads. The
# gpu level of tile's IR decides, for every tensor, **which thread holds which element in which
# register**: its *layout*. This notebook shows
#
# 1. what a blocked layout is, drawn from the layout's own index math;
# 2. how the *axis info* analysis proves that a block of pointers is contiguous and aligned;
# 3. why that turns a load into 16-byte vector loads in the PTX.
#
# Everything runs without a GPU: `tile.dump(..., target="sm_90a")` compiles without launching.

# %%
import re

import numpy as np

import tile
import tile.language as tl
from tile.ir import parse_op
from tile.ir.layouts import BlockedLayout
from tile.opt.axis_info import AxisInfoAnalysis


# %% [markdown]
# A kernel that scales a block of rows of a row-major matrix: each program handles
# `BLOCK_M` rows of `BLOCK_N` columns.

# %%
@tile.jit
def scale_rows(src, dst, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    offs = rows[:, None] * n_cols + cols[None, :]
    tl.store(dst + offs, tl.load(src + offs) * 2.0)


x = np.random.rand(64, 64).astype(np.float32)
y = np.full_like(x, np.nan)
y_dev = tile.to_device(y)  # GPU memory on a GPU machine, host memory for the NumPy interpreter
scale_rows[(4,)](tile.to_device(x), y_dev, 64, BLOCK_M=16, BLOCK_N=64)
y = y_dev.numpy()
assert np.allclose(y, 2 * x.astype(np.float64))


# %% [markdown]
# ## The layout the compiler chose
#
# Compile for Hopper with two warps and read the gpu IR: every tensor type now carries a layout.
# We parse the dump back into IR objects (the printer's text round-trips) and pick the load.

# %%
def gpu_ir(kernel, *args, **kwargs):
    return parse_op(str(tile.dump(kernel, *args, stage="gpu", target="sm_90a", **kwargs)))


func = gpu_ir(scale_rows, x, y, 64, BLOCK_M=16, BLOCK_N=64, num_warps=2)
load = next(op for op in func.walk() if op.name == "tt.load")
layout = load.results[0].type.layout
print(load.results[0].type, load.attrs)

# %% [markdown]
# `#blocked<spt = [1, 4], tpw = [2, 16], wpc = [2, 1], order = [1, 0]>` reads:
# each thread holds **1 x 4** consecutive elements (*size per thread*), a warp's 32 threads are
# arranged **2 x 16** (*threads per warp*), the CTA's warps **2 x 1**, and dimension 1 (columns)
# is the fastest (`order`). The picture below is computed by `layout.to_linear(shape)`, the same
# function the lowering uses to generate addresses. Cells read `T<thread>:<register>`.

# %%
assert isinstance(layout, BlockedLayout)
assert layout.size_per_thread == (1, 4) and layout.order == (1, 0)
picture = tile.show_layout(layout, (16, 64))
picture

# %% [markdown]
# The same facts as numbers: thread 0 holds columns 0-3 of row 0 in registers 0-3, thread 1
# the next four columns, and the 16 threads of a half-warp cover one 64-column row, i.e. one
# 256-byte stretch of memory.

# %%
assert [picture.owners[0][j] for j in range(4)] == [[(0, 0, r)] for r in range(4)]
assert picture.owners[0][4] == [(0, 1, 0)]
assert {lane for j in range(64) for _, lane, _ in picture.owners[0][j]} == set(range(16))
assert picture.registers_per_thread == 16 * 64 // 64  # 1024 elements over 64 threads
print(str(picture).splitlines()[0])

# %% [markdown]
# Layouts are plain Python values; you can draw any of them. A slice layout (the result of a
# reduction along a dimension) is its parent with one dimension removed: every thread of a
# row holds the row's value (`+n` marks the replicas).

# %%
from tile.ir.layouts import SliceLayout

row_sums = tile.show_layout(SliceLayout(1, layout), (16,))
assert row_sums.holders(0, 0) == 16  # the 16 lanes that held row 0 all hold its sum, once each
print(row_sums)

# %% [markdown]
# ## Axis info: proving contiguity
#
# A thread may use one 16-byte load for its 4 floats only if the 4 addresses are consecutive
# and the first is 16-byte aligned. The *axis info* analysis (`tile/opt/axis_info.py`) proves
# both on the target-independent tile IR, per dimension: **contiguity** (runs of consecutive
# values), **divisibility** (of the first value of each run; bytes for pointers) and
# **constancy**.

# %%
def pointer_info(kernel, *args, **constexprs):
    tile_ir = parse_op(str(tile.dump(kernel, *args, stage="tile-opt", **constexprs)))
    info = AxisInfoAnalysis(tile_ir)
    load = next(op for op in tile_ir.walk() if op.name == "tt.load")
    return info[load.operands[0]]


aligned = pointer_info(scale_rows, x, y, 64, BLOCK_M=16, BLOCK_N=64)
print("n_cols = 64:", aligned)
assert aligned.contiguity[1] == 64 and aligned.divisibility[1] == 16

# %% [markdown]
# Where do the facts come from? `n_cols = 64` is specialized as *divisible by 16* (as in
# Triton), so `rows * n_cols` is a multiple of 16 elements, `src` is 16-byte aligned, and
# `cols` is an `arange`: contiguous over all 64 columns. With `n_cols = 63` nothing is known
# about the row starts: a run still has 64 consecutive addresses, but only 4-byte alignment.

# %%
unaligned = pointer_info(scale_rows, x, y, 63, BLOCK_M=16, BLOCK_N=64)
print("n_cols = 63:", unaligned)
assert unaligned.contiguity[1] == 64 and unaligned.divisibility[1] == 4

# %% [markdown]
# ## Coalesced, vectorized loads in PTX
#
# The coalescing pass picks a layout that gives each thread as many consecutive elements as the
# axis info allows, up to 16 bytes (`size_per_thread = 4` floats above) and marks the load
# `{vector = 4}`; the lowering then emits one `ld.global.v4.f32` per thread and row. With the
# unaligned row starts it has to fall back to scalar loads.

# %%
def global_accesses(n_cols):
    ptx = str(tile.dump(scale_rows, x, y, n_cols, BLOCK_M=16, BLOCK_N=64, stage="ptx", target="sm_90a",
                        num_warps=2))
    return sorted(set(re.findall(r"(?:ld|st)\.global[.\w]*", ptx)))


print("n_cols = 64:", global_accesses(64))
print("n_cols = 63:", global_accesses(63))
assert global_accesses(64) == ["ld.global.v4.f32", "st.global.v4.f32"]
assert global_accesses(63) == ["ld.global.f32", "st.global.f32"]

# %% [markdown]
# A warp of the 16-byte version reads 2 rows x 256 contiguous bytes per instruction: four full
# 128-byte lines, the best a warp can do. Next: notebook 04 stages such tiles through shared
# memory, where the question becomes bank conflicts.
