"""tile.emulator: the real compiled PTX of tutorial and benchmark kernels run on the CPU and
match NumPy (at the GPU tests' tolerances); bad PTX and misbehaving kernels give clear errors."""
from __future__ import annotations

import importlib.util
import os
import sys
import types

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.emulator import EmulatorError, PtxSyntaxError, decode_module, emulate, run_ptx

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _load(path: str, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    """benchmarks/kernels.py with tile as its backend."""
    backend = types.ModuleType("_backend")
    backend.jit, backend.tl = tile.jit, tl
    saved = sys.modules.get("_backend")
    sys.modules["_backend"] = backend
    try:
        yield _load("benchmarks/kernels.py", "emulator_bench_kernels")
    finally:
        if saved is None:
            sys.modules.pop("_backend", None)
        else:
            sys.modules["_backend"] = saved


def poison(shape, dtype) -> np.ndarray:
    a = np.empty(shape, dtype)
    a.view(np.uint8)[...] = 0xAB
    return a


# ------------------------------------------------------------------ kernels


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_vector_add(bench, target):
    rng = np.random.default_rng(0)
    n = 5000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poison(n, np.float32)
    emulate(bench.add_kernel, target)[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("rows, cols, block", [(37, 50, 64), (5, 781, 1024)])
def test_softmax(bench, rows, cols, block):
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    out = poison((rows, cols), np.float32)
    emulate(bench.softmax_kernel)[(rows,)](out, x, cols, cols, cols, BLOCK=block)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)


def test_layer_norm(bench):
    rng = np.random.default_rng(2)
    rows, cols = 6, 300
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    y = poison((rows, cols), np.float16)
    mean, rstd = poison(rows, np.float32), poison(rows, np.float32)
    emulate(bench.layer_norm_kernel)[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5, BLOCK=128)
    x64 = x.astype(np.float64)
    mu = x64.mean(1)
    sd = 1 / np.sqrt(x64.var(1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, sd, rtol=1e-5)
    np.testing.assert_allclose(y, (x64 - mu[:, None]) * sd[:, None] * w + b, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("m, n, k, target", [(64, 64, 64, "sm_80"), (64, 128, 72, "sm_80"), (64, 64, 64, "sm_90"),
                                               (96, 80, 72, "sm_80")])  # ragged M, N: the bounds checks see every load
def test_matmul_mma_ldmatrix_cp_async(bench, m, n, k, target):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = poison((m, n), np.float16)
    grid = (tile.cdiv(m, 64) * tile.cdiv(n, 64),)
    compiled = emulate(bench.matmul_kernel, target)[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=64, BLOCK_N=64,
                                                         BLOCK_K=32, GROUP_M=8)
    assert "mma.sync" in compiled.asm["ptx"] and "cp.async" in compiled.asm["ptx"]
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["01_vector_add", "02_fused_softmax", "03_layer_norm", "04_matrix_multiplication",
                                  "05_tensor_cores", "07_fused_attention", "08_low_memory_dropout",
                                  "09_layer_norm_backward"])  # 09: CTAs take turns on spin locks
def test_tutorials_run_on_the_emulator(name, monkeypatch, capsys):
    """The tutorials as scripts under TILE_EMULATE=1: their own checks against NumPy pass."""
    from tile.compiler import INTERPRETER, current_target

    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_EMULATE", "1")
    if current_target() != INTERPRETER:
        pytest.skip("a GPU is present: launches run on it")
    module = _load(f"tutorials/{name}.py", f"emulator_tutorial_{name}")
    module.main()
    assert "max abs error" in capsys.readouterr().out
    assert any(c.target == "sm_80" for fn in _jit_functions(module) for c in fn.cache.values())


def _jit_functions(module: types.ModuleType) -> list:
    """The module's @tile.jit functions, also those under autotune / heuristics wrappers."""
    found = []
    for value in vars(module).values():
        while not isinstance(value, tile.JITFunction) and hasattr(value, "fn"):
            value = value.fn
        if isinstance(value, tile.JITFunction):
            found.append(value)
    return found


def test_tile_emulate_env_runs_ordinary_launches(bench, monkeypatch):
    """TILE_EMULATE=1 sends launches that would run on the interpreter to the emulator."""
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_EMULATE", "1")
    from tile.compiler import INTERPRETER, current_target

    if current_target() != INTERPRETER:
        pytest.skip("a GPU is present: launches run on it")
    n = 300
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = poison(n, np.float32)
    bench.add_kernel[(1,)](x, y, out, n, BLOCK=512)
    np.testing.assert_array_equal(out, x + y)
    assert any(c.target == "sm_80" and "ptx" in c.stages for c in bench.add_kernel.cache.values())


def test_cpu_torch_tensors(bench):
    torch = pytest.importorskip("torch")
    x, y = torch.arange(100, dtype=torch.float32), torch.ones(100)
    out = torch.full((100,), float("nan"))
    emulate(bench.add_kernel)[(1,)](x, y, out, 100, BLOCK=128)
    assert torch.equal(out, x + y)


# ------------------------------------------------------------------ errors

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def _kernel(body: str, regs: str = ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.reg .pred %p<4>;\n.reg .f32 %f<8>;",
            params: str = ".param .u64 out") -> str:
    return HEADER + f".visible .entry k({params})\n.maxntid 64, 1, 1\n{{\n{regs}\n{body}\n}}\n"


def test_unknown_instruction_names_it_and_its_line():
    ptx = _kernel("ld.param.u64 %rd1, [out];\nfrobnicate.b32 %r1, %r2;\nret;")
    with pytest.raises(PtxSyntaxError, match=r"unknown instruction 'frobnicate.b32'.*\n.*PTX line 12 `frobnicate"):
        decode_module(ptx)


def test_bad_modifier_and_malformed_ptx():
    with pytest.raises(PtxSyntaxError, match=r"'add.wobbly.s32': unsupported modifier .wobbly"):
        decode_module(_kernel("add.wobbly.s32 %r1, %r2, %r3;\nret;"))
    with pytest.raises(PtxSyntaxError, match="undeclared register %q1"):
        decode_module(_kernel("mov.u32 %q1, 0;\nret;"))
    with pytest.raises(PtxSyntaxError, match="missing '}'"):
        decode_module(HEADER + ".visible .entry k(.param .u64 out)\n{\nret;\n")
    with pytest.raises(PtxSyntaxError, match="undefined label"):
        decode_module(_kernel("bra.uni $L_nowhere;\nret;"))


def test_never_terminating_kernel_reports_where_it_spins():
    ptx = _kernel("mov.u32 %r1, 0;\n$L_top:\nadd.s32 %r1, %r1, 1;\nbra.uni $L_top;\nret;")
    with pytest.raises(EmulatorError, match=r"ran 5000 steps without finishing.*\n.*PTX line 13 `add.s32"):
        run_ptx(ptx, (1,), [np.zeros(1, np.float32)], max_steps=5000)


def test_out_of_bounds_access_names_argument_thread_and_source(bench):
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    out = poison(100, np.float32)
    with pytest.raises(EmulatorError, match=r"past the end of 'x_ptr' \(400 bytes\).*thread \d+ of CTA \(0, 0, 0\)"
                                            r"[\s\S]*from kernels.py:\d+ `x = tl.load"):
        emulate(bench.add_kernel)[(1,)](x, y, out, 1000, BLOCK=1024)


def test_misaligned_access():
    """The PTX of an add specialised for 16-byte aligned pointers, given a pointer 4 bytes off."""

    @tile.jit
    def copy(src, dst, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs))

    src, dst = np.arange(260, dtype=np.float32), poison(256, np.float32)
    ptx = str(tile.dump(copy, src, dst, BLOCK=256, stage="ptx", target="sm_80"))
    assert ".v2." in ptx or ".v4." in ptx
    with pytest.raises(EmulatorError, match="misaligned address 0x[0-9a-f]+ for a (8|16)-byte access"):
        run_ptx(ptx, (1,), [src[1:257], dst])
    run_ptx(ptx, (1,), [src[:256], dst])
    np.testing.assert_array_equal(dst, src[:256])


def test_barrier_reached_by_part_of_a_cta_is_a_deadlock():
    ptx = _kernel("mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 32;\n@%p1 bra $L_skip;\nbar.sync 0;\n$L_skip:\n"
                  "bar.sync 0;\nret;")
    with pytest.raises(EmulatorError, match=r"bar.sync reached by only 32 of the 64 live threads of the CTA: a "
                                            r"deadlock"):
        run_ptx(ptx, (1,), [np.zeros(1, np.float32)])


def test_divergent_branches_reconverge():
    """Odd and even threads take different paths, then meet again and store together."""
    ptx = _kernel("ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nand.b32 %r2, %r1, 1;\nsetp.eq.u32 %p1, %r2, 0;\n"
                  "@%p1 bra $L_even;\nmul.lo.s32 %r3, %r1, 3;\nbra.uni $L_join;\n$L_even:\nadd.s32 %r3, %r1, 100;\n"
                  "$L_join:\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r3;\nret;")
    out = poison(64, np.uint32)
    run_ptx(ptx, (1,), [out])
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.where(t % 2 == 0, t + 100, 3 * t))


def test_uninitialised_register_read():
    with pytest.raises(EmulatorError, match="read of the uninitialised register %r5"):
        run_ptx(_kernel("add.s32 %r1, %r5, 1;\nret;"), (1,), [np.zeros(1, np.float32)])


def test_ldmatrix_errors_name_the_lane_that_gave_the_row():
    """ldmatrix.x1: lanes 0-7 of each warp give the row addresses; lane 5 of warp 1 (thread 37)
    gives a misaligned one, then one past shared memory."""
    body = ("mov.u32 %r1, %tid.x;\nand.b32 %r2, %r1, 7;\nshl.b32 %r2, %r2, 4;\nsetp.eq.u32 %p1, %r1, 37;\n"
            "@%p1 add.u32 %r2, %r2, {bump};\nldmatrix.sync.aligned.m8n8.x1.shared.b16 {{%r3}}, [%r2];\nret;")
    header = _kernel("", params=".param .u64 out").split("{\n")[0] + "{\n"
    regs = ".reg .b32 %r<8>;\n.reg .pred %p<4>;\n.shared .align 16 .b8 tile_rows[128];\n"
    for bump, message in (("4", r"ldmatrix: row address 84 is not 16-byte aligned"),
                          ("4096", r"ldmatrix: shared address 4176 \+ 16 bytes is past the 128 bytes")):
        with pytest.raises(EmulatorError, match=message + r"[^\n]*\(thread 37 of CTA \(0, 0, 0\)\)"):
            run_ptx(header + regs + body.format(bump=bump) + "\n}\n", (1,), [np.zeros(1, np.float32)])


def test_register_written_only_under_false_predicates_reads_as_undefined():
    """A masked load whose mask is false in every thread leaves its register unwritten; the
    kernel computes with it and discards the result (as tl.where after a masked tl.load): no
    error. A register no instruction writes is still an error (test_uninitialised_register_read)."""
    ptx = _kernel("ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nsetp.gt.u32 %p1, %r1, 1000;\n"
                  "@%p1 ld.global.f32 %f1, [%rd1];\nmul.f32 %f2, %f1, 0f40000000;\n"
                  "selp.f32 %f3, %f2, 0f3F800000, %p1;\n"
                  "mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.f32 [%rd3], %f3;\nret;")
    out = poison(64, np.float32)
    run_ptx(ptx, (1,), [out])
    np.testing.assert_array_equal(out, 1.0)


def test_spin_lock_across_ctas():
    """Thread 0 of each of 8 CTAs (one batch) takes a global spin lock, increments a counter
    with a plain load and store, and releases the lock. The CTA holding the lock runs while the
    others spin (a starved CTA runs alone for a while), so no increment is lost."""
    ptx = _kernel("ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra $L_done;\n"
                  "$L_spin:\natom.global.cas.b32 %r2, [%rd1], 0, 1;\nsetp.ne.u32 %p2, %r2, 0;\n@%p2 bra $L_spin;\n"
                  "ld.global.u32 %r3, [%rd1+4];\nadd.u32 %r3, %r3, 1;\nst.global.u32 [%rd1+4], %r3;\n"
                  "atom.global.exch.b32 %r4, [%rd1], 0;\n$L_done:\nret;")
    lock_and_count = np.zeros(2, np.uint32)
    run_ptx(ptx, (8,), [lock_and_count])
    np.testing.assert_array_equal(lock_and_count, [0, 8])


def test_negative_address_offsets_in_both_spellings():
    """[%rd+-8] (ptxas's and LLVM's spelling, which tile prints for a pointer stepped backwards)
    and [%rd-8] address the same bytes."""
    ptx = _kernel("ld.param.u64 %rd1, [out];\nadd.s64 %rd2, %rd1, 8;\nld.global.u32 %r1, [%rd2+-8];\n"
                  "ld.global.u32 %r2, [%rd2-4];\nadd.u32 %r3, %r1, %r2;\nst.global.u32 [%rd2], %r3;\nret;")
    words = np.array([5, 7, 0], np.uint32)
    run_ptx(ptx, (1,), [words])
    np.testing.assert_array_equal(words, [5, 7, 12])


@tile.jit
def _wait_for_the_next_cta(flags, n_programs, CYCLE: tl.constexpr):
    """Program i waits until program i + 1 has set its flag, then sets its own: the last program
    goes first, so every program waits on one that starts after it. CYCLE: the last program
    waits on program 0 instead, which waits on it: a deadlock."""
    pid = tl.program_id(0)
    if pid + 1 < n_programs or CYCLE:
        while tl.atomic_add(flags + (pid + 1) % n_programs, 0) == 0:
            pass
    tl.atomic_xchg(flags + pid, pid + 1)


def test_ctas_wait_on_ctas_of_a_later_batch(monkeypatch):
    """Two CTAs per batch, eight CTAs: CTA 0 waits (through CTAs 1..6) for CTA 7 of the last
    batch. The waiting batch yields its turn, later batches start beside it, and all finish."""
    from tile.emulator import launch

    monkeypatch.setattr(launch, "BATCH_THREADS", 64)
    flags = np.zeros(8, np.int32)
    emulate(_wait_for_the_next_cta)[(8,)](flags, 8, CYCLE=False, num_warps=1)
    np.testing.assert_array_equal(flags, np.arange(1, 9))


def test_ctas_waiting_on_each_other_are_a_deadlock(monkeypatch):
    """The same chain closed into a cycle: every batch runs in turns until the step budget ends,
    with the PTX line and the tile source line where the threads spin."""
    from tile.emulator import launch

    monkeypatch.setattr(launch, "BATCH_THREADS", 64)
    flags = np.zeros(8, np.int32)
    with pytest.raises(EmulatorError, match=r"ran 50000 steps without finishing[^\n]*\(thread 0 of CTA \(\d, 0, 0\)\)"
                                            r"\n  at PTX line \d+ `[^\n]*`, from test_emulator.py:\d+ "
                                            r"`while tl.atomic_add\(flags"):
        emulate(_wait_for_the_next_cta, max_steps=50_000)[(8,)](flags, 8, CYCLE=True, num_warps=1)
    np.testing.assert_array_equal(flags, 0)


def test_ctas_waiting_beyond_the_live_batches_are_reported(monkeypatch):
    """One CTA per batch and at most two batches (64 threads) at once: CTA 1 waits on CTA 2,
    which never starts; the error says so."""
    from tile.emulator import StepBudgetError, launch

    monkeypatch.setattr(launch, "BATCH_THREADS", 32)
    monkeypatch.setattr(launch, "MAX_LIVE_THREADS", 64)
    flags = np.zeros(4, np.int32)
    with pytest.raises(StepBudgetError, match=r"ran 30000 steps without finishing.*; 2 CTAs of the grid had not "
                                              r"started \(the emulator runs at most 2 batches of 1 CTAs at once\)"):
        emulate(_wait_for_the_next_cta, max_steps=30_000)[(4,)](flags, 4, CYCLE=False, num_warps=1)
