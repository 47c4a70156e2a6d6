"""Tutorial 06: a persistent matmul on Hopper's tensor cores (wgmma, TMA, mbarriers), stage by stage.

Tutorial 05 showed the sm_80 path: mma.sync fed by ldmatrix, cp.async copies of the next K steps.
On Hopper (target "sm_90a") tile compiles a matmul written with tensor descriptors to the
machinery that makes the H100 fast, and this tutorial opens each piece with `tile.dump`:

1. wgmma layouts. `wgmma.mma_async.m64nNk16` is issued by a warp group (4 warps, 128 threads)
   and multiplies a 64 x N tile; its accumulator is the #mma<version = 3> layout, whose rows
   split over the 4 warps like mma.sync's C fragment. With num_warps = 8, two warp groups
   stack along M.
2. Shared-memory matrix descriptors and swizzle. wgmma reads A and B straight from shared
   memory through 64-bit "matrix descriptors" (start address, leading and stride byte offsets,
   swizzle mode); the buffers use the PTX ISA's canonical 128-byte swizzle. We decode the
   descriptors tile put in the PTX and check them against the layouts.
3. The TMA tensor descriptor. The host `TensorDescriptor` becomes a 128-byte CUtensorMap
   kernel parameter (made by cuTensorMapEncodeTiled); a `desc.load([i, j])` becomes
   `cp.async.bulk.tensor` copies: the Tensor Memory Accelerator moves the whole block, already
   swizzled the way wgmma wants it, and zero-fills what lies outside the tensor.
4. The mbarrier ring. The K loop's loads become num_stages buffers, each with an mbarrier:
   a copy announces its bytes (`mbarrier.arrive.expect_tx`), the consumer spins on
   `mbarrier.try_wait.parity`, whose parity flips each time the ring wraps. The wgmma runs
   asynchronously and `wgmma.wait_group 1` keeps one group in flight while the next copies go out.
5. The persistent schedule. The grid is the number of SMs; each program loops over output
   tiles (tile_id, tile_id + NUM_SMS, ...): one wave of resident programs instead of one
   program per tile.

The stages printed: tile IR (target independent), gpu IR (layouts, buffers, the ring), simt IR
(what one thread runs) and PTX, all from `tile.dump(..., target="sm_90a")`.

Everything here runs without a GPU: the dumps compile for "sm_90a" on any machine and the
kernel runs on the NumPy interpreter (which models an H100: 132 SMs). On an H100 the same script
runs the kernel on the GPU and times it; benchmarks/bench_tma_matmul.py compares the same kernel
with Triton and cuBLAS.

Run it:  python tutorials/06_hopper_matmul.py
"""
import re

import numpy as np

import tile
import tile.language as tl
from tile.compiler import INTERPRETER, current_target
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, wgmma_shared
from tile.ir.tma_layouts import tma_layout
from tile.runtime import driver
from tile.runtime.arrays import describe_argument
from tile.runtime.tensor_map import encode_arguments
from tile.tools.tensor_descriptor import TensorDescriptor
from tile.viz import show_pipeline

ON_GPU = current_target() != INTERPRETER
BM, BN, BK = 128, 128, 64
NUM_WARPS, NUM_STAGES = 8, 3
TARGET = "sm_90a"


@tile.jit
def persistent_matmul(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr):
    # The block shapes come from the descriptors: they are compile-time constants.
    BLOCK_M: tl.constexpr = a_desc.block_shape[0]
    BLOCK_K: tl.constexpr = a_desc.block_shape[1]
    BLOCK_N: tl.constexpr = b_desc.block_shape[1]
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    # The persistent loop: program p computes output tiles p, p + NUM_SMS, p + 2 NUM_SMS, ...
    for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
        off_m = (tile_id // tiles_n) * BLOCK_M
        off_n = (tile_id % tiles_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            # Descriptor loads: rows or columns outside the tensor read as zero, so ragged
            # M, N and K need no masks.
            acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))  # writes outside C are dropped


def descriptors(a, b, c) -> tuple[TensorDescriptor, TensorDescriptor, TensorDescriptor]:
    """Host tensor descriptors of A (M x K), B (K x N) and C (M x N), all row-major."""
    return (TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
            TensorDescriptor.from_tensor(c, [BM, BN]))


def dump(stage: str, descs, M: int, N: int, K: int, num_sms: int) -> str:
    return str(tile.dump(persistent_matmul, *descs, M, N, K, NUM_SMS=num_sms, stage=stage, target=TARGET,
                         num_warps=NUM_WARPS, num_stages=NUM_STAGES))


def excerpt(text: str, keep: tuple[str, ...], limit: int = 2, width: int = 150) -> str:
    """The lines of `text` that contain one of `keep`: at most `limit` in a row with the same key,
    then "...", each cut to `width` characters."""
    out, run, key = [], 0, None
    for line in text.splitlines():
        hit = next((k for k in keep if k in line), None)
        if hit is None:
            continue
        run = run + 1 if hit == key else 1
        key = hit
        if run <= limit:
            line = re.sub(r"#shared<[^>]*>", "#shared", re.sub(r"#mma<[^>]*>", "#mma", line.rstrip()))
            line = re.sub(r"\{(%f\d+), [^}]*, (%f\d+)\}", r"{\1 .. \2}", line)  # wgmma's accumulator registers
            out.append(line if len(line) <= width else line[:width] + " ...")
        elif run == limit + 1:
            out.append("    ...")
    return "\n".join(out)


def section(title: str) -> None:
    print("\n" + "=" * 100 + f"\n{title}")


# ------------------------------------------------------------------------------ 1. wgmma layouts


def show_fragment(title: str, layout, shape: tuple[int, int], rows: int, cols: int) -> None:
    """Which lane.register of warp 0 holds each element of the top-left rows x cols."""
    coords = layout.to_linear(shape).element_coords()  # [warps, lanes, registers, 2]
    cell = [[""] * cols for _ in range(rows)]
    for lane in range(coords.shape[1]):
        for reg in range(coords.shape[2]):
            r, c = coords[0, lane, reg]
            if r < rows and c < cols and not cell[r][c]:
                cell[r][c] = f"{lane}.{reg}"
    print(f"\n{title}\n  {layout}")
    print("      " + "".join(f"{c:>6}" for c in range(cols)))
    for r in range(rows):
        print(f"  {r:>3} " + "".join(f"{x:>6}" for x in cell[r]))


def layouts(gpu_ir: str) -> None:
    section("1. wgmma layouts: the accumulator of wgmma.m64n128k16 on two warp groups")
    acc = MmaLayout(3, (NUM_WARPS, 1), (16, BN))
    # the layout tile chose for the accumulator is exactly this one
    assert f"tensor<{BM}x{BN}xf32, {acc}>" in gpu_ir, gpu_ir
    show_fragment("lane.register of warp 0 in the top-left 16 x 16 (mma.sync's C fragment, repeated every "
                  "8 columns)", acc, (BM, BN), 16, 16)
    ll = acc.to_linear((BM, BN))
    coords = ll.element_coords()
    print(f"\n{ll.num_registers} f32 registers per thread hold the {BM}x{BN} accumulator "
          f"({BM * BN} values / {32 * NUM_WARPS} threads). Rows owned by each warp:")
    for warp in range(NUM_WARPS):
        rows = coords[warp, :, :, 0]
        print(f"  warp {warp} (warp group {warp // 4}): rows {rows.min():>3} .. {rows.max():>3}, "
              f"columns {coords[warp, :, :, 1].min()} .. {coords[warp, :, :, 1].max()}")
    assert ll.num_registers == BM * BN // (32 * NUM_WARPS)
    assert [int(coords[w, :, :, 0].min()) for w in range(NUM_WARPS)] == [16 * w for w in range(NUM_WARPS)]
    # A may also come from registers (attention's P @ V does that): mma.sync's A fragment on the
    # warp group's rows. This matmul reads both operands from shared memory.
    show_fragment("operand A from registers (lane.register, two f16 per 32-bit register: registers 2j, 2j+1)",
                  DotOperandLayout(0, acc, 2), (BM, BK), 16, 16)


# ------------------------------------------------------------------------------ 2. descriptors


def decode_matrix_descriptor(bits: int) -> dict[str, int]:
    """The fixed fields of a wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor
    Format"): byte offsets are stored >> 4; the start address (bits 0-13) is added at run time."""
    return {"leading_byte_offset": ((bits >> 16) & 0x3FFF) << 4, "stride_byte_offset": ((bits >> 32) & 0x3FFF) << 4,
            "swizzle": {1: 128, 2: 64, 3: 32}.get(bits >> 62, 0)}


def matrix_descriptors(gpu_ir: str, ptx: str) -> None:
    section("2. Shared-memory operands: the 128-byte swizzle and wgmma's matrix descriptors")
    a_layout = wgmma_shared((BM, BK), 2, (1, 0))      # A is K-major: a row of K is contiguous
    b_layout = wgmma_shared((BK, BN), 2, (1, 0))      # B is N-major ("MN-major"), cut in 64-column blocks
    for name, layout, shape in (("A", a_layout, (BM, BK)), ("B", b_layout, (BK, BN))):
        assert str(layout)[:-1] in gpu_ir, (layout, gpu_ir)  # the buffers of the K loop (with a stage dim)
        print(f"\n{name} stage buffer {shape[0]}x{shape[1]} f16: {layout}")
    offsets = a_layout.offsets((BM, BK))
    print("\nA: 16-byte chunk j of row r sits in slot j ^ (r % 8) of its 128-byte row, so the 8 rows of a\n"
          "core matrix (8 x 16 bytes) are spread over all 32 banks:")
    for r in range(8):
        print(f"  row {r}: " + " ".join(f"{int(offsets[r, j * 8]) % 64 // 8:>2}" for j in range(BK // 8)))
    # The descriptor constants in the PTX: `or.b64 %rd, %start >> 4, FIELDS`.
    fields = [int(x) for x in re.findall(r"or\.b64 %rd\d+, %rd\d+, (\d+);", ptx) if int(x) >= 1 << 62]
    decoded = [decode_matrix_descriptor(x) for x in fields]
    want_a = {"leading_byte_offset": 16, "swizzle": 128,  # K-major: the leading offset is unused ("1")
              "stride_byte_offset": a_layout.offset_of((8, 0), (BM, BK)) * 2}
    want_b = {"leading_byte_offset": b_layout.offset_of((0, 64), (BK, BN)) * 2, "swizzle": 128,
              "stride_byte_offset": b_layout.offset_of((8, 0), (BK, BN)) * 2}
    print("\nMatrix descriptors in the PTX (decoded):")
    for name, d in zip(("A", "B"), decoded):
        print(f"  {name}: {d}")
    assert decoded == [want_a, want_b], decoded
    print("  A: 8-row core-matrix groups 1024 bytes apart (stride); B: also the next 64 columns 8 KiB on\n"
          "  (leading). Each k16 step moves A's start 32 bytes along its rows and B's 16 rows (2 KiB) down:")
    wgmma = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\w+)\.f32\.f16\.f16 \{[^}]*\}, (%rd\d+), (%rd\d+), "
                       r"%p\d+, (\d), (\d), (\d), (\d);", ptx)
    for shape, da, db, *imm in wgmma:
        print(f"  wgmma.mma_async.{shape} A desc {da}, B desc {db}, scale-a {imm[0]} scale-b {imm[1]} "
              f"transpose-a {imm[2]} transpose-b {imm[3]}")
    assert len(wgmma) == BK // 16 and all(s == f"m64n{BN}k16" for s, *_ in wgmma)
    assert all(w[3:] == ("1", "1", "0", "1") for w in wgmma)  # B is N-major: transposed relative to K-major
    # Each k16 step's descriptors are the first one plus (bytes to the step's first element) >> 4.
    added = {reg: int(x) << 4 for reg, x in re.findall(r"add\.u64 (%rd\d+), %rd\d+, (\d+);", ptx)}
    steps = [(added.get(da, 0), added.get(db, 0)) for _, da, db, *_ in wgmma]
    print("  start address advance per k16 step (A, B bytes): " + ", ".join(f"({a}, {b})" for a, b in steps))
    assert steps == [(a_layout.offset_of((0, 16 * i), (BM, BK)) * 2, b_layout.offset_of((16 * i, 0), (BK, BN)) * 2)
                     for i in range(BK // 16)]


# ------------------------------------------------------------------------------ 3. TMA descriptor


def tensor_descriptor(descs, ptx: str) -> None:
    section("3. The TMA tensor descriptor: host TensorDescriptor -> CUtensorMap -> cp.async.bulk.tensor")
    for name, desc in zip("ABC", descs):
        layout = tma_layout(desc.block_shape, 2)
        print(f"  {name}: shape {desc.shape}, strides {desc.strides}, block {desc.block_shape} -> box "
              f"{list(layout.box)} x {layout.copies} cop{'y' if layout.copies == 1 else 'ies'}, swizzle "
              f"{layout.swizzle} bytes")
    a = descs[0]
    info = describe_argument(a.base)
    args = encode_arguments(info.address, info.dtype, a.shape, a.strides, a.block_shape, a.padding)
    print("\ncuTensorMapEncodeTiled arguments for A (innermost dimension first; made once per descriptor shape,\n"
          "on the host, and passed as a 128-byte kernel parameter):")
    for key in ("tensorDataType", "globalDim", "globalStrides", "boxDim", "swizzle", "oobFill"):
        print(f"  {key:<15} {args[key]}")
    assert args["boxDim"] == [BK, BM] and args["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_128B"
    params = re.findall(r"\.param \.align 64 \.b8 (\w+)\[128\]", ptx)
    print(f"\nPTX kernel parameters: {params}")
    assert params == ["a_desc_tensormap", "b_desc_tensormap", "c_desc_tensormap"]
    print("\nLoads (one bulk copy per box; B's 64x128 block is two 64x64 boxes, one per 128-byte swizzle span):")
    print(excerpt(ptx, ("cp.async.bulk.tensor.2d.shared",), limit=3))
    print("\nThe epilogue: registers -> shared memory, a proxy fence, then TMA stores from shared memory:")
    epilogue = ptx[ptx.index("wgmma.wait_group.sync.aligned 0"):]
    print(excerpt(epilogue, ("fence.proxy.async", "cp.async.bulk.tensor.2d.global", "cp.async.bulk.commit",
                        "cp.async.bulk.wait"), limit=2))
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx


# ------------------------------------------------------------------------------ 4. mbarrier ring


def compact_simt(line: str) -> str:
    """A simt.wgmma line with its 64 accumulator values and types elided."""
    line = re.sub(r"^(\s*%\w+)(, %\w+){8,}, (%\w+) =", r"\1 .. \3 =", line)
    line = re.sub(r"(simt\.wgmma %\w+, %\w+, %\w+)(, %\w+){8,}", r"\1, <accumulator>", line)
    return re.sub(r": f32(, f32){8,}", ": f32 x 64", line)


def mbarrier_ring(gpu_ir: str, simt_ir: str, ptx: str) -> None:
    section(f"4. The mbarrier ring: {NUM_STAGES} stages, TMA copies {NUM_STAGES - 1} iterations ahead")
    print("\ngpu IR (excerpt):\n")
    print(excerpt(gpu_ir, ("gpu.local_alloc", "gpu.mbarrier", "gpu.tma_load_async", "tt.dot", "gpu.dot_wait",
                           "scf.for", "gpu.tma_store"), limit=3))
    start = simt_ir.rindex("\n", 0, simt_ir.index("simt.mbarrier_wait")) + 1
    body = simt_ir[start:simt_ir.index("simt.wgmma_wait {pending = 1}")]
    print("\nsimt IR, one thread's K-loop body (excerpt): wait for the stage, build the descriptors (arith.or of\n"
          "the start address >> 4 with the fixed fields), fence, 4 wgmma, commit:\n")
    print("\n".join(compact_simt(line) for line in body.splitlines() if "simt." in line or "arith.or" in line))
    assert body.count("simt.wgmma ") == BK // 16
    print("\nThe schedule read back from the gpu IR (tile.viz.show_pipeline): cN = copy for iteration N issued,\n"
          "MN = iteration N's wgmma reads the buffer, DN rM = dot N starts and dot M is retired:\n")
    ring = show_pipeline(gpu_ir)
    print(ring)
    assert ring.num_stages == NUM_STAGES and ring.lookahead == NUM_STAGES - 1 and ring.async_dots == 1
    stage_bytes = (BM * BK + BK * BN) * 2
    print(f"\nEach stage's mbarrier expects {stage_bytes} bytes (A {BM}x{BK} + B {BK}x{BN}, f16). Iteration i "
          f"waits on stage i % {NUM_STAGES} with parity (i // {NUM_STAGES}) % 2:")
    print("  iteration " + " ".join(f"{i:>3}" for i in range(2 * NUM_STAGES)))
    print("  stage     " + " ".join(f"{i % NUM_STAGES:>3}" for i in range(2 * NUM_STAGES)))
    print("  parity    " + " ".join(f"{i // NUM_STAGES % 2:>3}" for i in range(2 * NUM_STAGES)))
    start = ptx.index("mbarrier.try_wait.parity")
    head = [m for m in re.finditer(r"^(\$L__\w+):", ptx, re.M) if m.start() < start][-1]  # the K loop's label
    loop = ptx[head.start():ptx.index(f"bra.uni {head.group(1)};", start)]
    print("\nThe K loop in PTX (excerpt): spin on the stage's barrier, 4 async wgmma, keep 1 group in flight,\n"
          "then refill the stage retired by the wait:\n")
    print(excerpt(loop, ("$L__", "mbarrier.try_wait", "wgmma.fence", "wgmma.mma_async", "wgmma.commit", "wgmma.wait",
                         "mbarrier.arrive", "bar.sync", "cp.async.bulk"), limit=2, width=120))
    assert re.search(rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%r\d+\], {stage_bytes};", loop)
    assert loop.count("wgmma.mma_async") == BK // 16 and "wgmma.wait_group.sync.aligned 1;" in loop
    assert ptx.count("mbarrier.init.shared::cta.b64") == NUM_STAGES


# ------------------------------------------------------------------------------ 5. persistent schedule


def persistent_schedule(gpu_ir: str, ptx: str, num_sms: int) -> None:
    section(f"5. The persistent schedule: grid = {num_sms} programs (one per SM), a tile loop inside")
    size = 4096
    tiles_n = size // BN
    num_tiles = (size // BM) * tiles_n
    print(f"\nFor C = {size}x{size}: {num_tiles} tiles of {BM}x{BN} over {num_sms} programs "
          f"({num_tiles / num_sms:.2f} waves):")
    for pid in (0, 1, num_sms - 1):
        ids = list(range(pid, num_tiles, num_sms))
        shown = ", ".join(f"({t // tiles_n},{t % tiles_n})" for t in ids[:4])
        print(f"  program {pid:>3}: {len(ids)} tiles (row, column): {shown}, ...")
    step = re.search(rf"add\.s32 (%r\d+), \1, {num_sms};\n\s*setp\.lt\.s32 %p\d+, \1, %r\d+;\n\s*@%p\d+ bra\.uni "
                     r"(\$L__persistent_matmul_\d+);", ptx)
    assert step, "the tile loop's step is NUM_SMS"
    print(f"\nThe tile loop's back edge in PTX: tile_id += {num_sms}, branch to {step.group(2)} while tile_id < "
          f"num_tiles.")
    shared = int(re.search(r"shared_bytes = (\d+)", gpu_ir).group(1))
    print(f"Shared memory per program: {shared} bytes ({NUM_STAGES} stages x {(BM * BK + BK * BN) * 2} bytes + "
          f"{NUM_STAGES} mbarriers of 8 bytes, aligned; the epilogue's C tile reuses the ring's space).")
    print("Today each tile sets its ring up again (mbarrier.init ... inval around the K loop) and waits for its\n"
          "C store (cp.async.bulk.wait_group.read 0) before the next tile's loads start; overlapping the\n"
          "epilogue with the next tile's loads is the next step (issue 11, item 4).")
    assert shared <= driver.active.utils.get_device_properties()["max_shared_mem"]


# ------------------------------------------------------------------------------ run


def sm90a_ptx() -> str:
    """The PTX of the tutorial's kernel for sm_90a (tests/test_tutorials.py assembles it with ptxas)."""
    M, N, K = 200, 192, 160
    a, b = np.zeros((M, K), np.float16), np.zeros((K, N), np.float16)
    return dump("ptx", descriptors(a, b, np.zeros((M, N), np.float16)), M, N, K, 132)


def run(M: int, N: int, K: int, num_sms: int) -> tuple:
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    a, b = tile.to_device(a_host), tile.to_device(b_host)
    c = tile.to_device(np.full((M, N), np.nan, np.float16))  # poisoned: every element must be written
    descs = descriptors(a, b, c)
    grid = (min(num_sms, tile.cdiv(M, BM) * tile.cdiv(N, BN)),)
    launch = lambda: persistent_matmul[grid](*descs, M, N, K, NUM_SMS=num_sms,  # noqa: E731
                                             num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    launch()
    expected = a_host.astype(np.float64) @ b_host.astype(np.float64)
    got = c.numpy().astype(np.float64)
    err = np.max(np.abs(got - expected))
    print(f"\n{M}x{N}x{K} on {grid[0]} programs: max abs error vs NumPy (float64): {err:.3g}  (fp16 output)")
    assert np.allclose(got, expected, rtol=1e-2, atol=2e-2 * np.sqrt(K / 64))
    return descs, launch


def main() -> None:
    num_sms = driver.active.utils.get_device_properties()["multiprocessor_count"]
    # Not multiples of the 128 x 128 x 64 blocks: TMA zero-fills the loads and clips the stores.
    M, N, K = (4096 + 64, 4096 + 32, 4096 + 16) if ON_GPU else (200, 192, 160)
    descs, launch = run(M, N, K, num_sms)
    gpu_ir = dump("gpu", descs, M, N, K, num_sms)
    simt_ir = dump("simt", descs, M, N, K, num_sms)
    ptx = dump("ptx", descs, M, N, K, num_sms)
    print("\n--- tile IR: target independent; descriptor loads and stores, the two loops\n")
    print(tile.dump(persistent_matmul, *descs, M, N, K, NUM_SMS=num_sms, stage="tile", target=TARGET,
                    num_warps=NUM_WARPS, num_stages=NUM_STAGES))
    layouts(gpu_ir)
    matrix_descriptors(gpu_ir, ptx)
    tensor_descriptor(descs, ptx)
    mbarrier_ring(gpu_ir, simt_ir, ptx)
    persistent_schedule(gpu_ir, ptx, num_sms)
    if ON_GPU:
        ms = tile.testing.do_bench(launch, warmup=25, rep=100, return_mode="median")
        print(f"\n{M}x{N}x{K}: {ms:.3f} ms, {2 * M * N * K / ms / 1e9:.0f} TFLOP/s "
              "(benchmarks/bench_tma_matmul.py: the same kernel against Triton and cuBLAS)")


if __name__ == "__main__":
    main()
