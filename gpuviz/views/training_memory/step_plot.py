"""The memory of one training step against time, shared by figures 6.1 and 6.4.

Stacked filled areas over a time axis (layer-forward units): an optional grey band of
model states, then yellow checkpoints, orange activations and magenta logits; magenta
marks under the axis for the recomputed forward passes, a playhead and a peak marker.
Areas are `Area` items (their pieces worked out only when the step changes), filled with
the opaque colour their translucent fill makes over the background: the areas do not
overlap, and blending a plot-sized area cost 5x an opaque fill (6.4 at 2560x1440: 2 ms
less on a change that moves the time axis). The band and the marks are one CellGrid.
While a step plays, the part not yet played lies under a translucent curtain: a frame
moves one rectangle and the playhead, no path is rebuilt.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem

from gpuviz import theme
from gpuviz.core.model import nice_ceiling
from gpuviz.core.plots import Area, CellGrid, Dots, Legend, Segment, composite, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models import memory as mem
from gpuviz.models.training_memory import gb_text

AREAS = (("checkpoints", "onchip"), ("activations", "memory"), ("logits", "highlight"))
AREA_ALPHA = 200
STATES_ALPHA = 150  # the model-state band recedes behind what changes
MARK_SHARE = 0.035  # height of the recompute marks under the axis, share of the y range
PHASE_LABEL_GAP = 12  # px between a phase label and its phase's ends (a playhead at 0)


def area_fill(role: str) -> QColor:
    return composite(theme.color(role, AREA_ALPHA), theme.color("background"))


class StepMemoryPlot:
    """A plot of stored memory over one step; `set_step` draws it, `set_playhead` moves
    the playhead (and how much of the step is drawn)."""

    def __init__(self, with_states: bool, y_label: str = "Memory (GB)") -> None:
        self.widget = plot_widget("Time in the step (one layer's forward pass = 1)", y_label)
        self.item = self.widget.getPlotItem()
        self.item.showGrid(x=False, y=True, alpha=0.25)
        self.with_states = with_states
        self.band = CellGrid(font_size=8)  # model-state band and recompute marks
        self.item.addItem(self.band)
        self.areas = []
        for _, role in AREAS:
            area = Area(area_fill(role))
            self.item.addItem(area)
            self.areas.append(area)
        curtain = QColor(theme.current().background)
        curtain.setAlpha(225)
        self.curtain = QGraphicsRectItem()
        self.curtain.setPen(QPen(Qt.NoPen))
        self.curtain.setBrush(curtain)
        self.curtain.setVisible(False)
        self.item.addItem(self.curtain)
        self.playhead = Segment(pen("text", 1.5, Qt.DashLine))
        self.item.addItem(self.playhead)
        self.peak_dot = Dots(self.item, 1, 12, theme.color("highlight"), pen("text", 1.5))
        self.labels = TextLayer(QRectF(0, 0, 1, 1), keep_inside=True)
        # Mostly right of the dot: centred, it met "forward →" when the peak is low.
        self.peak_label = self.labels.add(role="text", size=9, bold=True, anchor=(0.2, 1.1))
        # Inside the band's top: above it, it met the peak label of a flat (checkpointed) step.
        self.states_label = self.labels.add(role="text", size=9, anchor=(0, -0.15))
        self.phase_labels = [self.labels.add(text, role="text", size=9,
                                             anchor=(0.5, 1.0))
                             for text in ("forward →", "← backward")]
        self.item.addItem(self.labels)
        self._data: tuple | None = None
        self._y_max = 0.0
        self._x_max = 0.0
        self._timeline = None
        self._base = 0.0
        self.legend: Legend | None = None
        self._last: tuple | None = None
        self._states_text = ""
        self._playhead: float | None = None
        self._phase_key: tuple | None = None
        # A new size moves the legend's room and the phase labels' places.
        self.item.getViewBox().sigResized.connect(self._refit)

    def add_legend(self, columns: int) -> Legend:
        """The key in the top right corner: the areas, the recompute marks (a thin
        swatch, as they are thin) and the model-state band if drawn."""
        legend = Legend(self.item, anchor=(1, 0), columns=columns)
        self.legend = legend
        self._columns = columns
        self._fill_legend("model states")
        return legend

    def _fill_legend(self, states_text: str) -> None:
        """The legend's rows; the model states' row says how much they are (the band is
        too thin for a label of its own beside a large step)."""
        legend = self.legend
        legend.clear()
        if self.with_states:
            legend.add_box(states_text, theme.color("neutral", STATES_ALPHA), hatch=False)
        for name, role in AREAS:
            legend.add_box(name, area_fill(role), hatch=False)
        legend.add_box("recomputed forward", theme.color("highlight"), hatch=False,
                       height=0.45)

    def _with_room(self, axis_top: float, data_top: float) -> float:
        """The y range's top: `axis_top`, or higher where the legend in the top corner
        would cover the data's peak or its label (it hid "peak 184 GB"): then the
        legend's height past them. Not always: a chart whose peak lies low kept half
        its height empty."""
        if self.legend is None:
            return axis_top
        return max(axis_top, self.legend.end_with_room(
            0.0, data_top, 1.3 * self.peak_label.metrics.height()))

    def _refit(self) -> None:
        if self._last is not None:
            self.set_step(*self._last[0], **self._last[1])
            self.set_playhead(self._playhead)  # its line spans the new range

    def set_step(self, timeline: mem.StepTimeline, states: float, y_max_bytes: float,
                 until: float | None = None, show_peak: bool = True) -> None:
        """Draw `timeline` (bytes) over a band of `states` bytes, up to time `until`."""
        if self.with_states and self.legend is not None:
            # First: the legend's size sets the room the y range keeps for it.
            text = f"model states {gb_text(states)}"
            if text != self._states_text:
                self._states_text = text
                self._fill_legend(text)
        self._last = ((timeline, states, y_max_bytes), {"until": until,
                                                         "show_peak": show_peak})
        scale = 1 / mem.GB
        base = states * scale if self.with_states else 0.0
        y_max = self._with_room(nice_ceiling(y_max_bytes * scale * 1.08),
                                base + timeline.peak * scale)
        x_max = timeline.step_time
        if (y_max, x_max) != (self._y_max, self._x_max):
            self._y_max, self._x_max = y_max, x_max
            self.item.setYRange(-MARK_SHARE * 1.6 * y_max, y_max, padding=0)
            self.item.setXRange(0, x_max, padding=0.01)
            self.labels.set_bounds(QRectF(0, -y_max, x_max, 2 * y_max))
        key = (id(timeline), base, y_max)
        if key != self._data:
            self._data = key
            self._timeline = timeline  # keeps the id above from being reused
            self._draw(timeline, base, y_max, scale)
        end = x_max if until is None else until
        self._base = base
        if until is None or until >= x_max:
            self.curtain.setVisible(False)
        else:
            self.curtain.setRect(QRectF(until, base, x_max * 1.02 - until, y_max - base))
            self.curtain.setVisible(True)
        if self.with_states and self.legend is None:
            self.states_label.setText(f"model states {gb_text(states)}")
            self.states_label.setPos(0.01 * x_max, base)
        self._place_phase_labels(timeline, base, scale)
        shown = show_peak and timeline.peak_time <= end + 1e-9
        peak_y = base + timeline.peak * scale
        self.peak_dot.set_points([timeline.peak_time if shown else np.nan], [peak_y])
        self.peak_label.setText(f"peak {gb_text(peak_y / scale)}" if shown else "")
        self.peak_label.setPos(timeline.peak_time, peak_y)

    def _place_phase_labels(self, timeline: mem.StepTimeline, base: float,
                            scale: float) -> None:
        """"forward →" and "← backward" above the model-state band, each where the
        memory under it is lowest within its phase, and on top of that memory: in the
        middle of a phase it lay across the recomputed segments' peaks (6.4)."""
        # From the range set, not viewPixelSize: the view's transform follows a new range
        # only when it is next painted.
        box = self.item.getViewBox()
        low, high = box.viewRange()[0]
        pixel = (high - low) / max(box.width(), 1.0)
        key = (id(timeline), base, scale, pixel, *(label.width for label in self.phase_labels))
        if key == self._phase_key:  # an animation frame: the step is the same
            return
        self._phase_key = key
        top = base + timeline.total * scale
        for label, (start, stop) in zip(self.phase_labels, ((0.0, timeline.turn),
                                                            (timeline.turn, timeline.step_time)),
                                        strict=True):
            # Clear of the phase's ends (a playhead at 0, the turn) by PHASE_LABEL_GAP px.
            half = label.width * pixel / 2
            reach = min(half + PHASE_LABEL_GAP * pixel, (stop - start) / 2)
            centres = np.linspace(start + reach, stop - reach, 41)
            # The highest memory under each place: its ends and the vertices inside it
            # (all places at once: one by one they took 1 ms a plot).
            lows, highs = centres - half, centres + half
            ends = np.maximum(np.interp(lows, timeline.t, top),
                              np.interp(highs, timeline.t, top))
            inside = (timeline.t > lows[:, None]) & (timeline.t < highs[:, None])
            heights = np.maximum(ends, np.where(inside, top, base).max(axis=1))
            # The lowest of them; of equals, the one nearest the phase's middle.
            middle = (start + stop) / 2
            best = np.lexsort((np.abs(centres - middle), np.round(heights, 9)))[0]
            label.setPos(centres[best], heights[best])

    def _draw(self, timeline: mem.StepTimeline, base: float, y_max: float,
              scale: float) -> None:
        t, c, a, g = timeline.t, timeline.checkpoints, timeline.activations, timeline.logits
        lower = np.full(len(t), base)
        for area, part in zip(self.areas, (c, a, g), strict=True):
            upper = lower + part * scale
            area.set_data(t, lower, upper)
            lower = upper
        rects, fills = [], []
        if self.with_states:
            rects.append((0.0, 0.0, timeline.step_time, base))
            fills.append(theme.color("neutral", STATES_ALPHA))
        height = MARK_SHARE * y_max
        for start, stop in timeline.recompute:
            rects.append((start, -1.3 * height, stop - start, height))
            fills.append(theme.color("highlight"))
        self.band.set_cells(np.array(rects, dtype=float).reshape(-1, 4), fills)

    def set_playhead(self, t: float | None) -> None:
        self._playhead = t
        if t is None:
            self.playhead.setVisible(False)
            return
        self.playhead.setVisible(True)
        self.playhead.set_line(t, -MARK_SHARE * 1.6 * self._y_max, t, self._y_max,
                               self.item.getViewBox().viewPixelSize())
