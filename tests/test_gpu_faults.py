"""GPU faults become Python exceptions that name the kernel and its grid (and, for a failed
tl.device_assert, its assert sites), and every later call says the context is lost rather
than failing in some unrelated way. CPU: the messages, with a fake driver. GPU (marker gpu):
each fault in its own process, since a fault leaves the process's CUDA context unusable."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime import cuda_driver
from tile.runtime.cuda_launch import TENSOR_MAP_HINT
from tile.runtime.errors import DriverError, GpuFault

from test_runtime_driver import fake_kernel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def fresh_context(monkeypatch):
    """No fault seen yet, no launch recorded, and no device to make current (nor its memory pool)."""
    monkeypatch.setattr(cuda_driver, "_first_fault", [None])
    monkeypatch.setattr(cuda_driver, "_pooled", lambda device: False)
    monkeypatch.setattr(cuda_driver, "recent_launch", [None])
    monkeypatch.setattr(cuda_driver.CudaDevice, "get", staticmethod(lambda ordinal=0: None))
    monkeypatch.setattr(cuda_driver.CudaDevice, "of", staticmethod(
        lambda ordinal: SimpleNamespace(ordinal=ordinal, activated=contextlib.nullcontext)))
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)


def sticky(driver, code: str) -> None:
    """From now on every call of the fake driver fails with `code`, as after a real fault."""
    result = SimpleNamespace(name=code)
    driver.launch_result = result
    driver.cuCtxSynchronize = lambda: (result,)
    driver.cuMemAlloc = lambda nbytes: (result, 0)
    driver.cuGetErrorString = lambda err: (cuda_driver._SUCCESS, {
        "CUDA_ERROR_ILLEGAL_ADDRESS": b"an illegal memory access was encountered",
        "CUDA_ERROR_ASSERT": b"device-side assert triggered",
        "CUDA_ERROR_MISALIGNED_ADDRESS": b"misaligned address"}[err.name])


def test_a_fault_names_the_last_launch_and_the_lost_context(monkeypatch, fresh_context):
    kernel, driver = fake_kernel(monkeypatch)
    driver.param_count = 1
    fast = kernel.launcher(("ptr",)).make_entry(128, 0, (0,), 1).fast
    fast((7, 2), 0, 0x1000)
    sticky(driver, "CUDA_ERROR_ILLEGAL_ADDRESS")
    with pytest.raises(GpuFault) as info:
        cuda_driver.synchronize()
    fault = info.value
    assert isinstance(fault, DriverError)
    assert (fault.kernel, fault.grid, fault.code, fault.call) == ("k", (7, 2), "CUDA_ERROR_ILLEGAL_ADDRESS",
                                                                  "cuCtxSynchronize")
    assert str(fault) == (
        "kernel 'k' with grid (7, 2) (the last kernel launched before the fault was reported) faulted on the GPU: "
        "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered), reported by cuCtxSynchronize. "
        "The CUDA context of this process is now unusable (the error is sticky): start a new process to use the "
        "GPU again. Kernels run asynchronously: set CUDA_LAUNCH_BLOCKING=1 to have the launch that faults report it.")
    with pytest.raises(GpuFault) as later:  # an unrelated call afterwards
        cuda_driver.mem_alloc(1024)
    assert later.value.earlier is fault and later.value.call == "cuMemAlloc"
    assert str(later.value).startswith("cuMemAlloc failed with CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access "
                                       "was encountered): the CUDA context of this process was lost to an earlier "
                                       "GPU fault, and every GPU call fails from then on; start a new process")
    assert str(later.value).endswith("The earlier fault: " + str(fault))
    with pytest.raises(GpuFault, match="lost to an earlier GPU fault"):  # the next launch, too
        fast((1,), 0, 0x1000)


def test_a_failed_device_assert_lists_the_kernels_asserts(monkeypatch, fresh_context):
    kernel, driver = fake_kernel(monkeypatch)
    kernel.assert_sites = ("model.py:12: x must be positive", "model.py:15: n fits")
    kernel.launcher(())((4, 1, 1), 64, 0, 0)
    sticky(driver, "CUDA_ERROR_ASSERT")
    with pytest.raises(GpuFault) as info:
        cuda_driver.synchronize()
    assert "kernel 'k' with grid (4, 1, 1)" in str(info.value)
    assert ("A tl.device_assert failed (model.py:12: x must be positive; model.py:15: n fits); the GPU printed "
            "the failing program (block) and thread, with the source line, on standard output.") in str(info.value)


def test_an_address_fault_of_a_kernel_with_tensor_maps_names_their_rule(monkeypatch, fresh_context):
    kernel, driver = fake_kernel(monkeypatch)
    kernel.fault_hint = TENSOR_MAP_HINT
    kernel.launcher(())((4, 1, 1), 64, 0, 0)
    sticky(driver, "CUDA_ERROR_ILLEGAL_ADDRESS")
    with pytest.raises(GpuFault) as info:
        cuda_driver.synchronize()
    assert "Note: this kernel builds TMA tensor maps" in str(info.value)
    assert "strides but the last must be multiples of 16 bytes" in str(info.value)


def test_with_launch_blocking_the_faulting_launch_is_named(monkeypatch, fresh_context):
    kernel, driver = fake_kernel(monkeypatch)
    kernel.launcher(())((2, 1, 1), 64, 0, 0)
    other, _ = fake_kernel(monkeypatch)
    other.name = "misaligned_copy"
    monkeypatch.setattr(cuda_driver, "_driver", driver)
    sticky(driver, "CUDA_ERROR_MISALIGNED_ADDRESS")
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    with pytest.raises(GpuFault) as info:
        other.launcher(())((9, 1, 1), 64, 0, 0)
    assert (info.value.kernel, info.value.grid, info.value.blocking) == ("misaligned_copy", (9, 1, 1), True)
    assert str(info.value).startswith("kernel 'misaligned_copy' with grid (9, 1, 1) faulted on the GPU: "
                                      "CUDA_ERROR_MISALIGNED_ADDRESS (misaligned address), reported by cuLaunchKernel.")
    assert "CUDA_LAUNCH_BLOCKING" not in str(info.value)


def test_a_fault_with_no_launch_recorded(monkeypatch, fresh_context):
    _, driver = fake_kernel(monkeypatch)
    sticky(driver, "CUDA_ERROR_ILLEGAL_ADDRESS")
    with pytest.raises(GpuFault, match="^a kernel faulted on the GPU: CUDA_ERROR_ILLEGAL_ADDRESS"):
        cuda_driver.synchronize()


@tile.jit(debug=True)
def checked_scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")
    tl.store(x_ptr + offs, x * 2, mask=offs < n)


def test_compiled_kernels_carry_their_assert_sites():
    src = tile.compiler.ASTSource(checked_scale, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                  {"BLOCK": 128})
    kernel = tile.compile(src, target="sm_90a")
    line = checked_scale.fn.__code__.co_firstlineno + 4  # the decorator's line is the first
    assert f"{checked_scale.file}:{line}: x must be positive" in kernel.launch_info["asserts"]


# ------------------------------------------------------------------------------ on the GPU

FAULTS = {
    "illegal_address": ("""
        @tile.jit
        def wild_store(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + (1 << 40) + offs, 1.0)
        x = torch.zeros(128, device="cuda")
        wild_store[(3,)](x, BLOCK=128)
    """, "wild_store", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    "misaligned": ("""
        @tile.jit
        def misaligned_load(x_ptr, out_ptr):
            p = (x_ptr.to(tl.pointer_type(tl.int8)) + 1).to(tl.pointer_type(tl.float32))
            tl.store(out_ptr, tl.load(p))
        x = torch.zeros(128, device="cuda")
        misaligned_load[(2,)](x, x)
    """, "misaligned_load", "CUDA_ERROR_MISALIGNED_ADDRESS"),
    "device_assert": ("""
        @tile.jit(debug=True)
        def checked(x_ptr, BLOCK: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, BLOCK))
            tl.device_assert(x > 0, "x must be positive")
        x = torch.ones(128, device="cuda")
        x[77] = -1.0
        checked[(4,)](x, BLOCK=128)
    """, "checked", "CUDA_ERROR_ASSERT"),
}

SCRIPT = """
import torch, tile, tile.language as tl
from tile.runtime import cuda_driver
from tile.runtime.errors import GpuFault
{body}
try:
    cuda_driver.synchronize()
    print("NO FAULT")
except GpuFault as fault:
    print("FIRST:", fault)
try:
    cuda_driver.mem_alloc(4096)
    print("CONTEXT STILL USABLE")
except GpuFault as fault:
    print("LATER:", fault)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_gpu_fault_in_a_subprocess(tmp_path, name):
    pytest.importorskip("torch")
    body, kernel, code = FAULTS[name]
    script = tmp_path / f"{name}.py"  # kernels need a source file
    script.write_text(SCRIPT.format(body=textwrap.dedent(body)))
    env = {**os.environ, "PYTHONPATH": REPO, "TILE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    first = next(line for line in out.splitlines() if line.startswith("FIRST:"))
    assert f"kernel '{kernel}' with grid" in first and code in first and "start a new process" in first
    later = next(line for line in out.splitlines() if line.startswith("LATER:"))
    assert "lost to an earlier GPU fault" in later
    if name == "device_assert":
        line = script.read_text().splitlines().index("    tl.device_assert(x > 0, \"x must be positive\")") + 1
        assert f"{script}:{line}: x must be positive" in first
        assert "block: [" in out and "thread: [" in out and "x must be positive" in out  # the device's own report


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_kernels_compile_for_the_gpu(tmp_path, name):
    """The GPU tests' kernels compile to PTX here, so a GPU run fails only at the fault."""
    body, kernel, _ = FAULTS[name]
    source = textwrap.dedent(body).split("x = torch")[0]
    script = tmp_path / f"{name}_kernel.py"
    script.write_text("import tile, tile.language as tl\n" + source)
    namespace: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    fn = namespace[kernel]
    args = [np.zeros(128, np.float32)] * (2 if name == "misaligned" else 1)
    constexprs = {} if name == "misaligned" else {"BLOCK": 128}
    assert ".entry" in str(tile.dump(fn, *args, **constexprs, stage="ptx", target="sm_90a"))
