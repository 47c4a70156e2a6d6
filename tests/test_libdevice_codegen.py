"""libdevice through the GPU code generator, without a GPU: a kernel of representative functions
is lowered to simt IR and its PTX run on tile.emulator, whose fma is fused
like the GPU's. It covers the parts of the library that the plain arithmetic of the other tests
does not: 64-bit integer products and variable shifts (Payne-Hanek reduction of huge arguments),
the block-wide branch around that slow path, runtime loops bounded by a block reduction (jn),
piecewise polynomials (erfinv), and fp32 functions computed in fp64 (lgamma)."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from libm_cases import CASE, exact, ulp_error
from test_codegen_e2e import launch, out_of
from tile.language.extra import libdevice

BLOCK = 128
FUNCTIONS = ("sin", "exp", "pow", "erfinv", "lgamma")


@tile.jit
def codegen_kernel(x_ptr, n_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # sin's arguments, huge ones included
    u = tl.load(x_ptr + BLOCK + offs)  # in (-1, 1)
    w = tl.load(x_ptr + 2 * BLOCK + offs)  # in (0.1, 30)
    tl.store(out_ptr + offs, libdevice.sin(x))
    tl.store(out_ptr + BLOCK + offs, libdevice.exp(u * 80.0))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.pow(u + 1.5, w))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.erfinv(u))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.lgamma(w))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.jn(tl.load(n_ptr + offs), u * 20.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_representative_functions_on_the_emulator(dtype):
    rng = np.random.default_rng(11)
    # x: half moderate, half huge (the Payne-Hanek path); u in (-1, 1)
    x = np.concatenate([rng.uniform(0.1, 30.0, BLOCK // 2), np.exp(rng.uniform(5, 80, BLOCK // 2))]).astype(dtype)
    u = rng.uniform(-0.999, 0.999, BLOCK).astype(dtype)
    w = rng.uniform(0.1, 30.0, BLOCK).astype(dtype)
    n = rng.integers(-8, 9, BLOCK).astype(np.int32)
    out = np.full(6 * BLOCK, np.nan, dtype)
    m, dev, _, runtime = launch(codegen_kernel, (1,), [np.concatenate([x, u, w]), n, out], {"BLOCK": BLOCK})
    got = out_of(m, dev, runtime, out).reshape(6, BLOCK)
    dt = np.dtype(dtype)
    # the arguments each function saw, rounded as the kernel rounds them
    args = {"sin": (x,), "exp": (u * dtype(80.0),), "pow": (u + dtype(1.5), w), "erfinv": (u,), "lgamma": (w,)}
    wide = dtype == np.float64
    for k, name in enumerate(FUNCTIONS):
        hi, lo = exact(CASE[name], args[name], dt)
        worst = ulp_error(got[k], hi, lo).max()
        assert worst <= CASE[name].ulps[wide], f"{name}: {worst:.2f} ulp"
    hi, _ = exact(CASE["jn"], (n, u * dtype(20.0)), dt)
    assert np.abs(got[5] - hi).max() <= CASE["jn"].abs_bound[wide]
