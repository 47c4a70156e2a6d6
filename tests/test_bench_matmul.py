"""benchmarks/bench_matmul.py without a GPU: its rows, candidate configurations and table lines, and
that tile compiles every candidate configuration of every row for sm_90a on the tensor cores
without spilling (ptxas). The benchmark itself runs on a GPU (the lead's H100 session)."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from ptxas_util import assemble_ok, needs_ptxas

import tile
import tile.language as tl

BENCHMARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("bench_matmul_under_test", "bench_matmul.py")
ALL_ROWS = bench.problems(list(bench.DTYPES), skinny=True)


def test_default_arguments_keep_the_fp16_square_table():
    args = bench.parse_args([])
    assert args.dtype == ["fp16"] and not args.skinny and not args.quick
    assert bench.problems(args.dtype, args.skinny) == [bench.Problem("fp16", 4096, 4096, 4096),
                                                       bench.Problem("fp16", 8192, 8192, 8192)]


def test_dtype_and_skinny_rows():
    args = bench.parse_args(["--dtype", "fp16", "bf16", "fp8", "--skinny", "--quick"])
    rows = bench.problems(args.dtype, args.skinny)
    assert [(r.dtype, r.m, r.n, r.k) for r in rows[:5]] == [
        ("fp16", 4096, 4096, 4096), ("fp16", 8192, 8192, 8192),
        ("fp16", 16, 8192, 8192), ("fp16", 64, 8192, 8192), ("fp16", 128, 8192, 8192)]
    assert [r.dtype for r in rows] == ["fp16"] * 5 + ["bf16"] * 5 + ["fp8"] * 5


def test_skinny_only_rows():
    args = bench.parse_args(["--dtype", "bf16", "--skinny-only"])
    rows = bench.problems(args.dtype, args.skinny or args.skinny_only, square=not args.skinny_only)
    assert [(r.dtype, r.m) for r in rows] == [("bf16", 16), ("bf16", 64), ("bf16", 128)]


def test_unknown_dtype_is_refused():
    with pytest.raises(SystemExit):
        bench.parse_args(["--dtype", "fp4"])


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: f"{r.dtype}-{r.m}x{r.n}x{r.k}")
def test_candidate_configs(row):
    cfgs = bench.configs_for(row, quick=False)
    assert cfgs and bench.configs_for(row, quick=True) == cfgs[:2]
    for bm, bn, bk, gm, warps, stages in cfgs:
        assert all(x & (x - 1) == 0 for x in (bm, bn, bk, warps))
        assert bench.stage_bytes((bm, bn, bk, gm, warps, stages), row.dtype) <= bench.H100_SHARED_BYTES
        assert bm >= bench.MIN_BLOCK_M[row.dtype]
        if row.m <= bench.SKINNY_MAX_M:  # decode shapes: no block much taller than M
            assert bm <= max(row.m, bench.MIN_BLOCK_M[row.dtype])
            assert bench.grid_size(row, (bm, bn, bk, gm, warps, stages)) >= 32
    assert any(bm <= row.m for bm, *_ in cfgs) or row.m < bench.MIN_BLOCK_M[row.dtype]


def test_fp8_configs_move_the_same_bytes_per_stage():
    for m in (8192, 64):
        fp16 = bench.configs_for(bench.Problem("fp16", m, 8192, 8192), quick=False)
        fp8 = bench.configs_for(bench.Problem("fp8", m, 8192, 8192), quick=False)
        assert fp8 == [(bm, bn, 2 * bk, *rest) for bm, bn, bk, *rest in fp16 if bm >= 64]
        assert {bench.stage_bytes(c, "fp8") for c in fp8} <= {bench.stage_bytes(c, "fp16") for c in fp16}


def test_tflops_and_table_line():
    row = bench.Problem("fp8", 16, 8192, 8192)
    assert bench.tflops(row, 1.0) == pytest.approx(2 * 16 * 8192 * 8192 / 1e9)
    line = bench.format_row({"dtype": "fp8", "M": 16, "N": 8192, "K": 8192, "tile_TFLOPs": 300.0,
                             "triton_TFLOPs": 250.0, "cublas_TFLOPs": None, "cublas_note": "no _scaled_mm",
                             "tile_config": (64, 32, 512, 1, 4, 4), "tile_registers": 90, "tile_spills": 0,
                             "tile_shared_bytes": 196608})
    assert line.split()[:8] == ["fp8", "16", "8192", "8192", "300", "250", "n/a", "1.20x"]
    assert line.endswith("(cuBLAS omitted: no _scaled_mm)") and "/ 90 / 0 / 196608" in line
    nan = bench.format_row({"dtype": "fp16", "M": 64, "N": 8192, "K": 8192, "tile_TFLOPs": float("nan"),
                            "triton_TFLOPs": 100.0, "cublas_TFLOPs": 120.0, "cublas_note": ""})
    assert nan.split()[4:8] == ["n/a", "100", "120", "n/a"]
    assert len(bench.HEADER.split()) >= 8


TILE_KERNELS = _load("bench_matmul_tile_kernels", "load_kernels.py").load_kernels("bench_matmul_tile", tile.jit, tl)
TILE_DTYPES = {"fp16": "f16", "bf16": "bf16", "fp8": "f8e4nv"}


def _compiles(row, cfg):
    a, b = tile.empty((row.m, row.k), TILE_DTYPES[row.dtype]), tile.empty((row.k, row.n), TILE_DTYPES[row.dtype])
    b_strides = (1, row.k) if row.dtype == "fp8" else (row.n, 1)  # fp8's B is K-major (bench.make_inputs)
    bm, bn, bk, gm, warps, stages = cfg
    return str(tile.dump(TILE_KERNELS.matmul_kernel, a, b, tile.empty((row.m, row.n), "f16"), row.m, row.n, row.k,
                         row.k, 1, *b_strides, row.n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                         stage="ptx", target="sm_90a", num_warps=warps, num_stages=stages))


# every (dtype, configuration) pair of the full table once; M picks the skinny or the square list
CANDIDATES = sorted({(row.dtype, row.m if row.m <= bench.SKINNY_MAX_M else 8192, cfg)
                     for row in ALL_ROWS if row.m >= bench.SKINNY_MAX_M for cfg in bench.configs_for(row, quick=False)})


@needs_ptxas
@pytest.mark.parametrize("dtype,m,cfg", CANDIDATES, ids=str)
def test_tile_compiles_candidates_on_tensor_cores(dtype, m, cfg):
    ptx = _compiles(bench.Problem(dtype, m, 8192, 8192), cfg)
    assert "wgmma.mma_async" in ptx or "mma.sync" in ptx
    info = assemble_ok(ptx, "sm_90a")
    assert info.spill_stores == 0 and info.spill_loads == 0, (cfg, info)


# skinny configurations with BLOCK_M 16 and 64 that also fit sm_80 (conftest assembles every test kernel for it)
@pytest.mark.parametrize("cfg", [c for c in bench.SKINNY_CONFIGS if c[:3] in ((16, 32, 256), (64, 64, 128))],
                         ids=str)
def test_skinny_config_is_correct_on_the_interpreter(cfg):
    """A decode-shaped product (M = 16 under the first skinny BLOCK_M = 16 and 64 configurations:
    rows past M wrap around and are not stored) with the benchmark's grid, against NumPy in float64."""
    row = bench.Problem("fp16", 16, 64, 512)
    bm, bn, bk, gm, warps, stages = cfg
    rng = np.random.default_rng(0)
    a = rng.standard_normal((row.m, row.k)).astype(np.float16)
    b = rng.standard_normal((row.k, row.n)).astype(np.float16)
    c = np.full((row.m, row.n), np.nan, np.float16)
    TILE_KERNELS.matmul_kernel[(bench.grid_size(row, cfg),)](
        a, b, c, row.m, row.n, row.k, row.k, 1, row.n, 1, row.n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        GROUP_M=gm, num_warps=warps, num_stages=stages)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=5e-2)
