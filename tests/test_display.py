"""tile.dump's rich display: plain text unchanged, coloured HTML per stage, per-pass diffs,
links from IR locations and PTX line comments to the kernel's source, and clear errors."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tile
import tile.language as tl
from tile.display import COLOURS, Dump, KernelSource, highlight


@tile.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(x_ptr + offs, mask=mask)  # the same address again: cse merges it (not the load)
    tl.store(out_ptr + offs, a + b, mask=mask)


X = np.ones(1000, np.float32)
LOAD_LINE = twice_kernel.line_offset + 5  # the line of `a = tl.load(...)` in this file


def _dump(stage: str, target: str = "sm_90a") -> Dump:
    return tile.dump(twice_kernel, X, X, 1000, BLOCK=256, stage=stage, target=target)


def _span(cls: str, text: str) -> str:
    return f'<span style="color:{COLOURS[cls]}">{text}</span>'


@pytest.mark.parametrize("stage, op, value", [("tile", "tt.load", "%x_ptr"), ("tile-opt", "tt.load", "%x_ptr"),
                                              ("gpu", "tt.load", "%x_ptr"), ("simt", "simt.ld_global", "%x_ptr"),
                                              ("ptx", "ld.global.f32", "%rd1")])
def test_each_stage_renders_coloured_and_prints_plain(stage, op, value):
    shown = _dump(stage)
    text = str(shown)
    assert "<span" not in text and "loc(" not in text
    assert op in text
    page = shown._repr_html_()
    assert _span("op" if stage != "ptx" else "instruction", op) in page
    assert _span("value" if stage != "ptx" else "register", value) in page


def test_ir_lines_link_to_the_kernel_source():
    page = _dump("tile")._repr_html_()
    link = re.search(rf'<a href="#(tile-dump-\d+)-L{LOAD_LINE}" title="a = tl.load\(x_ptr \+ offs, mask=mask\)"',
                     page)
    assert link is not None
    assert f'<span id="{link.group(1)}-L{LOAD_LINE}">' in page  # the anchor in the source listing
    assert "source: test_display.py" in page


def test_ptx_line_comments_link_to_the_kernel_source():
    page = _dump("ptx")._repr_html_()
    assert re.search(rf'// <a href="#tile-dump-\d+-L{LOAD_LINE}" title="a = tl.load', page)


def test_passes_render_as_collapsible_diffs():
    shown = _dump("passes", target="interpreter")
    page = shown._repr_html_()
    summaries = re.findall(r"<summary>(.*?)</summary>", page)
    assert summaries[-1] == "source: test_display.py"
    assert summaries[-2] == "IR after the last pass"
    assert len(summaries) == str(shown).count("// ----- after") + 2
    assert "after licm: no change" in summaries
    cse = next(s for s in summaries if s.startswith("after cse"))
    added, removed_count = map(int, re.fullmatch(r"after cse: \+(\d+) −(\d+) lines", cse).groups())
    assert removed_count > added  # the second address goes (the rest is renumbered)
    removed = page.split("after cse")[1].split("</details>")[0]
    assert '<span style="background:#ffebe9">-' in removed and _span("op", "tt.load") in removed


def test_highlight_escapes_html_and_keeps_the_text():
    line = '  %x = tt.print %a {prefix = "<b>&"} : i32'
    coloured = highlight(line, "ir")
    assert "<b>" not in coloured and "&lt;b&gt;&amp;" in coloured
    assert re.sub(r"<[^>]+>", "", coloured).replace("&lt;", "<").replace("&gt;", ">").replace(
        "&amp;", "&").replace("&quot;", '"') == line


def test_a_location_outside_the_kernel_is_not_a_link():
    source = KernelSource("/home/me/kernels.py", 1, ["def k():\n", "    pass\n"])
    inside = Dump("t", "x", "tile", located='  tt.return loc("/home/me/kernels.py":2:0)', source=source)
    assert '<a href="#' in inside._repr_html_()
    elsewhere = Dump("t", "x", "tile", located='  tt.return loc("/elsewhere/kernels.py":2:0)', source=source)
    assert "kernels.py:2" in elsewhere._repr_html_() and "<a " not in elsewhere._repr_html_()
    past_the_end = Dump("t", "x", "tile", located='  tt.return loc("/home/me/kernels.py":3:0)', source=source)
    assert "<a " not in past_the_end._repr_html_()


def test_unknown_stage_and_targets_are_clear_errors():
    with pytest.raises(ValueError, match="unknown stage 'llvm'"):
        _dump("llvm")
    with pytest.raises(ValueError, match="cannot compile for target 'sm_50'; choose 'interpreter' or one of sm_80"):
        _dump("tile", target="sm_50")
    with pytest.raises(ValueError, match="needs a GPU target"):
        _dump("ptx", target="interpreter")


def test_fp8_compiles_for_targets_with_and_without_fp8_instructions():
    """sm_80 has no fp8 cvt (tile converts in integer arithmetic there); sm_89 has."""
    @tile.jit
    def fp8_kernel(x_ptr):
        r = tl.arange(0, 16)
        tl.store(x_ptr + r, tl.load(x_ptr + r).to(tl.float8e4nv).to(tl.float32))

    assert "e4m3" not in str(tile.dump(fp8_kernel, X, stage="ptx", target="sm_80"))
    assert "cvt.rn.satfinite.e4m3x2.f32" in str(tile.dump(fp8_kernel, X, stage="ptx", target="sm_89"))


@pytest.mark.parametrize("stage", ["tile", "passes", "gpu", "simt", "ptx"])
def test_the_html_is_well_formed(stage):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(_dump(stage)._repr_html_())  # unbalanced tags or raw '<' would not parse
    assert root.tag == "div" and root.find(".//pre") is not None
