"""The simt ops of tensor cores and asynchronous copies, on hand-written simt IR: PTX that
assembles for sm_80, sm_90 and sm_90a, and its execution on tile.emulator against the PTX
ISA, transcribed here independently of the emulator and of the lowering:

  * mma.sync m16n8k16 (f16, bf16), m16n8k8 (tf32, operands rounded by cvt.rna), m16n8k32 (s8,
    u8): each thread loads its fragments as the ISA's "Matrix Fragments" sections place them;
  * ldmatrix x1 / x2 / x4 with and without .trans;
  * cp.async of 4, 8 and 16 bytes with a source size (zero fill), predication, commit and
    wait groups, and the emulator's detection of missing waits and barriers.
"""
from __future__ import annotations

import numpy as np
import pytest

from codegen_util import ARCHS, check_ptx, result, run
from tile.emulator import EmulatorError
from tile.emulator.memory import UNWRITTEN_SHARED_BYTE
from tile.codegen.ptx import emit_ptx
from tile.ir import parse_op, verify

RNG = np.random.default_rng(11)


def simt_func(name: str, params: list[tuple[str, str]], body: str, num_warps: int = 1, shared_bytes: int = 0):
    names = ", ".join(f'"{n}"' for n, _ in params)
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    text = (f'simt.func {{arg_names = [{names}], num_warps = {num_warps}, shared_bytes = {shared_bytes}, '
            f'sym_name = "{name}", target = "sm_90a"}} {{\n^bb({args}):\n  %tid = simt.tid : i32\n'
            f'  %true = arith.constant {{value = true}} : i1\n{body.strip(chr(10))}\n  simt.return\n}}')
    f = parse_op(text)
    verify(f)
    return f


# ------------------------------------------------------------------------------ mma


def isa_fragments(atype: str) -> tuple[list, list, list]:
    """(A, B, C): for each fragment element i, a function lane -> (row, col), as the PTX ISA states."""
    def gt(lane):
        return lane >> 2, lane % 4
    if atype in ("f16", "bf16"):
        a = [lambda l, i=i: (gt(l)[0] + (0 if i in (0, 1, 4, 5) else 8), gt(l)[1] * 2 + (i & 1) + (8 if i >= 4 else 0))
             for i in range(8)]
        b = [lambda l, i=i: (gt(l)[1] * 2 + (i & 1) + (8 if i >= 2 else 0), gt(l)[0]) for i in range(4)]
    elif atype == "tf32":
        a = [lambda l, i=i: (gt(l)[0] + (8 if i in (1, 3) else 0), gt(l)[1] + (4 if i >= 2 else 0)) for i in range(4)]
        b = [lambda l, i=i: (gt(l)[1] + (4 if i == 1 else 0), gt(l)[0]) for i in range(2)]
    else:
        a = [lambda l, i=i: (gt(l)[0] + (0 if i < 4 or 8 <= i < 12 else 8), gt(l)[1] * 4 + (i & 3) + (16 if i >= 8 else 0))
             for i in range(16)]
        b = [lambda l, i=i: (gt(l)[1] * 4 + (i & 3) + (16 if i >= 4 else 0), gt(l)[0]) for i in range(8)]
    c = [lambda l, i=i: (gt(l)[0] + (8 if i >= 2 else 0), gt(l)[1] * 2 + (i & 1)) for i in range(4)]
    return a, b, c


def _bits16(x: np.ndarray, atype: str) -> np.ndarray:
    if atype == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint32)  # bf16: exact inputs


def _operands(atype: str):
    k = {"f16": 16, "bf16": 16, "tf32": 8, "s8": 32, "u8": 32}[atype]
    if atype in ("s8", "u8"):
        lo = -128 if atype == "s8" else 0
        a = RNG.integers(lo, lo + 256, (16, k))
        b = RNG.integers(lo, lo + 256, (k, 8))
        c = RNG.integers(-2 ** 20, 2 ** 20, (16, 8))
    else:
        a = RNG.standard_normal((16, k))
        b = RNG.standard_normal((k, 8))
        c = RNG.standard_normal((16, 8))
        if atype != "tf32":  # values exact in the 16-bit format
            a = np.round(a * 64) / 64
            b = np.round(b * 64) / 64
    return a, b, c


def _pack_fragments(x: np.ndarray, frag: list, atype: str, regs: int) -> np.ndarray:
    """Per lane, the `regs` 32-bit words of the fragment (element i in word i // kw, lowest first)."""
    kw = len(frag) // regs
    words = np.zeros((32, regs), dtype=np.uint32)
    for lane in range(32):
        for i, f in enumerate(frag):
            v = x[f(lane)]
            if atype == "tf32":
                bits = int(np.float32(v).view(np.uint32))
            elif atype in ("s8", "u8"):
                bits = int(v) & 0xFF
            else:
                bits = int(_bits16(np.array([v]), atype)[0])
            words[lane, i // kw] |= np.uint32(bits << (32 // kw * (i % kw)))
    return words


def _tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: to nearest, ties away from zero, 10 mantissa bits."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("atype", ["f16", "bf16", "tf32", "s8", "u8"])
def test_mma(atype: str) -> None:
    a, b, c = _operands(atype)
    fa, fb, fc = isa_fragments(atype)
    acc = "i32" if atype in ("s8", "u8") else "f32"
    wa = _pack_fragments(a, fa, atype, 4)
    wb = _pack_fragments(b, fb, atype, 2)
    cw = np.array([[c[f(lane)] for f in fc] for lane in range(32)], dtype=np.int32 if acc == "i32" else np.float32)
    if atype == "tf32":  # A and B arrive as f32 and are rounded in the kernel
        wa, wb = wa.view(np.float32), wb.view(np.float32)
        load_t = "f32"
        cvt = "\n".join(f"  %{x}{i} = simt.tf32 %{x}f{i} : i32" for x, n in (("a", 4), ("b", 2)) for i in range(n))
    else:
        load_t, cvt = "i32", ""
    names = lambda x, n, s="": ", ".join(f"%{x}{s}{i}" for i in range(n))  # noqa: E731
    sfx = "f" if cvt else ""
    body = f"""
  %pa = simt.addptr %A, %tid {{scale = 16}} : ptr<{load_t}>
  %pb = simt.addptr %B, %tid {{scale = 8}} : ptr<{load_t}>
  %pc = simt.addptr %C, %tid {{scale = 16}} : ptr<{acc}>
  %pd = simt.addptr %D, %tid {{scale = 16}} : ptr<{acc}>
  {names("a", 4, sfx)} = simt.ld_global %pa, %true {{offset = 0, vector = 4}} : {", ".join([load_t] * 4)}
  {names("b", 2, sfx)} = simt.ld_global %pb, %true {{offset = 0, vector = 2}} : {load_t}, {load_t}
  {names("c", 4)} = simt.ld_global %pc, %true {{offset = 0, vector = 4}} : {", ".join([acc] * 4)}
{cvt}
  {names("d", 4)} = simt.mma {names("a", 4)}, {names("b", 2)}, {names("c", 4)} {{atype = "{atype}"}} : {", ".join([acc] * 4)}
  simt.st_global %pd, %true, {names("d", 4)} {{offset = 0, vector = 4}}"""
    params = [("A", f"ptr<{load_t}>"), ("B", f"ptr<{load_t}>"), ("C", f"ptr<{acc}>"), ("D", f"ptr<{acc}>")]
    f = simt_func("mma", params, body)
    check_ptx(f)
    ptx = emit_ptx(f)
    shape = {"f16": "m16n8k16", "bf16": "m16n8k16", "tf32": "m16n8k8", "s8": "m16n8k32", "u8": "m16n8k32"}[atype]
    assert f"mma.sync.aligned.{shape}.row.col" in ptx and ("cvt.rna.tf32.f32" in ptx) == (atype == "tf32")
    out = np.full_like(cw, np.nan if acc == "f32" else 0x5A5A5A5A)
    m, dev = run(f, (1,), [wa.view(np.int32) if load_t == "i32" else wa, wb.view(np.int32) if load_t == "i32" else wb,
                           cw, out])
    d = result(m, dev[3], out)
    got = np.zeros((16, 8))
    for lane in range(32):
        for j, fn in enumerate(fc):
            got[fn(lane)] = d[lane, j]
    if atype == "tf32":
        a, b = _tf32(a), _tf32(b)
    want = a @ b + c
    if acc == "i32":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-5)


def test_tf32_rounds_to_nearest_ties_away() -> None:
    vals = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 1 + 2 ** -12, np.inf, 3.0e38], np.float32)
    body = """
  %p = simt.addptr %x, %tid {scale = 4} : ptr<f32>
  %q = simt.addptr %y, %tid {scale = 4} : ptr<i32>
  %v = simt.ld_global %p, %true {offset = 0, vector = 1} : f32
  %r = simt.tf32 %v : i32
  simt.st_global %q, %true, %r {offset = 0, vector = 1}"""
    f = simt_func("tf32", [("x", "ptr<f32>"), ("y", "ptr<i32>")], body)
    check_ptx(f)
    x = np.resize(vals, 32).astype(np.float32)
    m, dev = run(f, (1,), [x, np.zeros(32, np.int32)])
    got = result(m, dev[1], np.zeros(32, np.int32)).view(np.float32)[:len(vals)]
    np.testing.assert_array_equal(got, [1 + 2 ** -10, 1 + 2 ** -9, -(1 + 2 ** -10), 1.0, np.inf, _tf32(vals[5:])[0]])


# ------------------------------------------------------------------------------ ldmatrix


# %a2: the row of matrix tid / 8, row tid % 8, at 256 bytes per matrix and 32 per row
MATRIX_ROW_ADDRESS = """  %c3 = arith.constant {value = 3} : i32
  %c7 = arith.constant {value = 7} : i32
  %i = arith.shr %tid, %c3 : i32
  %r = arith.and %tid, %c7 : i32
  %c256 = arith.constant {value = 256} : i32
  %c32 = arith.constant {value = 32} : i32
  %ioff = arith.mul %i, %c256 : i32
  %roff = arith.mul %r, %c32 : i32
  %a1 = arith.add %base, %ioff : i32
  %a2 = arith.add %a1, %roff : i32"""


def _ldmatrix_kernel(num: int, trans: bool, offset: int):
    stores = "\n".join(f"  %v{j} = simt.ld_global %p, %true {{offset = {128 * j}, vector = 1}} : i32\n"
                       f"  simt.st_shared %sa, %true, %v{j} {{offset = {128 * j}, vector = 1}}" for j in range(8))
    words = ", ".join(f"%w{i}" for i in range(num))
    body = f"""
  %base = simt.smem_addr {{offset = 0}} : i32
  %c4 = arith.constant {{value = 4}} : i32
  %t4 = arith.mul %tid, %c4 : i32
  %sa = arith.add %base, %t4 : i32
  %p = simt.addptr %inp, %tid {{scale = 4}} : ptr<i32>
{stores}
  simt.barrier
{MATRIX_ROW_ADDRESS}
  {words} = simt.ldmatrix %a2 {{num = {num}, offset = {offset}, trans = {str(trans).lower()}}} : {", ".join(["i32"] * num)}
  %po = simt.addptr %out, %tid {{scale = {4 * num}}} : ptr<i32>
  simt.st_global %po, %true, {words} {{offset = 0, vector = {num}}}"""
    return simt_func("ldm", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body, shared_bytes=1024)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num: int, trans: bool) -> None:
    f = _ldmatrix_kernel(num, trans, 16)
    check_ptx(f)
    assert f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16" in emit_ptx(f)
    inp = RNG.integers(-2 ** 31, 2 ** 31, 256).astype(np.int32)
    out = np.full((32, num), 0x5A5A5A5A, np.int32)
    m, dev = run(f, (1,), [inp, out])
    got = result(m, dev[1], out).view(np.uint32)
    smem = inp.view(np.uint16)
    for lane in range(32):
        for i in range(num):
            row = lambda r: smem[(i * 256 + r * 32 + 16) // 2:][:8]  # noqa: E731  8 halves of row r, matrix i
            if trans:
                lo, hi = row(2 * (lane % 4))[lane // 4], row(2 * (lane % 4) + 1)[lane // 4]
            else:
                lo, hi = row(lane // 4)[2 * (lane % 4)], row(lane // 4)[2 * (lane % 4) + 1]
            assert got[lane, i] == int(lo) | int(hi) << 16


def test_ldmatrix_rows_must_be_aligned() -> None:
    f = _ldmatrix_kernel(4, False, 8)
    with pytest.raises(EmulatorError, match="16-byte aligned"):
        run(f, (1,), [np.zeros(256, np.int32), np.zeros((32, 4), np.int32)])


def _stmatrix_kernel(num: int, offset: int):
    """Lane l stores words inp[num * l + i] with stmatrix (row r of matrix i at offset + 256 i +
    32 r), then every lane copies 8 words of the buffer out."""
    loads = "\n".join(f"  %w{i} = simt.ld_global %p, %true {{offset = {4 * i}, vector = 1}} : i32" for i in range(num))
    copies = "\n".join(f"  %v{j} = simt.ld_shared %sa, %true {{offset = {128 * j}, vector = 1}} : i32\n"
                        f"  simt.st_global %po, %true, %v{j} {{offset = {128 * j}, vector = 1}}" for j in range(8))
    words = ", ".join(f"%w{i}" for i in range(num))
    body = f"""
  %base = simt.smem_addr {{offset = 0}} : i32
  %p = simt.addptr %inp, %tid {{scale = {4 * num}}} : ptr<i32>
{loads}
{MATRIX_ROW_ADDRESS}
  simt.stmatrix %a2, {words} {{num = {num}, offset = {offset}}}
  simt.barrier
  %c4 = arith.constant {{value = 4}} : i32
  %t4 = arith.mul %tid, %c4 : i32
  %sa = arith.add %base, %t4 : i32
  %po = simt.addptr %out, %tid {{scale = 4}} : ptr<i32>
{copies}"""
    return simt_func("stm", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body, shared_bytes=1024)


@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix(num: int) -> None:
    """stmatrix writes lane l's word i to row l / 4, columns 2 (l % 4) + {0, 1} of matrix i."""
    f = _stmatrix_kernel(num, 16)
    check_ptx(f, ("sm_90", "sm_90a"))
    assert f"stmatrix.sync.aligned.m8n8.x{num}.shared.b16" in emit_ptx(f)
    inp = RNG.integers(-2 ** 31, 2 ** 31, 32 * num).astype(np.int32)
    out = np.zeros(256, np.int32)
    m, dev = run(f, (1,), [inp, out])
    smem = result(m, dev[1], out).view(np.uint16)
    words = inp.view(np.uint32).reshape(32, num)
    for lane in range(32):
        for i in range(num):
            at = (16 + 256 * i + 32 * (lane // 4)) // 2 + 2 * (lane % 4)  # in halves
            assert int(smem[at]) | int(smem[at + 1]) << 16 == words[lane, i]


def test_stmatrix_rows_must_be_aligned() -> None:
    f = _stmatrix_kernel(4, 8)
    with pytest.raises(EmulatorError, match="16-byte aligned"):
        run(f, (1,), [np.zeros(128, np.int32), np.zeros(256, np.int32)])


# ------------------------------------------------------------------------------ cp.async


def _cp_async_body(nbytes: int, size: str, wait: str, pred: str = "%true", read_shift: int = 0) -> str:
    words = nbytes // 4
    vals = ", ".join(f"%v{i}" for i in range(words))
    return f"""
  %base = simt.smem_addr {{offset = 0}} : i32
  %cb = arith.constant {{value = {nbytes}}} : i32
  %toff = arith.mul %tid, %cb : i32
  %dst = arith.add %base, %toff : i32
  %src = simt.addptr %inp, %tid {{scale = {nbytes}}} : ptr<i32>
  %c17 = arith.constant {{value = 17}} : i32
  %tmod = arith.rem %tid, %c17 : i32
  %cn = arith.constant {{value = {nbytes}}} : i32
  %size = arith.min %tmod, %cn : i32
  %c1 = arith.constant {{value = 1}} : i32
  %odd = arith.and %tid, %c1 : i32
  %c0 = arith.constant {{value = 0}} : i32
  %even = arith.cmp %odd, %c0 {{predicate = "eq"}} : i1
  simt.cp_async %dst, %src, {size}, {pred} {{bytes = {nbytes}, offset = 0, src_offset = 0}}
  simt.cp_async_commit
{wait}
  %cs = arith.constant {{value = {read_shift * nbytes}}} : i32
  %rd = arith.add %dst, %cs : i32
  {vals} = simt.ld_shared %rd, %true {{offset = 0, vector = {words}}} : {", ".join(["i32"] * words)}
  %po = simt.addptr %out, %tid {{scale = {nbytes}}} : ptr<i32>
  simt.st_global %po, %true, {vals} {{offset = 0, vector = {words}}}"""


@pytest.mark.parametrize("nbytes", [4, 8, 16])
@pytest.mark.parametrize("sized,predicated", [(True, False), (False, True), (False, False)])
def test_cp_async_zero_fill_and_predication(nbytes: int, sized: bool, predicated: bool) -> None:
    body = _cp_async_body(nbytes, "%size" if sized else "%cn", "  simt.cp_async_wait {pending = 0}\n  simt.barrier",
                          "%even" if predicated else "%true")
    f = simt_func("cp", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body, num_warps=2, shared_bytes=64 * nbytes)
    check_ptx(f)
    ptx = emit_ptx(f)
    assert f"cp.async.{'cg' if nbytes == 16 else 'ca'}.shared.global" in ptx
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 0;" in ptx
    inp = RNG.integers(1, 2 ** 31, 64 * nbytes // 4).astype(np.int32)
    out = np.full((64, nbytes // 4), 0x5A5A5A5A, np.int32)
    m, dev = run(f, (1,), [inp, out])
    got = result(m, dev[1], out).view(np.uint8).reshape(64, nbytes)
    src = inp.view(np.uint8).reshape(64, nbytes)
    for t in range(64):
        if predicated and t % 2:
            assert (got[t] == UNWRITTEN_SHARED_BYTE).all()  # the predicated-off copy wrote nothing
            continue
        n = min(t % 17, nbytes) if sized else nbytes
        np.testing.assert_array_equal(got[t, :n], src[t, :n])
        assert (got[t, n:] == 0).all()


def test_reading_before_the_wait_is_a_race() -> None:
    f = simt_func("cp", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], _cp_async_body(16, "%cn", ""),
                  shared_bytes=512)
    with pytest.raises(EmulatorError, match="before the cp.async.wait_group"):
        run(f, (1,), [np.ones(128, np.int32), np.zeros(128, np.int32)])


def test_reading_another_threads_copy_needs_a_barrier() -> None:
    body = _cp_async_body(16, "%cn", "  simt.cp_async_wait {pending = 0}", read_shift=1)
    f = simt_func("cp", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body, shared_bytes=1024)
    with pytest.raises(EmulatorError, match="shared-memory race"):
        run(f, (1,), [np.ones(128, np.int32), np.zeros(128, np.int32)])


def test_wait_group_retires_the_oldest_groups() -> None:
    body = """
  %base = simt.smem_addr {offset = 0} : i32
  %c16 = arith.constant {value = 16} : i32
  %toff = arith.mul %tid, %c16 : i32
  %dst = arith.add %base, %toff : i32
  %src = simt.addptr %inp, %tid {scale = 16} : ptr<i32>
  simt.cp_async %dst, %src, %c16, %true {bytes = 16, offset = 0, src_offset = 0}
  simt.cp_async_commit
  simt.cp_async %dst, %src, %c16, %true {bytes = 16, offset = 512, src_offset = 512}
  simt.cp_async_commit
  simt.cp_async_wait {pending = 1}
  %v = simt.ld_shared %dst, %true {offset = READ, vector = 1} : i32
  %po = simt.addptr %out, %tid {scale = 4} : ptr<i32>
  simt.st_global %po, %true, %v {offset = 0, vector = 1}"""
    inp = np.arange(256, dtype=np.int32)
    f = simt_func("cp", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body.replace("READ", "0"), shared_bytes=1024)
    m, dev = run(f, (1,), [inp, np.zeros(32, np.int32)])
    np.testing.assert_array_equal(result(m, dev[1], np.zeros(32, np.int32)), inp[0:128:4])
    f = simt_func("cp", [("inp", "ptr<i32>"), ("out", "ptr<i32>")], body.replace("READ", "512"), shared_bytes=1024)
    with pytest.raises(EmulatorError, match="before the cp.async.wait_group"):
        run(f, (1,), [inp, np.zeros(32, np.int32)])


def test_copy_over_bytes_another_thread_read_is_a_race() -> None:
    body = """
  %base = simt.smem_addr {offset = 0} : i32
  %c16 = arith.constant {value = 16} : i32
  %toff = arith.mul %tid, %c16 : i32
  %dst = arith.add %base, %toff : i32
  %nb = arith.add %dst, %c16 : i32
  %v = simt.ld_shared %nb, %true {offset = 0, vector = 1} : i32
  %src = simt.addptr %inp, %tid {scale = 16} : ptr<i32>
  simt.cp_async %dst, %src, %c16, %true {bytes = 16, offset = 0, src_offset = 0}
  simt.cp_async_commit
  simt.cp_async_wait {pending = 0}"""
    f = simt_func("cp", [("inp", "ptr<i32>")], body, shared_bytes=1024)
    check_ptx(f, ARCHS)
    with pytest.raises(EmulatorError, match="shared-memory race"):
        run(f, (1,), [np.ones(128, np.int32)])
