"""Figure 4.3: merging two partial softmaxes."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSignalBlocker, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import Dots, Legend, curve, pen, plot_widget, untouched
from gpuviz.core.text import PlacedTextLayer
from gpuviz.models.flash_attention import merge_scores

SET_A, SET_B = 1, 2  # categorical series of the two sets (sky blue, green)


def _largest_output(scores: np.ndarray, values: np.ndarray) -> float:
    """max |o| over o_A, o_B (every split), full attention and the plain average: softmax
    averages of the prefixes and suffixes of the keys, from cumulative sums. (Masking B
    only empties B: its o is 0 and the plain average is o_A / 2, both inside.)"""
    w = np.exp(scores - scores.max())[:, None]
    prefix = np.cumsum(w * values, axis=0) / np.cumsum(w, axis=0)
    suffix = (np.cumsum((w * values)[::-1], axis=0) / np.cumsum(w[::-1], axis=0))[::-1]
    plain = (prefix[:-1] + suffix[1:]) / 2
    return float(max(np.abs(prefix).max(), np.abs(suffix).max(), np.abs(plain).max()))


def _m_text(m: float) -> str:
    return "−∞" if math.isinf(m) else format_value(m, digits=3)  # as its readout


class MergeView(FigureView):
    def build(self) -> None:
        for name in ("split", "mask_b", "seed"):
            self.controls.add(name)
        keys = self.model.KEYS

        self.scores_plot = plot_widget("Key", "Score x")
        item = self.scores_plot.getPlotItem()
        item.setXRange(-0.6, keys - 0.4, padding=0)
        item.getAxis("bottom").setTicks([[(i, str(i)) for i in range(keys)]])
        item.showGrid(x=False, y=True, alpha=0.25)
        self.bars = pg.BarGraphItem(x=np.arange(keys), height=np.zeros(keys), width=0.7)
        item.addItem(self.bars)
        self.split_line = pg.InfiniteLine(angle=90, movable=True,
                                          pen=pen("text", 2.5, Qt.DashLine),
                                          hoverPen=pen("highlight", 3.0),
                                          bounds=(-0.5, keys - 0.5))
        self.split_line.setToolTip("Drag to move the split point")
        self.split_line.sigPositionChanged.connect(self._on_drag)
        item.addItem(self.split_line)
        # The set labels go where they fit: over their set, clear of the split line and
        # inside the plot (placed in pixels when the plot repaints).
        self.set_labels = PlacedTextLayer(QRectF(-0.6, -10, keys, 30))
        self.a_label = self.set_labels.add(bold=True)
        self.b_label = self.set_labels.add(bold=True)
        self.a_label.setColor(theme.series(SET_A))
        self.b_label.setColor(theme.series(SET_B))
        # One y range for every seed: re-rendering both axes (and their grids) on a seed
        # change cost tens of milliseconds; fixed axes also make seeds comparable.
        seed = self.model.parameter("seed")
        draws = [merge_scores(int(k), keys, self.model.DIMS)
                 for k in range(int(seed.minimum), int(seed.maximum) + 1)]
        self._top = max(float(np.abs(x).max()) for x, _ in draws) + 0.2
        # The lower chart fits the outputs this seed can show (o_A, o_B, their average and
        # full attention over every split), in steps of 0.5: a split moves nothing, a new
        # seed often keeps the range (a new one costs a few milliseconds).
        self._bounds = [math.ceil(_largest_output(x, v) * 1.05 * 2) / 2 for x, v in draws]
        self._bound = 0.0
        item.setYRange(-self._top, self._top * 1.45, padding=0)
        item.addItem(self.set_labels)
        self.add_plot(self.scores_plot, 2)

        self.out_plot = plot_widget("Output dimension", "Attention output o")
        item = self.out_plot.getPlotItem()
        dims = self.model.DIMS
        item.setXRange(-0.3, dims - 0.7, padding=0)
        item.getAxis("bottom").setTicks([[(i, str(i)) for i in range(dims)]])
        full_pen = pen("text", 5.0)
        self.full = curve(item, full_pen)
        merged_pen = pen("compute", 2.0, Qt.DashLine)
        self.merged = curve(item, merged_pen)
        self.merged_dots = Dots(item, dims, 9, theme.color("compute"))
        a_pen = pg.mkPen(theme.series(SET_A), width=theme.line_width(1.5), style=Qt.DotLine)
        b_pen = pg.mkPen(theme.series(SET_B), width=theme.line_width(1.5), style=Qt.DotLine)
        self.o_a = curve(item, a_pen)
        self.o_b = curve(item, b_pen)
        plain_pen = pen("highlight", 2.5)
        self.plain = curve(item, plain_pen)
        # Above the curves, with room kept for it in the y range (_fit_y_range).
        self.legend = Legend(item, anchor=(0, 0), columns=5)
        self.legend.add_line("full attention", full_pen)
        self.legend.add_line("merged A + B", merged_pen)
        self.legend.add_line("plain average", plain_pen)
        self.legend.add_line("o(A)", a_pen)
        self.legend.add_line("o(B)", b_pen)
        item.getViewBox().sigResized.connect(self._fit_y_range)
        self.add_plot(self.out_plot, 3)

    def _fit_y_range(self) -> None:
        """±bound for the curves, and above them the legend's rows (on a resize too)."""
        if self._bound:
            top = self.legend.end_with_room(-self._bound, self._bound)
            self.out_plot.getPlotItem().setYRange(-self._bound, top, padding=0)

    def _on_drag(self) -> None:
        self.model.set("split", int(round(self.split_line.value() + 0.5)))

    def refresh(self) -> None:
        s = self.model.out
        keys, split = self.model.KEYS, s.split
        raw = s.scores
        # Masked keys have score -inf; draw them at their unmasked height, greyed out.
        shown = s.unmasked
        brushes = []
        for i in range(keys):
            if not math.isfinite(raw[i]):
                brushes.append(untouched())  # masked: the grey of data nothing uses
            else:
                brushes.append(theme.series(SET_A if i < split else SET_B))
        self.bars.setOpts(height=shown, brushes=brushes, pens=brushes)
        top = self._top
        if self.split_line.value() != split - 0.5:
            with QSignalBlocker(self.split_line):
                self.split_line.setValue(split - 0.5)
        # m and l as their readouts write them.
        a_text = (f"A: m={_m_text(s.a.m)}, l={format_value(s.a.l, digits=4)}" if split
                  else "A empty")
        b_text = ("B empty" if split == keys
                  else f"B: m={_m_text(s.b.m)}, l={format_value(s.b.l, digits=4)}")
        self.a_label.setText(a_text)
        self.b_label.setText(b_text)
        line = split - 0.5
        high, low = top * 1.42, top * 1.2
        a_mid = max(split, 1) / 2 - 0.5
        b_mid = (split + keys) / 2 - 0.5 if split < keys else keys - 1
        self.set_labels.set_candidates(self.a_label, [
            (a_mid, high, 0.5, 0.0), (line - 0.05, high, 1.0, 0.0), (-0.55, high, 0.0, 0.0),
            (a_mid, low, 0.5, 0.0), (line - 0.05, low, 1.0, 0.0),
            (line + 0.05, high, 0.0, 0.0)])  # past the line, when A is too narrow
        self.set_labels.set_candidates(self.b_label, [
            (b_mid, low, 0.5, 0.0), (line + 0.05, low, 0.0, 0.0), (keys - 0.45, low, 1.0, 0.0),
            (b_mid, high, 0.5, 0.0), (line + 0.05, high, 0.0, 0.0),
            (keys - 0.45, high, 1.0, 0.0), (line - 0.05, low, 1.0, 0.0)])
        self.set_labels.set_obstacles(np.zeros((0, 4)),
                                      moving=np.array([[line, -top, line, top * 1.45]]))

        bound = self._bounds[self.model.seed - int(self.model.parameter("seed").minimum)]
        if bound != self._bound:
            self._bound = bound
            self._fit_y_range()
        x = np.arange(self.model.DIMS)
        self.full.set_data(x, s.full.o)
        self.merged.set_data(x, s.merged.o)
        self.merged_dots.set_points(x, s.merged.o)
        self.o_a.set_data(x, s.a.o)
        self.o_b.set_data(x, s.b.o)
        self.plain.set_data(x, s.plain)

        if s.full.l == 0.0:
            self.message.show_message(
                "Every key is masked: both sets are empty (m = −∞, l = 0). The merge returns "
                "an empty result, o = 0, instead of 0/0 = NaN.")
        else:
            empty = ""
            if s.a.l == 0.0 or s.b.l == 0.0:
                side = "A" if s.a.l == 0.0 else "B"
                empty = (f"Set {side} is empty (l = 0, m = −∞): its weight is 0, so the "
                         f"merge just returns the other set. ")
            self.message.show_message(
                empty + f"Merged vs full attention: max difference "
                f"{format_value(s.merge_error, digits=2)}. "
                f"The plain average is off by up to {format_value(s.plain_error, digits=3)}, "
                f"because it gives both sets the same weight whatever their sums.")

