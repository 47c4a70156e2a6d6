"""HIP launches end to end on CPU: with a fake hip-python whose device is a gfx942 (or another
gcnArchName), `kernel[grid](...)` compiles for the device's target, assembles the code object
with llvm-mc and ld.lld, loads and launches it through tile.runtime.hip_driver, and the fake
runs that kernel on the AMDGCN emulator with the kernarg segment the launch packed. NumPy
arguments are staged through (fake) device memory and copied back. No AMD GPU is lent here."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile import compiler
from tile.runtime.errors import DriverError

import hip_fake

pytestmark = pytest.mark.skipif(not hip_fake.tools_present(), reason="llvm-mc / ld.lld not installed")


@pytest.fixture
def fake_hip(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    yield hip_fake.install(monkeypatch)
    hip_fake.forget_device()


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tile.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_the_device_target_comes_from_gcn_arch_name(fake_hip):
    assert compiler.current_target() == "gfx942"
    assert fake_hip.calls[:2] == ["hipGetDeviceCount", "hipGetDeviceProperties"]


def test_vector_add_launches_through_hip(fake_hip):
    rng = np.random.default_rng(0)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    compiled = add_kernel[(tile.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_warps=2)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    assert compiled.target == "gfx942"
    assert "v_add_f32" in compiled.asm["amdgcn"] and compiled.asm["amdgcn"] == compiled.stages["amdgcn"]
    launch, = fake_hip.launches
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (128, 1, 1)   # 2 warps: waves of 64 on gfx942
    assert fake_hip.memory == {}                      # every staged copy was freed
    assert fake_hip.calls.count("hipMalloc") == 3 and fake_hip.calls.count("hipFree") == 3


def test_softmax_launches_through_hip(fake_hip):
    rng = np.random.default_rng(1)
    rows, cols = 5, 100
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, 128), np.nan, np.float32)
    softmax_kernel[(rows,)](out, x, cols, 128, cols, 0.5, BLOCK=128, num_warps=4)
    z = x.astype(np.float64) * 0.5
    expected = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[:, :cols], expected / expected.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert np.isnan(out[:, cols:]).all()              # the masked columns stay untouched


def test_launches_reuse_the_loaded_kernel_and_the_disk_cache(fake_hip):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    for _ in range(2):
        out = np.full(300, np.nan, np.float32)
        first = add_kernel[(3,)](x, y, out, 300, BLOCK=128)
        np.testing.assert_allclose(out, x + y)
    assert fake_hip.calls.count("hipModuleLoadData") == 1 and len(fake_hip.launches) == 2
    add_kernel.forget_compiled()
    out = np.full(300, np.nan, np.float32)
    again = add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    np.testing.assert_allclose(out, x + y)
    assert again.from_disk_cache and not first.from_disk_cache
    assert again.asm["amdgcn"] == first.asm["amdgcn"]
    assert fake_hip.calls.count("hipModuleLoadData") == 2


def test_an_empty_grid_launches_nothing(fake_hip):
    x = np.ones(4, np.float32)
    add_kernel[(0,)](x, x, x, 4, BLOCK=64)
    assert fake_hip.launches == [] and "hipMalloc" not in fake_hip.calls


def test_a_failing_launch_frees_the_staged_arrays_and_names_the_kernel(fake_hip, monkeypatch):
    x = np.ones(64, np.float32)
    monkeypatch.setattr(fake_hip, "hipModuleLaunchKernel", lambda *a: (hip_fake.HipError.hipErrorLaunchFailure,))
    with pytest.raises(DriverError, match="hipModuleLaunchKernel failed with hipErrorLaunchFailure"):
        add_kernel[(1,)](x, x, x, 64, BLOCK=64)
    assert fake_hip.memory == {}


def test_a_gfx90a_device_gets_gfx90a_code(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    fake = hip_fake.install(monkeypatch, arch="gfx90a:sramecc+:xnack-")
    try:
        x, y = np.random.default_rng(3).standard_normal((2, 200)).astype(np.float32)
        out = np.full(200, np.nan, np.float32)
        compiled = add_kernel[(2,)](x, y, out, 200, BLOCK=128)
        np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
        assert compiled.target == "gfx90a" and '"amdgcn-amd-amdhsa--gfx90a"' in compiled.asm["amdgcn"]
        assert len(fake.launches) == 1
    finally:
        hip_fake.forget_device()


def test_an_unknown_device_target_lists_the_supported_ones(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    hip_fake.install(monkeypatch, arch="gfx803")
    try:
        x = np.ones(64, np.float32)
        with pytest.raises(ValueError, match="unknown target 'gfx803'; tile compiles for .*gfx942, gfx90a"):
            add_kernel[(1,)](x, x, x, 64, BLOCK=64)
    finally:
        hip_fake.forget_device()


def test_a_strided_numpy_argument_is_refused_by_name(fake_hip):
    x = np.ones(128, np.float32)[::2]
    with pytest.raises(ValueError, match="kernel 'add_kernel': a NumPy argument copied to the GPU must be "
                                         "C-contiguous"):
        add_kernel[(1,)](x, x, np.ones(64, np.float32), 64, BLOCK=64)
    assert fake_hip.memory == {}
