"""Triton's `CompiledKernel` surface on tile's compiled kernels (what `warmup`, `tile.compile`
and a launch return):

    kernel = softmax_kernel.warmup(y, x, 781, 781, n_rows, n_cols, BLOCK_SIZE=1024, num_warps=8, grid=(1,))
    kernel._init_handles()                       # load on the GPU (nothing to do on the interpreter)
    kernel.n_regs, kernel.n_spills, kernel.n_max_threads, kernel.metadata.shared, kernel.metadata.num_warps
    kernel.asm["ptx"], kernel.asm["gpu"], kernel.asm["cubin"]
    kernel[(n_programs, 1, 1)](y, x, 781, 781, n_rows, n_cols, 1024)   # every argument by position

A kernel compiled for the interpreter describes the GPU code of the device the interpreter
stands in for (driver.INTERPRETER_TARGET): its GPU stages are compiled on first use, and its
registers come from ptxas. A kernel compiled for a GPU target without that GPU at hand
(tile.compile) gets its registers from ptxas too; launching it needs the GPU.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, NamedTuple, Optional

from .driver import INTERPRETER_TARGET, MAX_SHARED_BY_TARGET, GPUTarget
from .errors import OutOfResources

_REGISTERS_PER_SM = 65536
_MAX_THREADS_PER_BLOCK = 1024
_TRITON_STAGE_NAMES = {"ttir": "tile-opt", "ttgir": "gpu"}  # Triton's names for tile's closest stages


class KernelMetadata(NamedTuple):
    """Triton's `CompiledKernel.metadata` (a namedtuple): what the kernel was compiled with."""

    name: str
    target: GPUTarget
    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: Optional[int]
    launch_cooperative_grid: bool
    launch_pdl: bool
    shared: int  # bytes of shared memory per program
    cluster_dims: tuple[int, int, int]
    warp_size: int
    hash: str
    tile_target: str  # tile's target: "interpreter" or a PTX target such as "sm_90a"


class AsmDict(dict):
    """The text of each stage (tile, tile-opt, gpu, simt, ptx), plus "cubin" (from ptxas) on
    first access and Triton's "ttir"/"ttgir" as tile's tile-opt/gpu stages."""

    def __init__(self, stages: dict[str, str], target: str) -> None:
        super().__init__(stages)
        self._target = target

    def __missing__(self, key: str) -> Any:
        if key in _TRITON_STAGE_NAMES and _TRITON_STAGE_NAMES[key] in self:
            return self[_TRITON_STAGE_NAMES[key]]
        if key == "cubin" and "ptx" in self:
            from .ptxas import assemble

            value = self[key] = assemble(self["ptx"], self._target).cubin
            return value
        raise KeyError(f"tile produced no {key!r} stage; the stages are {', '.join(self)}, and 'cubin' from ptxas "
                       f"(tile has no LLVM IR ('llir') or SASS ('sass'): read 'simt' and 'ptx' instead)")


def max_threads_for(registers: int) -> int:
    """The most threads a block of a kernel using `registers` per thread can have: registers
    are allocated per warp in units of 256, out of 64K per block."""
    if registers <= 0:
        return _MAX_THREADS_PER_BLOCK
    per_warp = -(-registers * 32 // 256) * 256
    return min(_MAX_THREADS_PER_BLOCK, _REGISTERS_PER_SM // per_warp * 32)


class TritonKernelSurface:
    """The part of tile's CompiledKernel (tile.compiler) that Triton programs use. Expects
    the attributes name, target, options, stages, backend, fn, spec and launch_info."""

    name: str
    target: str
    options: dict[str, Any]
    stages: dict[str, str]
    backend: Any
    fn: Any
    spec: Any
    launch_info: dict[str, Any]
    make_entry: Callable[..., Any]

    # ------------------------------------------------------------------ the GPU code
    def gpu_code(self) -> Any:
        """The kernel whose GPU stages describe this one: itself for a GPU target; for the
        interpreter, a compilation for INTERPRETER_TARGET (made on first use)."""
        from tile.compiler import INTERPRETER, compile_kernel

        if self.target != INTERPRETER:
            return self
        view = self.__dict__.get("_gpu_code")
        if view is None:
            if self.fn is None:
                raise RuntimeError(f"{self.name}: this kernel does not know its function; compile it with "
                                   f"warmup() or tile.compile() to read its GPU code")
            view = self.__dict__["_gpu_code"] = compile_kernel(self.fn, self.spec, self.options, INTERPRETER_TARGET,
                                                               until="ptx")
        return view

    @property
    def asm(self) -> AsmDict:
        """The text of every stage, by name (Triton's `kernel.asm`)."""
        asm = self.__dict__.get("_asm")
        if asm is None:
            code = self.gpu_code()
            asm = self.__dict__["_asm"] = AsmDict({**self.stages, **code.stages}, code.target)
        return asm

    @property
    def metadata(self) -> KernelMetadata:
        """What the kernel was compiled with, and its shared memory (Triton's `kernel.metadata`)."""
        code = self.gpu_code()
        options = self.options
        key = repr((getattr(self.fn, "cache_key", self.name), getattr(self.spec, "key", None),
                    sorted(options.items(), key=str), self.target))
        return KernelMetadata(self.name, GPUTarget.from_ptx_target(code.target), options["num_warps"],
                              options["num_stages"], 1, options.get("maxnreg"),
                              options.get("launch_cooperative_grid", False), options.get("launch_pdl", False),
                              code.launch_info.get("shared_bytes", 0), (1, 1, 1), 32,
                              hashlib.sha256(key.encode()).hexdigest(), self.target)

    # ------------------------------------------------------------------ resources
    def _loaded_kernel(self) -> Any:
        """The driver's kernel (cuda_driver.CudaKernel) once loaded on a GPU, else None."""
        return getattr(self.backend, "kernel", None)

    def _assembled(self) -> Any:
        code = self.gpu_code()
        found = code.__dict__.get("_ptxas")
        if found is None:
            from .ptxas import assemble

            found = code.__dict__["_ptxas"] = assemble(code.stages["ptx"], code.target)
        return found

    @property
    def n_regs(self) -> int:
        """Registers per thread: the driver's figure once loaded, else ptxas'."""
        loaded = self._loaded_kernel()
        return loaded.num_regs if loaded is not None else self._assembled().registers

    @property
    def n_spills(self) -> int:
        """Registers spilled to local memory (spill bytes / 4, as Triton counts them)."""
        loaded = self._loaded_kernel()
        return (loaded.local_size_bytes if loaded is not None else self._assembled().spill_bytes) // 4

    @property
    def n_max_threads(self) -> int:
        """The most threads per block this kernel can launch with, given its registers."""
        loaded = self._loaded_kernel()
        return loaded.max_threads_per_block if loaded is not None else max_threads_for(self.n_regs)

    @property
    def function(self) -> Any:
        """The CUfunction once loaded on a GPU (None before `_init_handles` and on the interpreter)."""
        loaded = self._loaded_kernel()
        return loaded.function if loaded is not None else None

    @property
    def module(self) -> Any:
        """The CUmodule once loaded on a GPU (None before `_init_handles` and on the interpreter)."""
        loaded = self._loaded_kernel()
        return loaded.module if loaded is not None else None

    def check_resources(self) -> None:
        """Raise OutOfResources if the kernel needs more shared memory than its target has
        (driver.MAX_SHARED_BY_TARGET); the driver checks registers and threads on loading."""
        code = self.gpu_code()
        limit = MAX_SHARED_BY_TARGET.get(code.target)
        shared = code.launch_info.get("shared_bytes", 0)
        if limit is not None and shared > limit:
            raise OutOfResources(shared, limit, "shared memory", kernel=self.name, target=code.target)

    def _init_handles(self) -> None:
        """Load the kernel on the GPU if it is not loaded yet (Triton's `_init_handles`).
        Raises OutOfResources when it needs more shared memory or threads than its target
        has (on the interpreter: than INTERPRETER_TARGET has); RuntimeError when a GPU is
        present but of another target than the kernel's. Without a GPU (and on the
        interpreter) there is nothing to load."""
        from tile.compiler import INTERPRETER, current_target

        if self.backend is not None and self.target != INTERPRETER:
            return
        self.check_resources()
        here = current_target()
        if self.target == INTERPRETER:
            return
        if here == INTERPRETER:
            return
        if here != self.target:
            raise RuntimeError(f"{self.name} was compiled for {self.target}, but this GPU is {here}: compile it "
                               f"for target='{here}' (or leave the target out) to launch it here")
        from tile.compiler import code_stage, load_backend

        self.backend = load_backend(self.target, self.stages[code_stage(self.target)], self.launch_info)

    # ------------------------------------------------------------------ launch
    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """`kernel[grid](*args, stream=None)`: launch with every argument by position,
        constexprs included, as Triton's compiled kernels take them."""
        if self.backend is None:
            self._init_handles()

        def runner(*args: Any, stream: Any = None) -> Any:
            return self.launch(grid, args, stream)

        return runner

    def launch(self, grid: Any, args: tuple, stream: Any = None) -> Any:
        """Launch on `grid` with all of the kernel's arguments, by position. The arguments
        must fit the specialization this kernel was compiled for: same dtypes, constexpr
        values, and every alignment or divisibility it assumed."""
        from tile.compiler import INTERPRETER

        if self.fn is None:
            raise RuntimeError(f"{self.name}: this kernel does not know its parameters; launch it through its "
                               f"@tile.jit function")
        if self.backend is None and self.target != INTERPRETER:
            raise RuntimeError(f"cannot launch {self.name}: it was compiled for {self.target} and no GPU of that "
                               f"target is present (TILE_INTERPRET=1 runs kernels on the interpreter)")
        names = self.fn.arg_names
        if len(args) != len(names):
            raise TypeError(f"{self.name}: a compiled kernel takes all {len(names)} arguments by position "
                            f"({', '.join(names)}), constexprs included; got {len(args)}")
        values = [self._launch_value(i, arg) for i, arg in enumerate(args)]
        runtime = self.spec.runtime_indices
        entry = self.__dict__.get("_positional_entry")
        if entry is None:
            entry = self.__dict__["_positional_entry"] = self.make_entry(tuple(range(len(runtime))), len(runtime))
        return entry(grid, tuple(values[i] for i in runtime), tuple(args[i] for i in runtime), stream)

    def _launch_value(self, index: int, arg: Any) -> Any:
        """The launch value of argument `index`; TypeError if it does not fit the specialization."""
        from tile.frontend.binder import constexpr_key
        from tile.frontend.specialize import launch_arg, launch_arg_nospec

        compiled = self.spec.key[index]
        name = self.fn.arg_names[index]
        if name in self.fn.constexpr_names:
            given, value = constexpr_key(arg), None
        else:
            given, value = (launch_arg_nospec if index in self.fn.do_not_specialize else launch_arg)(arg)
        if not _fits(compiled, given):
            raise TypeError(f"{self.name}: argument '{name}' ({_describe(given)}) does not fit this compiled kernel, "
                            f"which was specialized for {_describe(compiled)}; compile it again for these arguments")
        return value


def _fits(compiled: tuple, given: tuple) -> bool:
    """Whether an argument specialized as `given` may run code specialized as `compiled`."""
    if compiled == given:
        return True
    if compiled[0] == "ptr":  # ("ptr", dtype, alignment, in device memory)
        return given[0] == "ptr" and given[1] == compiled[1] and compiled[2] == 1 and given[3] == compiled[3]
    if compiled[0] in ("i32", "i64", "u64") and compiled[1] == 1:  # an int with no divisibility assumed
        if given == ("c", int, 1):
            return True
        return given[0] in ("i32", "i64", "u64") and (given[0] == compiled[0] or compiled[0] == "i64"
                                                     and given[0] == "i32")
    return False


def _describe(key: tuple) -> str:
    if key[0] == "c":
        return f"the constant {key[2]!r}"
    if key[0] == "ptr":
        return f"a pointer to {key[1]}" + (" aligned to 16 bytes" if key[2] == 16 else "")
    return key[0] + (" divisible by 16" if key[1] == 16 else "")
