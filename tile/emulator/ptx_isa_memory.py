"""PTX memory, warp, barrier and control instructions (part of the table in ptx_isa).

    ld / st            .global .shared .local .param, .v2 .v4, cache and eviction hints accepted
    atom / red         add min max inc dec and or xor exch cas; run one thread at a time per
                       address (threads that hit one address are applied in thread order)
    shfl.sync          up down bfly idx, with the clamp/segment operand; full-warp masks checked
    vote.sync          ballot any all uni
    bar.sync, membar, fence     barriers check arrival (the machine); fences order nothing more
                                 than the emulator's already sequential memory
    bra ret exit trap  control (the machine schedules branches and exits)
    call.uni           vprintf and __assertfail, the two functions tile's PTX calls
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .errors import EmulatorError
from .machine import BARRIER, BRANCH, EXIT, NP_TYPE, OP, TYPE_BITS, Machine
from .memory import UINT
from .program import Instr
from .ptx_isa import ISA, OpDef, define, facts, float_min_max

SPACES = ("global", "shared", "local", "param", "const")
_CACHE = ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "nc", "relaxed", "acquire", "release", "weak",
          "gpu", "cta", "sys", "L1::evict_first", "L1::evict_last", "L1::evict_normal", "L1::no_allocate",
          "L1::evict_unchanged", "L2::evict_first", "L2::evict_last", "L2::cache_hint", "L2::64B", "L2::128B",
          "L2::256B", "shared::cta")
_MEM_TYPES = ("b8", "u8", "s8", "b16", "u16", "s16", "f16", "bf16", "b32", "u32", "s32", "f32", "b64", "u64", "s64",
              "f64")
LOCAL_WINDOW = 1 << 62  # generic addresses of local memory (cvta.local): this base plus the offset


def _decode_ldst(ins: Instr) -> Any:
    facts(_MEM_TYPES, SPACES + _CACHE + ("v2", "v4"), operands=2)(ins)
    space = [x for x in ins.mods if x in SPACES]
    if len(space) > 1:
        raise ValueError("names two state spaces")
    vec = 4 if "v4" in ins.mods else 2 if "v2" in ins.mods else 1
    values = ins.operands[0] if ins.opcode == "ld" else ins.operands[1]
    addr = ins.operands[1] if ins.opcode == "ld" else ins.operands[0]
    if addr[0] != "addr":
        raise ValueError("needs an address operand [..]")
    n = len(values[1]) if values[0] == "vec" else 1
    if n != vec:
        raise ValueError(f"moves {vec} values but names {n}")
    return (space[0] if space else "generic", vec, TYPE_BITS[ins.types[0]] // 8)


def effective_address(m: Machine, addr: tuple, wide: bool) -> np.ndarray:
    """The addresses of a memory operand for the active threads (uint64, or int64 offsets)."""
    base, offset = addr[1], addr[2]
    if base[0] == "reg":
        a = np.asarray(m.read(base, "u64" if wide else "u32"))
        a = a.astype(np.uint64) + np.uint64(offset & 0xFFFFFFFFFFFFFFFF) if wide else \
            (a.astype(np.int64) + offset) & 0xFFFFFFFF
    else:
        a = np.asarray(m.symbol(base[1], base[2] + offset), np.uint64 if wide else np.int64)
    return np.broadcast_to(a, (m.count,)) if a.ndim == 0 else a


def _check_aligned(m: Machine, addr: np.ndarray, nbytes: int) -> None:
    bad = (addr % nbytes) != 0
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise m.error(f"{m.ins.opcode}: misaligned address 0x{int(addr[k]):x} for a {nbytes}-byte access", k)


def _space(m: Machine, spec: tuple, addr: tuple) -> str:
    space = spec[0]
    if space == "generic":  # tile's generic accesses come from cvta'd symbols (printf buffers)
        raise m.error(f"{m.ins.opcode}: generic addressing is not supported; name the state space")
    return space


def load_bits(m: Machine, space: str, addr_op: tuple, width: int, count: int) -> np.ndarray:
    """[active, count] unsigned ints of `width` bytes read from memory."""
    if space == "param":
        base = addr_op[1]
        if base[0] != "sym":
            raise m.error("ld.param needs a parameter name")
        if base[1] in m.call_params:
            vals = m.call_params[base[1]]
        else:
            found = m.params.get(base[1])
            if found is None:
                raise m.error(f"unknown parameter {base[1]}")
            vals = np.uint64(found)
        v = np.broadcast_to(np.asarray(vals).astype(np.uint64) & np.uint64((1 << (8 * width)) - 1 if width < 8 else
                                                                           0xFFFFFFFFFFFFFFFF), (m.count,))
        return v.astype(UINT[width])[:, None]
    wide = space == "global"
    addr = effective_address(m, addr_op, wide)
    _check_aligned(m, addr, width * count)
    if m.tracer is not None:
        m.tracer.accessed(m, space, "ld", addr, width * count)
    if space == "global":
        return m.gmem.load(addr, width, count, m.fail)
    store = m.smem if space == "shared" else m.local
    rows = m.cta_local[m.positions()] if space == "shared" else m.positions()
    idx = store.index(rows, addr, width * count, width, m.fail)
    if space == "shared":
        m.checks.access(m, idx, width, count, False)
    return store.load(idx, width, count)


def store_bits(m: Machine, space: str, addr_op: tuple, values: np.ndarray, width: int) -> None:
    if space == "param":
        m.call_params[addr_op[1][1]] = values[:, 0]
        return
    wide = space == "global"
    addr = effective_address(m, addr_op, wide)
    _check_aligned(m, addr, width * values.shape[1])
    if m.tracer is not None:
        m.tracer.accessed(m, space, "st", addr, width * values.shape[1], values)
    if space == "global":
        m.gmem.store(addr, values, width, m.fail)
        return
    store = m.smem if space == "shared" else m.local
    rows = m.cta_local[m.positions()] if space == "shared" else m.positions()
    idx = store.index(rows, addr, width * values.shape[1], width, m.fail)
    if space == "shared":
        m.checks.access(m, idx, width, values.shape[1], True)
    store.store(idx, values, width)


def _mem_type(t: str, width: int) -> str:
    """How a loaded element is written to its register: 8-bit values extend by signedness."""
    return t if width > 1 else ("s8" if t == "s8" else "u8")


@define("ld", _decode_ldst)
def _ld(m: Machine, ins: Instr) -> None:
    space, count, width = ins.spec
    space = _space(m, ins.spec, ins.operands[1])
    t = ins.types[0]
    bits = load_bits(m, space, ins.operands[1], width, count)
    dests = ins.operands[0][1] if ins.operands[0][0] == "vec" else (ins.operands[0],)
    vt = _mem_type(t, width)
    for j, d in enumerate(dests):
        m.write(d, bits[:, j].view(NP_TYPE[vt]), vt)


@define("st", _decode_ldst)
def _st(m: Machine, ins: Instr) -> None:
    space, count, width = ins.spec
    space = _space(m, ins.spec, ins.operands[0])
    srcs = ins.operands[1][1] if ins.operands[1][0] == "vec" else (ins.operands[1],)
    vt = f"b{8 * width}" if width > 1 else "u8"
    cols = [np.broadcast_to(np.asarray(m.read(s, vt)).view(UINT[width]) if width > 1 else
                            np.asarray(m.read(s, vt)), (m.count,)) for s in srcs]
    store_bits(m, space, ins.operands[0], np.stack(cols, axis=1), width)


# ------------------------------------------------------------------ atomics

_ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
_ATOM_TYPES = ("b32", "b64", "u32", "s32", "u64", "s64", "f32", "f64", "f16", "bf16", "b16")
_SEM = ("relaxed", "acquire", "release", "acq_rel", "gpu", "cta", "sys", "noftz")


def _decode_atom(ins: Instr) -> Any:
    facts(_ATOM_TYPES, ("global", "shared") + _SEM, required=[_ATOM_OPS])(ins)
    op = next(x for x in ins.mods if x in _ATOM_OPS)
    want = (0 if ins.opcode == "red" else 1) + 2 + (op == "cas")
    if len(ins.operands) != want:
        raise ValueError(f"takes {want} operands")
    space = "shared" if "shared" in ins.mods else "global"
    return (op, space)


def _combine(op: str, old: np.ndarray, b: np.ndarray, c: Any, t: str) -> np.ndarray:
    """The value an atomic leaves in memory (value arrays of type t)."""
    if op == "add":
        if t == "bf16":  # the f32 sum of two bf16 values, rounded to nearest even
            from ..ir.types import bf16
            from ..runtime.interp_dtypes import from_bits, round_float, to_bits

            return to_bits(round_float(from_bits(old, bf16) + from_bits(b, bf16), bf16), bf16)
        if t == "f32":  # atom.add.f32 flushes subnormals
            from .ptx_isa import flush

            return flush(flush(old) + flush(b))
        return old + b
    if op in ("min", "max"):
        if t in ("f32", "f64", "f16"):
            return float_min_max(old, b, op == "max", False)
        return np.maximum(old, b) if op == "max" else np.minimum(old, b)
    if op == "inc":
        return np.where(old >= b, 0, old + 1).astype(old.dtype)
    if op == "dec":
        return np.where((old == 0) | (old > b), b, old - 1).astype(old.dtype)
    if op == "and":
        return old & b
    if op == "or":
        return old | b
    if op == "xor":
        return old ^ b
    if op == "exch":
        return np.broadcast_to(b, old.shape)
    return np.where(old == b, c, old).astype(old.dtype)


def _read_modify_write(typed: np.ndarray, idx: np.ndarray, op: str, b: np.ndarray, c: Any, t: str) -> np.ndarray:
    """Apply the atomic for each thread (threads on one address one after another, in thread
    order); returns the old values each thread saw."""
    vt = NP_TYPE[t] if t != "bf16" else np.uint16
    view = typed.view(vt) if typed.dtype.itemsize == np.dtype(vt).itemsize else typed
    old = np.empty(idx.size, vt)
    pending = np.arange(idx.size)
    while pending.size:
        _, first = np.unique(idx[pending], return_index=True)
        now = pending[first]
        cur = view[idx[now]]
        old[now] = cur
        cc = c[now] if isinstance(c, np.ndarray) and c.ndim else c
        view[idx[now]] = _combine(op, cur, b[now], cc, t)
        pending = np.delete(pending, first)
    return old


def _atomic(m: Machine, ins: Instr) -> None:
    op, space = ins.spec
    t = ins.types[0]
    width = TYPE_BITS[t] // 8
    addr_op = ins.operands[0 if ins.opcode == "red" else 1]
    vals = ins.operands[1:] if ins.opcode == "red" else ins.operands[2:]
    vt = t if t != "bf16" else "b16"
    b = np.broadcast_to(np.asarray(m.read(vals[0], vt)), (m.count,))
    c = np.broadcast_to(np.asarray(m.read(vals[1], vt)), (m.count,)) if op == "cas" else None
    old = np.empty(m.count, NP_TYPE[vt])
    if space == "global":
        addr = effective_address(m, addr_op, True)
        _check_aligned(m, addr, width)
        for alloc, pos in m.gmem.locate(addr, width, m.fail):
            if not alloc.writable:
                raise m.fail(0, f"'{alloc.name}' is read-only")
            typed, base = m.gmem.view(alloc, width)
            sel = slice(None) if pos is None else pos
            idx = ((addr[sel] - np.uint64(base)) // np.uint64(width)).astype(np.int64)
            old[sel] = _read_modify_write(typed, idx, op, b[sel], None if c is None else c[sel], t)
    else:
        addr = effective_address(m, addr_op, False)
        _check_aligned(m, addr, width)
        idx = m.smem.index(m.cta_local[m.positions()], addr, width, width, m.fail)
        old[:] = _read_modify_write(m.smem.typed(width), idx, op, b, c, t)
    if ins.opcode == "atom":
        m.write(ins.operands[0], old, vt)


define(("atom", "red"), _decode_atom)(_atomic)


# ------------------------------------------------------------------ warps

def _decode_shfl(ins: Instr) -> Any:
    facts(("b32",), ("sync",), required=[("up", "down", "bfly", "idx")], operands=5)(ins)
    if "sync" not in ins.mods:
        raise ValueError("only shfl.sync is supported")
    return next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))


@define("shfl", _decode_shfl)
def _shfl(m: Machine, ins: Instr) -> None:
    mode = ins.spec
    d, a, b, c, mask = ins.operands
    membermask = int(np.asarray(m.read(mask, "u32")).flat[0]) if mask[0] == "imm" else None
    if membermask == 0xFFFFFFFF:
        m.require_full_warps()
    pos = m.positions()
    lane = (pos % 32).astype(np.int64)
    bval = np.asarray(m.read(b, "u32")).astype(np.int64) & 31
    cval = np.asarray(m.read(c, "u32")).astype(np.int64)
    seg = (cval >> 8) & 31
    max_lane = (lane & seg) | (cval & 31 & ~seg)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == "down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg)
        ok = j <= max_lane
    j = np.where(ok, j, lane)
    src = m.full(a) if a[0] == "reg" else None
    if src is None:
        value = np.broadcast_to(np.asarray(m.read(a, "b32")), pos.shape)
    else:
        value = src[pos - lane + j].view(np.uint32) if m.reg_bits[a[1]] == 32 else src[pos - lane + j]
    m.write(d, value, "b32")


@define("vote", facts(("b32", "pred"), ("sync",), required=[("ballot", "any", "all", "uni")], operands=3))
def _vote(m: Machine, ins: Instr) -> None:
    kind = next(x for x in ins.mods if x in ("ballot", "any", "all", "uni"))
    m.require_full_warps()
    p = np.broadcast_to(np.asarray(m.read(ins.operands[1], "pred")), (m.count,))
    pos = m.positions()
    warp = pos // 32
    first = np.unique(warp, return_inverse=True)[1]
    bits = np.zeros(first.max() + 1 if first.size else 0, np.uint64)
    np.bitwise_or.at(bits, first, p.astype(np.uint64) << (pos % 32).astype(np.uint64))
    word = bits[first]
    full = np.uint64(0xFFFFFFFF)
    if kind == "ballot":
        m.write(ins.operands[0], word.astype(np.uint32), "b32")
    elif kind == "any":
        m.write(ins.operands[0], word != 0, "pred")
    elif kind == "all":
        m.write(ins.operands[0], word == full, "pred")
    else:
        m.write(ins.operands[0], (word == 0) | (word == full), "pred")


# ------------------------------------------------------------------ barriers and control

def _no_op(m: Machine, ins: Instr) -> None:
    return None


def _bar_sync(m: Machine, ins: Instr) -> None:
    """Every live thread of the CTAs here passed the barrier (the machine checked): a new epoch."""
    pos = m.positions()
    m.checks.barrier(pos, m.cta_local[pos])


def _decode_bar(ins: Instr) -> Any:
    """bar.sync 0 (every live thread of the CTA: spec None, the machine's plain barrier), or a
    counted / named form: spec (arrive only, has a thread count)."""
    facts((), ("sync", "aligned", "cta", "arrive", "red", "warp"), count=0)(ins)
    if "red" in ins.mods or "warp" in ins.mods:
        raise ValueError("bar.red and bar.warp are not supported")
    arrive = "arrive" in ins.mods
    if len(ins.operands) not in ((2,) if arrive else (1, 2)):
        raise ValueError("takes a barrier number and " + ("a thread count" if arrive else "an optional thread count"))
    if any(o[0] not in ("imm", "reg") for o in ins.operands):
        raise ValueError("the barrier number and thread count are registers or immediates")
    if not arrive and len(ins.operands) == 1 and ins.operands[0] == ("imm", 0):
        return None
    return arrive, len(ins.operands) == 2


def _fence(m: Machine, ins: Instr) -> None:
    """Fences order nothing more in the emulator's sequentially consistent memory, but
    fence.proxy.async makes the thread's shared-memory writes visible to the async proxy
    (wgmma operand reads, TMA stores), which the checks track."""
    if "proxy" in ins.mods and "async" in ins.mods and "global" not in ins.mods:
        m.checks.proxy_fence(m.positions())


def _decode_fence(ins: Instr) -> Any:
    """fence and fence.proxy.async; fence.proxy.tensormap::generic.release / .acquire [map], 128."""
    tensormap = "tensormap::generic" in ins.mods
    facts((), ("sc", "acq_rel", "gpu", "cta", "sys", "proxy", "async", "shared::cta", "global", "alias") +
          (("tensormap::generic", "release", "acquire") if tensormap else ()), count=0,
          operands=None if tensormap else 0)(ins)
    if tensormap and len(ins.operands) not in (0, 2):
        raise ValueError("fence.proxy.tensormap::generic takes no operands, or [map] and its size")
    return None


ISA["bar"] = OpDef(_bar_sync, _decode_bar, BARRIER)
ISA["barrier"] = OpDef(_bar_sync, _decode_bar, BARRIER)
ISA["membar"] = OpDef(_no_op, facts((), ("gl", "cta", "sys"), count=0, operands=0))
ISA["fence"] = OpDef(_fence, _decode_fence)
ISA["bra"] = OpDef(_no_op, facts((), ("uni",), count=0), BRANCH)
ISA["ret"] = OpDef(_no_op, facts((), ("uni",), count=0, operands=0), EXIT)
ISA["exit"] = OpDef(_no_op, facts((), (), count=0, operands=0), EXIT)


@define("trap", facts((), (), count=0, operands=0))
def _trap(m: Machine, ins: Instr) -> None:
    raise m.error("trap: the kernel aborted", 0)


# ------------------------------------------------------------------ calls: printf and assert

def _decode_call(ins: Instr) -> Any:
    facts((), ("uni",), count=0)(ins)
    names = [o[1] for o in ins.operands if o[0] == "sym"]
    if not names or names[0] not in ("vprintf", "__assertfail"):
        raise ValueError(f"calls only vprintf and __assertfail, not {names[0] if names else '?'}")
    lists = [o[1] for o in ins.operands if o[0] == "list"]
    return names[0], lists[-1] if lists else ()


def _c_string(m: Machine, address: int) -> str:
    out = bytearray()
    while len(out) < 4096:
        byte = int(m.gmem.load(np.array([address + len(out)], np.uint64), 1, 1, m.fail)[0, 0])
        if byte == 0:
            break
        out.append(byte)
    return out.decode(errors="replace")


_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(hh|h|ll|l|z)?([diouxXeEfgGcsp%])")


def _format(m: Machine, fmt: str, thread: int, buf: int) -> str:
    offset = buf - LOCAL_WINDOW
    row = m.local.data[thread * m.local.size:(thread + 1) * m.local.size]

    def arg(size: int) -> bytes:
        nonlocal offset
        offset = -(-offset // size) * size
        raw = bytes(row[offset:offset + size])
        offset += size
        return raw

    def repl(match: re.Match) -> str:
        flags, length, conv = match.groups()
        if conv == "%":
            return "%"
        if conv in "eEfgG":
            value: Any = np.frombuffer(arg(8), np.float64)[0]
        elif conv in "sp":
            addr = int(np.frombuffer(arg(8), np.uint64)[0])
            return _c_string(m, addr) if conv == "s" else hex(addr)
        else:
            size = 8 if length in ("ll", "l", "z") else 4
            value = int(np.frombuffer(arg(size), np.int64 if size == 8 else np.int32)[0])
            if conv in "uxXo" and value < 0:
                value += 1 << (8 * size)
            if conv == "c":
                return chr(value & 0xFF)
            conv = "d" if conv in "iu" else conv
        return f"%{flags}{conv}" % value

    return _SPEC.sub(repl, fmt)


@define("call", _decode_call)
def _call(m: Machine, ins: Instr) -> None:
    name, params = ins.spec
    values = [np.broadcast_to(np.asarray(m.call_params[p]), (m.count,)) for p in params]
    pos = m.positions()
    if name == "vprintf":
        for k, t in enumerate(pos):
            print(_format(m, _c_string(m, int(values[0][k])), int(t), int(values[1][k])), end="")
        return
    message, file, function = (_c_string(m, int(values[i][0])) for i in (0, 1, 3))
    raise EmulatorError(m.kernel.name, f"device-side assertion failed: {file}:{int(values[2][0])}: {function}: "
                                       f"{message}", ins.source, m.thread_info(0))


__all__ = ["SPACES", "LOCAL_WINDOW", "load_bits", "store_bits", "effective_address", "OP"]
