"""The current look's pens, brushes and fills: opaque blends, heat-map shades, the
hatching of idle and wasted cells, and the pixel size of a font."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPixmap

from gpuviz import theme


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


HATCH_ALPHA = 130  # of the hatch lines over their fill


UNTOUCHED_ALPHA = 60  # of the neutral grey over the background, for data not yet touched


def untouched() -> QColor:
    """The one fill of cells that nothing has read or written yet (3.2, 3.3, 4.2...)."""
    return opaque_blend("neutral", UNTOUCHED_ALPHA)


def hatched_by_default(fill: QColor | None) -> bool:
    """Whether a cell of this fill is hatched when the caller does not say: idle hardware
    is, in every figure, so it reads as idle in greyscale and for colour-blind viewers."""
    return fill is not None and fill.rgb() == theme.color("idle").rgb()


def hatch_brush(fill: QColor, ink: QColor | None = None, ratio: float = 1.0) -> QBrush:
    """Diagonal hatching over `fill`, in device pixels (its spacing does not change with the
    zoom): lines in `ink`, by default the text or background colour, whichever contrasts
    with the fill. `ratio`: the device pixel ratio painted at (`painter.device()
    .devicePixelRatio()`), so that the lines are drawn at it, never scaled up.

    Over an opaque fill the brush holds the fill too, as one opaque tile: Qt then copies
    pixels instead of blending translucent lines, five times faster over large cells
    (drawing the fill under it first changes nothing)."""
    ink = theme.readable_on(fill) if ink is None else ink
    return _hatch_brush(theme.current().name, ink.rgb(), max(1.0, theme.line_width(0.6)),
                        fill.rgba() if fill.alpha() == 255 else None, ratio)


HATCH_TILE = 64  # logical pixels (at least) of an opaque hatch tile: fewer, longer copies
_HATCHES: dict[tuple, QBrush] = {}


def _hatch_brush(look: str, ink: int, width: float, fill: int | None,
                 ratio: float) -> QBrush:
    key = (look, ink, width, fill, ratio)
    if key not in _HATCHES:
        step = max(6, round(6 * width))  # one line every `step` pixels, along both axes
        lines = _tile(step, ratio)
        lines.fill(Qt.transparent)
        painter = QPainter(lines)
        painter.setRenderHint(QPainter.Antialiasing, True)
        color = QColor(ink)
        color.setAlpha(HATCH_ALPHA)
        painter.setPen(QPen(color, max(1.0, width)))
        # "/" lines; the copies one tile left and right keep the seams joined.
        for shift in (-step, 0, step):
            painter.drawLine(QLineF(shift, step, shift + step, 0))
        painter.end()
        if fill is None:
            _HATCHES[key] = QBrush(lines)
        else:  # the same lines blended over the fill once, here, rather than on each paint
            tile = _tile(step * math.ceil(HATCH_TILE / step), ratio)
            tile.fill(QColor.fromRgba(fill))
            painter = QPainter(tile)
            painter.fillRect(QRectF(0, 0, tile.width() / ratio, tile.height() / ratio),
                             QBrush(lines))
            painter.end()
            _HATCHES[key] = QBrush(tile)
    return _HATCHES[key]


SHEET_STEP = 256  # device pixels: a hatch sheet grows in steps of this
_SHEETS: dict[int, QPixmap] = {}


def hatch_sheet(brush: QBrush, width: int, height: int) -> QPixmap:
    """A pixmap of at least `width` x `height` device pixels (and one tile more), tiled
    with `brush`'s hatch tile from its top left at device pixel ratio 1: cells copy their
    hatching from it (CellGrid) rather than fill with the brush, which Qt samples
    through a transform at a device pixel ratio other than 1 (3-4 times slower at 2).
    Kept per brush, grown when a larger one is asked for."""
    tile = brush.texture()
    key = tile.cacheKey()
    sheet = _SHEETS.get(key)
    need = (width + tile.width(), height + tile.height())  # any phase of the pattern
    if sheet is None or sheet.width() < need[0] or sheet.height() < need[1]:
        image = tile.toImage()
        image.setDevicePixelRatio(1.0)
        have = (sheet.width(), sheet.height()) if sheet else (0, 0)
        grown = QPixmap(*(SHEET_STEP * math.ceil(max(n, h) / SHEET_STEP)
                          for n, h in zip(need, have, strict=True)))
        if image.hasAlphaChannel():
            grown.fill(Qt.transparent)
        painter = QPainter(grown)
        painter.fillRect(grown.rect(), QBrush(image))
        painter.end()
        sheet = _SHEETS[key] = grown
    return sheet


def _tile(size: int, ratio: float) -> QPixmap:
    """A square pixmap `size` logical pixels wide, at the device pixel ratio `ratio`."""
    pixmap = QPixmap(round(size * ratio), round(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    return pixmap


def device_ratio(painter: QPainter) -> float:
    """Device pixels per pixel where `painter` paints: the device's ratio, or the scale of
    a render() into an image of another ratio (the device is then the widget, at its own
    ratio): the device transform over the painter's own."""
    world = abs(painter.transform().m11())
    return abs(painter.deviceTransform().m11()) / world if world else 1.0


def composite(fill: QColor | None, under: QColor) -> QColor:
    """What a translucent fill looks like over `under` (the background when None)."""
    if fill is None:
        return under
    a = fill.alphaF()
    return QColor.fromRgbF(*(a * f + (1 - a) * u for f, u in
                             ((fill.redF(), under.redF()), (fill.greenF(), under.greenF()),
                              (fill.blueF(), under.blueF()))))


def pixel_size(qfont: pg.QtGui.QFont) -> float:
    """A font's size in pixels (points at the screen's 96 dpi, as Qt's offscreen and X11
    screens have by default)."""
    return qfont.pixelSize() if qfont.pixelSize() > 0 else qfont.pointSizeF() * 96 / 72
