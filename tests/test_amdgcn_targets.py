"""The AMD rows of the target table: gfx942 (CDNA3), gfx90a (CDNA2) and gfx1100 (RDNA3) side by
side, their differences read from tables (tile.codegen.amdgcn.isa), and the errors for what a
target lacks or a target tile does not know."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import TARGETS, check_target
from tile.codegen.amdgcn.isa import (ATOMIC_RETURN_BIT, CACHE_POLICY_BITS, DESCRIPTOR_FIELDS, INSTRUCTIONS,
                                     LANE_MASK_OPCODES, LANE_MASK_REGISTERS, MEMORY_ORDER, MFMA_SHAPES, SPELLING,
                                     STORE_COUNTER, WAIT_COUNT_LIMITS, WAVE_SIZE)
from tile.codegen.target import target_facts, targets_of

F32 = np.zeros(4, np.float32)


@tile.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@tile.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tile_offsets = offs[:, None] * BLOCK + offs[None, :]
    a = tl.load(a_ptr + tile_offsets)
    b = tl.load(b_ptr + tile_offsets)
    tl.store(c_ptr + tile_offsets, tl.dot(a, b))


def test_every_target_is_a_row_of_every_table():
    assert targets_of("amdgcn") == TARGETS == ("gfx942", "gfx90a", "gfx1100")
    assert target_facts("gfx90a").arch < target_facts("gfx942").arch < target_facts("gfx1100").arch
    for table in (CACHE_POLICY_BITS, ATOMIC_RETURN_BIT, MEMORY_ORDER, WAVE_SIZE, WAIT_COUNT_LIMITS, STORE_COUNTER,
                  DESCRIPTOR_FIELDS, LANE_MASK_OPCODES, LANE_MASK_REGISTERS, SPELLING):
        assert set(table) == set(TARGETS)
    for target in TARGETS:
        assert ATOMIC_RETURN_BIT[target] in CACHE_POLICY_BITS[target]
        fp8 = {"f8e4b8", "f8e5b16"} if target == "gfx942" else set()   # CDNA3's fnuz fp8 / bf8
        assert {s.operand_type for s in MFMA_SHAPES.values() if s.target == target} == (
            {"f16", "bf16"} | fp8 if WAVE_SIZE[target] == 64 else set())
        for wave64_name, name in LANE_MASK_OPCODES[target].items():   # each mask form exists where it is used
            assert target in INSTRUCTIONS[name].targets and INSTRUCTIONS[wave64_name].uses != INSTRUCTIONS[name].uses
        for release, acquire, bits in MEMORY_ORDER[target].values():   # every fence exists on its target
            assert all(target in INSTRUCTIONS[name].targets for name, _ in release + acquire)
            assert set(bits) <= set(CACHE_POLICY_BITS[target])


@pytest.mark.parametrize("target", ["gfx90a"])   # gfx942: tests/test_amdgcn_fp8.py
def test_fp8_dot_is_a_compilation_error_naming_the_target(target):
    fp8 = tile.MockTensor(tl.float8e4nv)
    with pytest.raises(tile.CompilationError, match=rf"{target} has no fp8 MFMA instruction in tile "
                                                    r"\(its MFMA take f16, bf16\)") as info:
        tile.dump(fp8_dot_kernel, fp8, fp8, F32, BLOCK=32, stage="amdgcn", target=target)
    source = open(__file__).read().splitlines()
    assert info.value.line == next(k + 1 for k, line in enumerate(source) if "tl.dot(a, b)" in line)


def test_fp8_dot_on_gfx1100_is_a_compilation_error_naming_it():
    fp8 = tile.MockTensor(tl.float8e4nv)
    with pytest.raises(tile.CompilationError, match=r"gfx1100 has no fp8 matrix instruction in tile \(it has no "
                                                    r"MFMA; its WMMA take f16, bf16\)"):
        tile.dump(fp8_dot_kernel, fp8, fp8, F32, BLOCK=32, stage="amdgcn", target="gfx1100")


def test_an_unknown_gfx_target_lists_the_supported_ones():
    with pytest.raises(ValueError, match="unknown AMD target 'gfx1030'; supported: gfx942, gfx90a, gfx1100"):
        check_target("gfx1030")
    with pytest.raises(ValueError, match=r"tile cannot compile for target 'gfx908'; choose 'interpreter' or one of "
                                         r"sm_80, .*gfx942, gfx90a, gfx1100"):
        tile.dump(copy_kernel, F32, F32, 4, BLOCK=64, stage="amdgcn", target="gfx908")
    with pytest.raises(ValueError, match="unknown target 'gfx1030'; tile compiles for .*gfx942, gfx90a, gfx1100"):
        target_facts("gfx1030")


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_gets_its_own_code_object_header(target):
    text = str(tile.dump(copy_kernel, F32, F32, 4, BLOCK=64, stage="amdgcn", target=target))
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"' in text
    assert f"amdhsa.target: amdgcn-amd-amdhsa--{target}" in text
