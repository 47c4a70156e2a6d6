"""AMD targets' choice of LDS buffer layouts (tile.opt.amd_shared_layouts) against the NVIDIA choice,
measured by the emulator's bank-conflict counter on tutorial 04's matmul (f16 and fnuz fp8 on
gfx942, f16 on gfx1100), with the results checked against NumPy in both cases."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import tile
from tile.emulator.amdgcn_lds_banks import count_lds_bank_conflicts
from tile.opt import amd_shared_layouts
from tile.opt.convert_through_shared import shared_layout_for

from amdgcn_util import warps_for
from test_amdgcn_fp8 import FNUZ, fnuz
from test_amdgcn_fp8_dot import small_codes

M = N = K = 64
TILE = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2, ACTIVATION="", num_stages=2)
THREADS = 128   # two waves of 64 on gfx942, four of 32 on gfx1100


def _tutorial_04_kernel():
    path = pathlib.Path(__file__).parent.parent / "tutorials" / "04_matrix_multiplication.py"
    spec = importlib.util.spec_from_file_location("tutorial_04_lds", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul_kernel.fn


def run_matmul(target: str, dtype: str):
    """Tutorial 04 on 64x64x64 in 32x32x32 tiles: (LDS counter, compiled kernel); c checked."""
    rng = np.random.default_rng(4)
    if dtype == "f16":
        a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
        args, exact = (a, b), a.astype(np.float64) @ b.astype(np.float64)
        tolerance = dict(rtol=1e-2, atol=5e-2)
    else:
        a, b = small_codes(rng, (M, K), dtype), small_codes(rng, (K, N), dtype)
        args = (tile.reinterpret(a, FNUZ[dtype]), tile.reinterpret(b, FNUZ[dtype]))
        exact = fnuz(a, dtype) @ fnuz(b, dtype)
        tolerance = dict(rtol=2e-3, atol=2e-3)
    c = np.full((M, N), np.nan, np.float16)
    with count_lds_bank_conflicts() as lds:
        launch = tile.emulate(_tutorial_04_kernel(), target=target)[(4,)]
        compiled = launch(*args, c, M, N, K, K, 1, N, 1, N, 1, num_warps=warps_for(target, THREADS), **TILE)
    np.testing.assert_allclose(c, exact, **tolerance)
    return lds, compiled


@pytest.fixture
def nvidia_choice(monkeypatch):
    """No AMD target listed: every target takes the NVIDIA choice."""
    monkeypatch.setattr(amd_shared_layouts, "ORDER_SEARCH_TARGETS", frozenset())
    shared_layout_for.cache_clear()
    yield
    shared_layout_for.cache_clear()


# (target, dtype): (LDS clocks, conflict clocks) with the NVIDIA choice, then with AMD's order search.
# Before both this and the 8-byte operand reads (tile.codegen.lower_ldmatrix), the counts were
# gfx942 f16 (1280, 192), fp8 (1024, 128), gfx1100 f16 (1984, 0).
TUTORIAL_04_CLOCKS = {
    ("gfx942", "f16"): ((1152, 64), (1088, 0)),
    ("gfx942", "f8e4b8"): ((960, 64), (896, 0)),
    ("gfx1100", "f16"): ((1984, 0), (1984, 0)),
}


@pytest.mark.parametrize("target, dtype", list(TUTORIAL_04_CLOCKS))
def test_tutorial_04_lds_clocks_with_the_nvidia_choice(nvidia_choice, target, dtype):
    lds, _ = run_matmul(target, dtype)
    assert (lds.clocks, lds.conflict_clocks) == TUTORIAL_04_CLOCKS[target, dtype][0]


@pytest.mark.parametrize("target, dtype", list(TUTORIAL_04_CLOCKS))
def test_tutorial_04_lds_clocks_with_the_amd_order_search(target, dtype):
    shared_layout_for.cache_clear()
    lds, _ = run_matmul(target, dtype)
    assert (lds.clocks, lds.conflict_clocks) == TUTORIAL_04_CLOCKS[target, dtype][1]
    assert all(record.ways == 1 for record in lds.by_instruction())


@pytest.mark.parametrize("dtype", ["f16", "f8e4b8"])
def test_the_gfx942_epilogue_buffer_is_n_major_and_conflict_free(dtype):
    shared_layout_for.cache_clear()
    lds, compiled = run_matmul("gfx942", dtype)
    assert "tensor<32x32xf16, #shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>>" in compiled.asm["gpu"]
    epilogue = [r for r in lds.by_instruction() if r.origin.endswith("04_matrix_multiplication.py:80")]
    assert {r.opcode for r in epilogue} == {"ds_write_b16", "ds_read_b128"}
    assert all(r.conflict_clocks == 0 for r in epilogue)


def test_mfma_operands_are_read_8_bytes_at_a_time_on_gfx942():
    """Two adjacent words of an operand are one ds_read_b64: no 2-way ds_read_b32 pairs left."""
    shared_layout_for.cache_clear()
    lds, compiled = run_matmul("gfx942", "f16")
    operand_reads = {r.opcode for r in lds.by_instruction()
                     if r.origin.endswith("04_matrix_multiplication.py:73") and r.opcode.startswith("ds_read")}
    assert operand_reads == {"ds_read_b64", "ds_read_u16"}
    assert "ds_read_b32" not in compiled.asm["amdgcn"]


def _operand_buffers(gpu_ir: str) -> list[str]:
    return [line.split(":", 1)[1] for line in gpu_ir.splitlines() if "gpu.local_alloc" in line][:2]


@pytest.mark.parametrize("target, dtype", list(TUTORIAL_04_CLOCKS))
def test_operand_buffers_keep_the_nvidia_choice(monkeypatch, target, dtype):
    shared_layout_for.cache_clear()
    _, amd = run_matmul(target, dtype)
    monkeypatch.setattr(amd_shared_layouts, "ORDER_SEARCH_TARGETS", frozenset())
    shared_layout_for.cache_clear()
    _, nvidia = run_matmul(target, dtype)
    shared_layout_for.cache_clear()
    assert _operand_buffers(amd.asm["gpu"]) == _operand_buffers(nvidia.asm["gpu"])


def test_only_amd_targets_search_the_order():
    assert amd_shared_layouts.ORDER_SEARCH_TARGETS == {"gfx942", "gfx90a", "gfx1100"}
