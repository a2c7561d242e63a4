"""Figure 7.4: flat ring vs hierarchical all-reduce across nodes: a timeline of the steps
and the bus bandwidth against the number of nodes."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.log_axes import nice_ceiling
from gpuviz.core.model import format_value
from gpuviz.core.plots import CellGrid, Dots, brush, curve, opaque_blend, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.models.alpha_beta import GB
from gpuviz.models.collectives import NODES_MAX, MultiNodeOut
from gpuviz.models.roofline import time_text

MS = 1e-3
ROWS = {"NVLink": 1.0, "network": 0.0}  # bottom of each lane of the timeline
LANE = 0.7  # height of a lane's bars
STEP_GAP = 0.12  # of a step, left empty so single steps stay visible
LIGHT_ALPHA = 110  # NVLink phases: a lighter aqua than the network's


class MultiNodeView(FigureView):
    def build(self) -> None:
        for name in ("scheme", "nodes", "gpus_per_node", "message_bytes", "latency", "gpu"):
            self.controls.add(name)

        self.timeline = plot_widget("Time (ms)", "")
        item = self.timeline.getPlotItem()
        item.setYRange(-0.15, 1.0 + LANE + 0.55, padding=0)
        item.getAxis("left").setTicks([[(ROWS["NVLink"] + LANE / 2, "NVLink"),
                                        (ROWS["network"] + LANE / 2, "network")]])
        item.showGrid(x=True, y=False, alpha=0.25)
        # Room for the lane names, which are longer than the numbers the axis expects.
        names = QFontMetricsF(theme.font(9))
        item.getAxis("left").setWidth(int(max(names.horizontalAdvance(n) for n in ROWS)) + 14)
        self.bars = CellGrid()
        item.addItem(self.bars)
        self.bound = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.text = TextLayer(QRectF(0, -1, 1, 4), keep_inside=True)
        self.title = self.text.add(bold=True, size=10, anchor=(0, 0))
        self.bound_label = self.text.add(size=9, role="text", anchor=(-0.05, 0.5))
        item.addItem(self.text)
        self._x_max = 0.0
        self.add_plot(self.timeline, 1)

        self.bw_plot = plot_widget("Nodes N", "Bus bandwidth (GB/s)")
        bw = self.bw_plot.getPlotItem()
        bw.setXRange(0.5, NODES_MAX + 0.5, padding=0)
        bw.addLegend(offset=(-10, 10), labelTextColor=theme.color("text"),
                     labelTextSize=f"{9 * theme.current().font_scale:.0f}pt",
                     brush=brush("background", 200))
        self.hier_curve = curve(bw, pen("network", 2.5), "Hierarchical")
        self.flat_curve = curve(bw, pen("highlight", 2.5), "Flat ring")
        self.nic_line = curve(bw, pen("neutral", 1.5, Qt.DashLine), "One NIC")
        self.bw_dots = Dots(bw, 2, 11, [theme.color("network"), theme.color("highlight")],
                            pen("text", 1.5))
        self.bw_text = TextLayer(QRectF(0, 0, NODES_MAX + 1, 1e4), keep_inside=True)
        self.nic_label = self.bw_text.add(size=9, role="text", anchor=(1, 1))
        bw.addItem(self.bw_text)
        self._bw_max = 0.0
        self.add_plot(self.bw_plot, 1)

    def refresh(self) -> None:
        out: MultiNodeOut = self.model.out
        scheme = self.model.scheme
        run = out.chosen(scheme)
        x_max = nice_ceiling(max(out.flat.total, out.hierarchical.total) / MS * 1.05)
        item = self.timeline.getPlotItem()
        if x_max != self._x_max:  # moves in 1-2-5 steps
            self._x_max = x_max
            item.setXRange(0, x_max, padding=0)
            self.text.set_bounds(QRectF(0, -1, x_max, 4))
        key = (scheme, out.nodes, out.gpus_per_node, out.n, run.total, out.nvlink_hop)
        if self.needs_update("bars", key):
            self._draw_bars(out, scheme)
        busbw = run.bus_bandwidth(out.n, out.ranks) / GB
        self.title.setText(f"{'Hierarchical' if scheme == 'hierarchical' else 'Flat ring'}, "
                           f"{out.nodes} × {out.gpus_per_node} GPUs: {time_text(run.total)}, "
                           f"bus bandwidth {busbw:,.1f} GB/s")
        self.title.setPos(0.0, 1.0 + LANE + 0.5)
        self._draw_bandwidth(out)
        nic = out.inter.bandwidth / GB
        self.message.show_message(
            f"Bus bandwidth {busbw:,.1f} GB/s is {format_value(busbw / nic, '×')} one NIC's "
            f"{nic:,.0f} GB/s." + (" The hierarchy sends only n/G per GPU over the network "
                                   "and uses all G NICs of a node at once."
                                   if scheme == "hierarchical" and out.nodes > 1 else
                                   " Every step of the flat ring waits for its slowest hop."
                                   if out.nodes > 1 else " One node: only NVLink is used."))

    def _draw_bars(self, out: MultiNodeOut, scheme: str) -> None:
        rects, fills = [], []
        light = opaque_blend("network", LIGHT_ALPHA)
        if scheme == "hierarchical":
            for phase in out.hierarchical.phases:
                row = ROWS["NVLink"] if phase.link == "NVLink" else ROWS["network"]
                color = light if phase.link == "NVLink" else theme.color("network")
                starts = phase.start + phase.step_time * np.arange(phase.steps)
                rects += [(s / MS, row, phase.step_time * (1 - STEP_GAP) / MS, LANE)
                          for s in starts.tolist()]
                fills += [color] * phase.steps
            net_start = out.hierarchical.phases[1].start
        else:
            phase = out.flat.phases[0]
            starts = phase.step_time * np.arange(phase.steps)
            over_network = out.nodes > 1
            hop = out.nvlink_hop if over_network else phase.step_time
            rects += [(s / MS, ROWS["NVLink"], hop * (1 - STEP_GAP) / MS, LANE)
                      for s in starts.tolist()]
            fills += [light] * phase.steps
            if over_network:
                rects += [(s / MS, ROWS["network"], phase.step_time * (1 - STEP_GAP) / MS,
                           LANE) for s in starts.tolist()]
                fills += [theme.color("highlight")] * phase.steps
            net_start = 0.0
        self.bars.set_cells(np.array(rects, dtype=float).reshape(-1, 4), fills)
        if out.nodes > 1:
            x = (net_start + out.lower_bound) / MS
            self.bound.set_data([x, x], [ROWS["network"] - 0.1, ROWS["network"] + LANE + 0.1])
            self.bound_label.setText(f"network bound {time_text(out.lower_bound)}")
            self.bound_label.setPos(x, ROWS["network"] + LANE + 0.15)
            self.bound_label.setVisible(True)
        else:
            self.bound.set_data([], [])
            self.bound_label.setVisible(False)

    def _draw_bandwidth(self, out: MultiNodeOut) -> None:
        hier, flat = out.busbw_hierarchical / GB, out.busbw_flat / GB
        nic = out.inter.bandwidth / GB
        top = nice_ceiling(max(float(hier.max()), float(flat.max()), nic) * 1.1)
        bw = self.bw_plot.getPlotItem()
        if top != self._bw_max:
            self._bw_max = top
            bw.setYRange(0, top, padding=0)
            self.bw_text.set_bounds(QRectF(0, 0, NODES_MAX + 1, top))
        if self.needs_update("bw_curves", (hier.tobytes(), flat.tobytes(), nic)):
            nodes = out.node_counts.astype(float)
            self.hier_curve.set_data(nodes, hier)
            self.flat_curve.set_data(nodes, flat)
            self.nic_line.set_data([0.5, NODES_MAX + 0.5], [nic, nic])
            self.nic_label.setText(f"one NIC: {nic:,.0f} GB/s")
            self.nic_label.setPos(NODES_MAX, nic)
        k = out.nodes - 1
        self.bw_dots.set_points([out.nodes] * 2, [hier[k], flat[k]])
