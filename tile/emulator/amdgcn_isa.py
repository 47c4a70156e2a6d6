"""What the AMDGCN instructions tile emits compute, as tables of NumPy functions.

The wave machine (amdgcn_machine) reads operands as uint64 arrays over the wave's lanes (a 64-bit
operand's two dwords joined) and looks the arithmetic up here; memory, EXEC, VCC, SCC, waits
and barriers are the machine's. Semantics follow the AMD Instinct MI300 ISA reference ("CDNA3
ISA"): chapter 4 (SALU), 6 (VALU), 7 (MFMA), 9 (global atomics).

    SCALAR_BINARY["s_addc_u32"](a, b, scc) -> (result, new SCC or None)
    VECTOR_FLOAT["v_fma_f32"](a, b, c)     -> float32 lanes (rounded once: fma_rounded_once)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1


def f32(x: np.ndarray) -> np.ndarray:
    """The low 32 bits of uint64 lanes as float32."""
    return x.astype(np.uint32).view(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    """float32 lanes as their bits (uint32)."""
    return np.asarray(x, np.float32).view(np.uint32)


def i32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.uint32).view(np.int32)


def signed(x: int, width: int = 32) -> int:
    return x - (1 << width) if x >> (width - 1) & 1 else x


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lg": np.not_equal, "neq": np.not_equal, "lt": np.less,
           "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}

# s_<op>_b32/u32/i32 with two 32-bit sources: (a, b, scc) -> (result bits, new SCC or None: kept)
SCALAR_BINARY: dict[str, Callable[[int, int, int], tuple[int, object]]] = {
    "s_add_u32": lambda a, b, c: (a + b, a + b > M32),
    "s_addc_u32": lambda a, b, c: (a + b + c, a + b + c > M32),
    "s_sub_u32": lambda a, b, c: (a - b, b > a),
    "s_subb_u32": lambda a, b, c: (a - b - c, b + c > a),
    "s_mul_i32": lambda a, b, c: (a * b, None),
    "s_mul_hi_u32": lambda a, b, c: ((a * b) >> 32, None),
    "s_mul_hi_i32": lambda a, b, c: ((signed(a) * signed(b)) >> 32, None),
    "s_and_b32": lambda a, b, c: (a & b, None), "s_or_b32": lambda a, b, c: (a | b, None),
    "s_xor_b32": lambda a, b, c: (a ^ b, None), "s_andn2_b32": lambda a, b, c: (a & ~b & M32, None),
    "s_lshl_b32": lambda a, b, c: (a << (b & 31), None), "s_lshr_b32": lambda a, b, c: (a >> (b & 31), None),
    "s_ashr_i32": lambda a, b, c: (signed(a) >> (b & 31), None),
    "s_min_i32": lambda a, b, c: (min(signed(a), signed(b)), None),
    "s_max_i32": lambda a, b, c: (max(signed(a), signed(b)), None),
    "s_min_u32": lambda a, b, c: (min(a, b), None), "s_max_u32": lambda a, b, c: (max(a, b), None),
}

# 64-bit scalar logic and shifts: (a, b) -> result
SCALAR_64: dict[str, Callable[[int, int], int]] = {
    "s_and_b64": lambda a, b: a & b, "s_or_b64": lambda a, b: a | b, "s_xor_b64": lambda a, b: a ^ b,
    "s_andn2_b64": lambda a, b: a & ~b & M64,
    "s_lshl_b64": lambda a, n: (a << (n & 63)) & M64, "s_lshr_b64": lambda a, n: a >> (n & 63),
    "s_ashr_i64": lambda a, n: (signed(a, 64) >> (n & 63)) & M64,
}


def bit_field(x: np.ndarray, offset: np.ndarray, width: np.ndarray, is_signed: bool) -> np.ndarray:
    """v_bfe_u32 / v_bfe_i32: `width` bits of `x` from bit `offset` (both taken mod 32)."""
    field = (x >> (offset & np.uint64(31))) & ((np.uint64(1) << (width & np.uint64(31))) - np.uint64(1))
    if not is_signed:
        return field
    w = (width & np.uint64(31)).astype(np.int64)
    f = field.astype(np.int64)
    return np.where((w > 0) & (f >= (np.int64(1) << np.maximum(w - 1, 0))), f - (np.int64(1) << w), f)


def worst_reciprocal(a: np.ndarray) -> np.ndarray:
    """v_rcp_f32 as badly as its 1-ulp bound allows (CDNA3 ISA 6.2): the largest f32 less than
    one ulp above 1/a (exact where 1/a is an f32), the side that breaks reciprocal-based division."""
    exact = 1.0 / a.astype(np.float64)
    near = exact.astype(np.float32)
    below = np.where(near.astype(np.float64) > exact, np.nextafter(near, np.float32(0)), near)
    return np.where(below.astype(np.float64) == exact, below, np.nextafter(below, np.float32(np.inf)))


def worst_sqrt(a: np.ndarray) -> np.ndarray:
    """v_sqrt_f32 as badly as its 1-ulp bound allows (CDNA3 ISA 6.2), like worst_reciprocal:
    exact squares stay exact, every other root lands on the f32 just under one ulp above."""
    exact = np.sqrt(a.astype(np.float64))
    near = exact.astype(np.float32)
    below = np.where(near.astype(np.float64) > exact, np.nextafter(near, np.float32(0)), near)
    return np.where(below.astype(np.float64) == exact, below, np.nextafter(below, np.float32(np.inf)))


def fma_rounded_once(a: np.ndarray, b: np.ndarray, c: np.ndarray, scale: object = 1.0) -> np.ndarray:
    """fma(a, b, c) * scale on float32 lanes with one rounding (scale a power of two). The product
    is exact in float64; the sum is rounded to odd there (of the two float64 neighbours of the
    exact sum, the one with an odd last bit), which float64's 29 spare bits make round to f32
    exactly as the exact sum would, denormal results included."""
    with np.errstate(invalid="ignore", over="ignore"):
        product = a.astype(np.float64) * b.astype(np.float64)
        c64 = c.astype(np.float64)
        total = product + c64
        back = total - product   # two-sum: the sum's rounding error, exactly
        error = (product - (total - back)) + (c64 - back)
        inexact = np.isfinite(total) & (error != 0)
        neighbour = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
        odd = np.where(total.view(np.uint64) & np.uint64(1), total, neighbour)
        return (np.where(inexact, odd, total) * scale).astype(np.float32)


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray, scale: object = 1.0) -> np.ndarray:
    """fma(a, b, c) * scale on float64 lanes with one rounding (scale a power of two): the exact
    value as a Fraction, rounded by Python's correctly rounded int division (subnormals too).
    Infinities and NaN as IEEE's fma: a finite product plus an infinity is that infinity."""
    scales = np.broadcast_to(np.asarray(scale, np.float64), a.shape)
    out = np.empty(a.shape, np.float64)
    for i, (x, y, z, k) in enumerate(zip(a.tolist(), b.tolist(), c.tolist(), scales.tolist())):
        if math.isfinite(x) and math.isfinite(y) and math.isinf(z):
            out[i] = z
        elif not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out[i] = x * y + z
        else:
            exact = (Fraction(x) * Fraction(y) + Fraction(z)) * Fraction(k)
            if exact == 0:
                out[i] = (x * y + z) * k   # the product is exact: the sign of zero as IEEE's
            else:
                try:
                    out[i] = float(exact)
                except OverflowError:
                    out[i] = math.inf if exact > 0 else -math.inf
    return out


@dataclass(frozen=True)
class DivisionFormat:
    """What the division helpers (v_div_scale / v_div_fmas / v_div_fixup, CDNA3 ISA 6 VOP3) of
    one float width depend on: its NumPy types, exponent field, the power of two v_div_scale
    scales by, the exponent gap it treats as near overflow, the smallest normal value, the
    exponent gap below which the quotient underflows to zero, and its fma rounded once."""

    float_type: type
    bits_type: type
    mantissa_bits: int
    exponent_mask: int
    scale: int
    overflow_gap: int
    smallest_normal: float
    underflow_gap: int
    fma: Callable[..., np.ndarray]

    def exponent(self, x: np.ndarray) -> np.ndarray:
        """The biased exponent field (0 for zeros and denormals, all ones for inf and NaN)."""
        raw = np.asarray(x, self.float_type).view(self.bits_type)
        return ((raw >> self.bits_type(self.mantissa_bits)) & self.bits_type(self.exponent_mask)).astype(np.int64)

    def is_denormal(self, x: np.ndarray) -> np.ndarray:
        return (x != 0) & (np.abs(x) < self.smallest_normal)

    def quiet(self, x: np.ndarray) -> np.ndarray:
        raw = np.asarray(x, self.float_type).view(self.bits_type)
        return (raw | self.bits_type(1 << (self.mantissa_bits - 1))).view(self.float_type)


F32_DIVISION = DivisionFormat(np.float32, np.uint32, 23, 0xFF, 64, 96, 2.0 ** -126, -150, fma_rounded_once)
F64_DIVISION = DivisionFormat(np.float64, np.uint64, 52, 0x7FF, 128, 768, 2.0 ** -1022, -1075, fma_f64)


def div_scale(s0: np.ndarray, den: np.ndarray, num: np.ndarray,
              fmt: DivisionFormat = F32_DIVISION) -> tuple[np.ndarray, np.ndarray]:
    """v_div_scale_f32 / _f64 D, VCC = S0, S1 (denominator), S2 (numerator) (CDNA3 ISA 6, VOP3b):
    the operand S0 (either the numerator or the denominator) scaled by 2^+-64 (f64: 2^+-128) so
    that the reciprocal, the residuals and the quotient of the division sequence stay normal.
    Both operands are scaled alike (the quotient unchanged) for a denormal or huge denominator
    or a tiny numerator; only one (VCC set, v_div_fmas scales back) when the quotient itself
    would overflow or be denormal. The cases are tried in order, the first that holds decides;
    a zero operand gives NaN (v_div_fixup answers it). The tininess tests run in long double,
    whose range holds f64 quotients."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        d_wide, n_wide = den.astype(np.longdouble), num.astype(np.longdouble)
        quotient, inverse = np.abs(n_wide / d_wide), np.abs(1 / d_wide)
    tiny = lambda x: (x != 0) & (x < fmt.smallest_normal)   # noqa: E731
    is_den, is_num = s0 == den, s0 == num
    up, down = 2.0 ** fmt.scale, 2.0 ** -fmt.scale
    # (condition, scale of S0, VCC): 1 keeps S0
    cases = [
        ((num == 0) | (den == 0), np.nan, False),
        (fmt.exponent(num) - fmt.exponent(den) >= fmt.overflow_gap, np.where(is_den, up, 1), True),
        (fmt.is_denormal(den), up, False),
        (tiny(inverse) & tiny(quotient), np.where(is_den, down, 1), True),
        (tiny(inverse), down, False),
        (tiny(quotient), np.where(is_num & ~is_den, up, 1), True),
        (fmt.exponent(num) <= fmt.mantissa_bits, up, False),
    ]
    scale, vcc = np.ones(len(s0), np.float64), np.zeros(len(s0), bool)
    decided = np.zeros(len(s0), bool)
    for condition, case_scale, case_vcc in cases:
        now = condition & ~decided
        scale = np.where(now, case_scale, scale)
        vcc |= now & case_vcc
        decided |= condition
    with np.errstate(invalid="ignore", over="ignore"):
        return (s0.astype(np.longdouble) * scale).astype(fmt.float_type), vcc


def div_fmas(a: np.ndarray, b: np.ndarray, c: np.ndarray, vcc: np.ndarray,
             fmt: DivisionFormat = F32_DIVISION) -> np.ndarray:
    """v_div_fmas_f32 / _f64 (CDNA3 ISA 6): fma(a, b, c), rounded once, times 2^64 (f64: 2^128)
    where VCC is set and the scaled quotient c is at least 2 (v_div_scale made the denominator
    larger), 2^-64 (2^-128) where VCC is set and c is below 2 (it made the numerator larger)."""
    bias = fmt.exponent_mask >> 1
    scale = np.where(vcc, np.where(fmt.exponent(c) > bias, 2.0 ** fmt.scale, 2.0 ** -fmt.scale), 1.0)
    return fmt.fma(a, b, c, scale)


def div_fixup(quotient: np.ndarray, den: np.ndarray, num: np.ndarray,
              fmt: DivisionFormat = F32_DIVISION) -> np.ndarray:
    """v_div_fixup_f32 / _f64 D = S0 (quotient), S1 (denominator), S2 (numerator) (CDNA3 ISA 6):
    the IEEE answers of the special cases (NaN, 0/0, inf/inf, x/0, inf/y, x/inf, 0/y, a quotient
    below 2^-150, f64: 2^-1075), else the quotient's magnitude with the sign of num / den (an
    intermediate overflow's NaN: infinity)."""
    negative = np.signbit(den) ^ np.signbit(num)
    signed = lambda x: np.where(negative, -fmt.float_type(x), fmt.float_type(x))   # noqa: E731
    magnitude = np.abs(quotient)
    cases = [
        (np.isnan(num), fmt.quiet(num)),
        (np.isnan(den), fmt.quiet(den)),
        ((den == 0) & (num == 0), fmt.float_type(np.nan)),
        (np.isinf(den) & np.isinf(num), fmt.float_type(np.nan)),
        ((den == 0) | np.isinf(num), signed(np.inf)),
        (np.isinf(den) | (num == 0), signed(0.0)),
        (fmt.exponent(num) - fmt.exponent(den) < fmt.underflow_gap, signed(0.0)),
        (np.isnan(quotient), signed(np.inf)),
    ]
    result = np.where(negative, -magnitude, magnitude)
    for condition, value in reversed(cases):   # the first case that holds wins
        result = np.where(condition, value, result)
    return result.astype(fmt.float_type)


RCP_F64_ERROR_ULPS = 1 << 28   # v_rcp_f64 is good to 2^29 ulp (CDNA3 ISA 6.2)


def coarse_reciprocal_f64(a: np.ndarray) -> np.ndarray:
    """v_rcp_f64 as coarse as its bound lets it be: 1/a where that is exact (powers of two,
    zeros, infinities, NaN), else 2^28 ulp above the rounded 1/a in magnitude, so that a
    division that skips a Newton step is caught."""
    with np.errstate(divide="ignore", invalid="ignore"):
        near = 1.0 / a
    exact = ~np.isfinite(near) | (near == 0) | ((a.view(np.uint64) & np.uint64((1 << 52) - 1)) == 0)
    coarse = (near.view(np.uint64) + np.uint64(RCP_F64_ERROR_ULPS)).view(np.float64)
    return np.where(exact, near, coarse)


# f32 arithmetic on float32 lanes
VECTOR_FLOAT: dict[str, Callable[..., np.ndarray]] = {
    "v_add_f32": np.add, "v_sub_f32": np.subtract, "v_mul_f32": np.multiply,
    "v_min_f32": np.fmin, "v_max_f32": np.fmax,
    "v_fma_f32": fma_rounded_once, "v_div_fixup_f32": div_fixup,
    "v_rcp_f32": worst_reciprocal, "v_rsq_f32": lambda a: np.float32(1) / np.sqrt(a),
    "v_exp_f32": np.exp2, "v_log_f32": np.log2, "v_sqrt_f32": worst_sqrt,
    # the argument in revolutions: sin(2 pi x) (CDNA3 ISA 6.2: valid for |x| <= 256)
    "v_sin_f32": lambda a: np.sin(2 * np.pi * a.astype(np.float64)),
    "v_cos_f32": lambda a: np.cos(2 * np.pi * a.astype(np.float64)),
    "v_floor_f32": np.floor, "v_ceil_f32": np.ceil, "v_trunc_f32": np.trunc, "v_rndne_f32": np.rint,
}
# f64 arithmetic on float64 lanes
VECTOR_F64: dict[str, Callable[..., np.ndarray]] = {
    "v_add_f64": np.add, "v_mul_f64": np.multiply, "v_min_f64": np.fmin, "v_max_f64": np.fmax,
    "v_fma_f64": fma_f64, "v_rcp_f64": coarse_reciprocal_f64,
    "v_div_fixup_f64": lambda q, den, num: div_fixup(q, den, num, F64_DIVISION),
}
# 32-bit integer arithmetic on uint64 lanes (the result is kept mod 2^32)
VECTOR_INT: dict[str, Callable[..., np.ndarray]] = {
    "v_mov_b32": lambda a: a,
    "v_add_u32": np.add, "v_sub_u32": np.subtract, "v_mul_lo_u32": np.multiply,
    "v_mul_hi_u32": lambda a, b: (a * b) >> np.uint64(32),
    "v_and_b32": np.bitwise_and, "v_or_b32": np.bitwise_or, "v_xor_b32": np.bitwise_xor,
    "v_lshlrev_b32": lambda n, a: a << (n & np.uint64(31)), "v_lshrrev_b32": lambda n, a: a >> (n & np.uint64(31)),
    "v_min_u32": np.minimum, "v_max_u32": np.maximum,
    "v_bfe_u32": lambda x, o, w: bit_field(x, o, w, False),
    "v_bfe_i32": lambda x, o, w: bit_field(x, o, w, True).astype(np.uint64),
    "v_lshl_or_b32": lambda a, n, b: (a << (n & np.uint64(31))) | b,
    "v_add3_u32": lambda a, b, c: a + b + c,
}
# 32-bit signed arithmetic on int32 lanes
VECTOR_SIGNED: dict[str, Callable[..., np.ndarray]] = {
    "v_ashrrev_i32": lambda n, a: a.astype(np.int64) >> (n & 31),
    "v_min_i32": np.minimum, "v_max_i32": np.maximum,
    "v_mul_hi_i32": lambda a, b: (a.astype(np.int64) * b) >> 32,
}


def _to_int(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """v_cvt_i32_f32 / v_cvt_u32_f32: truncation, saturating, NaN to 0 (CDNA3 ISA 6.4)."""
    t = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
    return np.clip(t, low, high).astype(np.int64).astype(np.uint64) & np.uint64(M32)


# conversions: uint64 lanes (the source's bits) -> the result's bits
CONVERSIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "v_cvt_f32_f16": lambda x: bits((x & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)),
    "v_cvt_f16_f32": lambda x: f32(x).astype(np.float16).view(np.uint16),
    "v_cvt_f32_i32": lambda x: bits(i32(x).astype(np.float32)),
    "v_cvt_f32_u32": lambda x: bits(x.astype(np.float32)),
    "v_cvt_i32_f32": lambda x: _to_int(f32(x), -2.0 ** 31, 2.0 ** 31 - 1),
    "v_cvt_u32_f32": lambda x: _to_int(f32(x), 0, 2.0 ** 32 - 1),
}

def _atomics(bits: int) -> dict[str, Callable[[object, object, object], object]]:
    """Global and buffer atomics on one value of `bits` bits: (old, value, compare) -> new, all unsigned
    integers of that width (the float add reads and writes the same bits as a float)."""
    unsigned, signed, floating = (np.dtype(f"{k}{bits // 8}") for k in "uif")
    mask = (1 << bits) - 1
    return {
        "add": lambda o, v, c: unsigned.type((int(o) + int(v)) & mask),
        f"add_f{bits}": lambda o, v, c: floating.type(o.view(floating) + v.view(floating)).view(unsigned),
        "smax": lambda o, v, c: max(o.view(signed), v.view(signed)).view(unsigned),
        "smin": lambda o, v, c: min(o.view(signed), v.view(signed)).view(unsigned),
        "umax": lambda o, v, c: max(o, v), "umin": lambda o, v, c: min(o, v),
        "and": lambda o, v, c: o & v, "or": lambda o, v, c: o | v, "xor": lambda o, v, c: o ^ v,
        "swap": lambda o, v, c: v, "cmpswap": lambda o, v, c: v if o == c else o,
    }


# by the instruction's name without global_atomic_ / buffer_atomic_ (and without _x2: the 64-bit table's rows)
ATOMIC = _atomics(32)
ATOMIC_64 = _atomics(64)

# bytes of global_load_* / global_store_* and ds_read_* / ds_write_* by their suffix
GLOBAL_BYTES = {"ubyte": 1, "sbyte": 1, "byte": 1, "ushort": 2, "sshort": 2, "short": 2, "dword": 4,
                "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}
LDS_BYTES = {"u8": 1, "i8": 1, "b8": 1, "u16": 2, "i16": 2, "b16": 2, "b32": 4, "b64": 8, "b128": 16}
SIGN_EXTENDED = {"sbyte", "sshort", "i8", "i16"}


# DPP (CDNA3 ISA, chapter 6, DPP; RDNA3 ISA, DPP16): the lane each lane's first source is read
# from, by DPP_CTRL code. Rows of 16 lanes, quads of 4; written apart from the code generator's
# table of controls (tile.codegen.amdgcn.isa.DPP_CONTROLS), which names them.
DPP_ROW = 16


def dpp_source_lanes(code: int, lanes: int, target: str) -> tuple[np.ndarray, np.ndarray]:
    """(source lane, whether the control defines one) for each of a wave's `lanes` lanes under
    DPP_CTRL `code` on `target` (0x150-0x15f: gfx90a / gfx942's row_newbcast and gfx1100's
    row_share read the same lane). A lane without a source gets itself as a placeholder."""
    i = np.arange(lanes)
    row, j = i - i % DPP_ROW, i % DPP_ROW
    n = code & 0xF
    everywhere = np.ones(lanes, bool)
    if code <= 0xFF:                                  # quad_perm
        return (i & ~3) | (code >> (2 * (i & 3)) & 3), everywhere
    if 0x101 <= code <= 0x10F:                        # row_shl
        return np.where(j + n < DPP_ROW, i + n, i), j + n < DPP_ROW
    if 0x111 <= code <= 0x11F:                        # row_shr
        return np.where(j >= n, i - n, i), j >= n
    if 0x121 <= code <= 0x12F:                        # row_ror
        return row + (j - n) % DPP_ROW, everywhere
    if code in (0x130, 0x138):                        # wave_shl, wave_shr (by one lane)
        source = i + 1 if code == 0x130 else i - 1
        inside = (source >= 0) & (source < lanes)
        return np.where(inside, source, i), inside
    if code in (0x134, 0x13C):                        # wave_rol, wave_ror
        return (i + (1 if code == 0x134 else -1)) % lanes, everywhere
    if code == 0x140:                                 # row_mirror
        return row + DPP_ROW - 1 - j, everywhere
    if code == 0x141:                                 # row_half_mirror
        return (i & ~7) | (7 - (i & 7)), everywhere
    if code == 0x142:                                 # row_bcast:15: the last lane of the row before
        return np.where(row > 0, row - 1, i), row > 0
    if code == 0x143:                                 # row_bcast:31: lane 31, into rows 2 and 3
        return np.where(row >= 2 * DPP_ROW, 2 * DPP_ROW - 1, i), row >= 2 * DPP_ROW
    if 0x150 <= code <= 0x15F:                        # row_newbcast (CDNA), row_share (gfx1100)
        return row + n, everywhere
    if 0x160 <= code <= 0x16F and target == "gfx1100":   # row_xmask
        return row + (j ^ n), everywhere
    raise ValueError(f"DPP_CTRL {code:#x} is no DPP control of {target}")


# The wait states a VALU write of a VGPR needs before a DPP instruction reads it (CDNA3 ISA 4.5,
# "Manually Inserted Wait States": VALU writes VGPR, then VALU DPP reads that VGPR: 2). RDNA3
# checks this dependency in hardware (LLVM's GCNHazardRecognizer skips its DPP check on GFX10+).
DPP_READ_WAIT_STATES = {"gfx942": 2, "gfx90a": 2, "gfx1100": 0}
