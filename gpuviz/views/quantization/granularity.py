"""Figure 11.3: one scale per tensor, per row or per column, as two heat maps."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g
from gpuviz.core.plots import CellGrid, diagram_widget, heat_colors
from gpuviz.core.text import TextLayer
from gpuviz.models.quantization import (
    ACTIVATIONS,
    GRAN_COLUMNS,
    GRAN_ROWS,
    GRANULARITIES,
    PER_COLUMN,
    PER_ROW,
)

GAP = 3.0  # between the two maps
RIGHT = GRAN_COLUMNS + GAP  # x of the error map
BAR_Y = GRAN_ROWS + 1.6  # the colour keys under the maps
BAR_CELLS = 12
KEY_X, KEY_CELL = 1.0, 0.5  # the colour keys' start and cell width: room for their labels
WIDTH = 2 * GRAN_COLUMNS + GAP
CELL = 0.94
ERR_Y = BAR_Y + 1.6  # the bars comparing the three granularities
ERR_X, ERR_WIDTH, ERR_ROW = 9.0, 20.0, 1.0


def _cells(x0: float) -> np.ndarray:
    r, c = np.divmod(np.arange(GRAN_ROWS * GRAN_COLUMNS), GRAN_COLUMNS)
    return np.column_stack([x0 + c, r, np.full(r.size, CELL), np.full(r.size, CELL)])


def _groups(x0: float, granularity: str) -> np.ndarray:
    """Outlines of the groups that share one scale."""
    if granularity == PER_ROW:
        return np.array([[x0 - 0.03, r - 0.03, GRAN_COLUMNS, 1.0] for r in range(GRAN_ROWS)])
    if granularity == PER_COLUMN:
        return np.array([[x0 + c - 0.03, -0.03, 1.0, GRAN_ROWS] for c in range(GRAN_COLUMNS)])
    return np.array([[x0 - 0.03, -0.03, GRAN_COLUMNS, GRAN_ROWS]])


class GranularityView(FigureView):
    def build(self) -> None:
        self.controls.add("tensor", style="buttons")
        self.controls.add("granularity", style="buttons")
        self.controls.add("bits")

        canvas, self.box = diagram_widget()
        # The maps fill the plot: a cell's shape means nothing, so it need not be square.
        self.box.setAspectLocked(False)
        self.maps = CellGrid()
        self.outlines = CellGrid()
        self.keys = CellGrid(font_size=8)
        self.titles = TextLayer(QRectF(-3, -3, WIDTH + 6, ERR_Y + 7), keep_inside=True,
                                flip=False)
        self.value_title = self.titles.add(size=10, bold=True, anchor=(0, 1))
        self.error_title = self.titles.add(size=10, bold=True, anchor=(0, 1))
        self.row_axis = self.titles.add(role="muted", size=9, anchor=(0, 0))
        self.key_labels = [self.titles.add(role="muted", size=8, anchor=(a, 0.5))
                           for a in (1, 0, 1, 0)]
        # What the error key's top stands for, under that key: beside its number it ran
        # past the edge of a 1024x768 projector and was pushed back over the key.
        self.key_note = self.titles.add("top: step/2 per tensor", role="muted", size=8,
                                        anchor=(0, 0))
        self.key_note.setPos(RIGHT + KEY_X, BAR_Y + 0.6)
        self.error_bars = CellGrid(font_size=8)
        self.error_labels = [self.titles.add(size=9, anchor=(1, 0.5)) for _ in GRANULARITIES]
        self.error_values = [self.titles.add(size=9, anchor=(0, 0.5)) for _ in GRANULARITIES]
        for item in (self.maps, self.outlines, self.keys, self.error_bars, self.titles):
            self.box.addItem(item)
        bottom = ERR_Y + ERR_ROW * len(GRANULARITIES)
        self.box.setRange(xRange=(-0.5, WIDTH + 0.5), yRange=(-1.6, bottom + 0.2), padding=0.02)
        self.add_plot(canvas)
        self._rects = np.concatenate([_cells(0.0), _cells(RIGHT)])

    def refresh(self) -> None:
        out = self.model.out
        acts = out.tensor == ACTIVATIONS
        top = float(np.abs(out.values).max())
        fills = (heat_colors(np.abs(out.values), top, "compute")
                 + heat_colors(out.error, out.error_scale, "highlight"))
        self.maps.set_cells(self._rects, fills)
        granularity = self.model.granularity
        groups = np.concatenate([_groups(0.0, granularity), _groups(RIGHT, granularity)])
        self.outlines.set_cells(groups, [None] * len(groups),
                                [theme.color("text")] * len(groups), outline_width=1.5)

        name = "X" if acts else "W"
        shape = "tokens × channels" if acts else "outputs × inputs"
        self.value_title.setText(f"|{name}|  ({shape})")
        self.value_title.setPos(0, -0.2)
        self.error_title.setText(f"error |{name} − Q({name})|, fixed scale")
        self.error_title.setPos(RIGHT, -0.2)
        # Short enough for a 1024x768 projector (the outer dimension said in words ran off
        # its edge).
        self.row_axis.setText(("rows: tokens · columns: channels" if acts else
                               "rows: outputs · columns: inputs") + " (the reduction dimension)")
        self.row_axis.setPos(0, GRAN_ROWS + 0.2)

        if self.needs_update("keys", (top, out.error_scale)):
            shade = np.linspace(0, 1, BAR_CELLS)
            xs = np.concatenate([KEY_X + np.arange(BAR_CELLS) * KEY_CELL,
                                 RIGHT + KEY_X + np.arange(BAR_CELLS) * KEY_CELL])
            rects = np.column_stack([xs, np.full(xs.size, BAR_Y), np.full(xs.size, KEY_CELL),
                                     np.full(xs.size, 0.6)])
            self.keys.set_cells(rects, heat_colors(shade, 1.0, "compute")
                                + heat_colors(shade, 1.0, "highlight"))
            end = KEY_X + BAR_CELLS * KEY_CELL
            for label, x, text in zip(self.key_labels,
                                      (KEY_X, end, RIGHT + KEY_X, RIGHT + end),
                                      ("0", format_g(top, 3), "0",
                                       format_g(out.error_scale, 3)),
                                      strict=True):
                label.setText(text)
                label.setPos(x - 0.1 if label.anchor[0] == 1 else x + 0.1, BAR_Y + 0.3)

        self._error_bars(out, granularity)
        # The verdict: can an int8 matmul use these scales?
        self.message.show_message(*self.model.verdict())

    def _error_bars(self, out: object, granularity: str) -> None:
        """RMS error of each granularity as a bar, the chosen one highlighted."""
        worst = max(out.rms.values())
        rects, fills = [], []
        for i, (g, label) in enumerate(GRANULARITIES):
            y = ERR_Y + i * ERR_ROW
            width = ERR_WIDTH * out.rms[g] / worst
            rects.append([ERR_X, y + 0.1, width, 0.8 * ERR_ROW])
            fills.append(theme.color("highlight" if g == granularity else "neutral"))
            self.error_labels[i].setText(f"RMS, {label.lower()}")  # beside its bar, not on it
            self.error_labels[i].setPos(ERR_X - 0.2, y + 0.5)
            self.error_values[i].setText(format_g(out.rms[g], 3))
            self.error_values[i].setPos(ERR_X + width + 0.1, y + 0.5)
        self.error_bars.set_cells(np.array(rects), fills)
