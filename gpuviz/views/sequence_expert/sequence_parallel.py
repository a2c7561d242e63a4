"""Figure 10.2: one layer's activations on GPU 0 under TP and TP + SP, and its collectives."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, si_text
from gpuviz.core.plots import CellGrid, Legend, diagram_widget
from gpuviz.core.text import TextLayer, wrap_lines
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.sequence_expert.sequence_parallel import (
    OPS,
    SHORT_NAMES,
    SequenceParallelOut,
)

BLOCKS = (("Attention", range(0, 8)), ("MLP", range(8, len(OPS))))
BOX_W, MARK_W, GAP = 1.0, 0.55, 0.08
ROW_PITCH = 2.4  # a row of boxes, its byte labels (two lines on a small screen) and the
# next row's title
ROLES = {"heads": "compute", "full": "idle", "tokens": "highlight"}
# Where a one-word name may break when its box is too narrow for it (a 1024x768
# projector cut them to "soft…" and "drop…"); names with spaces break there.
BREAKS = {"softmax": "soft-max", "dropout": "drop-out"}


class SequenceParallelView(FigureView):
    def build(self) -> None:
        for name in ("mode", "tp", "preset", "seq", "micro_batch"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        canvas, self.box = diagram_widget()
        # A name too long for its box goes on two lines (`_names`), cut only past that.
        self.cells = CellGrid(font_size=9, elide=True)
        self.box.addItem(self.cells)
        self.text = TextLayer(QRectF(-1, -1, 20, 6))
        self.byte_labels = [self.text.add(size=9, anchor=(0.5, 0)) for _ in OPS]
        for row, (title, _) in enumerate(BLOCKS):
            self.text.add(f"{title} block", size=10, bold=True,
                          anchor=(0, 1)).setPos(0, row * ROW_PITCH - 0.1)
        self.box.addItem(self.text)
        legend = Legend(self.box, anchor=(1, 1), columns=2)
        legend.add_box("split by heads or columns", theme.color("compute"))
        legend.add_box("full copy on every GPU", theme.color("idle"))
        legend.add_box("split by tokens (SP)", theme.color("highlight"))
        legend.add_box("collective", theme.color("network"))
        self.add_plot(canvas)
        self.width = max(len(ops) for _, ops in BLOCKS) * (BOX_W + GAP) + 2 * (MARK_W + GAP)
        self.box.setRange(xRange=(-0.2, self.width), yRange=(-0.7, 2 * ROW_PITCH + 0.4),
                          padding=0)
        self.box.sigResized.connect(self._resized)

    def _unit_px(self) -> float:
        """Pixels per unit of the strip (its range fills the width or the height)."""
        return min(self.box.width() / (self.width + 0.2),
                   self.box.height() / (2 * ROW_PITCH + 1.1))

    def _resized(self) -> None:
        self._set_bytes()
        self.schedule_refresh()  # the boxes' names may need two lines, or one again

    def _names(self) -> list[str]:
        """Each op's name as its box can hold it: on one line, or broken onto two."""
        room = self._unit_px() * BOX_W - 4
        measure = QFontMetricsF(theme.font(9)).horizontalAdvance
        return [op.name if measure(op.name) <= room else
                wrap_lines(BREAKS.get(op.name, op.name), room, measure) for op in OPS]

    def refresh(self) -> None:
        out: SequenceParallelOut = self.model.out
        names = self._names()
        if self.needs_update("strip", (out.kinds, out.collectives, tuple(names))):
            self._draw(out, names)
        self._set_bytes()
        self.predict.sync()
        self.message.show_message(self._describe(out))

    def _set_bytes(self) -> None:
        """Each box's bytes under it, on two lines where one is wider than the box (on a
        1024x768 projector "67.1 MB67.1 MB16.8 MB" ran together)."""
        room = self._unit_px() * BOX_W - 4
        for label, stored in zip(self.byte_labels, self.model.out.stored, strict=True):
            label.setText(wrap_lines(si_text(stored, "B"), room,
                                     label.metrics.horizontalAdvance))

    def _draw(self, out: SequenceParallelOut, names: list[str]) -> None:
        before = dict(out.collectives)
        rects, fills, texts = [], [], []
        for row, (_, ops) in enumerate(BLOCKS):
            x, y = 0.0, row * ROW_PITCH
            for i in ops:
                if i in before:
                    rects.append((x, y, MARK_W, 1.0))
                    fills.append(theme.color("network"))
                    texts.append(SHORT_NAMES[before[i]])
                    x += MARK_W + GAP
                rects.append((x, y, BOX_W, 1.0))
                fills.append(theme.color(ROLES[out.kinds[i]]))
                texts.append(names[i])
                self.byte_labels[i].setPos(x + BOX_W / 2, y + 1.08)
                x += BOX_W + GAP
        self.cells.set_cells(np.array(rects), fills, texts=texts)

    def _describe(self, out: SequenceParallelOut) -> str:
        t, revealed = int(self.model.tp), self.model.revealed
        sent = si_text(out.sent, "B")
        if self.model.mode == "tp":
            sending = (f"Two all-reduces send {sent}." if revealed else
                       "Two all-reduces join the halves of the work.")
            return (f"TP alone: the LayerNorm, dropout and first-matmul inputs (violet) sit "
                    f"whole on all {t} GPUs, {si_text(out.replicated_parts, 'B')} of GPU 0's "
                    f"{si_text(out.activation, 'B')}. {sending}")
        sending = (f"four collectives (RS and AG) still send {sent}, as the two all-reduces "
                   "did." if revealed else "four collectives (RS and AG) replace the two "
                   "all-reduces: do they send more? Guess, then Reveal.")
        return (f"TP + SP: every activation is split {t} ways, "
                f"{format_value(out.activation_tp / out.activation, '×')} less than TP "
                f"alone; {sending}")
