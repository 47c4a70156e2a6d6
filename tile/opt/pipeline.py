"""Software pipelining: the loads feeding tt.dot in an scf.for become cp.async copies (or TMA
copies: the TMA ring below) issued num_stages - 1 iterations ahead into num_stages buffers.

Candidates: a tt.load at the top of a loop body whose uses store it (or its tt.trans, as for
attention's K^T: the copy then moves through transposed pointers) into buffers
(convert-through-shared's operand staging) that are only read into #dot_op fragments or by
wgmma, directly or through a gpu.local_trans (a tile read by two dots, once transposed: Q^T and
dO in attention's backward, which share-transposed-buffers staged once). Where such a tile has
two buffers (their layouts differ), it is copied into each, unless those rings would overflow
the target's shared memory: it then stays synchronous. The copy must move 4, 8 or 16 bytes (`vector` * element bytes) and `other` must
be zero or absent (a masked-off element of an async copy is zero-filled). The loop's step
must be a positive constant. The ops computing the loads' operands ("stage 0": pointers, masks and, through the
loop-carried values they read, e.g. the advanced pointers, their updates) must be pure and free
of regions; the loop-carried values they need are carried num_stages - 1 iterations ahead,
so they must not be read by anything else nor used after the loop. Otherwise, or with
num_stages < 2, the loop keeps its synchronous staging (store, barrier, load each iteration).
S is the loop's own `num_stages` attr (from `tl.range(..., num_stages=S)`, as in Triton) where
it has one, else the kernel's num_stages.

With S = num_stages, each buffer becomes a rank-3 allocation of S stages before the loop. A
prologue computes stage 0 for iterations 0 .. S-2 and issues their copies into stages 0 .. S-2
(one commit group per iteration); the copies of iterations that do not exist (iv >= ub) are
masked off entirely. In the loop, iteration i (stage index %s = i mod S, an i32 iter arg; every
"(%s + k) rem S" below is emitted as a compare and select, %s + k - S where %s + k >= S, since
0 <= %s, k < S: a division by a constant S that is not a power of two costs several instructions
per iteration):
    gpu.async_wait {pending = S-2}          iteration i's group has landed (for this thread)
    (gpu.barrier, placed by insert-barriers: the other threads' copies too; and every warp has
     finished reading stage (i-1) mod S, which is overwritten next)
    issue the copies of iteration i+S-1 into stage (%s + S-1) mod S, then gpu.async_commit
    local_load the fragments from stage %s
    tt.dot ...
The copies go first so that they are in flight as early as possible, and so that nothing with
side effects separates the local_loads from their dot: the lowering then loads the fragments
one k-step ahead of the mma that use them (tile/codegen/lower_ldmatrix.py), which is the
register prefetch of Triton's Prefetch pass.
After the loop, gpu.async_wait {pending = 0} lets the (zero-filling) copies of the iterations
past the end land before their bytes are reused.

wgmma dots (sm_90a) read their operand buffers themselves, so a buffer's readers may also be
wgmma tt.dot ops (they then read the stage's gpu.local_view). Such a dot whose accumulator is only
carried around the loop (the block argument feeds only the dot, the dot's result only the
scf.yield; f32 or i32) and whose A is in shared memory too (registers would be rewritten under
it) becomes asynchronous ({is_async}): its wgmma run while the next copies are
issued, which then come after it, behind a gpu.dot_wait {pending = number of such dots} that
retires the previous iteration's dots (whose stage the copies overwrite). A gpu.dot_wait
{pending = 0} of the loop's results follows the loop. The loop body of a 3-stage wgmma loop:
    gpu.async_wait {pending = 1}
    %cur_a = gpu.local_view %bufs_a, %s ...
    %d = tt.dot %cur_a, %cur_b, %acc {is_async = true} : tensor<128x128xf32, #mma<version = 3, ...>>
    gpu.dot_wait {pending = 1}
    (iteration k + 2's copies into stage (%s + 2) rem 3, then gpu.async_commit)
    scf.yield %d, ..., (%s + 1) rem 3
  and after the loop
    %r = gpu.dot_wait %loop#0 {pending = 0} : tensor<128x128xf32, #mma<version = 3, ...>>

The TMA ring (sm_90a): a gpu.tma_load in the body (tile/opt/tma.py: a host descriptor's load
feeding wgmma) into a buffer of the body that only dots read is a candidate too, its stage 0 the
ops computing its coordinates. The same schedule issues its copies, but their completion is
tracked by S mbarriers (%bars, one per stage, initialized before the prologue and invalidated
after the loop, so a persistent kernel's tile loop runs the ring afresh per tile) instead of
commit groups: one thread arrives on mbarrier (%s + S-1) rem S with the stage's total bytes
(gpu.mbarrier_expect) and starts the copies (gpu.tma_load_async) after the dot_wait and the
barrier that retire the previous iteration's wgmma in every warp group; an iteration past the
end issues neither. At the top of iteration i every thread waits on mbarrier %s for the phase
of parity %p, carried beside %s:
    gpu.mbarrier_wait %bars, %stage, %phase
    ... tt.dot {is_async}, gpu.dot_wait {pending = 1}
    gpu.mbarrier_expect %bars, %w, %valid {bytes = 32768}
    gpu.tma_load_async %view_a, %a.tensormap, %bars, %w, %valid, %off_m, %k2    (after a barrier)
    scf.yield ..., (%s + 1) rem S, select((%s + 1) rem S == 0, %phase xor 1, %phase)
Why the parity is right: mbarrier s receives the copies of iterations s, s + S, s + 2S, ... in
that order, one arrival and one phase each, so iteration i = s + kS waits for phase k, parity
k mod 2 = (i div S) mod 2: %phase starts at 0 and flips exactly when %s wraps to 0. A waiter
needs the mbarrier not to complete phase k + 1 before it has seen phase k (the parity would
read as pending again): phase k + 1 needs iteration i + S's copies, issued in iteration i + 1
after a barrier that every thread reaches only past its wait of iteration i. (The arrival of
mbarrier_expect may precede that barrier: it cannot complete the phase before the copies.)
tests/test_tma_pipeline.py checks this on a model of the ring.

A ring whose readers are all synchronous (no dot above is asynchronous, no cp.async copies
beside it: attention's forward, whose dot results feed the softmax) is released without a
barrier, so that warp groups need not run in step (one's softmax then overlaps the other's
wgmma: +7-11% for attention's forward on an H200). S "empty" mbarriers (%empty, one arrival per
thread of the program a phase) beside the S "full" ones: every thread arrives on %empty %s at
the end of the body, its dots done with the stage; before refilling stage %w = (%s + S-1) rem S,
which the previous iteration read, warp 0 waits for that iteration's release, the phase of
parity %p xor (%s == 0) (iteration 0 waits for parity 1, the phase "before" the first, which
counts as complete), and the copies carry {released} for insert-barriers. Where several dots
read the ring, the copies go after the first of them, not at the top: warp 0's group then does
not wait for the other group's release before its own first dot, and the copies still overlap
the later dots (tutorial 07's forward at S = 4096 on an H200: 598-609 TFLOP/s against 557-576
with the copies at the top, causal within 2%):
    gpu.mbarrier_wait %bars, %s, %p
    %qk = tt.dot %q, %view_k_s, ...
    gpu.mbarrier_wait %empty, %w, select(%s == 0, %p xor 1, %p) {issuer = true}
    gpu.mbarrier_expect %bars, %w, %valid {bytes = 65536}
    gpu.tma_load_async %view_k_w, %k.tensormap, %bars, %w, %valid, %row, %c0 {released = true}
    ... softmax, tt.dot %p, %view_v_s (synchronous) ...
    gpu.mbarrier_arrive %empty, %s
Phase k of %empty %w completes when iteration w + kS is released; it cannot complete phase
k + 1 before warp 0 has seen phase k, since that needs the copies warp 0 issues after seeing it.

Before (S = 3, after convert-through-shared; #A, #B the operands' #dot_op layouts):
    %r = scf.for %c0, %n, %c1, %acc0, %ap0 : ... {
    ^bb(%k: i32, %acc: tensor<...>, %ap: tensor<64x32xptr<f16>, #L>):
      %a = tt.load %ap, %m, %zero {vector = 8} : tensor<64x32xf16, #L>
      %buf = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #sh>
      gpu.local_store %buf, %a
      %fa = gpu.local_load %buf : tensor<64x32xf16, #A>
      %d = tt.dot %fa, %fb, %acc : ...
      %ap1 = tt.addptr %ap, %step : ...
      scf.yield %d, %ap1
    }
After:
    %bufs = gpu.local_alloc {bytes = 12288, offset = -1} : tensor<3x64x32xf16, #sh3>
    (iterations 0 and 1: %ap0 and %ap0 + step, masks & (k < n), into stages 0 and 1)
    gpu.async_copy %v0, %ap0, %m0 {vector = 8}    gpu.async_commit
    gpu.async_copy %v1, %ap1, %m1 {vector = 8}    gpu.async_commit
    %r = scf.for %c0, %n, %c1, %acc0, %ap2, %s0 : ... {
    ^bb(%k: i32, %acc: ..., %ap: ..., %s: i32):
      gpu.async_wait {pending = 1}
      %k2 = arith.add %k, %c2                     (iteration k + 2: its mask, and k2 < n)
      %w = arith.rem (%s + 2), %c3
      %next = gpu.local_view %bufs, %w : tensor<64x32xf16, #sh>
      gpu.async_copy %next, %ap, %m2 {vector = 8}
      gpu.async_commit
      %cur = gpu.local_view %bufs, %s : tensor<64x32xf16, #sh>
      %fa = gpu.local_load %cur : tensor<64x32xf16, #A>
      %d = tt.dot %fa, %fb, %acc : ...
      %ap1 = tt.addptr %ap, %step : ...
      scf.yield %d, %ap1, (%s + 1) rem 3
    }
    gpu.async_wait {pending = 0}
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional

from ..ir import BlockArgument, Operation, PointerType, TensorType, Value, element_type, f32, i1, i32, i64, is_pure
from ..ir.core import Block, Region
from ..ir.dot_layouts import DotOperandLayout, MmaLayout
from ..ir.gpu_ops import element_bytes, layout_of, multi_buffer_layout, with_layout
from ..ir.layouts import SharedLayout
from .dce import DCE
from .pass_manager import Pass


@dataclass
class _Candidate:
    load: Operation
    alloc: Operation
    store: Operation
    reads: list[Operation]
    trans: Optional[Operation] = None  # a tt.trans between the load and the store
    buffers: Optional[Value] = None

    @property
    def tma(self) -> bool:
        """A gpu.tma_load (filling the buffer itself: no store), on the TMA ring."""
        return self.load.name == "gpu.tma_load"

    def sources(self) -> list[Value]:
        """The operands the copy of one iteration is computed from (stage 0's roots)."""
        return list(self.load.operands[1:] if self.tma else self.load.operands)


def _constant_value(v: Value) -> object:
    op = v.owner_op
    return op.attrs["value"] if op is not None and op.name == "arith.constant" else None


def _reads_operand(op: Operation) -> bool:
    """A reader of a dot operand buffer: a local_load into #dot_op fragments, or a wgmma dot."""
    if op.name == "gpu.local_load":
        return isinstance(layout_of(op.result), DotOperandLayout)
    layout = layout_of(op.result) if op.name == "tt.dot" else None
    return isinstance(layout, MmaLayout) and layout.version == 3


def _readers(buf: Value, writer: Operation) -> Optional[list[Operation]]:
    """The dot operand readers of buffer `buf`, through its gpu.local_trans where it is read
    transposed too; None if anything but `writer` does something else with it."""
    reads = []
    for user, _ in buf.uses:
        if user is writer:
            continue
        for reader in ([u for u, _ in user.result.uses] if user.name == "gpu.local_trans" else [user]):
            if not _reads_operand(reader):
                return None
            reads.append(reader)
    return reads


def _asynchronous_dots(body: Block, candidates: list[_Candidate]) -> list[Operation]:
    """The wgmma dots reading the candidates' buffers whose accumulator is only carried around the
    loop, in body order (see the module docstring)."""
    term = body.terminator
    dots: list[Operation] = []
    for c in candidates:
        for dot in c.reads:
            acc = dot.operand(2) if dot.name == "tt.dot" else None
            if acc is None or dot in dots or not isinstance(acc, BlockArgument) or acc.block is not body or \
                    acc.index < 1 or len(acc.uses) != 1 or element_type(acc.type) not in (f32, i32) or \
                    not isinstance(layout_of(dot.operand(0)), SharedLayout):
                continue
            if [(user, index) for user, index in dot.result.uses] == [(term, acc.index - 1)]:
                dots.append(dot)
    return sorted(dots, key=body.ops.index)


def _staged_only(x: Value) -> bool:
    """Whether every use of loaded value `x` stores it, or its tt.trans, into a buffer (one loaded
    tile may feed one dot as is and another transposed: each store becomes a copy of its own)."""
    for user in x.users():
        if user.name == "tt.trans" and len(user.result.uses) == 1:
            user = user.result.users()[0]
        if user.name != "gpu.local_store" or user.operand(0).owner_op is None or \
                user.operand(0).owner_op.name != "gpu.local_alloc":
            return False
    return True


def _candidate(store: Operation, body: Block) -> Optional[_Candidate]:
    buf, x = store.operands
    alloc, load, trans = buf.owner_op, x.owner_op, None
    if load is not None and load.name == "tt.trans" and len(x.uses) == 1:
        trans, x = load, load.operand(0)
        load = x.owner_op
    if alloc is None or alloc.name != "gpu.local_alloc" or alloc.parent is not body or load is None or \
            load.name != "tt.load" or load.parent is not body or not _staged_only(x):
        return None
    reads = _readers(buf, store)
    if reads is None:
        return None
    width = load.attrs.get("vector", 1) * element_bytes(x.type)
    other = _constant_value(load.operand(2)) if load.num_operands > 2 else 0
    if width not in (4, 8, 16) or other != 0 or load.attrs.get("volatile"):
        return None
    return _Candidate(load, alloc, store, reads, trans)


def _tma_candidate(copy: Operation, body: Block) -> Optional[_Candidate]:
    """A gpu.tma_load into a buffer of the loop body that only dot operand readers read."""
    buf = copy.operand(0)
    alloc = buf.owner_op
    if alloc is None or alloc.name != "gpu.local_alloc" or alloc.parent is not body:
        return None
    reads = _readers(buf, copy)
    if reads is None:
        return None
    return _Candidate(copy, alloc, None, reads)


def _candidates(body: Block) -> list[_Candidate]:
    """The loads of a loop body that pipelining can issue ahead, in body order."""
    found = [_candidate(op, body) if op.name == "gpu.local_store" else _tma_candidate(op, body)
             for op in body.ops if op.name in ("gpu.local_store", "gpu.tma_load")]
    found = [c for c in found if c is not None]
    covered: dict[Operation, set[Operation]] = {}
    for c in found:
        covered.setdefault(c.load, set()).add(c.trans if c.trans is not None else c.store)
    # a load goes when all its stores became copies: one with a store that cannot stays whole
    return [c for c in found if c.tma or covered[c.load] == set(c.load.result.users())]


class _Stage0:
    """The ops of a loop body computing the candidates' operands, and the loop-carried values
    (indices into the iter args) they need."""

    def __init__(self, body: Block, sources: list[Value]):
        self.body = body
        self.ops: set[Operation] = set()
        self.carried: set[int] = set()
        for v in sources:
            self._visit(v)

    def _visit(self, v: Value) -> None:
        if isinstance(v, BlockArgument):
            if v.block is self.body and v.index > 0 and v.index - 1 not in self.carried:
                self.carried.add(v.index - 1)
                self._visit(self.body.terminator.operand(v.index - 1))
            return
        op = v.owner_op
        if op is not None and op.parent is self.body and op not in self.ops:
            self.ops.add(op)
            for x in op.operands:
                self._visit(x)

    def ordered(self) -> list[Operation]:
        return [op for op in self.body.ops if op in self.ops]

    def valid(self, loop: Operation, candidates: list[_Candidate]) -> bool:
        """Whether stage 0 can run ahead (see the module docstring)."""
        if not all(is_pure(op) and not op.regions for op in self.ops):
            return False
        allowed = self.ops | {c.load for c in candidates}
        tainted = {self.body.args[c + 1] for c in self.carried}
        for op in self.ordered():
            if any(v in tainted for v in op.operands):
                tainted.update(op.results)
        term = self.body.terminator
        for v in tainted:
            for user, index in v.uses:
                if user is term and index in self.carried:
                    continue
                if user not in allowed:
                    return False
        return all(not loop.results[c].uses for c in self.carried)


class _Emitter:
    """Inserts ops before an anchor op; constants go before `constants_at` (outside the loop),
    one per value and type."""

    def __init__(self, anchor: Operation, constants_at: Operation, constants: dict):
        self.anchor = anchor
        self.constants_at = constants_at
        self.constants = constants

    def op(self, name: str, operands: list[Value], result_types: list = (), **attrs) -> Operation:
        new = Operation(name, operands, list(result_types), attrs, loc=self.anchor.loc)
        self.anchor.parent.insert_before(self.anchor, new)
        return new

    def value(self, name: str, operands: list[Value], result_type, **attrs) -> Value:
        return self.op(name, operands, [result_type], **attrs).result

    def const(self, value: int, t=i32) -> Value:
        if (value, t) not in self.constants:
            op = Operation("arith.constant", [], [t], {"value": value}, loc=self.anchor.loc)
            self.constants_at.parent.insert_before(self.constants_at, op)
            self.constants[(value, t)] = op.result
        return self.constants[(value, t)]

    def clone(self, ops: list[Operation], mapping: dict[Value, Value]) -> None:
        for op in ops:
            self.anchor.parent.insert_before(self.anchor, op.clone(mapping))


def _next_stage(em: _Emitter, stage: Value, ahead: int, stages: int) -> Value:
    """(stage + ahead) mod stages for 0 <= stage, ahead < stages, without a division."""
    total = em.value("arith.add", [stage, em.const(ahead)], i32)
    wraps = em.value("arith.cmp", [total, em.const(stages)], i1, predicate="ge")
    wrapped = em.value("arith.sub", [total, em.const(stages)], i32)
    return em.value("arith.select", [wraps, wrapped, total], i32)


def _mbarriers(em: _Emitter, stages: int, count: int) -> Value:
    """A ring's mbarriers, one per stage, initialized for `count` arrivals a phase."""
    bars = em.value("gpu.local_alloc", [], TensorType((stages,), i64, SharedLayout(1, 1, 1, (0,))),
                    offset=-1, bytes=8 * stages)
    em.op("gpu.mbarrier_init", [bars], count=count)
    return bars


def _program_threads(op: Operation) -> int:
    """The threads of the program whose function holds `op` (its num_warps, threads_per_warp)."""
    while op.parent_op is not None:
        op = op.parent_op
    return op.attrs["num_warps"] * op.attrs.get("threads_per_warp", 32)


def _issue(em: _Emitter, candidates: list[_Candidate], mapping: dict[Value, Value], iv: Value, ub: Value,
           stage: Value, barriers: Optional[Value], released: bool = False) -> None:
    """The copies of one iteration (stage-0 values in `mapping`, induction variable `iv`) into `stage`:
    cp.async copies, one commit group; TMA copies counted on mbarrier `stage` of `barriers`. Those
    of an iteration past the end are masked off (cp.async: zero-filled) or not issued (TMA).
    `released`: the TMA copies wait for the stage's release on the ring's "empty" mbarriers."""
    valid = em.value("arith.cmp", [iv, ub], i1, predicate="lt")
    ring = [c for c in candidates if c.tma]
    if ring:
        em.op("gpu.mbarrier_expect", [barriers, stage, valid], bytes=sum(c.alloc.attrs["bytes"] for c in ring))
        for c in ring:
            view = em.value("gpu.local_view", [c.buffers, stage], c.alloc.result.type)
            coords = [mapping.get(v, v) for v in c.load.operands[2:]]
            attrs = {k: v for k, v in c.load.attrs.items() if k == "transposed"}
            em.op("gpu.tma_load_async", [view, c.load.operand(1), barriers, stage, valid, *coords],
                  **attrs, **({"released": True} if released else {}))
    copies = [c for c in candidates if not c.tma]
    if not copies:
        return
    for c in copies:
        operands = [mapping.get(v, v) for v in c.load.operands[:2]]
        if c.trans is not None:  # the copy moves the transposed tile: transpose its pointers and mask
            order, shape = c.trans.attrs["order"], c.trans.result.type.shape
            operands = [em.value("tt.trans", [v], TensorType(shape, v.type.element, c.trans.result.type.layout),
                                 order=order) for v in operands]
        ptr = operands[0]
        mask_type = with_layout(TensorType(ptr.type.shape, i1), layout_of(ptr))
        mask = em.value("tt.splat", [valid], mask_type)
        if len(operands) > 1:
            mask = em.value("arith.and", [operands[1], mask], mask_type)
        view_type = c.alloc.result.type
        view = em.value("gpu.local_view", [c.buffers, stage], view_type)
        em.op("gpu.async_copy", [view, ptr, mask], vector=c.load.attrs.get("vector", 1))
    em.op("gpu.async_commit", [])


def _uniform_step(v: Value, loop: Operation) -> Optional[Value]:
    """The scalar every element of pointer offset `v` equals, if it is a splat of a value defined
    outside `loop` or a constant tensor (then a scalar constant is made before the loop)."""
    op = v.owner_op
    if op is None or loop.is_ancestor_of(op):
        return None
    if op.name == "tt.splat":
        return op.operand(0)
    if op.name == "arith.constant" and isinstance(op.attrs["value"], int):
        scalar = Operation("arith.constant", [], [i64], dict(op.attrs), loc=op.loc)
        loop.parent.insert_before(loop, scalar)
        return scalar.result
    return None


def scalarize_pointer_steps(loop: Operation) -> Operation:
    """Loop-carried tensors of pointers advanced by a uniform step (p = tt.addptr p, splat(s), s
    defined outside the loop) become an i64 scalar offset: the loop carries o (from 0, o += s) and
    computes p = tt.addptr p0, splat(o) from the initial pointers p0. The loop then carries one
    scalar instead of a register per element, and the per-element address arithmetic of every
    iteration is an offset of the loop-invariant p0 (shared by the elements a vector access
    groups). Returns the loop (rebuilt if anything changed)."""
    body, term = loop.regions[0].block, loop.regions[0].block.terminator
    steps: dict[int, Value] = {}
    for i, arg in enumerate(body.args[1:]):
        nxt = term.operand(i).owner_op
        if isinstance(arg.type, TensorType) and isinstance(arg.type.element, PointerType) and nxt is not None \
                and nxt.name == "tt.addptr" and nxt.operand(0) is arg and nxt.parent is body:
            step = _uniform_step(nxt.operand(1), loop)
            if step is not None:
                steps[i] = step
    if not steps:
        return loop
    before = _Emitter(loop, loop, {})
    zero = before.value("arith.constant", [], i64, value=0)
    wide = {i: s if s.type == i64 else before.value("arith.cast", [s], i64) for i, s in steps.items()}
    inits = [zero if i in steps else v for i, v in enumerate(loop.operands[3:])]
    new_body = Block([body.args[0].type] + [i64 if i in steps else a.type for i, a in enumerate(body.args[1:])])
    new = Operation("scf.for", list(loop.operands[:3]) + inits, [v.type for v in inits], dict(loop.attrs),
                    [Region([new_body])], loc=loop.loc)
    loop.parent.insert_before(loop, new)
    for op in list(body.ops):
        op.detach()
        new_body.append(op)
    top = _Emitter(new_body.ops[0], new, {})
    for i, (old, arg) in enumerate(zip(body.args, new_body.args)):
        arg.name_hint = old.name_hint
        if i - 1 in steps:
            init = loop.operand(2 + i)
            offsets = top.value("tt.splat", [arg], with_layout(TensorType(init.type.shape, i64), layout_of(init)))
            old.replace_all_uses_with(top.value("tt.addptr", [init, offsets], init.type))
        else:
            old.replace_all_uses_with(arg)
    term = new_body.terminator
    end = _Emitter(term, new, {})
    advanced = [term.operand(i).owner_op for i in steps]
    term.set_operands([end.value("arith.add", [new_body.args[i + 1], wide[i]], i64) if i in steps else v
                       for i, v in enumerate(term.operands)])
    for op in advanced:
        if not op.result.uses:
            op.erase()
    after = Operation("scf.yield", [])  # a placeholder anchor for the final pointers after the loop
    new.parent.insert_after(new, after)
    last = _Emitter(after, new, {})
    for i, (old, result) in enumerate(zip(loop.results, new.results)):
        result.name_hint = old.name_hint
        if i in steps and old.uses:
            init = loop.operand(3 + i)
            offsets = last.value("tt.splat", [result], with_layout(TensorType(init.type.shape, i64), layout_of(init)))
            old.replace_all_uses_with(last.value("tt.addptr", [init, offsets], init.type))
        else:
            old.replace_all_uses_with(result)
    after.erase()
    loop.erase()
    return new


def _outside_buffer_bytes(loop: Operation) -> int:
    """Bytes of the shared buffers made before `loop` that its body reads (a dot's invariant operand)."""
    seen = {v.owner_op for op in loop.walk() for v in op.operands
            if v.owner_op is not None and v.owner_op.name == "gpu.local_alloc" and not loop.is_ancestor_of(v.owner_op)}
    return sum(alloc.attrs.get("bytes", 0) for alloc in seen)


def _fitting(candidates: list[_Candidate], loop: Operation, stages: int, shared_limit: Optional[int]) -> list[_Candidate]:
    """The candidates, less the loads copied into several buffers when their rings would not fit
    in `shared_limit` beside the loop's other buffers (those made before it that it reads, and the
    largest of its own): those loads then stay synchronous (a load with one buffer of S stages
    costs S times its bytes, one with two buffers 2 S times)."""
    def ring(cs: list[_Candidate]) -> int:
        return stages * sum(c.alloc.attrs["bytes"] for c in cs)

    staged = {c.alloc for c in candidates}
    inner = max((op.attrs.get("bytes", 0) for op in loop.walk()
                 if op.name == "gpu.local_alloc" and op not in staged), default=0)
    if shared_limit is None or ring(candidates) + _outside_buffer_bytes(loop) + inner <= shared_limit:
        return candidates
    sinks = Counter(c.load for c in candidates)
    return [c for c in candidates if sinks[c.load] == 1]


def pipeline_loop(loop: Operation, stages: int, shared_limit: Optional[int] = None) -> bool:
    """Pipelines the dot operand loads of scf.for `loop` over `stages` buffers; False if it cannot.
    `shared_limit`: the target's shared bytes per program (see _fitting)."""
    body = loop.regions[0].block
    candidates = _fitting(_candidates(body), loop, stages, shared_limit)
    step = _constant_value(loop.operand(2))
    if not candidates or not isinstance(step, int) or step <= 0:
        return False
    stage0 = _Stage0(body, [v for c in candidates for v in c.sources()])
    if not stage0.valid(loop, candidates):
        return False
    lb, ub = loop.operand(0), loop.operand(1)
    iv_type = lb.type
    stage0_ops = stage0.ordered()
    constants: dict = {}
    em = _Emitter(loop, loop, constants)
    for c in candidates:
        t = c.alloc.result.type
        c.buffers = em.value("gpu.local_alloc", [], TensorType((stages,) + t.shape, t.element,
                                                                multi_buffer_layout(t.layout)),
                             offset=-1, bytes=stages * c.alloc.attrs["bytes"])
    ring = any(c.tma for c in candidates)
    copies = not all(c.tma for c in candidates)
    dots = _asynchronous_dots(body, candidates)
    released = ring and not copies and not dots
    barriers = empties = None
    if ring:
        barriers = _mbarriers(em, stages, count=1)
        if released:
            empties = _mbarriers(em, stages, count=_program_threads(loop))
        em.op("gpu.barrier", [])
    # prologue: iterations 0 .. stages-2
    carried = sorted(stage0.carried)
    current = {c: loop.operand(3 + c) for c in carried}
    term = body.terminator
    for j in range(stages - 1):
        iv = lb if j == 0 else em.value("arith.add", [lb, em.const(j * step, iv_type)], iv_type)
        mapping: dict[Value, Value] = {body.args[0]: iv}
        mapping.update({body.args[c + 1]: current[c] for c in carried})
        em.clone(stage0_ops, mapping)
        _issue(em, candidates, mapping, iv, ub, em.const(j), barriers)
        current = {c: mapping.get(term.operand(c), term.operand(c)) for c in carried}
    # the loop, carrying stage 0 ahead, the stage index and (TMA ring) the mbarriers' phase parity
    ring_state = [i32, i32] if ring else [i32]
    inits = [current.get(i, v) for i, v in enumerate(loop.operands[3:])] + [em.const(0)] * len(ring_state)
    new_body = Block([a.type for a in body.args] + ring_state)
    new = Operation("scf.for", [lb, ub, loop.operand(2)] + inits, [r.type for r in loop.results] + ring_state,
                    dict(loop.attrs), [Region([new_body])], loc=loop.loc)
    loop.parent.insert_before(loop, new)
    for old_arg, new_arg in zip(body.args, new_body.args):
        new_arg.name_hint = old_arg.name_hint
        old_arg.replace_all_uses_with(new_arg)
    for op in list(body.ops):
        op.detach()
        new_body.append(op)
    stage = new_body.args[len(body.args)]
    stage.name_hint = "stage"
    top = _Emitter(new_body.ops[0], new, constants)
    if copies:
        top.op("gpu.async_wait", [], pending=stages - 2)
    if ring:
        phase = new_body.args[-1]
        phase.name_hint = "phase"
        top.op("gpu.mbarrier_wait", [barriers, stage, phase])
    em = top
    if dots:
        for dot in dots:
            dot.attrs["is_async"] = True
        wait = Operation("gpu.dot_wait", [], [], {"pending": len(dots)}, loc=dots[-1].loc)
        new_body.insert_after(dots[-1], wait)
        em = _Emitter(new_body.ops[new_body.ops.index(wait) + 1], new, constants)
    elif released:  # after the first of several dots that read the ring: see the module docstring
        readers = sorted({r for c in candidates for r in c.reads if r.parent is new_body}, key=new_body.ops.index)
        if len(readers) > 1:
            em = _Emitter(new_body.ops[new_body.ops.index(readers[0]) + 1], new, constants)
    ahead = em.value("arith.add", [new_body.args[0], em.const((stages - 1) * step, iv_type)], iv_type)
    mapping = {new_body.args[0]: ahead}
    em.clone(stage0_ops, mapping)
    write = _next_stage(em, stage, stages - 1, stages)
    if released:  # stage `write` was read in the previous iteration, whose phase flips where %stage is 0
        first = em.value("arith.cmp", [stage, em.const(0)], i1, predicate="eq")
        previous = em.value("arith.select", [first, em.value("arith.xor", [phase, em.const(1)], i32), phase], i32)
        em.op("gpu.mbarrier_wait", [empties, write, previous], issuer=True)
    _issue(em, candidates, mapping, ahead, ub, write, barriers, released)
    views = [top.value("gpu.local_view", [c.buffers, stage], c.alloc.result.type) for c in candidates]
    for c, view in zip(candidates, views):
        for user, index in list(c.alloc.result.uses):
            if user is not c.store and user is not c.load:
                user.set_operand(index, view)
        for op in (c.store, c.load if c.tma else None, c.alloc, c.trans):
            if op is not None:
                op.erase()
    for load in dict.fromkeys(c.load for c in candidates if not c.tma):
        load.erase()
    term = new_body.terminator
    em = _Emitter(term, new, constants)
    if released:  # this thread is done reading the stage: its dots are synchronous
        em.op("gpu.mbarrier_arrive", [empties, stage])
    following = _next_stage(em, stage, 1, stages)
    yields = [mapping.get(v, v) if i in stage0.carried else v for i, v in enumerate(term.operands)] + [following]
    if ring:  # the ring wraps: the next use of each mbarrier waits for its next phase
        wraps = em.value("arith.cmp", [following, em.const(0)], i1, predicate="eq")
        flipped = em.value("arith.xor", [phase, em.const(1)], i32)
        yields.append(em.value("arith.select", [wraps, flipped, phase], i32))
    term.set_operands(yields)
    for old, result in zip(loop.results, new.results):
        result.name_hint = old.name_hint
        old.replace_all_uses_with(result)
    loop.erase()
    if ring:  # every thread is past its last wait before the mbarriers go (or are initialized again)
        for bars in (empties, barriers):
            if bars is not None:
                new.parent.insert_after(new, Operation("gpu.mbarrier_inval", [bars], [], loc=new.loc))
        new.parent.insert_after(new, Operation("gpu.barrier", [], [], loc=new.loc))
    if copies:
        new.parent.insert_after(new, Operation("gpu.async_wait", [], [], {"pending": 0}, loc=new.loc))
    if dots:
        carried = [new.results[dot.operand(2).index - 1] for dot in dots]
        wait = Operation("gpu.dot_wait", carried, [v.type for v in carried], {"pending": 0}, loc=new.loc)
        new.parent.insert_after(new, wait)
        for v, ready in zip(carried, wait.results):
            v.name_hint, ready.name_hint = None, v.name_hint
            for user, index in list(v.uses):
                if user is not wait:
                    user.set_operand(index, ready)
    return True


class Pipeline(Pass):
    """Pipelines the loads feeding dots in loops over func attr `num_stages` buffers (see the module
    docstring)."""

    name = "pipeline"

    def __init__(self, shared_limit: Optional[int] = None):
        self.shared_limit = shared_limit

    def run(self, func: Operation) -> None:
        default_stages = func.attrs.get("num_stages", 1)
        changed = False
        for loop in [op for op in func.walk() if op.name == "scf.for"]:
            if not _candidates(loop.regions[0].block):
                continue
            stages = loop.attrs.get("num_stages", default_stages)
            loop = scalarize_pointer_steps(loop)
            if stages >= 2:
                pipeline_loop(loop, stages, self.shared_limit)
            changed = True
        if changed:
            DCE().run(func)


__all__ = ["Pipeline", "pipeline_loop"]
