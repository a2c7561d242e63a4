"""Figure 6.4: checkpoint every k layers: the step's stored memory for one k, and the peak
and step time for every k."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, nice_ceiling, plural
from gpuviz.core.plots import CellGrid, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.training_memory import gb_text
from gpuviz.views.training_memory.step_plot import StepMemoryPlot

BAR = 0.7
RIGHT = 1.0  # past the last k: room for its tick label at the window's edge


class CheckpointEveryKView(FigureView):
    def build(self) -> None:
        for name in ("every", "flash_attention", "micro_batch"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.step = StepMemoryPlot(with_states=False, y_label="Stored (GB)")
        self.step.add_legend(columns=2)
        self.add_plot(self.step.widget, 3)

        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.peak_plot = plot_widget("Checkpoint every k layers", "Peak stored (GB)")
        self.time_plot = plot_widget("Checkpoint every k layers", "Step time (%)")
        layers = len(self.model.out.ks)
        for plot in (self.peak_plot, self.time_plot):
            item = plot.getPlotItem()
            item.showGrid(x=False, y=True, alpha=0.25)
            item.setXRange(0.3, layers + RIGHT, padding=0)
            item.getAxis("bottom").setTicks([[(k, str(k)) for k in (1, 4, 8, 12, 16, 20, 24)
                                              if k <= layers]])
            layout.addWidget(plot)
        self.peak_bars = CellGrid()
        self.peak_plot.getPlotItem().addItem(self.peak_bars)
        self.no_ckpt = Segment(pen("neutral", 1.5, Qt.DashLine))
        self.peak_plot.getPlotItem().addItem(self.no_ckpt)
        self.peak_text = TextLayer(QRectF(0, 0, layers + 1, 1), keep_inside=True)
        self.no_ckpt_label = self.peak_text.add(size=9, anchor=(1, 1.0))
        self.best_label = self.peak_text.add(role="highlight", size=9, bold=True,
                                             anchor=(0, 0))
        self.peak_plot.getPlotItem().addItem(self.peak_text)
        self.time_bars = CellGrid()
        self.time_plot.getPlotItem().addItem(self.time_bars)
        self.hundred = Segment(pen("neutral", 1.5, Qt.DashLine))
        self.time_plot.getPlotItem().addItem(self.hundred)
        self.time_text = TextLayer(QRectF(0, 0, layers + 1, 200), keep_inside=True)
        self.time_label = self.time_text.add(size=9, anchor=(0, 0))
        self.time_plot.getPlotItem().addItem(self.time_text)
        self._peak_max = 0.0
        self._time_max = 0.0
        self.add_plot(row, 2)

    def refresh(self) -> None:
        out = self.model.out
        memory, base = out.memory, out.baseline
        timeline = memory.timeline
        self.step.set_step(timeline, 0.0, timeline.peak)
        self.step.set_playhead(None)

        k = self.model.every
        layers = len(out.ks)
        revealed = self.model.revealed
        scale = 1e-9
        # Room above the no-checkpointing line for its label and, over it, the best k's.
        peak_max = nice_ceiling(base.timeline.peak * scale / 0.62, FINE_STEPS)
        pitem = self.peak_plot.getPlotItem()
        if peak_max != self._peak_max:
            self._peak_max = peak_max
            pitem.setYRange(0, peak_max, padding=0)
            self.peak_text.set_bounds(QRectF(0, 0, layers + 1, peak_max))
        # Before Reveal only the chosen k has a bar: the learner finds the best by moving k.
        shown = out.ks if revealed else np.array([k])
        heights = out.peaks[shown - 1] * scale
        rects = np.column_stack([shown - BAR / 2, np.zeros(len(shown)),
                                 np.full(len(shown), BAR), heights])
        fills = [theme.color("highlight") if revealed and s == out.best_k
                 else theme.color("memory") for s in shown]
        outlines = [theme.color("text") if s == k else None for s in shown]
        self.peak_bars.set_cells(rects, fills, outlines)
        no_ckpt = base.timeline.peak * scale
        self.no_ckpt.set_line(0.3, no_ckpt, layers + RIGHT, no_ckpt,
                              pitem.getViewBox().viewPixelSize())
        self.no_ckpt_label.setText(f"no checkpointing {gb_text(base.timeline.peak)}")
        self.no_ckpt_label.setPos(layers + 0.6, no_ckpt)
        best_peak = out.peaks[out.best_k - 1] * scale
        self.best_label.setText(f"best k = {out.best_k}: {gb_text(best_peak / scale)}" if revealed
                                else "")
        self.best_label.setPos(0.5, peak_max)

        percent = 100 * out.step_times / base.timeline.step_time
        trects = np.column_stack([out.ks - BAR / 2, np.zeros(layers), np.full(layers, BAR),
                                  percent])
        # The chosen k framed as in the peak chart (magenta there is the best k).
        self.time_bars.set_cells(trects, [theme.color("compute_light")] * layers,
                                 [theme.color("text") if s == k else None for s in out.ks])
        titem = self.time_plot.getPlotItem()
        time_max = nice_ceiling(percent.max() * 1.3, FINE_STEPS)  # room for the label
        if time_max != self._time_max:
            self._time_max = time_max
            titem.setYRange(0, time_max, padding=0)
            self.time_text.set_bounds(QRectF(0, 0, layers + 1, time_max))
        self.hundred.set_line(0.3, 100, layers + RIGHT, 100, titem.getViewBox().viewPixelSize())
        # Two lines: on one, it ran out of its small plot on a 1024x768 projector.
        self.time_label.setText(f"+{percent[k - 1] - 100:.0f}% for every k:\none extra forward")
        self.time_label.setPos(0.5, time_max)
        self.predict.sync()

        peak = timeline.peak
        at_turn = np.isclose(timeline.peak_time, timeline.turn)
        where = ("at the turn, where the logits and all checkpoints are held" if at_turn
                 else "while the last segment is recomputed")
        segments = -(-layers // k)
        self.message.show_message(
            f"k = {k}: {plural(segments, 'checkpoint')} of {gb_text(memory.checkpoint_bytes)}, "
            f"and up to {plural(k, 'recomputed layer')} of {gb_text(memory.layer_bytes)} "
            f"each. The peak, "
            f"{gb_text(peak)}, comes {where}.")
