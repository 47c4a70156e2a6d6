"""How many programs of a kernel one SM holds at once, and which resource decides it.

An SM runs several programs (CUDA blocks) at a time when it has room for them: each needs its
registers, its shared memory, its threads and one of the SM's block slots. While one program
waits (its prologue's first copies, its epilogue's stores) another computes, so a second
program per SM can hide what a single one leaves exposed: tutorial 07's attention forward at
S = 1024 runs 128 x 64 blocks in two stages (128 registers a thread, 96 KiB of shared memory:
two programs per SM) faster than 128 x 128 blocks in three (163 registers, 224 KiB: one).

    compiled = kernel.warmup(*args, grid=(1,), **constexprs)   # or tile.compile(..., target="sm_90a")
    tile.viz.show_occupancy(compiled)                          # registers from ptxas without a GPU
    tile.viz.occupancy(registers=128, shared_bytes=98336, threads=256, target="sm_90a").programs   # 2

The rules are those of NVIDIA's occupancy calculator: registers are given to each warp in units
of 256 (a thread's count rounded up to a multiple of 8, one unit at least), out of 65536 per
SM; each program's shared memory is its own plus 1 KiB the system keeps, rounded up to 128
bytes, out of the SM's; threads and programs per SM are capped (SM_LIMITS). The driver sizes the SM's shared memory
(its carveout from the L1 cache) for the kernel it launches; these figures assume it gives all
of it, which it does where that is what the programs need to fit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .picture import Figure, Picture, hsl, text_width

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256        # registers are allocated per warp in units of this many
SHARED_RESERVED = 1024     # bytes of shared memory the system keeps per program (sm_80 and later)
SHARED_UNIT = 128          # a program's shared memory is allocated in units of this many bytes
WARP = 32


@dataclass(frozen=True)
class SMLimits:
    """What one SM of a target offers its programs."""

    shared_bytes: int   # shared memory for programs, at the largest carveout
    threads: int        # resident threads
    programs: int       # resident programs (block slots)


SM_LIMITS: Mapping[str, SMLimits] = {
    "sm_80": SMLimits(167936, 2048, 32),
    "sm_86": SMLimits(102400, 1536, 16),
    "sm_89": SMLimits(102400, 1536, 24),
    "sm_90": SMLimits(233472, 2048, 32),
    "sm_90a": SMLimits(233472, 2048, 32),
}


@dataclass(frozen=True)
class Occupancy:
    """Programs per SM allowed by each resource (`by`: registers, shared memory, threads, block
    slots), the least of them (`programs`), the resources that set it (`limits`), and what one
    program takes of each (`per_program`) against what the SM has (`per_sm`)."""

    target: str
    registers: int
    shared_bytes: int
    threads: int
    by: dict[str, int]
    per_program: dict[str, int]
    per_sm: dict[str, int]

    @property
    def programs(self) -> int:
        return min(self.by.values())

    @property
    def limits(self) -> tuple[str, ...]:
        return tuple(name for name, fits in self.by.items() if fits == self.programs)

    @property
    def warps(self) -> int:
        """Resident warps per SM at this occupancy."""
        return self.programs * self.threads // WARP


def occupancy(registers: int, shared_bytes: int, threads: int, target: str = "sm_90a") -> Occupancy:
    """The programs of a kernel that one SM of `target` holds: `registers` per thread,
    `shared_bytes` per program (its dynamic and static shared memory), `threads` per program."""
    limits = SM_LIMITS.get(target)
    if limits is None:
        raise ValueError(f"no occupancy rules for target {target!r}; known: {', '.join(SM_LIMITS)}")
    if registers < 0 or shared_bytes < 0 or threads <= 0 or threads % WARP:
        raise ValueError(f"occupancy needs registers >= 0, shared_bytes >= 0 and a positive multiple of {WARP} "
                         f"threads; got {registers}, {shared_bytes}, {threads}")
    warps = threads // WARP
    per_warp = max(-(-registers * WARP // REGISTER_UNIT), 1) * REGISTER_UNIT
    shared = -(-(shared_bytes + SHARED_RESERVED) // SHARED_UNIT) * SHARED_UNIT
    per_program = {"registers": per_warp * warps, "shared memory": shared, "threads": threads, "block slots": 1}
    per_sm = {"registers": REGISTERS_PER_SM, "shared memory": limits.shared_bytes, "threads": limits.threads,
              "block slots": limits.programs}
    by = {"registers": REGISTERS_PER_SM // per_warp // warps,
          "shared memory": limits.shared_bytes // shared,
          "threads": limits.threads // threads,
          "block slots": limits.programs}
    return Occupancy(target, registers, shared_bytes, threads, by, per_program, per_sm)


class OccupancyFigure(Figure):
    """One bar per resource: what the kernel's programs take of the SM at its occupancy, the
    resources that set it in a darker shade. `occupancy` holds the figures."""

    BAR = 360
    ROW = 26
    LEFT = 110

    def __init__(self, occ: Occupancy, name: str = "kernel"):
        self.occupancy = occ
        self.name = name
        self.picture = self._draw()

    def _lines(self) -> list[str]:
        occ = self.occupancy
        lines = []
        for resource, fits in occ.by.items():
            used, total = occ.per_program[resource] * occ.programs, occ.per_sm[resource]
            lines.append(f"{resource:>13}: {occ.per_program[resource]} a program, {used} of {total} at "
                         f"{occ.programs} (alone it allows {fits})")
        return lines

    def _draw(self) -> Picture:
        occ = self.occupancy
        title = (f"{self.name} on {occ.target}: {occ.programs} program{'s' if occ.programs != 1 else ''} per SM "
                 f"({occ.warps} warps), set by {' and '.join(occ.limits)}")
        lines = self._lines()
        width = max(self.LEFT + self.BAR + 20, text_width(title, 10) + 20, max(text_width(t, 8) for t in lines) + 20)
        height = 30 + self.ROW * len(occ.by) + 14 * len(lines) + 10
        pic = Picture(width, height, "\n".join([title] + lines))
        pic.label(8, 14, title, size=10, anchor="start")
        for row, resource in enumerate(occ.by):
            y = 28 + row * self.ROW
            pic.label(self.LEFT - 6, y + 9, resource, size=9, anchor="end")
            pic.box(self.LEFT, y, self.BAR, 18, "#eeeeee", stroke="#999999")
            share = occ.per_program[resource] / occ.per_sm[resource]
            dark = resource in occ.limits
            for k in range(occ.programs):
                pic.box(self.LEFT + k * share * self.BAR, y, share * self.BAR, 18,
                        hsl(0.58 if dark else 0.33, lightness=0.45 if dark else 0.7))
        y = 30 + self.ROW * len(occ.by)
        for i, line in enumerate(lines):
            pic.label(8, y + 14 * i + 6, line, size=8, anchor="start")
        return pic


def show_occupancy(kernel: Any = None, *, registers: Optional[int] = None, shared_bytes: Optional[int] = None,
                   threads: Optional[int] = None, target: Optional[str] = None) -> OccupancyFigure:
    """Draw how many programs of `kernel` (a compiled kernel: what `warmup`, `tile.compile` or a
    launch returns; its registers come from the driver once loaded, else from ptxas) one SM
    holds, or of a kernel given by its `registers` per thread, `shared_bytes` and `threads` per
    program on `target`."""
    if kernel is not None:
        if not hasattr(kernel, "n_regs") or not hasattr(kernel, "gpu_code"):
            raise TypeError(f"show_occupancy expects a compiled kernel (kernel.warmup(...), tile.compile(...)), "
                            f"not {type(kernel).__name__}")
        code = kernel.gpu_code()
        occ = occupancy(kernel.n_regs, code.launch_info["shared_bytes"], code.launch_info["threads"],
                        target or code.target)
        return OccupancyFigure(occ, kernel.name)
    if registers is None or shared_bytes is None or threads is None:
        raise TypeError("show_occupancy needs a compiled kernel, or registers, shared_bytes and threads")
    return OccupancyFigure(occupancy(registers, shared_bytes, threads, target or "sm_90a"))
