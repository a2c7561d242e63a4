"""Figure 10.4: a tokens x heads tensor, sharded by tokens or by heads; All-to-all
switches between the two."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_g, format_value, si_text
from gpuviz.core.plots import CellGrid, Legend, diagram_widget
from gpuviz.core.text import TEXT_MARGIN, TextLayer
from gpuviz.models.sequence_expert.ulysses import HEADS, ROWS, UlyssesModel, UlyssesOut

CELL = 0.86  # a cell's share of its slot: the gap keeps neighbours' aqua frames apart
LABEL_SIZE = 9
HEADER_Y = -0.6  # centre of the header row
TOP = -1.2  # the range's top: the header row
GAP = 0.2  # between the row labels and the grid, in cells


def token_text(tokens: float) -> tuple[str, str]:
    """A token count and its unit, in K = 1,024 and M = 1,024² (lengths are written 64K)."""
    for unit, size in (("M", 1024 ** 2), ("K", 1024)):
        if tokens >= size:
            return format_g(tokens / size, 3), unit
    return format_g(tokens, 3), ""


def token_range(row: int, tokens: int) -> str:
    """The tokens of one grid row: "64–128K", "960K–1M", "0–256", "768–1K"."""
    (low, low_unit), (high, high_unit) = (token_text(row * tokens / ROWS),
                                          token_text((row + 1) * tokens / ROWS))
    if low_unit == high_unit or low == "0":
        return f"{low}–{high}{high_unit}"
    return f"{low}{low_unit}–{high}{high_unit}"


def widest_labels() -> list[str]:
    """Row labels of sequence lengths across the slider, to measure the room they need."""
    param = UlyssesModel.parameter("tokens")
    sizes = np.geomspace(param.minimum, param.maximum, 41).round().astype(int)
    return [token_range(r, int(n)) for n in sizes for r in range(ROWS)]


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
        self.cells = CellGrid(font_size=9)
        self.box.addItem(self.cells)
        # The labels are a text layer, not cells: a cell leaves out a text that does not
        # fit it, and on a 1920x1080 projector the heads' and rows' names vanished.
        self.labels = TextLayer(QRectF(-40, TOP, 40 + HEADS + 40, ROWS - TOP + 40))
        self.box.addItem(self.labels)
        self.tokens_label = self.labels.add("tokens", size=LABEL_SIZE, anchor=(1, 0.5))
        self.tokens_label.setPos(-GAP, HEADER_Y)
        for h in range(HEADS):
            self.labels.add(f"H{h + 1}", size=LABEL_SIZE,
                            anchor=(0.5, 0.5)).setPos(h + CELL / 2, HEADER_Y)
        self.row_labels = [self.labels.add("", size=LABEL_SIZE, anchor=(1, 0.5))
                           for _ in range(ROWS)]
        for r, label in enumerate(self.row_labels):
            label.setPos(-GAP, r + CELL / 2)
        self._widest = widest_labels()
        self.legend = Legend(self.box, anchor=(1, 1))
        self.legend.add_box("selected rank", theme.color("highlight"))
        self.legend.add_box("other ranks", theme.color("compute"))
        self.legend.add_box("moves in the all-to-all", theme.color("compute"),
                            outline=theme.color("network"))
        self.box.sigResized.connect(self._fit)
        self._fit()
        self.add_plot(canvas)

    def _fit(self) -> None:
        """The range: the grid as large as the canvas allows, with room on its left for
        the widest row label and the legend beside it or under it, whichever leaves the
        cells larger (measured on a resize or a new look, never while a control moves)."""
        width, height = self.box.width(), self.box.height()
        if width < 2 or height < 2:
            return
        metrics = QFontMetricsF(theme.font(LABEL_SIZE))
        label_px = max(metrics.horizontalAdvance(t) for t in self._widest) + 2 * TEXT_MARGIN
        legend = self.legend.boundingRect()
        legend_w, legend_h = legend.width() + 12, legend.height() + 12
        span_x, span_y = HEADS + 0.1 + GAP, ROWS + 0.1 - TOP
        beside = min(height / span_y, (width - label_px - legend_w) / span_x)
        under = min((height - legend_h) / span_y, (width - label_px) / span_x)
        scale = max(beside, under, 1.0)
        left = -GAP - label_px / scale
        right, bottom = HEADS + 0.1, ROWS + 0.1
        if beside >= under:
            right += legend_w / scale
        else:
            bottom += legend_h / scale
        self.box.setRange(xRange=(left, right), yRange=(TOP, bottom), padding=0)

    def _all_to_all(self) -> None:
        self.model.set("sharding", "sequence" if self.model.sharding == "heads" else "heads")

    def refresh(self) -> None:
        out: UlyssesOut = self.model.out
        if self.needs_update("look", theme.font_factor()):  # the legend and labels grew
            self._fit()
        if self.needs_update("headers", self.model.tokens):
            for r, label in enumerate(self.row_labels):
                label.setText(token_range(r, self.model.tokens))
        owner = out.owner.ravel()
        selected = owner == out.rank
        fills = np.where(selected, theme.color("highlight"), theme.color("compute"))
        outlines = np.where(out.moved.ravel(), theme.color("network"), None)
        self.cells.set_cells(cell_rects(), list(fills), list(outlines),
                             texts=[str(r) for r in owner], outline_width=2)

        sent = out.sent[out.rank]
        text = (f"Rank {out.rank} holds {si_text(out.shard, 'B')} and sends "
                f"{si_text(sent, 'B')} of it "
                f"({format_value(100 * sent / out.shard, '%', decimals=1)}, (P − 1)/P) in "
                "each all-to-all.")
        warning = out.rank_warning or out.warning
        self.message.show_message(warning or text, warn=bool(warning))


def cell_rects() -> np.ndarray:
    """(ROWS * HEADS, 4) rectangles, row by row (token rows, head columns)."""
    rows, heads = np.divmod(np.arange(ROWS * HEADS), HEADS)
    return np.column_stack([heads, rows, np.full(rows.size, CELL), np.full(rows.size, CELL)])
