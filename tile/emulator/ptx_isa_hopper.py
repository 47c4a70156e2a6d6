"""Hopper's (sm_90a) warp-group MMA, mbarriers and tensor memory accelerator (part of the table in ptx_isa).

wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype  {d...}, a, b-desc, scale-d, imm-scale-a,
imm-scale-b[, imm-trans-a], [imm-trans-b]: the 128 threads of a warp group (warps 4i..4i+3)
compute D = A (64 x K) * B (K x N) + (scale-d ? C : 0), C and D in the same registers.

*Matrix descriptors* (64 bits, the same in every thread of the warp group):

    bits  0-13  start address >> 4      bits 16-29  leading byte offset (LBO) >> 4
    bits 32-45  stride byte offset >> 4 bits 49-51  base offset (0: the emulator requires it)
    bits 62-63  swizzle: 0 none, 1 128B, 2 64B, 3 32B

*Canonical layouts.* An operand tile has MN rows (64 for A, N for B) and K columns of 32 bytes.
In 16-byte chunks, with W = span / 16 (1 without swizzle), element (r, c) (byte b of its row
along K, or byte m of its column along MN) lies at (the PTX ISA's "Shared Memory Matrix
Layout"; CUTLASS writes the same as ((8,m),(T,2)) forms):

    K-major,  swizzled:   (r % 8) * span + (r // 8) * SBO + b
    K-major,  none:       (r % 8) * 16   + (r // 8) * SBO + (b // 16) * LBO + b % 16
    MN-major, swizzled:   (m // 16 % W) * 16 + (m // span) * LBO + (c % 8) * span + (c // 8) * SBO + m % 16
    MN-major, none:       (m // 16) * SBO + (c % 8) * 16 + (c // 8) * LBO + m % 16

from the start address; then the swizzle XORs address bits 4.. (the 16-byte chunk in a span)
with bits 7.. (the 128-byte row), log2(span / 16) bits of each, on the absolute shared
address, as the TMA writes them (so a k-step may just add 32 bytes to the start address).

*Fragments* (warp w of the group, lane l, g = l >> 2, t = l & 3): D register i holds row
16w + g + 8 * (i >> 1 & 1), column 8 * (i >> 2) + 2t + (i & 1). A from registers: mma.sync's
m16n8kK A fragment of rows 16w..16w+15 (ptx_isa_tc). Products are exact and summed in
float64, rounded once to f32 (s32 accumulators wrap). The emulator reads shared memory when
the wgmma issues and writes D at once; wgmma.fence / commit_group / wait_group check that
whole warps run them.

*mbarrier* (shared::cta, b64): init sets the expected arrival count; arrive (.expect_tx adds
transaction bytes first) counts one arrival per thread; a bulk copy's complete_tx subtracts
its bytes. When the pending arrivals and the transaction bytes both reach zero the phase
completes: the phase bit flips and the arrival count resets. try_wait.parity P is true once
the phase of parity P has completed (the current phase's parity differs from P); try_wait /
test_wait with the state an arrive returned, once the phase it arrived in has completed.

*cp.async.bulk.tensor* (TMA) reads the tensor map (tensor_maps.py) from the parameter bytes the
generic address points at. A load gathers the box at the coordinates (innermost first;
elements outside the tensor read as the map's fill), lays it out row-major in shared memory
with the map's swizzle, and completes its bytes on the mbarrier; the bytes land in shared
memory when a thread's try_wait sees that phase complete, so a kernel that reads its tile
without waiting reads the poison of fresh shared memory. A store writes the in-bounds
elements of a shared box to global memory when it issues.

*tensormap.replace.tile* writes one field of a tensor map in global or shared::cta memory (a
kernel's own descriptors; tensor_maps.replace_field); *tensormap.cp_fenceproxy* (.sync.aligned:
every lane of the warp, the same addresses in each) copies a map of 128 bytes from shared to
global memory, read by the warp's first lane; fence.proxy.tensormap::generic orders nothing more.

Also: fence.proxy.async (ordering only), elect.sync (lane 0 of the member mask's active lanes),
setmaxnreg.inc/dec (checked: a multiple of 8 in 24..256, run by whole warp groups).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.types import bf16, f8e4nv, f8e5
from ..runtime.interp_dtypes import from_bits
from .machine import Machine
from .memory import UINT
from .program import Instr
from .ptx_isa import define, facts
from .ptx_isa_memory import effective_address, load_bits, store_bits
from .ptx_isa_tc import ELEMENTS_PER_WORD, fragment_elements
from .tensor_maps import TENSOR_MAP_BYTES, TensorMap, decode_tensor_map, replace_field

WARPGROUP = 128
SWIZZLE_OF_MODE = {0: 0, 1: 128, 2: 64, 3: 32}  # descriptor bits 62-63 -> swizzle span in bytes
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
WGMMA_DTYPES = {"f16": "f32", "bf16": "f32", "tf32": "f32", "e4m3": "f32", "e5m2": "f32", "s8": "s32", "u8": "s32"}
TRANSPOSABLE = ("f16", "bf16")  # the types whose operands may be MN-major
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}


def swizzle(address: Any, span: int) -> Any:
    """The shared address a `span`-byte swizzle (0, 32, 64, 128) moves byte `address` to."""
    if span == 0:
        return address
    mask = span // 16 - 1
    return address ^ (((address >> 7) & mask) << 4)


# ------------------------------------------------------------------ wgmma

@dataclass(frozen=True)
class Descriptor:
    """A matrix descriptor's fields (arrays over warp groups)."""

    start: np.ndarray
    lbo: np.ndarray
    sbo: np.ndarray
    swizzle: np.ndarray
    base_offset: np.ndarray

    @staticmethod
    def decode(bits: np.ndarray) -> "Descriptor":
        d = bits.astype(np.uint64)

        def field_(shift: int, width: int) -> np.ndarray:
            return ((d >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)

        modes = field_(62, 2)
        return Descriptor(field_(0, 14) << 4, field_(16, 14) << 4, field_(32, 14) << 4,
                          np.vectorize(SWIZZLE_OF_MODE.get, otypes=[np.int64])(modes), field_(49, 3))


def operand_offsets(rows: int, cols: int, element_bytes: int, k_major: bool, span: int, lbo: Any, sbo: Any
                    ) -> np.ndarray:
    """Byte offsets from the start address (before the swizzle) of element (r, c) of a canonical
    operand tile of `rows` (M or N) x `cols` (K) elements; lbo / sbo broadcast against [rows, cols]."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    if k_major:
        b = c * element_bytes
        if span:
            return (r % 8) * span + (r // 8) * sbo + b
        return (r % 8) * 16 + (r // 8) * sbo + (b // 16) * lbo + b % 16
    mb = r * element_bytes
    if span:
        return (mb // 16 % (span // 16)) * 16 + (mb // span) * lbo + (c % 8) * span + (c // 8) * sbo + mb % 16
    return (mb // 16) * sbo + (c % 8) * 16 + (c // 8) * lbo + mb % 16


def element_values(bits: np.ndarray, atype: str) -> np.ndarray:
    """Operand elements (unsigned bits) as float64, or int64 for s8/u8; tf32 ignores the low 13 bits."""
    if atype == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if atype == "bf16":
        return from_bits(bits.astype(np.uint16), bf16).astype(np.float64)
    if atype == "tf32":
        return (bits.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if atype == "s8":
        return bits.astype(np.uint8).view(np.int8).astype(np.int64)
    if atype == "u8":
        return bits.astype(np.int64)
    return from_bits(bits.astype(np.uint8), f8e4nv if atype == "e4m3" else f8e5).astype(np.float64)


def d_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of D register i in thread p of a warp group: arrays [n / 2, 128]."""
    p = np.arange(WARPGROUP)
    w, g, t = p >> 5, (p & 31) >> 2, p & 3
    i = np.arange(n // 2)[:, None]
    return 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)


def a_fragment(atype: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of element e of A register q in thread p: arrays [4, elements per word, 128]."""
    kw = ELEMENTS_PER_WORD[atype]
    p = np.arange(WARPGROUP)
    w, g, t = p >> 5, (p & 31) >> 2, p & 3
    q = np.arange(4)[:, None, None]
    e = np.arange(kw)[None, :, None]
    rows, cols = np.broadcast_arrays(16 * w + g + 8 * (q & 1), kw * t + e + 4 * kw * (q >> 1))
    return rows, cols


@dataclass(frozen=True)
class WgmmaSpec:
    n: int
    k: int
    atype: str
    dtype: str
    a_in_registers: bool
    trans_a: bool
    trans_b: bool
    scale_a: int  # imm-scale-a: 1, or -1 to negate A
    scale_b: int


def _decode_wgmma(ins: Instr) -> WgmmaSpec:
    shapes = [x for x in ins.mods if x.startswith("m64n")]
    facts(tuple(WGMMA_K) + ("f32", "s32"), ("sync", "aligned", "satfinite") + tuple(shapes), count=3)(ins)
    if len(shapes) != 1 or "k" not in shapes[0]:
        raise ValueError("needs one shape .m64nNkK")
    n_text, k_text = shapes[0][4:].split("k")
    n, k = int(n_text), int(k_text)
    dtype, atype, btype = ins.types
    if atype not in WGMMA_K or btype != atype or WGMMA_DTYPES[atype] != dtype:
        raise ValueError(f"unsupported types .{dtype}.{atype}.{btype}")
    if k != WGMMA_K[atype] or n % 8 or not 8 <= n <= 256:
        raise ValueError(f"unsupported shape m64n{n}k{k} for .{atype}")
    ops = ins.operands
    if len(ops) < 4 or ops[0][0] != "vec" or len(ops[0][1]) != n // 2:
        raise ValueError(f"writes {n // 2} D registers")
    a_regs = ops[1][0] == "vec"
    if a_regs and len(ops[1][1]) != 4:
        raise ValueError("A in registers takes 4 registers")
    immediates = ops[4:]
    want = (0 if dtype == "s32" else 2) + ((1 if a_regs else 2) if atype in TRANSPOSABLE else 0)
    if len(immediates) != want or any(o[0] != "imm" for o in immediates):
        raise ValueError(f"takes {want} immediates after scale-d")
    values = [o[1] for o in immediates]
    if dtype != "s32" and any(v not in (1, -1) for v in values[:2]):
        raise ValueError("imm-scale-a and imm-scale-b are 1 or -1")
    trans = values[2:] if atype in TRANSPOSABLE else []
    if any(v not in (0, 1) for v in trans):
        raise ValueError("the transpose immediates are 0 or 1")
    trans_a = bool(trans[0]) if trans and not a_regs else False
    trans_b = bool(trans[-1]) if trans else False
    scale_a = values[0] if dtype != "s32" else 1
    scale_b = values[1] if dtype != "s32" else 1
    return WgmmaSpec(n, k, atype, dtype, a_regs, trans_a, trans_b, scale_a, scale_b)


def _warp_groups(m: Machine) -> np.ndarray:
    """Active positions as [warp groups, 128]; warp-group instructions need all 128 threads."""
    m.require_full_warps()
    pos = m.positions()
    if m.ntid % WARPGROUP or pos.size % WARPGROUP:
        raise m.error(f"{m.ins.opcode} needs whole warp groups (128 threads), but {pos.size} threads run it")
    groups = pos.reshape(-1, WARPGROUP)
    if (groups[:, 0] % WARPGROUP).any() or (groups[:, -1] - groups[:, 0] != WARPGROUP - 1).any():
        raise m.error(f"{m.ins.opcode} needs every warp of a warp group (warps 4i..4i+3), but only some run it")
    return groups


def _uniform(m: Machine, values: np.ndarray, what: str) -> np.ndarray:
    """values [groups, 128] -> [groups]; an error where the threads of a group disagree."""
    bad = (values != values[:, :1]).any(axis=1)
    if bad.any():
        raise m.error(f"{m.ins.opcode}: {what} differs between the threads of a warp group",
                      int(np.flatnonzero(bad)[0]) * WARPGROUP)
    return values[:, 0]


def _gather_operand(m: Machine, groups: np.ndarray, desc_op: tuple, rows: int, cols: int, atype: str,
                    k_major: bool) -> np.ndarray:
    """The operand tile [groups, rows, cols] (rows: M or N, cols: K) a descriptor points at."""
    bits = np.asarray(m.read(desc_op, "b64")).reshape(groups.shape)
    d = Descriptor.decode(_uniform(m, bits, "the matrix descriptor"))
    if d.base_offset.any():
        raise m.error(f"{m.ins.opcode}: matrix descriptors with a base offset are not supported")
    eb = ELEMENT_BYTES[atype]
    out = np.empty((len(groups), rows, cols), np.int64 if atype in ("s8", "u8") else np.float64)
    for span in np.unique(d.swizzle):
        sel = np.flatnonzero(d.swizzle == span)
        offsets = operand_offsets(rows, cols, eb, k_major, int(span), d.lbo[sel, None, None],
                                  d.sbo[sel, None, None])
        address = swizzle(d.start[sel, None, None] + offsets, int(span))
        cta = m.cta_local[groups[sel, 0]]
        flat = address.reshape(len(sel), -1)

        def fail(k: int, reason: str, per_group: int = flat.shape[1], sel: np.ndarray = sel) -> Exception:
            return m.error(f"{m.ins.opcode}: {reason}", int(sel[k // per_group]) * WARPGROUP)

        idx = m.smem.index(np.repeat(cta, flat.shape[1]), flat.reshape(-1), eb, eb, fail)
        m.checks.access(m, idx, eb, 1, False, np.repeat(groups[sel, 0], flat.shape[1]))
        m.checks.async_read(m, "wgmma", (idx[:, None] * eb + np.arange(eb)).reshape(-1))
        out[sel] = element_values(m.smem.typed(eb)[idx].reshape(len(sel), rows, cols), atype)
    return out


@define("wgmma.mma_async", _decode_wgmma)
def _wgmma(m: Machine, ins: Instr) -> None:
    spec: WgmmaSpec = ins.spec
    groups = _warp_groups(m)
    ng = len(groups)
    d_regs, a_op, b_op, scale_op = ins.operands[:4]
    if spec.a_in_registers:
        a = np.zeros((ng, 64, spec.k), np.int64 if spec.dtype == "s32" else np.float64)
        rows, cols = a_fragment(spec.atype)
        for q, reg in enumerate(a_op[1]):
            words = np.asarray(m.read(reg, "b32")).reshape(ng, WARPGROUP)
            for e, vals in enumerate(fragment_elements(words, spec.atype)):
                a[:, rows[q, e], cols[q, e]] = vals
    else:
        a = _gather_operand(m, groups, a_op, 64, spec.k, spec.atype, not spec.trans_a)
    b = _gather_operand(m, groups, b_op, spec.n, spec.k, spec.atype, not spec.trans_b).transpose(0, 2, 1)
    d = np.matmul(a, b) * (spec.scale_a * spec.scale_b)
    scale_d = np.broadcast_to(np.asarray(m.read(scale_op, "pred")), (m.count,)).reshape(ng, WARPGROUP)
    scale_d = _uniform(m, scale_d, "scale-d")
    rows, cols = d_fragment(spec.n)
    integer = spec.dtype == "s32"
    wg = groups[:, 0] // WARPGROUP
    for reg in d_regs[1]:  # the accumulators of an earlier wgmma of these warp groups chain into this one
        found = m.wgmma_pending.get(reg[1])
        if found is not None:
            found[1][wg] = -1
    for i, reg in enumerate(d_regs[1]):
        value = d[np.arange(ng)[:, None], rows[i], cols[i]]
        if scale_d.any():
            c = np.asarray(m.read(reg, spec.dtype)).reshape(ng, WARPGROUP)
            value = value + np.where(scale_d[:, None], c.astype(value.dtype), 0)
        if integer:
            m.write(reg, (value.reshape(-1) & 0xFFFFFFFF).astype(np.uint32), "b32")
        else:
            m.write(reg, value.reshape(-1).astype(np.float32), "f32")
    for reg in d_regs[1]:
        found = m.wgmma_pending.get(reg[1])
        group_of = np.full(m.wgmma_committed.size, -1, np.int64) if found is None else found[1]
        group_of[wg] = m.wgmma_committed[wg]  # the warp groups' open group
        m.wgmma_pending[reg[1]] = (m.pc, group_of)


def _whole_warp_groups(m: Machine, ins: Instr) -> None:
    _warp_groups(m)


define("wgmma.fence", facts((), ("sync", "aligned"), count=0, operands=0))(_whole_warp_groups)


@define("wgmma.commit_group", facts((), ("sync", "aligned"), count=0, operands=0))
def _wgmma_commit(m: Machine, ins: Instr) -> None:
    m.wgmma_committed[_warp_groups(m)[:, 0] // WARPGROUP] += 1
    m.checks.commit("wgmma")


@define("wgmma.wait_group", facts((), ("sync", "aligned"), count=0, operands=1))
def _wgmma_wait(m: Machine, ins: Instr) -> None:
    """Retire all but the newest N committed groups of the warp groups here: their accumulators
    may be used again."""
    wg = _warp_groups(m)[:, 0] // WARPGROUP
    keep = int(ins.operands[0][1])
    m.wgmma_retired[wg] = np.maximum(m.wgmma_retired[wg], m.wgmma_committed[wg] - keep)
    for reg, (_, group_of) in list(m.wgmma_pending.items()):
        if (group_of < m.wgmma_retired).all():
            del m.wgmma_pending[reg]
    m.checks.retire("wgmma", keep)


# ------------------------------------------------------------------ mbarrier

@dataclass
class MBarrier:
    """One mbarrier object of one CTA."""

    cta: int  # in the batch
    count: int
    pending: int
    tx: int = 0
    phase: int = 0
    epoch: int = 0  # the race checks' epoch of the last completed phase (checks.py)
    in_flight: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # copies of this phase
    landed: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # of completed phases

    def settle(self, m: Machine) -> None:
        """Complete the phase once its arrivals and transaction bytes are all in."""
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count
            self.epoch = m.checks.phase_completed(self.cta)
            self.landed.extend(self.in_flight)
            self.in_flight = []


_MBAR_MODS = ("shared", "shared::cta", "cta", "release", "acquire", "relaxed")


def _barrier_keys(m: Machine, addr_op: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(CTA in the batch, shared address) of each active thread's mbarrier, checked aligned to 8."""
    addr = effective_address(m, addr_op, False)
    bad = addr % 8 != 0
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise m.error(f"{m.ins.opcode}: the mbarrier address {int(addr[k])} is not 8-byte aligned", k)
    m.smem.index(m.cta_local[m.positions()], addr, 8, 8, m.fail)
    return m.cta_local[m.positions()], addr


def _mbarrier(m: Machine, cta: int, address: int, position: int) -> MBarrier:
    found = m.mbarriers.get((cta, address))
    if found is None:
        raise m.error(f"{m.ins.opcode}: no mbarrier.init at shared address {address}", position)
    return found


@define("mbarrier.init", facts(("b64",), _MBAR_MODS, operands=2))
def _mbarrier_init(m: Machine, ins: Instr) -> None:
    ctas, addr = _barrier_keys(m, ins.operands[0])
    counts = np.broadcast_to(np.asarray(m.read(ins.operands[1], "u32")), (m.count,))
    for k in range(m.count):
        if not 1 <= int(counts[k]) < 1 << 20:
            raise m.error(f"mbarrier.init: the arrival count {int(counts[k])} is not in 1..2^20-1", k)
        m.mbarriers[(int(ctas[k]), int(addr[k]))] = MBarrier(int(ctas[k]), int(counts[k]), int(counts[k]))


@define("mbarrier.inval", facts(("b64",), _MBAR_MODS, operands=1))
def _mbarrier_inval(m: Machine, ins: Instr) -> None:
    ctas, addr = _barrier_keys(m, ins.operands[0])
    for k in range(m.count):
        m.mbarriers.pop((int(ctas[k]), int(addr[k])), None)


def _decode_arrive(ins: Instr) -> Any:
    facts(("b64",), _MBAR_MODS + ("expect_tx",))(ins)
    expect_tx = "expect_tx" in ins.mods
    if len(ins.operands) not in ((3,) if expect_tx else (2, 3)):
        raise ValueError("takes state, [address]" + (", tx-count" if expect_tx else "[, count]"))
    return expect_tx


@define("mbarrier.arrive", _decode_arrive)
def _mbarrier_arrive(m: Machine, ins: Instr) -> None:
    expect_tx = ins.spec
    ctas, addr = _barrier_keys(m, ins.operands[1])
    tx = np.broadcast_to(np.asarray(m.read(ins.operands[2], "u32")), (m.count,)) if expect_tx else None
    arrivals = np.broadcast_to(np.asarray(m.read(ins.operands[2], "u32")), (m.count,)) \
        if len(ins.operands) == 3 and not expect_tx else np.ones(m.count, np.int64)
    states = []
    for k in range(m.count):
        bar = _mbarrier(m, int(ctas[k]), int(addr[k]), k)
        if tx is not None:
            bar.tx += int(tx[k])
        if int(arrivals[k]) > bar.pending:
            raise m.error(f"mbarrier.arrive: {int(arrivals[k])} arrivals on an mbarrier expecting {bar.pending} more "
                          f"in this phase", k)
        states.append(bar.phase)
        bar.pending -= int(arrivals[k])
        bar.settle(m)
    dest = ins.operands[0]
    if dest[0] == "reg":
        m.write(dest, np.array(states, np.uint64), "b64")


@define(("mbarrier.try_wait", "mbarrier.test_wait"), facts(("b64",), _MBAR_MODS + ("parity",), operands=3))
def _mbarrier_try_wait(m: Machine, ins: Instr) -> None:
    """try_wait / test_wait (the emulator never suspends: both test once). With .parity the
    operand is the parity of the phase waited for; without, the state an arrive returned (the
    phase it arrived in): true once that phase has completed."""
    parity = "parity" in ins.mods
    ctas, addr = _barrier_keys(m, ins.operands[1])
    waited = np.broadcast_to(np.asarray(m.read(ins.operands[2], "u32" if parity else "u64")), (m.count,))
    done = np.zeros(m.count, bool)
    positions = m.positions()
    for k in range(m.count):
        bar = _mbarrier(m, int(ctas[k]), int(addr[k]), k)
        done[k] = (bar.phase & 1) != (int(waited[k]) & 1) if parity else bar.phase != int(waited[k])
        if done[k]:
            m.checks.observed(int(positions[k]), bar.epoch)
            for idx, data in bar.landed:
                m.checks.async_write(idx)
                m.smem.store(idx, data, 1)
            bar.landed = []
    m.write(ins.operands[0], done, "pred")


# ------------------------------------------------------------------ tensor memory accelerator

def _tensor_map(m: Machine, address: int, position: int) -> TensorMap:
    raw = m.gmem.load(np.array([address], np.uint64), 1, 128, m.fail)[0]
    try:
        return decode_tensor_map(bytes(raw))
    except ValueError as e:
        raise m.error(f"{m.ins.opcode}: {e}", position) from None


_REPLACED = ("global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride", "elemtype",
             "interleave_layout", "swizzle_mode", "fill_mode")


def _decode_tensormap_replace(ins: Instr) -> Any:
    facts(("b32", "b64"), ("tile", "global", "shared::cta", "b1024") + _REPLACED, required=[_REPLACED])(ins)
    if len(ins.operands) not in (2, 3) or ins.operands[0][0] != "addr":
        raise ValueError("takes [map], then a value or a dimension and a value")
    return next(x for x in ins.mods if x in _REPLACED)


@define("tensormap.replace", _decode_tensormap_replace)
def _tensormap_replace(m: Machine, ins: Instr) -> None:
    args = [np.broadcast_to(np.asarray(m.read(o, "u64" if ins.types[0] == "b64" else "u32")), (m.count,))
            for o in ins.operands[1:]]
    stride_unit = 16 if m.kernel.ptx_version <= (8, 5) else 1
    if "shared::cta" in ins.mods:
        maps = load_bits(m, "shared", ins.operands[0], 1, TENSOR_MAP_BYTES).copy()
        for k in range(m.count):
            raw = bytearray(maps[k].tobytes())
            try:
                replace_field(raw, ins.spec, [int(a[k]) for a in args], stride_unit)
            except ValueError as e:
                raise m.error(f"tensormap.replace: {e}", k) from None
            maps[k] = np.frombuffer(bytes(raw), np.uint8)
        store_bits(m, "shared", ins.operands[0], maps, 1)
        return
    address = effective_address(m, ins.operands[0], True)
    for k in range(m.count):
        at = np.array([address[k]], np.uint64)
        raw = bytearray(m.gmem.load(at, 1, 128, m.fail)[0].tobytes())
        try:
            replace_field(raw, ins.spec, [int(a[k]) for a in args], stride_unit)
        except ValueError as e:
            raise m.error(f"tensormap.replace: {e}", k) from None
        m.gmem.store(at, np.frombuffer(bytes(raw), np.uint8)[None, :], 1, m.fail)


def _decode_tensormap_copy(ins: Instr) -> Any:
    facts((), ("global", "shared::cta", "tensormap::generic", "release", "gpu", "cta", "sys", "sync", "aligned"),
          required=[("global",), ("shared::cta",), ("sync",), ("aligned",)], count=0)(ins)
    if len(ins.operands) != 3 or ins.operands[0][0] != "addr" or ins.operands[1][0] != "addr" or \
            ins.operands[2] != ("imm", TENSOR_MAP_BYTES):
        raise ValueError(f"takes [global map], [shared map], {TENSOR_MAP_BYTES}")
    return None


@define("tensormap.cp_fenceproxy", _decode_tensormap_copy)
def _tensormap_copy(m: Machine, ins: Instr) -> None:
    m.require_full_warps()
    positions = m.positions()
    dst = effective_address(m, ins.operands[0], True)
    src = effective_address(m, ins.operands[1], False)
    warps = positions // 32
    for warp in np.unique(warps):
        lanes = np.flatnonzero(warps == warp)
        if (dst[lanes] != dst[lanes[0]]).any() or (src[lanes] != src[lanes[0]]).any():
            raise m.error(f"{ins.opcode}: the lanes of a warp copy different tensor maps", int(lanes[0]))
        keep, m.act = m.act, positions[lanes[:1]]
        try:
            tensor_map = load_bits(m, "shared", ins.operands[1], 1, TENSOR_MAP_BYTES)
            m.gmem.store(np.array([dst[lanes[0]]], np.uint64), tensor_map, 1, m.fail)
        finally:
            m.act = keep


def box_addresses(tmap: TensorMap, coords: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the box at `coords` (innermost first), row-major: the global address of each element,
    whether it lies inside the tensor, and its byte offset in the box."""
    grids = np.meshgrid(*[np.arange(b, dtype=np.int64) for b in reversed(tmap.box)], indexing="ij")
    inside = np.ones(grids[0].shape, bool)
    address = np.full(grids[0].shape, tmap.address, np.int64)
    for dim, offs in enumerate(reversed(grids)):
        x = coords[dim] + offs
        inside &= (x >= 0) & (x < tmap.sizes[dim])
        address += x * tmap.strides[dim]
    box_offset = np.arange(inside.size, dtype=np.int64) * tmap.element_bytes
    return address.reshape(-1), inside.reshape(-1), box_offset


def _decode_bulk_tensor(ins: Instr) -> Any:
    dims = [x for x in ins.mods if x in ("1d", "2d", "3d", "4d", "5d")]
    facts((), ("shared::cluster", "shared::cta", "global", "mbarrier::complete_tx::bytes", "bulk_group",
               "tile", "L2::cache_hint") + tuple(dims), count=0)(ins)
    if len(dims) != 1:
        raise ValueError("needs one of .1d .. .5d")
    rank = int(dims[0][0])
    load = ins.mods.index("global") > ins.mods.index(next(x for x in ins.mods if x.startswith("shared")))
    if load and ("mbarrier::complete_tx::bytes" not in ins.mods or len(ins.operands) != 3):
        raise ValueError("a load takes [dst], [tensor map, {coordinates}], [mbarrier] and "
                         ".mbarrier::complete_tx::bytes")
    if not load and ("bulk_group" not in ins.mods or len(ins.operands) != 2):
        raise ValueError("a store takes [tensor map, {coordinates}], [src] with .bulk_group")
    tensor = ins.operands[1] if load else ins.operands[0]
    if tensor[0] != "tensor" or tensor[2][0] != "vec" or len(tensor[2][1]) != rank:
        raise ValueError(f"needs a tensor map and {rank} coordinates")
    return load, rank


def _copy_threads(m: Machine, tensor: tuple) -> tuple[np.ndarray, list[np.ndarray]]:
    base = np.broadcast_to(np.asarray(m.read(tensor[1], "u64")), (m.count,))
    coords = [np.broadcast_to(np.asarray(m.read(c, "s32")), (m.count,)).astype(np.int64) for c in tensor[2][1]]
    return base, coords


def _check_box_alignment(m: Machine, address: int, k: int) -> None:
    if address % 128:
        raise m.error(f"{m.ins.opcode}: the shared address {address} of a tensor copy is not 128-byte aligned", k)


@define("cp.async.bulk.tensor", _decode_bulk_tensor)
def _bulk_tensor(m: Machine, ins: Instr) -> None:
    load, _ = ins.spec
    ctas = m.cta_local[m.positions()]
    if load:
        dst = effective_address(m, ins.operands[0], False)
        base, coords = _copy_threads(m, ins.operands[1])
        bar_ctas, bar_addr = _barrier_keys(m, ins.operands[2])
    else:
        base, coords = _copy_threads(m, ins.operands[0])
        src = effective_address(m, ins.operands[1], False)
    for k in range(m.count):
        tmap = _tensor_map(m, int(base[k]), k)
        address, inside, box_offset = box_addresses(tmap, [int(c[k]) for c in coords])
        eb = tmap.element_bytes
        shared = int(dst[k] if load else src[k])
        _check_box_alignment(m, shared, k)
        element = swizzle(shared + box_offset, tmap.swizzle)
        rows = np.full(element.size, ctas[k])
        keep, m.act = m.act, np.full(element.size, m.positions()[k])
        try:
            idx = m.smem.index(rows, element, eb, eb, m.fail)
            if load:
                bits = np.full(element.size, tmap.fill_bits, UINT[eb])
                if inside.any():
                    bits[inside] = m.gmem.load(address[inside].astype(np.uint64), eb, 1, m.fail)[:, 0]
                byte_idx = (idx[:, None] * eb + np.arange(eb)).reshape(-1)
                m.checks.copy_issued(m, byte_idx, np.full(byte_idx.size, m.positions()[k]))
                bar = _mbarrier(m, int(bar_ctas[k]), int(bar_addr[k]), 0)
                bar.in_flight.append((byte_idx, bits.view(np.uint8).reshape(-1, 1)))
                bar.tx -= tmap.box_bytes
                bar.settle(m)
            else:
                m.checks.access(m, idx, eb, 1, False, np.full(idx.size, m.positions()[k]))
                m.checks.async_read(m, "bulk", (idx[:, None] * eb + np.arange(eb)).reshape(-1))
                if inside.any():
                    values = m.smem.typed(eb)[idx[inside]]
                    m.gmem.store(address[inside].astype(np.uint64), values[:, None], eb, m.fail)
        finally:
            m.act = keep


@define("cp.async.bulk.commit_group", facts((), (), count=0, operands=0))
def _bulk_commit(m: Machine, ins: Instr) -> None:
    m.checks.commit("bulk")


@define("cp.async.bulk.wait_group", facts((), ("read",), count=0, operands=1))
def _bulk_wait(m: Machine, ins: Instr) -> None:
    """The emulator's TMA stores complete when issued; the checks learn that their shared
    source may be written again."""
    m.checks.retire("bulk", int(ins.operands[0][1]))


# ------------------------------------------------------------------ elect, setmaxnreg

@define("elect", facts((), ("sync",), count=0, operands=2))
def _elect(m: Machine, ins: Instr) -> None:
    """elect.sync %r|%p, membermask: in each warp, the lowest lane of the mask is the leader: %p
    is true in it alone, %r (or the sink _) gets its lane number in every thread."""
    m.require_full_warps()
    dest, mask_op = ins.operands
    if dest[0] != "pair":
        raise m.error("elect.sync writes a pair %r|%p")
    mask = int(np.asarray(m.read(mask_op, "u32")).flat[0])
    if mask == 0:
        raise m.error("elect.sync: the member mask is empty")
    leader = (mask & -mask).bit_length() - 1
    if dest[1][0] == "reg":
        m.write(dest[1], np.full(m.count, leader, np.uint32), "b32")
    m.write(dest[2], m.positions() % 32 == leader, "pred")


def _decode_setmaxnreg(ins: Instr) -> Any:
    facts(("u32",), ("inc", "dec", "sync", "aligned"), required=[("inc", "dec")], operands=1)(ins)
    count = ins.operands[0]
    if count[0] != "imm" or count[1] % 8 or not 24 <= count[1] <= 256:
        raise ValueError("the register count is an immediate multiple of 8 in 24..256")
    return count[1]


@define("setmaxnreg", _decode_setmaxnreg)
def _setmaxnreg(m: Machine, ins: Instr) -> None:
    _warp_groups(m)


__all__ = ["swizzle", "operand_offsets", "Descriptor", "d_fragment", "a_fragment", "box_addresses", "MBarrier"]
