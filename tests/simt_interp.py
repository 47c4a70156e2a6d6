"""A NumPy interpreter of simt IR, for testing the lowering without a GPU.

All threads of a CTA run in lockstep: every value is an array over the CTA's threads.
Divergent control flow runs under an activity mask. Memory is checked: global accesses by
active threads must stay inside allocated buffers, and shared memory reports races (a read
of a byte written by another thread, or a write of a byte read by another thread, with no
barrier in between), so a missing barrier fails a test even though lockstep execution
would hide it.

cp.async copies read global memory when issued and land in shared memory when a
cp.async.wait_group retires their group; until then their bytes are "in flight": any
other access to them is an error, and so is issuing a copy over bytes another thread read
or wrote since the last barrier. A missing wait or barrier around the pipeline fails a test.

wgmma (simt_interp_tc.py) reads shared memory when issued, as the async proxy: a byte written
since the last barrier, or written by a thread that has not run fence.proxy.async since, is
an error; its bytes stay "being read" until a wgmma.wait_group retires its group, and writing
them before that is an error too.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import numpy as np

from tile.codegen.floats import float_bits
from tile.ir.float8 import is_float8_variant
from tile.ir.core import Block, Operation, Value
from tile.ir.types import DType, PointerType, f16, i1

SMALL_FLOATS = ("bf16", "f8e4nv", "f8e5")


class InterpError(Exception):
    pass


def np_dtype(t) -> np.dtype:
    if isinstance(t, PointerType):
        return np.dtype(np.int64)
    if t == i1:
        return np.dtype(bool)
    if is_float8_variant(t):  # only moved, so held as their codes
        return np.dtype(np.uint8)
    if t.is_floating:
        return np.dtype({16: np.float32 if t.name == "bf16" else np.float16, 32: np.float32, 64: np.float64,
                         8: np.float32}[t.bits])
    return np.dtype(f"{'u' if t.is_unsigned else 'i'}{t.bytes}")


def _decode_table(t: DType) -> np.ndarray:
    """Value of every bit pattern of an 8/16-bit float format (NaN where the format has NaN)."""
    n = 1 << t.bits
    out = np.empty(n, dtype=np.float64)
    e, mbits = t.exponent_bits, t.mantissa_bits
    bias = (1 << (e - 1)) - 1
    for bits in range(n):
        sign = -1.0 if bits >> (e + mbits) else 1.0
        ex = (bits >> mbits) & ((1 << e) - 1)
        man = bits & ((1 << mbits) - 1)
        if t.name == "f8e4nv" and ex == (1 << e) - 1 and man == (1 << mbits) - 1:
            out[bits] = math.nan
        elif t.name != "f8e4nv" and ex == (1 << e) - 1:
            out[bits] = sign * math.inf if man == 0 else math.nan
        elif ex == 0:
            out[bits] = sign * man * 2.0 ** (1 - bias - mbits)
        else:
            out[bits] = sign * (1 + man / (1 << mbits)) * 2.0 ** (ex - bias)
    return out


_TABLES: dict[str, np.ndarray] = {}


def decode(bits: np.ndarray, t: DType) -> np.ndarray:
    if t == f16:
        return bits.astype(np.uint16).view(np.float16)
    if t.name not in _TABLES:
        _TABLES[t.name] = _decode_table(t)
    return _TABLES[t.name][bits.astype(np.int64)].astype(np.float32)


def encode(values: np.ndarray, t: DType) -> np.ndarray:
    """Bits of values (exactly representable in t, or rounded to nearest even) in format t."""
    if t == f16:
        return values.astype(np.float16).view(np.uint16)
    dt = np.uint16 if t.bits == 16 else np.uint8
    return np.array([float_bits(float(v), t) for v in np.asarray(values, dtype=np.float64).ravel()],
                    dtype=dt).reshape(np.shape(values))


def round_to(values: np.ndarray, t: DType, rnd: str = "rn") -> np.ndarray:
    """values (float64) rounded to the float type t (rn: nearest even; rz: toward zero)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(all="ignore"):
        if t.name in SMALL_FLOATS:
            bits = encode(v, t).astype(np.int64)
            r = decode(bits, t).astype(np.float64)
            if rnd == "rz":
                over = (np.abs(r) > np.abs(v)) & np.isfinite(v) & (np.abs(v) > 0)
                r = np.where(over, decode(bits - 1, t).astype(np.float64), r)
            return r.astype(np.float32)
        dt = np_dtype(t)
        r = v.astype(dt)
        if rnd == "rz":
            over = (np.abs(r.astype(np.float64)) > np.abs(v)) & ~np.isinf(v)
            r = np.where(over, np.nextafter(r, np.zeros_like(r)), r).astype(dt)
        return r


class Machine:
    """Global memory: one byte heap; buffers are (address, size) ranges in it."""

    def __init__(self) -> None:
        self.heap = np.zeros(1 << 16, dtype=np.uint8)
        self.top = 4096
        self.buffers: list[tuple[int, int]] = []
        self.printed: list[str] = []

    def alloc(self, array: np.ndarray) -> int:
        data = np.ascontiguousarray(array).view(np.uint8).ravel()
        addr = (self.top + 255) // 256 * 256
        end = addr + max(len(data), 1)
        if end > len(self.heap):
            self.heap = np.concatenate([self.heap, np.zeros(max(end, 2 * len(self.heap)) - len(self.heap), np.uint8)])
        self.heap[addr:addr + len(data)] = data
        self.buffers.append((addr, len(data)))
        self.top = end
        return addr

    def read_back(self, addr: int, like: np.ndarray) -> np.ndarray:
        n = like.nbytes
        return self.heap[addr:addr + n].copy().view(like.dtype).reshape(like.shape)

    def check(self, addrs: np.ndarray, size: int) -> None:
        for a in np.unique(addrs):
            if not any(b <= a and a + size <= b + n for b, n in self.buffers):
                raise InterpError(f"global access out of bounds at {a:#x} ({size} bytes)")


def _to_bytes(vals: np.ndarray, t) -> np.ndarray:
    """[threads] values of t -> [threads, bytes]."""
    if isinstance(t, DType) and t.is_floating and t.name in SMALL_FLOATS:
        raw = encode(vals, t)
    elif isinstance(t, DType) and t == i1:
        raw = vals.astype(np.uint8)
    else:
        raw = np.ascontiguousarray(vals.astype(np_dtype(t)))
    return raw.view(np.uint8).reshape(len(vals), -1)


def _from_bytes(raw: np.ndarray, t) -> np.ndarray:
    """[threads, bytes] -> values of t."""
    if isinstance(t, DType) and t.is_floating and t.name in SMALL_FLOATS:
        bits = np.ascontiguousarray(raw).view(np.uint16 if t.bits == 16 else np.uint8).ravel()
        return decode(bits, t)
    return np.ascontiguousarray(raw).view(np_dtype(t)).ravel()


def _bits_dtype(bits: int) -> np.dtype:
    return np.dtype(f"u{bits // 8}")


def bits_of(vals: np.ndarray, t) -> np.ndarray:
    """Unsigned integer bit patterns of values of t."""
    if isinstance(t, PointerType):
        return vals.astype(np.int64).view(np.uint64)
    if t.is_floating and t.name in SMALL_FLOATS:
        return encode(vals, t)
    return np.ascontiguousarray(vals.astype(np_dtype(t))).view(_bits_dtype(max(8, t.bits)))


def from_bits(bits: np.ndarray, t) -> np.ndarray:
    if isinstance(t, PointerType):
        return bits.astype(np.uint64).view(np.int64)
    if t.is_floating and t.name in SMALL_FLOATS:
        return decode(bits, t)
    return np.ascontiguousarray(bits.astype(_bits_dtype(max(8, t.bits)))).view(np_dtype(t))


class CTA:
    """One CTA of a simt.func, all threads in lockstep."""

    def __init__(self, machine: Machine, func: Operation, ctaid: tuple[int, int, int], grid: tuple[int, int, int]):
        self.m, self.func = machine, func
        self.n = func.attrs["num_warps"] * 32
        self.tid = np.arange(self.n, dtype=np.int32)
        self.ctaid, self.grid = ctaid, grid
        self.smem = np.zeros(max(1, func.attrs.get("shared_bytes", 0)), dtype=np.uint8)
        self.epoch = 0
        self.w_epoch = np.full(len(self.smem), -1)
        self.w_tid = np.full(len(self.smem), -1)
        self.r_epoch = np.full(len(self.smem), -1)
        self.r_tid = np.full(len(self.smem), -1)
        self.inflight = np.zeros(len(self.smem), dtype=np.int32)
        self.unfenced = np.full(len(self.smem), -1)              # generic-proxy writer not yet fenced
        self.wgmma_reading = np.zeros(len(self.smem), dtype=np.int32)
        self.wgmma_open: dict[int, list[np.ndarray]] = {}         # warp group -> bytes read, open group
        self.wgmma_groups: dict[int, list[list[np.ndarray]]] = {}  # warp group -> committed groups
        self.a_epoch = np.full(len(self.smem), -1)  # last epoch of an atomic (red.shared) on each byte
        self.cp_open: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(self.n)]
        self.cp_groups: list[list[list[tuple[int, np.ndarray]]]] = [[] for _ in range(self.n)]
        self.env: dict[Value, np.ndarray] = {}

    def full(self, value: Any, t) -> np.ndarray:
        if is_float8_variant(t):
            return np.full(self.n, float_bits(float(value), t), dtype=np.uint8)
        if isinstance(t, DType) and t.is_floating and t.name in SMALL_FLOATS:
            return np.full(self.n, round_to(np.array([value], dtype=np.float64), t)[0], dtype=np.float32)
        if isinstance(t, DType) and t.is_integer and t.bits > 1:
            value = int(value) & ((1 << t.bits) - 1)
            if t.is_signed and value >> (t.bits - 1):
                value -= 1 << t.bits
        with np.errstate(all="ignore"):
            return np.full(self.n, value, dtype=np_dtype(t))

    def run(self, args: list[Any]) -> None:
        block = self.func.regions[0].block
        for a, v in zip(block.args, args):
            self.env[a] = self.full(v, a.type)
        self.block(block, np.ones(self.n, dtype=bool))

    def block(self, block: Block, mask: np.ndarray) -> Optional[Operation]:
        for op in block.ops:
            if op.name in ("scf.yield", "scf.condition", "simt.return"):
                return op
            self.op(op, mask)
        return None

    def set(self, v: Value, x: np.ndarray, mask: np.ndarray) -> None:
        old = self.env.get(v)
        x = np.asarray(x)
        if old is None or mask.all():
            self.env[v] = x
        else:
            self.env[v] = np.where(mask, x, old)

    def op(self, op: Operation, mask: np.ndarray) -> None:
        from simt_interp_ops import OPS

        handler = OPS.get(op.name)
        if handler is None:
            raise InterpError(f"no interpreter rule for {op.name}")
        with np.errstate(all="ignore"):
            out = handler(self, op, mask)
        if out is None:
            return
        if not isinstance(out, (list, tuple)):
            out = [out]
        for r, x in zip(op.results, out):
            self.set(r, x, mask)

    # shared memory with race checks -----------------------------------------------------------
    def smem_access(self, addrs: np.ndarray, size: int, mask: np.ndarray, write: bool,
                    tids: Optional[list[int]] = None, atomic: bool = False) -> None:
        """Check (and record) an access of `size` bytes at addrs[i] by thread tids[i] (default: i) where mask[i].
        Atomics of different threads on one byte do not race with each other, only with plain accesses."""
        for i in np.nonzero(mask)[0]:
            t = int(tids[i]) if tids is not None else int(i)
            a = int(addrs[i])
            if a < 0 or a + size > len(self.smem):
                raise InterpError(f"shared access out of bounds at {a} ({size} bytes, {len(self.smem)} allocated)")
            sl = slice(a, a + size)
            if self.inflight[sl].any():
                raise InterpError(f"shared-memory race: thread {t} accesses byte {a} while a cp.async to it is "
                                  "in flight (missing cp.async.wait_group)")
            if write and self.wgmma_reading[sl].any():
                raise InterpError(f"shared-memory race: thread {t} writes byte {a} while a wgmma reads it "
                                  "(missing wgmma.wait_group)")
            if atomic:
                bad = (self.r_epoch[sl] == self.epoch) & (self.r_tid[sl] != t)
                bad |= (self.w_epoch[sl] == self.epoch) & (self.w_tid[sl] != t)
                if bad.any():
                    raise InterpError(f"shared-memory race: thread {t}'s atomic on byte {a} meets a plain access "
                                      "without a barrier")
                self.a_epoch[sl] = self.epoch
                continue
            if (self.a_epoch[sl] == self.epoch).any():
                raise InterpError(f"shared-memory race: thread {t} accesses byte {a} updated by atomics without a "
                                  "barrier")
            if write:
                self.unfenced[sl] = t
                bad = (self.r_epoch[sl] == self.epoch) & (self.r_tid[sl] != t)
                bad |= (self.w_epoch[sl] == self.epoch) & (self.w_tid[sl] != t)
                if bad.any():
                    raise InterpError(f"shared-memory race: thread {t} writes byte {a} without a barrier")
                self.w_epoch[sl], self.w_tid[sl] = self.epoch, t
            else:
                bad = (self.w_epoch[sl] == self.epoch) & (self.w_tid[sl] != t)
                if bad.any():
                    raise InterpError(f"shared-memory race: thread {t} reads byte {a} written without a barrier")
                fresh = self.r_epoch[sl] != self.epoch
                self.r_tid[sl] = np.where(fresh, t, np.where(self.r_tid[sl] == t, t, -2))
                self.r_epoch[sl] = self.epoch


    # cp.async ----------------------------------------------------------------------------------
    def cp_async_issue(self, t: int, dst: int, data: np.ndarray) -> None:
        """Thread t starts copying `data` to shared byte `dst` (it lands at a wait_group)."""
        if dst < 0 or dst + len(data) > len(self.smem):
            raise InterpError(f"cp.async out of shared bounds at {dst} ({len(data)} bytes)")
        sl = slice(dst, dst + len(data))
        bad = ((self.r_epoch[sl] == self.epoch) & (self.r_tid[sl] != t)) | \
            ((self.w_epoch[sl] == self.epoch) & (self.w_tid[sl] != t)) | (self.inflight[sl] > 0) | \
            (self.wgmma_reading[sl] > 0)
        if bad.any():
            raise InterpError(f"shared-memory race: thread {t} issues a cp.async to byte {dst} that another "
                              "access touched without a barrier")
        self.inflight[sl] += 1
        self.cp_open[t].append((dst, data))

    def cp_async_commit(self, t: int) -> None:
        self.cp_groups[t].append(self.cp_open[t])
        self.cp_open[t] = []

    def cp_async_wait(self, t: int, pending: int) -> None:
        """Retire thread t's oldest groups until at most `pending` remain."""
        while len(self.cp_groups[t]) > pending:
            for dst, data in self.cp_groups[t].pop(0):
                self.inflight[dst:dst + len(data)] -= 1
                self.smem_access(np.array([dst]), len(data), np.array([True]), write=True, tids=[t])
                self.smem[dst:dst + len(data)] = data


    # wgmma (the async proxy) ---------------------------------------------------------------------
    def fence_proxy_async(self, t: int) -> None:
        """Thread t's earlier shared-memory writes become visible to the async proxy."""
        self.unfenced[self.unfenced == t] = -1

    def wgmma_read(self, group: int, addrs: np.ndarray) -> None:
        """Warp group `group`'s wgmma reads the bytes `addrs` (they stay read until its wait)."""
        addrs = np.unique(addrs)
        if addrs.min() < 0 or addrs.max() >= len(self.smem):
            raise InterpError(f"wgmma reads shared memory out of bounds ({len(self.smem)} bytes allocated)")
        if (self.inflight[addrs] > 0).any():
            raise InterpError("wgmma reads bytes a cp.async still writes (missing cp.async.wait_group)")
        if (self.w_epoch[addrs] == self.epoch).any():
            raise InterpError("shared-memory race: wgmma reads bytes written since the last barrier")
        if (self.unfenced[addrs] >= 0).any():
            writer = int(self.unfenced[addrs][self.unfenced[addrs] >= 0][0])
            raise InterpError(f"wgmma reads bytes thread {writer} wrote without a fence.proxy.async after "
                              "(generic-proxy writes are not visible to the async proxy)")
        fresh = self.r_epoch[addrs] != self.epoch
        self.r_tid[addrs] = np.where(fresh, -3, np.where(self.r_tid[addrs] == -3, -3, -2))
        self.r_epoch[addrs] = self.epoch
        self.wgmma_reading[addrs] += 1
        self.wgmma_open.setdefault(group, []).append(addrs)

    def wgmma_commit(self, group: int) -> None:
        self.wgmma_groups.setdefault(group, []).append(self.wgmma_open.pop(group, []))

    def wgmma_wait(self, group: int, pending: int) -> None:
        """Retire warp group `group`'s oldest wgmma groups until at most `pending` remain."""
        if self.wgmma_open.get(group):
            raise InterpError("wgmma.wait_group with wgmma issued but not committed (missing wgmma.commit_group)")
        groups = self.wgmma_groups.get(group, [])
        while len(groups) > pending:
            for addrs in groups.pop(0):
                self.wgmma_reading[addrs] -= 1


def c_format(fmt: str, args: list[Any]) -> str:
    py = re.sub(r"%ll([dux])", r"%\1", fmt).replace("%#llx", "%#x").replace("%p", "%#x").replace("%u", "%d")
    return py % tuple(int(a) if isinstance(a, (np.integer, int)) else float(a) for a in args)


def run_kernel(func: Operation, grid: tuple[int, ...], args: list[Any], machine: Machine) -> None:
    """Run every CTA of `grid` (CTAs one after another)."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    for z in range(g[2]):
        for y in range(g[1]):
            for x in range(g[0]):
                CTA(machine, func, (x, y, z), g).run(args)
