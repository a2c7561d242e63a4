"""Legend: the one legend style, painted in one call."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen, QStaticText
from PySide6.QtWidgets import QGraphicsItem

from gpuviz import theme
from gpuviz.core.plots.look import device_ratio, hatch_brush, hatched_by_default, pixel_size
from gpuviz.core.text import laid_out


class Legend(pg.GraphicsObject):
    """The one legend style: a swatch beside each label, on a panel inside a corner of a
    plot or diagram, unscaled by the view. Swatches match what they explain: a filled box
    (hatched for idle, as CellGrid hatches it; outlined when the cells are), a line in the
    curve's pen, or a dot. Painted in one call; built once, placed again on resize.

        legend = Legend(box, anchor=(1, 0))      # top right corner of the view box
        legend.add_box("busy", theme.color("compute"))
        legend.add_line("fused", pen("onchip", 2.5))
    """

    def __init__(self, view: pg.ViewBox | pg.PlotItem, anchor: tuple[float, float] = (1, 0),
                 columns: int = 1, size: float = 9, offset: float = 6,
                 at: tuple[float, float] | None = None) -> None:
        """anchor: the corner of the view box it sits in (0 left/top, 1 right/bottom);
        or, with `at`, the point of the legend (same convention) placed at that data
        point, so it stays next to what it explains when the view is resized."""
        super().__init__()
        box = view.getViewBox() if isinstance(view, pg.PlotItem) else view
        self.setParentItem(box)
        self.setZValue(1000)
        # Kept as a pixmap: a new view range repaints the whole plot, the legend with it,
        # and a copy is cheaper than its rows painted again.
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self._box = box
        self._anchor = anchor
        self._columns = max(1, columns)
        self._offset = offset
        self._at = at
        self._font_size = size
        self._font = theme.font(size)
        self._metrics = QFontMetricsF(self._font)
        self._rows: list[tuple[str, str, object, dict]] = []
        self._statics: list[QStaticText] = []
        self._size = (0.0, 0.0)
        self._cells: list[QRectF] = []
        box.sigResized.connect(self._resized)
        if at is not None:
            box.sigTransformChanged.connect(self._place)

    def add_box(self, label: str, fill: QColor, hatch: bool | None = None,
                outline: QColor | None = None, height: float = 1.0) -> Legend:
        """height: the swatch's share of a full one, for bars drawn thinner."""
        hatch = hatched_by_default(fill) if hatch is None else hatch
        return self._add(label, "box", fill, {"hatch": hatch, "outline": outline,
                                              "height": height})

    def add_line(self, label: str, qpen: QPen) -> Legend:
        return self._add(label, "line", QPen(qpen), {})

    def add_dot(self, label: str, fill: QColor, outline: QColor | None = None) -> Legend:
        return self._add(label, "dot", fill, {"outline": outline})

    def clear(self) -> None:
        self._rows.clear()
        self._lay_out()

    def set_anchor(self, anchor: tuple[float, float]) -> None:
        """Move the legend to another corner (as `anchor` in the constructor): out of the
        way of what the data put in its corner."""
        if anchor != self._anchor:
            self._anchor = anchor
            self._place()

    def set_at(self, at: tuple[float, float]) -> None:
        """Move the legend to another data point (see `at`)."""
        if at != self._at:
            if self._at is None:
                self._box.sigTransformChanged.connect(self._place)
            self._at = at
            self._place()

    def set_label(self, index: int, label: str) -> None:
        """Another label for row `index` (its swatch stays)."""
        if self._rows[index][0] != label:
            self._rows[index] = (label, *self._rows[index][1:])
            self._lay_out()

    def labels(self) -> list[str]:
        return [row[0] for row in self._rows]

    def apply_look(self) -> None:
        """Take the current look's font size (the rows are laid out again)."""
        self._font = theme.font(self._font_size)
        self._metrics = QFontMetricsF(self._font)
        self._lay_out()

    def text_sizes(self) -> list[tuple[str, float]]:
        """Every label drawn, with its font's pixel size (for tests)."""
        return [(label, pixel_size(self._font)) for label in self.labels()]

    def end_with_room(self, low: float, high: float, beyond_px: float = 0.0) -> float:
        """The end of a range from `low` to `high` (data along the legend's side of the
        view) extended so the legend fits past `high` without covering the data, nor
        `beyond_px` pixels drawn past `high` (labels over the tallest bars); call it
        again when the view box is resized (sigResized)."""
        length = self._box.height() if self._anchor[1] in (0, 1) else self._box.width()
        share = (self._size[1] + 2 * self._offset + beyond_px) / max(length, 1.0)
        return low + (high - low) / max(1.0 - share, 0.5)

    def _add(self, label: str, kind: str, style: object, opts: dict) -> Legend:
        self._rows.append((label, kind, style, opts))
        self._lay_out()
        return self

    def _swatch_size(self) -> float:
        return self._metrics.height()

    def _lay_out(self) -> None:
        """Rows fill `columns` columns, left to right then down; each cell is a swatch, a
        gap and the label."""
        self.prepareGeometryChange()
        self._statics = []
        height = self._metrics.height()
        swatch = self._swatch_size()
        pad = height / 3
        widths = []
        for label, *_ in self._rows:
            static = laid_out(label, self._font)
            self._statics.append(static)
            widths.append(swatch * 1.6 + pad + static.size().width())
        # As many of the asked-for columns as fit the view's width (a lecture-size font
        # needs more rows, not a legend cut at the edge).
        room = self._box.width() - 2 * self._offset
        if self._at is not None:  # from its point to the far edge (3.3's was cut there)
            point = self._box.mapFromViewToItem(self._box, QPointF(*self._at)).x()
            room = (self._box.width() - point if self._anchor[0] < 0.5 else point) \
                - self._offset
        columns = min(self._columns, max(1, len(self._rows)))
        col_widths = [max(widths[c::columns], default=0.0) for c in range(columns)]
        while columns > 1 and room > 0 and sum(col_widths) + 2 * pad * columns > room:
            columns -= 1
            col_widths = [max(widths[c::columns], default=0.0) for c in range(columns)]
        self._cells = []
        for index in range(len(self._rows)):
            column, row = index % columns, index // columns
            x = pad + sum(col_widths[:column]) + column * 2 * pad
            self._cells.append(QRectF(x, pad + row * height * 1.25, col_widths[column],
                                      height))
        rows = -(-len(self._rows) // columns)
        self._size = (sum(col_widths) + 2 * pad * columns,
                      2 * pad + rows * height * 1.25 - height * 0.25) if rows else (0.0, 0.0)
        self._place()
        self.update()

    def _resized(self) -> None:
        if self._columns > 1 and len(self._rows) > 1:
            self._lay_out()  # the number of columns that fit may change
        else:
            self._place()

    def _place(self) -> None:
        width, height = self._size
        ax, ay = self._anchor
        if self._at is not None:
            point = self._box.mapFromViewToItem(self._box, QPointF(*self._at))
            x, y = point.x() - ax * width, point.y() - ay * height
        else:
            area = self._box.rect()
            x = area.left() + self._offset + ax * (area.width() - width - 2 * self._offset)
            y = area.top() + self._offset + ay * (area.height() - height - 2 * self._offset)
        # On whole pixels of the scene (the view box may sit at a fraction of one): the
        # pixmap cache is copied where it was painted, and one painted at another
        # fraction drew the text a pixel off.
        corner = self._box.mapToScene(QPointF(x, y))
        self.setPos(self._box.mapFromScene(QPointF(round(corner.x()), round(corner.y()))))

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt naming
        return QRectF(0, 0, *self._size)

    def paint(self, painter: QPainter, *args: object) -> None:
        if not self._rows:
            return
        painter.setPen(QPen(theme.color("grid"), 1))
        painter.setBrush(theme.color("panel", 230))
        painter.drawRect(self.boundingRect().adjusted(0.5, 0.5, -0.5, -0.5))
        painter.setFont(self._font)
        swatch = self._swatch_size()
        for (_, kind, style, opts), cell, static in zip(self._rows, self._cells,
                                                        self._statics, strict=True):
            sample = QRectF(cell.left(), cell.top() + swatch * 0.1, swatch * 1.6,
                            swatch * 0.8)
            if kind == "box":
                shrink = sample.height() * (1 - opts["height"]) / 2
                sample = sample.adjusted(0, shrink, 0, -shrink)
                painter.setPen(Qt.NoPen)
                painter.setBrush(style)
                painter.drawRect(sample)
                if opts["hatch"]:
                    # Saved and restored: at a device pixel ratio of 2 the texture brush
                    # left behind made the raster engine drop the next rows' labels.
                    painter.save()
                    # The item's pixmap cache paints at ratio 2 through the device
                    # transform (its device reports 1): `device_ratio` reads it.
                    painter.setBrush(hatch_brush(style, ratio=device_ratio(painter)))
                    painter.drawRect(sample)
                    painter.restore()
                if opts["outline"] is not None:
                    qpen = QPen(opts["outline"], theme.line_width(1.5))
                    painter.setPen(qpen)
                    painter.setBrush(Qt.NoBrush)
                    painter.drawRect(sample.adjusted(1, 1, -1, -1))
            elif kind == "line":
                painter.setPen(_showing_its_dashes(style, sample.width()))
                middle = sample.center().y()
                painter.drawLine(QLineF(sample.left(), middle, sample.right(), middle))
            else:
                painter.setPen(QPen(opts["outline"]) if opts["outline"] is not None
                               else Qt.NoPen)
                painter.setBrush(style)
                radius = swatch * 0.35
                painter.drawEllipse(sample.center(), radius, radius)
            painter.setPen(theme.color("text"))
            painter.drawStaticText(QPointF(sample.right() + swatch * 0.4, cell.top()), static)


def _showing_its_dashes(qpen: QPen, length: float) -> QPen:
    """`qpen`, its dashes shortened where a swatch `length` pixels long would not show two
    of them with the gap between (9.3's thick dashed InfiniBand line read as one solid
    stroke in its legend): two dashes and a gap fill the swatch, with flat ends, as a
    round cap would fill the shortened gap."""
    if qpen.style() in (Qt.SolidLine, Qt.NoPen):
        return qpen
    pattern = qpen.dashPattern()  # dash, gap, ... in pen widths
    two_dashes = (2 * pattern[0] + pattern[1]) * max(qpen.widthF(), 1.0)
    if two_dashes <= length:
        return qpen
    shown = QPen(qpen)
    shown.setCapStyle(Qt.FlatCap)
    shown.setDashPattern([part * length / two_dashes for part in pattern])
    return shown
