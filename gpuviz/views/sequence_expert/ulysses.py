"""Figure 10.4: a tokens x heads tensor, sharded by tokens or by heads; All-to-all
switches between the two."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g, format_value, si_text
from gpuviz.core.plots import CellGrid, Legend, diagram_widget
from gpuviz.models.sequence_expert.ulysses import HEADS, ROWS, UlyssesOut

LABEL_W = 3.2  # width of the token labels left of the grid, in cells
CELL = 0.92  # a cell's share of its slot


def cell_rects() -> np.ndarray:
    """(ROWS * HEADS, 4) rectangles, row by row (token rows, head columns)."""
    rows, heads = np.divmod(np.arange(ROWS * HEADS), HEADS)
    return np.column_stack([heads, rows, np.full(rows.size, CELL), np.full(rows.size, CELL)])


def token_range(row: int, tokens: int) -> str:
    """The tokens of one grid row, in K = 1,024 (sequence lengths are written 64K)."""
    per_row = tokens / ROWS / 1024
    return f"{format_g(row * per_row, 3)}–{format_g((row + 1) * per_row, 3)}K"


class UlyssesView(FigureView):
    def build(self) -> None:
        self.switch = QPushButton("All-to-all")
        self.switch.setToolTip("Switch between sharding by tokens and sharding by heads")
        self.switch.setAccessibleName("All-to-all")
        self.switch.clicked.connect(self._all_to_all)
        self.controls.add_widget(self.switch)
        self.controls.add("sharding", "buttons")
        for name in ("ranks", "kv_heads", "rank", "tokens"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        self.headers = CellGrid(font_size=9)
        self.cells = CellGrid(font_size=9)
        for item in (self.headers, self.cells):
            self.box.addItem(item)
        self.legend = Legend(self.box, anchor=(1, 1))
        self.legend.add_box("selected rank", theme.color("highlight"))
        self.legend.add_box("other ranks", theme.color("compute"))
        self.legend.add_box("moves in the all-to-all", theme.color("compute"),
                            outline=theme.color("network"))
        self.box.sigResized.connect(self._fit_rows)
        self._fit_rows()
        self.add_plot(canvas)

    def _fit_rows(self) -> None:
        """Room under the grid for the legend, whatever the canvas's height (on a 1024x768
        projector it covered the last rank's cells)."""
        self.box.setRange(xRange=(-LABEL_W - 0.2, HEADS + 0.1),
                          yRange=(-1.2, self.legend.end_with_room(-1.2, ROWS + 0.1)),
                          padding=0)

    def _all_to_all(self) -> None:
        self.model.set("sharding", "sequence" if self.model.sharding == "heads" else "heads")

    def refresh(self) -> None:
        out: UlyssesOut = self.model.out
        if self.needs_update("headers", self.model.tokens):
            heads = [(h, -1.1, CELL, 0.9) for h in range(HEADS)]
            rows = [(-LABEL_W, r, LABEL_W - 0.15, CELL) for r in range(ROWS)]
            self.headers.set_cells(
                np.array([(-LABEL_W, -1.1, LABEL_W - 0.15, 0.9), *heads, *rows]),
                [None] * (1 + HEADS + ROWS),
                texts=["tokens", *(f"H{h + 1}" for h in range(HEADS)),
                       *(token_range(r, self.model.tokens) for r in range(ROWS))],
                text_color=theme.color("text"))
        owner = out.owner.ravel()
        selected = owner == out.rank
        fills = np.where(selected, theme.color("highlight"), theme.color("compute"))
        outlines = np.where(out.moved.ravel(), theme.color("network"), None)
        self.cells.set_cells(cell_rects(), list(fills), list(outlines),
                             texts=[str(r) for r in owner], outline_width=3)

        sent = out.sent[out.rank]
        text = (f"Rank {out.rank} holds {si_text(out.shard, 'B')} and sends "
                f"{si_text(sent, 'B')} of it "
                f"({format_value(100 * sent / out.shard, '%', decimals=1)}, (P − 1)/P) in "
                "each all-to-all.")
        self.message.show_message(out.warning or text, warn=bool(out.warning))
