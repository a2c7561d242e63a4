"""Figure 12.5: simulated rounds of speculative decoding (a row each), the bars aⁱ whose
sum is the expected tokens per round, and the speed-up against γ with the best γ."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

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
    largest_layout,
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
CELL = 0.84  # a token cell's share of its column and row
COUNT = 1.8  # columns for a round's count of tokens (two digits at the lecture size)
LEFT = -0.2  # the rounds' canvas starts here (x) and there (y)
GROUP_GAP = 1.0  # columns between two columns of rounds
GROUPINGS = (1, 2, 3, 4)  # columns of rounds (rounds 1-6 | 7-12 for 2), fewest first


def group_width(gamma: int) -> float:
    """Columns of one column of rounds: γ + 1 tokens and the count."""
    return gamma + 1 + COUNT


def rounds_columns(gamma: int, groups: int) -> float:
    """Columns the rounds take side by side, with their margins."""
    return groups * group_width(gamma) + (groups - 1) * GROUP_GAP - LEFT + 0.2


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

        # The rounds across the top, their legend at the right of them (one column, so it
        # never covers a round: _fit_rounds keeps the room); the bars and the speed-up side
        # by side under them, so that each keeps the height its axis titles need.
        canvas, self.rounds_box = diagram_widget()
        self.rounds = CellGrid(font_size=10)
        # Cells as tall as the rows allow, narrower when γ's columns need it (_fit_rounds).
        self.rounds_box.setAspectLocked(False)
        self.rounds_box.addItem(self.rounds)
        self.rounds_legend = Legend(self.rounds_box, anchor=(1, 0), columns=1)
        for kind, text in TOKEN_LEGEND:
            self.rounds_legend.add_box(text, theme.color(TOKEN_ROLES[kind]))
        self.rounds_box.sigResized.connect(self._on_rounds_resized)
        self._groups = 1
        self.add_plot(canvas, 3)

        self.bars_plot = plot_widget("Position i in the round", "Chance aⁱ")
        item = self.bars_plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        self._bars_top = 1.25
        item.setYRange(0, self._bars_top, padding=0)
        self.bars = CellGrid(font_size=9)
        item.addItem(self.bars)
        self.bars_text = TextLayer(QRectF(-1, 0, GAMMA_MAX + 2, 1.25), keep_inside=True)
        self.sum_label = self.bars_text.add(role="text", size=10, bold=True, anchor=(1, 0))
        item.addItem(self.bars_text)
        item.getViewBox().sigResized.connect(self._fit_bars)

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
        # Above the curve, with room kept for it in the y range (_fit_speed_range).
        self.speed_legend = Legend(sitem, anchor=(1, 0), columns=3)
        self.speed_legend.add_dot("this γ", theme.color("compute"), theme.color("text"))
        self.speed_legend.add_dot("best γ", theme.color("highlight"), theme.color("text"))
        self.speed_legend.add_line("no draft (1×)", pen("muted", 1.5, Qt.DashLine))
        self._speed_data_top = 0.0
        sitem.getViewBox().sigResized.connect(self._fit_speed_range)

        row = QWidget()
        row_layout = QHBoxLayout(row)
        row_layout.setContentsMargins(0, 0, 0, 0)
        row_layout.addWidget(self.bars_plot, 1)
        row_layout.addWidget(self.speed_plot, 1)
        self.add_plot(row, 2)

    def refresh(self) -> None:
        out: SpeculativeDecodingOut = self.model.out
        gamma = self.model.gamma
        self._show_rounds(out, gamma)
        self._show_bars(out, gamma)
        self._show_speedup(out, gamma)
        self.predict.sync()
        text, warn = self.model.message()
        self.message.show_message(text, warn=warn)

    def _on_rounds_resized(self) -> None:
        if self._fit_rounds():
            self.schedule_refresh()  # the rounds in their new places

    def _fit_rounds(self) -> bool:
        """The rounds at the top left, each row as tall as the canvas allows, the columns
        as wide (narrower when γ's need it), with the legend's width kept free at the
        right of them (on a resize and a new γ). Where the canvas is wide for its height
        the rounds go in two or more columns (1-6 | 7-12), as many as draw a token
        largest. True when the number of columns changed."""
        box = self.rounds_box
        width, height = box.width(), box.height()
        if width <= 1 or height <= 1:
            return False
        gamma = self.model.gamma
        room = max(width - self.rounds_legend.boundingRect().width() - 12, 1.0)

        def row_px(groups: int) -> float:
            return height / (-(-ROUNDS // groups) - LEFT)

        def column_px(groups: int) -> float:  # never wider than a row is tall
            return min(row_px(groups), room / rounds_columns(gamma, groups))

        groups = largest_layout(GROUPINGS, column_px)
        row, column = row_px(groups), column_px(groups)
        box.setRange(xRange=(LEFT, LEFT + width / column),
                     yRange=(LEFT, LEFT + height / row), padding=0)
        changed, self._groups = groups != self._groups, groups
        return changed

    def _show_rounds(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        if self.needs_update("rounds_range", gamma):
            self._fit_rounds()
        rects, fills, texts = [], [], []
        rows = -(-ROUNDS // self._groups)
        for index in range(ROUNDS):
            if out.accepted is None:  # not simulated yet: the rows' places, untouched
                kinds, tokens = [None] * (gamma + 1), ""
            else:
                kinds = round_tokens(int(out.accepted[index]), gamma)
                tokens = str(int(out.accepted[index]) + 1)
            left = (index // rows) * (group_width(gamma) + GROUP_GAP)
            row = index % rows
            for column, kind in enumerate(kinds):
                rects.append((left + column, row, CELL, CELL))
                fills.append(untouched() if kind is None else theme.color(TOKEN_ROLES[kind]))
                texts.append("")
            rects.append((left + gamma + 1, row, COUNT, CELL))  # the round's tokens, no fill
            fills.append(None)
            texts.append(tokens)
        self.rounds.set_cells(np.array(rects).reshape(-1, 4), fills, texts=texts)

    def _fit_bars(self) -> None:
        """Room above the tallest bar (1) for the sum's line (on a resize too)."""
        box = self.bars_plot.getPlotItem().getViewBox()
        line = QFontMetricsF(theme.font(10, bold=True)).height() * 1.3
        top = 1.0 / max(1.0 - line / max(box.height(), 1.0), 0.5)
        if self.needs_update("bars_top", round(top, 3)):
            self._bars_top = top
            self.bars_plot.getPlotItem().setYRange(0, top, padding=0)
            self._bound_bars_text()

    def _bound_bars_text(self) -> None:
        gamma = self.model.gamma
        self.bars_text.set_bounds(QRectF(-0.6, 0, gamma + 1.2, self._bars_top))
        self.sum_label.setPos(gamma + 0.55, self._bars_top)

    def _show_bars(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        axis = self.bars_plot.getPlotItem().getAxis("bottom")
        if self.needs_update("bars_range", gamma):
            self.bars_plot.getPlotItem().setXRange(-0.6, gamma + 0.6, padding=0)
            self._bound_bars_text()
            every = 1 if gamma <= 8 else 2  # whole positions only
            axis.setTicks([[(i, str(i)) for i in range(0, gamma + 1, every)]])
        n = len(out.positions)
        rects = np.column_stack([np.arange(n) - 0.35, np.zeros(n), np.full(n, 0.7),
                                 out.positions])
        self.bars.set_cells(rects, [theme.color("compute")] * n,
                            texts=[format_value(float(v), decimals=2) for v in out.positions])
        self.sum_label.setText(
            f"Σ aⁱ = {format_value(out.expected, 'tokens', digits=5)}"
            if self.model.revealed else "Σ aⁱ = ? (press Reveal)")

    def _fit_speed_range(self) -> None:
        """0 to a 1-2-5 top above the curve, and above that the legend's row (on a
        resize too)."""
        if not self._speed_data_top:
            return
        top = nice_ceiling(self.speed_legend.end_with_room(0.0, self._speed_data_top),
                           FINE_STEPS)
        if self.needs_update("speed_top", top):
            self.speed_plot.getPlotItem().setYRange(0, top, padding=0)
            self.speed_text.set_bounds(QRectF(0.5, 0, GAMMA_MAX, top))

    def _show_speedup(self, out: SpeculativeDecodingOut, gamma: int) -> None:
        item = self.speed_plot.getPlotItem()
        data_top = max(out.best_speedup, 1.0) * 1.15
        if data_top != self._speed_data_top:
            self._speed_data_top = data_top
            self._fit_speed_range()
        self.plain.set_line(0.5, 1.0, GAMMA_MAX + 0.5, 1.0,
                            item.getViewBox().viewPixelSize())
        self.speed_curve.set_data(out.gammas, out.speedups)
        self.chosen.set_points([gamma], [out.speedup])
        self.best.set_points([out.best_gamma], [out.best_speedup])
        self.best_label.setText(f"best γ = {out.best_gamma}: "
                                f"{format_value(out.best_speedup, '×')}")
        self.best_label.setPos(out.best_gamma, out.best_speedup)
