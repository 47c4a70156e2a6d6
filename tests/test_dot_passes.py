"""The tensor-core passes one at a time, IR text in and IR text out: accelerate-dot, operand
staging (convert-through-shared), pointer-step scalarization and software pipelining, and
alloc-shared / insert-barriers on multi-buffered, asynchronously filled buffers. mma.sync: the
accelerate-dot cases compile for targets without wgmma (sm_90a's wgmma: test_codegen_wgmma.py)."""
from __future__ import annotations

import textwrap

import pytest

from tile.ir import parse_op, print_op, verify
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, fma_operand_layout
from tile.ir.gpu_ops import verify_layouts
from tile.ir.layouts import BlockedLayout, SharedLayout
from tile.opt.accelerate_dot import AccelerateDot, mma_capable, warps_per_tile
from tile.opt.alloc_shared import AllocShared
from tile.opt.convert_through_shared import ConvertThroughShared
from tile.opt.insert_barriers import InsertBarriers
from tile.opt.pipeline import Pipeline
from tile.opt.remove_layout_conversions import RemoveLayoutConversions

B4 = BlockedLayout((1, 1), (1, 32), (2, 2), (1, 0))  # convert-to-gpu's default for 64x64, 4 warps
M4 = MmaLayout(2, (2, 2))
M1 = MmaLayout(2, (1, 1))
ALIASES = {
    "#B": str(B4), "#M": str(M4), "#DA": str(DotOperandLayout(0, M4, 2)), "#DB": str(DotOperandLayout(1, M4, 2)),
    "#FA": str(fma_operand_layout(B4, 0, 32)), "#FB": str(fma_operand_layout(B4, 1, 32)),
    "#L": str(BlockedLayout((1, 8), (16, 2), (1, 1), (1, 0))), "#N": str(M1),
    "#EA": str(DotOperandLayout(0, M1, 2)), "#EB": str(DotOperandLayout(1, M1, 2)),
    "#SA3": str(SharedLayout(8, 4, 2, (2, 1, 0))), "#SA": str(SharedLayout(8, 4, 2, (1, 0))),
    "#G": str(BlockedLayout((1, 8), (8, 4), (4, 1), (1, 0))), "#H": str(BlockedLayout((1, 8), (4, 8), (4, 1), (1, 0))),
    "#XA": str(SharedLayout(8, 2, 4, (1, 0))), "#XB": str(SharedLayout(8, 1, 8, (1, 0))),
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


def run(passes, text: str) -> str:
    func = parse_op(expand(text))
    verify(func)
    verify_layouts(func)
    for p in passes:
        p.run(func)
        verify(func)
        verify_layouts(func)
    return shorten(print_op(func))


def same(actual: str, expected: str) -> None:
    """`expected` may start with an unindented head() line followed by an indented body."""
    first, rest = expected.lstrip("\n").split("\n", 1)
    assert actual == first.strip() + "\n" + textwrap.dedent(rest).strip(), actual


def head(stages: int = 3, warps: int = 4, target: str = "sm_90a") -> str:
    return (f'tt.func {{num_stages = {stages}, num_warps = {warps}, sym_name = "k", target = "{target}", '
            'threads_per_warp = 32} {')


# ------------------------------------------------------------------------- accelerate-dot

ACC_LOOP = head(target="sm_80") + """
^bb(%ap: tensor<64x32xptr<f16>, #B>, %bp: tensor<32x64xptr<f16>, #B>, %out: tensor<64x64xptr<f32>, #B>, %n: i32):
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %zero = arith.constant {value = 0.0} : tensor<64x64xf32, #B>
  %r = scf.for %c0, %n, %c1, %zero : tensor<64x64xf32, #B> {
  ^bb(%k: i32, %acc: tensor<64x64xf32, #B>):
    %a = tt.load %ap : tensor<64x32xf16, #B>
    %b = tt.load %bp : tensor<32x64xf16, #B>
    %fa = gpu.convert_layout %a : tensor<64x32xf16, #FA>
    %fb = gpu.convert_layout %b : tensor<32x64xf16, #FB>
    %d = tt.dot %fa, %fb, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #B>
    scf.yield %d
  }
  tt.store %out, %r
  tt.return
}"""


def test_accelerate_dot_puts_f16_on_mma():
    same(run([AccelerateDot()], ACC_LOOP), head(target="sm_80") + """
        ^bb(%ap: tensor<64x32xptr<f16>, #B>, %bp: tensor<32x64xptr<f16>, #B>, %out: tensor<64x64xptr<f32>, #B>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %zero = arith.constant {value = 0.0} : tensor<64x64xf32, #B>
          %r = scf.for %c0, %n, %c1, %zero : tensor<64x64xf32, #B> {
          ^bb(%k: i32, %acc: tensor<64x64xf32, #B>):
            %a = tt.load %ap : tensor<64x32xf16, #B>
            %b = tt.load %bp : tensor<32x64xf16, #B>
            %0 = gpu.convert_layout %a : tensor<64x32xf16, #DA>
            %1 = gpu.convert_layout %b : tensor<32x64xf16, #DB>
            %2 = gpu.convert_layout %acc : tensor<64x64xf32, #M>
            %d = tt.dot %0, %1, %2 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #M>
            %3 = gpu.convert_layout %d : tensor<64x64xf32, #B>
            scf.yield %3
          }
          tt.store %out, %r
          tt.return
        }""")


def test_the_accumulator_keeps_the_mma_layout_across_iterations():
    same(run([AccelerateDot(), RemoveLayoutConversions()], ACC_LOOP), head(target="sm_80") + """
        ^bb(%ap: tensor<64x32xptr<f16>, #B>, %bp: tensor<32x64xptr<f16>, #B>, %out: tensor<64x64xptr<f32>, #B>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %zero = arith.constant {value = 0.0} : tensor<64x64xf32, #M>
          %r = scf.for %c0, %n, %c1, %zero : tensor<64x64xf32, #M> {
          ^bb(%k: i32, %acc: tensor<64x64xf32, #M>):
            %a = tt.load %ap : tensor<64x32xf16, #B>
            %b = tt.load %bp : tensor<32x64xf16, #B>
            %0 = gpu.convert_layout %a : tensor<64x32xf16, #DA>
            %1 = gpu.convert_layout %b : tensor<32x64xf16, #DB>
            %d = tt.dot %0, %1, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #M>
            scf.yield %d
          }
          %2 = gpu.convert_layout %r : tensor<64x64xf32, #B>
          tt.store %out, %2
          tt.return
        }""")


def test_invariant_operands_are_converted_once_before_the_loop_when_they_fit():
    """64x32 A and 32x64 B fragments take 16 registers per thread each: both leave the loop; of
    128x64 ones (64 registers each), only the first fits the budget."""
    small = ACC_LOOP.replace("    %a = tt.load %ap : tensor<64x32xf16, #B>\n    %b = tt.load %bp : tensor<32x64xf16, #B>\n",
                             "").replace("%ap: tensor<64x32xptr<f16>, #B>, %bp: tensor<32x64xptr<f16>, #B>",
                                         "%a: tensor<64x32xf16, #B>, %b: tensor<32x64xf16, #B>")
    out = run([AccelerateDot()], small)
    assert out.index("%1 = gpu.convert_layout %b : tensor<32x64xf16, #DB>") < out.index("scf.for")
    big = small.replace("64x32x", "128x64x").replace("32x64x", "64x128x").replace("64x64x", "128x128x")
    big = big.replace("#FA", str(fma_operand_layout(B4, 0, 64))).replace("#FB", str(fma_operand_layout(B4, 1, 64)))
    out = run([AccelerateDot()], big)
    assert out.index("gpu.convert_layout %a") < out.index("scf.for") < out.index("gpu.convert_layout %b")


def dot_func(m: int, n: int, k: int, el: str, acc: str, precision: str = "tf32", warps: int = 4,
             target: str = "sm_90a") -> str:
    return (head(3, warps, target) + f"""
        ^bb(%a: tensor<{m}x{k}x{el}>, %b: tensor<{k}x{n}x{el}>, %c: tensor<{m}x{n}x{acc}>, %out: tensor<{m}x{n}xptr<{acc}>>):
          %d = tt.dot %a, %b, %c {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : tensor<{m}x{n}x{acc}>
          tt.store %out, %d
          tt.return
        }}""")


@pytest.mark.parametrize("m, n, k, el, acc, precision, target, expect", [
    (64, 64, 32, "f16", "f32", "tf32", "sm_90", ("mma", 2, (2, 2))),
    (64, 64, 32, "bf16", "f32", "tf32", "sm_80", ("mma", 2, (2, 2))),
    (64, 64, 32, "f16", "f16", "tf32", "sm_90", ("mma", 2, (2, 2))),
    (128, 32, 16, "f32", "f32", "tf32", "sm_80", ("mma", 1, (4, 1))),
    (64, 64, 16, "f32", "f32", "tf32x3", "sm_90a", ("mma", 1, (2, 2))),
    (64, 64, 64, "i8", "i32", "tf32", "sm_90", ("mma", 4, (2, 2))),
    (64, 64, 64, "u8", "i32", "tf32", "sm_80", ("mma", 4, (2, 2))),
    (64, 64, 32, "f32", "f32", "ieee", "sm_90a", ("fma",)),
    (64, 64, 32, "f64", "f64", "tf32", "sm_90a", ("fma",)),
    (64, 64, 32, "f8e4nv", "f32", "tf32", "sm_90", ("fma",)),
    (8, 64, 32, "f16", "f32", "tf32", "sm_90a", ("fma",)),    # M < 16
    (64, 4, 32, "f16", "f32", "tf32", "sm_90a", ("fma",)),    # N < 8
    (64, 64, 8, "f16", "f32", "tf32", "sm_90a", ("fma",)),    # K < 16
    (64, 64, 16, "i8", "i32", "tf32", "sm_90a", ("fma",)),    # K < 32
    (64, 64, 32, "f16", "f32", "tf32", "sm_75", ("fma",)),
])
def test_mma_or_fma(m, n, k, el, acc, precision, target, expect):
    from tile.opt.to_gpu import ConvertToGpu

    func = parse_op(dot_func(m, n, k, el, acc, precision, target=target).replace(head(3, 4, target), (
        '{sym_name = "k"} {').join(["tt.func ", ""])))
    for p in (ConvertToGpu(4, target), AccelerateDot()):
        p.run(func)
        verify(func)
        verify_layouts(func)
    dot = next(op for op in func.walk() if op.name == "tt.dot")
    layout = dot.result.type.layout
    a, b = (v.type.layout for v in dot.operands[:2])
    if expect[0] == "mma":
        assert layout == MmaLayout(2, expect[2])
        assert (a, b) == (DotOperandLayout(0, layout, expect[1]), DotOperandLayout(1, layout, expect[1]))
    else:
        assert isinstance(layout, BlockedLayout)
        assert (a, b) == (fma_operand_layout(layout, 0, k), fma_operand_layout(layout, 1, k))


def test_fma_result_layout_gives_square_blocks():
    func = parse_op(dot_func(64, 64, 32, "f32", "f32", "ieee").replace(head(), '{sym_name = "k"} {'.join(
        ["tt.func ", ""])))
    from tile.opt.to_gpu import ConvertToGpu

    ConvertToGpu(4, "sm_90a").run(func)
    AccelerateDot().run(func)
    dot = next(op for op in func.walk() if op.name == "tt.dot")
    # 32 results per thread as 4 rows x 8 columns: 4 * 32 + 8 * 32 operand registers
    assert dot.result.type.layout == BlockedLayout((4, 8), (4, 8), (4, 1), (1, 0))


@pytest.mark.parametrize("shape, warps, expect", [
    ((128, 128), 4, (2, 2)), ((128, 128), 8, (4, 2)), ((128, 256), 8, (2, 4)), ((256, 128), 8, (4, 2)),
    ((64, 64), 4, (2, 2)), ((16, 64), 4, (1, 4)), ((64, 16), 4, (4, 1)), ((16, 8), 4, (1, 4)), ((32, 256), 4, (1, 4)),
])
def test_warps_per_tile_like_triton(shape, warps, expect):
    assert warps_per_tile(shape, warps) == expect


def test_mma_capable_targets():
    assert mma_capable("sm_80", 32) and mma_capable("sm_90a", 32) and mma_capable("sm_120", 32)
    assert not mma_capable("sm_75", 32) and not mma_capable("gfx942", 64) and not mma_capable("sm_90", 64)


# ------------------------------------------------------------------------- operand staging


def test_staging_stores_both_operands_before_loading_either():
    out = run([ConvertThroughShared()], head() + """
        ^bb(%a: tensor<64x32xf16, #G>, %b: tensor<32x64xf16, #H>, %c: tensor<64x64xf32, #M>, %out: tensor<64x64xptr<f32>, #M>):
          %fa = gpu.convert_layout %a : tensor<64x32xf16, #DA>
          %fb = gpu.convert_layout %b : tensor<32x64xf16, #DB>
          %d = tt.dot %fa, %fb, %c {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #M>
          tt.store %out, %d
          tt.return
        }""")
    same(out, head() + """
        ^bb(%a: tensor<64x32xf16, #G>, %b: tensor<32x64xf16, #H>, %c: tensor<64x64xf32, #M>, %out: tensor<64x64xptr<f32>, #M>):
          %0 = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #XA>
          gpu.local_store %0, %a
          %1 = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x64xf16, #XB>
          gpu.local_store %1, %b
          %fa = gpu.local_load %0 : tensor<64x32xf16, #DA>
          %fb = gpu.local_load %1 : tensor<32x64xf16, #DB>
          %d = tt.dot %fa, %fb, %c {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #M>
          tt.store %out, %d
          tt.return
        }""")


# ------------------------------------------------------------------------- pipelining

LOOP = """
^bb(%p0: tensor<16x16xptr<f16>, #L>, %out: tensor<16x16xptr<f32>, #N>, %n: i32):
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %acc0 = arith.constant {value = 0.0} : tensor<16x16xf32, #N>
  %fb = arith.constant {value = 1.0} : tensor<16x16xf16, #EB>
  %c16 = arith.constant {value = 16} : tensor<16x16xi32, #L>
  %r, %p = scf.for %c0, %n, %STEP, %acc0, %p0 : tensor<16x16xf32, #N>, tensor<16x16xptr<f16>, #L> {
  ^bb(%k: i32, %acc: tensor<16x16xf32, #N>, %pk: tensor<16x16xptr<f16>, #L>):
    %x = tt.load %pkLOAD_TAIL : tensor<16x16xf16, #L>
    %buf = gpu.local_alloc {bytes = 512, offset = -1} : tensor<16x16xf16, #SA>
    gpu.local_store %buf, %x
    %fa = gpu.local_load %buf : tensor<16x16xf16, #EA>
    %d = tt.dot %fa, %fb, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<16x16xf32, #N>
    %pn = tt.addptr %pk, %c16 : tensor<16x16xptr<f16>, #L>
    scf.yield %d, %pn
  }
  tt.store %out, %r
  tt.return
}"""


def loop(stages: int, load_tail: str = " {vector = 8}", step: str = "c1") -> str:
    return head(stages, 1) + LOOP.replace("LOAD_TAIL", load_tail).replace("%STEP", "%" + step)


def test_pipeline_three_stages():
    same(run([Pipeline(), AllocShared(), InsertBarriers()], loop(3)), """
        tt.func {num_stages = 3, num_warps = 1, shared_bytes = 1536, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%p0: tensor<16x16xptr<f16>, #L>, %out: tensor<16x16xptr<f32>, #N>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %acc0 = arith.constant {value = 0.0} : tensor<16x16xf32, #N>
          %fb = arith.constant {value = 1.0} : tensor<16x16xf16, #EB>
          %0 = arith.constant {value = 16} : i64
          %1 = arith.constant {value = 0} : i64
          %2 = gpu.local_alloc {bytes = 1536, offset = 0} : tensor<3x16x16xf16, #SA3>
          %3 = tt.splat %1 : tensor<16x16xi64, #L>
          %4 = tt.addptr %p0, %3 : tensor<16x16xptr<f16>, #L>
          %5 = arith.add %1, %0 : i64
          %6 = arith.constant {value = 0} : i32
          %7 = arith.cmp %c0, %n {predicate = "lt"} : i1
          %8 = tt.splat %7 : tensor<16x16xi1, #L>
          %9 = gpu.local_view %2, %6 : tensor<16x16xf16, #SA>
          gpu.async_copy %9, %4, %8 {vector = 8}
          gpu.async_commit
          %10 = arith.constant {value = 1} : i32
          %11 = arith.add %c0, %10 : i32
          %12 = tt.splat %5 : tensor<16x16xi64, #L>
          %13 = tt.addptr %p0, %12 : tensor<16x16xptr<f16>, #L>
          %14 = arith.add %5, %0 : i64
          %15 = arith.cmp %11, %n {predicate = "lt"} : i1
          %16 = tt.splat %15 : tensor<16x16xi1, #L>
          %17 = gpu.local_view %2, %10 : tensor<16x16xf16, #SA>
          gpu.async_copy %17, %13, %16 {vector = 8}
          gpu.async_commit
          %18 = arith.constant {value = 2} : i32
          %19 = arith.constant {value = 3} : i32
          %r, %p, %20 = scf.for %c0, %n, %c1, %acc0, %14, %6 : tensor<16x16xf32, #N>, i64, i32 {
          ^bb(%k: i32, %acc: tensor<16x16xf32, #N>, %pk: i64, %stage: i32):
            gpu.async_wait {pending = 1}
            %21 = arith.add %k, %18 : i32
            %22 = tt.splat %pk : tensor<16x16xi64, #L>
            %23 = tt.addptr %p0, %22 : tensor<16x16xptr<f16>, #L>
            %24 = arith.add %pk, %0 : i64
            %25 = arith.add %stage, %18 : i32
            %26 = arith.cmp %25, %19 {predicate = "ge"} : i1
            %27 = arith.sub %25, %19 : i32
            %28 = arith.select %26, %27, %25 : i32
            %29 = arith.cmp %21, %n {predicate = "lt"} : i1
            %30 = tt.splat %29 : tensor<16x16xi1, #L>
            %31 = gpu.local_view %2, %28 : tensor<16x16xf16, #SA>
            gpu.barrier
            gpu.async_copy %31, %23, %30 {vector = 8}
            gpu.async_commit
            %32 = gpu.local_view %2, %stage : tensor<16x16xf16, #SA>
            %fa = gpu.local_load %32 : tensor<16x16xf16, #EA>
            %d = tt.dot %fa, %fb, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<16x16xf32, #N>
            %33 = arith.add %stage, %10 : i32
            %34 = arith.cmp %33, %19 {predicate = "ge"} : i1
            %35 = arith.sub %33, %19 : i32
            %36 = arith.select %34, %35, %33 : i32
            scf.yield %d, %24, %36
          }
          gpu.async_wait {pending = 0}
          tt.store %out, %r
          tt.return
        }""")


def test_one_stage_keeps_synchronous_staging_with_a_scalar_pointer_offset():
    same(run([Pipeline(), AllocShared(), InsertBarriers()], loop(1, ", %mask, %zero {vector = 8}").replace(
        "%c16 = ", "%mask = arith.constant {value = true} : tensor<16x16xi1, #L>\n  "
                   "%zero = arith.constant {value = 0.0} : tensor<16x16xf16, #L>\n  %c16 = ")), """
        tt.func {num_stages = 1, num_warps = 1, shared_bytes = 512, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
        ^bb(%p0: tensor<16x16xptr<f16>, #L>, %out: tensor<16x16xptr<f32>, #N>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %acc0 = arith.constant {value = 0.0} : tensor<16x16xf32, #N>
          %fb = arith.constant {value = 1.0} : tensor<16x16xf16, #EB>
          %mask = arith.constant {value = true} : tensor<16x16xi1, #L>
          %zero = arith.constant {value = 0.0} : tensor<16x16xf16, #L>
          %0 = arith.constant {value = 16} : i64
          %1 = arith.constant {value = 0} : i64
          %r, %p = scf.for %c0, %n, %c1, %acc0, %1 : tensor<16x16xf32, #N>, i64 {
          ^bb(%k: i32, %acc: tensor<16x16xf32, #N>, %pk: i64):
            %2 = tt.splat %pk : tensor<16x16xi64, #L>
            %3 = tt.addptr %p0, %2 : tensor<16x16xptr<f16>, #L>
            %x = tt.load %3, %mask, %zero {vector = 8} : tensor<16x16xf16, #L>
            %buf = gpu.local_alloc {bytes = 512, offset = 0} : tensor<16x16xf16, #SA>
            gpu.barrier
            gpu.local_store %buf, %x
            gpu.barrier
            %fa = gpu.local_load %buf : tensor<16x16xf16, #EA>
            %d = tt.dot %fa, %fb, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<16x16xf32, #N>
            %4 = arith.add %pk, %0 : i64
            scf.yield %d, %4
          }
          tt.store %out, %r
          tt.return
        }""")


def ops_named(text: str, name: str) -> int:
    return sum(line.strip().startswith(name) or f"= {name} " in line for line in text.splitlines())


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipeline_prologue_and_waits(stages):
    out = run([Pipeline(), AllocShared(), InsertBarriers()], loop(stages, ", %mask {vector = 8}").replace(
        "%c16 = ", "%mask = arith.constant {value = true} : tensor<16x16xi1, #L>\n  %c16 = "))
    assert ops_named(out, "gpu.async_copy") == stages  # stages - 1 in the prologue, one in the loop
    assert ops_named(out, "gpu.async_commit") == stages
    assert f"gpu.async_wait {{pending = {stages - 2}}}" in out and "gpu.async_wait {pending = 0}" in out
    assert ops_named(out, "gpu.barrier") == 1
    assert f"tensor<{stages}x16x16xf16, #SA3>" in out
    assert ops_named(out, "arith.and") == stages  # the load's mask, and "the iteration exists"


@pytest.mark.parametrize("tail, step", [
    (" {vector = 1}", "c1"),               # 2 bytes: cp.async moves 4, 8 or 16
    (", %mask, %one {vector = 8}", "c1"),  # masked-off elements would not be zero
    (" {vector = 8}", "n"),                # the step is not a known positive constant
])
def test_loops_that_are_not_pipelined(tail, step):
    out = run([Pipeline()], loop(3, tail, step).replace(
        "%c16 = ", "%mask = arith.constant {value = true} : tensor<16x16xi1, #L>\n  "
                   "%one = arith.constant {value = 1.0} : tensor<16x16xf16, #L>\n  %c16 = "))
    assert "async_copy" not in out and "gpu.local_store" in out


def test_pointer_results_used_after_the_loop_are_rebuilt():
    text = loop(1).replace("  tt.store %out, %r\n", "  tt.store %out, %r\n  %v = tt.load %p : tensor<16x16xf16, #L>\n")
    out = run([Pipeline()], text)
    assert "%r, %p = scf.for %c0, %n, %c1, %acc0, %1 : tensor<16x16xf32, #N>, i64" in out
    assert "%5 = tt.splat %p : tensor<16x16xi64, #L>\n  %6 = tt.addptr %p0, %5" in out


# ------------------------------------------------------------------------- barriers and allocation


WRAP_BY_REM = """%w = arith.rem %t, %three : i32"""
WRAP_BY_SELECT = """%over = arith.cmp %t, %three {predicate = "ge"} : i1
          %less = arith.sub %t, %three : i32
          %w = arith.select %over, %less, %t : i32"""
WRAP_BY_FOLDED_SELECT = """%over = arith.cmp %t, %three {predicate = "ge"} : i1
          %minus1 = arith.constant {value = -1} : i32
          %less = arith.add %s, %minus1 : i32
          %w = arith.select %over, %less, %t : i32"""


@pytest.mark.parametrize("wrap", [WRAP_BY_REM, WRAP_BY_SELECT, WRAP_BY_FOLDED_SELECT])
def test_barriers_distinguish_stages_of_one_buffer(wrap: str):
    """Reads of stage %s and the copy into stage (%s + 2) rem 3 (written as the pipeliner writes
    it, or as arith.rem) need no barrier between them; reading what a copy wrote needs the wait and
    then a barrier."""
    out = run([InsertBarriers()], head(3, 1) + """
        ^bb(%p: tensor<16x16xptr<f16>, #L>, %s: i32):
          %three = arith.constant {value = 3} : i32
          %two = arith.constant {value = 2} : i32
          %buf = gpu.local_alloc {bytes = 1536, offset = 0} : tensor<3x16x16xf16, #SA3>
          %cur = gpu.local_view %buf, %s : tensor<16x16xf16, #SA>
          %x = gpu.local_load %cur : tensor<16x16xf16, #EA>
          %t = arith.add %s, %two : i32
          WRAP
          %next = gpu.local_view %buf, %w : tensor<16x16xf16, #SA>
          gpu.async_copy %next, %p {vector = 8}
          gpu.async_commit
          %y = gpu.local_load %cur : tensor<16x16xf16, #EA>
          gpu.async_wait {pending = 0}
          %z = gpu.local_load %next : tensor<16x16xf16, #EA>
          gpu.async_copy %cur, %p {vector = 8}
          gpu.async_copy %next, %p {vector = 8}
          tt.return
        }""".replace("WRAP", wrap))
    lines = [line.strip() for line in out.splitlines()]
    assert lines.count("gpu.barrier") == 2
    assert lines[lines.index("gpu.async_wait {pending = 0}") + 1] == "gpu.barrier"  # RAW of the copy
    # that barrier also ends the reads of %cur: its copy may go; the copy into %next waits for %z
    last = len(lines) - 1 - lines[::-1].index("gpu.async_copy %next, %p {vector = 8}")
    assert lines[last - 1] == "gpu.barrier"


def test_multi_buffered_allocations_live_through_their_views_and_align_to_128_bytes():
    out = run([AllocShared()], head(3, 1) + """
        ^bb(%p: tensor<16x16xptr<f16>, #L>, %x: tensor<16x16xf16, #L>, %n: i32):
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %small = gpu.local_alloc {bytes = 16, offset = -1} : tensor<8xf16, #shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>>
          %buf = gpu.local_alloc {bytes = 1536, offset = -1} : tensor<3x16x16xf16, #SA3>
          %other = gpu.local_alloc {bytes = 512, offset = -1} : tensor<16x16xf16, #SA>
          scf.for %c0, %n, %c1 {
          ^bb(%k: i32):
            %v = gpu.local_view %buf, %k : tensor<16x16xf16, #SA>
            gpu.async_copy %v, %p {vector = 8}
            gpu.local_store %other, %x
            scf.yield
          }
          tt.return
        }""")
    assert "%buf = gpu.local_alloc {bytes = 1536, offset = 0}" in out
    assert "%other = gpu.local_alloc {bytes = 512, offset = 1536}" in out  # overlaps %buf's lifetime
    assert "%small = gpu.local_alloc {bytes = 16, offset = 0}" in out  # dead before
    assert "shared_bytes = 2048" in out


# ------------------------------------------------------------------------- whole matmul kernels

tile = pytest.importorskip("tile")
tl = pytest.importorskip("tile.language")


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, PREC: tl.constexpr, ACC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0)
        acc += tl.dot(a, b, input_precision=PREC)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + offs_cm[:, None] * scm + offs_cn[None, :] * scn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


DTYPES = {  # name: (numpy input, numpy output, input_precision, accumulator, mma)
    "f16": ("float16", "float16", "tf32", "float32", True),
    "bf16": ("bfloat16", "float32", "tf32", "float32", True),
    "tf32": ("float32", "float32", "tf32", "float32", True),
    "ieee": ("float32", "float32", "ieee", "float32", False),
    "i8": ("int8", "int32", "tf32", "int32", True),
}


def bf16_bits(x):
    """bfloat16 bits (round to nearest even) of float32 array `x`, as uint16."""
    import numpy as np

    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + (bits >> 16 & 1)) >> 16).astype(np.uint16)


def matmul_args(dtype: str, m: int, n: int, k: int, a_col_major: bool = False, b_col_major: bool = False,
                seed: int = 0):
    """(a, b, c, runtime args) with random inputs (never zeros) and a poisoned output; bf16
    inputs are their bits (uint16), f16 stands in for them when specializing. The runtime args
    hold an operand's transpose, row-major, when it is column-major."""
    import numpy as np

    src, out, _, _, _ = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    if dtype == "i8":
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (k, n)))
    else:
        a, b = (rng.uniform(0.25, 1, s) * rng.choice([-1, 1], s) for s in ((m, k), (k, n)))
        a, b = (bf16_bits(x) if src == "bfloat16" else x.astype(src) for x in (a, b))
    c = np.full((m, n), -7, dtype=np.int32) if out == "int32" else np.full((m, n), np.nan, dtype=np.dtype(out))
    aa = np.ascontiguousarray(a.T) if a_col_major else a  # column-major: the transpose, row-major
    bb = np.ascontiguousarray(b.T) if b_col_major else b
    sam, sak = (1, m) if a_col_major else (k, 1)
    sbk, sbn = (1, k) if b_col_major else (n, 1)
    spec_args = [x.view(np.float16) if dtype == "bf16" else x for x in (aa, bb)]
    return a, b, c, spec_args + [c, m, n, k, sam, sak, sbk, sbn, n, 1]


def compile_matmul(dtype: str, bm: int, bn: int, bk: int, stages: int, warps: int = 4, m: int = 256, n: int = 256,
                   k: int = 256, target: str = "sm_80", majors: str = "rr"):
    """(gpu IR of matmul_kernel, runtime arguments); bf16 is compiled from f16 with the types
    renamed in the tile IR text."""
    from tile.opt.gpu_pipeline import gpu_passes
    from tile.opt.pass_manager import PassManager
    from tile.opt.tile_pipeline import tile_passes

    _, _, prec, acc, _ = DTYPES[dtype]
    a, b, c, args = matmul_args(dtype, m, n, k, majors[0] == "c", majors[1] == "c")
    meta = dict(BM=bm, BN=bn, BK=bk, PREC=prec, ACC=getattr(tl, acc))
    spec, runtime = matmul_kernel.specialize(args, meta)
    func = matmul_kernel.build_ir(spec)
    if dtype == "bf16":
        func = parse_op(print_op(func).replace("f16", "bf16"))
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(warps, target, num_stages=stages)).run(func)
    verify_layouts(func)
    return func, (a, b, c, runtime)


def _body(func):
    return next(op for op in func.walk() if op.name == "scf.for").regions[0].block


SHAPES = [(16, 16, 16), (32, 64, 32), (64, 32, 64), (64, 64, 16), (128, 64, 32), (64, 128, 64), (128, 128, 32),
          (256, 64, 32), (64, 256, 16), (128, 256, 64), (256, 128, 64), (16, 256, 256), (256, 16, 128)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_matmul_structure(shape, dtype):
    bm, bn, bk = shape
    stages = 1 + (bm + bn + bk) % 4  # every num_stages 1..4 across the shapes
    warps = 8 if bm * bn >= 128 * 256 else 4
    if dtype == "i8" and bk < 32 or dtype == "ieee" and bm * bn * bk > 64 * 64 * 64:
        pytest.skip("mma needs K >= 32 for int8; the FMA path holds all of K in registers")
    func, _ = compile_matmul(dtype, bm, bn, bk, stages, warps, m=512, n=512, k=512)
    body = _body(func)
    dot = next(op for op in body.ops if op.name == "tt.dot")
    result = dot.result.type.layout
    names = [op.name for op in body.ops]
    assert "gpu.convert_layout" not in names  # nothing but the fragments' loads moves data
    assert body.args[1].type.layout == result  # the accumulator stays in its layout
    if not DTYPES[dtype][4]:
        assert isinstance(result, BlockedLayout)
        return
    assert isinstance(result, MmaLayout)
    loads = [op for op in body.ops if op.name == "gpu.local_load"]
    assert [op.result for op in loads] == list(dot.operands[:2])
    assert names.index("tt.dot") - names.index("gpu.local_load") == 2  # fragments load next to the mma
    allocs = [op for op in func.regions[0].block.ops if op.name == "gpu.local_alloc" and op.result.type.rank == 3]
    if stages == 1:
        assert names.count("gpu.local_store") == 2 and names.count("gpu.barrier") == 2 and not allocs
        return
    assert names.count("gpu.async_copy") == 2 and names.count("gpu.barrier") == 1 and "tt.load" not in names
    assert names.index("gpu.barrier") < names.index("gpu.async_copy") < names.index("gpu.local_load")
    assert [a.result.type.shape[0] for a in allocs] == [stages, stages]
    waits = [op.attrs["pending"] for op in func.walk() if op.name == "gpu.async_wait"]
    assert waits == [stages - 2, 0]


def reference(dtype: str, a, b):
    import numpy as np

    if dtype == "bf16":
        a, b = ((x.astype(np.uint32) << 16).view(np.float32) for x in (a, b))
    if dtype == "tf32":  # the tensor cores see inputs rounded to 10 mantissa bits
        a, b = ((x.view(np.uint32) + 0x1000 & 0xFFFFE000).view(np.float32) for x in (a, b))
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


NUMERIC_CASES = [  # dtype, (M, N, K), (BM, BN, BK), stages, warps, A and B row- or column-major
    ("f16", (50, 40, 70), (32, 32, 16), 1, 4, "rr"),
    ("f16", (50, 40, 70), (32, 32, 16), 2, 4, "rr"),
    ("f16", (64, 48, 96), (32, 32, 32), 3, 4, "cr"),
    ("f16", (40, 64, 80), (32, 64, 16), 4, 4, "rc"),
    ("f16", (128, 64, 64), (128, 64, 32), 3, 8, "rr"),
    ("bf16", (64, 64, 64), (32, 32, 32), 3, 4, "rr"),
    ("tf32", (48, 40, 40), (32, 32, 16), 2, 4, "rr"),
    ("tf32", (32, 32, 32), (32, 32, 16), 3, 4, "cc"),
    ("ieee", (33, 20, 24), (16, 16, 16), 3, 4, "rr"),
    ("i8", (64, 40, 96), (32, 32, 32), 3, 4, "rr"),
    ("i8", (32, 32, 64), (32, 32, 32), 2, 4, "rc"),
]


@pytest.mark.parametrize("dtype, size, tile_shape, stages, warps, majors", NUMERIC_CASES)
def test_matmul_on_the_emulator(dtype, size, tile_shape, stages, warps, majors):
    """Lowered and run thread by thread (mma.sync, ldmatrix, cp.async with its groups, barriers:
    the emulator reports shared-memory races) against NumPy in float64."""
    import numpy as np
    from codegen_util import result, run as run_simt
    from tile.codegen.lower import lower_to_simt

    (m, n, k), (bm, bn, bk) = size, tile_shape
    func, (a, b, c, runtime) = compile_matmul(dtype, bm, bn, bk, stages, warps, m, n, k, majors=majors)
    machine, dev = run_simt(lower_to_simt(func), (-(-m // bm), -(-n // bn), 1), runtime)
    out = result(machine, dev[2], c).astype(np.float64)
    want = reference(dtype, a, b)
    tol = {"f16": 2e-3, "bf16": 1e-5, "tf32": 1e-3, "ieee": 1e-5, "i8": 0}[dtype]
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol * np.sqrt(k))


PTXAS_CASES = [  # dtype, (BM, BN, BK), stages, warps: the 4096^3 configurations and one of each type
    ("f16", (128, 256, 64), 3, 8), ("f16", (128, 128, 64), 4, 4), ("f16", (64, 64, 32), 2, 4),
    ("f16", (32, 32, 16), 1, 4), ("bf16", (128, 128, 32), 3, 4), ("tf32", (64, 64, 32), 3, 4),
    ("ieee", (32, 32, 16), 2, 4), ("i8", (128, 128, 64), 3, 4),
]


@pytest.mark.parametrize("dtype, tile_shape, stages, warps", PTXAS_CASES)
def test_matmul_ptx_assembles_without_spills(dtype, tile_shape, stages, warps):
    from ptxas_util import assemble_ok
    from tile.codegen.lower import lower_to_simt
    from tile.codegen.ptx import emit_ptx

    func, _ = compile_matmul(dtype, *tile_shape, stages, warps, m=4096, n=4096, k=4096)
    simt = lower_to_simt(func)
    for arch in ("sm_80", "sm_90a"):
        info = assemble_ok(emit_ptx(simt, target=arch), arch)
        assert info.spill_stores == 0 and info.spill_loads == 0, (arch, info)


@tile.jit
def matmul_nt_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B^T with B stored N x K row-major, loaded as N x K tiles and transposed (attention's
    Q @ K^T)."""
    offs_m = (tl.program_id(0) * BM + tl.arange(0, BM)) % M
    offs_n = (tl.program_id(1) * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[:, None] * K + offs_k[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
        a_ptrs += BK
        b_ptrs += BK
    offs_cm = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@pytest.mark.parametrize("stages", [1, 3])
def test_transposed_operand_is_pipelined(stages):
    import numpy as np
    from codegen_util import result, run as run_simt
    from tile.codegen.lower import lower_to_simt
    from tile.opt.gpu_pipeline import gpu_passes
    from tile.opt.pass_manager import PassManager
    from tile.opt.tile_pipeline import tile_passes

    m, n, k, bm, bn, bk = 48, 40, 64, 32, 32, 16  # K a multiple of 16: 16-byte copies
    rng = np.random.default_rng(1)
    a, b = (rng.uniform(0.25, 1, s).astype(np.float16) * rng.choice([-1, 1], s).astype(np.float16)
            for s in ((m, k), (n, k)))
    c = np.full((m, n), np.nan, dtype=np.float32)
    spec, runtime = matmul_nt_kernel.specialize([a, b, c, m, n, k], dict(BM=bm, BN=bn, BK=bk))
    func = matmul_nt_kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(4, "sm_90a", num_stages=stages)).run(func)
    names = [op.name for op in _body(func).ops]
    assert names.count("gpu.async_copy") == (2 if stages > 1 else 0) and "gpu.convert_layout" not in names
    machine, dev = run_simt(lower_to_simt(func), (-(-m // bm), -(-n // bn), 1), runtime)
    out = result(machine, dev[2], c)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5, atol=1e-4)


@tile.jit
def shared_operand_kernel(a_ptr, b_ptr, x_ptr, c_ptr, d_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """C = A @ B and D = sum over k-blocks of X @ B_k^T: each K-block of B feeds one dot as it is
    and another transposed (Q^T and dO in attention's backward are loaded once, used twice)."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BN + offs_n[None, :]
    x = tl.load(x_ptr + offs_m[:, None] * BN + offs_n[None, :])
    c = tl.zeros((BM, BN), dtype=tl.float32)
    d = tl.zeros((BM, BK), dtype=tl.float32)
    for k in range(0, K, BK):
        b = tl.load(b_ptrs)
        c = tl.dot(tl.load(a_ptrs), b, c)
        d = tl.dot(x, tl.trans(b), d)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], c)
    tl.store(d_ptr + offs_m[:, None] * BK + offs_k[None, :], d)


@pytest.mark.parametrize("target, shared_limit, shared", [("sm_80", None, True), ("sm_90a", None, True),
                                                          ("sm_80", None, False), ("sm_90a", 40960, False)])
def test_a_tile_two_dots_read_is_staged_once_and_pipelined(target, shared_limit, shared):
    """The loaded B block feeds two dots, as is and transposed: share-transposed-buffers stages it
    once (the second dot reads it through gpu.local_trans), and its one cp.async copy is issued
    ahead; the load itself leaves the loop, and the results are right. Without that pass it goes
    to two buffers, each copied ahead; and when those two rings would not fit the shared memory
    beside the others (40 KiB here: 44 KiB with them), B's load stays synchronous and A alone is
    copied ahead."""
    import numpy as np
    from codegen_util import result, run as run_simt
    from tile.codegen.lower import lower_to_simt
    from tile.opt.gpu_pipeline import gpu_passes
    from tile.opt.pass_manager import PassManager
    from tile.opt.tile_pipeline import tile_passes

    bm, bn, bk, k = 64, 64, 32, 128
    rng = np.random.default_rng(2)
    a, b, x = (rng.uniform(0.25, 1, s).astype(np.float16) * rng.choice([-1, 1], s).astype(np.float16)
               for s in ((bm, k), (k, bn), (bm, bn)))
    c, d = np.full((bm, bn), np.nan, np.float32), np.full((bm, bk), np.nan, np.float32)
    spec, runtime = shared_operand_kernel.specialize([a, b, x, c, d, k], dict(BM=bm, BN=bn, BK=bk))
    func = shared_operand_kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    passes = gpu_passes(4, target, num_stages=3, shared_limit=shared_limit)
    PassManager([p for p in passes if shared or p.name != "share-transposed-buffers"]).run(func)
    names = [op.name for op in _body(func).ops]
    if shared:
        assert names.count("gpu.async_copy") == 2 and names.count("gpu.local_trans") == 1 and "tt.load" not in names
    elif shared_limit is None:
        assert names.count("gpu.async_copy") == 3 and "tt.load" not in names and "gpu.local_trans" not in names
    else:
        assert names.count("gpu.async_copy") == 1 and names.count("tt.load") == 1
        assert func.attrs["shared_bytes"] <= shared_limit
    machine, dev = run_simt(lower_to_simt(func), (1, 1, 1), runtime)
    a64, b64, x64 = (v.astype(np.float64) for v in (a, b, x))
    np.testing.assert_allclose(result(machine, dev[3], c), a64 @ b64, rtol=1e-5, atol=1e-3)
    want = sum(x64 @ b64[i:i + bk].T for i in range(0, k, bk))
    np.testing.assert_allclose(result(machine, dev[4], d), want, rtol=1e-5, atol=1e-3)
