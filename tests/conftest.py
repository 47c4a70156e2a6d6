"""Test configuration: GPU tests run only where a CUDA device is found, multi-GPU tests only
where two or more are."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))


def _gpu_available() -> bool:
    try:
        from tile.runtime.cuda_driver import cuda_available
    except ImportError:
        return False
    return cuda_available()


def _gpu_count() -> int:
    try:
        from tile.runtime.cuda_driver import device_count
    except ImportError:
        return 0
    return device_count()


def pytest_configure(config):
    config.addinivalue_line("markers", "multigpu: needs two or more NVIDIA GPUs (skipped when fewer are found)")
    config.addinivalue_line("markers", "emulator: runs the kernel's compiled PTX on tile.emulator (CPU)")
    config.addinivalue_line("markers", "emulate_on(target): the PTX target the emulator param runs (default sm_80)")


def pytest_collection_modifyitems(config, items):
    gpus = _gpu_count() if _gpu_available() else 0
    no_gpu = pytest.mark.skip(reason="no CUDA device found")
    one_gpu = pytest.mark.skip(reason=f"needs two CUDA devices, found {gpus}")
    for item in items:
        if item.get_closest_marker("multigpu") is not None and gpus < 2:
            item.add_marker(one_gpu if gpus else no_gpu)
        elif item.get_closest_marker("gpu") is not None and gpus < 1:
            item.add_marker(no_gpu)


@pytest.fixture
def emulator_target(request) -> str:
    """The PTX target whose code the `arrays` fixture's emulator param runs: sm_80, or the
    target of the closest `emulate_on` mark (a module exercising TMA or wgmma says "sm_90a")."""
    mark = request.node.get_closest_marker("emulate_on")
    return mark.args[0] if mark is not None else "sm_80"


ASSEMBLE_TARGETS = ("sm_80", "sm_90", "sm_90a")


@pytest.fixture(autouse=True, scope="session")
def every_kernel_assembles():
    """Every kernel that a test compiles for the interpreter is also compiled to PTX for sm_80,
    sm_90 and sm_90a and assembled with ptxas (once per specialization), so CI checks the GPU
    code of every test kernel and tutorial without a GPU. A rejection fails the test that
    compiled the kernel, with ptxas' log."""
    from ptxas_util import PTXAS, assemble

    from tile import compiler

    if PTXAS is None:
        yield
        return
    real = compiler.compile_kernel
    seen: set = set()

    def compile_and_assemble(fn, spec, options, target, record_passes=False, until=None):
        kernel = real(fn, spec, options, target, record_passes, until)
        key = (id(fn), spec.key, tuple(sorted(options.items())))
        if target != compiler.INTERPRETER or until is not None or key in seen:
            return kernel
        seen.add(key)
        for arch in ASSEMBLE_TARGETS:
            ptx = real(fn, spec, options, arch, until="ptx").stage("ptx")
            ok, log = assemble(ptx, arch)
            assert ok, f"ptxas rejected the PTX of {fn.__name__} for {arch}:\n{log}"
        return kernel

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiler, "compile_kernel", compile_and_assemble)
        yield
