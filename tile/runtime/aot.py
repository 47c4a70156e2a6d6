"""Ahead-of-time compilation with Triton's entry point: `tile.compile(ASTSource(...), target, options)`.

    src = tile.compiler.ASTSource(fn=add, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                                     "n": "i32", "BLOCK": "constexpr"},
                                  constexprs={"BLOCK": 1024}, attrs={(0,): [["tt.divisibility", 16]]})
    kernel = tile.compile(src, target="sm_90a", options={"num_warps": 8})
    kernel.asm["ptx"], kernel.n_regs, kernel.metadata.shared    # no GPU needed, nothing launched

The signature uses Triton's type names: "*fp32" (pointer to float32), "i32", "fp32", "i1",
"constexpr", ...; `attrs` maps (parameter index,) to [["tt.divisibility", 16]] for the
pointers aligned to 16 bytes and the integers divisible by 16 that the code may assume.
`target` is a PTX target ("sm_90a"), "interpreter", Triton's GPUTarget("cuda", 90, 32), or
None for where kernels run now.
"""
from __future__ import annotations

from typing import Any, Optional

from .driver import GPUTarget

# Triton's names of element types -> tile's (tile.ir.types.DTYPES).
_TRITON_TYPES = {
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u1": "i1",
    "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64",
    "fp16": "f16", "bf16": "bf16", "fp32": "f32", "f32": "f32", "fp64": "f64",
    "fp8e4nv": "f8e4nv", "fp8e5": "f8e5",
}
_COMPILE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "launch_cooperative_grid", "launch_pdl")


class ASTSource:
    """A kernel to compile ahead of time: `fn` (a @tile.jit function), `signature` (parameter
    name -> Triton type string, every parameter), `constexprs` (parameter name or (index,) ->
    value), `attrs` ((index,) -> [["tt.divisibility", 16]])."""

    def __init__(self, fn: Any, signature: dict[str, str], constexprs: Optional[dict[Any, Any]] = None,
                 attrs: Optional[dict[Any, Any]] = None) -> None:
        from tile.frontend.jit import JITFunction

        while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):  # autotune / heuristics wrappers
            fn = fn.fn
        if not isinstance(fn, JITFunction):
            raise TypeError(f"ASTSource needs a @tile.jit function, got {type(fn).__name__}")
        self.fn = fn
        self.name = fn.__name__
        for name in signature:
            if not isinstance(name, str):
                raise TypeError("ASTSource: signature keys must be parameter names (str)")
        self.signature = dict(signature)
        self.constants = {self._index(k): v for k, v in (constexprs or {}).items()}
        self.attrs = {self._index(k): v for k, v in (attrs or {}).items()}

    def _index(self, key: Any) -> int:
        if isinstance(key, str):
            if key not in self.fn.arg_names:
                raise ValueError(f"{self.name} has no parameter {key!r} (parameters: {', '.join(self.fn.arg_names)})")
            return self.fn.arg_names.index(key)
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], int):
            return key[0]
        raise TypeError(f"ASTSource: {key!r} is neither a parameter name nor a (parameter index,) tuple")

    def specialization_key(self) -> tuple:
        """The specialization key (tile.frontend.specialize) this source describes."""
        missing = [n for n in self.fn.arg_names if n not in self.signature]
        extra = [n for n in self.signature if n not in self.fn.arg_names]
        if missing or extra:
            raise ValueError(f"ASTSource of {self.name}: the signature must name every parameter exactly"
                             + (f"; missing: {', '.join(missing)}" if missing else "")
                             + (f"; not parameters: {', '.join(extra)}" if extra else ""))
        return tuple(self._param_key(i, name, self.signature[name]) for i, name in enumerate(self.fn.arg_names))

    def _param_key(self, index: int, name: str, ty: str) -> tuple:
        if ty == "constexpr" or index in self.constants:
            if index not in self.constants:
                raise ValueError(f"ASTSource of {self.name}: constexpr parameter '{name}' has no value in constexprs")
            value = self.constants[index]
            return ("c", type(value), value)
        divisible = any(list(attr) == ["tt.divisibility", 16] for attr in self.attrs.get(index, []))
        element = ty[1:] if ty.startswith("*") else ty
        if element.startswith("k"):  # Triton's "*k..." marks a pointer to constant memory
            element = element[1:]
        dtype = _TRITON_TYPES.get(element)
        if dtype is None:
            raise ValueError(f"ASTSource of {self.name}: unknown type {ty!r} for '{name}'; use Triton's names "
                             f"(*fp32, i32, fp16, bf16, i1, ... or constexpr)")
        if ty.startswith("*"):
            return ("ptr", dtype, 16 if divisible else 1, True)
        if dtype.startswith("f") or dtype in ("bf16", "i1"):
            return (dtype, 1)
        return (dtype, 16 if divisible else 1)


def _target_name(target: Any) -> str:
    from tile.compiler import INTERPRETER, current_target

    if target is None:
        return current_target()
    if isinstance(target, GPUTarget):
        return target.ptx_target()
    if target == INTERPRETER:
        return target
    if isinstance(target, str):
        GPUTarget.from_ptx_target(target)  # raises ValueError for a name that is no PTX target
        return target
    raise TypeError(f"target must be None, 'interpreter', a PTX target such as 'sm_90a' or a GPUTarget; got {target!r}")


def compile(src: Any, target: Any = None, options: Optional[dict[str, Any]] = None) -> Any:
    """Compile `src` (an ASTSource) for `target` without launching, as Triton's
    `triton.compile`; returns the CompiledKernel (asm, metadata, n_regs, kernel[grid](...)).

    Options: num_warps, num_stages, num_ctas (1), maxnreg, launch_cooperative_grid,
    launch_pdl. A GPU target needs no GPU: the stages are compiled to PTX, and `n_regs`
    comes from ptxas. Compiling from IR files (Triton's IRSource) is not supported.
    """
    from tile.compiler import DEFAULT_OPTIONS, INTERPRETER, compile_kernel, compile_to_ptx
    from tile.frontend.binder import LAUNCH_OPTIONS, check_launch_options
    from tile.frontend.specialize import Specialization

    if not isinstance(src, ASTSource):
        raise TypeError(f"tile.compile takes an ASTSource (tile.compiler.ASTSource); tile does not compile IR files "
                        f"(Triton's IRSource), got {type(src).__name__}")
    unknown = sorted(set(options or {}) - set(_COMPILE_OPTIONS))
    if unknown:
        raise TypeError(f"tile.compile: unknown options {', '.join(unknown)}; known: {', '.join(_COMPILE_OPTIONS)}")
    chosen = {**dict(LAUNCH_OPTIONS), **(options or {})}
    check_launch_options(src.name, chosen)
    compile_options = {k: chosen[k] for k in DEFAULT_OPTIONS}
    name = _target_name(target)
    spec = Specialization(src.fn.arg_names, src.specialization_key())
    if name == INTERPRETER:
        kernel = compile_kernel(src.fn, spec, compile_options, name)
    else:  # through the disk cache, as launches are
        kernel = compile_to_ptx(src.fn, spec, compile_options, name)
    kernel.check_resources()
    return kernel
