"""Bad kernels: each gives a CompilationError naming this file, the line and column, the source
line with a caret under the culprit, and what is wrong."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl

GLOBAL_ARRAY = np.zeros(4)
SOURCE = open(__file__).read().splitlines()


def plain_python(x):
    return x + 1


def compile_error(kernel, *args, **constexprs) -> tile.CompilationError:
    spec, _ = kernel.specialize(args, constexprs)
    with pytest.raises(tile.CompilationError) as info:
        kernel.build_ir(spec)
    return info.value


def marked_line(marker: str) -> int:
    return next(i + 1 for i, text in enumerate(SOURCE) if re.search(rf"# {marker}(\s|$)", text))


def check(err: tile.CompilationError, marker: str, at: str, message: str) -> None:
    """`err` points at the line tagged `# <marker>`, column of `at` in it, and says `message`."""
    line = marked_line(marker)
    col = SOURCE[line - 1].index(at) + 1
    text = str(err)
    assert (err.file, err.line, err.col) == (__file__, line, col), text
    assert text.startswith(f"{__file__}:{line}:{col}: "), text
    assert message in err.message, text
    assert f"    {SOURCE[line - 1].rstrip()}\n    {' ' * (col - 1)}^" in text, text


X = np.zeros(64, np.float32)


def test_list_comprehension():
    @tile.jit
    def k(x_ptr):
        y = [i for i in range(3)]  # E1

    check(compile_error(k, X), "E1", "[i for", "list comprehensions are not supported")


def test_lambda():
    @tile.jit
    def k(x_ptr):
        f = lambda v: v + 1  # E2  # noqa: E731

    check(compile_error(k, X), "E2", "lambda", "lambda is not supported")


def test_break_and_continue():
    @tile.jit
    def k(x_ptr, n):
        for i in range(n):
            break  # E3

    check(compile_error(k, X, 5), "E3", "break", "`break` is not supported")

    @tile.jit
    def k2(x_ptr, n):
        for i in range(n):
            continue  # E3b

    check(compile_error(k2, X, 5), "E3b", "continue", "`continue` is not supported")


def test_try_with_global():
    @tile.jit
    def k(x_ptr):
        try:  # E4
            pass
        except Exception:
            pass

    check(compile_error(k, X), "E4", "try", "`try` is not supported")

    @tile.jit
    def k2(x_ptr):
        with open("f"):  # E4b
            pass

    check(compile_error(k2, X), "E4b", "with", "`with` is not supported")

    @tile.jit
    def k3(x_ptr):
        global GLOBAL_ARRAY  # E4c

    check(compile_error(k3, X), "E4c", "global", "`global` is not supported")


def test_yield():
    @tile.jit
    def k(x_ptr):
        yield x_ptr  # E5

    check(compile_error(k, X), "E5", "yield", "`yield` is not supported")


def test_nested_function_closure():
    @tile.jit
    def k(x_ptr, n):
        def helper():  # E6
            return n + 1

    check(compile_error(k, X, 5), "E6", "def helper", "nested functions (closures over runtime values)")


def test_plain_python_function_on_runtime_values():
    @tile.jit
    def k(x_ptr, n):
        y = plain_python(n)  # E7
        z = plain_python(3)  # a compile-time call is fine

    check(compile_error(k, X, 5), "E7", "plain_python(n)",
          "cannot call the plain Python function 'plain_python' on runtime values; decorate it with @tile.jit")


def test_shape_mismatch_names_both_shapes():
    @tile.jit
    def k(x_ptr):
        a = tl.arange(0, 128)
        b = tl.arange(0, 64)
        c = a + b  # E8

    check(compile_error(k, X), "E8", "a + b", "shape mismatch: [128] and [64] cannot be broadcast together")


def test_load_from_non_pointer():
    @tile.jit
    def k(x_ptr, n):
        v = tl.load(n)  # E9

    check(compile_error(k, X, 5), "E9", "tl.load", "tl.load expects a pointer (or a block of pointers), got a "
                                                  "scalar of tl.int32")


def test_arange_not_power_of_two_and_runtime_bounds():
    @tile.jit
    def k(x_ptr):
        offs = tl.arange(0, 100)  # E10

    check(compile_error(k, X), "E10", "tl.arange", "arange's length must be a power of 2, got 100")

    @tile.jit
    def k2(x_ptr, n):
        offs = tl.arange(0, n)  # E10b

    check(compile_error(k2, X, 5), "E10b", "tl.arange", "arange's bounds must be compile-time constants")


def test_undefined_name():
    @tile.jit
    def k(x_ptr):
        y = undefined_thing + 1  # E11  # noqa: F821

    check(compile_error(k, X), "E11", "undefined_thing", "undefined name 'undefined_thing'")


def test_type_errors_in_promotion():
    @tile.jit
    def k(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        y = x // 2  # E12

    check(compile_error(k, X), "E12", "x // 2", "`//` is only defined for integers, got tl.float32")

    @tile.jit
    def k2(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        y = x & 1  # E12b

    check(compile_error(k2, X), "E12b", "x & 1", "bitwise `&` needs integer operands, got tl.float32")

    @tile.jit
    def k3(x_ptr):
        u = tl.arange(0, 16).to(tl.uint32)
        v = u + -1  # E12c

    check(compile_error(k3, X), "E12c", "u + -1", "cannot combine a tl.uint32 value with the negative constant -1")

    @tile.jit
    def k4(x_ptr):
        b = tl.arange(0, 16).to(tl.int8)
        v = b * 300  # E12d

    check(compile_error(k4, X), "E12d", "b * 300", "the constant 300 is out of range for tl.int8")


def test_variable_changes_type_in_loop():
    @tile.jit
    def k(x_ptr, n):
        acc = tl.zeros((16,), tl.int32)
        for i in range(n):  # E13
            acc = acc * 0.5

    check(compile_error(k, X, 5), "E13", "for", "variable 'acc' changes type inside the for loop: "
                                               "tensor<16xi32> before the loop, tensor<16xf32> after an iteration")


def test_variable_defined_in_one_branch():
    @tile.jit
    def k(x_ptr, n):
        if n > 0:
            y = 1.0
        tl.store(x_ptr, y)  # E14

    check(compile_error(k, X, 5), "E14", "y)", "variable 'y' is assigned in only one branch of the `if`")


def test_static_assert_failure():
    @tile.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")  # E15

    check(compile_error(k, X, BLOCK=48), "E15", "tl.static_assert",
          "static_assert failed: BLOCK must be a multiple of 32")

    @tile.jit
    def k2(x_ptr, BLOCK: tl.constexpr):
        assert BLOCK > 64, "too small"  # E15b

    check(compile_error(k2, X, BLOCK=48), "E15b", "assert", "assertion failed: too small")


def test_dot_shape_mismatch():
    @tile.jit
    def k(x_ptr):
        a = tl.zeros((16, 32), tl.float16)
        b = tl.zeros((16, 16), tl.float16)
        c = tl.dot(a, b)  # E16

    check(compile_error(k, X), "E16", "tl.dot", "tl.dot: shapes [16, 32] and [16, 16] do not match")


def test_bad_axis():
    @tile.jit
    def k(x_ptr):
        a = tl.zeros((16, 32), tl.float32)
        s = tl.sum(a, axis=2)  # E17

    err = compile_error(k, X)
    check(err, "E17", "tl.sum", "reduce: axis 2 is out of range for a tensor of rank 2")
    assert "raised inside tile's library at " in str(err) and "standard.py" in str(err)


def test_library_error_names_the_user_line_first():
    @tile.jit
    def k(x_ptr):
        a = tl.load(x_ptr + tl.arange(0, 8))
        tl.store(x_ptr, tl.argmax(a, axis=3))  # E17b

    err = compile_error(k, X)
    check(err, "E17b", "tl.argmax", "axis 3 is out of range for a tensor of rank 1")
    first, library = str(err).splitlines()[0], str(err).splitlines()[3]
    assert "standard.py" not in first
    assert library.startswith("  raised inside tile's library at ") and "standard.py" in library


def test_atomic_cas_refuses_a_tensor_of_another_type():
    @tile.jit
    def k(x_ptr, lock_ptr):
        old = tl.atomic_cas(lock_ptr, tl.load(x_ptr), 1)  # E17c

    locks = np.zeros(1, np.int32)
    check(compile_error(k, X, locks), "E17c", "tl.atomic_cas",
          "tl.atomic_cas: cmp is tl.float32 but the pointer points to tl.int32; convert it first with "
          ".to(tl.int32)")


def test_store_of_uncastable_value():
    @tile.jit
    def k(x_ptr):
        tl.store(x_ptr, x_ptr)  # E18

    check(compile_error(k, X), "E18", "tl.store", "tl.store: cannot store a value of type "
                                                 "tl.pointer_type(tl.float32) with a pointer to tl.float32")


def test_runtime_global_is_rejected():
    @tile.jit
    def k(x_ptr):
        y = GLOBAL_ARRAY  # E19

    check(compile_error(k, X), "E19", "GLOBAL_ARRAY", "cannot read the global 'GLOBAL_ARRAY' (a numpy.ndarray)")


def test_block_condition_in_if():
    @tile.jit
    def k(x_ptr):
        offs = tl.arange(0, 16)
        if offs > 3:  # E20
            tl.store(x_ptr, 1.0)

    check(compile_error(k, X), "E20", "if", "the condition of `if` must be a scalar, got a block of shape [16]")


@tile.jit
def _helper_with_error(a):
    b = tl.arange(0, 32)
    return a + b  # E21-inner


@tile.jit
def _helper_returning_in_loop(a, n):
    for _ in range(n):
        return a  # E22
    return a + 1


def test_error_in_inlined_function_names_both_lines():
    @tile.jit
    def k(x_ptr):
        a = tl.arange(0, 16)
        c = _helper_with_error(a)  # E21

    err = compile_error(k, X)
    check(err, "E21-inner", "a + b", "shape mismatch: [16] and [32]")
    outer = marked_line("E21")
    assert [(s.line, s.col) for s in err.call_sites] == [(outer, SOURCE[outer - 1].index("_helper") + 1)]
    assert f"in a function called from {__file__}:{outer}:" in str(err)


def test_return_inside_loop():
    @tile.jit
    def k(x_ptr, n):
        y = _helper_returning_in_loop(tl.arange(0, 16), n)

    check(compile_error(k, X, 5), "E22", "return", "`return` inside a loop is not supported")


def test_kernel_cannot_return_value_and_item_assignment():
    @tile.jit
    def k(x_ptr):
        return 3  # E23

    check(compile_error(k, X), "E23", "return", "a kernel cannot return a value")

    @tile.jit
    def k2(x_ptr):
        x = tl.arange(0, 16)
        x[0] = 1  # E24

    check(compile_error(k2, X), "E24", "x[0]", "item assignment (`x[i] = ...`) is not supported")


def test_constexpr_parameter_given_runtime_value():
    # As in Triton, a callee's tl.constexpr annotation is not enforced; a runtime value passed
    # there fails where a compile-time constant is needed.
    @tile.jit
    def helper(a, N: tl.constexpr):
        return tl.arange(0, N)  # E25

    @tile.jit
    def k(x_ptr, n):
        y = helper(x_ptr, n)

    check(compile_error(k, X, 5), "E25", "tl.arange(", "arange's bounds must be compile-time constants")


def test_unsupported_tensor_index():
    @tile.jit
    def k(x_ptr):
        x = tl.arange(0, 16)
        y = x[3]  # E26

    check(compile_error(k, X), "E26", "x[3]", "unsupported tensor index 3: only `None` and `:` are supported")


def test_compilation_error_is_an_exception():
    assert issubclass(tile.CompilationError, Exception)
