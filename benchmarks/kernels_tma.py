"""A persistent matmul over host tensor descriptors, written once in Triton's language (as the
descriptor variant of Triton's 09-persistent-matmul tutorial). bench_tma_matmul.py loads this
file with tile's and with Triton's `jit`/`tl` (through the stand-in module `_backend`)."""
from _backend import jit, tl


@jit
def persistent_matmul_descriptors(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr):
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
        off_m = (tile_id // tiles_n) * BM
        off_n = (tile_id % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))
