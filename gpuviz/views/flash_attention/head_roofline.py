"""Figure 4.4: one attention head's forward pass on the roofline."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import time_label
from gpuviz.core.model import format_value
from gpuviz.core.plots import Dots, Legend, Segment, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, polyline_segments
from gpuviz.models.flash_attention import ROOFLINE_N_MAX, ROOFLINE_N_MIN

LINES = (("standard_time", "memory", "standard attention"),
         ("flash_time", "onchip", "FlashAttention"),
         ("compute_time", "compute", "compute 4N²d / peak"))


X_TICKS = (256, 1024, 4096, 16384, 65536, 131072)  # written out in full: k means 1000


def _unbroken(text: str) -> str:
    return text.replace(" ", "\u00a0")  # no-break spaces


class HeadRooflineView(FigureView):
    def build(self) -> None:
        for name in ("gpu", "seq_len", "head_dim", "block_rows", "l2_rereads"):
            self.controls.add(name)
        self.plot = plot_widget("Sequence length N (tokens)", "Minimum time",
                                log_x=True, log_y=True)
        item = self.plot.getPlotItem()
        item.getAxis("bottom").setTicks([[(math.log10(n), format_value(n)) for n in X_TICKS], []])
        item.setXRange(math.log10(ROOFLINE_N_MIN), math.log10(ROOFLINE_N_MAX), padding=0.02)
        legend = Legend(item, anchor=(0, 0), size=10)
        # PlotCurveItems fed log10 data (the axes are in log mode), pixmap items for the dots
        # and a Qt line for the marker: none of them runs Python when the view changes.
        self.curves = {}
        # FlashAttention's line is wider than the compute line drawn over it: where the
        # two meet, the yellow shows on both sides of the blue.
        widths = {"standard_time": 3.0, "flash_time": 5.0, "compute_time": 2.5}
        for key, role, label in LINES:
            self.curves[key] = curve(item, pen(role, widths[key]))
            legend.add_line(label, pen(role, widths[key]))
        # FlashAttention's dot is the larger one, drawn first: where it lands on the
        # compute line it rings the compute dot instead of hiding under it.
        outline = pg.mkPen(theme.color("text"), width=1)
        self.flash_dot = Dots(item, 1, 17, theme.color("onchip"), outline=outline)
        self.dots = Dots(item, 2, 11, [theme.color("memory"), theme.color("compute")],
                         outline=outline)
        self.marker = Segment(pen("neutral", 1.5, Qt.DashLine))
        item.addItem(self.marker)
        # The ratios the caption asks about, beside their dots.
        self.ratio_labels = PlacedTextLayer(QRectF(math.log10(ROOFLINE_N_MIN) - 1, -20,
                                                   math.log10(ROOFLINE_N_MAX) + 2, 40))
        self.standard_ratio = self.ratio_labels.add(role="memory", size=11, bold=True)
        self.flash_ratio = self.ratio_labels.add(role="onchip", size=11, bold=True)
        item.addItem(self.ratio_labels)
        self._y_range: tuple[int, int] = (0, 0)
        self.add_plot(self.plot)

    def refresh(self) -> None:
        s = self.model.out
        # The range first, then the data: one layout and paint pass per change.
        low = math.floor(math.log10(float(np.min(s.curve.compute_time)) * 1e6))
        high = math.ceil(math.log10(float(np.max(s.curve.standard_time)) * 1e6))
        if (low, high) != self._y_range:  # whole decades: the axis moves only in steps
            self._y_range = (low, high)
            item = self.plot.getPlotItem()
            item.setYRange(low, high, padding=0.02)
            item.getAxis("left").setTicks(
                [[(e, time_label(e - 6)) for e in range(low, high + 1)], []])  # data in µs
        log_n = np.log10(s.curve.n)
        for key, _, _ in LINES:
            self.curves[key].set_data(log_n, np.log10(getattr(s.curve, key) * 1e6))
        x = math.log10(float(s.point.n[0]))
        ys = {key: math.log10(float(getattr(s.point, key)[0]) * 1e6) for key, _, _ in LINES}
        self.flash_dot.set_points([x], [ys["flash_time"]])
        self.dots.set_points([x, x], [ys["standard_time"], ys["compute_time"]])
        self.marker.set_line(x, low - 1, x, high + 1,
                             self.plot.getPlotItem().getViewBox().viewPixelSize())
        for label, key, ratio in ((self.standard_ratio, "standard_time", s.standard_ratio),
                                  (self.flash_ratio, "flash_time", s.flash_ratio)):
            label.setText(f"{format_value(ratio, '×')} compute")
            y = ys[key]
            # Beside the dot first; then a label's height further off, where the two
            # labels (their dots close together) would otherwise take the same places and
            # one of them would lie across a line.
            self.ratio_labels.set_candidates(label, [
                (x, y, ax, ay) for ax, ay in ((-0.05, 1.0), (1.05, 1.0), (-0.05, 0.0),
                                              (1.05, 0.0), (-0.05, 0.5), (1.05, 0.5),
                                              (-0.05, -1.05), (1.05, -1.05),
                                              (-0.05, 2.05), (1.05, 2.05))])
        self.ratio_labels.set_obstacles(
            np.vstack([polyline_segments(log_n, np.log10(getattr(s.curve, key) * 1e6), 4)
                       for key, _, _ in LINES]),
            np.array([[x, y] for y in ys.values()]), 11,
            moving=np.array([[x, low - 1, x, high + 1]]))

        self.message.show_message(self._message(s))

    def _message(self, s: object) -> str:
        """At most four lines of the projector theme's control column: a longer comment
        runs past the bottom of the column at 1280 x 800 (the numbers are readouts too).
        A formula never breaks across lines."""
        d, br = self.model.head_dim, self.model.block_rows
        standard = _unbroken(f"2 × {s.ridge:.0f} / {d} = {format_value(s.standard_limit, '×')}") + (
            " above compute")
        if self.model.l2_rereads:
            text = (f"Long sequences: standard attention is {standard}; with L2 serving the "
                    f"re-reads, FlashAttention is on it")
            if s.kv_bytes > s.l2_bytes:
                text += (f" (optimistic: K, V take {s.kv_bytes / 1e6:.3g} MB, L2 holds "
                         f"{s.l2_bytes / 1e6:.3g} MB)")
            return text + "."
        text = (f"Long sequences: standard attention moves the N² scores through HBM, "
                f"{standard}. ")
        if br >= s.ridge:
            return text + (f"FlashAttention is compute-bound: Bᵣ = {br} is past the ridge "
                           f"({s.ridge:.0f} FLOP/B).")
        return text + (f"FlashAttention re-reads K, V once per {br} queries: "
                       + _unbroken(f"{s.ridge:.0f} / {br} = {format_value(s.flash_limit, '×')}."))
