"""Figure 3.1: an unfused chain of elementwise kernels against one fused kernel."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsRectItem

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import brush, pen, plot_widget, text_item
from gpuviz.models.kernels import FUSION_N_MAX, FUSION_N_MIN, US

# Fixed log10 ranges: every setting of the figure fits, so the axes never move.
TIME_RANGE_US = (0.1, 3e5)
RIGHT_LABEL_FROM_N = 1e8  # beyond it the speed-up label goes left of the dots
X_MARGIN = 0.15  # decades beyond the slider's ends, so the dots are never cut


class FusionView(FigureView):
    def build(self) -> None:
        for name in ("elements", "k", "ops", "dtype", "gpu", "launch_overhead_us"):
            self.controls.add(name)

        self.plot = plot_widget("Elements N", "Time (µs)", log_x=True, log_y=True)
        item = self.plot.getPlotItem()
        x_lo, x_hi = math.log10(FUSION_N_MIN), math.log10(FUSION_N_MAX)
        y_lo, y_hi = (math.log10(v) for v in TIME_RANGE_US)
        item.setXRange(x_lo - X_MARGIN, x_hi + X_MARGIN, padding=0)
        item.setYRange(y_lo, y_hi, padding=0)
        item.disableAutoRange()
        for axis, low, high in (("bottom", x_lo, x_hi), ("left", y_lo, y_hi)):
            # Without this pyqtgraph rescales a unitless axis that reaches 1e9 ("x1e+09").
            item.getAxis(axis).setSIPrefixEnableRanges(())
            # Decades only: the automatic minor ticks of a log axis draw about a hundred
            # translucent grid lines, which costs several ms per repaint.
            decades = range(math.ceil(low), math.floor(high) + 1)
            item.getAxis(axis).setTicks([[(d, _power_of_ten(d)) for d in decades], []])
        self._y_top, self._y_bottom = y_hi, y_lo

        # Items that know nothing of log mode (region, lines, text) take log10 positions.
        # A plain rectangle: LinearRegionItem is interactive and costs more per update.
        self.region = QGraphicsRectItem()
        self.region.setBrush(brush("idle", 60))
        self.region.setPen(pg.mkPen(None))
        self.region.setZValue(-10)
        item.addItem(self.region)
        self.region_label = text_item("launch-bound", role="idle", size=10, bold=True,
                                      anchor=(0, 0))
        item.addItem(self.region_label)
        self.memory_label = text_item("memory-bound", role="muted", size=10, bold=True,
                                      anchor=(1, 0))
        self.memory_label.setPos(x_hi + X_MARGIN - 0.05, y_hi - 0.05)
        item.addItem(self.memory_label)
        self.n_line = pg.InfiniteLine(angle=90, movable=False,
                                      pen=pen("neutral", 1.0, pg.QtCore.Qt.DashLine))
        item.addItem(self.n_line)

        item.addLegend(offset=(-10, -10), labelTextColor=theme.color("text"),
                       labelTextSize=f"{9 * theme.current().font_scale:.0f}pt",
                       brush=brush("background", 200))
        self.unfused = item.plot(pen=pen("memory", 2.5), name="Unfused chain (k kernels)")
        self.fused = item.plot(pen=pen("onchip", 2.5), name="Fused (1 kernel)")
        self.unfused_dot = item.plot(pen=None, symbol="o", symbolSize=10,
                                     symbolBrush=brush("memory"), symbolPen=pen("text", 1))
        self.fused_dot = item.plot(pen=None, symbol="o", symbolSize=10,
                                   symbolBrush=brush("onchip"), symbolPen=pen("text", 1))
        self.speed_label = text_item(size=10, bold=True, anchor=(0, 0.5))
        item.addItem(self.speed_label)
        self.add_plot(self.plot)

    def refresh(self) -> None:
        out = self.model.out
        n = self.model.elements
        curve_us = out.unfused_curve_s / US
        self.unfused.setData(out.n_curve, curve_us)
        self.fused.setData(out.n_curve, out.fused_curve_s / US)
        self.unfused_dot.setData([n], [out.unfused_s / US])
        self.fused_dot.setData([n], [out.fused_s / US])

        x_lo = math.log10(FUSION_N_MIN) - X_MARGIN
        x_hi = math.log10(FUSION_N_MAX) + X_MARGIN
        right = min(max(math.log10(out.boundary_n), x_lo), x_hi)
        self.region.setRect(QRectF(x_lo, self._y_bottom, right - x_lo,
                                   self._y_top - self._y_bottom))
        self.region_label.setPos(x_lo + 0.05, self._y_top - 0.05)
        self.region_label.setVisible(out.boundary_n > FUSION_N_MIN * 10)
        self.n_line.setPos(math.log10(n))
        # The speed-up sits between the two dots, beside the N line.
        middle = 0.5 * (math.log10(out.unfused_s / US) + math.log10(out.fused_s / US))
        right_half = n > RIGHT_LABEL_FROM_N
        self.speed_label.setAnchor((1, 0.5) if right_half else (0, 0.5))
        self.speed_label.setText(f" {format_value(out.speedup, '×')} ")
        self.speed_label.setPos(math.log10(n), middle)

        k = self.model.k
        regime = "launch-bound" if out.launch_bound else "memory-bound"
        self.message.show_message(
            f"At N = {format_value(n)} the {k} unfused kernels are {regime}: "
            f"{format_value(out.unfused_s / US, 'µs')} against "
            f"{format_value(out.fused_s / US, 'µs')} fused, "
            f"{format_value(out.speedup, '×')} faster. The speed-up is "
            f"{format_value(out.speedup_launch_bound, '×')} when launches dominate and "
            f"{format_value(out.speedup_memory_bound, '×')} when HBM traffic does.")


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_of_ten(exponent: int) -> str:
    if exponent == 0:
        return "1"
    if exponent == 1:
        return "10"
    return "10" + str(exponent).translate(SUPERSCRIPTS)
