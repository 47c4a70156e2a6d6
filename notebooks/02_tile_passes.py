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
# # 02 · The tile passes
#
# The frontend (notebook 01) writes IR the simple way: every Python operation becomes an op,
# the same address may be computed twice, work that does not depend on a loop sits inside it.
# The **tile passes** clean this up before anything target-specific happens. Each pass is a
# Python class in `tile/opt/` whose `run(func)` rewrites the IR in place; its file opens with a
# docstring showing IR before and after.
#
# This notebook runs them one by one, with the IR before and after each and the difference
# highlighted.

# %%
import difflib

import numpy as np

import tile
import tile.language as tl
from tile.opt.tile_pipeline import tile_passes

print([p.name for p in tile_passes()])

# %% [markdown]
# The order matters: `canonicalize` and `cse` expose duplicate and invariant work, `licm` moves
# it out of loops, `combine` fuses pairs of ops, and a second round of `canonicalize`, `cse` and
# `dce` cleans up what the fusions leave. (`expand-descriptors` first rewrites tensor-descriptor
# accesses into plain pointer accesses; none of the kernels here use descriptors.)
#
# `tile.dump(..., stage="passes")` records the IR after every pass. In Jupyter it renders as
# one collapsible section per pass with the diff; in a terminal it prints each pass's IR. The
# helper below takes the same records and prints the diff of one pass as text. (The printer
# numbers unnamed values in order, so when a pass removes an op the values after it are
# renumbered and show up in the diff too; look at the op names.)

# %%
def passes_of(kernel, *args, **constexprs):
    return tile.dump(kernel, *args, stage="passes", target="interpreter", **constexprs)


def diff_of(shown, pass_name, occurrence=0):
    """The unified diff made by the `occurrence`-th run of `pass_name` in a passes dump."""
    before, records = shown.passes
    seen = 0
    for name, after in records:
        if name == pass_name:
            if seen == occurrence:
                return list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1))[2:]
            seen += 1
        before = after
    raise KeyError(pass_name)


def show(diff):
    print("\n".join(diff) if diff else "(no change)")


def removed(diff, text):
    return [d for d in diff if d.startswith("-") and text in d]


def added(diff, text):
    return [d for d in diff if d.startswith("+") and text in d]


rng = np.random.default_rng(0)
x = rng.standard_normal(1024).astype(np.float32)
out = np.full(1024, np.nan, np.float32)

# %% [markdown]
# ## canonicalize: fold constants, apply identities
#
# Arithmetic on constants is computed at compile time (exactly as the GPU would: integers wrap,
# floats round once), and identities such as `i * 1` and `i + 0` disappear. Float identities
# that NaN or the sign of zero would break (`x * 0.0`, `x + 0.0`) are left alone.

# %%
@tile.jit
def folding(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    j = i * 1 + 0
    twelve = tl.full((BLOCK,), 3, tl.int32) * tl.full((BLOCK,), 4, tl.int32)
    v = tl.load(x_ptr + j)
    tl.store(out_ptr + j, v + twelve.to(tl.float32))


shown = passes_of(folding, x, out, BLOCK=128)
canon = diff_of(shown, "canonicalize")
show(canon)

# %%
assert removed(canon, "arith.mul %i,") and removed(canon, "%j = arith.add")  # i * 1 + 0 is i
assert removed(canon, "value = 4") and added(canon, "value = 12.0")  # 3 * 4, cast to float, folded
assert not added(canon, "arith.mul")

# %% [markdown]
# The full record of a kernel, as the notebook renders it: click a pass to open its diff.

# %%
shown

# %% [markdown]
# ## cse: compute each thing once
#
# Common-subexpression elimination replaces a pure op by an equal op that dominates it (same
# name, same operands, same attributes). Here the address `x_ptr + offs` is written twice in
# Python; after CSE it is computed once. The two loads stay: a load is not pure (memory may
# change between two reads, for example through another program's store), so CSE never merges
# loads, stores or atomics.

# %%
@tile.jit
def twice(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    b = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, a * b)


cse = diff_of(passes_of(twice, x, out, BLOCK=128), "cse")
show(cse)

# %%
assert len(removed(cse, "tt.splat %x_ptr")) == 1 and len(removed(cse, "tt.addptr")) == 1
after_cse = str(passes_of(twice, x, out, BLOCK=128)).split("after cse")[1].split("after licm")[0]
assert after_cse.count("tt.load") == 2

# %% [markdown]
# ## licm: hoist loop-invariant code
#
# Loop-invariant code motion moves pure ops whose operands are all defined outside a loop to
# before the loop, so they run once instead of once per iteration. Here `scale * 2.0` and its
# splat to a block do not depend on the loop:

# %%
@tile.jit
def scaled_rows(x_ptr, out_ptr, rows, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for r in range(0, rows):
        v = tl.load(x_ptr + r * BLOCK + offs)
        tl.store(out_ptr + r * BLOCK + offs, v * (scale * 2.0))


shown = passes_of(scaled_rows, x, out, 8, 0.5, BLOCK=128)
licm = diff_of(shown, "licm")
show(licm)

# %%
before_loop = str(shown).split("after licm")[1].split("scf.for")[0]
assert "arith.mul %scale" in before_loop  # hoisted above the loop
assert removed(licm, "arith.mul %scale") and added(licm, "arith.mul %scale")

# %% [markdown]
# ## combine: fuse pairs of ops
#
# `combine` knows a few patterns the backends implement better as one op:
# `acc + tl.dot(a, b)` becomes `tl.dot(a, b, acc)` (the tensor-core instruction accumulates for
# free), and `tl.where(mask, tl.load(p, mask=mask), other)` becomes a load with `other` (the
# masked-off lanes read `other` directly).

# %%
@tile.jit
def fused(a_ptr, b_ptr, c_ptr, out_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 16)
    tile_offs = r[:, None] * 16 + r[None, :]
    acc = tl.load(c_ptr + tile_offs)
    acc = acc + tl.dot(tl.load(a_ptr + tile_offs), tl.load(b_ptr + tile_offs))
    tl.store(out_ptr + tile_offs, acc)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.where(mask, tl.load(x_ptr + offs, mask=mask), -1.0), mask=offs < BLOCK)


a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
shown = passes_of(fused, a, b, c, out, x, out, 100, BLOCK=128)
combine = diff_of(shown, "combine")
show(combine)

# %%
assert removed(combine, "arith.add") and removed(combine, "arith.select")
after_all = str(shown).split("after combine")[1]
assert "arith.select" not in after_all.split("after canonicalize")[0]

# %% [markdown]
# The fused kernel still computes the same thing; the interpreter runs the optimized IR. (As in
# Triton, `tl.dot` of float32 blocks rounds its inputs to TF32, a 10-bit mantissa, like the
# tensor cores do by default: hence the tolerance.)

# %%
a_dev, b_dev, c_dev, x_dev = (tile.to_device(v) for v in (a, b, c, x))
y_dev = tile.to_device(np.full(1024, np.nan, np.float32))
mm_dev = tile.to_device(np.full(256, np.nan, np.float32))
fused[(1,)](a_dev, b_dev, c_dev, mm_dev, x_dev, y_dev, 100, BLOCK=128)
expected = c.reshape(16, 16) + a.reshape(16, 16).astype(np.float64) @ b.reshape(16, 16)
np.testing.assert_allclose(mm_dev.numpy().reshape(16, 16), expected, rtol=1e-2, atol=2e-2)
np.testing.assert_array_equal(y_dev.numpy()[:128], np.where(np.arange(128) < 100, x[:128], -1.0))

# %% [markdown]
# ## dce: remove what nobody uses
#
# Dead-code elimination erases pure ops whose results are unused. Canonicalize already drops
# unused plain ops as it goes; DCE also finds a subtler kind: a **loop-carried value** that only
# feeds its own next iteration and is never read after the loop (here the counter `steps`).

# %%
@tile.jit
def counted(x_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    steps = 0
    for r in range(0, rows):
        total += tl.load(x_ptr + r * BLOCK + offs)
        steps += 1
    tl.store(out_ptr + offs, total)


shown = passes_of(counted, x, out, 8, BLOCK=128)
dce = diff_of(shown, "dce")
show(dce)

# %%
loop_before = next(line for line in diff_of(shown, "dce") if line.startswith("-") and "scf.for" in line)
loop_after = next(line for line in diff_of(shown, "dce") if line.startswith("+") and "scf.for" in line)
assert loop_before.count("%") > loop_after.count("%")  # one loop-carried value fewer
print(loop_before, loop_after, sep="\n")

# %% [markdown]
# ## The passes are plain Python
#
# A pass is a class with a `name` and a `run(func)`; the `PassManager` runs a list of them,
# verifies the IR after each (`verify_each=True`) and records the text (`record=True`). You can
# drive it yourself on IR from `build_ir`:

# %%
from tile.opt.pass_manager import PassManager

spec, _ = counted.specialize((x, out, 8), {"BLOCK": 128})
func = counted.build_ir(spec)
ops_before = sum(1 for _ in func.walk())
manager = PassManager(tile_passes(), verify_each=True, record=True)
manager.run(func)
ops_after = sum(1 for _ in func.walk())
print(f"{ops_before} ops -> {ops_after} ops;", {k: f"{v * 1e3:.2f} ms" for k, v in manager.timings.items()})
assert ops_after < ops_before and [name for name, _ in manager.records] == [p.name for p in tile_passes()]

# %% [markdown]
# **Next:** notebooks 03 to 06 follow the IR to the GPU level (layouts, shared memory,
# pipelining, tensor cores); notebook 07 lowers it to PTX; notebook 08 writes a new pass and
# plugs it in.
