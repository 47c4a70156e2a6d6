"""tl.range's options: per-loop `num_stages` (the software pipeline's depth for that loop, over
the kernel's num_stages) and `loop_unroll_factor` (the body repeated, remainder iterations in a
second loop), checked in the IR and against NumPy on the interpreter and the PTX emulator."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.ir import Operation
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes


@tile.jit
def staged_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  LOOP_STAGES: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=LOOP_STAGES):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def _matmul_args(m=32, n=32, k=128):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.full((m, n), np.nan, np.float32)


def _tile_ir(kernel, *args, **constexprs) -> Operation:
    """The tile IR of `kernel` for these arguments after the tile passes."""
    spec, _ = kernel.specialize(list(args), constexprs)
    func = kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    return func


def _gpu_ir(kernel, *args, target="sm_80", num_stages=3, **constexprs) -> Operation:
    """... and after the gpu passes."""
    func = _tile_ir(kernel, *args, **constexprs)
    PassManager(gpu_passes(4, target, num_stages=num_stages)).run(func)
    return func


@pytest.mark.parametrize("loop_stages, buffers", [(2, 2), (4, 4), (1, None)])
def test_a_loop_num_stages_overrides_the_kernels(loop_stages, buffers):
    a, b, c = _matmul_args()
    func = _gpu_ir(staged_matmul, a, b, c, 128, BM=32, BN=32, BK=32, LOOP_STAGES=loop_stages, num_stages=3)
    rings = [op for op in func.walk() if op.name == "gpu.local_alloc" and op.result.type.rank == 3]
    copies = [op for op in func.walk() if op.name == "gpu.async_copy"]
    if buffers is None:  # one stage: the loop keeps its synchronous staging
        assert not rings and not copies
    else:
        assert rings and all(op.result.type.shape[0] == buffers for op in rings)


@pytest.mark.parametrize("target", ["interpreter", "sm_80"])
@pytest.mark.parametrize("loop_stages", [1, 2, 4])
def test_per_loop_stages_compute_the_product(target, loop_stages):
    a, b, c = _matmul_args()
    run = staged_matmul if target == "interpreter" else tile.emulate(staged_matmul, target=target)
    run[(1,)](a, b, c, 128, BM=32, BN=32, BK=32, LOOP_STAGES=loop_stages, num_stages=3)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


@tile.jit
def unrolled_sum(x_ptr, out_ptr, lo, hi, STEP: tl.constexpr, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    count = 0
    for i in tl.range(lo, hi, STEP, loop_unroll_factor=FACTOR):
        # order-sensitive: the iterations must run in order; row i + SHIFT keeps negative i inside x
        acc = acc * 0.5 + tl.load(x_ptr + (i + SHIFT) * BLOCK + offs)
        count += 1
    tl.store(out_ptr + offs, acc + count)


SHIFT = 8


def _unrolled_reference(x: np.ndarray, lo: int, hi: int, step: int) -> np.ndarray:
    acc = np.zeros(x.shape[1])
    count = 0
    for i in range(lo, hi, step):
        acc = acc * 0.5 + x[i + SHIFT].astype(np.float64)
        count += 1
    return acc + count


def _loops(kernel, *args, **constexprs) -> list[Operation]:
    return [op for op in _tile_ir(kernel, *args, **constexprs).walk() if op.name == "scf.for"]


def test_unrolled_loop_ir():
    """A main loop stepping FACTOR * STEP with FACTOR copies of the body, then the remainder loop."""
    x = np.zeros((64, 16), np.float32)
    out = np.zeros(16, np.float32)
    main, rest = _loops(unrolled_sum, x, out, 0, 40, STEP=3, FACTOR=4, BLOCK=16)
    assert main.operand(2).owner_op.attrs["value"] == 12 and rest.operand(2).owner_op.attrs["value"] == 3
    loads = lambda loop: [op for op in loop.regions[0].block.ops if op.name == "tt.load"]  # noqa: E731
    assert len(loads(main)) == 4 and len(loads(rest)) == 1
    assert "loop_unroll_factor" not in main.attrs and "loop_unroll_factor" not in rest.attrs
    assert list(rest.operands[3:]) == list(main.results)


def test_factor_one_keeps_the_loop():
    x = np.zeros((64, 16), np.float32)
    (loop,) = _loops(unrolled_sum, x, np.zeros(16, np.float32), 0, 40, STEP=3, FACTOR=1, BLOCK=16)
    assert len([op for op in loop.regions[0].block.ops if op.name == "tt.load"]) == 1


@pytest.mark.parametrize("target", ["interpreter", "sm_80"])
@pytest.mark.parametrize("lo, hi, step, factor", [(0, 40, 3, 4), (5, 37, 2, 2), (0, 8, 1, 8), (7, 9, 1, 4),
                                                  (9, 7, 1, 3), (0, 0, 2, 2), (-6, 11, 5, 3)])
def test_unrolled_loops_run_every_iteration_in_order(target, lo, hi, step, factor):
    x = np.random.default_rng(abs(lo) * 100 + hi).standard_normal((64, 16)).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    run = unrolled_sum if target == "interpreter" else tile.emulate(unrolled_sum, target=target)
    run[(1,)](x, out, lo, hi, STEP=step, FACTOR=factor, BLOCK=16)
    np.testing.assert_allclose(out, _unrolled_reference(x, lo, hi, step), rtol=1e-6)
