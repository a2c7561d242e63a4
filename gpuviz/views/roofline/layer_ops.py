"""Figure 2.3: the kernels of a single transformer layer as roofline-time bars."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, duration_text, long_time_unit, nice_ceiling
from gpuviz.core.plots import CellGrid, Legend, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models.roofline import COMPUTE, LAYER_OPS

BAR_HEIGHT = 0.7
LABEL_ROOM = 1.3  # the axis reaches this far past the longest bar, for its time label


class LayerOpsView(FigureView):
    def build(self) -> None:
        self.controls.add("preset")
        self.controls.add("gpu")
        self.controls.add("phase", style="buttons")
        self.controls.add("batch_size")
        self.controls.add("context")
        self.controls.add("attention", style="buttons")
        self.controls.add("fused_attention")
        self.controls.add("selected_op")

        self.plot = plot_widget("Roofline time of each kernel", x_unit="s")
        item = self.plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        self.bars.clicked.connect(self._on_click)
        item.addItem(self.bars)
        # The time labels are one item painted in one call; the bounds follow the x range.
        self.label_layer = TextLayer(QRectF(0, -1, 1, len(LAYER_OPS) + 1))
        # The bar values are what the figure is about: its largest plot text.
        self.time_labels = [self.label_layer.add(size=12, bold=True, anchor=(0, 0.5))
                            for _ in LAYER_OPS]
        item.addItem(self.label_layer)
        # The key in the bottom right corner, under the last kernel (_fit_rows).
        self.legend = Legend(item, anchor=(1, 1), columns=2)
        self.legend.add_box("compute-bound", theme.color("compute"))
        self.legend.add_box("memory-bound", theme.color("memory"))
        self._ticks: tuple[str, ...] = ()
        self._x_max = 0.0
        item.getViewBox().sigResized.connect(self._fit_rows)
        self.add_plot(self.plot)

    def _fit_rows(self) -> None:
        """Room under the last kernel for the key (on a 1024x768 projector it covered
        that kernel's time)."""
        n = len(self._ticks)
        if n:
            self.plot.getPlotItem().setYRange(
                -0.6, self.legend.end_with_room(-0.6, n - 0.4), padding=0)

    def _on_click(self, index: int) -> None:
        ops = self.model.out.ops
        if 0 <= index < len(ops):
            self.model.set("selected_op", ops[index].name)

    def refresh(self) -> None:
        out = self.model.out
        n = len(out.ops)
        item = self.plot.getPlotItem()
        labels = tuple(op.label for op in out.ops)
        if labels != self._ticks:
            self._ticks = labels
            item.getAxis("left").setTicks([[(i, text) for i, text in enumerate(labels)], []])
            self._fit_rows()
        times = np.array([t.time for t in out.times])
        x_max = nice_ceiling(times.max() * LABEL_ROOM, FINE_STEPS)
        if x_max != self._x_max:
            self._x_max = x_max
            item.setXRange(0, x_max, padding=0)
            self.label_layer.set_bounds(QRectF(0, -1, x_max, len(LAYER_OPS) + 1))
            set_time_axis_unit(item.getAxis("bottom"), x_max)
        rects = np.column_stack([np.zeros(n), np.arange(n) - BAR_HEIGHT / 2,
                                 np.maximum(times, x_max * 1e-3), np.full(n, BAR_HEIGHT)])
        fills = [theme.color("compute" if t.bound == COMPUTE else "memory") for t in out.times]
        # The selected kernel is framed in the text colour (magenta means a limit).
        outlines = [theme.color("text") if i == out.selected else None for i in range(n)]
        self.bars.set_cells(rects, fills, outlines, outline_width=3.0)
        for i, label in enumerate(self.time_labels):
            if i < n:
                label.setText(" " + duration_text(times[i]))
                label.setPos(float(rects[i, 2]), float(i))
                label.setColor(theme.color("text" if i == out.selected else "muted"))
            else:
                label.setText("")
        text, warn = self.model.message()
        self.message.show_message(text, warn)


def set_time_axis_unit(axis: pg.AxisItem, x_max: float) -> None:
    """A time axis (data in s) in s with its SI prefix (ms, µs, fs) up to a few minutes,
    then in the minutes, hours or days the bars' labels use (not "ks" beside "36.9 min")."""
    unit = long_time_unit(x_max / 5)  # a few ticks of a minute or more
    factor, name = unit if unit is not None else (1.0, "s")
    axis.setScale(1.0 / factor)
    # No SI prefix on minutes or hours ("kmin"): a range no axis reaches.
    axis.setLabel(axis.labelText, units=name, siPrefixEnableRanges=None if unit is None
                  else ((math.inf, math.inf),))
