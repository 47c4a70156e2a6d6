"""The launch path on the CPU: one compilation per specialization, also under threads; warmup."""
from __future__ import annotations

import threading

import numpy as np

import tile
import tile.language as tl
from tile import compiler


@tile.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def test_threads_launching_a_cold_kernel_compile_it_once(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")

    @tile.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    calls = []
    real = compiler.compile_kernel

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiler, "compile_kernel", counting)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(300).astype(np.float32) for _ in range(8)]
    outs = [np.full(300, np.nan, np.float32) for _ in range(8)]
    barrier = threading.Barrier(8)

    def launch(i: int) -> None:
        barrier.wait()
        k[(3,)](xs[i], outs[i], 300, BLOCK=128)

    threads = [threading.Thread(target=launch, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, x.astype(np.float64) + 1.0, rtol=1e-6)


def test_warmup_compiles_without_launching(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    compiled = scale_kernel.warmup(x, out, 64, 2.5, grid=(1,), BLOCK=64)
    assert np.isnan(out).all()  # nothing ran
    assert "tt.func" in compiled.stage("tile-opt")
    before = len(scale_kernel.cache)
    scale_kernel[(1,)](x, out, 64, 2.5, BLOCK=64)  # the warmed-up specialization is reused
    assert len(scale_kernel.cache) == before
    np.testing.assert_allclose(out, x.astype(np.float64) * 2.5, rtol=1e-6)


def test_binding_errors_name_the_kernel_and_parameter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.zeros(4, np.float32)
    for call, message in ((lambda: scale_kernel[(1,)](x, x, 4, BLOCK=4), "missing argument 'factor'"),
                          (lambda: scale_kernel[(1,)](x, x, 4, 1.0), "missing tl.constexpr argument 'BLOCK'"),
                          (lambda: scale_kernel[(1,)](x, x, 4, 1.0, BLOCK=4, num_warps="4"), "num_warps must be an int among")):
        try:
            call()
        except TypeError as e:
            assert "scale_kernel" in str(e) and message in str(e), str(e)
        else:
            raise AssertionError("expected a TypeError")
