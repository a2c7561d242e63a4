"""Figure 7.2: the ring all-reduce, each cell the number of inputs it holds."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import si_text
from gpuviz.core.plots import CellGrid, Curve, Dots, diagram_widget, opaque_blend, pen
from gpuviz.core.text import TextLayer
from gpuviz.models.collectives import RingSteps

MAX_GPUS = 16
CELL_H = 0.6  # of a row's height: the rest is the gap the arrows cross
CELL_W = 0.9
HEAD = 0.09  # arrow head size, in rows
WRAP = 0.35  # length of the wrap-around arrows above and below the grid
LEFT_ROOM = 1.6  # for the GPU names
TOP_ROOM = 0.75  # for the chunk names and the incoming wrap-around arrows
INSET = 0.07  # the dashed frame sits this far inside the cell
BIG_FONT_UP_TO = 6  # GPUs; more get the small font
FRACTION_UP_TO = 10  # GPUs; more show "k" instead of "k/P"


def _arrow_path(x: float, y0: float, y1: float) -> tuple[list[float], list[float]]:
    """A vertical arrow from y0 down to y1 with a head at y1, then a NaN gap."""
    return ([x, x, np.nan, x - HEAD, x, x + HEAD, np.nan],
            [y0, y1, np.nan, y1 - HEAD, y1, y1 - HEAD, np.nan])


class RingAllReduceView(FigureView):
    step_label = "Next step"

    def build(self) -> None:
        for name in ("gpus", "message_bytes", "gpu"):
            self.controls.add(name)
        canvas, self.box = diagram_widget()
        self.big_cells = CellGrid(font_size=12)
        self.small_cells = CellGrid(font_size=8)
        self.sending = CellGrid()
        self.arrived = CellGrid()
        for item in (self.big_cells, self.small_cells, self.sending, self.arrived):
            self.box.addItem(item)
        self.arrows = Curve(pen("network", 2.5))
        self.box.addItem(self.arrows)
        # While playing, a dot per chunk travels along its arrow (step_progress).
        self.tokens = Dots(self.box, MAX_GPUS, 13, theme.color("network"), pen("text", 1.5))
        self.tokens.setZValue(10)
        self.text = TextLayer(QRectF(-5, -5, MAX_GPUS + 10, MAX_GPUS + 10))
        self.gpu_labels = [self.text.add(size=9, bold=True, anchor=(1, 0.5))
                           for _ in range(MAX_GPUS)]
        self.chunk_labels = [self.text.add(size=9, role="muted", anchor=(0.5, 1))
                             for _ in range(MAX_GPUS)]
        self.arrow_labels = [self.text.add(size=8, role="network", bold=True,
                                           anchor=(0, 0.5)) for _ in range(2 * MAX_GPUS)]
        self.box.addItem(self.text)
        self.add_plot(canvas)
        self._ranks = 0
        self._arrow_label_count = 0
        self._arrow_labels_fit = True
        self.box.sigResized.connect(self._fit)

    def _place(self, p: int) -> None:
        for i, label in enumerate(self.gpu_labels):
            label.setVisible(i < p)
            label.setText(f"GPU {i}")
            label.setPos(-0.1, i + CELL_H / 2)
        for c, label in enumerate(self.chunk_labels):
            label.setVisible(c < p)
            label.setText(f"chunk {c}" if p <= BIG_FONT_UP_TO else str(c))
            label.setPos(c + CELL_W / 2, -WRAP - 0.05)
        index = np.arange(p * p)
        self._rects = np.column_stack([index % p, index // p, np.full(p * p, CELL_W),
                                       np.full(p * p, CELL_H)]).astype(float)
        self._fit()

    def _fit(self) -> None:
        """Room above the grid for the chunk names, which keep their pixel size while the
        grid follows the window (on a resize and when P changes)."""
        width, height = self.box.width(), self.box.height()
        p = self._ranks
        if width <= 0 or height <= 0 or not p:
            return
        names = QFontMetricsF(theme.font(9)).height() + 6
        # The GPU names left of the grid and the last column's arrow label ("c15") right
        # of it keep their pixel size too: on a small lecture screen they were cut.
        gpu_names = QFontMetricsF(theme.font(9, True)).horizontalAdvance(f"GPU {p - 1}") + 12
        arrow_name = QFontMetricsF(theme.font(8, True)).horizontalAdvance(f"c{p - 1}") + 4
        bottom = p - 1 + CELL_H + WRAP + 0.25
        top, left, right = TOP_ROOM, LEFT_ROOM, p + 0.1
        for _ in range(3):  # the room depends on the scale, which depends on the room
            scale = min(width / (right + left), height / (bottom + top))
            top = max(TOP_ROOM, WRAP + 0.05 + names / scale)
            left = max(LEFT_ROOM, 0.1 + gpu_names / scale)
            right = max(p + 0.1, p - 1 + CELL_W / 2 + 0.05 + arrow_name / scale)
        self.box.setRange(xRange=(-left, right), yRange=(-top, bottom), padding=0)
        # A chunk's name beside its arrow needs the gap between two rows: where the rows
        # are too close (16 GPUs on a small screen) it would lie across the cells, and the
        # column it goes down is named at the top anyway.
        self._arrow_labels_fit = (1 - CELL_H) * scale >= self.arrow_labels[0].height
        self._show_arrow_labels()

    def _show_arrow_labels(self) -> None:
        for i, label in enumerate(self.arrow_labels):
            label.setVisible(i < self._arrow_label_count and self._arrow_labels_fit)

    def refresh(self) -> None:
        out: RingSteps = self.model.out
        p = out.ranks
        if p != self._ranks:
            self._ranks = p
            self._place(p)
        if self.needs_update("state", (p, out.steps)):
            self._draw_cells(out)
        flying = out.progress > 0 and bool(out.next_moves)
        if self.needs_update("arrows", (p, out.steps, flying)):
            self._draw_arrows(out.next_moves if flying else out.moves,
                              out.next_sending if flying else out.sending)
        if flying:
            xs, ys = zip(*(self._token_at(t, out.progress) for t in out.next_moves),
                         strict=True)
            self.tokens.set_points(list(xs) + [np.nan] * (MAX_GPUS - p),
                                   list(ys) + [np.nan] * (MAX_GPUS - p))
        else:
            self.tokens.set_points([np.nan] * MAX_GPUS, [np.nan] * MAX_GPUS)
        self.message.show_message(self._describe(out))

    @staticmethod
    def _token_at(t, progress: float) -> tuple[float, float]:  # noqa: ANN001 - Transfer
        """Where the chunk of transfer t is after `progress` of the step."""
        x = t.src_slot + CELL_W / 2
        if t.dst == t.src + 1:
            return x, t.src + CELL_H + progress * (1 - CELL_H)
        if progress < 0.5:  # out under the last GPU, then in above GPU 0
            return x, t.src + CELL_H + 2 * progress * WRAP
        return x, -WRAP + (2 * progress - 1) * WRAP

    def _draw_cells(self, out: RingSteps) -> None:
        p = out.ranks
        counts = out.counts.ravel()  # row-major: GPU i, chunk c
        # Grey for a GPU's own chunk alone, then aqua that darkens with each input added.
        shades = [None, theme.color("neutral")] + [
            opaque_blend("network", 80 + int(175 * (k - 1) / max(p - 1, 1)))
            for k in range(2, p + 1)]
        fills = [shades[k] for k in counts.tolist()]
        texts = ([f"{k}/{p}" for k in counts.tolist()] if p <= FRACTION_UP_TO
                 else [str(k) for k in counts.tolist()])
        shown, hidden = ((self.big_cells, self.small_cells) if p <= BIG_FONT_UP_TO
                         else (self.small_cells, self.big_cells))
        shown.set_cells(self._rects, fills, texts=texts, text_color=theme.color("text"))
        hidden.set_cells(np.empty((0, 4)), [])
        arrived = self._rects[out.arrived.ravel()]
        self.arrived.set_cells(arrived, [None] * len(arrived),
                               outlines=[theme.color("highlight")] * len(arrived),
                               outline_width=3.0)

    def _draw_arrows(self, moves: tuple, sending_mask: np.ndarray) -> None:
        """Arrows, their chunk labels and dashed outlines for one step's transfers: the
        last step's when paused, the next step's while its chunks are in flight."""
        # Inset, so a cell that just arrived and is sent on next shows both frames.
        sending = self._rects[sending_mask.ravel()] + [INSET, INSET, -2 * INSET, -2 * INSET]
        self.sending.set_cells(sending, [None] * len(sending),
                               outlines=[theme.color("text")] * len(sending),
                               outline_width=2.0, outline_style=Qt.DashLine)
        xs: list[float] = []
        ys: list[float] = []
        spots: list[tuple[float, float, str]] = []
        for t in moves:
            x = t.src_slot + CELL_W / 2
            label = f"c{t.src_slot}"
            if t.dst == t.src + 1:
                ax, ay = _arrow_path(x, t.src + CELL_H, t.dst)
                spots.append((x + 0.05, t.src + (1 + CELL_H) / 2, label))
            else:  # the wrap-around: out under the last GPU, in above GPU 0
                ax, ay = [], []
                for y0, y1 in ((t.src + CELL_H, t.src + CELL_H + WRAP), (-WRAP, 0.0)):
                    px, py = _arrow_path(x, y0, y1)
                    ax += px
                    ay += py
                    spots.append((x + 0.05, (y0 + y1) / 2, label))
            xs += ax
            ys += ay
        self.arrows.set_data(xs, ys)
        for (x, y, text), label in zip(spots, self.arrow_labels, strict=False):
            label.setText(text)
            label.setPos(x, y)
        self._arrow_label_count = len(spots)
        self._show_arrow_labels()

    @staticmethod
    def _describe(out: RingSteps) -> str:
        p = out.ranks
        sent = (f"Each GPU has sent {si_text(out.sent_bytes, 'B')} of "
                f"{si_text(out.total_bytes, 'B')} = 2(P−1)/P · n.")
        if out.steps == 0:
            return (f"Each GPU holds its own n, cut into {p} chunks of "
                    f"{si_text(out.chunk_bytes, 'B')}. " + sent)
        if out.steps == p - 1:
            return ("Reduce-scatter done: GPU i holds the full sum of chunk i, on the "
                    "diagonal. The all-gather now passes the full chunks around. " + sent)
        return (f"Step {out.steps} of {out.total_steps} ({out.phase}): every GPU sends one "
                "chunk to the next GPU. " + sent)
