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
from tile.codegen.amdgcn.mir import OFF, VCC, Imm, Label, MInst, Reg, Sub, print_inst, print_mir
from tile.codegen.amdgcn.regalloc import alignment, allocate, allocate_spilling, coalesce_tied_copies, live_intervals
from tile.codegen.amdgcn.waitcnt import insert_nops, insert_waits
from tile.ir import parse_op
from tile.codegen.target import TargetResourceError
from tile.runtime.errors import OutOfResources

from amdgcn_util import assert_placement


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


# ------------------------------------------------------------------ read-and-written operands


def test_a_read_and_written_operand_is_one_register_printed_once():
    """A returning buffer atomic writes the old value over its data (one VDATA field): the table
    ties its result to its first source, MInst refuses two registers there, and it prints once
    under the assembler's mnemonic with the target's return bit."""
    p = Program()
    data, other, offsets, resource = p.reg("v"), p.reg("v"), p.reg("v"), p.reg("s", 4)
    assert INSTRUCTIONS["buffer_atomic_add_rtn"].ties == ((0, 0),)
    assert INSTRUCTIONS["buffer_atomic_add"].ties == () and INSTRUCTIONS["buffer_atomic_add"].defs == ()
    with pytest.raises(ValueError, match="reads and writes one operand"):
        MInst("buffer_atomic_add_rtn", [other.all()], [data.all(), offsets.all(), resource.all(), Imm.int(0)])
    with pytest.raises(ValueError, match="is not a vdata2 operand"):
        MInst("buffer_atomic_cmpswap_rtn", [data.all()], [data.all(), offsets.all(), resource.all(), Imm.int(0)])
    inst = MInst("buffer_atomic_add_rtn", [data.all()], [data.all(), offsets.all(), resource.all(), Imm.int(0)],
                 {"offen": 1, "sc0": 1})
    assert print_inst(inst) == f"buffer_atomic_add {data!r}.0, {offsets!r}.0, {resource!r}.0:3, 0 offen sc0"
    assignment = {data: 5, offsets: 1, resource: 8}
    assert print_inst(inst, assignment, "gfx942") == "buffer_atomic_add v5, v1, s[8:11], 0 offen sc0"
    glc = MInst("buffer_atomic_add_rtn", [data.all()], [data.all(), offsets.all(), resource.all(), Imm.int(0)],
                {"offen": 1, "glc": 1})
    assert print_inst(glc, assignment, "gfx1100") == "buffer_atomic_add_u32 v5, v1, s[8:11], 0 offen glc"


def _atomic_program(returning: bool):
    """data = ...; old = buffer_atomic_add(data) (returning or not); read of data afterwards."""
    p = Program()
    addr, resource = p.reg("v", 2, fixed=0), p.reg("s", 4, fixed=4)
    data, offsets, after = p.reg("v"), p.reg("v"), p.reg("v")
    p("global_load_dword", [data], [addr, OFF])
    p("v_lshlrev_b32", [offsets], [Imm.int(2), data])
    opcode = "buffer_atomic_add_rtn" if returning else "buffer_atomic_add"
    p(opcode, [data] if returning else [], [data, offsets, resource, Imm.int(0)], offen=1)
    p("v_add_u32", [after], [data, Imm.int(1)])
    return p


@pytest.mark.parametrize("target, returning, wait_before_read", [
    ("gfx942", True, {"vmcnt": 0}), ("gfx942", False, None),   # stores and non-returning atomics: no result
    ("gfx1100", True, {"vmcnt": 0}), ("gfx1100", False, None)])
def test_the_old_value_is_waited_for_and_the_data_is_read_at_issue(target, returning, wait_before_read):
    p = _atomic_program(returning)
    out = insert_waits(p.insts, target=target)
    opcodes = [i.opcode for i in out]
    atomic = opcodes.index("buffer_atomic_add_rtn" if returning else "buffer_atomic_add")
    assert out[atomic - 1].opcode == "v_lshlrev_b32"   # the load's result waited for before (its data)
    assert out[atomic - 2].mods == {"vmcnt": 0}
    after = out[atomic + 1:]
    assert (after[0].mods if after[0].opcode == "s_waitcnt" else None) == wait_before_read
    assert counter("buffer_atomic_add", target) == ("vscnt" if target == "gfx1100" else "vmcnt")
    assert counter("buffer_atomic_add_rtn", target) == "vmcnt"


def test_the_data_and_the_old_value_share_one_live_range():
    p = _atomic_program(True)
    data = p.insts[0].defs[0].reg
    assert live_intervals(p.insts)[data] == (0, 3)   # written, read and written by the atomic, read after
    assignment = allocate(p.insts, "gfx942")
    offsets = p.insts[1].defs[0].reg
    assert assignment[offsets] != assignment[data]   # both read by the atomic


def test_a_wide_atomic_data_overwritten_next_waits():
    """cmpswap_x2 stores 16 bytes of data: a VALU write of them next needs the store hazard's
    wait states (CDNA3 ISA 4.5), as a wide store's data does."""
    p = Program()
    data, offsets, resource = p.reg("v", 4), p.reg("v"), p.reg("s", 4)
    p("buffer_atomic_cmpswap_x2", [], [data, offsets, resource, Imm.int(0)], offen=1)
    p("v_mov_b32", [data.dword(3)], [Imm.int(0)])
    assert [i.opcode for i in insert_nops(p.insts)] == ["buffer_atomic_cmpswap_x2", "s_nop", "v_mov_b32"]


# Random straight-line code with read-and-written operands: the allocated program must read, at
# every instruction, the values the virtual one reads. Values are tokens: (position, dword) of
# the write that made them, so a register reused too early or a tie split across two registers
# shows as a different token.
_TIED = {1: "buffer_atomic_add_rtn", 2: "buffer_atomic_add_x2_rtn", 4: "buffer_atomic_cmpswap_x2_rtn"}


@st.composite
def tied_programs(draw):
    p = Program()
    resource = p.reg("s", 4, fixed=4)
    address = p.reg("v", 2, fixed=0)
    values = {1: [], 2: [], 4: []}   # VGPR values by size
    for _ in range(draw(st.integers(1, 40))):
        size = draw(st.sampled_from(sorted(values)))
        choice = draw(st.integers(0, 2))
        if choice == 0 or not values[size] or not values[1]:   # a fresh value
            d = p.reg("v", size)
            p({1: "global_load_dword", 2: "global_load_dwordx2", 4: "global_load_dwordx4"}[size], [d], [address, OFF])
            values[size].append(d)
        elif choice == 1:   # an atomic on an earlier value, or on a copy of it (as the selector makes)
            data, offsets = draw(st.sampled_from(values[size])), draw(st.sampled_from(values[1]))
            if data is offsets:
                continue
            if draw(st.booleans()):
                copy = p.reg("v", size)
                for k in range(size):
                    p("v_mov_b32", [copy.dword(k)], [data.dword(k)])
                values[size].append(copy)
                data = copy
            p(_TIED[size], [data], [data, offsets, resource, Imm.int(0)], offen=1)
        else:   # a VALU op reading earlier values
            d = p.reg("v")
            p("v_add_u32", [d], [draw(st.sampled_from(values[1])), draw(st.sampled_from(values[1]))])
            values[1].append(d)
    for size, regs in values.items():   # read some at the end, so that some values live long
        for r in draw(st.lists(st.sampled_from(regs), max_size=3)) if regs else []:
            p("v_mov_b32", [p.reg("v")], [r.dword(size - 1)])
    return p.insts


def _tokens_read(insts, place) -> list:
    cells: dict = {}
    seen = []
    for position, inst in enumerate(insts):
        seen.append([cells.get(place(o, k), ("entry", place(o, k))) for o in inst.uses if isinstance(o, Sub)
                     for k in range(o.count)])
        for o in inst.defs:
            if isinstance(o, Sub):
                for k in range(o.count):
                    cells[place(o, k)] = (position, k)
    return seen


@settings(max_examples=120, deadline=None)
@given(tied_programs())
def test_allocated_tied_programs_read_what_the_virtual_ones_read(insts):
    assignment = allocate(insts, "gfx942")
    for inst in insts:
        for result, source in INSTRUCTIONS[inst.opcode].ties:
            assert inst.defs[result].reg is inst.uses[source].reg
    virtual = _tokens_read(insts, lambda o, k: (o.reg.id, o.start + k))
    physical = _tokens_read(insts, lambda o, k: (o.bank, assignment[o.reg] + o.start + k))
    # the hardware's entry registers read as their physical cells in both runs
    fixed = {(o.reg.id, o.start + k): (o.bank, assignment[o.reg] + o.start + k)
             for inst in insts for o in inst.uses if isinstance(o, Sub) and o.reg.fixed is not None
             for k in range(o.count)}
    normalise = lambda t: ("entry", fixed[t[1]]) if t[0] == "entry" else t   # noqa: E731
    assert [[normalise(t) for t in row] for row in virtual] == physical
    assert_placement(insts, assignment, {"v": 256, "s": 102})


def test_a_tied_value_moved_to_an_agpr_goes_through_one_vgpr():
    """Kept in an AGPR (the VGPRs full), the atomic's data is read into one fresh VGPR, the atomic
    reads and writes that VGPR, and the old value goes back to the AGPR after it."""
    from tile.codegen.amdgcn.regalloc import _move_to_agprs

    p = _atomic_program(True)
    data = p.insts[0].defs[0].reg
    agpr = p.reg("a")
    moved = _move_to_agprs(p.insts, {data: agpr}, lambda bank, size: p.reg(bank, size), set())
    opcodes = [i.opcode for i in moved]
    k = opcodes.index("buffer_atomic_add_rtn")
    read, atomic, write = moved[k - 1], moved[k], moved[k + 1]
    assert read.opcode == "v_accvgpr_read_b32" and write.opcode == "v_accvgpr_write_b32"
    staged = read.defs[0]
    assert staged.bank == "v" and atomic.defs[0] == atomic.uses[0] == staged and write.uses[0] == staged
    assert read.uses[0].reg is agpr and write.defs[0].reg is agpr
    allocate(moved, "gfx942")


_COPIES = ("v_mov_b32", "v_accvgpr_read_b32", "v_accvgpr_write_b32")


def _computed(insts, place) -> list:
    """What each instruction other than a copy computes, as a term of its opcode and the terms it
    reads (copies pass terms on): equal lists mean the programs compute the same values."""
    cells: dict = {}
    terms = []
    for inst in insts:
        read = tuple(cells.get(place(o, k), ("entry", o.reg.id if o.reg.fixed is None else o.reg.fixed, o.start + k))
                     for o in inst.uses if isinstance(o, Sub) for k in range(o.count))
        if inst.opcode in _COPIES and isinstance(inst.uses[0], Sub):
            cells[place(inst.defs[0], 0)] = read[0]
            continue
        written = [(inst.opcode, read, inst.mods.get("offset", 0), k) for o in inst.defs if isinstance(o, Sub)
                   for k in range(o.count)]
        terms.append(written)
        cells.update(zip([place(o, k) for o in inst.defs if isinstance(o, Sub) for k in range(o.count)], written))
    return terms


@settings(max_examples=40, deadline=None)
@given(tied_programs(), st.integers(6, 14))
def test_tied_values_moved_to_agprs_compute_what_the_virtual_ones_do(insts, vgprs):
    """The same random programs in a file of `vgprs` VGPRs: values move to AGPRs (the tied ones
    through one fresh VGPR each), and every instruction computes what it computes unmoved."""
    made = [max(o.reg.id for i in insts for o in i.defs + i.uses if isinstance(o, Sub))]

    def new_reg(bank, size):
        made[0] += 1
        return Reg(bank, size, made[0])

    try:
        moved, assignment = allocate_spilling(insts, new_reg, "gfx942", limits={"s": 102, "v": vgprs, "a": 256})
    except TargetResourceError:   # more short-lived values at once than the VGPRs hold: nothing to move
        return
    for inst in moved:
        for result, source in INSTRUCTIONS[inst.opcode].ties:
            assert inst.defs[result] == inst.uses[source] and inst.defs[result].bank == "v"
    assert_placement(moved, assignment, {"v": vgprs, "a": 256})
    expected = _computed(insts, lambda o, k: (o.reg.id, o.start + k))
    assert _computed(moved, lambda o, k: (o.bank, assignment[o.reg] + o.start + k)) == expected


@settings(max_examples=120, deadline=None)
@given(tied_programs())
def test_coalesced_copies_compute_what_the_copies_did(insts):
    """Dropping a copy into a tied operand changes no value any instruction computes (copies pass
    values on), and the program still allocates."""
    coalesced = coalesce_tied_copies(insts)
    assert _computed(coalesced, lambda o, k: (o.reg.id, o.start + k)) == _computed(
        insts, lambda o, k: (o.reg.id, o.start + k))
    assert len(coalesced) <= len(insts)
    assert_placement(coalesced, allocate(coalesced, "gfx942"), {"v": 256, "s": 102})


def _copy_then_atomic(read_after: bool, in_loop: bool, written_between: bool = False):
    p = Program()
    addr, resource = p.reg("v", 2, fixed=0), p.reg("s", 4, fixed=4)
    value, copy, offsets, after = p.reg("v"), p.reg("v"), p.reg("v"), p.reg("v")
    p("global_load_dword", [value], [addr, OFF])
    p("v_lshlrev_b32", [offsets], [Imm.int(2), value])
    if in_loop:
        p("label", [], [Label(".Lloop")])
    p("v_mov_b32", [copy], [value])
    if written_between:   # the value replaced by another atomic's old value: the copy holds the first
        p("buffer_atomic_add_rtn", [value], [value, offsets, resource, Imm.int(0)], offen=1, sc0=1)
    p("buffer_atomic_add_rtn", [copy], [copy, offsets, resource, Imm.int(0)], offen=1, sc0=1)
    p("v_add_u32", [after], [copy, value if read_after else Imm.int(1)])
    if in_loop:
        p("s_cbranch_scc1", [], [Label(".Lloop")])
    return p.insts


@pytest.mark.parametrize("read_after, in_loop, written_between, coalesced", [
    (False, False, False, True), (True, False, False, False), (False, True, False, False),
    (False, False, True, False)])
def test_a_tied_copy_is_dropped_only_where_its_source_dies(read_after, in_loop, written_between, coalesced):
    """The copy goes when the copied value is not read after the atomic; it stays when it is,
    when the value is live around a loop (the next iteration copies it again), or when the value
    is written between the copy and the atomic."""
    insts = _copy_then_atomic(read_after, in_loop, written_between)
    out = coalesce_tied_copies(insts)
    opcodes = [i.opcode for i in out]
    assert ("v_mov_b32" not in opcodes) == coalesced
    atomic = [i for i in out if i.opcode == "buffer_atomic_add_rtn"][-1]
    assert (atomic.uses[0].reg is insts[0].defs[0].reg) == coalesced
