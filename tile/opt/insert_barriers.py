"""Barrier insertion: a gpu.barrier wherever threads could touch shared bytes out of order.

Walks the function in program order with the shared-memory accesses made since the last
barrier: reads, writes, and asynchronous writes still in flight (gpu.async_copy). Before a
gpu.local_store or gpu.async_copy whose bytes may overlap a pending read (write after read) or
write (write after write), and before a gpu.local_load whose bytes may overlap a pending write
(read after write), it inserts a gpu.barrier, which clears reads and writes. A gpu.async_wait
lands the copies in flight: they become pending writes, so the first read of their bytes
after it gets a barrier (the other threads' copies are only visible past one). An existing
gpu.barrier or tt.debug_barrier clears the pending sets too, so no barrier is ever redundant
with one already there. scf.if merges what its branches leave pending; scf.for and scf.while
run their body again from what the previous iteration left pending until that is stable, so
hazards across the back edge get a barrier inside the loop. Reduce/scan scratch is left to
the lowering, which puts barriers around its own scratch use (the contract): a reduce or scan
with a `scratch_offset` therefore also clears the pending sets.

wgmma (a tt.dot reading #shared operands) reads them through the async proxy: before it, shared bytes
written by ordinary stores ("unfenced" writes) need a gpu.fence_async_shared in every writing
thread and then a gpu.barrier (a barrier alone does not publish them to the async proxy); bytes
written since the last barrier but already fenced, and bytes landed by cp.async copies, need the
barrier only. cp.async copies are left unfenced as Triton's and CUTLASS's Hopper cp.async + wgmma
pipelines leave them: the fence (MEMBAR.ALL.CTA in SASS) would wait in every iteration for the
copies of the later stages still in flight. A dot with
{is_async} keeps its reads in flight, oldest first, until a gpu.dot_wait retires them (all but the
newest `pending`): then they are pending reads like a local_load's. A store or copy over bytes an
asynchronous dot still reads gets a gpu.dot_wait {pending = 0} and a barrier.

Where the bytes are: a gpu.local_alloc's [offset, offset + bytes); a gpu.local_trans, its
operand's; a gpu.local_view of stage s of a rank-3 buffer: that stage's bytes when s is a
constant, else the whole buffer, tagged with s written as (base, k) for s = (base + k) rem S
(the pipeliner's stage indices, also in the compare-and-select form it emits: base + k - S
where base + k >= S). Two views
of one buffer (the same gpu.local_alloc, not merely the same bytes) whose stages have the same
base and different k are different stages, hence disjoint. Inside a loop, base values defined in the loop mean something else in the next
iteration: accesses carried around the back edge (or out of the loop) lose their tags.

Before (offsets allocated; the two buffers share bytes 0..4096):
    gpu.local_store %a, %x
    %y = gpu.local_load %a : ...
    gpu.local_store %b, %y
    %z = gpu.local_load %b : ...
After:
    gpu.local_store %a, %x
    gpu.barrier                      // read after write of %a
    %y = gpu.local_load %a : ...
    gpu.barrier                      // %b's write would overwrite %a's bytes under a slow reader
    gpu.local_store %b, %y
    gpu.barrier
    %z = gpu.local_load %b : ...

A pipelined wgmma loop (S = 3, the dot asynchronous) gets a barrier before the dot, and a
barrier before the copies into the stage the previous iteration's dot read:
    gpu.async_wait {pending = 1}
    gpu.barrier                      // every thread's copies of this stage landed
    %d = tt.dot %va, %vb, %acc {is_async = true}
    gpu.dot_wait {pending = 1}       // the previous iteration's dot is done
    gpu.barrier                      // ... in every warp group
    gpu.async_copy %w, %ptrs, %mask  // into stage (%s + 2) rem 3, which that dot read
A TMA ring's copy (gpu.tma_load_async) and mbarrier initialization are writes that need the
same barrier before them; the copy's bytes need none after it: every thread waits on the
stage's mbarrier (gpu.mbarrier_wait) before reading them, which makes them visible to it and to
its wgmma. A copy with {released} (a ring whose dots are synchronous) needs no barrier for the
reads of its stage either: every thread arrived on the ring's "empty" mbarrier after them, and
the issuing warp waited there before the copy (tile/opt/pipeline.py); earlier writes still do.
A TMA store with {deferred_wait} (a persistent kernel's epilogue, tile/opt/tma.py) leaves the
copy engine reading its buffer: the first later write of those bytes, often the next tile's
epilogue, gets a gpu.tma_store_wait and a barrier before it, and the kernel one before it returns:
    gpu.tma_store %c, %map, %m, %n {deferred_wait = true}
    ...                              // the next tile's K loop runs while %c is read
    gpu.tma_store_wait
    gpu.barrier
    gpu.local_store %c, %next
A loop whose copies come first (attention: the dot of the previous iteration retired) needs
one barrier: after the wait, before the copies; it also orders the dot after the landing.
Writes still unfenced before a loop with a wgmma inside (attention's Q tile) are fenced before
the loop, not by a fence in every iteration.

A pipelined loop (S = 3) gets one barrier per iteration, between the wait and the reads:
    gpu.async_wait {pending = 1}
    gpu.barrier                      // the copies of stage %s landed in every thread; every
    %v = gpu.local_view %bufs, %s    // warp also finished reading stage (%s + 2) rem 3, which
    %f = gpu.local_load %v           // the copy below overwrites: no barrier needed before it
    %w = gpu.local_view %bufs, (%s + 2) rem 3
    gpu.async_copy %w, %ptrs, %mask
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ..ir import BlockArgument, Block, Operation, Value
from ..ir.gpu_ops import layout_of
from ..ir.layouts import SharedLayout
from .pass_manager import Pass

Tag = Optional[tuple[Value, int]]


@dataclass(frozen=True)
class _Access:
    start: int
    end: int
    tag: Tag = None  # (base, k): stage (base + k) rem S of the buffer `owner`
    owner: Optional[Operation] = None

    def overlaps(self, other: "_Access") -> bool:
        if not (self.start < other.end and other.start < self.end):
            return False
        return not (self.tag is not None and other.tag is not None and self.owner is other.owner
                    and self.tag[0] is other.tag[0] and self.tag[1] != other.tag[1])


@dataclass(frozen=True)
class _Pending:
    reads: frozenset[_Access] = frozenset()
    writes: frozenset[_Access] = frozenset()
    in_flight: frozenset[_Access] = frozenset()
    unfenced: frozenset[_Access] = frozenset()      # generic-proxy writes not yet fenced for wgmma
    dots: tuple[frozenset[_Access], ...] = ()       # reads of asynchronous dots in flight, oldest first
    stores: frozenset[_Access] = frozenset()        # reads of TMA stores whose wait is deferred

    def __or__(self, other: "_Pending") -> "_Pending":
        n = max(len(self.dots), len(other.dots))
        pad = lambda d: (frozenset(),) * (n - len(d)) + d  # noqa: E731  (aligned on the newest)
        return _Pending(self.reads | other.reads, self.writes | other.writes, self.in_flight | other.in_flight,
                        self.unfenced | other.unfenced, tuple(a | b for a, b in zip(pad(self.dots), pad(other.dots))),
                        self.stores | other.stores)

    def cleared(self) -> "_Pending":
        """After a barrier: copies, asynchronous dots and TMA stores in flight stay so, unfenced writes too."""
        return _Pending(in_flight=self.in_flight, unfenced=self.unfenced, dots=self.dots, stores=self.stores)

    def replace(self, **changes: object) -> "_Pending":
        return dataclasses.replace(self, **changes)


def _hits(access: _Access, pending: frozenset[_Access]) -> bool:
    return any(access.overlaps(p) for p in pending)


def _constant(v: Value) -> Optional[int]:
    op = v.owner_op
    return op.attrs["value"] if op is not None and op.name == "arith.constant" else None


def _stage_tag(stage: Value, stages: int) -> tuple[Value, int]:
    """(base, k) with stage = (base + k) rem stages, following arith.rem and arith.add of constants."""
    op = stage.owner_op
    if op is not None and op.name == "arith.select":  # the pipeliner's wrap: sum >= S ? sum - S : sum
        total, wrapped = op.operand(2).owner_op, op.operand(1).owner_op
        if (total is not None and total.name == "arith.add" and isinstance(_constant(total.operand(1)), int)
                and wrapped is not None):
            base, k = total.operand(0), _constant(total.operand(1))
            subtracts = wrapped.name == "arith.sub" and wrapped.operand(0) is op.operand(2) \
                and _constant(wrapped.operand(1)) == stages
            folded = wrapped.name == "arith.add" and wrapped.operand(0) is base \
                and _constant(wrapped.operand(1)) == k - stages  # canonicalize's (base + k) - S
            if subtracts or folded:
                return base, k % stages
    if op is not None and op.name == "arith.rem" and _constant(op.operand(1)) == stages:
        inner = op.operand(0).owner_op
        if inner is not None and inner.name == "arith.add" and isinstance(_constant(inner.operand(1)), int):
            return inner.operand(0), _constant(inner.operand(1)) % stages
        return op.operand(0), 0
    return stage, 0


def _access(buffer: Value, func: Operation) -> _Access:
    op = buffer.owner_op
    if op is not None and op.name == "gpu.local_trans":  # the same bytes
        return _access(op.operand(0), func)
    if op is not None and op.name == "gpu.local_view":
        whole = _access(op.operand(0), func)
        stages = op.operand(0).type.shape[0]
        size = (whole.end - whole.start) // stages
        index = _constant(op.operand(1))
        if index is not None:
            return _Access(whole.start + index * size, whole.start + (index + 1) * size)
        return _Access(whole.start, whole.end, _stage_tag(op.operand(1), stages), op.operand(0).owner_op)
    if op is not None and op.name == "gpu.local_alloc" and op.attrs.get("offset", -1) >= 0:
        return _Access(op.attrs["offset"], op.attrs["offset"] + op.attrs["bytes"])
    return _Access(0, max(1, func.attrs.get("shared_bytes", 1)))  # unknown buffer: all of shared memory


def _defined_in(v: Value, loop: Operation) -> bool:
    owner = v.block.parent_op if isinstance(v, BlockArgument) else v.owner_op
    return owner is not None and loop.is_ancestor_of(owner)


def _untag(state: _Pending, loop: Operation) -> _Pending:
    """`state` with the tags whose base the loop redefines dropped (see the module docstring)."""
    def fix(accesses: frozenset[_Access]) -> frozenset[_Access]:
        return frozenset(_Access(a.start, a.end) if a.tag is not None and _defined_in(a.tag[0], loop) else a
                         for a in accesses)

    return _Pending(fix(state.reads), fix(state.writes), fix(state.in_flight), fix(state.unfenced),
                    tuple(fix(d) for d in state.dots), fix(state.stores))


def reads_async_proxy(op: Operation) -> bool:
    """A wgmma: a tt.dot with an operand in shared memory."""
    return op.name == "tt.dot" and any(isinstance(layout_of(v), SharedLayout) for v in op.operands[:2])


class InsertBarriers(Pass):
    """Inserts the gpu.barrier ops shared-memory hazards need (see the module docstring)."""

    name = "insert-barriers"

    def run(self, func: Operation) -> None:
        self.func = func
        body = func.regions[0].block
        if self._block(body, _Pending(), insert=True).stores:
            # The copy engine may still read shared memory that the program gives back as it exits.
            body.insert_before(body.ops[-1], Operation("gpu.tma_store_wait", loc=body.ops[-1].loc))

    def _barrier(self, op: Operation, insert: bool, before: tuple[Operation, ...] = ()) -> None:
        if insert:
            for new in before + (Operation("gpu.barrier", loc=op.loc),):
                op.parent.insert_before(op, new)

    def _block(self, block: Block, state: _Pending, insert: bool) -> _Pending:
        for op in list(block.ops):
            name = op.name
            if name in ("gpu.barrier", "tt.debug_barrier") or "scratch_offset" in op.attrs:
                state = state.cleared()
            elif name == "gpu.tma_store":  # its lowering synchronizes the CTA before the copy
                state = state.cleared()
                if op.attrs.get("deferred_wait"):
                    state = state.replace(stores=state.stores | {_access(op.operand(0), self.func)})
            elif name == "gpu.tma_store_wait":
                state = state.replace(stores=frozenset())
            elif name in ("gpu.local_store", "gpu.async_copy", "gpu.tma_load_async", "gpu.mbarrier_init",
                          "gpu.tma_load"):
                access = _access(op.operand(0), self.func)
                if _hits(access, state.stores):
                    self._barrier(op, insert, (Operation("gpu.tma_store_wait", loc=op.loc),))
                    state = state.replace(stores=frozenset()).cleared()
                if name == "gpu.tma_load":  # its lowering brackets the copy with barriers
                    continue
                if any(_hits(access, d) for d in state.dots):
                    self._barrier(op, insert, (Operation("gpu.dot_wait", [], [], {"pending": 0}, loc=op.loc),))
                    state = state.replace(dots=()).cleared()
                # a released ring copy: every thread's reads of the stage are ordered before it by
                # the ring's "empty" mbarriers (tile/opt/pipeline.py), not by a barrier
                pending = state.writes if op.attrs.get("released") else state.reads | state.writes
                if _hits(access, pending):
                    self._barrier(op, insert)
                    state = state.cleared()
                if name == "gpu.local_store":
                    state = state.replace(writes=state.writes | {access}, unfenced=state.unfenced | {access})
                elif name == "gpu.async_copy":
                    state = state.replace(in_flight=state.in_flight | {access})
            elif name == "gpu.local_load":
                access = _access(op.operand(0), self.func)
                if _hits(access, state.writes):
                    self._barrier(op, insert)
                    state = state.cleared()
                state = state.replace(reads=state.reads | {access})
            elif reads_async_proxy(op):
                state = self._wgmma(op, state, insert)
            elif name == "gpu.dot_wait":
                keep = len(state.dots) - op.attrs["pending"]
                retired = frozenset().union(*state.dots[:max(keep, 0)])
                state = state.replace(reads=state.reads | retired, dots=state.dots[max(keep, 0):])
            elif name == "gpu.fence_async_shared":
                state = state.replace(unfenced=frozenset())
            elif name == "gpu.async_wait":
                state = state.replace(writes=state.writes | state.in_flight, in_flight=frozenset())
            elif name == "scf.if":
                then, other = op.regions[0].block, op.regions[1].block
                state = self._block(then, state, insert) | self._block(other, state, insert)
            elif name == "scf.for":
                if state.unfenced and any(reads_async_proxy(inner) for inner in op.walk()):
                    # Fenced here, not at the dot inside, where it would run every iteration.
                    if insert:
                        op.parent.insert_before(op, Operation("gpu.fence_async_shared", loc=op.loc))
                    state = state.replace(unfenced=frozenset())
                body = op.regions[0].block
                entry = self._loop_entry(state, lambda s: _untag(self._block(body, s, False), op))
                state = state | _untag(self._block(body, entry, insert), op)
            elif name == "scf.while":
                before, after = op.regions[0].block, op.regions[1].block
                entry = self._loop_entry(
                    state, lambda s: _untag(self._block(after, self._block(before, s, False), False), op))
                state = _untag(self._block(before, entry, insert), op)
                self._block(after, state, insert)
        return state

    def _wgmma(self, op: Operation, state: _Pending, insert: bool) -> _Pending:
        """A dot reading its operands through the async proxy (see the module docstring)."""
        accesses = frozenset(_access(v, self.func) for v in op.operands[:2] if isinstance(layout_of(v), SharedLayout))
        if any(_hits(a, state.unfenced) for a in accesses):
            self._barrier(op, insert, (Operation("gpu.fence_async_shared", loc=op.loc),))
            state = state.replace(unfenced=frozenset()).cleared()
        elif any(_hits(a, state.writes) for a in accesses):
            self._barrier(op, insert)
            state = state.cleared()
        if op.attrs.get("is_async"):
            return state.replace(dots=state.dots + (accesses,))
        return state.replace(reads=state.reads | accesses)

    @staticmethod
    def _loop_entry(state: _Pending, iteration) -> _Pending:
        """What is pending at the top of a loop body: before the loop or after any iteration."""
        entry = state
        while True:
            new = state | iteration(entry)
            if new == entry:
                return entry
            entry = new


__all__ = ["InsertBarriers", "reads_async_proxy"]
