"""Tutorial 04: matrix multiplication (fp16 in, fp32 accumulation), with autotuning, grouped
program ordering and a fused activation.

Each program computes one BLOCK_M x BLOCK_N tile of C = A @ B by walking along K in
BLOCK_K steps: load a tile of A and a tile of B, `tl.dot` them into an fp32 accumulator.
On an NVIDIA GPU, tile turns that loop into tensor-core code: mma.sync instructions fed by
ldmatrix from swizzled shared memory, with cp.async copies of the next K steps in flight
(`num_stages` buffers). Tutorial 05 shows each of those steps.

Two details that matter for speed:
- Grouped ordering: programs are numbered so that GROUP_M consecutive programs share the
  same columns of B, so tiles of B are reused from the L2 cache instead of re-read.
- The activation (leaky ReLU here) is applied to the accumulator before the store: fused,
  it costs no extra trip through memory.

`tile.autotune` times each `tile.Config` on the first call for a given (M, N, K) and keeps the
fastest (set TILE_PRINT_AUTOTUNING=1 to see it).

Run it:  python tutorials/04_matrix_multiplication.py
"""
import numpy as np

import tile
import tile.language as tl
from tile.compiler import INTERPRETER, current_target

ON_GPU = current_target() != INTERPRETER

if ON_GPU:
    CONFIGS = [
        tile.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
        tile.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
        tile.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
        tile.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
    ]
else:  # the NumPy interpreter: small tiles, few configs
    CONFIGS = [tile.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=4, num_stages=2),
               tile.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=4, num_stages=3)]


@tile.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@tile.autotune(configs=CONFIGS, key=["M", "N", "K"])
@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    # Grouped ordering: walk GROUP_M rows of tiles before moving to the next column of tiles.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
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
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: tile.DeviceArray, b: tile.DeviceArray, activation: str = "") -> tile.DeviceArray:
    (M, K), (_, N) = a.shape, b.shape
    c = tile.empty((M, N), np.float16)
    grid = lambda meta: (tile.cdiv(M, meta["BLOCK_M"]) * tile.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, ACTIVATION=activation)
    return c


def main() -> None:
    rng = np.random.default_rng(0)
    M, N, K = (512, 512, 512) if ON_GPU else (96, 80, 72)  # not multiples of the tiles: masks matter
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    c = matmul(tile.to_device(a_host), tile.to_device(b_host), activation="leaky_relu").numpy()
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64)
    expected = np.where(exact >= 0, exact, 0.01 * exact)
    err = np.max(np.abs(c.astype(np.float64) - expected))
    print(f"max abs error vs NumPy (float64): {err:.3g}  (fp16 output), best config: {matmul_kernel.best_config}")
    assert np.allclose(c.astype(np.float64), expected, rtol=1e-2, atol=5e-2 * np.sqrt(K / 64))

    # The optimized tile IR: the K loop (scf.for) with the dot and its loop-carried accumulator.
    print(tile.dump(matmul_kernel))


if __name__ == "__main__":
    main()
