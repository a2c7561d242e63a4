"""Figure 10.1: ring attention's score matrix, round by round, and each rank's work."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import (
    CellGrid,
    Legend,
    diagram_widget,
    opaque_blend,
    plot_widget,
    untouched,
)
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.sequence_expert.ring_attention import (
    CHUNK_TOKENS,
    RANKS_MAX,
    RingAttentionOut,
)

CHUNK_GAP = 0.1  # of a cell, between two chunks
LABEL_MARGIN = 0.3  # cells between a label and the grid
BAR_H = 0.6
EARLIER_ALPHA = 110  # of 255: the faint blue of scores computed in earlier rounds
BAR_ROOM = 2.0  # the bars' axis runs to 2 full blocks: the legend sits past them (at
# 1.5 it covered the ends of full bars on a 1024x768 projector)


def _positions(tokens: int) -> np.ndarray:
    """Where each token's row (or column) starts: chunks apart by CHUNK_GAP."""
    index = np.arange(tokens)
    return index + (index // CHUNK_TOKENS) * CHUNK_GAP


class RingAttentionView(FigureView):
    step_label = "Next round"

    def build(self) -> None:
        for name in ("ranks", "causal", "assignment"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        canvas, self.box = diagram_widget()
        self.cells = CellGrid()
        self.box.addItem(self.cells)
        self.text = TextLayer(QRectF(-100, -100, 200, 200))
        chunks = 2 * RANKS_MAX
        # give_way: where the cells are too small for every rank's name (8 ranks on a
        # 1024x768 projector), every other one shows instead of all of them overprinted.
        self.row_labels = [self.text.add(size=9, bold=True, anchor=(1, 0.5), give_way=True)
                           for _ in range(chunks)]
        self.column_labels = [self.text.add(size=9, role="muted", anchor=(0.5, 1),
                                            give_way=True)
                              for _ in range(chunks)]
        self.corner_label = self.text.add("queries ↓  keys →", size=9, role="muted",
                                          anchor=(1, 1))
        self.box.addItem(self.text)
        self.legend = legend = Legend(self.box, anchor=(1, 1))
        legend.add_box("computed this round", theme.color("compute"))
        legend.add_box("computed before", opaque_blend("compute", EARLIER_ALPHA))
        legend.add_box("not yet", untouched())
        legend.add_box("masked (causal)", theme.color("neutral"))
        self.add_plot(canvas, 5)
        self._end = 0.0
        self.box.sigResized.connect(self._fit)

        self.bars_plot = plot_widget("Scores each rank computes this round")
        item = self.bars_plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        self.bars = CellGrid()
        item.addItem(self.bars)
        bar_legend = Legend(item, anchor=(1, 1))
        bar_legend.add_box("work", theme.color("compute"))
        bar_legend.add_box("waits for the busiest rank", theme.color("idle"))
        item.getViewBox().sigResized.connect(self._fit_ticks)
        self._ticks_every = 0
        self.add_plot(self.bars_plot, 2)

    def _place(self, out: RingAttentionOut) -> None:
        """Rectangles and labels for P ranks (when P or the assignment changes)."""
        tokens = len(out.rounds)
        pos = _positions(tokens)
        rows, cols = np.divmod(np.arange(tokens * tokens), tokens)
        self._rects = np.column_stack([pos[cols], pos[rows], np.full(len(rows), 0.92),
                                       np.full(len(rows), 0.92)])
        chunk_starts = pos[::CHUNK_TOKENS]
        for c, (row, column) in enumerate(zip(self.row_labels, self.column_labels,
                                              strict=True)):
            shown = c < len(out.owners)
            row.setVisible(shown)
            column.setVisible(shown)
            if shown:
                rank = int(out.owners[c])
                row.setText(f"rank {rank}")
                row.setPos(-LABEL_MARGIN, chunk_starts[c] + CHUNK_TOKENS / 2)
                column.setText(str(rank))
                column.setPos(chunk_starts[c] + CHUNK_TOKENS / 2, -0.2)
        self._end = pos[-1] + 1
        self.corner_label.setPos(-LABEL_MARGIN, -LABEL_MARGIN)
        self._fit()
        item = self.bars_plot.getPlotItem()
        item.setYRange(-0.6, out.ranks - 0.4, padding=0)
        item.setXRange(0, out.block_scores * BAR_ROOM, padding=0)
        self._ticks_every = 0
        self._fit_ticks()

    def _fit_ticks(self) -> None:
        """Name every rank on the bars' axis where the rows have room for the text, else
        every other one (8 ranks on a 1920x1080 projector overprinted each other)."""
        ranks = self.model.out.ranks
        box = self.bars_plot.getPlotItem().getViewBox()
        pitch = box.height() / max(ranks, 1)
        line = QFontMetricsF(theme.font(9)).height() * 1.1
        every = 1 if pitch >= line or pitch <= 0 else 2 if 2 * pitch >= line else 4
        if every != self._ticks_every:
            self._ticks_every = every
            self.bars_plot.getPlotItem().getAxis("left").setTicks(
                [[(r, f"rank {r}") for r in range(0, ranks, every)], []])

    def _fit(self) -> None:
        """Room left of and above the grid for labels that keep their pixel size while
        the cells follow the window (on a resize and when P changes)."""
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0 or not self._end:
            return
        metrics = QFontMetricsF(theme.font(9, bold=True))
        left = metrics.horizontalAdvance("queries ↓  keys →") + 12
        top = metrics.height() + 8
        legend = self.legend.boundingRect()
        right, below = legend.width() + 12, legend.height() + 12
        span = self._end + 2 * LABEL_MARGIN  # the labels sit LABEL_MARGIN off the grid
        # The legend beside the grid or under it, whichever leaves the cells larger.
        scale = max(min((width - left - right) / span, (height - top) / span),
                    min((width - left) / span, (height - top - below) / span))
        if scale <= 0:
            return
        x0, y0 = -left / scale - LABEL_MARGIN, -top / scale - LABEL_MARGIN
        self.box.setRange(xRange=(x0, x0 + width / scale),
                          yRange=(y0, y0 + height / scale), padding=0)

    def refresh(self) -> None:
        out: RingAttentionOut = self.model.out
        layout = (out.ranks, tuple(out.owners.tolist()))
        if self.needs_update("layout", layout):
            self._place(out)
        if self.needs_update("cells", (layout, out.rounds_done, bool(out.masked.any()))):
            self._draw(out)
        self.predict.sync()
        self.message.show_message(self._describe(out, self.model.revealed),
                                  warn=self.model.revealed and out.idle_share() > 0)

    def _draw(self, out: RingAttentionOut) -> None:
        now = out.this_round
        palette = [opaque_blend("compute", EARLIER_ALPHA), theme.color("compute"), untouched(),
                   theme.color("neutral")]
        rounds = out.rounds.ravel()
        kind = np.where(rounds < now, 0, np.where(rounds == now, 1, 2))
        kind[out.masked.ravel()] = 3
        self.cells.set_cells(self._rects, [palette[k] for k in kind.tolist()])
        work = out.work[now]
        busiest = out.round_time[now]
        ranks = np.arange(out.ranks, dtype=float)
        blue = np.column_stack([np.zeros(out.ranks), ranks - BAR_H / 2, work,
                                np.full(out.ranks, BAR_H)])
        idle = np.column_stack([work, ranks - BAR_H / 2, busiest - work,
                                np.full(out.ranks, BAR_H)])
        waiting = work < busiest
        self.bars.set_cells(np.vstack([blue, idle[waiting]]),
                            [theme.color("compute")] * out.ranks
                            + [theme.color("idle")] * int(waiting.sum()))

    @staticmethod
    def _describe(out: RingAttentionOut, revealed: bool) -> str:
        if not out.masked.any():
            return ("Without a mask every rank computes a full block in every round: "
                    "nobody waits, whatever the assignment.")
        if not revealed:
            return ("Guess how much of the pass rank 0 waits, then press Reveal; press Next "
                    "round to watch the bars.")
        if out.idle_share() == 0:
            return ("Zig-zag: every rank holds an early and a late chunk, so every rank "
                    "computes the same number of scores in every round and nobody waits.")
        share = format_value(100 * out.idle_share(0), "%", decimals=1)
        return (f"Contiguous: rank 0's queries come first, so after round 1 it has "
                f"nothing left to compute and waits {share} of the pass. Switch to "
                f"zig-zag.")
