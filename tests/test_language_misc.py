"""The remaining names of triton.language and of the triton module, with Triton's semantics:

map_elementwise (per-element control flow; interpreter, emulator, GPU), early returns
inside `if`, assume (interpreter check, divisibility for the axis analysis), target_info
(answers for the target compiled for), constexpr_function, must_use_result, tl.const
pointers, TRITON_MAX_TENSOR_NUMEL, tl.condition, tl.add/sub/mul with sanitize_overflow,
tl.void / constexpr_type / slice, and the host side: reinterpret / TensorWrapper, MockTensor,
KernelInterface, TritonError / InterpreterError.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import result, run
from test_language import arrays, poison  # noqa: F401  (arrays is a fixture)
from tile.codegen.lower import lower_to_simt
from tile.opt.axis_info import AxisInfoAnalysis
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes

RNG = np.random.default_rng(23)


def tile_ir(kernel, *args, target: str = "sm_90a", stage: str = "tile", **meta) -> str:
    return str(tile.dump(kernel, *args, stage=stage, target=target, **meta))


def line_of(kernel, offset: int) -> int:
    """The line `offset` lines below the decorator of `kernel`."""
    return kernel.fn.__code__.co_firstlineno + offset


def simt_launch(kernel, args: list, meta: dict, num_warps: int = 4) -> tuple:
    """Compile `kernel` for sm_90a, lower it to simt IR and run it on tile.emulator."""
    spec, runtime = kernel.specialize(args, meta)
    func = kernel.build_ir(spec, "sm_90a", {"num_warps": num_warps})
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(num_warps, "sm_90a")).run(func)
    m, dev = run(lower_to_simt(func), (1,), runtime)
    return m, dev, runtime


def simt_out(m, dev, runtime, array: np.ndarray) -> np.ndarray:
    return result(m, dev[next(k for k, a in enumerate(runtime) if a is array)], array)


# ----------------------------------------------------------------------- map_elementwise


@tile.jit
def _compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@tile.jit
def _divmod_pairs(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@tile.jit
def _collatz_steps(x):
    steps = 0
    while x != 1:
        x = tl.where(x % 2 == 0, x // 2, 3 * x + 1)
        steps += 1
    return steps


@tile.jit
def _steps2(a, b):
    return _collatz_steps(a), _collatz_steps(b)


@tile.jit
def _steps4(a, b, c, d):
    return _collatz_steps(a), _collatz_steps(b), _collatz_steps(c), _collatz_steps(d)


@tile.jit
def _selu(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@tile.jit
def map_kernel(X, Y, Z, Q, R, S, F, BLOCK: tl.constexpr, PACK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(Z + offs, tl.map_elementwise(_compare, x, y))
    q, r = tl.map_elementwise(_divmod_pairs, tl.abs(x) + 1, tl.abs(y) + 1, pack=2)
    tl.store(Q + offs, q)
    tl.store(R + offs, r)
    start = tl.abs(x) % 20 + 1
    if PACK == 1:
        steps = tl.map_elementwise(_collatz_steps, start)
    elif PACK == 2:
        steps, = tl.map_elementwise(_steps2, start, pack=2)  # pack values of one result: a 1-tuple
    else:
        steps, = tl.map_elementwise(_steps4, start, pack=4)
    tl.store(S + offs, steps)
    tl.store(F + offs, tl.map_elementwise(_selu, x.to(tl.float32) / 8, 1.5))


def _map_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    x = RNG.integers(-50, 50, n).astype(np.int32)
    y = RNG.integers(-50, 50, n).astype(np.int32)
    y[: n // 4] = x[: n // 4]
    return x, y


def _collatz(v: int) -> int:
    steps = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def _check_map(x, y, z, q, r, s, f) -> None:
    np.testing.assert_array_equal(z, np.sign(x.astype(np.int64) - y))
    a, b = np.abs(x) + 1, np.abs(y) + 1
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
    np.testing.assert_array_equal(s, [_collatz(int(v)) for v in np.abs(x) % 20 + 1])
    xf = x.astype(np.float64) / 8
    np.testing.assert_allclose(f, np.where(xf > 0, xf, 1.5 * np.expm1(xf)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("pack", [1, 4])
def test_map_elementwise(arrays, pack):
    x, y = _map_inputs(128)
    outs = [arrays.put(poison(128, np.int32)) for _ in range(4)] + [arrays.put(poison(128, np.float32))]
    map_kernel[(1,)](arrays.put(x), arrays.put(y), *outs, BLOCK=128, PACK=pack)
    _check_map(x, y, *(arrays.get(o) for o in outs))


@pytest.mark.parametrize("block,warps,pack", [(128, 4, 1), (256, 4, 4), (32, 4, 2), (64, 1, 4)])
def test_map_elementwise_lowering(block, warps, pack):
    """Per-thread registers run the region one group at a time (32 elements on 4 warps: one
    register per thread, so a group of 2 repeats it)."""
    x, y = _map_inputs(block)
    outs = [np.full(block, -7, np.int32) for _ in range(4)] + [np.full(block, np.nan, np.float32)]
    m, dev, runtime = simt_launch(map_kernel, [x, y, *outs], {"BLOCK": block, "PACK": pack}, warps)
    _check_map(x, y, *(simt_out(m, dev, runtime, o) for o in outs))


def test_map_elementwise_ir():
    x = np.zeros(128, np.int32)
    text = tile_ir(map_kernel, x, x, x, x, x, x, np.zeros(128, np.float32), BLOCK=128, PACK=1)
    assert "tt.map_elementwise %x, %y {pack = 1} : tensor<128xi32>" in text
    assert re.search(r"%q, %r = tt.map_elementwise %\w+, %\w+ \{pack = 2\}", text)
    assert "scf.while" in text and "tt.map_elementwise.return" in text


@tile.jit
def _two_values(a, b, c, d):
    return a, b


@tile.jit
def _block_valued(x):
    return tl.zeros([4], tl.int32)


@pytest.mark.parametrize("fn,pack,message", [
    ("not a function", 1, "must be a @tile.jit function"),
    (_two_values, 4, "must return a multiple of 4 values"),
    (_block_valued, 1, "must return scalars, got a block of shape [4]"),
])
def test_map_elementwise_errors(fn, pack, message):
    @tile.jit
    def k(X, FN: tl.constexpr, PACK: tl.constexpr):
        x = tl.load(X + tl.arange(0, 16))
        tl.store(X + tl.arange(0, 16), tl.map_elementwise(FN, x, pack=PACK))

    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        tile_ir(k, np.zeros(16, np.int32), FN=fn, PACK=pack)
    assert e.value.line in (line_of(k, 3), line_of(_two_values, 2), line_of(_block_valued, 2))


# ------------------------------------------------------------------------- early returns


@tile.jit
def _clamp_first(v, lo):
    if v < lo:
        return lo
    return v


@tile.jit
def early_exit_kernel(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    lo = _clamp_first(tl.load(X + pid * BLOCK), 0)
    tl.store(Y + offs, tl.load(X + offs) + lo)


def test_returns_inside_runtime_if(arrays):
    """A helper returning from inside an `if` and a kernel leaving early, as in Triton."""
    x = RNG.integers(-9, 9, 256).astype(np.int32)
    y = arrays.put(np.full(512, -99, np.int32))
    early_exit_kernel[(8,)](arrays.put(x), y, 256, BLOCK=64)
    got = arrays.get(y)
    want = x + np.repeat(np.maximum(x[::64], 0), 64)
    np.testing.assert_array_equal(got[:256], want)
    assert (got[256:] == -99).all()


# ------------------------------------------------------------------------------- assume


@tile.jit(do_not_specialize=["stride"])
def strided_kernel(X, Y, stride, BLOCK: tl.constexpr, ASSUME: tl.constexpr):
    if ASSUME:
        tl.assume(stride % 16 == 0)
        tl.assume(stride > 0)
    offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs) * 2)


def test_assume_gives_divisibility_and_changes_nothing(arrays):
    """`stride` is not specialized, so only the assumption makes pid * stride + arange 16-aligned:
    the accesses then move 4 floats at a time."""
    x = np.zeros(2048, np.float32)
    plain = tile_ir(strided_kernel, x, x, 512, BLOCK=512, ASSUME=False, stage="gpu")
    assumed = tile_ir(strided_kernel, x, x, 512, BLOCK=512, ASSUME=True, stage="gpu")
    assert "vector = 4" in assumed and "vector = 4" not in plain
    data = RNG.standard_normal(2048).astype(np.float32)
    out = arrays.put(poison(2048, np.float32))
    strided_kernel[(4,)](arrays.put(data), out, 512, BLOCK=512, ASSUME=True)
    np.testing.assert_array_equal(arrays.get(out), data * 2)


@tile.jit(do_not_specialize=["s"])
def facts_kernel(X, s, CASE: tl.constexpr):
    if CASE == 0:
        tl.assume(s % 16 == 0)
    elif CASE == 1:
        tl.assume((s & 7) == 0)
    elif CASE == 2:
        tl.assume(s % 24 == 0)
    elif CASE == 3:
        tl.assume((s % 4 == 0) & (s % 32 == 0))
    else:
        tl.assume(s > 0)
    tl.store(X, s)


@pytest.mark.parametrize("case,divisor", [(0, 16), (1, 8), (2, 8), (3, 32), (4, 1)])
def test_assume_facts(case, divisor):
    """x % 16 == 0, x & 7 == 0, x % 24 == 0 (8 divides it), an & of two; n > 0 says nothing here."""
    spec, _ = facts_kernel.specialize((np.zeros(1, np.int32), 5), {"CASE": case})
    func = facts_kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    s = func.regions[0].block.args[1]
    assert AxisInfoAnalysis(func)[s].divisibility == (divisor,)


def test_assume_is_checked_by_the_interpreter(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.zeros(64 * 20, np.float32)
    with pytest.raises(tile.InterpreterError, match="the condition of tl.assume is false") as e:
        strided_kernel[(2,)](x, x.copy(), 20, BLOCK=64, ASSUME=True)
    assert e.value.loc.line == line_of(strided_kernel, 3)


def test_assume_needs_a_boolean():
    @tile.jit
    def k(X, n):
        tl.assume(n)

    with pytest.raises(tile.CompilationError, match="tl.assume needs a boolean condition"):
        tile_ir(k, np.zeros(1, np.int32), 5)


# -------------------------------------------------------------------------- target_info


@tile.jit
def target_kernel(out):
    info = tl.target_info
    hip = info.is_hip() or info.is_hip_cdna3() or info.is_hip_cdna4()
    tl.store(out, int(info.cuda_capability_geq(9, 0)) * 10000 + int(info.is_cuda()) * 1000 + int(hip) * 100 +
             info.current_target().arch)


@pytest.mark.parametrize("target,code", [("sm_80", 1080), ("sm_90a", 11090), ("interpreter", 0)])
def test_target_info_answers_for_the_compiled_target(target, code):
    assert f"arith.constant {{value = {code}}} : i32" in tile_ir(target_kernel, np.zeros(1, np.int32), target=target)


def test_target_info_outside_kernels(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    assert tl.target_info.current_target() == tl.target_info.GPUTarget("interpreter", 0, 1)
    assert not tl.target_info.is_cuda() and not tl.target_info.cuda_capability_geq(8)
    assert tl.target_info.target_of("sm_90a") == ("cuda", 90, 32)


# -------------------------------------------------------------- constexpr_function, must_use


@tile.constexpr_function
def _block_for(n):
    return max(16, tile.next_power_of_2(n))


@tile.jit
def constexpr_fn_kernel(X, N: tl.constexpr):
    BLOCK: tl.constexpr = _block_for(N)
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs, mask=offs < N)


def test_constexpr_function(arrays):
    assert _block_for(5) == 16 and _block_for(tl.constexpr(40)) == 64  # callable on the host too
    out = arrays.put(np.full(40, -1, np.int32))
    constexpr_fn_kernel[(1,)](out, N=40)
    np.testing.assert_array_equal(arrays.get(out), np.arange(40))


def test_constexpr_function_refuses_runtime_values():
    @tile.jit
    def k(X, n):
        tl.store(X, _block_for(n))

    with pytest.raises(tile.CompilationError, match="argument 1 is a runtime value") as e:
        tile_ir(k, np.zeros(1, np.int32), 5)
    assert e.value.line == line_of(k, 2)


def test_constexpr_function_code_is_in_the_cache_key():
    def key_with(fn):
        global _swapped
        _swapped = tile.constexpr_function(fn)
        return tile.jit(_uses_swapped.fn).cache_key

    assert key_with(lambda n: n + 1) != key_with(lambda n: n + 2)


_swapped = tile.constexpr_function(lambda n: n)


@tile.jit
def _uses_swapped(X):
    tl.store(X, _swapped(3))


@tile.must_use_result("it returns the moved pointer")
@tile.jit
def _advanced(p, n):
    return p + n


def test_must_use_result():
    @tile.jit
    def dropped(X):
        _advanced(X, 4)

    @tile.jit
    def used(X):
        tl.store(_advanced(X, 4), 1.0)

    with pytest.raises(tile.CompilationError, match=r"the result of _advanced is not used\. it returns the moved "
                                                    r"pointer") as e:
        tile_ir(dropped, np.zeros(8, np.float32))
    assert e.value.line == line_of(dropped, 2)
    assert "tt.store" in tile_ir(used, np.zeros(8, np.float32))
    plain = tile.jit(used.fn)
    assert tile.must_use_result(plain) is plain and plain._must_use_result is True


# ------------------------------------------------------------------------------ tl.const


@tile.jit
def const_copy_kernel(src: tl.const, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs) + 1)


def test_const_pointer_reads(arrays):
    x = RNG.integers(0, 100, 64).astype(np.int32)
    out = arrays.put(poison(64, np.int32))
    const_copy_kernel[(1,)](arrays.put(x), out, BLOCK=64)
    np.testing.assert_array_equal(arrays.get(out), x + 1)
    assert "%src: ptr<i32, const>" in tile_ir(const_copy_kernel, x, x, BLOCK=64)


@tile.jit
def const_store_kernel(src: tl.const, KIND: tl.constexpr):
    p = src + 1
    if KIND == 0:
        tl.store(p, 3)
    elif KIND == 1:
        tl.atomic_add(p, 1)
    else:
        tl.atomic_cas(p, 0, 1)


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_writing_through_a_const_pointer_is_an_error(kind):
    with pytest.raises(tile.CompilationError, match="cannot write through a pointer to constant data") as e:
        tile_ir(const_store_kernel, np.zeros(4, np.int32), KIND=kind)
    assert e.value.line == line_of(const_store_kernel, 4 + 2 * kind)


def test_const_annotation_needs_a_pointer():
    @tile.jit
    def k(n: tl.const):
        pass

    with pytest.raises(tile.CompilationError, match="annotated tl.const but its argument is a i32"):
        tile_ir(k, 5)


# ------------------------------------------------------------------ TRITON_MAX_TENSOR_NUMEL


def test_max_tensor_numel():
    assert tl.TRITON_MAX_TENSOR_NUMEL == 1048576

    @tile.jit
    def k(X, M: tl.constexpr, N: tl.constexpr):
        z = tl.zeros([M, N], tl.float32)
        tl.store(X + tl.arange(0, 16), tl.sum(tl.sum(z, axis=1), axis=0))

    assert "tensor<1024x1024xf32>" in tile_ir(k, np.zeros(16, np.float32), M=1024, N=1024)
    with pytest.raises(tile.CompilationError, match=re.escape("a block of shape [2048, 1024] has 2097152 elements, "
                                                              "more than TRITON_MAX_TENSOR_NUMEL (1048576)")) as e:
        tile_ir(k, np.zeros(16, np.float32), M=2048, N=1024)
    assert e.value.line == line_of(k, 2)

    @tile.jit
    def wide(X, N: tl.constexpr):
        tl.store(X + tl.arange(0, N), 1.0)

    with pytest.raises(tile.CompilationError, match="end - start must be less than or equal to "
                                                    "TRITON_MAX_TENSOR_NUMEL = 1048576"):
        tile_ir(wide, np.zeros(16, np.float32), N=2**21)


# --------------------------------------------------------------------- condition, overflow


@tile.jit
def countdown_kernel(X, n, DISABLE_LICM: tl.constexpr):
    i = n
    total = 0
    while tl.condition(i > 0, disable_licm=DISABLE_LICM):
        total += n * 3  # loop-invariant
        i -= 1
    tl.store(X, total)


def test_condition_disables_licm(arrays):
    out = arrays.put(np.zeros(1, np.int32))
    countdown_kernel[(1,)](out, 5, DISABLE_LICM=True)
    assert arrays.get(out)[0] == 75
    kept = tile_ir(countdown_kernel, np.zeros(1, np.int32), 5, DISABLE_LICM=True, stage="tile-opt")
    hoisted = tile_ir(countdown_kernel, np.zeros(1, np.int32), 5, DISABLE_LICM=False, stage="tile-opt")
    assert "disable_licm = true" in kept
    assert kept.index("arith.mul") > kept.index("scf.while") and hoisted.index("arith.mul") < hoisted.index("scf.while")


def _overflow_kernel(debug: bool):
    @tile.jit(debug=debug)
    def k(X, Y, SANITIZE: tl.constexpr):
        x = tl.load(X + tl.arange(0, 4))
        tl.store(Y + tl.arange(0, 4), tl.add(x, x, sanitize_overflow=SANITIZE))  # checked add
        tl.store(Y + 4 + tl.arange(0, 4), tl.mul(x, 2, sanitize_overflow=SANITIZE))
        tl.store(Y + 8 + tl.arange(0, 4), tl.sub(x, -(2**31), SANITIZE))

    return k


def test_sanitize_overflow_in_debug_kernels(monkeypatch):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    x = np.array([1, 2, 2**30, 3], np.int32)
    y = np.zeros(12, np.int32)
    x64 = x.astype(np.int64)
    wrapped = np.concatenate([x64 * 2, x64 * 2, x64 + 2**31]).astype(np.int32)
    _overflow_kernel(False)[(1,)](x, y, SANITIZE=True)  # no checks without debug: wraps around
    np.testing.assert_array_equal(y, wrapped)
    checked = _overflow_kernel(True)
    checked[(1,)](x, y, SANITIZE=False)
    np.testing.assert_array_equal(y, wrapped)
    with pytest.raises(tile.InterpreterError, match="int32 overflow detected for operation add") as e:
        checked[(1,)](x, y, SANITIZE=True)
    assert e.value.loc.line == line_of(checked, 3)
    negative = -np.array([1, 2, 3, 4], np.int32)
    checked[(1,)](negative, y, SANITIZE=True)  # x - (-2**31) fits for negative x
    n64 = negative.astype(np.int64)
    np.testing.assert_array_equal(y, np.concatenate([n64 * 2, n64 * 2, n64 + 2**31]))


# ------------------------------------------------------------------------- small names


def test_small_names():
    assert tl.void.is_void() and repr(tl.void) == "tl.void" and not tl.float32.is_void()
    assert tl.constexpr(4).type == tl.constexpr_type(4) and repr(tl.constexpr_type(4)) == "constexpr_type[4]"
    assert tl.pointer_type(tl.float32, const=True).is_const() and not tl.pointer_type(tl.float32).is_const()
    with pytest.raises(tile.CompilationError, match="tl.void is the type of no value"):
        tile_ir(_cast_to_void, np.zeros(1, np.float32))

    @tile.jit
    def k(X):
        x = tl.arange(0, 8)
        tl.store(X + tl.arange(0, 8)[:, None] * 8 + x[tl.slice(None, None, None)][None, :], 1)

    assert "tt.expand_dims" in tile_ir(k, np.zeros(64, np.int32))


@tile.jit
def _cast_to_void(X):
    tl.store(X, tl.load(X).to(tl.void))


# ------------------------------------------------------------------------------ host side


@tile.jit
def bits_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs) >> 23)


def test_reinterpret(arrays):
    x = RNG.standard_normal(64).astype(np.float32)
    base = arrays.put(x)
    as_int = tile.reinterpret(base, tl.int32)
    assert isinstance(as_int, tile.TensorWrapper) and tile.reinterpret(as_int, tl.float32) is base
    out = arrays.put(poison(64, np.int32))
    bits_kernel[(1,)](as_int, out, BLOCK=64)
    np.testing.assert_array_equal(arrays.get(out), x.view(np.int32) >> 23)
    with pytest.raises(TypeError, match="cannot reinterpret a list"):
        tile.reinterpret([1, 2], tl.int32)


def test_mock_tensor_compiles_without_data():
    text = tile_ir(bits_kernel, tile.MockTensor(tl.int32), tile.MockTensor("fp32"), BLOCK=64, stage="ptx")
    assert ".visible .entry bits_kernel" in text
    assert tile.MockTensor.wrap_dtype(3) == 3 and tile.MockTensor(tl.float16, [4, 8]).stride() == (8, 1)


def test_kernel_interface():
    calls = []

    class Twice(tile.KernelInterface):
        def run(self, *args, grid, warmup, **kwargs):
            calls.append((args, grid, warmup))

    k = Twice()
    k[(2,)](1, 2)
    k.warmup(3, grid=(1,))
    assert calls == [((1, 2), (2,), False), ((3,), (1,), True)]
    assert isinstance(bits_kernel, tile.KernelInterface)
    assert isinstance(tile.autotune([tile.Config({})], key=[])(bits_kernel), tile.KernelInterface)


def test_error_hierarchy(monkeypatch):
    assert issubclass(tile.CompilationError, tile.TritonError)
    assert issubclass(tile.InterpreterError, tile.TritonError)
    monkeypatch.setenv("TILE_INTERPRET", "1")
    with pytest.raises(tile.TritonError):
        strided_kernel[(2,)](np.zeros(64 * 20, np.float32), np.zeros(64 * 20, np.float32), 20, BLOCK=64,
                             ASSUME=True)
