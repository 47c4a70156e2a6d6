"""A hypothesis strategy of near-miss kernels: valid programs with one wrong line.

Each `NearMiss` is a module whose kernel loads a few blocks, then misuses one tl op (wrong
shapes, wrong dtypes, a runtime value where a constexpr is required, a non-power-of-two
arange, an axis out of range...) at a known line, among valid filler lines. Compiling it must
raise tile.CompilationError naming that file and line (as the error's own place, or as
the call site through which a tile.language function was reached).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

HEADER = '''import tile
import tile.language as tl


@tile.jit
def kernel(x_ptr, y_ptr, i_ptr, u_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    i = tl.load(i_ptr + offs)
    u = tl.load(u_ptr + offs)
    m = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
'''
HEADER_LINES = HEADER.count("\n")

# Misuses, as lines with {B} = BLOCK and {H} = BLOCK // 2; the error must name one of them.
CASES: dict[str, list[str]] = {
    "shape_mismatch": ["z = x + tl.load(y_ptr + tl.arange(0, {H}))"],
    "arange_not_power_of_two": ["z = tl.arange(0, {B} - 1)"],
    "arange_runtime_bound": ["z = tl.arange(0, n)"],
    "arange_empty": ["z = tl.arange(4, 4)"],
    "zeros_runtime_shape": ["z = tl.zeros((n,), tl.float32)"],
    "full_not_power_of_two": ["z = tl.full(({B} + 1,), 1, tl.int32)"],
    "sum_axis_out_of_range": ["z = tl.sum(x, axis=1)"],
    "cumsum_axis_out_of_range": ["z = tl.cumsum(m, axis=2)"],
    "argmax_runtime_axis": ["z = tl.argmax(x, axis=n)"],
    "xor_sum_of_floats": ["z = tl.xor_sum(x, axis=0)"],
    "bitwise_and_of_floats": ["z = x & y"],
    "shift_by_float": ["z = i << 1.5"],
    "mixed_signedness_floordiv": ["z = i // u"],
    "exp_of_integers": ["z = tl.exp(i)"],
    "sqrt_rn_of_integers": ["z = tl.sqrt_rn(i)"],
    "dot_of_vectors": ["z = tl.dot(x, y)"],
    "dot_k_mismatch": ["z = tl.dot(m, tl.reshape(m, ({H}, 2 * {B})))"],
    "reshape_wrong_numel": ["z = tl.reshape(x, ({B} + 2,))"],
    "permute_wrong_rank": ["z = tl.permute(m, (0,))"],
    "trans_of_1d_with_dims": ["z = tl.trans(x, 1, 0)"],
    "split_last_dim_not_2": ["a, b = tl.split(m)"],
    "join_shape_mismatch": ["z = tl.join(x, tl.load(y_ptr + tl.arange(0, {H})))"],
    "broadcast_incompatible": ["z = tl.broadcast_to(x, ({B} * 2,))"],
    "expand_dims_axis_out_of_range": ["z = tl.expand_dims(x, 3)"],
    "store_to_a_scalar": ["tl.store(n, x)"],
    "load_from_a_scalar": ["z = tl.load(n)"],
    "load_mask_shape": ["z = tl.load(x_ptr + offs, mask=tl.arange(0, {H}) < 3)"],
    "program_id_axis": ["z = tl.program_id(3)"],
    "static_range_runtime": ["for k in tl.static_range(n):", "    x = x + 1"],
    "cast_to_a_number": ["z = x.to(5)"],
    "atomic_on_a_scalar": ["z = tl.atomic_add(n, 1)"],
    "atomic_cas_on_a_scalar": ["z = tl.atomic_cas(n, 1, 2)"],
    "where_shape_mismatch": ["z = tl.where(x > 0, m, tl.load(y_ptr + tl.arange(0, {H})))"],
    "loop_changes_type": ["acc = tl.zeros(({B},), tl.int32)", "for k in range(n):", "    acc = acc + x"],
    "if_branches_disagree": ["z = x", "if n > 3:", "    z = m"],
    "undefined_name": ["z = x + w"],
    "call_non_jit": ["z = len(x)"],
    "keyword_typo": ["z = tl.sum(x, axes=0)"],
    "sort_not_last_dim": ["z = tl.sort(m, dim=0)"],
    "flip_dim_out_of_range": ["z = tl.flip(x, 2)"],
    "topk_k_not_power_of_two": ["z = tl.topk(x, 3)"],
    "atomic_bad_sem": ["z = tl.atomic_add(i_ptr + offs, i, sem=\"bogus\")"],
    "load_bad_cache_modifier": ["z = tl.load(x_ptr + offs, cache_modifier=\".zz\")"],
    "dot_bad_precision": ["z = tl.dot(m, m, input_precision=\"bogus\")"],
    "static_assert_fails": ["tl.static_assert({B} < 8, \"block too small\")"],
    "interleave_shape_mismatch": ["z = tl.interleave(x, tl.load(y_ptr + tl.arange(0, {H})))"],
    "umulhi_of_floats": ["z = tl.umulhi(x, y)"],
    "store_value_shape": ["tl.store(out_ptr + offs, m)"],
    "reshape_runtime_shape": ["z = tl.reshape(x, (n,))"],
}


@dataclass
class NearMiss:
    case: str
    source: str
    lines: tuple[int, ...]  # the wrong statement's lines, 1-based, in the module file
    block: int

    def __str__(self) -> str:
        return f"# near miss {self.case} at lines {self.lines} (BLOCK={self.block})\n{self.source}"


FILLERS = ["t = x * 2", "t = tl.maximum(x, y)", "t = i + 3", "t = tl.sum(m, axis=1)", "t = tl.where(x > y, x, y)"]


@st.composite
def near_misses(draw: Callable[[st.SearchStrategy], Any]) -> NearMiss:
    case = draw(st.sampled_from(sorted(CASES)))
    block = draw(st.sampled_from([16, 32]))
    before = draw(st.lists(st.sampled_from(FILLERS), max_size=3))
    after = draw(st.lists(st.sampled_from(FILLERS), max_size=2))
    bad = [line.format(B=block, H=block // 2) for line in CASES[case]]
    body = before + bad + after + ["tl.store(out_ptr + offs, x)"]
    source = HEADER + "".join(f"    {line}\n" for line in body)
    first = HEADER_LINES + len(before) + 1
    return NearMiss(case, source, tuple(range(first, first + len(bad))), block)
