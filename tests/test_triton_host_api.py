"""Triton's host API on tile: the driver object, warmup / tile.compile and the compiled kernel's
fields, keyword binding of parameters named like launch options, positional launches of
compiled kernels, launch options (num_ctas, maxnreg, cooperative, PDL), the TRITON_* aliases
and knobs, and the autotuner's options. GPU-marked tests check the same on a real device."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.compiler import CompiledKernel
from tile.runtime import driver
from tile.runtime.autotuner import Config, autotune, heuristics, is_tuning_error
from tile.runtime.driver import GPUTarget, InterpreterDriver
from tile.runtime.errors import OutOfResources
from tile.runtime.ptxas import find_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@tile.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        offs = tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        row = tl.load(input_ptr + row_idx * input_row_stride + offs, mask=mask, other=-float("inf"))
        numerator = tl.exp(row - tl.max(row, axis=0))
        tl.store(output_ptr + row_idx * output_row_stride + offs, numerator / tl.sum(numerator, axis=0), mask=mask)


@tile.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + num_warps, mask=mask)


@tile.jit
def axpy_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + 1.0, mask=mask)


@pytest.fixture
def interpret(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_INTERPRET", "1")
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_inputs(rows: int = 37, cols: int = 50) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    return x, np.full_like(x, np.nan)


# ----------------------------------------------------------------------------- driver


def test_interpreter_driver_describes_the_device_it_models(interpret):
    active = driver.active
    assert isinstance(active, InterpreterDriver)
    assert active.get_current_target() == GPUTarget("cuda", 90, 32)
    assert active.get_current_device() == 0 and active.get_current_stream() == 0
    props = active.utils.get_device_properties(None)
    for key in ("multiprocessor_count", "max_num_regs", "max_shared_mem", "warpSize", "sm_clock_rate",
                "mem_clock_rate", "mem_bus_width", "max_threads_per_sm"):
        assert isinstance(props[key], int) and props[key] > 0, key
    assert props["warpSize"] == 32 and props["max_shared_mem"] == 232448
    assert active.get_benchmarker() is tile.testing.do_bench
    buffer = active.get_empty_cache_for_benchmark()
    active.clear_cache(buffer)
    with pytest.raises(ValueError, match="one device, 0"):
        active.set_current_device(1)


def test_driver_set_active_and_reset(interpret):
    custom = InterpreterDriver()
    driver.set_active(custom)
    try:
        assert driver.active is custom
    finally:
        driver.reset_active()
    assert driver.active is not custom and isinstance(driver.active, InterpreterDriver)


def test_interpreter_torch_device_is_the_cpu(interpret):
    torch = pytest.importorskip("torch")
    assert driver.active.get_active_torch_device() == torch.device("cpu")
    assert driver.active.get_device_interface() is torch.cpu


def test_gpu_target_conversions():
    assert GPUTarget.from_ptx_target("sm_90a") == GPUTarget("cuda", 90, 32)
    assert GPUTarget("cuda", 80, 32).ptx_target() == "sm_80" and GPUTarget("cuda", 90, 32).ptx_target() == "sm_90a"
    with pytest.raises(ValueError, match="unknown target 'gfx942'"):
        GPUTarget.from_ptx_target("gfx942")
    with pytest.raises(ValueError, match="CUDA targets only"):
        GPUTarget("hip", 942, 64).ptx_target()


# ----------------------------------------------------------------------------- compiled kernels


def test_warmup_on_the_interpreter_has_triton_fields(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel.warmup(y, x, 50, 50, 37, 50, BLOCK_SIZE=64, num_stages=2, num_warps=8, grid=(1,))
    assert isinstance(kernel, CompiledKernel) and np.isnan(y).all()  # compiled, not launched
    kernel._init_handles()
    meta = kernel.metadata
    assert (meta.name, meta.num_warps, meta.num_stages, meta.num_ctas) == ("softmax_kernel", 8, 3, 1)
    assert meta.target == GPUTarget("cuda", 90, 32) and meta.tile_target == "interpreter"
    assert meta.shared > 0 and meta._asdict()["shared"] == meta.shared
    assert {"tile", "tile-opt", "gpu", "simt", "ptx"} <= set(kernel.asm)
    assert ".target sm_90a" in kernel.asm["ptx"] and kernel.asm["ttgir"] == kernel.asm["gpu"]
    assert kernel.function is None and kernel.module is None
    with pytest.raises(KeyError, match="no 'llir' stage"):
        kernel.asm["llir"]


@needs_ptxas
def test_registers_come_from_ptxas_without_a_gpu(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel.warmup(y, x, 50, 50, 37, 50, BLOCK_SIZE=64, num_stages=2, num_warps=8, grid=(1,))
    assert 0 < kernel.n_regs <= 255 and kernel.n_spills == 0
    assert kernel.n_max_threads == 1024 if kernel.n_regs <= 64 else kernel.n_max_threads < 1024
    assert kernel.asm["cubin"][:4] == b"\x7fELF"


def compile_source(**options):
    src = tile.compiler.ASTSource(
        fn=softmax_kernel,
        signature={"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                   "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr",
                   "num_stages": "constexpr"},
        constexprs={"BLOCK_SIZE": 128, "num_stages": 2},
        attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    return tile.compile(src, target=options.pop("target", "sm_90a"), options=options)


def test_compile_for_sm_90a_without_a_gpu():
    kernel = compile_source(num_warps=2, maxnreg=32)
    assert kernel.target == "sm_90a" and kernel.metadata.tile_target == "sm_90a"
    assert kernel.metadata.num_warps == 2 and kernel.metadata.maxnreg == 32
    assert ".maxntid 64, 1, 1\n.maxnreg 32\n" in kernel.asm["ptx"]
    assert "ld.global.v4" in kernel.asm["ptx"] or "ld.global" in kernel.asm["ptx"]
    assert kernel.spec.key[0] == ("ptr", "f32", 16, True) and kernel.spec.key[2] == ("i32", 1)
    assert kernel.metadata.hash == compile_source(num_warps=2, maxnreg=32).metadata.hash
    assert kernel.metadata.hash != compile_source(num_warps=4).metadata.hash
    with pytest.raises(RuntimeError, match="compiled for sm_90a and no GPU of that target"):
        kernel[(1,)](*([None] * 8))


def test_compile_accepts_triton_targets_and_rejects_bad_input():
    assert compile_source(target=GPUTarget("cuda", 80, 32)).target == "sm_80"
    with pytest.raises(TypeError, match="unknown options enable_fp_fusion"):
        compile_source(enable_fp_fusion=False)
    with pytest.raises(ValueError, match="num_ctas=2"):
        compile_source(num_ctas=2)
    with pytest.raises(ValueError, match="unknown target 'gfx90a'"):
        compile_source(target="gfx90a")
    with pytest.raises(TypeError, match="does not compile IR files"):
        tile.compile("kernel.ttir")
    with pytest.raises(ValueError, match="missing: n_cols, BLOCK_SIZE, num_stages"):
        tile.compile(tile.compiler.ASTSource(softmax_kernel, {n: "i32" for n in softmax_kernel.arg_names[:5]}))
    with pytest.raises(ValueError, match="unknown type 'f32x2' for 'n_rows'"):
        tile.compile(tile.compiler.ASTSource(softmax_kernel, {**{n: "i32" for n in softmax_kernel.arg_names},
                                                              "n_rows": "f32x2"}))


@needs_ptxas
def test_compile_reports_registers_and_spills_from_ptxas():
    kernel = compile_source(num_warps=4)
    assert kernel.n_regs > 0 and kernel.n_spills == 0 and kernel.n_max_threads >= 128


def test_positional_launch_of_a_compiled_kernel(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel.warmup(y, x, 50, 50, 37, 50, BLOCK_SIZE=64, num_stages=2, grid=(1,))
    assert kernel[(4, 1, 1)](y, x, 50, 50, 37, 50, 64, 2) is kernel
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="takes all 8 arguments by position"):
        kernel[(4,)](y, x, 50, 50, 37, 50, 64)
    with pytest.raises(TypeError, match="argument 'BLOCK_SIZE' \\(the constant 128\\) does not fit"):
        kernel[(4,)](y, x, 50, 50, 37, 50, 128, 2)
    with pytest.raises(TypeError, match="argument 'input_ptr' \\(a pointer to f64.*specialized for a pointer to f32"):
        kernel[(4,)](y, x.astype(np.float64), 50, 50, 37, 50, 64, 2)


def test_compiled_kernel_without_divisibility_takes_divisible_ints(interpret):
    x, y = softmax_inputs(40, 48)
    kernel = softmax_kernel.warmup(y, x, 48, 48, 39, 48, BLOCK_SIZE=64, num_stages=2, grid=(1,))
    kernel[(5,)](y, x, 48, 48, 40, 48, 64, 2)  # n_rows: compiled as i32, now divisible by 16
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-6)
    divisible = softmax_kernel.warmup(y, x, 48, 48, 48, 48, BLOCK_SIZE=64, num_stages=2, grid=(1,))
    with pytest.raises(TypeError, match="argument 'n_rows' \\(i32\\) does not fit.*i32 divisible by 16"):
        divisible[(5,)](y, x, 48, 48, 39, 48, 64, 2)


# ----------------------------------------------------------------------------- keyword binding


@pytest.mark.parametrize("launches", [1, 3])  # the first launch binds generally, the later ones fast
def test_keyword_naming_a_parameter_binds_it(interpret, launches):
    x = np.random.default_rng(2).standard_normal(300).astype(np.float32)
    for i in range(launches):
        out = np.full_like(x, np.nan)
        seen = []
        scale_kernel[lambda meta: seen.append(meta) or (tile.cdiv(300, meta["BLOCK"]),)](
            x, out, 300, 2.0, BLOCK=128, num_warps=5 + i)
        np.testing.assert_allclose(out, 2.0 * x.astype(np.float64) + 5 + i, rtol=1e-6, atol=1e-6)
        assert seen[0]["num_warps"] == 5 + i and seen[0]["num_stages"] == 3
    compiled = list(scale_kernel.cache.values())[-1]
    assert compiled.options["num_warps"] == 4  # the launch option kept its default


def test_parameter_named_num_warps_given_twice(interpret):
    x = np.ones(16, np.float32)
    with pytest.raises(TypeError, match="multiple values for argument 'num_warps'"):
        scale_kernel[(1,)](x, x, 16, 1.0, 16, 4, num_warps=4)


def test_warmup_binds_keywords_and_rejects_unknown_ones(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel.warmup(y, x, 50, 50, 37, 50, 64, num_stages=3, num_warps=2, maxnreg=64)
    assert kernel.spec.key[-1] == ("c", int, 3) and kernel.options["num_warps"] == 2
    assert kernel.options["maxnreg"] == 64 and kernel.metadata.maxnreg == 64
    with pytest.raises(TypeError, match="warmup\\(\\) got an unexpected keyword argument 'enable_fp_fusion'"):
        softmax_kernel.warmup(y, x, 50, 50, 37, 50, 64, 2, enable_fp_fusion=False)


def test_run_with_warmup_compiles_without_launching(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel.run(y, x, 50, 50, 37, 50, 64, 2, grid=(4,), warmup=True)
    assert isinstance(kernel, CompiledKernel) and np.isnan(y).all()
    assert softmax_kernel.run(y, x, 50, 50, 37, 50, 64, 2, grid=(4,)) is kernel
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-6)


def test_jit_function_fields(interpret):
    params = softmax_kernel.params
    assert [p.name for p in params] == list(softmax_kernel.arg_names)
    assert [p.is_constexpr for p in params][-2:] == [True, True] and not params[0].is_constexpr
    assert "def softmax_kernel" in softmax_kernel.src and softmax_kernel.fn.__name__ == "softmax_kernel"
    (caches,) = softmax_kernel.device_caches.values()
    assert caches[0] is softmax_kernel.cache and caches[2] == GPUTarget("cuda", 90, 32)


# ----------------------------------------------------------------------------- launch options


def test_num_ctas_other_than_one_is_an_error(interpret):
    x, y = softmax_inputs()
    softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2)
    with pytest.raises(ValueError, match="num_ctas=2, but tile launches one CTA per program"):
        softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, num_ctas=2)


def test_unknown_and_bad_launch_options(interpret):
    x, y = softmax_inputs()
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'enable_fp_fusion'"):
        softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, enable_fp_fusion=False)
    with pytest.raises(TypeError, match="maxnreg must be None or an int from 16 to 255"):
        softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, maxnreg=1000)
    with pytest.raises(TypeError, match="launch_pdl must be True or False"):
        softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, launch_pdl=1)


def test_maxnreg_is_in_the_ptx_and_the_cache_key(interpret):
    x, y = softmax_inputs()
    softmax_kernel.cache.clear()  # as Triton users force a recompilation
    first = softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, maxnreg=40)
    second = softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, maxnreg=64)
    assert first is not second and len(softmax_kernel.cache) == 2
    assert ".maxnreg 40" in first.asm["ptx"] and ".maxnreg 64" in second.asm["ptx"]
    assert ".maxnreg" not in softmax_kernel.warmup(y, x, 50, 50, 37, 50, 64, 2).asm["ptx"]
    assert ".maxnreg 48" in str(tile.dump(softmax_kernel, y, x, 50, 50, 37, 50, 64, 2, stage="ptx", maxnreg=48))


def test_cooperative_and_pdl_launches_on_the_interpreter(interpret):
    x, y = softmax_inputs()
    kernel = softmax_kernel[(4,)](y, x, 50, 50, 37, 50, 64, 2, launch_cooperative_grid=True, launch_pdl=True)
    assert kernel.metadata.launch_cooperative_grid and kernel.metadata.launch_pdl
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-6)


def test_with_maxnreg_needs_the_maxntid_line():
    from tile.compiler import with_maxnreg

    assert with_maxnreg(".entry k()\n.maxntid 128, 1, 1\n{\n}", 32) == ".entry k()\n.maxntid 128, 1, 1\n.maxnreg 32\n{\n}"
    with pytest.raises(ValueError, match="no .maxntid line"):
        with_maxnreg(".entry k()\n{\n}", 32)


# ----------------------------------------------------------------------------- errors, env, knobs


def test_out_of_resources_reads_like_tritons():
    error = OutOfResources(300000, 232448, "shared memory")
    assert str(error) == ("out of resource: shared memory, Required: 300000, Hardware limit: 232448. "
                          "Reducing block sizes or `num_stages` may help.")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.required, copy.limit, copy.name) == (300000, 232448, "shared memory")
    assert tile.OutOfResources is OutOfResources and is_tuning_error(error)


def test_compiled_kernel_over_the_shared_memory_limit(interpret, monkeypatch):
    from tile.runtime.driver import MAX_SHARED_BY_TARGET  # the module (tile.runtime.driver is the object)

    x, y = softmax_inputs()
    kernel = softmax_kernel.warmup(y, x, 50, 50, 37, 50, 64, 2, num_warps=8)
    monkeypatch.setitem(MAX_SHARED_BY_TARGET, "sm_90a", 8)  # after warmup: the GPU stages compile with the limit
    with pytest.raises(OutOfResources, match="out of resource: shared memory, Required: \\d+, Hardware limit: 8"):
        kernel._init_handles()


def test_env_aliases_copy_triton_variables():
    from tile.knobs import ENV_ALIASES, apply_env_aliases

    env = {"TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": "/tmp/a", "TILE_CACHE_DIR": "/tmp/b", "MLIR_ENABLE_DUMP": "1",
           "TRITON_PRINT_AUTOTUNING": "1", "TRITON_ALWAYS_COMPILE": "1"}
    apply_env_aliases(env)
    assert env["TILE_INTERPRET"] == "1" and env["TILE_CACHE_DIR"] == "/tmp/b"  # tile's own wins
    assert env["TILE_DUMP"] == env["TILE_PRINT_AUTOTUNING"] == env["TILE_ALWAYS_COMPILE"] == "1"
    assert set(ENV_ALIASES.values()) == {"TILE_INTERPRET", "TILE_CACHE_DIR", "TILE_PRINT_AUTOTUNING",
                                         "TILE_ALWAYS_COMPILE", "TILE_DUMP"}


def test_triton_variables_reach_a_new_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILE_", "TRITON_"))}
    env.update(TRITON_INTERPRET="1", TRITON_CACHE_DIR=str(tmp_path), PYTHONPATH=REPO)
    code = ("import os, tile; from tile.runtime import driver; "
            "print(os.environ['TILE_INTERPRET'], tile.knobs.cache.dir, type(driver.active).__name__)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", str(tmp_path), "InterpreterDriver"]


def test_dump_switch_prints_every_stage(interpret, monkeypatch, capsys):
    monkeypatch.setenv("TILE_DUMP", "1")
    x, y = softmax_inputs()
    tile.dump(softmax_kernel, y, x, 50, 50, 37, 50, 64, 2, stage="ptx", target="sm_80")
    err = capsys.readouterr().err
    for stage in ("tile", "tile-opt", "gpu", "simt", "ptx"):
        assert f"// -----// tile {stage} of softmax_kernel for sm_80 //----- //" in err


def test_knobs_read_and_write_tiles_variables(monkeypatch, tmp_path):
    for name in ("TILE_INTERPRET", "TILE_PRINT_AUTOTUNING", "TILE_ALWAYS_COMPILE", "TILE_CACHE_DIR"):
        monkeypatch.setenv(name, "")  # restored after the test; the knobs below write these
    assert not tile.knobs.runtime.interpret
    tile.knobs.runtime.interpret = True
    tile.knobs.autotuning.print = True
    tile.knobs.cache.dir = str(tmp_path)
    assert os.environ["TILE_INTERPRET"] == "1" and os.environ["TILE_PRINT_AUTOTUNING"] == "1"
    assert tile.knobs.cache.dir == str(tmp_path) and tile.knobs.runtime.interpret
    tile.knobs.compilation.always_compile = False
    assert os.environ["TILE_ALWAYS_COMPILE"] == "0"
    with pytest.raises(AttributeError, match="no knob group triton.knobs.nvidia"):
        tile.knobs.nvidia
    with pytest.raises(AttributeError, match="no knob triton.knobs.runtime.launch_enter_hook"):
        tile.knobs.runtime.launch_enter_hook


# ----------------------------------------------------------------------------- autotuning


def test_autotune_pre_and_post_hooks_replace_reset_and_restore(interpret):
    events = []

    def pre_hook(kwargs, reset_only=False):
        events.append(("pre", reset_only, kwargs["BLOCK"]))

    def post_hook(kwargs, exception):
        events.append(("post", exception, kwargs["BLOCK"]))

    tuned = autotune([Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], reset_to_zero=["out_ptr"],
                     pre_hook=pre_hook, post_hook=post_hook, do_bench=lambda f, quantiles: f() or [1.0] * 3,
                     cache_results=False)(axpy_kernel)
    x = np.random.default_rng(3).standard_normal(200).astype(np.float32)
    out = np.full_like(x, np.nan)
    tuned[lambda meta: (tile.cdiv(200, meta["BLOCK"]),)](x, out, 200, 3.0)
    assert events == [("pre", False, 64), ("post", None, 64), ("pre", False, 128), ("post", None, 128),
                      ("pre", True, 64)]
    np.testing.assert_allclose(out, 3.0 * x.astype(np.float64) + 1, rtol=1e-6, atol=1e-6)  # not zeroed: the hooks replaced it


def test_config_takes_num_ctas_and_maxnreg():
    config = Config({"BLOCK": 64}, num_warps=8, num_ctas=1, maxnreg=128)
    assert config.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 3, "maxnreg": 128}
    assert str(config) == "BLOCK: 64, num_warps: 8, num_stages: 3, maxnreg: 128"
    assert repr(config) == "Config({'BLOCK': 64}, num_warps=8, num_stages=3, maxnreg=128)"
    assert Config({}, num_ctas=2).all_kwargs()["num_ctas"] == 2
    with pytest.raises(NotImplementedError, match="ir_override"):
        Config({}, ir_override="kernel.ttgir")


def test_autotune_use_cuda_graph_times_with_cuda_graphs(monkeypatch):
    calls = []
    monkeypatch.setattr(tile.testing, "do_bench_cudagraph", lambda f, rep, quantiles: calls.append(rep) or [1.0] * 3)
    tuned = autotune([Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], rep=7,
                     use_cuda_graph=True)(axpy_kernel)
    assert tuned.do_bench(lambda: None, quantiles=(0.5,)) == [1.0] * 3 and calls == [7]


def test_autotune_warmup_compiles_every_config(interpret):
    tuned = autotune([Config({"BLOCK": 64}, num_warps=2), Config({"BLOCK": 128}, num_warps=4)], key=["n"],
                     cache_results=False)(axpy_kernel)
    x = np.ones(100, np.float32)
    kernels = tuned.warmup(x, x, 100, 2.0)
    assert [k.spec.key[4] for k in kernels] == [("c", int, 64), ("c", int, 128)]
    assert all(isinstance(k, CompiledKernel) for k in kernels)


def test_heuristics_over_autotune_on_the_interpreter(interpret):
    tuned = heuristics({"BLOCK": lambda args: 128})(
        autotune([Config({}, num_warps=2), Config({}, num_warps=4)], key=["n"], cache_results=False)(axpy_kernel))
    x = np.random.default_rng(4).standard_normal(300).astype(np.float32)
    out = np.full_like(x, np.nan)
    tuned[(3,)](x, out, 300, -1.0)
    np.testing.assert_allclose(out, -x.astype(np.float64) + 1, rtol=1e-6, atol=1e-6)
    assert isinstance(tuned.warmup(x, out, 300, -1.0), list)


# ----------------------------------------------------------------------------- on a GPU


gpu = pytest.mark.gpu


@pytest.fixture
def on_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))


def device_softmax_inputs(rows: int = 1000, cols: int = 781) -> tuple[np.ndarray, object, object]:
    x = np.random.default_rng(5).standard_normal((rows, cols)).astype(np.float32)
    return x, tile.to_device(x), tile.to_device(np.full_like(x, np.nan))


@gpu
def test_gpu_device_properties(on_gpu):
    from tile.runtime.cuda_driver import get_device

    props = driver.active.utils.get_device_properties(0)
    device = get_device(0)
    assert props["multiprocessor_count"] == device.num_sms and props["warpSize"] == 32
    assert props["max_shared_mem"] == device.max_shared_memory_per_block_optin and props["max_num_regs"] >= 65536
    assert props["sm_clock_rate"] > 0 and props["mem_clock_rate"] > 0 and props["mem_bus_width"] > 0
    assert props["max_threads_per_sm"] >= 1024
    major, minor = device.compute_capability
    assert driver.active.get_current_target() == GPUTarget("cuda", major * 10 + minor, 32)


@gpu
def test_gpu_positional_launch_of_a_compiled_kernel(on_gpu):
    x, dx, dy = device_softmax_inputs()
    kernel = softmax_kernel.warmup(dy, dx, 781, 781, 1000, 781, BLOCK_SIZE=1024, num_stages=4, num_warps=8, grid=(1,))
    kernel._init_handles()
    assert kernel.function is not None and kernel.module is not None and kernel.n_regs > 0
    assert kernel.metadata.tile_target == driver.active.get_current_target().ptx_target()
    props = driver.active.utils.get_device_properties(0)
    occupancy = min(props["max_num_regs"] // (kernel.n_regs * 32 * 8), props["max_shared_mem"] // kernel.metadata.shared)
    kernel[(min(props["multiprocessor_count"] * occupancy, 1000), 1, 1)](dy, dx, 781, 781, 1000, 781, 1024, 4)
    np.testing.assert_allclose(dy.numpy(), softmax_reference(x), rtol=1e-5, atol=1e-6)


@gpu
@pytest.mark.parametrize("option", ["launch_pdl", "launch_cooperative_grid"])
def test_gpu_pdl_and_cooperative_launches(on_gpu, option):
    from tile.runtime.cuda_driver import get_device

    if option == "launch_pdl" and get_device(0).compute_capability < (9, 0):
        pytest.skip("programmatic dependent launch needs sm_90")
    x, dx, dy = device_softmax_inputs()
    kernel = softmax_kernel[(132,)](dy, dx, 781, 781, 1000, 781, 1024, 2, num_warps=8, **{option: True})
    assert getattr(kernel.metadata, option)
    np.testing.assert_allclose(dy.numpy(), softmax_reference(x), rtol=1e-5, atol=1e-6)


@gpu
def test_gpu_maxnreg_is_honoured(on_gpu):
    x, dx, dy = device_softmax_inputs(64, 4096)
    free = softmax_kernel.warmup(dy, dx, 4096, 4096, 64, 4096, BLOCK_SIZE=4096, num_stages=2, num_warps=4)
    capped = softmax_kernel[(64,)](dy, dx, 4096, 4096, 64, 4096, 4096, 2, num_warps=4, maxnreg=32)
    assert free.n_regs > 32 >= capped.n_regs
    np.testing.assert_allclose(dy.numpy(), softmax_reference(x), rtol=1e-5, atol=1e-6)
