"""Figure 11.1: values (top line) mapped to the points of a b-bit symmetric grid (bottom)."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import Dots, lines, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models.quantization import GRID_VALUES

TOP, BOTTOM = 1.0, 0.0  # y of the value line and of the grid line
TICK = 0.07  # half height of a grid tick
MARK_TOP = 1.12  # the ±α marks end above the value line, their labels above that
Y_RANGE = (-0.25, 1.3)
# The x range moves in steps (never with every slider move): the smallest that holds the
# range and the values with a little room.
X_LIMITS = (1.25, 2.5, 5.0, 10.5, 13.0)
DOT_SIZE = 11


class GridView(FigureView):
    def build(self) -> None:
        for name in ("bits", "alpha", "min_max", "outlier"):
            self.controls.add(name)

        self.plot = plot_widget("Value")
        item = self.plot.getPlotItem()
        item.hideAxis("left")
        item.showGrid(x=False, y=False)
        item.setYRange(*Y_RANGE, padding=0)
        self.lines = lines(item, pen("neutral", 1.5))
        self.clipped_lines = lines(item, pen("highlight", 2.0))
        self.value_axis = lines(item, pen("muted", 1.0))
        self.grid_axis = lines(item, pen("muted", 1.0))
        self.ticks = lines(item, pen("neutral", 1.5))
        self.range_marks = lines(item, pen("memory", 2.0, Qt.DashLine))
        brushes = [theme.color("neutral")] * GRID_VALUES + [theme.color("highlight")]
        self.dots = Dots(item, GRID_VALUES + 1, DOT_SIZE, brushes, pen("text", 1.0))
        self.landed = Dots(item, GRID_VALUES + 1, DOT_SIZE, theme.color("compute"),
                           pen("text", 1.0))
        self.labels = TextLayer(QRectF(-X_LIMITS[-1], Y_RANGE[0], 2 * X_LIMITS[-1],
                                       Y_RANGE[1] - Y_RANGE[0]), keep_inside=True)
        self.value_label = self.labels.add("values x", role="text", size=9, anchor=(0, 1.1))
        self.grid_label = self.labels.add("", role="text", size=9, anchor=(0, -0.1))
        # Codes −q, 0 and +q under their ticks; "0" is drawn first, and where the grid is
        # too narrow for the three (a tiny α beside the outlier) ±q give way to it rather
        # than run together (the grid label below names them).
        zero, low, high = (self.labels.add("", role="muted", size=9, anchor=(0.5, -0.15),
                                           give_way=True) for _ in range(3))
        self.code_labels = [low, zero, high]
        self.alpha_labels = [self.labels.add("", role="memory", size=9, anchor=(a, 1.1))
                             for a in (1.05, -0.05)]
        item.addItem(self.labels)
        self._limit = 0.0
        self.add_plot(self.plot)

    def refresh(self) -> None:
        out = self.model.out
        item = self.plot.getPlotItem()
        need = 1.03 * max(out.alpha, float(np.abs(out.values).max()))
        limit = next((x for x in X_LIMITS if x >= need), X_LIMITS[-1])
        if limit != self._limit:
            self._limit = limit
            item.setXRange(-limit, limit, padding=0)
            self.value_axis.set_lines(-limit, TOP, limit, TOP)
            self.grid_axis.set_lines(-limit, BOTTOM, limit, BOTTOM)
            self.value_label.setPos(-limit, TOP)
            self.grid_label.setPos(-limit, BOTTOM - 2 * TICK)

        q, step = out.top_code, out.step
        if self.needs_update("grid", (q, step)):
            grid = np.arange(-q, q + 1) * step
            self.ticks.set_lines(grid, BOTTOM - TICK, grid, BOTTOM + TICK)
            # From the grid line up past the value line, clear of the code labels below.
            ends = np.array([-out.alpha, out.alpha])
            self.range_marks.set_lines(ends, BOTTOM, ends, MARK_TOP)
            for label, code in zip(self.code_labels, (-q, 0, q), strict=True):
                label.setText(f"{code:+d}".replace("-", "−") if code else "0")
                label.setPos(code * step, BOTTOM - TICK)
            for label, sign in zip(self.alpha_labels, (-1, 1), strict=True):
                label.setText(f"{'−' if sign < 0 else '+'}α")
                label.setPos(sign * out.alpha, MARK_TOP)
            self.grid_label.setText(f"grid: codes −{q} … +{q}, step {format_value(step)}")

        clipped = np.abs(out.values) > out.alpha
        if self.needs_update("lines", (out.values.tobytes(), out.quantized.tobytes())):
            self.lines.set_lines(out.values[~clipped], TOP, out.quantized[~clipped], BOTTOM)
            self.clipped_lines.set_lines(out.values[clipped], TOP, out.quantized[clipped],
                                         BOTTOM)
        n = len(out.values)
        pad = [math.nan] * (GRID_VALUES + 1 - n)
        self.dots.set_points([*out.values, *pad], [TOP] * (GRID_VALUES + 1))
        self.landed.set_points([*out.quantized, *pad], [BOTTOM] * (GRID_VALUES + 1))
        text, warn = self.model.message()
        self.message.show_message(text, warn)
