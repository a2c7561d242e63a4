"""Figure 13.4: the model against the shipped torch.compile groupings, a broken groupings
file, and (where torch is installed) the regeneration script against the shipped file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuviz.data import DataError
from gpuviz.models.profiling.compile import CompileModel, read_groupings
from gpuviz.paths import resource

SHIPPED = resource("profiling", "compile_groupings.json")
SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "regenerate" / "compile_groupings.py"


def model(**values: object) -> CompileModel:
    m = CompileModel()
    with m.batch():
        for name, value in values.items():
            m.set(name, value)
    return m


def numbers(m: CompileModel) -> dict[str, object]:
    return {key: r.value for key, r in m.readouts().items()}


def test_kernels_graphs_and_breaks_as_torch_compile_made_them():
    plain = numbers(model(revealed=True))
    assert (plain["eager_kernels"], plain["compiled_kernels"], plain["graphs"],
            plain["graph_breaks"]) == (7, 4, 1, 0)
    both = numbers(model(with_print=True, with_if=True, revealed=True))
    assert (both["eager_kernels"], both["compiled_kernels"], both["graphs"],
            both["graph_breaks"]) == (10, 6, 3, 2)
    for with_print, with_if in ((True, False), (False, True)):
        one = numbers(model(with_print=with_print, with_if=with_if, revealed=True))
        assert (one["graphs"], one["graph_breaks"], one["compiled_kernels"]) == (2, 1, 5)
    out = model().out
    assert [(k.label, k.lines) for k in out.kernels] == [
        ("seed", (5,)), ("random mask", (5,)), ("addmm", (3,)), ("fused", (4, 5, 6))]
    assert [k.label for k in model(mode="eager").out.variant.eager] == [
        "mm", "add", "gelu", "bernoulli", "div", "mul", "sum"]


@pytest.mark.parametrize(("dynamic", "statuses", "dynamic_calls"), [
    ("auto", ["compile", "recompile", "reuse", "reuse", "recompile"], [False, True]),
    ("true", ["compile", "reuse", "reuse", "reuse", "recompile"], [True, True]),
    ("false", ["compile", "recompile", "recompile", "reuse", "recompile"], [False, False]),
])
def test_calls_with_new_shapes_recompile_until_the_rows_are_dynamic(dynamic, statuses,
                                                                    dynamic_calls):
    m = model(dynamic=dynamic)
    assert m.readouts()["calls"].total == 5
    m.go_to_step("end")
    out = m.out
    assert [c.rows for c in out.calls] == [8, 16, 32, 16, 1]
    assert out.statuses() == statuses
    assert [out.calls[0].dynamic, out.calls[1].dynamic or out.calls[0].dynamic] \
        == dynamic_calls
    # 1 row is specialised (a graph of its own); dynamic=True keeps the other sizes symbolic
    assert out.calls[-1].dynamic == (dynamic == "true")
    assert out.calls[-1].guard_failed.startswith("2 <= ") == (dynamic != "false")
    assert m.readouts()["recompiles"].value == statuses.count("recompile")


def test_the_kernel_count_is_predicted_first():
    m = model(guess_kernels=4)
    assert m.readouts()["compiled_kernels"].hidden
    m.set("revealed", True)
    assert not m.readouts()["compiled_kernels"].hidden
    assert "spot on" in m.answer_text()
    m.set("mode", "eager")  # another view of the same function keeps the answer
    assert m.revealed
    m.step()
    m.set("with_print", True)  # a new function hides it and starts the calls again
    assert not m.revealed and m.out.calls_done == 0


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.pop("torch_version"), "torch_version"),
    (lambda d: d["variants"][0]["graphs"][0]["kernels"][0].update(kind="cuda"),
     "variants[0].graphs[0].kernels[0].kind"),
    (lambda d: d["variants"][1]["eager"][0].update(line="two"), "variants[1].eager[0].line"),
    (lambda d: d["variants"][2]["calls"]["auto"][0].pop("dynamic"),
     "variants[2].calls.auto[0].dynamic"),
    (lambda d: d["variants"].pop(), "variants"),
])
def test_a_broken_groupings_file_names_its_field(tmp_path, change, field):
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "groupings.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError) as error:
        read_groupings(path)
    assert error.value.field == field
    assert str(path) in str(error.value) and "expected" in str(error.value)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="is not valid JSON"):
        read_groupings(path)


@pytest.mark.slow  # minutes: torch.compile of four variants; skipped without torch
def test_the_regeneration_script_gives_the_shipped_groupings(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "groupings.json"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True,
                   capture_output=True, timeout=1200)
    fresh = json.loads(out.read_text(encoding="utf-8"))
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert fresh["variants"] == shipped["variants"]


@pytest.mark.parametrize("with_print", [False, True])
@pytest.mark.parametrize("with_if", [False, True])
@pytest.mark.parametrize("dynamic", ["auto", "true", "false"])
def test_every_variant_holds_together(with_print, with_if, dynamic):
    m = model(with_print=with_print, with_if=with_if, dynamic=dynamic)
    m.go_to_step("end")
    out = m.out
    variant = out.variant
    assert len(variant.graphs) == len(variant.breaks) + 1
    assert len(variant.host_reads) == len(variant.breaks)  # each break: the host reads
    assert len(out.kernels) < len(variant.eager)
    for kernel in out.kernels:  # a kernel runs the ops of its own graph's lines
        assert set(kernel.lines) <= set(variant.graphs[kernel.graph])
    for line in variant.breaks:  # the graph before a break ends on its line
        assert any(max(lines) == line for lines in variant.graphs)
    statuses = out.statuses()
    assert statuses[0] == "compile" and out.calls[0].graphs_compiled == len(variant.graphs)
    assert all(not call.guard_failed for call, status in zip(out.calls, statuses, strict=True)
               if status != "recompile")


def test_eager_calls_compile_nothing():
    m = model(mode="eager", with_print=True, with_if=True, dynamic="false")
    m.go_to_step("end")
    assert m.out.statuses() == ["eager"] * 5
    readouts = m.readouts()
    assert readouts["recompiles"].value == 0 and readouts["graphs_compiled"].value == 0
