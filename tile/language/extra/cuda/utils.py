"""tl.extra.cuda helpers: special registers through inline PTX, the launch's warp count, and
Triton's fp8e4b15 conversions written as packed inline PTX (four elements per asm).

    t0 = tl.extra.cuda.globaltimer()
    ...
    tl.store(elapsed_ptr, tl.extra.cuda.globaltimer() - t0)

The fp8e4b15 conversions compute what `x.to(tl.float8e4b15)` and `x.to(tl.float16)` compute
(tile.ir.float8): on the interpreter, where PTX cannot run, they are those casts.
"""
from __future__ import annotations

from typing import Any

from tile.frontend.core import builtin, current, ir_type_of, tensor, unwrap
from tile.frontend.semantics_extra import INTERPRETER_TARGET
from tile.ir.types import f8e4b15, f16, f32, i32, i64

# Four fp8e4b15 codes of one .b32 ($2) -> four fp16 in two .b32 ($0: codes 0 and 1, $1: codes 2 and 3).
# Each code c lands in the high byte of a half (prmt); fp16 bits = (c & 0x80) << 8 | (c & 0x7f) << 7
# (the two formats share their exponent bias).
_E4B15_TO_F16 = """{
.reg .b32 t;
prmt.b32 t, $2, 0, 0x1404;
and.b32 $0, t, 0x7f007f00;
shr.b32 $0, $0, 1;
and.b32 t, t, 0x80008000;
or.b32 $0, $0, t;
prmt.b32 t, $2, 0, 0x3424;
and.b32 $1, t, 0x7f007f00;
shr.b32 $1, $1, 1;
and.b32 t, t, 0x80008000;
or.b32 $1, $1, t;
}"""

# Four fp16 in two .b32 ($1, $2) -> four fp8e4b15 codes in one .b32 ($0): per half, magnitude
# clamped to 1.75 (0x3F00; NaN and inf too), doubled plus 0x80 (round half away from zero),
# the sign or-ed back, and the high byte of each half kept (prmt 0x7531).
_F16_TO_E4B15_HEAD = """{
.reg .b32 a0, a1, b0, b1, lo, hi, c;
and.b32 a0, $1, 0x7fff7fff;
and.b32 a1, $2, 0x7fff7fff;
"""
_CLAMP_MIN_F16X2 = """mov.b32 c, 0x3f003f00;
min.f16x2 a0, a0, c;
min.f16x2 a1, a1, c;
"""
_CLAMP_INTEGER = "".join(f"""and.b32 lo, {a}, 0xffff;
shr.b32 hi, {a}, 16;
min.u32 lo, lo, 0x3f00;
min.u32 hi, hi, 0x3f00;
shl.b32 hi, hi, 16;
or.b32 {a}, lo, hi;
""" for a in ("a0", "a1"))
_F16_TO_E4B15_TAIL = """mad.lo.u32 a0, a0, 2, 0x00800080;
mad.lo.u32 a1, a1, 2, 0x00800080;
and.b32 b0, $1, 0x80008000;
and.b32 b1, $2, 0x80008000;
or.b32 b0, b0, a0;
or.b32 b1, b1, a1;
prmt.b32 $0, b0, b1, 0x7531;
}"""


@builtin
def globaltimer() -> tensor:
    """The GPU's global timer in nanoseconds (%globaltimer), an int64 scalar. Never merged or
    removed by the compiler (each call reads the clock anew). GPU only."""
    return current().inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], i64, False, 1)


@builtin
def smid() -> tensor:
    """The index of the streaming multiprocessor running this program (%smid), an int32 scalar. GPU only."""
    return current().inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], i32, True, 1)


@builtin
def num_threads() -> int:
    """The number of threads of a program (num_warps * 32), a compile-time value."""
    return current().options["num_warps"] * 32


@builtin
def num_warps() -> int:
    """The num_warps the kernel is compiled with, a compile-time value."""
    return current().options["num_warps"]


def _convert_custom_float8(arg: Any, dst_ty: Any, has_min_f16x2: bool) -> tensor:
    sem = current()
    x = sem.to_tensor(unwrap(arg))
    dst = ir_type_of(unwrap(dst_ty))
    src = x.element
    if src == f8e4b15:
        if not dst.is_floating or dst.is_fp8:
            raise TypeError(f"convert_custom_float8 upcasts tl.float8e4b15 to a float type, not {unwrap(dst_ty)!r}")
        if sem.target == INTERPRETER_TARGET:
            return sem.cast(x, dst)
        return sem.cast(sem.inline_asm_elementwise(_E4B15_TO_F16, "=r,=r,r", [x], f16, True, 4), dst)
    if src not in (f16, f32) or dst != f8e4b15:
        raise TypeError(f"convert_custom_float8 converts tl.float8e4b15 to floats and tl.float16/tl.float32 to "
                        f"tl.float8e4b15, not {x.dtype!r} to {unwrap(dst_ty)!r}")
    if sem.target == INTERPRETER_TARGET:
        return sem.cast(x, dst)
    half = sem.cast(x, f16, "rtz") if src == f32 else x  # Triton's rule: fp32 rounds toward zero to fp16 first
    clamp = _CLAMP_MIN_F16X2 if has_min_f16x2 else _CLAMP_INTEGER
    return sem.inline_asm_elementwise(_F16_TO_E4B15_HEAD + clamp + _F16_TO_E4B15_TAIL, "=r,r,r", [half], f8e4b15,
                                      True, 4)


@builtin
def convert_custom_float8_sm80(arg: Any, dst_ty: Any, fp_downcast_rounding: Any = None) -> tensor:
    """Convert between tl.float8e4b15 and fp16/fp32 in packed PTX (min.f16x2: sm_80 and newer).

    fp8e4b15 -> `dst_ty` (a float type) is exact. fp16/fp32 -> fp8e4b15 (`dst_ty` =
    tl.float8e4b15) follows Triton: fp32 is first rounded toward zero to fp16, the magnitude is
    clamped to 1.75 and rounded half away from zero (what `x.to(tl.float8e4b15)` does).
    `fp_downcast_rounding` is accepted for Triton's signature and has no effect.

        y = tl.extra.cuda.convert_custom_float8_sm80(x_fp32, tl.float8e4b15)
    """
    return _convert_custom_float8(arg, dst_ty, has_min_f16x2=True)


@builtin
def convert_custom_float8_sm70(arg: Any, dst_ty: Any, fp_downcast_rounding: Any = None) -> tensor:
    """convert_custom_float8_sm80 without packed fp16 min (clamps with integer min per half):
    for GPUs before sm_80. Same results."""
    return _convert_custom_float8(arg, dst_ty, has_min_f16x2=False)


__all__ = ["globaltimer", "smid", "num_threads", "num_warps", "convert_custom_float8_sm80",
           "convert_custom_float8_sm70"]
