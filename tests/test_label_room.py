"""Texts of a fixed pixel size in diagrams that follow the window: at several window sizes,
in the dark and the projector looks, no label of figures 3.2, 3.3, 4.1 and 4.3 is cut off
by its plot's edge or drawn over another label, a matrix, a line or a curve. Rectangles
are compared in the pixels of each plot's viewport."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView

from gpuviz import catalog, theme
from tests import figure_driver as drive

SIZES = ((1280, 800), (1024, 700), (1600, 1000), (1100, 1300))
THEMES = ("dark", "projector")
SPECS = {spec.number: spec for spec in catalog.all_figures()}
# The longest texts: C's title at 4096 steps, the clipped bar's label, 20 blocks.
WIDEST = {"3.2": {"matrix_size": "16", "tile_size": "1", "full_tile": 512},
          "4.1": {"n_scores": 20, "block_size": 1}}
CASES = [(number, look, size, {}) for number in ("3.2", "3.3", "4.1", "4.3")
         for look in THEMES for size in SIZES]
CASES += [(number, look, (1024, 700), values) for number, values in WIDEST.items()
          for look in THEMES]
IDS = [f"{number}-{look}-{size[0]}x{size[1]}{'-widest' if values else ''}"
       for number, look, size, values in CASES]
SLACK = 0.5  # pixels: rounding of the text layout


@pytest.fixture
def build(qapp, qtbot):
    """build(number, look, size) -> page, in that look; the dark look is restored after."""

    def make(number: str, look: str, size: tuple[int, int]):  # noqa: ANN202
        theme.apply(look, qapp)
        page = drive.build_page(SPECS[number], size)
        qtbot.addWidget(page)
        for _ in range(3):  # refreshes scheduled by the first resize
            drive.settle()
        return page

    yield make
    theme.apply("dark", qapp)


def _view(item: QGraphicsItem) -> QGraphicsView:
    return item.scene().views()[0]


def text_rect(item: QGraphicsItem) -> QRectF:
    """Where a label's text is drawn (its anchor, margin and scale included)."""
    view = _view(item)
    rect = item.deviceTransform(view.viewportTransform()).mapRect(item.boundingRect())
    return rect.adjusted(SLACK, SLACK, -SLACK, -SLACK)


def item_rect(item: QGraphicsItem) -> QRectF:
    """A plot item's or a view box's rectangle in the viewport."""
    return _view(item).viewportTransform().mapRect(item.sceneBoundingRect())


def data_rect(box, x0: float, y0: float, x1: float, y1: float) -> QRectF:  # noqa: ANN001
    transform = _view(box).viewportTransform()
    corners = [transform.map(box.mapViewToScene(QPointF(x, y))) for x, y in ((x0, y0), (x1, y1))]
    return QRectF(corners[0], corners[1]).normalized()


def inside(rect: QRectF, area: QRectF) -> bool:
    return area.adjusted(-1, -1, 1, 1).contains(rect)


@pytest.mark.parametrize(("number", "look", "size", "values"), CASES, ids=IDS)
def test_labels_have_room(build, number, look, size, values):
    page = build(number, look, size)
    for name, value in values.items():
        page.model.set(name, value)
    for _ in range(3):
        drive.settle()
    {"3.2": _tiling, "3.3": _coalescing, "4.1": _online_softmax, "4.3": _merge}[number](
        page.view)


def _tiling(view) -> None:  # noqa: ANN001
    from gpuviz.views.kernels.tiling import BAR_TOP, SIDE

    box = view.box
    area = item_rect(box)
    matrices = {key: data_rect(box, x, y, x + SIDE, y + SIDE)
                for key, (x, y) in view.origins.items()}
    titles = {"a": view.title_a, "b": view.title_b, "c": view.title_c}
    for key, title in titles.items():
        rect = text_rect(title)
        assert inside(rect, area), f"title {key} cut off"
        for other, matrix in matrices.items():
            assert not rect.intersects(matrix), f"title {key} over matrix {other}"
    assert not text_rect(view.title_a).intersects(text_rect(view.title_c))
    legend = text_rect(view.legend)
    assert inside(legend, area), "legend cut off"
    assert not any(legend.intersects(matrix) for matrix in matrices.values())
    assert not any(legend.intersects(text_rect(title)) for title in titles.values())

    plot = view.bar_plot.getPlotItem()
    plot_box = plot.getViewBox()
    label = text_rect(view.bar_label)
    assert inside(label, item_rect(plot_box)), "bar label cut off"
    low = plot_box.viewRange()[1][0]
    bar = view.bar.rect()  # its bounding rectangle has room for a pen in data units
    bar = data_rect(plot_box, bar.left(), bar.top(), bar.right(), bar.bottom())
    assert not label.intersects(bar), "bar label over the bar"
    for line, limit_label in ((view.default_line, view.default_label),
                              (view.opt_in_line, view.opt_in_label)):
        x = line.pos().x()
        assert not label.intersects(data_rect(plot_box, x, low, x, BAR_TOP).adjusted(
            -1, 0, 1, 0)), "bar label across a limit line"
        assert inside(text_rect(limit_label), item_rect(plot_box)), "limit label cut off"
        assert not text_rect(limit_label).intersects(bar), "limit label under the bar"


def _coalescing(view) -> None:  # noqa: ANN001
    plot = view.sweep_plot.getPlotItem()
    title = plot.getAxis("left").label
    margin = title.document().documentMargin()  # around the text, rotated with it
    rect = item_rect(title).adjusted(margin, margin, -margin, -margin)
    assert title.toPlainText() and inside(rect, view.sweep_plot.rect().toRectF()), (
        f"y-axis title {title.toPlainText()!r} cut off")


def _online_softmax(view) -> None:  # noqa: ANN001
    from gpuviz.views.flash_attention.online_softmax import STATE_HEIGHT, _rows_bottom

    box = view.box
    width = view._width
    label = text_rect(view.state_label)
    assert inside(label, item_rect(box)), "state label cut off"
    rows = data_rect(box, -0.1, -0.06, width, _rows_bottom(view._lines))  # every line
    state = data_rect(box, 0, view._state_y, width, view._state_y + STATE_HEIGHT)
    assert not label.intersects(rows), "state label over the rows"
    assert not label.intersects(state), "state label over the state boxes"


def _merge(view) -> None:  # noqa: ANN001
    box = view.out_plot.getPlotItem().getViewBox()
    legend = text_rect(view.legend)
    curves = data_rect(box, -1, -view._bound, view.model.DIMS, view._bound)
    assert not legend.intersects(curves), "legend over the curves"
    assert inside(legend, item_rect(box)), "legend cut off"
