"""tile.profiler: the part of Triton's profiler (proton, `import triton.profiler as proton`)
that Triton programs use to time their kernels, in pure Python.

    import tile.profiler as proton
    session = proton.start("matmul", hook="triton")   # writes matmul.hatchet at finalize
    with proton.scope("torch [M=4096]", {"flops16": 2 * M * N * K}):
        torch.matmul(a, b)
    my_kernel[grid](...)                              # recorded by name, with its launch_metadata
    proton.finalize()

    import tile.profiler.viewer as viewer
    tree, metrics = viewer.parse(["time/ms", "tflop16/s"], "matmul.hatchet")
    viewer.print_tree(tree, metrics)

What is measured, and how it differs from proton: proton reads every GPU kernel's duration
from CUPTI. tile records CUDA events (PyTorch's when torch has CUDA, else cuda-python's) on
the launch stream around each `@tile.jit` launch and around each scope, and the host clock
when kernels run on the interpreter. So a scope's time is the GPU time from its entry to its
exit, idle gaps included, and a kernel launched by other libraries appears only through the
scope around it, not as a node of its own. Metrics of the same node add up over calls
("count" counts them); derived metrics (viewer.py) divide them by the node's time.
"""
from .profile import DEFAULT_PROFILE_NAME, activate, deactivate, finalize, profile, start
from .scope import cpu_timed_scope, enter_scope, exit_scope, scope

__all__ = ["DEFAULT_PROFILE_NAME", "activate", "cpu_timed_scope", "deactivate", "enter_scope", "exit_scope",
           "finalize", "profile", "scope", "start"]
