"""Tutorial 02: fused softmax, one row per program.

softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x)). Written with NumPy, that is
several passes over memory; a tile kernel loads each row once, keeps it in registers, and
does the max, the exponentials, the sum and the division before writing the row once. For a
bandwidth-bound operation, that is the whole game: bytes read + bytes written, once.

Reductions (`tl.max`, `tl.sum`) go across the threads of a program; on a GPU tile lowers
them to in-thread combines, warp shuffles, and a trip through shared memory between warps.

Run it:  python tutorials/02_fused_softmax.py
"""
import numpy as np

import tile
import tile.language as tl


@tile.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # Masked-off lanes read -inf so they do not change the max and exp() makes them 0.
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


def softmax(x: tile.DeviceArray) -> tile.DeviceArray:
    n_rows, n_cols = x.shape
    out = tile.empty(x.shape, x.dtype)
    block = tile.next_power_of_2(n_cols)  # a row must fit in one block
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    softmax_kernel[(n_rows,)](out, x, n_cols, n_cols, n_cols, BLOCK=block, num_warps=num_warps)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((257, 781)).astype(np.float32)
    out = softmax(tile.to_device(x_host)).numpy()
    x64 = x_host.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    print(f"max abs error vs NumPy (float64): {np.max(np.abs(out - expected)):.3g}")
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-6)

    # The optimized tile IR: one load, two reductions with combine regions, one store.
    print(tile.dump(softmax_kernel))


if __name__ == "__main__":
    main()
