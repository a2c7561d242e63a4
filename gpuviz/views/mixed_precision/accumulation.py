"""Figure 5.2: adding one term again and again in a low-precision accumulator."""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, nice_ceiling, superscript
from gpuviz.core.plots import Dots, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models.mixed_precision import value_text


class AccumulationView(FigureView):
    def build(self) -> None:
        self.controls.add("accumulator")
        self.controls.add("method", style="buttons")
        self.controls.add("term")
        self.controls.add("count")

        self.plot = plot_widget("Terms added k", "Sum")
        item = self.plot.getPlotItem()
        item.getAxis("left").enableAutoSIPrefix(False)  # a sum of 0.125s reads 0.1, not 100×10⁻³
        self.stall_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.sums = curve(item, pen("highlight", 3.0))
        self.exact = curve(item, pen("text", 1.5, Qt.DashLine))  # over the sum: both show
        self.stall_dot = Dots(item, 1, 13, theme.color("highlight"), pen("text", 1.5))
        self.labels = TextLayer(QRectF(0, 0, 1, 1), keep_inside=True)
        self.exact_label = self.labels.add("exact sum k·t", size=9, anchor=(1, 1.1))
        self.sum_label = self.labels.add(role="highlight", size=9, bold=True,
                                         anchor=(1, -0.1))
        self.stall_label = self.labels.add(role="muted", size=9, anchor=(0, 1.1))
        self.dot_label = self.labels.add(role="highlight", size=9, anchor=(-0.05, -0.15))
        item.addItem(self.labels)
        self._range: tuple[float, float] | None = None
        self.add_plot(self.plot)

    def refresh(self) -> None:
        out = self.model.out
        item = self.plot.getPlotItem()
        count = len(out.counts)
        top_value = max(float(out.exact[-1]), float(out.sums.max()))
        ranges = (max(nice_ceiling(count), 2.0), nice_ceiling(top_value * 1.08, FINE_STEPS))
        if ranges != self._range:
            self._range = ranges
            item.setXRange(0, ranges[0], padding=0)
            item.setYRange(0, ranges[1], padding=0)
            self.labels.set_bounds(QRectF(0, 0, ranges[0], ranges[1]))
            # A few terms: whole-number ticks (a count of terms has no 0.2).
            whole = int(ranges[0])
            item.getAxis("bottom").setTicks(
                [[(float(i), str(i)) for i in range(whole + 1)], []] if whole <= 10 else None)
        x_max, y_max = ranges
        self.exact.set_data([0.0, float(count)], [0.0, float(out.exact[-1])])
        self.sums.set_data(out.counts, out.sums)
        self.exact_label.setPos(float(count), float(out.exact[-1]))
        self.sum_label.setText(f"computed ({self.model.method}) "
                               f"{value_text(float(out.sums[-1]))}")
        end = float(out.sums[-1])
        stall = out.formula
        if abs(end - float(out.exact[-1])) < 0.1 * y_max and count > 1:
            # On the exact line: below it, farther left, where the rising lines leave room,
            # and not just over the stall line, whose label it would cover.
            def clear(f: float) -> bool:
                v = float(out.sums[int(f * (count - 1))])
                return stall > y_max or not stall - 0.02 * y_max <= v <= stall + 0.2 * y_max
            fraction = next((f for f in (0.6, 0.4, 0.8, 0.25) if clear(f)), 0.6)
            middle = int(fraction * (count - 1))
            self.sum_label.setAnchor((-0.05, -0.4))
            self.sum_label.setPos(float(out.counts[middle]), float(out.sums[middle]))
        elif count <= 0.6 * x_max:  # room right of the end, clear of the line
            self.sum_label.setAnchor((-0.05, 0.5))
            self.sum_label.setPos(float(count), end)
        else:
            self.sum_label.setAnchor((1, -0.1))
            self.sum_label.setPos(float(count), end)
        if stall <= y_max:
            self.stall_line.set_data([0.0, x_max], [stall, stall])
            self.stall_label.setText(f"t × 2{superscript(out.acc.precision)} = "
                                     f"{value_text(stall)}:\nnaive summation stops here")
            # Above the line, on the side the rising exact line does not cross it.
            crossing = stall / max(out.stored_term, 1e-300)
            if crossing >= 0.5 * x_max:
                self.stall_label.setAnchor((0, 1.1))
                self.stall_label.setPos(x_max * 0.02, stall)
            else:
                self.stall_label.setAnchor((1, 1.1))
                self.stall_label.setPos(x_max * 0.98, stall)
        else:
            self.stall_line.set_data([], [])
            self.stall_label.setText("")
        index = out.naive_stall_index
        if self.model.method == "naive" and index is not None and index <= count:
            self.stall_dot.set_points([float(index)], [out.naive_stall_value])
            self.dot_label.setText(f"stuck from term {index:,}")
            self.dot_label.setPos(float(index), out.naive_stall_value)
        else:
            self.stall_dot.set_points([math.nan], [math.nan])
            self.dot_label.setText("")
        self.message.show_message(*self.model.comment())
