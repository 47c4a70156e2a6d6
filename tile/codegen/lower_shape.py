"""Lowering of shape ops and layout changes that stay in registers, and of shared-memory buffers.

tt.broadcast, tt.expand_dims, tt.reshape, tt.trans, tt.join, tt.split and gpu.convert_layout
(kinds "noop" and "registers") move no data between threads: the gpu passes chose layouts in
which every result element sits in the thread that holds the operand element it comes from.
The lowering only renames registers, from a compile-time table:

    %b = tt.broadcast %a : tensor<1x64xf32, #L> -> tensor<32x64xf32, #L>
  result register r takes operand register src[r], where the operand register holds the
  element the result's element r maps to (broadcast dimensions set to 0)

A conversion that would move data between threads raises LoweringError (the gpu passes turn
those into gpu.local_store / gpu.barrier / gpu.local_load first).

gpu.local_store / local_load address element (reg, lane, warp) of a #shared buffer at
offset R[reg] ^ T(lane, warp) (the layout's swizzled offset is XOR-linear), vectorized over
registers whose offsets are consecutive:

    gpu.local_store %buf, %x    ->   @%p st.shared.v4.f32 [%r7+512], {%f1, %f2, %f3, %f4};

The register constant R[reg] splits into the bits T may set (XORed into T once, at the top of
the function: `shared_address`) and the rest (an immediate). gpu.local_load into tensor-core
operand layouts goes through lower_ldmatrix, which registers the op and calls
`lower_local_load` here for every other layout.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..ir.core import Operation, Value
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import SharedLayout
from ..ir.types import TensorType, element_type, i1, i32, u8
from .lower_core import LayoutInfo, Lowering, LoweringError, lowers
from .lower_elementwise import select
from .lower_memory import pack_words, split_access, unpack_words

Coord = tuple[int, ...]


def register_map(src: LayoutInfo, dst: LayoutInfo, to_src: Callable[[Coord], Coord], op: Operation) -> list[int]:
    """For each register of `dst`, the register of `src` holding its element in the same thread."""
    for bit, (bs, bd) in enumerate(zip(src.tid_bases, dst.tid_bases)):
        if to_src(bd) != tuple(bs):
            raise LoweringError(op, f"thread bit {bit} holds different elements in the operand and result layouts; "
                                    "this needs a layout conversion through shared memory")
    index: dict[Coord, int] = {}
    for r, c in enumerate(src.reg_coords):
        index.setdefault(c, r)
    out = []
    for c in dst.reg_coords:
        s = index.get(to_src(c))
        if s is None:
            raise LoweringError(op, f"element {c} is not in the operand's registers of the same thread")
        out.append(s)
    return out


def _rename(ctx: Lowering, op: Operation, to_src: Callable[[Coord], Coord]) -> None:
    src_t, dst_t = op.operand(0).type, op.result.type
    regs = ctx.get(op.operand(0))
    mapping = register_map(ctx.info(src_t), ctx.info(dst_t), to_src, op)
    ctx.set(op.result, [regs[s] for s in mapping])


@lowers("tt.broadcast")
def _lower_broadcast(ctx: Lowering, op: Operation) -> None:
    shape = op.operand(0).type.shape
    _rename(ctx, op, lambda c: tuple(0 if n == 1 else x for x, n in zip(c, shape)))


@lowers("tt.expand_dims")
def _lower_expand_dims(ctx: Lowering, op: Operation) -> None:
    axis = op.attrs["axis"]
    _rename(ctx, op, lambda c: tuple(c[:axis]) + tuple(c[axis + 1:]))


@lowers("tt.trans")
def _lower_trans(ctx: Lowering, op: Operation) -> None:
    order = list(op.attrs["order"])
    inverse = [order.index(d) for d in range(len(order))]
    _rename(ctx, op, lambda c: tuple(c[inverse[d]] for d in range(len(order))))


def _row_major(coord: Sequence[int], shape: Sequence[int]) -> int:
    index = 0
    for c, n in zip(coord, shape):
        index = index * n + c
    return index


def _unravel(index: int, shape: Sequence[int]) -> Coord:
    out = []
    for n in reversed(shape):
        out.append(index % n)
        index //= n
    return tuple(reversed(out))


@lowers("tt.reshape")
def _lower_reshape(ctx: Lowering, op: Operation) -> None:
    src_shape, dst_shape = op.operand(0).type.shape, op.result.type.shape
    _rename(ctx, op, lambda c: _unravel(_row_major(c, dst_shape), src_shape))


def _minor_pair_map(ctx: Lowering, op: Operation, pairs: Value, part: Value) -> list[int]:
    """For each register of the [..., 2] tensor `pairs`, the register of `part` (shape [...]) that
    holds its element in the same thread with the minor coordinate dropped."""
    whole, half = ctx.info(pairs.type), ctx.info(part.type)
    for bit, (bw, bh) in enumerate(zip(whole.tid_bases, half.tid_bases)):
        if bw[-1] or tuple(bw[:-1]) != tuple(bh):
            raise LoweringError(op, f"thread bit {bit} moves along the joined dimension or differs between the "
                                    "layouts; this needs a layout conversion first")
    index: dict[Coord, int] = {}
    for r, c in enumerate(half.reg_coords):
        index.setdefault(tuple(c), r)
    out = []
    for c in whole.reg_coords:
        r = index.get(tuple(c[:-1]))
        if r is None:
            raise LoweringError(op, f"element {c} is not in the registers of the same thread")
        out.append(r)
    return out


@lowers("tt.join")
def _lower_join(ctx: Lowering, op: Operation) -> None:
    """Result register r holds (c, k): operand k's register holding c."""
    halves = [ctx.get(v) for v in op.operands]
    mapping = _minor_pair_map(ctx, op, op.result, op.operand(0))
    minor = [c[-1] for c in ctx.info(op.result.type).reg_coords]
    ctx.set(op.result, [halves[k][r] for k, r in zip(minor, mapping)])


@lowers("tt.split")
def _lower_split(ctx: Lowering, op: Operation) -> None:
    """Result k takes the operand's registers holding (c, k)."""
    pairs = op.operand(0)
    regs = ctx.get(pairs)
    mapping = _minor_pair_map(ctx, op, pairs, op.results[0])
    minor = [c[-1] for c in ctx.info(pairs.type).reg_coords]
    for k, result in enumerate(op.results):
        by_element = {r: regs[w] for w, (r, m) in enumerate(zip(mapping, minor)) if m == k}
        if len(by_element) != ctx.info(result.type).num_regs:
            raise LoweringError(op, "the operand's registers do not hold every element of the results")
        ctx.set(result, [by_element[r] for r in range(len(by_element))])


@lowers("gpu.convert_layout")
def _lower_convert_layout(ctx: Lowering, op: Operation) -> None:
    if ctx.info(op.operand(0).type).ll == ctx.info(op.result.type).ll:
        ctx.set(op.result, ctx.get(op.operand(0)))
        return
    _rename(ctx, op, lambda c: tuple(c))


# ------------------------------------------------------------------------------ shared memory


def shared_vector(offsets: Sequence[int], thread_span: int, elem_bytes: int, max_values: int = 4) -> int:
    """Largest V (<= max_values, <= 16 bytes) such that aligned groups of V registers have offsets
    o, o+1, ..., o+V-1 with o a multiple of V that T(tid) does not disturb."""
    v = max_values
    while v > 1:
        ok = v * elem_bytes <= 16 and len(offsets) % v == 0 and thread_span & (v - 1) == 0 and all(
            offsets[r] % v == 0 and all(offsets[r + j] == offsets[r] + j for j in range(v))
            for r in range(0, len(offsets), v))
        if ok:
            return v
        v //= 2
    return 1


def _shared_access(ctx: Lowering, buf: Value, t: TensorType) -> tuple[LayoutInfo, list[int], int, Value, int]:
    """(info, per-register element offsets, thread span, byte offset of T(tid), element bytes)."""
    layout = buf.type.layout
    if not isinstance(layout, SharedLayout):
        raise LoweringError(buf.owner_op, "expects a buffer with a #shared layout")
    info = ctx.info(t)
    elem_bytes = element_bytes(t)
    reg_offsets = [layout.offset_of(c, t.shape) for c in info.reg_coords]
    tid_offsets = [layout.offset_of(b, t.shape) for b in info.tid_bases]
    span = 0
    for o in tid_offsets:
        span |= o
    thread_bytes = ctx.mul(ctx.from_tid(tid_offsets), ctx.const(elem_bytes, i32))
    return info, reg_offsets, span, thread_bytes, elem_bytes


def shared_address(ctx: Lowering, base: Value, thread_bytes: Value, span_bytes: int, const_bytes: int) -> Value:
    """base + (T ^ C) for a per-thread byte offset T whose bits lie in `span_bytes` and a register
    constant C: the bits of C inside the span are XORed into T (thread-invariant: computed once,
    at the top of the function), the others are an add, which the memory op takes as an
    immediate. Per distinct overlap, one add of the base remains where the base is known."""
    inside, outside = const_bytes & span_bytes, const_bytes & ~span_bytes
    t = ctx.op("arith.xor", [thread_bytes, ctx.const(inside, i32)], i32) if inside else thread_bytes
    return ctx.add(ctx.add(base, t), ctx.const(outside, i32))


def _address(ctx: Lowering, base: Value, thread_bytes: Value, span: int, offset: int, elem_bytes: int) -> Value:
    """base + (T ^ offset) * elem_bytes (offset and span in elements)."""
    return shared_address(ctx, base, thread_bytes, span * elem_bytes, offset * elem_bytes)


def alignment(n: int) -> int:
    """The largest power of two dividing n, at most 16 (the alignment of dynamic shared memory)."""
    return min(16, n & -n) if n else 16


@lowers("gpu.local_alloc")
def _lower_local_alloc(ctx: Lowering, op: Operation) -> None:
    offset = op.attrs.get("offset", -1)
    if offset < 0:
        raise LoweringError(op, "buffer has no offset: run the shared-memory allocator first")
    addr = ctx.op("simt.smem_addr", [], i32, offset=offset)
    ctx.smem_align[addr] = alignment(offset)
    ctx.set(op.result, [addr])


def _aligned_values(ctx: Lowering, base: Value, elem_bytes: int) -> int:
    """How many elements one access may move from a buffer at `base`: a vector access must be
    aligned to its size, and a buffer's offset may be aligned to less than 16 bytes."""
    return max(1, min(16, ctx.smem_align.get(base, 16) // elem_bytes))


def lower_local_store(ctx: Lowering, op: Operation) -> None:
    """gpu.local_store from any distributed layout with st.shared (lower_ldmatrix registers the op)."""
    buf, x = op.operands
    el = element_type(x.type)
    info, offsets, span, thread_bytes, nbytes = _shared_access(ctx, buf, x.type)
    base = ctx.get(buf)[0]
    vals = ctx.get(x)
    if el == i1:
        vals = [select(ctx, v, ctx.const(1, u8), ctx.const(0, u8)) for v in vals]
    owner = ctx.owner_pred(info)
    canon = info.canonical_regs()
    vec = shared_vector(offsets, span, nbytes, max_values=_aligned_values(ctx, base, nbytes))
    moved_t, count, per = split_access(u8 if el == i1 else el, vec)
    ctx.barrier_after_scratch()
    for r in range(0, info.num_regs, vec):
        if canon[r] != r:
            continue
        addr = _address(ctx, base, thread_bytes, span, offsets[r], nbytes)
        b, off = ctx.split(addr)
        group = vals[r:r + vec]
        if per > 1:
            group = pack_words(ctx, group, moved_t, per)
        ctx.effect("simt.st_shared", [b, owner] + group, vector=count, offset=off)
    ctx.smem_pending = True


def lower_local_load(ctx: Lowering, op: Operation) -> None:
    """gpu.local_load into any distributed layout with ld.shared (lower_ldmatrix registers the op)."""
    buf = op.operand(0)
    t = op.result.type
    el = element_type(t)
    info, offsets, span, thread_bytes, nbytes = _shared_access(ctx, buf, t)
    base = ctx.get(buf)[0]
    vec = shared_vector(offsets, span, nbytes, max_values=_aligned_values(ctx, base, nbytes))
    mem_el = u8 if el == i1 else el
    moved_t, count, per = split_access(mem_el, vec)
    ctx.barrier_after_scratch()
    out: list[Value] = []
    for r in range(0, info.num_regs, vec):
        addr = _address(ctx, base, thread_bytes, span, offsets[r], nbytes)
        b, off = ctx.split(addr)
        ld = ctx.effect("simt.ld_shared", [b, ctx.const(True, i1)], [moved_t] * count, vector=count, offset=off)
        if per > 1:
            out += unpack_words(ctx, list(ld.results), mem_el, per)
        else:
            out += ld.results
    if el == i1:
        out = [ctx.op("arith.cmp", [v, ctx.const(0, u8)], i1, predicate="ne") for v in out]
    ctx.set(op.result, out)
    ctx.smem_pending = True


@lowers("gpu.barrier", "tt.debug_barrier")
def _lower_barrier(ctx: Lowering, op: Operation) -> None:
    ctx.barrier()
