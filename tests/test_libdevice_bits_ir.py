"""The IR under libdevice_bits: the verifier's rules for rounding modes and the new ops,
canonicalize folding them exactly (IR text in, IR text out), and their lowering: the PTX
instructions they print and tile.emulator running the lowered kernels against the
tile interpreter, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import ARCHS
from ptxas_util import assemble_ok, needs_ptxas
from test_codegen_e2e import launch, out_of
from test_language import poison
from test_libdevice_bits import apply_kernel, float_pairs, int_values, same_bits
from test_pass_canonicalize import check, func
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.ir import VerificationError, parse_op, verify
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes

# ------------------------------------------------------------------------------ verifier


@pytest.mark.parametrize("body, args, message", [
    ('%a = arith.add %x, %x {rounding = "rd"} : f16', "%x: f16", "rounding applies to f32 and f64 only, not f16"),
    ('%a = arith.mul %x, %x {rounding = "up"} : f32', "%x: f32", "rounding must be one of ('rn', 'rz', 'rd', 'ru')"),
    ('%a = math.sqrt %x {approx = true, rounding = "rz"} : f32', "%x: f32", "either approx or rounded"),
    ('%a = arith.cast %x {rounding = "rd"} : f16', "%x: f32", "rounding 'rd' converts between f32, f64 and 32/64"),
    ('%a = arith.cast %x {rounding = "rtz"} : i32', "%x: f32", "rounding 'rtz' is for float results"),
    ('%a = arith.cast %x {rounding = "ru"} : i64', "%x: i32", "a conversion from i32 to i64 does not round"),
    ("%a = math.clz %x : i8", "%x: i8", "expects 32/64-bit integers, got i8"),
    ("%a = math.popc %x : i64", "%x: i64", "result type i64 should be i32"),
    ("%a = math.mul24 %x, %x : i64", "%x: i64", "expects 32-bit integers, got i64"),
    ("%a = math.byte_perm %x, %x, %x : i32", "%x: f32", "unsupported element type f32"),
    ('%a = math.approx %x {fn = "exp"} : f32', "%x: f32", "fn must be one of"),
    ('%a = math.approx %x {fn = "rcp64h"} : f32', "%x: f32", "approx rcp64h is on f64"),
    ('%a = math.approx %x {fn = "div"} : f32', "%x: f32", "expects 2..2 operands"),
])
def test_verifier_rejects(body: str, args: str, message: str) -> None:
    with pytest.raises(VerificationError) as info:
        verify(parse_op(func(body + "\ntt.return", args)))
    assert message in str(info.value)


# ----------------------------------------------------------------------------- canonicalize


def test_rounded_arithmetic_folds_exactly() -> None:
    """1 + 2^-30 in each mode, 1/3 in f64 toward -inf, an fp32 overflow toward zero."""
    check("""
        %one = arith.constant {value = 1.0} : f32
        %tiny = arith.constant {value = 9.313225746154785e-10} : f32
        %three = arith.constant {value = 3.0} : f64
        %d1 = arith.constant {value = 1.0} : f64
        %big = arith.constant {value = 3.4028234663852886e+38} : f32
        %u = arith.add %one, %tiny {rounding = "ru"} : f32
        %z = arith.add %one, %tiny {rounding = "rz"} : f32
        %n = arith.sub %one, %tiny {rounding = "rn"} : f32
        %d = arith.div %d1, %three {rounding = "rd"} : f64
        %o = arith.mul %big, %big {rounding = "rz"} : f32
        tt.print %u, %z, %n, %d, %o
        tt.return
        """, """
        %u = arith.constant {value = 1.0000001192092896} : f32
        %z = arith.constant {value = 1.0} : f32
        %n = arith.constant {value = 1.0} : f32
        %d = arith.constant {value = 0.3333333333333333} : f64
        %o = arith.constant {value = 3.4028234663852886e+38} : f32
        tt.print %u, %z, %n, %d, %o
        tt.return
        """)


def test_signed_zero_cases_stay_for_the_target() -> None:
    """x - x is -0.0 rounding down (not folded), and x + -0.0 is not x there (x = +0.0 gives -0.0);
    the same identity holds in the other modes."""
    check("""
        %c = arith.constant {value = 1.5} : f32
        %nz = arith.constant {value = -0.0} : f32
        %zero = arith.sub %c, %c {rounding = "rd"} : f32
        %keep = arith.add %x, %nz {rounding = "rd"} : f32
        %same = arith.add %x, %nz {rounding = "ru"} : f32
        tt.print %zero, %keep, %same
        tt.return
        """, """
        %c = arith.constant {value = 1.5} : f32
        %nz = arith.constant {value = -0.0} : f32
        %zero = arith.sub %c, %c {rounding = "rd"} : f32
        %keep = arith.add %x, %nz {rounding = "rd"} : f32
        tt.print %zero, %keep, %x
        tt.return
        """, "%x: f32")


def test_casts_fold_in_their_rounding_mode() -> None:
    check("""
        %tenth = arith.constant {value = 0.1} : f64
        %i = arith.constant {value = 16777217} : i32
        %h = arith.constant {value = 2.5} : f32
        %m = arith.constant {value = -2.5} : f32
        %big = arith.constant {value = 3000000000.0} : f32
        %a = arith.cast %tenth {rounding = "ru"} : f32
        %b = arith.cast %tenth {rounding = "rd"} : f32
        %c = arith.cast %i {rounding = "ru"} : f32
        %d = arith.cast %h {rounding = "rn"} : i32
        %e = arith.cast %m {rounding = "rd"} : i64
        %f = arith.cast %h : i32
        %g = arith.cast %tenth {rounding = "rtz"} : bf16
        %s = arith.cast %big {rounding = "ru"} : i32
        %t = math.trunc %m : f32
        %r = math.rint %h : f32
        tt.print %a, %b, %c, %d, %e, %f, %g, %s, %t, %r
        tt.return
        """, """
        %big = arith.constant {value = 3000000000.0} : f32
        %a = arith.constant {value = 0.10000000149011612} : f32
        %b = arith.constant {value = 0.09999999403953552} : f32
        %c = arith.constant {value = 16777218.0} : f32
        %d = arith.constant {value = 2} : i32
        %e = arith.constant {value = -3} : i64
        %f = arith.constant {value = 2} : i32
        %g = arith.constant {value = 0.099609375} : bf16
        %s = arith.cast %big {rounding = "ru"} : i32
        %t = arith.constant {value = -2.0} : f32
        %r = arith.constant {value = 2.0} : f32
        tt.print %a, %b, %c, %d, %e, %f, %g, %s, %t, %r
        tt.return
        """)


# ------------------------------------------------------------------------------- lowering


def _simt(names, args):
    n = len(args[0])
    operands = list(args) + [args[0]] * (3 - len(args))
    out = poison((len(names), n), np.float64)
    meta = {"NAMES": tuple(names), "NARGS": len(args), "BLOCK": 128}
    spec, _ = apply_kernel.specialize((*operands, out, n), meta)
    f = apply_kernel.build_ir(spec)
    PassManager(tile_passes()).run(f)
    PassManager(gpu_passes(4, "sm_90a")).run(f)
    return lower_to_simt(f)


PTX_GROUPS = [
    (["add_rd", "sub_ru", "mul_rz", "div_rn"], [np.float32] * 2,
     ["add.rm.f32", "sub.rp.f32", "mul.rz.f32", "div.rn.f32"]),
    (["rcp_ru", "sqrt_rd"], [np.float32], ["div.rp.f32", "sqrt.rm.f32"]),
    (["fma_rd", "fma_ru"], [np.float64] * 3, ["fma.rm.f64", "fma.rp.f64"]),
    (["trunc", "rint", "floor"], [np.float64], ["cvt.rzi.f64.f64", "cvt.rni.f64.f64", "cvt.rmi.f64.f64"]),
    (["float2int_rn", "float2uint_rd", "float_as_int"], [np.float32], ["cvt.rni.s32.f32", "cvt.rmi.u32.f32"]),
    (["ll2float_ru", "ll2float_rd"], [np.int64], ["cvt.rp.f32.s64", "cvt.rm.f32.s64"]),
    (["double2float_rz", "double2float_ru"], [np.float64], ["cvt.rz.f32.f64", "cvt.rp.f32.f64"]),
    (["clz", "popc", "ffs"], [np.int64], ["clz.b64", "popc.b64"]),
    (["brev"], [np.int32], ["brev.b32"]),
    (["mulhi"], [np.uint32] * 2, ["mul.hi.u32"]),
    (["mulhi", "mul24", "hadd"], [np.int32] * 2, ["mul.hi.s32", "mul24.lo.s32"]),
    (["byte_perm"], [np.int32] * 3, ["prmt.b32"]),
    (["fast_tanhf", "fast_sinf", "fast_log2f"], [np.float32], ["tanh.approx.f32", "sin.approx.f32", "lg2.approx.f32"]),
    (["fast_dividef"], [np.float32] * 2, ["div.approx.f32"]),
    (["rcp64h"], [np.float64], ["rcp.approx.ftz.f64"]),
]


@needs_ptxas
@pytest.mark.parametrize("names,dtypes,instructions", PTX_GROUPS)
def test_functions_print_their_instructions(names, dtypes, instructions) -> None:
    args = [np.ones(128, d) for d in dtypes]
    simt = _simt(names, args)
    for arch in ARCHS:
        ptx = emit_ptx(simt, target=arch)
        for instr in instructions:
            assert f"\t{instr} " in ptx, (instr, arch)
        assemble_ok(ptx, arch)


def test_sad_prints_sad() -> None:
    x = np.ones(128, np.uint32)
    assert "\tsad.u32 " in emit_ptx(_simt(["sad"], [x, x, x]))


def _emulated_vs_interpreted(names, args, out_dtype) -> None:
    n = len(args[0])
    operands = list(args) + [args[0]] * (3 - len(args))
    out = poison((len(names), n), out_dtype)
    meta = {"NAMES": tuple(names), "NARGS": len(args), "BLOCK": 128}
    m, dev, _, runtime = launch(apply_kernel, (n // 128,), [*operands, out, n], meta)
    got = out_of(m, dev, runtime, out)
    want = poison((len(names), n), out_dtype)
    apply_kernel[(n // 128,)](*operands, want, n, **meta)
    for row, expected, name in zip(got, want, names):
        same_bits(row, expected, name)


@pytest.mark.parametrize("names,dtype,out", [
    (["add_rd", "sub_ru", "mul_rz", "div_rd", "fma_ru", "remainder", "nextafter", "fdim"], np.float32, np.float32),
    (["add_ru", "div_rz", "mul_rd", "fmod", "copysign", "remainder"], np.float64, np.float64),
])
def test_lowered_float_functions_on_the_emulator(names, dtype, out) -> None:
    a, b = float_pairs(dtype, 100)
    a, b = np.resize(a, 256), np.resize(b, 256)
    if "fma_ru" in names:
        _emulated_vs_interpreted([x for x in names if x != "fma_ru"], [a, b], out)
        _emulated_vs_interpreted(["fma_ru"], [a, b, np.roll(a, 1)], out)
    else:
        _emulated_vs_interpreted(names, [a, b], out)


def test_lowered_conversions_and_bit_functions_on_the_emulator() -> None:
    f = np.resize(float_pairs(np.float32, 64)[0], 128)
    _emulated_vs_interpreted(["float2int_rn", "float2int_rd", "float2uint_ru", "ilogb", "isnan", "signbit"], [f],
                             np.int32)
    _emulated_vs_interpreted(["float2ll_ru", "float2ull_rd", "llround"], [f], np.int64)
    big = np.resize(int_values("int64", 100), 128)
    _emulated_vs_interpreted(["ll2float_rn", "ll2float_rz", "ll2float_rd", "ll2float_ru"], [big], np.float32)
    _emulated_vs_interpreted(["clz", "popc", "ffs"], [big], np.int32)
    _emulated_vs_interpreted(["brev"], [big], np.int64)
    _emulated_vs_interpreted(["mulhi"], [big, np.roll(big, 1)], np.int64)
    x = np.resize(int_values("int32", 100), 128)
    _emulated_vs_interpreted(["mul24", "mulhi", "hadd", "rhadd"], [x, np.roll(x, 3)], np.int32)
    _emulated_vs_interpreted(["byte_perm"], [x, np.roll(x, 3), np.roll(x, 7)], np.int32)
    u = x.view(np.uint32)
    _emulated_vs_interpreted(["sad"], [u, np.roll(u, 1), np.roll(u, 2)], np.uint32)
