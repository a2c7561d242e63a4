"""Figure 9.3: the all-reduce / matmul ratio of tensor parallelism against t."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ticks
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling, time_text
from gpuviz.core.plots import CellGrid, Dots, Legend, curve, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.tensor_pipeline.tp_comm import GPUS_PER_NODE, TP_MAX, TpCommOut

X_RANGE = (0.0, math.log2(TP_MAX))  # log2 t
X_PAD = 0.25  # log2 units beyond 1 and TP_MAX: room for the dot and the last tick's "32"
NODE_X = math.log2(GPUS_PER_NODE)
STYLES = {"nvlink": Qt.SolidLine, "network": Qt.DashLine}
BAR_ROWS = ("Matmuls", "All-reduces")


class TpCommView(FigureView):
    def build(self) -> None:
        for name in ("tp", "link", "preset", "tokens", "tflops"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("TP degree t (GPUs, log scale)",
                                "All-reduce time / matmul time")
        item = self.plot.getPlotItem()
        item.setXRange(X_RANGE[0] - X_PAD, X_RANGE[1] + X_PAD, padding=0)
        item.getAxis("bottom").setTicks([[(math.log2(t), str(t))
                                          for t in (1, 2, 4, 8, 16, 32)], []])
        self.curves = {name: curve(item, pen("network", 3.0, style))
                       for name, style in STYLES.items()}
        self.one_line = curve(item, pen("highlight", 2.0))
        self.one_line.set_data(list(X_RANGE), [0.0, 0.0])
        self.node_line = curve(item, pen("neutral", 1.5, Qt.DashLine))
        self.marker = Dots(item, 1, 14, theme.color("network"), pen("text", 1.5))
        legend = Legend(item, anchor=(0, 0))
        legend.add_line("NVLink", pen("network", 3.0, STYLES["nvlink"]))
        legend.add_line("InfiniBand", pen("network", 3.0, STYLES["network"]))
        legend.add_line("ratio 1: all-reduces as long as matmuls", pen("highlight", 2.0))
        self.labels = TextLayer(QRectF(X_RANGE[0] - X_PAD, -3, X_RANGE[1] + 2 * X_PAD, 6),
                                keep_inside=True)
        # Two lines: on one, it did not fit right of the line on a small projector
        # (1024x768) and was pushed left of it.
        self.node_label = self.labels.add(f"past {GPUS_PER_NODE} GPUs:\nacross servers",
                                          role="text", size=9, anchor=(-0.03, -0.2))
        self.factor_label = self.labels.add(role="network", size=10, bold=True,
                                            anchor=(0.5, 0.5))
        item.addItem(self.labels)
        self._y_range: tuple[int, int] | None = None
        self.add_plot(self.plot, 3)

        self.bars_plot = plot_widget("Time per layer at your t and tokens (ms)")
        bitem = self.bars_plot.getPlotItem()
        bitem.invertY(True)
        bitem.setYRange(-0.6, 1.6, padding=0)
        bitem.getAxis("left").setTicks([list(enumerate(BAR_ROWS)), []])
        bitem.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        bitem.addItem(self.bars)
        self.bar_text = TextLayer(QRectF(0, -0.6, 1, 2.2), keep_inside=True)
        self.bar_labels = [self.bar_text.add(role="text", size=10, bold=True,
                                             anchor=(0, 0.5)) for _ in BAR_ROWS]
        bitem.addItem(self.bar_text)
        self._time_top = 0.0
        self.add_plot(self.bars_plot, 1)

    def refresh(self) -> None:
        out: TpCommOut = self.model.out
        revealed = self.model.revealed
        x = np.log2(out.degrees)
        logs = {name: np.log10(r) for name, r in out.ratios.items()}
        low = math.floor(min(float(logs["nvlink"][0]), -1.0))
        high = math.ceil(max(float(logs["network"][-1]), 1.0))
        if (low, high) != self._y_range:  # whole decades only
            self._y_range = (low, high)
            item = self.plot.getPlotItem()
            item.setYRange(low, high, padding=0)
            set_log_ticks(item.getAxis("left"), low, high)
            self.labels.set_bounds(QRectF(X_RANGE[0] - X_PAD, low, X_RANGE[1] + 2 * X_PAD,
                                          high - low))
            self.node_line.set_data([NODE_X, NODE_X], [low, high])
            self.node_label.setPos(NODE_X, low)
        if self.needs_update("curves", (out.ratios["nvlink"][0], revealed)):
            # NVLink only inside a server; the InfiniBand line is the answer to predict.
            inside = out.degrees <= GPUS_PER_NODE
            self.curves["nvlink"].set_data(x[inside], logs["nvlink"][inside])
            self.curves["network"].set_data(*((x, logs["network"]) if revealed else ([], [])))
            if revealed:  # between the two lines, where both are drawn
                at = int(np.searchsorted(out.degrees, GPUS_PER_NODE // 2))
                self.factor_label.setPos(float(x[at]), float(logs["network"][at]
                                                             + logs["nvlink"][at]) / 2)
        self.factor_label.setText(format_value(out.link_factor, "×") if revealed else "")
        t = self.model.tp
        y = math.log10(out.ratio) if out.ratio > 0 else math.nan
        self.marker.set_points([math.log2(t)], [y])

        times = (out.matmul, out.allreduce)
        top = nice_ceiling(max(times) * 1.25, FINE_STEPS)
        if top != self._time_top:
            self._time_top = top
            bitem = self.bars_plot.getPlotItem()
            bitem.setXRange(0, top * 1e3, padding=0)
            self.bar_text.set_bounds(QRectF(0, -0.6, top * 1e3, 2.2))
        ms = [s * 1e3 for s in times]
        self.bars.set_cells(np.array([(0.0, i - 0.3, v, 0.6) for i, v in enumerate(ms)]),
                            [theme.color("compute"), theme.color("network")])
        for i, (label, seconds) in enumerate(zip(self.bar_labels, times, strict=True)):
            label.setText(f" {time_text(seconds)}" if seconds > 0 else " none")
            label.setPos(ms[i], i)
        self.predict.sync()
        self.message.show_message(self._describe(out), warn=out.crosses_nodes
                                  or out.ratio > 1)

    def _describe(self, out: TpCommOut) -> str:
        t = self.model.tp
        if t == 1:
            return "With t = 1 nothing is split and nothing is all-reduced."
        ratio = format_value(out.ratio, "×")
        if out.crosses_nodes:
            return (f"t = {t} is more than the {GPUS_PER_NODE} GPUs of one server: every "
                    f"ring has a network hop, so the all-reduces run at InfiniBand speed and "
                    f"take {ratio} the matmul time.")
        where = "NVLink" if out.link_used == "nvlink" else "InfiniBand"
        verdict = ("they outlast the matmuls: the GPUs wait." if out.ratio > 1 else
                   "the matmuls still take longer.")
        return (f"Over {where} the all-reduces of t = {t} take {ratio} the matmul time: "
                f"{verdict} Change the tokens: both bars move, the ratio does not.")
