"""Figure 4.1: the online softmax stepper."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g, format_value, plural
from gpuviz.core.plots import CellGrid, diagram_widget, pen, plot_widget, text_item, untouched
from gpuviz.core.plots.cells import TEXT_AIR
from gpuviz.core.text import TEXT_MARGIN
from gpuviz.models.flash_attention import causal_query, huge_index

MIN_WIDTH = 12  # cells; the diagram never gets narrower, so short rows stay readable
WIDTH_STEP = 4
ROW_GAP = 0.15
LINE_HEIGHT = 2 + ROW_GAP  # one line of the row: its scores and their values
LINE_GAP = 0.35  # between the lines of a row too long for one line
ROWS_BOTTOM = LINE_HEIGHT + 0.06  # the block outlines' lower edge (one line)
DIAGRAM_STRETCH, PLOT_STRETCH = 4, 6  # shares of the height: diagram, bars
DIAGRAM_STRETCH_PER_LINE = 2  # more for the diagram per extra line
MAX_LINES = 3  # a row is cut into at most this many lines when its numbers lack room
STATE_Y = 2.75  # top of the state boxes, at least; lower when the label needs the room
STATE_HEIGHT = 1.1
NAIVE_GAP, NAIVE_HEIGHT = 0.2, 0.75  # the naive formula's row, under the state boxes
LABEL_LIFT = 0.1  # the state label's lower edge above the boxes
Y_TOP = -0.3
BELOW_STATE = STATE_HEIGHT + NAIVE_GAP + NAIVE_HEIGHT + 0.2  # y range past the state top
X_LEFT = -0.9  # room for the row names
PADDING = 0.02  # the diagram's setRange padding
# Rows of this many cells or more get smaller numbers: "−1.2" is wider than a cell of a
# 20-cell row in the projector theme at 1280 x 800.
SMALL_FONT_FROM_WIDTH = 17
SMALL_FONT = 6
STATE_FONT = 13  # m, l and o: the numbers the figure is about, its largest text
NAIVE_FONT = 9


def _x_range(width: int) -> tuple[float, float]:
    return X_LEFT, width + 0.1


def _rows_bottom(lines: int) -> float:
    """The lower edge of the block outlines of a row cut into `lines` lines."""
    return lines * LINE_HEIGHT + (lines - 1) * LINE_GAP + 0.06


def _drawn_width(cells: int, lines: int = 1) -> int:
    """Cells drawn across: in steps of 4 (a new range re-renders the axes), at least 12;
    a row cut into lines fills the width with its cells."""
    if lines > 1:
        return cells
    return max(-(-cells // WIDTH_STEP) * WIDTH_STEP, MIN_WIDTH)


def _cell_font_size(width: int) -> float:
    # Rows of this many cells or more get smaller numbers.
    return SMALL_FONT if width >= SMALL_FONT_FROM_WIDTH else 7


def _state_text(done: int, blocks: int) -> str:
    # Short: one line across the diagram in the projector theme at 1280 x 800.
    return f"On-chip state after {done} of {plural(blocks, 'block')}:"


def _number(value: float) -> str:
    """A score or value as the cells write it: one decimal (they are rounded to 0.1), the
    huge score as the readouts write it ("1,000"), never a negative zero."""
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    value = float(value) + 0.0  # −0.0 + 0.0 is 0.0
    if abs(value) >= 100:
        return format_value(value, decimals=0)
    return format_value(round(value, 1) + 0.0, decimals=1)


def _state_number(value: float, digits: int = 4) -> str:
    """m, l, o and the naive numbers as the readouts write them (m and l 4 significant
    digits, o 6: it is compared with the exact average), inf and NaN as words."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "−∞" if value < 0 else "inf"
    return format_value(value, digits=digits)


class OnlineSoftmaxView(FigureView):
    step_label = "Next block"

    def build(self) -> None:
        for name in ("n_scores", "block_size", "seed", "huge_score", "causal"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        # Cells stretch to the width available: the numbers in them must stay legible.
        self.box.setAspectLocked(False)
        # Two grids that differ only in font size: the small one serves the longest rows.
        self.cells = CellGrid(font_size=7)
        self.small_cells = CellGrid(font_size=SMALL_FONT)
        self.box.addItem(self.cells)
        self.box.addItem(self.small_cells)
        # The on-chip state in large type, the naive formula's row in smaller type.
        self.state_cells = CellGrid(font_size=STATE_FONT)
        self.naive_cells = CellGrid(font_size=NAIVE_FONT)
        self.box.addItem(self.state_cells)
        self.box.addItem(self.naive_cells)
        self._cells_shown = self.cells
        # The row names, once per line (a row too long for one line is cut into lines).
        self.row_labels = [(text_item("x", anchor=(1, 0.5), bold=True),
                            text_item("v", anchor=(1, 0.5), bold=True))
                           for _ in range(MAX_LINES)]
        self.score_label, self.value_label = self.row_labels[0]
        self.state_label = text_item("", role="onchip", anchor=(0, 1), bold=True)
        for item in (*(label for pair in self.row_labels for label in pair),
                     self.state_label):
            self.box.addItem(item)
        # The state label keeps its pixel size; the gap it sits in follows the window.
        # `_fit_state_row` (on a resize) moves the boxes down until the gap is as tall as
        # the label, and scales the label down where the diagram is too narrow for it.
        self._state_y = STATE_Y
        self._lines = 1
        self._range: tuple[int, float] | None = None
        self.box.sigResized.connect(self._fit_state_row)
        self.add_plot(canvas, DIAGRAM_STRETCH)
        self.canvas = canvas

        self.plot = plot_widget("Key index i", "Weight e<sup>x<sub>i</sub> − m</sup>")
        item = self.plot.getPlotItem()
        item.setYRange(0, 1.18, padding=0)
        item.showGrid(x=False, y=True, alpha=0.25)
        self.ghosts = pg.BarGraphItem(x=[0], height=[0], width=0.8,
                                      pen=pen("neutral", 1.5, Qt.DashLine), brush=None)
        self.bars = pg.BarGraphItem(x=[0], height=[0], width=0.62)
        item.addItem(self.ghosts)
        item.addItem(self.bars)
        self.factor_text = text_item(anchor=(0, 0), size=10, bold=True)
        self._width = 0  # cells drawn across the diagram
        self._keys = 0  # keys on the bars' axis
        item.addItem(self.factor_text)
        self.add_plot(self.plot, PLOT_STRETCH)

    def _line_count(self, texts: list[str]) -> int:
        """The fewest lines (up to MAX_LINES) the row of n cells is cut into so that every
        number is written whole in its cell at the diagram's present width: a 20-score
        row in 16 px text on a 1024 x 768 projector takes two."""
        box_width = self.box.width()
        n = len(texts) // 2
        if box_width <= 0 or n == 0:
            return 1
        for lines in range(1, MAX_LINES + 1):
            width = _drawn_width(-(-n // lines), lines)
            x_low, x_high = _x_range(width)
            cell_px = 0.92 * box_width / ((x_high - x_low) * (1 + 2 * PADDING))
            metrics = QFontMetricsF(theme.font(_cell_font_size(width)))
            need = max(metrics.horizontalAdvance(text) for text in texts) + 2 * TEXT_AIR + 1
            if cell_px >= need:
                return lines
        return MAX_LINES

    def _fit_state_row(self) -> None:
        """Room for the state label, in pixels (on a resize): its scale, 1 unless the
        diagram is too narrow for its longest text, and the top of the state boxes."""
        if self._layout() != (self._lines, self._state_y):
            self.schedule_refresh()

    def _layout(self) -> tuple[int, float]:
        """The lines the row is cut into and the top of the state boxes, for the present
        row and window; scales the state label to the diagram's width."""
        t = self.model.out.trace
        lines = self._line_count([_number(x) for x in t.scores]
                                 + [_number(v) for v in t.values])
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0:
            return lines, self._state_y
        label = self.state_label
        # Room right of x = 0 with the narrowest row, for the longest text.
        x_low, x_high = _x_range(MIN_WIDTH)
        pad = PADDING * (x_high - x_low)
        room = width * (x_high + pad) / (x_high - x_low + 2 * pad)
        most = math.ceil(self.model.parameter("n_scores").maximum
                         / self.model.parameter("block_size").minimum)
        text_width = QFontMetricsF(label.font()).horizontalAdvance(_state_text(most, most))
        scale = min(1.0, room / (text_width + 2 * TEXT_MARGIN))
        label.set_scale(scale)
        # The state top for which the label's box (scaled) fills the gap between the rows
        # and the boxes, `need` pixels: (state_y - lift) * pixels per unit = need, where
        # the pixels per unit fall as the y range grows with state_y.
        need = scale * (label.boundingRect().height() + 2 * TEXT_MARGIN)
        stretch = 1 + 2 * PADDING
        lift = _rows_bottom(lines) + LABEL_LIFT
        fixed = BELOW_STATE - Y_TOP  # span of the y range besides the state top
        if height > stretch * need:
            state_y = (lift * height + fixed * stretch * need) / (height - stretch * need)
        else:
            state_y = 2 * STATE_Y
        low = STATE_Y + _rows_bottom(lines) - ROWS_BOTTOM
        return lines, round(max(low, min(state_y, 2 * low)), 3)

    def refresh(self) -> None:
        s = self.model.out
        t, k = s.trace, s.done
        n = t.scores.size
        self._lines, self._state_y = lines, state_y = self._layout()
        # A row cut into lines takes more of the height from the bars (fonts keep their
        # size: the state boxes still need room for their numbers).
        stretch = DIAGRAM_STRETCH + (lines - 1) * DIAGRAM_STRETCH_PER_LINE
        if self.needs_update("diagram stretch", stretch):
            self.plot_area.setStretchFactor(self.canvas, stretch)
        per_line = -(-n // lines)
        # The drawn width moves in steps of 4 cells: a new range re-renders the axes.
        width = _drawn_width(per_line, lines)
        visit = t.visit  # the step at which each score is read (1 to K)
        masked = ~np.isfinite(t.scores)

        # Scores and values: seen blue, current block magenta, unseen grey; masked (−∞)
        # scores faint.
        fills = []
        for i in range(n):
            role = ("highlight" if visit[i] == k else
                    "compute" if visit[i] < k else "neutral")
            fills.append(untouched() if role == "neutral" else theme.color(role))
        def place(i: int) -> tuple[int, float]:  # cell i's column and its line's top
            return i % per_line, (i // per_line) * (LINE_HEIGHT + LINE_GAP)

        rects = ([(place(i)[0], place(i)[1], 0.92, 1) for i in range(n)]
                 + [(place(i)[0], place(i)[1] + 1 + ROW_GAP, 0.92, 1) for i in range(n)])
        texts = [_number(x) for x in t.scores] + [_number(v) for v in t.values]
        outlines = [None] * (2 * n)
        fills = fills + fills
        # One outline per block around its scores and values (a piece on each line).
        b = t.block_size
        for blk in range(t.blocks):
            lo, hi = blk * b, min(n, (blk + 1) * b)
            while lo < hi:
                end = min(hi, (lo // per_line + 1) * per_line)
                column, top = place(lo)
                rects.append((column - 0.04, top - 0.06, end - lo, LINE_HEIGHT + 0.12))
                fills.append(None)
                outlines.append(theme.color("highlight" if visit[lo] == k else "muted"))
                texts.append("")
                lo = end
        shown = self.small_cells if width >= SMALL_FONT_FROM_WIDTH else self.cells
        if shown is not self._cells_shown:
            self._cells_shown.set_cells(np.empty((0, 4)), [])
            self._cells_shown = shown
        # Masked (−∞) scores and their values are hatched: read, but they weigh nothing.
        hatch = [bool(x) for x in masked] * 2 + [False] * (len(rects) - 2 * n)
        shown.set_cells(np.array(rects, dtype=float), fills, outlines, texts, hatch=hatch)

        # The on-chip state: three boxes framed in yellow (on-chip storage, as in 3.2);
        # under them the naive formula over the scores read so far, magenta when it has
        # failed (inf or NaN).
        box_w = width / 3
        self.state_cells.set_cells(
            np.array([(j * box_w, state_y, box_w - 0.3, STATE_HEIGHT) for j in range(3)]),
            [None] * 3, [theme.color("onchip")] * 3,
            [f"{name} = {_state_number(value, digits)}"
             for name, value, digits in (("m", t.m[k], 4), ("l", t.l[k], 4),
                                         ("o", t.o[k], 6))])
        naive_sum, naive_o = float(s.naive_sums[k]), float(s.naive_results[k])
        failed = k > 0 and not math.isfinite(naive_o)
        naive = ("naive formula, no max subtracted: nothing read yet" if k == 0 else
                 f"naive formula, no max subtracted: Σ eˣ = {_state_number(naive_sum)}, "
                 f"o = {_state_number(naive_o, 6)}")
        self.naive_cells.set_cells(
            np.array([(0, state_y + STATE_HEIGHT + NAIVE_GAP, width - 0.3, NAIVE_HEIGHT)]),
            [None], [theme.color("highlight" if failed else "muted")], [naive],
            text_color=theme.text_color("highlight" if failed else "text"))
        for line, (score_label, value_label) in enumerate(self.row_labels):
            top = line * (LINE_HEIGHT + LINE_GAP)
            score_label.setPos(-0.2, top + 0.5)
            value_label.setPos(-0.2, top + 1.5 + ROW_GAP)
            score_label.setVisible(line < lines)
            value_label.setVisible(line < lines)
        self.state_label.setText(_state_text(k, t.blocks))
        self.state_label.setPos(0, state_y - LABEL_LIFT)
        # Ranges only when the row length or the window (see _fit_state_row) changes.
        if (width, state_y) != self._range:
            self._range = (width, state_y)
            self.box.setRange(xRange=_x_range(width), yRange=(Y_TOP, state_y + BELOW_STATE),
                              padding=PADDING)
        self._width = width
        if n != self._keys:  # the bars' axis ends with the last key
            self._keys = n
            self.plot.getPlotItem().setXRange(-0.7, n - 0.3, padding=0)

        # Bars: weights relative to the current max; dashed: before this block's rescale.
        # Before the first block the dashed outlines show where the bars end up.
        x = np.arange(n, dtype=float)
        heights = t.weights[k]
        brushes = [theme.color("highlight" if visit[i] == k else "compute")
                   for i in range(n)]
        self.bars.setOpts(x=x, height=heights, brushes=brushes, pens=brushes)
        old = t.weights[k - 1] if k >= 1 else t.weights[t.blocks]
        self.ghosts.setOpts(x=x, height=old)
        self.factor_text.setPos(-0.5, 1.16)
        rose = k >= 2 and t.l[k - 1] > 0 and t.m[k] > t.m[k - 1]
        if k >= 2 and t.l[k - 1] > 0:
            factor = (f"block {k}: rescale × {format_g(t.factor[k], 3)}"
                      + ("  (the max rose)" if rose else "  (max unchanged)"))
        elif k:
            factor = "dashed: the bars before this block"
        else:
            factor = "dashed: the bars after the last block; press Next block"
        self.factor_text.setText(factor, theme.text_color("highlight" if rose else "text"))

        self._message(s, k)

    def _message(self, s: object, k: int) -> None:
        t = s.trace
        huge = self.model.huge_score
        if huge and not math.isfinite(s.naive_result):
            naive = (f"The naive formula computes exp(1000), which overflows a float64 "
                     f"(limit exp(709.78)): its sum is {s.naive_sum} and its result "
                     f"{'NaN' if math.isnan(s.naive_result) else s.naive_result}. ")
        elif huge and self.model.causal and huge_index(t.scores.size) > causal_query(
                t.scores.size, t.block_size):
            naive = (f"The huge score (key {huge_index(t.scores.size)}) comes after the "
                     "query, so the causal mask hides it (−∞): nothing overflows. ")
        else:
            naive = ""
        if k == 0:
            start = "Press Next block: the state starts at m = −∞, l = 0, o = 0."
            if self.model.causal:
                start += (" The causal mask hides the keys after the query (−∞), and the "
                          "blocks are read from the last one back, so the first block "
                          "read is all −∞.")
            self.message.show_message(naive + start)
        elif t.l[k] == 0.0:
            self.message.show_message(
                naive + f"Block {k} is entirely masked: its max is −∞, so the state stays "
                "empty (m = −∞, l = 0, o = 0). Computing exp(x − m) here would give "
                "exp(−∞ + ∞) = NaN; the recurrence skips it.")
        elif k < t.blocks:
            if k >= 2 and t.l[k - 1] > 0 and t.m[k] > t.m[k - 1]:
                old, new = format_g(t.m[k - 1], 4), format_g(t.m[k], 4)
                text = (f"Block {k} raised the max from {old} to {new}: the old sum l and "
                        f"every earlier bar were multiplied by exp({old} − {new}) = "
                        f"{format_g(t.factor[k], 3)} before the "
                        f"new block was added.")
            else:
                text = f"Block {k} did not raise the max, so nothing was rescaled."
            self.message.show_message(naive + text)
        else:
            self.message.show_message(
                naive + f"Done: the online o = {_state_number(t.o[k], 6)} matches the exact "
                f"softmax average, difference {format_value(s.difference, digits=2)}, without ever "
                "storing the row.")
