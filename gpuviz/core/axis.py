"""The axis of every gpuviz plot: pyqtgraph's AxisItem with less Python per change.

A plot whose range changes re-draws its axes. pyqtgraph's AxisItem spends 1-2 ms of
Python on that (tick positions, a text measurement per label, the title's HTML set again
for the SI prefix), which was the slowest part of most updates that moved an axis. This
subclass draws the same ticks and labels (same values, strings, positions and pens),
measuring each label once, and re-lays out the title only when its text changes. One
difference: a bottom axis drops labels that would touch (`thin_tick_labels`). It
supports what the figures use: left and bottom axes, computed or explicit (`setTicks`)
ticks, no pyqtgraph grid (GridPlotWidget paints the grid).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen, QStaticText

from gpuviz.core.model import format_g, signed, superscript
from gpuviz.core.text import laid_out

LABEL_FLAGS = {
    "left": Qt.AlignRight | Qt.AlignVCenter | Qt.TextDontClip,
    "bottom": Qt.AlignHCenter | Qt.AlignTop | Qt.TextDontClip,
}


def thin_tick_labels(specs: tuple | None, vertical: bool = False) -> tuple | None:
    """An axis's draw specs (axis line, ticks, labels) with the labels thinned to every
    k-th one, the smallest k that leaves room between neighbours: half a line beside each
    other on a horizontal axis, a line from one to the next on a vertical one (closer,
    the lane names of a crowded timeline ran together: the l of each "slot" joined into
    one bar). pyqtgraph thins the labels of the ticks it picks itself, but
    draws every label of ticks set with `setTicks` (decades on a log axis, lane names)
    however small the plot. Runs only when the axis is redrawn (a new range, size or
    ticks)."""
    if specs is None or len(specs[2]) < 2:
        return specs
    axis_spec, tick_specs, text_specs = specs
    # Each label's extent along the axis. A label's rectangle is 0.8 of its line
    # (pyqtgraph's measure): a quarter of it between two rectangles puts them a line
    # apart.
    if vertical:
        texts = sorted(text_specs, key=lambda spec: spec[0].center().y())
        spans = [(rect.top(), rect.bottom()) for rect, *_ in texts]
        gap = 0.25 * texts[0][0].height()
    else:
        texts = sorted(text_specs, key=lambda spec: spec[0].center().x())
        spans = [(rect.left(), rect.right()) for rect, *_ in texts]
        gap = 0.5 * texts[0][0].height()
    for step in range(1, len(texts)):
        kept = spans[::step]
        if all(b[0] - a[1] >= gap for a, b in zip(kept, kept[1:], strict=False)):
            return axis_spec, tick_specs, texts[::step]
    return axis_spec, tick_specs, texts[:1]


class _Drawing(NamedTuple):
    """What an axis draws: lines (pen, from, to), labels placed (top left, laid-out text)
    and the clip for the labels. Held where pyqtgraph keeps its picture."""

    lines: list[tuple[QPen, QPointF, QPointF]]
    texts: list[tuple[QPointF, QStaticText]]
    clip: QRect


class Axis(pg.AxisItem):
    ticks_set = Signal()  # setTicks was called (GridPlotWidget redraws its grid)

    def __init__(self, orientation: str) -> None:
        self._label_html: str | None = None
        self._ticks_key: tuple[float, float, float] | None = None
        self._ticks: list = []
        self._text_sizes: dict[str, tuple[float, float]] = {}
        self._metrics_font: object = None
        self._static_texts: dict[str, tuple[QStaticText, float, float]] = {}
        self._static_font: QFont | None = None
        super().__init__(orientation)

    def setTicks(self, ticks: list | None) -> None:  # noqa: N802
        super().setTicks(ticks)
        self.ticks_set.emit()

    def set_fonts(self, tick_font: QFont, title_size: str) -> None:
        """The tick labels' font and the title's size (CSS, "13.5pt"), set at build and
        on a look change; the room kept for tick labels starts again from pyqtgraph's
        default, as on a plot built in this look."""
        if self.style["tickFont"] is not None and tick_font == self.style["tickFont"] and (
                self.labelStyle.get("font-size") == title_size):
            return
        old = self.style["tickFont"]
        if old is not None and self.fixedWidth is not None and old.pointSizeF() > 0:
            # A width a view fixed for its tick labels grows with them.
            self.setWidth(round(self.fixedWidth * tick_font.pointSizeF() / old.pointSizeF()))
        self.setTickFont(tick_font)
        self.labelStyle["font-size"] = title_size
        self.textWidth, self.textHeight = 30, 18  # pyqtgraph's starting room
        self._label_html = None
        self._updateLabel()
        self._updateWidth() if self.orientation in ("left", "right") else self._updateHeight()

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:  # noqa: N802, N803
        # The grid asks for the same ticks as the axis: compute them once per range.
        key = (minVal, maxVal, size)
        if key != self._ticks_key:
            self._ticks_key = key
            self._ticks = self._linear_ticks(minVal, maxVal, size)
        return self._ticks

    def _linear_ticks(self, min_value: float, max_value: float, size: float) -> list:
        """pyqtgraph's tick values for one level of linear ticks (the figures' axes), in
        plain Python: its numpy version costs more than the few ticks it makes. The same
        arithmetic, so the same values; other axes are pyqtgraph's."""
        low, high = sorted((min_value, max_value))
        low, high = low * self.scale, high * self.scale
        levels = self.tickSpacing(low, high, size)
        if self.logMode or len(levels) != 1:
            return super().tickValues(min_value, max_value, size)
        spacing, offset = levels[0]
        start = math.ceil((low - offset) / spacing) * spacing + offset
        count = int((high - start) / spacing) + 1
        return [(spacing / self.scale,
                 [(i * spacing + start) / self.scale for i in range(count)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        # pyqtgraph's strings in the figures' number style: true minus, ×10ⁿ for e+NN,
        # and on an axis that reaches 10,000 thousands separators ("5,000", "400,000", as
        # the readouts write them; "2000" stays on an axis that ends there).
        strings = super().tickStrings(values, scale, spacing)
        wide = any(s.lstrip("-").isdigit() and abs(int(s)) >= 10_000 for s in strings)
        return [format_g(float(s)) if "e" in s else
                signed(f"{int(s):,}") if wide and s.lstrip("-").isdigit() else signed(s)
                for s in strings]

    def labelString(self) -> str:  # noqa: N802
        # pyqtgraph writes the scale of a unitless axis as "(x1e+06)".
        if self.labelUnits == "" and self.autoSIPrefix and self.autoSIPrefixScale != 1.0:
            exponent = round(-math.log10(self.autoSIPrefixScale))
            style = ";".join(f"{k}: {v}" for k, v in self.labelStyle.items())
            return f"<span style='{style}'>{self.labelText} (×10{superscript(exponent)})</span>"
        return super().labelString()

    def length_in_pixels(self) -> float:
        """The axis length pyqtgraph uses to space the ticks (one pixel past each end)."""
        rect = self.mapRectToDevice(self.mapRectFromParent(self.geometry()))
        if rect is None:
            return 0.0
        return (rect.height() if self.orientation == "left" else rect.width()) + 2.0

    def major_tick_values(self) -> list[float]:
        """The values of the labelled (first-level) ticks at the current range."""
        if self._tickLevels:
            return [value for value, _ in self._tickLevels[0]]
        levels = self.tickValues(self.range[0], self.range[1], self.length_in_pixels())
        return list(levels[0][1]) if levels else []

    def _updateLabel(self) -> None:  # noqa: N802
        html = self.labelString()
        if html != self._label_html:
            self._label_html = html
            self.label.setHtml(html)
            self._adjustSize()
        self.picture = None
        self.update()

    def _text_size(self, text: str) -> tuple[float, float]:
        """Width and height of a tick label, as pyqtgraph measures it (height × 0.8)."""
        font = self.style["tickFont"]
        if font is not self._metrics_font:
            self._metrics_font = font
            self._text_sizes.clear()
        size = self._text_sizes.get(text)
        if size is None:
            metrics = QFontMetricsF(font) if font is not None else QFontMetricsF(self.font())
            box = metrics.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignCenter, text)
            size = self._text_sizes[text] = (box.width(), box.height() * 0.8)
        return size

    def paint(self, p: QPainter, *args: object) -> None:
        """What pyqtgraph draws, straight to the painter with each label laid out once
        (QStaticText): pyqtgraph records a QPicture and plays it back, laying every label
        out on both passes. What to draw is kept where pyqtgraph keeps its picture
        (`self.picture`, which it clears whenever the axis changes: range, size, ticks,
        style), so a repaint that only passes over the axis replays a few lines and
        texts. No pixmap cache: a range that moves would fill, draw and blend the pixmap
        on every change, which cost more than drawing (12.1 at 1920x1080: 0.5 ms less
        per change that moves its three plots)."""
        p.save()
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        if self.picture is None:
            self.picture = self._drawing(p)
        drawing = self.picture
        if drawing.lines:
            p.setRenderHint(QPainter.Antialiasing, False)
            p.setRenderHint(QPainter.TextAntialiasing, True)
            for pen, a, b in drawing.lines:
                p.setPen(pen)
                p.drawLine(a, b)
            p.setPen(self.textPen())
            p.setClipRect(drawing.clip)
            for point, static in drawing.texts:
                p.drawStaticText(point, static)
        p.restore()

    def _drawing(self, p: QPainter) -> _Drawing:
        """The lines and placed labels of the current draw specs."""
        specs = self.generateDrawSpecs(p)
        if specs is None:
            return _Drawing([], [], QRect())
        (axis_pen, start, end), tick_specs, text_specs = specs
        texts = []
        font = p.font()
        alignments: dict[object, tuple[bool, bool, bool]] = {}  # Qt flag tests are slow
        for rect, flags, text in text_specs:
            static, width, height = self._static_text(text, font)
            align = alignments.get(flags)
            if align is None:
                align = alignments[flags] = (bool(flags & Qt.AlignRight),
                                             bool(flags & Qt.AlignHCenter),
                                             bool(flags & Qt.AlignVCenter))
            right, h_centre, v_centre = align
            x = (rect.right() - width if right else
                 rect.center().x() - width / 2 if h_centre else rect.left())
            y = rect.center().y() - height / 2 if v_centre else rect.top()
            texts.append((QPointF(x, y), static))
        return _Drawing([(axis_pen, start, end), *tick_specs], texts,
                        self.boundingRect().toAlignedRect())

    def _static_text(self, text: str, font: QFont) -> tuple[QStaticText, float, float]:
        if font != self._static_font:
            self._static_font = QFont(font)
            self._static_texts.clear()
        found = self._static_texts.get(text)
        if found is None:
            static = laid_out(text, font)
            size = static.size()
            found = self._static_texts[text] = (static, size.width(), size.height())
        return found

    def generateDrawSpecs(self, p: QPainter) -> tuple | None:  # noqa: N802
        specs = self._draw_specs(p)
        return thin_tick_labels(specs, vertical=self.orientation != "bottom")

    def _draw_specs(self, p: QPainter) -> tuple | None:
        if self.orientation not in LABEL_FLAGS or self.grid is not False:
            return super().generateDrawSpecs(p)
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        bounds = self.mapRectFromParent(self.geometry())
        vertical = self.orientation == "left"
        if vertical:
            start = QPointF(bounds.right() - 1, bounds.top() - 1)
            end = QPointF(bounds.right() - 1, bounds.bottom() + 1)
            tick_stop, tick_dir = bounds.right(), -1.0
        else:
            start = QPointF(bounds.left() - 1, bounds.top() + 1)
            end = QPointF(bounds.right() + 1, bounds.top() + 1)
            tick_stop, tick_dir = bounds.top(), 1.0
        length = self.length_in_pixels()
        if length <= 2.0:
            return None

        if self._tickLevels is None:
            levels = self.tickValues(self.range[0], self.range[1], length)
            strings_by_level: list[list[str]] | None = None
        else:
            levels = [(None, [value for value, _ in level]) for level in self._tickLevels]
            strings_by_level = [[text for _, text in level] for level in self._tickLevels]

        low, high = self.range
        span = high - low
        if span == 0:
            scale, offset = 1.0, 0.0
        elif vertical:
            scale = -bounds.height() / span
            offset = low * scale - bounds.height()
        else:
            scale = bounds.width() / span
            offset = low * scale
        ends = sorted((low * scale - offset, high * scale - offset))

        base_pen = self.tickPen()
        tick_specs, positions = [], []
        for i, (_, values) in enumerate(levels):
            tick_length = self.style["tickLength"] / (i * 0.5 + 1.0)
            alpha = self.style["tickAlpha"]
            alpha = 255 / (i + 1) if alpha is None else (
                min(255, max(0, round(alpha * 255))) if isinstance(alpha, float) else alpha)
            tick_pen = base_pen
            if base_pen.brush().style() == Qt.SolidPattern:
                tick_pen = QPen(base_pen)
                color = QColor(tick_pen.color())
                color.setAlpha(int(alpha))
                tick_pen.setColor(color)
            level_positions = []
            for value in values:
                x = value * scale - offset
                if x < ends[0] or x > ends[1]:
                    level_positions.append(None)
                    continue
                level_positions.append(x)
                if vertical:
                    tick_specs.append((tick_pen, QPointF(tick_stop, x),
                                       QPointF(tick_stop + tick_length * tick_dir, x)))
                else:
                    tick_specs.append((tick_pen, QPointF(x, tick_stop),
                                       QPointF(x, tick_stop + tick_length * tick_dir)))
            positions.append(level_positions)
        axis_spec = (self.pen(), start, end)
        if not self.style["showValues"]:
            return axis_spec, tick_specs, []

        flags = LABEL_FLAGS[self.orientation]
        gap = max(0, self.style["tickLength"]) + self.style["tickTextOffset"][
            0 if vertical else 1]
        own = self.boundingRect()
        text_specs, widest, across, along = [], 0.0, 0.0, 0.0
        for i in range(min(len(levels), self.style["maxTextLevel"] + 1)):
            spacing, values = levels[i]
            strings = (strings_by_level[i] if strings_by_level is not None else
                       self.tickStrings(values, self.autoSIPrefixScale * self.scale, spacing))
            if not strings:
                continue
            sized = [(text, x, self._text_size(text)) for text, x in
                     zip(strings, positions[i], strict=False) if x is not None]
            for _, _, (width, height) in sized:
                along += height if vertical else width
                across = max(across, width if vertical else height)
            # Lower levels are labelled only while the labels fill little of the axis.
            if i > 0 and any(len(text_specs) >= count and along / length >= limit
                             for count, limit in self.style["textFillLimits"]):
                break
            widest = across
            for text, x, (width, height) in sized:
                if vertical:
                    rect = QRectF(tick_stop - gap - width, x - height / 2, width, height)
                else:
                    rect = QRectF(x - width / 2, tick_stop + gap, width, height)
                if own & rect == rect:
                    text_specs.append((rect, flags, text))
        self._updateMaxTextSize(widest)
        return axis_spec, tick_specs, text_specs
