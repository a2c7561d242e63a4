"""Figure 6.2: the parameters of one layer in units of d², and the model total against
12 L d²."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling, si_text
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer

# Fixed slots, so the axis never re-lays out: a GPT layer leaves the gate slot empty.
SLOTS = ("wq", "wk", "wv", "wo", "gate", "up", "down", "small")
# Short: a 1024x768 projector gives each slot about 64 px, and the axis leaves out every
# other label when two would touch. The axis title names the MLP's three.
SLOT_LABELS = ("Q", "K", "V", "O", "gate", "up", "down", "norms")
BAR_WIDTH = 0.7
TOTAL_PARTS = (("layers", "layers"), ("token", "token embedding"),
               ("position", "positions"), ("output", "output matrix"),
               ("final", "final norm"))
# Okabe-Ito colours of TOTAL_PARTS: the final norm is grey like the layer's biases and
# norms above, so no colour means two things across the two charts.
TOTAL_SERIES = (4, 6, 3, 5, 7)


def slot_series(name: str) -> int:
    """Okabe-Ito index: attention sky blue, MLP green, the small vectors grey."""
    return 1 if name in ("wq", "wk", "wv", "wo") else (2 if name != "small" else 7)


class LayerParametersView(FigureView):
    def build(self) -> None:
        self.controls.add("preset")
        self.controls.add("style", style="buttons")
        self.controls.add("mlp_ratio")
        self.controls.add("kv_heads")

        self.plot = plot_widget("Weights of one layer (MLP: gate, up, down; norms: with biases)",
                                "Parameters (units of d²)")
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        item.setXRange(-0.6, len(SLOTS) - 0.4, padding=0)
        item.getAxis("bottom").setTicks([[(i, label)
                                          for i, label in enumerate(SLOT_LABELS)]])
        self.bars = CellGrid()
        item.addItem(self.bars)
        self.values = TextLayer(QRectF(-1, 0, len(SLOTS) + 1, 20), keep_inside=True)
        self.value_labels = [self.values.add(size=9, anchor=(0.5, 1.0)) for _ in SLOTS]
        self.layer_label = self.values.add(size=10, bold=True, anchor=(1, 0))
        item.addItem(self.values)
        self._y_max = 0.0
        self.add_plot(self.plot, 3)

        self.total_plot = plot_widget("Parameters of the whole model (billions)")
        titem = self.total_plot.getPlotItem()
        titem.showGrid(x=True, y=False, alpha=0.25)
        titem.getAxis("left").setTicks([[(0.0, "model")]])
        self.total_bars = CellGrid(font_size=8)
        titem.addItem(self.total_bars)
        self.twelve = Segment(pen("highlight", 2.0, Qt.DashLine))
        titem.addItem(self.twelve)
        self.total_text = TextLayer(QRectF(0, -1, 1e4, 3), keep_inside=True)
        self.twelve_label = self.total_text.add(role="highlight", size=9, bold=True,
                                                anchor=(1, 1.0))
        titem.addItem(self.total_text)
        # The key under the bar, each part with its count; the range keeps room for it.
        self.total_legend = Legend(titem, anchor=(0, 1), columns=2)
        titem.getViewBox().sigResized.connect(self._fit_total_range)
        self._x_max = 0.0
        self.add_plot(self.total_plot, 2)

    def refresh(self) -> None:
        out = self.model.out
        d2 = out.d2
        counts = {block.name: block.count / d2 for block in out.blocks}
        heights = np.array([counts.get(name, 0.0) for name in SLOTS])
        # Fixed for the widest MLP the slider allows: a range that moved with the width
        # would redraw the axis on every step of the slider.
        ratio_max = self.model.parameter("mlp_ratio").maximum
        y_max = nice_ceiling(max(heights.max(), ratio_max) * 1.2)
        item = self.plot.getPlotItem()
        if y_max != self._y_max:
            self._y_max = y_max
            item.setYRange(0, y_max, padding=0)
            self.values.set_bounds(QRectF(-1, 0, len(SLOTS) + 1, y_max))
        rects = np.column_stack([np.arange(len(SLOTS)) - BAR_WIDTH / 2, np.zeros(len(SLOTS)),
                                 np.full(len(SLOTS), BAR_WIDTH), heights])
        self.bars.set_cells(rects, [theme.series(slot_series(name)) for name in SLOTS])
        for i, (label, height, name) in enumerate(zip(self.value_labels, heights, SLOTS,
                                                      strict=True)):
            label.setText(_d2_text(height) if name in counts else "")
            label.setPos(i, height)
        per_layer = out.count.per_layer / d2
        cfg = out.cfg
        self.layer_label.setText(f"one layer = {format_value(per_layer, 'd²', decimals=3)}  "
                                 f"(d = {cfg.hidden:,}, "
                                 f"{cfg.attention_kind}, f = {cfg.intermediate:,}"
                                 f"{f' × {cfg.experts} experts' if cfg.experts > 1 else ''})")
        self.layer_label.setPos(len(SLOTS) - 0.5, y_max)

        count = out.count
        parts = [count.layers, count.token_embedding, count.position_embedding, count.output,
                 count.final_norm]
        # Billions, or millions for a small model (no "billions (×10⁻³)" on the axis); the
        # range reaches 12 L d² too, which overshoots the total for a narrow MLP.
        reach = max(count.total, out.twelve_l_d2)
        unit, word = (1e9, "billions") if reach >= 1e9 else (1e6, "millions")
        titem = self.total_plot.getPlotItem()
        if self.needs_update("total_unit", word):
            titem.getAxis("bottom").setLabel(f"Parameters of the whole model ({word})")
            self._x_max = 0.0
        billions = np.array(parts, dtype=float) / unit
        starts = np.concatenate([[0.0], np.cumsum(billions)[:-1]])
        x_max = nice_ceiling(reach / unit * 1.08, FINE_STEPS)
        if x_max != self._x_max:
            self._x_max = x_max
            titem.setXRange(0, x_max, padding=0)
        rects = np.column_stack([starts, np.full(5, -0.3), billions, np.full(5, 0.6)])
        fills = [theme.series(index) for index in TOTAL_SERIES]
        self.total_bars.set_cells(rects, fills)
        twelve = out.twelve_l_d2 / unit
        self.twelve.set_line(twelve, -0.4, twelve, 0.4, titem.getViewBox().viewPixelSize())
        self.twelve_label.setText(f"12 L d² = {format_value(100 * out.twelve_share, '%')} "
                                  f"of the total")
        self.twelve_label.setPos(twelve, 0.4)
        entries = tuple((f"{name} {si_text(value, '')}", index) for (_, name), value, index
                        in zip(TOTAL_PARTS, parts, TOTAL_SERIES, strict=True) if value)
        if self.needs_update("total_legend", entries):
            self.total_legend.clear()
            for text, index in entries:
                self.total_legend.add_box(text, theme.series(index), hatch=False)
            self._fit_total_range()

        if out.twelve_share > 1.1:
            text = (f"12 L d² assumes an MLP 4 d wide and full-size K and V: for this "
                    f"layer it overcounts: {format_value(100 * out.twelve_share, '%')} of "
                    f"the {count.total:,} parameters.")
        elif out.embedding_share > 0.05:
            text = (f"The embeddings hold {format_value(100 * out.embedding_share, '%')} of the "
                    f"{count.total:,} parameters: for a model this small, 12 L d² "
                    f"misses them.")
        else:
            text = (f"The layers hold almost everything: 12 L d² is "
                    f"{format_value(100 * out.twelve_share, '%')} of the {count.total:,} "
                    f"parameters.")
        self.message.show_message(text)

    def _fit_total_range(self) -> None:
        # The bar and the 12 L d² label above it, then room for the key below.
        bottom = self.total_legend.end_with_room(0.9, -0.45)
        self.total_plot.getPlotItem().setYRange(bottom, 0.9, padding=0)


def _d2_text(value: float) -> str:
    if 0 < value < 0.0005:
        return "< 0.001"  # not 0.000: the bar is there, only thin
    return f"{value:.3f}" if 0 < value < 0.1 else f"{value:.2f}"
