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
# # 07 · Lowering to PTX
#
# Up to the gpu IR, a value is a whole block: `tensor<1024xf32>` with a **layout** saying which
# thread holds which element (notebook 03). A GPU does not run blocks; it runs threads. The
# **lowering** (`tile/codegen/`) rewrites every block op into what *one thread* does for the
# elements it holds: that is the **simt IR**, scalar SSA values in virtual registers. The PTX
# emitter (`tile/codegen/ptx/emit.py`) then prints simt IR as PTX text, nearly one instruction per
# op; the CUDA driver (or `ptxas`) turns PTX into machine code and allocates the real registers.
#
# ```
# gpu IR (blocks + layouts) ──lower──▶ simt IR (one thread, virtual registers) ──emit──▶ PTX
# ```
#
# Everything here is compiled for `target="sm_90a"` (an H100) without a GPU.

# %%
import re

import numpy as np
from IPython.display import HTML

import tile
import tile.language as tl

# %%
@tile.jit
def relu_scale(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x * scale, 0.0)
    tl.store(out_ptr + offs, y, mask=mask)


n = 4096
x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
ARGS = (x, out, n, 2.0)


def dump(stage, **options):
    return tile.dump(relu_scale, *ARGS, BLOCK=1024, stage=stage, target="sm_90a", **options)

# %% [markdown]
# ## Where lowering starts: the gpu IR
#
# After the gpu passes every tensor type carries a layout. Here it is a blocked layout with
# `spt = [4]` (size per thread: 4 consecutive elements), `tpw = [32]` (threads per warp) and
# `wpc = [4]` (warps per CTA): 4 × 32 × 4 = 512 elements per sweep, so each thread holds 4
# elements twice to cover 1024. The loads and stores have `{vector = 4}`: the four elements a
# thread holds are contiguous, so one 16-byte access moves them.

# %%
gpu = str(dump("gpu"))
layout = re.search(r"#blocked<[^>]*>", gpu).group()
print(layout)
print(next(line for line in gpu.splitlines() if "tt.load" in line))
assert layout == "#blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>"
threads = 32 * 4
per_thread = 1024 // threads
assert per_thread == 8

# %% [markdown]
# ## The simt IR: one thread's program
#
# Read it as the code of thread `simt.tid` in block `simt.ctaid`:
#
# - the block `tt.arange(0, 1024)` is gone; the thread computes only **its** indices from its
#   thread id: `tid << 2` (4 elements per thread), and `+ 512` for the second sweep;
# - every elementwise block op became `per_thread` scalar ops (8 `arith.mul`, 8 `arith.select`);
# - address arithmetic is explicit: `simt.addptr %x_ptr, %7 {scale = 4}` is `x_ptr + 4 * index`
#   bytes, and each `simt.ld_global` reads a vector of 4 floats at a byte offset from it.

# %%
simt = dump("simt")
simt

# %%
simt_text = str(simt)
assert "simt.tid" in simt_text and "tt.arange" not in simt_text
assert simt_text.count("arith.mul %") == per_thread + 1  # 8 products, and ctaid * 1024
loads = re.findall(r"simt.ld_global .*\{offset = (\d+), vector = (\d+)\}", simt_text)
print(loads)
assert sum(int(v) for _, v in loads) == per_thread  # 2 loads of 4 floats each
assert [int(o) for o, _ in loads] == [0, 512 * 4]  # the second sweep starts 512 floats later

# %% [markdown]
# ## PTX
#
# The emitter gives each simt value a **virtual register** of its class: `%r` (32-bit
# integers), `%rd` (64-bit, addresses), `%f` (float32), `%p` (predicates, 1 bit). PTX has no
# limit on them; `.reg .f32 %f<26>` declares `%f0` to `%f25`. The line comments tie each group
# of instructions to the line of Python it came from (in Jupyter, they link to the source).

# %%
ptx = dump("ptx")
ptx

# %%
ptx_text = str(ptx)
declared = dict((cls, int(count)) for cls, count in
                re.findall(r"\.reg \.(?:pred|b32|f32|b64) %(\w+)<(\d+)>;", ptx_text))
used = {}
for cls, index in re.findall(r"%(p|r|f|rd)(\d+)\b", ptx_text):
    used[cls] = max(used.get(cls, 0), int(index))
print("declared:", declared, " highest used:", used)
assert all(declared[cls] == used[cls] + 1 for cls in used)  # every register used is declared, none more

# %% [markdown]
# ## Predicates: how masks become code
#
# A GPU thread does not branch around a masked load; it **predicates** it. `mask = offs < n`
# became `setp.lt.s32 %p1, ...`, one predicate per group of elements, and the load runs only
# where its predicate is true: `@%p1 ld.global.v4.f32`. The registers of a masked-off load
# keep the `mov` of `other` (0.0) made just before it. `tl.where` needs no branch either: it
# becomes `selp` (select on a predicate).
#
# Why one predicate for 4 elements? `n = 4096` is divisible by 16 (see `arg_divisibility` in
# notebook 01), and each thread's 4 elements start at a multiple of 4, so they are all in
# bounds or all out: axis analysis proves the mask constant over groups of 4. With `n = 4097`
# nothing is known about `n`, and every element gets its own predicate and its own load.

# %%
predicated = [line.strip() for line in ptx_text.splitlines() if line.strip().startswith("@")]
print("\n".join(predicated))
assert all(re.match(r"@%p\d+ (ld|st)\.global\.v4\.f32", line) for line in predicated)
assert ptx_text.count("selp.f32") == per_thread and "bra" not in ptx_text

odd = str(tile.dump(relu_scale, x, out, n + 1, 2.0, BLOCK=1024, stage="ptx", target="sm_90a"))
odd_loads = [line.strip() for line in odd.splitlines() if "ld.global" in line]
print(len(odd_loads), "loads when n = 4097, e.g.", odd_loads[0])
assert len(odd_loads) == per_thread and all(re.match(r"@%p\d+ ld\.global\.f32", line) for line in odd_loads)

# %% [markdown]
# ## From PTX back to the source
#
# Every op carries the location of the Python node it came from, from the frontend through every
# pass down to simt IR; `print_op(..., locs=True)` shows them, and the emitter turns them into
# the line comments (the role of `.loc` debug directives). That is enough to lay the PTX beside
# the Python it implements:

# %%
def ptx_by_source_line(ptx_text):
    """{source line number: [PTX instructions]} from the emitter's `// file:line  code` comments."""
    groups, current = {}, None
    for line in ptx_text.splitlines():
        m = re.match(r"\s*// \S+:(\d+)  ", line)
        if m:
            current = int(m.group(1))
            groups.setdefault(current, [])
        elif current is not None and line.strip() and not line.strip().startswith(("}", "//")):
            groups[current].append(line.strip())
    return groups


groups = ptx_by_source_line(ptx_text)
source = relu_scale._source_lines()
first = relu_scale.line_offset + 1
rows = []
for i, code in enumerate(source):
    number = first + i
    instructions = "<br>".join(groups.get(number, []))
    rows.append(f"<tr><td style='text-align:right;color:#888'>{number}</td>"
                f"<td style='text-align:left'><pre>{code.rstrip()}</pre></td>"
                f"<td style='text-align:left'><pre>{instructions}</pre></td></tr>")
HTML("<table><tr><th></th><th>Python</th><th>PTX</th></tr>" + "".join(rows) + "</table>")

# %%
for number in sorted(groups):
    print(f"{number:3d} {source[number - first].strip():55s} {len(groups[number]):2d} instructions")
body_lines = [first + i for i, code in enumerate(source) if code.strip().startswith(("offs", "mask", "x =", "y =",
                                                                                     "tl.store"))]
assert set(body_lines) <= set(groups)  # every statement of the body produced code
assert any("selp" in ins for ins in groups[first + 5])  # the tl.where line

# %% [markdown]
# The same locations in the simt IR, printed with `locs=True`:

# %%
from tile.compiler import compile_kernel

spec, _ = relu_scale.specialize(ARGS, {"BLOCK": 1024})
compiled = compile_kernel(relu_scale, spec, {}, "sm_90a", until="simt")
located = tile.ir.print_op(compiled.func, locs=True)
located_loads = [line for line in located.splitlines() if "simt.ld_global" in line]
print("\n".join(located_loads))
assert len(located_loads) == 2 and all(f":{first + 4}:" in line for line in located_loads)  # the tl.load line

# %% [markdown]
# ## Loops and reductions
#
# Control flow stays structured through the simt IR: a runtime loop is still an `scf.for`, now
# carrying each thread's own values (here two partial sums, since each thread holds 2 of the
# 256 elements). Only the PTX emitter turns it into labels and branches: a first branch skips
# the loop when it runs zero times, and one at the bottom jumps back to the head while iterations
# remain. `bra.uni` tells the hardware that all threads of a warp take the branch together.
#
# `tl.sum` over a block shows the three levels of a GPU reduction, in order:
# 1. within a thread: add the values it holds;
# 2. within a warp: 5 **butterfly shuffles** (`simt.shfl {mode = "bfly"}`, `shfl.sync.bfly` in
#    PTX) exchange registers between lanes at distance 1, 2, 4, 8, 16, so after log2(32) steps
#    every lane has the warp's sum;
# 3. across warps: lane 0 of each warp writes its sum to **shared memory**, a **barrier**
#    (`bar.sync`) waits for all warps, and each thread reads back and adds the 4 partial sums.

# %%
@tile.jit
def row_sums(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


rows, cols = 4, 1000
matrix = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
sums = np.full(rows, np.nan, np.float32)
loop_simt = tile.dump(row_sums, matrix, sums, cols, BLOCK=256, stage="simt", target="sm_90a")
loop_simt

# %%
loop_simt_text = str(loop_simt)
loop_line = next(line for line in loop_simt_text.splitlines() if "scf.for" in line)
print(loop_line)
assert loop_line.rstrip().endswith(": f32, f32 {")  # two loop-carried partial sums per thread
assert loop_simt_text.count('simt.shfl') == 5 and loop_simt_text.count("simt.barrier") == 1
assert "simt.st_shared" in loop_simt_text and "simt.ld_shared" in loop_simt_text

loop_ptx = str(tile.dump(row_sums, matrix, sums, cols, BLOCK=256, stage="ptx", target="sm_90a"))
control = [line.strip() for line in loop_ptx.splitlines()
           if re.search(r"\bbra\b|^\$|shfl|bar\.sync", line.strip())]
print("\n".join(control))
assert sum(line.endswith(":") for line in control) == 2  # the loop's head and exit labels
assert sum("bra.uni" in line for line in control) == 2
assert sum("shfl.sync.bfly" in line for line in control) == 5

sums_dev = tile.to_device(sums)
row_sums[(rows,)](tile.to_device(matrix), sums_dev, cols, BLOCK=256)
np.testing.assert_allclose(sums_dev.numpy(), matrix.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)

# %% [markdown]
# ## Launch options change the per-thread program
#
# `num_warps` sets the threads per block. With 8 warps, 256 threads share the 1024 elements:
# 4 per thread, a single vector load each, and `.maxntid 256` tells the assembler the block size.

# %%
eight = str(dump("ptx", num_warps=8))
print([line.strip() for line in eight.splitlines() if ".maxntid" in line or "ld.global" in line])
assert ".maxntid 256, 1, 1" in eight and eight.count("ld.global.v4.f32") == 1

# %% [markdown]
# ## Registers for real
#
# The count of virtual registers says little about the machine: `ptxas` (or the driver's JIT)
# allocates physical registers, reusing them once a value is dead. Where `ptxas` is installed,
# tile can ask it without a GPU:

# %%
from tile.runtime.ptxas import assemble, find_ptxas

if find_ptxas() is not None:
    result = assemble(ptx_text, "sm_90a")
    print(f"virtual registers: {sum(declared.values())}, physical registers per thread: {result.registers}")
    assert 0 < result.registers < sum(declared.values())
else:
    print("ptxas not found (pip install nvidia-cuda-nvcc to see the physical register count)")

# %% [markdown]
# ## And it runs
#
# On a machine without a GPU the launch below runs the tile IR on NumPy; on a GPU it runs the PTX
# shown above (`tile.to_device` puts the arrays where the kernel runs). `tile.emulate` also
# runs that PTX on NumPy, instruction by instruction, which is how tile's tests check the
# emitter without a GPU.

# %%
out_dev = tile.to_device(out)
relu_scale[(n // 1024,)](tile.to_device(x), out_dev, n, 2.0, BLOCK=1024)
expected = np.where(x > 0, x.astype(np.float64) * 2.0, 0.0)
np.testing.assert_allclose(out_dev.numpy(), expected, rtol=1e-6)

emulated = np.full(n, np.nan, np.float32)
tile.emulate(relu_scale, target="sm_90a")[(n // 1024,)](x, emulated, n, 2.0, BLOCK=1024)
np.testing.assert_allclose(emulated, expected, rtol=1e-6)
print("the launch and the PTX emulator agree with NumPy")
