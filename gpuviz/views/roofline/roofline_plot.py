"""Figure 2.1: the roofline of one GPU with named ops you can click and drag."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ranges
from gpuviz.core.model import format_value
from gpuviz.core.plots import Dots, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer
from gpuviz.data.hardware import load_gpus
from gpuviz.models.roofline import (
    COMPUTE,
    INTENSITY_SCALE_MAX,
    INTENSITY_SCALE_MIN,
    gpu_roof,
    named_ops,
)

# log10 FLOP/B; the rightmost op at 64× (4.9) leaves room right of it for a GPU's name.
X_RANGE = (-3.0, 6.0)
Y_RANGE = (9.0, 16.5)  # log10 FLOP/s
# Decades left of the right edge where another GPU's name may sit on its dashed roof (in
# half decades: a dragged dot at the right end leaves few free places).
OTHER_LABEL_SHIFTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
POINT_SIZE = 13
SELECTED_SIZE = 19

# Where each op's label prefers to sit relative to its point (an anchor of its text box),
# so the cluster of ops near 1 FLOP/B starts apart; the layer tries the other sides of
# the point in turn when the preferred one covers a label, a line or a dot.
LABEL_ANCHORS = {
    "add": (1.08, 0.0),
    "softmax": (1.06, 1.1),
    "layernorm": (-0.08, 0.0),
    "decode_attention": (-0.06, -0.2),
    "decode_matmul_64": (-0.08, 0.0),
    "prefill_attention": (1.08, -0.1),
    "prefill_matmul": (0.15, 1.25),
}
# The sides of a point, nearest first, then a line further out (a crowded cluster).
AROUND = ((-0.08, 0.5), (1.08, 0.5), (-0.05, 1.05), (1.05, -0.05), (1.05, 1.05),
          (-0.05, -0.05), (0.5, 1.2), (0.5, -0.2), (-0.05, -1.1), (1.05, 2.1),
          (-0.05, 2.1), (1.05, -1.1), (0.5, 2.3), (0.5, -1.3),
          # Farther out, for the crowd near intensity 1 at lecture-hall sizes.
          (1.05, 3.2), (-0.05, 3.2), (1.05, -2.2), (-0.05, -2.2), (0.5, 3.4), (0.5, -2.4))


class RooflineView(FigureView):
    def build(self) -> None:
        self.controls.add("gpu")
        self.controls.add("precision", style="buttons")
        self.controls.add("selected_op")
        self.controls.add("intensity_scale")

        self.plot = plot_widget("Arithmetic intensity (FLOP per byte, log scale)",
                                "Attainable FLOP/s (log scale)")
        item = self.plot.getPlotItem()
        set_log_ranges(item, X_RANGE, Y_RANGE, y_unit="FLOP/s")

        self.other_roofs = curve(item, pen("neutral", 1.0, Qt.DashLine))
        self.memory_roof = curve(item, pen("memory", 3.0))
        self.compute_roof = curve(item, pen("compute", 3.0))
        self.ridge_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        # All labels in one item painted in one call, each placed where it covers no
        # other label, line or dot (worked out in pixels when the plot repaints).
        self.labels = PlacedTextLayer(QRectF(X_RANGE[0], Y_RANGE[0], X_RANGE[1] - X_RANGE[0],
                                             Y_RANGE[1] - Y_RANGE[0]))
        self.labels.setZValue(11)
        self.memory_label = self.labels.add(role="memory", size=10, bold=True)
        self.compute_label = self.labels.add(role="compute", size=10, bold=True)
        self.ridge_label = self.labels.add(role="text", size=9)
        # On plates: where the plot is too crowded for a clear place (a small projector),
        # a label crosses a dashed roof and must still read.
        self.op_labels = [self.labels.add(op.label, size=9, plate=True) for op in named_ops()]
        # Each dashed roof carries its GPU's name at its right end.
        self.other_labels = {key: self.labels.add(g.short_name, role="neutral", size=8)
                             for key, g in load_gpus().items()}
        item.addItem(self.labels)
        self._roof_segments = self._other_segments = np.zeros((0, 4))
        self._dots = np.zeros((0, 2))

        self._brushes = {True: pg.mkBrush(theme.color("compute")),
                         False: pg.mkBrush(theme.color("memory"))}
        # The selected operation is ringed in the text colour (magenta means a limit).
        self._pens = {selected: pg.mkPen(theme.color("text"),
                                         width=theme.line_width(2.5 if selected else 1.0))
                      for selected in (True, False)}
        self.points = Dots(item, len(named_ops()), POINT_SIZE, self._brushes[False].color(),
                           self._pens[False], draggable=True)
        self.points.setZValue(10)
        self.points.events.clicked.connect(self._on_click)
        self.points.events.dragged.connect(self._on_drag)
        self.plot.setToolTip("Click a dot to select its operation; drag it sideways to "
                             "change its arithmetic intensity")
        self.add_plot(self.plot)

    def _on_click(self, index: int) -> None:
        self.model.set("selected_op", named_ops()[index].key)

    def _on_drag(self, index: int, x: float) -> None:
        op = named_ops()[index]
        base = math.log10(op.intensity)
        scale = 10 ** (min(max(x, X_RANGE[0]), X_RANGE[1]) - base)
        scale = min(max(scale, INTENSITY_SCALE_MIN), INTENSITY_SCALE_MAX)
        with self.model.batch():
            self.model.set("selected_op", op.key)
            self.model.set("intensity_scale", scale)

    def refresh(self) -> None:
        out = self.model.out
        roof = out.roof
        log_bw, log_peak = math.log10(roof.bandwidth), math.log10(roof.peak)
        log_ridge = log_peak - log_bw
        # The roofs move only with the GPU and the precision: most refreshes (an op, its
        # intensity) leave them alone.
        if self.needs_update("roof", (roof.gpu_key, self.model.precision, log_bw, log_peak)):
            self._set_roofs(roof, log_bw, log_peak, log_ridge)
        self._set_points(out)
        self.labels.set_obstacles(self._roof_segments, self._dots, SELECTED_SIZE,
                                  faint=self._other_segments)
        self.labels.set_order([self.op_labels[out.selected]])
        text, warn = self.model.message()
        self.message.show_message(text, warn)

    def _set_roofs(self, roof: object, log_bw: float, log_peak: float,
                   log_ridge: float) -> None:
        self.memory_roof.set_data([X_RANGE[0], log_ridge], [log_bw + X_RANGE[0], log_peak])
        self.compute_roof.set_data([log_ridge, X_RANGE[1]], [log_peak, log_peak])
        self.ridge_line.set_data([log_ridge, log_ridge], [Y_RANGE[0], log_peak])

        xs, ys = [], []
        for key, label in self.other_labels.items():
            if key == roof.gpu_key:
                label.setText("")
                continue
            other = gpu_roof(key, self.model.precision)
            o_bw, o_peak = math.log10(other.bandwidth), math.log10(other.peak)
            xs += [X_RANGE[0], o_peak - o_bw, X_RANGE[1], np.nan]
            ys += [o_bw + X_RANGE[0], o_peak, o_peak, np.nan]
            label.setText(load_gpus()[key].short_name)
            right = X_RANGE[1] - 0.05
            self.labels.set_candidates(label, [
                (right - shift, o_peak, 1.0, side) for shift in OTHER_LABEL_SHIFTS
                for side in (1.0, 0.0)])
        self.other_roofs.set_data(xs, ys)  # NaN between the roofs: separate lines
        self._roof_segments = np.array(
            [[X_RANGE[0], log_bw + X_RANGE[0], log_ridge, log_peak],
             [log_ridge, log_peak, X_RANGE[1], log_peak],
             [log_ridge, Y_RANGE[0], log_ridge, log_peak]])
        self._other_segments = np.array(
            [[xs[i], ys[i], xs[i + 1], ys[i + 1]] for i in range(len(xs) - 1)]).reshape(-1, 4)

        precision = roof.precision.upper()
        # The numbers as the readouts write them ("8 TB/s" in both, not "8.00" here).
        self.compute_label.setText(
            f"{precision} peak {format_value(roof.peak / 1e12, 'TFLOP/s')}")
        # Above the compute roof, left or right of the ridge, or under it.
        self.labels.set_candidates(self.compute_label, [
            (log_ridge - 0.1, log_peak, 1.0, 1.0), (log_ridge - 0.6, log_peak, 1.0, 1.0),
            (log_ridge + 0.1, log_peak, 0.0, 1.0), (log_ridge + 0.1, log_peak, 0.0, 0.0),
            (X_RANGE[1] - 0.1, log_peak, 1.0, 0.0)])
        self.memory_label.setText(f"HBM {format_value(roof.bandwidth / 1e12, 'TB/s')}")
        # Above and left of a point of the slope: the slope passes under and right of the
        # text, never through it. Several points along it, the lowest first.
        self.labels.set_candidates(self.memory_label, [
            (x, log_bw + x, 1.0, 1.0) for x in np.arange(X_RANGE[0] + 1.6, log_ridge - 0.5,
                                                          0.6)] + [
            (X_RANGE[0] + 1.6, log_bw + X_RANGE[0] + 1.6, 0.0, 0.0)])
        self.ridge_label.setText(f"ridge {roof.ridge:,.0f} FLOP/B")
        low = Y_RANGE[0] + 0.3
        self.labels.set_candidates(self.ridge_label, [
            (log_ridge, low, -0.05, 0.0), (log_ridge, low, 1.05, 0.0),
            (log_ridge, low + 1.0, -0.05, 0.0), (log_ridge, low + 1.0, 1.05, 0.0)])

    def _set_points(self, out: object) -> None:
        log_x = np.log10(out.intensity)
        log_y = np.log10(out.attained)
        key = (log_x.tobytes(), log_y.tobytes(), tuple(out.bounds), out.selected)
        if not self.needs_update("points", key):
            return
        for i, bound in enumerate(out.bounds):
            selected = i == out.selected
            self.points.set_style(i, SELECTED_SIZE if selected else POINT_SIZE,
                                  self._brushes[bound == COMPUTE], self._pens[selected])
        self.points.set_points(log_x, log_y)
        for i, (label, op) in enumerate(zip(self.op_labels, named_ops(), strict=True)):
            # Every side of its point, the preferred one first: the label stays with its
            # dot wherever a drag takes it.
            x, y = float(log_x[i]), float(log_y[i])
            first = LABEL_ANCHORS.get(op.key, AROUND[0])
            self.labels.set_candidates(label, [(x, y, *first)] + [
                (x, y, *anchor) for anchor in AROUND if anchor != first])
            label.setColor(theme.color("text" if i == out.selected else "muted"))
        self._dots = np.column_stack([log_x, log_y])
