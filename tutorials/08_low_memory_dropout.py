"""Tutorial 08: low-memory dropout, the keep-mask regenerated from a seed instead of stored.

Dropout zeroes each element of x with probability p and scales the others by 1 / (1 - p):

    out = where(keep, x / (1 - p), 0)        keep ~ Bernoulli(1 - p), one draw per element

The usual implementation draws `keep` on the host, stores it (one byte or more per element)
and reads it back in the backward pass. Here the mask is a pure function of a seed and the
element's offset: `tl.rand4x(seed, counters)` runs Philox4x32-10, a counter-based generator,
and element i takes word i % 4 of its evaluation at counter i // 4, so the kernel reads x,
writes out and never touches a mask in memory. The
backward pass (dx = where(keep, dy / (1 - p), 0)) is the same kernel on dy with the same seed:
it regenerates the same mask, bit for bit. The whole state of the dropout is one integer.

The Philox rounds are ordinary tile-language code (tile/language/random.py: 32x32->64-bit
products split into halves, xors, key bumps), so the interpreter and the GPU compute the same
bits: a seeded run gives the same output on a laptop and on an H100. On a GPU, main() checks
that by running the kernel on both.

Run it:  python tutorials/08_low_memory_dropout.py
(on the NumPy interpreter with small sizes when there is no GPU; on a GPU it also prints a
GB/s table for tile, Triton and PyTorch when they are installed).
"""
import importlib.util

import numpy as np

import tile
import tile.language as tl
from tile.compiler import INTERPRETER, current_target

ON_GPU = current_target() != INTERPRETER
BLOCK = 1024


@tile.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # One uniform float per element, from (seed, offset) alone: the same offsets give the same
    # mask in every launch with this seed, whatever the block size or the grid. One Philox
    # evaluation gives four words, so element i takes word i % 4 of the evaluation at counter
    # i // 4: a block needs BLOCK // 4 evaluations (ten rounds of 32x32-bit products each), which
    # keeps the kernel at the memory's speed.
    r0, r1, r2, r3 = tl.rand4x(seed, pid * (BLOCK // 4) + tl.arange(0, BLOCK // 4))
    u = tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), (BLOCK,))  # [r0[k], r1[k], r2[k], r3[k]] at 4k
    keep = u > p
    # One correctly rounded division per program, then a multiply per element: `/` on f32 is
    # approximate on the GPU (div.full.f32, as in Triton), and div_rn keeps the interpreter's
    # and the GPU's bits identical.
    scale = tl.div_rn(1.0, 1 - p)
    out = tl.where(keep, x * scale, 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)


def launch_dropout(x, out, p: float, seed: int) -> None:
    """out = dropout(x) with drop probability p and the mask of `seed` (x and out contiguous, same size)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p must be in [0, 1], got {p}")
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"seed must fit in 64 bits, got {seed}")
    n = int(np.prod(x.shape))
    seeded_dropout_kernel[(tile.cdiv(n, BLOCK),)](x, out, n, p, seed, BLOCK=BLOCK)


def seeded_dropout(x, p: float, seed: int):
    """Dropout of x (a DeviceArray, any shape): a new array; the same seed gives the same mask."""
    out = tile.empty(x.shape, x.dtype)
    launch_dropout(x, out, p, seed)
    return out


def check(n: int, p: float) -> None:
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(n).astype(np.float32)  # never 0: a zero output means dropped
    x = tile.to_device(x_host)
    out = seeded_dropout(x, p, seed=123).numpy()
    again = seeded_dropout(x, p, seed=123).numpy()
    other = seeded_dropout(x, p, seed=512).numpy()
    keep = out != 0
    assert np.array_equal(out, again), "the same seed must give the same output"
    assert not np.array_equal(keep, other != 0), "another seed must give another mask"
    kept_fraction = keep.mean()
    assert abs(kept_fraction - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n) + 1e-9, kept_fraction
    expected = np.where(keep, x_host.astype(np.float64) / (1 - p), 0.0)  # exact: the kernel is within 1 ulp
    err = np.max(np.abs(out - expected))
    print(f"n={n} p={p}: kept {kept_fraction:.4f} of the elements (expected {1 - p:.4f}); "
          f"max abs error vs NumPy (float64) on the kept ones: {err:.3g}")
    assert np.allclose(out, expected, rtol=1.2e-7, atol=0)
    # Backward: the same kernel on dy with the same seed drops exactly the same elements.
    dy = rng.standard_normal(n).astype(np.float32)
    dx = seeded_dropout(tile.to_device(dy), p, seed=123).numpy()
    assert np.array_equal(dx != 0, keep)


def show_small_example() -> None:
    x = np.arange(1, 11, dtype=np.float32)
    rows = [("input", x)]
    for seed in (123, 123, 512):
        rows.append((f"output (seed = {seed})", seeded_dropout(tile.to_device(x), 0.5, seed).numpy()))
    for name, values in rows:
        print(f"{name:>20}: " + " ".join(f"{v:5.1f}" for v in values))


def check_interpreter_matches_gpu(n: int) -> None:
    """The GPU's output and the interpreter's, for one seed: identical bits."""
    x_host = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    on_gpu = seeded_dropout(tile.to_device(x_host), 0.3, seed=2024).numpy()
    tile.knobs.runtime.interpret = True
    try:
        on_cpu = np.empty_like(x_host)
        launch_dropout(x_host, on_cpu, 0.3, 2024)
    finally:
        tile.knobs.runtime.interpret = False
    assert np.array_equal(on_gpu.view(np.uint32), on_cpu.view(np.uint32))
    print(f"GPU and interpreter outputs identical bit for bit ({n} elements, seed 2024)")


def benchmark() -> None:
    """GB/s (bytes read + written once) of tile, Triton and PyTorch dropout, fp32, p = 0.5."""
    import torch

    providers = ["tile"] + (["triton"] if importlib.util.find_spec("triton") else []) + ["torch"]
    triton_kernel = tile.testing.triton_twin(seeded_dropout_kernel) if "triton" in providers else None

    @tile.testing.perf_report(tile.testing.Benchmark(
        x_names=["size"], x_vals=[2**i for i in range(16, 29, 2)], x_log=True, line_arg="provider",
        line_vals=providers, line_names=[name.capitalize() if name != "tile" else "tile" for name in providers],
        plot_name="low-memory-dropout", ylabel="GB/s", args={}))
    def bench(size: int, provider: str):
        x = torch.randn(size, device="cuda")
        out = torch.full_like(x, float("nan"))
        grid = (tile.cdiv(size, BLOCK),)
        if provider == "tile":
            run = lambda: seeded_dropout_kernel[grid](x, out, size, 0.5, 123, BLOCK=BLOCK)  # noqa: E731
        elif provider == "triton":
            run = lambda: triton_kernel[grid](x, out, size, 0.5, 123, BLOCK=BLOCK)  # noqa: E731
        else:
            run = lambda: torch.nn.functional.dropout(x, 0.5, training=True)  # noqa: E731
        ms = tile.testing.do_bench(run)
        return 2 * size * x.element_size() / ms * 1e-6

    bench.run(print_data=True)


def main() -> None:
    show_small_example()
    check(4000 if not ON_GPU else 1 << 24, p=0.5)
    check(3001, p=0.1)
    if ON_GPU:
        check_interpreter_matches_gpu(5000)
        if importlib.util.find_spec("torch"):
            benchmark()

    # The tile IR after the passes: the Philox rounds are plain integer ops (umulhi, xor, add),
    # unrolled by the frontend; no mask is loaded.
    print(tile.dump(seeded_dropout_kernel))


if __name__ == "__main__":
    main()
