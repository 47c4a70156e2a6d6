"""The public pass API: extra_passes per kernel, register_pass for all, the verifier after a user
pass, the pass in tile.dump(stage="passes"), and cache keys that tell kernels with and without it apart."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.compiler import _disk_key, compile_to_ptx
from tile.ir import Operation, element_type
from tile.opt.pass_manager import Pass, PassVerificationError
from tile.opt.user_passes import registered_passes, tile_pipeline


def strength_reduce(func: Operation) -> None:
    """x * 2**k -> x << k for integers (the pass notebook 08 builds)."""
    for op in list(func.walk()):
        if op.name != "arith.mul" or not element_type(op.result.type).is_integer:
            continue
        for x, c in (op.operands, reversed(op.operands)):
            const = c.owner_op
            value = const.attrs["value"] if const is not None and const.name == "arith.constant" else None
            if isinstance(value, int) and value > 0 and value & (value - 1) == 0:
                shift = Operation("arith.constant", [], [c.type], {"value": value.bit_length() - 1}, loc=op.loc)
                shl = Operation("arith.shl", [x, shift.result], [op.result.type], loc=op.loc)
                op.parent.insert_before(op, shift)
                op.parent.insert_before(op, shl)
                op.result.replace_all_uses_with(shl.result)
                op.erase()
                break


def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs * 2, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


plain = tile.jit(scale)
reduced = tile.jit(extra_passes=[strength_reduce])(scale)
N = 300
X = np.random.default_rng(1).standard_normal(N).astype(np.float32)


def _run(kernel) -> np.ndarray:
    out = np.full(2 * N, np.nan, np.float32)
    kernel[(tile.cdiv(N, 128),)](X, out, N, BLOCK=128)
    return out


def test_extra_pass_rewrites_the_kernel_and_keeps_it_correct(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    before = str(tile.dump(plain, X, X, N, BLOCK=128, target="interpreter"))
    after = str(tile.dump(reduced, X, X, N, BLOCK=128, target="interpreter"))
    assert before.count("arith.mul") == 3 and "arith.shl" not in before  # pid * 128, offs * 2, x * 3.0
    assert after.count("arith.mul") == 1 and after.count("arith.shl") == 2
    np.testing.assert_array_equal(_run(reduced), _run(plain))
    np.testing.assert_allclose(_run(reduced)[::2][:N], X.astype(np.float64) * 3.0, rtol=1e-6)


def test_the_pass_shows_in_the_passes_dump_and_in_ptx():
    passes = str(tile.dump(reduced, X, X, N, BLOCK=128, stage="passes", target="sm_90a"))
    assert passes.index("after dce") < passes.index("after strength-reduce") < passes.index("after coalesce")
    ptx = str(tile.dump(reduced, X, X, N, BLOCK=128, stage="ptx", target="sm_90a"))
    assert "shl.b32" in ptx


class CountOps(Pass):
    """A class pass: counts ops, changes nothing."""

    name = "count-ops"

    def __init__(self):
        self.seen = 0

    def run(self, func: Operation) -> None:
        self.seen = sum(1 for _ in func.walk())


def test_a_pass_may_be_a_class_or_an_instance():
    counter = CountOps()
    k = tile.jit(extra_passes=[counter, CountOps])(scale)
    passes = str(tile.dump(k, X, X, N, BLOCK=128, stage="passes", target="interpreter"))
    assert passes.count("after count-ops") == 2 and counter.seen > 10


def test_register_pass_runs_after_its_anchor_in_every_kernel():
    tile.register_pass(strength_reduce, after="cse")
    try:
        names = [p.name for p in tile_pipeline()]
        assert names[names.index("strength-reduce") - 1] == "cse"
        assert names.index("strength-reduce") > names.index("licm")  # after the last cse
        assert "arith.shl" in str(tile.dump(plain, X, X, N, BLOCK=128, target="interpreter"))
        with pytest.raises(ValueError, match="already registered"):
            tile.register_pass(strength_reduce)
    finally:
        tile.unregister_pass(strength_reduce)
    assert registered_passes() == []
    assert "arith.shl" not in str(tile.dump(plain, X, X, N, BLOCK=128, target="interpreter"))


def test_register_pass_as_a_decorator_keeps_registration_order():
    @tile.register_pass(after="canonicalize")
    def first(func):
        pass

    @tile.register_pass(after="canonicalize")
    def second(func):
        pass

    try:
        names = [p.name for p in tile_pipeline()]
        assert names.index("second") == names.index("first") + 1
    finally:
        tile.unregister_pass(first)
        tile.unregister_pass(second)


def test_bad_registrations_are_clear_errors():
    with pytest.raises(ValueError, match="no tile pass named 'cse2'.*canonicalize"):
        tile.register_pass(strength_reduce, after="cse2")
    with pytest.raises(TypeError, match="a pass is a function of a tt.func or an object with a run"):
        tile.jit(extra_passes=[42])(scale)
    with pytest.raises(ValueError, match="is not registered"):
        tile.unregister_pass(strength_reduce)


def break_dominance(func: Operation) -> None:
    """Moves the last op of the kernel body (before its return) to the top: its operands are
    then used before they are defined."""
    body = func.regions[0].blocks[0]
    victim = body.ops[-2]
    victim.detach()
    body.insert_before(body.ops[0], victim)


def test_a_pass_that_breaks_the_ir_is_named_with_the_op():
    broken = tile.jit(extra_passes=[break_dominance])(scale)
    with pytest.raises(PassVerificationError, match=r"pass 'break-dominance' produced invalid IR: 'tt.store'.*"
                                                    r"does not dominate.*test_pass_api.py:37") as info:
        tile.dump(broken, X, X, N, BLOCK=128, target="interpreter")
    assert info.value.pass_name == "break-dominance"


def test_a_broken_pass_in_a_notebook_names_the_cell(monkeypatch):
    """In a notebook the op's place reads as IPython names the kernel's cell, as compile errors do."""
    import sys
    import types

    here = __file__.rsplit(".", 1)[0]
    shell = types.SimpleNamespace(compile=types.SimpleNamespace(
        format_code_name=lambda file: ("Cell", "In[7]") if file.startswith(here) else None))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    broken = tile.jit(extra_passes=[break_dominance])(scale)
    with pytest.raises(PassVerificationError, match=r"does not dominate.*\(from Cell In\[7\]:37:"):
        tile.dump(broken, X, X, N, BLOCK=128, target="interpreter")


def test_cache_keys_include_the_passes(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    spec, _ = plain.specialize((X, X, N), {"BLOCK": 128})
    assert plain.cache_key != reduced.cache_key
    assert plain.cache_key != tile.jit(extra_passes=[CountOps])(scale).cache_key
    without = _disk_key(plain, spec, {}, "sm_90a", "8.7")
    assert "shl.b32" not in compile_to_ptx(plain, spec, {}, "sm_90a").stages["ptx"]
    tile.register_pass(strength_reduce)
    try:
        assert _disk_key(plain, spec, {}, "sm_90a", "8.7") != without
        again = compile_to_ptx(plain, spec, {}, "sm_90a")  # not the entry compiled without the pass
        assert not again.from_disk_cache and "shl.b32" in again.stages["ptx"]
    finally:
        tile.unregister_pass(strength_reduce)
    assert compile_to_ptx(plain, spec, {}, "sm_90a").from_disk_cache


def test_registering_recompiles_kernels_already_launched(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    kernel = tile.jit(scale)
    first = _run(kernel)
    _run(kernel)  # the fast launch path is in place now
    assert "arith.shl" not in str(tile.dump(kernel))
    tile.register_pass(strength_reduce)
    try:
        np.testing.assert_array_equal(_run(kernel), first)
        assert "arith.shl" in str(tile.dump(kernel))  # what the launch compiled
    finally:
        tile.unregister_pass(strength_reduce)
    np.testing.assert_array_equal(_run(kernel), first)
    assert "arith.shl" not in str(tile.dump(kernel))


def _scaling_pass(factor: float):
    def scale_constants(func: Operation) -> None:
        for op in func.walk():
            if op.name == "arith.constant" and isinstance(op.attrs["value"], float):
                op.attrs["value"] *= factor

    return scale_constants


def test_a_pass_fingerprint_covers_its_closure_and_helpers():
    by_two, by_three = tile.jit(extra_passes=[_scaling_pass(2.0)])(scale), tile.jit(
        extra_passes=[_scaling_pass(3.0)])(scale)
    assert by_two.cache_key != by_three.cache_key
    assert "value = 6.0" in str(tile.dump(by_two, X, X, N, BLOCK=128, target="interpreter"))

    def calls_helper(func: Operation) -> None:
        strength_reduce(func)

    before = tile.jit(extra_passes=[calls_helper])(scale).cache_key
    original = strength_reduce.__code__
    strength_reduce.__code__ = break_dominance.__code__  # the helper changes, the pass itself does not
    try:
        assert tile.jit(extra_passes=[calls_helper])(scale).cache_key != before
    finally:
        strength_reduce.__code__ = original
