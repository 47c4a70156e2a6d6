"""Global atomics on gfx942 and gfx90a: tl.atomic_* and tl.atomic_cas on 32-bit values compile to
global_atomic_* (returning form: sc0 on gfx942, glc on gfx90a), with the cache maintenance of
the target's memory model for their sem and scope, assemble, and compute on the wave model
against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.codegen.amdgcn import TARGETS, UnsupportedOnTarget, assemble, compile_amdgcn, emit_amdgcn
from tile.codegen.amdgcn.isa import spelling
from tile.compiler import compile_kernel
from tile.ir import parse_op
from tile.emulator.amdgcn_machine import run_amdgcn

from amdgcn_util import instructions, named, warps_for

RNG = np.random.default_rng(11)


def build(kernel, args, num_warps=2, target="gfx942", **constexprs):
    spec, _ = kernel.specialize(args, constexprs)
    options = {"num_warps": num_warps, "num_stages": 1, "maxnreg": None}
    simt = compile_kernel(kernel, spec, options, target, until="amdgcn").func
    return compile_amdgcn(simt, target)


@tile.jit
def scatter_kernel(x_ptr, out_ptr, old_ptr, n, BINS: tl.constexpr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    target = out_ptr + offs % BINS
    if OP == "add":
        old = tl.atomic_add(target, x, mask=m)
    elif OP == "max":
        old = tl.atomic_max(target, x, mask=m)
    elif OP == "min":
        old = tl.atomic_min(target, x, mask=m)
    elif OP == "and":
        old = tl.atomic_and(target, x, mask=m)
    elif OP == "or":
        old = tl.atomic_or(target, x, mask=m)
    elif OP == "xor":
        old = tl.atomic_xor(target, x, mask=m)
    else:
        old = tl.atomic_xchg(target, x, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


REDUCE = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}


@pytest.mark.parametrize("op, dtype", [("add", np.float32), ("add", np.int32), ("max", np.int32), ("min", np.int32),
                                       ("max", np.uint32), ("min", np.uint32), ("and", np.int32), ("or", np.int32),
                                       ("xor", np.uint32), ("xchg", np.int32), ("max", np.float32),
                                       ("add", np.int64), ("add", np.float64), ("max", np.int64), ("min", np.int64),
                                       ("max", np.uint64), ("min", np.uint64), ("and", np.int64), ("or", np.uint64),
                                       ("xor", np.int64), ("xchg", np.int64)])
@pytest.mark.parametrize("target", TARGETS)
def test_atomics_compute_on_the_wave_model(op, dtype, target):
    n, bins = 200, 8
    if dtype in (np.float32, np.float64):   # integer-valued: sums are exact in any order
        x = RNG.integers(-50, 50, n).astype(dtype)
    elif np.dtype(dtype).itemsize == 8:   # values that use both dwords, and signs
        x = RNG.integers(-2**62, 2**62, n, dtype=np.int64).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(max(info.min, -2**31), min(info.max, 2**31 - 1), n, dtype=np.int64).astype(dtype)
    start = x[:bins][::-1].copy()
    out, old = start.copy(), np.full(n, 7, dtype)
    if (op, dtype, target) == ("add", np.float64, "gfx1100"):   # RDNA3 has no f64 atomic add
        with pytest.raises(tile.CompilationError, match="gfx1100: .* does not support simt.atom add of f64"):
            build(scatter_kernel, [x, out, old, n], target=target, BINS=bins, OP=op, BLOCK=128)
        return
    compiled = build(scatter_kernel, [x, out, old, n], target=target, BINS=bins, OP=op, BLOCK=128)
    assert any(line.startswith("global_atomic") for line in instructions(compiled.text))
    assert b"ELF" in assemble(compiled.text, target)[:4]
    run_amdgcn(compiled.text, 2, named(scatter_kernel, [x, out, old, n]))
    for b in range(bins):   # the wave model runs workgroups, waves and lanes in order
        lanes = x[b::bins]
        if op == "max" and dtype == np.float32:   # two atomics (smax on non-negative bits, umin on negative)
            assert out[b] == max(start[b], lanes.max()) and set(old[b::bins]) <= {start[b], *lanes}
        elif op == "xchg":
            chain = np.concatenate([[start[b]], lanes])
            np.testing.assert_array_equal(old[b::bins], chain[:-1])
            assert out[b] == lanes[-1]
        else:
            chain = REDUCE[op].accumulate(np.concatenate([[start[b]], lanes]), dtype=dtype)
            np.testing.assert_array_equal(old[b::bins], chain[:-1])
            assert out[b] == chain[-1]


@tile.jit
def ticket_kernel(counter_ptr, lock_ptr, tickets_ptr, seen_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ticket = tl.atomic_add(counter_ptr + offs * 0, 1, sem="relaxed", scope="sys")
    tl.store(tickets_ptr + offs, ticket)
    tl.store(seen_ptr + offs, tl.atomic_cas(lock_ptr + offs % 2, 0, offs + 1, sem="acquire", scope="cta"))


@pytest.mark.parametrize("target", TARGETS)
def test_tickets_and_compare_and_swap(target):
    block = 64
    counter, lock = np.array([5], np.int32), np.zeros(2, np.int32)
    tickets, seen = np.full(2 * block, -1, np.int32), np.full(2 * block, -1, np.int32)
    compiled = build(ticket_kernel, [counter, lock, tickets, seen], target=target, BLOCK=block)
    assert b"ELF" in assemble(compiled.text, target)[:4]
    run_amdgcn(compiled.text, 2, named(ticket_kernel, [counter, lock, tickets, seen]))
    assert sorted(tickets) == list(range(5, 5 + 2 * block)) and counter[0] == 5 + 2 * block
    assert list(lock) == [1, 2] and list(seen[:2]) == [0, 0] and list(seen[2:]) == [1, 2] * (block - 1)


@tile.jit
def ordered_kernel(out_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_add(out_ptr + tl.arange(0, 64), 1.0, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("target, sem, scope, before, after, bits", [
    ("gfx942", "relaxed", "gpu", [], [], "sc0"),
    ("gfx942", "acq_rel", "gpu", ["buffer_wbl2 sc1", "s_waitcnt vmcnt(0) lgkmcnt(0)"],
     ["s_waitcnt vmcnt(0)", "buffer_inv sc1"], "sc0"),
    ("gfx942", "release", "sys", ["buffer_wbl2 sc0 sc1", "s_waitcnt vmcnt(0) lgkmcnt(0)"], [], "sc0 sc1"),
    ("gfx942", "acquire", "cta", [], ["s_waitcnt vmcnt(0)"], "sc0"),
    ("gfx90a", "relaxed", "gpu", [], [], "glc"),
    ("gfx90a", "acq_rel", "gpu", ["s_waitcnt vmcnt(0) lgkmcnt(0)"], ["s_waitcnt vmcnt(0)", "buffer_wbinvl1_vol"],
     "glc"),
    ("gfx90a", "acq_rel", "sys", ["buffer_wbl2", "s_waitcnt vmcnt(0) lgkmcnt(0)"],
     ["s_waitcnt vmcnt(0)", "buffer_invl2", "buffer_wbinvl1_vol"], "glc"),
    ("gfx90a", "acquire", "cta", [], ["s_waitcnt vmcnt(0)"], "glc"),
    ("gfx1100", "relaxed", "gpu", [], [], "glc"),
    ("gfx1100", "acq_rel", "gpu", ["s_waitcnt vmcnt(0) lgkmcnt(0)", "s_waitcnt_vscnt null, 0x0"],
     ["s_waitcnt vmcnt(0)", "buffer_gl1_inv", "buffer_gl0_inv"], "glc"),
    ("gfx1100", "acq_rel", "sys", ["s_waitcnt vmcnt(0) lgkmcnt(0)", "s_waitcnt_vscnt null, 0x0"],
     ["s_waitcnt vmcnt(0)", "buffer_gl1_inv", "buffer_gl0_inv"], "glc"),
    ("gfx1100", "acquire", "cta", [], ["s_waitcnt vmcnt(0)"], "glc"),
])
def test_memory_model_sequences(target, sem, scope, before, after, bits):
    """The memory models of LLVM AMDGPUUsage ("Memory Model GFX942", "Memory Model GFX90A").
    gfx942: release writes the L2 back (agent: sc1; system: sc0 sc1) after the earlier memory
    ops drain; acquire waits for the atomic and invalidates; system-scope atomics carry sc1.
    gfx90a: the agent's L2 is coherent, so agent scope only invalidates the L1 after an acquire;
    system scope writes the L2 back before a release and invalidates it after an acquire.
    gfx1100 ("Memory Model GFX10-GFX11", CU mode): a release drains loads, LDS and stores
    (vscnt); an acquire at agent or system scope invalidates the L1 and L0 after the wait."""
    out = np.zeros(64, np.float32)   # one element per lane of 64 work-items: no owner mask around the atomic
    compiled = build(ordered_kernel, [out], warps_for(target, 64), target=target, SEM=sem, SCOPE=scope)
    assert b"ELF" in assemble(compiled.text, target)[:4]
    text = instructions(compiled.text)
    k = next(i for i, line in enumerate(text) if line.startswith("global_atomic_add_f32"))   # one name on all
    assert text[k].endswith(bits)
    assert text[k - len(before):k] == before if before else not text[k - 1].startswith("buffer_")
    assert text[k + 1:k + 1 + len(after)] == after if after else not text[k + 1].startswith(("buffer_", "s_waitcnt"))


@tile.jit
def wide_cas_kernel(slot_ptr, seen_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    big = offs.to(tl.int64) * 4294967296 + 3   # the high dword decides which swap wins
    tl.store(seen_ptr + offs, tl.atomic_cas(slot_ptr + offs % 2, big - 4294967296 * 2, big))


@pytest.mark.parametrize("target", TARGETS)
def test_64_bit_compare_and_swap(target):
    """global_atomic_cmpswap_x2: lane l swaps in l * 2^32 + 3 where its slot holds (l - 2) * 2^32 + 3,
    so lanes 0, 1 (against the slots' starting values) and every later one chain, two slots apart."""
    block = 64
    slots = np.array([-2 * 2**32 + 3, -1 * 2**32 + 3], np.int64)
    seen = np.zeros(block, np.int64)
    compiled = build(wide_cas_kernel, [slots, seen], target=target, BLOCK=block)
    assert spelling("global_atomic_cmpswap_x2", target) in compiled.text and b"ELF" in assemble(compiled.text, target)[:4]
    run_amdgcn(compiled.text, 1, named(wide_cas_kernel, [slots, seen]))
    lanes = np.arange(block, dtype=np.int64)
    np.testing.assert_array_equal(seen, (lanes - 2) * 2**32 + 3)   # each lane saw the value it expected
    np.testing.assert_array_equal(slots, (np.array([block - 2, block - 1]) * 2**32 + 3))


@tile.jit
def histogram_kernel(x_ptr, out_ptr, BINS: tl.constexpr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(tl.load(x_ptr + tl.arange(0, BLOCK)), BINS))


@pytest.mark.parametrize("bins, num_warps", [(16, 4), (8, 2)])
def test_histogram_counts_in_lds(bins, num_warps):
    """tl.histogram: bins zeroed in LDS, ds_add_u32 per element, read back after a barrier."""
    x = RNG.integers(0, bins, 256).astype(np.int32)
    out = np.full(bins, -1, np.int32)
    compiled = build(histogram_kernel, [x, out], num_warps=num_warps, BINS=bins, BLOCK=256)
    assert "ds_add_u32" in compiled.text and b"ELF" in assemble(compiled.text, "gfx942")[:4]
    run_amdgcn(compiled.text, 1, named(histogram_kernel, [x, out]))
    np.testing.assert_array_equal(out, np.bincount(x, minlength=bins))


def _red_shared_func(kind: str, t: str) -> str:
    return ('simt.func {arg_names = ["p"], num_warps = 1, shared_bytes = 64, sym_name = "k"} {\n'
            f"^bb(%p: ptr<f32>):\n  %t = simt.tid : i32\n  %c = arith.constant {{value = true}} : i1\n"
            f"  %v = arith.constant {{value = 1}} : {t}\n"
            f'  simt.red %t, %c, %v {{kind = "{kind}", scope = "cta"}}\n  simt.return\n}}')


@pytest.mark.parametrize("kind, t", [("max", "i32"), ("add", "i64")])
def test_other_shared_memory_atomics_are_refused_by_name(kind, t):
    with pytest.raises(UnsupportedOnTarget, match=rf"simt\.red {kind} of {t} on shared memory"):
        emit_amdgcn(parse_op(_red_shared_func(kind, t)), "gfx942")
