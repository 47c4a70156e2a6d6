"""Step-through traces: what chosen threads did, instruction by instruction.

    emulated = tile.emulate(add_kernel, target="sm_80", trace=[0, 1, 32])   # threads of the first CTA
    emulated[(1,)](x, y, out, n, BLOCK=1024)
    print(emulated.last_trace.format())

A `Trace` holds one `TraceStep` per instruction step that a traced thread was at (its PC was the
one the machine ran): whether the thread executed it (a false guard, or a branch not taken,
shows as not executed), the registers it wrote with their new values, and the memory it
touched (state space, load or store, address, bytes; the bytes for stores). Values are what the
instruction wrote, typed as the instruction typed them:

    step  12  thread 0 of CTA (0, 0, 0)  PTX line 31  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd5]
              kernels.py:13  x = tl.load(x_ptr + offsets, mask=mask)
              ld global 0x7f2a1c000000 (16 bytes)
              %f1 = 0.5  %f2 = -1.25  %f3 = 2.0  %f4 = 0.0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .program import Source


@dataclass
class Access:
    space: str  # global, shared, local
    kind: str  # "ld" or "st"
    address: int
    nbytes: int
    data: bytes = b""  # stored bytes

    def describe(self) -> str:
        text = f"{self.kind} {self.space} 0x{self.address:x} ({self.nbytes} bytes)"
        return text + (f" <- {self.data.hex()}" if self.data else "")


@dataclass
class TraceStep:
    step: int
    pc: int
    source: Source
    cta: tuple[int, int, int]
    thread: int
    executed: bool
    registers: dict[str, Any] = field(default_factory=dict)  # written registers: name -> new value
    memory: list[Access] = field(default_factory=list)

    def describe(self) -> str:
        head = (f"step {self.step:5d}  thread {self.thread} of CTA {self.cta}  PTX line {self.source.ptx_line}  "
                f"{self.source.ptx_text}" + ("" if self.executed else "  (not executed)"))
        lines = [head]
        if self.source.file:
            lines.append(f"            {self.source.file}:{self.source.line}  {self.source.text}")
        lines.extend(f"            {a.describe()}" for a in self.memory)
        if self.registers:
            lines.append("            " + "  ".join(f"{k} = {v}" for k, v in self.registers.items()))
        return "\n".join(lines)


@dataclass
class Trace:
    kernel: str
    steps: list[TraceStep] = field(default_factory=list)

    def of_thread(self, thread: int, cta: tuple[int, int, int] = (0, 0, 0)) -> list[TraceStep]:
        return [s for s in self.steps if s.thread == thread and s.cta == cta]

    def registers(self, thread: int, cta: tuple[int, int, int] = (0, 0, 0), upto: Optional[int] = None
                  ) -> dict[str, Any]:
        """The register file of a thread after step `upto` (default: the end), from its writes."""
        state: dict[str, Any] = {}
        for s in self.of_thread(thread, cta):
            if upto is not None and s.step > upto:
                break
            state.update(s.registers)
        return state

    def format(self) -> str:
        return "\n".join(s.describe() for s in self.steps)


class Tracer:
    """Records a batch's steps for the traced threads (batch positions); the machine calls
    `begin` before each step and `wrote` / `accessed` while the step runs."""

    def __init__(self, trace: Trace, positions: np.ndarray, threads: np.ndarray, ctas: list[tuple[int, int, int]]):
        self.trace, self.positions, self.threads, self.ctas = trace, positions, threads, ctas
        self.current: dict[int, TraceStep] = {}  # batch position -> its step now running

    def begin(self, m: Any, pc: int, here: Optional[np.ndarray], act: Optional[np.ndarray]) -> None:
        self.current = {}
        at = self.positions if here is None else self.positions[np.isin(self.positions, here)]
        if at.size == 0:
            return
        executed = np.ones(at.size, bool) if act is None else np.isin(at, act)
        ins = m.kernel.instrs[pc]
        for p, ran in zip(at, executed):
            k = int(np.flatnonzero(self.positions == p)[0])
            step = TraceStep(m.steps, pc, ins.source, self.ctas[k], int(self.threads[k]), bool(ran))
            self.trace.steps.append(step)
            if ran:
                self.current[int(p)] = step

    def wrote(self, m: Any, register: int, value: Any, t: str) -> None:
        """Register `register` was written with `value` (type t) for the active threads."""
        if not self.current:
            return
        values = np.broadcast_to(np.asarray(value), (m.count,))
        active = m.positions()
        for p, step in self.current.items():
            k = np.flatnonzero(active == p)
            if k.size:
                v = values[int(k[0])]
                step.registers[m.kernel.reg_names[register]] = bool(v) if t == "pred" else v.item()

    def accessed(self, m: Any, space: str, kind: str, address: np.ndarray, nbytes: int,
                 data: Optional[np.ndarray] = None, mask: Optional[np.ndarray] = None) -> None:
        """The active threads (those of `mask`) access `nbytes` at their `address`."""
        if not self.current:
            return
        active = m.positions()
        addresses = np.broadcast_to(np.asarray(address), (m.count,))
        for p, step in self.current.items():
            k = np.flatnonzero(active == p)
            if k.size and (mask is None or mask[int(k[0])]):
                raw = b"" if data is None else np.ascontiguousarray(data[int(k[0])]).tobytes()
                step.memory.append(Access(space, kind, int(addresses[int(k[0])]), nbytes, raw))


__all__ = ["Trace", "TraceStep", "Access", "Tracer"]
