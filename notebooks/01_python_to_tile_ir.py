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
# # 01 · From Python to tile IR
#
# A tile kernel is an ordinary Python function under `@tile.jit`. Nothing runs it as Python:
# when it is launched (or dumped), tile reads its **source**, walks the syntax tree, and builds
# **tile IR**, a small SSA intermediate representation whose values are whole blocks (tensors)
# of data. Everything after that (optimizing passes, layouts, PTX) works on the IR.
#
# ```
# Python function ──frontend──▶ tile IR ──tile passes──▶ tile IR ──▶ gpu IR ──▶ simt IR ──▶ PTX
# ```
#
# This notebook follows the first arrow. It needs no GPU: `tile.dump` compiles without
# launching, and launches run on tile's NumPy interpreter.

# %%
import ast

import numpy as np

import tile
import tile.language as tl

# %% [markdown]
# ## A first kernel
#
# Each *program* (a CUDA thread block) handles `BLOCK` consecutive elements: it computes their
# offsets, masks the ones past the end, and stores `alpha * x + y`. `BLOCK` is a
# `tl.constexpr`: a compile-time constant, part of the kernel's specialization.

# %%
@tile.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


rng = np.random.default_rng(0)
n = 1000
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)

# %% [markdown]
# `tile.dump(kernel, *args, stage="tile", **constexprs)` shows the IR the frontend builds for
# these argument *types* (only types, alignment and a few facts about integers matter; nothing
# is launched). In Jupyter the dump is coloured, and every line links to the source line it came
# from (hover the `…py:N` link at the end of a line).

# %%
ir = tile.dump(axpy, x, y, out, n, 2.0, BLOCK=256, stage="tile")
ir

# %% [markdown]
# How to read it:
#
# - `tt.func` is the kernel. Its block `^bb(...)` has one **argument** per runtime parameter,
#   typed: `ptr<f32>` for the arrays, `i32` for `n`, `f32` for `alpha`. `BLOCK` is not there: it
#   was a Python number during the walk.
# - Each line `%name = dialect.op operands {attributes} : type` defines one **SSA value**,
#   assigned exactly once. Values take the Python variable's name when there is one (`%offs`,
#   `%mask`), a number otherwise.
# - `tt.*` ops are tile's block operations (`tt.arange`, `tt.splat`, `tt.load`), `arith.*` are
#   elementwise arithmetic. A scalar meeting a tensor becomes `tt.splat` (Triton's broadcasting
#   of a scalar to a block).
# - Types: `tensor<256xf32>` is a block of 256 floats, `tensor<256xptr<f32>>` a block of
#   pointers (`x_ptr + offs`).

# %%
text = str(ir)
assert "^bb(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32, %alpha: f32)" in text
assert "%offs = arith.add" in text and "%mask = arith.cmp" in text
assert text.count("tt.load") == 2 and text.count("tt.store") == 1
assert "BLOCK" not in text  # a constexpr is a number in the IR, never a value

# %% [markdown]
# ## Step 1: the syntax tree
#
# The frontend asks Python for the function's source (`inspect.getsource`, which also works for
# a function defined in a notebook cell: IPython keeps each cell's text) and parses it with the
# `ast` module. Here is the tree of one statement:

# %%
tree = axpy.parse()  # the function's ast.FunctionDef
statement = tree.body[1]
print(ast.unparse(statement))
print(ast.dump(statement.value, indent=2)[:900])

# %% [markdown]
# The code generator (`tile/frontend/codegen.py`) is an `ast.NodeVisitor`: one method per kind of
# node. `visit_BinOp` for `pid * BLOCK` evaluates both sides: `pid` is an IR value (the result of
# `tt.program_id`), `BLOCK` is the Python int 256, so it emits `arith.constant 256` and
# `arith.mul`. Every op records the source location of the node being walked; that is how
# errors, dumps and PTX comments point back at your lines.

# %%
located = tile.ir.print_op(axpy.build_ir(axpy.specialize((x, y, out, n, 2.0), {"BLOCK": 256})[0]), locs=True)
mul_line = next(line for line in located.splitlines() if "arith.mul" in line)
print(mul_line)
assert f":{axpy.line_offset + 4}:" in mul_line  # the line of `offs = pid * BLOCK + ...`

# %% [markdown]
# ## Step 2: constexpr evaluation
#
# Anything that depends only on compile-time values is computed by Python during the walk and
# never reaches the IR. A Python `if` on a constexpr simply picks a branch, so one kernel source
# yields different IR per specialization:

# %%
@tile.jit
def scaled_copy(x_ptr, out_ptr, BLOCK: tl.constexpr, SQUARE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    if SQUARE:
        v = v * v
    tl.store(out_ptr + offs, v * (BLOCK // 64))


plain = str(tile.dump(scaled_copy, x, out, BLOCK=128, SQUARE=False, stage="tile"))
squared = str(tile.dump(scaled_copy, x, out, BLOCK=128, SQUARE=True, stage="tile"))
print(squared)
assert "scf.if" not in squared  # the `if` ran in Python
assert squared.count("arith.mul") == plain.count("arith.mul") + 1
assert "{value = 2.0}" in plain  # BLOCK // 64 computed while walking (2, as a float to multiply v)

# %% [markdown]
# ## Step 3: SSA values
#
# Python variables can be reassigned; SSA values cannot. When `v = v * v` runs, the name `v` is
# simply bound to a new IR value. The IR never mutates a value, which is what makes the passes
# in notebook 02 simple: a value's definition is the one op that produced it.

# %%
defined = [line.split(" = ")[0].strip() for line in squared.splitlines() if " = " in line and "%" in line]
assert len(defined) == len(set(defined)), "every value is defined once"
print(defined)

# %% [markdown]
# ## Step 4: regions for loops and ifs
#
# Control flow that depends on *runtime* values cannot run in Python. It becomes an op with a
# **region**, a nested block of ops:
#
# - a `for` loop over a runtime range becomes `scf.for %lower, %upper, %step, %init...`; its
#   block's arguments are the induction variable and the **loop-carried values** (Python
#   variables assigned in the loop and read after it), and `scf.yield` passes their next values
#   to the next iteration;
# - an `if` on a runtime condition becomes `scf.if` with two regions; variables assigned in
#   the branches become the op's results.

# %%
@tile.jit
def clipped_sum(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    total = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(total, axis=0)
    if s > limit:
        s = limit
    tl.store(out_ptr, s)


loops = tile.dump(clipped_sum, x, out, n, 5.0, BLOCK=128, stage="tile")
loops

# %%
text = str(loops)
assert "scf.for" in text and "scf.yield" in text and "scf.if" in text
carried = next(line for line in text.splitlines() if "scf.for" in line)
print(carried)
assert carried.lstrip().startswith("%total")  # `total` is carried around the loop and out of it

# %% [markdown]
# ## Step 5: the IR is data
#
# `JITFunction.build_ir(spec)` returns the IR as Python objects (`Operation`, `Block`, `Region`,
# `Value`), the same objects every pass rewrites. The printer's text parses back to equal IR, so
# any stage can be saved, edited by hand and fed to the next one.

# %%
spec, _ = clipped_sum.specialize((x, out, n, 5.0), {"BLOCK": 128})
func = clipped_sum.build_ir(spec)
counts = {}
for op in func.walk():
    counts[op.name] = counts.get(op.name, 0) + 1
print(counts)
assert counts["scf.for"] == 1 and counts["tt.reduce"] == 1

reparsed = tile.ir.parse_op(tile.ir.print_op(func))
assert tile.ir.print_op(reparsed) == tile.ir.print_op(func)

# %% [markdown]
# ## Step 6: specialization
#
# The function's attributes record what tile learned from the arguments: `arg_divisibility`
# says which integers (and pointer addresses, in bytes) are divisible by 16. Like Triton, tile
# compiles one variant per such fact, so `n = 1024` and `n = 1000` give two kernels. In the
# first, the mask `offs < n` is the same for any aligned group of consecutive elements, so a
# thread can load them with one wide, predicated instruction (notebook 07 shows it in PTX).

# %%
def divisibility(n_value):
    header = str(tile.dump(axpy, x, y, out, n_value, 2.0, BLOCK=256, stage="tile")).splitlines()[0]
    return header.split("arg_divisibility = ")[1].split("]")[0] + "]"


print(divisibility(1000), divisibility(1024))
assert divisibility(1000) == "[16, 16, 16, 1, 1]" and divisibility(1024) == "[16, 16, 16, 16, 1]"

# %% [markdown]
# ## Running the IR
#
# Without a GPU, a launch runs the tile IR on NumPy, one program at a time; with one, it runs
# the compiled PTX. `tile.to_device` puts the arrays where the kernel runs (GPU memory, or host
# memory for the interpreter), so the same cell works on both. The result is the same as
# NumPy's, which is how most of tile's tests check the frontend.

# %%
x_dev, y_dev, out_dev = tile.to_device(x), tile.to_device(y), tile.to_device(out)
axpy[(tile.cdiv(n, 256),)](x_dev, y_dev, out_dev, n, 2.0, BLOCK=256)
result = out_dev.numpy()
np.testing.assert_allclose(result, 2.0 * x.astype(np.float64) + y, rtol=1e-6)
print("max error:", np.abs(result - (2.0 * x.astype(np.float64) + y)).max())

# %% [markdown]
# **Next:** notebook 02 runs the tile passes over this IR and shows what each one changes.
