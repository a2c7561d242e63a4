"""Figure 9.1: the Megatron MLP split, step by step, with a numerical check beside it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Legend, diagram_widget, untouched
from gpuviz.core.text import TextLayer, wrap_lines
from gpuviz.core.widgets import TextTable
from gpuviz.models.tensor_pipeline.megatron import (
    ALLREDUCE,
    COMPUTE,
    EXTRA,
    MegatronOut,
)

CELL_W, CELL_H = 2.3, 0.8  # one step's column and one GPU's row, in canvas units
GAP = 0.12
LEGEND_ROOM = 1.6  # canvas units under the rows
TEXT_AIR = 8  # px: around the lines of a header or a box, beside a GPU's name
ROLE = {COMPUTE: "compute", ALLREDUCE: "network", EXTRA: "highlight"}
SAME = 1e-5  # a split that differs by less than this equals the unsplit result (float32)


class MegatronView(FigureView):
    step_label = "Next step"

    def build(self) -> None:
        for name in ("gpus", "mode"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        self.box.setAspectLocked(False)
        self.cells = CellGrid(font_size=9)
        self.headers = CellGrid(font_size=9, fit_texts=False)
        self.box.addItem(self.cells)
        self.box.addItem(self.headers)
        self.text = TextLayer(QRectF(-1, -1, 20, 6))
        most = int(self.model.parameter("gpus").maximum)
        self.gpu_labels = [self.text.add(size=9, bold=True, anchor=(1, 0.5))
                           for _ in range(most)]
        self.box.addItem(self.text)
        legend = Legend(self.box, anchor=(1, 1))
        legend.add_box("held in memory", theme.color("memory_light"))
        legend.add_box("local compute", theme.color("compute"))
        legend.add_box("all-reduce", theme.color("network"))
        legend.add_box("extra all-reduce", theme.color("highlight"))

        # The side panel: the claims checked on random float32 matrices.
        self.table = TextTable(("Check on random matrices", "max |diff|"), 4,
                               accessible_name="Numerical check of the splits", left=(0,))
        self.new_seed = QPushButton("New seed")
        self.new_seed.setToolTip("Draw new random matrices and check again")
        self.new_seed.setAccessibleName("New seed")
        self.new_seed.clicked.connect(lambda: self.model.set("seed",
                                                             (self.model.seed + 1) % 10000))
        side = QWidget()
        row = QHBoxLayout(side)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.table, 1)
        row.addWidget(self.new_seed, 0, Qt.AlignTop)
        self.add_plot(canvas)
        self.add_plot(side, 0)
        self.box.sigResized.connect(self._fit)

    def refresh(self) -> None:
        out: MegatronOut = self.model.out
        self._fit()
        check = out.check
        rows = (("Forward, columns then rows", check.forward),
                ("Backward, input gradient", check.backward),
                ("Rows first, extra all-reduce", check.rows_first),
                ("Rows first, no extra all-reduce", check.rows_first_no_allreduce))
        self.table.set_rows([((name, format_value(diff, digits=2)),
                              theme.text_color("text" if diff < SAME else "highlight"))
                             for name, diff in rows])
        self.message.show_message(self._describe(out), warn=out.mode == "wrong")

    def _fit(self) -> None:
        """Lay the canvas out for its size in pixels now: room on the left for the GPUs'
        names, the headers' and boxes' texts broken into lines that keep to their column
        (at 1024x768 "column-parallel" ran into its neighbours), and the headers as tall as
        their lines."""
        out: MegatronOut = self.model.out
        t, n = out.gpus, len(out.stages)
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0:
            return
        names = QFontMetricsF(theme.font(9, bold=True))
        # Air on both sides of a GPU's name: the canvas's edge clipped its "G".
        left_px = names.horizontalAdvance(f"GPU {t}") + 2 * TEXT_AIR
        unit_x = max(width - left_px, 1.0) / ((n + 1) * CELL_W)
        metrics = QFontMetricsF(theme.font(9))
        room = (CELL_W - GAP) * unit_x - TEXT_AIR
        headers = [wrap_lines(text, room, metrics.horizontalAdvance) for text in
                   ("holds", *(f"{k + 1}. {stage.title}" for k, stage in
                               enumerate(out.stages)))]
        lines = max(text.count("\n") + 1 for text in headers)
        header_px = lines * metrics.lineSpacing() + TEXT_AIR
        unit_y = max(height - header_px, 1.0) / (t * CELL_H + LEGEND_ROOM)
        header_h, left = header_px / unit_y, left_px / unit_x
        if self.needs_update("layout", (t, out.mode, out.done, round(room), tuple(headers),
                                        round(header_h, 4))):
            self._draw_cells(out, headers, header_h,
                             lambda text: wrap_lines(text, room, metrics.horizontalAdvance))
        if self.needs_update("range", (t, n, round(left, 4), round(header_h, 4),
                                       round(unit_x, 4))):
            right, bottom = (n + 1) * CELL_W, t * CELL_H
            self.box.setRange(xRange=(-left, right), yRange=(-header_h, bottom + LEGEND_ROOM),
                              padding=0)
            self.text.set_bounds(QRectF(-left, -header_h, right + left,
                                        bottom + header_h + LEGEND_ROOM))
            for i, label in enumerate(self.gpu_labels):
                label.setText(f"GPU {i + 1}" if i < t else "")
                label.setPos(-TEXT_AIR / unit_x, (i + 0.5) * CELL_H)

    def _draw_cells(self, out: MegatronOut, headers: list[str], header_h: float,
                    wrap: Callable[[str], str]) -> None:
        t = out.gpus
        rects, fills, texts, outlines = [], [], [], []
        header_rects = []

        def add(x: float, y: float, h: float, fill, text: str, outline=None) -> None:  # noqa: ANN001
            rects.append((x + GAP / 2, y + GAP / 2, CELL_W - GAP, h - GAP))
            fills.append(fill)
            texts.append(wrap(text))
            outlines.append(outline)

        header_rects.append((0, -header_h, CELL_W, header_h))
        for i, block in enumerate(out.held):
            add(0, i * CELL_H, CELL_H, theme.color("memory_light"), block)
        for k, stage in enumerate(out.stages):
            x = (k + 1) * CELL_W
            header_rects.append((x, -header_h, CELL_W, header_h))
            done = k < out.done
            fill = theme.color(ROLE[stage.kind]) if done else untouched()
            current = theme.color("text") if k == out.done - 1 else None
            if stage.kind == COMPUTE:
                for i, block in enumerate(stage.blocks):
                    add(x, i * CELL_H, CELL_H, fill, block, current)
            else:  # one collective over every GPU
                add(x, 0, t * CELL_H, fill, stage.blocks[0], current)
        self.cells.set_cells(np.array(rects), fills, outlines, texts, outline_width=2.5)
        self.headers.set_cells(np.array(header_rects), [None] * len(header_rects),
                               texts=headers, text_color=theme.text_color("text"))

    def _describe(self, out: MegatronOut) -> str:
        if out.mode == "forward":
            return ("A is split by columns, so each GPU's X Aᵢ is a whole block of columns "
                    "and GeLU needs nothing from the others; B split by rows turns the second "
                    "matmul into partial sums. One all-reduce of b × h numbers finishes the "
                    "layer.")
        if out.mode == "backward":
            return ("Going back, every gradient up to dYᵢ Aᵢᵀ is local (and so are dAᵢ and "
                    "dBᵢ); the one all-reduce moves to the input gradient dX, a sum over the "
                    "GPUs' column blocks.")
        return ("Split A by rows and each GPU holds a partial sum of all of X A. GeLU of a "
                "sum is not the sum of GeLUs (see the last check), so the partial sums must "
                "be all-reduced first: b × 4h numbers, four times the b × h of the output.")
