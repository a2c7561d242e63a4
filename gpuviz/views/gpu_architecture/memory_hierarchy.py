"""Figure 1.4: the memory hierarchy, size, bandwidth and latency on a log axis."""

from __future__ import annotations

import html
import math

import numpy as np
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, Legend, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import TextPanel
from gpuviz.models.gpu_architecture import (
    LINK_LEVELS,
    MEMORY_LEVELS,
    NO_MEASUREMENT,
    QUANTITIES,
    format_quantity,
)

# Fixed log10 axis range per quantity (bytes, bytes/s, ns), wide enough for every GPU and
# for the value labels to the right of the bars.
AXIS = {"size": (5.0, 13.0), "bandwidth": (10.0, 16.0), "latency": (0.0, 5.6)}
AXIS_TITLE = {"size": "Size (whole chip)", "bandwidth": "Bandwidth",
              "latency": "Latency of one access"}
STATUS_TAG = {"published": "", "measured": "", "computed": "computed",
              "estimate": "est.", "none": ""}
BAR_HEIGHT = 0.6
MAX_ROWS = len(MEMORY_LEVELS)


class MemoryHierarchyView(FigureView):
    def build(self) -> None:
        self.controls.add("gpu")
        buttons = self.controls.add("quantity", style="buttons")
        for button in buttons.buttons.values():
            button.setMinimumWidth(24)  # three buttons must fit the control column
        self.controls.add("show_links")
        self.controls.add("level")

        self.plot = plot_widget()
        item = self.plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.35)
        # Room for the longest level name ("Shared memory / L1").
        item.getAxis("left").setWidth(int(135 * theme.font_factor()))
        self.bars = CellGrid()  # opaque, unantialiased rectangles: cheap to repaint
        self.bars.clicked.connect(self._on_bar)
        item.addItem(self.bars)
        self.selection = CellGrid()  # the selected bar's frame, in the text colour
        item.addItem(self.selection)
        # The value labels: one item painted in one call; one that would still run past
        # the right edge (a narrow window) is drawn over its bar instead.
        self.label_layer = TextLayer(QRectF(-1, -1, 20, MAX_ROWS + 2), keep_inside=True)
        self.labels = [self.label_layer.add(anchor=(0, 0.5), size=11, bold=True)
                       for _ in range(MAX_ROWS)]
        item.addItem(self.label_layer)
        self.legend = Legend(item, anchor=(1, 1), columns=2)
        self._links_in_legend: bool | None = None  # rows set in refresh
        item.getViewBox().sigResized.connect(self._fit_rows)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.plot.setToolTip("Click a bar (or its row) to select that level")
        self.add_plot(self.plot, 1)

        # A fixed-height panel: new text repaints it alone, without a relayout of the page.
        self.sources = TextPanel(8.3, accessible_name="Sources of the selected level's numbers")
        self.add_plot(self.sources, 0)
        self._rows: list[str] = []
        self._axis_key: tuple | None = None

    def _on_bar(self, row: int) -> None:
        if 0 <= row < len(self._rows):
            self.model.set("level", self._rows[row])

    def _on_click(self, event: object) -> None:
        box = self.plot.getPlotItem().getViewBox()
        if not box.sceneBoundingRect().contains(event.scenePos()):
            return
        row = round(box.mapSceneToView(event.scenePos()).y())
        if 0 <= row < len(self._rows):
            self.model.set("level", self._rows[row])

    def _set_axes(self, quantity: str, rows: list[str]) -> None:
        key = (quantity, tuple(rows))
        if key == self._axis_key:
            return
        self._axis_key = key
        item = self.plot.getPlotItem()
        low, high = AXIS[quantity]
        item.setXRange(low, high, padding=0)
        item.setYRange(-0.6, self.legend.end_with_room(-0.6, len(rows) - 0.4), padding=0)
        unit = "bandwidth" if quantity == "bandwidth" else quantity
        ticks = [(float(e), format_quantity(unit, 10.0 ** e)) for e in
                 range(math.ceil(low), math.floor(high) + 1)]
        item.getAxis("bottom").setTicks([ticks, []])
        labels = dict(MEMORY_LEVELS)
        item.getAxis("left").setTicks([[(i, labels[key]) for i, key in enumerate(rows)]])
        item.setLabel("bottom", f"{AXIS_TITLE[quantity]}, log scale (×10 per grid line)")

    def refresh(self) -> None:
        out = self.model.out
        quantity = self.model.quantity
        selected = self.model.level
        rows = [level.key for level in out.levels]
        self._rows = rows
        if self.model.show_links != self._links_in_legend:
            self._links_in_legend = self.model.show_links
            self._fill_legend()
            self._axis_key = None  # the legend's height changed
        self._set_axes(quantity, rows)
        low = AXIS[quantity][0]

        rects, fills, outlines = [], [], []
        frame = np.empty((0, 4))  # around the selected bar
        for i, level in enumerate(out.levels):
            number = level.number(quantity)
            label = self.labels[i]
            label.setVisible(True)
            if number.shown:
                width = max(math.log10(number.value) - low, 0.0)
                tag = STATUS_TAG[number.status]
                text = format_quantity(quantity, number.value)
                if self.needs_update(i, (text, tag, low + width)):
                    label.setText(f"  {text}" + (f"  ({tag})" if tag else ""))
                    label.setPos(low + width, i)
                # Computed and estimated values are hollow: an outline in the level's colour.
                hollow = number.status not in ("published", "measured")
            else:
                width, hollow = 0.0, False
                why = ("links carry data between GPUs and store none"
                       if level.key in LINK_LEVELS and quantity == "size" else NO_MEASUREMENT)
                if self.needs_update(i, (why, low)):
                    label.setText(f"  {why}")
                    label.setPos(low, i)
            rects.append((low, i - BAR_HEIGHT / 2, width, BAR_HEIGHT))
            fills.append(None if hollow else theme.color(level.kind))
            outlines.append(theme.color(level.kind) if hollow else None)
            if level.key == selected:
                pad = 0.12
                if width > 0:
                    frame = np.array([(low - 0.02, i - BAR_HEIGHT / 2 - pad, width + 0.04,
                                       BAR_HEIGHT + 2 * pad)])
        for i, label in enumerate(self.labels[len(out.levels):], start=len(out.levels)):
            label.setVisible(False)
            self.forget_shown(i)
        self.bars.set_cells(np.array(rects), fills, outlines=outlines, outline_width=2.5)
        self.selection.set_cells(frame, [None] * len(frame),
                                 outlines=[theme.color("text")] * len(frame), outline_width=2.0)
        self._set_sources()
        self._set_message()

    def _fit_rows(self) -> None:
        self._axis_key = None
        self._set_axes(self.model.quantity, self._rows)

    def _fill_legend(self) -> None:
        self.legend.clear()
        self.legend.add_box("on chip", theme.color("onchip"))
        self.legend.add_box("off chip (HBM)", theme.color("memory"))
        if self.model.show_links:
            self.legend.add_box("link to other GPUs", theme.color("network"))
        self.legend.add_box("computed or estimated", theme.color("background"),
                            outline=theme.color("neutral"))
        self.legend.add_box("selected", theme.color("background"),
                            outline=theme.color("text"))

    def _set_sources(self) -> None:
        level = self.model.selected()
        if not self.needs_update("sources", (self.model.gpu, level.key)):
            return
        lines = []
        for quantity, name in QUANTITIES:
            number = level.number(quantity)
            if number.shown:
                value = format_quantity(quantity, number.value)
                tag = f" <i>({number.status})</i>"
            else:
                value, tag = "—", ""
            lines.append(f"<b>{html.escape(level.label)} {name.lower()}</b> {value}{tag}: "
                         f"{html.escape(number.source)}")
        # Footnote-sized: the longest sources (B200, shared memory) need more than the
        # panel's 8.3 lines at the normal size in the projector theme at 1280 x 800.
        size = 8.5 * theme.ui_scale()
        self.sources.setText(f'<div style="font-size: {size:.1f}pt">' + "<br>".join(lines)
                             + "</div>")

    def _set_message(self) -> None:
        out = self.model.out
        if self.model.quantity == "size" and self.model.show_links:
            self.message.show_message(
                "NVLink and the network are links: they move data between GPUs but "
                "hold none, so they have no size.")
            return
        ratio = out.l2_over_hbm_bandwidth
        if ratio is None:
            self.message.show_message(
                f"HBM holds {out.hbm_over_l2_size:,.0f}× more than L2. No published "
                f"measurement of this GPU's L2 bandwidth was found, so L2 has no "
                f"bandwidth bar.")
        else:
            l2 = next(lv for lv in out.levels if lv.key == "l2")
            note = (" (the L2 value is an estimate)"
                    if l2.bandwidth_bytes_s.status == "estimate" else "")
            self.message.show_message(
                f"HBM holds {out.hbm_over_l2_size:,.0f}× more than L2, yet L2 delivers "
                f"{ratio:.2f}× the bandwidth of HBM{note}.")
