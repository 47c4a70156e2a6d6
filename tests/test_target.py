"""tile.codegen.target: the facts of each target agree with what the lowering and the PTX emitter
do for it, an unknown target names the known ones, and the lowering reads its warp size from
the facts."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import func, lower
from tile.codegen import amdgcn, ptx
from tile.codegen.lower_core import LoweringError
from tile.codegen.ptx.emit import reg_class
from tile.codegen.target import MATRIX_CATALOGUES, TARGETS, emitter, target_facts, targets_of
from tile.ir.simt_ops import MMA_SHAPES, SHFL_MODES, WGMMA_SHAPES
from tile.ir.types import DTYPES, PointerType, f32
from tile.opt.accelerate_dot import WGMMA_TARGETS
from tile.runtime.tensor_map import TMA_TARGETS


@tile.jit
def _reduce_and_shift(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x - tl.max(x, axis=0) + tl.sum(x, axis=0))


def test_the_ptx_targets_are_the_emitters_targets() -> None:
    assert targets_of("ptx") == ptx.TARGETS
    assert targets_of("amdgcn") == amdgcn.TARGETS and emitter("gfx942") is amdgcn.emit_amdgcn
    assert all(target_facts(name).name == name for name in TARGETS)


@pytest.mark.parametrize("name", ["sm_75", "gfx1030", "sm_90A", ""])
def test_an_unknown_target_lists_the_known_ones(name: str) -> None:
    with pytest.raises(ValueError,
                       match=rf"unknown target '{name}'; tile compiles for sm_80, .*sm_90a, gfx942, gfx90a, gfx1100"):
        target_facts(name)
    with pytest.raises(ValueError, match="unknown target"):
        emitter(name)


@pytest.mark.parametrize("name", targets_of("ptx"))
def test_facts_of_a_ptx_target(name: str) -> None:
    facts = target_facts(name)
    assert facts.isa == "ptx" and facts.warp_size == 32
    assert facts.arch == int(re.fullmatch(r"sm_(\d+)a?", name).group(1))
    assert emitter(name) is ptx.emit_ptx
    assert facts.shuffle_modes == SHFL_MODES
    assert facts.matrix_catalogue("mma.sync") is MMA_SHAPES


def test_register_classes_cover_every_type_the_ptx_emitter_holds() -> None:
    for name in targets_of("ptx"):
        facts = target_facts(name)
        held = {reg_class(t) for t in DTYPES.values()} | {reg_class(PointerType(f32))}
        assert held == set(facts.register_classes), name


def test_wgmma_and_mbarriers_exactly_where_the_passes_use_them() -> None:
    assert [n for n, f in TARGETS.items() if f.has_matrix_instruction("wgmma")] == list(WGMMA_TARGETS)
    assert [n for n, f in TARGETS.items() if "mbarrier" in f.barriers] == list(TMA_TARGETS)
    assert target_facts("sm_90a").matrix_catalogue("wgmma") is WGMMA_SHAPES
    assert set(MATRIX_CATALOGUES) == {"mma.sync", "wgmma"}
    with pytest.raises(ValueError, match="sm_90 has no wgmma instructions; it has mma.sync"):
        target_facts("sm_90").matrix_catalogue("wgmma")


@pytest.mark.parametrize("name", targets_of("ptx"))
def test_the_emitted_ptx_uses_only_the_targets_state_spaces(name: str) -> None:
    x = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    text = str(tile.dump(_reduce_and_shift, x, x, BLOCK=256, stage="ptx", target=name))
    spaces = set(re.findall(r"\b(?:ld|st|cvta\.to|atom|red)\.(global|shared|local|param|const)\b", text))
    assert "global" in spaces and "param" in spaces and "shared" in spaces
    assert spaces <= set(target_facts(name).address_spaces)
    assert set(re.findall(r"shfl\.sync\.(\w+)\.b32", text)) <= set(target_facts(name).shuffle_modes)
    assert re.search(r"^\s*bar\.sync 0;", text, re.MULTILINE) and "bar.sync" in target_facts(name).barriers


_STORE_LANE = """
  %l = tt.arange {end = 64, start = 0} : tensor<64xi32, #L>
  %p = tt.splat %out : tensor<64xptr<i32>, #L>
  %q = tt.addptr %p, %l : tensor<64xptr<i32>, #L>
  tt.store %q, %l
""".replace("#L", "#blocked<spt = [1], tpw = [32], wpc = [2], order = [0]>")


def test_the_lowering_takes_its_warp_size_from_the_target() -> None:
    text = func("k", [("out", "ptr<i32>")], _STORE_LANE, num_warps=2, target="sm_80")
    assert lower(text).attrs["target"] == "sm_80"
    with pytest.raises(ValueError, match="unknown target 'sm_75'"):
        lower(text.replace('"sm_80"', '"sm_75"'))
    wide = text.replace("threads_per_warp = 32", "threads_per_warp = 64")
    with pytest.raises(LoweringError, match="sm_80 needs 32 threads per warp"):
        lower(wide)


def test_the_emulator_takes_the_ptx_targets_of_the_table() -> None:
    assert tile.emulate(_reduce_and_shift, target="sm_89").target == "sm_89"
    with pytest.raises(ValueError, match=r"unknown PTX target 'sm_75'; expected one of sm_80, sm_86, sm_89, sm_90, "
                                         r"sm_90a$"):
        tile.emulate(_reduce_and_shift, target="sm_75")
