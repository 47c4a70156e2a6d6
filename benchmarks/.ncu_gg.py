import sys, torch, triton, triton.language as ttl
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
import tile, tile.language as tile_tl
from load_kernels import load_kernels
import bench_grouped_gemm as bg
scratch = lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda")
tile.set_allocator(scratch); triton.set_allocator(scratch)
tk = load_kernels("gt", tile.jit, tile_tl, "kernels_grouped.py").grouped_matmul_tma_kernel
rk = load_kernels("gr", triton.jit, ttl, "kernels_grouped.py").grouped_matmul_tma_kernel
sms = torch.cuda.get_device_properties(0).multi_processor_count
n = int(sys.argv[1]); bm, bn, bk, warps, stages = map(int, sys.argv[2:7])
p = bg.problems(n, 4, True)
for k in (tk, rk):
    for _ in range(3):
        k[(sms,)](*p["args"], NUM_SM=sms, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, num_warps=warps, num_stages=stages)
torch.cuda.synchronize()
