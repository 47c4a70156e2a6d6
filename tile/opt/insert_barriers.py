"""Barrier insertion: a gpu.barrier wherever threads could touch shared bytes out of order.

Walks the function in program order with the byte ranges read and written since the last
barrier. Before a gpu.local_store whose bytes overlap a pending read (write after read) or
write (write after write), and before a gpu.local_load whose bytes overlap a pending write
(read after write), it inserts a gpu.barrier, which clears both sets. An existing gpu.barrier
or tt.debug_barrier clears them too, so no barrier is ever redundant with one already there.
scf.if merges what its branches leave pending; scf.for and scf.while run their body again
from what the previous iteration left pending until that is stable, so hazards across the
back edge get a barrier inside the loop. Reduce/scan scratch is left to the lowering, which
puts barriers around its own scratch use (the contract): a reduce or scan with a
`scratch_offset` therefore also clears both sets.

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
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Block, Operation
from .pass_manager import Pass

Interval = tuple[int, int]


@dataclass(frozen=True)
class _Pending:
    reads: frozenset[Interval] = frozenset()
    writes: frozenset[Interval] = frozenset()

    def __or__(self, other: "_Pending") -> "_Pending":
        return _Pending(self.reads | other.reads, self.writes | other.writes)


_CLEAR = _Pending()


def _overlaps(iv: Interval, others: frozenset[Interval]) -> bool:
    return any(iv[0] < b and a < iv[1] for a, b in others)


def _interval(buffer_op: Operation, func: Operation) -> Interval:
    if buffer_op is not None and buffer_op.name == "gpu.local_alloc" and buffer_op.attrs.get("offset", -1) >= 0:
        start = buffer_op.attrs["offset"]
        return start, start + buffer_op.attrs["bytes"]
    return 0, max(1, func.attrs.get("shared_bytes", 1))  # unknown buffer: all of shared memory


class InsertBarriers(Pass):
    """Inserts the gpu.barrier ops shared-memory hazards need (see the module docstring)."""

    name = "insert-barriers"

    def run(self, func: Operation) -> None:
        self.func = func
        self._block(func.regions[0].block, _CLEAR, insert=True)

    def _barrier(self, op: Operation, insert: bool) -> None:
        if insert:
            op.parent.insert_before(op, Operation("gpu.barrier", loc=op.loc))

    def _block(self, block: Block, state: _Pending, insert: bool) -> _Pending:
        for op in list(block.ops):
            name = op.name
            if name in ("gpu.barrier", "tt.debug_barrier") or "scratch_offset" in op.attrs:
                state = _CLEAR
            elif name == "gpu.local_store":
                iv = _interval(op.operand(0).owner_op, self.func)
                if _overlaps(iv, state.reads | state.writes):
                    self._barrier(op, insert)
                    state = _CLEAR
                state = _Pending(state.reads, state.writes | {iv})
            elif name == "gpu.local_load":
                iv = _interval(op.operand(0).owner_op, self.func)
                if _overlaps(iv, state.writes):
                    self._barrier(op, insert)
                    state = _CLEAR
                state = _Pending(state.reads | {iv}, state.writes)
            elif name == "scf.if":
                then, other = op.regions[0].block, op.regions[1].block
                state = self._block(then, state, insert) | self._block(other, state, insert)
            elif name == "scf.for":
                body = op.regions[0].block
                entry = self._loop_entry(state, lambda s: self._block(body, s, False))
                state = state | self._block(body, entry, insert)
            elif name == "scf.while":
                before, after = op.regions[0].block, op.regions[1].block
                entry = self._loop_entry(state, lambda s: self._block(after, self._block(before, s, False), False))
                state = self._block(before, entry, insert)
                self._block(after, state, insert)
        return state

    @staticmethod
    def _loop_entry(state: _Pending, iteration) -> _Pending:
        """What is pending at the top of a loop body: before the loop or after any iteration."""
        entry = state
        while True:
            new = state | iteration(entry)
            if new == entry:
                return entry
            entry = new


__all__ = ["InsertBarriers"]
