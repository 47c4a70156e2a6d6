"""tile.profiler (Triton's proton API): sessions, scopes, launch metadata, the hatchet file and
its viewer, on the interpreter (host clock)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tile
import tile.language as tl
import tile.profiler as proton
import tile.profiler.viewer as viewer
from tile.runtime import launch_hooks


def _metadata(grid, kernel, args):
    return {"name": f"{kernel.name} [n={args['n']}]", "flops32": 2.0 * args["n"], "bytes": 12 * args["n"],
            "unrelated": 1}


@tile.jit(launch_metadata=_metadata)
def _axpy(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _run(n: int = 3000) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    _axpy[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    np.testing.assert_allclose(out, 2.0 * x.astype(np.float64) + y, rtol=1e-6)


def _node(tree: dict, *path: str) -> dict:
    for name in path:
        tree = next(c for c in tree["children"] if c["frame"]["name"] == name)
    return tree


def test_session_records_launches_and_scopes(tmp_path):
    _run()  # compiled before the session, as a benchmark's warm-up would
    session = proton.start(str(tmp_path / "prof"), hook="triton")
    assert launch_hooks.HOOKS
    for _ in range(3):
        _run()
    with proton.scope("host work", {"flops16": 100.0}):
        _run()
    proton.deactivate(session)
    assert not launch_hooks.HOOKS  # no cost on launches while nothing records
    _run()  # not recorded
    proton.activate(session)
    _run()
    proton.finalize()
    root, info = json.loads((tmp_path / "prof.hatchet").read_text())
    assert info["profiler"] == "tile.profiler"
    launches = _node(root, "_axpy [n=3000]")["metrics"]
    assert launches["count"] == 4 and launches["flops32"] == 4 * 6000.0 and launches["bytes"] == 4 * 36000
    assert "unrelated" not in launches and launches["time (ns)"] > 0
    scope = _node(root, "host work")["metrics"]
    inner = _node(root, "host work", "_axpy [n=3000]")["metrics"]
    assert scope["count"] == 1 and inner["count"] == 1
    assert scope["flops16"] == 100.0 and scope["flops32"] == 6000.0  # the scope's own plus what ran inside
    assert scope["time (ns)"] >= inner["time (ns)"]
    assert root["metrics"]["count"] == 5
    assert root["metrics"]["time (ns)"] == pytest.approx(launches["time (ns)"] + scope["time (ns)"])


def test_without_hook_launches_are_named_by_kernel(tmp_path):
    _run()
    proton.start(str(tmp_path / "plain"))
    _run()
    proton.finalize()
    root, _ = json.loads((tmp_path / "plain.hatchet").read_text())
    node = _node(root, "_axpy")["metrics"]
    assert node["count"] == 1 and "flops32" not in node


def test_viewer_derives_metrics_and_prints_the_tree(tmp_path, capsys):
    path = tmp_path / "v.hatchet"
    tree = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {"time (ns)": 3e6, "count": 3},
            "children": [{"frame": {"name": "mm", "type": "function"},
                          "metrics": {"time (ns)": 2e6, "count": 2, "flops16": 4e12, "bytes": 2e9}, "children": []},
                         {"frame": {"name": "other", "type": "function"},
                          "metrics": {"time (ns)": 1e6, "count": 1}, "children": []}]}
    path.write_text(json.dumps([tree, {}]))
    frame, metrics = viewer.parse(["time/ms", "avg_time/us", "tflop16/s", "gbyte/s"], str(path))
    mm = frame.children[0].metrics
    assert mm["time/ms"] == pytest.approx(2.0) and mm["avg_time/us"] == pytest.approx(1000.0)
    assert mm["tflop16/s"] == pytest.approx(2000.0) and mm["gbyte/s"] == pytest.approx(1000.0)
    viewer.print_tree(frame, metrics)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "3.000 1000.000 nan nan ROOT"
    assert lines[1] == "├─ 2.000 1000.000 2000.000 1000.000 mm"
    assert lines[2] == "└─ 1.000 1000.000 nan nan other"
    kept, _ = viewer.parse(["time/ms"], str(path), exclude="oth")
    assert [c.name for c in kept.children] == ["mm"]
    kept, _ = viewer.parse(["time/ms"], str(path), threshold=1.5)
    assert [c.name for c in kept.children] == ["mm"]


def test_bad_uses_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="hook must be one of"):
        proton.start(str(tmp_path / "x"), hook="cupti")
    with pytest.raises(ValueError, match="tile records trees only"):
        proton.start(str(tmp_path / "x"), data="trace")
    with pytest.raises(ValueError, match="no session 7"):
        proton.activate(7)
    with pytest.raises(ValueError, match="no scope is open"):
        proton.exit_scope()
    proton.enter_scope("a")
    with pytest.raises(ValueError, match="the open scope is 'a', not 'b'"):
        proton.exit_scope("b")
    proton.exit_scope("a")
    path = tmp_path / "v.hatchet"
    path.write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {}, "children": []}, {}]))
    with pytest.raises(ValueError, match="unknown metric 'util/x'"):
        viewer.parse(["util/x"], str(path))


def test_enter_and_exit_scope_and_decorators(tmp_path):
    _run()

    @proton.scope("decorated")
    def work():
        _run()

    @proton.profile(name=str(tmp_path / "deco"))
    def profiled():
        proton.enter_scope("manual", metrics={"bytes": 5})
        work()
        proton.exit_scope("manual", metrics={"flops": 7})

    profiled()
    proton.finalize()
    root, _ = json.loads((tmp_path / "deco.hatchet").read_text())
    manual = _node(root, "manual")
    assert manual["metrics"]["bytes"] == 5 and manual["metrics"]["flops"] == 7
    assert _node(root, "manual", "decorated", "_axpy")["metrics"]["count"] == 1


def test_triton_programs_import_proton_and_cublas_through_the_alias():
    import tile.triton as alias

    assert alias.tile_module_name("triton.profiler") == "tile.profiler"
    assert alias.tile_module_name("triton.profiler.viewer") == "tile.profiler.viewer"
    assert alias.tile_module_name("triton._C.libtriton") == "tile.runtime.cublas"
    from tile.runtime.cublas import nvidia

    assert nvidia.cublas.CublasLt.__name__ == "CublasLt"


@pytest.mark.gpu
def test_cublas_through_torch_matches_float64():
    torch = pytest.importorskip("torch")
    from tile.runtime.cublas import nvidia

    cublas = nvidia.cublas.CublasLt(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"))
    a = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(192, 128, device="cuda", dtype=torch.float16)
    c = torch.full((256, 192), float("nan"), device="cuda", dtype=torch.float16)
    cublas.matmul(a, b, c)
    want = a.double().cpu().numpy() @ b.double().cpu().numpy().T
    np.testing.assert_allclose(c.double().cpu().numpy(), want, rtol=2e-2, atol=5e-2)
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    c8 = torch.empty((256, 192), device="cuda", dtype=torch.float16)
    cublas.matmul(a8, b8, c8)
    want8 = a8.double().cpu().numpy() @ b8.double().cpu().numpy().T
    np.testing.assert_allclose(c8.double().cpu().numpy(), want8, rtol=2e-2, atol=0.5)
    with pytest.raises(ValueError, match="do not fit c = a @ b.T"):
        cublas.matmul(a, a, c)
