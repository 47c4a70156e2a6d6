"""Every name Triton 3.6 exports exists in tile (tests/triton_names.py holds Triton's lists), and
tile's asynchronous compilation (Triton's AsyncCompileMode) works."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tile
import tile.language as tl
import tile.language.extra.cuda as extra_cuda
from tile.language.extra import libdevice
from tile.language.extra.cuda import libdevice as cuda_libdevice
from triton_names import EXTRA_CUDA, LANGUAGE, LIBDEVICE, TRITON


@pytest.mark.parametrize("module, names, where", [
    (tile, TRITON, "tile"), (tl, LANGUAGE, "tile.language"), (extra_cuda, EXTRA_CUDA, "tile.language.extra.cuda"),
    (libdevice, LIBDEVICE, "tile.language.extra.libdevice"),
    (cuda_libdevice, LIBDEVICE, "tile.language.extra.cuda.libdevice"),
])
def test_every_triton_name_exists(module, names, where):
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{where} lacks Triton's {missing}"


def test_language_all_lists_triton_names():
    assert not [n for n in LANGUAGE if n not in tl.__all__]


@tile.jit
def _double(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


def test_async_compile_mode_warms_up_on_the_executor():
    x = np.random.default_rng(0).random(256).astype(np.float32)
    with ThreadPoolExecutor(2) as pool, tile.AsyncCompileMode(pool):
        futures = [_double.warmup(x, x, BLOCK=b, grid=(1,)) for b in (64, 128, 256)]
        again = _double.warmup(x, x, BLOCK=64, grid=(1,))
        assert all(isinstance(f, tile.FutureKernel) for f in futures) and again is futures[0]
    kernels = [f.result() for f in futures]
    assert [k.metadata.name for k in kernels] == ["_double"] * 3
    y = np.full_like(x, np.nan)
    _double[(1,)](x, y, BLOCK=256)
    np.testing.assert_array_equal(y, x * 2)


def test_async_compile_mode_does_not_nest():
    with ThreadPoolExecutor(1) as pool, tile.AsyncCompileMode(pool):
        with pytest.raises(RuntimeError, match="already active"):
            with tile.AsyncCompileMode(pool):
                pass


def test_every_triton_name_resolves_through_the_alias():
    """`import triton` under tile.install_as_triton() gives tile's objects for every name."""
    import tile.triton as alias

    missing = [n for n in TRITON if getattr(alias, n, None) is None]
    assert not missing, f"`import triton` (tile) lacks {missing}"
    assert alias.set_allocator is tile.set_allocator and alias.constexpr_function is tile.constexpr_function
