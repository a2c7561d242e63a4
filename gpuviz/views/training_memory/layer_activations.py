"""Figure 6.3: the tensors one layer keeps for its backward pass, added one operation at a
time; orange in units of sbh, magenta (the attention core) in units of as²b."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import si_text
from gpuviz.core.plots import CellGrid, diagram_widget
from gpuviz.core.text import TextLayer
from gpuviz.models import memory as mem

# Columns, in data units: operation and tensor | its size in units | its bytes as a bar.
OP_WIDTH = 6.0
UNIT_X, UNIT_WIDTH = 6.1, 1.5
BAR_X, BAR_WIDTH = 7.8, 4.6
ROW = 0.8
TOTAL_WIDTH = BAR_X + BAR_WIDTH


def unit_text(item: mem.ActivationItem, units: float, kept: bool) -> str:
    if not kept:
        return "not kept"
    name = "sbh" if item.kind == mem.SBH else "as²b"
    return f"+{units:g} {name}"


def _lower_first(label: str) -> str:
    """A tensor's name inside a sentence: an ordinary first word in lower case
    ("Softmax output" -> "softmax output"); names kept ("V", "Q and K", "LayerNorm")."""
    first, _, rest = label.partition(" ")
    if first[1:].isalpha() and first[1:].islower():
        first = first.lower()
    return f"{first} {rest}" if rest else first


class LayerActivationsView(FigureView):
    step_label = "Next"

    def build(self) -> None:
        for name in ("flash_attention", "seq_len", "micro_batch"):
            self.controls.add(name)
        widget, self.box = diagram_widget()
        self.box.setAspectLocked(False)
        n = self.model.total_steps
        self.box.setRange(QRectF(0, -1.2, TOTAL_WIDTH + 0.1, n + 4.0), padding=0.01)
        self.ops = CellGrid(font_size=9, elide=True)  # long names cut, not left out
        self.ops.clicked.connect(self._on_click)
        self.box.addItem(self.ops)
        self.cells = CellGrid(font_size=9)
        self.box.addItem(self.cells)
        self.text = TextLayer(QRectF(0, -1.2, TOTAL_WIDTH + 0.1, n + 4.0))
        self.header = [self.text.add(title, size=9, bold=True, anchor=(0, 1))
                       for title in ("Operation: the tensor it keeps", "Size",
                                     "Bytes (this s and b)")]
        for label, x in zip(self.header, (0.0, UNIT_X, BAR_X), strict=True):
            label.setPos(x, -0.15)
        self.bar_labels = [self.text.add(size=8, anchor=(0, 0.5)) for _ in range(n)]
        self.total_labels = [self.text.add(size=13, bold=True, anchor=(0, 0.5))
                             for _ in range(2)]
        # In the magenta total's bar row, empty under FlashAttention: beside the total
        # it ran past the right edge.
        self.flash_note = self.text.add(role="highlight", size=9, anchor=(0, 0.5))
        self.box.addItem(self.text)
        self.add_plot(widget)

    def _on_click(self, index: int) -> None:
        self.model.go_to(index)

    def refresh(self) -> None:
        out = self.model.out
        n = len(out.items)
        done = np.arange(n) < out.done
        rows = np.arange(n, dtype=float)
        op_rects = np.column_stack([np.zeros(n), rows, np.full(n, OP_WIDTH), np.full(n, ROW)])
        orange, magenta = theme.color("memory"), theme.color("highlight")
        pale = theme.color("neutral", 60)
        fills, outlines = [], []
        for i in range(n):
            role_color = magenta if out.is_score[i] else orange
            if not out.kept[i]:
                fills.append(None)
                outlines.append(theme.color("neutral"))
            elif done[i]:
                fills.append(theme.color("highlight" if out.is_score[i] else "memory", 110))
                outlines.append(role_color if i == out.done - 1 else None)
            else:
                fills.append(pale)
                outlines.append(None)
        if out.done:
            outlines[out.done - 1] = theme.color("text")
        self.ops.set_cells(op_rects, fills, outlines,
                           [f"{item.op}: {item.label}" for item in out.items])

        biggest = max(out.item_bytes.max(), 1.0)
        # The longest bar leaves room for its label ("134 MB" was cut at 1024x768).
        lengths = BAR_WIDTH * 0.65 * out.item_bytes / biggest
        rects = [(UNIT_X, r, UNIT_WIDTH, ROW) for r in rows]
        rects += [(BAR_X, r + 0.1, max(length, 0.0), ROW - 0.2)
                  for r, length in zip(rows, lengths, strict=True)]
        cell_fills = [None] * n
        cell_fills += [(magenta if out.is_score[i] else orange) if done[i] else pale
                       for i in range(n)]
        texts = [unit_text(item, out.units[i], bool(out.kept[i]))
                 for i, item in enumerate(out.items)] + [""] * n
        # Running totals: orange out of the layer's sbh, magenta out of its a s^2 b.
        y = n + 0.6
        total_sbh, total_as2b = out.sbh_total, float(out.units[out.is_score].sum())
        for k, (so_far, total, color) in enumerate(
                ((out.sbh_so_far, total_sbh, orange), (out.as2b_so_far, total_as2b, magenta))):
            width = (OP_WIDTH + UNIT_WIDTH) * (so_far / total if total else 0.0)
            rects.append((0.0, y + k * 1.0, max(width, 0.0), ROW))
            cell_fills.append(color)
            texts.append("")
        self.cells.set_cells(np.array(rects), cell_fills, texts=texts)
        for i, label in enumerate(self.bar_labels):
            label.setText(si_text(out.item_bytes[i], "B") if out.kept[i] else "")
            label.setPos(BAR_X + lengths[i] + 0.1, i + ROW / 2)
        self.total_labels[0].setText(f"{out.sbh_so_far:g} of {total_sbh:g} sbh")
        self.total_labels[1].setText(f"{out.as2b_so_far:g} of {total_as2b:g} as²b")
        self.flash_note.setText("FlashAttention keeps none" if self.model.flash_attention
                                else "")
        self.flash_note.setPos(0.1, y + 1.0 + ROW / 2)
        for k, label in enumerate(self.total_labels):
            label.setPos(BAR_X, y + k * 1.0 + ROW / 2)

        if out.done == n:
            text = (f"The whole layer keeps {out.sbh_total:g} sbh + {out.as2b_total:g} as²b = "
                    f"{si_text(out.layer_bytes, 'B')}; {out.cfg.layers} layers keep "
                    f"{si_text(out.cfg.layers * out.layer_bytes, 'B')}.")
        elif out.done:
            item = out.items[out.done - 1]
            text = (f"{item.op} keeps its {_lower_first(item.label)} for the backward pass: "
                    f"{unit_text(item, out.units[out.done - 1], bool(out.kept[out.done - 1]))}"
                    f". Next (or a click on a row) goes on.")
        else:
            text = ("Nothing stored yet. Step with Next, or pick a row: each operation "
                    "puts down what its backward pass will read.")
        self.message.show_message(text)
