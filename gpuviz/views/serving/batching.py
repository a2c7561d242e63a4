"""Figure 12.2: the same requests in static and in continuous batching, a lane per slot."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import format_value, plural
from gpuviz.core.plots import plot_widget
from gpuviz.core.timeline import Timeline, fill_by_kind
from gpuviz.models.serving.batching import DECODE, POLICIES, BatchingOut, Policy

FILLS = {DECODE: "compute_light"}  # a prefill is "compute"


class BatchingView(FigureView):
    def build(self) -> None:
        for name in ("slots", "requests", "longest"):
            self.controls.add(name)
        self.new_requests = QPushButton("New random requests")
        self.new_requests.setToolTip("Draw other output lengths for the same settings")
        self.new_requests.setAccessibleName("New random requests")
        self.new_requests.clicked.connect(
            lambda: self.model.set("seed", (self.model.seed + 1) % 10000))
        self.controls.add_widget(self.new_requests)

        self.timelines: dict[str, Timeline] = {}
        for policy, title in POLICIES:
            plot = plot_widget(f"{title}: steps")
            timeline = Timeline(plot, (), text_size=8)
            self.timelines[policy] = timeline
            self.add_plot(plot, 11 if policy == "continuous" else 10)  # its legend's room
        self.timelines["continuous"].add_legend([
            ("prefill step", theme.color("compute")),
            ("decode steps", theme.color("compute_light")),
            ("idle slot", theme.color("idle"))], columns=3)

    def refresh(self) -> None:
        out: BatchingOut = self.model.out
        end = max(out.static.steps, out.continuous.steps)
        fill = fill_by_kind(FILLS)
        for policy, timeline in self.timelines.items():
            p: Policy = getattr(out, policy)
            timeline.set_lanes(p.lanes, [f"slot {s + 1}" for s in range(len(p.lanes))])
            timeline.set_time_range(end)
            timeline.show_schedule(p.schedule, fill, idle_lanes=p.lanes)
        self.message.show_message(
            f"Static batching takes {plural(out.static.steps, 'step')} with "
            f"{format_value(100 * out.static.slot_use, '%', decimals=0)} of the slots "
            f"busy; continuous batching {plural(out.continuous.steps, 'step')} at "
            f"{format_value(100 * out.continuous.slot_use, '%', decimals=0)}: "
            f"{format_value(out.speedup, '×')} the tokens per second.")
