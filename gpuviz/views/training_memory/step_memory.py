"""Figure 6.1: memory over one training step, played on the shared clock."""

from __future__ import annotations

from gpuviz.core.figure_view import FigureView
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.training_memory import gb_text
from gpuviz.views.training_memory.step_plot import StepMemoryPlot


class StepMemoryView(FigureView):
    step_label = "Next layer"

    def build(self) -> None:
        self.controls.add("progress")
        for name in ("checkpointing", "flash_attention", "micro_batch"):
            self.controls.add(name)
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        self.plot = StepMemoryPlot(with_states=True)
        self.plot.add_legend(columns=3)
        self.add_plot(self.plot.widget, 3)
        # The stored part alone, on its own scale: beside 21 GB of model states the
        # sawtooth of checkpointing is too small to see.
        self.zoom = StepMemoryPlot(with_states=False, y_label="Stored (GB)")
        self.add_plot(self.zoom.widget, 2)

    def refresh(self) -> None:
        out = self.model.out
        memory = out.memory
        timeline = memory.timeline
        # The y range is that of the step without checkpointing, so switching it on shows
        # the drop instead of a rescaled axis.
        baseline = self.model.baseline()
        self.plot.set_step(timeline, memory.states.total, baseline.peak, until=out.t,
                           show_peak=True)
        playhead = out.t if out.t < timeline.step_time else None
        self.plot.set_playhead(playhead)
        self.zoom.set_step(timeline, 0.0, timeline.peak, until=out.t)
        self.zoom.set_playhead(playhead)
        self.predict.sync()
        stored = out.checkpoints + out.activations + out.logits
        if out.phase == "done" and timeline.recompute.size:
            text = (f"With checkpointing each layer is run forward again just before its "
                    f"backward (magenta marks): the stored memory is a sawtooth, and the "
                    f"step takes {timeline.step_time / baseline.timeline.step_time:.0%} of "
                    f"the time without it.")
        elif out.phase == "forward":
            text = (f"Forward pass: every layer leaves its activations behind; "
                    f"{gb_text(stored)} stored so far.")
        elif out.phase == "backward":
            text = (f"Backward pass: each layer's activations are freed once its gradients "
                    f"are computed; {gb_text(stored)} still stored.")
        else:
            text = ("The peak comes at the turn from the forward to the backward pass: "
                    "every layer's activations are stored and none freed yet. The model "
                    "states never move.")
        self.message.show_message(text)

