"""Autotuning under torch.distributed: each rank tunes on its own by default; with
`tune_on_rank_zero=True` rank 0 tunes and broadcasts, the others time nothing. A stub
torch.distributed stands in for the process group; the last test runs two real ranks over gloo
on the interpreter where torch is installed."""
from __future__ import annotations

import multiprocessing
import sys
import types

import numpy as np
import pytest

from test_autotune import CONFIGS, arrays, make


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILE_PRINT_AUTOTUNING", raising=False)
    return tmp_path / "cache"


def stub_distributed(monkeypatch, rank: int, world_size: int = 2, received=None):
    """A torch.distributed of an initialized group: broadcast_object_list records what rank 0
    sends, and gives the other ranks `received` (rank 0's message)."""
    dist = types.ModuleType("torch.distributed")
    dist.sent = []
    dist.is_available = lambda: True
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda: world_size
    dist.get_rank = lambda: rank

    def broadcast_object_list(objects, src):
        assert src == 0 and len(objects) == 1
        if rank == 0:
            dist.sent.append(objects[0])
        else:
            objects[0] = received

    dist.broadcast_object_list = broadcast_object_list
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    return dist


def record(block: int, num_warps: int) -> dict:
    return {"kwargs": {"BLOCK": block}, "num_warps": num_warps, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


KEY_8 = [8, "float32", "float32"]  # n, then the dtype of each array


def test_rank_zero_tunes_and_broadcasts_its_choice(monkeypatch):
    dist = stub_distributed(monkeypatch, rank=0)
    tuned, kernel, timer = make(tune_on_rank_zero=True)
    x, out = arrays()
    tuned[(1,)](x, out, np.int64(8))
    assert sorted(kw["BLOCK"] for kw in timer.timed) == [64, 128, 256]
    assert dist.sent == [(KEY_8, record(128, 4))]
    tuned[(1,)](x, out, 8)  # the same key: from memory, no second collective
    assert len(dist.sent) == 1


def test_other_ranks_take_rank_zeros_choice_without_timing(monkeypatch, capsys):
    monkeypatch.setenv("TILE_PRINT_AUTOTUNING", "1")
    stub_distributed(monkeypatch, rank=1, received=(KEY_8, record(256, 8)))
    tuned, kernel, timer = make(tune_on_rank_zero=True)
    x, out = arrays()
    tuned[(1,)](x, out, 8)
    assert timer.timed == [] and tuned.best_config is CONFIGS[2]
    assert kernel.launches == [((x, out, 8), (1,), {"BLOCK": 256, "num_warps": 8, "num_stages": 3})]
    assert "received from rank 0; best config: BLOCK: 256" in capsys.readouterr().out


def test_a_rank_tuning_another_key_than_rank_zero_raises(monkeypatch):
    stub_distributed(monkeypatch, rank=1, received=([16, "float32", "float32"], record(64, 2)))
    tuned, kernel, timer = make(tune_on_rank_zero=True)
    x, out = arrays()
    with pytest.raises(RuntimeError, match=r"autotune of scale \(tune_on_rank_zero\): rank 1 tunes key \(8, 'float32', "
                                           r"'float32'\) but rank 0 tuned \(16, 'float32', 'float32'\); with "
                                           r"tune_on_rank_zero every rank must launch"):
        tuned[(1,)](x, out, 8)
    assert kernel.launches == []


def test_without_the_flag_or_a_group_every_rank_tunes(monkeypatch):
    dist = stub_distributed(monkeypatch, rank=1)
    tuned, kernel, timer = make()
    x, out = arrays()
    tuned[(1,)](x, out, 8)
    assert len(timer.timed) == 3 and dist.sent == []
    stub_distributed(monkeypatch, rank=0, world_size=1)  # one rank: nothing to share
    tuned, kernel, timer = make(tune_on_rank_zero=True, cache_results=False)
    tuned[(1,)](x, out, 8)
    assert len(timer.timed) == 3


# ------------------------------------------------------------------------------ two ranks over gloo


def _rank(rank: int, port: int, results) -> None:
    import os

    os.environ["TILE_INTERPRET"] = "1"
    import torch.distributed as dist

    import tile
    import tile.language as tl

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    timed = []

    def bench(fn, quantiles):
        fn()
        timed.append(len(timed))
        return [float(len(timed))]  # the first config timed wins

    @tile.autotune([tile.Config({"BLOCK": 32}), tile.Config({"BLOCK": 64})], key=["n"], do_bench=bench,
                   tune_on_rank_zero=True, cache_results=False)
    @tile.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = np.random.default_rng(rank).standard_normal(100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    double[lambda meta: (tile.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    results.put((rank, len(timed), double.best_config.kwargs, bool(np.allclose(out, 2.0 * x.astype(np.float64)))))
    dist.destroy_process_group()


def test_two_gloo_ranks_share_rank_zeros_tuning():
    pytest.importorskip("torch.distributed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_rank, args=(rank, port, results)) for rank in (0, 1)]
    for process in processes:
        process.start()
    outcome = sorted(results.get(timeout=240) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert outcome == [(0, 2, {"BLOCK": 32}, True), (1, 0, {"BLOCK": 32}, True)]
