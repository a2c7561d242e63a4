"""Figure 8.1: per-GPU model states and traffic of DDP and the ZeRO stages."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models.data_parallel import GB, STAGE_NAMES, STAGES

BAR_WIDTH = 0.6
PARTS = (("weights", "compute", "weights (16-bit)"),
         ("gradients", "onchip", "gradients (16-bit)"),
         ("optimizer", "idle", "optimizer states (fp32)"))
TALLEST = 3.0  # the state axis stops at this many GPU memories: taller bars are cut


LONG_TICKS = [STAGE_NAMES[s].split(" /")[0] for s in STAGES]  # "ZeRO-3" (FSDP: readouts)
SHORT_TICKS = ["DDP"] + [name.removeprefix("ZeRO-") for name in LONG_TICKS[1:]]


def _category_plot(y_label: str):  # noqa: ANN202
    plot = plot_widget("ZeRO stage", y_label)  # the title shows with the short names only
    item = plot.getPlotItem()
    item.showLabel("bottom", False)
    item.setXRange(-0.5, len(STAGES) - 0.5, padding=0.02)
    _set_ticks(item, LONG_TICKS)
    item.getAxis("left").enableAutoSIPrefix(False)  # GB stay GB, even for zero traffic
    item.showGrid(x=False, y=True, alpha=0.25)
    return plot


def _set_ticks(item, names: list[str]) -> None:  # noqa: ANN001
    item.getAxis("bottom").setTicks([list(enumerate(names)), []])


def _needs_short_ticks(item) -> bool:  # noqa: ANN001
    """A bar's slot is too narrow for "ZeRO-1" with room beside it."""
    axis = item.getAxis("bottom")
    metrics = QFontMetricsF(axis.style["tickFont"] or axis.font())
    slot = item.getViewBox().width() / (len(STAGES) * 1.04)
    return slot < max(metrics.horizontalAdvance(n) for n in LONG_TICKS) + metrics.height()


class ZeroStagesView(FigureView):
    def build(self) -> None:
        for name in ("preset", "gpus", "gpu"):
            self.controls.add(name)

        # Left the memory each GPU keeps, right what it sends (side by side, as the
        # caption reads them).
        self.states_plot = _category_plot("Model states per GPU (GB)")
        item = self.states_plot.getPlotItem()
        self.state_bars = CellGrid()
        item.addItem(self.state_bars)
        self.memory_line = Segment(pen("highlight", 2.0, Qt.DashLine))
        item.addItem(self.memory_line)
        self.state_labels = TextLayer(QRectF(-0.5, 0, len(STAGES), 1),
                                      keep_inside=True)
        self.state_totals = [self.state_labels.add(role="text", size=10, bold=True,
                                                   anchor=(0.5, 1)) for _ in STAGES]
        # The line's value over its right end, above the last bar (ZeRO-3, the one that
        # fits first); the legend names the line.
        self.memory_label = self.state_labels.add(role="highlight", size=9, bold=True,
                                                  anchor=(1, 1))
        item.addItem(self.state_labels)
        legend = Legend(item, anchor=(0, 0))
        self.legend = legend
        # Violet here is the optimizer's memory, not idle hardware: no hatching. Top down,
        # as the parts are stacked (the order tells them apart in greyscale too).
        for _, role, text in reversed(PARTS):
            legend.add_box(text, theme.color(role), hatch=False)
        legend.add_line("GPU memory", self.memory_line.pen())

        self.sent_plot = _category_plot("Sent per GPU per step (GB)")
        sitem = self.sent_plot.getPlotItem()
        self.sent_bars = CellGrid()
        sitem.addItem(self.sent_bars)
        self.sent_labels = TextLayer(QRectF(-0.5, 0, len(STAGES), 1), keep_inside=True)
        self.sent_texts = [self.sent_labels.add(role="network", size=10, bold=True,
                                                anchor=(0.5, 1), give_way=True)
                           for _ in STAGES]  # equal bars side by side: one label may do
        sitem.addItem(self.sent_labels)

        pair = QWidget()
        row = QHBoxLayout(pair)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.states_plot, 3)
        row.addWidget(self.sent_plot, 2)
        self.add_plot(pair)
        self._ranges: dict[str, float] = {}
        self._states_top = 0.0  # where the state bars are cut, below the legend's band
        item.getViewBox().sigResized.connect(self._fit_states)
        self._short_ticks: bool | None = None
        for plot in (self.states_plot, self.sent_plot):
            plot.getPlotItem().getViewBox().sigResized.connect(self._fit_ticks)

    def _fit_ticks(self) -> None:
        """Every stage named on both axes alike: "ZeRO-1" where the bars' slots have room
        for it, else the stage numbers under an axis title "ZeRO stage" (the axis would
        drop every other name: a lecture screen's narrow plot showed DDP and ZeRO-2)."""
        items = [plot.getPlotItem() for plot in (self.states_plot, self.sent_plot)]
        short = any(_needs_short_ticks(item) for item in items)
        if short != self._short_ticks:
            self._short_ticks = short
            for item in items:
                _set_ticks(item, SHORT_TICKS if short else LONG_TICKS)
                item.showLabel("bottom", short)

    def _set_top(self, name: str, plot, layer: TextLayer, top: float,  # noqa: ANN001
                 width: float) -> None:
        if self._ranges.get(name) != (top, width):
            self._ranges[name] = (top, width)
            plot.getPlotItem().setYRange(0, top, padding=0)
            layer.set_bounds(QRectF(-0.5, 0, width, top))

    def _fit_states(self) -> None:
        """The state axis ends past the bars and their labels by the legend's height, so
        the legend covers none of them (a cut bar's label had been under it)."""
        if self._states_top:
            self._set_top("states", self.states_plot, self.state_labels,
                          self.legend.end_with_room(0.0, self._states_top,
                                                    self.state_totals[0].height),
                          len(STAGES))

    def refresh(self) -> None:
        out = self.model.out
        memory = out.memory / GB
        totals = np.array([s.total for s in out.states]) / GB
        # A model far too big for the GPU would flatten the other bars: the axis stops at
        # a few GPU memories and a taller bar is cut, its label saying how tall it is.
        top = nice_ceiling(max(min(totals.max(), TALLEST * memory), memory) * 1.15,
                           FINE_STEPS)
        self._states_top = top
        self._fit_states()
        rects, fills = [], []
        for i, states in enumerate(out.states):
            bottom = 0.0
            for attr, role, _ in PARTS:
                height = min(getattr(states, attr) / GB, max(top - bottom, 0.0))
                rects.append((i - BAR_WIDTH / 2, bottom, BAR_WIDTH, height))
                fills.append(theme.color(role))
                bottom += height
            cut = totals[i] > top
            # The number alone (the axis says GB), a cut bar's arrow on a line above it:
            # four labels side by side must fit a lecture screen's narrow bar slots.
            label = ("↑\n" if cut else "") + format_value(totals[i])
            self.state_totals[i].setText(label)
            self.state_totals[i].setPos(i, min(totals[i], top))
        # Parts parted by a line of background, as in 6.5 (yellow and violet are equally
        # light in the light looks).
        self.state_bars.set_cells(np.array(rects), fills,
                                  [theme.color("background")] * len(fills),
                                  hatch=[False] * len(fills))
        box = self.states_plot.getPlotItem().getViewBox()
        self.memory_line.set_line(-0.5, memory, len(STAGES) - 0.5, memory,
                                  box.viewPixelSize())
        self.memory_label.setText(format_value(memory, "GB"))
        self.memory_label.setPos(len(STAGES) - 0.5, memory)

        sent = np.array(out.sent) / GB
        self._set_top("sent", self.sent_plot, self.sent_labels,
                      nice_ceiling(max(sent.max(), 1.0) * 1.2), len(STAGES))
        self.sent_bars.set_cells(
            np.array([(i - BAR_WIDTH / 2, 0.0, BAR_WIDTH, s) for i, s in enumerate(sent)]),
            [theme.color("network")] * len(STAGES))
        # Numbers alone (the axis says GB): four bars share a narrow plot, and at lecture
        # size "23.6 GB" is wider than a bar's slot.
        for i, (label, value) in enumerate(zip(self.sent_texts, sent, strict=True)):
            ratio = (f"\n{format_value(value / sent[0], '×')}" if i == 3 and sent[0] > 0
                     else "")
            label.setText(format_value(value) + ratio)
            label.setPos(i, value)

        fitting = [STAGE_NAMES[s] for s, t in zip(STAGES, totals, strict=True) if t <= memory]
        if out.gpus == 1:
            self.message.show_message("One GPU shares nothing: every stage keeps all 16 bytes "
                                      "per parameter and sends nothing.")
        elif not fitting:
            self.message.show_message(
                f"Not even ZeRO-3 fits the model states in {format_value(memory, 'GB')} on "
                f"{out.gpus:,} GPUs: add GPUs.", warn=True)
        else:
            self.message.show_message(
                f"On {out.gpus:,} GPUs the model states fit with {', '.join(fitting)}. DDP, "
                f"ZeRO-1 and ZeRO-2 send the same {format_value(sent[0], 'GB')}; ZeRO-3 "
                f"sends {format_value(sent[3], 'GB')} ({format_value(sent[3] / sent[0], '×')}),"
                " as it gathers the weights again.")
