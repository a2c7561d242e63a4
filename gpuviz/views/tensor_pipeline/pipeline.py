"""Figure 9.2: pipeline schedules, stage by stage, with the micro-batches each stage holds."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling, plural
from gpuviz.core.plots import CellGrid, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.timeline import BOX_HEIGHT, Timeline
from gpuviz.models.tensor_pipeline.pipeline import (
    MS,
    PIPELINE_NAMES,
    PipelineOut,
    duration,
    share,
    stage_lanes,
)
from gpuviz.models.tensor_pipeline.schedules import BACKWARD, FORWARD, WEIGHT

KIND_ROLES = {FORWARD: "compute_light", BACKWARD: "compute", WEIGHT: "compute"}
W_HEIGHT = 0.4  # a weight-gradient pass is drawn thinner than F and B (same blue as B)
STRIP_TOP = BOX_HEIGHT / 2 + 0.02  # the stash strip hangs under its lane's boxes
STRIP_HEIGHT = 0.23  # for the most any stage holds, of a lane's height of 1 (the bars
# on the right compare the amounts); it ends 0.6 under the lane's middle, inside the veil
# and the lanes' range
BAR_HEIGHT = 0.6
BAR_ROOM = 1.3  # the stash axis runs to 1.3 m, or a little more
KIND_WORDS = {FORWARD: "forward", BACKWARD: "backward", WEIGHT: "weight gradient"}


class PipelineView(FigureView):
    step_label = "Next"

    def build(self) -> None:
        self.controls.add("pipeline", style="buttons")
        for name in ("stages", "micro_batches", "chunks", "forward_ms", "backward_ms"):
            self.controls.add(name)

        self.plot = plot_widget("Time (ms)")
        self.timeline = Timeline(self.plot, (), text_size=8)
        self.timeline.clicked.connect(self._read_box)
        self.strips = CellGrid()
        self.plot.getPlotItem().addItem(self.strips)
        self.timeline.add_legend([
            ("forward F", theme.color("compute_light")),
            ("backward B", theme.color("compute")),
            ("weight gradient W", theme.color("compute"), W_HEIGHT / BOX_HEIGHT),
            ("idle", theme.color("idle")),
            ("stash", theme.color("memory"), STRIP_HEIGHT / BOX_HEIGHT)],
            columns=3)
        self.notice = TextLayer(QRectF(0, -1, 1, 10), keep_inside=True)
        self.notice_label = self.notice.add(role="highlight", size=11, bold=True,
                                            anchor=(0.5, 0.5))
        self.plot.getPlotItem().addItem(self.notice)

        self.bar_plot = plot_widget("Stashed")
        bitem = self.bar_plot.getPlotItem()
        bitem.invertY(True)
        bitem.showGrid(x=True, y=False, alpha=0.25)
        bitem.getAxis("left").setTicks([[], []])
        bitem.setYLink(self.plot.getPlotItem())
        self.bars = CellGrid()
        bitem.addItem(self.bars)
        self.bar_text = TextLayer(QRectF(0, -1, 1, 10), keep_inside=True)
        self.bar_labels = [self.bar_text.add(role="text", size=9, bold=True,
                                             anchor=(-0.1, 0.5))
                           for _ in range(self.model.parameter("stages").maximum)]
        bitem.addItem(self.bar_text)

        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 4)
        layout.addWidget(self.bar_plot, 1)
        self.add_plot(row)

    # ------------------------------------------------------------------ drawing
    def _draw_step(self, out: PipelineOut) -> None:
        """Everything that changes only with the settings: lanes, boxes, idle time, the
        stash strips, the ranges."""
        p, m = out.stages, out.micro_batches
        lanes = stage_lanes(p)
        self.timeline.set_lanes([lane.resource for lane in lanes],
                                [lane.text for lane in lanes])
        # Room right of the longest bar (m) for its label; the range moves in steps.
        top = nice_ceiling(m * BAR_ROOM, FINE_STEPS)
        if self.needs_update("bar_range", top):
            self.bar_plot.getPlotItem().setXRange(0, top, padding=0)
        self.bar_text.set_bounds(QRectF(0, -1, top, p + 2))
        for i, label in enumerate(self.bar_labels):
            label.setVisible(i < p)
        timed = out.timed
        if timed is None:
            empty = np.zeros(0)
            self.timeline.set_boxes(empty, empty, empty, [])
            self.timeline.set_idle(empty, empty, empty)
            self.strips.set_cells(np.zeros((0, 4)), [])
            # The time axis of the same step without interleaving, for scale.
            end = nice_ceiling(out.beside.step_time / MS, FINE_STEPS)
            self.timeline.set_time_range(end)
            self.notice.set_bounds(QRectF(0, -1, end, p + 2))
            self.notice_label.setText("Interleaving needs m to be a multiple of p")
            self.notice_label.setPos(end / 2, (p - 1) / 2)
            return
        self.notice_label.setText("")
        result = timed.schedule
        end = timed.step_time / MS
        self.timeline.set_time_range(end)
        kinds = [task.kind for task in result.tasks]
        fills = {kind: theme.color(role) for kind, role in KIND_ROLES.items()}
        self.timeline.set_boxes(
            timed.lanes, result.start / MS, result.end / MS, [fills[k] for k in kinds],
            [task.text for task in result.tasks],
            heights=np.array([W_HEIGHT if k == WEIGHT else BOX_HEIGHT for k in kinds]))
        gaps = np.array([(i, a, b) for i in range(p)
                         for a, b in result.idle_intervals(lanes[i].resource)],
                        dtype=float).reshape(-1, 3)
        self.timeline.set_idle(gaps[:, 0], gaps[:, 1] / MS, gaps[:, 2] / MS)
        rects, most = [], timed.peaks.max()
        for i, (times, levels) in enumerate(timed.stash):
            held = levels[:-1] > 0
            x0, x1, level = times[:-1][held] / MS, times[1:][held] / MS, levels[:-1][held]
            rects.append(np.column_stack([x0, np.full(len(x0), i + STRIP_TOP), x1 - x0,
                                          STRIP_HEIGHT * level / most]))
        strips = np.concatenate(rects)
        self.strips.set_cells(strips, [theme.color("memory")] * len(strips))

    def refresh(self) -> None:
        model, out = self.model, self.model.out
        # A timed step is cached by its settings: one met again (or a change of v that
        # GPipe ignores) is the same object, and nothing is drawn again.
        if self.needs_update("step", (out.timed, out.stages, out.micro_batches)):
            self._draw_step(out)
        timed = out.timed
        playing = model.progress < 1.0 and timed is not None
        end = timed.step_time if timed is not None else 0.0
        now = model.t
        self.timeline.veil_after(now / MS if playing else None, end / MS)
        self.timeline.set_playhead(now / MS if playing else None)
        p = out.stages
        if timed is None:
            self.bars.set_cells(np.zeros((0, 4)), [])
            for label in self.bar_labels:
                label.setText("")
        else:
            peaks = timed.peaks
            held = timed.held_at(now) if playing else peaks
            lanes = np.arange(p, dtype=float) - BAR_HEIGHT / 2
            rects = np.concatenate([np.column_stack([np.zeros(p), lanes, peaks,
                                                     np.full(p, BAR_HEIGHT)]),
                                    np.column_stack([np.zeros(p), lanes, held,
                                                     np.full(p, BAR_HEIGHT)])])
            memory = theme.color("memory")
            self.bars.set_cells(rects, [None] * p + [memory] * p,
                                outlines=[memory] * p + [None] * p)
            for i, label in enumerate(self.bar_labels[:p]):
                text = format_value(float(peaks[i]))
                label.setText(f"{format_value(float(held[i]))} of {text}" if playing
                              else text)
                label.setPos(float(peaks[i]), float(i))
        self._comment(out)

    def _comment(self, out: PipelineOut) -> None:
        p, m = out.stages, out.micro_batches
        timed = out.timed
        if timed is None:
            multiples = ", ".join(str(k) for k in range(p, 33, p))
            self.message.show_message(
                f"Interleaving sends the micro-batches through each GPU's chunks in groups "
                f"of p, so m must be a multiple of p = {p}: try m = {multiples} "
                f"(now {m}).", warn=True)
            return
        bubble = share("", timed.bubble).text
        idle = (f"each stage idles {duration('', timed.idle).text} of "
                f"{duration('', timed.step_time).text}")
        first = format_value(float(timed.peaks[0]))
        beside = out.beside
        other = PIPELINE_NAMES[beside.pipeline]
        other_bubble = share("", beside.bubble).text
        if out.pipeline == "gpipe" and m == 1:
            text = (f"With 1 micro-batch, GPipe runs it forward through the stages, then "
                    f"backward: {idle} ({bubble}), and each stage holds it until its "
                    f"backward. Raise m to fill the pipeline.")
        elif out.pipeline == "gpipe":
            held = plural(m, "micro-batch", "micro-batches")
            text = (f"GPipe runs all {plural(m, 'forward')}, then all backwards: {idle} "
                    f"({bubble}), and every stage holds all {held} at once. Switch to "
                    f"1F1B: the same bubble, at most {format_value(beside.peaks[0])} on "
                    f"stage 0.")
        elif out.pipeline == "1f1b":
            text = (f"1F1B starts each backward as soon as it can: {idle} ({bubble}), as "
                    f"GPipe does, but stage i holds at most min(m, p − i) micro-batches "
                    f"({first} on stage 0, against {format_value(beside.peaks[0])}).")
        elif out.pipeline == "interleaved":
            held = plural(float(timed.peaks[0]), "micro-batch", "micro-batches")
            passes = (f"{plural(out.chunks, 'chunk')} per GPU, each pass 1/{out.chunks} as "
                      "long" if out.chunks > 1 else
                      "1 chunk per GPU, each pass full length")
            text = (f"{passes}: {idle} ({bubble}, {other} {other_bubble}); stage 0 holds "
                    f"up to {held}.")
        else:
            text = (f"ZB-H1 splits each backward into B, which the stage before waits "
                    f"for, and W, which can wait: {idle} ({bubble}, {other} "
                    f"{other_bubble}), holding no more than {other} ({first} on stage 0).")
        self.message.show_message(text)

    def _read_box(self, index: int) -> None:
        result = self.model.out.timed.schedule
        task = result.tasks[index]
        # Names count from 0 ("F3c1@2": micro-batch 3, chunk 1, stage 2); the figure from 1.
        micro_batch, rest = task.name[1:].split("c")
        chunk, stage = rest.split("@")
        of_chunk = f", chunk {int(chunk) + 1}" if self.model.out.chunks > 1 else ""
        self.message.show_message(
            f"{task.text}: the {KIND_WORDS[task.kind]} pass of micro-batch "
            f"{int(micro_batch) + 1}{of_chunk} on stage {stage}, "
            f"{self.model.in_step_unit('', result.start[index]).text} to "
            f"{self.model.in_step_unit('', result.end[index]).text}.")
