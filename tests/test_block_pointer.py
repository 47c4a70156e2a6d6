"""Block pointers (tl.make_block_ptr, tl.advance, tl.load / tl.store with boundary_check and
padding_option) against NumPy: on the interpreter (and on a GPU through the `arrays` fixture),
on tile.emulator (codegen, num_warps 4), as gpu IR (contiguous accesses vectorize like
the hand-written pointer kernel), and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codegen_e2e import launch, out_of
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)
from test_tuples import expect_error

import tile
import tile.language as tl

# The emulator param runs these kernels' sm_90a PTX, where block pointers may become TMA copies.
pytestmark = pytest.mark.emulate_on("sm_90a")
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
RNG = np.random.default_rng(11)
X = np.zeros((8, 8), np.float32)


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100 if np.dtype(dtype).kind == "i" else 1, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) + 2).astype(dtype)


# ---------------------------------------------------------------------------- 1-D copies


@tile.jit
def block_copy_kernel(a_ptr, b_ptr, N, BLOCK: tl.constexpr, PADDING: tl.constexpr, WHERE: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    if WHERE == "lower":
        offset = -N
    elif WHERE == "upper":
        offset = N
    # `a` is read as half as long, so its second half reads the padding
    a_bp = tl.make_block_ptr(base=a_ptr, shape=(N // 2,), strides=(1,), offsets=(offset,), block_shape=(BLOCK,),
                             order=(0,))
    b_bp = tl.make_block_ptr(base=b_ptr, shape=(N,), strides=(1,), offsets=(offset,), block_shape=(BLOCK,),
                             order=(0,))
    a = tl.load(a_bp, boundary_check=(0,), padding_option=PADDING)
    tl.store(b_bp, a, boundary_check=(0,))


@pytest.mark.parametrize("dtype", ["bool", "int16", "int32", "float16", "float32"])
@pytest.mark.parametrize("padding", ["", "zero", "nan"])
@pytest.mark.parametrize("where", ["", "lower", "upper"])
def test_block_copy(arrays, dtype: str, padding: str, where: str) -> None:
    if padding == "nan" and np.dtype(dtype).kind != "f":
        pytest.skip("nan padding is for floats")
    n = 96
    a = values(RNG, n, dtype)
    b = poison(n, dtype)
    bd = arrays.put(b)
    block_copy_kernel[(tile.cdiv(n, 32),)](arrays.put(a), bd, n, BLOCK=32, PADDING=padding, WHERE=where)
    got = arrays.get(bd)
    if where:  # the block lies wholly outside: nothing is written
        np.testing.assert_array_equal(got.view(np.uint8), b.view(np.uint8))
        return
    np.testing.assert_array_equal(got[: n // 2], a[: n // 2])
    if padding == "zero":
        assert not got[n // 2:].any()
    elif padding == "nan":
        assert np.isnan(got[n // 2:]).all()


# ------------------------------------------------------------------- 2-D loads and stores


@tile.jit(do_not_specialize=["off_m", "off_n"])
def load_block_kernel(x_ptr, out_ptr, M, N, stride_m, stride_n, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr,
                      ORDER: tl.constexpr, CHECK: tl.constexpr, PADDING: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (stride_m, stride_n), (off_m, off_n), (BM, BN), ORDER)
    v = tl.load(p, boundary_check=CHECK, padding_option=PADDING)
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], v)


@tile.jit(do_not_specialize=["off_m", "off_n"])
def store_block_kernel(v_ptr, out_ptr, M, N, stride_m, stride_n, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr,
                       ORDER: tl.constexpr, CHECK: tl.constexpr):
    v = tl.load(v_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    p = tl.make_block_ptr(base=out_ptr, shape=(M, N), strides=(stride_m, stride_n), offsets=(off_m, off_n),
                          block_shape=(BM, BN), order=ORDER)
    tl.store(p, v, boundary_check=CHECK)


@st.composite
def block_cases(draw):
    """A matrix, a block and offsets: checked dimensions may be partly or wholly out of bounds,
    unchecked ones stay inside (out-of-bounds there is undefined, as in Triton)."""
    check = draw(st.sampled_from([(0, 1), (0,), (1,)]))
    blocks = [draw(st.sampled_from([1, 2, 4, 8, 16])) for _ in range(2)]
    sizes, offsets = [], []
    for d in range(2):
        if d in check:
            size = draw(st.integers(1, 40))
            offsets.append(draw(st.integers(-blocks[d] - 3, size + 3)))
        else:
            size = draw(st.integers(blocks[d], 40))
            offsets.append(draw(st.integers(0, size - blocks[d])))
        sizes.append(size)
    column_major = draw(st.booleans())
    return tuple(sizes), tuple(blocks), tuple(offsets), check, column_major


def _strided(x: np.ndarray, column_major: bool) -> tuple[np.ndarray, tuple[int, int], tuple[int, int]]:
    """Memory holding `x` row- or column-major, its strides in elements, and the order."""
    if column_major:
        return np.ascontiguousarray(x.T), (1, x.shape[0]), (0, 1)
    return np.ascontiguousarray(x), (x.shape[1], 1), (1, 0)


def _inside(sizes, blocks, offsets) -> np.ndarray:
    rows = np.arange(blocks[0])[:, None] + offsets[0]
    cols = np.arange(blocks[1])[None, :] + offsets[1]
    return (rows >= 0) & (rows < sizes[0]) & (cols >= 0) & (cols < sizes[1])


@SETTINGS
@given(case=block_cases(), dtype=st.sampled_from(["float32", "float16", "int16"]),
       padding=st.sampled_from(["", "zero", "nan"]), seed=st.integers(0, 2**32 - 1))
def test_load_block_at_random_offsets(case, dtype: str, padding: str, seed: int) -> None:
    (m, n), (bm, bn), (om, on), check, column_major = case
    if padding == "nan" and dtype == "int16":
        padding = "zero"
    rng = np.random.default_rng(seed)
    x = values(rng, (m, n), dtype)
    memory, strides, order = _strided(x, column_major)
    out = poison((bm, bn), dtype)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        load_block_kernel[(1,)](memory, out, m, n, *strides, om, on, BM=bm, BN=bn, ORDER=order, CHECK=check,
                                PADDING=padding)
    inside = _inside((m, n), (bm, bn), (om, on))
    rows, cols = np.nonzero(inside)
    np.testing.assert_array_equal(out[inside], x[rows + om, cols + on])
    if padding == "zero":
        assert not out[~inside].any()
    elif padding == "nan":
        assert np.isnan(out[~inside]).all()


@SETTINGS
@given(case=block_cases(), seed=st.integers(0, 2**32 - 1))
def test_store_block_at_random_offsets(case, seed: int) -> None:
    (m, n), (bm, bn), (om, on), check, column_major = case
    rng = np.random.default_rng(seed)
    v = values(rng, (bm, bn), "float32")
    target = np.full((m, n), np.nan, np.float32)
    memory, strides, order = _strided(target, column_major)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        store_block_kernel[(1,)](v, memory, m, n, *strides, om, on, BM=bm, BN=bn, ORDER=order, CHECK=check)
    got = memory.T if column_major else memory
    inside = _inside((m, n), (bm, bn), (om, on))
    rows, cols = np.nonzero(inside)
    want = np.full((m, n), np.nan, np.float32)
    want[rows + om, cols + on] = v[inside]
    np.testing.assert_array_equal(got, want)


# -------------------------------------------------------------- loops, ranks, dtype


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = b_bp.advance((BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc, boundary_check=(0, 1))


def _matmul_args(m: int, n: int, k: int):
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    return a, b, c, [a, b, c, m, n, k, k, 1, n, 1, n, 1]


def _check_matmul(a: np.ndarray, b: np.ndarray, got: np.ndarray) -> None:
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.sqrt(a.shape[1]))


@pytest.mark.parametrize("shapes", [(70, 50, 90), (64, 64, 64), (33, 17, 40)])
def test_matmul_with_advance(arrays, shapes) -> None:
    m, n, k = shapes
    a, b, c, args = _matmul_args(m, n, k)
    cd = arrays.put(c)
    matmul_kernel[(tile.cdiv(m, 32), tile.cdiv(n, 32))](arrays.put(a), arrays.put(b), cd, *args[3:], BM=32, BN=32,
                                                        BK=32)
    _check_matmul(a, b, arrays.get(cd))


def test_matmul_with_advance_on_the_emulator() -> None:
    m, n, k = 40, 24, 48
    a, b, c, args = _matmul_args(m, n, k)
    mach, dev, simt, runtime = launch(matmul_kernel, (2, 1), args, dict(BM=32, BN=32, BK=16), num_warps=4)
    _check_matmul(a, b, out_of(mach, dev, runtime, c))


@tile.jit
def block_copy_3d_kernel(src_ptr, dst_ptr, d0, d1, d2, s0, s1, s2, B0: tl.constexpr, B1: tl.constexpr,
                         B2: tl.constexpr):
    src = tl.make_block_ptr(src_ptr, (d0, d1, d2), (s0, s1, s2), (d0 - 1, 0, d2 - 2), (B0, B1, B2), (2, 1, 0))
    dst = tl.make_block_ptr(dst_ptr, (d0, d1, d2), (s0, s1, s2), (d0 - 1, 0, d2 - 2), (B0, B1, B2), (2, 1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 2), padding_option="zero"), boundary_check=(0, 2))


def test_rank_3(arrays) -> None:
    src = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    dst = np.zeros_like(src)
    dd = arrays.put(dst)
    block_copy_3d_kernel[(1,)](arrays.put(src), dd, 3, 4, 5, 20, 5, 1, B0=2, B1=4, B2=4)
    want = np.zeros_like(src)
    want[2:3, :, 3:5] = src[2:3, :, 3:5]
    np.testing.assert_array_equal(arrays.get(dd), want)


@tile.jit
def element_type_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(base=src_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,))
    tl.static_assert(p.dtype.element_ty == tl.block_type(tl.float16, (BLOCK,)))
    v = tl.load(p, boundary_check=(0,), padding_option="zero").to(p.dtype.element_ty)
    tl.store(dst_ptr + tl.arange(0, BLOCK), v)


def test_dtype_element_ty() -> None:
    src = np.arange(16, dtype=np.float16)
    dst = poison(16, "float16")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        element_type_kernel[(1,)](src, dst, 16, BLOCK=16)
    np.testing.assert_array_equal(dst, src)


@tile.jit
def carried_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Sums the blocks of x with a block pointer carried through `while`, `if` and `for`."""
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (BLOCK,), (0,))
    acc = tl.zeros((BLOCK,), tl.float32)
    i = 0
    while i < N:
        acc += tl.load(p, boundary_check=(0,), padding_option="zero")
        p = tl.advance(p, (BLOCK,))
        i += BLOCK
    if N > BLOCK:  # back to the start, then once more through a for loop
        p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (BLOCK,), (0,))
    else:
        p = tl.advance(p, (-BLOCK,))
    for _ in range(0, N, BLOCK):
        acc += tl.load(p, boundary_check=(0,), padding_option="zero")
        p = p.advance((BLOCK,))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("n", [100, 16])
def test_carried_through_control_flow(arrays, n: int) -> None:
    block = 16
    x = RNG.standard_normal(n).astype(np.float32)
    out = poison(block, "float32")
    od = arrays.put(out)
    carried_kernel[(1,)](arrays.put(x), od, n, BLOCK=block)
    padded = np.zeros(tile.cdiv(n, block) * block)
    padded[:n] = x
    want = 2 * padded.reshape(-1, block).sum(0)  # every block twice, whichever branch ran
    np.testing.assert_allclose(arrays.get(od), want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------- IR, vectorization


@tile.jit
def copy_block_kernel(a_ptr, b_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, N), (stride_m, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (M, N), (stride_m, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(b_bp, tl.load(a_bp, boundary_check=(0, 1)) + 1, boundary_check=(0, 1))


@tile.jit
def copy_pointers_kernel(a_ptr, b_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * stride_m + rn[None, :]
    tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=mask) + 1, mask=mask)


@tile.jit
def copy_column_major_kernel(a_ptr, b_ptr, M, N, stride_n, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, N), (1, stride_n), (pid_m * BM, pid_n * BN), (BM, BN), (0, 1))
    b_bp = tl.make_block_ptr(b_ptr, (M, N), (1, stride_n), (pid_m * BM, pid_n * BN), (BM, BN), (0, 1))
    tl.store(b_bp, tl.load(a_bp, boundary_check=(0, 1), padding_option="zero") + 1, boundary_check=(0, 1))


def test_dump_names_the_block_pointer_values() -> None:
    a = np.zeros((64, 64), np.float16)
    text = str(tile.dump(copy_block_kernel, a, a, 64, 64, 64, BM=32, BN=64, stage="tile"))
    for name in ("%a_bp.offsets.0", "%a_bp.shape.0", "%a_bp.strides.0", "%a_ptr.origin", "%a_ptr.ptrs",
                 "%a_ptr.mask", "%b_ptr.ptrs"):
        assert name in text, text
    assert "a_bp.strides.1" not in text  # the stride 1 is a compile-time constant: no multiply


def test_contiguous_block_loads_vectorize_like_pointer_loads() -> None:
    """Without TMA (sm_80; on sm_90a such blocks are TMA copies: tests/test_tma_desc.py)."""
    a = np.zeros((64, 64), np.float16)
    args = (a, a, 64, 64, 64)
    vectors = []
    for kernel in (copy_block_kernel, copy_pointers_kernel):
        gpu = str(tile.dump(kernel, *args, BM=32, BN=64, stage="gpu", target="sm_80"))
        vectors.append([line.split("{vector = ")[1].split("}")[0] for line in gpu.splitlines()
                        if "tt.load" in line or "tt.store" in line])
        ptx = str(tile.dump(kernel, *args, BM=32, BN=64, stage="ptx", target="sm_80"))
        assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert vectors[0] == vectors[1] == ["8", "8"]


def test_column_major_blocks_vectorize_along_dimension_0() -> None:
    a = np.zeros((64, 64), np.float16)
    gpu = str(tile.dump(copy_column_major_kernel, a, a, 64, 64, 64, BM=64, BN=32, stage="gpu", target="sm_90a"))
    loads = [line for line in gpu.splitlines() if "tt.load" in line]
    assert len(loads) == 1 and "{vector = 8}" in loads[0] and "order = [0, 1]" in loads[0], loads


def test_column_major_copy(arrays) -> None:
    x = values(RNG, (40, 50), "float32")
    memory, out = np.asfortranarray(x), np.asfortranarray(poison((40, 50), "float32"))
    od = arrays.put(out.T)  # the transposed views are C-contiguous: column-major storage of x and out
    copy_column_major_kernel[(3, 2)](arrays.put(memory.T), od, 40, 50, 40, BM=16, BN=32)
    np.testing.assert_array_equal(arrays.get(od).T, x + 1)


# -------------------------------------------------------------------------- errors


@tile.jit
def bad_check_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, boundary_check=(0, 2))  # E-check


@tile.jit
def bad_padding_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, boundary_check=(0,), padding_option="one")  # E-padding


@tile.jit
def nan_padding_int_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, boundary_check=(0,), padding_option="nan")  # E-nan


@tile.jit
def mask_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, mask=tl.full((8, 8), True, tl.int1))  # E-mask


@tile.jit
def other_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, other=0.0)  # E-other


@tile.jit
def store_mask_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.store(p, tl.zeros((8, 8), tl.float32), mask=tl.full((8, 8), True, tl.int1))  # E-store-mask


@tile.jit
def advance_count_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    p = tl.advance(p, (8,))  # E-advance


@tile.jit
def unused_advance_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.advance(p, (0, 8))  # E-unused
    tl.store(p, tl.zeros((8, 8), tl.float32))


@tile.jit
def store_shape_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.store(p, tl.zeros((8, 4), tl.float32))  # E-store-shape


@tile.jit
def store_dtype_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.store(p, tl.zeros((8, 8), tl.float16))  # E-store-dtype


@tile.jit
def rank_mismatch_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0,), (8, 8), (1, 0))  # E-rank


@tile.jit
def order_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 1))  # E-order


@tile.jit
def block_shape_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 6), (1, 0))  # E-block-shape


@tile.jit
def wide_offset_kernel(x_ptr, off):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (off.to(tl.int64), 0), (8, 8), (1, 0))  # E-wide


@tile.jit
def plain_pointer_check_kernel(x_ptr):
    tl.load(x_ptr + tl.arange(0, 8), boundary_check=(0,))  # E-plain


@tile.jit
def advance_plain_kernel(x_ptr):
    q = tl.advance(x_ptr, (1,))  # E-advance-plain


ERRORS = [
    (bad_check_kernel, X, "E-check", "tl.load(p", "boundary_check names dimension 2, but the block has 2 dimension(s)"),
    (bad_padding_kernel, X, "E-padding", "tl.load(p", "padding_option must be one of '', 'zero', 'nan', got 'one'"),
    (nan_padding_int_kernel, X.astype(np.int32), "E-nan", "tl.load(p",
     "padding option `nan` is not supported for integer block pointers"),
    (mask_kernel, X, "E-mask", "tl.load(p", "`mask` and `other` cannot be given with a block pointer"),
    (other_kernel, X, "E-other", "tl.load(p", "`mask` and `other` cannot be given with a block pointer"),
    (store_mask_kernel, X, "E-store-mask", "tl.store(p", "`mask` cannot be given with a block pointer"),
    (advance_count_kernel, X, "E-advance", "tl.advance",
     "the block pointer has 2 dimension(s), so it takes 2 offset(s); got 1"),
    (unused_advance_kernel, X, "E-unused", "tl.advance", "tl.advance has no side effects; assign its result"),
    (store_shape_kernel, X, "E-store-shape", "tl.store(p", "the value's shape [8, 4] must be the block shape [8, 8]"),
    (store_dtype_kernel, X, "E-store-dtype", "tl.store(p",
     "the value's dtype tl.float16 must be the block pointer's element type tl.float32"),
    (rank_mismatch_kernel, X, "E-rank", "tl.make_block_ptr", "need one entry per dimension; block_shape has 2, "
                                                             "shape 2, strides 2, offsets 1, order 2"),
    (order_kernel, X, "E-order", "tl.make_block_ptr", "order must be a permutation of (0, 1), got (1, 1)"),
    (block_shape_kernel, X, "E-block-shape", "tl.make_block_ptr", "dimension 1 must be a power of 2, got 6"),
    (plain_pointer_check_kernel, X, "E-plain", "tl.load",
     "boundary_check and padding_option are for block pointers (tl.make_block_ptr)"),
    (advance_plain_kernel, X, "E-advance-plain", "tl.advance", "tl.advance expects a block pointer"),
]


@pytest.mark.parametrize("kernel,x,marker,at,message", ERRORS, ids=[e[2] for e in ERRORS])
def test_errors(kernel, x, marker: str, at: str, message: str) -> None:
    expect_error(kernel, (x,), {}, __file__, marker, at, message)


def test_wide_offset_error() -> None:
    expect_error(wide_offset_kernel, (X, 3), {}, __file__, "E-wide", "tl.make_block_ptr",
                 "offsets must be 32-bit integers, got a scalar of tl.int64")
