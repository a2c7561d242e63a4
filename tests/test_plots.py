"""The fast plot items draw what the pyqtgraph items they replace would draw."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QImage, QPainter

from gpuviz.core.axis import thin_tick_labels
from gpuviz.core.log_axes import set_log_ticks
from gpuviz.core.plots import Area, Curve, Lines, curve, lines, pen, plot_widget


def _specs(axis: pg.AxisItem, method) -> tuple:  # noqa: ANN001
    image = QImage(10, 10, QImage.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = method(axis, painter)
    finally:
        painter.end()
    if method is pg.AxisItem.generateDrawSpecs:  # the one intended difference
        specs = thin_tick_labels(specs, vertical=axis.orientation != "bottom")
    axis_spec, ticks, texts = specs
    return ((axis_spec[1].toTuple(), axis_spec[2].toTuple()),
            [(tick_pen.color().getRgb(), a.toTuple(), b.toTuple()) for tick_pen, a, b in ticks],
            [(rect.getRect(), int(flags), text) for rect, flags, text in texts])


def _assert_axes_draw_as_pyqtgraph(item: pg.PlotItem) -> None:
    for name in ("bottom", "left"):
        axis = item.getAxis(name)
        assert _specs(axis, type(axis).generateDrawSpecs) == _specs(
            axis, pg.AxisItem.generateDrawSpecs)


def _shown_plot(size: tuple[int, int], x_range: tuple[float, float],
                y_range: tuple[float, float], *titles: str, **options: object):  # noqa: ANN202
    """A plot_widget(*titles, **options) of `size`, shown, at these ranges: (widget, item)."""
    widget = plot_widget(*titles, **options)
    widget.resize(*size)
    widget.show()
    item = widget.getPlotItem()
    item.setXRange(*x_range, padding=0)
    item.setYRange(*y_range, padding=0)
    return widget, item


@pytest.mark.parametrize("log_x", [False, True])
@pytest.mark.parametrize("x_range", [(0, 1e-3), (0.5, 1234.0), (-3.0, 7.5), (1e-9, 4e-9)])
def test_axis_draws_what_pyqtgraph_draws(qapp, x_range, log_x):
    low, high = x_range
    if log_x:
        low, high = math.log10(abs(low) or 1e-3), math.log10(abs(high))
    widget, item = _shown_plot((700, 300), (low, high), (0, 37), "Time", "Value", x_unit="s",
                               log_x=log_x)
    qapp.processEvents()
    _assert_axes_draw_as_pyqtgraph(item)
    widget.close()


def test_axis_with_explicit_ticks_and_minor_level(qapp):
    widget, item = _shown_plot((600, 300), (0, 4), (-1, 3.2), "Batch", "Intensity")
    set_log_ticks(item.getAxis("bottom"), 0, 4)
    item.getAxis("left").setTicks([[(0, "compute"), (1, "memory time"), (2, "a longer name")]])
    qapp.processEvents()
    _assert_axes_draw_as_pyqtgraph(item)
    widget.close()


def test_curve_skips_unchanged_data_and_leaves_gaps(qapp):
    widget = plot_widget("x", "y")
    item = widget.getPlotItem()
    line = curve(item, pen("memory"))
    assert isinstance(line, Curve)
    line.set_data([0, 1, 2, 3], [1, np.nan, 3, 4])
    shown = line._xy
    line.set_data(np.array([0, 1, 2, 3.0]), [1, np.nan, 3, 4])
    assert line._xy is shown  # unchanged points: the path is not built again
    assert line.path().elementCount() == 4  # pieces around the NaN (pyqtgraph pads a lone point)
    assert line.boundingRect().contains(3, 4)
    assert np.array_equal(line._xy[0], [0, 1, 2, 3])
    line.set_data([], [])
    assert line.path().isEmpty()
    widget.close()


def _rendered(ratio: float, size: tuple[int, int], transform, draw) -> np.ndarray:  # noqa: ANN001
    """The pixels `draw(painter)` paints on a clear image of `size` logical pixels at
    device pixel ratio `ratio`, under `transform`."""
    image = QImage(int(size[0] * ratio), int(size[1] * ratio),
                   QImage.Format_ARGB32_Premultiplied)
    image.setDevicePixelRatio(ratio)
    image.fill(0)
    painter = QPainter(image)
    painter.setTransform(transform)
    draw(painter)
    painter.end()
    return np.frombuffer(image.constBits(), np.uint32).copy()


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([1.0, 1.5, 2.0]))
def test_area_fills_the_pixels_its_outline_path_fills(qapp, data, ratio):
    """Its pieces (rectangles and convex quadrilaterals) fill exactly what one path
    around the area fills, steps (a repeated x) and stretches of no height included."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QTransform

    n = data.draw(st.integers(2, 30))
    x = np.sort(data.draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))).astype(float)
    heights = st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.5]), min_size=n, max_size=n)
    lower = np.array(data.draw(heights))
    upper = lower + np.array(data.draw(heights))
    fill = QColor(200, 100, 0)

    def render(draw) -> np.ndarray:  # noqa: ANN001
        return _rendered(ratio, (1000, 260), QTransform(37.3, 0, 0, -41.7, 11.2, 230.4), draw)

    def filled(painter: QPainter) -> None:
        painter.setPen(Qt.NoPen)
        painter.setBrush(fill)
        painter.drawPath(outline)

    area = Area(fill)
    area.set_data(x, lower, upper)
    outline = pg.arrayToQPath(np.concatenate([x, x[::-1]]), np.concatenate([upper, lower[::-1]]))
    painted = render(area.paint)
    assert np.array_equal(painted, render(filled))

    def within_bounds(painter: QPainter) -> None:  # nothing is painted outside them
        painter.setClipRect(area.boundingRect())
        area.paint(painter)

    assert np.array_equal(painted, render(within_bounds))
    pieces = area._slopes
    area.set_data(list(x), list(lower), list(upper))
    assert area._slopes is pieces  # the same data: nothing worked out again


@pytest.mark.parametrize("ratio", [1.0, 2.0])
def test_lines_draw_what_a_curve_of_their_pieces_draws(qapp, ratio):
    """Ticks and drop lines, each stroked on its own, light the pixels the NaN-separated
    path did (which Qt stroked as one outline: 77 ms for 255 ticks at ratio 2)."""
    from PySide6.QtGui import QTransform
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    widget = plot_widget("x", "y")
    ticks = lines(widget.getPlotItem(), pen("neutral", 1.5))
    assert isinstance(ticks, Lines)
    x = np.linspace(-1, 1, 255)
    ticks.set_lines(x, -0.07, x + 0.01, 0.07)
    shown = ticks._lines
    ticks.set_lines(list(x), -0.07, list(x + 0.01), 0.07)
    assert ticks._lines is shown  # the same lines: nothing changes
    as_path = Curve(ticks.pen())
    as_path.set_data(np.column_stack([x, x + 0.01, np.full(len(x), np.nan)]).ravel(),
                     np.tile([-0.07, 0.07, np.nan], len(x)))

    def render(item) -> np.ndarray:  # noqa: ANN001
        return _rendered(ratio, (1000, 400), QTransform(450, 0, 0, -1200, 500, 200),
                         lambda painter: item.paint(painter, QStyleOptionGraphicsItem()))

    assert np.array_equal(render(ticks), render(as_path))
    assert ticks.boundingRect().contains(as_path.path().boundingRect())
    ticks.set_lines([], [], [], [])
    assert ticks.boundingRect().isNull()
    widget.close()


def _render_box(box: pg.ViewBox, widget) -> QImage:  # noqa: ANN001
    widget.resize(400, 300)
    widget.show()
    pg.QtWidgets.QApplication.processEvents()
    return widget.grab().toImage()


def test_cell_grid_hatches_idle_cells_and_leaves_out_text_that_does_not_fit(qapp):
    from PySide6.QtCore import QPointF

    from gpuviz import theme
    from gpuviz.core.plots import CellGrid, diagram_widget

    theme.apply("dark", qapp)
    widget, box = diagram_widget()
    grid = CellGrid(font_size=10)
    box.addItem(grid)
    box.setAspectLocked(False)
    box.setRange(xRange=(0, 4), yRange=(0, 1), padding=0)
    busy, idle = theme.color("compute"), theme.color("idle")
    rects = np.array([[0, 0, 1, 1], [1, 0, 1, 1], [2, 0, 0.02, 1]])
    grid.set_cells(rects, [busy, idle, busy], texts=["7", "", "a long label"])
    assert [len(cells) for *_, cells in grid._hatch_groups] == [1]  # the idle cell only
    image = _render_box(box, widget)
    # The idle cell shows two colours (fill and hatching), the busy one its fill and text.
    centre = box.mapViewToScene(QPointF(1.5, 0.5))
    inside = {image.pixelColor(int(centre.x()) + dx, int(centre.y()) + dy).rgb()
              for dx in range(-10, 10) for dy in range(-10, 10)}
    assert len(inside) >= 2
    # Dark text on the pale busy cell, light text on dark cells: whichever reads.
    assert grid._text_inks[0].rgb() == theme.readable_on(busy).rgb()
    # The long label is wider than its sliver of a cell: not painted at all.
    sliver = box.mapViewToScene(QPointF(2.01, 0.5))
    right = {image.pixelColor(int(sliver.x()) + dx, int(sliver.y())).rgb()
             for dx in range(3, 40)}
    assert len(right) == 1  # background only


def test_legend_lays_out_rows_in_columns_and_keeps_room(qapp):
    from gpuviz import theme
    from gpuviz.core.plots import Legend, pen

    theme.apply("dark", qapp)
    widget = plot_widget()
    item = widget.getPlotItem()
    legend = Legend(item, anchor=(1, 1), columns=2)
    legend.add_box("busy", theme.color("compute"))
    legend.add_box("idle", theme.color("idle"))
    legend.add_line("fused", pen("onchip"))
    assert legend.labels() == ["busy", "idle", "fused"]
    one_row = Legend(item, columns=3)
    for label in legend.labels():
        one_row.add_box(label, theme.color("compute"))
    assert legend.boundingRect().height() > one_row.boundingRect().height()
    widget.resize(400, 300)
    widget.show()
    qapp.processEvents()
    # Room for it: the range grows past the data end, by less than half of it.
    assert 10.0 < legend.end_with_room(0.0, 10.0) <= 20.0
    legend.clear()
    assert legend.labels() == [] and legend.boundingRect().isEmpty()


def test_hatch_brush_is_drawn_at_the_device_pixel_ratio_with_an_opaque_fill_in_it(qapp):
    from PySide6.QtGui import QColor

    from gpuviz import theme
    from gpuviz.core.plots import hatch_brush

    theme.apply("dark", qapp)
    fill = theme.color("idle")
    one, two = hatch_brush(fill).texture(), hatch_brush(fill, ratio=2.0).texture()
    # At ratio 2 the lines are drawn on twice the pixels, not scaled up from ratio 1.
    assert two.devicePixelRatio() == 2.0 and two.width() == 2 * one.width()
    # Over an opaque fill the tile is opaque (copied, not blended); a translucent fill
    # keeps its lines alone, blended over whatever the fill shows.
    assert not one.hasAlphaChannel() and one.toImage().pixelColor(0, 0).alpha() == 255
    translucent = QColor(fill)
    translucent.setAlpha(100)
    assert hatch_brush(translucent).texture().hasAlphaChannel()



def _canvas(ratio: float, width: int = 400, height: int = 200) -> QImage:
    """A dark image of `width` x `height` pixels at device pixel ratio `ratio`."""
    image = QImage(int(width * ratio), int(height * ratio), QImage.Format_RGB32)
    image.setDevicePixelRatio(ratio)
    image.fill(0xFF202020)
    return image


def _painted(grid, ratio: float, transform) -> QImage:  # noqa: ANN001
    """`grid` (a CellGrid) painted on a canvas through `transform` (a view's)."""
    image = _canvas(ratio)
    painter = QPainter(image)
    painter.setTransform(transform)
    grid.paint(painter)
    painter.end()
    return image


def _pixels(image: QImage) -> np.ndarray:
    """The image's pixels as 32-bit words, row by row."""
    bits = np.frombuffer(image.constBits(), np.uint32)
    return bits.reshape(image.height(), -1)[:, :image.width()].copy()


@pytest.mark.parametrize("ratio", [1.0, 2.0])
@pytest.mark.parametrize("alpha", [255, 100])
def test_hatched_cells_are_the_pixels_of_a_fill_with_the_hatch_brush(qapp, ratio, alpha):
    """CellGrid copies hatching from a sheet (fast at any ratio); the pixels must be those
    of a fill with the hatch brush, cells at fractional positions included (edges half
    way between two pixels are left out: which pixel Qt takes there is rounding noise)."""
    import numpy as np
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QTransform

    from gpuviz import theme
    from gpuviz.core.plots import CellGrid, hatch_brush

    theme.apply("dark", qapp)
    fill = theme.color("idle", alpha)
    rects = np.array([[3.31 + 41.7 * i, 2.63 + 23.47 * j, 37.15 + i, 19.71] for i in range(6)
                      for j in range(3)])
    # A view scaling data by (1.5, -2) and moving it, as a plot's does.
    transform = QTransform(1.5, 0, 0, -2.0, 4.25, 160.5)

    grid = CellGrid()
    grid.set_cells(rects, [fill] * len(rects), hatch=[True] * len(rects))
    drawn = _painted(grid, ratio, transform)

    expected = _canvas(ratio)
    painter = QPainter(expected)
    painter.setTransform(transform)
    if alpha != 255:  # an opaque fill is in the hatch brush; a translucent one goes first
        painter.setPen(Qt.NoPen)
        painter.setBrush(fill)
        for x, y, w, h in rects:
            painter.drawRect(QRectF(x, y, w, h))
    painter.resetTransform()
    painter.setPen(Qt.NoPen)
    painter.setBrush(hatch_brush(fill, None, ratio))
    for x, y, w, h in rects:
        painter.drawRect(transform.mapRect(QRectF(x, y, w, h)))
    painter.end()
    assert drawn == expected


@pytest.mark.parametrize("ratio", [1.0, 2.0])
@pytest.mark.parametrize("width", [1.0, 1.5, 2.25, 3.0])
def test_solid_outlines_are_the_pixels_of_the_stroked_pen_but_for_square_corners(
        qapp, ratio, width):
    """CellGrid draws solid outlines as filled bands (Qt strokes a pen wider than a
    device pixel rect by rect, slowly); the pixels must be the cosmetic pen's, cells at
    fractional positions included, except at the corners, which the pen bevels and the
    bands fill (pixels of the outline's colour, never fewer)."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QPen, QTransform

    from gpuviz import theme
    from gpuviz.core.plots import CellGrid

    theme.apply("dark", qapp)
    ink = QColor("#ff2000")
    rects = np.array([[3.31 + 41.7 * i, 2.63 + 23.47 * j, 37.15 + i / 3, 19.71 - j / 7]
                      for i in range(6) for j in range(3)])
    transform = QTransform(1.5, 0, 0, -2.0, 4.25, 160.5)

    grid = CellGrid()
    grid.set_cells(rects, [None] * len(rects), outlines=[ink] * len(rects))
    grid._outline_width = width  # device pixels, whatever the look
    drawn = _painted(grid, ratio, transform)

    expected = _canvas(ratio)
    painter = QPainter(expected)
    painter.setTransform(transform)
    stroke = QPen(ink)
    stroke.setCosmetic(True)
    stroke.setWidthF(width)
    painter.setPen(stroke)
    painter.setBrush(Qt.NoBrush)
    painter.drawRects([QRectF(*rect) for rect in rects])
    painter.end()

    ours, theirs = _pixels(drawn) == ink.rgb(), _pixels(expected) == ink.rgb()
    assert not (theirs & ~ours).any()  # every pixel of the pen
    # and more only at corners: within the pen's width of a vertical and a horizontal edge
    ys, xs = np.nonzero(ours & ~theirs)
    device = np.array([transform.mapRect(QRectF(*rect)).getCoords() for rect in rects]) * ratio
    near_x = np.abs(xs[:, None, None] + 0.5 - device[None, :, [0, 2]]) < width
    near_y = np.abs(ys[:, None, None] + 0.5 - device[None, :, [1, 3]]) < width
    at_corner = (near_x.any(axis=2) & near_y.any(axis=2)).any(axis=1)
    assert at_corner.all()


@pytest.mark.parametrize("ratio", [1.0, 2.0])
def test_grid_lines_are_the_pixels_of_the_cosmetic_pen(qapp, ratio):
    """The grid is filled as rectangles (a one-pixel pen is drawn pixel by pixel): the
    pixels must be the pen's, but for at most one device pixel at either end of a line
    (where the pen's end falls half way between two pixel centres)."""
    from PySide6.QtCore import QLineF, QRectF
    from PySide6.QtGui import QPen

    from gpuviz import theme

    theme.apply("dark", qapp)
    widget, item = _shown_plot((640, 360), (0.3, 17.9), (-2.1, 7.7), "Time", "Value")
    qapp.processEvents()

    drawn = _canvas(ratio, 640, 360)
    painter = QPainter(drawn)
    painter.translate(17.5, 3.25)  # as a viewport painted at its place in the window
    widget.drawBackground(painter, QRectF(0, 0, 640, 360))
    painter.end()

    expected = _canvas(ratio, 640, 360)
    painter = QPainter(expected)
    painter.translate(17.5, 3.25)
    painter.fillRect(QRectF(0, 0, 640, 360), widget.backgroundBrush())
    box = item.getViewBox()
    ranges = dict(zip(("bottom", "left"), box.viewRange(), strict=True))
    colours = {colour.rgb() for colour, _ in widget._grid[1]}
    assert len(colours) == 1 and sum(len(rects) for _, rects in widget._grid[1]) >= 8
    painter.setPen(QPen(widget._grid[1][0][0], 0))
    for name in ("bottom", "left"):
        ends = widget._grid_lines(name, ranges[name], box, box.sceneBoundingRect())
        painter.drawLines([QLineF(*row) for row in ends.tolist()])
    painter.end()

    ours, theirs = _pixels(drawn), _pixels(expected)
    differ = np.argwhere(ours != theirs)
    # every differing pixel is the end of a line: a pixel of the grid colour beside it
    # along one axis only, none on the other side
    grid = theirs == next(iter(colours)) | 0xFF000000
    assert len(differ) <= 2 * sum(len(rects) for _, rects in widget._grid[1])
    for y, x in differ.tolist():
        vertical = grid[max(y - 1, 0), x] or grid[min(y + 1, grid.shape[0] - 1), x]
        horizontal = grid[y, max(x - 1, 0)] or grid[y, min(x + 1, grid.shape[1] - 1)]
        assert vertical or horizontal
    widget.close()


def test_device_ratio_is_the_device_scale_whatever_the_painter_transform(qapp):
    """Outline bands and grid lines are as wide as a device pixel: the ratio must be the
    image's in an export at another scale, where the device is the widget (ratio 1) and a
    plot's painter scales by its view."""
    from PySide6.QtWidgets import QWidget

    from gpuviz.core.plots.look import device_ratio
    from gpuviz.export import render_image

    image = QImage(40, 40, QImage.Format_RGB32)
    image.setDevicePixelRatio(2.0)
    painter = QPainter(image)
    painter.scale(3.0, -1.5)
    assert device_ratio(painter) == pytest.approx(2.0)
    painter.end()

    seen = []

    class Probe(QWidget):
        def paintEvent(self, event: object) -> None:  # noqa: N802
            painter = QPainter(self)
            painter.scale(16.8, 9.6)
            seen.append(device_ratio(painter))
            painter.end()

    probe = Probe()
    probe.resize(50, 30)
    render_image(probe, 2.0)
    assert seen == [pytest.approx(2.0)]


def test_markers_in_an_export_at_another_scale_are_drawn_at_its_scale(qapp):
    """Dots are pixmaps drawn for the screen's ratio: an export at 2x from a ratio-1 screen
    (Copy image's default) scaled them up, blurred. The export draws them at its scale,
    the very pixels a ratio-2 screen shows, and the screen's afterwards."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QWidget

    from gpuviz import theme
    from gpuviz.core.plots import Dots, pen, plot_widget
    from gpuviz.core.plots.markers import _Dot
    from gpuviz.export import render_image

    widget = QWidget()  # a page holding the plot, as exports render
    plot = plot_widget("x", "y")
    plot.setParent(widget)
    item = plot.getPlotItem()
    item.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
    Dots(item, 1, 14, theme.color("memory"), pen("text", 1.5)).set_points([0.5], [0.5])
    widget.resize(200, 160)
    plot.resize(200, 160)
    dot = next(i for i in plot.scene().items() if isinstance(i, _Dot))
    screen_ratio = qapp.devicePixelRatio()

    exported = render_image(widget, 2.0)
    assert dot.pixmap().devicePixelRatio() == screen_ratio  # the screen's again

    dot.draw_at(2.0)  # what a ratio-2 screen draws, rendered at 2x
    expected = _canvas(2.0, 200, 160)
    painter = QPainter(expected)
    widget.render(painter, QPoint())
    painter.end()
    dot.apply_look()
    assert (_pixels(exported.convertToFormat(QImage.Format_RGB32)) == _pixels(expected)).all()
    widget.close()


def test_a_hatched_cell_far_wider_than_the_view_is_hatched_where_it_shows(qapp):
    """A typed number can make a bar 10^12 pixels long (13.3 at an MFU of 10^11 %): the
    hatching is cut to the device, not drawn from a sheet of that size (it once crashed
    in QPixmap's constructor), and the pixels that show are hatched as before."""
    from PySide6.QtGui import QTransform

    from gpuviz import theme
    from gpuviz.core.plots import CellGrid
    from gpuviz.core.plots.look import _SHEETS

    theme.apply("dark", qapp)
    fill = theme.color("idle")

    def painted(width: float) -> QImage:
        image = QImage(300, 100, QImage.Format_RGB32)
        image.fill(0xFF202020)
        grid = CellGrid()
        grid.set_cells(np.array([[-5.0, 10.0, width, 50.0]]), [fill], hatch=[True])
        painter = QPainter(image)
        painter.setTransform(QTransform(1.0, 0, 0, 1.0, 0.0, 0.0))
        grid.paint(painter)
        painter.end()
        return image

    assert painted(1e12) == painted(400.0)
    assert max(sheet.width() for sheet in _SHEETS.values()) < 4096


def test_legend_labels_after_a_hatched_swatch_are_drawn_at_ratio_2(qapp):
    """The hatch's texture brush once made the raster engine drop the next rows' labels
    at a device pixel ratio of 2 (the labels after "idle" vanished on a 4K laptop)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter

    from gpuviz import theme
    from gpuviz.core.plots import Legend, pen

    theme.apply("dark", qapp)
    plot = plot_widget()  # kept: a plot no one holds is deleted at once
    legend = Legend(plot.getPlotItem(), columns=1)
    legend.add_box("idle", theme.color("idle"), hatch=True)
    legend.add_line("stash", pen("memory"))
    rect = legend.boundingRect()
    image = QImage(int(rect.width() * 2) + 2, int(rect.height() * 2) + 2,
                   QImage.Format_ARGB32_Premultiplied)
    image.setDevicePixelRatio(2.0)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.translate(-rect.topLeft())
    legend.paint(painter)
    painter.end()
    # The second row's label: more than the panel's one colour right of its swatch.
    w, h = image.width(), image.height()
    label = {image.pixelColor(x, y).rgb() for x in range(int(w * 0.45), w - 4)
             for y in range(int(h * 0.55), h - 4)}
    assert len(label) > 3


def test_cell_grid_texts_need_air_to_be_drawn(qapp):
    """A text as wide as its cell is left out: side by side, such numbers ran together
    ("12345678" for eight narrow boxes of 9.2). With a few pixels to spare it is drawn."""
    from gpuviz import theme
    from gpuviz.core.plots import CellGrid, diagram_widget
    from gpuviz.core.plots.cells import TEXT_AIR

    theme.apply("dark", qapp)
    widget, box = diagram_widget()
    grid = CellGrid(font_size=10)
    box.addItem(grid)
    box.setAspectLocked(False)
    fill = theme.color("compute")
    grid.set_cells(np.array([[i, 0, 1, 1] for i in range(8)], float), [fill] * 8,
                   texts=[str(i + 1) for i in range(8)])
    box.setRange(xRange=(0, 8), yRange=(0, 1), padding=0)
    _render_box(box, widget)
    text_width = grid._text_sizes[:, 0].max()

    def inks(spare: float) -> int:  # cells of text_width + spare pixels: texts drawn
        box.setRange(xRange=(0, box.width() / (text_width + spare)), yRange=(0, 1),
                     padding=0)
        image = _render_box(box, widget)
        ink = grid._text_inks[0].rgb()
        left, right = box.mapViewToScene(pg.Point(0, 0.5)), box.mapViewToScene(
            pg.Point(8, 0.5))
        return sum(image.pixelColor(x, int(left.y()) + dy).rgb() == ink
                   for x in range(int(left.x()), int(right.x())) for dy in range(-3, 4))

    assert inks(0) == 0
    assert inks(TEXT_AIR + 2) > 0
    widget.close()


def test_a_cell_grid_that_elides_cuts_a_long_name_instead_of_leaving_it_out(qapp):
    """6.3's operation names and 10.2's box names were blank on a 1024x768 projector."""
    from gpuviz import theme
    from gpuviz.core.plots import CellGrid, diagram_widget

    theme.apply("dark", qapp)
    shown = {}
    for elide in (False, True):
        widget, box = diagram_widget()
        grid = CellGrid(font_size=10, elide=elide)
        box.addItem(grid)
        box.setAspectLocked(False)
        box.setRange(xRange=(0, 4), yRange=(0, 1), padding=0)
        grid.set_cells(np.array([[0, 0, 1, 1]], float), [theme.color("compute")],
                       texts=["Attention dropout: Dropout output"])
        image = _render_box(box, widget)
        ink = grid._text_inks[0].rgb()
        top_left = box.mapViewToScene(pg.Point(0.05, 0.1))
        bottom_right = box.mapViewToScene(pg.Point(0.95, 0.9))
        xs = range(int(min(top_left.x(), bottom_right.x())),
                   int(max(top_left.x(), bottom_right.x())))
        ys = range(int(min(top_left.y(), bottom_right.y())),
                   int(max(top_left.y(), bottom_right.y())))
        shown[elide] = sum(image.pixelColor(x, y).rgb() == ink for x in xs for y in ys)
        widget.close()
    assert shown[False] == 0 and shown[True] > 0
    cut = grid._cut("Attention dropout: Dropout output", 60.0)
    assert cut is not None and cut[0].text().endswith("…") and cut[1] <= 60
    assert grid._cut("Attention", 3.0) is None  # not even a letter: left out


def test_narrower_number_forms_keep_the_value():
    from gpuviz.core.plots.cells import narrower_number

    assert narrower_number("−0.4") == ["-0.4", "-.4"]
    assert narrower_number("0.25") == [".25"]
    assert narrower_number("−1.2") == ["-1.2"]
    assert narrower_number("12") == []
    assert narrower_number("−∞") == []
    assert narrower_number("F3") == []
    for text in ("−0.4", "0.25", "−1.2"):
        for form in narrower_number(text):
            assert float(form) == float(text.replace("−", "-"))


def test_a_number_too_wide_for_its_cell_is_drawn_narrower_not_left_out(qapp):
    """4.1's negative scores ("−0.4") were blank in 16 px text on a 1024x768 projector."""
    from PySide6.QtGui import QFontMetricsF

    from gpuviz import theme
    from gpuviz.core.plots import CellGrid, diagram_widget

    theme.apply("dark", qapp)
    widget, box = diagram_widget()
    grid = CellGrid(font_size=10)
    box.addItem(grid)
    metrics = QFontMetricsF(grid._font)
    room = (metrics.horizontalAdvance("−0.4") + metrics.horizontalAdvance("-.4")) / 2
    cut = grid._cut("−0.4", room)
    assert cut is not None and cut[0].text() in ("-0.4", "-.4") and cut[1] <= room
    assert grid._cut("−0.4", metrics.horizontalAdvance("-.4") - 1) is None
    assert grid._cut("12", 1.0) is None
    widget.close()


def test_the_grid_is_drawn_opaque_at_the_ticks_of_the_range_shown(qapp):
    """The grid is painted with the plot (no cached background): after a range change its
    lines stand at the new ticks, in the colour their translucent pen makes over the
    background."""
    from gpuviz import theme
    from gpuviz.core.plots import composite

    widget = plot_widget("x", "y")
    widget.resize(400, 300)
    item = widget.getPlotItem()
    item.showGrid(x=True, y=False, alpha=0.25)
    widget.show()
    expected = composite(theme.color("text", int(127 * 0.25)), theme.color("background"))
    for low, high in ((0.0, 10.0), (0.0, 3.0)):
        item.setXRange(low, high, padding=0)
        qapp.processEvents()
        image = widget.viewport().grab().toImage()
        box = item.getViewBox()
        row = round(box.sceneBoundingRect().center().y())
        ticks = item.getAxis("bottom").major_tick_values()
        inside = [t for t in ticks if low < t < high]
        assert inside
        for tick in inside:
            x = box.mapViewToScene(pg.QtCore.QPointF(tick, 0)).x()
            column = math.floor(x)
            colours = {image.pixelColor(c, row).rgb() for c in (column - 1, column, column + 1)}
            assert expected.rgb() in colours, (low, high, tick)
    widget.close()


@pytest.mark.parametrize("x_range", [(0, 10), (0.5, 1234.0), (-3.0, 7.5), (0, 1e6)])
def test_an_axis_paints_the_pixels_of_pyqtgraphs_picture(qapp, x_range):
    """Axis.paint draws straight to the painter with laid-out labels (QStaticText);
    pyqtgraph records a QPicture of drawText calls: the same pixels at ratio 1."""
    from gpuviz.core.axis import Axis

    widget, item = _shown_plot((700, 400), x_range, x_range, "Time (ms)", "Bandwidth")
    qapp.processEvents()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        bounds = axis.boundingRect()
        images = []
        for paint in (Axis.paint, pg.AxisItem.paint):
            axis.picture = None
            image = QImage(int(bounds.width()) + 2, int(bounds.height()) + 2,
                           QImage.Format_ARGB32_Premultiplied)
            image.fill(0)
            painter = QPainter(image)
            painter.translate(-bounds.left(), -bounds.top())
            paint(axis, painter, None, None)
            painter.end()
            images.append(image)
        assert images[0] == images[1], name
    widget.close()


@settings(max_examples=300, deadline=None)
@given(low=st.floats(-1e9, 1e9), span=st.floats(1e-6, 1e9), size=st.floats(3, 5000),
       scale=st.sampled_from([1.0, 1e-3, 1e6]))
def test_an_axis_makes_pyqtgraphs_tick_values(qapp, low, span, size, scale):
    """Axis works out one level of linear ticks in plain Python, with pyqtgraph's
    arithmetic: the same values, to the last bit."""
    from gpuviz.core.axis import Axis

    axis = Axis("bottom")
    axis.setStyle(maxTickLevel=0)
    axis.setScale(scale)
    high = low + span
    assume(high > low)
    assert axis.tickValues(low, high, size) == pg.AxisItem.tickValues(axis, low, high, size)
    assert axis.tickValues(high, low, size) == pg.AxisItem.tickValues(axis, high, low, size)


def test_an_axis_draws_the_labels_of_its_new_range(qapp):
    """The axis keeps what it draws between repaints (where pyqtgraph keeps its picture):
    a new range gives new labels."""
    widget = plot_widget("Time (ms)", "Bandwidth")
    widget.resize(700, 400)
    widget.show()
    item = widget.getPlotItem()
    axis = item.getAxis("bottom")

    def labels() -> list[str]:
        widget.grab()
        return [static.text() for _, static in axis.picture.texts]

    item.setXRange(0, 10, padding=0)
    assert "4" in labels()
    item.setXRange(0, 5000, padding=0)
    assert "2000" in labels() and "4" not in labels()
    widget.close()


def test_a_cell_grid_handed_the_same_cells_again_does_nothing(qapp):
    """Static grids are set on every refresh: the same cells again ask for no repaint;
    a new fill or text does."""
    from gpuviz import theme
    from gpuviz.core.plots import CellGrid

    grid = CellGrid()
    asked = []
    grid.update = lambda *area: asked.append(area)
    rects = np.array([[0, 0, 1, 1], [1, 0, 1, 1]], dtype=float)
    busy, idle = theme.color("compute"), theme.color("idle")
    grid.set_cells(rects, [busy, idle], texts=["a", "b"])
    asked.clear()
    grid.set_cells(rects.copy(), [theme.color("compute"), idle], texts=["a", "b"])
    assert asked == []
    grid.set_cells(rects, [busy, busy], texts=["a", "b"])
    assert asked
    asked.clear()
    grid.set_cells(rects, [busy, busy], texts=["a", "c"])
    assert asked


def test_a_log_slider_reads_its_value_without_trailing_zeros(themed, qtbot):
    """Four significant digits, less trailing zeros: 8.4's least model is "0.1 B params",
    not "0.1000 B params"."""
    from gpuviz import catalog
    from tests import figure_driver as drive

    spec = next(s for s in catalog.all_figures() if s.number == "8.4")
    page = drive.build_page(spec)
    qtbot.addWidget(page)
    slider = next(c for c in page.view.controls.controls if c.name == "params_b")
    texts = [slider.shown(v) for v in (0.1, 0.1234, 7.0, 1000.0)]
    assert texts[0].startswith("0.1 ") and texts[1].startswith("0.1234 ")
    assert texts[2].startswith("7 ") and texts[3].startswith("1,000 ")


def test_axis_ticks_write_thousands_as_the_readouts_do(qapp):
    from gpuviz.core.axis import Axis

    axis = Axis("left")
    assert axis.tickStrings([0, 200_000, 400_000], 1, 200_000) == ["0", "200,000", "400,000"]
    assert axis.tickStrings([0, 5000, -20_000], 1, 5000) == ["0", "5,000", "−20,000"]
    assert axis.tickStrings([0, 1000, 2000], 1, 1000) == ["0", "1000", "2000"]


def test_a_dashed_legend_swatch_shows_two_dashes_however_thick_the_pen(qapp):
    """A thick dashed pen's dash outgrew the swatch (9.3's InfiniBand line read as solid
    in its legend): there its dashes shrink until two and the gap between fill it."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPen

    from gpuviz.core.plots.legend import _showing_its_dashes

    thin = QPen(Qt.GlobalColor.black, 1.5, Qt.DashLine)
    assert _showing_its_dashes(thin, 32.0) is thin
    solid = QPen(Qt.GlobalColor.black, 9.0)
    assert _showing_its_dashes(solid, 32.0) is solid
    thick = QPen(Qt.GlobalColor.black, 4.5, Qt.DashLine)
    shown = _showing_its_dashes(thick, 32.0)
    dash, gap = shown.dashPattern()[:2]
    assert (2 * dash + gap) * 4.5 == pytest.approx(32.0)
    assert shown.capStyle() == Qt.FlatCap  # a round cap would fill the gap
