"""Figure 12.6: each decode step's time per output token (log scale) while a long prompt is
prefilled, the TPOT target and the prompt's arrival; below, the GPUs and the KV link."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_time_ticks
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.timeline import Timeline, fill_by_kind
from gpuviz.models.serving.long_prompt import (
    DECODE,
    DECODE_GPU,
    LANES,
    PREFILL,
    TRANSFER,
    LongPromptOut,
)

ROLES = {DECODE: "memory", PREFILL: "compute", TRANSFER: "network"}
FLOOR = -3  # log10 seconds at the bottom of the TPOT axis: 1 ms, or a decade below the
# shortest step (a small model's steps take less than a millisecond)
GAP = 0.12  # of a decode step, left between bars
MIN_GAP_PX = 1.0


class LongPromptView(FigureView):
    def build(self) -> None:
        for name in ("mode", "prompt", "sequences", "target_ms", "efficiency", "preset",
                     "gpu", "context"):
            self.controls.add(name)
        self.controls.add_grid(("link", "cache"), columns=2)

        self.tpot_plot = plot_widget("Time", "Time per output token", x_unit="s")
        item = self.tpot_plot.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.25)
        self.bars = CellGrid(font_size=8)
        item.addItem(self.bars)
        self.target_line = Segment(pen("highlight", 2.0, Qt.DashLine))
        self.arrival_line = Segment(pen("highlight", 2.5))
        for line in (self.target_line, self.arrival_line):
            item.addItem(line)
        self.text = TextLayer(QRectF(0, FLOOR, 1, 1), keep_inside=True)
        # On plates: either may lie over the bars (a target the steps miss).
        self.target_label = self.text.add(role="highlight", size=9, bold=True,
                                          anchor=(1.0, -0.1), plate=True)  # under its line
        self.arrival_label = self.text.add(role="highlight", size=9, bold=True,
                                           anchor=(-0.05, 1.05), plate=True)
        item.addItem(self.text)
        # The gaps between the bars are a pixel at least: worked out again at a new size.
        item.getViewBox().sigResized.connect(self.schedule_refresh)
        # Above the bars and the arrival's label, with room kept for both in the y range.
        self.legend = Legend(item, anchor=(1, 0), columns=2)
        self.legend.add_box("decode step", theme.color("memory"))
        self.legend.add_box("step carrying the prompt", theme.color("compute"))
        self._data_top = 0
        self.add_plot(self.tpot_plot, 4)

        lanes_plot = plot_widget("Time", x_unit="s")
        self.timeline = Timeline(lanes_plot, (), text_size=8)
        self.timeline.add_legend([("decode", theme.color("memory")),
                                  ("prefill", theme.color("compute")),
                                  ("KV transfer", theme.color("network")),
                                  ("idle", theme.color("idle"))], columns=4)
        self.add_plot(lanes_plot, 2)

    def refresh(self) -> None:
        out: LongPromptOut = self.model.out
        item = self.tpot_plot.getPlotItem()
        # Whole decades: from below the shortest step to above the longest and the
        # target; above them a line for the arrival's label and the legend's row.
        floor = min(FLOOR, math.floor(math.log10(out.decode_step) - 0.3))
        data_top = math.ceil(math.log10(max(out.worst_tpot, out.target) * 1.5))
        box = item.getViewBox()
        if self.needs_update("ranges", (out.horizon, floor, data_top, round(box.height()))):
            line = QFontMetricsF(theme.font(9, bold=True)).height() * 1.3
            top = self.legend.end_with_room(floor, data_top, beyond_px=line)
            item.setXRange(0, out.horizon, padding=0.01)
            item.setYRange(floor, top, padding=0)
            set_time_ticks(item.getAxis("left"), floor, data_top)
            self.text.set_bounds(QRectF(0, floor, out.horizon, top - floor))
            self._data_top = data_top
        on_decode = ~np.isnan(out.tpot)
        fill = fill_by_kind(ROLES)
        tasks = [task for task, keep in zip(out.schedule.tasks, on_decode, strict=True)
                 if keep]
        start, end = out.schedule.start[on_decode], out.schedule.end[on_decode]
        tpot = out.tpot[on_decode]
        # A thin gap at the end of each box, a share of one decode step (a box of several
        # decode steps has one only at its end), and at least a pixel so that it
        # shows between the long boxes of a chunked prompt too.
        pixel = item.getViewBox().viewPixelSize()
        gap = max(GAP * out.decode_step, MIN_GAP_PX * pixel[0])
        rects = np.column_stack([start, np.full(len(start), floor), (end - start) - gap,
                                 np.log10(tpot) - floor])
        self.bars.set_cells(rects, [fill(task) for task in tasks])
        target = math.log10(out.target)
        self.target_line.set_line(0, target, out.horizon, target, pixel)
        self.target_label.setText(f"target {format_value(self.model.target_ms, 'ms')}")
        self.target_label.setPos(out.horizon, target)
        self.arrival_line.set_line(out.arrival, floor, out.arrival, self._data_top, pixel)
        self.arrival_label.setText(f"{self.model.prompt:,}-token prompt arrives")
        self.arrival_label.setPos(out.arrival, self._data_top)

        lanes = LANES if out.mode == "disaggregated" else (DECODE_GPU,)
        self.timeline.set_lanes(lanes)
        self.timeline.set_time_range(out.horizon, exact=True)
        self.timeline.show_schedule(out.schedule, fill, idle_lanes=lanes[1:])
        text, warn = self.model.message()
        self.message.show_message(text, warn=warn)
