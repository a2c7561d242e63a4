"""Figure 9.2: pipeline schedules (GPipe, 1F1B, interleaved 1F1B, ZB-H1) on p stages with
m micro-batches, built as tasks in each stage's order and timed by the shared scheduler
(`schedules.pipeline_tasks`); Play sweeps a playhead through the step.

A micro-batch's forward on one stage takes f, its backward b; ZB-H1 splits the backward
into the input gradient B and the weight gradient W, b / 2 each (so the default b = 2 f
is the paper's case F = B = W). Interleaving gives each GPU v chunks whose passes take
f / v and b / v, and needs m to be a multiple of p (Megatron-LM's order): otherwise
there is no schedule, and the figure says so.

What the figure reads from the timed schedule, beside the textbook forms:
    bubble share  idle time of a stage / step time (every stage idles the same), against
                  (p − 1)/(m + p − 1) for GPipe and 1F1B, (p − 1)/(v m + p − 1)
                  interleaved, (p − 1)/(3 m + p − 1) for ZB-H1 (only with F = B = W)
    stash         micro-batches a stage holds, from a forward's start to its backward's
                  end (`Schedule.level`); a chunk counts 1/v. Peaks: m on every stage for
                  GPipe, min(m, p − i) on stage i for 1F1B and ZB-H1
    beside it     the same step as 1F1B (or, for 1F1B itself, as GPipe), from the
                  closed forms above, which the tests check against the scheduler for
                  every p ≤ 8 and m ≤ 32 (timing it too doubled a change's cost: 2.3 ms
                  for p = 8, m = 32)

Left out: the time of the messages between stages, stages of unequal cost, the optimizer
step.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpuviz.core.model import Parameter, PlayheadModel, Readout, kept_digits, time_readout
from gpuviz.core.schedule import Schedule, schedule
from gpuviz.core.trace import Lane, Trace
from gpuviz.models.tensor_pipeline.schedules import (
    bubble_share,
    peak_stash,
    pipeline_tasks,
    stage_lane,
    stash,
)

MS = 1e-3
PIPELINE_CHOICES = (("gpipe", "GPipe"), ("1f1b", "1F1B"), ("interleaved", "Interleaved"),
                    ("zb_h1", "ZB-H1"))
PIPELINE_NAMES = dict(PIPELINE_CHOICES)
FORMULAS = {"gpipe": "(p − 1)/(m + p − 1)", "1f1b": "(p − 1)/(m + p − 1)",
            "interleaved": "(p − 1)/(v m + p − 1)", "zb_h1": "(p − 1)/(3 m + p − 1)"}
MAX_STOPS = 48  # presses of Next through one step, at most
NO_SCHEDULE = "no schedule"  # interleaving with m not a multiple of p (the comment says why)


def duration(label: str, seconds: float) -> Readout:
    """A time of the figure, in the unit time_readout picks, with 3 digits kept."""
    return kept_digits(time_readout(label, seconds))


def share(label: str, fraction: float) -> Readout:
    """A share of the step in %, with 3 digits kept ("75.0%")."""
    return kept_digits(Readout(label, 100 * fraction, "%"))


def stage_lanes(stages: int) -> tuple[Lane, ...]:
    """A trace's lanes: one process for the pipeline, a thread per stage (one GPU each)."""
    return tuple(Lane("Pipeline", stage_lane(i), f"Stage {i}") for i in range(stages))


@dataclass(frozen=True, eq=False)  # equal only to itself: a view redraws a new one
class Timed:
    """One pipeline's step, timed: the schedule, each stage's stash curve and peak."""

    pipeline: str
    schedule: Schedule
    stash: tuple[tuple[np.ndarray, np.ndarray], ...]  # per stage: (times, micro-batches)

    @property
    def step_time(self) -> float:
        return self.schedule.step_time

    @cached_property
    def idle(self) -> float:
        """Idle time of stage 0 (every stage idles the same: each does the same work)."""
        return self.schedule.idle(stage_lane(0))

    @property
    def bubble(self) -> float:
        step = self.step_time
        return self.idle / step if step > 0 else 0.0

    @cached_property
    def peaks(self) -> np.ndarray:
        return np.array([float(levels.max()) for _, levels in self.stash])

    @cached_property
    def lanes(self) -> np.ndarray:
        """The stage of each task (for drawing)."""
        stage_of = {stage_lane(i): i for i in range(len(self.stash))}
        return np.array([stage_of[task.resource] for task in self.schedule.tasks])

    @cached_property
    def marks(self) -> np.ndarray:
        """The times Next stops at: the ends of passes (to a ns, in seconds), at least
        1/MAX_STOPS of the step apart, so that thousands of short passes take a few dozen
        presses; the step's end is the last."""
        ends = np.unique(np.round(self.schedule.end, 9)).tolist()
        gap = self.step_time / MAX_STOPS
        kept = []
        for end in ends[:-1]:
            if end - (kept[-1] if kept else 0.0) >= gap:
                kept.append(end)
        return np.array(kept + ends[-1:])

    def held_at(self, t: float) -> np.ndarray:
        """Micro-batches each stage holds at time t."""
        return np.array([float(levels[np.searchsorted(times, t, side="right") - 1])
                         for times, levels in self.stash])


# A slider dragged back and forth meets the same steps again: the steps timed last are
# kept, up to a number of tasks in all rather than of steps, so that a drag over every m
# and back finds them all (p = 8, m = 32, v = 4 has 2,048 tasks, takes 10 ms to build and
# time and 4.4 MB to keep; the bound is 8 of those, under 40 MB, or far more small ones).
KEPT_TASKS = 8 * 2048
_timed: dict[tuple, Timed] = {}  # oldest first
_kept_tasks = 0


def timed_pipeline(pipeline: str, stages: int, micro_batches: int, forward: float,
                   backward: float, chunks: int = 1) -> Timed:
    """The step of `pipeline` timed by the scheduler (ZB-H1: B and W take backward / 2)."""
    global _kept_tasks
    key = (pipeline, stages, micro_batches, forward, backward, chunks)
    found = _timed.pop(key, None)
    if found is None:
        split = pipeline == "zb_h1"
        b, w = (backward / 2, backward / 2) if split else (backward, 0.0)
        result = schedule(pipeline_tasks(pipeline, stages, micro_batches, forward, b, w,
                                         chunks))
        found = Timed(pipeline, result, tuple(stash(result, pipeline, i, micro_batches,
                                                    chunks) for i in range(stages)))
        _kept_tasks += len(result.tasks)
        while _kept_tasks > KEPT_TASKS and _timed:
            _kept_tasks -= len(_timed.pop(next(iter(_timed))).schedule.tasks)
    _timed[key] = found  # now the newest
    return found


@dataclass(frozen=True)
class Textbook:
    """GPipe's or 1F1B's step from the closed forms: (m + p − 1)(f + b) long, every stage
    idle (p − 1)(f + b) of it, stage i holding at most m (GPipe) or min(m, p − i) (1F1B)
    micro-batches."""

    pipeline: str
    step_time: float
    bubble: float
    peaks: np.ndarray


def textbook_step(pipeline: str, stages: int, micro_batches: int, forward: float,
                  backward: float) -> Textbook:
    """GPipe's or 1F1B's step (pipeline "gpipe" or "1f1b") without the scheduler."""
    p, m = stages, micro_batches
    return Textbook(pipeline, (m + p - 1) * (forward + backward),
                    bubble_share(pipeline, p, m),
                    np.array([float(peak_stash(pipeline, p, m, i)) for i in range(p)]))


@dataclass(frozen=True)
class PipelineOut:
    pipeline: str
    stages: int
    micro_batches: int
    chunks: int  # v as drawn: 1 except for the interleaved schedule
    timed: Timed | None  # None: interleaving with m not a multiple of p
    beside: Textbook  # 1F1B (GPipe when the pipeline is 1F1B), for comparison
    formula: float | None  # the textbook bubble share; None where it does not hold

    @property
    def valid(self) -> bool:
        return self.timed is not None


class PipelineModel(PlayheadModel):
    """Figure 9.2: a pipeline's step as tasks on p stages (see the module docstring)."""

    pipeline = Parameter("gpipe", label="Schedule", choices=PIPELINE_CHOICES,
                         help="GPipe: all forwards, then all backwards. 1F1B: a backward as "
                              "soon as one can start. Interleaved: v chunks per GPU. "
                              "ZB-H1: the backward split into B and W (zero bubble)")
    stages = Parameter(4, label="Stages p", unit="stages", minimum=2, maximum=8,
                       help="GPUs in the pipeline, each holding a contiguous group of layers")
    micro_batches = Parameter(8, label="Micro-batches m", unit="micro-batches", minimum=1,
                              maximum=32, help="The batch is cut into this many micro-batches")
    chunks = Parameter(2, label="Chunks per GPU v", unit="chunks", minimum=1, maximum=4,
                       help="Interleaved only: each GPU holds v smaller groups of layers, "
                            "each pass takes 1/v of the time")
    forward_ms = Parameter(1.0, label="Forward f", unit="ms", minimum=0.25, maximum=4.0,
                           step=0.25, help="One micro-batch's forward pass on one stage")
    backward_ms = Parameter(2.0, label="Backward b", unit="ms", minimum=0.25, maximum=8.0,
                            step=0.25, help="One micro-batch's backward pass on one stage "
                                            "(ZB-H1: B and W take half each)")

    play_seconds = 10.0

    def compute(self) -> PipelineOut:
        p, m, pipeline = self.stages, self.micro_batches, self.pipeline
        f, b = self.forward_ms * MS, self.backward_ms * MS
        v = self.chunks if pipeline == "interleaved" else 1
        valid = v == 1 or m % p == 0
        timed = timed_pipeline(pipeline, p, m, f, b, v) if valid else None
        beside = textbook_step("gpipe" if pipeline == "1f1b" else "1f1b", p, m, f, b)
        formula = bubble_share(pipeline, p, m, v)
        if not valid or (pipeline == "zb_h1" and not (np.isclose(b, 2 * f) and m >= p)):
            formula = None
        return PipelineOut(pipeline, p, m, v, timed, beside, formula)

    def _time(self) -> Readout:
        """The playhead's time in the step time's unit ("0 ms" at the start, not "0 ns")."""
        return self.in_step_unit("Time", self.t)

    def in_step_unit(self, label: str, seconds: float) -> Readout:
        """A time within the step, in the unit of the step time (a scheduled step)."""
        step = time_readout("", self.horizon)
        return kept_digits(Readout(label, seconds * step.value / self.horizon, step.unit))

    @property
    def horizon(self) -> float:
        timed = self.out.timed
        return timed.step_time if timed is not None else 0.0

    def step_marks(self) -> np.ndarray:
        timed = self.out.timed
        return timed.marks if timed is not None else np.zeros(0)

    def trace(self) -> Trace:
        out = self.out
        result = out.timed.schedule if out.timed is not None else schedule([])
        return Trace(result, stage_lanes(out.stages))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        timed, beside = out.timed, out.beside
        p = out.stages
        formula = FORMULAS[out.pipeline]
        if out.formula is not None:
            textbook = share(formula, out.formula)
        else:
            why = (NO_SCHEDULE if timed is None else
                   "only if m ≥ p" if out.micro_batches < p else "only if B = W = F")
            textbook = Readout(formula, None, "%", shown=why)
        other = PIPELINE_NAMES[beside.pipeline]
        rows = {"step_time": None, "bubble": None, "formula": textbook, "idle": None,
                "peak_first": None, "peak_last": None}
        if timed is None:
            for key, label in (("step_time", "Step time"), ("bubble", "Bubble share"),
                               ("idle", "Idle per stage"), ("peak_first", "Peak stash, stage 0"),
                               ("peak_last", f"Peak stash, stage {p - 1}")):
                rows[key] = Readout(label, None, shown=NO_SCHEDULE)
        else:
            peaks = timed.peaks
            rows |= {
                "step_time": duration("Step time", timed.step_time),
                "bubble": share("Bubble share", timed.bubble),
                "idle": duration("Idle per stage", timed.idle),
                "peak_first": Readout("Peak stash, stage 0", peaks[0], "micro-batches"),
                "peak_last": Readout(f"Peak stash, stage {p - 1}", peaks[-1],
                                     "micro-batches"),
            }
        return rows | {
            "beside_bubble": share(f"{other} bubble share", beside.bubble),
            "beside_peak": Readout(f"{other} peak, stage 0", beside.peaks[0],
                                   "micro-batches"),
            "time": self._time() if self.horizon > 0 else Readout("Time", None,
                                                                  shown=NO_SCHEDULE),
        }
