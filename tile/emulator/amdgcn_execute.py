"""The executors of the AMDGCN instructions (gfx942, gfx90a, gfx1100): EXECUTE[mnemonic](wave, instruction).

Each executor reads operands through the wave (amdgcn_machine.Wave.read: uint64 lanes),
computes with the tables of amdgcn_isa, and writes results (VGPRs in the EXEC lanes) or issues
a memory access whose results land at an s_waitcnt. Branches, barriers and s_endpgm are the
machine's. Every mnemonic of tile's instruction table (tile.codegen.amdgcn.isa.INSTRUCTIONS)
has an executor here, keyed by the table's name (the decoder maps a target's spelling to it);
tests/test_emulator_amdgcn.py checks that. Lane masks are as wide as the wave (Wave.mask_width).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..codegen.amdgcn.isa import (ATOMIC_RETURN_BIT, BUFFER_BASE_HIGH_BITS, BUFFER_RESOURCE_CONFIG, D16_MERGE_KEEPS,
                                   INSTRUCTIONS, MFMA_FP8_NAMES, MFMA_SHAPES, RETURNING_SUFFIX, WMMA_SHAPES, counter)
from ..ir.float8 import decode_table
from ..ir.types import DTYPES
from ..ir.wmma_layouts import wmma_operand_layout, wmma_result_layout
from . import amdgcn_isa as isa
from .amdgcn_decode import AmdInstr, Reg
from .amdgcn_lds_banks import active_counter

Executor = Callable[[object, AmdInstr], None]
EXECUTE: dict[str, Executor] = {}


def _executes(*names: str) -> Callable[[Executor], Executor]:
    def register(fn: Executor) -> Executor:
        for name in names:
            EXECUTE[name] = fn
        return fn

    return register


def _width(op: str) -> int:
    return 2 if op.endswith("64") else 1


# scalar ------------------------------------------------------------------------------------
@_executes("s_waitcnt")
def _waitcnt(w, ins):
    w.wait(ins.mods)


@_executes("s_waitcnt_vscnt")
def _waitcnt_vscnt(w, ins):
    w.wait({"vscnt": ins.uses[1].value})


@_executes("s_nop", "s_waitcnt_depctr", "v_nop")
def _nop(w, ins):
    """s_waitcnt_depctr and v_nop too: the machine runs each instruction to its end before the next."""


@_executes("s_mov_b32", "s_mov_b64", "s_not_b32", "s_not_b64")
def _mov(w, ins):
    width = _width(ins.opcode)
    value = w.scalar(ins.uses[0], width)
    w.write(ins.defs[0], (~value if "not" in ins.opcode else value) & ((1 << (32 * width)) - 1), width)


@_executes("s_and_saveexec_b64", "s_and_saveexec_b32")
def _saveexec(w, ins):
    width = _width(ins.opcode)
    w.write(ins.defs[0], w.mask_bits(w.exec), width)
    w.exec = w.exec & w.mask(w.scalar(ins.uses[0], width))


@_executes(*(name for name in INSTRUCTIONS if name.startswith("s_cmp_")))
def _scalar_compare(w, ins):
    _, _, pred, ty = ins.opcode.split("_")
    width = 2 if ty == "u64" else 1
    a, b = w.scalar(ins.uses[0], width), w.scalar(ins.uses[1], width)
    if ty == "i32":
        a, b = isa.signed(a), isa.signed(b)
    w.scc = bool(isa.COMPARE[pred](a, b))


@_executes("s_cselect_b32", "s_cselect_b64")
def _cselect(w, ins):
    width = _width(ins.opcode)
    w.write(ins.defs[0], w.scalar(ins.uses[0 if w.scc else 1], width), width)


@_executes(*isa.SCALAR_64)
def _scalar_64(w, ins):
    b_width = 2 if ins.opcode in ("s_and_b64", "s_or_b64", "s_xor_b64", "s_andn2_b64") else 1
    value = isa.SCALAR_64[ins.opcode](w.scalar(ins.uses[0], 2), w.scalar(ins.uses[1], b_width))
    w.write(ins.defs[0], value, 2)


@_executes(*isa.SCALAR_BINARY)
def _scalar_binary(w, ins):
    value, scc = isa.SCALAR_BINARY[ins.opcode](w.scalar(ins.uses[0]), w.scalar(ins.uses[1]), int(w.scc))
    if scc is not None:
        w.scc = bool(scc)
    w.write(ins.defs[0], value & isa.M32)


@_executes("s_load_dword", "s_load_dwordx2", "s_load_dwordx4")
def _scalar_load(w, ins):
    target = ins.defs[0]
    address = w.scalar(ins.uses[0], 2) + ins.uses[1].value
    words = w.group.launch.gmem.load(np.array([address], np.uint64), 4, target.count, lambda p, why: w.error(why))
    writes = [(target.dword(k), int(words[0, k]), None) for k in range(target.count)]
    w.issue("lgkmcnt", target, writes, in_order=False)


# vector ALU --------------------------------------------------------------------------------
@_executes(*(name for name in INSTRUCTIONS if name.startswith("v_cmp_")))
def _vector_compare(w, ins):
    _, _, pred, ty = ins.opcode.split("_")
    width = 2 if ty.endswith("64") else 1
    a, b = w.read(ins.uses[0], width), w.read(ins.uses[1], width)
    if ty in ("f32", "f64"):
        a, b = (isa.f32(a), isa.f32(b)) if ty == "f32" else (a.view(np.float64), b.view(np.float64))
        result = np.isnan(a) | np.isnan(b) if pred == "u" else isa.COMPARE[pred](a, b)
    elif ty.startswith("i"):
        a, b = (a.view(np.int64), b.view(np.int64)) if width == 2 else (isa.i32(a), isa.i32(b))
        result = isa.COMPARE[pred](a, b)
    else:
        result = isa.COMPARE[pred](a, b)
    w.write(ins.defs[0], w.mask_bits(result & w.exec), w.mask_width)


@_executes("v_readfirstlane_b32")
def _readfirstlane(w, ins):
    lane = int(np.argmax(w.exec))
    w.write(ins.defs[0], int(w.read(ins.uses[0])[lane]))


@_executes("v_readlane_b32")
def _readlane(w, ins):
    w.write(ins.defs[0], int(w.read(ins.uses[0])[int(w.read(ins.uses[1])[0]) % w.lanes]))


@_executes("v_writelane_b32")
def _writelane(w, ins):
    """Writes one lane whatever EXEC says (CDNA3 ISA 6: the lane select ignores EXEC)."""
    lane = np.zeros(w.lanes, bool)
    lane[int(w.read(ins.uses[1])[0]) % w.lanes] = True
    w.write(ins.defs[0], w.read(ins.uses[0]), lanes=lane)


@_executes("v_accvgpr_read_b32", "v_accvgpr_write_b32")
def _accvgpr_move(w, ins):
    """A copy between the VGPR and AGPR halves of the unified register file, in the EXEC lanes."""
    w.write(ins.defs[0], w.read(ins.uses[0]))


@_executes("v_add_co_u32", "v_addc_co_u32", "v_sub_co_u32", "v_subb_co_u32")
def _carry_chain(w, ins):
    a, b = w.read(ins.uses[0]), w.read(ins.uses[1])
    carry_in = w.vcc.astype(np.uint64) if ins.opcode in ("v_addc_co_u32", "v_subb_co_u32") else np.uint64(0)
    if "add" in ins.opcode:
        total = a + b + carry_in
        carry = total > np.uint64(isa.M32)
    else:
        total = a - b - carry_in
        carry = b + carry_in > a
    w.write(ins.defs[0], total & np.uint64(isa.M32))
    w.vcc = np.where(w.exec, carry, False)


@_executes(*isa.VECTOR_F64)
def _vector_f64(w, ins):
    sources = (w.read(o, 2).view(np.float64) for o in ins.uses)
    w.write(ins.defs[0], np.asarray(isa.VECTOR_F64[ins.opcode](*sources)).view(np.uint64), 2)


@_executes("v_cvt_f64_f32")
def _cvt_f64_f32(w, ins):
    w.write(ins.defs[0], isa.f32(w.read(ins.uses[0])).astype(np.float64).view(np.uint64), 2)


@_executes("v_cvt_f32_f64")
def _cvt_f32_f64(w, ins):
    w.write(ins.defs[0], isa.bits(w.read(ins.uses[0], 2).view(np.float64).astype(np.float32)))


@_executes("v_mad_i64_i32", "v_mad_u64_u32")
def _mad_64(w, ins):
    """32 x 32 + 64 -> 64 bits; the carry-out into vcc is not modelled (tile never reads it)."""
    a, b, c = w.read(ins.uses[0]), w.read(ins.uses[1]), w.read(ins.uses[2], 2)
    if ins.opcode == "v_mad_i64_i32":
        product = isa.i32(a).astype(np.int64) * isa.i32(b).astype(np.int64)
        total = product.view(np.uint64) + c
    else:
        total = a * b + c
    w.write(ins.defs[0], total, 2)


@_executes("v_lshlrev_b64", "v_lshrrev_b64", "v_ashrrev_i64")
def _shift_64(w, ins):
    n = w.read(ins.uses[0]) & np.uint64(63)
    a = w.read(ins.uses[1], 2)
    if ins.opcode == "v_lshlrev_b64":
        value = a << n
    elif ins.opcode == "v_lshrrev_b64":
        value = a >> n
    else:
        value = (a.view(np.int64) >> n.astype(np.int64)).view(np.uint64)
    w.write(ins.defs[0], value, 2)


@_executes("v_cndmask_b32")
def _cndmask(w, ins):
    a, b = w.read(ins.uses[0]), w.read(ins.uses[1])
    w.write(ins.defs[0], np.where(w.mask(w.scalar(ins.uses[2], w.mask_width)), b, a))


@_executes(*isa.VECTOR_FLOAT)
def _vector_float(w, ins):
    w.write(ins.defs[0], isa.bits(isa.VECTOR_FLOAT[ins.opcode](*(isa.f32(w.read(o)) for o in ins.uses))))


@_executes("v_div_scale_f32")
def _div_scale(w, ins):
    scaled, flag = isa.div_scale(*(isa.f32(w.read(o)) for o in ins.uses))
    w.write(ins.defs[0], isa.bits(scaled))
    w.vcc = np.where(w.exec, flag, False)


@_executes("v_div_fmas_f32")
def _div_fmas(w, ins):
    """Reads vcc without naming it (the VOP3 encoding has no field for it)."""
    w.write(ins.defs[0], isa.bits(isa.div_fmas(*(isa.f32(w.read(o)) for o in ins.uses), w.vcc)))


@_executes("v_div_scale_f64")
def _div_scale_f64(w, ins):
    scaled, flag = isa.div_scale(*(w.read(o, 2).view(np.float64) for o in ins.uses), isa.F64_DIVISION)
    w.write(ins.defs[0], scaled.view(np.uint64), 2)
    w.vcc = np.where(w.exec, flag, False)


@_executes("v_div_fmas_f64")
def _div_fmas_f64(w, ins):
    """Reads vcc without naming it, as v_div_fmas_f32."""
    sources = (w.read(o, 2).view(np.float64) for o in ins.uses)
    w.write(ins.defs[0], isa.div_fmas(*sources, w.vcc, isa.F64_DIVISION).view(np.uint64), 2)


@_executes(*isa.VECTOR_INT)
def _vector_int(w, ins):
    value = np.asarray(isa.VECTOR_INT[ins.opcode](*(w.read(o) for o in ins.uses))).astype(np.uint64)
    w.write(ins.defs[0], value & np.uint64(isa.M32))


@_executes(*isa.VECTOR_SIGNED)
def _vector_signed(w, ins):
    value = np.asarray(isa.VECTOR_SIGNED[ins.opcode](*(isa.i32(w.read(o)) for o in ins.uses))).astype(np.int64)
    w.write(ins.defs[0], value.view(np.uint64) & np.uint64(isa.M32))


@_executes(*isa.CONVERSIONS)
def _conversion(w, ins):
    w.write(ins.defs[0], np.asarray(isa.CONVERSIONS[ins.opcode](w.read(ins.uses[0]))).astype(np.uint64))


def _mfma_values(operand_type: str, codes: np.ndarray) -> np.ndarray:
    """float64 values of MFMA operand codes (16-bit f16 / bf16, or the 8-bit fnuz formats of
    gfx942, decoded by tile.ir.float8's tables: 0x80 is their NaN)."""
    if operand_type == "bf16":
        return (codes << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
    if operand_type == "f16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    return FP8_TABLES[operand_type][codes.astype(np.int64)]


FP8_TABLES = {name: decode_table(DTYPES[name]) for name in MFMA_FP8_NAMES}


@_executes(*MFMA_SHAPES)
def _mfma(w, ins):
    """D = A x B + C with the lane layouts of the CDNA3 ISA's MFMA tables (chapter 7; see
    tile.ir.mfma_layouts): lane l holds values j of A's row l % M at k = V * (l // M) + j and
    of B's column l % N at the same k, V = 4 values of 16 bits or 8 of 8 bits per lane, the
    lowest bits first. Products and sums in float64 (exact for these inputs), one rounding to
    f32. The matrix core uses all 64 lanes: a partial EXEC is an error."""
    if not w.exec.all():
        raise w.error(f"{ins.opcode} under a partial EXEC")
    shape = MFMA_SHAPES[ins.opcode]
    m, n, k, per_lane = shape.m, shape.n, shape.k, shape.values_per_lane
    bits = 32 * shape.operand_dwords // per_lane
    lanes = np.arange(w.lanes)

    def words(o: Reg) -> np.ndarray:   # [dwords, lanes]
        return np.stack([w.read(o.dword(i)) for i in range(o.count)])

    def values(o: Reg, operand_type: str) -> np.ndarray:   # [per_lane, lanes]
        x, per_word = words(o), 32 // bits
        codes = [(x[i // per_word] >> np.uint64(bits * (i % per_word))) & np.uint64((1 << bits) - 1)
                 for i in range(per_lane)]
        return _mfma_values(operand_type, np.stack(codes))

    a_values, b_values = values(ins.uses[0], shape.operand_type), values(ins.uses[1], shape.b_operand_type)
    a, b = np.zeros((m, k)), np.zeros((k, n))
    for j in range(per_lane):
        a[lanes % m, per_lane * (lanes // m) + j] = a_values[j]
        b[per_lane * (lanes // n) + j, lanes % n] = b_values[j]
    c_words = words(ins.uses[2])

    def rows(r: int) -> np.ndarray:
        return 4 * (w.lanes // n) * (r // 4) + 4 * (lanes // n) + r % 4

    c = np.zeros((m, n))
    for r in range(c_words.shape[0]):
        c[rows(r), lanes % n] = isa.f32(c_words[r])
    with np.errstate(invalid="ignore", over="ignore"):
        result = (a @ b + c).astype(np.float32)
    for r in range(ins.defs[0].count):
        w.write(ins.defs[0].dword(r), isa.bits(result[rows(r), lanes % n]).astype(np.uint64))


def _decode_16bit(halves: np.ndarray, operand_type: str) -> np.ndarray:
    """16-bit values (uint64 holding the bits) as float64."""
    if operand_type == "bf16":
        return (halves << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
    return halves.astype(np.uint16).view(np.float16).astype(np.float64)


@_executes(*WMMA_SHAPES)
def _wmma(w, ins):
    """D = A x B + C for one wave of 32 with the lane layouts of RDNA3 ISA 7.9 (tile.ir.wmma_layouts),
    products and sums in float64, one rounding to f32. The whole wave takes part (a partial EXEC
    is an error), and the upper half of the wave must repeat the lower half's A and B (the
    ISA's layout: a difference there is an error here, not silently one half's data)."""
    if not w.exec.all():
        raise w.error(f"{ins.opcode} under a partial EXEC")
    shape = WMMA_SHAPES[ins.opcode]

    def values(o: Reg) -> np.ndarray:   # [16 values, lanes]: two 16-bit values per VGPR, low half first
        words = np.stack([w.read(o.dword(i)) for i in range(o.count)])
        return np.stack([(words[v // 2] >> np.uint64(16 * (v % 2))) & np.uint64(0xFFFF) for v in range(2 * o.count)])

    half = w.lanes // 2
    matrices = []
    for op_idx, operand in enumerate(ins.uses[:2]):
        raw = values(operand)
        if not np.array_equal(raw[:, :half], raw[:, half:]):
            lane = int(np.flatnonzero((raw[:, :half] != raw[:, half:]).any(axis=0))[0]) + half
            raise w.error(f"{ins.opcode}: lane {lane} holds other {'AB'[op_idx]} values than lane {lane - half} "
                          "(the two halves of the wave must hold the same)", lane)
        coords = wmma_operand_layout(op_idx).element_coords()[0]   # [lanes, values, 2]
        matrix = np.zeros((16, 16))
        matrix[coords[..., 0], coords[..., 1]] = _decode_16bit(raw, shape.operand_type).T
        matrices.append(matrix)
    d_coords = wmma_result_layout().element_coords()[0]   # [lanes, registers, 2]
    c = np.zeros((16, 16))
    c_words = np.stack([w.read(ins.uses[2].dword(r)) for r in range(shape.RESULT_DWORDS)])
    c[d_coords[..., 0], d_coords[..., 1]] = isa.f32(c_words).T
    result = (matrices[0] @ matrices[1] + c).astype(np.float32)
    for r in range(shape.RESULT_DWORDS):
        w.write(ins.defs[0].dword(r), isa.bits(result[d_coords[:, r, 0], d_coords[:, r, 1]]).astype(np.uint64))


# global memory -----------------------------------------------------------------------------
def _global_address(w, ins) -> np.ndarray:
    return w.read(ins.uses[0], 2) + np.uint64(ins.mods.get("offset", 0) & ((1 << 64) - 1))


def _check_alignment(w, address: np.ndarray, lanes: np.ndarray, size: int) -> None:
    bad = np.flatnonzero(lanes & (address % np.uint64(min(size, 4)) != 0))
    if bad.size:
        raise w.error(f"address {int(address[bad[0]]):#x} is not aligned to {min(size, 4)} bytes", int(bad[0]))


def _fail(w, positions: np.ndarray):
    return lambda position, why: w.error(why, int(positions[position]))


@_executes(*(name for name in INSTRUCTIONS if name.startswith(("global_load_", "global_store_"))))
def _global(w, ins):
    kind = ins.opcode.split("_", 2)[2]
    size = isa.GLOBAL_BYTES[kind]
    address = _global_address(w, ins)
    lanes = w.exec.copy()
    active = np.flatnonzero(lanes)
    _check_alignment(w, address, lanes, size)
    gmem = w.group.launch.gmem
    element, count = min(size, 4), max(1, size // 4)
    if "load" in ins.opcode:
        target = ins.defs[0]
        words = gmem.load(address[active], element, count, _fail(w, active)).astype(np.uint64)
        writes = []
        for k in range(count):
            raw = np.zeros(w.lanes, np.uint64)
            raw[active] = words[:, k]
            if kind in isa.SIGN_EXTENDED:
                sign = (raw >> np.uint64(8 * size - 1)) & np.uint64(1)
                raw = np.where(sign == 1, raw | np.uint64(isa.M32 ^ ((1 << (8 * size)) - 1)), raw)
            writes.append((target.dword(k), raw, lanes))
        w.issue("vmcnt", target, writes)
    else:
        data = ins.uses[1]
        values = np.stack([w.read(data.dword(k))[active] for k in range(count)], axis=1)
        values = (values & np.uint64((1 << (8 * element)) - 1)).astype(np.dtype(f"u{element}"))
        gmem.store(address[active], values, element, _fail(w, active))
        w.issue(counter(ins.opcode, w.group.kernel.target), None, [])


def _buffer_addressing(w, ins, vgpr_offset, resource, soffset) -> tuple[int, int, np.ndarray]:
    """A raw buffer access's (base address, num_records, per-lane byte offset): the offset is the
    VGPR (offen) + soffset + the immediate offset, in 32 bits; the resource must be a raw buffer
    of the kernel's target (isa.BUFFER_RESOURCE_CONFIG)."""
    words = [w.scalar(resource.dword(k)) for k in range(4)]
    base = words[0] | ((words[1] & BUFFER_BASE_HIGH_BITS) << 32)
    stride, num_records = words[1] >> 16, words[2]
    target = w.group.launch.kernel.target
    if stride or words[3] != BUFFER_RESOURCE_CONFIG[target]:
        raise w.error(f"{ins.opcode}: the resource is not a raw buffer of {target} (stride {stride}, "
                      f"dword 3 {words[3]:#x}, expected {BUFFER_RESOURCE_CONFIG[target]:#x})")
    if not ins.mods.get("offen"):
        raise w.error(f"{ins.opcode} without offen: tile's buffer accesses take their offset from the VGPR")
    offset = (w.read(vgpr_offset) + np.uint64(w.scalar(soffset)) + np.uint64(ins.mods.get("offset", 0))) \
        & np.uint64(isa.M32)
    return base, num_records, offset


def _buffer_components(w, base, num_records, offset, size: int):
    """(index, bytes, lanes in range, addresses) of each component of a buffer access of `size`
    bytes per lane (a dword, or the whole sub-dword value): one ending past num_records is out of
    range (the ISA's range checking); addresses in range are checked for alignment."""
    element, count = min(size, 4), max(1, size // 4)
    lanes = w.exec.copy()
    for k in range(count):
        start = offset + np.uint64(k * element)
        in_range = lanes & (start + np.uint64(element) <= np.uint64(num_records))
        address = np.uint64(base) + start
        _check_alignment(w, address, in_range, element)
        yield k, element, in_range, address


@_executes(*(name for name in INSTRUCTIONS if name.startswith("buffer_store_")))
def _buffer_store(w, ins):
    """A raw buffer store (offen; data first, then the offset VGPR, resource, soffset): each
    component (a dword, or the whole sub-dword value) ending past num_records writes nothing and
    faults nothing (the ISA's range checking, as for loads); the rest is a global store's."""
    data = ins.uses[0]
    base, num_records, offset = _buffer_addressing(w, ins, ins.uses[1], ins.uses[2], ins.uses[3])
    size = isa.GLOBAL_BYTES[ins.opcode.removeprefix("buffer_store_")]
    for k, element, in_range, address in _buffer_components(w, base, num_records, offset, size):
        active = np.flatnonzero(in_range)
        values = (w.read(data.dword(k))[active] & np.uint64((1 << (8 * element)) - 1)).astype(np.dtype(f"u{element}"))
        w.group.launch.gmem.store(address[active], values[:, None], element, _fail(w, active))
    w.issue(counter(ins.opcode, w.group.launch.kernel.target), None, [])


@_executes(*(name for name in INSTRUCTIONS if name.startswith("buffer_load_")))
def _buffer_load(w, ins):
    """A raw buffer load (offen): byte offset = the VGPR + soffset + the immediate offset, from
    the resource's base; each component (a dword, or the whole sub-dword value) ending past
    num_records reads 0 without touching memory (isa.BUFFER_RESOURCE_CONFIG: the ISA's range
    checking). Addresses in range are checked as a global load's are (alignment, allocation)."""
    base, num_records, offset = _buffer_addressing(w, ins, ins.uses[0], ins.uses[1], ins.uses[2])
    kind = ins.opcode.removeprefix("buffer_load_")
    size = isa.GLOBAL_BYTES[kind]
    lanes = w.exec.copy()
    writes = []
    for k, element, in_range, address in _buffer_components(w, base, num_records, offset, size):
        active = np.flatnonzero(in_range)
        raw = np.zeros(w.lanes, np.uint64)
        raw[active] = w.group.launch.gmem.load(address[active], element, 1, _fail(w, active))[:, 0]
        if kind in isa.SIGN_EXTENDED:
            sign = (raw >> np.uint64(8 * size - 1)) & np.uint64(1)
            raw = np.where(sign == 1, raw | np.uint64(isa.M32 ^ ((1 << (8 * size)) - 1)), raw)
        writes.append((ins.defs[0].dword(k), raw, lanes))
    w.issue("vmcnt", ins.defs[0], writes)


def _atomic_lanes(w, ins, address, lanes, size: int, apply, data, compare) -> np.ndarray:
    """Apply `apply(old, data, compare)` at `address` in each lane of `lanes`, one lane after
    another in lane order (as the hardware serialises one wave's accesses to one address); the
    old values (0 in the other lanes). Atomics need natural alignment."""
    misaligned = np.flatnonzero(lanes & (address % np.uint64(size) != 0))
    if misaligned.size:
        raise w.error(f"{ins.opcode}: address {int(address[misaligned[0]]):#x} is not aligned to {size} bytes",
                      int(misaligned[0]))
    gmem = w.group.launch.gmem
    old = np.zeros(w.lanes, np.uint64)
    unsigned = np.dtype(f"u{size}")
    for lane in np.flatnonzero(lanes):
        here = address[lane:lane + 1]
        fail = _fail(w, np.array([lane]))
        word = unsigned.type(gmem.load(here, size, 1, fail)[0, 0])
        new = apply(word, unsigned.type(int(data[lane])), unsigned.type(int(compare[lane])))
        gmem.store(here, np.array([[new]], unsigned), size, fail)
        old[lane] = word
    return old


@_executes(*(name for name in INSTRUCTIONS if name.startswith("global_atomic_")))
def _global_atomic(w, ins):
    """A 32- or 64-bit (_x2, _f64) global atomic, lane by lane in lane order; the old values land
    at the wait. Only the returning form (the target's isa.ATOMIC_RETURN_BIT: sc0, glc) exists in
    tile's table. cmpswap's data is the new value, then the value to compare with."""
    target = w.group.launch.kernel.target
    if not ins.mods.get(ATOMIC_RETURN_BIT[target]):
        raise w.error(f"{ins.opcode} without {ATOMIC_RETURN_BIT[target]} does not return the old value on {target}")
    name = ins.opcode.removeprefix("global_atomic_")
    wide = name.endswith(("_x2", "_f64"))
    size, apply = (8, isa.ATOMIC_64[name.removesuffix("_x2")]) if wide else (4, isa.ATOMIC[name])
    dwords = size // 4
    address = _global_address(w, ins)
    source = ins.uses[1]
    if name == "cmpswap":  # one 64-bit read holds both 32-bit operands
        both = w.read(source, 2)
        data, compare = both & np.uint64(isa.M32), both >> np.uint64(32)
    else:
        data = w.read(Reg(source.bank, source.first, dwords), dwords)
        compare = w.read(Reg(source.bank, source.first + dwords, dwords), dwords) if name.startswith("cmpswap") \
            else np.zeros(w.lanes, np.uint64)
    old = _atomic_lanes(w, ins, address, w.exec, size, apply, data, compare)
    writes = [(ins.defs[0].dword(k), (old >> np.uint64(32 * k)) & np.uint64(isa.M32), w.exec.copy())
              for k in range(dwords)]
    w.issue("vmcnt", ins.defs[0], writes)


@_executes(*(name for name in INSTRUCTIONS if name.startswith("buffer_atomic_")))
def _buffer_atomic(w, ins):
    """A raw buffer atomic (offen; data first, then the offset VGPR, resource, soffset), lane by
    lane in lane order as the hardware serialises one wave's accesses to one address. A lane whose
    value ends past num_records neither reads nor writes memory (the ISA's range checking, as for
    loads and stores; the whole 4- or 8-byte value is checked). The returning form (_rtn: the
    target's return bit) writes the old value over the data in the lanes in range when it lands;
    what it leaves in the others the ISA does not promise, and the model leaves their data there
    (the selector never reads those lanes unmasked). cmpswap's data is the new value then the
    compare value, and it returns the old value in the first half of them."""
    returning = ins.opcode.endswith(RETURNING_SUFFIX)
    name = INSTRUCTIONS[ins.opcode].assembler_name.removeprefix("buffer_atomic_")
    wide = name.endswith(("_x2", "_f64"))
    size, apply = (8, isa.ATOMIC_64[name.removesuffix("_x2")]) if wide else (4, isa.ATOMIC[name])
    dwords = size // 4
    data_reg = ins.uses[0]
    base, num_records, offset = _buffer_addressing(w, ins, ins.uses[1], ins.uses[2], ins.uses[3])
    in_range = w.exec & (offset + np.uint64(size) <= np.uint64(num_records))
    address = np.uint64(base) + offset
    data = w.read(Reg(data_reg.bank, data_reg.first, dwords), dwords)
    compare = w.read(Reg(data_reg.bank, data_reg.first + dwords, dwords), dwords) if name.startswith("cmpswap") \
        else np.zeros(w.lanes, np.uint64)
    old = _atomic_lanes(w, ins, address, in_range, size, apply, data, compare)
    if not returning:
        w.issue(counter(ins.opcode, w.group.launch.kernel.target), None, [])
        return
    writes = [(data_reg.dword(k), (old >> np.uint64(32 * k)) & np.uint64(isa.M32), in_range) for k in range(dwords)]
    w.issue("vmcnt", ins.defs[0], writes)


@_executes("buffer_wbl2", "buffer_inv", "buffer_wbinvl1_vol", "buffer_invl2", "buffer_gl1_inv", "buffer_gl0_inv")
def _cache_maintenance(w, ins):
    """One memory and no caches here: only the counter moves."""
    w.issue("vmcnt", None, [])


def _vop2_values(opcode: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The result bits of VALU op `opcode` (one of isa's VECTOR_FLOAT, VECTOR_SIGNED, VECTOR_INT
    rows of two sources) on uint64 lanes."""
    if opcode in isa.VECTOR_FLOAT:
        return isa.bits(isa.VECTOR_FLOAT[opcode](isa.f32(a), isa.f32(b))).astype(np.uint64)
    if opcode in isa.VECTOR_SIGNED:
        signed = np.asarray(isa.VECTOR_SIGNED[opcode](isa.i32(a), isa.i32(b))).astype(np.int64)
        return signed.view(np.uint64) & np.uint64(isa.M32)
    return np.asarray(isa.VECTOR_INT[opcode](a, b)).astype(np.uint64) & np.uint64(isa.M32)


@_executes(*(name for name, row in INSTRUCTIONS.items() if row.is_dpp))
def _dpp(w, ins):
    """A DPP instruction (CDNA3 ISA, chapter 6, DPP; RDNA3 ISA, DPP16): each lane reads its
    first source from the lane its control names (isa.dpp_source_lanes). The source is invalid
    where the control names none, or the lane is off in EXEC and fi (gfx1100's fetch inactive) is
    clear: an invalid source reads 0 with bound_ctrl set, else the lane is not written. Lanes
    of rows off in row_mask or banks off in bank_mask are not written either. v_mov_b32_dpp
    writes the value read; v_add_f32_dpp and the other VOP2 forms combine it with their second
    source as their VOP2 op does. (The code generator's merging row, v_mov_b32_dpp_merge, is
    the move with its result also its first source.)"""
    lanes = np.arange(w.lanes)
    row = INSTRUCTIONS[ins.opcode]
    sources = ins.uses[len(row.ties):]
    source, defined = isa.dpp_source_lanes(ins.mods["dpp_ctrl"], w.lanes, w.group.kernel.target)
    valid = defined & (w.exec[source] | bool(ins.mods.get("fi")))
    row_on = (ins.mods["row_mask"] >> (lanes // isa.DPP_ROW) & 1).astype(bool)
    bank_on = (ins.mods["bank_mask"] >> (lanes % isa.DPP_ROW // 4) & 1).astype(bool)
    written = w.exec & row_on & bank_on & (valid | bool(ins.mods.get("bound_ctrl")))
    moved = np.where(valid, w.read(sources[0])[source], np.uint64(0))
    base = row.assembler_name.removesuffix("_dpp")
    value = moved if base == "v_mov_b32" else _vop2_values(base, moved, w.read(sources[1]))
    w.write(ins.defs[0], value, lanes=written)


# LDS ---------------------------------------------------------------------------------------
@_executes("ds_bpermute_b32")
def _bpermute(w, ins):
    """dst[lane] = data[address[lane] / 4 mod 64] (CDNA3 ISA 10.2, through the LDS crossbar)."""
    address, data = w.read(ins.uses[0]), w.read(ins.uses[1])
    values = data[((address >> np.uint64(2)) & np.uint64(w.lanes - 1)).astype(np.int64)]
    w.issue("lgkmcnt", ins.defs[0], [(ins.defs[0], values, w.exec.copy())])


SWIZZLE_GROUP = 32   # the lanes ds_swizzle_b32's bit mode permutes among (written apart from the selector's)


@_executes("ds_swizzle_b32")
def _swizzle(w, ins):
    """DS_SWIZZLE_B32 (CDNA3 ISA and RDNA3 ISA): offset bit 15 clear, the bit mode: lane i of
    each group of 32 reads lane ((i & and_mask) | or_mask) ^ xor_mask of its group (the masks
    in offset bits 0-4, 5-9, 10-14); bit 15 set, below 0xE000, the quad mode: lane i reads lane
    (offset >> 2 (i mod 4)) & 3 of its quad. A source lane outside EXEC gives 0."""
    offset = ins.mods.get("offset", 0)
    if offset >= 0xE000:
        raise w.error(f"ds_swizzle_b32 offset {offset:#x}: the modes from 0xe000 up are not modelled")
    lane = np.arange(w.lanes)
    if offset & 0x8000:
        source = (lane & ~3) | ((offset >> (2 * (lane & 3))) & 3)
    else:
        group = SWIZZLE_GROUP
        and_mask, or_mask, xor_mask = offset & (group - 1), offset >> 5 & (group - 1), offset >> 10 & (group - 1)
        source = (lane & ~(group - 1)) | (((lane & and_mask) | or_mask) ^ xor_mask)
    data = w.read(ins.uses[0])
    values = np.where(w.exec[source], data[source], np.uint64(0))
    w.issue("lgkmcnt", ins.defs[0], [(ins.defs[0], values, w.exec.copy())])


def _lds_bytes(w, address: np.ndarray, lanes: np.ndarray, size: int) -> np.ndarray:
    """[active lanes, size] byte indices of LDS, bounds checked."""
    lds = w.group.lds
    active = np.flatnonzero(lanes)
    outside = np.flatnonzero(address[active] + np.uint64(size) > np.uint64(lds.size))
    if outside.size:
        lane = int(active[outside[0]])
        raise w.error(f"LDS access of {size} bytes at {int(address[lane])} is outside its {lds.size} bytes", lane)
    return address[active].astype(np.int64)[:, None] + np.arange(size)


def _count_banks(w, ins, lanes: np.ndarray, address: np.ndarray, size: int) -> None:
    """Record the access's LDS clocks where a count_lds_bank_conflicts block asks for them."""
    counter = active_counter()
    if counter is not None:
        active = np.flatnonzero(lanes)
        counter.record(w.group.kernel.target, ins, active, address[active], size)


@_executes("ds_add_u32")
def _lds_add(w, ins):
    """The LDS atomic add, lane by lane in lane order (no return; it counts in lgkmcnt like every
    LDS access until it completes)."""
    address = w.read(ins.uses[0]) + np.uint64(ins.mods.get("offset", 0))
    data = w.read(ins.uses[1])
    index = _lds_bytes(w, address, w.exec, 4)
    _count_banks(w, ins, w.exec, address, 4)
    lds = w.group.lds
    for row, lane in zip(index, np.flatnonzero(w.exec)):
        total = (int.from_bytes(lds[row].tobytes(), "little") + int(data[lane])) & isa.M32
        lds[row] = np.frombuffer(total.to_bytes(4, "little"), np.uint8)
    w.issue("lgkmcnt", None, [])


@_executes(*(name for name in INSTRUCTIONS if name.startswith(("ds_read_", "ds_write_"))))
def _lds(w, ins):
    kind = ins.opcode.split("_")[2]
    size = isa.LDS_BYTES[kind]
    address = w.read(ins.uses[0]) + np.uint64(ins.mods.get("offset", 0))
    lanes = w.exec.copy()
    active = np.flatnonzero(lanes)
    index = _lds_bytes(w, address, lanes, size)
    _count_banks(w, ins, lanes, address, size)
    lds = w.group.lds
    element, count = min(size, 4), max(1, size // 4)
    weights = np.uint64(1) << (np.uint64(8) * np.arange(element, dtype=np.uint64))
    w.group.lds_access(w, index, ins.opcode.startswith("ds_write"))
    if ins.opcode.startswith("ds_write"):
        for k in range(count):
            data = w.read(ins.uses[1].dword(k))[active]
            lds[index[:, 4 * k:4 * k + element]] = ((data[:, None] // weights) & np.uint64(0xFF)).astype(np.uint8)
        w.issue("lgkmcnt", None, [])   # a write counts in lgkmcnt until done, in order with reads
        return
    target = ins.defs[0]
    writes = []
    for k in range(count):
        raw = np.zeros(w.lanes, np.uint64)
        raw[active] = (lds[index[:, 4 * k:4 * k + element]].astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
        if kind in isa.SIGN_EXTENDED:
            sign = (raw >> np.uint64(8 * element - 1)) & np.uint64(1)
            raw = np.where(sign == 1, raw | np.uint64(isa.M32 ^ ((1 << (8 * element)) - 1)), raw)
        writes.append((target.dword(k), raw, lanes))
    if ins.opcode in D16_MERGE_KEEPS:   # one half written as it lands, the other kept
        keep = D16_MERGE_KEEPS[ins.opcode]
        shift = np.uint64(16 if keep == 0x0000FFFF else 0)
        writes = [(target, writes[0][1] << shift, lanes, keep)]
    w.issue("lgkmcnt", target, writes)


MACHINE_OWNED = ("s_endpgm", "s_barrier", "s_branch", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_execz", "label")
