"""Stand-ins for pyqtgraph items that run Python on every repaint (TextItem,
ScatterPlotItem, InfiniteLine, PlotDataItem, FillBetweenItem): `text_item`, `Dots`,
`Segment`, `curve` (a `Curve`), `Lines`, `Area`. Their setters do nothing when nothing
changed, so a refresh repaints only what moved."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pyqtgraph as pg
import shiboken6
from pyqtgraph.graphicsItems.ScatterPlotItem import renderSymbol
from PySide6.QtCore import QLineF, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
    QPolygonF,
    QTransform,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPathItem,
    QGraphicsPixmapItem,
    QGraphicsView,
    QWidget,
)

from gpuviz import theme
from gpuviz.core.text import PixelText


def text_item(text: str = "", role: str = "text", size: float | None = 10, bold: bool = False,
              anchor: tuple[float, float] = (0, 0)) -> PixelText:
    """A plot label placed like pg.TextItem but painted by Qt alone (see gpuviz.core.text)."""
    return PixelText(text, role, size, bold, anchor)


class DotEvents(QObject):
    """What the pointer does to the dots of a `Dots` made `draggable`."""

    clicked = Signal(int)  # a dot's index: clicked, or a drag of it started
    dragged = Signal(int, float)  # a dot's index and the pointer's x, data units


class Dots:
    """Round markers `size` pixels across at data points: the very pixmap pyqtgraph's
    scatter plots draw for symbol "o", one Qt pixmap item per point, with no Python paint
    (a ScatterPlotItem places its symbols in Python on every repaint: 18% of figure 2.1's
    work per change). Points that are not finite are hidden. `set_style` gives one dot
    another size, fill or outline; a `draggable` one reports clicks and drags of its
    dots through `events`."""

    def __init__(self, view: pg.ViewBox | pg.PlotItem, count: int, size: float,
                 brushes: Sequence[QColor] | QColor, outline: QPen | None = None,
                 draggable: bool = False) -> None:
        if isinstance(brushes, QColor):
            brushes = [brushes] * count
        outline = outline if outline is not None else QPen(Qt.NoPen)
        self.events = DotEvents() if draggable else None
        self.items: list[_Dot] = []
        self._points: tuple = ()
        self._shown = True
        for index, fill in enumerate(brushes):
            item = _Dot(size, outline, pg.mkBrush(fill), index, self.events)
            view.addItem(item)
            self.items.append(item)

    def set_style(self, index: int, size: float, fill: pg.QtGui.QBrush,
                  outline: QPen) -> None:
        """Dot `index` drawn `size` pixels across (before the look's scale) in `fill`
        with `outline`; drawn again only if that changed."""
        self.items[index].set_symbol(size, outline, fill)

    def set_points(self, xs: Iterable[float], ys: Iterable[float]) -> None:
        points = tuple(zip((float(x) for x in xs), (float(y) for y in ys), strict=True))
        if points == self._points:
            return
        self._points = points
        for item, (x, y) in zip(self.items, points, strict=True):
            visible = self._shown and bool(np.isfinite(x) and np.isfinite(y))
            item.setVisible(visible)
            if visible:
                item.setPos(QPointF(x, y))

    def setVisible(self, visible: bool) -> None:  # noqa: N802 - Qt naming
        self._shown = visible
        for item, (x, y) in zip(self.items, self._points or [(0.0, 0.0)] * len(self.items),
                                strict=True):
            item.setVisible(visible and bool(np.isfinite(x) and np.isfinite(y)))

    def setZValue(self, z: float) -> None:  # noqa: N802 - Qt naming
        for item in self.items:
            item.setZValue(z)


class _Dot(QGraphicsPixmapItem):
    """One marker of Dots, drawn anew at the look's size, at the screens' device pixel
    ratio (on a 4K laptop a pixmap drawn at ratio 1 would be scaled up, blurred), or at
    an export's (markers_drawn_at). With `events`, a left click or drag on it is
    reported there (pyqtgraph's scene hands its items these mouse events)."""

    def __init__(self, size: float, outline: QPen, fill: pg.QtGui.QBrush, index: int,
                 events: DotEvents | None) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self._symbol = (size, outline, fill)
        self._drawn_at = (0.0, 0.0)
        self._index, self._events = index, events
        self.apply_look()

    def set_symbol(self, size: float, outline: QPen, fill: pg.QtGui.QBrush) -> None:
        if (size, outline, fill) != self._symbol:
            self._symbol = (size, outline, fill)
            self._drawn_at = (0.0, 0.0)
            self.apply_look()

    def _takes(self, event: object) -> bool:
        taken = self._events is not None and event.button() == Qt.MouseButton.LeftButton
        event.accept() if taken else event.ignore()
        return taken

    def mouseClickEvent(self, event: object) -> None:  # noqa: N802 - pyqtgraph naming
        if self._takes(event):
            self._events.clicked.emit(self._index)

    def mouseDragEvent(self, event: object) -> None:  # noqa: N802 - pyqtgraph naming
        if self._takes(event):
            if event.isStart():
                self._events.clicked.emit(self._index)
            # The parent is the plot's data group: its coordinates are data units.
            x = self.parentItem().mapFromScene(event.scenePos()).x()
            self._events.dragged.emit(self._index, float(x))

    def apply_look(self) -> None:
        self.draw_at(QGuiApplication.instance().devicePixelRatio())

    def draw_at(self, ratio: float) -> None:
        """Draw the marker for a device of `ratio` device pixels per pixel."""
        scale = theme.screen_scale()
        if (scale, ratio) != self._drawn_at:
            self._drawn_at = (scale, ratio)
            size, outline, fill = self._symbol
            image = renderSymbol("o", size * scale, outline, fill, dpr=ratio)
            self.setPixmap(QPixmap.fromImage(image))
            self.setOffset(-image.width() / ratio / 2, -image.height() / ratio / 2)


@contextmanager
def markers_drawn_at(widget: QWidget, ratio: float) -> Iterator[None]:
    """The markers of the plots in `widget` drawn for a device of `ratio` while the block
    runs (an export at another scale than the screen's, where a marker drawn for the
    screen would be scaled up, blurred), then for the screen again."""
    views = [widget] if isinstance(widget, QGraphicsView) else []
    views += widget.findChildren(QGraphicsView)
    dots = [item for view in views if view.scene() is not None
            for item in view.scene().items() if isinstance(item, _Dot)]
    for dot in dots:
        dot.draw_at(ratio)
    try:
        yield
    finally:
        for dot in dots:
            dot.apply_look()


class Segment(QGraphicsLineItem):
    """A straight line in data units with a cosmetic pen: a static InfiniteLine.

    QGraphicsLineItem pads its bounding rectangle by half the pen width in *data* units,
    which on a log axis is a band hundreds of pixels wide that gets repainted whenever the
    line moves; `set_line` takes the size of a pixel instead, so only a thin strip is."""

    def __init__(self, qpen: QPen) -> None:
        super().__init__()
        self.setPen(qpen)
        self._line = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        self._bounds = QRectF()

    def set_line(self, x0: float, y0: float, x1: float, y1: float,
                 pixel: tuple[float, float] = (0.0, 0.0)) -> None:
        """pixel: the width and height of a screen pixel in data units."""
        line = (float(x0), float(y0), float(x1), float(y1), float(pixel[0]), float(pixel[1]))
        if line == self._line:
            return
        self._line = line
        self.prepareGeometryChange()
        pad_x = 3 * abs(line[4]) if np.isfinite(line[4]) else 0.0
        pad_y = 3 * abs(line[5]) if np.isfinite(line[5]) else 0.0
        self._bounds = QRectF(QPointF(x0, y0), QPointF(x1, y1)).normalized().adjusted(
            -pad_x, -pad_y, pad_x, pad_y)
        self.setLine(QLineF(*line[:4]))

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt naming
        return self._bounds


def _padded(bounds: QRectF, item: QGraphicsItem, pixels: float) -> QRectF:
    """`bounds` (data units) with `pixels` screen pixels of room on every side, at the
    item's current scale (the room pens and pixel edges need, whatever the zoom)."""
    transform = item.sceneTransform()
    dx = pixels / (abs(transform.m11()) or 1.0)
    dy = pixels / (abs(transform.m22()) or 1.0)
    return bounds.adjusted(-dx, -dy, dx, dy)


class Curve(QGraphicsPathItem):
    """A line through (x, y) points in data coordinates, painted by Qt alone.

    pg.PlotCurveItem runs Python on every repaint (bounds, pixel padding, the path),
    about 0.2-0.3 ms per curve each time its plot repaints; this item builds its path
    once per `set_data`. NaN points leave gaps. In a log-mode plot give it log10 data.
    Its legend row: `Legend.add_line(label, the same pen)`."""

    def __init__(self, qpen: QPen) -> None:
        super().__init__()
        self._qpen: QPen | None = None
        self._xy: tuple[np.ndarray, np.ndarray] | None = None
        self._data_bounds = QRectF()
        self._pad = 0.0
        self.setPen(qpen)

    def setPen(self, qpen: QPen) -> None:  # noqa: N802 - Qt naming
        """The pen and the room it needs."""
        if qpen == self.pen() and self._qpen is qpen:
            return
        self.prepareGeometryChange()
        super().setPen(qpen)
        self._qpen = qpen
        # Room for the pen on every side, in pixels (Qt adds 2 more to repainted areas).
        self._pad = max(0.0, qpen.widthF() / 2 - 1.5)

    def set_data(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> None:
        """Draw through these points; nothing happens when they are the ones shown."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if self._xy is not None and np.array_equal(self._xy[0], x, equal_nan=True) and (
                np.array_equal(self._xy[1], y, equal_nan=True)):
            return
        self._xy = (x.copy(), y.copy())
        path = pg.arrayToQPath(x, y, connect="finite") if len(x) else QPainterPath()
        self.prepareGeometryChange()
        self._data_bounds = path.controlPointRect()
        self.setPath(path)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt naming
        # QGraphicsPathItem pads by the pen width in *data* units (on a log axis, a band
        # hundreds of pixels wide) and strokes the path to find it: pad in pixels.
        if not self._pad:
            return self._data_bounds
        return _padded(self._data_bounds, self, self._pad)

    def shape(self) -> QPainterPath:
        return self.path()


class Lines(QGraphicsItem):
    """Separate straight lines in one pen (ticks, drop lines), in data coordinates.

    Each line is stroked on its own, in one drawLines call. As a Curve of NaN-separated
    pieces they were one path, which Qt strokes into one outline and fills scan line by
    scan line over all its edges: 11.1's 255 grid ticks took 77 ms at device pixel ratio
    2 that way, 1.3 ms as lines (the same pixels)."""

    def __init__(self, qpen: QPen) -> None:
        super().__init__()
        self._pen = QPen(qpen)
        self._lines = np.empty((0, 4))
        self._data_bounds = QRectF()

    def pen(self) -> QPen:
        return QPen(self._pen)

    def setPen(self, qpen: QPen) -> None:  # noqa: N802 - Qt naming, for the look's rescale
        self.prepareGeometryChange()
        self._pen = QPen(qpen)

    def set_lines(self, x0: Sequence[float] | np.ndarray | float,
                  y0: Sequence[float] | np.ndarray | float,
                  x1: Sequence[float] | np.ndarray | float,
                  y1: Sequence[float] | np.ndarray | float) -> None:
        """The lines from (x0, y0) to (x1, y1) (arrays, or numbers for all of them);
        nothing happens when they are the ones shown."""
        lines = np.column_stack(np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                                      for v in (x0, y0, x1, y1))))
        lines = np.ascontiguousarray(lines.reshape(-1, 4))
        if np.array_equal(lines, self._lines):
            return
        self.prepareGeometryChange()
        self._lines = lines
        if len(lines):
            xs, ys = lines[:, 0::2], lines[:, 1::2]
            self._data_bounds = QRectF(QPointF(xs.min(), ys.min()), QPointF(xs.max(), ys.max()))
        else:
            self._data_bounds = QRectF()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt naming
        # Room for the pen in pixels (Qt adds 2 more to the areas it repaints), as Curve.
        if not len(self._lines):
            return QRectF()
        return _padded(self._data_bounds, self, self._pen.widthF() / 2 + 1)

    def paint(self, painter: QPainter, *args: object) -> None:
        if len(self._lines):
            painter.setPen(self._pen)
            painter.drawLines(shiboken6.wrapInstance(self._lines.ctypes.data, QLineF),
                              len(self._lines))


def lines(plot: pg.PlotItem, qpen: QPen) -> Lines:
    """A Lines item added to the plot."""
    item = Lines(qpen)
    plot.addItem(item)
    return item


class Area(QGraphicsItem):
    """A filled area between two lines over the same x points (one of stacked areas), in
    one opaque colour and no outline.

    Painted in pieces, one per stretch between neighbouring x where it has height: the
    flat ones (both edges level) as rectangles in one call, the sloped ones as convex
    quadrilaterals. Qt fills a path of many edges far more slowly than its pieces (6.4's
    24 recomputed segments as one path: 1.5 ms at device pixel ratio 2; in pieces 0.3)."""

    def __init__(self, fill: QColor) -> None:
        super().__init__()
        self._fill = QColor(fill)
        self._data: tuple[np.ndarray, ...] | None = None
        self._rects = np.empty((0, 4))
        self._slopes: list[QPolygonF] = []
        self._bounds = QRectF()

    def set_data(self, x: Sequence[float] | np.ndarray, lower: Sequence[float] | np.ndarray,
                 upper: Sequence[float] | np.ndarray) -> None:
        """Fill between `lower` and `upper` (upper >= lower) at the points `x` (ascending;
        a repeated x is a step); nothing happens when they are the ones shown."""
        data = tuple(np.array(v, dtype=float) for v in (x, lower, upper))
        if self._data is not None and all(
                np.array_equal(a, b) for a, b in zip(data, self._data, strict=True)):
            return
        self._data = data
        x, lower, upper = data
        start, end = slice(None, -1), slice(1, None)
        pieces = np.flatnonzero((x[end] > x[start])
                                & ((upper[start] > lower[start]) | (upper[end] > lower[end])))
        i, j = pieces, pieces + 1
        flat = (lower[i] == lower[j]) & (upper[i] == upper[j])
        f = i[flat]
        self._rects = np.ascontiguousarray(np.column_stack(
            [x[f], lower[f], x[f + 1] - x[f], upper[f] - lower[f]]))
        s = i[~flat]
        corners = np.column_stack([x[s], lower[s], x[s], upper[s],
                                   x[s + 1], upper[s + 1], x[s + 1], lower[s + 1]])
        # One polygon of every corner, cut into its quadrilaterals (a QPolygonF per piece
        # from QPointFs cost half as much again).
        self._slopes = []
        if len(s):
            every = pg.functions.create_qpolygonf(4 * len(s))
            pg.functions.ndarray_from_qpolygonf(every)[:] = corners.reshape(-1, 2)
            self._slopes = [every.mid(4 * k, 4) for k in range(len(s))]
        self.prepareGeometryChange()
        if len(pieces):
            self._bounds = QRectF(QPointF(x[i].min(), min(lower[i].min(), lower[j].min())),
                                  QPointF(x[j].max(), max(upper[i].max(), upper[j].max())))
        else:
            self._bounds = QRectF()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt naming
        # A pixel of room: an edge on a pixel's centre lights the pixel past it.
        if self._bounds.isNull():
            return self._bounds
        return _padded(self._bounds, self, 1.0)

    def paint(self, painter: QPainter, *args: object) -> None:
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(Qt.NoPen)
        painter.setBrush(self._fill)
        if len(self._rects):
            # In device pixels at the rasterizer's 1/64: the pixels of the path's edges.
            device = painter.deviceTransform()
            painter.save()
            painter.setWorldTransform(device.inverted()[0] * painter.worldTransform())
            rects = _device_rects(self._rects, device)
            painter.drawRects(shiboken6.wrapInstance(rects.ctypes.data, QRectF), len(rects))
            painter.restore()
        for piece in self._slopes:
            painter.drawConvexPolygon(piece)


def _device_rects(rects: np.ndarray, device: QTransform) -> np.ndarray:
    """`rects` (rows of x, y, width, height) in device pixels under `device` (which only
    scales and translates), normalized, their edges rounded to 1/64 of a pixel as Qt's
    rasterizer rounds a polygon's: filled so, a rectangle lights the very pixels it lights
    as a polygon (each pixel whose centre lies past its left or top edge and up to its
    right or bottom one), where at a hair off a pixel's centre the two differed."""
    x = device.m11() * rects[:, 0] + device.dx()
    y = device.m22() * rects[:, 1] + device.dy()
    x_end = x + device.m11() * rects[:, 2]
    y_end = y + device.m22() * rects[:, 3]
    left, right = (np.round(v * 64) / 64 for v in (np.minimum(x, x_end), np.maximum(x, x_end)))
    top, bottom = (np.round(v * 64) / 64 for v in (np.minimum(y, y_end), np.maximum(y, y_end)))
    return np.ascontiguousarray(np.column_stack([left, top, right - left, bottom - top]))


def curve(plot: pg.PlotItem, qpen: QPen) -> Curve:
    """A Curve added to the plot."""
    item = Curve(qpen)
    plot.addItem(item)
    return item
