"""The kernels of the GPU-only tests (tests/*_gpu.py) and the benchmarks on the AMD targets: the
corpus tests/test_emulator_kernels.py runs as sm_80 / sm_90a PTX, compiled here for gfx942 (CDNA3,
waves of 64), gfx1100 (RDNA3, waves of 32) and, where it adds coverage, gfx90a; each kernel's text
assembled and linked by llvm-mc / ld.lld for its target and run on the emulator's wave machine,
against float64 NumPy at the GPU tests' tolerances, outputs poisoned.

Launch options are those a Triton user gives on AMD: num_warps counts waves (4 waves of 64 are a
256-item workgroup on CDNA, 4 of 32 a 128-item one on RDNA3), blocks that fit 64 KiB of LDS and
the register file. Shapes are small, with more than one program and more than one trip round each
pipelined loop. Tensor descriptors, which have no TMA on these targets, take masked loads and
stores."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from amdgcn_util import named, needs_llvm
from test_emulator_kernels import (_tma_operands, attention, bench, dropout, grouped, host_memory,  # noqa: F401
                                   lnb, poison, run_attention, run_dropout, run_grouped, run_in_kernel_descriptors,
                                   run_layer_norm, run_matmul, run_mma_peak, run_out_of_bounds_reads,
                                   run_ragged_round_trip)
from load_kernels import load_kernels  # on the path from test_emulator_kernels: benchmarks/
from tile.codegen.amdgcn import assemble
from tile.emulator import EmulatorError, emulate
from tile.emulator.amdgcn_machine import run_amdgcn

pytestmark = [pytest.mark.emulator, needs_llvm]
RNG = np.random.default_rng(15)


def assembled(compiled, target: str) -> str:
    """The AMDGCN text that ran, after checking it assembles and links to a code object of `target`."""
    text = compiled.stages["amdgcn"]
    assert f'amdgcn-amd-amdhsa--{target}"' in text
    assert assemble(text, target)[:4] == b"\x7fELF"
    return text


def run_reaching(kernel, target: str, grid, args: tuple, reachable: list, **options) -> None:
    """Run `kernel` compiled for `target` with `args` on the wave machine (its text assembled
    first), the arrays in `reachable` addressed through pointer tables."""
    text = str(tile.dump(kernel, *args, stage="amdgcn", target=target, **options))
    assert assemble(text, target)[:4] == b"\x7fELF"
    tile.emulate(kernel, target, reachable=reachable)[grid](*args, **options)


# ------------------------------------------------------------------ tutorial 07: fused attention


@pytest.mark.parametrize("target, dtype, causal, head_dim", [("gfx942", "f16", True, 64),
                                                             ("gfx1100", "bf16", False, 32),
                                                             ("gfx90a", "f16", False, 32)])
def test_attention_forward_and_backward(attention, target, dtype, causal, head_dim):
    """The forward and the three backward kernels at Triton's AMD launch options (4 waves, two
    stages, 64-row query blocks; the backward's 16/64 and 64/16 blocks) with S = 128: two blocks
    of queries and keys, several key steps."""
    matrix_op = {"gfx942": "v_mfma_f32_", "gfx90a": "v_mfma_f32_", "gfx1100": "v_wmma_f32_16x16x16_"}[target]

    def check(kind: str, compiled) -> None:
        text = assembled(compiled, target)
        if kind == "fwd":
            assert matrix_op in text

    run_attention(attention, target, dtype, causal, head_dim, s=128, blocks=(64, 64), bwd_blocks=(16, 64),
                  num_warps=4, num_stages=2, check=check)


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_attention_at_tritons_mi300_blocks(attention, target):
    """Triton's MI300 attention blocks (128-row query blocks, 64 keys a step, head dim 128, 4
    waves; the backward's 32/128 and 128/32): compiled and assembled for CDNA3 (too slow to
    emulate, the registers past 256 in AGPRs, the forward's LDS exactly 64 KiB); on RDNA3, with
    no AGPRs, the forward's VGPRs overflow and say so."""
    from tile.runtime.errors import OutOfResources

    s, d = 1024, 128
    q, lse = np.zeros((1, 2, s, d), np.float16), np.zeros((1, 2, s), np.float32)
    launch = dict(target=target, stage="amdgcn", num_warps=4, num_stages=1, HEAD_DIM=d)
    forward = dict(BLOCK_M=128, BLOCK_N=64, STAGE=3, **launch)
    if target == "gfx1100":
        with pytest.raises(OutOfResources, match="out of resource: VGPRs"):
            tile.dump(attention.attn_fwd, q, q, q, q, lse, 0.5, s, **forward)
        return
    texts = [tile.dump(attention.attn_fwd, q, q, q, q, lse, 0.5, s, **forward),
             tile.dump(attention.attn_bwd_dkdv, q, q, q, 0.5, q, q, q, lse, lse, s, BLOCK_M=32, BLOCK_N=128,
                       BLK_SLICE_FACTOR=2, CAUSAL=True, **launch),
             tile.dump(attention.attn_bwd_dq, q, q, q, 0.5, q, q, lse, lse, s, BLOCK_M=128, BLOCK_N=32,
                       BLK_SLICE_FACTOR=2, CAUSAL=True, **launch)]
    for text in map(str, texts):
        assert assemble(text, target)[:4] == b"\x7fELF"
        assert int(text.split(".group_segment_fixed_size:")[1].split()[0]) <= 65536
    assert ".agpr_count: 0" not in str(texts[0])


# ------------------------------------------------------------------ tutorial 08: low-memory dropout


@pytest.mark.parametrize("target", ["gfx942", "gfx1100", "gfx90a"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_dropout_is_bit_exact(dropout, target, dtype):
    """The GPU's block of 1024 over three blocks and a ragged tail, against the NumPy Philox."""
    run_dropout(dropout, target, dtype, check=lambda compiled: assembled(compiled, target))


# ------------------------------------------------------------------ tutorial 09: layer norm with a spin lock


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("rows, cols, groups", [(37, 100, 4), (130, 64, 1), (24, 1000, 0)])
def test_layer_norm_forward_and_backward(lnb, target, rows, cols, groups):
    """Forward, the fused dx kernel (workgroups take a buffer's spin lock in turns: 130 rows on one
    lock is real contention) and the dw/db reduction, at the tutorial's launch options."""
    run_layer_norm(lnb, target, rows, cols, groups, check=lambda compiled: assembled(compiled, target))


# ------------------------------------------------------------------ grouped GEMM (benchmarks/kernels_grouped.py)


@pytest.mark.parametrize("target, block, warps", [("gfx942", (64, 64, 32), 4), ("gfx1100", (64, 64, 32), 4),
                                                  ("gfx90a", (64, 64, 32), 4)])
def test_grouped_gemm_pointer_variant(grouped, target, block, warps):
    """Four problems over three programs (each walks tiles of several problems); K of one to four
    steps. The kernel does not mask: M, N and K are multiples of the blocks, as in the tutorial."""
    shapes = [(128, 128, 128), (128, 64, 96), (64, 64, 64), (64, 128, 32)]
    outs, refs = run_grouped(grouped.grouped_matmul_kernel, target, shapes, False, block, warps, 3,
                             check=lambda compiled: assembled(compiled, target))
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)


@pytest.mark.parametrize("target, block, warps", [("gfx942", (64, 64, 32), 4), ("gfx1100", (64, 64, 32), 8)])
def test_grouped_gemm_descriptor_variant(grouped, target, block, warps):
    """Ragged problems through in-kernel descriptors, masked on targets without TMA."""
    shapes = [(100, 72, 72), (64, 136, 200), (8, 16, 24)]
    outs, refs = run_grouped(grouped.grouped_matmul_tma_kernel, target, shapes, True, block, warps, 3,
                             check=lambda compiled: assembled(compiled, target))
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * ref.shape[1] ** 0.5)


# ------------------------------------------------------------------ descriptors (tests/test_tma*_gpu.py)


@pytest.mark.parametrize("target, m, n, k, stages, warps", [("gfx942", 136, 200, 104, 2, 4),
                                                            ("gfx1100", 100, 72, 40, 2, 8)])
def test_descriptor_matmul(target, m, n, k, stages, warps):
    """tests/test_tma.py's matmul through host descriptors: ragged K (columns past K read as zero),
    ragged M and N (the stores clip)."""
    from test_tma import tma_matmul_kernel

    a, b, c, descs = _tma_operands(m, n, k, (64, 64, 32))
    compiled = emulate(tma_matmul_kernel, target)[(tile.cdiv(m, 64), tile.cdiv(n, 64))](
        *descs, k, num_warps=warps, num_stages=stages)
    assembled(compiled, target)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))


@pytest.mark.parametrize("target, source", [("gfx942", "tests"), ("gfx1100", "tests"), ("gfx942", "benchmarks")])
def test_persistent_descriptor_matmul(target, source):
    """Three programs loop over the 15 output tiles: tests/test_tma.py's kernel and
    benchmarks/kernels_tma.py's (bench_tma_matmul's)."""
    if source == "tests":
        from test_tma import persistent_matmul_kernel
    else:
        persistent_matmul_kernel = load_kernels("amdgcn_kernels_tma", tile.jit, tl,
                                                "kernels_tma.py").persistent_matmul_descriptors

    m, n, k = 150, 264, 104
    a, b, c, descs = _tma_operands(m, n, k, (64, 64, 32))
    compiled = emulate(persistent_matmul_kernel, target)[(3,)](*descs, m, n, k, NUM_SMS=3, num_stages=2)
    assembled(compiled, target)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-3 * np.sqrt(k))


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8e4nv", "float8e5"])
def test_descriptor_ragged_round_trip(target, dtype):
    """tests/test_tma_gpu.py's copy through host descriptors: the loads past the edges read the
    fill, the stores clip; the bytes come back unchanged (bf16 and fp8 as random bits)."""
    run_ragged_round_trip(target, dtype, (100, 80), (32, 64), check=lambda compiled: assembled(compiled, target))


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_descriptor_out_of_bounds_reads(target, padding):
    """A host descriptor's block hanging over the corner reads the padding (tests/test_tma_gpu.py)."""
    run_out_of_bounds_reads(target, padding, check=lambda compiled: assembled(compiled, target))


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_in_kernel_descriptors(target):
    """tests/test_tma_desc_gpu.py's kernels: a ragged copy and a matmul through descriptors made
    in the kernel, the padding of a block over the corner, and descriptors made in a loop over
    groups whose matrices are reached through pointer tables."""
    run_in_kernel_descriptors(target, check=lambda compiled: assembled(compiled, target))


# ------------------------------------------------------------------ benchmarks/kernels.py


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_bandwidth_kernels(bench, target):
    """bench_bandwidth.py's kernels at its launch rules: vector add over three blocks and a tail,
    softmax rows of 781 (BLOCK 1024, 4 waves), layer norm rows of 1000 in blocks of 256 (each of
    its three loops four trips, the last one masked; w and b in f32 as the benchmark's are)."""
    n = 3 * 1024 + 9
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = poison(n, np.float32)
    launched = [emulate(bench.add_kernel, target)[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)]
    np.testing.assert_array_equal(out, x + y)

    rows, cols = 5, 781
    x, out = RNG.standard_normal((rows, cols)).astype(np.float32), poison((rows, cols), np.float32)
    launched.append(emulate(bench.softmax_kernel, target)[(rows,)](out, x, cols, cols, cols, BLOCK=1024, num_warps=4))
    e = np.exp(x - x.max(axis=1, keepdims=True).astype(np.float64))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    rows, cols = 3, 1000
    x = RNG.standard_normal((rows, cols)).astype(np.float16)
    w, b = RNG.random(cols).astype(np.float32), RNG.random(cols).astype(np.float32)
    y, mean, rstd = poison((rows, cols), np.float16), poison(rows, np.float32), poison(rows, np.float32)
    launched.append(emulate(bench.layer_norm_kernel, target)[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5,
                                                                      BLOCK=256, num_warps=1))
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var + 1e-5), rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float64), (x64 - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b,
                               rtol=2e-3, atol=2e-3)
    for compiled in launched:
        assembled(compiled, target)


@pytest.mark.parametrize("target", ["gfx942", "gfx1100", "gfx90a"])
def test_mma_peak_kernel(bench, target):
    """The matrix-core peak kernel: operands in registers, ITERS dots into one accumulator."""
    run_mma_peak(bench, target, check=lambda compiled: assembled(compiled, target))


@pytest.mark.parametrize("target, block, warps, stages", [("gfx942", (128, 128, 64), 8, 2),
                                                          ("gfx942", (64, 128, 64), 4, 2),
                                                          ("gfx1100", (64, 64, 32), 4, 2)])
def test_matmul_at_benchmark_configs(bench, target, block, warps, stages):
    """benchmarks/kernels.py's matmul at Triton's AMD matmul blocks, ragged M and N, K of three steps."""
    bm, bn, bk = block
    run_matmul(bench, target, (bm + 72, bn + 8, 3 * bk), block, warps, stages,
               check=lambda compiled: assembled(compiled, target))


@pytest.mark.parametrize("target, block, warps, stages, overflow", [
    ("gfx942", (256, 256, 64), 8, 2, "shared memory, Required: 131072, Hardware limit: 65536"),
    ("gfx1100", (128, 256, 32), 4, 1, "VGPRs")])
def test_matmul_blocks_past_the_target_are_out_of_resources(bench, target, block, warps, stages, overflow):
    """Triton's largest MI300 matmul block (256 x 256 x 64, 8 waves) needs 128 KiB of LDS here
    (the f16 result goes through LDS to its store layout); a 128 x 256 f32 accumulator over 4
    waves of 32 is 256 registers a lane before any operand. Each is named, not run wrong."""
    from tile.runtime.errors import OutOfResources

    a = np.zeros((512, 512), np.float16)
    bm, bn, bk = block
    with pytest.raises(OutOfResources, match=f"out of resource: {overflow}"):
        tile.dump(bench.matmul_kernel, a, a, a, 512, 512, 512, 512, 1, 512, 1, 512, 1, BLOCK_M=bm, BLOCK_N=bn,
                  BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages, stage="amdgcn", target=target)


# ------------------------------------------------------------------ regressions the corpus found


@tile.jit
def dot_in_uniform_while_kernel(a_ptr, c_ptr, n):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    acc = tl.zeros((32, 32), dtype=tl.float32)
    i = tl.program_id(0)
    while i < n:   # the same in every lane: MFMA / WMMA under it run on a whole wave
        acc += tl.dot(a, a)
        a += 1.0
        i += 2
    tl.store(c_ptr + tl.program_id(0) * 1024 + r[:, None] * 32 + r[None, :], acc)


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_dot_under_a_uniform_while(target):
    """The grouped GEMM's dots sit in `while tile_idx < ...` on loop-carried scalars: such a loop
    was refused (any scf.while around an MFMA); two programs run 3 and 2 trips."""
    a = RNG.integers(-2, 3, (32, 32)).astype(np.float16)
    c = poison((2, 32, 32), np.float32)
    compiled = emulate(dot_in_uniform_while_kernel, target)[(2,)](a, c, 5, num_warps=2)
    assembled(compiled, target)
    for program, trips in enumerate((3, 2)):
        a64, want = a.astype(np.float64), np.zeros((32, 32))
        for _ in range(trips):
            want += a64 @ a64
            a64 = a64 + 1
        np.testing.assert_array_equal(c[program], want)


_STEPPED_WHILE = """simt.func {arg_names = ["p", "n"], num_warps = 4, shared_bytes = 0, sym_name = "k"} {
^bb(%p: ptr<i32>, %n: i32):
  %c = simt.ctaid {axis = 0} : i32
  %t = simt.tid : i32
  %two = arith.constant {value = 2} : i32
  %r = scf.while START : i32 {
  ^bb(%i: i32):
    %go = arith.cmp %i, %n {predicate = "lt"} : i1
    scf.condition %go, %i
  } {
  ^bb(%j: i32):
    %k = arith.add %j, STEP : i32
    scf.yield %k
  }
  %ok = arith.constant {value = true} : i1
  simt.st_global %p, %ok, %r {offset = 0, vector = 1}
  simt.return
}"""


@pytest.mark.parametrize("start, step, uniform", [("%c", "%two", True), ("%t", "%two", False), ("%c", "%t", False)])
def test_wave_uniform_values_follow_loop_carried_values(start, step, uniform):
    """The analysis behind MFMA under scf.while: a loop-carried value is uniform when its first
    value and every yielded one are; the thread id entering either way makes the condition, the
    carried values and the result per-lane."""
    from tile.codegen.amdgcn.isel import wave_uniform_values
    from tile.ir.parser import parse_op

    func = parse_op(_STEPPED_WHILE.replace("START", start).replace("STEP", step))
    loop = next(op for op in func.regions[0].block.ops if op.name == "scf.while")
    before, after = loop.regions[0].block, loop.regions[1].block
    carried = [before.args[0], before.ops[0].result, after.args[0], after.ops[0].result, loop.result]
    found = wave_uniform_values(func)
    assert [v in found for v in carried] == [uniform] * len(carried)
    assert func.regions[0].block.args[1] in found and func.regions[0].block.ops[1].result not in found


@tile.jit
def gather_rows_kernel(table_ptr, out_ptr, N: tl.constexpr):
    """Row g of out is the N floats at the address table[g]: an i64 bitcast to a pointer."""
    g = tl.program_id(0)
    row = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, N)
    tl.store(out_ptr + g * N + offs, tl.load(row + offs) * 2)


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_integer_to_pointer_bitcast(target):
    """A loaded address cast to a pointer (grouped GEMM's tables) failed in instruction selection."""
    rows = [RNG.standard_normal(64).astype(np.float32) for _ in range(3)]
    table = np.array([r.ctypes.data for r in rows], np.int64)
    out = poison((3, 64), np.float32)
    run_reaching(gather_rows_kernel, target, (3,), (table, out), rows, N=64)
    np.testing.assert_array_equal(out, np.stack(rows) * 2)
    with pytest.raises(EmulatorError, match=r"reachable\[1\] is a list: pass the NumPy array"):
        run_amdgcn(str(tile.dump(gather_rows_kernel, table, out, N=64, stage="amdgcn", target=target)), (3,),
                   named(gather_rows_kernel, (table, out)), reachable=[rows[0], rows[1:]])


@tile.jit
def fp8_fill_kernel(x_ptr, out_ptr, n, FILL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=FILL))


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("dtype, codes", [("float8e4nv", {1.5: 0x3C, -2.0: 0xC0, float("nan"): 0x7F}),
                                          ("float8e5", {1.5: 0x3E, -2.0: 0xC0, float("inf"): 0x7C})])
def test_fp8_constants(target, dtype, codes):
    """A masked fp8 load's `other` (a descriptor's padding) is an fp8 constant: e4m3 and e5m2 were
    refused ("constants of type f8e5"). Their codes, from the OCP formats: 1.5 = 1.1b x 2^0."""
    from test_tma_gpu import BIT_DTYPES

    x = RNG.integers(0, 256, 64).astype(np.uint8)
    for fill, code in codes.items():
        out = tile.to_device(np.full(64, 0xA5, np.uint8), BIT_DTYPES[dtype])
        compiled = emulate(fp8_fill_kernel, target)[(1,)](tile.to_device(x, BIT_DTYPES[dtype]), out, 40, FILL=fill,
                                                          BLOCK=64)
        assembled(compiled, target)
        np.testing.assert_array_equal(out.numpy(), np.concatenate([x[:40], np.full(24, code, np.uint8)]))
