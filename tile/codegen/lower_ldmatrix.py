"""Lowering of gpu.local_load into tensor-core operand layouts: ldmatrix where it fits, else
ld.shared; and of gpu.local_store from them: stmatrix where it fits (sm_90), else st.shared.

Before (the A tile of a dot, f16, in a swizzled shared buffer; #A a dot-operand layout whose
registers [2j, 2j+2) pack into the j-th 32-bit mma operand register, "word" j):

    %a = gpu.local_load %view : tensor<64x32xf16, #A>

After (per thread; one ldmatrix.x4 per aligned group of four words):

    %t = ...from %tid...                                  // once, at the top of the function
    %x = arith.add %view_base, %t : i32                   // once per view and swizzle phase
    %w0, %w1, %w2, %w3 = simt.ldmatrix %x {num = 4, offset = 1024, trans = false} : i32, i32, i32, i32
    %h0, %h1 = simt.unpack %w0 : f16, f16                 // the registers of #A (the dot packs them back)
  printed as
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r9, %r10, %r11, %r12}, [%r8+1024];

Matching, from the layouts alone (LinearLayout of the result, SharedLayout.offset_of): a word
holds kw = 4 / element-bytes elements. ldmatrix gives lane l, for matrix i, the 4 bytes at
row(l >> 2) + 4 (l & 3); with .trans (16-bit elements) the two elements at rows 2 (l & 3) and
2 (l & 3) + 1, byte 2 (l >> 2); row r of matrix i is the 16-byte aligned address lane 8i + r
supplies. A group of words matches when every thread's elements sit exactly there, and the
address each lane supplies is XOR-linear in %tid: T(tid) ^ C, so T is computed once and C is
an immediate (see lower_shape.shared_address). This finds A and B in either order, with or
without swizzle (.trans where the matrix rows run along the other dimension, e.g. B stored
N-major); words that no ldmatrix fills (int8 B stored N-major, tf32 B stored N-major) load
with ld.shared.b32 when their elements are contiguous, else one ld.shared per element.

stmatrix (sm_90) is ldmatrix's mirror, without .trans: a local_store of 16-bit elements whose
registers, in groups of four words, sit where stmatrix.x4 takes them (an mma or wgmma
accumulator's fragments: words j..j+3 are the 8x8 blocks at rows +0/+8 and columns +0/+8), every
thread owning its elements (no replicas), stores each group with one instruction, where
st.shared would take four (the f16 epilogue of a matmul: 16 stmatrix.x4 instead of 64 st.shared.b32):

    simt.stmatrix %x, %w0, %w1, %w2, %w3 {num = 4, offset = 512}
  printed as
    stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r8+512], {%r1, %r2, %r3, %r4};
A store that does not fit entirely keeps the st.shared path.

When the load's only user is a tt.dot further down the same block, with only pure ops and
other loads in between, nothing is emitted here: the dot asks for the words of each k-step
(`SharedOperand.get`), so the loads of step k + 1 interleave with the mma of step k and
only two steps of operands are live (what Triton's prefetch pass does by splitting the dot).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..ir.core import Operation, Value
from ..ir.gpu_ops import element_bytes
from ..ir.layouts import SharedLayout
from ..ir.ops import is_pure
from ..ir.types import DType, TensorType, element_type, i1, i32
from .lower_core import Lowering, LoweringError, lowers
from .lower_shape import lower_local_load, lower_local_store, shared_address

Group = tuple[str, tuple[int, ...], tuple[int, ...], int]  # (kind, words, tid images, const) in bytes


def is_dot_operand(layout: object) -> bool:
    """A tensor-core operand layout (T1's DotOperandLayout: op_idx and k_width)."""
    return hasattr(layout, "op_idx") and hasattr(layout, "k_width")


def xor_linear(values: np.ndarray) -> Optional[tuple[int, list[int]]]:
    """(values[0], images of each index bit) if values[i] = values[0] ^ XOR of images of i's set bits."""
    n = len(values)
    images = [int(values[1 << b] ^ values[0]) for b in range(n.bit_length() - 1)]
    rebuilt = np.full(n, int(values[0]), dtype=np.int64)
    idx = np.arange(n)
    for b, img in enumerate(images):
        rebuilt[(idx >> b & 1).astype(bool)] ^= img
    return (int(values[0]), images) if (rebuilt == values).all() else None


def _match(addr: np.ndarray, words: Sequence[int], kw: int, eb: int, trans: bool) -> Optional[np.ndarray]:
    """The byte address each thread supplies to an ldmatrix.x{len(words)} that fills `words`, or None.

    addr: byte offset of every (thread, register) [threads, registers]."""
    m = len(words)
    threads = addr.shape[0]
    a = addr[:, [kw * j + e for j in words for e in range(kw)]].reshape(threads // 32, 32, m, kw)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    if not trans:
        rows = a[:, 0:32:4, :, 0]                                           # [warp, row, matrix]
        want = rows[:, g, :, None] + (4 * t)[None, :, None, None] + (eb * np.arange(kw))[None, None, None, :]
    elif eb == 2:
        rows = np.stack([a[:, r >> 1, :, r & 1] for r in range(8)], axis=1)  # [warp, row, matrix]
        want = np.stack([rows[:, 2 * t + e, :] for e in range(2)], axis=-1) + (2 * g)[None, :, None, None]
    else:
        return None
    if (want != a).any() or (rows % 16).any():
        return None
    return rows[:, lane & 7, (lane >> 3) % m].reshape(threads)


def thread_addresses(ctx: Lowering, layout: SharedLayout, t: TensorType) -> tuple[np.ndarray, list[int]]:
    """The byte offset in the buffer of every (thread, register) of a value of type `t`, and the
    %tid images (elements) whose XOR gives each thread's part."""
    info = ctx.info(t)
    reg_off = np.array([layout.offset_of(c, t.shape) for c in info.reg_coords], dtype=np.int64)
    tid_images = [layout.offset_of(b, t.shape) for b in info.tid_bases[:ctx.lane_bits + ctx.warp_bits]]
    thr = np.zeros(ctx.threads, dtype=np.int64)
    for b, img in enumerate(tid_images):
        thr[(np.arange(ctx.threads) >> b & 1).astype(bool)] ^= img
    return (reg_off[None, :] ^ thr[:, None]) * element_bytes(t), tid_images


def stmatrix_groups(ctx: Lowering, buf: Value, t: TensorType) -> Optional[list[tuple[tuple[int, ...], list[int], int]]]:
    """(words, tid images in bytes, constant byte offset) of the stmatrix.x4 of each group of four
    words of a local_store of `t` into `buf`, or None where the store does not fit them all."""
    layout, info = buf.type.layout, ctx.info(t)
    if ctx.sm < 90 or element_bytes(t) != 2 or element_type(t) == i1 or not isinstance(layout, SharedLayout) or \
            ctx.smem_align.get(ctx.get(buf)[0], 1) < 16 or info.replicated_tid_mask or info.num_regs % 8 or \
            any(c != r for r, c in enumerate(info.canonical_regs())):
        return None
    addr, _ = thread_addresses(ctx, layout, t)
    groups = []
    for first in range(0, info.num_regs // 2, 4):
        words = tuple(range(first, first + 4))
        supplied = _match(addr, words, 2, 2, trans=False)
        fit = xor_linear(supplied) if supplied is not None else None
        if fit is None:
            return None
        groups.append((words, fit[1], fit[0]))
    return groups


@lowers("gpu.local_store")
def _lower_local_store(ctx: Lowering, op: Operation) -> None:
    buf, x = op.operands
    groups = stmatrix_groups(ctx, buf, x.type)
    if groups is None:
        lower_local_store(ctx, op)
        return
    vals, base = ctx.get(x), ctx.get(buf)[0]
    ctx.barrier_after_scratch()
    for words, images, const in groups:
        span = 0
        for img in images:
            span |= img
        b, off = ctx.split(shared_address(ctx, base, ctx.from_tid(images), span, const))
        packed = [ctx.pack(vals[2 * j:2 * j + 2], i32) for j in words]
        ctx.effect("simt.stmatrix", [b] + packed, num=len(words), offset=off)
    ctx.smem_pending = True


class SharedOperand:
    """A gpu.local_load whose registers are loaded group of words by group, on demand."""

    def __init__(self, ctx: Lowering, op: Operation):
        self.ctx, self.op = ctx, op
        buf, t = op.operand(0), op.result.type
        layout = buf.type.layout
        if not isinstance(layout, SharedLayout):
            raise LoweringError(op, "expects a buffer with a #shared layout")
        self.el: DType = element_type(t)
        self.eb = element_bytes(t)
        self.kw = 4 // self.eb
        info = ctx.info(t)
        self.base = ctx.get(buf)[0]
        self.reg_off = np.array([layout.offset_of(c, t.shape) for c in info.reg_coords], dtype=np.int64)
        self.addr, self.tid_images = thread_addresses(ctx, layout, t)
        self.values: list[Optional[Value]] = [None] * info.num_regs
        self.group_of: dict[int, Group] = {}
        words = list(range(info.num_regs // self.kw))
        if is_dot_operand(t.layout):  # words of one k-step first, so that a group feeds one step's mma
            k_dim, k_instr = 1 - t.layout.op_idx, 8 * self.kw
            words.sort(key=lambda j: (info.reg_coords[self.kw * j][k_dim] // k_instr, j))
        for g in self._groups(words):
            for j in g[1]:
                self.group_of[j] = g

    def _groups(self, words: list[int]) -> list[Group]:
        """ldmatrix groups of consecutive `words` (x4, then x2, x1), the rest as single words or
        pairs (all of them on AMD targets, which have no ldmatrix: _word_groups)."""
        ldmatrix = self.ctx.facts.isa == "ptx" and self.ctx.smem_align.get(self.base, 1) >= 16 and \
            self.kw * self.eb == 4
        out: list[Group] = []
        todo = [words[j:j + 4] for j in range(0, len(words), 4)]
        for m in (4, 2, 1):
            left = []
            for words in todo:
                for i in range(0, len(words), m):
                    part = words[i:i + m]
                    found = self._ldmatrix(part) if ldmatrix and len(part) == m else None
                    if found is None:
                        left.append(part)
                    else:
                        out.append(found)
            todo = left
        return out + self._word_groups([j for words in todo for j in words])

    def _word_groups(self, words: list[int]) -> list[Group]:
        """`words` one by one, except that on targets without ldmatrix two adjacent words that sit
        together, 8-byte aligned, are one 8-byte read (one ds_read_b64 instead of two
        ds_read_b32: the b32 reads of an operand's 8-byte run find their first words all in even
        banks, 2-way; the b64 read's phases of 16 lanes are conflict-free in the same buffer)."""
        paired = self.ctx.facts.isa != "ptx" and self.ctx.smem_align.get(self.base, 1) >= 8
        out: list[Group] = []
        k = 0
        while k < len(words):
            j = words[k]
            if paired and k + 1 < len(words) and words[k + 1] == j + 1 and self._adjacent(j, 2):
                out.append(("words", (j, j + 1), (), 0))
                k += 2
            else:
                out.append(("words", (j,), (), 0))
                k += 1
        return out

    def _adjacent(self, j: int, count: int) -> bool:
        """Whether words j .. j + count - 1 sit one after another in every thread, aligned to their size."""
        offs = [int(o) for o in self.reg_off[self.kw * j:self.kw * (j + count)]]
        span = 0
        for img in self.tid_images:
            span |= img * self.eb
        size = 4 * count
        return offs == list(range(offs[0], offs[0] + self.kw * count)) and (offs[0] * self.eb) % size == 0 and \
            span % size == 0

    def _ldmatrix(self, words: list[int]) -> Optional[Group]:
        for trans in (False, True):
            supplied = _match(self.addr, words, self.kw, self.eb, trans)
            fit = xor_linear(supplied) if supplied is not None else None
            if fit is not None:
                return ("ldmatrix.trans" if trans else "ldmatrix", tuple(words), tuple(fit[1]), fit[0])
        return None

    # emission -----------------------------------------------------------------------------------
    def get(self, regs: Sequence[int]) -> list[Value]:
        """The values of registers `regs`, loading the groups that hold them where not loaded yet."""
        for r in regs:
            if self.values[r] is None:
                self._emit(self.group_of[r // self.kw])
        return [self.values[r] for r in regs]

    def all(self) -> list[Value]:
        return self.get(range(len(self.values)))

    def _address(self, images: Sequence[int], const: int) -> Value:
        ctx = self.ctx
        span = 0
        for img in images:
            span |= img
        return shared_address(ctx, self.base, ctx.from_tid(images), span, const)

    def _emit(self, group: Group) -> None:
        ctx = self.ctx
        kind, words, images, const = group
        if kind.startswith("ldmatrix"):
            base, off = ctx.split(self._address(images, const))
            ld = ctx.effect("simt.ldmatrix", [base], [i32] * len(words), num=len(words),
                            trans=kind.endswith("trans"), offset=off)
            for j, w in zip(words, ld.results):
                self._unpack(j, w)
            return
        if len(words) == 2:   # an 8-byte read of two adjacent words (_word_groups)
            tid_bytes = [img * self.eb for img in self.tid_images]
            base, off = ctx.split(self._address(tid_bytes, int(self.reg_off[self.kw * words[0]]) * self.eb))
            ld = ctx.effect("simt.ld_shared", [base, ctx.const(True, i1)], [i32, i32], vector=2, offset=off)
            for j, w in zip(words, ld.results):
                self._unpack(j, w)
            return
        (j,) = words
        regs = range(self.kw * j, self.kw * j + self.kw)
        offs = [int(self.reg_off[r]) for r in regs]
        tid_bytes = [img * self.eb for img in self.tid_images]
        span = 0
        for img in tid_bytes:
            span |= img
        whole = offs == list(range(offs[0], offs[0] + self.kw)) and (offs[0] * self.eb) % 4 == 0 and span % 4 == 0
        if whole:
            addr = shared_address(ctx, self.base, ctx.from_tid(tid_bytes), span, offs[0] * self.eb)
            word_t = self.el if self.kw == 1 else i32
            self._unpack(j, self._ld_shared(addr, word_t))
            return
        for r, o in zip(regs, offs):
            addr = shared_address(ctx, self.base, ctx.from_tid(tid_bytes), span, o * self.eb)
            self.values[r] = self._ld_shared(addr, self.el)

    def _ld_shared(self, addr: Value, t) -> Value:
        base, off = self.ctx.split(addr)
        return self.ctx.effect("simt.ld_shared", [base, self.ctx.const(True, i1)], [t], vector=1, offset=off).result

    def _unpack(self, j: int, word: Value) -> None:
        ctx, kw = self.ctx, self.kw
        if kw == 1:
            vals = [word if word.type == self.el else ctx.op("arith.bitcast", [word], self.el)]
        else:
            vals = ctx.ops("simt.unpack", [word], [self.el] * kw)
        self.values[kw * j:kw * j + kw] = vals


def _feeds_dot(op: Operation) -> Optional[Operation]:
    """The tt.dot that is the load's only user (as A or B), if any."""
    uses = op.result.uses
    if len(uses) != 1 or uses[0][0].name != "tt.dot" or uses[0][1] > 1:
        return None
    return uses[0][0]


def _deferrable(op: Operation, dot: Operation) -> bool:
    """Whether only pure ops and other shared loads lie between `op` and `dot` in one block."""
    if dot.parent is not op.parent:
        return False
    ops = op.parent.ops
    between = ops[ops.index(op) + 1:ops.index(dot)]
    return all(is_pure(x) or x.name == "gpu.local_load" for x in between)


@lowers("gpu.local_load")
def _lower_local_load(ctx: Lowering, op: Operation) -> None:
    t = op.result.type
    dot = _feeds_dot(op)
    el = element_type(t)
    packs = isinstance(el, DType) and el != i1 and el.bits in (8, 16, 32) and \
        ctx.info(t).num_regs % (32 // el.bits) == 0
    if not (packs and isinstance(t, TensorType) and (is_dot_operand(t.layout) or dot is not None)):
        lower_local_load(ctx, op)
        return
    ctx.barrier_after_scratch()
    operand = SharedOperand(ctx, op)
    ctx.smem_pending = True
    if dot is not None and _deferrable(op, dot):
        ctx.deferred[op.result] = operand
    else:
        ctx.set(op.result, operand.all())


__all__ = ["SharedOperand", "is_dot_operand", "xor_linear"]
