"""gfx942 code for elementwise kernels: the text (waits, EXEC masking, scalar registers for
uniform values), the assembler round trip (llvm-mc, ld.lld), and clear errors."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import TARGETS, UnsupportedOnTarget, assemble
from amdgcn_util import READELF, instructions, needs_llvm, unmasked_accesses, unwaited_reads


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@tile.jit
def where_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(x > y, x * 2 - y, y), mask=m)


@tile.jit
def axpy_unmasked(x_ptr, out_ptr, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs) + 1.0)


@tile.jit
def int_kernel(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.maximum((x << shift) ^ (x >> 3), -x) + (n * 3) - offs
    tl.store(out_ptr + offs, y, mask=m)


@tile.jit
def convert_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs.to(tl.int64), mask=m)
    tl.store(out_ptr + offs, (x.to(tl.float32) * 0.25).to(tl.int32), mask=m)


@tile.jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, 1.0 / (1.0 + tl.exp(-x)) + tl.sqrt(tl.abs(x)) + x / (x + 3.0), mask=m)


@tile.jit
def bf16_grid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK) + tl.num_programs(0)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.bfloat16).to(tl.float32), mask=m)


@tile.jit
def sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))))


@tile.jit
def atomic_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + (offs & 3), tl.load(x_ptr + offs))


F32 = np.ones(1000, np.float32)
F16 = np.ones(1000, np.float16)
I32 = np.ones(1000, np.int32)
CASES = {
    "vector add": (add_kernel, (F32, F32, F32, 1000), {"BLOCK": 1024}),
    "vector add, aligned n": (add_kernel, (F32, F32, F32, 1024), {"BLOCK": 512}),
    "f16 where": (where_kernel, (F16, F16, F16, 1000), {"BLOCK": 256}),
    "axpy": (axpy_unmasked, (F32, F32, 2.5), {"BLOCK": 256}),
    "int ops": (int_kernel, (I32, I32, 1000, 3), {"BLOCK": 128}),
    "conversions": (convert_kernel, (I32, I32, 1000), {"BLOCK": 256}),
    "transcendentals": (math_kernel, (F32, F32, 1000), {"BLOCK": 256}),
    "2-d grid, bf16": (bf16_grid_kernel, (F32, F32, 1000), {"BLOCK": 256}),
    "sum": (sum_kernel, (F32, F32), {"BLOCK": 256}),
}


def amdgcn(case: str, num_warps: int = 2) -> str:
    """The gfx942 text of CASES[case]; 2 warps (waves of 64): the 128 work-items the cases' element
    counts per lane are written for."""
    kernel, args, constexprs = CASES[case]
    return str(tile.dump(kernel, *args, stage="amdgcn", target="gfx942", num_warps=num_warps, **constexprs))


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_load_result_is_waited_for(case):
    text = amdgcn(case)
    assert unwaited_reads(text) == []
    assert "s_waitcnt" in text and instructions(text)[-1] == "s_endpgm"


@pytest.mark.parametrize("case", ["vector add", "f16 where", "int ops", "conversions"])
def test_masked_accesses_run_under_a_narrowed_exec(case):
    text = amdgcn(case)
    assert unmasked_accesses(text) == []
    lines = instructions(text)
    saves = [i for i, line in enumerate(lines) if line.startswith("s_and_saveexec_b64")]
    restores = [i for i, line in enumerate(lines) if line.startswith("s_mov_b64 exec")]
    # accesses bounded by their own index (`offs < n`) are buffer accesses, which need no EXEC
    # (test_amdgcn_buffer.py); any global access left runs under a narrowed EXEC
    assert len(saves) == len(restores) > 0 or not any(line.startswith("global_") for line in lines)
    assert all(s < r for s, r in zip(saves, restores))


def test_unmasked_kernel_never_touches_exec():
    text = amdgcn("axpy")
    assert "exec" not in "\n".join(instructions(text))
    assert unmasked_accesses(text) != []  # its accesses run in every lane


def test_uniform_values_live_in_sgprs():
    lines = instructions(amdgcn("f16 where"))   # x's load (other=1.0) keeps its mask
    # program_id * BLOCK: the scalar unit, from the workgroup id the hardware puts in s2
    assert any(line.startswith("s_mul_i32") and "s2" in line for line in lines)
    # the compare of per-lane offsets against the (uniform) n writes a lane mask
    assert any(line.startswith("v_cmp_lt_i32 s[") for line in lines)
    assert any(line.startswith("s_load_dword s") for line in lines)


def test_masked_load_with_other_selects_after_the_loads():
    lines = instructions(amdgcn("f16 where"))
    # x (other=1.0) loads under EXEC, y (no other) as a buffer load (test_amdgcn_buffer.py)
    loads = [i for i, line in enumerate(lines) if line.startswith(("global_load_ushort", "buffer_load_ushort"))]
    selects = [i for i, line in enumerate(lines) if line.startswith("v_cndmask_b32")]
    assert len(loads) == 4 and selects
    # the first select of the `other` value waits only after both loads of x are issued
    assert selects[0] > loads[1]
    assert any(line.startswith("v_cvt_f32_f16") for line in lines)
    assert any(line.startswith("v_cvt_f16_f32") for line in lines)
    assert any(line.startswith("buffer_store_short") for line in lines)


def test_vector_widths_follow_the_simt_ir():
    text = amdgcn("vector add, aligned n")
    # the accesses are bounded by `offsets < n`: buffer accesses (test_amdgcn_buffer.py)
    assert "buffer_load_dwordx4" in text and "buffer_store_dwordx4" in text
    lines = instructions(text)
    # the sums are computed into the store's register tuple; no 64-bit address is computed
    # (every access addresses from its buffer resource)
    assert not any(line.startswith("v_mov_b32") for line in lines)
    assert not any(line.startswith("v_mad_i64_i32") for line in lines)


def test_descriptor_and_metadata():
    text = amdgcn("vector add", num_warps=4)   # 4 waves of 64 work-items
    assert ".amdhsa_kernel add_kernel" in text
    assert ".amdhsa_user_sgpr_kernarg_segment_ptr 1" in text
    assert ".max_flat_workgroup_size: 256" in text and ".wavefront_size: 64" in text
    assert ".amdhsa_kernarg_size 28" in text
    assert ".name: !str n_elements\n        .offset: 24\n        .size: 4\n        .value_kind: by_value" in text
    assert "test_amdgcn_codegen.py:21" in text  # instructions name the kernel's source line


def test_second_grid_axis_and_num_programs():
    text = amdgcn("2-d grid, bf16")
    assert ".amdhsa_system_sgpr_workgroup_id_y 1" in text
    assert ".value_kind: hidden_block_count_x" in text and ".amdhsa_kernarg_size 36" in text


@needs_llvm
@pytest.mark.parametrize("case", sorted(CASES))
def test_assembles_and_links_to_a_code_object(case):
    hsaco = assemble(amdgcn(case), "gfx942")
    assert hsaco[:4] == b"\x7fELF"
    if READELF:
        notes = subprocess.run([READELF, "--notes", "-"], input=hsaco, capture_output=True).stdout.decode()
        kernel = CASES[case][0].__name__
        assert f".symbol:         {kernel}.kd" in notes and "amdgcn-amd-amdhsa--gfx942" in notes


@needs_llvm
def test_tutorial_vector_add_assembles():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "tutorials" / "01_vector_add.py"
    spec = importlib.util.spec_from_file_location("tutorial_01", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.random.default_rng(0).standard_normal(98_432).astype(np.float32)
    text = str(tile.dump(module.add_kernel, x, x, x, x.size, BLOCK=1024, stage="amdgcn", target="gfx942"))
    assert unwaited_reads(text) == [] and unmasked_accesses(text) == []
    assert assemble(text, "gfx942")[:4] == b"\x7fELF"


def test_unsupported_op_names_the_op_and_target():
    message = r"test_amdgcn_codegen.py:81:\d+: gfx942: the AMDGCN backend does not support simt\.(atom|red) of f16"
    f16 = np.ones(1000, np.float16)   # 16-bit atomics are not selected (32- and 64-bit ones are)
    with pytest.raises(tile.CompilationError, match=message) as e:
        tile.dump(atomic_kernel, f16, f16, BLOCK=256, stage="amdgcn", target="gfx942")
    assert isinstance(e.value, UnsupportedOnTarget) and e.value.line == 81
    assert "tl.atomic_add" in str(e.value)   # the user's line, quoted


def test_unknown_amd_target_lists_the_supported_ones():
    with pytest.raises(ValueError, match="cannot compile for target 'gfx1234'; choose 'interpreter' or one of .*gfx942"):
        tile.dump(add_kernel, F32, F32, F32, 1000, BLOCK=1024, stage="amdgcn", target="gfx1234")


def test_stage_and_target_must_match():
    with pytest.raises(ValueError, match="stage 'amdgcn' is not produced for target 'sm_90a'"):
        tile.dump(add_kernel, F32, F32, F32, 1000, BLOCK=1024, stage="amdgcn", target="sm_90a")
    with pytest.raises(ValueError, match="stage 'ptx' is not produced for target 'gfx942'"):
        tile.dump(add_kernel, F32, F32, F32, 1000, BLOCK=1024, stage="ptx", target="gfx942")


@tile.jit
def target_query_kernel(out_ptr):
    tl.store(out_ptr, tl.target_info.is_hip() * 10 + tl.target_info.is_hip_cdna3())


def test_target_info_knows_gfx942():
    assert tl.target_info.target_of("gfx942") == ("hip", "gfx942", 64)
    assert tl.target_info.target_of("gfx1100") == ("hip", "gfx1100", 32)  # RDNA3: waves of 32
    simt = str(tile.dump(target_query_kernel, I32, stage="simt", target="gfx942"))
    assert "arith.constant {value = 11} : i32" in simt


@needs_llvm
def test_compile_for_gfx942_without_a_gpu(monkeypatch):
    """tile.compile's path (through the disk cache, nothing loaded) needs no GPU; loading the
    code (compile_kernel without a stage limit) needs hip-python."""
    import sys

    from tile.compiler import compile_kernel, compile_to_ptx
    from tile.runtime import hip_driver

    monkeypatch.setattr(hip_driver, "_hip", None)
    monkeypatch.setitem(sys.modules, "hip", None)   # import hip fails
    spec, _ = add_kernel.specialize((F32, F32, F32, 1000), {"BLOCK": 256})
    compiled = compile_to_ptx(add_kernel, spec, {"num_warps": 4}, "gfx942")
    assert ".amdhsa_kernel add_kernel" in compiled.stage("amdgcn") and compiled.backend is None
    assert compiled.launch_info["workgroup_size"] == 256   # num_warps counts waves of 64
    with pytest.raises(RuntimeError, match="running gfx kernels needs hip-python"):
        compile_kernel(add_kernel, spec, {"num_warps": 4}, "gfx942")


def test_amdgcn_stage_defaults_to_gfx942(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    text = str(tile.dump(add_kernel, F32, F32, F32, 1000, BLOCK=256, stage="amdgcn"))
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"' in text



@tile.jit
def narrow_sum_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(out_ptr, tl.sum(x, axis=0))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype, other", [(np.int8, -1), (np.int16, -300), (np.uint8, 200), (np.uint16, 60000)])
def test_narrow_constants_are_extended_as_loads_extend(target, dtype, other):
    """A masked load's `other` of a narrow type sits in its lanes extended in the type's own
    signedness, as loaded values do (a fuzzer find: an i8 -1 arrived as 255 in the sum)."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, 64).astype(dtype)
    out = np.full(1, -7, np.int32)
    tile.emulate(narrow_sum_kernel, target=target)[(1,)](x, out, 40, OTHER=other, BLOCK=64)
    assert out[0] == x[:40].astype(np.int64).sum() + 24 * other


@tile.jit
def wide_constant_store_kernel(out_ptr, VALUE: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(out_ptr + offs, tl.full((64,), VALUE, tl.int64))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("value", [0, -3, 17, -(2**40) - 5])
def test_64_bit_constants_are_stored_whole(target, value):
    """A stored i64 constant fills both dwords (a fuzzer find: an inline one, such as the 0 of
    `x * 0`, reached global_store_dwordx2 as one VGPR)."""
    out = np.full(64, 12345, np.int64)
    tile.emulate(wide_constant_store_kernel, target=target)[(1,)](out, VALUE=value)
    assert (out == value).all()


@tile.jit
def sort_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.uint16, np.uint8, np.int16, np.float16])
@pytest.mark.parametrize("block", [2, 16])
def test_sort_of_narrow_values_through_bitcasts(target, dtype, block):
    """tl.sort moves narrow values through bitcasts to signed integers of their width; each
    result is extended again in its own signedness (a fuzzer find: u16 values above 32767
    bitcast to i16 kept their zero upper bits, and the sort did not swap them)."""
    rng = np.random.default_rng(6)
    if dtype == np.float16:
        x = rng.standard_normal(block).astype(dtype)
    else:
        info = np.iinfo(dtype)   # unsigned: the top bit set, where the signed view differs
        x = rng.integers(info.min if info.min else info.max // 2 + 1, info.max, block, endpoint=True).astype(dtype)
    out = np.zeros(block, dtype)
    tile.emulate(sort_kernel, target=target)[(1,)](x, out, BLOCK=block)
    np.testing.assert_array_equal(out, np.sort(x))
