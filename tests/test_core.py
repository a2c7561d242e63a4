"""The framework: parameters, models, hardware data, lesson texts, catalog links."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz import catalog, theme
from gpuviz.core.model import (
    FigureModel,
    Parameter,
    Readout,
    decimal_places,
    format_g,
    format_value,
    plural,
    singular,
    superscript,
)
from gpuviz.data import DataError
from gpuviz.data.hardware import DEFAULT_GPU, load_gpus, load_problems, parse_gpu
from gpuviz.lessons import load_lesson_text
from gpuviz.paths import resource


class Toy(FigureModel):
    size = Parameter(64, label="Size", unit="B", minimum=32, maximum=1024, step=32)
    ratio = Parameter(0.5, label="Ratio", minimum=0.0, maximum=1.0)
    mode = Parameter("a", label="Mode", choices=[("a", "A"), ("b", "B")])
    on = Parameter(False, label="On")

    def compute(self):
        return self.size * self.ratio

    def readouts(self):
        return {"product": Readout("Product", self.out, "B")}


def test_set_clamps_snaps_and_emits_only_on_change(qapp):
    model = Toy()
    emitted = []
    model.changed.connect(lambda: emitted.append(1))
    assert model.set("size", 5000) and model.size == 1024
    assert not model.set("size", 1030)  # clamps to the same value: no signal
    model.size = 100
    assert model.size == 96
    assert len(emitted) == 2


def test_batch_emits_once_and_reset_restores(qapp):
    model = Toy()
    emitted = []
    model.changed.connect(lambda: emitted.append(1))
    with model.batch():
        model.size = 128
        model.ratio = 0.25
        model.mode = "b"
    assert emitted == [1]
    assert model.out == 32.0
    model.reset()
    assert model.values() == {"size": 64, "ratio": 0.5, "mode": "a", "on": False}
    assert model.out == 32.0


def test_strict_parse_for_the_command_line():
    size = Toy.parameter("size")
    assert size.parse("96") == 96
    for bad in ("abc", "2000", "33", "1.5", "nan"):
        with pytest.raises(ValueError):
            size.parse(bad)
    with pytest.raises(ValueError, match="allowed: a, b"):
        Toy.parameter("mode").parse("c")
    assert Toy.parameter("on").parse("yes") is True
    with pytest.raises(KeyError, match="known: size"):
        Toy.parameter("nope")


@given(st.floats(allow_nan=False, allow_infinity=True, width=64))
def test_coerce_stays_in_range(value):
    for param in (Toy.parameter("size"), Toy.parameter("ratio")):
        coerced = param.coerce(value)
        assert param.minimum <= coerced <= param.maximum


def test_format_value():
    assert format_value(73728, "regs") == "73,728 regs"
    assert format_value(12.345, "%") == "12.3%"
    assert format_value(0.00001234, "s") == "1.23×10⁻⁵ s"
    assert format_value(-2.5e9) == "−2,500,000,000"
    assert format_value(-0.1, "V") == "−0.100 V"
    assert format_value(3.4e38) == "3.40×10³⁸"
    assert format_value(1, "warps") == "1 warp"
    assert format_value(1.0, "GPUs") == "1 GPU"
    assert format_value(2, "warps") == "2 warps"
    assert format_value(1, "ms") == "1 ms"
    assert format_value(1, "GB/s") == "1 GB/s"
    assert format_value(1.00, "tokens", digits=3) == "1 token"
    # Places follow the rounded magnitude; ratios all read alike; fixed places on request.
    assert format_value(0.9996, "FLOP/B") == "1.00 FLOP/B"
    assert [format_value(v, "×") for v in (2.0, 0.997, 1.4286, 1365.3)] == [
        "2.00×", "1.00×", "1.43×", "1,365×"]
    assert format_value(4, "×") == "4×"
    assert [format_value(v, "×") for v in (1 / 64, 0.0078, 0.0)] == [
        "0.0156×", "0.00780×", "0.00×"]  # far below 1: significant digits, not 0.02×
    assert format_value(0.5, decimals=2) == "0.50"
    assert format_value(1.0, "µs", decimals=1) == "1.0 µs"
    assert decimal_places(0.05) == 2 and decimal_places(0.5) == 1 and decimal_places(2) == 0


def test_number_style_helpers():
    assert format_g(-2.98023223876953125e-8) == "−2.98023×10⁻⁸"
    assert format_g(1e-8) == "10⁻⁸"
    assert format_g(-1e-8) == "−10⁻⁸"
    assert format_g(70000) == "70000"
    assert superscript(-25) == "⁻²⁵"
    assert plural(1, "wave") == "1 wave"
    assert plural(2, "wave") == "2 waves"
    assert plural(3, "batch", "batches") == "3 batches"
    assert plural(1234, "token") == "1,234 tokens"
    assert singular("sequences") == "sequence"
    assert singular("batches") == "batch"
    assert singular("entries") == "entry"
    assert format_value(math.inf) == "∞"
    assert format_value("fails") == "fails"


def test_shipped_hardware_is_valid_and_sourced():
    gpus = load_gpus()
    assert {"a100_sxm", "h100_sxm", "h200_sxm", "b200"} <= set(gpus)
    assert load_problems() == ()
    for g in gpus.values():
        for number in g.numbers.values():
            assert number.source.strip()
    h100 = gpus[DEFAULT_GPU]
    assert h100.sms == 132
    assert round(h100.ridge()) == 295
    assert round(gpus["a100_sxm"].ridge()) == 153
    assert round(gpus["h200_sxm"].ridge()) == 206
    assert round(gpus["b200"].ridge()) == 281
    assert round(h100.ridge("fp8")) == 591


def test_broken_hardware_file_names_file_and_field(tmp_path):
    good = resource("hardware", "h100_sxm.toml").read_text()
    broken = tmp_path / "h100_sxm.toml"
    broken.write_text(good.replace("count = { value = 132,", "count = { value = -1,"))
    with pytest.raises(DataError) as error:
        parse_gpu(broken)
    assert "h100_sxm.toml" in str(error.value) and "sm.count" in str(error.value)
    broken.write_text("name = [unclosed")
    with pytest.raises(DataError, match="not valid TOML"):
        parse_gpu(broken)
    unsourced = re.sub(r"hbm = \{ value = 700, source = [^}]*\}", "hbm = { value = 700 }", good)
    broken.write_text(unsourced)
    with pytest.raises(DataError, match="latency_cycles.hbm.*needs a source"):
        parse_gpu(broken)


def test_a_broken_extra_gpu_is_left_out_with_a_message(tmp_path):
    (tmp_path / "h100_sxm.toml").write_text(resource("hardware", "h100_sxm.toml").read_text())
    (tmp_path / "x900.toml").write_text('name = "X900"\nshort_name = "X"\n')
    assert list(load_gpus(tmp_path)) == ["h100_sxm"]
    (problem,) = load_problems(tmp_path)
    assert "x900.toml" in str(problem)


def test_every_built_lesson_has_text_and_every_anchor_exists():
    for lesson in catalog.LESSONS:
        if not lesson.figures:
            continue
        text = load_lesson_text(lesson.text_file)
        assert "unavailable" not in text.markdown, lesson.text_file
        assert "{#" not in text.markdown
        for spec in lesson.figures:
            assert spec.lesson_anchor in text.headings, (spec.number, spec.lesson_anchor)


def test_missing_lesson_text_is_a_message_not_a_crash():
    text = load_lesson_text("no-such-lesson.md")
    assert "unavailable" in text.markdown and text.headings == {}


def test_a_parameter_may_not_hide_a_model_method():
    with pytest.raises((TypeError, RuntimeError), match="batch"):
        class Clash(FigureModel):  # noqa: F841
            batch = Parameter(1, label="Batch", minimum=1, maximum=8)


class Renamed(FigureModel):
    """A readout whose label changes with a parameter (like 2.4's "On H200")."""

    long_name = Parameter(False, label="Long name")

    def compute(self) -> None:
        return None

    def readouts(self) -> dict[str, Readout]:
        label = "A much longer readout name" if self.long_name else "Short"
        return {"speed": Readout(label, 1234.5, "GB/s"), "count": Readout("Count", 7)}


def test_readout_panel_keeps_full_texts_and_grows_only(qapp):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication

    from gpuviz.core.widgets import ReadoutPanel

    model = Renamed()
    panel = ReadoutPanel(model)
    assert panel.texts() == {"speed": "1,234 GB/s", "count": "7"}
    narrow = panel.name_width
    model.set("long_name", True)
    panel.sync()
    wide = panel.name_width
    assert wide > narrow
    model.set("long_name", False)
    panel.sync()
    assert panel.name_width == wide  # no jitter back and forth
    assert panel.row_text("speed") == "Short\t1,234 GB/s"
    assert panel.contextMenuPolicy() == Qt.CustomContextMenu
    QGuiApplication.clipboard().clear()


def test_readout_values_end_at_the_panels_right_edge(qapp):
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from gpuviz.core.widgets import ReadoutPanel

    host = QWidget()
    panel = ReadoutPanel(Renamed())
    QVBoxLayout(host).addWidget(panel)
    for width in (460, 380, 520):  # e.g. the column's scroll bar comes and goes
        host.resize(width, 300)
        host.show()
        qapp.processEvents()
        value = panel.rows["speed"][1]
        assert 0 < panel.width() - value.geometry().right() <= 20
    host.close()


def test_message_label_repaints_alone_and_grows_for_a_long_message(qapp):
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from gpuviz.core.widgets import MessageLabel

    class CountLayouts(QObject):
        count = 0

        def eventFilter(self, watched, event):  # noqa: N802
            if event.type() == QEvent.LayoutRequest:
                self.count += 1
            return False

    page = QWidget()
    label = MessageLabel()
    QVBoxLayout(page).addWidget(label)
    page.resize(400, 300)
    page.show()
    qapp.processEvents()
    two_lines = label.height()
    counter = CountLayouts()
    page.installEventFilter(counter)
    for text in ("Memory-bound.", "Compute-bound.", "Memory-bound."):
        label.show_message(text, warn=text.startswith("C"))
        qapp.processEvents()
    assert counter.count == 0 and label.height() == two_lines
    label.show_message("A much longer comment that wraps. " * 12)
    qapp.processEvents()
    assert label.height() > two_lines
    grown = label.height()
    label.show_message("Short again.")
    assert label.height() == grown  # never shrinks while the width stays
    page.close()


def test_a_text_table_repaints_the_rows_that_changed_and_draws_what_a_full_paint_draws(qapp):
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtGui import QColor

    from gpuviz.core.widgets import TextTable

    class Painted(QObject):
        rects: list = []

        def eventFilter(self, watched, event):  # noqa: N802
            if event.type() == QEvent.Paint:
                self.rects.append(event.rect())
            return False

    ink = QColor("#888888")
    rows = [(["weights", "14.0 GB"], ink), (["gradients", "14.0 GB"], ink),
            (["optimizer", "56.0 GB"], ink)]
    table = TextTable(["part", "memory"], rows=3, left=(0,))
    table.resize(400, 100)
    table.set_rows(rows)
    table.show()
    qapp.processEvents()
    painted = Painted()
    table.installEventFilter(painted)
    rows[1] = (["gradients", "7.0 GB"], ink)
    table.set_rows(rows)
    qapp.processEvents()
    [rect] = painted.rects
    assert rect.height() == table._line and rect.top() == 2 * table._line
    def on_screen():  # what the window shows (grab() would paint the table again)
        return table.screen().grabWindow(table.winId()).toImage()

    partly = on_screen()
    table.update()  # the same rows painted whole
    qapp.processEvents()
    assert on_screen() == partly and not partly.isNull()
    rows[2] = (["optimizer and its master copy of the weights", "56.0 GB"], ink)
    painted.rects.clear()
    table.set_rows(rows)  # a wider column: the whole table
    qapp.processEvents()
    assert painted.rects[-1].height() == table.height()
    table.close()


def test_fit_inside_flips_a_label_at_an_edge_and_pushes_back_a_wide_one():
    from PySide6.QtCore import QRectF

    from gpuviz.core.text import TEXT_MARGIN, fit_inside

    area = QRectF(0, 0, 200, 100)
    # Room where the anchor puts it: unchanged (the box is the text and its margins).
    assert fit_inside(50, 50, 40, 10, (0, 0), area) == (50 + TEXT_MARGIN, 50 + TEXT_MARGIN)
    assert fit_inside(50, 50, 40, 10, (1, 1), area) == (50 - 40 - TEXT_MARGIN,
                                                        50 - 10 - TEXT_MARGIN)
    # Right of a line near the right edge: flipped to the left of it, same height.
    left, top = fit_inside(190, 50, 40, 10, (-0.05, 0), area)
    assert left + 40 < 190 and top == 50 + TEXT_MARGIN
    # Above a line near the top: flipped below it.
    left, top = fit_inside(50, 5, 40, 10, (0, 1.05), area)
    assert top > 5 and left == 50 + TEXT_MARGIN
    # Centred on its point, or no room on either side: pushed back against the edge.
    assert fit_inside(195, 50, 40, 10, (0.5, 0), area)[0] == 200 - 40
    assert fit_inside(120, 50, 150, 10, (0, 0), area)[0] == 200 - 150
    # Wider than the area: against the left edge.
    assert fit_inside(100, 50, 300, 10, (0, 0), area)[0] == 0
    # flip=False (a title): slid back by what it overruns, not moved to the other side.
    assert fit_inside(170, 50, 40, 10, (0, 0), area, flip=False) == (160, 50 + TEXT_MARGIN)


def test_text_layer_keeps_a_label_inside_its_view(qapp):
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QColor

    from gpuviz import theme
    from gpuviz.core.plots import diagram_widget
    from gpuviz.core.text import TextLayer

    theme.apply("dark", qapp)
    target = theme.color("highlight")
    columns = {}
    for keep in (False, True):
        widget, box = diagram_widget()
        box.setAspectLocked(False)
        box.setRange(xRange=(0, 10), yRange=(0, 10), padding=0)
        layer = TextLayer(QRectF(0, 0, 10, 10), keep_inside=keep)
        layer.add("WWWWWWWW", role="highlight", anchor=(-0.05, 0.5)).setPos(9, 5)
        box.addItem(layer)
        widget.resize(400, 200)
        widget.show()
        for _ in range(3):
            qapp.processEvents()
        image = widget.grab().toImage()
        point = box.mapViewToScene(QPointF(9, 5)).x() * image.devicePixelRatio()
        inked = [x for x in range(image.width()) for y in range(0, image.height(), 2)
                 if _close(QColor(image.pixel(x, y)), target)]
        assert inked, "the label was not drawn"
        columns[keep] = (min(inked), max(inked), point)
        widget.close()
    low, high, point = columns[False]
    assert low > point  # right of its line, and cut by the view's edge
    low, high, point = columns[True]
    assert high < point  # flipped to the left of its line: all of it shows


def test_a_label_that_gives_way_is_left_out_where_it_would_touch_another(qapp):
    """Close numbers in a row ran together on a small screen (5.1's neighbours, 8.1's
    equal bars): one that gives way is drawn only with room beside the ones before it,
    and its lines are centred as its anchor is."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QTransform

    from gpuviz.core.text import GIVE_WAY_GAP, TextLayer, wrap_lines

    layer = TextLayer(QRectF(0, 0, 100, 10))
    first, second, third = (layer.add("23.6", anchor=(0.5, 1), give_way=True)
                            for _ in range(3))
    for label, x in zip((first, second, third), (10, 10 + first.width, 10 + 3 * first.width),
                        strict=True):
        label.setPos(x, 5)
    layer._layout(QTransform(), None)
    assert [id(label) in layer._drawn for label in (first, second, third)] == [
        True, False, True]
    second.setPos(10 + first.width + GIVE_WAY_GAP + 1, 5)
    layer._layout(QTransform(), None)
    assert id(second) in layer._drawn
    assert wrap_lines("67.1 MB", first.width, first.metrics.horizontalAdvance) == "67.1\nMB"


def test_placed_labels_are_costed_together_as_one_by_one(qapp):
    """All labels' candidates are costed in one go (the full placement after a new GPU
    took 5 ms label by label); each label's costs are those it gets alone."""
    import numpy as np
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QTransform

    from gpuviz.core.text import PlacedTextLayer

    layer = PlacedTextLayer(QRectF(0, 0, 10, 10))
    labels = [layer.add(text) for text in ("memory", "a longer label", "x")]
    layer.set_candidates(labels[0], [(2.0, 3.0, 0.0, 1.0), (9.5, 9.0, 0.0, 0.0)])
    layer.set_candidates(labels[1], [(5.0, 5.0, 1.0, 0.5)])  # labels[2]: its own place
    layer.set_obstacles(np.array([[0, 0, 10, 10], [0, 5, 10, 5]]), np.array([[5, 5]]), 12,
                        faint=np.array([[3, 0, 3, 10]]))
    transform = QTransform(40, 0, 0, -30, 10, 320)
    area = QRectF(10, 20, 400, 300)
    together = layer._candidates_costed(labels, transform, area)
    for label, (rects, cost) in zip(labels, together, strict=True):
        [(alone_rects, alone_cost)] = layer._candidates_costed([label], transform, area)
        assert np.array_equal(rects, alone_rects) and np.array_equal(cost, alone_cost)
    assert [len(rects) for rects, _ in together] == [2, 1, 1]
    assert together[0][1][1] > together[0][1][0] + 0.2 - 1e-9  # rank, then sliding inside


def _segment_meets_rect(segment: tuple, rect: tuple) -> bool:
    """Brute reference: an end inside the rectangle, or the segment crossing one of its
    four edges (orientation tests, touching counts)."""
    x0, y0, x1, y1 = segment
    left, top, right, bottom = rect
    if any(left <= x <= right and top <= y <= bottom for x, y in ((x0, y0), (x1, y1))):
        return True

    def side(ax, ay, bx, by, cx, cy):  # noqa: ANN001, ANN202
        value = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
        return (value > 0) - (value < 0)

    def on(ax, ay, bx, by, cx, cy):  # noqa: ANN001, ANN202 - c on segment a-b, collinear
        return min(ax, bx) <= cx <= max(ax, bx) and min(ay, by) <= cy <= max(ay, by)

    corners = [(left, top), (right, top), (right, bottom), (left, bottom)]
    for (ax, ay), (bx, by) in zip(corners, corners[1:] + corners[:1], strict=True):
        d1, d2 = side(ax, ay, bx, by, x0, y0), side(ax, ay, bx, by, x1, y1)
        d3, d4 = side(x0, y0, x1, y1, ax, ay), side(x0, y0, x1, y1, bx, by)
        if d1 * d2 < 0 and d3 * d4 < 0:
            return True
        if ((d1 == 0 and on(ax, ay, bx, by, x0, y0)) or (d2 == 0 and on(ax, ay, bx, by, x1, y1))
                or (d3 == 0 and on(x0, y0, x1, y1, ax, ay))
                or (d4 == 0 and on(x0, y0, x1, y1, bx, by))):
            return True
    return False


_COORD = st.integers(-4, 14)


@given(st.lists(st.tuples(_COORD, _COORD, _COORD, _COORD), max_size=6),
       st.lists(st.tuples(st.integers(0, 10), st.integers(0, 10), st.integers(0, 4),
                          st.integers(0, 4)), max_size=6))
def test_label_placement_finds_the_lines_crossing_a_label(segments, boxes):
    """_segments_cross (every segment against every rectangle at once) agrees with a
    brute test pair by pair: vertical, horizontal and point segments, touching edges and
    rectangles of no width included."""
    import numpy as np

    from gpuviz.core.text import _segments_cross

    rects = [(x, y, x + w, y + h) for x, y, w, h in boxes]
    found = _segments_cross(np.array(segments, dtype=float).reshape(-1, 4),
                            np.array(rects, dtype=float).reshape(-1, 4))
    assert found.tolist() == [[_segment_meets_rect(s, r) for r in rects] for s in segments]


def _close(color, target) -> bool:  # noqa: ANN001
    return (abs(color.red() - target.red()) + abs(color.green() - target.green())
            + abs(color.blue() - target.blue())) < 60


def test_crowded_tick_labels_are_thinned_to_every_kth():
    from PySide6.QtCore import QRectF, Qt

    from gpuviz.core.axis import thin_tick_labels

    def specs(lefts: list[float], width: float) -> tuple:
        return ("axis", ["ticks"], [(QRectF(x, 0, width, 10), Qt.AlignCenter, str(i))
                                    for i, x in enumerate(lefts)])

    roomy = specs([0, 40, 80, 120], 30)
    assert thin_tick_labels(roomy) == roomy
    crowded = thin_tick_labels(specs([0, 32, 64, 96, 128], 30))
    assert [text for _, _, text in crowded[2]] == ["0", "2", "4"]
    assert crowded[:2] == ("axis", ["ticks"])
    assert thin_tick_labels(None) is None
    # Lane names 9 px apart, 8 px high (a line of 10): overlapping lines ran together.
    lanes = ("axis", [], [(QRectF(0, y, 40, 8), Qt.AlignRight, f"slot {i + 1}")
                          for i, y in enumerate(range(0, 144, 9))])
    assert [text for *_, text in thin_tick_labels(lanes, vertical=True)[2]] == [
        f"slot {i}" for i in range(1, 17, 2)]
    roomy_lanes = ("axis", [], [(QRectF(0, y, 40, 8), Qt.AlignRight, str(y))
                                for y in range(0, 60, 12)])
    assert thin_tick_labels(roomy_lanes, vertical=True) == roomy_lanes


def test_kept_digits_and_durations_past_a_minute_or_under_a_nanosecond():
    from gpuviz.core.model import Readout, duration_text, kept_digits

    assert [kept_digits(Readout("", v, "ms")).text for v in (12.0, 33.04, 0.9996)] == [
        "12.0 ms", "33.0 ms", "1.00 ms"]
    assert kept_digits(Readout("", 128.0, "×")).text == "128×"
    assert [duration_text(s) for s in (0.309, 2214.0, 1_465_287.0, 2.99e-13)] == [
        "309 ms", "36.9 min", "17.0 days", "299 fs"]


def test_no_time_at_all_reads_in_seconds():
    from gpuviz.core.model import duration_text, time_text

    assert [time_text(s) for s in (0.0, 4.2e-6, 3e-10)] == ["0 s", "4.20 µs", "0.300 ns"]
    assert duration_text(0.0) == "0 s"


def test_placed_labels_keep_off_dots_at_their_drawn_size(qapp, monkeypatch):
    """A dot's size is given as its `Dots` were made (before the look's scale) and grows
    with the look as the dot does: a place just clear of a 12 px dot is on it when the
    lecture look draws the dot twice as large."""
    import numpy as np
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QTransform

    from gpuviz.core.text import TEXT_MARGIN, PlacedTextLayer

    layer = PlacedTextLayer(QRectF(0, 0, 200, 200))
    label = layer.add("label")
    clear = 100 + 6 + layer.DOT_PAD + 1 - TEXT_MARGIN  # its text 1 px right of the dot
    layer.set_candidates(label, [(clear, 100.0, 0.0, 0.5)])
    layer.set_obstacles(np.zeros((0, 4)), np.array([[100.0, 100.0]]), 12)
    area = QRectF(0, 0, 200, 200)

    def cost() -> float:
        [(_, costs)] = layer._candidates_costed([label], QTransform(), area)
        return float(costs[0])

    alone = cost()
    monkeypatch.setattr(theme, "_screen_scale", 2.0)
    assert cost() >= alone + layer.COSTS["dot"] - 1e-9
