"""Export: PNG with metadata at a scale, SVG with title/description, clipboard, CSV, and a
timeline figure's Chrome trace."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtGui import QGuiApplication, QImage

from gpuviz import catalog, export, state
from gpuviz.core.trace import read_trace
from gpuviz.main_window import MainWindow

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def window(themed, qtbot):
    state.reset_all()
    window = MainWindow("dark", remember=False)
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    window.show_figure("1.3")
    window.models["1.3"].set("threads_per_block", 1024)
    window.models["1.3"].set("registers_per_thread", 65)
    qtbot.wait(10)
    yield window
    window.clock.stop()
    state.reset_all()


def test_png_at_a_scale_carries_the_metadata(window, tmp_path):
    path = tmp_path / "fig.png"
    assert window.export_figure(path, scale=2)
    page = window.pages["1.3"]
    image = QImage(str(path))
    assert (image.width(), image.height()) == (2 * page.width(), 2 * page.height())
    assert image.text("Figure") == "1.3"
    parameters = json.loads(image.text("Parameters"))
    assert parameters["threads_per_block"] == 1024 and parameters["registers_per_thread"] == 65
    assert "Try this" in image.text("Caption") and "<i>" not in image.text("Caption")
    colours = {image.pixel(x, y) for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 37)}
    assert len(colours) > 5  # something was drawn, not a blank canvas
    assert state.settings().value(state.EXPORT_FOLDER_KEY) == str(tmp_path)


def test_svg_parses_and_has_title_and_description(window, tmp_path):
    path = tmp_path / "fig.svg"
    assert window.export_figure(path)
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    title = root.find(f"{SVG}title").text
    desc = root.find(f"{SVG}desc").text
    assert title.startswith("Figure 1.3")
    assert '"threads_per_block": 1024' in desc and "Try this" in desc
    assert len(list(root.iter())) > 20  # the drawing itself


def test_csv_holds_parameters_and_readouts(window, tmp_path):
    path = tmp_path / "fig.csv"
    assert window.export_data(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    by_key = {(row["kind"], row["key"]): row for row in rows}
    model = window.models["1.3"]
    for key, readout in model.readouts().items():
        assert by_key[("readout", key)]["unit"] == readout.unit
    assert by_key[("readout", "registers_per_block")]["value"] == "73728"
    assert by_key[("readout", "launch")]["value"] == "False"
    assert by_key[("readout", "launch")]["text"] == "fails"
    assert by_key[("parameter", "threads_per_block")]["value"] == "1024"


def test_copy_puts_an_image_on_the_clipboard(window):
    assert window.copy_figure()
    image = QGuiApplication.clipboard().image()
    assert not image.isNull() and image.width() >= window.pages["1.3"].width()


def test_copy_readouts_puts_their_text_on_the_clipboard(window):
    assert window.copy_readouts()
    text = QGuiApplication.clipboard().text()
    assert "Launch\tfails" in text.splitlines()
    assert len(text.splitlines()) == len(window.models["1.3"].readouts())


def test_unwritable_or_unknown_targets_say_so(window, tmp_path):
    assert not window.export_figure(tmp_path / "missing" / "x.png")
    assert "cannot write" in window.messages[-1]
    assert not window.export_figure(tmp_path / "x.gif")
    assert ".png or .svg" in window.messages[-1]
    assert not window.export_data(tmp_path / "missing" / "x.csv")
    with pytest.raises(export.ExportError):
        export.render_image(window.pages["1.3"], scale=50)


@pytest.mark.parametrize("number", [spec.number for spec in catalog.all_figures()])
def test_every_readout_exports_as_csv(number):
    spec = catalog.figure(number)
    model = spec.make_model()
    rows = list(csv.reader(io.StringIO(export.readouts_csv(spec, model))))
    assert rows[0] == ["figure", "kind", "key", "label", "value", "unit", "total", "text"]
    assert len(rows) == 1 + len(model.parameters()) + len(model.readouts())


def test_export_trace_is_offered_for_timelines_only(window, tmp_path):
    action = window.actions["export_trace"]
    assert action in window.menus["file"].actions()
    assert not action.isEnabled() and not window.export_trace(tmp_path / "no.json")  # 1.3
    window.show_figure("8.2")
    assert action.isEnabled()
    path = tmp_path / "bucketing.json"
    assert window.export_trace(path)
    back = read_trace(path).schedule
    result = window.models["8.2"].trace().schedule
    assert [t.name for t in back.tasks] == [t.name for t in result.tasks]
    assert back.step_time == pytest.approx(result.step_time * 1e6)
    assert not window.export_trace(tmp_path / "missing" / "x.json")
    assert "cannot write" in window.messages[-1]
