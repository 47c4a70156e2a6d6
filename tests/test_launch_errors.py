"""Launch arguments that cannot run as given: float grids, grids beyond CUDA's limits, arrays
on another GPU, and arguments whose type changes between launches (which re-specialize,
never truncate). Interpreter launches, a fake GPU compiler for the binders, and the fake
driver of test_runtime_driver for the GPU launcher."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime.errors import LaunchError
from tile.utils import MAX_GRID, check_grid_limits, grid3

from test_multi_gpu import Tensor
from test_runtime_driver import fake_kernel


@tile.jit
def fill_kernel(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, value, mask=offs < n)


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")


# ------------------------------------------------------------------------------ grids


@pytest.mark.parametrize("grid", [(2.0,), (np.float64(2.0),), (1, 2.5), (np.float32(1), 1, 1), 2.0, (True,)])
def test_a_float_grid_is_an_error(interpret, grid):
    out = np.full(64, np.nan, np.float32)
    with pytest.raises(TypeError, match=r"kernel 'fill_kernel': (grid dimension [xyz] is|a grid is a tuple)"):
        fill_kernel[grid](out, 1.0, 64, BLOCK=32)
    assert np.isnan(out).all()  # nothing ran


def test_a_float_grid_message_names_the_dimension_and_the_fix():
    with pytest.raises(TypeError, match=re.escape("grid dimension y is 2.5 (a float); grid dimensions must be "
                                                  "integers (use tile.cdiv(n, BLOCK) or //, not /)")):
        grid3((1, 2.5))
    with pytest.raises(TypeError, match="grid dimension x is np.float64\\(3.0\\) \\(a float64\\)"):
        grid3((np.float64(3.0),))


def test_numpy_and_constexpr_ints_are_grid_dimensions(interpret):
    out = np.full(64, np.nan, np.float32)
    fill_kernel[(np.int64(2),)](out, 3.0, 64, BLOCK=32)
    np.testing.assert_array_equal(out, np.full(64, 3.0, np.float32))
    assert grid3((np.int32(4), tl.constexpr(2))) == (4, 2, 1)
    assert grid3(np.uint8(5)) == (5, 1, 1)


def test_grid_limits_on_the_interpreter(interpret):
    out = np.full(64, np.nan, np.float32)
    with pytest.raises(LaunchError, match=re.escape("cannot launch kernel 'fill_kernel': grid dimension y (blocks) "
                                                    "is 65536, the allowed maximum is 65535")):
        fill_kernel[(1, 65536)](out, 1.0, 64, BLOCK=32)
    with pytest.raises(LaunchError, match="grid dimension x \\(blocks\\) is 2147483648, the allowed maximum is "
                                          "2147483647"):
        fill_kernel[(2**31,)](out, 1.0, 64, BLOCK=32)
    with pytest.raises(ValueError, match="negative launch configuration"):
        fill_kernel[(-1,)](out, 1.0, 64, BLOCK=32)
    assert np.isnan(out).all()
    check_grid_limits(MAX_GRID, "k")  # the limits themselves are allowed
    fill_kernel[(0,)](out, 1.0, 64, BLOCK=32)  # an empty grid runs nothing, as in Triton
    assert np.isnan(out).all()


def test_gpu_launcher_refuses_float_grids_on_its_fast_path(monkeypatch):
    kernel, driver = fake_kernel(monkeypatch)
    driver.param_count = 1
    fast = kernel.launcher(("ptr",)).make_entry(128, 0, (0,), 1).fast
    for grid in [(2.0,), (np.float64(2.0),), (1.0, 1, 1), (1, 1, 2.0)]:
        with pytest.raises(TypeError, match="kernel 'k': grid dimension [xyz] is"):
            fast(grid, 0, 0x1000)
    assert driver.launches == []
    fast((np.int64(3), 2), 0, 0x1000)  # NumPy ints are converted by the checked path
    assert driver.launches[-1]["grid"] == (3, 2, 1)
    with pytest.raises(LaunchError, match="grid dimension x \\(blocks\\) is 2147483648"):
        fast((2**31,), 0, 0x1000)


# ------------------------------------------------------------------------------ devices


class FakeGpuCompiled:
    def __init__(self, log: list):
        self.log = log

    def make_entry(self, positions, value_count):
        def fast(grid, stream, *values):
            self.log.append(("fast", [values[i] for i in positions]))

        def entry(grid, values, args, stream):
            self.log.append(("general", [values[i] for i in positions]))

        entry.fast = fast
        return entry


@pytest.fixture
def gpu_compiler(monkeypatch):
    from tile import compiler

    log: list = []
    monkeypatch.setattr(compiler, "compile_kernel", lambda fn, spec, options, target: FakeGpuCompiled(log))
    monkeypatch.setattr(compiler, "current_target", lambda: "sm_90a")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    fake_torch = type(__import__("sys"))("torch")
    fake_torch._C = type("C", (), {"_cuda_getCurrentRawStream": staticmethod(lambda index: 0x5000 + index),
                                   "_cuda_getDevice": staticmethod(lambda: 0)})
    fake_torch.cuda = type("cuda", (), {"current_device": staticmethod(lambda: 0),
                                        "is_initialized": staticmethod(lambda: True)})
    monkeypatch.setitem(__import__("sys").modules, "torch", fake_torch)
    return log


def test_a_tensor_on_another_gpu_is_named(gpu_compiler):
    k = tile.jit(fill_kernel.fn)
    expected = re.escape("fill_kernel: argument 'out_ptr' is on cuda:1, but this launch runs on cuda:0, PyTorch's "
                         "current device (torch.cuda.current_device()); run it under `with torch.cuda.device(1):` "
                         "or move the tensors to cuda:0")
    with pytest.raises(ValueError, match=expected):  # the first launch (general binder)
        k[(1,)](Tensor(1), 1.0, 64, BLOCK=32)
    assert gpu_compiler == []
    k[(1,)](Tensor(0), 1.0, 64, BLOCK=32)  # compiles, installs the fast binder
    k[(1,)](Tensor(0, 0x20000), 1.0, 64, BLOCK=32)
    assert [how for how, _ in gpu_compiler] == ["general", "fast"]
    with pytest.raises(ValueError, match=expected):  # the fast binder refuses it, the general one names it
        k[(1,)](Tensor(1), 1.0, 64, BLOCK=32)
    assert len(gpu_compiler) == 2


def test_argument_errors_name_the_argument(gpu_compiler):
    k = tile.jit(fill_kernel.fn)
    with pytest.raises(TypeError, match=r"fill_kernel: argument 'value' \(list\): cannot pass a builtins.list"):
        k[(1,)](Tensor(0), [1.0], 64, BLOCK=32)
    with pytest.raises(ValueError, match=r"argument 'n' \(int\): integer argument 18446744073709551616 does not "
                                         r"fit in 64 bits"):
        k[(1,)](Tensor(0), 1.0, 2**64, BLOCK=32)


# ------------------------------------------------------------------------------ re-specialization


def test_changed_dtypes_respecialize_instead_of_truncating(interpret):
    @tile.jit
    def copy(src_ptr, dst_ptr, scale, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask) * scale, mask=mask)

    rng = np.random.default_rng(7)
    f32 = rng.standard_normal(100).astype(np.float32)
    out32 = np.full(100, np.nan, np.float32)
    copy[(4,)](f32, out32, 2, 100, BLOCK=32)
    np.testing.assert_array_equal(out32, f32 * 2)
    big = rng.integers(2**40, 2**50, 100, dtype=np.int64)  # would not survive an int32 or float32 kernel
    out64 = np.zeros(100, np.int64) - 1
    copy[(4,)](big, out64, 3, 100, BLOCK=32)
    np.testing.assert_array_equal(out64, big * 3)
    f64 = rng.standard_normal(100) * 1e300
    out_f64 = np.full(100, np.nan)
    copy[(4,)](f64, out_f64, 0.5, 100, BLOCK=32)
    np.testing.assert_array_equal(out_f64, f64 * np.float32(0.5).astype(np.float64))
    huge = 2**40 + 3  # an int that needs 64 bits takes an i64 parameter, not a truncated i32
    copy[(4,)](big, out64, huge, 100, BLOCK=32)
    np.testing.assert_array_equal(out64, big * huge)
    assert len(copy.cache) == 4
    kinds = {(c.spec.key[0][1], c.spec.key[2][0]) for c in copy.cache.values()}
    assert kinds == {("f32", "i32"), ("i64", "i32"), ("f64", "f32"), ("i64", "i64")}


def test_a_compiled_kernel_refuses_arguments_of_another_specialization(interpret):
    out32 = np.full(64, np.nan, np.float32)
    compiled = fill_kernel.warmup(out32, 1.0, 64, BLOCK=32, grid=(2,))
    with pytest.raises(TypeError, match="argument 'out_ptr' \\(a pointer to f64.*\\) does not fit this compiled "
                                        "kernel, which was specialized for a pointer to f32"):
        compiled[(2,)](np.zeros(64), 1.0, 64, 32)
