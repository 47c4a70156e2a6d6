"""Tutorial 07's fused attention on the GPU (marker `gpu`): forward and backward against PyTorch's
scaled_dot_product_attention computed in float64, causal and not, D 64 and 128, fp16 and bf16,
at the GPU block sizes (the tutorial picks them when a GPU is present); a ragged sequence length
gets the wrapper's error."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

TUTORIAL = Path(__file__).resolve().parent.parent / "tutorials" / "07_fused_attention.py"


@pytest.fixture(scope="module")
def T():
    spec = importlib.util.spec_from_file_location("tutorial_07_gpu", TUTORIAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ON_GPU
    return module


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("seq", [128, 1024])
def test_attention_matches_sdpa_in_float64(T, torch, dtype, causal, head_dim, seq):
    F = torch.nn.functional
    torch.manual_seed(seq + head_dim)
    shape = (2, 3, seq, head_dim)
    q, k, v, do = (torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)) * 0.5 for _ in range(4))
    sm_scale = 1.0 / head_dim ** 0.5
    o, M = T.attention_forward(q, k, v, causal, sm_scale)
    dq, dk, dv = T.attention_backward(q, k, v, o, M, do, causal, sm_scale)
    q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
    ref = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal, scale=sm_scale)
    ref_grads = torch.autograd.grad(ref, (q64, k64, v64), do.double())
    tol = 1e-2 if dtype == "float16" else 4e-2
    for name, got, want in zip(("o", "dq", "dk", "dv"), (o, dq, dk, dv), (ref,) + ref_grads):
        got = torch.from_numpy(T.from_device(got)).to("cuda")  # torch outputs for torch inputs
        torch.testing.assert_close(got, want, atol=tol, rtol=tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_descriptor_forward_gives_the_pointer_forwards_bytes(T, torch, causal, head_dim):
    """attention_forward(..., descriptors=True): attn_fwd_desc over host tensor descriptors (TMA on
    sm_90a) against attn_fwd over pointers at the GPU block sizes (the same dots and softmax; a
    last-bit difference is allowed, as the operands sit in differently swizzled buffers)."""
    torch.manual_seed(head_dim)
    q, k, v = (torch.randn((2, 3, 1024, head_dim), device="cuda", dtype=torch.float16) * 0.5 for _ in range(3))
    o1, m1 = T.attention_forward(q, k, v, causal, 0.125, descriptors=False)
    o2, m2 = T.attention_forward(q, k, v, causal, 0.125, descriptors=True)
    torch.testing.assert_close(torch.as_tensor(o2, device="cuda"), torch.as_tensor(o1, device="cuda"), atol=1e-3,
                               rtol=1e-3)
    torch.testing.assert_close(torch.as_tensor(m2, device="cuda"), torch.as_tensor(m1, device="cuda"), atol=1e-5,
                               rtol=1e-5)


def test_ragged_sequence_gets_the_wrappers_error(T, torch):
    q = torch.randn((1, 2, 1000, 64), device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="sequence length 1000 must be a multiple of 128"):
        T.attention_forward(q, q, q, True, 0.125)


def test_unsupported_head_dim_gets_the_wrappers_error(T, torch):
    q = torch.randn((1, 2, 128, 256), device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="head dimension 256 is not supported"):
        T.attention_forward(q, q, q, False, 0.0625)
