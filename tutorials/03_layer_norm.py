"""Tutorial 03: layer normalization (forward), fp16 in and out, fp32 math.

    y = (x - mean(x)) / sqrt(var(x) + eps) * w + b        for each row of x

Each program normalizes one row. When rows are wider than one block, the kernel loops over
the row in BLOCK-sized chunks twice (once for the mean and variance, once to normalize and
write), accumulating in fp32 vectors and reducing at the end. The loops have runtime bounds,
so they become `scf.for` loops with loop-carried accumulators in the IR.

Run it:  python tutorials/03_layer_norm.py
"""
import numpy as np

import tile
import tile.language as tl


@tile.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps,
                      BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    # Mean.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    # Variance.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        x = tl.where(cols < n_cols, x - mean, 0.0)
        acc += x * x
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    # Normalize, scale and shift.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(tl.float16), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    n_rows, n_cols = x.shape
    y = tile.empty(x.shape, np.float16)
    mean = tile.empty((n_rows,), np.float32)
    rstd = tile.empty((n_rows,), np.float32)
    block = min(tile.next_power_of_2(n_cols), 65536 // x.dtype.itemsize)
    num_warps = min(max(block // 256, 1), 8)
    layer_norm_kernel[(n_rows,)](x, y, w, b, mean, rstd, n_cols, n_cols, eps, BLOCK=block, num_warps=num_warps)
    return y, mean, rstd


def main() -> None:
    rng = np.random.default_rng(0)
    n_rows, n_cols = 64, 1000
    x_host = rng.standard_normal((n_rows, n_cols)).astype(np.float16)
    w_host = rng.random(n_cols).astype(np.float32)
    b_host = rng.random(n_cols).astype(np.float32)
    y, mean, rstd = layer_norm(tile.to_device(x_host), tile.to_device(w_host), tile.to_device(b_host))
    x64 = x_host.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    sigma = 1 / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
    expected = (x64 - mu) * sigma * w_host + b_host
    err = np.max(np.abs(y.numpy().astype(np.float64) - expected))
    print(f"max abs error vs NumPy (float64): {err:.3g}  (fp16 output)")
    assert np.allclose(y.numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)
    assert np.allclose(mean.numpy(), mu[:, 0], rtol=1e-4, atol=1e-4)
    assert np.allclose(rstd.numpy(), sigma[:, 0], rtol=1e-3, atol=1e-3)

    # The tile IR after the passes: note the scf.for loops and their loop-carried accumulators.
    print(tile.dump(layer_norm_kernel))


if __name__ == "__main__":
    main()
