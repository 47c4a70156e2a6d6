"""tile.viz: the pictures hold the facts of the objects they draw (ownership from the layout's index
math, bank conflicts from the shared layout's addresses, the pipeline schedule from gpu IR), and
render as well-formed SVG and as text."""
from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, shared_for_dot, wgmma_shared
from tile.ir.layouts import BlockedLayout, LinearEncoding, SharedLayout, SliceLayout, blocked_layout
from tile.runtime.ptxas import find_ptxas
from tile.viz import show_layout
from tile.viz.swizzle import show_swizzle
from tile.viz.timeline import PipelineFigure, show_pipeline

SVG = "{http://www.w3.org/2000/svg}"


def svg_root(figure) -> ET.Element:
    root = ET.fromstring(figure.svg())
    assert root.tag == SVG + "svg"
    return root


def test_show_layout_is_exported() -> None:
    assert tile.show_layout is show_layout


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_blocked_ownership_matches_the_layout(data) -> None:
    spt = tuple(data.draw(st.sampled_from([1, 2, 4])) for _ in range(2))
    lanes_row = data.draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    warps_row = data.draw(st.sampled_from([1, 2]))
    order = data.draw(st.sampled_from([(1, 0), (0, 1)]))
    layout = BlockedLayout(spt, (lanes_row, 32 // lanes_row), (warps_row, 2 // warps_row), order)
    shape = (data.draw(st.sampled_from([4, 8, 16])), data.draw(st.sampled_from([4, 8, 16, 32])))
    check_ownership(layout, shape)


def check_ownership(layout, shape) -> None:
    """The figure lists exactly the (warp, lane, register) slots the layout maps to each element."""
    fig = show_layout(layout, shape)
    linear = layout.to_linear(shape)
    for warp in range(linear.num_warps):
        for lane in range(linear.num_lanes):
            for reg in range(linear.num_registers):
                i, j = (0, *linear.apply(reg, lane, warp)) if len(shape) == 1 else linear.apply(reg, lane, warp)
                assert (warp, lane, reg) in fig.owners[i][j]
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    slots = sum(fig.holders(i, j) for i in range(rows) for j in range(cols))
    assert slots == linear.num_warps * linear.num_lanes * linear.num_registers
    assert fig.registers_per_thread == linear.num_registers
    assert len(str(fig).splitlines()) == 2 + rows  # header, column numbers, one line per row


MMA2 = MmaLayout(2, (2, 2))
MMA3 = MmaLayout(3, (4, 1), (16, 32))


@pytest.mark.parametrize("layout,shape", [
    (MMA2, (64, 32)), (DotOperandLayout(0, MMA2, 2), (32, 32)), (DotOperandLayout(1, MMA2, 4), (64, 16)),
    (MMA3, (64, 32)), (DotOperandLayout(0, MMA3, 2), (64, 16)),
    (SliceLayout(0, BlockedLayout((1, 4), (4, 8), (2, 2), (1, 0))), (64,)),
    (BlockedLayout((2, 1), (8, 8), (1, 1), (0, 1)), (16, 8)),  # a 64-lane wave (AMD)
    (LinearEncoding(BlockedLayout((1, 2), (4, 8), (1, 1), (1, 0)).to_linear((8, 16)).transpose((1, 0))), (16, 8)),
])
def test_ownership_of_every_layout_kind(layout, shape) -> None:
    check_ownership(layout, shape)


def test_blocked_picture_text_and_svg() -> None:
    fig = show_layout(BlockedLayout((1, 2), (4, 8), (1, 1), (1, 0)), (4, 16))
    rows = str(fig).splitlines()
    assert rows[2].split()[1:5] == ["T0:0", "T0:1", "T1:0", "T1:1"]  # thread 0 holds two columns
    assert rows[3].split()[1] == "T8:0"  # the next row starts at lane 8
    root = svg_root(fig)
    assert len(root.findall(SVG + "rect")) == 1 + 4 * 16  # background and one box per element


def test_mma_accumulator_fragment() -> None:
    fig = show_layout(MmaLayout(2, (1, 1)), (16, 8))
    # lane l holds row l // 4 (+8), columns 2 (l % 4) + {0, 1}: PTX's m16n8 C fragment
    for lane in range(32):
        g, t = divmod(lane, 4)
        assert fig.owners[g][2 * t] == [(0, lane, 0)] and fig.owners[g][2 * t + 1] == [(0, lane, 1)]
        assert fig.owners[g + 8][2 * t] == [(0, lane, 2)] and fig.owners[g + 8][2 * t + 1] == [(0, lane, 3)]


def test_dot_operand_is_replicated_over_warp_columns() -> None:
    parent = MmaLayout(2, (1, 2))
    fig = show_layout(DotOperandLayout(0, parent, 2), (16, 16))
    assert all(fig.holders(i, j) == 2 for i in range(16) for j in range(16))  # both warp columns hold A
    assert "+1" in str(fig)


def test_wgmma_accumulator_covers_64_rows_per_warp_group() -> None:
    fig = show_layout(MmaLayout(3, (4, 1), (16, 16)), (64, 16))
    warps_of_row = [{w for w, _, _ in fig.owners[i][0]} for i in range(64)]
    assert warps_of_row == [{i // 16} for i in range(64)]


def test_slice_layout_replicates_along_the_removed_dimension() -> None:
    parent = BlockedLayout((1, 1), (4, 8), (1, 1), (1, 0))
    fig = show_layout(SliceLayout(1, parent), (4,))
    assert [fig.holders(0, j) for j in range(4)] == [8, 8, 8, 8]  # the 8 lanes of a row hold it


def test_shared_layout_banks() -> None:
    fig = show_layout(SharedLayout(8, 1, 8, (1, 0)), (8, 64), element_bytes=2)
    assert sorted(fig.offsets.ravel().tolist()) == list(range(8 * 64))
    assert fig.banks[1, 0] == 4  # row 1's first chunk is swizzled to chunk 1 (bytes 16..31 of its line)
    svg_root(fig)


@pytest.mark.parametrize("bad", [42, "#blocked<...>", np.zeros((4, 4))])
def test_show_layout_rejects_what_is_not_a_layout(bad) -> None:
    with pytest.raises(TypeError, match=f"show_layout expects a tile layout.*not {type(bad).__name__}"):
        show_layout(bad, (4, 4))


def test_show_layout_rejects_rank_3() -> None:
    with pytest.raises(ValueError, match="rank 1 or 2"):
        show_layout(BlockedLayout((1, 1, 1), (1, 1, 32), (1, 1, 1), (2, 1, 0)), (2, 2, 32))


def test_unswizzled_ldmatrix_conflicts_eight_ways() -> None:
    fig = show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (32, 64), 2)  # f16 rows of 128 bytes
    assert {p.wavefronts for p in fig.phases["ldmatrix"]} == {8}
    assert fig.conflicts["ldmatrix"] == len(fig.phases["ldmatrix"]) * 7 == 32 * 7
    assert fig.conflicts["store"] == 0  # row-major 16-byte stores fill whole lines


@pytest.mark.parametrize("shape,element_bytes,op_idx", [((32, 64), 2, 0), ((64, 32), 2, 0), ((32, 128), 1, 0),
                                                         ((64, 32), 4, 0), ((32, 64), 2, 1)])
def test_swizzled_operand_buffer_is_conflict_free(shape, element_bytes, op_idx) -> None:
    layout = shared_for_dot(shape, element_bytes, op_idx, (1, 0))
    fig = show_swizzle(layout, shape, element_bytes)
    assert fig.conflicts == {"ldmatrix": 0, "store": 0}


def test_narrow_rows_conflict_when_unswizzled() -> None:
    # f16 rows of 64 bytes: an ldmatrix matrix's 8 rows fall in two 128-byte lines, 4-way conflicts
    fig = show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (16, 32), 2)
    assert {p.wavefronts for p in fig.phases["ldmatrix"]} == {4}


def test_wgmma_swizzle_is_conflict_free() -> None:
    layout = wgmma_shared((64, 64), 2, (1, 0))
    assert show_swizzle(layout, (64, 64), 2).conflicts == {"ldmatrix": 0, "store": 0}


def test_swizzle_picture_outlines_first_phases() -> None:
    fig = show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (8, 64), 2)
    root = svg_root(fig)
    outlined = [r for r in root.findall(SVG + "rect") if r.get("fill") == "none"]
    assert len(outlined) == 8 + 8  # one ldmatrix phase (8 rows) and one store phase (8 lanes)
    assert "8 wavefronts" in str(fig)


def test_swizzle_errors() -> None:
    with pytest.raises(TypeError, match="show_swizzle expects a shared layout"):
        show_swizzle(blocked_layout((8, 8), (1, 1), (1, 0), 1), (8, 8))
    with pytest.raises(ValueError, match="multiple of 8 rows"):
        show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (4, 64))
    with pytest.raises(ValueError, match="not contiguous"):
        show_swizzle(SharedLayout(2, 1, 8, (1, 0)), (8, 64))  # 4-byte swizzle groups break 16-byte rows


def test_save_writes_svg_and_text(tmp_path) -> None:
    fig = show_layout(BlockedLayout((1, 1), (1, 32), (1, 1), (1, 0)), (2, 32))
    ET.parse(fig.save(tmp_path / "layout.svg"))
    assert (tmp_path / "layout.txt").exists() is False
    assert fig.save(tmp_path / "layout.txt").read_text().startswith("#blocked")
    with pytest.raises(ValueError, match="use .svg"):
        fig.save(tmp_path / "layout.jpg")


# ----------------------------------------------------------------------------- pipeline timeline


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


def matmul_gpu_ir(target: str, num_stages: int):
    a, c = np.ones((128, 128), np.float16), np.ones((128, 128), np.float32)
    return tile.dump(matmul_kernel, a, a, c, 128, 128, 128, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, stage="gpu",
                     target=target, num_stages=num_stages)


def check_schedule(fig: PipelineFigure) -> None:
    """Each copy lands in the buffer its iteration's dot reads, and no buffer holds two copies at once."""
    for c in fig.copies:
        assert fig.reads[c.iteration] == c.buffer and c.issued < c.read
    for b in range(fig.num_stages):
        spans = sorted((c.issued, c.read) for c in fig.copies if c.buffer == b)
        assert all(end < start for (_, end), (start, _) in zip(spans, spans[1:]))
    pro = len(fig.prologue_buffers)
    for c in fig.copies[fig.num_stages:]:  # the dot that read the stage before is retired first
        assert fig.dot_retired[c.iteration - fig.num_stages] <= c.issued - pro


@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_timeline_of_a_cp_async_matmul(num_stages: int) -> None:
    fig = show_pipeline(matmul_gpu_ir("sm_80", num_stages))
    assert fig.num_stages == num_stages and fig.lookahead == num_stages - 1
    assert fig.prologue_buffers == list(range(num_stages - 1))
    assert fig.copy_kind == "cp.async" and fig.wait == f"gpu.async_wait {{pending = {num_stages - 2}}}"
    assert fig.async_dots == 0 and len(fig.buffers) == 2  # A and B
    assert fig.dots_in_flight == 0 and fig.dot_retired == list(range(2 * num_stages))
    assert len(fig.copies) == 2 * num_stages
    check_schedule(fig)
    grid = fig.buffer_grid()
    assert len(grid) == num_stages and grid[0][:num_stages] == ["c0"] + ["~"] * (num_stages - 2) + ["M0"]
    root = svg_root(fig)
    # each dot is labelled where it reads its buffer and on the dots row
    assert sum(t.text.startswith("dot ") for t in root.iter(SVG + "text")) == 2 * len(fig.copies)


def test_timeline_of_a_wgmma_matmul() -> None:
    fig = show_pipeline(matmul_gpu_ir("sm_90a", 3), iterations=7)
    assert fig.num_stages == 3 and fig.async_dots == 1 and len(fig.slots) == 2 + 7
    assert fig.dots_in_flight == 1 and fig.dot_retired == [1, 2, 3, 4, 5, 6, 7]
    assert fig.dot_row()[2:5] == ["D0", "D1 r0", "D2 r1"]
    check_schedule(fig)
    assert "async wgmma" in str(fig)


def test_timeline_of_a_tma_ring() -> None:
    from tile.tools.tensor_descriptor import TensorDescriptor

    from test_tma import tma_matmul_kernel

    a, b, c = np.ones((256, 192), np.float16), np.ones((192, 256), np.float16), np.zeros((256, 256), np.float16)
    descs = [TensorDescriptor.from_tensor(x, s) for x, s in ((a, [128, 64]), (b, [64, 128]), (c, [128, 128]))]
    ir = tile.dump(tma_matmul_kernel, *descs, 192, stage="gpu", target="sm_90a", num_stages=4)
    fig = show_pipeline(ir)
    assert (fig.copy_kind, fig.num_stages, fig.lookahead, fig.wait) == ("TMA", 4, 3, "gpu.mbarrier_wait")
    assert not fig.released and "released" not in str(fig)
    check_schedule(fig)
    # a synchronous dot (the accumulator scaled before it): the ring is released on mbarriers
    decaying = show_pipeline(tile.dump(tma_matmul_kernel, *descs, 192, stage="gpu", target="sm_90a", num_stages=3,
                                       DECAY=0.5))
    assert decaying.released and decaying.async_dots == 0
    assert str(decaying).startswith("3 stages, TMA copies issued 2 iteration(s) ahead, wait: gpu.mbarrier_wait, "
                                    "synchronous dots, stages released on mbarriers (no barrier)")
    check_schedule(decaying)


def test_timeline_errors() -> None:
    with pytest.raises(ValueError, match="no pipelined loop"):
        show_pipeline(matmul_gpu_ir("sm_80", 1))
    with pytest.raises(TypeError, match="show_pipeline expects gpu IR"):
        show_pipeline(42)


def test_timeline_refuses_stage_arithmetic_it_cannot_evaluate() -> None:
    text = str(matmul_gpu_ir("sm_80", 3))
    loop = text.index("scf.for")
    with pytest.raises(ValueError, match="cannot evaluate arith.max in a stage index"):
        show_pipeline(text[:loop] + text[loop:].replace("arith.sub", "arith.max"))


# ----------------------------------------------------------------------------- PNG


def test_png_needs_matplotlib(tmp_path, monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # also where matplotlib was imported already
    with pytest.raises(ImportError, match="needs matplotlib"):
        show_layout(MmaLayout(2, (1, 1)), (16, 8)).save(tmp_path / "c.png")


def test_png_with_matplotlib(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    path = show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (8, 64), 2).save(tmp_path / "banks.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def edit_loop_copy(ir_text: str, copy_index: int, edit) -> str:
    """`ir_text` with the gpu.local_view written by the loop's `copy_index`-th copy edited by
    edit(view_line, copy_line) -> (view_line, copy_line)."""
    lines = ir_text.splitlines()
    loop = next(i for i, line in enumerate(lines) if "scf.for" in line)
    copies = [i for i in range(loop, len(lines)) if "gpu.async_copy" in lines[i]]
    at = copies[copy_index]
    dest = re.search(r"async_copy (%\w+)", lines[at]).group(1)
    view = next(i for i in range(at, loop, -1) if lines[i].lstrip().startswith(dest + " = gpu.local_view"))
    lines[view], lines[at] = edit(lines[view], lines[at])
    return "\n".join(lines)


def test_timeline_refuses_copies_at_different_offsets() -> None:
    text = edit_loop_copy(str(matmul_gpu_ir("sm_80", 3)), 1,
                          lambda view, copy: (re.sub(r"(local_view %\w+), %\w+", r"\1, %stage", view), copy))
    with pytest.raises(ValueError, match=r"copies write stages at offsets \[0, 2\]"):
        show_pipeline(text)


def test_timeline_refuses_a_stage_not_computed_from_the_stage_argument() -> None:
    text = edit_loop_copy(str(matmul_gpu_ir("sm_80", 3)), 0,
                          lambda view, copy: (re.sub(r"(local_view %\w+), %\w+", r"\1, %_", view), copy))
    with pytest.raises(ValueError, match="is not computed from the loop's stage"):
        show_pipeline(text)


def test_timeline_refuses_a_copy_into_something_else_than_a_view() -> None:
    text = edit_loop_copy(str(matmul_gpu_ir("sm_80", 3)), 0,
                          lambda view, copy: (view, re.sub(r"async_copy %\w+", "async_copy %a_ptrs", copy)))
    with pytest.raises(ValueError, match="gpu.async_copy does not write a gpu.local_view"):
        show_pipeline(text)


def test_swizzle_refuses_other_ranks_and_element_sizes() -> None:
    with pytest.raises(ValueError, match="2-D buffers of 1, 2 or 4-byte elements"):
        show_swizzle(SharedLayout(1, 1, 1, (2, 1, 0)), (2, 8, 64))
    with pytest.raises(ValueError, match="2-D buffers of 1, 2 or 4-byte elements"):
        show_swizzle(SharedLayout(1, 1, 1, (1, 0)), (8, 64), element_bytes=8)


def test_show_layout_of_a_gpu_tensor_type() -> None:
    from tile.ir import parse_type

    fig = show_layout(parse_type("tensor<16x8xf32, #mma<version = 2, wpc = [1, 1], instr = [16, 8]>>"))
    assert fig.shape == (16, 8) and fig.owners[8][0] == [(0, 0, 2)]
    shared = show_layout(parse_type("tensor<8x32xf32, #shared<vec = 4, per_phase = 1, max_phase = 8, order = [1, 0]>>"))
    assert shared.element_bytes == 4 and shared.banks[1, 0] == 4  # row 1's first 16 bytes moved to bytes 16..31


def test_show_layout_needs_a_shape() -> None:
    from tile.ir import parse_type

    with pytest.raises(TypeError, match="needs the shape"):
        show_layout(MmaLayout(2, (1, 1)))
    with pytest.raises(TypeError, match="needs a gpu-level type"):
        show_layout(parse_type("tensor<16x8xf32>"))
    with pytest.raises(TypeError, match=r"and shape \(16, 8\)"):
        show_layout(parse_type("tensor<16x8xf32, #mma<version = 2, wpc = [1, 1], instr = [16, 8]>>"), (16, 8))


# ------------------------------------------------------------------------------ occupancy


@pytest.mark.parametrize("registers, shared, threads, programs, limits", [
    (128, 98336, 256, 2, ("registers", "shared memory")),   # tutorial 07's forward at S <= 4096
    (163, 229440, 256, 1, ("registers", "shared memory")),  # ... and beyond
    (129, 0, 256, 1, ("registers",)),    # 129 registers are given as 136: 15 warps' worth, not 16
    (32, 0, 128, 16, ("registers", "threads")),
    (0, 0, 32, 32, ("block slots",)),   # a warp still gets one unit of 256 registers
])
def test_occupancy_follows_the_occupancy_calculators_rules(registers, shared, threads, programs, limits) -> None:
    from tile.viz import occupancy

    occ = occupancy(registers, shared, threads, "sm_90a")
    assert (occ.programs, occ.limits) == (programs, limits)
    assert occ.warps == programs * threads // 32
    for resource, fits in occ.by.items():  # `fits` programs fit, one more does not
        assert fits * occ.per_program[resource] <= occ.per_sm[resource] < (fits + 1) * occ.per_program[resource]


def test_occupancy_differs_by_target() -> None:
    from tile.viz import occupancy

    assert occupancy(64, 49152, 256, "sm_90a").programs == 4   # registers: 65536 / (64 * 256)
    assert occupancy(64, 49152, 256, "sm_86").programs == 2    # 100 KiB of shared memory
    assert occupancy(64, 49152, 256, "sm_86").limits == ("shared memory",)


def test_occupancy_rejects_what_it_cannot_judge() -> None:
    from tile.viz import occupancy, show_occupancy

    with pytest.raises(ValueError, match="no occupancy rules for target 'gfx942'; known: sm_80"):
        occupancy(32, 0, 256, "gfx942")
    with pytest.raises(ValueError, match="a positive multiple of 32 threads"):
        occupancy(32, 0, 100, "sm_90a")
    with pytest.raises(TypeError, match="expects a compiled kernel"):
        show_occupancy("attn_fwd")
    with pytest.raises(TypeError, match="or registers, shared_bytes and threads"):
        show_occupancy(registers=32)


def test_occupancy_figure_draws_each_resource() -> None:
    from tile.viz import show_occupancy

    fig = show_occupancy(registers=128, shared_bytes=98336, threads=256)
    text = str(fig)
    assert text.startswith("kernel on sm_90a: 2 programs per SM (16 warps), set by registers and shared memory")
    assert "registers: 32768 a program, 65536 of 65536 at 2" in text
    root = svg_root(fig)
    bars = [r for r in root.iter(SVG + "rect") if r.get("fill") not in ("#ffffff", "#eeeeee")]
    assert len(bars) == 4 * 2  # each resource, a box per resident program


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")
def test_occupancy_of_the_attention_forward_configurations() -> None:
    """Tutorial 07's descriptor forward: 128 x 64 blocks in two stages fit two programs on an
    sm_90a SM; a third stage takes 32 KiB more, and the shared memory then holds one (ptxas'
    registers, the compiler's shared memory)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tutorials" / "07_fused_attention.py"
    spec = importlib.util.spec_from_file_location("tutorial_07_occupancy", path)
    tutorial = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tutorial)
    for stages, programs in ((2, 2), (3, 1)):
        fig = tutorial.forward_occupancy(stages)
        assert fig.occupancy.programs == programs, str(fig)
        assert str(fig).startswith(f"attn_fwd_desc on sm_90a: {programs} program")
        assert "shared memory" in fig.occupancy.limits


# ------------------------------------------------------------------------------ live through loops

LIVE_THROUGH = """.visible .entry k(
	.param .u64 p, .param .u32 n
)
{
	// k.py:1  x = ...
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	// k.py:2  y = ...
	mul.lo.s32 %r3, %r2, %r1;
	mul.wide.s32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	setp.lt.s32 %p1, %r2, %r1;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r4, 0;
$L_loop:
	// k.py:3  for ...
	add.f32 %f1, %f1, %f1;
	add.s32 %r4, %r4, 1;
	setp.lt.s32 %p2, %r4, %r1;
	@%p2 bra $L_loop;
	// k.py:4  store
	@%p1 st.global.f32 [%rd3], %f1;
	ret;
}
"""


def test_live_through_counts_what_a_loop_carries_unused() -> None:
    """The 64-bit address (two registers) and the predicate used after the loop count; what the
    loop uses (n, the sum, the counter) and the unused product do not."""
    from tile.viz import live_through, show_live_through

    (loop,) = live_through(LIVE_THROUGH)
    assert (loop.label, loop.where, loop.registers, loop.predicates) == ("$L_loop", "k.py:2", 2, 1)
    assert loop.by_source == {"k.py:2": 2}
    fig = show_live_through(LIVE_THROUGH)
    assert str(fig).splitlines()[:3] == ["k: registers live through each loop without a use there (of 255 a thread)",
                                         "loop at k.py:2: 2 registers, 1 predicates", "       2  k.py:2"]
    svg_root(fig)
    with pytest.raises(ValueError, match="this text has no .entry"):
        show_live_through("tt.func {}")
    with pytest.raises(TypeError, match="expects PTX"):
        show_live_through(3)


def test_live_through_of_a_lowered_kernel_names_its_source_lines() -> None:
    """From tile.dump(..., stage="ptx"), whose comments name the kernel's lines: benchmarks'
    matmul_kernel's K loop is found at its `for`, and what it carries unused (its epilogue's
    indices, where the lowering computes them before the loop) is laid to the kernel's lines."""
    import inspect
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    from load_kernels import load_kernels
    from tile.viz import show_live_through

    kernel = load_kernels("viz_live_through", tile.jit, tl).matmul_kernel
    a = tile.empty((256, 256), "f16")
    c = tile.empty((256, 256), "f16")
    fig = show_live_through(tile.dump(kernel, a, a, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BLOCK_M=128, BLOCK_N=64,
                                      BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4, stage="ptx",
                                      target="sm_90a"))
    lines, first = inspect.getsourcelines(kernel.fn)
    loop_line = first + next(i for i, text in enumerate(lines) if text.strip().startswith("for k in"))
    (loop,) = [report for report in fig.loops if report.where.endswith(f":{loop_line}")]
    assert loop.registers > 0 and loop.registers == sum(loop.by_source.values())
    kernel_lines = {f"kernels.py:{n}" for n in range(first, first + len(lines))}
    assert set(loop.by_source) <= kernel_lines | {"?"}  # "?": the parameters, read before any line
