"""Types of every IR level: scalar dtypes, pointers, and tensors of static shape.

Types are immutable, hashable values whose `str()` is their IR spelling:

    i32            DType (scalar)           f16, bf16, f8e4nv, u64, i1 ...
    ptr<f32>       PointerType              a global-memory address of an f32 (ptr<f32, const>: read-only)
    tensormap      TensorMapType            a 128-byte TMA tensor map (CUtensorMap), a kernel parameter
    tensor<4x8xf32>                          TensorType without a layout (tile IR)
    tensor<128xf32, #blocked<...>>           TensorType with a layout (gpu IR)

`parse_type` reads that spelling back. Layouts are registered by name (see `register_layout`),
so that the gpu level can add layout kinds without this module knowing them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union


@dataclass(frozen=True)
class DType:
    """A scalar element type. `kind` is "int" (signed, and i1), "uint" or "float"."""

    name: str
    kind: str
    bits: int
    exponent_bits: int = 0  # floats only
    mantissa_bits: int = 0  # floats only, without the implicit bit

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def is_floating(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int" and self.bits > 1

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def is_bool(self) -> bool:
        return self.bits == 1

    @property
    def is_fp8(self) -> bool:
        return self.is_floating and self.bits == 8

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)


i1 = DType("i1", "int", 1)
i8 = DType("i8", "int", 8)
i16 = DType("i16", "int", 16)
i32 = DType("i32", "int", 32)
i64 = DType("i64", "int", 64)
u8 = DType("u8", "uint", 8)
u16 = DType("u16", "uint", 16)
u32 = DType("u32", "uint", 32)
u64 = DType("u64", "uint", 64)
f8e4nv = DType("f8e4nv", "float", 8, 4, 3)
f8e5 = DType("f8e5", "float", 8, 5, 2)
# Triton's other fp8 formats (biases, NaN and saturation rules in tile.ir.float8)
f8e4b15 = DType("f8e4b15", "float", 8, 4, 3)
f8e4b8 = DType("f8e4b8", "float", 8, 4, 3)
f8e5b16 = DType("f8e5b16", "float", 8, 5, 2)
f16 = DType("f16", "float", 16, 5, 10)
bf16 = DType("bf16", "float", 16, 8, 7)
f32 = DType("f32", "float", 32, 8, 23)
f64 = DType("f64", "float", 64, 11, 52)

DTYPES: dict[str, DType] = {
    t.name: t for t in (i1, i8, i16, i32, i64, u8, u16, u32, u64, f8e4nv, f8e5, f8e4b15, f8e4b8, f8e5b16, f16, bf16,
                        f32, f64)
}


@dataclass(frozen=True)
class PointerType:
    """An address in global memory of a `pointee` value; `const` marks read-only data (a kernel
    parameter annotated `tl.const`: the frontend refuses stores and atomics through it)."""

    pointee: "ScalarType"
    address_space: int = 1
    const: bool = False

    def __str__(self) -> str:
        parts = [str(self.pointee)]
        if self.address_space != 1:
            parts.append(str(self.address_space))
        if self.const:
            parts.append("const")
        return f"ptr<{', '.join(parts)}>"

    __repr__ = __str__


ScalarType = Union[DType, PointerType]


@dataclass(frozen=True)
class TensorMapType:
    """A TMA tensor map (CUDA's 128-byte CUtensorMap) of a host tensor descriptor: a kernel
    parameter passed by value on sm_90a, whose address `cp.async.bulk.tensor` reads."""

    name = "tensormap"

    def __str__(self) -> str:
        return "tensormap"

    __repr__ = __str__


tensormap = TensorMapType()


@dataclass(frozen=True)
class TensorType:
    """A block of `shape` elements. `layout` is None in tile IR and a Layout in gpu IR."""

    shape: tuple[int, ...]
    element: ScalarType
    layout: object = None

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        suffix = f", {self.layout}" if self.layout is not None else ""
        return f"tensor<{dims}{self.element}{suffix}>"

    __repr__ = __str__

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def rank(self) -> int:
        return len(self.shape)


Type = Union[DType, PointerType, TensorType, TensorMapType]


def element_type(t: Type) -> ScalarType:
    """The scalar type of a tensor's elements, or the type itself for a scalar."""
    return t.element if isinstance(t, TensorType) else t


def shape_of(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, TensorType) else ()


def with_element(t: Type, element: ScalarType) -> Type:
    """`t` with its element type replaced (a scalar stays a scalar)."""
    if isinstance(t, TensorType):
        return TensorType(t.shape, element, t.layout)
    return element


def is_tensor(t: Type) -> bool:
    return isinstance(t, TensorType)


def is_pointer(t: Type) -> bool:
    return isinstance(element_type(t), PointerType)


# ----------------------------------------------------------------------------- parsing

LayoutParser = Callable[[str], object]
_LAYOUT_PARSERS: dict[str, LayoutParser] = {}


def register_layout(name: str, parse: LayoutParser) -> None:
    """Make `#name<body>` parseable; `parse` receives `body` (the text between the brackets)."""
    _LAYOUT_PARSERS[name] = parse


class TypeParseError(ValueError):
    pass


_DIM = re.compile(r"(\d+)x")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _matching_angle(text: str, open_pos: int) -> int:
    """Index of the '>' that closes the '<' at `open_pos`."""
    depth = 0
    for i in range(open_pos, len(text)):
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return i
    raise TypeParseError(f"unbalanced '<' in {text[open_pos:]!r}")


def parse_type_at(text: str, pos: int) -> tuple[Type, int]:
    """Parse one type starting at `pos`; return it and the position after it."""
    word = _WORD.match(text, pos)
    if word is None:
        raise TypeParseError(f"expected a type at {text[pos:pos + 30]!r}")
    name = word.group(0)
    pos = word.end()
    if name in DTYPES:
        return DTYPES[name], pos
    if name == "tensormap":
        return tensormap, pos
    if name == "ptr":
        if text[pos:pos + 1] != "<":
            raise TypeParseError("expected '<' after ptr")
        pointee, pos = parse_type_at(text, pos + 1)
        space, const = 1, False
        if text.startswith(", ", pos) and (num := re.compile(r"\d+").match(text, pos + 2)) is not None:
            space, pos = int(num.group(0)), num.end()
        if text.startswith(", const", pos):
            const, pos = True, pos + len(", const")
        if text[pos:pos + 1] != ">":
            raise TypeParseError(f"expected '>' closing ptr at {text[pos:pos + 20]!r}")
        return PointerType(pointee, space, const), pos + 1
    if name == "tensor":
        if text[pos:pos + 1] != "<":
            raise TypeParseError("expected '<' after tensor")
        pos += 1
        shape = []
        while (m := _DIM.match(text, pos)) is not None:
            shape.append(int(m.group(1)))
            pos = m.end()
        element, pos = parse_type_at(text, pos)
        layout = None
        if text.startswith(", #", pos):
            layout, pos = parse_layout_at(text, pos + 2)
        if text[pos:pos + 1] != ">":
            raise TypeParseError(f"expected '>' closing tensor at {text[pos:pos + 20]!r}")
        return TensorType(tuple(shape), element, layout), pos + 1
    raise TypeParseError(f"unknown type {name!r}")


def parse_layout_at(text: str, pos: int) -> tuple[object, int]:
    """Parse `#name<body>` at `pos` through the registered layout parsers."""
    word = _WORD.match(text, pos + 1)
    if text[pos] != "#" or word is None:
        raise TypeParseError(f"expected a layout at {text[pos:pos + 30]!r}")
    name = word.group(0)
    if name not in _LAYOUT_PARSERS:
        raise TypeParseError(f"unknown layout #{name}")
    close = _matching_angle(text, word.end())
    return _LAYOUT_PARSERS[name](text[word.end() + 1:close]), close + 1


def parse_type(text: str) -> Type:
    t, pos = parse_type_at(text.strip(), 0)
    if pos != len(text.strip()):
        raise TypeParseError(f"trailing text after type: {text.strip()[pos:]!r}")
    return t
