"""Resource limits checked while a kernel compiles for a GPU target, before anything launches.

A configuration that cannot run on its target is a `tile.OutOfResources` raised by the
compiler (`kernel[grid](...)`, `kernel.warmup`, `tile.compile`, `tile.dump(..., target=...)`),
not a driver error at launch: the autotuner skips such configurations (autotuner.is_tuning_error).

    shared memory   the bytes the shared-memory allocator (opt/alloc_shared.py) and the lowering
                    placed, against the target's opt-in limit per block: the GPU's own attribute
                    when a GPU of that target is present, else driver.MAX_SHARED_BY_TARGET
                    (sm_80 163 KiB, sm_89 99 KiB, sm_90/sm_90a 227 KiB)
    threads         num_warps * 32 against CUDA's 1024 threads per block

Registers are not checked here: ptxas fits every kernel within the registers its `.maxntid`
block allows (255 per thread at most), spilling to local memory if it must, as for Triton; the
driver reports the block size a loaded kernel can take (cuda_launch.CudaBackend checks it).
"""
from __future__ import annotations

MAX_THREADS_PER_BLOCK = 1024


def shared_memory_limit(target: str) -> int | None:
    """The most shared memory one program may use on `target` (None for an unknown target)."""
    from .cuda_driver import CudaDevice, cuda_available
    from .driver import MAX_SHARED_BY_TARGET

    if cuda_available():
        device = CudaDevice.get(0)
        if device.ptx_target() == target:
            return device.max_shared_memory_per_block_optin
    return MAX_SHARED_BY_TARGET.get(target)


def check_resources(kernel: str, target: str, shared_bytes: int, threads: int) -> None:
    """Raise OutOfResources if a program of `kernel` needs more shared memory or threads than
    `target` gives one block."""
    from .errors import OutOfResources

    if threads > MAX_THREADS_PER_BLOCK:
        raise OutOfResources(threads, MAX_THREADS_PER_BLOCK, "threads", kernel=kernel, target=target,
                             hint="use fewer num_warps")
    limit = shared_memory_limit(target)
    if limit is not None and shared_bytes > limit:
        raise OutOfResources(shared_bytes, limit, "shared memory", kernel=kernel, target=target)
