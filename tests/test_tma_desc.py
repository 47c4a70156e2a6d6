"""In-kernel tensor descriptors (`tl.make_tensor_descriptor`) on sm_90a: TMA tensor maps that each
program writes into its slot of the launch's global scratch (tile.set_allocator), with
tensormap.replace and the tensormap proxy fences (tile/opt/tma.py, tile/codegen/lower_tma.py,
ptx/tma.py, tile/runtime/cuda_launch.py). CPU only: IR, PTX text and ptxas, the launcher's
scratch with a fake launcher, errors, and the interpreter against NumPy;
tests/test_tma_desc_gpu.py runs the kernels on a GPU."""
from __future__ import annotations

import contextvars
import re

import numpy as np
import pytest
from ptxas_util import assemble_ok

import tile
import tile.language as tl
from tile.codegen.ptx import emit_ptx
from tile.ir import VerificationError, parse_op, verify
from tile.runtime import allocation
from tile.runtime.allocation import StreamScratch, allocate_scratch
from tile.runtime.cuda_launch import CudaBackend

RNG = np.random.default_rng(18)


@tile.jit
def desc_copy_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    offs = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(offs, src.load(offs) * 2 + 1)


@tile.jit
def desc_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@tile.jit
def desc_row_sum_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor load in a loop that feeds no dot: it keeps the masked expansion."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM,), dtype=tl.float32)
    for n in range(0, N, BN):
        acc += tl.sum(src.load([tl.program_id(0) * BM, n]).to(tl.float32), axis=1)
    tl.store(out_ptr + tl.program_id(0) * BM + tl.arange(0, BM), acc)


def _copy_args(m=100, n=64, dtype=np.float16):
    if np.issubdtype(dtype, np.integer):
        x = RNG.integers(-50, 50, size=(m, n)).astype(dtype)
        return x, np.full_like(x, 77), m, n
    x = RNG.standard_normal((m, n)).astype(dtype)
    return x, np.full_like(x, np.nan), m, n


def _fields(ptx: str, field: str) -> list[str]:
    """The operands after the slot of each `tensormap.replace` of `field`, in order."""
    return re.findall(rf"tensormap\.replace\.tile\.{field}\.shared::cta\.b1024\.b(?:32|64) \[%rd\d+\], ([^;]+);", ptx)


def _dump(kernel, *args, stage="ptx", target="sm_90a", **meta):
    return str(tile.dump(kernel, *args, stage=stage, target=target, **meta))


# ----------------------------------------------------------------------------- IR


def test_each_tensor_map_gets_a_scratch_slot() -> None:
    gpu = _dump(desc_copy_kernel, *_copy_args(), BM=32, BN=64, stage="gpu")
    assert '"global_scratch"]' in gpu and "global_scratch_bytes = 256" in gpu
    assert "%global_scratch: ptr<i8>" in gpu
    assert "slot = 0" in gpu and "slot = 1" in gpu
    assert "gpu.tma_load" in gpu and "gpu.tma_store" in gpu and "tt.load" not in gpu


def test_unused_tensor_maps_go_and_take_no_scratch() -> None:
    x = RNG.standard_normal((64, 256)).astype(np.float32)
    gpu = _dump(desc_row_sum_kernel, x, np.zeros(64, np.float32), 64, 256, BM=16, BN=64, stage="gpu")
    assert "tt.make_tensormap" not in gpu and "global_scratch" not in gpu and "tt.load" in gpu


def test_matmul_loads_go_on_the_tma_ring() -> None:
    a, b, c = (np.ones(s, np.float16) for s in ((256, 192), (192, 256), (256, 256)))
    args = (a, b, c, 256, 256, 192)
    gpu = _dump(desc_matmul_kernel, *args, BM=128, BN=128, BK=64, stage="gpu")
    assert gpu.count("tt.make_tensormap") == 3 and "global_scratch_bytes = 384" in gpu
    assert "gpu.tma_load_async" in gpu and "gpu.tma_store" in gpu
    ptx = _dump(desc_matmul_kernel, *args, BM=128, BN=128, BK=64)
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" not in ptx
    assemble_ok(ptx, "sm_90a")


def test_make_tensormap_verifier() -> None:
    text = """tt.func {sym_name = "k", num_warps = 4} {
^bb(%x: ptr<f16>, %n: i32, %s: i64):
  %t = tt.make_tensormap %x, %n, %n, %s {block_shape = [64, 64], padding = "zero"} : tensormap
  tt.return
}"""
    with pytest.raises(VerificationError, match="expects a base, 2 shapes and 2 strides"):
        verify(parse_op(text))
    bad_stride = text.replace("%n, %n, %s", "%n, %n, %s, %n")
    with pytest.raises(VerificationError, match="stride operands must be i64"):
        verify(parse_op(bad_stride))


# ----------------------------------------------------------------------------- PTX


def test_copy_kernel_ptx() -> None:
    ptx = _dump(desc_copy_kernel, *_copy_args(), BM=32, BN=64)
    assert ".param .u64 global_scratch" in ptx
    assert ptx.count("tensormap.replace.tile.global_address.shared::cta.b1024.b64") == 2
    for field in ("rank", "box_dim", "global_dim", "element_stride", "elemtype", "interleave_layout",
                  "swizzle_mode", "fill_mode"):
        assert f"tensormap.replace.tile.{field}.shared::cta.b1024.b32" in ptx, field
    assert "tensormap.replace.tile.global_stride.shared::cta.b1024.b64" in ptx
    assert _fields(ptx, "elemtype") == ["6", "6"]  # f16
    assert _fields(ptx, "swizzle_mode") == ["3", "3"]  # 128-byte rows
    assert _fields(ptx, "box_dim") == ["0, 64", "1, 32"] * 2  # innermost first
    assert _fields(ptx, "rank") == ["1", "1"] and _fields(ptx, "fill_mode") == ["0", "0"]
    # built in shared memory, then copied to the program's global slot by warp 0, with the release
    copy = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
    assert ptx.count(copy) == 2 and "fence.proxy.tensormap::generic.release" not in ptx
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 2
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "ld.global" not in ptx and "cvta.param" not in ptx
    assemble_ok(ptx, "sm_90a")


@tile.jit
def desc_per_group_copy_kernel(x_ptr, y_ptr, G, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """One descriptor pair per group, made inside the loop (grouped GEMM's shape)."""
    for g in range(G):
        src = tl.make_tensor_descriptor(x_ptr + g * M * N, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        dst = tl.make_tensor_descriptor(y_ptr + g * M * N, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        offs = [tl.program_id(0) * BM, 0]
        dst.store(offs, src.load(offs) + 1)


def test_descriptors_made_in_a_loop_keep_their_guard_outside_it() -> None:
    """ptxas if-converts the thread-0 field writes only under a predicate computed outside the
    loop; recomputed inside (as sink_predicates does for other predicates) each write got a branch."""
    x = RNG.standard_normal((3, 64, 64)).astype(np.float16)
    ptx = _dump(desc_per_group_copy_kernel, x, np.full_like(x, np.nan), 3, 64, 64, BM=32, BN=64)
    guards = set(re.findall(r"@(%p\d+) tensormap\.replace", ptx))
    first_label = ptx.index("$L__")
    assert guards and all(re.search(rf"setp\.\w+\.s32 {g}, ", ptx[:first_label]) for g in guards), guards
    assert not any(re.search(rf"setp\.\w+\.s32 {g}, ", ptx[first_label:]) for g in guards)
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("dtype,elemtype", [(np.float32, 7), (np.int8, 0), (np.int32, 3), (np.uint16, 1)])
def test_element_types(dtype, elemtype: int) -> None:
    ptx = _dump(desc_copy_kernel, *_copy_args(64, 128, dtype), BM=16, BN=64)
    assert _fields(ptx, "elemtype") == [str(elemtype)] * 2
    assemble_ok(ptx, "sm_90a")


def test_nan_padding_sets_the_fill_mode() -> None:
    @tile.jit
    def nan_padded(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
        src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option="nan")
        dst = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
        dst.store([0, 0], src.load([0, 0]))

    ptx = _dump(nan_padded, *_copy_args(), BM=32, BN=64)
    assert _fields(ptx, "fill_mode") == ["1", "0"]


def test_old_ptx_versions_take_strides_in_16_bytes() -> None:
    simt = parse_op(_dump(desc_copy_kernel, *_copy_args(), BM=32, BN=64, stage="simt"))
    old, new = emit_ptx(simt, "sm_90a", "8.4"), emit_ptx(simt, "sm_90a", "8.7")
    assert "shr.s64" in old and "shr.s64" not in new
    assemble_ok(old, "sm_90a")


@tile.jit
def desc_copy3_kernel(x_ptr, y_ptr, A, B, C, s0, s1, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [A, B, C], [s0, s1, 1], [BA, BB, BC])
    dst = tl.make_tensor_descriptor(y_ptr, [A, B, C], [s0, s1, 1], [BA, BB, BC])
    dst.store([0, 0, 0], src.load([0, 0, 0]))


def test_rank_3_fields_go_innermost_first() -> None:
    x = np.zeros((4, 8, 32), np.float32)
    args = (x, x, 4, 8, 32, 256, 32)
    simt = _dump(desc_copy3_kernel, *args, BA=2, BB=4, BC=32, stage="simt")
    creates = [line for line in simt.splitlines() if "simt.tensormap_create" in line]
    assert len(creates) == 2 and all("%C, %B, %A," in line and "box = [32, 4, 2]" in line for line in creates)
    defs = {line.split(" = ")[0].strip(): line for line in simt.splitlines() if " = " in line}

    def source(stride: str) -> str:  # the parameter a byte stride (a multiply of its cast) comes from
        cast = defs[stride].split("arith.mul ")[1].split(",")[0]
        return defs[cast].split("simt.cvt ")[1].split(" ")[0]

    inner, outer = creates[0].split("%A, ")[1].split(" {")[0].split(", ")
    assert (source(inner), source(outer)) == ("%s1", "%s0")
    ptx = _dump(desc_copy3_kernel, *args, BA=2, BB=4, BC=32)
    assert _fields(ptx, "rank") == ["2", "2"] and "cp.async.bulk.tensor.3d" in ptx
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_other_targets_keep_masked_accesses(target: str) -> None:
    ptx = _dump(desc_copy_kernel, *_copy_args(), BM=32, BN=64, target=target)
    assert "tensormap" not in ptx and "global_scratch" not in ptx and "cp.async.bulk" not in ptx
    assert "ld.global" in ptx
    assemble_ok(ptx, target)


# ----------------------------------------------------------------------------- block pointers


@tile.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr,
                            BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, 1), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


@tile.jit
def block_ptr_copy_kernel(x_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (stride_m, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1)) + 1, boundary_check=(0, 1))


def _block_ptr_matmul_args(stride_am: int = 192):
    a, b, c = np.ones((256, 192), np.float16), np.ones((192, 256), np.float16), np.zeros((256, 256), np.float16)
    return a, b, c, 256, 256, 192, stride_am, 256, 256


def test_block_pointers_go_through_tma() -> None:
    gpu = _dump(block_ptr_matmul_kernel, *_block_ptr_matmul_args(), BM=128, BN=128, BK=64, stage="gpu")
    assert gpu.count("tt.make_tensormap") == 3 and "gpu.tma_store" in gpu
    assert gpu.count("gpu.tma_load_async") == 6 and "tt.load" not in gpu
    ptx = _dump(block_ptr_matmul_kernel, *_block_ptr_matmul_args(), BM=128, BN=128, BK=64)
    assert "wgmma.mma_async" in ptx
    assemble_ok(ptx, "sm_90a")


def test_block_pointers_of_unknown_alignment_stay_masked() -> None:
    """A stride not known to be a multiple of 16 bytes (191 f16 elements) keeps A's masked loads."""
    gpu = _dump(block_ptr_matmul_kernel, *_block_ptr_matmul_args(191), BM=128, BN=128, BK=64, stage="gpu")
    assert gpu.count("tt.make_tensormap") == 2 and "tt.load %a_ptr.ptrs" in gpu


@pytest.mark.parametrize("m,n,stride", [(8, 64, 64), (8, 2, 2)])
def test_small_or_unaligned_block_pointer_copies_stay_masked(m: int, n: int, stride: int) -> None:
    x = np.ones((m, stride), np.float32)
    gpu = _dump(block_ptr_copy_kernel, x, x, m, n, stride, BM=8, BN=2, stage="gpu")
    assert "tensormap" not in gpu and "tt.load" in gpu  # rows of 8 bytes: under TMA's 16


def test_interpreter_block_pointer_copy() -> None:
    m, n = 37, 24
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.full_like(x, np.nan)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        block_ptr_copy_kernel[(tile.cdiv(m, 16),)](x, y, m, n, n, BM=16, BN=32)
    np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) + 1, rtol=1e-6)


# ----------------------------------------------------------------------------- launcher


class _FakeLauncher:
    """Records what the backend's entry passes to the generated launch."""

    def __init__(self):
        self.calls = []

    def make_entry(self, block_x, shared_bytes, positions, value_count, compiled):
        def entry(grid, values, args, stream):
            raise AssertionError("the scratch entry calls fast")

        def fast(grid, stream, *values):
            self.calls.append((positions, value_count, grid, stream, values))
            return compiled

        entry.fast = fast
        return entry


class _Buffer:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def _backend(scratch_bytes: int) -> tuple[CudaBackend, _FakeLauncher]:
    backend = object.__new__(CudaBackend)
    backend.name, backend.block_x, backend.shared_bytes, backend.scratch_bytes = "k", 128, 0, scratch_bytes
    backend.device = 0
    backend.launcher = _FakeLauncher()
    return backend, backend.launcher


def _in_fresh_context(fn):
    return contextvars.Context().run(fn)


def test_launches_get_scratch_per_program() -> None:
    def run():
        asked = []
        tile.set_allocator(lambda size, alignment, stream: asked.append((size, alignment, stream)) or _Buffer(4096))
        backend, launcher = _backend(256)
        entry = backend.make_entry((0, 2), 3, "compiled")
        assert entry((4, 3), (10, 11, 12), (), 7) == "compiled"
        assert asked == [(256 * 12, 128, 7)]
        assert launcher.calls == [((0, 2, 3), 4, (4, 3), 7, (10, 11, 12, 4096))]

    _in_fresh_context(run)


def test_kernels_without_scratch_launch_as_before() -> None:
    backend, launcher = _backend(0)
    entry = backend.make_entry((0,), 1, None)
    entry.fast((1,), 0, 5)
    assert launcher.calls == [((0,), 1, (1,), 0, (5,))]


def test_without_an_allocator_tile_gives_scratch_of_its_own(monkeypatch) -> None:
    made = []

    def new_buffer(nbytes: int, device: int) -> _Buffer:
        made.append((nbytes, device))
        buffer = _Buffer(4096 * len(made))
        buffer.nbytes = nbytes
        return buffer

    scratch = StreamScratch(new_buffer)
    monkeypatch.setattr(allocation, "TILE_SCRATCH", scratch)

    def run():
        backend, launcher = _backend(128)
        entry = backend.make_entry((0,), 1, None)
        entry.fast((2,), 7, 5)  # 256 bytes on stream 7
        entry.fast((1,), 7, 5)  # fits: the same buffer
        entry.fast((2,), 0, 5)  # another stream: its own buffer
        entry.fast((3,), 7, 5)  # 384 bytes: stream 7's buffer doubles
        assert made == [(256, 0), (256, 0), (512, 0)]
        assert [call[-1][-1] for call in launcher.calls] == [4096, 4096, 8192, 12288]

    _in_fresh_context(run)


def test_misaligned_scratch_is_an_error() -> None:
    def run():
        tile.set_allocator(lambda size, alignment, stream: _Buffer(4096 + 64))
        with pytest.raises(RuntimeError, match="aligned to 128 bytes"):
            allocate_scratch("k", 128, 0, 0)

    _in_fresh_context(run)


# ----------------------------------------------------------------------------- interpreter


@pytest.mark.parametrize("m,n,bm,bn", [(100, 64, 32, 64), (37, 80, 16, 32)])
def test_interpreter_copy(m: int, n: int, bm: int, bn: int) -> None:
    x, y, _, _ = _copy_args(m, n, np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        desc_copy_kernel[(tile.cdiv(m, bm), tile.cdiv(n, bn))](x, y, m, n, BM=bm, BN=bn)
    np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) * 2 + 1, rtol=1e-6)


def test_interpreter_matmul() -> None:
    m, n, k = 80, 96, 72
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        desc_matmul_kernel[(tile.cdiv(m, 64), tile.cdiv(n, 64))](a, b, c, m, n, k, BM=64, BN=64, BK=32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=5e-2)
