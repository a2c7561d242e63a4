"""Figure 4.2: FlashAttention against standard attention on the tiled score matrix."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import (
    CellGrid,
    Legend,
    diagram_widget,
    opaque_blend,
    text_item,
    untouched,
)
from gpuviz.models.flash_attention import PHASE_FLASH, PHASE_O, PHASE_P, PHASE_S

GAP = 0.08
PREVIEW_ALPHA = 50  # before the first step: the whole picture, faint
STRIP = 1.4  # distance of the Q, K/V and O strips from the matrix, in tiles
COUNTERS_AT = (-STRIP, -STRIP - 0.15)  # bottom left corner of the HBM counters

SOURCES = {
    "fa2": "FlashAttention-2 order (Dao 2023, Algorithm 1): a Q block stays on chip, "
           "K and V stream past it, O is written once: 2Nd + 2Nd·⌈N/B⌉ elements.",
    "fa1": "FlashAttention-1 order (Dao et al. 2022, Algorithm 1): a K/V block stays on "
           "chip, and for every tile Q, O, m and l are read from HBM and O, m, l written "
           "back: 2Nd + 3Nd·T + 4N·T elements, T = ⌈N/B⌉.",
    "standard": "Standard attention: three kernels, S and P written to HBM and read back: "
                "4Nd + 4N² elements.",
    # With the causal mask the flash orders skip the tiles above the diagonal.
    "fa2 causal": "FlashAttention-2 order (Dao 2023), causal: each Q block reads K and V "
                  "up to the diagonal only: 4Nd + dB·T(T − 1) elements, T\u00a0=\u00a0⌈N/B⌉.",
    "fa1 causal": "FlashAttention-1 order, causal: K/V block j meets only "
                  "Q blocks j on, R = NT − BT(T − 1)/2 rows: 2Nd + (3d\u00a0+\u00a04)R "
                  "elements, T\u00a0=\u00a0⌈N/B⌉.",
    "standard causal": "Standard attention: three kernels, S and P written to HBM and read "
                       "back, masked entries too: 4Nd + 4N² elements.",
}


def _count(value: int) -> str:
    return f"{value:,}"


class FlashTilingView(FigureView):
    def build(self) -> None:
        self.controls.add("mode", "buttons")
        self.controls.add("loop_order", "buttons")
        for name in ("seq_len", "block_size", "head_dim", "causal"):
            self.controls.add(name)
        canvas, self.box = diagram_widget()
        self.cells = CellGrid()
        self.box.addItem(self.cells)
        self.q_label = text_item("Q", bold=True, anchor=(1, 0.5))
        self.k_label = text_item("Kᵀ, V", bold=True, anchor=(0, 0.5))
        self.o_label = text_item("O", bold=True, anchor=(0, 0.5))
        # The HBM counters, the state the figure is about: its largest text.
        self.counters = text_item("", role="memory", size=12, bold=True, anchor=(0, 1))
        for item in (self.q_label, self.k_label, self.o_label, self.counters):
            self.box.addItem(item)
        # The key in room of its own in the top left corner (see _fit_range).
        self.legend = Legend(self.box, anchor=(0, 0), size=9)
        self._ranges = ((0.0, 1.0), (0.0, 1.0))
        self.box.sigResized.connect(self._fit_range)
        self._legend_for: tuple | None = None
        self._above: tuple[float, float] = (0.0, 0.0)  # see _measure
        self._right: list[tuple[float, float]] = []
        self.add_plot(canvas)
        self._geometry: tuple = ()
        self._rects = np.zeros((0, 4))
        self._order = np.zeros((0, 0), dtype=int)

    def _layout(self, tiles: int, schedule: object) -> None:
        """Rectangles of the T x T tiles, then the Q, K/V and O strips; the step index of
        every tile (-1 when skipped). Rebuilt only when the geometry changes."""
        key = (tiles, self.model.mode, self.model.causal, self.model.loop_order)
        if key == self._geometry:
            return
        self._geometry = key
        size = 1.0 - GAP
        r, c = np.divmod(np.arange(tiles * tiles), tiles)
        grid = np.column_stack([c, r, np.full(r.size, size), np.full(r.size, size)])
        t = np.arange(tiles)
        q = np.column_stack([np.full(tiles, -STRIP), t, np.full(tiles, size), np.full(tiles, size)])
        k = np.column_stack([t, np.full(tiles, -STRIP), np.full(tiles, size),
                             np.full(tiles, size)])
        o = np.column_stack([np.full(tiles, tiles + STRIP - 1 + GAP), t, np.full(tiles, size),
                             np.full(tiles, size)])
        self._rects = np.vstack([grid, q, k, o, np.zeros((1, 4))]).astype(float)
        order = np.full((tiles, tiles), -1, dtype=int)
        tile_steps = np.flatnonzero(np.isin(schedule.phase, (PHASE_FLASH, PHASE_S)))
        order[schedule.row[tile_steps], schedule.col[tile_steps]] = tile_steps
        self._order = order
        # Room for the labels, whose size is in pixels while a tile shrinks as T grows.
        margin = 0.4 + 0.07 * tiles
        self._ranges = ((-STRIP - margin, tiles + STRIP + margin),
                        (-STRIP - margin - 0.05 * tiles, tiles + 0.3))
        self.q_label.setPos(-STRIP - 0.1, tiles / 2)
        self.k_label.setPos(tiles + 0.1, -STRIP + size / 2)
        self.o_label.setPos(tiles + STRIP + GAP + 0.1, tiles / 2)
        self.counters.setPos(*COUNTERS_AT)
        self._legend()
        self._fit_range()

    def _fit_range(self) -> None:
        """The diagram's range with room for the key in its top left corner (on a resize
        too): a column left of the Q strip or a band above the K/V strip, whichever leaves
        the tiles larger. The key's size is in pixels, the room in data units."""
        (x0, x1), (y0, y1) = self._ranges
        width, height = max(self.box.width(), 1.0), max(self.box.height(), 1.0)
        key = self.legend.boundingRect()
        key_w, key_h = key.width() + 8, key.height() + 8
        beside = self._fit_labels(width - key_w, height)
        above = self._fit_labels(width, height - key_h)
        if beside[0] >= above[0]:
            scale, x1, y0 = beside
            x0 -= key_w / max(scale, 1e-6)
        else:
            scale, x1, y0 = above
            y0 -= key_h / max(scale, 1e-6)
        self.box.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0.02)

    def _fit_labels(self, width: float, height: float) -> tuple[float, float, float]:
        """(zoom, right, top): the drawing's range grown to the right and upwards until
        the labels right of the matrix and the counters over it (pixels, see _measure)
        fit in width x height pixels. The zoom is the smaller of width / (right - x0) and
        height / (y1 - top); each side has a closed form for the other one fixed, and the
        two barely interact."""
        (x0, right), (top, y1) = self._ranges
        y, text_h = self._above
        for _ in range(3):
            share = text_h / max(height, 1.0)
            top = min(self._ranges[1][0], y - text_h * (right - x0) / max(width, 1.0),
                      (y - share * y1) / (1.0 - share) if share < 1.0 else top)
            needs = [self._ranges[0][1]]
            for x, text_w in self._right:
                share = text_w / max(width, 1.0)
                needs.append(x + text_w * (y1 - top) / max(height, 1.0))
                if share < 1.0:  # else no range makes room: keep the drawing's own
                    needs.append((x - share * x0) / (1.0 - share))
            right = max(needs)
        return min(width / (right - x0), height / (y1 - top)), right, top

    def _measure(self, longest: str) -> None:
        """Where the labels start and how many pixels they take: the counters at their
        longest (the final totals) above the matrix, K/V and O (and the counters) right."""
        size = QFontMetricsF(self.counters.font()).boundingRect(
            QRectF(0, 0, 1e4, 1e4), 0, longest).size()
        self._above = (COUNTERS_AT[1], size.height() + 8)
        self._right = [(COUNTERS_AT[0], size.width() + 8)] + [
            (label.pos().x(), label.boundingRect().width() + 8)
            for label in (self.k_label, self.o_label)]

    def refresh(self) -> None:
        s = self.model.out
        sch = s.schedule
        tiles = sch.tiles
        self._layout(tiles, sch)
        flash = self.model.mode == "flash"
        fa1 = flash and self.model.loop_order == "fa1"
        done = s.done
        cur = done - 1
        phase = int(sch.phase[cur]) if done else -1
        ci, cj = (int(sch.row[cur]), int(sch.col[cur])) if done else (-1, -1)
        order = self._order.ravel()
        rows = np.repeat(np.arange(tiles), tiles)
        masked = ((np.tile(np.arange(tiles), tiles) > rows) if self.model.causal
                  else np.zeros(rows.size, dtype=bool))

        none = None
        faint = untouched()
        grid: list = [faint] * (tiles * tiles)
        q = [_strip()] * tiles
        k = [_strip()] * tiles
        o: list = [faint] * tiles
        hatch = [False] * (tiles * tiles)
        cursor_role = "highlight"
        cursor = np.zeros(4)
        if done == 0:
            # Before the first step the whole picture shows faintly: the tiles that will
            # be computed (or stored) and the output.
            role = "compute" if flash else "memory"
            for index in np.flatnonzero(order >= 0):
                grid[index] = opaque_blend(role, PREVIEW_ALPHA)
            for index in np.flatnonzero(order < 0):
                grid[index] = none
            o = [opaque_blend("memory", PREVIEW_ALPHA)] * tiles
        elif flash:
            past = (order >= 0) & (order < cur)
            for index in np.flatnonzero(past):
                grid[index] = theme.color("compute_light")
            for index in np.flatnonzero(order < 0):
                grid[index] = none
            grid[ci * tiles + cj] = theme.color("compute")
            cursor = self._rects[ci * tiles + cj]
            cursor_role = "onchip"
            if fa1:  # the K/V block stays, Q and O stream through HBM
                k[cj] = theme.color("onchip")
                q[ci] = theme.color("highlight")
            else:
                q[ci] = theme.color("onchip")
                k[cj] = theme.color("highlight")
            for r in range(tiles):
                last = r if self.model.causal else tiles - 1
                last_step = self._order[r, last]
                touched = self._order[r][self._order[r] >= 0]
                if 0 <= last_step <= cur:
                    o[r] = theme.color("memory")
                elif fa1 and touched.size and touched.min() <= cur:
                    o[r] = theme.color("memory_light")  # partial O, back in HBM
        else:
            s_done = (order >= 0) & (order <= cur)
            p_rows = int(np.count_nonzero(sch.phase[:done] == PHASE_P))
            o_rows = int(np.count_nonzero(sch.phase[:done] == PHASE_O))
            for index in np.flatnonzero(s_done):
                in_p = rows[index] < p_rows
                grid[index] = theme.color("memory_light" if in_p else "memory")
                hatch[index] = bool(masked[index])  # masked, stored anyway: waste
            for r in range(o_rows):
                o[r] = theme.color("memory")
            if phase == PHASE_S:
                cursor = self._rects[ci * tiles + cj]
                q[ci] = theme.color("compute")
                k[cj] = theme.color("compute")
            elif phase in (PHASE_P, PHASE_O):
                first = self._rects[ci * tiles]
                cursor = np.array([first[0], first[1], tiles - GAP, first[3]])
                if phase == PHASE_O:
                    o[ci] = theme.color("memory")
        fills = grid + q + k + o + [none]
        outlines = [None] * (len(fills) - 1) + [theme.color(cursor_role) if done else None]
        rects = self._rects.copy()
        rects[-1] = cursor
        self.cells.set_cells(rects, fills, outlines, outline_width=2.5,
                             hatch=hatch + [False] * (len(fills) - len(hatch)))

        self.counters.setText(_counters_text(s.reads, s.writes))
        # The range leaves room for the labels (measured again only when the counters'
        # final totals, the tile count or the font change).
        longest = _counters_text(int(sch.reads.sum()), int(sch.writes.sum()))
        if self.needs_update("label_room", (longest, tiles)):
            self._measure(longest)
            self._fit_range()
        self.message.show_message(self._status(s, phase, ci, cj, fa1))

    def _status(self, s: object, phase: int, ci: int, cj: int, fa1: bool) -> str:
        kind = ("fa1" if fa1 else "fa2") if self.model.mode == "flash" else "standard"
        source = SOURCES[kind + (" causal" if self.model.causal else "")]
        if s.done == 0:
            doing = "Press Play or Step; the faint tiles are the work ahead."
        elif s.finished:
            doing = f"Done: {_count(s.reads + s.writes)} elements moved in all."
        elif phase == PHASE_FLASH and fa1:
            doing = (f"K/V block {cj} stays on chip; Q block {ci} and its O, m, l come in "
                     f"from HBM and go back; tile ({ci}, {cj}) lives only on chip.")
        elif phase == PHASE_FLASH:
            doing = (f"Q block {ci} stays on chip; K/V block {cj} streams in; "
                     f"tile ({ci}, {cj}) lives only on chip.")
        elif phase == PHASE_S:
            doing = f"Pass 1: tile ({ci}, {cj}) of S = QKᵀ written to HBM."
        elif phase == PHASE_P:
            doing = f"Pass 2: row block {ci} of S read, softmax, P written to HBM."
        else:
            doing = f"Pass 3: row block {ci} of P read with V, O written."
        return doing + "\n" + source

    def _legend(self) -> None:
        flash = self.model.mode == "flash"
        fa1 = flash and self.model.loop_order == "fa1"
        key = (flash, fa1, self.model.causal)
        if key == self._legend_for:
            return
        self._legend_for = key
        legend = self.legend
        legend.clear()
        if flash:
            legend.add_box("K/V block on chip" if fa1 else "Q block on chip",
                           theme.color("onchip"))
            legend.add_box("Q block streaming" if fa1 else "K/V block streaming",
                           theme.color("highlight"))
            legend.add_box("score tile, on chip only", theme.color("compute"))
            legend.add_box("computed earlier, discarded", theme.color("compute_light"))
            if fa1:
                legend.add_box("partial O, back in HBM", theme.color("memory_light"))
                legend.add_box("final O in HBM", theme.color("memory"))
            else:
                legend.add_box("O written to HBM", theme.color("memory"))
            legend.add_box("not computed yet", untouched())
            if self.model.causal:
                legend.add_box("skipped above the diagonal", theme.color("background"),
                               outline=theme.color("grid"))
        else:
            legend.add_box("S written to HBM", theme.color("memory"))
            legend.add_box("P written to HBM", theme.color("memory_light"))
            if self.model.causal:
                legend.add_box("masked, but stored anyway", theme.color("memory"), hatch=True)
            legend.add_box("not written yet", untouched())
            legend.add_box("current tile or row", theme.color("background"),
                           outline=theme.color("highlight"))


def _counters_text(reads: int, writes: int) -> str:
    # Two lines: on one, the counters at lecture sizes are wider than the tiles.
    return f"HBM so far: {_count(reads)} read,\n{_count(writes)} written (elements)"


def _strip() -> object:
    """Q, K/V and O blocks waiting in HBM: a grey a step stronger than untouched tiles."""
    return opaque_blend("neutral", 110)
