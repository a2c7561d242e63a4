"""Figure 12.4: target p (dashed), draft q (outlined), and the emitted bar stacked from the
kept part (blue) and the rejected-then-resampled part (magenta); dots are sampled
frequencies."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Dots, Legend, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import TextTable
from gpuviz.models.serving.speculative_sampling import (
    DRAWS,
    VOCABULARIES,
    SpeculativeSamplingOut,
)

Y_TOP = 1.0  # probabilities; the legend sits above the tallest bar (0.8)
BAR = 0.34  # width of each bar; the draft's left of the token, the emitted one right
LINE_HALF = 0.45  # the dashed target line spans both bars (its label above both)
MOST_TOKENS = max(VOCABULARIES)
TABLE_HEADER = ("token", "p", "q", "keep min(1, p/q)", "residual", "emitted",
                f"{DRAWS:,} draws")


def probability(value: float) -> str:
    return format_value(float(value), decimals=2)


class SpeculativeSamplingView(FigureView):
    def build(self) -> None:
        for name in ("vocabulary", "quality"):
            self.controls.add(name)
        self.sample = QPushButton("Sample")
        self.sample.setToolTip(f"Draw {DRAWS:,} tokens through the rule (new seed)")
        self.sample.setAccessibleName("Sample")
        self.sample.clicked.connect(
            lambda: self.model.set("draws", self.model.draws % 9999 + 1))
        self.controls.add_widget(self.sample)

        self.plot = plot_widget("Token", "Probability")
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        self.bars = CellGrid(font_size=9)
        item.addItem(self.bars)
        self.target = curve(item, pen("text", 2.5, Qt.DashLine))
        self.dots = Dots(item, MOST_TOKENS, 13, theme.color("onchip"), pen("text", 1.5))
        self.labels = TextLayer(QRectF(-1, 0, MOST_TOKENS + 1, Y_TOP), keep_inside=True)
        self.p_labels = [self.labels.add(role="text", size=9, bold=True, anchor=(0.5, 1.15))
                         for _ in range(MOST_TOKENS)]
        item.addItem(self.labels)
        # The labels keep clear of the draws' dots, a few pixels above them.
        item.getViewBox().sigResized.connect(self.schedule_refresh)
        legend = Legend(item, anchor=(1, 0), columns=3)
        legend.add_box("draft q", theme.color("background"), outline=theme.color("text"))
        legend.add_box("kept: min(p, q)", theme.color("compute"))
        legend.add_box("resampled: max(0, p − q)", theme.color("highlight"))
        legend.add_line("target p", pen("text", 2.5, Qt.DashLine))
        legend.add_dot(f"{DRAWS:,} draws", theme.color("onchip"), theme.color("text"))
        self.add_plot(self.plot, 3)

        self.table = TextTable(TABLE_HEADER, MOST_TOKENS, "Per token", left=(0,))
        self.add_plot(self.table, 0)

    def refresh(self) -> None:
        out: SpeculativeSamplingOut = self.model.out
        spec = out.spec
        k = len(spec.p)
        if self.needs_update("tokens", spec.tokens):
            item = self.plot.getPlotItem()
            item.setRange(xRange=(-0.6, k - 0.4), yRange=(0, Y_TOP), padding=0)
            item.getAxis("bottom").setTicks([list(enumerate(spec.tokens)), []])
        x = np.arange(k, dtype=float)
        # The draft's number is written in the part of its bar the dashed line at p does
        # not cross (below p or above it, whichever is taller), never on the line.
        p, q = spec.p, spec.q
        crossed = p < q
        upper = crossed & (q - p > p)
        low = np.where(upper, p, 0.0)
        high = np.where(crossed & ~upper, p, q)
        rects = np.concatenate([
            np.column_stack([x - BAR - 0.02, np.zeros(k), np.full(k, BAR), q]),
            np.column_stack([x + 0.02, np.zeros(k), np.full(k, BAR), spec.kept]),
            np.column_stack([x + 0.02, spec.kept, np.full(k, BAR), spec.resampled]),
            np.column_stack([x - BAR - 0.02, low, np.full(k, BAR), high - low])])
        background, text = theme.color("background"), theme.color("text")
        self.bars.set_cells(
            rects, [background] * k + [theme.color("compute")] * k
            + [theme.color("highlight")] * k + [None] * k,
            [text] * k + [None] * (3 * k),
            texts=[""] * k + [probability(v) for v in (*spec.kept, *spec.resampled, *q)])
        ends = np.column_stack([x - LINE_HALF, x + LINE_HALF, np.full(k, np.nan)]).ravel()
        self.target.set_data(ends, np.column_stack([spec.p, spec.p, np.full(k, np.nan)]).ravel())
        shown = np.full(MOST_TOKENS, np.nan)
        frequencies = out.frequencies
        if frequencies is not None:
            shown[:k] = frequencies
        # Above the bars, the line and the draws' dot (its radius and a little air).
        pixel = self.plot.getPlotItem().getViewBox().viewPixelSize()[1]
        dot_room = (6.5 * theme.screen_scale() + 3) * pixel
        for i, label in enumerate(self.p_labels):
            label.setText(f"p = {probability(spec.p[i])}" if i < k else "")
            if i < k:
                above = max(float(spec.p[i]), float(spec.q[i])) + 0.01
                if frequencies is not None:
                    above = max(above, float(frequencies[i]) + dot_room)
                label.setPos(float(x[i]), above)
        self.dots.set_points(np.arange(MOST_TOKENS) + 0.02 + BAR / 2, shown)
        self.table.set_rows([(
            [spec.tokens[i], probability(spec.p[i]), probability(spec.q[i]),
             probability(spec.accept_probability[i]), probability(spec.residual[i]),
             probability(spec.emitted[i]),
             "" if frequencies is None else format_value(float(frequencies[i]), decimals=3)],
            theme.text_color("text")) for i in range(k)])
        text_, warn = self.model.message()
        self.message.show_message(text_, warn=warn)
