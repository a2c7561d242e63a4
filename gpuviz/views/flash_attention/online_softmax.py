"""Figure 4.1: the online softmax stepper."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, diagram_widget, pen, plot_widget, text_item, untouched
from gpuviz.core.text import TEXT_MARGIN

MIN_WIDTH = 12  # cells; the diagram never gets narrower, so short rows stay readable
WIDTH_STEP = 4
ROW_GAP = 0.15
ROWS_BOTTOM = 2 + ROW_GAP + 0.06  # the block outlines' lower edge
STATE_Y = 2.75  # top of the state boxes, at least; lower when the label needs the room
STATE_HEIGHT = 1.1
LABEL_LIFT = 0.1  # the state label's lower edge above the boxes
Y_TOP = -0.3
BELOW_STATE = 1.3  # y range past the top of the state boxes
X_LEFT = -0.9  # room for the row names
PADDING = 0.02  # the diagram's setRange padding
# Rows of this many cells or more get smaller numbers: "−1.2" is wider than a cell of a
# 20-cell row in the projector theme at 1280 x 800.
SMALL_FONT_FROM_WIDTH = 17
SMALL_FONT = 6


def _x_range(width: int) -> tuple[float, float]:
    return X_LEFT, width + 0.1


def _state_text(done: int, blocks: int) -> str:
    # Short: one line across the diagram in the projector theme at 1280 x 800.
    return f"On-chip state after {done} of {blocks} blocks:"


def _number(value: float) -> str:
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    text = f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"
    return text.replace("-", "−")


class OnlineSoftmaxView(FigureView):
    step_label = "Next block"

    def build(self) -> None:
        for name in ("n_scores", "block_size", "seed", "huge_score"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        # Cells stretch to the width available: the numbers in them must stay legible.
        self.box.setAspectLocked(False)
        # Two grids that differ only in font size: the small one serves the longest rows.
        self.cells = CellGrid(font_size=7)
        self.small_cells = CellGrid(font_size=SMALL_FONT)
        self.box.addItem(self.cells)
        self.box.addItem(self.small_cells)
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

        self.plot = plot_widget("key index i", "e^(x_i − m), seen so far")
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
        n, b = t.scores.size, t.block_size
        # The drawn width moves in steps of 4 cells: a new range re-renders the axes.
        width = max(-(-n // WIDTH_STEP) * WIDTH_STEP, MIN_WIDTH)
        block_of = np.arange(n) // b

        # Scores and values: seen blue, current block magenta, unseen grey.
        fills = []
        for i in range(n):
            role = ("highlight" if block_of[i] == k - 1 else
                    "compute" if block_of[i] < k - 1 else "neutral")
            fills.append(untouched() if role == "neutral" else theme.color(role))
        rects = [(i, 0, 0.92, 1) for i in range(n)] + [(i, 1 + ROW_GAP, 0.92, 1)
                                                      for i in range(n)]
        texts = [_number(x) for x in t.scores] + [_number(v) for v in t.values]
        outlines = [None] * (2 * n)
        fills = fills + fills
        # One outline per block around its scores and values.
        for blk in range(t.blocks):
            lo, hi = blk * b, min(n, (blk + 1) * b)
            rects.append((lo - 0.04, -0.06, hi - lo, 2 + ROW_GAP + 0.12))
            fills.append(None)
            outlines.append(theme.color("highlight" if blk == k - 1 else "muted"))
            texts.append("")
        # The on-chip state: three yellow boxes.
        box_w = width / 3
        m_text = "−∞" if math.isinf(t.m[k]) else f"{t.m[k]:.4g}"
        state_y = self._state_y
        for j, text in enumerate((f"m = {m_text}", f"l = {t.l[k]:.5g}",
                                  f"o = {t.o[k]:.5g}")):
            rects.append((j * box_w, state_y, box_w - 0.3, STATE_HEIGHT))
            fills.append(None)  # hollow, framed in yellow: on-chip storage, as in 3.2
            outlines.append(theme.color("onchip"))
            texts.append(text)
        shown = self.small_cells if width >= SMALL_FONT_FROM_WIDTH else self.cells
        if shown is not self._cells_shown:
            self._cells_shown.set_cells(np.empty((0, 4)), [])
            self._cells_shown = shown
        shown.set_cells(np.array(rects, dtype=float), fills, outlines, texts)
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
        x = np.arange(n, dtype=float)
        heights = t.weights[k]
        brushes = [theme.color("highlight" if block_of[i] == k - 1 else "compute")
                   for i in range(n)]
        self.bars.setOpts(x=x, height=heights, brushes=brushes, pens=brushes)
        old = t.weights[k - 1] if k >= 1 else np.zeros(n)
        self.ghosts.setOpts(x=x, height=old)
        self.factor_text.setPos(-0.5, 1.16)
        rose = k >= 2 and t.m[k] > t.m[k - 1]
        if k >= 2:
            factor = (f"block {k}: rescale × {t.factor[k]:.3g}"
                      + ("  (the max rose)" if rose else "  (max unchanged)"))
        else:
            factor = "dashed: the bars before this block" if k else "press Next block"
        self.factor_text.setText(factor, theme.text_color("highlight" if rose else "text"))

        self._message(s, k)

    def _message(self, s: object, k: int) -> None:
        t = s.trace
        huge = self.model.huge_score
        if huge and not math.isfinite(s.naive_result):
            naive = (f"The naive formula computes e^1000, which overflows a float64 "
                     f"(limit e^709.78): its sum is {s.naive_sum} and its result "
                     f"{'NaN' if math.isnan(s.naive_result) else s.naive_result}. ")
        else:
            naive = ""
        if k == 0:
            self.message.show_message(naive + "Press Next block: the state starts at "
                                      "m = −∞, l = 0, o = 0.")
        elif k < t.blocks:
            if k >= 2 and t.m[k] > t.m[k - 1]:
                text = (f"Block {k} raised the max from {t.m[k - 1]:.4g} to {t.m[k]:.4g}: "
                        f"the old sum l and every earlier bar were multiplied by "
                        f"e^({t.m[k - 1]:.4g} − {t.m[k]:.4g}) = {t.factor[k]:.3g} before the "
                        f"new block was added.")
            else:
                text = f"Block {k} did not raise the max, so nothing was rescaled."
            self.message.show_message(naive + text)
        else:
            self.message.show_message(
                naive + f"Done: the online o = {t.o[k]:.6g} matches the exact softmax "
                f"average, difference {s.difference:.1e}, without ever storing the row.")
