"""Figure 11.2: rounding and clipping error against the range alpha."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QApplication

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import decade_label
from gpuviz.core.model import format_value, superscript
from gpuviz.core.plots import Dots, curve, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, TextLayer, polyline_segments
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.quantization import MSE_ALPHA_MAX, MSE_ALPHA_MIN, sigma_text

X_RANGE = (0.0, MSE_ALPHA_MAX)
# The model's 0.01-sigma grid finds the minimum; drawing every 4th point looks the same
# and strokes a quarter of the path on every repaint.
DRAW_EVERY = 4
# Where the labels sit (sigma): left of the minimum, where the three curves are apart
# (to the right the total runs on top of the rounding part and the dashed line).
MARKER_SIZE = 14  # pixels across
# Where "total" may sit by the marker (anchors of its text box), the preferred first.
TOTAL_ANCHORS = ((0.5, 1.2), (-0.1, 1.1), (1.1, 1.1), (-0.15, 0.5), (1.15, 0.5),
                 (-0.1, -0.2), (1.1, -0.2))
CLIPPING_XS = (0.6, 0.9, 1.2, 1.5)  # sigma: where "clipping" may sit, the first preferred
LABEL_X = {"clipping": 0.6, "rounding": 1.6, "uniform": 1.6}


def _decade_text(exponent: int, low: int) -> str:
    """A tick's label, every decade of the axis written one way: 10⁻⁵ beside 10⁻⁴ (not
    0.0001) once the axis reaches below 0.001, as the readouts write such numbers."""
    if low < -3:
        return "1" if exponent == 0 else f"10{superscript(exponent)}"
    return decade_label(exponent)


def _log(values: np.ndarray) -> np.ndarray:
    """log10 with zeros (no clipping at all) as gaps."""
    with np.errstate(divide="ignore"):
        out = np.log10(values)
    out[~np.isfinite(out)] = np.nan
    return out


class MseView(FigureView):
    def build(self) -> None:
        self.controls.add("distribution", style="buttons")
        self.controls.add("bits_choice", style="buttons")
        self.controls.add("alpha")
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)

        self.plot = plot_widget("Range α (standard deviations σ)",
                                "Mean squared error (log scale)")
        item = self.plot.getPlotItem()
        item.setXRange(*X_RANGE, padding=0)
        self.uniform = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.rounding = curve(item, pen("compute", 2.5))
        self.clipping = curve(item, pen("memory", 2.5))
        self.total = curve(item, pen("text", 3.0))
        self.min_max_line = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.guess_line = curve(item, pen("neutral", 1.5, Qt.DashDotLine))
        self.best_line = curve(item, pen("highlight", 2.0))
        self.alpha_line = curve(item, pen("highlight", 1.5, Qt.DashLine))
        self.marker = Dots(item, 1, MARKER_SIZE, theme.color("highlight"), pen("text", 1.5))
        self.labels = TextLayer(QRectF(X_RANGE[0], -12, X_RANGE[1] - X_RANGE[0], 14),
                                keep_inside=True)
        # Kept inside the plot: at the top or the right edge "total" moves to another
        # side of its marker rather than being cut.
        self.total_layer = PlacedTextLayer(QRectF(X_RANGE[0], -12, X_RANGE[1] - X_RANGE[0],
                                                  14))
        self._total_segments = np.zeros((0, 4))
        self.curve_labels = {
            "rounding": self.labels.add("rounding", role="compute", size=9, bold=True,
                                        anchor=(-0.1, -0.2)),
            # In the layer of "total", which keeps off it near α = 0.
            "clipping": self.total_layer.add("clipping", role="memory", size=9, bold=True,
                                             anchor=(0, 1.1)),
            # Above and left of its rising curve, where nothing is drawn (at the curve's
            # foot a large label would be pushed right, onto the curves).
            "uniform": self.labels.add("step²/12", role="neutral", size=9,
                                       anchor=(1.08, 1.1)),
        }
        # Kept off "clipping", the curve and the α line (it moves with every α).
        self.total_label = self.total_layer.add("total", role="text", size=9, bold=True)
        self.total_layer.set_order([self.total_label])
        item.addItem(self.total_layer)
        # Left of its line: the guess line starts at 4σ, just right of min-max (3.9σ).
        # On a small screen it would sit on "clipping": then the caption names the line.
        self.min_max_label = self.labels.add("", role="neutral", size=9, anchor=(1.05, 0),
                                             give_way=True)
        self.guess_label = self.labels.add("", role="text", size=9, anchor=(-0.05, 0))
        # Left of its line: between the best range and min-max the clipping curve dives
        # to zero, through where a label on the right would sit.
        self.best_label = self.labels.add("", role="highlight", size=9, bold=True,
                                          anchor=(1.05, 1))
        item.addItem(self.labels)
        self._y_range: tuple[int, int] | None = None
        self._dragging = False
        scene = self.plot.scene()
        scene.sigMouseClicked.connect(self._on_click)
        scene.sigMouseMoved.connect(self._on_move)
        self.plot.setToolTip("Click or drag in the plot to move the range α")
        self.add_plot(self.plot)

    def _alpha_at(self, scene_pos: object) -> float | None:
        box = self.plot.getPlotItem().getViewBox()
        if not box.sceneBoundingRect().contains(scene_pos):
            return None
        return float(box.mapSceneToView(scene_pos).x())

    def _on_click(self, event: object) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            x = self._alpha_at(event.scenePos())
            if x is not None:
                self.model.set("alpha", x)

    def _on_move(self, scene_pos: object) -> None:
        if not QApplication.mouseButtons() & Qt.MouseButton.LeftButton:
            return
        x = self._alpha_at(scene_pos)
        if x is not None:
            self.model.set("alpha", x)

    def refresh(self) -> None:
        out = self.model.out
        c = out.curves
        item = self.plot.getPlotItem()
        key = (self.model.distribution, self.model.bits_choice)
        log_total = _log(c.total)
        if self.needs_update("curves", key):
            d = slice(None, None, DRAW_EVERY)
            self.rounding.set_data(c.alphas[d], _log(c.rounding[d]))
            self.clipping.set_data(c.alphas[d], _log(c.clipping[d]))
            self.uniform.set_data(c.alphas[d], _log(c.uniform[d]))
            self.total.set_data(c.alphas[d], log_total[d])
            self._total_segments = polyline_segments(c.alphas[d], log_total[d], 4)
            low = math.floor(np.nanmin(log_total)) - 2
            high = math.ceil(np.nanmax(log_total))
            if self._y_range != (low, high):
                self._y_range = (low, high)
                item.setYRange(low, high, padding=0)
                ticks = [(float(k), _decade_text(k, low)) for k in range(low, high + 1)]
                item.getAxis("left").setTicks([ticks, []])
            for name, label in self.curve_labels.items():
                i = int(np.argmin(np.abs(c.alphas - LABEL_X[name])))
                y = float(_log(getattr(c, name)[i:i + 1])[0])
                label.setPos(LABEL_X[name], y if math.isfinite(y) else low)
            # "clipping" above its falling curve, farther along when "total" (placed
            # first) is by the marker near α = 0.
            places = []
            for x in CLIPPING_XS:
                i = int(np.argmin(np.abs(c.alphas - x)))
                y = float(_log(c.clipping[i:i + 1])[0])
                if math.isfinite(y):
                    places.append((x, y, 0.0, 1.1))
            self.total_layer.set_candidates(self.curve_labels["clipping"], places)
            x = c.max_abs
            self.min_max_line.set_data([x, x], [low, high])
            self.min_max_label.setText(f"min-max {sigma_text(x)}")
            self.min_max_label.setPos(x, high - 0.6)  # under "clipping", near the top
        low, high = self._y_range
        alpha = out.alpha
        total = math.log10(out.rounding + out.clipping)
        self.alpha_line.set_data([alpha, alpha], [low, total])
        self.marker.set_points([alpha], [total])
        self.total_layer.set_candidates(self.total_label, [
            (alpha, total, *anchor) for anchor in TOTAL_ANCHORS])
        self.total_layer.set_obstacles(self._total_segments, np.array([[alpha, total]]),
                                       MARKER_SIZE,
                                       moving=np.array([[alpha, low, alpha, total]]))
        guess = self.model.guess_alpha
        self.guess_line.set_data([guess, guess], [low, high])
        self.guess_label.setText(f"your guess {sigma_text(guess)}")
        self.guess_label.setPos(guess, low + 0.2)
        if self.model.revealed:
            b = c.best_alpha
            self.best_line.set_data([b, b], [low, math.log10(c.best_mse)])
            self.best_label.setText(f"best {sigma_text(b)}")
            # Low down, clear of the curves that cross at the minimum.
            self.best_label.setPos(b, low + 0.7)
        else:
            self.best_line.set_data([], [])
            self.best_label.setText("")
        self.predict.sync()
        share = out.clipping / (out.rounding + out.clipping) if out.clipping else 0.0
        self.message.show_message(
            f"α = {sigma_text(alpha)}: rounding {format_value(out.rounding)} "
            f"(step²/12 = {format_value(out.uniform)}), clipping "
            f"{format_value(out.clipping)}, "
            f"{100 * share:.0f}% of the total from clipping. "
            f"Range {sigma_text(MSE_ALPHA_MIN)} to {sigma_text(MSE_ALPHA_MAX)}.")
