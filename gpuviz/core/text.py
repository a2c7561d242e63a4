"""Plot labels that cost little to update.

pyqtgraph's TextItem holds a QGraphicsTextItem (a QTextDocument laid out per label) and
recomputes its transform in Python before every paint, which adds up to milliseconds per
refresh. Two cheaper labels, both placed like a TextItem (same anchor, same 4 px margin):

- `PixelText`: one plain Qt text item. Use it for a few labels that move or change on
  their own; `text_item()` in `gpuviz.core.plots` makes one.
- `TextLayer`: any number of labels painted by one item in one call. Use it for a set of
  labels that change together (a label per bar or per point): one item to repaint
  instead of many. With `keep_inside=True` a label that would run past an edge of the
  plot is flipped to the other side of its point (`fit_inside`), decided at paint time
  in pixels, so it holds for any window size.
- `rich_text`: a label of HTML (several colours), set once; painted by Qt alone.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPen,
    QStaticText,
    QTransform,
)
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSimpleTextItem, QGraphicsTextItem

from gpuviz import theme

# QGraphicsTextItem's document margin, which pg.TextItem anchors include: labels keep the
# place a TextItem gave them.
TEXT_MARGIN = 4.0


def fit_inside(x: float, y: float, width: float, height: float,
               anchor: tuple[float, float], area: QRectF,
               flip: bool = True) -> tuple[float, float]:
    """Top-left corner of a `width` x `height` text whose box (the text and TEXT_MARGIN
    around it) has its `anchor` point at (x, y), kept inside `area` (all in pixels).

    Along an axis where the text would cross an edge, the anchor flips to the other side
    of (x, y) (ax becomes 1 - ax: a label left of its point goes right of it, one above
    a line goes below it); when neither side has room, or with `flip=False` (a title
    that starts at a corner), the text slides back against the edge it crossed (the left
    or top edge when it is larger than the area)."""
    return (_fit_axis(x, width, anchor[0], area.left(), area.right(), flip),
            _fit_axis(y, height, anchor[1], area.top(), area.bottom(), flip))


def _fit_axis(point: float, size: float, anchor: float, low: float, high: float,
              flip: bool) -> float:
    box = size + 2 * TEXT_MARGIN
    start = point - anchor * box + TEXT_MARGIN
    if low <= start and start + size <= high:
        return start
    if flip:
        flipped = point - (1.0 - anchor) * box + TEXT_MARGIN
        if low <= flipped and flipped + size <= high:
            return flipped
    return max(low, min(start, high - size))


class PixelText(QGraphicsSimpleTextItem):
    """Plain text of a fixed pixel size at a data position; `anchor` (ax, ay) picks the
    point of the text's box (0 left/top, 1 right/bottom, margin included) that sits at
    the position. Setters do nothing when the value is unchanged, so a refresh re-lays
    out or repaints only what changed."""

    def __init__(self, text: str = "", role: str = "text", size: float | None = 10,
                 bold: bool = False, anchor: tuple[float, float] = (0, 0)) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self._size, self._bold = size, bold
        if size is not None:  # None: the application's font, as a bare pg.TextItem has
            self.setFont(theme.font(size, bold))
        self.setPen(QPen(Qt.NoPen))
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

    def text(self) -> str:
        return self._shown or ""

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

    def apply_look(self) -> None:
        """Take the current look's font size (FigureView.apply_look calls it)."""
        qfont = theme.font(self._size, self._bold) if self._size is not None else QFont()
        if qfont != self.font():
            self.setFont(qfont)
            self._place()

    def set_scale(self, scale: float) -> None:
        """Shrink (or grow) the label about its anchor point, which stays at its position.
        Does nothing when the scale is unchanged."""
        if scale != self.scale():
            self.setScale(scale)

    def _place(self) -> None:
        rect = self.boundingRect()
        width = rect.width() + 2 * TEXT_MARGIN
        height = rect.height() + 2 * TEXT_MARGIN
        self.setTransform(QTransform.fromTranslate(
            TEXT_MARGIN - self._anchor[0] * width, TEXT_MARGIN - self._anchor[1] * height))
        # Qt scales about this origin, in the text's own coordinates (before the anchor
        # shift above): the anchor point, so a scaled label stays where it was put.
        self.setTransformOriginPoint(self._anchor[0] * width - TEXT_MARGIN,
                                     self._anchor[1] * height - TEXT_MARGIN)


class RichText(QGraphicsTextItem):
    """See rich_text."""

    def __init__(self, html: str, size: float, anchor: tuple[float, float]) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self._size, self._anchor = size, anchor
        self.setDefaultTextColor(theme.color("text"))
        self.setHtml(html)
        self.apply_look()

    def apply_look(self) -> None:
        self.setFont(theme.font(self._size))
        box = self.boundingRect()  # includes the document margin, as a TextItem's anchor does
        self.setTransform(QTransform.fromTranslate(-self._anchor[0] * box.width(),
                                                   -self._anchor[1] * box.height()))


def rich_text(html: str, size: float = 9, anchor: tuple[float, float] = (0, 0)
              ) -> QGraphicsTextItem:
    """A fixed-size label of rich text placed like a pg.TextItem (`anchor` as in
    PixelText; move it with setPos in data units). pg.TextItem runs Python on every
    repaint of its plot; this item is painted by Qt alone. Set its text once."""
    return RichText(html, size, anchor)


class LayerLabel:
    """One label of a TextLayer, with PixelText's setters."""

    __slots__ = ("_layer", "text", "x", "y", "anchor", "color", "font", "metrics", "visible",
                 "lines", "width", "height", "size", "bold")

    def __init__(self, layer: TextLayer, text: str, color: QColor, size: float, bold: bool,
                 anchor: tuple[float, float]) -> None:
        self._layer = layer
        self.text = text
        self.x = self.y = 0.0
        self.anchor = (float(anchor[0]), float(anchor[1]))
        self.color = QColor(color)
        self.size, self.bold = size, bold
        self.visible = True
        self.apply_look()

    def apply_look(self) -> None:
        """Take the current look's font size."""
        self.font = theme.font(self.size, self.bold)
        self.metrics = QFontMetricsF(self.font)
        self._lay_out()

    def _lay_out(self) -> None:
        """Each line laid out once per text (drawText lays it out on every paint)."""
        self.lines = []
        for line in self.text.split("\n"):
            static = QStaticText(line)
            static.prepare(QTransform(), self.font)
            self.lines.append(static)
        self.width = max(self.metrics.horizontalAdvance(line) for line in self.text.split("\n"))
        self.height = self.metrics.height() * len(self.lines)

    def setText(self, text: str, color: QColor | None = None) -> None:  # noqa: N802
        if color is not None:
            self.setColor(color)
        if text != self.text:
            self.text = text
            self._lay_out()
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
    """Labels at data positions, unscaled by the view, all painted in one call. `bounds`
    (data coordinates) must cover the visible view: the layer is repainted as a whole
    when any label changes.

    keep_inside: keep every label inside the visible part of its view box (and of
    `bounds`), flipping its anchor near an edge, or with `flip=False` only sliding it back
    inside (see `fit_inside`). It is worked out while painting, in pixels, so it follows
    resizes and costs a few additions per label."""

    def __init__(self, bounds: QRectF, keep_inside: bool = False, flip: bool = True) -> None:
        super().__init__()
        self._bounds = QRectF(bounds)
        self.keep_inside = keep_inside
        self.flip = flip
        self.labels: list[LayerLabel] = []

    def add(self, text: str = "", role: str = "text", size: float = 10, bold: bool = False,
            anchor: tuple[float, float] = (0, 0)) -> LayerLabel:
        label = LayerLabel(self, text, theme.color(role), size, bold, anchor)
        self.labels.append(label)
        self.update()
        return label

    def apply_look(self) -> None:
        for label in self.labels:
            label.apply_look()
        self.update()

    def set_bounds(self, bounds: QRectF) -> None:
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = QRectF(bounds)

    def boundingRect(self) -> QRectF:  # noqa: N802
        return self._bounds

    def visible_area(self) -> QRectF:
        """The part of `bounds` that the view box shows, in the layer's coordinates (the
        view box clips what lies outside)."""
        box = self.getViewBox()
        if isinstance(box, pg.ViewBox):
            return self.mapRectFromItem(box, box.rect()) & self._bounds
        return QRectF(self._bounds)

    def paint(self, painter: QPainter, *args: object) -> None:
        transform = painter.transform()
        area = transform.mapRect(self.visible_area()) if self.keep_inside else None
        painter.save()
        painter.resetTransform()
        font = None
        for label in self.labels:
            if not label.visible or not label.text:
                continue
            point = transform.map(QPointF(label.x, label.y))
            width, height = label.width, label.height
            if area is None:
                left = point.x() - label.anchor[0] * (width + 2 * TEXT_MARGIN) + TEXT_MARGIN
                top = point.y() - label.anchor[1] * (height + 2 * TEXT_MARGIN) + TEXT_MARGIN
            else:
                left, top = fit_inside(point.x(), point.y(), width, height, label.anchor,
                                       area, self.flip)
            if label.font is not font:
                font = label.font
                painter.setFont(font)
            painter.setPen(label.color)
            line_height = label.metrics.height()
            for i, static in enumerate(label.lines):
                painter.drawStaticText(QPointF(left, top + i * line_height), static)
        painter.restore()
