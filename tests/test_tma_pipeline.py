"""The TMA ring (tile/opt/pipeline.py on gpu.tma_load): a K loop's descriptor loads feeding wgmma
become num_stages buffers and mbarriers, copies issued num_stages - 1 iterations ahead. CPU only:
the gpu IR, the PTX (assembled with ptxas for sm_90a) and a model of the ring's mbarrier phases;
tests/test_tma_gpu.py runs the kernels on a GPU."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest
from ptxas_util import assemble_ok
from test_tma import _matmul_args, persistent_matmul_kernel, tma_matmul_kernel

import tile
import tile.language as tl
from tile.ir import parse_op, print_op, verify
from tile.tools.tensor_descriptor import TensorDescriptor

COPY = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"


@tile.jit
def load_not_feeding_a_dot_kernel(x_desc, out_ptr, K):
    BM: tl.constexpr = x_desc.block_shape[0]
    BK: tl.constexpr = x_desc.block_shape[1]
    total = tl.zeros((BM, BK), dtype=tl.float32)
    for k in range(0, K, BK):
        total += x_desc.load([0, k]).to(tl.float32)
    rows, cols = tl.arange(0, BM)[:, None], tl.arange(0, BK)[None, :]
    tl.store(out_ptr + rows * BK + cols, total)


def _persistent_args():
    a, (b_desc, c_desc) = np.ones((256, 192), np.float16), _matmul_args()[1:3]
    return (TensorDescriptor.from_tensor(a, [128, 64]), b_desc, c_desc, 256, 256, 192)


KERNELS = {"k_loop": (tma_matmul_kernel, _matmul_args, {}),
           "persistent": (persistent_matmul_kernel, _persistent_args, {"NUM_SMS": 132}),
           "decaying": (tma_matmul_kernel, _matmul_args, {"num_warps": 8, "DECAY": 0.5})}


def _dump(name: str, stage: str, stages: int) -> str:
    kernel, args, constexprs = KERNELS[name]
    return str(tile.dump(kernel, *args(), stage=stage, target="sm_90a", num_stages=stages, **constexprs))


def _loop_body(ptx: str) -> str:
    """The PTX of the K loop: from its mbarrier wait to the wgmma.wait_group 0 after it."""
    start = ptx.index("mbarrier.try_wait.parity")
    return ptx[start:ptx.index("wgmma.wait_group.sync.aligned 0", start)]


def _elected(ptx: str, pred: str) -> bool:
    """Whether `pred` is an and.pred chain with an elect.sync predicate among its terms."""
    made = re.search(rf"and\.pred {pred}, (%p\d+), (%p\d+);", ptx)
    return made is not None and any(f"elect.sync _|{p}, -1;" in ptx or _elected(ptx, p) for p in made.groups())


@pytest.mark.parametrize("name", ["k_loop", "persistent"])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_ring_ptx(name: str, stages: int) -> None:
    ptx = _dump(name, "ptx", stages)
    # one mbarrier per stage, initialized once per run of the loop and invalidated after it
    assert ptx.count("mbarrier.init.shared::cta.b64") == stages
    assert ptx.count("mbarrier.inval.shared::cta.b64") == stages
    assert "fence.proxy.async.shared::cta" in ptx
    # A is one 128x64 box, B two 64x64 boxes: 3 copies per iteration, stages - 1 iterations ahead
    init = ptx.index("mbarrier.init.shared::cta.b64")
    wait = ptx.index("mbarrier.try_wait.parity.shared::cta.b64")
    assert ptx.count(COPY, init, wait) == 3 * (stages - 1)
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _,", init, wait) == stages - 1
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r" in ptx and ", 32768;" in ptx
    loop = _loop_body(ptx)
    assert loop.count(COPY) == 3 and loop.count("mbarrier.try_wait.parity") == 1
    # each copy is issued by warp 0's elected lane: ptxas needs no loop over the lanes' operands
    for guard in re.findall(rf"@(%p\d+) {re.escape(COPY)}", loop):
        assert f"elect.sync _|{guard}, -1;" in ptx or _elected(ptx, guard), guard
    assert "cp.async.cg" not in ptx and "cp.async.wait_group" not in ptx and "ld.global" not in ptx
    # the wgmma of the previous iteration retires, in every warp group, before its stage is refilled
    retire = loop.index("wgmma.wait_group.sync.aligned 1")
    assert loop.index("bar.sync 0", retire) < loop.index(COPY)
    # the phase parity flips when the stage index wraps to 0
    assert re.search(rf"setp\.ge\.s32 %p\d+, %r\d+, {stages};", loop) and "rem.s32" not in loop
    assert re.search(r"xor\.b32 %r\d+, %r\d+, 1;", loop) and "selp.b32" in loop
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("stages", [2, 4])
def test_ring_gpu_ir_round_trips(name: str, stages: int) -> None:
    text = _dump(name, "gpu", stages)
    for op in ("gpu.mbarrier_init", "gpu.mbarrier_expect", "gpu.tma_load_async", "gpu.mbarrier_wait",
               "gpu.mbarrier_inval"):
        assert op in text
    assert f"tensor<{stages}xi64" in text and f"tensor<{stages}x128x64xf16" in text
    assert "gpu.tma_load " not in text and "gpu.async_copy" not in text
    func = parse_op(text)
    verify(func)
    assert print_op(func) == text


@pytest.mark.parametrize("stages", [2, 3])
def test_synchronous_dots_release_their_stages_on_mbarriers(stages: int) -> None:
    """A ring whose dot is synchronous has no gpu.barrier in the loop: each thread arrives on the
    stage's "empty" mbarrier after its dot, and warp 0 waits there before refilling the stage, so
    warp groups are not held in step (attention's softmax overlaps the other group's wgmma)."""
    text = _dump("decaying", "gpu", stages)
    loop = text[text.index("scf.for"):text.index("gpu.mbarrier_inval")]
    assert "gpu.barrier" not in loop.rsplit("scf.yield", 1)[0]
    assert "gpu.mbarrier_init %" in text and "{count = 256}" in text and text.count("gpu.mbarrier_inval") == 2
    wait = loop.index("{issuer = true}")
    copies = [m.start() for m in re.finditer(r"gpu\.tma_load_async .*\{released = true", loop)]
    assert len(copies) == 2 and wait < min(copies) < loop.index("tt.dot")  # one dot: issued at the top
    assert loop.index("tt.dot") < loop.index("gpu.mbarrier_arrive") < loop.index("scf.yield")
    func = parse_op(text)
    verify(func)
    assert print_op(func) == text
    ptx = _dump("decaying", "ptx", stages)
    body = ptx[ptx.index("mbarrier.try_wait.parity"):]
    body = body[:body.index("wgmma.wait_group.sync.aligned 0")]
    assert "bar.sync" not in body[:body.index("wgmma.fence")]
    # only warp 0 waits for the release; the others skip the loop
    assert re.search(r"not\.pred (%p\d+), %p\d+;\s*\$L__\w+:\s*@!\1 mbarrier\.try_wait\.parity", ptx)
    assert "mbarrier.arrive.shared::cta.b64 _, [%r" in ptx
    assemble_ok(ptx, "sm_90a")


def test_synchronous_ring_runs_on_the_emulator() -> None:
    """tma_matmul_kernel with DECAY = 0.5 on the sm_90a emulator, 8 warps and 3 stages, against NumPy."""
    from tile.emulator import emulate

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((128, 256)).astype(np.float16), rng.standard_normal((256, 128)).astype(np.float16)
    c = np.full((128, 128), np.nan, np.float16)
    descs = (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
             TensorDescriptor.from_tensor(c, [128, 128]))
    emulate(tma_matmul_kernel, "sm_90a")[(1, 1)](*descs, 256, DECAY=0.5, num_warps=8, num_stages=3)
    want = np.zeros((128, 128))
    for k in range(0, 256, 64):
        want = 0.5 * want + a[:, k:k + 64].astype(np.float64) @ b[k:k + 64].astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2)


def test_emulator_refuses_a_refill_nothing_orders_after_the_other_warps_reads(monkeypatch, tmp_path) -> None:
    """The released ring without warp 0's wait on the "empty" mbarrier: the emulator runs its warps
    in step, so no wrong value shows, but nothing would hold the copy back behind a slower warp
    group; the emulator's epochs say so, naming the wgmma whose read it may overwrite."""
    from tile.emulator import EmulatorError, emulate
    from tile.opt import pipeline

    emit = pipeline._Emitter.op

    def without_the_issuers_wait(self, name, operands, result_types=(), **attrs):
        if name == "gpu.mbarrier_wait" and attrs.get("issuer"):
            return None
        return emit(self, name, operands, result_types, **attrs)

    monkeypatch.setattr(pipeline._Emitter, "op", without_the_issuers_wait)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    a, b = np.ones((128, 256), np.float16), np.ones((256, 128), np.float16)
    c = np.zeros((128, 128), np.float16)
    descs = (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
             TensorDescriptor.from_tensor(c, [128, 128]))
    with pytest.raises(EmulatorError, match=r"starts a copy into shared address \d+, which the wgmma\S* at .*read: "
                                            r"nothing orders the copy after every warp's wgmma.wait_group"):
        emulate(tile.jit(tma_matmul_kernel.fn), "sm_90a")[(1, 1)](*descs, 256, DECAY=0.5, num_warps=8, num_stages=3)


def test_persistent_ring_runs_per_tile() -> None:
    """The mbarriers are initialized before each tile's K loop and invalidated after it, inside the
    tile loop: each run of the ring starts at stage 0, phase 0."""
    text = _dump("persistent", "gpu", 3)
    outer = text.index("scf.for")
    assert outer < text.index("gpu.mbarrier_init") < text.index("scf.for", outer + 1) < text.index(
        "gpu.mbarrier_inval") < text.index("gpu.tma_store")


def _allocs(text: str) -> dict[str, tuple[int, int]]:
    """{buffer: (offset, bytes)} of the gpu.local_alloc ops of gpu IR `text`."""
    found = re.findall(r"(%\w+) = gpu.local_alloc \{bytes = (\d+), offset = (\d+)\}", text)
    return {name: (int(offset), int(size)) for name, size, offset in found}


def test_persistent_store_waits_before_the_next_write_of_its_buffer() -> None:
    """The tile loop's TMA store does not wait for its copy: the next tile's K loop runs while the
    copy engine reads the epilogue's buffer, which therefore shares no bytes with the ring; the wait
    comes before the next tile writes that buffer, and before the kernel returns."""
    text = _dump("persistent", "gpu", 3)
    store = re.search(r"gpu.tma_store (%\w+), .*\{deferred_wait = true, read_back = false\}", text)
    assert store, text
    buffer = store.group(1)
    write = text.index(f"gpu.local_store {buffer},")
    assert text.rindex("gpu.tma_store_wait", 0, write) > text.index("scf.for")
    assert text.index("gpu.barrier", text.rindex("gpu.tma_store_wait", 0, write)) < write
    assert text.count("gpu.tma_store_wait") == 2 and "gpu.tma_store_wait" in text[text.rindex("scf.yield"):]
    allocs = _allocs(text)
    start, size = allocs.pop(buffer)
    assert all(o + n <= start or start + size <= o for o, n in allocs.values()), allocs
    ptx = _dump("persistent", "ptx", 3)
    assert ptx.count("cp.async.bulk.wait_group.read 0;") == 2
    assert ptx.index("cp.async.bulk.wait_group.read 0;") < ptx.index("stmatrix") < ptx.index("cp.async.bulk.commit_group")
    assemble_ok(ptx, "sm_90a")


def test_store_outside_a_loop_waits_at_once() -> None:
    text = _dump("k_loop", "gpu", 3)
    assert "deferred_wait = false" in text and "gpu.tma_store_wait" not in text


def test_deferred_store_gives_its_bytes_back_when_shared_memory_runs_out() -> None:
    """When the epilogue's own buffer would not fit beside the ring, the store waits at once and
    the buffer may reuse others' bytes, as before (here the ring, made outside the tile loop,
    lives throughout it, so the bytes stay the same)."""
    from tile.opt.alloc_shared import AllocShared

    func = parse_op(_dump("persistent", "gpu", 3))
    for op in func.walk():
        if op.name in ("gpu.local_alloc", "tt.make_tensormap", "tt.reduce"):
            op.attrs.pop("offset", None) if op.name != "gpu.local_alloc" else op.attrs.update(offset=-1)
    roomy = parse_op(print_op(func))
    AllocShared(None).run(roomy)
    AllocShared(roomy.attrs["shared_bytes"] - 64).run(func)
    assert func.attrs["shared_bytes"] <= roomy.attrs["shared_bytes"]
    assert "deferred_wait = false" in print_op(func) and "deferred_wait = true" in print_op(roomy)


def test_single_stage_keeps_synchronous_copies() -> None:
    text = _dump("k_loop", "gpu", 1)
    assert text.count("gpu.tma_load ") == 2 and "mbarrier" not in text
    assemble_ok(_dump("k_loop", "ptx", 1), "sm_90a")


def test_loads_not_feeding_a_dot_stay_masked() -> None:
    """A loop's load that no wgmma reads gets no ring: it stays a masked load (an ordinary load,
    overlapped by the warps' own latency hiding) rather than a TMA copy the CTA waits for."""
    x = TensorDescriptor.from_tensor(np.ones((64, 256), np.float16), [64, 64])
    out = np.zeros((64, 64), np.float32)
    text = str(tile.dump(load_not_feeding_a_dot_kernel, x, out, 256, stage="gpu", target="sm_90a"))
    assert "tma_load" not in text and "tt.load" in text


# ----------------------------------------------------------------------------- the ring's phases


class _Mbarrier:
    """An mbarrier initialized for one arrival per phase: the phase completes when the arrival
    (expect_tx) has happened and every expected byte has landed."""

    def __init__(self) -> None:
        self.completed = 0  # phases completed so far
        self.arrived = False
        self.pending_bytes = 0

    def expect(self, nbytes: int) -> None:
        assert not self.arrived, "a second arrival in one phase"
        self.arrived, self.pending_bytes = True, self.pending_bytes + nbytes
        self._advance()

    def land(self, nbytes: int) -> None:
        self.pending_bytes -= nbytes
        self._advance()

    def _advance(self) -> None:
        if self.arrived and self.pending_bytes == 0:
            self.completed, self.arrived = self.completed + 1, False

    def try_wait_parity(self, parity: int, want_phase: int) -> bool:
        """PTX: true once the phase of parity `parity` completed, i.e. the current phase's parity
        differs. The ring must never let the barrier run two phases past the waiter's (the parity
        would then read as not completed: a hang)."""
        assert self.completed <= want_phase + 1, "the mbarrier ran a whole phase past a waiter"
        return self.completed % 2 != parity


def _run_ring(stages: int, iterations: int, warps: int, rng: random.Random) -> None:
    """Runs the pipeline pass's schedule with `warps` warps in a random interleaving, copies landing
    at random later times:
        prologue (thread 0): iteration j < stages - 1 (if j < n): expect + copies into stage j
        barrier
        loop, iteration i (stage s, phase p; s = 0, p = 0 at i = 0):
            wait(s, p); wgmma reads stage s (must hold iteration i's data)
            wgmma.wait_group: the previous iteration's reads retire
            barrier
            thread 0: iteration i + stages - 1 (if < n): expect + copies into (s + stages - 1) % stages
            s' = (s + 1) % stages; p' = p ^ (s' == 0)
        barrier; inval
    Checks every wait completes with the right data, no copy overwrites a stage a warp still
    reads, and nothing is in flight at the end."""
    bars = [_Mbarrier() for _ in range(stages)]
    contents: list[object] = [None] * stages   # the iteration whose data each stage holds
    in_flight: list[tuple[int, int]] = []      # (stage, iteration) copies not landed yet
    reading: list[set[int]] = [set() for _ in range(stages)]  # warps whose wgmma still reads a stage
    box_bytes = (16384, 16384)

    def issue(iteration: int, stage: int) -> None:
        if iteration >= iterations:
            return  # predicated off: no arrival, no copy
        assert not reading[stage], "a copy overwrites a stage a wgmma still reads"
        bars[stage].expect(sum(box_bytes))
        contents[stage] = None
        in_flight.extend((stage, iteration) for _ in box_bytes)

    def land_some() -> None:
        while in_flight and rng.random() < 0.5:
            stage, iteration = in_flight.pop(rng.randrange(len(in_flight)))
            contents[stage] = iteration
            bars[stage].land(box_bytes[0])

    def warp(w: int):
        stage, phase = 0, 0
        for i in range(iterations):
            while not bars[stage].try_wait_parity(phase, i // stages):
                yield "spin"
            assert contents[stage] == i and not any(s == stage for s, _ in in_flight)
            reading[stage].add(w)
            previous = (stage - 1) % stages
            reading[previous].discard(w)        # wgmma.wait_group {pending = 1}
            yield "barrier"
            if w == 0:
                issue(i + stages - 1, (stage + stages - 1) % stages)
            stage = (stage + 1) % stages
            phase ^= int(stage == 0)
            assert (stage, phase) == (((i + 1) % stages), ((i + 1) // stages) % 2)
        for s in range(stages):
            reading[s].discard(w)               # wgmma.wait_group {pending = 0}
        yield "barrier"

    for j in range(stages - 1):
        issue(j, j)
    threads = {w: warp(w) for w in range(warps)}
    at_barrier: set[int] = set()
    for _ in range(100_000):
        if not threads:
            break
        land_some()
        runnable = [w for w in threads if w not in at_barrier]
        if not runnable:
            at_barrier.clear()
            continue
        w = rng.choice(runnable)
        try:
            if next(threads[w]) == "barrier":
                at_barrier.add(w)
        except StopIteration:
            del threads[w]
            at_barrier.discard(w)
        if len(at_barrier) == len(threads) and threads:
            at_barrier.clear()
    assert not threads, "deadlock: the warps spin on mbarriers that no copy completes"
    assert not in_flight and all(not b.arrived for b in bars)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("iterations", [0, 1, 2, 3, 5, 9])
def test_ring_phase_model(stages: int, iterations: int) -> None:
    rng = random.Random(stages * 100 + iterations)
    for _ in range(20):
        _run_ring(stages, iterations, warps=rng.choice([1, 4, 8]), rng=rng)


class _ReleaseMbarrier:
    """A ring's "empty" mbarrier: `count` arrivals (one per thread, here one per warp) complete a
    phase, no bytes."""

    def __init__(self, count: int) -> None:
        self.count, self.arrivals, self.completed = count, 0, 0

    def arrive(self) -> None:
        self.arrivals += 1
        if self.arrivals == self.count:
            self.arrivals, self.completed = 0, self.completed + 1

    def try_wait_parity(self, parity: int, want_phase: int) -> bool:
        assert self.completed <= want_phase + 1, "the mbarrier ran a whole phase past a waiter"
        return self.completed % 2 != parity


def _run_released_ring(stages: int, iterations: int, warps: int, rng: random.Random) -> None:
    """The ring whose dots are synchronous (attention's): no barrier in the loop; each stage is
    released on its "empty" mbarrier, and warp 0 waits for the release before refilling it:
        loop, iteration i (stage s, phase p):
            wait(full s, p)
            warp 0: wait(empty (s + stages - 1) % stages, p ^ (s == 0)); then iteration
                    i + stages - 1 (if < n): expect + copies into that stage
            the dots read stage s (must hold iteration i's data), and complete
            arrive(empty s)
    The warps run in a random interleaving, so they drift apart by whole iterations."""
    full = [_Mbarrier() for _ in range(stages)]
    empty = [_ReleaseMbarrier(warps) for _ in range(stages)]
    contents: list[object] = [None] * stages
    in_flight: list[tuple[int, int]] = []
    reading: list[set[int]] = [set() for _ in range(stages)]

    def issue(iteration: int, stage: int) -> None:
        if iteration >= iterations:
            return
        assert not reading[stage], "a copy overwrites a stage a warp still reads"
        full[stage].expect(32768)
        contents[stage] = None
        in_flight.append((stage, iteration))

    def warp(w: int):
        stage, phase = 0, 0
        for i in range(iterations):
            while not full[stage].try_wait_parity(phase, i // stages):
                yield
            assert contents[stage] == i and not any(s == stage for s, _ in in_flight)
            if w == 0:
                write = (stage + stages - 1) % stages
                while not empty[write].try_wait_parity(phase ^ int(stage == 0), (i - 1) // stages):
                    yield
                issue(i + stages - 1, write)
            reading[stage].add(w)
            yield
            assert contents[stage] == i
            reading[stage].discard(w)
            empty[stage].arrive()
            stage = (stage + 1) % stages
            phase ^= int(stage == 0)

    for j in range(stages - 1):
        issue(j, j)
    threads = {w: warp(w) for w in range(warps)}
    for _ in range(100_000):
        if not threads:
            break
        while in_flight and rng.random() < 0.5:
            stage, iteration = in_flight.pop(rng.randrange(len(in_flight)))
            contents[stage] = iteration
            full[stage].land(32768)
        w = rng.choice(list(threads))
        try:
            next(threads[w])
        except StopIteration:
            del threads[w]
    assert not threads, "deadlock: a warp spins on an mbarrier that never completes"
    assert not in_flight and all(not b.arrived for b in full)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("iterations", [0, 1, 2, 3, 5, 9])
def test_released_ring_phase_model(stages: int, iterations: int) -> None:
    rng = random.Random(stages * 100 + iterations + 7)
    for _ in range(20):
        _run_released_ring(stages, iterations, warps=rng.choice([1, 4, 8]), rng=rng)

