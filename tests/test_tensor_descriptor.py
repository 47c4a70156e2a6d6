"""Tensor descriptors: tl.make_tensor_descriptor, desc.load / desc.store (and the functional
builtins), host TensorDescriptor arguments, tt.descriptor_load / tt.descriptor_store in tile IR
(verifier, interpreter), the expand-descriptors pass (IR text in and out), codegen on the
emulator, tile.set_allocator, and the errors of Triton's rules."""
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
from tile.ir import VerificationError, parse_op, print_op, verify
from tile.opt.expand_descriptors import ExpandDescriptors
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes
from tile.runtime.allocation import get_allocator
from tile.runtime.interpreter import run_kernel
from tile.tools.tensor_descriptor import TensorDescriptor

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
RNG = np.random.default_rng(17)
X = np.zeros((16, 16), np.float32)

# The emulator param runs these kernels' sm_90a PTX: descriptors become TMA copies, through the
# host's tensor maps or those the kernel writes with tensormap.replace.
pytestmark = pytest.mark.emulate_on("sm_90a")


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) + 2).astype(dtype)


def _inside(sizes, blocks, offsets) -> np.ndarray:
    grids = np.meshgrid(*[np.arange(b) + o for b, o in zip(blocks, offsets)], indexing="ij")
    inside = np.ones(blocks, bool)
    for g, s in zip(grids, sizes):
        inside &= (g >= 0) & (g < s)
    return inside


# --------------------------------------------------------- loads and stores at the edges


@tile.jit(do_not_specialize=["off_m", "off_n"])
def load_kernel(x_ptr, out_ptr, M, N, stride_m, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr,
                PADDING: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BM, BN],
                                     padding_option=PADDING)
    block = desc.load([off_m, off_n])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)


@tile.jit(do_not_specialize=["off_m", "off_n"])
def store_kernel(v_ptr, out_ptr, M, N, stride_m, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr):
    block = tl.load(v_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BM, BN])
    desc.store([off_m, off_n], block)


@st.composite
def edge_cases(draw, elem_bytes: int):
    blocks = (draw(st.sampled_from([1, 2, 8, 16])), draw(st.sampled_from([b for b in (4, 8, 16, 32)
                                                                          if b * elem_bytes >= 16])))
    sizes = (draw(st.integers(1, 40)), draw(st.integers(1, 40)))
    offsets = tuple(draw(st.integers(-b - 2, s + 2)) for b, s in zip(blocks, sizes))
    return sizes, blocks, offsets


def _raw_and_expanded(kernel, args: tuple, constexprs: dict, grid=(1, 1, 1)) -> list:
    """Run the kernel's tile IR as built (descriptor ops interpreted directly) and after the
    expand-descriptors pass, each on its own copy of the arguments; returns both copies."""
    spec, runtime = kernel.specialize(args, constexprs)
    outs = []
    for expand in (False, True):
        func = kernel.build_ir(spec)
        names = [op.name for op in func.walk()]
        assert "tt.descriptor_load" in names or "tt.descriptor_store" in names
        if expand:
            PassManager([ExpandDescriptors()]).run(func)
            assert not {"tt.descriptor_load", "tt.descriptor_store"} & {op.name for op in func.walk()}
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in runtime]
        run_kernel(func, grid, copies, kernel.__name__)
        outs.append(copies)
    return outs


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["float32", "float16", "int32"]), nan=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_load_at_the_edges(data, dtype: str, nan: bool, seed: int) -> None:
    (m, n), (bm, bn), (om, on) = data.draw(edge_cases(np.dtype(dtype).itemsize))
    padding = "nan" if nan and dtype != "int32" else "zero"
    rng = np.random.default_rng(seed)
    x = values(rng, (m, n), dtype)
    out = poison((bm, bn), dtype)
    inside = _inside((m, n), (bm, bn), (om, on))
    rows, cols = np.nonzero(inside)
    for copies in _raw_and_expanded(load_kernel, (x, out, m, n, n, om, on), dict(BM=bm, BN=bn, PADDING=padding)):
        got = copies[1]
        np.testing.assert_array_equal(got[inside], x[rows + om, cols + on])
        if padding == "nan":
            assert np.isnan(got[~inside]).all()
        else:
            assert not got[~inside].any()


@SETTINGS
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_store_at_the_edges(data, seed: int) -> None:
    (m, n), (bm, bn), (om, on) = data.draw(edge_cases(4))
    rng = np.random.default_rng(seed)
    v = values(rng, (bm, bn), "float32")
    target = np.full((m, n), np.nan, np.float32)
    inside = _inside((m, n), (bm, bn), (om, on))
    rows, cols = np.nonzero(inside)
    want = target.copy()
    want[rows + om, cols + on] = v[inside]
    for copies in _raw_and_expanded(store_kernel, (v, target, m, n, n, om, on), dict(BM=bm, BN=bn)):
        np.testing.assert_array_equal(copies[1], want)


@tile.jit
def copy_kernel(out_ptr, a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    in_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    assert in_desc.shape[0] == M and in_desc.strides[0] == N
    tl.static_assert(in_desc.strides[1] == 1 and in_desc.block_shape == [BM, BN] and in_desc.dtype == tl.float32)
    tl.static_assert(in_desc.block_type == tl.block_type(tl.float32, (BM, BN)))
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    block = tl.load_tensor_descriptor(in_desc, [off_m, off_n])
    tl.store_tensor_descriptor(out_desc, [off_m, off_n], tl.abs(block))


# Rows of 16-byte multiples: TMA's rule, which Triton asks of every descriptor (a 70-float row
# is checked by the kernel on sm_90a: test_tma_rule_is_checked_where_strides_are_runtime_values).
@pytest.mark.parametrize("shape,block", [((32, 128), (8, 32)), ((50, 72), (16, 32))])
def test_copy(arrays, shape, block) -> None:
    a = values(RNG, shape, "float32") - 2
    out = poison(shape, "float32")
    od = arrays.put(out)
    copy_kernel[(tile.cdiv(shape[0], block[0]), tile.cdiv(shape[1], block[1]))](od, arrays.put(a), *shape,
                                                                                 BM=block[0], BN=block[1])
    np.testing.assert_array_equal(arrays.get(od), np.abs(a))


def test_copy_on_the_emulator() -> None:
    m, n = 24, 40
    a = values(RNG, (m, n), "float32") - 2
    out = poison((m, n), "float32")
    mach, dev, simt, runtime = launch(copy_kernel, (2, 2), (out, a, m, n), dict(BM=16, BN=32), num_warps=4)
    np.testing.assert_array_equal(out_of(mach, dev, runtime, out), np.abs(a))


@tile.jit
def copy_3d_kernel(out_ptr, a_ptr, shape, strides, BLOCK: tl.constexpr):
    src = tl.make_tensor_descriptor(a_ptr, shape=shape, strides=strides, block_shape=BLOCK)
    dst = tl.make_tensor_descriptor(out_ptr, shape=shape, strides=strides, block_shape=BLOCK)
    offs = (tl.program_id(0) * BLOCK[0], tl.program_id(1) * BLOCK[1], tl.program_id(2) * BLOCK[2])
    dst.store(offs, src.load(offs))


def test_rank_3(arrays) -> None:
    a = values(RNG, (3, 10, 24), "float16")
    out = poison(a.shape, "float16")
    od = arrays.put(out)
    copy_3d_kernel[(2, 3, 2)](od, arrays.put(a), a.shape, (240, 24, 1), BLOCK=(2, 4, 16))
    np.testing.assert_array_equal(arrays.get(od), a)


# -------------------------------------------------------------- host descriptors


@tile.jit
def host_load_kernel(out_ptr, desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    assert desc.shape[0] == M
    assert desc.shape[1] == N
    assert desc.strides[0] == N
    tl.static_assert(desc.strides[1] == 1 and desc.block_shape == [BM, BN])
    block = desc.load([BM, 2 * BN])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_host_descriptor_load(arrays, dtype: str) -> None:
    bm, bn = 8, 32
    x = values(RNG, (bm * 3, bn * 4), dtype)
    out = poison((bm, bn), dtype)
    od = arrays.put(out)
    desc = TensorDescriptor(arrays.put(x), x.shape, (x.shape[1], 1), [bm, bn])
    host_load_kernel[(1,)](od, desc, *x.shape, BM=bm, BN=bn)
    np.testing.assert_array_equal(arrays.get(od), x[bm:2 * bm, 2 * bn:3 * bn])


def test_host_descriptor_on_the_emulator() -> None:
    bm, bn = 8, 32
    x = values(RNG, (bm * 3, bn * 4), "float32")
    out = poison((bm, bn), "float32")
    desc = TensorDescriptor.from_tensor(x, [bm, bn])
    mach, dev, simt, runtime = launch(host_load_kernel, (1,), (out, desc, *x.shape), dict(BM=bm, BN=bn), num_warps=4)
    np.testing.assert_array_equal(out_of(mach, dev, runtime, out), x[bm:2 * bm, 2 * bn:3 * bn])


@tile.jit
def host_padding_kernel(in_desc, out_ptr, YN, BM: tl.constexpr, BN: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    value = in_desc.load([off_m, off_n])
    tl.store(out_ptr + (off_m + tl.arange(0, BM))[:, None] * YN + (off_n + tl.arange(0, BN))[None, :], value)


def test_host_descriptor_nan_padding(arrays) -> None:
    x = np.arange(48 * 48, dtype=np.float32).reshape(48, 48)
    out = np.zeros((64, 64), np.float32)
    od = arrays.put(out)
    desc = TensorDescriptor.from_tensor(arrays.put(x), [32, 32], padding="nan")
    host_padding_kernel[(2, 2)](desc, od, 64, BM=32, BN=32)
    want = np.full((64, 64), np.nan, np.float32)
    want[:48, :48] = x
    np.testing.assert_array_equal(arrays.get(od), want)


@tile.jit
def host_matmul_kernel(a_desc, b_desc, c_desc):
    K = a_desc.shape[1]
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    off_k = 0
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([off_m, off_k]), b_desc.load([off_k, off_n]), acc=acc)
        off_k += BK
    c_desc.store([off_m, off_n], acc.to(a_desc.dtype))


@pytest.mark.parametrize("shapes,blocks", [((64, 32, 48), (32, 32, 16)), ((40, 72, 56), (32, 32, 32))])
def test_host_descriptor_matmul(arrays, shapes, blocks) -> None:
    m, n, k = shapes
    bm, bn, bk = blocks
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = poison((m, n), "float16")
    cd = arrays.put(c)
    descs = (TensorDescriptor.from_tensor(arrays.put(a), [bm, bk]),
             TensorDescriptor.from_tensor(arrays.put(b), [bk, bn]), TensorDescriptor.from_tensor(cd, [bm, bn]))
    host_matmul_kernel[(tile.cdiv(m, bm), tile.cdiv(n, bn))](*descs)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(arrays.get(cd).astype(np.float64), want, rtol=2e-3, atol=2e-3 * np.sqrt(k))


@tile.jit
def pair_copy_kernel(descs):
    src, dst = descs
    offs = (tl.program_id(0) * src.block_shape[0], tl.program_id(1) * src.block_shape[1])
    dst.store(offs, src.load(offs) * 2)


def test_tuple_of_host_descriptors(arrays) -> None:
    x = values(RNG, (20, 40), "float32")
    out = poison(x.shape, "float32")
    od = arrays.put(out)
    descs = (TensorDescriptor.from_tensor(arrays.put(x), [8, 16]), TensorDescriptor.from_tensor(od, [8, 16]))
    pair_copy_kernel[(3, 3)](descs)
    np.testing.assert_array_equal(arrays.get(od), x * 2)


@tile.jit
def downcast_kernel(desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    rows = off_m + tl.arange(0, BM)[:, None]
    cols = off_n + tl.arange(0, BN)[None, :]
    desc.store([off_m, off_n], (rows * N + cols).to(tl.float32))  # converted to the descriptor's float16


def test_store_converts_to_the_descriptor_dtype(arrays) -> None:
    out = poison((32, 128), "float16")
    od = arrays.put(out)
    downcast_kernel[(4, 4)](TensorDescriptor(od, out.shape, (128, 1), [8, 32]), 32, 128, BM=8, BN=32)
    np.testing.assert_array_equal(arrays.get(od), np.arange(32 * 128).reshape(32, 128).astype(np.float16))


def test_host_descriptor_specialization() -> None:
    x = np.zeros((64, 48), np.float32)
    out = np.zeros((8, 16), np.float32)
    spec, runtime = host_load_kernel.specialize((out, TensorDescriptor.from_tensor(x, [8, 16]), 64, 48),
                                                dict(BM=8, BN=16))
    params = {p.name: p for p in spec.params}
    assert params["desc.base"].runtime and params["desc.base"].divisibility == 16
    assert params["desc.shape.0"].divisibility == 16 and params["desc.strides.0"].divisibility == 16
    assert not params["desc.strides.1"].runtime and params["desc.strides.1"].value == 1
    assert runtime[:5] == [out, x, 64, 48, 48]
    other = host_load_kernel.specialize((out, TensorDescriptor.from_tensor(x, [16, 16]), 64, 48),
                                        dict(BM=8, BN=16))[0]
    assert other.key != spec.key  # the block shape is part of the key


@tile.jit
def mixed_kernel(out_ptr, FLAG: tl.constexpr, pair, desc, n):
    v = desc.load([0, 0]) + tl.load(pair[0]) + pair[1] + pair[2] + n
    tl.store(out_ptr + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :], v)


def test_launch_values_follow_the_parameters() -> None:
    """What a GPU entry receives: the leaves of tuple and descriptor arguments, in the order
    and at the positions of the kernel's IR parameters (checked here without a GPU)."""
    from tile.frontend.specialize import flattening_entry, launch_arg

    x, out, s = np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float32), np.zeros(1, np.float32)
    args = (out, True, (s, 1, 5), TensorDescriptor.from_tensor(x, [8, 16]), 7)
    spec, runtime = mixed_kernel.specialize(args)
    runtime_args = [0, 2, 3, 4]  # all but the constexpr
    positions, count = spec.launch_positions(set(runtime_args))
    launched = [launch_arg(args[i]) for i in runtime_args]
    assert tuple(k for k, _ in launched) == tuple(spec.key[i] for i in runtime_args)
    calls = []
    entry = flattening_entry(lambda grid, values, flat, stream: calls.append((values, flat)),
                             tuple(spec.key[i] for i in runtime_args))
    entry((1,), tuple(v for _, v in launched), tuple(args[i] for i in runtime_args), None)
    values, flat = calls[0]
    assert len(values) == len(flat) == count
    assert [flat[i] for i in positions] == runtime == [out, s, 5, x, 8, 16, 16, 7]
    assert [values[i] for i in positions] == [out.ctypes.data, s.ctypes.data, 5, x.ctypes.data, 8, 16, 16, 7]
    x[...] = data = RNG.standard_normal((8, 16)).astype(np.float32)
    s[0] = 0.5
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        mixed_kernel[(1,)](*args)
    want = data
    for term in (0.5, 1, 5, 7):  # the kernel's order of float32 additions
        want = want + np.float32(term)
    np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------- loops and functions


@tile.jit
def loop_carried_kernel(a_ptr, M, N, MBLOCK: tl.constexpr, NBLOCK: tl.constexpr):
    moffset = MBLOCK * tl.program_id(0)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[MBLOCK, NBLOCK])
    for i in range(0, N, NBLOCK):
        assert isinstance(a_desc, tl.tensor_descriptor)
        if i % (3 * NBLOCK) == 0:
            a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[MBLOCK, NBLOCK])
        a = a_desc.load([moffset, i])
        a_desc.store([moffset, i], a + 10)
    n = 0
    while n < N:
        if n % (3 * NBLOCK) == 0:
            a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[MBLOCK, NBLOCK])
        a = a_desc.load([moffset, n])
        a_desc.store([moffset, n], a + 5)
        n += NBLOCK


def test_loop_carried(arrays) -> None:
    a = values(RNG, (16, 128), "float32")
    ad = arrays.put(a)
    loop_carried_kernel[(2,)](ad, 16, 128, MBLOCK=8, NBLOCK=32)
    np.testing.assert_array_equal(arrays.get(ad), (a + np.float32(10)) + np.float32(5))


@tile.jit
def make_desc(ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])


@tile.jit
def abs_blocks(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    offs = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    out_desc.store(offs, in_desc.load(offs).abs())


@tile.jit
def functions_kernel(out_ptr, a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    abs_blocks(make_desc(a_ptr, M, N, BM, BN), make_desc(out_ptr, M, N, BM, BN), BM, BN)


def test_descriptors_through_functions(arrays) -> None:
    a = values(RNG, (32, 128), "float32") - 2
    out = poison(a.shape, "float32")
    od = arrays.put(out)
    functions_kernel[(4, 4)](od, arrays.put(a), 32, 128, BM=8, BN=32)
    np.testing.assert_array_equal(arrays.get(od), np.abs(a))


# --------------------------------------------------------------------- IR, the pass


PASS_INPUT = """tt.func {arg_names = ["x", "n", "off"], sym_name = "k"} {
^bb(%x: ptr<f32>, %n: i32, %off: i32):
  %c1 = arith.constant {value = 1} : i64
  %blk = tt.descriptor_load %x, %n, %c1, %off {block_shape = [8], padding = "nan"} : tensor<8xf32>
  tt.descriptor_store %x, %n, %c1, %off, %blk {block_shape = [8]}
  tt.return
}"""

PASS_OUTPUT = """tt.func {arg_names = ["x", "n", "off"], sym_name = "k"} {
^bb(%x: ptr<f32>, %n: i32, %off: i32):
  %c1 = arith.constant {value = 1} : i64
  %0 = tt.hint %x {max_constancy = [], max_contiguous = [], multiple_of = [16]} : ptr<f32>
  %1 = arith.cast %off : i64
  %2 = arith.mul %1, %c1 : i64
  %blk.origin = tt.addptr %0, %2 : ptr<f32>
  %3 = tt.splat %blk.origin : tensor<8xptr<f32>>
  %4 = tt.arange {end = 8, start = 0} : tensor<8xi32>
  %5 = arith.cast %4 : tensor<8xi64>
  %6 = tt.splat %c1 : tensor<8xi64>
  %7 = arith.mul %5, %6 : tensor<8xi64>
  %blk.ptrs = tt.addptr %3, %7 : tensor<8xptr<f32>>
  %8 = tt.splat %off : tensor<8xi32>
  %9 = arith.add %8, %4 : tensor<8xi32>
  %10 = tt.splat %n : tensor<8xi32>
  %11 = arith.cmp %9, %10 {predicate = "lt"} : tensor<8xi1>
  %12 = arith.constant {value = 0} : tensor<8xi32>
  %13 = arith.cmp %9, %12 {predicate = "ge"} : tensor<8xi1>
  %blk.mask = arith.and %13, %11 : tensor<8xi1>
  %14 = arith.constant {value = nan} : tensor<8xf32>
  %blk = tt.load %blk.ptrs, %blk.mask, %14 : tensor<8xf32>
  %15 = tt.hint %x {max_constancy = [], max_contiguous = [], multiple_of = [16]} : ptr<f32>
  %16 = arith.cast %off : i64
  %17 = arith.mul %16, %c1 : i64
  %origin = tt.addptr %15, %17 : ptr<f32>
  %18 = tt.splat %origin : tensor<8xptr<f32>>
  %19 = tt.arange {end = 8, start = 0} : tensor<8xi32>
  %20 = arith.cast %19 : tensor<8xi64>
  %21 = tt.splat %c1 : tensor<8xi64>
  %22 = arith.mul %20, %21 : tensor<8xi64>
  %ptrs = tt.addptr %18, %22 : tensor<8xptr<f32>>
  %23 = tt.splat %off : tensor<8xi32>
  %24 = arith.add %23, %19 : tensor<8xi32>
  %25 = tt.splat %n : tensor<8xi32>
  %26 = arith.cmp %24, %25 {predicate = "lt"} : tensor<8xi1>
  %27 = arith.constant {value = 0} : tensor<8xi32>
  %28 = arith.cmp %24, %27 {predicate = "ge"} : tensor<8xi1>
  %mask = arith.and %28, %26 : tensor<8xi1>
  tt.store %ptrs, %blk, %mask
  tt.return
}"""


def test_expand_descriptors_ir() -> None:
    func = parse_op(PASS_INPUT)
    verify(func)
    PassManager([ExpandDescriptors()]).run(func)
    assert print_op(func) == PASS_OUTPUT


def test_expand_descriptors_drops_the_lower_bound_of_known_offsets() -> None:
    known = "^bb(%x: ptr<f32>, %n: i32, %o: i32):\n  %off = arith.constant {value = 4} : i32\n"
    func = parse_op(PASS_INPUT.replace("^bb(%x: ptr<f32>, %n: i32, %off: i32):\n", known))
    PassManager([ExpandDescriptors()]).run(func)
    assert 'predicate = "ge"' not in print_op(func)


def test_the_tile_pipeline_folds_the_unit_stride() -> None:
    func = parse_op(PASS_INPUT)
    PassManager(tile_passes()).run(func)
    text = print_op(func)
    assert "descriptor" not in text and "arith.mul" not in text, text


def test_descriptor_copy_vectorizes() -> None:
    """Without TMA (sm_80; sm_90a copies with TMA: tests/test_tma_desc.py) the accesses are vector ones."""
    a = np.zeros((64, 128), np.float32)
    gpu = str(tile.dump(copy_kernel, a, a, 64, 128, BM=16, BN=64, stage="gpu", target="sm_80"))
    accesses = [line for line in gpu.splitlines() if "tt.load" in line or "tt.store" in line]
    assert len(accesses) == 2 and all("{vector = 4}" in line for line in accesses), accesses


BAD_OPS = [
    ("%b = tt.descriptor_load %x, %n, %c1 {block_shape = [8], padding = \"zero\"} : tensor<8xf32>",
     "expects 4 operands for a rank-1 block, got 3"),
    ("%b = tt.descriptor_load %x, %n, %c1, %off {block_shape = [8], padding = \"one\"} : tensor<8xf32>",
     "padding must be"),
    ("%b = tt.descriptor_load %x, %n, %c1, %off {block_shape = [8], padding = \"zero\"} : tensor<4xf32>",
     "result must be tensor<8xf32>"),
    ("%b = tt.descriptor_load %x, %n, %n, %off {block_shape = [8], padding = \"zero\"} : tensor<8xf32>",
     "stride operands must be i64"),
    ("%b = tt.descriptor_load %y, %n, %c1, %off {block_shape = [8], padding = \"nan\"} : tensor<8xi32>",
     "padding \"nan\" needs a floating-point element type"),
    ("%v = arith.constant {value = 0.0} : tensor<4xf32>\n"
     "  tt.descriptor_store %x, %n, %c1, %off, %v {block_shape = [8]}", "the stored value must be tensor<8xf32>"),
]


@pytest.mark.parametrize("line,message", BAD_OPS)
def test_verifier(line: str, message: str) -> None:
    text = f"""tt.func {{sym_name = "k"}} {{
^bb(%x: ptr<f32>, %y: ptr<i32>, %n: i32, %off: i32):
  %c1 = arith.constant {{value = 1}} : i64
  {line}
  tt.return
}}"""
    with pytest.raises(VerificationError, match=message.replace("[", r"\[")):
        verify(parse_op(text))


def test_set_allocator() -> None:
    def alloc(size: int, alignment: int, stream):
        return np.empty(size, np.int8)

    tile.set_allocator(alloc)
    assert get_allocator() is alloc
    with pytest.raises(TypeError, match="set_allocator expects a callable"):
        tile.set_allocator(3)


# -------------------------------------------------------------------------- errors


@tile.jit
def block_shape_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, 1], block_shape=[4, 12])  # E-pow2


@tile.jit
def offsets_kernel(x_ptr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, 1], block_shape=[4, 16])
    d.load([0, 0, 0])  # E-offsets


@tile.jit
def minor_bytes_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, 1], block_shape=[4, 2])  # E-bytes


@tile.jit
def last_stride_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[1, 16], block_shape=[4, 16])  # E-stride


@tile.jit
def runtime_stride_kernel(x_ptr, s):
    tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, s], block_shape=[4, 16])  # E-runtime-stride


@tile.jit
def nan_int_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [4, 16], padding_option="nan")  # E-nan


@tile.jit
def rank_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, [2, 2, 2, 2, 2, 16], [1, 1, 1, 1, 16, 1], [1, 1, 1, 1, 1, 16])  # E-rank


@tile.jit
def strides_count_kernel(x_ptr):
    tl.make_tensor_descriptor(x_ptr, [16, 16], [1], [4, 16])  # E-strides-count


@tile.jit
def store_shape_kernel(x_ptr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, 1], block_shape=[4, 16])
    d.store([0, 0], tl.zeros((4, 8), tl.float32))  # E-store


@tile.jit
def not_a_descriptor_kernel(x_ptr):
    tl.load_tensor_descriptor(x_ptr, [0])  # E-not-desc


ERRORS = [
    (block_shape_kernel, X, "E-pow2", "tl.make", "block_shape element 1 must be a power of 2, got 12"),
    (offsets_kernel, X, "E-offsets", "d.load", "expected 2 offsets, but got 3"),
    (minor_bytes_kernel, X, "E-bytes", "tl.make", "descriptor block shape must have at least 16 bytes in the last "
                                                  "dimension, but got 2 * 4 = 8 bytes"),
    (last_stride_kernel, X, "E-stride", "tl.make", "its stride must be the constant 1, got 16"),
    (nan_int_kernel, X.astype(np.int32), "E-nan", "tl.make", "padding option `nan` is not supported for integer "
                                                             "blocks"),
    (rank_kernel, X, "E-rank", "tl.make", "expected 1 <= ndim <= 5 but got 6 dimensions"),
    (strides_count_kernel, X, "E-strides-count", "tl.make", "expected 2 strides but got 1"),
    (store_shape_kernel, X, "E-store", "d.store", "the value must be a block of the descriptor's block shape [4, 16], "
                                                  "got shape [4, 8]"),
    (not_a_descriptor_kernel, X, "E-not-desc", "tl.load_tensor_descriptor", "expects a tensor descriptor"),
]


@pytest.mark.parametrize("kernel,x,marker,at,message", ERRORS, ids=[e[2] for e in ERRORS])
def test_errors(kernel, x, marker: str, at: str, message: str) -> None:
    expect_error(kernel, (x,), {}, __file__, marker, at, message)


def test_runtime_last_stride_error() -> None:
    expect_error(runtime_stride_kernel, (X, 3), {}, __file__, "E-runtime-stride", "tl.make",
                 "its stride must be the constant 1, got a runtime value")


HOST_ERRORS = [
    (lambda: TensorDescriptor(X, (16, 16), (1, 16), [4, 16]), "the last dimension must be contiguous"),
    (lambda: TensorDescriptor(X, (16, 3), (3, 1), [4, 4]), "strides must be 16-byte aligned: stride 0 is 3 elements"),
    (lambda: TensorDescriptor(X, (16, 16), (16, 1), [4, 6]), "block_shape element 1 must be a power of 2, got 6"),
    (lambda: TensorDescriptor(X.reshape(-1)[1:], (255,), (1,), [16]), "the base must be 16-byte aligned"),
    (lambda: TensorDescriptor(X, (16, 16), (16,), [4, 16]), "rank mismatch"),
    (lambda: TensorDescriptor(X.astype(np.int32), (16, 16), (16, 1), [4, 16], padding="nan"),
     "padding 'nan' is only supported for floating-point tensors"),
    (lambda: TensorDescriptor(X, (16, 16), (16, 1), [4, 16], padding="one"), "padding must be 'zero' or 'nan'"),
]


@pytest.mark.parametrize("make,message", HOST_ERRORS)
def test_host_descriptor_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()


@tile.jit
def constant_rows_kernel(out_ptr, a_ptr, BM: tl.constexpr, BN: tl.constexpr, ROW: tl.constexpr):
    src = tl.make_tensor_descriptor(a_ptr, shape=[BM, BN], strides=[ROW, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[BM, BN], strides=[ROW, 1], block_shape=[BM, BN])
    dst.store([0, 0], src.load([0, 0]))


def test_tma_rule_is_checked_where_strides_are_runtime_values() -> None:
    # each map's base is the null pointer unless base and row stride keep TMA's rule: a fault, not garbage
    a = np.zeros((50, 70), np.float32)
    ir = str(tile.dump(copy_kernel, a, a, 50, 70, BM=16, BN=32, stage="tile-opt", target="sm_90a"))
    maps = [line for line in ir.splitlines() if "tt.make_tensormap" in line]
    assert len(maps) == 2
    for line in maps:
        base = line.split("tt.make_tensormap ")[1].split(",")[0]
        to_ptr = next(x for x in ir.splitlines() if x.strip().startswith(f"{base} = tt.int_to_ptr"))
        chosen = to_ptr.split("tt.int_to_ptr ")[1].split(" ")[0]
        assert any(x.strip().startswith(f"{chosen} = arith.select") for x in ir.splitlines())
    # the rule tests the low 4 bits of base | stride bytes: no 64-bit remainder (a call in SASS)
    ptx = str(tile.dump(copy_kernel, a, a, 50, 70, BM=16, BN=32, stage="ptx", target="sm_90a"))
    assert "and.b64" in ptx and "rem.s64" not in ptx and "rem.u64" not in ptx


def test_a_constant_stride_off_tmas_rule_keeps_masked_accesses() -> None:
    a = np.zeros((16, 36), np.float32)
    off = str(tile.dump(constant_rows_kernel, a, a, BM=16, BN=32, ROW=36 + 2, stage="tile-opt", target="sm_90a"))
    on = str(tile.dump(constant_rows_kernel, a, a, BM=16, BN=32, ROW=36, stage="tile-opt", target="sm_90a"))
    assert "tt.make_tensormap" not in off and "tt.make_tensormap" in on


def test_tma_stores_read_back_wait_for_their_writes() -> None:
    # loop_carried_kernel loads what it stored through the same tensor: the store's wait covers the
    # writes; copy_kernel reads another tensor: its stores wait only until their shared memory is read
    a = np.zeros((16, 128), np.float32)
    ptx = str(tile.dump(loop_carried_kernel, a, 16, 128, MBLOCK=8, NBLOCK=32, stage="ptx", target="sm_90a"))
    assert "cp.async.bulk.wait_group 0;" in ptx and "cp.async.bulk.wait_group.read" not in ptx
    b = np.zeros((64, 64), np.float32)
    ptx = str(tile.dump(copy_kernel, b, b, 64, 64, BM=16, BN=32, stage="ptx", target="sm_90a"))
    assert "cp.async.bulk.wait_group.read 0;" in ptx and "cp.async.bulk.wait_group 0;" not in ptx
