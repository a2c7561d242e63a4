"""pyqtgraph pieces shared by the figures: themed plots, diagram canvases, and CellGrid,
one graphics item that paints any number of coloured cells in a single paint() call."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen

from gpuviz import theme

pg.setConfigOptions(antialias=False)


def _apply_theme_defaults() -> None:
    current = theme.current()
    pg.setConfigOptions(background=current.background, foreground=current.text)


def plot_widget(x_label: str = "", y_label: str = "", *, log_x: bool = False,
                log_y: bool = False, x_unit: str | None = None,
                y_unit: str | None = None) -> pg.PlotWidget:
    """A themed plot with labelled axes; mouse zoom is off because figures fix their ranges
    (axes that jump while dragging a slider are hard to read)."""
    _apply_theme_defaults()
    widget = pg.PlotWidget()
    item = widget.getPlotItem()
    item.setMenuEnabled(False)
    item.hideButtons()
    item.setMouseEnabled(x=False, y=False)
    item.setLogMode(x=log_x, y=log_y)
    item.showGrid(x=True, y=True, alpha=0.25)
    tick_font = theme.font(9)
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setTickFont(tick_font)
        axis.setPen(pg.mkPen(theme.color("muted")))
        axis.setTextPen(pg.mkPen(theme.color("text")))
        # Major ticks and grid lines only: minor grid lines cost milliseconds per repaint.
        axis.setStyle(maxTickLevel=0)
        # An axis (with its grid) changes only when its range does: keep it as a pixmap
        # instead of replaying its drawing whenever a curve in front of it moves.
        axis.setCacheMode(pg.QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
    label_style = {"font-size": f"{10 * theme.current().font_scale:.0f}pt",
                   "color": theme.current().text}
    if x_label:
        item.setLabel("bottom", x_label, units=x_unit, **label_style)
    if y_label:
        item.setLabel("left", y_label, units=y_unit, **label_style)
    widget.setMinimumHeight(160)
    return widget


def diagram_widget() -> tuple[pg.GraphicsLayoutWidget, pg.ViewBox]:
    """A canvas for diagrams (grids, timelines): no axes, y grows downwards, no mouse."""
    _apply_theme_defaults()
    widget = pg.GraphicsLayoutWidget()
    widget.ci.setContentsMargins(4, 4, 4, 4)
    box = widget.addViewBox()
    box.setMouseEnabled(x=False, y=False)
    box.setMenuEnabled(False)
    box.invertY(True)
    box.setAspectLocked(True)
    widget.setMinimumHeight(120)
    return widget, box


def pen(role: str, width: float = 2.0, style: Qt.PenStyle = Qt.SolidLine) -> QPen:
    qpen = pg.mkPen(theme.color(role), width=theme.line_width(width))
    qpen.setStyle(style)
    return qpen


def brush(role: str, alpha: int = 255) -> pg.QtGui.QBrush:
    return pg.mkBrush(theme.color(role, alpha))


class Label(pg.TextItem):
    """A TextItem that re-lays out its text only when the text really changes."""

    def setText(self, text: str, color: object = None) -> None:  # noqa: N802 - Qt naming
        if text != getattr(self, "_shown_text", None) or color is not None:
            self._shown_text = text
            super().setText(text, color)


def text_item(text: str = "", role: str = "text", size: float = 10, bold: bool = False,
              anchor: tuple[float, float] = (0, 0)) -> Label:
    item = Label(text, color=theme.color(role), anchor=anchor)
    item.setFont(theme.font(size, bold))
    return item


class CellGrid(pg.GraphicsObject):
    """Rectangles with fills, optional outlines and optional centred text, all painted in
    one call. Update with `set_cells`; click a cell to get `clicked(index)`."""

    clicked = Signal(int)

    def __init__(self, font_size: float = 8.0) -> None:
        super().__init__()
        self._rects: list[QRectF] = []
        self._array = np.zeros((0, 4))
        self._fill_groups: list[tuple[QColor, list[QRectF]]] = []
        self._outline_groups: list[tuple[QColor, list[QRectF]]] = []
        self._texts: list[tuple[QRectF, str]] = []
        self._bounds = QRectF()
        self._outline_width = 1.0
        self._font = theme.font(font_size)
        self._text_color = theme.color("text")

    def set_cells(self, rects: np.ndarray, fills: Sequence[QColor | None],
                  outlines: Sequence[QColor | None] | None = None,
                  texts: Sequence[str] | None = None, outline_width: float = 1.5,
                  text_color: QColor | None = None) -> None:
        """rects: array (n, 4) of x, y, width, height in data units."""
        array = np.asarray(rects, dtype=float).reshape(-1, 4)
        if not np.array_equal(array, self._array):
            # Most refreshes only recolour; rebuild the rectangles only when they move.
            self.prepareGeometryChange()
            self._array = array.copy()
            self._rects = [QRectF(*row) for row in array.tolist()]
            if len(array):
                x0, y0 = array[:, 0].min(), array[:, 1].min()
                x1 = (array[:, 0] + array[:, 2]).max()
                y1 = (array[:, 1] + array[:, 3]).max()
                self._bounds = QRectF(x0, y0, x1 - x0, y1 - y0)
            else:
                self._bounds = QRectF()
        self._fill_groups = _group(self._rects, fills)
        self._outline_groups = _group(self._rects, outlines) if outlines is not None else []
        self._texts = ([(r, t) for r, t in zip(self._rects, texts, strict=True) if t]
                       if texts is not None else [])
        self._outline_width = theme.line_width(outline_width)
        if text_color is not None:
            self._text_color = text_color
        self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, *args: object) -> None:
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(Qt.NoPen)
        for fill, rects in self._fill_groups:
            painter.setBrush(fill)
            painter.drawRects(rects)
        painter.setBrush(Qt.NoBrush)
        for outline, rects in self._outline_groups:
            qpen = QPen(outline)
            qpen.setCosmetic(True)
            qpen.setWidthF(self._outline_width)
            painter.setPen(qpen)
            painter.drawRects(rects)
        if self._texts:
            # Text is drawn in device pixels so it keeps its size whatever the zoom.
            transform = painter.transform()
            painter.save()
            painter.resetTransform()
            painter.setFont(self._font)
            painter.setPen(self._text_color)
            for rect, text in self._texts:
                painter.drawText(transform.mapRect(rect), Qt.AlignCenter, text)
            painter.restore()

    def index_at(self, point: QPointF) -> int:
        for index, rect in enumerate(self._rects):
            if rect.contains(point):
                return index
        return -1

    def mouseClickEvent(self, event: object) -> None:
        index = self.index_at(event.pos())
        if index >= 0:
            event.accept()
            self.clicked.emit(index)


def _group(rects: list[QRectF], colors: Sequence[QColor | None]) -> list[tuple[QColor, list]]:
    groups: dict[int, tuple[QColor, list[QRectF]]] = {}
    for rect, qcolor in zip(rects, colors, strict=True):
        if qcolor is None:
            continue
        groups.setdefault(qcolor.rgba(), (qcolor, []))[1].append(rect)
    return list(groups.values())


def grid_rects(count: int, columns: int, *, x0: float = 0.0, y0: float = 0.0,
               size: float = 1.0, gap: float = 0.1) -> np.ndarray:
    """Positions of `count` square cells laid out row by row, `columns` per row."""
    index = np.arange(count)
    rects = np.empty((count, 4))
    rects[:, 0] = x0 + (index % columns) * size
    rects[:, 1] = y0 + (index // columns) * size
    rects[:, 2:] = size - gap
    return rects
