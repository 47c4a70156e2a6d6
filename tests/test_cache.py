"""The disk cache: canonical keys, atomic entries, corruption detection, concurrent writers."""
from __future__ import annotations

import errno
import json
import multiprocessing
import threading
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
from tile.runtime import cache as cache_module
from tile.runtime.cache import (
    DiskCache,
    cache_key,
    compiler_fingerprint,
    decode_entry,
    default_cache_dir,
    encode_entry,
    hash_python_sources,
    tile_source_hash,
)

KEY = cache_key("kernel", 1)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("TILE_CACHE_DIR", str(directory))
    return directory


# ------------------------------------------------------------------------------ keys

BASE_PARTS = (
    "def k(x_ptr, BLOCK): ...",  # kernel source
    ("def helper(x): return x + 1",),  # sources of called @jit functions
    {"BLOCK": 128, "EVEN": True},  # constexprs
    (("ptr", "f32", 16), ("i32", 1)),  # specialization
    {"num_warps": 4, "num_stages": 3},  # options
    "sm_90a",
    "8.7",
    "0.1.0+abc",
)


@pytest.mark.parametrize("index", range(len(BASE_PARTS)))
def test_changing_any_part_changes_the_key(index):
    changed = list(BASE_PARTS)
    value = changed[index]
    if isinstance(value, str):
        changed[index] = value + " "
    elif isinstance(value, tuple):
        changed[index] = value + ("x",)
    else:
        changed[index] = {**value, "extra": 0}
    assert cache_key(*changed) != cache_key(*BASE_PARTS)
    assert cache_key(*BASE_PARTS) == cache_key(*BASE_PARTS)


def test_callee_source_change_changes_the_caller_key():
    caller = "@tile.jit\ndef k(x): helper(x)"
    before = cache_key(caller, ("@tile.jit\ndef helper(x): return x + 1",))
    after = cache_key(caller, ("@tile.jit\ndef helper(x): return x + 2",))
    assert before != after


def test_key_distinguishes_types_and_boundaries():
    values = [1, 1.0, True, "1", b"1", (1,), [1], None, 0, False, "", b"", (), [], {}, frozenset()]
    keys = {cache_key(v) for v in values}
    assert len(keys) == len(values)
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key(("a", "b")) != cache_key("a", "b")
    assert cache_key(0.0) != cache_key(-0.0)


def test_dict_and_set_order_do_not_matter():
    assert cache_key({"a": 1, "b": 2}) == cache_key({"b": 2, "a": 1})
    assert cache_key({1: "x", "1": "y"}) == cache_key({"1": "y", 1: "x"})
    assert cache_key({"x", "y", "z"}) == cache_key({"z", "y", "x"})


def test_key_rejects_values_without_a_canonical_form():
    with pytest.raises(TypeError, match="cannot encode"):
        cache_key(object())


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5) | st.binary(
    max_size=5)
values = st.recursive(
    scalars,
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                          max_size=3),
    max_leaves=8,
)


def _same(a, b) -> bool:
    """Equality that also compares types (1 != 1.0 != True) and float bits (0.0 != -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=200, deadline=None)
@given(values, values)
def test_keys_are_equal_exactly_for_equal_values(a, b):
    assert (cache_key(a) == cache_key(b)) == _same(a, b)


def test_source_hash_follows_every_python_file(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "pkg" / "notes.txt").write_text("ignored")
    first = hash_python_sources(tmp_path / "pkg")
    (tmp_path / "pkg" / "notes.txt").write_text("still ignored")
    assert hash_python_sources(tmp_path / "pkg") == first
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 3\n")
    edited = hash_python_sources(tmp_path / "pkg")
    assert edited != first
    (tmp_path / "pkg" / "c.py").write_text("")
    assert hash_python_sources(tmp_path / "pkg") != edited


def test_compiler_fingerprint_names_version_and_sources():
    fingerprint = compiler_fingerprint()
    assert fingerprint == f"{tile.__version__}+{tile_source_hash()}"
    hits = tile_source_hash.cache_info().hits
    tile_source_hash()
    assert tile_source_hash.cache_info().hits == hits + 1  # hashed once per process


# ------------------------------------------------------------------------------ entries


def test_round_trip_of_bytes_and_text(cache_dir):
    files = {
        "ptx": "// ptx text\n.version 8.7\n",
        "cubin": bytes(range(256)) * 3,
        "metadata.json": json.dumps({"registers": 40, "spill_bytes": 0, "shared_bytes": 1024,
                                     "stages": ["tile", "ptx"]}),
        "empty": b"",
        "unicode": "héllo ✓",
    }
    store = DiskCache()
    assert store.get(KEY) is None
    store.put(KEY, files)
    got = store.get(KEY)
    assert got == files
    assert isinstance(got["ptx"], str) and isinstance(got["cubin"], bytes)
    assert store.path(KEY).is_file() and store.path(KEY).is_relative_to(cache_dir)
    store.put(KEY, {"ptx": "new"})
    assert store.get(KEY) == {"ptx": "new"}
    assert [p.name for p in store.path(KEY).parent.iterdir()] == [store.path(KEY).name]  # no temp files left


def test_directory_is_read_at_call_time(tmp_path, monkeypatch):
    store = DiskCache()
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "one"))
    store.put(KEY, {"a": "1"})
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "two"))
    assert store.get(KEY) is None
    store.put(KEY, {"a": "2"})
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "one"))
    assert store.get(KEY) == {"a": "1"}
    monkeypatch.delenv("TILE_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "tile"
    assert DiskCache(tmp_path / "two").get(KEY) == {"a": "2"}


def test_bad_keys_and_values_are_rejected():
    store = DiskCache()
    for key in ("", "../escape", "a/b", "x" * 129, 5):
        with pytest.raises(ValueError):
            store.path(key)
    with pytest.raises(TypeError):
        store.put(KEY, {"a": 1})


def _entry_bytes() -> bytes:
    return encode_entry(KEY, {"ptx": "x" * 100, "metadata.json": '{"registers": 8}'})


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_truncated_entries_are_misses_and_removed(data):
    store = DiskCache()
    good = _entry_bytes()
    length = data.draw(st.integers(0, len(good) - 1))
    store.put(KEY, {"seed": "x"})
    store.path(KEY).write_bytes(good[:length])
    assert store.get(KEY) is None
    assert not store.path(KEY).exists()
    store.put(KEY, {"ptx": "recompiled"})  # the caller recompiles and stores again
    assert store.get(KEY) == {"ptx": "recompiled"}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_flipped_bytes_are_misses_and_removed(data):
    store = DiskCache()
    good = bytearray(_entry_bytes())
    position = data.draw(st.integers(0, len(good) - 1))
    good[position] ^= data.draw(st.integers(1, 255))
    store.put(KEY, {"seed": "x"})
    store.path(KEY).write_bytes(bytes(good))
    assert store.get(KEY) is None
    assert not store.path(KEY).exists()


def test_other_format_version_and_other_key_are_misses():
    store = DiskCache()
    good = _entry_bytes()
    assert decode_entry(KEY, good) is not None
    future = bytearray(good)
    future[9:13] = (cache_module.FORMAT_VERSION + 1).to_bytes(4, "little")
    store.put(KEY, {"seed": "x"})
    store.path(KEY).write_bytes(bytes(future))
    assert store.get(KEY) is None
    other = cache_key("another kernel")
    store.put(KEY, {"seed": "x"})
    store.path(KEY).write_bytes(encode_entry(other, {"ptx": "other"}))  # intact, but for another key
    assert store.get(KEY) is None
    assert decode_entry(KEY, _entry_bytes() + b"tail") is None


def test_unwritable_directory_warns_once_and_continues(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TILE_CACHE_DIR", str(blocker))
    store = DiskCache()
    with pytest.warns(RuntimeWarning, match="continuing without caching"):
        store.put(KEY, {"a": "1"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.put(KEY, {"a": "1"})  # warned already: silent
        assert store.get(KEY) is None


def test_disk_full_warns_and_leaves_no_partial_files(tmp_path, monkeypatch, cache_dir):
    store = DiskCache()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module.os, "fsync", full)
    with pytest.warns(RuntimeWarning, match="No space left"):
        store.put(KEY, {"a": "1" * 1000})
    assert store.get(KEY) is None
    assert [p for p in cache_dir.rglob("*") if p.is_file()] == []


# ------------------------------------------------------------------------------ concurrency

ROUNDS = 15


def _payload(writer: int) -> dict:
    return {
        "blob": bytes([writer]) * 65536,
        "text": f"writer {writer}\n" * 500,
        "metadata.json": json.dumps({"writer": writer}),
    }


def _consistent(entry) -> bool:
    if entry is None:
        return True
    writer = json.loads(entry["metadata.json"])["writer"]
    return entry == _payload(writer)


def _write_many(directory: str, writer: int) -> None:
    store = DiskCache(directory)
    for _ in range(ROUNDS):
        store.put(KEY, _payload(writer))


def _read_many(directory: str, results) -> None:
    store = DiskCache(directory)
    bad = 0
    for _ in range(ROUNDS * 4):
        bad += not _consistent(store.get(KEY))
    results.put(bad)


def test_concurrent_processes_and_threads_never_see_partial_entries(cache_dir):
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    results = context.Queue()
    directory = str(cache_dir)
    processes = [context.Process(target=_write_many, args=(directory, w)) for w in range(1, 4)]
    processes += [context.Process(target=_read_many, args=(directory, results)) for _ in range(2)]
    thread_bad: list[int] = []

    def thread_reader() -> None:
        store = DiskCache(directory)
        thread_bad.append(sum(not _consistent(store.get(KEY)) for _ in range(ROUNDS * 4)))

    threads = [threading.Thread(target=_write_many, args=(directory, w)) for w in range(4, 6)]
    threads += [threading.Thread(target=thread_reader) for _ in range(2)]
    for worker in processes + threads:
        worker.start()
    for worker in threads:
        worker.join()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert [results.get(timeout=10) for _ in range(2)] == [0, 0]
    assert thread_bad == [0, 0]
    final = DiskCache(directory).get(KEY)
    assert final is not None and _consistent(final)  # last rename wins, whole
    leftovers = [p.name for p in cache_dir.rglob("*") if p.is_file() and p.suffix != ".entry"]
    assert leftovers == []
