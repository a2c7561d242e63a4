"""Figure 8.2: the backward pass with bucketed gradient all-reduces."""

from __future__ import annotations

import numpy as np

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import time_readout
from gpuviz.core.plots import plot_widget
from gpuviz.core.timeline import Timeline
from gpuviz.models.data_parallel import BUCKETING_LANES, LAYERS

LANES = tuple(lane.text for lane in BUCKETING_LANES)
MS = 1e-3
MAX_BUCKET_TEXTS = 40  # more buckets than this: too narrow to label


def time_text(seconds: float) -> str:
    """Four digits, as the readouts: 1.015 ms per all-reduce and 1.015 ms exposed."""
    return time_readout("", round(seconds, 12), digits=4).text


class BucketingView(FigureView):
    def build(self) -> None:
        for name in ("bucket_mb", "tokens", "bandwidth_gbs", "alpha_us"):
            self.controls.add(name)
        self.plot = plot_widget("Time", x_unit=None)
        self.plot.getPlotItem().setLabel("bottom", "Time (ms)")
        self.timeline = Timeline(self.plot, LANES)
        self.timeline.clicked.connect(self._read_box)
        self.timeline.add_legend([
            ("backward of a layer", theme.color("compute")),
            ("all-reduce of a bucket", theme.color("network")),
            ("exposed: the GPU waits", theme.color("idle"))])
        self.add_plot(self.plot, 3)

        # The exposed part is often a sliver of the step: the end of it, enlarged.
        self.zoom_plot = plot_widget("Time (ms), the end of the step enlarged")
        self.zoom = Timeline(self.zoom_plot, LANES)
        self.zoom.clicked.connect(self._read_box)
        self.add_plot(self.zoom_plot, 2)
        self._picked: int | None = None

    def refresh(self) -> None:
        out = self.model.out
        layers = LAYERS
        if self.needs_update("boxes", (out.start.tobytes(), out.end.tobytes(),
                                       out.layer_end[0])):
            lanes = np.concatenate([np.zeros(layers), np.ones(out.buckets)])
            start = np.concatenate([out.layer_start, out.start]) / MS
            end = np.concatenate([out.layer_end, out.end]) / MS
            fills = [theme.color("compute")] * layers + [theme.color("network")] * out.buckets
            texts = [f"L{layers - i}" for i in range(layers)]
            texts += ([f"{k + 1}" for k in range(out.buckets)]
                      if out.buckets <= MAX_BUCKET_TEXTS else [""] * out.buckets)
            exposed = int(out.exposed > 1e-12)
            per_bucket = out.end[0] - out.start[0]
            # A few buckets' fill and all-reduce before the end; one bucket fills for the
            # whole backward pass, so the window is then a few of its all-reduces long
            # (the exposed tail, not the whole step again).
            tail = 3 * (per_bucket if out.buckets == 1 else max(out.ready[0], per_bucket))
            low = max(0.0, out.backward_time - tail)
            high = out.step_time + 0.05 * (out.step_time - low)
            # The enlarged end gets only the boxes it shows; a click reads the same box.
            seen = np.flatnonzero((end >= low / MS) & (start <= high / MS))
            self.timeline.set_time_range(out.step_time / MS)  # first: boxes are measured by it
            self.timeline.set_boxes(lanes, start, end, fills, texts)
            self.zoom.set_boxes(lanes[seen], start[seen], end[seen],
                                [fills[i] for i in seen.tolist()],
                                [texts[i] for i in seen.tolist()], ids=seen)
            for timeline in (self.timeline, self.zoom):
                timeline.set_idle(np.zeros(exposed), np.full(exposed, out.backward_time / MS),
                                  np.full(exposed, out.step_time / MS))
            self.zoom_plot.getPlotItem().setXRange(low / MS, high / MS, padding=0)
        self.message.show_message(self._comment(), warn=out.exposed > 0.1 * out.backward_time)

    def _comment(self) -> str:
        out = self.model.out
        if self._picked is not None:
            return self._box_text(self._picked)
        per_bucket = out.end[0] - out.start[0]
        late = np.flatnonzero(out.end > out.backward_time * (1 + 1e-12))
        if out.buckets == 1:
            return (f"One bucket: the all-reduce of all {out.bucket_bytes[0] / 1e6:,.0f} MB "
                    f"starts only when the backward pass is over, and all "
                    f"{time_text(out.exposed)} of it is exposed.")
        if per_bucket > out.ready[0]:
            return (f"Each bucket's all-reduce ({time_text(per_bucket)}) takes longer than "
                    f"the backward work that fills the next one ({time_text(out.ready[0])}): "
                    f"the all-reduces queue up and {time_text(out.exposed)} is exposed.")
        if len(late) == 1 and late[0] == out.buckets - 1:
            return (f"Each all-reduce ({time_text(per_bucket)}) ends before the next bucket "
                    f"is full ({time_text(out.ready[0])}), so only the last one sticks out: "
                    f"{time_text(out.exposed)} exposed. Click a box to read it.")
        return (f"{len(late)} all-reduces are still running when the backward pass ends "
                f"(the last bucket holds only the {out.bucket_bytes[-1] / 1e6:,.3g} MB left "
                f"over): {time_text(out.exposed)} exposed.")

    def _box_text(self, index: int) -> str:
        out = self.model.out
        if index < LAYERS:
            return (f"Backward of layer {LAYERS - index}: {time_text(out.layer_start[index])}"
                    f" to {time_text(out.layer_end[index])}.")
        k = index - LAYERS
        if k >= out.buckets:
            return ""
        return (f"Bucket {k + 1} of {out.buckets} ({out.bucket_bytes[k] / 1e6:,.3g} MB): full "
                f"at {time_text(out.ready[k])}, all-reduced {time_text(out.start[k])} to "
                f"{time_text(out.end[k])}.")

    def _read_box(self, index: int) -> None:
        self._picked = index
        self.message.show_message(self._box_text(index))
        self._picked = None
