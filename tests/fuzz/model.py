"""The NumPy model of generated programs: dtypes, Triton's type promotion, exact integer
arithmetic with wraparound, and float rounding.

A model value is a NumPy array with a leading program axis (one row per program of the
grid). Integers are held in their own NumPy dtype, i1 as bool, and every float dtype as
float64 holding a value that the dtype represents exactly (bf16 included, which NumPy lacks).
"""
from __future__ import annotations

import numpy as np

from interp_util import ref_decode, ref_round

INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOATS = ("f16", "bf16", "f32", "f64")
ALL = ("i1",) + INTS + FLOATS
BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "bf16": 16, "f32": 32, "f64": 64}  # fmt: skip
STORAGE = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": np.uint16,
           "f32": np.float32, "f64": np.float64}  # fmt: skip
TL_NAME = {"i1": "tl.int1", "i8": "tl.int8", "i16": "tl.int16", "i32": "tl.int32", "i64": "tl.int64",
           "u8": "tl.uint8", "u16": "tl.uint16", "u32": "tl.uint32", "u64": "tl.uint64", "f16": "tl.float16",
           "bf16": "tl.bfloat16", "f32": "tl.float32", "f64": "tl.float64"}  # fmt: skip
# Machine epsilon (a bound on one rounding's relative error) and the precision in bits.
EPS = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24, "f64": 2.0**-53}
PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
# Floats grow no larger than this, so chains of products stay finite in every dtype.
LIMIT = {"f16": 2.0**14, "bf16": 2.0**20, "f32": 2.0**40, "f64": 2.0**60}


def is_int(t: str) -> bool:
    return t in INTS


def is_signed(t: str) -> bool:
    return t.startswith("i") and t != "i1"


def is_float(t: str) -> bool:
    return t in FLOATS


def kind(t: str) -> int:
    """Triton's kind order: bool < integer < float."""
    return 0 if t == "i1" else 2 if is_float(t) else 1


def integer_promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions (Triton's integer_promote_impl)."""
    sa, sb = is_signed(a), is_signed(b)
    if sa == sb:
        return a if BITS[a] > BITS[b] else b
    unsigned, signed = (a, b) if not sa else (b, a)
    return unsigned if BITS[unsigned] >= BITS[signed] else signed


def computation_type(a: str, b: str, b_is_literal: bool = False, div: bool = False) -> str:
    """Triton's computation_type_impl for tensor `a` and tensor (or Python literal) `b`."""
    if b_is_literal and kind(b) <= kind(a):
        return "f32" if div and a in ("f16", "bf16") else a
    if "f64" in (a, b):
        return "f64"
    if "f32" in (a, b):
        return "f32"
    if "f16" in (a, b):
        return "f32" if div else "f16"
    if a == b == "bf16":
        return "f32" if div else "bf16"
    if "bf16" in (a, b):
        return "f32"
    return integer_promote(a, b)


def literal_type(value: int | float) -> str:
    return "f32" if isinstance(value, float) else "i32"


def round_float(values: np.ndarray, t: str) -> np.ndarray:
    """float64 `values` rounded to nearest-even in float dtype t (kept as float64)."""
    values = np.asarray(values, dtype=np.float64)
    if t == "f64":
        return values.copy()
    with np.errstate(over="ignore"):  # past the type's range is inf, as on the GPU
        if t == "f32":
            return values.astype(np.float32).astype(np.float64)
        if t == "f16":
            return values.astype(np.float16).astype(np.float64)
    return ref_decode(ref_round(values, "bf16"), "bf16")


def wrap(values: np.ndarray, t: str) -> np.ndarray:
    """Python-int (object) or integer `values` wrapped to integer dtype t (two's complement)."""
    obj = np.asarray(values, dtype=object)
    bits = BITS[t]
    wrapped = np.vectorize(lambda v: _wrap_one(int(v), bits, is_signed(t)), otypes=[object])(obj) if obj.size else obj
    return np.asarray(wrapped, dtype=object).astype(STORAGE[t]).reshape(obj.shape)


def _wrap_one(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def as_objects(values: np.ndarray) -> np.ndarray:
    """Integers (or bools) as exact Python ints."""
    return np.asarray(values).astype(object) if values.dtype != np.bool_ else values.astype(np.int64).astype(object)


def convert(values: np.ndarray, src: str, dst: str) -> np.ndarray | None:
    """Triton's cast of a model value from src to dst, or None where it is undefined (a float
    out of an integer's range) or not modelled exactly (an integer above 2**53 to a float)."""
    if src == dst:
        return values.copy()
    if dst == "i1":
        return values != 0
    if src == "i1":
        return values.astype(np.float64) if is_float(dst) else values.astype(STORAGE[dst])
    if is_int(src) and is_int(dst):
        return wrap(as_objects(values), dst)
    if is_int(src):  # to a float: one correctly rounded conversion
        if np.any(np.abs(values.astype(np.float64)) >= 2.0**24) and dst != "f32" and dst != "f64":
            return None
        if np.any(np.abs(values.astype(np.float64)) >= 2.0**53):
            return None
        return round_float(values.astype(np.float64), dst)
    if is_float(dst):
        return round_float(values, dst)
    truncated = np.trunc(values)  # float to integer truncates toward zero
    lo, hi = (-(2.0 ** (BITS[dst] - 1)), 2.0 ** (BITS[dst] - 1)) if is_signed(dst) else (0.0, 2.0 ** BITS[dst])
    if np.any(truncated < lo) or np.any(truncated >= hi):
        return None
    return truncated.astype(STORAGE[dst])


def to_storage(values: np.ndarray, t: str) -> np.ndarray:
    """Memory contents of a model value (bf16 as its bits)."""
    if t == "bf16":
        return ref_round(values, "bf16")
    return np.asarray(values).astype(STORAGE[t])


def from_storage(array: np.ndarray, t: str) -> np.ndarray:
    """A model value from memory contents."""
    if t == "bf16":
        return ref_decode(array.view(np.uint16), "bf16")
    if is_float(t):
        with np.errstate(invalid="ignore"):
            return array.astype(np.float64)
    return array.astype(STORAGE[t])


def bitcast(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    return from_storage(to_storage(values, src).view(STORAGE[dst]), dst)


def max_abs(values: np.ndarray) -> float:
    return float(np.max(np.abs(values))) if values.size else 0.0


def fraction_bits(values: np.ndarray) -> int | None:
    """The least k with every value an integer multiple of 2**-k (None if k > 40)."""
    for k in range(41):
        scaled = values * 2.0**k
        if np.all(scaled == np.round(scaled)):
            return k
    return None


def order_free_sum(values: np.ndarray, axis: int, t: str) -> bool:
    """Whether summing `values` along `axis` in dtype t is exact in every order: all are
    multiples of 2**-k and the sum of magnitudes fits t's precision at that scale."""
    k = fraction_bits(values)
    if k is None:
        return False
    return bool(np.all(np.sum(np.abs(values), axis=axis) * 2.0**k <= 2.0 ** PRECISION[t]))
