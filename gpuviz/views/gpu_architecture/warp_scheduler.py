"""Figure 1.2: one warp scheduler hiding memory latency by switching warps."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.widgets import TextPanel

ROW_HEIGHT = 0.7
READY_SHARE = 0.45  # of a row's height: "ready" bars are thinner than the others


class WarpSchedulerView(FigureView):
    step_label = "Next burst"

    def build(self) -> None:
        for name in ("warps", "issue_cycles", "memory_latency"):
            self.controls.add(name)

        # A fixed-height panel: new text repaints it alone, without a relayout of the page.
        self.formula = TextPanel(3.2, accessible_name="Formula panel")
        self.add_plot(self.formula, 0)

        self.plot = plot_widget("Time", x_unit="cycles")
        item = self.plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        item.addItem(self.bars)
        self.playhead = Segment(pen("highlight", 1.5, Qt.DashLine))
        item.addItem(self.playhead)
        self.add_plot(self.plot, 1)
        # The key sits in the bottom right corner, in room kept free under the scheduler
        # row (see _fit_rows).
        self.legend = Legend(item, anchor=(1, 1), columns=2)
        self.legend.add_box("issuing", theme.color("compute"))
        self.legend.add_box("waiting for memory", theme.color("memory"))
        # Thinner bars, not only grey: their grey is as light as another role's.
        self.legend.add_box("ready, waiting to issue", theme.color("neutral"),
                            height=READY_SHARE)
        self.legend.add_box("scheduler idle", theme.color("idle"))
        item.getViewBox().sigResized.connect(self._fit_rows)
        self._axes_key: tuple | None = None
        self._segments_for = None
        self._cached: tuple = ()
        self._colours = [theme.color("compute"), theme.color("memory"),
                         theme.color("neutral"), theme.color("idle")]

    def _fit_rows(self) -> None:
        """The rows, with the legend's height free under them."""
        rows = self.model.out.warps + 1.0
        self.plot.getPlotItem().setYRange(-0.6, self.legend.end_with_room(-0.6, rows),
                                          padding=0)

    def _segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every bar of the whole horizon, computed once per schedule: rectangles
        (x0, x1, row, height) and their kind (0 issue, 1 wait, 2 queued, 3 idle)."""
        out = self.model.out
        if self._segments_for is out:
            return self._cached
        c, lat, n = out.issue_cycles, out.memory_latency, out.warps
        starts, owners = out.starts, out.owners
        x0, x1, rows, kinds = [], [], [], []
        for warp in range(n):
            mine = starts[owners == warp]
            following = np.append(mine[1:], out.horizon)
            ready = mine + c + lat
            for a, b, kind in ((mine, mine + c, 0), (mine + c, ready, 1),
                               (ready, np.maximum(following, ready), 2)):
                x0.append(a)
                x1.append(b)
                rows.append(np.full(len(mine), warp, dtype=float))
                kinds.append(np.full(len(mine), kind))
        sched_y = n + 0.4
        ends = starts + c
        gap_from = np.concatenate([[0.0], ends])
        gap_to = np.append(starts, out.horizon)
        for a, b, kind in ((starts, ends, 0), (gap_from, gap_to, 3)):
            x0.append(a)
            x1.append(b)
            rows.append(np.full(len(a), sched_y))
            kinds.append(np.full(len(a), kind))
        x0, x1 = np.concatenate(x0), np.minimum(np.concatenate(x1), out.horizon)
        kinds = np.concatenate(kinds)
        keep = x1 > x0
        heights = np.where(kinds[keep] == 2, ROW_HEIGHT * READY_SHARE, ROW_HEIGHT)
        geometry = np.column_stack([x0[keep], x1[keep], np.concatenate(rows)[keep], heights])
        self._segments_for, self._cached = out, (geometry, kinds[keep], None)
        return self._cached

    def refresh(self) -> None:
        out = self.model.out
        n, c, lat = out.warps, out.issue_cycles, out.memory_latency
        t = min(self.model.t, out.horizon)
        item = self.plot.getPlotItem()

        # Axes move only when the rows or the horizon change, each on its own: a range set
        # again unchanged still costs a pass over the view and its axes.
        old_n, old_horizon = self._axes_key or (None, None)
        self._axes_key = (n, out.horizon)
        if n != old_n:
            sched_y = n + 0.4
            ticks = [(i, f"Warp {i + 1}") for i in range(n)] + [(sched_y, "Scheduler")]
            item.getAxis("left").setTicks([ticks])
            self._fit_rows()
        if out.horizon != old_horizon:
            item.setXRange(0, out.horizon, padding=0.01)

        # Draw everything up to the playhead.
        geometry, kinds, _ = self._segments()
        x0, x1 = geometry[:, 0], np.minimum(geometry[:, 1], t)
        shown = x1 > x0
        rows, heights = geometry[shown, 2], geometry[shown, 3]
        rects = np.column_stack([x0[shown], rows - heights / 2, x1[shown] - x0[shown],
                                 heights])
        self.bars.set_cells(rects, [self._colours[k] for k in kinds[shown]])
        playing = t < out.horizon
        if playing:  # the pixel size costs a few mapping calls: only for a shown playhead
            self.playhead.set_line(t, -0.6, t, n + 1.0, item.getViewBox().viewPixelSize())
        self.playhead.setVisible(playing)

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

        sim = 100 * out.idle_share_simulated
        if n >= needed:
            self.message.show_message(
                f"{n} warps keep the scheduler busy every cycle: while one warp waits "
                f"{lat} cycles, the others fill them. (Simulated idle share: "
                f"{sim:.1f}%.)", False)
        elif needed > self.model.parameter("warps").maximum:
            self.message.show_message(
                f"The scheduler is idle {sim:.1f}% of the cycles even with {n} warps: "
                f"hiding {lat} cycles would take {needed}, more than one scheduler holds "
                f"here. Longer issue bursts (more work per load) hide it with fewer.", True)
        else:
            self.message.show_message(
                f"The scheduler is idle {sim:.1f}% of the cycles (formula "
                f"{formula_idle:.1f}%). Add warps: {needed} are needed to hide "
                f"{lat} cycles.", True)
