"""Semantics of tl.dot_scaled: a dot of microscaling (OCP MX) operands, decomposed as Triton
does on Hopper (DecomposeScaledBlocked): each operand is converted to a 16-bit compute type
(fp16 if either format is "fp16", else bf16), multiplied by its scales, and the two go to
tl.dot with an fp32 accumulator. Mixed into `Semantic`.

    formats     stored as                           value
    e2m1        uint8, two per byte, low nibble first    sign, 2-bit exponent (bias 1), 1-bit mantissa
    e4m3        uint8 or tl.float8e4nv               OCP E4M3 (NaN 0x7f/0xff, no infinity)
    e5m2        uint8 or tl.float8e5                 OCP E5M2 (IEEE-like)
    bf16, fp16  uint16 or the dtype                  themselves
    scale       uint8 (e8m0), one per 32 elements of K   2**(s - 127); 255 is NaN

Every conversion is exact (fp4 and fp8 values fit both 16-bit types) except bf16 operands
in an fp16 dot, which round. The scales: in bf16 2**(s - 127) exactly (s = 0 is the bf16
subnormal 2**-127); in fp16 2**(s - 127) rounded to fp16 (0 below 2**-25, inf from 2**16).
The product value * scale rounds once to the compute type; a scale of 255 makes its elements
NaN unless fast_math. The fp4/fp8 decoding is integer arithmetic on the codes, so it runs on
every target (and the interpreter) without fp8 instructions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from tile.ir.types import DType, bf16, f8e4nv, f8e5, f16, f32, u8, u16, u32

from .core import tensor, to_dtype

if TYPE_CHECKING:
    from .semantics import Semantic

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
SCALE_GROUP = 32  # elements of K per e8m0 scale
# fp8 formats: (exponent bits, mantissa bits, bias, dtype)
_FP8 = {"e4m3": (4, 3, 7, f8e4nv), "e5m2": (5, 2, 15, f8e5)}


class ScaledDotOps:
    """tl.dot_scaled: a method of `Semantic`."""

    def dot_scaled(self: "Semantic", lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any,
                   rhs_format: Any, acc: Any, fast_math: bool, lhs_k_pack: bool, rhs_k_pack: bool,
                   out_dtype: DType) -> tensor:
        for side, fmt, k_pack in (("lhs", lhs_format, lhs_k_pack), ("rhs", rhs_format, rhs_k_pack)):
            if fmt not in FORMATS:
                raise ValueError(f"tl.dot_scaled: unknown {side}_format {fmt!r}; the formats are "
                                 f"{', '.join(FORMATS)}")
            if not k_pack and fmt != "e2m1":
                raise ValueError(f"tl.dot_scaled: {side}_k_pack=False is for e2m1 (fp4 packed along another "
                                 f"dimension than K), not {fmt}")
        if out_dtype != f32:
            raise ValueError(f"tl.dot_scaled: out_dtype must be tl.float32, got {to_dtype(out_dtype)!r}")
        for side, x in (("lhs", lhs), ("rhs", rhs)):
            if not isinstance(x, tensor) or len(x.shape) != 2:
                raise ValueError(f"tl.dot_scaled: {side} must be a 2-D block (batched 3-D dot_scaled is not "
                                 f"supported), got {x!r}")
        compute = f16 if "fp16" in (lhs_format, rhs_format) else bf16
        a = self._mx_operand(lhs, lhs_format, axis=1 if lhs_k_pack else 0, compute=compute, side="lhs")
        b = self._mx_operand(rhs, rhs_format, axis=0 if rhs_k_pack else 1, compute=compute, side="rhs")
        (m, k), (k_rhs, n) = a.shape, b.shape
        if k != k_rhs:
            raise ValueError(f"tl.dot_scaled: lhs holds {k} elements along K and rhs {k_rhs} (lhs {list(lhs.shape)} "
                             f"{lhs_format}, rhs {list(rhs.shape)} {rhs_format})")
        a = self._apply_scale(a, lhs_scale, (m, k), compute, fast_math, "lhs", transpose=False)
        b = self._apply_scale(b, rhs_scale, (n, k), compute, fast_math, "rhs", transpose=True)
        return self.dot(a, b, acc, None, None, f32)

    # ---------------------------------------------------------------------- operands
    def _mx_operand(self: "Semantic", x: tensor, fmt: str, axis: int, compute: DType, side: str) -> tensor:
        """The operand's values in the compute type; e2m1 unpacked along `axis`."""
        if fmt == "e2m1":
            self._expect_dtype(x, (u8,), side, fmt)
            lo = self.and_(x, 0xF)
            hi = self.shr(x, 4)
            return self._interleave(self._decode_e2m1(lo, compute), self._decode_e2m1(hi, compute), axis)
        if fmt in _FP8:
            fp8 = _FP8[fmt][3]
            self._expect_dtype(x, (u8, fp8), side, fmt)
            codes = x if x.element == u8 else self.bitcast(x, u8)
            return self.cast(self._decode_fp8(codes, fmt), compute)
        own = bf16 if fmt == "bf16" else f16
        self._expect_dtype(x, (u16, own), side, fmt)
        return self.cast(x if x.element == own else self.bitcast(x, own), compute)

    @staticmethod
    def _expect_dtype(x: tensor, allowed: tuple, side: str, fmt: str) -> None:
        if x.element not in allowed:
            names = " or ".join(repr(to_dtype(t)) for t in allowed)
            raise TypeError(f"tl.dot_scaled: {side} in format {fmt} must hold {names}, got {to_dtype(x.element)!r}")

    def _f32_from_bits(self: "Semantic", bits: tensor) -> tensor:
        return self.bitcast(bits, f32)

    def _decode_e2m1(self: "Semantic", nibble: tensor, compute: DType) -> tensor:
        """fp4 codes (uint8 0..15) as values: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives."""
        code = self.cast(nibble, u32)
        mag = self.and_(code, 7)
        exponent = self.add(self.shr(mag, 1), 126, sanitize_overflow=False)
        normal = self.or_(self.shl(exponent, 23), self.shl(self.and_(mag, 1), 22))
        small = self.where(self.compare("eq", mag, 1), 0x3F000000, 0)  # codes 0 and 1: 0 and 0.5
        bits = self.where(self.compare("lt", mag, 2), small, normal)
        bits = self.or_(bits, self.shl(self.and_(code, 8), 28))
        return self.cast(self._f32_from_bits(bits), compute)

    def _decode_fp8(self: "Semantic", codes: tensor, fmt: str) -> tensor:
        """OCP fp8 codes (uint8) as f32: the magnitude bits moved under an f32 exponent, scaled."""
        e_bits, m_bits, bias, _ = _FP8[fmt]
        code = self.cast(codes, u32)
        mag = self.and_(code, 0x7F)
        x = self.mul(self._f32_from_bits(self.shl(mag, 23 - m_bits)), 2.0 ** (127 - bias))
        if fmt == "e4m3":
            special = self.where(self.compare("eq", mag, 0x7F), float("nan"), x)
        else:
            top = ((1 << e_bits) - 1) << m_bits
            special = self.where(self.compare("eq", mag, top), float("inf"),
                                 self.where(self.compare("gt", mag, top), float("nan"), x))
        return self.where(self.compare("ne", self.and_(code, 0x80), 0), self.neg(special), special)

    def _interleave(self: "Semantic", first: tensor, second: tensor, axis: int) -> tensor:
        """Blocks `first` and `second` interleaved along `axis`: first[i], second[i], first[i + 1]..."""
        shape = list(first.shape)
        wide = shape[:axis + 1] + [2] + shape[axis + 1:]
        pick = self.arange(0, 2)
        for d in range(len(wide)):
            if d != axis + 1:
                pick = self.expand_dims(pick, d)
        a = self.broadcast_to(self.expand_dims(first, axis + 1), wide)
        b = self.broadcast_to(self.expand_dims(second, axis + 1), wide)
        joined = self.where(self.broadcast_to(self.compare("eq", pick, 0), wide), a, b)
        shape[axis] *= 2
        return self.reshape(joined, shape)

    # ------------------------------------------------------------------------ scales
    def _apply_scale(self: "Semantic", x: tensor, scale: Optional[Any], rows_k: tuple[int, int], compute: DType,
                     fast_math: bool, side: str, transpose: bool) -> tensor:
        """x * 2**(scale - 127) per group of 32 along K; `scale` is [rows, K // 32] (rhs: rows = N)."""
        if scale is None:
            return x
        rows, k = rows_k
        want = [rows, k // SCALE_GROUP]
        if not isinstance(scale, tensor) or list(scale.shape) != want or k % SCALE_GROUP:
            got = list(scale.shape) if isinstance(scale, tensor) else repr(scale)
            raise ValueError(f"tl.dot_scaled: {side}_scale must be a block of shape {want} (one e8m0 scale per "
                             f"{SCALE_GROUP} elements of K = {k}), got {got}")
        if scale.element != u8:
            raise TypeError(f"tl.dot_scaled: {side}_scale holds e8m0 scales as tl.uint8, got "
                            f"{to_dtype(scale.element)!r}")
        factor = self._e8m0(scale, compute)
        factor = self.reshape(self.broadcast_to(self.expand_dims(factor, 2), want + [SCALE_GROUP]), [rows, k])
        if transpose:
            factor = self.trans(factor, None)
        scaled = self.mul(x, factor)
        if fast_math:
            return scaled
        nan = self.compare("eq", self.reshape(self.broadcast_to(self.expand_dims(scale, 2), want + [SCALE_GROUP]),
                                              [rows, k]), 255)
        return self.where(self.trans(nan, None) if transpose else nan, float("nan"), scaled)

    def _e8m0(self: "Semantic", scale: tensor, compute: DType) -> tensor:
        """2**(s - 127) in the compute type (bf16: exact, s = 0 the subnormal 0x0040; fp16: rounded)."""
        if compute == bf16:
            wide = self.cast(scale, u16)
            bits = self.where(self.compare("eq", wide, 0), 0x40, self.shl(wide, 7))
            return self.bitcast(self.cast(bits, u16), bf16)
        return self.cast(self._f32_from_bits(self.shl(self.cast(scale, u32), 23)), f16)


__all__ = ["ScaledDotOps", "FORMATS", "SCALE_GROUP"]
