"""gpu passes one at a time: IR text in, IR text out (layouts abbreviated through the aliases below)."""
from __future__ import annotations

import textwrap

import pytest

from tile.ir import parse_op, print_op, verify
from tile.ir.gpu_ops import verify_layouts
from tile.ir.layouts import BlockedLayout, SharedLayout, SliceLayout
from tile.opt.alloc_shared import AllocShared, needs_scratch, scratch_bytes
from tile.opt.coalesce import Coalesce
from tile.opt.convert_through_shared import ConvertThroughShared, access_cost
from tile.opt.insert_barriers import InsertBarriers
from tile.opt.remove_layout_conversions import RemoveLayoutConversions
from tile.opt.share_transposed_buffers import ShareTransposedBuffers
from tile.opt.to_gpu import ConvertToGpu
from tile.opt.vectorize import Vectorize

ALIASES = {
    "#B1": str(BlockedLayout((1,), (32,), (4,), (0,))),
    "#B2": str(BlockedLayout((2,), (32,), (4,), (0,))),
    "#B4": str(BlockedLayout((4,), (32,), (4,), (0,))),
    "#B8": str(BlockedLayout((8,), (32,), (4,), (0,))),
    "#D2": str(BlockedLayout((1, 1), (1, 32), (2, 2), (1, 0))),       # default of 4x64 (and 64x64)
    "#C2": str(BlockedLayout((1, 4), (2, 16), (4, 1), (1, 0))),       # coalesced 64x64 f32, row-major
    "#T2": str(BlockedLayout((4, 1), (16, 2), (1, 4), (0, 1))),       # its transpose
    "#R2": str(BlockedLayout((1, 1), (32, 1), (4, 1), (1, 0))),       # default of 64x1
    "#S1": str(SliceLayout(1, BlockedLayout((1, 1), (32, 1), (4, 1), (1, 0)))),
    "#SW": str(SharedLayout(4, 1, 8, (0, 1))),
    "#SX": str(SharedLayout(2, 4, 16, (0, 1))),
    "#SH": str(SharedLayout(1, 1, 1, (0,))),
    "#SA": str(SharedLayout(8, 1, 8, (0, 1))),
    "#SB": str(SharedLayout(8, 1, 8, (1, 0))),
    "#SC": str(SharedLayout(4, 1, 8, (1, 0))),
}


def expand(text: str) -> str:
    text = textwrap.dedent(text).strip()
    for alias, full in sorted(ALIASES.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(alias, full)
    return text


def shorten(text: str) -> str:
    for alias, full in sorted(ALIASES.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(full, alias)
    return text


def run(passes, text: str, gpu: bool = True) -> str:
    func = parse_op(expand(text))
    verify(func)
    for p in passes:
        p.run(func)
        verify(func)
        if gpu:
            verify_layouts(func)
    return shorten(print_op(func))


def same(actual: str, expected: str) -> None:
    assert actual == textwrap.dedent(expected).strip(), actual


HEAD = 'tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {'


# ------------------------------------------------------------------------- convert-to-gpu


def test_to_gpu_assigns_default_layouts_and_slices():
    out = run([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 128, start = 0} : tensor<128xi32>
          %xs = tt.splat %x : tensor<128xptr<f32>>
          %p = tt.addptr %xs, %offs : tensor<128xptr<f32>>
          %v = tt.load %p : tensor<128xf32>
          %m = tt.reduce %v {axis = 0} : f32 {
          ^bb(%a: f32, %b: f32):
            %c = arith.max %a, %b : f32
            tt.reduce.return %c
          }
          tt.store %x, %m
          tt.return
        }""")
    same(out, f"""
        {HEAD}
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {{end = 128, start = 0}} : tensor<128xi32, #B1>
          %xs = tt.splat %x : tensor<128xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<128xptr<f32>, #B1>
          %v = tt.load %p : tensor<128xf32, #B1>
          %m = tt.reduce %v {{axis = 0}} : f32 {{
          ^bb(%a: f32, %b: f32):
            %c = arith.max %a, %b : f32
            tt.reduce.return %c
          }}
          tt.store %x, %m
          tt.return
        }}""")


def test_to_gpu_expand_dims_broadcast_and_reduce_slices():
    out = run([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%s: i32):
          %r = tt.arange {end = 64, start = 0} : tensor<64xi32>
          %r2 = tt.expand_dims %r {axis = 1} : tensor<64x1xi32>
          %rb = tt.broadcast %r2 : tensor<64x64xi32>
          %sum = tt.reduce %rb {axis = 1} : tensor<64xi32> {
          ^bb(%a: i32, %b: i32):
            %c = arith.add %a, %b : i32
            tt.reduce.return %c
          }
          %e = tt.expand_dims %sum {axis = 1} : tensor<64x1xi32>
          %t = tt.trans %rb {order = [1, 0]} : tensor<64x64xi32>
          tt.return
        }""")
    same(out, """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%s: i32):
          %r = tt.arange {end = 64, start = 0} : tensor<64xi32, #B1>
          %0 = gpu.convert_layout %r : tensor<64xi32, #S1>
          %r2 = tt.expand_dims %0 {axis = 1} : tensor<64x1xi32, #R2>
          %rb = tt.broadcast %r2 : tensor<64x64xi32, #R2>
          %sum = tt.reduce %rb {axis = 1} : tensor<64xi32, #S1> {
          ^bb(%a: i32, %b: i32):
            %c = arith.add %a, %b : i32
            tt.reduce.return %c
          }
          %e = tt.expand_dims %sum {axis = 1} : tensor<64x1xi32, #R2>
          %t = tt.trans %rb {order = [1, 0]} : tensor<64x64xi32, #blocked<spt = [1, 1], tpw = [1, 32], wpc = [1, 4], order = [0, 1]>>
          tt.return
        }""")


def test_to_gpu_control_flow_takes_the_initial_layouts():
    out = run([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%n: i32, %c: i1):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %z = arith.constant {value = 0.0} : tensor<128xf32>
          %acc = scf.for %c0, %n, %c1, %z : tensor<128xf32> {
          ^bb(%i: i32, %a: tensor<128xf32>):
            %r = scf.if %c : tensor<128xf32> {
              scf.yield %a
            } {
              %d = arith.add %a, %a : tensor<128xf32>
              scf.yield %d
            }
            scf.yield %r
          }
          tt.return
        }""")
    same(out, """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%n: i32, %c: i1):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %z = arith.constant {value = 0.0} : tensor<128xf32, #B1>
          %acc = scf.for %c0, %n, %c1, %z : tensor<128xf32, #B1> {
          ^bb(%i: i32, %a: tensor<128xf32, #B1>):
            %r = scf.if %c : tensor<128xf32, #B1> {
              scf.yield %a
            } {
              %d = arith.add %a, %a : tensor<128xf32, #B1>
              scf.yield %d
            }
            scf.yield %r
          }
          tt.return
        }""")


def test_to_gpu_reshape_keeps_elements_in_registers():
    out = run([ConvertToGpu(4, "sm_90a")], """
        tt.func {sym_name = "k"} {
        ^bb(%x: f32):
          %s = tt.splat %x : tensor<4x64xf32>
          %r = tt.reshape %s : tensor<256xf32>
          tt.return
        }""")
    same(out, """
        tt.func {num_stages = 3, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: f32):
          %s = tt.splat %x : tensor<4x64xf32, #D2>
          %r = tt.reshape %s : tensor<256xf32, #B1>
          tt.return
        }""")


# ------------------------------------------------------------------------- coalesce

VADD_LOAD = """
    tt.func {arg_divisibility = [16, 16], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
    ^bb(%x: ptr<f32>, %n: i32):
      %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
      %xs = tt.splat %x : tensor<1024xptr<f32>, #B1>
      %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B1>
      %sn = tt.splat %n : tensor<1024xi32, #B1>
      %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1, #B1>
      %v = tt.load %p, %mask : tensor<1024xf32, #B1>
      %w = arith.add %v, %v : tensor<1024xf32, #B1>
      tt.store %p, %w, %mask
      tt.return
    }"""


def test_coalesce_vector_add():
    out = run([Coalesce()], VADD_LOAD)
    same(out, """
        tt.func {arg_divisibility = [16, 16], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>, %n: i32):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B1>
          %sn = tt.splat %n : tensor<1024xi32, #B1>
          %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1, #B1>
          %0 = gpu.convert_layout %p : tensor<1024xptr<f32>, #B4>
          %1 = gpu.convert_layout %mask : tensor<1024xi1, #B4>
          %v = tt.load %0, %1 : tensor<1024xf32, #B4>
          %2 = gpu.convert_layout %v : tensor<1024xf32, #B1>
          %w = arith.add %2, %2 : tensor<1024xf32, #B1>
          %3 = gpu.convert_layout %p : tensor<1024xptr<f32>, #B4>
          %4 = gpu.convert_layout %w : tensor<1024xf32, #B4>
          %5 = gpu.convert_layout %mask : tensor<1024xi1, #B4>
          tt.store %3, %4, %5
          tt.return
        }""")


@pytest.mark.parametrize("dtype, divisibility, spt", [("f32", 16, 4), ("f16", 16, 8), ("f32", 1, 1), ("f16", 4, 2),
                                                      ("i8", 16, 8)])
def test_coalesce_size_per_thread(dtype, divisibility, spt):
    out = run([Coalesce()], f"""
        tt.func {{arg_divisibility = [{divisibility}], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
        ^bb(%x: ptr<{dtype}>):
          %offs = tt.arange {{end = 1024, start = 0}} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<{dtype}>, #B1>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<{dtype}>, #B1>
          %v = tt.load %p : tensor<1024x{dtype}, #B1>
          tt.return
        }}""")
    assert f"tt.load %{'0' if spt > 1 else 'p'} : tensor<1024x{dtype}, {shorten(str(BlockedLayout((spt,), (32,), (4,), (0,))))}>" in out


def test_coalesce_column_major_access_orders_dim0_first():
    out = run([Coalesce()], """
        tt.func {arg_divisibility = [16], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %r = tt.arange {end = 64, start = 0} : tensor<64xi32, #S1>
          %r2 = tt.expand_dims %r {axis = 1} : tensor<64x1xi32, #R2>
          %rb = tt.broadcast %r2 : tensor<64x64xi32, #R2>
          %c64 = arith.constant {value = 64} : tensor<64x64xi32, #R2>
          %cols = arith.mul %rb, %c64 : tensor<64x64xi32, #R2>
          %t = tt.trans %cols {order = [1, 0]} : tensor<64x64xi32, #blocked<spt = [1, 1], tpw = [1, 32], wpc = [1, 4], order = [0, 1]>>
          %tt = gpu.convert_layout %t : tensor<64x64xi32, #R2>
          %offs = arith.add %tt, %rb : tensor<64x64xi32, #R2>
          %xs = tt.splat %x : tensor<64x64xptr<f32>, #R2>
          %p = tt.addptr %xs, %offs : tensor<64x64xptr<f32>, #R2>
          %v = tt.load %p : tensor<64x64xf32, #R2>
          tt.return
        }""")
    assert "tt.load %0 : tensor<64x64xf32, #T2>" in out


# ------------------------------------------------------------------------- vectorize


@pytest.mark.parametrize("layout, ndiv, ptr_div, masked, unmasked", [
    ("#B4", 16, 16, 4, 4), ("#B4", 1, 16, 1, 4), ("#B4", 16, 4, 1, 1), ("#B4", 16, 8, 2, 2), ("#B2", 16, 16, 2, 2),
    ("#B1", 16, 16, 1, 1), ("#B8", 16, 16, 4, 4),
])
def test_vectorize_widths(layout, ndiv, ptr_div, masked, unmasked):
    out = run([Vectorize()], f"""
        tt.func {{arg_divisibility = [{ptr_div}, {ndiv}], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
        ^bb(%x: ptr<f32>, %n: i32):
          %offs = tt.arange {{end = 1024, start = 0}} : tensor<1024xi32, {layout}>
          %xs = tt.splat %x : tensor<1024xptr<f32>, {layout}>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, {layout}>
          %sn = tt.splat %n : tensor<1024xi32, {layout}>
          %mask = arith.cmp %offs, %sn {{predicate = "lt"}} : tensor<1024xi1, {layout}>
          %v = tt.load %p, %mask : tensor<1024xf32, {layout}>
          tt.store %p, %v
          %old = tt.atomic_rmw %p, %v {{kind = "add", scope = "gpu", sem = "relaxed"}} : tensor<1024xf32, {layout}>
          %s = tt.load %x : f32
          tt.return
        }}""")
    assert f"tt.load %p, %mask {{vector = {masked}}}" in out
    assert f"tt.store %p, %v {{vector = {unmasked}}}" in out
    assert 'tt.atomic_rmw %p, %v {kind = "add", scope = "gpu", sem = "relaxed", vector = 1}' in out
    assert "tt.load %x {vector = 1} : f32" in out


def test_vectorize_f16_takes_16_bytes():
    out = run([Vectorize()], """
        tt.func {arg_divisibility = [16], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f16>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B8>
          %xs = tt.splat %x : tensor<1024xptr<f16>, #B8>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f16>, #B8>
          %v = tt.load %p : tensor<1024xf16, #B8>
          tt.return
        }""")
    assert "tt.load %p {vector = 8}" in out


# ------------------------------------------------------------------------- remove-layout-conversions


def test_remove_conversions_vector_add():
    out = run([Coalesce(), RemoveLayoutConversions()], VADD_LOAD)
    same(out, """
        tt.func {arg_divisibility = [16, 16], num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>, %n: i32):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B4>
          %xs = tt.splat %x : tensor<1024xptr<f32>, #B4>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B4>
          %sn = tt.splat %n : tensor<1024xi32, #B4>
          %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1, #B4>
          %v = tt.load %p, %mask : tensor<1024xf32, #B4>
          %w = arith.add %v, %v : tensor<1024xf32, #B4>
          tt.store %p, %w, %mask
          tt.return
        }""")


def test_remove_conversions_folds_chains_and_identities():
    out = run([RemoveLayoutConversions()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B1>
          %v = tt.load %p : tensor<1024xf32, #B1>
          %a = gpu.convert_layout %v : tensor<1024xf32, #B4>
          %b = gpu.convert_layout %a : tensor<1024xf32, #B2>
          %c = gpu.convert_layout %b : tensor<1024xf32, #B1>
          tt.store %p, %c
          tt.return
        }""")
    same(out, """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B1>
          %v = tt.load %p : tensor<1024xf32, #B1>
          tt.store %p, %v
          tt.return
        }""")


def test_remove_conversions_keeps_a_needed_one_between_two_loads():
    # %w's layout comes from the f32 load; the f16 load has another layout: one conversion stays
    out = run([RemoveLayoutConversions()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>, %y: ptr<f16>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f32>, #B1>
          %p = tt.addptr %xs, %offs : tensor<1024xptr<f32>, #B1>
          %p4 = gpu.convert_layout %p : tensor<1024xptr<f32>, #B4>
          %v4 = tt.load %p4 : tensor<1024xf32, #B4>
          %v = gpu.convert_layout %v4 : tensor<1024xf32, #B1>
          %ys = tt.splat %y : tensor<1024xptr<f16>, #B1>
          %q = tt.addptr %ys, %offs : tensor<1024xptr<f16>, #B1>
          %q8 = gpu.convert_layout %q : tensor<1024xptr<f16>, #B8>
          %h8 = tt.load %q8 : tensor<1024xf16, #B8>
          %h = gpu.convert_layout %h8 : tensor<1024xf16, #B1>
          %hf = arith.cast %h : tensor<1024xf32, #B1>
          %w = arith.add %v, %hf : tensor<1024xf32, #B1>
          tt.store %p, %w
          tt.return
        }""")
    assert out.count("gpu.convert_layout") == 2  # the f16 load's values, and the stored values
    assert "%0 = gpu.convert_layout %h8 : tensor<1024xf16, #B4>" in out  # before the cast: 2 bytes each
    assert "%hf = arith.cast %0 : tensor<1024xf32, #B4>" in out
    assert "%w = arith.add %v4, %hf : tensor<1024xf32, #B4>" in out
    assert "%1 = gpu.convert_layout %w : tensor<1024xf32, #B1>" in out


def test_remove_conversions_through_loop_carried_values():
    out = run([RemoveLayoutConversions()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %z = arith.constant {value = 0.0} : tensor<512xf32, #B1>
          %offs = tt.arange {end = 512, start = 0} : tensor<512xi32, #B1>
          %xs = tt.splat %x : tensor<512xptr<f32>, #B1>
          %p0 = tt.addptr %xs, %offs : tensor<512xptr<f32>, #B1>
          %acc, %pe = scf.for %c0, %n, %c1, %z, %p0 : tensor<512xf32, #B1>, tensor<512xptr<f32>, #B1> {
          ^bb(%i: i32, %a: tensor<512xf32, #B1>, %p: tensor<512xptr<f32>, #B1>):
            %p4 = gpu.convert_layout %p : tensor<512xptr<f32>, #B4>
            %v4 = tt.load %p4 : tensor<512xf32, #B4>
            %v = gpu.convert_layout %v4 : tensor<512xf32, #B1>
            %a2 = arith.add %a, %v : tensor<512xf32, #B1>
            %step = tt.splat %c1 : tensor<512xi32, #B1>
            %p2 = tt.addptr %p, %step : tensor<512xptr<f32>, #B1>
            scf.yield %a2, %p2
          }
          %q = gpu.convert_layout %p0 : tensor<512xptr<f32>, #B4>
          %r = gpu.convert_layout %acc : tensor<512xf32, #B4>
          tt.store %q, %r
          tt.return
        }""")
    assert "gpu.convert_layout" not in out
    assert "%acc, %pe = scf.for %c0, %n, %c1, %z, %p0 : tensor<512xf32, #B4>, tensor<512xptr<f32>, #B4> {" in out
    assert "%a2 = arith.add %a, %v4 : tensor<512xf32, #B4>" in out


def test_remove_conversions_rematerializes_expand_dims_chains():
    out = run([RemoveLayoutConversions()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %r = tt.arange {end = 64, start = 0} : tensor<64xi32, #B1>
          %rs = gpu.convert_layout %r : tensor<64xi32, #S1>
          %r2 = tt.expand_dims %rs {axis = 1} : tensor<64x1xi32, #R2>
          %rb = tt.broadcast %r2 : tensor<64x64xi32, #R2>
          %xs = tt.splat %x : tensor<64x64xptr<f32>, #R2>
          %p = tt.addptr %xs, %rb : tensor<64x64xptr<f32>, #R2>
          %pc = gpu.convert_layout %p : tensor<64x64xptr<f32>, #C2>
          %v = tt.load %pc : tensor<64x64xf32, #C2>
          tt.store %pc, %v
          tt.return
        }""")
    same(out, """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: ptr<f32>):
          %r = tt.arange {end = 64, start = 0} : tensor<64xi32, #slice<dim = 1, parent = #C2>>
          %r2 = tt.expand_dims %r {axis = 1} : tensor<64x1xi32, #C2>
          %rb = tt.broadcast %r2 : tensor<64x64xi32, #C2>
          %xs = tt.splat %x : tensor<64x64xptr<f32>, #C2>
          %p = tt.addptr %xs, %rb : tensor<64x64xptr<f32>, #C2>
          %v = tt.load %p : tensor<64x64xf32, #C2>
          tt.store %p, %v
          tt.return
        }""")


def test_remove_conversions_propagates_through_reduce_as_a_slice():
    out = run([RemoveLayoutConversions()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%p: tensor<64x64xptr<f32>, #C2>):
          %v = tt.load %p : tensor<64x64xf32, #C2>
          %d = gpu.convert_layout %v : tensor<64x64xf32, #R2>
          %m = tt.reduce %d {axis = 1} : tensor<64xf32, #S1> {
          ^bb(%a: f32, %b: f32):
            %c = arith.max %a, %b : f32
            tt.reduce.return %c
          }
          %m2 = tt.expand_dims %m {axis = 1} : tensor<64x1xf32, #R2>
          %mb = tt.broadcast %m2 : tensor<64x64xf32, #R2>
          %z = arith.sub %d, %mb : tensor<64x64xf32, #R2>
          %zc = gpu.convert_layout %z : tensor<64x64xf32, #C2>
          tt.store %p, %zc
          tt.return
        }""")
    assert "gpu.convert_layout" not in out
    assert "tensor<64xf32, #slice<dim = 1, parent = #C2>>" in out


# ------------------------------------------------------------------------- convert-through-shared


def test_convert_through_shared_transpose_gets_a_swizzle():
    out = run([ConvertThroughShared()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<64x64xf32, #T2>):
          %y = gpu.convert_layout %x : tensor<64x64xf32, #C2>
          %z = gpu.convert_layout %x : tensor<64x64xf32, #T2>
          tt.return
        }""")
    same(out, """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<64x64xf32, #T2>):
          %0 = gpu.local_alloc {bytes = 16384, offset = -1} : tensor<64x64xf32, #SX>
          gpu.local_store %0, %x
          %y = gpu.local_load %0 : tensor<64x64xf32, #C2>
          %z = gpu.convert_layout %x : tensor<64x64xf32, #T2>
          tt.return
        }""")
    # stores of 2-element runs (64 wavefronts) and conflict-free loads (32); the older recipe
    # (vec 4, max_phase 8) took 32 + 256: the row-major reads of 4-column runs hit 4 banks
    t2, c2 = BlockedLayout((4, 1), (16, 2), (1, 4), (0, 1)), BlockedLayout((1, 4), (2, 16), (4, 1), (1, 0))
    chosen, old = SharedLayout(2, 4, 16, (0, 1)), SharedLayout(4, 1, 8, (0, 1))
    costs = lambda sh: (access_cost(sh, t2, (64, 64), 4, True), access_cost(sh, c2, (64, 64), 4, False))  # noqa: E731
    assert costs(chosen) == (64, 32) and costs(old) == (32, 256)


def test_convert_through_shared_leaves_register_conversions():
    regs = "#linear<shape = [1024], reg = [[512], [1], [2]], lane = [[4], [8], [16], [32], [64]], warp = [[128], [256]]>"
    out = run([ConvertThroughShared()], f"""
        tt.func {{num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
        ^bb(%x: tensor<1024xf32, #B4>):
          %y = gpu.convert_layout %x : tensor<1024xf32, {regs}>
          %z = gpu.convert_layout %x : tensor<1024xf32, #B1>
          tt.return
        }}""")
    assert f"%y = gpu.convert_layout %x : tensor<1024xf32, {regs}>" in out
    assert "%0 = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<1024xf32, #SH>" in out


# ------------------------------------------------------------------------- alloc-shared


def test_alloc_shared_reuses_dead_buffers_and_places_scratch():
    out = run([AllocShared()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<64x64xf32, #T2>):
          %a = gpu.local_alloc {bytes = 16384, offset = -1} : tensor<64x64xf32, #SW>
          gpu.local_store %a, %x
          %y = gpu.local_load %a : tensor<64x64xf32, #C2>
          %b = gpu.local_alloc {bytes = 16384, offset = -1} : tensor<64x64xf32, #SW>
          gpu.local_store %b, %x
          %s = tt.reduce %y {axis = 0} : tensor<64xf32, #slice<dim = 0, parent = #C2>> {
          ^bb(%p: f32, %q: f32):
            %r = arith.add %p, %q : f32
            tt.reduce.return %r
          }
          %z = gpu.local_load %b : tensor<64x64xf32, #C2>
          %t = tt.reduce %y {axis = 1} : tensor<64xf32, #slice<dim = 1, parent = #C2>> {
          ^bb(%p2: f32, %q2: f32):
            %r2 = arith.add %p2, %q2 : f32
            tt.reduce.return %r2
          }
          tt.return
        }""")
    assert "shared_bytes = 17408" in out
    assert "%a = gpu.local_alloc {bytes = 16384, offset = 0}" in out
    assert "%b = gpu.local_alloc {bytes = 16384, offset = 0}" in out
    assert "%s = tt.reduce %y {axis = 0, scratch_offset = 16384}" in out
    assert "%t = tt.reduce %y {axis = 1} " in out  # warps split rows only: no exchange across warps


def test_alloc_shared_loop_keeps_outer_buffers_alive():
    out = run([AllocShared()], """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<1024xf32, #B4>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<1024xf32, #SH>
          gpu.local_store %a, %x
          scf.for %c0, %n, %c1 {
          ^bb(%i: i32):
            %b = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<1024xf32, #SH>
            gpu.local_store %b, %x
            %y = gpu.local_load %b : tensor<1024xf32, #B1>
            %z = gpu.local_load %a : tensor<1024xf32, #B1>
            scf.yield
          }
          %c = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<1024xf32, #SH>
          gpu.local_store %c, %x
          tt.return
        }""")
    assert "%a = gpu.local_alloc {bytes = 4096, offset = 0}" in out
    assert "%b = gpu.local_alloc {bytes = 4096, offset = 4096}" in out  # %a is read in every iteration
    assert "%c = gpu.local_alloc {bytes = 4096, offset = 0}" in out
    assert "shared_bytes = 8192" in out


def test_scratch_bytes():
    func = parse_op(expand("""
        tt.func {num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%y: tensor<64x64xf32, #C2>, %i: tensor<64x64xi64, #C2>):
          %s, %j = tt.reduce %y, %i {axis = 0} : tensor<64xf32, #slice<dim = 0, parent = #C2>>, tensor<64xi64, #slice<dim = 0, parent = #C2>> {
          ^bb(%p: f32, %pi: i64, %q: f32, %qi: i64):
            tt.reduce.return %p, %pi
          }
          tt.return
        }"""))
    op = func.regions[0].block.ops[0]
    assert needs_scratch(op)
    assert scratch_bytes(op) == 4 * 64 * (4 + 8)


# ------------------------------------------------------------------------- insert-barriers

BUFS = """
        tt.func {num_warps = 4, shared_bytes = 8192, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<1024xf32, #B4>, %n: i32, %c: i1):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %a = gpu.local_alloc {bytes = 4096, offset = 0} : tensor<1024xf32, #SH>
          %b = gpu.local_alloc {bytes = 4096, offset = 0} : tensor<1024xf32, #SH>
          %d = gpu.local_alloc {bytes = 4096, offset = 4096} : tensor<1024xf32, #SH>
          BODY
          tt.return
        }"""


def barriers(body: str) -> str:
    text = BUFS.replace("BODY", textwrap.indent(textwrap.dedent(body).strip(), " " * 10).lstrip())
    out = run([InsertBarriers()], text)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "%d = gpu.local_alloc" in line) + 1
    return "\n".join(line.strip() for line in lines[start:-2])


def test_barrier_read_after_write_and_write_after_read():
    same(barriers("""
        gpu.local_store %a, %x
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        gpu.local_store %b, %y
        %z = gpu.local_load %b : tensor<1024xf32, #B1>
        """), """
        gpu.local_store %a, %x
        gpu.barrier
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        gpu.barrier
        gpu.local_store %b, %y
        gpu.barrier
        %z = gpu.local_load %b : tensor<1024xf32, #B1>""")


def test_barrier_not_needed_for_disjoint_bytes_or_after_an_existing_barrier():
    same(barriers("""
        gpu.local_store %a, %x
        gpu.local_store %d, %x
        gpu.barrier
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        %z = gpu.local_load %d : tensor<1024xf32, #B1>
        %w = gpu.local_load %a : tensor<1024xf32, #B1>
        """), """
        gpu.local_store %a, %x
        gpu.local_store %d, %x
        gpu.barrier
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        %z = gpu.local_load %d : tensor<1024xf32, #B1>
        %w = gpu.local_load %a : tensor<1024xf32, #B1>""")


def test_barrier_across_the_loop_back_edge():
    same(barriers("""
        scf.for %c0, %n, %c1 {
        ^bb(%i: i32):
          gpu.local_store %d, %x
          %y = gpu.local_load %d : tensor<1024xf32, #B1>
          scf.yield
        }
        """), """
        scf.for %c0, %n, %c1 {
        ^bb(%i: i32):
        gpu.barrier
        gpu.local_store %d, %x
        gpu.barrier
        %y = gpu.local_load %d : tensor<1024xf32, #B1>
        scf.yield
        }""")


def test_reduce_scratch_synchronizes_like_a_barrier():
    out = run([InsertBarriers()], """
        tt.func {num_warps = 4, shared_bytes = 4112, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%x: tensor<1024xf32, #B4>):
          %a = gpu.local_alloc {bytes = 4096, offset = 0} : tensor<1024xf32, #SH>
          gpu.local_store %a, %x
          %s = tt.reduce %x {axis = 0, scratch_offset = 4096} : f32 {
          ^bb(%p: f32, %q: f32):
            %r = arith.add %p, %q : f32
            tt.reduce.return %r
          }
          %y = gpu.local_load %a : tensor<1024xf32, #B1>
          tt.return
        }""")
    assert "gpu.barrier" not in out


def test_barrier_after_if_branches_merge():
    same(barriers("""
        scf.if %c {
          gpu.local_store %a, %x
          scf.yield
        } {
          scf.yield
        }
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        %z = gpu.local_load %d : tensor<1024xf32, #B1>
        """), """
        scf.if %c {
        gpu.local_store %a, %x
        scf.yield
        } {
        scf.yield
        }
        gpu.barrier
        %y = gpu.local_load %a : tensor<1024xf32, #B1>
        %z = gpu.local_load %d : tensor<1024xf32, #B1>""")


# ------------------------------------------------------------------------- share-transposed-buffers

TRANSPOSED_STAGING = """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_80", threads_per_warp = 32} {
        ^bb(%x: tensor<64x32xf16, #C2>):
          %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #SA>
          gpu.local_store %a, %x
          %t = tt.trans %x {order = [1, 0]} : tensor<32x64xf16, #T2>
          %b = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x64xf16, #SB>
          gpu.local_store %b, %t
          %y = gpu.local_load %a : tensor<64x32xf16, #C2>
          %z = gpu.local_load %b : tensor<32x64xf16, #T2>
          tt.return
        }"""


def test_a_tile_and_its_transpose_share_one_buffer():
    same(run([ShareTransposedBuffers()], TRANSPOSED_STAGING), """
        tt.func {num_warps = 4, sym_name = "k", target = "sm_80", threads_per_warp = 32} {
        ^bb(%x: tensor<64x32xf16, #C2>):
          %a = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #SA>
          gpu.local_store %a, %x
          %b = gpu.local_trans %a : tensor<32x64xf16, #SB>
          %y = gpu.local_load %a : tensor<64x32xf16, #C2>
          %z = gpu.local_load %b : tensor<32x64xf16, #T2>
          tt.return
        }""")


@pytest.mark.parametrize("change", [
    ("tensor<32x64xf16, #SB>\n", "tensor<32x64xf16, #SC>\n"),  # another swizzle: not the same bytes
    ("gpu.local_store %a, %x\n", ""),                            # the tile has no buffer of its own ...
    ("tt.return", "gpu.local_store %a, %x\n  tt.return"),          # ... or one written twice
    ("          gpu.local_store %b, %t\n", "          gpu.local_store %b, %t\n          %w = gpu.local_load %b : "
     "tensor<32x64xf16, #T2>\n          gpu.local_store %b, %t\n"),  # the transposed buffer written twice
])
def test_buffers_that_are_not_the_same_bytes_stay_apart(change):
    text = TRANSPOSED_STAGING.replace(*change)
    assert text != TRANSPOSED_STAGING
    out = run([ShareTransposedBuffers()], text)
    assert "gpu.local_trans" not in out and out.count("gpu.local_store %b, %t") >= 1


def test_local_trans_is_verified():
    text = run([ShareTransposedBuffers()], TRANSPOSED_STAGING)
    bad = expand(text.replace("%b = gpu.local_trans %a : tensor<32x64xf16, #SB>",
                              "%b = gpu.local_trans %a : tensor<32x64xf16, #SA>"))
    with pytest.raises(Exception, match="transposed is"):
        verify(parse_op(bad))

