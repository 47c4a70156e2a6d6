"""The machine model: a batch of CTAs whose threads run as one NumPy array each register.

Every register is an array over all threads of the batch (raw bits: uint16/32/64, bool for
predicates); an instruction runs once for every thread at its program counter. While all live
threads share one PC the machine runs *uniform*: one PC, no masks. A branch that splits the
threads makes it *divergent*: each thread keeps its PC, and every step runs the instruction at
the smallest PC for the threads there (min-PC scheduling). Structured code reconverges by
itself: the threads that skipped ahead wait at the join point until the others arrive, and
when every live thread shares a PC again the machine is uniform again. CTAs are independent,
so min-PC order is kept within a CTA only when it would starve another: a CTA that has not
run for STARVED_AFTER steps (it holds a lock the others spin on) runs alone for as many.
`run` is a generator that yields every TURN_STEPS steps: the launch gives the other batches of
the grid a turn then, so a CTA may also wait on a CTA of a batch that started after its own.

The instruction set (ptx_isa) never sees PCs: a handler reads operands for the active threads
(`read`), writes results for them (`write`), and asks the memories for loads and stores.
Branches, exits and barriers are the machine's (they steer scheduling); `bar.sync` checks that
every live thread of each CTA arriving there is there (else: a deadlock on a GPU, an error here).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np

from .errors import EmulatorError, StepBudgetError
from .checks import SharedChecks
from .memory import GlobalMemory, SharedMemory
from .program import Instr, Kernel, Operand, Source

UINT_BITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}
INT_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
NP_TYPE: dict[str, Any] = {
    "b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16, "s16": np.int16,
    "f16": np.float16, "bf16": np.uint16, "b32": np.uint32, "u32": np.uint32, "s32": np.int32, "f32": np.float32,
    "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64, "f16x2": np.uint32, "bf16x2": np.uint32,
    "e4m3": np.uint8, "e5m2": np.uint8, "e4m3x2": np.uint16, "e5m2x2": np.uint16, "tf32": np.uint32}
TYPE_BITS = {t: np.dtype(d).itemsize * 8 for t, d in NP_TYPE.items()}
UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

# what the machine does with an instruction beyond running its handler
OP, BRANCH, EXIT, BARRIER = 0, 1, 2, 3
# CTAs of a batch are independent: one that has not run for this many steps (it waits ahead of a
# CTA spinning on a lock it holds) runs alone for as many
STARVED_AFTER = 256
# a batch that has not finished after this many steps yields its turn (launch.run_ptx then runs
# the other batches: its CTAs may wait on theirs)
TURN_STEPS = 20_000


class Machine:
    """A batch of CTAs of one launch: registers, special registers, memories, scheduling."""

    def __init__(self, kernel: Kernel, ctas: np.ndarray, grid: tuple[int, int, int], ntid: int,
                 params: dict[str, tuple[str, int]], gmem: GlobalMemory, shared_bytes: int,
                 symbols: dict[str, tuple[str, int]], max_steps: int, launch: Any = None):
        self.kernel, self.grid, self.ntid = kernel, grid, ntid
        self.ctas = ctas  # linear CTA ids of the batch
        self.threads = len(ctas) * ntid
        self.params, self.gmem, self.symbols = params, gmem, symbols
        self.regs: list[Optional[np.ndarray]] = [None] * len(kernel.reg_names)
        self.reg_bits = kernel.reg_bits
        self.smem = SharedMemory(len(ctas), shared_bytes)
        self.checks = SharedChecks(self.smem.data.size, self.threads, len(ctas))
        self.local = SharedMemory(len(ctas) * ntid, max(kernel.local_bytes, 16))
        self.max_steps = max_steps
        self.launch = launch  # the launch's state that handlers share (cp.async groups, printf output)
        t = np.arange(self.threads, dtype=np.int64)
        self.cta_local = t // ntid
        self.tid = (t % ntid).astype(np.uint32)
        lin = ctas[self.cta_local]
        gx, gy, _ = grid
        self.ctaid = {"x": (lin % gx).astype(np.uint32), "y": ((lin // gx) % gy).astype(np.uint32),
                      "z": (lin // (gx * gy)).astype(np.uint32)}
        self.act: Optional[np.ndarray] = None  # positions of the active threads; None: all threads
        self.ins: Optional[Instr] = None
        self.pc = 0  # the index of the instruction running
        # cp.async groups: (shared byte indices, bytes, issuing thread of each byte)
        self.async_groups: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
        self.async_open: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.call_params: dict[str, Any] = {}  # the .param variables of a call sequence
        self.tracer: Any = None  # a trace.Tracer when chosen threads of this batch are traced
        self.mbarriers: dict[tuple[int, int], Any] = {}  # (CTA in the batch, shared address) -> ptx_isa_hopper.MBarrier
        # wgmma accumulators in flight, per warp group of the batch (thread // 128), since the warp
        # groups of different CTAs run their K loops apart: a warp group's groups are numbered as
        # it commits them; register -> (the wgmma's index, the group number each warp group wrote
        # it in, -1 where none); a warp group's register is in flight while that number is at least
        # the first of its groups not retired by a wgmma.wait_group
        self.wgmma_pending: dict[int, tuple[int, np.ndarray]] = {}
        groups = -(-self.threads // 128)
        self.wgmma_committed = np.zeros(groups, np.int64)
        self.wgmma_retired = np.zeros(groups, np.int64)
        # counted barriers (bar.sync b, n / bar.arrive b, n): CTA * 16 + b -> [arrived, count, [(waiting, resume PC)]]
        self.named_barriers: dict[int, list] = {}
        self.waiting_at: dict[int, Instr] = {}  # thread -> the bar.sync it waits at
        self.steps = 0

    # ---------------------------------------------------------------- errors
    def thread_info(self, position: Optional[int]) -> str:
        if position is None:
            return ""
        t = position if self.act is None else int(self.act[position])
        cta = int(self.ctas[t // self.ntid])
        gx, gy, _ = self.grid
        return f"thread {t % self.ntid} of CTA ({cta % gx}, {(cta // gx) % gy}, {cta // (gx * gy)})"

    def error(self, message: str, position: Optional[int] = None, source: Optional[Source] = None) -> EmulatorError:
        """An error at the current instruction; `position` picks the thread among the active ones."""
        src = source or (self.ins.source if self.ins is not None else None)
        return EmulatorError(self.kernel.name, message, src, self.thread_info(position))

    def fail(self, position: int, reason: str) -> EmulatorError:
        op = self.ins.opcode if self.ins else "access"
        return self.error(f"{op}: {reason}", position)

    # ---------------------------------------------------------------- operands
    @property
    def count(self) -> int:
        return self.threads if self.act is None else self.act.size

    def special(self, name: str) -> np.ndarray:
        if name.startswith(("%tid.", "%ctaid.", "%ntid.", "%nctaid.")):
            kind, axis = name[1:].split(".")
            if kind == "tid":
                full = self.tid if axis == "x" else np.zeros(self.threads, np.uint32)
            elif kind == "ctaid":
                full = self.ctaid[axis]
            elif kind == "ntid":
                return np.uint32(self.ntid if axis == "x" else 1)
            else:
                return np.uint32(self.grid["xyz".index(axis)])
        elif name == "%laneid":
            full = self.tid & np.uint32(31)
        elif name == "%warpid":
            full = self.tid >> np.uint32(5)
        elif name == "%nwarpid":
            return np.uint32(-(-self.ntid // 32))
        elif name in ("%smid", "%nsmid"):
            return np.uint32(0 if name == "%smid" else 1)
        elif name.startswith("%lanemask_"):
            lane = (self.tid & np.uint32(31)).astype(np.uint64)
            one = np.uint64(1)
            masks = {"eq": one << lane, "lt": (one << lane) - one, "le": (one << (lane + one)) - one}
            masks["gt"] = ~masks["le"] & np.uint64(0xFFFFFFFF)
            masks["ge"] = ~masks["lt"] & np.uint64(0xFFFFFFFF)
            full = masks[name[len("%lanemask_"):]].astype(np.uint32)
        else:  # %clock, %clock64, %globaltimer: the number of steps run stands in for time
            return np.uint64(self.steps) if name != "%clock" else np.uint32(self.steps & 0xFFFFFFFF)
        return full if self.act is None else full[self.act]

    def symbol(self, name: str, offset: int) -> int:
        """The address of a symbol: a kernel parameter (param space), shared or local array, or global."""
        found = self.symbols.get(name)
        if found is None:
            raise self.error(f"unknown symbol {name}")
        return found[1] + offset

    def local_generic(self, name: str, offset: int) -> int:
        """The generic address (cvta.local) of a local array: LOCAL_WINDOW plus its offset."""
        from .ptx_isa_memory import LOCAL_WINDOW

        return LOCAL_WINDOW + self.symbol(name, offset)

    def read(self, op: Operand, t: str) -> Any:
        """An operand's value for the active threads as NumPy type `t` (an array, or a scalar
        for immediates, parameters and uniform special registers)."""
        tag = op[0]
        if tag == "reg":
            if self.wgmma_pending and op[1] in self.wgmma_pending:
                self._check_in_flight(op[1], "reads")
            arr = self.regs[op[1]]
            if arr is None:
                arr = self._unwritten(op[1])
            if self.act is not None:
                arr = arr[self.act]
            if t == "pred":
                return arr
            rb, w = self.reg_bits[op[1]], TYPE_BITS[t]
            if rb == 0:
                return arr.astype(NP_TYPE[t])
            if w != rb:
                arr = arr.astype(UNSIGNED[w])
            return arr.view(NP_TYPE[t])
        if tag == "imm":
            return immediate(op, t)
        if tag == "npred":
            arr = self.regs[op[1]]
            return ~(arr if self.act is None else arr[self.act])
        if tag == "sreg":
            v = self.special(op[1])
            return v.astype(NP_TYPE[t]) if t != "pred" else v
        if tag == "sym":
            return np.array(self.symbol(op[1], op[2]) & ((1 << TYPE_BITS[t]) - 1), UNSIGNED[TYPE_BITS[t]]).view(
                NP_TYPE[t])[()]
        raise self.error(f"cannot read the operand {op!r} as a value")

    def write(self, op: Operand, value: Any, t: str) -> None:
        """Write `value` (NumPy type `t`, array over the active threads or scalar) to a register."""
        if op[0] != "reg":
            raise self.error(f"the destination {op!r} is not a register")
        i = op[1]
        if self.wgmma_pending and i in self.wgmma_pending:
            self._check_in_flight(i, "writes")
        if self.tracer is not None:
            self.tracer.wrote(self, i, value, t)
        rb = self.reg_bits[i]
        if rb == 0:
            bits = np.asarray(value, bool)
        else:
            arr = np.asarray(value)
            if arr.dtype != NP_TYPE[t]:
                arr = arr.astype(NP_TYPE[t])
            w = TYPE_BITS[t]
            if w == rb:
                bits = arr.view(UNSIGNED[rb])
            elif w < rb and arr.dtype.kind == "i":  # sign-extend into the wider register
                bits = arr.astype(INT_BITS[rb]).view(UNSIGNED[rb])
            else:  # zero-extend, or keep the low bits
                bits = arr.view(UNSIGNED[w]).astype(UNSIGNED[rb])
        if self.act is None:
            if bits.shape != (self.threads,):
                bits = np.broadcast_to(bits, (self.threads,)).copy()
            self.regs[i] = bits
            return
        cur = self.regs[i]
        new = np.zeros(self.threads, bool if rb == 0 else UNSIGNED[rb]) if cur is None else cur.copy()
        new[self.act] = bits
        self.regs[i] = new

    def _check_in_flight(self, register: int, what: str) -> None:
        """An error when an active thread's warp group has `register` in flight (an accumulator of
        a wgmma that no wgmma.wait_group has retired yet)."""
        pc, group_of = self.wgmma_pending[register]
        groups = self.positions() // 128
        busy = group_of[groups] >= self.wgmma_retired[groups]
        if busy.any():
            source = self.kernel.instrs[pc].source.describe()
            raise self.error(f"{self.ins.opcode} {what} {self.kernel.reg_names[register]}, an accumulator of the wgmma "
                             f"at {source}, before a wgmma.wait_group retires it", int(np.flatnonzero(busy)[0]))

    def full(self, op: Operand) -> np.ndarray:
        """A register's array over all threads of the batch (for warp exchanges)."""
        arr = self.regs[op[1]]
        return self._unwritten(op[1]) if arr is None else arr

    def _unwritten(self, register: int) -> np.ndarray:
        """A register no instruction has written yet: an error, unless a predicated instruction
        writes it (all predicates were false so far: its value is undefined, zeros here)."""
        if register not in self.kernel.guarded_writes:
            raise self.error(f"read of the uninitialised register {self.kernel.reg_names[register]}")
        bits = self.reg_bits[register]
        self.regs[register] = np.zeros(self.threads, bool if bits == 0 else UNSIGNED[bits])
        return self.regs[register]

    def positions(self) -> np.ndarray:
        """Batch-wide indices of the active threads."""
        return np.arange(self.threads) if self.act is None else self.act

    def require_full_warps(self) -> None:
        """Warp-wide instructions (.sync.aligned, shfl with a full mask) need every lane of each warp."""
        if self.act is None:
            return
        warps = self.act // 32
        counts = np.bincount(warps - warps.min())
        if (counts[counts > 0] != min(32, self.ntid)).any():
            bad = int(np.flatnonzero(counts[warps - warps.min()] != min(32, self.ntid))[0])
            raise self.error(f"{self.ins.opcode} needs every lane of the warp, but only part of the warp runs it "
                             f"(divergent control flow or exited threads)", bad)

    # ---------------------------------------------------------------- running
    def run(self, kinds: list[int], handlers: list[Any]) -> Iterator[None]:
        """Run the batch to completion (every thread exits), yielding every TURN_STEPS steps so
        the launch can run other batches in between."""
        instrs = self.kernel.instrs
        end = len(instrs)
        counts = [0] * (end + 1)
        self.steps = 0
        live = np.ones(self.threads, bool)
        live_idx: Optional[np.ndarray] = None  # None: every thread is live
        n_live = self.threads
        pcs: Optional[np.ndarray] = None  # per-thread PCs while divergent
        pc = 0
        last_ran = np.zeros(len(self.ctas), np.int64)  # per CTA of the batch: the last step it ran
        favoured, burst = -1, 0  # a starved CTA runs alone for `burst` steps
        while True:
            if pcs is None:
                if pc >= end or n_live == 0:
                    break
                cur, base = pc, live_idx
                last_ran[:] = self.steps
            else:
                if burst == 0 and len(self.ctas) > 1 and self.steps - last_ran.min() > STARVED_AFTER:
                    favoured, burst = self._starved(pcs, last_ran, end)
                if burst:
                    burst -= 1
                    cur, base = self._min_pc_of_cta(pcs, favoured, end)
                    if base is None:
                        burst = 0
                if not burst:
                    cur = int(pcs.min())
                    if cur >= end:
                        if self.waiting_at:
                            raise self._named_barrier_deadlock()
                        break
                    base = np.flatnonzero(pcs == cur)
                if base.size == n_live:
                    pcs, base = None, live_idx
                else:
                    last_ran[self.cta_local[base]] = self.steps
            ins = instrs[cur]
            self.ins, self.pc = ins, cur
            self.steps += 1
            counts[cur] += 1
            if self.steps > self.max_steps:
                raise self._budget_error(counts, pcs, live)
            if self.steps % TURN_STEPS == 0:
                yield
            act = base
            taken = None
            if ins.guard is not None:
                self.act = act
                g = self.read(("reg", ins.guard[0]), "pred")
                if ins.guard[1]:
                    g = ~g
                if not g.all():
                    taken = g
                    act = np.flatnonzero(g) if act is None else act[g]
            if self.tracer is not None:
                self.tracer.begin(self, cur, base, act)
            kind = kinds[cur]
            if kind == BRANCH:
                if taken is None:
                    nxt = ins.target
                elif act.size == 0:
                    nxt = cur + 1
                else:
                    if pcs is None:
                        pcs = np.where(live, cur + 1, end)
                    pcs[act] = ins.target
                    not_taken = np.flatnonzero(~taken) if base is None else base[~taken]
                    pcs[not_taken] = cur + 1
                    continue
                if pcs is None:
                    pc = nxt
                else:
                    pcs[base] = nxt
                continue
            if kind == EXIT:
                gone = np.flatnonzero(live) if act is None and live_idx is None else (act if act is not None
                                                                                    else live_idx)
                live[gone] = False
                n_live -= gone.size
                live_idx = np.flatnonzero(live) if n_live < self.threads else None
                if n_live == 0:
                    break
                if pcs is None:
                    pcs = np.where(live, cur + 1, end)
                else:
                    pcs[gone] = end
                    rest = base if taken is None else base[~taken]
                    if taken is not None:
                        pcs[rest] = cur + 1
                continue
            if kind == BARRIER and ins.spec is not None:  # bar.sync id, count / bar.arrive: threads may wait
                if pcs is None:
                    pcs = np.where(live, cur, end)
                here = np.flatnonzero(live) if base is None else base
                pcs[here] = cur + 1
                if act is None or act.size:
                    self._counted_barrier(ins, here if act is None else act, cur, pcs, end + 1)
                continue
            if kind == BARRIER and pcs is not None:
                self._check_barrier(base, live, pcs)
            if kind == BARRIER and taken is not None:
                self._check_guarded_barrier(base, act)
            if act is None or act.size:
                self.act = act
                handlers[cur](self, ins)
            if pcs is None:
                pc = cur + 1
            else:
                pcs[base] = cur + 1
        self.act = None
        self.checks.exit(self)

    def _check_barrier(self, here: np.ndarray, live: np.ndarray, pcs: np.ndarray) -> None:
        ctas = len(self.ctas)
        arrived = np.bincount(self.cta_local[here], minlength=ctas)
        alive = np.bincount(self.cta_local[live], minlength=ctas)
        stuck = np.flatnonzero((arrived > 0) & (arrived != alive))
        if stuck.size:
            c = int(stuck[0])
            others = np.flatnonzero(live & (self.cta_local == c) & (pcs != pcs[here[0]]))
            other = int(others[0])
            waits = self.waiting_at.get(other)
            elsewhere = (self.kernel.instrs[int(pcs[other])] if waits is None else waits).source.describe()
            self.act = None
            raise self.error(f"bar.sync reached by only {int(arrived[c])} of the {int(alive[c])} live threads of the "
                             f"CTA: a deadlock on a GPU; {self.thread_info(other)} is at {elsewhere}",
                             int(here[np.flatnonzero(self.cta_local[here] == c)[0]]))

    def _starved(self, pcs: np.ndarray, last_ran: np.ndarray, end: int) -> tuple[int, int]:
        """The CTA that waited longest while others ran (one spinning on a lock another CTA holds,
        say), and how many steps it runs alone; (-1, 0) when it has nothing to run."""
        runnable = pcs.reshape(len(self.ctas), self.ntid).min(axis=1) < end
        waited = np.where(runnable, self.steps - last_ran, -1)
        c = int(np.argmax(waited))
        last_ran[~runnable] = self.steps
        return (c, STARVED_AFTER) if runnable[c] else (-1, 0)

    def _min_pc_of_cta(self, pcs: np.ndarray, cta: int, end: int) -> tuple[int, Optional[np.ndarray]]:
        """The smallest PC of CTA `cta`'s threads and the threads there (None: none runnable)."""
        mine = pcs[cta * self.ntid:(cta + 1) * self.ntid]
        cur = int(mine.min())
        if cur >= end:
            return cur, None
        return cur, cta * self.ntid + np.flatnonzero(mine == cur)

    def _counted_barrier(self, ins: Instr, act: np.ndarray, cur: int, pcs: np.ndarray, parked: int) -> None:
        """bar.sync / bar.arrive with a barrier number and thread count (ptx_isa_memory decodes
        them). The threads of `act` arrive at barrier b of their CTA; bar.sync ones wait (their PC
        becomes `parked`) until `count` threads have arrived, then all waiting ones go on."""
        self.act = act
        arrive_only, has_count = ins.spec
        name = ".".join((ins.opcode,) + ins.mods)
        bids = np.broadcast_to(np.asarray(self.read(ins.operands[0], "u32")), (act.size,))
        counts = np.broadcast_to(np.asarray(self.read(ins.operands[1], "u32")), (act.size,)) if has_count \
            else np.full(act.size, self.ntid)
        key = self.cta_local[act] * 16 + bids.astype(np.int64)
        for k in np.unique(key):
            rows = np.flatnonzero(key == k)
            who, count, bid = act[rows], int(counts[rows[0]]), int(bids[rows[0]])
            if bid > 15 or count % 32 or not 0 < count <= self.ntid or (counts[rows] != count).any():
                raise self.error(f"{name}: barrier {bid} with {count} threads: barriers are 0..15 and the "
                                 f"count a positive multiple of 32 up to the CTA's {self.ntid} threads, the same for "
                                 f"every thread", int(rows[0]))
            state = self.named_barriers.setdefault(int(k), [0, count, []])
            if state[1] != count:
                raise self.error(f"{name}: barrier {bid} used with {count} threads while {state[0]} threads have "
                                 f"arrived for {state[1]}", int(rows[0]))
            state[0] += who.size
            if not arrive_only:
                state[2].append((who, cur + 1))
                pcs[who] = parked
                for t in who:
                    self.waiting_at[int(t)] = ins
            if state[0] > count:
                raise self.error(f"{name}: {state[0]} threads arrived at barrier {bid}, which waits for {count}",
                                 int(rows[0]))
            if state[0] == count:
                released = np.concatenate([w for w, _ in state[2]]) if state[2] else who[:0]
                for w, resume in state[2]:
                    pcs[w] = resume
                for t in released:
                    self.waiting_at.pop(int(t), None)
                del self.named_barriers[int(k)]
                if released.size:
                    self.checks.barrier(released, self.cta_local[released])

    def _named_barrier_deadlock(self) -> EmulatorError:
        key, (arrived, count, waiting) = next(iter(self.named_barriers.items()))
        first = int(waiting[0][0][0])
        ins = self.waiting_at[first]
        self.act = None
        name = ".".join((ins.opcode,) + ins.mods)
        return self.error(f"{name}: barrier {key % 16} waits for {count} threads but only {arrived} arrived, and "
                          f"every other thread has exited or waits: a deadlock on a GPU", first, ins.source)

    def _check_guarded_barrier(self, here: Optional[np.ndarray], act: np.ndarray) -> None:
        """A bar.sync under a predicate: the threads of a CTA whose predicate is false go on
        while the others wait for them."""
        here = np.arange(self.threads) if here is None else here
        ctas = len(self.ctas)
        waiting = np.bincount(self.cta_local[act], minlength=ctas)
        present = np.bincount(self.cta_local[here], minlength=ctas)
        stuck = np.flatnonzero((waiting > 0) & (waiting != present))
        if stuck.size:
            c = int(stuck[0])
            skipping = np.setdiff1d(here[self.cta_local[here] == c], act)
            self.act = None
            raise self.error(f"bar.sync under a predicate true for only {int(waiting[c])} of the {int(present[c])} "
                             f"threads of the CTA here: a deadlock on a GPU ({self.thread_info(int(skipping[0]))} "
                             f"skips it)", int(act[np.flatnonzero(self.cta_local[act] == c)[0]]))

    def _budget_error(self, counts: list[int], pcs: Optional[np.ndarray], live: np.ndarray) -> StepBudgetError:
        """The step budget ran out: name the most executed instruction and a thread there (a
        deadlock across CTAs, each waiting for another, ends here too)."""
        hot = max(range(len(counts)), key=counts.__getitem__)
        src = self.kernel.instrs[hot].source
        self.act = None
        there = np.flatnonzero(live) if pcs is None else np.flatnonzero(live & (pcs <= hot))
        message = (f"the kernel ran {self.max_steps} steps without finishing (raise max_steps if it is just long); "
                   f"threads spin in a loop, or CTAs wait on each other (a deadlock on a GPU): the most executed "
                   f"instruction ran {counts[hot]} times")
        return StepBudgetError(self.kernel.name, message, src, self.thread_info(int(there[0]) if there.size else None))


def immediate(op: Operand, t: str) -> Any:
    """An immediate as a NumPy scalar of type `t` (f32/f64 hex immediates are bit patterns)."""
    value = op[1]
    nt = NP_TYPE.get(t)
    if t == "pred":
        return np.bool_(value)
    if len(op) == 3:  # 0f / 0d bits
        if op[2] == "f32":
            f = np.array(value, np.uint32).view(np.float32)[()]
        else:
            f = np.array(value, np.uint64).view(np.float64)[()]
        if t in ("f32", "f64"):
            return nt(f)
        return np.array(value & ((1 << TYPE_BITS[t]) - 1), UNSIGNED[TYPE_BITS[t]]).view(nt)[()]
    if t in ("f32", "f64", "f16"):
        return nt(value)
    w = TYPE_BITS[t]
    return np.array(value & ((1 << w) - 1), UNSIGNED[w]).view(nt)[()]
