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
# # 06 · Tensor cores
#
# `tl.dot` runs on tensor cores, whose instructions fix which thread holds which element of the
# operands and of the accumulator: the *fragments*. In tile these are layouts like any other
# (`tile/ir/dot_layouts.py`), so they can be drawn and checked against the PTX ISA:
#
# * **Ampere, `mma.sync.m16n8k16`** (`sm_80`): a warp multiplies a 16x16 A fragment by a 16x8 B
#   fragment, all operands in registers (loaded by `ldmatrix`, notebook 04).
# * **Hopper, `wgmma.mma_async`** (`sm_90a`): a *warp group* of 4 warps multiplies 64xN tiles,
#   reading A and B straight from shared memory, which **TMA** fills and **mbarriers** guard.

# %%
import re

import numpy as np

import tile
import tile.language as tl
from tile.ir import parse_op
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout
from tile.ir.tma_layouts import tma_layout
from tile.tools.tensor_descriptor import TensorDescriptor
from tile.viz import show_pipeline


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


rng = np.random.default_rng(2)
a = rng.standard_normal((128, 128)).astype(np.float16)
b = rng.standard_normal((128, 128)).astype(np.float16)
c = np.full((128, 128), np.nan, np.float32)
ARGS = (a, b, c, 128, 128, 128)
BLOCKS = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
c_dev = tile.to_device(c)  # runs on the GPU when there is one, else on the NumPy interpreter
matmul[(2, 2)](tile.to_device(a), tile.to_device(b), c_dev, *ARGS[3:], **BLOCKS)
c = c_dev.numpy()
assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)

# %% [markdown]
# ## mma.sync fragments (Ampere)
#
# The accelerate-dot pass gives the accumulator an `#mma` layout and the operands `#dot_op`
# layouts. Which ones did it pick for this kernel on `sm_80`?

# %%
func = parse_op(str(tile.dump(matmul, *ARGS, stage="gpu", target="sm_80", **BLOCKS)))
dot = next(op for op in func.walk() if op.name == "tt.dot")
acc_layout = dot.results[0].type.layout
a_layout, b_layout = (v.type.layout for v in dot.operands[:2])
print("accumulator:", acc_layout)
print("A:", a_layout)
print("B:", b_layout)
assert isinstance(acc_layout, MmaLayout) and acc_layout.version == 2
assert isinstance(a_layout, DotOperandLayout) and a_layout.k_width == 2  # two halves per 32-bit register

# %% [markdown]
# One instruction's accumulator is a 16x8 tile held by one warp. The PTX ISA's figure for the
# m16n8 C fragment says: lane `l` holds row `l // 4` (and `l // 4 + 8`), columns
# `2 (l % 4)` and `2 (l % 4) + 1`. Drawn from `MmaLayout.to_linear`:

# %%
one_warp = MmaLayout(2, (1, 1))
c_fragment = tile.show_layout(one_warp, (16, 8))
c_fragment

# %%
for lane in range(32):
    group, pair = divmod(lane, 4)
    assert c_fragment.owners[group][2 * pair] == [(0, lane, 0)]
    assert c_fragment.owners[group][2 * pair + 1] == [(0, lane, 1)]
    assert c_fragment.owners[group + 8][2 * pair] == [(0, lane, 2)]
    assert c_fragment.owners[group + 8][2 * pair + 1] == [(0, lane, 3)]

# %% [markdown]
# The A fragment of `m16n8k16` (16x16 halves): each register packs 2 consecutive K elements
# (`k_width = 2`); registers a0..a3 cover rows `g` and `g + 8` and K halves 0-7 and 8-15.

# %%
a_fragment = tile.show_layout(DotOperandLayout(0, one_warp, 2), (16, 16))
print(a_fragment)
assert a_fragment.owners[0][0] == [(0, 0, 0)] and a_fragment.owners[0][1] == [(0, 0, 1)]  # a0: (0, 0..1)
assert a_fragment.owners[8][0] == [(0, 0, 2)]  # a1: row 8
assert a_fragment.owners[0][8] == [(0, 0, 4)]  # a2: K 8..9
assert a_fragment.registers_per_thread == 8  # 4 registers of 2 halves

# %% [markdown]
# In the whole 64x64 tile, the 4 warps (2x2) each cover 32x32 of the accumulator, repeating the
# 16x8 instruction tile 2x4 times in registers: 32 floats per thread. The PTX runs the
# instruction once per tile and K step:

# %%
full = tile.show_layout(acc_layout, (64, 64))
assert full.registers_per_thread == 64 * 64 // 128
ptx80 = str(tile.dump(matmul, *ARGS, stage="ptx", target="sm_80", **BLOCKS))
mma = sorted(set(re.findall(r"mma\.sync\.aligned\.[\w.]+", ptx80)))
print(mma, ptx80.count("mma.sync.aligned"), "mma.sync per loop iteration")
assert mma == ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]
# each warp's 32x32: 2 instruction tiles along M x 4 along N, x 2 K steps of 16 in BLOCK_K = 32
assert ptx80.count("mma.sync.aligned") == (32 // 16) * (32 // 8) * (32 // 16)

# %% [markdown]
# ## wgmma, TMA and mbarriers (Hopper)
#
# On `sm_90a`, the same `tl.dot` becomes `wgmma.mma_async.m64nNk16`. Its accumulator layout is
# `#mma<version = 3>`: warp `w` of a warp group holds rows `16 w .. 16 w + 15` of the 64-row
# instruction, in the m16n8 C fragment repeated along N.

# %%
hopper_acc = MmaLayout(3, (4, 1), (16, 16))
warp_group = tile.show_layout(hopper_acc, (64, 16))
assert [{w for w, _, _ in warp_group.owners[row][0]} for row in (0, 16, 32, 48)] == [{0}, {1}, {2}, {3}]
assert warp_group.owners[0][8] == [(0, 0, 4)]  # the second 8-column fragment: registers 4..7
warp_group

# %% [markdown]
# wgmma reads A and B from shared memory, so nothing needs loading into registers: with
# tensor descriptors (`TensorDescriptor`, Triton's `tl.make_tensor_descriptor` on the host)
# the copies are TMA bulk copies, each block landing in wgmma's 128-byte-swizzled layout.

# %%
@tile.jit
def tma_matmul(a_desc, b_desc, c_desc, K):
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


c16 = np.full((128, 128), np.nan, np.float16)
descs = (TensorDescriptor.from_tensor(a, [64, 64]), TensorDescriptor.from_tensor(b, [64, 64]),
         TensorDescriptor.from_tensor(c16, [64, 64]))
tma_matmul[(2, 2)](*descs, 128)  # the interpreter, no GPU
assert np.allclose(c16, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-2, atol=2e-2)

block = tma_layout((64, 64), 2)
print(block)
assert block.swizzle == 128  # 64 halves = 128 bytes per row: the 128-byte swizzle
tile.show_layout(block.shared, (8, 64), element_bytes=2)

# %% [markdown]
# The gpu IR's K loop is a ring of `num_stages` buffers, one mbarrier per stage: a thread
# arms the stage's mbarrier with the bytes to expect (`gpu.mbarrier_expect`), TMA copies
# complete it, and every thread waits on it (`gpu.mbarrier_wait`) before the asynchronous
# wgmma reads the stage. The schedule, read back from the IR:

# %%
ring_ir = tile.dump(tma_matmul, *descs, 128, stage="gpu", target="sm_90a", num_stages=3)
ring = show_pipeline(ring_ir)
print(ring)
assert (ring.copy_kind, ring.num_stages, ring.wait, ring.async_dots) == ("TMA", 3, "gpu.mbarrier_wait", 1)
ring

# %% [markdown]
# And the PTX: TMA copies (`cp.async.bulk.tensor`), mbarrier arm / wait, and the wgmma
# sequence (`fence`, the `mma_async` instructions, `commit_group`, `wait_group`).

# %%
ptx90 = str(tile.dump(tma_matmul, *descs, 128, stage="ptx", target="sm_90a", num_stages=3))
found = {name: ptx90.count(name) for name in (
    "cp.async.bulk.tensor.2d", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity", "wgmma.fence",
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "wgmma.commit_group", "wgmma.wait_group")}
print(found)
assert all(found.values()), found
