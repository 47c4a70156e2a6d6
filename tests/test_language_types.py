"""Type promotion and broadcasting, table-driven against Triton's rules, plus properties.

Triton documents the promotion of two blocks as: kind (bool < int < float) first, then width,
then fp16 over bf16, then unsigned over signed; a Python number of a lower or equal kind takes
the block's dtype. Where the documentation and Triton's `computation_type_impl` disagree
((int32, bfloat16): the docs say bfloat16, the code gives float32), tile follows the code,
since that is what Triton kernels get.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.frontend.semantics import computation_type, integer_promote, python_type
from tile.ir import DTYPES

T = DTYPES
ALL = [T[n] for n in ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f8e4nv", "f8e5", "f16", "bf16",
                      "f32", "f64")]

# (a, b, div_or_mod) -> result, for two blocks
BLOCK_TABLE = [
    ("f32", "f16", False, "f32"),
    ("f16", "bf16", False, "f16"),  # "prefer float16"
    ("i32", "u32", False, "u32"),  # "prefer unsigned"
    ("i8", "i16", False, "i16"),
    ("u8", "i16", False, "i16"),
    ("u32", "i64", False, "i64"),
    ("u64", "i64", False, "u64"),
    ("i1", "i8", False, "i8"),
    ("i1", "i1", False, "i1"),
    ("i32", "f16", False, "f16"),
    ("i64", "f16", False, "f16"),
    ("i32", "bf16", False, "f32"),
    ("bf16", "bf16", False, "bf16"),
    ("f16", "f16", True, "f32"),  # no fp16 division in PTX: / and % compute in fp32
    ("bf16", "bf16", True, "f32"),
    ("f8e4nv", "f8e5", False, "f16"),
    ("f8e4nv", "f8e4nv", False, "f8e4nv"),
    ("f8e5", "f32", False, "f32"),
    ("f64", "f16", False, "f64"),
    ("i64", "i8", True, "i64"),
]

# (block dtype, Python number, div_or_mod) -> result
SCALAR_TABLE = [
    ("u8", 3, False, "u8"),
    ("i16", 4.0, False, "f32"),
    ("f16", 2.0, False, "f16"),
    ("f16", 2, True, "f32"),
    ("bf16", 0.5, False, "bf16"),
    ("i8", True, False, "i8"),
    ("i1", 1, False, "i32"),
    ("i64", 1.5, False, "f32"),
    ("f64", 1.5, False, "f64"),
    ("u64", 2**63, False, "u64"),
]


@pytest.mark.parametrize("a,b,div,want", BLOCK_TABLE)
def test_block_promotion_table(a, b, div, want):
    assert computation_type(T[a], False, T[b], False, div) == T[want]
    assert computation_type(T[b], False, T[a], False, div) == T[want]


@pytest.mark.parametrize("a,s,div,want", SCALAR_TABLE)
def test_scalar_promotion_table(a, s, div, want):
    assert computation_type(T[a], False, python_type(s), True, div) == T[want]
    assert computation_type(python_type(s), True, T[a], False, div) == T[want]


def test_python_number_types():
    assert [python_type(v) for v in (True, 1, -2**31, 2**31, 2**32, -2**40, 2**63, 1.5, 1e300, 0.0, float("inf"))] == \
        [T[n] for n in ("i1", "i32", "i32", "u32", "i64", "i64", "u64", "f32", "f64", "f32", "f32")]
    with pytest.raises(ValueError):
        python_type(2**64)


def test_mixed_signedness_division_is_an_error():
    with pytest.raises(TypeError, match="differ in signedness"):
        computation_type(T["i32"], False, T["u32"], False, True)


@given(st.sampled_from(ALL), st.sampled_from(ALL), st.booleans())
@settings(max_examples=200, deadline=None)
def test_promotion_is_commutative_and_never_loses_kind(a, b, div):
    try:
        r = computation_type(a, False, b, False, div)
    except TypeError:
        mixed_fp8 = (a.is_fp8 and b.is_integer) or (b.is_fp8 and a.is_integer)
        assert mixed_fp8 or (div and a.is_integer and b.is_integer)
        return
    assert r == computation_type(b, False, a, False, div)
    kind = lambda t: 2 if t.is_floating else 0 if t.bits == 1 else 1  # noqa: E731
    assert kind(r) == max(kind(a), kind(b))
    if r.is_integer:
        assert r == integer_promote(a, b) and r.bits == max(a.bits, b.bits)


@given(st.sampled_from([t for t in ALL if t.bits > 1]), st.one_of(st.integers(-100, 100), st.booleans()))
@settings(max_examples=100, deadline=None)
def test_small_int_literals_keep_the_block_dtype(t, s):
    if t.kind == "uint" and s < 0:
        return
    assert computation_type(t, False, python_type(s), True, False) == t


# ------------------------------------------------------------- through the frontend


@tile.jit
def promote_kernel(a_ptr, b_ptr, out_ptr, OP: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, 4))
    b = tl.load(b_ptr + tl.arange(0, 4))
    if OP == "+":
        c = a + b
    elif OP == "/":
        c = a / b
    elif OP == "%":
        c = a % b
    elif OP == "where":
        c = tl.where(a > 0, a, b)
    else:
        c = a < b
    tl.static_print("RESULT", c.dtype)
    tl.store(out_ptr + tl.arange(0, 4), c.to(tl.float32))


NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32,
      "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64}


def result_dtype(capsys, a: str, b: str, op: str) -> str:
    spec, _ = promote_kernel.specialize((np.zeros(4, NP[a]), np.zeros(4, NP[b]), np.zeros(4, np.float32)),
                                        {"OP": op})
    promote_kernel.build_ir(spec)
    out = capsys.readouterr().out.split()
    return out[out.index("RESULT") + 1]


@pytest.mark.parametrize("a,b,op,want", [
    ("i8", "i16", "+", "int16"), ("u8", "i8", "+", "uint8"), ("i32", "u32", "+", "uint32"),
    ("i32", "f16", "+", "fp16"), ("f16", "f32", "+", "fp32"), ("i32", "i32", "/", "fp32"),
    ("f16", "f16", "/", "fp32"), ("f16", "f16", "%", "fp32"), ("f64", "i64", "/", "fp64"),
    ("i64", "u32", "where", "int64"), ("f16", "f32", "<", "int1"),
])  # fmt: skip
def test_result_dtypes_through_kernels(capsys, a, b, op, want):
    assert result_dtype(capsys, a, b, op) == want


@tile.jit
def broadcast_kernel(out_ptr, A0: tl.constexpr, A1: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr):
    a = tl.zeros((A0, A1), tl.int32)
    b = tl.zeros((B0, B1), tl.int32)
    c = a + b
    tl.static_print("SHAPE", c.shape)


pow2 = st.sampled_from([1, 2, 4])


@given(pow2, pow2, pow2, pow2)
@settings(max_examples=40, deadline=None)
def test_broadcasting_matches_numpy(a0, a1, b0, b1):
    import io
    from contextlib import redirect_stdout

    spec, _ = broadcast_kernel.specialize((np.zeros(1, np.int32),), {"A0": a0, "A1": a1, "B0": b0, "B1": b1})
    try:
        want = np.broadcast_shapes((a0, a1), (b0, b1))
    except ValueError:
        with pytest.raises(tile.CompilationError, match=rf"shape mismatch: \[{a0}, {a1}\] and \[{b0}, {b1}\]"):
            broadcast_kernel.build_ir(spec)
        return
    buf = io.StringIO()
    with redirect_stdout(buf):
        broadcast_kernel.build_ir(spec)
    assert buf.getvalue().split("SHAPE")[1].strip() == str(tuple(want))
