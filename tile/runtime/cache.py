"""The on-disk cache of compiled kernels and autotuning results.

Entries live under `TILE_CACHE_DIR` (default `~/.cache/tile`), read at every call so tests
and users can move it. An entry is a dictionary of named files (`bytes` or `str`), stored as
one file `<dir>/<key[:2]>/<key>.entry`:

    magic b"TILECACHE" | format version u32 | payload length u64 | sha256(payload) | payload
    payload = index length u32 | index JSON {"key": ..., "files": [[name, "b"|"s", size], ...]} | blobs

Writes go to a temporary file in the same directory, are fsynced, then renamed over the
entry, so a reader sees the old entry, the new one, or none, never a mix, and when several
processes write one key the last rename wins. A read that finds a bad magic, another format
version, a wrong length or checksum, or an index for another key, deletes the entry and
returns None: the caller recompiles. Compilers store their metadata (registers, spills,
shared memory, names of the stage texts) as one more file, by convention "metadata.json";
tile's compiler also stores its `compiler_fingerprint()` as "compiler" and ignores an entry
whose fingerprint is not its own. `DiskCache.lock(key)` serializes the compilations of one
key across processes (an flock on `<key>.lock`), so N processes that miss compile it once.

`cache_key(*parts)` hashes a canonical encoding of strings, bytes, numbers, None, tuples,
lists, sets and dicts (keys sorted), so equal inputs give equal keys across processes.
`compiler_fingerprint()` names tile's version and the bytes of its sources: pass it as a part
so that editing the compiler invalidates every entry.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import struct
import tempfile
import threading
import warnings
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Union

FORMAT_VERSION = 1
_MAGIC = b"TILECACHE"
_HEADER = struct.Struct("<9sIQ32s")  # magic, format version, payload length, sha256 of payload
_INDEX_LENGTH = struct.Struct("<I")
_KEY = re.compile(r"[0-9A-Za-z_\-]{1,128}")

FileData = Union[bytes, str]


# ------------------------------------------------------------------------------ keys


def _encode(value: Any, out: bytearray) -> None:
    """Append a tagged, length-prefixed encoding of `value`: distinct values never collide
    (1, 1.0, True, "1" and b"1" all differ; ("ab", "c") differs from ("a", "bc"))."""
    if value is None:
        out += b"N"
    elif isinstance(value, bool):
        out += b"T" if value else b"F"
    elif isinstance(value, int):
        _chunk(out, b"i", str(value).encode())
    elif isinstance(value, float):
        _chunk(out, b"f", value.hex().encode())  # exact, and the same on every machine
    elif isinstance(value, str):
        _chunk(out, b"s", value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _chunk(out, b"b", bytes(value))
    elif isinstance(value, (tuple, list)):
        out += b"(" if isinstance(value, tuple) else b"["
        out += struct.pack("<Q", len(value))
        for item in value:
            _encode(item, out)
    elif isinstance(value, (set, frozenset)):
        _sorted_items(out, b"{", [_encoded(item) for item in value])
    elif isinstance(value, dict):
        _sorted_items(out, b"d", [_encoded(k) + _encoded(v) for k, v in value.items()])
    else:
        raise TypeError(
            f"cache_key cannot encode a {type(value).__qualname__} ({value!r}); pass str, bytes, int, "
            f"float, bool, None, or tuples/lists/sets/dicts of them"
        )


def _chunk(out: bytearray, tag: bytes, data: bytes) -> None:
    out += tag
    out += struct.pack("<Q", len(data))
    out += data


def _encoded(value: Any) -> bytes:
    out = bytearray()
    _encode(value, out)
    return bytes(out)


def _sorted_items(out: bytearray, tag: bytes, items: list[bytes]) -> None:
    # Sorting the encodings gives one order whatever the insertion order and key types.
    out += tag
    out += struct.pack("<Q", len(items))
    for item in sorted(items):
        out += item


def cache_key(*parts: Any) -> str:
    """The sha256 hex digest of a canonical encoding of `parts`.

    Callers pass everything the cached result depends on: the source of the kernel and of
    every @jit function it calls, constexprs, the specialization, options, target, driver and
    PTX versions, and `compiler_fingerprint()`.
    """
    return hashlib.sha256(_encoded(parts)).hexdigest()


def hash_python_sources(root: Path) -> str:
    """sha256 over the relative path, size and modification time of every .py file under `root`.

    File stats, not contents: reading every source file cost ~10 ms of each warm start, and an
    edit changes the modification time."""
    digest = hashlib.sha256()
    for relative, stat in sorted(_python_files(str(root), "")):
        name = relative.encode()
        digest.update(struct.pack("<Q", len(name)) + name + struct.pack("<QQ", stat.st_size, stat.st_mtime_ns))
    return digest.hexdigest()


def _python_files(directory: str, prefix: str) -> list[tuple[str, os.stat_result]]:
    """(relative path, stat) of every .py file below `directory` (os.scandir: no Path objects)."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                found += _python_files(entry.path, prefix + entry.name + "/")
            elif entry.name.endswith(".py"):
                found.append((prefix + entry.name, entry.stat()))
    return found


@cache
def tile_source_hash() -> str:
    """`hash_python_sources` of the tile package, computed once per process on first use."""
    return hash_python_sources(Path(__file__).resolve().parent.parent)


def compiler_fingerprint() -> str:
    """tile's version and the hash of its sources: a cache-key part that changes with the compiler."""
    from tile import __version__

    return f"{__version__}+{tile_source_hash()}"


# ------------------------------------------------------------------------------ entries


def default_cache_dir() -> Path:
    """`TILE_CACHE_DIR` if set and not empty, else ~/.cache/tile (read at every call)."""
    configured = os.environ.get("TILE_CACHE_DIR", "")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "tile"


def encode_entry(key: str, files: dict[str, FileData]) -> bytes:
    """The bytes of one cache entry file holding `files` for `key`."""
    index: list[list[Any]] = []
    blobs: list[bytes] = []
    for name, data in files.items():
        if not isinstance(name, str):
            raise TypeError(f"cache entry file names must be str, got {type(name).__qualname__}")
        if isinstance(data, str):
            blob, kind = data.encode("utf-8", "surrogatepass"), "s"
        elif isinstance(data, (bytes, bytearray, memoryview)):
            blob, kind = bytes(data), "b"
        else:
            raise TypeError(f"cache entry file {name!r} must be bytes or str, got {type(data).__qualname__}")
        index.append([name, kind, len(blob)])
        blobs.append(blob)
    index_bytes = json.dumps({"key": key, "files": index}, separators=(",", ":")).encode()
    payload = _INDEX_LENGTH.pack(len(index_bytes)) + index_bytes + b"".join(blobs)
    header = _HEADER.pack(_MAGIC, FORMAT_VERSION, len(payload), hashlib.sha256(payload).digest())
    return header + payload


def decode_entry(key: str, data: bytes) -> dict[str, FileData] | None:
    """The files of an entry, or None when `data` is not a complete, intact entry for `key`."""
    if len(data) < _HEADER.size:
        return None
    magic, version, length, checksum = _HEADER.unpack_from(data)
    payload = data[_HEADER.size :]
    if magic != _MAGIC or version != FORMAT_VERSION or length != len(payload):
        return None
    if hashlib.sha256(payload).digest() != checksum:
        return None
    try:
        (index_length,) = _INDEX_LENGTH.unpack_from(payload)
        index = json.loads(payload[_INDEX_LENGTH.size : _INDEX_LENGTH.size + index_length])
        if index["key"] != key:
            return None
        files: dict[str, FileData] = {}
        offset = _INDEX_LENGTH.size + index_length
        for name, kind, size in index["files"]:
            blob = payload[offset : offset + size]
            offset += size
            files[name] = blob.decode("utf-8", "surrogatepass") if kind == "s" else blob
        return files if offset == len(payload) else None
    except (ValueError, KeyError, TypeError, struct.error):
        # The checksum matched, so only an entry written by a buggy writer lands here.
        return None


_unwritable: set[str] = set()  # directories where a write failed: warned once, then skipped
_unwritable_lock = threading.Lock()


class DiskCache:
    """Entries on disk, keyed by `cache_key` digests; see the module docstring for the format.

    `directory=None` means `default_cache_dir()`, looked up at every call. Errors of the file
    system never escape: a failed read is a miss; a failed write warns once per directory
    and the process goes on without caching there.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._directory = None if directory is None else Path(directory)

    @property
    def directory(self) -> Path:
        return self._directory if self._directory is not None else default_cache_dir()

    def path(self, key: str) -> Path:
        """The file that holds the entry for `key`."""
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(f"cache keys are 1-128 letters, digits, '_' or '-' (a cache_key digest), got {key!r}")
        return self.directory / key[:2] / f"{key}.entry"

    def get(self, key: str) -> dict[str, FileData] | None:
        """The files stored for `key`, or None if absent, unreadable or corrupt (a corrupt entry is removed)."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
                identity = os.fstat(f.fileno())
        except OSError:
            return None
        files = decode_entry(key, data)
        if files is None:
            self._remove_if_same(path, identity)
        return files

    def put(self, key: str, files: dict[str, FileData]) -> None:
        """Store `files` for `key`, atomically replacing any previous entry."""
        path = self.path(key)
        data = encode_entry(key, files)
        directory = str(self.directory)
        if directory in _unwritable:
            return
        temp_name = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp_name, path)
            temp_name = None
        except OSError as err:
            self._give_up(directory, err)
        finally:
            if temp_name is not None:
                try:
                    os.unlink(temp_name)
                except OSError:
                    pass

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the lock of `key`'s entry (an advisory lock on `<key>.lock` beside it) while
        the block runs, so that processes and threads that miss one key compile it one at a
        time; the second finds the first's entry. The operating system drops the lock of a
        process that dies. Where the directory is not writable, or the platform has no
        flock, the block runs unlocked: the lock saves work, atomic writes keep entries whole."""
        path = self.path(key).with_suffix(".lock")
        try:
            import fcntl

            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except (ImportError, OSError):
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system without locks
                pass
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @staticmethod
    def _remove_if_same(path: Path, identity: os.stat_result) -> None:
        # A writer may have renamed a good entry over the bad one since we read it: remove
        # only the file we read (same inode), and never fail the caller.
        try:
            now = os.stat(path)
            if (now.st_dev, now.st_ino) == (identity.st_dev, identity.st_ino):
                os.unlink(path)
        except OSError:
            pass

    @staticmethod
    def _give_up(directory: str, err: OSError) -> None:
        with _unwritable_lock:
            if directory in _unwritable:
                return
            _unwritable.add(directory)
        warnings.warn(
            f"tile cannot write its cache in {directory} ({err.strerror or err}); continuing without "
            f"caching there (set TILE_CACHE_DIR to a writable directory)",
            RuntimeWarning,
            stacklevel=3,
        )
