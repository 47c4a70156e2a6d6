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
# # 04 · Shared memory and swizzling
#
# A matmul's operand tiles travel global memory → shared memory → tensor-core registers. Shared
# memory is split into **32 banks of 4 bytes**; a warp's access is served in *phases* (8 lanes at
# a time for 16-byte accesses), and within a phase each bank delivers one 4-byte word per
# *wavefront*. Two lanes that need different words of the same bank cost an extra wavefront: a
# **bank conflict**.
#
# This notebook takes the operand buffers of a real matmul, counts the wavefronts of the two
# accesses that touch them (the 16-byte stores that fill them and the `ldmatrix` reads that feed
# `mma.sync`) for an unswizzled and for tile's swizzled layout, and finds the `ldmatrix` in the PTX.

# %%
import re

import numpy as np

import tile
import tile.language as tl
from tile.ir import parse_op
from tile.ir.dot_layouts import ldmatrix_conflict_free
from tile.ir.layouts import SharedLayout
from tile.viz import show_swizzle


# %%
@tile.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


rng = np.random.default_rng(0)
a = rng.standard_normal((128, 128)).astype(np.float16)
b = rng.standard_normal((128, 128)).astype(np.float16)
c = np.full((128, 128), np.nan, np.float32)
c_dev = tile.to_device(c)  # runs on the GPU when there is one, else on the NumPy interpreter
matmul[(2, 2)](tile.to_device(a), tile.to_device(b), c_dev, 128, 128, 128, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
c = c_dev.numpy()
assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)

# %% [markdown]
# ## The operand buffers tile chose
#
# Compile for an A100 (`sm_80`: `mma.sync` fed by `ldmatrix`) and list the shared-memory
# allocations of the gpu IR. Each buffer holds `num_stages` copies of a tile (notebook 05);
# `gpu.local_view` picks one, a rank-2 tensor with a `#shared` layout.

# %%
ARGS = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
func = parse_op(str(tile.dump(matmul, a, b, c, 128, 128, 128, stage="gpu", target="sm_80", **ARGS)))
views = {}
for op in func.walk():
    if op.name == "gpu.local_view":
        t = op.results[0].type
        views[op.operands[0]] = t
for t in views.values():
    print(t)
(a_type, b_type) = views.values()
assert a_type.shape == (64, 64) and isinstance(a_type.layout, SharedLayout)

# %% [markdown]
# `#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>`: rows are stored one after
# another (`order[0] = 1`, row-major), and the 16-byte groups of `vec = 8` halves of row `r`
# are XOR-ed with `r % 8` (the *phase*). Here is where each element goes (offset) and the bank
# it lands in, for the first 8 rows and 16 columns:

# %%
swizzled = a_type.layout
first_rows = tile.show_layout(a_type)  # a gpu tensor type brings its layout, shape and element size
print(first_rows.offsets[:8, :16])
print(first_rows.banks[:8, :16])
# the 16-byte chunk of row r at columns 0..7 is stored at chunk r ^ 0 = r of its 128-byte line
assert [first_rows.offsets[r, 0] - 64 * r for r in range(8)] == [8 * r for r in range(8)]

# %% [markdown]
# ## Counting bank conflicts
#
# `show_swizzle` lists the phases of both accesses and counts each phase's wavefronts from the
# layout's address function (`SharedLayout.offset_of`) with the bank model of
# `tile.ir.dot_layouts.shared_wavefronts`. First an **unswizzled** row-major buffer of the same
# shape: 64 halves = 128 bytes per row, so the 8 rows an `ldmatrix` phase reads all start in
# bank 0: 8 words from the same 4 banks, 8 wavefronts instead of 1.

# %%
plain = show_swizzle(SharedLayout(1, 1, 1, (1, 0)), a_type.shape, element_bytes=2)
print(plain.summary("ldmatrix"))
print(plain.summary("store"))
plain

# %%
assert all(phase.wavefronts == 8 for phase in plain.phases["ldmatrix"])  # 8-way conflicts
assert plain.conflicts["ldmatrix"] == 7 * len(plain.phases["ldmatrix"])
assert plain.conflicts["store"] == 0  # row-major 16-byte stores fill whole 128-byte lines

# %% [markdown]
# Now tile's swizzled layout: row `r`'s chunk `c` moves to chunk `c ^ (r % 8)`, so the 8 rows of
# one `ldmatrix` matrix sit in 8 different 16-byte bank groups, and the stores stay conflict-free
# because the XOR only permutes chunks within a line.

# %%
fixed = show_swizzle(swizzled, a_type.shape, element_bytes=2)
print(fixed.summary("ldmatrix"))
print(fixed.summary("store"))
fixed

# %%
assert fixed.conflicts == {"ldmatrix": 0, "store": 0}
assert all(phase.wavefronts == 1 for phase in fixed.phases["ldmatrix"] + fixed.phases["store"])
# the compiler's own check agrees
assert ldmatrix_conflict_free(swizzled, a_type.shape, 2)
assert not ldmatrix_conflict_free(SharedLayout(1, 1, 1, (1, 0)), a_type.shape, 2)

# %% [markdown]
# B (64 x 64, `K x N`, N contiguous) gets the same treatment; `ldmatrix.trans` reads its 8x8
# matrices along N and transposes them in flight.

# %%
fixed_b = show_swizzle(b_type.layout, b_type.shape, element_bytes=2)
print(b_type.layout, fixed_b.conflicts)
assert fixed_b.conflicts == {"ldmatrix": 0, "store": 0}

# %% [markdown]
# ## ldmatrix in the PTX
#
# `ldmatrix.sync.aligned.m8n8.x4.shared.b16` loads four 8x8 matrices: lanes 0-7 give the row
# addresses of the first matrix, 8-15 of the second, and so on (the phases counted above); each
# lane receives its fragment registers in exactly the `#dot_op` layout that notebook 06 draws.

# %%
ptx = str(tile.dump(matmul, a, b, c, 128, 128, 128, stage="ptx", target="sm_80", **ARGS))
ldmatrix = sorted(set(re.findall(r"ldmatrix[.\w:]*", ptx)))
print(ldmatrix)
assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ldmatrix
assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ldmatrix  # B: N contiguous
assert "cp.async.cg.shared.global" in ptx  # the 16-byte stores: asynchronous copies (notebook 05)
