"""The PTX decoder: module text -> `program.Module` (kernels of decoded instructions), cached by
the text's hash.

    .visible .entry add(.param .u64 x, ...)        Kernel("add", params=[Param("x", "u64", 0, 8)...])
    .reg .b32 %r<8>;                               registers %r0..%r7, 32 bits each
    // add.py:12  offs = pid * BLOCK + ...         the source of the instructions that follow
    @%p1 ld.global.v4.f32 {%f1, ...}, [%rd4+16];   Instr("ld", ("global", "v4"), ("f32",), ...)
    $L__add_1:                                     a label: branches to it resolve to an index

Which opcodes exist, and which suffixes each accepts, is the instruction set's business
(`ptx_isa.ISA`): an opcode it does not list, or a suffix its decoder rejects, is a
`PtxSyntaxError` naming the instruction and its PTX line, never a silent skip.
"""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Optional

from .errors import PtxSyntaxError
from .program import REG_BITS, GlobalData, Instr, Kernel, Module, Operand, Param, Source

TYPE_NAMES = frozenset(REG_BITS) | {"e4m3", "e5m2", "e4m3x2", "e5m2x2", "tf32"}
SPECIAL_REGISTERS = frozenset(
    f"%{name}.{axis}" for name in ("tid", "ntid", "ctaid", "nctaid") for axis in "xyz") | {
    "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%clock", "%clock64", "%globaltimer", "%lanemask_eq",
    "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"}
PARAM_SIZE = {"u8": 1, "s8": 1, "b8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "u32": 4, "s32": 4,
              "b32": 4, "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8}

_LOC = re.compile(r"//\s*([^\s:]+):(\d+)(?:\s\s+(.*))?$")
_LABEL = re.compile(r"[$A-Za-z_][\w$]*:")
_GUARD = re.compile(r"@(!?)(%[\w.]+)\s+")
_REG_DECL = re.compile(r"(%[A-Za-z_$][\w$]*)(?:<(\d+)>)?$")
_ARRAY_DECL = re.compile(r"([A-Za-z_$][\w$]*)\[(\d*)\]")
_INT = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)U?$")
_UNTERMINATED = (".version", ".target", ".address_size")


class _Statement:
    __slots__ = ("kind", "text", "line", "loc")

    def __init__(self, kind: str, text: str, line: int, loc: tuple[str, int, str]):
        self.kind, self.text, self.line, self.loc = kind, text, line, loc


def _statements(text: str) -> list[_Statement]:
    """Split PTX into statements ("stmt", "label", "entry", "open", "close"), each with its first
    line and the source comment in force."""
    out: list[_Statement] = []
    loc = ("", 0, "")
    buf: list[str] = []
    start = 0
    depth = 0
    for number, raw in enumerate(text.split("\n"), 1):
        code, _, comment = raw.partition("//")
        if comment and not "".join(buf).strip():
            m = _LOC.match("//" + comment.strip())
            if m:
                loc = (m.group(1), int(m.group(2)), (m.group(3) or "").strip())
        for ch in code:
            pending = "".join(buf).strip()
            if not pending:
                start = number
                if ch in "{}":
                    out.append(_Statement("open" if ch == "{" else "close", ch, number, loc))
                    continue
            if ch == "{" and depth == 0 and ".entry" in pending:
                out.append(_Statement("entry", pending, start, loc))
                out.append(_Statement("open", ch, number, loc))
                buf = []
                continue
            depth += (ch == "{") - (ch == "}")
            buf.append(ch)
            if depth == 0 and ch == ";":
                out.append(_Statement("stmt", pending, start, loc))
                buf = []
            elif depth == 0 and ch == ":" and _LABEL.fullmatch(pending + ":"):
                out.append(_Statement("label", pending, start, loc))
                buf = []
        pending = "".join(buf).strip()
        if pending.startswith(_UNTERMINATED):
            out.append(_Statement("stmt", pending, start, loc))
            buf = []
    if "".join(buf).strip():
        raise PtxSyntaxError("?", f"PTX ends inside a statement: {''.join(buf).strip()[:80]!r}")
    return out


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets, braces and parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def parse_int(text: str) -> int:
    t = text.strip().rstrip("U")
    neg = t.startswith("-")
    v = int(t.lstrip("-"), 0) if not re.fullmatch(r"-?0\d+", t) else int(t.lstrip("-"), 8)
    return -v if neg else v


class _KernelBuilder:
    def __init__(self, name: str, params: list[Param], max_threads: int):
        self.kernel = Kernel(name, params, [], [], [], max_threads)
        self.scopes: list[dict[str, int]] = [{}]
        self.labels: dict[str, int] = {}
        self.branches: list[tuple[Instr, str]] = []
        self.param_names = {p.name for p in params}
        self.local_params: dict[str, int] = {}

    def error(self, st: _Statement, message: str) -> PtxSyntaxError:
        return PtxSyntaxError(self.kernel.name, message, _source(st))

    def declare(self, st: _Statement) -> None:
        words = st.text.replace(",", " ").split()
        kind = words[0]
        if kind == ".reg":
            rtype = words[1].lstrip(".")
            if rtype not in REG_BITS:
                raise self.error(st, f"unknown register type .{rtype}")
            for decl in words[2:]:
                m = _REG_DECL.match(decl)
                if not m:
                    raise self.error(st, f"bad register declaration {decl!r}")
                names = [m.group(1)] if m.group(2) is None else [f"{m.group(1)}{i}" for i in range(int(m.group(2)))]
                for n in names:
                    self.scopes[-1][n] = len(self.kernel.reg_names)
                    self.kernel.reg_names.append(n)
                    self.kernel.reg_bits.append(REG_BITS[rtype])
            return
        if kind in (".shared", ".local", ".param"):
            align = 1
            if ".align" in words:
                align = int(words[words.index(".align") + 1])
            m = _ARRAY_DECL.search(st.text)
            if kind == ".param" and m is None:  # a scalar .param of a call sequence
                size = PARAM_SIZE.get(words[-2].lstrip("."), 8)
                self.local_params[words[-1]] = size
                return
            if m is None or not m.group(2):
                raise self.error(st, f"bad {kind} declaration")
            k = self.kernel
            elem = next((PARAM_SIZE[w[1:]] for w in words[1:] if w.startswith(".") and w[1:] in PARAM_SIZE), 1)
            size = int(m.group(2)) * elem
            if kind == ".shared":
                off = -(-k.static_shared_bytes // align) * align
                k.shared_symbols[m.group(1)] = off
                k.static_shared_bytes = off + size
            elif kind == ".local":
                off = -(-k.local_bytes // align) * align
                k.local_symbols[m.group(1)] = off
                k.local_bytes = off + size
            else:
                self.local_params[m.group(1)] = size
            return
        raise self.error(st, f"unknown directive {kind} in a kernel body")

    def register(self, name: str) -> Optional[int]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def operand(self, st: _Statement, tok: str) -> Operand:
        tok = tok.strip()
        if tok.startswith("{") and tok.endswith("}"):
            return ("vec", tuple(self.operand(st, t) for t in split_top(tok[1:-1])))
        if tok.startswith("(") and tok.endswith(")"):
            return ("list", tuple(t.strip() for t in split_top(tok[1:-1])))
        if tok.startswith("[") and tok.endswith("]"):
            pieces = split_top(tok[1:-1])
            if len(pieces) == 2:  # [tensor map, {coordinates}] of cp.async.bulk.tensor
                return ("tensor", self.operand(st, pieces[0]), self.operand(st, pieces[1]))
            inner = tok[1:-1].replace(" ", "")
            # a negative offset reads [%rd1+-8192] (as ptxas and LLVM's NVPTX printer write it) or [%rd1-8192]
            m = re.fullmatch(r"(.+?)(?:(\+-|[+-])(0[xX][0-9a-fA-F]+|\d+))?", inner)
            if m is None:
                raise self.error(st, f"bad address {tok!r}")
            base = self.operand(st, m.group(1))
            off = parse_int(m.group(3)) * (1 if m.group(2) == "+" else -1) if m.group(3) else 0
            if base[0] == "sym":
                return ("addr", ("sym", base[1], 0), base[2] + off)
            if base[0] == "imm":
                return ("addr", ("imm", 0), base[1] + off)
            if base[0] != "reg":
                raise self.error(st, f"bad address base {m.group(1)!r}")
            return ("addr", base, off)
        if "|" in tok:  # a destination pair %r|%p (elect.sync)
            first, second = tok.split("|", 1)
            return ("pair", self.operand(st, first), self.operand(st, second))
        if tok.startswith("!"):
            inner = self.operand(st, tok[1:])
            if inner[0] != "reg":
                raise self.error(st, f"bad negated operand {tok!r}")
            return ("npred", inner[1])
        if tok.startswith("%"):
            idx = self.register(tok)
            if idx is not None:
                return ("reg", idx)
            if tok in SPECIAL_REGISTERS:
                return ("sreg", tok)
            raise self.error(st, f"undeclared register {tok}")
        if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):
            return ("imm", int(tok[2:], 16), "f32")
        if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", tok):
            return ("imm", int(tok[2:], 16), "f64")
        if _INT.match(tok):
            return ("imm", parse_int(tok))
        m = re.fullmatch(r"([A-Za-z_$][\w$]*)(?:\+(\d+))?", tok)
        if m:
            return ("sym", m.group(1), int(m.group(2) or 0))
        if re.fullmatch(r"-?\d*\.\d+(e-?\d+)?", tok):
            raise self.error(st, f"PTX float immediates are written as 0f/0d hex bits, not {tok!r}")
        raise self.error(st, f"cannot read the operand {tok!r}")

    def instruction(self, st: _Statement, isa: dict) -> None:
        text = st.text
        guard = None
        m = _GUARD.match(text)
        if m:
            idx = self.register(m.group(2))
            if idx is None or self.kernel.reg_bits[idx] != 0:
                raise self.error(st, f"the guard {m.group(2)} is not a declared predicate register")
            guard = (idx, m.group(1) == "!")
            text = text[m.end():]
        head, _, rest = text.strip().partition(" ")
        parts = head.split(".")
        opcode = None
        for n in range(min(4, len(parts)), 0, -1):
            if ".".join(parts[:n]) in isa:
                opcode, suffixes = ".".join(parts[:n]), parts[n:]
                break
        if opcode is None:
            raise self.error(st, f"unknown instruction '{head}': the emulator does not implement it")
        types = tuple(s for s in suffixes if s in TYPE_NAMES)
        mods = tuple(s for s in suffixes if s not in TYPE_NAMES)
        operands = tuple(self.operand(st, t) for t in split_top(rest)) if rest.strip() else ()
        ins = Instr(opcode, mods, types, operands, guard, _source(st))
        try:
            ins.spec = isa[opcode].decode(ins)
        except ValueError as e:
            raise self.error(st, f"'{head}': {e}") from None
        if opcode == "bra":
            if len(operands) != 1 or operands[0][0] != "sym":
                raise self.error(st, "bra takes one label")
            self.branches.append((ins, operands[0][1]))
        self.kernel.instrs.append(ins)


def _source(st: _Statement) -> Source:
    file, line, text = st.loc
    return Source(st.line, st.text if len(st.text) < 120 else st.text[:117] + "...", file, line, text)


def _entry_header(st: _Statement) -> tuple[str, list[Param], int]:
    m = re.search(r"\.entry\s+([\w$]+)\s*\((.*)\)(.*)$", st.text, re.S)
    if m is None:
        m2 = re.search(r"\.entry\s+([\w$]+)\s*(.*)$", st.text, re.S)
        if m2 is None:
            raise PtxSyntaxError("?", "bad .entry header", _source(st))
        name, plist, tail = m2.group(1), "", m2.group(2)
    else:
        name, plist, tail = m.group(1), m.group(2), m.group(3)
    params: list[Param] = []
    offset = 0
    for p in split_top(plist):
        words = p.split()
        if len(words) < 3 or words[0] != ".param":
            raise PtxSyntaxError(name, f"bad kernel parameter {p!r}", _source(st))
        ptype = words[-2].lstrip(".")
        align = int(words[words.index(".align") + 1]) if ".align" in words else PARAM_SIZE.get(ptype, 8)
        size = PARAM_SIZE.get(ptype)
        if size is None:
            raise PtxSyntaxError(name, f"unsupported parameter type .{ptype}", _source(st))
        array = _ARRAY_DECL.fullmatch(words[-1])
        offset = -(-offset // align) * align
        if array is not None:
            params.append(Param(array.group(1), ptype, offset, size * int(array.group(2) or 0), True))
        else:
            params.append(Param(words[-1], ptype, offset, size))
        offset += params[-1].size
    max_threads = 0
    mt = re.search(r"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", tail)
    if mt:
        max_threads = int(mt.group(1)) * int(mt.group(2) or 1) * int(mt.group(3) or 1)
    return name, params, max_threads


def _decode(text: str) -> Module:
    from .ptx_isa import ISA

    module = Module("", {}, {}, None)
    builder: Optional[_KernelBuilder] = None
    depth = 0
    for st in _statements(text):
        if st.kind == "entry":
            if builder is not None:
                raise PtxSyntaxError(builder.kernel.name, "an .entry inside a kernel body", _source(st))
            builder = _KernelBuilder(*_entry_header(st))
            builder.kernel.ptx_version = module.ptx_version
            continue
        if st.kind == "open":
            depth += 1
            if builder is not None and depth > 1:
                builder.scopes.append({})
            continue
        if st.kind == "close":
            depth -= 1
            if depth < 0:
                raise PtxSyntaxError(builder.kernel.name if builder else "?", "unbalanced '}'", _source(st))
            if builder is not None and depth >= 1:
                builder.scopes.pop()
            elif builder is not None:
                _finish(builder)
                module.kernels[builder.kernel.name] = builder.kernel
                builder = None
            continue
        if builder is None or depth == 0:
            _module_statement(module, st)
            continue
        if st.kind == "label":
            builder.labels[st.text] = len(builder.kernel.instrs)
        elif st.text.startswith("."):
            builder.declare(st)
        else:
            builder.instruction(st, ISA)
    if builder is not None or depth != 0:
        raise PtxSyntaxError(builder.kernel.name if builder else "?", "PTX ends inside a kernel body (missing '}')")
    if not module.kernels:
        raise PtxSyntaxError("?", "the PTX module has no .entry kernel")
    return module


def _finish(builder: _KernelBuilder) -> None:
    for ins, label in builder.branches:
        if label not in builder.labels:
            raise PtxSyntaxError(builder.kernel.name, f"branch to an undefined label {label}", ins.source)
        ins.target = builder.labels[label]
    guarded = set()
    for ins in builder.kernel.instrs:
        if ins.guard is not None and ins.operands:
            dest = ins.operands[0]
            guarded.update(o[1] for o in (dest[1] if dest[0] == "vec" else (dest,)) if o[0] == "reg")
    builder.kernel.guarded_writes = frozenset(guarded)


def _module_statement(module: Module, st: _Statement) -> None:
    words = st.text.split()
    if not words:
        return
    if words[0] == ".target":
        module.target = words[1].rstrip(",")
    elif words[0] == ".version":
        major, _, minor = words[1].partition(".")
        module.ptx_version = (int(major), int(minor or 0))
    elif words[0] == ".address_size":
        return
    elif words[:2] == [".extern", ".shared"]:
        m = _ARRAY_DECL.search(st.text)
        if m is None:
            raise PtxSyntaxError("?", "bad .extern .shared declaration", _source(st))
        module.dynamic_shared = m.group(1)
        if ".align" in words:
            module.dynamic_shared_align = int(words[words.index(".align") + 1])
    elif words[:2] == [".extern", ".func"]:
        return  # vprintf / __assertfail: the calls name them
    elif words[0] == ".global":
        m = re.search(r"([\w$]+)\[(\d+)\]\s*=\s*\{([^}]*)\}", st.text)
        if m is None or ".b8" not in words:
            raise PtxSyntaxError("?", "only initialised .global .b8 arrays are supported", _source(st))
        module.globals[m.group(1)] = GlobalData(m.group(1), bytes(parse_int(b) & 0xFF for b in m.group(3).split(",")))
    else:
        raise PtxSyntaxError("?", f"unknown module-level statement {st.text[:60]!r}", _source(st))


_CACHE: "OrderedDict[str, Module]" = OrderedDict()
_CACHE_SIZE = 128


def decode_module(text: str) -> Module:
    """The decoded module of PTX `text` (cached by the text's SHA-256)."""
    key = hashlib.sha256(text.encode()).hexdigest()
    module = _CACHE.get(key)
    if module is None:
        module = _decode(text)
        _CACHE[key] = module
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return module
