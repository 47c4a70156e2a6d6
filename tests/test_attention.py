"""Tutorial 07's fused attention: forward and backward on the interpreter against float64 NumPy,
the host wrapper's errors, and the kernels compiled for sm_80 and sm_90a (wgmma on Hopper, one
barrier per iteration, no spills in the configurations the tutorial launches on a GPU)."""
from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tile
from tile.runtime.ptxas import assemble, find_ptxas
from tile.tools.tensor_descriptor import TensorDescriptor

TUTORIAL = Path(__file__).resolve().parent.parent / "tutorials" / "07_fused_attention.py"


def _load_tutorial():
    spec = importlib.util.spec_from_file_location("tutorial_07_fused_attention", TUTORIAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = _load_tutorial()


def _run(shape, dtype: str, causal: bool, sm_scale: float, seed: int):
    (q, k, v, do), exact = T.make_inputs(shape, dtype, seed)
    o, M = T.attention_forward(q, k, v, causal, sm_scale)
    dq, dk, dv = T.attention_backward(q, k, v, o, M, do, causal, sm_scale)
    return (o, M, dq, dk, dv), exact


def _assert_matches(got, exact, causal: bool, sm_scale: float, dtype: str) -> None:
    want = T.reference(*exact, causal, sm_scale)
    tol = 1e-2 if dtype == "f16" else 4e-2
    for name, g, w in zip(("o", "dq", "dk", "dv"), (got[0],) + tuple(got[2:]), want):
        np.testing.assert_allclose(T.from_device(g), w, atol=tol, rtol=tol, err_msg=name)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_forward_and_backward_match_float64(dtype, causal, head_dim):
    shape = (1, 2, 64, head_dim)
    got, exact = _run(shape, dtype, causal, 0.3, seed=head_dim)
    _assert_matches(got, exact, causal, 0.3, dtype)
    # M is the base-2 log-sum-exp of each row of scaled scores
    q, k = exact[0], exact[1]
    s = q @ np.swapaxes(k, -1, -2) * 0.3
    if causal:
        s = np.where(np.tril(np.ones((64, 64), dtype=bool)), s, -np.inf)
    lse2 = np.log2(np.sum(np.exp(s - s.max(-1, keepdims=True)), -1)) + s.max(-1) / math.log(2)
    np.testing.assert_allclose(got[1].numpy(), lse2, rtol=1e-4, atol=1e-3)


@settings(max_examples=6, deadline=None)
@given(z=st.integers(1, 2), h=st.integers(1, 2), blocks=st.integers(1, 3), head_dim=st.sampled_from([16, 32]),
       causal=st.booleans(), sm_scale=st.floats(0.05, 1.0), seed=st.integers(0, 2**16))
def test_attention_property_over_shapes(z, h, blocks, head_dim, causal, sm_scale, seed):
    shape = (z, h, 32 * blocks, head_dim)
    got, exact = _run(shape, "f16", causal, sm_scale, seed)
    _assert_matches(got, exact, causal, sm_scale, "f16")


def test_causal_first_row_attends_to_itself_only():
    (q, k, v, _), exact = T.make_inputs((1, 1, 32, 16), "f16", seed=3)
    o, _ = T.attention_forward(q, k, v, True, 1.0)
    np.testing.assert_allclose(T.from_device(o)[0, 0, 0], exact[2][0, 0, 0], atol=1e-3)


# ------------------------------------------------------------------------------ the host wrapper's errors


def test_wrapper_rejects_unsupported_head_dim():
    (q, k, v, _), _ = T.make_inputs((1, 1, 32, 48), "f16")
    message = r"head dimension 48 is not supported; the kernels take D in \(16, 32, 64, 128\)"
    with pytest.raises(ValueError, match=message):
        T.attention_forward(q, k, v, False, 0.5)


def test_wrapper_rejects_ragged_sequence():
    (q, k, v, _), _ = T.make_inputs((1, 1, 40, 16), "f16")
    with pytest.raises(ValueError, match="sequence length 40 must be a multiple of 32"):
        T.attention_forward(q, k, v, False, 0.5)


def test_wrapper_rejects_bad_dtype_and_shapes():
    q = tile.to_device(np.ones((1, 1, 32, 16), np.float32))
    with pytest.raises(TypeError, match="must be float16 or bfloat16, not f32"):
        T.attention_forward(q, q, q, False, 0.5)
    (q, k, v, _), _ = T.make_inputs((1, 1, 32, 16), "f16")
    k2 = tile.to_device(np.ones((1, 1, 64, 16), np.float16))
    with pytest.raises(ValueError, match=r"must have one shape \[Z, H, S, D\]"):
        T.attention_forward(q, k2, v, False, 0.5)


def test_wrapper_rejects_block_sizes_that_do_not_divide():
    (q, k, v, do), _ = T.make_inputs((1, 1, 64, 16), "f16")
    with pytest.raises(ValueError, match="BLOCK_M 16 must be a multiple of BLOCK_N 32"):
        T.attention_forward(q, k, v, True, 0.5, BLOCK_M=16, BLOCK_N=32)
    o, M = T.attention_forward(q, k, v, True, 0.5)
    with pytest.raises(ValueError, match=r"BLOCK_N1 \(32\) must be a multiple of BLOCK_M1 \(64\)"):
        T.attention_backward(q, k, v, o, M, do, True, 0.5, BLOCK_M1=64)


# ------------------------------------------------------------------------------ compiled for the GPU

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")


def _fwd_ptx(head_dim: int, causal: bool, target: str, config: dict) -> str:
    q = tile.empty((1, 1, 128, head_dim), "f16")
    M = tile.empty((1, 1, 128), np.float32)
    return str(tile.dump(T.attn_fwd, q, q, q, q, M, 0.5, 4096, HEAD_DIM=head_dim, STAGE=3 if causal else 1,
                         stage="ptx", target=target, **config))


def _loops(ptx: str) -> list[str]:
    """The PTX of every loop: from its label to the branch back to it."""
    bodies = []
    for found in re.finditer(r"^(\$L__\w+):", ptx, re.M):
        back = ptx.find(f"bra.uni {found.group(1)};", found.end())
        if back >= 0:
            bodies.append(ptx[found.start():back])
    return bodies


def _desc_fwd_ptx(head_dim: int, causal: bool, config: dict) -> str:
    from tile.tools.tensor_descriptor import TensorDescriptor

    q = tile.empty((1, 1, 4096, head_dim), "f16")
    M = tile.empty((1, 1, 4096), np.float32)
    rows = [config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_N"], config["BLOCK_M"]]
    descs = [TensorDescriptor(q, [4096, head_dim], [head_dim, 1], [r, head_dim]) for r in rows]
    return str(tile.dump(T.attn_fwd_desc, *descs, M, 0.5, 4096, HEAD_DIM=head_dim, STAGE=3 if causal else 1,
                         stage="ptx", target="sm_90a", **config))


def _loop_body(ptx: str) -> str:
    """The PTX of the first loop."""
    loops = _loops(ptx)
    assert loops, "no loop in the PTX"
    return loops[0]


GPU_FWD = [(128, False, dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3)),
           (128, True, dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)),
           (128, True, dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3)),
           (64, True, dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3))]


@needs_ptxas
@pytest.mark.parametrize("head_dim, causal, config", GPU_FWD)
def test_forward_on_sm90a_uses_wgmma_without_spills(head_dim, causal, config):
    ptx = _fwd_ptx(head_dim, causal, "sm_90a", config)
    info = assemble(ptx, "sm_90a")
    assert info.spill_bytes == 0, info.log
    loop = _loop_body(ptx)
    k_steps = head_dim // 16 + config["BLOCK_N"] // 16  # Q @ K^T over D, then P @ V over BLOCK_N
    assert loop.count("wgmma.mma_async") == k_steps
    # P @ V takes P from registers: its A operand is a register vector, not a shared descriptor
    assert re.search(r"wgmma\.mma_async\S* \{[^}]*\}, \{%r", loop)
    assert loop.count("cp.async.cg") > 0 and "cp.async.wait_group 1;" in loop   # K and V pipelined
    # one barrier per iteration, between the wait and the next copies; cp.async bytes need no proxy fence
    assert loop.count("bar.sync") == 1 and "fence.proxy.async" not in loop
    assert loop.index("cp.async.wait_group") < loop.index("bar.sync") < loop.index("cp.async.cg")
    # the softmax needs no trip through shared memory
    assert "st.shared" not in loop and "ld.shared" not in loop


@needs_ptxas
@pytest.mark.parametrize("head_dim, causal, config", GPU_FWD[:2] + GPU_FWD[3:])
def test_descriptor_forward_on_sm90a_releases_stages_without_barriers(head_dim, causal, config):
    """attn_fwd_desc, the GPU default on sm_90a: K and V by TMA on a ring that each thread releases
    on an mbarrier (no bar.sync in the loop, so the warp groups drift apart), the next copies
    issued by warp 0 after Q @ K^T, no spills."""
    rows = 4096
    q = tile.empty((1, 1, rows, head_dim), "f16")
    M = tile.empty((1, 1, rows), np.float32)
    descs = [TensorDescriptor(q, [rows, head_dim], [head_dim, 1], [config[b], head_dim])
             for b in ("BLOCK_M", "BLOCK_N", "BLOCK_N", "BLOCK_M")]
    ptx = str(tile.dump(T.attn_fwd_desc, *descs, M, 0.5, rows, HEAD_DIM=head_dim, STAGE=3 if causal else 1,
                        stage="ptx", target="sm_90a", **config))
    info = assemble(ptx, "sm_90a")
    assert info.spill_bytes == 0, info.log
    loop = _loop_body(ptx)
    assert "bar.sync" not in loop and loop.count("mbarrier.arrive.shared::cta.b64") == 1
    issuer_wait = re.search(r"@!%p\d+ mbarrier\.try_wait\.parity", loop).start()
    first_dot_done = loop.index("wgmma.wait_group.sync.aligned 0")
    assert first_dot_done < issuer_wait < loop.index("cp.async.bulk.tensor") < loop.rindex("wgmma.mma_async")


@pytest.mark.parametrize("causal, paired, seq", [(False, False, 128), (True, False, 128), (True, True, 128),
                                                 (True, True, 96)])
def test_descriptor_forward_equals_the_pointer_forward(causal, paired, seq, monkeypatch):
    """attn_fwd_desc (attention_forward(..., descriptors=True)) gives attn_fwd's bytes: its causal
    loop with the mask behind a branch equals the two stages, and PAIRED (program i also runs
    block n - 1 - i) covers every block on half the grid, also the middle one of an odd count
    (3 blocks of 32 rows at S = 96)."""
    grids = []

    class Recorded:
        def __getitem__(self, grid):
            grids.append(grid)
            return attn_fwd_desc[grid]

    attn_fwd_desc = T.attn_fwd_desc
    monkeypatch.setattr(T, "attn_fwd_desc", Recorded())
    (q, k, v, _), _ = T.make_inputs((1, 2, seq, 64), "f16", seed=5)
    o1, m1 = T.attention_forward(q, k, v, causal, 0.5, descriptors=False)
    o2, m2 = T.attention_forward(q, k, v, causal, 0.5, descriptors=True, PAIRED=paired)
    blocks = seq // T.fwd_config(64, causal, seq)["BLOCK_M"]
    assert grids == [((blocks + 1) // 2 if paired else blocks, 2)]
    np.testing.assert_array_equal(T.from_device(o2), T.from_device(o1))
    np.testing.assert_array_equal(m2.numpy(), m1.numpy())


def test_pairing_needs_the_descriptor_forward():
    (q, k, v, _), _ = T.make_inputs((1, 1, 64, 16), "f16", seed=1)
    with pytest.raises(ValueError, match="PAIRED applies to the descriptor forward"):
        T.attention_forward(q, k, v, True, 0.5, descriptors=False, PAIRED=True)


@needs_ptxas
@pytest.mark.parametrize("head_dim, causal, config", [GPU_FWD[0], GPU_FWD[2], GPU_FWD[3]])
def test_descriptor_forward_on_sm90a_copies_with_tma_without_spills(head_dim, causal, config):
    ptx = _desc_fwd_ptx(head_dim, causal, config)
    info = assemble(ptx, "sm_90a")
    assert info.spill_bytes == 0, info.log
    loop = _loop_body(ptx)
    assert "cp.async.bulk.tensor" in loop and "mbarrier.try_wait" in loop and "cp.async.cg" not in loop
    assert loop.count("wgmma.mma_async") == head_dim // 16 + config["BLOCK_N"] // 16


@needs_ptxas
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len", [1024, 16384])
def test_descriptor_forward_default_configs(head_dim, causal, seq_len, monkeypatch):
    """fwd_config on Hopper: at D = 128 up to S = 4096, blocks small enough (128 registers, under
    half the SM's shared memory) that two programs share an SM; the causal loop is one loop (one
    ring) per block of queries, and PAIRED runs two blocks, each P @ V taking P from registers."""
    monkeypatch.setattr(T, "ON_GPU", True)
    config = T.fwd_config(head_dim, causal, seq_len, descriptors=True)
    assert config.pop("descriptors")
    paired = config.pop("PAIRED", False)
    if head_dim == 128:
        assert paired == (causal and seq_len <= 2048)
    q = tile.empty((1, 1, seq_len, head_dim), "f16")
    M = tile.empty((1, 1, seq_len), np.float32)
    descs = [TensorDescriptor(q, [seq_len, head_dim], [head_dim, 1], [config[b], head_dim])
             for b in ("BLOCK_M", "BLOCK_N", "BLOCK_N", "BLOCK_M")]
    launch = dict(HEAD_DIM=head_dim, STAGE=3 if causal else 1, PAIRED=paired, target="sm_90a", **config)
    shared = int(re.search(r"shared_bytes = (\d+)", str(tile.dump(T.attn_fwd_desc, *descs, M, 0.5, seq_len,
                                                                     stage="gpu", **launch))).group(1))
    ptx = str(tile.dump(T.attn_fwd_desc, *descs, M, 0.5, seq_len, stage="ptx", **launch))
    info = assemble(ptx, "sm_90a")
    assert info.spill_bytes == 0, info.log
    if head_dim == 128 and seq_len <= 4096:
        assert info.registers <= 128 and 2 * (shared + 1024) <= 228 * 1024, (info.registers, shared)
    loops = [body for body in _loops(ptx) if "wgmma.mma_async" in body]
    assert len(loops) == (2 if paired else 1)
    for body in loops:
        assert "st.shared" not in body and re.search(r"wgmma\.mma_async\S* \{[^}]*\}, \{%r", body)
        assert ("0fFF800000" in body) == causal  # the diagonal's mask (-inf), behind its branch


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_kernel_assembles(target, causal):
    head_dim = 64
    q = tile.empty((1, 1, 128, head_dim), "bf16")
    M = tile.empty((1, 1, 128), np.float32)
    cfg = dict(num_warps=8, num_stages=3)
    texts = [_fwd_ptx(head_dim, causal, target, dict(BLOCK_M=128, BLOCK_N=64, **cfg)),
             tile.dump(T.attn_bwd_preprocess, q, q, M, 4096, BLOCK_M=128, HEAD_DIM=head_dim, stage="ptx",
                       target=target),
             tile.dump(T.attn_bwd_dkdv, q, q, q, 0.5, q, q, q, M, M, 4096, BLOCK_M=32, BLOCK_N=128, BLK_SLICE_FACTOR=2,
                       HEAD_DIM=head_dim, CAUSAL=causal, stage="ptx", target=target, **cfg),
             tile.dump(T.attn_bwd_dq, q, q, q, 0.5, q, q, M, M, 4096, BLOCK_M=128, BLOCK_N=32, BLK_SLICE_FACTOR=2,
                       HEAD_DIM=head_dim, CAUSAL=causal, stage="ptx", target=target, **cfg)]
    for text in texts:
        info = assemble(str(text), target)
        assert info.cubin, info.log
