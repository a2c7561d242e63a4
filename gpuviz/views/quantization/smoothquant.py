"""Figure 11.4: SmoothQuant moves the outliers' range from the activations to the weights."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import set_log_ticks
from gpuviz.core.model import format_g, format_value
from gpuviz.core.plots import (
    CellGrid,
    Dots,
    Legend,
    curve,
    opaque_blend,
    pen,
    plot_widget,
)
from gpuviz.core.text import PlacedTextLayer, polyline_segments
from gpuviz.models.quantization import (
    SQ_ALPHAS,
    SQ_CHANNELS,
    smooth_tensors,
    smoothing_scales,
)

BEFORE_WIDTH, AFTER_WIDTH = 0.36, 0.2  # bar widths in channels
OFFSET = 0.2  # X bars left of the channel, W bars right
FAINT = 90  # opacity of the bars before smoothing
MARKER_SIZE = 13  # pixels across
# Where the marker's label may sit (anchors of its text box), the preferred first.
MARKER_ANCHORS = ((0.5, 1.3), (-0.1, 1.1), (1.1, 1.1), (-0.15, 0.5), (1.15, 0.5),
                  (-0.1, -0.3), (1.1, -0.3), (0.5, -0.4))


def _channel_maxima() -> np.ndarray:
    """log10 of every bar a channel may show, before smoothing and at alpha 0 and 1 (log s
    is linear in alpha, so the extremes bound every alpha between): (bars, channels)."""
    x, w = smooth_tensors()
    x_max, w_max = np.abs(x).max(axis=0), np.abs(w).max(axis=1)
    values = [x_max, w_max]
    for a in (0.0, 1.0):
        s = smoothing_scales(x_max, w_max, a)
        values += [x_max / s, w_max * s]
    return np.log10(np.vstack(values))


class SmoothQuantView(FigureView):
    def build(self) -> None:
        self.controls.add("alpha")

        self.bars_plot = plot_widget("Input channel j", "Channel maximum (log)")
        item = self.bars_plot.getPlotItem()
        maxima = _channel_maxima()
        self._tallest = maxima.max(axis=0)  # per channel, log10
        self._low = math.floor(maxima.min())
        self._high = math.ceil(self._tallest.max())  # the decades of every bar
        self._top = float(self._high)
        item.setXRange(-0.6, SQ_CHANNELS - 0.4, padding=0)
        item.setYRange(self._low, self._top, padding=0)
        set_log_ticks(item.getAxis("left"), self._low, self._high)
        item.getAxis("bottom").setTicks([[(float(j), str(j)) for j in range(SQ_CHANNELS)], []])
        self.bars = CellGrid()
        item.addItem(self.bars)
        self._faint = {role: opaque_blend(role, FAINT) for role in ("compute", "memory")}
        # Before smoothing: a faint shade of the same role (compute_light is the stronger
        # blue in the dark look, so it cannot say "before").
        self.legend = legend = Legend(item, anchor=(0, 0), columns=2)
        legend.add_box("max |Xⱼ| after smoothing", theme.color("compute"))
        legend.add_box("max |Wⱼ| after", theme.color("memory"))
        legend.add_box("before", opaque_blend("compute", FAINT))
        legend.add_box("before", opaque_blend("memory", FAINT))
        item.getViewBox().sigResized.connect(self._fit_bars_top)
        self.add_plot(self.bars_plot, 3)

        self.error_plot = plot_widget("Migration strength α", "W8A8 error (%)")
        eitem = self.error_plot.getPlotItem()
        errors = 100 * self.model.out.errors
        plain = 100 * self.model.out.unsmoothed_error
        top = float(np.ceil(max(errors.max(), plain) * 1.1 * 2) / 2)
        eitem.setXRange(0.0, 1.0, padding=0.02)
        eitem.setYRange(0.0, top, padding=0)
        self.error_curve = curve(eitem, pen("text", 2.5))
        self.error_curve.set_data(SQ_ALPHAS, errors)
        best = self.model.out.best_alpha
        self.best_line = curve(eitem, pen("neutral", 1.5, Qt.DotLine))
        self.best_line.set_data([best, best], [0.0, top])
        # Without smoothing (s = 1) is not alpha = 0: there s_j = 1 / max|W_j| still
        # rescales the channels.
        self.plain_line = curve(eitem, pen("neutral", 1.5, Qt.DashLine))
        self.plain_line.set_data([0.0, 1.0], [plain, plain])
        self.alpha_line = curve(eitem, pen("highlight", 1.5, Qt.DashLine))
        self.marker = Dots(eitem, 1, MARKER_SIZE, theme.color("highlight"), pen("text", 1.5))
        # Every label kept inside the plot and off the others, the curve and the marker
        # (at α = 0 the marker's label would sit on the no-smoothing one, at α = 1 it ran
        # past the right edge). The marker's label is placed first; a label that moves
        # repaints its own rectangles only.
        self.labels = labels = PlacedTextLayer(QRectF(-0.1, -1, 1.2, top + 2))
        self.best_label = labels.add(f"best α = {best:.2f} on this data", role="neutral",
                                     size=9)
        labels.set_candidates(self.best_label, [(best, top, 1.03, 0.0), (best, top, -0.03, 0.0)])
        self.plain_label = labels.add(f"no smoothing (s = 1): {plain:.2f}%", role="neutral",
                                      size=9)
        # Under its line: above it, near the top, it ran into the best-α label.
        labels.set_candidates(self.plain_label, [
            (0.0, plain, 0.0, -0.1), (1.0, plain, 1.0, -0.1), (0.5, plain, 0.5, -0.1),
            (1.0, plain, 1.0, 1.1), (0.0, plain, 0.0, 1.1)])
        self.marker_label = labels.add(role="highlight", size=9, bold=True)
        labels.set_order([self.marker_label])
        eitem.addItem(labels)
        self._error_segments = np.vstack([
            polyline_segments(np.asarray(SQ_ALPHAS, dtype=float), errors),
            [[0.0, plain, 1.0, plain]]])
        self._best_segment = np.array([[best, 0.0, best, top]])
        self.add_plot(self.error_plot, 2)

    def _fit_bars_top(self) -> None:
        """The axis's top raised where the legend would cover a bar under it (on a
        1024x768 projector it hid the tip of channel 6): above the tallest bar any alpha
        gives the channels the legend spans, so the axis stays put while alpha moves."""
        box = self.bars_plot.getPlotItem().getViewBox()
        legend = box.mapSceneToView(self.legend.sceneBoundingRect()).boundingRect()
        left, right = legend.left(), legend.right()
        channels = np.arange(SQ_CHANNELS)
        under = (channels + OFFSET + BEFORE_WIDTH / 2 >= left) & (
            channels - OFFSET - BEFORE_WIDTH / 2 <= right)
        tallest = float(self._tallest[under].max(initial=self._low))
        top = max(float(self._high), self.legend.end_with_room(self._low, tallest))
        if top != self._top:
            self._top = top
            box.setYRange(self._low, top, padding=0)

    def apply_look(self) -> None:
        super().apply_look()
        self._fit_bars_top()  # the legend's size changed

    def refresh(self) -> None:
        out = self.model.out
        low = self._low
        channels = np.arange(SQ_CHANNELS, dtype=float)
        rects, fills = [], []
        for values, shift, fill, width in (
                (out.x_max, -OFFSET, self._faint["compute"], BEFORE_WIDTH),
                (out.w_max, OFFSET, self._faint["memory"], BEFORE_WIDTH),
                (out.x_max_after, -OFFSET, theme.color("compute"), AFTER_WIDTH),
                (out.w_max_after, OFFSET, theme.color("memory"), AFTER_WIDTH)):
            heights = np.log10(values) - low
            rects.append(np.column_stack([channels + shift - width / 2,
                                          np.full(SQ_CHANNELS, float(low)),
                                          np.full(SQ_CHANNELS, width), heights]))
            fills += [fill] * SQ_CHANNELS
        self.bars.set_cells(np.concatenate(rects), fills)

        a, err = self.model.alpha, 100 * out.error
        self.alpha_line.set_data([a, a], [0.0, err])
        self.marker.set_points([a], [err])
        self.marker_label.setText(f"{format_g(err, 3)}%")
        self.labels.set_candidates(self.marker_label, [
            (a, err, *anchor) for anchor in MARKER_ANCHORS])
        self.labels.set_obstacles(self._error_segments, np.array([[a, err]]),
                                  MARKER_SIZE, faint=self._best_segment,
                                  moving=np.array([[a, 0.0, a, err]]))
        x_spread = out.x_max_after.max() / out.x_max_after.min()
        w_spread = out.w_max_after.max() / out.w_max_after.min()
        self.message.show_message(
            f"α = {a:.2f}: activation channel maxima differ by {format_value(x_spread, '×')}, "
            f"weight channel maxima by {format_value(w_spread, '×')}; W8A8 error "
            f"{format_g(err, 3)}% of |XW|. The product itself is unchanged: "
            f"(X diag(s)⁻¹)(diag(s) W) differs from XW by "
            f"{format_value(out.identity_error, digits=2)} of its size.")
