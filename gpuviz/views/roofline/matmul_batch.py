"""Figure 2.2: at what batch does a (B x d) @ (d x d) matmul become compute-bound?"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import (
    decade_label,
    set_log_ranges,
    set_log_ticks,
    set_time_ticks,
    time_label,
)
from gpuviz.core.model import Readout, format_value, kept_digits, si_text, time_text
from gpuviz.core.plots import Dots, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, polyline_segments
from gpuviz.core.widgets import PredictReveal, TextTable
from gpuviz.models.roofline import BATCH_MAX, COMPUTE

X_RANGE = (0.0, math.log10(BATCH_MAX))  # log10 B
Y_RANGE = (-0.3, 4.2)  # log10 FLOP/B
# Heights (log10 FLOP/B) where "your guess" may sit beside its line, lowest first: higher
# ones are above the curve where a small guess puts the label on it.
GUESS_LABEL_YS = (Y_RANGE[0] + 0.05, Y_RANGE[0] + 0.8, Y_RANGE[0] + 1.6, Y_RANGE[1] - 0.5)
LABEL_XS = (X_RANGE[0] + 0.05, 1.2, 2.0, 3.0, 3.8)  # where the time curves' labels may go


# Short headers and cells: the table must fit the plot column in the projector theme at
# 1280 x 800 (its columns only grow, so the widest B, "16,384 now", counts).
TABLE_HEADER = ("B", "Work", "Bytes", "FLOP/B", "Time", "vs B=1", "Bound")


def _hline(x: tuple[float, float], y: float) -> tuple[list[float], list[float]]:
    return [x[0], x[1]], [y, y]


class MatmulBatchView(FigureView):
    def build(self) -> None:
        for name in ("gpu", "width", "batch_size"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("Batch B (tokens, log scale)",
                                "Intensity (FLOP/B)")
        item = self.plot.getPlotItem()
        set_log_ranges(item, X_RANGE, Y_RANGE)
        self.ceiling = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.ridge = curve(item, pen("compute", 2.5))
        self.curve = curve(item, pen("text", 2.5))
        self.guess_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.answer_line = curve(item, pen("highlight", 2.0))
        # A marker in each colour; the one of the current bound shows.
        marker_roles = [theme.color("compute"), theme.color("memory")]
        marker_outline = pen("text", 1.5)
        self.marker = Dots(item, 2, 14, marker_roles, marker_outline)
        # The straight lines are drawn once at the origin and moved with
        # setPos: a move costs less than new data (a new path).
        self.ceiling.set_data(*_hline(X_RANGE, 0.0))
        self.ridge.set_data(*_hline(X_RANGE, 0.0))
        self.guess_line.set_data([0.0, 0.0], [Y_RANGE[0], Y_RANGE[1]])
        # The labels of a plot are one item, painted in one call; each goes to the first
        # of its candidate places that covers no other label, line or the marker (worked
        # out in pixels, so it holds in every look and window size).
        self.labels = labels = PlacedTextLayer(QRectF(
            X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0], Y_RANGE[1] - Y_RANGE[0]))
        self.answer_label = labels.add(role="highlight", size=9, bold=True)
        self.ridge_label = labels.add(role="compute", size=9, bold=True)
        self.ceiling_label = labels.add(role="text", size=9)
        self.guess_label = labels.add(role="text", size=9)
        item.addItem(labels)
        self.add_plot(self.plot, 3)

        self.time_plot = plot_widget("Batch B (tokens, log scale)", "Time")
        titem = self.time_plot.getPlotItem()
        titem.setXRange(*X_RANGE, padding=0)
        set_log_ticks(titem.getAxis("bottom"), *X_RANGE)
        self.memory_time = curve(titem, pen("memory", 2.5))
        self.compute_time = curve(titem, pen("compute", 2.5))
        self.time_marker = Dots(titem, 2, 12, marker_roles, marker_outline)
        self.time_text = PlacedTextLayer(QRectF(X_RANGE[0], -30, X_RANGE[1] - X_RANGE[0], 60))
        self.memory_time_label = self.time_text.add("memory time", role="memory", size=9)
        self.compute_time_label = self.time_text.add("compute time", role="compute", size=9)
        titem.addItem(self.time_text)
        # The two plots share their x axis exactly: their y axes keep the same room for
        # tick text, the widest label either can show.
        metrics = QFontMetricsF(item.getAxis("left").style["tickFont"] or self.font())
        texts = [decade_label(e) for e in range(-1, 6)] + [time_label(e) for e in range(-12, 3)]
        width = int(max(metrics.horizontalAdvance(t) for t in texts)) + 2
        for axis in (item.getAxis("left"), titem.getAxis("left")):
            axis.setStyle(tickTextWidth=width, autoExpandTextSpace=False)
        self._time_range: tuple[int, int] | None = None
        self.add_plot(self.time_plot, 2)

        # Painted by one widget of fixed height: an HTML table in a QLabel cost more to
        # lay out than the rest of the refresh.
        self.table = TextTable(TABLE_HEADER, len(self.model.out.table) + 1,
                               "Work and time for several batch sizes")
        self.add_plot(self.table, 0)

    def refresh(self) -> None:
        out = self.model.out
        row = out.row
        roof = out.roof
        log_b = np.log10(out.curve_batch)
        log_ceiling = math.log10(out.ceiling)
        log_ridge = math.log10(roof.ridge)
        # The curves move only with d and the GPU, not with B or the guess.
        curves_changed = self.needs_update("curves", (out.curve_batch.tobytes(),
                                                  out.curve_intensity.tobytes(),
                                                  out.curve_memory.tobytes(),
                                                  out.curve_compute.tobytes()))
        if curves_changed:
            self.curve.set_data(log_b, np.log10(out.curve_intensity))
        if self.needs_update("lines", (log_ceiling, log_ridge)):
            self.ceiling.setPos(0.0, log_ceiling)
            self.ridge.setPos(0.0, log_ridge)
        # With the ridge just above the ceiling the label fits only under it, left of the
        # curve: there the shorter text.
        name = "ceiling" if 0 < log_ridge - log_ceiling < 0.6 else "ceiling d/2 ="
        self.ceiling_label.setText(f"{name} {out.ceiling:,.0f} FLOP/B")
        self.ridge_label.setText(f"ridge {roof.ridge:,.0f} FLOP/B")
        left, right = X_RANGE[0] + 0.05, X_RANGE[1] - 0.05
        middle = (X_RANGE[0] + X_RANGE[1]) / 2
        # Also a little right of the left edge: a guess of B = 1 draws its line there, and
        # a ridge just above the ceiling (d = 256) leaves only the space under it.
        inner = (X_RANGE[0] + 0.15, X_RANGE[0] + 0.3)
        for label, y, ends in ((self.ceiling_label, log_ceiling, (left, middle, right, *inner)),
                               (self.ridge_label, log_ridge, (right, middle, left, *inner))):
            self.labels.set_candidates(label, [
                (x, y, 0.0 if x < middle else 1.0 if x > middle else 0.5, side)
                for x in ends for side in (1.05, -0.05)])
        x = math.log10(row.batch)
        # The marker of the other colour gets NaN, which hides it.
        xs = [x, math.nan] if row.time.bound == COMPUTE else [math.nan, x]
        self.marker.set_points(xs, [math.log10(row.intensity)] * 2)

        guess = math.log10(self.model.guess_batch)
        if self.needs_update("guess", guess):
            self.guess_line.setPos(guess, 0.0)
        self.guess_label.setText(f"your guess {self.model.guess_batch:,}")
        self.labels.set_candidates(self.guess_label, [
            (guess, y, side, 1.0) for y in GUESS_LABEL_YS for side in (-0.05, 1.05)])
        shown = self.model.revealed and math.isfinite(out.b_star)
        if shown:
            bx = math.log10(out.b_star)
            if self.needs_update("answer", (bx, log_ridge)):
                self.answer_line.set_data([bx, bx], [Y_RANGE[0], log_ridge])
            self.answer_label.setText(f"B* = {out.b_star:,.0f}")
            self.labels.set_candidates(self.answer_label, [
                (bx, log_ridge, ax, ay) for ay in (-0.05, 1.05) for ax in (-0.05, 1.05)])
        else:
            if self.needs_update("answer", None):
                self.answer_line.set_data([], [])
            self.answer_label.setText("")

        if curves_changed:
            self.memory_time.set_data(log_b, np.log10(out.curve_memory))
            self.compute_time.set_data(log_b, np.log10(out.curve_compute))
        self.time_marker.set_points(xs, [math.log10(row.time.time)] * 2)
        low = math.floor(math.log10(min(out.curve_memory[0], out.curve_compute[0])))
        high = math.ceil(math.log10(max(out.curve_memory[-1], out.curve_compute[-1])))
        if self._time_range != (low, high):  # moves only with d and the GPU, in decades
            self._time_range = (low, high)
            titem = self.time_plot.getPlotItem()
            titem.setYRange(low, high, padding=0)
            set_time_ticks(titem.getAxis("left"), low, high)
        # Obstacles for the labels: the curves, the lines and the marker.
        guess_x = math.log10(self.model.guess_batch)
        answer = ([[math.log10(out.b_star), Y_RANGE[0], math.log10(out.b_star), log_ridge]]
                  if shown else [])
        self.labels.set_obstacles(
            np.vstack([polyline_segments(log_b, np.log10(out.curve_intensity), 4),
                       [[X_RANGE[0], log_ceiling, X_RANGE[1], log_ceiling],
                        [X_RANGE[0], log_ridge, X_RANGE[1], log_ridge]]]),
            np.array([[x, math.log10(row.intensity)]]), 14,
            moving=np.array([[guess_x, Y_RANGE[0], guess_x, Y_RANGE[1]], *answer]))
        memory, compute = np.log10(out.curve_memory), np.log10(out.curve_compute)
        self.time_text.set_obstacles(np.vstack([polyline_segments(log_b, memory, 4),
                                                polyline_segments(log_b, compute, 4)]),
                                     np.array([[x, math.log10(row.time.time)]]), 12)
        for label, ys in ((self.memory_time_label, memory), (self.compute_time_label, compute)):
            # Just left of and above a point of the curve, or right of and below it: a
            # rising or flat curve passes clear of the text. From the left end rightwards.
            places = []
            for x_at in LABEL_XS:
                y_at = float(np.interp(x_at, log_b, ys))
                places += [(x_at, y_at, 0.0 if x_at == LABEL_XS[0] else 1.0, 1.05),
                           (x_at, y_at, 0.0, -0.05)]
            self.time_text.set_candidates(label, places)
        self.table.set_rows(self._table_rows())
        self.predict.sync()
        if math.isinf(out.b_star) and self.model.revealed:
            self.message.show_message(
                f"The ceiling d/2 = {out.ceiling:,.0f} FLOP/B lies below the ridge: no batch "
                "is large enough to make this matmul compute-bound.", warn=True)
        else:
            self.message.show_message(
                f"B = {row.batch:,}: {format_value(row.intensity, 'FLOP/B')}, "
                f"{row.time.bound}-bound, {time_text(row.time.time)}.")

    def _table_rows(self) -> list[tuple[list[str], object]]:
        out = self.model.out
        first = out.table[0]
        rows = []
        for r in (*out.table, out.row):
            current = r is out.row
            # The fixed row of the current batch lights up with the "now" row.
            color = theme.text_color("highlight" if current or r.batch == out.row.batch
                                     else "text")
            values = [f"{r.batch:,}" + (" now" if current else ""), si_text(r.flops, "FLOP"),
                      si_text(r.bytes, "B"),
                      format_value(r.intensity), time_text(r.time.time),
                      _ratio_text(r.time.time / first.time.time), r.time.bound]
            rows.append((values, color))
        return rows


def _ratio_text(ratio: float) -> str:
    """A ratio to three significant digits, so a column reads alike: 1.05×, 32.7×, 128×
    (not 32.74× above 128×)."""
    return kept_digits(Readout("", ratio, "×")).text
