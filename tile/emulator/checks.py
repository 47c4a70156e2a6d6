"""Checks of shared memory a GPU does not make: races between barriers, bytes of an asynchronous
copy used before the wait that lands them, and bytes overwritten while an asynchronous reader
(wgmma, TMA store) may still read them.

*Races.* Every byte of a batch's shared memory remembers its last writer (thread, PTX
instruction, epoch) and its readers since (one thread, or "several"). Each CTA counts epochs:
a bar.sync starts a new one for the CTA, and so does the completion of an mbarrier phase;
every thread remembers the epoch of its last synchronisation (the bar.sync it passed, the
try_wait that saw a phase complete). An access by thread t is ordered after an earlier
access by thread u when u == t or the earlier access happened before t's last
synchronisation; otherwise a write after a read or write, or a read after a write, is a race:

    thread 3 writes [__smem+0x40]  ...  (no bar.sync)  ...  thread 35 reads [__smem+0x40]
      -> "shared-memory race: thread 35 of CTA (0, 0, 0) reads shared address 64, written by
          thread 3 at PTX line 120 `st.shared.f32 ...` (from kernel.py:14) with no barrier between"

Threads of one instruction that write the same byte (replicated layouts store equal values)
are not a race with each other; the later reads of such a byte by any of them are ordered.
Copies of the async proxy (TMA loads, which complete on an mbarrier, and wgmma's operand
reads) are synchronised by their mbarrier and wgmma.wait_group and are not tracked here.

*Asynchronous copies.* Bytes a cp.async will write are "in flight" from its issue until the
cp.async.wait_group (or wait_all) that lands its group, and those of a TMA load
(cp.async.bulk.tensor) until an mbarrier.try_wait sees its phase complete; a shared-memory
read or write of an in-flight byte (wgmma operand reads included) is an error naming the
copy's PTX line.

*Asynchronous readers.* A wgmma reads its shared operands until a wgmma.wait_group retires its
group, a TMA store its shared source until a cp.async.bulk.wait_group retires its bulk
group: a write of those bytes earlier (a store, a cp.async or TMA load into a stage still
being read) is an error naming the reader's PTX line and the wait it needs, and so is a CTA's
exit before its TMA stores' reads retire. A retired wgmma read also counts as a read by every
warp at the CTA's epoch then: an asynchronous copy (cp.async, TMA load) into those bytes must
be issued by a thread synchronised since (a bar.sync, or an mbarrier phase it saw complete that
the readers arrived on after their wait, as a TMA ring's "empty" mbarriers), or it may overwrite
a stage a slower warp group still reads. (The machine runs the warps in step, so the slower warp
group never shows; the epochs say whether anything would hold the copy back.)

*Proxy fences.* A thread's shared-memory stores are made by the generic proxy; wgmma and TMA
stores read through the async proxy, which sees them only after the storing thread's
fence.proxy.async. A wgmma or TMA store reading a byte whose store was not fenced so is an
error naming the store's PTX line (a cp.async landing is not such a store).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

NOBODY = -1  # no access since the last barrier
SEVERAL = -2  # read by several threads (reader) / written by several threads of one instruction (writer)


class SharedChecks:
    """The race and cp.async records of one batch's shared memory (`nbytes` bytes for all CTAs)."""

    def __init__(self, nbytes: int, threads: int, ctas: int):
        self.writer = np.full(nbytes, NOBODY, np.int32)
        self.write_instr = np.zeros(nbytes, np.int32)
        self.write_epoch = np.zeros(nbytes, np.int32)
        self.reader = np.full(nbytes, NOBODY, np.int32)
        self.read_instr = np.zeros(nbytes, np.int32)
        self.read_epoch = np.zeros(nbytes, np.int32)
        self.in_flight = np.full(nbytes, NOBODY, np.int32)  # the PTX instruction of a pending cp.async
        self.async_reader = np.full(nbytes, NOBODY, np.int32)  # a wgmma / TMA store that may still read
        # the async readers' groups by kind ("wgmma", "bulk"): open, and committed oldest first
        self.reads_open: dict[str, list[np.ndarray]] = {"wgmma": [], "bulk": []}
        self.reads_committed: dict[str, list[list[np.ndarray]]] = {"wgmma": [], "bulk": []}
        self.copies_in_flight = 0  # copies issued and not landed: while 0, no byte is in flight
        self.async_reads = 0  # byte sets of asynchronous readers not retired
        self.cta_bytes = nbytes // max(ctas, 1)
        self.read_retired = np.full(nbytes, NOBODY, np.int32)  # the CTA epoch a wgmma's read of the byte retired in
        self.retired_instr = np.zeros(nbytes, np.int32)  # that wgmma
        self.unfenced = np.full(nbytes, NOBODY, np.int32)  # the thread of a store not yet followed by its proxy fence
        self.any_unfenced = False
        self.epoch = np.zeros(ctas, np.int32)
        self.synced = np.zeros(threads, np.int32)
        self.enabled = True

    def _refuse(self, m: Any, message: str, *args: Any) -> Exception:
        """The machine's error for a broken rule; the checks stop there (the run is over)."""
        self.enabled = False
        return m.error(message, *args)

    # ---------------------------------------------------------------- synchronisation
    def barrier(self, threads: np.ndarray, thread_ctas: np.ndarray) -> None:
        """Threads (batch positions) of CTAs (batch indices, one per thread) pass a bar.sync."""
        self.epoch[np.unique(thread_ctas)] += 1
        self.synced[threads] = self.epoch[thread_ctas]

    def async_write(self, byte_idx: np.ndarray) -> None:
        """Bytes written by the async proxy (a TMA load landing): ordered by their mbarrier."""
        self.in_flight[byte_idx] = NOBODY
        self.copies_in_flight = max(0, self.copies_in_flight - 1)
        self.writer[byte_idx] = NOBODY
        self.reader[byte_idx] = NOBODY

    def phase_completed(self, cta: int) -> int:
        """An mbarrier phase of CTA `cta` completed: the epoch a thread that sees it syncs to."""
        self.epoch[cta] += 1
        return int(self.epoch[cta])

    def observed(self, thread: int, epoch: int) -> None:
        self.synced[thread] = max(int(self.synced[thread]), epoch)

    # ---------------------------------------------------------------- accesses
    def access(self, m: Any, idx: np.ndarray, width: int, count: int, write: bool,
               threads: Optional[np.ndarray] = None, generic: bool = False) -> None:
        """Check and record an access of `count` elements of `width` bytes at element indices `idx`
        (into the batch's shared memory) by the active threads (or `threads`, batch positions).
        Writes by the active threads, or `generic` ones by `threads` (stmatrix: each element by the
        lane whose register held it), are stores of the generic proxy, which wgmma and TMA stores
        see only after the storing thread's fence.proxy.async.
        The accesses of one instruction have one size and are aligned to it: two of them touch
        the same bytes exactly when they start at the same index."""
        if not self.enabled or idx.size == 0:
            return
        t = m.positions() if threads is None else threads
        span = width * count
        b = (idx.astype(np.int64)[:, None] * width + np.arange(span)).reshape(-1)
        tb = np.repeat(t, span)
        if self.copies_in_flight:
            self._check_in_flight(m, b, tb, write)
        if write and self.async_reads:
            self._check_async_readers(m, b, tb)
        sync = np.repeat(self.synced[t], span)
        w = self.writer[b]
        bad = (w != NOBODY) & (w != tb) & (self.write_epoch[b] >= sync)
        if bad.any():
            self._race(m, b, tb, bad, "written", self.writer, self.write_instr, write)
        r = self.reader[b]
        read_epoch = self.read_epoch[b]
        if write:
            bad = (r != NOBODY) & (r != tb) & (read_epoch >= sync)
            if bad.any():
                self._race(m, b, tb, bad, "read", self.reader, self.read_instr, write)
        cta_epoch = np.repeat(self.epoch[m.cta_local[t]], span)
        who = np.repeat(self._one_thread_per_access(idx, t), span)
        if write:
            self.writer[b], self.write_instr[b], self.write_epoch[b] = who, m.pc, cta_epoch
            self.reader[b] = NOBODY
            if threads is None or generic:  # a store of the generic proxy (a cp.async landing is not)
                self.unfenced[b] = tb
                self.any_unfenced = True
        else:
            fresh = (r == NOBODY) | (r == who) | (read_epoch < cta_epoch)
            self.reader[b] = np.where(fresh, who, SEVERAL)
            self.read_instr[b], self.read_epoch[b] = m.pc, cta_epoch

    @staticmethod
    def _one_thread_per_access(idx: np.ndarray, t: np.ndarray) -> np.ndarray:
        """t, or SEVERAL where other threads of this instruction access the same element."""
        order = np.lexsort((t, idx))
        sb, st = idx[order], t[order]
        same = sb[1:] == sb[:-1]
        if not (same & (st[1:] != st[:-1])).any():
            return t
        first = np.r_[True, ~same]
        group = np.cumsum(first) - 1
        lo = st[first]
        hi = np.maximum.reduceat(st, np.flatnonzero(first))
        mixed = (lo != hi)[group]
        out = np.empty_like(t)
        out[order] = np.where(mixed, SEVERAL, st)
        return out

    def _race(self, m: Any, b: np.ndarray, tb: np.ndarray, bad: np.ndarray, what: str, who: np.ndarray,
              instr: np.ndarray, write: bool) -> None:
        k = int(np.flatnonzero(bad)[0])
        byte = int(b[k])
        other = int(who[byte])
        other_text = "several threads" if other == SEVERAL else f"thread {other % m.ntid}"
        source = m.kernel.instrs[int(instr[byte])].source.describe()
        address = byte % m.smem.size
        message = (f"shared-memory race: {describe(m, int(tb[k]))} {'writes' if write else 'reads'} shared address "
                   f"{address}, {what} by {other_text} at {source} with no barrier between")
        raise self._refuse(m, message)

    # ---------------------------------------------------------------- cp.async
    def copy_issued(self, m: Any, byte_idx: np.ndarray, threads: np.ndarray) -> None:
        """An asynchronous copy (cp.async, TMA load) by `threads` (per byte) will write these bytes."""
        if self.enabled:
            if self.async_reads:
                self._check_async_readers(m, byte_idx, threads)
            self._check_retired_reads(m, byte_idx, threads)
            self.in_flight[byte_idx] = m.pc
            self.copies_in_flight += 1

    def _check_retired_reads(self, m: Any, b: np.ndarray, tb: np.ndarray) -> None:
        """A copy into bytes a wgmma read: its thread must be synchronised after that read retired."""
        retired = self.read_retired[b]
        bad = (retired != NOBODY) & (retired >= self.synced[tb])
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            ins = m.kernel.instrs[int(self.retired_instr[b[k]])]
            message = (f"{describe(m, int(tb[k]))} starts a copy into shared address {int(b[k]) % m.smem.size}, "
                       f"which the {ins.opcode} at {ins.source.describe()} read: nothing orders the copy after "
                       f"every warp's wgmma.wait_group (a bar.sync, or an mbarrier they arrive on after it)")
            raise self._refuse(m, message)
        self.read_retired[b] = NOBODY

    # ---------------------------------------------------------------- asynchronous readers
    def proxy_fence(self, threads: np.ndarray) -> None:
        """fence.proxy.async by `threads`: their earlier stores are visible to the async proxy."""
        if self.any_unfenced:
            self.unfenced[np.isin(self.unfenced, threads)] = NOBODY
            self.any_unfenced = bool((self.unfenced != NOBODY).any())

    def async_read(self, m: Any, kind: str, byte_idx: np.ndarray) -> None:
        """A wgmma (kind "wgmma") or TMA store ("bulk") reads these bytes until its group retires.
        Bytes a thread stored must have been fenced by it (fence.proxy.async) first."""
        if self.enabled and self.any_unfenced:
            writer = self.unfenced[byte_idx]
            hit = writer != NOBODY
            if hit.any():
                k = int(np.flatnonzero(hit)[0])
                store = m.kernel.instrs[int(self.write_instr[byte_idx[k]])]
                message = (f"{m.ins.opcode} reads shared address {int(byte_idx[k]) % m.smem.size}, which "
                           f"{describe(m, int(writer[k]))} stored at {store.source.describe()} with no "
                           f"fence.proxy.async after it: the async proxy may not see the store")
                raise self._refuse(m, message, 0)
        if self.enabled:
            self.async_reader[byte_idx] = m.pc
            self.reads_open[kind].append(byte_idx)
            self.async_reads += 1

    def commit(self, kind: str) -> None:
        self.reads_committed[kind].append(self.reads_open[kind])
        self.reads_open[kind] = []

    def retire(self, kind: str, keep: int) -> None:
        """A wait_group `keep`: all but the newest `keep` committed groups are done reading."""
        groups = self.reads_committed[kind]
        while len(groups) > keep:
            for byte_idx in groups.pop(0):
                if kind == "wgmma":
                    self.read_retired[byte_idx] = self.epoch[byte_idx // self.cta_bytes]
                    self.retired_instr[byte_idx] = self.async_reader[byte_idx]
                self.async_reader[byte_idx] = NOBODY
                self.async_reads -= 1

    def exit(self, m: Any) -> None:
        """The batch's threads have exited: no TMA store may still be reading their shared memory,
        which the hardware hands to the next CTA."""
        pending = [b for b in self.reads_open["bulk"]] + [b for group in self.reads_committed["bulk"] for b in group]
        if self.enabled and pending:
            ins = m.kernel.instrs[int(self.async_reader[pending[0][0]])]
            raise m.error(f"the kernel exits while the {ins.opcode} at {ins.source.describe()} may still read shared "
                          f"memory: a cp.async.bulk.wait_group.read must retire it first", source=ins.source)

    def _check_async_readers(self, m: Any, b: np.ndarray, tb: np.ndarray) -> None:
        reader = self.async_reader[b]
        hit = reader != NOBODY
        if hit.any():
            k = int(np.flatnonzero(hit)[0])
            ins = m.kernel.instrs[int(reader[k])]
            wait = "wgmma.wait_group" if ins.opcode.startswith("wgmma") else "cp.async.bulk.wait_group"
            message = (f"{describe(m, int(tb[k]))} writes shared address {int(b[k]) % m.smem.size}, which the "
                       f"{ins.opcode} at {ins.source.describe()} may still read: a {wait} must retire it first")
            raise self._refuse(m, message)

    def copy_landed(self, m: Any, byte_idx: np.ndarray, threads: np.ndarray) -> None:
        """A cp.async group lands: its bytes are written by the threads that issued them, at the
        cp.async's PTX line."""
        issued = self.in_flight[byte_idx]
        self.in_flight[byte_idx] = NOBODY
        self.copies_in_flight = max(0, self.copies_in_flight - 1)
        if self.enabled:
            self.access(m, byte_idx, 1, 1, True, threads)
            self.write_instr[byte_idx] = issued

    def _check_in_flight(self, m: Any, b: np.ndarray, tb: np.ndarray, write: bool) -> None:
        pending = self.in_flight[b]
        hit = pending != NOBODY
        if hit.any():
            k = int(np.flatnonzero(hit)[0])
            copy = m.kernel.instrs[int(pending[k])]
            wait = "cp.async.wait_group that lands it" if copy.opcode == "cp.async" else \
                "mbarrier.try_wait that sees its phase complete"
            message = (f"{describe(m, int(tb[k]))} {'writes' if write else 'reads'} shared address "
                       f"{int(b[k]) % m.smem.size}, a byte of the {copy.opcode} at {copy.source.describe()} before "
                       f"the {wait}")
            raise self._refuse(m, message)


def describe(m: Any, position: int) -> str:
    """A batch position as 'thread t of CTA (x, y, z)'."""
    cta = int(m.ctas[position // m.ntid])
    gx, gy, _ = m.grid
    return f"thread {position % m.ntid} of CTA ({cta % gx}, {(cta // gx) % gy}, {cta // (gx * gy)})"


__all__ = ["SharedChecks", "describe", "NOBODY", "SEVERAL"]
