"""Lecture-hall scale (issue 11): in the projector look everything drawn grows with the
window from the 1280x800 design size, so that at 1920x1080 no drawn text is under 20 px,
tick labels, readouts and controls are at least 24 px, the control column needs no
scrolling, and each plot's drawn content spans a good part of it. On the small projectors
of issue 29 (1280x800, and 1024x768 where the look shrinks to 0.8) the control column fits
too, no text is under 16 px, no label is hidden under a legend and every axis title fits
its axis. The dark look keeps its
sizes at any window size, and a window that shrinks again comes back to the sizes it
would have been built with."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QGraphicsView

from gpuviz import catalog, theme
from gpuviz.core.model import END, PredictFirstModel
from gpuviz.core.plots import Legend
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import TextTable
from tests import figure_driver as drive

FIGURES = catalog.all_figures()
IDS = [spec.number for spec in FIGURES]
LECTURE = (1920, 1080)
MIN_TEXT_PX = 20.0
MIN_TICK_PX = 24.0
MIN_WIDGET_PX = 24.0
# Classroom projectors: at either size every control and readout is in view and no text,
# drawn or in a widget (tables too), is under 16 px (theme.MIN_GROWING_PIXELS).
PROJECTORS = ((1280, 800), (1024, 768))
MIN_SMALL_PX = theme.MIN_GROWING_PIXELS
# A diagram keeps its aspect, so it fills its plot in one direction only: its drawing
# must span most of the plot's width or height, and a fair part of its area.
MIN_SPAN = 0.8
MIN_AREA = 0.3


@pytest.fixture
def build(qapp, qtbot):
    """build(spec, look, size) -> the page, settled; the dark look at 1280x800 after."""

    def make(spec, look: str, size: tuple[int, int]):  # noqa: ANN001, ANN202
        theme.apply(look, qapp)
        page = drive.build_page(spec, size)
        qtbot.addWidget(page)
        for _ in range(3):
            drive.settle()
        return page

    yield make
    theme.apply("dark", qapp)
    theme.fit_to(1280, 800)


def pixels(qfont) -> float:  # noqa: ANN001
    return qfont.pixelSize() if qfont.pixelSize() > 0 else qfont.pointSizeF() * 96 / 72


def content_span(view: QGraphicsView) -> tuple[float, float]:
    """The share of the plot's width and height that the bounding box of everything
    painted (all but the background colour) covers."""
    image = view.grab().toImage().convertToFormat(QImage.Format_RGB32)
    width, height = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), dtype=np.uint32).reshape(
        height, image.bytesPerLine() // 4)[:, :width]
    values, counts = np.unique(rows, return_counts=True)
    ys, xs = np.nonzero(rows != values[counts.argmax()])
    if not len(xs):
        return 0.0, 0.0
    return (xs.max() - xs.min() + 1) / width, (ys.max() - ys.min() + 1) / height


@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_lecture_hall_sizes_at_1920x1080(spec, build):
    page = build(spec, "projector", LECTURE)
    texts = page.view.text_items()
    assert texts, "the framework found no text in the plots"
    smallest = min(texts, key=lambda item: item[1])
    assert smallest[1] >= MIN_TEXT_PX - 0.05, smallest
    ticks = [size for text, size in texts if text.endswith(" ticks>")]
    assert all(size >= MIN_TICK_PX for size in ticks), ticks
    for widget in (page.view.readouts, page.view.controls, page.view.message):
        assert pixels(widget.font()) >= MIN_WIDGET_PX, type(widget).__name__
    assert_column_fits(page)
    assert_labels_clear_legends(page)
    assert_axis_titles_fit(page)
    for view in page.findChildren(QGraphicsView):
        if view.isVisible():
            span = content_span(view)
            assert max(span) >= MIN_SPAN and span[0] * span[1] >= MIN_AREA, span


def assert_column_fits(page) -> None:  # noqa: ANN001
    """In a lecture hall every control and readout is in view: no scrolling, nothing cut."""
    column = page.view._column
    needed = column.widget().minimumSizeHint()
    assert needed.height() <= column.viewport().height(), "the control column scrolls"
    assert needed.width() <= column.viewport().width(), "the control column is cut"


def assert_labels_clear_legends(page) -> None:  # noqa: ANN001
    """No label of a plot's text layers is drawn under its legend (a short plot on a small
    projector once hid 9.4's keep-free label and two of 10.5's counts there)."""
    page.grab()  # the labels are placed as they are painted
    for view in page.findChildren(QGraphicsView):
        if view.scene() is None or not view.isVisible():
            continue
        items = [item for item in view.scene().items() if item.isVisible()]
        legends = [view.viewportTransform().mapRect(item.sceneBoundingRect())
                   for item in items if isinstance(item, Legend) and item.labels()]
        for layer in (item for item in items if isinstance(item, TextLayer)):
            for text, rect in layer.drawn():
                inner = rect.adjusted(1, 1, -1, -1)  # a pixel of rounding
                assert not any(inner.intersects(legend) for legend in legends), text


def assert_axis_titles_fit(page) -> None:  # noqa: ANN001
    """Every axis title fits along its axis (a long one ran past the top of a short plot
    on a small projector: 11.4's "(log scale)" was cut)."""
    for view in page.findChildren(QGraphicsView):
        if view.scene() is None or not view.isVisible():
            continue
        for axis in view.scene().items():
            if not (isinstance(axis, pg.AxisItem) and axis.isVisible()
                    and axis.label.isVisible() and axis.labelText):
                continue
            span = view.viewportTransform().mapRect(axis.sceneBoundingRect()).intersected(
                QRectF(view.viewport().rect()))
            room = span.height() if axis.orientation in ("left", "right") else span.width()
            assert axis.label.boundingRect().width() <= room + 1, axis.labelText


def table_text_px(table: TextTable) -> float:
    """The pixel size a table's text is painted at (smaller when it is too narrow)."""
    return pixels(table.font()) * min(1.0, table.width() / table.painted_width())


@pytest.mark.parametrize("size", PROJECTORS, ids=("1280x800", "1024x768"))
@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_small_projectors_show_everything_at_16_px(spec, size, build):
    page = build(spec, "projector", size)
    assert theme.screen_scale() == pytest.approx(min(1.0, size[0] / 1280))
    smallest = min(page.view.text_items(), key=lambda item: item[1])
    assert smallest[1] >= MIN_SMALL_PX - 0.05, smallest
    for widget in (page.view.readouts, page.view.controls, page.view.message):
        assert pixels(widget.font()) >= MIN_SMALL_PX - 0.05, type(widget).__name__
    for table in page.findChildren(TextTable):
        assert table_text_px(table) >= MIN_SMALL_PX - 0.05, table.header
    assert_column_fits(page)
    assert_labels_clear_legends(page)
    assert_axis_titles_fit(page)
    model = page.view.model  # the answer shown and the animation at its end still fit
    if isinstance(model, PredictFirstModel) or spec.animated:
        with model.batch():
            if isinstance(model, PredictFirstModel):
                model.set("revealed", True)
            if spec.animated:
                model.go_to_step(END)
        drive.settle()
        assert_column_fits(page)


def test_the_caption_folds_only_where_the_column_needs_the_room(build):
    page = build(catalog.figure("7.3"), "projector", (1280, 800))
    assert page.caption.isHidden() and page.caption_line.isVisible()
    page.caption_button.click()  # the whole caption, on demand (the column may scroll)
    assert page.caption.isVisible() and page.caption_line.isHidden()
    page.caption_button.click()
    assert page.caption.isHidden()
    page.resize(1920, 1080)  # room enough: the caption is whole again, with no button
    drive.settle()
    assert page.caption.isVisible() and page.caption_button.isHidden()
    assert build(catalog.figure("7.3"), "dark", (1280, 800)).caption.isVisible()


@pytest.mark.parametrize("number", ("1.3", "3.2", "4.5"))
def test_the_dark_look_keeps_its_sizes(number, build):
    spec = catalog.figure(number)
    small = sorted(build(spec, "dark", (1280, 800)).view.text_items())
    large = sorted(build(spec, "dark", LECTURE).view.text_items())
    assert [size for _, size in small] == [size for _, size in large]


@pytest.mark.parametrize("number", ("2.2", "3.3", "4.2"))
def test_a_window_that_shrinks_again_draws_as_if_built_there(number, build):
    spec = catalog.figure(number)
    page = build(spec, "projector", LECTURE)
    page.resize(1280, 800)
    for _ in range(3):
        drive.settle()
    direct = build(spec, "projector", (1280, 800))
    assert sorted(page.view.text_items()) == sorted(direct.view.text_items())


def test_the_scale_follows_the_window_in_steps(qapp):
    try:
        theme.apply("projector", qapp)
        theme.fit_to(1280, 800)
        assert theme.screen_scale() == 1.0
        theme.fit_to(1920, 1080)  # the height limits it: 1080 / 800
        assert theme.screen_scale() == pytest.approx(1.35)
        theme.fit_to(1925, 1083)  # a few pixels do not rescale everything
        assert theme.screen_scale() == pytest.approx(1.35)
        theme.fit_to(2560, 1440)
        assert theme.screen_scale() == pytest.approx(1.8)
        theme.fit_to(1024, 768)  # a smaller projector: the design's picture, smaller
        assert theme.screen_scale() == pytest.approx(0.8)
        theme.fit_to(800, 600)  # never smaller than that (16 px widget text)
        assert theme.screen_scale() == pytest.approx(0.8)
        theme.fit_to(1920, 1080)
        theme.apply("dark", qapp)  # the normal look does not grow
        assert theme.screen_scale() == 1.0 and theme.font_factor() == 1.0
    finally:
        theme.apply("dark", qapp)
        theme.fit_to(1280, 800)


def test_a_dragged_edge_rescales_once_the_size_rests(build, qtbot):
    page = build(catalog.figure("1.3"), "projector", (1280, 800))
    page.resize(1380, 870)  # a small step (1.05): not at once, after the drag
    drive.settle()
    assert theme.screen_scale() == 1.0
    qtbot.waitUntil(lambda: theme.screen_scale() == pytest.approx(1.05), timeout=2000)
    page.resize(1920, 1080)  # a large step: at once
    drive.settle()
    assert theme.screen_scale() == pytest.approx(1.35)


@pytest.mark.parametrize("size", PROJECTORS, ids=("1280x800", "1024x768"))
@pytest.mark.parametrize("number", ("7.3", "7.4"))
def test_measurements_loaded_still_fit_small_projectors(number, size, build):
    """File > Open measurements adds dots, two buttons and the fit: still no scrolling."""
    from gpuviz.imports.nccl_tests import read_nccl_tests
    from gpuviz.paths import resource

    page = build(catalog.figure(number), "projector", size)
    sample = sorted(resource("samples").glob("nccl_tests_*.txt"))[0]
    page.view.model.load_measurements(read_nccl_tests(sample))
    drive.settle()
    assert page.view.measured_buttons.isVisible()
    assert_column_fits(page)


def test_a_long_title_is_cut_with_an_ellipsis_not_run_under_the_buttons(build, qapp):
    """13.4's title on a 1024x768 projector ran under Reset; it is cut with "…" (the
    tooltip keeps it whole) and grows back when there is room."""
    page = build(catalog.figure("13.4"), "projector", (820, 700))
    title = page.title
    assert title.text().endswith("…") and "Figure 13.4" in title.text()
    assert title.geometry().right() < page.reset_button.geometry().left()
    assert "when it compiles again" in title.toolTip()
    page.resize(1900, 1000)
    drive.settle()
    assert "when it compiles again" in title.text()


def test_3_4_names_the_thread_numbers_only_where_they_show(build):
    """In the lecture look a row of 3.4's tile is too short for the thread numbers, which
    are left out: its key then does not promise them."""
    spec = next(spec for spec in FIGURES if spec.number == "3.4")
    page = build(spec, "dark", (1280, 800))
    assert page.view.key.labels()[0] == "word read (thread number)"
    assert page.view.read.text_sizes()  # the numbers are there
    page = build(spec, "projector", (1280, 800))
    assert page.view.key.labels()[0] == "word read by the warp"
