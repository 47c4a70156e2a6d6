"""tt.dot on Hopper's wgmma (sm_90a), lowered to simt IR and PTX and run on tile.emulator
against NumPy in float64.

The emulator's wgmma (tile/emulator/ptx_isa_hopper.py) reads A and B through the matrix
descriptors from the simulated shared memory, with the PTX ISA's canonical layouts and swizzles
written out independently, and checks the ordering rules: a wgmma reading bytes written since
the last barrier, or by a thread without a fence.proxy.async after its writes, fails; so does
overwriting bytes an unretired wgmma group reads. Hand-written gpu IR first (every operand
type, both majornesses, one and two warp groups, f16 and zero accumulators, and each rule broken
once), then the accelerate-dot decisions and the pipelined loop as IR text, then @tile.jit
matmuls end to end through all passes (K loops, ragged edges, transposed operands, num_warps 4
and 8), ptxas -v on the benchmark configurations, and the same kernels on an H100 (marker gpu).
`python tests/test_codegen_wgmma.py` prints registers and spills of the benchmark configurations.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import check_ptx, decode, lower, result, run
from ptxas_util import assemble, needs_ptxas, parse_info
from tile.emulator import EmulatorError
from test_codegen_dot import BYTES, IR, coalesced, memory, operands, strides, tensor, values
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.ir import parse_op, print_op, verify
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, wgmma_shared
from tile.ir.gpu_ops import verify_layouts
from tile.ir.types import DTYPES
from tile.opt.accelerate_dot import AccelerateDot
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes
from tile.opt.to_gpu import ConvertToGpu

RNG = np.random.default_rng(90)
FP8 = ("f8e4nv", "f8e5")
ACC = {"i8": "i32", "u8": "i32"}
ATYPE = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "u8": "u8", "f8e4nv": "e4m3", "f8e5": "e5m2"}


def fp8_operands(el: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random finite fp8 bits (uint8) for A and B, an f32 accumulator."""
    table = decode(np.arange(256), DTYPES[el]).astype(np.float64)
    finite = np.nonzero(np.isfinite(table) & (np.abs(table) < 64))[0].astype(np.uint8)
    a, b = (RNG.choice(finite, s) for s in ((m, k), (k, n)))
    return a, b, RNG.standard_normal((m, n)).astype(np.float32)


def fp8_values(x: np.ndarray, el: str) -> np.ndarray:
    return decode(x, DTYPES[el]).astype(np.float64)


def reference(el: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    if el in FP8:
        return fp8_values(a, el) @ fp8_values(b, el) + c.astype(np.float64)
    av, bv = values(a, el), values(b, el)
    if el == "f32":  # the tensor cores read tf32: the 13 low mantissa bits of an f32 are ignored
        av, bv = ((x.astype(np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
                  for x in (av, bv))
    return av @ bv + c.astype(np.float64)


def compare(el: str, got: np.ndarray, want: np.ndarray, k: int, acc: str = "f32", scale=None) -> None:
    """`scale`: |A| @ |B|, the bound of the partial sums; fp8 wgmma adds its products with fewer
    mantissa bits than f32 (what Triton's default max_num_imprecise_acc on sm_90 keeps), so its
    error is relative to that bound (the simulator is exact)."""
    if el in ("i8", "u8"):
        np.testing.assert_array_equal(got, want)
        return
    if el in FP8:
        assert (np.abs(got.astype(np.float64) - want) <= 2.0 ** -8 * scale + 1e-5).all()
        return
    tol = {"f16": 2e-3, "f32": 1e-5}[acc] if el != "f32" else 1e-4
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.sqrt(k))


def magnitude(el: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|A| @ |B| in float64 (fp8 operands as their values)."""
    av, bv = (fp8_values(x, el) if el in FP8 else values(x, el) for x in (a, b))
    return np.abs(av) @ np.abs(bv)


# ------------------------------------------------------------------------------ hand-written gpu IR


def wgmma_ir(m: int, n: int, k: int, el: str, num_warps: int, a_contig: int, b_contig: int, acc: str = "f32",
             zero_acc: bool = False, fence: bool = True, barrier: bool = True, precision: str = "tf32",
             a_in_registers: bool = False) -> str:
    """A and B loaded into blocked layouts, stored into wgmma buffers (`contig`: their contiguous
    dimension), a fence and a barrier, then D = A @ B + C in the #mma version 3 layout; or A
    loaded straight into #dot_op<op_idx = 0> of that layout (`a_in_registers`)."""
    groups = num_warps // 4
    gm = min(groups, m // 64)
    layout = MmaLayout(3, (4 * gm, groups // gm), (16, min(n // (groups // gm), 256)))
    ir = IR(num_warps)
    ct = ACC.get(el, acc)
    offset, bufs = 0, []
    if a_in_registers:
        la = DotOperandLayout(0, layout, 2)
        ptrs = ir.ptrs("%A", el, (m, k), strides((m, k), a_contig), la)
        bufs.append(ir(f"tt.load {ptrs} : {tensor((m, k), el, la)}"))
    for ptr, shape, contig in (("%A", (m, k), a_contig), ("%B", (k, n), b_contig))[1 if a_in_registers else 0:]:
        g = coalesced(shape, "i8" if el in FP8 else el, contig, num_warps)
        x = ir(f"tt.load {ir.ptrs(ptr, el, shape, strides(shape, contig), g)} : {tensor(shape, el, g)}")
        sh = wgmma_shared(shape, BYTES.get(el, 1), [contig, 1 - contig])
        nbytes = shape[0] * shape[1] * BYTES.get(el, 1)
        buf = ir(f"gpu.local_alloc {{bytes = {nbytes}, offset = {offset}}} : {tensor(shape, el, sh)}", "buf")
        ir.do(f"gpu.local_store {buf}, {x}")
        offset += (nbytes + 1023) // 1024 * 1024
        bufs.append(buf)
    if fence:
        ir.do("gpu.fence_async_shared")
    if barrier:
        ir.do("gpu.barrier")
    if zero_acc:
        cv = ir.const(0 if ct == "i32" else 0.0, tensor((m, n), ct, layout))
    else:
        cv = ir(f"tt.load {ir.ptrs('%C', ct, (m, n), (n, 1), layout)} : {tensor((m, n), ct, layout)}")
    dv = ir(f'tt.dot {bufs[0]}, {bufs[1]}, {cv} {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : '
            f"{tensor((m, n), ct, layout)}")
    ir.do(f"tt.store {ir.ptrs('%D', ct, (m, n), (n, 1), layout)}, {dv}")
    params = [("A", f"ptr<{el}>"), ("B", f"ptr<{el}>"), ("C", f"ptr<{ct}>"), ("D", f"ptr<{ct}>")]
    return ir.func(params, shared_bytes=offset)


def run_wgmma(text: str, el: str, m: int, n: int, k: int, a_contig: int, b_contig: int, acc: str = "f32",
              zero_acc: bool = False):
    simt = lower(text)
    a, b, c = fp8_operands(el, m, n, k) if el in FP8 else operands(el, m, n, k)
    if acc == "f16":
        c = c.astype(np.float16)
    if zero_acc:
        c = np.zeros_like(c)
    out = np.full_like(c, 0x5A if c.dtype == np.int32 else np.nan)
    mach, dev = run(simt, (1,), [memory(a, a_contig), memory(b, b_contig), c, out])
    compare(el, result(mach, dev[3], out), reference(el, a, b, c), k, acc, magnitude(el, a, b))
    return simt


CASES = [  # el, m, n, k, num_warps, A contiguous dim, B contiguous dim (1 = row-major)
    ("f16", 64, 64, 64, 4, 1, 1),      # A K-major, B N-major (transposed wgmma B)
    ("f16", 64, 64, 64, 4, 0, 0),      # A M-major, B K-major
    ("f16", 128, 128, 32, 8, 1, 0),    # two warp groups along M
    ("f16", 64, 256, 32, 4, 0, 1),     # m64n256, B in 64-column blocks
    ("f16", 128, 64, 16, 4, 1, 1),     # one warp group, two instructions along M; 32-byte swizzle of A
    ("f16", 64, 128, 64, 8, 1, 1),     # two warp groups along N
    ("bf16", 64, 64, 32, 4, 1, 1),
    ("f32", 64, 32, 32, 4, 1, 0),      # tf32: both K-major, k8
    ("f32", 64, 16, 64, 4, 1, 0),      # rows of 256 bytes: K in 32-element blocks
    ("i8", 64, 64, 64, 4, 1, 0),
    ("u8", 64, 32, 64, 4, 1, 0),
    ("f8e4nv", 64, 64, 64, 4, 1, 0),
    ("f8e5", 64, 64, 32, 4, 1, 0),
]


@pytest.mark.parametrize("el, m, n, k, num_warps, a_contig, b_contig", CASES)
def test_wgmma_from_shared(el, m, n, k, num_warps, a_contig, b_contig):
    simt = run_wgmma(wgmma_ir(m, n, k, el, num_warps, a_contig, b_contig), el, m, n, k, a_contig, b_contig)
    ptx = emit_ptx(simt, target="sm_90a")
    atype = ATYPE[el]
    kk = 32 // BYTES.get(el, 1)
    groups = num_warps // 4
    gm = min(groups, m // 64)
    n_instr = min(n // (groups // gm), 256)
    per_group = (m // 64 // gm) * (k // kk)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n_instr}k{kk}.") == per_group
    line = next(x for x in ptx.splitlines() if "wgmma.mma_async" in x)
    if el in ("f16", "bf16"):  # the transposes: A M-major, B N-major
        assert line.rstrip(";").endswith(f", 1, 1, {1 - a_contig}, {b_contig}")
    else:
        assert f".{atype}.{atype} " in line and line.count(", 1, 1") == (atype not in ("s8", "u8"))
    assert ptx.count("wgmma.fence.sync.aligned;") == 1 and ptx.count("wgmma.commit_group.sync.aligned;") == 1
    assert "wgmma.wait_group.sync.aligned 0;" in ptx and "mma.sync" not in ptx and "ldmatrix" not in ptx


@needs_ptxas
@pytest.mark.parametrize("el, m, n, k, num_warps, a_contig, b_contig", CASES[:6] + CASES[7:12])
def test_wgmma_ptx_assembles(el, m, n, k, num_warps, a_contig, b_contig):
    check_ptx(lower(wgmma_ir(m, n, k, el, num_warps, a_contig, b_contig)), ("sm_90a",))


@pytest.mark.parametrize("el, m, n, k, num_warps", [("f16", 64, 64, 64, 4), ("bf16", 128, 128, 32, 8),
                                                    ("f16", 64, 128, 32, 8), ("f16", 128, 32, 16, 4)])
def test_wgmma_with_a_in_registers(el, m, n, k, num_warps):
    text = wgmma_ir(m, n, k, el, num_warps, 1, 1, a_in_registers=True)
    simt = run_wgmma(text, el, m, n, k, 1, 1)
    ptx = emit_ptx(simt, target="sm_90a")
    lines = [x for x in ptx.splitlines() if "wgmma.mma_async" in x]
    assert lines and all(x.split("}, ")[1].startswith("{%r") and x.rstrip(";").endswith(", 1, 1, 1") for x in lines)
    # the packed A registers are all written before the fence: ptxas needs no waits of its own
    body = ptx[ptx.index("wgmma.fence"):ptx.index("wgmma.commit")]
    assert "mov.b32" not in body
    ok, log = assemble(ptx, "sm_90a")
    assert ok and not _wgmma_repaired(log), log


def test_f16_accumulator_goes_through_f32():
    simt = run_wgmma(wgmma_ir(64, 64, 32, "f16", 4, 1, 1, acc="f16"), "f16", 64, 64, 32, 1, 1, acc="f16")
    ptx = emit_ptx(simt, target="sm_90a")
    assert "m64n64k16.f32.f16.f16" in ptx and "cvt.rn.f16.f32" in ptx


def test_a_zero_accumulator_is_not_read():
    """The first k-step runs with scale-d false: the zeros are never moved into the registers."""
    simt = run_wgmma(wgmma_ir(64, 64, 32, "f16", 4, 1, 1, zero_acc=True), "f16", 64, 64, 32, 1, 1, zero_acc=True)
    scales = [op.operand(2).owner_op.attrs["value"] for op in simt.walk() if op.name == "simt.wgmma"]
    assert scales == [False, True]
    ptx = emit_ptx(simt, target="sm_90a")
    assert "mov.f32" not in ptx.split("wgmma.fence")[1].split("wgmma.commit")[0]


def test_descriptors_are_computed_once_and_stepped_by_adds():
    """Fixed buffers: every descriptor is thread-invariant code at the top of the kernel, one base
    per operand and one add per further k-step; the wgmma follow one another."""
    ptx = emit_ptx(lower(wgmma_ir(128, 128, 64, "f16", 8, 1, 1)), target="sm_90a")
    body = ptx[ptx.index("wgmma.fence"):ptx.index("wgmma.commit")]
    ops = [line.strip().split()[0] for line in body.splitlines()[1:] if line.strip()]
    assert ops == ["wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"] * 4
    assert ptx.count("or.b64") == 2 and ptx.count("add.u64") == 2 * 3


@pytest.mark.parametrize("broken, message", [("fence", "fence.proxy.async"), ("barrier", "without a barrier|race")])
def test_the_emulator_catches_a_missing_fence_or_barrier(broken, message):
    text = wgmma_ir(64, 64, 32, "f16", 4, 1, 1, fence=broken != "fence", barrier=broken != "barrier")
    with pytest.raises(EmulatorError, match=message):
        run_wgmma(text, "f16", 64, 64, 32, 1, 1)


def test_the_emulator_catches_a_store_over_an_asynchronous_dot():
    text = wgmma_ir(64, 64, 32, "f16", 4, 1, 1).replace("max_num_imprecise_acc = 0}", "is_async = true, "
                                                         "max_num_imprecise_acc = 0}")
    buf = text.split("gpu.local_store ")[1].split(",")[0]
    dot_line = next(x for x in text.splitlines() if "tt.dot" in x)
    d = dot_line.split("=")[0].strip()
    x = text.split("gpu.local_store ")[1].split(",")[1].split("\n")[0].strip()
    text = text.replace(dot_line, f"{dot_line}\n  gpu.barrier\n  gpu.local_store {buf}, {x}\n"
                                  f"  {d}w = gpu.dot_wait {d} {{pending = 0}} : {dot_line.split(' : ')[-1]}")
    text = text.replace(f", {d}\n  tt.return", f", {d}w\n  tt.return")
    with pytest.raises(EmulatorError, match="which the wgmma.mma_async at .* may still read"):
        run_wgmma(text, "f16", 64, 64, 32, 1, 1)


def test_wgmma_needs_sm_90a():
    text = wgmma_ir(64, 64, 16, "f16", 4, 1, 1).replace('target = "sm_90a"', 'target = "sm_90"')
    with pytest.raises(Exception, match="sm_90a"):
        lower(text)


# ------------------------------------------------------------------------------ the new ops as text; errors

W = "#mma<version = 3, wpc = [4, 1], instr = [16, 64]>"
S = "#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>"
GPU_OPS = f"""tt.func {{num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
^bb(%c: tensor<64x64xf32, {W}>):
  %a = gpu.local_alloc {{bytes = 8192, offset = 0}} : tensor<64x64xf16, {S}>
  %b = gpu.local_alloc {{bytes = 8192, offset = 8192}} : tensor<64x64xf16, {S}>
  gpu.fence_async_shared
  %d = tt.dot %a, %b, %c {{input_precision = "tf32", is_async = true, max_num_imprecise_acc = 0}} : tensor<64x64xf32, {W}>
  %e = gpu.dot_wait %d {{pending = 0}} : tensor<64x64xf32, {W}>
  gpu.dot_wait {{pending = 1}}
  tt.return
}}"""
SIMT_OPS = """simt.func {num_warps = 4, sym_name = "k"} {
^bb(%da: u64, %db: u64, %c0: f32, %c1: f32, %c2: f32, %c3: f32):
  %p = arith.constant {value = true} : i1
  simt.wgmma_fence
  %d0, %d1, %d2, %d3 = simt.wgmma %da, %db, %p, %c0, %c1, %c2, %c3 {atype = "f16", n = 8, trans_a = false, trans_b = true} : f32, f32, f32, f32
  simt.wgmma_commit
  %e0, %e1, %e2, %e3 = simt.wgmma_wait %d0, %d1, %d2, %d3 {pending = 0} : f32, f32, f32, f32
  simt.fence_proxy_async
  simt.return
}"""


@pytest.mark.parametrize("text", [GPU_OPS, SIMT_OPS])
def test_new_ops_round_trip(text):
    op = parse_op(text)
    verify(op)
    assert print_op(op) == text
    if op.name == "tt.func":
        verify_layouts(op)


@pytest.mark.parametrize("old, new, message", [
    ('trans_b = true', 'trans_b = 1', "trans_b is a bool"),
    ('atype = "f16", n = 8, trans_a = false, trans_b = true', 'atype = "tf32", n = 8, trans_a = false, trans_b = true',
     "true only for f16/bf16"),
    ("n = 8", "n = 12", "n must be a multiple of 8"),
    ("%da, %db, %p", "%da, %db, %c0", "A's u64 matrix descriptor \\(or four i32 registers\\), B's and the i1"),
    ("%d0, %d1, %d2, %d3 {pending = 0} : f32, f32, f32, f32", "%d0, %d1, %d2, %d3 {pending = 0} : f32, f32, f32, i32",
     "results are the operands"),
])
def test_simt_wgmma_verifier_messages(old, new, message):
    from tile.ir import VerificationError

    with pytest.raises(VerificationError, match=message):
        verify(parse_op(SIMT_OPS.replace(old, new)))


def test_gpu_verifier_messages():
    from tile.ir import VerificationError

    with pytest.raises(VerificationError, match="results are the operands' types"):
        verify(parse_op(GPU_OPS.replace("%e = gpu.dot_wait %d {pending = 0} : tensor<64x64xf32",
                                        "%e = gpu.dot_wait %d {pending = 0} : tensor<64x64xf16")))
    blocked = "#blocked<spt = [1, 1], tpw = [1, 32], wpc = [4, 1], order = [1, 0]>"
    func = parse_op(GPU_OPS.replace(f"%b = gpu.local_alloc {{bytes = 8192, offset = 8192}} : tensor<64x64xf16, {S}>",
                                    f"%b = arith.constant {{value = 1.0}} : tensor<64x64xf16, {blocked}>"))
    with pytest.raises(VerificationError, match="reads B from a #shared buffer"):
        verify_layouts(func)
    func = parse_op(GPU_OPS.replace(f"%a = gpu.local_alloc {{bytes = 8192, offset = 0}} : tensor<64x64xf16, {S}>",
                                    f"%a = arith.constant {{value = 1.0}} : tensor<64x64xf16, {blocked}>"))
    with pytest.raises(VerificationError, match=r"operand 0 is .*, its layout rule wants .*#dot_op<op_idx = 0"):
        verify_layouts(func)


def test_layout_errors():
    from tile.ir.dot_layouts import DotOperandLayout

    with pytest.raises(ValueError, match="wgmma reads B from shared memory"):
        DotOperandLayout(1, MmaLayout(3, (4, 1), (16, 64)), 2)


def test_lowering_rejects_a_misaligned_buffer_an_accumulator_type_and_a_clipped_tile():
    text = wgmma_ir(64, 64, 32, "f16", 4, 1, 1)
    with pytest.raises(Exception, match="not aligned to 16 bytes"):
        lower(text.replace("gpu.local_alloc {bytes = 4096, offset = 0}", "gpu.local_alloc {bytes = 4096, offset = 8}"))
    with pytest.raises(Exception, match="wgmma on f16 accumulates in f32, not i32"):
        lower(wgmma_ir(64, 64, 32, "f16", 4, 1, 1, acc="i32"))
    wide = str(MmaLayout(3, (4, 1), (16, 64)))
    with pytest.raises(Exception, match="not wgmma m64n64 D fragments"):
        lower(wgmma_ir(64, 32, 32, "f16", 4, 1, 1).replace(str(MmaLayout(3, (4, 1), (16, 32))), wide))


def test_lowering_rejects_buffers_wgmma_cannot_read():
    text = wgmma_ir(64, 64, 32, "f16", 4, 1, 1).replace(
        "#shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>", "#shared<vec = 1, per_phase = 1, "
                                                                          "max_phase = 1, order = [1, 0]>")
    with pytest.raises(Exception, match="not a canonical wgmma shared layout"):
        lower(text)


# ------------------------------------------------------------------------------ insert-barriers, orientation

BLK = "#blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>"
HAZARDS = f"""tt.func {{num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
^bb(%x: tensor<64x64xf16, {BLK}>, %c: tensor<64x64xf32, {W}>):
  %a = gpu.local_alloc {{bytes = 8192, offset = 0}} : tensor<64x64xf16, {S}>
  %b = gpu.local_alloc {{bytes = 8192, offset = 8192}} : tensor<64x64xf16, {S}>
  gpu.local_store %a, %x
  gpu.local_store %b, %x
  %d = tt.dot %a, %b, %c {{input_precision = "tf32", max_num_imprecise_acc = 0}} : tensor<64x64xf32, {W}>
  gpu.local_store %a, %x
  %e = tt.dot %a, %b, %d {{input_precision = "tf32", is_async = true, max_num_imprecise_acc = 0}} : tensor<64x64xf32, {W}>
  gpu.local_store %b, %x
  tt.return
}}"""


def test_insert_barriers_fences_writes_before_wgmma_and_waits_before_overwriting():
    from tile.opt.insert_barriers import InsertBarriers

    func = parse_op(HAZARDS)
    InsertBarriers().run(func)
    verify(func)
    body = [line.strip().split(" {")[0].split(" : ")[0] for line in print_op(func).splitlines()[2:-2]]
    assert body == [
        "%a = gpu.local_alloc", "%b = gpu.local_alloc", "gpu.local_store %a, %x", "gpu.local_store %b, %x",
        "gpu.fence_async_shared", "gpu.barrier",      # the stores, visible to wgmma
        "%d = tt.dot %a, %b, %c", "gpu.barrier",      # the dot's reads before the store over %a
        "gpu.local_store %a, %x", "gpu.fence_async_shared", "gpu.barrier",
        "%e = tt.dot %a, %b, %d",
        "gpu.dot_wait", "gpu.barrier",                # the asynchronous dot still reads %b
        "gpu.local_store %b, %x"]


ROWS = "#blocked<spt = [1, 8], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>"   # 8 consecutive columns each
COLS = "#blocked<spt = [8, 1], tpw = [8, 4], wpc = [1, 4], order = [0, 1]>"   # 8 consecutive rows each
KA = "#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>"
KB = "#shared<vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]>"


def oriented(el: str, a_layout: str, b_layout: str) -> list[str]:
    """The buffer layouts convert-through-shared gives A (64x64) and B (64x128) stored from these layouts."""
    from tile.opt.convert_through_shared import orient_wgmma_operands

    ka, kb = wgmma_shared((64, 64), BYTES[el], (1, 0)), wgmma_shared((64, 128), BYTES[el], (0, 1))  # K-major
    w128 = MmaLayout(3, (4, 1), (16, 128))
    func = parse_op(f"""tt.func {{num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32}} {{
^bb(%x: tensor<64x64x{el}, {a_layout}>, %y: tensor<64x128x{el}, {b_layout}>, %c: tensor<64x128xf32, {w128}>):
  %a = gpu.local_alloc {{bytes = {64 * 64 * BYTES[el]}, offset = -1}} : tensor<64x64x{el}, {ka}>
  gpu.local_store %a, %x
  %b = gpu.local_alloc {{bytes = {64 * 128 * BYTES[el]}, offset = -1}} : tensor<64x128x{el}, {kb}>
  gpu.local_store %b, %y
  %d = tt.dot %a, %b, %c {{input_precision = "tf32", max_num_imprecise_acc = 0}} : tensor<64x128xf32, {w128}>
  tt.return
}}""")
    orient_wgmma_operands(func)
    verify_layouts(func)
    return [str(op.result.type.layout) for op in func.walk() if op.name == "gpu.local_alloc"]


def test_convert_through_shared_orients_wgmma_buffers_by_the_stored_values():
    # A stored row by row stays K-major; B stored row by row becomes N-major (128 columns: 64-column blocks)
    n_major = "#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0], block = 64>"
    assert oriented("f16", ROWS, ROWS) == [KA, n_major]
    # column by column: A becomes M-major, B stays K-major
    assert oriented("f16", COLS, COLS) == ["#shared<vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]>", KB]
    # tf32 reads both operands K-major whatever the stores (rows of 64 f32: 32-element blocks)
    assert oriented("f32", COLS, ROWS) == ["#shared<vec = 4, per_phase = 1, max_phase = 8, order = [1, 0], block = 32>",
                                           "#shared<vec = 4, per_phase = 1, max_phase = 8, order = [0, 1], block = 32>"]


# ------------------------------------------------------------------------------ accelerate-dot on sm_90a


def accelerate(m: int, n: int, k: int, el: str, acc: str, precision: str = "tf32", num_warps: int = 4,
               target: str = "sm_90a"):
    text = (f'tt.func {{sym_name = "k"}} {{\n^bb(%a: tensor<{m}x{k}x{el}>, %b: tensor<{k}x{n}x{el}>, '
            f'%c: tensor<{m}x{n}x{acc}>, %out: tensor<{m}x{n}xptr<{acc}>>):\n'
            f'  %d = tt.dot %a, %b, %c {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : '
            f'tensor<{m}x{n}x{acc}>\n  tt.store %out, %d\n  tt.return\n}}')
    func = parse_op(text)
    for p in (ConvertToGpu(num_warps, target), AccelerateDot()):
        p.run(func)
        verify(func)
        verify_layouts(func)
    return func, next(op for op in func.walk() if op.name == "tt.dot")


@pytest.mark.parametrize("m, n, k, el, acc, precision, warps, expect", [
    (64, 64, 32, "f16", "f32", "tf32", 4, ((4, 1), 64)),
    (64, 64, 32, "f16", "f16", "tf32", 4, ((4, 1), 64)),
    (128, 256, 64, "f16", "f32", "tf32", 8, ((8, 1), 256)),
    (64, 128, 64, "f16", "f32", "tf32", 8, ((4, 2), 64)),     # M = 64: the second warp group splits N
    (256, 128, 64, "f16", "f32", "tf32", 8, ((8, 1), 128)),   # two instructions along M per warp group
    (128, 512, 32, "bf16", "f32", "tf32", 4, ((4, 1), 256)),  # N > 256: two instructions along N
    (64, 64, 16, "f32", "f32", "tf32", 4, ((4, 1), 64)),
    (64, 64, 64, "i8", "i32", "tf32", 4, ((4, 1), 64)),
    (64, 32, 32, "u8", "i32", "tf32", 4, ((4, 1), 32)),
    (64, 64, 32, "f8e4nv", "f32", "tf32", 4, ((4, 1), 64)),
    (64, 8, 32, "f8e5", "f32", "tf32", 4, ((4, 1), 8)),
    (32, 64, 32, "f16", "f32", "tf32", 4, "mma"),             # M < 64
    (64, 64, 32, "f16", "f32", "tf32", 2, "mma"),             # not whole warp groups
    (64, 8, 32, "f16", "f32", "tf32", 8, "mma"),              # N = 8 over two warp groups
    (64, 64, 16, "f32", "f32", "tf32x3", 4, "mma"),
    (64, 64, 32, "f32", "f32", "ieee", 4, "fma"),
    (64, 64, 8, "f16", "f32", "tf32", 4, "fma"),              # K < 16
    (64, 64, 16, "i8", "i32", "tf32", 4, "fma"),              # K < 32
    (64, 64, 32, "f64", "f64", "tf32", 4, "fma"),
])
def test_wgmma_mma_or_fma_on_sm_90a(m, n, k, el, acc, precision, warps, expect):
    func, dot = accelerate(m, n, k, el, acc, precision, warps)
    layout = dot.result.type.layout
    if expect == "mma":
        assert isinstance(layout, MmaLayout) and layout.version == 2
    elif expect == "fma":
        assert not isinstance(layout, MmaLayout)
    else:
        assert layout == MmaLayout(3, expect[0], (16, expect[1]))
        a, b = (v.type.layout for v in dot.operands[:2])
        assert (a.order, b.order) == ((1, 0), (0, 1))  # K-major until convert-through-shared orients them


def test_sm_90_and_sm_80_keep_mma_sync():
    for target in ("sm_80", "sm_90"):
        _, dot = accelerate(128, 128, 64, "f16", "f32", target=target)
        assert dot.result.type.layout.version == 2


def test_accelerate_dot_stages_operands_in_wgmma_buffers():
    func, _ = accelerate(64, 64, 32, "f16", "f32")
    aliases = {"#W": "#mma<version = 3, wpc = [4, 1], instr = [16, 64]>",
               "#B": "#blocked<spt = [1, 1], tpw = [1, 32], wpc = [2, 2], order = [1, 0]>",
               "#A": "#blocked<spt = [1, 1], tpw = [1, 32], wpc = [4, 1], order = [1, 0]>",
               "#SA": "#shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>",
               "#SB": "#shared<vec = 8, per_phase = 2, max_phase = 4, order = [0, 1]>"}
    text = print_op(func)
    for alias, full in aliases.items():
        text = text.replace(full, alias)
    assert text[text.index("^bb"):] == """^bb(%a: tensor<64x32xf16, #A>, %b: tensor<32x64xf16, #B>, %c: tensor<64x64xf32, #B>, %out: tensor<64x64xptr<f32>, #B>):
  %0 = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<64x32xf16, #SA>
  gpu.local_store %0, %a
  %1 = gpu.local_alloc {bytes = 4096, offset = -1} : tensor<32x64xf16, #SB>
  gpu.local_store %1, %b
  %2 = gpu.convert_layout %c : tensor<64x64xf32, #W>
  %d = tt.dot %0, %1, %2 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #W>
  %3 = gpu.convert_layout %d : tensor<64x64xf32, #B>
  tt.store %out, %3
  tt.return
}"""


LOOP_INVARIANT_A = '''tt.func {num_stages = 1, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
^bb(%a: tensor<64x32xf16, #B>, %bp: tensor<32x64xptr<f16>, #B>, %out: tensor<64x64xptr<f32>, #B>, %n: i32):
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %zero = arith.constant {value = 0.0} : tensor<64x64xf32, #B>
  %r = scf.for %c0, %n, %c1, %zero : tensor<64x64xf32, #B> {
  ^bb(%k: i32, %acc: tensor<64x64xf32, #B>):
    %b = tt.load %bp : tensor<32x64xf16, #B>
    %d = tt.dot %a, %b, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #B>
    scf.yield %d
  }
  tt.store %out, %r
  tt.return
}'''.replace("#B", "#blocked<spt = [1, 1], tpw = [1, 32], wpc = [2, 2], order = [1, 0]>")


def test_a_loop_invariant_operand_is_stored_once_before_the_loop():
    func = parse_op(LOOP_INVARIANT_A)
    AccelerateDot().run(func)
    verify_layouts(func)
    text = print_op(func)
    assert text.index("gpu.local_store %0, %a") < text.index("scf.for") < text.index("gpu.local_store %1, %b")


_FIRST_LOOP = LOOP_INVARIANT_A[LOOP_INVARIANT_A.index("  %r = scf.for"):LOOP_INVARIANT_A.index("  tt.store")]
# LOOP_INVARIANT_A with a second loop after the first, over the same %a: its values renamed %r2, %k2, ...
TWO_LOOPS_ONE_A = LOOP_INVARIANT_A.replace(
    "  tt.store %out, %r\n",
    re.sub(r"%(r|k|acc|b|d)\b", r"%\g<1>2", _FIRST_LOOP).replace("%zero", "%r") + "  tt.store %out, %r2\n")


def test_an_operand_two_loops_read_is_staged_once_before_the_first():
    """A of dots in two loops in a row (a causal backward's masked and unmasked loops over one
    block of K): one buffer, filled before the first loop; a second one would keep A's
    registers live through the first loop."""
    func = parse_op(TWO_LOOPS_ONE_A)
    AccelerateDot().run(func)
    verify_layouts(func)
    text = print_op(func)
    assert text.count("gpu.local_store %0, %a") == 1 and text.count(", %a\n") == 1
    assert text.index("gpu.local_store %0, %a") < text.index("scf.for")
    first, second = (op for op in func.walk() if op.name == "tt.dot")
    assert first.operand(0) is second.operand(0)


MASKED_SCORES = '''tt.func {num_stages = 1, num_warps = 4, sym_name = "k", target = "sm_90a", threads_per_warp = 32} {
^bb(%q: tensor<64x32xf16, #B>, %k: tensor<32x64xf16, #B>, %v: tensor<64x64xf16, #B>, %out: tensor<64x64xptr<f32>, #B>, %diagonal: i1):
  %zero = arith.constant {value = 0.0} : tensor<64x64xf32, #B>
  %s = tt.dot %q, %k, %zero {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #B>
  %masked = scf.if %diagonal : tensor<64x64xf32, #B> {
    %low = arith.constant {value = -1000000.0} : tensor<64x64xf32, #B>
    %m = arith.min %s, %low : tensor<64x64xf32, #B>
    scf.yield %m
  } {
    scf.yield %s
  }
  %p = arith.cast %masked : tensor<64x64xf16, #B>
  %o = tt.dot %p, %v, %zero {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32, #B>
  tt.store %out, %o
  tt.return
}'''.replace("#B", "#blocked<spt = [1, 1], tpw = [1, 32], wpc = [2, 2], order = [1, 0]>")


def test_a_dot_result_through_a_branch_stays_in_registers_as_the_next_dots_a():
    """Attention's scores masked in a branch (the causal diagonal), then P @ V: P is still
    computed in registers from a dot, so wgmma takes it from registers; only Q, K and V are
    staged in shared memory."""
    func = parse_op(MASKED_SCORES)
    AccelerateDot().run(func)
    verify_layouts(func)
    text = print_op(func)
    assert text.count("gpu.local_alloc") == 3
    assert "gpu.convert_layout %p : tensor<64x64xf16, #dot_op<op_idx = 0" in text


# ------------------------------------------------------------------------------ end to end


@tile.jit
def wgmma_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, ACC: tl.constexpr, PREC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b, input_precision=PREC)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@tile.jit
def single_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One tile, no loop: tl.dot's zero accumulator (scale-d false)."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


TILE_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32", "i8": "i8", "f8e4nv": "f8e4nv", "f8e5": "f8e5"}


def matmul_inputs(el: str, m: int, n: int, k: int):
    a, b, _ = fp8_operands(el, m, n, k) if el in FP8 else operands(el, m, n, k)
    c = np.full((m, n), 0x5A if el == "i8" else np.nan, np.int32 if el == "i8" else np.float32)
    return a, b, c


def compile_wgmma(el: str, shapes, tiles, num_warps: int, stages: int, majors: str = "rr", precision: str = "tf32",
                  target: str = "sm_90a", inputs=None):
    """(gpu IR, simt func, runtime args, (a, b, c)) of wgmma_matmul; `majors`: A and B row- (r) or
    column-major (c) in memory."""
    m, n, k = shapes
    bm, bn, bk = tiles
    a, b, c = inputs if inputs is not None else matmul_inputs(el, m, n, k)
    a_contig, b_contig = (1 if x == "r" else 0 for x in majors)
    sam, sak = strides((m, k), a_contig)
    sbk, sbn = strides((k, n), b_contig)
    dev_a, dev_b = memory(a, a_contig), memory(b, b_contig)
    meta = dict(BM=bm, BN=bn, BK=bk, ACC=tl.int32 if el == "i8" else tl.float32, PREC=precision)
    typed = [tile.to_device(x, el) if el in ("bf16",) + FP8 else x for x in (dev_a, dev_b)]
    spec, runtime = wgmma_matmul.specialize(typed + [c, m, n, k, sam, sak, sbk, sbn, n, 1], meta)
    func = wgmma_matmul.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(num_warps, target, num_stages=stages)).run(func)
    verify_layouts(func)
    return func, lower_to_simt(func), [dev_a, dev_b] + list(runtime[2:]), (a, b, c)


E2E = [  # el, (M, N, K), (BM, BN, BK), num_warps, stages, majors
    ("f16", (64, 64, 64), (64, 64, 64), 4, 1, "rr"),
    ("f16", (64, 64, 192), (64, 64, 64), 4, 3, "rr"),
    ("f16", (100, 90, 70), (64, 64, 16), 4, 2, "rr"),      # ragged M, N and K; K % 16 != 0: synchronous copies
    ("f16", (128, 128, 128), (128, 128, 64), 4, 4, "cr"),  # A column-major: M-major
    ("f16", (130, 128, 96), (128, 128, 32), 8, 3, "rc"),   # B column-major: K-major; two warp groups
    ("f16", (128, 256, 64), (128, 256, 64), 8, 2, "rr"),   # m64n256, B in 64-column blocks
    ("f16", (64, 128, 96), (64, 128, 32), 8, 3, "cc"),     # two warp groups along N
    ("bf16", (96, 72, 96), (64, 64, 32), 4, 3, "rr"),
    ("f32", (64, 40, 64), (64, 32, 32), 4, 3, "rr"),       # tf32: B N-major in memory, K-major in shared
    ("i8", (64, 64, 128), (64, 64, 64), 4, 3, "rr"),
    ("f8e4nv", (64, 64, 96), (64, 64, 32), 4, 3, "rc"),
]


@pytest.mark.parametrize("el, shapes, tiles, num_warps, stages, majors", E2E)
def test_matmul_on_wgmma(el, shapes, tiles, num_warps, stages, majors):
    func, simt, runtime, (a, b, c) = compile_wgmma(el, shapes, tiles, num_warps, stages, majors)
    names = [op.name for op in simt.walk()]
    assert "simt.wgmma" in names and "simt.mma" not in names and "simt.ldmatrix" not in names
    assert ("simt.cp_async" in names) == (stages > 1 and shapes[2] % 16 == 0)
    grid = (-(-shapes[0] // tiles[0]), -(-shapes[1] // tiles[1]))
    mach, dev = run(simt, grid, runtime)
    got = result(mach, dev[2], c)
    compare(el, got, reference(el, a, b, np.zeros(shapes[:2])), shapes[2], scale=magnitude(el, a, b))
    ok, log = assemble(emit_ptx(simt, target="sm_90a"), "sm_90a")
    assert ok and parse_info(log).spill_stores == 0 and not _wgmma_repaired(log), log


def test_a_dot_without_a_loop():
    a, b = (RNG.standard_normal(s).astype(np.float16) for s in ((64, 32), (32, 128)))
    c = np.full((64, 128), np.nan, np.float32)
    spec, runtime = single_dot.specialize([a, b, c], dict(BM=64, BN=128, BK=32))
    func = single_dot.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(4, "sm_90a", num_stages=3)).run(func)
    simt = lower_to_simt(func)
    assert [op.operand(2).owner_op.attrs["value"] for op in simt.walk() if op.name == "simt.wgmma"] == [False, True]
    mach, dev = run(simt, (1,), runtime)
    compare("f16", result(mach, dev[2], c), a.astype(np.float64) @ b.astype(np.float64), 32)


@tile.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, N, scale, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """softmax(Q K^T * scale) V for one BM-row block of Q (N keys, head size D), flash-style."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, N, BN):
        k = tl.load(k_ptr + (start + rn)[:, None] * D + rd[None, :])
        v = tl.load(v_ptr + (start + rn)[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


def attention_inputs(m: int, n: int, d: int):
    q, k, v = (RNG.standard_normal(s).astype(np.float16) for s in ((m, d), (n, d), (n, d)))
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(d)
    p = np.exp(s - s.max(1, keepdims=True))
    return q, k, v, np.full((m, d), np.nan, np.float32), p / p.sum(1, keepdims=True) @ v.astype(np.float64)


def _attention_on_sm90a(kernel, m: int, n: int, d: int):
    """(gpu IR of attention-style `kernel` for one block of m query rows, n keys of head size d
    on sm_90a with 4 warps and 3 stages, its runtime arguments, its output array, the float64
    result it must give)."""
    q, k, v, o, want = attention_inputs(m, n, d)
    spec, runtime = kernel.specialize([q, k, v, o, n, 1 / np.sqrt(d)], dict(BM=64, BN=64, D=d))
    func = kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(4, "sm_90a", num_stages=3)).run(func)
    return func, runtime, o, want


def _check_attention_on_sm90a(func, runtime, o, want) -> str:
    """Runs lowered `func` on the SIMT interpreter against `want` and assembles its PTX without
    spills; returns ptxas's log."""
    simt = lower_to_simt(func)
    mach, dev = run(simt, (1,), runtime)
    np.testing.assert_allclose(result(mach, dev[3], o), want, rtol=2e-3, atol=2e-3)
    ok, log = assemble(emit_ptx(simt, target="sm_90a"), "sm_90a")
    assert ok and parse_info(log).spill_stores == 0, log
    return log


def test_attention_keeps_p_in_registers():
    """Q @ K^T reads Q (stored once, before the loop) and K^T (pipelined) from shared memory; P @ V
    reads P from the registers the softmax left it in (no conversion: the first dot's accumulator
    layout is the second's A layout) and V from shared memory."""
    func, runtime, o, want = _attention_on_sm90a(attention, 64, 128, 64)
    loop = next(op for op in func.walk() if op.name == "scf.for")
    dots = [op for op in loop.regions[0].block.ops if op.name == "tt.dot"]
    assert [str(x.type.layout).split("<")[0] for x in dots[1].operands[:2]] == ["#dot_op", "#shared"]
    assert not any(op.name == "gpu.local_store" for op in loop.regions[0].block.ops)
    assert not _wgmma_repaired(_check_attention_on_sm90a(func, runtime, o, want))


@tile.jit
def attention_one_block_behind(q_ptr, k_ptr, v_ptr, o_ptr, N, scale, BM: tl.constexpr, BN: tl.constexpr,
                               D: tl.constexpr):
    """`attention`, with each step's P @ V taking the previous step's P (carried around the loop) and
    a last P @ V after the loop, as a flash-attention forward that overlaps P @ V with the next
    block's softmax is written."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(tl.load(k_ptr + rn[:, None] * D + rd[None, :]))) * scale
    m_i = tl.max(s, axis=1)
    p = tl.exp(s - m_i[:, None])
    l_i = tl.sum(p, axis=1)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(BN, N, BN):
        k = tl.load(k_ptr + (start + rn)[:, None] * D + rd[None, :])
        v = tl.load(v_ptr + (start - BN + rn)[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        m_i = m_new
    acc = tl.dot(p.to(tl.float16), tl.load(v_ptr + (N - BN + rn)[:, None] * D + rd[None, :]), acc)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


def test_a_loop_carried_p_stays_in_registers():
    """P carried from one step to the next step's P @ V (and out of the loop to the last one) is a
    dot's result all the same: both P @ V read it from registers, with no shared-memory round trip."""
    func, runtime, o, want = _attention_on_sm90a(attention_one_block_behind, 64, 192, 32)
    pv = [op for op in func.walk() if op.name == "tt.dot" and op.operand(0).type.shape == (64, 64)]
    assert len(pv) == 2 and all(str(dot.operand(0).type.layout).startswith("#dot_op") for dot in pv)
    assert not any(op.name == "gpu.local_store" and op.operand(1).type.shape == (64, 64) for op in func.walk())
    _check_attention_on_sm90a(func, runtime, o, want)


def test_pipelined_loop_structure():
    """Copies of iteration k + 2 go after the asynchronous dot and the wait for the previous one;
    the loop's result is waited for after the loop."""
    func, _, _, _ = compile_wgmma("f16", (256, 256, 256), (128, 128, 64), 8, 3)
    loop = next(op for op in func.walk() if op.name == "scf.for")
    names = [op.name for op in loop.regions[0].block.ops]
    dot = next(op for op in loop.regions[0].block.ops if op.name == "tt.dot")
    assert dot.attrs["is_async"] and all(v.owner_op.name == "gpu.local_view" for v in dot.operands[:2])
    order = [n for n in names if n in ("gpu.async_wait", "gpu.fence_async_shared", "gpu.barrier", "tt.dot",
                                        "gpu.dot_wait", "gpu.async_copy", "gpu.async_commit")]
    assert order == ["gpu.async_wait", "gpu.barrier", "tt.dot", "gpu.dot_wait",
                     "gpu.barrier", "gpu.async_copy", "gpu.async_copy", "gpu.async_commit"]
    wait = next(op for op in loop.regions[0].block.ops if op.name == "gpu.dot_wait")
    assert wait.attrs["pending"] == 1 and not wait.operands
    after = loop.parent.ops[loop.parent.ops.index(loop) + 1]
    assert after.name == "gpu.dot_wait" and after.attrs["pending"] == 0 and list(after.operands) == [loop.results[0]]
    assert all(user is after for user in loop.results[0].users())
    allocs = [op for op in func.walk() if op.name == "gpu.local_alloc" and op.result.type.rank == 3]
    assert [op.attrs["offset"] % 1024 for op in allocs] == [0, 0]
    assert str(allocs[1].result.type.layout).endswith("order = [2, 1, 0], block = 64>")  # B N-major, 64-wide blocks


def test_gpu_dump_shows_the_wgmma_layouts():
    a, b, c = matmul_inputs("f16", 128, 128, 64)
    text = str(tile.dump(wgmma_matmul, a, b, c, 128, 128, 64, 64, 1, 128, 1, 128, 1, BM=128, BN=128, BK=64,
                         ACC=tl.float32, PREC="tf32", stage="gpu", target="sm_90a", num_warps=8))
    assert "#mma<version = 3, wpc = [8, 1], instr = [16, 128]>" in text and "is_async = true" in text
    assert "gpu.dot_wait" in text


# ------------------------------------------------------------------------------ ptxas on the benchmark configurations

BENCH_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (256, 128, 64, 8, 3),
                 (128, 256, 32, 8, 4), (64, 128, 64, 4, 4)]  # benchmarks/bench_matmul.py: BM, BN, BK, warps, stages


def _wgmma_repaired(log: str) -> bool:
    """Whether ptxas had to serialize wgmma or inject warpgroup waits (registers of a wgmma in
    flight touched by other code: a broken pipeline, slow)."""
    return "serialized" in log or "injected" in log


def ptxas_report() -> list[tuple[str, int, int, int, int, int, bool]]:
    """(tiles, warps, stages, registers, spill bytes, shared bytes, ptxas repaired the wgmma pipeline)
    of the fp16 matmul configurations of benchmarks/bench_matmul.py on sm_90a."""
    rows = []
    small = matmul_inputs("f16", 16, 16, 16)[:2] + (np.zeros((16, 16), np.float16),)  # fp16 out, as benchmarked
    for bm, bn, bk, warps, stages in BENCH_CONFIGS:
        _, simt, _, _ = compile_wgmma("f16", (4096, 4096, 4096), (bm, bn, bk), warps, stages, inputs=small)
        ok, log = assemble(emit_ptx(simt, target="sm_90a"), "sm_90a")
        assert ok, log
        info = parse_info(log)
        rows.append((f"{bm}x{bn}x{bk}", warps, stages, info.registers, info.spill_stores + info.spill_loads,
                     simt.attrs["shared_bytes"], _wgmma_repaired(log)))
    return rows


@needs_ptxas
def test_benchmark_configurations_assemble_without_spills_or_repaired_wgmma():
    for row in ptxas_report():
        assert row[4] == 0 and not row[6] and row[5] <= 227 * 1024, row


def test_fp16_epilogue_stores_shared_memory_with_stmatrix():
    """The benchmark matmul's fp16 epilogue (accumulator through shared memory to coalesced global
    stores) stores with stmatrix.x4 on sm_90a, 16 per thread for a 128x256 tile on 8 warps."""
    small = matmul_inputs("f16", 16, 16, 16)[:2] + (np.zeros((16, 16), np.float16),)
    _, simt, _, _ = compile_wgmma("f16", (4096, 4096, 4096), (128, 256, 64), 8, 3, inputs=small)
    ptx = emit_ptx(simt, target="sm_90a")
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 16 and "st.shared.v2.b16" not in ptx


def test_the_fp16_epilogue_on_the_emulator_matches_numpy():
    m, n, k = 130, 260, 64
    a, b, _ = matmul_inputs("f16", m, n, k)
    c = np.full((m, n), np.nan, np.float16)
    _, simt, runtime, _ = compile_wgmma("f16", (m, n, k), (128, 256, 64), 8, 3, inputs=(a, b, c))
    assert "simt.stmatrix" in [op.name for op in simt.walk()]
    mach, dev = run(simt, (2, 2), runtime)
    want = reference("f16", a, b, np.zeros((m, n)))  # float64; the fp16 store rounds once more
    error = np.abs(result(mach, dev[2], c).astype(np.float64) - want)
    assert (error <= 2.0 ** -10 * np.abs(want) + 1e-3 * magnitude("f16", a, b)).all(), error.max()


# ------------------------------------------------------------------------------ on the GPU

GPU_CASES = [  # el, (M, N, K), (BM, BN, BK), num_warps, stages, majors
    ("f16", (1000, 1030, 1024), (128, 256, 64), 8, 3, "rr"),
    ("f16", (777, 555, 640), (128, 128, 64), 4, 4, "rr"),
    ("f16", (513, 257, 512), (128, 128, 32), 4, 4, "cr"),
    ("f16", (300, 200, 256), (64, 128, 64), 8, 3, "rc"),
    ("f16", (260, 260, 333), (128, 64, 32), 4, 2, "cc"),
    ("f16", (512, 512, 256), (256, 128, 64), 8, 3, "rr"),
    ("bf16", (515, 260, 512), (128, 64, 32), 4, 3, "rr"),
    ("f32", (260, 130, 320), (64, 64, 32), 4, 3, "rr"),
    ("i8", (300, 260, 384), (128, 128, 64), 4, 3, "rr"),
    ("f8e4nv", (256, 192, 256), (128, 64, 64), 4, 3, "rc"),
    ("f8e5", (130, 64, 128), (64, 64, 64), 4, 2, "rc"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("el, shapes, tiles, num_warps, stages, majors", GPU_CASES)
def test_matmul_on_wgmma_gpu(el, shapes, tiles, num_warps, stages, majors, monkeypatch):
    from tile.compiler import current_target

    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    if current_target() != "sm_90a":
        pytest.skip("wgmma needs an sm_90a device (H100)")
    m, n, k = shapes
    a, b, c = matmul_inputs(el, m, n, k)
    a_contig, b_contig = (1 if x == "r" else 0 for x in majors)
    put = (lambda x: tile.to_device(x, el)) if el in ("bf16",) + FP8 else tile.to_device  # noqa: E731
    out = tile.to_device(c)
    sam, sak = strides((m, k), a_contig)
    sbk, sbn = strides((k, n), b_contig)
    grid = (-(-m // tiles[0]), -(-n // tiles[1]))
    wgmma_matmul[grid](put(memory(a, a_contig)), put(memory(b, b_contig)), out, m, n, k, sam, sak, sbk, sbn, n, 1,
                       BM=tiles[0], BN=tiles[1], BK=tiles[2], ACC=tl.int32 if el == "i8" else tl.float32,
                       PREC="tf32", num_warps=num_warps, num_stages=stages)
    compare(el, out.numpy(), reference(el, a, b, np.zeros((m, n))), k, scale=magnitude(el, a, b))
    compiled = [x for x in wgmma_matmul.cache.values() if x.target == "sm_90a"]
    assert compiled and all("wgmma.mma_async" in x.stage("ptx") for x in compiled)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, d, bm, bn, num_warps, stages", [(256, 512, 64, 128, 64, 8, 3),
                                                                 (128, 256, 128, 64, 64, 4, 2),
                                                                 (192, 384, 64, 64, 128, 4, 3)])
def test_attention_on_gpu(m, n, d, bm, bn, num_warps, stages, monkeypatch):
    from tile.compiler import current_target

    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    if current_target() != "sm_90a":
        pytest.skip("wgmma needs an sm_90a device (H100)")
    q, k, v, o, want = attention_inputs(m, n, d)
    out = tile.to_device(o)
    attention[(m // bm,)](tile.to_device(q), tile.to_device(k), tile.to_device(v), out, n, 1 / np.sqrt(d), BM=bm,
                          BN=bn, D=d, num_warps=num_warps, num_stages=stages)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    for r in ptxas_report():
        print("tiles %s  warps %d  stages %d  registers %3d  spill bytes %d  shared bytes %6d  repaired %s" % r)
