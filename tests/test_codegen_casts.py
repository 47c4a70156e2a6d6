"""arith.cast and arith.bitcast between every pair of dtypes, lowered and run as PTX on
tile.emulator against exact references (round to nearest even, truncation toward zero), and
assembled for sm_80 (fp8 in integer arithmetic there) and sm_90a."""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import blocked, check_ptx, decode, encode, func, lower, result, run
from ptxas_util import needs_ptxas
from tile.codegen.lower_core import LoweringError
from tile.codegen.floats import float_bits
from tile.ir.types import DTYPES

NAMES = ["i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "f8e4nv", "f8e5"]
STORAGE = {"i1": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": np.uint16,
           "f32": np.float32, "f64": np.float64, "f8e4nv": np.uint8, "f8e5": np.uint8}
N = 64
RNG = np.random.default_rng(3)


def cast_all(src: str, dsts: list[str], target: str, rounding: str = "rtne") -> str:
    L = blocked([2], [32], [1])
    T = lambda t: f"tensor<{N}x{t}, {L}>"  # noqa: E731
    lines = [f"  %r = tt.arange {{end = {N}, start = 0}} : {T('i32')}",
             f"  %xs = tt.splat %x : {T(f'ptr<{src}>')}", f"  %xp = tt.addptr %xs, %r : {T(f'ptr<{src}>')}",
             f"  %v = tt.load %xp : {T(src)}"]
    for k, dst in enumerate(dsts):
        attrs = f' {{rounding = "{rounding}"}}' if rounding != "rtne" else ""
        lines += [f"  %c{k} = arith.cast %v{attrs} : {T(dst)}",
                  f"  %os{k} = tt.splat %o{k} : {T(f'ptr<{dst}>')}",
                  f"  %op{k} = tt.addptr %os{k}, %r : {T(f'ptr<{dst}>')}",
                  f"  tt.store %op{k}, %c{k}"]
    params = [("x", f"ptr<{src}>")] + [(f"o{k}", f"ptr<{d}>") for k, d in enumerate(dsts)]
    return func("casts", params, "\n".join(lines), num_warps=1, target=target)


def _values(src: str) -> np.ndarray:
    """Source values every destination can hold (small magnitudes), with fractions and ties."""
    if src == "i1":
        return (RNG.random(N) > 0.5).astype(np.float64)
    t = DTYPES[src]
    if t.is_integer:
        lo = 0 if t.is_unsigned else -100
        return RNG.integers(lo, 101, N).astype(np.float64)
    v = RNG.uniform(-100, 100, N)
    v[:4] = [0.0, -0.0, 1.5, -2.5]
    if src in ("f8e4nv", "f8e5", "bf16"):
        v[4:] = np.abs(v[4:]) if False else v[4:]
    return v


def _to_storage(v: np.ndarray, name: str) -> np.ndarray:
    """Values (exactly representable) as the bytes the kernel reads."""
    t = DTYPES[name]
    if name in ("bf16", "f8e4nv", "f8e5"):
        return encode(v, t)
    return v.astype(STORAGE[name])


def _exact(v: np.ndarray, name: str) -> np.ndarray:
    """v rounded to the source type (what the kernel actually reads)."""
    t = DTYPES[name]
    if name in ("bf16", "f8e4nv", "f8e5"):
        return decode(encode(v, t), t).astype(np.float64)
    if t.is_floating:
        return v.astype(STORAGE[name]).astype(np.float64)
    return v


def _expected(v: np.ndarray, dst: str, rtz: bool) -> np.ndarray:
    t = DTYPES[dst]
    if dst == "i1":
        return (v != 0).astype(np.uint8)
    if t.is_integer:
        return np.trunc(v).astype(np.int64).astype(STORAGE[dst])
    if rtz:
        out = []
        for x in v:
            r = float(np.float64(x).astype(STORAGE[dst])) if dst not in ("bf16", "f8e4nv", "f8e5") else \
                float(decode(np.array([float_bits(x, t)]), t)[0])
            if abs(r) > abs(x):
                bits = (np.array([r], STORAGE[dst]).view(np.uint16 if t.bits == 16 else np.uint32 if t.bits == 32 else
                                                          np.uint64) - 1) if dst not in ("bf16", "f8e4nv", "f8e5") \
                    else None
                r = float(bits.view(STORAGE[dst])[0]) if bits is not None else \
                    float(decode(np.array([float_bits(x, t) - 1]), t)[0])
            out.append(r)
        v = np.array(out)
    if dst in ("bf16", "f8e4nv", "f8e5"):
        return encode(v, t)
    return v.astype(STORAGE[dst])


@pytest.mark.parametrize("src", NAMES)
def test_casts_from(src: str) -> None:
    dsts = [d for d in NAMES if d != src]
    simt = lower(cast_all(src, dsts, "sm_90a"))
    v = _exact(_values(src), src)
    outs = [np.full(N, 0x5A, STORAGE[d]) if d not in ("f16", "f32", "f64") else np.full(N, np.nan, STORAGE[d])
            for d in dsts]
    m, d = run(simt, (1,), [_to_storage(v, src)] + outs)
    for k, dst in enumerate(dsts):
        got, want = result(m, d[k + 1], outs[k]), _expected(v, dst, False)
        if DTYPES[src].is_floating and DTYPES[dst].is_unsigned:  # negative floats to unsigned are undefined
            got, want = got[v >= 0], want[v >= 0]
        np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")


@pytest.mark.parametrize("src,dst", [("f64", "bf16"), ("f64", "f16"), ("f32", "bf16"), ("i32", "bf16"),
                                     ("i64", "bf16"), ("f64", "f8e4nv"), ("f32", "f8e5"), ("u64", "bf16")])
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_narrowing_rounds_once(src: str, dst: str, target: str) -> None:
    """Values right next to a rounding boundary of the destination: rounding to f32 first
    (to nearest) would flip some of them; the kernel must round each exactly once."""
    t = DTYPES[dst]
    keep = t.mantissa_bits + 1
    base = RNG.integers(1 << (keep - 1), 1 << keep, N).astype(np.float64)
    if DTYPES[src].is_integer:
        shift = 20 if DTYPES[src].bits == 32 else 40  # more bits than f32 holds: a first rounding would show
        v = base * 2.0 ** shift + 2.0 ** (shift - 1) + RNG.choice([-1.0, 1.0, 0.0], N)  # ties and near-ties
    else:
        v = (base + 0.5) * 2.0 ** -keep + RNG.choice([-1.0, 1.0, 0.0], N) * 2.0 ** -40
        v = v.astype(np.float32).astype(np.float64) if src == "f32" else v
    simt = lower(cast_all(src, [dst], target))
    out = np.zeros(N, STORAGE[dst])
    m, d = run(simt, (1,), [v.astype(STORAGE[src]), out])
    np.testing.assert_array_equal(result(m, d[1], out), _expected(v.astype(STORAGE[src]).astype(np.float64), dst,
                                                                  False))


@pytest.mark.parametrize("src,dst", [("f32", "f16"), ("f64", "f32"), ("f32", "bf16"), ("f64", "bf16"),
                                     ("i32", "f32"), ("i64", "bf16")])
def test_round_toward_zero(src: str, dst: str) -> None:
    v = RNG.uniform(-1000, 1000, N)
    if DTYPES[src].is_integer:
        v = RNG.integers(-(1 << 30), 1 << 30, N).astype(np.float64)
    v = v.astype(STORAGE[src]).astype(np.float64)
    simt = lower(cast_all(src, [dst], "sm_80", rounding="rtz"))
    out = np.zeros(N, STORAGE[dst])
    m, d = run(simt, (1,), [v.astype(STORAGE[src]), out])
    np.testing.assert_array_equal(result(m, d[1], out), _expected(v, dst, True))


def test_fp8_rounds_to_nearest_only() -> None:
    with pytest.raises(LoweringError, match="nearest only"):
        lower(cast_all("f32", ["f8e4nv"], "sm_80", rounding="rtz"))


def bitcasts() -> str:
    L = blocked([1], [32], [1])
    T = lambda t: f"tensor<32x{t}, {L}>"  # noqa: E731
    pairs = [("f32", "i32"), ("f16", "i16"), ("bf16", "u16"), ("f8e4nv", "i8"), ("i8", "u8"), ("f64", "u64"),
             ("u8", "f8e5")]
    lines = [f"  %r = tt.arange {{end = 32, start = 0}} : {T('i32')}"]
    params = []
    for k, (a, b) in enumerate(pairs):
        params += [(f"x{k}", f"ptr<{a}>"), (f"y{k}", f"ptr<{b}>")]
        pa, pb = f"ptr<{a}>", f"ptr<{b}>"
        lines += [f"  %xs{k} = tt.splat %x{k} : {T(pa)}", f"  %xp{k} = tt.addptr %xs{k}, %r : {T(pa)}",
                  f"  %v{k} = tt.load %xp{k} : {T(a)}", f"  %b{k} = arith.bitcast %v{k} : {T(b)}",
                  f"  %ys{k} = tt.splat %y{k} : {T(pb)}", f"  %yp{k} = tt.addptr %ys{k}, %r : {T(pb)}",
                  f"  tt.store %yp{k}, %b{k}"]
    return func("bitcasts", params, "\n".join(lines), num_warps=1), pairs


def test_bitcasts_keep_bits() -> None:
    text, pairs = bitcasts()
    simt = lower(text)
    args = []
    for a, b in pairs:
        bits = RNG.integers(0, 1 << min(16, DTYPES[a].bits), 32).astype(np.uint64)
        raw = bits.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[DTYPES[a].bits])
        ones = np.iinfo(raw.dtype).max
        raw[:2] = [ones, ones >> 1]  # NaNs with payloads and either sign, for the float types: a bitcast moves bits
        args += [raw, np.zeros_like(raw)]
    m, d = run(simt, (1,), args)
    for k in range(len(pairs)):
        np.testing.assert_array_equal(result(m, d[2 * k + 1], args[2 * k + 1]), args[2 * k])


@needs_ptxas
def test_casts_assemble() -> None:
    for src in NAMES:
        check_ptx(lower(cast_all(src, [d for d in NAMES if d != src], "sm_80")), ["sm_80"])
        check_ptx(lower(cast_all(src, [d for d in NAMES if d != src], "sm_90a")), ["sm_90a"])
    check_ptx(lower(cast_all("f64", ["bf16", "f16", "f32"], "sm_80", rounding="rtz")), ["sm_80"])
    check_ptx(lower(bitcasts()[0]))
