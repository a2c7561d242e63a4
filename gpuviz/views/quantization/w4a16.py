"""Figure 11.5: a bf16 weight (W16) against an int4 one with group scales (W4) on the H100
roofline, and their times against the number of tokens."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ranges, set_log_ticks, set_time_ticks
from gpuviz.core.plots import Dots, Legend, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, polyline_segments
from gpuviz.models.quantization import (
    COMPUTE_BOUND,
    TOKENS_MAX,
    W4,
    W16,
    bits_text,
    speedup_text,
)

X_RANGE = (-0.5, 4.0)  # log10 FLOP/B
Y_RANGE = (12.0, 15.5)  # log10 FLOP/s
N_RANGE = (0.0, math.log10(TOKENS_MAX))
FORMAT_KEYS = (W16, W4)
CLICK_PIXELS = 24  # how near a click must be to a point to select it
MEMORY_LABEL_X = 1.2  # log10 FLOP/B: clear of the points at n = 1 and n = 64
RING_SIZE = 26  # pixels across, the selected point's ring
# Where each point's label may sit (anchors of its text box), the preferred first: W16
# left of its point and W4 right of it, as on the slope; on the flat roof, where both
# points lie on the line, above or below it instead.
POINT_ANCHORS = {
    W16: ((1.25, 0.5), (1.0, 1.3), (0.5, 1.4), (1.0, -0.3), (0.5, -0.4), (-0.25, 0.5)),
    W4: ((-0.25, 0.5), (0.0, -0.3), (0.5, -0.4), (0.0, 1.3), (0.5, 1.4), (1.25, 0.5)),
}


def _format_pen(index: int, width: float = 2.5) -> object:
    # Categorical colours: the two formats are series, not roles. W16 dashed as well:
    # grey and bluish green look alike to a red-green colour-blind eye.
    qpen = pg.mkPen(theme.series(index), width=theme.line_width(width))
    if index == SERIES[W16]:
        qpen.setStyle(Qt.DashLine)
    return qpen


SERIES = {W16: 7, W4: 2}  # Okabe-Ito grey and bluish green


class W4A16View(FigureView):
    def build(self) -> None:
        self.controls.add("weight")
        self.controls.add("tokens")
        self.controls.add("group")
        self.controls.add("selected", style="buttons")

        self.roof_plot = plot_widget("Arithmetic intensity (FLOP per byte, log scale)",
                                     "Attainable FLOP/s (log scale)")
        item = self.roof_plot.getPlotItem()
        set_log_ranges(item, X_RANGE, Y_RANGE, y_unit="FLOP/s")
        self.memory_roof = curve(item, pen("memory", 3.0))
        self.compute_roof = curve(item, pen("compute", 3.0))
        self.ring = Dots(item, 1, RING_SIZE, theme.color("highlight"))
        # One marker per format and bound; the one of the current bound shows.
        fills = [theme.color(role) for _ in FORMAT_KEYS for role in ("compute", "memory")]
        self.points = Dots(item, 4, 15, fills, pen("text", 1.5))
        # Each label where it covers no other label, roof or point (placed in pixels).
        self.roof_labels = PlacedTextLayer(QRectF(X_RANGE[0], Y_RANGE[0],
                                                  X_RANGE[1] - X_RANGE[0],
                                                  Y_RANGE[1] - Y_RANGE[0]))
        # Below and right of the rising roof, whose line would cross a label set above it.
        self.memory_label = self.roof_labels.add(role="memory", size=9, bold=True,
                                                 anchor=(-0.08, -0.3))
        self.compute_label = self.roof_labels.add(role="compute", size=9, bold=True,
                                                  anchor=(1, 1.1))
        self.point_labels = {key: self.roof_labels.add(
            "W16" if key == W16 else "W4", size=10, bold=True) for key in FORMAT_KEYS}
        self._roof_segments = np.zeros((0, 4))
        item.addItem(self.roof_labels)
        self.roof_plot.scene().sigMouseClicked.connect(self._on_click)
        self.roof_plot.setToolTip("Click a point to read its minimum time")
        self.add_plot(self.roof_plot, 3)

        self.time_plot = plot_widget("Tokens n (log scale)", "Minimum time")
        titem = self.time_plot.getPlotItem()
        titem.setXRange(*N_RANGE, padding=0.02)  # the marks at n = 1 whole
        set_log_ticks(titem.getAxis("bottom"), *N_RANGE)
        self.curves = {key: curve(titem, _format_pen(SERIES[key])) for key in FORMAT_KEYS}
        self.n_line = curve(titem, pen("neutral", 1.5, Qt.DashLine))
        self.time_marks = Dots(titem, 2, 11, [theme.series(SERIES[k]) for k in FORMAT_KEYS],
                               pen("text", 1.0))
        # The key in the empty upper left (labels at the lines' start had no room under
        # the W4 line, and the speed-up sits between the lines).
        self.key = Legend(titem, anchor=(0, 0))
        # The comparison the figure is about, beside the two marks at n (its own item:
        # it moves with n).
        # Placed off the two curves, inside the plot (at n = 8,192 the marks are near its
        # top right corner).
        self.time_labels = PlacedTextLayer(QRectF(N_RANGE[0] - 1, -12, N_RANGE[1] + 2, 14))
        self.speedup_label = self.time_labels.add(role="text", size=11, bold=True)
        titem.addItem(self.time_labels)
        self._time_range: tuple[int, int] | None = None
        self._curve_segments = np.zeros((0, 4))
        self.add_plot(self.time_plot, 2)

    def _on_click(self, event: object) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        box = self.roof_plot.getPlotItem().getViewBox()
        pos = event.scenePos()
        best, nearest = None, float(CLICK_PIXELS)
        for key in FORMAT_KEYS:
            p = self.model.out.points[key]
            scene = box.mapViewToScene(pg.Point(math.log10(p.intensity),
                                                math.log10(p.attained)))
            d = math.hypot(scene.x() - pos.x(), scene.y() - pos.y())
            if d <= nearest:
                best, nearest = key, d
        if best is not None:
            self.model.set("selected", best)

    def refresh(self) -> None:
        out = self.model.out
        roof = out.roof
        log_bw, log_peak = math.log10(roof.bandwidth), math.log10(roof.peak)
        log_ridge = log_peak - log_bw
        if self.needs_update("roof", (log_bw, log_peak)):
            self.memory_roof.set_data([X_RANGE[0], log_ridge], [log_bw + X_RANGE[0], log_peak])
            self.compute_roof.set_data([log_ridge, X_RANGE[1]], [log_peak, log_peak])
            self.memory_label.setText(f"HBM {roof.bandwidth / 1e12:.2f} TB/s")
            self.memory_label.setPos(MEMORY_LABEL_X, log_bw + MEMORY_LABEL_X)
            self.compute_label.setText(f"{roof.gpu_name} BF16 {roof.peak / 1e12:,.0f} TFLOP/s")
            # Left of the ridge and above the peak nothing is drawn; the points gather on
            # the flat roof to the right of it.
            self.compute_label.setPos(log_ridge - 0.05, log_peak + 0.05)
            self._roof_segments = np.array(
                [[X_RANGE[0], log_bw + X_RANGE[0], log_ridge, log_peak],
                 [log_ridge, log_peak, X_RANGE[1], log_peak]])

        xs, ys = [], []
        for key in FORMAT_KEYS:
            p = out.points[key]
            x, y = math.log10(p.intensity), math.log10(p.attained)
            compute = p.time.bound == COMPUTE_BOUND
            xs += [x, math.nan] if compute else [math.nan, x]
            ys += [y, y]
            self.roof_labels.set_candidates(self.point_labels[key], [
                (x, y, *anchor) for anchor in POINT_ANCHORS[key]])
        self.points.set_points(xs, ys)
        dots = [(math.log10(out.points[k].intensity), math.log10(out.points[k].attained))
                for k in FORMAT_KEYS]
        self.roof_labels.set_obstacles(self._roof_segments, np.array(dots), RING_SIZE)
        chosen = out.points[out.selected]
        self.ring.set_points([math.log10(chosen.intensity)], [math.log10(chosen.attained)])

        if self.needs_update("curves", (out.k, out.m, out.points[W4].bits)):
            n = np.log10(out.curve_tokens)
            self.curves[W16].set_data(n, np.log10(out.curve_w16))
            self.curves[W4].set_data(n, np.log10(out.curve_w4))
            low = math.floor(math.log10(out.curve_w4[0]))
            high = math.ceil(math.log10(out.curve_w16[-1]))
            titem = self.time_plot.getPlotItem()
            if self._time_range != (low, high):
                self._time_range = (low, high)
                titem.setYRange(low, high, padding=0)
                set_time_ticks(titem.getAxis("left"), low, high)
            self._curve_segments = np.vstack([
                polyline_segments(n, np.log10(out.curve_w16), 2),
                polyline_segments(n, np.log10(out.curve_w4), 2)])
            self.key.clear()
            self.key.add_line("W16, bf16 weights", _format_pen(SERIES[W16]))
            self.key.add_line(f"W4, {bits_text(out.points[W4].bits)} bits per weight",
                              _format_pen(SERIES[W4]))
        low, high = self._time_range
        n = math.log10(out.tokens)
        self.n_line.set_data([n, n], [low, high])
        times = [math.log10(out.points[k].time.time) for k in FORMAT_KEYS]
        self.time_marks.set_points([n, n], times)
        self.speedup_label.setText(speedup_text(out.speedup))
        top, middle = max(times), sum(times) / 2
        if out.points[W4].time.bound == COMPUTE_BOUND:
            # W4's line rises from here: above and left of the upper mark stays clear;
            # near the top of the plot, left of the n line and above the rising curves.
            places = [(n, top, 1.1, 1.1), (n, high, 1.1, -0.1), (n, top, 1.15, 0.5),
                      (n, top, -0.1, 1.1), (n, top, 1.1, -0.1)]
        else:  # both lines flat: between them, right of the marks
            places = [(n, middle, -0.15, 0.5), (n, middle, 1.15, 0.5), (n, top, 1.1, 1.1),
                      (n, top, -0.1, 1.1)]
        self.time_labels.set_candidates(self.speedup_label, places)
        self.time_labels.set_obstacles(self._curve_segments, moving=np.array([[n, low, n, high]]))
        self.message.show_message(self.model.message())
