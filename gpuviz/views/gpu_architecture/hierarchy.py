"""Figure 1.1: the execution hierarchy, waves and the tail effect."""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsItem

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, plural
from gpuviz.core.plots import HATCH_ALPHA, CellGrid, Legend, composite, diagram_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import TextPanel
from gpuviz.models.gpu_architecture import LEVELS, WARP_SIZE

# Diagram layout, in data units (y grows downwards).
WIDTH = 68.0
PANEL_TOP = 2.0  # first row of cells of the two panels
TITLES_TOP = -3.4  # room above the panels for their two-line titles
RIGHT_X = 36.0  # left edge of the SM panel
PANEL_WIDTH = 32.0
SM_COLUMNS = 22
MAX_WAVE_CELLS = 32
HEIGHT = PANEL_TOP + 32 + 0.5
CELL_PX, GAP_PX = 8, 2  # image pixels per cell and of the gap between cells


def cell_image(states: np.ndarray, columns: int, palette: np.ndarray) -> np.ndarray:
    """An RGBA image (row-major) of square cells, `columns` per row, each painted with
    palette[state] and separated by transparent gaps; idle cells (state 1) are hatched with
    palette[2], as CellGrid hatches idle cells. One image instead of a thousand rectangles
    keeps the refresh cheap (a block has up to 1,024 threads)."""
    rows = -(-len(states) // columns)
    cell, hatch = _cell_pixels(rows, columns)
    # Past the last cell, and in the gaps (cell -1), the last palette entry: transparent.
    padded = np.full(rows * columns + 1, len(palette) - 1, dtype=np.uint8)
    padded[:len(states)] = states
    pixels = padded.take(cell)
    pixels += (pixels == 1) & hatch  # idle (1) to its hatching (2)
    # Each colour as one 32-bit word: a 1,024-thread block in 0.14 ms (3 ms by cells).
    words = np.ascontiguousarray(palette, dtype=np.uint8).view(np.uint32).reshape(-1)
    return words.take(pixels).view(np.uint8).reshape(*pixels.shape, 4)


@functools.lru_cache(maxsize=8)
def _cell_pixels(rows: int, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """For each pixel of a `rows` x `columns` cell image: the cell it shows (-1 in a gap)
    and whether it is on the idle hatching ("\\" every third pixel). Worked out once per
    shape: a slider that moves the last block's threads redraws the image on every
    step."""
    y, x = np.arange(rows * CELL_PX)[:, None], np.arange(columns * CELL_PX)[None, :]
    gap = (y % CELL_PX >= CELL_PX - GAP_PX) | (x % CELL_PX >= CELL_PX - GAP_PX)
    cell = np.where(gap, -1, (y // CELL_PX) * columns + x // CELL_PX)
    hatch = (x + y) % 3 == 0
    for kept in (cell, hatch):  # shared by every image of this shape
        kept.setflags(write=False)
    return cell, hatch


def _rgba(color: QColor) -> list[int]:
    return [color.red(), color.green(), color.blue(), 255]


class HierarchyView(FigureView):
    def build(self) -> None:
        self.controls.add("gpu")
        self.controls.add("problem_size")
        self.controls.add("block_size")
        # The level is picked in one place: a row of buttons over the drawing, each with
        # its count, rather than in the control column and again in the canvas.
        self.levels = self.controls.add("level", style="buttons")
        self.controls.layout_.removeWidget(self.levels)
        self.add_plot(self.levels, 0)

        # A fixed-height panel: new text repaints it alone, without a relayout of the page.
        # Five lines: a launch of 100 M threads takes that many in the projector theme.
        self.description = TextPanel(5.0, accessible_name="What the selected level is")
        self.add_plot(self.description, 0)

        canvas, self.box = diagram_widget()
        idle = theme.color("idle")
        ink = QColor(theme.readable_on(idle))
        ink.setAlpha(HATCH_ALPHA)
        self.palette = np.array([_rgba(theme.color("compute")), _rgba(idle),
                                 _rgba(composite(ink, idle)), [0, 0, 0, 0]], dtype=np.ubyte)
        self.block_image = pg.ImageItem(axisOrder="row-major")
        self.sm_image = pg.ImageItem(axisOrder="row-major")
        for image in (self.block_image, self.sm_image):
            # Scaling the image on every repaint of the canvas costs about a millisecond
            # each; keep the scaled result until the image itself changes.
            image.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.cells = CellGrid()  # the waves: a few dozen cells
        self.outlines = CellGrid()
        # The three titles: one item painted in one call, slid back inside the canvas
        # (not flipped to the left of their panel) when a narrow window cuts them.
        self.titles = TextLayer(QRectF(-5, -5, WIDTH + 10, HEIGHT + 10), keep_inside=True,
                                flip=False)
        self.block_title = self.titles.add(anchor=(0, 1))
        self.sm_title = self.titles.add(anchor=(0, 1))
        self.wave_title = self.titles.add(anchor=(0, 1))
        for item in (self.block_image, self.sm_image, self.cells, self.outlines,
                     self.titles):
            self.box.addItem(item)
        self.box.setRange(xRange=(0, WIDTH), yRange=(TITLES_TOP, HEIGHT), padding=0.02)
        # The key right under the waves (placed in refresh), not in a far corner; one
        # column, as wide as the SM panel leaves it at lecture sizes.
        self.legend = Legend(self.box, anchor=(0, 0), at=(RIGHT_X, HEIGHT))
        self.legend.add_box("busy", theme.color("compute"))
        self.legend.add_box("idle", idle)
        self.legend.add_line("selected level", _selection_pen())
        self.add_plot(canvas, 1)

    def refresh(self) -> None:
        out = self.model.out
        level = self.model.level
        if self.needs_update("description", (level, self.model.gpu, out)):
            self.description.setText(
                f"<b>{dict(LEVELS)[level]}.</b> {self.model.description()}")

        # The last block (one row per warp, one cell per thread) and the SMs of the last
        # wave: blue busy (state 0), violet idle (state 1).
        threads = np.arange(out.warps_per_block * WARP_SIZE)
        block_states = np.where(threads < out.last_block_threads, 0, 1)
        if self.needs_update("block", (out.warps_per_block, out.last_block_threads)):
            self.block_image.setImage(cell_image(block_states, WARP_SIZE, self.palette),
                                      autoLevels=False)
            self.block_image.setRect(QRectF(0, PANEL_TOP, WARP_SIZE, out.warps_per_block))
        sm_size = PANEL_WIDTH / SM_COLUMNS
        sm_rows = -(-out.sms // SM_COLUMNS)
        if self.needs_update("sms", (out.sms, out.busy_sms_last_wave)):
            sm_states = np.where(np.arange(out.sms) < out.busy_sms_last_wave, 0, 1)
            self.sm_image.setImage(cell_image(sm_states, SM_COLUMNS, self.palette),
                                   autoLevels=False)
            self.sm_image.setRect(QRectF(RIGHT_X, PANEL_TOP, PANEL_WIDTH, sm_rows * sm_size))

        # The level buttons show how many of the level's parts there are.
        counts = {
            "grid": plural(out.blocks, "block"),
            "block": plural(out.block_size, "thread"),
            "warp": f"{WARP_SIZE} threads",
            "thread": "1 element",
            "sm": f"{out.sms} SMs",
        }
        if self.needs_update("counts", counts):
            self.levels.set_labels({key: f"{label}\n{counts[key]}" for key, label in LEVELS})
            for key, label in LEVELS:
                self.levels.buttons[key].setToolTip(f"{label}: {counts[key]}")
        wave_top = PANEL_TOP + sm_rows * sm_size + 3.0
        drawn = min(out.waves, MAX_WAVE_CELLS)
        wave_w = PANEL_WIDTH / max(drawn, 4)
        if self.needs_update("cells", (level, out, wave_top)):
            rects, fills = [], []
            busy, idle = theme.color("compute"), theme.color("idle")
            for i in range(drawn):
                x = RIGHT_X + i * wave_w
                share = out.last_wave_fill if i == drawn - 1 else 1.0
                rects.append((x, wave_top, wave_w * 0.85 * share, 2.0))
                fills.append(busy)
                if share < 1.0:
                    rects.append((x + wave_w * 0.85 * share, wave_top,
                                  wave_w * 0.85 * (1 - share), 2.0))
                    fills.append(idle)
            self.cells.set_cells(np.array(rects), fills)

            # Outline what the selected level is in the drawings.
            outline = {
                "grid": [RIGHT_X - 0.2, wave_top - 0.2, drawn * wave_w + 0.3, 2.4],
                "block": [-0.2, PANEL_TOP - 0.2, WARP_SIZE + 0.2, out.warps_per_block + 0.3],
                "warp": [-0.2, PANEL_TOP - 0.2, WARP_SIZE + 0.2, 1.25],
                "thread": [-0.2, PANEL_TOP - 0.2, 1.25, 1.25],
                "sm": [RIGHT_X - 0.2, PANEL_TOP - 0.2, sm_size + 0.2, sm_size + 0.2],
            }[level]
            self.outlines.set_cells(np.array([outline]), [None],
                                    outlines=[_selection_pen().color()], outline_width=2.5)

            # Two lines each: one line ran into the other panel's title on a narrow canvas
            # in the projector theme (each has 32 of the 68 units across).
            self.block_title.setText(
                f"Last block\n{out.last_block_threads:,} busy, "
                f"{out.block_size - out.last_block_threads:,} idle")
            self.block_title.setPos(0, PANEL_TOP - 0.3)
            self.sm_title.setText(
                f"Last wave\n{plural(out.busy_sms_last_wave, 'SM')} busy, "
                f"{out.idle_sms_last_wave} idle")
            self.sm_title.setPos(RIGHT_X, PANEL_TOP - 0.3)
            more = ", the" if out.waves <= MAX_WAVE_CELLS else f" ({drawn} drawn),"
            self.wave_title.setText(
                f"{plural(out.waves, 'wave')}{more} last "
                f"{format_value(100 * out.last_wave_fill, '%')} full")
            self.wave_title.setPos(RIGHT_X, wave_top - 0.3)
            self.legend.set_at((RIGHT_X - 0.3, wave_top + 2.8))

        if out.waves == 0:
            message = ("Not even one block fits on an SM.", True)
        elif out.idle_sms_last_wave:
            message = (f"Tail effect: in the last wave {out.idle_sms_last_wave} of "
                       f"{out.sms} SMs have no block and wait for the other "
                       f"{out.busy_sms_last_wave}.", True)
        else:
            message = (f"Every SM gets at least one block in the last wave; "
                       f"{format_value(100 * out.tail_efficiency, '%')} of all block slots are "
                       f"used.", False)
        self.message.show_message(*message)


def _selection_pen() -> pg.QtGui.QPen:
    """The selected level is outlined in the text colour: magenta means over a limit."""
    return pg.mkPen(theme.color("text"), width=theme.line_width(2.5))
