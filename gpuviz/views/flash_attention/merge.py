"""Figure 4.3: merging two partial softmaxes."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSignalBlocker, Qt
from PySide6.QtWidgets import QSizePolicy

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g, format_value
from gpuviz.core.plots import Dots, curve, legend_entry, pen, plot_widget, untouched
from gpuviz.core.text import PlacedTextLayer
from gpuviz.models.flash_attention import merge_scores

SET_A, SET_B = 1, 2  # categorical series of the two sets (sky blue, green)
LEGEND_SHARE = 0.4  # of the lower plot's width, at most, for its legend


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
    return "−∞" if math.isinf(m) else format_g(m, 3)


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
        # The legend has a column of its own right of the plot area (beside the x axis
        # too), so it never covers the curves: the plot's layout keeps its room.
        self.legend = pg.LegendItem(labelTextColor=theme.color("text"),
                                    labelTextSize=f"{9 * theme.font_factor():.1f}pt")
        self.legend.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
        item.layout.addItem(self.legend, 2, 3, 2, 1, Qt.AlignTop)
        item.legend = self.legend  # where curve() and legend_entry() add their rows
        # PlotCurveItems (no work on range changes) and pixmap dots for the merged
        # result's markers; its legend row is a proxy that still shows line and symbol.
        self.full = curve(item, pen("text", 5.0), name="full attention")
        merged_pen = pen("compute", 2.0, Qt.DashLine)
        self.merged = curve(item, merged_pen)
        self.merged_dots = Dots(item, dims, 9, theme.color("compute"))
        legend_entry(item.legend, "merged A + B", [self.merged, self.merged_dots],
                     pen=merged_pen, symbol="o", symbolSize=9,
                     symbolBrush=theme.color("compute"), symbolPen=None)
        self.o_a = curve(item, pg.mkPen(theme.series(SET_A), width=theme.line_width(1.5),
                                        style=Qt.DotLine), name="o(A)")
        self.o_b = curve(item, pg.mkPen(theme.series(SET_B), width=theme.line_width(1.5),
                                        style=Qt.DotLine), name="o(B)")
        self.plain = curve(item, pen("highlight", 2.5), name="plain average<br>(o(A) + o(B))/2")
        self._legend_size = self.legend.layout.effectiveSizeHint(Qt.PreferredSize)
        self._legend_scale = 0.0
        item.getViewBox().sigResized.connect(self._fit_legend)
        self.add_plot(self.out_plot, 3)

    def _fit_legend(self) -> None:
        """Scale the legend down when its column would be taller than the plot area and
        x axis, or wider than LEGEND_SHARE of the plot (on a resize)."""
        item = self.out_plot.getPlotItem()
        natural = self._legend_size
        height = item.getViewBox().height() + item.getAxis("bottom").height()
        if height <= 0 or natural.isEmpty():
            return
        scale = min(1.0, height / natural.height(),
                    LEGEND_SHARE * item.width() / natural.width())
        if scale != self._legend_scale:
            self._legend_scale = scale
            # Its column is as wide as the scaled legend; the rows keep their natural
            # layout and are drawn scaled (about the legend's top left corner).
            size = natural * scale
            for set_size in (self.legend.setMinimumSize, self.legend.setPreferredSize,
                             self.legend.setMaximumSize):
                set_size(size)
            self.legend.setScale(scale)

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
        a_text = f"A: m={_m_text(s.a.m)}, l={format_g(s.a.l, 3)}" if split else "A empty"
        b_text = "B empty" if split == keys else f"B: m={_m_text(s.b.m)}, l={format_g(s.b.l, 3)}"
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
        self.set_labels.place()

        bound = self._bounds[self.model.seed - int(self.model.parameter("seed").minimum)]
        if bound != self._bound:
            self._bound = bound
            self.out_plot.getPlotItem().setYRange(-bound, bound, padding=0)
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
                f"The plain average is off by up to {format_g(s.plain_error, 3)}, because it gives "
                f"both sets the same weight whatever their sums.")

