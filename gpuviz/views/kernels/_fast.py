"""Cheap graphics items for the lesson 3 figures, painted by Qt in C++.

pyqtgraph's TextItem, InfiniteLine and ScatterPlotItem run Python on every repaint (a
TextItem recomputes its transform whenever the scene is about to be painted), which adds
up to milliseconds per update. These stand-ins draw the same things with Qt's own items:

- `FastText`: a text in screen pixels at a point of the data, anchored like
  `pg.TextItem` (including its 4 px margin), whose text is only re-laid out on change.
- `dot`: a filled circle of fixed pixel size at a data point.
- `FastCellGrid`: a `CellGrid` whose cell texts are cached `QStaticText`s drawn at
  centres computed with numpy, instead of one laid-out `drawText` per cell.
"""

from __future__ import annotations

import numpy as np
from pyqtgraph.graphicsItems.ScatterPlotItem import renderSymbol
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPixmap, QStaticText, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPixmapItem, QGraphicsSimpleTextItem

from gpuviz import theme
from gpuviz.core.plots import CellGrid

TEXT_MARGIN = 4.0  # QGraphicsTextItem's document margin, which pg.TextItem anchors include


class FastText(QGraphicsSimpleTextItem):
    """Plain text of a fixed pixel size at a data position; `anchor` (ax, ay) picks the
    point of the text's box (0 left/top, 1 right/bottom) that sits at the position."""

    def __init__(self, text: str = "", role: str = "text", size: float | None = 10,
                 bold: bool = False, anchor: tuple[float, float] = (0, 0)) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        if size is not None:  # None: the application's font, as a bare pg.TextItem has
            self.setFont(theme.font(size, bold))
        self.setBrush(theme.color(role))
        self.setPen(QPen(Qt.NoPen))
        self._anchor = anchor
        self._shown: str | None = None
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt naming
        if text != self._shown:
            self._shown = text
            super().setText(text)
            self._place()

    def text(self) -> str:
        return self._shown or ""

    def setAnchor(self, anchor: tuple[float, float]) -> None:  # noqa: N802 - Qt naming
        if tuple(anchor) != self._anchor:
            self._anchor = tuple(anchor)
            self._place()

    def setColor(self, color: QColor) -> None:  # noqa: N802 - Qt naming
        if self.brush().color() != color:
            self.setBrush(color)

    def _place(self) -> None:
        rect = super().boundingRect()
        ax, ay = self._anchor
        dx = TEXT_MARGIN - ax * (rect.width() + 2 * TEXT_MARGIN)
        dy = TEXT_MARGIN - ay * (rect.height() + 2 * TEXT_MARGIN)
        self.setTransform(QTransform.fromTranslate(dx, dy))


def dot(fill: QBrush, outline: QPen, size: float = 10.0) -> QGraphicsPixmapItem:
    """A circle `size` pixels across, centred on its position (data units): the very
    pixmap pyqtgraph's scatter plots draw for symbol "o", without their Python paint."""
    image = renderSymbol("o", size, outline, fill)
    item = QGraphicsPixmapItem(QPixmap.fromImage(image))
    item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
    item.setOffset(-image.width() / 2, -image.height() / 2)
    return item


class FastCellGrid(CellGrid):
    """A CellGrid that draws its texts as cached static texts placed with numpy (the
    placement of `drawText(rect, AlignCenter)` to within a pixel), instead of laying
    out every cell's text again on every paint."""

    def __init__(self, font_size: float = 8.0) -> None:
        super().__init__(font_size)
        self._static: dict[str, tuple[QStaticText, tuple[float, float]]] = {}
        self._text_rows = np.zeros(0, dtype=int)
        self._text_list: list[QStaticText] = []
        self._text_sizes = np.zeros((0, 2))

    def set_cells(self, rects: np.ndarray, fills, outlines=None, texts=None,  # noqa: ANN001
                  outline_width: float = 1.5, text_color: QColor | None = None) -> None:
        super().set_cells(rects, fills, outlines, None, outline_width, text_color)
        rows = [i for i, t in enumerate(texts) if t] if texts is not None else []
        self._text_rows = np.asarray(rows, dtype=int)
        static = self._static
        for i in rows:
            if texts[i] not in static:
                self._prepare(texts[i])
        entries = [static[texts[i]] for i in rows]
        self._text_list = [entry[0] for entry in entries]
        self._text_sizes = np.array([entry[1] for entry in entries], dtype=float).reshape(-1, 2)

    def _prepare(self, text: str) -> None:
        static = QStaticText(text)
        static.setTextFormat(Qt.PlainText)
        static.prepare(QTransform(), self._font)
        size = static.size()
        self._static[text] = (static, (size.width(), size.height()))

    def paint(self, painter: QPainter, *args: object) -> None:
        super().paint(painter, *args)
        if not self._text_list:
            return
        # The view only scales and translates: map all the cells in one go.
        t = painter.transform()
        cells = self._array[self._text_rows]
        centre_x = t.m11() * (cells[:, 0] + cells[:, 2] / 2) + t.dx()
        top = t.m22() * cells[:, 1] + t.dy()
        height = t.m22() * cells[:, 3]
        top = np.minimum(top, top + height)
        x = centre_x - self._text_sizes[:, 0] / 2
        y = top + np.round((np.abs(height) - self._text_sizes[:, 1]) / 2)
        painter.save()
        painter.resetTransform()
        painter.setFont(self._font)
        painter.setPen(self._text_color)
        draw = painter.drawStaticText
        for px, py, static in zip(x.tolist(), y.tolist(), self._text_list, strict=True):
            draw(QPointF(px, py), static)
        painter.restore()


def opaque_blend(role: str, alpha: int, under: str = "background") -> QColor:
    """The opaque colour that `role` at `alpha` shows over the plain `under` colour:
    identical on screen, but filled without blending."""
    top, bottom = theme.color(role), theme.color(under)
    a = alpha / 255
    return QColor(*(round(a * t + (1 - a) * b) for t, b in
                    ((top.red(), bottom.red()), (top.green(), bottom.green()),
                     (top.blue(), bottom.blue()))))

