"""Figure 3.1: an unfused chain of elementwise kernels against one fused kernel."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsLineItem

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, superscript
from gpuviz.core.plots import (
    CellGrid,
    Dots,
    Legend,
    curve,
    opaque_blend,
    pen,
    plot_widget,
    text_item,
)
from gpuviz.models.kernels import FUSION_N_MAX, FUSION_N_MIN, US

RIGHT_LABEL_FROM_N = 1e8  # beyond it the speed-up label goes left of the dots
X_MARGIN = 0.15  # decades beyond the slider's ends, so the dots are never cut


class FusionView(FigureView):
    def build(self) -> None:
        for name in ("elements", "k", "ops", "dtype", "gpu", "launch_overhead_us"):
            self.controls.add(name)

        self.plot = plot_widget("Elements N", "Time (µs)", log_x=True, log_y=True)
        item = self.plot.getPlotItem()
        x_lo, x_hi = math.log10(FUSION_N_MIN), math.log10(FUSION_N_MAX)
        item.setXRange(x_lo - X_MARGIN, x_hi + X_MARGIN, padding=0)
        item.disableAutoRange()
        for axis in ("bottom", "left"):
            # Without this pyqtgraph rescales a unitless axis that reaches 1e9 ("x1e+09").
            item.getAxis(axis).setSIPrefixEnableRanges(())
        # Decades only: the automatic minor ticks of a log axis draw about a hundred
        # translucent grid lines, which costs several ms per repaint.
        decades = range(math.ceil(x_lo), math.floor(x_hi) + 1)
        item.getAxis("bottom").setTicks([[(d, _power_of_ten(d)) for d in decades], []])
        self._y_range: tuple[int, int] | None = None  # whole decades around the curves
        item.getViewBox().sigResized.connect(self._on_resize)

        # Every item takes log10 positions and is painted by Qt alone (pyqtgraph's log-mode
        # curves, scatter dots, InfiniteLine and TextItem run Python on every repaint).
        # The launch-bound region: a tint of the idle colour, hatched as idle cells are
        # (the GPU waits for launches there), in one CellGrid cell.
        self.region = CellGrid()
        self.region.setZValue(-10)
        item.addItem(self.region)
        self.region_label = text_item("launch-bound", role="idle", size=10, bold=True,
                                     anchor=(0, 0))
        item.addItem(self.region_label)
        self.memory_label = text_item("memory-bound", role="muted", size=10, bold=True,
                                     anchor=(0, 0))
        item.addItem(self.memory_label)
        self.n_line = QGraphicsLineItem()
        self.n_line.setPen(pen("neutral", 1.0, pg.QtCore.Qt.DashLine))
        item.addItem(self.n_line)

        # Curves of a handful of points (see `fusion()`), given in log10 coordinates.
        self.unfused = curve(item, pen("memory", 2.5))
        self.fused = curve(item, pen("onchip", 2.5))
        self.legend = Legend(item, anchor=(1, 1))
        self.legend.add_line("unfused chain (k kernels)", pen("memory", 2.5))
        self.legend.add_line("fused (1 kernel)", pen("onchip", 2.5))
        self.legend.add_box("launch-bound: the GPU waits for launches",
                            opaque_blend("idle", 60), hatch=True)
        self.dots = Dots(item, 2, 10, [theme.color("memory"), theme.color("onchip")],
                         pen("text", 1))
        self.speed_label = text_item(size=13, bold=True, anchor=(0, 0.5))
        item.addItem(self.speed_label)
        for overlay in (self.dots, self.speed_label):
            overlay.setZValue(10)  # over the curves, as the scatter dots were
        self.add_plot(self.plot)
        self._region_right: float | None = None

    def _refresh_region(self) -> None:
        """The launch-bound band, from the left edge to where launches stop dominating."""
        out = self.model.out
        x_lo = math.log10(FUSION_N_MIN) - X_MARGIN
        x_hi = math.log10(FUSION_N_MAX) + X_MARGIN
        right = min(max(math.log10(out.boundary_n), x_lo), x_hi)
        if right == self._region_right or self._y_range is None:
            return
        self._region_right = right
        self.region.set_cells(
            np.array([[x_lo, self._y_bottom, right - x_lo, self._y_top - self._y_bottom]]),
            [opaque_blend("idle", 60)], hatch=[True], hatch_ink=theme.color("idle"))
        self.region_label.setPos(x_lo + 0.05,
                                 self._y_top - 0.05 * (self._y_top - self._y_bottom))
        self.region_label.setVisible(out.boundary_n > FUSION_N_MIN * 10)
        self._place_memory_label()

    def _place_memory_label(self) -> None:
        """"memory-bound" at the top of its region, just right of the launch-bound band:
        there the curves are at their lowest, while at the right end they reach the top
        of the plot, with the dots and the speed-up label. Hidden where it has no room."""
        if self._region_right is None:
            return
        x_hi = math.log10(FUSION_N_MAX) + X_MARGIN
        unit = self.plot.getPlotItem().getViewBox().viewPixelSize()[0]
        width = self.memory_label.boundingRect().width() * unit
        left = self._region_right + 0.05
        self.memory_label.setPos(left, self._y_top - 0.05 * (self._y_top - self._y_bottom))
        self.memory_label.setVisible(unit <= 0 or left + width <= x_hi - 0.05)

    def _on_resize(self) -> None:
        self._set_time_axis()
        self._refresh_region()

    def _set_time_axis(self) -> None:
        """The decades of the curves, with room under them for the legend (again on a
        resize: the room is the legend's height in pixels)."""
        if self._y_range is None:
            return
        low, high = self._y_range
        item = self.plot.getPlotItem()
        bottom = self.legend.end_with_room(high, low)  # past `low`, downwards
        item.setYRange(bottom, high, padding=0)
        decades = range(low, high + 1)
        item.getAxis("left").setTicks([[(d, _power_of_ten(d)) for d in decades], []])
        self._y_top, self._y_bottom = high, bottom
        self.n_line.setLine(0, bottom, 0, high)
        self._region_right = None

    def refresh(self) -> None:
        out = self.model.out
        n = self.model.elements
        # The curves depend on k, ops, dtype, GPU and launch overhead, not on N: set_data
        # skips them when N alone moved.
        x = np.log10(out.n_curve)
        self.unfused.set_data(x, np.log10(out.unfused_curve_s / US))
        self.fused.set_data(x, np.log10(out.fused_curve_s / US))
        log_n = math.log10(n)
        log_unfused = math.log10(out.unfused_s / US)
        log_fused = math.log10(out.fused_s / US)
        self.dots.set_points([log_n, log_n], [log_unfused, log_fused])

        # The time axis: whole decades around both curves; it moves only when a curve
        # crosses a decade.
        times = np.log10(np.concatenate([out.unfused_curve_s, out.fused_curve_s]) / US)
        y_range = (math.floor(float(times.min())), math.ceil(float(times.max())))
        resized = self._y_range is None
        if y_range != self._y_range:
            self._y_range = y_range
            self._set_time_axis()
        if resized:
            self._region_right = None
        self._refresh_region()
        self.n_line.setPos(log_n, 0)
        # The speed-up sits under the lower (fused) dot, beside the N line: the curves
        # rise to the right, so the corner below them is free (between the dots it lay
        # on the curves, and at the top right on the "memory-bound" label).
        # Its top goes under the fused curve's lowest point across the label's width.
        right_half = n > RIGHT_LABEL_FROM_N
        self.speed_label.setAnchor((1, 0) if right_half else (0, 0))
        self.speed_label.setText(f" {format_value(out.speedup, '×')} ")
        px, py = self.plot.getPlotItem().getViewBox().viewPixelSize()
        width = self.speed_label.boundingRect().width() * px
        span = np.linspace(log_n - width, log_n, 9) if right_half else np.linspace(
            log_n, log_n + width, 9)
        below = float(np.interp(span, x, np.log10(out.fused_curve_s / US)).min())
        self.speed_label.setPos(log_n, min(below, log_fused) - 2 * py)

        k = self.model.k
        regime = "launch-bound" if out.launch_bound else "memory-bound"
        readouts = self.model.readouts()  # the times as the readouts write them
        unfused, fused = (_unbroken(readouts[key].text) for key in ("unfused_time", "fused_time"))
        self.message.show_message(
            f"At N = {format_value(n)} the {k} unfused kernels are {regime}: "
            f"{unfused} against {fused} fused, "
            f"{format_value(out.speedup, '×')} faster. The speed-up is "
            f"{format_value(out.speedup_launch_bound, '×')} when launches dominate and "
            f"{format_value(out.speedup_memory_bound, '×')} when HBM traffic does.")


def _power_of_ten(exponent: int) -> str:
    if exponent == 0:
        return "1"
    if exponent == 1:
        return "10"
    return "10" + superscript(exponent)


def _unbroken(text: str) -> str:
    """A number and its unit kept on one line (a no-break space between them)."""
    return text.replace(" ", "\u00a0")
