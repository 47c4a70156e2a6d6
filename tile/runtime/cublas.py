"""cuBLAS as Triton's native module exposes it to its tutorials
(`from triton._C.libtriton import nvidia; nvidia.cublas.CublasLt(workspace)`), reached
through PyTorch, whose matmuls call cuBLAS(Lt): tile has no native module of its own.

    cublas = nvidia.cublas.CublasLt(workspace)
    cublas.matmul(a, b, c)                    # c = a @ b.T   (b given as N x K, as in Triton)
    cublas.gemm(a, b, c, d, alpha, beta)      # d = alpha * a @ b.T + beta * c

fp16, bf16 and fp32 go through torch.matmul; fp8 (e4m3/e5m2) through torch._scaled_mm with
unit scales. The workspace is kept for Triton's signature; PyTorch manages cuBLAS's own.
"""
from __future__ import annotations

import types
from typing import Any


class CublasLt:
    def __init__(self, workspace: Any):
        import torch

        self.torch = torch
        self.workspace = workspace

    def _product(self, a: Any, b: Any, out_dtype: Any) -> Any:
        torch = self.torch
        if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            one = torch.ones((), device=a.device, dtype=torch.float32)
            wide = torch.float16 if out_dtype.itemsize == 1 else out_dtype
            return torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=wide)
        return torch.matmul(a, b.T)

    def matmul(self, a: Any, b: Any, c: Any) -> None:
        """c = a @ b.T (a: M x K, b: N x K, c: M x N)."""
        self._check(a, b, c)
        if a.dtype == c.dtype and a.dtype.itemsize > 1:
            self.torch.matmul(a, b.T, out=c)
        else:
            c.copy_(self._product(a, b, c.dtype))

    def gemm(self, a: Any, b: Any, c: Any, d: Any, alpha: float, beta: float) -> None:
        """d = alpha * (a @ b.T) + beta * c."""
        self._check(a, b, d)
        product = self._product(a, b, self.torch.float32).float()
        d.copy_(alpha * product + beta * c.float())

    @staticmethod
    def _check(a: Any, b: Any, c: Any) -> None:
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1] or tuple(c.shape) != (a.shape[0], b.shape[0]):
            raise ValueError(f"cublas: shapes a {tuple(a.shape)}, b {tuple(b.shape)}, c {tuple(c.shape)} do not "
                             f"fit c = a @ b.T")


nvidia = types.SimpleNamespace(cublas=types.SimpleNamespace(CublasLt=CublasLt))

__all__ = ["CublasLt", "nvidia"]
