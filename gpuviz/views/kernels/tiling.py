"""Figure 3.2: a tiled matmul, stepped one tile load at a time, and the shared-memory
budget of full-size tiles."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QGraphicsLineItem, QGraphicsRectItem, QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, plural
from gpuviz.core.plots import (
    CellGrid,
    Legend,
    diagram_widget,
    pen,
    plot_widget,
    text_item,
    untouched,
)
from gpuviz.core.text import TEXT_MARGIN
from gpuviz.models.kernels import KB, TiledMatmul

SIDE = 8.0  # data units of one matrix side, whatever N is, so the diagram never rescales
GAP = 1.6  # between the matrices, room for their titles
TITLE_Y = 0.05  # titles sit this far above their matrix
TOP_ROOM = 0.9  # least room above B (data units); more when B's title needs it (pixels)
X_RANGE = (-0.2, 2 * SIDE + GAP + 0.2)
Y_BOTTOM = 2 * SIDE + GAP + 0.2
CELL_GAP = 0.08  # fraction of a cell left empty around it
BAR_Y = 0.1
SHARED_RANGE_KB = 280.0
SMALL_FONT = 5.5  # point size of the read counters when N is large
SMALL_FONT_FROM_N = 16  # fixed x range of the bar; bigger needs are clipped and marked
BAR_HEIGHT = 0.6
BAR_TOP = BAR_Y + BAR_HEIGHT / 2
BAR_BOTTOM = BAR_Y - BAR_HEIGHT / 2
BAR_SHARE = 0.3  # of the bar plot's height at most, as when its y range was fixed
MIN_BAR_PIXELS = 8.0  # the bar's height when the plot is too short for it and its labels
# The opt-in limit's label goes right of its line when this much of the axis (KB) is left
# there, so it stays clear of the default limit's label (A100: 48 and 163 KB).
OPT_IN_LABEL_ROOM_KB = 60.0


def _square_rects(x0: float, y0: float, count: int) -> np.ndarray:
    """Rects of `count` x `count` equal squares (cells or tiles) filling one matrix."""
    size = SIDE / count
    index = np.arange(count * count)
    rects = np.empty((index.size, 4))
    rects[:, 0] = x0 + (index % count) * size
    rects[:, 1] = y0 + (index // count) * size
    rects[:, 2:] = size
    return rects


class TiledMatmulView(FigureView):
    step_label = "Next step"

    def build(self) -> None:
        self.controls.add("matrix_size")
        self.controls.add("tile_size")
        self.jump = QPushButton("Jump to end")
        self.jump.setToolTip("Run every remaining step: all output tiles done")
        self.jump.setAccessibleName("Jump to end")
        self.jump.clicked.connect(self.model.finish)
        self.controls.add_widget(self.jump)
        self.controls.add("full_tile")
        self.controls.add("gpu")

        canvas, self.box = diagram_widget()
        # Two grids that differ only in font size: the small one serves the biggest N.
        self.cells = CellGrid(font_size=8)
        self.small_cells = CellGrid(font_size=SMALL_FONT)
        self.tile_lines = CellGrid()
        self.loaded = CellGrid()
        for item in (self.cells, self.small_cells, self.tile_lines, self.loaded):
            self.box.addItem(item)
        origin_b = (SIDE + GAP, 0.0)
        origin_a = (0.0, SIDE + GAP)
        origin_c = (SIDE + GAP, SIDE + GAP)
        self.origins = {"a": origin_a, "b": origin_b, "c": origin_c}
        self.title_b = text_item("B: HBM reads", bold=True, anchor=(0, 1))
        self.title_b.setPos(origin_b[0], origin_b[1] - TITLE_Y)
        self.title_a = text_item("A: HBM reads", bold=True, anchor=(0, 1))
        self.title_a.setPos(origin_a[0], origin_a[1] - TITLE_Y)
        self.title_c = text_item("", bold=True, anchor=(0, 1))
        self.title_c.setPos(origin_c[0], origin_c[1] - TITLE_Y)
        for item in (self.title_a, self.title_b, self.title_c):
            self.box.addItem(item)
        # The key, in the empty corner left of B and above A.
        self.legend = Legend(self.box, anchor=(0, 0), size=8, at=(0.0, 0.0))
        self.legend.add_box("read from HBM (count)", theme.color("memory"))
        self.legend.add_box("not read yet", untouched())
        self.legend.add_box("tiles on chip now", theme.color("background"),
                            outline=theme.color("onchip"))
        self.legend.add_box("C tile written", theme.color("compute"))
        self.box.setRange(xRange=X_RANGE, yRange=(-TOP_ROOM, Y_BOTTOM), padding=0)
        # The texts have a fixed pixel size and the matrices follow the window: fit them
        # to each other when the diagram is resized (never on a refresh).
        self._title_total = 0  # the step count C's title was measured for
        self.box.sigResized.connect(self._fit_diagram)
        self.add_plot(canvas, 4)

        self.bar_plot = plot_widget("Shared memory per block for two bf16 tiles (KB)")
        item = self.bar_plot.getPlotItem()
        item.setXRange(0, SHARED_RANGE_KB, padding=0.01)
        item.setYRange(-1.0, 1.0, padding=0)  # until _fit_bar_rows sets it from the size
        item.getAxis("left").setTicks([[(BAR_Y, "4T²")]])
        item.showGrid(x=True, y=False, alpha=0.25)
        # Qt's own items (a rectangle, lines, plain texts): pyqtgraph's bar graph,
        # InfiniteLine and its label run Python on every repaint.
        self.bar = QGraphicsRectItem()
        item.addItem(self.bar)
        # Three rows: the bar's label, the bar, the limits' labels. The limit lines cross
        # the bar and their labels' row but not the bar label's row, so the bar label
        # never crosses a line; `_fit_bar_rows` keeps the text rows as tall as the text.
        self.bar_label = text_item(anchor=(0, 1), bold=True)
        self.bar_label.setPos(0, BAR_TOP)
        item.addItem(self.bar_label)
        self.default_line = QGraphicsLineItem(0, -1.0, 0, BAR_TOP)
        self.default_line.setPen(pen("text", 1.5, Qt.DashLine))
        self.default_label = text_item(role="text", size=None, anchor=(0, 0))
        self.opt_in_line = QGraphicsLineItem(0, -1.0, 0, BAR_TOP)
        self.opt_in_line.setPen(pen("highlight", 1.5))
        self.opt_in_label = text_item(role="highlight", size=None, anchor=(1, 0))
        for label in (self.default_label, self.opt_in_label):
            label.setPos(0, BAR_BOTTOM)
        for limit in (self.default_line, self.default_label, self.opt_in_line,
                      self.opt_in_label):
            item.addItem(limit)
        self._bar_rows: tuple[float, float] | None = None
        item.getViewBox().sigResized.connect(self._fit_bar_rows)
        self.bar_plot.setMinimumHeight(130)
        self.add_plot(self.bar_plot, 1)
        self._drawn_state: tuple[int, int, int] | None = None
        self._bar: tuple | None = None
        self._limits: tuple | None = None

    def _fit_diagram(self) -> None:
        """Fit the diagram's texts, which keep their pixel size, to its size (on a resize):
        room above B for B's title, in pixels; the titles scaled down together where the
        gap between the matrices is too small for them, and the legend moved left or
        scaled down where the corner beside B is too narrow for it."""
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0:
            return
        room = self.title_b.boundingRect().height() + TEXT_MARGIN + 2  # 2 px to spare
        x_span = X_RANGE[1] - X_RANGE[0]
        # Pixels per data unit if the room above B were exactly `room` pixels. Where that
        # room is more than the gap between the matrices, the titles are scaled down to
        # fit that gap anyway: B's title then gets as much room as the others.
        scale = max(min(width / x_span, (height - room) / (Y_BOTTOM + TITLE_Y)), 1e-3)
        top = max(TOP_ROOM, min(GAP, TITLE_Y + room / scale))
        self.box.setRange(xRange=X_RANGE, yRange=(-top, Y_BOTTOM), padding=0)
        (left, right), (upper, _) = self.box.viewRange()
        scale = width / (right - left)  # the scale pyqtgraph chose
        self._fit_titles(scale, right, upper)
        # The key shrinks where the corner beside B is too narrow or short for it.
        legend = self.legend.boundingRect()
        room_x = self.origins["b"][0] * scale - 8  # from x = 0 to B
        room_y = (self.origins["a"][1] * scale  # from y = 0 down to A's title
                  - self.title_a.boundingRect().height() * self.title_a.scale() - 12)
        self.legend.setScale(max(0.3, min(1.0, room_x / max(legend.width(), 1.0),
                                          room_y / max(legend.height(), 1.0))))

    def _fit_titles(self, scale: float, right: float, upper: float) -> None:
        """One scale for the three titles (1 where there is room): each stays inside the
        band above its matrix and left of the next matrix or the diagram's edge."""
        metrics = QFontMetricsF(self.title_c.font())
        total = self.model.out.total_steps
        self._title_total = total
        widths = {"a": self.title_a.boundingRect().width(),
                  "b": self.title_b.boundingRect().width(),
                  "c": metrics.horizontalAdvance(self._title_c_text(total, total))}
        ends = {"a": self.origins["c"][0] - 0.3, "b": right, "c": right}
        height = self.title_a.boundingRect().height() + TEXT_MARGIN + 2
        fit = min(1.0, (GAP - TITLE_Y) * scale / height,
                  (self.origins["b"][1] - TITLE_Y - upper) * scale / height)
        for key, text_width in widths.items():
            room = (ends[key] - self.origins[key][0]) * scale
            fit = min(fit, room / (text_width + TEXT_MARGIN + 2))
        for title in (self.title_a, self.title_b, self.title_c):
            title.set_scale(max(fit, 0.05))

    @staticmethod
    def _title_c_text(step: int, total: int) -> str:
        return f"C = A·B: step {step} of {total}"

    def _fit_bar_rows(self) -> None:
        """Give the bar plot's text rows at least the height of their text (on a resize):
        the y range is chosen so that the bar gets what is left, up to BAR_SHARE of the
        plot's height; the rest is shared by the two text rows."""
        height = self.bar_plot.getPlotItem().getViewBox().height()
        if height <= 0:
            return
        above = self.bar_label.boundingRect().height() + TEXT_MARGIN + 1
        below = self.default_label.boundingRect().height() + TEXT_MARGIN + 1
        bar = max(min(height - above - below, BAR_SHARE * height), MIN_BAR_PIXELS)
        spare = max(height - above - below - bar, 0.0) / 2
        above, below = above + spare, below + spare
        scale = bar / BAR_HEIGHT
        rows = (BAR_BOTTOM - below / scale, BAR_TOP + above / scale)
        if rows != self._bar_rows:
            self._bar_rows = rows
            self.bar_plot.getPlotItem().setYRange(*rows, padding=0)
            for line in (self.default_line, self.opt_in_line):
                line.setLine(0, rows[0], 0, BAR_TOP)

    def refresh(self) -> None:
        out = self.model.out
        # The matrices change only with the step and the tiling; the full-size tile slider
        # and the GPU only move the shared-memory bar.
        state = (out.n, out.t, out.steps)
        if state != self._drawn_state:
            self._drawn_state = state
            self._draw_matrices(out)
        self._draw_shared_memory()

    def _draw_matrices(self, out: TiledMatmul) -> None:
        n, m = out.n, out.tiles
        muted = untouched()
        # Stronger orange the more often an element was read; grey while never read.
        shades = [muted] + [theme.color("memory", 70 + int(150 * r / m))
                            for r in range(1, m + 1)]
        numbers = [str(r) for r in range(m + 1)]

        rects, fills, texts = [], [], []
        for key, reads in (("a", out.reads_a), ("b", out.reads_b)):
            rects.append(_square_rects(*self.origins[key], n))
            levels = reads.ravel().tolist()
            fills.extend(shades[r] for r in levels)
            texts.extend(numbers[r] for r in levels)
        rects.append(_square_rects(*self.origins["c"], n))
        c_tiles = np.where(out.c_done, 1, 0)
        if out.current_c is not None:
            c_tiles[out.current_c] = 2
        c_cells = np.kron(c_tiles, np.ones((out.t, out.t), dtype=int)).ravel()
        c_colors = (muted, theme.color("compute"), theme.color("onchip"))
        fills.extend(c_colors[v] for v in c_cells)
        texts.extend([""] * c_cells.size)
        all_rects = np.concatenate(rects)
        inset = all_rects[:, 2:3] * CELL_GAP / 2
        all_rects[:, :2] += inset
        all_rects[:, 2:] -= 2 * inset
        shown, hidden = ((self.small_cells, self.cells) if n >= SMALL_FONT_FROM_N
                         else (self.cells, self.small_cells))
        shown.set_cells(all_rects, fills, texts=texts)
        hidden.set_cells(np.empty((0, 4)), [])

        tile_rects = np.concatenate([_square_rects(*self.origins[k], m) for k in "abc"])
        self.tile_lines.set_cells(tile_rects, [None] * len(tile_rects),
                                  outlines=[theme.color("muted")] * len(tile_rects),
                                  outline_width=1.0)

        if out.current_c is not None:
            i, j = out.current_c
            k = out.current_k
            size = SIDE / m
            ax, ay = self.origins["a"]
            bx, by = self.origins["b"]
            cx, cy = self.origins["c"]
            loaded = np.array([[ax + k * size, ay + i * size, size, size],
                               [bx + j * size, by + k * size, size, size],
                               [cx + j * size, cy + i * size, size, size]])
            colors = [theme.color("onchip")] * 3  # A and B in shared memory, C in registers
        else:
            loaded, colors = np.empty((0, 4)), []
        self.loaded.set_cells(loaded, [None] * len(colors), outlines=colors, outline_width=3.5)

        self.title_c.setText(self._title_c_text(out.steps, out.total_steps))
        if out.total_steps != self._title_total:  # C's title may now be wider
            self._fit_diagram()

    def _draw_shared_memory(self) -> None:
        m = self.model.out.tiles
        need, default_limit, opt_in_limit = self.model.shared_memory()
        need_kb = need / KB
        over = need > opt_in_limit
        role = "highlight" if over else "onchip"
        shown = min(need_kb, SHARED_RANGE_KB)
        bar = (max(shown, 0.5), role)
        if bar != self._bar:
            self._bar = bar
            self.bar.setRect(QRectF(0.0, BAR_Y - BAR_HEIGHT / 2, bar[0], BAR_HEIGHT))
            self.bar.setBrush(theme.color(role))
            self.bar.setPen(pg.mkPen(theme.color(role)))
        marker = " ▸" if need_kb > SHARED_RANGE_KB else ""
        self.bar_label.setText(f" T = {self.model.full_tile}: {format_value(need_kb, 'KB')}"
                               f"{marker}")
        limits = (default_limit, opt_in_limit)
        if limits != self._limits:
            self._limits = limits
            for line, label, limit, name in (
                    (self.default_line, self.default_label, default_limit, "default"),
                    (self.opt_in_line, self.opt_in_label, opt_in_limit, "opt-in")):
                line.setPos(limit / KB, 0)
                label.setPos(limit / KB, BAR_BOTTOM)
                label.setText(f"{name} {format_value(limit / KB, 'KB')}")
            room = SHARED_RANGE_KB - opt_in_limit / KB >= OPT_IN_LABEL_ROOM_KB
            self.opt_in_label.setAnchor((0, 0) if room else (1, 0))

        tile = self.model.full_tile
        asked, n = int(self.model.tile_size), self.model.n
        if asked > n:
            self.message.show_message(
                f"A {asked}×{asked} tile does not fit a {n}×{n} matrix: the stepper uses "
                f"T = {n}, one tile covering the whole matrix. Pick a tile of at most N.",
                warn=True)
        elif over:
            self.message.show_message(
                f"Two {tile}×{tile} bf16 tiles need {format_value(need_kb, 'KB')}, more than "
                f"the {format_value(opt_in_limit / KB, 'KB')} one block may use: this kernel "
                "cannot launch.", warn=True)
        elif need > default_limit:
            self.message.show_message(
                f"{format_value(need_kb, 'KB')} is above the "
                f"{format_value(default_limit / KB, 'KB')} default, so the kernel must opt in "
                "(cudaFuncSetAttribute) to get it.")
        else:
            self.message.show_message(
                f"Each element of A and B leaves HBM N/T = {plural(m, 'time')} over the whole "
                f"kernel; {format_value(need_kb, 'KB')} of shared memory for T = {tile} fits "
                "the default limit.")

