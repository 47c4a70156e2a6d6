"""The frontend: IR text of small kernels, specialization, constexpr folding, inlining, name
hints, locations, and the launch path (cache, grid, argument binding)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.frontend.jit import JITFunction
from tile.frontend.specialize import Specialization, arg_key
from tile.ir import parse_op, print_op, verify

SCALE = 3
FACTOR = tl.constexpr(4)


def ir_of(kernel, *args, round_trip=True, **constexprs) -> str:
    spec, _ = kernel.specialize(args, constexprs)
    func = kernel.build_ir(spec)
    verify(func)
    text = print_op(func)
    if round_trip:
        assert print_op(parse_op(text)) == text  # the printed IR parses back unchanged
    return text


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def f32(n: int = 64) -> np.ndarray:
    return np.zeros(n, np.float32)


@tile.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_vector_add_ir():
    text = ir_of(add_kernel, f32(), f32(), f32(), 100, BLOCK=128)
    body = lines(text)
    assert body[0].startswith('tt.func {arg_divisibility = [16, 16, 16, 1], arg_names = ["x_ptr", "y_ptr", "out_ptr", '
                              '"n"], sym_name = "add_kernel"}')
    assert "^bb(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32):" in body
    assert "%pid = tt.program_id {axis = 0} : i32" in body
    assert "%offs = arith.add %3, %2 : tensor<128xi32>" in body or any(
        line.startswith("%offs = arith.add") for line in body)
    assert any(line.startswith("%mask = arith.cmp %offs") and 'predicate = "lt"' in line for line in body)
    assert any(line.startswith("%x = tt.load") and line.endswith(", %mask : tensor<128xf32>") for line in body)
    assert any(line.startswith("tt.store") and line.endswith(", %mask") for line in body)
    assert body[-2:] == ["tt.return", "}"]


def test_constexpr_folding_and_globals():
    @tile.jit
    def k(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK * 2)
        v = offs * (SCALE + FACTOR)
        if BLOCK > 16:
            v = v + 1
        else:
            v = v - 1
        tl.store(out_ptr + offs, v)

    body = lines(ir_of(k, np.zeros(64, np.int32), BLOCK=32))
    assert "%offs = tt.arange {end = 64, start = 0} : tensor<64xi32>" in body
    assert "arith.constant {value = 7} : tensor<64xi32>" in " ".join(body)
    assert not any("scf.if" in line for line in body)  # the constexpr `if` is resolved at compile time
    assert any(line.startswith("%v_1 = arith.add") for line in body)
    assert not any("arith.sub" in line for line in body)


def test_int_one_is_folded_and_divisibility():
    spec, runtime = add_kernel.specialize((f32(), f32(), f32(), 1), {"BLOCK": 16})
    assert [p.name for p in spec.params if p.runtime] == ["x_ptr", "y_ptr", "out_ptr"]
    assert len(runtime) == 3
    text = print_op(add_kernel.build_ir(spec))
    assert "%n" not in text and "arg_names = [\"x_ptr\", \"y_ptr\", \"out_ptr\"]" in text
    spec32, _ = add_kernel.specialize((f32(), f32(), f32(), 32), {"BLOCK": 16})
    assert spec32.params[3].divisibility == 16 and spec32.params[3].runtime


def test_specialization_keys():
    a = np.zeros(8, np.float32)
    assert arg_key(a) == ("ptr", "f32", 16 if a.ctypes.data % 16 == 0 else 1, False)  # False: host memory
    assert arg_key(a[1:]) == ("ptr", "f32", 1, False)  # 4-byte offset: not 16-aligned
    assert arg_key(np.zeros(3, np.float16)) [:2] == ("ptr", "f16")
    assert arg_key(np.zeros(3, np.bool_))[:2] == ("ptr", "i1")
    assert arg_key(1) == ("c", int, 1)
    assert arg_key(1, specialize=False) == ("i32", 1)
    assert arg_key(32) == ("i32", 16)
    assert arg_key(33) == ("i32", 1)
    assert arg_key(-16) == ("i32", 16)
    assert arg_key(2**31) == ("i64", 16)
    assert arg_key(2**63 + 1) == ("u64", 1)
    assert arg_key(2.5) == ("f32", 1)
    assert arg_key(True) == ("i1", 1)
    assert arg_key(np.int64(48)) == ("i32", 16)
    with pytest.raises(TypeError):
        arg_key(object())
    with pytest.raises(ValueError):
        arg_key(2**64)


def test_specialization_of_constexprs_and_types():
    spec1, _ = add_kernel.specialize((f32(), f32(), f32(), 100), {"BLOCK": 1})
    spec2, _ = add_kernel.specialize((f32(), f32(), f32(), 100), {"BLOCK": True})
    assert spec1.key != spec2.key  # 1 == True in Python, but they compile differently
    spec3, _ = add_kernel.specialize((f32(), f32(), f32(), 2**40), {"BLOCK": 16})
    assert spec3.params[3].type == tile.ir.i64
    spec4, _ = add_kernel.specialize((f32(), f32(), f32(), 100), {"BLOCK": 16})
    assert isinstance(spec4, Specialization) and hash(spec4.key) == hash(spec4.key)
    assert "n: i32" in repr(spec4) and "BLOCK=16" in repr(spec4)


def test_jit_function_attributes():
    @tile.jit(do_not_specialize=["n"])
    def k(x_ptr, n, BLOCK: "tl.constexpr", STEPS: tl.constexpr = 2):
        """docstring"""
        pass

    assert isinstance(k, JITFunction)
    assert k.__name__ == "k" and k.__doc__ == "docstring"
    assert k.arg_names == ("x_ptr", "n", "BLOCK", "STEPS")
    assert k.constexpr_names == {"BLOCK", "STEPS"}
    assert k.do_not_specialize == (1,)
    assert "def k(x_ptr, n" in k.src
    spec, runtime = k.specialize((f32(), 1), {"BLOCK": 4})
    assert spec.params[1].runtime and spec.params[1].type == tile.ir.i32  # not folded: do_not_specialize
    assert spec.params[3].value == 2 and runtime[1] == 1


def test_inlining_and_name_hints():
    @tile.jit
    def helper(a, b, SCALE: tl.constexpr):
        return a * SCALE + b, a - b

    @tile.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        p, q = helper(x, x, 2.0)
        tl.store(x_ptr + offs, p + q)

    body = lines(ir_of(k, f32(16), BLOCK=16))
    assert not any("call" in line for line in body)
    assert any(line.startswith("%p = arith.add") for line in body)
    assert any(line.startswith("%q = arith.sub %x, %x") for line in body)
    assert "arith.constant {value = 2.0} : tensor<16xf32>" in " ".join(body)


def test_locations_point_at_user_source():
    spec, _ = add_kernel.specialize((f32(), f32(), f32(), 100), {"BLOCK": 16})
    func = add_kernel.build_ir(spec)
    text = print_op(func, locs=True)
    first_line = add_kernel.fn.__code__.co_firstlineno
    loads = [op for op in func.walk() if op.name == "tt.load"]
    assert [op.loc.line for op in loads] == [first_line + 5, first_line + 6]  # first_line: the decorator
    assert all(op.loc.file == __file__ for op in loads)
    assert loads[0].loc.col == 9  # `tl.load(...)` starts in column 9 of `    x = tl.load(...)`
    assert f'loc("{__file__}":{first_line + 5}:9)' in text


def test_runtime_control_flow_ir():
    @tile.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        count = 0
        for i in range(0, n):
            acc += tl.load(x_ptr + i * BLOCK + offs)
            count += 1
        if n > 4:
            acc = acc * 2
        j = 0
        while j < n:
            j = j + 3
        tl.store(x_ptr + offs, acc + count + j)

    text = ir_of(k, f32(), 7, BLOCK=16)
    body = lines(text)
    assert any(line.startswith("%acc_1, %count = scf.for") and line.endswith(": tensor<16xf32>, i32 {")
               for line in body)
    assert "^bb(%i: i32, %acc_2: tensor<16xf32>, %count_1: i32):" in body
    assert any(line.startswith("%acc_4 = scf.if") for line in body)
    assert any(line.startswith("%j = scf.while") and line.endswith(": i32 {") for line in body)
    assert any(line.startswith("scf.condition") for line in body)


def test_static_range_unrolls_and_negative_step():
    @tile.jit
    def k(x_ptr):
        for i in tl.static_range(3):
            tl.store(x_ptr + i, i * 1.0)
        for j in range(8, 0, -3):
            tl.store(x_ptr + j, 2.0)

    body = lines(ir_of(k, f32()))
    assert sum(line.startswith("tt.store") for line in body) == 4
    assert sum(line.startswith("scf.for") for line in body) == 1
    # range(8, 0, -3) runs upward from 0 to 8 by 3, mapping i' to 8 + 0 - i'
    assert any(line.startswith("%j = arith.add") for line in body)


def test_tl_range_options_recorded():
    @tile.jit
    def k(x_ptr, n):
        for i in tl.range(0, n, 2, num_stages=4):
            tl.store(x_ptr + i, 1.0)

    assert any(line.startswith("scf.for") and "{num_stages = 4}" in line for line in lines(ir_of(k, f32(), 10)))


def test_reduce_with_user_combine_fn_is_inlined():
    @tile.jit
    def my_max(a, b):
        return tl.maximum(a, b)

    @tile.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.store(out_ptr, tl.reduce(x, 0, my_max))

    text = ir_of(k, f32(), f32(), BLOCK=32)
    assert "tt.reduce %x {axis = 0} : f32 {" in text
    assert "tt.reduce.return" in text and "arith.max" in text


def test_dot_emits_zero_accumulator():
    @tile.jit
    def k(a_ptr, b_ptr, c_ptr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))

    text = ir_of(k, np.zeros(256, np.float16), np.zeros(256, np.float16), np.zeros(256, np.float32))
    assert "arith.constant {value = 0.0} : tensor<16x16xf32>" in text
    assert 'tt.dot %a, %b, %' in text and 'input_precision = "tf32"' in text


def test_hints_and_debug_ops():
    @tile.jit
    def k(x_ptr, n):
        offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, 16), 16), 16)
        tl.device_assert(offs < n, "in bounds")
        tl.device_print("offs", offs)
        tl.debug_barrier()
        tl.store(x_ptr + offs, 1.0, cache_modifier=".cg", eviction_policy="evict_last")

    text = ir_of(k, f32(), 64)
    assert "tt.hint %offs_1 {max_constancy = [], max_contiguous = [], multiple_of = [16]}" in text or \
        "multiple_of = [16]" in text
    assert "max_contiguous = [16]" in text
    assert 'tt.assert' in text and 'message = "in bounds"' in text
    assert 'tt.print %offs {hex = false, prefix = "offs"}' in text
    assert "tt.debug_barrier" in text
    assert 'cache = ".cg"' in text and 'eviction = "evict_last"' in text


def test_python_builtins_min_max_print_on_tensors():
    @tile.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, min(BLOCK, 16))
        x = tl.load(x_ptr + offs)
        print("x", x)
        tl.store(x_ptr + offs, max(x, 0.0))

    text = ir_of(k, f32(), BLOCK=64)
    assert "tensor<16xf32>" in text and "arith.max" in text and 'prefix = "x"' in text


def test_build_ir_is_fast():
    spec, _ = add_kernel.specialize((f32(), f32(), f32(), 100), {"BLOCK": 128})
    add_kernel.build_ir(spec)
    batches = []  # this thread's CPU time, best of three batches: another process on the CI's 2 cores does not count
    for _ in range(3):
        start = time.thread_time()
        for _ in range(20):
            add_kernel.build_ir(spec)
        batches.append((time.thread_time() - start) / 20)
    assert min(batches) < 0.01


# ----------------------------------------------------------------------------- launch


class FakeCompiled:
    def __init__(self, func):
        self.func = func
        self.launches: list = []

    def make_entry(self, positions, value_count):
        def entry(grid, values, args, stream):
            self.launches.append((tile.utils.grid3(grid), [args[i] for i in positions]))

        return entry


@pytest.fixture
def fake_compiler(monkeypatch):
    """Replace compile_kernel by one that records launches (and counts compilations)."""
    from tile import compiler

    compiled: list[FakeCompiled] = []

    def compile_kernel(fn, spec, options, target):
        c = FakeCompiled(fn.build_ir(spec))
        compiled.append(c)
        return c

    monkeypatch.setattr(compiler, "compile_kernel", compile_kernel)
    monkeypatch.setattr(compiler, "current_target", lambda: compiler.INTERPRETER)
    return compiled


def test_launch_caches_per_specialization(fake_compiler):
    @tile.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), n * 1.0)

    x = f32()
    k[(2,)](x, 5, BLOCK=16)
    k[(3, 2)](x, 7, BLOCK=16)
    assert len(fake_compiler) == 1
    assert fake_compiler[0].launches == [((2, 1, 1), [x, 5]), ((3, 2, 1), [x, 7])]
    k[(1,)](x, 1, BLOCK=16)  # n == 1: a new specialization without the parameter
    k[(1,)](x, 5, BLOCK=32)
    k[(1,)](x, 5, BLOCK=16, num_warps=8)
    assert len(fake_compiler) == 4
    assert fake_compiler[1].launches == [((1, 1, 1), [x])]
    assert len(k.cache) == 4
    k.run(x, 9, grid=(4,), BLOCK=16)
    assert fake_compiler[0].launches[-1] == ((4, 1, 1), [x, 9])


def test_grid_callable_gets_meta(fake_compiler):
    @tile.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tile.cdiv(meta["n"], meta["BLOCK"]),)

    x = f32()
    k[grid](x, 100, BLOCK=16, num_warps=2)
    assert seen["n"] == 100 and seen["BLOCK"] == 16 and seen["num_warps"] == 2 and seen["num_stages"] == 3
    assert seen["x_ptr"] is x
    assert fake_compiler[0].launches[0][0] == (7, 1, 1)


def test_launch_argument_errors(fake_compiler):
    @tile.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    x = f32()
    with pytest.raises(TypeError, match=r"k\(\) missing tl.constexpr argument 'BLOCK'"):
        k[(1,)](x, 3)
    with pytest.raises(TypeError, match=r"k\(\) missing argument 'n'"):
        k[(1,)](x, BLOCK=4)
    with pytest.raises(TypeError, match=r"k\(\) takes 3 arguments but 4 were given"):
        k[(1,)](x, 3, 4, 5)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'BLOK'"):
        k[(1,)](x, 3, BLOK=4)
    with pytest.raises(TypeError, match="cannot pass"):
        k[(1,)]([1, 2], 3, BLOCK=4)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        k[(1, 1, 1, 1)](x, 3, BLOCK=4)
    with pytest.raises(RuntimeError, match="launch it with"):
        k(x, 3, 4)


def test_warm_launch_overhead(fake_compiler):
    @tile.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)

    x = f32()
    add[(1,)](x, x, x, 100, BLOCK=16)
    fake_compiler[0].launches.clear()
    start = time.thread_time()  # CPU time of this thread: other processes on a loaded machine do not count
    for _ in range(2000):
        add[(1,)](x, x, x, 100, BLOCK=16)
    per_launch = (time.thread_time() - start) / 2000
    assert per_launch < 50e-6, per_launch


def _make_kernel(helper, offset):
    @tile.jit
    def k(x_ptr):
        tl.store(x_ptr, helper(1.0) + offset)

    return k


@tile.jit
def _plus_one(x):
    return x + 1


@tile.jit
def _plus_two(x):
    return x + 2


def test_cache_key_covers_callees_and_constants():
    a, b, c = _make_kernel(_plus_one, 1), _make_kernel(_plus_two, 1), _make_kernel(_plus_one, 2)
    assert len({a.cache_key, b.cache_key, c.cache_key}) == 3
    assert a.cache_key == _make_kernel(_plus_one, 1).cache_key
    assert tl.sum.cache_key != tl.max.cache_key


def test_for_over_compile_time_iterables():
    @tile.jit
    def k(x_ptr):
        for i, v in enumerate((1.0, 2.0)):
            tl.store(x_ptr + i, v)
        for a, b in zip((3, 4), (5.0, 6.0)):
            tl.store(x_ptr + a, b)

    assert sum(line.startswith("tt.store") for line in lines(ir_of(k, f32()))) == 4
