"""tl.dot on gfx1100 through WMMA: accelerate-dot's choice of #wmma / #wmma_op (IR text in and
out), and dots of several shapes, warp counts and operand types compiled to AMDGCN, assembled by
llvm-mc -mcpu=gfx1100 and run on the emulator's wave machine against NumPy in float64; the dots
WMMA cannot take (i8, f32, an f16 accumulator, shapes that are not whole 16 x 16 tiles) stay on
FMA and still compute the right result. Waves beyond a small result's tiles repeat them."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from amdgcn_util import named, needs_llvm
from codegen_util import func as gpu_func
from codegen_util import lower
from tile.codegen.amdgcn import assemble, compile_amdgcn
from tile.codegen.lower_core import LoweringError
from tile.codegen.target import target_facts
from tile.compiler import compile_kernel
from tile.emulator.amdgcn_machine import run_amdgcn
from tile.ir import parse_op, print_op, verify
from tile.ir.dot_layouts import fma_operand_layout
from tile.ir.gpu_ops import verify_layouts
from tile.ir.layouts import BlockedLayout
from tile.ir.wmma_layouts import WmmaLayout, WmmaOperandLayout
from tile.opt.accelerate_dot import AccelerateDot
from tile.opt.to_gpu import ConvertToGpu

WMMA = {"f16": "v_wmma_f32_16x16x16_f16", "bf16": "v_wmma_f32_16x16x16_bf16"}


# ------------------------------------------------------------------------- accelerate-dot

def dot_func(m: int, n: int, k: int, el: str, acc: str) -> str:
    return textwrap.dedent(f"""\
        tt.func {{sym_name = "k"}} {{
        ^bb(%a: tensor<{m}x{k}x{el}>, %b: tensor<{k}x{n}x{el}>, %c: tensor<{m}x{n}x{acc}>,
            %out: tensor<{m}x{n}xptr<{acc}>>):
          %d = tt.dot %a, %b, %c {{input_precision = "tf32", max_num_imprecise_acc = 0}} : tensor<{m}x{n}x{acc}>
          tt.store %out, %d
          tt.return
        }}""")


def accelerated(text: str, num_warps: int, target: str = "gfx1100"):
    func = parse_op(text)
    for p in (ConvertToGpu(num_warps, target, target_facts(target).warp_size), AccelerateDot()):
        p.run(func)
        verify(func)
        verify_layouts(func)
    return func


def test_accelerate_dot_puts_f16_on_wmma():
    """The docstring's example: A and B to #wmma_op, the accumulator to #wmma and back."""
    out = print_op(accelerated(dot_func(64, 64, 32, "f16", "f32"), 4))
    body = [line.strip() for line in out.splitlines()[2:-1]]
    w = "#wmma<wpc = [2, 2]>"
    assert body[0] == f"%0 = gpu.convert_layout %a : tensor<64x32xf16, #wmma_op<op_idx = 0, parent = {w}>>"
    assert body[1] == f"%1 = gpu.convert_layout %b : tensor<32x64xf16, #wmma_op<op_idx = 1, parent = {w}>>"
    assert body[2] == f"%2 = gpu.convert_layout %c : tensor<64x64xf32, {w}>"
    assert body[3] == (f'%d = tt.dot %0, %1, %2 {{input_precision = "tf32", max_num_imprecise_acc = 0}} : '
                       f"tensor<64x64xf32, {w}>")
    assert body[4].startswith("%3 = gpu.convert_layout %d : tensor<64x64xf32, #blocked<")
    assert body[5:] == ["tt.store %out, %3", "tt.return"]


@pytest.mark.parametrize("m, n, k, el, acc, warps, expect", [
    (16, 16, 16, "f16", "f32", 1, (1, 1)),
    (64, 64, 32, "bf16", "f32", 4, (2, 2)),
    (128, 32, 16, "f16", "f32", 8, (8, 1)),
    (32, 128, 64, "bf16", "f32", 8, (2, 4)),
    (16, 128, 16, "f16", "f32", 8, (1, 8)),
    (128, 128, 128, "f16", "f32", 2, (2, 1)),
    (16, 16, 16, "f16", "f32", 2, (1, 2)),   # the second wave repeats the first's one tile
    (32, 16, 16, "f16", "f32", 4, (2, 2)),   # attention's q @ k.T: two tiles, four waves
    (64, 64, 8, "f16", "f32", 4, None),      # K below one instruction's 16
    (64, 64, 32, "f16", "f16", 4, None),     # an f16 accumulator: WMMA here writes f32
    (64, 64, 32, "f32", "f32", 4, None),
    (64, 64, 32, "i8", "i32", 4, None),
    (64, 64, 32, "f64", "f64", 4, None),
])
def test_wmma_or_fma(m, n, k, el, acc, warps, expect):
    func = accelerated(dot_func(m, n, k, el, acc), warps)
    dot = next(op for op in func.walk() if op.name == "tt.dot")
    layout = dot.result.type.layout
    a, b = (v.type.layout for v in dot.operands[:2])
    if expect is None:
        assert isinstance(layout, BlockedLayout)
        assert (a, b) == (fma_operand_layout(layout, 0, k), fma_operand_layout(layout, 1, k))
    else:
        assert layout == WmmaLayout(expect)
        assert (a, b) == (WmmaOperandLayout(0, layout), WmmaOperandLayout(1, layout))


def invariant_a_loop(m: int, n: int, k: int) -> str:
    """A loop whose dot takes A from outside it (attention's Q) and B from inside."""
    return textwrap.dedent(f"""\
        tt.func {{sym_name = "k"}} {{
        ^bb(%a: tensor<{m}x{k}xf16>, %bp: tensor<{k}x{n}xptr<f16>>, %out: tensor<{m}x{n}xptr<f32>>, %steps: i32):
          %c0 = arith.constant {{value = 0}} : i32
          %c1 = arith.constant {{value = 1}} : i32
          %zero = arith.constant {{value = 0.0}} : tensor<{m}x{n}xf32>
          %r = scf.for %c0, %steps, %c1, %zero : tensor<{m}x{n}xf32> {{
          ^bb(%i: i32, %acc: tensor<{m}x{n}xf32>):
            %b = tt.load %bp : tensor<{k}x{n}xf16>
            %d = tt.dot %a, %b, %acc {{input_precision = "tf32", max_num_imprecise_acc = 0}} : tensor<{m}x{n}xf32>
            scf.yield %d
          }}
          tt.store %out, %r
          tt.return
        }}""")


@pytest.mark.parametrize("m, k, hoisted", [
    (64, 64, True),      # a wave's A: 2 tile rows x 4 k-steps x 8 words = 64 registers, the budget
    (256, 64, False),    # 4 waves on 256 rows: 4 tile rows each, 128 registers: read from shared memory
                         # in every iteration instead
])
def test_a_loop_invariant_a_is_converted_once_before_the_loop_when_it_fits(m, k, hoisted):
    out = print_op(accelerated(invariant_a_loop(m, 64, k), 4))
    conversion = out.index("gpu.convert_layout %a : tensor<")
    assert "#wmma_op<op_idx = 0" in out[conversion:].splitlines()[0]
    assert (conversion < out.index("scf.for")) == hoisted


def test_other_amd_targets_keep_their_own_choice():
    """gfx942 puts the same dot on MFMA, not WMMA."""
    func = accelerated(dot_func(64, 64, 32, "f16", "f32"), 4, "gfx942")
    dot = next(op for op in func.walk() if op.name == "tt.dot")
    assert type(dot.result.type.layout).__name__ == "MfmaLayout"


# ------------------------------------------------------------------------- dots on the emulator

@tile.jit
def loop_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    BLOCK_K: tl.constexpr, DTYPE: tl.constexpr):
    """out = A @ B + C, A and B cast to DTYPE, K in steps of BLOCK_K accumulated in f32."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :]).to(DTYPE)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :]).to(DTYPE)
        acc = tl.dot(a, b, acc)
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc + c)


@tile.jit
def one_dot_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """out = A @ B for operands loaded as they are (f16, bf16, f32 or i8), no loop."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def compiled_for_gfx1100(kernel, args, num_warps, **constexprs):
    spec, _ = kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": 1, "maxnreg": None}
    compiled = compile_amdgcn(compile_kernel(kernel, spec, options, "gfx1100", until="amdgcn").func, "gfx1100")
    assert b"ELF" in assemble(compiled.text, "gfx1100")[:4]
    return compiled.text


def operands(dtype: str, shapes, rng):
    """Random arrays exact in `dtype`: (the arrays passed to the kernel, their float64 values)."""
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    if dtype == "bf16":   # f32 arrays that bf16 holds exactly: the kernel's cast keeps them
        arrays = [(x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for x in arrays]
        return arrays, [x.astype(np.float64) for x in arrays]
    if dtype == "i8":
        arrays = [rng.integers(-100, 100, shape).astype(np.int8) for shape in shapes]
        return arrays, [x.astype(np.float64) for x in arrays]
    passed = [x.astype(np.float16) if dtype == "f16" else x for x in arrays]
    return passed, [x.astype(np.float64) for x in passed]


def wmma_count(text: str, mnemonic: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip().startswith(mnemonic))


@needs_llvm
@pytest.mark.parametrize("m, n, k, block_k, num_warps, dtype", [
    (16, 16, 16, 16, 1, "f16"),
    (32, 32, 64, 32, 1, "bf16"),
    (32, 64, 64, 32, 2, "f16"),
    (64, 32, 32, 16, 2, "bf16"),
    (64, 64, 128, 64, 4, "f16"),
    (128, 64, 64, 32, 4, "bf16"),
    (64, 128, 32, 16, 8, "f16"),
    (16, 128, 128, 128, 8, "bf16"),
    (128, 16, 32, 32, 8, "f16"),
    (32, 16, 64, 32, 4, "f16"),      # waves past the tiles repeat them
    (16, 16, 32, 16, 8, "bf16"),
])
def test_dot_in_a_k_loop_runs_on_wmma(m, n, k, block_k, num_warps, dtype):
    """Each wave issues (its tiles) x (k-steps of a block) WMMAs in the loop body; the result,
    accumulated over the K loop in f32 and stored over a NaN-poisoned output, matches float64."""
    rng = np.random.default_rng(m * n + k + num_warps)
    (a, b), (a64, b64) = operands(dtype, [(m, k), (k, n)], rng)
    c = rng.standard_normal((m, n)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    args = [a, b, c, out]
    text = compiled_for_gfx1100(loop_dot_kernel, args, num_warps, M=m, N=n, K=k, BLOCK_K=block_k,
                                DTYPE=tl.bfloat16 if dtype == "bf16" else tl.float16)
    assert wmma_count(text, WMMA[dtype]) == max(1, m * n // (256 * num_warps)) * block_k // 16
    assert "v_fma_f32" not in text
    run_amdgcn(text, 1, named(loop_dot_kernel, args))
    np.testing.assert_allclose(out, a64 @ b64 + c, rtol=1e-5, atol=1e-4)


@needs_llvm
@pytest.mark.parametrize("m, n, k, num_warps, dtype, mnemonic", [
    (32, 32, 32, 2, "f16", WMMA["f16"]),
    (16, 16, 16, 2, "f16", WMMA["f16"]),       # both waves compute the one tile
    (32, 16, 32, 4, "f16", WMMA["f16"]),       # two tiles, four waves
    (16, 16, 8, 1, "f16", "v_fma_f32"),        # K below one instruction's 16
    (32, 32, 16, 2, "f32", "v_fma_f32"),
    (32, 32, 32, 2, "i8", "v_mul_lo_u32"),
])
def test_one_dot_on_wmma_or_fma(m, n, k, num_warps, dtype, mnemonic):
    rng = np.random.default_rng(m + k + len(dtype))
    (a, b), (a64, b64) = operands(dtype, [(m, k), (k, n)], rng)
    out = np.full((m, n), -1 if dtype == "i8" else np.nan, np.int32 if dtype == "i8" else np.float32)
    args = [a, b, out]
    text = compiled_for_gfx1100(one_dot_kernel, args, num_warps, M=m, N=n, K=k)
    assert any(line.strip().startswith(mnemonic) for line in text.splitlines())
    assert ("v_wmma" in text) == mnemonic.startswith("v_wmma")
    run_amdgcn(text, 1, named(one_dot_kernel, args))
    if dtype == "i8":
        np.testing.assert_array_equal(out, (a64 @ b64).astype(np.int32))
    else:
        np.testing.assert_allclose(out, a64 @ b64, rtol=1e-5, atol=1e-4)


@needs_llvm
@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.sampled_from([16, 32, 64]), st.sampled_from([16, 32, 64]), st.sampled_from([16, 32, 64]),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from(["f16", "bf16"]), st.integers(0, 2 ** 16))
def test_any_whole_tile_dot_runs_on_wmma(m, n, block_k, num_warps, dtype, seed):
    """Any f16/bf16 dot of whole 16 x 16 tiles, on any number of waves, two K blocks: WMMA only,
    and A @ B + C in float64. (At most 64 accumulator values a lane: one wave on 64 x 64 holds
    128, and C's 128 beside them in the epilogue pass the 256 VGPRs.)"""
    assume(m * n <= 64 * 32 * num_warps)
    k = 2 * block_k
    rng = np.random.default_rng(seed)
    (a, b), (a64, b64) = operands(dtype, [(m, k), (k, n)], rng)
    c = rng.standard_normal((m, n)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    args = [a, b, c, out]
    text = compiled_for_gfx1100(loop_dot_kernel, args, num_warps, M=m, N=n, K=k, BLOCK_K=block_k,
                                DTYPE=tl.bfloat16 if dtype == "bf16" else tl.float16)
    assert wmma_count(text, WMMA[dtype]) > 0 and "v_fma_f32" not in text
    run_amdgcn(text, 1, named(loop_dot_kernel, args))
    np.testing.assert_allclose(out, a64 @ b64 + c, rtol=1e-5, atol=1e-4)


def test_wmma_dot_with_other_operand_layouts_is_a_lowering_error():
    """A #wmma result needs its operands in #wmma_op of it: IR that gives them another layout
    (here the operands of another wave grid) is refused by name, not lowered to wrong code."""
    result, other = WmmaLayout((1, 1)), WmmaLayout((2, 1))
    body = f"""
  %a = arith.constant {{value = 1.0}} : tensor<32x16xf16, {WmmaOperandLayout(0, other)}>
  %b = arith.constant {{value = 1.0}} : tensor<16x32xf16, {WmmaOperandLayout(1, result)}>
  %c = arith.constant {{value = 0.0}} : tensor<32x32xf32, {result}>
  %d = tt.dot %a, %b, %c : tensor<32x32xf32, {result}>
  %ps = tt.splat %p : tensor<32x32xptr<f32>, {result}>
  tt.store %ps, %d"""
    with pytest.raises(LoweringError, match=r"operand A of a WMMA dot must have layout #wmma_op<op_idx = 0, "
                                            r"parent = #wmma<wpc = \[1, 1\]>>, not #wmma_op<op_idx = 0, parent = "
                                            r"#wmma<wpc = \[2, 1\]>>"):
        lower(gpu_func("dot", [("p", "ptr<f32>")], body, num_warps=1, target="gfx1100"))


@tile.jit
def row_softmax_of_dot_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """out = exp(s - rowmax(s)) / rowsum(...) of s = A @ B: attention's row-wise work on a dot."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    s = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    p = tl.exp(s - tl.max(s, 1)[:, None])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], p / tl.sum(p, 1)[:, None])


@needs_llvm
@pytest.mark.parametrize("m, n, num_warps", [(32, 16, 4), (64, 64, 4), (16, 32, 2)])
def test_row_reductions_of_a_dot_stay_in_its_layout(m, n, num_warps):
    """The row max and sum of a #wmma result reduce a #slice of it (no trip through shared
    memory to a blocked layout and back), and compute the softmax NumPy does."""
    k = 32
    rng = np.random.default_rng(m + n)
    a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((m, k), (k, n)))
    out = np.full((m, n), np.nan, np.float32)
    args = [a, b, out]
    gpu = str(tile.dump(row_softmax_of_dot_kernel, *args, M=m, N=n, K=k, stage="gpu", target="gfx1100",
                        num_warps=num_warps))
    reductions = [line for line in gpu.splitlines() if " = tt.reduce " in line]
    assert len(reductions) == 2 and all("#slice<dim = 1, parent = #wmma<" in line for line in reductions)
    text = compiled_for_gfx1100(row_softmax_of_dot_kernel, args, num_warps, M=m, N=n, K=k)
    run_amdgcn(text, 1, named(row_softmax_of_dot_kernel, args))
    s = a.astype(np.float64) @ b
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


@needs_llvm
@pytest.mark.parametrize("num_warps, num_stages, block", [(4, 1, (32, 64, 16)), (4, 3, (32, 32, 32)),
                                                          (8, 2, (64, 32, 16)), (2, 3, (32, 32, 32))])
def test_tutorial_matmul_with_masks_pipelining_and_activation(num_warps, num_stages, block):
    """Tutorial 04's kernel (grouped tile order, masked K tail, software pipelining, leaky ReLU,
    f16 output) at a shape its tiles do not divide, on WMMA."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "tutorials" / "04_matrix_multiplication.py"
    spec = importlib.util.spec_from_file_location("tutorial_04", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.matmul_kernel.fn
    m, n, k = 40, 72, 56
    rng = np.random.default_rng(num_warps * num_stages)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    names = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
             "stride_cn"]
    args = dict(zip(names, [a, b, c, m, n, k, k, 1, n, 1, n, 1]))
    block_m, block_n, block_k = block
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=2, ACTIVATION="leaky_relu")
    spec_, _ = kernel.specialize(list(args.values()), constexprs)
    options = {"num_warps": num_warps, "num_stages": num_stages, "maxnreg": None}
    compiled = compile_amdgcn(compile_kernel(kernel, spec_, options, "gfx1100", until="amdgcn").func, "gfx1100")
    assert WMMA["f16"] in compiled.text and "v_fma_f32" not in compiled.text
    assert b"ELF" in assemble(compiled.text, "gfx1100")[:4]
    programs = -(-m // block_m) * -(-n // block_n)
    run_amdgcn(compiled.text, programs, args)
    exact = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, np.where(exact >= 0, exact, 0.01 * exact), rtol=2e-3, atol=2e-3)
