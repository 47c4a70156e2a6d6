"""tile.testing: assert_close, do_bench on the host, do_bench_cudagraph's error, perf_report tables."""
from __future__ import annotations

import csv
import sys
import time

import numpy as np
import pytest

from tile import testing
from tile.testing import Benchmark, assert_close, do_bench, do_bench_cudagraph, perf_report


@pytest.fixture(autouse=True)
def host_clock(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")  # time on the host even where a GPU exists


# ------------------------------------------------------------------------------ assert_close


def test_assert_close_accepts_within_tolerance_and_matching_nans():
    expected = np.array([1.0, np.nan, -2.0])
    assert_close(np.array([1.0 + 1e-7, np.nan, -2.0], np.float32), expected, rtol=1e-6)
    assert_close(np.array([True, False]), np.array([True, False]))


def test_assert_close_reports_the_first_bad_element():
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ .* first at \(2,\): \S*5\.0\S* vs expected \S*4\.0"):
        assert_close(np.array([1.0, 2.0, 5.0]), np.array([1.0, 2.0, 4.0]))
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_close(np.zeros(2), np.zeros(3))
    with pytest.raises(AssertionError, match="differ"):
        assert_close(np.array([np.nan]), np.array([1.0]))


# ------------------------------------------------------------------------------ do_bench


def test_host_clock_is_used_without_a_gpu():
    assert isinstance(testing._clock(), testing._HostClock)


def test_do_bench_measures_a_sleep():
    ms = do_bench(lambda: time.sleep(0.002), warmup=2, rep=20, return_mode="median")
    assert 1.9 <= ms <= 30.0


def test_do_bench_call_counts_follow_warmup_and_rep():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.001)

    times = do_bench(fn, warmup=5, rep=10, return_mode="all")
    assert 1 <= len(times) <= 10 and all(t > 0.9 for t in times)
    # one first call, five for the estimate, up to 5 warm-up calls, then the timed ones
    assert 1 + 5 + 1 + len(times) <= len(calls) <= 1 + 5 + 5 + len(times)


def test_do_bench_statistics_and_quantiles():
    state = {"i": 0}

    def fn():
        state["i"] += 1
        time.sleep(0.0005 * (1 + state["i"] % 3))

    low = do_bench(fn, warmup=1, rep=15, return_mode="min")
    high = do_bench(fn, warmup=1, rep=15, return_mode="max")
    assert 0 < low <= high
    q = do_bench(fn, warmup=1, rep=15, quantiles=[0.2, 0.5, 0.8])
    assert isinstance(q, list) and len(q) == 3 and q[0] <= q[1] <= q[2]
    single = do_bench(fn, warmup=1, rep=5, quantiles=[0.5])
    assert isinstance(single, float) and single > 0
    assert isinstance(do_bench(fn, warmup=1, rep=5), float)


def test_do_bench_rejects_bad_modes_and_quantiles():
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="average")
    with pytest.raises(ValueError, match="quantiles"):
        do_bench(lambda: None, quantiles=[1.5])


def test_do_bench_resets_gradients():
    class Tensor:
        grad = "stale"

    tensor = Tensor()
    seen = []
    do_bench(lambda: seen.append(tensor.grad), warmup=0.1, rep=0.5, grad_to_none=[tensor])
    assert seen[-1] is None


def test_summarize_matches_numpy():
    times = [4.0, 1.0, 3.0, 2.0]
    assert testing._summarize(times, None, "mean") == 2.5
    assert testing._summarize(times, None, "median") == 2.5
    assert testing._summarize(times, [0.25, 0.75], "mean") == pytest.approx(list(np.quantile(times, [0.25, 0.75])))
    assert testing._summarize(times, None, "all") == times


def test_do_bench_cudagraph_needs_torch_and_a_gpu(monkeypatch):
    if "torch" not in sys.modules:
        monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails like a missing package
    else:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="needs PyTorch with a CUDA GPU"):
        do_bench_cudagraph(lambda: None)


# ------------------------------------------------------------------------------ perf_report


def _report(**overrides):
    options = dict(x_names=["size"], x_vals=[128, 1024], line_arg="provider", line_vals=["tile", "numpy"],
                   line_names=["Tile", "NumPy"], plot_name="vector-add", args={"scale": 2.0}, ylabel="GB/s")
    options.update(overrides)
    return Benchmark(**options)


def test_perf_report_prints_a_table(capsys):
    calls = []

    @perf_report(_report())
    def bench(size, provider, scale):
        calls.append((size, provider, scale))
        return size * scale if provider == "tile" else size / 4

    table = bench.run()
    assert calls == [(128, "tile", 2.0), (128, "numpy", 2.0), (1024, "tile", 2.0), (1024, "numpy", 2.0)]
    assert table.columns == ["size", "Tile (GB/s)", "NumPy (GB/s)"]  # Triton names columns with the unit
    assert table.rows == [[128, 256.0, 32.0], [1024, 2048.0, 256.0]]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "vector-add:"
    assert lines[1].split("  ")[-2:] == ["Tile (GB/s)", "NumPy (GB/s)"]
    assert lines[2].split() == ["128", "256", "32"]
    assert lines[3].split() == ["1024", "2048", "256"]
    bench.run(print_data=False)
    assert capsys.readouterr().out == ""


def test_perf_report_with_ranges_several_x_names_and_kwargs(capsys):
    report = _report(x_names=["M", "N"], x_vals=[(2, 3), 4], line_vals=["tile"], line_names=["Tile"],
                     plot_name="mm")

    @perf_report([report, _report(plot_name="second")])
    def bench(provider, scale, M=None, N=None, size=None, extra=0):
        value = float((M or size) * (N or 1) + extra)
        return value, value - 1, value + 1

    tables = bench.run(extra=1)
    assert [t.name for t in tables] == ["mm", "second"]
    assert tables[0].rows == [[2, 3, 7.0], [4, 4, 17.0]]
    assert tables[0].lows == [[6.0], [16.0]] and tables[0].highs == [[8.0], [18.0]]
    assert "mm:" in capsys.readouterr().out

    @perf_report(_report(x_names=["M", "N"], x_vals=[(1, 2, 3)]))
    def wrong(**kwargs):
        return 1.0

    with pytest.raises(ValueError, match="expected 2 x values"):
        wrong.run()


def test_perf_report_saves_csv_and_plot(tmp_path):
    @perf_report(_report())
    def bench(size, provider, scale):
        return float(size)

    bench.run(print_data=False, save_path=str(tmp_path / "out"))
    with open(tmp_path / "out" / "vector-add.csv") as f:
        rows = list(csv.reader(f))
    assert rows == [["size", "Tile (GB/s)", "NumPy (GB/s)"], ["128", "128.0", "128.0"], ["1024", "1024.0", "1024.0"]]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (tmp_path / "out" / "vector-add.png").exists()
    else:
        assert (tmp_path / "out" / "vector-add.png").stat().st_size > 0
