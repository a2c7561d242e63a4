"""Figure 9.4: servers of 8 GPUs coloured by TP group, PP stage or DP replica, and the
memory of one first-stage GPU against its HBM."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling, plural
from gpuviz.core.plots import CellGrid, Legend, Segment, diagram_widget, pen, plot_widget
from gpuviz.core.plots.cells import TEXT_AIR
from gpuviz.core.text import TextLayer
from gpuviz.models.memory import GB
from gpuviz.models.tensor_pipeline.layout import KEEP_FREE, LayoutOut
from gpuviz.models.tensor_pipeline.tp_comm import GPUS_PER_NODE

WIDE_FROM = 9  # servers: from here on 8 to a row, to use the canvas's width
GPU_COLUMNS = 4  # a server's 8 GPUs in 2 rows of 4
SERVER_W, SERVER_H = GPU_COLUMNS + 0.5, GPUS_PER_NODE // GPU_COLUMNS + 0.9
HEAD = 0.7  # the server's name above its GPUs (0.55 left it out at 1024x768)
FREE_TOP = 0.7  # the keep-free lines end here, their label on them, under the HBM label
BAR_Y = (-0.6, 1.4)  # the memory plot's least vertical range, the bar at -0.3 to 0.3
HBM_LABEL_Y = 1.3  # the HBM label's foot, under the top of the least range
FREE_LEFT, FREE_RIGHT = (1.05, 1), (-0.05, 1)  # the keep-free label left of its lines, or
# right of the HBM line
PARTS = (("weights", "compute", "weights"), ("gradients", "onchip", "gradients"),
         ("optimizer", "idle", "optimizer states"), ("activations", "memory", "activations"))


def servers_per_row(servers: int) -> int:
    return 8 if servers >= WIDE_FROM else 4


def server_rects(servers: int) -> tuple[np.ndarray, np.ndarray]:
    """Frames of the servers and the cells of their GPUs, in GPU order."""
    frames, cells = [], []
    per_row = servers_per_row(servers)
    for s in range(servers):
        x0 = (s % per_row) * (SERVER_W + 0.3)
        y0 = (s // per_row) * (SERVER_H + 0.3)
        frames.append((x0, y0, SERVER_W, SERVER_H))
        for g in range(GPUS_PER_NODE):
            cells.append((x0 + 0.25 + g % GPU_COLUMNS, y0 + HEAD + g // GPU_COLUMNS, 0.9, 0.9))
    return np.array(frames), np.array(cells)


def group_spans(groups: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """One rectangle per run of GPUs of one group, for its number: a whole server when its
    8 GPUs are one group, else each run along a row of 4. A number over a run has room
    where a GPU's cell alone is too small for it (32 stages on a 1024x768 projector)."""
    rects, owners = [], []
    for server in range(len(groups) // GPUS_PER_NODE):
        first = server * GPUS_PER_NODE
        own = groups[first:first + GPUS_PER_NODE]
        block = cells[first:first + GPUS_PER_NODE]
        if (own == own[0]).all():
            x0, y0 = block[:, 0].min(), block[:, 1].min()
            rects.append((x0, y0, (block[:, 0] + block[:, 2]).max() - x0,
                          (block[:, 1] + block[:, 3]).max() - y0))
            owners.append(int(own[0]))
            continue
        for row in range(0, GPUS_PER_NODE, GPU_COLUMNS):
            start = row
            for g in range(row + 1, row + GPU_COLUMNS + 1):
                if g == row + GPU_COLUMNS or own[g] != own[start]:
                    x0, y0, _, h = block[start]
                    rects.append((x0, y0, block[g - 1, 0] + block[g - 1, 2] - x0, h))
                    owners.append(int(own[start]))
                    start = g
    return np.array(rects, dtype=float).reshape(-1, 4), owners


class LayoutView(FigureView):
    def build(self) -> None:
        for name in ("preset", "nodes"):
            self.controls.add(name)
        self.controls.add_grid(("tp", "pp"))
        self.controls.add_grid(("zero1", "checkpointing"))
        for name in ("seq", "micro_batch", "global_batch", "colour_by"):
            self.controls.add(name)

        canvas, self.box = diagram_widget()
        self.frames = CellGrid(font_size=8)
        self.gpus = CellGrid(font_size=9)
        self.box.addItem(self.frames)
        self.box.addItem(self.gpus)
        # The groups' numbers, over runs of GPUs: one grid for dark text, one for light
        # (a CellGrid without fills writes all its texts in one colour).
        self.numbers = {ink: CellGrid(font_size=9) for ink in ("text", "background")}
        for grid in self.numbers.values():
            self.box.addItem(grid)
        self.add_plot(canvas, 3)
        self.box.sigResized.connect(self._number_groups)

        self.bar_plot = plot_widget("Memory of one GPU of the first stage (GB)")
        item = self.bar_plot.getPlotItem()
        item.setYRange(*BAR_Y, padding=0)
        item.getAxis("left").setTicks([[], []])
        item.showGrid(x=True, y=False, alpha=0.25)
        self.bar = CellGrid(font_size=9)
        item.addItem(self.bar)
        self.hbm_line = Segment(pen("highlight", 2.5))
        self.free_lines = [Segment(pen("neutral", 1.5, Qt.DashLine)) for _ in KEEP_FREE]
        for line in (self.hbm_line, *self.free_lines):
            item.addItem(line)
        self.labels = TextLayer(QRectF(0, BAR_Y[0], 100, BAR_Y[1] - BAR_Y[0]),
                                keep_inside=True)
        self.hbm_label = self.labels.add(role="highlight", size=9, bold=True, anchor=(1.05, 1))
        # Just above the dashed lines, under the HBM label: beside it (both at the top),
        # the two ran together on a small screen.
        self.free_label = self.labels.add("keep 10–20% free", role="text", size=9,
                                          anchor=FREE_LEFT)
        self.total_label = self.labels.add(role="text", size=10, bold=True, anchor=(-0.05, 0.5))
        item.addItem(self.labels)
        self.legend = Legend(item, anchor=(0, 0), columns=2)
        for _, role, text in PARTS:
            self.legend.add_box(text, theme.color(role), hatch=False)
        self._top = 0.0
        self._bar_y_top = BAR_Y[1]
        item.getViewBox().sigResized.connect(self._fit_bar_top)
        self.add_plot(self.bar_plot, 2)

    def _fit_bar_top(self) -> None:
        """The memory plot's top, raised where its legend would come down onto the label
        of the keep-free lines (a short plot: a 1024x768 projector); the HBM label stays
        at the top. On a resize and a new look (the legend's and label's sizes), not on
        every refresh."""
        high = self.legend.end_with_room(BAR_Y[0], FREE_TOP, beyond_px=self.free_label.height)
        top = max(BAR_Y[1], high)
        if top != self._bar_y_top:
            self._bar_y_top = top
            self.bar_plot.getPlotItem().setYRange(BAR_Y[0], top, padding=0)
            self.labels.set_bounds(QRectF(0, BAR_Y[0], self._top, top - BAR_Y[0]))
        self._place_bar_labels()

    def apply_look(self) -> None:
        super().apply_look()
        self._fit_bar_top()

    def _place_bar_labels(self) -> None:
        """The HBM label under the plot's top; the keep-free label left of its lines, or
        right of the HBM line where they are crowded at the left (far over HBM), not
        across them."""
        hbm = self.model.out.hbm / GB
        self.hbm_label.setPos(hbm, self._bar_y_top - (BAR_Y[1] - HBM_LABEL_Y))
        lines_at = hbm * (1 - KEEP_FREE[1])
        pixel = self.bar_plot.getPlotItem().getViewBox().viewPixelSize()[0]
        if lines_at / (pixel or 1.0) >= 1.1 * self.free_label.width:
            self.free_label.setAnchor(FREE_LEFT)
            self.free_label.setPos(lines_at, FREE_TOP)
        else:
            self.free_label.setAnchor(FREE_RIGHT)
            self.free_label.setPos(hbm, FREE_TOP)

    def _number_groups(self) -> None:
        """Each GPU's group number in its cell where the widest fits one, else one number
        per run of a group's GPUs (group_spans): measured against the canvas's pixels now,
        so on a resize too."""
        lay = self.model.out.layout
        groups = lay.groups(self.model.colour_by)
        cells = server_rects(lay.gpus // GPUS_PER_NODE)[1]
        width, height = self.box.viewPixelSize()
        metrics = QFontMetricsF(theme.font(9))
        widest = metrics.horizontalAdvance(str(max(int(groups.max()) + 1, 1))) + TEXT_AIR
        per_gpu = (bool(width and height) and widest <= 0.9 / width
                   and metrics.height() <= 0.9 / height + 2)
        if not self.needs_update("numbers", (groups.tobytes(), per_gpu)):
            return
        if per_gpu:
            rects, owners = cells, groups.tolist()
        else:
            rects, owners = group_spans(groups, cells)
        # The ink that reads on each group's colour, once per group (per GPU it was
        # 1 ms a change for 256 GPUs).
        inks = {g: theme.readable_on(theme.series(g)).rgba() for g in set(owners) if g >= 0}
        for ink, grid in self.numbers.items():
            colour = theme.color(ink)
            mine = np.array([g >= 0 and inks[g] == colour.rgba() for g in owners], dtype=bool)
            grid.set_cells(rects[mine].reshape(-1, 4), [None] * int(mine.sum()),
                           texts=[str(g + 1) for g, m in zip(owners, mine, strict=True) if m],
                           text_color=colour)

    def refresh(self) -> None:
        out: LayoutOut = self.model.out
        lay = out.layout
        servers = lay.gpus // GPUS_PER_NODE
        frames, cells = server_rects(servers)
        if self.needs_update("servers", servers):
            self.frames.set_cells(
                np.column_stack([frames[:, :3], np.full(servers, HEAD)]),
                [None] * servers, [theme.color("muted")] * servers,
                [f"server {s + 1}" for s in range(servers)], text_color=theme.color("text"))
            per_row = servers_per_row(servers)
            rows = -(-servers // per_row)
            width = min(servers, per_row) * (SERVER_W + 0.3)
            self.box.setRange(xRange=(-0.2, width), yRange=(-0.2, rows * (SERVER_H + 0.3)),
                              padding=0)
        groups = lay.groups(self.model.colour_by)
        if self.needs_update("groups", (groups.tobytes(), self.model.colour_by)):
            fills = [theme.series(int(g)) if g >= 0 else theme.color("idle") for g in groups]
            self.gpus.set_cells(cells, fills)
        self._number_groups()

        mem = out.memory
        parts = [getattr(mem.states, attr) if attr != "activations" else mem.activations
                 for attr, _, _ in PARTS]
        if lay.dp == 0:  # no layout (TP × PP beyond the GPUs): no GPU to draw the memory of
            parts = [0.0] * len(PARTS)
        hbm = out.hbm / GB
        total = sum(parts) / GB
        top = nice_ceiling(max(total, hbm) * 1.15, FINE_STEPS)
        item = self.bar_plot.getPlotItem()
        if top != self._top:
            self._top = top
            item.setXRange(0, top, padding=0)
            self.labels.set_bounds(QRectF(0, BAR_Y[0], top, self._bar_y_top - BAR_Y[0]))
            # Far over HBM, its line and labels are at the left: the legend goes right.
            self.legend.set_anchor((0, 0) if hbm > top / 2 else (1, 0))
        starts = np.concatenate([[0.0], np.cumsum(parts)[:-1]]) / GB
        self.bar.set_cells(np.array([(x, -0.3, p / GB, 0.6) for x, p in zip(starts, parts,
                                                                            strict=True)]),
                           [theme.color(role) for _, role, _ in PARTS],
                           [theme.color("background")] * len(PARTS),
                           texts=[format_value(p / GB, "GB") if p else "" for p in parts],
                           hatch=[False] * len(PARTS))
        pixel = item.getViewBox().viewPixelSize()
        self.hbm_line.set_line(hbm, -0.5, hbm, 0.9, pixel)
        for line, share in zip(self.free_lines, KEEP_FREE, strict=True):
            line.set_line(hbm * (1 - share), -0.5, hbm * (1 - share), FREE_TOP, pixel)
        self.hbm_label.setText(f"HBM {format_value(hbm, 'GB')}")
        self._place_bar_labels()
        self.total_label.setText(format_value(total, "GB") if total else "")
        self.total_label.setPos(total, 0.0)

        if out.warnings:
            self.message.show_message(" ".join(out.warnings), warn=True)
        else:
            self.message.show_message(
                f"TP {lay.tp} × PP {lay.pp} × DP {lay.dp} = {lay.gpus} GPUs. A first-stage "
                f"GPU holds {format_value(mem.total / GB, 'GB')} of "
                f"{format_value(hbm, 'GB')}, {format_value(100 * out.free, '%', decimals=0)} free; "
                f"1F1B keeps "
                f"{plural(mem.in_flight, 'micro-batch', 'micro-batches')} in flight there.")
