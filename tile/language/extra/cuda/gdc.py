"""Grid dependency control (programmatic dependent launch, sm_90 and newer): griddepcontrol.

A kernel launched as a dependent of another may start before that one finishes; `gdc_wait()`
blocks until the prior grid has completed and its memory is visible, and
`gdc_launch_dependents()` lets the next grid start launching early. Both are harmless when
the launch is an ordinary one.

    @tile.jit
    def consumer(x_ptr, ...):
        setup = ...                         # work that does not read the producer's output
        tl.extra.cuda.gdc_wait()
        x = tl.load(x_ptr + offs)           # the producer's output is visible now

On the NumPy interpreter, launches run one after another, so both do nothing there.
Compiling them for a target before sm_90 is an error.
"""
from __future__ import annotations

from tile.frontend.core import builtin, current
from tile.frontend.semantics_extra import INTERPRETER_TARGET
from tile.ir.types import i32


def _griddepcontrol(instruction: str, name: str) -> None:
    sem = current()
    if sem.target == INTERPRETER_TARGET:
        return
    if sem.target is not None and sem.target.startswith("sm_") and int(sem.target[3:5]) < 90:
        raise ValueError(f"tl.extra.cuda.{name} uses griddepcontrol, which needs sm_90 or newer; the kernel is "
                         f"compiled for {sem.target}")
    # the asm must produce a value: a dummy register, named only in a comment
    sem.inline_asm_elementwise(f"griddepcontrol.{instruction}; // dummy $0", "=r", [], i32, False, 1)


@builtin
def gdc_wait() -> None:
    """Wait until the grid this one depends on (programmatic dependent launch) has completed and
    its memory writes are visible. sm_90 and newer; a no-op on the interpreter."""
    _griddepcontrol("wait", "gdc_wait")


@builtin
def gdc_launch_dependents() -> None:
    """Allow the grid that depends on this one to start launching once every program has called
    this (or finished). Calls after the first have no effect. sm_90 and newer; a no-op on the
    interpreter."""
    _griddepcontrol("launch_dependents", "gdc_launch_dependents")


__all__ = ["gdc_wait", "gdc_launch_dependents"]
