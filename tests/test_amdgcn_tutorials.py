"""Every tutorial's kernels on gfx942, gfx90a and gfx1100: each launch of the tutorial's own code (its
launch helpers and checks, at small sizes) is compiled to AMDGCN, assembled and linked by llvm-mc
and ld.lld for that target, and run on the emulator's wave machine (TILE_EMULATE=1
TILE_EMULATE_TARGET=gfx942, gfx90a or gfx1100), against the tutorial's NumPy reference or the same
tolerances as its GPU check.

Each runs a third time on gfx942 with its VGPRs cut to 24, so that the register allocator
moves many values to AGPRs (tests/test_amdgcn_agpr.py: the blocks that need them at full size).
On gfx1100 the matmul and attention tutorials' dots run on WMMA (asserted in their assembly).
Tutorial 06 (the persistent matmul written for Hopper) runs with its 8 warps and a 128 x 128
block on every target.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import tile
from amdgcn_util import needs_llvm
from tile.codegen.amdgcn import TARGETS, assemble
from tile.codegen.amdgcn.isa import VGPR_LIMIT
from tile.emulator import amdgcn_machine
from tutorial_util import load_tutorial

RNG = np.random.default_rng(909)


def tutorial(name: str):
    return load_tutorial(name, "gfx942_tutorial")


TIGHT_VGPRS = 24   # a VGPR file this small moves many kernels' values to AGPRs (regalloc)


@pytest.fixture(params=[*TARGETS, f"gfx942-{TIGHT_VGPRS}-vgprs"])
def gfx_launches(monkeypatch, request):
    """Launches run as code of the target on the emulator; the AMDGCN text of each, by kernel
    name. The third run has gfx942 with only TIGHT_VGPRS VGPRs: values the others keep in VGPRs
    live in AGPRs, and every tutorial must still compute the same."""
    target, _, vgprs = request.param.partition("-")
    if vgprs:
        monkeypatch.setitem(VGPR_LIMIT, target, TIGHT_VGPRS)
    monkeypatch.setenv("TILE_EMULATE", "1")
    monkeypatch.setenv("TILE_EMULATE_TARGET", target)
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    texts: dict[str, str] = {}
    run = amdgcn_machine.AmdgcnEmulatorBackend.run

    def recording_run(self, grid, args, trace=None):
        texts[self.text.split(".globl ", 1)[1].split()[0]] = self.text
        return run(self, grid, args, trace)

    monkeypatch.setattr(amdgcn_machine.AmdgcnEmulatorBackend, "run", recording_run)
    return texts


def assembled(texts: dict[str, str], *kernels: str) -> None:
    """Each of `kernels` ran on the emulator, and its text assembles to a code object."""
    assert sorted(texts) == sorted(kernels)
    for text in texts.values():
        target = text.split('.amdgcn_target "amdgcn-amd-amdhsa--', 1)[1].split('"')[0]
        assert assemble(text, target)[:4] == b"\x7fELF"


def on_wmma(texts: dict[str, str], *kernels: str) -> None:
    """On gfx1100, each of `kernels` runs a dot (at least one) on WMMA."""
    if os.environ["TILE_EMULATE_TARGET"] == "gfx1100":
        for name in kernels:
            assert "v_wmma_f32_16x16x16_f16" in texts[name], name


@needs_llvm
def test_01_vector_add(gfx_launches):
    t = tutorial("01_vector_add")
    x, y = RNG.standard_normal(3000).astype(np.float32), RNG.standard_normal(3000).astype(np.float32)
    out = t.add(tile.to_device(x), tile.to_device(y)).numpy()
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assembled(gfx_launches, "add_kernel")


@needs_llvm
def test_02_fused_softmax(gfx_launches):
    t = tutorial("02_fused_softmax")
    x = RNG.standard_normal((5, 781)).astype(np.float32)
    out = t.softmax(tile.to_device(x)).numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True).astype(np.float64))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assembled(gfx_launches, "softmax_kernel")


@needs_llvm
def test_03_layer_norm(gfx_launches):
    t = tutorial("03_layer_norm")
    rows, cols, eps = 4, 300, 1e-5
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w, b = RNG.standard_normal(cols).astype(np.float32), RNG.standard_normal(cols).astype(np.float32)
    y, mean, rstd = (a.numpy() for a in t.layer_norm(*(tile.to_device(a) for a in (x, w, b)), eps=eps))
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var + eps), rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float64), (x64 - mu[:, None]) / np.sqrt(var[:, None] + eps) * w + b,
                               rtol=2e-3, atol=2e-3)
    assembled(gfx_launches, "layer_norm_kernel")


@needs_llvm
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_04_matrix_multiplication(gfx_launches, activation):
    t = tutorial("04_matrix_multiplication")
    a, b = RNG.standard_normal((40, 48)).astype(np.float16), RNG.standard_normal((48, 36)).astype(np.float16)
    c = t.matmul(tile.to_device(a), tile.to_device(b), activation).numpy().astype(np.float64)
    expected = a.astype(np.float64) @ b
    if activation:
        expected = np.where(expected >= 0, expected, 0.01 * expected)
    np.testing.assert_allclose(c, expected, rtol=1e-2, atol=5e-2)
    assembled(gfx_launches, "matmul_kernel")
    on_wmma(gfx_launches, "matmul_kernel")


@needs_llvm
def test_05_tensor_cores(gfx_launches):
    t = tutorial("05_tensor_cores")
    M, N, K = 70, 80, 96
    a, b = RNG.standard_normal((M, K)).astype(np.float16), RNG.standard_normal((K, N)).astype(np.float16)
    c = tile.to_device(np.full((M, N), np.nan, np.float16))
    grid = (tile.cdiv(M, t.BLOCK_M), tile.cdiv(N, t.BLOCK_N))
    t.matmul_kernel[grid](tile.to_device(a), tile.to_device(b), c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=t.BLOCK_M,
                          BLOCK_N=t.BLOCK_N, BLOCK_K=t.BLOCK_K, num_warps=t.NUM_WARPS, num_stages=t.NUM_STAGES)
    np.testing.assert_allclose(c.numpy().astype(np.float64), a.astype(np.float64) @ b, rtol=1e-2, atol=5e-2)
    assembled(gfx_launches, "matmul_kernel")
    on_wmma(gfx_launches, "matmul_kernel")


@needs_llvm
def test_06_persistent_matmul(gfx_launches):
    t = tutorial("06_hopper_matmul")
    t.run(200, 144, 96, 2)   # poisoned output, every element compared with float64 NumPy
    assembled(gfx_launches, "persistent_matmul")
    on_wmma(gfx_launches, "persistent_matmul")


@pytest.mark.parametrize("causal", [True, False])
@needs_llvm
def test_07_fused_attention(gfx_launches, causal):
    t = tutorial("07_fused_attention")
    t.check((1, 2, 64, 32), "f16", causal)   # forward and backward against its float64 reference
    assembled(gfx_launches, "attn_fwd", "attn_bwd_preprocess", "attn_bwd_dkdv", "attn_bwd_dq")
    on_wmma(gfx_launches, "attn_fwd", "attn_bwd_dkdv", "attn_bwd_dq")


@needs_llvm
def test_08_low_memory_dropout(gfx_launches):
    t = tutorial("08_low_memory_dropout")
    t.check(3000, p=0.3)   # same seed, same mask; another seed, another; the kept fraction; the scale
    assembled(gfx_launches, "seeded_dropout_kernel")


@needs_llvm
@pytest.mark.parametrize("rows, cols, group", [(48, 300, 0), (130, 64, 8)])
def test_09_layer_norm_backward(gfx_launches, rows, cols, group):
    """The tutorial's CPU sizes. 48 x 300 made the dw/db reduction spill SGPRs to VGPR lanes on
    the CDNA targets while their warps were 32 lanes; on waves of 64 it fits the 102 SGPRs
    there as on gfx1100 (SGPR spills are test_amdgcn_spill's)."""
    t = tutorial("09_layer_norm_backward")
    t.check(rows, cols, group)
    assembled(gfx_launches, "layer_norm_fwd_kernel", "layer_norm_bwd_dx_fused_kernel",
              "layer_norm_bwd_dwdb_kernel")
    if (rows, cols) == (48, 300):
        dwdb = gfx_launches["layer_norm_bwd_dwdb_kernel"]
        assert "v_writelane_b32" not in dwdb and ".sgpr_spill_count: 0" in dwdb


@needs_llvm
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_rows, n_cols", [(1151, 8192), (4096, 1000)])
def test_09_compiles_at_the_gpu_sizes(n_rows, n_cols, target):
    """The sizes main() checks on a GPU (too slow to emulate): compiled and assembled."""
    t = tutorial("09_layer_norm_backward")
    block, num_warps = t.launch_config(n_cols, 2)
    groups = t.group_size(n_cols, n_rows)
    h, w, f = np.ones((n_rows, n_cols), np.float16), np.ones(n_cols, np.float16), np.ones(n_rows, np.float32)
    partial, locks = np.ones((groups, n_cols), np.float32), np.zeros(2 * groups, np.int32)
    texts = [tile.dump(t.layer_norm_fwd_kernel, h, h, w, w, f, f, n_cols, n_cols, 1e-5, BLOCK_SIZE_N=block,
                       num_warps=num_warps, stage="amdgcn", target=target),
             tile.dump(t.layer_norm_bwd_dx_fused_kernel, h, h, partial, partial, h, w, f, f, locks, n_cols, n_cols,
                       GROUP_SIZE_M=groups, BLOCK_SIZE_N=block, num_warps=num_warps, stage="amdgcn", target=target),
             tile.dump(t.layer_norm_bwd_dwdb_kernel, partial, partial, w, w, groups, n_cols, BLOCK_SIZE_M=32,
                       BLOCK_SIZE_N=128, stage="amdgcn", target=target)]
    for text in texts:
        assert assemble(str(text), target)[:4] == b"\x7fELF"
