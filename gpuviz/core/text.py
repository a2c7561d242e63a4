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

import re
import weakref
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
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


def laid_out(text: str, font: QFont, *, plain: bool = True,
             width: float = -1.0) -> QStaticText:
    """`text` laid out once to be drawn in `font` (wrapped at `width` pixels when given),
    for the screen's device pixel ratio. QPainter lays a static text out again when it is
    drawn at another scale than the one it was prepared for: prepared at ratio 1 and
    drawn at 2, a label cost 36 us on its first draw instead of 5 (the new labels of a
    change of 8.2 at ratio 2: 1.8 ms). Drawn elsewhere it is laid out again, no worse."""
    static = QStaticText(text)
    if plain:
        static.setTextFormat(Qt.PlainText)
    if width > 0:
        static.setTextWidth(width)
    ratio = QGuiApplication.instance().devicePixelRatio()
    static.prepare(QTransform.fromScale(ratio, ratio), font)
    return static


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
        self.setColor(theme.text_color(role))
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


_BREAKS = re.compile(r"\S+?-(?=\S)|\S+")  # words, and a hyphenated word's parts


def wrap_lines(text: str, room: float, width: Callable[[str], float]) -> str:
    """`text` with each of its lines broken, at spaces or after a hyphen, so that no line is
    wider than `room` (as `width` measures it) where a break can do it: a box's label that
    keeps to its box on a small screen ("column-parallel" over "column-" and "parallel")."""
    lines = []
    for line in text.split("\n"):
        current = ""
        for found in _BREAKS.finditer(line):
            spaced = found.start() > 0 and line[found.start() - 1] == " "
            joined = current + (" " if spaced else "") + found.group()
            if current and width(joined) > room:
                lines.append(current)
                joined = found.group()
            current = joined
        lines.append(current)
    return "\n".join(lines)


def rich_text(html: str, size: float = 9, anchor: tuple[float, float] = (0, 0)
              ) -> QGraphicsTextItem:
    """A fixed-size label of rich text placed like a pg.TextItem (`anchor` as in
    PixelText; move it with setPos in data units). pg.TextItem runs Python on every
    repaint of its plot; this item is painted by Qt alone. Set its text once."""
    return RichText(html, size, anchor)


class LayerLabel:
    """One label of a TextLayer, with PixelText's setters. It holds its layer weakly: a
    reference back would make every layer a reference cycle, freed only by Python's garbage
    collector long after Qt deleted the page (issue 36)."""

    __slots__ = ("_layer", "text", "x", "y", "anchor", "color", "font", "metrics", "visible",
                 "lines", "width", "height", "size", "bold", "mono", "give_way", "plate")

    def __init__(self, layer: TextLayer, text: str, color: QColor, size: float, bold: bool,
                 anchor: tuple[float, float], mono: bool = False,
                 give_way: bool = False, plate: bool = False) -> None:
        self._layer = weakref.ref(layer)
        self.give_way = give_way
        self.plate = plate
        self.text = text
        self.x = self.y = 0.0
        self.anchor = (float(anchor[0]), float(anchor[1]))
        self.color = QColor(color)
        self.size, self.bold, self.mono = size, bold, mono
        self.visible = True
        self.apply_look()

    def apply_look(self) -> None:
        """Take the current look's font size."""
        self.font = theme.font(self.size, self.bold, self.mono)
        self.metrics = QFontMetricsF(self.font)
        self._lay_out()

    def _lay_out(self) -> None:
        """Each line laid out once per text (drawText lays it out on every paint)."""
        self.lines = []
        for line in self.text.split("\n"):
            self.lines.append(laid_out(line, self.font, plain=False))
        self.width = max(self.metrics.horizontalAdvance(line) for line in self.text.split("\n"))
        self.height = self.metrics.height() * len(self.lines)

    def setText(self, text: str, color: QColor | None = None) -> None:  # noqa: N802
        if color is not None:
            self.setColor(color)
        if text != self.text:
            self.text = text
            self._lay_out()
            self._changed()

    def _changed(self) -> None:
        layer = self._layer()
        if layer is not None:
            layer.update()

    def toPlainText(self) -> str:  # noqa: N802
        return self.text

    def setPos(self, x: float, y: float) -> None:  # noqa: N802
        x, y = float(x), float(y)
        if x != self.x or y != self.y:
            self.x, self.y = x, y
            self._changed()

    def setAnchor(self, anchor: tuple[float, float]) -> None:  # noqa: N802
        anchor = (float(anchor[0]), float(anchor[1]))
        if anchor != self.anchor:
            self.anchor = anchor
            self._changed()

    def setColor(self, color: QColor) -> None:  # noqa: N802
        if QColor(color).rgba() != self.color.rgba():
            self.color = QColor(color)
            self._changed()

    def setVisible(self, visible: bool) -> None:  # noqa: N802
        if bool(visible) != self.visible:
            self.visible = bool(visible)
            self._changed()

    def isVisible(self) -> bool:  # noqa: N802
        return self.visible

    def setZValue(self, z: float) -> None:  # noqa: N802
        """Labels are drawn in creation order; set the layer's z value instead."""


GIVE_WAY_GAP = 4  # px: a label that gives way keeps this far from the others, sideways
PLATE_MARGIN = 2  # px of a label's plate beside its text
PLATE_ALPHA = 220  # of 255: the marks under a plate still show, faintly


class TextLayer(pg.GraphicsObject):
    """Labels at data positions, unscaled by the view, all painted in one call. `bounds`
    (data coordinates) must cover the visible view. A label that changes repaints its old
    and new rectangles only (the whole layer when the view moves): its setters mark the
    layer, which works out what moved when the figure repaints (`place_pending_labels`).

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
        self._drawn: dict[int, tuple] = {}  # what each shown label looks like, placed
        self._view_key: tuple | None = None
        self._dirty = True

    def add(self, text: str = "", role: str = "text", size: float = 10, bold: bool = False,
            anchor: tuple[float, float] = (0, 0), mono: bool = False,
            give_way: bool = False, plate: bool = False) -> LayerLabel:
        """A label; `mono` in a fixed-width font (source code). `give_way`: left out where
        it would touch a label of the layer drawn before it (a row of numbers that would run
        together on a small screen: every other one shows). `plate`: on a plate of the
        background colour, for a label that may lie over thin marks (7.4's NVLink steps
        on a small projector)."""
        label = LayerLabel(self, text, theme.text_color(role), size, bold, anchor, mono,
                           give_way, plate)
        self.labels.append(label)
        self.update()
        return label

    def apply_look(self) -> None:
        for label in self.labels:
            label.apply_look()
        self._view_key = None  # every label has a new size: repaint them all
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

    def update(self, *args: object) -> None:  # noqa: D102 - Qt naming
        """A label or a setter changed something: wait for `place()` (no argument), or
        repaint the given rectangle (Qt's own calls)."""
        if args:
            super().update(*args)
            return
        self._dirty = True
        if not _PENDING:  # the figure places them before it repaints; this is a fallback
            QTimer.singleShot(0, place_pending_labels)
        _PENDING.add(self)

    def place(self) -> None:
        """Repaint only the old and new rectangles of the labels that moved or changed
        (the whole layer when the view changed, or before the plot is shown). Called for
        every changed layer before the figure repaints (`place_pending_labels`)."""
        if not self._dirty:
            return
        self._dirty = False
        views = self.scene().views() if self.scene() is not None else []
        if not views or not views[0].isVisible():
            super().update()
            return
        transform = self.deviceTransform(views[0].viewportTransform())
        before = dict(self._drawn)
        if self._layout(transform, self._area(transform)):
            super().update()
            return
        back, invertible = transform.inverted()
        if not invertible:
            super().update()
            return
        for key in set(before) | set(self._drawn):
            if before.get(key) != self._drawn.get(key):
                for entry in (before.get(key), self._drawn.get(key)):
                    if entry is not None:
                        rect = QRectF(entry[0], entry[1], entry[2] - entry[0],
                                      entry[3] - entry[1]).adjusted(-3, -3, 3, 3)
                        super().update(back.mapRect(rect))

    def _area(self, transform: QTransform) -> QRectF | None:
        """The pixels the labels are kept inside (None: anywhere)."""
        return transform.mapRect(self.visible_area()) if self.keep_inside else None

    def _layout(self, transform: QTransform, area: QRectF | None) -> bool:
        """Where each shown label is drawn for this transform, in pixels (`_drawn`); True
        when the view changed, and every label with it."""
        key = (transform.m11(), transform.m22(), transform.dx(), transform.dy(),
               None if area is None else area.getRect())
        full = key != self._view_key
        self._view_key = key
        self._drawn = {}
        placed: list[tuple[float, float, float, float]] = []
        for label in self.labels:
            if label.visible and label.text:
                point = transform.map(QPointF(label.x, label.y))
                if area is None:
                    left = (point.x() - label.anchor[0] * (label.width + 2 * TEXT_MARGIN)
                            + TEXT_MARGIN)
                    top = (point.y() - label.anchor[1] * (label.height + 2 * TEXT_MARGIN)
                           + TEXT_MARGIN)
                else:
                    left, top = fit_inside(point.x(), point.y(), label.width, label.height,
                                           label.anchor, area, self.flip)
                right, bottom = left + label.width, top + label.height
                if label.give_way and any(
                        left < r + GIVE_WAY_GAP and l - GIVE_WAY_GAP < right and top < b
                        and t < bottom for l, t, r, b in placed):
                    continue
                placed.append((left, top, right, bottom))
                self._drawn[id(label)] = (left, top, right, bottom,
                                          label.text, label.color.rgba(), id(label.font))
        return full

    def drawn(self) -> list[tuple[str, QRectF]]:
        """Each label painted and its rectangle, in the pixels of the view it was last
        painted in (for tests)."""
        return [(text, QRectF(left, top, right - left, bottom - top))
                for left, top, right, bottom, text, *_ in self._drawn.values()]

    def paint(self, painter: QPainter, *args: object) -> None:
        transform = painter.transform()
        self._layout(transform, self._area(transform))
        painter.save()
        painter.resetTransform()
        font = None
        for label in self.labels:
            drawn = self._drawn.get(id(label))
            if drawn is None:
                continue
            if label.font is not font:
                font = label.font
                painter.setFont(font)
            if label.plate:
                painter.fillRect(QRectF(drawn[0] - PLATE_MARGIN, drawn[1],
                                        drawn[2] - drawn[0] + 2 * PLATE_MARGIN,
                                        drawn[3] - drawn[1]),
                                 theme.color("background", PLATE_ALPHA))
            painter.setPen(label.color)
            line_height = label.metrics.height()
            for i, static in enumerate(label.lines):  # lines aligned as the anchor says
                shift = label.anchor[0] * (label.width - static.size().width()) \
                    if len(label.lines) > 1 else 0.0
                painter.drawStaticText(QPointF(drawn[0] + shift, drawn[1] + i * line_height),
                                       static)
        painter.restore()


_PENDING: weakref.WeakSet[TextLayer] = weakref.WeakSet()


def place_pending_labels() -> None:
    """Place every text layer whose labels changed since (FigureView calls it after each
    refresh, before the one repaint)."""
    layers = list(_PENDING)
    _PENDING.clear()
    for layer in layers:
        if shiboken6.isValid(layer):
            layer.place()


def _segments_cross(segments: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """(S, C) booleans: does segment s (x0, y0, x1, y1) cross rectangle c (left, top,
    right, bottom)? Liang-Barsky clipping, all pairs and the four edges at once (a few
    numpy calls: the arrays are small, the calls were the cost); pixels in, no Qt."""
    x0, y0 = segments[:, 0:1], segments[:, 1:2]
    dx, dy = segments[:, 2:3] - x0, segments[:, 3:4] - y0
    p = np.stack([-dx, dx, -dy, dy])  # (4, S, 1): along the segment, per edge
    q = np.stack([x0 - rects[None, :, 0], rects[None, :, 2] - x0,
                  y0 - rects[None, :, 1], rects[None, :, 3] - y0])  # (4, S, C)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = q / p
    # Parallel to an edge and outside it: no crossing.
    inside = ~((p == 0) & (q < 0)).any(axis=0)
    low = np.where(p < 0, t, 0.0).max(axis=0)  # enters the rectangle at the latest edge
    high = np.where(p > 0, t, 1.0).min(axis=0)  # leaves it at the earliest
    return inside & (low <= high)


def polyline_segments(x: np.ndarray, y: np.ndarray, every: int = 1) -> np.ndarray:
    """A curve through (x, y) as segments (x0, y0, x1, y1) for `set_obstacles`, through
    every `every`-th point (a label is far wider than a smooth curve's kinks)."""
    x, y = np.asarray(x, dtype=float)[::every], np.asarray(y, dtype=float)[::every]
    return np.column_stack([x[:-1], y[:-1], x[1:], y[1:]])


class PlacedTextLayer(TextLayer):
    """A TextLayer that places each label where it covers the least: every label has
    candidate places (data x, data y, anchor), and the one chosen is the first that
    keeps off the labels placed before it (creation order, or `set_order`, is priority),
    off the lines and dots given by `set_obstacles` and inside the visible plot; failing
    that, the one that costs least (a label covered costs most, then a line or a dot, a
    faint line little, and each step down the candidate list a little). Placement is in
    pixels, done while painting and cached until the view's transform, a label or an
    obstacle changes, so a repaint that moves nothing costs no placement; like every
    TextLayer it repaints only the labels that moved (`place()`, called for the figure)."""

    DOT_PAD = 2.0  # pixels around an obstacle dot
    COSTS = {"outside": 0.05, "label": 40.0, "line": 4.0, "dot": 4.0, "faint": 0.5,
             "rank": 0.2}

    def __init__(self, bounds: QRectF) -> None:
        super().__init__(bounds, keep_inside=True)
        self._candidates: dict[int, list[tuple[float, float, float, float]]] = {}
        self._segments = np.zeros((0, 4))
        self._faint = np.zeros((0, 4))
        self._moving = np.zeros((0, 4))
        self._dots = np.zeros((0, 2))
        self._order: list[LayerLabel] = []
        self._dot_size = 0.0
        self._key: tuple | None = None
        self._rects: dict[int, tuple[float, float, float, float]] = {}
        self._label_keys: dict[int, tuple] = {}

    def apply_look(self) -> None:
        super().apply_look()
        self._key = None  # every label has a new size: place them all again

    def set_candidates(self, label: LayerLabel,
                       places: list[tuple[float, float, float, float]]) -> None:
        """(x, y, ax, ay) in data units and anchor fractions, the preferred first."""
        if self._candidates.get(id(label)) != places:
            self._candidates[id(label)] = list(places)
            self.update()

    def set_order(self, labels: list[LayerLabel]) -> None:
        """Place these labels first, in this order (say, the selected point's)."""
        if [id(label) for label in labels] != [id(label) for label in self._order]:
            self._order = list(labels)
            self.update()

    def set_obstacles(self, segments: np.ndarray, dots: np.ndarray | None = None,
                      dot_size: float = 0.0, faint: np.ndarray | None = None,
                      moving: np.ndarray | None = None) -> None:
        """Line pieces (x0, y0, x1, y1), dots (x, y, `dot_size` pixels across before the
        look's scale: the size their `Dots` were made with, which grow with it), faint
        line pieces (dashed guides a label may cross) and moving line pieces (a line that
        follows a slider), data units; NaN rows are ignored. Dots and moving lines count
        when a label is placed but do not move the others by themselves (a dragged dot or
        line moves its own label only)."""
        def rows(array: np.ndarray | None, width: int) -> np.ndarray:
            array = np.zeros((0, width)) if array is None else np.asarray(
                array, dtype=float).reshape(-1, width)
            return array[np.isfinite(array).all(axis=1)]

        segments, dots, faint = rows(segments, 4), rows(dots, 2), rows(faint, 4)
        self._moving = rows(moving, 4)
        if not np.array_equal(segments, self._segments) or not np.array_equal(
                faint, self._faint):
            self._segments, self._faint = segments, faint
            self.update()
        self._dots, self._dot_size = dots, dot_size

    def _candidates_costed(self, labels: list[LayerLabel], transform: QTransform,
                           area: QRectF) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each label's candidate rectangles (left, top, right, bottom, pixels) with what
        each costs before the other labels count: its rank, sliding inside, and the lines,
        faint lines and dots it covers. Worked out for all the labels at once (a few numpy
        calls in all, not per label: placing every label again is the slowest refresh of
        the roofline figures)."""
        m11, m22, dx, dy = transform.m11(), transform.m22(), transform.dx(), transform.dy()
        costs = self.COSTS
        places = [np.array(self._candidates.get(id(label))
                           or [(label.x, label.y, *label.anchor)], dtype=float)
                  for label in labels]
        counts = [len(rows) for rows in places]
        places = np.vstack(places)
        w = np.repeat([label.width for label in labels], counts)
        h = np.repeat([label.height for label in labels], counts)
        left = m11 * places[:, 0] + dx - places[:, 2] * (w + 2 * TEXT_MARGIN) + TEXT_MARGIN
        top = m22 * places[:, 1] + dy - places[:, 3] * (h + 2 * TEXT_MARGIN) + TEXT_MARGIN
        # A place that runs past an edge slides back inside; the slide costs a little per
        # pixel, so a place that fits as it is wins over one pushed into place.
        x0, y0, x1, y1 = area.left(), area.top(), area.right(), area.bottom()
        slid_left = np.clip(left, x0, np.maximum(x0, x1 - w))
        slid_top = np.clip(top, y0, np.maximum(y0, y1 - h))
        rank = np.concatenate([np.arange(count) for count in counts])
        cost = (rank * costs["rank"]
                + costs["outside"] * (np.abs(slid_left - left) + np.abs(slid_top - top)))
        rects = np.column_stack([slid_left, slid_top, slid_left + w, slid_top + h])
        scale, shift = [m11, m22, m11, m22], [dx, dy, dx, dy]
        lines = np.vstack([self._segments, self._moving])
        if len(lines):
            cost += costs["line"] * _segments_cross(lines * scale + shift, rects).sum(axis=0)
        if len(self._faint):
            cost += costs["faint"] * _segments_cross(self._faint * scale + shift,
                                                     rects).sum(axis=0)
        if len(self._dots):
            dots = self._dots * [m11, m22] + [dx, dy]
            half = self._dot_size * theme.screen_scale() / 2 + self.DOT_PAD
            cost += costs["dot"] * _overlaps(rects, np.column_stack(
                [dots - half, dots + half])).sum(axis=1)
        ends = np.cumsum(counts)[:-1]
        return list(zip(np.split(rects, ends), np.split(cost, ends), strict=True))

    def _choose(self, rects: np.ndarray, cost: np.ndarray,
                taken: list[tuple[float, float, float, float]]
                ) -> tuple[float, float, float, float]:
        """The candidate that costs least with the labels already `taken` counted."""
        if taken:
            cost = cost + self.COSTS["label"] * _overlaps(rects, np.array(taken)).sum(axis=1)
        return tuple(rects[int(np.argmin(cost))].tolist())

    def _layout(self, transform: QTransform, area: QRectF) -> bool:
        """Place the labels for this transform: all of them (returns True) when the view,
        the fixed lines, the order or the set of shown labels changed, else only those
        whose text or candidates changed."""
        shown = [label for label in self.labels if label.visible and label.text]
        scene = (transform.m11(), transform.m22(), transform.dx(), transform.dy(),
                 area.getRect(), self._segments.tobytes(), self._faint.tobytes(),
                 tuple(id(label) for label in self._order), tuple(map(id, shown)))
        keys = {id(label): (label.text, label.width, label.x, label.y,
                            tuple(self._candidates.get(id(label), ()))) for label in shown}
        full = scene != self._key
        if full:
            self._key = scene
            first = [label for label in self._order if label in shown]
            ordered = first + [label for label in shown if label not in first]
            self._rects = {}
            for label, (rects, cost) in zip(ordered, self._candidates_costed(
                    ordered, transform, area) if ordered else [], strict=True):
                self._rects[id(label)] = self._choose(rects, cost,
                                                      list(self._rects.values()))
        else:
            # Only the labels that changed move; the others stay where they are. Their
            # costs before the other labels count are worked out together.
            changed = [label for label in shown
                       if keys[id(label)] != self._label_keys.get(id(label))]
            for label, (rects, cost) in zip(changed, self._candidates_costed(
                    changed, transform, area) if changed else [], strict=True):
                others = [rect for key, rect in self._rects.items() if key != id(label)]
                self._rects[id(label)] = self._choose(rects, cost, others)
        self._label_keys = keys
        self._drawn = {id(label): (*self._rects[id(label)], label.text, label.color.rgba())
                       for label in shown}
        return full

    @property
    def _placed(self) -> list[tuple[float, float] | None]:
        """Where each label was last drawn (top-left pixel corner), None when hidden."""
        return [self._rects[id(label)][:2] if id(label) in self._rects
                and label.visible and label.text else None for label in self.labels]


def _overlaps(rects: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(R, O) booleans: rectangles (left, top, right, bottom) that overlap."""
    return ((rects[:, None, 0] < others[None, :, 2]) & (others[None, :, 0] < rects[:, None, 2])
            & (rects[:, None, 1] < others[None, :, 3]) & (others[None, :, 1] < rects[:, None, 3]))
