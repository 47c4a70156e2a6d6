"""Tensor cores and asynchronous copies (part of the table in ptx_isa).

mma.sync.aligned.m16n8kK.row.col: with g = lane >> 2, t = lane & 3 and kw elements per 32-bit
register (2 for f16/bf16, 1 for tf32, 4 for s8/u8/e4m3/e5m2), element e of register q holds
(the PTX ISA's "Matrix Fragments for mma.m16n8kK"):

    A (16 x 8kw):  row g + 8 * (q & 1),   col kw * t + e + 4kw * (q >> 1)      q = 0..3
    B (8kw x 8):   row kw * t + e + 4kw * q,   col g                          q = 0..1
    C, D (16 x 8): row g + 8 * (j >> 1),   col 2t + (j & 1)                   j = 0..3

Products are exact and summed in float64, then rounded once to f32 (the hardware sums in
another order; results agree within the GPU tests' tolerances); s32 accumulators wrap.

ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16: lane 8i + r gives the address of row r
of matrix i; lane l receives row l >> 2, columns 2(l & 3) and 2(l & 3) + 1 of each matrix
(with .trans: rows 2(l & 3), 2(l & 3) + 1 of column l >> 2), lower column in the low half.
stmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16 is its mirror (no .trans): lane l's word i goes
to row l >> 2, columns 2(l & 3) and 2(l & 3) + 1 of matrix i, whose row r is at lane 8i + r's address.

cp.async reads its global bytes when issued and writes them to shared memory when a
cp.async.wait_group retires its group (a copy with src-size 0 reads nothing and writes zeros).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.types import bf16, f8e4nv, f8e5
from ..runtime.interp_dtypes import from_bits
from .machine import Machine
from .program import Instr
from .ptx_isa import define, facts
from .ptx_isa_memory import effective_address

LANES = np.arange(32)
_G, _T = LANES >> 2, LANES & 3
ELEMENTS_PER_WORD = {"f16": 2, "bf16": 2, "tf32": 1, "s8": 4, "u8": 4, "e4m3": 4, "e5m2": 4}
_SHAPE_OF = {"m16n8k16": ("f16", "bf16"), "m16n8k8": ("tf32",), "m16n8k32": ("s8", "u8", "e4m3", "e5m2")}


def _warps(m: Machine) -> np.ndarray:
    """Active positions as [warps, 32] (warp-wide instructions run on whole warps only)."""
    m.require_full_warps()
    return m.positions().reshape(-1, 32)


# ------------------------------------------------------------------ ldmatrix

def _decode_ldmatrix(ins: Instr) -> Any:
    facts(("b16",), ("sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"),
          required=[("x1", "x2", "x4")], operands=2)(ins)
    num = int(next(x for x in ins.mods if x in ("x1", "x2", "x4"))[1])
    if ins.operands[0][0] != "vec" or len(ins.operands[0][1]) != num:
        raise ValueError(f"writes {num} registers")
    return num, "trans" in ins.mods


def _matrix_rows(m: Machine, addr_op: tuple, num: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(warps [warps, 32] of positions, shared element index of each matrix row [warps * 8 num])
    of an ldmatrix / stmatrix: lane 8i + r gives the 16-byte aligned address of row r of matrix i."""
    warps = _warps(m)
    addr = effective_address(m, addr_op, False).reshape(warps.shape)
    rows_used = 8 * num
    if m.tracer is not None:
        m.tracer.accessed(m, "shared", kind, addr.reshape(-1), 16, mask=m.positions() % 32 < rows_used)
    lanes = addr[:, :rows_used]

    def fail(k: int, reason: str) -> Exception:  # k: among the lanes giving row addresses
        return m.fail(k // rows_used * 32 + k % rows_used, reason)

    bad = (lanes % 16) != 0
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(-1))[0])
        raise fail(k, f"row address {int(lanes.reshape(-1)[k])} is not 16-byte aligned")
    cta = m.cta_local[warps[:, :rows_used]].reshape(-1)
    return warps, m.smem.index(cta, lanes.reshape(-1), 16, 2, fail)


@define("ldmatrix", _decode_ldmatrix)
def _ldmatrix(m: Machine, ins: Instr) -> None:
    num, trans = ins.spec
    warps, idx = _matrix_rows(m, ins.operands[1], num, "ld")
    rows_used = 8 * num
    m.checks.access(m, idx, 2, 8, False, warps[:, :rows_used].reshape(-1))
    rows = m.smem.load(idx, 2, 8).reshape(len(warps), num, 8, 8)  # [warp, matrix, row, col]
    for i, d in enumerate(ins.operands[0][1]):
        mat = rows[:, i]
        if trans:
            lo, hi = mat[:, 2 * _T, _G], mat[:, 2 * _T + 1, _G]
        else:
            lo, hi = mat[:, _G, 2 * _T], mat[:, _G, 2 * _T + 1]
        word = lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
        m.write(d, word.reshape(-1), "b32")


def _decode_stmatrix(ins: Instr) -> Any:
    facts(("b16",), ("sync", "aligned", "m8n8", "x1", "x2", "x4", "shared", "shared::cta"),
          required=[("x1", "x2", "x4")], operands=2)(ins)
    num = int(next(x for x in ins.mods if x in ("x1", "x2", "x4"))[1])
    if ins.operands[0][0] != "addr" or ins.operands[1][0] != "vec" or len(ins.operands[1][1]) != num:
        raise ValueError(f"takes [address] and {num} registers")
    return num


@define("stmatrix", _decode_stmatrix)
def _stmatrix(m: Machine, ins: Instr) -> None:
    num = ins.spec
    warps, idx = _matrix_rows(m, ins.operands[0], num, "st")
    rows = np.zeros((len(warps), num, 8, 8), np.uint16)  # [warp, matrix, row, col]
    for i, s in enumerate(ins.operands[1][1]):
        word = np.asarray(m.read(s, "b32")).astype(np.uint32).reshape(warps.shape)
        rows[:, i, _G, 2 * _T] = word & np.uint32(0xFFFF)
        rows[:, i, _G, 2 * _T + 1] = word >> np.uint32(16)
    # element (row r, column c) of each matrix came from lane 4r + c // 2 of the warp
    owner = warps[:, (4 * np.arange(8)[:, None] + np.arange(8)[None, :] // 2).reshape(-1)]  # [warp, 64]
    owners = np.repeat(owner[:, None, :], num, axis=1).reshape(-1)
    elements = (idx.astype(np.int64)[:, None] + np.arange(8)).reshape(-1)
    m.checks.access(m, elements, 2, 1, True, owners, generic=True)
    m.smem.store(idx, rows.reshape(-1, 8), 2)


# ------------------------------------------------------------------ mma

def _decode_mma(ins: Instr) -> Any:
    facts(("f32", "s32", "f16", "bf16", "tf32", "s8", "u8", "e4m3", "e5m2"),
          ("sync", "aligned", "row", "col", "m16n8k16", "m16n8k8", "m16n8k32", "satfinite"), count=4,
          required=[tuple(_SHAPE_OF)], operands=4)(ins)
    shape = next(x for x in ins.mods if x in _SHAPE_OF)
    dtype, atype, btype, ctype = ins.types
    if atype not in _SHAPE_OF[shape] or btype != atype or ctype != dtype:
        raise ValueError(f"unsupported types {'.'.join(ins.types)} for {shape}")
    if "row" not in ins.mods or "col" not in ins.mods:
        raise ValueError("only .row.col is supported")
    counts = [len(o[1]) if o[0] == "vec" else 1 for o in ins.operands]
    if counts != [4, 4, 2, 4]:
        raise ValueError("m16n8k* takes 4 D, 4 A, 2 B and 4 C registers")
    return atype, dtype


def fragment_elements(words: np.ndarray, atype: str) -> list[np.ndarray]:
    """The elements packed in 32-bit registers, lowest first, as float64 (int64 for s8/u8)."""
    w = words.astype(np.uint32)
    if atype == "tf32":
        return [w.view(np.float32).astype(np.float64)]
    if atype in ("f16", "bf16"):
        halves = [((w >> np.uint32(16 * e)) & np.uint32(0xFFFF)).astype(np.uint16) for e in range(2)]
        if atype == "f16":
            return [h.view(np.float16).astype(np.float64) for h in halves]
        return [from_bits(h, bf16).astype(np.float64) for h in halves]
    out = [((w >> np.uint32(8 * e)) & np.uint32(0xFF)).astype(np.uint8) for e in range(4)]
    if atype == "s8":
        return [b.view(np.int8).astype(np.int64) for b in out]
    if atype == "u8":
        return [b.astype(np.int64) for b in out]
    fmt = f8e4nv if atype == "e4m3" else f8e5
    return [from_bits(b, fmt).astype(np.float64) for b in out]


@define("mma", _decode_mma)
def _mma(m: Machine, ins: Instr) -> None:
    atype, dtype = ins.spec
    warps = _warps(m)
    nw = len(warps)
    kw = ELEMENTS_PER_WORD[atype]
    k = 8 * kw
    integer = dtype == "s32"
    acc = np.int64 if integer else np.float64
    a_regs, b_regs, c_regs = ([np.asarray(m.read(r, "b32")).reshape(nw, 32) for r in o[1]] for o in ins.operands[1:])
    d_regs = ins.operands[0][1]
    a = np.zeros((nw, 16, k), acc)
    b = np.zeros((nw, k, 8), acc)
    c = np.zeros((nw, 16, 8), acc)
    for q in range(4):
        for e, vals in enumerate(fragment_elements(a_regs[q], atype)):
            a[:, _G + 8 * (q & 1), kw * _T + e + 4 * kw * (q >> 1)] = vals
    for q in range(2):
        for e, vals in enumerate(fragment_elements(b_regs[q], atype)):
            b[:, kw * _T + e + 4 * kw * q, _G] = vals
    for j in range(4):
        cj = c_regs[j].view(np.int32).astype(np.int64) if integer else c_regs[j].view(np.float32).astype(np.float64)
        c[:, _G + 8 * (j >> 1), 2 * _T + (j & 1)] = cj
    d = np.matmul(a, b) + c
    for j, reg in enumerate(d_regs):
        dj = d[:, _G + 8 * (j >> 1), 2 * _T + (j & 1)].reshape(-1)
        if integer:
            m.write(reg, (dj & 0xFFFFFFFF).astype(np.uint32), "b32")
        else:
            m.write(reg, dj.astype(np.float32), "f32")


# ------------------------------------------------------------------ cp.async

def _decode_cp_async(ins: Instr) -> Any:
    facts((), ("ca", "cg", "shared", "global", "shared::cta", "L2::64B", "L2::128B", "L2::256B"), count=0)(ins)
    if len(ins.operands) not in (3, 4):
        raise ValueError("takes dst, src, cp-size and an optional src-size")
    if ins.operands[2][0] != "imm" or ins.operands[2][1] not in (4, 8, 16):
        raise ValueError("cp-size must be 4, 8 or 16")
    return ins.operands[2][1]


@define("cp.async", _decode_cp_async)
def _cp_async(m: Machine, ins: Instr) -> None:
    size = ins.spec
    dst = effective_address(m, ins.operands[0], False)
    src = effective_address(m, ins.operands[1], True)
    src_size = np.broadcast_to(np.asarray(m.read(ins.operands[3], "u32")).astype(np.int64), (m.count,)) \
        if len(ins.operands) == 4 else np.full(m.count, size, np.int64)
    for what, addr in (("destination", dst), ("source", src)):
        bad = (addr % size) != 0
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise m.error(f"cp.async: {what} address 0x{int(addr[k]):x} is not {size}-byte aligned", k)
    data = np.zeros((m.count, size), np.uint8)
    for n in np.unique(src_size):
        if n <= 0:
            continue
        rows = np.flatnonzero(src_size == n)
        keep, m.act = m.act, m.positions()[rows]
        try:
            data[rows, :min(int(n), size)] = m.gmem.load(src[rows], 1, min(int(n), size), m.fail)
        finally:
            m.act = keep
    idx = m.smem.index(m.cta_local[m.positions()], dst, size, 1, m.fail)
    if m.tracer is not None:  # the bytes land in shared memory at the cp.async.wait_group
        m.tracer.accessed(m, "global", "ld", src, size, mask=src_size > 0)
        m.tracer.accessed(m, "shared", "st", dst, size, data)
    byte_idx = (idx[:, None] + np.arange(size)).reshape(-1)
    threads = np.repeat(m.positions(), size)
    m.checks.copy_issued(m, byte_idx, threads)
    m.async_open.append((byte_idx, data.reshape(-1, 1), threads))


@define("cp.async.commit_group", facts((), (), count=0, operands=0))
def _commit(m: Machine, ins: Instr) -> None:
    m.async_groups.append(m.async_open)
    m.async_open = []


def _land(m: Machine, group: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    for byte_idx, data, threads in group:
        m.checks.copy_landed(m, byte_idx, threads)
        m.smem.store(byte_idx, data, 1)


@define("cp.async.wait_group", facts((), (), count=0, operands=1))
def _wait_group(m: Machine, ins: Instr) -> None:
    keep = int(ins.operands[0][1])
    while len(m.async_groups) > keep:
        _land(m, m.async_groups.pop(0))


@define("cp.async.wait_all", facts((), (), count=0, operands=0))
def _wait_all(m: Machine, ins: Instr) -> None:
    _commit(m, ins)
    while m.async_groups:
        _land(m, m.async_groups.pop(0))
