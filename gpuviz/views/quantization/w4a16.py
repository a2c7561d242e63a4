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
from gpuviz.core.plots import Dots, Legend, curve, pen, plot_widget, text_item
from gpuviz.core.text import TextLayer
from gpuviz.models.quantization import COMPUTE_BOUND, TOKENS_MAX, W4, W16, speedup_text

X_RANGE = (-0.5, 4.0)  # log10 FLOP/B
Y_RANGE = (12.0, 15.5)  # log10 FLOP/s
N_RANGE = (0.0, math.log10(TOKENS_MAX))
FORMAT_KEYS = (W16, W4)
CLICK_PIXELS = 24  # how near a click must be to a point to select it
MEMORY_LABEL_X = 1.2  # log10 FLOP/B: clear of the points at n = 1 and n = 64


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
        self.ring = Dots(item, 1, 26, theme.color("highlight"))
        # One marker per format and bound; the one of the current bound shows.
        fills = [theme.color(role) for _ in FORMAT_KEYS for role in ("compute", "memory")]
        self.points = Dots(item, 4, 15, fills, pen("text", 1.5))
        self.roof_labels = TextLayer(QRectF(X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0],
                                            Y_RANGE[1] - Y_RANGE[0]), keep_inside=True)
        # Below and right of the rising roof, whose line would cross a label set above it.
        self.memory_label = self.roof_labels.add(role="memory", size=9, bold=True,
                                                 anchor=(-0.08, -0.3))
        self.compute_label = self.roof_labels.add(role="compute", size=9, bold=True,
                                                  anchor=(1, 1.1))
        self.point_labels = {key: self.roof_labels.add(
            "W16" if key == W16 else "W4", size=10, bold=True,
            anchor=(1.15, 0.5) if key == W16 else (-0.15, 0.5)) for key in FORMAT_KEYS}
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
        self.speedup_label = text_item("", role="text", size=11, bold=True)
        titem.addItem(self.speedup_label)
        self._time_range: tuple[int, int] | None = None
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

        xs, ys = [], []
        for key in FORMAT_KEYS:
            p = out.points[key]
            x, y = math.log10(p.intensity), math.log10(p.attained)
            compute = p.time.bound == COMPUTE_BOUND
            xs += [x, math.nan] if compute else [math.nan, x]
            ys += [y, y]
            self.point_labels[key].setPos(x, y)
        self.points.set_points(xs, ys)
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
            self.key.clear()
            self.key.add_line("W16, bf16 weights", _format_pen(SERIES[W16]))
            self.key.add_line(f"W4, {out.points[W4].bits:g} bits per weight",
                              _format_pen(SERIES[W4]))
        low, high = self._time_range
        n = math.log10(out.tokens)
        self.n_line.set_data([n, n], [low, high])
        times = [math.log10(out.points[k].time.time) for k in FORMAT_KEYS]
        self.time_marks.set_points([n, n], times)
        self.speedup_label.setText(speedup_text(out.speedup))
        if out.points[W4].time.bound == COMPUTE_BOUND:
            # W4's line rises from here: above and left of the upper mark stays clear.
            self.speedup_label.setAnchor((1.1, 1.1))
            self.speedup_label.setPos(n, max(times))
        else:  # both lines flat: between them, right of the marks
            self.speedup_label.setAnchor((-0.15, 0.5))
            self.speedup_label.setPos(n, sum(times) / 2)
        self.message.show_message(self.model.message())
