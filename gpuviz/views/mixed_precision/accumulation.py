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
        ranges = (nice_ceiling(count), nice_ceiling(top_value * 1.08, FINE_STEPS))
        if ranges != self._range:
            self._range = ranges
            item.setXRange(0, ranges[0], padding=0)
            item.setYRange(0, ranges[1], padding=0)
            self.labels.set_bounds(QRectF(0, 0, ranges[0], ranges[1]))
        x_max, y_max = ranges
        self.exact.set_data([0.0, float(count)], [0.0, float(out.exact[-1])])
        self.sums.set_data(out.counts, out.sums)
        self.exact_label.setPos(float(count), float(out.exact[-1]))
        self.sum_label.setText(f"computed ({self.model.method}) "
                               f"{value_text(float(out.sums[-1]))}")
        end = float(out.sums[-1])
        if abs(end - float(out.exact[-1])) < 0.1 * y_max and count > 1:
            # On the exact line: below it, farther left, where the rising lines leave room.
            middle = int(0.6 * (count - 1))
            self.sum_label.setAnchor((-0.05, -0.4))
            self.sum_label.setPos(float(out.counts[middle]), float(out.sums[middle]))
        else:
            self.sum_label.setAnchor((1, -0.1))
            self.sum_label.setPos(float(count), end)
        stall = out.formula
        if stall <= y_max:
            self.stall_line.set_data([0.0, x_max], [stall, stall])
            self.stall_label.setText(f"t × 2{superscript(out.acc.precision)} = "
                                     f"{value_text(stall)}: naive summation stops here")
            self.stall_label.setPos(x_max * 0.35, stall)
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
