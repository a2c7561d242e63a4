"""Figure 12.1: the roofline times of one decode step, the GPU's memory at that batch,
and tokens per second against time per output token over every batch that fits."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import (
    FINE_STEPS,
    axis_time_unit,
    format_value,
    nice_ceiling,
    time_text,
)
from gpuviz.core.plots import CellGrid, Dots, Legend, Segment, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, TextLayer, polyline_segments
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.memory import GB
from gpuviz.models.serving.decode_batch import DecodeBatchOut

STEP_ROWS = ("Memory", "Compute")
# (part, role, legend) of the memory row of a step, then of the GPU's memory bar
STEP_PARTS = (("weights", "memory", "weights"), ("kv_cache", "memory_light", "KV caches"))
STEP_Y_TOP = 2.3
MEMORY_Y_TOP = 2.0
STEP_ROOM = 1.6  # the step axis's top over its longest bar: room for " 34.7 s = the step"
MEMORY_PARTS = (("weights", "memory"), ("caches", "memory_light"), ("free", None),
                ("workspace", "neutral"), ("headroom", "idle"))


def _axis_steps(out: DecodeBatchOut) -> tuple[float, ...]:
    """The values an axis's top may take: fine (the longest bar fills its axis) while the
    batch fits; 1, 2 and 5 beyond it, where the bars grow with every notch of the slider
    and axes that followed them repainted all three plots on every one."""
    return FINE_STEPS if out.fits else (1.0, 2.0, 5.0)


class DecodeBatchView(FigureView):
    def build(self) -> None:
        for name in ("batch_size", "preset", "gpu", "context", "cache"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.step_plot = plot_widget("One decode step (ms)")
        item = self.step_plot.getPlotItem()
        item.invertY(True)
        item.setYRange(-0.6, STEP_Y_TOP, padding=0)  # the legend below the bars
        item.getAxis("left").setTicks([list(enumerate(STEP_ROWS)), []])
        item.showGrid(x=True, y=False, alpha=0.25)
        self.step_bars = CellGrid(font_size=9)
        item.addItem(self.step_bars)
        self.step_text = TextLayer(QRectF(0, -0.6, 1, STEP_Y_TOP + 0.6), keep_inside=True)
        self.row_labels = [self.step_text.add(role="text", size=10, bold=True,
                                              anchor=(0, 0.5)) for _ in STEP_ROWS]
        item.addItem(self.step_text)
        legend = Legend(item, anchor=(0, 1), columns=3)
        for _, role, text in STEP_PARTS:
            legend.add_box(text, theme.color(role))
        legend.add_box("compute", theme.color("compute"))
        self._step_top: tuple[float, str] = (0.0, "")
        self.add_plot(self.step_plot, 2)

        self.memory_plot = plot_widget("GPU memory (GB)")
        mitem = self.memory_plot.getPlotItem()
        mitem.setYRange(-0.6, MEMORY_Y_TOP, padding=0)  # the legend above the bar
        mitem.getAxis("left").setTicks([[], []])
        mitem.showGrid(x=True, y=False, alpha=0.25)
        self.memory_bar = CellGrid(font_size=9)
        mitem.addItem(self.memory_bar)
        self.hbm_line = Segment(pen("highlight", 2.5))
        mitem.addItem(self.hbm_line)
        self.memory_text = TextLayer(QRectF(0, -0.6, 100, MEMORY_Y_TOP + 0.6),
                                     keep_inside=True)
        self.hbm_label = self.memory_text.add(role="highlight", size=9, bold=True,
                                              anchor=(-0.05, 0.5))
        mitem.addItem(self.memory_text)
        mlegend = Legend(mitem, anchor=(0, 0), columns=5)
        mlegend.add_box("weights", theme.color("memory"))
        mlegend.add_box("KV caches", theme.color("memory_light"))
        mlegend.add_box("free for caches", theme.color("background"),
                        outline=theme.color("muted"))
        mlegend.add_box("workspace", theme.color("neutral"))
        mlegend.add_box("headroom", theme.color("idle"))
        self._memory_top = 0.0
        self.add_plot(self.memory_plot, 2)

        self.trade_plot = plot_widget("Time per output token (ms)", "Tokens/s")
        titem = self.trade_plot.getPlotItem()
        self.trade_curve = curve(titem, pen("memory", 2.5))
        # The batch's point: orange memory-bound, blue compute-bound, magenta if it does
        # not fit (one Dots per colour, the others hidden).
        self.points = {role: Dots(titem, 1, 14, theme.color(role), pen("text", 1.5))
                       for role in ("memory", "compute", "highlight")}
        # the curve's ends, kept off the curve, the point and each other
        self.trade_text = PlacedTextLayer(QRectF(0, 0, 1, 1))
        self.end_labels = [self.trade_text.add(role="text", size=9) for _ in range(2)]
        titem.addItem(self.trade_text)
        self._trade_range = (0.0, 0.0, "")
        self._trade_segments = np.zeros((0, 4))
        self.add_plot(self.trade_plot, 2)

    def refresh(self) -> None:
        out: DecodeBatchOut = self.model.out
        self._show_step(out)
        self._show_memory(out)
        self._show_trade_off(out)
        self.predict.sync()
        text, warn = self.model.message()
        self.message.show_message(text, warn=warn)

    def _show_step(self, out: DecodeBatchOut) -> None:
        step = out.step
        rows = (float(step.memory_time[0]), float(step.compute_time[0]))
        # One scale for every batch that fits (the bars grow as the batch does), wider
        # only for a batch beyond it; in the time unit that suits its top.
        longest = max(float(out.curve.time.max(initial=0.0)), *rows)
        factor, unit = axis_time_unit(longest * STEP_ROOM)
        scale = 1 / factor
        top = nice_ceiling(longest * scale * STEP_ROOM, _axis_steps(out))
        if (top, unit) != self._step_top:
            self._step_top = (top, unit)
            item = self.step_plot.getPlotItem()
            item.setLabel("bottom", f"One decode step ({unit})")
            item.setXRange(0, top, padding=0)
            self.step_text.set_bounds(QRectF(0, -0.6, top, STEP_Y_TOP + 0.6))
        parts = [getattr(step, name)[0] / step.bandwidth * scale for name, _, _ in STEP_PARTS]
        compute = rows[1] * scale
        starts = np.concatenate([[0.0], np.cumsum(parts)[:-1]])
        rects = [(x, -0.3, w, 0.6) for x, w in zip(starts, parts, strict=True)]
        rects.append((0.0, 0.7, compute, 0.6))
        fills = [theme.color(role) for _, role, _ in STEP_PARTS] + [theme.color("compute")]
        texts = [time_text(w / scale) for w in parts] + [time_text(rows[1])]
        self.step_bars.set_cells(np.array(rects), fills, texts=texts)
        longer = int(rows[1] > rows[0])
        for i, (label, seconds) in enumerate(zip(self.row_labels, rows, strict=True)):
            label.setText(f" {time_text(seconds)}" + (" = the step" if i == longer else ""))
            label.setPos(seconds * scale, i)

    def _show_memory(self, out: DecodeBatchOut) -> None:
        budget = out.budget
        caches = budget.caches(int(out.step.batch[0]))
        sizes = {"weights": budget.weights, "caches": caches,
                 "free": max(budget.cache_pool - caches, 0.0),
                 "workspace": budget.workspace, "headroom": budget.headroom}
        gb = [sizes[name] / GB for name, _ in MEMORY_PARTS]
        hbm = budget.hbm / GB
        top = nice_ceiling(max(sum(gb), hbm) * 1.1, _axis_steps(out))
        if top != self._memory_top:
            self._memory_top = top
            self.memory_plot.getPlotItem().setXRange(0, top, padding=0)
            self.memory_text.set_bounds(QRectF(0, -0.6, top, MEMORY_Y_TOP + 0.6))
        starts = np.concatenate([[0.0], np.cumsum(gb)[:-1]])
        background = theme.color("background")
        self.memory_bar.set_cells(
            np.array([(x, -0.3, w, 0.6) for x, w in zip(starts, gb, strict=True)]),
            [theme.color(role) if role else background for _, role in MEMORY_PARTS],
            [theme.color("muted") if role is None else None for _, role in MEMORY_PARTS],
            texts=[format_value(w, "GB") for w in gb])
        pixel = self.memory_plot.getPlotItem().getViewBox().viewPixelSize()
        self.hbm_line.set_line(hbm, -0.5, hbm, 0.9, pixel)
        self.hbm_label.setText(f"HBM {format_value(hbm, 'GB')}")
        self.hbm_label.setPos(hbm, 0.65)

    def _show_trade_off(self, out: DecodeBatchOut) -> None:
        curve_steps, step = out.curve, out.step
        longest = max(float(curve_steps.time.max(initial=0.0)), float(step.time[0]))
        factor, unit = axis_time_unit(longest * 1.15)
        scale = 1 / factor
        ms = curve_steps.time * scale  # in `unit`
        rate = curve_steps.tokens_per_second
        x_top = nice_ceiling(longest * scale * 1.15, _axis_steps(out))
        y_top = nice_ceiling(max(float(rate.max(initial=0.0)),
                                 float(step.tokens_per_second[0])) * 1.15, _axis_steps(out))
        if (x_top, y_top, unit) != self._trade_range:
            self._trade_range = (x_top, y_top, unit)
            item = self.trade_plot.getPlotItem()
            item.setLabel("bottom", f"Time per output token ({unit})")
            item.setRange(xRange=(0, x_top), yRange=(0, y_top), padding=0)
            self.trade_text.set_bounds(QRectF(0, 0, x_top, y_top))
        point = np.array([[float(step.time[0]) * scale, float(step.tokens_per_second[0])]])
        # The curve, its end labels and what they keep off move only with the model, the
        # GPU, the context and the cache; the batch moves the point alone.
        if self.needs_update("trade_curve", (ms.tobytes(), rate.tobytes())):
            self.trade_curve.set_data(ms, rate)
            ends = (0, len(ms) - 1) if len(ms) > 1 else (0,) if len(ms) else ()
            for label, at in zip(self.end_labels, ends, strict=False):
                x, y = float(ms[at]), float(rate[at])
                label.setText(f"batch {int(curve_steps.batch[at]):,}")
                label.setPos(x, y)
                # below-right, above-left, right, left, below, above of its end
                self.trade_text.set_candidates(label, [
                    (x, y, -0.1, -0.2), (x, y, 1.1, 1.2), (x, y, -0.15, 0.5),
                    (x, y, 1.15, 0.5), (x, y, 0.5, -0.3), (x, y, 0.5, 1.3)])
            for label in self.end_labels[len(ends):]:
                label.setText("")
            self._trade_segments = polyline_segments(ms, rate, max(len(ms) // 40, 1))
        self.trade_text.set_obstacles(self._trade_segments, point, 14)
        shown = out.bound if out.fits else "highlight"
        for role, dots in self.points.items():
            if role == shown:
                dots.set_points(point[:, 0], point[:, 1])
            else:
                dots.set_points([np.nan], [np.nan])
