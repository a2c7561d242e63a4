"""Figure 13.2: the step time of a matmul and k elementwise ops against the size n, and
its overhead, memory and compute shares, with fuse, CUDA graph and fp8 as switches."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ticks, set_time_ticks
from gpuviz.core.model import format_value, time_text
from gpuviz.core.plots import CellGrid, Dots, Legend, Segment, curve, pen, plot_widget
from gpuviz.models.profiling.regime import (
    FIX_NAMES,
    FIXES,
    N_MAX,
    N_MIN,
    PARTS,
    SHARE_BARS,
    Steps,
)

ROLES = {"overhead": "idle", "memory": "memory", "compute": "compute"}
X_RANGE = (math.log10(N_MIN) - 0.05, math.log10(N_MAX) + 0.05)
TIME_RANGE = (-6.0, -1.0)  # log10 s: 1 µs to 100 ms holds every step of the model
BAR_SHARE = 0.8  # of the spacing between bars


class RegimeView(FigureView):
    def build(self) -> None:
        self.controls.add("n")
        self.controls.add("k")
        self.controls.add_grid(("fuse", "cuda_graph", "fp8"), columns=3)

        self.time_plot = plot_widget("Size n", "Step time")
        item = self.time_plot.getPlotItem()
        item.setXRange(*X_RANGE, padding=0)
        item.setYRange(*TIME_RANGE, padding=0)
        set_log_ticks(item.getAxis("bottom"), *X_RANGE)
        set_time_ticks(item.getAxis("left"), *TIME_RANGE)
        self.before = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.now = curve(item, pen("compute", 2.5))
        self.time_line = Segment(pen("neutral", 1.0, Qt.DashLine))
        item.addItem(self.time_line)
        self.dots = Dots(item, 2, 10, [theme.color("neutral"), theme.color("compute")],
                         pen("text", 1))
        legend = Legend(item, anchor=(0, 0))
        legend.add_line("with the fixes switched on", pen("compute", 2.5))
        legend.add_line("no fix", pen("neutral", 2.0, Qt.DashLine))
        # The shares' colours, where the time curves leave room (the bars fill theirs).
        share_legend = Legend(item, anchor=(1, 1), columns=3)
        for part in PARTS:
            share_legend.add_box(f"{part} (below)" if part == "overhead" else part,
                                 theme.color(ROLES[part]))
        self.add_plot(self.time_plot, 3)

        self.share_plot = plot_widget("Size n", "Share", y_unit="%")
        sitem = self.share_plot.getPlotItem()
        sitem.setXRange(*X_RANGE, padding=0)
        sitem.setYRange(0, 100, padding=0)
        sitem.showGrid(x=False, y=True, alpha=0.25)
        set_log_ticks(sitem.getAxis("bottom"), *X_RANGE)
        self.shares = CellGrid()
        sitem.addItem(self.shares)
        self.share_line = Segment(pen("highlight", 2.0))
        sitem.addItem(self.share_line)
        self.add_plot(self.share_plot, 2)
        self._bar_rects: np.ndarray | None = None

    def refresh(self) -> None:
        out = self.model.out
        m = self.model
        curve_now, curve_before = out["curve"], out["curve_before"]
        # The curves and bars are cached per k and fixes: moving n leaves them alone.
        if self.needs_update("curves", (id(curve_now), id(curve_before))):
            x = np.log10(curve_now.n)
            self.before.set_data(x, np.log10(curve_before.time))
            self.now.set_data(x, np.log10(curve_now.time))
        log_n = math.log10(m.n)
        self.dots.set_points([log_n, log_n], [math.log10(out["before"].time[0]),
                                              math.log10(out["now"].time[0])])
        pixel = self.time_plot.getPlotItem().getViewBox().viewPixelSize()
        self.time_line.set_line(log_n, TIME_RANGE[0], log_n, TIME_RANGE[1], pixel)
        spixel = self.share_plot.getPlotItem().getViewBox().viewPixelSize()
        self.share_line.set_line(log_n, 0, log_n, 100, spixel)
        if self.needs_update("bars", id(out["bars"])):
            self._shares(out["bars"])
        self._comment()

    def _shares(self, bars: Steps) -> None:
        centres = np.log10(bars.n)
        width = BAR_SHARE * (centres[1] - centres[0])
        parts = np.array([bars.part(p) / bars.time for p in PARTS]) * 100  # (3, bars)
        bottoms = np.cumsum(parts, axis=0) - parts
        rects = np.column_stack([np.repeat(centres - width / 2, len(PARTS)),
                                 bottoms.T.ravel(), np.full(len(PARTS) * SHARE_BARS, width),
                                 parts.T.ravel()])
        fills = [theme.color(ROLES[p]) for p in PARTS] * SHARE_BARS
        self.shares.set_cells(rects, fills)

    def _comment(self) -> None:
        m, out = self.model, self.model.out
        now, before = out["now"], out["before"]
        parts = {p: float(now.part(p)[0] / now.time[0]) for p in PARTS}
        regime = max(parts, key=parts.get)
        gains = ", ".join(
            f"{FIX_NAMES[fix].lower() if fix == 'fuse' else FIX_NAMES[fix]} alone "
            f"{format_value(float(before.time[0] / out[fix].time[0]), '×')}"
            for fix in FIXES)
        self.message.show_message(
            f"At n = {m.n:,} the step takes {time_text(float(now.time[0]))} "
            f"({now.kernels} kernels) and is mostly {regime} "
            f"({format_value(100 * parts[regime], '%', decimals=0)}). Here {gains}.")
