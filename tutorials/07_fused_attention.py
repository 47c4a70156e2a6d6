"""Tutorial 07: fused attention (Flash Attention v2), forward and backward.

    O = softmax(Q K^T * sm_scale) V        Q, K, V, O: [Z, H, S, D], fp16 or bf16

A plain implementation writes the S x S matrix of scores to memory, twice (scores, then
probabilities) for every head. Flash attention never does: each program keeps one BLOCK_M
block of query rows in registers and walks over the keys and values in BLOCK_N blocks,
keeping a running ("online") softmax:

    m_new = max(m, rowmax(qk))            the running maximum of each row
    p     = exp(qk - m_new)               this block's unnormalized probabilities
    l     = l * exp(m - m_new) + rowsum(p) the running denominator
    acc   = acc * exp(m - m_new) + p @ v   the running numerator
    O     = acc / l                        once, at the end

What makes it fast:
- exp2 instead of exp: log2(e) is folded into the scale once (`qk_scale = sm_scale * log2(e)`),
  so each score costs one multiply and one `ex2.approx` instruction.
- Causal masking in stages: for a causal model, blocks of keys entirely left of the diagonal
  need no mask (stage 1), only the BLOCK_M x BLOCK_M square on the diagonal is masked
  (stage 2), and blocks right of it are skipped. The stage is a tl.constexpr, so each loop is
  compiled without the code it does not need (attn_fwd, as Triton's tutorial).
- Both dots run on the tensor cores; on Hopper (sm_90a) as wgmma, where P (just computed in
  registers) feeds P @ V straight from registers.
- On Hopper, attention_forward runs attn_fwd_desc, which reads Q, K and V through tensor
  descriptors as Triton's tutorial does there: its loads become TMA copies, which cost the
  threads no registers or instructions, and whose stages are handed back on mbarriers rather
  than at a barrier of all warps, so the two warp groups drift apart and one's softmax runs
  while the other's dots use the tensor cores (`descriptors=False` runs attn_fwd, over
  pointers). Its causal loop is one loop in which the blocks left of the diagonal skip the
  mask by a branch, so that one ring of copies runs on into the diagonal block, and at short
  rows each program runs two blocks of queries whose causal work adds up to the same
  (`PAIRED`). On an H200 at S = 1024 these make the causal forward 1.4x faster than two stages
  (benchmarks/RESULTS.md).

The forward also writes M = m + log2(l) for each row (the log-sum-exp, base 2), so that the
backward can recompute P = exp2(qk * qk_scale - M) without a second online softmax. The
backward is three kernels, none with atomics:
1. preprocess: delta = rowsum(dO * O) per row;
2. dK/dV: each program owns a block of keys and walks over the query blocks:
   dV += P^T dO,  dP^T = V dO^T,  dS^T = P^T * (dP^T - delta),  dK += dS^T Q;
3. dQ: each program owns a block of queries and walks over the key blocks: dQ += dS K.
As in the forward, the blocks on the diagonal are masked (in smaller steps) and the rest not.

Run it:  python tutorials/07_fused_attention.py
(on the NumPy interpreter with small shapes when there is no GPU; on a GPU it also prints a
table of TFLOP/s for tile, Triton and PyTorch's scaled_dot_product_attention where installed,
from benchmarks/bench_attention.py). With ptxas it shows how many programs of the descriptor
forward an SM holds at two and three stages (tile.viz.show_occupancy).
"""
import math
import os
import sys
from typing import Any

import numpy as np

import tile
import tile.language as tl
from tile.compiler import INTERPRETER, current_target
from tile.runtime.ptxas import find_ptxas
from tile.tools.tensor_descriptor import TensorDescriptor
from tile.viz import show_occupancy
from tile.viz.occupancy import SM_LIMITS

ON_GPU = current_target() != INTERPRETER
ON_HOPPER = current_target() == "sm_90a"
RCP_LN2 = 1.4426950408889634  # log2(e) = 1 / ln(2)
HEAD_DIMS = (16, 32, 64, 128)


@tile.jit
def _stage_range(start_m, N_CTX, BLOCK_M: tl.constexpr, STAGE: tl.constexpr):
    """The keys a stage covers: left of the diagonal (1), the diagonal (2), all (3)."""
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    return lo, hi


@tile.jit
def _online_softmax(qk, m_i, start_n, qk_scale, offs_m, offs_n, MASKED: tl.constexpr):
    """A block of scores into the running softmax: the block's probabilities p (unnormalized),
    alpha (rescales what was accumulated with the old maximum), the new maximum and p's row sums."""
    if MASKED:
        mask = offs_m[:, None] >= (start_n + offs_n[None, :])
        qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk -= m_ij[:, None]
    else:
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
    p = tl.math.exp2(qk)
    alpha = tl.math.exp2(m_i - m_ij)
    return p, alpha, m_ij, tl.sum(p, 1)


@tile.jit
def _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_m, qk_scale, N_CTX,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m, offs_n):
    lo, hi = _stage_range(start_m, N_CTX, BLOCK_M, STAGE)
    k_ptrs += lo * HEAD_DIM
    v_ptrs += lo * HEAD_DIM
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs)
        p, alpha, m_ij, l_ij = _online_softmax(tl.dot(q, k.T), m_i, start_n, qk_scale, offs_m, offs_n, STAGE == 2)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        k_ptrs += BLOCK_N * HEAD_DIM
        v_ptrs += BLOCK_N * HEAD_DIM
    return acc, l_i, m_i


@tile.jit
def _attn_fwd_inner_desc(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale, N_CTX,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, offs_m, offs_n):
    """_attn_fwd_inner with K and V read through tensor descriptors (TMA copies on sm_90a), and in
    one loop also when causal: the keys up to the diagonal, where the blocks left of it skip the
    mask by a branch. Two stages would fill a second ring of copies for the diagonal block, with
    its latency exposed, and hold a second loop's registers; one loop runs its ring straight on."""
    diagonal = start_m * BLOCK_M
    hi = diagonal + BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        if CAUSAL:
            if start_n + BLOCK_N > diagonal:  # on the diagonal: a query sees the keys up to its own
                qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        p, alpha, m_ij, l_ij = _online_softmax(qk, m_i, start_n, qk_scale, offs_m, offs_n, False)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    return acc, l_i, m_i


@tile.jit
def attn_fwd(Q, K, V, O, M, sm_scale, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    """One BLOCK_M block of query rows of one (batch, head). STAGE 3: causal, 1: not."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    head = off_hz.to(tl.int64) * N_CTX * HEAD_DIM  # Q, K, V, O are contiguous [Z, H, N_CTX, HEAD_DIM]
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    k_ptrs = K + head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    v_ptrs = V + head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) = exp2(x * log2(e))
    if STAGE & 1:  # causal: the blocks left of the diagonal, unmasked; else: every block
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_m, qk_scale, N_CTX,
                                        BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m, offs_n)
    if STAGE & 2:  # causal: the block on the diagonal, masked
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_m, qk_scale, N_CTX,
                                        BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    tl.store(O + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(O.dtype.element_ty))


@tile.jit
def _attn_fwd_desc_block(desc_q, desc_k, desc_v, desc_o, M, qk_scale, N_CTX, off_hz, start_m,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Block `start_m` of query rows of head `off_hz`, over tensor descriptors."""
    row0 = off_hz * N_CTX  # the head's first row
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    acc, l_i, m_i = _attn_fwd_inner_desc(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale, N_CTX,
                                         BLOCK_M, BLOCK_N, CAUSAL, offs_m, offs_n)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([row0 + start_m * BLOCK_M, 0], acc.to(desc_o.dtype))


@tile.jit
def attn_fwd_desc(desc_q, desc_k, desc_v, desc_o, M, sm_scale, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                  PAIRED: tl.constexpr = False):
    """attn_fwd over host tensor descriptors of the [Z * H * N_CTX, HEAD_DIM] views of Q, K, V and
    O, as Triton's tutorial runs on Hopper: Q, K and V arrive by TMA, O leaves by it. STAGE 3:
    causal (in one loop, see _attn_fwd_inner_desc), 1: not.
    PAIRED: program i runs query blocks i and n - 1 - i of its head (n blocks), on a grid of
    (ceil(n / 2), Z * H). Causal, every program then does the same work, where a block's work
    grows with its index and the last wave would otherwise wait for a few long programs."""
    off_hz = tl.program_id(1)
    qk_scale = sm_scale * 1.44269504
    first = tl.program_id(0)
    _attn_fwd_desc_block(desc_q, desc_k, desc_v, desc_o, M, qk_scale, N_CTX, off_hz, first,
                         HEAD_DIM, BLOCK_M, BLOCK_N, STAGE == 3)
    if PAIRED:
        second = N_CTX // BLOCK_M - 1 - first
        if second != first:  # the middle block of an odd count has no partner
            _attn_fwd_desc_block(desc_q, desc_k, desc_v, desc_o, M, qk_scale, N_CTX, off_hz, second,
                                 HEAD_DIM, BLOCK_M, BLOCK_N, STAGE == 3)


@tile.jit
def attn_bwd_preprocess(O, DO, Delta, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    """delta = rowsum(dO * O), in fp32, for BLOCK_M rows of one (batch, head)."""
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_d = tl.arange(0, HEAD_DIM)
    rows = off_hz.to(tl.int64) * N_CTX * HEAD_DIM + off_m[:, None] * HEAD_DIM + off_d[None, :]
    o = tl.load(O + rows).to(tl.float32)
    do = tl.load(DO + rows).to(tl.float32)
    tl.store(Delta + off_hz * N_CTX + off_m, tl.sum(o * do, axis=1))


@tile.jit
def _attn_bwd_dkdv_inner(dk, dv, Q, k, v, DO, M, D, qk_scale, start_n, start_m, num_steps,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr):
    """Accumulate dK, dV of one block of keys over `num_steps` blocks of BLOCK_M queries."""
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * HEAD_DIM + offs_d[:, None]
    do_ptrs = DO + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    curr_m = start_m
    for _ in range(num_steps):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BLOCK_M)
        m = tl.load(M + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) * qk_scale - m[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(do.dtype), do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - Di[None, :])
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
        curr_m += BLOCK_M
        qT_ptrs += BLOCK_M * HEAD_DIM
        do_ptrs += BLOCK_M * HEAD_DIM
    return dk, dv


@tile.jit
def attn_bwd_dkdv(Q, K, V, sm_scale, DO, DK, DV, M, D, N_CTX,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLK_SLICE_FACTOR: tl.constexpr,
                  HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr):
    """dK and dV of one BLOCK_N block of keys of one (batch, head)."""
    tl.static_assert(BLOCK_N % BLOCK_M == 0)
    off_hz = tl.program_id(1)
    head = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
    Q += head
    K += head
    V += head
    DO += head
    DK += head
    DV += head
    M += off_hz * N_CTX
    D += off_hz * N_CTX
    start_n = tl.program_id(0) * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    kv_rows = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(K + kv_rows)
    v = tl.load(V + kv_rows)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        # The queries of the diagonal block, masked, in smaller steps; then those below it.
        MASK_BLOCK_M: tl.constexpr = BLOCK_M // BLK_SLICE_FACTOR
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, Q, k, v, DO, M, D, qk_scale, start_n, start_n,
                                      BLOCK_N // MASK_BLOCK_M, MASK_BLOCK_M, BLOCK_N, HEAD_DIM, True)
        start_m = start_n + BLOCK_N
    else:
        start_m = 0
    dk, dv = _attn_bwd_dkdv_inner(dk, dv, Q, k, v, DO, M, D, qk_scale, start_n, start_m,
                                  (N_CTX - start_m) // BLOCK_M, BLOCK_M, BLOCK_N, HEAD_DIM, False)
    tl.store(DV + kv_rows, dv.to(DV.dtype.element_ty))
    tl.store(DK + kv_rows, (dk * sm_scale).to(DK.dtype.element_ty))


@tile.jit
def _attn_bwd_dq_inner(dq, q, K, V, do, m, Di, qk_scale, start_m, start_n, num_steps,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr):
    """Accumulate dQ of one block of queries over `num_steps` blocks of BLOCK_N keys."""
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + (start_n + tl.arange(0, BLOCK_N))[None, :] * HEAD_DIM + offs_d[:, None]
    vT_ptrs = V + (start_n + tl.arange(0, BLOCK_N))[None, :] * HEAD_DIM + offs_d[:, None]
    curr_n = start_n
    for _ in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        p = tl.math.exp2(tl.dot(q, kT) * qk_scale - m)
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N)
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, vT)
        ds = p * (dp - Di[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
        curr_n += BLOCK_N
        kT_ptrs += BLOCK_N * HEAD_DIM
        vT_ptrs += BLOCK_N * HEAD_DIM
    return dq


@tile.jit
def attn_bwd_dq(Q, K, V, sm_scale, DO, DQ, M, D, N_CTX,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLK_SLICE_FACTOR: tl.constexpr,
                HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr):
    """dQ of one BLOCK_M block of queries of one (batch, head)."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    off_hz = tl.program_id(1)
    head = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
    Q += head
    K += head
    V += head
    DO += head
    DQ += head
    M += off_hz * N_CTX
    D += off_hz * N_CTX
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(Q + rows)
    do = tl.load(DO + rows)
    m = tl.load(M + offs_m)[:, None]
    Di = tl.load(D + offs_m)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        # The keys of the diagonal block, masked, in smaller steps; then those left of it.
        MASK_BLOCK_N: tl.constexpr = BLOCK_N // BLK_SLICE_FACTOR
        dq = _attn_bwd_dq_inner(dq, q, K, V, do, m, Di, qk_scale, start_m, start_m,
                                BLOCK_M // MASK_BLOCK_N, BLOCK_M, MASK_BLOCK_N, HEAD_DIM, True)
        end_n = start_m
    else:
        end_n = N_CTX
    dq = _attn_bwd_dq_inner(dq, q, K, V, do, m, Di, qk_scale, start_m, 0, end_n // BLOCK_N,
                            BLOCK_M, BLOCK_N, HEAD_DIM, False)
    tl.store(DQ + rows, (dq * sm_scale).to(DQ.dtype.element_ty))


# ------------------------------------------------------------------------------ host side

# Block sizes and launch options. On the GPU: 128-row query blocks on 8 warps (two warp
# groups of 64 rows: with 4 warps, D = 128 runs out of registers and spills) and 128 keys per
# step over pointers and for long rows (fwd_config says when 64 are faster); the backward takes
# Triton's tutorial's 32/128 and 128/32 blocks. On the interpreter: small blocks.
def fwd_config(head_dim: int, causal: bool, seq_len: int, descriptors: bool = ON_HOPPER) -> dict[str, Any]:
    """The forward's block sizes and launch options (measured on an H200: benchmarks/RESULTS.md).
    Over descriptors at D = 128 and S <= 4096, and D = 64 causal, 128 x 64 blocks in two stages:
    at D = 128, 96 KiB of shared memory and 128 registers a thread, so that two programs share
    an SM and one's prologue and epilogue (Q's copy, the ring's fill, O's store) run under the
    other's loop; longer rows amortize those, and 128 x 128 blocks in three stages are faster
    there. PAIRED where it measured faster: short causal rows, and D = 64."""
    if not ON_GPU:
        return dict(BLOCK_M=32, BLOCK_N=16, descriptors=descriptors)
    wide = dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3, descriptors=descriptors)
    if not descriptors:
        return wide
    narrow = dict(wide, BLOCK_N=64, num_stages=2)
    if head_dim == 128 and seq_len <= 4096:
        return dict(narrow, PAIRED=causal and seq_len <= 2048)
    if head_dim == 64:
        return dict(narrow if causal and seq_len <= 4096 else wide, PAIRED=not causal or seq_len <= 4096)
    return wide


BWD = (dict(BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, num_warps=8, num_stages=3)
       if ON_GPU else dict(BLOCK_M1=16, BLOCK_N1=32, BLOCK_M2=32, BLOCK_N2=16, BLK_SLICE_FACTOR=2))
PRE_BLOCK = 128 if ON_GPU else 32


def _tile_dtype(x: Any) -> str:
    """"f16" or "bf16" for a DeviceArray, NumPy array or torch tensor; anything else: TypeError."""
    name = getattr(x, "tile_dtype", None) or str(getattr(x, "dtype", "")).replace("torch.", "")
    name = {"float16": "f16", "bfloat16": "bf16"}.get(name, name)
    if name not in ("f16", "bf16"):
        raise TypeError(f"attention: q, k and v must be float16 or bfloat16, not {name or type(x).__name__}")
    return name


def _empty(like: Any, shape: tuple[int, ...], dtype: str) -> Any:
    """An uninitialized output of `dtype` ("f16", "bf16" or "f32") beside the input `like`: a
    torch tensor from torch's caching allocator when `like` is one (as Triton's tutorial does;
    a few microseconds a call, where a DeviceArray's pooled allocation and free cost tens), else
    a tile DeviceArray."""
    if type(like).__module__.startswith("torch"):
        import torch

        torch_dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
        return torch.empty(shape, dtype=torch_dtype, device=like.device)
    return tile.empty(shape, dtype)


def _check_inputs(q: Any, k: Any, v: Any, block: int) -> tuple[int, int, int, int, str]:
    if len(q.shape) != 4 or tuple(k.shape) != tuple(q.shape) or tuple(v.shape) != tuple(q.shape):
        raise ValueError(f"attention: q, k and v must have one shape [Z, H, S, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    Z, H, S, D = (int(s) for s in q.shape)
    if D not in HEAD_DIMS:
        raise ValueError(f"attention: head dimension {D} is not supported; the kernels take D in {HEAD_DIMS}")
    if S % block:
        raise ValueError(f"attention: sequence length {S} must be a multiple of {block} (the kernels' block "
                         f"size; they do not mask ragged blocks)")
    dtype = _tile_dtype(q)
    if _tile_dtype(k) != dtype or _tile_dtype(v) != dtype:
        raise TypeError("attention: q, k and v must have one dtype")
    return Z, H, S, D, dtype


def attention_forward(q: Any, k: Any, v: Any, causal: bool, sm_scale: float, **config: Any) -> tuple[Any, Any]:
    """O = softmax(q k^T * sm_scale) v (causal: each query sees keys up to its own position),
    and M, the base-2 log-sum-exp of each row of scores that the backward needs.
    q, k, v: contiguous [Z, H, S, D] arrays, float16 or bfloat16; `config` overrides
    fwd_config's block sizes and launch options; `descriptors` (True on Hopper) runs
    attn_fwd_desc over tensor descriptors instead of attn_fwd over pointers, and `PAIRED`
    pairs its causal blocks (see attn_fwd_desc)."""
    shape = tuple(int(n) for n in q.shape)
    config = {**fwd_config(shape[-1], causal, shape[-2], config.get("descriptors", ON_HOPPER)), **config}
    descriptors = config.pop("descriptors")
    paired = config.pop("PAIRED", False)
    if paired and not descriptors:
        raise ValueError("attention: PAIRED applies to the descriptor forward (descriptors=True) only")
    if config["BLOCK_M"] % config["BLOCK_N"] and causal:
        raise ValueError(f"attention: BLOCK_M {config['BLOCK_M']} must be a multiple of BLOCK_N {config['BLOCK_N']} "
                         f"for the causal diagonal block")
    Z, H, S, D, dtype = _check_inputs(q, k, v, max(config["BLOCK_M"], config["BLOCK_N"]))
    o = _empty(q, (Z, H, S, D), dtype)
    M = _empty(q, (Z, H, S), "f32")
    grid = (S // config["BLOCK_M"], Z * H)
    if descriptors:
        if paired:
            grid = ((grid[0] + 1) // 2, Z * H)
        rows = Z * H * S  # the [Z * H * S, D] views, a block of rows each
        q_d, k_d, v_d, o_d = (TensorDescriptor(x, [rows, D], [D, 1], [config[block], D])
                              for x, block in ((q, "BLOCK_M"), (k, "BLOCK_N"), (v, "BLOCK_N"), (o, "BLOCK_M")))
        attn_fwd_desc[grid](q_d, k_d, v_d, o_d, M, sm_scale, S, HEAD_DIM=D, STAGE=3 if causal else 1, PAIRED=paired,
                            **config)
    else:
        attn_fwd[grid](q, k, v, o, M, sm_scale, S, HEAD_DIM=D, STAGE=3 if causal else 1, **config)
    return o, M


def attention_backward(q: Any, k: Any, v: Any, o: Any, M: Any, do: Any, causal: bool, sm_scale: float,
                       **config: Any) -> tuple[Any, Any, Any]:
    """dq, dk, dv of attention_forward's output `o` (and its `M`) for the output gradient `do`."""
    c = {**BWD, **config}
    for small, big in (("BLOCK_M1", "BLOCK_N1"), ("BLOCK_N2", "BLOCK_M2")):
        if c[big] % c[small] or c[small] % c["BLK_SLICE_FACTOR"]:
            raise ValueError(f"attention: {big} ({c[big]}) must be a multiple of {small} ({c[small]}), itself a "
                             f"multiple of BLK_SLICE_FACTOR ({c['BLK_SLICE_FACTOR']})")
    Z, H, S, D, dtype = _check_inputs(q, k, v, max(c["BLOCK_N1"], c["BLOCK_M2"], PRE_BLOCK))
    if tuple(do.shape) != (Z, H, S, D) or _tile_dtype(do) != dtype:
        raise ValueError("attention: do must have the shape and dtype of the output")
    delta = _empty(q, (Z, H, S), "f32")
    attn_bwd_preprocess[(S // PRE_BLOCK, Z * H)](o, do, delta, S, BLOCK_M=PRE_BLOCK, HEAD_DIM=D)
    dq, dk, dv = (_empty(q, (Z, H, S, D), dtype) for _ in range(3))
    launch = dict(BLK_SLICE_FACTOR=c["BLK_SLICE_FACTOR"], HEAD_DIM=D, CAUSAL=causal, num_warps=c.get("num_warps", 4),
                  num_stages=c.get("num_stages", 2))
    attn_bwd_dkdv[(S // c["BLOCK_N1"], Z * H)](q, k, v, sm_scale, do, dk, dv, M, delta, S,
                                                BLOCK_M=c["BLOCK_M1"], BLOCK_N=c["BLOCK_N1"], **launch)
    attn_bwd_dq[(S // c["BLOCK_M2"], Z * H)](q, k, v, sm_scale, do, dq, M, delta, S,
                                              BLOCK_M=c["BLOCK_M2"], BLOCK_N=c["BLOCK_N2"], **launch)
    return dq, dk, dv


# ------------------------------------------------------------------------------ reference and checks


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, causal: bool,
              sm_scale: float) -> tuple[np.ndarray, ...]:
    """O, dQ, dK, dV in float64 with NumPy (inputs: float64 arrays [Z, H, S, D])."""
    S = q.shape[2]
    s = q @ np.swapaxes(k, -1, -2) * sm_scale
    if causal:
        s = np.where(np.tril(np.ones((S, S), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v
    dv = np.swapaxes(p, -1, -2) @ do
    ds = p * (do @ np.swapaxes(v, -1, -2) - (do * o).sum(-1, keepdims=True))
    return o, sm_scale * ds @ k, sm_scale * np.swapaxes(ds, -1, -2) @ q, dv


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 bits (round to nearest even) of float32 values, for arrays NumPy cannot type."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_device(x: Any) -> np.ndarray:
    """float64 values of an fp16/bf16/fp32 DeviceArray (bf16 may be held as uint16 bits) or torch tensor."""
    if type(x).__module__.startswith("torch"):
        return x.detach().double().cpu().numpy()
    host = x.numpy()
    if getattr(x, "tile_dtype", "") == "bf16" and host.dtype == np.uint16:
        return (host.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return host.astype(np.float64)


def make_inputs(shape: tuple[int, ...], dtype: str, seed: int = 0) -> tuple[list[Any], list[np.ndarray]]:
    """Random q, k, v, do on the device in `dtype` ("f16" or "bf16"), and their exact float64 values."""
    rng = np.random.default_rng(seed)
    device, exact = [], []
    for _ in range(4):
        x = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        if dtype == "bf16":
            array = tile.to_device(to_bf16_bits(x), "bf16")
        else:
            array = tile.to_device(x.astype(np.float16))
        device.append(array)
        exact.append(from_device(array))
    return device, exact


def check(shape: tuple[int, int, int, int], dtype: str, causal: bool, sm_scale: float = 0.5) -> dict[str, float]:
    """Run forward and backward, compare with the float64 reference; the max abs error of each."""
    (q, k, v, do), (q64, k64, v64, do64) = make_inputs(shape, dtype)
    o, M = attention_forward(q, k, v, causal, sm_scale)
    dq, dk, dv = attention_backward(q, k, v, o, M, do, causal, sm_scale)
    want = reference(q64, k64, v64, do64, causal, sm_scale)
    errors = {name: float(np.max(np.abs(from_device(got) - exact)))
              for name, got, exact in zip(("o", "dq", "dk", "dv"), (o, dq, dk, dv), want)}
    tol = 1e-2 if dtype == "f16" else 4e-2
    for name, got, exact in zip(("o", "dq", "dk", "dv"), (o, dq, dk, dv), want):
        np.testing.assert_allclose(from_device(got), exact, atol=tol * math.sqrt(shape[3] / 64), rtol=tol,
                                   err_msg=f"{name} ({dtype}, causal={causal})")
    return errors


def forward_occupancy(num_stages: int) -> Any:
    """tile.viz.show_occupancy of the descriptor forward at D = 128 with fwd_config's 128 x 64
    blocks in `num_stages` stages: two stages fit two programs on an SM, a third leaves room for
    one (its registers from the driver, or from ptxas without a GPU)."""
    rows = 1024
    x, M = tile.empty((rows, 128), "f16"), tile.empty((rows,), np.float32)
    descs = [TensorDescriptor(x, [rows, 128], [128, 1], [block, 128]) for block in (128, 64, 64, 128)]
    compiled = attn_fwd_desc.warmup(*descs, M, 0.5, rows, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=64, STAGE=1,
                                    num_warps=8, num_stages=num_stages, grid=(1,))
    return show_occupancy(compiled)


def main() -> None:
    shape = (1, 2, 128, 64) if not ON_GPU else (2, 4, 1024, 64)
    for dtype in ("f16", "bf16"):
        for causal in (False, True):
            errors = check(shape, dtype, causal)
            print(f"max abs error vs NumPy (float64), {dtype}, causal={causal}: " +
                  ", ".join(f"{name} {err:.2g}" for name, err in errors.items()))
    # The forward's tile IR for a causal launch: two scf.for loops (the off-diagonal and the
    # diagonal stage), each with two tt.dot and the online-softmax reductions.
    (q, k, v, _), _ = make_inputs(shape, "f16")
    o, M = tile.empty(shape, np.float16), tile.empty(shape[:3], np.float32)
    config = {key: value for key, value in fwd_config(shape[3], True, shape[2], descriptors=False).items()
              if key != "descriptors"}
    print(tile.dump(attn_fwd, q, k, v, o, M, 0.5, shape[2], HEAD_DIM=shape[3], STAGE=3, **config))
    if find_ptxas() is not None and (not ON_GPU or current_target() in SM_LIMITS):  # ptxas counts the registers
        for stages in (2, 3):
            print(f"128 x 64 blocks, {stages} stages:", forward_occupancy(stages), sep="\n")
    if ON_GPU:
        bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")
        sys.path.insert(0, bench)
        import bench_attention

        bench_attention.main(["--seq", "1024", "4096"])


if __name__ == "__main__":
    main()
