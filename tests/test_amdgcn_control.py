"""scf.while on gfx942: a loop under EXEC (lanes leave when their condition fails, the loop
ends when none is left), run on the wave model against NumPy: a loop with a per-lane trip
count, one with a uniform count, and a spin lock on an atomic (compare-and-swap, exchange)."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import UnsupportedOnTarget, assemble, compile_amdgcn
from tile.compiler import compile_kernel
from tile.emulator.amdgcn_machine import run_amdgcn

from amdgcn_util import instructions, named
from tutorial_util import load_tutorial

RNG = np.random.default_rng(3)


def build(kernel, args, num_warps=2, **constexprs):
    spec, _ = kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": 1, "maxnreg": None}
    simt = compile_kernel(kernel, spec, options, "gfx942", until="amdgcn").func
    return compile_amdgcn(simt, "gfx942")


@tile.jit
def rows_kernel(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    """Sums n_rows rows of x; the row counter lives in the loop (a scalar per thread)."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    row = 0
    while row < n_rows:
        acc += tl.load(x_ptr + row * BLOCK + offs)
        row += 1
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("n_rows", [0, 1, 5])
def test_while_with_a_uniform_trip_count(n_rows):
    x = RNG.standard_normal((max(n_rows, 1), 128)).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    compiled = build(rows_kernel, [x, out, n_rows], BLOCK=128)
    assert "s_cbranch_execz" in compiled.text and b"ELF" in assemble(compiled.text, "gfx942")[:4]
    run_amdgcn(compiled.text, 1, named(rows_kernel, [x, out, n_rows]))
    np.testing.assert_allclose(out, x[:n_rows].astype(np.float64).sum(0), rtol=1e-6, atol=1e-6)


@tile.jit
def collatz_kernel(x_ptr, steps_ptr):
    """One program per value: the Collatz steps of x, a trip count that differs between
    programs (tile's while conditions are scalars: the lanes of one program leave together)."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    while x != 1:
        x = tl.where(x % 2 == 0, x // 2, 3 * x + 1)
        steps += 1
    tl.store(steps_ptr + pid, steps)


def _collatz(x: int) -> int:
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def test_while_with_a_per_program_trip_count():
    x = RNG.integers(1, 200, 6).astype(np.int32)
    steps = np.full(6, -1, np.int32)
    compiled = build(collatz_kernel, [x, steps], num_warps=1)
    run_amdgcn(compiled.text, 6, named(collatz_kernel, [x, steps]))
    assert list(steps) == [_collatz(int(v)) for v in x]


@tile.jit
def locked_kernel(lock_ptr, total_ptr, x_ptr):
    """Each program adds its value under a spin lock (acquire with compare-and-swap, release
    with exchange): tutorial-style layer-norm backward locking."""
    pid = tl.program_id(0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(total_ptr, tl.load(total_ptr) + tl.load(x_ptr + pid))
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock():
    x = RNG.integers(-100, 100, 5).astype(np.int32)
    lock, total = np.zeros(1, np.int32), np.array([7], np.int32)
    compiled = build(locked_kernel, [lock, total, x])
    text = instructions(compiled.text)
    assert any(line.startswith("global_atomic_cmpswap") for line in text)
    run_amdgcn(compiled.text, 5, named(locked_kernel, [lock, total, x]))
    assert total[0] == 7 + x.sum() and lock[0] == 0


@tile.jit
def dot_in_while_kernel(a_ptr, c_ptr, count_ptr, n):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    acc = tl.zeros((32, 32), dtype=tl.float32)
    while tl.atomic_add(count_ptr, 1) < n:
        acc += tl.dot(a, a)
        a += 1.0   # loop-variant: the dot stays in the loop
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], acc)


def test_mfma_in_a_while_loop_is_refused_by_name():
    """A condition the wave-uniformity analysis cannot prove the same in every lane (an atomic's
    result); a dot under a uniform one runs (test_amdgcn_gpu_kernels: the grouped GEMM)."""
    a, c = np.ones((32, 32), np.float16), np.zeros((32, 32), np.float32)
    with pytest.raises(UnsupportedOnTarget, match=r"simt\.mfma under scf\.while \(the matrix core needs every lane"):
        build(dot_in_while_kernel, [a, c, np.zeros(1, np.int32), 2], num_warps=4)


@tile.jit
def flag_kernel(x_ptr, out_ptr):
    go = tl.load(x_ptr) > 0
    n = 0
    while go:
        n += 1
        go = n < 3
    tl.store(out_ptr, n)


def test_while_carrying_an_i1_is_refused_by_name():
    with pytest.raises(UnsupportedOnTarget, match=r"scf\.while with i1 loop-carried values"):
        build(flag_kernel, [np.ones(1, np.int32), np.zeros(1, np.int32)], num_warps=1)


def _tutorial(name: str):
    return load_tutorial(name, "tutorial")


@pytest.mark.parametrize("rows, n_cols, block, num_warps, groups", [(6, 100, 128, 2, 2), (5, 300, 512, 4, 3)])
def test_tutorial_layer_norm_backward_with_its_lock(rows, n_cols, block, num_warps, groups):
    """Tutorial 09's backward: dx and partial dw/db sums under per-group spin locks (scf.while
    around a compare-and-swap, exchanges, a barrier), then the column sums, against NumPy.
    With two waves per program the wave model (waves in turns between barriers) found a race,
    fixed in the tutorial by a barrier: thread 0's atomic_xchg(Count, 1) could land before the
    other wave's tl.load(Count), which then added the uninitialised partial sums."""
    tutorial = _tutorial("09_layer_norm_backward")
    x = RNG.standard_normal((rows, n_cols)).astype(np.float32)
    w, b, dy = (RNG.standard_normal(shape).astype(np.float32) for shape in (n_cols, n_cols, (rows, n_cols)))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1).astype(np.float32)
    rstd = (1 / np.sqrt(x64.var(axis=1) + 1e-5)).astype(np.float32)
    locks = np.zeros(2 * groups, np.int32)
    partial_dw, partial_db = (np.full((groups, n_cols), np.nan, np.float32) for _ in range(2))
    dx = np.full((rows, n_cols), np.nan, np.float32)
    args = [dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, n_cols, n_cols]
    compiled = build(tutorial.layer_norm_bwd_dx_fused_kernel, args, num_warps=num_warps, GROUP_SIZE_M=groups,
                     BLOCK_SIZE_N=block)
    assert b"ELF" in assemble(compiled.text, "gfx942")[:4]
    run_amdgcn(compiled.text, rows, named(tutorial.layer_norm_bwd_dx_fused_kernel, args))
    dw, db = np.full(n_cols, np.nan, np.float32), np.full(n_cols, np.nan, np.float32)
    sums = [partial_dw, partial_db, dw, db, groups, n_cols]
    # the tutorial's 32 x 128 column blocks need 104 SGPRs here (no spilling yet): 16 x 128
    columns = build(tutorial.layer_norm_bwd_dwdb_kernel, sums, num_warps=4, BLOCK_SIZE_M=16, BLOCK_SIZE_N=128)
    run_amdgcn(columns.text, -(-n_cols // 128), named(tutorial.layer_norm_bwd_dwdb_kernel, sums))
    _, dx_ref, dw_ref, db_ref = tutorial.reference(x, w, b, dy)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, db_ref, rtol=1e-4, atol=1e-4)
    assert list(locks[:groups]) == [0] * groups and list(locks[groups:]) == [1] * groups


@tile.jit
def walk_kernel(x_ptr, out_ptr, steps, stride, BLOCK: tl.constexpr, READ_AFTER: tl.constexpr):
    """Walks per-lane pointers through x, `stride` elements a step. READ_AFTER: the old pointer
    is read again after the advance (so it cannot be advanced in its own register)."""
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(steps):
        if READ_AFTER:
            advanced = ptrs + stride
            acc += tl.load(advanced) - tl.load(ptrs)
        else:
            acc += tl.load(ptrs)
            advanced = ptrs + stride
        ptrs = advanced
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("read_after", [False, True])
def test_loop_carried_pointers_advance_in_their_own_registers(read_after):
    """A carried pointer read nowhere after its advance is advanced in place (its add writes
    the register it reads, nothing copies it at the yield); read again after, it is not."""
    block, steps, stride = 64, 5, 64
    x = RNG.standard_normal(block * (steps + 1)).astype(np.float32)
    out = np.full(block, np.nan, np.float32)
    args = [x, out, steps, stride]
    compiled = build(walk_kernel, args, BLOCK=block, READ_AFTER=read_after)
    lines = instructions(compiled.text)
    body = lines[lines.index(".Lloop1:") + 1:lines.index("s_cbranch_scc1 .Lloop1")]
    in_place = [line for line in body if line.startswith("v_add_co_u32")
                and line.split()[1].rstrip(",") == line.split()[3].rstrip(",")]
    assert bool(in_place) != read_after
    run_amdgcn(compiled.text, 1, named(walk_kernel, args))
    rows = x.reshape(steps + 1, block)
    want = (rows[steps] - rows[0]) if read_after else rows[:steps].sum(axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@tile.jit
def late_offsets_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    spread = offs * 3 + 1   # read only by the store after the loop
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for step in range(steps):
        acc += tl.load(x_ptr + step * BLOCK + offs)
    tl.store(out_ptr + spread, acc)


def test_values_used_only_after_a_loop_are_computed_after_it():
    """isel.sunk_past_loops: the store's offsets are computed after the loop, not held across it."""
    block, steps = 64, 3
    x = RNG.standard_normal(block * steps).astype(np.float32)
    out = np.zeros(3 * block + 1, np.float32)
    args = [x, out, steps]
    compiled = build(late_offsets_kernel, args, BLOCK=block)
    source = open(__file__).read().splitlines()
    spread_line = next(k + 1 for k, line in enumerate(source) if "spread = offs * 3 + 1" in line)
    lines = compiled.text.splitlines()
    end = next(k for k, line in enumerate(lines) if line.startswith(".Lloop1_end:"))
    spread = [k for k, line in enumerate(lines) if line.rstrip().endswith(f"test_amdgcn_control.py:{spread_line}")]
    assert spread and min(spread) > end
    run_amdgcn(compiled.text, 1, named(late_offsets_kernel, args))
    want = np.zeros_like(out)
    want[np.arange(block) * 3 + 1] = x.reshape(steps, block).sum(axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
