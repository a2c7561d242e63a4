"""Figure 7.1: the six collectives step by step, with the start and the end they must
reach beside the current state."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, Dots, diagram_widget, opaque_blend, pen
from gpuviz.core.text import TextLayer
from gpuviz.models import collective_sim as cs
from gpuviz.models.collectives import CollectiveSteps

GAP = 0.08  # of a cell, left empty around it
SMALL = 0.5  # scale of the start and end grids
SIDE_GAP = 1.0  # between the current grid and the small ones
TITLE_ROOM = 0.9  # above each grid, for its title and GPU letters
LEFT_ROOM = 1.3  # left of the current grid, for the chunk names
LEGEND_ROOM = 0.8  # under the grids
PARTIAL_ALPHA = 110  # an aqua that is lighter than a full sum
MAX_GPUS = 8
MAIN_FONTS = (12, 10, 8, 6.5)  # point sizes the current grid's labels may take
SMALL_FONT = 7  # the start and end grids' labels


def cell_fills(kinds: np.ndarray) -> list:
    """Fill of each cell of a kinds array (see collectives.cell_kinds), column-major: one
    column per GPU."""
    colors = [None, theme.color("neutral"), opaque_blend("network", PARTIAL_ALPHA),
              theme.color("network")]
    return [colors[k] for k in kinds.ravel().tolist()]


def _longest_label(out: CollectiveSteps) -> str:
    """The widest label the collective can show on these GPUs: a sum of all but one
    input ("ABCDEFG₇") for the reductions, one input otherwise; the font is picked for
    it once, so it does not change from step to step."""
    reduces = out.collective in ("reduce", "all_reduce", "reduce_scatter")
    letters = "".join(cs.rank_letter(i) for i in range(out.ranks - 1 if reduces else 1))
    return letters + cs.chunk_label(out.chunks - 1)


def grid_rects(ranks: int, chunks: int, x0: float, y0: float, size: float) -> np.ndarray:
    """Cells of a grid with GPUs as columns and chunks as rows, in rank-major order (the
    order of a (rank, slot) array raveled)."""
    r, s = np.meshgrid(np.arange(ranks), np.arange(chunks), indexing="ij")
    rects = np.empty((ranks * chunks, 4))
    rects[:, 0] = x0 + (r.ravel() + GAP / 2) * size
    rects[:, 1] = y0 + (s.ravel() + GAP / 2) * size
    rects[:, 2:] = (1 - GAP) * size
    return rects


class CollectiveStepsView(FigureView):
    step_label = "Next step"

    def build(self) -> None:
        for name in ("collective", "algorithm", "gpus"):
            self.controls.add(name)
        canvas, self.box = diagram_widget()
        # Grids that differ only in font size: the largest whose longest label fits a cell
        # is shown (labels keep their pixel size while the cells follow the window).
        self.main_grids = [CellGrid(font_size=size) for size in MAIN_FONTS]
        self.small_cells = CellGrid(font_size=SMALL_FONT)
        self.frames = CellGrid()
        self.outlines = CellGrid()
        self.legend_cells = CellGrid()
        for item in (self.outlines, *self.main_grids, self.small_cells, self.frames,
                     self.legend_cells):
            self.box.addItem(item)
        self._font_index = 0
        self.text = TextLayer(QRectF(-10, -10, 40, 40))
        self.title = self.text.add(bold=True, size=10, anchor=(0, 1))
        self.start_title = self.text.add("start", size=9, anchor=(0, 1))
        self.end_title = self.text.add("end (definition)", size=9, anchor=(0, 1))
        self.gpu_labels = [self.text.add(size=9, bold=True, anchor=(0.5, 1))
                           for _ in range(MAX_GPUS)]
        self.chunk_labels = [self.text.add(size=9, role="muted", anchor=(1, 0.5))
                             for _ in range(MAX_GPUS)]
        self.legend_texts = [self.text.add(text, size=8, anchor=(0, 0.5)) for text in
                             ("own data", "arrived / partial sum", "full sum Σ",
                              "changed this step")]
        self.box.addItem(self.text)
        # While playing, a dot per chunk travels from its sender's cell to its receiver's.
        self.tokens = Dots(self.box, MAX_GPUS * MAX_GPUS, 10, theme.color("network"),
                           pen("text", 1.2))
        self.tokens.setZValue(10)
        self._hidden = [np.nan] * (MAX_GPUS * MAX_GPUS)
        self.add_plot(canvas)
        self._layout: tuple[int, int] | None = None
        self._extent = (1.0, 1.0)
        self._longest = ""
        self._flight = np.zeros((0, 4))
        self._small_cell = 0.0  # pixels across a cell of the start and end grids
        self.box.sigResized.connect(self._fit)

    def _place(self, ranks: int, chunks: int) -> None:
        """Positions that change only with the grid's size."""
        small_x = ranks + SIDE_GAP
        end_y = SMALL * chunks + TITLE_ROOM
        self._origins = {"now": (0.0, 0.0, 1.0), "start": (small_x, 0.0, SMALL),
                         "end": (small_x, end_y, SMALL)}
        self._rects = {key: grid_rects(ranks, chunks, x, y, size)
                       for key, (x, y, size) in self._origins.items()}
        outline = np.concatenate(list(self._rects.values()))
        self.outlines.set_cells(outline, [None] * len(outline),
                                outlines=[theme.color("muted")] * len(outline),
                                outline_width=1.0)
        self.start_title.setPos(small_x, -0.05)
        self.end_title.setPos(small_x, end_y - 0.05)
        for i, label in enumerate(self.gpu_labels):
            label.setVisible(i < ranks)
            label.setText(cs.rank_letter(i))
            label.setPos(i + 0.5, -0.02)
        for k, label in enumerate(self.chunk_labels):
            label.setVisible(k < chunks)
            label.setText(f"chunk {k}")
            label.setPos(-0.05, k + 0.5)
        bottom = max(chunks, end_y + SMALL * chunks) + 0.45
        right = small_x + SMALL * max(ranks, 6)
        swatch = 0.3
        xs = [0.0, 0.0, right * 0.45, right * 0.45]
        ys = [bottom, bottom + 0.45, bottom, bottom + 0.45]
        rects = np.array([[x, y - swatch / 2, swatch, swatch] for x, y in zip(xs, ys,
                                                                              strict=True)])
        self.legend_cells.set_cells(
            rects, [theme.color("neutral"), opaque_blend("network", PARTIAL_ALPHA),
                    theme.color("network"), None],
            outlines=[None, None, None, theme.color("highlight")], outline_width=2.5)
        for label, x, y in zip(self.legend_texts, xs, ys, strict=True):
            label.setPos(x + swatch + 0.05, y)
        self._extent = (right + 0.1, bottom + LEGEND_ROOM)
        self._fit()

    def _fit(self) -> None:
        """Room left of and above the grid for the texts, which keep their pixel size, and
        the largest cell font that fits (on a resize and when the grid changes)."""
        width, height = self.box.width(), self.box.height()
        if width <= 0 or height <= 0 or self._layout is None:
            return
        right, bottom = self._extent
        names = max(label.width for label in self.chunk_labels) + 12
        above = self.title.height + max(label.height for label in self.gpu_labels) + 14
        left, top = LEFT_ROOM, TITLE_ROOM
        for _ in range(2):  # the room depends on the scale, which depends on the room
            scale = min(width / (right + left), height / (bottom + top))
            left, top = max(LEFT_ROOM, names / scale), max(TITLE_ROOM, above / scale)
        self.title.setPos(0.0, -(above - self.title.height - 4) / scale)
        self.text.set_bounds(QRectF(-left - 1, -top - 1, right + left + 2, bottom + top + 2))
        self.box.setRange(xRange=(-left, right), yRange=(-top, bottom), padding=0)
        small = (1 - GAP) * SMALL * scale - 4
        if small != self._small_cell:
            self._small_cell = small
            self.forget_shown("cells")
            self.schedule_refresh()
        cell = (1 - GAP) * scale - 4
        fits = [i for i, size in enumerate(MAIN_FONTS)
                if QFontMetricsF(theme.font(size)).horizontalAdvance(self._longest) <= cell]
        index = fits[0] if fits else len(MAIN_FONTS) - 1
        if index != self._font_index:
            self._font_index = index
            self.forget_shown("cells")
            self.schedule_refresh()

    def refresh(self) -> None:
        out: CollectiveSteps = self.model.out
        size = (out.ranks, out.chunks)
        longest = _longest_label(out)
        if size != self._layout or longest != self._longest:
            self._layout, self._longest = size, longest
            self._place(*size)
        key = (out.collective, out.algorithm, out.ranks, out.steps)
        if self.needs_update("cells", key):
            self._draw(out)
            self._flight = np.array([(t.src, t.src_slot, t.dst, t.dst_slot)
                                     for t in out.next_moves], dtype=float).reshape(-1, 4)
        if out.progress > 0 and len(self._flight):
            f, p = self._flight, out.progress
            # Cell centres of the current grid: column = GPU, row = slot (cell size 1).
            xs = f[:, 0] + (f[:, 2] - f[:, 0]) * p + 0.5
            ys = f[:, 1] + (f[:, 3] - f[:, 1]) * p + 0.5
            pad = self._hidden[:MAX_GPUS * MAX_GPUS - len(f)]
            self.tokens.set_points(xs.tolist() + pad, ys.tolist() + pad)
        else:
            self.tokens.set_points(self._hidden, self._hidden)

    def _draw(self, out: CollectiveSteps) -> None:
        labels = [text for row in out.labels for text in row]
        for i, grid in enumerate(self.main_grids):
            if i == self._font_index:
                grid.set_cells(self._rects["now"], cell_fills(out.kinds), texts=labels,
                               text_color=theme.color("text"))
            else:
                grid.set_cells(np.empty((0, 4)), [])
        small = np.concatenate([self._rects["start"], self._rects["end"]])
        small_labels = ([t for row in out.start_labels for t in row]
                        + [t for row in out.end_labels for t in row])
        # All the small grids' labels or none: the grid leaves out each text too wide for
        # its cell, which kept the narrow letters (E₀, F₀) and dropped the rest.
        font = theme.font(SMALL_FONT)
        metrics = QFontMetricsF(font)
        if (max((metrics.horizontalAdvance(t) for t in small_labels), default=0.0)
                > self._small_cell or metrics.height() > self._small_cell + 4):
            small_labels = [""] * len(small_labels)
        self.small_cells.set_cells(small, cell_fills(out.start_kinds)
                                   + cell_fills(out.end_kinds), texts=small_labels,
                                   text_color=theme.color("text"))
        arrived = self._rects["now"][out.arrived.ravel()]
        self.frames.set_cells(arrived, [None] * len(arrived),
                              outlines=[theme.color("highlight")] * len(arrived),
                              outline_width=3.0)
        name = cs.COLLECTIVE_NAMES[out.collective]
        algorithm = cs.ALGORITHM_NAMES[out.algorithm]
        if out.algorithm != "rabenseifner":  # a name keeps its capital
            algorithm = algorithm.lower()
        self.title.setText(f"{name}, {algorithm}: step {out.steps} of {out.total_steps}")
        self.message.show_message(self._describe(out))

    @staticmethod
    def _describe(out: CollectiveSteps) -> str:
        if out.steps == 0:
            return ("Every GPU starts with its own data (grey). Press Next step or Play; "
                    "the grid on the right is where the collective must end.")
        groups: dict[tuple[int, int], list[int]] = {}
        for t in out.moves:
            groups.setdefault((t.src, t.dst), []).append(t.src_slot)
        parts = []
        for (src, dst), slots in sorted(groups.items()):
            contiguous = slots == list(range(slots[0], slots[0] + len(slots)))
            chunks = (f"chunks {slots[0]}–{slots[-1]}" if len(slots) > 2 and contiguous
                      else ("chunk " if len(slots) == 1 else "chunks ")
                      + ", ".join(str(s) for s in slots))
            parts.append(f"{cs.rank_letter(src)}→{cs.rank_letter(dst)} {chunks}")
        verb = "added into" if out.moves and out.moves[0].reduce else "copied to"
        done = " Done: compare with the end grid." if out.steps == out.total_steps else ""
        return f"Step {out.steps} ({out.phase}, {verb} the receiver): {'; '.join(parts)}.{done}"
