"""Share transposed buffers: a tile that two dots read, once as loaded and once transposed, is
staged in shared memory once.

Attention's backward reads Q^T by `tl.dot(k, qT)` and by `tl.dot(dsT, tl.trans(qT))`, and dO by
`tl.dot(pT, do)` and `tl.dot(v, tl.trans(do))`. Operand staging (accelerate-dot, then
convert-through-shared) gives each use a buffer of its own: the loaded tile in one, its
tt.trans in another. Where the second buffer's type is the first's transposed (the same
swizzle, dimensions and order swapped: the same bytes in the same places), its store goes and
its readers read the first buffer through gpu.local_trans, which moves no data. The pipeliner
then copies the tile once per iteration, not twice, into half the shared memory.

Before (%q: tensor<64x32xf16, #L>, loaded; #SA and #SB the same swizzle, order [0, 1] / [1, 0]):
    %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #SA>
    gpu.local_store %a, %q
    %t = tt.trans %q {order = [1, 0]} : tensor<32x64xf16, #LT>
    %b = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x64xf16, #SB>
    gpu.local_store %b, %t
    %s = tt.dot %k, %a, %acc0 : ...
    %d = tt.dot %ds, %b, %acc1 : ...
After:
    %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #SA>
    gpu.local_store %a, %q
    %b = gpu.local_trans %a : tensor<32x64xf16, #SB>
    %s = tt.dot %k, %a, %acc0 : ...
    %d = tt.dot %ds, %b, %acc1 : ...
"""
from __future__ import annotations

from typing import Optional

from ..ir import Operation
from ..ir.core import Block, Value
from ..ir.gpu_ops import transposed_shared
from ..ir.layouts import SharedLayout
from .pass_manager import Pass

_READERS = ("gpu.local_load", "tt.dot")


def _only_written_by(buf: Value, store: Operation) -> bool:
    """Whether `buf` is a gpu.local_alloc that `store` alone writes and everything else reads."""
    alloc = buf.owner_op
    return alloc is not None and alloc.name == "gpu.local_alloc" and all(
        user is store or user.name in _READERS for user in buf.users())


def _position(op: Operation, block: Block) -> Optional[int]:
    """The index in `block` of `op` or of the op of `block` that holds it."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return None if op is None else block.ops.index(op)


def _share(store: Operation) -> bool:
    """Replace the buffer `store` fills with a tt.trans of a tile by a gpu.local_trans of the
    tile's own buffer, if there is one of the transposed type; True if it did."""
    buf, transposed = store.operands
    trans = transposed.owner_op
    if trans is None or trans.name != "tt.trans" or list(trans.attrs.get("order", ())) != [1, 0] or \
            not isinstance(getattr(buf.type, "layout", None), SharedLayout) or buf.type.rank != 2:
        return False
    tile = trans.operand(0)
    block = store.parent
    source = next((u for u in tile.users() if u.name == "gpu.local_store" and u.operand(1) is tile and
                   u.parent is block and u.operand(0).type == transposed_shared(buf.type)), None)
    if source is None or not _only_written_by(buf, store) or not _only_written_by(source.operand(0), source):
        return False
    after = block.ops.index(source)
    readers = [u for u in buf.users() if u is not store]
    positions = [_position(r, block) for r in readers]
    if any(p is None or p <= after for p in positions):
        return False
    view = Operation("gpu.local_trans", [source.operand(0)], [buf.type], loc=store.loc)
    view.result.name_hint = buf.name_hint
    block.insert_after(source, view)
    for user, index in list(buf.uses):
        if user is not store:
            user.set_operand(index, view.result)
    store.erase()
    buf.owner_op.erase()
    if not trans.result.uses:
        trans.erase()
    return True


class ShareTransposedBuffers(Pass):
    """Stages a tile read as loaded and transposed once (see the module docstring)."""

    name = "share-transposed-buffers"

    def run(self, func: Operation) -> None:
        for store in [op for op in func.walk() if op.name == "gpu.local_store"]:
            _share(store)


__all__ = ["ShareTransposedBuffers"]
