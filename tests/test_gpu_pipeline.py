"""The whole gpu pipeline on whole kernels: verified gpu IR, coalesced 16-byte accesses, no
conversion through shared memory except where data must change threads (a transpose), and the
right numbers when the result is lowered and run on tile.emulator (which also reports
shared-memory races, so missing barriers fail)."""
from __future__ import annotations

import numpy as np
import pytest

from tile.ir import TensorType, parse_op, print_op
from tile.ir.dot_layouts import fma_operand_layout
from tile.ir.gpu_ops import verify_layouts
from tile.ir.layouts import BlockedLayout, SharedLayout, conversion_kind
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager

VADD = """
tt.func {arg_divisibility = [16, 16, 16, 16], arg_names = ["x_ptr", "y_ptr", "out_ptr", "n"], sym_name = "add"} {
^bb(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32):
  %pid = tt.program_id {axis = 0} : i32
  %c1024 = arith.constant {value = 1024} : i32
  %start = arith.mul %pid, %c1024 : i32
  %range = tt.arange {end = 1024, start = 0} : tensor<1024xi32>
  %sstart = tt.splat %start : tensor<1024xi32>
  %offs = arith.add %sstart, %range : tensor<1024xi32>
  %sn = tt.splat %n : tensor<1024xi32>
  %mask = arith.cmp %offs, %sn {predicate = "lt"} : tensor<1024xi1>
  %xs = tt.splat %x_ptr : tensor<1024xptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<1024xptr<f32>>
  %x = tt.load %xp, %mask : tensor<1024xf32>
  %ys = tt.splat %y_ptr : tensor<1024xptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<1024xptr<f32>>
  %y = tt.load %yp, %mask : tensor<1024xf32>
  %sum = arith.add %x, %y : tensor<1024xf32>
  %os = tt.splat %out_ptr : tensor<1024xptr<f32>>
  %op = tt.addptr %os, %offs : tensor<1024xptr<f32>>
  tt.store %op, %sum, %mask
  tt.return
}
"""

SOFTMAX = """
tt.func {arg_divisibility = [16, 16, 16, 16, 16], arg_names = ["out", "inp", "in_stride", "out_stride", "n_cols"], sym_name = "softmax"} {
^bb(%out: ptr<f32>, %inp: ptr<f32>, %in_stride: i32, %out_stride: i32, %n_cols: i32):
  %row = tt.program_id {axis = 0} : i32
  %rs = arith.mul %row, %in_stride : i32
  %rowp = tt.addptr %inp, %rs : ptr<f32>
  %cols = tt.arange {end = 1024, start = 0} : tensor<1024xi32>
  %sp = tt.splat %rowp : tensor<1024xptr<f32>>
  %ptrs = tt.addptr %sp, %cols : tensor<1024xptr<f32>>
  %sn = tt.splat %n_cols : tensor<1024xi32>
  %mask = arith.cmp %cols, %sn {predicate = "lt"} : tensor<1024xi1>
  %ninf = arith.constant {value = -inf} : tensor<1024xf32>
  %x = tt.load %ptrs, %mask, %ninf : tensor<1024xf32>
  %m = tt.reduce %x {axis = 0} : f32 {
  ^bb(%a: f32, %b: f32):
    %mx = arith.max %a, %b : f32
    tt.reduce.return %mx
  }
  %sm = tt.splat %m : tensor<1024xf32>
  %z = arith.sub %x, %sm : tensor<1024xf32>
  %e = math.exp %z : tensor<1024xf32>
  %s = tt.reduce %e {axis = 0} : f32 {
  ^bb(%c: f32, %d: f32):
    %sum = arith.add %c, %d : f32
    tt.reduce.return %sum
  }
  %ss = tt.splat %s : tensor<1024xf32>
  %y = arith.div %e, %ss : tensor<1024xf32>
  %ors = arith.mul %row, %out_stride : i32
  %orowp = tt.addptr %out, %ors : ptr<f32>
  %osp = tt.splat %orowp : tensor<1024xptr<f32>>
  %optrs = tt.addptr %osp, %cols : tensor<1024xptr<f32>>
  tt.store %optrs, %y, %mask
  tt.return
}
"""

LAYERNORM = """
tt.func {arg_divisibility = [16, 16, 16, 16, 16, 16, 16, 16, 1], arg_names = ["X", "Y", "W", "B", "Mean", "Rstd", "stride", "N", "eps"], sym_name = "layer_norm_fwd"} {
^bb(%X: ptr<f16>, %Y: ptr<f16>, %W: ptr<f16>, %B: ptr<f16>, %Mean: ptr<f32>, %Rstd: ptr<f32>, %stride: i32, %N: i32, %eps: f32):
  %row = tt.program_id {axis = 0} : i32
  %roff = arith.mul %row, %stride : i32
  %xrow = tt.addptr %X, %roff : ptr<f16>
  %yrow = tt.addptr %Y, %roff : ptr<f16>
  %cols = tt.arange {end = 2048, start = 0} : tensor<2048xi32>
  %sN = tt.splat %N : tensor<2048xi32>
  %mask = arith.cmp %cols, %sN {predicate = "lt"} : tensor<2048xi1>
  %xs = tt.splat %xrow : tensor<2048xptr<f16>>
  %xp = tt.addptr %xs, %cols : tensor<2048xptr<f16>>
  %zero16 = arith.constant {value = 0.0} : tensor<2048xf16>
  %x16 = tt.load %xp, %mask, %zero16 : tensor<2048xf16>
  %x = arith.cast %x16 : tensor<2048xf32>
  %sum = tt.reduce %x {axis = 0} : f32 {
  ^bb(%a: f32, %b: f32):
    %ab = arith.add %a, %b : f32
    tt.reduce.return %ab
  }
  %Nf = arith.cast %N : f32
  %mean = arith.div %sum, %Nf : f32
  %smean = tt.splat %mean : tensor<2048xf32>
  %diff = arith.sub %x, %smean : tensor<2048xf32>
  %zero32 = arith.constant {value = 0.0} : tensor<2048xf32>
  %xc = arith.select %mask, %diff, %zero32 : tensor<2048xf32>
  %sq = arith.mul %xc, %xc : tensor<2048xf32>
  %sqsum = tt.reduce %sq {axis = 0} : f32 {
  ^bb(%c: f32, %d: f32):
    %cd = arith.add %c, %d : f32
    tt.reduce.return %cd
  }
  %var = arith.div %sqsum, %Nf : f32
  %ve = arith.add %var, %eps : f32
  %rstd = math.rsqrt %ve : f32
  %wp0 = tt.splat %W : tensor<2048xptr<f16>>
  %wp = tt.addptr %wp0, %cols : tensor<2048xptr<f16>>
  %w16 = tt.load %wp, %mask : tensor<2048xf16>
  %bp0 = tt.splat %B : tensor<2048xptr<f16>>
  %bp = tt.addptr %bp0, %cols : tensor<2048xptr<f16>>
  %b16 = tt.load %bp, %mask : tensor<2048xf16>
  %w = arith.cast %w16 : tensor<2048xf32>
  %bb = arith.cast %b16 : tensor<2048xf32>
  %srstd = tt.splat %rstd : tensor<2048xf32>
  %xhat = arith.mul %xc, %srstd : tensor<2048xf32>
  %yw = arith.mul %xhat, %w : tensor<2048xf32>
  %y = arith.add %yw, %bb : tensor<2048xf32>
  %y16 = arith.cast %y {rounding = "rtne"} : tensor<2048xf16>
  %ys = tt.splat %yrow : tensor<2048xptr<f16>>
  %yp = tt.addptr %ys, %cols : tensor<2048xptr<f16>>
  tt.store %yp, %y16, %mask
  %mp = tt.addptr %Mean, %row : ptr<f32>
  tt.store %mp, %mean
  %rp = tt.addptr %Rstd, %row : ptr<f32>
  tt.store %rp, %rstd
  tt.return
}
"""

TILE2D = """
tt.func {arg_divisibility = [16, 16, 16, 16, 16], arg_names = ["x", "y", "m", "n", "stride"], sym_name = "scale2d"} {
^bb(%x: ptr<f32>, %y: ptr<f32>, %m: i32, %n: i32, %stride: i32):
  %pid_m = tt.program_id {axis = 0} : i32
  %pid_n = tt.program_id {axis = 1} : i32
  %c64 = arith.constant {value = 64} : i32
  %m0 = arith.mul %pid_m, %c64 : i32
  %n0 = arith.mul %pid_n, %c64 : i32
  %ar = tt.arange {end = 64, start = 0} : tensor<64xi32>
  %sm0 = tt.splat %m0 : tensor<64xi32>
  %rm = arith.add %sm0, %ar : tensor<64xi32>
  %sn0 = tt.splat %n0 : tensor<64xi32>
  %rn = arith.add %sn0, %ar : tensor<64xi32>
  %rm2 = tt.expand_dims %rm {axis = 1} : tensor<64x1xi32>
  %rn2 = tt.expand_dims %rn {axis = 0} : tensor<1x64xi32>
  %ss = tt.splat %stride : tensor<64x1xi32>
  %rows = arith.mul %rm2, %ss : tensor<64x1xi32>
  %rowsb = tt.broadcast %rows : tensor<64x64xi32>
  %colsb = tt.broadcast %rn2 : tensor<64x64xi32>
  %offs = arith.add %rowsb, %colsb : tensor<64x64xi32>
  %sm = tt.splat %m : tensor<64x1xi32>
  %mm = arith.cmp %rm2, %sm {predicate = "lt"} : tensor<64x1xi1>
  %sn = tt.splat %n : tensor<1x64xi32>
  %mn = arith.cmp %rn2, %sn {predicate = "lt"} : tensor<1x64xi1>
  %mmb = tt.broadcast %mm : tensor<64x64xi1>
  %mnb = tt.broadcast %mn : tensor<64x64xi1>
  %mask = arith.and %mmb, %mnb : tensor<64x64xi1>
  %xs = tt.splat %x : tensor<64x64xptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<64x64xptr<f32>>
  %v = tt.load %xp, %mask : tensor<64x64xf32>
  %two = arith.constant {value = 2.0} : tensor<64x64xf32>
  %w = arith.mul %v, %two : tensor<64x64xf32>
  %ys = tt.splat %y : tensor<64x64xptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<64x64xptr<f32>>
  tt.store %yp, %w, %mask
  tt.return
}
"""

LOOP = """
tt.func {arg_divisibility = [16, 16, 16, 16], arg_names = ["X", "Out", "stride", "N"], sym_name = "row_sum"} {
^bb(%X: ptr<f32>, %Out: ptr<f32>, %stride: i32, %N: i32):
  %row = tt.program_id {axis = 0} : i32
  %roff = arith.mul %row, %stride : i32
  %xrow = tt.addptr %X, %roff : ptr<f32>
  %c0 = arith.constant {value = 0} : i32
  %c256 = arith.constant {value = 256} : i32
  %acc0 = arith.constant {value = 0.0} : tensor<256xf32>
  %ar = tt.arange {end = 256, start = 0} : tensor<256xi32>
  %acc = scf.for %c0, %N, %c256, %acc0 : tensor<256xf32> {
  ^bb(%off: i32, %a: tensor<256xf32>):
    %soff = tt.splat %off : tensor<256xi32>
    %cols = arith.add %soff, %ar : tensor<256xi32>
    %sN = tt.splat %N : tensor<256xi32>
    %mask = arith.cmp %cols, %sN {predicate = "lt"} : tensor<256xi1>
    %xs = tt.splat %xrow : tensor<256xptr<f32>>
    %xp = tt.addptr %xs, %cols : tensor<256xptr<f32>>
    %zero = arith.constant {value = 0.0} : tensor<256xf32>
    %x = tt.load %xp, %mask, %zero : tensor<256xf32>
    %a2 = arith.add %a, %x : tensor<256xf32>
    scf.yield %a2
  }
  %total = tt.reduce %acc {axis = 0} : f32 {
  ^bb(%p: f32, %q: f32):
    %pq = arith.add %p, %q : f32
    tt.reduce.return %pq
  }
  %op = tt.addptr %Out, %row : ptr<f32>
  tt.store %op, %total
  tt.return
}
"""

LOOPPTR = """
tt.func {arg_divisibility = [16, 16, 16], arg_names = ["X", "Out", "N"], sym_name = "ptr_walk"} {
^bb(%X: ptr<f32>, %Out: ptr<f32>, %N: i32):
  %c0 = arith.constant {value = 0} : i32
  %c512 = arith.constant {value = 512} : i32
  %ar = tt.arange {end = 512, start = 0} : tensor<512xi32>
  %xs = tt.splat %X : tensor<512xptr<f32>>
  %p0 = tt.addptr %xs, %ar : tensor<512xptr<f32>>
  %acc0 = arith.constant {value = 0.0} : tensor<512xf32>
  %acc, %pend = scf.for %c0, %N, %c512, %acc0, %p0 : tensor<512xf32>, tensor<512xptr<f32>> {
  ^bb(%i: i32, %a: tensor<512xf32>, %p: tensor<512xptr<f32>>):
    %x = tt.load %p : tensor<512xf32>
    %a2 = arith.max %a, %x : tensor<512xf32>
    %step = tt.splat %c512 : tensor<512xi32>
    %p2 = tt.addptr %p, %step : tensor<512xptr<f32>>
    scf.yield %a2, %p2
  }
  %os = tt.splat %Out : tensor<512xptr<f32>>
  %op = tt.addptr %os, %ar : tensor<512xptr<f32>>
  tt.store %op, %acc
  tt.return
}
"""

TRANS = """
tt.func {arg_divisibility = [16, 16, 16], arg_names = ["X", "T", "R"], sym_name = "trans_reshape"} {
^bb(%X: ptr<f32>, %T: ptr<f32>, %R: ptr<f32>):
  %r = tt.arange {end = 32, start = 0} : tensor<32xi32>
  %c = tt.arange {end = 64, start = 0} : tensor<64xi32>
  %r2 = tt.expand_dims %r {axis = 1} : tensor<32x1xi32>
  %c2 = tt.expand_dims %c {axis = 0} : tensor<1x64xi32>
  %c64 = arith.constant {value = 64} : tensor<32x1xi32>
  %rs = arith.mul %r2, %c64 : tensor<32x1xi32>
  %rsb = tt.broadcast %rs : tensor<32x64xi32>
  %cb = tt.broadcast %c2 : tensor<32x64xi32>
  %offs = arith.add %rsb, %cb : tensor<32x64xi32>
  %xs = tt.splat %X : tensor<32x64xptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<32x64xptr<f32>>
  %x = tt.load %xp : tensor<32x64xf32>
  %t = tt.trans %x {order = [1, 0]} : tensor<64x32xf32>
  %tr2 = tt.expand_dims %c {axis = 1} : tensor<64x1xi32>
  %tc2 = tt.expand_dims %r {axis = 0} : tensor<1x32xi32>
  %c32 = arith.constant {value = 32} : tensor<64x1xi32>
  %trs = arith.mul %tr2, %c32 : tensor<64x1xi32>
  %trsb = tt.broadcast %trs : tensor<64x32xi32>
  %tcb = tt.broadcast %tc2 : tensor<64x32xi32>
  %toffs = arith.add %trsb, %tcb : tensor<64x32xi32>
  %ts = tt.splat %T : tensor<64x32xptr<f32>>
  %tp = tt.addptr %ts, %toffs : tensor<64x32xptr<f32>>
  tt.store %tp, %t
  %flat = tt.reshape %x : tensor<2048xf32>
  %f = tt.arange {end = 2048, start = 0} : tensor<2048xi32>
  %rsp = tt.splat %R : tensor<2048xptr<f32>>
  %rp = tt.addptr %rsp, %f : tensor<2048xptr<f32>>
  tt.store %rp, %flat
  tt.return
}
"""

SOFTMAX2D = """
tt.func {arg_divisibility = [16, 16, 16, 16], arg_names = ["X", "Y", "stride", "N"], sym_name = "softmax_rows"} {
^bb(%X: ptr<f32>, %Y: ptr<f32>, %stride: i32, %N: i32):
  %pid = tt.program_id {axis = 0} : i32
  %c4 = arith.constant {value = 4} : i32
  %row0 = arith.mul %pid, %c4 : i32
  %ar = tt.arange {end = 4, start = 0} : tensor<4xi32>
  %srow0 = tt.splat %row0 : tensor<4xi32>
  %rows = arith.add %srow0, %ar : tensor<4xi32>
  %cols = tt.arange {end = 256, start = 0} : tensor<256xi32>
  %r2 = tt.expand_dims %rows {axis = 1} : tensor<4x1xi32>
  %sstride = tt.splat %stride : tensor<4x1xi32>
  %roff = arith.mul %r2, %sstride : tensor<4x1xi32>
  %c2 = tt.expand_dims %cols {axis = 0} : tensor<1x256xi32>
  %roffb = tt.broadcast %roff : tensor<4x256xi32>
  %c2b = tt.broadcast %c2 : tensor<4x256xi32>
  %offs = arith.add %roffb, %c2b : tensor<4x256xi32>
  %sN = tt.splat %N : tensor<1x256xi32>
  %cm = arith.cmp %c2, %sN {predicate = "lt"} : tensor<1x256xi1>
  %mask = tt.broadcast %cm : tensor<4x256xi1>
  %xs = tt.splat %X : tensor<4x256xptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<4x256xptr<f32>>
  %ninf = arith.constant {value = -inf} : tensor<4x256xf32>
  %x = tt.load %xp, %mask, %ninf : tensor<4x256xf32>
  %m = tt.reduce %x {axis = 1} : tensor<4xf32> {
  ^bb(%a: f32, %b: f32):
    %mx = arith.max %a, %b : f32
    tt.reduce.return %mx
  }
  %m2 = tt.expand_dims %m {axis = 1} : tensor<4x1xf32>
  %mb = tt.broadcast %m2 : tensor<4x256xf32>
  %z = arith.sub %x, %mb : tensor<4x256xf32>
  %e = math.exp %z : tensor<4x256xf32>
  %s = tt.reduce %e {axis = 1} : tensor<4xf32> {
  ^bb(%c: f32, %d: f32):
    %cd = arith.add %c, %d : f32
    tt.reduce.return %cd
  }
  %s2 = tt.expand_dims %s {axis = 1} : tensor<4x1xf32>
  %sb = tt.broadcast %s2 : tensor<4x256xf32>
  %y = arith.div %e, %sb : tensor<4x256xf32>
  %ys = tt.splat %Y : tensor<4x256xptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<4x256xptr<f32>>
  tt.store %yp, %y, %mask
  tt.return
}
"""


IF_WHILE = """
tt.func {arg_divisibility = [16, 1], arg_names = ["X", "N"], sym_name = "branches"} {
^bb(%X: ptr<f32>, %N: i32):
  %pid = tt.program_id {axis = 0} : i32
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %ar = tt.arange {end = 256, start = 0} : tensor<256xi32>
  %xs = tt.splat %X : tensor<256xptr<f32>>
  %p = tt.addptr %xs, %ar : tensor<256xptr<f32>>
  %v = tt.load %p : tensor<256xf32>
  %odd = arith.cmp %pid, %c0 {predicate = "gt"} : i1
  %w = scf.if %odd : tensor<256xf32> {
    %d = arith.add %v, %v : tensor<256xf32>
    scf.yield %d
  } {
    %z = arith.constant {value = 1.0} : tensor<256xf32>
    scf.yield %z
  }
  %r, %k = scf.while %w, %c0 : tensor<256xf32>, i32 {
  ^bb(%a: tensor<256xf32>, %i: i32):
    %more = arith.cmp %i, %N {predicate = "lt"} : i1
    scf.condition %more, %a, %i
  } {
  ^bb(%b: tensor<256xf32>, %j: i32):
    %b2 = arith.mul %b, %v : tensor<256xf32>
    %j2 = arith.add %j, %c1 : i32
    scf.yield %b2, %j2
  }
  tt.store %p, %r
  tt.return
}
"""

ZOO = """
tt.func {arg_divisibility = [16, 16, 16], arg_names = ["A", "C", "L"], sym_name = "zoo"} {
^bb(%A: ptr<f32>, %C: ptr<f32>, %L: ptr<i32>):
  %r = tt.arange {end = 16, start = 0} : tensor<16xi32>
  %r2 = tt.expand_dims %r {axis = 1} : tensor<16x1xi32>
  %c2 = tt.expand_dims %r {axis = 0} : tensor<1x16xi32>
  %c16 = arith.constant {value = 16} : tensor<16x1xi32>
  %rs = arith.mul %r2, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x16xi32>
  %cb = tt.broadcast %c2 : tensor<16x16xi32>
  %offs = arith.add %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %A : tensor<16x16xptr<f32>>
  %ap = tt.addptr %as, %offs : tensor<16x16xptr<f32>>
  %a = tt.load %ap : tensor<16x16xf32>
  %bt = tt.trans %a {order = [1, 0]} : tensor<16x16xf32>
  %acc = arith.constant {value = 0.0} : tensor<16x16xf32>
  %d = tt.dot %a, %bt, %acc {input_precision = "ieee", max_num_imprecise_acc = 0} : tensor<16x16xf32>
  %cs = tt.splat %C : tensor<16x16xptr<f32>>
  %cp = tt.addptr %cs, %offs : tensor<16x16xptr<f32>>
  %old = tt.atomic_rmw %cp, %d {kind = "add", scope = "gpu", sem = "relaxed"} : tensor<16x16xf32>
  %cum = tt.scan %old {axis = 1, reverse = false} : tensor<16x16xf32> {
  ^bb(%x: f32, %y: f32):
    %s = arith.add %x, %y : f32
    tt.reduce.return %s
  }
  tt.store %cp, %cum
  %rr = tt.reshape %cum : tensor<256xf32>
  %m = tt.reduce %rr {axis = 0} : f32 {
  ^bb(%p: f32, %q: f32):
    %pq = arith.max %p, %q : f32
    tt.reduce.return %pq
  }
  %i = arith.cast %m : i32
  %ls = tt.splat %L : tensor<16xptr<i32>>
  %lp = tt.addptr %ls, %r : tensor<16xptr<i32>>
  %si = tt.splat %i : tensor<16xi32>
  %v = arith.add %si, %r : tensor<16xi32>
  tt.print %v {hex = false, prefix = "v"}
  tt.store %lp, %v
  tt.return
}
"""


def compile_gpu(text: str, num_warps: int = 4):
    func = parse_op(text)
    PassManager(gpu_passes(num_warps, "sm_90a")).run(func)
    verify_layouts(func)
    for op in func.walk():
        if op.name == "gpu.convert_layout":
            t = op.result.type
            assert conversion_kind(op.operand(0).type.layout, t.layout, t.shape) != "shared"
        if op.name == "gpu.local_alloc":
            assert 0 <= op.attrs["offset"] and op.attrs["offset"] + op.attrs["bytes"] <= func.attrs["shared_bytes"]
        if op.name in ("tt.reduce", "tt.scan") and "scratch_offset" in op.attrs:
            assert op.attrs["scratch_offset"] % 16 == 0
    return func


def ops_named(func, name: str) -> list:
    return [op for op in func.walk() if op.name == name]


def vectors(func) -> list[int]:
    return [op.attrs["vector"] for op in func.walk()
            if op.name in ("tt.load", "tt.store") and hasattr(op.operand(0).type, "shape")]


def no_conversions(func) -> bool:
    return not ops_named(func, "gpu.convert_layout") and not ops_named(func, "gpu.local_alloc")


def round_trips(func) -> bool:
    text = print_op(func)
    return print_op(parse_op(text)) == text


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_vector_add(num_warps):
    func = compile_gpu(VADD, num_warps)
    assert no_conversions(func) and func.attrs["shared_bytes"] == 0
    assert vectors(func) == [4, 4, 4]
    layout = ops_named(func, "tt.load")[0].result.type.layout
    assert layout == BlockedLayout((4,), (32,), (num_warps,), (0,))
    assert round_trips(func)


@pytest.mark.parametrize("cols", [1024, 2048, 4096, 8192, 16384])
@pytest.mark.parametrize("num_warps", [4, 8, 16])
def test_softmax_rows(cols, num_warps):
    func = compile_gpu(SOFTMAX.replace("1024", str(cols)), num_warps)
    assert no_conversions(func)
    assert vectors(func) == [min(4, cols // (32 * num_warps))] * 2
    reduces = ops_named(func, "tt.reduce")
    assert all(op.attrs["scratch_offset"] == 0 for op in reduces)
    assert func.attrs["shared_bytes"] == max(16, num_warps * 4)
    assert round_trips(func)


@pytest.mark.parametrize("cols, num_warps", [(1024, 4), (2048, 8), (4096, 8), (8192, 16), (1024, 8)])
def test_layer_norm_fp16(cols, num_warps):
    func = compile_gpu(LAYERNORM.replace("2048", str(cols)), num_warps)
    assert no_conversions(func)
    width = min(8, cols // (32 * num_warps))
    assert vectors(func) == [width] * 4
    assert all(op.result.type.layout.size_per_thread == (width,) for op in ops_named(func, "arith.cast")
               if hasattr(op.result.type, "layout"))


@pytest.mark.parametrize("num_warps", [2, 4, 8])
def test_tile_2d_with_expand_dims(num_warps):
    func = compile_gpu(TILE2D, num_warps)
    assert no_conversions(func)
    assert vectors(func) == [4, 4]
    load = ops_named(func, "tt.load")[0]
    assert load.result.type.layout == BlockedLayout((1, 4), (2, 16), (num_warps, 1), (1, 0))


def test_scf_for_accumulation():
    func = compile_gpu(LOOP)
    assert no_conversions(func)
    loop = ops_named(func, "scf.for")[0]
    assert loop.results[0].type.layout == BlockedLayout((2,), (32,), (4,), (0,))
    assert vectors(func) == [2]


def test_scf_for_loop_carried_pointer():
    func = compile_gpu(LOOPPTR)
    assert no_conversions(func)
    loop = ops_named(func, "scf.for")[0]
    assert {r.type.layout for r in loop.results} == {BlockedLayout((4,), (32,), (4,), (0,))}
    assert vectors(func) == [4, 4]


def test_trans_and_reshape():
    func = compile_gpu(TRANS)
    allocs = ops_named(func, "gpu.local_alloc")
    assert len(allocs) == 1  # the transpose; the reshape stays in registers
    # 4-row runs stored as 16-byte vectors, 4-column runs read one element per lane: per_phase 4
    # (the reads step 4 columns per lane) makes both conflict-free, where per_phase 1 took 4-way
    # conflicts on the reads (64 wavefronts instead of 16)
    assert allocs[0].result.type.layout == SharedLayout(4, 4, 8, (0, 1))
    assert len(ops_named(func, "gpu.barrier")) == 1
    assert func.attrs["shared_bytes"] == 8192
    assert vectors(func) == [4, 4, 4]
    assert round_trips(func)


def test_softmax_2d_rows_keep_one_layout():
    func = compile_gpu(SOFTMAX2D)
    assert no_conversions(func)
    load = ops_named(func, "tt.load")[0]
    for op in ops_named(func, "tt.reduce"):
        assert op.result.type.layout.parent == load.result.type.layout
    assert vectors(func) == [4, 4]


def test_if_and_while():
    func = compile_gpu(IF_WHILE)
    assert no_conversions(func)
    assert vectors(func) == [2, 2]  # 256 elements over 128 threads
    assert round_trips(func)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_dot_atomic_scan_reshape_print(num_warps):
    func = compile_gpu(ZOO, num_warps)
    scan = ops_named(func, "tt.scan")[0]
    atomic = ops_named(func, "tt.atomic_rmw")[0]
    assert scan.result.type.layout == atomic.result.type.layout
    assert atomic.attrs["vector"] == 1
    # an "ieee" dot takes the FMA path: A and B go through shared memory into the layouts where
    # each thread holds its rows / columns and all of K; the dot's blocked result moves to the
    # atomic's coalesced layout through shared memory too
    dot = ops_named(func, "tt.dot")[0]
    result = dot.result.type.layout
    assert isinstance(result, BlockedLayout)
    assert [v.type.layout for v in dot.operands[:2]] == [fma_operand_layout(result, i, 16) for i in (0, 1)]
    assert len(ops_named(func, "gpu.local_alloc")) <= 3
    assert round_trips(func)


@pytest.mark.parametrize("kernel", ["VADD", "SOFTMAX", "TILE2D", "TRANS", "SOFTMAX2D"])
def test_warp_size_64(kernel):
    func = parse_op(globals()[kernel])
    PassManager(gpu_passes(4, "gfx942", threads_per_warp=64)).run(func)
    verify_layouts(func)
    assert func.attrs["threads_per_warp"] == 64
    assert all(v == 4 for v in vectors(func))
    assert len(ops_named(func, "gpu.local_alloc")) == (kernel == "TRANS")


def test_frontend_kernels_through_the_pipeline():
    tl = pytest.importorskip("tile.language")
    import tile
    from tile.opt.tile_pipeline import tile_passes

    @tile.jit
    def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        e = tl.exp(z)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)

    @tile.jit
    def copy2d(x_ptr, y_ptr, m, n, stride, BM: tl.constexpr, BN: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        offs = rm[:, None] * stride + rn[None, :]
        mask = (rm[:, None] < m) & (rn[None, :] < n)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    x = np.ones(4096, np.float32)
    for kernel, args, meta in ((softmax, (x, x, 1024, 1024, 1024), {"BLOCK": 1024}),
                               (copy2d, (x, x, 64, 64, 64), {"BM": 32, "BN": 64})):
        spec, _ = kernel.specialize(args, meta)
        func = kernel.build_ir(spec)
        PassManager(tile_passes()).run(func)
        func = compile_gpu(print_op(func))
        assert no_conversions(func)
        assert vectors(func) and all(v == 4 for v in vectors(func))


# ------------------------------------------------------------------ running on tile.emulator

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def simt():
    """run(text, grid, args, num_warps) -> (the emulated run, its args), and read(run, arg, like):
    the kernel's PTX on tile.emulator."""
    import codegen_util
    from tile.codegen.lower import lower_to_simt

    def run(text: str, grid, args, num_warps: int = 4):
        return codegen_util.run(lower_to_simt(compile_gpu(text, num_warps)), grid, args)

    return run, codegen_util.result


def poisoned(n: int, dtype=np.float32) -> np.ndarray:
    return np.full(n, np.nan, dtype)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_run_vector_add(simt, num_warps):
    run, read = simt
    n = 3008
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    m, dev = run(VADD, (3,), [x, y, poisoned(n), n], num_warps)
    np.testing.assert_array_equal(read(m, dev[2], x), x + y)


@pytest.mark.parametrize("cols, num_warps", [(1024, 4), (2048, 8), (4096, 16)])
def test_run_softmax(simt, cols, num_warps):
    run, read = simt
    rows, n = 3, cols - 16
    x = RNG.standard_normal(rows * cols).astype(np.float32)
    out = poisoned(rows * cols)
    m, dev = run(SOFTMAX.replace("1024", str(cols)), (rows,), [out, x, cols, cols, n], num_warps)
    got = read(m, dev[0], out).reshape(rows, cols)
    xr = x.reshape(rows, cols)[:, :n].astype(np.float64)
    ref = np.exp(xr - xr.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(got[:, :n], ref, rtol=1e-5, atol=1e-7)
    assert np.isnan(got[:, n:]).all()


def test_run_layer_norm_fp16(simt):
    run, read = simt
    rows, n, stride, eps = 2, 2000, 2048, 1e-5
    x = RNG.standard_normal(rows * stride).astype(np.float16)
    w, b = RNG.standard_normal(stride).astype(np.float16), RNG.standard_normal(stride).astype(np.float16)
    y, mean, rstd = poisoned(rows * stride, np.float16), poisoned(rows), poisoned(rows)
    m, dev = run(LAYERNORM, (rows,), [x, y, w, b, mean, rstd, stride, n, np.float32(eps)], 8)
    xr = x.reshape(rows, stride)[:, :n].astype(np.float64)
    mu = xr.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((xr - mu) ** 2).mean(1, keepdims=True) + eps)
    ref = (xr - mu) * rs * w[:n].astype(np.float64) + b[:n].astype(np.float64)
    got = read(m, dev[1], y).reshape(rows, stride)
    np.testing.assert_allclose(got[:, :n].astype(np.float64), ref, rtol=1e-2, atol=1e-2)
    assert np.isnan(got[:, n:].astype(np.float32)).all()
    np.testing.assert_allclose(read(m, dev[4], mean), mu[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(read(m, dev[5], rstd), rs[:, 0], rtol=1e-4)


def test_run_tile_2d(simt):
    run, read = simt
    rows, cols, stride = 80, 96, 112
    x = RNG.standard_normal(rows * stride).astype(np.float32)
    y = poisoned(rows * stride)
    m, dev = run(TILE2D, (2, 2), [x, y, rows, cols, stride])
    got, xr = read(m, dev[1], y).reshape(rows, stride), x.reshape(rows, stride)
    np.testing.assert_array_equal(got[:, :cols], 2 * xr[:, :cols])
    assert np.isnan(got[:, cols:]).all()


def test_run_loops(simt):
    run, read = simt
    rows, n, stride = 3, 1008, 1024
    x = RNG.standard_normal(rows * stride).astype(np.float32)
    out = poisoned(rows)
    m, dev = run(LOOP, (rows,), [x, out, stride, n])
    ref = x.reshape(rows, stride)[:, :n].astype(np.float64).sum(1)
    np.testing.assert_allclose(read(m, dev[1], out), ref, rtol=1e-5, atol=1e-4)

    x = RNG.standard_normal(2048).astype(np.float32)
    out = poisoned(512)
    m, dev = run(LOOPPTR, (1,), [x, out, 2048])
    np.testing.assert_array_equal(read(m, dev[1], out), np.maximum(0, x.reshape(4, 512).max(0)))


def test_run_trans_and_reshape(simt):
    run, read = simt
    x = RNG.standard_normal(2048).astype(np.float32)
    m, dev = run(TRANS, (1,), [x, poisoned(2048), poisoned(2048)])
    np.testing.assert_array_equal(read(m, dev[1], x).reshape(64, 32), x.reshape(32, 64).T)
    np.testing.assert_array_equal(read(m, dev[2], x), x)


def test_run_softmax_2d(simt):
    run, read = simt
    rows, cols, n = 8, 256, 240
    x = RNG.standard_normal(rows * cols).astype(np.float32)
    m, dev = run(SOFTMAX2D, (2,), [x, poisoned(rows * cols), cols, n])
    got = read(m, dev[1], x).reshape(rows, cols)
    xr = x.reshape(rows, cols)[:, :n].astype(np.float64)
    ref = np.exp(xr - xr.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(got[:, :n], ref, rtol=1e-5, atol=1e-7)
    assert np.isnan(got[:, n:]).all()


def test_run_if_and_while(simt):
    run, read = simt
    x = RNG.uniform(0.5, 1.5, 256).astype(np.float32)
    m, dev = run(IF_WHILE, (1,), [x.copy(), 3])
    np.testing.assert_allclose(read(m, dev[0], x), x.astype(np.float64) ** 3, rtol=1e-6)


def transpose_kernel(rows: int, cols: int, dtype: str) -> str:
    """out[cols, rows] = x[rows, cols]^T for one tile, both row-major."""
    return f"""
tt.func {{arg_divisibility = [16, 16], arg_names = ["X", "T"], sym_name = "transpose"}} {{
^bb(%X: ptr<{dtype}>, %T: ptr<{dtype}>):
  %r = tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32>
  %c = tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32>
  %r2 = tt.expand_dims %r {{axis = 1}} : tensor<{rows}x1xi32>
  %c2 = tt.expand_dims %c {{axis = 0}} : tensor<1x{cols}xi32>
  %nc = arith.constant {{value = {cols}}} : tensor<{rows}x1xi32>
  %rs = arith.mul %r2, %nc : tensor<{rows}x1xi32>
  %rsb = tt.broadcast %rs : tensor<{rows}x{cols}xi32>
  %cb = tt.broadcast %c2 : tensor<{rows}x{cols}xi32>
  %offs = arith.add %rsb, %cb : tensor<{rows}x{cols}xi32>
  %xs = tt.splat %X : tensor<{rows}x{cols}xptr<{dtype}>>
  %xp = tt.addptr %xs, %offs : tensor<{rows}x{cols}xptr<{dtype}>>
  %x = tt.load %xp : tensor<{rows}x{cols}x{dtype}>
  %t = tt.trans %x {{order = [1, 0]}} : tensor<{cols}x{rows}x{dtype}>
  %tr = tt.expand_dims %c {{axis = 1}} : tensor<{cols}x1xi32>
  %tc = tt.expand_dims %r {{axis = 0}} : tensor<1x{rows}xi32>
  %nr = arith.constant {{value = {rows}}} : tensor<{cols}x1xi32>
  %trs = arith.mul %tr, %nr : tensor<{cols}x1xi32>
  %trsb = tt.broadcast %trs : tensor<{cols}x{rows}xi32>
  %tcb = tt.broadcast %tc : tensor<{cols}x{rows}xi32>
  %toffs = arith.add %trsb, %tcb : tensor<{cols}x{rows}xi32>
  %ts = tt.splat %T : tensor<{cols}x{rows}xptr<{dtype}>>
  %tp = tt.addptr %ts, %toffs : tensor<{cols}x{rows}xptr<{dtype}>>
  tt.store %tp, %t
  tt.return
}}"""


@pytest.mark.parametrize("rows, cols, dtype, num_warps", [
    (32, 64, "f32", 4), (64, 32, "f32", 8), (16, 128, "f16", 2), (128, 16, "f32", 4), (64, 64, "f16", 4),
    (8, 8, "f32", 1), (32, 32, "i8", 4),
])
def test_run_transposes(simt, rows, cols, dtype, num_warps):
    run, read = simt
    np_dtype = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[dtype]
    x = (RNG.standard_normal(rows * cols) * 50).astype(np_dtype)
    out = np.full(rows * cols, 7, np_dtype)
    m, dev = run(transpose_kernel(rows, cols, dtype), (1,), [x, out], num_warps)
    np.testing.assert_array_equal(read(m, dev[1], out).reshape(cols, rows), x.reshape(rows, cols).T)


def test_discarded_hint_informs_loads_of_a_loaded_pointer():
    """Triton's grouped GEMM tutorial calls `tl.multiple_of(a_ptrs, [16, 16])` as a statement on a
    base pointer loaded from memory; like Triton, the facts attach to `a_ptrs` itself, so the
    loop's loads still become 16-byte vectors."""
    import tile
    import tile.language as tl
    from tile.opt.tile_pipeline import tile_passes

    @tile.jit
    def grouped_copy(ptrs, out_ptr, ld, k, BM: tl.constexpr, BK: tl.constexpr, HINT: tl.constexpr):
        a_ptr = tl.load(ptrs).to(tl.pointer_type(tl.float16))
        a_ptrs = a_ptr + tl.arange(0, BM)[:, None] * ld + tl.arange(0, BK)[None, :]
        acc = tl.zeros((BM, BK), dtype=tl.float32)
        for _ in range(0, k):
            if HINT:
                tl.multiple_of(a_ptrs, [16, 16])
            acc += tl.load(a_ptrs).to(tl.float32)
            a_ptrs += BK
        tl.store(out_ptr + tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :], acc)

    def load_vectors(hint: bool) -> list[int]:
        args = (np.zeros(1, np.int64), np.zeros(64 * 32, np.float32), 64, 4)
        spec, _ = grouped_copy.specialize(args, {"BM": 64, "BK": 32, "HINT": hint})
        func = grouped_copy.build_ir(spec)
        PassManager(tile_passes()).run(func)
        func = compile_gpu(print_op(func))
        # the loop carries the pointers in the loads' layout: no pointer goes through shared memory
        assert not [op for op in ops_named(func, "gpu.local_alloc") if "ptr" in str(op.result.type)]
        return [op.attrs["vector"] for op in ops_named(func, "tt.load") if isinstance(op.result.type, TensorType)]

    assert load_vectors(hint=False) == [1]
    assert load_vectors(hint=True) == [8]

    # lowered, the loop carries one base per 16-byte vector of the pointers, not every pointer
    from tile.codegen.lower import lower_to_simt

    args = (np.zeros(1, np.int64), np.zeros(64 * 32, np.float32), 64, 4)
    spec, _ = grouped_copy.specialize(args, {"BM": 64, "BK": 32, "HINT": True})
    func = grouped_copy.build_ir(spec)
    PassManager(tile_passes()).run(func)
    simt = lower_to_simt(compile_gpu(print_op(func)))
    loop = next(op for op in simt.walk() if op.name == "scf.for")
    assert sum(str(r.type).startswith("ptr") for r in loop.results) == 64 * 32 // (8 * 128)
