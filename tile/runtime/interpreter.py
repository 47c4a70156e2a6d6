"""The NumPy interpreter of tile IR: runs a `tt.func` on the CPU, all programs of a grid at once.

    run_kernel(func, grid=(4, 1, 1), args=[x, y, out, n], kernel_name="add")

Every value carries a leading program axis (see interp_core), so a launch of 1024 programs
costs one NumPy operation per IR op, not 1024 Python loops. Grids run in chunks of programs
so that no value holds more than about CHUNK_ELEMENTS elements: small enough for NumPy's
temporaries to stay in the CPU's cache (and out of fresh, page-faulting allocations),
large enough that the Python cost per op is paid rarely. A kernel whose programs wait on each
other through memory (a spin lock) runs its programs one at a time instead, switching at the
waiting loops (interp_schedule). A func compiles once into
closures (interp_ops, interp_memory, interp_control, interp_extra); `compile_kernel` returns the compiled
form for callers that keep it, and `run_kernel` caches it per func.

Arguments follow the func's block arguments: NumPy arrays (or objects with `host_view()`)
for pointers, written in place; Python or NumPy numbers for scalars. Errors raise
`InterpreterError` naming the kernel, the op's source line and what went wrong.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional, Sequence

import numpy as np

from tile.ir.core import Operation
from tile.ir.types import DType, PointerType, TensorType

from . import interp_control, interp_extra, interp_memory, interp_ops  # noqa: F401  (they register the op closures)
from .interp_core import Compiler, ExecState, InterpreterError
from .interp_dtypes import constant
from .interp_memory import Memory
from .interp_schedule import Scheduler, needs_cooperative

__all__ = ["InterpreterError", "CompiledKernel", "compile_kernel", "run_kernel", "CHUNK_ELEMENTS"]

CHUNK_ELEMENTS = 1 << 17  # about 1 MiB per int64 value: temporaries stay in cache
_CACHE_SIZE = 256


class CompiledKernel:
    """A tt.func turned into closures, ready to run on any grid and arguments."""

    def __init__(self, func: Operation, kernel_name: str):
        if func.name != "tt.func":
            raise InterpreterError(kernel_name, func, f"expected a tt.func, got '{func.name}'")
        self.func = func
        self.name = kernel_name
        cc = Compiler(func, kernel_name)
        block = func.regions[0].block
        self.params = [(cc.slot(a), a.type, cc.arg_name(i)) for i, a in enumerate(block.args)]
        self.body, _ = cc.block(block)
        self.num_slots = cc.num_slots
        self.max_numel = max([t.numel for t in _all_types(func) if isinstance(t, TensorType)], default=1)
        self.cooperative = needs_cooperative(func)

    def __call__(self, grid: Sequence[int], args: Sequence[Any]) -> None:
        grid = _normalize_grid(self.name, grid)
        if len(args) != len(self.params):
            raise InterpreterError(self.name, None, f"expects {len(self.params)} arguments, got {len(args)}")
        arrays, names, writable, scalars, write_back = [], [], [], {}, []
        for (slot, t, name), arg in zip(self.params, args):
            if isinstance(t, PointerType):
                array, ok, back = _pointer_arg(self.name, name, arg)
                scalars[slot] = np.array([Memory.base(len(arrays)) if array is not None else 0], np.int64)
                arrays.append(array)
                names.append(name)
                writable.append(ok)
                if back is not None:
                    write_back.append(back)
            else:
                scalars[slot] = _scalar_arg(self.name, name, t, arg)
        mem = Memory(arrays, names, writable)
        total = grid[0] * grid[1] * grid[2]
        chunk = max(1, CHUNK_ELEMENTS // self.max_numel)
        try:
            if self.cooperative:
                scheduler = Scheduler(self.name, mem.bytes)
                scheduler.run(total, lambda linear: self._run_chunk(grid, linear, linear + 1, mem, scalars, scheduler))
            else:
                with np.errstate(all="ignore"):
                    for start in range(0, total, chunk):
                        self._run_chunk(grid, start, min(total, start + chunk), mem, scalars)
        finally:
            for back in write_back:
                back()

    def _run_chunk(self, grid, start: int, end: int, mem: Memory, scalars: dict,
                   scheduler: Optional[Scheduler] = None) -> None:
        P = end - start
        linear = np.arange(start, end, dtype=np.int64)
        gx, gy, gz = grid
        coords = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
        pids = tuple(np.zeros(1, np.int32) if g == 1 else c.astype(np.int32) for g, c in zip(grid, coords))
        st = ExecState(P, pids, grid, start, mem, scheduler)
        f: list = [None] * self.num_slots
        for slot, value in scalars.items():
            f[slot] = value
        for fn in self.body:
            fn(f, st)


def _all_types(func: Operation):
    for op in func.walk():
        for r in op.results:
            yield r.type
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    yield a.type


def _normalize_grid(name: str, grid: Sequence[int]) -> tuple[int, int, int]:
    dims = tuple(int(g) for g in grid)
    if not 1 <= len(dims) <= 3 or any(g < 0 for g in dims):
        raise InterpreterError(name, None, f"bad grid {tuple(grid)}: 1 to 3 non-negative sizes")
    return dims + (1,) * (3 - len(dims))


def _pointer_arg(kernel: str, name: str, arg: Any):
    """(array the kernel addresses, writable?, write-back callable or None) of a pointer argument."""
    if arg is None:
        return None, False, None
    if hasattr(arg, "host_view") and not isinstance(arg, np.ndarray):
        arg = arg.host_view()
    if not isinstance(arg, np.ndarray):
        raise InterpreterError(kernel, None, f"argument '{name}' is a pointer: pass a NumPy array, "
                                             f"not {type(arg).__name__}")
    if arg.flags.c_contiguous and arg.flags.writeable:
        return arg, True, None
    copy = np.ascontiguousarray(arg).copy()
    if not arg.flags.writeable:
        return copy, False, None

    def back() -> None:
        arg[...] = copy.reshape(arg.shape)

    return copy, True, back


def _scalar_arg(kernel: str, name: str, t, arg: Any) -> np.ndarray:
    if isinstance(arg, np.ndarray) and arg.size == 1:
        arg = arg.reshape(()).item()
    elif isinstance(arg, np.generic):
        arg = arg.item()
    if not isinstance(arg, (bool, int, float)) or not isinstance(t, DType):
        raise InterpreterError(kernel, None, f"argument '{name}' of type {t} got {type(arg).__name__}")
    return constant(arg, t)


_cache: OrderedDict[tuple[int, str], CompiledKernel] = OrderedDict()


def compile_kernel(func: Operation, kernel_name: Optional[str] = None) -> CompiledKernel:
    """Compile `func` (cached per func object: do not mutate a func after running it)."""
    name = kernel_name or func.attrs.get("sym_name", "kernel")
    key = (id(func), name)
    ck = _cache.get(key)
    if ck is None or ck.func is not func:
        ck = CompiledKernel(func, name)
        _cache[key] = ck
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    return ck


def run_kernel(func: Operation, grid: tuple[int, int, int], args: list, kernel_name: str) -> None:
    """Run verified tile IR `func` on `grid` with `args` (see the module docstring)."""
    compile_kernel(func, kernel_name)(grid, args)
