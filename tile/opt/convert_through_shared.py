"""Lower layout conversions that move elements between threads to a trip through shared memory.

Every gpu.convert_layout whose conversion_kind is "shared" becomes a buffer, a store of the
source into it and a load in the destination layout. Conversions of kind "noop" and
"registers" stay: the lowering does them in registers. Barriers are not added here (that is
insert-barriers' job), nor offsets (alloc-shared's).

The buffer is row-major with the source's fastest dimension (most consecutive registers)
contiguous, so each thread writes its runs as vectors. Its swizzle:
- an mma operand (#dot_op destination): tile.ir.dot_layouts.shared_for_dot, which makes the
  ldmatrix reads and the 16-byte stores filling the buffer conflict-free. This is the operand
  staging of tt.dot: global load -> local_store -> local_load into the #dot_op fragments.
- any other conversion (the epilogue's #mma accumulator to the store's coalesced layout, a
  transpose): the (vec, per_phase, max_phase) that takes the fewest shared-memory wavefronts
  for the store of the source plus the load of the destination, each thread moving the widest
  aligned run (at most 16 bytes) the swizzle keeps contiguous. The layouts and the offsets are
  XOR-linear, so every access instruction of every warp has the bank pattern of warp 0's first
  one (lanes differ by XOR constants, which permute banks): costing one instruction per side is
  exact. Ties keep the smaller swizzle (no swizzle when it costs nothing).
- on an AMD target of tile.opt.amd_shared_layouts (the pass is built with its target), a
  buffer that is not an MFMA / WMMA operand: the same search in each order (each dimension
  fastest); the cheapest order wins, ties the source's.

The buffers of wgmma's operands (placed by accelerate-dot, K-major) take the order of the values
stored into them: MN-major (tile.ir.dot_layouts.wgmma_shared with M or N contiguous) where the
stored value's fastest dimension is M or N and the type allows MN-major operands (f16, bf16),
so the 16-byte stores (and cp.async copies) filling them stay whole:
    %0 = gpu.local_alloc ... : tensor<64x128xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]>>
    gpu.local_store %0, %b           (%b: tensor<64x128xf16, #blocked<spt = [1, 8], ..., order = [1, 0]>>)
    %d = tt.dot %a_buf, %0, %acc : tensor<64x128xf32, #mma<version = 3, ...>>
becomes
    %0 = gpu.local_alloc ... : tensor<64x128xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0],
                                                           block = 64>>

Before (#T = #blocked<spt = [4, 1], tpw = [16, 2], wpc = [1, 4], order = [0, 1]>, column-major, and
#C = #blocked<spt = [1, 4], tpw = [2, 16], wpc = [4, 1], order = [1, 0]>, row-major):
    %y = gpu.convert_layout %x : tensor<64x64xf32, #C>          (%x: tensor<64x64xf32, #T>)
After:
    %0 = gpu.local_alloc {bytes = 16384, offset = -1} :
           tensor<64x64xf32, #shared<vec = 4, per_phase = 1, max_phase = 8, order = [0, 1]>>
    gpu.local_store %0, %x
    %y = gpu.local_load %0 : tensor<64x64xf32, #C>
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from ..ir import Operation, TensorType
from ..ir.dot_layouts import LINE, DotOperandLayout, MmaLayout, shared_for_dot, shared_wavefronts, wgmma_shared
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import DistributedLayout, SharedLayout, conversion_kind, log2
from ..ir.mfma_layouts import MfmaOperandLayout
from ..ir.simt_ops import WGMMA_SHAPES, wgmma_atype
from ..ir.wmma_layouts import WmmaOperandLayout
from . import amd_shared_layouts
from .dce import replace_op
from .pass_manager import Pass


def _fastest_dim(layout: DistributedLayout, shape: Sequence[int]) -> int:
    linear = layout.to_linear(shape)
    rank = len(shape)
    return max(reversed(range(rank)), key=lambda d: linear.contiguous_registers(d))


def _xor_table(offsets: Sequence[int]) -> np.ndarray:
    """XOR of the offsets of the set bits, for every index."""
    out = np.zeros(1 << len(offsets), dtype=np.int64)
    for i, o in enumerate(offsets):
        out[1 << i:2 << i] = out[:1 << i] ^ o
    return out


def access_cost(shared: SharedLayout, layout: DistributedLayout, shape: Sequence[int], ebytes: int,
                store: bool) -> int:
    """Wavefronts a warp takes to store (or load) its part of a `layout` tensor in `shared`, each
    thread moving the widest run of at most 16 bytes that is contiguous and aligned in every thread
    (as the lowering vectorizes: lane and warp offsets must not disturb the run)."""
    linear = layout.to_linear(shape)
    reg_bases, lane_bases, warp_bases = shared.offset_bases(linear)
    regs, lanes = _xor_table(reg_bases), _xor_table(lane_bases)
    vec = min(len(regs), max(1, 16 // ebytes))
    while vec > 1 and not (all(o % vec == 0 for o in lane_bases + warp_bases) and (regs[::vec] % vec == 0).all()
                           and all((regs[j::vec] == regs[::vec] + j).all() for j in range(1, vec))):
        vec //= 2
    count = len(regs)
    addresses: list = [int(o) * ebytes for o in lanes]
    if store:  # replicated lanes and registers do not write
        addresses = [a if not lane & linear.replicated_lane_mask else None for lane, a in enumerate(addresses)]
        count >>= bin(linear.replicated_register_mask).count("1")
    return max(1, count // vec) * shared_wavefronts(addresses, vec * ebytes)


@lru_cache(maxsize=1024)
def shared_layout_for(src: DistributedLayout, dst: DistributedLayout, shape: tuple[int, ...],
                      ebytes: int, target: Optional[str] = None) -> SharedLayout:
    """The buffer layout for converting `src` to `dst` (see the module docstring); per_phase is
    tried up to 8 times the rows one 128-byte line holds. An AMD `target` may also try the other
    orders (tile.opt.amd_shared_layouts)."""
    rank = len(shape)
    inner = _fastest_dim(src, shape)
    order = (inner,) + tuple(d for d in reversed(range(rank)) if d != inner)
    if isinstance(dst, DotOperandLayout):
        return shared_for_dot(shape, ebytes, dst.op_idx, order)
    plain = SharedLayout(1, 1, 1, order)
    if rank < 2:
        return plain
    if target not in amd_shared_layouts.ORDER_SEARCH_TARGETS or isinstance(dst, (MfmaOperandLayout, WmmaOperandLayout)):
        return _searched_layout(src, dst, shape, ebytes, order)[0]
    orders = [(d,) + tuple(o for o in reversed(range(rank)) if o != d)
              for d in [inner] + [d for d in reversed(range(rank)) if d != inner]]
    candidates = [_searched_layout(src, dst, shape, ebytes, o) for o in orders]
    return min(candidates, key=lambda c: c[1])[0]   # min keeps the first of equals: the source's order


def _searched_layout(src: DistributedLayout, dst: DistributedLayout, shape: tuple[int, ...], ebytes: int,
                     order: tuple[int, ...]) -> tuple[SharedLayout, int]:
    """The cheapest swizzle of a buffer in `order` for the conversion, and its cost."""
    inner = order[0]
    plain = SharedLayout(1, 1, 1, order)
    ncols, nrows = shape[inner], shape[order[1]]
    best, best_cost = plain, None
    powers = lambda limit: [1 << i for i in range(log2(max(1, limit)) + 1)]  # noqa: E731
    rows_per_line = max(1, LINE // ebytes // ncols)
    for vec, per_phase in itertools.product(powers(ncols), powers(min(nrows, 8 * rows_per_line))):
        for max_phase in powers(ncols // vec):
            candidate = SharedLayout(vec, per_phase, max_phase, order)
            cost = access_cost(candidate, src, shape, ebytes, True) + access_cost(candidate, dst, shape, ebytes, False)
            if best_cost is None or cost < best_cost:
                best, best_cost = candidate, cost
    if best.max_phase > 1:
        return best, best_cost
    return plain, access_cost(plain, src, shape, ebytes, True) + access_cost(plain, dst, shape, ebytes, False)


def _first_user(op: Operation) -> Operation:
    """Where the load of a conversion goes: before the first user of a #dot_op (or #wmma_op)
    conversion whose users all sit in its block (so both operands of a dot are stored before
    either is loaded: one barrier between them, and the dot's lowering loads each k-step's
    operands when it needs them), else at the conversion."""
    users = op.result.users()
    if not isinstance(op.result.type.layout, (DotOperandLayout, WmmaOperandLayout)) or not users or \
            any(u.parent is not op.parent for u in users):
        return op
    return min(users, key=op.parent.ops.index)


def orient_wgmma_operands(func: Operation) -> None:
    """Make the buffers of wgmma operands MN-major where their stored values are (see the module
    docstring)."""
    for op in func.walk():
        layout = op.result.type.layout if op.name == "tt.dot" else None
        if not isinstance(layout, MmaLayout) or layout.version != 3:
            continue
        atype = wgmma_atype(op.operand(0).type.element, op.attrs.get("input_precision", "tf32"))
        for buf, k_dim in ((op.operand(0), 1), (op.operand(1), 0)):
            stores = [u for u in buf.users() if u.name == "gpu.local_store"]
            t = buf.type
            if len(stores) != 1 or not WGMMA_SHAPES[atype].mn_major:
                continue
            src = stores[0].operand(1).type
            mn_major = _fastest_dim(src.layout, src.shape) != k_dim
            shared = wgmma_shared(t.shape, element_bytes(t), (1 - k_dim, k_dim)) if mn_major else None
            if shared is not None:
                buf.type = TensorType(t.shape, t.element, shared)


class ConvertThroughShared(Pass):
    """gpu.convert_layout of kind "shared" -> gpu.local_alloc + gpu.local_store + gpu.local_load;
    wgmma operand buffers in the order of their values."""

    name = "convert-through-shared"

    def __init__(self, target: Optional[str] = None):
        self.target = target

    def run(self, func: Operation) -> None:
        orient_wgmma_operands(func)
        for op in list(func.walk()):
            if op.name != "gpu.convert_layout":
                continue
            src, t = op.operand(0), op.result.type
            if conversion_kind(src.type.layout, t.layout, t.shape) != "shared":
                continue
            ebytes = element_bytes(t)
            shared = shared_layout_for(src.type.layout, t.layout, tuple(t.shape), ebytes, self.target)
            alloc = Operation("gpu.local_alloc", [], [TensorType(t.shape, t.element, shared)],
                              {"offset": -1, "bytes": t.numel * ebytes}, loc=op.loc)
            store = Operation("gpu.local_store", [alloc.result, src], loc=op.loc)
            load = Operation("gpu.local_load", [alloc.result], [t], loc=op.loc)
            for new in (alloc, store):
                op.parent.insert_before(op, new)
            op.parent.insert_before(_first_user(op), load)
            replace_op(op, load.result)


__all__ = ["ConvertThroughShared", "shared_layout_for", "access_cost", "orient_wgmma_operands"]
