"""Shared helpers of the interpreter tests: IR builders and independent number-format references."""
from __future__ import annotations

import functools
import math

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from tile.ir import parse_op, verify
from tile.runtime.interpreter import run_kernel

SETTINGS = settings(max_examples=12, deadline=None)
seeds = st.integers(0, 2**32 - 1)

STORAGE = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": np.uint16,
           "f8e4nv": np.uint8, "f8e5": np.uint8, "f32": np.float32, "f64": np.float64}  # fmt: skip
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
NARROW = ["f16", "bf16", "f8e4nv", "f8e5"]


# ------------------------------------------------------------------------- IR builders


def kernel(params: list[tuple[str, str]], body: str, name: str = "k"):
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    names = ", ".join(f'"{n}"' for n, _ in params)
    text = (f'tt.func {{arg_names = [{names}], sym_name = "{name}"}} {{\n^entry({args}):\n{body}\n'
            f"  tt.return\n}}")
    func = parse_op(text)
    verify(func)
    return func


def offsets(n: int) -> str:
    """%offs = program_id(0) * n + arange(n)."""
    return f"""
  %pid = tt.program_id {{axis = 0}} : i32
  %blk = arith.constant {{value = {n}}} : i32
  %start = arith.mul %pid, %blk : i32
  %ar = tt.arange {{end = {n}, start = 0}} : tensor<{n}xi32>
  %sp = tt.splat %start : tensor<{n}xi32>
  %offs = arith.add %sp, %ar : tensor<{n}xi32>"""


def ptrs(name: str, t: str, shape: str, offs: str = "%offs") -> str:
    return f"""
  %{name}_s = tt.splat %{name}_ptr : tensor<{shape}xptr<{t}>>
  %{name}_a = tt.addptr %{name}_s, {offs} : tensor<{shape}xptr<{t}>>"""


def load(name: str, t: str, shape: str, extra: str = "", offs: str = "%offs") -> str:
    return ptrs(name, t, shape, offs) + f"\n  %{name} = tt.load %{name}_a{extra} : tensor<{shape}x{t}>"


def store(name: str, value: str, t: str, shape: str, extra: str = "", offs: str = "%offs") -> str:
    return ptrs(name, t, shape, offs) + f"\n  tt.store %{name}_a, {value}{extra}"


@functools.cache
def elementwise(op: str, ins: tuple[str, ...], out: str, n: int = 64):
    """out[i] = op(a0[i], a1[i], ...) over programs of n elements; `op` names its inputs %a0, %a1..."""
    body = offsets(n)
    for i, t in enumerate(ins):
        body += load(f"a{i}", t, f"{n}")
    body += f"\n  %res = {op} : tensor<{n}x{out}>" + store("out", "%res", out, f"{n}")
    params = [(f"a{i}_ptr", f"ptr<{t}>") for i, t in enumerate(ins)] + [("out_ptr", f"ptr<{out}>")]
    return kernel(params, body)


def run(func, grid, *args):
    run_kernel(func, grid, list(args), func.attrs["sym_name"])


def poisoned(shape, t: str) -> np.ndarray:
    a = np.empty(shape, STORAGE[t])
    a.view(np.uint8)[...] = 0xAB
    return a


# ---------------------------------------------------------- reference number formats


def _fp8_value(code: int, e_bits: int, m_bits: int, ieee: bool) -> float:
    sign = -1.0 if code >> 7 else 1.0
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    if e == (1 << e_bits) - 1 and (ieee or m == (1 << m_bits) - 1):
        return sign * math.inf if ieee and m == 0 else math.nan
    return sign * math.ldexp(m if e == 0 else m + (1 << m_bits), max(e, 1) - bias - m_bits)


FP8 = {"f8e4nv": np.array([_fp8_value(c, 4, 3, False) for c in range(256)]),
       "f8e5": np.array([_fp8_value(c, 5, 2, True) for c in range(256)])}  # fmt: skip


def ref_decode(bits: np.ndarray, t: str) -> np.ndarray:
    """float64 values of memory contents."""
    if t == "f16":
        return bits.view(np.float16).astype(np.float64)
    if t == "bf16":
        with np.errstate(invalid="ignore"):
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t in FP8:
        return FP8[t][bits]
    return bits.astype(np.float64)


@functools.cache
def _format_table(t: str):
    """Positive finite values of format t in increasing order, with their codes."""
    n = 256 if t in FP8 else 65536
    codes = np.arange(n // 2, dtype=STORAGE[t] if t != "f16" else np.uint16)
    vals = ref_decode(codes, t)
    keep = np.isfinite(vals)
    order = np.argsort(vals[keep], kind="stable")
    return vals[keep][order], codes[keep][order].astype(np.int64)


def ref_round(v: np.ndarray, t: str, rtz: bool = False) -> np.ndarray:
    """Memory bits of float64 values rounded to format t (nearest-even or toward zero).

    fp8 saturates (the GPU's cvt.rn.satfinite); f16/bf16 overflow to infinity (RNE).
    """
    V, C = _format_table(t)
    a = np.abs(v)
    i = np.searchsorted(V, a, side="right")
    lo, hi = np.clip(i - 1, 0, len(V) - 1), np.clip(i, 0, len(V) - 1)
    if rtz:
        pick = lo
    else:
        dlo, dhi = a - V[lo], V[hi] - a
        pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(C[lo] % 2 == 0, lo, hi)))
    code = C[pick]
    top = V[-1] + (V[-1] - V[-2]) / 2
    inf_code = {"f16": 0x7C00, "bf16": 0x7F80, "f8e5": 0x7C}.get(t)
    if t in FP8:
        code = np.where(a > V[-1], C[-1], code)
    elif rtz:
        code = np.where(np.isinf(a), inf_code, np.where(a > V[-1], C[-1], code))
    else:
        code = np.where(a >= top, inf_code, code)
    sign = (1 << (8 * np.dtype(STORAGE[t]).itemsize - 1)) if t != "f16" else 0x8000
    code = np.where(np.signbit(v), code | sign, code)
    nan_code = {"f16": 0x7E00, "bf16": 0x7FC0, "f8e4nv": 0x7F, "f8e5": 0x7E}[t]
    return np.where(np.isnan(v), nan_code, code).astype(np.uint16 if t in ("f16", "bf16") else np.uint8)


def same_bits(got: np.ndarray, want: np.ndarray, t: str) -> None:
    """Equal memory bits, any NaN equal to any NaN."""
    g, w = ref_decode(got.view(np.uint16) if t == "f16" else got, t), ref_decode(want, t)
    both_nan = np.isnan(g) & np.isnan(w)
    bad = ~both_nan & (got.view(want.dtype) != want)
    assert not bad.any(), f"{t}: got {g[bad][:5]} want {w[bad][:5]}"


def random_bits(rng, t: str, n: int) -> np.ndarray:
    """Random finite, non-zero values of narrow float t, as memory bits."""
    V, C = _format_table(t)
    codes = C[rng.integers(1, len(C), n)]
    sign = 0x80 if t in FP8 else 0x8000
    codes = np.where(rng.random(n) < 0.5, codes | sign, codes)
    return codes.astype(np.uint16 if t in ("f16", "bf16") else np.uint8)


def random_floats(rng, t: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(memory array, float64 values) of random non-zero floats of t over many magnitudes."""
    if t in NARROW:
        bits = random_bits(rng, t, n)
        return (bits.view(np.float16) if t == "f16" else bits), ref_decode(bits, t)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(STORAGE[t])
    x[x == 0] = 1.5
    return x, x.astype(np.float64)


def random_ints(rng, t: str, n: int) -> np.ndarray:
    info = np.iinfo(STORAGE[t])
    x = rng.integers(info.min, info.max, n, dtype=STORAGE[t], endpoint=True)
    x[x == 0] = 3
    return x


def wrap(v: int, t: str) -> int:
    bits = np.iinfo(STORAGE[t]).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if t.startswith("i") and v >= 1 << (bits - 1) else v


