"""Launching kernels on the emulator.

    run_ptx(ptx, grid=(4,), args=[x, y, out, n])             # any PTX text tile emits
    tile.emulate(add, target="sm_80")[grid](x, y, out, n, BLOCK=1024)   # compile for sm_80, run its PTX
    TILE_EMULATE=1 python script.py                          # kernel[grid](...) runs here when there is no GPU

Arguments are NumPy arrays (CPU torch tensors, tile DeviceArrays and GPU arrays are copied to
the host and back, as the interpreter does) and Python numbers. A grid runs in batches of
CTAs: each batch is one `Machine` whose registers hold every thread of its CTAs, so a launch
costs one NumPy operation per instruction per batch. Batches run one after the other, and in
turns when one does not finish quickly (its CTAs may wait on those of a later batch).
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from ..codegen.floats import float_bits
from ..ir.types import bf16, f16
from ..utils import grid3
from .errors import EmulatorError, StepBudgetError
from .machine import Machine
from .memory import GlobalMemory
from .program import Kernel, Module
from .ptx_decode import decode_module
from ..tools.tensor_descriptor import TensorDescriptor
from .tensor_maps import emulator_tensor_map
from .trace import Trace, Tracer

BATCH_THREADS = 1 << 17  # threads per batch: registers of about 512 KiB each
BATCH_SHARED_BYTES = 1 << 21  # shared memory per batch (the race checks keep 32 bytes of records per byte)
DEFAULT_MAX_STEPS = 2_000_000
# the batches that run in turns hold their registers and shared memory (with its race records)
# at once: at most this many threads and shared bytes (four full batches), and at least two batches
MAX_LIVE_THREADS = 4 * BATCH_THREADS
MAX_LIVE_SHARED_BYTES = 4 * BATCH_SHARED_BYTES
EMULATOR_PREFIX = "emulator:"


def _scalar_bits(kernel: str, name: str, ptype: str, kind: Optional[str], value: Any) -> int:
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    elif isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise EmulatorError(kernel, f"argument '{name}' (.param .{ptype}) got a {type(value).__name__}")
    if ptype == "f32":
        return int(np.array(value, np.float32).view(np.uint32))
    if ptype == "f64":
        return int(np.array(value, np.float64).view(np.uint64))
    if ptype == "b16":
        return float_bits(float(value), bf16 if kind == "bf16" else f16)
    bits = 8 * {"u8": 1, "s8": 1, "u16": 2, "s16": 2, "u32": 4, "s32": 4, "b32": 4}.get(ptype, 8)
    return int(value) & ((1 << bits) - 1)


def _handlers(kernel: Kernel) -> tuple[list[int], list[Callable]]:
    from .ptx_isa import ISA

    defs = [ISA[i.opcode] for i in kernel.instrs]
    return [d.kind for d in defs], [d.execute for d in defs]


def run_ptx(ptx: str, grid: Any, args: Sequence[Any], kernel: Optional[str] = None, threads: Optional[int] = None,
            shared_bytes: int = 0, arg_kinds: Optional[Sequence[str]] = None, arg_names: Optional[Sequence[str]] = None,
            max_steps: int = DEFAULT_MAX_STEPS, trace: Optional[Sequence[tuple[int, int]]] = None,
            reachable: Sequence[np.ndarray] = ()) -> Optional[Trace]:
    """Run kernel `kernel` (default: the module's only kernel) of PTX text `ptx` on `grid` with
    `args` (one per .param: arrays for pointers, numbers for scalars). `threads` per CTA
    defaults to the kernel's .maxntid; `shared_bytes` is the dynamic shared memory; `arg_kinds`
    (tile's launch metadata: "ptr", "f16", "bf16", ...) says how to pass 16-bit floats.
    `trace`: (linear CTA index, thread) pairs to record step by step; the Trace is returned.
    `reachable`: NumPy arrays the kernel reaches through pointers stored in memory (the matrices of
    a grouped GEMM, whose addresses, `array.ctypes.data`, sit in a pointer table): registered as
    allocations "reachable[i]" beside the arguments, so the bounds checks accept them."""
    from ..runtime.host_args import to_host

    module: Module = decode_module(ptx)
    if kernel is None:
        if len(module.kernels) != 1:
            raise EmulatorError("?", f"the module has kernels {', '.join(module.kernels)}: name one")
        kernel = next(iter(module.kernels))
    if kernel not in module.kernels:
        raise EmulatorError(kernel, f"no such kernel in the module (it has {', '.join(module.kernels)})")
    k = module.kernels[kernel]
    if len(args) != len(k.params):
        raise EmulatorError(kernel, f"expects {len(k.params)} arguments, got {len(args)}")
    ntid = threads or k.max_threads or 128
    g = grid3(grid)
    gmem = GlobalMemory()
    params: dict[str, int] = {}
    write_backs = []
    symbols: dict[str, tuple[str, int]] = {}
    for i, (p, a) in enumerate(zip(k.params, args)):
        name = arg_names[i] if arg_names else p.name
        if p.array:  # a byte array parameter (a TMA tensor map): its bytes, addressed through cvta.param
            if isinstance(a, TensorDescriptor):  # a launch's descriptor: its tensor map in the emulator's format
                a = emulator_tensor_map(a)
            payload = bytes(a) if isinstance(a, (bytes, bytearray)) else np.asarray(a, np.uint8).tobytes()
            if len(payload) != p.size:
                raise EmulatorError(kernel, f"argument '{name}' (.param .b8 [{p.size}]) got {len(payload)} bytes")
            symbols[p.name] = ("param", gmem.add_bytes(name, payload))
            params[p.name] = symbols[p.name][1]
            continue
        if a is None:
            params[p.name] = 0
            continue
        if isinstance(a, (bool, int, float, np.generic)) or (isinstance(a, np.ndarray) and a.ndim == 0):
            params[p.name] = _scalar_bits(kernel, name, p.type, arg_kinds[i] if arg_kinds else None, a)
            continue
        host, back = to_host(a)
        if not isinstance(host, np.ndarray):
            raise EmulatorError(kernel, f"argument '{name}' is a {type(a).__name__}: pass an array or a number")
        params[p.name] = gmem.add(name, host, bool(host.flags.writeable))
        if back is not None:
            write_backs.append((back, host))
    for i, array in enumerate(reachable):
        if not isinstance(array, np.ndarray):
            raise EmulatorError(kernel, f"reachable[{i}] is a {type(array).__name__}: pass the NumPy array whose "
                                        f"address the kernel loads")
        gmem.add(f"reachable[{i}]", array, bool(array.flags.writeable))
    for gname, data in module.globals.items():
        symbols[gname] = ("global", gmem.add_bytes(gname, data.data))
    for sname, off in k.shared_symbols.items():
        symbols[sname] = ("shared", off)
    static = k.static_shared_bytes
    if module.dynamic_shared is not None:
        align = module.dynamic_shared_align
        static = -(-static // align) * align
        symbols[module.dynamic_shared] = ("shared", static)
    for lname, off in k.local_symbols.items():
        symbols[lname] = ("local", off)
    kinds, handlers = _handlers(k)
    total = g[0] * g[1] * g[2]
    per_batch = max(1, min(BATCH_THREADS // ntid, BATCH_SHARED_BYTES // max(static + shared_bytes, 1)))
    log = Trace(kernel) if trace is not None else None
    starts = iter(range(0, total, per_batch))

    def start_batch() -> Optional[Iterator[None]]:
        """The next batch of CTAs, ready to run (None when all have started)."""
        start = next(starts, None)
        if start is None:
            return None
        ctas = np.arange(start, min(total, start + per_batch), dtype=np.int64)
        machine = Machine(k, ctas, g, ntid, params, gmem, static + shared_bytes, symbols, max_steps)
        if log is not None:
            machine.tracer = _tracer(log, trace, ctas, g, ntid)
        return machine.run(kinds, handlers)

    live_batches = max(2, min(MAX_LIVE_THREADS // (per_batch * ntid),
                              MAX_LIVE_SHARED_BYTES // max(per_batch * (static + shared_bytes), 1)))
    with np.errstate(all="ignore"):
        try:
            _run_in_turns(start_batch, live_batches)
        except StepBudgetError as error:
            unstarted = total - next(starts, total)
            if not unstarted:
                raise
            raise StepBudgetError(error.kernel, f"{error.message}; {unstarted} CTAs of the grid had not started (the "
                                                f"emulator runs at most {live_batches} batches of {per_batch} CTAs "
                                                f"at once)", error.source, error.where) from None
    for back, host in write_backs:
        back(host)
    return log


def _run_in_turns(start_batch: Callable[[], Optional[Iterator[None]]], live_batches: int) -> None:
    """Run the batches of a grid: one at a time while each finishes within its turn
    (machine.TURN_STEPS steps); a batch that does not may wait on CTAs of a later batch (a flag
    or a lock they set), so the next batch starts beside it, up to `live_batches`, and the
    running ones take turns. A true deadlock ends at the step budget of a batch, naming where its
    threads spin."""
    running: collections.deque = collections.deque()
    first = start_batch()
    if first is not None:
        running.append(first)
    while running:
        try:
            next(running[0])
        except StopIteration:
            running.popleft()
            if not running:
                following = start_batch()
                if following is not None:
                    running.append(following)
            continue
        if len(running) < live_batches:
            following = start_batch()
            if following is not None:
                running.append(following)
        running.rotate(-1)


def _tracer(log: Trace, chosen: Sequence[tuple[int, int]], ctas: np.ndarray, grid: tuple[int, int, int],
            ntid: int) -> Optional[Tracer]:
    """The tracer of a batch of `ctas` for the chosen (CTA, thread) pairs among them."""
    here = [(c, t) for c, t in chosen if ctas[0] <= c <= ctas[-1] and 0 <= t < ntid]
    if not here:
        return None
    gx, gy, _ = grid
    positions = np.array([(c - ctas[0]) * ntid + t for c, t in here], np.int64)
    return Tracer(log, positions, np.array([t for _, t in here]),
                  [(c % gx, (c // gx) % gy, c // (gx * gy)) for c, _ in here])


# ------------------------------------------------------------------ tile kernels


def _aligned_scratch(nbytes: int) -> np.ndarray:
    """`nbytes` zeroed bytes at an address aligned as the allocator's scratch is."""
    from ..runtime.allocation import SCRATCH_ALIGNMENT

    raw = np.zeros(nbytes + SCRATCH_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % SCRATCH_ALIGNMENT
    return raw[start:start + nbytes]


class EmulatorBackend:
    """The backend of a kernel compiled for a PTX target and run on the emulator."""

    def __init__(self, ptx: str, metadata: dict[str, Any], max_steps: int = DEFAULT_MAX_STEPS):
        self.ptx, self.metadata, self.max_steps = ptx, metadata, max_steps
        decode_module(ptx)  # decode errors surface at compile time

    def run(self, grid: Any, args: Sequence[Any], trace: Optional[Sequence[tuple[int, int]]] = None,
            reachable: Sequence[np.ndarray] = ()) -> Optional[Trace]:
        """Run on `args`; a kernel with global scratch (its in-kernel tensor maps) gets a zeroed
        host buffer of `global_scratch_bytes` per program as its last argument, as a launch does."""
        md = self.metadata
        per_program = md.get("global_scratch_bytes", 0)
        if per_program:
            gx, gy, gz = grid3(grid)
            args = [*args, _aligned_scratch(per_program * gx * gy * gz)]
        return run_ptx(self.ptx, grid, args, md["name"], md["threads"], md["shared_bytes"], md["arg_kinds"],
                       max_steps=self.max_steps, trace=trace, reachable=reachable)

    def make_entry(self, positions: tuple[int, ...], value_count: int, compiled: Any = None) -> Callable[..., Any]:
        def entry(grid: Any, values: tuple, args: tuple, stream: Optional[int]) -> Any:
            self.run(grid, [args[i] for i in positions])
            return compiled

        return entry


def compile_for_emulator(fn: Any, spec: Any, options: dict[str, Any], target: str,
                         max_steps: int = DEFAULT_MAX_STEPS) -> Any:
    """Compile `fn` under `spec` for `target` ("sm_80", "emulator:sm_80", or an AMD target such
    as "gfx942") and give the CompiledKernel an EmulatorBackend (PTX) or an
    amdgcn_machine.AmdgcnEmulatorBackend (AMDGCN)."""
    from .. import compiler

    ptx_target = target[len(EMULATOR_PREFIX):] if target.startswith(EMULATOR_PREFIX) else target
    if ptx_target.startswith("gfx"):  # an AMD target: its AMDGCN text runs on the wave machine
        from .amdgcn_machine import AmdgcnEmulatorBackend

        kernel = compiler.compile_kernel(fn, spec, options, ptx_target, until="amdgcn")
        kernel.backend = AmdgcnEmulatorBackend(kernel.stages["amdgcn"], max_steps)
        return kernel
    kernel = compiler.compile_kernel(fn, spec, options, ptx_target, until="ptx")
    kernel.backend = EmulatorBackend(kernel.stages["ptx"], kernel.launch_info, max_steps)
    return kernel


class Emulated:
    """`tile.emulate(kernel, target)`: index with a grid, call with the kernel's arguments."""

    def __init__(self, fn: Any, target: str, max_steps: int, trace: Any = False,
                 trace_cta: tuple[int, int, int] = (0, 0, 0), reachable: Sequence[np.ndarray] = ()):
        from ..frontend.jit import JITFunction

        while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):  # autotune / heuristics wrappers
            fn = fn.fn
        if not isinstance(fn, JITFunction):
            raise TypeError(f"tile.emulate needs a @tile.jit kernel, got {type(fn).__name__}")
        from ..codegen.target import targets_of

        family, known = ("AMD", targets_of("amdgcn")) if target.startswith("gfx") else ("PTX", targets_of("ptx"))
        if target not in known:
            raise ValueError(f"unknown {family} target {target!r}; expected one of {', '.join(known)}")
        self.fn, self.target, self.max_steps = fn, target, max_steps
        if trace is True:
            trace = (0,)
        if trace is not False and (isinstance(trace, (str, bytes)) or
                                   not all(isinstance(t, int) and t >= 0 for t in trace)):
            raise TypeError(f"trace= takes True or thread indices of a CTA (a list of ints), got {trace!r}")
        self.trace_threads = () if trace is False else tuple(trace)
        if self.trace_threads and target.startswith("gfx"):
            raise ValueError(f"trace= steps through PTX only; {target} runs on the AMDGCN wave machine without it")
        self.trace_cta = tuple(trace_cta) + (0,) * (3 - len(trace_cta))
        self.reachable = tuple(reachable)
        self.last_trace: Optional[Trace] = None
        self.cache: dict[tuple, Any] = {}

    def _specialize(self, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
        """The specialization and runtime values, as JITFunction.specialize; for a target with TMA
        (sm_90a) host descriptors also pass their tensor maps, in the emulator's format."""
        from ..frontend.specialize import Specialization, leaf_values, python_value
        from ..runtime.tensor_map import uses_tensor_maps
        if not uses_tensor_maps(self.target):
            return self.fn.specialize(args, kwargs)
        bound = self.fn._bind(tuple(args), dict(kwargs))
        spec = Specialization(self.fn.arg_names, self.fn._key(bound), tensor_maps=True)
        leaves = [leaf for v, k in zip(bound, spec.key) for leaf in leaf_values(v, k, True)]
        values = [emulator_tensor_map(leaves[i]) if isinstance(leaves[i], TensorDescriptor) else python_value(leaves[i])
                  for i in spec.runtime_indices]
        return spec, values

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.run, grid)

    def run(self, grid: Any, *args: Any, **kwargs: Any) -> Any:
        from ..frontend.binder import KEYED_OPTIONS, LAUNCH_OPTIONS

        options = {name: kwargs.pop(name, default) for name, default in LAUNCH_OPTIONS if name not in self.fn._index}
        spec, values = self._specialize(args, kwargs)
        keyed = {name: options[name] for name in KEYED_OPTIONS if name != "num_ctas"}
        key = (spec.key, tuple(sorted(keyed.items(), key=str)))
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self.cache[key] = compile_for_emulator(self.fn, spec, keyed, self.target, self.max_steps)
        if callable(grid):
            meta = dict(zip(self.fn.arg_names, self.fn._bind(args, kwargs)))
            grid = grid(meta)
        chosen = None
        if self.trace_threads:
            gx, gy, _ = grid3(grid)
            x, y, z = self.trace_cta
            chosen = [(x + gx * (y + gy * z), t) for t in self.trace_threads]
        if self.reachable:
            self.last_trace = compiled.backend.run(grid, values, chosen, self.reachable)
        else:
            self.last_trace = compiled.backend.run(grid, values, chosen)
        return compiled


def emulate(kernel: Any, target: str = "sm_80", max_steps: int = DEFAULT_MAX_STEPS, trace: Any = False,
            trace_cta: tuple[int, ...] = (0, 0, 0), reachable: Sequence[np.ndarray] = ()) -> Emulated:
    """Run `kernel` (a @tile.jit function) as the PTX tile compiles for `target`, on the CPU.

    `tile.emulate(kernel, target="sm_80")[grid](*args, **constexprs)` compiles the kernel for
    `target` exactly as a GPU launch would and executes that PTX on tile's emulator
    (tile.emulator): arrays are NumPy arrays (or CPU torch tensors, DeviceArrays...) written in
    place like a launch. Errors a GPU would not report (an access outside every argument, a
    misaligned address, a barrier only part of a CTA reaches, a kernel that never finishes
    within `max_steps` instruction steps) raise `tile.emulator.EmulatorError` naming the PTX
    line, the tile source line, the thread and the CTA.

        out = np.empty_like(x)
        tile.emulate(add_kernel)[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        np.testing.assert_array_equal(out, x + y)

    Returns the CompiledKernel (its `asm["ptx"]` is what ran).

    An AMD target (`target="gfx942"`) compiles the kernel to AMDGCN and runs that text on the
    wave machine (tile.emulator.amdgcn_machine): errors name the AMDGCN line, the tile source
    line, the workgroup, wave and lane; `max_steps` bounds each wave; `trace` is PTX only.

    With `trace=True` (thread 0) or `trace=[0, 1, 32]` (thread indices), those threads of CTA
    `trace_cta` are recorded step by step: after a launch, `emulated.last_trace` (a
    tile.emulator.trace.Trace) lists each instruction they were at, whether they executed it,
    the registers it wrote and the memory it touched.

        emulated = tile.emulate(add_kernel, trace=[0, 1])
        emulated[(1,)](x, y, out, n, BLOCK=256)
        print(emulated.last_trace.format())

    `reachable=[a0, b0, c0, ...]`: NumPy arrays the kernel reaches only through pointers it loads
    from memory (a grouped GEMM's table of matrix addresses, `a0.ctypes.data`): the bounds checks
    accept them as they accept the arguments, and the kernel writes into them in place.
    """
    return Emulated(kernel, target, max_steps, trace, trace_cta, reachable)


__all__ = ["run_ptx", "emulate", "Emulated", "EmulatorBackend", "compile_for_emulator", "EMULATOR_PREFIX"]
