"""Figure 13.1: the profiler puzzle, and a trace opened on the same rows."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import QPushButton

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import nice_ceiling, time_text
from gpuviz.core.plots import Segment, opaque_blend, pen, plot_widget, text_item
from gpuviz.core.schedule import Task
from gpuviz.core.timeline import Timeline
from gpuviz.core.trace import COMMUNICATION, COMPUTE
from gpuviz.core.widgets import ChoiceButtons
from gpuviz.models.profiling.puzzle import LANES, UNNAMED
from gpuviz.models.profiling.trace_analysis import ROWS

KIND_ROLES = {"launch": "neutral", "wait": "highlight", "compute": "compute",
              "memcpy": "memory", "nccl": "network"}
CPU_OP_ALPHA = 110  # an operator around launches: a paler grey than its launches
# The time axis in the unit that keeps a step's ticks short: (largest step, unit, factor).
TIME_UNITS = ((2e-3, "µs", 1e6), (2.0, "ms", 1e3), (float("inf"), "s", 1.0))
TEXTS_UP_TO = 200  # boxes: a trace with more is drawn without texts in its boxes


class PuzzleView(FigureView):
    message_lines = 3  # a named problem and its fix take three lines on a lecture screen
    def build(self) -> None:
        self.cases = self.controls.add("case", "buttons")
        for button in self.cases.buttons.values():
            # With a trace open, every timeline's button (the last one shown too) returns
            # to the puzzle.
            button.clicked.connect(self.model.close_trace)
        self.names = self.controls.add("diagnosis", "buttons")
        self.names.buttons[UNNAMED].hide()  # "not named yet" is where a case starts
        self.fix = self.controls.add("fixed")
        self.back = QPushButton("Back to the puzzle")
        self.back.setToolTip("Leave the opened trace and show the puzzle's timeline")
        self.back.clicked.connect(self.model.close_trace)
        self.controls.add_widget(self.back)

        self.plot = plot_widget("Time (µs)")
        self.timeline = Timeline(self.plot, ROWS, [lane.text for lane in LANES])
        self.timeline.clicked.connect(self._read_box)
        self.fills = {kind: theme.color(role) for kind, role in KIND_ROLES.items()}
        self.fills["cpu"] = opaque_blend("neutral", CPU_OP_ALPHA)
        self.timeline.add_legend([
            ("CPU: launch", self.fills["launch"]), ("CPU: waits", self.fills["wait"]),
            ("compute kernel", self.fills["compute"]), ("memory copy", self.fills["memcpy"]),
            ("NCCL kernel", self.fills["nccl"]), ("GPU idle", theme.color("idle"))])
        item = self.plot.getPlotItem()
        self.before_line = Segment(pen("text", 1.5, Qt.DashLine))
        self.before_label = text_item("", "text", 9, anchor=(1, 0))
        for part in (self.before_line, self.before_label):
            item.addItem(part)
            part.setZValue(3)
        self.add_plot(self.plot)
        self.unit, self.factor = "µs", 1e6

    def refresh(self) -> None:
        model = self.model
        profile = model.profile
        opened = model.opened is not None
        self.back.setVisible(opened)
        # A trace is no timeline of the puzzle: none is shown picked, and there is no
        # problem to name or fix until the learner picks one again.
        for control in (self.cases, self.names):
            if opened:
                _uncheck_all(control)
        for control in (self.names, self.fix):
            control.setEnabled(not opened)
        before = None if opened or not model.fixed else model.out.profile_before.step_time
        widest = profile.step_time if opened else model.out.profile_before.step_time
        if self.needs_update("rows", (id(profile), widest)):
            self.unit, self.factor = next((unit, factor) for top, unit, factor in TIME_UNITS
                                          if widest <= top)
            self.plot.getPlotItem().setLabel("bottom", f"Time ({self.unit})")
            rows = profile.rows
            texts = len(rows.tasks) <= TEXTS_UP_TO
            # The range before the boxes, which are measured against it (outlines). The
            # puzzle's axis moves in 1-2-5 steps: four of its cases share one.
            limit = widest * self.factor
            self.timeline.set_time_range(limit if opened else nice_ceiling(limit),
                                         exact=not opened)
            # A trace's operators enclose its launches: their names would cross the
            # launches' (the puzzle's Python work encloses nothing).
            unnamed = ("cpu",) if opened else ()
            self.timeline.show_schedule(
                rows, self._fill,
                lambda task: task.text if texts and task.kind not in unnamed else "",
                scale=self.factor)
            gaps = rows.idle_intervals([COMPUTE, COMMUNICATION])
            lanes = [ROWS.index(COMPUTE), ROWS.index(COMMUNICATION)]
            self.timeline.set_idle([lane for lane in lanes for _ in gaps],
                                   [a * self.factor for _ in lanes for a, _ in gaps],
                                   [b * self.factor for _ in lanes for _, b in gaps])
        self.before_line.setVisible(before is not None)
        self.before_label.setVisible(before is not None)
        if before is not None and self.needs_update("before", before):
            x = before * self.factor
            box = self.plot.getPlotItem().getViewBox()
            self.before_line.set_line(x, -0.6, x, len(ROWS) - 0.4, box.viewPixelSize())
            self.before_label.setText(f"before the fix: {time_text(before, 4)}")
            self.before_label.setPos(x, -0.6)  # the top of the plot, the text under it
        self.message.show_message(model.comment(), warn=model.answered is False)

    def _fill(self, task: Task):  # noqa: ANN202 - QColor
        return self.fills.get(task.kind, self.fills["compute"])

    def _read_box(self, index: int) -> None:
        rows = self.model.profile.rows
        task = rows.tasks[index]
        self.message.show_message(
            f"{task.text}: {time_text(rows.start[index], 4)} to {time_text(rows.end[index], 4)}"
            f" ({time_text(task.duration, 4)}).")


def _uncheck_all(choices: ChoiceButtons) -> None:
    """Show no choice of a row of buttons picked (its model keeps its value)."""
    choices.group.setExclusive(False)  # an exclusive group keeps one button checked
    for button in choices.buttons.values():
        with QSignalBlocker(button):
            button.setChecked(False)
    choices.group.setExclusive(True)
