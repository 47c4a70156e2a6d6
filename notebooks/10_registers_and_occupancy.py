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
# # 10 · Registers and occupancy
#
# An SM of an H100 has 65536 registers and 228 KiB of shared memory for the programs (CUDA
# blocks) it runs at once. A program that needs half of either leaves room for a second one,
# and while one waits (its first copies, its stores) the other computes. So two questions
# decide much of a kernel's speed after its instructions are right:
#
# - how many programs of it fit on an SM, and which resource stops the next one
#   (`tile.viz.show_occupancy`);
# - which registers it wastes: values computed before a loop and used only after it hold a
#   register through every iteration (`tile.viz.show_live_through`, read from the PTX).
#
# Both are computed here without a GPU: the registers come from `ptxas`, where it is
# installed, and the rest from tile's own compilation for `sm_90a`.

# %%
import importlib.util
import os
import sys

import tile
import tile.language as tl
from tile.runtime.ptxas import find_ptxas
from tile.viz import occupancy, show_live_through, show_occupancy

ROOT = os.path.abspath("..")
HAVE_PTXAS = find_ptxas() is not None

# %% [markdown]
# ## Programs per SM
#
# The rules are those of NVIDIA's occupancy calculator: registers go to each warp in units of
# 256, a program's shared memory is its own plus 1 KiB the system keeps, and threads and block
# slots are capped. Tutorial 07's attention forward at `S <= 4096` runs 128 x 64 blocks in two
# stages: 128 registers a thread and 96 KiB of shared memory. Both allow exactly two programs.

# %%
two = occupancy(registers=128, shared_bytes=98336, threads=256, target="sm_90a")
print(show_occupancy(registers=128, shared_bytes=98336, threads=256, target="sm_90a"))

# %%
assert two.programs == 2 and two.limits == ("registers", "shared memory")

# %% [markdown]
# One more stage of the K/V ring adds 32 KiB: the shared memory then holds one program, and the
# registers no longer matter. On an H200 that one program per SM ran the forward at S = 1024
# about 5% slower than the two (benchmarks/RESULTS.md). With ptxas installed, the same figure
# comes from the compiled kernel (tutorial 07's `forward_occupancy`: `warmup` compiles it, and
# `n_regs` asks ptxas).

# %%
spec = importlib.util.spec_from_file_location("tutorial_07", os.path.join(ROOT, "tutorials", "07_fused_attention.py"))
attention = importlib.util.module_from_spec(spec)
spec.loader.exec_module(attention)

programs = {}
for stages in (2, 3):
    if not HAVE_PTXAS:
        break
    figure = attention.forward_occupancy(stages)
    programs[stages] = figure.occupancy.programs
    print(f"{stages} stages:", figure, sep="\n")

# %%
assert not HAVE_PTXAS or programs == {2: 2, 3: 1}

# %% [markdown]
# ## Registers live through a loop
#
# ptxas gives each thread at most 255 registers; what does not fit is spilled to local memory.
# A value defined before a loop and used only after it takes a register for the whole loop,
# which the loop's own work then lacks. `show_live_through` lists those registers for each loop
# of a PTX kernel, by the source line that defined them (64-bit values count two). It reads
# Triton's PTX too (`kernel.asm["ptx"]`), which is how the two fixes of 2026-11-28 were found:
# in Triton's tutorial-06 backward, tile kept an operand's registers through a first loop to
# stage it again for a second, and 64-bit addresses of the later loads and stores through all
# of them.
#
# benchmarks' matmul_kernel shows the reading: its epilogue's row and column indices
# (`offs_m[:, None] * stride_cm ...`) only serve the store after the K loop.

# %%
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from load_kernels import load_kernels  # noqa: E402

matmul_kernel = load_kernels("notebook_10", tile.jit, tl).matmul_kernel
a, c = tile.empty((256, 256), "f16"), tile.empty((256, 256), "f16")
matmul_ptx = tile.dump(matmul_kernel, a, a, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BLOCK_M=128, BLOCK_N=64,
                       BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4, stage="ptx", target="sm_90a")
through = show_live_through(matmul_ptx)
through

# %%
(k_loop,) = [report for report in through.loops if report.registers]
assert k_loop.registers >= 2 and k_loop.registers == sum(k_loop.by_source.values())
