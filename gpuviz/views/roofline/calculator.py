"""Figure 2.4: the four-step roofline calculator with three what-ifs."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, duration_text, format_value, nice_ceiling, si_text
from gpuviz.core.plots import CellGrid, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import TextPanel
from gpuviz.data.hardware import gpu
from gpuviz.views.roofline.layer_ops import set_time_axis_unit

BAR_HEIGHT = 0.6
WHAT_IF_ROLES = ("neutral", "memory", "compute")  # faster GPU, half bytes, 2x FLOP/s
SPEEDUP_MIN_AXIS = 1.5


class CalculatorView(FigureView):
    def build(self) -> None:
        self.controls.add("op")
        self.controls.add("flops", style="entry")
        self.controls.add("bytes_moved", style="entry")
        self.controls.add("gpu")
        self.controls.add("faster_gpu")

        # Four lines of fixed height: new text repaints the panel, not the whole page.
        self.steps = TextPanel(4.2, accessible_name="The four steps", framed=False, margin=0)
        self.add_plot(self.steps, 0)

        self.time_plot = plot_widget("Time", x_unit="s")
        item = self.time_plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        item.setYRange(-0.6, 1.6, padding=0)
        item.getAxis("left").setTicks([[(0, "Compute time"), (1, "Memory time")], []])
        self.time_bars = CellGrid()
        item.addItem(self.time_bars)
        # Bar labels: one item per plot, painted in one call; bounds follow the x range.
        self.time_layer = TextLayer(QRectF(0, -0.6, 1, 2.2), keep_inside=True)
        self.time_labels = [self.time_layer.add(size=10, bold=True, anchor=(0, 0.5))
                            for _ in range(2)]
        item.addItem(self.time_layer)
        self._time_max = 0.0
        self.add_plot(self.time_plot, 2)

        self.gain_plot = plot_widget("Speed-up (time before / time after)")
        gitem = self.gain_plot.getPlotItem()
        gitem.invertY(True)
        gitem.showGrid(x=True, y=False, alpha=0.25)
        gitem.setYRange(-0.6, 2.6, padding=0)
        self.gain_bars = CellGrid()
        gitem.addItem(self.gain_bars)
        self.one_line = curve(gitem, pen("text", 1.5, Qt.DashLine))
        self.gain_layer = TextLayer(QRectF(0, -0.6, 1, 3.2), keep_inside=True)
        self.gain_labels = [self.gain_layer.add(size=10, bold=True, anchor=(0, 0.5))
                            for _ in range(3)]
        gitem.addItem(self.gain_layer)
        self.one_line.set_data([1, 1], [-0.6, 2.6])
        self._gain_max = 0.0
        gitem.getViewBox().sigResized.connect(self._fit_gains)
        names = ["Faster GPU"] + [w.label for w in self.model.out.what_ifs[1:]]
        gitem.getAxis("left").setTicks([list(enumerate(names)), []])
        self.add_plot(self.gain_plot, 2)

    def _fit_gains(self) -> None:
        """The speed-up axis long enough for every bar's label past its end, in pixels
        (on a 1024x768 projector a label flipped into its bar, dark on dark orange)."""
        gains = [w.speedup for w in self.model.out.what_ifs]
        width = self.gain_plot.getPlotItem().getViewBox().width()
        need = max(g / max(1.0 - (label.width + 8) / width, 0.3) if width > 0 else g * 1.3
                   for g, label in zip(gains, self.gain_labels, strict=True))
        top_gain = max(SPEEDUP_MIN_AXIS, nice_ceiling(max(need, max(gains) * 1.1),
                                                      FINE_STEPS))
        if top_gain != self._gain_max:
            self._gain_max = top_gain
            self.gain_plot.getPlotItem().setXRange(0, top_gain, padding=0)
            self.gain_layer.set_bounds(QRectF(0, -0.6, top_gain, 3.2))

    def refresh(self) -> None:
        out = self.model.out
        t = out.time
        roof = out.roof
        times = np.array([t.compute, t.memory])
        # Room right of the longer bar for its label (" 35.1 µs  ← the bound"); the
        # finer steps keep the longer bar over half the axis.
        top = nice_ceiling(times.max() * 1.5, FINE_STEPS)
        if top != self._time_max:
            self._time_max = top
            self.time_plot.getPlotItem().setXRange(0, top, padding=0)
            set_time_axis_unit(self.time_plot.getPlotItem().getAxis("bottom"), top)
            self.time_layer.set_bounds(QRectF(0, -0.6, top, 2.2))
        bound_index = 0 if t.bound == "compute" else 1
        rects = np.column_stack([np.zeros(2), np.arange(2) - BAR_HEIGHT / 2,
                                 np.maximum(times, top * 1e-3), np.full(2, BAR_HEIGHT)])
        self.time_bars.set_cells(
            rects, [theme.color("compute"), theme.color("memory")],
            [theme.color("highlight") if i == bound_index else None for i in range(2)],
            outline_width=3.0)
        for i, label in enumerate(self.time_labels):
            suffix = "  ← the bound" if i == bound_index else ""
            label.setText(" " + duration_text(times[i]) + suffix)
            label.setPos(float(rects[i, 2]), float(i))
            label.setColor(theme.text_color("highlight" if i == bound_index else "text"))

        gains = np.array([w.speedup for w in out.what_ifs])
        grects = np.column_stack([np.zeros(3), np.arange(3) - BAR_HEIGHT / 2, gains,
                                  np.full(3, BAR_HEIGHT)])
        self.gain_bars.set_cells(grects, [theme.color(r) for r in WHAT_IF_ROLES])
        for i, (label, w) in enumerate(zip(self.gain_labels, out.what_ifs, strict=True)):
            # The GPU's name goes in its bar's label: the row names stay put, so a new
            # GPU does not re-lay out the axis.
            which = f" {w.label[0].lower()}{w.label[1:]}" if i == 0 else ""
            # The readouts' precision: "2×" there is "2×" here, not "2.00×".
            label.setText(f" {format_value(w.speedup, '×')}{which} ({duration_text(w.time)})")
            label.setPos(float(gains[i]), float(i))
        self._fit_gains()

        g = gpu(self.model.gpu)
        self.steps.setText(
            f"<b>1.</b> Work {si_text(out.flops, 'FLOP')}, traffic {si_text(out.bytes, 'B')}"
            f" → {format_value(out.intensity, 'FLOP/B')} ({g.short_name} ridge: "
            f"{format_value(roof.ridge)})<br>"  # one line at 1280 x 800, projector theme
            # Peaks and bandwidths as figure 2.1 writes them: "989", "2,250", "3.35", "8".
            f"<b>2.</b> Compute time = FLOPs / {format_value(roof.peak / 1e12, 'TFLOP/s')} = "
            f"{duration_text(t.compute)}<br>"
            f"<b>3.</b> Memory time = bytes / {format_value(roof.bandwidth / 1e12, 'TB/s')} = "
            f"{duration_text(t.memory)}<br>"
            f"<b>4.</b> Time = the larger = <b>{duration_text(t.time)}</b>, "
            f"{t.bound}-bound")
        if out.other_gpu is None:
            self.message.show_message(
                f"The {g.short_name} is the last GPU in the list: pick another one under "
                "Faster GPU to compare.", warn=True)
        elif t.bound == "memory":
            self.message.show_message(
                "Memory-bound: twice the FLOP/s buys nothing; only fewer bytes or more "
                "bandwidth help.")
        else:
            self.message.show_message(
                "Compute-bound: halving the bytes buys nothing; only more FLOP/s (or fewer "
                "FLOPs) helps.")
