"""tile.emulator on Hopper's forms (sm_90a): tile's wgmma matmuls (pointer and TMA variants) and
the attention forward of tutorial 07 match NumPy float64; wgmma descriptors, swizzles and
fragments against a NumPy model of the PTX ISA; mbarrier, elect.sync and setmaxnreg on
hand-written PTX; bad Hopper PTX gives clear errors."""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.emulator import EmulatorError, PtxSyntaxError, decode_module, emulate, run_ptx
from tile.emulator.ptx_isa_hopper import Descriptor, operand_offsets, swizzle
from tile.emulator.tensor_maps import decode_tensor_map, emulator_tensor_map
from tile.tools.tensor_descriptor import TensorDescriptor

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from load_kernels import load_kernels  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_kernels("emulator_hopper_kernels", tile.jit, tl)


@pytest.fixture(scope="module")
def bench_tma():
    return load_kernels("emulator_hopper_kernels_tma", tile.jit, tl, "kernels_tma.py")


def poison(shape, dtype) -> np.ndarray:
    a = np.empty(shape, dtype)
    a.view(np.uint8)[...] = 0xAB
    return a


def _operands(m, n, k, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)


# ------------------------------------------------------------------ kernels


# BLOCK_K 64 / 32 / 16 f16: A's rows span 128 / 64 / 32 bytes, so each swizzle mode is read
@pytest.mark.parametrize("m, n, k, block_m, block_n, block_k", [(128, 128, 64, 128, 128, 64),
                                                                (256, 128, 128, 128, 64, 64),
                                                                (128, 64, 64, 64, 64, 32), (64, 64, 48, 64, 64, 16)])
def test_matmul_wgmma_pointer_variant(bench, m, n, k, block_m, block_n, block_k):
    a, b = _operands(m, n, k, 0)
    c = poison((m, n), np.float16)
    grid = (tile.cdiv(m, block_m) * tile.cdiv(n, block_n),)
    compiled = emulate(bench.matmul_kernel, "sm_90a")[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=block_m,
                                                           BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8)
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)


@pytest.mark.parametrize("dtype, out_dtype, tol", [(np.float32, np.float32, 2e-2), (np.int8, np.int32, 0)])
def test_matmul_wgmma_tf32_and_int8(bench, dtype, out_dtype, tol):
    m = n = k = 64
    rng = np.random.default_rng(4)
    if dtype == np.int8:
        # the kernel stores acc.to(float16): sums below 2048 stay exact
        a, b = rng.integers(-5, 6, (m, k)).astype(dtype), rng.integers(-5, 6, (k, n)).astype(dtype)
    else:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    c = poison((m, n), out_dtype)
    compiled = emulate(bench.matmul_kernel, "sm_90a")[(1,)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=64,
                                                           BLOCK_N=64, BLOCK_K=64, GROUP_M=8)
    assert (".tf32.tf32" if dtype == np.float32 else ".s32.s8.s8") in compiled.asm["ptx"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    if tol:
        np.testing.assert_allclose(c, want, rtol=tol, atol=tol * np.sqrt(k))
    else:
        np.testing.assert_array_equal(c, want.astype(out_dtype))


@pytest.mark.parametrize("m, n, k, block, sms", [(128, 128, 64, (64, 64, 64), 2), (256, 128, 128, (128, 64, 64), 3),
                                                  (96, 80, 72, (64, 64, 64), 2)])  # ragged: out-of-bounds boxes
def test_matmul_tma_descriptors(bench_tma, m, n, k, block, sms):
    a, b = _operands(m, n, k, 1)
    c = poison((m, n), np.float16)
    bm, bn, bk = block
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    compiled = emulate(bench_tma.persistent_matmul_descriptors, "sm_90a")[(sms,)](*descs, m, n, k, NUM_SMS=sms)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor" in ptx and "mbarrier.try_wait" in ptx and "wgmma.mma_async" in ptx
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)


@pytest.fixture(scope="module")
def attention():
    spec = importlib.util.spec_from_file_location("emulator_attention", os.path.join(ROOT, "tutorials",
                                                                                     "07_fused_attention.py"))
    tut = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tut)
    return tut


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_of_tutorial_07(attention, causal):
    """S = Q K^T on wgmma from shared memory, then P V with P in registers (wgmma's A from registers)."""
    rng = np.random.default_rng(2)
    z, h, s, d = 1, 2, 128, 64
    q, k, v = ((rng.standard_normal((z, h, s, d)) * 0.5).astype(np.float16) for _ in range(3))
    o, lse = poison((z, h, s, d), np.float16), poison((z, h, s), np.float32)
    sm_scale = 0.5
    compiled = emulate(attention.attn_fwd, "sm_90a")[(s // 64, z * h)](q, k, v, o, lse, sm_scale, s, HEAD_DIM=d,
                                                                       STAGE=3 if causal else 1, BLOCK_M=64,
                                                                       BLOCK_N=64)
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "}, {%r" in ptx  # an A operand in registers
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    scores = q64 @ k64.transpose(0, 1, 3, 2) * sm_scale
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v64
    np.testing.assert_allclose(o.astype(np.float64), want, atol=1e-2, rtol=1e-2)
    lse_want = (scores.max(-1) + np.log(p.sum(-1))) / np.log(2)
    np.testing.assert_allclose(lse, lse_want, atol=1e-3, rtol=1e-4)


# ------------------------------------------------------------------ the NumPy model of descriptors


def _model_offset(r: int, c: int, eb: int, k_major: bool, span: int, lbo: int, sbo: int) -> int:
    """The PTX ISA's canonical layouts element by element, as cores of 8 rows x 16 bytes."""
    if k_major:
        byte = c * eb
        row_bytes = span or 16
        core = (byte // 16) * (16 if span else lbo)
        return (r % 8) * row_bytes + (r // 8) * sbo + core + byte % 16
    byte = r * eb
    if not span:
        return (byte // 16) * sbo + (c % 8) * 16 + (c // 8) * lbo + byte % 16
    atom_chunks = span // 16
    return ((byte // 16) % atom_chunks) * 16 + (byte // 16 // atom_chunks) * lbo + (c % 8) * span + \
        (c // 8) * sbo + byte % 16


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([0, 32, 64, 128]), st.booleans(), st.sampled_from([1, 2, 4]), st.integers(1, 64),
       st.integers(1, 64))
def test_operand_offsets_match_the_canonical_layouts(span, k_major, eb, lbo16, sbo16):
    rows, cols = 16, 32 // eb
    if not k_major and eb != 2:
        k_major = True  # MN-major operands are 16-bit only
    got = operand_offsets(rows, cols, eb, k_major, span, 16 * lbo16, 16 * sbo16)
    want = np.array([[_model_offset(r, c, eb, k_major, span, 16 * lbo16, 16 * sbo16) for c in range(cols)]
                     for r in range(rows)])
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0, 32, 64, 128]), st.integers(0, (1 << 14) - 1))
def test_swizzle_permutes_16_byte_chunks_inside_each_span(span, address):
    """The swizzle keeps bytes inside their 16-byte chunk and the chunk inside its span-row of
    the 8-row repeat, and XORs the chunk with the row (mod span/16)."""
    moved = int(swizzle(np.int64(address), span))
    assert moved % 16 == address % 16
    if span:
        chunks = span // 16
        assert moved >> 4 & ~(chunks - 1) == address >> 4 & ~(chunks - 1)
        assert (moved >> 4) % chunks == ((address >> 4) ^ (address >> 7)) % chunks
    else:
        assert moved == address


@given(st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1),
       st.sampled_from([0, 1, 2, 3]))
def test_descriptor_fields(start, lbo, sbo, mode):
    bits = start | lbo << 16 | sbo << 32 | mode << 62
    d = Descriptor.decode(np.array([bits], np.uint64))
    assert (int(d.start[0]), int(d.lbo[0]), int(d.sbo[0])) == (start << 4, lbo << 4, sbo << 4)
    assert int(d.swizzle[0]) == {0: 0, 1: 128, 2: 64, 3: 32}[mode]


def test_tensor_map_round_trip():
    a = np.zeros((96, 80), np.float16)
    raw = emulator_tensor_map(TensorDescriptor.from_tensor(a, [32, 64], padding="nan"))
    assert len(raw) == 128
    tmap = decode_tensor_map(raw)
    assert tmap.address == a.__array_interface__["data"][0]
    assert (tmap.sizes, tmap.strides, tmap.element_bytes) == ((80, 96), (2, 160), 2)
    assert tmap.box == (64, 32) and tmap.swizzle == 128 and tmap.fill_bits == 0x7E00
    with pytest.raises(ValueError, match="not a tensor map made for the emulator"):
        decode_tensor_map(bytes(128))


# ------------------------------------------------------------------ hand-written PTX

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def _kernel(body: str, threads: int = 128, params: str = ".param .u64 out") -> str:
    regs = ".reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n.reg .pred %p<8>;"
    return HEADER + f".visible .entry k({params})\n.maxntid {threads}, 1, 1\n" \
                    f"{{\n{regs}\n.shared .align 16 .b8 bars[64];\n{body}\n}}\n"


_STORE_R3 = ("ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n"
             "st.global.u32 [%rd3], %r3;\nret;")


def test_mbarrier_phases_and_parity():
    """64 threads arrive on a barrier initialised for 64: its phase 0 completes; try_wait on
    parity 0 is then true and on parity 1 false (phase 1 is pending); test_wait with the state
    the arrive returned is true."""
    body = ("mov.u32 %r2, bars;\nmov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n"
            "@%p1 mbarrier.init.shared::cta.b64 [%r2], 64;\nbar.sync 0;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;\n"
            "mbarrier.arrive.shared::cta.b64 %rd4, [%r2];\nbar.sync 0;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 1;\n"
            "mbarrier.test_wait.shared::cta.b64 %p5, [%r2], %rd4;\n"
            "selp.u32 %r3, 1, 0, %p2;\nselp.u32 %r4, 2, 0, %p3;\nselp.u32 %r5, 4, 0, %p4;\nselp.u32 %r6, 8, 0, %p5;\n"
            "or.b32 %r3, %r3, %r4;\nor.b32 %r3, %r3, %r5;\nor.b32 %r3, %r3, %r6;\n" + _STORE_R3)
    out = poison(64, np.uint32)
    run_ptx(_kernel(body, 64), (1,), [out])
    np.testing.assert_array_equal(out, np.full(64, 2 | 8, np.uint32))


def test_mbarrier_without_init_is_an_error():
    body = "mov.u32 %r2, bars;\nmbarrier.arrive.shared::cta.b64 %rd4, [%r2];\nret;"
    with pytest.raises(EmulatorError, match=r"no mbarrier.init at shared address 0[\s\S]*PTX line \d+ `mbarrier"):
        run_ptx(_kernel(body, 32), (1,), [np.zeros(1, np.uint32)])


def test_too_many_arrivals_is_an_error():
    body = ("mov.u32 %r2, bars;\nmov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n"
            "@%p1 mbarrier.init.shared::cta.b64 [%r2], 16;\nbar.sync 0;\n"
            "@%p1 mbarrier.arrive.shared::cta.b64 %rd4, [%r2], 20;\nret;")
    with pytest.raises(EmulatorError, match="20 arrivals on an mbarrier expecting 16 more in this phase"):
        run_ptx(_kernel(body, 32), (1,), [np.zeros(1, np.uint32)])


def test_elect_sync_picks_the_lowest_lane_of_the_mask():
    body = ("elect.sync %r3|%p1, 0xFFFFFFF0;\nselp.u32 %r4, 100, 0, %p1;\nadd.u32 %r3, %r3, %r4;\n" + _STORE_R3)
    out = poison(64, np.uint32)
    run_ptx(_kernel(body, 64), (1,), [out])
    want = np.full(64, 4, np.uint32)
    want[[4, 36]] = 104
    np.testing.assert_array_equal(out, want)


def test_setmaxnreg_is_checked():
    body = "setmaxnreg.inc.sync.aligned.u32 240;\nmov.u32 %r3, 7;\n" + _STORE_R3
    out = poison(128, np.uint32)
    run_ptx(_kernel(body, 128), (1,), [out])
    np.testing.assert_array_equal(out, 7)
    with pytest.raises(PtxSyntaxError, match="multiple of 8 in 24..256"):
        decode_module(_kernel("setmaxnreg.dec.sync.aligned.u32 20;\nret;"))
    with pytest.raises(EmulatorError, match="needs whole warp groups"):
        run_ptx(_kernel(body, 64), (1,), [poison(64, np.uint32)])


def test_bad_wgmma_forms_are_decode_errors():
    regs = "{" + ", ".join(f"%f{i}" for i in range(1, 33)) + "}"
    ptx = HEADER + (".visible .entry k()\n.maxntid 128, 1, 1\n{\n.reg .f32 %f<40>;\n.reg .b64 %rd<4>;\n"
                    ".reg .pred %p<2>;\n"
                    f"wgmma.mma_async.sync.aligned.m64n64k8.f32.f16.f16 {regs}, %rd1, %rd2, %p1, 1, 1, 0, 1;\n"
                    "ret;\n}\n")
    with pytest.raises(PtxSyntaxError, match="unsupported shape m64n64k8 for .f16"):
        decode_module(ptx)
    with pytest.raises(PtxSyntaxError, match="takes 4 immediates after scale-d"):
        decode_module(ptx.replace("m64n64k8", "m64n64k16").replace(", 0, 1;", ";"))


_PRODUCER_CONSUMER = """ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mov.u32 %r2, bars;
and.b32 %r6, %r1, 63;
shl.b32 %r6, %r6, 2;
add.u32 %r2, %r2, %r6;
setp.lt.u32 %p1, %r1, 64;
@!%p1 bra $L_consumer;
mul.lo.u32 %r3, %r1, 3;
st.shared.u32 [%r2], %r3;
bar.arrive 1, 128;
bra.uni $L_done;
$L_consumer:
bar.sync 1, {count};
ld.shared.u32 %r3, [%r2];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
$L_done:
ret;"""


def _producer_consumer(count: str) -> str:
    regs = ".reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n.reg .pred %p<8>;"
    return HEADER + (".visible .entry k(.param .u64 out)\n.maxntid 128, 1, 1\n{\n" + regs +
                     "\n.shared .align 16 .b8 bars[256];\n" + _PRODUCER_CONSUMER.format(count=count) + "\n}\n")


def test_named_barrier_between_producer_and_consumer_warps():
    """Warps 0-1 write shared memory and bar.arrive 1, 128; warps 2-3 bar.sync 1, 128 and read it."""
    out = poison(128, np.uint32)
    run_ptx(_producer_consumer("128"), (3,), [out])
    np.testing.assert_array_equal(out[64:], 3 * np.arange(64))


def test_named_barrier_errors():
    with pytest.raises(EmulatorError, match=r"bar.sync: barrier 1 waits for 128 threads but only 64 arrived, and every "
                                            r"other thread has exited or waits: a deadlock on a GPU \(thread 64 of CTA "
                                            r"\(0, 0, 0\)\)\n  at PTX line \d+ `bar.sync 1, 128`"):
        run_ptx(_producer_consumer("128").replace("bar.arrive 1, 128;", ""), (1,), [poison(128, np.uint32)])
    with pytest.raises(EmulatorError, match=r"bar.arrive: 64 threads arrived at barrier 1, which waits for 32"):
        run_ptx(_producer_consumer("32").replace("bar.arrive 1, 128", "bar.arrive 1, 32"), (1,),
                [poison(128, np.uint32)])
    with pytest.raises(EmulatorError, match=r"bar.sync: barrier 1 used with 96 threads while 64 threads have arrived "
                                            r"for 128"):
        run_ptx(_producer_consumer("96"), (1,), [poison(128, np.uint32)])
    for count in ("100", "192"):
        with pytest.raises(EmulatorError, match="bar.sync: barrier 1 with \\d+ threads: barriers are 0..15 and the "
                                                "count a positive multiple of 32 up to the CTA's 128 threads"):
            run_ptx(_producer_consumer(count), (1,), [poison(128, np.uint32)])
    with pytest.raises(PtxSyntaxError, match="takes a barrier number and a thread count"):
        decode_module(_producer_consumer("128").replace("bar.arrive 1, 128", "bar.arrive 1"))


# ------------------------------------------------------------------ a wgmma against the NumPy model

def _place(image: np.ndarray, matrix: np.ndarray, start: int, k_major: bool, span: int, lbo: int, sbo: int) -> None:
    """Write `matrix` (rows = M or N, cols = K; f16) into the shared-memory `image` where the PTX
    ISA's canonical layout and swizzle put each element."""
    bits = matrix.astype(np.float16).view(np.uint16)
    for r in range(matrix.shape[0]):
        for c in range(matrix.shape[1]):
            address = start + _model_offset(r, c, 2, k_major, span, lbo, sbo)
            if span:
                address ^= ((address >> 7) & (span // 16 - 1)) << 4
            image.view(np.uint16)[address // 2] = bits[r, c]


def _dense_offsets(rows: int, k_major: bool, span: int) -> tuple[int, int, int]:
    """(LBO, SBO, bytes) of an f16 operand tile of `rows` x 16 packed densely in a layout."""
    if k_major:
        return (128, 256, 256 * (rows // 8)) if not span else (16, 8 * span, 8 * span * (rows // 8))
    if not span:  # cores of 8 K x 16 bytes: the MN chunks next to each other, then the second 8 of K
        return 128 * (rows // 8), 128, 256 * (rows // 8)
    atoms = max(1, 2 * rows // span)
    return 16 * span, 8 * span, 16 * span * atoms


def _wgmma_ptx(n: int, desc_a: int, desc_b: int, trans_a: int, trans_b: int, image_bytes: int,
               a_in_registers: bool, scale_a: int) -> str:
    d = ", ".join(f"%f{i}" for i in range(n // 2))
    stores = "\n".join(f"st.global.f32 [%rd4+{4 * i}], %f{i};" for i in range(n // 2))
    a = "{%r4, %r5, %r6, %r7}" if a_in_registers else "%rd5"
    transposes = f"{trans_b}" if a_in_registers else f"{trans_a}, {trans_b}"
    return HEADER + f""".visible .entry k(.param .u64 image, .param .u64 afrag, .param .u64 out)
.maxntid 128, 1, 1
{{
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.reg .f32 %f<{n // 2}>;
.shared .align 1024 .b8 img[{image_bytes}];
ld.param.u64 %rd1, [image];
ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x;
shl.b32 %r2, %r1, 2;
$L_copy:
cvt.u64.u32 %rd3, %r2;
add.s64 %rd3, %rd1, %rd3;
ld.global.u32 %r3, [%rd3];
st.shared.u32 [%r2], %r3;
add.u32 %r2, %r2, 512;
setp.lt.u32 %p1, %r2, {image_bytes};
@%p1 bra $L_copy;
fence.proxy.async.shared::cta;
bar.sync 0;
setp.ne.u32 %p2, %r1, %r1;
mov.b64 %rd5, {desc_a};
mov.b64 %rd6, {desc_b};
ld.param.u64 %rd7, [afrag];
mul.wide.u32 %rd3, %r1, 16;
add.s64 %rd7, %rd7, %rd3;
ld.global.v4.b32 {{%r4, %r5, %r6, %r7}}, [%rd7];
wgmma.fence.sync.aligned;
wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{d}}}, {a}, %rd6, %p2, {scale_a}, 1, {transposes};
wgmma.commit_group.sync.aligned;
wgmma.wait_group.sync.aligned 0;
mul.wide.u32 %rd4, %r1, {2 * n};
add.s64 %rd4, %rd2, %rd4;
{stores}
ret;
}}
"""


def _descriptor(start: int, lbo: int, sbo: int, span: int) -> int:
    return start >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | {0: 0, 128: 1, 64: 2, 32: 3}[span] << 62


def _a_fragment_words(a: np.ndarray) -> np.ndarray:
    """[128, 4] packed f16 pairs: thread p (warp w, lane 4g + t) holds in register q the elements
    (16w + g + 8 (q & 1), 2t + e + 8 (q >> 1)), e = 0 in the low half (the PTX ISA's A fragment)."""
    bits = a.astype(np.float16).view(np.uint16).astype(np.uint32)
    words = np.zeros((128, 4), np.uint32)
    for p in range(128):
        w, g, t = p >> 5, (p & 31) >> 2, p & 3
        for q in range(4):
            row, col = 16 * w + g + 8 * (q & 1), 2 * t + 8 * (q >> 1)
            words[p, q] = bits[row, col] | bits[row, col + 1] << 16
    return words


@settings(max_examples=16, deadline=None)
@given(st.sampled_from([8, 16, 64, 128]), st.sampled_from([0, 32, 64, 128]), st.sampled_from([0, 32, 64, 128]),
       st.booleans(), st.booleans(), st.booleans(), st.sampled_from([1, -1]), st.integers(0, 2 ** 31))
def test_wgmma_matches_the_model(n, span_a, span_b, a_k_major, b_k_major, a_in_registers, scale_a, seed):
    """A (64 x 16) and B (16 x n) placed in shared memory by the NumPy model of the canonical
    layouts and swizzles (or A in registers as its fragment); one wgmma (imm-scale-a 1 or -1,
    negating A); its D fragment (row
    16w + g + 8 (i >> 1 & 1), column 8 (i >> 2) + 2t + (i & 1) of register i) gives A @ B."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, n)).astype(np.float16)
    lbo_a, sbo_a, bytes_a = _dense_offsets(64, a_k_major, span_a)
    lbo_b, sbo_b, bytes_b = _dense_offsets(n, b_k_major, span_b)
    start_b = -(-bytes_a // 1024) * 1024
    size = -(-(start_b + bytes_b) // 1024) * 1024
    image = np.zeros(size, np.uint8)
    _place(image, a, 0, a_k_major, span_a, lbo_a, sbo_a)
    _place(image, b.T, start_b, b_k_major, span_b, lbo_b, sbo_b)
    out = poison((128, n // 2), np.float32)
    ptx = _wgmma_ptx(n, _descriptor(0, lbo_a, sbo_a, span_a), _descriptor(start_b, lbo_b, sbo_b, span_b),
                     int(not a_k_major), int(not b_k_major), size, a_in_registers, scale_a)
    run_ptx(ptx, (1,), [image, _a_fragment_words(a), out])
    want = scale_a * a.astype(np.float64) @ b.astype(np.float64)
    p = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    rows = 16 * (p >> 5) + ((p & 31) >> 2) + 8 * ((i >> 1) & 1)
    cols = 8 * (i >> 2) + 2 * (p & 3) + (i & 1)
    np.testing.assert_allclose(out, want[rows, cols], rtol=1e-6, atol=1e-6)


def test_tile_emulate_env_with_tma_descriptors(bench_tma, monkeypatch):
    """TILE_EMULATE=1 with TILE_EMULATE_TARGET=sm_90a: an ordinary launch with host descriptors
    runs the TMA kernel, the descriptors passed as the emulator's tensor maps."""
    from tile.compiler import INTERPRETER, current_target

    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_EMULATE", "1")
    monkeypatch.setenv("TILE_EMULATE_TARGET", "sm_90a")
    if current_target() != INTERPRETER:
        pytest.skip("a GPU is present: launches run on it")
    a, b = _operands(64, 128, 64, 5)
    c = poison((64, 128), np.float16)
    descs = (TensorDescriptor.from_tensor(a, [64, 64]), TensorDescriptor.from_tensor(b, [64, 64]),
             TensorDescriptor.from_tensor(c, [64, 64]))
    bench_tma.persistent_matmul_descriptors[(2,)](*descs, 64, 128, 64, NUM_SMS=2)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    compiled = [c for c in bench_tma.persistent_matmul_descriptors.cache.values() if "ptx" in c.stages]
    assert compiled and all("cp.async.bulk.tensor" in c.stages["ptx"] for c in compiled)


@pytest.mark.parametrize("name", ["bf16", "f8e4nv", "f8e5"])
def test_matmul_wgmma_bf16_and_fp8(bench, name):
    from tile.ir.types import DTYPES
    from tile.runtime.interp_dtypes import from_bits, to_bits

    m = n = k = 64
    rng = np.random.default_rng(6)
    bits = [to_bits(rng.standard_normal(shape).astype(np.float32), DTYPES[name]) for shape in ((m, k), (k, n))]
    exact = [from_bits(x, DTYPES[name]).astype(np.float64) for x in bits]
    c = poison((m, n), np.float16)
    a, b = (tile.to_device(x, name) for x in bits)
    compiled = emulate(bench.matmul_kernel, "sm_90a")[(1,)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=64,
                                                           BLOCK_N=64, BLOCK_K=64, GROUP_M=8)
    wgmma_type = {"bf16": ".f32.bf16.bf16", "f8e4nv": ".f32.e4m3.e4m3", "f8e5": ".f32.e5m2.e5m2"}[name]
    assert wgmma_type in compiled.asm["ptx"]
    np.testing.assert_allclose(c.astype(np.float64), exact[0] @ exact[1], rtol=1e-2, atol=2e-2)


def test_bad_wgmma_operands_are_runtime_errors():
    """A descriptor with a base offset, a descriptor that differs between the threads of a warp
    group, and a wgmma on a CTA of 64 threads."""
    image = np.zeros(9216, np.uint8)
    args = [image, np.zeros((128, 4), np.uint32), poison((128, 4), np.float32)]
    desc_a, desc_b = _descriptor(0, 16, 1024, 128), _descriptor(8192, 16, 1024, 128)
    good = _wgmma_ptx(8, desc_a, desc_b, 0, 0, 9216, False, 1)
    run_ptx(good, (1,), args)
    with pytest.raises(EmulatorError, match=r"wgmma.mma_async: shared address \d+ \+ 2 bytes is past the 9216 bytes of "
                                            r"shared memory of a CTA \(thread 0 of CTA \(0, 0, 0\)\)"):
        run_ptx(good.replace(f"mov.b64 %rd6, {desc_b};", f"mov.b64 %rd6, {_descriptor(8704, 16, 1024, 128)};"),
                (1,), args)
    with pytest.raises(EmulatorError, match=r"wgmma.mma_async: matrix descriptors with a base offset are not supported"
                                            r"[\s\S]*PTX line \d+ `wgmma.mma_async"):
        run_ptx(good.replace(f"mov.b64 %rd5, {desc_a};", f"mov.b64 %rd5, {desc_a | 1 << 49};"), (1,), args)
    with pytest.raises(EmulatorError, match="wgmma.mma_async: the matrix descriptor differs between the threads of a "
                                            "warp group"):
        run_ptx(good.replace(f"mov.b64 %rd5, {desc_a};", "cvt.u64.u32 %rd5, %r1;"), (1,), args)
    with pytest.raises(EmulatorError, match=r"wgmma.fence needs whole warp groups \(128 threads\), but 64 threads "
                                            r"run it"):
        run_ptx(good.replace(".maxntid 128, 1, 1", ".maxntid 64, 1, 1"), (1,), args)


@tile.jit
def in_kernel_descriptor_copy(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN], padding_option="nan")
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    dst.store([off_m, off_n], src.load([off_m, off_n]) * 2)


@pytest.mark.parametrize("ptx_version", ["8.5", "8.7"])
def test_tensor_maps_a_kernel_writes(monkeypatch, ptx_version):
    """tl.make_tensor_descriptor on sm_90a: the kernel builds its tensor maps in shared memory
    with tensormap.replace and copies them to global scratch (global strides in units of 16 bytes up to PTX ISA 8.5, in bytes
    after) and its TMA loads and stores use them; ragged edges read as NaN and are not stored."""
    from tile import compiler

    monkeypatch.setattr(compiler, "_ptx_version", lambda target: ptx_version)
    m, n = 40, 72
    x = np.random.default_rng(5).standard_normal((m, n)).astype(np.float16)
    out = poison((m, n), np.float16)
    compiled = emulate(in_kernel_descriptor_copy, "sm_90a")[(2, 3)](x, out, m, n, BM=32, BN=32)
    ptx = compiled.asm["ptx"]
    assert f".version {ptx_version}" in ptx and "tensormap.replace.tile.global_stride.shared::cta" in ptx
    assert ("shr.s64" in ptx) == (ptx_version == "8.5")
    np.testing.assert_array_equal(out, x * 2)


def test_tensormap_replace_of_an_unmodelled_value_is_an_error():
    ptx = HEADER + """.visible .entry k(.param .u64 p)
.maxntid 32, 1, 1
{
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [p];
tensormap.replace.tile.interleave_layout.global.b1024.b32 [%rd1], 1;
ret;
}
"""
    with pytest.raises(EmulatorError, match=r"tensormap.replace: interleave_layout 1 is not modelled \(only 0\)"):
        run_ptx(ptx, (1,), [np.zeros(128, np.uint8)])


def test_tensormap_copy_by_part_of_a_warp_is_an_error():
    """tensormap.cp_fenceproxy is .sync.aligned: one lane alone may not run it."""
    ptx = HEADER + """.visible .entry k(.param .u64 p)
.maxntid 32, 1, 1
{
.reg .b64 %rd<3>;
.reg .b32 %r<3>;
.reg .pred %p<2>;
.shared .align 128 .b8 staging[128];
ld.param.u64 %rd1, [p];
mov.u32 %r1, staging;
cvt.u64.u32 %rd2, %r1;
mov.u32 %r2, %tid.x;
setp.eq.u32 %p1, %r2, 0;
@%p1 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%rd2], 128;
ret;
}
"""
    with pytest.raises(EmulatorError, match=r"needs every lane of the warp"):
        run_ptx(ptx, (1,), [np.zeros(128, np.uint8)])
