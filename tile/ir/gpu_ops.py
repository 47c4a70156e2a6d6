"""The gpu level: tile IR whose tensors carry layouts, plus the ops that move data between layouts.

gpu IR is tile IR where every tensor type carries a layout (tile.ir.layouts) and the tt.func
has attrs `num_warps`, `threads_per_warp`, `target`, `num_stages` (the buffers software
pipelining may use) and, after allocation, `shared_bytes`.
Extra ops:

  gpu.convert_layout %x : tensor<S x T, #dst>      same shape and element type, another layout
  gpu.local_alloc {offset, bytes} : tensor<S x T, #shared<...>>   a shared-memory buffer; offset
                                    in bytes into dynamic shared memory (-1 until allocated)
  gpu.local_store %buf, %x                        %x (distributed) into the buffer, each element once
  gpu.local_load %buf : tensor<S x T, #dist>      the buffer into registers
  gpu.barrier                                     bar.sync 0 across the CTA

Multi-buffering and asynchronous copies (software pipelining of the loads feeding tt.dot):

  gpu.local_alloc {offset, bytes} : tensor<S x R x C x T, #shared<..., order = [2, 1, 0]>>
                                    S buffers ("stages") of R x C, stage-major; each stage is
                                    laid out (and swizzled) as the stage's own 2-D layout
  gpu.local_view %buf, %stage : tensor<R x C x T, #shared<..., order = [1, 0]>>
                                    stage %stage (scalar i32) of a rank-3 buffer, no data moved:
                                    its bytes start at offset + stage * R * C * bytes(T); the
                                    layout is the buffer's without the stage dimension
  gpu.local_trans %buf : tensor<C x R x T, #shared<..., order = [0, 1]>>
                                    the rank-2 buffer %buf (R x C) read transposed, no data
                                    moved: the same bytes, dimensions and order swapped (a tile
                                    that two dots read, once transposed, is staged once)
  gpu.async_copy %view, %ptrs [, %mask [, %other]] {vector = V}
                                    global -> shared copy (cp.async) of the elements %ptrs point
                                    to, V consecutive elements (4, 8 or 16 bytes) per copy;
                                    masked-off elements are written as zeros (%other, if given,
                                    is a zero constant); mask and other in the pointers' layout
  gpu.async_commit                  closes the group of copies issued since the last commit
  gpu.async_wait {pending = N}      waits until at most N committed groups are still in flight;
                                    other threads' copies are visible after a gpu.barrier

Hopper's wgmma (a tt.dot with a #mma version 3 result reads B, and A unless A is in registers in
#dot_op<op_idx = 0> of the result's layout, from #shared buffers in a canonical wgmma layout,
tile.ir.dot_layouts.wgmma_shared):

  tt.dot %a, %b, %acc {is_async = true, ...}   the dot's wgmma stay in flight after it: its
                                    result may feed only the next dot's accumulator, a loop's
                                    scf.yield and a gpu.dot_wait, and its buffers must not be
                                    overwritten before a gpu.dot_wait retires it
  %r... = gpu.dot_wait %acc... {pending = N} : T...   waits until at most N asynchronous dots
                                    are in flight; %acc (accumulators of retired dots) come
                                    back as %r, ready to read
  gpu.fence_async_shared            makes this thread's earlier shared-memory writes (local_store,
                                    landed async copies) visible to wgmma after a gpu.barrier

Hopper's tensor memory accelerator (sm_90a; tile/opt/tma.py makes these of a host descriptor's
tt.descriptor_load / tt.descriptor_store, the buffer laid out as tile.ir.tma_layouts.tma_layout):

  gpu.tma_load %buf, %tensormap, %coords... {transposed}   copies the block at %coords (i32, one per
                                    dimension) of the tensor that %tensormap describes into
                                    %buf, out-of-bounds elements zero (or NaN) filled, and waits
                                    for it: afterwards every thread may read %buf, and wgmma too
                                    (the lowering brackets the copy with barriers and an mbarrier)
  gpu.tma_store %buf, %tensormap, %coords... {read_back, deferred_wait}   writes %buf (filled
                                    by gpu.local_store) to the block at %coords, clipped to the
                                    tensor (the lowering fences the writes to the async proxy and
                                    synchronizes the CTA first), and waits until %buf has been
                                    read (read_back: until the block is written, the kernel may
                                    load it again); with deferred_wait it does not wait: %buf
                                    keeps its bytes to itself (alloc-shared) and a later
                                    gpu.tma_store_wait retires the read (insert-barriers)
  gpu.tma_store_wait                the TMA stores issued so far have read their buffers

The TMA ring of a pipelined loop (tile/opt/pipeline.py); %bars: a gpu.local_alloc of
tensor<S x i64, #shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>>, one mbarrier per stage:

  gpu.mbarrier_init %bars {count = N}   one thread initializes every mbarrier of %bars for N
                                    arrivals per phase; every thread then fences its earlier
                                    shared-memory writes to the async proxy (a gpu.barrier
                                    must follow before anyone uses the mbarriers)
  gpu.mbarrier_expect %bars, %stage, %pred {bytes = B}   where %pred, one thread arrives on
                                    mbarrier %stage, announcing B bytes of copies to come
  gpu.tma_load_async %view, %tensormap, %bars, %stage, %pred, %coords...   where %pred, one
                                    thread starts the copy of gpu.tma_load into %view (a stage
                                    of a ring buffer, TMA's layout), counted on mbarrier %stage;
                                    nothing waits for it here. {released}: every thread has
                                    released the stage's earlier bytes on the ring's "empty"
                                    mbarriers, which the issuing warp waited for (no gpu.barrier)
  gpu.mbarrier_wait %bars, %stage, %phase   every thread waits until the phase of parity
                                    %phase (i32, 0 or 1) of mbarrier %stage has completed: the
                                    copies it counted have landed, readable by this thread and
                                    by wgmma. {issuer}: only the warp that issues the copies
                                    waits (the ring's "empty" mbarriers)
  gpu.mbarrier_arrive %bars, %stage     every thread arrives once on mbarrier %stage (count: the
                                    threads of the program): it is done reading the stage
  gpu.mbarrier_inval %bars              one thread invalidates the mbarriers (a gpu.barrier
                                    must precede: nobody waits on them any more)

The layout rules of every op (which operand layouts an op needs, given its result layouts)
live here too, in `required_operand_types`; passes insert gpu.convert_layout where an operand
breaks them (`legalize`) and `verify_layouts` checks them:

  elementwise ops, tt.load, tt.atomic_*   every tensor operand in the result's layout
  tt.store                                value and mask in the pointer's layout
  tt.broadcast                            operand in the result's layout (any shape)
  tt.expand_dims {axis}                   operand in #slice<dim = axis, parent = result layout>
  tt.reduce {axis}                        result #slice<dim = axis, parent = L>, operands in L
  tt.scan                                 operands in the result's layout
  tt.trans / tt.reshape                   operand layout such that every element stays in its
                                          register: LinearLayout(result) = LinearLayout(operand)
                                          transposed / reshaped; both are free in registers
  tt.join / tt.split                      likewise: the joined dimension is one register bit of
                                          the joined layout (join_layout / split_layout), so the
                                          operands (join) or results (split) are that layout
                                          without it
  tt.gather                               index in the result's layout; the source in any
  tt.histogram                            mask in the input's layout; the input in any
  tt.dot                                  accumulator in the result's layout; with an #mma
                                          version 2 result, A and B in its #dot_op layouts
                                          (k_width = 4 / element bytes: 2 for f16/bf16, 4 for
                                          i8, 1 for tf32); with a version 3 result, B in a
                                          #shared buffer and A in one (both checked by
                                          verify_layouts) or in #dot_op<op_idx = 0> of the
                                          result; with a #blocked result (the FMA path) in
                                          fma_operand_layout(result, 0 or 1, K)
  scf.for / scf.if / scf.while            init, block argument, yielded value and result of
                                          one loop-carried value share one type
"""
from __future__ import annotations

from typing import Optional, Sequence

from .core import Block, Operation, Value
from .dot_layouts import DotOperandLayout, MmaLayout, fma_operand_layout
from .mfma_layouts import MfmaLayout, MfmaOperandLayout, mfma_k_width
from .wmma_layouts import WmmaLayout, WmmaOperandLayout
from .layouts import (BlockedLayout, DistributedLayout, Layout, SharedLayout, SliceLayout, join_layout, reshape_layout,
                      split_layout, trans_layout)
from .ops import VerificationError, expect, expect_counts, register_op
from .tma_layouts import tma_layout
from .types import DType, PointerType, TensorMapType, TensorType, Type, element_type, i1, i32, i64


def element_bytes(t: Type) -> int:
    """Bytes one element of `t` takes in memory (pointers: 8; i1: 1)."""
    el = element_type(t)
    return 8 if isinstance(el, PointerType) else el.bytes


def layout_of(v: Value) -> Optional[Layout]:
    return v.type.layout if isinstance(v.type, TensorType) else None


def with_layout(t: Type, layout: Optional[Layout]) -> Type:
    """`t` with its layout replaced (scalars stay scalars)."""
    return TensorType(t.shape, t.element, layout) if isinstance(t, TensorType) else t


def mma_k_width(dtype: DType) -> int:
    """Elements of `dtype` along K in one 32-bit mma operand register (2 for f16, 4 for i8, 1 for tf32)."""
    return max(1, 4 // dtype.bytes)


def _distributed(t: Type) -> bool:
    return isinstance(t, TensorType) and isinstance(t.layout, DistributedLayout)


def _shared(t: Type) -> bool:
    return isinstance(t, TensorType) and isinstance(t.layout, SharedLayout)


# ---------------------------------------------------------------------------- gpu ops


@register_op("gpu.convert_layout")
def _verify_convert(op: Operation) -> None:
    expect_counts(op, 1, 1)
    src, dst = op.operand(0).type, op.result.type
    expect(op, _distributed(src) and _distributed(dst), "operand and result need distributed layouts")
    expect(op, src.shape == dst.shape and src.element == dst.element, f"cannot convert {src} to {dst}")


@register_op("gpu.local_alloc", pure=False)
def _verify_local_alloc(op: Operation) -> None:
    expect_counts(op, 0, 1)
    t = op.result.type
    expect(op, _shared(t), "result must be a tensor with a #shared layout")
    expect(op, isinstance(op.attrs.get("offset"), int), "missing int attr 'offset'")
    expect(op, op.attrs.get("bytes") == t.numel * element_bytes(t), f"bytes must be {t.numel * element_bytes(t)}")


@register_op("gpu.local_store", pure=False)
def _verify_local_store(op: Operation) -> None:
    expect_counts(op, 2, 0)
    buf, x = op.operand(0).type, op.operand(1).type
    expect(op, _shared(buf) and _distributed(x), "expects a shared buffer and a distributed tensor")
    expect(op, buf.shape == x.shape and buf.element == x.element, f"cannot store {x} into {buf}")


@register_op("gpu.local_load", pure=False)
def _verify_local_load(op: Operation) -> None:
    expect_counts(op, 1, 1)
    buf, t = op.operand(0).type, op.result.type
    expect(op, _shared(buf) and _distributed(t), "expects a shared buffer and a distributed result")
    expect(op, buf.shape == t.shape and buf.element == t.element, f"cannot load {t} from {buf}")


@register_op("gpu.barrier", pure=False)
@register_op("gpu.tma_store_wait", pure=False)
def _verify_no_operands(op: Operation) -> None:
    expect_counts(op, 0, 0)


def stage_layout(layout: SharedLayout) -> SharedLayout:
    """The layout of one stage of a multi-buffered (rank-3, stage-major) buffer in `layout`."""
    return SharedLayout(layout.vec, layout.per_phase, layout.max_phase, tuple(d - 1 for d in layout.order[:-1]),
                        layout.block)


def transposed_shared(t: TensorType) -> TensorType:
    """The rank-2 shared tensor `t` seen transposed: the same bytes (gpu.local_trans)."""
    layout = t.layout
    return TensorType(t.shape[::-1], t.element,
                      SharedLayout(layout.vec, layout.per_phase, layout.max_phase, tuple(1 - d for d in layout.order),
                                   layout.block))


def multi_buffer_layout(layout: SharedLayout) -> SharedLayout:
    """The layout of a rank-3 buffer whose stages each have the 2-D `layout`."""
    return SharedLayout(layout.vec, layout.per_phase, layout.max_phase, tuple(d + 1 for d in layout.order) + (0,),
                        layout.block)


@register_op("gpu.local_view")
def _verify_local_view(op: Operation) -> None:
    expect_counts(op, 2, 1)
    buf, stage, t = op.operand(0).type, op.operand(1).type, op.result.type
    expect(op, _shared(buf) and buf.rank == 3 and buf.layout.order[-1] == 0,
           "expects a stage-major rank-3 shared buffer")
    expect(op, stage == i32, "the stage index must be an i32 scalar")
    expect(op, _shared(t) and t.shape == buf.shape[1:] and t.element == buf.element,
           f"a stage of {buf} has shape {buf.shape[1:]}")
    expect(op, t.layout == stage_layout(buf.layout), f"a stage of {buf} has layout {stage_layout(buf.layout)}")


@register_op("gpu.local_trans")
def _verify_local_trans(op: Operation) -> None:
    expect_counts(op, 1, 1)
    t = op.operand(0).type
    expect(op, _shared(t) and t.rank == 2, "expects a rank-2 shared buffer")
    expect(op, op.result.type == transposed_shared(t), f"{t} transposed is {transposed_shared(t)}")


@register_op("gpu.async_copy", pure=False)
def _verify_async_copy(op: Operation) -> None:
    expect_counts(op, (2, 4), 0)
    view, ptrs = op.operand(0).type, op.operand(1).type
    expect(op, _shared(view) and _distributed(ptrs) and isinstance(ptrs.element, PointerType),
           "expects a shared buffer and a distributed tensor of pointers")
    expect(op, view.shape == ptrs.shape and ptrs.element.pointee == view.element, f"cannot copy {ptrs} into {view}")
    if op.num_operands > 2:
        expect(op, op.operand(2).type == with_layout(TensorType(ptrs.shape, i1), ptrs.layout),
               "the mask must be i1 in the pointers' layout")
    if op.num_operands > 3:
        expect(op, op.operand(3).type == with_layout(view, ptrs.layout), "other must be the values' type")
    vector = op.attrs.get("vector")
    expect(op, isinstance(vector, int) and vector * element_bytes(view) in (4, 8, 16),
           "vector must move 4, 8 or 16 bytes")


@register_op("gpu.async_commit", pure=False)
def _verify_async_commit(op: Operation) -> None:
    expect_counts(op, 0, 0)


@register_op("gpu.async_wait", pure=False)
def _verify_async_wait(op: Operation) -> None:
    expect_counts(op, 0, 0)
    expect(op, isinstance(op.attrs.get("pending"), int) and op.attrs["pending"] >= 0, "needs int attr 'pending' >= 0")


@register_op("gpu.dot_wait", pure=False)
def _verify_dot_wait(op: Operation) -> None:
    expect(op, isinstance(op.attrs.get("pending"), int) and op.attrs["pending"] >= 0, "needs int attr 'pending' >= 0")
    expect(op, [v.type for v in op.operands] == [r.type for r in op.results], "results are the operands' types")


register_op("gpu.fence_async_shared", pure=False)(None)


def _verify_tma(op: Operation) -> None:
    expect(op, op.num_operands >= 3 and not op.results, "expects a buffer, a tensormap and coordinates, no results")
    _verify_tma_copy(op, op.operand(0), op.operand(1), op.operands[2:])


def _verify_tma_copy(op: Operation, buffer: Value, tensormap: Value, coords: list[Value]) -> None:
    buf = buffer.type
    expect(op, _shared(buf), "the buffer must be a tensor with a #shared layout")
    expect(op, isinstance(tensormap.type, TensorMapType), "the second operand must be a tensormap")
    expect(op, len(coords) == buf.rank, f"expects {buf.rank} coordinates for a rank-{buf.rank} buffer")
    expect(op, all(v.type == i32 for v in coords), "coordinates must be i32 scalars")
    want = tma_buffer_layout(buf.shape, element_bytes(buf), bool(op.attrs.get("transposed")))
    expect(op, buf.layout == want, f"the buffer's layout must be TMA's {want}")


def tma_buffer_layout(shape: Sequence[int], elem_bytes: int, transposed: bool = False) -> SharedLayout:
    """The layout of a buffer that TMA copies fill: tma_layout's for the block; with `transposed`
    (a rank-2 buffer holding the block [b, a] as [a, b], what a tt.trans of the load would
    stage: the same bytes, its order reversed, the contiguous dimension still cut in `block`s)."""
    if not transposed:
        return tma_layout(shape, elem_bytes).shared
    layout = tma_layout(tuple(reversed(shape)), elem_bytes).shared
    return SharedLayout(layout.vec, layout.per_phase, layout.max_phase, tuple(reversed(layout.order)), layout.block)


register_op("gpu.tma_load", pure=False)(_verify_tma)
register_op("gpu.tma_store", pure=False)(_verify_tma)


def _verify_barriers(op: Operation, bars: Value) -> None:
    t = bars.type
    expect(op, _shared(t) and t.rank == 1 and t.element == i64, "the mbarriers must be a rank-1 i64 shared buffer")


@register_op("gpu.mbarrier_init", pure=False)
def _verify_mbarrier_init(op: Operation) -> None:
    expect_counts(op, 1, 0)
    _verify_barriers(op, op.operand(0))
    expect(op, isinstance(op.attrs.get("count"), int) and op.attrs["count"] >= 1, "needs int attr 'count' >= 1")


@register_op("gpu.mbarrier_inval", pure=False)
def _verify_mbarrier_inval(op: Operation) -> None:
    expect_counts(op, 1, 0)
    _verify_barriers(op, op.operand(0))


def _verify_stage_barrier(op: Operation, last: Type) -> None:
    expect_counts(op, 3, 0)
    _verify_barriers(op, op.operand(0))
    expect(op, op.operand(1).type == i32 and op.operand(2).type == last,
           f"operands: mbarriers, stage (i32), {'predicate (i1)' if last == i1 else 'phase parity (i32)'}")


@register_op("gpu.mbarrier_expect", pure=False)
def _verify_mbarrier_expect(op: Operation) -> None:
    _verify_stage_barrier(op, i1)
    expect(op, isinstance(op.attrs.get("bytes"), int) and op.attrs["bytes"] > 0, "needs int attr 'bytes' > 0")


register_op("gpu.mbarrier_wait", pure=False)(lambda op: _verify_stage_barrier(op, i32))


@register_op("gpu.mbarrier_arrive", pure=False)
def _verify_mbarrier_arrive(op: Operation) -> None:
    expect_counts(op, 2, 0)
    _verify_barriers(op, op.operand(0))
    expect(op, op.operand(1).type == i32, "operands: mbarriers, stage (i32)")


@register_op("gpu.tma_load_async", pure=False)
def _verify_tma_load_async(op: Operation) -> None:
    expect(op, op.num_operands >= 6, "expects a buffer, a tensormap, mbarriers, a stage, a predicate, coordinates")
    expect(op, not op.results, "has no results")
    _verify_tma_copy(op, op.operand(0), op.operand(1), op.operands[5:])
    _verify_barriers(op, op.operand(2))
    expect(op, op.operand(3).type == i32 and op.operand(4).type == i1, "the stage must be i32, the predicate i1")


# ------------------------------------------------------------------------ layout rules

_SAME_LAYOUT = {"tt.addptr", "tt.hint", "tt.ptr_to_int", "tt.int_to_ptr", "tt.load", "tt.atomic_rmw",
                "tt.atomic_cas", "tt.elementwise_inline_asm", "tt.map_elementwise"}
_FREE_OPERANDS = {"gpu.convert_layout", "gpu.local_store", "gpu.local_load", "gpu.local_view", "gpu.local_trans", "tt.print",
                  "tt.assert", "tt.reduce.return", "scf.if", "tt.func", "tt.return", "gpu.dot_wait"}


def is_elementwise(op: Operation) -> bool:
    """Ops whose tensor operands and results all share one shape and one layout."""
    if op.name == "arith.constant":
        return False
    return op.name.startswith(("arith.", "math.")) or op.name in _SAME_LAYOUT


def _inverse(order: list[int]) -> list[int]:
    return [order.index(d) for d in range(len(order))]


def required_operand_types(op: Operation, result_types: Optional[list[Type]] = None) -> list[Optional[Type]]:
    """The type each operand must have given `op`'s result types (None: any layout will do).

    `result_types` asks the question for other result types than the op's own.
    """
    results = result_types if result_types is not None else [r.type for r in op.results]
    out: list[Optional[Type]] = [None] * op.num_operands
    tensors = [i for i, v in enumerate(op.operands) if isinstance(v.type, TensorType)]

    def want(i: int, layout: Optional[Layout]) -> None:
        out[i] = with_layout(op.operand(i).type, layout)

    name = op.name
    if name in _FREE_OPERANDS:
        return out
    if is_elementwise(op):
        result = next((t for t in results if isinstance(t, TensorType)), None)
        for i in tensors:
            want(i, result.layout if result is not None else None)
    elif name == "tt.store":
        for i in tensors[1:]:
            want(i, layout_of(op.operand(0)))
    elif name == "tt.broadcast":
        want(0, results[0].layout)
    elif name == "tt.expand_dims":
        want(0, SliceLayout(op.attrs["axis"], results[0].layout))
    elif name in ("tt.trans", "tt.reshape"):
        t, src = results[0], op.operand(0).type
        if name == "tt.trans":
            layout = trans_layout(t.layout, t.shape, _inverse(list(op.attrs["order"])))
        else:
            layout = reshape_layout(t.layout, t.shape, src.shape)
        # the operand's own layout when it is the same map under another name
        same = isinstance(src.layout, DistributedLayout) and \
            src.layout.to_linear(src.shape) == layout.to_linear(src.shape)
        want(0, src.layout if same else layout)
    elif name == "tt.join":
        t = results[0]
        parts = split_layout(t.layout, t.shape)
        if parts is not None:
            for i in tensors:
                src = op.operand(i).type
                same = isinstance(src.layout, DistributedLayout) and \
                    src.layout.to_linear(src.shape) == parts.to_linear(src.shape)
                want(i, src.layout if same else parts)
    elif name == "tt.split":
        t, src = results[0], op.operand(0).type
        own = split_layout(src.layout, src.shape) if isinstance(src.layout, DistributedLayout) else None
        same = own is not None and own.to_linear(t.shape) == t.layout.to_linear(t.shape)
        want(0, src.layout if same else join_layout(t.layout, t.shape))
    elif name == "tt.gather":
        want(1, results[0].layout)
    elif name == "tt.histogram":
        for i in tensors[1:]:
            want(i, layout_of(op.operand(0)))
    elif name == "tt.reduce":
        first = results[0]
        parent = first.layout.parent if isinstance(first, TensorType) and \
            isinstance(first.layout, SliceLayout) else layout_of(op.operand(0))
        for i in tensors:
            want(i, parent)
    elif name == "tt.scan":
        for i in tensors:
            want(i, results[i].layout)
    elif name == "tt.dot":
        layout = results[0].layout
        want(2, layout)
        if isinstance(layout, MmaLayout) and layout.version == 2:
            width = mma_k_width(element_type(op.operand(0).type))
            want(0, DotOperandLayout(0, layout, width))
            want(1, DotOperandLayout(1, layout, width))
        elif isinstance(layout, MmaLayout) and not _shared(op.operand(0).type):
            want(0, DotOperandLayout(0, layout, mma_k_width(element_type(op.operand(0).type))))
        elif isinstance(layout, MfmaLayout):
            width = mfma_k_width(element_type(op.operand(0).type).bits)
            want(0, MfmaOperandLayout(0, layout, width))
            want(1, MfmaOperandLayout(1, layout, width))
        elif isinstance(layout, WmmaLayout):
            want(0, WmmaOperandLayout(0, layout))
            want(1, WmmaOperandLayout(1, layout))
        elif isinstance(layout, BlockedLayout):
            k = op.operand(0).type.shape[1]
            want(0, fma_operand_layout(layout, 0, k))
            want(1, fma_operand_layout(layout, 1, k))
    elif name == "gpu.async_copy":
        for i in tensors[2:]:
            want(i, layout_of(op.operand(1)))
    elif name in ("scf.for", "scf.while"):
        block = op.regions[0].block
        args = block.args[1:] if name == "scf.for" else block.args
        first = 3 if name == "scf.for" else 0
        for i, a in enumerate(args):
            out[first + i] = a.type
    elif name == "scf.yield":
        parent = op.parent_op
        if parent.name == "scf.for":
            targets = [a.type for a in parent.regions[0].block.args[1:]]
        elif parent.name == "scf.while":
            targets = [a.type for a in parent.regions[0].block.args]
        else:
            targets = [r.type for r in parent.results]
        out = list(targets)
    elif name == "scf.condition":
        out[1:] = [a.type for a in op.parent_op.regions[1].block.args]
    else:
        shaped = [t for t in results if isinstance(t, TensorType)]
        if shaped and all(op.operand(i).type.shape == shaped[0].shape for i in tensors):
            for i in tensors:
                want(i, shaped[0].layout)
    return out


def scan_layout_ok(layout: DistributedLayout, shape: tuple[int, ...], axis: int) -> bool:
    """Whether tt.scan's lowering (tile.codegen.lower_scan) can scan `axis` of a tensor in
    `layout`: the axis coordinate's bits come, from least significant up, from registers, then
    consecutive lanes, then warps, then registers again, and no bit moves along another axis too
    (an #mma accumulator, or a blocked layout after trans, may not)."""
    ll = layout.to_linear(shape)
    digits = []
    for kind, bases in (("r", ll.register_bases), ("l", ll.lane_bases), ("w", ll.warp_bases)):
        for i, basis in enumerate(bases):
            if basis[axis]:
                if any(c for d, c in enumerate(basis) if d != axis):
                    return False
                digits.append((basis[axis], kind, i))
    digits.sort()
    if [v for v, _, _ in digits] != [1 << j for j in range(len(digits))]:
        return False
    kinds = "".join(k for _, k, _ in digits)
    if kinds.lstrip("r").lstrip("l").lstrip("w").lstrip("r"):
        return False
    lanes = [i for _, k, i in digits if k == "l"]
    return lanes == list(range(lanes[0], lanes[0] + len(lanes))) if lanes else True


def forward_result_layouts(op: Operation, index: int, layout: DistributedLayout) -> Optional[list[Optional[Layout]]]:
    """The layouts `op`'s results take when operand `index` has `layout` and the op adapts to it
    (None where the op keeps its own layouts: memory ops, control flow, dot...)."""
    name = op.name
    results = [r.type for r in op.results]
    if is_elementwise(op) and name not in ("tt.load", "tt.atomic_rmw", "tt.atomic_cas"):
        return [layout if isinstance(t, TensorType) else None for t in results]
    if name == "gpu.convert_layout" and isinstance(results[0].layout, (DotOperandLayout, MfmaOperandLayout,
                                                                               WmmaOperandLayout)):
        return None  # a dot's operand fragments: the conversion stays where it is (maybe hoisted)
    if name == "gpu.convert_layout":
        return [layout] * len(results)
    if name == "tt.scan":
        return [layout] * len(results) if scan_layout_ok(layout, results[0].shape, op.attrs["axis"]) else None
    if name == "tt.broadcast":
        return [layout] if layout.shape_generic else None
    if name == "tt.expand_dims":
        ok = isinstance(layout, SliceLayout) and layout.dim == op.attrs["axis"]
        return [layout.parent] if ok else None
    if name == "tt.reduce":
        if not layout.shape_generic:  # a #slice needs its parent at the shape with a size-1 axis
            return None
        sliced = SliceLayout(op.attrs["axis"], layout)
        return [sliced if isinstance(t, TensorType) else None for t in results]
    if name == "tt.trans":
        return [trans_layout(layout, op.operand(0).type.shape, op.attrs["order"])]
    if name == "tt.reshape":
        return [reshape_layout(layout, op.operand(0).type.shape, op.result.type.shape)]
    if name == "tt.join":
        return [join_layout(layout, op.operand(0).type.shape)]
    if name == "tt.split":
        parts = split_layout(layout, op.operand(0).type.shape)
        return [parts, parts] if parts is not None else None
    if name == "tt.gather":
        return [layout] if index == 1 else None
    return None


def insert_convert(value: Value, layout: Layout, before: Operation) -> Value:
    """A gpu.convert_layout of `value` to `layout`, placed before `before`."""
    cvt = Operation("gpu.convert_layout", [value], [with_layout(value.type, layout)], loc=before.loc)
    before.parent.insert_before(before, cvt)
    return cvt.result


def legalize(func: Operation) -> int:
    """Insert a gpu.convert_layout before every operand whose type breaks its op's layout rule.

    Returns how many were inserted.
    """
    count = 0
    for op in list(func.walk()):
        for i, t in enumerate(required_operand_types(op)):
            v = op.operand(i)
            if t is not None and v.type != t and isinstance(t, TensorType):
                op.set_operand(i, insert_convert(v, t.layout, op))
                count += 1
    return count


def verify_layouts(func: Operation) -> None:
    """Check gpu-level invariants: func attrs set, every tensor has a layout of the func's warp
    count and warp size, and every op's operands follow its layout rule."""
    num_warps, tpw = func.attrs.get("num_warps"), func.attrs.get("threads_per_warp")
    expect(func, isinstance(num_warps, int) and isinstance(tpw, int) and isinstance(func.attrs.get("target"), str),
           "gpu IR needs func attrs num_warps, threads_per_warp and target")

    def check_type(op: Operation, t: Type) -> None:
        if not isinstance(t, TensorType):
            return
        if isinstance(t.layout, SharedLayout):
            return
        expect(op, isinstance(t.layout, DistributedLayout), f"tensor {t} has no layout")
        expect(op, t.layout.num_warps == num_warps and t.layout.warp_size == tpw,
               f"layout of {t} is not for {num_warps} warps of {tpw} threads")
        t.layout.to_linear(t.shape)

    def check_block(block: Block, owner: Operation) -> None:
        for a in block.args:
            check_type(owner, a.type)

    for op in func.walk():
        for region in op.regions:
            for block in region.blocks:
                check_block(block, op)
        for r in op.results:
            check_type(op, r.type)
        for i, t in enumerate(required_operand_types(op)):
            if t is not None and op.operand(i).type != t:
                raise VerificationError(op, f"operand {i} is {op.operand(i).type}, its layout rule wants {t}")
        if op.name == "tt.dot" and isinstance(op.result.type.layout, MmaLayout) and op.result.type.layout.version == 3:
            expect(op, _shared(op.operand(1).type), "a dot with a #mma version 3 result (wgmma) reads B from a "
                                                    "#shared buffer")
        if op.name == "tt.reduce" and isinstance(op.results[0].type, TensorType):
            layout = op.results[0].type.layout
            expect(op, isinstance(layout, SliceLayout) and layout.dim == op.attrs["axis"],
                   "a reduce's tensor result needs a #slice layout along its axis")


__all__ = ["element_bytes", "layout_of", "with_layout", "is_elementwise", "required_operand_types",
           "forward_result_layouts", "insert_convert", "legalize", "verify_layouts", "mma_k_width", "stage_layout",
           "multi_buffer_layout"]
