"""Figure 4.3: merging two partial softmaxes."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import pen, plot_widget, text_item
from gpuviz.views.flash_attention._text import set_text, show_message

SET_A, SET_B = 1, 2  # categorical series of the two sets (sky blue, green)


def _m_text(m: float) -> str:
    return "−∞" if math.isinf(m) else f"{m:.3g}"


class MergeView(FigureView):
    def build(self) -> None:
        for name in ("split", "mask_b", "seed"):
            self.controls.add(name)
        keys = self.model.KEYS

        self.scores_plot = plot_widget("key", "score x")
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
        self.a_label = text_item(anchor=(0.5, 0), bold=True)
        self.b_label = text_item(anchor=(0.5, 0), bold=True)
        self.a_label.setColor(theme.series(SET_A))
        self.b_label.setColor(theme.series(SET_B))
        self._ranges: tuple[float, float] = (0.0, 0.0)
        item.addItem(self.a_label)
        item.addItem(self.b_label)
        self.add_plot(self.scores_plot, 2)

        self.out_plot = plot_widget("output dimension", "attention output o")
        item = self.out_plot.getPlotItem()
        dims = self.model.DIMS
        item.setXRange(-0.3, dims - 0.7, padding=0)
        item.getAxis("bottom").setTicks([[(i, str(i)) for i in range(dims)]])
        item.addLegend(offset=(8, 8), labelTextColor=theme.color("text"),
                       labelTextSize=f"{9 * theme.current().font_scale:.0f}pt",
                       brush=pg.mkBrush(theme.color("panel", 200)))
        x = np.arange(dims)
        zeros = np.zeros(dims)
        self.full = item.plot(x, zeros, pen=pen("text", 5.0), name="full attention")
        self.merged = item.plot(x, zeros, pen=pen("compute", 2.0, Qt.DashLine), symbol="o",
                                symbolSize=9, symbolBrush=theme.color("compute"),
                                symbolPen=None, name="merged A + B")
        self.o_a = item.plot(x, zeros, pen=pg.mkPen(theme.series(SET_A),
                                                    width=theme.line_width(1.5),
                                                    style=Qt.DotLine), name="o_A")
        self.o_b = item.plot(x, zeros, pen=pg.mkPen(theme.series(SET_B),
                                                    width=theme.line_width(1.5),
                                                    style=Qt.DotLine), name="o_B")
        self.plain = item.plot(x, zeros, pen=pen("highlight", 2.5),
                               name="plain average (o_A + o_B)/2")
        self.add_plot(self.out_plot, 3)

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
                brushes.append(theme.color("neutral", 70))
            else:
                brushes.append(theme.series(SET_A if i < split else SET_B))
        self.bars.setOpts(height=shown, brushes=brushes, pens=brushes)
        top = float(np.abs(s.unmasked).max()) + 0.2
        bound = float(np.abs(s.values).max()) + 0.2
        if (top, bound) != self._ranges:  # they change only with the seed
            self._ranges = (top, bound)
            self.scores_plot.getPlotItem().setYRange(-top, top * 1.45, padding=0)
            self.out_plot.getPlotItem().setYRange(-bound, bound, padding=0)
        if self.split_line.value() != split - 0.5:
            with QSignalBlocker(self.split_line):
                self.split_line.setValue(split - 0.5)
        a_text = f"A: m={_m_text(s.a.m)}, l={s.a.l:.3g}" if split else "A empty"
        b_text = "B empty" if split == keys else f"B: m={_m_text(s.b.m)}, l={s.b.l:.3g}"
        set_text(self.a_label, a_text)
        set_text(self.b_label, b_text)
        self.a_label.setPos(max(split, 1) / 2 - 0.5, top * 1.42)
        self.b_label.setPos((split + keys) / 2 - 0.5 if split < keys else keys - 1, top * 1.2)

        self.full.setData(np.arange(self.model.DIMS), s.full.o)
        self.merged.setData(np.arange(self.model.DIMS), s.merged.o)
        self.o_a.setData(np.arange(self.model.DIMS), s.a.o)
        self.o_b.setData(np.arange(self.model.DIMS), s.b.o)
        self.plain.setData(np.arange(self.model.DIMS), s.plain)

        if s.full.l == 0.0:
            show_message(self.message,
                "Every key is masked: both sets are empty (m = −∞, l = 0). The merge returns "
                "an empty result, o = 0, instead of 0/0 = NaN.")
        else:
            empty = ""
            if s.a.l == 0.0 or s.b.l == 0.0:
                side = "A" if s.a.l == 0.0 else "B"
                empty = (f"Set {side} is empty (l = 0, m = −∞): its weight is 0, so the "
                         f"merge just returns the other set. ")
            show_message(self.message,
                empty + f"Merged vs full attention: max difference {s.merge_error:.1e}. "
                f"The plain average is off by up to {s.plain_error:.3g}, because it gives "
                f"both sets the same weight whatever their sums.")

