"""PTX emitter: prints a simt-IR function as a PTX module (nearly a printout; ptxas allocates).

Every simt value gets a virtual register of its class (%p pred, %rs b16, %r b32, %f f32,
%rd b64, %fd f64); i32/i64/f32/f64 constants print as immediates, other constants get a
register. Arithmetic goes through one table, `INSTR`, keyed by (op, operand type):

    arith.add  %a, %b : f32       ->  add.f32 %f3, %f1, %f2;
    arith.cmp  {lt} : i32         ->  setp.lt.s32 %p1, %r4, %r2;

Memory ops, conversions, shuffles, atomics and control flow have one small method each;
tensor-core and asynchronous-copy ops fill one template each (`TENSOR_OPS`):

    simt.mma {atype = "f16"}      ->  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d..}, {a..}, {b..}, {c..};
    simt.ldmatrix {num = 4}       ->  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, ...}, [%r9+1024];
    simt.stmatrix {num = 4}       ->  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r9+1024], {%r1, ...};
    simt.cp_async {bytes = 16}    ->  @%p cp.async.cg.shared.global [%r5], [%rd2+64], 16, %r7;
    simt.wgmma {atype = "f16", n = 64}  ->  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1, ...},
                                            %rd4, %rd5, %p1, 1, 1, 0, 1;   (accumulators updated in place)
scf.for/if/while become labels and branches; loop-carried values and branch results are
registers that each path writes with `mov` (none where a loop's next value was computed into
its argument's own register: _coalesce_carried). Each group of instructions from one source
line is preceded by a comment naming it:

    // add.py:12  offs = pid * BLOCK + tl.arange(0, BLOCK)
"""
from __future__ import annotations

import linecache
import os
from typing import Callable, Optional, Union

from ...ir import simt_ops  # noqa: F401  (registers the simt ops)
from ...ir import inline_asm
from ...ir.core import Operation, Value
from ...ir.float8 import is_float8_variant
from ...ir.types import DType, PointerType, TensorMapType, f16, f32, f64, i1, i32
from ..floats import float_bits

TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")


class PtxError(Exception):
    """An op the emitter cannot print; the message names the op and its source line."""

    def __init__(self, op: Operation, message: str):
        where = f" (from {op.loc.file}:{op.loc.line})" if op.loc is not None else ""
        super().__init__(f"PTX emitter: {op.name}: {message}{where}")


# ------------------------------------------------------------------------------ types


def reg_class(t) -> str:
    """The register class holding a value of type `t`."""
    if isinstance(t, (PointerType, TensorMapType)):
        return "rd"
    if t == i1:
        return "p"
    if t.bits <= 16:
        return "rs"
    if t.is_floating:
        return "f" if t.bits == 32 else "fd"
    return "r" if t.bits == 32 else "rd"


REG_DECL = {"p": ".pred", "rs": ".b16", "r": ".b32", "f": ".f32", "rd": ".b64", "fd": ".f64"}


def type_key(t) -> str:
    """The table key of a type: its cvt spelling (s32, f16, e4m3, ...), pred for i1, u64 for pointers;
    fp8 formats PTX does not know (tile.ir.float8) only move, as u8."""
    if isinstance(t, PointerType):
        return "u64"
    if t == i1:
        return "pred"
    if is_float8_variant(t):
        return "u8"
    return cvt_type(t)


def cvt_type(t: DType) -> str:
    """The PTX spelling of `t` in cvt/ld/st (s8 u8 ... f16 bf16 f32 f64)."""
    if t.is_floating:
        return {"f8e4nv": "e4m3", "f8e5": "e5m2"}.get(t.name, t.name)
    return f"{'u' if t.is_unsigned else 's'}{t.bits}"


def mem_type(t) -> str:
    """Type suffix of ld/st: 8-bit by signedness, floats as f32/f64, others by width."""
    if isinstance(t, PointerType):
        return "b64"
    if t.bits == 8:
        return "s8" if t.is_signed else "u8"
    if t.is_floating and t.bits >= 32:
        return f"f{t.bits}"
    return f"b{t.bits}"


def _bits_of(t) -> int:
    return 64 if isinstance(t, (PointerType, TensorMapType)) else t.bits  # a tensor map: its address


# ------------------------------------------------------------------------------ table

Template = Union[str, tuple[str, tuple[str, ...]]]  # text, or (text, classes of temporaries {t0}, {t1}...)

_INTS = ("s32", "u32", "s64", "u64")
PTX_ROUNDING = {"rn": "rn", "rz": "rz", "rd": "rm", "ru": "rp"}  # tile's rounding modes as PTX spells them
_FLOATS = ("f32", "f64")
_CMP_FLOAT = {"eq": "eq", "ne": "neu", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _build_table() -> dict[tuple[str, str], Template]:
    t: dict[tuple[str, str], Template] = {}
    for ty in _INTS + _FLOATS:
        signed = ty.replace("u", "s") if ty in _INTS else ty
        t["arith.add", ty] = f"add.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.sub", ty] = f"sub.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.max", ty] = f"max.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.min", ty] = f"min.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.neg", ty] = f"neg.{signed} {{d}}, {{a}};"
        t["arith.select", ty] = f"selp.{ty if ty in _FLOATS else 'b' + ty[1:]} {{d}}, {{b}}, {{c}}, {{a}};"
        for pred in ("eq", "ne", "lt", "le", "gt", "ge"):
            t[f"arith.cmp.{pred}", ty] = f"setp.{_CMP_FLOAT[pred] if ty in _FLOATS else pred}.{ty} {{d}}, {{a}}, {{b}};"
    for ty in _INTS:
        b = "b" + ty[1:]
        t["arith.mul", ty] = f"mul.lo.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.div", ty] = f"div.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.rem", ty] = f"rem.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.and", ty] = f"and.{b} {{d}}, {{a}}, {{b}};"
        t["arith.or", ty] = f"or.{b} {{d}}, {{a}}, {{b}};"
        t["arith.xor", ty] = f"xor.{b} {{d}}, {{a}}, {{b}};"
        t["arith.not", ty] = f"not.{b} {{d}}, {{a}};"
        t["math.umulhi", ty] = f"mul.hi.u{ty[1:]} {{d}}, {{a}}, {{b}};"
        t["math.abs", ty] = f"abs.{ty} {{d}}, {{a}};" if ty[0] == "s" else f"mov.{b} {{d}}, {{a}};"
        if ty.endswith("32"):
            t["arith.shl", ty] = f"shl.{b} {{d}}, {{a}}, {{b}};"
            t["arith.shr", ty] = f"shr.{ty} {{d}}, {{a}}, {{b}};"
        else:  # 64-bit shifts take a 32-bit amount
            t["arith.shl", ty] = (f"cvt.u32.u64 {{t0}}, {{b}};\nshl.{b} {{d}}, {{a}}, {{t0}};", ("r",))
            t["arith.shr", ty] = (f"cvt.u32.u64 {{t0}}, {{b}};\nshr.{ty} {{d}}, {{a}}, {{t0}};", ("r",))
    for ty in _FLOATS:
        t["arith.mul", ty] = f"mul.{ty} {{d}}, {{a}}, {{b}};"
        t["arith.div", ty] = f"div.rn.{ty} {{d}}, {{a}}, {{b}};"
        t["math.sqrt", ty] = f"sqrt.rn.{ty} {{d}}, {{a}};"
        t["math.fma", ty] = f"fma.rn.{ty} {{d}}, {{a}}, {{b}}, {{c}};"
        t["math.abs", ty] = f"abs.{ty} {{d}}, {{a}};"
        t["math.floor", ty] = f"cvt.rmi.{ty}.{ty} {{d}}, {{a}};"
        t["math.ceil", ty] = f"cvt.rpi.{ty}.{ty} {{d}}, {{a}};"
    for ty in _FLOATS:  # the IEEE rounding modes: an explicit modifier also keeps ptxas from fusing
        t["math.trunc", ty] = f"cvt.rzi.{ty}.{ty} {{d}}, {{a}};"
        t["math.rint", ty] = f"cvt.rni.{ty}.{ty} {{d}}, {{a}};"
        for mode, rnd in PTX_ROUNDING.items():
            for op, text in (("add", "{a}, {b}"), ("sub", "{a}, {b}"), ("mul", "{a}, {b}"), ("div", "{a}, {b}"),
                             ("fma", "{a}, {b}, {c}"), ("sqrt", "{a}")):
                t[f"{'math' if op in ('fma', 'sqrt') else 'arith'}.{op}.{mode}", ty] = f"{op}.{rnd}.{ty} {{d}}, {text};"
    for ty in _INTS:
        b, width = "b" + ty[1:], ty[1:]
        t["math.clz", ty] = f"clz.{b} {{d}}, {{a}};"      # the count is a u32 register
        t["math.popc", ty] = f"popc.{b} {{d}}, {{a}};"
        t["math.brev", ty] = f"brev.{b} {{d}}, {{a}};"
        t["math.mulhi", ty] = f"mul.hi.{ty} {{d}}, {{a}}, {{b}};"
        t["math.sad", ty] = f"sad.{ty} {{d}}, {{a}}, {{b}}, {{c}};"
        if width == "32":
            t["math.mul24", ty] = f"mul24.lo.{ty} {{d}}, {{a}}, {{b}};"
            t["math.byte_perm", ty] = "prmt.b32 {d}, {a}, {b}, {c};"
    t["arith.div.approx", "f32"] = "div.full.f32 {d}, {a}, {b};"  # Triton's `/`: within 2 ulp
    t["math.sqrt.approx", "f32"] = "sqrt.approx.ftz.f32 {d}, {a};"  # Triton's tl.sqrt
    t["arith.max.nan", "f32"] = "max.NaN.f32 {d}, {a}, {b};"
    t["arith.min.nan", "f32"] = "min.NaN.f32 {d}, {a}, {b};"
    for name in ("max", "min"):  # f64 has no .NaN form: a + b is NaN when either is
        t[f"arith.{name}.nan", "f64"] = (f"setp.nan.f64 {{t0}}, {{a}}, {{b}};\n{name}.f64 {{d}}, {{a}}, {{b}};\n"
                                         f"@{{t0}} add.f64 {{d}}, {{a}}, {{b}};", ("p",))
    for ty in ("s8", "u8", "s16", "u16", "f16", "bf16", "e4m3", "e5m2"):  # 8/16-bit values: moves only
        t["arith.select", ty] = "selp.b16 {d}, {b}, {c}, {a};"   # select %cond, %x, %y: selp d, x, y, cond
    for ty in ("s8", "u8", "s16", "u16"):  # 8-bit values are extended to 16 bits in their registers
        for pred in ("eq", "ne"):
            t[f"arith.cmp.{pred}", ty] = f"setp.{pred}.b16 {{d}}, {{a}}, {{b}};"
    t["arith.select", "pred"] = "@{a} mov.pred {d}, {b};\n@!{a} mov.pred {d}, {c};"
    t["arith.and", "pred"] = "and.pred {d}, {a}, {b};"
    t["arith.or", "pred"] = "or.pred {d}, {a}, {b};"
    t["arith.xor", "pred"] = "xor.pred {d}, {a}, {b};"
    t["arith.not", "pred"] = "not.pred {d}, {a};"
    t["arith.cmp.eq", "pred"] = "xor.pred {d}, {a}, {b};\nnot.pred {d}, {d};"
    t["arith.cmp.ne", "pred"] = "xor.pred {d}, {a}, {b};"
    t["arith.cmp.lt", "pred"] = "not.pred {d}, {a};\nand.pred {d}, {d}, {b};"   # i1 orders as 0 < 1
    t["arith.cmp.le", "pred"] = "not.pred {d}, {a};\nor.pred {d}, {d}, {b};"
    t["arith.cmp.gt", "pred"] = "not.pred {d}, {b};\nand.pred {d}, {d}, {a};"
    t["arith.cmp.ge", "pred"] = "not.pred {d}, {b};\nor.pred {d}, {d}, {a};"
    return t


INSTR: dict[tuple[str, str], Template] = _build_table()

APPROX = {"ex2": "ex2.approx.ftz.f32", "lg2": "lg2.approx.f32", "sin": "sin.approx.f32", "cos": "cos.approx.f32",
          "rsqrt": "rsqrt.approx.f32", "rcp": "rcp.approx.f32", "tanh": "tanh.approx.f32", "div": "div.approx.f32",
          "rcp64h": "rcp.approx.ftz.f64"}
CACHE_LD = {"ca": ".ca", "cg": ".cg", "cs": ".cs", "lu": ".lu", "cv": ".cv"}
CACHE_ST = {"wb": ".wb", "cg": ".cg", "cs": ".cs", "wt": ".wt"}
EVICTION = {"evict_first": ".L1::evict_first", "evict_last": ".L1::evict_last", "evict_normal": "",
            "no_allocate": ".L1::no_allocate"}


def atom_type(kind: str, t) -> str:
    """The type suffix of atom/red for `kind` on values of type `t`."""
    if kind in ("and", "or", "xor", "exch"):
        return f"b{_bits_of(t)}"
    if t.is_floating:
        return f"noftz.{t.name}" if t.bits == 16 else t.name
    if kind == "add":
        return "u64" if t.bits == 64 else cvt_type(t)
    return cvt_type(t)


# ------------------------------------------------------------------------------ emitter


def _c_string(text: str) -> tuple[str, int]:
    data = text.encode() + b"\0"
    return ", ".join(str(b) for b in data), len(data)


class _Emitter:
    def __init__(self, func: Operation, target: str, ptx_version: str):
        if target not in TARGETS:
            raise ValueError(f"unknown PTX target {target!r}; expected one of {TARGETS}")
        self.func, self.target, self.ptx_version = func, target, ptx_version
        self.regs: dict[Value, str] = {}
        self.counts: dict[str, int] = {c: 0 for c in REG_DECL}
        self.lines: list[str] = []
        self.globals: list[str] = []
        self.strings: dict[str, str] = {}
        self.labels = 0
        self.last_loc: Optional[tuple[str, int]] = None
        self.uses_smem = self.uses_printf = self.uses_assert = False
        self.printf_bytes = 0
        self.indent = 1

    # registers and operands ----------------------------------------------------------
    def new_reg(self, cls: str) -> str:
        self.counts[cls] += 1
        return f"%{cls}{self.counts[cls]}"

    def reg(self, v: Value) -> str:
        """The register of `v`. Constants without immediates get one at their definition; an
        immediate needed in a register is moved into a fresh one right here."""
        if v in self.regs:
            return self.regs[v]
        imm = self.imm(v)
        if imm is not None:
            tmp = self.new_reg(reg_class(v.type))
            self.emit(f"mov.{_mov_type(v.type)} {tmp}, {imm};")
            return tmp
        self.regs[v] = self.new_reg(reg_class(v.type))
        return self.regs[v]

    def imm(self, v: Value) -> Optional[str]:
        op = v.owner_op
        if op is None or op.name != "arith.constant":
            return None
        t, value = v.type, op.attrs["value"]
        if isinstance(t, DType) and t.is_floating and t.bits in (32, 64):
            bits = float_bits(float(value), t)
            return f"0f{bits:08X}" if t.bits == 32 else f"0d{bits:016X}"
        if isinstance(t, DType) and t.is_integer and t.bits in (32, 64):
            mask = (1 << t.bits) - 1
            raw = int(value) & mask
            if t.is_signed and raw >> (t.bits - 1):
                raw -= 1 << t.bits
            return str(raw)
        return None

    def src(self, v: Value) -> str:
        return self.imm(v) or self.reg(v)

    def guard(self, pred: Value) -> str:
        op = pred.owner_op
        if op is not None and op.name == "arith.constant" and op.attrs["value"]:
            return ""
        return f"@{self.reg(pred)} "

    def emit(self, text: str) -> None:
        for line in text.split("\n"):
            self.lines.append("\t" * self.indent + line)

    def label(self) -> str:
        self.labels += 1
        return f"$L__{self.func.attrs['sym_name']}_{self.labels}"

    def put_label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def string(self, text: str) -> str:
        if text not in self.strings:
            name = f"__str{len(self.strings)}"
            data, n = _c_string(text)
            self.globals.append(f".global .align 1 .b8 {name}[{n}] = {{{data}}};")
            self.strings[text] = name
        return self.strings[text]

    def comment_source(self, op: Operation) -> None:
        if op.loc is None or (op.loc.file, op.loc.line) == self.last_loc:
            return
        self.last_loc = (op.loc.file, op.loc.line)
        text = linecache.getline(op.loc.file, op.loc.line).strip()
        where = f"{os.path.basename(op.loc.file)}:{op.loc.line}"
        self.lines.append("")
        self.emit(f"// {where}  {text}" if text else f"// {where}")

    # walking -----------------------------------------------------------------------------
    def block_ops(self, ops: list[Operation]) -> None:
        for op in ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        self.comment_source(op)
        handler = _HANDLERS.get(op.name)
        if handler is not None:
            handler(self, op)
            return
        self.table_op(op)

    def table_op(self, op: Operation) -> None:
        text, temps = self.table_template(op)
        fields = {"d": self.reg(op.result)}
        for name, v in zip("abc", op.operands):
            fields[name] = self.src(v) if type_key(v.type) != "pred" else self.reg(v)
        for i, cls in enumerate(temps):
            fields[f"t{i}"] = self.new_reg(cls)
        self.emit(text.format(**fields))

    def table_template(self, op: Operation) -> tuple[str, tuple]:
        """The INSTR entry of an op the table handles: (PTX text, temporary register classes)."""
        if not op.operands or len(op.results) != 1:
            raise PtxError(op, "unknown operation")
        key_name = op.name
        if op.name == "arith.cmp":
            key_name = f"arith.cmp.{op.attrs.get('predicate')}"
        elif op.name in ("arith.max", "arith.min") and op.attrs.get("propagate_nan"):
            key_name = f"{op.name}.nan"
        elif op.attrs.get("approx"):
            key_name = f"{op.name}.approx"
        elif op.attrs.get("rounding"):
            key_name = f"{op.name}.{op.attrs['rounding']}"
        ty = op.operand(1).type if op.name == "arith.select" else op.operand(0).type
        template = INSTR.get((key_name, type_key(ty)))
        if template is None:
            raise PtxError(op, f"no PTX instruction for {key_name} on {ty}")
        return (template, ()) if isinstance(template, str) else template

    def one_instruction(self, op: Operation) -> bool:
        """Whether `op` is one PTX instruction, which reads its operands before writing its result."""
        if op.name in _HANDLERS or not op.operands or len(op.results) != 1:
            return False
        try:
            text, temps = self.table_template(op)
        except PtxError:
            return False
        return not temps and text.count(";") == 1

    def parallel_copy(self, dests: list[str], values: list[Value], types: list) -> None:
        """Move `values` into registers `dests` at once (a yield may permute its own registers).
        A value already in its register is not read (wgmma accumulators in flight stay untouched)."""
        srcs = [self.src(v) for v in values]
        moves = [(d, s, t) for d, s, t in zip(dests, srcs, types) if d != s]
        dests, srcs, types = [m[0] for m in moves], [m[1] for m in moves], [m[2] for m in moves]
        clash = set(dests) & set(srcs)
        if clash:
            temps = []
            for s, t in zip(srcs, types):
                tmp = self.new_reg(reg_class(t))
                self.emit(f"mov.{_mov_type(t)} {tmp}, {s};")
                temps.append(tmp)
            srcs = temps
        for d, s, t in zip(dests, srcs, types):
            if d != s:
                self.emit(f"mov.{_mov_type(t)} {d}, {s};")

    # module -------------------------------------------------------------------------------
    def run(self) -> str:
        f = self.func
        name = f.attrs["sym_name"]
        block = f.regions[0].block
        arg_names = list(f.attrs.get("arg_names") or [f"arg{i}" for i in range(len(block.args))])
        params: list[str] = []
        for i, n in enumerate(arg_names):  # unique, and apart from the kernel's own name
            p = _param_name(n, i)
            while p in params or p == name:
                p = f"{p}_{i}"
            params.append(p)
        for arg, pname in zip(block.args, params):
            if arg.has_uses:
                self.emit_param_load(arg, pname)
        self.block_ops(block.ops)
        body, self.lines = self.lines, []
        out = ["//", f"// Generated by tile for {self.target}: kernel {name}", "//",
               f".version {self.ptx_version}", f".target {self.target}", ".address_size 64", ""]
        if self.uses_printf:
            out.append(".extern .func (.param .b32 retval) vprintf (.param .b64 format, .param .b64 args);")
        if self.uses_assert:
            out.append(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, "
                       ".param .b64 function, .param .b64 char_size);")
        out += self.globals
        if self.uses_smem:
            out.append(".extern .shared .align 16 .b8 __smem[];")
        decl = ",\n".join(f"\t{_param_decl(a.type, p)}" for a, p in zip(block.args, params))
        out += ["", f".visible .entry {name}(", decl, ")", f".maxntid {f.attrs['num_warps'] * 32}, 1, 1", "{"]
        for cls, decl_type in REG_DECL.items():
            if self.counts[cls]:
                out.append(f"\t.reg {decl_type} %{cls}<{self.counts[cls] + 1}>;")
        if self.printf_bytes:
            out.append(f"\t.local .align 8 .b8 __printf_buf[{self.printf_bytes}];")
        out += body
        out += ["}", ""]
        return "\n".join(out)

    def emit_param_load(self, arg: Value, pname: str) -> None:
        t = arg.type
        if isinstance(t, TensorMapType):  # passed by value; TMA reads it through its generic address
            self.emit(f"mov.b64 {self.reg(arg)}, {pname};")
            self.emit(f"cvta.param.u64 {self.reg(arg)}, {self.reg(arg)};")
        elif t == i1:
            tmp = self.new_reg("rs")
            self.emit(f"ld.param.u8 {tmp}, [{pname}];")
            self.emit(f"setp.ne.b16 {self.reg(arg)}, {tmp}, 0;")
        else:
            self.emit(f"ld.param.{_param_type(t)} {self.reg(arg)}, [{pname}];")


_RESERVED = {"__smem", "__printf_buf", "vprintf", "__assertfail"}


def _param_name(name: str, index: int) -> str:
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or f"arg{index}"
    if clean[0].isdigit() or clean in _RESERVED or clean.startswith("__str"):
        clean = f"p_{clean}"
    return clean


def _param_decl(t, name: str) -> str:
    """A kernel parameter's declaration: a tensor map is 128 bytes, 64-byte aligned (CUtensorMap)."""
    if isinstance(t, TensorMapType):
        return f".param .align 64 .b8 {name}[128]"
    return f".param .{_param_type(t)} {name}"


def _param_type(t) -> str:
    if isinstance(t, PointerType):
        return "u64"
    if t == i1:
        return "u8"
    if t.is_floating:
        return f"f{t.bits}" if t.bits >= 32 else f"b{t.bits}"
    return cvt_type(t)


def _mov_type(t) -> str:
    if t == i1:
        return "pred"
    if isinstance(t, DType) and t.is_floating and t.bits >= 32:
        return f"f{t.bits}"
    return f"b{max(16, _bits_of(t))}"


# ------------------------------------------------------------------------------ handlers

Handler = Callable[[_Emitter, Operation], None]
_HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        for n in names:
            _HANDLERS[n] = fn
        return fn

    return wrap


# the operand of each guarded op that is its guard predicate
_GUARDED = {**dict.fromkeys(("simt.ld_global", "simt.st_global", "simt.ld_shared", "simt.st_shared", "simt.atom",
                             "simt.red", "simt.atom_cas"), 1), "simt.cp_async": 3}


@handles("arith.constant")
def _constant(e: _Emitter, op: Operation) -> None:
    t = op.result.type
    if e.imm(op.result) is not None:
        return
    if all(_GUARDED.get(user.name) == index and op.attrs["value"] for user, index in op.result.uses):
        return  # only ever an always-true guard, which prints as no guard
    value = op.attrs["value"]
    if t == i1:
        e.emit(f"mov.pred {e.reg(op.result)}, {1 if value else 0};")
        return
    bits = float_bits(float(value), t) if t.is_floating else int(value) & 0xFFFF
    e.emit(f"mov.b16 {e.reg(op.result)}, 0x{bits:04X};")


@handles("arith.bitcast")
def _bitcast(e: _Emitter, op: Operation) -> None:
    t = op.result.type
    e.emit(f"mov.b{max(16, _bits_of(t))} {e.reg(op.result)}, {e.reg(op.operand(0))};")


@handles("simt.tid")
def _tid(e: _Emitter, op: Operation) -> None:
    e.emit(f"mov.u32 {e.reg(op.result)}, %tid.x;")


@handles("simt.ctaid", "simt.nctaid")
def _ctaid(e: _Emitter, op: Operation) -> None:
    sreg = "%ctaid" if op.name == "simt.ctaid" else "%nctaid"
    e.emit(f"mov.u32 {e.reg(op.result)}, {sreg}.{'xyz'[op.attrs['axis']]};")


@handles("simt.addptr")
def _addptr(e: _Emitter, op: Operation) -> None:
    p, i = op.operands
    scale, d = op.attrs["scale"], e.reg(op.result)
    imm = e.imm(i)
    if imm is not None:
        e.emit(f"add.s64 {d}, {e.reg(p)}, {int(imm) * scale};")
    elif i.type.bits == 32:
        wide = e.new_reg("rd")
        e.emit(f"mul.wide.{'u' if i.type.is_unsigned else 's'}32 {wide}, {e.reg(i)}, {scale};")
        e.emit(f"add.s64 {d}, {e.reg(p)}, {wide};")
    elif scale == 1:
        e.emit(f"add.s64 {d}, {e.reg(p)}, {e.reg(i)};")
    else:
        e.emit(f"mad.lo.s64 {d}, {e.reg(i)}, {scale}, {e.reg(p)};")


@handles("simt.smem_addr")
def _smem_addr(e: _Emitter, op: Operation) -> None:
    e.uses_smem = True
    off = op.attrs["offset"]
    e.emit(f"mov.u32 {e.reg(op.result)}, __smem{f'+{off}' if off else ''};")


def _address(e: _Emitter, op: Operation) -> str:
    off = op.attrs.get("offset", 0)
    return f"[{e.reg(op.operand(0))}{f'+{off}' if off else ''}]"


def _values(e: _Emitter, vals: list[str]) -> str:
    return vals[0] if len(vals) == 1 else "{" + ", ".join(vals) + "}"


def _vec(op: Operation) -> str:
    v = op.attrs.get("vector", 1)
    return f".v{v}" if v > 1 else ""


@handles("simt.ld_global", "simt.ld_shared")
def _load(e: _Emitter, op: Operation) -> None:
    t = op.results[0].type
    dests = [e.reg(r) for r in op.results]
    for d, other in zip(dests, op.operands[2:]):
        e.emit(f"mov.{_mov_type(t)} {d}, {e.src(other)};")
    if op.name == "simt.ld_shared":
        space = "ld.shared"
    elif op.attrs.get("volatile"):
        space = "ld.volatile.global"
    else:
        cache = CACHE_LD.get(str(op.attrs.get("cache") or "").lstrip("."), "")
        evict = "" if cache else EVICTION.get(str(op.attrs.get("eviction") or "evict_normal"), "")
        space = f"ld.global{cache}{evict}"
    e.emit(f"{e.guard(op.operand(1))}{space}{_vec(op)}.{mem_type(t)} {_values(e, dests)}, {_address(e, op)};")


@handles("simt.st_global", "simt.st_shared")
def _store(e: _Emitter, op: Operation) -> None:
    vals = list(op.operands[2:])
    t = vals[0].type
    if op.name == "simt.st_shared":
        space = "st.shared"
    else:
        cache = CACHE_ST.get(str(op.attrs.get("cache") or "").lstrip("."), "")
        evict = "" if cache else EVICTION.get(str(op.attrs.get("eviction") or "evict_normal"), "")
        space = f"st.global{cache}{evict}"
    srcs = [e.reg(v) if e.imm(v) is None else e.imm(v) for v in vals]
    e.emit(f"{e.guard(op.operand(1))}{space}{_vec(op)}.{mem_type(t)} {_address(e, op)}, {_values(e, srcs)};")


@handles("simt.cvt")
def _cvt(e: _Emitter, op: Operation) -> None:
    src, dst = op.operand(0).type, op.result.type
    a, d = e.src(op.operand(0)), e.reg(op.result)
    if dst.is_fp8:
        if src != f32:
            raise PtxError(op, f"fp8 is converted from f32 only, not {src}")
        e.emit(f"cvt.rn.satfinite.{cvt_type(dst)}x2.f32 {d}, 0f00000000, {a};")
        return
    if src.is_fp8:
        if dst not in (f16, f32):
            raise PtxError(op, f"fp8 is converted to f16 or f32 only, not {dst}")
        pair, lo, hi = e.new_reg("r"), e.new_reg("rs"), e.new_reg("rs")
        e.emit(f"cvt.rn.f16x2.{cvt_type(src)}x2 {pair}, {a};")
        e.emit(f"mov.b32 {{{lo}, {hi}}}, {pair};")
        e.emit(f"cvt.f32.f16 {d}, {lo};" if dst == f32 else f"mov.b16 {d}, {lo};")
        return
    rnd = op.attrs.get("rnd", "")
    e.emit(f"cvt{'.' + rnd if rnd else ''}.{cvt_type(dst)}.{cvt_type(src)} {d}, {a};")


@handles("simt.pack")
def _pack(e: _Emitter, op: Operation) -> None:
    d = e.reg(op.result)
    parts = [e.reg(v) for v in op.operands]
    width = _bits_of(op.operands[0].type)
    if width >= 16:
        e.emit(f"mov.b{_bits_of(op.result.type)} {d}, {{{', '.join(parts)}}};")
        return
    words = [e.new_reg("r") for _ in range(4)]
    for w, p in zip(words, parts):
        e.emit(f"cvt.u32.u8 {w}, {p};")
    lo, hi = e.new_reg("r"), e.new_reg("r")
    e.emit(f"prmt.b32 {lo}, {words[0]}, {words[1]}, 0x3340;")
    e.emit(f"prmt.b32 {hi}, {words[2]}, {words[3]}, 0x3340;")
    e.emit(f"prmt.b32 {d}, {lo}, {hi}, 0x5410;")


@handles("simt.unpack")
def _unpack(e: _Emitter, op: Operation) -> None:
    w = e.reg(op.operand(0))
    parts = [e.reg(r) for r in op.results]
    t = op.results[0].type
    if _bits_of(t) >= 16:
        e.emit(f"mov.b{_bits_of(op.operand(0).type)} {{{', '.join(parts)}}}, {w};")
        return
    for i, p in enumerate(parts):
        tmp = e.new_reg("r")
        e.emit(f"bfe.{'s' if t.is_signed else 'u'}32 {tmp}, {w}, {8 * i}, 8;")
        e.emit(f"cvt.u16.u32 {p}, {tmp};")


@handles("simt.approx")
def _approx(e: _Emitter, op: Operation) -> None:
    e.emit(f"{APPROX[op.attrs['fn']]} {e.reg(op.result)}, {', '.join(e.src(v) for v in op.operands)};")


@handles("simt.shfl")
def _shfl(e: _Emitter, op: Operation) -> None:
    mode = op.attrs["mode"]
    clamp = 0 if mode == "up" else 31
    e.emit(f"shfl.sync.{mode}.b32 {e.reg(op.result)}, {e.src(op.operand(0))}, {e.src(op.operand(1))}, "
           f"{clamp}, -1;")


@handles("simt.barrier")
def _barrier(e: _Emitter, op: Operation) -> None:
    e.emit("bar.sync 0;")


# tensor cores and asynchronous copies: one template per op, filled by `_tensor_op`
TENSOR_OPS: dict[str, str] = {
    "simt.mma": "mma.sync.aligned.{shape}.row.col.{ctype}.{atype}.{atype}.{ctype} {d}, {a}, {b}, {c};",
    "simt.tf32": "cvt.rna.tf32.f32 {d}, {a};",
    "simt.ldmatrix": "ldmatrix.sync.aligned.m8n8.x{num}{trans}.shared.b16 {d}, {addr};",
    "simt.stmatrix": "stmatrix.sync.aligned.m8n8.x{num}.shared.b16 {addr}, {words};",
    "simt.cp_async": "{guard}cp.async.{cache}.shared.global {addr}, [{src}{src_offset}], {bytes}{size};",
    "simt.cp_async_commit": "cp.async.commit_group;",
    "simt.cp_async_wait": "cp.async.wait_group {pending};",
    "simt.wgmma_fence": "wgmma.fence.sync.aligned;",
    "simt.wgmma_commit": "wgmma.commit_group.sync.aligned;",
    "simt.fence_proxy_async": "fence.proxy.async.shared::cta;",
}
CP_ASYNC_CACHE = {4: "ca", 8: "ca", 16: "cg"}  # .cg (L2 only) exists for 16-byte copies alone


@handles(*TENSOR_OPS)
def _tensor_op(e: _Emitter, op: Operation) -> None:
    group = lambda vals: "{" + ", ".join(vals) + "}"  # noqa: E731
    fields: dict[str, object] = dict(op.attrs)
    fields["d"] = group([e.reg(r) for r in op.results]) if op.name in ("simt.mma", "simt.ldmatrix") else \
        (e.reg(op.result) if op.results else "")
    if op.name == "simt.mma":
        shape = simt_ops.MMA_SHAPES[op.attrs["atype"]]
        regs = [e.reg(v) for v in op.operands]
        fields.update(shape=shape.shape, ctype=shape.ctype, a=group(regs[:4]), b=group(regs[4:6]),
                      c=group(regs[6:]))
    elif op.name == "simt.tf32":
        fields["a"] = e.src(op.operand(0))
    elif op.name == "simt.ldmatrix":
        fields.update(trans=".trans" if op.attrs.get("trans") else "", addr=_address(e, op))
    elif op.name == "simt.stmatrix":
        fields.update(addr=_address(e, op), words=group([e.reg(v) for v in op.operands[1:]]))
    elif op.name == "simt.cp_async":
        size, n = op.operand(2), op.attrs["bytes"]
        off = op.attrs.get("src_offset", 0)
        fields.update(guard=e.guard(op.operand(3)), cache=CP_ASYNC_CACHE[n], addr=_address(e, op),
                      src=e.reg(op.operand(1)),
                      src_offset=f"+{off}" if off else "", size="" if e.imm(size) == str(n) else f", {e.src(size)}")
    e.emit(TENSOR_OPS[op.name].format(**fields))


@handles("simt.trap")
def _trap(e: _Emitter, op: Operation) -> None:
    e.emit("trap;")


def _sem_scope(op: Operation) -> str:
    return f".{op.attrs.get('sem', 'relaxed')}.{op.attrs.get('scope', 'gpu')}"


@handles("simt.atom", "simt.red", "simt.atom_cas")
def _atom(e: _Emitter, op: Operation) -> None:
    g = e.guard(op.operand(1))
    vals = [e.src(v) for v in op.operands[2:]]
    t = op.operands[-1].type
    if op.name == "simt.red":
        space = "shared" if op.operand(0).type == i32 else "global"
        e.emit(f"{g}red.{space}{_sem_scope(op)}.{op.attrs['kind']}.{atom_type(op.attrs['kind'], t)} "
               f"{_address(e, op)}, {vals[0]};")
        return
    d = e.reg(op.result)
    if g:
        e.emit(f"mov.{_mov_type(t)} {d}, {'0f00000000' if t == f32 else '0d0000000000000000' if t == f64 else 0};")
    if op.name == "simt.atom_cas":
        e.emit(f"{g}atom.global{_sem_scope(op)}.cas.b{_bits_of(t)} {d}, {_address(e, op)}, {vals[0]}, {vals[1]};")
    else:
        kind = op.attrs["kind"]
        e.emit(f"{g}atom.global{_sem_scope(op)}.{kind}.{atom_type(kind, t)} {d}, {_address(e, op)}, {vals[0]};")


@handles("simt.inline_asm")
def _inline_asm(e: _Emitter, op: Operation) -> None:
    """The user's asm in a scope of its own (its .reg declarations stay local), $N replaced by
    the registers: results first, then operands (as LLVM prints inline asm into PTX)."""
    registers = [e.reg(r) for r in op.results] + [e.reg(v) for v in op.operands]
    text = inline_asm.substitute(op.attrs["asm"], registers).strip("\n")
    e.emit(f"// begin inline asm\n{{\n{text}\n}}\n// end inline asm")


@handles("simt.vprintf")
def _vprintf(e: _Emitter, op: Operation) -> None:
    e.uses_printf = True
    fmt = e.string(op.attrs["format"])
    offset = 0
    stores = []
    for v in op.operands:
        size = 8 if _bits_of(v.type) == 64 else 4
        offset = (offset + size - 1) // size * size
        stores.append(f"st.local.{mem_type(v.type)} [__printf_buf+{offset}], {e.reg(v)};")
        offset += size
    e.printf_bytes = max(e.printf_bytes, offset, 8)
    fmt_reg, buf_reg = e.new_reg("rd"), e.new_reg("rd")
    e.emit("\n".join(stores) if stores else "// no arguments")
    e.emit(f"cvta.global.u64 {fmt_reg}, {fmt};\ncvta.local.u64 {buf_reg}, __printf_buf;")
    e.emit("{\n\t.param .b64 param0;\n\t.param .b64 param1;\n\t.param .b32 retval0;\n"
           f"\tst.param.b64 [param0], {fmt_reg};\n\tst.param.b64 [param1], {buf_reg};\n"
           "\tcall.uni (retval0), vprintf, (param0, param1);\n}")


@handles("simt.assertfail")
def _assertfail(e: _Emitter, op: Operation) -> None:
    e.uses_assert = True
    regs = [e.new_reg("rd") for _ in range(3)]
    names = [e.string(op.attrs[k]) for k in ("message", "file", "function")]
    for r, n in zip(regs, names):
        e.emit(f"cvta.global.u64 {r}, {n};")
    e.emit("{\n\t.param .b64 param0;\n\t.param .b64 param1;\n\t.param .b32 param2;\n\t.param .b64 param3;\n"
           f"\t.param .b64 param4;\n\tst.param.b64 [param0], {regs[0]};\n\tst.param.b64 [param1], {regs[1]};\n"
           f"\tst.param.b32 [param2], {op.attrs['line']};\n\tst.param.b64 [param3], {regs[2]};\n"
           "\tst.param.b64 [param4], 1;\n\tcall.uni __assertfail, (param0, param1, param2, param3, param4);\n}")
    # __assertfail does not return: saying so leaves no register live across the call, so a
    # check in a hot loop costs its compare and branch, not saved registers
    e.emit("trap;")


@handles("simt.return")
def _return(e: _Emitter, op: Operation) -> None:
    e.emit("ret;")


# ------------------------------------------------------------------------------ control flow


def _setp(t, pred: str) -> str:
    return f"setp.{pred}.{type_key(t)}"


def _loop_test(e: _Emitter, iv: Value, ub: Value, step: Value, keep_going: bool) -> str:
    """A predicate register: the loop runs on (keep_going) or stops (not keep_going). The bound
    test follows the step's sign: iv < ub for a positive step, iv > ub for a negative one."""
    p = e.new_reg("p")
    sign = e.imm(step)
    tests = {True: ("lt", "ge"), False: ("gt", "le")}
    if sign is not None or iv.type.is_unsigned:
        up = iv.type.is_unsigned or int(sign) > 0
        e.emit(f"{_setp(iv.type, tests[up][0 if keep_going else 1])} {p}, {e.reg(iv)}, {e.src(ub)};")
        return p
    up, on_up, on_down = e.new_reg("p"), e.new_reg("p"), e.new_reg("p")
    e.emit(f"{_setp(iv.type, 'gt')} {up}, {e.reg(step)}, 0;")
    e.emit(f"{_setp(iv.type, tests[True][0 if keep_going else 1])} {on_up}, {e.reg(iv)}, {e.src(ub)};")
    e.emit(f"{_setp(iv.type, tests[False][0 if keep_going else 1])} {on_down}, {e.reg(iv)}, {e.src(ub)};")
    e.emit(f"@{up} mov.pred {p}, {on_up};\n@!{up} mov.pred {p}, {on_down};")
    return p


# ops whose results update their accumulator operands (the last len(results) operands) in place
IN_PLACE = ("simt.wgmma", "simt.wgmma_wait")


def in_place_source(e: _Emitter, result: Value) -> Optional[Value]:
    """The accumulator operand whose register the result of an IN_PLACE op takes: when the
    operand has no other use (the registers of a wgmma chain must not be copied while the wgmma
    run); None where the result needs its own register."""
    op = result.owner_op
    source = op.operands[len(op.operands) - len(op.results) + op.results.index(result)]
    return source if e.imm(source) is None and len(source.uses) == 1 else None


def _register_source(e: _Emitter, v: Value) -> Value:
    """The value whose register `v` will live in: through in-place ops, their accumulator operand."""
    while v.owner_op is not None and v.owner_op.name in IN_PLACE:
        source = in_place_source(e, v)
        if source is None:
            break
        v = source
    return v


def _coalesce_carried(e: _Emitter, body) -> None:
    """Give a loop-carried value's next value the register of the block argument when the
    argument is dead by then, so the back edge needs no mov: `acc = acc * alpha` then wgmma into
    acc writes acc's own registers (ptxas does not coalesce these moves around wgmma: attention's
    loop kept 61 of them). The next value must be computed by an op of the body itself, after
    every other use of the argument, or by the op holding the argument's last use when that op
    is one PTX instruction (it reads before it writes)."""
    ops = body.ops
    position = {op: i for i, op in enumerate(ops)}

    def top(op: Operation) -> int:
        while op.parent is not body:
            op = op.parent_op
        return position[op]

    taken: set[Value] = set()
    for arg, new in zip(body.args[1:], ops[-1].operands):
        root = _register_source(e, new)
        definer = root.owner_op
        if definer is None or definer.parent is not body or root in e.regs or root in taken or \
                reg_class(root.type) != reg_class(arg.type) or e.imm(root) is not None:
            continue
        at = position[definer]
        uses = [top(user) for user in arg.users()]
        if all(u < at for u in uses) or (all(u <= at for u in uses) and e.one_instruction(definer)):
            e.regs[root] = e.reg(arg)
            taken.add(root)


@handles("scf.for")
def _for(e: _Emitter, op: Operation) -> None:
    lb, ub, step = op.operands[:3]
    body = op.regions[0].block
    iv, carried = body.args[0], body.args[1:]
    for arg, res in zip(carried, op.results):
        e.regs[res] = e.reg(arg)
    e.parallel_copy([e.reg(iv)] + [e.reg(a) for a in carried], [lb] + list(op.operands[3:]),
                    [iv.type] + [a.type for a in carried])
    top, end = e.label(), e.label()
    e.emit(f"@{_loop_test(e, iv, ub, step, keep_going=False)} bra.uni {end};")
    e.put_label(top)
    _coalesce_carried(e, body)
    e.block_ops(body.ops[:-1])
    e.parallel_copy([e.reg(a) for a in carried], list(body.ops[-1].operands), [a.type for a in carried])
    e.emit(f"add.{type_key(iv.type)} {e.reg(iv)}, {e.reg(iv)}, {e.src(step)};")
    e.emit(f"@{_loop_test(e, iv, ub, step, keep_going=True)} bra.uni {top};")
    e.put_label(end)


@handles("scf.if")
def _if(e: _Emitter, op: Operation) -> None:
    then_block, else_block = op.regions[0].block, op.regions[1].block
    dests = [e.reg(r) for r in op.results]
    types = [r.type for r in op.results]
    else_label, end = e.label(), e.label()
    has_else = len(else_block.ops) > 1 or bool(op.results)
    e.emit(f"@!{e.reg(op.operand(0))} bra {else_label if has_else else end};")
    e.block_ops(then_block.ops[:-1])
    e.parallel_copy(dests, list(then_block.ops[-1].operands), types)
    if has_else:
        e.emit(f"bra.uni {end};")
        e.put_label(else_label)
        e.block_ops(else_block.ops[:-1])
        e.parallel_copy(dests, list(else_block.ops[-1].operands), types)
    e.put_label(end)


@handles("scf.while")
def _while(e: _Emitter, op: Operation) -> None:
    before, after = op.regions[0].block, op.regions[1].block
    for arg, res in zip(after.args, op.results):
        e.regs[res] = e.reg(arg)
    e.parallel_copy([e.reg(a) for a in before.args], list(op.operands), [a.type for a in before.args])
    top, end = e.label(), e.label()
    e.put_label(top)
    e.block_ops(before.ops[:-1])
    cond = before.ops[-1]
    e.parallel_copy([e.reg(a) for a in after.args], list(cond.operands[1:]), [a.type for a in after.args])
    e.emit(f"@!{e.reg(cond.operand(0))} bra {end};")
    e.block_ops(after.ops[:-1])
    e.parallel_copy([e.reg(a) for a in before.args], list(after.ops[-1].operands), [a.type for a in before.args])
    e.emit(f"bra.uni {top};")
    e.put_label(end)


def emit_ptx(simt_func: Operation, target: str = "sm_90a", ptx_version: str = "8.7") -> str:
    """PTX text of a simt.func (see tile.ir.simt_ops) for `target` (sm_80 ... sm_90a)."""
    if simt_func.name != "simt.func":
        raise PtxError(simt_func, "emit_ptx expects a simt.func")
    return _Emitter(simt_func, target, ptx_version).run()
