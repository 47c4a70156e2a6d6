"""The default order of the target-independent passes on tile IR.

expand-descriptors first turns tensor-descriptor accesses into masked pointer accesses, so
the passes after it see only pointers; unroll-loops repeats the bodies of loops marked with
tl.range's loop_unroll_factor; canonicalize and cse expose invariant and duplicate
work, licm moves it out of loops, combine fuses dot/add and load/select pairs, and a second
canonicalize + cse + dce cleans up what the fusions leave behind.
"""
from __future__ import annotations

from .canonicalize import Canonicalize
from .combine import Combine
from .cse import CSE
from .dce import DCE
from .expand_descriptors import ExpandDescriptors
from .licm import LICM
from .pass_manager import Pass
from .unroll import UnrollLoops


def tile_passes() -> list[Pass]:
    """expand-descriptors, unroll-loops, canonicalize, cse, licm, combine, canonicalize, cse, dce."""
    return [ExpandDescriptors(), UnrollLoops(), Canonicalize(), CSE(), LICM(), Combine(), Canonicalize(), CSE(), DCE()]


__all__ = ["tile_passes"]
