"""TMA: the accesses of a tensor descriptor become tensor-memory-accelerator copies (sm_90a).

On sm_90a a host `TensorDescriptor` reaches the kernel with its TMA tensor map (a `tensormap`
parameter, tile/runtime/tensor_map.py), and an in-kernel one (`tl.make_tensor_descriptor`, or a
block pointer that TMA can serve) gets one from a tt.make_tensormap; its tt.descriptor_load /
tt.descriptor_store carry it as their last operand. Expand-descriptors leaves those (`uses_tma`)
for this pass, which runs after convert-through-shared (so the buffers staging tl.dot's operands
exist) and turns:

- a load into a gpu.tma_load into a buffer laid out as tile.ir.tma_layouts.tma_layout (wgmma's
  swizzle where rows hold 32 bytes or more: the tensor map is encoded with the same swizzle).
  When its only use stores it into a buffer of exactly that layout, or into one only wgmma
  reads and could read in that layout (the staging of a wgmma operand: the buffer takes TMA's
  layout), the copy fills that buffer and the store goes; otherwise a gpu.local_load reads the
  block into the load's layout.
- a load whose only use is a tt.trans staged for wgmma (B of `tl.dot(a, b.T)`) into a
  gpu.tma_load {transposed} of that staging buffer: the same bytes, seen with the order reversed.
- a store into a gpu.local_store of the value into such a buffer and a gpu.tma_store of it,
  marked `read_back` when the kernel may read what it writes (a TMA load of the same tensor, a
  load from its base pointer, or an unknown source): its wait then covers the writes; and
  `deferred_wait` when it is in a loop and not read back (a persistent kernel's epilogue): it
  does not wait at all, so the next tile's loads overlap the copy (insert-barriers places the
  wait before the buffer's next write, as Triton does).

Last, each tt.make_tensormap that a copy uses gets a 128-byte slot of the program's global scratch
(a `global_scratch` parameter appended to the kernel; `global_scratch_bytes` per program for the
launcher), and the unused ones go.

Out-of-bounds elements are the hardware's business: a load reads them as zero (NaN with padding
"nan", the tensor map's oobFill) and a store clips them.

Before (#B a blocked layout; #sh = #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>):
    %a = tt.descriptor_load %x, %M, %K, %sm, %c1, %om, %ok, %x.tensormap {block_shape = [64, 64], padding = "zero"}
         : tensor<64x64xf16, #B>
    %buf = gpu.local_alloc {bytes = 8192, offset = -1} : tensor<64x64xf16, #sh>
    gpu.local_store %buf, %a
    %d = tt.dot %buf, %w, %acc : tensor<64x64xf32, #mma<version = 3, ...>>
    tt.descriptor_store %y, %M, %N, %sn, %c1, %om, %on, %v, %y.tensormap {block_shape = [64, 64]}
After:
    %buf = gpu.local_alloc {bytes = 8192, offset = -1} : tensor<64x64xf16, #sh>
    gpu.tma_load %buf, %x.tensormap, %om, %ok
    %d = tt.dot %buf, %w, %acc : tensor<64x64xf32, #mma<version = 3, ...>>
    %out = gpu.local_alloc {bytes = 8192, offset = -1} : tensor<64x64xf16, #sh>
    gpu.local_store %out, %v
    gpu.tma_store %out, %y.tensormap, %om, %on {deferred_wait = false, read_back = false}
"""
from __future__ import annotations

from typing import Optional

from ..ir import BlockArgument, Operation, PointerType, TensorType, Value
from ..ir.builder import Builder
from ..ir.dot_layouts import MmaLayout, wgmma_swizzle
from ..ir.gpu_ops import element_bytes, layout_of, tma_buffer_layout, with_layout
from ..ir.layouts import SharedLayout
from ..ir.tma_layouts import TENSOR_MAP_BYTES, TMA_MAX_BOX, TMA_MIN_INNER_BYTES, tma_layout
from ..ir.types import TensorMapType, i1, i8
from .accelerate_dot import WARP_GROUP, WGMMA_TARGETS, uses_wgmma
from .dce import replace_op
from .pass_manager import Pass


def uses_tma(op: Operation) -> bool:
    """Whether a tt.descriptor_load / tt.descriptor_store becomes TMA copies: it carries a
    tensor map (a host descriptor on sm_90a), its block fits TMA's boxes (1-bit and pointer
    elements, which TMA does not move, keep the masked expansion), and it is not a load
    inside a loop that the TMA ring cannot take.

    Such loads keep the masked expansion, which the cp.async pipeline overlaps over num_stages
    buffers where the load feeds a dot (then through registers: mma.sync or the FMA path), and
    which costs an ordinary load elsewhere, while a TMA load that no ring overlaps waits on its
    copy with the whole CTA: measured on the H100 (2026-11-25), a persistent matmul whose loads
    waited on each TMA copy ran at 0.34x Triton's speed."""
    if op.name == "tt.descriptor_load" and _in_loop(op) and not feeds_wgmma_in_loop(op):
        return False
    return _tma_copyable(op)


def _tma_copyable(op: Operation) -> bool:
    """A tensor map, and a block of elements and sizes that TMA boxes move."""
    if not op.operands or not isinstance(op.operands[-1].type, TensorMapType):
        return False
    element = op.operand(0).type.pointee
    if isinstance(element, PointerType) or element == i1:
        return False
    block = op.attrs["block_shape"]
    return all(d <= TMA_MAX_BOX for d in block) and block[-1] * element.bytes >= TMA_MIN_INNER_BYTES


def _in_loop(op: Operation) -> bool:
    """Whether `op` is inside an scf.for or scf.while, at any depth."""
    parent = op.parent_op
    while parent is not None:
        if parent.name in ("scf.for", "scf.while"):
            return True
        parent = parent.parent_op
    return False


def feeds_wgmma_in_loop(op: Operation) -> bool:
    """Whether a tt.descriptor_load sits directly in an scf.for body and is used only as operand
    A or B of one tt.dot of that body which goes to wgmma (judged for one warp group: the
    compile options are not known on tile IR) and reads it where TMA puts it (B of 4- or 1-byte
    elements must be K-major, which a [K, N] block is not): the pipeline pass then makes the
    loop's copies a ring of num_stages buffers and mbarriers (tile/opt/pipeline.py). Where the
    ring is not built after all (num_stages = 1, num_warps not a multiple of 4), the copy stays
    a synchronous gpu.tma_load, correct but unpipelined."""
    loop = op.parent_op
    value = op.result
    if loop is None or loop.name != "scf.for" or len(value.uses) != 1:
        return False
    transposed = _transposed_by(op)
    if transposed is not None:
        value = transposed.result
        if len(value.uses) != 1 or value.uses[0][1] != 1:
            return False
    dot, index = value.uses[0]
    if dot.name != "tt.dot" or dot.parent is not op.parent or index > 1 or dot.operand(1 - index) is value:
        return False
    if index == 1 and transposed is None and op.result.type.element.bytes != 2:
        return False
    return uses_wgmma(dot, WGMMA_TARGETS[0], WARP_GROUP, 32)


def _transposed_by(load: Operation) -> Optional[Operation]:
    """The tt.trans of a rank-2 load's block that is its only use, whose staging buffer TMA can
    fill directly (see tma_buffer_layout): B of `tl.dot(a, b.T)` with b a [N, K] block, K
    contiguous (Triton's grouped GEMM), which wgmma reads K-major."""
    uses = load.result.uses
    if len(uses) != 1 or uses[0][0].name != "tt.trans" or load.result.type.rank != 2:
        return None
    return uses[0][0]


def _coordinates(op: Operation) -> list[Value]:
    rank = len(op.attrs["block_shape"])
    return list(op.operands[1 + 2 * rank:1 + 3 * rank])


def _buffer(b: Builder, t: TensorType) -> Value:
    layout = tma_layout(t.shape, element_bytes(t)).shared
    return b.value("gpu.local_alloc", [], TensorType(t.shape, t.element, layout), offset=-1,
                   bytes=t.numel * element_bytes(t))


def _wgmma_reads_only(buf: Value, store: Operation, layout: SharedLayout) -> bool:
    """Whether only wgmma dots read `buf` (written by `store`), and would read it in `layout` too: a canonical wgmma
    layout, K-major for A (operand 0) or, for B, either order where B may be MN-major (16-bit
    types)."""
    t = buf.type
    if wgmma_swizzle(layout, t.shape, element_bytes(t)) is None:
        return False
    for user, index in buf.uses:
        if user is store:
            continue
        if user.name != "tt.dot" or index > 1:
            return False
        result = layout_of(user.result)
        if not isinstance(result, MmaLayout) or result.version != 3:
            return False
        if index == 1 and layout.order[0] == 1 and not t.element.bytes == 2:
            return False
    return True


def _staging_store(load: Operation) -> Optional[Operation]:
    """The gpu.local_store that is the load's only use, into a buffer that nothing else writes,
    in TMA's layout of the block or only read by wgmma (which may read it in that layout as
    well: the buffer then takes it): the copy can fill that buffer itself."""
    transposed = _transposed_by(load)
    uses = (transposed or load).result.uses
    if len(uses) != 1 or uses[0][0].name != "gpu.local_store" or uses[0][1] != 1:
        return None
    store = uses[0][0]
    buf = store.operand(0)
    alloc = buf.owner_op
    want = tma_buffer_layout(buf.type.shape, element_bytes(buf.type), transposed is not None)
    if alloc is None or alloc.name != "gpu.local_alloc" or store.parent is not load.parent:
        return None
    readers = [u for u in buf.users() if u is not store]
    if len(buf.uses) != len(readers) + 1 or any(u.name in ("gpu.local_store", "gpu.async_copy") for u in readers):
        return None
    if buf.type.layout != want:
        if not _wgmma_reads_only(buf, store, want):
            return None
        buf.type = with_layout(buf.type, want)
    return store


def _lower_load(op: Operation) -> None:
    tensormap = op.operands[-1]
    store = _staging_store(op)
    b = Builder(loc=op.loc)
    if store is not None:
        b.set_insertion_point_before(store)
        transposed = _transposed_by(op)
        b.create("gpu.tma_load", [store.operand(0), tensormap, *_coordinates(op)], [],
                 {"transposed": True} if transposed is not None else {})
        store.erase()
        if transposed is not None:
            transposed.erase()
        op.erase()
        return
    b.set_insertion_point_before(op)
    buf = _buffer(b, op.result.type)
    b.create("gpu.tma_load", [buf, tensormap, *_coordinates(op)])
    replace_op(op, b.value("gpu.local_load", [buf], op.result.type))


def _lower_store(op: Operation) -> None:
    rank = len(op.attrs["block_shape"])
    value = op.operand(1 + 3 * rank)
    b = Builder(loc=op.loc)
    b.set_insertion_point_before(op)
    buf = _buffer(b, value.type)
    b.create("gpu.local_store", [buf, value])
    b.create("gpu.tma_store", [buf, op.operands[-1], *_coordinates(op)])
    op.erase()


class LowerToTma(Pass):
    """Host descriptors' tt.descriptor_load / tt.descriptor_store -> gpu.tma_load / gpu.tma_store."""

    name = "tma"

    def run(self, func: Operation) -> None:
        for op in [o for o in func.walk() if o.name in ("tt.descriptor_load", "tt.descriptor_store")]:
            if not _tma_copyable(op):  # expand-descriptors expanded every other access
                raise ValueError(f"{op.name} reached the gpu passes without a TMA lowering")
            (_lower_load if op.name == "tt.descriptor_load" else _lower_store)(op)
        for store in [o for o in func.walk() if o.name == "gpu.tma_store"]:
            store.attrs["read_back"] = _read_back(store)
            store.attrs["deferred_wait"] = not store.attrs["read_back"] and _in_loop(store)
        _assign_scratch_slots(func)


def _tensor_of(tensormap: Value) -> Optional[Value]:
    """What a tensor map describes, as far as the IR tells: the base pointer of the
    tt.make_tensormap that made it, or the kernel parameter it is; None when unknown (a map
    carried through a loop or an if)."""
    maker = tensormap.owner_op
    if maker is not None and maker.name == "tt.make_tensormap":
        return maker.operand(0)
    if isinstance(tensormap, BlockArgument) and tensormap.block.parent_op is not None \
            and tensormap.block.parent_op.name == "tt.func":
        return tensormap
    return None


_POINTER_PATH = ("tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "gpu.convert_layout")
_GLOBAL_READS = {"tt.load": 0, "tt.atomic_rmw": 0, "tt.atomic_cas": 0, "gpu.async_copy": 1}  # op: pointer operand


def _base_pointer(pointers: Value) -> Optional[Value]:
    """The scalar pointer that a tensor of pointers is offset from: a kernel parameter or a
    loaded value; None when it comes through a loop or an if."""
    while pointers.owner_op is not None and pointers.owner_op.name in _POINTER_PATH:
        pointers = pointers.owner_op.operand(0)
    if isinstance(pointers, BlockArgument):
        return pointers if pointers.block.parent_op is not None and pointers.block.parent_op.name == "tt.func" else None
    return pointers


def _read_back(store: Operation) -> bool:
    """Whether the kernel may read, by TMA or by a load, what TMA `store` writes: through a
    tensor map of the same tensor or a pointer from its base, or from an unknown source.
    (Different kernel parameters are taken not to alias, as Triton takes them.)"""
    func = store
    while func.name != "tt.func":
        func = func.parent_op
    written = _tensor_of(store.operand(1))
    if written is None:
        return True
    for op in func.walk():
        if op.name in ("gpu.tma_load", "gpu.tma_load_async"):
            read = _tensor_of(op.operand(1))
        elif op.name in _GLOBAL_READS:
            read = _base_pointer(op.operand(_GLOBAL_READS[op.name]))
        else:
            continue
        if read is None or read is written:
            return True
    return False


def _assign_scratch_slots(func: Operation) -> None:
    """Give each in-kernel tensor map that a TMA copy uses a TENSOR_MAP_BYTES slot of the
    program's global scratch: a `global_scratch` (ptr<i8>) parameter is appended to the kernel,
    passed to each tt.make_tensormap as its last operand, and `global_scratch_bytes` (per
    program) tells the launcher how much to allocate. Tensor maps that no copy uses go."""
    makes = [op for op in func.walk() if op.name == "tt.make_tensormap"]
    for op in [o for o in makes if not o.result.has_uses]:
        op.erase()
    makes = [op for op in makes if op.parent is not None]
    if not makes:
        return
    entry = func.regions[0].block
    scratch = entry.add_argument(PointerType(i8), "global_scratch")
    func.attrs["arg_names"] = list(func.attrs.get("arg_names") or []) + ["global_scratch"]
    if "arg_divisibility" in func.attrs:  # the allocator's buffer is TENSOR_MAP_BYTES aligned
        func.attrs["arg_divisibility"] = list(func.attrs["arg_divisibility"]) + [16]
    func.attrs["global_scratch_bytes"] = TENSOR_MAP_BYTES * len(makes)
    for slot, op in enumerate(makes):
        op.set_operands([*op.operands, scratch])
        op.attrs["slot"] = slot


__all__ = ["LowerToTma", "uses_tma", "feeds_wgmma_in_loop"]
