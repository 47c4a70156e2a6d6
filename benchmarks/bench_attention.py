"""Fused attention, forward and backward: tile (tutorial 07) vs Triton vs PyTorch SDPA, TFLOP/s.

    python benchmarks/bench_attention.py [--seq 1024 4096 16384] [--head-dim 128] [--mode fwd bwd]

Z=4, H=32, fp16, causal and not. Triton runs its own tutorial's kernels (`_attention.apply`
from .triton_tutorials/06-fused-attention.py when that copy is there; its backward is causal
only) or, without it, a twin of tile's kernels compiled by Triton (tutorial 07's kernel source
with `triton` for `tile`). Every provider's results are checked against SDPA before it is
timed (fp16 tolerances); a provider that fails or is missing prints its reason in the table.
Times are medians of tile.testing.do_bench (L2 flushed); flops 4*Z*H*S*S*D for the forward,
halved when causal, times 2.5 for the backward. Needs a GPU and PyTorch.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
import types
from pathlib import Path
from typing import Any, Callable, Optional

REPO = Path(__file__).resolve().parent.parent
TUTORIAL = REPO / "tutorials" / "07_fused_attention.py"
TRITON_TUTORIAL = REPO / ".triton_tutorials" / "06-fused-attention.py"
HOST_SIDE = "# ------------------------------------------------------------------------------ host side"
Z, H = 4, 32
providers_missing: dict[str, str] = {}  # provider name -> why it cannot run


def load_tile_tutorial() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("tile_attention_tutorial", TUTORIAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_triton_attention() -> tuple[Optional[Callable[..., Any]], str]:
    """(attention(q, k, v, causal, sm_scale) -> o with torch autograd, where it comes from), or
    (None, why not). Real Triton only: tile must not stand in for it here."""
    try:
        import triton
    except ImportError:
        return None, "Triton is not installed"
    if getattr(triton, "__file__", "").startswith(str(REPO)) or triton.__name__ != "triton":
        return None, "`triton` is tile here"
    if TRITON_TUTORIAL.is_file():
        spec = importlib.util.spec_from_file_location("triton_fused_attention", TRITON_TUTORIAL)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return (lambda q, k, v, causal, sm_scale: module.attention(q, k, v, causal, sm_scale, False)), \
            "Triton's tutorial 06"
    return _triton_twin(), "tile's tutorial 07 kernels compiled by Triton"


def _triton_twin() -> Callable[..., Any]:
    """Tutorial 07's kernels and host code, with `triton` for `tile` (forward only: the
    backward needs tile's host arrays)."""
    import torch
    import triton

    source = TUTORIAL.read_text()
    source = source[:source.index(HOST_SIDE)]
    source = (source.replace("import tile.language as tl", "import triton.language as tl")
              .replace("import tile\n", "import triton\n").replace("@tile.jit", "@triton.jit")
              .replace("from tile.compiler import INTERPRETER, current_target\n",
                       "INTERPRETER, current_target = None, lambda: 'triton'\n"))  # one line for one: inspect's lines
    twin = types.ModuleType("triton_twin_of_tutorial_07")
    twin.__file__ = str(TUTORIAL)
    exec(compile(source, str(TUTORIAL), "exec"), twin.__dict__)
    tutorial = load_tile_tutorial()

    def attention(q, k, v, causal, sm_scale):
        Zq, Hq, S, D = q.shape
        cfg = {key: value for key, value in tutorial.fwd_config(D, causal, S, descriptors=False).items()
               if key != "descriptors"}
        o = torch.empty_like(q)
        M = torch.empty((Zq, Hq, S), device=q.device, dtype=torch.float32)
        twin.attn_fwd[(S // cfg["BLOCK_M"], Zq * Hq)](q, k, v, o, M, sm_scale, S, HEAD_DIM=D,
                                                       STAGE=3 if causal else 1, **cfg)
        return o

    return attention


def tflops(ms: float, S: int, D: int, causal: bool, mode: str) -> float:
    flops = 4.0 * Z * H * S * S * D * (0.5 if causal else 1.0) * (2.5 if mode == "bwd" else 1.0)
    return flops * 1e-12 / (ms * 1e-3)


def run_config(S: int, D: int, causal: bool, mode: str, providers: dict[str, Any]) -> dict[str, str]:
    """TFLOP/s (or the reason for none) of each provider for one configuration."""
    import torch
    import torch.nn.functional as F

    import tile

    torch.manual_seed(0)
    q, k, v = (torch.randn((Z, H, S, D), dtype=torch.float16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    sm_scale = 1.0 / D ** 0.5
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    ref_grads = torch.autograd.grad(ref, (q, k, v), do) if mode == "bwd" else ()
    row: dict[str, str] = {}
    for name, provider in providers.items():
        try:
            if provider is None:
                raise RuntimeError(providers_missing.get(name, "not available"))
            fn = provider(q, k, v, do, causal, sm_scale, mode)
            got = fn()
            want = ref_grads if mode == "bwd" else (ref,)
            for g, w in zip(got, want):
                torch.testing.assert_close(g.to(torch.float32), w.to(torch.float32), atol=2e-2, rtol=2e-2)
            ms = tile.testing.do_bench(fn, return_mode="median")
            row[name] = f"{tflops(ms, S, D, causal, mode):.1f}"
        except Exception as e:  # one provider's failure must not end the table
            row[name] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
            traceback.print_exc(file=sys.stderr)
    return row


def make_providers(pointers: bool = False) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    tutorial = load_tile_tutorial()
    forward = {"descriptors": False} if pointers else {}

    def tile_provider(q, k, v, do, causal, sm_scale, mode):
        if mode == "fwd":
            return lambda: (torch.as_tensor(tutorial.attention_forward(q.detach(), k.detach(), v.detach(), causal,
                                                                       sm_scale, **forward)[0],
                                            device="cuda"),)
        o, M = tutorial.attention_forward(q.detach(), k.detach(), v.detach(), causal, sm_scale)
        return lambda: tuple(torch.as_tensor(g, device="cuda") for g in tutorial.attention_backward(
            q.detach(), k.detach(), v.detach(), o, M, do, causal, sm_scale))

    def torch_provider(q, k, v, do, causal, sm_scale, mode):
        if mode == "fwd":
            return lambda: (F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale),)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
        return lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

    triton_attention, where = load_triton_attention()
    providers: dict[str, Any] = {"tile": tile_provider, "torch SDPA": torch_provider}
    if triton_attention is None:
        providers_missing["Triton"] = where
        providers["Triton"] = None
    else:
        def triton_provider(q, k, v, do, causal, sm_scale, mode):
            if mode == "fwd":
                return lambda: (triton_attention(q, k, v, causal, sm_scale),)
            if where != "Triton's tutorial 06":
                raise RuntimeError("the Triton twin has no backward")
            if not causal:
                raise RuntimeError("Triton's tutorial backward is causal only")
            o = triton_attention(q, k, v, causal, sm_scale)
            return lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

        providers["Triton"] = triton_provider
        print(f"Triton: {where}")
    return providers


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--head-dim", type=int, nargs="+", default=[128])
    parser.add_argument("--mode", nargs="+", default=["fwd", "bwd"], choices=["fwd", "bwd"])
    parser.add_argument("--pointers", action="store_true",
                        help="tile's forward over pointers (attn_fwd), not the tutorial's choice (on Hopper: "
                             "attn_fwd_desc over tensor descriptors)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_attention: needs PyTorch with CUDA; skipped")
        return
    if not torch.cuda.is_available():
        print("bench_attention: no CUDA GPU; skipped")
        return
    providers = make_providers(args.pointers)
    names = list(providers)
    print(f"\nfused attention, Z={Z} H={H} fp16, TFLOP/s (median of do_bench); ratio = tile / other")
    header = ["mode", "causal", "S", "D"] + names + [f"tile/{n}" for n in names[1:]]
    print(" | ".join(header))
    for mode in args.mode:
        for causal in (False, True):
            for D in args.head_dim:
                for S in args.seq:
                    row = run_config(S, D, causal, mode, providers)
                    ratios = []
                    for n in names[1:]:
                        try:
                            ratios.append(f"{float(row['tile']) / float(row[n]):.2f}")
                        except (ValueError, ZeroDivisionError):
                            ratios.append("-")
                    print(" | ".join([mode, str(causal), str(S), str(D)] + [row[n] for n in names] + ratios),
                          flush=True)


if __name__ == "__main__":
    main()
