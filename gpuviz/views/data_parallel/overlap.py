"""Figure 8.4: can the gradient all-reduce hide behind the backward pass?"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import nice_ceiling, set_log_ranges
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Dots, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.data_parallel import OVERLAP_TOKENS
from gpuviz.models.roofline import time_text

X_RANGE = (math.log10(OVERLAP_TOKENS[0]), math.log10(OVERLAP_TOKENS[-1]))
Y_RANGE = (-3.0, 3.0)  # log10 of the ratio
BAR_ROWS = ("Backward", "All-reduce")


class OverlapView(FigureView):
    def build(self) -> None:
        for name in ("params_b", "tokens", "gpus", "bandwidth_gbs", "tflops"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model, "guess_tokens", "revealed",
                                     self.model.answer_text)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("Tokens per GPU (log scale)",
                                "All-reduce time / backward time")
        item = self.plot.getPlotItem()
        set_log_ranges(item, X_RANGE, Y_RANGE)
        self.one_line = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.one_line.set_data(list(X_RANGE), [0.0, 0.0])
        self.ratio = curve(item, pen("network", 3.0))
        self.guess_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.answer_line = curve(item, pen("highlight", 2.0))
        self.marker = Dots(item, 1, 14, theme.color("network"), pen("text", 1.5))
        labels = TextLayer(QRectF(X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0],
                                  Y_RANGE[1] - Y_RANGE[0]), keep_inside=True)
        self.one_label = labels.add("equal times: above, the GPU waits", role="text",
                                    size=9, anchor=(1, 1.05))
        self.one_label.setPos(X_RANGE[1] - 0.05, 0.0)
        self.guess_label = labels.add(role="text", size=9, anchor=(-0.05, 1))
        self.answer_label = labels.add(role="highlight", size=10, bold=True,
                                       anchor=(-0.05, -0.05))
        item.addItem(labels)
        self.add_plot(self.plot, 3)

        self.bars_plot = plot_widget("Time for your settings (ms)")
        bitem = self.bars_plot.getPlotItem()
        bitem.invertY(True)
        bitem.setYRange(-0.6, 1.6, padding=0)
        bitem.getAxis("left").setTicks([list(enumerate(BAR_ROWS)), []])
        bitem.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        bitem.addItem(self.bars)
        self.bar_text = TextLayer(QRectF(0, -0.6, 1, 2.2), keep_inside=True)
        self.bar_labels = [self.bar_text.add(role="text", size=10, bold=True,
                                             anchor=(0, 0.5)) for _ in BAR_ROWS]
        bitem.addItem(self.bar_text)
        self.add_plot(self.bars_plot, 1)

    def refresh(self) -> None:
        out = self.model.out
        log_t = np.log10(out.tokens)
        self.ratio.set_data(log_t, np.log10(out.ratio))
        x = math.log10(self.model.tokens)
        self.marker.set_points([x], [math.log10(out.current_ratio)])

        guess = math.log10(self.model.guess_tokens)
        self.guess_line.set_data([guess, guess], list(Y_RANGE))
        self.guess_label.setText(f"your guess {self.model.guess_tokens:,}")
        self.guess_label.setPos(guess, Y_RANGE[0] + 0.05)
        threshold = math.log10(out.threshold)
        if self.model.revealed and X_RANGE[0] <= threshold <= X_RANGE[1]:
            self.answer_line.set_data([threshold, threshold], [Y_RANGE[0], 0.0])
            self.answer_label.setText(f"T* = {out.threshold:,.0f}")
            self.answer_label.setPos(threshold, 0.0)
        else:
            self.answer_line.set_data([], [])
            self.answer_label.setText("")

        times_ms = np.array([out.backward, out.allreduce]) * 1e3
        top = nice_ceiling(times_ms.max() * 1.35)
        bitem = self.bars_plot.getPlotItem()
        if self.needs_update("bar_range", top):
            bitem.setXRange(0, top, padding=0)
            self.bar_text.set_bounds(QRectF(0, -0.6, top, 2.2))
        self.bars.set_cells(np.array([(0, i - 0.3, t, 0.6) for i, t in enumerate(times_ms)]),
                            [theme.color("compute"), theme.color("network")])
        for i, (label, seconds) in enumerate(zip(self.bar_labels,
                                                 (out.backward, out.allreduce), strict=True)):
            label.setText(f" {time_text(seconds)}")
            label.setPos(times_ms[i], i)
        self.predict.sync()
        hides = out.current_ratio <= 1.0
        self.message.show_message(
            f"At {self.model.tokens:,} tokens per GPU the all-reduce takes "
            f"{format_value(out.current_ratio, '×')} the backward pass: "
            + ("it can hide behind it." if hides else "the GPU waits for the network."),
            warn=not hides)
