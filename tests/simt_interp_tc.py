"""Rules of the simt interpreter for tensor cores and asynchronous copies (see simt_interp.py).

The mma fragments are those of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating
point type", "... mma.m16n8k8" (tf32) and "... mma.m16n8k32" (s8/u8)). With g = lane >> 2 and
t = lane & 3, kw elements per 32-bit register (2 for f16/bf16, 1 for tf32, 4 for s8/u8) and
element e of register q (lowest bits first):

    A (16 x 8kw):  row g + 8 * (q & 1),   col kw * t + e + 4kw * (q >> 1)      q = 0..3
    B (8kw x 8):   row kw * t + e + 4kw * q,   col g                          q = 0..1
    C, D (16 x 8): row g + 8 * (j >> 1),   col 2t + (j & 1)                   j = 0..3

The product is exact and summed in float64, then rounded once to f32 (the hardware adds in
a different order and precision; tests compare at a tolerance that covers it); s32 wraps.
"""
from __future__ import annotations

import numpy as np

from simt_interp import InterpError, decode
from simt_interp_ops import _v, rule
from tile.ir.simt_ops import MMA_SHAPES
from tile.ir.types import bf16

LANES = np.arange(32)


def fragment_coords(kw: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C) coordinate tables: A [4, kw, 32, 2], B [2, kw, 32, 2], C [4, 32, 2] (row, col)."""
    g, t = LANES >> 2, LANES & 3
    a = np.array([[np.stack([g + 8 * (q & 1), kw * t + e + 4 * kw * (q >> 1)], -1) for e in range(kw)]
                  for q in range(4)])
    b = np.array([[np.stack([kw * t + e + 4 * kw * q, g], -1) for e in range(kw)] for q in range(2)])
    c = np.array([np.stack([g + 8 * (j >> 1), 2 * t + (j & 1)], -1) for j in range(4)])
    return a, b, c


def _elements(word: np.ndarray, atype: str) -> list[np.ndarray]:
    """The elements packed in i32 registers (lowest first), as float64 or int64."""
    bits = word.astype(np.int64) & 0xFFFFFFFF
    if atype == "tf32":
        return [bits.astype(np.uint32).view(np.float32).astype(np.float64)]
    if atype in ("f16", "bf16"):
        halves = [(bits >> (16 * e)) & 0xFFFF for e in range(2)]
        if atype == "f16":
            return [h.astype(np.uint16).view(np.float16).astype(np.float64) for h in halves]
        return [decode(h, bf16).astype(np.float64) for h in halves]
    out = [(bits >> (8 * e)) & 0xFF for e in range(4)]
    return [np.where(b >= 128, b - 256, b) if atype == "s8" else b for b in out]


def _require_converged(op, mask: np.ndarray) -> None:
    if not mask.all():
        raise InterpError(f"{op.name} needs every lane of the warp (it ran under divergent control flow)")


@rule("simt.mma")
def _mma(cta, op, mask):
    _require_converged(op, mask)
    atype = op.attrs["atype"]
    shape = MMA_SHAPES[atype]
    kw = shape.k_width
    vals = _v(cta, op)
    a_regs, b_regs, c_regs = vals[:4], vals[4:6], vals[6:]
    fa, fb, fc = fragment_coords(kw)
    out = [np.empty(cta.n, dtype=c_regs[0].dtype) for _ in range(4)]
    for w in range(cta.n // 32):
        lanes = slice(32 * w, 32 * w + 32)
        a = np.zeros((16, shape.k))
        b = np.zeros((shape.k, 8))
        c = np.zeros((16, 8))
        for q in range(4):
            for e, x in enumerate(_elements(a_regs[q][lanes], atype)):
                a[fa[q, e, :, 0], fa[q, e, :, 1]] = x
        for q in range(2):
            for e, x in enumerate(_elements(b_regs[q][lanes], atype)):
                b[fb[q, e, :, 0], fb[q, e, :, 1]] = x
        for j in range(4):
            c[fc[j, :, 0], fc[j, :, 1]] = c_regs[j][lanes].astype(np.float64)
        if shape.ctype == "s32":
            d = (a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)
        else:
            d = a @ b + c
        for j in range(4):
            out[j][lanes] = d[fc[j, :, 0], fc[j, :, 1]].astype(out[j].dtype)
    return out


@rule("simt.tf32")
def _tf32(cta, op, mask):
    (x,) = _v(cta, op)
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x1000) & 0xFFFFE000  # to nearest, ties away from zero (.rna)
    keep = ~np.isfinite(x)
    return np.where(keep, bits, rounded).astype(np.uint32).view(np.int32)


@rule("simt.ldmatrix")
def _ldmatrix(cta, op, mask):
    _require_converged(op, mask)
    (addr,) = _v(cta, op)
    num, trans = op.attrs["num"], op.attrs.get("trans", False)
    base = addr.astype(np.int64) + op.attrs.get("offset", 0)
    out = [np.empty(cta.n, dtype=np.int32) for _ in range(num)]
    g, t = LANES >> 2, LANES & 3
    for w in range(cta.n // 32):
        lanes = np.arange(32 * w, 32 * w + 32)
        for i in range(num):
            suppliers = lanes[8 * i:8 * i + 8]
            rows = base[suppliers]
            if (rows % 16).any():
                raise InterpError(f"ldmatrix row addresses must be 16-byte aligned, got {rows.tolist()}")
            cta.smem_access(rows, 16, np.ones(8, bool), write=False, tids=list(suppliers))
            m = np.stack([cta.smem[r:r + 16] for r in rows]).view(np.uint16).astype(np.int64)  # [8 rows, 8]
            lo, hi = (m[2 * t, g], m[2 * t + 1, g]) if trans else (m[g, 2 * t], m[g, 2 * t + 1])
            out[i][lanes] = (lo | hi << 16).astype(np.uint32).view(np.int32)
    return out


@rule("simt.cp_async")
def _cp_async(cta, op, mask):
    dst, src, size, pred = _v(cta, op)
    n = op.attrs["bytes"]
    for t in np.nonzero(mask & pred)[0]:
        d = int(dst[t]) + op.attrs.get("offset", 0)
        s = int(src[t]) + op.attrs.get("src_offset", 0)
        k = int(size[t])
        if not 0 <= k <= n:
            raise InterpError(f"cp.async source size {k} outside 0..{n}")
        if d % n or (k and s % n):
            raise InterpError(f"cp.async of {n} bytes needs aligned addresses (shared {d}, global {s:#x})")
        data = np.zeros(n, dtype=np.uint8)
        if k:
            cta.m.check(np.array([s]), k)
            data[:k] = cta.m.heap[s:s + k]
        cta.cp_async_issue(int(t), d, data)


@rule("simt.cp_async_commit")
def _cp_async_commit(cta, op, mask):
    for t in np.nonzero(mask)[0]:
        cta.cp_async_commit(int(t))


@rule("simt.cp_async_wait")
def _cp_async_wait(cta, op, mask):
    for t in np.nonzero(mask)[0]:
        cta.cp_async_wait(int(t), op.attrs["pending"])

