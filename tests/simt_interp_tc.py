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
wgmma (sm_90a) reads A and B through their matrix descriptors from the simulated shared memory
(the canonical layouts and swizzles below), or A from registers (mma.sync's A fragment in each
of the warp group's warps), and accumulates into its D fragment the same way.
"""
from __future__ import annotations

import numpy as np

from simt_interp import InterpError, decode
from simt_interp_ops import _v, rule
from tile.ir.simt_ops import MMA_SHAPES, WGMMA_SHAPES
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



# ------------------------------------------------------------------------------ wgmma (sm_90a)
# The PTX ISA's "Asynchronous Warpgroup Level Matrix Shared Memory Layout", written out here
# directly: a 64-bit matrix descriptor holds the start address >> 4 (bits 0-13), the leading
# (16-29) and stride (32-45) byte offsets >> 4 and the swizzle mode (62-63: 1 = 128 bytes,
# 2 = 64, 3 = 32). The canonical layouts with an S-byte swizzle:
#   K-major:  element (mn, k) at start + (mn // 8) SBO + (mn % 8) S + k * bytes       (k * bytes < S)
#   MN-major: element (mn, k) at start + (mn // W) LBO + (mn % W) bytes + (k // 8) SBO + (k % 8) S,
#             W = S / bytes elements of M or N per swizzle atom row
# and then the swizzle of the address: its 16-byte chunk bits (4..) XOR its bits 7.. (log2(S/16) bits).

SWIZZLE_BYTES = {1: 128, 2: 64, 3: 32}
WGMMA_ELEMENT = {"f16": (2, "f16"), "bf16": (2, "bf16"), "tf32": (4, "tf32"), "e4m3": (1, "f8e4nv"),
                 "e5m2": (1, "f8e5"), "s8": (1, "s8"), "u8": (1, "u8")}


def wgmma_addresses(desc: int, mn: int, k: int, nbytes: int, mn_major: bool) -> np.ndarray:
    """Byte address of every element (i, j) of an mn x k operand tile: int64 [mn, k]."""
    start, lbo = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4
    sbo, mode = ((desc >> 32) & 0x3FFF) << 4, (desc >> 62) & 3
    if mode not in SWIZZLE_BYTES:
        raise InterpError(f"wgmma descriptor {desc:#x}: swizzle mode {mode} is not modelled")
    s = SWIZZLE_BYTES[mode]
    i, j = np.arange(mn)[:, None], np.arange(k)[None, :]
    if mn_major:
        w = s // nbytes
        addr = start + (i // w) * lbo + (i % w) * nbytes + (j // 8) * sbo + (j % 8) * s
    else:
        if k * nbytes > s:
            raise InterpError(f"a K-major wgmma tile row of {k * nbytes} bytes exceeds the {s}-byte swizzle")
        addr = start + (i // 8) * sbo + (i % 8) * s + j * nbytes
    return addr ^ (((addr >> 7) & (s // 16 - 1)) << 4)


def _wgmma_values(cta, addr: np.ndarray, atype: str) -> np.ndarray:
    """The elements at byte addresses `addr` of shared memory, as float64 (ints as int64)."""
    nbytes, kind = WGMMA_ELEMENT[atype]
    raw = np.stack([cta.smem[addr + b] for b in range(nbytes)], axis=-1).astype(np.int64)
    bits = sum(raw[..., b] << (8 * b) for b in range(nbytes))
    if kind == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "tf32":  # the tensor cores read an f32 and ignore its 13 low mantissa bits
        return (bits & 0xFFFFE000).astype(np.uint32).view(np.float32).astype(np.float64)
    if kind in ("bf16", "f8e4nv", "f8e5"):
        from tile.ir.types import DTYPES
        return decode(bits, DTYPES[kind]).astype(np.float64)
    return np.where(bits >= 128, bits - 256, bits) if kind == "s8" else bits


def wgmma_fragment(n: int) -> np.ndarray:
    """The wgmma D fragment of m64nN (PTX ISA "Matrix Fragments for wgmma.mma_async.m64nNk*"):
    (row, col) of register i in lane l of warp w of the warp group: int [n/2, 4 warps, 32 lanes, 2]."""
    i = np.arange(n // 2)[:, None, None]
    w, lane = np.arange(4)[None, :, None], np.arange(32)[None, None, :]
    row = 16 * w + (lane >> 2) + 8 * ((i >> 1) & 1)
    col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1)
    return np.stack(np.broadcast_arrays(row, col), axis=-1)


def _warp_groups(cta, op, mask) -> range:
    if cta.n % 128:
        raise InterpError(f"{op.name} needs whole warp groups (4 warps), the CTA has {cta.n // 32} warps")
    if not mask.all():
        raise InterpError(f"{op.name} needs every thread of the warp group (it ran under divergent control flow)")
    return range(cta.n // 128)


def _register_a(a_regs: list[np.ndarray], threads: slice, atype: str, k: int) -> np.ndarray:
    """A (64 x k) from the registers of a warp group: mma.sync's m16n8k16 A fragment in each warp."""
    fa = fragment_coords(2)[0]  # [4 registers, 2 elements, 32 lanes, (row, col)]
    a = np.zeros((64, k))
    for w in range(4):
        lanes = slice(threads.start + 32 * w, threads.start + 32 * w + 32)
        for q in range(4):
            for e, x in enumerate(_elements(a_regs[q][lanes], atype)):
                a[16 * w + fa[q, e, :, 0], fa[q, e, :, 1]] = x
    return a


@rule("simt.wgmma")
def _wgmma(cta, op, mask):
    vals = _v(cta, op)
    atype, n = op.attrs["atype"], op.attrs["n"]
    registers = len(vals) == 6 + n // 2  # A in four i32 registers, not a descriptor
    a_regs, (db, scale, *c) = (vals[:4], vals[4:]) if registers else ([vals[0]], vals[1:])
    shape = WGMMA_SHAPES[atype]
    nbytes = WGMMA_ELEMENT[atype][0]
    frag = wgmma_fragment(n)
    out = [np.empty(cta.n, dtype=x.dtype) for x in c]
    for g in _warp_groups(cta, op, mask):
        threads = slice(128 * g, 128 * g + 128)
        descs = [np.unique(x[threads].astype(np.int64)) for x in ([] if registers else a_regs) + [db]]
        if any(len(d) != 1 for d in descs) or len(np.unique(scale[threads])) != 1:
            raise InterpError("wgmma descriptors and scale-d must be the same in every thread of the warp group")
        b_addr = wgmma_addresses(int(descs[-1][0]) & (2**64 - 1), n, shape.k, nbytes, op.attrs.get("trans_b", False))
        read = [b_addr]
        if registers:
            a = _register_a(a_regs, threads, atype, shape.k)
        else:
            a_addr = wgmma_addresses(int(descs[0][0]) & (2**64 - 1), 64, shape.k, nbytes,
                                     op.attrs.get("trans_a", False))
            read.append(a_addr)
        cta.wgmma_read(g, np.concatenate([(x[..., None] + np.arange(nbytes)).ravel() for x in read]))
        if not registers:
            a = _wgmma_values(cta, a_addr, atype)           # [64, k]
        b = _wgmma_values(cta, b_addr, atype).T             # [k, n] (b_addr is [n, k])
        acc = np.zeros((64, n))
        if scale[128 * g]:
            for r in range(n // 2):
                acc[frag[r, :, :, 0], frag[r, :, :, 1]] = c[r][threads].reshape(4, 32).astype(np.float64)
        if shape.ctype == "s32":
            d = (a.astype(np.int64) @ b.astype(np.int64) + acc.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)
        else:
            d = a @ b + acc
        for r in range(n // 2):
            out[r][threads] = d[frag[r, :, :, 0], frag[r, :, :, 1]].reshape(128).astype(out[r].dtype)
    return out


@rule("simt.wgmma_fence")
def _wgmma_fence(cta, op, mask):
    _warp_groups(cta, op, mask)


@rule("simt.wgmma_commit")
def _wgmma_commit(cta, op, mask):
    for g in _warp_groups(cta, op, mask):
        cta.wgmma_commit(g)


@rule("simt.wgmma_wait")
def _wgmma_wait(cta, op, mask):
    for g in _warp_groups(cta, op, mask):
        cta.wgmma_wait(g, op.attrs["pending"])
    return _v(cta, op)


@rule("simt.fence_proxy_async")
def _fence_proxy_async(cta, op, mask):
    for t in np.nonzero(mask)[0]:
        cta.fence_proxy_async(int(t))
