"""The fast launch binder (tile/frontend/binder.py), against a fake compiler whose entries
have a fast form, as GPU entries do: every launch must reach the kernel that the general
rules (JITFunction.specialize) choose, with the same values, whichever binder handles it."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.runtime.arrays import DeviceArray
from tile.tools.tensor_descriptor import TensorDescriptor


class FakeGpuCompiled:
    """A compiled kernel whose entries record launches; `fast` marks those from the fast binder."""

    def __init__(self, spec_key: tuple, log: list):
        self.spec_key = spec_key
        self.log = log

    def make_entry(self, positions, value_count):
        def fast(grid, stream, *values):
            assert len(values) == value_count
            self.log.append(("fast", self.spec_key, grid, stream, [values[i] for i in positions]))

        def entry(grid, values, args, stream):
            self.log.append(("general", self.spec_key, grid, stream, [values[i] for i in positions]))

        entry.fast = fast
        return entry


@pytest.fixture
def gpu_compiler(monkeypatch):
    """compile_kernel and the target replaced: compilations are counted, launches logged."""
    from tile import compiler

    compiled: list[FakeGpuCompiled] = []
    log: list = []

    def compile_kernel(fn, spec, options, target):
        compiled.append(FakeGpuCompiled(spec.key, log))
        return compiled[-1]

    monkeypatch.setattr(compiler, "compile_kernel", compile_kernel)
    monkeypatch.setattr(compiler, "current_target", lambda: "sm_90a")
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    return compiled, log


def device_array(n: int = 64, dtype=np.float32, misalign: int = 0) -> DeviceArray:
    """A host DeviceArray that says it is on the device (nothing here dereferences it)."""
    a = DeviceArray((n,), dtype)
    a.is_device = True
    a._address += misalign
    return a


@tile.jit
def scale(x_ptr, n, alpha, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * alpha, mask=(offs < n) & flag)


def fresh_kernel():
    return tile.jit(scale.fn)


def expected(kernel, args, constexprs):
    spec, values = kernel.specialize(args, constexprs)
    return spec.key, values


def test_first_launch_installs_the_fast_binder(gpu_compiler):
    compiled, log = gpu_compiler
    k = fresh_kernel()
    x = device_array()
    k[(2,)](x, 100, 0.5, True, BLOCK=16)
    assert k._launch is not k._general
    k[(3,)](x, 200, 1.5, False, BLOCK=16)
    assert len(compiled) == 1
    assert [entry[0] for entry in log] == ["general", "fast"]
    assert log[1][1:] == (compiled[0].spec_key, (3,), 0, [x.data_ptr(), 200, 1.5, False])


def test_fast_binder_follows_the_specialization_rules(gpu_compiler):
    compiled, log = gpu_compiler
    k = fresh_kernel()
    x = device_array()
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    cases = [
        ((x, 7, 0.5, True), {"BLOCK": 16}),  # same kernel
        ((x, 1, 0.5, True), {"BLOCK": 16}),  # n == 1 is folded: a new kernel
        ((x, 32, 0.5, True), {"BLOCK": 16}),  # divisible by 16
        ((x, 2**40, 0.5, True), {"BLOCK": 16}),  # i64: the general path
        ((x, -2**31, 0.5, True), {"BLOCK": 16}),
        ((x, 7, 2, True), {"BLOCK": 16}),  # an int where a float was: the general path
        ((x, 7, 0.5, None), {"BLOCK": 16}),
        ((device_array(misalign=4), 7, 0.5, True), {"BLOCK": 16}),  # not 16-byte aligned
        ((device_array(dtype=np.float16), 7, 0.5, True), {"BLOCK": 16}),
        ((x, 7, 0.5, True), {"BLOCK": 32}),
        ((x, 7, 0.5, True), {"BLOCK": 32.0}),  # equal, but a float: another kernel
        ((x, 7, 0.5, True), {"BLOCK": True}),
    ]
    for args, constexprs in cases:
        k[(1,)](*args, **constexprs)
        key, values = expected(k, args, constexprs)
        assert log[-1][1] == key, (args, constexprs)
        assert log[-1][4] == [getattr(v, "data_ptr", lambda v=v: v)() for v in values]
    assert len({c.spec_key for c in compiled}) == len(compiled)  # each specialization compiled once
    assert len(compiled) == 11


def test_fast_binder_options_grid_and_stream(gpu_compiler):
    compiled, log = gpu_compiler
    k = fresh_kernel()
    x = device_array()
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    k[(1,)](x, 100, 0.5, True, BLOCK=16, num_warps=8)
    assert len(compiled) == 2 and log[-1][0] == "fast"
    k[(1,)](x, 100, 0.5, True, BLOCK=16, num_stages=2)
    assert len(compiled) == 3
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tile.cdiv(meta["n"], meta["BLOCK"]),)

    k[grid](x, 100, 0.5, True, BLOCK=16, stream=77)
    assert log[-1][:4] == ("fast", compiled[0].spec_key, (7,), 77)
    assert seen == {"x_ptr": x, "n": 100, "alpha": 0.5, "flag": True, "BLOCK": 16, "num_warps": 4, "num_stages": 3}
    k[4](x, 100, 0.5, True, BLOCK=16)  # not a tuple: passed on, the entry converts it
    assert log[-1][2] == 4


def test_fast_binder_keeps_the_argument_errors(gpu_compiler):
    k = fresh_kernel()
    x = device_array()
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    with pytest.raises(TypeError, match=r"scale\(\) missing tl.constexpr argument 'BLOCK'"):
        k[(1,)](x, 100, 0.5, True)
    with pytest.raises(TypeError, match=r"scale\(\) missing argument 'flag'"):
        k[(1,)](x, 100, 0.5, BLOCK=4)
    with pytest.raises(TypeError, match=r"scale\(\) takes 5 arguments but 6 were given"):
        k[(1,)](x, 100, 0.5, True, 16, 5)
    with pytest.raises(TypeError, match="cannot pass"):
        k[(1,)]([1, 2], 100, 0.5, True, BLOCK=4)
    with pytest.raises(TypeError, match="num_warps must be"):
        k[(1,)](x, 100, 0.5, True, BLOCK=16, num_warps=3)


def test_interpret_flag_is_part_of_the_fast_key(gpu_compiler, monkeypatch):
    compiled, log = gpu_compiler
    k = fresh_kernel()
    x = device_array()
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    before = len(k._fast_entries)
    monkeypatch.setitem(os.environ, "TILE_INTERPRET", "1")
    k[(1,)](x, 100, 0.5, True, BLOCK=16)
    assert len(k._fast_entries) == before + 1  # a new fast key: the entry was looked up again


def test_kernels_the_fast_binder_cannot_take_stay_general(gpu_compiler):
    compiled, log = gpu_compiler
    k = fresh_kernel()
    k[(1,)](device_array(), 2**40, 0.5, True, BLOCK=16)  # a first launch with an i64
    assert k._launch is k._general
    k2 = fresh_kernel()
    k2[(1,)](device_array(), 7, 0.5, True, BLOCK=tl.constexpr(16))
    assert k2._launch is k2._general


ints = st.one_of(st.sampled_from([0, 1, 15, 16, 32, -16, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40]),
                 st.integers(-2**63, 2**63 - 1))
scalars = st.one_of(ints, st.floats(allow_nan=False, width=32), st.booleans(), st.none())


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.tuples(st.sampled_from([0, 4, 8, 16]), st.sampled_from([np.float32, np.float16]), ints,
                                scalars, scalars, st.sampled_from([16, 32])), min_size=1, max_size=8))
def test_every_launch_reaches_the_kernel_the_general_rules_choose(calls):
    """Whatever kinds the first launch fixed the fast binder to, each launch reaches the
    specialization and values that JITFunction.specialize gives."""
    from tile import compiler

    log: list = []
    saved = compiler.compile_kernel, compiler.current_target
    compiler.compile_kernel = lambda fn, spec, options, target: FakeGpuCompiled(spec.key, log)
    compiler.current_target = lambda: "sm_90a"
    try:
        k = fresh_kernel()
        arrays = {}
        first_kinds = None
        for misalign, dtype, n, alpha, flag, block in calls:
            x = arrays.setdefault((misalign, dtype), device_array(dtype=dtype, misalign=misalign))
            args = (x, n, alpha, flag)
            k[(1,)](*args, BLOCK=block)
            key, values = expected(k, args, {"BLOCK": block})
            assert log[-1][1] == key
            assert log[-1][4] == [getattr(v, "data_ptr", lambda v=v: v)() for v in values]
            kinds = (type(alpha), type(flag), all(type(v) is not int or -2**31 <= v < 2**31 for v in (n, alpha, flag)))
            if first_kinds is None:
                first_kinds = kinds
            elif kinds == first_kinds and kinds[2]:
                assert log[-1][0] == "fast"  # the kinds the fast binder was made for do take it
    finally:
        compiler.compile_kernel, compiler.current_target = saved


def test_kernel_getitem_reuses_the_bound_launch_of_the_same_grid(gpu_compiler):
    k = fresh_kernel()
    grid, x = (1,), device_array()
    first = k[grid]
    assert k[grid] is first
    first(x, 100, 0.5, True, BLOCK=16)  # compiles: the fast binder replaces the general one
    assert k[grid] is not first and k[grid].func is k._launch is not k._general
    assert k[tuple([1])] is not k[grid]  # an equal grid, another object: bound anew


def test_do_not_specialize_parameters_keep_one_kernel(gpu_compiler):
    compiled, log = gpu_compiler
    k = tile.jit(scale.fn, do_not_specialize=["x_ptr", "n"])
    for n, misalign in ((100, 0), (1, 0), (32, 4), (7, 8)):
        k[(1,)](device_array(misalign=misalign), n, 0.5, True, BLOCK=16)
    assert len(compiled) == 1
    assert [entry[0] for entry in log] == ["general", "fast", "fast", "fast"]
    assert log[1][4][1] == 1  # n == 1 stays a parameter


@tile.jit
def descriptor_rows(x_desc, out_ptr, n, BLOCK: tl.constexpr):
    rows = x_desc.load([tl.program_id(0) * BLOCK, 0])
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.sum(rows, axis=1), mask=tl.arange(0, BLOCK) < n)


@pytest.fixture
def fake_tensor_maps(monkeypatch):
    """Tensor maps without a driver: 128 bytes naming the address, shape and block."""
    import importlib

    tensor_map = importlib.import_module("tile.runtime.tensor_map")  # the module, not a name of tile.runtime

    def encode(arguments):
        words = [arguments["globalAddress"], *arguments["globalDim"], *arguments["boxDim"]]
        return b"".join(int(w).to_bytes(8, "little") for w in words).ljust(128, b"\0")

    fake = tensor_map.TensorMapCache(encode)
    monkeypatch.setattr(importlib.import_module("tile.frontend.jit"), "_tensor_map_bytes", lambda target: fake)
    return fake


def same_launch(a: tuple, b: tuple) -> bool:
    """The same kernel, grid and values (the general path leaves the stream to the entry)."""
    return (a[1], a[2], a[4]) == (b[1], b[2], b[4])


def _descriptor(rows: int = 64, cols: int = 32, block=(16, 32), dtype=np.float16) -> TensorDescriptor:
    base = device_array(rows * cols, dtype)
    return TensorDescriptor(base, [rows, cols], [cols, 1], list(block))


def test_descriptor_launches_take_the_fast_binder(gpu_compiler, fake_tensor_maps):
    """A TensorDescriptor over a GPU array, on a TMA target: the fast binder spreads it into the
    leaves the general path passes (address, shape, strides, tensor map), for the same kernel;
    a new shape is a fast miss that the general rules resolve."""
    compiled, log = gpu_compiler
    k = tile.jit(descriptor_rows.fn)
    out = device_array(64)
    d = _descriptor()
    k[(4,)](d, out, 64, BLOCK=16)
    k[(4,)](d, out, 64, BLOCK=16)
    assert [entry[0] for entry in log] == ["general", "fast"] and len(compiled) == 1
    assert same_launch(log[0], log[1])
    address = d.base.data_ptr()
    assert log[1][4][:5] == [address, 64, 32, 32, fake_tensor_maps(d)] and log[1][4][5] == out.data_ptr()
    for other in (_descriptor(rows=128), _descriptor(block=(32, 32)), _descriptor(rows=1),
                  _descriptor(dtype=np.float32)):
        k._general((4,), other, out, 64, BLOCK=16)
        k[(4,)](other, out, 64, BLOCK=16)
        assert log[-2][0] == "general" and log[-1][0] == "fast" and same_launch(log[-2], log[-1])
        assert log[-1][1] == expected(k, (other, out, 64), {"BLOCK": 16})[0]
    assert len(compiled) == 4  # rows=128 and rows=64 share a specialization; 1 and f32 do not


def test_descriptor_that_breaks_tma_rules_gets_the_general_error(gpu_compiler, fake_tensor_maps):
    k = tile.jit(descriptor_rows.fn)
    out = device_array(64)
    k[(4,)](_descriptor(), out, 64, BLOCK=16)
    with pytest.raises(ValueError, match="argument 'x_desc'"):
        k[(4,)](_descriptor(rows=1024, cols=512, block=(512, 16)), out, 64, BLOCK=16)
