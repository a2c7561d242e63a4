"""Figure 4.5: split-KV decoding over the SMs."""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import axis_time_unit, format_value, nice_ceiling, plural, time_text
from gpuviz.core.plots import (
    CellGrid,
    Dots,
    Legend,
    curve,
    diagram_widget,
    grid_rects,
    pen,
    plot_widget,
    text_item,
)
from gpuviz.core.text import TextLayer
from gpuviz.models.flash_attention import MAX_SPLITS


class SplitKVView(FigureView):
    def build(self) -> None:
        for name in ("splits", "batch_size", "kv_len", "kv_heads", "group", "kernel_us", "gpu"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        # The unit counts and the title's SM counts are what the figure is about: large.
        self.sms = CellGrid(font_size=10)
        self.box.addItem(self.sms)
        self.title = text_item(anchor=(0, 1), size=12, bold=True)
        self.box.addItem(self.title)
        self.title.setPos(0, -0.15)
        # The key under the grid, in room kept for it (see _fit_grid).
        self.legend = Legend(self.box, anchor=(0, 0), columns=3, size=9, at=(0.0, 0.0))
        self.legend.add_box("most work units", theme.color("memory"))
        self.legend.add_box("fewer units", theme.color("memory_light"))
        self.legend.add_box("no work: idle", theme.color("idle"))
        self.box.sigResized.connect(self._fit_grid)
        self.box.sigResized.connect(self.schedule_refresh)  # the title's fit
        self.add_plot(canvas, 1)

        # Plain Qt items and PlotCurveItems: no Python runs for them on a range change.
        self.plot = plot_widget("KV splits", "Step time (µs)")
        item = self.plot.getPlotItem()
        item.setXRange(0.5, MAX_SPLITS + 0.5, padding=0)
        self.unsplit = curve(item, pen("neutral", 2, Qt.DashLine))
        # The two line labels, one item; a label that would leave the plot (the curve
        # ending near the bottom, the dashed line near the top) flips to the other side.
        self.line_labels = TextLayer(QRectF(0.5, 0, MAX_SPLITS, 1), keep_inside=True)
        self.unsplit_label = self.line_labels.add("no splitting", role="muted", anchor=(1, 1))
        self.curve_label = self.line_labels.add("attention + merge", role="memory",
                                                anchor=(1, 0))
        item.addItem(self.line_labels)
        self.curve = curve(item, pen("memory", 2.5))
        self.dot = Dots(item, 1, 11, theme.color("highlight"))
        self._y_top: tuple[float, str] = (0.0, "")
        self._columns = 0
        self._cells_key: tuple = ()
        self.add_plot(self.plot, 1)

    def _fit_grid(self) -> None:
        """The SM grid with its title above and its key below (again on a resize)."""
        if not self._columns:
            return
        rows = math.ceil(self.model.out.sms / self._columns)
        self.legend.set_at((0.0, rows + 0.1))
        self.box.setRange(xRange=(0, self._columns),
                          yRange=(-1.0, self.legend.end_with_room(-1.0, rows + 0.1)),
                          padding=0.03)

    def refresh(self) -> None:
        s = self.model.out
        sms = s.sms
        columns = math.ceil(math.sqrt(sms * 2))  # a wide grid: about 2:1
        per_sm = s.units_per_sm
        key = (sms, columns, per_sm.tobytes())
        if key != self._cells_key:  # the SM grid changes only with the number of units
            self._cells_key = key
            top = int(per_sm.max()) if per_sm.size else 0
            idle, full, short = (theme.color("idle"), theme.color("memory"),
                                 theme.color("memory_light"))
            counts = per_sm.tolist()
            fills = [idle if n == 0 else full if n == top else short for n in counts]
            # Thousands in short: four digits are wider than a cell in the projector theme.
            texts = [("" if not n else str(n) if n < 1000 else f"{n / 1000:.0f}k")
                     for n in counts]
            self.sms.set_cells(grid_rects(sms, columns, y0=0.0, gap=0.12), fills, texts=texts)
        if columns != self._columns:
            self._columns = columns
            self._fit_grid()
        sp = s.split
        self.title.setText(
                 f"{sms} SMs: {sp.busy_sms} busy, {sms - sp.busy_sms} idle; "
                 f"{plural(sp.units, 'unit')} in {plural(sp.waves, 'wave')}")
        # Shrunk to the canvas when the window is too narrow for it.
        (x0, x1), _ = self.box.viewRange()
        unit = self.box.viewPixelSize()[0]
        room = (x1 - max(x0, 0.0)) / unit if unit > 0 else 0.0
        width = self.title.boundingRect().width() + 8
        self.title.set_scale(min(1.0, room / width) if room > 0 else 1.0)

        # Times in the unit that keeps the top of the axis under 1,000 (ms past 999 µs).
        top = max(float(s.curve_time.max()), s.unsplit.total_time) * 1.05
        factor, unit = axis_time_unit(top)
        us = s.curve_time / factor  # in `unit`
        unsplit = s.unsplit.total_time / factor
        # The range first, then the data: one layout and paint pass per change.
        y_top = nice_ceiling(top / factor)
        if (y_top, unit) != self._y_top:
            self._y_top = (y_top, unit)
            item = self.plot.getPlotItem()
            item.getAxis("left").setLabel(f"Step time ({unit})")
            item.setYRange(0, y_top, padding=0)
            self.line_labels.set_bounds(QRectF(0.5, 0, MAX_SPLITS, y_top))
        self.curve.set_data(s.curve_splits, us)
        self.unsplit.set_data([1, MAX_SPLITS], [unsplit] * 2)
        self.dot.set_points([self.model.splits], [sp.total_time / factor])
        # The two labels sit on opposite sides of the lines' right ends, never on each other.
        above = float(us[-1]) >= unsplit
        self.unsplit_label.setAnchor((1, 0) if above else (1, 1))
        self.unsplit_label.setPos(MAX_SPLITS, unsplit)
        self.curve_label.setAnchor((1, 1) if above else (1, 0))
        self.curve_label.setPos(MAX_SPLITS, float(us[-1]))

        if self.model.splits == 1:
            hint = ("No splitting: one work unit per (sequence, KV head). "
                    if sp.busy_sms < sms else
                    "Batch × KV heads already covers every SM: splitting only adds a merge. ")
        else:
            hint = (f"Each unit now reads {math.ceil(self.model.kv_len / self.model.splits):,} "
                    f"of the {self.model.kv_len:,} cached tokens; the merge kernel adds "
                    f"{time_text(sp.merge_time)}. ")
        share = 100 * sp.stream_bandwidth / s.hbm_bandwidth
        self.message.show_message(
            hint + f"The busy SMs draw {format_value(share, '%')} of HBM's bandwidth (one "
            f"SM at most {format_value(s.sm_bandwidth / 1e9, 'GB/s')}). Speed-up over no "
            f"splitting: {format_value(s.speedup, '×')}.")
