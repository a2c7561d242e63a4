"""Cheap-to-update pieces for figures that refresh on every slider step.

- `TextLayer`: any number of anchored plot labels painted in one paint() call. It replaces
  one `pg.TextItem` per label: a TextItem holds a QGraphicsTextItem (a QTextDocument laid
  out and painted per label) and recomputes its transform in Python before every paint.
- `TextPanel`: a framed, word-wrapped (rich) text label whose text can change without
  laying out the whole figure page again.
- `TextTable`: a small table of right-aligned, coloured text painted by one widget (an
  HTML table in a QLabel costs more than a whole refresh to lay out).

TODO(framework): these belong in `gpuviz.core.plots` / `gpuviz.core.widgets`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QWidget

from gpuviz import theme

# QGraphicsTextItem's document margin: labels keep the place a pg.TextItem gave them.
DOCUMENT_MARGIN = 4.0


class LayerLabel:
    """One label of a TextLayer, with the part of the TextItem interface the views use."""

    __slots__ = ("_layer", "text", "x", "y", "anchor", "color", "font", "metrics", "visible")

    def __init__(self, layer: TextLayer, text: str, color: QColor, font: QFont,
                 anchor: tuple[float, float]) -> None:
        self._layer = layer
        self.text = text
        self.x = self.y = 0.0
        self.anchor = (float(anchor[0]), float(anchor[1]))
        self.color = QColor(color)
        self.font = font
        self.metrics = QFontMetricsF(font)
        self.visible = True

    def setText(self, text: str, color: QColor | None = None) -> None:  # noqa: N802
        if color is not None:
            self.setColor(color)
        if text != self.text:
            self.text = text
            self._layer.update()

    def toPlainText(self) -> str:  # noqa: N802
        return self.text

    def setPos(self, x: float, y: float) -> None:  # noqa: N802
        x, y = float(x), float(y)
        if x != self.x or y != self.y:
            self.x, self.y = x, y
            self._layer.update()

    def setAnchor(self, anchor: tuple[float, float]) -> None:  # noqa: N802
        anchor = (float(anchor[0]), float(anchor[1]))
        if anchor != self.anchor:
            self.anchor = anchor
            self._layer.update()

    def setColor(self, color: QColor) -> None:  # noqa: N802
        if QColor(color).rgba() != self.color.rgba():
            self.color = QColor(color)
            self._layer.update()

    def setVisible(self, visible: bool) -> None:  # noqa: N802
        if bool(visible) != self.visible:
            self.visible = bool(visible)
            self._layer.update()

    def isVisible(self) -> bool:  # noqa: N802
        return self.visible

    def setZValue(self, z: float) -> None:  # noqa: N802
        """Labels are drawn in creation order; set the layer's z value instead."""


class TextLayer(pg.GraphicsObject):
    """Labels at data positions, each anchored like a pg.TextItem ((0, 0) puts the text's
    top-left corner at the point, (1, 1) its bottom-right), unscaled by the view, all
    painted in one call. `bounds` (data coordinates) must cover the visible view: the
    layer is repainted as a whole when any label changes."""

    def __init__(self, bounds: QRectF) -> None:
        super().__init__()
        self._bounds = QRectF(bounds)
        self.labels: list[LayerLabel] = []

    def add(self, text: str = "", role: str = "text", size: float = 10, bold: bool = False,
            anchor: tuple[float, float] = (0, 0)) -> LayerLabel:
        label = LayerLabel(self, text, theme.color(role), theme.font(size, bold), anchor)
        self.labels.append(label)
        self.update()
        return label

    def set_bounds(self, bounds: QRectF) -> None:
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = QRectF(bounds)

    def boundingRect(self) -> QRectF:  # noqa: N802
        return self._bounds

    def paint(self, painter: QPainter, *args: object) -> None:
        transform = painter.transform()
        painter.save()
        painter.resetTransform()
        font = None
        for label in self.labels:
            if not label.visible or not label.text:
                continue
            point = transform.map(QPointF(label.x, label.y))
            metrics = label.metrics
            lines = label.text.split("\n")
            width = max(metrics.horizontalAdvance(line) for line in lines)
            width += 2 * DOCUMENT_MARGIN
            height = metrics.height() * len(lines) + 2 * DOCUMENT_MARGIN
            left = point.x() - label.anchor[0] * width + DOCUMENT_MARGIN
            top = point.y() - label.anchor[1] * height + DOCUMENT_MARGIN
            if label.font is not font:
                font = label.font
                painter.setFont(font)
            painter.setPen(label.color)
            for i, line in enumerate(lines):
                painter.drawText(QPointF(left, top + metrics.ascent()
                                         + i * metrics.height()), line)
        painter.restore()


class TextPanel(QFrame):
    """A framed label of (rich) text with a fixed height. The label has no layout around
    it, so new text repaints the panel alone instead of laying out the figure page; text
    equal to the shown one is not set again."""

    def __init__(self, lines: float, rich: bool = True, accessible_name: str = "",
                 framed: bool = True, margin: int = 6) -> None:
        super().__init__()
        self.setFrameShape(QFrame.StyledPanel if framed else QFrame.NoFrame)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.RichText if rich else Qt.AutoText)
        self.label.setMargin(margin)
        self.label.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        if accessible_name:
            self.setAccessibleName(accessible_name)
            self.label.setAccessibleName(accessible_name)
        line = self.label.fontMetrics().lineSpacing()
        self.setFixedHeight(int(line * lines + 2 * margin + 2 * self.frameWidth() + 2))
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        self._text = ""

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.label.setGeometry(self.contentsRect())

    def setText(self, text: str) -> None:  # noqa: N802
        if text != self._text:
            self._text = text
            self.label.setText(text)

    def text(self) -> str:
        return self._text


class TextTable(QWidget):
    """Rows of right-aligned text cells painted by one widget: a muted header row, then
    rows each in one colour. Fixed height (`rows` body rows), so updates never relayout."""

    PADDING = 6

    def __init__(self, header: Sequence[str], rows: int, accessible_name: str = "") -> None:
        super().__init__()
        self.header = list(header)
        self.rows: list[tuple[list[str], QColor]] = []
        self.setAccessibleName(accessible_name)
        metrics = self.fontMetrics()
        self._line = metrics.height() + 1  # the row height of the HTML table it replaced
        self.setFixedHeight(self._line * (rows + 1) + 2)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        self._header_font = QFont(self.font())
        self._header_font.setBold(True)

    def set_rows(self, rows: Sequence[tuple[Sequence[str], QColor]]) -> None:
        new = [(list(cells), QColor(color)) for cells, color in rows]
        if [(c, q.rgba()) for c, q in new] != [(c, q.rgba()) for c, q in self.rows]:
            self.rows = new
            self.update()

    def text(self) -> str:
        """The table as tab-separated text (for tests and accessibility)."""
        lines = ["\t".join(self.header)] + ["\t".join(cells) for cells, _ in self.rows]
        return "\n".join(lines)

    def paintEvent(self, event: object) -> None:  # noqa: N802
        painter = QPainter(self)
        bold = QFontMetricsF(self._header_font)
        plain = QFontMetricsF(self.font())
        widths = [bold.horizontalAdvance(h) for h in self.header]
        for cells, _ in self.rows:
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], plain.horizontalAdvance(cell))
        x, lefts = 0.0, []
        for width in widths:
            lefts.append(x)
            x += width + 2 * self.PADDING
        painter.setFont(self._header_font)
        painter.setPen(theme.color("muted"))
        self._row(painter, self.header, lefts, widths, 0)
        painter.setFont(self.font())
        for r, (cells, color) in enumerate(self.rows, start=1):
            painter.setPen(color)
            self._row(painter, cells, lefts, widths, r)
        painter.end()

    def _row(self, painter: QPainter, cells: Sequence[str], lefts: list[float],
             widths: list[float], row: int) -> None:
        for cell, left, width in zip(cells, lefts, widths, strict=False):
            rect = QRect(round(left + self.PADDING), row * self._line, round(width) + 1,
                         self._line)
            painter.drawText(rect, Qt.AlignRight | Qt.AlignVCenter, cell)
