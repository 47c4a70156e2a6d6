"""The pass manager and the default tile pipeline: records, timings, verifier errors, and
interpreter results that stay the same after optimization."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.ir import Operation, parse_op, print_op
from tile.opt.cse import CSE
from tile.opt.pass_manager import Pass, PassManager, PassVerificationError
from tile.opt.tile_pipeline import tile_passes
from tile.runtime.interpreter import run_kernel


def func(body: str, args: str = "") -> str:
    names = ", ".join(f'"{a.split(":")[0].strip()[1:]}"' for a in args.split(", ")) if args else ""
    inner = "\n".join("  " + line for line in textwrap.dedent(body).strip("\n").splitlines())
    label = f"^bb({args}):\n" if args else ""
    return f'tt.func {{arg_names = [{names}], sym_name = "k"}} {{\n{label}{inner}\n}}'


VECTOR_ADD_ARGS = "%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32"
VECTOR_ADD = """
    %pid = tt.program_id {axis = 0} : i32
    %block = arith.constant {value = 256} : i32
    %start = arith.mul %pid, %block : i32
    %r = tt.arange {end = 256, start = 0} : tensor<256xi32>
    %s = tt.splat %start : tensor<256xi32>
    %offs = arith.add %s, %r : tensor<256xi32>
    %ns = tt.splat %n : tensor<256xi32>
    %mask = arith.cmp %offs, %ns {predicate = "lt"} : tensor<256xi1>
    %xs = tt.splat %x_ptr : tensor<256xptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<256xptr<f32>>
    %x = tt.load %xp, %mask : tensor<256xf32>
    %ys = tt.splat %y_ptr : tensor<256xptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<256xptr<f32>>
    %y = tt.load %yp, %mask : tensor<256xf32>
    %zero = arith.constant {value = 0.0} : tensor<256xf32>
    %xz = arith.select %mask, %x, %zero : tensor<256xf32>
    %one = arith.constant {value = 1.0} : tensor<256xf32>
    %y1 = arith.mul %y, %one : tensor<256xf32>
    %sum = arith.add %xz, %y1 : tensor<256xf32>
    %ns2 = tt.splat %n : tensor<256xi32>
    %mask2 = arith.cmp %offs, %ns2 {predicate = "lt"} : tensor<256xi1>
    %os = tt.splat %out_ptr : tensor<256xptr<f32>>
    %op = tt.addptr %os, %offs : tensor<256xptr<f32>>
    tt.store %op, %sum, %mask2
    tt.return
    """


def test_tile_passes_order() -> None:
    assert [p.name for p in tile_passes()] == ["expand-descriptors", "unroll-loops", "canonicalize", "cse", "licm",
                                               "combine", "canonicalize", "cse", "dce"]


def test_pipeline_on_vector_add() -> None:
    op = parse_op(func(VECTOR_ADD, VECTOR_ADD_ARGS))
    pm = PassManager(tile_passes(), record=True)
    pm.run(op)
    assert print_op(op) == func("""
        %pid = tt.program_id {axis = 0} : i32
        %block = arith.constant {value = 256} : i32
        %start = arith.mul %pid, %block : i32
        %r = tt.arange {end = 256, start = 0} : tensor<256xi32>
        %s = tt.splat %start : tensor<256xi32>
        %offs = arith.add %s, %r : tensor<256xi32>
        %ns = tt.splat %n : tensor<256xi32>
        %mask = arith.cmp %offs, %ns {predicate = "lt"} : tensor<256xi1>
        %xs = tt.splat %x_ptr : tensor<256xptr<f32>>
        %xp = tt.addptr %xs, %offs : tensor<256xptr<f32>>
        %ys = tt.splat %y_ptr : tensor<256xptr<f32>>
        %yp = tt.addptr %ys, %offs : tensor<256xptr<f32>>
        %y = tt.load %yp, %mask : tensor<256xf32>
        %zero = arith.constant {value = 0.0} : tensor<256xf32>
        %xz = tt.load %xp, %mask, %zero : tensor<256xf32>
        %sum = arith.add %xz, %y : tensor<256xf32>
        %os = tt.splat %out_ptr : tensor<256xptr<f32>>
        %op = tt.addptr %os, %offs : tensor<256xptr<f32>>
        tt.store %op, %sum, %mask
        tt.return
        """, VECTOR_ADD_ARGS)
    assert [name for name, _ in pm.records] == [p.name for p in tile_passes()]
    assert pm.records[-1][1] == print_op(op)
    assert "%one" not in pm.records[2][1] and "%mask2" in pm.records[2][1]  # canonicalize ran, cse had not
    assert set(pm.timings) == {"expand-descriptors", "unroll-loops", "canonicalize", "cse", "licm", "combine", "dce"}
    assert all(t >= 0 for t in pm.timings.values())


class _BreakTerminator(Pass):
    name = "break-terminator"

    def run(self, func: Operation) -> None:
        func.regions[0].block.ops[-1].erase()


def test_pass_manager_names_the_pass_that_broke_the_ir() -> None:
    op = parse_op(func(VECTOR_ADD, VECTOR_ADD_ARGS))
    pm = PassManager([*tile_passes()[:2], _BreakTerminator()])
    with pytest.raises(PassVerificationError) as info:
        pm.run(op)
    message = str(info.value)
    assert message.startswith("pass 'break-terminator' produced invalid IR: 'tt.func': function must end in tt.return")
    assert "tt.store %op, %sum, %mask" in message  # the IR text is included
    assert info.value.pass_name == "break-terminator"


def test_pass_manager_checks_the_input_and_can_skip_verification() -> None:
    op = parse_op(func("%a = arith.add %x, %x : i32\ntt.print %a", "%x: i32"))
    with pytest.raises(PassVerificationError, match="the input IR is invalid"):
        PassManager(tile_passes()).run(op)
    PassManager([CSE()], verify_each=False).run(op)


def test_pipeline_is_idempotent() -> None:
    op = parse_op(func(VECTOR_ADD, VECTOR_ADD_ARGS))
    PassManager(tile_passes()).run(op)
    once = print_op(op)
    PassManager(tile_passes()).run(op)
    assert print_op(op) == once


# ------------------------------------------------- the interpreter agrees before and after


@tile.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 1.0 + y + 0 * 2, mask=mask)


@tile.jit
def _softmax(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


@tile.jit
def _int_loops(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    count = 0
    for i in range(ITERS):
        v = tl.load(x_ptr + offs)
        acc += (v + (7 * 3 - 21)) ^ (i * 3)
        count += 1
        if i == 0:
            acc = acc - (i + 1)
    for _ in range(5, 2):
        acc += 1
    tl.store(out_ptr + offs, acc + n // 3 + (n & 0) * 5)


@tile.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b) * (2.0 * 0.5)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _run_both(kernel, grid: tuple[int, int, int], args: tuple, **constexprs) -> tuple[list, list, str]:
    """Outputs of the kernel's IR before and after tile_passes, and the optimized IR text."""
    spec, runtime = kernel.specialize(args, constexprs)
    outputs = []
    for optimize in (False, True):
        func_op = kernel.build_ir(spec)
        if optimize:
            PassManager(tile_passes()).run(func_op)
        values = [a.copy() if isinstance(a, np.ndarray) else a for a in runtime]
        run_kernel(func_op, grid, values, "k")
        outputs.append([a for a in values if isinstance(a, np.ndarray)])
    return outputs[0], outputs[1], print_op(func_op)


rng = np.random.default_rng(1234)


def test_interpreter_agrees_on_vector_add() -> None:
    n = 1000
    before, after, text = _run_both(_add, (8, 1, 1), (rng.random(n, np.float32) + 0.5, rng.random(n, np.float32) + 0.5,
                                                      np.full(n, np.nan, np.float32), n), BLOCK=128)
    assert not any("arith.mul" in line and "f32" in line for line in text.splitlines())  # x * 1.0 folded
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


def test_interpreter_agrees_on_softmax() -> None:
    x = rng.standard_normal((37, 100)).astype(np.float32)
    before, after, _ = _run_both(_softmax, (37, 1, 1), (np.full_like(x, np.nan), x, 100, 100), BLOCK=128)
    np.testing.assert_array_equal(before[0], after[0])


def test_interpreter_agrees_on_integer_loops() -> None:
    x = rng.integers(-100, 100, 64).astype(np.int32)
    x[x == 0] = 3
    before, after, text = _run_both(_int_loops, (1, 1, 1), (x, np.full(64, 0x0BADBEEF, np.int32), 10),
                                    ITERS=4, BLOCK=64)
    assert text.count("scf.for") == 1  # the zero-trip loop is gone, the counter too
    np.testing.assert_array_equal(before[1], after[1])


def test_interpreter_agrees_on_matmul() -> None:
    """The dot/add fusion rounds once instead of twice: results agree to float32 precision."""
    M, N, K = 40, 48, 70
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    before, after, text = _run_both(_matmul, (3, 3, 1), (a, b, np.full((M, N), np.nan, np.float32), M, N, K),
                                    BM=16, BN=16, BK=16)
    assert "arith.add %acc" not in text and "tt.dot %a, %b, %acc_2" in text
    np.testing.assert_allclose(after[2], before[2], rtol=1e-5, atol=1e-5)
