"""Figure 12.5: simulated rounds of speculative decoding (a row each), the bars aⁱ whose
sum is the expected tokens per round, and the speed-up against γ with the best γ."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling
from gpuviz.core.plots import (
    CellGrid,
    Dots,
    Legend,
    Segment,
    curve,
    diagram_widget,
    pen,
    plot_widget,
    untouched,
)
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.serving.speculative_decoding import (
    ACCEPTED,
    BONUS,
    DISCARDED,
    GAMMA_MAX,
    REPLACED,
    ROUNDS,
    SpeculativeDecodingOut,
    round_tokens,
)

TOKEN_ROLES = {ACCEPTED: "compute", REPLACED: "highlight", BONUS: "network",
               DISCARDED: "idle"}
TOKEN_LEGEND = ((ACCEPTED, "accepted draft token"), (REPLACED, "replaced at rejection"),
                (BONUS, "bonus token"), (DISCARDED, "discarded draft token"))
LEGEND_ROWS = 2.6  # rows of room above the rounds for the legend (two lines of it)
CELL = 0.84  # a token cell's share of its column and row


class SpeculativeDecodingView(FigureView):
    def build(self) -> None:
        for name in ("acceptance", "gamma", "draft_cost"):
            self.controls.add(name)
        self.simulate = QPushButton(f"Simulate {ROUNDS} rounds")
        self.simulate.setToolTip(f"Draw {ROUNDS} new rounds")
        self.simulate.setAccessibleName(f"Simulate {ROUNDS} rounds")
        self.simulate.clicked.connect(
            lambda: self.model.set("simulation", self.model.simulation % 9999 + 1))
        self.controls.add_widget(self.simulate)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        canvas, self.rounds_box = diagram_widget()
        self.rounds = CellGrid(font_size=10)
        self.rounds_box.addItem(self.rounds)
        legend = Legend(self.rounds_box, anchor=(0, 0), columns=4)
        for kind, text in TOKEN_LEGEND:
            legend.add_box(text, theme.color(TOKEN_ROLES[kind]))
        self.add_plot(canvas, 3)

        self.bars_plot = plot_widget("Position i in the round", "Chance of reaching i (aⁱ)")
        item = self.bars_plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        item.setYRange(0, 1.25, padding=0)
        self.bars = CellGrid(font_size=9)
        item.addItem(self.bars)
        self.bars_text = TextLayer(QRectF(-1, 0, GAMMA_MAX + 2, 1.25), keep_inside=True)
        self.sum_label = self.bars_text.add(role="text", size=10, bold=True, anchor=(1, 0))
        item.addItem(self.bars_text)
        self.add_plot(self.bars_plot, 2)

        self.speed_plot = plot_widget("Draft tokens γ", "Speed-up (×)")
        sitem = self.speed_plot.getPlotItem()
        sitem.showGrid(x=True, y=True, alpha=0.25)
        sitem.setXRange(0.5, GAMMA_MAX + 0.5, padding=0)
        self.plain = Segment(pen("muted", 1.5, Qt.DashLine))
        sitem.addItem(self.plain)
        self.speed_curve = curve(sitem, pen("compute", 2.5))
        self.chosen = Dots(sitem, 1, 13, theme.color("compute"), pen("text", 1.5))
        self.best = Dots(sitem, 1, 15, theme.color("highlight"), pen("text", 1.5))
        self.speed_text = TextLayer(QRectF(0.5, 0, GAMMA_MAX, 1), keep_inside=True)
        self.best_label = self.speed_text.add(role="highlight", size=10, bold=True,
                                              anchor=(0.5, -0.4))  # under the curve
        sitem.addItem(self.speed_text)
        speed_legend = Legend(sitem, anchor=(1, 0), columns=3)
        speed_legend.add_dot("this γ", theme.color("compute"), theme.color("text"))
        speed_legend.add_dot("best γ", theme.color("highlight"), theme.color("text"))
        speed_legend.add_line("no draft (1×)", pen("muted", 1.5, Qt.DashLine))
        self._speed_top = 0.0
        self.add_plot(self.speed_plot, 2)

    def refresh(self) -> None:
        out: SpeculativeDecodingOut = self.model.out
        gamma = self.model.gamma
        self._show_rounds(out, gamma)
        self._show_bars(out, gamma)
        self._show_speedup(out, gamma)
        self.predict.sync()
        text, warn = self.model.message()
        self.message.show_message(text, warn=warn)

    def _show_rounds(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        if self.needs_update("rounds_range", gamma):
            self.rounds_box.setRange(xRange=(-0.2, gamma + 2.2),
                                     yRange=(-LEGEND_ROWS, ROUNDS), padding=0)
        rects, fills, texts = [], [], []
        for row in range(ROUNDS):
            if out.accepted is None:  # not simulated yet: the rows' places, untouched
                kinds, tokens = [None] * (gamma + 1), ""
            else:
                kinds = round_tokens(int(out.accepted[row]), gamma)
                tokens = str(int(out.accepted[row]) + 1)
            for column, kind in enumerate(kinds):
                rects.append((column, row, CELL, CELL))
                fills.append(untouched() if kind is None else theme.color(TOKEN_ROLES[kind]))
                texts.append("")
            rects.append((gamma + 1, row, 1.0, CELL))  # the round's tokens, no fill
            fills.append(None)
            texts.append(tokens)
        self.rounds.set_cells(np.array(rects).reshape(-1, 4), fills, texts=texts)

    def _show_bars(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        if self.needs_update("bars_range", gamma):
            self.bars_plot.getPlotItem().setXRange(-0.6, gamma + 0.6, padding=0)
        n = len(out.positions)
        rects = np.column_stack([np.arange(n) - 0.35, np.zeros(n), np.full(n, 0.7),
                                 out.positions])
        self.bars.set_cells(rects, [theme.color("compute")] * n,
                            texts=[format_value(float(v), decimals=2) for v in out.positions])
        self.sum_label.setText(
            f"Σ aⁱ = {format_value(out.expected, digits=5)} tokens per round"
            if self.model.revealed else "Σ aⁱ = expected tokens per round: press Reveal")
        self.sum_label.setPos(gamma + 0.55, 1.2)

    def _show_speedup(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        top = nice_ceiling(max(out.best_speedup, 1.0) * 1.3, FINE_STEPS)
        item = self.speed_plot.getPlotItem()
        if top != self._speed_top:
            self._speed_top = top
            item.setYRange(0, top, padding=0)
            self.speed_text.set_bounds(QRectF(0.5, 0, GAMMA_MAX, top))
        self.plain.set_line(0.5, 1.0, GAMMA_MAX + 0.5, 1.0,
                            item.getViewBox().viewPixelSize())
        self.speed_curve.set_data(out.gammas, out.speedups)
        self.chosen.set_points([gamma], [out.speedup])
        self.best.set_points([out.best_gamma], [out.best_speedup])
        self.best_label.setText(f"best γ = {out.best_gamma}: "
                                f"{format_value(out.best_speedup, '×')}")
        self.best_label.setPos(out.best_gamma, out.best_speedup)
