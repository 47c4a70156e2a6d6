"""tile.emulator's checks: shared-memory races between barriers, cp.async bytes used before
their wait_group, bar.sync reached by part of a CTA. Each fires on PTX broken on purpose (tile's
own kernels with a barrier or a wait deleted, and small hand-written kernels) and names the
kernel, the PTX lines, the tile source line and the threads; the unbroken kernels run quiet."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.emulator import EmulatorError, emulate, run_ptx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from load_kernels import load_kernels  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_kernels("emulator_checks_kernels", tile.jit, tl)


def _compiled(kernel, target, grid, args, constexprs):
    """Run `kernel` on the emulator (its checks must stay quiet); its PTX, launch info and launch values."""
    emulated = emulate(kernel, target)
    compiled = emulated[grid](*args, **constexprs)
    _, values = emulated._specialize(args, constexprs)
    return compiled.asm["ptx"], compiled.launch_info, values


def _without(ptx: str, nth: int, text: str) -> tuple[str, int]:
    """`ptx` with the nth line containing `text` emptied; and that line's number."""
    lines = ptx.split("\n")
    hits = [i for i, line in enumerate(lines) if text in line]
    lines[hits[nth]] = ""
    return "\n".join(lines), hits[nth] + 1


def _run(ptx, info, grid, values):
    run_ptx(ptx, grid, values, info["name"], info["threads"], info["shared_bytes"], info["arg_kinds"])


def _softmax(bench):
    x = np.random.default_rng(0).standard_normal((3, 300)).astype(np.float32)
    out = np.empty_like(x)
    ptx, info, values = _compiled(bench.softmax_kernel, "sm_80", (3,), (out, x, 300, 300, 300), dict(BLOCK=512))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    return ptx, info, values


def _matmul(bench, target, m, n, k, block):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.empty((m, n), np.float16)
    ptx, info, values = _compiled(bench.matmul_kernel, target, (1,), (a, b, c, m, n, k, k, 1, n, 1, n, 1),
                                  dict(BLOCK_M=block[0], BLOCK_N=block[1], BLOCK_K=block[2], GROUP_M=8))
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    return ptx, info, values


def test_race_in_a_reduction_without_its_barrier(bench):
    """softmax's cross-warp max: warps write partial maxima to shared memory, bar.sync, read them.
    Without the bar.sync, thread 1 reads what thread 0 wrote."""
    ptx, info, values = _softmax(bench)
    broken, _ = _without(ptx, 0, "bar.sync")
    with pytest.raises(EmulatorError, match=r"kernel softmax_kernel: shared-memory race: thread \d+ of CTA \(0, 0, 0\) "
                                            r"reads shared address \d+, written by thread \d+ at PTX line \d+ "
                                            r"`@%p\d+ st.shared.f32[^`]*`, from \S+:\d+ [^\n]*no barrier between\n"
                                            r"  at PTX line \d+ `ld.shared.f32"):
        _run(broken, info, (3,), values)


def test_write_after_read_race(bench):
    """The second reduction (the sum) reuses the scratch of the first: without the bar.sync between
    them, a thread overwrites what other threads are still reading."""
    ptx, info, values = _softmax(bench)
    broken, _ = _without(ptx, 1, "bar.sync")
    with pytest.raises(EmulatorError, match=r"shared-memory race: thread \d+ of CTA \(0, 0, 0\) writes shared address "
                                            r"\d+, read by several threads at PTX line \d+ `ld.shared"):
        _run(broken, info, (3,), values)


def test_cp_async_bytes_read_before_their_wait_group(bench):
    ptx, info, values = _matmul(bench, "sm_80", 64, 64, 64, (64, 64, 32))
    broken, _ = _without(ptx, 0, "cp.async.wait_group")
    with pytest.raises(EmulatorError, match=r"kernel matmul_kernel: thread \d+ of CTA \(0, 0, 0\) reads shared address "
                                            r"\d+, a byte of the cp.async at PTX line \d+ `cp.async.cg.shared.global"
                                            r"[^`]*`, from kernels.py:\d+ [^\n]* before the cp.async.wait_group that "
                                            r"lands it\n  at PTX line \d+ `ldmatrix"):
        _run(broken, info, (1,), values)


def test_cp_async_bytes_landed_by_other_threads_need_a_barrier(bench):
    """After its cp.async.wait_group a thread sees its own copies; ldmatrix reads rows other
    threads copied, which needs the bar.sync after the wait."""
    ptx, info, values = _matmul(bench, "sm_80", 64, 64, 64, (64, 64, 32))
    lines = ptx.split("\n")
    wait = next(i for i, line in enumerate(lines) if "cp.async.wait_group" in line)
    barrier = next(i for i in range(wait, len(lines)) if "bar.sync" in lines[i])
    lines[barrier] = ""
    with pytest.raises(EmulatorError, match=r"shared-memory race: thread \d+ of CTA \(0, 0, 0\) reads shared address "
                                            r"\d+, written by thread \d+ at PTX line \d+ `cp.async.cg.shared.global"):
        _run("\n".join(lines), info, (1,), values)


def test_wgmma_reads_are_checked(bench):
    """sm_90a: the wgmma reads A and B tiles that all 128 threads copied; without the bar.sync
    after the cp.async wait, the race is reported at the wgmma."""
    ptx, info, values = _matmul(bench, "sm_90a", 128, 128, 64, (128, 128, 64))
    lines = ptx.split("\n")
    wait = next(i for i, line in enumerate(lines) if "cp.async.wait_group" in line)
    barrier = next(i for i in range(wait, len(lines)) if "bar.sync" in lines[i])
    lines[barrier] = ""
    with pytest.raises(EmulatorError, match=r"shared-memory race: [^\n]*written by thread \d+[^\n]*\n  at PTX line \d+ "
                                            r"`wgmma.mma_async"):
        _run("\n".join(lines), info, (1,), values)
    broken, _ = _without(ptx, 0, "cp.async.wait_group")
    with pytest.raises(EmulatorError, match=r"before the cp.async.wait_group that lands it\n  at PTX line \d+ "
                                            r"`wgmma.mma_async"):
        _run(broken, info, (1,), values)


def test_guarded_barrier_is_a_deadlock(bench):
    """A bar.sync only the threads of a predicate execute: the others never arrive."""
    ptx, info, values = _softmax(bench)
    lines = ptx.split("\n")
    store = next(line for line in lines if "st.shared.f32" in line).strip()
    guard = store.split()[0]
    assert guard.startswith("@%p")
    barrier = next(i for i, line in enumerate(lines) if "bar.sync" in line)
    lines[barrier] = f"\t{guard} bar.sync 0;"
    with pytest.raises(EmulatorError, match=r"bar.sync under a predicate true for only \d+ of the \d+ threads of the "
                                            r"CTA here: a deadlock on a GPU \(thread \d+ of CTA \(0, 0, 0\) skips "
                                            r"it\)"):
        _run("\n".join(lines), info, (3,), values)


HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"
_BODY = """ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mov.u32 %r2, scratch;
setp.eq.u32 %p1, %r1, 0;
@%p1 st.shared.u32 [%r2], 42;
{barrier}
ld.shared.u32 %r3, [%r2];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
ret;"""


def _handwritten(barrier: str) -> str:
    return HEADER + (".visible .entry k(.param .u64 out)\n.maxntid 64, 1, 1\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
                     ".reg .pred %p<4>;\n.shared .align 4 .b8 scratch[16];\n" + _BODY.format(barrier=barrier) + "\n}\n")


def test_handwritten_race_and_its_fix():
    out = np.zeros(64, np.uint32)
    run_ptx(_handwritten("bar.sync 0;"), (2,), [out])
    np.testing.assert_array_equal(out, 42)
    with pytest.raises(EmulatorError, match=r"shared-memory race: thread 1 of CTA \(0, 0, 0\) reads shared address 0, "
                                            r"written by thread 0 at PTX line 15 `@%p1 st.shared.u32 \[%r2\], 42` "
                                            r"with no barrier between\n  at PTX line 17 `ld.shared.u32"):
        run_ptx(_handwritten(""), (2,), [out])


def test_wgmma_accumulators_used_before_their_wait_group(bench):
    ptx, info, values = _matmul(bench, "sm_90a", 128, 128, 64, (128, 128, 64))
    broken, _ = _without(ptx, -1, "wgmma.wait_group")
    with pytest.raises(EmulatorError, match=r"kernel matmul_kernel: \S+ reads %f\d+, an accumulator of the wgmma at "
                                            r"PTX line \d+ `wgmma.mma_async[^`]*`, from kernels.py:\d+ `acc \+= "
                                            r"tl.dot\(a, b\)`, before a wgmma.wait_group retires it"):
        _run(broken, info, (1,), values)


def _tma_matmul():
    """The persistent TMA matmul on 2 CTAs, 2 tiles each."""
    from tile.tools.tensor_descriptor import TensorDescriptor

    kernels = load_kernels("emulator_checks_kernels_tma", tile.jit, tl, "kernels_tma.py")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((128, 64)).astype(np.float16), rng.standard_normal((64, 128)).astype(np.float16)
    c = np.empty((128, 128), np.float16)
    descs = tuple(TensorDescriptor.from_tensor(x, [64, 64]) for x in (a, b, c))
    ptx, info, values = _compiled(kernels.persistent_matmul_descriptors, "sm_90a", (2,), (*descs, 128, 128, 64),
                                  dict(NUM_SMS=2))
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    return ptx, info, values


def test_tma_bytes_read_before_the_mbarrier_wait():
    """The TMA matmul without its mbarrier wait: the wgmma reads a tile still in flight."""
    ptx, info, values = _tma_matmul()
    lines = ptx.split("\n")
    wait = next(i for i, line in enumerate(lines) if "mbarrier.try_wait" in line)
    assert "bra" in lines[wait + 1]
    lines[wait] = lines[wait + 1] = ""
    with pytest.raises(EmulatorError, match=r"reads shared address \d+, a byte of the cp.async.bulk.tensor at PTX line "
                                            r"\d+ [^\n]* before the mbarrier.try_wait that sees its phase complete\n"
                                            r"  at PTX line \d+ `wgmma.mma_async"):
        _run("\n".join(lines), info, (2,), values)


def test_tma_store_source_overwritten_before_its_read_completes():
    """Without cp.async.bulk.wait_group, the next tile's epilogue overwrites the buffer the
    previous tile's TMA store may still be reading (the persistent loop defers that wait to
    just before the next write)."""
    ptx, info, values = _tma_matmul()
    broken, _ = _without(ptx, 0, "cp.async.bulk.wait_group.read 0")
    with pytest.raises(EmulatorError, match=r"writes shared address \d+, which the cp.async.bulk.tensor at PTX line "
                                            r"\d+ [^\n]*kernels_tma.py:\d+ `c_desc.store[^\n]* may still read: a "
                                            r"cp.async.bulk.wait_group must retire it first\n  at PTX line \d+ "
                                            r"`stmatrix.sync.aligned"):
        _run(broken, info, (2,), values)


def test_kernel_exits_while_its_tma_store_reads_shared_memory():
    """The persistent loop's last TMA store is waited for before the kernel returns; without
    that wait the CTA would give its shared memory back to the copy engine's reads."""
    ptx, info, values = _tma_matmul()
    broken, _ = _without(ptx, -1, "cp.async.bulk.wait_group.read 0")
    with pytest.raises(EmulatorError, match=r"the kernel exits while the cp.async.bulk.tensor at PTX line \d+ "
                                            r"[^\n]*kernels_tma.py:\d+ `c_desc.store[^\n]* may still read shared "
                                            r"memory: a cp.async.bulk.wait_group.read must retire it first"):
        _run(broken, info, (2,), values)


def test_buffer_overwritten_while_a_wgmma_may_read_it(bench):
    """The pipelined sm_90a matmul keeps one wgmma group in flight (wgmma.wait_group 1) before
    refilling the stage the previous one read; without that wait the refill races the wgmma."""
    ptx, info, values = _matmul(bench, "sm_90a", 128, 128, 256, (128, 128, 64))
    broken, _ = _without(ptx, 0, "wgmma.wait_group.sync.aligned 1")
    with pytest.raises(EmulatorError, match=r"writes shared address \d+, which the wgmma.mma_async at PTX line \d+ "
                                            r"[^\n]* may still read: a wgmma.wait_group must retire it first\n"
                                            r"  at PTX line \d+ `cp.async"):
        _run(broken, info, (1,), values)


def test_one_cta_per_batch(bench, monkeypatch):
    """With room for one CTA's shared memory per batch, each CTA runs in its own batch (own race
    records); the result is the same."""
    import tile.emulator.launch as launch

    monkeypatch.setattr(launch, "BATCH_SHARED_BYTES", 1)
    ptx, info, values = _softmax(bench)
    out = values[0]
    out[...] = np.nan
    _run(ptx, info, (3,), values)
    x = values[1]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)


def test_tma_store_of_bytes_stored_without_a_proxy_fence():
    """The epilogue's threads store the C tile to shared memory and fence.proxy.async before
    the TMA store reads it through the async proxy; without the fence the store is named."""
    ptx, info, values = _tma_matmul()
    fences = [line for line in ptx.split("\n") if "fence.proxy.async" in line]
    assert fences
    broken = ptx
    for line in fences:
        broken = broken.replace(line, "")
    with pytest.raises(EmulatorError, match=r"cp.async.bulk.tensor reads shared address \d+, which thread \d+ of CTA "
                                            r"\(\d, 0, 0\) stored at PTX line \d+ `(st.shared|stmatrix)[^\n]* with no "
                                            r"fence.proxy.async after it"):
        _run(broken, info, (2,), values)
