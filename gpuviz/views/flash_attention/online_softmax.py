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
from gpuviz.core.text import TEXT_MARGIN

MIN_WIDTH = 12  # cells; the diagram never gets narrower, so short rows stay readable
WIDTH_STEP = 4
ROW_GAP = 0.15
ROWS_BOTTOM = 2 + ROW_GAP + 0.06  # the block outlines' lower edge
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


def _state_text(done: int, blocks: int) -> str:
    # Short: one line across the diagram in the projector theme at 1280 x 800.
    return f"On-chip state after {done} of {plural(blocks, 'block')}:"


def _number(value: float) -> str:
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    text = f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"
    return text.replace("-", "−")


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
        self.score_label = text_item("x", anchor=(1, 0.5), bold=True)
        self.value_label = text_item("v", anchor=(1, 0.5), bold=True)
        self.state_label = text_item("", role="onchip", anchor=(0, 1), bold=True)
        for item in (self.score_label, self.value_label, self.state_label):
            self.box.addItem(item)
        # The state label keeps its pixel size; the gap it sits in follows the window.
        # `_fit_state_row` (on a resize) moves the boxes down until the gap is as tall as
        # the label, and scales the label down where the diagram is too narrow for it.
        self._state_y = STATE_Y
        self._range: tuple[int, float] | None = None
        self.box.sigResized.connect(self._fit_state_row)
        self.add_plot(canvas, 2)

        self.plot = plot_widget("Key index i", "Weight e<sup>x<sub>i</sub> − m</sup>, seen so far")
        item = self.plot.getPlotItem()
        item.setYRange(0, 1.18, padding=0)
        item.showGrid(x=False, y=True, alpha=0.25)
        self.ghosts = pg.BarGraphItem(x=[0], height=[0], width=0.8,
                                      pen=pen("neutral", 1.5, Qt.DashLine), brush=None)
        self.bars = pg.BarGraphItem(x=[0], height=[0], width=0.62)
        item.addItem(self.ghosts)
        item.addItem(self.bars)
        self.factor_text = text_item(anchor=(0, 0), size=10, bold=True)
        self._width = 0
        item.addItem(self.factor_text)
        self.add_plot(self.plot, 3)

    def _fit_state_row(self) -> None:
        """Room for the state label, in pixels (on a resize): its scale, 1 unless the
        diagram is too narrow for its longest text, and the top of the state boxes."""
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0:
            return
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
        lift = ROWS_BOTTOM + LABEL_LIFT
        fixed = BELOW_STATE - Y_TOP  # span of the y range besides the state top
        if height > stretch * need:
            state_y = (lift * height + fixed * stretch * need) / (height - stretch * need)
        else:
            state_y = 2 * STATE_Y
        state_y = round(max(STATE_Y, min(state_y, 2 * STATE_Y)), 3)
        if state_y != self._state_y:
            self._state_y = state_y
            self.schedule_refresh()

    def refresh(self) -> None:
        s = self.model.out
        t, k = s.trace, s.done
        n = t.scores.size
        # The drawn width moves in steps of 4 cells: a new range re-renders the axes.
        width = max(-(-n // WIDTH_STEP) * WIDTH_STEP, MIN_WIDTH)
        visit = t.visit  # the step at which each score is read (1 to K)
        masked = ~np.isfinite(t.scores)

        # Scores and values: seen blue, current block magenta, unseen grey; masked (−∞)
        # scores faint.
        fills = []
        for i in range(n):
            role = ("highlight" if visit[i] == k else
                    "compute" if visit[i] < k else "neutral")
            fills.append(untouched() if role == "neutral" else theme.color(role))
        rects = [(i, 0, 0.92, 1) for i in range(n)] + [(i, 1 + ROW_GAP, 0.92, 1)
                                                      for i in range(n)]
        texts = [_number(x) for x in t.scores] + [_number(v) for v in t.values]
        outlines = [None] * (2 * n)
        fills = fills + fills
        # One outline per block around its scores and values.
        b = t.block_size
        for blk in range(t.blocks):
            lo, hi = blk * b, min(n, (blk + 1) * b)
            rects.append((lo - 0.04, -0.06, hi - lo, 2 + ROW_GAP + 0.12))
            fills.append(None)
            outlines.append(theme.color("highlight" if visit[lo] == k else "muted"))
            texts.append("")
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
        state_y = self._state_y
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
        self.score_label.setPos(-0.2, 0.5)
        self.value_label.setPos(-0.2, 1.5 + ROW_GAP)
        self.state_label.setText(_state_text(k, t.blocks))
        self.state_label.setPos(0, state_y - LABEL_LIFT)
        # Ranges only when the row length or the window (see _fit_state_row) changes.
        if (width, state_y) != self._range:
            self._range = (width, state_y)
            self.box.setRange(xRange=_x_range(width), yRange=(Y_TOP, state_y + BELOW_STATE),
                              padding=PADDING)
        if width != self._width:
            self._width = width
            self.plot.getPlotItem().setXRange(-0.7, width - 0.3, padding=0)

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
                naive + f"Done: the online o = {format_g(t.o[k])} matches the exact softmax "
                f"average, difference {format_value(s.difference, digits=2)}, without ever "
                "storing the row.")
