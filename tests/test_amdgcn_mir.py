"""The AMDGCN backend's machine IR, on hand-built programs: operand checks against the ISA
table, s_waitcnt insertion, wait states, liveness and register allocation (property-tested),
and the uniformity analysis."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile
import tile.language as tl
from tile.codegen.amdgcn import ToolNotFound, UnsupportedOnTarget, assemble, emit_amdgcn
from tile.codegen.amdgcn.isa import INSTRUCTIONS, MAX_VMCNT, counter
from tile.codegen.amdgcn.isel import uniform_values
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, MInst, Reg, print_inst, print_mir
from tile.codegen.amdgcn.regalloc import alignment, allocate, live_intervals
from tile.codegen.amdgcn.waitcnt import insert_nops, insert_waits
from tile.ir import parse_op
from tile.codegen.target import TargetResourceError
from tile.runtime.errors import OutOfResources


class Program:
    """A little builder of MIR on fresh virtual registers."""

    def __init__(self):
        self.insts: list[MInst] = []
        self.count = 0

    def reg(self, bank, size=1, fixed=None):
        self.count += 1
        return Reg(bank, size, self.count, fixed)

    def __call__(self, opcode, defs, uses, **mods):
        self.insts.append(MInst(opcode, [d.all() if isinstance(d, Reg) else d for d in defs],
                                [u.all() if isinstance(u, Reg) else u for u in uses], mods))


def waits(insts):
    return [(k, i.mods) for k, i in enumerate(insts) if i.opcode == "s_waitcnt"]


def test_operands_are_checked_against_the_table():
    p = Program()
    v, s = p.reg("v"), p.reg("s")
    with pytest.raises(ValueError, match="is not a vdst operand"):
        MInst("v_add_u32", [s.all()], [v.all(), v.all()])
    with pytest.raises(ValueError, match="takes 1 results and 2 sources"):
        MInst("v_add_u32", [v.all()], [v.all()])
    with pytest.raises(KeyError, match="v_frobnicate is not in tile's AMDGCN instruction table"):
        MInst("v_frobnicate", [], [])
    assert all(row.counter in (None, "vmcnt", "lgkmcnt", "expcnt", "store") for row in INSTRUCTIONS.values())
    assert [counter("global_store_dword", t) for t in ("gfx942", "gfx90a", "gfx1100")] == ["vmcnt", "vmcnt", "vscnt"]
    assert counter("global_load_dword", "gfx1100") == "vmcnt"
    assert INSTRUCTIONS["global_load_dwordx4"].counter == "vmcnt"
    assert INSTRUCTIONS["s_load_dword"].counter == "lgkmcnt"


def test_printer_virtual_and_physical():
    p = Program()
    a, b, c = p.reg("v", 2), p.reg("s"), p.reg("v")
    inst = MInst("v_add_co_u32", [a.dword(0), VCC], [b.all(), c.all()])
    assert print_inst(inst) == f"v_add_co_u32 {a!r}.0, vcc, {b!r}.0, {c!r}.0"
    assert print_inst(inst, {a: 4, b: 7, c: 1}) == "v_add_co_u32 v4, vcc, s7, v1"
    load = MInst("global_load_dwordx2", [a.all()], [a.all(), OFF], {"offset": 16})
    assert print_inst(load, {a: 2}) == "global_load_dwordx2 v[2:3], v[2:3], off offset:16"


def _two_loads(use_first_load_first: bool):
    p = Program()
    addr, x, y, out = p.reg("v", 2), p.reg("v"), p.reg("v"), p.reg("v")
    p("global_load_dword", [x], [addr, OFF])
    p("global_load_dword", [y], [addr, OFF], offset=4)
    first, second = (x, y) if use_first_load_first else (y, x)
    p("v_add_f32", [out], [first, Imm.int(1)])
    p("v_add_f32", [out], [second, out])
    return p.insts


def test_wait_counts_only_the_loads_issued_after_the_needed_one():
    out = insert_waits(_two_loads(use_first_load_first=True))
    assert waits(out) == [(2, {"vmcnt": 1}), (4, {"vmcnt": 0})]
    out = insert_waits(_two_loads(use_first_load_first=False))
    assert waits(out) == [(2, {"vmcnt": 0})]  # in-order return: the older load has landed too


def test_stores_count_in_vmcnt_and_scalar_loads_wait_for_zero():
    p = Program()
    kernarg, n, addr, x, data, out = (p.reg("s", 2, fixed=0), p.reg("s"), p.reg("v", 2), p.reg("v"), p.reg("v"),
                                      p.reg("v"))
    p("s_load_dword", [n], [kernarg, Imm.int(0)])
    p("v_mov_b32", [data], [Imm.int(7)])
    p("global_load_dword", [x], [addr, OFF])
    p("global_store_dword", [], [addr, data, OFF])
    p("v_add_u32", [out], [x, n])
    result = insert_waits(p.insts)
    assert waits(result) == [(4, {"vmcnt": 1, "lgkmcnt": 0})]
    assert "s_waitcnt vmcnt(1) lgkmcnt(0)" in print_mir(result)


def test_no_wait_without_a_read_and_the_count_saturates():
    p = Program()
    addr = p.reg("v", 2)
    loads = [p.reg("v") for _ in range(MAX_VMCNT + 10)]
    for r in loads:
        p("global_load_dword", [r], [addr, OFF])
    assert waits(insert_waits(p.insts)) == []
    p("v_mov_b32", [p.reg("v")], [loads[0]])
    assert waits(insert_waits(p.insts)) == [(len(loads), {"vmcnt": MAX_VMCNT})]


def test_after_allocation_a_reused_register_waits_for_its_dead_load():
    p = Program()
    addr, dead, other = p.reg("v", 2), p.reg("v"), p.reg("v")
    p("global_load_dword", [dead], [addr, OFF])
    p("v_mov_b32", [other], [Imm.int(3)])
    p("global_store_dword", [], [addr, other, OFF])
    assignment = allocate(p.insts, "gfx942")
    assert assignment[dead] == assignment[other]  # the load's result is never read
    assert waits(insert_waits(p.insts, assignment)) == [(1, {"vmcnt": 0})]


def test_wait_states_after_transcendentals_and_wide_stores():
    p = Program()
    x, r, y, addr, data = p.reg("v"), p.reg("v"), p.reg("v"), p.reg("v", 2), p.reg("v", 4)
    p("v_rcp_f32", [r], [x])
    p("v_mul_f32", [y], [r, x])
    p("global_store_dwordx4", [], [addr, data, OFF])
    p("v_mov_b32", [data.dword(2)], [Imm.int(0)])
    out = insert_nops(p.insts)
    assert [i.opcode for i in out] == ["v_rcp_f32", "s_nop", "v_mul_f32", "global_store_dwordx4", "s_nop", "v_mov_b32"]
    assert out[1].uses[0].value == 0 and out[4].uses[0].value == 1


# ------------------------------------------------------------------ register allocation

_SHAPES = {("v", 1): ("v_add_u32", 2), ("v", 2): ("v_lshlrev_b64", None), ("v", 4): ("global_load_dwordx4", None),
           ("s", 1): ("s_add_u32", 2), ("s", 2): ("s_and_b64", 2), ("s", 4): ("s_load_dwordx4", None)}


@st.composite
def programs(draw):
    """Straight-line code defining registers of random banks and sizes, each reading earlier ones."""
    p = Program()
    live = {key: [] for key in _SHAPES}
    pair_v = p.reg("v", 2, fixed=0)
    pair_s = p.reg("s", 2, fixed=0)
    live["v", 2].append(pair_v)
    live["s", 2].append(pair_s)
    for _ in range(draw(st.integers(1, 60))):
        key = draw(st.sampled_from(sorted(_SHAPES)))
        opcode, arity = _SHAPES[key]
        d = p.reg(*key)
        if opcode == "global_load_dwordx4":
            p(opcode, [d], [draw(st.sampled_from(live["v", 2])), OFF])
        elif opcode == "s_load_dwordx4":
            p(opcode, [d], [draw(st.sampled_from(live["s", 2])), Imm.int(0)])
        elif opcode == "v_lshlrev_b64":
            p(opcode, [d], [Imm.int(1), draw(st.sampled_from(live["v", 2]))])
        else:
            sources = live[key] or [None]
            p(opcode, [d], [draw(st.sampled_from(sources)) or Imm.int(draw(st.integers(-16, 64))) for _ in range(arity)])
        live[key].append(d)
    # read a random subset at the end, so that some values live long
    for key, regs in live.items():
        for r in draw(st.lists(st.sampled_from(regs), max_size=4)) if regs else []:
            if key == ("v", 1):
                p("v_mov_b32", [p.reg("v")], [r])
    return p.insts


@settings(max_examples=150, deadline=None)
@given(programs())
def test_no_two_live_values_share_a_register(insts):
    assignment = allocate(insts, "gfx942")
    intervals = live_intervals(insts)
    regs = list(intervals)
    for reg in regs:
        assert assignment[reg] % alignment(reg) == 0
        assert reg.fixed is None or assignment[reg] == reg.fixed
    for i, a in enumerate(regs):
        for b in regs[i + 1:]:
            if a.bank != b.bank:
                continue
            (s1, e1), (s2, e2) = intervals[a], intervals[b]
            if s1 <= e2 and s2 <= e1:  # both live at some position
                cells_a = set(range(assignment[a], assignment[a] + a.size))
                cells_b = set(range(assignment[b], assignment[b] + b.size))
                assert not cells_a & cells_b, (a, b)


def live_vgprs(count: int) -> "Program":
    """`count` single VGPR values loaded, then all read: all live at once."""
    p = Program()
    addr = p.reg("v", 2, fixed=0)
    values = [p.reg("v") for _ in range(count)]
    for v in values:
        p("global_load_dword", [v], [addr, OFF])
    total = p.reg("v")
    for v in values:
        p("v_add_u32", [total], [v, Imm.int(1)])
    return p


def test_running_out_of_vgprs_is_out_of_resources():
    p = live_vgprs(300)
    with pytest.raises(TargetResourceError) as e:
        allocate(p.insts, "gfx942", "big")
    assert e.value.name == "VGPRs" and e.value.limit == 256 and e.value.required > 256
    assert "big" in str(e.value)


@tile.jit
def many_values(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(x_ptr + BLOCK - 1 - offs))


def test_a_kernel_too_big_for_the_register_file_fails_to_compile():
    x = np.ones(16384, np.float32)   # one wave of 64 lanes: 2 x 256 values per lane
    with pytest.raises(OutOfResources, match="VGPRs"):
        tile.dump(many_values, x, x, BLOCK=16384, stage="amdgcn", target="gfx942", num_warps=1)


# ------------------------------------------------------------------ uniformity


@tile.jit
def scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    base = tl.program_id(0) * BLOCK
    offs = base + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_uniformity_analysis():
    from tile.compiler import compile_kernel

    x = np.ones(1000, np.float32)
    spec, _ = scaled_copy.specialize((x, x, 1000), {"BLOCK": 256})
    simt = compile_kernel(scaled_copy, spec, {"num_warps": 4, "num_stages": 3, "maxnreg": None}, "gfx942",
                          until="amdgcn").func
    uniform = uniform_values(simt)
    ops = {op.name: op for op in simt.regions[0].block.ops}
    assert ops["simt.ctaid"].result in uniform
    assert ops["simt.tid"].result not in uniform
    assert ops["simt.ld_global"].result not in uniform
    assert all(arg in uniform for arg in simt.regions[0].block.args)
    muls = [op for op in simt.regions[0].block.ops if op.name == "arith.mul"]
    assert muls and all(op.result in uniform for op in muls)  # program_id * BLOCK
    cmps = [op for op in simt.regions[0].block.ops if op.name == "arith.cmp"]
    assert cmps and not any(op.result in uniform for op in cmps)


# ------------------------------------------------------------------ selection errors on hand-written simt


def _simt(params: str, body: str) -> str:
    return (f'simt.func {{arg_names = ["p", "q"], num_warps = 1, shared_bytes = 0, sym_name = "k"}} {{\n'
            f"^bb({params}):\n{body}\n  simt.return\n}}")


def test_parameters_narrower_than_32_bits_are_refused_by_name():
    func = parse_op(_simt("%p: ptr<f16>, %q: f16", "  %t = simt.tid : i32"))
    with pytest.raises(UnsupportedOnTarget, match="kernel parameter 'q' of type f16"):
        emit_amdgcn(func, "gfx942")


def test_address_scale_must_be_a_power_of_two():
    body = "  %t = simt.tid : i32\n  %a = simt.addptr %p, %t {scale = 12} : ptr<f32>"
    func = parse_op(_simt("%p: ptr<f32>, %q: i32", body))
    with pytest.raises(UnsupportedOnTarget, match=r"simt\.addptr with scale 12"):
        emit_amdgcn(func, "gfx942")


def test_f64_remainder_is_not_selected_yet():
    func = parse_op(_simt("%p: ptr<f32>, %q: f64", "  %d = arith.rem %q, %q : f64"))
    with pytest.raises(UnsupportedOnTarget, match=r"arith\.rem on f64"):
        emit_amdgcn(func, "gfx942")


def test_missing_assembler_names_the_tool(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ToolNotFound, match="llvm-mc is not installed .*apt-get install llvm-19 lld-19"):
        assemble("", "gfx942")


def test_wait_states_after_a_valu_writes_an_sgpr():
    p = Program()
    x, mask, a, b, other = p.reg("v"), p.reg("s", 2), p.reg("v"), p.reg("v"), p.reg("v")
    p("v_cmp_lt_f32", [mask], [x, Imm.int(0)])
    p("v_mov_b32", [other], [Imm.int(1)])
    p("v_cndmask_b32", [a], [x, other, mask])   # one instruction between: one more wait state
    p("v_cndmask_b32", [b], [a, x, mask])       # two after: none
    out = insert_nops(p.insts)
    assert [i.opcode for i in out] == ["v_cmp_lt_f32", "v_mov_b32", "s_nop", "v_cndmask_b32", "v_cndmask_b32"]
    assert out[2].uses[0].value == 0
    p = Program()
    lo, hi, sum_lo, sum_hi = p.reg("v"), p.reg("v"), p.reg("v"), p.reg("v")
    p("v_add_co_u32", [sum_lo, VCC], [lo, hi])
    p("v_addc_co_u32", [sum_hi, VCC], [hi, lo, VCC])   # vcc read as a carry: no wait states
    assert [i.opcode for i in insert_nops(p.insts)] == ["v_add_co_u32", "v_addc_co_u32"]


def test_lds_reads_are_counted_in_order_unless_a_scalar_load_is_in_flight():
    p = Program()
    kernarg, n, addr, a, b, c = p.reg("s", 2, fixed=0), p.reg("s"), p.reg("v"), p.reg("v"), p.reg("v"), p.reg("v")
    p("ds_read_b32", [a], [addr], offset=0)
    p("ds_read_b32", [b], [addr], offset=4)
    p("v_add_u32", [c], [a, Imm.int(1)])
    assert waits(insert_waits(p.insts)) == [(2, {"lgkmcnt": 1})]
    p.insts.insert(0, MInst("s_load_dword", [n.all()], [kernarg.all(), Imm.int(0)]))
    assert waits(insert_waits(p.insts)) == [(3, {"lgkmcnt": 0})]


def test_a_placed_wait_counts():
    p = Program()
    addr, x, y = p.reg("v", 2), p.reg("v"), p.reg("v")
    p("global_load_dword", [x], [addr, OFF])
    p("s_waitcnt", [], [], vmcnt=0, lgkmcnt=0)
    p("s_barrier", [], [])
    p("v_mov_b32", [y], [x])
    assert [k for k, _ in waits(insert_waits(p.insts))] == [1]


def test_lds_beyond_64_kib_is_out_of_resources():
    text = _simt("%p: ptr<f32>, %q: i32", "  %t = simt.tid : i32").replace("shared_bytes = 0", "shared_bytes = 70000")
    with pytest.raises(TargetResourceError, match="shared memory"):
        emit_amdgcn(parse_op(text), "gfx942")
