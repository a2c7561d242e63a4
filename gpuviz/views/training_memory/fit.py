"""Figure 6.5: does a training run fit one GPU? Stacked bars against the GPU's memory and
a list of fixes, each saying what it shrinks."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QLabel

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, nice_ceiling
from gpuviz.core.plots import CellGrid, Segment, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer
from gpuviz.core.widgets import TextTable
from gpuviz.models.training_memory import COMPONENTS, FIXES, effect_phrase, gb_text

# The role of each part of COMPONENTS, bottom of the stack first.
COMPONENT_ROLES = ("compute", "onchip", "idle", "memory", "highlight")
BARS = ("as set", "with the fixes")
BAR = 0.5
LABEL_X = 1 + BAR / 2 + 0.05  # the parts' labels start here, right of the second bar
X_END = 2.4  # the plot's right end, unless the labels need more room (_fit_x_range)


class FitView(FigureView):
    def build(self) -> None:
        for name in ("preset", "gpu", "seq_len", "micro_batch", "precision", "optimizer"):
            self.controls.add(name)
        self.controls.add_widget(QLabel("<b>Fixes</b>"))
        # In the order of the table under the plot.
        self.controls.add_grid(("fix_flash", "fix_checkpoint", "fix_half_batch", "fix_8bit",
                                "zero_stage", "fix_bf16"))
        self.controls.add("gpus")

        self.plot = plot_widget("", "Memory of one GPU (GB)")
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        self._x_end = X_END
        item.setXRange(-0.5, X_END, padding=0)
        item.getAxis("bottom").setTicks([[(i, name) for i, name in enumerate(BARS)]])
        self.bars = CellGrid(font_size=8)
        item.addItem(self.bars)
        self.capacity = Segment(pen("text", 2.5))
        self.usable = Segment(pen("text", 1.5, Qt.DashLine))
        item.addItem(self.capacity)
        item.addItem(self.usable)
        # Placed: thin parts put their labels close together, and the GPU's two lines
        # cross the labels' column; the line labels go first, the parts keep off them.
        self.text = PlacedTextLayer(QRectF(-0.5, 0, 3, 100))
        self.part_labels = [self.text.add(role=role, size=9, bold=True, anchor=(0, 0.5))
                            for role in COMPONENT_ROLES]
        self.capacity_label = self.text.add(size=9, bold=True, anchor=(1, 1.0))
        self.usable_label = self.text.add(size=9, anchor=(1, 0.0))  # under its line
        self.total_labels = [self.text.add(size=9, bold=True, anchor=(0.5, 1.0))
                             for _ in BARS]
        item.addItem(self.text)
        self._y_max = 0.0
        item.getViewBox().sigResized.connect(self._fit_x_range)
        self.add_plot(self.plot, 3)
        self.table = TextTable(("Fix", "What it shrinks", "Effect now"), len(FIXES),
                               "What each fix changes", left=(0, 1, 2))
        self.add_plot(self.table, 0)

    def refresh(self) -> None:
        out = self.model.out
        budgets = (out.before, out.after)
        # The axis in GB, TB or PB: whichever keeps its top under 1,000.
        top_bytes = max(out.before.total, out.capacity) * 1.1
        unit, scale = next(((u, f) for u, f in (("GB", 1e-9), ("TB", 1e-12))
                            if top_bytes * f < 1000), ("PB", 1e-15))
        top = max(out.before.total, out.capacity) * scale
        y_max = nice_ceiling(top * 1.1, FINE_STEPS)
        item = self.plot.getPlotItem()
        if self.needs_update("unit", unit):
            item.getAxis("left").setLabel(f"Memory of one GPU ({unit})")
            self._y_max = 0.0
        if y_max != self._y_max:
            self._y_max = y_max
            item.setYRange(0, y_max, padding=0)
            self.text.set_bounds(QRectF(-0.5, 0, self._x_end + 0.5, y_max))
        rects, fills = [], []
        for x, budget in enumerate(budgets):
            parts = np.array(budget.parts) * scale
            bottoms = np.concatenate([[0.0], np.cumsum(parts)[:-1]])
            for role, bottom, height in zip(COMPONENT_ROLES, bottoms, parts, strict=True):
                rects.append((x - BAR / 2, bottom, BAR, height))
                fills.append(theme.color(role))
            self.total_labels[x].setText(gb_text(budget.total))
            self.total_labels[x].setPos(x, parts.sum())
        # Violet is the optimizer's memory here, not idle hardware: no hatching.
        # Parts parted by a line of background: gradients' yellow and the optimizer's violet
        # are equally light in the light looks, and in greyscale only the line parts them.
        self.bars.set_cells(np.array(rects), fills, [theme.color("background")] * len(fills),
                            hatch=[False] * len(fills))
        after = np.array(out.after.parts) * scale
        bottoms = np.concatenate([[0.0], np.cumsum(after)[:-1]])
        # Each part's label beside its part, else moved up or down in small steps.
        steps = np.array(sorted(range(-16, 17), key=abs)) * y_max / 32
        x = LABEL_X
        for (_, name), label, bottom, height in zip(COMPONENTS, self.part_labels, bottoms,
                                                    after, strict=True):
            label.setText(f"{name} {gb_text(height / scale)}")
            middle = bottom + height / 2
            self.text.set_candidates(label, [(x, middle + step, 0, 0.5) for step in steps
                                             if 0 <= middle + step <= y_max])
        pixel = item.getViewBox().viewPixelSize()
        capacity, usable = out.capacity * scale, out.usable * scale
        end = self._x_end
        self.capacity.set_line(-0.5, capacity, end, capacity, pixel)
        self.usable.set_line(-0.5, usable, end, usable, pixel)
        # Lines closer than two labels' height share one label, above the solid line.
        together = (capacity - usable) < 2.2 * self._label_height() * pixel[1]
        name = f"{self.model_gpu_name()} {gb_text(out.capacity)}"
        self.capacity_label.setText(f"{name} (85%: {gb_text(out.usable)})" if together
                                    else name)
        self.usable_label.setText("" if together else f"85%: {gb_text(out.usable)}")
        # Above the solid line, under the dashed one; the other side if that is taken.
        self.text.set_candidates(self.capacity_label, [(end - 0.05, capacity, 1, 1.0),
                                                       (end - 0.05, capacity, 1, 0.0)])
        self.text.set_candidates(self.usable_label, [(end - 0.05, usable, 1, 0.0),
                                                     (end - 0.05, usable, 1, 1.0)])
        self.text.set_order([self.capacity_label, self.usable_label, *self.total_labels])
        self.text.set_obstacles(np.array([(-0.5, capacity, end, capacity),
                                          (-0.5, usable, end, usable)]))

        rows = []
        for key, label, shrinks, delta, deltas in out.effects:
            on = self.model.fix_is_on(key)
            color = theme.color("text") if on else theme.color("neutral")
            rows.append(([("✓ " if on else "   ") + label, shrinks,
                          effect_phrase(delta, deltas, on)], color))
        self.table.set_rows(rows)

        total = out.after.total
        if out.fits:
            self.message.show_message(
                f"It fits: {gb_text(total)} of {gb_text(out.capacity)}, leaving "
                f"{100 * (1 - total / out.capacity):.0f}% free.")
        elif total <= out.capacity:
            self.message.show_message(
                f"{gb_text(total)} is under {gb_text(out.capacity)} but inside the 15% "
                f"margin: fragmentation and workspaces would likely push it over.", True)
        else:
            self.message.show_message(
                f"Does not fit: {gb_text(total)} needed, {gb_text(out.capacity)} on the "
                f"GPU. {self._what_else()}", True)

    def _what_else(self) -> str:
        """What could still help when a budget does not fit: the fixes not yet taken, or
        once every one is, what lies outside the list."""
        model = self.model
        switches = [key for key, _, _ in FIXES if key != "zero_stage"]
        if not all(model.fix_is_on(key) for key in switches):
            return "Tick fixes in the list."
        if int(model.zero_stage) < 3:
            return "Raise ZeRO to stage 3."
        more_gpus = model.gpus < model.parameter("gpus").maximum
        return ("Every fix is on: more GPUs to shard over, a GPU with more memory or a "
                "shorter sequence would help." if more_gpus else
                "Every fix is on: a GPU with more memory or a shorter sequence would help.")

    def apply_look(self) -> None:
        super().apply_look()
        self._fit_x_range()  # the labels' font changed

    def _fit_x_range(self) -> None:
        """Room right of the second bar for the widest label a part can have, at the
        plot's width: a narrow plot (a small projector) widens the range rather than let
        the labels run over the bars. On a resize, never in refresh (no jumps while a
        control is dragged)."""
        width = self.plot.getPlotItem().getViewBox().width()
        label = self.part_labels[0].metrics
        # Three significant digits and a unit: "88.8 GB" is as wide as any.
        needed = max(label.horizontalAdvance(f"{name} 88.8 GB") for _, name in COMPONENTS) + 8
        # (end - LABEL_X) of (end + 0.5) data units is the labels' share of the width.
        end = X_END if needed >= 0.7 * width else max(
            X_END, (LABEL_X * width + 0.5 * needed) / (width - needed))
        if end != self._x_end:
            self._x_end = end
            self.plot.getPlotItem().setXRange(-0.5, end, padding=0)
            self.text.set_bounds(QRectF(-0.5, 0, end + 0.5, self._y_max))
            self.schedule_refresh()

    def _label_height(self) -> float:
        """A label's height in pixels (its font's line spacing)."""
        return self.capacity_label.metrics.lineSpacing()

    def model_gpu_name(self) -> str:
        from gpuviz.data.hardware import gpu

        return gpu(self.model.gpu).short_name
