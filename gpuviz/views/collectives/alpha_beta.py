"""Figure 7.3: all-reduce time against message size for three algorithms (log-log)."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ticks, set_time_ticks
from gpuviz.core.model import format_value, si_text, time_text
from gpuviz.core.plots import Dots, Legend, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models import collective_sim as cs
from gpuviz.models.collectives import SIZE_MAX, SIZE_MIN, AlphaBetaOut, Measured
from gpuviz.views.collectives.measured import (
    MEASURED_LABEL,
    MEASURED_ROLE,
    MeasurementButtons,
    measured_dots,
    set_measured,
)

X_RANGE = (math.log10(SIZE_MIN), math.log10(SIZE_MAX))
STYLES = {"ring": ("network", Qt.SolidLine), "recursive_doubling": ("network", Qt.DashLine),
          "rabenseifner": ("neutral", Qt.DashDotLine)}
# Three patterns, not only two colours: aqua and grey meet for a red-green colour-blind eye.
MAX_CROSSINGS = 3  # pairs of three algorithms
LABEL_STAGGER = 0.8  # decades between the feet of successive crossover labels


class AlphaBetaView(FigureView):
    def build(self) -> None:
        for name in ("gpus", "link", "alpha_us", "bandwidth_gbs", "message_bytes"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        # The fit's α, 1/β and worst error are in the comment under the plot: three rows
        # fewer, so the column fits a 1280x800 projector with measurements loaded.
        self.readouts.left_out = frozenset(("fit_alpha", "fit_bandwidth", "fit_error"))
        self.measured_buttons = self.controls.add_widget(MeasurementButtons(
            self.model, "Set P, α and 1/β to the measurement's ranks and fitted ring"))

        self.plot = plot_widget("Message size n (bytes, log scale)", "All-reduce time")
        item = self.plot.getPlotItem()
        item.setXRange(*X_RANGE, padding=0)
        set_log_ticks(item.getAxis("bottom"), *X_RANGE)
        self.legend = Legend(item, anchor=(0, 0))
        self.curves = {a: curve(item, pen(role, 2.5, style))
                       for a, (role, style) in STYLES.items()}
        self._fill_legend(measured=False)
        self.measured_dots = measured_dots(item)
        self._measured_span: tuple[int, int] | None = None  # decades of the dots' times
        # Vertical lines drawn once from y = 0 to 1 in a unit we rescale: moved with setPos.
        self.crossing_lines = [curve(item, pen("neutral", 1.5, Qt.DashLine))
                               for _ in range(MAX_CROSSINGS)]
        self.answer_line = curve(item, pen("neutral", 1.5, Qt.DashLine))
        self.guess_line = curve(item, pen("text", 1.5, Qt.DotLine))
        self.marker = curve(item, pen("highlight", 2.5))
        self.dots = Dots(item, 3, 11, [theme.color(STYLES[a][0]) for a in STYLES],
                         pen("text", 1.5))
        self.labels = TextLayer(QRectF(X_RANGE[0], -12, X_RANGE[1] - X_RANGE[0], 20),
                                keep_inside=True)
        self.crossing_labels = [self.labels.add(size=9, role="text", anchor=(-0.05, 0))
                                for _ in range(MAX_CROSSINGS)]
        self.answer_label = self.labels.add(size=9, role="text", anchor=(-0.05, 0))
        self.guess_label = self.labels.add(size=9, role="text", anchor=(-0.05, 0))
        self.marker_label = self.labels.add(size=9, role="highlight", bold=True,
                                            anchor=(-0.05, 1))
        item.addItem(self.labels)
        self._y_range: tuple[int, int] | None = None
        self.add_plot(self.plot)
        item.getViewBox().sigResized.connect(self._place_legend)

    def _place_legend(self) -> None:
        """The legend sits top left, unless the message's label (at the top, right of
        its line) would run under it, a small n: then it moves right, just past the label
        (the curves rise at the right, so no further)."""
        box = self.plot.getPlotItem().getViewBox()
        width = box.width()
        if width <= 0:
            return
        x = math.log10(self.model.message_bytes)
        left = (x - X_RANGE[0]) / (X_RANGE[1] - X_RANGE[0]) * width
        legend_width = self.legend.boundingRect().width()
        offset = 6  # the legend's margin in the view box
        if left >= legend_width + 2 * offset:
            self.legend.set_anchor((0, 0))
            return
        past = left + self.marker_label.width + 2 * offset
        room = max(width - legend_width - 2 * offset, 1.0)
        self.legend.set_anchor((round(min(max((past - offset) / room, 0.0), 1.0), 3), 0))

    def _fill_legend(self, measured: bool) -> None:
        self.legend.clear()
        for a, (role, style) in STYLES.items():
            self.legend.add_line(cs.ALGORITHM_NAMES[a], pen(role, 2.5, style))
        if measured:
            self.legend.add_dot(MEASURED_LABEL, theme.color(MEASURED_ROLE))

    def _show_measured(self, measured: Measured | None) -> None:
        """The measured times as all-reduce times at their bus bandwidth (a dot per
        size, inside the plot's sizes), the legend row and the buttons."""
        self._measured_span = None
        xs = ys = np.empty(0)
        if measured is not None:
            sizes = measured.table.sizes[measured.shown]
            inside = (sizes >= SIZE_MIN) & (sizes <= SIZE_MAX)
            xs = np.log10(sizes[inside])
            ys = np.log10(measured.allreduce_times[inside])
            if len(ys):
                self._measured_span = (math.floor(ys.min()), math.ceil(ys.max()))
        set_measured(self.measured_dots, xs, ys)
        self._fill_legend(measured is not None)
        self.measured_buttons.sync()

    def _vertical(self, line, x: float) -> None:  # noqa: ANN001 - a Curve
        low, high = self._y_range
        if self.needs_update(line, (x, low, high)):
            line.set_data([x, x], [low, high])

    def refresh(self) -> None:
        out: AlphaBetaOut = self.model.out
        log_n = np.log10(out.sizes)
        log_t = {a: np.log10(t) for a, t in out.times.items()}
        measured = self.model.measured
        if self.needs_update("measured", measured):
            self._show_measured(measured)
        low = math.floor(min(float(t[0]) for t in log_t.values()))
        high = math.ceil(max(float(t[-1]) for t in log_t.values()))
        if self._measured_span is not None:
            low, high = min(low, self._measured_span[0]), max(high, self._measured_span[1])
        if (low, high) != self._y_range:  # moves in whole decades only
            self._y_range = (low, high)
            item = self.plot.getPlotItem()
            item.setYRange(low, high, padding=0)
            set_time_ticks(item.getAxis("left"), low, high)
            self.labels.set_bounds(QRectF(X_RANGE[0], low, X_RANGE[1] - X_RANGE[0],
                                          high - low))
        if self.needs_update("curves", (out.ranks, out.alpha, out.beta)):
            for a, c in self.curves.items():
                c.set_data(log_n, log_t[a])
        # Crossovers that change the winner; the one to predict waits for Reveal.
        shown = [(a, b, n) for a, b, n in out.crossings_shown(self.model.revealed)]
        for i, (line, label) in enumerate(zip(self.crossing_lines, self.crossing_labels,
                                              strict=True)):
            if i < len(shown):
                a, b, n = shown[i]
                x = math.log10(n)
                self._vertical(line, x)
                label.setText(f"{_short(a)}/{_short(b)}\n{si_text(n, 'B')}")
                # Apart when lines are close, above the guess's label at the bottom.
                label.setPos(x, low + LABEL_STAGGER * (i + 1))
                label.setVisible(True)
            else:
                if self.needs_update(line, None):
                    line.set_data([], [])
                label.setVisible(False)
        guess = math.log10(self.model.guess_bytes)
        self._vertical(self.guess_line, guess)
        self.guess_label.setText(f"your guess {si_text(self.model.guess_bytes, 'B')}")
        # At the foot of its line: the top belongs to the message's label, which a
        # guess near the message would run into.
        self.guess_label.setPos(guess, low)
        answer = out.rd_rab if self.model.revealed else None
        if answer is not None and not out.rd_rab_shown():
            # Revealed but not a change of winner: still show where the two cross.
            x = math.log10(answer) if SIZE_MIN <= answer <= SIZE_MAX else math.nan
            self._vertical(self.answer_line, x)
            self.answer_label.setText(f"RD/Rab. {si_text(answer, 'B')}")
            self.answer_label.setPos(x, low + LABEL_STAGGER * (len(shown) + 1))
            self.answer_label.setVisible(math.isfinite(x))
        else:
            if self.needs_update(self.answer_line, None):
                self.answer_line.set_data([], [])
            self.answer_label.setVisible(False)

        n = self.model.message_bytes
        x = math.log10(n)
        self._vertical(self.marker, x)
        self.dots.set_points([x] * 3, [math.log10(out.at_marker[a]) for a in STYLES])
        best = out.winner
        # Three short lines: narrow enough to stay right of the line on a 1280x800
        # projector, where a flip to the left would land on the legend.
        self.marker_label.setText(f"n = {si_text(n, 'B')}\n{cs.ALGORITHM_NAMES[best]}\n"
                                  f"{time_text(out.at_marker[best])}")
        self.marker_label.setPos(x, high)
        self._place_legend()
        self.predict.sync()
        self.message.show_message(self._describe(out) + self._describe_measured(measured))

    @staticmethod
    def _describe_measured(measured: Measured | None) -> str:
        if measured is None:
            return ""
        table, fit = measured.table, measured.fit
        as_allreduce = ("" if table.collective == "all_reduce" else
                        ", drawn as all-reduce times at the bus bandwidth measured")
        return (f" Dots: {table.name}{as_allreduce}. The ring fits them best with "
                f"α = {time_text(fit.alpha)} and 1/β = "
                f"{si_text(1 / fit.beta, 'B/s') if fit.beta > 0 else 'unmeasured'}, "
                f"at worst {format_value(100 * fit.worst_error, '%', 2)} off.")

    def _describe(self, out: AlphaBetaOut) -> str:
        ratio = out.alpha / out.beta
        base = (f"α/β = {si_text(ratio, 'B')}: below a few α/β the step count decides, "
                "above it the bytes do.")
        if out.power_of_two:
            return (base + f" P = {out.ranks} is a power of two, so Rabenseifner is never "
                    "slower than the ring in this model.")
        q = cs.floor_power_of_two(out.ranks)
        return (base + f" P = {out.ranks} is not a power of two: recursive doubling and "
                f"Rabenseifner fold {out.ranks - q} pairs in and out (two extra full-buffer "
                "steps), so the ring wins large messages.")


def _short(algorithm: str) -> str:
    return {"ring": "ring", "recursive_doubling": "RD", "rabenseifner": "Rab."}[algorithm]
