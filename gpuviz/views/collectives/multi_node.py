"""Figure 7.4: flat ring vs hierarchical all-reduce across nodes: a timeline of the steps
and the bus bandwidth against the number of nodes."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, nice_ceiling, time_text
from gpuviz.core.plots import Dots, Legend, curve, opaque_blend, pen, plot_widget
from gpuviz.core.text import PlacedTextLayer, TextLayer, polyline_segments
from gpuviz.core.timeline import BOX_HEIGHT, Timeline
from gpuviz.models.alpha_beta import GB
from gpuviz.models.collectives import (
    LINK_LANES,
    NODES_MAX,
    Measured,
    MultiNodeOut,
)
from gpuviz.views.collectives.measured import (
    MEASURED_LABEL,
    MEASURED_ROLE,
    MeasurementButtons,
    measured_dots,
    set_measured,
)

LANES = tuple(lane.resource for lane in LINK_LANES)  # top to bottom
STEP_GAP = 0.12  # of a step, left empty so single steps stay visible
LIGHT_ALPHA = 110  # NVLink phases: a lighter aqua than the network's


class MultiNodeView(FigureView):
    def build(self) -> None:
        for name in ("scheme", "nodes", "gpus_per_node", "message_bytes", "latency", "gpu"):
            self.controls.add(name)
        self.measured_buttons = self.controls.add_widget(MeasurementButtons(
            self.model, "Set N and G to the measurement's servers and GPUs per server"))

        # In seconds, the axis picks the prefix: "Time (µs)" on one node, not "(×10⁻³) ms".
        self.timeline = plot_widget("Time", "", x_unit="s")
        item = self.timeline.getPlotItem()
        self.lanes = Timeline(self.timeline, LANES)
        self.lanes.add_legend([
            ("NVLink step", opaque_blend("network", LIGHT_ALPHA)),
            ("network step, hierarchical", theme.color("network")),
            ("network hop of the flat ring", theme.color("highlight"))])
        self.bound = curve(item, pen("neutral", 2.0, Qt.DashLine))
        self.text = TextLayer(QRectF(0, -1, 1, 4), keep_inside=True)
        # On plates: between the lanes of a small projector they lie over steps' edges.
        self.bound_label = self.text.add(size=9, role="text", anchor=(-0.05, 0.5), plate=True)
        # Where the other scheme would end: the shared time axis leaves room for it, so
        # the room says what it is for.
        self.other_end = curve(item, pen("neutral", 1.5, Qt.DotLine))
        self.other_label = self.text.add(size=9, role="neutral", anchor=(1.03, 0.5),
                                         plate=True)
        item.addItem(self.text)
        self._x_max = 0.0
        self.add_plot(self.timeline, 1)

        self.bw_plot = plot_widget("Nodes N", "Bus bandwidth (GB/s)")
        bw = self.bw_plot.getPlotItem()
        bw.setXRange(0.5, NODES_MAX + 0.5, padding=0)
        self.legend = Legend(bw, anchor=(1, 0))
        # The flat ring dotted too: aqua and magenta both turn grey for a red-green
        # colour-blind eye.
        self.lines = {"Hierarchical": pen("network", 2.5),
                      "Flat ring": pen("highlight", 2.5, Qt.DotLine),
                      "One NIC": pen("neutral", 1.5, Qt.DashLine)}
        self._fill_legend(measured=False)
        self.hier_curve, self.flat_curve, self.nic_line = (
            curve(bw, line_pen) for line_pen in self.lines.values())
        self.bw_dots = Dots(bw, 2, 11, [theme.color("network"), theme.color("highlight")],
                            pen("text", 1.5))
        # Placed off the curves: the hierarchy's can run just above the NIC's line.
        self.bw_text = PlacedTextLayer(QRectF(0, 0, NODES_MAX + 1, 1e4))
        self.nic_label = self.bw_text.add(size=9, role="text", anchor=(1, 1.05))
        bw.addItem(self.bw_text)
        self.measured_dot = measured_dots(bw)
        self._bw_max = 0.0
        self.add_plot(self.bw_plot, 1)

    def _fill_legend(self, measured: bool) -> None:
        self.legend.clear()
        for label, line_pen in self.lines.items():
            self.legend.add_line(label, line_pen)
        if measured:
            self.legend.add_dot(f"{MEASURED_LABEL} at n", theme.color(MEASURED_ROLE))

    def refresh(self) -> None:
        out: MultiNodeOut = self.model.out
        scheme = self.model.scheme
        run = out.chosen(scheme)
        x_max = nice_ceiling(max(out.flat.total, out.hierarchical.total) * 1.05)
        if x_max != self._x_max:  # moves in 1-2-5 steps
            self._x_max = x_max
            self.lanes.set_time_range(x_max, exact=True)
            self.text.set_bounds(QRectF(0, -1, x_max, 4))
        key = (scheme, out.nodes, out.gpus_per_node, out.n, run.total, out.nvlink_hop)
        if self.needs_update("bars", key):
            self._draw_bars(out, scheme)
        busbw = run.bus_bandwidth(out.n, out.ranks) / GB
        measured = self.model.measured
        if self.needs_update("measured", measured):
            self._fill_legend(measured is not None)
            self.measured_buttons.sync()
        self._draw_bandwidth(out, measured)
        nic = out.inter.bandwidth / GB
        self.message.show_message(
            f"{'Hierarchical' if scheme == 'hierarchical' else 'Flat ring'}, {out.nodes} × "
            f"{out.gpus_per_node} GPUs: {time_text(run.total)}. "
            f"Bus bandwidth {format_value(busbw, 'GB/s')} is "
            f"{format_value(busbw / nic, '×')} "
            f"one NIC's {format_value(nic, 'GB/s')}."
            + (" The hierarchy sends only n/G per GPU over the network "
               "and uses all G NICs of a node at once."
               if scheme == "hierarchical" and out.nodes > 1 else
               " Every step of the flat ring waits for its slowest hop."
               if out.nodes > 1 else " One node: only NVLink is used.")
            + self._describe_measured(measured, out.n))

    @staticmethod
    def _describe_measured(measured: Measured | None, n: float) -> str:
        if measured is None:
            return ""
        table = measured.table
        busbw = measured.busbw_at(n)
        at_n = ("no size around n measured" if busbw is None else
                f"{format_value(busbw / GB, 'GB/s')} of bus bandwidth at n")
        return (f" Dot: {table.collective_name} measured on {table.nodes} × "
                f"{table.ranks // table.nodes} {table.device.removeprefix('NVIDIA ')}: "
                f"{at_n}. Apply fit sets that layout.")

    def _draw_bars(self, out: MultiNodeOut, scheme: str) -> None:
        """Every step of the chosen scheme as a box on its link's lane (a gap of STEP_GAP
        keeps single steps apart)."""
        lanes, starts, widths, fills = [], [], [], []
        light = opaque_blend("network", LIGHT_ALPHA)
        nvlink, network = LANES.index("NVLink"), LANES.index("network")
        if scheme == "hierarchical":
            for phase in out.hierarchical.phases:
                on_nvlink = phase.link == "NVLink"
                step_starts = phase.start + phase.step_time * np.arange(phase.steps)
                lanes += [nvlink if on_nvlink else network] * phase.steps
                starts += step_starts.tolist()
                widths += [phase.step_time * (1 - STEP_GAP)] * phase.steps
                fills += [light if on_nvlink else theme.color("network")] * phase.steps
            net_start = out.hierarchical.phases[1].start
        else:
            phase = out.flat.phases[0]
            step_starts = (phase.step_time * np.arange(phase.steps)).tolist()
            over_network = out.nodes > 1
            hop = out.nvlink_hop if over_network else phase.step_time
            lanes += [nvlink] * phase.steps
            starts += step_starts
            widths += [hop * (1 - STEP_GAP)] * phase.steps
            fills += [light] * phase.steps
            if over_network:
                lanes += [network] * phase.steps
                starts += step_starts
                widths += [phase.step_time * (1 - STEP_GAP)] * phase.steps
                fills += [theme.color("highlight")] * phase.steps
            net_start = 0.0
        start = np.array(starts)
        self.lanes.set_boxes(np.array(lanes), start, start + np.array(widths), fills)
        if out.nodes > 1:
            x = net_start + out.lower_bound
            self.bound.set_data([x, x], [network - 0.45, network + 0.45])
            self.bound_label.setText(f"network bound {time_text(out.lower_bound)}")
            self.bound_label.setPos(x, network - 0.5)
            self.bound_label.setVisible(True)
        else:
            self.bound.set_data([], [])
            self.bound_label.setVisible(False)
        other, name = ((out.flat, "flat ring") if scheme == "hierarchical"
                       else (out.hierarchical, "hierarchy"))
        chosen = out.chosen(scheme)
        if abs(other.total - chosen.total) > 0.01 * chosen.total:
            x = other.total
            self.other_end.set_data([x, x], [-0.5, network + 0.5])
            self.other_label.setText(f"{name} ends at {time_text(other.total)}")
            self.other_label.setPos(x, -0.6 + (1 - BOX_HEIGHT) / 4)  # above the top lane
            self.other_label.setVisible(True)
        else:
            self.other_end.set_data([], [])
            self.other_label.setVisible(False)

    def _draw_bandwidth(self, out: MultiNodeOut, measured: Measured | None) -> None:
        hier, flat = out.busbw_hierarchical / GB, out.busbw_flat / GB
        nic = out.inter.bandwidth / GB
        busbw = measured.busbw_at(out.n) if measured is not None else None
        dot = [] if busbw is None else [busbw / GB]
        set_measured(self.measured_dot, np.array([measured.table.nodes] if dot else []),
                     np.array(dot))
        top = nice_ceiling(max(float(hier.max()), float(flat.max()), nic, *dot) * 1.1)
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
            self.nic_label.setText(f"one NIC: {format_value(nic, 'GB/s')}")
            self.bw_text.set_candidates(self.nic_label, [
                (x, nic, 1.0, side) for x in (NODES_MAX, 24, 16, 8) for side in (1.05, -0.05)])
            self.bw_text.set_obstacles(np.vstack([polyline_segments(nodes, hier),
                                                  polyline_segments(nodes, flat)]))
        k = out.nodes - 1
        self.bw_dots.set_points([out.nodes] * 2, [hier[k], flat[k]])
