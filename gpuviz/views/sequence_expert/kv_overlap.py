"""Figure 10.3: ring attention's compute and K/V transfer per round against the block size."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ranges, set_time_ticks
from gpuviz.core.model import time_text
from gpuviz.core.plots import Dots, Legend, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.sequence_expert.kv_overlap import BLOCK_MAX, BLOCK_MIN, KvOverlapOut

EDGE_ROOM = 0.08  # decades beyond the slider's ends: the dots at c = 128 or 262,144
# were cut in half by the plot's edges
X_RANGE = (math.log10(BLOCK_MIN) - EDGE_ROOM, math.log10(BLOCK_MAX) + EDGE_ROOM)
Y_RANGE = (-8.0, 1.0)  # 10 ns to 10 s: every setting's curves fit
SIDE_LABEL_ROOM = 0.8  # decades a side label needs between c* and the edge


class KvOverlapView(FigureView):
    def build(self) -> None:
        for name in ("block", "link", "heads", "attention", "causal"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("Block size c (tokens per rank, log scale)",
                                "Time per round and layer")
        item = self.plot.getPlotItem()
        set_log_ranges(item, X_RANGE, Y_RANGE)
        set_time_ticks(item.getAxis("left"), *Y_RANGE)
        self.compute_curve = curve(item, pen("compute", 3.0))
        self.transfer_curve = curve(item, pen("network", 3.0))
        self.crossing_line = curve(item, pen("highlight", 2.0, Qt.DashLine))
        self.block_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.dots = Dots(item, 2, 13, [theme.color("compute"), theme.color("network")],
                         pen("text", 1.5))
        legend = Legend(item, anchor=(0, 0))
        legend.add_line("compute per round (∝ c²)", pen("compute", 3.0))
        legend.add_line("K/V transfer per round (∝ c)", pen("network", 3.0))
        legend.add_line("crossing c*", pen("highlight", 2.0, Qt.DashLine))
        self.labels = TextLayer(QRectF(X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0],
                                       Y_RANGE[1] - Y_RANGE[0]), keep_inside=True)
        self.crossing_label = self.labels.add(role="highlight", size=10, bold=True,
                                              anchor=(-0.05, 0.5))
        self.exposed_label = self.labels.add(role="text", size=10, anchor=(1.05, 0.5))
        self.hidden_label = self.labels.add(role="text", size=10, anchor=(-0.05, 0.5))
        item.addItem(self.labels)
        self.add_plot(self.plot)

    def refresh(self) -> None:
        out: KvOverlapOut = self.model.out
        revealed = self.model.revealed
        if self.needs_update("curves", (out.compute_curve[-1], out.transfer_curve[-1],
                                        revealed)):
            x = np.log10(out.blocks)
            self.compute_curve.set_data(x, np.log10(out.compute_curve))
            self.transfer_curve.set_data(*((x, np.log10(out.transfer_curve)) if revealed
                                           else ([], [])))
        cross_x = math.log10(out.crossing)
        if revealed:
            self.crossing_line.set_data([cross_x, cross_x], list(Y_RANGE))
        else:
            self.crossing_line.set_data([], [])
        self.crossing_label.setText(f"c* = {out.crossing:,.0f} tokens" if revealed else "")
        self.crossing_label.setPos(cross_x, Y_RANGE[0] + 0.4)
        room = (cross_x - X_RANGE[0], X_RANGE[1] - cross_x)
        self.exposed_label.setText("← transfer exposed" if revealed
                                   and room[0] > SIDE_LABEL_ROOM else "")
        self.exposed_label.setPos(cross_x, Y_RANGE[0] + 0.9)
        self.hidden_label.setText("transfer hidden →" if revealed
                                  and room[1] > SIDE_LABEL_ROOM else "")
        self.hidden_label.setPos(cross_x, Y_RANGE[0] + 0.9)
        c = math.log10(self.model.block)
        self.block_line.set_data([c, c], list(Y_RANGE))
        ys = [math.log10(out.compute), math.log10(out.transfer) if revealed else math.nan]
        self.dots.set_points([c, c], ys)
        self.predict.sync()
        self.message.show_message(self._describe(out, revealed),
                                  warn=revealed and not out.hidden)

    def _describe(self, out: KvOverlapOut, revealed: bool) -> str:
        compute = time_text(out.compute)
        if not revealed:
            return (f"A round of c = {self.model.block:,.0f} tokens computes for {compute}. "
                    f"Guess the block size where the K/V transfer starts to hide, then "
                    f"press Reveal.")
        transfer = time_text(out.transfer)
        if out.hidden:
            return (f"Hidden: the K/V block takes {transfer} to send and the round computes "
                    f"for {compute}, so the next block arrives before it is needed.")
        return (f"Exposed: the K/V block takes {transfer} to send but the round computes "
                f"for only {compute}; every round waits {time_text(out.exposed)}. Make the "
                f"blocks longer than c* = {out.crossing:,.0f} tokens.")
