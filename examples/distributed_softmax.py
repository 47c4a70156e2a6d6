"""Softmax of rows split across GPUs: tile kernels on each rank's shard, NCCL all-reduces between them.

Each of the N ranks (one process per GPU, started by torchrun) holds a slice of the columns of
every row. The softmax of a row needs two numbers from the whole row, its max and the sum of
exp(x - max), so each rank reduces its own slice with a tile kernel, torch.distributed combines
the partial results across GPUs (all_reduce MAX, then SUM), and a last tile kernel normalizes the
rank's slice. Every rank then gathers the slices and checks the whole softmax against NumPy in
float64.

tile launches on PyTorch's current device, so `torch.cuda.set_device(local_rank)` is all it takes
for rank r's kernels to run on GPU r. The normalizing kernel is autotuned with
`tune_on_rank_zero=True`: rank 0 times the configs and broadcasts its choice to the others.

Run it:  torchrun --nproc-per-node=2 examples/distributed_softmax.py
"""
import os

import numpy as np
import torch
import torch.distributed as dist

import tile
import tile.language as tl

ROWS, COLUMNS_PER_RANK = 384, 1500


@tile.jit
def shard_max_kernel(x_ptr, max_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(max_ptr + row, tl.max(x, axis=0))


@tile.jit
def shard_exp_sum_kernel(x_ptr, max_ptr, sum_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(sum_ptr + row, tl.sum(tl.exp(x - tl.load(max_ptr + row)), axis=0))


@tile.autotune(configs=[tile.Config({}, num_warps=w) for w in (2, 4, 8)], key=["n_cols"], tune_on_rank_zero=True)
@tile.jit
def normalize_kernel(out_ptr, x_ptr, max_ptr, sum_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    y = tl.exp(x - tl.load(max_ptr + row)) / tl.load(sum_ptr + row)
    tl.store(out_ptr + row * row_stride + cols, y, mask=mask)


def distributed_softmax(shard: torch.Tensor) -> torch.Tensor:
    """The softmax of the rows whose columns `shard` holds part of, for those columns."""
    rows, cols = shard.shape
    block = tile.next_power_of_2(cols)
    row_max = torch.empty(rows, device=shard.device, dtype=torch.float32)
    shard_max_kernel[(rows,)](shard, row_max, shard.stride(0), cols, BLOCK=block)
    dist.all_reduce(row_max, op=dist.ReduceOp.MAX)
    row_sum = torch.empty_like(row_max)
    shard_exp_sum_kernel[(rows,)](shard, row_max, row_sum, shard.stride(0), cols, BLOCK=block)
    dist.all_reduce(row_sum, op=dist.ReduceOp.SUM)
    out = torch.full_like(shard, float("nan"))
    normalize_kernel[(rows,)](out, shard, row_max, row_sum, shard.stride(0), cols, BLOCK=block)
    return out


def main() -> None:
    if "LOCAL_RANK" not in os.environ:
        raise SystemExit("run it with torchrun: torchrun --nproc-per-node=2 examples/distributed_softmax.py")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        # Every rank draws the same matrix and keeps its slice of the columns (slices of one
        # width: the autotuning key, the width, must be the same on every rank).
        full = torch.randn(ROWS, COLUMNS_PER_RANK * world, generator=torch.Generator().manual_seed(0)) * 4
        shard = full[:, rank * COLUMNS_PER_RANK:(rank + 1) * COLUMNS_PER_RANK].contiguous().cuda()

        out = distributed_softmax(shard)
        torch.cuda.synchronize()
        assert tile.runtime.driver.active.get_current_device() == local_rank

        slices = [torch.empty_like(out) for _ in range(world)]
        dist.all_gather(slices, out)
        result = torch.cat(slices, dim=1).cpu().numpy()
        x64 = full.double().numpy()
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        expected = e / e.sum(axis=1, keepdims=True)
        error = float(np.max(np.abs(result - expected)))
        print(f"rank {rank}/{world} on cuda:{torch.cuda.current_device()}: max abs error vs NumPy (float64) "
              f"{error:.3g}, normalize config {normalize_kernel.best_config}")
        assert np.allclose(result, expected, rtol=1e-5, atol=1e-6), f"rank {rank}: wrong softmax"
        dist.barrier()
        if rank == 0:
            print("distributed softmax OK")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
