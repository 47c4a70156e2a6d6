"""tl.inline_asm_elementwise and the tl.extra.cuda helpers built on it.

CPU: the IR the frontend builds, the errors of bad asm (constraint counts, register widths,
$N beyond the constraints, non-string asm, the interpreter), purity (CSE/DCE keep an impure
asm), the PTX text (the asm in its own scope, registers substituted, packed registers) and
ptxas for sm_80, sm_90 and sm_90a. GPU (marked): Triton's inline asm tests (shf, packed int8,
pointers, several outputs, packed several outputs), globaltimer/smid/gdc, and
tl.extra.cuda.convert_custom_float8 against `.to(tl.float8e4b15)` over every input bit pattern.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from ptxas_util import assemble_ok, needs_ptxas
from test_fp8_variants import VALUES, f16_toward_zero_bits, ref_encode_e4b15_from_f16
from tile.ir import VerificationError, parse_op, print_op, verify
from tile.ir.inline_asm import check, parse_constraints, substitute
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes
from tile.runtime.interpreter import run_kernel

ARCHS = ("sm_80", "sm_90", "sm_90a")
RNG = np.random.default_rng(7)


# ------------------------------------------------------------------------------- kernels


@tile.jit
def shf_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tile.jit
def packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F;\nshl.b32 $0, $0, 3;", "=r,r", [x], dtype=tl.int8,
                                  is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tile.jit
def pointer_kernel(X, Y, BLOCK: tl.constexpr):
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1];\nshl.b32 $0, $0, 3;\nst.global.b8 [$2], $0;", "=r,l,l",
                              [X + tl.arange(0, BLOCK), Y + tl.arange(0, BLOCK)], dtype=tl.int8, is_pure=False,
                              pack=1)


@tile.jit
def two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.inline_asm_elementwise("sub.u32 $0, $2, $3;\nsub.u32 $1, $3, $2;", "=r,=r,r,r", [a, b],
                                     dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tile.jit
def packed_two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    # four uint8 of `a` in $8: widen them ($0..$3) and take the max with four floats of `b` ($4..$7)
    c, d = tl.inline_asm_elementwise(
        """{
        .reg .b8 tmp<4>;
        mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
        cvt.u32.u8 $0, tmp0;
        cvt.u32.u8 $1, tmp1;
        cvt.u32.u8 $2, tmp2;
        cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;""",
        "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", [a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tile.jit
def half_pairs_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $1;", "=r,r", [x], dtype=tl.float16, is_pure=True, pack=2)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tile.jit
def narrow_registers_kernel(X, H, Y, G, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    h = tl.load(H + tl.arange(0, BLOCK))
    # two int8 in a 16-bit register, and one half per 16-bit register
    y = tl.inline_asm_elementwise("xor.b16 $0, $1, 0x0101;", "=h,h", [x], dtype=tl.int8, is_pure=True, pack=2)
    g = tl.inline_asm_elementwise("neg.f16 $0, $1;", "=h,h", [h], dtype=tl.float16, is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), y)
    tl.store(G + tl.arange(0, BLOCK), g)


@tile.jit
def scalar_asm_kernel(out, v):
    r = tl.inline_asm_elementwise("add.s32 $0, $1, 7;", "=r,r", [v], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out, r)


@tile.jit
def cuda_helpers_kernel(out):
    start = tl.extra.cuda.globaltimer()
    tl.extra.cuda.gdc_wait()
    tl.store(out + 1, tl.extra.cuda.smid().to(tl.int64))
    tl.store(out + 2, tl.extra.cuda.num_threads() + tl.extra.cuda.num_warps())
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(out, tl.extra.cuda.globaltimer() - start)


@tile.jit
def custom_float8_kernel(x_ptr, native_ptr, asm70_ptr, asm80_ptr, up_native_ptr, up_asm_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(native_ptr + offs, x.to(tl.float8e4b15))
    tl.store(asm70_ptr + offs, tl.extra.cuda.convert_custom_float8_sm70(x, tl.float8e4b15))
    y = tl.extra.cuda.convert_custom_float8_sm80(x, tl.float8e4b15)
    tl.store(asm80_ptr + offs, y)
    tl.store(up_native_ptr + offs, y.to(tl.float32))
    tl.store(up_asm_ptr + offs, tl.extra.cuda.convert_custom_float8_sm80(y, tl.float32))


def ptx_of(kernel, *args, target: str = "sm_90a", **meta) -> str:
    return str(tile.dump(kernel, *args, stage="ptx", target=target, **meta))


def tile_ir(kernel, *args, **meta) -> str:
    return str(tile.dump(kernel, *args, stage="tile", target="sm_90a", **meta))


U32, I32 = np.zeros(128, np.uint32), np.zeros(128, np.int32)


# ------------------------------------------------------------------- IR and constraints


def test_frontend_builds_the_op():
    text = tile_ir(shf_kernel, U32, U32, U32, 17, BLOCK=128)
    assert re.search(r'tt.elementwise_inline_asm %x, %y, %s \{asm = "shf.l.wrap.b32 \$0, \$1, \$2, \$3;", '
                     r'constraints = "=r,r, r, r", packed_element = 1, pure = true\} : tensor<128xi32>', text), text


def test_scalars_broadcast_to_the_blocks():
    @tile.jit
    def k(X, Z, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        z = tl.inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r,r", [x, 3], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(Z + tl.arange(0, BLOCK), z)

    text = tile_ir(k, I32, I32, BLOCK=128)
    assert "tt.splat" in text and "tt.elementwise_inline_asm %x, %" in text


def test_registers_per_element():
    i8, f16, f32, i64 = (tl.int8.ir, tl.float16.ir, tl.float32.ir, tl.int64.ir)
    check("", "=r,r", [i8], [i8], 4)  # four int8 share one .b32
    check("", "=r,=r,r", [i8], [f16], 4)  # one word of four int8 in, two words of two f16 out
    check("", "=r,=r,=r,=r,r,r", [f16], [f32], 4)
    check("", "=l,l,r", [i64, i8], [i64], 1)
    assert parse_constraints("=&r, =r,r,~{memory}") == (["r", "r"], ["r"])
    assert substitute("mov.b32 $0, $10; // $$ ${1}", [f"%r{i}" for i in range(11)]) == \
        "mov.b32 %r0, %r10; // $ %r1"


@pytest.mark.parametrize("constraints,message", [
    ("=r,r,r", "name 2 input register"),
    ("=r,=r,r", "name 2 output register"),
    ("=h,r", "output register 0 ('h', 16 bits) cannot hold 32 bits"),
    ("=r,q", "unsupported inline asm constraint 'q'"),
    ("r,=r", "outputs ('=...') must come before inputs"),
])
def test_bad_constraints_are_compile_errors(constraints, message):
    @tile.jit
    def k(X, BLOCK: tl.constexpr, C: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", C, [x], dtype=tl.int32, is_pure=True, pack=1)  # asm line
        tl.store(X + tl.arange(0, BLOCK), y)

    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        tile_ir(k, I32, BLOCK=128, C=constraints)
    assert e.value.line == k.fn.__code__.co_firstlineno + 3
    assert "asm line" in str(e.value)


def test_operand_numbers_beyond_the_constraints():
    @tile.jit
    def k(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        y = tl.inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(X + tl.arange(0, BLOCK), y)

    with pytest.raises(tile.CompilationError, match=r"refers to \$2, but the constraints name only 2 register"):
        tile_ir(k, I32, BLOCK=128)


@pytest.mark.parametrize("asm,pack,message", [
    (42, 1, "asm must be a string of assembly, got 42"),
    ("mov.b32 $0, $1;", 3, "pack must be a power of two >= 1, got 3"),
])
def test_bad_arguments(asm, pack, message):
    @tile.jit
    def k(X, ASM: tl.constexpr, PACK: tl.constexpr):
        x = tl.load(X + tl.arange(0, 128))
        y = tl.inline_asm_elementwise(ASM, "=r,r", [x], dtype=tl.int32, is_pure=True, pack=PACK)
        tl.store(X + tl.arange(0, 128), y)

    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        tile_ir(k, I32, ASM=asm, PACK=pack)
    assert e.value.line == k.fn.__code__.co_firstlineno + 3


def test_interpreter_refuses_inline_asm(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.arange(128, dtype=np.uint32)
    with pytest.raises(tile.CompilationError, match="cannot run on the interpreter") as e:
        shf_kernel[(1,)](x, x, x.copy(), 3, BLOCK=128)
    assert e.value.line == shf_kernel.fn.__code__.co_firstlineno + 5
    assert isinstance(e.value, tile.TritonError)


def test_int1_values_are_refused():
    @tile.jit
    def k(X):
        m = tl.arange(0, 128) < 5
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [m], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(X + tl.arange(0, 128), y)

    with pytest.raises(tile.CompilationError, match="int1 values cannot go through asm registers"):
        tile_ir(k, I32)


def test_verifier_checks_the_constraints():
    text = """tt.func {arg_names = ["x"], sym_name = "k"} {
^bb(%x: tensor<8xi32>):
  %y = tt.elementwise_inline_asm %x {asm = "mov.b32 $0, $1;", constraints = "=r,r,r", packed_element = 1, pure = true} : tensor<8xi32>
  tt.return
}"""
    with pytest.raises(VerificationError, match="name 2 input register"):
        verify(parse_op(text))


def test_impure_asm_survives_cse_and_dce():
    text = """tt.func {arg_names = ["x"], sym_name = "k"} {
^bb(%x: tensor<8xi32>):
  %a = tt.elementwise_inline_asm %x {asm = "mov.b32 $0, $1;", constraints = "=r,r", packed_element = 1, pure = PURE} : tensor<8xi32>
  %b = tt.elementwise_inline_asm %x {asm = "mov.b32 $0, $1;", constraints = "=r,r", packed_element = 1, pure = PURE} : tensor<8xi32>
  tt.return
}"""
    for pure, left in (("true", 0), ("false", 2)):
        func = parse_op(text.replace("PURE", pure))
        PassManager(tile_passes()).run(func)
        assert print_op(func).count("tt.elementwise_inline_asm") == left


# -------------------------------------------------------------------------- PTX text


def test_ptx_substitutes_registers_in_a_scope_of_its_own():
    ptx = ptx_of(shf_kernel, U32, U32, U32, 17, BLOCK=128)
    blocks = re.findall(r"// begin inline asm\n\t\{\n\t(.*?)\n\t\}\n\t// end inline asm", ptx, re.S)
    assert blocks and all(re.fullmatch(r"shf\.l\.wrap\.b32 %r\d+, %r\d+, %r\d+, %r\d+;", b) for b in blocks)


def test_ptx_packs_four_int8_into_one_register():
    ptx = ptx_of(packed_kernel, np.zeros(512, np.uint8), np.zeros(512, np.uint8), BLOCK=512)
    asm = re.findall(r"\{\n\tand\.b32 (%r\d+), (%r\d+), 0x1F1F1F1F;\n\tshl\.b32 (%r\d+), (%r\d+), 3;\n\t\}", ptx)
    assert asm and all(a[0] == a[2] == a[3] for a in asm)
    assert "prmt.b32" in ptx  # the four bytes assembled into the input word


def test_ptx_of_an_impure_asm_without_used_results():
    ptx = ptx_of(pointer_kernel, np.zeros(512, np.uint8), np.zeros(512, np.uint8), BLOCK=512)
    assert re.search(r"ld\.global\.b8 %r\d+, \[%rd\d+\];", ptx)


def test_scalar_asm():
    ptx = ptx_of(scalar_asm_kernel, I32, 5)
    assert re.search(r"add\.s32 %r\d+, %r\d+, 7;", ptx)


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_every_kernel_assembles(arch):
    u8 = np.zeros(512, np.uint8)
    f32, i32, i8 = np.zeros(512, np.float32), np.zeros(512, np.int32), np.zeros(512, np.int8)
    cases = [(shf_kernel, (U32, U32, U32, 17), {"BLOCK": 128}), (packed_kernel, (u8, u8), {"BLOCK": 512}),
             (pointer_kernel, (u8, u8), {"BLOCK": 512}),
             (two_outputs_kernel, (U32, U32, U32, U32), {"BLOCK": 128}),
             (packed_two_outputs_kernel, (u8, f32, i32, f32), {"BLOCK": 512}),
             (half_pairs_kernel, (np.zeros(512, np.float16),) * 2, {"BLOCK": 512}),
             (scalar_asm_kernel, (I32, 5), {}),
             (narrow_registers_kernel, (i8, np.zeros(512, np.float16), i8, np.zeros(512, np.float16)),
              {"BLOCK": 512}),
             (custom_float8_kernel, (f32, tile.reinterpret(u8, tl.float8e4b15), *[tile.reinterpret(u8, tl.float8e4b15)]
                                     * 2, f32, f32), {"BLOCK": 512})]
    if arch != "sm_80":
        cases.append((cuda_helpers_kernel, (np.zeros(4, np.int64),), {}))
    for kernel, args, meta in cases:
        for warps in (1, 4):
            assemble_ok(str(tile.dump(kernel, *args, stage="ptx", target=arch, num_warps=warps, **meta)), arch)


def test_gdc_needs_sm90():
    with pytest.raises(tile.CompilationError, match="griddepcontrol, which needs sm_90 or newer") as e:
        ptx_of(cuda_helpers_kernel, np.zeros(4, np.int64), target="sm_80")
    assert e.value.line == cuda_helpers_kernel.fn.__code__.co_firstlineno + 3


def test_cuda_helpers_ptx():
    ptx = ptx_of(cuda_helpers_kernel, np.zeros(4, np.int64), num_warps=2)
    assert ptx.count("%globaltimer") == 2 and "%smid" in ptx
    assert "griddepcontrol.wait;" in ptx and "griddepcontrol.launch_dependents;" in ptx
    assert "st.global.u64 [%rd" in ptx or "st.global.b64" in ptx
    text = str(tile.dump(cuda_helpers_kernel, np.zeros(4, np.int64), stage="tile", target="sm_90a", num_warps=2))
    assert "arith.constant {value = 66} : i64" in text  # num_threads() + num_warps() = 64 + 2


@tile.jit
def gdc_kernel(out):
    tl.extra.cuda.gdc_wait()  # nothing to wait for on the interpreter: launches run one after another
    tl.store(out, tl.extra.cuda.num_warps())
    tl.extra.cuda.gdc_launch_dependents()


def test_cuda_helpers_on_the_interpreter(monkeypatch):
    # run without a launch: the test session also assembles every launched kernel for sm_80,
    # where gdc_* are compile errors
    out = np.full(1, -1, np.int32)
    spec, args = gdc_kernel.specialize((out,))
    run_kernel(gdc_kernel.build_ir(spec, "interpreter", {"num_warps": 8}), (1, 1, 1), args, "gdc_kernel")
    assert out[0] == 8
    monkeypatch.setenv("TILE_INTERPRET", "1")
    with pytest.raises(tile.CompilationError, match="cannot run on the interpreter"):
        cuda_helpers_kernel[(1,)](np.zeros(4, np.int64))


def test_custom_float8_on_the_interpreter_is_the_cast(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = RNG.standard_normal(512).astype(np.float32) * np.exp2(RNG.integers(-18, 2, 512)).astype(np.float32)
    outs = [np.full(512, 0xAB, np.uint8) for _ in range(3)] + [np.full(512, np.nan, np.float32) for _ in range(2)]
    args = [tile.reinterpret(o, tl.float8e4b15) for o in outs[:3]] + outs[3:]
    custom_float8_kernel[(1,)](x, *args, BLOCK=512)
    want = np.array([ref_encode_e4b15_from_f16(f16_toward_zero_bits(float(v))) for v in x], np.uint8)
    for o in outs[:3]:
        np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(outs[3], VALUES["f8e4b15"][want].astype(np.float32))
    np.testing.assert_array_equal(outs[4], outs[3])


# ------------------------------------------------------------------------------- GPU


def _gpu(a: np.ndarray):
    return tile.to_device(np.ascontiguousarray(a))


@pytest.mark.gpu
def test_gpu_shf():
    x, y = RNG.integers(0, 2**32, 128, dtype=np.uint32), RNG.integers(0, 2**32, 128, dtype=np.uint32)
    z = _gpu(np.full(128, 0xDEADBEEF, np.uint32))
    shf_kernel[(1,)](_gpu(x), _gpu(y), z, 17, BLOCK=128)
    np.testing.assert_array_equal(z.numpy(), (y << 17) | (x >> 15))


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_packed_int8(num_warps):
    x = RNG.integers(0, 256, 512, dtype=np.uint8)
    y = _gpu(np.full(512, 0xAB, np.uint8))
    packed_kernel[(1,)](_gpu(x), y, BLOCK=512, num_warps=num_warps)
    np.testing.assert_array_equal(y.numpy(), (x << 3).astype(np.uint8))


@pytest.mark.gpu
def test_gpu_pointers():
    x = RNG.integers(0, 256, 512, dtype=np.uint8)
    y = _gpu(np.full(512, 0xAB, np.uint8))
    pointer_kernel[(1,)](_gpu(x), y, BLOCK=512)
    np.testing.assert_array_equal(y.numpy(), (x << 3).astype(np.uint8))


@pytest.mark.gpu
def test_gpu_two_outputs():
    a, b = RNG.integers(0, 2**32, 128, dtype=np.uint32), RNG.integers(0, 2**32, 128, dtype=np.uint32)
    c, d = _gpu(np.full(128, 7, np.uint32)), _gpu(np.full(128, 7, np.uint32))
    two_outputs_kernel[(1,)](_gpu(a), _gpu(b), c, d, BLOCK=128)
    np.testing.assert_array_equal(c.numpy(), a - b)
    np.testing.assert_array_equal(d.numpy(), b - a)


@pytest.mark.gpu
def test_gpu_packed_two_outputs():
    a = RNG.integers(0, 256, 512, dtype=np.uint8)
    b = (RNG.standard_normal(512) * 200).astype(np.float32)
    c, d = _gpu(np.full(512, -7, np.int32)), _gpu(np.full(512, np.nan, np.float32))
    packed_two_outputs_kernel[(1,)](_gpu(a), _gpu(b), c, d, BLOCK=512)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32))
    np.testing.assert_array_equal(d.numpy(), np.maximum(a.astype(np.float32), b))


@pytest.mark.gpu
def test_gpu_half_pairs():
    x = RNG.standard_normal(512).astype(np.float16)
    y = _gpu(np.full(512, np.nan, np.float16))
    half_pairs_kernel[(1,)](_gpu(x), y, BLOCK=512)
    np.testing.assert_array_equal(y.numpy(), x + x)


@pytest.mark.gpu
def test_gpu_narrow_registers():
    x = RNG.integers(-128, 128, 512).astype(np.int8)
    h = RNG.standard_normal(512).astype(np.float16)
    y, g = _gpu(np.full(512, 7, np.int8)), _gpu(np.full(512, np.nan, np.float16))
    narrow_registers_kernel[(1,)](_gpu(x), _gpu(h), y, g, BLOCK=512)
    np.testing.assert_array_equal(y.numpy(), x ^ 1)
    np.testing.assert_array_equal(g.numpy(), -h)


@pytest.mark.gpu
def test_gpu_cuda_helpers():
    out = _gpu(np.full(4, -1, np.int64))
    cuda_helpers_kernel[(1,)](out, num_warps=2)
    elapsed, sm, threads, _ = out.numpy()
    assert 0 <= elapsed < 10**9 and 0 <= sm < 1024 and threads == 66


@pytest.mark.gpu
def test_gpu_custom_float8_matches_the_cast():
    """Triton's packed PTX conversions and tile's cast agree on every fp16 value (as fp32; NaNs
    become +1.75 through cvt.rz.f16.f32) and on every fp8e4b15 code."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = bits.view(np.float16).astype(np.float32)
    n = x.size
    outs = [_gpu(np.full(n, 0xAB, np.uint8)) for _ in range(3)] + [_gpu(np.full(n, 7.0, np.float32)) for _ in range(2)]
    args = [tile.reinterpret(o, tl.float8e4b15) for o in outs[:3]] + outs[3:]
    custom_float8_kernel[(n // 1024,)](_gpu(x), *args, BLOCK=1024)
    native, asm70, asm80, up_native, up_asm = (o.numpy() for o in outs)
    want = np.array([ref_encode_e4b15_from_f16(f16_toward_zero_bits(float(v))) for v in x], np.uint8)
    np.testing.assert_array_equal(native, want)
    np.testing.assert_array_equal(asm70, want)
    np.testing.assert_array_equal(asm80, want)
    np.testing.assert_array_equal(up_native, VALUES["f8e4b15"][want].astype(np.float32))
    np.testing.assert_array_equal(up_asm, up_native)
