"""Grouped TMA GEMM at the tutorial's M x 8192 x 8192 shapes: every tutorial config, tile vs Triton (do_bench ms)."""
import sys, torch, triton, triton.language as ttl
from triton.testing import do_bench
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
import tile, tile.language as tile_tl
from load_kernels import load_kernels
scratch = lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda")
tile.set_allocator(scratch); triton.set_allocator(scratch)
tk = load_kernels("gt", tile.jit, tile_tl, "kernels_grouped.py").grouped_matmul_tma_kernel
rk = load_kernels("gr", triton.jit, ttl, "kernels_grouped.py").grouped_matmul_tma_kernel
sms = torch.cuda.get_device_properties(0).multi_processor_count
M = int(sys.argv[1]); N = K = 8192
a = [torch.rand((M, K), device="cuda", dtype=torch.float16) for _ in range(4)]
b = [torch.rand((N, K), device="cuda", dtype=torch.float16) for _ in range(4)]
c = [torch.empty((M, N), device="cuda", dtype=torch.float16) for _ in range(4)]
t = lambda xs, dt=torch.int64: torch.tensor(xs, device="cuda", dtype=dt)
args = (t([x.data_ptr() for x in a]), t([x.data_ptr() for x in b]), t([x.data_ptr() for x in c]), t([M, N, K] * 4, torch.int32), t([K, K, N] * 4, torch.int32), 4)
for bn in (128, 256):
    for bk in (64, 128):
        for s in (3, 4):
            for w in (4, 8):
                row = []
                for k in (tk, rk):
                    fn = lambda: k[(sms,)](*args, NUM_SM=sms, BLOCK_SIZE_M=128, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, num_warps=w, num_stages=s)
                    try:
                        fn(); torch.cuda.synchronize(); row.append(do_bench(fn, warmup=5, rep=20))
                    except Exception as e:
                        row.append(float("nan"))
                print(f"M={M} 128x{bn}x{bk} s{s} w{w}: tile {row[0]:.4f} Triton {row[1]:.4f} ratio {row[1]/row[0]:.3f}", flush=True)
