"""Timeline: lanes of labelled boxes on a time axis (streams, links, pipeline stages, GPUs),
with idle time shaded, a playhead, and click-to-read on a box.

Built on two CellGrids (idle shading behind, boxes in front) and a Segment, so hundreds of
boxes cost one paint call each and a refresh that only moves the playhead repaints one
line. A playhead sweeping a fixed schedule can leave every box in place and veil the time
it has not reached (`veil_after`): a frame then moves one rectangle, however many boxes
there are. Thousands of boxes too thin to see apart (under 1/400 of the time shown) are drawn
as one box per run of touching boxes of one colour; a click still reads the box under the
cursor. Feed it arrays (`set_boxes`, `set_idle`) or a `gpuviz.core.schedule.Schedule`
(`show_schedule`). Lanes run top to bottom in the order given; time runs to the right in
the plot's x unit (the figure picks it: seconds, ms, steps)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from gpuviz import theme
from gpuviz.core.model import FINE_STEPS, nice_ceiling
from gpuviz.core.plots import CellGrid, Legend, Segment, pen
from gpuviz.core.plots.cells import colour_codes
from gpuviz.core.schedule import Schedule, Task

BOX_HEIGHT = 0.7  # of a lane's height of 1: the rest is the gap between lanes
MERGE_ABOVE = 300  # boxes; fewer are always drawn one by one
VEIL_ALPHA = 225  # the veil over time not yet played lets the boxes show faintly
THIN = 1 / 400  # of the time shown: boxes thinner than this may be drawn as one run
OUTLINED = 1 / 150  # of the time shown, at line factor 1: a thinner box (a few pixels)
# gets no outline, which would hide its fill (thicker lines, as in the projector look, need
# wider boxes)
TIMELINE_TEXT_AIR = 4  # px a box's text leaves free: boxes abut, numbers must not touch


def fill_by_kind(roles: Mapping[str, str], other: str = "compute") -> Callable[[Task], QColor]:
    """A `show_schedule` fill: each task in the colour of its kind's role (`other` for
    kinds not named), one QColor per role, taken from the current look when called. The
    boxes share them: a new QColor per task, each converted again to compare the boxes,
    cost 0.15 ms a refresh per hundred tasks."""
    colours = {kind: theme.color(role) for kind, role in roles.items()}
    fallback = theme.color(other)
    return lambda task: colours.get(task.kind, fallback)


class Timeline(QObject):
    """Lanes in a plot from `plot_widget` (its left axis names the lanes).

    `clicked(index)` is emitted with the index of the box clicked: its id given to
    `set_boxes` (by default its position there; for `show_schedule` the index of the task
    in the schedule)."""

    clicked = Signal(int)

    def __init__(self, plot: pg.PlotWidget, lanes: Sequence[str],
                 labels: Sequence[str] | None = None, *, text_size: float = 8.0) -> None:
        super().__init__(plot)
        self.plot = plot
        item = plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        self.idle = CellGrid()
        # Boxes abut: a number needs a few pixels of air, or "1|2|3|4" reads as 1234.
        self.boxes = CellGrid(text_size, text_air=TIMELINE_TEXT_AIR)
        self.playhead = Segment(pen("highlight", 1.5, Qt.DashLine))
        for part in (self.idle, self.boxes, self.playhead):
            item.addItem(part)
        self.playhead.setVisible(False)
        self.veil = _Veil()
        self.veil.setZValue(1)  # above the boxes and what a figure adds beside them
        self.playhead.setZValue(2)
        item.addItem(self.veil)
        self.boxes.clicked_at.connect(self._clicked_at)
        self._given = np.zeros((0, 4))  # lane, start, end, id of every box given
        self._given_key: tuple | None = None  # what set_boxes was last given
        self._lanes: tuple[str, ...] = ()
        self._labels: tuple[str, ...] = ()
        self.legend: Legend | None = None
        self._time_limit = 0.0
        self.set_lanes(lanes, labels)

    # ------------------------------------------------------------------ layout
    def set_lanes(self, lanes: Sequence[str], labels: Sequence[str] | None = None) -> None:
        """Lanes by name (a schedule's resource names), shown as `labels` (default: the
        names) on the left axis, top to bottom."""
        lanes = tuple(lanes)
        labels = tuple(labels) if labels is not None else lanes
        if (lanes, labels) == (self._lanes, self._labels):
            return
        self._lanes, self._labels = lanes, labels
        item = self.plot.getPlotItem()
        item.getAxis("left").setTicks([list(enumerate(labels)), []])
        self._fit_lanes()

    def add_legend(self, entries: Sequence[tuple[str, QColor] | tuple[str, QColor, float]],
                   columns: int = 3) -> Legend:
        """The shared Legend under the last lane, with room kept for it (idle-coloured
        swatches are hatched, as the idle shading is). An entry (label, fill, height)
        gives the swatch a box's height share (`set_boxes(heights=...)` / `BOX_HEIGHT`),
        for boxes drawn thinner."""
        self.legend = Legend(self.plot.getPlotItem(), anchor=(0, 1), columns=columns)
        for label, fill, *height in entries:
            self.legend.add_box(label, fill, height=height[0] if height else 1.0)
        self.plot.getPlotItem().getViewBox().sigResized.connect(self._fit_lanes)
        self._fit_lanes()
        return self.legend

    def _fit_lanes(self) -> None:
        low, high = -0.6, len(self._lanes) - 0.4
        if self.legend is not None:
            high = self.legend.end_with_room(low, high)
        self.plot.getPlotItem().setYRange(low, high, padding=0)

    def lane(self, name: str) -> int:
        return self._lanes.index(name)

    def set_time_range(self, end: float, *, exact: bool = False) -> None:
        """Show time 0..end; the limit moves in small steps (`FINE_STEPS`: at most a third
        of the plot is left empty) unless `exact`."""
        limit = end if exact else nice_ceiling(end, FINE_STEPS)
        if limit > 0 and limit != self._time_limit:
            self._time_limit = limit
            self.plot.getPlotItem().setXRange(0, limit, padding=0.01)

    # ------------------------------------------------------------------ contents
    def set_boxes(self, lanes: np.ndarray, start: np.ndarray, end: np.ndarray,
                  fills: Sequence[QColor | None], texts: Sequence[str] | None = None,
                  outlines: Sequence[QColor | None] | None = None,
                  heights: np.ndarray | float = BOX_HEIGHT,
                  ids: np.ndarray | None = None) -> None:
        """Box i spans start[i]..end[i] on lane lanes[i] (an index), centred on the lane;
        a click on it emits ids[i] (default i). Without `outlines`, a thin outline in the
        background colour parts touching boxes of one colour on a lane (boxes of a few
        pixels get none: `OUTLINED`; boxes of other colours need none, and an outline
        would eat a thin neighbour). A text that does not fit its box is left out."""
        lanes, start, end = (np.asarray(a, dtype=float) for a in (lanes, start, end))
        heights = np.broadcast_to(np.asarray(heights, dtype=float), lanes.shape)
        ids = np.arange(len(lanes)) if ids is None else np.asarray(ids)
        colour = colour_codes(fills)
        # A refresh often hands the same boxes again (another control changed): leave the
        # grid as it is rather than rebuild thousands of cells to find nothing changed.
        given = (lanes.tobytes(), start.tobytes(), end.tobytes(), heights.tobytes(),
                 ids.tobytes(), colour.tobytes(), None if texts is None else tuple(texts),
                 None if outlines is None else colour_codes(outlines).tobytes(),
                 self._time_limit, theme.line_factor())
        if given == self._given_key:
            return
        self._given_key = given
        self._given = np.column_stack([lanes, start, end, ids]).reshape(-1, 4)
        if not len(lanes):
            self.boxes.set_cells(np.zeros((0, 4)), [], outlines, texts)
            return
        span = self._span(start, end)
        if len(lanes) > MERGE_ABOVE:
            keep, run_end = _runs(lanes, start, end, heights, colour, span)
            single = (np.diff(np.append(keep, len(lanes))) == 1).tolist()
        else:
            keep, run_end, single = np.arange(len(lanes)), end, [True] * len(lanes)
        # Per-cell lists only for the cells drawn (a run of thin boxes is one cell).
        pick = keep.tolist()
        if outlines is None:
            wide = (((run_end - start[keep]) >= OUTLINED * theme.line_factor() * span)
                    & _touching(lanes, start, end, colour, span)[keep])
            background = theme.color("background")
            drawn = [background if w and one else None
                     for w, one in zip(wide.tolist(), single, strict=True)]
        else:
            drawn = [outlines[i] if one else None for i, one in zip(pick, single, strict=True)]
        if texts is not None:
            texts = [texts[i] if one else "" for i, one in zip(pick, single, strict=True)]
        self.boxes.set_cells(_rects(lanes[keep], start[keep], run_end, heights[keep]),
                             [fills[i] for i in pick], drawn, texts)

    def _span(self, start: np.ndarray, end: np.ndarray) -> float:
        """The time shown: the time range set, or the boxes' extent if wider (boxes cut
        at a playhead early on are still measured against the whole axis; set the range
        first)."""
        return max(float(end.max() - start.min()), self._time_limit, 1e-300)

    def _clicked_at(self, point: QPointF) -> None:
        lane = round(point.y())
        given = self._given
        hit = np.flatnonzero((given[:, 0] == lane) & (given[:, 1] <= point.x())
                             & (point.x() <= given[:, 2]))
        if len(hit):
            self.clicked.emit(int(given[hit[0], 3]))

    def set_idle(self, lanes: np.ndarray, start: np.ndarray, end: np.ndarray,
                 role: str = "idle") -> None:
        """Shade idle (waiting, exposed) time: full-height cells behind the boxes."""
        fill = theme.color(role)
        self.idle.set_cells(_rects(lanes, start, end, BOX_HEIGHT), [fill] * len(start))

    def set_playhead(self, t: float | None) -> None:
        """A dashed line at time t across every lane; None hides it."""
        shown = t is not None
        if shown:
            box = self.plot.getPlotItem().getViewBox()
            self.playhead.set_line(t, -0.6, t, len(self._lanes) - 0.4, box.viewPixelSize())
        self.playhead.setVisible(shown)

    def veil_after(self, t: float | None, end: float) -> None:
        """Veil every lane from time t to `end` (what a playhead has not reached yet) in
        the background colour, the boxes showing faintly through; None lifts it. Items the
        figure adds to the plot lie under it too, the playhead above it."""
        # As tall as the lanes' range (-0.6 to lanes - 0.4): what hangs under the last
        # lane (9.2's stash strip) is veiled too.
        self.veil.set_area(QRectF(0, -0.6, end * 1.02, len(self._lanes) + 0.2))
        self.veil.set_from(t if t is not None and t < end else None)

    def show_schedule(self, result: Schedule, fill: Callable[[Task], QColor],
                      text: Callable[[Task], str] = lambda task: task.text, *,
                      idle_lanes: Sequence[str] = (), until: float | None = None,
                      scale: float = 1.0) -> None:
        """Every task of `result` as a box on the lane named by its resource (resources
        not among the lanes are left out), shaded gaps on `idle_lanes`, and boxes cut at
        `until` (a playhead time) when given. Times are multiplied by `scale` for the
        axis (1e3: a schedule in seconds drawn in ms); `until` is in schedule units."""
        lane_of = {name: i for i, name in enumerate(self._lanes)}
        lanes = np.array([lane_of.get(task.resource, -1) for task in result.tasks])
        start, end = result.start, result.end
        if until is not None:
            end = np.minimum(end, until)
        start, end = start * scale, end * scale
        # Every task stays a cell (hidden ones have zero width), so a click's index is the
        # task's index in the schedule.
        end = np.where(lanes >= 0, np.maximum(end, start), start)
        shown = (end > start).tolist()
        self.set_boxes(np.maximum(lanes, 0), start, end,
                       [fill(task) if on else None
                        for task, on in zip(result.tasks, shown, strict=True)],
                       [text(task) if on else ""
                        for task, on in zip(result.tasks, shown, strict=True)])
        gaps = [(lane_of[name], a, b) for name in idle_lanes
                for a, b in result.idle_intervals(name, result.step_time)
                if until is None or a < until]
        if until is not None:
            gaps = [(lane, a, min(b, until)) for lane, a, b in gaps]
        gap_array = np.array(gaps, dtype=float).reshape(-1, 3)
        self.set_idle(gap_array[:, 0], gap_array[:, 1] * scale, gap_array[:, 2] * scale)


class _Veil(pg.GraphicsObject):
    """The background colour, translucent, over an area from time `set_from(t)` on. Its
    bounds stay put while t moves, and a move repaints only the strip between the old
    and the new t (moving a rectangle item repaints both its old and new extent: every
    box under it, each frame)."""

    def __init__(self) -> None:
        super().__init__()
        colour = QColor(theme.current().background)
        colour.setAlpha(VEIL_ALPHA)
        self._brush = QBrush(colour)
        self._area = QRectF()
        self._from: float | None = None
        # paint() is told the part to repaint (option.exposedRect) and fills only that.
        self.setFlag(QGraphicsItem.ItemUsesExtendedStyleOption)

    def set_area(self, area: QRectF) -> None:
        if area != self._area:
            self.prepareGeometryChange()
            self._area = QRectF(area)
            self.update()

    def set_from(self, t: float | None) -> None:
        before, self._from = self._from, t
        if before == t:
            return
        if before is None or t is None:
            self.update()
            return
        margin = 2 * (self.pixelWidth() or 0.0)  # the edge's antialiased pixels
        low, high = min(before, t) - margin, max(before, t) + margin
        self.update(QRectF(low, self._area.top(), high - low, self._area.height()))

    def boundingRect(self) -> QRectF:  # noqa: N802
        return self._area

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              *args: object) -> None:
        if self._from is None:
            return
        area = self._area
        veiled = QRectF(self._from, area.top(), area.right() - self._from, area.height())
        # In device pixels, whole ones: a fill under the plot's scaling goes the slow way.
        pixels = painter.transform().mapRect(veiled.intersected(option.exposedRect))
        painter.save()
        painter.resetTransform()
        painter.fillRect(pixels.toAlignedRect(), self._brush)
        painter.restore()


def _touching(lanes: np.ndarray, start: np.ndarray, end: np.ndarray, colour: np.ndarray,
              span: float) -> np.ndarray:
    """Which boxes touch a box of the same colour (rgba, -1 for none) on their lane."""
    order = np.lexsort((start, lanes))
    lane, begin, stop, fill = lanes[order], start[order], end[order], colour[order]
    pair = ((lane[1:] == lane[:-1]) & (fill[1:] == fill[:-1]) & (fill[1:] >= 0)
            & (begin[1:] <= stop[:-1] + 1e-9 * span))
    touching = np.zeros(len(lanes), dtype=bool)
    touching[order[:-1][pair]] = True
    touching[order[1:][pair]] = True
    return touching


def _runs(lanes: np.ndarray, start: np.ndarray, end: np.ndarray, heights: np.ndarray,
          colour: np.ndarray, span: float) -> tuple[np.ndarray, np.ndarray]:
    """Boxes to draw when there are many: the first box of each run of thin boxes that
    touch on one lane with one colour and height, and the end of each run. Boxes are
    taken in the order given (each lane's in time order)."""
    thin = (end - start) < THIN * span
    joins = np.zeros(len(lanes), dtype=bool)
    joins[1:] = (thin[1:] & thin[:-1] & (lanes[1:] == lanes[:-1])
                 & (colour[1:] == colour[:-1]) & (heights[1:] == heights[:-1])
                 & (start[1:] <= end[:-1] + 1e-9 * span))
    keep = np.flatnonzero(~joins)
    return keep, np.maximum.reduceat(end, keep)


def _rects(lanes: np.ndarray, start: np.ndarray, end: np.ndarray,
           heights: np.ndarray | float) -> np.ndarray:
    lanes, start, end = (np.asarray(a, dtype=float) for a in (lanes, start, end))
    heights = np.broadcast_to(np.asarray(heights, dtype=float), lanes.shape)
    return np.column_stack([start, lanes - heights / 2, end - start, heights])
