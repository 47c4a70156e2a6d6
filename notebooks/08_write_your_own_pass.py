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
# # 08 · Write your own pass
#
# Every optimization in tile is a Python function over IR objects (notebook 02). This notebook
# writes a new one, **strength reduction**: an integer multiply by a power of two becomes a left
# shift (`i * 8` → `i << 3`), and plugs it into the compiler with the public pass API:
#
# - `@tile.jit(extra_passes=[my_pass])` runs it for one kernel, after the tile passes;
# - `tile.register_pass(my_pass, after="cse")` runs it for every kernel.
#
# The compiler runs the IR verifier right after a user pass, shows the pass in
# `tile.dump(..., stage="passes")`, and includes it in cache keys, so a kernel compiled with the
# pass never reuses a binary compiled without it.
#
# (The GPU's own assembler would also turn this multiply into a shift; the rewrite is small
# enough to read in one go, which is why it makes a good first pass.)

# %%
import numpy as np

import tile
import tile.language as tl
from tile.ir import Operation, element_type

# %% [markdown]
# ## The kernel
#
# A strided gather: program `pid` copies `BLOCK` elements taken every `STRIDE`-th from `x`. The
# index arithmetic multiplies by constants: `pid * BLOCK` and `offs * STRIDE`.

# %%
@tile.jit
def gather(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STRIDE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * STRIDE, mask=mask), mask=mask)


rng = np.random.default_rng(0)
n = 1000
x = rng.standard_normal(8 * n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
before = tile.dump(gather, x, out, n, BLOCK=256, STRIDE=8)
before

# %%
muls = [line.strip() for line in str(before).splitlines() if "arith.mul" in line]
print("\n".join(muls))
assert len(muls) == 2

# %% [markdown]
# ## The IR API a pass needs
#
# - `func.walk()` yields every op, nested regions included; `op.name`, `op.operands`,
#   `op.result` (its single result), `op.attrs` (a dict), `op.loc` (its source location).
# - `value.owner_op` is the op that defined a value (`None` for a block argument), `value.type`
#   its type; `element_type(t)` is the scalar type of a tensor type, with `.is_integer`.
# - `Operation(name, operands, result_types, attrs, loc=...)` makes an op;
#   `op.parent.insert_before(op, new)` places it; `value.replace_all_uses_with(other)` rewires
#   the users; `op.erase()` removes an op nobody uses any more.
#
# A constant is an `arith.constant` op whose `value` attribute is a Python number; a tensor
# constant (all elements equal) has the same scalar `value` with a tensor type.

# %%
def power_of_two_exponent(value):
    """k if `value` is the constant 2**k (k >= 1), else None."""
    op = value.owner_op
    if op is None or op.name != "arith.constant":
        return None
    c = op.attrs["value"]
    if isinstance(c, bool) or not isinstance(c, int) or c < 2 or c & (c - 1):
        return None
    return c.bit_length() - 1


def strength_reduce(func):
    """x * 2**k -> x << k for integer multiplies (scalars and tensors)."""
    for op in list(func.walk()):  # a list: the loop edits the IR it walks
        if op.name != "arith.mul" or not element_type(op.result.type).is_integer:
            continue
        for x, c in (op.operands, op.operands[::-1]):  # the constant may be on either side
            k = power_of_two_exponent(c)
            if k is None:
                continue
            shift = Operation("arith.constant", [], [c.type], {"value": k}, loc=op.loc)
            shl = Operation("arith.shl", [x, shift.result], [op.result.type], loc=op.loc)
            op.parent.insert_before(op, shift)
            op.parent.insert_before(op, shl)
            op.result.replace_all_uses_with(shl.result)
            op.erase()
            break

# %% [markdown]
# ## Plugging it into one kernel
#
# `tile.jit(extra_passes=[...])` takes the same Python function as before; nothing else changes.

# %%
fast_gather = tile.jit(extra_passes=[strength_reduce])(gather.fn)
after = tile.dump(fast_gather, x, out, n, BLOCK=256, STRIDE=8)
after

# %%
after_text = str(after)
assert "arith.mul" not in after_text and after_text.count("arith.shl") == 2
assert "{value = 8} : i32" in after_text and "{value = 3} : tensor<256xi32>" in after_text  # 256 = 2**8, 8 = 2**3

# %% [markdown]
# The pass appears under its name (`strength-reduce`, from the function's name) in the
# pass-by-pass view, after the tile passes; open its section to see the diff.

# %%
passes = tile.dump(fast_gather, x, out, n, BLOCK=256, STRIDE=8, stage="passes", target="interpreter")
passes

# %%
names = [name for name, _ in passes.passes[1]]
print(names)
assert names[-1] == "strength-reduce" and names[-2] == "dce"

# %% [markdown]
# And it reaches the machine code: the PTX has shifts where the multiplies were (compare the
# `mul.lo.s32` of the kernel without the pass).

# %%
plain_ptx = str(tile.dump(gather, x, out, n, BLOCK=256, STRIDE=8, stage="ptx", target="sm_90a"))
fast_ptx = str(tile.dump(fast_gather, x, out, n, BLOCK=256, STRIDE=8, stage="ptx", target="sm_90a"))
print([line.strip() for line in plain_ptx.splitlines() if "mul.lo.s32" in line])
print([line.strip() for line in fast_ptx.splitlines() if "shl.b32" in line])
assert "mul.lo.s32 %r3, %r2, 256;" in plain_ptx and "shl.b32 %r3, %r2, 8;" in fast_ptx

# %% [markdown]
# ## Is it still right?
#
# A pass must not change what a kernel computes. Run both kernels on random data (on the GPU if
# there is one, else on the interpreter; `tile.emulate` runs the PTX itself on NumPy) and
# compare with NumPy.

# %%
expected = x[: 8 * n : 8].astype(np.float64)
x_dev = tile.to_device(x)
for kernel in (gather, fast_gather):
    result = tile.to_device(np.full(n, np.nan, np.float32))
    kernel[(tile.cdiv(n, 256),)](x_dev, result, n, BLOCK=256, STRIDE=8)
    np.testing.assert_array_equal(result.numpy(), expected)
    emulated = np.full(n, np.nan, np.float32)
    tile.emulate(kernel, target="sm_90a")[(tile.cdiv(n, 256),)](x, emulated, n, BLOCK=256, STRIDE=8)
    np.testing.assert_array_equal(emulated, expected)
print("both kernels match NumPy, launched and on the PTX emulator")

# %% [markdown]
# ## A pass as a class
#
# A pass can also be an object with a `run(func)` method, for example a subclass of `tile.Pass`.
# That is handy when a pass has settings or keeps statistics. Its `name` attribute names it in
# dumps.

# %%
class StrengthReduce(tile.Pass):
    name = "strength-reduce-counted"

    def __init__(self):
        self.rewrites = 0

    def run(self, func):
        before = sum(op.name == "arith.mul" for op in func.walk())
        strength_reduce(func)
        self.rewrites += before - sum(op.name == "arith.mul" for op in func.walk())


counter = StrengthReduce()
counted = tile.jit(extra_passes=[counter])(gather.fn)
tile.dump(counted, x, out, n, BLOCK=256, STRIDE=8)
print("multiplies rewritten:", counter.rewrites)
assert counter.rewrites == 2

# %% [markdown]
# ## For every kernel: `tile.register_pass`
#
# Registering places the pass in the global pipeline, right after the last run of the tile pass
# named by `after`. Every kernel gets it from then on, until `tile.unregister_pass`: kernels
# already launched compile again at their next launch.

# %%
from tile.opt.user_passes import tile_pipeline

tile.register_pass(strength_reduce, after="cse")
try:
    print([p.name for p in tile_pipeline()])
    assert "arith.shl" in str(tile.dump(gather, x, out, n, BLOCK=256, STRIDE=8))  # the undecorated kernel
finally:
    tile.unregister_pass(strength_reduce)
assert "arith.shl" not in str(tile.dump(gather, x, out, n, BLOCK=256, STRIDE=8))

# %% [markdown]
# ## When a pass gets it wrong
#
# Order matters when building IR: an op must be defined before it is used. Here is a buggy
# version that inserts the shift *before* the constant it reads. The verifier catches it the
# moment the pass returns, and the error names the pass, the op and the source line:

# %%
def buggy_strength_reduce(func):
    for op in list(func.walk()):
        if op.name == "arith.mul" and element_type(op.result.type).is_integer:
            x, c = op.operands
            k = power_of_two_exponent(c)
            if k is not None:
                shift = Operation("arith.constant", [], [c.type], {"value": k}, loc=op.loc)
                shl = Operation("arith.shl", [x, shift.result], [op.result.type], loc=op.loc)
                op.parent.insert_before(op, shl)
                op.parent.insert_after(op, shift)  # bug: after the multiply, so after its user
                op.result.replace_all_uses_with(shl.result)
                op.erase()


from tile.opt.pass_manager import PassVerificationError

buggy = tile.jit(extra_passes=[buggy_strength_reduce])(gather.fn)
try:
    tile.dump(buggy, x, out, n, BLOCK=256, STRIDE=8)
    raise AssertionError("the verifier should have refused the IR")
except PassVerificationError as e:
    message = str(e).splitlines()[0]
    print(message)
assert message.startswith("pass 'buggy-strength-reduce' produced invalid IR: 'arith.shl'")
assert "does not dominate" in message

# %% [markdown]
# ## Cache keys
#
# A kernel's cache key hashes its source and everything it calls, and now also the code of its
# extra passes (and the registered ones). Changing the pass recompiles the kernel; a kernel with
# the pass and one without never share a cached binary.

# %%
print(gather.cache_key[:16], fast_gather.cache_key[:16])
assert gather.cache_key != fast_gather.cache_key

# %% [markdown]
# ## Try it yourself
#
# - Unsigned division by a power of two is a right shift (`arith.div` of an unsigned type by
#   `2**k` → `arith.shr`). Why is it not that simple for signed integers? (Hint: `-7 // 2`.)
# - `x * 0` for integers is `0`. Does tile's canonicalize already do this one? Check with
#   `tile.dump(..., stage="passes")` before writing the pass.
# - Look at `tile/opt/combine.py`: it is the same shape as the pass above, with three patterns.
