"""Figure 12.3: the KV-cache pool slot by slot, contiguous or paged, with the block table of
the request shown."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtWidgets import QGridLayout, QPushButton, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, Legend, diagram_widget, largest_layout, untouched
from gpuviz.models.serving.kv_blocks import BLOCK, FREE, PREFIX, KvBlocksOut

# Blocks per row: as many as leave the slots largest in the canvas (a tall canvas takes
# fewer, in more rows), from FEWEST to MOST.
MOST_BLOCKS_PER_ROW, FEWEST_BLOCKS_PER_ROW = 8, 4
BLOCK_GAP = 0.7  # between blocks, in slots
ROW_PITCH = 2.6  # rows of blocks, in slots (room above each for its owner and ×2 mark)
LABEL_TOP = 1.45  # the label strip above a block, from its slots' top, in slots
LABEL_HEIGHT = 1.25
SLOT = 0.9  # a slot's square inside its 1 × 1 cell
CHIP = 1.3  # a block-table row, in slots
BUTTONS = (("step", "Step"), ("add", "Add request"), ("fork", "Fork the oldest"),
           ("finish", "Finish the oldest"))


def table_top(rows: int) -> float:
    """Where the block table's title starts, under the last row of blocks."""
    return (rows - 1) * ROW_PITCH + SLOT + 0.7


def table_room(entries: int, columns: int) -> float:
    """The title, the rows of chips of a block table of `entries` blocks, the legend."""
    return 1.2 + math.ceil(entries / columns) * CHIP + 1.4


def diagram_size(blocks: int, columns: int, entries: int) -> tuple[float, float]:
    """Width and height of the pool and the block table, in slots."""
    rows = -(-blocks // columns)
    return (min(blocks, columns) * (BLOCK + BLOCK_GAP) + 0.5,
            LABEL_TOP + 0.1 + table_top(rows) + table_room(entries, columns))


def best_columns(blocks: int, entries: int, width_px: float, height_px: float) -> int:
    """Blocks per row that draw a slot largest in a canvas of this size (the most, of
    those within a pixel of it)."""
    def slot_px(columns: int) -> float:
        width, height = diagram_size(blocks, columns, entries)
        return min(width_px / width, height_px / height)

    return largest_layout(range(MOST_BLOCKS_PER_ROW, FEWEST_BLOCKS_PER_ROW - 1, -1), slot_px)


def block_origin(block: int, columns: int) -> tuple[float, float]:
    return (block % columns) * (BLOCK + BLOCK_GAP), (block // columns) * ROW_PITCH


def slot_rects(slots: int, columns: int) -> np.ndarray:
    rects = []
    for s in range(slots):
        x, y = block_origin(s // BLOCK, columns)
        rects.append((x + s % BLOCK + (1 - SLOT) / 2, y, SLOT, SLOT))
    return np.array(rects)


class KvBlocksView(FigureView):
    def build(self) -> None:
        self.controls.add("mode", style="buttons")
        for name in ("pool_blocks", "reserve", "system_prompt"):
            self.controls.add(name)
        buttons = QWidget()
        grid = QGridLayout(buttons)
        grid.setContentsMargins(0, 0, 0, 0)
        for i, (action, text) in enumerate(BUTTONS):
            button = QPushButton(text)
            button.setAccessibleName(text)
            button.clicked.connect(lambda _=False, a=action: self.model.act(a))
            grid.addWidget(button, i // 2, i % 2)
        self.controls.add_widget(buttons)

        canvas, self.box = diagram_widget()
        self.box.invertY(True)
        self.slots = CellGrid(font_size=8)
        self.slots.clicked.connect(self._select)
        self.frames = CellGrid(font_size=8)
        # above each block: the request owning it, and ×N on a shared one (a slot is
        # too narrow for a two-digit number on a projector)
        self.owners = CellGrid(font_size=9, fit_texts=False)
        self.marks = CellGrid(font_size=9, fit_texts=False)
        self.table = CellGrid(font_size=9, fit_texts=False)
        for item in (self.slots, self.frames, self.owners, self.marks, self.table):
            self.box.addItem(item)
        legend = Legend(self.box, anchor=(1, 1), columns=4)
        legend.add_box("token", theme.color("memory"))
        legend.add_box("allocated, empty", theme.color("idle"))
        legend.add_box("free", untouched())
        legend.add_box("shared block", theme.color("background"),
                       outline=theme.color("highlight"))
        # The longest block table: a request of the longest length (forks share theirs).
        self._table_entries = math.ceil(self.model.parameter("reserve").maximum / BLOCK)
        self._columns = MOST_BLOCKS_PER_ROW
        self.box.sigResized.connect(self.schedule_refresh)  # blocks per row to fit again
        self.add_plot(canvas)

    def _select(self, index: int) -> None:
        owner = int(self.model.out.owner[index])
        if owner not in (FREE, PREFIX):
            self.model.set("selected", owner)

    def refresh(self) -> None:
        out: KvBlocksOut = self.model.out
        slots = len(out.owner)
        blocks = slots // BLOCK
        size = self.box.size()
        self._columns = best_columns(blocks, self._table_entries, size.width(),
                                     size.height())
        rows = -(-blocks // self._columns)
        if self.needs_update("range", (blocks, self._columns)):
            width, height = diagram_size(blocks, self._columns, self._table_entries)
            self.box.setRange(xRange=(-0.5, width - 0.5),
                              yRange=(-LABEL_TOP - 0.1, height - LABEL_TOP - 0.1),
                              padding=0)
        self._show_slots(out, slots)
        self._show_blocks(out, blocks)
        self._show_table(out, rows)
        self.message.show_message(out.message, warn=out.warn)

    def _show_slots(self, out: KvBlocksOut, slots: int) -> None:
        free, token, empty = untouched(), theme.color("memory"), theme.color("idle")
        fills = [token if held else (empty if who != FREE else free)
                 for who, held in zip(out.owner, out.holds, strict=True)]
        self.slots.set_cells(slot_rects(slots, self._columns), fills)

    def _show_blocks(self, out: KvBlocksOut, blocks: int) -> None:
        selected = out.selected.number if out.selected else None
        rects, outlines, marks, mark_texts, mark_fills = [], [], [], [], []
        owner_rects, owner_texts = [], []
        for b in range(blocks):
            x, y = block_origin(b, self._columns)
            rects.append((x - 0.02, y - 0.1, BLOCK + 0.04, SLOT + 0.2))
            # sequences using the block (the prefix cache's own hold left out)
            users = int(out.refs[b]) - (b in out.prefix)
            shared = users > 1
            # the requests owning its slots (P: the prefix cache), above the block
            who = [int(w) for w in dict.fromkeys(out.owner[b * BLOCK:(b + 1) * BLOCK])
                   if w != FREE]
            owner_rects.append((x, y - LABEL_TOP, BLOCK / 2 if shared else BLOCK,
                                LABEL_HEIGHT))
            owner_texts.append(",".join("P" if w == PREFIX else str(w) for w in who))
            mine = selected is not None and selected in self._owners(out, b)
            outlines.append(theme.color("highlight") if shared else
                            theme.color("text") if mine else theme.color("muted"))
            if shared:
                marks.append((x + BLOCK / 2, y - LABEL_TOP, BLOCK / 2, LABEL_HEIGHT))
                mark_texts.append(f"×{users}")
                mark_fills.append(None)
        for start in out.starts:  # the start of each reserved range
            x, y = slot_rects(start + 1, self._columns)[-1][:2]
            marks.append((x - 0.12, y - 0.3, 0.08, SLOT + 0.6))
            mark_texts.append("")
            mark_fills.append(theme.color("text"))
        self.frames.set_cells(np.array(rects), [None] * blocks, outlines, outline_width=2.0)
        self.owners.set_cells(np.array(owner_rects), [None] * blocks, texts=owner_texts,
                              text_color=theme.color("text"))
        self.marks.set_cells(np.array(marks).reshape(-1, 4), mark_fills,
                             texts=mark_texts, text_color=theme.color("highlight"))

    @staticmethod
    def _owners(out: KvBlocksOut, block: int) -> set[int]:
        """Requests whose block table holds this block (paged) or whose range covers it."""
        found = {r.number for r in out.requests if block in r.blocks and r.state == "running"}
        found |= {int(who) for who in out.owner[block * BLOCK:(block + 1) * BLOCK]
                  if who != FREE}
        return found

    def _show_table(self, out: KvBlocksOut, rows: int) -> None:
        r = out.selected
        y = table_top(rows)
        if r is None:
            title = f"Request {self.model.selected} has not arrived yet."
        elif r.state != "running":
            title = f"Request {r.number} is {r.state}: it holds no memory."
        elif out.mode == "contiguous":
            end = r.start + self.model.reserve - 1
            title = (f"Request {r.number}: slots {r.start}–{end} (one range), {r.length} "
                     "tokens")
        else:
            fork = f", a fork of {r.forked_from}" if r.forked_from else ""
            title = f"Request {r.number}{fork}: block table (logical → physical)"
        rects = [(0.0, y, min(len(out.owner) // BLOCK, self._columns) * (BLOCK + BLOCK_GAP)
                  - BLOCK_GAP, 0.9)]
        texts, fills = [title], [None]
        outlines = [None]
        for k, b, _, sharers in out.block_table():
            # a chip per entry under the blocks' columns, a row of them per row of blocks
            x, _ = block_origin(k, self._columns)
            rects.append((x, y + 1.2 + (k // self._columns) * CHIP, BLOCK, CHIP - 0.2))
            texts.append(f"{k} → {b}")
            fills.append(theme.color("memory"))
            outlines.append(theme.color("highlight") if sharers > 1 else None)
        self.table.set_cells(np.array(rects), fills, outlines, texts=texts,
                             outline_width=2.0)
