"""A NumPy model of gfx942 waves running tile's final MIR: the oracle of the AMDGCN tests.

It runs the instructions the backend emits (physical registers, after waits and wait states)
for every workgroup of a grid and every wave of 64 lanes, with EXEC, VCC and SCC, global
memory as NumPy buffers, and kernel arguments laid out as the metadata says. Loads land late:
a load's result is written only when an s_waitcnt drains it, and touching its registers
before that is an error, so a missing wait fails a test instead of reading stale data.
Accesses outside the buffers (in active lanes) are errors too. Semantics follow the CDNA3 ISA
reference; only the instructions of isa.INSTRUCTIONS exist.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tile.codegen.amdgcn import AmdgcnKernel
from tile.codegen.amdgcn.mir import EXEC, Imm, Special, Sub

LANES = 64
BASE = 1 << 32   # buffers start at 4 GiB and every 4 GiB after
KERNARG_ADDRESS = 0x1000
RNG_LDS = np.random.default_rng(7)   # LDS starts with garbage, as on the hardware


class SimulationError(AssertionError):
    pass


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.uint32).view(np.float32)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def _i32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.uint32).view(np.int32)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lg": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


class Wave:
    def __init__(self, sim: "Simulator", workgroup: tuple[int, int, int], first_thread: int, threads: int):
        self.sim = sim
        self.s = np.zeros(128, np.uint64)   # each SGPR's 32 bits
        self.v = np.zeros((256, LANES), np.uint64)
        lanes = np.arange(LANES)
        self.exec = first_thread + lanes < threads
        self.vcc = np.zeros(LANES, bool)
        self.scc = False
        self.pending: list[tuple[str, list, Any]] = []   # (counter, cells, values) in issue order
        self.s[0], self.s[1] = KERNARG_ADDRESS & 0xFFFFFFFF, KERNARG_ADDRESS >> 32
        for k, axis in enumerate(sim.kernel.selection.workgroup_id_axes):
            self.s[2 + k] = workgroup[axis]
        self.v[0] = first_thread + lanes

    # registers ---------------------------------------------------------------------
    def cells(self, o: Sub) -> list[tuple[str, int]]:
        first = self.sim.kernel.assignment[o.reg] + o.start
        return [(o.bank, first + k) for k in range(o.count)]

    def check_ready(self, o) -> None:
        if isinstance(o, Sub):
            busy = {c for _, cells, _ in self.pending for c in cells}
            if busy & set(self.cells(o)):
                raise SimulationError(f"{o.bank}{self.cells(o)[0][1]} is touched before its load was waited for")

    def read(self, o, width: int = 1) -> np.ndarray:
        """Per-lane uint64 values of operand `o` (`width` dwords)."""
        self.check_ready(o)
        if isinstance(o, Imm):
            return np.full(LANES, o.value & ((1 << (32 * width)) - 1), np.uint64)
        if isinstance(o, Special):
            return np.full(LANES, self.mask_bits(self.exec if o == EXEC else self.vcc), np.uint64)
        index = self.sim.kernel.assignment[o.reg] + o.start
        if o.bank == "s":
            words = [np.full(LANES, self.s[index + k], np.uint64) for k in range(width)]
        else:
            words = [self.v[index + k].copy() for k in range(width)]
        return sum((w << np.uint64(32 * k) for k, w in enumerate(words)), np.zeros(LANES, np.uint64))

    def write(self, o, values: np.ndarray, width: int = 1, lanes: np.ndarray = None) -> None:
        self.check_ready(o)
        values = np.asarray(values).astype(np.uint64) if not isinstance(values, int) else np.full(LANES, values, np.uint64)
        if isinstance(o, Special):
            mask = np.array([(int(values[0]) >> k) & 1 for k in range(LANES)], bool)
            if o == EXEC:
                self.exec = mask
            else:
                self.vcc = mask
            return
        if isinstance(values, np.ndarray) and values.ndim == 0:
            values = np.full(LANES, values, np.uint64)
        index = self.sim.kernel.assignment[o.reg] + o.start
        for k in range(width):
            word = (values >> np.uint64(32 * k)) & np.uint64(0xFFFFFFFF)
            if o.bank == "s":
                self.s[index + k] = word[0]
            else:
                active = self.exec if lanes is None else lanes
                self.v[index + k][active] = word[active]

    def mask(self, bits: np.ndarray) -> np.ndarray:
        return np.array([(int(bits[0]) >> k) & 1 for k in range(LANES)], bool)

    def mask_bits(self, lanes: np.ndarray) -> int:
        return sum(1 << k for k in range(LANES) if lanes[k])

    # execution -----------------------------------------------------------------------
    def run(self):
        """A generator: runs until each s_barrier (yields) and to s_endpgm (returns)."""
        insts = self.sim.kernel.insts
        labels = {i.uses[0]: k for k, i in enumerate(insts) if i.opcode == "label"}
        pc, steps = 0, 0
        while pc < len(insts):
            inst = insts[pc]
            pc += 1
            steps += 1
            if steps > 1_000_000:
                raise SimulationError("more than a million instructions: a loop that does not end?")
            if inst.opcode == "s_endpgm":
                return
            if inst.opcode == "s_barrier":
                yield
            elif inst.opcode == "s_branch" or (inst.opcode == "s_cbranch_scc1" and self.scc) or (
                    inst.opcode == "s_cbranch_scc0" and not self.scc) or (
                    inst.opcode == "s_cbranch_execz" and not self.exec.any()):
                pc = labels[inst.uses[0]]
            elif inst.opcode not in ("label", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_execz"):
                self.step(inst)
        raise SimulationError("the program ran past its end without s_endpgm")

    def step(self, inst) -> None:
        op, d, u = inst.opcode, inst.defs, inst.uses
        if op == "s_waitcnt":
            self.wait(inst.mods)
            return
        if op == "s_nop":
            return
        for o in d + u:
            self.check_ready(o)
        if op.startswith("s_load_dword"):
            address = np.full(LANES, int(self.read(u[0], 2)[0]) + u[1].value, np.uint64)
            writes = [(_sub(d[0], k, 1), self.sim.load(address + np.uint64(4 * k), 4, np.ones(LANES, bool)), None)
                      for k in range(d[0].count)]
            self.pending.append(("lgkmcnt", self.cells(d[0]), writes))
            return
        if op.startswith("global_atomic"):
            self.atomic(inst)
            return
        if op.startswith("global_"):
            self.memory(inst)
            return
        if op in ("buffer_wbl2", "buffer_inv"):   # one memory, no caches: only the counter moves
            self.pending.append(("vmcnt", [], []))
            return
        if op.startswith("ds_"):
            self.lds(inst)
            return
        if op.startswith("s_"):
            self.scalar(op, d, u)
        elif op.startswith("v_mfma_"):
            self.mfma(op, d, u)
        else:
            self.vector(op, d, u)

    def wait(self, counts: dict) -> None:
        for counter in ("vmcnt", "lgkmcnt"):
            if counter not in counts:
                continue
            mine = [p for p in self.pending if p[0] == counter]
            for p in mine[:max(0, len(mine) - counts[counter])]:
                self.pending.remove(p)
                for target, values, lanes in p[2]:
                    self.write(target, values, 1, lanes)

    def memory(self, inst) -> None:
        op, d, u = inst.opcode, inst.defs, inst.uses
        kind = op.split("_", 2)[2]
        size = {"ubyte": 1, "sbyte": 1, "byte": 1, "ushort": 2, "sshort": 2, "short": 2, "dword": 4,
                "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}[kind]
        with np.errstate(over="ignore"):
            address = self.read(u[0], 2) + np.uint64(inst.mods.get("offset", 0) & ((1 << 64) - 1))
        lanes = self.exec.copy()
        if "load" in op:
            writes = []
            for k in range(max(1, size // 4)):
                raw = self.sim.load(address + np.uint64(4 * k), min(size, 4), lanes)
                if kind in ("sbyte", "sshort"):
                    raw = np.where(raw >> np.uint64(8 * size - 1) & np.uint64(1),
                                   raw | np.uint64(0xFFFFFFFF ^ ((1 << (8 * size)) - 1)), raw)
                writes.append((_sub(d[0], k, 1), raw, lanes))
            self.pending.append(("vmcnt", self.cells(d[0]), writes))
        else:
            for k in range(max(1, size // 4)):
                self.sim.store(address + np.uint64(4 * k), min(size, 4), lanes, self.read(_sub(u[1], k, 1)))
            self.pending.append(("vmcnt", [], []))

    def atomic(self, inst) -> None:
        """A 32-bit global atomic, lane by lane in lane order; the old values land at the wait.
        Only the returning form (sc0) exists in tile's table."""
        op, d, u = inst.opcode, inst.defs, inst.uses
        if not inst.mods.get("sc0"):
            raise SimulationError(f"{op} without sc0 does not return the old value")
        with np.errstate(over="ignore"):
            address = self.read(u[0], 2) + np.uint64(inst.mods.get("offset", 0) & ((1 << 64) - 1))
        data = self.read(u[1], 2 if op.endswith("cmpswap") else 1)
        old = np.zeros(LANES, np.uint64)
        for lane in np.flatnonzero(self.exec):
            buf, off = self.sim.locate(int(address[lane]), 4)
            word = np.frombuffer(bytes(buf[off:off + 4]), np.uint32)[0]
            value = np.uint32(int(data[lane]) & 0xFFFFFFFF)
            new = _ATOMIC[op.removeprefix("global_atomic_")](word, value, np.uint32(int(data[lane]) >> 32))
            buf[off:off + 4] = np.frombuffer(np.uint32(new).tobytes(), np.uint8)
            old[lane] = word
        self.pending.append(("vmcnt", self.cells(d[0]), [(d[0], old, self.exec.copy())]))

    def lds(self, inst) -> None:
        op, d, u = inst.opcode, inst.defs, inst.uses
        lanes = self.exec.copy()
        if op == "ds_bpermute_b32":
            address, data = self.read(u[0]), self.read(u[1])
            values = data[((address >> np.uint64(2)) & np.uint64(LANES - 1)).astype(np.int64)]
            self.pending.append(("lgkmcnt", self.cells(d[0]), [(d[0], values, lanes)]))
            return
        if op == "ds_add_u32":   # lane by lane, in lane order
            address, data = self.read(u[0]) + np.uint64(inst.mods.get("offset", 0)), self.read(u[1])
            lds = self.sim.lds
            for lane in np.flatnonzero(lanes):
                a = int(address[lane])
                if a + 4 > len(lds):
                    raise SimulationError(f"LDS atomic at {a} is outside its {len(lds)} bytes")
                total = (int.from_bytes(bytes(lds[a:a + 4]), "little") + int(data[lane])) & 0xFFFFFFFF
                lds[a:a + 4] = total.to_bytes(4, "little")
            return
        kind = op.split("_")[2]
        size = {"u8": 1, "i8": 1, "b8": 1, "u16": 2, "i16": 2, "b16": 2, "b32": 4, "b64": 8, "b128": 16}[kind]
        address = self.read(u[0]) + np.uint64(inst.mods.get("offset", 0))
        lds = self.sim.lds
        for lane in np.flatnonzero(lanes):
            if int(address[lane]) + size > len(lds):
                raise SimulationError(f"LDS access of {size} bytes at {int(address[lane])} is outside its {len(lds)} bytes")
        if op.startswith("ds_write"):
            for k in range(max(1, size // 4)):
                data = self.read(_sub(u[1], k, 1))
                for lane in np.flatnonzero(lanes):
                    a = int(address[lane]) + 4 * k
                    lds[a:a + min(size, 4)] = int(data[lane] & np.uint64((1 << (8 * min(size, 4))) - 1)).to_bytes(
                        min(size, 4), "little")
            return
        writes = []
        for k in range(max(1, size // 4)):
            raw = np.zeros(LANES, np.uint64)
            for lane in np.flatnonzero(lanes):
                a = int(address[lane]) + 4 * k
                value = int.from_bytes(bytes(lds[a:a + min(size, 4)]), "little", signed=kind[0] == "i")
                raw[lane] = value & 0xFFFFFFFF
            writes.append((_sub(d[0], k, 1), raw, lanes))
        self.pending.append(("lgkmcnt", self.cells(d[0]), writes))

    def mfma(self, op: str, d, u) -> None:
        """D = A x B + C with the lane layouts of the CDNA3 ISA's MFMA tables (16-bit A and B,
        four values per lane; see tile.ir.mfma_layouts), products and sums in float64, one
        rounding to f32. The matrix core uses all 64 lanes: running it under a partial EXEC is
        an error of the selection."""
        if not self.exec.all():
            raise SimulationError(f"{op} under a partial EXEC")
        m, n, k = (int(x) for x in op.split("_")[3].split("x"))
        words = lambda o: np.stack([self.read(_sub(o, i, 1)) for i in range(o.count)])   # [dwords, lanes]
        halves = lambda w: np.stack([(w[i // 2] >> np.uint64(16 * (i % 2))) & np.uint64(0xFFFF) for i in range(4)])
        if op.endswith("_bf16"):
            decode = lambda h: (h << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
        else:
            decode = lambda h: h.astype(np.uint16).view(np.float16).astype(np.float64)
        a_values, b_values = decode(halves(words(u[0]))), decode(halves(words(u[1])))   # [4, lanes]
        lanes = np.arange(LANES)
        a, b = np.zeros((m, k)), np.zeros((k, n))
        for j in range(4):
            a[lanes % m, 4 * (lanes // m) + j] = a_values[j]
            b[4 * (lanes // n) + j, lanes % n] = b_values[j]
        c_words = words(u[2])
        rows = lambda r: 4 * (LANES // n) * (r // 4) + 4 * (lanes // n) + r % 4
        c = np.zeros((m, n))
        for r in range(c_words.shape[0]):
            c[rows(r), lanes % n] = _f32(c_words[r])
        result = (a @ b + c).astype(np.float32)
        for r in range(d[0].count):
            self.write(_sub(d[0], r, 1), _bits(result[rows(r), lanes % n]).astype(np.uint64))

    def scalar(self, op: str, d, u) -> None:
        r = lambda k, w=1: int(self.read(u[k], w)[0])  # noqa: E731
        m32, m64 = (1 << 32) - 1, (1 << 64) - 1

        def signed(x, bits=32):
            return x - (1 << bits) if x >> (bits - 1) & 1 else x

        if op in ("s_mov_b32", "s_mov_b64", "s_not_b32", "s_not_b64"):
            w = 2 if op.endswith("64") else 1
            value = r(0, w)
            self.write(d[0], np.full(LANES, (~value if "not" in op else value) & ((1 << (32 * w)) - 1), np.uint64), w)
        elif op == "s_and_saveexec_b64":
            saved = self.mask_bits(self.exec)
            self.write(d[0], np.full(LANES, saved, np.uint64), 2)
            self.exec = self.exec & self.mask(self.read(u[0], 2))
        elif op.startswith("s_cmp_"):
            _, _, pred, ty = op.split("_")
            w = 2 if ty == "u64" else 1
            a, b = r(0, w), r(1, w)
            if ty == "i32":
                a, b = signed(a), signed(b)
            self.scc = bool(_CMP[pred](a, b))
        elif op in ("s_cselect_b32", "s_cselect_b64"):
            w = 2 if op.endswith("64") else 1
            self.write(d[0], np.full(LANES, r(0, w) if self.scc else r(1, w), np.uint64), w)
        elif op in ("s_and_b64", "s_or_b64", "s_xor_b64", "s_andn2_b64"):
            a, b = r(0, 2), r(1, 2)
            value = {"s_and_b64": a & b, "s_or_b64": a | b, "s_xor_b64": a ^ b, "s_andn2_b64": a & ~b & m64}[op]
            self.write(d[0], np.full(LANES, value, np.uint64), 2)
        elif op in ("s_lshl_b64", "s_lshr_b64", "s_ashr_i64"):
            a, n = r(0, 2), r(1) & 63
            value = {"s_lshl_b64": (a << n) & m64, "s_lshr_b64": a >> n,
                     "s_ashr_i64": (signed(a, 64) >> n) & m64}[op]
            self.write(d[0], np.full(LANES, value, np.uint64), 2)
        else:
            a, b = r(0), r(1)
            carry = int(self.scc)
            results = {
                "s_add_u32": (a + b, a + b > m32), "s_addc_u32": (a + b + carry, a + b + carry > m32),
                "s_sub_u32": (a - b, b > a), "s_subb_u32": (a - b - carry, b + carry > a),
                "s_mul_i32": (a * b, None), "s_mul_hi_u32": ((a * b) >> 32, None),
                "s_mul_hi_i32": ((signed(a) * signed(b)) >> 32, None),
                "s_and_b32": (a & b, None), "s_or_b32": (a | b, None), "s_xor_b32": (a ^ b, None),
                "s_lshl_b32": (a << (b & 31), None), "s_lshr_b32": (a >> (b & 31), None),
                "s_ashr_i32": (signed(a) >> (b & 31), None),
                "s_min_i32": (min(signed(a), signed(b)), None), "s_max_i32": (max(signed(a), signed(b)), None),
                "s_min_u32": (min(a, b), None), "s_max_u32": (max(a, b), None),
            }
            if op not in results:
                raise SimulationError(f"the simulator does not know {op}")
            value, new_scc = results[op]
            if new_scc is not None:
                self.scc = bool(new_scc)
            self.write(d[0], np.full(LANES, value & m32, np.uint64))

    def vector(self, op: str, d, u) -> None:
        m32 = np.uint64(0xFFFFFFFF)
        if op.startswith("v_cmp_"):
            _, _, pred, ty = op.split("_")
            w = 2 if ty.endswith("64") else 1
            a, b = self.read(u[0], w), self.read(u[1], w)
            if ty in ("f32", "f64"):
                a, b = (_f32(a), _f32(b)) if ty == "f32" else (a.view(np.float64), b.view(np.float64))
                if pred == "u":
                    result = np.isnan(a) | np.isnan(b)
                else:
                    result = np.not_equal(a, b) if pred == "neq" else _CMP[pred](a, b)
            elif ty.startswith("i"):
                a = a.astype(np.int64) if w == 2 else _i32(a)
                b = b.astype(np.int64) if w == 2 else _i32(b)
                result = _CMP[pred](a, b)
            else:
                result = _CMP[pred](a, b)
            self.write(d[0], np.full(LANES, self.mask_bits(result & self.exec), np.uint64), 2)
            return
        if op == "v_readfirstlane_b32":
            lane = int(np.argmax(self.exec))
            self.write(d[0], np.full(LANES, self.read(u[0])[lane], np.uint64))
            return
        if op in ("v_add_co_u32", "v_addc_co_u32", "v_sub_co_u32", "v_subb_co_u32"):
            a, b = self.read(u[0]), self.read(u[1])
            carry_in = self.vcc.astype(np.uint64) if op in ("v_addc_co_u32", "v_subb_co_u32") else np.uint64(0)
            if "add" in op:
                total = a + b + carry_in
                carry = total > m32
            else:
                total = (a - b - carry_in) & np.uint64((1 << 64) - 1)
                carry = b + carry_in > a
            self.write(d[0], total & m32)
            self.vcc = np.where(self.exec, carry, False)
            return
        if op in _VF64:
            self.write(d[0], np.asarray(_VF64[op](*(self.read(o, 2).view(np.float64) for o in u))).view(np.uint64), 2)
            return
        if op == "v_cvt_f64_f32":
            self.write(d[0], _f32(self.read(u[0])).astype(np.float64).view(np.uint64), 2)
            return
        if op == "v_cvt_f32_f64":
            self.write(d[0], _bits(self.read(u[0], 2).view(np.float64).astype(np.float32)))
            return
        if op in ("v_mad_i64_i32", "v_mad_u64_u32"):
            a, b, c = self.read(u[0]), self.read(u[1]), self.read(u[2], 2)
            if op == "v_mad_i64_i32":
                product = _i32(a).astype(np.int64) * _i32(b).astype(np.int64)
                total = [(int(p) + int(q)) & ((1 << 64) - 1) for p, q in zip(product, c)]
            else:
                total = [(int(p) * int(q) + int(r)) & ((1 << 64) - 1) for p, q, r in zip(a, b, c)]
            self.write(d[0], np.array(total, np.uint64), 2)
            return
        if op in ("v_lshlrev_b64", "v_lshrrev_b64", "v_ashrrev_i64"):
            n = self.read(u[0]) & np.uint64(63)
            a = self.read(u[1], 2)
            if op == "v_lshlrev_b64":
                value = a << n
            elif op == "v_lshrrev_b64":
                value = a >> n
            else:
                value = (a.astype(np.int64) >> n.astype(np.int64)).astype(np.uint64)
            self.write(d[0], value, 2)
            return
        x = [self.read(o) for o in u]
        f = [_f32(v) for v in x]
        i = [_i32(v) for v in x]
        with np.errstate(all="ignore"):
            if op == "v_mov_b32":
                value = x[0]
            elif op == "v_cndmask_b32":
                value = np.where(self.mask(self.read(u[2], 2)), x[1], x[0])
            elif op in _VFLOAT:
                value = _bits(_VFLOAT[op](*f))
            elif op in _VINT:
                value = np.asarray(_VINT[op](*x)).astype(np.uint64) & m32
            elif op == "v_bfe_i32":
                value = _bfe(x[0], x[1], x[2], True).astype(np.uint64) & m32
            elif op in _VSIGNED:
                value = np.asarray(_VSIGNED[op](*i)).astype(np.int64).astype(np.uint64) & m32
            elif op == "v_cvt_f32_f16":
                value = _bits((x[0] & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32))
            elif op == "v_cvt_f16_f32":
                value = f[0].astype(np.float16).view(np.uint16).astype(np.uint64)
            elif op == "v_cvt_f32_i32":
                value = _bits(i[0].astype(np.float32))
            elif op == "v_cvt_f32_u32":
                value = _bits(x[0].astype(np.float32))
            elif op in ("v_cvt_i32_f32", "v_cvt_u32_f32"):
                lo, hi = (-2.0 ** 31, 2.0 ** 31 - 1) if op == "v_cvt_i32_f32" else (0, 2.0 ** 32 - 1)
                t = np.nan_to_num(np.trunc(f[0].astype(np.float64)), nan=0.0)
                value = np.clip(t, lo, hi).astype(np.int64).astype(np.uint64) & m32
            else:
                raise SimulationError(f"the simulator does not know {op}")
        self.write(d[0], value)


def _sub(o: Sub, start: int, count: int) -> Sub:
    return Sub(o.reg, o.start + start, count)


def _bfe(x, offset, width, signed):
    field = (x >> (offset & np.uint64(31))) & ((np.uint64(1) << (width & np.uint64(31))) - np.uint64(1))
    if not signed:
        return field
    w = width.astype(np.int64)
    f = field.astype(np.int64)
    return np.where(f >= (np.int64(1) << (w - 1)), f - (np.int64(1) << w), f)


def _worst_rcp(a: np.ndarray) -> np.ndarray:
    """v_rcp_f32 as badly as its 1-ulp bound allows (CDNA3 ISA 6.2): the largest f32 less than
    one ulp above 1/a (exact where 1/a is an f32), the side that breaks reciprocal-based division."""
    exact = 1.0 / a.astype(np.float64)
    near = exact.astype(np.float32)
    below = np.where(near.astype(np.float64) > exact, np.nextafter(near, np.float32(0)), near)
    return np.where(below.astype(np.float64) == exact, below, np.nextafter(below, np.float32(np.inf)))


_VFLOAT = {"v_add_f32": np.add, "v_sub_f32": np.subtract, "v_mul_f32": np.multiply,
           "v_min_f32": np.fmin, "v_max_f32": np.fmax,
           "v_fma_f32": lambda a, b, c: (a.astype(np.float64) * b + c).astype(np.float32),
           "v_rcp_f32": _worst_rcp, "v_rsq_f32": lambda a: np.float32(1) / np.sqrt(a),
           "v_exp_f32": np.exp2, "v_log_f32": np.log2, "v_sqrt_f32": np.sqrt,
           "v_floor_f32": np.floor, "v_ceil_f32": np.ceil, "v_trunc_f32": np.trunc, "v_rndne_f32": np.rint}
_VF64 = {"v_add_f64": np.add, "v_mul_f64": np.multiply, "v_min_f64": np.fmin, "v_max_f64": np.fmax,
         "v_fma_f64": lambda a, b, c: a * b + c}
_VINT = {"v_add_u32": np.add, "v_sub_u32": np.subtract, "v_mul_lo_u32": np.multiply,
         "v_mul_hi_u32": lambda a, b: (a * b) >> np.uint64(32),
         "v_and_b32": np.bitwise_and, "v_or_b32": np.bitwise_or, "v_xor_b32": np.bitwise_xor,
         "v_lshlrev_b32": lambda n, a: a << (n & np.uint64(31)), "v_lshrrev_b32": lambda n, a: a >> (n & np.uint64(31)),
         "v_min_u32": np.minimum, "v_max_u32": np.maximum,
         "v_bfe_u32": lambda x, o, w: _bfe(x, o, w, False),
         "v_lshl_or_b32": lambda a, n, b: (a << (n & np.uint64(31))) | b,
         "v_add3_u32": lambda a, b, c: a + b + c}
_VSIGNED = {"v_ashrrev_i32": lambda n, a: a.astype(np.int64) >> (n & 31),
            "v_min_i32": np.minimum, "v_max_i32": np.maximum,
            "v_mul_hi_i32": lambda a, b: (a.astype(np.int64) * b) >> 32}


_ATOMIC = {   # (old, value, compare) -> new, on uint32 bits
    "add": lambda o, v, c: (int(o) + int(v)) & 0xFFFFFFFF,
    "add_f32": lambda o, v, c: np.float32(o.view(np.float32) + v.view(np.float32)).view(np.uint32),
    "smax": lambda o, v, c: max(o.view(np.int32), v.view(np.int32)).view(np.uint32),
    "smin": lambda o, v, c: min(o.view(np.int32), v.view(np.int32)).view(np.uint32),
    "umax": lambda o, v, c: max(o, v), "umin": lambda o, v, c: min(o, v),
    "and": lambda o, v, c: o & v, "or": lambda o, v, c: o | v, "xor": lambda o, v, c: o ^ v,
    "swap": lambda o, v, c: v, "cmpswap": lambda o, v, c: v if o == c else o,
}


def named(kernel: Any, args: Any) -> dict:
    """The arguments `args` of tile.jit `kernel` by parameter name, as the Simulator takes them
    (a parameter specialized away, such as an integer equal to 1, is then simply unused)."""
    return dict(zip(kernel.arg_names, args))


class Simulator:
    """Runs `kernel` over a `grid` of workgroups (an int or up to three) on NumPy arrays
    (pointer arguments) and numbers."""

    def __init__(self, kernel: AmdgcnKernel, args: Any, grid: Any = 1):
        """`args`: the kernel's parameters in order, or a dict of them by name."""
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (grid, 1, 1)
        self.buffers: list[np.ndarray] = []
        kernarg = bytearray(max(kernel.selection.kernarg_size, 8))
        pointer_args = [a for a in kernel.selection.kernargs if a.value_kind == "global_buffer"]
        user = [a.name for a in kernel.selection.kernargs if not a.value_kind.startswith("hidden_")]
        if isinstance(args, list) and len(args) != len(user):
            raise SimulationError(f"{kernel.selection.name} takes {len(user)} arguments ({', '.join(user)}), got "
                                  f"{len(args)}: pass them by name (amdgcn_sim.named; a parameter equal to 1 "
                                  "is specialized away)")
        values = iter(args) if isinstance(args, list) else None
        for a in kernel.selection.kernargs:
            if a.value_kind.startswith("hidden_block_count"):
                value = self.grid["xyz".index(a.value_kind[-1])]
            else:
                value = next(values) if values is not None else args[a.name]
            if isinstance(value, np.ndarray):
                self.buffers.append(value.reshape(-1).view(np.uint8))
                value = BASE * len(self.buffers)
                raw = int(value).to_bytes(8, "little")
            elif isinstance(value, float):
                raw = np.float32(value).tobytes() if a.size == 4 else np.float64(value).tobytes()
            else:
                raw = int(value).to_bytes(a.size, "little", signed=value < 0)
            kernarg[a.offset:a.offset + a.size] = raw
        assert len(pointer_args) == len(self.buffers)
        self.kernarg = kernarg

    def locate(self, address: int, size: int) -> tuple[np.ndarray, int]:
        if KERNARG_ADDRESS <= address and address + size <= KERNARG_ADDRESS + len(self.kernarg):
            return np.frombuffer(self.kernarg, np.uint8), address - KERNARG_ADDRESS
        index, offset = divmod(address, BASE)
        if not 1 <= index <= len(self.buffers) or offset + size > self.buffers[index - 1].size:
            raise SimulationError(f"access of {size} bytes at {address:#x} is outside every buffer")
        return self.buffers[index - 1], offset

    def load(self, address: np.ndarray, size: int, lanes: np.ndarray) -> np.ndarray:
        out = np.zeros(LANES, np.uint64)
        for lane in np.flatnonzero(lanes):
            buf, off = self.locate(int(address[lane]), size)
            out[lane] = int.from_bytes(bytes(buf[off:off + size]), "little")
        return out

    def store(self, address: np.ndarray, size: int, lanes: np.ndarray, data: np.ndarray) -> None:
        for lane in np.flatnonzero(lanes):
            buf, off = self.locate(int(address[lane]), size)
            buf[off:off + size] = np.frombuffer(int(data[lane] & np.uint64((1 << (8 * size)) - 1)).to_bytes(size, "little"), np.uint8)

    def run(self) -> None:
        """Every workgroup; its waves run in turns from one s_barrier to the next."""
        threads = self.kernel.selection.workgroup_size
        for workgroup in np.ndindex(*self.grid[::-1]):
            self.lds = bytearray(RNG_LDS.integers(0, 256, self.kernel.selection.lds_bytes, np.uint8).tobytes())
            waves = [Wave(self, workgroup[::-1], first, threads).run() for first in range(0, threads, LANES)]
            while waves:
                waves = [w for w in waves if next(w, StopIteration) is not StopIteration]
