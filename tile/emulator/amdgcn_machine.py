"""The wave machine of AMDGCN: workgroups of waves running decoded gfx942, gfx90a or gfx1100 code.

What a student should picture (CDNA3 ISA chapters 3-4; the RDNA3 ISA for wave32):

*Waves.* A workgroup of `workgroup_size` work-items is split into waves of `wave_size` lanes
(64 on CDNA, 32 on RDNA3, from the metadata). A wave has 128 SGPRs (one value for the whole
wave), 256 VGPRs and, on CDNA, 256 AGPRs (one value per lane: the two halves of the unified
register file, AGPRs for MFMA accumulators and values moved there with v_accvgpr_write_b32),
EXEC (the lanes that execute a vector instruction), VCC (a lane mask, the carry of 64-bit adds)
and SCC (the scalar condition bit); a lane mask in SGPRs takes a pair on wave64 and one SGPR on
wave32. Registers are stored as uint64 arrays holding 32-bit words. At launch s[0:1] hold the
kernarg segment's address, the SGPRs from the descriptor's user SGPR count on (s2 on CDNA, s15
on gfx1100 for one id) the workgroup ids it enables, v0 the work-item id; EXEC holds the lanes
that exist (a partial last wave).

*Control flow is scalar.* A wave has one program counter: branches test SCC or EXEC, and
divergence is the compiler's business (it narrows EXEC with s_and_saveexec_b64 and restores it).

*Loads land late.* A global load, s_load or LDS read is issued with its values captured, and
writes its registers only when an `s_waitcnt` drains its counter (vmcnt: global memory,
lgkmcnt: LDS and scalar loads) far enough; until then touching those registers is an error,
so a missing wait fails instead of reading stale data. Stores and cache maintenance also count
(stores in vscnt on gfx1100, drained by s_waitcnt_vscnt).

*Memories.* Global memory is the emulator's GlobalMemory (the arguments' host arrays, bounds
checked with the argument named); the kernarg segment is an allocation of its own. LDS is a
byte array per workgroup that starts as garbage (fixed random bytes), as on the hardware.

*Scheduling and barriers.* Up to RESIDENT_WORKGROUPS workgroups are resident at once (in grid
order, the next starting as one ends) and take turns; in a turn each wave of a workgroup runs
until it reaches s_barrier, ends, or has run SLICE_STEPS more instructions. A wave at the
barrier waits until every wave of its workgroup still running is there.

*Wait states.* The machine runs each instruction to its end before the next, so it cannot be
wrong the way hardware is when a hazard's wait states are missing; it reports one instead. It
counts wait states (an instruction is one, s_nop N is N + 1) and fails a DPP instruction that
reads a VGPR a VALU instruction wrote fewer than isa.DPP_READ_WAIT_STATES before (gfx942 and
gfx90a: 2; the CDNA3 ISA's manually inserted wait states).

*Step budget.* A wave that runs more than `max_steps` instructions is reported with the
instruction it is at (a loop that does not end, a lock never released).
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from ..codegen.amdgcn.isa import D16_MERGE_KEEPS, INSTRUCTIONS
from ..utils import grid3
from . import amdgcn_isa as isa
from .amdgcn_decode import AmdInstr, AmdKernel, AmdOperand, Imm, Reg, Special, decode_amdgcn
from .amdgcn_execute import EXECUTE
from .checks import SharedChecks
from .errors import EmulatorError
from .memory import GlobalMemory

SGPRS, VGPRS, AGPRS = 128, 256, 256
# Workgroups run together, RESIDENT_WORKGROUPS at a time (in grid order, a new one as one ends),
# taking turns of SLICE_STEPS instructions per wave: a workgroup spinning on a flag another
# sets lets the other run, as resident workgroups do on a GPU.
RESIDENT_WORKGROUPS = 32
SLICE_STEPS = 256
BARRIER, SLICE = "barrier", "slice"   # why a wave stops running
LDS_SEED = 7   # LDS starts with these garbage bytes, as on the hardware
DEFAULT_MAX_STEPS = 1_000_000


class Wave:
    """One wave: its registers, EXEC/VCC/SCC, and its loads in flight."""

    def __init__(self, group: "Workgroup", first_item: int):
        self.group = group
        kernel = group.kernel
        lanes = group.wave_size
        self.lanes = lanes
        self.first_item = first_item
        self.s = np.zeros(SGPRS, np.uint64)
        self.v = np.zeros((VGPRS, lanes), np.uint64)
        self.a = np.zeros((AGPRS, lanes), np.uint64)
        lane_ids = np.arange(lanes)
        self.exec = first_item + lane_ids < kernel.workgroup_size
        self.vcc = np.zeros(lanes, bool)
        self.scc = False
        self.pending: list[tuple[str, set, list, bool]] = []   # (counter, cells, writes, in order), issued
        self.busy: set[tuple[str, int]] = set()
        address = group.launch.kernarg_address
        self.s[0], self.s[1] = address & isa.M32, address >> 32
        for k, axis in enumerate(kernel.workgroup_id_axes):
            self.s[kernel.user_sgprs + k] = group.ids[axis]
        self.v[0] = first_item + lane_ids
        self.ins: Optional[AmdInstr] = None
        self.index = 0   # the instruction's index in the kernel
        self.wait_states = 0                     # wait states so far (s_nop N counts N + 1)
        self.valu_wrote: dict[int, int] = {}     # VGPR -> the wait state of the last VALU write to it

    # errors --------------------------------------------------------------------------
    def error(self, message: str, lane: Optional[int] = None) -> EmulatorError:
        who = f"workgroup {self.group.ids}, wave {self.first_item // self.lanes}"
        if lane is not None:
            who += f", lane {lane} (work-item {self.first_item + lane})"
        where = self.ins.where() if self.ins is not None else ""
        return EmulatorError(self.group.kernel.name, f"{message} [{who}]", where=where)

    # registers -----------------------------------------------------------------------
    @staticmethod
    def cells(o: Reg) -> set[tuple[str, int]]:
        return {(o.bank, o.first + k) for k in range(o.count)}

    def check_merge_ready(self, o: AmdOperand) -> None:
        """A D16 LDS read's destination may still await earlier LDS reads (they land in issue
        order, before it: isa.D16_MERGE_KEEPS), not any other access."""
        others = set().union(*(p[1] for p in self.pending if not (p[0] == "lgkmcnt" and p[3])))
        if isinstance(o, Reg) and others & self.cells(o):
            raise self.error(f"{o.bank}{min(k for b, k in others & self.cells(o))} is touched before "
                             "its load was waited for (s_waitcnt)")

    def check_ready(self, o: AmdOperand) -> None:
        if isinstance(o, Reg) and self.busy and self.busy & self.cells(o):
            raise self.error(f"{o.bank}{min(k for b, k in self.busy & self.cells(o))} is touched before "
                             "its load was waited for (s_waitcnt)")

    @property
    def mask_width(self) -> int:
        """SGPRs of a lane mask: a pair on wave64, one on wave32."""
        return self.lanes // 32

    def mask_bits(self, lanes: np.ndarray) -> int:
        """A lane mask as the bits of its SGPRs (lane k: bit k)."""
        return int.from_bytes(np.packbits(lanes, bitorder="little").tobytes(), "little")

    def mask(self, value: int) -> np.ndarray:
        """The lanes of bits `value` (lane k: bit k), as bools."""
        raw = np.frombuffer((value & ((1 << self.lanes) - 1)).to_bytes(self.lanes // 8, "little"), np.uint8)
        return np.unpackbits(raw, bitorder="little").astype(bool)

    def read(self, o: AmdOperand, width: int = 1) -> np.ndarray:
        """Per-lane uint64 values of operand `o` (`width` dwords joined)."""
        self.check_ready(o)
        if isinstance(o, Imm):
            return np.full(self.lanes, o.value & ((1 << (32 * width)) - 1), np.uint64)
        if isinstance(o, Special):
            return np.full(self.lanes, self.mask_bits(self.exec if o.name == "exec" else self.vcc), np.uint64)
        if o.bank == "s":
            value = sum(int(self.s[o.first + k]) << (32 * k) for k in range(width))
            return np.full(self.lanes, value, np.uint64)
        file = self.v if o.bank == "v" else self.a
        value = file[o.first].copy()
        for k in range(1, width):
            value |= file[o.first + k] << np.uint64(32 * k)
        return value

    def scalar(self, o: AmdOperand, width: int = 1) -> int:
        return int(self.read(o, width)[0])

    def write(self, o: AmdOperand, values: Any, width: int = 1, lanes: Optional[np.ndarray] = None) -> None:
        """Write `values` (uint64 lanes, or one int) to `o`: SGPRs from lane 0, VGPRs in the
        active lanes (EXEC, or `lanes`)."""
        self.check_ready(o)
        if isinstance(values, (int, np.integer)):
            values = np.full(self.lanes, int(values) & ((1 << 64) - 1), np.uint64)
        values = np.asarray(values).astype(np.uint64)
        if isinstance(o, Special):
            if o.name == "exec":
                self.exec = self.mask(int(values[0]))
            else:
                self.vcc = self.mask(int(values[0]))
            return
        for k in range(width):
            word = (values >> np.uint64(32 * k)) & np.uint64(isa.M32)
            if o.bank == "s":
                self.s[o.first + k] = word[0]
            else:
                active = self.exec if lanes is None else lanes
                (self.v if o.bank == "v" else self.a)[o.first + k][active] = word[active]

    def issue(self, counter: str, target: Optional[Reg], writes: list, in_order: bool = True) -> None:
        """A memory instruction in flight: its `writes` (register, values, lanes) land at a wait.
        `in_order`: whether it returns in issue order among its counter's instructions (scalar
        loads do not)."""
        cells = self.cells(target) if target is not None else set()
        self.pending.append((counter, cells, writes, in_order))
        self.busy |= cells

    def wait(self, counts: dict[str, int]) -> None:
        """s_waitcnt: retire a counter's instructions until at most `counts[counter]` are in
        flight. vmcnt and the LDS part of lgkmcnt count in issue order; scalar loads may return
        out of order (CDNA3 ISA 4.4), so a wait that leaves some in flight lands LDS accesses
        first, then scalar loads newest first: the oldest stay pending, and only lgkmcnt(0)
        is sure to land a given scalar load."""
        for counter in ("vmcnt", "lgkmcnt", "vscnt"):
            if counter not in counts:
                continue
            mine = [p for p in self.pending if p[0] == counter]
            ordered = [p for p in mine if p[3]]
            scalar = [p for p in mine if not p[3]]
            landing = (ordered + scalar[::-1])[:max(0, len(mine) - counts[counter])]
            for p in landing:
                self.pending.remove(p)
            self.busy = set().union(*(q[1] for q in self.pending))
            for p in landing:
                for target, values, lanes, *keep in p[2]:
                    if keep:   # a D16 read: its half lands, the rest of the register stays (a later
                        file = self.v[target.first]   # D16 read into it may still be in flight)
                        file[lanes] = (file[lanes] & np.uint64(keep[0])) | values[lanes]
                    else:
                        self.write(target, values, 1, lanes)

    def check_dpp_reads(self, ins: AmdInstr) -> None:
        """A DPP instruction reads no VGPR within its target's DPP_READ_WAIT_STATES of a VALU write."""
        need = isa.DPP_READ_WAIT_STATES[self.group.kernel.target]
        for o in ins.uses:
            for r in range(o.first, o.first + o.count) if isinstance(o, Reg) and o.bank == "v" else ():
                waited = self.wait_states - self.valu_wrote.get(r, -need - 1) - 1
                if waited < need:
                    raise self.error(f"v{r} is read by a DPP instruction {waited} wait states after a VALU wrote it "
                                     f"({self.group.kernel.target} needs {need}: s_nop {need - waited - 1})")

    # execution -----------------------------------------------------------------------
    def run(self) -> Iterator[str]:
        """A generator: yields BARRIER at each s_barrier, SLICE every SLICE_STEPS instructions
        (other workgroups' turn), and returns at s_endpgm."""
        instrs = self.group.kernel.instrs
        pc, steps, budget = 0, 0, self.group.launch.max_steps
        while pc < len(instrs):
            ins = self.ins = instrs[pc]
            self.index = pc
            pc += 1
            steps += 1
            if steps > budget:
                raise self.error(f"more than {budget} instructions: a loop that does not end? (the wave is here)")
            if steps % SLICE_STEPS == 0:
                yield SLICE
            op = ins.opcode
            if op == "s_endpgm":
                return
            if op == "s_barrier":
                yield BARRIER
            elif op == "s_branch" or (op == "s_cbranch_scc1" and self.scc) or (
                    op == "s_cbranch_scc0" and not self.scc) or (op == "s_cbranch_execz" and not self.exec.any()):
                pc = ins.target
            elif op not in ("s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_execz"):
                for o in ins.uses:
                    self.check_ready(o)
                for o in ins.defs:
                    if op in D16_MERGE_KEEPS:
                        self.check_merge_ready(o)
                    else:
                        self.check_ready(o)
                row = INSTRUCTIONS[op]
                if row.is_dpp:
                    self.check_dpp_reads(ins)
                EXECUTE[op](self, ins)
                if row.is_valu:
                    self.valu_wrote.update((r, self.wait_states) for o in ins.defs if isinstance(o, Reg)
                                           and o.bank == "v" for r in range(o.first, o.first + o.count))
            self.wait_states += ins.uses[0].value + 1 if op == "s_nop" else 1
        raise self.error("the program ran past its end without s_endpgm")


class Workgroup:
    """One workgroup: its ids, its LDS with its race records, its waves.

    The LDS race checks are the PTX machine's (checks.SharedChecks, one CTA of
    `workgroup_size` threads): an LDS access by a work-item must be ordered after another
    work-item's conflicting access by an s_barrier between them. The attributes below are what
    those checks read of a machine (`m`)."""

    def __init__(self, launch: "Launch", ids: tuple[int, int, int]):
        self.launch, self.kernel, self.ids = launch, launch.kernel, ids
        self.wave_size = launch.kernel.wave_size
        self.lds = launch.rng.integers(0, 256, max(launch.kernel.lds_bytes, 0), np.uint8)
        size = self.kernel.workgroup_size
        self.checks = SharedChecks(self.lds.size, size, 1)
        self.ntid, self.grid, self.smem = size, launch.grid, self.lds
        self.ctas = np.array([ids[0] + launch.grid[0] * (ids[1] + launch.grid[1] * ids[2])])
        self.cta_local = np.zeros(size, np.int64)
        self.wave: Optional[Wave] = None   # the wave running

    # what SharedChecks reads of a machine
    def positions(self) -> np.ndarray:
        return self.wave.first_item + np.flatnonzero(self.wave.exec)

    @property
    def pc(self) -> int:
        return self.wave.index

    def error(self, message: str) -> EmulatorError:
        return self.wave.error(message)

    def lds_access(self, wave: Wave, index: np.ndarray, write: bool) -> None:
        """Check and record LDS bytes `index` ([active lanes, bytes]) accessed by `wave`."""
        self.wave = wave
        self.checks.access(self, index[:, 0], 1, index.shape[1], write)

    def start(self) -> None:
        self.waves = [Wave(self, first).run() for first in range(0, self.kernel.workgroup_size, self.wave_size)]
        self.at_barrier: set[int] = set()

    def advance(self) -> bool:
        """One turn: each wave not waiting at the barrier runs to the barrier, to its end or
        for a slice; the barrier opens when every wave still running waits there. Returns
        whether the workgroup is done."""
        for k, wave in enumerate(self.waves):
            if wave is None or k in self.at_barrier:
                continue
            event = next(wave, None)
            if event is None:
                self.waves[k] = None
            elif event == BARRIER:
                self.at_barrier.add(k)
        running = {k for k, wave in enumerate(self.waves) if wave is not None}
        if running and running <= self.at_barrier:
            self.at_barrier.clear()
            self.checks.barrier(np.arange(self.kernel.workgroup_size), self.cta_local)
        return not running


class Launch:
    """One launch: the kernel, global memory with the kernarg segment, the budget."""

    def __init__(self, kernel: AmdKernel, grid: tuple[int, int, int], gmem: GlobalMemory, kernarg: bytes,
                 max_steps: int):
        self.kernel, self.grid, self.gmem, self.max_steps = kernel, grid, gmem, max_steps
        self.kernarg_address = gmem.add_bytes("kernarg segment", kernarg)
        self.rng = np.random.default_rng(LDS_SEED)


def kernarg_segment(kernel: AmdKernel, grid: tuple[int, int, int], args: Union[Sequence[Any], Mapping[str, Any]],
                    gmem: GlobalMemory) -> tuple[bytes, list]:
    """The kernarg segment of a launch, laid out as the metadata says (pointers as host
    addresses of the arrays, registered in `gmem`), and the write-backs of arguments copied to
    the host. `args`: one per argument the metadata lists, or a mapping by argument name (where a
    parameter specialized away, such as an integer equal to 1, is simply unused)."""
    from ..runtime.host_args import to_host

    if isinstance(args, Mapping):
        missing = [a.name for a in kernel.user_args if a.name not in args]
        if missing:
            raise EmulatorError(kernel.name, f"no value for argument(s) {', '.join(missing)}")
        args = [args[a.name] for a in kernel.user_args]
    if len(args) != len(kernel.user_args):
        listed = ", ".join(a.name or "?" for a in kernel.user_args)
        raise EmulatorError(kernel.name, f"takes {len(kernel.user_args)} arguments ({listed}), got {len(args)}: "
                                         "pass them by name where a parameter was specialized away (one equal to 1)")
    segment = bytearray(max(kernel.kernarg_size, 8))
    values = iter(args)
    write_backs = []
    for k, a in enumerate(kernel.kernargs):
        if a.value_kind.startswith("hidden_block_count"):
            value: Any = grid["xyz".index(a.value_kind[-1])]
        elif a.value_kind.startswith("hidden_"):
            raise EmulatorError(kernel.name, f"kernel argument of kind {a.value_kind} is not known to the emulator")
        else:
            value = next(values)
        name = a.name or f"argument {k}"
        if a.value_kind == "global_buffer":
            try:
                host, back = to_host(value)
            except TypeError:
                host = back = None
            if not isinstance(host, np.ndarray):
                raise EmulatorError(kernel.name, f"argument '{name}' is a {type(value).__name__}: pass an array")
            raw = gmem.add(name, host, bool(host.flags.writeable)).to_bytes(8, "little")
            if back is not None:
                write_backs.append((back, host))
        else:
            if isinstance(value, np.ndarray) and value.size == 1:
                value = value.reshape(()).item()
            elif isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, float):
                dtype = {2: np.float16, 4: np.float32, 8: np.float64}[a.size]
                raw = np.array(value, dtype).tobytes()
            elif isinstance(value, (bool, int)):
                raw = (int(value) & ((1 << (8 * a.size)) - 1)).to_bytes(a.size, "little")
            else:
                raise EmulatorError(kernel.name, f"argument '{name}' got a {type(value).__name__}: pass a number")
        segment[a.offset:a.offset + a.size] = raw
    return bytes(segment), write_backs


def run_amdgcn(text: str, grid: Any, args: Union[Sequence[Any], Mapping[str, Any]],
               max_steps: int = DEFAULT_MAX_STEPS, reachable: Sequence[np.ndarray] = ()) -> None:
    """Run the kernel of AMDGCN text `text` (as tile emits it for gfx942) on `grid` workgroups
    with `args`: one per argument the metadata lists (NumPy arrays for pointers, numbers), or
    a mapping of them by name. `reachable`: NumPy arrays the kernel reaches only through
    addresses it loads from memory (a grouped GEMM's pointer tables, `a.ctypes.data`), accepted
    by the bounds checks as the arguments are and written in place."""
    kernel = decode_amdgcn(text)
    g = grid3(grid)
    gmem = GlobalMemory()
    for k, array in enumerate(reachable):
        if not isinstance(array, np.ndarray):
            raise EmulatorError(kernel.name, f"reachable[{k}] is a {type(array).__name__}: pass the NumPy array")
        gmem.add(f"reachable[{k}]", array, bool(array.flags.writeable))
    kernarg, write_backs = kernarg_segment(kernel, g, args, gmem)
    run_segment(kernel, g, gmem, kernarg, max_steps)
    for back, host in write_backs:
        back(host)


def run_segment(kernel: AmdKernel, grid: tuple[int, int, int], gmem: GlobalMemory, kernarg: bytes,
                max_steps: int = DEFAULT_MAX_STEPS) -> None:
    """Run decoded `kernel` on `grid` workgroups with a kernarg segment laid out by the caller
    (as a HIP launch hands it over), whose pointers address allocations registered in `gmem`."""
    launch = Launch(kernel, grid, gmem, kernarg, max_steps)
    waiting = ((x, y, z) for z, y, x in np.ndindex(grid[2], grid[1], grid[0]))
    resident: list[Workgroup] = []
    with np.errstate(all="ignore"):
        while True:
            for ids in itertools.islice(waiting, RESIDENT_WORKGROUPS - len(resident)):
                resident.append(Workgroup(launch, ids))
                resident[-1].start()
            if not resident:
                break
            resident = [group for group in resident if not group.advance()]


class AmdgcnEmulatorBackend:
    """The backend of a kernel compiled for an AMD target and run on the wave machine."""

    def __init__(self, text: str, max_steps: int = DEFAULT_MAX_STEPS):
        self.text, self.max_steps = text, max_steps
        decode_amdgcn(text)  # decode errors surface at compile time

    def run(self, grid: Any, args: Sequence[Any], trace: Any = None, reachable: Sequence[np.ndarray] = ()) -> None:
        run_amdgcn(self.text, grid, args, self.max_steps, reachable)

    def make_entry(self, positions: tuple[int, ...], value_count: int, compiled: Any = None) -> Any:
        def entry(grid: Any, values: tuple, args: tuple, stream: Optional[int]) -> Any:
            self.run(grid, [args[i] for i in positions])
            return compiled

        return entry


__all__ = ["run_amdgcn", "run_segment", "kernarg_segment", "Wave", "Workgroup", "Launch", "AmdgcnEmulatorBackend"]
