"""Shape ops, sorting, gather and histogram on the GPU path: the layouts of tt.join / tt.split
(tile.ir.layouts), their rules in convert-to-gpu, legalize and remove-layout-conversions (IR text in
and out), scratch allocation, and Python kernels lowered to simt IR and run as PTX on
tile.emulator with 1, 4 and 8 warps against NumPy; their PTX assembles for sm_80, sm_90, sm_90a."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codegen_e2e import compile_simt, launch, out_of
from test_gpu_passes import run as run_passes
from test_gpu_passes import same
from test_layouts import blocked_layouts, shapes

import tile
import tile.language as tl
from codegen_util import check_ptx
from ptxas_util import assemble_ok, needs_ptxas
from tile.codegen.ptx import emit_ptx
from tile.ir.layouts import (BlockedLayout, LinearEncoding, LinearLayout, SliceLayout, conversion_kind, default_blocked,
                             gather_in_warp, join_layout, split_layout, store_layout_like, trans_layout)
from tile.opt.alloc_shared import AllocShared
from tile.opt.coalesce import Coalesce
from tile.opt.remove_layout_conversions import RemoveLayoutConversions
from tile.opt.to_gpu import ConvertToGpu

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
WARPS = [1, 4, 8]
RNG = np.random.default_rng(17)


# ------------------------------------------------------------------------------------- layouts


@SETTINGS
@given(st.data())
def test_join_layout_adds_a_register_bit_and_split_layout_removes_it(data):
    layout = data.draw(blocked_layouts())
    shape = data.draw(shapes(layout.rank, max_log=6, max_total_log=10))
    if data.draw(st.booleans()) and layout.rank > 1:  # a linear (non-blocked) operand layout too
        order = data.draw(st.permutations(list(range(layout.rank))))
        layout, shape = trans_layout(layout, shape, order), tuple(shape[o] for o in order)
        layout = LinearEncoding(layout.to_linear(shape))
    ll = layout.to_linear(shape)
    joined = join_layout(layout, shape)
    jl = joined.to_linear(shape + (2,))
    assert jl.register_bases[0] == (0,) * len(shape) + (1,)
    assert jl.register_bases[1:] == tuple(b + (0,) for b in ll.register_bases)
    assert jl.lane_bases == tuple(b + (0,) for b in ll.lane_bases)
    assert jl.warp_bases == tuple(b + (0,) for b in ll.warp_bases)
    parts = split_layout(joined, shape + (2,))
    assert parts is not None and parts.to_linear(shape) == ll
    if isinstance(layout, BlockedLayout):
        assert isinstance(joined, BlockedLayout) and parts == layout


def test_split_layout_needs_the_last_dimension_in_one_register_bit():
    in_lanes = BlockedLayout((1, 1), (16, 2), (4, 1), (1, 0))
    assert split_layout(in_lanes, (64, 2)) is None
    repeated = BlockedLayout((1, 1), (32, 1), (4, 1), (0, 1))  # the last dimension is a repeat register
    parts = split_layout(repeated, (128, 2))
    assert parts is not None and parts.to_linear((128,)) == BlockedLayout((1,), (32,), (4,), (0,)).to_linear((128,))
    mixed = LinearEncoding(LinearLayout((4, 2), ((1, 1), (2, 0)), (), ()))  # the bit moves both dimensions
    assert split_layout(mixed, (4, 2)) is None


def test_linear_encoding_resizes_like_a_blocked_layout():
    hypercube = LinearEncoding(LinearLayout((2, 2, 2), ((0, 0, 1),), ((0, 1, 0), (1, 0, 0)), ()))
    # a size-1 dimension: the lane along it replicates, the register along it goes
    assert hypercube.to_linear((2, 1, 2)) == LinearLayout((2, 1, 2), ((0, 0, 1),), ((0, 0, 0), (1, 0, 0)), ())
    assert hypercube.to_linear((2, 2, 1)) == LinearLayout((2, 2, 1), (), ((0, 1, 0), (1, 0, 0)), ())
    # a larger dimension: new register bits repeat the layout
    assert hypercube.to_linear((4, 2, 2)) == LinearLayout((4, 2, 2), ((0, 0, 1), (2, 0, 0)), ((0, 1, 0), (1, 0, 0)),
                                                          ())
    # a reduction with keep_dims: #slice of it, then its expand_dims back at size 1, then broadcast
    sliced = SliceLayout(1, hypercube).to_linear((2, 2))
    assert sliced == LinearLayout((2, 2), ((0, 1),), ((0, 0), (1, 0)), ())
    for blocked in (default_blocked((64, 8), 4), BlockedLayout((2, 1), (4, 8), (1, 4), (0, 1))):
        linear = LinearEncoding(blocked.to_linear((64, 8)))
        for shape in [(1, 8), (64, 1), (16, 2)]:  # shrunk, each thread holds the elements a blocked one does
            mine, theirs = linear.to_linear(shape).flat_coords(), blocked.to_linear(shape).flat_coords()
            assert all(set(mine[w, t]) == set(theirs[w, t]) for w in range(4) for t in range(32))


def test_store_layout_like():
    b4 = BlockedLayout((4,), (32,), (4,), (0,))
    two_runs = LinearEncoding(LinearLayout((512,), ((256,), (1,)), ((2,), (4,), (8,), (16,), (32,)), ((64,), (128,))))
    like = store_layout_like(two_runs, (512,), b4)
    assert like is not None and like.to_linear((512,)).register_bases == ((1,), (256,))
    assert store_layout_like(BlockedLayout((8,), (32,), (4,), (0,)), (1024,), b4) is None  # runs longer than b4's
    assert store_layout_like(BlockedLayout((1,), (32,), (4,), (0,)), (1024,), b4) == BlockedLayout((1,), (32,), (4,), (0,))
    assert store_layout_like(trans_layout(BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0)), (32, 32), (1, 0)), (32, 32),
                             BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))) is None  # lanes go down the columns


def test_gather_in_warp():
    one_warp = default_blocked((32,), 1)
    assert gather_in_warp(one_warp, (32,), one_warp, (32,), 0)
    rows = BlockedLayout((1, 1), (1, 32), (4, 1), (1, 0))     # rows in warps, the axis in lanes
    assert gather_in_warp(rows, (4, 32), rows, (4, 32), 1)
    assert not gather_in_warp(rows, (4, 32), rows, (4, 32), 0)  # the gathered axis spans warps
    vectors = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))     # registers along the axis
    assert not gather_in_warp(vectors, (16, 32), vectors, (16, 32), 1)
    assert not gather_in_warp(rows, (4, 32), BlockedLayout((1, 1), (4, 8), (1, 4), (1, 0)), (4, 32), 1)


# ------------------------------------------------------------------------------ layout rules


def test_to_gpu_gives_join_split_gather_and_histogram_their_layouts():
    out = run_passes([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
          %xs = tt.splat %x : tensor<128xptr<f32>>
          %p = tt.addptr %xs, %offs : tensor<128xptr<f32>>
          %v = tt.load %p : tensor<128xf32>
          %j = tt.join %v, %v : tensor<128x2xf32>
          %lo, %hi = tt.split %j : tensor<128xf32>, tensor<128xf32>
          %g = tt.gather %hi, %offs {axis = 0} : tensor<128xf32>
          %m = arith.cmp %offs, %offs {predicate = "lt"} : tensor<128xi1>
          %h = tt.histogram %offs, %m : tensor<16xi32>
          tt.return
        }""")
    same(out, """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 128, start = 0} : tensor<128xi32, #B1>
          %xs = tt.splat %x : tensor<128xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<128xptr<f32>, #B1>
          %v = tt.load %p : tensor<128xf32, #B1>
          %j = tt.join %v, %v : tensor<128x2xf32, #blocked<spt = [1, 2], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>>
          %lo, %hi = tt.split %j : tensor<128xf32, #B1>, tensor<128xf32, #B1>
          %g = tt.gather %hi, %offs {axis = 0} : tensor<128xf32, #B1>
          %m = arith.cmp %offs, %offs {predicate = "lt"} : tensor<128xi1, #B1>
          %h = tt.histogram %offs, %m : tensor<16xi32, #B1>
          tt.return
        }""")


def test_legalize_converts_a_split_operand_whose_last_dimension_is_not_a_register_bit():
    out = run_passes([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%x: ptr<f32>):
          %c = arith.constant {value = 1.0} : tensor<64x2xf32>
          %a, %b = tt.split %c : tensor<64xf32>, tensor<64xf32>
          %s = arith.add %a, %b : tensor<64xf32>
          tt.return
        }""")
    same(out, """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %c = arith.constant {value = 1.0} : tensor<64x2xf32, #blocked<spt = [1, 1], tpw = [16, 2], wpc = [4, 1], order = [1, 0]>>
          %0 = gpu.convert_layout %c : tensor<64x2xf32, #blocked<spt = [1, 2], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>>
          %a, %b = tt.split %0 : tensor<64xf32, #B1>, tensor<64xf32, #B1>
          %s = arith.add %a, %b : tensor<64xf32, #B1>
          tt.return
        }""")


def test_coalesced_layouts_propagate_through_join_and_split():
    out = run_passes([ConvertToGpu(4, "sm_90a"), Coalesce(), RemoveLayoutConversions()], """
        tt.func {arg_divisibility = [16], sym_name = "k"} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 512, start = 0} : tensor<512xi32>
          %xs = tt.splat %x : tensor<512xptr<f32>>
          %p = tt.addptr %xs, %offs : tensor<512xptr<f32>>
          %v = tt.load %p : tensor<512xf32>
          %w = arith.mul %v, %v : tensor<512xf32>
          %j = tt.join %v, %w : tensor<512x2xf32>
          %lo, %hi = tt.split %j : tensor<512xf32>, tensor<512xf32>
          %d = arith.sub %hi, %lo : tensor<512xf32>
          tt.store %p, %d
          tt.return
        }""")
    same(out, """
        tt.func {arg_divisibility = [16], num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 512, start = 0} : tensor<512xi32, #B4>
          %xs = tt.splat %x : tensor<512xptr<f32>, #B4>
          %p = tt.addptr %xs, %offs : tensor<512xptr<f32>, #B4>
          %v = tt.load %p : tensor<512xf32, #B4>
          %w = arith.mul %v, %v : tensor<512xf32, #B4>
          %j = tt.join %v, %w : tensor<512x2xf32, #blocked<spt = [4, 2], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>>
          %lo, %hi = tt.split %j : tensor<512xf32, #B4>, tensor<512xf32, #B4>
          %d = arith.sub %hi, %lo : tensor<512xf32, #B4>
          tt.store %p, %d
          tt.return
        }""")


def test_a_cat_is_stored_in_its_own_layout_without_a_trip_through_shared_memory():
    # the loads hold runs of 2 (#B2); the cat's result holds two runs of 2 per thread, 256 apart, and
    # is stored that way: only a free renaming of its registers is left
    out = run_passes([ConvertToGpu(4, "sm_90a"), Coalesce(), RemoveLayoutConversions()], """
        tt.func {arg_divisibility = [16, 16], sym_name = "k"} {
        ^bb(%x: ptr<f32>, %y: ptr<f32>):
          %offs = tt.arange {end = 256, start = 0} : tensor<256xi32>
          %xs = tt.splat %x : tensor<256xptr<f32>>
          %p = tt.addptr %xs, %offs : tensor<256xptr<f32>>
          %v = tt.load %p : tensor<256xf32>
          %w = arith.neg %v : tensor<256xf32>
          %j = tt.join %v, %w : tensor<256x2xf32>
          %t = tt.trans %j {order = [1, 0]} : tensor<2x256xf32>
          %c = tt.reshape %t : tensor<512xf32>
          %o2 = tt.arange {end = 512, start = 0} : tensor<512xi32>
          %ys = tt.splat %y : tensor<512xptr<f32>>
          %q = tt.addptr %ys, %o2 : tensor<512xptr<f32>>
          tt.store %q, %c
          tt.return
        }""")
    linear = "#linear<shape = [512], reg = [[256], [1]], lane = [[2], [4], [8], [16], [32]], warp = [[64], [128]]>"
    assert f"%c = tt.reshape %t : tensor<512xf32, {linear}>" in out
    assert "%q = tt.addptr %ys, %o2 : tensor<512xptr<f32>, #B2>" in out
    assert "%0 = gpu.convert_layout %c : tensor<512xf32, #B2>\n  tt.store %q, %0" in out
    assert conversion_kind(LinearEncoding(LinearLayout((512,), ((256,), (1,)), ((2,), (4,), (8,), (16,), (32,)),
                                                       ((64,), (128,)))), BlockedLayout((2,), (32,), (4,), (0,)),
                           (512,)) == "registers"


def test_scratch_of_gather_and_histogram():
    out = run_passes([AllocShared()], """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 128, start = 0} : tensor<128xi32, #B1>
          %v = arith.constant {value = 1.0} : tensor<128xf32, #B1>
          %g = tt.gather %v, %offs {axis = 0} : tensor<128xf32, #B1>
          %h = tt.histogram %offs : tensor<64xi32, #B1>
          tt.return
        }""")
    assert "tt.gather %v, %offs {axis = 0, scratch_offset = 0}" in out  # 128 f32 across 4 warps: 512 bytes
    assert "tt.histogram %offs {scratch_offset = 0}" in out  # 256 bytes, after the gather's: the same bytes
    assert "shared_bytes = 512" in out
    in_warp = run_passes([AllocShared()], """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %v = arith.constant {value = 1.0} : tensor<4x32xf32, #L>
          %i = arith.constant {value = 3} : tensor<4x32xi32, #L>
          %g = tt.gather %v, %i {axis = 1} : tensor<4x32xf32, #L>
          tt.return
        }""".replace("#L", str(BlockedLayout((1, 1), (1, 32), (4, 1), (1, 0)))))
    assert "scratch_offset" not in in_warp and "shared_bytes = 0" in in_warp


# ------------------------------------------------------------------------- emulator


@tile.jit
def shapes_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    n = M * N
    lo, hi = tl.split(tl.join(x, x * 3))
    tl.store(out_ptr + rm * N + rn, hi - lo)
    tl.store(out_ptr + n + rm * (2 * N) + tl.arange(0, 2 * N)[None, :], tl.interleave(x, -x))
    tl.store(out_ptr + 3 * n + tl.arange(0, 2 * M)[:, None] * N + rn, tl.cat(x, x + 1))
    tl.store(out_ptr + 5 * n + rm * N + rn, tl.flip(x, 0) + tl.flip(x))
    c = tl.reshape(x, (M, N // 2, 2)).permute(2, 0, 1)                 # [2, M, N // 2]
    tl.store(out_ptr + 6 * n + tl.arange(0, 2)[:, None, None] * (n // 2) +
             tl.arange(0, M)[None, :, None] * (N // 2) + tl.arange(0, N // 2)[None, None, :], c)
    e = x[:, None, :] + tl.arange(0, 2)[None, :, None] * 1000           # [M, 2, N]
    tl.store(out_ptr + 7 * n + (tl.arange(0, M)[:, None, None] * 2 + tl.arange(0, 2)[None, :, None]) * N +
             tl.arange(0, N)[None, None, :], e)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("m,n", [(4, 32), (16, 64), (1, 8)])
def test_shape_ops(num_warps, m, n):
    x = RNG.integers(-1000, 1000, (m, n)).astype(np.int32)
    out = np.full(9 * m * n, -12345, np.int32)
    mach, dev, simt, rt = launch(shapes_kernel, (1,), (x, out), {"M": m, "N": n}, num_warps=num_warps)
    got = out_of(mach, dev, rt, out)
    size = m * n
    np.testing.assert_array_equal(got[:size], (2 * x).ravel())
    np.testing.assert_array_equal(got[size:3 * size], np.stack([x, -x], -1).ravel())
    np.testing.assert_array_equal(got[3 * size:5 * size], np.concatenate([x, x + 1]).ravel())
    np.testing.assert_array_equal(got[5 * size:6 * size], (x[::-1] + x[:, ::-1]).ravel())
    np.testing.assert_array_equal(got[6 * size:7 * size], x.reshape(m, n // 2, 2).transpose(2, 0, 1).ravel())
    np.testing.assert_array_equal(got[7 * size:], np.stack([x, x + 1000], 1).ravel())


@tile.jit
def sort_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x))
    tl.store(out_ptr + M * N + offs, tl.sort(x, descending=True))
    tl.store(out_ptr + 2 * M * N + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("m,n,k", [(1, 128, 8), (8, 64, 64), (32, 16, 4), (2, 256, 1)])
def test_sort_and_topk(num_warps, m, n, k):
    x = RNG.standard_normal((m, n)).astype(np.float32)
    x[:, ::5] = x[:, :1]  # duplicates
    out = np.full(2 * m * n + m * k, np.nan, np.float32)
    mach, dev, simt, rt = launch(sort_kernel, (1,), (x, out), {"M": m, "N": n, "K": k}, num_warps=num_warps)
    got = out_of(mach, dev, rt, out)
    np.testing.assert_array_equal(got[:m * n].reshape(m, n), np.sort(x, 1))
    np.testing.assert_array_equal(got[m * n:2 * m * n].reshape(m, n), np.sort(x, 1)[:, ::-1])
    np.testing.assert_array_equal(got[2 * m * n:].reshape(m, k), np.sort(x, 1)[:, ::-1][:, :k])


@needs_ptxas
def test_a_sort_of_1024_stays_in_registers_and_assembles():
    """The hypercube [2] * 10 keeps every element in its register: compare-and-swap steps are
    register selects, shuffles, and for the two warp bits a scratch round trip; no conversion."""
    x = RNG.permutation(1024).astype(np.float32)[None, :]
    out = np.full(2 * 1024 + 8, np.nan, np.float32)
    mach, dev, simt, rt = launch(sort_kernel, (1,), (x, out), {"M": 1, "N": 1024, "K": 8}, num_warps=4)
    np.testing.assert_array_equal(out_of(mach, dev, rt, out)[:1024], np.arange(1024))
    ptx = emit_ptx(simt, target="sm_90a")
    info = check_ptx(simt)["sm_90a"]
    assert info.spill_stores == 0 and info.registers <= 96
    assert ptx.count("bar.sync") < 40  # only the warp-bit steps (and the top-k's) cross warps


@tile.jit
def merge_kernel(x_ptr, out_ptr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=DESCENDING))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge(num_warps, descending):
    n = 256
    x = RNG.standard_normal(n).astype(np.float32)
    bitonic = np.concatenate([np.sort(x[:n // 2]), np.sort(x[n // 2:])[::-1]])
    out = np.full(n, np.nan, np.float32)
    mach, dev, simt, rt = launch(merge_kernel, (1,), (bitonic, out), {"N": n, "DESCENDING": descending},
                                 num_warps=num_warps)
    want = np.sort(x)
    np.testing.assert_array_equal(out_of(mach, dev, rt, out), want[::-1] if descending else want)


@tile.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                  AXIS: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if AXIS == 1:
        offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    else:
        offs = tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), AXIS))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("m,n,k,axis,dtype", [(1, 32, 32, 1, "float32"), (4, 32, 32, 1, "int8"),
                                              (8, 32, 16, 1, "float16"), (16, 8, 4, 0, "float32"),
                                              (32, 32, 64, 0, "int64"), (1, 128, 128, 1, "bool")])
def test_gather(num_warps, m, n, k, axis, dtype):
    src = RNG.integers(-100, 100, (m, n)).astype(dtype)
    ishape = (m, k) if axis == 1 else (k, n)
    index = RNG.integers(0, (m, n)[axis], ishape).astype(np.int32)
    out = np.full(ishape, 7, dtype)
    mach, dev, simt, rt = launch(gather_kernel, (1,), (src, index, out), {"M": m, "N": n, "K": k, "AXIS": axis},
                                 num_warps=num_warps)
    np.testing.assert_array_equal(out_of(mach, dev, rt, out), np.take_along_axis(src, index, axis))


def test_gather_within_a_warp_is_one_shuffle_per_element():
    src = RNG.standard_normal((4, 32)).astype(np.float32)
    index = RNG.integers(0, 32, (4, 32)).astype(np.int32)
    out = np.full((4, 32), np.nan, np.float32)
    mach, dev, simt, rt = launch(gather_kernel, (1,), (src, index, out), {"M": 4, "N": 32, "K": 32, "AXIS": 1},
                                 num_warps=4)
    np.testing.assert_array_equal(out_of(mach, dev, rt, out), np.take_along_axis(src, index, 1))
    ptx = emit_ptx(simt, target="sm_90a")
    assert ptx.count("shfl.sync.idx") == 1 and "st.shared" not in ptx and "bar.sync" not in ptx


@tile.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))
    tl.store(out_ptr + BINS + tl.arange(0, BINS), tl.histogram(x, BINS) * 2)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("size,bins,dtype", [(1024, 64, "int32"), (32, 512, "int16"), (256, 2, "int64"),
                                             (128, 128, "uint8")])
def test_histogram(num_warps, size, bins, dtype):
    lo = 0 if dtype == "uint8" else -5
    x = RNG.integers(lo, bins + 5, size).astype(dtype)
    n = size - 7
    out = np.full(2 * bins, -1, np.int32)
    mach, dev, simt, rt = launch(histogram_kernel, (1,), (x, out, n), {"N": size, "BINS": bins},
                                 num_warps=num_warps)
    got = out_of(mach, dev, rt, out)
    count = lambda v: np.bincount(v[(v >= 0) & (v < bins)].astype(np.int64), minlength=bins)  # noqa: E731
    np.testing.assert_array_equal(got[:bins], count(x[:n]))
    np.testing.assert_array_equal(got[bins:], 2 * count(x))


@tile.jit
def _argmax_pair(v1, i1, v2, i2):
    pick = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(pick, v1, v2), tl.where(pick, i1, i2)


@tile.jit
def _linear_recurrence(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@tile.jit
def _xor_combine(a, b):
    return a ^ b


@tile.jit
def tuple_kernel(x_ptr, a_ptr, b_ptr, bits_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    value, where = tl.reduce((x, tl.broadcast_to(tl.arange(0, N)[None, :], M, N)), 1, _argmax_pair)
    tl.store(out_ptr + tl.arange(0, M), value)
    tl.store(out_ptr + M + tl.arange(0, M), where.to(tl.float32))
    tl.store(out_ptr + 2 * M + tl.arange(0, M), tl.argmin(x, 1).to(tl.float32))
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1, _linear_recurrence, reverse=REVERSE)
    tl.store(out_ptr + 3 * M + offs, h)
    bits = tl.load(bits_ptr + offs)
    tl.store(out_ptr + 3 * M + M * N + tl.arange(0, N), (tl.reduce_or(bits, 0) - tl.reduce(bits, 0, _xor_combine))
             .to(tl.float32))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("m,n", [(4, 64), (16, 8), (1, 256)])
def test_tuple_reductions_and_scans(num_warps, reverse, m, n):
    x = RNG.integers(-3, 4, (m, n)).astype(np.float32)
    a = RNG.uniform(0.5, 1.0, (m, n)).astype(np.float32)
    b = RNG.standard_normal((m, n)).astype(np.float32)
    bits = RNG.integers(0, 256, (m, n)).astype(np.int32)
    out = np.full(3 * m + m * n + n, np.nan, np.float32)
    mach, dev, simt, rt = launch(tuple_kernel, (1,), (x, a, b, bits, out), {"M": m, "N": n, "REVERSE": reverse},
                                 num_warps=num_warps)
    got = out_of(mach, dev, rt, out)
    np.testing.assert_array_equal(got[:m], x.max(1))
    np.testing.assert_array_equal(got[m:2 * m], np.argmax(x, 1))
    np.testing.assert_array_equal(got[2 * m:3 * m], np.argmin(x, 1))
    h, want = np.zeros(m), np.empty((m, n))
    for t in (reversed(range(n)) if reverse else range(n)):
        h = a[:, t].astype(np.float64) * h + b[:, t]
        want[:, t] = h
    np.testing.assert_allclose(got[3 * m:3 * m + m * n].reshape(m, n), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[3 * m + m * n:], np.bitwise_or.reduce(bits, 0) - np.bitwise_xor.reduce(bits, 0))


@needs_ptxas
@pytest.mark.parametrize("kernel,args,meta", [
    (shapes_kernel, (np.empty((8, 16), np.int32), np.empty(9 * 128, np.int32)), {"M": 8, "N": 16}),
    (gather_kernel, (np.empty((8, 32), np.float32), np.empty((8, 16), np.int32), np.empty((8, 16), np.float32)),
     {"M": 8, "N": 32, "K": 16, "AXIS": 1}),
    (histogram_kernel, (np.empty(256, np.int64), np.empty(128, np.int32), 100), {"N": 256, "BINS": 64}),
    (merge_kernel, (np.empty(64, np.float16), np.empty(64, np.float16)), {"N": 64, "DESCENDING": True}),
    (sort_kernel, (np.empty((4, 32), np.float16), np.empty(4 * 32 * 2 + 16, np.float16)), {"M": 4, "N": 32, "K": 4}),
])
def test_ptx_assembles(kernel, args, meta):
    for num_warps in WARPS:
        simt, _ = compile_simt(kernel, args, meta, num_warps=num_warps)
        check_ptx(simt)


# ------------------------------------------------------------------------------------ the GPU


def _on_device(kernel, args, meta, num_warps):
    """Launch on the GPU with `num_warps`; returns the arguments copied back (arrays only)."""
    device = [tile.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[(1,)](*device, num_warps=num_warps, **meta)
    return [d.numpy() if isinstance(a, np.ndarray) else a for a, d in zip(args, device)]


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", WARPS)
def test_on_the_gpu(num_warps, monkeypatch):
    """The kernels above on a real GPU: shuffles, shared-memory scratch and red.shared."""
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    out = _on_device(sort_kernel, [x, np.full(2 * 512 + 8 * 16, np.nan, np.float32)], {"M": 8, "N": 64, "K": 16},
                     num_warps)[1]
    np.testing.assert_array_equal(out[:512].reshape(8, 64), np.sort(x, 1))
    np.testing.assert_array_equal(out[1024:].reshape(8, 16), np.sort(x, 1)[:, ::-1][:, :16])
    for m, n, k, axis in [(4, 32, 32, 1), (16, 8, 4, 0), (8, 32, 16, 1)]:  # in a warp, and through scratch
        src = RNG.standard_normal((m, n)).astype(np.float32)
        ishape = (m, k) if axis == 1 else (k, n)
        index = RNG.integers(0, (m, n)[axis], ishape).astype(np.int32)
        got = _on_device(gather_kernel, [src, index, np.full(ishape, np.nan, np.float32)],
                         {"M": m, "N": n, "K": k, "AXIS": axis}, num_warps)[2]
        np.testing.assert_array_equal(got, np.take_along_axis(src, index, axis))
    values = RNG.integers(-3, 70, 1024).astype(np.int32)
    got = _on_device(histogram_kernel, [values, np.full(128, -1, np.int32), 1000], {"N": 1024, "BINS": 64},
                     num_warps)[1]
    inside = lambda v: np.bincount(v[(v >= 0) & (v < 64)], minlength=64)  # noqa: E731
    np.testing.assert_array_equal(got[:64], inside(values[:1000]))
    np.testing.assert_array_equal(got[64:], 2 * inside(values))
    s = RNG.integers(-1000, 1000, (16, 64)).astype(np.int32)
    got = _on_device(shapes_kernel, [s, np.full(9 * 1024, -12345, np.int32)], {"M": 16, "N": 64}, num_warps)[1]
    np.testing.assert_array_equal(got[1024:3 * 1024], np.stack([s, -s], -1).ravel())
    np.testing.assert_array_equal(got[3 * 1024:5 * 1024], np.concatenate([s, s + 1]).ravel())


@tile.jit
def _dot_epilogue_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b).to(tl.float16))


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_halves_cross_shared_memory_in_16_byte_words(target):
    # the f16 epilogue reads its coalesced rows back as ld.shared.v4.b32 (8 halves), not v4.b16
    a, b, c = np.ones((64, 32), np.float16), np.ones((32, 128), np.float16), np.ones((64, 128), np.float16)
    ptx = str(tile.dump(_dot_epilogue_kernel, a, b, c, M=64, N=128, K=32, num_warps=4, stage="ptx", target=target))
    assert "ld.shared.v4.b32" in ptx and "ld.shared.v4.b16" not in ptx
    assemble_ok(ptx, target)
