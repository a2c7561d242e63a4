"""Figure 13.3: the share of the chips' peak a training run turns into model FLOPs (MFU)
and into hardware FLOPs (HFU), worked out from a log line; the days of a planned run."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import FINE_STEPS, format_value, nice_ceiling, si_text
from gpuviz.core.plots import CellGrid, Legend, Segment, pen, plot_widget
from gpuviz.core.text import TextLayer
from gpuviz.core.widgets import PredictReveal, TextPanel
from gpuviz.models.profiling.mfu import (
    PALM,
    TPU,
    MfuOut,
    palm_run,
    preset,
    tokens_readout,
)

ROWS = ("MFU", "HFU")
BAR = 0.6
# The log lines the buttons load: the 7B run of the lesson, and PaLM's published run.
LLAMA_LOG = {"preset": "llama2_7b", "accelerator": "h100_sxm", "chips": 32,
             "sequences": 256, "seq_len": 4096, "step_time": 3.6, "attention": "heads"}


def hfu_words(recompute: str) -> str:
    """Step 4 of the arithmetic: what HFU adds to the MFU."""
    if recompute == "none":
        return "HFU, with nothing recomputed, equals the MFU"
    return f"HFU also counts the FLOPs of {recompute} recomputation"


def palm_log() -> dict[str, object]:
    run = palm_run()
    seconds = run["sequences"] * run["sequence"] / run["tokens_per_second"]
    return {"preset": PALM, "accelerator": TPU, "chips": int(run["chips"]),
            "sequences": int(run["sequences"]), "seq_len": int(run["sequence"]),
            "step_time": round(seconds, 1), "attention": "heads"}


class MfuView(FigureView):
    def build(self) -> None:
        self.controls.add("mode")
        for name in ("preset", "attention", "accelerator"):
            self.controls.add(name)
        self.controls.add_grid(("chips", "seq_len"))
        # A log line's inputs, or a plan's: only the mode's own are shown.
        # Recomputation counts in both: HFU is the log line's, or what the plan's MFU asks
        # of the chips.
        self.log_inputs = [self.controls.add("sequences"),
                           self.controls.add("step_time", style="entry")]
        self.controls.add("recompute")
        self.plan_inputs = [self.controls.add("tokens"), self.controls.add("assumed_mfu")]
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        self.log_inputs.append(self.predict)

        # The runs to load sit over the arithmetic, leaving the control column its room.
        runs = QWidget()
        row = QHBoxLayout(runs)
        row.setContentsMargins(0, 0, 0, 0)
        for name, settings in (("Load the 7B log line", LLAMA_LOG),
                               ("Load PaLM's run", palm_log())):
            button = QPushButton(name)
            button.setAccessibleName(name)
            button.setToolTip("Set the model, chip, chips, batch and step time of this run")
            button.clicked.connect(lambda _=False, s=settings: self._load(s))
            row.addWidget(button)
        row.addStretch(1)
        self.add_plot(runs, 0)
        self.steps = TextPanel(5.2, accessible_name="The arithmetic", framed=False, margin=0)
        self.add_plot(self.steps, 0)

        self.plot = plot_widget("Share of the chips' peak FLOP/s", x_unit="%")
        item = self.plot.getPlotItem()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        item.setXRange(0, 100, padding=0)
        item.setYRange(-0.6, 2.2, padding=0)
        item.getAxis("left").setTicks([list(enumerate(ROWS)), []])
        self.bars = CellGrid(font_size=10)
        item.addItem(self.bars)
        self.mark = Segment(pen("highlight", 2.5, Qt.DashLine))
        item.addItem(self.mark)
        self.labels = TextLayer(QRectF(0, -0.6, 100, 2.8), keep_inside=True)
        self.mark_label = self.labels.add(role="highlight", size=9, bold=True,
                                          anchor=(0.5, 0))
        item.addItem(self.labels)
        legend = Legend(item, anchor=(1, 1), columns=3)
        legend.add_box("model FLOPs", theme.color("compute"))
        legend.add_box("recomputed", theme.color("compute_light"))
        legend.add_box("unused peak", theme.color("idle"))
        self.add_plot(self.plot, 2)

    def _load(self, settings: dict[str, object]) -> None:
        with self.model.batch():
            self.model.set("mode", "log")
            for name, value in settings.items():
                self.model.set(name, value)

    def refresh(self) -> None:
        out: MfuOut = self.model.out
        m = self.model
        planning = m.mode == "plan"
        hidden = not planning and not m.revealed
        if self.needs_update("mode", planning):
            for control in self.log_inputs:
                control.setVisible(not planning)
            for control in self.plan_inputs:
                control.setVisible(planning)
        mfu, hfu = 100 * out.mfu, 100 * out.hfu
        # Past the peak the axis runs on to show it, up to twice the peak; a bar longer
        # than that (a typed step time far too short) runs off the chart, its label true.
        right = 100.0 if hidden or hfu <= 100 else min(nice_ceiling(hfu, FINE_STEPS), 200.0)
        if self.needs_update("right", right):
            self.plot.getPlotItem().setXRange(0, right, padding=0)
        self._bars(mfu, hfu, hidden, right)
        pixel = self.plot.getPlotItem().getViewBox().viewPixelSize()
        mark = min(m.assumed_mfu if planning else m.guess_mfu, 100.0)
        self.mark.set_line(mark, -0.55, mark, 1.45, pixel)
        self.mark_label.setText("assumed" if planning else "your guess")
        self.mark_label.setPos(mark, 1.5)

        cfg = preset(m.preset)
        n = format_value(out.n / 1e9, "billion", decimals=3)
        per_token = (f"6 × {n} + 12 × {cfg.layers} × {out.width:,} × {m.seq_len:,} = "
                     f"{si_text(out.model_flops, 'FLOP')}")
        capacity = f"{m.chips:,} × {format_value(out.peak / 1e12, 'TFLOP/s', 4)}"
        if planning:
            self.steps.setText(
                f"<b>1.</b> FLOPs/token = {per_token}<br>"
                f"<b>2.</b> Training FLOPs = {si_text(m.tokens, '')} tokens × that = "
                f"{format_value(m.tokens * out.model_flops, 'FLOP')}<br>"
                f"<b>3.</b> Achieved = {capacity} × {format_value(m.assumed_mfu, '%')}<br>"
                f"<b>4.</b> Time = <b>{format_value(out.plan_days, 'days', 2)}</b>")
        else:
            shown = "?" if hidden else format_value(100 * out.mfu, "%", decimals=1)
            seconds = format_value(m.step_time, "s")
            tokens = tokens_readout(out.tokens_per_second).text
            hfu_text = "?" if hidden else format_value(100 * out.hfu, "%", decimals=1)
            self.steps.setText(
                f"<b>1.</b> Tokens/s = {m.sequences:,} × {m.seq_len:,} / {seconds} = "
                f"{tokens}<br>"
                f"<b>2.</b> FLOPs/token = {per_token}<br>"
                f"<b>3.</b> MFU = tokens/s × FLOPs/token ÷ ({capacity}) = <b>{shown}</b><br>"
                f"<b>4.</b> {hfu_words(m.recompute)}: {hfu_text}")
        self._comment(planning, hidden, hfu)
        self.predict.sync()

    def _bars(self, mfu: float, hfu: float, hidden: bool, right: float) -> None:
        """Each row's model FLOPs, recomputed FLOPs and unused peak, drawn up to `right`
        (the chart's edge); each coloured part is labelled with where its row has got to,
        the true number even where the bar is cut at the edge."""
        shown_mfu, shown_hfu = min(mfu, right), min(hfu, right)
        recomputed = shown_hfu > shown_mfu
        rows = [(0, 0.0, shown_mfu, "compute", mfu),
                (1, 0.0, shown_mfu, "compute", mfu if recomputed else hfu),
                (1, shown_mfu, shown_hfu, "compute_light", hfu),
                (0, shown_mfu, max(shown_mfu, 100.0), "idle", 0.0),
                (1, shown_hfu, max(shown_hfu, 100.0), "idle", 0.0)]
        rects, fills, texts = [], [], []
        for row, start, end, role, value in rows:
            rects.append((start, row - BAR / 2, end - start, BAR))
            fills.append(theme.color("neutral" if hidden else role))
            texts.append("" if hidden or role == "idle" or end - start < 1e-9
                         else format_value(value, "%", decimals=1))
        self.bars.set_cells(np.array(rects), fills, texts=texts,
                            hatch=[not hidden and row[3] == "idle" for row in rows])

    def _comment(self, planning: bool, hidden: bool, hfu: float) -> None:
        m = self.model
        if planning and hfu > 100:
            self.message.show_message(
                f"Over 100% of the peak: at {format_value(m.assumed_mfu, '%', decimals=1)} "
                f"MFU the {m.recompute} recomputation would need an HFU of "
                f"{format_value(hfu, '%', decimals=1)}. Assume a lower MFU.", warn=True)
        elif planning:
            self.message.show_message(
                "The plan divides the training FLOPs by what the chips deliver at the "
                "assumed MFU; 35–55% is typical of large dense runs.")
        elif hidden:
            self.message.show_message("Guess the MFU with the slider, then press Reveal.")
        elif hfu > 100:
            self.message.show_message(
                "Over 100% of the peak: the step time, batch or chip count cannot be "
                "right.", warn=True)
        elif m.preset == PALM and m.attention == "hidden":
            self.message.show_message(
                "With the hidden size as attention width PaLM's attention term is too "
                "large: its 48 heads of 256 make 12,288, not 18,432.")
        else:
            self.message.show_message(
                "MFU counts only the FLOPs the model needs, so it does not reward "
                "recomputation; HFU counts what the chips really ran.")
