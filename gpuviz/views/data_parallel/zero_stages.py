"""Figure 8.1: per-GPU model states and traffic of DDP and the ZeRO stages."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import nice_ceiling
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer, rich_text
from gpuviz.models.data_parallel import GB, STAGE_NAMES, STAGES

BAR_WIDTH = 0.6
PARTS = (("weights", "compute", "weights (16-bit)"),
         ("gradients", "onchip", "gradients (16-bit)"),
         ("optimizer", "idle", "optimizer states (fp32)"))


def _legend(entries: tuple[tuple[str, str], ...]) -> str:
    return " &nbsp; ".join(f"<span style='color:{theme.color(role).name()}'>■</span> {text}"
                           for role, text in entries)


def _category_plot(y_label: str):  # noqa: ANN202
    plot = plot_widget("", y_label)
    item = plot.getPlotItem()
    item.setXRange(-0.5, len(STAGES) - 0.5, padding=0.02)
    item.getAxis("bottom").setTicks([[(i, STAGE_NAMES[s]) for i, s in enumerate(STAGES)],
                                     []])
    item.showGrid(x=False, y=True, alpha=0.25)
    return plot


class ZeroStagesView(FigureView):
    def build(self) -> None:
        for name in ("preset", "gpus", "gpu"):
            self.controls.add(name)

        self.states_plot = _category_plot("Model states per GPU (GB)")
        item = self.states_plot.getPlotItem()
        self.state_bars = CellGrid()
        item.addItem(self.state_bars)
        self.memory_line = Segment(pen("highlight", 2.0, Qt.DashLine))
        item.addItem(self.memory_line)
        self.state_labels = TextLayer(QRectF(-0.5, 0, len(STAGES), 1), keep_inside=True)
        self.state_totals = [self.state_labels.add(role="text", size=10, bold=True,
                                                   anchor=(0.5, 1)) for _ in STAGES]
        self.memory_label = self.state_labels.add(role="highlight", size=9,
                                                  anchor=(1, 1.05))
        item.addItem(self.state_labels)
        legend = rich_text(_legend(tuple((role, text) for _, role, text in PARTS)), 9)
        legend.setParentItem(item.getViewBox())
        legend.setPos(4, 2)
        self.add_plot(self.states_plot, 3)

        self.sent_plot = _category_plot("Sent per GPU per step (GB)")
        sitem = self.sent_plot.getPlotItem()
        self.sent_bars = CellGrid()
        sitem.addItem(self.sent_bars)
        self.sent_labels = TextLayer(QRectF(-0.5, 0, len(STAGES), 1), keep_inside=True)
        self.sent_texts = [self.sent_labels.add(role="network", size=10, bold=True,
                                                anchor=(0.5, 1)) for _ in STAGES]
        sitem.addItem(self.sent_labels)
        self.add_plot(self.sent_plot, 2)
        self._ranges: dict[str, float] = {}

    def _set_top(self, name: str, plot, layer: TextLayer, top: float) -> None:  # noqa: ANN001
        if self._ranges.get(name) != top:
            self._ranges[name] = top
            plot.getPlotItem().setYRange(0, top, padding=0)
            layer.set_bounds(QRectF(-0.5, 0, len(STAGES), top))

    def refresh(self) -> None:
        out = self.model.out
        memory = out.memory / GB
        totals = np.array([s.total for s in out.states]) / GB
        top = nice_ceiling(max(totals.max(), memory) * 1.15)
        self._set_top("states", self.states_plot, self.state_labels, top)
        rects, fills = [], []
        for i, states in enumerate(out.states):
            bottom = 0.0
            for attr, role, _ in PARTS:
                height = getattr(states, attr) / GB
                rects.append((i - BAR_WIDTH / 2, bottom, BAR_WIDTH, height))
                fills.append(theme.color(role))
                bottom += height
            fits = totals[i] <= memory
            self.state_totals[i].setText(format_value(totals[i], "GB")
                                         + ("" if fits else " (too big)"))
            self.state_totals[i].setPos(i, totals[i])
        self.state_bars.set_cells(np.array(rects), fills)
        box = self.states_plot.getPlotItem().getViewBox()
        self.memory_line.set_line(-0.5, memory, len(STAGES) - 0.5, memory,
                                  box.viewPixelSize())
        self.memory_label.setText(f"GPU memory {memory:,.0f} GB")
        self.memory_label.setPos(len(STAGES) - 0.5, memory)

        sent = np.array(out.sent) / GB
        self._set_top("sent", self.sent_plot, self.sent_labels,
                      nice_ceiling(max(sent.max(), 1e-3) * 1.2))
        self.sent_bars.set_cells(
            np.array([(i - BAR_WIDTH / 2, 0.0, BAR_WIDTH, s) for i, s in enumerate(sent)]),
            [theme.color("network")] * len(STAGES))
        for i, (label, value) in enumerate(zip(self.sent_texts, sent, strict=True)):
            ratio = f"  (×{value / sent[0]:.1f})" if i == 3 and sent[0] > 0 else ""
            label.setText(format_value(value, "GB") + ratio)
            label.setPos(i, value)

        fitting = [STAGE_NAMES[s] for s, t in zip(STAGES, totals, strict=True) if t <= memory]
        if out.gpus == 1:
            self.message.show_message("One GPU shares nothing: every stage keeps all 16 bytes "
                                      "per parameter and sends nothing.")
        elif not fitting:
            self.message.show_message(
                f"Not even ZeRO-3 fits the model states in {memory:,.0f} GB on "
                f"{out.gpus:,} GPUs: add GPUs.", warn=True)
        else:
            self.message.show_message(
                f"On {out.gpus:,} GPUs the model states fit with {', '.join(fitting)}. DDP, "
                f"ZeRO-1 and ZeRO-2 send the same {format_value(sent[0], 'GB')}; ZeRO-3 "
                "sends 1.5 times "
                "that, to gather the weights again.")
