"""Launches from several threads at once: each launcher packs its arguments into one buffer that
the driver reads during cuLaunchKernel, and cuda-python releases the GIL in that call, so the
buffer must stay one thread's from packing to the driver's return (found on an H200: four threads
launching one kernel left an output unwritten and wrote another twice)."""
from __future__ import annotations

import contextlib
import ctypes
import threading
import time
import types

import pytest

from tile.runtime import cuda_driver


class FakeDriver:
    """cuLaunchKernel that reads the parameter buffer twice with a pause between (other
    threads run then, as in the real call), recording what the kernel would have seen."""

    def __init__(self):
        self.seen: list[tuple[int, int]] = []

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):  # noqa: N802
        first_slot = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]
        before = ctypes.c_uint64.from_address(first_slot).value
        time.sleep(0.002)
        after = ctypes.c_uint64.from_address(first_slot).value
        self.seen.append((before, after))
        return (cuda_driver._SUCCESS,)


@pytest.fixture
def launcher(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(cuda_driver, "_driver", fake)
    monkeypatch.setattr(cuda_driver, "_SUCCESS", object())
    device = types.SimpleNamespace(max_grid_dims=(2 ** 31 - 1, 65535, 65535), is_current=lambda: True,
                                   activated=contextlib.nullcontext, max_threads_per_block=1024)
    kernel = types.SimpleNamespace(name="k", function=1, max_threads_per_block=1024,
                                   max_dynamic_shared_bytes=48 * 1024, device=device, num_regs=32)
    return cuda_driver.Launcher(kernel, ("ptr", "i32")), fake


@pytest.mark.parametrize("path", ["fast", "checked"])
def test_concurrent_launches_keep_their_own_arguments(launcher, path):
    launch, fake = launcher
    fast = launch.make_entry(128, 0, (0, 1), 2).fast

    def run(address: int) -> None:
        for _ in range(5):
            if path == "fast":
                fast((4,), 0, address, 7)
            else:
                launch((4, 1, 1), 128, 0, 0, address, 7)

    threads = [threading.Thread(target=run, args=(0x1000 * (t + 1),)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.seen) == 20
    assert all(before == after for before, after in fake.seen), fake.seen
    assert sorted({before for before, _ in fake.seen}) == [0x1000, 0x2000, 0x3000, 0x4000]
