"""The schedule of a software-pipelined loop (tile/opt/pipeline.py), read from its gpu IR and drawn.

The pipeline pass turns the loads feeding a K loop's dot into copies into S = num_stages buffers,
issued S - 1 iterations ahead. This module reads that schedule back from the IR, not from the
pass's options, so the picture shows what the compiler did:

  S             the leading dimension of the multi-buffered gpu.local_alloc the loop reads
  prologue      the copies before the loop, each into the stage its gpu.local_view names
  lookahead     the stage a copy in the body writes relative to the stage the dot reads,
                found by evaluating the body's stage arithmetic ((%s + 2) >= 3 ? ... : ...)
                for every stage %s
  copy / wait   gpu.async_copy + gpu.async_wait {pending} (cp.async) or gpu.tma_load_async +
                gpu.mbarrier_wait (the TMA ring); dots marked is_async run as asynchronous wgmma

For iterations 0 .. n-1, copy j goes to stage j mod S: issued in the prologue when j < lookahead,
else in iteration j - lookahead, and read by iteration j's dot. With S = 3:

    slot        pro0   pro1   it0    it1    it2    it3
    buffer 0    c0 ~~~~~~~~~~ M0     c3 ~~~~~~~~~~ M3
    buffer 1           c1 ~~~~~~~~~~ M1     c4 ~~~~~
    buffer 2                  c2 ~~~~~~~~~~ M2     c5

    dots                      D0     D1     D2     D3

(cN: copy of iteration N issued; ~: in flight; MN: iteration N's dot reads the buffer; DN: the
dot of iteration N starts.) Asynchronous wgmma dots stay in flight until the gpu.dot_wait
{pending = p} of iteration N + p retires them ("D1 r0": dot 1 starts, dot 0 is retired), and a
copy may only overwrite a stage whose dot has been retired.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..ir import Operation, parse_op
from ..ir.core import Block, BlockArgument, Value
from .picture import Figure, Picture, hsl, text_grid, text_width

COPY_OPS = ("gpu.async_copy", "gpu.tma_load_async")
WAIT_OPS = ("gpu.async_wait", "gpu.mbarrier_wait")
SLOT = 64
ROW = 26
LEFT = 84

_ARITH = {
    "arith.add": lambda a, b: a + b,
    "arith.sub": lambda a, b: a - b,
    "arith.mul": lambda a, b: a * b,
    "arith.rem": lambda a, b: a % b,
}
_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__, "gt": int.__gt__,
            "ge": int.__ge__}


def evaluate(value: Value, env: dict[Value, int]) -> int:
    """The integer `value` computes when the values in `env` hold theirs (scalar arith only)."""
    if value in env:
        return env[value]
    op = value.owner_op
    if op is None:
        raise ValueError(f"pipeline timeline: {value!r} is not computed from the loop's stage")
    if op.name == "arith.constant":
        return int(op.attrs["value"])
    args = [evaluate(v, env) for v in op.operands]
    if op.name in _ARITH:
        return _ARITH[op.name](*args)
    if op.name == "arith.cmp":
        return int(_COMPARE[op.attrs["predicate"]](*args))
    if op.name == "arith.select":
        return args[1] if args[0] else args[2]
    raise ValueError(f"pipeline timeline: cannot evaluate {op.name} in a stage index")


@dataclass(frozen=True)
class Copy:
    """The copy of `iteration`'s operands into `buffer`, issued in slot `issued`, read in `read`."""

    iteration: int
    buffer: int
    issued: int
    read: int


def _view_index(copy: Operation) -> tuple[Operation, Value]:
    view = copy.operands[0].owner_op
    if view is None or view.name != "gpu.local_view":
        raise ValueError(f"pipeline timeline: {copy.name} does not write a gpu.local_view")
    return view.operands[0].owner_op, view.operands[1]


class PipelineFigure(Figure):
    """The stage/buffer schedule of the first pipelined loop of a gpu-IR function.

    num_stages, lookahead, prologue_buffers (stage of each prologue copy group), copy_kind
    ("cp.async" or "TMA"), wait (the body's wait op as text), async_dots (dots marked is_async),
    slots (names of the time slots), copies (one Copy per iteration), reads[i] (the buffer
    iteration i's dot reads), dots_in_flight (the body's gpu.dot_wait pending count, 0 for
    synchronous dots), dot_retired[i] (the iteration whose dot_wait completes iteration i's dot;
    `iterations` for the wait after the loop) and released (the TMA ring's stages are handed back
    on "empty" mbarriers, gpu.mbarrier_arrive, rather than at a barrier of all warps).
    """

    def __init__(self, func: Operation, iterations: Optional[int] = None):
        loop, stage_arg = self._find_loop(func)
        body = loop.regions[0].block
        copies = [op for op in body.ops if op.name in COPY_OPS]
        allocs = list(dict.fromkeys(_view_index(c)[0] for c in copies))
        self.buffers = [str(a.results[0].type) for a in allocs]
        self.num_stages = {a.results[0].type.shape[0] for a in allocs}.pop()
        self.copy_kind = "TMA" if copies[0].name == "gpu.tma_load_async" else "cp.async"
        self.wait = next(self._describe(op) for op in body.ops if op.name in WAIT_OPS)
        self.async_dots = sum(1 for op in body.ops if op.name == "tt.dot" and op.attrs.get("is_async"))
        self.dots_in_flight = next((op.attrs["pending"] for op in body.ops if op.name == "gpu.dot_wait"), 0)
        self.released = any(op.name == "gpu.mbarrier_arrive" for op in body.ops)
        self.lookahead = self._lookahead(copies, stage_arg)
        self.prologue_buffers = self._prologue(loop, allocs)
        first = evaluate(loop.operands[3 + stage_arg.index - 1], {})
        self.iterations = iterations = iterations or 2 * self.num_stages
        ahead, s = self.lookahead, self.num_stages
        self.slots = [f"pro{p}" for p in range(len(self.prologue_buffers))] + [f"it{i}" for i in range(iterations)]
        pro = len(self.prologue_buffers)
        self.reads = [(first + i) % s for i in range(iterations)]
        self.copies = [Copy(j, self.prologue_buffers[j] if j < pro else (self.reads[j - ahead] + ahead) % s,
                            j if j < pro else pro + j - ahead, pro + j) for j in range(iterations)]
        # iteration i's dot is complete after the gpu.dot_wait of iteration i + dots_in_flight
        # (at the loop's end, the gpu.dot_wait {pending = 0} after it: iteration `iterations`)
        self.dot_retired = [min(i + self.dots_in_flight, iterations) for i in range(iterations)]
        self.picture = self._draw()

    @staticmethod
    def _describe(op: Operation) -> str:
        attrs = ", ".join(f"{k} = {v}" for k, v in op.attrs.items())
        return op.name + (f" {{{attrs}}}" if attrs else "")

    @staticmethod
    def _find_loop(func: Operation) -> tuple[Operation, BlockArgument]:
        for op in func.walk():
            if op.name != "scf.for":
                continue
            body = op.regions[0].block
            copies = [o for o in body.ops if o.name in COPY_OPS]
            written = {c.operands[0] for c in copies}
            filled = {_view_index(c)[0].results[0] for c in copies}
            for view in (o for o in body.ops if o.name == "gpu.local_view" and o.results[0] not in written):
                index = view.operands[1]  # the stage the dot reads: a loop-carried block argument
                if isinstance(index, BlockArgument) and index.block is body and view.operands[0] in filled:
                    return op, index
        raise ValueError("pipeline timeline: no pipelined loop (a scf.for issuing async copies into buffers it "
                         "reads by a stage index) in this IR; compile with num_stages >= 2 and a dot fed by loads")

    def _lookahead(self, copies: list[Operation], stage_arg: BlockArgument) -> int:
        offsets = {(evaluate(_view_index(c)[1], {stage_arg: s}) - s) % self.num_stages
                   for c in copies for s in range(self.num_stages)}
        if len(offsets) != 1:
            raise ValueError(f"pipeline timeline: the copies write stages at offsets {sorted(offsets)} "
                             f"from the stage read")
        return offsets.pop()

    @staticmethod
    def _prologue(loop: Operation, allocs: list[Operation]) -> list[int]:
        block: Block = loop.parent
        before = block.ops[:block.ops.index(loop)]
        stages: list[int] = []
        for op in before:
            if op.name in COPY_OPS and _view_index(op)[0] in allocs:
                stage = evaluate(_view_index(op)[1], {})
                if not stages or stages[-1] != stage:
                    stages.append(stage)
        return stages

    def buffer_grid(self) -> list[list[str]]:
        """Per buffer and slot: cN issued, ~ in flight, MN read by iteration N's dot, . idle."""
        grid = [["." for _ in self.slots] for _ in range(self.num_stages)]
        for c in self.copies:
            for slot in range(c.issued + 1, c.read):
                grid[c.buffer][slot] = "~"
            grid[c.buffer][c.issued] = f"c{c.iteration}"
            grid[c.buffer][c.read] = f"M{c.iteration}" if c.read != c.issued else f"c{c.iteration}M"
        return grid

    def dot_row(self) -> list[str]:
        """Per slot: DN the dot of iteration N starts, rM the dot of iteration M is retired there."""
        pro = len(self.prologue_buffers)
        row = ["." for _ in self.slots]
        for i, done in enumerate(self.dot_retired):
            row[pro + i] = f"D{i}" if row[pro + i] == "." else f"D{i} {row[pro + i]}"
            if done != i and done < self.iterations:
                row[pro + done] = f"r{i}"
        return row

    def _title(self) -> str:
        dots = f"{self.async_dots} async wgmma dot(s)" if self.async_dots else "synchronous dots"
        released = ", stages released on mbarriers (no barrier)" if self.released else ""
        return (f"{self.num_stages} stages, {self.copy_kind} copies issued {self.lookahead} iteration(s) ahead, "
                f"wait: {self.wait}, {dots}{released}")

    def _draw(self) -> Picture:
        grid = self.buffer_grid()
        text = "\n".join([self._title(), *(f"buffer: {b}" for b in self.buffers),
                          text_grid(grid + [self.dot_row()], [f"buffer {b}" for b in range(self.num_stages)] + ["dots"],
                                    self.slots)])
        footer = "light: copy in flight (issued at its left end); dark: the iteration's dot reads the buffer"
        width = max(LEFT + SLOT * len(self.slots) + 10, text_width(self._title()) + 8, text_width(footer) + 8)
        height = 60 + ROW * (self.num_stages + 1) + 30
        pic = Picture(width, height, text)
        pic.label(4, 12, self._title(), size=9, anchor="start")
        top = 44
        for k, name in enumerate(self.slots):
            pic.label(LEFT + k * SLOT + SLOT / 2, top - 10, name, size=9)
        for b in range(self.num_stages):
            pic.label(LEFT - 6, top + b * ROW + ROW / 2, f"buffer {b}", size=9, anchor="end")
            pic.box(LEFT, top + b * ROW, SLOT * len(self.slots), ROW, "#f4f4f4")
        for c in self.copies:
            hue = c.iteration / max(self.iterations, 1)
            y = top + c.buffer * ROW + 3
            pic.box(LEFT + c.issued * SLOT + 2, y, (c.read - c.issued) * SLOT - 2, ROW - 6, hsl(hue, lightness=0.85),
                    hsl(hue, lightness=0.5), 1)
            pic.label(LEFT + c.issued * SLOT + 6, y + (ROW - 6) / 2, f"copy {c.iteration}", size=8, anchor="start")
            pic.box(LEFT + c.read * SLOT + 2, y, SLOT - 4, ROW - 6, hsl(hue, lightness=0.5))
            pic.label(LEFT + c.read * SLOT + SLOT / 2, y + (ROW - 6) / 2, f"dot {c.iteration}", size=8,
                      color="#ffffff")
        dots_top = top + self.num_stages * ROW
        pic.label(LEFT - 6, dots_top + ROW / 2, "dots", size=9, anchor="end")
        pro = len(self.prologue_buffers)
        for i, done in enumerate(self.dot_retired):  # from its start to the slot that retires it
            hue = i / max(self.iterations, 1)
            half = (ROW - 4) / 2 if self.dots_in_flight else ROW - 6
            y = dots_top + 3 + (half * (i % 2) if self.dots_in_flight else 0)
            end = min(done, self.iterations - 1) + pro
            pic.box(LEFT + (pro + i) * SLOT + 2, y, (end - pro - i + 1) * SLOT - 4, half, hsl(hue, lightness=0.5))
            pic.label(LEFT + (pro + i) * SLOT + 6, y + half / 2, f"dot {i}", size=7, anchor="start",
                      color="#ffffff")
        pic.label(4, height - 14, footer, size=9, anchor="start")
        return pic


def show_pipeline(ir: Any, iterations: Optional[int] = None) -> PipelineFigure:
    """Draw the schedule of the pipelined loop in `ir` (a gpu-IR function: an Operation, its text,
    or what `tile.dump(..., stage="gpu")` returns) over `iterations` loop iterations (default
    2 * num_stages)."""
    if isinstance(ir, Operation):
        func = ir
    elif isinstance(ir, str) or hasattr(ir, "text"):
        func = parse_op(ir if isinstance(ir, str) else ir.text)
    else:
        raise TypeError(f"show_pipeline expects gpu IR (an Operation, its text or a tile.dump of stage 'gpu'), "
                        f"not {type(ir).__name__}")
    return PipelineFigure(func, iterations)
