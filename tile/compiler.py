"""The compiler driver: runs the stages of DESIGN.md §2 for one specialization of a kernel.

    frontend ──▶ tile IR ──tile passes──▶ tile-opt ──▶ interpreter          (target "interpreter")
                                                  └──gpu passes──▶ gpu ──lower──▶ simt ──emit──▶ ptx ──▶ CUDA
                                                                                 └──▶ amdgcn (gfx targets: text)

`compile_kernel` returns a `CompiledKernel` holding the text of every stage it ran (what
`tile.dump` shows) and `make_entry`, the launch function the launch binder calls; it also has
Triton's CompiledKernel surface (runtime.compiled_kernel). `dump` compiles without launching;
`compile` (runtime.aot) is Triton's ahead-of-time entry.

TILE_ALWAYS_COMPILE=1 skips the disk cache's lookups; TILE_DUMP=1 prints every stage of each
compilation to stderr (Triton's TRITON_ALWAYS_COMPILE and MLIR_ENABLE_DUMP).
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from typing import TYPE_CHECKING

from .runtime.compiled_kernel import TritonKernelSurface
from .utils import check_grid_limits, grid3

if TYPE_CHECKING:  # the IR stays unimported on a warm start (disk-cache hit)
    from .display import Dump
    from .ir import Operation

INTERPRETER = "interpreter"
# os.environ encodes every key it looks up; the bytes-keyed dict behind it does not, and the
# launch path reads TILE_INTERPRET on every launch (tests and users may set it at any time).
if hasattr(os.environ, "_data"):
    ENVIRON, INTERPRET_KEY = os.environ._data, os.environ.encodekey("TILE_INTERPRET")
else:
    ENVIRON, INTERPRET_KEY = os.environ, "TILE_INTERPRET"
STAGES = ("tile", "tile-opt", "passes", "gpu", "simt", "ptx", "amdgcn")
DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 3, "maxnreg": None, "launch_cooperative_grid": False,
                   "launch_pdl": False}


def current_target() -> str:
    """Where a launch runs now: the NumPy interpreter, the GPU's PTX target (e.g. "sm_90a"), or
    an AMD GPU's gfx target (e.g. "gfx942", runtime.hip_driver).
    Runs on every launch: one environment lookup, then a cached answer."""
    flag = ENVIRON.get(INTERPRET_KEY)
    if flag and flag not in (b"0", "0"):
        return INTERPRETER
    return _device_target()


@functools.cache
def _device_target() -> str:
    from .runtime import hip_driver
    from .runtime.cuda_driver import CudaDevice, cuda_available

    if cuda_available():
        return CudaDevice.get(0).ptx_target()
    return hip_driver.device_target() if hip_driver.hip_available() else INTERPRETER


@dataclass
class CompiledKernel(TritonKernelSurface):
    """One specialization of a kernel, compiled for one target."""

    name: str
    target: str
    options: dict[str, Any]
    func: Optional[Operation]  # the IR the backend consumed; None when loaded from the disk cache
    stages: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    backend: Any = None  # InterpreterBackend, CudaBackend or HipBackend
    from_disk_cache: bool = False
    fn: Any = None  # the JITFunction and the Specialization compiled
    spec: Any = None
    launch_info: dict[str, Any] = field(default_factory=dict)  # GPU targets: cuda_launch.launch_metadata,
    # or hip_launch.amdgcn_launch_metadata
    pass_records: list[tuple[str, str]] = field(default_factory=list)  # (pass, IR after it), record_passes only

    def make_entry(self, positions: tuple[int, ...], value_count: int):
        """The function the launch binders call: entry(grid, values, args, stream), where
        `values` are the launch values of the binder's `value_count` runtime arguments and
        `positions` picks this kernel's parameters among them. GPU entries also have
        entry.fast(grid, stream, *values) (runtime.cuda_driver.Launcher.make_entry). Entries
        return this CompiledKernel."""
        return self.backend.make_entry(positions, value_count, self)

    def stage(self, name: str) -> str:
        if name not in self.stages:
            ran = ", ".join(self.stages)
            raise ValueError(f"{self.name}: stage {name!r} was not produced for target {self.target} (have: {ran})")
        return self.stages[name]

    @property
    def resources(self) -> dict[str, Any]:
        """Registers, spills and shared memory of a kernel loaded on a GPU (empty otherwise);
        `metadata` is Triton's view."""
        return getattr(self.backend, "metadata", {})

    @property
    def registers(self) -> int:
        return self.resources.get("registers", 0)

    @property
    def spill_bytes(self) -> int:
        return self.resources.get("spill_bytes", 0)

    @property
    def shared_bytes(self) -> int:
        return self.resources.get("shared_bytes", 0)


class InterpreterBackend:
    def __init__(self, func: Operation, name: str):
        self.func = func
        self.name = name

    def make_entry(self, positions: tuple[int, ...], value_count: int, compiled: Any = None):
        from .runtime.host_args import run_on_host

        func, name = self.func, self.name

        def entry(grid: Any, values: tuple, args: tuple, stream: Optional[int]) -> Any:
            grid = grid3(grid, name)
            check_grid_limits(grid, name)
            run_on_host(func, grid, [args[i] for i in positions], name)
            return compiled

        return entry


def _timed(timings: dict[str, float], key: str, fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start
    return out


GPU_STAGES = ("tile", "tile-opt", "gpu", "simt")


def _disk_key(fn: Any, spec: Any, options: dict[str, Any], target: str, ptx_version: str) -> str:
    from .runtime.cache import cache_key, compiler_fingerprint

    return cache_key("kernel", fn.cache_key, repr(spec.key), spec.tensor_maps, options, target, ptx_version,
                     compiler_fingerprint(), _registered_passes_key())


def _registered_passes_key() -> str:
    """The passes of tile.register_pass (none unless that module was imported)."""
    user_passes = sys.modules.get("tile.opt.user_passes")
    return user_passes.registry_fingerprint() if user_passes is not None else ""


def _with_tensor_maps(fn: Any, spec: Any, target: str) -> Any:
    """`spec` with the TMA tensor-map leaves of host descriptors where `target` has TMA (sm_90a)."""
    from .frontend.specialize import Specialization
    from .runtime.tensor_map import uses_tensor_maps

    if spec.tensor_maps == uses_tensor_maps(target) or not spec.has_aggregates:
        return spec
    return Specialization(fn.arg_names, spec.key, tensor_maps=uses_tensor_maps(target))


def compile_kernel(fn: Any, spec: Any, options: dict[str, Any], target: str, record_passes: bool = False,
                   until: Optional[str] = None) -> CompiledKernel:
    """Compile `fn` (a JITFunction) for `spec` (its Specialization). Stops after stage `until` if given.

    GPU kernels are kept in the disk cache (tile.runtime.cache): a hit skips every stage up to
    the driver's JIT and keeps the text of each stage for `tile.dump`.
    """
    options = {**DEFAULT_OPTIONS, **options}
    spec = _with_tensor_maps(fn, spec, target)
    if target != INTERPRETER and until is None and not record_passes:
        return _through_disk_cache(fn, spec, options, target, load=True)
    kernel = _compile_stages(fn, spec, options, target, record_passes, until)
    kernel.fn, kernel.spec = fn, spec
    _dump_stages(kernel)
    return kernel


def compile_to_ptx(fn: Any, spec: Any, options: dict[str, Any], target: str) -> CompiledKernel:
    """Compile for GPU `target` up to its PTX through the disk cache, loading nothing (no GPU
    needed): `tile.compile`'s path."""
    return _through_disk_cache(fn, _with_tensor_maps(fn, spec, target), {**DEFAULT_OPTIONS, **options}, target,
                               load=False)


def _through_disk_cache(fn: Any, spec: Any, options: dict[str, Any], target: str, load: bool) -> CompiledKernel:
    """A GPU compilation, from the disk cache when an intact entry of this compiler has it.
    A miss compiles under the entry's lock (DiskCache.lock), looking again once it holds it:
    processes that compile one kernel at once compile it once."""
    from .runtime.cache import DiskCache, compiler_fingerprint

    start = time.perf_counter()
    disk = DiskCache()
    key = _disk_key(fn, spec, options, target, _ptx_version(target))
    always = _env_flag("TILE_ALWAYS_COMPILE")
    hit = None if always else disk.get(key)
    lookup = time.perf_counter() - start
    kernel = _from_disk(hit, target, options, load)
    if kernel is None:
        with disk.lock(key):
            kernel = None if always else _from_disk(disk.get(key), target, options, load)
            if kernel is None:
                kernel = _compile_stages(fn, spec, options, target, False, None)
                _dump_stages(kernel)
                code = code_stage(target)
                files = {code: kernel.stages[code], "metadata.json": json.dumps(kernel.launch_info),
                         "compiler": compiler_fingerprint()}
                files.update({f"stage.{s}": kernel.stages[s] for s in GPU_STAGES})
                disk.put(key, files)
                if load:
                    kernel.backend = _timed(kernel.timings, "driver jit", load_backend, target,
                                            kernel.stages[code], kernel.launch_info)
    kernel.fn, kernel.spec = fn, spec
    kernel.timings["disk cache"] = lookup
    return kernel


@functools.cache
def _target_unsupported_class() -> type:
    """CompilationError and the AMDGCN backend's UnsupportedOnTarget in one (made on first use,
    so that loading tile does not load the AMD backend)."""
    from .codegen.amdgcn import UnsupportedOnTarget
    from .frontend.errors import CompilationError

    class TargetUnsupported(CompilationError, UnsupportedOnTarget):
        """A construct the target's backend does not support yet, at the user's line."""

        def __init__(self, error: UnsupportedOnTarget):
            from .frontend.errors import SourcePoint

            loc = error.loc
            CompilationError.__init__(self, error.message, SourcePoint.at(loc.file, loc.line, loc.col) if loc else None)
            self.loc = loc

    return TargetUnsupported


def unsupported_on_target(error: Any) -> Exception:
    """The AMDGCN backend's UnsupportedOnTarget as a tile.CompilationError at the user's line
    (still an UnsupportedOnTarget and a NotImplementedError)."""
    return _target_unsupported_class()(error)


def code_stage(target: str) -> str:
    """The stage holding the code a GPU target's driver loads: "amdgcn" for gfx targets, else "ptx"."""
    return "amdgcn" if target.startswith("gfx") else "ptx"


def load_backend(target: str, code: str, launch_info: dict[str, Any]) -> Any:
    """Load `code` (the text of `code_stage(target)`) on the GPU: a CudaBackend, or for a gfx
    target a HipBackend (its code object assembled from the AMDGCN text)."""
    if target.startswith("gfx"):
        from .runtime.hip_launch import HipBackend

        return HipBackend(code, launch_info, target)
    from .runtime.cuda_launch import CudaBackend

    return CudaBackend(code, launch_info)


def _dump_stages(kernel: CompiledKernel) -> None:
    if _env_flag("TILE_DUMP"):
        for stage, text in kernel.stages.items():
            print(f"// -----// tile {stage} of {kernel.name} for {kernel.target} //----- //\n{text}", file=sys.stderr)


def _from_disk(files: Optional[dict[str, Any]], target: str, options: dict[str, Any],
               load: bool) -> Optional[CompiledKernel]:
    """The kernel of a disk-cache entry, or None for no entry, or an entry that another tile
    wrote (its `compiler` file differs) or that lacks a file: the caller compiles again and
    replaces it, so no code of another compiler is ever loaded."""
    from .runtime.cache import compiler_fingerprint

    if files is None:
        return None
    text = {k: v.decode() if isinstance(v, bytes) else v for k, v in files.items()}
    code = code_stage(target)
    if text.get("compiler") != compiler_fingerprint() or code not in text:
        return None
    try:
        metadata = json.loads(text["metadata.json"])
    except (KeyError, ValueError):
        return None
    stages = {s: text[f"stage.{s}"] for s in GPU_STAGES if f"stage.{s}" in text}
    stages[code] = text[code]
    timings: dict[str, float] = {}
    kernel = CompiledKernel(metadata["name"], target, options, None, stages, timings, None, from_disk_cache=True,
                            launch_info=metadata)
    if load:
        kernel.backend = _timed(timings, "driver jit", load_backend, target, text[code], metadata)
    return kernel


def _compile_stages(fn: Any, spec: Any, options: dict[str, Any], target: str, record_passes: bool,
                    until: Optional[str]) -> CompiledKernel:
    from .ir import print_op
    from .opt.pass_manager import PassManager
    from .opt.user_passes import tile_pipeline

    timings: dict[str, float] = {}
    func = _timed(timings, "frontend", fn.build_ir, spec, target, options)
    name = func.attrs["sym_name"]
    stages = {"tile": print_op(func)}
    kernel = CompiledKernel(name, target, options, func, stages, timings)
    if until == "tile":
        return kernel

    manager = PassManager(tile_pipeline(getattr(fn, "extra_passes", ())), verify_each=record_passes,
                          record=record_passes)
    _timed(timings, "tile passes", manager.run, func)
    stages["tile-opt"] = print_op(func)
    records = list(manager.records) if record_passes else []
    if target == INTERPRETER:
        if record_passes:
            stages["passes"] = _format_records(records)
            kernel.pass_records = records
        kernel.backend = InterpreterBackend(func, name)
        return kernel
    if until == "tile-opt" and not record_passes:
        return kernel

    from .codegen.lower import lower_to_simt
    from .codegen.target import emitter, target_facts
    from .opt.gpu_pipeline import gpu_passes

    from .runtime.resources import shared_memory_limit

    threads_per_warp = target_facts(target).warp_size   # a wave of 64 on CDNA, else 32
    gpu_manager = PassManager(gpu_passes(options["num_warps"], target, threads_per_warp,
                                         num_stages=options["num_stages"], shared_limit=shared_memory_limit(target)),
                              verify_each=record_passes, record=record_passes)
    _timed(timings, "gpu passes", gpu_manager.run, func)
    if record_passes:
        kernel.pass_records = records + list(gpu_manager.records)
        stages["passes"] = _format_records(kernel.pass_records)
    stages["gpu"] = print_op(func)
    from .runtime.resources import check_resources

    threads = options["num_warps"] * threads_per_warp
    check_resources(name, target, func.attrs.get("shared_bytes", 0), threads)
    if until in ("tile-opt", "passes", "gpu"):
        return kernel
    simt = _timed(timings, "lowering", lower_to_simt, func)
    stages["simt"] = print_op(simt)
    kernel.func = simt
    if target.startswith("gfx"):  # AMD: the AMDGCN text, and what a HIP launch needs of it
        from .codegen.amdgcn import UnsupportedOnTarget, compile_amdgcn
        from .codegen.target import TargetResourceError
        from .runtime.errors import OutOfResources
        from .runtime.hip_launch import amdgcn_launch_metadata

        try:
            amdgcn = _timed(timings, "amdgcn emission", compile_amdgcn, simt, target)
        except TargetResourceError as e:
            raise OutOfResources(e.required, e.limit, e.name, kernel=e.kernel, target=e.target, hint=e.hint) from e
        except UnsupportedOnTarget as e:
            raise unsupported_on_target(e) from None
        stages["amdgcn"] = amdgcn.text
        kernel.launch_info = amdgcn_launch_metadata(amdgcn.selection)
        return kernel
    from .runtime.cuda_launch import launch_metadata

    kernel.launch_info = launch_metadata(simt, options)
    check_resources(name, target, kernel.launch_info["shared_bytes"], kernel.launch_info["threads"])  # with the lowering's scratch
    ptx = _timed(timings, "ptx emission", emitter(target), simt, target, _ptx_version(target))
    stages["ptx"] = ptx if options.get("maxnreg") is None else with_maxnreg(ptx, options["maxnreg"])
    return kernel


def with_maxnreg(ptx: str, maxnreg: int) -> str:
    """`ptx` with a `.maxnreg` directive on its kernel entry: ptxas keeps the kernel within
    `maxnreg` registers per thread (spilling if it must). The directive follows the entry's
    `.maxntid` line, before its body."""
    text, count = re.subn(r"^(\.maxntid [^\n]*)$", rf"\1\n.maxnreg {int(maxnreg)}", ptx, count=1, flags=re.MULTILINE)
    if count != 1:
        raise ValueError("maxnreg: the PTX has no .maxntid line after its .entry to place .maxnreg after")
    return text


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0")


def _ptx_version(target: str) -> str:
    from .runtime.cuda_driver import cuda_available

    if target != INTERPRETER and cuda_available():
        from .runtime.cuda_driver import CudaDevice

        return CudaDevice.get(0).ptx_version()
    return "8.7" if target.startswith("sm_9") else "8.0"


def _format_records(records: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"// ----- after {name} -----\n{text}" for name, text in records)


# ------------------------------------------------------------------------------ dump


def dump(kernel: Any, *args: Any, stage: str = "tile-opt", target: Optional[str] = None,
         num_warps: int = 4, num_stages: int = 3, maxnreg: Optional[int] = None, **constexprs: Any) -> Dump:
    """Show what tile compiles for `kernel`.

    With arguments: compile for their types (arrays or scalars; only types and alignment
    matter) without launching, and return the text of `stage` (one of STAGES). `target` is
    "interpreter" or a PTX target such as "sm_90a"; GPU stages need no GPU. Without
    arguments: the stages of what earlier launches compiled. The result prints as the stage's
    text and renders in Jupyter with colours, per-pass diffs and source links (tile.display.Dump).
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
    from .codegen.target import TARGETS
    from .display import Dump
    from .frontend.jit import JITFunction

    if target is not None and target != INTERPRETER and target not in TARGETS:
        raise ValueError(f"tile cannot compile for target {target!r}; choose 'interpreter' or one of "
                         f"{', '.join(TARGETS)}")

    while not isinstance(kernel, JITFunction) and hasattr(kernel, "fn"):  # autotune / heuristics wrappers
        kernel = kernel.fn
    if not args and not constexprs:
        compiled = list(kernel.cache.values())
        if not compiled:
            raise ValueError(f"{kernel.__name__} has not been launched yet: pass arguments to dump it")
        parts = []
        for c in compiled:
            available = stage if stage in c.stages else "tile-opt"
            parts.append(f"// {c.name} for {c.target} ({available})\n{c.stages[available]}")
        return Dump(f"{kernel.__name__}: {stage}", "\n\n".join(parts), stage)
    if target is None:
        target = current_target()
        if target == INTERPRETER and stage in ("gpu", "simt", "ptx", "amdgcn"):
            target = "gfx942" if stage == "amdgcn" else "sm_90a"
    if target == INTERPRETER and stage in ("gpu", "simt", "ptx", "amdgcn"):
        raise ValueError(f"stage {stage!r} needs a GPU target such as target='sm_90a'")
    if (stage == "amdgcn") != target.startswith("gfx") and stage in ("ptx", "amdgcn"):
        raise ValueError(f"stage {stage!r} is not produced for target {target!r} "
                         f"(ptx: an sm_* target; amdgcn: a gfx* target such as 'gfx942')")
    if target.startswith("gfx"):
        from .codegen.amdgcn import check_target

        check_target(target)
    spec, _ = kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": num_stages, "maxnreg": maxnreg}
    until = {"tile": "tile", "tile-opt": "tile-opt", "passes": "passes", "gpu": "gpu"}.get(stage, "ptx")
    compiled = compile_kernel(kernel, spec, options, target, record_passes=(stage == "passes"), until=until)
    return _rich_dump(kernel, compiled, stage, target)


def _rich_dump(kernel: Any, compiled: CompiledKernel, stage: str, target: str) -> Dump:
    """The Dump of `stage` of a fresh compilation, with what its HTML needs: the IR with
    locations, the pass records, the kernel's source."""
    from .display import Dump, KernelSource
    from .ir import print_op

    located = print_op(compiled.func, locs=True) if stage in ("tile", "tile-opt", "gpu", "simt") else None
    passes = (compiled.stages["tile"], compiled.pass_records) if stage == "passes" else None
    lines = kernel._source_lines()
    source = KernelSource(kernel.file, kernel.line_offset + 1, lines)
    return Dump(f"{kernel.__name__}: {stage} ({target})", compiled.stage(stage), stage, located, passes, source)


from .runtime.aot import ASTSource, compile  # noqa: E402  (Triton's triton.compiler names)
