"""Figure 10.5: token copies stacked on their experts against the capacity, and the load
of each GPU."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, nice_ceiling, si_text
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.text import TEXT_MARGIN, TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.sequence_expert.moe_routing import EXPERTS, GPUS, TOKENS, MoeOut

BRICK = 0.7  # a copy's width on the expert axis (it is one copy high, less a gap)
GAP = 0.2  # between copies, in copies
LEAST_PITCH_PX = 3.0  # device pixels a copy needs to be drawn as a brick and a gap


def copy_cells(out: MoeOut, gap: float = GAP) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles of every copy stacked on its expert (kept ones first, as they came) and
    whether each is kept; `gap` between copies (0: a stack drawn as one bar)."""
    expert = np.repeat(np.arange(EXPERTS), out.per_expert)
    height = np.arange(expert.size) - np.repeat(np.cumsum(out.per_expert) - out.per_expert,
                                                out.per_expert)
    rects = np.column_stack([expert - BRICK / 2, height + gap / 2,
                             np.full(expert.size, BRICK), np.full(expert.size, 1 - gap)])
    return rects, height < out.computed[expert]


class MoeRoutingView(FigureView):
    def build(self) -> None:
        for name in ("skew", "capacity_factor", "top_k", "seed"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.expert_plot = plot_widget("Expert (E1 and E2 on GPU 0, E3 and E4 on GPU 1, …)",
                                       "Copies of tokens")
        item = self.expert_plot.getPlotItem()
        item.setXRange(-0.6, EXPERTS - 0.4, padding=0)
        item.setYRange(0, TOKENS, padding=0)
        item.getAxis("bottom").setTicks(
            [[(e, f"E{e + 1}") for e in range(EXPERTS)], []])
        self.copies = CellGrid(font_size=8)
        item.addItem(self.copies)
        self._gap = GAP
        item.getViewBox().sigResized.connect(self._fit_gap)
        self.capacity_line = Segment(pen("text", 2, Qt.DashLine))
        item.addItem(self.capacity_line)
        legend = Legend(item, anchor=(1, 0))
        legend.add_box("computed copy", theme.color("compute"))
        legend.add_box("dropped copy", theme.color("highlight"))
        legend.add_line("capacity", pen("text", 2, Qt.DashLine))
        self.add_plot(self.expert_plot, 3)

        # "Copies computed" ran past a short plot; the legend says computed or waited for.
        self.gpu_plot = plot_widget("GPU", "Copies")
        gitem = self.gpu_plot.getPlotItem()
        gitem.setXRange(-0.6, GPUS - 0.4, padding=0)
        gitem.getAxis("bottom").setTicks([[(g, f"GPU {g}") for g in range(GPUS)], []])
        self.loads = CellGrid(font_size=9)
        gitem.addItem(self.loads)
        # Each GPU's count sits above its bar (every bar, waiting included, is as tall as
        # the busiest), in one row: inside a short bar it was left out or spilled out.
        self.counts = TextLayer(QRectF(-1, 0, GPUS + 1, 10 * TOKENS))
        gitem.addItem(self.counts)
        self.count_labels = [self.counts.add("", size=9, anchor=(0.5, 1))
                             for _ in range(GPUS)]
        self.gpu_legend = Legend(gitem, anchor=(1, 0), columns=2)  # one row where it fits
        self.gpu_legend.add_box("computing", theme.color("compute"))
        self.gpu_legend.add_box("waiting for the busiest GPU", theme.color("idle"))
        self._top = 0.0
        gitem.getViewBox().sigResized.connect(self._fit_gpu_top)
        self.add_plot(self.gpu_plot, 2)

    def _fit_gap(self) -> None:
        """Gaps between bricks of a whole number of device pixels (GAP rounded, at least
        one), where a copy is at least LEAST_PITCH_PX high: a gap of a fraction of a
        pixel showed as irregular bands (a pixel here, none there). Smaller, each stack
        is drawn as one bar."""
        copies_per_px = self.expert_plot.getPlotItem().getViewBox().viewPixelSize()[1]
        device_px = copies_per_px / self.devicePixelRatioF()
        pitch = 1 / max(device_px, 1e-9)
        gap = max(1, round(GAP * pitch)) * device_px if pitch >= LEAST_PITCH_PX else 0.0
        if gap != self._gap:
            self._gap = gap
            self.schedule_refresh()

    def _fit_gpu_top(self) -> None:
        """The GPUs' axis tall enough for the legend above the busiest bar (on a small
        projector it hid the tops of the bars and their waiting parts)."""
        busiest = max(float(self.model.out.gpu_load.max()), 1.0)
        top = max(nice_ceiling(busiest * 1.3, FINE_STEPS),
                  self.gpu_legend.end_with_room(
                      0.0, busiest, self.count_labels[0].height + 2 * TEXT_MARGIN))
        if top != self._top:
            self._top = top
            self.gpu_plot.getPlotItem().setYRange(0, top, padding=0)

    def refresh(self) -> None:
        out: MoeOut = self.model.out
        rects, kept = copy_cells(out, self._gap)
        revealed = self.model.revealed  # until then the copies past capacity look kept
        self.copies.set_cells(rects, list(np.where(kept | (not revealed),
                                                   theme.color("compute"),
                                                   theme.color("highlight"))))
        pixel = self.expert_plot.getPlotItem().getViewBox().viewPixelSize()
        if out.capacity is None or out.capacity > TOKENS:
            self.capacity_line.set_line(0, -1, 0, -1, pixel)  # off the plot
        else:
            self.capacity_line.set_line(-0.6, out.capacity, EXPERTS - 0.4, out.capacity,
                                        pixel)

        load, busiest = out.gpu_load, float(out.gpu_load.max())
        self._fit_gpu_top()
        bars = [(g - 0.35, 0, 0.7, float(load[g])) for g in range(GPUS)]
        waits = [(g - 0.35, float(load[g]), 0.7, busiest - float(load[g]))
                 for g in range(GPUS)]
        self.loads.set_cells(np.array(bars + waits),
                             [theme.color("compute")] * GPUS + [theme.color("idle")] * GPUS)
        for g, label in enumerate(self.count_labels):
            label.setText(str(int(load[g])))
            label.setPos(g, busiest)

        self.predict.sync()
        r = self.model.readouts()
        dropped = (f"{r['dropped'].text} of the copies dropped" if revealed else
                   "How many copies does the dashed capacity turn away? Guess, then Reveal")
        self.message.show_message(
            f"{dropped}; the busiest GPU computes "
            f"{int(busiest)} copies, {r['imbalance'].text} the mean, so the others wait. "
            f"It sends {si_text(out.traffic.sent.max(), 'B')} in the all-to-all "
            f"(the least: {si_text(out.traffic.sent.min(), 'B')}).",
            warn=revealed and out.dropped_share > 0)
