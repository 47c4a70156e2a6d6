"""Chains that mix element widths: coalescing gives a data-flow group of accesses one layout, and
the conversions that stay move to the narrow side of casts (IR text in, IR text out); then the
benchmarks' layer norm (fp16 x, f32 or fp16 w and b) through the whole pipeline: one layout,
16-byte accesses, no spills, and the right numbers on tile.emulator."""
from __future__ import annotations

import importlib.util
import os
import re
import textwrap

import numpy as np
import pytest
from codegen_util import result, run as run_simt
from ptxas_util import assemble_ok, needs_ptxas
from test_gpu_passes import ALIASES, expand, run, same
from test_gpu_pipeline import compile_gpu, no_conversions

import tile
import tile.language as tl
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.ir import TensorType, parse_op, print_op
from tile.ir.layouts import BlockedLayout, SliceLayout
from tile.opt.coalesce import Coalesce
from tile.opt.dce import DCE
from tile.opt.pass_manager import PassManager
from tile.opt.remove_layout_conversions import MAX_SLICE, RemoveLayoutConversions, rematerialize_backward
from tile.opt.tile_pipeline import tile_passes

HEAD = ('tt.func {arg_divisibility = [16, 16, 16, 16, 16], num_warps = 4, sym_name = "k", target = "sm_90a", '
        'threads_per_warp = 32} {')


def kernel(body: str) -> str:
    """A tt.func of HEAD around `body` (block header, ops, closing brace)."""
    return HEAD + "\n" + textwrap.dedent(body).strip("\n")


# y = (f16 x * s * f32 w) as f16, one block of a row per iteration (layer norm's last loop)
MIXED = kernel("""
    ^bb(%x: ptr<f16>, %w: ptr<f32>, %y: ptr<f16>, %n: i32, %s: f32):
      %c0 = arith.constant {value = 0} : i32
      %c1024 = arith.constant {value = 1024} : i32
      %ar = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
      scf.for %c0, %n, %c1024 {
      ^bb(%i: i32):
        %si = tt.splat %i : tensor<1024xi32, #B1>
        %offs = arith.add %si, %ar : tensor<1024xi32, #B1>
        %sn = tt.splat %n : tensor<1024xi32, #B1>
        %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1, #B1>
        %xs = tt.splat %x : tensor<1024xptr<f16>, #B1>
        %xp = tt.addptr %xs, %offs : tensor<1024xptr<f16>, #B1>
        %xh = tt.load %xp, %mask : tensor<1024xf16, #B1>
        %xf = arith.cast %xh : tensor<1024xf32, #B1>
        %ws = tt.splat %w : tensor<1024xptr<f32>, #B1>
        %wp = tt.addptr %ws, %offs : tensor<1024xptr<f32>, #B1>
        %wv = tt.load %wp, %mask : tensor<1024xf32, #B1>
        %ss = tt.splat %s : tensor<1024xf32, #B1>
        %t = arith.mul %xf, %ss : tensor<1024xf32, #B1>
        %r = arith.mul %t, %wv : tensor<1024xf32, #B1>
        %rh = arith.cast %r {rounding = "rtne"} : tensor<1024xf16, #B1>
        %ys = tt.splat %y : tensor<1024xptr<f16>, #B1>
        %yp = tt.addptr %ys, %offs : tensor<1024xptr<f16>, #B1>
        tt.store %yp, %rh, %mask
        scf.yield
      }
      tt.return
    }""")


def test_coalesce_gives_the_f32_load_the_f16_accesses_width():
    out = run([Coalesce()], MIXED)
    assert "%xh = tt.load %0, %1 : tensor<1024xf16, #B8>" in out
    assert "%wv = tt.load %3, %4 : tensor<1024xf32, #B8>" in out  # 8 floats: two 16-byte accesses
    assert "%7 = gpu.convert_layout %rh : tensor<1024xf16, #B8>" in out


def test_coalesce_caps_stores_and_keeps_other_groups_apart():
    out = run([Coalesce()], kernel("""
        ^bb(%x: ptr<f16>, %y: ptr<f32>, %z: ptr<f32>, %u: ptr<f32>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f16>, #B1>
          %xp = tt.addptr %xs, %offs : tensor<1024xptr<f16>, #B1>
          %h = tt.load %xp : tensor<1024xf16, #B1>
          %f = arith.cast %h : tensor<1024xf32, #B1>
          %ys = tt.splat %y : tensor<1024xptr<f32>, #B1>
          %yp = tt.addptr %ys, %offs : tensor<1024xptr<f32>, #B1>
          tt.store %yp, %f
          %wide = tt.arange {end = 2048, start = 0} : tensor<2048xi32, #B1>
          %zs = tt.splat %z : tensor<2048xptr<f32>, #B1>
          %zp = tt.addptr %zs, %wide : tensor<2048xptr<f32>, #B1>
          %zv = tt.load %zp : tensor<2048xf32, #B1>
          %other = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %us = tt.splat %u : tensor<1024xptr<f32>, #B1>
          %up = tt.addptr %us, %other : tensor<1024xptr<f32>, #B1>
          %uv = tt.load %up : tensor<1024xf32, #B1>
          tt.return
        }"""))
    assert "%h = tt.load %0 : tensor<1024xf16, #B8>" in out
    assert "tt.store %2, %3" in out and "%3 = gpu.convert_layout %f : tensor<1024xf32, #B4>" in out
    assert "%zv = tt.load %4 : tensor<2048xf32, #B4>" in out  # another shape: its own width
    assert "%uv = tt.load %6 : tensor<1024xf32, #B4>" in out  # no data flow to the f16 load


def test_mixed_f16_f32_chain_ends_with_no_conversion():
    out = run([Coalesce(), RemoveLayoutConversions()], MIXED)
    same(out, kernel("""
        ^bb(%x: ptr<f16>, %w: ptr<f32>, %y: ptr<f16>, %n: i32, %s: f32):
          %c0 = arith.constant {value = 0} : i32
          %c1024 = arith.constant {value = 1024} : i32
          %ar = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B8>
          scf.for %c0, %n, %c1024 {
          ^bb(%i: i32):
            %si = tt.splat %i : tensor<1024xi32, #B8>
            %offs = arith.add %si, %ar : tensor<1024xi32, #B8>
            %sn = tt.splat %n : tensor<1024xi32, #B8>
            %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1, #B8>
            %xs = tt.splat %x : tensor<1024xptr<f16>, #B8>
            %xp = tt.addptr %xs, %offs : tensor<1024xptr<f16>, #B8>
            %xh = tt.load %xp, %mask : tensor<1024xf16, #B8>
            %xf = arith.cast %xh : tensor<1024xf32, #B8>
            %ws = tt.splat %w : tensor<1024xptr<f32>, #B8>
            %wp = tt.addptr %ws, %offs : tensor<1024xptr<f32>, #B8>
            %wv = tt.load %wp, %mask : tensor<1024xf32, #B8>
            %ss = tt.splat %s : tensor<1024xf32, #B8>
            %t = arith.mul %xf, %ss : tensor<1024xf32, #B8>
            %r = arith.mul %t, %wv : tensor<1024xf32, #B8>
            %rh = arith.cast %r {rounding = "rtne"} : tensor<1024xf16, #B8>
            %ys = tt.splat %y : tensor<1024xptr<f16>, #B8>
            %yp = tt.addptr %ys, %offs : tensor<1024xptr<f16>, #B8>
            tt.store %yp, %rh, %mask
            scf.yield
          }
          tt.return
        }"""))


def test_conversion_left_moves_above_a_widening_cast():
    # the f32 store keeps 4 floats per thread: the f16 values cross threads, half the bytes
    out = run([Coalesce(), RemoveLayoutConversions()], kernel("""
        ^bb(%x: ptr<f16>, %y: ptr<f32>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B1>
          %xs = tt.splat %x : tensor<1024xptr<f16>, #B1>
          %xp = tt.addptr %xs, %offs : tensor<1024xptr<f16>, #B1>
          %h = tt.load %xp : tensor<1024xf16, #B1>
          %f = arith.cast %h : tensor<1024xf32, #B1>
          %ys = tt.splat %y : tensor<1024xptr<f32>, #B1>
          %yp = tt.addptr %ys, %offs : tensor<1024xptr<f32>, #B1>
          tt.store %yp, %f
          tt.return
        }"""))
    same(out, kernel("""
        ^bb(%x: ptr<f16>, %y: ptr<f32>):
          %offs = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B4>
          %offs_1 = tt.arange {end = 1024, start = 0} : tensor<1024xi32, #B8>
          %xs = tt.splat %x : tensor<1024xptr<f16>, #B8>
          %xp = tt.addptr %xs, %offs_1 : tensor<1024xptr<f16>, #B8>
          %h = tt.load %xp : tensor<1024xf16, #B8>
          %ys = tt.splat %y : tensor<1024xptr<f32>, #B4>
          %yp = tt.addptr %ys, %offs : tensor<1024xptr<f32>, #B4>
          %0 = gpu.convert_layout %h : tensor<1024xf16, #B4>
          %f = arith.cast %0 : tensor<1024xf32, #B4>
          tt.store %yp, %f
          tt.return
        }"""))


def test_conversions_narrow_through_chains_of_casts_both_ways():
    out = run([RemoveLayoutConversions()], kernel("""
        ^bb(%q: tensor<1024xi8, #B4>, %v: tensor<1024xf32, #B4>, %p: tensor<1024xptr<f16>, #B8>, %pf: tensor<1024xptr<f32>, #B8>, %u: tensor<1024xf32, #B4>):
          %a = arith.cast %q : tensor<1024xf16, #B4>
          %b = arith.cast %a : tensor<1024xf32, #B4>
          %bc = gpu.convert_layout %b : tensor<1024xf32, #B8>
          tt.store %pf, %bc
          %vc = gpu.convert_layout %v : tensor<1024xf32, #B8>
          %h = arith.cast %vc {rounding = "rtne"} : tensor<1024xf16, #B8>
          tt.store %p, %h
          %twice = gpu.convert_layout %u : tensor<1024xf32, #B8>
          %h2 = arith.cast %twice {rounding = "rtz"} : tensor<1024xf16, #B8>
          %sum = arith.add %twice, %bc : tensor<1024xf32, #B8>
          tt.store %p, %h2
          tt.store %pf, %sum
          tt.return
        }"""))
    same(out, kernel("""
        ^bb(%q: tensor<1024xi8, #B4>, %v: tensor<1024xf32, #B4>, %p: tensor<1024xptr<f16>, #B8>, %pf: tensor<1024xptr<f32>, #B8>, %u: tensor<1024xf32, #B4>):
          %0 = gpu.convert_layout %q : tensor<1024xi8, #B8>
          %a = arith.cast %0 : tensor<1024xf16, #B8>
          %b = arith.cast %a : tensor<1024xf32, #B8>
          tt.store %pf, %b
          %1 = arith.cast %v {rounding = "rtne"} : tensor<1024xf16, #B4>
          %h = gpu.convert_layout %1 : tensor<1024xf16, #B8>
          tt.store %p, %h
          %twice = gpu.convert_layout %u : tensor<1024xf32, #B8>
          %h2 = arith.cast %twice {rounding = "rtz"} : tensor<1024xf16, #B8>
          %sum = arith.add %twice, %b : tensor<1024xf32, #B8>
          tt.store %p, %h2
          tt.store %pf, %sum
          tt.return
        }"""))


# ------------------------------------------------------------------ the benchmarks' layer norm


def layer_norm_ir(cols: int, block: int, w_dtype) -> str:
    """The tile IR of the benchmarks' layer norm (three loops over a row; fp16 x and y, w and b
    in `w_dtype`, f32 math), after the tile passes."""

    @tile.jit
    def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x_ptr += row * stride
        y_ptr += row * stride
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            x = tl.where(cols < n_cols, x - mean, 0.0)
            acc += x * x
        rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            w = tl.load(w_ptr + cols, mask=mask)
            b = tl.load(b_ptr + cols, mask=mask)
            x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + cols, ((x - mean) * rstd * w + b).to(tl.float16), mask=mask)

    x, w, m = np.ones(cols, np.float16), np.ones(cols, w_dtype), np.ones(1, np.float32)
    spec, _ = layer_norm.specialize((x, x, w, w, m, m, cols, cols, 1e-5), {"BLOCK": block})
    func = layer_norm.build_ir(spec)
    PassManager(tile_passes()).run(func)
    return print_op(func)


LAYER_NORM_SHAPES = [(1024, 1024, 4), (4096, 4096, 8), (8192, 8192, 8)]  # cols, BLOCK, num_warps


@pytest.mark.parametrize("w_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("cols, block, num_warps", LAYER_NORM_SHAPES)
def test_layer_norm_loops_mix_widths_in_one_layout(cols, block, num_warps, w_dtype):
    func = compile_gpu(layer_norm_ir(cols, block, w_dtype), num_warps)
    assert no_conversions(func)
    spt8 = BlockedLayout((8,), (32,), (num_warps,), (0,))  # the f16 accesses' 16 bytes, taken by f32 ones too
    assert {r.type.layout for op in func.walk() for r in op.results if isinstance(r.type, TensorType)} == {spt8}
    ptrs = [op.operand(0).type for op in func.walk() if op.name in ("tt.load", "tt.store")]
    vectors = [op.attrs["vector"] for op in func.walk() if op.name in ("tt.load", "tt.store")]
    assert all(v * t.element.pointee.bytes == 16 for v, t in zip(vectors, ptrs) if isinstance(t, TensorType))


@needs_ptxas
@pytest.mark.parametrize("cols, block, num_warps", LAYER_NORM_SHAPES)
def test_layer_norm_loops_ptx_moves_16_bytes_without_spills(cols, block, num_warps):
    ptx = emit_ptx(lower_to_simt(compile_gpu(layer_norm_ir(cols, block, np.float32), num_warps)), target="sm_90a")
    info = assemble_ok(ptx, "sm_90a")
    assert info.spill_stores == info.spill_loads == 0 and info.stack_bytes == 0
    accesses = re.findall(r"\b(ld|st)\.global(\.v4)?\.", ptx)
    assert accesses.count(("st", "")) == 2  # mean and rstd; every other access is 16 bytes
    assert all(vec for kind, vec in accesses if kind == "ld")


@pytest.mark.parametrize("w_dtype", [np.float32, np.float16])
def test_run_layer_norm_loops(w_dtype):
    rng = np.random.default_rng(1)
    rows, n, stride, eps = 2, 1504, 2048, 1e-5  # two iterations of BLOCK = 1024, the second masked
    x = rng.standard_normal(rows * stride).astype(np.float16)
    w, b = rng.standard_normal(stride).astype(w_dtype), rng.standard_normal(stride).astype(w_dtype)
    y = np.full(rows * stride, np.nan, np.float16)
    mean, rstd = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    simt = lower_to_simt(compile_gpu(layer_norm_ir(stride, 1024, w_dtype), 4))  # 8 elements per thread
    m, dev = run_simt(simt, (rows,), [x, y, w, b, mean, rstd, stride, n, np.float32(eps)])
    xr = x.reshape(rows, stride)[:, :n].astype(np.float64)
    mu = xr.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((xr - mu) ** 2).mean(1, keepdims=True) + eps)
    ref = (xr - mu) * rs * w[:n].astype(np.float64) + b[:n].astype(np.float64)
    got = result(m, dev[1], y).reshape(rows, stride)
    np.testing.assert_allclose(got[:, :n].astype(np.float64), ref, rtol=1e-2, atol=1e-2)
    assert np.isnan(got[:, n:].astype(np.float32)).all()
    np.testing.assert_allclose(result(m, dev[4], mean), mu[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result(m, dev[5], rstd), rs[:, 0], rtol=1e-4)


def _chain(rounds: int, kept: bool) -> str:
    """`rounds` multiply-xor steps over an arange in #B1 converted to #B4 (as tl.rand's Philox
    rounds feed a mask that a vectorized load's select wants); with `kept`, every step is also
    printed in #B1, so its ops stay alive beside any copy."""
    lines, prev, used = [], "%a", []
    for i in range(rounds):
        lines.append(f"%m{i} = arith.mul {prev}, {prev} : tensor<1024xi32, #B1>")
        lines.append(f"%x{i} = arith.xor %m{i}, %a : tensor<1024xi32, #B1>")
        prev = f"%x{i}"
        used.append(prev)
    printed = f"\n  tt.print {', '.join(used)}" if kept else ""
    return kernel(f"""
        ^bb(%p: ptr<i32>):
          %a = tt.arange {{end = 1024, start = 0}} : tensor<1024xi32, #B1>
          {(chr(10) + '          ').join(lines)}
          %c = gpu.convert_layout {prev} : tensor<1024xi32, #B4>
          tt.print %c{printed}
          tt.return
        }}""")


@pytest.mark.parametrize("rounds", [4, 60])
def test_a_long_chain_only_the_conversion_uses_is_recomputed_whole(rounds):
    """120 ops (Philox-sized) move to the conversion's layout: the originals die, nothing is
    duplicated; values reached by several paths count once (the walk was exponential before)."""
    func = parse_op(expand(_chain(rounds, kept=False)))
    assert rematerialize_backward(func)
    text = print_op(func)
    assert "gpu.convert_layout" not in text


def test_a_chain_kept_alive_elsewhere_is_copied_only_up_to_the_limit():
    short = parse_op(expand(_chain(4, kept=True)))
    assert rematerialize_backward(short)  # 9 ops copied: within MAX_SLICE
    long = parse_op(expand(_chain(MAX_SLICE, kept=True)))
    assert not rematerialize_backward(long)  # 2 * MAX_SLICE + 1 would stay beside their copies
    assert "gpu.convert_layout" in print_op(long)


def test_a_broadcast_row_is_loaded_again_in_the_layout_its_user_wants():
    """m[None, :] loaded in one layout and broadcast in it, then converted for a 64 x 64 use (a
    dot's result minus the row: attention's backward): the 64 values are loaded again in the
    use's row layout, and the expand_dims / broadcast recomputed in it, instead of 4096 values
    going through shared memory. A conversion of a value that is not smaller than the converted
    one stays."""
    row, square = SliceLayout(0, BlockedLayout((1, 4), (2, 16), (4, 1), (1, 0))), ALIASES["#T2"]
    func = parse_op(expand(kernel(f"""
        ^bb(%p: ptr<f32>):
          %a = tt.arange {{end = 64, start = 0}} : tensor<64xi32, #B1>
          %ps = tt.splat %p : tensor<64xptr<f32>, #B1>
          %pp = tt.addptr %ps, %a : tensor<64xptr<f32>, #B1>
          %m = tt.load %pp : tensor<64xf32, #B1>
          %c = gpu.convert_layout %m : tensor<64xf32, {row}>
          %e = tt.expand_dims %c {{axis = 0}} : tensor<1x64xf32, #C2>
          %b = tt.broadcast %e : tensor<64x64xf32, #C2>
          %t = gpu.convert_layout %b : tensor<64x64xf32, #T2>
          %l = tt.load %pp : tensor<64xf32, #B1>
          %u = gpu.convert_layout %l : tensor<64xf32, #B4>
          tt.print %t, %u
          tt.return
        }}""")))
    assert rematerialize_backward(func)
    DCE().run(func)
    text = print_op(func)
    assert re.findall(r"gpu.convert_layout (%\w+)", text) == ["%l"]
    assert f"tensor<64xf32, {SliceLayout(0, BlockedLayout((4, 1), (16, 2), (1, 4), (0, 1)))}>" in text
    assert f"tensor<64x64xf32, {square}>" in text and "tensor<64x64xf32, #blocked<spt = [1, 4]" not in text


def test_dropout_mask_is_computed_in_the_loads_layout():
    """Tutorial 08's tl.rand mask is computed in the vectorized layout of x's load: no shared
    memory round trip, no barrier (it went through shared memory while the walk was capped)."""
    path = os.path.join(os.path.dirname(__file__), "..", "tutorials", "08_low_memory_dropout.py")
    spec = importlib.util.spec_from_file_location("tutorial_08_remat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.zeros(1 << 12, np.float32)
    gpu = str(tile.dump(module.seeded_dropout_kernel, x, x, x.size, 0.5, 123, BLOCK=1024, stage="gpu",
                        target="sm_90a"))
    assert "gpu.local_alloc" not in gpu and "gpu.convert_layout" not in gpu
    assert "bar.sync" not in str(tile.dump(module.seeded_dropout_kernel, x, x, x.size, 0.5, 123, BLOCK=1024,
                                           stage="ptx", target="sm_90a"))
