"""Autotuning and heuristics with a fake kernel and a fake timer (Triton's semantics)."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from tile.runtime.autotuner import (ArrayKey, AutotuneError, Autotuner, Config, _jsonable_key, autotune, heuristics,
                                    is_tuning_error)
from tile.runtime.cache import DiskCache
from tile.runtime.errors import CompilerBugError, DriverError, LaunchError


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILE_PRINT_AUTOTUNING", raising=False)
    return tmp_path / "cache"


def scale(x_ptr, out_ptr, n, BLOCK):
    """The Python function the fake kernel stands for (its source keys the disk cache)."""


class FakeKernel:
    """Records launches like JITFunction.run; `fail(kwargs)` may return an exception to raise."""

    def __init__(self, fn=scale, body=None, fail=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.body = body
        self.fail = fail
        self.launches: list[tuple[tuple, object, dict]] = []
        self.extra = "delegated"

    def run(self, *args, grid, **kwargs):
        self.launches.append((args, grid, kwargs))
        error = self.fail(kwargs) if self.fail else None
        if error is not None:
            raise error
        if self.body is not None:
            self.body(*args, **kwargs)


class FakeTimer:
    """do_bench stand-in: runs the call twice and reports the cost of the config it launched."""

    def __init__(self, kernel: FakeKernel, cost):
        self.kernel = kernel
        self.cost = cost
        self.timed: list[dict] = []

    def __call__(self, fn, quantiles):
        fn()
        fn()
        kwargs = self.kernel.launches[-1][2]
        self.timed.append(kwargs)
        t = self.cost(kwargs)
        return [t, t * 0.9, t * 1.1]


CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 2), (128, 4), (256, 8))]
COST = {64: 3.0, 128: 1.0, 256: 2.0}


def make(configs=CONFIGS, cost=lambda kw: COST[kw["BLOCK"]], key=("n",), kernel=None, **options):
    kernel = kernel or FakeKernel()
    timer = FakeTimer(kernel, cost)
    tuned = autotune(configs, key=list(key), do_bench=timer, **options)(kernel)
    return tuned, kernel, timer


def arrays(n=8, dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal(n).astype(dtype) + 2, np.full(n, np.nan, dtype)


def test_fastest_config_is_chosen_and_launched():
    tuned, kernel, timer = make()
    x, out = arrays()
    grid = (4,)
    tuned[grid](x, out, 8)
    assert tuned.best_config == CONFIGS[1]
    assert sorted(kw["BLOCK"] for kw in timer.timed) == [64, 128, 256]
    args, launched_grid, kwargs = kernel.launches[-1]
    assert args == (x, out, 8) and launched_grid is grid
    assert kwargs == {"BLOCK": 128, "num_warps": 4, "num_stages": 3}
    assert tuned.configs_timings[CONFIGS[1]][0] == 1.0
    assert tuned.__name__ == "scale" and tuned.arg_names == ["x_ptr", "out_ptr", "n", "BLOCK"]


def test_result_is_cached_per_key():
    tuned, kernel, timer = make()
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    tuned.run(x, out, 8, grid=(1,))
    assert len(timer.timed) == 3  # the second call reused the choice
    tuned.run(x, out, 16, grid=(1,))
    assert len(timer.timed) == 6  # a new value of n is a new key
    assert set(tuned.cache) == {(8, "float32", "float32"), (16, "float32", "float32")}
    x64, out64 = arrays(dtype=np.float64)
    tuned.run(x64, out64, 8, grid=(1,))
    assert len(timer.timed) == 9  # array dtypes are part of the key
    assert tuned.tuning_key((x64, out64, 8), {}) == (8, "float64", "float64")


def test_key_naming_an_array_keys_on_the_array_itself():
    """As in Triton, whose key holds the tensor object: the same array reuses the choice, a new
    one (even of the same dtype and shape) is tuned anew, and such a choice is not kept on disk
    (where its dtype and shape would stand for every array of them)."""
    tuned, _, timer = make(key=("x_ptr",))
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    tuned.run(x, out, 8, grid=(1,))
    assert len(timer.timed) == 3
    tuned.run(*arrays(), 8, grid=(1,))
    assert len(timer.timed) == 6
    key = tuned.tuning_key((x, out, 8), {})
    assert key == (ArrayKey(x), "float32", "float32") and key != (ArrayKey(x.copy()), "float32", "float32")
    assert _jsonable_key(key) == [["float32", [8]], "float32", "float32"]  # across ranks
    assert tuned._disk_key(key) is None


def test_results_persist_on_disk(cache_dir):
    tuned, _, timer = make()
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    assert any(cache_dir.rglob("*.entry"))
    again, kernel, timer2 = make()
    again.run(x, out, 8, grid=(1,))
    assert timer2.timed == []  # loaded, not re-tuned
    assert again.best_config is CONFIGS[1]
    assert kernel.launches[-1][2]["BLOCK"] == 128
    other, _, timer3 = make(configs=CONFIGS[:2])
    other.run(x, out, 8, grid=(1,))
    assert len(timer3.timed) == 2  # other configs: another disk key


def test_corrupt_disk_result_is_retuned(cache_dir):
    tuned, _, _ = make()
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    (entry,) = cache_dir.rglob("*.entry")
    entry.write_bytes(entry.read_bytes()[:-3])
    again, _, timer = make()
    again.run(x, out, 8, grid=(1,))
    assert len(timer.timed) == 3 and again.best_config == CONFIGS[1]


def test_cache_results_false_keeps_nothing_on_disk(cache_dir):
    tuned, _, _ = make(cache_results=False)
    tuned.run(*arrays(), 8, grid=(1,))
    assert not cache_dir.exists() or not any(cache_dir.rglob("*.entry"))


def test_single_config_is_not_benchmarked():
    tuned, kernel, timer = make(configs=[Config({"BLOCK": 32}, num_warps=1)])
    tuned.run(*arrays(), 8, grid=(1,))
    assert timer.timed == [] and len(kernel.launches) == 1
    assert kernel.launches[0][2] == {"BLOCK": 32, "num_warps": 1, "num_stages": 3}


def test_early_prune_and_perf_model():
    seen = {}

    def early(configs, nargs, **kwargs):
        seen.update(nargs)
        return [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"] * 16]

    def model(x_ptr, out_ptr, n, BLOCK, num_warps, num_stages):
        return -BLOCK  # claims bigger is faster

    tuned, _, timer = make(prune_configs_by={"early_config_prune": early}, cache_results=False)
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    assert sorted(kw["BLOCK"] for kw in timer.timed) == [64, 128]
    assert seen["n"] == 8 and seen["x_ptr"] is x

    tuned, _, timer = make(prune_configs_by={"perf_model": model, "top_k": 1}, cache_results=False)
    tuned.run(x, out, 8, grid=(1,))
    assert [kw["BLOCK"] for kw in timer.timed] == [256]
    assert tuned.best_config.kwargs == {"BLOCK": 256}

    tuned, _, timer = make(prune_configs_by={"perf_model": model, "top_k": 0.7}, cache_results=False)
    tuned.run(x, out, 8, grid=(1,))
    assert sorted(kw["BLOCK"] for kw in timer.timed) == [128, 256]

    with pytest.raises(ValueError, match="unknown keys"):
        make(prune_configs_by={"perf_modle": model})


def test_reset_to_zero_and_restore_value_are_honoured():
    observed = []

    def body(x_ptr, out_ptr, n, **meta):
        observed.append((out_ptr.copy(), x_ptr.copy()))
        out_ptr += 1.5  # accumulates, like an atomic-add kernel
        x_ptr *= 2.0  # destroys its input in place

    kernel = FakeKernel(body=body)
    tuned, _, timer = make(kernel=kernel, reset_to_zero=["out_ptr"], restore_value=["x_ptr"])
    x, out = arrays()
    original = x.copy()
    tuned.run(x, out, 8, grid=(1,))
    assert len(observed) == 7  # 3 configs timed twice each, then the real launch
    for out_seen, x_seen in observed[:-1]:
        np.testing.assert_array_equal(out_seen, 0.0)  # zeroed before every timed run
        np.testing.assert_array_equal(x_seen, original)  # restored after every timed run
    np.testing.assert_array_equal(out, 1.5)  # the real launch started from zero too
    np.testing.assert_array_equal(x, original * 2)  # and only it changed x for good


def test_config_pre_hook_sees_all_arguments():
    calls = []
    configs = [Config({"BLOCK": 64}, pre_hook=lambda nargs: calls.append(dict(nargs))), Config({"BLOCK": 128})]
    tuned, _, _ = make(configs=configs, cost=lambda kw: kw["BLOCK"])
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    assert len(calls) == 3  # two timed runs and the real launch
    assert calls[-1]["n"] == 8 and calls[-1]["BLOCK"] == 64 and calls[-1]["num_warps"] == 4
    assert calls[-1]["x_ptr"] is x


def test_failing_configs_are_skipped_with_a_warning():
    def fail(kwargs):
        if kwargs["BLOCK"] == 128:
            return LaunchError("scale", "threads per block", 2048, 1024)
        if kwargs["BLOCK"] == 64:
            return CompilerBugError("scale", "ptxas error : Entry function uses too much shared data")
        return None

    tuned, _, _ = make(kernel=FakeKernel(fail=fail))
    with pytest.warns(RuntimeWarning) as record:
        tuned.run(*arrays(), 8, grid=(1,))
    messages = [str(w.message) for w in record]
    assert any("BLOCK: 128" in m and "threads per block" in m for m in messages)
    assert any("BLOCK: 64" in m and "too much shared data" in m for m in messages)
    assert tuned.best_config == CONFIGS[2]


def test_every_config_failing_raises_with_all_reasons():
    def fail(kwargs):
        return DriverError("cuLaunchKernel", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", kernel=f"B{kwargs['BLOCK']}")

    tuned, _, _ = make(kernel=FakeKernel(fail=fail))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AutotuneError) as info:
            tuned.run(*arrays(), 8, grid=(1,))
    text = str(info.value)
    for block in (64, 128, 256):
        assert f"BLOCK: {block}" in text and f"B{block}" in text


def test_compilation_errors_are_skipped_other_errors_raise():
    from tile.frontend.errors import CompilationError

    assert is_tuning_error(CompilationError("BLOCK too large"))
    assert not is_tuning_error(DriverError("cuLaunchKernel", "CUDA_ERROR_ILLEGAL_ADDRESS"))
    assert not is_tuning_error(ValueError("user bug"))
    tuned, _, _ = make(kernel=FakeKernel(fail=lambda kw: ValueError("user bug") if kw["BLOCK"] == 128 else None))
    with pytest.raises(ValueError, match="user bug"):
        tuned.run(*arrays(), 8, grid=(1,))


def test_tuned_names_may_not_be_passed():
    tuned, _, _ = make()
    with pytest.raises(ValueError, match="BLOCK"):
        tuned.run(*arrays(), 8, grid=(1,), BLOCK=32)


def test_unknown_argument_names_are_rejected():
    with pytest.warns(UserWarning, match="key 'm' is not an argument and is ignored"):  # as Triton, with a word
        make(key=("m",))
    with pytest.raises(ValueError, match="'y' is not an argument"):
        make(reset_to_zero=["y"])


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("TILE_PRINT_AUTOTUNING", "1")
    tuned, _, _ = make()
    x, out = arrays()
    tuned.run(x, out, 8, grid=(1,))
    printed = capsys.readouterr().out
    assert "tile autotuning for scale with key (8, 'float32', 'float32')" in printed
    assert "best config: BLOCK: 128, num_warps: 4, num_stages: 3" in printed
    assert printed.count("with config") == 3
    tuned.run(x, out, 8, grid=(1,))
    assert capsys.readouterr().out == ""  # a memory hit prints nothing
    again, _, _ = make()
    again.run(x, out, 8, grid=(1,))
    assert "loaded from the disk cache" in capsys.readouterr().out


def test_default_timer_times_on_the_host():
    def body(x_ptr, out_ptr, n, BLOCK, **options):
        if BLOCK == 64:
            time.sleep(0.003)

    kernel = FakeKernel(body=body)
    tuned = autotune([Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], warmup=1, rep=10)(kernel)
    tuned.run(*arrays(), 8, grid=(1,))
    assert tuned.best_config.kwargs == {"BLOCK": 128}


def test_config_value_semantics():
    a = Config({"BLOCK": 64}, num_warps=8, num_stages=2)
    assert a == Config({"BLOCK": 64}, num_warps=8, num_stages=2)
    assert a != Config({"BLOCK": 64}, num_warps=4, num_stages=2)
    assert len({a, Config({"BLOCK": 64}, num_warps=8, num_stages=2)}) == 1
    assert a.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 2}
    assert str(a) == "BLOCK: 64, num_warps: 8, num_stages: 2"
    assert repr(a) == "Config({'BLOCK': 64}, num_warps=8, num_stages=2)"


def test_heuristics_compute_constexprs():
    kernel = FakeKernel()
    wrapped = heuristics({"BLOCK": lambda args: 1 << (args["n"] - 1).bit_length(),
                          "EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(kernel)
    x, out = arrays(n=100)
    wrapped[(2,)](x, out, 100)
    assert kernel.launches[-1][2] == {"BLOCK": 128, "EVEN": False}
    wrapped.run(x, out, 64, grid=(1,), num_warps=2)
    assert kernel.launches[-1][2] == {"num_warps": 2, "BLOCK": 64, "EVEN": True}
    assert wrapped.__name__ == "scale" and wrapped.extra == "delegated"


def test_autotune_over_heuristics():
    kernel = FakeKernel()
    inner = heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(kernel)
    timer = FakeTimer(kernel, lambda kw: COST[kw["BLOCK"]])
    tuned = autotune(CONFIGS, key=["n"], do_bench=timer)(inner)
    assert isinstance(tuned, Autotuner) and tuned.arg_names == ["x_ptr", "out_ptr", "n", "BLOCK"]
    tuned.run(*arrays(n=256), 256, grid=(1,))
    assert kernel.launches[-1][2] == {"BLOCK": 128, "num_warps": 4, "num_stages": 3, "EVEN": True}


def test_non_kernels_are_rejected():
    with pytest.raises(TypeError, match="not a @tile.jit function"):
        autotune(CONFIGS, key=["n"])(object())


def test_disk_entries_hold_the_choice(cache_dir):
    tuned, _, _ = make()
    tuned.run(*arrays(), 8, grid=(1,))
    (entry,) = cache_dir.rglob("*.entry")
    files = DiskCache().get(entry.stem)
    assert '"BLOCK": 128' in files["best.json"]


@pytest.mark.parametrize("kind", ["numpy", "device"])
def test_zero_snapshot_restore_for_array_kinds(kind, monkeypatch):
    from tile.runtime import arrays
    from tile.runtime.autotuner import _restore, _snapshot, _zero

    monkeypatch.setenv("TILE_INTERPRET", "1")
    data = np.arange(1, 7, dtype=np.float32)
    array = data.copy() if kind == "numpy" else arrays.to_device(data)
    host = (lambda: array) if kind == "numpy" else array.numpy
    saved = _snapshot(array)
    _zero(array)
    np.testing.assert_array_equal(host(), 0.0)
    _restore(array, saved)
    np.testing.assert_array_equal(host(), data)


# ------------------------------------------------------------------------------ end to end (interpreter)


def _jit_kernels():
    tile = pytest.importorskip("tile")
    tl = pytest.importorskip("tile.language")

    @tile.jit
    def scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)

    @tile.jit
    def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            x = tl.load(x_ptr + offs)
        else:
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.atomic_add(out_ptr, tl.sum(x, axis=0))

    return tile, scale, total


@pytest.mark.parametrize("chosen", [0, 1, 2])
def test_autotuned_kernel_on_the_interpreter(chosen, monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    tile, scale, _ = _jit_kernels()
    configs = [Config({"BLOCK": b}) for b in (16, 32, 64)]
    order = []

    def timer(fn, quantiles):
        fn()
        order.append(len(order))
        return 1.0 if (len(order) - 1) % 3 == chosen else 2.0

    tuned = autotune(configs, key=["n"], do_bench=timer)(scale)
    rng = np.random.default_rng(chosen)
    for n in (100, 37):
        x = rng.standard_normal(n).astype(np.float32)
        out = np.full(n, np.nan, np.float32)
        tuned[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](x, out, n, 1.5)
        assert tuned.best_config is configs[chosen]
        np.testing.assert_allclose(out.astype(np.float64), x.astype(np.float64) * 1.5, rtol=1e-6)
    assert len(order) == 6  # tuned once per value of n


def test_autotune_heuristics_and_reset_to_zero_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    tile, _, total = _jit_kernels()
    tuned = autotune([Config({"BLOCK": 32}), Config({"BLOCK": 64})], key=["n"], reset_to_zero=["out_ptr"],
                     warmup=1, rep=3)(heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(total))
    for n in (100, 128):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        out = np.full(1, np.nan, np.float32)  # poisoned: the reset makes it zero before every run
        tuned[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](x, out, n)
        np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)
