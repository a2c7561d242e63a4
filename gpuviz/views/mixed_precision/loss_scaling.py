"""Figure 5.4: loss scaling moves a gradient population inside FP16's range."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g, superscript
from gpuviz.core.plots import CellGrid, Legend, opaque_blend, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.mixed_precision import (
    BIN_WIDTH,
    HISTOGRAM_RANGE,
    power_text,
    scale_gradients,
    value_text,
)

TICK_STEP = 4  # binades between labelled ticks


def _values(count: int) -> str:
    return f"{count:,} value" + ("" if count == 1 else "s")


class LossScalingView(FigureView):
    def build(self) -> None:
        self.controls.add("fmt", style="buttons")
        self.controls.add("scale_exp")
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("log₂ |gradient × S|", "Gradients per half binade")
        item = self.plot.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.2)
        low, high = HISTOGRAM_RANGE
        item.setXRange(low, high, padding=0)
        item.getAxis("bottom").setTicks([[(float(k), f"2{superscript(k)}") for k in
                                          range(int(low), int(high) + 1, TICK_STEP)], []])
        # The histogram only slides with S (a whole number of bins), so its tallest bar
        # never changes: one fixed y range.
        tallest = max(int(np.max(sum((o.normal_counts, o.subnormal_counts, o.lost_counts))))
                      for o in (scale_gradients("fp16", 0),))
        self._top = tallest * 1.3
        item.setYRange(0, self._top, padding=0)
        self.zones = CellGrid()
        self.zones.setZValue(-1)
        item.addItem(self.zones)
        self.bars = CellGrid()
        item.addItem(self.bars)
        self.labels = TextLayer(QRectF(low, 0, high - low, self._top), keep_inside=True)
        self.flush_label = self.labels.add(role="highlight", size=9, bold=True,
                                           anchor=(1.02, 0))
        self.overflow_label = self.labels.add(role="highlight", size=9, bold=True,
                                              anchor=(-0.02, 0))
        self.note = self.labels.add(role="muted", size=9, anchor=(0, 0))
        legend = Legend(item, anchor=(0, 0), columns=3)
        legend.add_box("kept", theme.color("compute"))
        legend.add_box("subnormal (fewer bits)", theme.color("compute_light"))
        legend.add_box("lost (0 or inf)", theme.color("highlight"))
        item.addItem(self.labels)
        self.add_plot(self.plot)

    def refresh(self) -> None:
        out = self.model.out
        self.predict.sync()
        self.message.show_message(*self.model.comment())
        # The histogram changes only with the format and S (not with the guess).
        if self.needs_update("histogram", (out.fmt.key, out.scale_exp)):
            self._draw_histogram(out)

    def _draw_histogram(self, out: object) -> None:
        low, high = HISTOGRAM_RANGE
        top = self._top
        flush = math.log2(out.flush_limit)
        over = math.log2(out.overflow_limit)
        zones = []
        if flush > low:
            zones.append((low, 0, flush - low, top))
        if over < high:
            zones.append((over, 0, high - over, top))
        if self.needs_update("zones", out.fmt.key):
            self.zones.set_cells(np.array(zones).reshape(-1, 4),
                                 [opaque_blend("highlight", 60)] * len(zones))

        left = out.edges[:-1]
        rects, colours = [], []
        base = np.zeros(len(left))
        for counts, role in ((out.normal_counts, "compute"),
                             (out.subnormal_counts, "compute_light"),
                             (out.lost_counts, "highlight")):
            shown = np.flatnonzero(counts)
            rects += [(left[i] + 0.04, base[i], BIN_WIDTH - 0.08, counts[i]) for i in shown]
            colours += [theme.color(role)] * len(shown)
            base = base + counts
        self.bars.set_cells(np.array(rects).reshape(-1, 4), colours)

        in_view = flush > low and over < high
        if flush > low:
            self.flush_label.setText(f"≤ {power_text(out.flush_limit)} → 0\n"
                                     f"{_values(int(out.flushed.sum()))}")
            self.flush_label.setPos(flush, top * 0.88)
        else:
            self.flush_label.setText("")
        if over < high:
            self.overflow_label.setText(f"≥ {value_text(out.overflow_limit)} → inf\n"
                                        f"{_values(int(out.overflowed.sum()))}")
            # Above the tallest bar (the range is 1.3 times it), under the legend.
            self.overflow_label.setPos(over, top * 0.88)
        else:
            self.overflow_label.setText("")
        # Short lines at the left, over the empty tail of small gradients.
        self.note.setText("" if in_view else
                          f"{out.fmt.label} flushes only at or below "
                          f"{power_text(out.flush_limit)}\nand overflows only past "
                          f"{format_g(out.fmt.max, 3)}:\nboth far off this axis")
        self.note.setPos(low + 1, top * 0.86)
