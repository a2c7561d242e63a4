"""Figure 1.3: the occupancy calculator."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import plural
from gpuviz.core.plots import (
    CellGrid,
    Legend,
    diagram_widget,
    grid_rects,
    plot_widget,
    text_item,
)
from gpuviz.data.hardware import gpu
from gpuviz.models.gpu_architecture import RESOURCE_LABELS, RESOURCES

WARP_SLOT_COLUMNS = 32


class OccupancyView(FigureView):
    def build(self) -> None:
        for name in ("gpu", "threads_per_block", "registers_per_thread", "shared_memory_kb"):
            self.controls.add(name)

        self.bars_plot = plot_widget("Blocks per SM this resource allows")
        item = self.bars_plot.getPlotItem()
        # Bars stop at 33 (longer ones get a "▸"): room right of them for " 228 ▸".
        item.setXRange(0, 38, padding=0)
        item.setYRange(-0.6, len(RESOURCES) - 0.4, padding=0)
        item.getAxis("left").setTicks([[(i, RESOURCE_LABELS[n]) for i, n in
                                        enumerate(RESOURCES)]])
        item.showGrid(x=True, y=False, alpha=0.25)
        item.invertY(True)
        self.bars = pg.BarGraphItem(x0=np.zeros(len(RESOURCES)), y=np.arange(len(RESOURCES)),
                                    width=np.ones(len(RESOURCES)), height=0.6)
        item.addItem(self.bars)
        self.bar_labels = [text_item(anchor=(0, 0.5), size=12, bold=True) for _ in RESOURCES]
        for label in self.bar_labels:
            item.addItem(label)
        self.add_plot(self.bars_plot, 3)

        canvas, self.slots_box = diagram_widget()
        self.slots_title = text_item(anchor=(0, 1))
        self.slots = CellGrid()
        self.slots_box.addItem(self.slots)
        self.slots_box.addItem(self.slots_title)
        self.slots_title.setPos(0, 0.1)
        self.slots_box.setRange(xRange=(0, WARP_SLOT_COLUMNS), yRange=(-2.0, 2.3), padding=0.02)
        legend = Legend(self.slots_box, anchor=(1, 0), columns=3)
        legend.add_box("a block's warps", theme.color("compute"))
        legend.add_box("the next block's", theme.color("compute_light"))
        legend.add_box("idle slot", theme.color("idle"))
        self.add_plot(canvas, 1)
        # What was last drawn: unchanged bars or warp slots are not set again.
        self._bars_key: tuple = ()
        self._slots_key: tuple = ()

    def refresh(self) -> None:
        out = self.model.out
        shown = np.array([min(out.limits[n], 33) for n in RESOURCES], dtype=float)
        highlight, compute = theme.color("highlight"), theme.color("compute")
        brushes = [highlight if n in out.limiting else compute for n in RESOURCES]
        bars_key = (shown.tobytes(), tuple(n in out.limiting for n in RESOURCES),
                    tuple(out.limits[n] for n in RESOURCES))
        if bars_key != self._bars_key:
            self._bars_key = bars_key
            self.bars.setOpts(width=np.maximum(shown, 0.15), brushes=brushes, pens=brushes)
            for i, (name, label) in enumerate(zip(RESOURCES, self.bar_labels, strict=True)):
                limit = out.limits[name]
                label.setText(f" {limit}" if limit <= 33 else f" {limit} ▸")
                label.setPos(shown[i], i)

        max_warps = int(gpu(self.model.gpu)["sm.max_warps"])
        slots_key = (max_warps, out.active_warps, out.warps_per_block)
        if slots_key != self._slots_key:
            self._slots_key = slots_key
            even, odd, idle = (compute, theme.color("compute_light"), theme.color("idle"))
            per_block = out.warps_per_block
            fills = [(odd if per_block and (slot // per_block) % 2 else even)
                     if slot < out.active_warps else idle for slot in range(max_warps)]
            self.slots.set_cells(grid_rects(max_warps, WARP_SLOT_COLUMNS, y0=0.2), fills)
            self.slots_title.setText(
                f"Warp slots of one SM: {out.active_warps} of {max_warps} in use")

        if out.failure:
            self.message.show_message(f"The launch fails: {out.failure}. Not even one block "
                                      "fits on an SM.", warn=True)
        else:
            names = [RESOURCE_LABELS[n].lower() for n in out.limiting]
            limiter = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1
                                   else names)
            fit = "fits" if out.blocks == 1 else "fit"
            sets = "sets" if len(names) == 1 else "set"
            self.message.show_message(f"{plural(out.blocks, 'block')} of "
                                      f"{plural(out.warps_per_block, 'warp')} {fit}; "
                                      f"{limiter} {sets} the limit.")
