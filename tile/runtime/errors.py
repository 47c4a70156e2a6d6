"""Errors raised by tile's runtime: failing driver calls, rejected PTX, impossible launches;
and TritonError, the base of the errors Triton's API names."""

from __future__ import annotations

import re


class TritonError(Exception):
    """The base of the errors Triton's API names (tile.TritonError): compile errors
    (tile.CompilationError) and interpreter failures (tile.InterpreterError) derive from it."""


# ptxas names the offending line as "ptxas application ptx input, line 12; error : ...".
_PTX_LINE = re.compile(r"line (\d+);")


class DriverError(RuntimeError):
    """A CUDA driver call failed.

    `code` is the CUresult name (e.g. "CUDA_ERROR_OUT_OF_MEMORY"), `description` the driver's
    text for it, `log` the JIT log where the call produced one.
    """

    def __init__(
        self,
        call: str,
        code: str,
        *,
        kernel: str | None = None,
        description: str = "",
        log: str = "",
    ) -> None:
        self.kernel = kernel
        self.call = call
        self.code = code
        self.description = description
        self.log = log
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"kernel '{self.kernel}': " if self.kernel else ""
        what = f"{self.code} ({self.description})" if self.description else self.code
        text = f"{where}{self.call} failed with {what}"
        if self.log:
            text += f"\ndriver log:\n{self.log.rstrip()}"
        return text


class GpuFault(DriverError):
    """A kernel faulted on the GPU: an illegal or misaligned address, a failed
    tl.device_assert, an illegal instruction, a trap. CUDA reports such errors asynchronously
    (at the next synchronization, copy or launch) and they are sticky: the process's CUDA
    context is unusable afterwards. `kernel` and `grid` name the last launch before the fault
    was seen (the launch itself under CUDA_LAUNCH_BLOCKING=1); `asserts` lists that kernel's
    device_assert sites ("file:line: message") when the fault is a failed assert; `hint` what
    may explain an address fault of that kernel (its TMA tensor maps' rule); `earlier`
    is the first fault's GpuFault when this one only reports the lost context."""

    def __init__(self, call: str, code: str, *, kernel: str | None = None, grid: tuple | None = None,
                 description: str = "", asserts: tuple[str, ...] = (), hint: str = "", blocking: bool = False,
                 earlier: GpuFault | None = None) -> None:
        self.grid = grid
        self.asserts = asserts
        self.hint = hint
        self.blocking = blocking
        self.earlier = earlier
        super().__init__(call, code, kernel=kernel, description=description)

    def _message(self) -> str:
        what = f"{self.code} ({self.description})" if self.description else self.code
        if self.earlier is not None:
            return (f"{self.call} failed with {what}: the CUDA context of this process was lost to an earlier GPU "
                    f"fault, and every GPU call fails from then on; start a new process to use the GPU again.\n"
                    f"The earlier fault: {self.earlier}")
        if self.kernel is None:
            where = "a kernel faulted on the GPU"
        else:
            grid = f" with grid {self.grid}" if self.grid is not None else ""
            which = "" if self.blocking else " (the last kernel launched before the fault was reported)"
            where = f"kernel '{self.kernel}'{grid}{which} faulted on the GPU"
        text = f"{where}: {what}, reported by {self.call}."
        if self.code == "CUDA_ERROR_ASSERT":
            sites = "; ".join(self.asserts) if self.asserts else "no tl.device_assert of this kernel is known"
            text += (f" A tl.device_assert failed ({sites}); the GPU printed the failing program (block) and "
                     f"thread, with the source line, on standard output.")
        elif self.hint and "ADDRESS" in self.code:
            text += f" Note: {self.hint}."
        text += (" The CUDA context of this process is now unusable (the error is sticky): start a new process "
                 "to use the GPU again.")
        if not self.blocking:
            text += " Kernels run asynchronously: set CUDA_LAUNCH_BLOCKING=1 to have the launch that faults report it."
        return text


class CompilerBugError(DriverError):
    """The driver's PTX JIT rejected PTX that tile generated: a bug in tile, not in the kernel."""

    def __init__(
        self,
        kernel: str | None,
        log: str,
        *,
        ptx: str = "",
        code: str = "CUDA_ERROR_INVALID_PTX",
        description: str = "",
        call: str = "cuModuleLoadDataEx",
    ) -> None:
        match = _PTX_LINE.search(log)
        self.ptx_line: int | None = int(match.group(1)) if match else None
        lines = ptx.splitlines()
        # The offending line's text saves a trip to `tile.dump` in the common case.
        self.ptx_line_text: str | None = (
            lines[self.ptx_line - 1].strip()
            if self.ptx_line is not None and 0 < self.ptx_line <= len(lines)
            else None
        )
        super().__init__(call, code, kernel=kernel, description=description, log=log)

    def _message(self) -> str:
        text = (
            f"the CUDA driver rejected the PTX that tile generated for kernel '{self.kernel}'; "
            f"this is a bug in tile's code generator, please report it with the kernel.\n"
            + super()._message()
        )
        if self.ptx_line is not None:
            text += f"\nfirst offending PTX line: {self.ptx_line}"
            if self.ptx_line_text is not None:
                text += f": {self.ptx_line_text}"
        return text


class LaunchError(RuntimeError):
    """A launch the device cannot run: a limit (threads per block, shared memory, grid) is broken."""

    def __init__(self, kernel: str, limit: str, requested: int, allowed: int, hint: str = "") -> None:
        self.kernel = kernel
        self.limit = limit
        self.requested = requested
        self.allowed = allowed
        text = f"cannot launch kernel '{kernel}': {limit} is {requested}, the allowed maximum is {allowed}"
        super().__init__(f"{text} ({hint})" if hint else text)


class OutOfResources(TritonError, RuntimeError):
    """A kernel needs more of a resource than the device has: shared memory, registers or
    threads per block. Triton's `triton.runtime.errors.OutOfResources`, with its fields:
    `required`, `limit` and `name` (what ran out); tile adds the `kernel` and `target` when it
    knows them, and says by how much the kernel is over. Smaller blocks or fewer `num_stages` help."""

    def __init__(self, required: int, limit: int, name: str, *, kernel: str | None = None,
                 target: str | None = None, hint: str = "") -> None:
        self.required = required
        self.limit = limit
        self.name = name
        self.kernel = kernel
        self.target = target
        self.hint = hint
        super().__init__(required, limit, name)

    def __reduce__(self) -> tuple:
        return _rebuild_out_of_resources, (self.required, self.limit, self.name, self.kernel, self.target, self.hint)

    def __str__(self) -> str:
        text = f"out of resource: {self.name}, Required: {self.required}, Hardware limit: {self.limit}."
        if self.kernel is not None:
            where = f" on {self.target}" if self.target else ""
            unit = " bytes" if self.name == "shared memory" else ""
            text += (f" Kernel '{self.kernel}' needs {self.required - self.limit}{unit} more {self.name} than "
                     f"one program can have{where}" + (f" ({self.hint})." if self.hint else "."))
        return text + " Reducing block sizes or `num_stages` may help."


def _rebuild_out_of_resources(required: int, limit: int, name: str, kernel: str | None, target: str | None,
                              hint: str) -> OutOfResources:
    return OutOfResources(required, limit, name, kernel=kernel, target=target, hint=hint)
