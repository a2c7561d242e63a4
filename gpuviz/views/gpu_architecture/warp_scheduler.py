"""Figure 1.2: one warp scheduler hiding memory latency by switching warps."""

from __future__ import annotations

import numpy as np

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import plot_widget
from gpuviz.core.timeline import BOX_HEIGHT, Timeline
from gpuviz.core.widgets import TextPanel
from gpuviz.models.gpu_architecture import ISSUE, READY, WAIT, idle_share, warp_lanes

READY_SHARE = 0.45  # of a box's height: "ready" bars are thinner than the others
MIN_ISSUE_PX = 2.0  # the least width an issue box is drawn with, in pixels
KIND_ROLES = {ISSUE: "compute", WAIT: "memory", READY: "neutral"}


def _warps(n: int) -> str:
    return f"{n} warp{'s' if n != 1 else ''}"


class WarpSchedulerView(FigureView):
    step_label = "Next burst"

    def build(self) -> None:
        for name in ("warps", "issue_cycles", "memory_latency"):
            self.controls.add(name)

        # A fixed-height panel: new text repaints it alone, without a relayout of the page.
        self.formula = TextPanel(3.2, accessible_name="Formula panel")
        self.add_plot(self.formula, 0)

        self.plot = plot_widget("Time", x_unit="cycles")
        self.timeline = Timeline(self.plot, ())
        self.timeline.clicked.connect(self._read_bar)
        # Thinner bars, not only grey: their grey is as light as another role's.
        self.timeline.add_legend([
            ("issuing", theme.color("compute")),
            ("waiting for memory", theme.color("memory")),
            ("ready, waiting to issue", theme.color("neutral"), READY_SHARE),
            ("scheduler idle", theme.color("idle"))], columns=2)
        self.add_plot(self.plot, 1)
        # The thinnest box is drawn a pixel wide (see refresh), which depends on the width.
        self.plot.getPlotItem().getViewBox().sigResized.connect(self.schedule_refresh)
        self._fills = {kind: theme.color(role) for kind, role in KIND_ROLES.items()}

    def refresh(self) -> None:
        out = self.model.out
        n, c, lat = out.warps, out.issue_cycles, out.memory_latency
        t = min(self.model.t, out.horizon)
        bars = out.bars

        self.timeline.set_lanes(warp_lanes(n))
        self.timeline.set_time_range(out.horizon, exact=True)
        if self.needs_update("bar_fills", bars):
            self._bar_fills = [self._fills[k] for k in bars.kind.tolist()]
            self._bar_heights = np.where(bars.kind == READY, BOX_HEIGHT * READY_SHARE,
                                         BOX_HEIGHT)
        # Everything up to the playhead. An issue burst of a cycle or two is under a pixel
        # when the latency is long: drawn at least MIN_ISSUE_PX wide, over its neighbours
        # (issue boxes last), or some bursts vanish and others show, by where they fall.
        end = np.minimum(bars.end, t)
        shown = np.flatnonzero(end > bars.start)
        issue = bars.kind[shown] == ISSUE
        shown = np.concatenate([shown[~issue], shown[issue]])
        start = bars.start[shown]
        pixels = self.plot.getPlotItem().getViewBox().width()
        least = MIN_ISSUE_PX * 1.02 * out.horizon / pixels if pixels > 0 else 0.0
        drawn_end = np.where(bars.kind[shown] == ISSUE,
                             np.maximum(end[shown], start + least), end[shown])
        fills = self._bar_fills
        self.timeline.set_boxes(bars.lane[shown], start, drawn_end,
                                [fills[i] for i in shown.tolist()],
                                heights=self._bar_heights[shown], ids=shown)
        idle_end = np.minimum(bars.idle_end, t)
        idle = idle_end > bars.idle_start
        self.timeline.set_idle(np.full(int(idle.sum()), n), bars.idle_start[idle],
                               idle_end[idle])
        self.timeline.set_playhead(t if t < out.horizon else None)

        needed = out.warps_needed
        formula_idle = 100 * out.idle_share_formula
        if n < needed:
            idle_text = (f"<b>Idle share</b> with n = {n} &lt; {needed}: 1 − n·c / (c + L) = "
                         f"1 − {n}·{c} / {c + lat} = <b>{formula_idle:.1f}%</b>")
        else:
            idle_text = (f"<b>Idle share</b>: n = {n} ≥ {needed}, so n·c ≥ c + L and the "
                         f"scheduler never waits: <b>0%</b>")
        self.formula.setText(
            f"<b>Warps needed</b> = 1 + ⌈L / c⌉ = 1 + ⌈{lat} / {c}⌉ = <b>{needed}</b>"
            f"<br>{idle_text}")
        self.message.show_message(*self._verdict())

    def _verdict(self) -> tuple[str, bool]:
        out = self.model.out
        n, c, lat, needed = out.warps, out.issue_cycles, out.memory_latency, out.warps_needed
        sim = 100 * out.idle_share_simulated
        most = self.model.parameter("warps").maximum
        if n >= needed:
            return (f"{_warps(n)} keep the scheduler busy every cycle: while one warp waits "
                    f"{lat} cycles, the others fill them. (Simulated idle share: "
                    f"{sim:.1f}%.)", False)
        if needed <= most:
            return (f"The scheduler is idle {sim:.1f}% of the cycles (formula "
                    f"{100 * out.idle_share_formula:.1f}%). Add warps: {needed} are needed "
                    f"to hide {lat} cycles.", True)
        # More warps than a scheduler holds: say what the most it holds still leave idle.
        idle_most = 100 * idle_share(most, c, lat)
        at_most = (f"Even {most} warps, the most one scheduler holds," if n == most else
                   f"The scheduler is idle {sim:.1f}% of the cycles with {_warps(n)}, and "
                   f"even {most}, the most one scheduler holds,")
        return (f"{at_most} leave it idle {idle_most:.1f}% of the cycles: hiding {lat} "
                f"cycles would take {needed} warps. Longer issue bursts (more work per "
                f"load) hide it with fewer.", True)

    def _read_bar(self, index: int) -> None:
        out = self.model.out
        bars = out.bars
        lane, kind = int(bars.lane[index]), int(bars.kind[index])
        span = f"cycles {bars.start[index]:,.0f} to {bars.end[index]:,.0f}"
        if lane == out.warps:
            burst = int(np.searchsorted(out.starts, bars.start[index]))
            text = f"Scheduler: warp {out.owners[burst] + 1} issues, {span}."
        else:
            doing = {ISSUE: "issues", WAIT: "waits for memory",
                     READY: "is ready but another warp is issuing"}[kind]
            text = f"Warp {lane + 1} {doing}, {span}."
        self.message.show_message(text)
