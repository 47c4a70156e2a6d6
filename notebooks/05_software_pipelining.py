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
# # 05 · Software pipelining
#
# In a matmul's K loop, each iteration loads two tiles from global memory and multiplies them.
# Done naively, the tensor cores wait for every load. The **pipeline** pass
# (`tile/opt/pipeline.py`) keeps `num_stages` copies of each operand buffer and issues the loads
# of iteration `i + num_stages - 1` while iteration `i` multiplies, with asynchronous copies
# (`cp.async` on Ampere, TMA on Hopper).
#
# This notebook prints the loop before and after the pass, draws the stage/buffer schedule read
# back from the pipelined IR, and finds the waits in the PTX.

# %%
import re

import numpy as np

import tile
import tile.language as tl
from tile.ir import parse_op
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


rng = np.random.default_rng(1)
a = rng.standard_normal((128, 256)).astype(np.float16)
b = rng.standard_normal((256, 128)).astype(np.float16)
c = np.full((128, 128), np.nan, np.float32)
c_dev = tile.to_device(c)  # runs on the GPU when there is one, else on the NumPy interpreter
matmul[(2, 2)](tile.to_device(a), tile.to_device(b), c_dev, 128, 128, 256, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
c = c_dev.numpy()
assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)
ARGS = (a, b, c, 128, 128, 256)
BLOCKS = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)

# %% [markdown]
# ## The loop before and after the pass
#
# `stage="passes"` records the IR after every pass. Before `pipeline`, the loop loads each tile,
# stores it to a shared buffer (`gpu.local_store`), waits for every thread, and reads the
# fragments back (`gpu.local_load`): the data goes through shared memory *synchronously*.

# %%
def after_each_pass(num_stages, target="sm_80"):
    text = str(tile.dump(matmul, *ARGS, stage="passes", target=target, num_stages=num_stages, **BLOCKS))
    parts = re.split(r"^// ----- after (\S+) -----$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def loop_text(ir_text):
    """The scf.for of the K loop, with the long layouts shortened."""
    lines = ir_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "scf.for" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}")
    return "\n".join(re.sub(r", #\w+<.*?>>", ">", line)[:140] for line in lines[start:end + 1])


passes = after_each_pass(num_stages=3)
print(list(passes))
names = list(passes)
before = passes[names[names.index("pipeline") - 1]]  # the IR that the pipeline pass receives
print(loop_text(before))

# %%
assert "gpu.local_store" in loop_text(before) and "gpu.async_copy" not in before

# %% [markdown]
# After `pipeline` (num_stages = 3): two buffers of 3 stages are allocated before the loop, a
# *prologue* issues the copies of iterations 0 and 1, and each iteration waits for its own copy
# (`gpu.async_wait {pending = 1}`: at most one younger group may still be in flight), issues the
# copy of iteration `k + 2` into stage `(%stage + 2) mod 3` and multiplies stage `%stage`.

# %%
after = passes["pipeline"]
print(loop_text(after))

# %%
assert "gpu.async_wait {pending = 1}" in loop_text(after)
assert loop_text(after).count("gpu.async_copy") == 2  # A and B, for iteration k + 2
prologue = after[:after.index("scf.for")]
assert prologue.count("gpu.async_commit") == 2  # iterations 0 and 1

# %% [markdown]
# ## The schedule, drawn
#
# `show_pipeline` reads the schedule back from the IR: the number of stages from the buffers'
# leading dimension, the prologue from the copies before the loop, and how far ahead the body
# copies by *evaluating* the body's stage arithmetic (`%stage + 2`, wrapped by a compare and a
# select) for every stage. Each bar is one iteration's copy, from the slot that issues it to
# the slot whose dot reads it.

# %%
timeline = show_pipeline(after, iterations=6)
print(timeline)
timeline

# %%
assert timeline.num_stages == 3 and timeline.lookahead == 2 and timeline.prologue_buffers == [0, 1]
for copy in timeline.copies:
    assert copy.buffer == copy.iteration % 3  # iteration i lives in stage i mod 3
    assert copy.read - copy.issued == 2  # issued two slots before its dot reads it
# a buffer is refilled only after the dot that read it: never two live copies in one buffer
for buffer in range(3):
    spans = sorted((cp.issued, cp.read) for cp in timeline.copies if cp.buffer == buffer)
    assert all(end < start for (_, end), (start, _) in zip(spans, spans[1:]))

# %% [markdown]
# More stages, more copies in flight: the lookahead is always `num_stages - 1`, and the shared
# memory grows by one tile per stage.

# %%
for stages in (2, 3, 4):
    ir = tile.dump(matmul, *ARGS, stage="gpu", target="sm_80", num_stages=stages, **BLOCKS)
    t = show_pipeline(ir)
    shared = parse_op(str(ir)).attrs["shared_bytes"]
    print(f"num_stages = {stages}: lookahead {t.lookahead}, wait {t.wait}, {shared} bytes of shared memory")
    assert t.num_stages == stages and t.lookahead == stages - 1

# %% [markdown]
# ## In the PTX
#
# `gpu.async_copy` becomes `cp.async.cg.shared.global` (16 bytes, bypassing L1),
# `gpu.async_commit` closes a group (`cp.async.commit_group`) and `gpu.async_wait {pending = 1}`
# is `cp.async.wait_group 1`.

# %%
ptx = str(tile.dump(matmul, *ARGS, stage="ptx", target="sm_80", num_stages=3, **BLOCKS))
print(sorted(set(re.findall(r"cp\.async[.\w]*(?: \d)?", ptx))))
assert "cp.async.wait_group 1" in ptx and "cp.async.commit_group" in ptx
assert "cp.async.cg.shared.global" in ptx

# %% [markdown]
# On Hopper (`sm_90a`) the dot itself becomes asynchronous (`wgmma`): iteration `i`'s dot keeps
# running while iteration `i + 1` starts, until the `gpu.dot_wait {pending = 1}` after dot
# `i + 1` retires it (the `dots` row: `D1 r0` = dot 1 starts, dot 0 is done). Only then may the
# copies overwrite the stage dot `i` read, which is why they come after that wait in the body.
# Notebook 06 looks at the TMA version of the same ring.

# %%
hopper = show_pipeline(tile.dump(matmul, *ARGS, stage="gpu", target="sm_90a", num_stages=3, **BLOCKS))
print(hopper)
hopper

# %%
assert hopper.async_dots == 1 and hopper.dots_in_flight == 1
assert hopper.dot_retired[:3] == [1, 2, 3]  # dot i is retired in iteration i + 1
for copy in hopper.copies[3:]:  # a stage is refilled only after the dot that read it is retired
    assert hopper.dot_retired[copy.iteration - 3] <= copy.issued - len(hopper.prologue_buffers)
