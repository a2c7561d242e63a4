"""Figure 8.4: can the gradient all-reduce hide behind the backward pass?"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ranges, set_time_ticks
from gpuviz.core.model import format_value, time_text
from gpuviz.core.plots import CellGrid, Dots, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, TextLayer, polyline_segments
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.data_parallel import OVERLAP_TOKENS

X_RANGE = (math.log10(OVERLAP_TOKENS[0]), math.log10(OVERLAP_TOKENS[-1]))
# log10 of the ratio: every setting's ratio lands inside (4e-4 to 1,561 at the sliders'
# corners), so the dot is never cut at an edge.
Y_RANGE = (-4.0, 4.0)
# The bars' time axis, log10 seconds: fixed, so a bigger model visibly moves both bars
# (every setting of the sliders lands inside it).
TIME_RANGE = (-5.0, 5.0)
BAR_ROWS = ("Backward", "All-reduce")


class OverlapView(FigureView):
    def build(self) -> None:
        for name in ("params_b", "tokens", "gpus", "bandwidth_gbs", "tflops"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
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
        # Placed, so T* keeps off the line's own label and off the curve and the dot.
        labels = PlacedTextLayer(QRectF(X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0],
                                        Y_RANGE[1] - Y_RANGE[0]))
        self.labels = labels
        self.one_label = labels.add("equal times: above, the GPU waits", role="text",
                                    size=9, anchor=(1, 1.05))
        labels.set_candidates(self.one_label, [(X_RANGE[1] - 0.05, 0.0, 1.0, 1.05),
                                               (X_RANGE[1] - 0.05, 0.0, 1.0, -0.05)])
        self.guess_label = labels.add(role="text", size=9, anchor=(-0.05, 1))
        # Above and right of the crossing, where the falling curve is not, or below left.
        self.answer_label = labels.add(role="highlight", size=10, bold=True,
                                       anchor=(-0.05, 1.05))
        item.addItem(labels)
        self.add_plot(self.plot, 3)

        self.bars_plot = plot_widget("Time for your settings (log scale)")
        bitem = self.bars_plot.getPlotItem()
        bitem.invertY(True)
        bitem.setYRange(-0.6, 1.6, padding=0)
        bitem.setXRange(*TIME_RANGE, padding=0)
        set_time_ticks(bitem.getAxis("bottom"), *TIME_RANGE)
        bitem.getAxis("left").setTicks([list(enumerate(BAR_ROWS)), []])
        bitem.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        bitem.addItem(self.bars)
        self.bar_text = TextLayer(QRectF(TIME_RANGE[0], -0.6, TIME_RANGE[1] - TIME_RANGE[0],
                                         2.2), keep_inside=True)
        self.bar_labels = [self.bar_text.add(role="text", size=10, bold=True,
                                             anchor=(0, 0.5)) for _ in BAR_ROWS]
        bitem.addItem(self.bar_text)
        self.add_plot(self.bars_plot, 1)

    def refresh(self) -> None:
        out = self.model.out
        revealed = self.model.revealed
        # The curve is the answer: drawn once the learner has guessed and pressed Reveal.
        if revealed:
            self.ratio.set_data(np.log10(out.tokens), np.log10(out.ratio))
        else:
            self.ratio.set_data([], [])
        x = math.log10(self.model.tokens)
        y = min(max(math.log10(out.current_ratio), Y_RANGE[0]), Y_RANGE[1])
        self.marker.set_points([x], [y])

        guess = math.log10(self.model.guess_tokens)
        self.guess_line.set_data([guess, guess], list(Y_RANGE))
        self.guess_label.setText(f"your guess {self.model.guess_tokens:,}")
        self.labels.set_candidates(self.guess_label, [
            (guess, y, side, 1.0) for y in (Y_RANGE[0] + 0.05, Y_RANGE[0] + 1.0)
            for side in (-0.05, 1.05)])
        threshold = math.log10(out.threshold)
        answer = []
        if revealed and X_RANGE[0] <= threshold <= X_RANGE[1]:
            self.answer_line.set_data([threshold, threshold], [Y_RANGE[0], 0.0])
            self.answer_label.setText(f"T* = {out.threshold:,.0f}")
            self.labels.set_candidates(self.answer_label, [
                (threshold, 0.0, -0.05, 1.05), (threshold, 0.0, 1.05, -0.05),
                (threshold, 0.0, 1.05, 1.05), (threshold, 0.0, -0.05, -0.05),
                (threshold, -1.0, -0.05, 0.5), (threshold, -1.0, 1.05, 0.5)])
            answer = [[threshold, Y_RANGE[0], threshold, 0.0]]
        else:
            self.answer_line.set_data([], [])
            self.answer_label.setText("")
        curve_segments = (polyline_segments(np.log10(out.tokens), np.log10(out.ratio), 4)
                          if revealed else np.zeros((0, 4)))
        self.labels.set_obstacles(
            np.vstack([curve_segments, [[X_RANGE[0], 0.0, X_RANGE[1], 0.0]]]),
            np.array([[x, y]]), 14,
            moving=np.array([[guess, Y_RANGE[0], guess, Y_RANGE[1]], *answer]))

        times = np.log10(np.clip([out.backward, out.allreduce], 10 ** TIME_RANGE[0],
                                 10 ** TIME_RANGE[1]))
        start = TIME_RANGE[0]
        self.bars.set_cells(np.array([(start, i - 0.3, t - start, 0.6)
                                      for i, t in enumerate(times)]),
                            [theme.color("compute"), theme.color("network")])
        for i, (label, seconds) in enumerate(zip(self.bar_labels,
                                                 (out.backward, out.allreduce), strict=True)):
            label.setText(f" {time_text(seconds)}")
            label.setPos(times[i], i)
        self.predict.sync()
        hides = out.current_ratio <= 1.0
        self.message.show_message(
            f"At {self.model.tokens:,} tokens per GPU the all-reduce takes "
            f"{format_value(out.current_ratio, '×')} the backward pass: "
            + ("it can hide behind it." if hides else "the GPU waits for the network."),
            warn=not hides)
