"""Tutorial 09: layer normalization, forward and backward, with a spin lock for dW and dB.

Forward, for each row x of the input (N features), with weights w and biases b:

    mean = sum(x) / N      rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
    xhat = (x - mean) * rstd          y = xhat * w + b

Backward, given dy = dL/dy, per row:

    dx = rstd * (w * dy - (c1 * xhat + c2))      c1 = sum(xhat * w * dy) / N,  c2 = sum(w * dy) / N

and, summed over all M rows, dw = sum(dy * xhat) and db = sum(dy). dx is one row per program
like the forward. dw and db need a reduction across programs, done in two stages as in
Triton's layer-norm tutorial:

1. Program `row` adds its row's dy * xhat and dy into buffer `row % GROUP_SIZE_M` of partial
   sums (GROUP_SIZE_M x N). Programs that share a buffer take turns under a spin lock: an
   `atomic_cas` on the buffer's lock word loops until it swaps 0 for 1, the program reads,
   adds and writes its buffer rows, and an `atomic_xchg` puts 0 back. A count word per buffer
   says whether anyone wrote it yet: the first writer stores instead of adding, so the
   buffers need not be zeroed.
2. A second kernel sums the GROUP_SIZE_M partial rows of each column block.

The partial sums are kept in fp32 (Triton's tutorial keeps them in the weights' fp16; its dB
check, atol 1e-2, fails on Triton 3.6 on an H100): the only fp16 rounding of dw and db is then
the final store, and the checks below use tolerances of that size (see main()).

On the NumPy interpreter the lock kernel works too: the interpreter sees a while loop whose
condition reads an atomic, and runs the programs one at a time, switching at that loop
(tile/runtime/interp_schedule.py), instead of as one vectorised batch.

Run it:  python tutorials/09_layer_norm_backward.py
(small shapes on the NumPy interpreter when there is no GPU; on a GPU it also prints a GB/s
table of the backward pass for tile, Triton and PyTorch when they are installed).
"""
import importlib.util

import numpy as np

import tile
import tile.language as tl
from tile.compiler import INTERPRETER, current_target

ON_GPU = current_target() != INTERPRETER
MAX_FUSED_BYTES = 65536  # a row must fit in one block of at most 64 KB


@tile.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    tl.store(Y + row * stride + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@tile.jit
def layer_norm_bwd_dx_fused_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                                   GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # This row's buffer of partial sums, its lock and its count (Lock holds GROUP_SIZE_M locks,
    # then GROUP_SIZE_M counts).
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # dx
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx.to(DX.dtype.element_ty), mask=mask)
    # Add this row's dw and db to its buffer, under the buffer's lock.
    partial_dw = dy * xhat
    partial_db = dy
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    tl.debug_barrier()  # every warp has read the count before thread 0 sets it below
    if count == 0:  # the first writer stores: the buffers start uninitialised
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    # Every thread's stores must be done before the lock is released.
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@tile.jit
def layer_norm_bwd_dwdb_kernel(DW, DB, FINAL_DW, FINAL_DB, M, N,
                               BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    tl.store(FINAL_DW + cols, tl.sum(dw, axis=0).to(FINAL_DW.dtype.element_ty), mask=cols < N)
    tl.store(FINAL_DB + cols, tl.sum(db, axis=0).to(FINAL_DB.dtype.element_ty), mask=cols < N)


def launch_config(n_cols: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK_SIZE_N, num_warps) for rows of n_cols elements; too wide a row is a ValueError."""
    block = tile.next_power_of_2(n_cols)
    if block * itemsize > MAX_FUSED_BYTES:
        raise ValueError(f"rows of {n_cols} elements of {itemsize} bytes do not fit in one block of "
                         f"{MAX_FUSED_BYTES} bytes: this layer norm supports at most "
                         f"{MAX_FUSED_BYTES // itemsize} features")
    return block, min(max(block // 256, 1), 8)


def group_size(n_cols: int, n_rows: int) -> int:
    """How many buffers of partial dw/db sums: more for narrow rows (less work per row)."""
    groups = 256 if n_cols <= 1024 else 128 if n_cols <= 4096 else 96 if n_cols <= 8192 else 64
    return min(groups, n_rows)


def _check_shapes(x, w, *others) -> tuple[int, int]:
    if len(x.shape) != 2:
        raise ValueError(f"x must be 2-D (rows, features), got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if tuple(w.shape) != (n_cols,):
        raise ValueError(f"w must have shape ({n_cols},) for x of shape {tuple(x.shape)}, got {tuple(w.shape)}")
    for name, a, shape in others:
        if tuple(a.shape) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(a.shape)}")
    return n_rows, n_cols


def layer_norm_forward(x, w, b, eps: float = 1e-5):
    """(y, mean, rstd) of the layer norm of each row of x (2-D DeviceArray); y has x's dtype."""
    n_rows, n_cols = _check_shapes(x, w, ("b", b, tuple(w.shape)))
    block, num_warps = launch_config(n_cols, np.dtype(x.dtype).itemsize)
    y = tile.empty(x.shape, x.dtype)
    mean = tile.empty((n_rows,), np.float32)
    rstd = tile.empty((n_rows,), np.float32)
    layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, mean, rstd, n_cols, n_cols, eps, BLOCK_SIZE_N=block,
                                     num_warps=num_warps)
    return y, mean, rstd


def layer_norm_backward(dy, x, w, mean, rstd, group_size_m: int = 0):
    """(dx, dw, db) for the forward's saved x, w, mean, rstd and the output gradient dy;
    `group_size_m` buffers of partial dw/db sums (0: chosen from the row width)."""
    n_rows, n_cols = _check_shapes(x, w, ("dy", dy, tuple(x.shape)), ("mean", mean, (x.shape[0],)),
                                   ("rstd", rstd, (x.shape[0],)))
    block, num_warps = launch_config(n_cols, np.dtype(x.dtype).itemsize)
    if group_size_m < 0:
        raise ValueError(f"group_size_m must be positive (or 0 for the default), got {group_size_m}")
    groups = min(group_size_m, n_rows) if group_size_m else group_size(n_cols, n_rows)
    locks = tile.to_device(np.zeros(2 * groups, np.int32))  # GROUP_SIZE_M locks, then GROUP_SIZE_M counts
    partial_dw = tile.empty((groups, n_cols), np.float32)  # uninitialised: each buffer's first writer stores
    partial_db = tile.empty((groups, n_cols), np.float32)
    dx = tile.empty(x.shape, x.dtype)
    dw = tile.empty((n_cols,), w.dtype)
    db = tile.empty((n_cols,), w.dtype)
    layer_norm_bwd_dx_fused_kernel[(n_rows,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, n_cols,
                                              n_cols, GROUP_SIZE_M=groups, BLOCK_SIZE_N=block, num_warps=num_warps)
    layer_norm_bwd_dwdb_kernel[(tile.cdiv(n_cols, 128),)](partial_dw, partial_db, dw, db, groups, n_cols,
                                                          BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
    return dx, dw, db


def reference(x, w, b, dy, eps: float = 1e-5):
    """y, dx, dw, db of the layer norm in float64 NumPy."""
    x, w, b, dy = (a.astype(np.float64) for a in (x, w, b, dy))
    n = x.shape[1]
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    return xhat * w + b, (wdy - (xhat * c1 + c2)) * rstd, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def check(n_rows: int, n_cols: int, group_size_m: int = 0) -> None:
    rng = np.random.default_rng(n_rows * n_cols)
    x_host = (-2.3 + 0.5 * rng.standard_normal((n_rows, n_cols))).astype(np.float16)
    w_host = rng.random(n_cols).astype(np.float16)
    b_host = rng.random(n_cols).astype(np.float16)
    dy_host = (0.1 * rng.standard_normal((n_rows, n_cols))).astype(np.float16)
    x = tile.to_device(x_host)
    w = tile.to_device(w_host)
    y, mean, rstd = layer_norm_forward(x, w, tile.to_device(b_host))
    dx, dw, db = layer_norm_backward(tile.to_device(dy_host), x, w, mean, rstd, group_size_m)
    y_ref, dx_ref, dw_ref, db_ref = reference(x_host, w_host, b_host, dy_host)
    errors = {name: np.max(np.abs(got.numpy().astype(np.float64) - want))
              for name, got, want in [("y", y, y_ref), ("dx", dx, dx_ref), ("dw", dw, dw_ref), ("db", db, db_ref)]}
    print(f"M={n_rows} N={n_cols} GROUP_SIZE_M={group_size_m or group_size(n_cols, n_rows)}: max abs error vs NumPy (float64): "
          + ", ".join(f"{name} {err:.3g}" for name, err in errors.items()))
    # Tolerances: fp32 math, one fp16 rounding of each output (2**-11 relative) plus the fp32
    # sums' error, which grows with the number of terms (M rows for dw and db).
    fp16 = 2.0**-11
    np.testing.assert_allclose(y.numpy(), y_ref, rtol=2 * fp16, atol=1e-3)
    np.testing.assert_allclose(dx.numpy(), dx_ref, rtol=2 * fp16, atol=1e-4)
    sums_atol = 1e-6 * n_rows
    np.testing.assert_allclose(dw.numpy(), dw_ref, rtol=2 * fp16, atol=sums_atol)
    np.testing.assert_allclose(db.numpy(), db_ref, rtol=2 * fp16, atol=sums_atol)


def benchmark() -> None:
    """GB/s of the backward pass (x, dy read and dx written once, as Triton's tutorial counts it)
    for M = 4096 fp16 rows: tile's two kernels, the same kernels compiled by Triton, PyTorch."""
    import torch

    providers = ["tile"] + (["triton"] if importlib.util.find_spec("triton") else []) + ["torch"]
    kernels = {"tile": (layer_norm_bwd_dx_fused_kernel, layer_norm_bwd_dwdb_kernel)}
    if "triton" in providers:
        twin = tile.testing.triton_twin
        kernels["triton"] = (twin(layer_norm_bwd_dx_fused_kernel), twin(layer_norm_bwd_dwdb_kernel))

    @tile.testing.perf_report(tile.testing.Benchmark(
        x_names=["N"], x_vals=[512 * i for i in range(2, 32, 2)], line_arg="provider", line_vals=providers,
        line_names=[name.capitalize() if name != "tile" else "tile" for name in providers],
        plot_name="layer-norm-backward", ylabel="GB/s", args={"M": 4096}))
    def bench(M: int, N: int, provider: str):
        x = (-2.3 + 0.5 * torch.randn(M, N, device="cuda")).half().requires_grad_(True)
        w = torch.rand(N, device="cuda", dtype=torch.float16, requires_grad=True)
        b = torch.rand(N, device="cuda", dtype=torch.float16, requires_grad=True)
        dy = 0.1 * torch.randn_like(x)
        gbps = lambda ms: 3 * x.numel() * x.element_size() / ms * 1e-6  # noqa: E731
        if provider == "torch":
            y = torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
            return gbps(tile.testing.do_bench(lambda: y.backward(dy, retain_graph=True), grad_to_none=[x, w, b]))
        x = x.detach()
        mean = x.float().mean(dim=1)
        rstd = 1 / torch.sqrt(x.float().var(dim=1, unbiased=False) + 1e-5)
        block, num_warps = launch_config(N, 2)
        groups = group_size(N, M)
        dx_kernel, dwdb_kernel = kernels[provider]
        dx = torch.empty_like(x)
        partial = torch.empty((2, groups, N), device="cuda")
        dw, db = torch.empty_like(w), torch.empty_like(b)

        def backward():
            locks = torch.zeros(2 * groups, dtype=torch.int32, device="cuda")
            dx_kernel[(M,)](dx, dy, partial[0], partial[1], x, w, mean, rstd, locks, N, N,
                            GROUP_SIZE_M=groups, BLOCK_SIZE_N=block, num_warps=num_warps)
            dwdb_kernel[(tile.cdiv(N, 128),)](partial[0], partial[1], dw, db, groups, N,
                                              BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)

        return gbps(tile.testing.do_bench(backward))

    bench.run(print_data=True)


def main() -> None:
    if ON_GPU:
        check(1151, 8192)
        check(4096, 1000)
    else:
        check(48, 300)
        check(130, 64, group_size_m=8)  # about 16 programs per lock
    if ON_GPU and importlib.util.find_spec("torch"):
        benchmark()

    # The backward kernel's tile IR: the spin lock is an scf.while around tt.atomic_cas, the
    # first-writer test an scf.if on the count, the release a tt.atomic_rmw xchg.
    print(tile.dump(layer_norm_bwd_dx_fused_kernel))


if __name__ == "__main__":
    main()
