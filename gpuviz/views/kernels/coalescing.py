"""Figure 3.3: one warp's global load and the 32-byte sectors it makes the GPU fetch."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import (
    AXIS_TITLE_POINTS,
    CellGrid,
    Legend,
    brush,
    diagram_widget,
    pen,
    plot_widget,
    text_item,
    untouched,
)
from gpuviz.models.kernels import (
    ELEMENT_BYTES,
    SECTOR_BYTES,
    WARP_SIZE,
    CoalescingModel,
    warp_load,
)

ROW = 32  # elements drawn per row (128 bytes, four sectors)
PER_SECTOR = SECTOR_BYTES // ELEMENT_BYTES
SECTOR_GAP = 0.35  # extra space between sectors, so their borders show
LABEL_WIDTH = 3.2  # room for the byte address at the left of each row
# Rows shown move in these steps, never one by one. Past the last step the rows below are
# left out (and said so): 32 rows of 32 boxes would be too small to read.
ROW_STEPS = (2, 4, 8)
STRIDE_MAX = int(CoalescingModel.parameter("stride").maximum)
STRIDES = np.arange(1, STRIDE_MAX + 1)
WIDTH = ROW + (ROW // PER_SECTOR - 1) * SECTOR_GAP
BAR_WIDTH = 0.7
# Room under the rows (cells): the two lines of the key, then the "not drawn" line under
# them (the key is 2.1 cells tall in the projector theme at 1280 x 800).
Y_BELOW = 4.4
MORE_Y = 3.0
# The bar chart's y-axis title: the longest that fits along the axis (see _fit_y_title).
Y_TITLES = ("Sectors per load", "Sectors")  # a warp's load: the caption says so
# The diagram's range: the largest case (ROW_STEPS[-1] rows, the key and the note under
# them), so every row count shows at one zoom; fewer rows are centred in it.
X_RANGE = (-LABEL_WIDTH, WIDTH + 0.2)
Y_RANGE = (-1.4, ROW_STEPS[-1] + Y_BELOW)
SWEEP_SHARE = 0.4  # of the plots' height the sweep keeps, however much the diagram wants


def _element_x(column: np.ndarray) -> np.ndarray:
    return column + (column // PER_SECTOR) * SECTOR_GAP


class CoalescingView(FigureView):
    def build(self) -> None:
        self.controls.add("pattern")
        self.controls.add("stride")

        self.canvas, self.box = diagram_widget()
        self.box.setRange(xRange=X_RANGE, yRange=Y_RANGE, padding=0.02)
        self.box.sigResized.connect(self._fit_canvas)
        # Everything in the diagram hangs from one container: when the number of rows
        # steps, moving it is enough (the range stays), and far cheaper than a new range.
        self.content = QGraphicsRectItem()
        self.content.setPen(QPen(Qt.NoPen))
        self.content.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents)
        self.box.addItem(self.content)
        self.elements = CellGrid(font_size=7)
        self.sectors = CellGrid()
        self.labels = CellGrid(font_size=7, fit_texts=False)  # addresses, no fill
        self.title = text_item(anchor=(0, 1), bold=True)
        self.title.setPos(0, -0.15)
        self.more = text_item(role="muted", size=9, anchor=(0, 0))
        for item in (self.elements, self.sectors, self.labels, self.more, self.title):
            item.setParentItem(self.content)
        # The key under the rows (moved with them in refresh).
        self.key = Legend(self.box, anchor=(0, 0), columns=3, size=9, at=(0.0, 0.0))
        self.key.add_box("read by thread n", theme.color("memory"))
        self.key.add_box("fetched, unused", theme.color("memory_light"), hatch=True)
        self.key.add_box("one 32-byte sector", theme.color("background"),
                         outline=theme.color("text"))

        # Sectors per warp load for every stride, the current one marked.
        self.sweep_plot = plot_widget("Stride (elements)", Y_TITLES[0])
        item = self.sweep_plot.getPlotItem()
        self._y_title = Y_TITLES[0]
        item.getViewBox().sigResized.connect(self._fit_y_title)
        item.getViewBox().sigResized.connect(self._fit_canvas)  # a new height to share
        item.setXRange(0.5, STRIDE_MAX + 0.5, padding=0)
        item.setYRange(0, WARP_SIZE + 8, padding=0)  # room for the number over a bar
        self.sweep = pg.BarGraphItem(x=STRIDES, height=np.zeros(STRIDE_MAX), width=BAR_WIDTH,
                                     brush=brush("memory_light"), pen=pen("memory_light", 1))
        item.addItem(self.sweep)
        # The current stride's bar and its number: Qt's own items, which run no Python
        # when painted (pyqtgraph's bar graph and TextItem do).
        self.current = QGraphicsRectItem()
        self.current.setBrush(brush("memory"))
        self.current.setPen(pen("text", 2))
        item.addItem(self.current)
        self.current_label = text_item(anchor=(0.5, 1), size=13, bold=True)
        item.addItem(self.current_label)
        # The diagram as tall as its largest case needs at its width (_fit_canvas): eight
        # rows of boxes (stride 8 and up) then fill the canvas's width, big enough for
        # their thread numbers at lecture sizes; the sweep takes the rest.
        self.add_plot(self.canvas, 1)
        self.add_plot(self.sweep_plot, 1)
        self._rows = 0
        self._sweep_offset = -1

    def _fit_y_title(self) -> None:
        """The longest y-axis title that is no longer than the axis (on a resize): a
        title longer than its axis is cut off by the plot's edges."""
        item = self.sweep_plot.getPlotItem()
        length = item.getViewBox().height()
        if length <= 0:
            return
        metrics = QFontMetricsF(theme.font(AXIS_TITLE_POINTS))
        # The drawn title is wider than its text by its item's margins.
        label = item.getAxis("left").label
        margins = label.boundingRect().width() - metrics.horizontalAdvance(self._y_title)
        title = next((text for text in Y_TITLES
                      if metrics.horizontalAdvance(text) + margins <= length), Y_TITLES[-1])
        if title != self._y_title:
            self._y_title = title
            item.getAxis("left").setLabel(title)

    def _fit_canvas(self) -> None:
        """Give the diagram the height its range needs at the canvas's width (on a
        resize, never in refresh), leaving the sweep at least SWEEP_SHARE: the width then
        sets the zoom for every row count, and the cells keep their size as the stride
        steps the rows (they shrank at stride 8 wherever the height set the zoom)."""
        x_span = X_RANGE[1] - X_RANGE[0]
        y_span = Y_RANGE[1] - Y_RANGE[0]
        chrome = self.canvas.height() - self.box.height()  # the canvas's margins
        shared = self.canvas.height() + self.sweep_plot.height()
        height = min(math.ceil(self.box.width() * y_span / x_span + chrome) + 1,
                     int(shared * (1 - SWEEP_SHARE)))
        if height > 0 and height != self.canvas.maximumHeight():
            self.canvas.setFixedHeight(height)

    def refresh(self) -> None:
        out = self.model.out
        last = int(out.elements.max())
        needed = last // ROW + 1
        rows = next((r for r in ROW_STEPS if r >= needed), ROW_STEPS[-1])
        count = rows * ROW
        drawn = out.elements < count
        drawn_sectors = out.sectors[out.sectors * PER_SECTOR < count]

        index = np.arange(count)
        rects = np.empty((count, 4))
        rects[:, 0] = _element_x(index % ROW)
        rects[:, 1] = index // ROW
        rects[:, 2:] = 0.9
        fetched = np.zeros(count, dtype=bool)
        for sector in drawn_sectors:
            start = sector * PER_SECTOR
            fetched[start:start + PER_SECTOR] = True
        thread_of = np.full(count, -1)
        thread_of[out.elements[drawn]] = np.arange(WARP_SIZE)[drawn]
        solid, pale, idle = theme.color("memory"), theme.color("memory_light"), untouched()
        fills = [solid if t >= 0 else (pale if f else idle)
                 for t, f in zip(thread_of, fetched, strict=True)]
        texts = [str(t) if t >= 0 else "" for t in thread_of]
        # Bytes fetched for nothing are waste: hatched, as idle hardware is.
        self.elements.set_cells(rects, fills, texts=texts,
                                hatch=[t < 0 and f for t, f in zip(thread_of, fetched,
                                                                   strict=True)])

        sector_rects = np.empty((drawn_sectors.size, 4))
        start = drawn_sectors * PER_SECTOR
        sector_rects[:, 0] = _element_x(start % ROW) - 0.08
        sector_rects[:, 1] = start // ROW - 0.08
        sector_rects[:, 2] = PER_SECTOR - 0.1 + 0.16
        sector_rects[:, 3] = 0.9 + 0.16
        self.sectors.set_cells(sector_rects, [None] * drawn_sectors.size,
                               outlines=[theme.color("text")] * drawn_sectors.size,
                               outline_width=1.5)

        if rows != self._rows:
            # The row addresses and the view range change only with the number of rows.
            self._rows = rows
            label_rects = np.column_stack([np.full(rows, -LABEL_WIDTH), np.arange(rows),
                                           np.full(rows, LABEL_WIDTH - 0.3), np.full(rows, 0.9)])
            every = 1 if rows <= ROW_STEPS[2] else 4
            self.labels.set_cells(label_rects, [None] * rows,
                                  texts=[f"{r * ROW * ELEMENT_BYTES} B" if r % every == 0
                                         else "" for r in range(rows)],
                                  text_color=theme.color("muted"))
            self.more.setPos(0, rows + MORE_Y)
            self.content.setPos(0, (ROW_STEPS[-1] - rows) / 2)
        self.key.set_at((0.0, rows + 0.3 + self.content.pos().y()))
        hidden = int(np.count_nonzero(~drawn))
        self.more.setText(
            f"Not drawn: {needed - rows} more rows (threads {WARP_SIZE - hidden}–"
            f"{WARP_SIZE - 1}, {out.sectors.size - drawn_sectors.size} more sectors)"
            if hidden else "")  # short: one line across the diagram

        offset = self.model.offset
        if offset != self._sweep_offset:
            self._sweep_offset = offset
            self.sweep.setOpts(height=[warp_load(int(s), offset).sectors.size for s in STRIDES])
        sectors = int(out.sectors.size)
        self.current.setRect(QRectF(self.model.stride - BAR_WIDTH / 2, 0, BAR_WIDTH, sectors))
        self.current_label.setText(str(sectors))
        # Over the bar; the last bar's number ends at the bar's right side, inside the plot.
        if self.model.stride < STRIDE_MAX:
            self.current_label.setAnchor((0.5, 1))
            self.current_label.setPos(self.model.stride, sectors + 0.6)
        else:
            self.current_label.setAnchor((1, 1))
            self.current_label.setPos(self.model.stride + BAR_WIDTH / 2, sectors + 0.6)
        self.title.setText(f"{sectors} sectors: {format_value(out.bytes_fetched, 'B')} fetched "
                           f"for {format_value(out.bytes_used, 'B')} used "
                           f"({format_value(100 * out.efficiency, '%')})")
        wasted = out.bytes_fetched - out.bytes_used
        if sectors <= out.ideal_sectors:
            self.message.show_message(
                f"Coalesced: the warp's {out.bytes_used} B come in {sectors} sectors and "
                "every fetched byte is used.")
        else:
            self.message.show_message(
                f"{sectors} sectors where {out.ideal_sectors} would do: "
                f"{format_value(wasted, 'B')} of the {format_value(out.bytes_fetched, 'B')} "
                "fetched are thrown away.", warn=out.efficiency < 0.5)
