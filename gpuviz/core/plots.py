"""pyqtgraph pieces shared by the figures: themed plots, diagram canvases, CellGrid (one
graphics item that paints any number of coloured cells in a single paint() call), and
stand-ins for pyqtgraph items that run Python on every repaint (TextItem, ScatterPlotItem,
InfiniteLine, PlotDataItem): `text_item`, `Dots`, `Segment`, `curve` (a `Curve`).
Their setters do nothing when nothing changed, so a refresh repaints only what moved."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import renderSymbol
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
    QStaticText,
    QTransform,
)
from PySide6.QtWidgets import (
    QAbstractGraphicsShapeItem,
    QApplication,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPathItem,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
)

from gpuviz import theme
from gpuviz.core.axis import Axis
from gpuviz.core.text import PixelText, TextLayer

pg.setConfigOptions(antialias=False)

AXIS_TITLE_POINTS = 10  # point size of the axis titles, before the theme's scale
TICK_POINTS = 9  # point size of the tick labels, before the theme's scale


def _apply_theme_defaults() -> None:
    current = theme.current()
    pg.setConfigOptions(background=current.background, foreground=current.text)


class GridPlotWidget(pg.PlotWidget):
    """A PlotWidget that paints its grid into the view's cached background.

    pyqtgraph draws grid lines as part of each axis, so every repaint of the plot blends
    two translucent plot-sized axis images; in the background cache the grid costs one
    opaque copy (1-2 ms less per update, measured on 1.3, 2.1, 3.1 and 4.4). The cache is
    redrawn when the view range, the ticks, the plot area or the widget size change. Views call
    `getPlotItem().showGrid(x, y, alpha)` as usual."""

    def __init__(self) -> None:
        super().__init__(axisItems={name: Axis(name) for name in ("left", "bottom")})
        self._grid = {"bottom": 0.0, "left": 0.0}
        item = self.getPlotItem()
        item.showGrid = self.show_grid
        box = item.getViewBox()
        box.sigRangeChanged.connect(self._redraw_grid)
        box.geometryChanged.connect(self.resetCachedContent)  # e.g. wider tick labels
        for name in self._grid:
            axis = item.getAxis(name)
            set_ticks = axis.setTicks

            def set_ticks_and_redraw(ticks, _set=set_ticks) -> None:  # noqa: ANN001
                _set(ticks)
                self._redraw_grid()

            axis.setTicks = set_ticks_and_redraw

    def show_grid(self, x: bool | None = None, y: bool | None = None,
                  alpha: float | None = None) -> None:
        strength = 0.25 if alpha is None else alpha
        if x is not None:
            self._grid["bottom"] = strength if x else 0.0
        if y is not None:
            self._grid["left"] = strength if y else 0.0
        self.resetCachedContent()

    def _redraw_grid(self) -> None:
        """The grid moved with the view range: redraw the plot area's background in the
        same repaint as the items (resetCachedContent asked for a repaint of its own, so
        a range change painted the plot twice)."""
        box = self.getPlotItem().getViewBox()
        self.scene().invalidate(box.sceneBoundingRect(), QGraphicsScene.BackgroundLayer)

    def resizeEvent(self, event) -> None:  # noqa: ANN001, N802
        super().resizeEvent(event)
        self.resetCachedContent()

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802
        super().drawBackground(painter, rect)
        box = self.getPlotItem().getViewBox()
        area = box.sceneBoundingRect()
        ranges = dict(zip(("bottom", "left"), box.viewRange(), strict=True))
        for name, strength in self._grid.items():
            if strength:
                painter.setPen(QPen(theme.color("text", int(127 * strength)), 0))
                painter.drawLines(self._grid_lines(name, ranges[name], box, area))

    def _grid_lines(self, name: str, view_range: list[float], box: pg.ViewBox,
                    area: QRectF) -> list[QLineF]:
        """Lines at the axis's major ticks (or its explicit ticks), in scene coordinates."""
        axis = self.getPlotItem().getAxis(name)
        horizontal = name == "bottom"
        low, high = sorted(view_range)
        values = axis.major_tick_values()  # the axis's own ticks, computed once per range
        lines = []
        for value in values:
            if low <= value <= high:
                point = box.mapViewToScene(QPointF(value, value))
                lines.append(QLineF(point.x(), area.top(), point.x(), area.bottom())
                             if horizontal else
                             QLineF(area.left(), point.y(), area.right(), point.y()))
        return lines


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
        # An axis changes only when its range does: keep it as a pixmap instead of
        # replaying its drawing whenever a curve in front of it moves.
        axis.setCacheMode(pg.QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
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
                found += [(label.text, _pixel_size(label.font)) for label in item.labels
                          if label.visible and label.text]
            elif isinstance(item, pg.AxisItem):
                if item.style["showValues"] and item.style["tickFont"] is not None:
                    found.append((f"<{item.orientation} ticks>",
                                  _pixel_size(item.style["tickFont"])))
                if item.label.isVisible() and item.labelText:
                    found.append((item.labelText, _css_pixels(item.labelStyle)))
            elif isinstance(item, pg.LabelItem):
                if item.text:
                    found.append((item.text, _css_pixels(item.opts)))
            elif isinstance(item, QGraphicsSimpleTextItem):
                if item.text():
                    found.append((item.text(), _pixel_size(item.font()) * item.scale()))
            elif isinstance(item, QGraphicsTextItem) and not isinstance(
                    item.parentItem(), (pg.AxisItem, pg.LabelItem)) and item.toPlainText():
                found.append((item.toPlainText(), _pixel_size(item.font()) * item.scale()))
    return found


def _css_pixels(style: dict) -> float:
    size = style.get("font-size") or style.get("size")
    if isinstance(size, str) and size.endswith("pt"):
        return float(size[:-2]) * 96 / 72
    if isinstance(size, str) and size.endswith("px"):
        return float(size[:-2])
    return _pixel_size(QApplication.font())


def _scale_pen(item: QGraphicsItem, ratio: float) -> None:
    if isinstance(item, (QAbstractGraphicsShapeItem, QGraphicsLineItem)):
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


def opaque_blend(role: str, alpha: int, under: str = "background") -> QColor:
    """The opaque colour that `role` at `alpha` shows over the plain `under` colour:
    identical on screen, but filled without blending."""
    top, bottom = theme.color(role), theme.color(under)
    a = alpha / 255
    return QColor(*(round(a * t + (1 - a) * b) for t, b in
                    ((top.red(), bottom.red()), (top.green(), bottom.green()),
                     (top.blue(), bottom.blue()))))


HEAT_LEVELS = 24
HEAT_FLOOR = 24  # alpha of the palest shade


def heat_colors(values: np.ndarray, top: float, role: str,
                levels: int = HEAT_LEVELS) -> list[QColor]:
    """Fills for a heat map: each value's share of `top` (clipped to 0..1) picks one of
    `levels` opaque shades from the background to the role's colour. Few distinct
    colours keep CellGrid's paint to a few fill groups."""
    shade = np.clip(np.asarray(values, dtype=float).ravel() / top if top > 0 else 0.0,
                    0.0, 1.0)
    index = np.rint(shade * (levels - 1)).astype(int)
    palette = _heat_palette(role, levels, theme.current().name)
    return [palette[i] for i in index.tolist()]


@functools.cache
def _heat_palette(role: str, levels: int, theme_name: str) -> tuple[QColor, ...]:
    # theme_name is part of the key: a new look gets its own shades. The palest shade
    # keeps a tint, so a zero cell still shows as a cell on the background.
    low = HEAT_FLOOR
    return tuple(opaque_blend(role, round(low + (255 - low) * i / (levels - 1)))
                 for i in range(levels))


def text_item(text: str = "", role: str = "text", size: float | None = 10, bold: bool = False,
              anchor: tuple[float, float] = (0, 0)) -> PixelText:
    """A plot label placed like pg.TextItem but painted by Qt alone (see gpuviz.core.text)."""
    return PixelText(text, role, size, bold, anchor)


HATCH_ALPHA = 130  # of the hatch lines over their fill


UNTOUCHED_ALPHA = 60  # of the neutral grey over the background, for data not yet touched


def untouched() -> QColor:
    """The one fill of cells that nothing has read or written yet (3.2, 3.3, 4.2...)."""
    return opaque_blend("neutral", UNTOUCHED_ALPHA)


def hatched_by_default(fill: QColor | None) -> bool:
    """Whether a cell of this fill is hatched when the caller does not say: idle hardware
    is, in every figure, so it reads as idle in greyscale and for colour-blind viewers."""
    return fill is not None and fill.rgb() == theme.color("idle").rgb()


def hatch_brush(fill: QColor, ink: QColor | None = None) -> QBrush:
    """Diagonal hatching over `fill`, in device pixels (its spacing does not change with the
    zoom): lines in `ink`, by default the text or background colour, whichever contrasts
    with the fill."""
    ink = theme.readable_on(fill) if ink is None else ink
    return _hatch_brush(theme.current().name, ink.rgb(), max(1.0, theme.line_width(0.6)))


_HATCHES: dict[tuple, QBrush] = {}


def _hatch_brush(look: str, ink: int, width: float) -> QBrush:
    key = (look, ink, width)
    if key not in _HATCHES:
        step = max(6, round(6 * width))  # one line every `step` pixels, along both axes
        pixmap = QPixmap(step, step)
        pixmap.fill(Qt.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.Antialiasing, True)
        color = QColor(ink)
        color.setAlpha(HATCH_ALPHA)
        painter.setPen(QPen(color, max(1.0, width)))
        # "/" lines; the copies one tile left and right keep the seams joined.
        for shift in (-step, 0, step):
            painter.drawLine(QLineF(shift, step, shift + step, 0))
        painter.end()
        _HATCHES[key] = QBrush(pixmap)
    return _HATCHES[key]


class CellGrid(pg.GraphicsObject):
    """Rectangles with fills, optional outlines and optional centred text, all painted in
    one call. Update with `set_cells`; click a cell to get `clicked(index)`.

    Idle cells (filled with the idle role) are hatched unless `hatch` says otherwise, and
    so is any cell `hatch` marks (waste); cell texts take the text or background colour,
    whichever reads on their fill, unless a `text_color` is given. A text wider or taller
    than its cell is left out rather than clipped or spilled over its neighbours.

    One-line cell texts are cached as laid-out QStaticTexts placed with numpy: drawText
    lays a string out again on every call (about 25 µs each), milliseconds for a labelled
    grid. Texts of several lines (a few titles) still go through drawText.
"""

    clicked = Signal(int)
    clicked_at = Signal(QPointF)  # the point clicked in data units, whatever it hit

    def __init__(self, font_size: float = 8.0, fit_texts: bool = True) -> None:
        """fit_texts=False: draw every text even where it overflows its cell (labels
        with no fill beside a grid, whose cells only place them)."""
        super().__init__()
        self._fit_texts = fit_texts
        self._rects: list[QRectF] = []
        self._array = np.zeros((0, 4))
        self._fill_groups: list[tuple[QColor, list[QRectF]]] = []
        self._hatch_groups: list[tuple[QBrush, np.ndarray]] = []
        self._text_inks: list[QColor] = []
        self._outline_groups: list[tuple[QColor, list[QRectF]]] = []
        self._static: dict[str, tuple[QStaticText, float, float]] = {}
        self._text_rows = np.zeros(0, dtype=int)
        self._text_list: list[QStaticText] = []
        self._text_sizes = np.zeros((0, 2))
        self._multiline: list[tuple[QRectF, str, QColor]] = []
        self._bounds = QRectF()
        self._outline_width = 1.0
        self._outline_base = 1.0
        self._outline_style = Qt.SolidLine
        self._font_size = font_size
        self._font = theme.font(font_size)
        self._text_color: QColor | None = None
        self._texts: list[str] = []
        self._fills: list[QColor | None] = []

    def apply_look(self) -> None:
        """Take the current look's font and line sizes (the texts are laid out again)."""
        self._font = theme.font(self._font_size)
        self._static.clear()
        self._outline_width = theme.line_width(self._outline_base)
        self._lay_out_texts()
        self.update()

    def text_sizes(self) -> list[tuple[str, float]]:
        """Every cell text drawn, with its font's pixel size (for tests)."""
        return [(text, _pixel_size(self._font)) for text in self._texts if text]

    def set_cells(self, rects: np.ndarray, fills: Sequence[QColor | None],
                  outlines: Sequence[QColor | None] | None = None,
                  texts: Sequence[str] | None = None, outline_width: float = 1.5,
                  text_color: QColor | None = None,
                  outline_style: Qt.PenStyle = Qt.SolidLine,
                  hatch: Sequence[bool] | None = None,
                  hatch_ink: QColor | None = None) -> None:
        """rects: array (n, 4) of x, y, width, height in data units. outline_style dashes
        the outlines (Qt.DashLine), e.g. for cells being sent. hatch: which cells are
        hatched (default: those filled with the idle role), in `hatch_ink` (default: what
        contrasts with the fill). text_color: one colour for every text (default: per
        cell, the one that reads on its fill)."""
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
        if hatch is None:
            idle = theme.color("idle").rgb()
            hatch = [fill is not None and fill.rgb() == idle for fill in fills]
        hatched: dict[int, tuple[QColor, list[int]]] = {}
        for index, (fill, on) in enumerate(zip(fills, hatch, strict=True)):
            if on and fill is not None:
                hatched.setdefault(fill.rgba(), (fill, []))[1].append(index)
        self._hatch_groups = [(hatch_brush(fill, hatch_ink), self._array[rows])
                              for fill, rows in hatched.values()]
        self._outline_groups = _group(self._rects, outlines) if outlines is not None else []
        if texts is not None and len(texts) != len(self._rects):
            raise ValueError(f"{len(texts)} texts for {len(self._rects)} cells")
        self._texts = list(texts) if texts is not None else []
        self._fills = list(fills)
        self._text_color = text_color
        self._lay_out_texts()
        self._outline_base = outline_width
        self._outline_width = theme.line_width(outline_width)
        self._outline_style = outline_style
        self.update()

    def _lay_out_texts(self) -> None:
        texts = self._texts
        multiline = "\n" in "".join(texts)
        rows = [i for i, text in enumerate(texts) if text and not (multiline and "\n" in text)]
        self._text_rows = np.asarray(rows, dtype=int)
        static = self._prepare_texts({texts[i] for i in rows})
        entries = [static[texts[i]] for i in rows]
        self._text_list = [entry[0] for entry in entries]
        self._text_sizes = np.array([entry[1:] for entry in entries],
                                    dtype=float).reshape(-1, 2)
        lines = [i for i, text in enumerate(texts) if "\n" in text] if multiline else []
        fills, text_color = self._fills, self._text_color
        if text_color is not None:
            inks = [text_color] * len(texts)
        else:  # one ink per distinct fill
            background, by_fill = theme.color("background"), {}
            inks = []
            for fill in fills:
                key = fill.rgba() if fill is not None else None
                if key not in by_fill:
                    by_fill[key] = theme.readable_on(composite(fill, background))
                inks.append(by_fill[key])
        self._text_inks = [inks[i] for i in rows]
        self._multiline = [(self._rects[i], texts[i], inks[i]) for i in lines]

    def _prepare_texts(self, texts: set[str]) -> dict[str, tuple[QStaticText, float, float]]:
        """The cache of laid-out texts, holding every one of `texts`."""
        missing = texts.difference(self._static)
        if len(self._static) + len(missing) > 4096:  # texts that follow a slider
            self._static.clear()
            missing = texts
        for text in missing:
            static = QStaticText(text)
            static.setTextFormat(Qt.PlainText)
            static.prepare(QTransform(), self._font)
            size = static.size()
            self._static[text] = (static, size.width(), size.height())
        return self._static

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, *args: object) -> None:
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(Qt.NoPen)
        for fill, rects in self._fill_groups:
            painter.setBrush(fill)
            painter.drawRects(rects)
        if self._hatch_groups:
            self._paint_hatches(painter)
        painter.setBrush(Qt.NoBrush)
        for outline, rects in self._outline_groups:
            qpen = QPen(outline)
            qpen.setCosmetic(True)
            qpen.setWidthF(self._outline_width)
            qpen.setStyle(self._outline_style)
            painter.setPen(qpen)
            painter.drawRects(rects)
        if not self._text_list and not self._multiline:
            return
        # Text is drawn in device pixels so it keeps its size whatever the zoom. The view
        # only scales and translates: map all the cells in one go, centring each text
        # where drawText(rect, AlignCenter) puts it.
        t = painter.transform()
        cells = self._array[self._text_rows]
        x = t.m11() * (cells[:, 0] + cells[:, 2] / 2) + t.dx() - self._text_sizes[:, 0] / 2
        y = t.m22() * (cells[:, 1] + cells[:, 3] / 2) + t.dy() - self._text_sizes[:, 1] / 2
        # A text that does not fit its cell (in pixels, now) is left out, not clipped.
        if self._fit_texts:
            fits = ((self._text_sizes[:, 0] <= np.abs(t.m11() * cells[:, 2]) + 1)
                    & (self._text_sizes[:, 1] <= np.abs(t.m22() * cells[:, 3]) + 2)).tolist()
        else:
            fits = [True] * len(self._text_list)
        painter.save()
        painter.resetTransform()
        painter.setFont(self._font)
        draw = painter.drawStaticText
        ink = None
        for px, py, static, color, fit in zip(x.tolist(), y.tolist(), self._text_list,
                                              self._text_inks, fits, strict=True):
            if not fit:
                continue
            if color is not ink:
                ink = color
                painter.setPen(color)
            draw(QPointF(px, py), static)
        for rect, text, color in self._multiline:  # in the ink that reads on their fill
            painter.setPen(color)
            painter.drawText(t.mapRect(rect), Qt.AlignCenter, text)
        painter.restore()

    def _paint_hatches(self, painter: QPainter) -> None:
        """Hatching over the hatched cells, drawn in device pixels."""
        t = painter.transform()
        painter.save()
        painter.resetTransform()
        for hatching, cells in self._hatch_groups:
            x0 = t.m11() * cells[:, 0] + t.dx()
            y0 = t.m22() * cells[:, 1] + t.dy()
            x1 = t.m11() * (cells[:, 0] + cells[:, 2]) + t.dx()
            y1 = t.m22() * (cells[:, 1] + cells[:, 3]) + t.dy()
            painter.setBrush(hatching)
            painter.drawRects([QRectF(QPointF(a, b), QPointF(c, d)).normalized()
                               for a, b, c, d in zip(x0.tolist(), y0.tolist(), x1.tolist(),
                                                     y1.tolist(), strict=True)])
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
            self.clicked_at.emit(event.pos())


def composite(fill: QColor | None, under: QColor) -> QColor:
    """What a translucent fill looks like over `under` (the background when None)."""
    if fill is None:
        return under
    a = fill.alphaF()
    return QColor.fromRgbF(*(a * f + (1 - a) * u for f, u in
                             ((fill.redF(), under.redF()), (fill.greenF(), under.greenF()),
                              (fill.blueF(), under.blueF()))))


def _pixel_size(qfont: pg.QtGui.QFont) -> float:
    """A font's size in pixels (points at the screen's 96 dpi, as Qt's offscreen and X11
    screens have by default)."""
    return qfont.pixelSize() if qfont.pixelSize() > 0 else qfont.pointSizeF() * 96 / 72


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


class Dots:
    """Round markers `size` pixels across at data points: the very pixmap pyqtgraph's
    scatter plots draw for symbol "o", one Qt pixmap item per point, with no Python paint.
    Points that are not finite are hidden."""

    def __init__(self, view: pg.ViewBox | pg.PlotItem, count: int, size: float,
                 brushes: Sequence[QColor] | QColor, outline: QPen | None = None) -> None:
        if isinstance(brushes, QColor):
            brushes = [brushes] * count
        outline = outline if outline is not None else QPen(Qt.NoPen)
        self.items: list[QGraphicsPixmapItem] = []
        self._points: tuple = ()
        self._shown = True
        for fill in brushes:
            item = _Dot(size, outline, pg.mkBrush(fill))
            view.addItem(item)
            self.items.append(item)

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
    """One marker of Dots, drawn anew at the look's size."""

    def __init__(self, size: float, outline: QPen, fill: pg.QtGui.QBrush) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self._symbol = (size, outline, fill)
        self._drawn_at = 0.0
        self.apply_look()

    def apply_look(self) -> None:
        scale = theme.screen_scale()
        if scale != self._drawn_at:
            self._drawn_at = scale
            size, outline, fill = self._symbol
            image = renderSymbol("o", size * scale, outline, fill)
            self.setPixmap(QPixmap.fromImage(image))
            self.setOffset(-image.width() / 2, -image.height() / 2)


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
        transform = self.sceneTransform()
        dx = self._pad / (abs(transform.m11()) or 1.0)
        dy = self._pad / (abs(transform.m22()) or 1.0)
        return self._data_bounds.adjusted(-dx, -dy, dx, dy)

    def shape(self) -> QPainterPath:
        return self.path()


def curve(plot: pg.PlotItem, qpen: QPen) -> Curve:
    """A Curve added to the plot."""
    item = Curve(qpen)
    plot.addItem(item)
    return item


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

    def set_at(self, at: tuple[float, float]) -> None:
        """Move the legend to another data point (see `at`)."""
        if at != self._at:
            if self._at is None:
                self._box.sigTransformChanged.connect(self._place)
            self._at = at
            self._place()

    def labels(self) -> list[str]:
        return [row[0] for row in self._rows]

    def apply_look(self) -> None:
        """Take the current look's font size (the rows are laid out again)."""
        self._font = theme.font(self._font_size)
        self._metrics = QFontMetricsF(self._font)
        self._lay_out()

    def text_sizes(self) -> list[tuple[str, float]]:
        """Every label drawn, with its font's pixel size (for tests)."""
        return [(label, _pixel_size(self._font)) for label in self.labels()]

    def end_with_room(self, low: float, high: float) -> float:
        """The end of a range from `low` to `high` (data along the legend's side of the
        view) extended so the legend fits past `high` without covering the data; call it
        again when the view box is resized (sigResized)."""
        length = self._box.height() if self._anchor[1] in (0, 1) else self._box.width()
        share = (self._size[1] + 2 * self._offset) / max(length, 1.0)
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
            static = QStaticText(label)
            static.setTextFormat(Qt.PlainText)
            static.prepare(QTransform(), self._font)
            self._statics.append(static)
            widths.append(swatch * 1.6 + pad + static.size().width())
        # As many of the asked-for columns as fit the view's width (a lecture-size font
        # needs more rows, not a legend cut at the edge).
        room = self._box.width() - 2 * self._offset
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
            self.setPos(point.x() - ax * width, point.y() - ay * height)
            return
        area = self._box.rect()
        x = area.left() + self._offset + ax * (area.width() - width - 2 * self._offset)
        y = area.top() + self._offset + ay * (area.height() - height - 2 * self._offset)
        self.setPos(x, y)

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
                    painter.setBrush(hatch_brush(style))
                    painter.drawRect(sample)
                if opts["outline"] is not None:
                    qpen = QPen(opts["outline"], theme.line_width(1.5))
                    painter.setPen(qpen)
                    painter.setBrush(Qt.NoBrush)
                    painter.drawRect(sample.adjusted(1, 1, -1, -1))
            elif kind == "line":
                painter.setPen(style)
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
