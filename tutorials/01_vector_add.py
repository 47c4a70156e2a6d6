"""Tutorial 01: vector addition, and what tile makes of it.

A tile kernel is a Python function that describes what ONE program (a block of threads on a
GPU) does with a BLOCK of elements. `tl.program_id(0)` says which block this program owns,
`tl.arange(0, BLOCK)` is the vector of offsets inside the block, and a mask keeps the last,
partial block from touching memory past the end of the arrays.

Run it:  python tutorials/01_vector_add.py
On a machine without a GPU (or with TILE_INTERPRET=1) the kernel runs on tile's NumPy
interpreter; on an NVIDIA GPU it runs as PTX. The script is the same.
"""
import numpy as np

import tile
import tile.language as tl


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements  # the last block may be partial
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: tile.DeviceArray, y: tile.DeviceArray) -> tile.DeviceArray:
    out = tile.empty(x.shape, x.dtype)
    n = x.size
    # The grid is how many programs to launch; here one per BLOCK elements.
    add_kernel[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    n = 98_432  # not a multiple of the block size: the mask matters
    x_host = rng.standard_normal(n).astype(np.float32)
    y_host = rng.standard_normal(n).astype(np.float32)
    out = add(tile.to_device(x_host), tile.to_device(y_host)).numpy()
    expected = x_host.astype(np.float64) + y_host.astype(np.float64)
    print(f"max abs error vs NumPy (float64): {np.max(np.abs(out - expected)):.3g}")
    assert np.allclose(out, expected, rtol=1e-6, atol=1e-6)

    # What did tile compile? The optimized tile IR of the launch above:
    print(tile.dump(add_kernel))
    # The same kernel for an H100, without launching (works with no GPU present):
    ptx = str(tile.dump(add_kernel, x_host, y_host, x_host, n, BLOCK=1024, stage="ptx", target="sm_90a"))
    print("\n".join(ptx.splitlines()[:40]))
    print(f"... ({len(ptx.splitlines())} lines of PTX)")


if __name__ == "__main__":
    main()
