"""The disk cache under the compiler (tile.compile's path, which needs no GPU; launches share
it): concurrent processes, damaged entries, entries of another tile, unwritable directories
and full disks each rebuild or report, and never load wrong code."""
from __future__ import annotations

import errno
import multiprocessing
import warnings
from pathlib import Path

import pytest

import tile
import tile.language as tl
from tile.runtime import cache as cache_module
from tile.runtime.cache import DiskCache, decode_entry, encode_entry


@tile.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tile.jit
def row_max(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.max(tl.load(x_ptr + tl.program_id(0) * BLOCK + offs), axis=0))


KERNELS = {"axpy": axpy, "row_max": row_max}
SIGNATURES = {
    "axpy": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32",
              "BLOCK": "constexpr"}, {"BLOCK": 256}),
    "row_max": ({"x_ptr": "*fp16", "out_ptr": "*fp16", "BLOCK": "constexpr"}, {"BLOCK": 128}),
}


def compile_named(name: str, target: str = "sm_90a", num_warps: int = 4):
    signature, constexprs = SIGNATURES[name]
    return tile.compile(tile.compiler.ASTSource(KERNELS[name], signature, constexprs), target=target,
                        options={"num_warps": num_warps})


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("TILE_CACHE_DIR", str(directory))
    monkeypatch.delenv("TILE_ALWAYS_COMPILE", raising=False)
    return directory


@pytest.fixture(scope="module")
def reference_ptx(tmp_path_factory):
    """Every (kernel, target) compiled with the disk cache's lookups off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILE_ALWAYS_COMPILE", "1")
        patch.setenv("TILE_CACHE_DIR", str(tmp_path_factory.mktemp("reference-cache")))
        return {(name, target): compile_named(name, target).asm["ptx"]
                for name in KERNELS for target in ("sm_80", "sm_90a")}


def entries(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.entry"))


def test_compile_hits_the_disk_cache(cache_dir, reference_ptx):
    first = compile_named("axpy")
    assert not first.from_disk_cache and first.asm["ptx"] == reference_ptx[("axpy", "sm_90a")]
    [entry] = entries(cache_dir)
    second = compile_named("axpy")
    assert second.from_disk_cache and second.asm["ptx"] == first.asm["ptx"]
    assert second.asm["gpu"] == first.asm["gpu"] and second.metadata.shared == first.metadata.shared
    assert compile_named("axpy", num_warps=8).from_disk_cache is False  # another option: another entry
    assert len(entries(cache_dir)) == 2


# ------------------------------------------------------------------------------ concurrency


def _compile_in_child(directory: str, jobs: list[tuple[str, str]], results) -> None:
    import os

    os.environ["TILE_CACHE_DIR"] = directory
    out = []
    for name, target in jobs:
        kernel = compile_named(name, target)
        out.append((name, target, kernel.asm["ptx"], kernel.from_disk_cache))
    results.put(out)


def test_processes_compiling_at_once_share_one_directory(cache_dir, reference_ptx):
    """Six processes compile two kernels for two targets each, in different orders, at once:
    every result is the reference PTX, and each (kernel, target) is compiled by one process
    (the others wait on its lock, then read its entry)."""
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    results = context.Queue()
    jobs = list(reference_ptx)
    orders = [jobs, jobs[::-1], jobs[1:] + jobs[:1], jobs, jobs[::-1], jobs[2:] + jobs[:2]]
    processes = [context.Process(target=_compile_in_child, args=(str(cache_dir), order, results)) for order in orders]
    for process in processes:
        process.start()
    outputs = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    compiled_by: dict[tuple[str, str], int] = {job: 0 for job in jobs}
    for output in outputs:
        for name, target, ptx, from_disk in output:
            assert ptx == reference_ptx[(name, target)]
            compiled_by[(name, target)] += not from_disk
    assert compiled_by == {job: 1 for job in jobs}
    assert len(entries(cache_dir)) == len(jobs)
    assert [p for p in cache_dir.rglob("*") if p.is_file() and p.suffix not in (".entry", ".lock")] == []


# ------------------------------------------------------------------------------ damage


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_entry_is_rebuilt(cache_dir, reference_ptx, damage):
    compile_named("row_max")
    [entry] = entries(cache_dir)
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) * 2 // 3]
    elif damage == "flip":
        data[len(data) // 2] ^= 0x41
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"\x7fELF not a tile cache entry" * 10)
    entry.write_bytes(bytes(data))
    again = compile_named("row_max")
    assert not again.from_disk_cache and again.asm["ptx"] == reference_ptx[("row_max", "sm_90a")]
    assert compile_named("row_max").from_disk_cache  # rewritten whole
    [rewritten] = entries(cache_dir)
    assert rewritten.read_bytes() != bytes(data)


def test_an_entry_of_another_tile_is_never_loaded(cache_dir, reference_ptx):
    compile_named("axpy")
    [entry] = entries(cache_dir)
    key = entry.stem
    files = decode_entry(key, entry.read_bytes())
    assert files is not None and files["compiler"] == cache_module.compiler_fingerprint()
    for compiler in ("0.0.1+another-tile", None):  # another version; an entry from before fingerprints
        forged = {**files, "ptx": "// PTX of another compiler: must not load"}
        if compiler is None:
            del forged["compiler"]
        else:
            forged["compiler"] = compiler
        entry.write_bytes(encode_entry(key, forged))
        again = compile_named("axpy")
        assert not again.from_disk_cache and again.asm["ptx"] == reference_ptx[("axpy", "sm_90a")]
        assert decode_entry(key, entry.read_bytes())["compiler"] == cache_module.compiler_fingerprint()


def test_an_unwritable_cache_directory_warns_and_compiles(tmp_path, monkeypatch, reference_ptx):
    blocker = tmp_path / "not-a-directory"  # root may write anywhere; a file in the way stops everyone
    blocker.write_text("x")
    monkeypatch.setenv("TILE_CACHE_DIR", str(blocker))
    monkeypatch.delenv("TILE_ALWAYS_COMPILE", raising=False)
    with pytest.warns(RuntimeWarning, match="cannot write its cache in .*not-a-directory"):
        kernel = compile_named("axpy", "sm_80")
    assert kernel.asm["ptx"] == reference_ptx[("axpy", "sm_80")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per directory
        again = compile_named("axpy", "sm_80")
    assert not again.from_disk_cache and again.asm["ptx"] == kernel.asm["ptx"]


def test_a_full_disk_warns_compiles_and_leaves_no_partial_entry(cache_dir, monkeypatch, reference_ptx):
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module.os, "fsync", full)
    with pytest.warns(RuntimeWarning, match="No space left on device"):
        kernel = compile_named("row_max", "sm_80")
    assert kernel.asm["ptx"] == reference_ptx[("row_max", "sm_80")]
    assert entries(cache_dir) == []
    assert [p for p in cache_dir.rglob("*") if p.is_file() and p.suffix != ".lock"] == []
    monkeypatch.undo()


def test_the_lock_serializes_one_key_and_tolerates_a_missing_directory(tmp_path):
    import threading

    store = DiskCache(tmp_path / "locks")
    key = cache_module.cache_key("lock test")
    inside, overlaps = [0], []

    def hold() -> None:
        with store.lock(key):
            inside[0] += 1
            overlaps.append(inside[0])
            threading.Event().wait(0.02)
            inside[0] -= 1

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [1, 1, 1, 1]
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with DiskCache(blocked).lock(key):  # cannot create the lock file: runs unlocked
        pass
