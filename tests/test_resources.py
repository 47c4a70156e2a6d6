"""Resource limits at compile time (tile/runtime/resources.py): shared memory over the
target's limit and too many threads are a tile.OutOfResources from the compiler, before any
launch, whether the kernel is launched, warmed up, compiled ahead of time or dumped; the
autotuner skips such configs and lists them. A block over TRITON_MAX_TENSOR_NUMEL is a
CompilationError naming the line."""
from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.runtime import resources
from tile.runtime.arrays import DeviceArray
from tile.runtime.errors import OutOfResources


@tile.jit
def matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


# 128x128x64 fp16 tiles: 32 KiB of operands per pipeline stage; 4 stages = 128 KiB, which fits
# sm_80 (163 KiB) and sm_90a (227 KiB) but not sm_89 (99 KiB).
BLOCKS = dict(BM=128, BN=128, BK=64)
OVER = 4 * 32768
SM89_LIMIT = 101376


def operands():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 128)).astype(np.float16)
    return a, b, np.full((128, 128), np.nan, np.float32)


def device_operands():
    """Host DeviceArrays that say they are on the device (nothing here dereferences them)."""
    arrays = [DeviceArray((128 * 256,), np.float16), DeviceArray((256 * 128,), np.float16),
              DeviceArray((128 * 128,), np.float32)]
    for array in arrays:
        array.is_device = True
    return arrays


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))


def check_sm89_error(error: OutOfResources) -> None:
    assert (error.required, error.limit, error.name) == (OVER, SM89_LIMIT, "shared memory")
    assert (error.kernel, error.target) == ("matmul", "sm_89")
    assert str(error) == (f"out of resource: shared memory, Required: {OVER}, Hardware limit: {SM89_LIMIT}. "
                          f"Kernel 'matmul' needs {OVER - SM89_LIMIT} bytes more shared memory than one program "
                          f"can have on sm_89. Reducing block sizes or `num_stages` may help.")


def test_dump_for_a_target_checks_its_shared_memory():
    a, b, c = operands()
    with pytest.raises(OutOfResources) as info:
        tile.dump(matmul, a, b, c, 256, **BLOCKS, stage="ptx", target="sm_89", num_stages=4)
    check_sm89_error(info.value)
    with pytest.raises(OutOfResources):  # the gpu stage knows the allocation already
        tile.dump(matmul, a, b, c, 256, **BLOCKS, stage="gpu", target="sm_89", num_stages=4)
    assert "ld.shared" in str(tile.dump(matmul, a, b, c, 256, **BLOCKS, stage="ptx", target="sm_89",
                                        num_stages=2))  # 64 KiB fits


def test_aot_compile_checks_the_target():
    src = tile.compiler.ASTSource(fn=matmul, signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
                                                        "K": "i32", "BM": "constexpr", "BN": "constexpr",
                                                        "BK": "constexpr"}, constexprs=BLOCKS,
                                  attrs={(i,): [["tt.divisibility", 16]] for i in range(4)})
    with pytest.raises(OutOfResources) as info:
        tile.compile(src, target="sm_89", options={"num_stages": 4})
    check_sm89_error(info.value)
    assert tile.compile(src, target="sm_80", options={"num_stages": 4}).metadata.shared == OVER


class NoBackend:
    """Stands in for cuda_launch.CudaBackend: a GPU compilation here must not get as far as loading."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the kernel was loaded although it cannot fit")


def test_warmup_and_launch_fail_before_loading(monkeypatch):
    from tile import compiler
    from tile.runtime import cuda_launch

    monkeypatch.setattr(compiler, "current_target", lambda: "sm_89")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setattr(cuda_launch, "CudaBackend", NoBackend)
    a, b, c = device_operands()
    k = tile.jit(matmul.fn)
    with pytest.raises(OutOfResources) as info:
        k.warmup(a, b, c, 256, **BLOCKS, num_stages=4, grid=(1,))
    check_sm89_error(info.value)
    with pytest.raises(OutOfResources):
        k[(1,)](a, b, c, 256, **BLOCKS, num_stages=4)


class FakeBackend:
    """A loaded kernel that launches nothing: lets the autotuner time configs without a GPU."""

    def __init__(self, ptx, metadata):
        self.metadata = {}

    def make_entry(self, positions, value_count, compiled=None):
        return lambda grid, values, args, stream: compiled


def test_autotuner_skips_and_reports_configs_that_do_not_fit(monkeypatch, capsys):
    from tile import compiler
    from tile.runtime import autotuner, cuda_launch

    monkeypatch.setattr(compiler, "current_target", lambda: "sm_89")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setattr(cuda_launch, "CudaBackend", FakeBackend)
    monkeypatch.setattr(autotuner, "_device_name", lambda: "sm_89:fake")
    monkeypatch.setenv("TILE_PRINT_AUTOTUNING", "1")
    timings = iter([[3.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    tuned = tile.autotune([tile.Config({}, num_stages=4), tile.Config({}, num_stages=3), tile.Config({}, num_stages=2)],
                          key=["K"], do_bench=lambda fn, quantiles: (fn(), next(timings))[1])(tile.jit(matmul.fn))
    a, b, c = device_operands()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a config too big for the device is skipped without a warning
        tuned[(1,)](a, b, c, 256, **BLOCKS)
    assert tuned.best_config.num_stages == 2
    assert set(tuned.configs_timings) == {tuned.configs[1], tuned.configs[2]}
    printed = capsys.readouterr().out
    assert re.search(r"tile autotuning matmul: skipped config .*num_stages: 4.*OutOfResources: out of resource: "
                     r"shared memory, Required: 131072, Hardware limit: 101376", printed)


def test_threads_over_a_block():
    with pytest.raises(OutOfResources, match=re.escape("out of resource: threads, Required: 2048, Hardware limit: "
                                                       "1024. Kernel 'k' needs 1024 more threads than one program "
                                                       "can have on sm_90a (use fewer num_warps).")):
        resources.check_resources("k", "sm_90a", 0, 2048)
    resources.check_resources("k", "sm_90a", 232448, 1024)  # at the limits
    resources.check_resources("k", "sm_200", 10**9, 32)  # an unknown target: nothing to check against


def test_the_device_limit_wins_on_a_gpu(monkeypatch):
    from tile.runtime import cuda_driver

    class Device:
        max_shared_memory_per_block_optin = 1000

        def ptx_target(self):
            return "sm_90a"

    monkeypatch.setattr(cuda_driver, "cuda_available", lambda: True)
    monkeypatch.setattr(cuda_driver.CudaDevice, "get", staticmethod(lambda ordinal=0: Device()))
    assert resources.shared_memory_limit("sm_90a") == 1000
    assert resources.shared_memory_limit("sm_80") == 166912  # another target: its table entry
    with pytest.raises(OutOfResources, match="Hardware limit: 1000"):
        resources.check_resources("k", "sm_90a", 1024, 128)


def test_out_of_resources_pickles_with_its_details():
    error = OutOfResources(300000, 232448, "shared memory", kernel="mm", target="sm_90a")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.required, copy.limit, copy.name, copy.kernel, copy.target) == (300000, 232448, "shared memory",
                                                                                 "mm", "sm_90a")
    assert str(copy) == str(error) and "needs 67552 bytes more" in str(copy)


def test_full_over_max_tensor_numel_names_the_line():
    @tile.jit
    def k(X, N: tl.constexpr):
        z = tl.full([N, 2048], 1.0, tl.float32)
        tl.store(X + tl.arange(0, 16), tl.sum(tl.sum(z, axis=1), axis=0))

    with pytest.raises(tile.CompilationError, match=re.escape("a block of shape [1024, 2048] has 2097152 elements, "
                                                              "more than TRITON_MAX_TENSOR_NUMEL (1048576)")) as e:
        tile.dump(k, np.zeros(16, np.float32), N=1024, stage="tile")
    assert e.value.line == k.fn.__code__.co_firstlineno + 2
    assert "tensor<512x2048xf32>" in str(tile.dump(k, np.zeros(16, np.float32), N=512, stage="tile"))
