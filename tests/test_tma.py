"""TMA on sm_90a: host TensorDescriptors as CUtensorMap parameters, descriptor loads and stores
as cp.async.bulk.tensor with mbarriers (tile/opt/tma.py, tile/codegen/lower_tma.py,
tile/runtime/tensor_map.py). CPU only: PTX text and ptxas, IR, the tensor-map packing with a fake
encoder, validation. tests/test_tma_gpu.py runs the kernels on a GPU."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from ptxas_util import assemble_ok

import tile
import tile.language as tl
from tile.frontend.specialize import flattening_entry
from tile.ir import VerificationError, parse_op, print_op, verify
from tile.ir.tma_layouts import tma_layout
from tile.runtime.tensor_map import TensorMapCache, check_tma_rules, encode_arguments, pack_opaque
from tile.tools.tensor_descriptor import TensorDescriptor


@tile.jit
def tma_copy_kernel(in_desc, out_desc):
    BM: tl.constexpr = in_desc.block_shape[0]
    BN: tl.constexpr = in_desc.block_shape[1]
    offs = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    out_desc.store(offs, in_desc.load(offs) + 1)


@tile.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, K, DECAY: tl.constexpr = 1.0):
    """C = A @ B; with DECAY, acc = DECAY * acc + A_k @ B_k (the dot then stays synchronous:
    its accumulator is scaled before it, as attention's forward scales acc)."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if DECAY != 1.0:
            acc = acc * DECAY
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@tile.jit
def persistent_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr):
    """Triton's persistent-matmul shape: NUM_SMS programs, each looping over output tiles."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
        off_m = (tile_id // tiles_n) * BM
        off_n = (tile_id % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@tile.jit
def tma_one_step_matmul_kernel(a_desc, b_desc, c_desc):
    BM: tl.constexpr = a_desc.block_shape[0]
    BN: tl.constexpr = b_desc.block_shape[1]
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.dot(a_desc.load([off_m, 0]), b_desc.load([0, off_n]))
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@tile.jit
def tma_store_kernel(out_desc, value):
    BM: tl.constexpr = out_desc.block_shape[0]
    BN: tl.constexpr = out_desc.block_shape[1]
    block = tl.full((BM, BN), value, out_desc.dtype)
    out_desc.store([tl.program_id(0) * BM, 0], block)


def _copy_args(block=(64, 64), dtype=np.float16):
    x = (np.arange(100 * 64) % 1000).astype(dtype).reshape(100, 64)
    return TensorDescriptor.from_tensor(x, list(block)), TensorDescriptor.from_tensor(np.zeros_like(x), list(block))


def _matmul_args(dtype=np.float16):
    a, b, c = np.ones((256, 192), dtype), np.ones((192, 256), dtype), np.zeros((256, 256), dtype)
    return (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
            TensorDescriptor.from_tensor(c, [128, 128]), 192)


def _ptx(kernel, *args, target="sm_90a"):
    return str(tile.dump(kernel, *args, stage="ptx", target=target))


# ----------------------------------------------------------------------------- PTX


def test_copy_kernel_ptx() -> None:
    ptx = _ptx(tma_copy_kernel, *_copy_args())
    assert ".param .align 64 .b8 in_desc_tensormap[128]" in ptx
    assert "cvta.param.u64" in ptx
    assert "mbarrier.init.shared::cta.b64" in ptx and "mbarrier.arrive.expect_tx.shared::cta.b64 _," in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and "mbarrier.inval.shared::cta.b64" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "ld.global" not in ptx and "st.global" not in ptx
    assemble_ok(ptx, "sm_90a")


def test_matmul_kernel_ptx() -> None:
    a, b, c, _ = _matmul_args()
    args = (a, b, c)
    gpu = str(tile.dump(tma_one_step_matmul_kernel, *args, stage="gpu", target="sm_90a"))
    assert gpu.count("gpu.tma_load") == 2 and "gpu.tma_store" in gpu
    assert gpu.count("gpu.local_store") == 1  # only the epilogue's: the copies fill wgmma's operand buffers
    ptx = _ptx(tma_one_step_matmul_kernel, *args)
    assert "wgmma.mma_async" in ptx
    # A's 128x64 block is one 128-byte-swizzle box; B's 64x128 block is two 64x64 boxes
    assert ptx.count("mbarrier::complete_tx::bytes") == 3
    assert "ld.global" not in ptx
    assemble_ok(ptx, "sm_90a")


def test_loads_in_loops_go_on_the_tma_ring() -> None:
    """A K loop's descriptor loads feeding wgmma are TMA copies on a ring of num_stages buffers
    and mbarriers (tests/test_tma_pipeline.py), no cp.async; the epilogue's store is TMA's."""
    gpu = str(tile.dump(tma_matmul_kernel, *_matmul_args(), stage="gpu", target="sm_90a"))
    assert gpu.count("gpu.tma_load_async") == 2 * 3 and "gpu.mbarrier_wait" in gpu and "gpu.tma_store" in gpu
    ptx = _ptx(tma_matmul_kernel, *_matmul_args())
    assert "cp.async.cg.shared.global" not in ptx and "wgmma.mma_async" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assemble_ok(ptx, "sm_90a")


def test_store_kernel_ptx() -> None:
    out = TensorDescriptor.from_tensor(np.zeros((100, 32), np.float32), [64, 32])
    ptx = _ptx(tma_store_kernel, out, 2.5)
    assert "fence.proxy.async.shared::cta" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "cp.async.bulk.commit_group" in ptx and "cp.async.bulk.wait_group.read 0" in ptx
    assemble_ok(ptx, "sm_90a")


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_other_targets_keep_masked_accesses(target: str) -> None:
    for kernel, args in ((tma_copy_kernel, _copy_args()), (tma_matmul_kernel, _matmul_args())):
        ptx = _ptx(kernel, *args, target=target)
        assert "cp.async.bulk" not in ptx and "tensormap" not in ptx and "mbarrier" not in ptx
        assert "ld.global" in ptx or "cp.async" in ptx
        assemble_ok(ptx, target)


@pytest.mark.parametrize("block,dtype", [((8, 16), np.float16), ((4, 8, 16), np.float32), ((32,), np.int8)])
def test_unswizzled_blocks_assemble(block, dtype) -> None:
    x = np.zeros((64,) * len(block), dtype)

    @tile.jit
    def copy_nd(src, dst):
        offs = [0] * len(src.block_shape)
        dst.store(offs, src.load(offs))

    ptx = _ptx(copy_nd, TensorDescriptor.from_tensor(x, list(block)), TensorDescriptor.from_tensor(x, list(block)))
    assert f"cp.async.bulk.tensor.{len(block)}d.shared::cluster.global" in ptx
    assemble_ok(ptx, "sm_90a")


def test_bool_blocks_stay_masked() -> None:
    x = np.zeros((64, 64), np.bool_)
    ptx = _ptx(tma_copy_kernel, TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(x, [16, 16]))
    assert "cp.async.bulk.tensor" not in ptx


def test_the_interpreter_is_unchanged() -> None:
    a, b = _copy_args((32, 64))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILE_INTERPRET", "1")
        tma_copy_kernel[(4, 1)](a, b)
    want = a.base.astype(np.float64) + 1
    np.testing.assert_allclose(b.base.astype(np.float64), want)


# ----------------------------------------------------------------------------- IR


def test_gpu_ir_round_trips_and_verifies() -> None:
    text = str(tile.dump(tma_matmul_kernel, *_matmul_args(), stage="gpu", target="sm_90a"))
    func = parse_op(text)
    verify(func)
    assert print_op(func) == text.strip() or print_op(func).strip() == text.strip()


def test_tma_load_needs_tma_layout() -> None:
    text = """tt.func {sym_name = "k", num_warps = 4} {
^bb(%t: tensormap, %c: i32):
  %b = gpu.local_alloc {bytes = 8192, offset = 0} : tensor<64x64xf16, #shared<vec = 1, per_phase = 1, max_phase = 1, order = [1, 0]>>
  gpu.tma_load %b, %t, %c, %c
  tt.return
}"""
    with pytest.raises(VerificationError, match="the buffer's layout must be TMA's"):
        verify(parse_op(text))


def test_tma_layout_choice() -> None:
    wide = tma_layout([64, 128], 2)
    assert (wide.swizzle, wide.box, wide.copies) == (128, (64, 64), 2)
    narrow = tma_layout([32, 16], 2)
    assert (narrow.swizzle, narrow.box, narrow.copies) == (32, (32, 16), 1)
    flat = tma_layout([8, 8], 2)
    assert (flat.swizzle, flat.box, flat.copies) == (0, (8, 8), 1)
    assert tma_layout([2, 4, 16], 4).swizzle == 0


# ------------------------------------------------------------------- tensor maps


def test_encode_arguments_reverse_dimensions() -> None:
    args = encode_arguments(0x1000, "f16", [100, 256], [256, 1], [64, 128], "zero")
    assert args["tensorDataType"] == "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
    assert args["tensorRank"] == 2 and args["globalAddress"] == 0x1000
    assert args["globalDim"] == [256, 100] and args["globalStrides"] == [512]
    assert args["boxDim"] == [64, 64] and args["elementStrides"] == [1, 1]
    assert args["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert args["oobFill"] == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"
    nan = encode_arguments(0, "f32", [7, 9, 16], [144, 16, 1], [2, 4, 8], "nan")
    assert nan["globalDim"] == [16, 9, 7] and nan["globalStrides"] == [64, 576] and nan["boxDim"] == [8, 4, 2]
    assert nan["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_NONE"
    assert nan["oobFill"] == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"
    assert encode_arguments(0, "f8e4nv", [64, 64], [64, 1], [64, 64], "zero")["tensorDataType"] == \
        "CU_TENSOR_MAP_DATA_TYPE_UINT8"


def test_pack_opaque_is_128_little_endian_bytes() -> None:
    words = list(range(1, 17))
    packed = pack_opaque(words)
    assert len(packed) == 128 and struct.unpack("<16Q", packed) == tuple(words)
    with pytest.raises(ValueError, match="16 words"):
        pack_opaque(words[:4])


def test_tensor_map_cache_encodes_once_per_descriptor() -> None:
    calls = []

    def fake_encode(arguments):
        calls.append(arguments)
        return pack_opaque([len(calls)] * 16)

    cache = TensorMapCache(fake_encode)
    x = np.zeros((64, 64), np.float16)
    first = cache(TensorDescriptor.from_tensor(x, [32, 64]))
    assert cache(TensorDescriptor.from_tensor(x, [32, 64])) == first and len(calls) == 1
    assert cache(TensorDescriptor.from_tensor(x, [16, 64])) != first and len(calls) == 2
    assert calls[0]["globalAddress"] == x.ctypes.data and calls[0]["boxDim"] == [64, 32]
    with pytest.raises(ValueError, match="128 bytes"):
        TensorMapCache(lambda a: b"short")(TensorDescriptor.from_tensor(x, [32, 64]))


# ------------------------------------------------------------------- validation


@pytest.mark.parametrize("args,message", [
    (((64, 64), (64, 1), (64, 64), 2, 8), "base 16-byte aligned"),
    (((64, 64), (60, 1), (64, 64), 2, 0), "multiples of 16 bytes: stride 0 is 60 elements"),
    (((1024, 64), (64, 1), (512, 64), 2, 0), "at most 256 elements per dimension: block_shape element 0 is 512"),
    (((64, 64), (64, 1), (64, 4), 2, 0), "at least 16 bytes: block_shape\\[-1\\] is 4 elements of 2 bytes"),
])
def test_tma_rules(args, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_tma_rules(*args)


def test_a_broken_rule_names_the_argument() -> None:
    x = np.zeros((1024, 64), np.float16)
    desc = TensorDescriptor.from_tensor(x, [512, 64])
    key = ("desc", ("ptr", "f16", 16, False), (("i32", 16),) * 2, (("i32", 16), ("c", int, 1)), (512, 64), "zero")
    entry = flattening_entry(lambda *a: None, (key,), TensorMapCache(lambda a: b"\0" * 128), ("big_desc",))
    with pytest.raises(ValueError, match="argument 'big_desc': TensorDescriptor: TMA boxes have at most 256"):
        entry((1,), ((x.ctypes.data, 1024, 64, 64, 1),), (desc,), None)
