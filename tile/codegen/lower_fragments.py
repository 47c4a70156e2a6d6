"""The register fragments of mma.sync operands, shared by the mma.sync lowering (lower_dot) and
wgmma's A-from-registers path (lower_wgmma).

An m16n8k16 fragment is a fixed pattern of (row, column) offsets per lane and register slot
(the PTX ISA's figures for mma.m16n8k16, written out in tile/emulator/ptx_isa_tc.py). `mma_fragments`
finds, from a layout's element coordinates alone, which registers of each thread form which
fragment and where each fragment sits in each warp:

    coords [threads, registers, 2]  ->  ([registers by slot] per fragment, origins [fragments, warps, 2])

or None when the registers are not such fragments.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Optional, Sequence

import numpy as np

from ..ir.core import Value
from .lower_core import Lowering

Regs = tuple[int, ...]


def fragment_pattern(kind: str, kw: int) -> tuple[np.ndarray, tuple[int, int]]:
    """(offsets [slots, lanes, 2] of each register slot in each lane, tile shape) of an mma fragment.

    Slots: A q * kw + e (q < 4), B q * kw + e (q < 2), C j (j < 4); e the element in the word."""
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    if kind == "a":
        slots = [(g + 8 * (q & 1), kw * t + e + 4 * kw * (q >> 1)) for q in range(4) for e in range(kw)]
        tile = (16, 8 * kw)
    elif kind == "b":
        slots = [(kw * t + e + 4 * kw * q, g) for q in range(2) for e in range(kw)]
        tile = (8 * kw, 8)
    else:
        slots = [(g + 8 * (j >> 1), 2 * t + (j & 1)) for j in range(4)]
        tile = (16, 8)
    return np.array([np.stack(s, -1) for s in slots]), tile


def mma_fragments(coords: np.ndarray, kind: str, kw: int) -> Optional[tuple[list[Regs], np.ndarray]]:
    """Registers grouped into fragments: ([regs by slot] per fragment, origins [fragments, warps, 2]).

    coords: element of every (thread, register) [threads, registers, 2]."""
    pattern, tile = fragment_pattern(kind, kw)
    lane0 = pattern[:, 0, :]
    groups: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for r, x in enumerate(coords[0]):
        hits = [(s, tuple(x - lane0[s])) for s in range(len(lane0))
                if (x[0] - lane0[s, 0]) % tile[0] == 0 and (x[1] - lane0[s, 1]) % tile[1] == 0]
        if len(hits) != 1 or hits[0][0] in groups[hits[0][1]]:
            return None
        groups[hits[0][1]][hits[0][0]] = r
    if any(len(g) != len(lane0) for g in groups.values()):
        return None
    regs = np.array([[g[s] for s in range(len(lane0))] for g in groups.values()])   # [fragments, slots]
    warps = coords.shape[0] // 32
    c = coords[:, regs.reshape(-1)].reshape(warps, 32, len(regs), len(lane0), 2)
    origins = c[:, 0, :, 0, :] - lane0[0]                                          # [warps, fragments, 2]
    want = origins[:, None, :, None, :] + pattern.transpose(1, 0, 2)[None, :, None, :, :]
    if (c != want).any() or (origins % np.array(tile)).any():
        return None
    return [tuple(int(x) for x in g) for g in regs], origins.transpose(1, 0, 2)


def operand_source(ctx: Lowering, v: Value) -> Callable[[Sequence[int]], list[Value]]:
    """A getter of `v`'s registers by index (loads deferred shared operands on first use)."""
    deferred = ctx.deferred.pop(v, None)
    if deferred is not None:
        return deferred.get
    regs = ctx.get(v)
    return lambda idx: [regs[i] for i in idx]
