"""Cheap stand-ins for pyqtgraph items in the lesson-4 views.

pyqtgraph's TextItem, ScatterPlotItem, InfiniteLine and PlotDataItem run Python on every
paint or range change (TextItem even re-sets its transform before each paint, which can
schedule a second paint pass). The items here are plain Qt graphics items: once their
position is set, Qt draws them without calling back into Python. Each setter is a no-op
when nothing changed, so a refresh only dirties what really moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QStaticText, QTransform
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsSimpleTextItem,
)

from gpuviz import theme
from gpuviz.core.plots import CellGrid

IGNORES_TRANSFORMATIONS = QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations
TEXT_MARGIN = 4.0  # QGraphicsTextItem's document margin, kept so labels sit where they did


class PixelText(QGraphicsSimpleTextItem):
    """Plain text whose size is in pixels, placed like pg.TextItem: `anchor` (0..1, 0..1)
    is the point of the text box (margin included) that sits at `pos` in data units."""

    def __init__(self, text: str = "", role: str = "text", size: float = 10,
                 bold: bool = False, anchor: tuple[float, float] = (0, 0)) -> None:
        super().__init__()
        self.setFlag(IGNORES_TRANSFORMATIONS)
        self.setFont(theme.font(size, bold))
        self._anchor = (float(anchor[0]), float(anchor[1]))
        self._pos = (float("nan"), float("nan"))
        self._color = QColor()
        self.setColor(theme.color(role))
        self._shown: str | None = None
        self.setText(text)

    def setText(self, text: str, color: QColor | None = None) -> None:  # noqa: N802
        if color is not None:
            self.setColor(color)
        if text != self._shown:
            self._shown = text
            super().setText(text)
            self._place()

    def setColor(self, color: QColor) -> None:  # noqa: N802 - Qt naming
        color = QColor(color)
        if color != self._color:
            self._color = color
            self.setBrush(QBrush(color))

    def setAnchor(self, anchor: tuple[float, float]) -> None:  # noqa: N802
        anchor = (float(anchor[0]), float(anchor[1]))
        if anchor != self._anchor:
            self._anchor = anchor
            self._place()

    def setPos(self, x: float, y: float) -> None:  # noqa: N802 - Qt naming
        if (x, y) != self._pos:
            self._pos = (x, y)
            super().setPos(x, y)

    def _place(self) -> None:
        rect = self.boundingRect()
        width = rect.width() + 2 * TEXT_MARGIN
        height = rect.height() + 2 * TEXT_MARGIN
        self.setTransform(QTransform.fromTranslate(
            TEXT_MARGIN - self._anchor[0] * width, TEXT_MARGIN - self._anchor[1] * height))


class Dots:
    """Round markers of a fixed pixel size (like symbol "o"), one Qt ellipse each."""

    def __init__(self, view: pg.ViewBox | pg.PlotItem, count: int, size: float,
                 brushes: Sequence[QColor] | QColor, outline: QPen | None = None) -> None:
        if isinstance(brushes, QColor):
            brushes = [brushes] * count
        self.items: list[QGraphicsEllipseItem] = []
        self._points: tuple = ()
        self._shown = True
        for fill in brushes:
            dot = QGraphicsEllipseItem(QRectF(-size / 2, -size / 2, size, size))
            dot.setFlag(IGNORES_TRANSFORMATIONS)
            dot.setBrush(QBrush(fill))
            dot.setPen(outline if outline is not None else QPen(Qt.NoPen))
            view.addItem(dot)
            self.items.append(dot)

    def set_points(self, xs: Iterable[float], ys: Iterable[float]) -> None:
        points = tuple(zip((float(x) for x in xs), (float(y) for y in ys), strict=True))
        if points == self._points:
            return
        self._points = points
        for dot, (x, y) in zip(self.items, points, strict=True):
            visible = self._shown and bool(np.isfinite(x) and np.isfinite(y))
            dot.setVisible(visible)
            if visible:
                dot.setPos(QPointF(x, y))

    def setVisible(self, visible: bool) -> None:  # noqa: N802 - Qt naming
        self._shown = visible
        for dot, (x, y) in zip(self.items, self._points or [(0.0, 0.0)] * len(self.items),
                               strict=True):
            dot.setVisible(visible and bool(np.isfinite(x) and np.isfinite(y)))


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


def curve(plot: pg.PlotItem, qpen: QPen, name: str | None = None) -> pg.PlotCurveItem:
    """A PlotCurveItem added to the plot (in the legend when named). Unlike PlotDataItem
    it does no per-range-change work; in log mode give it log10 data yourself."""
    item = pg.PlotCurveItem(pen=qpen, name=name)
    plot.addItem(item)
    return item


def set_curve(item: pg.PlotCurveItem, x: np.ndarray, y: np.ndarray) -> None:
    """setData only when the points changed (setData costs a fraction of a millisecond
    and makes the whole curve repaint)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    old = getattr(item, "_shown_xy", None)
    if old is not None and np.array_equal(old[0], x) and np.array_equal(old[1], y):
        return
    item._shown_xy = (x.copy(), y.copy())
    item.setData(x, y)


def legend_entry(legend: pg.LegendItem, name: str, targets: Sequence[QGraphicsItem | Dots],
                 **opts: object) -> pg.PlotDataItem:
    """A legend row drawn from `opts` (pen, symbol...) for a series drawn by other items;
    clicking the row shows or hides those items, as it would a PlotDataItem."""
    proxy = pg.PlotDataItem(**opts)

    def follow() -> None:
        for target in targets:
            target.setVisible(proxy.isVisible())

    proxy.visibleChanged.connect(follow)
    legend.addItem(proxy, name)
    return proxy


class StaticTextGrid(CellGrid):
    """CellGrid whose cell texts are drawn as cached QStaticText: QPainter.drawText lays a
    string out again on every call (about 25 µs each), which made a grid of 132 labelled
    cells cost milliseconds per repaint. Same look: each text centred in its cell."""

    def __init__(self, font_size: float = 8.0) -> None:
        super().__init__(font_size)
        self._static: dict[str, tuple[QStaticText, float, float]] = {}

    def _static_text(self, text: str) -> tuple[QStaticText, float, float]:
        entry = self._static.get(text)
        if entry is None:
            static = QStaticText(text)
            static.setTextFormat(Qt.PlainText)
            static.prepare(QTransform(), self._font)
            size = static.size()
            entry = self._static[text] = (static, size.width() / 2, size.height() / 2)
        return entry

    def paint(self, painter: QPainter, *args: object) -> None:
        if not self._texts:
            super().paint(painter, *args)
            return
        texts, self._texts = self._texts, []
        try:
            super().paint(painter, *args)  # fills and outlines
        finally:
            self._texts = texts
        transform = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setFont(self._font)
        painter.setPen(self._text_color)
        for rect, text in texts:
            static, half_w, half_h = self._static_text(text)
            centre = transform.map(rect.center())
            painter.drawStaticText(QPointF(centre.x() - half_w, centre.y() - half_h), static)
        painter.restore()
