"""Themed plots and diagram canvases, and what rescales or lists everything drawn in them
when the look changes."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractGraphicsShapeItem,
    QApplication,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QGraphicsView,
)

from gpuviz import theme
from gpuviz.core.axis import Axis
from gpuviz.core.plots.cells import CellGrid, rect_array
from gpuviz.core.plots.legend import Legend
from gpuviz.core.plots.look import composite, device_ratio, pixel_size
from gpuviz.core.plots.markers import Lines
from gpuviz.core.text import TextLayer

pg.setConfigOptions(antialias=False)

AXIS_TITLE_POINTS = 10  # point size of the axis titles, before the theme's scale
TICK_POINTS = 9  # point size of the tick labels, before the theme's scale


def _apply_theme_defaults() -> None:
    current = theme.current()
    pg.setConfigOptions(background=current.background, foreground=current.text)


class GridPlotItem(pg.PlotItem):
    """A PlotItem whose showGrid only records the grid's strengths, for GridPlotWidget to
    paint (pyqtgraph's own grid is drawn by the axes)."""

    grid_changed = Signal()

    def __init__(self, **kargs) -> None:  # noqa: ANN003 - pg.PlotItem's
        self.grid = {"bottom": 0.0, "left": 0.0}
        super().__init__(**kargs)

    def showGrid(self, x: bool | None = None, y: bool | None = None,  # noqa: N802
                 alpha: float | None = None) -> None:
        strength = 0.25 if alpha is None else alpha
        if x is not None:
            self.grid["bottom"] = strength if x else 0.0
        if y is not None:
            self.grid["left"] = strength if y else 0.0
        self.grid_changed.emit()


def paint_viewport_once(view: pg.GraphicsView) -> None:
    """The view's background (an opaque colour) covers its whole viewport, so Qt need not
    fill the viewport with its palette first: at device pixel ratio 2 that fill wrote every
    pixel of the plot once more per repaint. The background is filled straight into the
    viewport, not kept in a cache (pyqtgraph's default), which a resize or a range change
    filled and then copied."""
    view.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
    viewport = view.viewport()
    viewport.setAutoFillBackground(False)
    viewport.setAttribute(Qt.WA_OpaquePaintEvent)


class GridPlotWidget(pg.PlotWidget):
    """A PlotWidget that paints its grid itself, under the items, in opaque colours.

    pyqtgraph draws grid lines as part of each axis, so every repaint of the plot blended
    two translucent plot-sized axis images. Here the background is the plot's colour and
    the grid lines the colour their translucent pen makes over it, drawn straight into the
    viewport (no background cache): a change that moves the range fills the plot once,
    where a cache was filled and then copied (12.2 at 2560x1440: 0.8 ms less per change
    that moves both timelines); a repaint of a small area fills that area. The lines are
    filled rectangles (see `_grid_colours_and_rects`), worked out again only when the view
    range, the ticks, the plot area, the widget size or the device pixel ratio change.
    Views call `getPlotItem().showGrid(x, y, alpha)` as usual.

    The plot item and axes tell it of changes by signals, not by methods of it stored on
    them: such a reference back would put the page in a reference cycle that only Python's
    garbage collector frees, long after Qt deleted the page (issue 36)."""

    def __init__(self) -> None:
        super().__init__(plotItem=GridPlotItem(
            axisItems={name: Axis(name) for name in ("left", "bottom")}))
        # (device pixel ratio, [(colour, rectangles)]) of the grid lines; None: work it out
        self._grid: tuple[float, list[tuple[QColor, np.ndarray]]] | None = None
        item = self.getPlotItem()
        # pyqtgraph's hidden top and right axes follow every range change (their title set
        # again, ~0.1 ms a plot): no figure shows them.
        for name in ("top", "right"):
            item.getAxis(name).unlinkFromView()
        # Through a Python method: PySide 6.11 keeps ~70 bytes for good of each connection
        # to a C++ slot such as update, once per plot a kiosk builds.
        item.grid_changed.connect(self._redraw_grid)
        box = item.getViewBox()
        box.sigRangeChanged.connect(self._redraw_grid)
        box.geometryChanged.connect(self._redraw_grid)  # e.g. wider tick labels
        for name in item.grid:
            item.getAxis(name).ticks_set.connect(self._redraw_grid)
        paint_viewport_once(self)

    def _redraw_grid(self) -> None:
        """The grid moved: work its lines out again at the next paint and repaint the plot
        area's background in the same repaint as the items."""
        self._grid = None
        box = self.getPlotItem().getViewBox()
        self.scene().invalidate(box.sceneBoundingRect(), QGraphicsScene.BackgroundLayer)

    def resizeEvent(self, event) -> None:  # noqa: ANN001, N802
        self._grid = None
        super().resizeEvent(event)

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802
        painter.fillRect(rect, self.backgroundBrush())
        ratio = device_ratio(painter)
        if self._grid is None or self._grid[0] != ratio:
            self._grid = (ratio, self._grid_colours_and_rects(ratio))
        painter.setPen(Qt.NoPen)
        for colour, rects in self._grid[1]:
            painter.setBrush(colour)
            painter.drawRects(*rect_array(rects))

    def _grid_colours_and_rects(self, ratio: float) -> list[tuple[QColor, np.ndarray]]:
        """Each grid line as the rectangle of device pixels a one-pixel cosmetic pen
        covers (half a device pixel around the line and past its ends): Qt draws such a
        pen pixel by pixel, a horizontal line at ~60 instructions a pixel, a rectangle
        row by row (2.2 at ratio 2: 5% fewer instructions per change). The same pixels
        but, now and then, one device pixel at the end of a line (tested)."""
        box = self.getPlotItem().getViewBox()
        area = box.sceneBoundingRect()
        ranges = dict(zip(("bottom", "left"), box.viewRange(), strict=True))
        background = theme.color("background")
        half = 0.5 / ratio
        grid = []
        for name, strength in self.getPlotItem().grid.items():
            if strength:
                ends = self._grid_lines(name, ranges[name], box, area)
                rects = np.empty((len(ends), 4))
                rects[:, 0] = np.minimum(ends[:, 0], ends[:, 2]) - half
                rects[:, 1] = np.minimum(ends[:, 1], ends[:, 3]) - half
                rects[:, 2] = np.abs(ends[:, 2] - ends[:, 0]) + 2 * half
                rects[:, 3] = np.abs(ends[:, 3] - ends[:, 1]) + 2 * half
                grid.append((composite(theme.color("text", int(127 * strength)), background),
                             rects))
        return grid

    def _grid_lines(self, name: str, view_range: list[float], box: pg.ViewBox,
                    area: QRectF) -> np.ndarray:
        """Lines at the axis's major ticks (or its explicit ticks), in scene coordinates:
        rows of x1, y1, x2, y2."""
        axis = self.getPlotItem().getAxis(name)
        horizontal = name == "bottom"
        low, high = sorted(view_range)
        values = axis.major_tick_values()  # the axis's own ticks, computed once per range
        # The view-to-scene map once (ViewBox.mapViewToScene runs Python per point).
        to_scene = box.childGroup.sceneTransform()
        lines = []
        for value in values:
            if low <= value <= high:
                point = to_scene.map(QPointF(value, value))
                lines.append((point.x(), area.top(), point.x(), area.bottom())
                             if horizontal else
                             (area.left(), point.y(), area.right(), point.y()))
        return np.array(lines, dtype=float).reshape(-1, 4)


def plot_widget(x_label: str = "", y_label: str = "", *, log_x: bool = False,
                log_y: bool = False, x_unit: str | None = None,
                y_unit: str | None = None) -> pg.PlotWidget:
    """A themed plot with labelled axes; mouse zoom is off because figures fix their ranges
    (axes that jump while dragging a slider are hard to read)."""
    _apply_theme_defaults()
    widget = GridPlotWidget()
    item = widget.getPlotItem()
    item.setMenuEnabled(False)
    item.hideButtons()
    item.setMouseEnabled(x=False, y=False)
    item.setLogMode(x=log_x, y=log_y)
    item.showGrid(x=True, y=True, alpha=0.25)
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(theme.color("muted")))
        axis.setTextPen(pg.mkPen(theme.color("text")))
        # Major ticks only: minor ones cost time and clutter the small plots. Tick text
        # space grows but never shrinks: a narrower label would re-lay out the plot (a
        # second repaint per update) and make it jump.
        axis.setStyle(maxTickLevel=0, autoReduceTextSpace=False)
        # The title is a text document, laid out on every paint otherwise: keep it as a
        # pixmap (the axis keeps its own drawing: Axis.paint).
        axis.label.setCacheMode(pg.QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
    label_style = {"font-size": _title_size(), "color": theme.current().text}
    if x_label:
        item.setLabel("bottom", x_label, units=x_unit, **label_style)
    if y_label:
        item.setLabel("left", y_label, units=y_unit, **label_style)
    _fit_plot_fonts(item)
    widget.setMinimumHeight(160)
    return widget


def _title_size() -> str:
    return f"{AXIS_TITLE_POINTS * theme.font_factor():.1f}pt"


def _fit_plot_fonts(item: pg.PlotItem) -> None:
    """The tick and title fonts of the current look (at build and on a look change)."""
    tick_font = theme.font(TICK_POINTS)
    # A tick label is centred on its tick, so the one at the top edge of the plot sticks
    # out by half a line: leave that much room above the plot (the plot widget's edge
    # would cut it).
    item.layout.setContentsMargins(1, math.ceil(QFontMetricsF(tick_font).height() / 2), 1, 1)
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        if isinstance(axis, Axis):
            axis.set_fonts(tick_font, _title_size())
        else:
            axis.setTickFont(tick_font)


def apply_look(scenes: Iterable[pg.GraphicsScene], font_ratio: float,
               line_ratio: float) -> None:
    """Rescale everything drawn in `scenes` to the current look, in place: the shared
    helpers (they have `apply_look()`) take the look's sizes; plots their tick and title
    fonts; other text and pens grow by `font_ratio` and `line_ratio` (the new
    look's factors over those they were drawn with)."""
    for scene in scenes:
        for item in scene.items():
            own = getattr(item, "apply_look", None)
            if callable(own):
                own()
            elif isinstance(item, pg.PlotItem):
                _fit_plot_fonts(item)
            elif isinstance(item, (QGraphicsSimpleTextItem, QGraphicsTextItem)):
                # Axis titles and legend labels are sized by their owners above.
                if not isinstance(item.parentItem(), (pg.AxisItem, pg.LabelItem)):
                    qfont = item.font()
                    qfont.setPointSizeF(qfont.pointSizeF() * font_ratio)
                    item.setFont(qfont)
            elif line_ratio != 1.0:
                _scale_pen(item, line_ratio)


def drawn_texts(scenes: Iterable[pg.GraphicsScene]) -> list[tuple[str, float]]:
    """Every visible text drawn in `scenes` with the pixel size of its font (times any
    shrinking a label got): labels, text layers, cell texts, tick labels, axis titles,
    legend rows."""
    found: list[tuple[str, float]] = []
    for scene in scenes:
        for item in scene.items():
            if not item.isVisible():
                continue
            if isinstance(item, (CellGrid, Legend)):
                found += item.text_sizes()
            elif isinstance(item, TextLayer):
                found += [(label.text, pixel_size(label.font)) for label in item.labels
                          if label.visible and label.text]
            elif isinstance(item, pg.AxisItem):
                if item.style["showValues"] and item.style["tickFont"] is not None:
                    found.append((f"<{item.orientation} ticks>",
                                  pixel_size(item.style["tickFont"])))
                if item.label.isVisible() and item.labelText:
                    found.append((item.labelText, _css_pixels(item.labelStyle)))
            elif isinstance(item, pg.LabelItem):
                if item.text:
                    found.append((item.text, _css_pixels(item.opts)))
            elif isinstance(item, QGraphicsSimpleTextItem):
                if item.text():
                    found.append((item.text(), pixel_size(item.font()) * item.scale()))
            elif isinstance(item, QGraphicsTextItem) and not isinstance(
                    item.parentItem(), (pg.AxisItem, pg.LabelItem)) and item.toPlainText():
                found.append((item.toPlainText(), pixel_size(item.font()) * item.scale()))
    return found


def _css_pixels(style: dict) -> float:
    size = style.get("font-size") or style.get("size")
    if isinstance(size, str) and size.endswith("pt"):
        return float(size[:-2]) * 96 / 72
    if isinstance(size, str) and size.endswith("px"):
        return float(size[:-2])
    return pixel_size(QApplication.font())


def _scale_pen(item: QGraphicsItem, ratio: float) -> None:
    if isinstance(item, (QAbstractGraphicsShapeItem, QGraphicsLineItem, Lines)):
        qpen = item.pen()
        if qpen.style() != Qt.NoPen and qpen.widthF() > 0:
            qpen.setWidthF(qpen.widthF() * ratio)
            item.setPen(qpen)
    elif isinstance(item, (pg.PlotCurveItem, pg.BarGraphItem)):
        qpen = item.opts.get("pen")
        if isinstance(qpen, QPen) and qpen.style() != Qt.NoPen and qpen.widthF() > 0:
            qpen = QPen(qpen)
            qpen.setWidthF(qpen.widthF() * ratio)
            item.setOpts(pen=qpen) if isinstance(item, pg.BarGraphItem) else item.setPen(qpen)


def diagram_widget() -> tuple[pg.GraphicsLayoutWidget, pg.ViewBox]:
    """A canvas for diagrams (grids, timelines): no axes, y grows downwards, no mouse."""
    _apply_theme_defaults()
    widget = pg.GraphicsLayoutWidget()
    paint_viewport_once(widget)
    widget.ci.setContentsMargins(4, 4, 4, 4)
    box = widget.addViewBox()
    box.setMouseEnabled(x=False, y=False)
    box.setMenuEnabled(False)
    box.invertY(True)
    box.setAspectLocked(True)
    widget.setMinimumHeight(120)
    return widget, box
