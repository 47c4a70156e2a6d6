"""Triton's own fused-attention tutorial (06-fused-attention.py, Triton 3.6), its kernels unchanged,
on tile: forward and backward on the interpreter against float64 NumPy, and compiled for sm_90a.

The tutorial is Triton's code, kept out of the repository (an untracked copy in
.triton_tutorials/); these tests skip without it. It imports torch at the top, which CI lacks,
so the tests take its @triton.jit functions out of the file (their source, line numbers kept)
and define them with `import triton` resolved to tile. Tutorial 07 covers the same features
(tests/test_attention.py) where the file is absent.
"""
from __future__ import annotations

import ast
import types
from pathlib import Path

import numpy as np
import pytest

import tile

CANDIDATES = [Path(__file__).resolve().parent.parent / ".triton_tutorials" / "06-fused-attention.py",
              Path("/work/main/.triton_tutorials/06-fused-attention.py")]
SOURCE = next((p for p in CANDIDATES if p.is_file()), None)
pytestmark = pytest.mark.skipif(SOURCE is None, reason="Triton's 06-fused-attention.py is not present")


def triton_kernels(path: Path) -> types.SimpleNamespace:
    """The tutorial's @triton.jit functions, defined with tile as `triton` (autotune dropped)."""
    tile.install_as_triton(notice=False)
    import triton
    import triton.language as tl

    namespace = {"triton": triton, "tl": tl, "__name__": "triton_06_fused_attention", "__file__": str(path)}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d).endswith("jit") for d in node.decorator_list):
            jit = node.decorator_list[-1]
            node.decorator_list = [jit]
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return types.SimpleNamespace(**namespace)


@pytest.fixture(scope="module")
def tri():
    return triton_kernels(SOURCE)


def reference(q, k, v, do, sm_scale):
    """Causal attention and its gradients in float64 (the tutorial's backward is causal, or takes
    CAUSAL in later versions)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tutorials" / "07_fused_attention.py"
    spec = importlib.util.spec_from_file_location("tutorial_07_for_triton_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference(q, k, v, do, True, sm_scale)


@pytest.mark.parametrize("head_dim", [64, 128])
def test_triton_tutorial_forward_and_backward_on_interpreter(tri, head_dim):
    Z, H, N, sm_scale = 1, 2, 128, 0.5
    rng = np.random.default_rng(head_dim)
    q, k, v, do = ((rng.standard_normal((Z, H, N, head_dim)) * 0.5).astype(np.float16) for _ in range(4))
    o = np.full_like(q, np.nan)
    M = np.full((Z, H, N), np.nan, np.float32)
    # as _attention.forward launches it without host descriptors (STAGE 3: causal)
    tri._attn_fwd[(N // 64, Z * H, 1)](sm_scale, M, Z, H, q, k, v, o, N_CTX=N, HEAD_DIM=head_dim, BLOCK_M=64,
                                        BLOCK_N=32, FP8_OUTPUT=False, STAGE=3, warp_specialize=False, IS_HOPPER=True)
    delta = np.full_like(M, np.nan)
    tri._attn_bwd_preprocess[(N // 128, Z * H)](o, do, delta, Z, H, N, BLOCK_M=128, HEAD_DIM=head_dim)
    dq, dk, dv = (np.full_like(q, np.nan) for _ in range(3))
    arg_k = (k.astype(np.float32) * (sm_scale * 1.4426950408889634)).astype(np.float16)  # as backward() scales K
    strides = [s // q.itemsize for s in q.strides]
    tri._attn_bwd[(N // 128, 1, Z * H)](q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta, *strides, H, N,
                                         BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2,
                                         HEAD_DIM=head_dim, num_warps=4, num_stages=5,
                                         **({"CAUSAL": True} if "CAUSAL" in tri._attn_bwd.arg_names else {}))
    want = reference(*(x.astype(np.float64) for x in (q, k, v, do)), sm_scale)
    for name, got, exact in zip(("o", "dq", "dk", "dv"), (o, dq, dk, dv), want):
        np.testing.assert_allclose(got.astype(np.float64), exact, atol=1e-2, rtol=1e-2, err_msg=name)


@pytest.mark.parametrize("stage", [1, 3])
def test_triton_tutorial_forward_compiles_for_sm90a_with_wgmma(tri, stage):
    from tile.runtime.ptxas import assemble, find_ptxas

    q = np.zeros((1, 1, 128, 64), np.float16)
    M = np.zeros((1, 1, 128), np.float32)
    ptx = str(tile.dump(tri._attn_fwd, 0.5, M, 4, 32, q, q, q, q, N_CTX=4096, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64,
                        FP8_OUTPUT=False, STAGE=stage, warp_specialize=False, IS_HOPPER=True, stage="ptx",
                        target="sm_90a", num_warps=8, num_stages=3))
    assert "wgmma.mma_async" in ptx
    if find_ptxas() is not None:
        assert assemble(ptx, "sm_90a").cubin
