"""Figure 3.4: the 32 shared-memory banks, the words one warp reads, and the conflicts."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QGraphicsItem

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, Legend, diagram_widget, opaque_blend, text_item, untouched
from gpuviz.core.text import TextLayer
from gpuviz.models.kernels import BANKS, TILE_ROWS, BankAccess

ROWS = 33  # drawn word rows: a 32 x 33 tile fills 33 rows of 32 banks
LABEL_WIDTH = 3.0  # room for the word address at the left of a row
BAR_TOP = ROWS + 1.5  # bars of distinct words per bank, under the grid
BAR_HEIGHT = 9.0
BAR_BASE = BAR_TOP + BAR_HEIGHT
BAR_SCALE = BANKS  # one scale, 0 to 32 words, so a 2-way conflict looks smaller than 32
CELL = 0.9  # drawn fraction of a cell
THREAD_POINTS = 7  # the thread numbers in the words read
# The key's name for the words read, with and without their thread numbers shown
WORD_READ = {True: "word read (thread number)", False: "word read by the warp"}


class BankConflictView(FigureView):
    def build(self) -> None:
        self.controls.add("pattern")

        canvas, self.box = diagram_widget()
        # Cells may be wider than tall: the grid has to fit 33 rows above the bars.
        self.box.setAspectLocked(False)
        # The tile layout changes only between 32 and 33 words per row; the words the warp
        # reads (at most 32 cells) are drawn on top by a grid of their own.
        # One grid per tile layout (32 or 33 words per row), drawn once; the pattern
        # only picks which one shows.
        self.words = {width: CellGrid() for width in (BANKS, BANKS + 1)}
        self.read = CellGrid(font_size=THREAD_POINTS)
        self.bars = CellGrid()
        # The tile changes at most with the padding: keep it as a pixmap, so a new access
        # pattern repaints only the words read and the bars.
        for static in self.words.values():
            static.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self._layout_width = 0
        for width, grid in self.words.items():
            self._draw_tile(grid, width)
            grid.setVisible(False)
        for item in (*self.words.values(), self.read, self.bars):
            self.box.addItem(item)

        # Bank numbers over the grid (every other one, or fewer, where two digits would
        # run together: a 1024x768 projector), word addresses every fourth row, all kept
        # inside the canvas.
        self.labels = TextLayer(QRectF(-LABEL_WIDTH, -1.6, LABEL_WIDTH + BANKS + 0.2,
                                       ROWS + 1.7), keep_inside=True, flip=False)
        self.labels.add("bank →", role="muted", size=8, anchor=(1, 0.5)).setPos(-0.1, -0.6)
        for bank in range(BANKS):
            self.labels.add(str(bank), role="muted", size=7, anchor=(0.5, 0.5),
                            give_way=True).setPos(bank + CELL / 2, -0.6)
        for row in range(0, ROWS, 4):
            self.labels.add(f"w{row * BANKS}", role="muted", size=7,
                            anchor=(1, 0.5)).setPos(-0.2, row + CELL / 2)
        # The conflict's degree over the busiest bank's bar: the number the figure is about.
        self.degree = text_item("", size=13, bold=True, anchor=(0, 0))
        for item in (self.labels, self.degree):
            self.box.addItem(item)
        self.key = Legend(self.box, anchor=(0, 0), columns=2, size=9,
                          at=(-LABEL_WIDTH, BAR_BASE + 0.2))
        self.key.add_box(WORD_READ[True], theme.color("onchip"), outline=theme.color("text"))
        self.key.add_box("padding word, never read", theme.color("neutral"), hatch=True)
        self.key.add_box(f"distinct words per bank (0 to {BAR_SCALE})", theme.color("compute"))
        self.key.add_box("the conflicting bank", theme.color("highlight"))
        self.box.sigResized.connect(self._fit_rows)
        self._fit_rows()
        self.add_plot(canvas)

    def _fit_rows(self) -> None:
        """Room under the bars for the key, whatever the canvas's height (on a resize)."""
        bottom = self.key.end_with_room(-1.6, BAR_BASE + 0.2)
        self.box.setRange(xRange=(-LABEL_WIDTH, BANKS + 0.2), yRange=(-1.6, bottom),
                          padding=0.01)
        self._name_words_read()

    def _name_words_read(self) -> None:
        """The key names the thread numbers only where a row is tall enough to show them
        (the lecture look's text is not)."""
        row_px = CELL / (self.box.viewPixelSize()[1] or 1.0)
        numbers = QFontMetricsF(theme.font(THREAD_POINTS)).height() <= row_px + 2
        self.key.set_label(0, WORD_READ[numbers])

    def apply_look(self) -> None:
        super().apply_look()
        self._name_words_read()  # the numbers' text size changed

    def refresh(self) -> None:
        out = self.model.out
        if out.row_words != self._layout_width:
            self._layout_width = out.row_words
            for width, grid in self.words.items():
                grid.setVisible(width == out.row_words)
        readers: dict[int, list[int]] = {}
        for thread, word in enumerate(out.words.tolist()):
            readers.setdefault(word, []).append(thread)
        words = np.array(list(readers), dtype=float)
        read_rects = np.column_stack([words % BANKS, words // BANKS,
                                      np.full(words.size, CELL), np.full(words.size, CELL)])
        # A word several threads share is sent once to all of them (broadcast).
        texts = [str(t[0]) if len(t) == 1 else "all" for t in readers.values()]
        # Framed as well as yellow: the tile's greys are about as light as the yellow.
        self.read.set_cells(read_rects, [theme.color("onchip")] * words.size,
                            outlines=[theme.color("text")] * words.size, texts=texts,
                            outline_width=1.0)

        heights = BAR_HEIGHT * out.distinct_per_bank / BAR_SCALE
        bar_rects = np.column_stack([np.arange(BANKS) + 0.1, BAR_BASE - heights,
                                     np.full(BANKS, CELL - 0.2), heights])
        hot = out.degree > 1
        bar_fills = [theme.color("highlight" if hot and d == out.degree else "compute")
                     for d in out.distinct_per_bank]
        busiest = int(np.argmax(out.distinct_per_bank))
        base_rect = [[0, BAR_BASE, BANKS - 0.1, 0.05]]
        self.bars.set_cells(np.concatenate([bar_rects, base_rect]),
                            bar_fills + [theme.color("muted")])
        # Beside the top of the busiest bank's bar: over a short bar, below the top of a
        # tall one, so it stays in the bars' band, clear of the grid.
        self.degree.setText(f"{out.degree}-way" if hot else str(out.degree))
        right = busiest < BANKS - 6
        tall = heights[busiest] > BAR_HEIGHT / 2
        self.degree.setAnchor((0 if right else 1, 0 if tall else 1))
        self.degree.setPos(busiest + CELL if right else busiest, BAR_BASE - heights[busiest])

        self._say(out, busiest)

    @staticmethod
    def _draw_tile(grid: CellGrid, width: int) -> None:
        """The words of the 32-row tile shaded by tile row, padding words in grey."""
        index = np.arange(ROWS * BANKS)
        rects = np.column_stack([index % BANKS, index // BANKS,
                                 np.full(index.size, CELL), np.full(index.size, CELL)])
        tile_row, tile_col = np.divmod(index, width)
        # Tile rows alternate two faint greys (data at rest); padding is waste: hatched.
        shades = (untouched(), opaque_blend("neutral", 110))
        padding = theme.color("neutral")
        fills = [None if r >= TILE_ROWS else (padding if c >= BANKS else shades[r % 2])
                 for r, c in zip(tile_row.tolist(), tile_col.tolist(), strict=True)]
        grid.set_cells(rects, fills, hatch=[fill is padding for fill in fills])

    def _say(self, out: BankAccess, busiest: int) -> None:
        if out.degree > 1:
            self.message.show_message(
                f"{out.degree}-way bank conflict: bank {busiest} holds {out.degree} different "
                f"words the warp wants, so the read is split into {out.transactions} "
                "transactions, one after the other.", warn=True)
        elif out.broadcast:
            self.message.show_message(
                "Every thread reads the same word: the bank sends it once to all of them "
                "(broadcast). One transaction, no conflict.")
        else:
            self.message.show_message(
                "Each word sits in its own bank: all 32 are delivered in one transaction, "
                "conflict-free.")
