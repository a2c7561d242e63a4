"""CellGrid: one graphics item that paints any number of coloured cells, with their
outlines, hatching and centred texts, in a single paint() call; and grid_rects to place them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen, QStaticText, QTransform

from gpuviz import theme
from gpuviz.core.plots.look import (
    composite,
    device_ratio,
    hatch_brush,
    hatch_sheet,
    pixel_size,
)
from gpuviz.core.text import laid_out

T = TypeVar("T")

SMALL = 128  # cells: up to this many, colours are grouped in Python (numpy is ahead past ~200)
PARTIAL_SHARE = 0.25  # of the cells: when fewer changed, set_cells repaints only those
TEXT_AIR = 1  # px a text leaves free across its cell, so that neighbours read apart


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

    `set_cells` repaints only the cells that look different from what is shown (none, when
    nothing changed), unless the cells moved or a quarter of them changed.

    A number too wide for its cell is drawn in a narrower form of the same value before
    it is left out (`narrower_number`): 4.1's "−0.4" in 16 px text, in a 34 px cell.
"""

    clicked = Signal(int)
    clicked_at = Signal(QPointF)  # the point clicked in data units, whatever it hit

    def __init__(self, font_size: float = 8.0, fit_texts: bool = True,
                 elide: bool = False, text_air: float = TEXT_AIR) -> None:
        """fit_texts=False: draw every text even where it overflows its cell (labels
        with no fill beside a grid, whose cells only place them). elide=True: a text too
        wide for its cell is cut with "…" rather than left out (names, never numbers).
        text_air: the pixels a text leaves free across its cell (more for cells that abut,
        as a timeline's boxes do)."""
        super().__init__()
        self._fit_texts = fit_texts
        self._text_air = text_air
        self._elide = elide
        self._elided: dict[tuple[str, int], tuple[QStaticText, float] | None] = {}
        self._array = np.zeros((0, 4))
        self._fill_groups: list[tuple[QColor, np.ndarray]] = []
        self._hatch_groups: list[tuple[QColor, QColor | None, np.ndarray]] = []
        self._text_inks: list[QColor] = []
        self._outline_groups: list[tuple[QColor, np.ndarray]] = []
        self._static: dict[str, tuple[QStaticText, float, float]] = {}
        self._text_rows = np.zeros(0, dtype=int)
        self._text_list: list[QStaticText] = []
        self._narrowable: list[bool] = []
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
        self._laid_out_texts: list[str] | None = None  # the texts _lay_out_texts did
        self._line_rows: list[int] = []  # the cells with texts of several lines
        self._fills: list[QColor | None] = []
        self._fill_keys = np.zeros(0, dtype=np.int64)
        # What is painted, per cell and for the whole grid: set_cells compares the new
        # cells with it to repaint only those that changed.
        self._shown: tuple | None = None
        self._shown_look: tuple | None = None

    def apply_look(self) -> None:
        """Take the current look's font and line sizes (the texts are laid out again)."""
        self._font = theme.font(self._font_size)
        self._static.clear()
        self._elided.clear()
        self._outline_width = theme.line_width(self._outline_base)
        self._laid_out_texts = None
        self._lay_out_texts()
        self.update()

    def text_sizes(self) -> list[tuple[str, float]]:
        """Every cell text drawn, with its font's pixel size (for tests)."""
        return [(text, pixel_size(self._font)) for text in self._texts if text]

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
        moved = not np.array_equal(array, self._array)
        if moved:
            # Most refreshes only recolour; rebuild the rectangles only when they move.
            self.prepareGeometryChange()
            self._array = np.ascontiguousarray(array)  # copied: drawn straight from memory
            if self._array is array:
                self._array = array.copy()
            if len(array):
                x0, y0 = array[:, 0].min(), array[:, 1].min()
                x1 = (array[:, 0] + array[:, 2]).max()
                y1 = (array[:, 1] + array[:, 3]).max()
                self._bounds = QRectF(x0, y0, x1 - x0, y1 - y0)
            else:
                self._bounds = QRectF()
        # Colours as rgba numbers (-1: none), worked out once and compared in numpy: a
        # timeline hands over a QColor per box, thousands of them.
        if len(fills) != len(self._array):
            raise ValueError(f"{len(fills)} colours for {len(self._array)} cells")
        fill_keys = colour_codes(fills)
        filled = fill_keys != -1
        if hatch is None:
            idle = theme.color("idle").rgb() & 0xFFFFFF
            hatched = filled & ((fill_keys & 0xFFFFFF) == idle)
        else:
            hatched = filled & np.fromiter(hatch, dtype=bool, count=len(fills))
        # An opaque fill's hatch brush holds the fill (hatch_brush): filling those cells
        # first would write their pixels twice (timelines are mostly idle at times).
        outline_keys = colour_codes(outlines) if outlines is not None else None
        look = (outline_width, outline_style, _key(text_color), _key(hatch_ink),
                theme.current().name)
        shown = (fill_keys, outline_keys,
                 None if texts is None else np.array(list(texts), dtype=object), hatched)
        # Static grids are handed the same cells on every refresh: nothing to do.
        if not moved and look == self._shown_look and _same(shown, self._shown):
            return
        if hatched.any():
            opaque = (fill_keys >> 24) & 0xFF == 0xFF
            self._fill_groups = _group(self._array,
                                       np.where(hatched & opaque, -1, fill_keys), fills)
            self._hatch_groups = [
                (fill, hatch_ink, rows)
                for fill, rows in _group(self._array, np.where(hatched, fill_keys, -1), fills)]
        else:  # most grids: no idle cells
            self._fill_groups = _group(self._array, fill_keys, fills)
            self._hatch_groups = []
        outline_groups = (_group(self._array, outline_keys, outlines)
                          if outlines is not None else [])
        if (bool(outline_groups), outline_width) != (bool(self._outline_groups),
                                                     self._outline_base):
            self.prepareGeometryChange()  # the room kept for the outlines changes
        self._outline_groups = outline_groups
        if texts is not None and len(texts) != len(self._array):
            raise ValueError(f"{len(texts)} texts for {len(self._array)} cells")
        self._texts = list(texts) if texts is not None else []
        self._fills = list(fills)
        self._fill_keys = fill_keys
        self._text_color = text_color
        self._lay_out_texts()
        self._outline_base = outline_width
        self._outline_width = theme.line_width(outline_width)
        self._outline_style = outline_style
        # Moved cells (or a new look) repaint the whole grid; else only what changed.
        changed = None if moved or look != self._shown_look else self._changed(shown)
        self._shown, self._shown_look = shown, look
        if changed is None:
            self.update()
        else:
            self._update_cells(np.flatnonzero(changed))

    def _changed(self, shown: tuple) -> np.ndarray | None:
        """Which cells look different from what is painted (fill, outline, text, hatch),
        or None when the whole grid is to be repainted: a text may then be drawn past
        its cell."""
        if self._shown is None or not self._fit_texts or self._multiline:
            return None
        changed = np.zeros(len(self._array), dtype=bool)
        for new, old in zip(shown, self._shown, strict=True):
            if (new is None) != (old is None):
                return None
            if new is not None:
                changed |= new != old
        return changed

    def _update_cells(self, rows: np.ndarray) -> None:
        """Repaint these cells only (a step of an animation, a slider that recolours a
        few), or the whole grid when many changed."""
        if len(rows) > PARTIAL_SHARE * len(self._array):
            self.update()
            return
        transform = self.sceneTransform()
        pad = self._outline_width / 2 + 2  # pixels: the outline's outer half, and a text
        # that fits its cell may pass its edge by a pixel
        dx, dy = pad / (abs(transform.m11()) or 1.0), pad / (abs(transform.m22()) or 1.0)
        for x, y, w, h in self._array[rows].tolist():
            self.update(QRectF(x - dx, y - dy, w + 2 * dx, h + 2 * dy))

    def _lay_out_texts(self) -> None:
        texts = self._texts
        if texts != self._laid_out_texts:  # a recolour hands over the same texts
            self._laid_out_texts = list(texts)
            multiline = "\n" in "".join(texts)
            rows = [i for i, text in enumerate(texts)
                    if text and not (multiline and "\n" in text)]
            self._text_rows = np.asarray(rows, dtype=int)
            static = self._prepare_texts({texts[i] for i in rows})
            entries = [static[texts[i]] for i in rows]
            self._text_list = [entry[0] for entry in entries]
            # A timeline's hundreds of labels are checked on every change: string tests.
            self._narrowable = [_may_narrow(texts[i]) for i in rows]
            self._text_sizes = np.array([entry[1:] for entry in entries],
                                        dtype=float).reshape(-1, 2)
            self._line_rows = ([i for i, text in enumerate(texts) if "\n" in text]
                               if multiline else [])
        rows, lines = self._text_rows, self._line_rows
        if not len(rows) and not lines:  # no texts: no inks to find
            self._text_inks, self._multiline = [], []
            return
        if self._text_color is not None:
            self._text_inks = [self._text_color] * len(rows)
            self._multiline = [(QRectF(*self._array[i].tolist()), texts[i], self._text_color)
                               for i in lines]
            return
        # One ink per distinct fill: what reads on it.
        fills, background = self._fills, theme.color("background")
        look = (background.rgba(), theme.color("text").rgba())
        keys = self._fill_keys.tolist()
        inks = {}
        for key in set(keys):
            if (key, *look) not in _INKS:
                if len(_INKS) > 4096:
                    _INKS.clear()
                fill = fills[keys.index(key)]
                _INKS[(key, *look)] = theme.readable_on(composite(fill, background))
            inks[key] = _INKS[(key, *look)]
        self._text_inks = [inks[key] for key in self._fill_keys[rows].tolist()]
        self._multiline = [(QRectF(*self._array[i].tolist()), texts[i], inks[keys[i]])
                           for i in lines]

    def _cut(self, text: str, room: float) -> tuple[QStaticText, float] | None:
        """`text` cut with "…" to `room` pixels (elide) or, for a number, its narrower form
        that fits, laid out (cached); None when nothing fits."""
        key = (text, int(room))
        if key not in self._elided:
            if len(self._elided) > 1024:
                self._elided.clear()
            metrics = QFontMetricsF(self._font)
            if self._elide:
                cut = metrics.elidedText(text, Qt.ElideRight, key[1])
                cut = cut if len(cut) >= 2 else None
            else:
                cut = next((form for form in narrower_number(text)
                            if metrics.horizontalAdvance(form) <= room), None)
            if cut is None:
                self._elided[key] = None
            else:
                static = laid_out(cut, self._font)
                self._elided[key] = (static, static.size().width())
        return self._elided[key]

    def _prepare_texts(self, texts: set[str]) -> dict[str, tuple[QStaticText, float, float]]:
        """The cache of laid-out texts, holding every one of `texts`."""
        missing = texts.difference(self._static)
        if len(self._static) + len(missing) > 4096:  # texts that follow a slider
            self._static.clear()
            missing = texts
        for text in missing:
            static = laid_out(text, self._font)
            size = static.size()
            self._static[text] = (static, size.width(), size.height())
        return self._static

    def boundingRect(self) -> QRectF:
        # Outlines are centred on the cell edges: the outer half of a thick one lies
        # outside the cells, and would be left behind on the screen when it moves.
        if not self._outline_groups:
            return self._bounds
        transform = self.sceneTransform()
        pad = self._outline_width / 2
        dx, dy = pad / (abs(transform.m11()) or 1.0), pad / (abs(transform.m22()) or 1.0)
        return self._bounds.adjusted(-dx, -dy, dx, dy)

    def paint(self, painter: QPainter, *args: object) -> None:
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(Qt.NoPen)
        for fill, rects in self._fill_groups:
            painter.setBrush(fill)
            painter.drawRects(*rect_array(rects))
        if self._hatch_groups:
            self._paint_hatches(painter)
        if self._outline_groups and self._outline_style == Qt.SolidLine:
            self._paint_outline_bands(painter)
        elif self._outline_groups:
            painter.setBrush(Qt.NoBrush)
            for outline, rects in self._outline_groups:
                qpen = QPen(outline)
                qpen.setCosmetic(True)
                qpen.setWidthF(self._outline_width)
                qpen.setStyle(self._outline_style)
                painter.setPen(qpen)
                painter.drawRects(*rect_array(rects))
        if not self._text_list and not self._multiline:
            return
        # Text is drawn in device pixels so it keeps its size whatever the zoom. The view
        # only scales and translates: map all the cells in one go, centring each text
        # where drawText(rect, AlignCenter) puts it.
        t = painter.transform()
        cells = self._array[self._text_rows]
        x = t.m11() * (cells[:, 0] + cells[:, 2] / 2) + t.dx() - self._text_sizes[:, 0] / 2
        y = t.m22() * (cells[:, 1] + cells[:, 3] / 2) + t.dy() - self._text_sizes[:, 1] / 2
        # A text that does not fit its cell (in pixels, now) is left out, not clipped; it
        # needs TEXT_AIR beside it, or the numbers of narrow neighbours run together
        # ("12345678" for 9.2's eight forward passes).
        if self._fit_texts:
            room = np.abs(t.m11() * cells[:, 2]) - self._text_air
            tall = self._text_sizes[:, 1] <= np.abs(t.m22() * cells[:, 3]) + 2
            fits = ((self._text_sizes[:, 0] <= room) & tall).tolist()
        else:
            fits = [True] * len(self._text_list)
        painter.save()
        painter.resetTransform()
        painter.setFont(self._font)
        draw = painter.drawStaticText
        narrowable = self._narrowable
        ink = None
        for i, (px, py, static, color, fit) in enumerate(zip(
                x.tolist(), y.tolist(), self._text_list, self._text_inks, fits, strict=True)):
            if not fit:
                cut = ((self._elide or narrowable[i]) and tall[i]
                       and self._cut(self._texts[self._text_rows[i]], float(room[i])))
                if not cut:
                    continue
                static, width = cut
                px += (self._text_sizes[i, 0] - width) / 2
            if color is not ink:
                ink = color
                painter.setPen(color)
            draw(QPointF(px, py), static)
        for rect, text, color in self._multiline:  # in the ink that reads on their fill
            painter.setPen(color)
            painter.drawText(t.mapRect(rect), Qt.AlignCenter, text)
        painter.restore()

    def _paint_outline_bands(self, painter: QPainter) -> None:
        """Solid outlines as four filled bands per cell, centred on its edges and as wide
        as the cosmetic pen (device pixels): a pen wider than one device pixel goes
        through Qt's stroker, rect by rect (9.2's 512 outlined boxes at ratio 2: 2.1 ms
        stroked, 0.8 ms as bands). The edges are rounded to 1/64 device pixel, as Qt's
        rasterizer rounds a stroke's, so the bands cover the stroke's pixels, but for
        square corners where the stroke bevels them and, on an edge half way between two
        pixels, now and then a row of device pixels more."""
        t = painter.transform()
        ratio = device_ratio(painter)
        width = self._outline_width / ratio  # logical px: the transform is reset below
        half = width / 2
        painter.save()
        painter.resetTransform()
        painter.setPen(Qt.NoPen)
        for outline, cells in self._outline_groups:
            left, right, top, bottom = _pixel_edges(t, cells)
            # Each band as its left, top, right and bottom edges, then rounded.
            bands = np.empty((4 * len(cells), 4))
            bands[0::4] = np.column_stack([left - half, top - half, right + half, top + half])
            bands[1::4] = np.column_stack([left - half, bottom - half, right + half,
                                           bottom + half])
            bands[2::4] = np.column_stack([left - half, top + half, left + half,
                                           np.maximum(bottom - half, top + half)])
            bands[3::4] = np.column_stack([right - half, top + half, right + half,
                                           np.maximum(bottom - half, top + half)])
            bands = np.round(bands * (64 * ratio)) / (64 * ratio)
            bands[:, 2:] -= bands[:, :2]  # width and height
            painter.setBrush(outline)
            painter.drawRects(*rect_array(bands))
        painter.restore()

    def _paint_hatches(self, painter: QPainter) -> None:
        """Hatching over the hatched cells, drawn in device pixels: each cell copies its
        part of a hatch sheet (one drawPixmapFragments call per colour). The pixels are
        those a fill with the hatch brush gives: its edges rounded to device pixels as
        Qt rounds them, the pattern anchored at the view's top left."""
        t = painter.transform()
        device = painter.device()
        ratio = device_ratio(painter)  # an export at another scale: the image's
        # Cut to the device: a cell far larger than the view (a bar of 10^11 % that a
        # typed number can ask for) would ask for a hatch sheet of that many pixels.
        # The cut keeps the pattern's phase, which comes from device positions.
        width_px, height_px = device.width() * ratio, device.height() * ratio
        painter.save()
        painter.resetTransform()
        for fill, ink, cells in self._hatch_groups:
            left, right, top, bottom = _pixel_edges(t, cells)
            left, right = np.clip(np.floor(np.array([left, right]) * ratio + 0.5), 0, width_px)
            top, bottom = np.clip(np.floor(np.array([top, bottom]) * ratio + 0.5), 0, height_px)
            shown = (right > left) & (bottom > top)
            if not shown.any():
                continue
            left, right, top, bottom = left[shown], right[shown], top[shown], bottom[shown]
            width, height = right - left, bottom - top
            brush = hatch_brush(fill, ink, ratio)
            sheet = hatch_sheet(brush, int(width.max()), int(height.max()))
            period = brush.texture().width()  # device pixels, a square tile
            ones = np.ones(len(left))
            # QPainter.PixmapFragment's fields: target centre, source rectangle in the
            # sheet, scale (back to device pixels), rotation, opacity.
            fragments = np.column_stack([
                (left + width / 2) / ratio, (top + height / 2) / ratio,
                left % period, top % period, width, height,
                ones / ratio, ones / ratio, 0 * ones, ones])
            painter.drawPixmapFragments(
                shiboken6.wrapInstance(fragments.ctypes.data, QPainter.PixmapFragment),
                len(fragments), sheet)
        painter.restore()

    def index_at(self, point: QPointF) -> int:
        """The first cell holding the point, edges included (-1: none; a cell of no width
        or height holds nothing, as QRectF.contains has it)."""
        x, y, w, h = self._array.T
        left, right = np.minimum(x, x + w), np.maximum(x, x + w)
        top, bottom = np.minimum(y, y + h), np.maximum(y, y + h)
        hit = np.flatnonzero((w != 0) & (h != 0) & (left <= point.x()) & (point.x() <= right)
                             & (top <= point.y()) & (point.y() <= bottom))
        return int(hit[0]) if len(hit) else -1

    def mouseClickEvent(self, event: object) -> None:
        index = self.index_at(event.pos())
        if index >= 0:
            event.accept()
            self.clicked.emit(index)
            self.clicked_at.emit(event.pos())



_NUMBER = re.compile(r"[−-]?\d")


# The text colour that reads on a fill, by (fill, background, text) rgba: worked out once.
_INKS: dict[tuple[int, int, int], QColor] = {}


def _may_narrow(text: str) -> bool:
    """Whether `text` can have a narrower form (narrower_number): a minus sign or a zero
    before the point."""
    return text[:1] in ("−", "-") or text[:2] == "0."


def narrower_number(text: str) -> list[str]:
    """Narrower ways to write the number `text`, widest first: a hyphen for the minus
    sign (U+2212 is as wide as a digit and a half), then without the zero before the
    point ("−0.4" → "-0.4" → "-.4"). Empty for a text that is not a number."""
    if not (_may_narrow(text) and _NUMBER.match(text)):
        return []
    forms = []
    if text.startswith("−"):
        text = "-" + text[1:]
        forms.append(text)
    if re.match(r"-?0\.\d", text):
        forms.append(text.replace("0.", ".", 1))
    return forms


def _key(color: QColor | None) -> int:
    return -1 if color is None else color.rgba()


def colour_codes(colors: Sequence[QColor | None]) -> np.ndarray:
    """The colours as rgba numbers (-1 for None), to compare in numpy: a few distinct
    QColor objects among thousands of cells, so each is converted once."""
    if len(colors) <= SMALL:  # a few bars: a dict costs less than numpy's sort
        known: dict[int, int] = {}
        return np.fromiter((known[id(c)] if id(c) in known
                            else known.setdefault(id(c), _key(c)) for c in colors),
                           dtype=np.int64, count=len(colors))
    ids = np.fromiter(map(id, colors), dtype=np.int64, count=len(colors))
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    codes = np.array([_key(colors[i]) for i in first.tolist()], dtype=np.int64)
    return codes[inverse.reshape(-1)]


def _same(shown: tuple, before: tuple | None) -> bool:
    """Whether the cells' colours, texts and hatching are those painted before."""
    return before is not None and all(
        (a is None and b is None) or (a is not None and b is not None
                                      and np.array_equal(a, b))
        for a, b in zip(shown, before, strict=True))


def _group(array: np.ndarray, keys: np.ndarray, colors: Sequence[QColor | None]
           ) -> list[tuple[QColor, np.ndarray]]:
    """The cells of each colour (`keys`: their colour codes, -1: not drawn), colours in
    order of first appearance and cells in the order given, each group a contiguous array
    of rows: drawn in one call straight from its memory, with no QRectF made per cell."""
    if len(keys) != len(array):
        raise ValueError(f"{len(keys)} colours for {len(array)} cells")
    if len(keys) <= SMALL:
        rows: dict[int, list[int]] = {}
        for row, key in enumerate(keys.tolist()):
            if key != -1:
                rows.setdefault(key, []).append(row)
        return [(colors[group[0]], array[group]) for group in rows.values()]
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return [(colors[start], np.ascontiguousarray(array[inverse.reshape(-1) == index]))
            for index, start in sorted(enumerate(first.tolist()), key=lambda pair: pair[1])
            if unique[index] != -1]


def _pixel_edges(t: QTransform, cells: np.ndarray) -> tuple[np.ndarray, ...]:
    """Left, right, top and bottom of each cell (rows of x, y, width, height) in the
    pixels of a painter whose transform was `t` (a view's: it scales and moves), once
    that transform is reset."""
    x = t.m11() * np.column_stack([cells[:, 0], cells[:, 0] + cells[:, 2]]) + t.dx()
    y = t.m22() * np.column_stack([cells[:, 1], cells[:, 1] + cells[:, 3]]) + t.dy()
    x.sort(axis=1)
    y.sort(axis=1)
    return (*x.T, *y.T)


def rect_array(rects: np.ndarray) -> tuple[QRectF, int]:
    """drawRects' arguments for rows of x, y, width, height (contiguous float64, the layout
    of QRectF): the first rectangle, read in place, and the count."""
    return shiboken6.wrapInstance(rects.ctypes.data, QRectF), len(rects)


def grid_rects(count: int, columns: int, *, x0: float = 0.0, y0: float = 0.0,
               size: float = 1.0, gap: float = 0.1) -> np.ndarray:
    """Positions of `count` square cells laid out row by row, `columns` per row."""
    index = np.arange(count)
    rects = np.empty((count, 4))
    rects[:, 0] = x0 + (index % columns) * size
    rects[:, 1] = y0 + (index // columns) * size
    rects[:, 2:] = size - gap
    return rects


def largest_layout(layouts: Sequence[T], cell_px: Callable[[T], float]) -> T:
    """Of `layouts` (in order of preference: blocks per row, columns of rows), the one
    whose cells `cell_px` draws largest in the canvas, or the first within a pixel of it:
    a diagram then uses the room of a wide, a tall or a small canvas alike. Call it on
    the canvas's resize and when the number of cells changes."""
    sizes = [cell_px(layout) for layout in layouts]
    largest = max(sizes)
    return next(layout for layout, size in zip(layouts, sizes, strict=True)
                if size >= largest - 1.0)
