"""Figure 8.3: FSDP units with all-gathers, prefetch and resharding."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import time_text
from gpuviz.core.plots import Segment, curve, pen, plot_widget
from gpuviz.core.timeline import Timeline, fill_by_kind
from gpuviz.models.data_parallel import COMPUTE_STREAM, FSDP_LANES

LANES = tuple(lane.resource for lane in FSDP_LANES)
LANE_NAMES = tuple(lane.text for lane in FSDP_LANES)
MS = 1e-3
KIND_ROLES = {"forward": "compute", "backward": "compute", "gather": "network",
              "scatter": "network"}


class FsdpView(FigureView):
    step_label = "Next task"

    def build(self) -> None:
        for name in ("units", "tokens", "bandwidth_gbs", "prefetch", "reshard"):
            self.controls.add(name)
        self.plot = plot_widget("Time (ms)")
        self.timeline = Timeline(self.plot, LANES, LANE_NAMES)
        self.timeline.clicked.connect(self._read_box)
        self.timeline.add_legend([
            ("forward and backward of a unit", theme.color("compute")),
            ("all-gather (AG) and reduce-scatter (RS)", theme.color("network")),
            ("compute waits", theme.color("idle"))])
        self.add_plot(self.plot, 3)

        self.count_plot = plot_widget("Time (ms)", "Units in full")
        citem = self.count_plot.getPlotItem()
        citem.setXLink(self.plot.getPlotItem())
        self.count_curve = curve(citem, pen("memory", 2.5))
        self.count_playhead = Segment(pen("highlight", 1.5, Qt.DashLine))
        citem.addItem(self.count_playhead)
        self.add_plot(self.count_plot, 2)

    def refresh(self) -> None:
        out = self.model.out
        result = out.schedule
        t = self.model.t
        playing = self.model.progress < 1.0
        until = t if playing else None
        self.timeline.set_time_range(result.step_time / MS)  # first: boxes are measured by it
        self.timeline.show_schedule(
            result, fill_by_kind(KIND_ROLES),
            idle_lanes=(COMPUTE_STREAM,), until=until, scale=1 / MS)
        self.timeline.set_playhead(t / MS if playing else None)

        times, counts = out.times, out.counts
        shown = times <= t + 1e-15
        xs = np.repeat(times[shown], 2)[1:] / MS
        ys = np.repeat(counts[shown], 2)[:-1]
        xs = np.append(xs, t / MS)
        ys = np.append(ys, counts[shown][-1])
        self.count_curve.set_data(xs, ys)
        citem = self.count_plot.getPlotItem()
        if self.needs_update("count_range", out.units):
            citem.setYRange(0, out.units + 0.5, padding=0)
            citem.getAxis("left").setTicks([[(k, str(k)) for k in range(out.units + 1)], []])
        if playing:
            self.count_playhead.set_line(t / MS, 0, t / MS, out.units + 0.5,
                                         citem.getViewBox().viewPixelSize())
        self.count_playhead.setVisible(playing)

        waits = result.idle("compute")
        model = self.model
        if not model.prefetch:
            tip = "Switch on prefetch: the next all-gather then runs while this unit computes."
        elif waits > 0.25 * result.step_time:
            tip = "The all-gathers outlast the compute: prefetch cannot hide them; add tokens."
        else:
            tip = "Prefetch hides the all-gathers behind compute."
        held = ("all units stay gathered from the forward pass to their backward"
                if not model.reshard else "units are freed after use and gathered again")
        self.message.show_message(
            f"Step {time_text(result.step_time)}, compute waits {time_text(waits)}; at most "
            f"{out.peak_units} of {out.units} units in full ({held}). {tip}",
            warn=waits > 0.25 * result.step_time)

    def _read_box(self, index: int) -> None:
        result = self.model.out.schedule
        task = result.tasks[index]
        what = {"forward": "forward of unit", "backward": "backward of unit",
                "gather": "all-gather of unit", "scatter": "reduce-scatter of unit"}[task.kind]
        self.message.show_message(
            f"{task.text}: {what} {''.join(c for c in task.text if c.isdigit())}, "
            f"{time_text(result.start[index])} to {time_text(result.end[index])} "
            f"({time_text(task.duration)}).")

