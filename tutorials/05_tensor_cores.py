"""Tutorial 05: how tile maps `tl.dot` onto the tensor cores.

Tutorial 04 wrote a matrix multiplication; this one opens the compiler to show what becomes of
its K loop on an NVIDIA GPU (sm_80 and later, Hopper included):

1. Layouts. The accumulator gets an #mma layout: each warp holds 16x8 tiles of C the way one
   `mma.sync.m16n8k16` instruction wants them. The operands get #dot_op layouts: the A and B
   fragments of the same instruction, two f16 per 32-bit register. Every layout is a map from
   (register, lane, warp) to an element of the tensor (`to_linear`); we print it.
2. Swizzle. The tiles of A and B wait in shared memory. `ldmatrix` reads 8 rows of 16 bytes
   per 8x8 matrix; stored row after row, those rows would sit in the same 4 banks and the
   read would take 8 times as long. tile XORs each row's 16-byte chunks with the row number
   ("swizzle") so the 8 rows land in 8 different bank groups; we print the offsets.
3. Pipeline. The loads of A and B become `cp.async` copies issued `num_stages - 1` iterations
   ahead into `num_stages` buffers; each iteration waits for its own group
   (`cp.async.wait_group`), reads its fragments with `ldmatrix` and runs `mma.sync`. We print
   the kernel at each stage of the compiler with `tile.dump`: tile IR, gpu IR (layouts, async
   copies), simt IR (one thread's code) and PTX.

Everything here runs without a GPU (the dumps compile for target "sm_90a"; the kernel runs on
the NumPy interpreter), and on a GPU the same script runs the kernel on the tensor cores.

Run it:  python tutorials/05_tensor_cores.py
"""
import re

import numpy as np

import tile
import tile.language as tl
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, ldmatrix_conflict_free, shared_for_dot, shared_wavefronts
from tile.ir.layouts import SharedLayout

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
NUM_WARPS, NUM_STAGES = 4, 3


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# ------------------------------------------------------------------------------ 1. layouts


def show_fragment(title: str, layout, shape: tuple[int, int], rows: int, cols: int, per_word: int = 1) -> None:
    """Which lane (and which register) of warp 0 holds each element of the top-left rows x cols."""
    ll = layout.to_linear(shape)
    coords = ll.element_coords()                       # [warps, lanes, registers, 2]
    cell = [[""] * cols for _ in range(rows)]
    for lane in range(32):
        for reg in range(ll.num_registers):
            r, c = coords[0, lane, reg]
            if r < rows and c < cols and not cell[r][c]:
                cell[r][c] = f"{lane}.{reg // per_word}" if per_word > 1 else f"{lane}.{reg}"
    print(f"\n{title}\n  {layout}")
    print("      " + "".join(f"{c:>6}" for c in range(cols)))
    for r in range(rows):
        print(f"  {r:>3} " + "".join(f"{x:>6}" for x in cell[r]))


def layouts() -> None:
    mma = MmaLayout(2, (2, 2))  # 2 x 2 warps, as accelerate-dot picks for a 64x64 tile and 4 warps
    print("=" * 100 + "\n1. Layouts: lane.register of warp 0 for each element (two f16 per 32-bit register "
          "in the operands: lane.word)")
    show_fragment("C (accumulator) of one mma.m16n8k16, the top-left 16x8 of the 64x64 tile:", mma,
                  (BLOCK_M, BLOCK_N), 16, 8)
    show_fragment("A (16 x 16 of the 64x32 operand): registers 2j, 2j+1 pack into word j = a0..a3 of the mma:",
                  DotOperandLayout(0, mma, 2), (BLOCK_M, BLOCK_K), 16, 16, per_word=2)
    show_fragment("B (16 x 8 of the 32x64 operand): words b0, b1:", DotOperandLayout(1, mma, 2),
                  (BLOCK_K, BLOCK_N), 16, 8, per_word=2)
    ll = mma.to_linear((BLOCK_M, BLOCK_N))
    print(f"\nThe whole 64x64 accumulator: {ll.num_registers} f32 registers per thread; register bases "
          f"{list(ll.register_bases)} (beyond the first two: the next 16x8 tiles of the warp), warp bases "
          f"{list(ll.warp_bases)}.")


# ------------------------------------------------------------------------------ 2. swizzle


def swizzle() -> None:
    shape, elem = (BLOCK_M, BLOCK_K), 2
    print("\n" + "=" * 100 + "\n2. Swizzle: where the 16-byte chunks of the A tile sit in shared memory")
    for name, layout in (("plain row-major", SharedLayout(1, 1, 1, (1, 0))),
                         ("swizzled (shared_for_dot)", shared_for_dot(shape, elem, 0, (1, 0)))):
        offsets = layout.offsets(shape)
        chunk = 16 // elem
        print(f"\n{name}: {layout}\n  chunk of row r, column chunk j -> 16-byte slot in the buffer (rows 0..7)")
        for r in range(8):
            slots = [int(offsets[r, j * chunk]) // chunk for j in range(shape[1] // chunk)]
            print(f"    row {r}: " + " ".join(f"{s:>3}" for s in slots))
        rows = [int(offsets[r, 0]) * elem for r in range(8)]  # the 8 rows one ldmatrix matrix reads
        print(f"  one ldmatrix 8x8 matrix (rows 0..7, chunk 0): byte offsets {rows} -> "
              f"{shared_wavefronts(rows, 16)} wavefront(s); conflict-free everywhere: "
              f"{ldmatrix_conflict_free(layout, shape, elem)}")


# ------------------------------------------------------------------------------ 3. pipeline

ALIASES = [(r"#dot_op<op_idx = 0, [^>]*>>", "#A"), (r"#dot_op<op_idx = 1, [^>]*>>", "#B"), (r"#mma<[^>]*>", "#mma"),
           (r"#blocked<[^>]*>", "#blocked"), (r"#shared<[^>]*>", "#shared"), (r"#slice<[^>]*>>", "#slice")]


def short(line: str) -> str:
    for pattern, alias in ALIASES:
        line = re.sub(pattern, alias, line)
    return line


def excerpt(text: str, keep: tuple[str, ...], limit: int) -> str:
    """The lines of `text` that contain one of `keep`, shortened: at most `limit` in a row for
    each, then a count of those left out."""
    out, run, key = [], 0, None
    for line in text.splitlines():
        hit = next((k for k in keep if k in line), None)
        if hit is None:
            continue
        run = run + 1 if hit == key else 1
        key = hit
        if run <= limit:
            line = short(line.rstrip())
            out.append(line if len(line) <= 150 else line[:150] + " ...")
        elif run == limit + 1:
            out.append("    ...")
    return "\n".join(out)


def pipeline(a, b, c, M: int, N: int, K: int) -> None:
    args = (a, b, c, M, N, K, K, 1, N, 1, N, 1)
    meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    print("\n" + "=" * 100 + "\n3. The pipeline, stage by stage (target sm_90a)")
    print("\n--- tile IR: target independent; the K loop is an scf.for with tt.dot in it\n")
    print(tile.dump(matmul_kernel, *args, stage="tile", target="sm_90a", **meta))
    gpu = str(tile.dump(matmul_kernel, *args, stage="gpu", target="sm_90a", **meta))
    print("\n--- gpu IR (excerpt): buffers of num_stages tiles, async copies issued ahead, fragments "
          "read from the current stage, the dot on #mma / #dot_op layouts\n")
    print(excerpt(gpu, ("gpu.local_alloc", "gpu.local_view", "gpu.async", "gpu.local_load", "gpu.barrier",
                        "tt.dot", "scf.for", "scf.yield"), 4))
    simt = str(tile.dump(matmul_kernel, *args, stage="simt", target="sm_90a", **meta))
    print("\n--- simt IR (excerpt): what one thread runs; ldmatrix words feed simt.mma directly\n")
    print(excerpt(simt, ("simt.cp_async", "simt.ldmatrix", "simt.mma", "scf.for"), 2))
    ptx = str(tile.dump(matmul_kernel, *args, stage="ptx", target="sm_90a", **meta))
    print("\n--- PTX (excerpt)\n")
    print(excerpt(ptx, ("cp.async", "ldmatrix", "mma.sync", "bar.sync", "$L__"), 2))
    loop = ptx[ptx.index("$L__matmul_kernel_1:"):]
    loop = loop[:loop.index("bra.uni $L__matmul_kernel_1")]
    print(f"\nPer iteration (a K slice of {BLOCK_K}) each thread issues {loop.count('mma.sync')} mma.sync, "
          f"{loop.count('ldmatrix')} ldmatrix.x4 and {loop.count('cp.async.cg')} cp.async of 16 bytes.")


# ------------------------------------------------------------------------------ run


def main() -> None:
    layouts()
    swizzle()
    rng = np.random.default_rng(0)
    M, N, K = 96, 80, 96  # not multiples of the 64x64 tiles: the masks zero-fill the copies
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    a, b = tile.to_device(a_host), tile.to_device(b_host)
    c = tile.empty((M, N), np.float16)
    pipeline(a, b, c, M, N, K)
    grid = (tile.cdiv(M, BLOCK_M), tile.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    expected = a_host.astype(np.float64) @ b_host.astype(np.float64)
    err = np.max(np.abs(c.numpy().astype(np.float64) - expected))
    print(f"\nmax abs error vs NumPy (float64): {err:.3g}  (fp16 output)")
    assert np.allclose(c.numpy().astype(np.float64), expected, rtol=1e-2, atol=5e-2)


if __name__ == "__main__":
    main()
