"""Differential test of tile.emulator against a GPU (marker `gpu`; the lead runs it on an H100).

A corpus of kernels runs twice from the same initial memory: as the PTX tile compiles for a
target, on the GPU, and the same PTX text on the emulator. Then, for every array:
- integer and boolean memory must be identical, byte for byte;
- float memory must be identical byte for byte when the kernel is *exact*: no approximate
  instruction (ex2/lg2/rcp/sqrt/sin/cos/tanh .approx, div.full), no tensor-core instruction
  (mma.sync, wgmma: the hardware's internal accumulation is not IEEE), no plain mul.f next to
  a plain add/sub.f (ptxas contracts those into fma, which the emulator rounds twice) and no
  sum accumulated across CTAs in the order they happen to run; otherwise the two must agree
  within the case's tolerance (the GPU tests' tolerances; for generated programs, both must
  lie within their NumPy model's error bound).

The corpus: the kernels of tests/test_emulator_kernels.py (the GPU-only tests' kernels: fused
attention, dropout, layer norm with its spin lock, grouped GEMM, the TMA matmuls, the
benchmark kernels) for sm_80 and, where they run there, sm_90a, plus random programs of
tests/fuzz. A GPU launch compiles for a chosen target by making it the device's target (an
sm_80 module JIT-compiles on a Hopper GPU), and the test checks that the GPU and the emulator
ran the same PTX text. Each test prints how many kernels it compared; the corpus size is their
sum (run with -rA to see the prints of passing tests under pytest-xdist).

Size knobs: TILE_DIFF_PROGRAMS (generated programs per shard and target, default 40) and
TILE_DIFF_SHARDS (shards of generated programs, default 1; more than one draws fresh random
programs in each). A generated program costs about 0.1 s on the emulator (both targets' runs
of this file's CPU test, 2-core machine), plus its GPU compile and launch; the fixed corpus
about 30 s. So on 16 cores
`TILE_DIFF_PROGRAMS=150 TILE_DIFF_SHARDS=16 pytest -n 16 -rA tests/test_emulator_differential_gpu.py`
(4,800 generated kernels) should fit in about four minutes: lower TILE_DIFF_PROGRAMS if not.

The tests without the `gpu` mark run the harness without a GPU (both sides on the emulator, one
through the GPU side's launch path), so CI checks the corpus builders, the launches and the
comparison itself.
"""
from __future__ import annotations

import abc
import contextvars
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tile
import tile.language as tl
from fuzz import harness
from fuzz import model as M
from fuzz.programs import Program, programs
from tile.emulator import emulate
from tile.tools.tensor_descriptor import TensorDescriptor

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from load_kernels import load_kernels  # noqa: E402
from tutorial_util import load_tutorial

PROGRAMS = int(os.environ.get("TILE_DIFF_PROGRAMS", "40"))
SHARDS = int(os.environ.get("TILE_DIFF_SHARDS", "1"))
TARGETS = ("sm_80", "sm_90a")
FUZZ_SLACK_ULPS = 64  # tests/test_fuzz.py's allowance for the GPU's fma contractions
RNG = np.random.default_rng(1414)

# what makes a kernel's float results depend on more than IEEE rounding of each PTX instruction
APPROX = re.compile(r"\.approx\.|\bdiv\.full\.|\bmma\.sync\.|\bwgmma\.mma_async\.")
# a float mul / add / sub without a rounding modifier (ptxas may fuse such a mul into the add it feeds)
PLAIN_ARITH = re.compile(r"^\s*(?:@!?%p\d+\s+)?(mul|add|sub)\.(?:f16|f16x2|bf16|bf16x2|f32|f64)\s+(%\w+),(.*);", re.M)


def exact_floats(ptx: str) -> bool:
    """Whether the GPU must compute this PTX's float results bit for bit as the emulator does:
    no approximate or tensor-core instruction, and no plain mul whose result a plain add or sub
    takes (which ptxas may contract into one fma)."""
    if APPROX.search(ptx):
        return False
    arith = PLAIN_ARITH.findall(ptx)
    products = {dst for op, dst, _ in arith if op == "mul"}
    return not any(products.intersection(re.findall(r"%\w+", sources)) for op, _, sources in arith if op != "mul")


# ------------------------------------------------------------------ arrays of one side


@dataclass
class Buffer:
    """One array of a case: its initial contents (bf16 as uint16 bits) and how to compare it."""

    name: str
    init: np.ndarray
    bf16: bool = False
    ordered: bool = True  # False: CTAs add into it in the order they run (a tolerance always applies)


def aligned_copy(values: np.ndarray, alignment: int = 256) -> np.ndarray:
    """A copy of `values` at an address aligned as a GPU allocation is (so both sides compile
    the same specialization: pointers divisible by 16)."""
    raw = np.empty(values.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


class Side(abc.ABC):
    """How one side holds arrays and launches: the emulator on host copies, or the GPU."""

    name = ""

    @abc.abstractmethod
    def array(self, buf: Buffer) -> Any:
        """A fresh array of this side holding `buf`'s initial contents."""

    def values(self, array: Any) -> np.ndarray:
        """The array's memory as a NumPy array (bf16: its uint16 bits)."""
        return np.asarray(array.numpy() if hasattr(array, "numpy") else array)

    @abc.abstractmethod
    def address(self, array: Any) -> int:
        """The address a kernel reaches the array at (for tables of pointers)."""

    @abc.abstractmethod
    def launch(self, kernel: Any, target: str, grid: tuple, args: list, kwargs: dict, reachable: list) -> str:
        """Run the kernel compiled for `target`; the PTX text that ran. `reachable`: arrays the
        kernel reaches only through pointer tables (the emulator must be told of them)."""


class EmulatorSide(Side):
    name = "emulator"

    def array(self, buf: Buffer) -> Any:
        if buf.bf16:  # NumPy has no bf16: a DeviceArray of bf16, in host memory also on a GPU machine
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("TILE_INTERPRET", "1")
                return tile.to_device(buf.init.copy(), "bf16")
        return aligned_copy(buf.init)

    def address(self, array: Any) -> int:
        return array.ctypes.data

    def launch(self, kernel: Any, target: str, grid: tuple, args: list, kwargs: dict, reachable: list) -> str:
        return emulate(kernel, target, reachable=reachable)[grid](*args, **kwargs).asm["ptx"]


class GpuSide(Side):
    """Launches through the ordinary path, the device's target set to `target`. With
    `target_prefix` EMULATOR_PREFIX the same path runs on the emulator (TILE_EMULATE's way),
    which lets CI check this side's launches without a GPU."""

    name = "GPU"

    def __init__(self, monkeypatch: pytest.MonkeyPatch, target_prefix: str = ""):
        self.monkeypatch, self.target_prefix = monkeypatch, target_prefix

    def array(self, buf: Buffer) -> Any:
        return tile.to_device(buf.init.copy(), "bf16" if buf.bf16 else None)

    def address(self, array: Any) -> int:
        return array.data_ptr()

    def launch(self, kernel: Any, target: str, grid: tuple, args: list, kwargs: dict, reachable: list) -> str:
        from tile import compiler

        with self.monkeypatch.context() as patch:
            patch.delenv("TILE_INTERPRET", raising=False)
            patch.delenv("TILE_EMULATE", raising=False)
            patch.setattr(compiler, "_device_target", lambda: self.target_prefix + target)
            scratch = []

            # a device's target never changes under a real launch, so the launch binders' fast
            # entries do not key on it: the kernel forgets the other target's compiled code
            kernel.forget_compiled()

            def run() -> Any:  # global scratch (in-kernel tensor maps) from tile's allocator, as a user gives it
                tile.set_allocator(lambda size, alignment, stream: scratch.append(tile.empty((size,), "i8"))
                                   or scratch[-1])
                return kernel[grid](*args, **kwargs)

            return contextvars.Context().run(run).asm["ptx"]


# ------------------------------------------------------------------ the corpus


@dataclass
class Case:
    """A kernel launch of the corpus: `args(side, arrays)` builds the argument list from the
    side's arrays; float arrays of inexact kernels must agree within rtol/atol."""

    name: str
    kernel: Any
    grid: tuple
    buffers: list[Buffer]
    args: Callable[[Side, list], list]
    kwargs: dict = field(default_factory=dict)
    targets: tuple = TARGETS
    rtol: float = 1e-2
    atol: float = 1e-2
    reachable: Callable[[Side, list], list] = lambda side, arrays: []


def _tutorial(name: str):
    return load_tutorial(name, "differential")


def _f16(shape, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def _bf16_bits(shape, scale: float = 1.0) -> np.ndarray:
    x = (RNG.standard_normal(shape) * scale).astype(np.float32).view(np.uint32)
    return ((x + 0x7FFF + ((x >> 16) & 1)) >> 16).astype(np.uint16)


def _poison(shape, dtype) -> np.ndarray:
    a = np.empty(shape, dtype)
    a.view(np.uint8)[...] = 0xAB
    return a


def _plain(*scalars: Any) -> Callable[[Side, list], list]:
    """Arguments: every array in order, then `scalars`."""
    return lambda side, arrays: [*arrays, *scalars]


def attention_cases() -> list[Case]:
    t = _tutorial("07_fused_attention")
    cases = []
    for dtype, causal, d in (("f16", True, 64), ("bf16", False, 32)):
        s, bh = 256, 2
        bf16 = dtype == "bf16"
        make = (lambda shape: _bf16_bits(shape, 0.5)) if bf16 else (lambda shape: _f16(shape, 0.5))
        out = (lambda shape: np.full(shape, 0xFFAB, np.uint16)) if bf16 else (lambda shape: _poison(shape, np.float16))
        qkv = [Buffer(n, make((1, bh, s, d)), bf16) for n in ("q", "k", "v", "do")]
        launch = dict(BLK_SLICE_FACTOR=2, HEAD_DIM=d, CAUSAL=causal, num_warps=8, num_stages=3)
        lse = RNG.standard_normal((1, bh, s)).astype(np.float32) + 6  # log2 of a row sum: sizeable, so exp2 stays small
        delta = (RNG.standard_normal((1, bh, s)) * 0.1).astype(np.float32)
        tag = f"{dtype}, causal={causal}, D={d}"
        cases += [
            Case(f"attn_fwd ({tag})", t.attn_fwd, (s // 128, bh),
                 qkv[:3] + [Buffer("o", out((1, bh, s, d)), bf16), Buffer("M", _poison((1, bh, s), np.float32))],
                 _plain(0.5, s), dict(HEAD_DIM=d, STAGE=3 if causal else 1, BLOCK_M=128, BLOCK_N=64, num_warps=8,
                                      num_stages=3), rtol=4e-2 if bf16 else 1e-2, atol=4e-2 if bf16 else 1e-2),
            Case(f"attn_bwd_preprocess ({tag})", t.attn_bwd_preprocess, (s // 128, bh),
                 [qkv[2], qkv[3], Buffer("delta", _poison((1, bh, s), np.float32))], _plain(s),
                 dict(BLOCK_M=128, HEAD_DIM=d), rtol=1e-5, atol=1e-5),
            Case(f"attn_bwd_dkdv ({tag})", t.attn_bwd_dkdv, (s // 128, bh),
                 qkv[:3] + [qkv[3], Buffer("dk", out((1, bh, s, d)), bf16), Buffer("dv", out((1, bh, s, d)), bf16),
                            Buffer("M", lse), Buffer("D", delta)],
                 lambda side, a: [a[0], a[1], a[2], 0.5, a[3], a[4], a[5], a[6], a[7], s],
                 dict(BLOCK_M=32, BLOCK_N=128, **launch), rtol=4e-2 if bf16 else 1e-2, atol=4e-2 if bf16 else 1e-2),
            Case(f"attn_bwd_dq ({tag})", t.attn_bwd_dq, (s // 128, bh),
                 qkv[:3] + [qkv[3], Buffer("dq", out((1, bh, s, d)), bf16), Buffer("M", lse), Buffer("D", delta)],
                 lambda side, a: [a[0], a[1], a[2], 0.5, a[3], a[4], a[5], a[6], s],
                 dict(BLOCK_M=128, BLOCK_N=32, **launch), rtol=4e-2 if bf16 else 1e-2, atol=4e-2 if bf16 else 1e-2),
        ]
    return cases


def dropout_cases() -> list[Case]:
    t = _tutorial("08_low_memory_dropout")
    n = 3 * t.BLOCK + 5
    return [Case(f"seeded_dropout ({np.dtype(dtype).name})", t.seeded_dropout_kernel, (tile.cdiv(n, t.BLOCK),),
                 [Buffer("x", RNG.standard_normal(n).astype(dtype)), Buffer("out", _poison(n, dtype))],
                 _plain(n, 0.2, 31337), dict(BLOCK=t.BLOCK)) for dtype in (np.float32, np.float16)]


def layer_norm_cases() -> list[Case]:
    t = _tutorial("09_layer_norm_backward")
    cases = []
    for rows, cols, groups in ((37, 100, 4), (130, 64, 1)):
        block, warps = t.launch_config(cols, 2)
        x = (-2.3 + 0.5 * RNG.standard_normal((rows, cols))).astype(np.float16)
        w, b = RNG.random(cols).astype(np.float16), RNG.random(cols).astype(np.float16)
        mean = x.astype(np.float32).mean(1)
        rstd = (1 / np.sqrt(x.astype(np.float32).var(1) + 1e-5)).astype(np.float32)
        tag = f"{rows}x{cols}, {groups} locks"
        cases += [
            Case(f"layer_norm_fwd ({tag})", t.layer_norm_fwd_kernel, (rows,),
                 [Buffer("x", x), Buffer("y", _poison((rows, cols), np.float16)), Buffer("w", w), Buffer("b", b),
                  Buffer("mean", _poison(rows, np.float32)), Buffer("rstd", _poison(rows, np.float32))],
                 _plain(cols, cols, 1e-5), dict(BLOCK_SIZE_N=block, num_warps=warps), rtol=2e-3, atol=1e-3),
            Case(f"layer_norm_bwd_dx_fused ({tag})", t.layer_norm_bwd_dx_fused_kernel, (rows,),
                 [Buffer("dx", _poison((rows, cols), np.float16)),
                  Buffer("dy", (0.1 * RNG.standard_normal((rows, cols))).astype(np.float16)),
                  Buffer("partial_dw", _poison((groups, cols), np.float32), ordered=False),
                  Buffer("partial_db", _poison((groups, cols), np.float32), ordered=False),
                  Buffer("x", x), Buffer("w", w), Buffer("mean", mean), Buffer("rstd", rstd),
                  Buffer("locks", np.zeros(2 * groups, np.int32))],
                 _plain(cols, cols), dict(GROUP_SIZE_M=groups, BLOCK_SIZE_N=block, num_warps=warps),
                 rtol=1e-3, atol=1e-5 * rows),
            Case(f"layer_norm_bwd_dwdb ({tag})", t.layer_norm_bwd_dwdb_kernel, (tile.cdiv(cols, 128),),
                 [Buffer("partial_dw", RNG.standard_normal((groups, cols)).astype(np.float32)),
                  Buffer("partial_db", RNG.standard_normal((groups, cols)).astype(np.float32)),
                  Buffer("dw", _poison(cols, np.float16)), Buffer("db", _poison(cols, np.float16))],
                 _plain(groups, cols), dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128), rtol=2e-3, atol=1e-3),
        ]
    return cases


def grouped_gemm_cases() -> list[Case]:
    g = load_kernels("differential_grouped", tile.jit, tl, "kernels_grouped.py")
    cases = []
    for kernel, shapes, transposed in ((g.grouped_matmul_kernel, [(128, 128, 128), (128, 64, 96), (64, 128, 32)],
                                        False),
                                       (g.grouped_matmul_tma_kernel, [(100, 72, 72), (64, 136, 200), (8, 16, 24)],
                                        True)):
        mats = [Buffer(f"a{i}", RNG.random((m, k)).astype(np.float16)) for i, (m, n, k) in enumerate(shapes)]
        mats += [Buffer(f"b{i}", RNG.random((n, k) if transposed else (k, n)).astype(np.float16))
                 for i, (m, n, k) in enumerate(shapes)]
        mats += [Buffer(f"c{i}", _poison((m, n), np.float16)) for i, (m, n, k) in enumerate(shapes)]
        count = len(shapes)
        sizes = Buffer("sizes", np.array([d for s in shapes for d in s], np.int32))
        lds = Buffer("lds", np.array([ld for m, n, k in shapes for ld in (k, k if transposed else n, n)], np.int32))

        def args(side: Side, a: list, count=count) -> list:
            """The tables of A, B and C addresses (on the side's memory), sizes, leading dimensions."""
            tables = [side.array(Buffer("table", np.array([side.address(x) for x in a[j * count:(j + 1) * count]],
                                                          np.int64))) for j in range(3)]
            return [*tables, a[3 * count], a[3 * count + 1], count]

        cases.append(Case(f"{kernel.__name__}", kernel, (3,), mats + [sizes, lds], args,
                          dict(NUM_SM=3, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, num_warps=4),
                          rtol=1e-2, atol=1e-1, reachable=lambda side, a, count=count: a[:3 * count]))
    return cases


def tma_cases() -> list[Case]:
    from test_tma import persistent_matmul_kernel, tma_matmul_kernel

    def operands(m: int, n: int, k: int) -> list[Buffer]:
        return [Buffer("a", _f16((m, k))), Buffer("b", _f16((k, n))), Buffer("c", np.full((m, n), np.nan, np.float16))]

    def descriptors(side: Side, a: list) -> list:
        return [TensorDescriptor.from_tensor(a[0], [64, 32]), TensorDescriptor.from_tensor(a[1], [32, 64]),
                TensorDescriptor.from_tensor(a[2], [64, 64])]

    return [Case("tma_matmul", tma_matmul_kernel, (3, 4), operands(136, 200, 104),
                 lambda side, a: [*descriptors(side, a), 104], dict(num_warps=4, num_stages=3), ("sm_90a",),
                 atol=2e-3 * math.sqrt(104) + 1e-2),
            Case("persistent_matmul", persistent_matmul_kernel, (3,), operands(150, 264, 160),
                 lambda side, a: [*descriptors(side, a), 150, 264, 160], dict(NUM_SMS=3, num_stages=3), ("sm_90a",),
                 atol=2e-3 * math.sqrt(160) + 1e-2)]


def benchmark_cases() -> list[Case]:
    k = load_kernels("differential_bench", tile.jit, tl)
    n, rows, cols = 5000, 37, 300
    m, nn, kk = 200, 136, 160
    return [
        Case("add_kernel", k.add_kernel, (tile.cdiv(n, 1024),),
             [Buffer("x", RNG.standard_normal(n).astype(np.float32)),
              Buffer("y", RNG.standard_normal(n).astype(np.float32)), Buffer("out", _poison(n, np.float32))],
             _plain(n), dict(BLOCK=1024)),
        Case("softmax_kernel", k.softmax_kernel, (rows,),
             [Buffer("out", _poison((rows, cols), np.float32)),
              Buffer("x", RNG.standard_normal((rows, cols)).astype(np.float32))],
             _plain(cols, cols, cols), dict(BLOCK=512), rtol=2e-6, atol=1e-7),
        Case("layer_norm_kernel", k.layer_norm_kernel, (rows,),
             [Buffer("x", RNG.standard_normal((rows, cols)).astype(np.float32)),
              Buffer("y", _poison((rows, cols), np.float16)),
              Buffer("w", RNG.standard_normal(cols).astype(np.float32)),
              Buffer("b", RNG.standard_normal(cols).astype(np.float32)),
              Buffer("mean", _poison(rows, np.float32)), Buffer("rstd", _poison(rows, np.float32))],
             _plain(cols, cols, 1e-5), dict(BLOCK=512), rtol=2e-3, atol=2e-3),
        Case("matmul_kernel", k.matmul_kernel, (tile.cdiv(m, 128) * tile.cdiv(nn, 64),),
             [Buffer("a", _f16((m, kk))), Buffer("b", _f16((kk, nn))), Buffer("c", _poison((m, nn), np.float16))],
             _plain(m, nn, kk, kk, 1, nn, 1, nn, 1),
             dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4), atol=2e-2),
        Case("mma_peak_kernel", k.mma_peak_kernel, (2,),
             [Buffer("a", _f16((64, 32))), Buffer("b", _f16((32, 64))), Buffer("c", _poison((2, 64, 64), np.float16))],
             _plain(), dict(ITERS=3, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32), atol=6e-2),
    ]


def kernel_corpus() -> list[Case]:
    return attention_cases() + dropout_cases() + layer_norm_cases() + grouped_gemm_cases() + tma_cases() + \
        benchmark_cases()


# ------------------------------------------------------------------ running and comparing


def run_case(side: Side, case: Case, target: str) -> tuple[str, list[np.ndarray]]:
    """Run `case` for `target` on `side` from its initial memory: the PTX and every array after."""
    arrays = [side.array(b) for b in case.buffers]
    ptx = side.launch(case.kernel, target, case.grid, case.args(side, arrays), case.kwargs,
                      case.reachable(side, arrays))
    return ptx, [side.values(a) for a in arrays]


def differences(case: Case, ptx: str, gpu: list[np.ndarray], emulated: list[np.ndarray]) -> list[str]:
    """What differs between the two sides' memory, by the rules of the module docstring."""
    exact = exact_floats(ptx)
    problems = []
    for buf, g, e in zip(case.buffers, gpu, emulated):
        floating = buf.init.dtype.kind == "f" or buf.bf16
        if not floating or (exact and buf.ordered):
            if g.tobytes() != e.tobytes():
                bad = np.flatnonzero(g.reshape(-1).view(np.uint8) != e.reshape(-1).view(np.uint8))
                first = bad[0] // g.itemsize
                problems.append(f"{buf.name}: {bad.size} bytes differ (exact); first element {first}: GPU "
                                f"{g.reshape(-1)[first]!r} emulator {e.reshape(-1)[first]!r}")
            continue
        gv = (g.astype(np.uint32) << 16).view(np.float32) if buf.bf16 else g
        ev = (e.astype(np.uint32) << 16).view(np.float32) if buf.bf16 else e
        gv, ev = gv.astype(np.float64), ev.astype(np.float64)
        bad = ~np.isclose(gv, ev, rtol=case.rtol, atol=case.atol, equal_nan=True)
        if bad.any():
            first = int(np.flatnonzero(bad.reshape(-1))[0])
            problems.append(f"{buf.name}: {int(bad.sum())} of {bad.size} differ beyond rtol {case.rtol}, atol "
                            f"{case.atol}; first element {first}: GPU {gv.reshape(-1)[first]} emulator "
                            f"{ev.reshape(-1)[first]}")
    return problems


def compare(case: Case, target: str, gpu_side: Side, emulator_side: Side) -> str:
    """Run on both sides and fail on a difference; 'exact' or 'within tolerance'."""
    gpu_ptx, gpu = run_case(gpu_side, case, target)
    emu_ptx, emulated = run_case(emulator_side, case, target)
    assert gpu_ptx == emu_ptx, f"{case.name} for {target}: the GPU and the emulator ran different PTX"
    problems = differences(case, emu_ptx, gpu, emulated)
    assert not problems, f"{case.name} for {target}, {gpu_side.name} vs emulator:\n" + "\n".join(problems)
    return "exact" if exact_floats(emu_ptx) else "within tolerance"


def program_case(program: Program) -> Case:
    """A generated program as a corpus case."""
    kernel = harness.load_module(program.source).kernel
    buffers = [Buffer(b.name, b.init, b.dtype == "bf16") for b in program.buffers]
    scalars = [program.scalars["n"], program.scalars["iters"], program.scalars["alpha"]]
    return Case(f"generated program ({len(program.ops)} ops)", kernel, (program.grid,), buffers, _plain(*scalars),
                dict(num_warps=program.num_warps, num_stages=program.num_stages))


def compare_program(program: Program, target: str, gpu_side: Side, emulator_side: Side) -> None:
    """Integers, booleans and exact floats (model error bound 0, exact PTX) identical; other
    floats within the model's bound on both sides."""
    case = program_case(program)
    gpu_ptx, gpu = run_case(gpu_side, case, target)
    emu_ptx, emulated = run_case(emulator_side, case, target)
    assert gpu_ptx == emu_ptx, f"{target}: the GPU and the emulator ran different PTX\n{program}"
    exact = exact_floats(emu_ptx)
    for buf, g, e in zip(program.buffers, gpu, emulated):
        if not M.is_float(buf.dtype) or (exact and buf.err == 0):
            assert g.tobytes() == e.tobytes(), f"{buf.name} ({buf.dtype}) for {target}: GPU {g.reshape(-1)[:8]} " \
                                               f"emulator {e.reshape(-1)[:8]}\n{program}"
    for side, values in ((gpu_side, gpu), (emulator_side, emulated)):
        model_values = [harness.contents(v, b) for v, b in zip(values, program.buffers)]
        problems = harness.mismatches(program, model_values, slack_ulps=FUZZ_SLACK_ULPS)
        assert not problems, f"{side.name} for {target} differs from the model:\n" + "\n".join(problems) + \
                             f"\n{program}"


# ------------------------------------------------------------------ tests

CORPUS = kernel_corpus()
KERNEL_RUNS = [(c, t) for c in CORPUS for t in c.targets]


@pytest.mark.gpu
def test_kernel_corpus_on_the_gpu_and_the_emulator(monkeypatch):
    gpu_side, emulator_side = GpuSide(monkeypatch), EmulatorSide()
    verdicts = [compare(case, target, gpu_side, emulator_side) for case, target in KERNEL_RUNS]
    print(f"differential corpus: {len(KERNEL_RUNS)} kernel launches of {len(CORPUS)} kernels "
          f"({verdicts.count('exact')} bit for bit in every array, the others exact in their integer arrays)")


@pytest.mark.gpu
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("target", TARGETS)
def test_generated_programs_on_the_gpu_and_the_emulator(monkeypatch, shard, target):
    gpu_side, emulator_side = GpuSide(monkeypatch), EmulatorSide()
    ran = []

    @settings(max_examples=PROGRAMS, deadline=None, derandomize=SHARDS == 1, database=None,
              suppress_health_check=list(HealthCheck))
    @given(program=programs())
    def check(program: Program) -> None:
        compare_program(program, target, gpu_side, emulator_side)
        ran.append(program)

    check()
    print(f"differential corpus, shard {shard} for {target}: {len(ran)} generated programs")


class _Shifted(EmulatorSide):
    """The emulator, with one byte of one array's result changed afterwards."""

    name = "shifted emulator"

    def __init__(self, index: int):
        self.index = index

    def values(self, array: Any) -> np.ndarray:
        out = super().values(array).copy()
        if self.index == 0:
            out.reshape(-1).view(np.uint8)[-1] ^= 0x40
        self.index -= 1
        return out


@pytest.mark.parametrize("name", ["seeded_dropout (float32)", "add_kernel", "softmax_kernel", "mma_peak_kernel"])
def test_the_comparison_on_the_emulator_alone(name):
    """Without a GPU: the corpus builders and the comparison run with the emulator on both sides
    (they agree), and a changed byte in an output is caught (bit for bit in an exact kernel,
    beyond the tolerance in an inexact one)."""
    case = next(c for c in CORPUS if c.name == name)
    verdict = compare(case, "sm_80", EmulatorSide(), EmulatorSide())
    assert verdict == ("exact" if name in ("seeded_dropout (float32)", "add_kernel") else "within tolerance")
    output = next(i for i, b in enumerate(case.buffers) if b.name in ("out", "c"))
    with pytest.raises(AssertionError, match="differ"):
        compare(case, "sm_80", _Shifted(output), EmulatorSide())


@pytest.mark.parametrize("name, target", [("add_kernel", "sm_80"), ("seeded_dropout (float16)", "sm_90a"),
                                          ("attn_fwd (bf16, causal=False, D=32)", "sm_80"),
                                          ("layer_norm_bwd_dx_fused (37x100, 4 locks)", "sm_80"),
                                          ("tma_matmul", "sm_90a"), ("persistent_matmul", "sm_90a")])
def test_the_gpu_launch_path_on_the_emulator(monkeypatch, name, target):
    """The GPU side's launches (DeviceArrays, bf16, descriptors of device arrays, the allocator
    context, the PTX of the launch) through TILE_EMULATE's path: the emulator stands in for the
    device, so CI runs this side's code too. (The grouped GEMM cases need a real GPU: their
    pointer tables hold addresses the emulator is not told of on this path.)"""
    from tile.emulator import EMULATOR_PREFIX

    monkeypatch.setenv("TILE_INTERPRET", "1")  # the GPU side's arrays in host memory, also on a GPU machine
    case = next(c for c in CORPUS if c.name == name)
    compare(case, target, GpuSide(monkeypatch, EMULATOR_PREFIX), EmulatorSide())


@settings(max_examples=3, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(program=programs(max_ops=6))
def test_generated_programs_on_the_emulator_alone(program):
    """The generated-program path of the differential test, both sides on the emulator, one of
    them through the GPU side's launch path."""
    from tile.emulator import EMULATOR_PREFIX

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILE_INTERPRET", "1")  # the GPU side's arrays in host memory, also on a GPU machine
        compare_program(program, "sm_80", GpuSide(patch, EMULATOR_PREFIX), EmulatorSide())


def test_exactness_of_ptx():
    assert exact_floats("\tadd.f32 %f1, %f2, %f3;\n\tmul.rn.f32 %f4, %f1, %f1;\n")
    assert exact_floats("\tmul.f32 %f1, %f2, %f3;\n\tsub.f32 %f4, %f2, %f3;\n")  # the sub does not take the product
    assert not exact_floats("\tmul.f32 %f1, %f2, %f3;\n\t@%p1 sub.f32 %f4, 0f3F800000, %f1;\n")
    assert not exact_floats("\tex2.approx.ftz.f32 %f1, %f2;\n")
    assert not exact_floats("\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n")
