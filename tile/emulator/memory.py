"""The emulator's memories: global memory made of host allocations, and per-CTA shared memory.

Global addresses are the host addresses of the arrays themselves (NumPy's data pointers), so
two arguments that view the same memory alias as they do on a GPU, and a kernel writes into
the caller's arrays directly. An access is checked against the registered allocations (each
argument's byte extent, and the module's `.global` strings): every byte must lie inside one
allocation, or the access is an error naming the argument, the offset and the thread.

Shared memory is one byte array per CTA of a batch, flattened: thread t of batch CTA c at
shared address a reads byte c * size + a. Addresses are checked against the CTA's size.
"""
from __future__ import annotations

import bisect
import ctypes
from dataclasses import dataclass
from typing import Callable

import numpy as np

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass
class Allocation:
    name: str
    start: int
    nbytes: int
    data: np.ndarray  # uint8 view of the memory
    writable: bool

    def typed(self, width: int) -> tuple[np.ndarray, int]:
        """A view of the memory as unsigned ints of `width` bytes, and the address of its element 0."""
        skip = (-self.start) % width
        usable = (self.nbytes - skip) // width * width
        return self.data[skip:skip + usable].view(UINT[width]), self.start + skip


def host_bytes(array: np.ndarray) -> tuple[int, np.ndarray]:
    """(start address, uint8 view) of the byte extent an array's elements span (its strides may
    skip bytes or run backwards: the extent covers what a kernel may address through it)."""
    if array.size == 0:
        return array.__array_interface__["data"][0], np.zeros(0, np.uint8)
    ptr = array.__array_interface__["data"][0]
    lo = hi = 0
    for dim, stride in zip(array.shape, array.strides):
        span = (dim - 1) * stride
        if span < 0:
            lo += span
        else:
            hi += span
    start, nbytes = ptr + lo, hi - lo + array.itemsize
    if array.flags.c_contiguous or array.flags.f_contiguous:
        raw = array.reshape(-1, order="A").view(np.uint8)
    else:
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(start))
    return start, raw


class GlobalMemory:
    """Allocations by address; loads and stores of vectors of addresses."""

    def __init__(self) -> None:
        self.allocs: list[Allocation] = []
        self.starts: list[int] = []
        self._typed: dict[tuple[int, int], tuple[np.ndarray, int]] = {}
        self.keep: list[object] = []

    def add(self, name: str, array: np.ndarray, writable: bool) -> int:
        """Register `array` (kept alive); returns its address."""
        start, data = host_bytes(array)
        self.keep.append(array)
        if data.size:
            self._insert(Allocation(name, start, data.size, data, writable))
        return start

    def add_bytes(self, name: str, payload: bytes) -> int:
        data = np.frombuffer(bytearray(payload) + b"\0" * 8, np.uint8)[:len(payload)]
        start = data.__array_interface__["data"][0]
        self.keep.append(data)
        self._insert(Allocation(name, start, data.size, data, False))
        return start

    def _insert(self, a: Allocation) -> None:
        i = bisect.bisect(self.starts, a.start)
        self.starts.insert(i, a.start)
        self.allocs.insert(i, a)

    def describe(self, address: int, width: int) -> str:
        """Why `width` bytes at `address` are not addressable: the nearest allocation."""
        i = bisect.bisect(self.starts, address) - 1
        candidates = [a for a in self.allocs[max(i, 0):i + 2]]
        if not candidates:
            return f"address 0x{address:x} is not in any allocation (none registered)"
        best = min(candidates, key=lambda a: min(abs(address - a.start), abs(address - a.start - a.nbytes)))
        if address >= best.start + best.nbytes:
            return (f"address 0x{address:x} is {address - best.start - best.nbytes} bytes past the end of "
                    f"'{best.name}' ({best.nbytes} bytes)")
        if address < best.start:
            return f"address 0x{address:x} is {best.start - address} bytes before the start of '{best.name}'"
        return (f"{width} bytes at offset {address - best.start} run past the end of '{best.name}' "
                f"({best.nbytes} bytes)")

    def locate(self, addr: np.ndarray, nbytes: int, fail: Callable[[int, str], Exception]
               ) -> list[tuple[Allocation, np.ndarray]]:
        """Split thread positions by allocation: [(allocation, positions into addr)]; `fail(position,
        reason)` makes the error for the first access outside every allocation."""
        if addr.size == 0:
            return []
        lo, hi = int(addr.min()), int(addr.max()) + nbytes
        i = bisect.bisect(self.starts, lo) - 1
        if i >= 0:
            a = self.allocs[i]
            if hi <= a.start + a.nbytes:
                return [(a, None)]
        starts = np.array(self.starts, np.uint64)
        ends = np.array([a.start + a.nbytes for a in self.allocs], np.uint64)
        which = np.searchsorted(starts, addr, side="right").astype(np.int64) - 1
        ok = which >= 0
        safe = np.where(ok, which, 0)
        ok &= addr + np.uint64(nbytes) <= ends[safe] if len(self.allocs) else np.zeros_like(ok)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise fail(bad, self.describe(int(addr[bad]), nbytes))
        return [(self.allocs[k], np.flatnonzero(which == k)) for k in np.unique(which)]

    def view(self, a: Allocation, width: int) -> tuple[np.ndarray, int]:
        key = (id(a), width)
        found = self._typed.get(key)
        if found is None:
            found = self._typed[key] = a.typed(width)
        return found

    def load(self, addr: np.ndarray, width: int, count: int, fail: Callable[[int, str], Exception]) -> np.ndarray:
        """[n, count] unsigned ints of `width` bytes from `count` consecutive elements at each address."""
        out = np.empty((addr.size, count), UINT[width])
        for a, pos in self.locate(addr, width * count, fail):
            typed, base = self.view(a, width)
            sub = addr if pos is None else addr[pos]
            idx = ((sub - np.uint64(base)) // np.uint64(width)).astype(np.int64)
            vals = typed[idx[:, None] + np.arange(count)] if count > 1 else typed[idx][:, None]
            if pos is None:
                out = vals
            else:
                out[pos] = vals
        return out

    def store(self, addr: np.ndarray, values: np.ndarray, width: int, fail: Callable[[int, str], Exception]) -> None:
        """Store [n, count] values (unsigned ints of `width` bytes) at each address."""
        count = values.shape[1]
        for a, pos in self.locate(addr, width * count, fail):
            if not a.writable:
                raise fail(0 if pos is None else int(pos[0]), f"'{a.name}' is read-only")
            typed, base = self.view(a, width)
            sub = addr if pos is None else addr[pos]
            idx = ((sub - np.uint64(base)) // np.uint64(width)).astype(np.int64)
            vals = values if pos is None else values[pos]
            if count > 1:
                typed[idx[:, None] + np.arange(count)] = vals
            else:
                typed[idx] = vals[:, 0]


UNWRITTEN_SHARED_BYTE = 0xCD  # what fresh shared memory holds: never read it as zeros by luck


class SharedMemory:
    """The shared memory of a batch of CTAs: `size` bytes each."""

    def __init__(self, ctas: int, size: int):
        self.size = -(-size // 16) * 16
        self.data = np.zeros(max(ctas * self.size, 16), np.uint8)
        self.data[:] = UNWRITTEN_SHARED_BYTE
        self._typed: dict[int, np.ndarray] = {}

    def typed(self, width: int) -> np.ndarray:
        found = self._typed.get(width)
        if found is None:
            found = self._typed[width] = self.data.view(UINT[width])
        return found

    def index(self, cta: np.ndarray, addr: np.ndarray, nbytes: int, width: int,
              fail: Callable[[int, str], Exception]) -> np.ndarray:
        """Element indices (of `width`-byte elements) of the accesses; checks bounds."""
        bad = addr.astype(np.int64) + nbytes > self.size
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise fail(k, f"shared address {int(addr[k])} + {nbytes} bytes is past the {self.size} bytes of "
                          f"shared memory of a CTA")
        return (cta.astype(np.int64) * self.size + addr.astype(np.int64)) // width

    def load(self, idx: np.ndarray, width: int, count: int) -> np.ndarray:
        t = self.typed(width)
        return t[idx[:, None] + np.arange(count)] if count > 1 else t[idx][:, None]

    def store(self, idx: np.ndarray, values: np.ndarray, width: int) -> None:
        t = self.typed(width)
        if values.shape[1] > 1:
            t[idx[:, None] + np.arange(values.shape[1])] = values
        else:
            t[idx] = values[:, 0]

