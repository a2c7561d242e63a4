"""Figures 2.1 and 2.2 as drawn: their labels keep off each other and stay inside the
plot in the dark and projector looks, a label follows its dot after a drag, and 2.2's two
stacked plots share their x axis to the pixel."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from gpuviz import catalog, theme
from tests import figure_driver as drive

SPECS = {spec.number: spec for spec in catalog.all_figures()}
LOOKS = [("dark", (1280, 800)), ("projector", (1920, 1080)), ("projector", (1280, 800))]
IDS = [f"{look}-{w}x{h}" for look, (w, h) in LOOKS]


@pytest.fixture
def build(qapp, qtbot):
    def make(number: str, look: str, size: tuple[int, int], **values):  # noqa: ANN202
        theme.apply(look, qapp)
        page = drive.build_page(SPECS[number], size)
        qtbot.addWidget(page)
        with page.model.batch():
            for name, value in values.items():
                page.model.set(name, value)
        for _ in range(3):
            drive.settle()
        page.grab()  # paints, and so places the labels
        return page

    yield make
    theme.apply("dark", qapp)


def placed_rects(layer) -> list[QRectF]:  # noqa: ANN001
    return [QRectF(spot[0], spot[1], label.width, label.height)
            for label, spot in zip(layer.labels, layer._placed, strict=True)
            if spot is not None]


def assert_apart(layer) -> None:  # noqa: ANN001
    rects = placed_rects(layer)
    assert rects, "nothing placed"
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            overlap = a.intersected(b)
            assert overlap.width() < 1 or overlap.height() < 1, (a, b)


@pytest.mark.parametrize(("look", "size"), LOOKS, ids=IDS)
@pytest.mark.parametrize("values", [{}, {"precision": "fp8", "intensity_scale": 30.0},
                                    {"gpu": "b200"}, {"gpu": "a100_sxm"}],
                         ids=["default", "fp8-dragged", "b200", "a100"])
def test_roofline_labels_apart(build, look, size, values):
    page = build("2.1", look, size, **values)
    assert_apart(page.view.labels)


def test_label_follows_a_dragged_dot(build):
    page = build("2.1", "dark", (1280, 800))
    view = page.view
    index = page.model.out.selected
    before = view.labels._placed[view.labels.labels.index(view.op_labels[index])]
    page.model.set("intensity_scale", 100.0)
    drive.settle()
    page.grab()
    after = view.labels._placed[view.labels.labels.index(view.op_labels[index])]
    assert after != before
    # The label stays next to its dot: within two label heights of it.
    label = view.op_labels[index]
    x, y = float(page.model.out.intensity[index]), float(page.model.out.attained[index])
    import math

    box = view.plot.getPlotItem().getViewBox()
    point = view.labels.deviceTransform(
        box.scene().views()[0].viewportTransform()).map(
        view.labels.mapFromScene(box.mapViewToScene(
            box.mapFromView(box.mapToView(box.mapFromViewToItem(box.childGroup,
                                                                 _point(math.log10(x),
                                                                        math.log10(y))))))))
    rect = QRectF(after[0], after[1], label.width, label.height)
    reach = 2 * label.height + 12
    assert rect.adjusted(-reach, -reach, reach, reach).contains(point)


def _viewport_point(page, index: int):  # noqa: ANN001, ANN202
    """Where op `index`'s dot is on 2.1's plot viewport, in its pixels."""
    import math

    from PySide6.QtCore import QPoint

    out, plot = page.model.out, page.view.plot
    box = plot.getPlotItem().getViewBox()
    scene = box.mapViewToScene(_point(math.log10(float(out.intensity[index])),
                                      math.log10(float(out.attained[index]))))
    where = plot.mapFromScene(scene)
    return QPoint(round(where.x()), round(where.y()))


@pytest.mark.parametrize(("look", "size"), LOOKS[:2], ids=IDS[:2])
def test_clicking_and_dragging_a_dot(build, look, size):
    """A click on a dot selects its operation; dragging it sideways sets the intensity
    scale of that operation (the dots are `Dots`, which pyqtgraph's scene hands the
    mouse events)."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    from gpuviz.models.roofline import named_ops

    page = build("2.1", look, size)
    viewport = page.view.plot.viewport()
    ops = named_ops()
    index = next(i for i, op in enumerate(ops) if op.key == "add")
    assert page.model.selected_op != "add"
    left = Qt.MouseButton.LeftButton
    QTest.mouseClick(viewport, left, Qt.KeyboardModifier(0), _viewport_point(page, index))
    drive.settle()
    assert page.model.selected_op == "add"
    assert page.model.intensity_scale == 1.0
    # A click beside every dot selects nothing.
    QTest.mouseClick(viewport, left, Qt.KeyboardModifier(0), QPoint(5, 5))
    drive.settle()
    assert page.model.selected_op == "add"

    other = next(i for i, op in enumerate(ops) if op.key == "softmax")
    start = _viewport_point(page, other)
    QTest.mousePress(viewport, left, Qt.KeyboardModifier(0), start)
    for step in range(1, 6):  # right, by 20 pixels at a time: more intensity
        QTest.mouseMove(viewport, start + QPoint(20 * step, 0))
    QTest.mouseRelease(viewport, left, Qt.KeyboardModifier(0), start + QPoint(100, 0))
    drive.settle()
    assert page.model.selected_op == "softmax"
    assert page.model.intensity_scale > 2.0


def _point(x: float, y: float):  # noqa: ANN202
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


@pytest.mark.parametrize(("look", "size"), LOOKS, ids=IDS)
@pytest.mark.parametrize("values", [{}, {"width": 512, "batch_size": 64, "revealed": True},
                                    {"guess_batch": 8192, "revealed": True}],
                         ids=["default", "d512", "big-guess"])
def test_matmul_labels_apart_and_axes_shared(build, look, size, values):
    page = build("2.2", look, size, **values)
    view = page.view
    assert_apart(view.labels)
    assert_apart(view.time_text)
    top = view.plot.getPlotItem().getViewBox()
    bottom = view.time_plot.getPlotItem().getViewBox()
    a = top.mapRectToScene(top.rect())
    b = bottom.mapRectToScene(bottom.rect())
    assert abs(a.left() - b.left()) < 1 and abs(a.right() - b.right()) < 1


@pytest.mark.parametrize(("number", "name", "values"), [
    ("2.2", "guess_batch", [8, 128, 16000, 32]),
    ("4.4", "seq_len", [1024, 300, 131072, 8192]),
    ("4.3", "split", [1, 7, 0, 8, 3]),
])
def test_placed_labels_leave_nothing_stale(qapp, qtbot, number, name, values):
    """PlacedTextLayer repaints only the labels that moved: what is on screen after a few
    moves equals a fresh rendering of the page."""
    theme.apply("dark", qapp)
    page = drive.build_page(SPECS[number], (1280, 800))
    qtbot.addWidget(page)
    for _ in range(3):
        drive.settle()
    for value in values:
        page.model.set(name, value)
        drive.settle()
        drive.settle()
    fresh = page.grab().toImage()
    live = qapp.primaryScreen().grabWindow(page.winId()).toImage().convertToFormat(
        fresh.format())
    assert live == fresh
