"""tt.dot lowered to simt IR and PTX, run on tile.emulator against NumPy (float64).

Hand-written gpu IR with the tensor-core layouts of tile.ir.layouts (#mma, #dot_op, swizzled
#shared from shared_for_dot): the mma.sync plan on operands held in registers; ldmatrix
(.trans where the buffer's rows run along the other dimension) for both storage orders of A
and B; the cp.async pipeline (local_view, async_copy with zero fill, commit/wait groups); the
FMA path; and the register-level shape of the lowered code (no redundant address math, words
from ldmatrix fed to mma without repacking). Then end to end from @tile.jit matmul kernels
through the tile and gpu passes: masks and sizes that are not multiples of the tile,
num_stages 1..4, fp16 / bf16 / tf32 / fp32-ieee / int8, compiled for sm_80 (sm_90a takes wgmma:
tests/test_codegen_wgmma.py), and PTX for tile shapes 16..256 that assembles with ptxas (`python tests/test_codegen_dot.py` prints registers and spills of the
big fp16 configurations); on a GPU (marker gpu) the same kernels on the tensor cores. fp16/bf16
inputs are exact (fp32 accumulation), tf32 at its tolerance, int8 exact.
"""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from codegen_util import ARCHS, check_ptx, lower, result, run
from ptxas_util import assemble_ok, needs_ptxas
from tile.codegen.lower import lower_to_simt
from tile.codegen.ptx import emit_ptx
from tile.ir import print_op
from tile.ir.dot_layouts import DotOperandLayout, MmaLayout, fma_operand_layout, shared_for_dot
from tile.ir.gpu_ops import mma_k_width, multi_buffer_layout, stage_layout
from tile.ir.layouts import BlockedLayout, blocked_layout
from tile.opt.gpu_pipeline import gpu_passes
from tile.opt.pass_manager import PassManager
from tile.opt.tile_pipeline import tile_passes

RNG = np.random.default_rng(7)
NP = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "u8": np.uint8, "i32": np.int32, "f64": np.float64}
BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "u8": 1, "f64": 8}


# ------------------------------------------------------------------------------ gpu IR text


class IR:
    """A tt.func body under construction (ops as text lines)."""

    def __init__(self, num_warps: int):
        self.lines: list[str] = []
        self.n = 0
        self.num_warps = num_warps

    def name(self, hint: str) -> str:
        self.n += 1
        return f"%{hint}{self.n}"

    def __call__(self, text: str, hint: str = "v") -> str:
        out = self.name(hint)
        self.lines.append(f"  {out} = {text}")
        return out

    def do(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def const(self, value, t: str) -> str:
        return self(f"arith.constant {{value = {value}}} : {t}", "c")

    def ptrs(self, ptr: str, el: str, shape: tuple[int, int], strides: tuple[int, int], layout) -> str:
        """ptr + i * strides[0] + j * strides[1] over `shape`, in `layout`."""
        rows, cols = shape
        t = lambda s, e: f"tensor<{s[0]}x{s[1]}x{e}, {layout}>"  # noqa: E731
        r = self(f"tt.arange {{end = {rows}, start = 0}} : tensor<{rows}xi32, #slice<dim = 1, parent = {layout}>>")
        c = self(f"tt.arange {{end = {cols}, start = 0}} : tensor<{cols}xi32, #slice<dim = 0, parent = {layout}>>")
        re = self(f"tt.expand_dims {r} {{axis = 1}} : {t((rows, 1), 'i32')}")
        ce = self(f"tt.expand_dims {c} {{axis = 0}} : {t((1, cols), 'i32')}")
        rm = self(f"arith.mul {re}, {self.const(strides[0], t((rows, 1), 'i32'))} : {t((rows, 1), 'i32')}")
        cm = self(f"arith.mul {ce}, {self.const(strides[1], t((1, cols), 'i32'))} : {t((1, cols), 'i32')}")
        off = self(f"arith.add {self(f'tt.broadcast {rm} : ' + t(shape, 'i32'))}, "
                   f"{self(f'tt.broadcast {cm} : ' + t(shape, 'i32'))} : {t(shape, 'i32')}")
        return self(f"tt.addptr {self(f'tt.splat {ptr} : ' + t(shape, f'ptr<{el}>'))}, {off} : "
                    f"{t(shape, f'ptr<{el}>')}", "p")

    def func(self, params: list[tuple[str, str]], shared_bytes: int = 0, target: str = "sm_90a") -> str:
        names = ", ".join(f'"{n}"' for n, _ in params)
        args = ", ".join(f"%{n}: {t}" for n, t in params)
        body = "\n".join(self.lines)
        return (f'tt.func {{arg_names = [{names}], num_warps = {self.num_warps}, shared_bytes = {shared_bytes}, '
                f'sym_name = "dot", target = "{target}", threads_per_warp = 32}} {{\n^bb({args}):\n{body}\n'
                f"  tt.return\n}}")


def tensor(shape, el: str, layout) -> str:
    return f"tensor<{shape[0]}x{shape[1]}x{el}, {layout}>"


def coalesced(shape: tuple[int, int], el: str, contiguous: int, num_warps: int) -> BlockedLayout:
    """A blocked layout with 16-byte vectors along dimension `contiguous`."""
    spt = [1, 1]
    spt[contiguous] = min(shape[contiguous], 16 // BYTES[el])
    return blocked_layout(shape, spt, [contiguous, 1 - contiguous], num_warps)


def strides(shape: tuple[int, int], contiguous: int) -> tuple[int, int]:
    return (shape[1], 1) if contiguous == 1 else (1, shape[0])


def memory(x: np.ndarray, contiguous: int) -> np.ndarray:
    """x laid out in memory with dimension `contiguous` fastest."""
    return np.ascontiguousarray(x if contiguous == 1 else x.T)


def operands(el: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random A (m x k), B (k x n) in `el` (bf16 as its bits in uint16) and an f32/i32 accumulator."""
    if el in ("i8", "u8"):
        lo = -128 if el == "i8" else 0
        a, b = (RNG.integers(lo, lo + 256, s).astype(NP[el]) for s in ((m, k), (k, n)))
        return a, b, RNG.integers(-1000, 1000, (m, n)).astype(np.int32)
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    if el == "bf16":
        a, b = ((x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) for x in (a, b))
    else:
        a, b = a.astype(NP[el]), b.astype(NP[el])
    return a, b, RNG.standard_normal((m, n)).astype(np.float32)


def values(x: np.ndarray, el: str) -> np.ndarray:
    if el == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def tf32(x: np.ndarray) -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32).astype(np.float64)


def check(el: str, precision: str, a, b, c, got: np.ndarray, acc: str = "f32") -> None:
    av, bv = values(a, el), values(b, el)
    if el == "f32" and precision == "tf32":
        av, bv = tf32(av), tf32(bv)
    want = av @ bv + c.astype(np.float64)
    if el in ("i8", "u8"):
        np.testing.assert_array_equal(got, want)
    elif acc == "f16":
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-2)
    else:
        tol = 3e-3 if precision == "tf32" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.sqrt(a.shape[1]))


# ------------------------------------------------------------------------------ mma from registers


def register_dot(m: int, n: int, k: int, el: str, warps: tuple[int, int], precision: str = "tf32",
                 acc: str = "f32") -> str:
    """A, B loaded straight into their #dot_op layouts, C into #mma; D = A @ B + C stored from #mma."""
    mma = MmaLayout(2, warps)
    la, lb = (DotOperandLayout(i, mma, mma_k_width(_dtype(el))) for i in (0, 1))
    ir = IR(warps[0] * warps[1])
    ct = "i32" if el in ("i8", "u8") else acc
    av = ir(f"tt.load {ir.ptrs('%A', el, (m, k), (k, 1), la)} : {tensor((m, k), el, la)}")
    bv = ir(f"tt.load {ir.ptrs('%B', el, (k, n), (n, 1), lb)} : {tensor((k, n), el, lb)}")
    cv = ir(f"tt.load {ir.ptrs('%C', ct, (m, n), (n, 1), mma)} : {tensor((m, n), ct, mma)}")
    dv = ir(f'tt.dot {av}, {bv}, {cv} {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : '
            f"{tensor((m, n), ct, mma)}")
    ir.do(f"tt.store {ir.ptrs('%D', ct, (m, n), (n, 1), mma)}, {dv}")
    return ir.func([("A", f"ptr<{el}>"), ("B", f"ptr<{el}>"), ("C", f"ptr<{ct}>"), ("D", f"ptr<{ct}>")])


def _dtype(el: str):
    from tile.ir.types import parse_type
    return parse_type(el)


def _run_dot(text: str, el: str, m: int, n: int, k: int, precision: str = "tf32", acc: str = "f32",
             a_contig: int = 1, b_contig: int = 1):
    simt = lower(text)
    a, b, c = operands(el, m, n, k)
    if acc == "f16":
        c = c.astype(np.float16)
    out = np.full_like(c, 0x5A if c.dtype == np.int32 else np.nan)
    mach, dev = run(simt, (1,), [memory(a, a_contig), memory(b, b_contig), c, out])
    check(el, precision, a, b, c, result(mach, dev[3], out), acc)
    return simt


@pytest.mark.parametrize("el,precision", [("f16", "tf32"), ("bf16", "tf32"), ("f32", "tf32"), ("f32", "tf32x3"),
                                          ("i8", "tf32"), ("u8", "tf32")])
@pytest.mark.parametrize("m,n,k,warps", [(16, 8, 32, (1, 1)), (64, 32, 64, (2, 2)), (32, 64, 32, (1, 4))])
def test_mma_from_registers(el: str, precision: str, m: int, n: int, k: int, warps: tuple[int, int]) -> None:
    simt = _run_dot(register_dot(m, n, k, el, warps, precision), el, m, n, k, precision)
    ptx = emit_ptx(simt)
    per_warp = (m // 16 // warps[0] or 1) * (n // 8 // warps[1] or 1) * (k // (8 * mma_k_width(_dtype(el))))
    assert ptx.count("mma.sync.aligned") == per_warp * (3 if precision == "tf32x3" else 1)


def test_registers_pack_in_pairs() -> None:
    ptx = emit_ptx(lower(register_dot(16, 8, 16, "bf16", (1, 1))))
    assert ptx.count("mov.b32 %r") >= 6 and "{%rs" in ptx  # mov.b32 %r, {%rs_lo, %rs_hi} per A/B word


def test_mma_with_an_f16_accumulator() -> None:
    _run_dot(register_dot(32, 32, 32, "f16", (2, 1), acc="f16"), "f16", 32, 32, 32, acc="f16")


@needs_ptxas
@pytest.mark.parametrize("el", ["f16", "bf16", "f32", "i8"])
def test_mma_ptx_assembles(el: str) -> None:
    check_ptx(lower(register_dot(64, 64, 32, el, (2, 2))), ARCHS)


# ------------------------------------------------------------------------------ ldmatrix


def shared_dot(m: int, n: int, k: int, el: str, warps: tuple[int, int], a_contig: int, b_contig: int,
               precision: str = "tf32", base: int = 0) -> tuple[str, int]:
    """A and B staged in swizzled shared buffers (shared_for_dot) from byte `base` on, read into
    #dot_op with local_load."""
    num_warps = warps[0] * warps[1]
    mma = MmaLayout(2, warps)
    kw = mma_k_width(_dtype(el))
    ir = IR(num_warps)
    ct = "i32" if el in ("i8", "u8") else "f32"
    offset, loaded = base, []
    for idx, (ptr, shape, contig) in enumerate((("%A", (m, k), a_contig), ("%B", (k, n), b_contig))):
        g = coalesced(shape, el, contig, num_warps)
        x = ir(f"tt.load {ir.ptrs(ptr, el, shape, strides(shape, contig), g)} : {tensor(shape, el, g)}")
        sh = shared_for_dot(shape, BYTES[el], idx, [contig, 1 - contig])
        nbytes = shape[0] * shape[1] * BYTES[el]
        buf = ir(f"gpu.local_alloc {{bytes = {nbytes}, offset = {offset}}} : {tensor(shape, el, sh)}", "buf")
        ir.do(f"gpu.local_store {buf}, {x}")
        offset += (nbytes + 127) // 128 * 128
        loaded.append((buf, shape, DotOperandLayout(idx, mma, kw)))
    ir.do("gpu.barrier")
    fa, fb = (ir(f"gpu.local_load {buf} : {tensor(shape, el, lay)}") for buf, shape, lay in loaded)
    cv = ir(f"tt.load {ir.ptrs('%C', ct, (m, n), (n, 1), mma)} : {tensor((m, n), ct, mma)}")
    dv = ir(f'tt.dot {fa}, {fb}, {cv} {{input_precision = "{precision}", max_num_imprecise_acc = 0}} : '
            f"{tensor((m, n), ct, mma)}")
    ir.do(f"tt.store {ir.ptrs('%D', ct, (m, n), (n, 1), mma)}, {dv}")
    params = [("A", f"ptr<{el}>"), ("B", f"ptr<{el}>"), ("C", f"ptr<{ct}>"), ("D", f"ptr<{ct}>")]
    return ir.func(params, shared_bytes=offset), offset


LDMATRIX_CASES = [  # (el, A contiguous dim, B contiguous dim): 1 = row-major
    ("f16", 1, 1), ("f16", 0, 0), ("f16", 1, 0), ("f16", 0, 1), ("bf16", 1, 1), ("f32", 1, 0), ("f32", 1, 1),
    ("i8", 1, 0), ("i8", 1, 1), ("i8", 0, 1)]


@pytest.mark.parametrize("el,a_contig,b_contig", LDMATRIX_CASES)
def test_dot_from_shared(el: str, a_contig: int, b_contig: int) -> None:
    m, n, k, warps = 64, 64, 64, (2, 2)
    text, _ = shared_dot(m, n, k, el, warps, a_contig, b_contig)
    simt = _run_dot(text, el, m, n, k, a_contig=a_contig, b_contig=b_contig)
    ptx = emit_ptx(simt)
    # ldmatrix reads 16-bit pairs: .trans where the fragment's K runs across the buffer's rows
    # (A stored M-major, B stored N-major); 8-bit operands have no .trans, tf32 needs K-major rows
    a_trans, b_trans = a_contig == 0, b_contig == 1
    fits = {"f16": (True, True), "bf16": (True, True), "f32": (not a_trans, not b_trans),
            "i8": (not a_trans, not b_trans)}[el]
    x4 = ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared")
    x4t = ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared")
    kw = mma_k_width(_dtype(el))
    x4_a, x4_b = m // warps[0] * k // 32 // kw // 4, n // warps[1] * k // 32 // kw // 4  # words per thread / 4
    assert (x4, x4t) == (x4_a * (fits[0] and not a_trans) + x4_b * (fits[1] and not b_trans),
                         x4_a * (fits[0] and a_trans) + x4_b * (fits[1] and b_trans))
    assert "ld.shared" in ptx or all(fits)


@needs_ptxas
@pytest.mark.parametrize("el,a_contig,b_contig", [("f16", 1, 1), ("f16", 0, 0), ("f32", 1, 0), ("i8", 1, 0)])
def test_dot_from_shared_assembles(el: str, a_contig: int, b_contig: int) -> None:
    check_ptx(lower(shared_dot(64, 128, 32, el, (2, 2), a_contig, b_contig)[0]), ARCHS)


def test_unaligned_buffers_are_read_with_ld_shared() -> None:
    text, _ = shared_dot(32, 32, 32, "f16", (2, 1), 1, 1, base=8)
    ptx = emit_ptx(_run_dot(text, "f16", 32, 32, 32))
    assert "ldmatrix" not in ptx and "ld.shared.b32" in ptx


def test_mma_takes_ldmatrix_words_without_repacking() -> None:
    text, _ = shared_dot(64, 64, 32, "f16", (2, 2), 1, 1)
    simt = lower(text)
    names = [op.name for op in simt.walk()]
    assert "simt.unpack" not in names
    # halves loaded one by one go to shared memory in 16-byte words; nothing else is packed
    assert all(use.name == "simt.st_shared" for op in simt.walk() if op.name == "simt.pack" for use in op.result.users())
    mmas = [op for op in simt.walk() if op.name == "simt.mma"]
    assert all(v.owner_op.name == "simt.ldmatrix" for op in mmas for v in op.operands[:6])


def test_ldmatrix_addresses_are_computed_once() -> None:
    """Per-thread swizzled offsets are thread-invariant (hoisted); each ldmatrix adds at most one
    register to the buffer base and takes the rest as an immediate."""
    text, _ = shared_dot(128, 128, 64, "f16", (2, 2), 1, 1)
    ptx = emit_ptx(lower(text))
    loads = [line for line in ptx.splitlines() if "ldmatrix" in line]
    assert len(loads) == 2 * 4 * 4 and sum("+" in line for line in loads) >= len(loads) // 2
    body = ptx[ptx.index("bar.sync"):]
    between = [line.strip().split()[0] for line in body.splitlines() if line.strip() and not line.strip().startswith(
        ("//", "ldmatrix", "mma", "ld.global", "st.global", "mov", "}", "ret", "add.s64", "mul.wide", "bar"))]
    assert set(between) <= {"add.s32"} and len(between) <= 12, between


# ------------------------------------------------------------------------------ pipeline


def pipelined_dot(m: int, n: int, k: int, bk: int, el: str, warps: tuple[int, int], stages: int) -> tuple[str, int]:
    """D = A @ B with a K loop of bk-slices staged through `stages` cp.async buffers (as the
    pipeline pass builds it: prologue of stages - 1 copies, wait / barrier / copy next / dot)."""
    num_warps = warps[0] * warps[1]
    mma = MmaLayout(2, warps)
    kw = mma_k_width(_dtype(el))
    ir = IR(num_warps)
    n_iter = k // bk
    i32 = "i32"
    bufs, views, ptrs, steps, vec = [], [], [], [], []
    offset = 0
    for idx, (ptr, shape, stride) in enumerate((("%A", (m, bk), (k, 1)), ("%B", (bk, n), (n, 1)))):
        g = coalesced(shape, el, 1, num_warps)
        sh = shared_for_dot(shape, BYTES[el], idx, [1, 0])
        nbytes = stages * shape[0] * shape[1] * BYTES[el]
        sh3 = multi_buffer_layout(sh)
        bufs.append(ir(f"gpu.local_alloc {{bytes = {nbytes}, offset = {offset}}} : "
                       f"tensor<{stages}x{shape[0]}x{shape[1]}x{el}, {sh3}>", "buf"))
        views.append((shape, stage_layout(sh3)))
        offset += nbytes
        ptrs.append((ir.ptrs(ptr, el, shape, stride, g), g, shape))
        step = bk * stride[0] if idx == 1 else bk
        steps.append(ir.const(step, tensor(shape, i32, g)))
        vec.append(16 // BYTES[el])
    n_c = ir.const(n_iter, i32)

    def view(i: int, stage: str) -> str:
        shape, lay = views[i]
        return ir(f"gpu.local_view {bufs[i]}, {stage} : {tensor(shape, el, lay)}", "view")

    def copy(i: int, stage: str, p: str, ok: str) -> None:
        _, g, shape = ptrs[i]
        mask = ir(f"tt.splat {ok} : {tensor(shape, 'i1', g)}")
        ir.do(f"gpu.async_copy {view(i, stage)}, {p}, {mask} {{vector = {vec[i]}}}")

    cur = [p for p, _, _ in ptrs]
    for s in range(stages - 1):
        ok = ir(f"arith.cmp {ir.const(s, i32)}, {n_c} {{predicate = \"lt\"}} : i1")
        for i in (0, 1):
            copy(i, ir.const(s, i32), cur[i], ok)
        ir.do("gpu.async_commit")
        cur = [ir(f"tt.addptr {cur[i]}, {steps[i]} : {tensor(ptrs[i][2], f'ptr<{el}>', ptrs[i][1])}")
               for i in (0, 1)]
    acc_t = tensor((m, n), "f32", mma)
    acc0 = ir.const(0.0, acc_t)
    pt = [tensor(ptrs[i][2], f"ptr<{el}>", ptrs[i][1]) for i in (0, 1)]
    loop = ir.name("loop")
    outer = ir.lines
    ir.lines = []
    ir.do(f"gpu.async_wait {{pending = {stages - 2}}}")
    ir.do("gpu.barrier")
    nxt = ir(f"arith.add %i, {ir.const(stages - 1, i32)} : i32")
    ok = ir(f"arith.cmp {nxt}, {n_c} {{predicate = \"lt\"}} : i1")
    wst = ir(f"arith.rem {ir(f'arith.add %st, {ir.const(stages - 1, i32)} : i32')}, {ir.const(stages, i32)} : i32")
    for i, p in enumerate(("%ap", "%bp")):
        copy(i, wst, p, ok)
    ir.do("gpu.async_commit")
    fa, fb = (ir(f"gpu.local_load {view(i, '%st')} : {tensor(views[i][0], el, DotOperandLayout(i, mma, kw))}")
              for i in (0, 1))
    d = ir(f'tt.dot {fa}, {fb}, %acc {{input_precision = "tf32", max_num_imprecise_acc = 0}} : {acc_t}')
    ap, bp = (ir(f"tt.addptr {p}, {steps[i]} : {pt[i]}") for i, p in enumerate(("%ap", "%bp")))
    st = ir(f"arith.rem {ir(f'arith.add %st, {ir.const(1, i32)} : i32')}, {ir.const(stages, i32)} : i32")
    ir.do(f"scf.yield {d}, {ap}, {bp}, {st}")
    body = ir.lines
    ir.lines = outer
    lb, one = ir.const(0, i32), ir.const(1, i32)
    st0 = ir.const(0, i32)
    ir.lines.append(f"  {loop}, {loop}a, {loop}b, {loop}s = scf.for {lb}, {n_c}, {one}, {acc0}, {cur[0]}, {cur[1]}, "
                    f"{st0} : {acc_t}, {pt[0]}, "
                    f"{pt[1]}, i32 {{\n  ^bb(%i: i32, %acc: {acc_t}, %ap: {pt[0]}, %bp: {pt[1]}, %st: i32):\n" +
                    "\n".join("  " + line for line in body) + "\n  }")
    ir.do("gpu.async_wait {pending = 0}")
    ir.do(f"tt.store {ir.ptrs('%D', 'f32', (m, n), (n, 1), mma)}, {loop}")
    return ir.func([("A", f"ptr<{el}>"), ("B", f"ptr<{el}>"), ("D", "ptr<f32>")], shared_bytes=offset), offset


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("el", ["f16", "f32"])
def test_pipelined_dot(stages: int, el: str) -> None:
    m, n, k, bk = 32, 32, 96, 32 if el == "f16" else 16
    text, _ = pipelined_dot(m, n, k, bk, el, (2, 1), stages)
    simt = lower(text)
    ptx = emit_ptx(simt)
    assert ptx.count("cp.async.cg.shared.global") >= 2 and f"cp.async.wait_group {stages - 2};" in ptx
    a, b, _ = operands(el, m, n, k)
    out = np.full((m, n), np.nan, np.float32)
    mach, dev = run(simt, (1,), [a, b, out])
    check(el, "tf32", a, b, np.zeros((m, n)), result(mach, dev[2], out))


def test_pipelined_loop_carries_one_pointer_per_copy() -> None:
    text, _ = pipelined_dot(64, 64, 128, 32, "f16", (2, 2), 3)
    simt = lower(text)
    loop = next(op for op in simt.walk() if op.name == "scf.for")
    carried = [v.type for v in loop.results]
    assert sum(str(t).startswith("ptr") for t in carried) == 2  # constant strides: one base each for A and B


def async_copy_kernel(shape: tuple[int, int], el: str, vector: int, buffer_order: list[int], n_valid: int) -> str:
    """A row-major global tile copied with gpu.async_copy (rows >= n_valid masked off) into a
    buffer of `buffer_order`, then read back with a blocked layout and stored."""
    g = coalesced(shape, el, 1, 4)
    ir = IR(4)
    p = ir.ptrs("%X", el, shape, (shape[1], 1), g)
    sh = shared_for_dot(shape, BYTES[el], 0, buffer_order)
    buf = ir(f"gpu.local_alloc {{bytes = {2 * shape[0] * shape[1] * BYTES[el]}, offset = 0}} : "
             f"tensor<2x{shape[0]}x{shape[1]}x{el}, {multi_buffer_layout(sh)}>", "buf")
    view = ir(f"gpu.local_view {buf}, {ir.const(1, 'i32')} : {tensor(shape, el, stage_layout(multi_buffer_layout(sh)))}")
    rows = ir(f"tt.arange {{end = {shape[0]}, start = 0}} : tensor<{shape[0]}xi32, #slice<dim = 1, parent = {g}>>")
    r2 = ir(f"tt.expand_dims {rows} {{axis = 1}} : {tensor((shape[0], 1), 'i32', g)}")
    ok = ir(f"arith.cmp {r2}, {ir.const(n_valid, tensor((shape[0], 1), 'i32', g))} {{predicate = \"lt\"}} : "
            f"{tensor((shape[0], 1), 'i1', g)}")
    mask = ir(f"tt.broadcast {ok} : {tensor(shape, 'i1', g)}")
    ir.do(f"gpu.async_copy {view}, {p}, {mask} {{vector = {vector}}}")
    ir.do("gpu.async_commit")
    ir.do("gpu.async_wait {pending = 0}")
    ir.do("gpu.barrier")
    x = ir(f"gpu.local_load {view} : {tensor(shape, el, g)}")
    ir.do(f"tt.store {ir.ptrs('%Y', el, shape, (shape[1], 1), g)}, {x}")
    return ir.func([("X", f"ptr<{el}>"), ("Y", f"ptr<{el}>")], shared_bytes=2 * shape[0] * shape[1] * BYTES[el])


@pytest.mark.parametrize("el,vector,order,instr", [("f16", 8, [1, 0], "cp.async.cg.shared.global"),
                                                   ("f16", 4, [1, 0], "cp.async.ca.shared.global"),
                                                   ("f32", 1, [1, 0], "cp.async.ca.shared.global"),
                                                   ("f16", 8, [0, 1], "st.shared.b16")])
def test_async_copy(el: str, vector: int, order: list[int], instr: str) -> None:
    shape = (32, 64)
    simt = lower(async_copy_kernel(shape, el, vector, order, 27))
    ptx = emit_ptx(simt)
    assert instr in ptx and (order == [0, 1] or f"], {vector * BYTES[el]}, %r" in ptx)
    if order == [0, 1]:  # the buffer's rows run along the other dimension: no cp.async, synchronous copies
        assert "cp.async." not in ptx.replace("cp.async.commit_group", "").replace("cp.async.wait_group", "")
    x = RNG.standard_normal(shape).astype(NP[el])
    y = np.full(shape, np.nan, NP[el])
    mach, dev = run(simt, (1,), [x, y])
    got = result(mach, dev[1], y)
    np.testing.assert_array_equal(got[:27], x[:27])
    assert (got[27:] == 0).all()  # masked-off rows are zero-filled
    check_ptx(simt, ("sm_80",))


@needs_ptxas
def test_pipelined_dot_assembles() -> None:
    check_ptx(lower(pipelined_dot(64, 64, 128, 32, "f16", (2, 2), 3)[0]), ARCHS)


# ------------------------------------------------------------------------------ FMA path


@pytest.mark.parametrize("el,acc", [("f32", "f32"), ("f16", "f32"), ("f16", "f16"), ("i8", "i32"), ("f64", "f64")])
def test_fma_dot(el: str, acc: str) -> None:
    m, n, k = 16, 32, 8
    num_warps = 2
    res = blocked_layout((m, n), [2, 2], [1, 0], num_warps)
    la, lb = fma_operand_layout(res, 0, k), fma_operand_layout(res, 1, k)
    ir = IR(num_warps)
    av = ir(f"tt.load {ir.ptrs('%A', el, (m, k), (k, 1), la)} : {tensor((m, k), el, la)}")
    bv = ir(f"tt.load {ir.ptrs('%B', el, (k, n), (n, 1), lb)} : {tensor((k, n), el, lb)}")
    cv = ir(f"tt.load {ir.ptrs('%C', acc, (m, n), (n, 1), res)} : {tensor((m, n), acc, res)}")
    dv = ir(f'tt.dot {av}, {bv}, {cv} {{input_precision = "ieee", max_num_imprecise_acc = 0}} : '
            f"{tensor((m, n), acc, res)}")
    ir.do(f"tt.store {ir.ptrs('%D', acc, (m, n), (n, 1), res)}, {dv}")
    simt = lower(ir.func([("A", f"ptr<{el}>"), ("B", f"ptr<{el}>"), ("C", f"ptr<{acc}>"), ("D", f"ptr<{acc}>")]))
    a, b, _ = operands(el if el != "f64" else "f32", m, n, k)
    a, b = a.astype(NP[el]), b.astype(NP[el])
    c = RNG.integers(-100, 100, (m, n)).astype(NP[acc])
    out = np.zeros_like(c)
    mach, dev = run(simt, (1,), [a, b, c, out])
    got = result(mach, dev[3], out).astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    if acc == "f16":
        np.testing.assert_allclose(got, want, rtol=5e-3, atol=5e-2)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12 if acc in ("i32", "f64") else 1e-6, atol=1e-5)
    assert "mma" not in emit_ptx(simt) and ("fma.rn" in emit_ptx(simt)) == (acc != "i32")


# ------------------------------------------------------------------------------ end to end


@tile.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, ACC: tl.constexpr, PREC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b, input_precision=PREC)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


TL = {"f16": tl.float16, "bf16": tl.bfloat16, "f32": tl.float32, "i8": tl.int8}


def compile_matmul(el: str, shapes: tuple[int, int, int], tiles: tuple[int, int, int], num_warps: int, stages: int,
                   precision: str = "tf32", target: str = "sm_80", arrays=None):
    m, n, k = shapes
    bm, bn, bk = tiles
    if arrays is None:
        a, b, _ = operands(el, m, n, k)
        c = np.full((m, n), 0x5A if el == "i8" else np.nan, np.int32 if el == "i8" else np.float32)
    else:
        a, b, c = arrays
    args = [a, b, c, m, n, k, k, 1, n, 1, n, 1]
    meta = dict(BM=bm, BN=bn, BK=bk, ACC=tl.int32 if el == "i8" else tl.float32, PREC=precision)
    if el == "bf16":  # bf16 bits travel as uint16 arrays; specialize on the bf16 type
        spec, runtime = matmul_kernel.specialize([tile.to_device(a, "bf16"), tile.to_device(b, "bf16")] + args[2:],
                                                 meta)
        runtime = [a, b] + list(runtime[2:])
    else:
        spec, runtime = matmul_kernel.specialize(args, meta)
    func = matmul_kernel.build_ir(spec)
    PassManager(tile_passes()).run(func)
    PassManager(gpu_passes(num_warps, target, num_stages=stages)).run(func)
    gpu_text = print_op(func)
    return lower_to_simt(func), runtime, (a, b, c), gpu_text


E2E = [  # (el, precision, (M, N, K), (BM, BN, BK), num_warps, stages); K % 16 == 0 lets loads vectorize
    ("f16", "tf32", (50, 40, 70), (32, 32, 16), 4, 1),
    ("f16", "tf32", (50, 40, 70), (32, 32, 16), 4, 3),
    ("f16", "tf32", (33, 65, 48), (32, 64, 32), 4, 2),
    ("f16", "tf32", (64, 48, 96), (64, 16, 64), 4, 3),
    ("f16", "tf32", (40, 24, 80), (16, 16, 16), 1, 4),
    ("f16", "tf32", (70, 20, 112), (64, 32, 32), 2, 4),
    ("bf16", "tf32", (24, 40, 64), (32, 32, 32), 4, 3),
    ("f32", "tf32", (40, 30, 48), (32, 32, 32), 4, 3),
    ("f32", "ieee", (20, 36, 21), (16, 32, 16), 4, 2),
    ("i8", "tf32", (40, 50, 96), (32, 32, 64), 4, 3),
]


@pytest.mark.parametrize("el,precision,shapes,tiles,num_warps,stages", E2E)
def test_matmul_end_to_end(el, precision, shapes, tiles, num_warps, stages) -> None:
    simt, runtime, (a, b, c), _ = compile_matmul(el, shapes, tiles, num_warps, stages, precision)
    names = [op.name for op in simt.walk()]
    assert ("simt.mma" in names) == (precision != "ieee")
    assert ("simt.cp_async" in names) == (stages > 1 and shapes[2] % 16 == 0 and precision != "ieee")
    grid = (-(-shapes[0] // tiles[0]), -(-shapes[1] // tiles[1]))
    mach, dev = run(simt, grid, runtime)
    got = result(mach, dev[2], c)
    check(el, precision, a, b, np.zeros(shapes[:2]), got)


GPU_CASES = [  # sizes not multiples of the tiles; K % 16 == 0 pipelines with cp.async, odd K copies synchronously
    ("f16", "tf32", (1000, 1030, 1024), (128, 256, 64), 8, 3),
    ("f16", "tf32", (777, 555, 640), (128, 128, 64), 4, 4),
    ("f16", "tf32", (300, 200, 333), (64, 64, 32), 4, 2),
    ("f16", "tf32", (100, 90, 80), (32, 32, 16), 1, 1),
    ("bf16", "tf32", (515, 260, 512), (128, 64, 32), 4, 3),
    ("f32", "tf32", (260, 130, 320), (64, 64, 32), 4, 3),
    ("f32", "ieee", (70, 50, 90), (32, 32, 16), 4, 2),
    ("i8", "tf32", (300, 260, 384), (128, 128, 64), 4, 3),
]


@pytest.mark.gpu
@pytest.mark.parametrize("el,precision,shapes,tiles,num_warps,stages", GPU_CASES)
def test_matmul_on_gpu(el, precision, shapes, tiles, num_warps, stages) -> None:
    m, n, k = shapes
    a, b, _ = operands(el, m, n, k)
    put = (lambda x: tile.to_device(x, "bf16")) if el == "bf16" else tile.to_device  # noqa: E731
    c = tile.to_device(np.full((m, n), 0x5A if el == "i8" else np.nan, np.int32 if el == "i8" else np.float32))
    grid = (-(-m // tiles[0]), -(-n // tiles[1]))
    matmul_kernel[grid](put(a), put(b), c, m, n, k, k, 1, n, 1, n, 1, BM=tiles[0], BN=tiles[1], BK=tiles[2],
                        ACC=tl.int32 if el == "i8" else tl.float32, PREC=precision, num_warps=num_warps,
                        num_stages=stages)
    check(el, precision, a, b, np.zeros((m, n)), c.numpy())


PTX_SHAPES = [((16, 16, 16), 1, 1), ((64, 64, 32), 4, 3), ((128, 64, 32), 4, 4), ((256, 128, 32), 8, 3),
              ((128, 256, 64), 8, 2)]


@needs_ptxas
@pytest.mark.parametrize("tiles,num_warps,stages", PTX_SHAPES)
@pytest.mark.parametrize("el,precision", [("f16", "tf32"), ("bf16", "tf32"), ("f32", "tf32"), ("i8", "tf32")])
def test_matmul_ptx_assembles(tiles, num_warps, stages, el, precision) -> None:
    if tiles[0] * tiles[1] > 64 * 64 and el != "f16":
        pytest.skip("large tiles: f16 only (ptxas time)")
    arrays = operands(el, 16, 16, 16)[:2] + (np.zeros((16, 16), np.int32 if el == "i8" else np.float32),)
    simt, _, _, _ = compile_matmul(el, (1024, 1024, 1024), tiles, num_warps, stages, precision, arrays=arrays)
    for arch in ("sm_80", "sm_90"):
        info = assemble_ok(emit_ptx(simt, target=arch), arch)
        assert info.spill_stores == 0 or tiles[0] * tiles[1] > 128 * 128


def ptxas_report() -> list[tuple[str, int, int, int, str, int, int, int]]:
    """(tiles, num_warps, stages, arch, registers, spill bytes, shared bytes) of the fp16 matmul configs."""
    rows = []
    for tiles, warps, stages in (((128, 256, 64), 8, 3), ((128, 128, 64), 4, 4)):
        for arch in ("sm_80", "sm_90a"):
            arrays = operands("f16", 16, 16, 16)[:2] + (np.zeros((16, 16), np.float16),)
            simt, _, _, _ = compile_matmul("f16", (4096, 4096, 4096), tiles, warps, stages, target=arch,
                                           arrays=arrays)
            info = assemble_ok(emit_ptx(simt, target=arch), arch)
            rows.append(("x".join(map(str, tiles)), warps, stages, arch, info.registers,
                         info.spill_stores + info.spill_loads, simt.attrs["shared_bytes"]))
    return rows


@needs_ptxas
def test_ptxas_report_has_no_spills_on_sm_90a() -> None:
    for row in ptxas_report():
        assert row[3] != "sm_90a" or row[5] == 0, row


if __name__ == "__main__":
    for r in ptxas_report():
        print("tiles %s  warps %d  stages %d  %-6s  registers %3d  spill bytes %d  shared bytes %d" % r)
